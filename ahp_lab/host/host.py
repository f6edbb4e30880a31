"""The in-kernel AHP host: the only authority over state.

The host owns a :class:`~ahp_lab.store.Store`, accepts connections (JSON-RPC 2.0 over any
transport; an in-process pair by default), validates what clients dispatch, sequences every
action through the store, broadcasts envelopes to subscribers, drives turns through an agent, and
does the bookkeeping the reducers leave to it: mirroring chats into their session, failing a
departed client's tool calls, consuming queued messages, keeping the session catalogue current.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import Any

from ..agents.base import Agent, ToolInfo
from ..protocol import PROTOCOL_VERSION, SUPPORTED_VERSIONS
from ..protocol.clock import iso_ms
from ..protocol.jsonrpc import ErrorCode
from ..protocol.jsonvalue import dumps, to_json, utf8_bytes
from ..protocol.limits import Limits, clipped, truncated
from ..protocol.names import new_turn_id
from ..reducers.chat import touched_tool_call
from ..store import HOST, Store, Transition, wall_clock_ms
from ..tools import CONFIRM_META, ResolvedTool, Tool, failure_result
from ..transport import RpcError, pipe
from ..transport.jsonrpc import RequestBudget
from ..waiting import StateWaiters
from . import mirror
from .agent_sessions import AgentSessions
from .client_content import ClientContent
from .connection import MAX_CLIENT_ID_CHARS, ROOT, Connection, introduced, name_problem, older_envelope
from .pending import PendingOwners
from .redaction import Redactor
from .roots import WorkingDirectories
from .sessions import SessionRuntime, SessionsAndChats
from .streamed import STREAMED_FIELDS, StreamedText
from .turns import TurnRunner
from .validation import (
    check_client_action,
    fixed_chat_attachments,
    named_ids,
    normalize_client_action,
    turn_index,
)

log = logging.getLogger("ahp_lab.host")

__all__ = ["Host", "ResolvedTool", "ROOT"]


#: The client actions that carry a Message, and its field: its chat attachments are checked.
_CLIENT_MESSAGES = {
    "chat/turnStarted": "message",
    "chat/pendingMessageSet": "message",
    "chat/toolCallConfirmed": "userSuggestion",
}

# Chat actions after which the session's inputNeeded list may need to follow the chat.
_BLOCKING_ACTIONS = frozenset(
    {
        "chat/turnStarted",
        "chat/responsePart",
        "chat/turnComplete",
        "chat/turnCancelled",
        "chat/error",
        "chat/truncated",
        "chat/inputRequested",
        "chat/inputCompleted",
        "chat/toolCallStart",
        "chat/toolCallReady",
        "chat/toolCallConfirmed",
        "chat/toolCallComplete",
        "chat/toolCallResultConfirmed",
        "chat/toolCallAuthRequired",
        "chat/toolCallAuthResolved",
        "chat/inputAnswerChanged",
    }
)
#: Actions that stream text into a part or a terminal, a chunk at a time (redacted across chunks:
#: StreamedText).
_STREAMED = frozenset(STREAMED_FIELDS)
# Chat actions that never touch a summary field (title, status, activity, modifiedAt, ...).
_NO_SUMMARY_CHANGE = frozenset(
    {
        "chat/delta",
        "chat/reasoning",
        "chat/responsePart",
        "chat/usage",
        "chat/toolCallStart",
        "chat/toolCallDelta",
        "chat/toolCallContentChanged",
        "chat/pendingMessageSet",
        "chat/pendingMessageRemoved",
        "chat/queuedMessagesReordered",
        "chat/draftChanged",
        "chat/turnsLoaded",
    }
)


def _logged_form(raw: Any, limits: Limits, cut: Callable[[str], str] | None = None) -> dict:
    """The short, encodable form in which a rejected action is kept (an object with a ``type``)."""
    short = truncated(raw, limits.max_logged_action_chars, cut)
    if isinstance(short, dict) and isinstance(short.get("type"), str) and len(short["type"]) <= 100:
        return short
    return {"type": "(invalid action)", "value": short}


#: Room kept for an action's envelope in a message (its channel, origin and serverSeq).
ENVELOPE_BYTES = 4096


class Host(SessionsAndChats):
    """An AHP host with a store, one agent per provider and any number of client connections."""

    def __init__(
        self,
        agent: Agent | None = None,
        *,
        clock_ms: Callable[[], int] = wall_clock_ms,
        chunk_size: int = 24,
        pace_s: float = 0.0,
        client_tool_timeout: float = 300.0,
        confirm_tools: str = "auto",
        client_grace_s: float = 2.0,
        limits: Limits | dict | None = None,
        roots: list | tuple | None = None,
    ) -> None:
        if agent is None:
            from ..agents.scripted import ScriptedAgent

            agent = ScriptedAgent()
        if confirm_tools not in ("auto", "always", "never"):
            raise ValueError("confirm_tools must be 'auto', 'always' or 'never'")
        self.agents: dict[str, Agent] = {}
        self.chunk_size = chunk_size
        self.pace_s = pace_s
        self.client_tool_timeout = client_tool_timeout
        self.confirm_tools = confirm_tools
        self.client_grace_s = client_grace_s
        #: every bound this host enforces (``ahp_lab.protocol.limits``)
        self.limits = Limits.of(limits)
        self.store = Store(clock_ms, max_log_bytes=self.limits.max_log_bytes)
        #: characters of action envelopes sent to subscribers so far (a connection's request is
        #: charged what it made the host broadcast)
        self.broadcast_chars = 0
        #: folders under which clients may name working directories (``Lab(roots=[...])``)
        self.roots = WorkingDirectories(roots)
        #: masks secrets (MCP env/header values, delivered tokens, URL credentials) in what the
        #: host publishes
        self.redactor = Redactor()
        self.streamed = StreamedText(self.redactor)  # streamed text redacted across its chunks
        self.server_tools: dict[str, Tool] = {}
        self.sessions: dict[str, SessionRuntime] = {}
        self.chat_session: dict[str, str] = {}
        self.chat_creators: dict[str, str | None] = {}
        self.stranger_chats: set[str] = set()  # chats created by connections other than the notebook's
        self.stranger_opening: set[str] = set()  # sessions strangers asked for, their agents still opening
        self.turns: dict[str, TurnRunner] = {}
        self.closing = False  # set by stop_turns: no turn starts any more
        self.turn_clients: dict[tuple[str, str], str] = {}
        self._waiters = StateWaiters()
        self.connections: set[Connection] = set()
        #: the one budget of all connections but the notebook's together (each has its own too):
        #: half the loop, and half of one connection's bytes per second (sockets of one token
        #: holder each had a budget of their own, and 80 of them held the loop 8-12 s at a time)
        self.strangers_budget = RequestBudget(self.limits.max_request_bytes_per_s / 2)
        #: client id → the live connection that holds it (identity is bound to the connection)
        self.clients: dict[str, Connection] = {}
        #: client id → its connection that closed last, while that close's grace period runs: a
        #: client that came back and dropped again is judged by its last drop, not an earlier one
        self.departures: dict[str, Connection] = {}
        #: channel URI → the last seq before the host disposed of the channel under that URI,
        #: oldest first (a reconnect that saw less holds a channel the URI no longer names), for
        #: as long as a reconnect could be answered with a replay
        self.disposed_at: dict[str, int] = {}
        self.subscribers: dict[str, set] = {}
        #: what untrusted clients have put into state, bounded by ``limits.max_client_content_bytes``
        self.client_content = ClientContent(self.limits.max_client_content_bytes)
        #: who set each chat's pending messages: a stranger replaces or removes only its own
        self.pending_owners = PendingOwners(self.limits.max_queued_messages)
        #: client id -> the protocol version it negotiated (a reconnect keeps it)
        self.versions: dict[str, str] = {}
        #: seqs of the history pages sent to some connections only: a reconnect's replay skips them
        self.paged_seqs: set[int] = set()
        self._paged_order: deque[int] = deque()  # the same seqs, oldest first: dropped with the log
        self._recipients: set | None = None  # while paging history in: the connections sent it
        self._echo_to: Connection | None = None  # a client acting on a channel it did not subscribe to
        # objects with optional on_session_created / on_transition / run_tool hooks; the first one
        # serves the optional per-session agent hooks (open, config, restart, files, terminals)
        self.agent_sessions = AgentSessions(self)
        self.extensions: list = [self.agent_sessions]
        self.store.add_channel(ROOT, "root", {"agents": [], "activeSessions": 0})
        self.store.subscribe(self._broadcast)
        self.add_agent(agent)

    # -- agents and tools ---------------------------------------------------------------------

    def add_agent(self, agent: Agent) -> None:
        if not (callable(getattr(agent, "info", None)) and callable(getattr(agent, "run_turn", None))):
            raise TypeError(
                f"agent must be an agent object, such as ScriptedAgent(), LoopAgent(model) or "
                f"AcpAgent([...]): {type(agent).__name__} {agent!r:.60} has no info() and run_turn()"
            )
        attach = getattr(agent, "attach", None)
        if attach is not None:
            attach(self)  # an agent that serves sessions through host extensions (LoopAgent) joins here
        info = dict(agent.info())
        self.agents[info["provider"]] = agent
        root = self.store.state(ROOT)
        agents = [a for a in root.get("agents", []) if a.get("provider") != info["provider"]] + [info]
        self.dispatch(ROOT, {"type": "root/agentsChanged", "agents": agents})

    def agent_for(self, session: str) -> Agent:
        return self.agents[self.sessions[session].provider]

    def agent_capabilities(self, session: str) -> dict:
        provider = self.sessions[session].provider
        for info in self.store.state(ROOT).get("agents", []):
            if info.get("provider") == provider:
                return info.get("capabilities") or {}
        return {}

    def add_server_tool(self, tool: Tool) -> Tool:
        """Register a tool the host executes itself and publish it in every session's ``serverTools``."""
        self.server_tools[tool.name] = tool
        for uri in self.sessions:
            self._publish_server_tools(uri)
        return tool

    def remove_server_tool(self, name: str) -> None:
        if self.server_tools.pop(name, None) is not None:
            for uri in self.sessions:
                self._publish_server_tools(uri)

    def _publish_server_tools(self, session: str) -> None:
        tools = [t.definition() for t in self.server_tools.values()]
        for ext in self.extensions:
            tools.extend(getattr(ext, "server_tool_definitions", lambda s: [])(session))
        current = (self.store.state(session) or {}).get("serverTools") or []
        if to_json(current) != tools:
            self.dispatch(session, {"type": "session/serverToolsChanged", "tools": tools})

    def available_tools(self, session: str) -> list[ToolInfo]:
        """Every tool an agent may call in ``session``: server tools, then each active client's."""
        state = self.store.state(session) or {}
        out: list[ToolInfo] = []
        for d in state.get("serverTools") or ():
            owner = "server"
            for ext in self.extensions:
                found = getattr(ext, "tool_owner", lambda s, n: None)(session, d.get("name"))
                if found:
                    owner = found
            out.append(self._info(d, owner))
        for client in state.get("activeClients") or ():
            for d in client.get("tools") or ():
                out.append(self._info(d, f"client:{client.get('clientId')}"))
        return out

    @staticmethod
    def _info(d: dict, owner: str) -> ToolInfo:
        return ToolInfo(
            d.get("name", ""),
            d.get("description", ""),
            d.get("title"),
            d.get("inputSchema") or {},
            owner,
            d.get("annotations") or {},
        )

    def resolve_tool(
        self, session: str, name: str, preferred_client: str | None = None
    ) -> ResolvedTool | None:
        """Find the tool an agent named: server tools first, then the turn's client, then other clients."""
        state = self.store.state(session) or {}
        for ext in self.extensions:
            found = getattr(ext, "resolve_tool", lambda s, n: None)(session, name)
            if found is not None:
                return found
        tool = self.server_tools.get(name)
        if tool is not None:
            return ResolvedTool("server", name, tool.title, tool.definition(), tool=tool)
        clients = list(state.get("activeClients") or ())
        clients.sort(key=lambda c: c.get("clientId") != preferred_client)
        for client in clients:
            for d in client.get("tools") or ():
                if d.get("name") == name:
                    cid = client.get("clientId")
                    title = d.get("title") or (d.get("annotations") or {}).get("title") or name
                    return ResolvedTool(
                        "client", name, title, d, owner=cid, contributor={"kind": "client", "clientId": cid}
                    )
        return None

    def needs_confirmation(self, resolved: ResolvedTool, confirm: bool | None) -> bool:
        """Whether a call waits for a confirmation. The agent (``confirm``) may ask for one the
        tool does not ask for, never drop one it asks for (``confirm=True``, or else a
        ``destructiveHint``): what the agent chooses follows its mode, which any client may change
        (a stranger set the ``code`` mode, and the notebook's ``confirm=True`` tool, and then its
        destructive one, ran the stranger's input unasked). ``confirm=False`` on the tool is the
        person's word that it needs none."""
        if confirm is True or self.confirm_tools == "always":
            return True
        if self.confirm_tools == "never":
            return False
        declared = (resolved.definition.get("_meta") or {}).get(CONFIRM_META)
        if isinstance(declared, bool):
            return declared
        annotations = resolved.definition.get("annotations") or {}
        return bool(annotations.get("destructiveHint"))

    async def run_external_tool(
        self,
        runner: TurnRunner,
        resolved: ResolvedTool,
        call_id: str,
        tc: dict,
        requires_result_confirmation: bool,
    ) -> None:
        for ext in self.extensions:
            run = getattr(ext, "run_tool", None)
            if run is not None and await run(runner, resolved, call_id, tc, requires_result_confirmation):
                return
        self.dispatch(
            runner.chat,
            {
                "type": "chat/toolCallComplete",
                "turnId": runner.turn_id,
                "toolCallId": call_id,
                "result": failure_result(resolved.title, f"no runner for {resolved.kind} tools"),
            },
        )

    async def pace(self) -> None:
        """Yield to the event loop between streamed chunks (optionally slowed down for demos)."""
        await asyncio.sleep(self.pace_s)

    # -- applying actions -----------------------------------------------------------------------

    def dispatch(self, channel: str, action: dict, origin: dict = HOST) -> Transition:
        """Apply a host-, agent- or MCP-originated action and do the follow-ups.

        This is where text the host did not write enters state, so the action is redacted here
        (:class:`~ahp_lab.host.redaction.Redactor`), once, before the store sees it. The redacted
        copy is the store's own: a cell that dispatches a dict and then changes it, or reuses its
        lists for the next action, must not change the state or the log behind their back (state
        is never mutated: the reducers' indexes rely on it).
        """
        if action.get("type") in _STREAMED:
            redacted = self.streamed.delta(channel, action, origin)
            if self.streamed.flushed:  # an earlier part gets back what it held, first
                for held, by in self.streamed.take_flushed():
                    self._apply(channel, held, by)
            return self._apply(channel, redacted, origin)
        return self._apply(channel, self.redactor.action(action), origin)

    def end_streams(self, channel: str) -> None:
        """End ``channel``'s streamed text with nothing more to come (a terminal dropped, or its
        output cut at the channel's cap): what the streams held back goes in as their end, a known
        secret's start masked, as when a turn or a command ends."""
        for held, by in self.streamed.drop(channel):
            self._apply(channel, held, by)

    def _apply(self, channel: str, action: dict, origin: dict) -> Transition:
        """Reduce an accepted action into the store and do the follow-ups (both dispatch paths).

        A truncation first pages in the history it keeps for clients whose window lacks it.
        """
        if channel in self.streamed.chats:
            for held, by in self.streamed.ending(channel, action):  # what the turn's parts held goes first
                self._apply(channel, held, by)
        if action.get("type") == "chat/truncated" and self.store.kind_of(channel) == "chat":
            self._page_in_before_truncation(channel, action)
        counted = self.client_content
        emptied = None
        if channel in counted.held:
            emptied = counted.before_apply(channel, self.store.state(channel), action, origin)
        transition = self.store.apply(channel, action, origin)
        if emptied is not None and transition.accepted:
            counted.give_back(channel, emptied)
            if action.get("type") == "chat/turnStarted" and "queuedMessageId" in action:
                counted.moved(channel, action["queuedMessageId"], action.get("turnId"))
        self._after(transition)
        return transition

    def page_in(self, chat: str, end: int, recipients: set) -> None:
        """Load the chat's first ``end`` turns into the states of ``recipients`` (connections whose
        window lacks them) with ``chat/turnsLoaded``, which drops the turns a client already holds.

        Only they are sent it: the host's state and every full subscriber's hold those turns, and
        a stranger's small request must not make the host send the history to everyone. Pages stay
        within ``max_message_bytes``, newest first (each is put before the turns already held). The
        windows they complete are forgotten.
        """
        turns = (self.store.state(chat) or {}).get("turns") or []
        budget = max(1, self.limits.max_message_bytes // 2)
        pages: list[list] = []
        page: list = []
        size = 0
        for turn in turns[:end]:
            cost = len(dumps(turn))
            if page and size + cost > budget:
                pages.append(page)
                page, size = [], 0
            page.append(turn)
            size += cost
        pages.append(page)
        self._recipients = recipients
        try:
            for chunk in reversed(pages):
                transition = self.dispatch(chat, {"type": "chat/turnsLoaded", "turns": chunk})
                self.paged_seqs.add(transition.seq)
                self._paged_order.append(transition.seq)
        finally:
            self._recipients = None
        # those the log dropped (min() over the set, each fetch, grew with every fetch ever made)
        order, first = self._paged_order, self.store.first_seq
        while order and order[0] < first:
            self.paged_seqs.discard(order.popleft())
        for conn in recipients:
            if chat in conn.windows and (turn_index(turns, conn.windows[chat]) or 0) < end:
                del conn.windows[chat]

    def _page_in_before_truncation(self, chat: str, action: dict) -> None:
        """A truncation to a turn that some client's windowed snapshot left out would be a no-op in
        that client's state while it drops turns from everyone else's: those clients are sent the
        turns the truncation keeps first (chat-channel §9, ``fetchTurns``)."""
        if "turnId" not in action:
            return  # truncating everything needs no history
        turns = (self.store.state(chat) or {}).get("turns") or []
        named = turn_index(turns, action["turnId"])
        if named is None:
            return  # no such turn: a no-op in every state
        lacking = set()
        for conn in self.subscribers.get(chat) or ():
            newest_missing = turn_index(turns, conn.windows[chat]) if chat in conn.windows else None
            if newest_missing is not None and newest_missing >= named:
                lacking.add(conn)
        if lacking:
            self.page_in(chat, named + 1, lacking)

    def dispatch_from_client(
        self, conn: Connection, client_seq: int, channel: str, raw: Any
    ) -> Transition | None:
        """Validate and apply a client's ``dispatchAction``; rejections are recorded and echoed.

        The client id is the one bound to ``conn``; the rejected form kept in the log (and echoed)
        is cut to about ``limits.max_logged_action_chars`` characters, and so is the reason, which
        may quote a value of the action.
        """
        kind = self.store.kind_of(channel)
        if kind is None:
            return None  # unknown channel: dropped silently (overview §6.1)
        # A client may act on a channel it has not subscribed to (an answer on a chat from the
        # session's inputNeeded, session-channel §1): it is sent its own echo all the same.
        subscribed = conn in (self.subscribers.get(channel) or ())
        self._echo_to = None if subscribed else conn
        try:
            return self._dispatch_from_client(conn, client_seq, channel, kind, raw)
        finally:
            self._echo_to = None

    def _dispatch_from_client(
        self, conn: Connection, client_seq: int, channel: str, kind: str, raw: Any
    ) -> Transition | None:
        client_id = conn.client_id
        origin = {"kind": "client", "clientId": client_id, "clientSeq": client_seq}
        action, reason = normalize_client_action(raw, self.limits)
        if action is not None:
            session_uri = self.chat_session.get(channel) if kind == "chat" else channel
            session_state = self.store.state(session_uri) if session_uri else None
            caps = self.agent_capabilities(session_uri) if session_uri in self.sessions else {}
            reason = check_client_action(
                action,
                channel,
                kind,
                self.store.state(channel),
                client_id,
                session=session_state,
                agent_capabilities=caps,
                trusted=conn.trusted,
                limits=self.limits,
                working_directories=self.roots.checker(conn.trusted),
                is_trusted=self.is_trusted,
            )
        if reason is None and self.closing and action["type"] == "chat/turnStarted":
            reason = "chat/turnStarted: the host is closing, so no new turn starts"
        if reason is None and action["type"] == "chat/toolCallConfirmed" and session_uri in self.sessions:
            refusal = getattr(self.agent_for(session_uri), "confirmation_refusal", None)
            if refusal is not None:  # the agent asks through options of its own (an ACP agent)
                reason = refusal(session_uri, action, conn.trusted)
        field = _CLIENT_MESSAGES.get(action["type"]) if reason is None else None
        if field is not None:
            message, reason = fixed_chat_attachments(action["type"], action.get(field), self.chat_state)
            if reason is None and message is not action.get(field):
                action = {**action, field: message}
        measured = None
        if reason is None and not conn.trusted:
            reason = self.pending_owners.refusal(channel, self.store.state(channel), action, client_id)
        if reason is None and not conn.trusted:
            measured = self.client_content.measure(action)
            reason = self.client_content.refusal(channel, measured)
        if reason is not None:  # it may quote what an agent or a client wrote: masked, then cut
            reason = clipped(self.redactor.text(reason), self.limits.max_logged_action_chars)
            if conn.trusted:
                logged = _logged_form(raw, self.limits)
            else:
                # Cut to eight times the logged size (strings to 2,000 characters, member names to
                # 500), masked whole there (a name and its value together, a URL's user:password
                # before its @), then cut to size, each cut string's kept start masked as an end:
                # masking the whole action first held the loop 4 s for each rejected 13 MB one,
                # which costs its sender nothing.
                wide = truncated(raw, 8 * self.limits.max_logged_action_chars, self.redactor.cut_eagerly)
                if type(wide) is dict:
                    wide = self.redactor.action(wide, from_client=True, rejected=True)
                else:
                    wide = self.redactor.redact(wide)
                logged = _logged_form(wide, self.limits, self.redactor.cut_eagerly)
            transition = self.store.reject(channel, logged, origin, reason)
            if action is not None:
                self._after_rejection(channel, action, client_id, reason)
            return transition
        if not conn.trusted:
            # Another client's text is text the host did not write either: a key an editor's user
            # pasted reaches neither state, the log, the export nor the other clients (listSessions
            # gives every connection the session's title). The notebook's own text is the person's.
            reason = self._named_ids_problem(action)
            action = self.redactor.action(action, from_client=True)
            reason = reason or self._over_a_message(action, measured)
            if reason is not None:
                transition = self.store.reject(channel, _logged_form(action, self.limits), origin, reason)
                self._after_rejection(channel, action, client_id, reason)
                return transition
        if action["type"] == "chat/turnCancelled" and session_uri in self.sessions:
            ending = getattr(self.agent_for(session_uri), "turn_cancelling", None)
            if ending is not None:  # the agent's open calls that changed files end first, with it said
                ending(session_uri, action.get("turnId"))
        transition = self._apply(channel, action, origin)
        if transition.accepted:
            self.client_content.count(channel, measured)
            self.pending_owners.record(channel, transition.after, action, client_id)
        self._client_side_effects(transition, client_id)
        return transition

    def _named_ids_problem(self, action: dict) -> str | None:
        """Why ids a stranger names for something it brings (a turn, a pending message, a tool, a
        plugin) are refused, else ``None``: each is a name as a client id is (:func:`name_problem`).
        A turn named by a key was kept as ``***``, two tools so named were one name, and escape
        sequences went into every client's workbench."""
        for label, value in named_ids(action):
            if type(value) is str:  # (the protocol's own checks say what else it must be)
                problem = name_problem(
                    self.redactor, f"{action['type']}: {label}", value, MAX_CLIENT_ID_CHARS
                )
                if problem is not None:
                    return problem
        return None

    def _over_a_message(self, action: dict, measured: Any) -> str | None:
        """Why a stranger's action, as the host would send it, is over one message (``None``: it is
        not). A message within the limit as it came may not be as it goes out: masking grows text
        (``&sid=1`` is ``&sid=***``), and the inbound check counted characters, not bytes (5
        million emoji were 20 MB). Every ahp_lab client, and most others, closes on a message over
        its limit, and a resume would send it again: one action cut every subscriber off for good."""
        room = self.limits.max_message_bytes - ENVELOPE_BYTES
        # masking grows text at most 4/3, and a character is 4 bytes at most; a removal, which puts
        # nothing into state, was not measured for the budget: it is measured here
        if measured is not None and measured[2] * 6 <= room:
            return None
        sent = utf8_bytes(dumps(action))
        if sent <= room:
            return None
        return (
            f"{action['type']}: the action is {sent:,} bytes of UTF-8 once masked, over the limit of one "
            f"message ({self.limits.max_message_bytes:,} bytes, max_message_bytes, with its envelope)"
        )

    def _after_rejection(self, chat: str, action: dict, client_id: str, reason: str) -> None:
        """A tool call whose owner sent a result over the size limit fails instead of hanging."""
        if action["type"] != "chat/toolCallComplete" or "over the limit" not in reason:
            return
        from .validation import find_tool_call

        tc = find_tool_call(self.store.state(chat) or {}, action.get("turnId"), action.get("toolCallId"))
        contributor = (tc or {}).get("contributor") or {}
        if tc and contributor.get("clientId") == client_id and tc.get("status") == "running":
            title = tc.get("displayName") or tc.get("toolName") or "the tool"
            self.dispatch(
                chat,
                {
                    "type": "chat/toolCallComplete",
                    "turnId": action.get("turnId"),
                    "toolCallId": action.get("toolCallId"),
                    "result": failure_result(
                        title, f"Client {client_id}'s result was refused: {reason}", "tooLarge"
                    ),
                },
            )

    def _broadcast(self, transition: Transition) -> None:
        subscribers = self.subscribers.get(transition.channel)
        if self._recipients is not None and subscribers:  # a page of history for some clients only
            subscribers = subscribers & self._recipients
        sender = self._echo_to
        if sender is not None and transition.origin.get("clientId") == sender.client_id:
            self._echo_to = None  # the echo of its action, in sequence with everything else
            subscribers = {*(subscribers or ()), sender}
        if not subscribers:
            return
        text = dumps(
            {"jsonrpc": "2.0", "method": "action", "params": transition.envelope()}, separators=(",", ":")
        )
        since = introduced(transition.type)  # most types: None, every subscriber is sent it
        self.broadcast_chars += len(text) * len(subscribers)
        history = self._recipients is not None
        older_text = None  # the older form, for clients of a version before the type: built once
        for conn in tuple(subscribers):
            if since is None or conn.receives(transition, since):
                conn.send_text(text, history=history)
                continue
            if older_text is None:
                older = older_envelope(transition)
                if older is None:
                    continue
                older_text = dumps(
                    {"jsonrpc": "2.0", "method": "action", "params": older}, separators=(",", ":")
                )
            conn.send_text(older_text, history=history)

    def _after(self, transition: Transition) -> None:
        """Host follow-ups of an accepted transition (mirroring, waiters, extensions)."""
        if not transition.accepted:
            return
        kind = transition.channel_kind
        if kind == "chat":
            self._after_chat(transition)
        elif kind == "session":
            self._refresh_summary(transition.channel)
        if self._waiters.has(transition.channel):
            self._waiters.notify(transition.channel, transition.after)
        for ext in self.extensions:
            hook = getattr(ext, "on_transition", None)
            if hook is not None:
                hook(transition)

    def _after_chat(self, transition: Transition) -> None:
        chat_uri = transition.channel
        session_uri = self.chat_session.get(chat_uri)
        chat = transition.after
        action_type = transition.type
        if session_uri is not None and self.store.has_channel(session_uri):
            session = self.store.state(session_uri)
            entry = next((c for c in session.get("chats") or () if c.get("resource") == chat_uri), None)
            if entry is not None and action_type not in _NO_SUMMARY_CHANGE:
                changes = mirror.summary_changes(entry, chat)
                if changes:
                    self.dispatch(
                        session_uri, {"type": "session/chatUpdated", "chat": chat_uri, "changes": changes}
                    )
            if action_type in _BLOCKING_ACTIONS and not mirror.asks_nobody(transition.action):
                # a tool-call action changes that call alone: only its entry is brought in line
                session_state = self.store.state(session_uri)
                for action in mirror.input_needed_actions(
                    chat_uri, chat, session_state, touched_tool_call(transition.action)
                ):
                    self.dispatch(session_uri, action)

    # -- waiting on state -----------------------------------------------------------------------

    async def wait_for(self, channel: str, check: Callable[[Any], Any], timeout: float | None = None) -> Any:
        """Wait until ``check(state)`` returns something other than ``None`` for the channel."""
        return await self._waiters.wait(channel, check, self.store.state(channel) or {}, timeout)

    # -- client-triggered side effects -----------------------------------------------------------

    def _client_side_effects(self, transition: Transition, client_id: str) -> None:
        action = transition.action
        kind = action["type"]
        channel = transition.channel
        if kind == "chat/turnStarted":
            self.turn_clients[(channel, action["turnId"])] = client_id
            self.start_turn(channel, action["turnId"], action.get("message") or {})
        elif kind in ("chat/turnCancelled", "chat/truncated"):
            runner = self.turns.get(channel)
            # only when the action ended the runner's turn: a truncation at a turn the chat does
            # not have is a no-op that keeps the active turn (chat-channel §5), and stopping its
            # agent left the chat "in progress" for good, refusing every new turn
            if (
                runner is not None
                and ((transition.after or {}).get("activeTurn") or {}).get("id") != runner.turn_id
            ):
                runner.cancel()
        elif kind == "chat/pendingMessageSet" and action.get("kind") == "queued":
            self._consume_queue(channel)
        elif kind == "session/activeClientRemoved":
            self._client_left(channel, action.get("clientId"), "was removed from the session")
        for ext in self.extensions:
            hook = getattr(ext, "on_client_action", None)
            if hook is not None:
                hook(transition, client_id)

    # -- turns ----------------------------------------------------------------------------------

    def begin_turn(self, chat: str, message: dict, *, turn_id: str | None = None, **extra: Any) -> str:
        """Start a turn the host opens itself (a chat's initial message, a consumed queued message);
        ``turn_id`` when the caller chose it already."""
        turn_id = turn_id or new_turn_id()
        action = {
            "type": "chat/turnStarted",
            "turnId": turn_id,
            "startedAt": iso_ms(self.store.clock_ms()),
            "message": message,
            **extra,
        }
        self.dispatch(chat, action)
        self.start_turn(chat, turn_id, message)
        return turn_id

    def start_turn(self, chat: str, turn_id: str, message: dict) -> TurnRunner:
        session = self.chat_session[chat]
        runner = TurnRunner(self, session, chat, turn_id, message, self.agent_for(session))
        previous = self.turns.get(chat)
        if previous is not None:
            previous.cancel()
        self.turns[chat] = runner
        runner.start()
        return runner

    def stop_turns(self) -> list[asyncio.Task]:
        """Start no more turns (not a queued message either), and end the running ones as
        cancelled: the lab is closing. Returns their tasks, to wait for."""
        self.closing = True
        return [task for runner in list(self.turns.values()) if (task := runner.stop()) is not None]

    def _turn_finished(self, runner: TurnRunner) -> None:
        if self.turns.get(runner.chat) is runner:
            del self.turns[runner.chat]
        self.turn_clients.pop((runner.chat, runner.turn_id), None)
        if self.store.has_channel(runner.chat):
            asyncio.get_running_loop().call_soon(self._consume_queue, runner.chat)

    def _consume_queue(self, chat: str) -> None:
        """Start the first queued message as a new turn when the chat is idle (chat-channel §10)."""
        state = self.store.state(chat)
        if state is None or state.get("activeTurn") is not None or chat in self.turns or self.closing:
            return
        queued = state.get("queuedMessages") or []
        if not queued:
            return
        first = queued[0]
        self.dispatch(chat, {"type": "chat/pendingMessageRemoved", "kind": "queued", "id": first["id"]})
        self.begin_turn(chat, first["message"], queuedMessageId=first["id"])

    # -- connections ----------------------------------------------------------------------------

    def connect(self, name: str = "client", *, trusted: bool = False):
        """Open an in-process connection; returns the client end of the transport.

        ``trusted=True`` marks the notebook's own client (the person at the kernel): only such a
        connection may run MCP servers from the plugins it publishes, set working directories
        outside ``roots`` or remove other clients. Every other connection is a stranger.
        """
        client_end, host_end = pipe(name, "host")
        Connection(self, host_end, trusted=trusted)
        return client_end

    def attach(self, transport, *, trusted: bool = False) -> Connection:
        """Serve a connection arriving over any transport (e.g. a WebSocket): an untrusted stranger
        unless the caller, not the peer, decides otherwise."""
        return Connection(self, transport, trusted=trusted)

    def connection_of(self, client_id: str | None) -> Connection | None:
        """The live connection holding ``client_id`` (``None`` when no connection does)."""
        conn = self.clients.get(client_id) if client_id is not None else None
        return conn if conn is not None and not conn.closed else None

    def is_trusted(self, client_id: str | None) -> bool:
        """Whether ``client_id`` is held by the notebook's own (trusted) connection right now."""
        conn = self.connection_of(client_id)
        return conn is not None and conn.trusted

    def try_claim_client_id(self, conn: Connection, client_id: str) -> bool:
        """Bind ``client_id`` to ``conn`` if no other live connection holds it."""
        holder = self.connection_of(client_id)
        if holder is not None and holder is not conn:
            return False
        self.clients[client_id] = conn
        return True

    async def claim_client_id(self, conn: Connection, client_id: str) -> None:
        """Bind a contested ``client_id`` to ``conn``: its holder must prove it is alive.

        The holder's socket is pinged (:meth:`Connection.probe`); if it answers within
        ``limits.identity_grace_s`` the claim is refused (-32010), otherwise the holder is closed
        (a dropped socket not noticed yet) and ``conn`` takes the id over.
        """
        while not self.try_claim_client_id(conn, client_id):
            holder = self.connection_of(client_id)
            if holder is None:
                continue
            # the notebook's own connection is in-process: it never drops unnoticed, and a busy
            # kernel must not lose it to a stranger's claim
            if holder.trusted or await holder.probe(self.limits.identity_grace_s):
                if holder.closed or self.connection_of(client_id) is not holder:
                    continue
                raise RpcError(
                    ErrorCode.ALREADY_EXISTS,
                    f"client id {client_id!r} belongs to another live connection; "
                    "pick another id, or reconnect after that connection has closed",
                )
            if self.connection_of(client_id) is holder:
                holder.close(f"it did not answer a ping while another connection claimed {client_id!r}")
                holder._closed()
        if conn.closed:
            self.release_client_id(conn)
            raise ConnectionError("the connection closed while claiming its client id")

    def release_client_id(self, conn: Connection) -> None:
        """Forget the id ``conn`` held (it closed)."""
        if conn.client_id is not None and self.clients.get(conn.client_id) is conn:
            del self.clients[conn.client_id]

    def negotiate(self, offered: list) -> str:
        """The most preferred entry of ``offered`` that is one of :data:`SUPPORTED_VERSIONS` (or
        -32005). Only versions this host implements: a later patch (0.8.1) may have changed what
        the snapshot does, and an earlier one (0.5.0) lacks actions the host sends.
        """
        for version in offered:
            if isinstance(version, str) and version in SUPPORTED_VERSIONS:
                return version
        shown = ", ".join(repr(v)[:40] for v in offered[:10]) or "no version"
        raise RpcError(
            ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
            f"none of the offered protocol versions ({shown}) is supported; this host speaks "
            + ", ".join(SUPPORTED_VERSIONS),
            {"supportedVersions": list(SUPPORTED_VERSIONS)},
        )

    @property
    def protocol_version(self) -> str:
        return PROTOCOL_VERSION
