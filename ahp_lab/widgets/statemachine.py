"""The tool-call state machine of ``chat-channel.md`` §7 as a drawable graph.

:func:`state_machine_model` returns nodes (the 7 statuses plus the start/end pseudo-states) and every
edge of the spec's diagram with precomputed SVG geometry, and marks the path one tool call took and
its current state. The browser draws it with ``createElementNS`` and ``textContent`` only, so no
markup string ever reaches ``innerHTML``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "STATUSES",
    "TERMINAL_STATUSES",
    "TURN_END_ACTIONS",
    "EDGES",
    "edge_for_step",
    "state_machine_model",
]

STATUSES = (
    "streaming",
    "pending-confirmation",
    "running",
    "auth-required",
    "pending-result-confirmation",
    "completed",
    "cancelled",
)
TERMINAL_STATUSES = frozenset({"completed", "cancelled"})
TURN_END_ACTIONS = frozenset({"chat/turnComplete", "chat/turnCancelled", "chat/error"})

# Node layout: centre x, centre y, width (height is fixed). ``cancelled`` is a wide bar at the bottom
# so that every force-cancel edge can drop straight into it; the two final markers follow the spec's
# ``C --> [*]`` and ``X --> [*]``.
_NODE_H = 30
_NODES: dict[str, tuple[float, float, float]] = {
    "[*]": (22, 50, 14),
    "streaming": (110, 50, 120),
    "pending-confirmation": (360, 50, 170),
    "pending-result-confirmation": (640, 50, 210),
    "running": (360, 160, 120),
    "completed": (630, 160, 120),
    "auth-required": (480, 260, 130),
    "cancelled": (430, 340, 780),
    "[end]": (750, 160, 14),
    "[end2]": (430, 385, 14),
}
WIDTH, HEIGHT = 840, 400

# (id, from, to, label, kind) — kind "turnEnd" marks the force-cancel edges (T13).
EDGES: tuple[tuple[str, str, str, str, str], ...] = (
    ("start", "[*]", "streaming", "toolCallStart", "action"),
    ("S-S", "streaming", "streaming", "toolCallDelta", "action"),
    ("S-PC", "streaming", "pending-confirmation", "toolCallReady", "action"),
    ("S-R", "streaming", "running", "toolCallReady (confirmed)", "action"),
    ("PC-PC", "pending-confirmation", "pending-confirmation", "toolCallReady (refresh)", "action"),
    (
        "PC-R",
        "pending-confirmation",
        "running",
        "toolCallReady (confirmed) / toolCallConfirmed (approved)",
        "action",
    ),
    ("PC-X", "pending-confirmation", "cancelled", "toolCallConfirmed (denied or skipped)", "action"),
    ("PC-C", "pending-confirmation", "completed", "toolCallComplete (confirmed = not-needed)", "action"),
    (
        "PC-PRC",
        "pending-confirmation",
        "pending-result-confirmation",
        "toolCallComplete (requiresResultConfirmation)",
        "action",
    ),
    ("R-R", "running", "running", "toolCallContentChanged / toolCallReady (confirmed)", "action"),
    ("R-PC", "running", "pending-confirmation", "toolCallReady (re-confirmation)", "action"),
    ("R-AR", "running", "auth-required", "toolCallAuthRequired (MCP contributor only)", "action"),
    ("R-C", "running", "completed", "toolCallComplete", "action"),
    (
        "R-PRC",
        "running",
        "pending-result-confirmation",
        "toolCallComplete (requiresResultConfirmation)",
        "action",
    ),
    ("AR-R", "auth-required", "running", "toolCallAuthResolved", "action"),
    ("AR-C", "auth-required", "completed", "toolCallComplete (success = false only)", "action"),
    ("PRC-C", "pending-result-confirmation", "completed", "toolCallResultConfirmed (approved)", "action"),
    (
        "PRC-X",
        "pending-result-confirmation",
        "cancelled",
        "toolCallResultConfirmed (denied, result-denied)",
        "action",
    ),
    ("S-X-end", "streaming", "cancelled", "turn end (skipped)", "turnEnd"),
    ("PC-X-end", "pending-confirmation", "cancelled", "turn end (skipped)", "turnEnd"),
    ("R-X-end", "running", "cancelled", "turn end (skipped)", "turnEnd"),
    ("AR-X-end", "auth-required", "cancelled", "turn end (skipped)", "turnEnd"),
    ("PRC-X-end", "pending-result-confirmation", "cancelled", "turn end (skipped)", "turnEnd"),
    ("C-end", "completed", "[end]", "", "final"),
    ("X-end", "cancelled", "[end2]", "", "final"),
)
_EDGE_BY_KEY: dict[tuple[str, str, str], str] = {(f, t, k): i for i, f, t, _l, k in EDGES}

# Hand-routed geometry of every edge: SVG path and label anchor.
_ROUTES: dict[str, tuple] = {
    "start": ("M29,50 L50,50", 14, 27, "start"),
    "S-S": ("M128,35 C124,8 166,8 162,35", 145, 10),
    "S-PC": ("M170,50 L275,50", 222, 44),
    "S-R": ("M150,65 Q175,160 300,160", 205, 142),
    "PC-PC": ("M398,35 C394,8 436,8 432,35", 415, 10),
    "PC-R": ("M345,65 L345,145", 300, 96),
    "R-PC": ("M375,145 L375,65", 420, 120),
    "PC-X": ("M290,65 C272,150 252,250 250,325", 232, 215),
    "PC-X-end": ("M305,65 C296,160 282,250 280,325", 285, 290),
    "PC-C": ("M430,65 L580,145", 525, 98),
    "PC-PRC": ("M445,50 L535,50", 490, 44),
    "R-R": ("M402,145 C398,118 440,118 436,145", 420, 116),
    "R-AR": ("M395,175 L440,245", 412, 222, "end"),
    "AR-R": ("M470,245 L415,175", 452, 200, "start"),
    "R-C": ("M420,160 L570,160", 495, 154),
    "R-PRC": ("M415,145 L560,65", 470, 90),
    "AR-C": ("M545,260 Q630,260 630,175", 610, 252),
    "AR-X-end": ("M480,275 L480,325", 480, 305),
    "R-X-end": ("M330,175 L330,325", 330, 265),
    "S-X-end": ("M110,65 L110,325", 110, 200),
    "PRC-C": ("M630,65 L630,145", 630, 108),
    "PRC-X": ("M745,50 Q800,50 800,100 L800,325", 800, 215),
    "PRC-X-end": ("M720,65 Q775,75 775,120 L775,325", 775, 290),
    "C-end": ("M690,160 L743,160", 716, 154),
    "X-end": ("M430,355 L430,378", 430, 366),
}


def edge_for_step(from_status: str | None, to_status: str, action_type: str) -> str | None:
    """The id of the diagram edge a recorded step took (``None`` if it is not in the diagram)."""
    if from_status is None:
        return "start" if to_status == "streaming" else None
    kind = "turnEnd" if action_type in TURN_END_ACTIONS else "action"
    edge = _EDGE_BY_KEY.get((from_status, to_status, kind))
    if edge is None and kind == "action":  # e.g. an unknown action that cancelled: fall back
        edge = _EDGE_BY_KEY.get((from_status, to_status, "turnEnd"))
    return edge


_STATIC_EDGES: list[dict[str, Any]] = [
    {
        "id": i,
        "from": f,
        "to": t,
        "label": label,
        "kind": k,
        "d": _ROUTES[i][0],
        "lx": _ROUTES[i][1],
        "ly": _ROUTES[i][2],
        "anchor": _ROUTES[i][3] if len(_ROUTES[i]) > 3 else "middle",
    }
    for i, f, t, label, k in EDGES
]


def state_machine_model(
    steps: Iterable[Mapping[str, Any]] = (), current: str | None = None
) -> dict[str, Any]:
    """Nodes and edges of the tool-call state machine with one call's path highlighted.

    ``steps`` are the recorded status changes of the call, oldest first, each a mapping with
    ``from`` (``None`` for the start), ``to``, ``action`` (action type) and ``seq``. ``current`` is
    the call's status now (an unknown status marks no node). Edges the call took carry
    ``taken: True``, the seqs that took them and the order of their first use.
    """
    taken: dict[str, list[Any]] = {}
    order: dict[str, int] = {}
    visited: set[str] = set()
    for step in steps:
        if not isinstance(step, Mapping):
            continue
        frm = step.get("from")
        to = step.get("to")
        if not isinstance(to, str):
            continue
        edge = edge_for_step(frm if isinstance(frm, str) else None, to, str(step.get("action") or ""))
        if edge is None:
            continue
        if edge not in order:
            order[edge] = len(order) + 1
        taken.setdefault(edge, []).append(step.get("seq"))
        visited.add(to)
        if isinstance(frm, str):
            visited.add(frm)
    if current in TERMINAL_STATUSES:
        endpoint = "C-end" if current == "completed" else "X-end"
        taken.setdefault(endpoint, [])
        order.setdefault(endpoint, len(order) + 1)
    nodes = []
    for name, (x, y, w) in _NODES.items():
        pseudo = name.startswith("[")
        nodes.append(
            {
                "id": name,
                "label": "" if pseudo else name,
                "x": x,
                "y": y,
                "w": w,
                "h": w if pseudo else _NODE_H,
                "pseudo": pseudo,
                "current": name == current,
                "visited": name in visited
                or name == current
                or (name == "[*]" and bool(visited))
                or (name == "[end]" and current == "completed")
                or (name == "[end2]" and current == "cancelled"),
            }
        )
    edges = []
    for e in _STATIC_EDGES:
        seqs = taken.get(e["id"])
        edges.append(
            {
                **e,
                "taken": seqs is not None,
                "order": order.get(e["id"]),
                "seqs": [s for s in (seqs or [])[:20] if isinstance(s, int)],
            }
        )
    known = current in STATUSES
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "nodes": nodes,
        "edges": edges,
        "current": current if known else None,
        "unknownCurrent": None if known or current is None else str(current)[:80],
    }
