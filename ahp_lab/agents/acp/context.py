"""The context variables the ACP bridge and its mixins share: which bridge, frame, cause and turn
the code running now belongs to."""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .bridge import Bridge
    from .frames import AcpFrame
    from .mapping import TurnMap

# The bridge whose connection is being set up (inherited by the SDK's receive task) and the frame
# a handler task is answering (set by the observer just before the SDK creates that task).
_BRIDGE: contextvars.ContextVar[Bridge | None] = contextvars.ContextVar("acp_bridge", default=None)
_FRAME: contextvars.ContextVar[AcpFrame | None] = contextvars.ContextVar("acp_frame", default=None)
_CAUSE: contextvars.ContextVar[tuple[int, ...]] = contextvars.ContextVar("acp_cause", default=())
# The turn that was current when the frame arrived: an update the agent sent for a prompt it was
# asked to cancel is never mapped into the next turn, even if its handler runs after that started.
_TURN: contextvars.ContextVar[TurnMap | None] = contextvars.ContextVar("acp_turn", default=None)


class AgentFailure(Exception):
    """The agent failed in a way that ends the turn and the process (the message says how)."""
