"""ahp_lab: a Jupyter-native workbench for the Agent Host Protocol (AHP).

``from ahp_lab import Lab`` is all a notebook needs; see :class:`ahp_lab.lab.Lab`.
"""

from .lab import ActionRejected, HumanInputNeeded, Lab, LabReplay, ToolCall, Turn
from .tools import Tool, ToolContext, ToolError, tool

__version__ = "0.1.0"

__all__ = [
    "Lab",
    "LabReplay",
    "Turn",
    "ToolCall",
    "ActionRejected",
    "HumanInputNeeded",
    "Tool",
    "ToolContext",
    "ToolError",
    "tool",
    "__version__",
]
