"""Agent backends behind the host, all behind one async interface (:class:`Agent`)."""

from .base import Agent, InputOutcome, ToolInfo, ToolOutcome, TurnContext, TurnFailed
from .loop import LoopAgent
from .scripted import ScriptedAgent

__all__ = [
    "Agent",
    "TurnContext",
    "ToolInfo",
    "ToolOutcome",
    "InputOutcome",
    "TurnFailed",
    "ScriptedAgent",
    "LoopAgent",
]
