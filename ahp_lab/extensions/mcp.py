"""The mcp extension: MCP servers from layered configuration, their tools as a catalog (seed 003 §4.2).

Configuration (``mcp`` in the config files): ``{"servers": {name: {"command", "args"?, "env"?,
"cwd"?} | {"url", "headers"?}}}`` in the user layer and in the project layer, merged by
:func:`resolve_mcp_configuration` (a project server overrides a user one of the same name). The
project layer exists only in a trusted workspace: a cloned repository cannot start a process.

The session's MCP tools (these servers' and any other the host runs) are never resident: they are
the ``mcp`` catalog, refreshed whenever a server's tool list changes, and the model learns of a
change from a capability-notice diff instead of a changed tool list.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ..tools import FAILURES
from .contract import Catalog, CatalogEntry, Configuration, Extension, Lifecycle, ToolResult

__all__ = ["mcp_extension", "McpServerConfig", "McpConfig", "resolve_mcp_configuration"]


class McpServerConfig(BaseModel):
    """How to reach one server (stdio ``command`` or streamable HTTP ``url``)."""

    model_config = ConfigDict(extra="forbid")
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    enabled: bool = True


class McpConfig(BaseModel):
    """One layer, or the merged configuration."""

    model_config = ConfigDict(extra="forbid")
    servers: dict[str, McpServerConfig] = Field(default_factory=dict)


def resolve_mcp_configuration(user: McpConfig | None, project: McpConfig | None) -> McpConfig:
    """User servers, then project servers (same name: the project's)."""
    return McpConfig(servers={**(user.servers if user else {}), **(project.servers if project else {})})


def _activate(runtime) -> dict:
    """Start every configured server; one that cannot start is a problem, and the others go on."""
    started = {}
    for name, server in runtime.config.servers.items():
        config = server.model_dump(exclude_defaults=True)
        config["enabled"] = server.enabled
        try:
            started[name] = runtime.add_mcp_server(name, config)
        except FAILURES as exc:
            runtime.report_problem(f"could not start the MCP server {name!r}: {exc}.")
    return {"servers": started}


def _group(name: str) -> str:
    parts = name.split("__")
    return parts[1] if len(parts) >= 3 else "mcp"


def _runner(name: str):
    async def execute(runtime, call) -> ToolResult:
        outcome = await call.call_host_tool(name, call.args if isinstance(call.args, dict) else {})
        if not outcome.ok:
            return ToolResult(
                outcome.error or outcome.text or outcome.message or "the MCP tool failed", is_error=True
            )
        return ToolResult(outcome.text, details=(outcome.result or {}).get("structuredContent"))

    return execute


def _discover(runtime) -> list[CatalogEntry]:
    return [
        CatalogEntry(
            t.name, t.description, dict(t.input_schema or {}), execute=_runner(t.name), group=_group(t.name)
        )
        for t in runtime.host_tools()
        if str(t.owner).startswith("mcp:")
    ]


def mcp_extension() -> Extension:
    """The mcp extension (id ``mcp``)."""
    return Extension(
        id="mcp",
        configuration=Configuration("layered", McpConfig, resolve=resolve_mcp_configuration),
        lifecycle=Lifecycle(activate=_activate),
        catalogs=[Catalog("tools", _discover, inventory="mcp")],
    )
