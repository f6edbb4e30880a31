"""The one async interface every agent backend implements, and what the host offers it per turn.

An agent never touches state: it receives a :class:`TurnContext` from the host and calls its
methods (stream text, call a tool, ask the user, ...); the host turns each call into AHP actions,
applies them through the store and waits for whatever the protocol says comes next (a
confirmation, a client's result, an answer).
"""

from __future__ import annotations

from collections.abc import AsyncIterable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["Agent", "TurnContext", "ToolInfo", "ToolOutcome", "InputOutcome", "TurnFailed"]


class TurnFailed(Exception):
    """Raise from an agent to end the turn with ``chat/error`` (``error_type`` becomes ``errorType``)."""

    def __init__(self, message: str, error_type: str = "agentError") -> None:
        super().__init__(message)
        self.error_type = error_type


@dataclass(frozen=True)
class ToolInfo:
    """A tool the agent may call this turn: a server tool, an MCP tool or a client tool."""

    name: str
    description: str = ""
    title: str | None = None
    input_schema: dict = field(default_factory=dict)
    owner: str = "server"  # "server", "mcp:<customizationId>" or "client:<clientId>"
    annotations: dict = field(default_factory=dict)

    def defaults(self) -> dict:
        props = self.input_schema.get("properties") or {}
        return {k: v["default"] for k, v in props.items() if isinstance(v, dict) and "default" in v}


@dataclass
class ToolOutcome:
    """How a tool call ended, as the agent sees it."""

    tool_call_id: str
    status: str  # "completed" or "cancelled"
    success: bool
    message: str = ""  # pastTenseMessage or the cancellation reason message
    text: str = ""  # the text content of the result
    result: dict = field(default_factory=dict)  # the whole ToolCallResult (completed only)
    reason: str | None = None  # cancellation reason: denied / skipped / result-denied
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "completed" and self.success


@dataclass
class InputOutcome:
    """The user's answer to an input request."""

    request_id: str
    response: str  # "accept" | "decline" | "cancel"
    answers: dict = field(default_factory=dict)  # questionId -> ChatInputAnswer

    def value(self, question_id: str) -> Any:
        """The submitted value of one question (``None`` when skipped or unanswered)."""
        answer = self.answers.get(question_id) or {}
        value = answer.get("value")
        return value.get("value") if isinstance(value, dict) else None


@runtime_checkable
class TurnContext(Protocol):
    """What an agent can do during one turn; implemented by the host."""

    session: str
    chat: str
    turn_id: str
    message: dict  # the initiating Message

    @property
    def prompt(self) -> str: ...

    def tools(self) -> list[ToolInfo]: ...

    async def say(self, text: str | AsyncIterable[str], *, chunk_size: int | None = None) -> str:
        """Stream markdown as a new response part (a string in chunks, or each piece of a live
        stream as it arrives); returns the part id."""

    async def think(self, text: str | AsyncIterable[str], *, chunk_size: int | None = None) -> str:
        """Stream reasoning as a new response part (like :meth:`say`); returns the part id."""

    async def notify(self, text: str) -> None:
        """Append a system notification part."""

    async def call_tool(
        self,
        name: str,
        arguments: dict | None = None,
        *,
        confirm: bool | None = None,
        options: list[dict] | None = None,
        title: str | None = None,
        intention: str | None = None,
        requires_result_confirmation: bool = False,
        editable: bool | None = None,
    ) -> ToolOutcome: ...

    async def ask(self, questions: list[dict], *, message: str | None = None) -> InputOutcome: ...

    async def usage(self, input_tokens: int, output_tokens: int, model: str | None = None) -> None: ...

    async def activity(self, text: str | None) -> None: ...

    def take_steering(self) -> dict | None:
        """Consume the chat's steering message, if any (returns its Message)."""


class Agent(Protocol):
    """An agent backend behind the host."""

    name: str

    def info(self) -> dict:
        """The ``AgentInfo`` for the root state (provider, displayName, description, models, ...)."""

    async def run_turn(self, ctx: TurnContext) -> None:
        """Produce one turn. Return normally to complete it; raise :class:`TurnFailed` to fail it.

        Cancellation (``chat/turnCancelled``) arrives as ``asyncio.CancelledError``.
        """
