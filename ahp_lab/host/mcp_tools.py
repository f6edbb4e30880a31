"""MCP tools as AHP server tools: the definitions a ready server's tools are published under, and
running a tool call on the server (progress, authorization challenges, timeouts, results).

``McpToolCalls`` is a part of :class:`~ahp_lab.host.mcp.McpManager`, which holds the runtimes.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from ..tools import bounded_result, failure_result, success_result
from .mcp_auth import json_bytes, masked_tokens

if TYPE_CHECKING:
    from .mcp import _Runtime

log = logging.getLogger("ahp_lab.host.mcp")


#: What an MCP server's tool list may put into state (the session's ``serverTools``, sent to every
#: subscriber): a tool with a longer name or a larger input schema is left out, a longer
#: description or title is cut, and tools past the server's total are left out. A server's output
#: is a stranger's: a 30 MB description cut every remote client off the session.
MAX_TOOL_NAME_CHARS = 128  # as MCP says tool names are
MAX_TOOL_TEXT_CHARS = 8_000
MAX_TOOL_SCHEMA_BYTES = 65_536
MAX_SERVER_TOOLS_BYTES = 1_048_576


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class _Tool:
    published: str
    mcp_name: str
    title: str
    definition: dict


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters (for messages that quote a server)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def closed_connection(exc: Any) -> bool:
    """Whether an ``MCPError`` says the server's connection closed (it exited)."""
    return exc.message == "Connection closed"


def _content(block: Any) -> dict | None:
    """MCP content → AHP ``ToolResultContent``."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return {"type": "text", "text": block.text}
    if kind in ("image", "audio"):
        return {"type": "embeddedResource", "data": block.data, "contentType": block.mime_type}
    if kind == "resource":
        res = block.resource
        if getattr(res, "text", None) is not None:
            return {"type": "text", "text": res.text}
        return {
            "type": "embeddedResource",
            "data": getattr(res, "blob", ""),
            "contentType": getattr(res, "mime_type", None) or "application/octet-stream",
        }
    if kind == "resource_link":
        out = {"type": "resource", "uri": str(block.uri)}
        if getattr(block, "mime_type", None):
            out["contentType"] = block.mime_type
        return out
    return None


class McpToolCalls:
    """The tool half of the MCP manager (its ``runtimes``, ``host``, ``tool_timeout`` and the
    authorization helpers come from :class:`~ahp_lab.host.mcp.McpManager`)."""

    def _tools(self, rt: _Runtime, listed: list) -> list[_Tool]:
        """The server's listed tools as published, within the bounds above (what is left out is
        said in the host's log)."""
        tools: list[_Tool] = []
        total = 0
        for tool in listed:
            name = getattr(tool, "name", None)
            schema = getattr(tool, "input_schema", None)
            size = json_bytes(schema) if isinstance(schema, dict) else 0
            if not isinstance(name, str) or not 0 < len(name) <= MAX_TOOL_NAME_CHARS or size is None:
                log.warning("MCP server %s: a tool with an unusable name or schema is left out", rt.name)
                continue
            if size > MAX_TOOL_SCHEMA_BYTES:
                log.warning(
                    "MCP server %s: tool %s's input schema is over %d bytes: left out",
                    rt.name,
                    name,
                    MAX_TOOL_SCHEMA_BYTES,
                )
                continue
            published = self._tool(rt, tool)
            total += json_bytes(published.definition) or 0
            if total > MAX_SERVER_TOOLS_BYTES:
                log.warning(
                    "MCP server %s: its tools past %d bytes (%d of %d) are left out",
                    rt.name,
                    MAX_SERVER_TOOLS_BYTES,
                    len(listed) - len(tools),
                    len(listed),
                )
                break
            tools.append(published)
        return tools

    def _tool(self, rt: _Runtime, tool: Any) -> _Tool:
        plugin = rt.config.get("plugin")
        published = (
            f"mcp__plugin_{plugin}_{rt.name}__{tool.name}" if plugin else f"mcp__{rt.name}__{tool.name}"
        )
        title = tool.title or (
            tool.annotations.title if tool.annotations and tool.annotations.title else None
        )
        title = _cut(title or tool.name, 200)
        definition: dict[str, Any] = {"name": published, "title": f"{title} ({rt.name})"}
        if tool.description:
            definition["description"] = _cut(tool.description, MAX_TOOL_TEXT_CHARS)
        if isinstance(tool.input_schema, dict):
            definition["inputSchema"] = tool.input_schema
        if tool.annotations is not None:
            annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True, mode="json")
            if isinstance(annotations.get("title"), str):
                annotations["title"] = _cut(annotations["title"], 200)
            if (
                annotations
                and (json_bytes(annotations) or MAX_TOOL_SCHEMA_BYTES + 1) <= MAX_TOOL_SCHEMA_BYTES
            ):
                definition["annotations"] = annotations
        definition["_meta"] = {
            "ahp_lab/mcp": {"customizationId": rt.id, "server": rt.name, "tool": tool.name}
        }
        return _Tool(published, tool.name, definition["title"], definition)

    def _find_tool(self, session: str, name: str) -> tuple[_Runtime, _Tool] | None:
        for (s, _), rt in self.runtimes.items():
            if s != session or rt.client is None:
                continue
            for tool in rt.tools:
                if tool.published == name:
                    return rt, tool
        return None

    # -- tool calls -----------------------------------------------------------------------------

    async def run_tool(
        self, runner: Any, resolved: Any, call_id: str, tc: dict, requires_result_confirmation: bool
    ) -> bool:
        if resolved.kind != "mcp":
            return False
        from mcp.shared.exceptions import MCPError  # loaded already: calls run on started servers

        rt = self.runtimes.get((runner.session, resolved.owner))
        tool = next((t for t in rt.tools if t.published == resolved.name), None) if rt else None
        base = {"turnId": runner.turn_id, "toolCallId": call_id}

        def complete(result: dict) -> None:
            if rt is not None:  # the tokens clients gave it, should the server quote one
                result = masked_tokens(rt, result)
            current = runner._tool_call(call_id)
            if current is None or current.get("status") not in ("running", "auth-required"):
                return
            if current.get("status") == "auth-required" and result.get("success"):
                return
            action: dict[str, Any] = {"type": "chat/toolCallComplete", **base, "result": result}
            if requires_result_confirmation and current.get("status") == "running":
                action["requiresResultConfirmation"] = True
            self.host.dispatch(runner.chat, action)

        raw_input = tc.get("toolInput")
        try:
            arguments = json.loads(raw_input) if isinstance(raw_input, str) and raw_input.strip() else {}
            if not isinstance(arguments, dict):
                raise ValueError("the tool input is not a JSON object")
        except ValueError as exc:
            complete(
                failure_result(resolved.title, f"The tool input is not valid JSON: {exc}.", "invalidInput")
            )
            return True

        async def progress(value: float, total: float | None, message: str | None) -> None:
            current = runner._tool_call(call_id)
            if current is None or current.get("status") != "running":
                return
            amount = f"{value:g}/{total:g}" if total else f"{value:g}"
            text = f"{message} ({amount})" if message else f"progress {amount}"
            text = masked_tokens(rt, text) if rt is not None else text
            self.host.dispatch(
                runner.chat,
                {"type": "chat/toolCallContentChanged", **base, "content": [{"type": "text", "text": text}]},
            )

        for _attempt in range(4):
            if rt is None or tool is None or rt.client is None:
                state = rt.state if rt else "gone"
                complete(
                    failure_result(
                        resolved.title,
                        f"The MCP server is not running (its state is {state}).",
                        "serverNotReady",
                    )
                )
                return True
            try:
                result = await rt.client.call_tool(
                    tool.mcp_name,
                    arguments,
                    read_timeout_seconds=self.tool_timeout,
                    progress_callback=progress,
                    meta=self._meta(rt),
                )
            except MCPError as exc:
                auth = await self._http_auth(rt, exc)
                refused = self._claims(rt, auth) if auth is not None else None
                if refused:
                    message = f"The MCP server {rt.name} {refused}; the host never passes one server's tokens to another."
                    complete(failure_result(resolved.title, message, "authorizationRefused"))
                    return True
                if auth is not None:
                    token = await self._wait_call_auth(runner, call_id, rt, auth)
                    if token is None:
                        message = "The tool call was not authorized: the MCP server stopped or the call ended first."
                        complete(failure_result(resolved.title, message, "authorizationMissing"))
                        return True
                    current = runner._tool_call(call_id)
                    if current is None or current.get("status") != "auth-required":
                        return True
                    self.host.dispatch(runner.chat, {"type": "chat/toolCallAuthResolved", **base})
                    continue
                if closed_connection(exc):
                    message = f"The MCP server {rt.name} exited before answering."
                else:
                    message = f"The MCP server answered with an error: {one_line(exc.message)}."
                complete(failure_result(resolved.title, message, "mcpError"))
                return True
            except TimeoutError:
                complete(
                    failure_result(
                        resolved.title,
                        f"The MCP server did not answer within {self.tool_timeout:g} s.",
                        "timeout",
                    )
                )
                return True
            except (asyncio.CancelledError, anyio.get_cancelled_exc_class()):
                raise
            except Exception as exc:  # noqa: BLE001 - a broken server fails the call, not the turn
                complete(
                    failure_result(
                        resolved.title,
                        f"The MCP call failed: {one_line(exc) or type(exc).__name__}.",
                        "mcpError",
                    )
                )
                return True
            limit = self.host.limits.max_tool_result_bytes
            complete(bounded_result(self._result(resolved.title, result), resolved.title, limit))
            return True
        complete(
            failure_result(
                resolved.title, "The MCP server kept asking for authorization.", "authorizationFailed"
            )
        )
        return True

    @staticmethod
    def _result(title: str, result: Any) -> dict:
        content = [c for c in (_content(b) for b in result.content or ()) if c is not None]
        text = " ".join(c["text"] for c in content if c.get("type") == "text")
        if result.is_error:
            out = failure_result(title, text or "The MCP tool reported an error.", "toolError")
            if content:
                out["content"] = content
            return out
        structured = result.structured_content if isinstance(result.structured_content, dict) else None
        return success_result(title, content or None, structured)
