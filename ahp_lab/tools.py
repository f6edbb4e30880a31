"""Tools as Python functions: the custom-tool contract (seed 004) adapted to Python.

A tool is a plain function, sync or async. Its name, title and description come from the
function (or the decorator's arguments), its ``inputSchema`` from the type hints (or a pydantic
model), and it may take a ``ctx`` keyword parameter (:class:`ToolContext`) to stream partial
content, see its call id and session, and notice cancellation::

    @tool
    async def run_unit_tests(pattern: str = "test_*", *, ctx) -> str:
        await ctx.update("collecting...")
        return "12 passed"

The same :class:`Tool` objects serve as client tools (executed by a client, ``lab.tool``) and
server tools (executed by the host, ``lab.server_tool``). Every input is validated against the
tool's schema before the function sees it; exceptions, timeouts and unserializable results end
the call as a failure with a one-sentence message. A tool cannot end the process: ``SystemExit``,
``KeyboardInterrupt`` (argparse raises ``SystemExit`` on bad arguments) and any other
``BaseException`` except cancellation fail that call, with a message naming the exception.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pydantic
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from .protocol.jsonvalue import to_json

__all__ = [
    "Tool",
    "ToolContext",
    "ToolError",
    "tool",
    "tool_result",
    "failure_result",
    "first_error",
    "bounded_result",
    "run_tool_call",
    "CONFIRM_META",
    "ResolvedTool",
]

#: ``ToolDefinition._meta`` key carrying a tool's ``confirm=`` choice to the host.
CONFIRM_META = "ahp_lab/confirm"


class ToolError(Exception):
    """A tool call that cannot run or did not succeed; its message is shown to the user."""


def _title_from_name(name: str) -> str:
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).replace("_", " ").replace("-", " ").split()
    return " ".join(w[:1].upper() + w[1:] for w in words) or name


def _first_paragraph(doc: str | None) -> str:
    if not doc:
        return ""
    return inspect.cleandoc(doc).split("\n\n")[0].replace("\n", " ").strip()


@dataclass
class ToolContext:
    """What a running tool function can see and do."""

    call_id: str
    tool_name: str
    session: str
    chat: str
    turn_id: str
    _send_content: Callable[[list], Any]
    _loop: asyncio.AbstractEventLoop
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    updates: int = 0

    async def update(self, content: Any) -> None:
        """Stream partial content (``chat/toolCallContentChanged``); replaces what was shown before."""
        self.updates += 1
        result = self._send_content(content_blocks(content))
        if inspect.isawaitable(result):
            await result
        else:
            await asyncio.sleep(0)  # a tool streaming in a tight loop still lets the host breathe

    def update_sync(self, content: Any) -> None:
        """:meth:`update` for sync tool functions (they run in a worker thread)."""
        self.updates += 1
        blocks = content_blocks(content)
        self._loop.call_soon_threadsafe(lambda: _fire(self._send_content(blocks)))

    @property
    def is_cancelled(self) -> bool:
        """Whether the call was cancelled (sync tools should check this and return early)."""
        return self.cancelled.is_set()


#: What cell-written code (a tool, an extension's hook, catalog or lifecycle, a factory) raises
#: that is reported and contained rather than propagated: every exception but cancellation.
#: ``SystemExit`` and ``KeyboardInterrupt`` too: let through, asyncio re-raises them out of the
#: event loop, which ends the kernel.
FAILURES = (Exception, SystemExit, KeyboardInterrupt)


async def _contained(work: Any, title: str) -> Any:
    """Await a tool's work; a ``BaseException`` that would end the process fails the call instead.

    This runs inside the task that runs the tool, so ``SystemExit`` and ``KeyboardInterrupt``
    never reach asyncio (which re-raises them out of the event loop, ending the kernel).
    """
    try:
        return await work
    except (asyncio.CancelledError, GeneratorExit):
        raise
    except Exception:
        raise
    except BaseException as exc:  # noqa: BLE001 - that is the point
        detail = f": {exc}" if str(exc) else ""
        raise ToolError(
            f"{title} raised {type(exc).__name__}{detail}, which would end the process; the call failed instead"
        ) from None


def _fire(result: Any) -> None:
    if inspect.isawaitable(result):
        asyncio.ensure_future(result)


def content_blocks(value: Any) -> list[dict]:
    """``ToolResultContent[]`` from a string, a list of blocks or any JSON value."""
    if isinstance(value, list) and all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in value):
        return to_json(value)
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    return [{"type": "text", "text": json.dumps(_jsonable(value), ensure_ascii=False, indent=2)}]


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    json.dumps(value, allow_nan=False)  # raises for what JSON cannot carry (NaN and Infinity included)
    return value


def tool_result(value: Any, tool_title: str) -> dict:
    """A successful ``ToolCallResult`` from a function's return value (raises ToolError if unserializable)."""
    if isinstance(value, dict) and "success" in value and "pastTenseMessage" in value:
        return to_json(value)  # already an AHP result
    try:
        if value is None:
            content, structured = [], None
        elif isinstance(value, str):
            content, structured = [{"type": "text", "text": value}], None
        else:
            data = _jsonable(value)
            content = [{"type": "text", "text": json.dumps(data, ensure_ascii=False, indent=2)}]
            structured = data if isinstance(data, dict) else {"result": data}
    except (TypeError, ValueError) as exc:
        raise ToolError(
            f"{tool_title} returned an object of type {type(value).__name__}, which is not JSON-serializable ({exc})"
        ) from None
    return success_result(tool_title, content, structured)


def success_result(tool_title: str, content: list | None = None, structured: Any = None) -> dict:
    """A successful ``ToolCallResult``: the one place that words its ``pastTenseMessage``.

    "<title> succeeded" (the twin of :func:`failure_result`'s "<title> failed") reads right for any
    title, where "Ran <title>" gave "Ran Run Unit Tests" in every client.
    """
    result: dict[str, Any] = {"success": True, "pastTenseMessage": f"{tool_title} succeeded"}
    if content is not None:
        result["content"] = content
    if structured is not None:
        result["structuredContent"] = structured
    return result


def first_error(exc: ValidationError, default: str = "input") -> tuple[str, str]:
    """Where a pydantic validation failed first, and why in lowercase (``("todos.0.id", "field required")``)."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ())) or default
    return where, str(err.get("msg", "is invalid")).lower()


def bounded_result(result: dict, tool_title: str, max_chars: int) -> dict:
    """``result``, or a failure saying it is too large when its JSON exceeds ``max_chars``."""
    size = len(json.dumps(result, ensure_ascii=False, separators=(",", ":"), default=str))
    if size <= max_chars:
        return result
    return failure_result(
        tool_title,
        f"{tool_title} returned {size:,} characters of JSON, over the limit of {max_chars:,} for one tool result",
        "tooLarge",
    )


def failure_result(tool_title: str, message: str, code: str = "error") -> dict:
    return {
        "success": False,
        "pastTenseMessage": f"{tool_title} failed",
        "content": [{"type": "text", "text": message}],
        "error": {"message": message, "code": code},
    }


async def run_tool_call(tool: Tool, tool_input: Any, ctx: ToolContext | None) -> dict:
    """Run one call of ``tool`` and return its ``ToolCallResult``, whoever executes it.

    The input is validated against the tool's schema first; a validation error, an exception,
    a timeout or an unserializable return value becomes a failed result with a one-sentence
    message. Cancellation propagates (after ``ctx.cancelled`` is set).
    """
    try:
        kwargs = tool.parse_input(tool_input)
        value = await tool.invoke(kwargs, ctx)
        return tool_result(value, tool.title)
    except asyncio.CancelledError:
        if ctx is not None:
            ctx.cancelled.set()
        raise
    except ToolError as exc:
        return failure_result(tool.title, str(exc))
    except Exception as exc:  # the tool's own bug fails the call, never the host
        return failure_result(tool.title, f"{type(exc).__name__}: {exc}")


@dataclass
class ResolvedTool:
    """Where a tool name leads: a server tool (run by the host), a client's tool, or an MCP tool."""

    kind: str  # "server" | "client" | "mcp"
    name: str
    title: str
    definition: dict
    tool: Tool | None = None
    owner: str | None = None  # client id for client tools, customization id for MCP tools
    contributor: dict | None = None


def checked_tool_name(name: Any) -> str:
    """``name`` when it can name a tool (1-128 letters, digits, ``_``, ``-`` or ``.``), else ``ValueError``."""
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.\-]{1,128}", name):
        hint = ": pass name=... (a lambda has none)" if name == "<lambda>" else ""
        raise ValueError(f"tool name {name!r} must be 1-128 letters, digits, '_', '-' or '.'{hint}")
    return name


class _HintError(Exception):
    """A signature a tool cannot take JSON input through (the message says why)."""


def _hint_problem(fn: Callable, exc: Exception) -> str:
    """One sentence on why ``fn``'s parameters cannot be JSON input: the parameter and its hint."""
    if isinstance(exc, _HintError):
        return str(exc)
    if isinstance(exc, NameError):
        return f"a type hint names {getattr(exc, 'name', None) or exc}, which is not defined where the function is"
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001
        hints = {}
    for name, hint in hints.items():
        if name in ("return", "ctx"):
            continue
        try:
            pydantic.TypeAdapter(hint).json_schema()
        except Exception:  # noqa: BLE001 - this is the one
            shown = hint.__name__ if isinstance(hint, type) else repr(hint)
            return f"parameter {name!r} is annotated {shown}, which has no JSON Schema (use JSON types, or a pydantic model)"
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


class Tool:
    """A Python function published as an AHP tool."""

    def __init__(
        self,
        fn: Callable,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        input_model: type[BaseModel] | None = None,
        output_schema: dict | None = None,
        annotations: dict | None = None,
        approval: str = "auto",
        confirm: bool | None = None,
        timeout: float | None = 60.0,
        render_call: Callable[[dict], Any] | None = None,
        render_result: Callable[[dict], Any] | None = None,
    ) -> None:
        if approval not in ("auto", "always", "never"):
            raise ValueError("approval must be 'auto', 'always' or 'never'")
        self.fn = fn
        self.name = checked_tool_name(name or fn.__name__)
        self.title = title or _title_from_name(self.name)
        self.description = description if description is not None else _first_paragraph(fn.__doc__)
        self.is_async = inspect.iscoroutinefunction(fn)
        try:
            self.takes_ctx, self._params = self._signature(fn)
            self.input_model = input_model or self._model_from_signature()
            self.input_model.model_json_schema()  # a hint JSON Schema cannot describe fails here
        except Exception as exc:  # noqa: BLE001 - named and explained, whatever pydantic raises
            raise TypeError(
                f"the tool {self.name!r} cannot take its input from JSON: {_hint_problem(fn, exc)}"
            ) from None
        self.output_schema = output_schema
        self.annotations = dict(annotations or {})
        self.approval = approval
        self.confirm = confirm
        self.timeout = timeout
        self.render_call = render_call
        self.render_result = render_result
        self._takes_model = input_model is not None and self._params == ["__model__"]

    # -- schema ---------------------------------------------------------------------------------

    @staticmethod
    def _signature(fn: Callable) -> tuple[bool, list[str]]:
        sig = inspect.signature(fn)
        takes_ctx = "ctx" in sig.parameters
        params = []
        for p in sig.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                star = "*" if p.kind == p.VAR_POSITIONAL else "**"
                raise _HintError(
                    f"{star}{p.name} cannot be filled from a JSON object of arguments; name each parameter"
                )
            if p.name != "ctx":
                params.append(p.name)
        # a single parameter annotated with a pydantic model takes the whole input as that model
        hints = typing.get_type_hints(fn) if params else {}
        if (
            len(params) == 1
            and isinstance(hints.get(params[0]), type)
            and issubclass(hints[params[0]], BaseModel)
        ):
            return takes_ctx, ["__model__:" + params[0]]
        return takes_ctx, params

    def _model_from_signature(self) -> type[BaseModel]:
        fn = self.fn
        if self._params and self._params[0].startswith("__model__:"):
            param = self._params[0].split(":", 1)[1]
            self._model_param = param
            return typing.get_type_hints(fn)[param]
        hints = typing.get_type_hints(fn)
        sig = inspect.signature(fn)
        fields: dict[str, Any] = {}
        for name in self._params:
            p = sig.parameters[name]
            annotation = hints.get(name, Any)
            default = ... if p.default is inspect.Parameter.empty else p.default
            fields[name] = (annotation, default)
        model = create_model(f"{self.name}_input", __config__=ConfigDict(extra="forbid"), **fields)
        return model

    @property
    def input_schema(self) -> dict:
        """The JSON Schema of the tool's input (``inputSchema``), from the type hints or the model."""
        schema = self.input_model.model_json_schema()
        schema.pop("title", None)
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        return schema

    def definition(self, name: str | None = None) -> dict:
        """The ``ToolDefinition`` published in ``activeClients[].tools`` or ``serverTools``."""
        out: dict[str, Any] = {
            "name": name or self.name,
            "title": self.title,
            "inputSchema": self.input_schema,
        }
        if self.description:
            out["description"] = self.description
        if self.output_schema:
            out["outputSchema"] = self.output_schema
        annotations = dict(self.annotations)
        annotations.setdefault("title", self.title)
        out["annotations"] = annotations
        if self.confirm is not None:
            # the host reads this to ask the user first (or not), whoever executes the tool
            out["_meta"] = {CONFIRM_META: self.confirm}
        return out

    # -- calling --------------------------------------------------------------------------------

    def parse_input(self, tool_input: Any) -> dict:
        """Validate a tool input (a JSON string or object) against the schema; returns call kwargs."""
        if isinstance(tool_input, str):
            if not tool_input.strip():
                data: Any = {}
            else:
                try:
                    data = json.loads(tool_input)
                except ValueError as exc:
                    raise ToolError(f"{self.title}: the input is not valid JSON ({exc.msg})") from None
        elif tool_input is None:
            data = {}
        else:
            data = to_json(tool_input)
        if not isinstance(data, dict):
            raise ToolError(f"{self.title}: the input must be a JSON object, got {type(data).__name__}")
        try:
            model = self.input_model.model_validate(data)
        except ValidationError as exc:
            where, why = first_error(exc)
            raise ToolError(f"{self.title}: argument '{where}' {why}") from None
        if getattr(self, "_model_param", None):
            return {self._model_param: model}
        return {name: getattr(model, name) for name in self._params}

    async def invoke(self, kwargs: dict, ctx: ToolContext | None) -> Any:
        """Run the function (sync functions in a worker thread) with the tool's timeout."""
        call_kwargs = dict(kwargs)
        if self.takes_ctx:
            call_kwargs["ctx"] = ctx
        if self.is_async:
            coro = _contained(self.fn(**call_kwargs), self.title)
        else:
            coro = _contained(asyncio.to_thread(self.fn, **call_kwargs), self.title)
        if self.timeout is None:
            return await coro
        try:
            return await asyncio.wait_for(coro, self.timeout)
        except TimeoutError:
            raise ToolError(
                f"{self.title} did not finish within {self.timeout:g} s and was stopped"
            ) from None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calling the tool object calls the function directly (handy in a notebook)."""
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        params = ", ".join(self.input_schema.get("properties", {}))
        return f"<Tool {self.name}({params})>"


def tool(fn: Callable | None = None, /, **options: Any):
    """Decorator and factory: ``@tool``, ``@tool(name=..., approval="always")`` or ``tool(fn, ...)``."""
    if fn is None:
        return lambda f: Tool(f, **options)
    return Tool(fn, **options)
