"""Sending a user message from a cell: ``send``, ``start`` and ``run`` of :class:`~ahp_lab.Lab`.

A message on an idle chat starts a turn (``chat/turnStarted``). On a busy chat it waits its turn:
it is queued (``chat/pendingMessageSet`` kind ``queued``), and the host starts it as a new turn
when the chat is free (chat channel, host behaviour); ``queue=False`` fails fast instead, and
``steer=True`` sends it to the running turn as a steering message. A turn's ``script=``,
``approve=`` and ``answers=`` are attached to it before its agent starts, also when the host
starts a queued message.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
import warnings
from collections.abc import Awaitable, Coroutine
from typing import Any

from ..protocol.clock import iso_ms
from ..protocol.names import new_turn_id
from ..store import Transition
from .checks import message_text
from .turns import ActionRejected, HumanInputNeeded, PendingTurn, Sent, Turn, TurnPolicy, run_sync

__all__ = ["Sending", "Unsent"]

#: Actions by which another client's words reach a turn's agent: its answers to the turn's
#: questions, and what its own tools return (a stranger's tool answered "production", and the next
#: call of the notebook's kernel tool was approved by the notebook's approve=).
_WORDS = frozenset(
    {"chat/inputAnswerChanged", "chat/inputCompleted", "chat/toolCallComplete", "chat/toolCallContentChanged"}
)


class Unsent(Coroutine):
    """What ``lab.send(...)`` returns: the coroutine that sends the message when awaited.

    It is a coroutine (``await`` it, or give it to ``asyncio.create_task``); shown in a cell
    without ``await``, it says that nothing was sent, instead of ``<coroutine object ...>``.
    """

    __slots__ = ("_coro", "_text")

    def __init__(self, coro: Coroutine, text: Any) -> None:
        self._coro = coro
        self._text = text

    def send(self, value: Any) -> Any:
        return self._coro.send(value)

    def throw(self, *args: Any) -> Any:
        return self._coro.throw(*args)

    def close(self) -> None:
        self._coro.close()

    def __await__(self):
        return self._coro.__await__()

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"{name!r}: this is lab.send({self._text!r:.60}) not awaited, which has sent nothing; "
            "write `await lab.send(...)` to get the turn"
        )

    def __repr__(self) -> str:
        shown = repr(self._text)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return (
            f"<lab.send({shown}) has not sent anything: write `await lab.send(...)` in a notebook cell, "
            "or `lab.run(...)` in a script>"
        )


#: Seconds an awaited turn waits for the host's echo of this client's own actions on its chat
#: (its cancel) before the client's own view of the turn stands.
HOST_ECHO_S = 5.0
_AWAIT_INSTEAD = (
    "a blocked cell cannot receive widget clicks, so use `await lab.send(...)` in the notebook, "
    "or pass approve=/answers= to answer programmatically"
)


#: Why a dispatch (``"action"``) or a message will never be answered: it was in flight when the
#: connection dropped, and is listed in ``client.unconfirmed``.
LOST = (
    "the {} was lost when the connection to the host dropped: the host never sequenced it "
    "(lab.client.resend_unconfirmed() sends it again)"
)


class Sending:
    """The sending half of :class:`~ahp_lab.Lab` (a mixin: it uses the lab's client, host and agent)."""

    def _submit(
        self,
        method: str,
        text: Any,
        script: Any,
        approve: Any,
        answers: Any,
        chat: str | None,
        queue: bool,
        steer: bool,
    ) -> Sent:
        """Send a user message: a new turn, queued behind the running one, or steering it."""
        message = {"text": message_text(text, method), "origin": {"kind": "user"}}
        self._check_open()
        chat = chat or self.chat
        state = self.client.state(chat) or {}
        active = (state.get("activeTurn") or {}).get("id")
        message_id = f"msg-{uuid.uuid4().hex[:8]}"
        if steer:
            if (script, approve, answers) != (None, None, None):
                raise TypeError(
                    "steer=True adds to the running turn: script=, approve= and answers= are for a new turn"
                )
            if active is None:
                raise LookupError("there is no running turn to steer: send the message without steer=True")
            self.client.dispatch(
                chat,
                {"type": "chat/pendingMessageSet", "kind": "steering", "id": message_id, "message": message},
            )
            return Sent(chat, "steering", turn_id=active, message_id=message_id)
        self._scripts_accepted(script)
        if queue and (active or state.get("queuedMessages")):  # busy: wait in line (chat-channel §10)
            sent = Sent(chat, "queued", message_id=message_id, options=(script, approve, answers))
            self._queued[message_id] = sent
            self.client.dispatch(
                chat,
                {"type": "chat/pendingMessageSet", "kind": "queued", "id": message_id, "message": message},
            )
            return sent
        turn_id = new_turn_id()
        self._prepare(chat, turn_id, script, approve, answers, armed=False)  # armed by the echo
        self.client.dispatch(
            chat,
            {
                "type": "chat/turnStarted",
                "turnId": turn_id,
                "startedAt": iso_ms(self.store.clock_ms()),
                "message": message,
            },
        )
        return Sent(chat, "turn", turn_id=turn_id)

    def _scripts_accepted(self, script: Any) -> None:
        if script is not None and getattr(self.agent, "queue_script", None) is None:
            raise TypeError(f"the {self.agent.name} agent does not take scripts")

    def _prepare(
        self, chat: str, turn_id: str, script: Any, approve: Any, answers: Any, *, armed: bool = True
    ) -> None:
        """Give a turn its script and its answers, before its agent starts."""
        if script is not None:
            self.agent.queue_script(turn_id, script)
        policy = TurnPolicy(self, chat, turn_id, approve, answers)
        policy.armed = armed
        if policy.active:
            self._policies[turn_id] = policy

    def _on_transition(self, transition: Transition) -> None:
        """The echo of one of our dispatches is kept for its verdict (the newest 4,096); a queued
        message of ours becomes a turn: the host started it (this runs synchronously in the host's
        dispatch, before the turn's agent starts)."""
        origin = transition.origin
        if (
            type(origin) is dict
            and origin.get("clientId") == self.client.client_id
            and (seq := origin.get("clientSeq")) is not None
        ):
            echoes = self._echoes
            echoes[seq] = transition
            if len(echoes) > 4096:
                del echoes[next(iter(echoes))]
        if transition.accepted and (self._policies or transition.action.get("kind") == "steering"):
            self._steered(transition)
            self._armed(transition)
        if not self._queued or not transition.accepted:
            return
        action = transition.action
        kind = action.get("type")
        named = action.get("queuedMessageId") if kind == "chat/turnStarted" else action.get("id")
        sent = self._queued.get(named) if type(named) is str else None
        if sent is None or sent.chat != transition.channel:  # the same id in another chat is another's
            return
        by_client = type(origin) is dict and origin.get("clientId") is not None
        if kind == "chat/pendingMessageRemoved" and action.get("kind") == "queued":
            # by a client: it will not start; by the host, it is starting (chat-channel §10: the
            # removal, then the turnStarted naming it, which a remote client reads apart)
            if by_client:
                del self._queued[named]
                sent.removed = "was removed before its turn started"
        elif (
            kind == "chat/pendingMessageSet"
            and action.get("kind") == "queued"
            and by_client
            and origin.get("clientId") != self.client.client_id
        ):
            # another client's text under our message's id: the turn it starts is not ours, and
            # our approve=/answers=/script= must not go to it (a stranger's call of a kernel tool
            # was approved so)
            del self._queued[named]
            sent.removed = f"was replaced by client {origin.get('clientId')!r} before its turn started"
        elif kind == "chat/turnStarted":
            del self._queued[named]
            if by_client:  # a client's own turn naming our message: the host starts ours, no one else
                sent.removed = f"was taken by a turn client {origin.get('clientId')!r} started"
                return
            sent.turn_id = action["turnId"]
            self._prepare(sent.chat, sent.turn_id, *sent.options)  # the host started our message

    def _armed(self, transition: Transition) -> None:
        """The echo of our own ``chat/turnStarted`` arms the turn's policy: only then is the turn
        of that id ours (a start the host refused left its id to anyone, and a stranger's turn under
        it had the notebook's approve=)."""
        action, origin = transition.action, transition.origin
        if action.get("type") != "chat/turnStarted" or type(origin) is not dict:
            return
        policy = self._policies.get(action.get("turnId"))
        if policy is not None and policy.chat == transition.channel:
            if origin.get("clientId") == self.client.client_id:
                policy.armed = True
                policy.react()  # what the turn asked meanwhile (a host that sent it with the echo)
            elif not policy.armed:  # another's turn under our id: never ours
                del self._policies[action["turnId"]]

    def _steered(self, transition: Transition) -> None:
        """Another client's words in a turn sent with ``approve=``/``answers=``: a steering message,
        an answer to the turn's questions, a suggestion with a confirmation, or what its own tool
        returned. The agent takes them
        in as the person's, and what it then asks for is not what the person pre-approved, so the
        turn's calls and questions are left to a person from then on (a stranger's steering, or its
        answer to the agent's question, had the next call approved). A steering message counts both
        when it is set and when the host hands it to the running turn (it may predate the turn)."""
        action, origin = transition.action, transition.origin
        chat, kind = transition.channel, action.get("type")
        who = origin.get("clientId") if type(origin) is dict else None
        if action.get("kind") == "steering" and kind == "chat/pendingMessageSet":
            self._steering_setters[chat] = who
        elif action.get("kind") == "steering" and kind == "chat/pendingMessageRemoved":
            who = self._steering_setters.pop(chat, None)
            if type(origin) is dict and origin.get("clientId") is not None:
                return  # a client took it back: nothing reached the turn
        elif kind in _WORDS or (
            kind == "chat/toolCallConfirmed"
            and (action.get("userSuggestion") is not None or action.get("reasonMessage") is not None)
        ):
            if who is None:
                return  # the host's own (an agent's): no one's words
        else:
            return
        if who == self.client.client_id:
            return
        # the chat's running turn, whatever turn the action names (an answer carries no turn id,
        # and one it adds is not read by the reducer: a made-up one kept the policy)
        turn = ((self.client.confirmed(chat) or {}).get("activeTurn") or {}).get("id")
        policy = self._policies.get(turn)
        if policy is not None and policy.chat == chat:
            del self._policies[turn]
            warnings.warn(
                f"turn {turn} took words from client {who!r} ({kind}): its approve=/answers= no longer "
                "answer for it, and what it asks next is left to you",
                stacklevel=2,
            )

    def _lost(self, sent: Sent) -> str | None:
        """Why ``sent`` will never be sequenced: it was in flight when the connection dropped."""
        for entry in self.client.unconfirmed:
            action = entry.get("action") or {}
            if (action.get("type") == "chat/turnStarted" and action.get("turnId") == sent.turn_id) or (
                action.get("type") == "chat/pendingMessageSet" and action.get("id") == sent.message_id
            ):
                return LOST.format("message")
        return None

    def _never(self, sent: Sent) -> tuple[str, str] | None:
        """``("rejected" | "lost", why)`` when ``sent`` will never be sequenced as it was sent."""
        rejected = self._rejection(sent)
        if rejected is not None:
            return ("rejected", rejected)
        lost = self._lost(sent)
        return None if lost is None else ("lost", lost)

    def _rejection(self, sent: Sent) -> str | None:
        for rejection in self.client.rejections:
            action = rejection["action"]
            if action.get("type") == "chat/turnStarted" and action.get("turnId") == sent.turn_id:
                return rejection["reason"]
            if action.get("type") == "chat/pendingMessageSet" and action.get("id") == sent.message_id:
                return rejection["reason"]
        return None

    #: Whether a closed lab hears nothing more of its host (a remote lab: its connection is closed),
    #: so that awaiting a turn it started ends when it closes, not never.
    _deaf_when_closed = False
    #: What becomes of a message still queued when the lab closes (each kind of lab says).
    _queued_when_closed: str

    def _wake_waits(self) -> None:
        """Called once the lab is closed: waits that can no longer end (a queued message's, whose
        turn will not start; a remote lab's turns, of which it hears nothing more) end now."""
        for channel in self.client.waited_channels():
            self.client.recheck(channel)

    async def _wait_sent(self, sent: Sent, stop_when_blocked: bool = False) -> Turn:
        if sent.kind == "queued":
            await self._wait_started(sent, stop_when_blocked)
        return await self._wait_turn(sent, stop_when_blocked)

    async def _awaited(self, sent: Sent, waiting: Awaitable[Turn]) -> Turn:
        """A cell awaits ``waiting``, the turn of ``sent``: while the message is queued behind a
        turn that waits for a person, say so (:meth:`_tell_queued`)."""
        if sent.kind != "queued" or sent.turn_id is not None:
            return await waiting
        telling = asyncio.ensure_future(self._tell_queued(sent))
        try:
            return await waiting
        finally:
            telling.cancel()

    async def _tell_queued(self, sent: Sent) -> None:
        """Warn, once for each turn ahead and what it waits for, that an awaited queued message
        waits for a person: a corrected ``await lab.send(...)`` queued behind the turn its first
        try left waiting (``approve="no"``) showed ``[*]`` and nothing else, for good."""
        told: set[str] = set()
        while True:

            def check(state: Any) -> Any:
                if sent.turn_id is not None or sent.removed or self.closed:
                    return ("over", None)
                ahead = ((state or {}).get("activeTurn") or {}).get("id")
                policy = self._policies.get(ahead)
                if policy is not None and not policy.leaves_open():
                    return None  # its approve=/answers= answer it
                reason = self._queued_behind(sent.chat, ahead)
                return None if reason is None or reason in told else ("blocked", reason)

            kind, reason = await self.client.wait_for(sent.chat, check)
            if kind == "over":
                return
            told.add(reason)
            queued = (self.client.state(sent.chat) or {}).get("queuedMessages") or ()
            text = next((m["message"].get("text") for m in queued if m.get("id") == sent.message_id), None)
            shown = "" if text is None else f" {str(text)[:40]!r}" + ("..." if len(str(text)) > 40 else "")
            warnings.warn(
                f"this cell waits: the message{shown} ({sent.message_id}) is {reason}. It starts when "
                "that turn ends: answer or stop that turn in the workbench (lab.show()); other cells "
                "run only after this one, and Kernel → Interrupt does not stop a cell that awaits "
                "(Kernel → Restart does)",
                stacklevel=1,
            )

    async def _wait_started(self, sent: Sent, stop_when_blocked: bool) -> None:
        """Wait until the host starts a queued message as a turn."""

        def started(state: Any) -> Any:
            never = self._never(sent)
            if never is not None:
                return never
            if sent.turn_id is not None:
                return ("started", None)
            if self.closed:
                return ("closed", None)
            if sent.removed:
                return ("removed", None)
            ahead = ((state or {}).get("activeTurn") or {}).get("id")
            policy = self._policies.get(ahead)
            if stop_when_blocked and (policy is None or policy.leaves_open()):
                reason = self._queued_behind(sent.chat, ahead)
                if reason is not None:
                    return ("blocked", reason)
            return None

        kind, value = await self.client.wait_for(sent.chat, started)
        if kind in ("rejected", "removed", "lost", "closed"):  # it will never start (blocked: it still may)
            self._queued.pop(sent.message_id, None)
        if kind == "rejected":
            raise ActionRejected(value)
        if kind == "lost":
            raise ConnectionError(value)
        if kind == "removed":
            raise LookupError(f"the queued message {sent.message_id} {sent.removed}")
        if kind == "closed":
            raise RuntimeError(
                f"the lab closed before the queued message {sent.message_id} started its turn; "
                f"{self._queued_when_closed}"
            )
        if kind == "blocked":
            raise HumanInputNeeded(f"the message is {value}; {_AWAIT_INSTEAD}")

    async def _wait_turn(self, sent: Sent, stop_when_blocked: bool = False) -> Turn:
        chat, turn_id = sent.chat, sent.turn_id
        seen: list = []  # the turn, once it was seen running

        def done(state: Any) -> Any:
            rejected = self._rejection(sent)
            if rejected is not None:
                return ("rejected", rejected)
            for t in (state or {}).get("turns") or ():
                if t.get("id") == turn_id:
                    return ("done", t)
            confirmed = self.client.confirmed(chat) or {}  # (an optimistic turn may stand in for it)
            if (confirmed.get("activeTurn") or {}).get("id") == turn_id:
                seen.append(turn_id)
            elif seen and not any(t.get("id") == turn_id for t in confirmed.get("turns") or ()):
                return ("truncated", None)  # it ran, and is neither running nor kept now
            policy = self._policies.get(turn_id)
            if policy is not None and policy.error is not None:
                return ("unanswerable", policy.error)
            if (
                stop_when_blocked
                and (policy is None or policy.leaves_open())
                and self._blocked(chat, turn_id)
            ):
                return ("blocked", None)
            if self.closed and self._deaf_when_closed:
                return ("closed", None)
            return None

        try:
            if sent.kind == "turn":
                await self._wait_echo(sent)
            kind, value = await self.client.wait_for(chat, done)
        finally:
            self._forget_turn(sent)  # ended, refused or lost: its policy and script go (see _armed)
        if kind == "rejected":
            raise ActionRejected(value)
        if kind == "truncated":
            raise LookupError(
                f"turn {turn_id} left the chat before it ended (the chat was truncated or disposed)"
            )
        if kind == "unanswerable":
            raise ValueError(value)
        if kind == "closed":
            raise RuntimeError(f"the lab closed before turn {turn_id} ended; it hears nothing more of it")
        if kind == "blocked":
            raise HumanInputNeeded(
                f"turn {turn_id} is waiting for a person ({self._blocked(chat, turn_id)}); {_AWAIT_INSTEAD}"
            )
        return Turn(await self._as_the_host_ended(chat, turn_id, value), chat, self)

    def _forget_turn(self, sent: Sent) -> None:
        """The send is over: its turn's policy and an unused script go."""
        if sent.kind == "steering":  # the steered turn's own sender still needs its answers
            return
        self._policies.pop(sent.turn_id, None)
        try:
            agent = self.agent
        except (AttributeError, KeyError):  # a remote lab's, a disposed session's: none here
            return
        drop = getattr(agent, "drop_script", None)
        if drop is not None:
            drop(sent.turn_id)

    async def _as_the_host_ended(self, chat: str, turn_id: str, turn: dict) -> dict:
        """``turn`` as the host ended it. A cancel this client sent ends the turn in its own view at
        once, before the host's last actions of the turn are read (a call that wrote a file ends
        first): while actions of this client on the chat wait for the host's echo, the echo is
        waited for, up to ``HOST_ECHO_S``; past that, or with the connection lost, the client's own
        view stands."""
        replica = self.client.channels.get(chat)
        if replica is None or not replica.pending or not self.client.connected:
            return turn

        def echoed(_state: Any) -> Any:
            return True if not replica.pending or not self.client.connected else None

        with contextlib.suppress(TimeoutError):
            await self.client.wait_for(chat, echoed, timeout=HOST_ECHO_S)
        if replica.pending:
            return turn
        return next((t for t in (replica.confirmed or {}).get("turns") or () if t.get("id") == turn_id), turn)

    async def _wait_echo(self, sent: Sent) -> None:
        """Wait (bounded) until the host has sequenced the turn's start: a host that never echoes
        it, or a connection that lost it, is an error that says so, not a wait without end."""
        chat, turn_id = sent.chat, sent.turn_id

        def echoed(_state: Any) -> Any:
            never = self._never(sent)
            if never is not None:
                return never
            confirmed = self.client.confirmed(chat) or {}
            if (confirmed.get("activeTurn") or {}).get("id") == turn_id or any(
                t.get("id") == turn_id for t in confirmed.get("turns") or ()
            ):
                return ("confirmed", None)
            return None

        limit = self.client.request_timeout
        try:
            kind, value = await self.client.wait_for(chat, echoed, timeout=limit)
        except TimeoutError:
            raise TimeoutError(
                f"the host has not sequenced the start of turn {turn_id} (chat/turnStarted) within "
                f"{limit} s; it may have dropped it"
            ) from None
        if kind == "rejected":
            raise ActionRejected(value)
        if kind == "lost":
            raise ConnectionError(value)

    def _queued_behind(self, chat: str, ahead: Any) -> str | None:
        """What a message queued behind turn ``ahead`` waits for, when that turn waits for a person."""
        reason = self._blocked(chat, ahead) if ahead else None
        return None if reason is None else f"queued behind turn {ahead}, which waits for a person: {reason}"

    def _blocked(self, chat: str, turn_id: str) -> str | None:
        state = self.client.confirmed(chat) or {}
        active = state.get("activeTurn") or {}
        if active.get("id") != turn_id:
            return None
        for part in active.get("responseParts") or ():
            if part.get("kind") == "inputRequest" and part.get("response") is None:
                return f"input request {part['request'].get('id')}"
            tc = part.get("toolCall") if part.get("kind") == "toolCall" else None
            if tc and tc.get("status") in (
                "pending-confirmation",
                "pending-result-confirmation",
                "auth-required",
            ):
                return f"{tc.get('displayName')} is {tc.get('status')}"
        for approval in self.client.approvals.values():
            if approval.turn_id == turn_id:
                return f"{approval.title} needs this notebook's approval"
        return None

    def send(
        self,
        text: str,
        *,
        script: Any = None,
        approve: Any = None,
        answers: Any = None,
        chat: str | None = None,
        queue: bool = True,
        steer: bool = False,
    ) -> Turn:
        """Send a user message as a turn and wait until the turn ends: ``await lab.send(...)``
        returns the :class:`Turn` (nothing is sent until it is awaited).

        ``script`` runs an explicit scenario (see :mod:`ahp_lab.agents.scripted`). ``approve``
        answers tool confirmations as they appear: ``True``/``False``, an option id, or a callable
        taking a :class:`ToolCall` and returning one of those or ``{"edit": <new input>}``.
        ``answers`` answers input requests: ``{questionId: value}`` or a callable taking the
        request. Without them, a person answers in the workbench (clicks arrive while this awaits).

        While a turn is running, the message waits its turn: it is queued
        (``chat/pendingMessageSet`` kind ``queued``), the host starts it when the chat is free,
        and this returns when that turn ends. ``queue=False`` fails fast instead
        (:class:`ActionRejected`: a turn is already in progress). ``steer=True`` sends the message
        to the running turn as a steering message (kind ``steering``) and returns that turn when it
        ends.
        """
        message_text(text, "send")  # a wrong argument fails here, not once awaited
        return Unsent(self._send(text, script, approve, answers, chat, queue, steer), text)

    async def _send(self, text, script, approve, answers, chat, queue, steer) -> Turn:
        sent = self._submit("send", text, script, approve, answers, chat, queue, steer)
        return await self._awaited(sent, self._wait_sent(sent))

    def start(
        self,
        text: str,
        *,
        script: Any = None,
        approve: Any = None,
        answers: Any = None,
        chat: str | None = None,
        queue: bool = True,
        steer: bool = False,
    ) -> PendingTurn:
        """Send a user message and return at once: ``await`` the :class:`PendingTurn` for the turn.

        Takes the same options as :meth:`send` (a busy chat queues the message: ``pending.queued``
        says so until its turn starts); useful to look at (or answer) a turn while it runs.
        """
        return PendingTurn(self, self._submit("start", text, script, approve, answers, chat, queue, steer))

    def run(
        self,
        text: str,
        *,
        script: Any = None,
        approve: Any = None,
        answers: Any = None,
        chat: str | None = None,
        queue: bool = True,
        steer: bool = False,
    ) -> Turn:
        """Synchronous :meth:`send` for scripts and nbval.

        Refuses to wait for a person: when the turn needs someone (a confirmation or an input
        request that ``approve=``/``answers=`` do not cover), or the message is queued behind a
        turn that does, it raises :class:`HumanInputNeeded`, whose ``turn`` keeps running and can
        be answered and awaited later.
        """

        async def go() -> Turn:
            sent = self._submit("run", text, script, approve, answers, chat, queue, steer)
            try:
                return await self._wait_sent(sent, stop_when_blocked=True)
            except HumanInputNeeded as exc:
                exc.turn = PendingTurn(self, sent)
                raise

        return run_sync(go())

    def _on_client_change(self, channel: str, action: dict) -> None:
        for policy in list(self._policies.values()):
            if policy.chat == channel:
                policy.react()
