"""What a client contributes to its sessions: client tools, published plugins, the files it serves.

:class:`Contributions` is the part of :class:`~ahp_lab.client.AhpClient` that publishes this
client's ``activeClients`` entry (tools and plugins), serves ``resourceRead``/``resourceList`` of
its virtual plugins to the host, and executes the tool calls the host assigns to it — calls that
reach ``running`` with ``contributor = {kind: "client", clientId: <its id>}`` — validating the input
against the tool's schema first and keeping its own approval policy. The same code runs over the
in-process pair and over a WebSocket.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..protocol import ProtocolError
from ..reducers.chat import tool_call_parts
from ..tools import Tool, ToolContext, failure_result, run_tool_call
from ..transport import RpcError

log = logging.getLogger(__name__)

__all__ = ["Contributions", "LocalApproval", "TOOL_ACTIONS"]

#: Chat actions after which this client looks again at the calls it must execute.
TOOL_ACTIONS = frozenset(
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


def _object(value: Any) -> dict:
    """``value`` when it is a JSON object, else an empty one: a host's state may hold any shape."""
    return value if isinstance(value, dict) else {}


def _parts(active: dict) -> Any:
    """The active turn's parts when they are an array (a list or a Vector), else none."""
    parts = active.get("responseParts")
    return parts if isinstance(parts, list) else ()


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
        """Let the tool's function run."""
        if not self.future.done():
            self.future.set_result(True)

    def deny(self) -> None:
        """Fail the call without running the tool."""
        if not self.future.done():
            self.future.set_result(False)


#: Calls a host may ask this client to decline in one look at a chat (one snapshot or one action):
#: a host attributing 20,000 waiting calls to tools the client does not have held it 1 s and
#: had 20,000 declines sent; an honest host has a few.
MAX_DECLINES = 100
#: Declined calls remembered, so that a call still waiting on the next look is not declined again.
MAX_DECLINED = 10_000
#: Client tool calls this client runs at once; a host asking for more has the rest failed with the
#: reason (a host can mark any number of calls running for a read-only tool, which runs unasked).
MAX_EXECUTIONS = 64


class Contributions:
    """Client tools, published plugins and served files (mixed into ``AhpClient``)."""

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
            kinds: dict[str, str] = {}  # one pass: 100 listings of a 2,000-file folder held the loop 23 s
            for uri in self.resources:
                if uri.startswith(prefix):
                    name, slash, _ = uri[len(prefix) :].partition("/")
                    if slash or name not in kinds:
                        kinds[name] = "directory" if slash else "file"
            return {"entries": [{"name": n, "type": kinds[n]} for n in sorted(kinds)]}
        raise RpcError(-32601, f"client {self.client_id} does not serve {method}")

    # -- the active-client entry ----------------------------------------------------------------

    def active_client_entry(self, session: str | None = None) -> dict:
        """This client's ``SessionActiveClient`` entry: id, display name, tools and published plugins."""
        entry: dict[str, Any] = {
            "clientId": self.client_id,
            "tools": [self.tools[n].definition(p) for p, n in self.tool_names.items()],
        }
        if self.display_name:
            entry["displayName"] = self.display_name
        if self.published_customizations:
            entry["customizations"] = list(self.published_customizations)
        return entry

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

        A name a server tool of the session holds is published as ``<clientId>.<name>`` (the
        spec suggests prefixing): server tools come first. Another client's tool of the same name
        is no reason to rename: the host gives a turn's call to its own client's tool first, and a
        stranger that published the notebook's tool name took the notebook's own calls of it when
        the notebook yielded (they ran at the stranger's client, unconfirmed, with its input).
        """
        for published, registered in list(self.tool_names.items()):
            if registered == tool.name:
                del self.tool_names[published]
        published = tool.name
        if published in self._server_tool_names():
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
        entry = self.publish_plugin(name or folder.name, files)
        self.published_folders[name or folder.name] = folder.resolve()  # read again when published again
        return entry

    def unpublish_plugin(self, name: str) -> None:
        """Stop publishing a plugin; the host removes it from the tree."""
        root = f"virtual://{self.client_id}/{name}"
        self.published_folders.pop(name, None)
        self.published_customizations = [c for c in self.published_customizations if c.get("uri") != root]
        for uri in [u for u in self.resources if u.startswith(root + "/")]:
            del self.resources[uri]
        for session in list(self.sessions):
            self.publish(session)

    def unregister_tool(self, name: str) -> None:
        """Stop offering a tool and re-publish the entry."""
        self.tools.pop(name, None)
        for published, registered in list(self.tool_names.items()):
            if registered == name:
                del self.tool_names[published]
        for session in list(self.sessions):
            self.publish(session)

    def _server_tool_names(self) -> set[str]:
        names: set[str] = set()
        for session in self.sessions:
            names.update(t.get("name") for t in (self.state(session) or {}).get("serverTools") or ())
        return names

    def _session_of_chat(self, chat: str) -> str | None:
        for session in self.sessions:
            for entry in (self.state(session) or {}).get("chats") or ():
                if entry.get("resource") == chat:
                    return session
        return None

    def _scan_tool_calls(self, chat: str, tool_call_id: str | None = None) -> None:
        """Run this client's calls that are running and decline those it has no tool for; cancel an
        execution whose call left ``running``. With ``tool_call_id`` (an action changed that call
        only), only that call is looked at: a long turn is not read again for each action."""
        active = _object(_object(self.confirmed(chat)).get("activeTurn"))  # a host's state, any shape
        live: set[str] = set()
        if tool_call_id is None:
            parts = _parts(active)
            stale = [key for key in self.executions if key.startswith(f"{chat}#")]
        else:
            parts = tool_call_parts(active, tool_call_id)
            stale = [key for key in (f"{chat}#{tool_call_id}",) if key in self.executions]
        # declines the host has not echoed yet count too: each stays pending, and every envelope
        # re-applies what is pending (2,000 calls streamed one at a time, never echoed, held the
        # loop 14 s); a call left undeclined is declined at a later look
        replica = self.channels.get(chat)
        declines = unechoed = min(MAX_DECLINES, len(replica.pending)) if replica is not None else 0
        for part in parts:
            if not isinstance(part, dict) or part.get("kind") != "toolCall":
                continue
            tc = _object(part.get("toolCall"))
            contributor = _object(tc.get("contributor"))
            if contributor.get("kind") != "client" or contributor.get("clientId") != self.client_id:
                continue
            if not isinstance(tc.get("toolCallId"), str) or not isinstance(tc.get("toolName"), str):
                continue  # not a call this client could run or name
            key = f"{chat}#{tc.get('toolCallId')}"
            status = tc.get("status")
            if status == "running":
                live.add(key)
                if key not in self.executions and len(self.executions) >= MAX_EXECUTIONS:
                    if key not in self.declined:
                        self._decline(
                            chat, active.get("id"), tc, f"runs at most {MAX_EXECUTIONS} calls at once"
                        )
                elif key not in self.executions:
                    task = asyncio.ensure_future(self._execute(chat, active.get("id"), tc))
                    self.executions[key] = task
                    task.add_done_callback(lambda _t, k=key: self.executions.pop(k, None))
            elif (
                status == "pending-confirmation"
                and tc.get("toolName") not in self.tool_names
                and key not in self.declined
            ):
                if declines == MAX_DECLINES and unechoed < MAX_DECLINES:  # said once, not at each look
                    log.warning(
                        "%s names this client (%s) in more than %d calls waiting for tools it does "
                        "not have (counting declines not echoed yet); the rest are not declined now",
                        chat,
                        self.client_id,
                        MAX_DECLINES,
                    )
                declines += 1
                if declines <= MAX_DECLINES:
                    self._decline(chat, active.get("id"), tc)
        for key in stale:
            task = self.executions.get(key)
            if task is not None and key not in live:
                task.cancel()  # the call left `running` without us (turn ended, host failed it)

    def _decline(self, chat: str, turn_id: str, tc: dict, why: str | None = None) -> None:
        """Refuse a call for a tool this client does not know (customizations §6.3), or for ``why``
        (what this client says of itself), once."""
        self.declined[f"{chat}#{tc.get('toolCallId')}"] = None
        if len(self.declined) > MAX_DECLINED:
            del self.declined[next(iter(self.declined))]
        name = tc.get("toolName")
        base = {"turnId": turn_id, "toolCallId": tc.get("toolCallId")}
        message = f"Client {self.client_id} " + (why or f"has no tool named {name!r}")
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
                    "result": failure_result(
                        tc.get("displayName") or str(name),
                        message,
                        "unknownTool" if why is None else "tooManyCalls",
                    ),
                },
            )

    def needs_local_approval(self, tool: Tool) -> bool:
        """Whether this client asks its own person before running ``tool`` (its ``approval`` policy)."""
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
        key = f"{chat}#{call_id}"  # as executions are: a call id is unique within its chat only
        self.approvals[key] = approval
        self._notify(chat, {"type": "$localApproval", "toolCallId": call_id})
        try:
            return await approval.future
        finally:
            self.approvals.pop(key, None)
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
            active = _object(_object(self.confirmed(chat)).get("activeTurn"))
            if active.get("id") != turn_id:
                return False
            for part in _parts(active):
                call = _object(part.get("toolCall")) if isinstance(part, dict) else {}
                if part.get("kind") == "toolCall" and call.get("toolCallId") == call_id:
                    return call.get("status") == "running"
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
