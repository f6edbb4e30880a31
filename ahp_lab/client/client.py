"""An AHP client: subscriptions, optimistic dispatch with reconciliation, and client tools.

Per subscribed channel the client keeps ``confirmed`` (snapshots + host envelopes), ``pending``
(its own dispatches not yet echoed) and ``optimistic`` = confirmed with pending re-applied
(overview §6). It executes the tool calls the host assigns to it — calls that reach ``running``
with ``contributor = {kind: "client", clientId: <its id>}`` — validating the input against the
tool's schema first and keeping its own approval policy.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..protocol import (
    CLIENT_DISPATCHABLE,
    PROTOCOL_VERSION,
    SUPPORTED_VERSIONS,
    ProtocolError,
    validate_action,
)
from ..protocol.actions import channel_kind_of_action
from ..reducers import REDUCERS
from ..tools import Tool, ToolContext, failure_result, run_tool_call
from ..transport import JsonRpcPeer, RpcError
from ..waiting import StateWaiters, check_wait_arguments

log = logging.getLogger("ahp_lab.client")

__all__ = ["AhpClient", "LocalApproval", "channel_kind_of_uri"]

ROOT = "ahp-root://"
_TOOL_ACTIONS = frozenset(
    {
        "chat/toolCallReady",
        "chat/toolCallConfirmed",
        "chat/toolCallComplete",
        "chat/toolCallResultConfirmed",
        "chat/toolCallAuthResolved",
        "chat/turnComplete",
        "chat/turnCancelled",
        "chat/error",
        "chat/truncated",
    }
)


def channel_kind_of_uri(uri: str) -> str | None:
    """The channel kind a URI names, where its scheme tells (annotations share the session scheme)."""
    if uri == ROOT:
        return "root"
    if uri.startswith("ahp-session:/"):
        return "annotations" if uri.endswith("/annotations") else "session"
    if uri.startswith("ahp-chat:/"):
        return "chat"
    if uri.startswith("ahp-terminal:/"):
        return "terminal"
    if uri.startswith("ahp-changeset:/"):
        return "changeset"
    if uri.startswith("ahp-resource-watch:/"):
        return "resourceWatch"
    return None


@dataclass
class _Channel:
    kind: str
    confirmed: Any
    from_seq: int
    pending: list = field(default_factory=list)  # [(clientSeq, action)]
    optimistic: Any = None

    def rebase(self, now_ms: int) -> None:
        state = self.confirmed
        reducer = REDUCERS[self.kind]
        for _, action in self.pending:
            state = reducer(state, action, now_ms)
        self.optimistic = state


@dataclass
class LocalApproval:
    """A client tool call waiting for this client's own approval before its function runs."""

    chat: str
    turn_id: str
    tool_call_id: str
    tool_name: str
    title: str
    tool_input: Any
    future: asyncio.Future

    def approve(self) -> None:
        if not self.future.done():
            self.future.set_result(True)

    def deny(self) -> None:
        if not self.future.done():
            self.future.set_result(False)


class AhpClient:
    """A protocol client over a JSON-RPC transport."""

    def __init__(
        self,
        transport,
        *,
        client_id: str | None = None,
        display_name: str | None = None,
        trusted_host: bool = True,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        self.client_id = client_id or f"client-{uuid.uuid4().hex[:8]}"
        self.display_name = display_name
        self.trusted_host = trusted_host
        self.peer = JsonRpcPeer(
            transport, self._request, self._notification, self._closed, name=self.client_id
        )
        self.channels: dict[str, _Channel] = {}
        self.client_seq = 0
        self.last_seen_seq = 0
        self.protocol_version: str | None = None
        self.tools: dict[str, Tool] = {}
        self.tool_names: dict[str, str] = {}  # published name -> registered name
        self.sessions: set[str] = set()  # sessions this client is active in
        self.rejections: list[dict] = []
        self.approvals: dict[str, LocalApproval] = {}
        self.executions: dict[str, asyncio.Task] = {}
        self.resources: dict[str, str] = {}  # uri -> text served to the host (virtual plugins)
        self.published_customizations: list[dict] = []  # ClientPluginCustomization entries
        self._listeners: list[Callable[[str, dict], None]] = []
        self._waiters = StateWaiters()
        # Envelopes that arrive for a channel whose subscribe response is not applied yet.
        self._early: dict[str, list[dict]] = {}
        self.closed = False
        from ..store import wall_clock_ms

        self.clock_ms = clock_ms or wall_clock_ms

    # -- connection -----------------------------------------------------------------------------

    async def initialize(self, subscriptions: list[str] | None = None) -> dict:
        subscriptions = subscriptions if subscriptions is not None else [ROOT]
        for channel in subscriptions:
            self._early.setdefault(channel, [])
        try:
            result = await self.peer.request(
                "initialize",
                {
                    "channel": ROOT,
                    "protocolVersions": list(SUPPORTED_VERSIONS),
                    "clientId": self.client_id,
                    "clientInfo": {"name": "ahp_lab", "version": "0.1.0"},
                    "initialSubscriptions": subscriptions,
                },
            )
        finally:
            early = {c: self._early.pop(c, []) for c in subscriptions}
        self.protocol_version = result.get("protocolVersion", PROTOCOL_VERSION)
        self.last_seen_seq = max(self.last_seen_seq, int(result.get("serverSeq") or 0))
        for snapshot in result.get("snapshots") or ():
            self._apply_snapshot(snapshot)
            for env in early.get(snapshot["resource"], ()):  # sent after the snapshot, delivered before it
                self._on_envelope(env)
        return result

    async def request(self, method: str, params: dict | None = None, *, timeout: float | None = None) -> Any:
        return await self.peer.request(method, {"channel": ROOT, **(params or {})}, timeout=timeout)

    def close(self) -> None:
        self.peer.close()

    def _closed(self) -> None:
        self.closed = True
        for task in list(self.executions.values()):
            task.cancel()

    # -- subscriptions --------------------------------------------------------------------------

    def _apply_snapshot(self, snapshot: dict) -> None:
        uri = snapshot["resource"]
        kind = channel_kind_of_uri(uri) or (self.channels[uri].kind if uri in self.channels else None)
        if kind is None:
            raise ValueError(f"cannot tell the channel kind of {uri}")
        ch = _Channel(kind, snapshot["state"], int(snapshot.get("fromSeq") or 0))
        ch.optimistic = ch.confirmed
        self.channels[uri] = ch
        self._notify(uri, {"type": "$snapshot"})

    async def subscribe(self, channel: str, *, turns: int | None = None) -> Any:
        params: dict[str, Any] = {"channel": channel}
        if turns is not None:
            params["view"] = {"turns": turns}
        self._early.setdefault(channel, [])
        try:
            result = await self.peer.request("subscribe", params)
        finally:
            early = self._early.pop(channel, [])
        snapshot = (result or {}).get("snapshot")
        if snapshot is not None:
            self._apply_snapshot(snapshot)
            for env in early:  # sent after the snapshot but delivered before we applied it
                self._on_envelope(env)
            if channel_kind_of_uri(channel) == "chat":
                self._scan_tool_calls(channel)
        return self.state(channel)

    def unsubscribe(self, channel: str) -> None:
        self.peer.notify("unsubscribe", {"channel": channel})
        self.channels.pop(channel, None)
        self.sessions.discard(channel)

    def state(self, channel: str) -> Any:
        """The optimistic state of a subscribed channel (what a UI should render)."""
        ch = self.channels.get(channel)
        return None if ch is None else ch.optimistic

    def confirmed(self, channel: str) -> Any:
        ch = self.channels.get(channel)
        return None if ch is None else ch.confirmed

    def on_change(self, listener: Callable[[str, dict], None]) -> Callable[[], None]:
        """Call ``listener(channel, action)`` after every change of a subscribed channel."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _notify(self, channel: str, action: dict) -> None:
        for listener in tuple(self._listeners):
            try:
                listener(channel, action)
            except Exception:
                log.exception("client listener failed")
        if self._waiters.has(channel):
            self._waiters.notify(channel, self.state(channel))

    async def wait_for(
        self, channel: str, check: Callable[[Any], Any] | None = None, timeout: float | None = None
    ) -> Any:
        """Wait until ``check(optimistic state)`` of ``channel`` returns something other than ``None``.

        The channel comes first, as in every ``wait_for``; the other order raises ``TypeError``.
        """
        check_wait_arguments(channel, check)
        return await self._waiters.wait(channel, check, self.state(channel), timeout)

    # -- receiving ------------------------------------------------------------------------------

    def _notification(self, method: str, params: dict) -> None:
        if method == "action":
            self._on_envelope(params)
        else:
            self._notify(params.get("channel", ROOT), {"type": f"${method}", **params})

    def _on_envelope(self, env: dict) -> None:
        seq = env.get("serverSeq")
        if isinstance(seq, int):
            self.last_seen_seq = max(self.last_seen_seq, seq)
        channel = env.get("channel")
        ch = self.channels.get(channel)
        if channel in self._early:  # a (re)subscribe is in flight: apply after its snapshot
            self._early[channel].append(env)
            return
        if ch is None or (isinstance(seq, int) and seq <= ch.from_seq):
            return
        action = env.get("action") or {}
        origin = env.get("origin")
        rejected = env.get("rejectionReason")
        own = isinstance(origin, dict) and origin.get("clientId") == self.client_id
        if own and rejected is None and ch.pending and ch.pending[0][0] == origin.get("clientSeq"):
            # The host accepted our oldest pending action in order: confirmed catches up and the
            # optimistic state (confirmed + pending) is unchanged, so no rebase is needed.
            ch.pending.pop(0)
            ch.confirmed = REDUCERS[ch.kind](ch.confirmed, action, self.clock_ms())
            if not ch.pending:
                ch.optimistic = ch.confirmed
        else:
            if own:
                client_seq = origin.get("clientSeq")
                ch.pending = [(s, a) for s, a in ch.pending if s != client_seq]
                if rejected is not None:
                    self.rejections.append(
                        {"channel": channel, "action": action, "reason": rejected, "clientSeq": client_seq}
                    )
            if rejected is None:
                ch.confirmed = REDUCERS[ch.kind](ch.confirmed, action, self.clock_ms())
            if ch.pending:
                ch.rebase(self.clock_ms())
            else:
                ch.optimistic = ch.confirmed
        self._notify(
            channel,
            action if rejected is None else {"type": "$rejected", "action": action, "reason": rejected},
        )
        if ch.kind == "chat" and action.get("type") in _TOOL_ACTIONS and rejected is None:
            self._scan_tool_calls(channel)

    async def _serve_resource_read(self, params: dict) -> dict:
        uri = params.get("uri")
        if uri not in self.resources:
            raise RpcError(-32008, f"{uri} is not served by client {self.client_id}")
        return {"data": self.resources[uri], "encoding": "utf-8", "contentType": "text/markdown"}

    def _request(self, method: str, params: dict) -> Any:
        if method == "resourceRead":
            return self._serve_resource_read(params)
        if method == "resourceList":
            prefix = str(params.get("uri", "")).rstrip("/") + "/"
            names = {u[len(prefix) :].split("/")[0] for u in self.resources if u.startswith(prefix)}
            entries = []
            for name in sorted(names):
                is_dir = any(u.startswith(prefix + name + "/") for u in self.resources)
                entries.append({"name": name, "type": "directory" if is_dir else "file"})
            return {"entries": entries}
        raise RpcError(-32601, f"client {self.client_id} does not serve {method}")

    # -- dispatching ----------------------------------------------------------------------------

    def dispatch(self, channel: str, action: dict) -> int:
        """Validate locally, apply optimistically, send ``dispatchAction``; returns the clientSeq.

        Raises :class:`ProtocolError` (a ``ValueError`` with a one-sentence reason) for malformed
        actions, actions clients may not dispatch, and channels this client has not subscribed.
        """
        ch = self.channels.get(channel)
        if ch is None:
            raise ProtocolError(
                f"not subscribed to {channel}: subscribe before dispatching to it",
                field="channel",
                rule="must be a subscribed channel",
            )
        normalized = validate_action(action)
        kind = normalized["type"]
        if kind not in CLIENT_DISPATCHABLE:
            raise ProtocolError(
                f"{kind} is host-only: clients cannot dispatch it",
                field="type",
                rule="must be client-dispatchable",
                subject=kind,
            )
        if channel_kind_of_action(kind) != ch.kind:
            raise ProtocolError(
                f"{kind} belongs on a {channel_kind_of_action(kind)} channel, not on the {ch.kind} channel {channel}",
                field="channel",
                rule="must match the action's channel kind",
                subject=kind,
            )
        self.client_seq += 1
        seq = self.client_seq
        ch.pending.append((seq, normalized))
        ch.optimistic = REDUCERS[ch.kind](ch.optimistic, normalized, self.clock_ms())
        self.peer.notify("dispatchAction", {"channel": channel, "clientSeq": seq, "action": normalized})
        self._notify(channel, normalized)
        return seq

    # -- sessions -------------------------------------------------------------------------------

    def active_client_entry(self, session: str | None = None) -> dict:
        entry: dict[str, Any] = {
            "clientId": self.client_id,
            "tools": [self.tools[n].definition(p) for p, n in self.tool_names.items()],
        }
        if self.display_name:
            entry["displayName"] = self.display_name
        if self.published_customizations:
            entry["customizations"] = list(self.published_customizations)
        return entry

    async def create_session(self, uri: str | None = None, **params: Any) -> str:
        uri = uri or f"ahp-session:/{uuid.uuid4()}"
        await self.peer.request(
            "createSession", {"channel": uri, "activeClient": self.active_client_entry(), **params}
        )
        self.sessions.add(uri)
        await self.subscribe(uri)
        return uri

    def publish(self, session: str) -> None:
        """Re-publish this client's complete active-client entry (tools and plugins)."""
        if session in self.channels:
            self.dispatch(
                session,
                {"type": "session/activeClientSet", "activeClient": self.active_client_entry(session)},
            )
            self.sessions.add(session)

    # -- client tools ---------------------------------------------------------------------------

    def register_tool(self, tool: Tool) -> str:
        """Add (or replace) a tool and re-publish the whole entry; returns the published name.

        Names share one namespace with the session's server tools and other clients' tools: on a
        clash the tool is published as ``<clientId>.<name>`` (the spec suggests prefixing).
        """
        for published, registered in list(self.tool_names.items()):
            if registered == tool.name:
                del self.tool_names[published]
        published = tool.name
        if published in self._foreign_tool_names():
            published = f"{self.client_id}.{tool.name}"
        self.tools[tool.name] = tool
        self.tool_names[published] = tool.name
        for session in list(self.sessions):
            self.publish(session)
        return published

    # -- client-published plugins ---------------------------------------------------------------

    def publish_plugin(self, name: str, files: dict[str, str], *, nonce: str | None = None) -> dict:
        """Publish a plugin that lives only in this client (a *virtual* plugin).

        ``files`` maps paths inside the plugin (``"skills/review/SKILL.md"``,
        ``".plugin/plugin.json"``, ...) to their text. The host reads them back with
        ``resourceList``/``resourceRead`` on ``virtual://<clientId>/<name>/...``. The ``nonce``
        (default: a hash of the files) tells the host whether anything changed since the last
        publication. Returns the ``ClientPluginCustomization`` entry.
        """
        import hashlib

        if not name or "/" in name:
            raise ValueError(f"a plugin name must be a non-empty path segment, got {name!r}")
        root = f"virtual://{self.client_id}/{name}"
        for uri in [u for u in self.resources if u.startswith(root + "/")]:
            del self.resources[uri]
        digest = hashlib.sha256()
        for rel in sorted(files):
            clean = rel.strip("/")
            if not clean or ".." in clean.split("/"):
                raise ValueError(f"plugin file path {rel!r} must stay inside the plugin")
            self.resources[f"{root}/{clean}"] = files[rel]
            digest.update(clean.encode() + b"\0" + files[rel].encode() + b"\0")
        entry = {
            "type": "plugin",
            "id": f"{self.client_id}:{name}",
            "uri": root,
            "name": name,
            "enabled": True,
            "nonce": nonce or digest.hexdigest()[:16],
        }
        self.published_customizations = [c for c in self.published_customizations if c.get("uri") != root] + [
            entry
        ]
        for session in list(self.sessions):
            self.publish(session)
        return entry

    def publish_plugin_folder(self, path: str | Path, *, name: str | None = None) -> dict:
        """Publish a plugin folder from this client's disk (read into memory, served as a virtual plugin)."""
        folder = Path(path)
        if not folder.is_dir():
            raise ValueError(f"{folder} is not a folder")
        files = {}
        for file in sorted(folder.rglob("*")):
            if file.is_file():
                try:
                    files[file.relative_to(folder).as_posix()] = file.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    continue  # binary or unreadable: the host reports what it could not read
        return self.publish_plugin(name or folder.name, files)

    def unpublish_plugin(self, name: str) -> None:
        """Stop publishing a plugin; the host removes it from the tree."""
        root = f"virtual://{self.client_id}/{name}"
        self.published_customizations = [c for c in self.published_customizations if c.get("uri") != root]
        for uri in [u for u in self.resources if u.startswith(root + "/")]:
            del self.resources[uri]
        for session in list(self.sessions):
            self.publish(session)

    def unregister_tool(self, name: str) -> None:
        self.tools.pop(name, None)
        for published, registered in list(self.tool_names.items()):
            if registered == name:
                del self.tool_names[published]
        for session in list(self.sessions):
            self.publish(session)

    def _foreign_tool_names(self) -> set[str]:
        names: set[str] = set()
        for session in self.sessions:
            state = self.state(session) or {}
            names.update(t.get("name") for t in state.get("serverTools") or ())
            for client in state.get("activeClients") or ():
                if client.get("clientId") != self.client_id:
                    names.update(t.get("name") for t in client.get("tools") or ())
        return names

    def _session_of_chat(self, chat: str) -> str | None:
        for session in self.sessions:
            for entry in (self.state(session) or {}).get("chats") or ():
                if entry.get("resource") == chat:
                    return session
        return None

    def _scan_tool_calls(self, chat: str) -> None:
        state = self.confirmed(chat) or {}
        active = state.get("activeTurn") or {}
        live: set[str] = set()
        for part in active.get("responseParts") or ():
            if part.get("kind") != "toolCall":
                continue
            tc = part.get("toolCall") or {}
            contributor = tc.get("contributor") or {}
            if contributor.get("kind") != "client" or contributor.get("clientId") != self.client_id:
                continue
            key = f"{chat}#{tc.get('toolCallId')}"
            status = tc.get("status")
            if status == "running":
                live.add(key)
                if key not in self.executions:
                    task = asyncio.ensure_future(self._execute(chat, active.get("id"), tc))
                    self.executions[key] = task
                    task.add_done_callback(lambda _t, k=key: self.executions.pop(k, None))
            elif status == "pending-confirmation" and tc.get("toolName") not in self.tool_names:
                self._decline(chat, active.get("id"), tc)
        for key, task in list(self.executions.items()):
            if key.startswith(f"{chat}#") and key not in live:
                task.cancel()  # the call left `running` without us (turn ended, host failed it)

    def _decline(self, chat: str, turn_id: str, tc: dict) -> None:
        """Refuse a call for a tool this client does not know (customizations §6.3)."""
        name = tc.get("toolName")
        base = {"turnId": turn_id, "toolCallId": tc.get("toolCallId")}
        message = f"Client {self.client_id} has no tool named {name!r}"
        if tc.get("status") == "pending-confirmation":
            self.dispatch(
                chat,
                {
                    "type": "chat/toolCallConfirmed",
                    **base,
                    "approved": False,
                    "reason": "denied",
                    "reasonMessage": message,
                },
            )
        else:
            self.dispatch(
                chat,
                {
                    "type": "chat/toolCallComplete",
                    **base,
                    "result": failure_result(tc.get("displayName") or str(name), message, "unknownTool"),
                },
            )

    def needs_local_approval(self, tool: Tool) -> bool:
        if tool.approval == "always":
            return True
        if tool.approval == "never":
            return False
        # "auto": a remote host's "not-needed" is advisory; trust the in-kernel host.
        return not self.trusted_host and not tool.annotations.get("readOnlyHint")

    async def _approved_locally(self, chat: str, turn_id: str, tc: dict, tool: Tool, loop) -> bool:
        """Hold a call until this client's user approves it (the client's own policy)."""
        call_id = tc.get("toolCallId")
        approval = LocalApproval(
            chat, turn_id, call_id, tool.name, tool.title, tc.get("toolInput"), loop.create_future()
        )
        self.approvals[call_id] = approval
        self._notify(chat, {"type": "$localApproval", "toolCallId": call_id})
        try:
            return await approval.future
        finally:
            self.approvals.pop(call_id, None)
            self._notify(chat, {"type": "$localApprovalDone", "toolCallId": call_id})

    async def _execute(self, chat: str, turn_id: str, tc: dict) -> None:
        call_id = tc.get("toolCallId")
        base = {"turnId": turn_id, "toolCallId": call_id}
        name = self.tool_names.get(tc.get("toolName"))
        tool = self.tools.get(name) if name else None
        if tool is None:
            self._decline(chat, turn_id, tc)
            return
        loop = asyncio.get_running_loop()

        def still_running() -> bool:
            state = self.confirmed(chat) or {}
            active = state.get("activeTurn") or {}
            if active.get("id") != turn_id:
                return False
            for part in active.get("responseParts") or ():
                if (
                    part.get("kind") == "toolCall"
                    and (part.get("toolCall") or {}).get("toolCallId") == call_id
                ):
                    return part["toolCall"].get("status") == "running"
            return False

        def send_content(blocks: list) -> None:
            if still_running():
                self.dispatch(chat, {"type": "chat/toolCallContentChanged", **base, "content": blocks})

        session = self._session_of_chat(chat) or ""
        ctx = ToolContext(call_id, tool.name, session, chat, turn_id, send_content, loop)
        if self.needs_local_approval(tool) and not await self._approved_locally(
            chat, turn_id, tc, tool, loop
        ):
            result = failure_result(tool.title, f"{tool.title} was not approved on client {self.client_id}")
        else:
            result = await run_tool_call(tool, tc.get("toolInput"), ctx)
        if still_running():
            try:
                self.dispatch(chat, {"type": "chat/toolCallComplete", **base, "result": result})
            except ProtocolError as exc:  # e.g. a result the wire types refuse
                self.dispatch(
                    chat,
                    {
                        "type": "chat/toolCallComplete",
                        **base,
                        "result": failure_result(tool.title, f"the result could not be sent: {exc}"),
                    },
                )
