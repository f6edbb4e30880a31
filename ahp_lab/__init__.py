"""ahp_lab: a Jupyter-native workbench for the Agent Host Protocol (AHP).

``from ahp_lab import Lab`` is all a notebook needs; see :class:`ahp_lab.lab.Lab`.

The names below are imported on first use, so ``import ahp_lab.reducers`` or
``python -m ahp_lab.conformance`` does not pay for the host, the notebook layer or the pydantic
models.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> the module that defines it
_EXPORTS = {
    "Lab": ".lab",
    "connect": ".client.connect",
    "LabReplay": ".lab",
    "Turn": ".lab",
    "PendingTurn": ".lab",
    "ToolCall": ".lab",
    "ActionRejected": ".lab",
    "HumanInputNeeded": ".lab",
    "UnknownFieldWarning": ".lab",
    "ProtocolError": ".protocol.errors",
    "Tool": ".tools",
    "ToolContext": ".tools",
    "ToolError": ".tools",
    "tool": ".tools",
    "to_json": ".protocol.jsonvalue",
    "dumps": ".protocol.jsonvalue",
}

__all__ = [
    "Lab",
    "connect",
    "LabReplay",
    "Turn",
    "PendingTurn",
    "ToolCall",
    "ActionRejected",
    "HumanInputNeeded",
    "UnknownFieldWarning",
    "ProtocolError",
    "Tool",
    "ToolContext",
    "ToolError",
    "tool",
    "to_json",
    "dumps",
    "__version__",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # static view of the lazily bound names
    from .lab import (
        ActionRejected,
        HumanInputNeeded,
        Lab,
        LabReplay,
        PendingTurn,
        ToolCall,
        Turn,
        UnknownFieldWarning,
    )
    from .protocol.errors import ProtocolError
    from .protocol.jsonvalue import dumps, to_json
    from .tools import Tool, ToolContext, ToolError, tool
