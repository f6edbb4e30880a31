"""Terminal channel state (other-channels.md §1)."""

from __future__ import annotations

from typing import Literal

from .base import URI, Int, Number, WireModel, tagged_union

__all__ = [
    "ClientTerminalClaim",
    "SessionTerminalClaim",
    "TerminalClaim",
    "TerminalUnclassifiedPart",
    "TerminalCommandPart",
    "TerminalContentPart",
    "TerminalState",
]


class ClientTerminalClaim(WireModel):
    kind: Literal["client"] = "client"
    client_id: str


class SessionTerminalClaim(WireModel):
    """Owned by a session; with ``turnId`` + ``toolCallId`` it is in use by a tool call."""

    kind: Literal["session"] = "session"
    session: URI
    turn_id: str | None = None
    tool_call_id: str | None = None


TerminalClaim = tagged_union("kind", [ClientTerminalClaim, SessionTerminalClaim])


class TerminalUnclassifiedPart(WireModel):
    type: Literal["unclassified"] = "unclassified"
    value: str


class TerminalCommandPart(WireModel):
    type: Literal["command"] = "command"
    command_id: str
    command_line: str
    output: str
    #: epoch ms, host clock
    timestamp: Number
    is_complete: bool
    exit_code: Int | None = None
    duration_ms: Number | None = None


TerminalContentPart = tagged_union("type", [TerminalUnclassifiedPart, TerminalCommandPart])


class TerminalState(WireModel):
    title: str
    cwd: URI | None = None
    cols: Int | None = None
    rows: Int | None = None
    content: list[TerminalContentPart]
    exit_code: Int | None = None
    claim: TerminalClaim
    supports_command_detection: bool | None = None
    #: ``false`` ⇒ plain text, no VT parsing needed
    is_pty: bool | None = None
