"""Custom tools (seed 004): Python modules exporting a factory, discovered from directories.

A tool module defines ``factory(api)`` (or ``default``), which receives a :class:`CustomToolAPI`
(``cwd``, ``exec`` with cancellation, ``logger``, ``has_ui``) and returns one :class:`CustomTool`, a
list of them, or an awaitable of either::

    from pydantic import BaseModel
    from ahp_lab.extensions import CustomTool

    class Args(BaseModel):
        pattern: str = "*.py"

    def factory(api):
        async def execute(call_id, params, on_update, ctx, cancel):
            await on_update("Scanning files...")
            result = await api.exec("ls", [], cancel=cancel)
            return f"{len(result.stdout.split())} entries"
        return CustomTool(name="repo_stats", description="Counts files", parameters=Args, execute=execute)

``execute(call_id, params, on_update, ctx, cancel)``: ``params`` is validated by ``parameters``
first; ``on_update(content)`` streams a partial result; ``ctx`` has the session, chat and turn and
``abort()``; ``cancel`` is an ``asyncio.Event`` set when the call is cancelled (the coroutine is
cancelled too, and ``api.exec`` kills its process). Raising fails the call with the message.
A plain ``def execute`` runs on the host's event loop and holds it until it returns (no cancel,
no widget, no socket meanwhile): long work belongs in an ``async def`` (``api.exec``, or
``await asyncio.to_thread(...)`` for blocking code that touches neither ``on_update`` nor ``ctx``).
It returns text, seed 004's ``{"content": [blocks], "details": ...}`` (the blocks are the call's
content and what the model is told, ``details`` its structured result; see :func:`seed_result`),
a :class:`~ahp_lab.extensions.ToolResult`, or any other JSON value (shown as its JSON).
Optional ``on_session(event)`` hears ``start``, ``branch``, ``tree`` and ``shutdown`` (its errors
are logged as warnings); optional ``render_call(args)`` / ``render_result(result)`` draw the call in
a notebook (their errors fall back to the default text).

Discovery (:func:`discover_tools`): the user directory (``~/.ahp_lab/tools``), the project
directory (``<workspace>/.ahp_lab/tools``, only when the workspace is trusted) and configured
paths; ``~`` is expanded, relative paths are taken from the workspace; a path that resolves to one
already seen is skipped; ``.md`` and ``.json`` files are metadata and never executed; a name that
clashes with a built-in or an already loaded tool is rejected with a message; a module that fails
to import is listed with its error and the rest load. A factory that returns an awaitable is given
:data:`FACTORY_TIMEOUT` seconds to finish (a discovery's factories run together); one that runs
past it is listed like a failing one (its file named in the folder's message) and the rest load.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.util
import inspect
import logging
import os
import signal
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..tools import FAILURES, Tool, ToolError
from .config import Workspace
from .contract import ToolResult
from .session import _Late, _within

__all__ = [
    "CustomTool",
    "CustomToolAPI",
    "CustomToolContext",
    "ExecResult",
    "ToolSource",
    "Discovery",
    "discover_tools",
    "load_custom_tools",
    "USER_TOOLS",
    "PROJECT_TOOLS",
    "METADATA_SUFFIXES",
    "FACTORY_TIMEOUT",
]

log = logging.getLogger("ahp_lab.custom_tools")

#: The user-level tool directory.
USER_TOOLS = Path("~/.ahp_lab/tools")
#: The project-level tool directory, relative to the workspace (read only when trusted).
PROJECT_TOOLS = Path(".ahp_lab/tools")
#: Files beside tool modules that describe them: never executed.
METADATA_SUFFIXES = (".md", ".json")
#: Seconds a factory's awaitable may take; past it the factory's tools are left out.
FACTORY_TIMEOUT = 10.0


@dataclass
class CustomTool:
    """A tool the model can call (see the module docstring for ``execute``'s signature)."""

    name: str
    description: str
    execute: Callable[..., Any]
    parameters: type[BaseModel] | None = None
    label: str | None = None
    on_session: Callable[[dict], Any] | None = None
    render_call: Callable[[Any], Any] | None = None
    render_result: Callable[[Any], Any] | None = None


@dataclass
class ExecResult:
    """What :meth:`CustomToolAPI.exec` returns."""

    stdout: str
    stderr: str
    code: int | None
    killed: bool = False


@dataclass
class CustomToolContext:
    """The ``ctx`` of ``execute``: where the call runs, and ``abort()`` to cancel the turn."""

    session: str
    chat: str
    turn_id: str
    call_id: str
    _abort: Callable[[], None] = field(repr=False, default=lambda: None)

    def abort(self) -> None:
        """Cancel the current turn (the agent stops; this call is cancelled with it)."""
        self._abort()


class CustomToolAPI:
    """What a tool factory receives."""

    def __init__(self, cwd: Path, *, has_ui: bool = False, logger: logging.Logger | None = None) -> None:
        self.cwd = Path(cwd)
        self.has_ui = has_ui
        self.logger = logger or log
        self.ui = None

    async def exec(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        cancel: asyncio.Event | None = None,
        cwd: str | os.PathLike | None = None,
        timeout: float | None = None,
    ) -> ExecResult:
        """Run a program (no shell) and collect its output.

        When ``cancel`` is set, or the calling task is cancelled, the process group is killed
        (``killed=True``; a cancelled task re-raises). ``timeout`` kills it too.
        """
        proc = await asyncio.create_subprocess_exec(
            command,
            *[str(a) for a in args],
            cwd=str(cwd or self.cwd),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        done = asyncio.ensure_future(proc.communicate())
        waiters = [done]
        stop = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
        if stop is not None:
            waiters.append(stop)
        killed = False
        try:
            finished, _ = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if done not in finished:
                killed = True
                _kill(proc)
            out, err = await done
        except asyncio.CancelledError:
            _kill(proc)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(done, 5)
            raise
        finally:
            if stop is not None:
                stop.cancel()
        return ExecResult(out.decode(errors="replace"), err.decode(errors="replace"), proc.returncode, killed)


def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


# -- adapting a CustomTool to the host's Tool ----------------------------------------------------------


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


def seed_result(value: Any) -> Any:
    """Seed 004's result shape, ``{"content": [blocks], "details": ...}`` (only those keys, each
    block an object with a string ``type``, a ``text`` block with a string ``text``), as a
    :class:`~ahp_lab.extensions.ToolResult`: the blocks are the call's content and ``details`` its
    structured result. Any other value is returned as it is."""
    if not (isinstance(value, dict) and "content" in value and set(value) <= {"content", "details"}):
        return value
    blocks = value["content"]
    if not isinstance(blocks, list) or not all(
        isinstance(b, dict)
        and isinstance(b.get("type"), str)
        and (b["type"] != "text" or isinstance(b.get("text"), str))
        for b in blocks
    ):
        return value
    return ToolResult(content=blocks, details=value.get("details"))


def as_host_tool(tool: CustomTool, abort: Callable[[str, str], None]) -> Tool:
    """The custom tool as a host-executed :class:`~ahp_lab.tools.Tool` (validation, streaming,
    cancellation through the host's tool runner)."""

    async def fn(args: Any, *, ctx: Any) -> Any:
        cancel = ctx.cancelled
        context = CustomToolContext(
            ctx.session, ctx.chat, ctx.turn_id, ctx.call_id, lambda: abort(ctx.chat, ctx.turn_id)
        )
        params = args if tool.parameters is not None else args.model_dump()
        try:
            value = tool.execute(ctx.call_id, params, ctx.update, context, cancel)
            if inspect.isawaitable(value):
                value = await value
        except asyncio.CancelledError:
            cancel.set()
            raise
        from .session import ahp_result

        return ahp_result(seed_result(value), tool.label or tool.name, ctx.call_id)

    fn.__annotations__ = {"args": tool.parameters or _Open, "ctx": Any, "return": Any}
    return Tool(
        fn,
        name=tool.name,
        title=tool.label or tool.name,
        description=tool.description,
        timeout=None,
        render_call=tool.render_call,  # a renderer that fails shows the default text (ToolCall)
        render_result=tool.render_result,
    )


# -- discovery --------------------------------------------------------------------------------------


@dataclass
class ToolSource:
    """One discovered file: the tools it gave, or why it gave none."""

    path: Path
    directory: Path
    tools: list[CustomTool] = field(default_factory=list)
    error: str | None = None
    metadata: bool = False  # a .md / .json file: described, never executed
    given: bool = False  # the tools given in code (``LoopAgent(custom_tools=...)``), not a file


@dataclass
class Discovery:
    """What :func:`discover_tools` found: every source, the loaded tools, and the problems."""

    sources: list[ToolSource] = field(default_factory=list)
    directories: list[Path] = field(default_factory=list)

    @property
    def tools(self) -> list[CustomTool]:
        return [t for s in self.sources for t in s.tools]

    @property
    def problems(self) -> list[str]:
        return [f"{s.path}: {s.error}" for s in self.sources if s.error]


def _candidates(path: Path) -> list[Path]:
    if path.is_dir():
        out = []
        for child in sorted(path.iterdir()):
            if child.name.startswith((".", "_")):
                continue
            if child.is_file() and child.suffix in (".py", *METADATA_SUFFIXES):
                out.append(child)
            elif child.is_dir() and (child / "__init__.py").is_file():
                out.append(child / "__init__.py")
        return out
    return [path] if path.is_file() else []


def _import(path: Path) -> Any:
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    name = f"ahp_lab_custom_tools.{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError("it is not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


async def _finished(made: Any) -> list[CustomTool] | BaseException:
    """The tools a factory's call ``made`` (its return value, or what it raised), once an
    awaitable finished within :data:`FACTORY_TIMEOUT`; else why it made none."""
    try:
        if isinstance(made, BaseException):
            return made
        if inspect.isawaitable(made):
            made = await _within(made, FACTORY_TIMEOUT)
        items = made if isinstance(made, (list, tuple)) else [made]
        for item in items:
            if not isinstance(item, CustomTool):
                raise TypeError(
                    f"the factory returned an object of type {type(item).__name__}, not a CustomTool or a list of them"
                )
        return list(items)
    except _Late as exc:
        return exc
    except FAILURES as exc:
        return exc


def _called(factory: Callable, api: CustomToolAPI) -> Any:
    """``factory(api)``, or what it raised."""
    try:
        return factory(api)
    except FAILURES as exc:
        return exc


async def _outcome(item: Any, api: CustomToolAPI) -> list[CustomTool] | BaseException:
    """The tools ``item`` (a tool or a factory) makes, or why it made none."""
    return [item] if isinstance(item, CustomTool) else await _finished(_called(item, api))


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def load_custom_tools(
    items: Iterable[Any], api: CustomToolAPI, taken: set[str], source: ToolSource
) -> None:
    """Add tools (or factories) to ``source``, rejecting names in ``taken`` (which grows)."""
    for item in items:
        _take(await _outcome(item, api), taken, source)


def _callable_as_execute(tool: CustomTool) -> None:
    """Raise ``TypeError`` when ``tool.execute`` cannot take the five arguments it is called with
    (``call_id, params, on_update, ctx, cancel``): it loaded, and failed only when the model called
    it (a first-hour user)."""
    try:
        signature = inspect.signature(tool.execute)
    except (TypeError, ValueError):
        return  # a builtin or an object whose signature is not known: taken on trust
    try:
        signature.bind(None, None, None, None, None)
    except TypeError as exc:
        raise TypeError(
            f"execute{signature} cannot be called as execute(call_id, params, on_update, ctx, cancel): {exc}"
        ) from None


def _take(outcome: list[CustomTool] | BaseException, taken: set[str], source: ToolSource) -> None:
    """Add what a factory made to ``source`` (or say why it made nothing), in order."""
    if isinstance(outcome, _Late):
        source.error = f"its factory did not finish within {FACTORY_TIMEOUT:g} s; its tools are left out"
        return
    if isinstance(outcome, BaseException):
        source.error = f"its factory failed: {_one_line(outcome)}"
        return
    for t in outcome:
        if t.name in taken:
            clash = f"the tool name {t.name!r} is already taken (a built-in or an earlier tool); not loaded"
            source.error = f"{source.error}; {clash}" if source.error else clash
            continue
        try:
            as_host_tool(t, lambda _c, _t: None)  # the name and parameters must make a valid tool
            _callable_as_execute(t)
        except FAILURES as exc:
            source.error = f"the tool {t.name!r} is not valid: {_one_line(exc)}"
            continue
        taken.add(t.name)
        source.tools.append(t)


async def discover_tools(
    workspace: Workspace,
    *,
    paths: Sequence[str | os.PathLike] = (),
    user_dir: str | os.PathLike | None = USER_TOOLS,
    builtin: Iterable[str] = (),
    has_ui: bool = False,
) -> Discovery:
    """Find and load custom tools by the rules in the module docstring."""
    found = Discovery()
    dirs: list[Path] = []
    if user_dir is not None:
        dirs.append(Path(os.path.expanduser(os.fspath(user_dir))))
    if workspace.trusted:
        dirs.append(workspace.root / PROJECT_TOOLS)
    for p in paths:
        q = Path(os.path.expanduser(os.fspath(p)))
        dirs.append(q if q.is_absolute() else workspace.root / q)
    api = CustomToolAPI(workspace.root, has_ui=has_ui, logger=log)
    taken = set(builtin)
    seen: set[str] = set()
    factories: list[tuple[ToolSource, Callable]] = []
    for d in dirs:
        if not d.exists():
            continue
        found.directories.append(d)
        for path in _candidates(d):
            real = os.path.realpath(path)
            if real in seen:
                continue  # the same file reached twice (a symlink, a repeated path)
            seen.add(real)
            source = ToolSource(path, d)
            found.sources.append(source)
            if path.suffix in METADATA_SUFFIXES:
                source.metadata = True
                continue
            try:
                module = _import(path)
                factory = getattr(module, "factory", None) or getattr(module, "default", None)
                if not callable(factory):
                    raise ToolError("it defines no factory(api) function")
            except BaseException as exc:  # noqa: BLE001 - a module's import error is listed, not raised
                if isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError)):
                    raise
                source.error = (
                    str(exc) if isinstance(exc, ToolError) else f"it could not be loaded: {_one_line(exc)}"
                )
                continue
            factories.append((source, factory))
    # The factories run together, each given FACTORY_TIMEOUT: one after another, three that hung
    # held the session past the 30 s it waits for its agent; sharing one deadline, a hung one
    # left the ones after it no time. What they made is taken in order (names clash in order).
    # (the factories are called first, one after another: a sync one that blocks then does not
    # take the time the awaitables of the others are given)
    made = [_called(factory, api) for _, factory in factories]
    outcomes = await asyncio.gather(*(_finished(m) for m in made))
    for (source, _), outcome in zip(factories, outcomes, strict=True):
        _take(outcome, taken, source)
    return found
