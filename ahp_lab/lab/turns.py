"""What a turn looks like from a cell: finished turns and tool calls as read-only views, a turn still
running (``PendingTurn``), the answers a turn was sent with, and the errors a person can act on."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import inspect
import json
import logging
import re
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from ..protocol.jsonvalue import to_json
from ..protocol.printable import printable
from ..store import Transition
from ..tools import FAILURES, Tool

if TYPE_CHECKING:
    from .live import Lab


class ActionRejected(ValueError):
    """The host rejected a dispatched action; the message is the host's one-sentence reason."""

    def __init__(self, reason: str, transition: Transition | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.transition = transition


class HumanInputNeeded(RuntimeError):
    """A synchronous helper would have to wait for a person; use ``await`` instead.

    ``turn`` is the :class:`PendingTurn` that is still running: answer it (``lab.approve()``,
    ``lab.answer(...)`` or the workbench) and ``await exc.turn`` for the finished :class:`Turn`.
    """

    def __init__(self, message: str, turn: PendingTurn | None = None) -> None:
        super().__init__(message)
        self.turn = turn


_private_loop: asyncio.AbstractEventLoop | None = None


def _settle_private_loop() -> None:
    """At the end of a script: cancel what still runs on the labs' private loop (a turn a person
    never answered, its sender) and let it finish, so that exiting prints no "Task was destroyed
    but it is pending!" after the script's own error. The loop stays open for the labs' own
    closing (their finalizers stop MCP servers and agents on it)."""
    loop = _private_loop
    if loop is None or loop.is_closed() or loop.is_running():
        return
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        with contextlib.suppress(Exception):
            loop.run_until_complete(asyncio.wait(pending, timeout=5))


def run_sync(coro: Coroutine) -> Any:
    """Run a coroutine to completion from synchronous code, in a script or inside a notebook cell.

    Inside a running loop (a Jupyter cell) this uses ``nest_asyncio2`` (never ``nest_asyncio``:
    DESIGN.md decision 7); widget messages cannot arrive until the cell ends, so callers must not
    wait for a person here.
    """
    global _private_loop
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is None:
        if _private_loop is None or _private_loop.is_closed():
            if _private_loop is None:
                atexit.register(_settle_private_loop)
            _private_loop = asyncio.new_event_loop()
        # again each time: an asyncio.run() in between unsets it, and sync code that schedules
        # work for the lab (ensure_future outside a running loop) must find the lab's loop
        asyncio.set_event_loop(_private_loop)
        return _private_loop.run_until_complete(coro)
    import nest_asyncio2

    if getattr(loop, "_nest_patched", False):
        return loop.run_until_complete(coro)
    nest_asyncio2.apply(loop)
    # The first time, this runs inside asyncio's own _run_once, which pops a number of ready
    # handles counted before this cell ran: the nested run may take some of them (Run All queues
    # many), and that frame would then pop an empty deque and end the kernel. Placeholders stand
    # in for the handles taken. Later iterations run nest_asyncio2's _run_once, which checks.
    ready = loop._ready  # type: ignore[attr-defined]
    before = len(ready)
    try:
        return loop.run_until_complete(coro)
    finally:
        taken = before - len(ready)
        if taken > 0:
            ready.extendleft(asyncio.Handle(_nothing, (), loop) for _ in range(taken))


def _nothing() -> None:
    """A placeholder handle's callback (see :func:`run_sync`)."""


#: ASCII punctuation, which CommonMark lets a backslash make literal.
_MARKDOWN_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _literal(text: Any, most: int | None = None) -> str:
    """Text a peer wrote (an agent, a tool, another client), as markdown that shows it as written:
    printable, every punctuation mark escaped and every line break kept. JupyterLab puts a cell's
    markdown into the page as HTML, unsanitized: a stranger's ``<img onerror=…>`` in a turn ran
    in the notebook's page, and a ``[link](javascript:…)`` would have (attacker round 25). The
    chat view renders a peer's markdown, sanitized."""
    text = printable("" if text is None else str(text))
    if most is not None and len(text) > most:
        text = text[:most] + "…"
    escaped = "".join("\\" + c if c in _MARKDOWN_PUNCTUATION else c for c in text)
    return "  \n".join(line.strip() or "\u00a0" for line in escaped.split("\n"))


def _code(text: Any) -> str:
    """A name a peer chose (an id, a tool's name) as a markdown code span, which shows its content
    as written: its fence is longer than any run of backticks in it, on one line."""
    text = " ".join(printable("" if text is None else str(text)).split("\n"))
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    return (
        f"{fence} {text} {fence}" if text.startswith("`") or text.endswith("`") else f"{fence}{text}{fence}"
    )


def _shown(text: Any, most: int | None = None) -> str:
    """Text a peer wrote, for a repr printed to a terminal: no escape sequences or controls (a
    stranger's OSC 52 wrote the clipboard of the terminal a script printed a turn in)."""
    text = printable("" if text is None else str(text))
    return text if most is None else text[:most]


def _markdown(value: Any) -> str:
    return (
        str(value.get("markdown", "")) if isinstance(value, dict) else ("" if value is None else str(value))
    )


class ToolCall:
    """A read-only view of one tool call (from the chat state), with a readable display."""

    def __init__(self, state: dict, turn_id: str, chat: str, lab: Lab | None = None) -> None:
        self.state = to_json(state)
        self.turn_id = turn_id
        self.chat = chat
        self._lab = lab

    id = property(lambda self: self.state.get("toolCallId"), doc="The tool call id (``toolCallId``).")
    name = property(lambda self: self.state.get("toolName"), doc="The tool's name (``toolName``).")
    status = property(
        lambda self: self.state.get("status"), doc="Its state: streaming, pending-confirmation, running, ..."
    )
    success = property(
        lambda self: self.state.get("success"), doc="Whether the result succeeded (completed calls)."
    )

    @property
    def input(self) -> Any:
        """The tool input, decoded from JSON when it is a JSON string."""
        raw = self.state.get("toolInput")
        try:
            return json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            return raw

    @property
    def result_text(self) -> str:
        """The text content of the result (or of the live partial content)."""
        return "\n".join(
            b.get("text", "") for b in self.state.get("content") or () if b.get("type") == "text"
        )

    def _tool(self) -> Tool | None:
        if self._lab is None:
            return None
        client = self._lab.client
        contributor = self.state.get("contributor") or {}
        name = client.tool_names.get(self.name)
        if name and contributor.get("kind") == "client":
            # this notebook's tool only when its own client ran the call (another client's tool of
            # the same name was shown with the notebook's renderers)
            return client.tools.get(name) if contributor.get("clientId") == client.client_id else None
        if name:
            return client.tools.get(name)
        try:
            host = self._lab.host
        except RuntimeError:  # an attached lab: server tools live in the remote host
            return None
        resolved = host.resolve_tool(self._lab.session, self.name)  # server tools, a LoopAgent's too
        return resolved.tool if resolved is not None else None

    def __repr__(self) -> str:
        bits = [f"{_shown(self.name)} [{self.status}]"]
        if self.input not in (None, {}, ""):
            bits.append(f"input={json.dumps(self.input)}")  # escaped: a peer's controls too
        if self.status == "completed":
            bits.append(
                ("ok: " if self.success else "failed: ")
                + _shown(self.result_text or _markdown(self.state.get("pastTenseMessage")))
            )
        if self.status == "cancelled":
            bits.append(f"reason={self.state.get('reason')}")
        return f"<ToolCall {' '.join(bits)}>"

    def _ipython_display_(self) -> None:
        from IPython.display import display

        tool = self._tool()
        renders = []
        if tool is not None and tool.render_call is not None:
            renders.append((tool.render_call, self.input))
        if tool is not None and tool.render_result is not None and self.status == "completed":
            renders.append((tool.render_result, self.state))
        shown = []
        for render, value in renders:
            try:
                shown.append(render(value))
            except FAILURES as exc:  # the renderer's bug: the default text instead, and why
                logging.getLogger("ahp_lab").warning(
                    "the renderer of the tool %s failed: %s: %s", self.name, type(exc).__name__, exc
                )
                shown = []
                break
        for out in shown:
            display(out)
        if not shown:
            print(repr(self))


class Turn:
    """A read-only view of one turn of a chat."""

    def __init__(self, state: dict, chat: str, lab: Lab | None = None, active: bool = False) -> None:
        self.state = to_json(state)
        self.chat = chat
        self.active = active
        self._lab = lab

    id = property(lambda self: self.state.get("id"), doc="The turn id.")

    @property
    def status(self) -> str:
        """``active`` while the turn runs, then ``complete``, ``cancelled`` or ``error``."""
        return "active" if self.active else self.state.get("state", "?")

    @property
    def text(self) -> str:
        """The markdown the agent streamed, concatenated."""
        return "\n\n".join(str(p.get("content", "")) for p in self.parts if p.get("kind") == "markdown")

    @property
    def reasoning(self) -> str:
        """The reasoning the agent streamed, concatenated."""
        return "".join(str(p.get("content", "")) for p in self.parts if p.get("kind") == "reasoning")

    @property
    def parts(self) -> list[dict]:
        """The turn's response parts (markdown, reasoning, tool calls, input requests, ...)."""
        return self.state.get("responseParts") or []

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The turn's tool calls, in order."""
        return [
            ToolCall(p["toolCall"], self.id, self.chat, self._lab)
            for p in self.parts
            if p.get("kind") == "toolCall"
        ]

    @property
    def input_requests(self) -> list[dict]:
        """The turn's input-request parts (``response`` is absent while open)."""
        return [p for p in self.parts if p.get("kind") == "inputRequest"]

    @property
    def error(self) -> dict | None:
        """The ``ErrorInfo`` of a turn that ended with ``chat/error``."""
        return self.state.get("error")

    def __repr__(self) -> str:
        lines = [f"<Turn {self.id!r} {self.status}: {self.state.get('message', {}).get('text', '')!r}"]
        if self.reasoning:
            lines.append(f"  reasoning: {_shown(self.reasoning, 120)}")
        if self.text:
            lines.append(f"  text: {_shown(self.text, 400)}")
        for call in self.tool_calls:
            lines.append(f"  {call!r}")
        for part in self.input_requests:
            lines.append(f"  input request {part['request'].get('id')!r}: {part.get('response', 'open')}")
        if self.error:
            lines.append(f"  error: {_shown(self.error.get('message'))}")
        return "\n".join(lines) + ">"

    def _repr_markdown_(self) -> str:
        """The turn for a notebook cell; every text in it is shown as written (see :func:`_literal`)."""
        out = [
            f"**Turn {_code(self.id)}** — {_literal(self.status)}",
            "",
            f"> {_literal(self.state.get('message', {}).get('text', ''))}",
            "",
        ]
        if self.reasoning:
            out += [f"*reasoning:* {_literal(self.reasoning)}", ""]
        if self.text:
            out += [_literal(self.text), ""]
        for call in self.tool_calls:
            out.append(
                f"- tool {_code(call.name)} → **{_literal(call.status)}**"
                + (f": {_literal(call.result_text)}" if call.result_text else "")
            )
        if self.error:
            out.append(f"- error: {_literal(self.error.get('message'))}")
        return "\n".join(out)


class Sent:
    """What ``send``/``start``/``run`` sent: a turn started at once (``kind`` ``"turn"``), a message
    queued behind the running turn (``"queued"``: ``chat/pendingMessageSet`` kind ``queued``, whose
    ``turn_id`` is known once the host starts it), or a steering message for the running turn
    (``"steering"``: ``turn_id`` is that turn)."""

    def __init__(
        self,
        chat: str,
        kind: str,
        *,
        turn_id: str | None = None,
        message_id: str | None = None,
        options: tuple = (None, None, None),
    ) -> None:
        self.chat, self.kind = chat, kind
        self.turn_id = turn_id
        self.message_id = message_id
        self.options = options  # (script, approve, answers) for a queued message's turn
        #: why the queued message left the queue without becoming our turn ("was removed …")
        self.removed: str | None = None


class PendingTurn:
    """A turn that was started (or queued) and may still be running; ``await`` it for the :class:`Turn`."""

    def __init__(self, lab: Lab, sent: Sent) -> None:
        self.lab = lab
        self.chat = sent.chat
        self._sent = sent
        self._task = asyncio.ensure_future(lab._wait_sent(sent))
        lab._background.add(self._task)
        self._task.add_done_callback(lab._background.discard)

    @property
    def turn_id(self) -> str | None:
        """The turn's id (``None`` while the message waits in the queue for its turn)."""
        return self._sent.turn_id

    @property
    def queued(self) -> bool:
        """Whether the message is still waiting in the chat's queue for its turn."""
        return self._sent.kind == "queued" and self._sent.turn_id is None and not self.done()

    def __await__(self):
        # while queued behind a turn that waits for a person, the awaiting cell is told so
        return self.lab._awaited(self._sent, self._task).__await__()

    def done(self) -> bool:
        """Whether the turn has ended."""
        return self._task.done()

    def result(self) -> Turn:
        """The finished turn (raises ``asyncio.InvalidStateError`` while it runs)."""
        return self._task.result()

    @property
    def blocked(self) -> str | None:
        """What the turn waits for from a person right now (``None`` when it is not blocked)."""
        return self.lab._blocked(self.chat, self.turn_id) if self.turn_id else None

    async def until_blocked(self, timeout: float | None = 30) -> str | None:
        """Wait until the turn needs a person (returns what for) or ends (returns ``None``).

        A message still queued behind a turn that waits for a person needs that person too: it
        returns ``"queued behind turn …, which waits for a person: …"``. ``timeout`` in seconds
        (``None``: no limit) raises ``TimeoutError``.
        """

        def check(state: Any) -> Any:
            if self.done() or any(t.get("id") == self.turn_id for t in (state or {}).get("turns") or ()):
                return ("done", None)
            if self.turn_id is None:  # queued: it starts once the turn ahead ends
                ahead = ((state or {}).get("activeTurn") or {}).get("id")
                reason = self.lab._queued_behind(self.chat, ahead)
                return None if reason is None else ("blocked", reason)
            reason = self.blocked
            return ("blocked", reason) if reason else None

        return (await self.lab.client.wait_for(self.chat, check, timeout=timeout))[1]

    @property
    def state(self) -> dict | None:
        """The turn as it is now (the active turn, or the completed one; ``None`` while queued)."""
        if self.turn_id is None:
            return None
        chat = self.lab.client.confirmed(self.chat) or {}
        if (chat.get("activeTurn") or {}).get("id") == self.turn_id:
            return to_json(chat["activeTurn"])
        return next((to_json(t) for t in chat.get("turns") or () if t.get("id") == self.turn_id), None)

    def __repr__(self) -> str:
        if self.queued:
            return f"<PendingTurn queued as {self._sent.message_id}>"
        status = "done" if self.done() else (f"blocked: {self.blocked}" if self.blocked else "running")
        return f"<PendingTurn {self.turn_id} {status}>"


def read_verdict(verdict: Any) -> tuple[bool | None, str | None, Any] | None:
    """``(approved, option, edit)`` of a verdict (``approved`` is ``None`` for a bare option id,
    whose kind decides), or ``None``: no verdict, the call is left to a person. One reading for
    ``approve=``, ``lab.approve``/``lab.deny`` and local approvals: a ``{"deny": True}`` approved a
    local approval, and an approver returning ``None`` approved every call."""
    if verdict is None:
        return None
    if not isinstance(verdict, (str, dict, list)) and verdict in (True, False):  # (1, numpy's bools)
        return bool(verdict), None, None
    if verdict == "approve":
        return True, None, None
    if verdict == "deny":
        return False, None, None
    if isinstance(verdict, str) and verdict:
        return None, verdict, None
    if isinstance(verdict, dict):
        option = verdict.get("option")
        option = option if isinstance(option, str) and option else None
        # {"option": id} is decided by the option's kind, {"deny": True, "option": id} denies
        approved = False if verdict.get("deny") else (None if option is not None else True)
        return approved, option, verdict.get("edit")
    raise TypeError(
        "a verdict is True, False, an option id, {'option': id}, {'edit': input}, {'deny': True} or None "
        f"(leave it to a person), not {type(verdict).__name__}"
    )


def answer_local(approval: Any, verdict: Any) -> bool:
    """Answer a local approval of this notebook (a tool with ``approval="always"``) by a verdict;
    ``False`` when the verdict is ``None`` (left to a person). It runs the input the agent gave, or
    nothing: an option or an edit with a yes is a ``ValueError``."""
    read = read_verdict(verdict)
    if read is None:
        return False
    approved, option, edit = read
    if approved is not False and (approved is None or option is not None or edit is not None):
        raise ValueError(
            f"{approval.tool_name} waits for this notebook's own approval, which runs the input the agent "
            "gave or nothing: approve or deny it, without an option or an edit"
        )
    approval.approve() if approved else approval.deny()
    return True


class TurnPolicy:
    """Answers for a turn sent with ``approve=`` / ``answers=`` (dispatched as real protocol actions)."""

    def __init__(self, lab: Lab, chat: str, turn_id: str, approve: Any, answers: Any) -> None:
        self.lab, self.chat, self.turn_id = lab, chat, turn_id
        self.approve, self.answers = approve, answers
        self.handled: set[str] = set()
        #: whether the turn of that id is known to be this lab's (its start echoed, or the host
        #: started this lab's queued message): answers go to no other turn under the same id
        self.armed = False
        #: what the policy gave no answer (a verdict of ``None``, one it could not give): a person's
        self.declined: set[str] = set()
        self.error: str | None = None  # why answers= could not answer a request (the sender raises it)
        self._waiting: set[asyncio.Task] = set()  # async approvers and answerers still deciding

    @property
    def active(self) -> bool:
        return self.approve is not None or self.answers is not None

    def react(self) -> None:
        if not self.armed:
            return
        client = self.lab.client
        state = client.confirmed(self.chat) or {}
        active = state.get("activeTurn") or {}
        if active.get("id") != self.turn_id:
            return
        for part in active.get("responseParts") or ():
            if part.get("kind") == "toolCall" and self.approve is not None:
                tc = part["toolCall"]
                key = f"{tc.get('toolCallId')}:{tc.get('status')}"
                if (
                    tc.get("status") in ("pending-confirmation", "pending-result-confirmation")
                    and key not in self.handled
                ):
                    self.handled.add(key)
                    self._when_ready(
                        lambda tc=tc, key=key: self._verdict(ToolCall(tc, self.turn_id, self.chat, self.lab)),
                        lambda v, tc=tc, key=key: self._confirm(tc, v, key),
                    )
            elif (
                part.get("kind") == "inputRequest"
                and part.get("response") is None
                and self.answers is not None
            ):
                request = part["request"]
                if request.get("id") not in self.handled:
                    self.handled.add(request.get("id"))
                    self._when_ready(
                        lambda request=request: (
                            self.answers(request) if callable(self.answers) else self.answers
                        ),
                        lambda v, request=request: self._answer(request, v),
                    )
        if self.approve is not None:
            for approval in list(client.approvals.values()):
                if (
                    approval.chat == self.chat
                    and approval.turn_id == self.turn_id
                    and approval.tool_call_id not in self.handled
                ):
                    self.handled.add(approval.tool_call_id)
                    call = ToolCall(
                        {
                            "toolCallId": approval.tool_call_id,
                            "toolName": approval.tool_name,
                            "status": "local-approval",
                            "toolInput": approval.tool_input,
                        },
                        self.turn_id,
                        self.chat,
                        self.lab,
                    )
                    self._when_ready(
                        lambda call=call: self._verdict(call),
                        lambda v, approval=approval: self._decide_local(approval, v),
                    )

    def _verdict(self, call: ToolCall) -> Any:
        return self.approve(call) if callable(self.approve) else self.approve

    def _when_ready(self, produce: Any, use: Any) -> None:
        """``use(produce())`` now, or once an ``async`` approver or answerer has produced its value
        (a coroutine is never taken for a yes). What raises is reported to the sender."""

        def raised(exc: Exception) -> None:  # the sender reports it; the request stays open
            self._unanswerable(f"the approve=/answers= function raised {type(exc).__name__}: {exc}")

        try:
            value = produce()
        except Exception as exc:  # noqa: BLE001
            raised(exc)
            return
        if not inspect.isawaitable(value):
            use(value)
            return

        async def later() -> None:
            try:
                result = await value
            except Exception as exc:  # noqa: BLE001
                raised(exc)
                return
            use(result)

        task = asyncio.ensure_future(later())
        self._waiting.add(task)
        task.add_done_callback(self._waiting.discard)

    def _decide_local(self, approval: Any, verdict: Any) -> None:
        """A verdict on a local approval: it runs the tool's input as the agent gave it, so an edit
        or an option is left to a person, with the reason."""
        try:
            answered = answer_local(approval, verdict)
        except TypeError as exc:
            self._unanswerable(f"approve= cannot answer the local approval of {approval.tool_name}: {exc}")
            return
        except ValueError:
            self._unanswerable(
                f"approve= cannot answer the local approval of {approval.tool_name} with an option or an "
                "edit: it runs the input the agent gave, or nothing. It still waits: answer it yourself"
            )
            return
        if not answered:
            self._leave(approval.tool_call_id)

    def _leave(self, key: str) -> None:
        """``key`` (a call, a question) is left to a person: a waiting ``lab.run``, which refuses
        to wait for a person, is told (it waited for ever)."""
        self.declined.add(key)
        self.lab.client.recheck(self.chat)

    def leaves_open(self) -> bool:
        """Whether the running turn waits for a person on something this policy does not answer:
        a call without approve=, a question without answers=, what it gave no verdict, or a call
        that waits for a token (``lab.authenticate``)."""
        active = (self.lab.client.confirmed(self.chat) or {}).get("activeTurn") or {}
        if active.get("id") != self.turn_id:
            return False
        for part in active.get("responseParts") or ():
            if part.get("kind") == "toolCall":
                tc = part["toolCall"]
                if tc.get("status") == "auth-required":
                    return True
                if tc.get("status") in ("pending-confirmation", "pending-result-confirmation") and (
                    self.approve is None or f"{tc.get('toolCallId')}:{tc.get('status')}" in self.declined
                ):
                    return True
            elif (
                part.get("kind") == "inputRequest"
                and part.get("response") is None
                and (self.answers is None or (part.get("request") or {}).get("id") in self.declined)
            ):
                return True
        return any(
            a.chat == self.chat
            and a.turn_id == self.turn_id
            and (self.approve is None or a.tool_call_id in self.declined)
            for a in self.lab.client.approvals.values()
        )

    def _confirm(self, tc: dict, verdict: Any, key: str = "") -> None:
        if verdict is None:
            self._leave(key)
            return
        try:
            seq = self.lab._decide(self.chat, self.turn_id, tc, verdict)
        except (ValueError, TypeError) as exc:
            self._cannot_confirm(tc, exc)
            return
        verdict_of = getattr(self.lab, "_verdict", None)
        if verdict_of is None:
            return

        async def refused() -> None:
            # the host may refuse it (a denial the agent offers no way to take): the turn would
            # wait for ever for an answer the sender believes it gave
            try:
                await verdict_of(self.chat, seq)
            except ActionRejected as exc:
                self._cannot_confirm(tc, exc)
            except (LookupError, ConnectionError, TimeoutError):
                pass  # the chat or the connection is gone: the turn's own end says so

        task = asyncio.ensure_future(refused())
        self._waiting.add(task)
        task.add_done_callback(self._waiting.discard)

    def _cannot_confirm(self, tc: dict, why: Exception) -> None:
        self._unanswerable(
            f"approve= cannot answer {tc.get('displayName') or tc.get('toolName')}: {why}. "
            "It still waits: answer it with lab.approve(...) or in the workbench"
        )

    def _answer(self, request: dict, given: Any) -> None:
        try:
            completion = self.lab._completion(self.chat, request.get("id"), given, "accept")
            # the client checks the answer's values against the request (a ProtocolError, a
            # ValueError): refused here, the turn would wait for ever for an answer never sent
            self.lab.client.dispatch(self.chat, completion)
        except (ValueError, LookupError, TypeError) as exc:
            self._unanswerable(
                f"answers= cannot answer input request {request.get('id')!r}: {exc}. "
                "The request is still open: answer it with lab.answer(...) or in the workbench"
            )

    def _unanswerable(self, why: str) -> None:
        """The sender raises ``why``: it is told now, also when an ``async`` answerer found it
        after the last change of the chat (nothing else would wake it)."""
        self.error = why
        self.lab.client.recheck(self.chat)


def answer_for(question: dict | None, value: Any) -> dict:
    kind = (question or {}).get("kind")
    if value is None:
        return {"state": "skipped"}
    if kind in ("number", "integer"):
        return {"state": "submitted", "value": {"kind": "number", "value": value}}
    if kind == "boolean":
        return {"state": "submitted", "value": {"kind": "boolean", "value": bool(value)}}
    if kind == "single-select":
        return {"state": "submitted", "value": {"kind": "selected", "value": value}}
    if kind == "multi-select":
        return {"state": "submitted", "value": {"kind": "selected-many", "value": list(value)}}
    return {"state": "submitted", "value": {"kind": "text", "value": str(value)}}


def parse_ms(iso: Any) -> int:
    from datetime import datetime

    try:
        return int(datetime.fromisoformat(str(iso).replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return 0
