"""An AHP client: subscriptions, optimistic dispatch with reconciliation, client tools, reconnect.

Per subscribed channel the client keeps a :class:`~ahp_lab.client.reconcile.Replica`:
``confirmed`` (snapshots + host envelopes), ``pending`` (its own dispatches not yet echoed) and
``optimistic`` = confirmed with pending re-applied (overview §6). What it contributes to its
sessions — client tools it executes, plugins it publishes — is in
:mod:`ahp_lab.client.contributions`.

When the transport drops and the client has a way to reconnect (``ahp_lab.connect`` gives it
one), it resumes on a new transport with ``reconnect`` (overview §7): the host's replay is applied
to ``confirmed``; a snapshot answer replaces it; a host that cannot resume gets ``initialize``
again with the same client id. Dispatches made while disconnected wait and are sent afterwards;
dispatches sent before the drop that the host never sequenced are cleared (as the spec prefers)
and listed in :attr:`AhpClient.unconfirmed`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..protocol import (
    CLIENT_DISPATCHABLE,
    SUPPORTED_VERSIONS,
    ProtocolError,
    validate_action,
)
from ..protocol.actions import channel_kind_of_action
from ..protocol.jsonrpc import ErrorCode
from ..protocol.limits import DEFAULT_LIMITS, Limits, valid_seq
from ..reducers.chat import touched_tool_call
from ..tools import Tool
from ..transport import JsonRpcPeer, RpcError
from ..waiting import StateWaiters, check_wait_arguments
from .answers import (
    ROOT,
    _answer_seq,
    _bad_answer,
    _by_resource,
    _checked_snapshot,
    _Early,
    _negotiated,
    _server_info,
    _taken,
    _version_refusal,
    channel_kind_of_uri,
)
from .contributions import TOOL_ACTIONS, Contributions, LocalApproval
from .reconcile import Replica

log = logging.getLogger("ahp_lab.client")

__all__ = ["AhpClient", "LocalApproval", "channel_kind_of_uri"]

#: Chats a client subscribes to at once on its own to run its tools' calls (see ``_join_for``).
MAX_JOINING = 16

#: ``listener(channel, envelope, before, after, now_ms)`` after each change of a confirmed state
#: (``now_ms``: the clock value the reducer got); for a snapshot ``envelope`` is ``{"snapshot":
#: <the Snapshot>}`` and ``before`` the state it replaced (``None`` for a new channel).
ConfirmedListener = Callable[[str, dict, Any, Any, int], None]

#: Rejections of this client's own actions kept in ``client.rejections`` (the newest).
MAX_REJECTIONS = 1000
#: A host's rejection reason is kept up to this many characters.
MAX_REASON_CHARS = 2000


class AhpClient(Contributions):
    """A protocol client over a JSON-RPC transport.

    ``reconnect`` is an async callable returning a fresh transport to the same host; with it, a
    dropped connection is resumed by :class:`~ahp_lab.client.connect.Reconnector` (backoff with
    jitter) instead of closing the client.
    """

    def __init__(
        self,
        transport,
        *,
        client_id: str | None = None,
        display_name: str | None = None,
        trusted_host: bool = True,
        clock_ms: Callable[[], int] | None = None,
        reconnect: Callable[[], Awaitable[Any]] | None = None,
        request_timeout: float | None = 30.0,
        limits: Limits | None = None,
        max_items: int | None = None,
    ) -> None:
        self.client_id = client_id or f"client-{uuid.uuid4().hex[:8]}"
        #: A message from the host holding more values and keys is refused unread (a host elsewhere:
        #: :data:`~ahp_lab.client.connect.HOST_MAX_ITEMS`); ``None``: not counted (the in-kernel host)
        self.max_items = max_items
        #: What :meth:`dispatch` checks an action against before sending it: the host's own limits
        #: for a client of the in-kernel host (``Lab(limits=...)`` raises them for its cells too),
        #: the defaults for a host elsewhere, which checks again with its own.
        self.limits = limits or DEFAULT_LIMITS
        #: Seconds a command waits for the host's answer (a host that never answers is a stranger's
        #: failure too); ``client.request(..., timeout=...)`` sets it for one call. ``createSession``
        #: may start an agent first: it waits ten times as long. ``None``: no limit (the notebook's
        #: own in-kernel host, whose own limits bound what it does).
        self.request_timeout = request_timeout
        self.display_name = display_name
        self.trusted_host = trusted_host
        self.channels: dict[str, Replica] = {}
        self.client_seq = 0
        self.last_seen_seq = 0
        self.protocol_version: str | None = None
        self.tools: dict[str, Tool] = {}
        self.tool_names: dict[str, str] = {}  # published name -> registered name
        self.sessions: set[str] = set()  # sessions this client is active in
        self.rejections: deque[dict] = deque(maxlen=MAX_REJECTIONS)
        self.unconfirmed: list[dict] = []  # sent before a drop, never sequenced by the host
        #: the host's ``serverInfo`` from ``initialize`` (``{}`` when it gave none)
        self.server_info: dict = {}
        #: channels the host reported missing when this client resumed (disposed, or no longer
        #: permitted), the latest 100: what a dispatch to one of them is told
        self.missing: list[str] = []
        self.approvals: dict[str, LocalApproval] = {}
        self.executions: dict[str, asyncio.Task] = {}
        self.declined: dict[str, None] = {}  # calls this client declined ("chat#id"), oldest first
        self.resources: dict[str, str] = {}  # uri -> text served to the host (virtual plugins)
        self.published_customizations: list[dict] = []  # ClientPluginCustomization entries
        self.published_folders: dict[str, Path] = {}  # plugin name -> the folder it was read from
        self._listeners: list[Callable[[str, dict], None]] = []
        self._confirmed_listeners: list[ConfirmedListener] = []
        self._waiters = StateWaiters()
        # Envelopes that arrive for a channel whose subscribe response is not applied yet.
        self._early: dict[str, _Early] = {}
        self._early_pool = [0]  # the bytes every _early entry holds
        self._joining: dict[str, asyncio.Task] = {}  # chats subscribed to run this client's tools
        self._outbox: list[tuple[str, int, dict]] = []  # dispatched while disconnected
        self.closed = False
        self.connected = True
        self.url: str | None = None  # the host's URL without its token, when connected by URL
        self._closing = False
        self.reconnector = None
        if reconnect is not None:
            from .connect import Reconnector

            self.reconnector = Reconnector(self, reconnect)
        from ..store import wall_clock_ms

        self.clock_ms = clock_ms or wall_clock_ms
        self.peer = self._peer_for(transport)

    def _peer_for(self, transport) -> JsonRpcPeer:
        return JsonRpcPeer(
            transport,
            self._request,
            self._notification,
            self._closed,
            name=self.client_id,
            max_items=self.max_items,
        )

    # -- connection -----------------------------------------------------------------------------

    def _initialize_params(self, subscriptions: list[str]) -> dict:
        return {
            "channel": ROOT,
            "protocolVersions": list(SUPPORTED_VERSIONS),
            "clientId": self.client_id,
            "clientInfo": {"name": "ahp_lab", "version": "0.1.0"},
            "initialSubscriptions": subscriptions,
        }

    async def initialize(self, subscriptions: list[str] | None = None) -> dict:
        """Send ``initialize`` (all supported versions, this client's id) and apply the snapshots."""
        subscriptions = subscriptions if subscriptions is not None else [ROOT]
        for channel in subscriptions:
            self._early.setdefault(channel, _Early(self._early_pool))
        try:
            try:
                result = await self.peer.request(
                    "initialize", self._initialize_params(subscriptions), timeout=self.request_timeout
                )
            except RpcError as exc:
                raise _version_refusal(exc) from None
            self.protocol_version = _negotiated(result)
            self.server_info = _server_info(result)
            self.last_seen_seq = max(self.last_seen_seq, _answer_seq(result, "initialize"))
            snapshots = _by_resource(result, "initialize")
            for channel in subscriptions:
                early = _taken(self._early, channel)
                if channel in snapshots:
                    self._apply_snapshot(snapshots[channel], early)
        finally:  # whatever failed, no channel is left buffering what will never be applied
            self._drop_early(subscriptions)
        return result

    def _drop_early(self, channels: list[str]) -> None:
        """Stop buffering ``channels``' envelopes, giving the pool back what they held."""
        for channel in channels:
            entry = self._early.pop(channel, None)
            if entry is not None:
                entry.release()

    async def request(self, method: str, params: dict | None = None, *, timeout: float | None = None) -> Any:
        """Send a command; ``params.channel`` defaults to the root channel."""
        wait = self.request_timeout if timeout is None else timeout
        return await self.peer.request(method, {"channel": ROOT, **(params or {})}, timeout=wait)

    def close(self) -> None:
        """Close the connection for good (no reconnect)."""
        self._closing = True
        if self.reconnector is not None:
            self.reconnector.stop()
        self.peer.close()
        if not self.peer.closed:
            self._closed()

    async def settle(self, timeout: float | None = 30.0) -> None:
        """One round trip (``ping``): afterwards every dispatch sent before it has been answered.

        The host handles a connection's messages in order, so once ``ping`` is answered each
        earlier dispatch was echoed; one still pending was dropped by the host (its channel was
        gone) and leaves ``pending``. Raises ``ConnectionError`` while disconnected.
        """
        upto = self.client_seq
        await self.peer.request("ping", {"channel": ROOT}, timeout=timeout)
        now = self.clock_ms()
        for channel, replica in self.channels.items():
            gone = replica.forget_through(upto, now)
            if gone:
                self._notify(channel, {"type": "$dropped", "clientSeqs": [s for s, _ in gone]})

    async def aclose(self) -> None:
        """Close for good and wait until the transport has shut down."""
        self.close()
        task = self.reconnector.task if self.reconnector is not None else None
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)
        wait = getattr(self.peer.transport, "wait_closed", None)
        if wait is not None:
            await wait()

    def resend_unconfirmed(self) -> list[int]:
        """Dispatch again what was cleared after a drop (:attr:`unconfirmed`); returns the new client seqs.

        Only a person or a program that knows the actions are safe to repeat should call this:
        an action whose echo was lost may have been applied already.
        """
        entries, self.unconfirmed = self.unconfirmed, []
        return [self.dispatch(e["channel"], e["action"]) for e in entries if e["channel"] in self.channels]

    def _closed(self) -> None:
        self.connected = False
        transport = self.peer.transport
        if self.reconnector is not None and not self._closing and getattr(transport, "too_big", False):
            # A resume would replay the same message and close again, for ever: say so, once.
            self.reconnector.give_up(
                ConnectionError(
                    f"{transport.close_reason}: the host sent more than this client accepts in one "
                    "message, and a resume would replay it; connect again with a larger max_frame_bytes"
                )
            )
            return
        if self.reconnector is not None and not self._closing:
            # Dispatches the dead transport never sent are safe to send again after the resume.
            never_sent = []
            for text in getattr(self.peer.transport, "unsent", None) or ():
                try:
                    message = json.loads(text)
                except ValueError:
                    continue
                params = message.get("params") if message.get("method") == "dispatchAction" else None
                if isinstance(params, dict):
                    never_sent.append((params.get("channel"), params.get("clientSeq"), params.get("action")))
            self._outbox = never_sent + self._outbox
            self._notify(ROOT, {"type": "$disconnected"})
            self.reconnector.start()
            return  # tool calls keep running: the host waits out a grace period for us
        self.closed = True
        for task in list(self.executions.values()):
            task.cancel()

    async def resume(self, transport, *, timeout: float = 30.0) -> str:
        """Continue on a new transport after a drop; returns ``"replay"``, ``"snapshot"`` or ``"initialize"``.

        Sends ``reconnect`` with the last seen server seq and every subscribed channel. A replay is
        applied to ``confirmed`` (envelopes already applied are skipped); a snapshot answer
        replaces each channel; when the host cannot resume (an error answer) the client sends
        ``initialize`` with the same id and its channels as ``initialSubscriptions``.
        """
        self.peer = self._peer_for(transport)
        channels = list(self.channels)
        for channel in channels:
            self._early.setdefault(channel, _Early(self._early_pool))
        early: dict[str, _Early | None] = {}
        try:
            try:
                mode = await self._reconnect_or_initialize(channels, timeout)
            finally:
                early = {c: self._early.pop(c, None) for c in channels}
            for channel in channels:
                for env in _taken(early, channel):
                    self._apply_envelope(env)
        finally:  # whatever ended the resume, the pool gets back what its channels held
            for entry in early.values():
                if entry is not None:
                    entry.release()
        self._settle_after_resume()
        self.connected = True
        for session in list(self.sessions):
            if session in self.channels and not self._listed_in(session):
                self.publish(session)  # the host removed us after its grace period
        return mode

    async def _reconnect_or_initialize(self, channels: list[str], timeout: float) -> str:
        try:
            result = await self.peer.request(
                "reconnect",
                {
                    "channel": ROOT,
                    "clientId": self.client_id,
                    "lastSeenServerSeq": self.last_seen_seq,
                    "subscriptions": channels,
                },
                timeout=timeout,
            )
        except RpcError as exc:
            log.info("reconnect refused (%s): initializing again", exc)
            result = None
        if isinstance(result, dict) and result.get("type") == "replay":
            actions, missing = result.get("actions") or [], result.get("missing") or []
            if not isinstance(actions, list) or not all(isinstance(env, dict) for env in actions):
                raise _bad_answer("reconnect", "a replay's actions are not a list of envelopes")
            if not isinstance(missing, list) or not all(isinstance(uri, str) for uri in missing):
                raise _bad_answer("reconnect", "a replay's missing channels are not a list of URIs")
            for env in actions:
                self._apply_envelope(env)
            for uri in dict.fromkeys(missing):  # each once, and only channels the client has
                if uri in self.channels:
                    self._drop_channel(uri)
            return "replay"
        if isinstance(result, dict) and result.get("type") == "snapshot":
            self._replace_channels(channels, _by_resource(result, "reconnect"))
            return "snapshot"
        try:
            result = await self.peer.request("initialize", self._initialize_params(channels), timeout=timeout)
            snapshots = _by_resource(result, "initialize")
        except RpcError:  # one of the channels is gone: start from the root, then one by one
            result = await self.peer.request("initialize", self._initialize_params([]), timeout=timeout)
            snapshots = {}
            for channel in channels:
                try:
                    answer = await self.peer.request("subscribe", {"channel": channel}, timeout=timeout)
                except RpcError:
                    continue
                snapshot = answer.get("snapshot") if isinstance(answer, dict) else None
                if snapshot is not None and _checked_snapshot(snapshot, "subscribe")["resource"] == channel:
                    snapshots[channel] = snapshot  # (another channel's snapshot is not taken)
        self.protocol_version = _negotiated(result)
        self.server_info = _server_info(result)
        # a new handshake: the host's numbering now, which a restarted host may have begun again
        self.last_seen_seq = _answer_seq(result, "initialize")
        self._replace_channels(channels, snapshots)
        return "initialize"

    def _replace_channels(self, channels: list[str], snapshots: dict[str, dict]) -> None:
        """After a resume: each channel takes its new snapshot; one without a snapshot is gone."""
        for channel in channels:
            if channel in snapshots:
                self._apply_snapshot(snapshots[channel], keep_pending=True)
            else:
                self._drop_channel(channel)

    def _settle_after_resume(self) -> None:
        """Clear what was sent before the drop and never sequenced; send what waited offline."""
        waiting = {seq for _, seq, _ in self._outbox}
        now = self.clock_ms()
        for channel, replica in self.channels.items():
            lost = [(s, a) for s, a in replica.pending if s not in waiting]
            if lost:
                replica.pending = [(s, a) for s, a in replica.pending if s in waiting]
                replica.rebase(now)
                for seq, action in lost:
                    self.unconfirmed.append({"channel": channel, "clientSeq": seq, "action": action})
                self._notify(channel, {"type": "$unconfirmed", "clientSeqs": [s for s, _ in lost]})
        outbox, self._outbox = self._outbox, []
        for channel, seq, action in outbox:
            if channel in self.channels:
                self._send_dispatch(channel, seq, action)

    def _listed_in(self, session: str) -> bool:
        state = self.confirmed(session) or {}
        clients = state.get("activeClients") if isinstance(state, dict) else None
        if not isinstance(clients, list):  # a Vector reads as a list too
            return False
        return any(isinstance(c, dict) and c.get("clientId") == self.client_id for c in clients)

    def _session_removed(self, session: Any) -> None:
        """The host disposed ``session``: it and its chats this client holds are gone, so that a
        dispatch to them says so at once (the host drops an action for a channel it does not
        have, and its sender would wait for an echo that never comes)."""
        if not isinstance(session, str) or session not in self.channels:
            return
        chats = (self.confirmed(session) or {}).get("chats")
        for entry in chats if isinstance(chats, list) else ():
            chat = entry.get("resource") if isinstance(entry, dict) else None
            if isinstance(chat, str) and chat in self.channels:
                self._drop_channel(chat)
        self._drop_channel(session)

    def _drop_channel(self, channel: str) -> None:
        self.channels.pop(channel, None)
        self.sessions.discard(channel)
        if channel not in self.missing:
            self.missing = [*self.missing[-99:], channel]
        self._notify(channel, {"type": "$missing"})

    # -- subscriptions --------------------------------------------------------------------------

    def _apply_snapshot(self, snapshot: dict, early: list[dict] = (), *, keep_pending: bool = False) -> None:
        uri = snapshot["resource"]
        old = self.channels.get(uri)
        kind = channel_kind_of_uri(uri) or (old.kind if old is not None else None)
        if kind is None:
            raise ValueError(f"cannot tell the channel kind of {uri}")
        from_seq = int(snapshot.get("fromSeq") or 0)
        now = self.clock_ms()
        before = None if old is None else old.confirmed
        if old is None:
            replica = Replica(kind, snapshot["state"], from_seq)
            self.channels[uri] = replica
        else:
            replica = old
            replica.reset(snapshot["state"], from_seq, now, keep_pending=keep_pending)
        self.last_seen_seq = max(self.last_seen_seq, from_seq)
        self._tell_confirmed(uri, {"snapshot": snapshot}, before, replica.confirmed, now)
        self._notify(uri, {"type": "$snapshot"})
        for env in early:  # sent after the snapshot but delivered before we applied it
            self._apply_envelope(env)
        if kind == "chat":
            self._scan_tool_calls(uri)
        elif kind == "session":
            entries = (
                (replica.confirmed or {}).get("inputNeeded") if isinstance(replica.confirmed, dict) else None
            )
            for entry in entries if isinstance(entries, list) else ():
                self._join_for(entry)

    async def subscribe(self, channel: str, *, turns: int | None = None) -> Any:
        """Subscribe and apply the snapshot; returns the channel's state."""
        params: dict[str, Any] = {"channel": channel}
        if turns is not None:
            params["view"] = {"turns": turns}
        self._early.setdefault(channel, _Early(self._early_pool))
        try:
            result = await self.peer.request("subscribe", params, timeout=self.request_timeout)
        except BaseException:
            self._drop_early([channel])
            raise
        envelopes = _taken(self._early, channel)
        if not isinstance(result, dict) or result.get("snapshot") is None:
            raise _bad_answer("subscribe", "it carries no snapshot")
        snapshot = _checked_snapshot(result["snapshot"], "subscribe")
        if snapshot["resource"] != channel:
            raise RpcError(
                ErrorCode.INTERNAL_ERROR,
                f"the host answered subscribe {channel} with a snapshot of {snapshot['resource']!r:.200}, "
                "not of that channel",
            )
        self._apply_snapshot(snapshot, envelopes)
        return self.state(channel)

    def unsubscribe(self, channel: str) -> None:
        """Stop receiving a channel (for a session: leave its active clients)."""
        self.peer.notify("unsubscribe", {"channel": channel})
        self.channels.pop(channel, None)
        self.sessions.discard(channel)

    def state(self, channel: str) -> Any:
        """The optimistic state of a subscribed channel (what a UI should render)."""
        replica = self.channels.get(channel)
        return None if replica is None else replica.optimistic

    def confirmed(self, channel: str) -> Any:
        """The confirmed state of a subscribed channel (snapshots and host envelopes only)."""
        replica = self.channels.get(channel)
        return None if replica is None else replica.confirmed

    def on_change(self, listener: Callable[[str, dict], None]) -> Callable[[], None]:
        """Call ``listener(channel, action)`` after every change of a subscribed channel."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def on_confirmed(self, listener: ConfirmedListener) -> Callable[[], None]:
        """Call ``listener(channel, envelope, before, after, now_ms)`` after every envelope or snapshot
        applied to a confirmed state (rejected envelopes included: ``before is after``)."""
        self._confirmed_listeners.append(listener)
        return lambda: (
            self._confirmed_listeners.remove(listener) if listener in self._confirmed_listeners else None
        )

    def _tell_confirmed(self, channel: str, envelope: dict, before: Any, after: Any, now_ms: int) -> None:
        for listener in tuple(self._confirmed_listeners):
            try:
                listener(channel, envelope, before, after, now_ms)
            except Exception:
                log.exception("confirmed-state listener failed")

    def _notify(self, channel: str, action: dict) -> None:
        for listener in tuple(self._listeners):
            try:
                listener(channel, action)
            except Exception:
                log.exception("client listener failed")
        if self._waiters.has(channel):
            self._waiters.notify(channel, self.state(channel))

    def waited_channels(self) -> list[str]:
        """The channels some :meth:`wait_for` is waiting on."""
        return self._waiters.channels()

    def recheck(self, channel: str) -> None:
        """Run the checks of every :meth:`wait_for` on ``channel`` again, now: something they read
        besides the state changed (an answer the sender's own code could not give, say)."""
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
        elif "/" in method:
            if method == "root/sessionRemoved":
                self._session_removed(params.get("session"))
            # The protocol's notifications (root/…, auth/…, otlp/…) become $events; their params never
            # name the event. A bare name ("missing") could pass for one of the client's own events.
            self._notify(params.get("channel", ROOT), {**params, "type": f"${method}"})
        else:
            log.debug("%s: ignored the host's notification %.100r", self.client_id, method)

    def _on_envelope(self, env: dict) -> None:
        channel = env.get("channel")
        early = self._early.get(channel)
        if early is not None:  # a (re)subscribe is in flight: apply after its snapshot
            early.add(env)
            return
        self._apply_envelope(env)

    def _apply_envelope(self, env: dict) -> None:
        seq = env.get("serverSeq")
        if not valid_seq(seq):  # overview §4: every envelope carries its number
            log.warning(
                "%s: ignored an action envelope without a serverSeq number: %.200s", self.client_id, env
            )
            return
        if seq > self.last_seen_seq:
            self.last_seen_seq = seq
        channel = env.get("channel")
        replica = self.channels.get(channel)
        if replica is None:
            return
        before = replica.confirmed
        now = self.clock_ms()
        outcome = replica.receive(env, self.client_id, now)
        if outcome.kind == "stale":
            return
        action = env.get("action") or {}
        rejected = env.get("rejectionReason")
        if outcome.kind == "own-rejected" and outcome.sent is not None:  # one this client sent
            reason = rejected if isinstance(rejected, str) else json.dumps(rejected, default=str)
            self.rejections.append(
                {
                    "channel": channel,
                    "action": outcome.sent,
                    "reason": reason[:MAX_REASON_CHARS],
                    "clientSeq": outcome.client_seq,
                }
            )
        self._tell_confirmed(channel, env, before, replica.confirmed, now)
        self._notify(
            channel,
            action if rejected is None else {"type": "$rejected", "action": action, "reason": rejected},
        )
        if replica.kind == "chat" and rejected is None and action.get("type") in TOOL_ACTIONS:
            self._scan_tool_calls(channel, touched_tool_call(action))
        elif (
            replica.kind == "session" and rejected is None and action.get("type") == "session/inputNeededSet"
        ):
            self._join_for(action.get("request"))

    def _join_for(self, entry: Any) -> None:
        """A session's ``toolClientExecution`` entry names this client in a chat it has not
        subscribed (it joined the session only): subscribe, so that the call runs (the host lists
        the entry "to make the work discoverable without a chat subscription", customizations
        §6.2). At most ``MAX_JOINING`` such subscriptions are opened at once."""
        if not isinstance(entry, dict) or entry.get("kind") != "toolClientExecution":
            return
        chat = entry.get("chat")
        if (
            entry.get("clientId") != self.client_id
            or not self.tools
            or not isinstance(chat, str)
            or channel_kind_of_uri(chat) != "chat"
            or chat in self.channels
            or chat in self._joining
            or len(self._joining) >= MAX_JOINING
        ):
            return

        async def join() -> None:
            try:
                await self.subscribe(chat)
            except Exception as exc:  # noqa: BLE001 - the host's call waits; the log says why
                log.warning(
                    "%s: could not subscribe to %s to run a tool call there: %s", self.client_id, chat, exc
                )
            finally:
                self._joining.pop(chat, None)

        self._joining[chat] = asyncio.ensure_future(join())

    # -- dispatching ----------------------------------------------------------------------------

    def dispatch(self, channel: str, action: dict) -> int:
        """Validate locally, apply optimistically, send ``dispatchAction``; returns the clientSeq.

        Raises :class:`ProtocolError` (a ``ValueError`` with a one-sentence reason) for malformed
        actions, actions clients may not dispatch, and channels this client has not subscribed.
        While disconnected (and reconnecting) the action waits and is sent after the resume.
        """
        replica = self.channels.get(channel)
        if replica is None and channel in self.missing:
            raise ProtocolError(
                f"the host no longer has {channel}: it was disposed (or, when this client resumed, "
                "the host reported it missing: disposed meanwhile, or no longer permitted)",
                field="channel",
                rule="must be a subscribed channel",
            )
        if replica is None:
            raise ProtocolError(
                f"not subscribed to {channel}: subscribe before dispatching to it",
                field="channel",
                rule="must be a subscribed channel",
            )
        normalized = validate_action(action, self.limits)
        kind = normalized["type"]
        if kind not in CLIENT_DISPATCHABLE:
            raise ProtocolError(
                f"{kind} is host-only: clients cannot dispatch it",
                field="type",
                rule="must be client-dispatchable",
                subject=kind,
            )
        if channel_kind_of_action(kind) != replica.kind:
            raise ProtocolError(
                f"{kind} belongs on a {channel_kind_of_action(kind)} channel, not on the {replica.kind} channel {channel}",
                field="channel",
                rule="must match the action's channel kind",
                subject=kind,
            )
        if self.closed:
            raise ConnectionError(f"client {self.client_id} is closed")
        self.client_seq += 1
        seq = self.client_seq
        replica.dispatch(seq, normalized, self.clock_ms())
        if self.connected:
            self._send_dispatch(channel, seq, normalized)
        else:
            self._outbox.append((channel, seq, normalized))
        self._notify(channel, normalized)
        return seq

    def _send_dispatch(self, channel: str, seq: int, action: dict) -> None:
        try:
            self.peer.notify("dispatchAction", {"channel": channel, "clientSeq": seq, "action": action})
        except ConnectionError:
            if self.reconnector is None or self._closing:
                raise
            self._outbox.append((channel, seq, action))  # the drop is being noticed: send after resume

    # -- sessions -------------------------------------------------------------------------------

    async def list_sessions(
        self, *, page_size: int | None = None, max_items: int = 10_000, max_pages: int = 1_000
    ) -> list[dict]:
        """The host's catalogue (``listSessions``), every page followed: its ``SessionSummary``
        entries, in the host's order. ``page_size`` is the ``limit`` asked per page.

        Raises :class:`RpcError` with the host's error (an unknown cursor is -32602),
        ``TimeoutError`` when a page is not answered within ``request_timeout``, and
        ``ValueError`` when the host's pages cannot end: a cursor it gave before, more than
        ``max_items`` entries, or more than ``max_pages`` pages (empty ones count).
        """
        items: list[dict] = []
        seen: set[str] = set()
        cursor = None
        while True:
            if len(seen) >= max_pages:
                raise ValueError(
                    f"the host's listSessions pages do not end: over {max_pages:,} pages (max_pages)"
                )
            params: dict[str, Any] = {"channel": ROOT}
            if page_size is not None:
                params["limit"] = page_size
            if cursor is not None:
                params["cursor"] = cursor
            page = await self.peer.request("listSessions", params, timeout=self.request_timeout)
            entries = page.get("items") if isinstance(page, dict) else None
            if not isinstance(entries, list):
                raise ValueError("the host's listSessions answer has no items list")
            items.extend(e for e in entries if isinstance(e, dict))
            cursor = page.get("nextCursor")
            if cursor is None:
                return items
            if not isinstance(cursor, str):
                raise ValueError("the host's listSessions nextCursor is not a string")
            if cursor in seen:
                raise ValueError(
                    f"the host's listSessions pages do not end: it gave cursor {cursor[:80]!r} twice"
                )
            if len(items) > max_items:
                raise ValueError(f"the host lists more than {max_items:,} sessions (max_items)")
            seen.add(cursor)

    async def create_session(self, uri: str | None = None, **params: Any) -> str:
        """``createSession`` (this client active in it) and subscribe; returns the session URI."""
        uri = uri or f"ahp-session:/{uuid.uuid4()}"
        await self.peer.request(
            "createSession",
            {"channel": uri, "activeClient": self.active_client_entry(), **params},
            timeout=None if self.request_timeout is None else 10 * self.request_timeout,
        )
        self.sessions.add(uri)
        await self.subscribe(uri)
        return uri
