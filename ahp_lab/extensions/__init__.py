"""Extensions for :class:`~ahp_lab.agents.loop.LoopAgent`: the contract of seed 003, its four
shipped extensions, and the custom tools of seed 004. See ``docs/extensions.md``."""

from ..tools import ToolError
from .config import Workspace
from .contract import (
    Block,
    Catalog,
    CatalogEntry,
    Configuration,
    Extension,
    ExtensionTool,
    Hooks,
    Lifecycle,
    SessionState,
    ToolResult,
)
from .custom_tools import CustomTool, CustomToolAPI, CustomToolContext, ExecResult
from .mcp import mcp_extension
from .runtime import AgentRun, Command, ExtensionRuntime, ToolCall
from .skills import skills_extension
from .subagent import subagent_extension
from .todo import todo_extension

__all__ = [
    "Extension",
    "Configuration",
    "SessionState",
    "Lifecycle",
    "Hooks",
    "Block",
    "ExtensionTool",
    "Catalog",
    "CatalogEntry",
    "ToolResult",
    "ToolError",
    "ExtensionRuntime",
    "Command",
    "ToolCall",
    "AgentRun",
    "Workspace",
    "CustomTool",
    "CustomToolAPI",
    "CustomToolContext",
    "ExecResult",
    "todo_extension",
    "subagent_extension",
    "skills_extension",
    "mcp_extension",
]
