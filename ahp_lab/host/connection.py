"""One client connection to the host: the JSON-RPC command set of overview §3.1."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..protocol.jsonrpc import ErrorCode
from ..protocol.jsonvalue import to_json
from ..transport import JsonRpcPeer, RpcError

if TYPE_CHECKING:
    from .host import Host

log = logging.getLogger("ahp_lab.host")

ROOT = "ahp-root://"
REPLAY_LIMIT = 50_000


def _require(params: dict, key: str, kind: type | tuple = str) -> Any:
    value = params.get(key)
    if not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise RpcError(ErrorCode.INVALID_PARAMS, f"params.{key} is required and must be a {expected}")
    return value


class Connection:
    """Serves one client: its subscriptions, its dispatches, its commands."""

    def __init__(self, host: Host, transport) -> None:
        self.host = host
        self.client_id: str | None = None
        self.protocol_version: str | None = None
        self.capabilities: dict = {}
        self.subscriptions: set[str] = set()
        self.peer = JsonRpcPeer(transport, self._request, self._notification, self._closed, name="host")
        host.connections.add(self)

    # -- plumbing -------------------------------------------------------------------------------

    def send_text(self, text: str) -> None:
        try:
            self.peer.send_text(text)
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
        self.subscriptions.add(channel)
        self.host.subscribers.setdefault(channel, set()).add(self)
        return {"resource": channel, "state": to_json(state), "fromSeq": self.host.store.last_seq}

    def _unsubscribe(self, channel: str) -> None:
        self.subscriptions.discard(channel)
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
        for channel in list(self.subscriptions):
            bucket = self.host.subscribers.get(channel)
            if bucket is not None:
                bucket.discard(self)
        client_id = self.client_id
        if client_id is None:
            return
        sessions = [s for s in self.subscriptions if s in self.host.sessions]
        grace = self.host.client_grace_s

        def expire() -> None:
            still_here = any(c.client_id == client_id for c in self.host.connections)
            if still_here:
                return
            for session in sessions:
                if session in self.host.sessions:
                    self.host.remove_client(session, client_id, "disconnected")

        try:
            asyncio.get_running_loop().call_later(grace, expire)
        except RuntimeError:
            expire()

    # -- notifications --------------------------------------------------------------------------

    def _notification(self, method: str, params: dict) -> None:
        if method == "dispatchAction":
            if self.client_id is None:
                log.warning("dispatchAction before initialize ignored")
                return
            channel = params.get("channel")
            if not isinstance(channel, str):
                return
            self.host.dispatch_from_client(
                self.client_id, params.get("clientSeq"), channel, params.get("action")
            )
        elif method == "unsubscribe":
            channel = params.get("channel")
            if isinstance(channel, str):
                self._unsubscribe(channel)

    # -- requests -------------------------------------------------------------------------------

    def _request(self, method: str, params: dict) -> Any:
        if method == "ping":
            return None
        handler = getattr(self, "_cmd_" + method, None)
        if handler is None:
            ext_result = self._extension_request(method, params)
            if ext_result is not NotImplemented:
                return ext_result
            raise RpcError(ErrorCode.METHOD_NOT_FOUND, f"method {method} is not supported by this host")
        if method not in ("initialize", "reconnect") and self.client_id is None:
            raise RpcError(ErrorCode.INVALID_REQUEST, f"{method} before initialize")
        return handler(params)

    def _extension_request(self, method: str, params: dict) -> Any:
        for ext in self.host.extensions:
            handle = getattr(ext, "handle_request", None)
            if handle is not None:
                result = handle(self, method, params)
                if result is not NotImplemented:
                    return result
        return NotImplemented

    def _cmd_initialize(self, params: dict) -> dict:
        self.protocol_version = self.host.negotiate(_require(params, "protocolVersions", list))
        self.client_id = _require(params, "clientId")
        self.capabilities = params.get("capabilities") or {}
        snapshots = [self._subscribe(c) for c in params.get("initialSubscriptions") or ()]
        from .host import IMPLEMENTATION

        return {
            "protocolVersion": self.protocol_version,
            "serverSeq": self.host.store.last_seq,
            "serverInfo": IMPLEMENTATION,
            "snapshots": snapshots,
        }

    def _cmd_reconnect(self, params: dict) -> dict:
        self.client_id = _require(params, "clientId")
        last = params.get("lastSeenServerSeq")
        if not isinstance(last, int):
            raise RpcError(ErrorCode.INVALID_PARAMS, "params.lastSeenServerSeq must be a number")
        wanted = [c for c in params.get("subscriptions") or () if isinstance(c, str)]
        live = [c for c in wanted if self.host.store.has_channel(c)]
        missing = [c for c in wanted if not self.host.store.has_channel(c)]
        for session in self.host.sessions:
            if session not in wanted:
                state = self.host.store.state(session) or {}
                if any(c.get("clientId") == self.client_id for c in state.get("activeClients") or ()):
                    self.host.remove_client(session, self.client_id, "reconnected without the session")
        for channel in live:
            self.subscriptions.add(channel)
            self.host.subscribers.setdefault(channel, set()).add(self)
        store = self.host.store
        if store.last_seq - last > REPLAY_LIMIT or last < store.first_seq - 1:
            return {
                "type": "snapshot",
                "snapshots": [
                    {"resource": c, "state": to_json(store.state(c)), "fromSeq": store.last_seq} for c in live
                ],
            }
        chosen = set(live)
        actions = [t.envelope() for t in store.transitions[last + 1 :] if t.channel in chosen]
        return {"type": "replay", "actions": actions, "missing": missing}

    def _cmd_subscribe(self, params: dict) -> dict:
        channel = _require(params, "channel")
        snapshot = self._subscribe(channel)
        view = params.get("view") or {}
        turns = view.get("turns")
        if isinstance(turns, int) and turns >= 0 and self.host.store.kind_of(channel) == "chat":
            state = snapshot["state"]
            all_turns = state.get("turns") or []
            if len(all_turns) > turns:
                kept = all_turns[len(all_turns) - turns :] if turns else []
                cursor = f"before:{kept[0]['id']}" if kept else f"before:{None}"
                snapshot["state"] = {**state, "turns": kept, "turnsNextCursor": cursor}
        return {"snapshot": snapshot}

    def _cmd_createSession(self, params: dict) -> None:
        self.host.create_session(_require(params, "channel"), params, self.client_id)
        return None

    def _cmd_disposeSession(self, params: dict) -> None:
        self.host.dispose_session(_require(params, "channel"))
        return None

    def _cmd_createChat(self, params: dict) -> None:
        self.host.create_chat(_require(params, "channel"), _require(params, "chat"), params)
        return None

    def _cmd_disposeChat(self, params: dict) -> None:
        self.host.dispose_chat(_require(params, "channel"))
        return None

    def _cmd_listSessions(self, params: dict) -> dict:
        items = self.host.list_sessions()
        limit = params.get("limit")
        cursor = params.get("cursor")
        start = 0
        if cursor is not None:
            if not (isinstance(cursor, str) and cursor.startswith("offset:") and cursor[7:].isdigit()):
                raise RpcError(ErrorCode.INVALID_PARAMS, f"unknown cursor {cursor!r}")
            start = int(cursor[7:])
        end = len(items) if not isinstance(limit, int) or limit <= 0 else start + limit
        result: dict[str, Any] = {"items": items[start:end]}
        if end < len(items):
            result["nextCursor"] = f"offset:{end}"
        return result

    def _cmd_fetchTurns(self, params: dict) -> dict:
        chat = _require(params, "channel")
        state = self.host.store.state(chat)
        if state is None or self.host.store.kind_of(chat) != "chat":
            raise RpcError(ErrorCode.NOT_FOUND, f"no chat {chat}")
        cursor = params.get("cursor")
        turns = state.get("turns") or []
        end = len(turns)
        if cursor is not None:
            ids = [t.get("id") for t in turns]
            if not (isinstance(cursor, str) and cursor.startswith("before:") and cursor[7:] in ids):
                raise RpcError(ErrorCode.INVALID_PARAMS, f"unknown cursor {cursor!r}")
            end = ids.index(cursor[7:])
        page = 50
        start = max(0, end - page)
        action: dict[str, Any] = {"type": "chat/turnsLoaded", "turns": turns[start:end]}
        if start > 0:
            action["turnsNextCursor"] = f"before:{turns[start]['id']}"
        self.host.dispatch(chat, action)  # delivered before the response, as the spec requires
        return {}

    def _cmd_completions(self, params: dict) -> dict:
        chat = _require(params, "channel")
        text = _require(params, "text")
        offset = params.get("offset")
        if not isinstance(offset, int) or not 0 <= offset <= len(text):
            raise RpcError(ErrorCode.INVALID_PARAMS, "params.offset must be a position inside params.text")
        session = self.host.chat_session.get(chat)
        if session is None:
            raise RpcError(ErrorCode.NOT_FOUND, f"no chat {chat}")
        start = offset
        while start > 0 and not text[start - 1].isspace():
            start -= 1
        word = text[start:offset]
        items = []
        for ext in self.host.extensions:  # e.g. a LoopAgent's slash commands (/skill:name)
            more = getattr(ext, "completion_items", None)
            if more is not None:
                items.extend(more(session, chat, word, start, offset))
        if not word.startswith("@"):
            return {"items": items}
        for info in self.host.available_tools(session):
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
        return {"items": items}

    def _cmd_authenticate(self, params: dict) -> dict:
        resource = _require(params, "resource")
        token = _require(params, "token")
        for ext in self.host.extensions:
            handle = getattr(ext, "authenticate", None)
            if handle is not None and handle(resource, token, params.get("scopes")):
                self.host.tokens[resource] = token
                return {}
        raise RpcError(
            ErrorCode.INVALID_PARAMS, f"{resource} is not a resource this host asked to authenticate"
        )

    def _cmd_resolveSessionConfig(self, params: dict) -> dict:
        return {"schema": {"type": "object", "properties": {}}, "values": params.get("config") or {}}

    def _cmd_sessionConfigCompletions(self, params: dict) -> dict:
        return {"items": []}
