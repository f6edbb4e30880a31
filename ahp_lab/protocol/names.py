"""Names the protocol gives to states, as plain constants (no pydantic: the reducers import this).

The tool-call lifecycle of chat-channel §4: a call is ``streaming`` while its arguments arrive,
may wait for the user (``pending-confirmation``, ``auth-required``) or for a result confirmation
(``pending-result-confirmation``), runs, and ends ``completed`` or ``cancelled``.
"""

from __future__ import annotations

STREAMING = "streaming"
PENDING_CONFIRMATION = "pending-confirmation"
RUNNING = "running"
AUTH_REQUIRED = "auth-required"
PENDING_RESULT_CONFIRMATION = "pending-result-confirmation"
COMPLETED = "completed"
CANCELLED = "cancelled"

#: The statuses in which a tool call waits for the user (the chat is then input-needed).
#: A tuple, not a set: a status read from state may be any JSON value, and an object or array is
#: not hashable (a set test would raise where the reference's ``===`` is simply false).
BLOCKING_TOOL_CALL_STATES = (PENDING_CONFIRMATION, PENDING_RESULT_CONFIRMATION, AUTH_REQUIRED)


def new_turn_id() -> str:
    """A fresh turn id (``turn-`` and 8 hex digits), for a turn the host or a notebook opens."""
    import uuid  # here: the reducers import this module, and need no ids

    return f"turn-{uuid.uuid4().hex[:8]}"
