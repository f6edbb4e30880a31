"""ahp_lab: a Jupyter-native workbench for the Agent Host Protocol (AHP).

``from ahp_lab import Lab`` is all a notebook needs; see :class:`ahp_lab.lab.Lab`.
"""

from .lab import ActionRejected, HumanInputNeeded, Lab, LabReplay, PendingTurn, ToolCall, Turn
from .protocol.errors import ProtocolError
from .protocol.jsonvalue import dumps, to_json
from .tools import Tool, ToolContext, ToolError, tool

__version__ = "0.1.0"

__all__ = [
    "Lab",
    "LabReplay",
    "Turn",
    "PendingTurn",
    "ToolCall",
    "ActionRejected",
    "HumanInputNeeded",
    "ProtocolError",
    "Tool",
    "ToolContext",
    "ToolError",
    "tool",
    "to_json",
    "dumps",
    "__version__",
]
