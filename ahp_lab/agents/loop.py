"""``LoopAgent``: a multi-turn model loop behind the host, extensible from cells (seeds 003 and 004).

Each turn: model call → tool calls → results → model call … until the model answers without a
tool call. The model is pluggable (:class:`~ahp_lab.agents.models.ScriptedModel` by default, no
network; :class:`~ahp_lab.agents.models.OpenAIModel` for an OpenAI-compatible endpoint). Its text
streams into the chat as deltas and its tool calls are ordinary AHP tool calls, exactly like the
scripted agent's::

    from ahp_lab import Lab
    from ahp_lab.agents.loop import LoopAgent
    from ahp_lab.agents.models import ScriptedModel, respond, use
    from ahp_lab.extensions import todo_extension

    agent = LoopAgent(ScriptedModel([respond("Planning.", use("UpdateTodos", todos=[...])), "Done."]),
                      extensions=[todo_extension()])
    lab = Lab(agent=agent)
    await lab.send("plan the release")
    lab.model_calls            # what the model saw, call by call

The history the model sees is kept per turn, in the form it was sent, so it follows the chat: a
truncated chat continues from the kept turns, a fork from the turns it copied. Nothing already sent
is ever rewritten ("never modify a sent prefix"): capability notices are appended when the
inventory changes, and what hooks add goes into a synthetic tail of one call only.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import math
import os
import re
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..extensions import catalog as cat
from ..extensions.config import PROJECT_CONFIG, USER_CONFIG, Workspace
from ..extensions.contract import Extension
from ..extensions.custom_tools import USER_TOOLS
from ..extensions.session import (
    EXECUTE_TOOL,
    SEARCH_TOOLS,
    ExtensionSession,
    check_unique_ids,
    described,
    maybe_await,
    model_text,
)
from ..protocol.jsonvalue import held_back, valid_unicode
from ..tools import FAILURES
from .base import TurnContext, TurnFailed
from .loop_host import LoopHost, SubagentSpec
from .model_calls import ModelCallLog
from .models import (
    Model,
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    ScriptedModel,
    _retry_after,
    checked_response,
)

__all__ = ["LoopAgent", "ToolCallInfo", "ToolResultInfo", "DEFAULT_SYSTEM_PROMPT"]

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful agent working through the Agent Host Protocol. Use the tools you are given; "
    "answer in short markdown."
)


@dataclass(frozen=True)
class ToolCallInfo:
    """What ``before_tool_call`` / ``after_tool_call`` hooks see of a call."""

    id: str
    name: str
    arguments: dict


@dataclass(frozen=True)
class ToolResultInfo:
    """What ``after_tool_call`` hooks see of the result (as the hooks before rewrote it)."""

    ok: bool
    text: str
    status: str  # completed | cancelled | blocked | invalid


_END = object()

#: What a LoopAgent given no model answers every turn with.
NO_MODEL = (
    "(This LoopAgent has no model: give it one with LoopAgent(model=...), say "
    'OpenAIModel("gpt-4o-mini", base_url=..., api_key=...) or ScriptedModel([...]).)'
)
#: What the model is told of a call that its turn ended before it finished.
UNFINISHED = "The call did not finish: the turn ended (cancelled or failed) first, so it has no result."
#: Finish reasons of a complete answer (``None``: the model does not say, as a scripted one).
FINISHED = frozenset({"stop", "tool_calls", "function_call", "end_turn"})
#: A finish reason that cuts the answer short: the turn's ``errorType`` and why, as the ACP
#: bridge maps ``max_tokens`` and ``refusal``.
UNFINISHED_ANSWERS = {
    "length": ("maxTokens", "it reached the model's token limit (finish reason 'length')"),
    "content_filter": ("refusal", "the model's content filter stopped it (finish reason 'content_filter')"),
    "incomplete": ("modelError", "its stream ended before the model said it had finished (no finish reason)"),
}
#: A model's refusal is quoted in the turn's error (``refusal``) up to this many characters.
MAX_REFUSAL_CHARS = 2000


#: A tool name every chat-completions API takes (OpenAI's rule, the strictest): a tool named
#: otherwise (a client's ``ns.tool``, an MCP server's ``files.read``, a long plugin's
#: ``mcp__plugin_…``) would make the API refuse every request that offers it, so the model is
#: offered it under :func:`model_tool_name`.
_MODEL_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_NOT_IN_MODEL_NAMES = re.compile(r"[^A-Za-z0-9_-]+")


def model_tool_name(name: str) -> str:
    """The name the model sees for the tool ``name``: itself when a model's API takes it, else its
    letters, digits, ``_`` and ``-`` (others become ``_``), cut to 55, then ``_`` and 8 hex digits
    of its SHA-256. The same name always gets the same alias, so the history stays consistent from
    one request to the next; two names that meet all the same are told as one name offered twice."""
    if _MODEL_TOOL_NAME.fullmatch(name):
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    readable = _NOT_IN_MODEL_NAMES.sub("_", name).strip("_")[:55] or "tool"
    return f"{readable}_{digest}"


#: A tool's description goes to the model cut to this many characters, and a tool whose input
#: schema is longer than ``MAX_TOOL_SCHEMA_CHARS`` as JSON is not offered: what a client publishes
#: is copied into every request. A request offers at most ``MAX_MODEL_TOOLS`` tools (OpenAI's API
#: refuses more) of ``MAX_TOOLS_CHARS`` characters in all, the extensions' and the server's first.
MAX_TOOL_DESCRIPTION_CHARS = 8192
MAX_TOOL_SCHEMA_CHARS = 65536
MAX_MODEL_TOOLS = 128
MAX_TOOLS_CHARS = 1 << 20
#: A session remembers this many tools it told the person were not offered (each told once).
_MAX_TOLD = 1000


#: Seconds :meth:`LoopAgent.wait_ready` waits by default (``Lab(agent=LoopAgent(...))`` waits so).
READY_TIMEOUT = 30.0


class LoopAgent:
    """A model loop with extensions and custom tools (see the module docstring).

    ``model``: a :class:`~ahp_lab.agents.models.Model` (none given: every turn answers
    :data:`NO_MODEL`, which says how to give one). ``extensions``: :class:`~ahp_lab.extensions.Extension` s. ``custom_tools``: tools or factories
    given in code; ``tool_paths``: more directories or files to discover tools in (relative to the
    workspace); ``user_tools``: the user tool directory (``None`` for none). ``workspace``: a
    :class:`~ahp_lab.extensions.config.Workspace` (default: the current directory, untrusted);
    ``user_config``: the user configuration file. ``hook_timeout``: seconds a hook may take.
    ``max_steps``: model calls per turn at most (a turn still calling tools then ends with
    ``chat/error``, ``maxTurnRequests``; its history is kept). ``call_timeout``: seconds one model call may take,
    from its request to the end of its answer (``None``: no bound), whatever the endpoint streams.
    """

    name = "loop"

    def __init__(
        self,
        model: Model | None = None,
        *,
        extensions: Sequence[Extension] = (),
        custom_tools: Sequence[Any] = (),
        tool_paths: Sequence[Any] = (),
        user_tools: Any = USER_TOOLS,
        workspace: Workspace | None = None,
        user_config: Any = None,
        system_prompt: str = DEFAULT_SYSTEM_PROMPT,
        hook_timeout: float = 2.0,
        max_steps: int = 24,
        call_timeout: float | None = 600.0,
        has_ui: bool = False,
        provider: str = "loop",
        display_name: str = "Loop agent",
    ) -> None:
        self.model = model if model is not None else ScriptedModel(lambda _request: NO_MODEL)
        self.extensions = list(extensions)
        self._told_reports: dict[str, set[str]] = {}  # turn id -> the hook failures told in it
        check_unique_ids(self.extensions)  # here, not when the first session is created from the lab
        self.custom_tools = list(custom_tools)
        self.tool_paths = list(tool_paths)
        self.user_tools = user_tools
        self.workspace = workspace or Workspace.at()
        self.user_config = user_config
        self.system_prompt = system_prompt
        self.hook_timeout = hook_timeout
        self.max_steps = max_steps
        if call_timeout is not None and (
            isinstance(call_timeout, bool)
            or not isinstance(call_timeout, (int, float))
            or not math.isfinite(call_timeout)
            or call_timeout <= 0
        ):
            raise ValueError(
                f"call_timeout must be a number of seconds above 0, or None, not {call_timeout!r}"
            )
        self.call_timeout = call_timeout
        self.has_ui = has_ui
        self.provider = provider
        self.display_name = display_name
        self.model_calls = ModelCallLog()
        self.bridge: LoopHost | None = None
        self._transcripts: dict[str, list[dict]] = {}  # turn id -> the messages of that turn
        self._compactions: dict[str, str] = {}  # turn id -> summary replacing everything up to it
        self._unoffered: dict[str, set[str]] = {}  # session -> tools the person was told of
        self._told_problems: dict[str, int] = {}  # session -> its extension problems told so far

    # -- the agent interface --------------------------------------------------------------------

    def attach(self, host: Any) -> None:
        """Join ``host`` through its extension hooks (the host calls this from ``add_agent``)."""
        if self.bridge is not None and self.bridge.host is host:
            return
        self.bridge = LoopHost(self, host)
        host.extensions.append(self.bridge)
        redactor = getattr(host, "redactor", None)
        if redactor is not None:  # what the model-call record shows is masked as the host's state is
            self.model_calls.redact = redactor.redact

    def code_folders(self) -> list[Path]:
        """The folders this agent loads code or configuration from (its custom tools, the project's
        and the user's ``.ahp_lab``): the host lets no stranger write there, even inside a writable
        folder, or a stranger's file would run in this kernel with the next session."""
        folders = [self.workspace.root / PROJECT_CONFIG.parent, _expanded(USER_CONFIG).parent]
        if self.user_config is not None:
            folders.append(_expanded(self.user_config))
        if self.user_tools is not None:
            folders.append(_expanded(self.user_tools))
        for given in self.tool_paths:
            path = _expanded(given)
            folders.append(path if path.is_absolute() else self.workspace.root / path)
        return folders

    def info(self) -> dict:
        """The ``AgentInfo`` published on the root channel."""
        return {
            "provider": self.provider,
            "displayName": self.display_name,
            "description": "A model loop with extensions (todo, subagents, skills, MCP catalogs) and custom tools.",
            "models": [{"id": self.model.name, "provider": self.provider, "name": self.model.name}],
            "capabilities": {"multipleChats": {"fork": True, "sideChat": True}},
        }

    async def wait_ready(self, session: str, timeout: float | None = None) -> None:
        """Wait until the session's custom tools are loaded, its extensions are active and its
        tools are published; past ``timeout`` seconds (:data:`READY_TIMEOUT` by default), a
        ``TimeoutError`` saying what was awaited."""
        timeout = READY_TIMEOUT if timeout is None else timeout
        es = self.extension_session(session)
        deadline = asyncio.timeout(timeout)
        try:
            async with deadline:
                await es.ready.wait()
                await asyncio.shield(self.bridge.activation(session))
        except TimeoutError:
            if not deadline.expired():
                raise
            raise TimeoutError(
                f"The session's custom tools and extensions were not ready within {timeout:g} s "
                "(a tool factory or an extension's activate is still running); wait longer with "
                f"agent.wait_ready(session, timeout=...), or see agent.extension_session(session).problems."
            ) from None

    def extension_session(self, session: str) -> ExtensionSession:
        """The extensions of a session (their configuration, instances, state, problems)."""
        if self.bridge is None or session not in self.bridge.sessions:
            raise LookupError(f"{session} is not a session of this agent")
        return self.bridge.sessions[session]

    # -- history --------------------------------------------------------------------------------

    def history(self, chat: str, turn_id: str | None = None) -> list[dict]:
        """The messages the model sees for ``chat`` (through ``turn_id`` when it is the active one),
        after the newest compaction on the chat's branch."""
        branch = self.bridge.branch(chat) if self.bridge else []
        if turn_id is not None and turn_id not in branch:
            branch.append(turn_id)
        start, out = 0, []
        for i, tid in enumerate(branch):
            if tid in self._compactions:
                start, out = i + 1, [{"role": "user", "content": self._compactions[tid], "_compaction": True}]
        for tid in branch[start:]:
            out.extend(self._transcripts.get(tid) or self._reconstructed(chat, tid))
        return out

    def _reconstructed(self, chat: str, turn_id: str) -> list[dict]:
        """A turn this agent has no transcript of (say, from an imported log): text only."""
        state = self.bridge.host.store.state(chat) or {} if self.bridge else {}
        for turn in state.get("turns") or ():
            if turn.get("id") == turn_id:
                text = "".join(
                    str(p.get("content") or "")
                    for p in turn.get("responseParts") or ()
                    if p.get("kind") == "markdown"
                )
                msgs = [{"role": "user", "content": str((turn.get("message") or {}).get("text") or "")}]
                return msgs + ([{"role": "assistant", "content": text}] if text else [])
        return []

    def final_text(self, turn_id: str | None) -> str:
        """The last text the model gave in a turn ("" when none)."""
        for message in reversed(self._transcripts.get(turn_id or "") or ()):
            if message.get("role") == "assistant" and message.get("content"):
                return str(message["content"])
        return ""

    def compact(self, chat: str, summary: str | None = None) -> str:
        """Replace the chat's history so far by one summary message (a compaction).

        The next model call starts from the summary; what earlier notices told is gone with them,
        so the capability inventory is sent again in full. Recorded on the chat's newest turn, so
        it follows the conversation tree like everything else. Returns the summary.
        """
        branch = self.bridge.branch(chat) if self.bridge else []
        if not branch:
            raise LookupError("there is nothing to compact in this chat yet")
        if summary is None:
            prompts = [
                m["content"]
                for m in self.history(chat)
                if m.get("role") == "user" and not m.get(cat.NOTICE_META)
            ]
            summary = (
                "Summary of the conversation so far: the user asked "
                + "; then ".join(json.dumps(str(p)[:80], ensure_ascii=False) for p in prompts[-10:])
                + "."
            )
        self._compactions[branch[-1]] = summary
        return summary

    # -- one turn -------------------------------------------------------------------------------

    async def run_turn(self, ctx: TurnContext) -> None:
        """Run the loop for one turn."""
        if self.bridge is None or ctx.session not in self.bridge.sessions:
            raise TurnFailed("this LoopAgent is not attached to the session's host", "agentError")
        es = self.bridge.sessions[ctx.session]
        await es.ready.wait()
        notice = self._problems_notice(ctx.session, es)
        if notice is not None:  # a configuration refused, an extension left out: said where one looks
            await ctx.notify(notice)
        spec = self.bridge.subagents.get(ctx.chat)
        system = spec.instructions if spec is not None and spec.instructions else self.system_prompt
        turn_log = self._transcripts.setdefault(ctx.turn_id, [])
        turn_log.append({"role": "user", "content": await self._expand(es, ctx.prompt)})
        used = [0, 0]  # the turn's input and output tokens so far, over all its model calls
        for _step in range(self.max_steps):
            steering = ctx.take_steering()
            if steering is not None:
                turn_log.append({"role": "user", "content": str(steering.get("text") or "")})
            response, offered = await self._model_call(ctx, es, spec, system, turn_log, used)
            turn_log.append(response.message())
            if not response.tool_calls:
                return
            answered = 0
            try:
                calls = response.tool_calls
                parallel = [es.parallel(offered.get(c.name, c.name)) for c in calls]
                for batch in _batches(calls, parallel):
                    texts = await _together(
                        [
                            self._tool_call(ctx, es, spec, call, offered.get(call.name, call.name))
                            for call in batch
                        ]
                    )
                    for call, text in zip(batch, texts, strict=True):  # in the order the model asked
                        turn_log.append({"role": "tool", "tool_call_id": call.id, "content": text})
                        answered += 1
            finally:
                # A turn that ends here (cancelled, failed) leaves every call the model asked for
                # answered: a request whose assistant tool calls lack their results is refused by
                # the model's API, which would break every later turn of the chat.
                for call in response.tool_calls[answered:]:
                    turn_log.append({"role": "tool", "tool_call_id": call.id, "content": UNFINISHED})
        raise TurnFailed(  # as the ACP bridge ends a turn at an agent's max_turn_requests
            f"The turn stopped after {self.max_steps} model calls (LoopAgent's max_steps): send a "
            "message to let the model go on, or give the agent a higher max_steps.",
            "maxTurnRequests",
        )

    async def _expand(self, es: ExtensionSession, prompt: str) -> str:
        """A message starting with ``/command`` becomes what the command expands it to."""
        if not prompt.startswith("/"):
            return prompt
        head, _, rest = prompt[1:].partition(" ")
        command = es.all_commands().get(head)
        if command is None:
            return prompt
        try:
            return str(await maybe_await(command.expand(rest.strip())))
        except FAILURES as exc:
            raise TurnFailed(f"/{head} failed: {described(exc)}", "commandFailed") from None

    def resident_tools(
        self, es: ExtensionSession, ctx: TurnContext, spec: SubagentSpec | None
    ) -> tuple[list[dict], list[tuple[str, str]], dict[str, str]]:
        """The tools sent with every request: the extensions' (and custom) tools, the catalogs'
        ``SearchTools`` and ``ExecuteTool`` first, then the host's tools that no catalog claims; why each tool the model's API could not take is left out; and
        the tool each name offered stands for (see :func:`model_tool_name`)."""
        exclude = spec.exclude if spec is not None else frozenset()
        enabled = set(d["name"] for d in self.bridge.server_tool_definitions(ctx.session))
        claimed = es.claimed_names()
        offered = []
        # the catalogs' entry tools first: past MAX_MODEL_TOOLS, every catalog entry is out of reach without them
        for name in sorted(es.tools, key=lambda n: n not in (SEARCH_TOOLS, EXECUTE_TOOL)):
            if name in exclude or name not in enabled:
                continue
            d = es.definition(name)
            offered.append((name, d.get("description", ""), d.get("inputSchema") or {}))
        for info in ctx.tools():
            if info.name in es.tools or info.name in claimed or info.name in exclude:
                continue
            offered.append((info.name, info.description, info.input_schema))
        out: list[dict] = []
        left_out: list[tuple[str, str]] = []
        names: dict[str, str] = {}
        total = 0
        for name, description, schema in offered:
            text = (description if isinstance(description, str) else "")[:MAX_TOOL_DESCRIPTION_CHARS]
            schema = schema or {"type": "object"}
            size = len(json.dumps(schema, ensure_ascii=False, default=str)) + len(text)
            alias = model_tool_name(name) if isinstance(name, str) else None
            if alias is None:
                why = "its name is not a string"
            elif alias in names:
                why = "an earlier tool has that name"
            elif not isinstance(schema, dict) or schema.get("type") != "object":
                why = "its input schema is not an object schema"
            elif size - len(text) > MAX_TOOL_SCHEMA_CHARS:
                why = f"its input schema is longer than {MAX_TOOL_SCHEMA_CHARS:,} characters as JSON"
            elif len(out) == MAX_MODEL_TOOLS:
                why = f"a request offers at most {MAX_MODEL_TOOLS} tools"
            elif total + size > MAX_TOOLS_CHARS:
                why = f"the tools before it take the {MAX_TOOLS_CHARS:,} characters a request gives them"
            else:
                names[alias] = name
                total += size
                out.append(_function(alias, text, schema))
                continue
            left_out.append((str(name)[:80], why))
        return out, left_out, names

    def _problems_notice(self, session: str, es: ExtensionSession) -> str | None:
        """One notice naming the session's extension problems the person has not been told of yet."""
        told = self._told_problems.get(session, 0)
        new = es.problems[told:]
        if not new:
            return None
        self._told_problems[session] = len(es.problems)
        shown = " ".join(p[:500] + ("" if p[:500].endswith(".") else ".") for p in new[:5])
        more = (
            f" And {len(new) - 5} more (agent.extension_session(session).problems)." if len(new) > 5 else ""
        )
        return f"The session's extensions met {len(new)} problem{'s' if len(new) != 1 else ''}: {shown}{more}"

    def _unoffered_notice(self, session: str, left_out: list[tuple[str, str]]) -> str | None:
        """One sentence naming the tools not offered that the person has not been told of yet."""
        told = self._unoffered.setdefault(session, set())
        new = [(name, why) for name, why in left_out if name not in told]
        if not new:
            return None
        if len(told) < _MAX_TOLD:
            told.update(name for name, _ in new)
        shown = "; ".join(f"{name!r}: {why}" for name, why in new[:5])
        more = f"; and {len(new) - 5} more" if len(new) > 5 else ""
        return f"Not offered to the model ({len(new)} tool{'s' if len(new) != 1 else ''}): {shown}{more}."

    async def _model_call(
        self,
        ctx: TurnContext,
        es: ExtensionSession,
        spec: SubagentSpec | None,
        system: str,
        turn_log: list[dict],
        used: list[int],
    ) -> tuple[ModelResponse, dict[str, str]]:
        """One model call; returns the answer and the tool each name it was offered stands for.

        ``used`` is the turn's input and output tokens so far: the call's usage is added, and the
        sum is the turn's usage (``chat/usage`` replaces it, so each call reports the total)."""
        failed_catalogs = await es.refresh()
        history = self.history(ctx.chat, ctx.turn_id)
        since = next((i for i in range(len(history) - 1, -1, -1) if history[i].get("_compaction")), 0)
        current = es.inventory()
        notice = cat.render_notice(cat.told_inventory(history[since:]), current)
        if notice is not None:
            message = {"role": "user", "content": notice, cat.NOTICE_META: cat.snapshot(current)}
            turn_log.append(message)
            history.append(message)
            await ctx.notify(notice)
        contexts, reports = await es.before_model_call(ctx.chat, ctx.turn_id)
        reports = [*failed_catalogs, *reports]
        await self._tell(ctx, reports)
        tail = [{"role": "user", "content": text, "_synthetic": ext_id} for ext_id, text in contexts]
        tools, left_out, offered = self.resident_tools(es, ctx, spec)
        notice = self._unoffered_notice(ctx.session, left_out) if left_out else None
        if notice is not None:  # each tool told once a session
            await ctx.notify(notice)
        request = ModelRequest(self.model.name, system, tools, history + tail, len(tail))
        notices = [i for i, m in enumerate(request.messages) if cat.NOTICE_META in m]
        record = self.model_calls.begin(ctx.session, ctx.chat, ctx.turn_id, request, notices)
        record.reports = [str(r) for r in reports]
        redactor = self.bridge.host.redactor
        redactor.add(*self.model.secrets() if hasattr(self.model, "secrets") else ())
        deadline = asyncio.timeout(self.call_timeout)
        said: list[str] = []  # the text shown in the chat so far
        response = None
        try:
            async with deadline:
                response = checked_response(await self._stream(ctx, request, said))
        except asyncio.CancelledError:
            self.model_calls.end(record, error="cancelled")
            raise
        except TurnFailed as exc:
            self.model_calls.end(record, error=redactor.text(str(exc)))
            raise
        except FAILURES as exc:
            if isinstance(exc, TimeoutError) and deadline.expired():
                error = f"The model call took longer than LoopAgent's call_timeout of {self.call_timeout:g} s, so it was stopped."
                self.model_calls.end(record, error=error)
                raise TurnFailed(error, "modelError") from None
            error = redactor.text(f"{type(exc).__name__}: {exc}")  # an API error may quote the key
            wait = _retry_after(exc)
            if wait is None:
                self.model_calls.end(record, error=error)
                raise TurnFailed(f"The model call failed: {error}", "modelError") from None
            self.model_calls.end(record, error=f"{error} (Retry-After: {wait:g} s)")
            raise TurnFailed(
                f"The model call failed, and the endpoint asked to retry after {wait:g} s: {error}",
                "modelError",
            ) from None
        finally:
            if response is None and said:  # what was said stays in the history, as in the chat
                turn_log.append({"role": "assistant", "content": valid_unicode("".join(said))})
        refused = None
        if response.refusal:
            # masked whole, then cut, and told on one line
            said = " ".join(redactor.text(response.refusal).split())
            if len(said) > MAX_REFUSAL_CHARS:
                said = said[:MAX_REFUSAL_CHARS] + "…"
            refused = f"The model refused to answer: {said}" + (
                "" if said.endswith((".", "!", "?", "…")) else "."
            )
        self.model_calls.end(record, response, error=refused)
        if response.usage:
            for i, key in enumerate(("inputTokens", "outputTokens")):
                used[i] = min(used[i] + int(response.usage.get(key) or 0), (1 << 53) - 1)
            await ctx.usage(used[0], used[1], response.model or self.model.name)
        if refused is not None:
            if response.text:  # what was said stays in the history, as it stays in the chat
                turn_log.append({"role": "assistant", "content": response.text})
            raise TurnFailed(refused, "refusal")
        if response.finish_reason is not None and response.finish_reason not in FINISHED:
            kind, why = UNFINISHED_ANSWERS.get(
                response.finish_reason, ("modelError", f"the model stopped ({response.finish_reason!r})")
            )
            if response.text:  # what was said stays in the history, as it stays in the chat
                turn_log.append({"role": "assistant", "content": response.text})
            raise TurnFailed(f"The model's answer is incomplete: {why}.", kind)
        return response, offered

    async def _stream(self, ctx: TurnContext, request: ModelRequest, said: list[str]) -> ModelResponse:
        """Stream the model's answer into the chat (text and reasoning as deltas); the text shown
        goes into ``said`` as it is shown."""
        events = self.model.stream(request).__aiter__()
        pending: Any = _END

        async def run_of(kind: str, first: str):
            nonlocal pending
            yield first
            async for ev in events:
                if ev.kind != kind:
                    pending = ev
                    return
                yield ev.text
            pending = None

        async def pieces(kind: str, first: str):
            # A character the endpoint split between two chunks (two UTF-16 halves) goes into the
            # chat whole: a first half waits for the next piece of the run.
            held = ""
            async for text in run_of(kind, first):
                text, held = held_back(held + text)
                if text:
                    if kind == "text":
                        said.append(text)
                    yield text
            if held:
                if kind == "text":
                    said.append(held)
                yield held  # never completed: the host shows it as U+FFFD

        streamed: set[str] = set()
        ev: Any = await anext(events, None)
        while ev is not None:
            if ev.kind == "done":
                response = ev.response
                if response.reasoning and "reasoning" not in streamed:  # a model that did not stream it
                    await ctx.think(response.reasoning)
                if response.text and "text" not in streamed:
                    said.append(response.text)
                    await ctx.say(response.text)
                return response
            if ev.kind in ("text", "reasoning"):
                streamed.add(ev.kind)
                pending = None
                await (ctx.say if ev.kind == "text" else ctx.think)(pieces(ev.kind, ev.text))
                ev = pending
            else:
                ev = await anext(events, None)
        raise TurnFailed("The model's stream ended without a response.", "modelError")

    async def _tool_call(
        self,
        ctx: TurnContext,
        es: ExtensionSession,
        spec: SubagentSpec | None,
        call: ModelToolCall,
        name: str,
    ) -> str:
        """Run one tool call the model asked for, of the tool ``name`` (the one that the name the
        model called stands for); returns what the model is told."""
        try:
            arguments = json.loads(call.arguments or "{}")
        except ValueError as exc:
            arguments = None
            problem = f"The arguments of {name} are not valid JSON ({exc.msg}); nothing was run."
        except RecursionError:
            arguments = None
            problem = f"The arguments of {name} nest too deep to be read; nothing was run."
        else:
            problem = (
                None
                if isinstance(arguments, dict)
                else f"The arguments of {name} must be a JSON object; nothing was run."
            )
        # the hooks get a copy: they may block the call, not change what runs behind the model's back
        info = ToolCallInfo(call.id, name, copy.deepcopy(arguments) if isinstance(arguments, dict) else {})
        if problem is None and spec is not None and name in spec.exclude:
            problem = f"The tool {name} is not available to a subagent."
        if problem is not None:
            await ctx.notify(problem)
            return problem
        block, reports = await es.before_tool_call(ctx.chat, ctx.turn_id, info)
        await self._tell(ctx, reports)
        if block is not None:
            text = f"The call of {name} was blocked by {block}."
            await ctx.notify(text)
            result = ToolResultInfo(False, text, "blocked")
        else:
            outcome = await ctx.call_tool(name, arguments)
            if outcome.status == "cancelled":
                text = f"The call was cancelled ({outcome.reason or 'cancelled'}){': ' + outcome.message if outcome.message else ''}."
            elif outcome.ok:
                text = model_text(outcome.tool_call_id) or outcome.text or outcome.message or "(no output)"
            else:
                text = f"Error: {outcome.error or outcome.text or outcome.message or 'the tool failed'}"
            result = ToolResultInfo(outcome.ok, text, outcome.status)
        result, reports = await es.after_tool_call(ctx.chat, ctx.turn_id, info, result)
        await self._tell(ctx, reports)
        return valid_unicode(str(result.text))  # the history is sent again with every request

    async def _tell(self, ctx: Any, reports: list) -> None:
        """Tell the chat of failed hooks, each once a turn: a hook failing on every model call of a
        turn made as many identical notices (each call's record keeps them all)."""
        told = self._told_reports.setdefault(ctx.turn_id, set())
        if len(self._told_reports) > 64:
            del self._told_reports[next(iter(self._told_reports))]
        for report in reports:
            text = f"Extension hook {report}."
            if text not in told:
                told.add(text)
                await ctx.notify(text)

    def __repr__(self) -> str:
        return f"<LoopAgent model={self.model!r} extensions={[e.id for e in self.extensions]}>"


def _batches(calls: list, parallel: list[bool]) -> list[list]:
    """The model's calls in the groups that run together: each run of parallel calls next to each
    other (``parallel[i]``) is one group, and every other call a group of its own."""
    batches: list[list] = []
    for i, call in enumerate(calls):
        if i and parallel[i] and parallel[i - 1]:
            batches[-1].append(call)
        else:
            batches.append([call])
    return batches


async def _together(calls: list[Coroutine]) -> list[str]:
    """Run the calls at once; one that fails (or a cancel) cancels the others."""
    if len(calls) == 1:
        return [await calls[0]]
    tasks = [asyncio.ensure_future(c) for c in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        raise


def _function(name: str, description: str, schema: dict) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description or "",
            "parameters": schema or {"type": "object"},
        },
    }


def _expanded(path: Any) -> Path:
    return Path(os.path.expanduser(os.fspath(path)))
