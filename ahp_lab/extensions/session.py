"""The framework side of the contract: the extensions of one session, run by the rules.

:class:`ExtensionSession` activates each extension (configuration behind the trust boundary,
``lifecycle.activate``), keeps session state per turn so that it follows the conversation tree,
runs hooks under deadlines (a hook that raises or times out is reported and skipped), wraps
resident tools as host-executed :class:`~ahp_lab.tools.Tool` s, and serves the catalogs through
``SearchTools`` / ``ExecuteTool`` and capability inventories.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..protocol.customizations import effective_enabled
from ..tools import FAILURES, Tool, ToolError, content_blocks, first_error, success_result
from . import catalog as cat
from .config import Workspace, layers_for, resolve_configuration
from .contract import Block, CatalogEntry, Extension, ExtensionTool, ToolResult
from .runtime import Command, ExtensionRuntime, HostServices, ToolCall

__all__ = [
    "ExtensionSession",
    "SEARCH_TOOLS",
    "EXECUTE_TOOL",
    "HookReport",
    "check_unique_ids",
    "maybe_await",
]

log = logging.getLogger("ahp_lab.extensions")


def check_unique_ids(extensions: Sequence[Extension]) -> None:
    """``ValueError`` when two extensions have one id (their state and config are kept by id)."""
    ids = [e.id for e in extensions]
    dup = next((i for i in ids if ids.count(i) > 1), None)
    if dup is not None:
        raise ValueError(f"two extensions have the id {dup!r}: each needs its own")


class _Late(TimeoutError):
    """The deadline of :func:`_within` passed (told apart from a ``TimeoutError`` the work raised)."""


async def _within(work: Any, timeout: float) -> Any:
    """Await ``work`` for at most ``timeout`` seconds, else ``TimeoutError`` (a ``_Late``).

    Unlike ``asyncio.wait_for``, the deadline holds when the work ignores its cancellation: it is
    cancelled and left to end by itself (what it returns or raises then is dropped).
    """
    task = asyncio.ensure_future(work)
    try:
        done, _ = await asyncio.wait((task,), timeout=timeout)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if not done:
        task.cancel()
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        raise _Late
    return task.result()


SEARCH_TOOLS = "SearchTools"
EXECUTE_TOOL = "ExecuteTool"


async def maybe_await(value: Any) -> Any:
    """``await value`` when it is awaitable, else ``value``."""
    return await value if inspect.isawaitable(value) else value


#: Seconds an extension's ``activate`` may take; past it the extension is left out of the session.
ACTIVATE_TIMEOUT = 20.0
#: Seconds a catalog's ``discover`` may take; past it the catalog keeps what it last found.
CATALOG_TIMEOUT = 10.0


def described(exc: BaseException) -> str:
    """``"ValueError: the message"``, or the exception's name alone when it has no message."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text.strip() else type(exc).__name__


class HookReport:
    """A hook that failed or ran past its deadline: skipped for this call, reported in one line."""

    def __init__(self, extension_id: str, hook: str, message: str) -> None:
        self.extension_id = extension_id
        self.hook = hook
        self.message = message

    def __str__(self) -> str:
        return f"{self.extension_id}.{self.hook} {self.message}; skipped for this call"

    def __repr__(self) -> str:
        return f"<HookReport {self}>"


class _SearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(
        max_length=1000, description="Tool names or words to look for, e.g. 'github create_issue'."
    )


class _ExecuteArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    toolRef: str = Field(description="The toolRef SearchTools returned.")
    arguments: dict = Field(default_factory=dict, description="The tool's input, per its input schema.")


def _model_tool(name: str, title: str, description: str, model: type[BaseModel], run: Callable) -> Tool:
    """A host-executed Tool whose input is validated by ``model`` and passed whole to ``run``."""

    async def fn(args: Any, *, ctx: Any) -> Any:
        return await run(args, ctx)

    fn.__annotations__ = {"args": model, "ctx": Any, "return": Any}
    return Tool(fn, name=name, title=title, description=description, timeout=None)


class _NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


#: Tool call id -> what the model is told of a result that shows the person other content
#: (``ToolResult(text, content=...)``), until the agent reads it (:func:`model_text`); the latest
#: 256 at most.
_MODEL_TEXTS: dict[str, str] = {}


def model_text(call_id: str) -> str | None:
    """The text for the model of tool call ``call_id``'s result, when it differs from the content
    the call shows (taken once)."""
    return _MODEL_TEXTS.pop(call_id, None)


def ahp_result(value: Any, title: str, call_id: str | None = None) -> Any:
    """A :class:`ToolResult` (or text / JSON) as what the host's tool runner accepts. The result
    shows its ``content`` when it has some, and the model is told its ``text``
    (:func:`model_text`, by ``call_id``)."""
    if not isinstance(value, ToolResult):
        return value
    if value.content is not None and value.text and call_id is not None:
        if len(_MODEL_TEXTS) >= 256:
            del _MODEL_TEXTS[next(iter(_MODEL_TEXTS))]
        _MODEL_TEXTS[call_id] = value.text
    content = content_blocks(value.content if value.content is not None else value.text)
    if value.is_error:
        raise ToolError(value.text or "the tool failed")
    structured = None
    if value.details is not None:
        details = json.loads(json.dumps(value.details, default=str))
        structured = details if isinstance(details, dict) else {"result": details}
    return success_result(title, content, structured)


class ExtensionSession:
    """The extensions of one session (see the module docstring)."""

    def __init__(
        self,
        session: str,
        extensions: Sequence[Extension],
        services: HostServices,
        *,
        workspace: Workspace,
        user_config: Any = None,
        hook_timeout: float = 2.0,
        extra_tools: Sequence[Tool] = (),
    ) -> None:
        check_unique_ids(extensions)
        self.session = session
        self.extensions = list(extensions)
        self.services = services
        self.workspace = workspace
        self.user_config = user_config
        self.hook_timeout = hook_timeout
        self.configs: dict[str, Any] = {}
        self.instances: dict[str, Any] = {}
        self.problems: list[str] = []
        self.commands: dict[str, Command] = {}
        self.command_providers: list[Callable[[], list[Command]]] = []
        self._states: dict[str, dict[str, Any]] = {}  # turn id -> extension id -> state after it
        self._entries: dict[str, dict[str, CatalogEntry]] = {}  # catalog key -> name -> entry
        self._dirty: set[str] = set()
        self._unsubscribe: list[Callable[[], Any]] = []
        self.ready = asyncio.Event()
        self.tools: dict[str, Tool] = {}
        self._extra: list[Tool] = list(extra_tools)
        self._build_tools()

    # -- lifecycle ------------------------------------------------------------------------------

    def _logger(self, extension_id: str) -> logging.Logger:
        return log.getChild(extension_id)

    def runtime(
        self, extension_id: str, chat: str | None = None, turn_id: str | None = None
    ) -> ExtensionRuntime:
        """The runtime an extension's hook or tool gets."""
        return ExtensionRuntime(
            extension_id,
            self.session,
            self.configs.get(extension_id),
            self.workspace,
            self._logger(extension_id),
            self.instances.get(extension_id),
            chat,
            turn_id,
            self,
        )

    async def activate(self) -> None:
        """Resolve configurations, run ``activate``, subscribe catalogs. Problems are collected,
        never raised: an extension that fails to activate is left out of the session."""
        layers = layers_for(self.workspace, self.user_config)
        failed: list[str] = []
        for ext in self.extensions:
            if ext.configuration is not None:
                value, problems = resolve_configuration(ext.id, ext.configuration, layers)
                self.configs[ext.id] = value
                self.problems.extend(problems)
            lifecycle = ext.lifecycle
            if lifecycle is not None and lifecycle.activate is not None:
                try:
                    self.instances[ext.id] = await _within(
                        maybe_await(lifecycle.activate(self.runtime(ext.id))), ACTIVATE_TIMEOUT
                    )
                except FAILURES as exc:  # reported; the other extensions go on
                    self.problems.append(
                        f"{ext.id} did not activate within {ACTIVATE_TIMEOUT:g} s; it is left out of the session."
                        if isinstance(exc, TimeoutError)
                        else f"{ext.id} failed to activate: {described(exc)}."
                    )
                    failed.append(ext.id)
                    continue
            for c in ext.catalogs:
                key = f"{ext.id}.{c.id}"
                self._dirty.add(key)
                if c.subscribe is not None:
                    try:
                        off = c.subscribe(self.runtime(ext.id), lambda key=key: self._dirty.add(key))
                    except FAILURES as exc:
                        self.problems.append(f"{ext.id}.{c.id} could not subscribe: {described(exc)}.")
                    else:
                        if callable(off):
                            self._unsubscribe.append(off)
        if failed:
            self.extensions = [e for e in self.extensions if e.id not in failed]
            self._build_tools()
        for problem in self.problems:
            log.warning("%s: %s", self.session, problem)
        self.ready.set()

    async def deactivate(self) -> None:
        """Unsubscribe catalogs and run every ``deactivate`` (errors are logged, never raised)."""
        for off in self._unsubscribe:
            with contextlib.suppress(Exception):
                off()
        self._unsubscribe.clear()
        for ext in reversed(self.extensions):
            lifecycle = ext.lifecycle
            if lifecycle is None or lifecycle.deactivate is None or ext.id not in self.instances:
                continue
            try:
                await maybe_await(lifecycle.deactivate(self.instances.pop(ext.id)))
            except FAILURES:
                self._logger(ext.id).exception("deactivate failed")

    def all_commands(self) -> dict[str, Command]:
        """Every slash command now: the registered ones and those the providers list (a name
        already taken keeps its first owner)."""
        out = dict(self.commands)
        for provider in self.command_providers:
            try:
                for c in provider():
                    out.setdefault(c.name, c)
            except FAILURES:
                log.exception("a command provider failed")
        return out

    # -- session state ----------------------------------------------------------------------------

    def _declaration(self, extension_id: str) -> Any:
        ext = next((e for e in self.extensions if e.id == extension_id), None)
        if ext is None or ext.session_state is None:
            raise ToolError(f"the extension {extension_id} declares no session_state")
        return ext.session_state

    def state_value(self, extension_id: str, chat: str, turn_id: str | None) -> Any:
        """The state as of ``turn_id`` in ``chat``'s conversation: the newest recorded value on
        its branch (the turns the chat holds, then the current one), else the default."""
        decl = self._declaration(extension_id)
        branch = self.services.branch(chat)
        if turn_id is not None and turn_id not in branch:
            branch = [*branch, turn_id]
        for tid in reversed(branch):
            recorded = self._states.get(tid)
            if recorded is not None and extension_id in recorded:
                return recorded[extension_id]
        default = decl.default if decl.default is not None else decl.schema()
        return decl.schema.model_validate(default) if not isinstance(default, decl.schema) else default

    def record_state(self, extension_id: str, chat: str, turn_id: str, value: Any) -> Any:
        decl = self._declaration(extension_id)
        try:
            data = value.model_dump() if isinstance(value, BaseModel) else value
            validated = decl.schema.model_validate(data)
        except ValidationError as exc:
            at, why = first_error(exc, "state")
            raise ToolError(f"the new session state of {extension_id} was refused: {at} {why}") from None
        self._states.setdefault(turn_id, {})[extension_id] = validated
        self.services.record_state(self.session, turn_id, extension_id, validated.model_dump(mode="json"))
        return validated

    def state_history(self, extension_id: str, chat: str) -> list[tuple[str, Any]]:
        """``(turn id, state)`` for each turn of the chat's branch that changed the state."""
        return [
            (tid, self._states[tid][extension_id])
            for tid in self.services.branch(chat)
            if extension_id in self._states.get(tid, {})
        ]

    # -- hooks ----------------------------------------------------------------------------------

    async def _run_hook(
        self, ext: Extension, name: str, fn: Callable, *args: Any
    ) -> tuple[Any, HookReport | None]:
        timeout = ext.hooks.timeout if ext.hooks and ext.hooks.timeout is not None else self.hook_timeout
        started = time.monotonic()
        try:
            value = fn(*args)
            if inspect.isawaitable(value):
                value = await _within(value, timeout)
            elif time.monotonic() - started > timeout:
                return None, HookReport(ext.id, name, f"ran past its {timeout:g} s deadline")
            return value, None
        except TimeoutError:
            return None, HookReport(ext.id, name, f"did not finish within its {timeout:g} s deadline")
        except (asyncio.CancelledError, GeneratorExit):
            raise
        except FAILURES as exc:
            return None, HookReport(ext.id, name, f"raised {described(exc)}")

    async def before_model_call(
        self, chat: str, turn_id: str
    ) -> tuple[list[tuple[str, str]], list[HookReport]]:
        """Each extension's context for this call (``(extension id, text)``) and the reports."""
        contexts: list[tuple[str, str]] = []
        reports: list[HookReport] = []
        for ext in self.extensions:
            fn = ext.hooks.before_model_call if ext.hooks else None
            if fn is None:
                continue
            value, report = await self._run_hook(
                ext, "before_model_call", fn, self.runtime(ext.id, chat, turn_id)
            )
            if report is not None:
                reports.append(report)
                continue
            if isinstance(value, dict) and "context" in value:
                value = value["context"]
            if value is None or value == "":
                continue
            if not isinstance(value, str):
                reports.append(
                    HookReport(
                        ext.id,
                        "before_model_call",
                        f"returned an object of type {type(value).__name__}, not text",
                    )
                )
                continue
            contexts.append((ext.id, value))
        return contexts, reports

    async def before_tool_call(
        self, chat: str, turn_id: str, call: Any
    ) -> tuple[str | None, list[HookReport]]:
        """The first block reason (``"<extension>: <reason>"``) or ``None``, and the reports."""
        reports: list[HookReport] = []
        for ext in self.extensions:
            fn = ext.hooks.before_tool_call if ext.hooks else None
            if fn is None:
                continue
            value, report = await self._run_hook(
                ext, "before_tool_call", fn, self.runtime(ext.id, chat, turn_id), call
            )
            if report is not None:
                reports.append(report)
            elif isinstance(value, Block):
                return f"{ext.id}: {value.reason}", reports
            elif value is not None:
                reports.append(
                    HookReport(
                        ext.id,
                        "before_tool_call",
                        f"returned an object of type {type(value).__name__}, not a Block or None",
                    )
                )
        return None, reports

    async def after_tool_call(
        self, chat: str, turn_id: str, call: Any, result: Any
    ) -> tuple[Any, list[HookReport]]:
        """The result the model is told (``result``, or as the hooks rewrote it) and the reports.

        A hook may return a :class:`ToolResult`: its ``text`` (and ``is_error``) replace what the
        model is told, and the hooks after it see the rewrite (seed 004's ``tool_result``).
        """
        reports: list[HookReport] = []
        for ext in self.extensions:
            fn = ext.hooks.after_tool_call if ext.hooks else None
            if fn is None:
                continue
            value, report = await self._run_hook(
                ext, "after_tool_call", fn, self.runtime(ext.id, chat, turn_id), call, result
            )
            if report is not None:
                reports.append(report)
            elif isinstance(value, ToolResult):
                if not isinstance(value.text, str):
                    reports.append(
                        HookReport(
                            ext.id,
                            "after_tool_call",
                            f"rewrote the text as a {type(value.text).__name__}, not text",
                        )
                    )
                    continue
                ok = not value.is_error
                result = replace(result, ok=ok, text=value.text if ok else f"Error: {value.text}")
            elif value is not None:
                reports.append(
                    HookReport(
                        ext.id,
                        "after_tool_call",
                        f"returned an object of type {type(value).__name__}, not a ToolResult or None",
                    )
                )
        return result, reports

    # -- resident tools ---------------------------------------------------------------------------

    def set_extra_tools(self, tools: Sequence[Tool]) -> None:
        """Add tools that are not an extension's (custom tools); they are resident too."""
        self._extra = list(tools)
        self._build_tools()

    def _problem(self, problem: str) -> None:
        """Note a problem once (the tools are built again when an extension is left out)."""
        if problem not in self.problems:
            self.problems.append(problem)

    def _build_tools(self) -> None:
        tools: dict[str, Tool] = {}
        owners: dict[str, str] = {}
        for ext in self.extensions:
            for t in ext.tools:
                if t.name in tools:  # the first keeps it; the session is created without the other
                    self._problem(
                        f"{ext.id} defines the tool {t.name!r}, which {owners[t.name]} defines too: "
                        f"{ext.id}'s is left out."
                    )
                    continue
                tools[t.name] = self._wrap(ext, t)
                owners[t.name] = ext.id
        if any(c.inventory != "skill" for e in self.extensions for c in e.catalogs):
            for name in (SEARCH_TOOLS, EXECUTE_TOOL):
                if tools.pop(name, None) is not None:  # the catalogs' own tools need the name
                    self._problem(
                        f"{owners[name]} defines the tool {name!r}, the name of the tool that searches "
                        f"the extensions' catalogs: {owners[name]}'s is left out."
                    )
            tools[SEARCH_TOOLS] = _model_tool(
                SEARCH_TOOLS,
                "Search tools",
                "Find on-demand tools by name or words; returns each match's toolRef, description and input schema.",
                _SearchArgs,
                self._search_tool,
            )
            tools[EXECUTE_TOOL] = _model_tool(
                EXECUTE_TOOL,
                "Execute tool",
                "Run an on-demand tool by the toolRef SearchTools returned, with its arguments.",
                _ExecuteArgs,
                self._execute_tool,
            )
        for t in self._extra:
            if t.name in tools:
                raise ValueError(f"the tool {t.name!r} clashes with an extension's tool")
            tools[t.name] = t
        skill_lists = [
            f"{e.id}.{c.id}" for e in self.extensions for c in e.catalogs if c.inventory == "skill"
        ]
        if skill_lists and "Skill" not in tools:  # the notice tells the model to load skills with it
            self._problem(
                f"{', '.join(skill_lists)} lists skills, but no extension of the session offers the Skill "
                "tool that loads them (skills_extension() does)"
            )
        self.tools = tools
        self._parallel = {
            t.name
            for e in self.extensions
            for t in e.tools
            if t.execution_mode == "parallel" and t.name in tools
        }
        # built once: a pydantic JSON schema costs far more than a model call's other preparation
        self._definitions = {name: t.definition() for name, t in tools.items()}

    def _call(self, name: str, args: Any, ctx: Any) -> ToolCall:
        return ToolCall(ctx.call_id, name, args, ctx.chat, ctx.turn_id, ctx.update, ctx.cancelled, self)

    def _wrap(self, ext: Extension, t: ExtensionTool) -> Tool:
        title = t.title or t.name

        async def run(args: Any, ctx: Any) -> Any:
            call = self._call(t.name, args, ctx)
            try:
                value = await maybe_await(t.execute(self.runtime(ext.id, ctx.chat, ctx.turn_id), call))
            except asyncio.CancelledError:
                call.cancelled.set()
                raise
            return ahp_result(value, title, ctx.call_id)

        tool = _model_tool(t.name, title, t.description, t.parameters or _NoArgs, run)
        tool.confirm = t.confirm
        return tool

    def parallel(self, name: str) -> bool:
        """Whether the tool ``name`` runs together with the parallel calls next to it (an extension
        tool whose ``execution_mode`` is ``"parallel"``); every other tool runs alone."""
        return name in self._parallel

    def definitions(self) -> list[dict]:
        """The resident tools' ``ToolDefinition`` s (what the session's ``serverTools`` lists)."""
        return list(self._definitions.values())

    def definition(self, name: str) -> dict:
        """One resident tool's ``ToolDefinition``."""
        return self._definitions[name]

    # -- catalogs -------------------------------------------------------------------------------

    def invalidate(self, extension_id: str | None = None) -> None:
        """Mark catalogs (one extension's, or all) to be discovered again before the next use."""
        for ext in self.extensions:
            if extension_id in (None, ext.id):
                self._dirty.update(f"{ext.id}.{c.id}" for c in ext.catalogs)

    async def refresh(self) -> list[HookReport]:
        """Discover the catalogs that changed (and those without a subscription, every time).

        A ``discover`` that fails or runs past :data:`CATALOG_TIMEOUT` is reported and asked again
        before the next call; meanwhile its catalog keeps the entries it last found, so the model
        is not told that they were removed.
        """
        reports = []
        for ext in self.extensions:
            for c in ext.catalogs:
                key = f"{ext.id}.{c.id}"
                if c.subscribe is not None and key not in self._dirty and key in self._entries:
                    continue
                self._dirty.discard(key)
                try:
                    found = await _within(maybe_await(c.discover(self.runtime(ext.id))), CATALOG_TIMEOUT)
                except FAILURES as exc:  # its last entries stay; asked again before the next call
                    why = (
                        f"did not finish within {CATALOG_TIMEOUT:g} s"
                        if isinstance(exc, TimeoutError)
                        else f"failed: {described(exc)}"
                    )
                    reports.append(HookReport(ext.id, f"{c.id}.discover", why))
                    self._dirty.add(key)
                    continue
                self._entries[key] = {e.name: e for e in found or () if isinstance(e, CatalogEntry)}
        return reports

    def catalog_entries(self, *, include_skills: bool = False) -> list[tuple[str, str, CatalogEntry]]:
        """``(ref, section, entry)`` for every known catalog entry, in declaration order."""
        out = []
        for ext in self.extensions:
            for c in ext.catalogs:
                if c.inventory == "skill" and not include_skills:
                    continue
                key = f"{ext.id}.{c.id}"
                for name, entry in (self._entries.get(key) or {}).items():
                    out.append((f"{key}/{name}", c.inventory, entry))
        return out

    def inventory(self) -> dict[str, dict[str, tuple[str | None, str, str]]]:
        """The current capability inventory: ``{section: {name: (group, description, fingerprint)}}``."""
        out: dict[str, dict[str, tuple[str | None, str, str]]] = {}
        for _ref, section, e in self.catalog_entries(include_skills=True):
            out.setdefault(section, {})[e.name] = (
                e.group,
                e.description,
                cat.fingerprint(e.description, e.schema()),
            )
        return out

    def claimed_names(self) -> set[str]:
        """Names of catalog entries: host tools by these names are not resident."""
        return {e.name for _r, _s, e in self.catalog_entries(include_skills=True)}

    async def _search_tool(self, args: _SearchArgs, ctx: Any) -> Any:
        await self.refresh()
        entries = {ref: e for ref, _s, e in self.catalog_entries()}
        refs = cat.search(((ref, e.name, e.description) for ref, e in entries.items()), args.query)
        return [
            {
                "toolRef": ref,
                "name": entries[ref].name,
                "description": entries[ref].description,
                "inputSchema": entries[ref].schema(),
            }
            for ref in refs
        ]

    async def _execute_tool(self, args: _ExecuteArgs, ctx: Any) -> Any:
        await self.refresh()
        key, _, name = args.toolRef.partition("/")
        entry = (self._entries.get(key) or {}).get(name)
        if entry is None:
            raise ToolError(
                f"the toolRef {args.toolRef!r} names no tool any more (it may have been removed); "
                "search again with SearchTools"
            )
        if entry.execute is None:
            raise ToolError(
                f"{entry.name} is listed for information only: its catalog gives no way to run it"
            )
        ext_id = key.rsplit(".", 1)[0]
        arguments: Any = args.arguments
        if entry.parameters is not None:
            try:
                arguments = entry.parameters.model_validate(arguments)
            except ValidationError as exc:
                at, why = first_error(exc)
                raise ToolError(f"{entry.name}: argument '{at}' {why}") from None
        call = self._call(entry.name, arguments, ctx)
        try:
            value = await maybe_await(entry.execute(self.runtime(ext_id, ctx.chat, ctx.turn_id), call))
        except asyncio.CancelledError:
            call.cancelled.set()
            raise
        return ahp_result(value, entry.name, ctx.call_id)

    # -- customizations -------------------------------------------------------------------------

    def customizations(self, type_: str | None = None) -> list[dict]:
        tree = self.services.customizations(self.session)
        effective = effective_enabled(tree)
        out = []
        for container in tree if isinstance(tree, list) else ():
            if not isinstance(container, dict):
                continue
            children = container.get("children") if isinstance(container.get("children"), list) else []
            for item in [container, *children]:
                if not isinstance(item, dict) or (type_ is not None and item.get("type") != type_):
                    continue
                if not effective.get(item.get("id"), False):
                    continue
                out.append(
                    {**item, "_container": container.get("uri"), "_clientId": container.get("clientId")}
                )
        return out
