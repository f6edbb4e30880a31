"""Sessions and chats: creation, disposal, active clients and the session catalogue.

The part of the host (a base class of :class:`~ahp_lab.host.Host`) that follows
session-channel.md §4–§6: ``createSession`` (``lifecycle:"creating"`` → default chat →
``session/ready``), ``createChat`` with forks and side chats, ``disposeChat`` and
``disposeSession`` (allowed for the creator and the notebook only), removing an active client
with its follow-ups (its plugins, its running tool calls), and the ``listSessions`` catalogue with
its ``root/session*`` notifications. Client-supplied working directories must pass
:class:`~ahp_lab.host.roots.WorkingDirectories`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from ..protocol.clock import iso_ms
from ..protocol.jsonrpc import ErrorCode
from ..protocol.jsonvalue import dumps, to_json
from ..protocol.names import new_turn_id
from ..tools import failure_result
from ..transport import RpcError
from . import mirror
from .agent_sessions import working_directory_paths
from .client_content import unseen_bytes
from .connection import MAX_CHANNEL_URI_CHARS, REPLAY_LIMIT, ROOT, Connection, check_name
from .resources import file_uri
from .validation import (
    check_client_action,
    fixed_chat_attachments,
    not_from_user,
    requested_config_problem,
    turn_index,
)

log = logging.getLogger("ahp_lab.host")

__all__ = ["SessionsAndChats", "SessionRuntime"]

#: Session members a catalogue ``SessionSummary`` copies when present.
_SUMMARY_OPTIONAL_KEYS = ("project", "workingDirectories", "annotations")
#: The session-state members a summary is computed from (with its chats').
_SUMMARY_SESSION_KEYS = ("title", "status", "defaultChat", *_SUMMARY_OPTIONAL_KEYS)
_ABSENT = object()  # a member that is not there (a missing title reads as "", a null one as null)


@dataclass
class SessionRuntime:
    """What the host keeps about a session beside its state: provider, chats, catalogue entry, creator."""

    uri: str
    provider: str
    created_at: str
    chats: list
    summary: dict
    creator: str | None = None
    by_stranger: bool = False  # created by a connection other than the notebook's
    summary_inputs: tuple = ()  # what ``summary`` was computed from (see ``_summary_inputs``)
    fork: dict | None = None  # a forked session's first chat: {"turns": [...], "origin": {...}}
    progress: tuple | None = None  # (connection, progressToken) of a createSession that asked for it
    config: dict | None = None  # createSession's config values, set before the session is ready


class SessionsAndChats:
    """Session and chat lifecycle of the host (mixed into :class:`~ahp_lab.host.Host`)."""

    # -- sessions and chats ---------------------------------------------------------------------

    def create_session(self, uri: str, params: dict, conn: Connection | None = None) -> Any:
        """``createSession``: ``params`` already passed the protocol model; ``conn`` is the creator
        (``None`` for trusted code in the kernel).

        Returns an awaitable when the session's agent is opened first (``SessionAgent.open_session``:
        the channel appears once it answered, with its config), else ``None``.
        """
        client_id = conn.client_id if conn is not None else None
        if not uri.startswith("ahp-session:/") or uri.endswith("/annotations"):
            raise RpcError(
                ErrorCode.INVALID_PARAMS, f"a session URI must start with 'ahp-session:/', got {uri!r:.200}"
            )
        check_name(self.redactor, "createSession: the session URI", uri, MAX_CHANNEL_URI_CHARS)
        if uri in self.sessions or self.store.has_channel(uri) or uri in self.agent_sessions.opening:
            raise RpcError(ErrorCode.SESSION_ALREADY_EXISTS, f"session {uri} already exists")
        self._check_client_channels(conn)
        provider = params.get("provider") or next(iter(self.agents))
        if provider not in self.agents:
            raise RpcError(
                ErrorCode.PROVIDER_NOT_FOUND,
                f"no agent provider {provider!r:.100}; known: {', '.join(self.agents)}",
            )
        self._check_client_processes(conn, provider)
        active_client = params.get("activeClient")
        if active_client is not None and client_id is not None and active_client.get("clientId") != client_id:
            raise RpcError(
                ErrorCode.INVALID_PARAMS, "createSession.activeClient must be the creating client's own entry"
            )
        title = params.get("title")  # an ahp_lab extension: the session's first title
        if title is not None and not isinstance(title, str):
            raise RpcError(ErrorCode.INVALID_PARAMS, "createSession: field 'title' must be a string")
        title = self._strangers(conn, title)
        state: dict[str, Any] = {
            "provider": provider,
            "title": title or "New session",
            "status": 1,
            "lifecycle": "creating",
            "activeClients": [],
            "chats": [],
        }
        fork = self._fork_of(params.get("fork"))
        dirs = params.get("workingDirectories")
        if fork is not None:  # a fork works where its source does (session-channel §4)
            if fork["workingDirectories"]:
                state["workingDirectories"] = list(fork["workingDirectories"])
        elif dirs:
            self._check_directories("createSession", dirs, conn)
            caps = {}
            for info in self.store.state(ROOT).get("agents", []):
                if info.get("provider") == provider:
                    caps = info.get("capabilities") or {}
            dirs = list(dict.fromkeys(dirs))  # the same folder twice is one working directory
            state["workingDirectories"] = dirs if "multipleWorkingDirectories" in caps else dirs[:1]
        by_stranger = conn is not None and not conn.trusted
        charge = self._creation_charge(conn, uri, state)
        entry = self._checked_active_client(conn, uri, state, active_client) if by_stranger else None
        # counted now, not once the agent has opened: requests sent together all passed the check
        self.client_content.count(uri, charge)
        self.client_content.count(uri, entry)
        if by_stranger:
            self.stranger_opening.add(uri)
        token = params.get("progressToken")
        progress = (conn, token) if conn is not None and isinstance(token, str) else None
        self._progress(progress, uri, 0, "creating the session")

        def add(
            config: dict | None = None, error: str | None = None, directories: list | None = None
        ) -> None:
            if config is not None:
                state["config"] = config
            wanted = params.get("config")
            if error is None and isinstance(wanted, dict) and wanted:
                error = requested_config_problem((config or {}).get("schema"), wanted)
            if directories and not state.get("workingDirectories"):
                state["workingDirectories"] = [file_uri(d) for d in directories]
            now = iso_ms(self.store.clock_ms())
            runtime = SessionRuntime(
                uri,
                provider,
                now,
                [],
                {},
                creator=client_id,
                by_stranger=by_stranger,
                fork=fork,
                progress=progress,
                config=params.get("config") or None,
            )
            self.stranger_opening.discard(uri)
            self.sessions[uri] = runtime
            self.store.add_channel(uri, "session", state)
            # a creator whose socket closed while the agent opened the session (and that is not
            # back) is no active client of it: nothing would ever remove it (the review, round 57)
            gone = conn is not None and conn.closed and self.connection_of(client_id) is None
            if active_client is not None and not gone:
                self.dispatch(uri, {"type": "session/activeClientSet", "activeClient": active_client})
            self._count_sessions()
            try:
                asyncio.get_running_loop().call_soon(self._init_session, uri, error)
            except RuntimeError:
                self._init_session(uri, error)

        if self.agent_sessions.opens(provider):
            directories = working_directory_paths(state.get("workingDirectories") or [])
            return self.agent_sessions.open(uri, provider, directories, add)
        add()
        return None

    def _init_session(self, uri: str, error: str | None = None) -> None:
        if uri not in self.sessions:
            return
        try:
            if error is not None:
                raise RuntimeError(error)  # the agent could not be opened: the reason, as it said it
            self._publish_server_tools(uri)
            for ext in self.extensions:
                hook = getattr(ext, "on_session_created", None)
                if hook is not None:
                    hook(uri)
            runtime = self.sessions[uri]
            current = ((self.store.state(uri) or {}).get("config") or {}).get("values") or {}
            changes = {k: v for k, v in (runtime.config or {}).items() if current.get(k) != v}
            if changes:  # the values the client chose (resolveSessionConfig), which the agent is told
                self.agent_sessions.chosen_config(uri, changes)
            chat = f"ahp-chat:/{uuid.uuid4()}"
            self.create_chat(uri, chat, {"title": "Chat"}, fork=runtime.fork)
            self.dispatch(uri, {"type": "session/defaultChatChanged", "defaultChat": chat})
            self.dispatch(uri, {"type": "session/ready"})
        except Exception as exc:
            if error is None:
                log.exception("session %s failed to initialise", uri)
            self.dispatch(
                uri,
                {
                    "type": "session/creationFailed",
                    "error": {
                        "errorType": "agentError" if error else type(exc).__name__,
                        "message": str(exc),
                    },
                },
            )
        runtime = self.sessions[uri]
        runtime.summary = self._summary(uri)
        runtime.summary_inputs = ()
        self._notify_root("root/sessionAdded", {"summary": runtime.summary})
        lifecycle = (self.store.state(uri) or {}).get("lifecycle")
        self._progress(
            runtime.progress, uri, 1, "the session is ready" if lifecycle == "ready" else "it failed"
        )
        runtime.progress = None

    def _progress(self, progress: tuple | None, uri: str, done: int, message: str) -> None:
        """``root/progress`` of a session's creation, to the client that asked (``progressToken``):
        0 of 1 when it starts, 1 of 1 when it is ready or failed (root-channel §4)."""
        if progress is None:
            return
        conn, token = progress
        params = {
            "channel": ROOT,
            "progressToken": token,
            "progress": done,
            "total": 1,
            "message": f"{uri}: {message}",
        }
        conn.send_text(
            dumps({"jsonrpc": "2.0", "method": "root/progress", "params": params}, separators=(",", ":"))
        )

    def _fork_of(self, fork: dict | None) -> dict | None:
        """A forked session's first chat: the source session's default chat through ``turnId``'s
        response (session-channel §4), checked before anything is created."""
        if fork is None:
            return None
        source = fork.get("session")
        if source not in self.sessions:
            raise RpcError(ErrorCode.SESSION_NOT_FOUND, f"createSession: no session {source!r:.200} to fork")
        source_state = self.store.state(source) or {}
        chat = source_state.get("defaultChat")
        turns = (self.store.state(chat) or {}).get("turns") or [] if chat else []
        turn_id = fork.get("turnId")
        index = turn_index(turns, turn_id)
        if index is None:
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                f"createSession: turn {turn_id!r:.100} is not a completed turn of {source}'s default chat",
            )
        return {
            "turns": list(turns[: index + 1]),
            "origin": {"kind": "fork", "chat": chat, "turnId": turn_id},
            "workingDirectories": source_state.get("workingDirectories"),
        }

    def _check_directories(self, command: str, dirs: list, conn: Connection | None) -> None:
        trusted = conn is None or conn.trusted
        for index, uri in enumerate(dirs):
            refused = self.roots.refusal(uri, trusted)
            if refused:
                raise RpcError(
                    ErrorCode.INVALID_PARAMS,
                    f"{command}: field 'workingDirectories[{index}]' is refused: {refused}",
                    {"field": f"workingDirectories[{index}]", "rule": refused},
                )

    def _strangers(self, conn: Connection | None, value: Any) -> Any:
        """``value`` (a title, a side chat's selection) redacted when a stranger gave it, as its
        action would be: it enters state by the host's own path, not as one."""
        return value if conn is None or conn.trusted or not value else self.redactor.redact(value)

    def _creation_charge(self, conn: Connection | None, channel: str, state: dict) -> tuple | None:
        """What a stranger's ``createSession``/``createChat`` parameters put into the new channel's
        state (its title, working directories and a side chat's selection), measured for the
        channel's ``created`` slot and refused past ``max_client_content_bytes``; ``None`` for the
        notebook's own."""
        if conn is None or conn.trusted:
            return None
        given = {k: state[k] for k in ("title", "workingDirectories") if k in state}
        selection = (state.get("origin") or {}).get("selection")  # a side chat's: the client's text
        if selection is not None:
            given["selection"] = selection
        measured = (("created",), False, len(dumps(given)) + unseen_bytes(given))
        refused = self.client_content.refusal(channel, measured)
        if refused is not None:
            raise RpcError(ErrorCode.INVALID_PARAMS, refused)
        return measured

    def _checked_active_client(
        self, conn: Connection, uri: str, state: dict, entry: dict | None
    ) -> tuple | None:
        """``createSession.activeClient`` from a stranger, checked and measured as the
        ``session/activeClientSet`` it becomes (it entered by the host's own path, so 40 plugins and
        1.6 MB of tools went in unchecked and uncounted); ``None`` without one."""
        if entry is None:
            return None
        action = {"type": "session/activeClientSet", "activeClient": entry}
        refused = check_client_action(
            action, uri, "session", state, conn.client_id, session=state, limits=self.limits
        )
        measured = self.client_content.measure(action)
        refused = refused or self.client_content.refusal(uri, measured)
        if refused is None:  # as every stranger's action: measured again once masked
            refused = self._over_a_message(self.redactor.action(action, from_client=True), measured)
        if refused is not None:
            raise RpcError(ErrorCode.INVALID_PARAMS, f"createSession: activeClient: {refused}")
        return measured

    def _check_client_channels(self, conn: Connection | None) -> None:
        """Strangers together may keep at most ``limits.max_client_channels`` sessions and chats."""
        if conn is None or conn.trusted:
            return
        held = (
            sum(1 for r in self.sessions.values() if r.by_stranger)
            + len(self.stranger_opening)
            + len(self.stranger_chats)
        )
        limit = self.limits.max_client_channels
        if held >= limit:
            raise RpcError(
                ErrorCode.INVALID_REQUEST,
                f"clients already hold {held} sessions and chats they created (the limit is {limit}); "
                "dispose some first",
            )

    def _check_client_processes(self, conn: Connection | None, provider: str) -> None:
        """Strangers together may keep at most ``limits.max_client_process_sessions`` sessions that
        start processes: their agent runs as one (an ACP agent), or the host starts the person's MCP
        servers for each session (then every session does)."""
        if conn is None or conn.trusted:
            return
        if any(getattr(extension, "starts_processes", False) for extension in self.extensions):
            held = len(self.stranger_opening) + sum(1 for r in self.sessions.values() if r.by_stranger)
        elif getattr(self.agents.get(provider), "starts_processes", False):
            held = len(self.stranger_opening) + sum(
                1
                for r in self.sessions.values()
                if r.by_stranger and getattr(self.agents.get(r.provider), "starts_processes", False)
            )
        else:
            return
        limit = self.limits.max_client_process_sessions
        if held >= limit:
            raise RpcError(
                ErrorCode.INVALID_REQUEST,
                f"clients already hold {held} sessions they created that start processes (an agent's "
                f"or MCP servers; the limit is {limit}, Limits.max_client_process_sessions); "
                "dispose some first",
            )

    def _may_dispose(self, conn: Connection | None, owners: tuple, what: str) -> None:
        """Only the creator (or the notebook, the host's owner, or kernel code) disposes a channel."""
        if conn is None or conn.trusted or conn.client_id in owners:
            return
        who = " or ".join(repr(o) for o in owners if o) or "the notebook"
        raise RpcError(
            ErrorCode.PERMISSION_DENIED,
            f"client {conn.client_id!r} may not dispose {what}: only its creator ({who}) or the notebook may",
        )

    def create_chat(
        self,
        session: str,
        chat: str,
        params: dict,
        conn: Connection | None = None,
        *,
        origin: dict | None = None,
        fork: dict | None = None,
    ) -> None:
        """Create a chat in a session (the ``createChat`` command; ``conn`` is the creator).

        ``origin`` is for trusted host-side code only (never taken from a client's params): a
        subagent's chat is created with ``{"kind": "tool", "chat": ..., "toolCallId": ...}``.
        ``fork`` (host-side too) is a forked session's first chat: its ``turns`` and ``origin``.
        """
        if session not in self.sessions:
            raise RpcError(ErrorCode.SESSION_NOT_FOUND, f"no session {session}")
        self._check_client_channels(conn)
        if self.store.has_channel(chat):
            raise RpcError(ErrorCode.ALREADY_EXISTS, f"chat {chat} already exists")
        if not chat.startswith("ahp-chat:/"):
            raise RpcError(
                ErrorCode.INVALID_PARAMS, f"a chat URI must start with 'ahp-chat:/', got {chat!r:.200}"
            )
        check_name(self.redactor, "createChat: the chat URI", chat, MAX_CHANNEL_URI_CHARS)
        title = params.get("title")  # an ahp_lab extension, like createSession's
        if title is not None and not isinstance(title, str):
            raise RpcError(ErrorCode.INVALID_PARAMS, "createChat: field 'title' must be a string")
        initial = params.get("initialMessage")
        refused = not_from_user("createChat", initial, "initialMessage.") if conn is not None else None
        if refused is None:
            initial, refused = fixed_chat_attachments("createChat: initialMessage", initial, self.chat_state)
        turn_id = new_turn_id()  # of the turn a first message starts, measured in its slot once
        first = None
        if refused is None and initial is not None and conn is not None and not conn.trusted:
            first = self.client_content.measure(
                {"type": "chat/turnStarted", "turnId": turn_id, "message": initial}
            )
            refused = self.client_content.refusal(chat, first)
        if refused is not None:
            raise RpcError(ErrorCode.INVALID_PARAMS, refused)
        runtime = self.sessions[session]
        caps = self.agent_capabilities(session)
        if runtime.chats and "multipleChats" not in caps and origin is None:
            raise RpcError(ErrorCode.INVALID_PARAMS, "this agent supports a single chat per session")
        title = self._strangers(conn, title)
        state: dict[str, Any] = {
            "resource": chat,
            "title": title or "Chat",
            "status": 1,
            "modifiedAt": iso_ms(self.store.clock_ms()),
            "turns": [],
        }
        source = params.get("source")
        if fork is not None:
            state["turns"], state["origin"] = list(fork["turns"]), dict(fork["origin"])
        elif origin is not None:
            state["origin"] = dict(origin)
        elif source is not None:
            state = self._chat_from_source(session, chat, state, source, caps)
            if "selection" in state["origin"]:
                state["origin"]["selection"] = self._strangers(conn, state["origin"]["selection"])
        elif runtime.chats:
            state["origin"] = {"kind": "user"}
        dirs = params.get("workingDirectories")
        if dirs is not None and (source or {}).get("kind") != "fork":
            session_dirs = (self.store.state(session) or {}).get("workingDirectories") or []
            outside = [d for d in dirs if d not in session_dirs]
            if outside:
                raise RpcError(
                    ErrorCode.INVALID_PARAMS, f"{outside[0]} is not one of the session's working directories"
                )
            state["workingDirectories"] = list(dict.fromkeys(dirs))  # a folder twice is one
        created = self._creation_charge(conn, chat, state)
        self.store.add_channel(chat, "chat", state)
        self.client_content.count(chat, created)
        self.chat_session[chat] = session
        self.chat_creators[chat] = conn.client_id if conn is not None else None
        if conn is not None and not conn.trusted:
            self.stranger_chats.add(chat)
        runtime.chats.append(chat)
        origin_of = state.get("origin") or {}
        if origin_of.get("kind") == "fork":  # the copy keeps what the source may let go of
            self.client_content.copied(origin_of.get("chat"), chat, state["turns"])
        self.dispatch(session, {"type": "session/chatAdded", "summary": mirror.chat_summary(state)})
        session_state = self.store.state(session) or {}
        if session_state.get("lifecycle") == "ready" and not session_state.get("defaultChat"):
            # a ready session without one (its last chat was disposed): this one is the default
            self.dispatch(session, {"type": "session/defaultChatChanged", "defaultChat": chat})
        if initial is not None:
            self.begin_turn(chat, initial, turn_id=turn_id)
            self.client_content.count(chat, first)

    def _chat_from_source(self, session: str, chat: str, state: dict, source: dict, caps: dict) -> dict:
        kind = source.get("kind")
        multi = caps.get("multipleChats") or {}
        if kind not in ("fork", "sideChat"):
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                f"createChat: source.kind must be 'fork' or 'sideChat', got {kind!r:.100}",
            )
        if not multi.get(kind):
            raise RpcError(ErrorCode.INVALID_PARAMS, f"this agent does not support {kind!r} chats")
        src = source.get("chat")
        if src == chat:
            raise RpcError(ErrorCode.INVALID_PARAMS, "createChat: the source chat is the chat being created")
        if src not in self.sessions[session].chats:
            raise RpcError(
                ErrorCode.INVALID_PARAMS, f"source chat {src!r:.300} is not a chat of this session"
            )
        src_state = self.store.state(src)
        turns = src_state.get("turns") or []
        index = turn_index(turns, source.get("turnId"))
        active = (src_state.get("activeTurn") or {}).get("id") == source.get("turnId")
        if index is None and not (kind == "sideChat" and active):
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                f"turn {source.get('turnId')!r:.100} is not a completed turn of {src}",
            )
        selection = source.get("selection")
        if selection is not None and not (isinstance(selection, dict) and selection.get("text")):
            raise RpcError(
                ErrorCode.INVALID_PARAMS, "createChat: field 'source.selection.text' must not be empty"
            )
        origin = {k: v for k, v in source.items() if k in ("kind", "chat", "turnId", "selection")}
        state["origin"] = origin
        if kind == "fork":
            state["turns"] = list(turns[: index + 1])
            if src_state.get("workingDirectories") is not None:
                state["workingDirectories"] = src_state["workingDirectories"]
        return state

    def chat_state(self, uri: str) -> dict | None:
        """The state of chat ``uri``, or ``None`` when the host has no such chat."""
        return self.store.state(uri) if self.store.kind_of(uri) == "chat" else None

    def dispose_chat(self, chat: str, conn: Connection | None = None) -> None:
        session = self.chat_session.get(chat)
        if session is None:
            raise RpcError(ErrorCode.NOT_FOUND, f"no chat {chat}")
        self._may_dispose(
            conn, (self.chat_creators.get(chat), self.sessions[session].creator), f"chat {chat}"
        )
        if (
            self.sessions[session].chats == [chat]
            and (self.store.state(session) or {}).get("lifecycle") == "ready"
        ):
            # a ready session has a default chat (session-channel §4); without one, a client has no
            # chat to subscribe to, and one of an agent without multipleChats may not create one
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                f"{chat} is the only chat of {session}, which keeps a default chat while it is ready: "
                "dispose the session instead, or create another chat first",
            )
        for action in mirror.input_needed_actions(chat, {}, self.store.state(session)):
            self.dispatch(session, action)
        was_default = (self.store.state(session) or {}).get("defaultChat") == chat
        self._forget_chat(chat)
        runtime = self.sessions[session]
        runtime.chats.remove(chat)
        self.dispatch(session, {"type": "session/chatRemoved", "chat": chat})
        if was_default and runtime.chats:  # the oldest chat left becomes the default
            self.dispatch(session, {"type": "session/defaultChatChanged", "defaultChat": runtime.chats[0]})

    def _forget_chat(self, chat: str) -> None:
        """Stop the chat's turn and drop the chat with everything the host kept about it."""
        runner = self.turns.pop(chat, None)
        if runner is not None:
            runner.cancel()
        self.streamed.drop(chat)  # what its parts held goes with it
        self._note_disposed(chat)
        self.store.remove_channel(chat)
        self.chat_session.pop(chat, None)
        self.chat_creators.pop(chat, None)
        self.stranger_chats.discard(chat)
        self.subscribers.pop(chat, None)
        self.client_content.forget(chat)
        self.pending_owners.forget(chat)

    def dispose_session(self, uri: str, conn: Connection | None = None) -> None:
        """``disposeSession``: allowed for the session's creator and the notebook (``conn=None``:
        kernel code)."""
        runtime = self.sessions.get(uri)
        if runtime is None:
            raise RpcError(ErrorCode.SESSION_NOT_FOUND, f"no session {uri}")
        self._may_dispose(conn, (runtime.creator,), f"session {uri}")
        for ext in self.extensions:
            hook = getattr(ext, "on_session_disposed", None)
            if hook is not None:
                hook(uri)
        for chat in list(runtime.chats):
            self._forget_chat(chat)
        self._note_disposed(uri)
        self.store.remove_channel(uri)
        self.subscribers.pop(uri, None)
        self.client_content.forget(uri)
        del self.sessions[uri]
        self._count_sessions()
        self._notify_root("root/sessionRemoved", {"session": uri})

    def _note_disposed(self, uri: str) -> None:
        """Remember when ``uri`` was disposed of, while a reconnect that saw less could be replayed
        (:meth:`Connection._replay` answers such a one with snapshots)."""
        marks, store = self.disposed_at, self.store
        marks.pop(uri, None)  # (in order of disposal)
        marks[uri] = store.last_seq
        oldest = max(store.first_seq - 1, store.last_seq - REPLAY_LIMIT)  # before it: snapshots anyway
        while marks and next(iter(marks.values())) < oldest:
            del marks[next(iter(marks))]

    def _count_sessions(self) -> None:
        if self.store.state(ROOT).get("activeSessions") != len(self.sessions):
            self.dispatch(ROOT, {"type": "root/activeSessionsChanged", "activeSessions": len(self.sessions)})

    # -- active clients -------------------------------------------------------------------------

    def is_active_client(self, session: str, client_id: str) -> bool:
        """Whether ``client_id`` is in the session's ``activeClients``."""
        state = self.store.state(session) or {}
        return any(c.get("clientId") == client_id for c in state.get("activeClients") or ())

    def remove_client(self, session: str, client_id: str, why: str = "left the session") -> None:
        """Remove an active client the way the spec says (§5.2): entry, plugins, in-flight calls."""
        if self.store.state(session) is None:
            return
        if self.is_active_client(session, client_id):
            self.dispatch(session, {"type": "session/activeClientRemoved", "clientId": client_id})
        self._client_left(session, client_id, why)

    def _client_left(self, session: str, client_id: str | None, why: str) -> None:
        state = self.store.state(session)
        if state is None or client_id is None:
            return
        for entry in list(state.get("customizations") or ()):
            if entry.get("clientId") == client_id:
                self.dispatch(session, {"type": "session/customizationRemoved", "id": entry.get("id")})
        for chat in list(self.sessions[session].chats):
            chat_state = self.store.state(chat) or {}
            active = chat_state.get("activeTurn") or {}
            for part in active.get("responseParts") or ():
                tc = part.get("toolCall") if part.get("kind") == "toolCall" else None
                if not tc:
                    continue
                contributor = tc.get("contributor") or {}
                if (
                    contributor.get("kind") == "client"
                    and contributor.get("clientId") == client_id
                    and tc.get("status") in ("running", "pending-confirmation")
                ):
                    message = f"Client {client_id} {why} before the tool call finished"
                    self.dispatch(
                        chat,
                        {
                            "type": "chat/toolCallComplete",
                            "turnId": active.get("id"),
                            "toolCallId": tc.get("toolCallId"),
                            "result": failure_result(
                                tc.get("displayName") or tc.get("toolName"), message, "clientRemoved"
                            ),
                        },
                    )
        for ext in self.extensions:
            hook = getattr(ext, "on_client_left", None)
            if hook is not None:
                hook(session, client_id)

    # -- catalogue ------------------------------------------------------------------------------

    def _chat_states(self, runtime: SessionRuntime) -> dict[str, dict]:
        return {c: self.store.state(c) for c in runtime.chats if self.store.has_channel(c)}

    def snapshot_state(self, channel: str) -> Any:
        """A channel's state as a snapshot carries it (plain JSON).

        A session's status activity bits are those of its catalogue entry, from its chats
        (session-channel §6): no session action can set them (reducer-rules §6.1), so the state a
        session's actions reduce to keeps whatever the last input request left (``24`` becomes
        ``8``, never ``1``), and the host makes them meaningful in snapshots, with the activity of
        the chat that supplied them when it has one. Its flags are its own.
        """
        state = to_json(self.store.state(channel))
        runtime = self.sessions.get(channel)
        if runtime is None or type(state) is not dict:
            return state
        status, activity = mirror.aggregate_status(state, self._chat_states(runtime))
        shown = {"status": status} if activity is None else {"status": status, "activity": activity}
        return state if all(state.get(k) == v for k, v in shown.items()) else {**state, **shown}

    def _summary(self, uri: str) -> dict:
        runtime = self.sessions[uri]
        state = self.store.state(uri) or {}
        chats = self._chat_states(runtime)
        status, activity = mirror.aggregate_status(state, chats)
        modified = max([c.get("modifiedAt") or "" for c in chats.values()] + [runtime.created_at])
        summary: dict[str, Any] = {
            "resource": uri,
            "provider": runtime.provider,
            "title": state.get("title", ""),
            "status": status,
            "createdAt": runtime.created_at,
            "modifiedAt": modified,
        }
        if activity is not None:
            summary["activity"] = activity
        for key in _SUMMARY_OPTIONAL_KEYS:
            if state.get(key) is not None:
                summary[key] = state[key]
        return summary

    def _summary_inputs(self, runtime: SessionRuntime) -> tuple:
        """Every value :meth:`_summary` reads from the session and its chats, flat and cheap to compare."""
        state = self.store.state(runtime.uri) or {}
        inputs = [state.get(key, _ABSENT) for key in _SUMMARY_SESSION_KEYS]
        for uri in runtime.chats:
            if self.store.has_channel(uri):
                chat = self.store.state(uri)
                inputs += (uri, chat.get("status"), chat.get("activity"), chat.get("modifiedAt"))
        return tuple(inputs)

    def _refresh_summary(self, uri: str) -> None:
        runtime = self.sessions.get(uri)
        if runtime is None or not runtime.summary:
            return
        # Most session actions (chat mirroring, input requests) leave the catalogue entry as it was:
        # when its inputs are equal, so is the summary, and there is nothing to compute or announce.
        inputs = self._summary_inputs(runtime)
        if inputs == runtime.summary_inputs:
            return
        runtime.summary_inputs = inputs
        new = self._summary(uri)
        changes = {k: v for k, v in new.items() if runtime.summary.get(k) != v}
        changes.update({k: None for k in runtime.summary if k not in new})
        if changes:
            runtime.summary = new
            changes.pop("resource", None)
            self._notify_root("root/sessionSummaryChanged", {"session": uri, "changes": changes})

    def list_sessions(self) -> list[dict]:
        items = [self._summary(uri) for uri in self.sessions]
        items.sort(key=lambda s: s["resource"])
        items.sort(key=lambda s: s["modifiedAt"], reverse=True)  # newest first, then by URI
        return items

    def _notify_root(self, method: str, params: dict) -> None:
        text = dumps(
            {"jsonrpc": "2.0", "method": method, "params": {"channel": ROOT, **params}}, separators=(",", ":")
        )
        for conn in tuple(self.subscribers.get(ROOT, ())):
            conn.send_text(text)
