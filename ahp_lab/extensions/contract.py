"""The extension contract (seed 003): what an extension may declare, and nothing else.

An :class:`Extension` is plain data. The framework (``ExtensionSession``) reads it and gives each
part what it needs through an :class:`~ahp_lab.extensions.runtime.ExtensionRuntime`:

* ``configuration`` — :class:`Configuration`: scope ``user``, ``project`` or ``layered``, a
  pydantic schema, and for ``layered`` a ``resolve(user, project)``. The project layer is read only
  when the workspace is trusted; the framework enforces it, not the extension.
* ``session_state`` — :class:`SessionState`: a pydantic schema and default. Updates are recorded
  per turn, so the state follows the conversation tree (truncate, fork).
* ``lifecycle`` — :class:`Lifecycle`: ``activate(context)`` returns the extension's instance,
  ``deactivate(instance)`` releases it when the session is disposed.
* ``hooks`` — :class:`Hooks`: ``before_model_call`` (text for a synthetic tail message of that call
  only), ``before_tool_call`` (may block with a reason), ``after_tool_call``; each with a deadline.
* ``tools`` — resident :class:`ExtensionTool` s, in every model request.
* ``catalogs`` — on-demand :class:`Catalog` s, never in the request: reachable through the
  resident ``SearchTools`` / ``ExecuteTool`` tools and announced by capability notices.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ..tools import checked_tool_name

__all__ = [
    "Extension",
    "Configuration",
    "SessionState",
    "Lifecycle",
    "Hooks",
    "ExtensionTool",
    "Catalog",
    "CatalogEntry",
    "ToolResult",
    "Block",
    "INVENTORIES",
]

#: Capability-notice sections, in the order they are rendered.
INVENTORIES = ("tool", "mcp", "skill")


@dataclass(frozen=True)
class Configuration:
    """Where an extension's configuration comes from and what shape it has.

    ``scope``: ``"user"`` (the user's config file), ``"project"`` (the workspace's, trusted only) or
    ``"layered"`` (both, merged by ``resolve(user, project)``; each layer is ``None`` when absent,
    and the project layer is always ``None`` in an untrusted workspace). Layers are validated with
    ``layer_schema`` (default: ``schema``); the result of ``resolve`` (or the single layer) with
    ``schema``; ``default`` (default: ``schema()``) stands in for a missing file or section.
    """

    scope: str
    schema: type[BaseModel]
    layer_schema: type[BaseModel] | None = None
    resolve: Callable[[Any, Any], Any] | None = None
    default: Any = None

    def __post_init__(self) -> None:
        if self.scope not in ("user", "project", "layered"):
            raise ValueError(
                f"configuration scope must be 'user', 'project' or 'layered', not {self.scope!r}"
            )
        if self.scope == "layered" and self.resolve is None:
            raise ValueError("a layered configuration needs resolve(user, project)")


@dataclass(frozen=True)
class SessionState:
    """An extension's per-conversation state: a pydantic ``schema`` and a ``default`` value."""

    schema: type[BaseModel]
    default: Any = None


@dataclass(frozen=True)
class Lifecycle:
    """``activate(context)`` when a session starts (its return value is ``runtime.instance``);
    ``deactivate(instance)`` when the session is disposed. Either may be async."""

    activate: Callable[[Any], Any] | None = None
    deactivate: Callable[[Any], Any] | None = None


@dataclass(frozen=True)
class Block:
    """Returned by ``before_tool_call``: do not run the call; the model gets ``reason``."""

    reason: str


@dataclass(frozen=True)
class Hooks:
    """Interception points, each sync or async, each bounded by a deadline (``timeout`` seconds,
    default: the agent's ``hook_timeout``). A hook that raises or times out is reported and
    skipped for that call; the turn goes on.

    * ``before_model_call(runtime) -> str | None``: context for this call only, appended as a
      synthetic user message at the end of the request (the history is never rewritten);
    * ``before_tool_call(runtime, call) -> Block | None``: ``call`` has ``name`` and ``arguments``;
    * ``after_tool_call(runtime, call, result) -> ToolResult | None``: ``result`` has ``ok``,
      ``text`` and ``status``; a returned :class:`ToolResult` rewrites what the model is told (its
      ``text``, and ``is_error``), not the call's result in the chat.
    """

    before_model_call: Callable[[Any], Any] | None = None
    before_tool_call: Callable[[Any, Any], Any] | None = None
    after_tool_call: Callable[[Any, Any, Any], Any] | None = None
    timeout: float | None = None

    def __post_init__(self) -> None:
        t = self.timeout
        if t is not None and (
            isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t < float("inf")
        ):
            raise ValueError(f"a hook timeout must be a positive number of seconds, not {t!r}")


@dataclass(frozen=True)
class ToolResult:
    """What a tool's ``execute`` may return besides plain text: ``text`` for the model, ``details``
    (JSON) as the call's structured content, ``content`` blocks to show instead of the text, and
    ``is_error`` to fail the call."""

    text: str = ""
    details: Any = None
    content: list | None = None
    is_error: bool = False


@dataclass(frozen=True)
class ExtensionTool:
    """A resident tool: sent to the model in every request.

    ``execute(runtime, call)`` (sync or async) gets the session's runtime and the call (``id``,
    ``args`` validated by ``parameters``, ``update(content)`` to stream partial results,
    ``cancelled``, ``run_agent(...)``, ``call_host_tool(...)``); it returns text, a
    :class:`ToolResult` or any JSON value. Raising fails the call with the message. A plain
    ``def`` runs on the host's event loop: until it returns, nothing else runs (no cancel, no
    widget, no socket), so long work belongs in an ``async def`` (``await asyncio.to_thread(...)``
    for blocking code that touches neither the runtime nor the call).

    ``execution_mode``: ``"sequential"`` (the default) runs the call alone, after the calls the
    model asked for before it; ``"parallel"`` runs it together with the other parallel calls next
    to it in the same answer (two ``SpawnAgent`` calls run their subagents at once).
    """

    name: str
    description: str
    execute: Callable[[Any, Any], Any]
    parameters: type[BaseModel] | None = None
    title: str | None = None
    confirm: bool | None = None
    execution_mode: str = "sequential"

    def __post_init__(self) -> None:
        checked_tool_name(self.name)
        if self.execution_mode not in ("sequential", "parallel"):
            raise ValueError(
                f"the execution_mode of the tool {self.name!r} must be 'sequential' or 'parallel', "
                f"not {self.execution_mode!r:.60}"
            )
        p = self.parameters
        if p is not None and not (isinstance(p, type) and issubclass(p, BaseModel)):
            raise TypeError(
                f"the parameters of the tool {self.name!r} must be a pydantic model class (or None), "
                f"not {type(p).__name__} {p!r:.60}"
            )


@dataclass(frozen=True)
class CatalogEntry:
    """One on-demand tool (or skill) a catalog offers.

    ``group`` groups names in a notice (an MCP server's name). ``execute(runtime, call)`` runs it
    through ``ExecuteTool``; ``parameters`` (a pydantic model) or ``input_schema`` describe its input.
    """

    name: str
    description: str = ""
    input_schema: dict = field(default_factory=dict)
    parameters: type[BaseModel] | None = None
    execute: Callable[[Any, Any], Any] | None = None
    group: str | None = None

    def schema(self) -> dict:
        """The entry's input schema (from ``parameters`` when given)."""
        if self.parameters is not None:
            out = self.parameters.model_json_schema()
            out.pop("title", None)
            return out
        return dict(self.input_schema or {"type": "object", "properties": {}})


@dataclass(frozen=True)
class Catalog:
    """An on-demand tool catalog: ``discover(runtime)`` lists its entries (sync or async);
    ``subscribe(runtime, invalidate)`` may call ``invalidate()`` whenever they change and returns a
    function that unsubscribes. ``inventory`` is the notice section: ``"tool"``, ``"mcp"`` or
    ``"skill"`` (skills are loaded with the ``Skill`` tool, not ``ExecuteTool``)."""

    id: str
    discover: Callable[[Any], Any]
    inventory: str = "tool"
    subscribe: Callable[[Any, Callable[[], None]], Any] | None = None

    def __post_init__(self) -> None:
        if self.inventory not in INVENTORIES:
            raise ValueError(
                f"catalog inventory must be one of {', '.join(INVENTORIES)}, not {self.inventory!r}"
            )


@dataclass(frozen=True)
class Extension:
    """An extension: an ``id`` and any of the five capabilities (see the module docstring)."""

    id: str
    configuration: Configuration | None = None
    session_state: SessionState | None = None
    lifecycle: Lifecycle | None = None
    hooks: Hooks | None = None
    tools: Sequence[ExtensionTool] = ()
    catalogs: Sequence[Catalog] = ()
