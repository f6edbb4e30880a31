"""One client connection to the host: its lifecycle, its identity and the commands of overview §3.1.

A connection is transport-agnostic: it gets a transport object (the in-process pair or a
WebSocket, :class:`~ahp_lab.transport.Transport`) and never asks which. Whether it is the
*trusted* in-process notebook connection is decided by whoever creates it
(:meth:`Host.connect(trusted=True) <ahp_lab.host.Host.connect>` for the notebook's own client),
never by anything the peer says.

Lifecycle (upstream ``lifecycle.md``, ``transport.md``)::

    new ──initialize / reconnect──► ready ──close──► closed
     │                   (a contested client id: "claiming" until the old holder is pinged)
     └── ping is answered in every state; every other request before initialize gets
         -32600 "not initialized"; a second initialize or reconnect is refused.

Identity: a ``clientId`` belongs to the live connection that initialized with it. A claim on an
id held by another live connection pings that connection's socket (a WebSocket ping, which the
client's library answers by itself); if it answers within ``Limits.identity_grace_s`` the claim
is refused (-32010 AlreadyExists), otherwise the old one is closed and the newcomer takes over.
Everything a client may do only to its own things (complete its tool calls, remove itself,
publish its plugins) is checked against this binding.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
from collections.abc import Iterator
from typing import Any

from ..protocol import PROTOCOL_VERSION, SUPPORTED_VERSIONS, ProtocolError, validate_params
from ..protocol.actions import ACTION_SINCE
from ..protocol.jsonrpc import ErrorCode
from ..protocol.limits import MAX_SAFE_INTEGER, check_json, valid_seq
from ..protocol.messages import COMMANDS, HOST_TO_CLIENT_COMMANDS, ROOT_CHANNEL
from ..transport import JsonRpcPeer, RpcError
from ..transport.jsonrpc import PerMinute, RequestBudget
from .validation import turn_index

log = logging.getLogger("ahp_lab.host")

__all__ = ["Connection", "IMPLEMENTATION", "ROOT", "NOT_INITIALIZED", "introduced"]

ROOT = ROOT_CHANNEL
#: ``serverInfo`` in the ``initialize`` result: the snapshot of the protocol implemented, honestly.
IMPLEMENTATION = {
    "name": "ahp_lab",
    "version": "0.1.0",
    "title": "ahp_lab in-kernel host, AHP 0.8.0 pre-release snapshot of 2026-08-04 (upstream eb31098)",
}
REPLAY_LIMIT = 50_000
#: The ``ClientCapabilities`` members this host knows (overview §3.6), kept per connection.
KNOWN_CLIENT_CAPABILITIES = ("mcpApps",)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


#: Action type -> the version that introduced it, for the types newer than the oldest version this
#: host speaks: a client that negotiated an older one is not sent them (overview §3.6).
NEWER_ACTIONS: dict[str, tuple[int, ...]] = {
    kind: _version(since)
    for kind, since in ACTION_SINCE.items()
    if _version(since) > min(map(_version, SUPPORTED_VERSIONS))
}
#: What :func:`introduced` answers for a type no version has (only ever a rejected echo): it goes
#: to the client that dispatched it, whose pending list waits for it, and to no one else.
_NO_VERSION = (1 << 30,)


def introduced(action_type: Any) -> tuple[int, ...] | None:
    """The version that introduced ``action_type`` when a client may have negotiated an older one
    (it is sent only to clients that know it, overview §3.6), else ``None`` (sent to every subscriber)."""
    if type(action_type) is not str or action_type not in ACTION_SINCE:
        return _NO_VERSION
    return NEWER_ACTIONS.get(action_type)


#: Action types that a client which negotiated a version older than theirs is sent in an older form
#: with the same effect on its state (overview §3.6): the MCP start and stop requests (0.5.2) are
#: state changes (0.3.0, older than every version this host speaks) to ``starting`` and
#: ``stopped``. Without them, such a client's copy of an MCP server kept the state from before.
_OLDER_FORMS: dict[str, str] = {
    "session/mcpServerStartRequested": "starting",
    "session/mcpServerStopRequested": "stopped",
}


def older_envelope(transition: Any) -> dict | None:
    """The envelope of ``transition`` in the older form a client that negotiated a version before
    its type is sent instead (the host's own translation), or ``None`` when it has none."""
    kind = _OLDER_FORMS.get(transition.type)
    if kind is None or not transition.accepted:
        return None
    action = {
        "type": "session/mcpServerStateChanged",
        "id": transition.action.get("id"),
        "state": {"kind": kind},
    }
    return {"channel": transition.channel, "action": action, "serverSeq": transition.seq}


#: The notifications a client sends the host (overview §2): sent with an id, they are refused.
_CLIENT_NOTIFICATIONS = ("dispatchAction", "unsubscribe")
#: Invalid notifications whose reasons the host logs in a minute, all connections together; the
#: rest that minute are dropped unsaid.
_LOGGED_REFUSALS = 20
_refusals = PerMinute()  # notifications dropped
#: A client id travels in every envelope the client dispatches; it stays short.
MAX_CLIENT_ID_CHARS = 256
#: A channel's URI travels in every envelope on the channel, and a session's in its summaries.
MAX_CHANNEL_URI_CHARS = 2048


def name_problem(redactor: Any, what: str, name: str, most: int) -> str | None:
    """Why a name a client chooses (its id, a channel's URI, an id of what it brings) is refused,
    else ``None``: it is empty or longer than ``most``, not printable (it names something in logs,
    envelopes and the workbench), or the host would mask it where it shows it: a name is kept as
    it is."""
    if not 0 < len(name) <= most:
        return f"{what} must be 1 to {most:,} characters long, got {len(name):,} characters"
    if not name.isprintable():
        return f"{what} must be printable text, not one with control characters ({name!r:.200})"
    if redactor.text(name) != name:
        return (
            f"{what} looks like it holds a credential (a key, a password, a URL's user:password), "
            "which the host would mask wherever it shows it; choose another"
        )
    return None


def check_name(redactor: Any, what: str, name: str, most: int) -> None:
    """:func:`name_problem` as an ``RpcError`` (-32602), for a command's params."""
    problem = name_problem(redactor, what, name, most)
    if problem is not None:
        raise RpcError(ErrorCode.INVALID_PARAMS, problem)


#: The longest token ``authenticate`` takes (a JWT is some 1 to 4 KB).
MAX_TOKEN_CHARS = 16 * 1024
#: The message of the error (-32600 InvalidRequest) for requests before ``initialize``; the spec
#: defines no dedicated code for it.
NOT_INITIALIZED = "not initialized: send initialize (or reconnect) first"
# Commands whose ``channel`` is the root literal; a missing channel defaults to it.
_ROOT_LEVEL = HOST_TO_CLIENT_COMMANDS | {
    "initialize",
    "reconnect",
    "listSessions",
    "resolveSessionConfig",
    "sessionConfigCompletions",
    "authenticate",
}


def _shown(name: str) -> str:
    """A peer-chosen name as it may appear in an error message (short)."""
    return name if len(name) <= 80 else name[:80] + "…"


def invalid_params(exc: ProtocolError) -> RpcError:
    """The -32602 answer for params that break the protocol models or a limit."""
    return RpcError(ErrorCode.INVALID_PARAMS, str(exc), {"field": exc.field, "rule": exc.rule})


#: The cursor of a windowed snapshot that keeps no turn: every turn is older.
_ALL_TURNS = "all"


def _code_points(text: str, units: int) -> int | None:
    """The code-point index of UTF-16 position ``units`` in ``text`` (``None``: outside it, or
    between the two halves of a character)."""
    if units < 0:
        return None
    encoded = text.encode("utf-16-le", "surrogatepass")
    if 2 * units > len(encoded):
        return None
    head = encoded[: 2 * units].decode("utf-16-le", "surrogatepass")
    if head and head[-1] != text[len(head) - 1]:
        return None  # the first half of a character that takes two units
    return len(head)


def _units(text: str, index: int) -> int:
    """The UTF-16 position of code-point ``index`` in ``text``."""
    return len(text[:index].encode("utf-16-le", "surrogatepass")) // 2


_NON_SPACE = re.compile(r"\S*")

#: The most items one ``completions`` answer lists (a person picks from the first few).
MAX_COMPLETION_ITEMS = 200


def _in_units(text: str, items: list[dict]) -> list[dict]:
    """Completion items with their ranges in UTF-16 code units (each position converted once)."""
    converted: dict[int, int] = {}
    out = []
    for item in items[:MAX_COMPLETION_ITEMS]:
        item = dict(item)
        for key in ("rangeStart", "rangeEnd"):
            position = item.get(key)
            if type(position) is int:
                if position not in converted:
                    converted[position] = _units(text, position)
                item[key] = converted[position]
        out.append(item)
    return out


def _session_cursor(cursor: str) -> tuple[str, str] | None:
    """The ``(modifiedAt, resource)`` a ``listSessions`` cursor names, or ``None`` for one this
    host did not make."""
    if not cursor.startswith("after:") or len(cursor) > 4096:
        return None
    try:
        modified, resource = json.loads(cursor[6:])
    except (ValueError, TypeError):
        return None
    if not isinstance(modified, str) or not isinstance(resource, str):
        return None
    return modified, resource


class Connection:
    """Serves one client: its lifecycle and identity, its subscriptions, dispatches and commands."""

    def __init__(self, host: Any, transport: Any, *, trusted: bool = False) -> None:
        self.host = host
        self._trusted = bool(trusted)
        self.limits = host.limits
        self.client_id: str | None = None
        #: ``"new"`` → (``"claiming"``) → ``"ready"``
        self.phase = "new"
        self.protocol_version: str | None = None
        self.capabilities: dict = {}
        self.subscriptions: set[str] = set()
        #: chat -> the id of the newest turn this client's windowed snapshot (``view.turns``) left
        #: out: it holds none of the turns up to that one until they are paged in
        self.windows: dict[str, Any] = {}
        # what this client's requests may make the host send (answers, broadcasts they cause):
        # the notebook's own connection is not bounded
        budget = (
            None
            if trusted
            else RequestBudget(self.limits.max_request_bytes_per_s, shared=host.strangers_budget)
        )
        self.peer = JsonRpcPeer(
            transport,
            self._request,
            self._notification,
            self._closed,
            name="host",
            limits=self.limits,
            budget=budget,
            # the stall a dense frame costs is the notebook's own business (its cells and tools
            # are checked against the other limits, with the field named)
            max_items=None if trusted else self.limits.max_message_items,
        )
        charge_reads = getattr(transport, "charge_reads_to", None)  # a socket's reading takes time too
        if budget is not None and charge_reads is not None:
            charge_reads(budget)
        host.connections.add(self)

    # -- identity and trust ---------------------------------------------------------------------

    @property
    def trusted(self) -> bool:
        """Whether this is the notebook's own in-process connection (fixed when it was created)."""
        return self._trusted

    @property
    def initialized(self) -> bool:
        """Whether ``initialize`` (or ``reconnect``) succeeded on this connection."""
        return self.phase == "ready"

    @property
    def closed(self) -> bool:
        return self.peer.closed

    def close(self, reason: str = "") -> None:
        """Close the transport (the client sees the connection end)."""
        if reason:
            log.info("closing connection of %s: %s", self.client_id or "an uninitialized client", reason)
        self.peer.close()

    def receives(self, transition: Any, since: tuple[int, ...]) -> bool:
        """Whether this client is sent ``transition``, of an action type introduced in ``since``:
        not when it negotiated an older version, unless it is the echo of its own dispatch, which
        its pending list waits for. (``reconnect`` keeps the version of the client's ``initialize``.)"""
        negotiated = _version(self.protocol_version or PROTOCOL_VERSION)
        return negotiated >= since or transition.origin.get("clientId") == self.client_id

    async def probe(self, timeout: float) -> bool:
        """Whether the client's transport still answers within ``timeout`` (a WebSocket ping, which
        its library answers by itself). Not a JSON-RPC request: AHP gives a host none that every
        client must answer, and a client's silence to one must not cost it its id."""
        return not self.closed and await self.peer.transport.alive(timeout)

    # -- plumbing -------------------------------------------------------------------------------

    def send_text(self, text: str, *, history: bool = False) -> None:
        try:
            self.peer.send_text(text, history=history)
        except ConnectionError:
            self._closed()

    def _subscribe(self, channel: str) -> dict:
        state = self.host.store.state(channel)
        if state is None:
            code = (
                ErrorCode.SESSION_NOT_FOUND
                if channel.startswith("ahp-session:/") and "/annotations" not in channel
                else ErrorCode.NOT_FOUND
            )
            raise RpcError(code, f"no channel {channel}")
        self._add_subscription(channel)
        return {
            "resource": channel,
            "state": self.host.snapshot_state(channel),
            "fromSeq": self.host.store.last_seq,
        }

    def _add_subscription(self, channel: str) -> None:
        if self.closed:  # a subscribe served after its connection closed (one that waited for its session)
            raise RpcError(ErrorCode.INVALID_REQUEST, "this connection is closed")
        if channel not in self.subscriptions and len(self.subscriptions) >= self.limits.max_subscriptions:
            raise RpcError(
                ErrorCode.INVALID_REQUEST,
                f"this connection already has {len(self.subscriptions)} subscriptions "
                f"(the limit is {self.limits.max_subscriptions}); unsubscribe from some first",
            )
        self.subscriptions.add(channel)
        self.host.subscribers.setdefault(channel, set()).add(self)

    def _unsubscribe(self, channel: str) -> None:
        self.subscriptions.discard(channel)
        self.windows.pop(channel, None)
        bucket = self.host.subscribers.get(channel)
        if bucket is not None:
            bucket.discard(self)
        if channel in self.host.sessions and self.client_id is not None:
            # Unsubscribing from a session is a signal to drop the client from activeClients.
            self.host.remove_client(channel, self.client_id, "unsubscribed from the session")

    def _closed(self) -> None:
        if self not in self.host.connections:
            return
        self.host.connections.discard(self)
        if self.peer.budget is not None:
            self.peer.budget.release()
        self.host.release_client_id(self)
        for channel in list(self.subscriptions):
            bucket = self.host.subscribers.get(channel)
            if bucket is not None:
                bucket.discard(self)
        client_id = self.client_id
        if client_id is None:
            return
        # every session it is an active client of, subscribed or not (activeClientSet and
        # createSession's activeClient need no subscription)
        sessions = [s for s in self.host.sessions if self.host.is_active_client(s, client_id)]
        grace = self.host.client_grace_s
        departures = self.host.departures
        departures[client_id] = self

        def expire() -> None:
            if departures.get(client_id) is not self:
                # it came back and dropped again since: that drop's own grace period decides (each
                # drop's timer asked only whether the client was connected when it fired, and
                # removed a client that dropped twice within the period, back within
                # milliseconds each time)
                return
            del departures[client_id]
            back = self.host.connection_of(client_id)
            for session in sessions:
                # a client that came back keeps the sessions it subscribed to again (a reconnect
                # drops the others itself); one that did not come back leaves them all
                if session in self.host.sessions and (back is None or session not in back.subscriptions):
                    self.host.remove_client(session, client_id, "disconnected")

        try:
            asyncio.get_running_loop().call_later(grace, expire)
        except RuntimeError:
            expire()

    def _refuse(self, error: RpcError) -> None:
        """Drop an invalid notification: a notification is never answered (overview §2, JSON-RPC
        2.0), so the reason goes to the host's log, at most ``_LOGGED_REFUSALS`` a minute whatever
        the connection (a stranger opening connection after connection cannot fill the log)."""
        count = _refusals.count()
        if count < _LOGGED_REFUSALS:
            log.warning(
                "dropped a notification from %.64s: %s%s",
                self.client_id or "a connection not initialized",
                error.message,
                " (further ones this minute are not logged)" if count + 1 == _LOGGED_REFUSALS else "",
            )

    # -- notifications --------------------------------------------------------------------------

    def _notification(self, method: str, params: dict) -> None:
        if method not in _CLIENT_NOTIFICATIONS:
            return  # unknown notifications are ignored (JSON-RPC)
        if not self.initialized:
            self._refuse(RpcError(ErrorCode.INVALID_REQUEST, f"{method}: {NOT_INITIALIZED}"))
            return
        channel = params.get("channel")
        if not isinstance(channel, str) or not channel:
            self._refuse(
                RpcError(ErrorCode.INVALID_PARAMS, f"{method}: field 'channel' must be a URI string")
            )
            return
        try:
            check_json(channel, self.limits, method)
        except ProtocolError as exc:
            self._refuse(invalid_params(exc))
            return
        if method == "unsubscribe":
            self._unsubscribe(channel)
            return
        client_seq = params.get("clientSeq")
        if not valid_seq(client_seq):
            self._refuse(
                RpcError(
                    ErrorCode.INVALID_PARAMS,
                    f"dispatchAction: field 'clientSeq' must be an integer from 0 to {MAX_SAFE_INTEGER}, "
                    f"got {client_seq!r:.40}",
                )
            )
            return
        action = params.get("action")
        if not isinstance(action, dict):  # no action to echo: an envelope carries a StateAction
            self._refuse(
                RpcError(ErrorCode.INVALID_PARAMS, "dispatchAction: field 'action' must be an object")
            )
            return
        with self._charged():  # the action's broadcast to every subscriber is this client's doing
            self.host.dispatch_from_client(self, client_seq, channel, action)

    # -- requests -------------------------------------------------------------------------------

    def _request(self, method: str, params: dict) -> Any:
        if method == "ping":
            return None
        handler = getattr(self, "_cmd_" + method, None)
        known = handler is not None or self._extension_serves(method)
        if method in ("initialize", "reconnect"):
            if self.phase == "claiming":
                raise RpcError(
                    ErrorCode.INVALID_REQUEST, f"{method} refused: this connection is still initializing"
                )
            if self.phase == "ready":
                raise RpcError(
                    ErrorCode.INVALID_REQUEST,
                    f"{method} refused: this connection is already initialized as {self.client_id!r}",
                )
        elif self.phase != "ready":
            raise RpcError(ErrorCode.INVALID_REQUEST, f"{_shown(method)}: {NOT_INITIALIZED}")
        if not known:
            if method in _CLIENT_NOTIFICATIONS:
                raise RpcError(
                    ErrorCode.INVALID_REQUEST, f"{method} is a notification: send it without an id"
                )
            raise RpcError(
                ErrorCode.METHOD_NOT_FOUND, f"method {_shown(method)} is not supported by this host"
            )
        if "channel" not in params and method in _ROOT_LEVEL:
            params = {**params, "channel": ROOT}
        if method == "initialize" and isinstance(params.get("protocolVersions"), str):
            params = {**params, "protocolVersions": [params["protocolVersions"]]}
        try:
            if method in COMMANDS:
                validate_params(method, params, self.limits)
            else:
                check_json(params, self.limits, method)
        except ProtocolError as exc:
            raise invalid_params(exc) from None
        with self._charged():  # what the command broadcast (fetchTurns: chat/turnsLoaded)
            if handler is None:
                return self._extension_request(method, params)
            return handler(params)

    @contextlib.contextmanager
    def _charged(self) -> Iterator[None]:
        """Charge this connection's budget with what the host broadcast meanwhile, and with the
        time it held the host's loop (a second of the loop costs a second of the budget): a
        stranger's actions within every limit whose text is slow to read for secrets (15 MB of
        ``?a:=`` held the loop 6 s each) kept the loop busy 99% of the time; now its next messages
        wait as long as the last one took."""
        sent, started = self.host.broadcast_chars, time.perf_counter()
        try:
            yield
        finally:
            if self.peer.budget is not None:
                self.peer.budget.charge(self.host.broadcast_chars - sent)
            self.charge_time(time.perf_counter() - started)

    def charge_time(self, seconds: float) -> None:
        """Charge this connection's budget with ``seconds`` of the host's loop spent on its behalf
        (a second for a second of its ``max_request_bytes_per_s``); the notebook's has none."""
        budget = self.peer.budget
        if budget is not None:
            budget.charge_seconds(seconds)

    def _extension_serves(self, method: str) -> bool:
        return any(method in getattr(ext, "methods", ()) for ext in self.host.extensions)

    def _extension_request(self, method: str, params: dict) -> Any:
        for ext in self.host.extensions:
            if method in getattr(ext, "methods", ()):
                return ext.handle_request(self, method, params)
        raise RpcError(ErrorCode.METHOD_NOT_FOUND, f"method {method} is not supported by this host")

    # -- lifecycle commands ---------------------------------------------------------------------

    def _claim(self, client_id: str, finish: Any) -> Any:
        """Take ``client_id`` for this connection, then ``finish()``; a contested id is awaited."""
        check_name(self.host.redactor, "field 'clientId'", client_id, MAX_CLIENT_ID_CHARS)
        if self.host.try_claim_client_id(self, client_id):
            self.client_id = client_id
            self.phase = "ready"
            return finish()
        self.phase = "claiming"

        async def contested() -> Any:
            try:
                await self.host.claim_client_id(self, client_id)
            except BaseException:
                self.phase = "new"
                raise
            self.client_id = client_id
            self.phase = "ready"
            return finish()

        return contested()

    def _cmd_initialize(self, params: dict) -> Any:
        version = self.host.negotiate(params["protocolVersions"])
        wanted = params.get("initialSubscriptions") or ()
        if len(wanted) > self.limits.max_subscriptions:
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                f"initialize: field 'initialSubscriptions' lists {len(wanted):,} channels, over the limit "
                f"of {self.limits.max_subscriptions} subscriptions per connection",
            )
        capabilities = params.get("capabilities")

        def finish() -> dict:
            self.protocol_version = version
            self.host.versions[params["clientId"]] = version  # for its reconnects, which negotiate nothing
            if len(self.host.versions) > 4096:  # strangers may use any number of ids: keep the newest
                del self.host.versions[next(iter(self.host.versions))]
            # only the capabilities the host knows: the rest of what a client sends is not kept for
            # the connection's life (15 MB of it, times 40 idle connections, held 2.4 GB)
            known = capabilities if isinstance(capabilities, dict) else {}
            self.capabilities = {
                name: {} for name in KNOWN_CLIENT_CAPABILITIES if isinstance(known.get(name), dict)
            }
            snapshots = []
            for channel in dict.fromkeys(wanted):  # one snapshot per channel, however often listed
                if self.host.store.has_channel(channel):  # stale URIs are skipped, not fatal
                    snapshots.append(self._subscribe(channel))
            return {
                "protocolVersion": version,
                "serverSeq": self.host.store.last_seq,
                "serverInfo": IMPLEMENTATION,
                "snapshots": snapshots,
                # completions: "@" names a tool, "/" an agent's command (see _cmd_completions)
                "completionTriggerCharacters": ["@", "/"],
            }

        return self._claim(params["clientId"], finish)

    def _cmd_reconnect(self, params: dict) -> Any:
        if not valid_seq(params["lastSeenServerSeq"]):
            raise RpcError(ErrorCode.INVALID_PARAMS, "reconnect: lastSeenServerSeq must be 0 or more")
        return self._claim(params["clientId"], lambda: self._replay(params))

    def _replay(self, params: dict) -> dict:
        # the version this client negotiated when it initialized (reconnect negotiates nothing)
        self.protocol_version = self.protocol_version or self.host.versions.get(
            self.client_id, PROTOCOL_VERSION
        )
        last = params["lastSeenServerSeq"]
        wanted = list(dict.fromkeys(params.get("subscriptions") or ()))
        store = self.host.store
        live = [c for c in wanted if store.has_channel(c)][: self.limits.max_subscriptions]
        chosen = set(live)
        missing = [c for c in wanted if c not in chosen]  # disposed, unknown, or over the limit
        listed = set(wanted)
        for session in list(self.host.sessions):
            if session not in listed and self.host.is_active_client(session, self.client_id):
                self.host.remove_client(session, self.client_id, "reconnected without the session")
        for channel in live:
            self._add_subscription(channel)
            turns = (store.state(channel) or {}).get("turns") if store.kind_of(channel) == "chat" else None
            if turns:  # its state may be a window (view.turns): a truncation pages history in first
                self.windows[channel] = turns[-1].get("id")
        disposed = self.host.disposed_at
        if (
            last > store.last_seq
            or store.last_seq - last > REPLAY_LIMIT
            or last < store.first_seq - 1
            # a replay that large would cost more than the channels' states: each reconnect would
            # make the host build it again, and it could not pass the send buffer
            or store.log_bytes_since(last + 1) > self.limits.max_message_bytes
            # a channel disposed after what the client saw and created again under its URI: the
            # client holds the old one, which the new one's actions do not bring up to date (it
            # kept the old chat's turns and the old session's title, told of nothing missing)
            or any(disposed.get(c, -1) >= last for c in live)
        ):
            return self._snapshots(live, missing)
        start = max(last + 1, store.first_seq)
        paged = self.host.paged_seqs  # history sent to the clients that lacked it, not to this one
        me = self.client_id
        actions = []
        for t in store.transitions[start:]:
            # and its own actions on channels it did not subscribe to: their echoes were its own
            if (t.channel not in chosen and t.origin.get("clientId") != me) or t.seq in paged:
                continue
            if t.type == "chat/truncated" and t.channel in chosen and t.accepted and "turnId" in t.action:
                # The client's state of the chat may be a window (view.turns) that lacks the named
                # turn: the truncation is a no-op there while it drops turns from the host's. The
                # history it would need first (chat-channel §9) was paged in to the connections
                # that held windows then, not to this one: it is sent the chats' states instead.
                return self._snapshots(live, missing)
            since = introduced(t.type)
            if since is None or self.receives(t, since):
                actions.append(t.envelope())
            elif (older := older_envelope(t)) is not None:
                actions.append(older)
        return {"type": "replay", "actions": actions, "missing": missing}

    def _snapshots(self, live: list[str], missing: list[str]) -> dict:
        """A reconnect's answer that replaces the state of each of the client's channels."""
        last = self.host.store.last_seq
        snapshots = [{"resource": c, "state": self.host.snapshot_state(c), "fromSeq": last} for c in live]
        return {"type": "snapshot", "snapshots": snapshots, "missing": missing}

    # -- channel commands -----------------------------------------------------------------------

    def _cmd_subscribe(self, params: dict) -> Any:
        channel = params["channel"]
        if channel in self.host.agent_sessions.opening:  # a pipelined subscribe waits for the session

            async def later() -> dict:
                await self.host.agent_sessions.wait_opened(channel)
                return self._cmd_subscribe(params)

            return later()
        snapshot = self._subscribe(channel)
        self.windows.pop(channel, None)
        view = params.get("view") or {}
        turns = view.get("turns")
        if isinstance(turns, int) and turns >= 0 and self.host.store.kind_of(channel) == "chat":
            state = snapshot["state"]
            all_turns = state.get("turns") or []
            if len(all_turns) > turns:
                kept = all_turns[len(all_turns) - turns :] if turns else []
                cursor = f"before:{kept[0]['id']}" if kept else _ALL_TURNS
                snapshot["state"] = {**state, "turns": kept, "turnsNextCursor": cursor}
                self.windows[channel] = all_turns[len(all_turns) - turns - 1].get("id")
        return {"snapshot": snapshot}

    def _cmd_createSession(self, params: dict) -> Any:
        return self.host.create_session(params["channel"], params, self)

    def _cmd_disposeSession(self, params: dict) -> None:
        self.host.dispose_session(params["channel"], self)
        return None

    def _cmd_createChat(self, params: dict) -> None:
        self.host.create_chat(params["channel"], params["chat"], params, self)
        return None

    def _cmd_disposeChat(self, params: dict) -> None:
        self.host.dispose_chat(params["channel"], self)
        return None

    def _cmd_listSessions(self, params: dict) -> dict:
        """Newest first; a cursor names the last session a page gave (its ``modifiedAt`` and URI), so
        that sessions changing between pages neither repeat nor push others out of the next one."""
        items = self.host.list_sessions()
        limit = params.get("limit")
        cursor = params.get("cursor")
        start = 0
        if cursor is not None:
            last = _session_cursor(cursor)
            if last is None:
                raise RpcError(ErrorCode.INVALID_PARAMS, f"unknown cursor {cursor!r:.80}")
            modified, resource = last  # the first session after it, newest first then by URI
            start = next(
                (
                    i
                    for i, s in enumerate(items)
                    if s["modifiedAt"] < modified
                    or (s["modifiedAt"] == modified and s["resource"] > resource)
                ),
                len(items),
            )
        if limit is not None and limit < 1:  # (an integer: the command's schema checked it)
            raise RpcError(ErrorCode.INVALID_PARAMS, f"listSessions: limit must be 1 or more, got {limit}")
        end = len(items) if limit is None else start + limit
        result: dict[str, Any] = {"items": items[start:end]}
        if end < len(items):
            result["nextCursor"] = "after:" + json.dumps(
                [items[end - 1]["modifiedAt"], items[end - 1]["resource"]]
            )
        return result

    def _cmd_fetchTurns(self, params: dict) -> dict:
        """Load every turn before the cursor (all of them without one) into this client's state,
        as ``chat/turnsLoaded`` without a cursor, sent to this connection only (in pages within
        ``max_message_bytes``).

        The host keeps every turn of a chat, so its state and a full subscriber's never have older
        turns to page in: a cursor in that action would land in their states and in later full
        snapshots, naming turns they already hold. Only a windowed snapshot (``view.turns``)
        carries a cursor, and one fetch completes its window.
        """
        chat = params["channel"]
        state = self.host.store.state(chat)
        if state is None or self.host.store.kind_of(chat) != "chat":
            raise RpcError(ErrorCode.NOT_FOUND, f"no chat {chat}")
        cursor = params.get("cursor")
        turns = state.get("turns") or []
        end = len(turns)
        if cursor is not None and cursor != _ALL_TURNS:
            ids = [t.get("id") for t in turns]
            if not (cursor.startswith("before:") and cursor[7:] in ids):
                raise RpcError(ErrorCode.INVALID_PARAMS, f"unknown cursor {cursor!r:.80}")
            end = ids.index(cursor[7:])
        # Only what this connection's window lacks (through the newest turn it was not sent): a
        # full subscriber holds every turn already, and an unsubscribed connection holds no state
        # to load them into. Each fetch paged in the whole chat: a 100 MB chat and 4 strangers'
        # requests held the host's loop 6 s (attacker round 14).
        lacking = self.windows.get(chat)
        newest_lacking = turn_index(turns, lacking) if lacking is not None else -1
        held_from = len(turns) if newest_lacking is None else newest_lacking + 1
        # delivered before the response, as the spec requires (an empty page when nothing lacks)
        self.host.page_in(chat, min(end, held_from), {self})
        return {}

    def _cmd_completions(self, params: dict) -> dict:
        """``completions``: positions on the wire are UTF-16 code units (overview §3.5), as a
        JavaScript client counts them; they are code points here, and converted both ways."""
        chat = params["channel"]
        text = params["text"]
        if params.get("kind") != "userMessage":
            raise RpcError(ErrorCode.INVALID_PARAMS, "completions: field 'kind' must be 'userMessage'")
        offset = _code_points(text, params["offset"])
        if offset is None:
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                "completions: field 'offset' must be a position inside 'text' (in UTF-16 code units)",
            )
        session = self.host.chat_session.get(chat)
        if session is None:
            raise RpcError(ErrorCode.NOT_FOUND, f"no chat {chat}")
        # the word before the offset, read backwards in one pass (a scan of the whole text from
        # each position would cost a stranger's megabyte of text as much squared)
        start = offset - (_NON_SPACE.match(text[offset - 1 :: -1]).end() if offset else 0)
        word = text[start:offset]
        items = []
        for ext in self.host.extensions:  # e.g. a LoopAgent's slash commands (/skill:name)
            more = getattr(ext, "completion_items", None)
            if more is not None:
                items.extend(more(session, chat, word, start, offset))
        if not word.startswith("@"):
            return {"items": _in_units(text, items)}
        for info in self.host.available_tools(session):
            if len(items) >= MAX_COMPLETION_ITEMS:
                break
            if info.name.startswith(word[1:]):
                items.append(
                    {
                        "insertText": info.name,
                        "rangeStart": start,
                        "rangeEnd": offset,
                        "attachment": {
                            "type": "simple",
                            "label": info.title or info.name,
                            "modelRepresentation": f"Use the tool {info.name}: {info.description}",
                        },
                    }
                )
        return {"items": _in_units(text, items)}

    def _cmd_authenticate(self, params: dict) -> dict:
        resource, token = params["resource"], params["token"]
        if not 0 < len(token) <= MAX_TOKEN_CHARS:
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                f"authenticate: field 'token' must be 1 to {MAX_TOKEN_CHARS:,} characters long, got {len(token):,}",
            )
        for ext in self.host.extensions:
            handle = getattr(ext, "authenticate", None)
            if handle is not None and handle(self, resource, token, params.get("scopes")):
                return {}
        raise RpcError(
            ErrorCode.INVALID_PARAMS,
            f"{resource!r:.200} is not a resource that a server or tool call of a session this "
            "connection is subscribed to asked to authenticate",
        )

    def _cmd_resolveSessionConfig(self, params: dict) -> Any:
        return self.host.agent_sessions.resolve_session_config(params)

    def _cmd_sessionConfigCompletions(self, params: dict) -> dict:
        return {"items": []}
