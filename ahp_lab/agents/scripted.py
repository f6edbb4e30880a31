"""A deterministic scripted agent with a small, readable scenario language.

A script is a list of steps; plain strings are streamed as markdown::

    from ahp_lab.agents.scripted import say, think, call, ask, text_question, summarize, fail

    script = [
        think("The user wants the tests run."),
        "Running the unit tests now.",
        call("run_unit_tests", pattern="auth", confirm=True),
        summarize(),                       # streams a sentence about the last tool result
    ]
    await lab.send("run the tests", script=script)

Without a script the agent picks a built-in scenario from the prompt: naming an available tool
calls it (arguments written ``key=value`` in the prompt, schema defaults otherwise) and
summarizes the result; "ask" shows an input request; "think" streams reasoning; "fail" ends the
turn with an error; anything else gets a short guided answer listing what to try.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .base import InputOutcome, SessionContext, ToolInfo, ToolOutcome, TurnContext, TurnFailed

__all__ = [
    "ScriptedAgent",
    "Step",
    "say",
    "think",
    "notify",
    "call",
    "ask",
    "then",
    "summarize",
    "fail",
    "usage",
    "text_question",
    "number_question",
    "integer_question",
    "boolean_question",
    "choice_question",
    "multi_choice_question",
    "parse_arguments",
    "MODES",
]

#: The scripted agent's session modes (``ScriptedAgent(modes=True)``): id, label, description.
MODES = [
    ("ask", "Ask", "Ask before running any tool"),
    ("code", "Code", "Run tools without asking"),
    ("plan", "Plan", "Plan only: describe the tool calls, run none"),
]


@dataclass
class Scope:
    """What steps of one turn share: the last tool outcome and the last answers."""

    ctx: TurnContext
    last_tool: ToolOutcome | None = None
    last_input: InputOutcome | None = None
    outcomes: list = field(default_factory=list)


class Step:
    async def run(self, scope: Scope) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self) -> str:
        return type(self).__name__.lower()


@dataclass
class _Say(Step):
    text: str
    chunk_size: int | None = None

    async def run(self, scope: Scope) -> None:
        await scope.ctx.say(self.text, chunk_size=self.chunk_size)

    def describe(self) -> str:
        return f"say {self.text[:40]!r}"


@dataclass
class _Think(Step):
    text: str

    async def run(self, scope: Scope) -> None:
        await scope.ctx.think(self.text)

    def describe(self) -> str:
        return f"think {self.text[:40]!r}"


@dataclass
class _Notify(Step):
    text: str

    async def run(self, scope: Scope) -> None:
        await scope.ctx.notify(self.text)


@dataclass
class _Call(Step):
    name: str
    arguments: dict
    confirm: bool | None = None
    options: list | None = None
    title: str | None = None
    intention: str | None = None
    requires_result_confirmation: bool = False

    async def run(self, scope: Scope) -> None:
        outcome = await scope.ctx.call_tool(
            self.name,
            self.arguments,
            confirm=self.confirm,
            options=self.options,
            title=self.title,
            intention=self.intention,
            requires_result_confirmation=self.requires_result_confirmation,
        )
        scope.last_tool = outcome
        scope.outcomes.append(outcome)

    def describe(self) -> str:
        return f"call {self.name}({', '.join(f'{k}={v!r}' for k, v in self.arguments.items())})"


@dataclass
class _Ask(Step):
    questions: list
    message: str | None = None

    async def run(self, scope: Scope) -> None:
        scope.last_input = await scope.ctx.ask(self.questions, message=self.message)
        scope.outcomes.append(scope.last_input)


@dataclass
class _Then(Step):
    fn: Callable[[Scope], Any]

    async def run(self, scope: Scope) -> None:
        produced = self.fn(scope)
        if hasattr(produced, "__await__"):
            produced = await produced
        await run_script(scope, as_steps(produced))


@dataclass
class _Fail(Step):
    message: str
    error_type: str = "scriptedFailure"

    async def run(self, scope: Scope) -> None:
        raise TurnFailed(self.message, self.error_type)


@dataclass
class _Usage(Step):
    input_tokens: int
    output_tokens: int
    model: str | None = None

    async def run(self, scope: Scope) -> None:
        await scope.ctx.usage(self.input_tokens, self.output_tokens, self.model)


def say(text: str, *, chunk_size: int | None = None) -> Step:
    """Stream ``text`` as a markdown response part, in chunks."""
    return _Say(text, chunk_size)


def think(text: str) -> Step:
    """Stream ``text`` as a reasoning response part."""
    return _Think(text)


def notify(text: str) -> Step:
    """Append a system notification part."""
    return _Notify(text)


def call(
    name: str,
    /,
    args: dict | None = None,
    *,
    confirm: bool | None = None,
    options: list[dict] | None = None,
    title: str | None = None,
    intention: str | None = None,
    requires_result_confirmation: bool = False,
    **arguments: Any,
) -> Step:
    """Call a server or client tool; ``confirm=True`` asks the user first (with ``options``).

    Arguments go as keywords (``call("deploy", target="prod")``) or, when a name collides with an
    option of ``call`` itself, in ``args`` (``call("x", args={"title": "..."})``).
    """
    if args is not None and not hasattr(args, "keys"):  # ("auth": "'str' object is not a mapping")
        raise TypeError(
            f"call({name!r}, {args!r:.40}): a tool's arguments go as keywords, "
            f"call({name!r}, argument=value), or as a dict, call({name!r}, {{'argument': value}})"
        )
    return _Call(
        name, {**(args or {}), **arguments}, confirm, options, title, intention, requires_result_confirmation
    )


def ask(*questions: dict, message: str | None = None) -> Step:
    """Ask the user an input request with the given questions (see the ``*_question`` helpers)."""
    return _Ask(list(questions), message)


def then(fn: Callable[[Scope], str | Step | Sequence | None | Awaitable]) -> Step:
    """Run ``fn(scope)`` and execute what it returns (text, a step or a list of steps)."""
    return _Then(fn)


def summarize() -> Step:
    """Stream a sentence about the last tool outcome."""
    return _Then(_summary_of_last_tool)


def fail(message: str, error_type: str = "scriptedFailure") -> Step:
    """End the turn with ``chat/error``."""
    return _Fail(message, error_type)


def usage(input_tokens: int, output_tokens: int, model: str | None = None) -> Step:
    """Report token usage for the turn (``chat/usage``)."""
    return _Usage(input_tokens, output_tokens, model)


def _question(kind: str, qid: str, message: str, **extra: Any) -> dict:
    q = {"kind": kind, "id": qid, "message": message}
    q.update({k: v for k, v in extra.items() if v is not None})
    return q


def text_question(
    qid: str,
    message: str,
    *,
    required: bool | None = None,
    default: str | None = None,
    format: str | None = None,
    min: int | None = None,
    max: int | None = None,
) -> dict:
    """A free-text question (``format`` such as ``email``; ``min``/``max`` lengths)."""
    return _question(
        "text", qid, message, required=required, defaultValue=default, format=format, min=min, max=max
    )


def number_question(
    qid: str,
    message: str,
    *,
    required: bool | None = None,
    default: float | None = None,
    min: float | None = None,
    max: float | None = None,
) -> dict:
    """A number question (floats allowed; ``min``/``max`` bounds)."""
    return _question("number", qid, message, required=required, defaultValue=default, min=min, max=max)


def integer_question(
    qid: str,
    message: str,
    *,
    required: bool | None = None,
    default: int | None = None,
    min: int | None = None,
    max: int | None = None,
) -> dict:
    """A whole-number question (``min``/``max`` bounds)."""
    return _question("integer", qid, message, required=required, defaultValue=default, min=min, max=max)


def boolean_question(
    qid: str, message: str, *, required: bool | None = None, default: bool | None = None
) -> dict:
    """A yes/no question."""
    return _question("boolean", qid, message, required=required, defaultValue=default)


def _options(options: Sequence) -> list[dict]:
    out = []
    for o in options:
        out.append(o if isinstance(o, dict) else {"id": str(o), "label": str(o)})
    return out


def choice_question(
    qid: str, message: str, options: Sequence, *, required: bool | None = None, freeform: bool | None = None
) -> dict:
    """A single-choice question; ``options`` are ids or ``{id, label, description?}``."""
    return _question(
        "single-select",
        qid,
        message,
        options=_options(options),
        required=required,
        allowFreeformInput=freeform,
    )


def multi_choice_question(
    qid: str,
    message: str,
    options: Sequence,
    *,
    required: bool | None = None,
    min: int | None = None,
    max: int | None = None,
    freeform: bool | None = None,
) -> dict:
    """A multiple-choice question; ``min``/``max`` bound how many may be chosen."""
    return _question(
        "multi-select",
        qid,
        message,
        options=_options(options),
        required=required,
        min=min,
        max=max,
        allowFreeformInput=freeform,
    )


def as_steps(value: Any) -> list[Step]:
    """Steps from a script value: a step, a string (streamed), a list of those, or nothing.

    ``None`` and booleans (what a waiting helper such as ``event.wait()`` returns inside
    ``then``) mean "no more steps".
    """
    if value is None or isinstance(value, bool):
        return []
    if isinstance(value, Step):
        return [value]
    if isinstance(value, str):
        return [say(value)]
    if isinstance(value, (list, tuple)):
        out: list[Step] = []
        for item in value:
            out.extend(as_steps(item))
        return out
    raise TypeError(f"a script step must be a Step or a string, got {type(value).__name__}")


async def run_script(scope: Scope, steps: Sequence[Step]) -> None:
    for step in steps:
        await step.run(scope)
        # a steering message sent meanwhile is taken (removed from the chat) and acknowledged, as
        # a model-backed agent would read it before its next step
        steering = scope.ctx.take_steering()
        if steering is not None:
            text = str((steering or {}).get("text") or "")
            await say(f"Steering taken into account: “{text}”.").run(scope)


def _summary_of_last_tool(scope: Scope) -> str:
    outcome = scope.last_tool
    if outcome is None:
        return "There was no tool result to summarize."
    if outcome.status == "cancelled":
        why = {
            "denied": "you denied it",
            "skipped": "it was skipped",
            "result-denied": "you rejected its result",
        }
        return f"The tool call was cancelled because {why.get(outcome.reason or '', outcome.reason or 'it was cancelled')}."
    if not outcome.success:
        return f"The tool call failed: {outcome.error or outcome.text or outcome.message}."
    text = outcome.text.strip()
    if not text:
        return f"{outcome.message or 'The tool finished'} without returning any text."
    first = text.splitlines()[0]
    if len(first) > 200:
        first = first[:197] + "..."
    more = " (and more, see the tool result)" if len(text) > len(first) else ""
    return f"The tool returned: **{first}**{more}."


# -- prompt-driven defaults -----------------------------------------------------------------------

#: The built-in scenarios are chosen, and tool arguments read, from this many first characters of a
#: prompt: a stranger's megabyte of prompt costs the host's loop no more than a short one.
PROMPT_READ = 4096
#: The greeting quotes this many first characters of the prompt.
_QUOTED = 200
#: At most this many places where a tool's name appears in a prompt are checked for word
#: boundaries (a name inside longer words, repeated, is checked place by place).
_PLACES = 20_000

# ``key=value``: a key starts a word and no part of the pattern takes back what it has read (a
# word without ``=`` or an unclosed ``[`` was read again from each of its characters: quadratic).
_ARG = re.compile(
    r"""(?<!\w)(\w++)\s*+=\s*+("(?:[^"\\]|\\.)*+"|'[^']*+'|\[[^\]\[]*+\]|\{[^{}]*+\}|[^\s,;]++)"""
)


def parse_arguments(prompt: str, info: ToolInfo) -> dict:
    """Tool arguments written ``key=value`` in the prompt (its first :data:`PROMPT_READ`
    characters), coerced to the schema, with its defaults."""
    props = info.input_schema.get("properties") or {}
    args = info.defaults()
    for key, raw in _ARG.findall(prompt[:PROMPT_READ]):
        if key not in props:
            continue
        args[key] = _coerce(raw, props[key])
    for key in info.input_schema.get("required") or ():
        if key not in args:
            args[key] = _empty_for(props.get(key) or {})
    return args


def _coerce(raw: str, schema: dict) -> Any:
    if raw[:1] == "'" and raw[-1:] == "'":
        return raw[1:-1]
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, or nested too deep to read: the text itself
        value = raw
    kind = schema.get("type")
    try:
        if kind == "string":
            return value if isinstance(value, str) else raw
        if kind == "integer":
            return int(value)
        if kind == "number":
            return float(value)
        if kind == "boolean":
            return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")
    except (TypeError, ValueError):
        return value
    return value


def _empty_for(schema: dict) -> Any:
    return {"string": "", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}.get(
        schema.get("type")
    )


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"  # the regular expressions' \w


def _mentions(low: str, info: ToolInfo, places: list[int]) -> bool:
    """Whether ``low`` (a prompt's head, lowercased) names the tool as a whole word: its name, the
    name with spaces for ``_``, or its title. ``places`` holds what is left of the prompt's budget
    of places to check; once it is spent, nothing more is found."""
    names = {info.name.lower(), info.name.lower().replace("_", " ")}
    if info.title:
        names.add(info.title.lower())
    for name in names:
        if not name:
            continue
        p = low.find(name)
        while p >= 0:
            places[0] -= 1
            if places[0] < 0:
                return False
            end = p + len(name)
            if (p == 0 or not _word(low[p - 1])) and (end == len(low) or not _word(low[end])):
                return True
            p = low.find(name, p + 1)
    return False


class ScriptedAgent:
    """Deterministic agent: explicit scripts per turn, or a built-in scenario chosen from the prompt.

    ``modes=True`` gives every session a ``mode`` config property (:data:`MODES`, ``ask`` first),
    through the same session-config mechanism as an ACP agent's modes: ``ask`` confirms each tool
    call, ``code`` runs tools without asking (but those registered with ``confirm=True``), ``plan`` describes tool calls without running them
    and offers to switch mode when the prompt says *exit plan*.
    """

    name = "scripted"

    def __init__(
        self, *, provider: str = "scripted", display_name: str = "Scripted agent", modes: bool = False
    ) -> None:
        self.provider = provider
        self.display_name = display_name
        self._scripts: dict[str, list[Step]] = {}
        self._sessions: dict[str, SessionContext] = {}
        if modes:  # the optional session hooks exist only when there is a config to offer
            self.open_session = self._open_session
            self.close_session = self._close_session
            self.resolve_session_config = self._resolve_session_config

    async def _open_session(self, ctx: SessionContext) -> dict:
        self._sessions[ctx.session] = ctx
        return self._config()

    async def _resolve_session_config(self, params: dict) -> dict:
        return self._config()

    @staticmethod
    def _config() -> dict:
        """The session config it offers: its modes, ``ask`` by default."""
        mode = {
            "type": "string",
            "title": "Mode",
            "description": "How the agent works: its session mode",
            "enum": [m[0] for m in MODES],
            "enumLabels": [m[1] for m in MODES],
            "enumDescriptions": [m[2] for m in MODES],
            "sessionMutable": True,
        }
        return {"schema": {"type": "object", "properties": {"mode": mode}}, "values": {"mode": MODES[0][0]}}

    async def _close_session(self, session: str) -> None:
        self._sessions.pop(session, None)

    def mode(self, session: str) -> str | None:
        """The session's current mode (``None`` without modes)."""
        ctx = self._sessions.get(session)
        return ctx.config_values().get("mode") if ctx is not None else None

    def info(self) -> dict:
        """The ``AgentInfo`` this agent publishes on the root channel."""
        return {
            "provider": self.provider,
            "displayName": self.display_name,
            "description": "A deterministic agent driven by scripts, for learning and testing AHP.",
            "models": [{"id": "scripted-1", "provider": self.provider, "name": "Scripted model"}],
            "capabilities": {"multipleChats": {"fork": True, "sideChat": True}},
        }

    def queue_script(self, turn_id: str, script: Any) -> None:
        """Use ``script`` for the turn ``turn_id`` instead of a prompt-chosen scenario."""
        self._scripts[turn_id] = as_steps(script)

    def drop_script(self, turn_id: str) -> None:
        """Forget the script queued for ``turn_id``, unused (its start refused): no other turn may
        take it under that id."""
        self._scripts.pop(turn_id, None)

    def scenario(
        self, prompt: str, tools: list[ToolInfo], mode: str | None = None, session: str | None = None
    ) -> list[Step]:
        """The built-in scenario for a prompt (in a session ``mode`` when modes are on), chosen
        from its first :data:`PROMPT_READ` characters."""
        low = prompt[:PROMPT_READ].lower()
        if mode == "plan" and re.search(r"\bexit plan\b", low):
            return self._exit_plan(session)
        places = [_PLACES]
        for info in tools:
            if _mentions(low, info, places):
                args = parse_arguments(prompt, info)
                shown = ", ".join(f"`{k}={json.dumps(v)}`" for k, v in args.items()) or "no arguments"
                if mode == "plan":
                    return [
                        say(
                            f"Plan: call `{info.name}` with {shown}, then summarize its result. "
                            "I am in plan mode, so I run nothing; say *exit plan* to switch modes."
                        )
                    ]
                return [
                    say(
                        f"I'll call the {'client' if info.owner.startswith('client:') else 'server'} tool "
                        f"`{info.name}` with {shown}."
                    ),
                    call(info.name, confirm={"ask": True, "code": False}.get(mode or ""), **args),
                    summarize(),
                ]
        if re.search(r"\b(fail|error|crash)\b", low):
            return [
                say("Starting to work on that... "),
                fail("The scripted agent was asked to fail this turn."),
            ]
        if re.search(r"\b(ask|question|input|survey)\b", low):
            return [
                say("I need a few details first."),
                ask(
                    text_question("name", "What should the project be called?", required=True),
                    choice_question("runtime", "Which runtime?", ["python", "node", "deno"], required=True),
                    integer_question("workers", "How many workers?", default=2, min=1, max=16),
                    boolean_question("tests", "Generate tests?", default=True),
                    message="Project settings",
                ),
                then(_describe_answers),
            ]
        if re.search(r"\b(think|reason|plan)\b", low):
            return [
                think("Let me break this down: read the request, plan the steps, then answer."),
                say("Here is my plan: 1. understand the request, 2. act, 3. report back."),
            ]
        shown = ", ".join(f"`{t.name}`" for t in tools[:5])  # a few: a greeting, not a catalogue
        more = f" and {len(tools) - 5} more" if len(tools) > 5 else ""
        names = shown + more or "none yet (register one with `@lab.tool`)"
        # the prompt quoted back, cut: a stranger's megabyte prompts came back whole as the agent's
        # text, which no client's budget counts (115 MB of prompts held a served host at 900 MB)
        quoted = prompt if len(prompt) <= _QUOTED else f"{prompt[:_QUOTED]}… ({len(prompt):,} characters)"
        return [
            say(
                f"Hello! I am the scripted agent behind this AHP host. You said: “{quoted}”.\n\n"
                f"Mention a tool by name to make me call it (available: {names}); write arguments as `key=value`. "
                "Say *ask* for an input request, *think* for reasoning, or *fail* to see a failed turn."
            )
        ]

    async def run_turn(self, ctx: TurnContext) -> None:
        """Run the queued script of this turn, or the built-in scenario for its prompt."""
        steps = self._scripts.pop(ctx.turn_id, None)
        if steps is None:
            steps = self.scenario(ctx.prompt, ctx.tools(), self.mode(ctx.session), ctx.session)
        await run_script(Scope(ctx), steps)

    def _exit_plan(self, session: str | None) -> list[Step]:
        """Leave plan mode: ask which mode to continue in, then switch the session's config."""
        choices = [
            {"id": "code", "label": "Yes, and run tools without asking"},
            {"id": "ask", "label": "Yes, and ask before each tool"},
            {"id": "plan", "label": "No, stay in plan mode"},
        ]

        def switch(scope: Scope) -> str:
            outcome = scope.last_input
            chosen = outcome.value("mode") if outcome is not None and outcome.response == "accept" else None
            ctx = self._sessions.get(session or "")
            if chosen in ("code", "ask") and ctx is not None:
                ctx.update_config({"mode": chosen})
                return f"Switched to {chosen} mode."
            return "Staying in plan mode."

        return [
            say("The plan is ready."),
            ask(
                choice_question("mode", "Ready for implementation?", choices, required=True),
                message="Exit plan mode",
            ),
            then(switch),
        ]


def _describe_answers(scope: Scope) -> str:
    outcome = scope.last_input
    if outcome is None or outcome.response != "accept":
        return f"Understood, you chose to {outcome.response if outcome else 'skip'} the questions."
    parts = []
    for qid, answer in outcome.answers.items():
        if answer.get("state") == "skipped":
            parts.append(f"{qid}: skipped")
        else:
            parts.append(f"{qid}: {json.dumps(outcome.value(qid))}")
    return "Thanks! I got " + (", ".join(parts) if parts else "no answers") + "."
