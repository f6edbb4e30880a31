"""What extension code sees: the runtime of one extension in one session, and a running tool call.

Extensions never get the host, the agent or the session objects. They get an
:class:`ExtensionRuntime` (their configuration, their session state, their instance, the
workspace, a logger, and a few controlled host services) and, inside a tool, a :class:`ToolCall`
(arguments, streaming updates, cancellation, and the controlled ``run_agent`` callback).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..tools import ToolError

if TYPE_CHECKING:
    from .config import Workspace
    from .session import ExtensionSession

__all__ = ["ExtensionRuntime", "StateHandle", "ToolCall", "AgentRun", "HostServices", "Command"]


class HostServices(Protocol):
    """The few host services extensions may use; implemented by the agent's host bridge."""

    def host_tools(self, session: str) -> list:
        """The session's tools as the host lists them (``ToolInfo``), this agent's own excluded."""

    def customizations(self, session: str) -> list[dict]:
        """The session's customization tree (JSON)."""

    def add_mcp_server(self, session: str, name: str, config: dict) -> str:
        """Run an MCP server for the session (trusted configuration only); returns its id."""

    def branch(self, chat: str) -> list[str]:
        """The turn ids of the conversation that ``chat`` continues, oldest first."""

    def record_state(self, session: str, turn_id: str, extension_id: str, value: Any) -> None:
        """Persist an extension's new session state (JSON), as of ``turn_id``, with the session."""

    async def run_agent(self, session: str, chat: str, call_id: str, request: dict) -> AgentRun:
        """Start a subagent in a tool-spawned chat (see :meth:`ToolCall.run_agent`)."""

    async def call_host_tool(self, chat: str, turn_id: str, name: str, arguments: dict) -> Any:
        """Call a session tool from inside a running tool call (a nested AHP tool call)."""

    def abort(self, chat: str, turn_id: str) -> None:
        """Cancel the turn (``chat/turnCancelled``)."""


@dataclass
class Command:
    """A slash command (``/name args``): ``expand(args)`` gives the message the model receives."""

    name: str
    description: str
    expand: Callable[[str], Any]
    extension_id: str = ""


@dataclass
class AgentRun:
    """A subagent started by ``run_agent``: its id, its chat, and its outcome once it ends."""

    agent_id: str
    chat: str
    title: str
    task: asyncio.Future | None = None
    status: str = "running"  # running | completed | failed | cancelled
    text: str = ""
    notified: bool = False
    stop: Callable[[], None] | None = field(default=None, repr=False)

    def cancel(self) -> None:
        """Cancel the subagent's turn (when it is still running)."""
        if self.status == "running" and self.stop is not None:
            self.stop()

    async def wait(self, timeout: float | None = None) -> str:
        """Wait until the subagent's turn ends; returns its final text."""
        if self.task is not None and not self.task.done():
            await asyncio.wait_for(asyncio.shield(self.task), timeout)
        return self.text


class StateHandle:
    """An extension's session state in one conversation: ``value`` and ``update(...)``."""

    def __init__(self, owner: ExtensionSession, extension_id: str, chat: str, turn_id: str | None) -> None:
        self._owner = owner
        self._extension_id = extension_id
        self._chat = chat
        self._turn_id = turn_id

    @property
    def value(self) -> Any:
        """The state as of this point of the conversation (a validated model instance)."""
        return self._owner.state_value(self._extension_id, self._chat, self._turn_id)

    def update(self, change: Any) -> Any:
        """Replace the state: ``change`` is the new value or a function of the current one.

        The new value is validated against the schema first; a value it refuses raises
        ``ToolError`` and the state stays as it was. Recorded on the current turn, so truncating
        the chat back to an earlier turn restores that turn's state and a fork inherits it.
        """
        if self._turn_id is None:
            raise ToolError(f"the session state of {self._extension_id} changes only during a turn")
        new = change(self.value) if callable(change) else change
        return self._owner.record_state(self._extension_id, self._chat, self._turn_id, new)


@dataclass
class ExtensionRuntime:
    """One extension's view of a session (and, in hooks and tools, of one conversation)."""

    extension_id: str
    session: str
    config: Any
    workspace: Workspace
    log: logging.Logger
    instance: Any = None
    chat: str | None = None
    turn_id: str | None = None
    _owner: ExtensionSession | None = field(default=None, repr=False)

    @property
    def state(self) -> StateHandle:
        """The extension's session state in this conversation (hooks and tools only)."""
        if self._owner is None or self.chat is None:
            raise ToolError(f"the session state of {self.extension_id} is only reachable in a conversation")
        return StateHandle(self._owner, self.extension_id, self.chat, self.turn_id)

    def host_tools(self) -> list:
        """The session's tools (``ToolInfo``: name, description, input_schema, owner)."""
        return self._owner.services.host_tools(self.session) if self._owner else []

    def customizations(self, type: str | None = None) -> list[dict]:  # noqa: A002 - the spec's noun
        """The session's effective customizations (children flattened), optionally of one
        ``type`` (``"skill"``, ``"mcpServer"``, ...), each with ``_container`` naming its
        container's ``uri`` and ``_clientId`` the client that published it (``None`` for the host's
        own)."""
        return self._owner.customizations(type) if self._owner else []

    def add_mcp_server(self, name: str, config: dict) -> str:
        """Have the host run an MCP server for this session (from trusted configuration)."""
        return self._owner.services.add_mcp_server(self.session, name, config)

    def report_problem(self, problem: str) -> None:
        """Add one sentence to the session's problems, which the chat is told (once) and the log
        keeps: for what goes wrong in part while the rest works (one unusable server of several)."""
        if self._owner is not None:
            self._owner._problem(f"{self.extension_id} {problem}")

    def register_command(self, name: str, description: str, expand: Callable[[str], Any]) -> None:
        """Offer ``/name`` in the chat: completions list it, and a message starting with it is
        replaced by ``expand(args)`` before the model sees it. A name another extension registered
        first stays theirs (reported in the session's problems)."""
        owner = self._owner.commands.get(name)
        if owner is not None and owner.extension_id != self.extension_id:
            self._owner.problems.append(
                f"{self.extension_id} registers the command /{name}, which {owner.extension_id} registered "
                f"first: {self.extension_id}'s is left out."
            )
            return
        self._owner.commands[name] = Command(name, description, expand, self.extension_id)

    def register_commands(self, provider: Callable[[], list[Command]]) -> None:
        """Offer commands that come and go: ``provider()`` lists the current ones each time."""
        self._owner.command_providers.append(provider)

    def invalidate_catalogs(self) -> None:
        """Say that this extension's catalogs changed (they are discovered again before the next call)."""
        self._owner.invalidate(self.extension_id)


@dataclass
class ToolCall:
    """A running call of an extension's tool."""

    id: str
    name: str
    args: Any
    chat: str
    turn_id: str
    _update: Callable[[Any], Any] = field(repr=False)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    _owner: ExtensionSession | None = field(default=None, repr=False)

    async def update(self, content: Any) -> None:
        """Stream partial content to the chat (replaces what was shown before)."""
        await self._update(content)

    async def run_agent(
        self,
        prompt: str,
        *,
        instructions: str = "",
        exclude_tools: tuple | list = (),
        detached: bool = False,
        title: str | None = None,
        agent_id: str | None = None,
    ) -> AgentRun:
        """Run a subagent in a new chat of this session spawned by this tool call.

        The subagent gets ``instructions`` as its system prompt and every resident tool except
        ``exclude_tools``; a subagent cannot start further subagents. ``detached`` returns at
        once (``await run.wait()`` later); otherwise this returns when the subagent's turn ended.
        """
        owner = self._owner
        if owner is None:
            raise ToolError("run_agent is only available inside a tool call")
        request = {
            "prompt": str(prompt),
            "instructions": str(instructions),
            "exclude": [str(t) for t in exclude_tools],
            "title": title,
            "agent_id": agent_id,
        }
        run = await owner.services.run_agent(owner.session, self.chat, self.id, request)
        if not detached:
            await run.wait()
        return run

    async def call_host_tool(self, name: str, arguments: dict | None = None) -> Any:
        """Call one of the session's tools (a nested AHP tool call); returns its ``ToolOutcome``."""
        owner = self._owner
        if owner is None:
            raise ToolError("call_host_tool is only available inside a tool call")
        return await owner.services.call_host_tool(self.chat, self.turn_id, name, dict(arguments or {}))
