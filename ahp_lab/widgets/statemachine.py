"""The tool-call state machine of ``chat-channel.md`` §7 as a drawable graph.

:func:`state_machine_model` returns nodes (the 7 statuses plus the start/end pseudo-states) and every
edge of the spec's diagram with precomputed SVG geometry, and marks the path one tool call took and
its current state. The browser draws it with ``createElementNS`` and ``textContent`` only, so no
markup string ever reaches ``innerHTML``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "STATUSES",
    "TERMINAL_STATUSES",
    "TURN_END_ACTIONS",
    "EDGES",
    "edge_for_step",
    "label_width",
    "layout_labels",
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


# -- edge labels -------------------------------------------------------------------------------
# The taken edges are labelled with the actions that took them. Labels are placed here, not in the
# browser, so that the layout is a pure function tested without one: each label takes the first
# candidate position (its hand-picked anchor, then points along its edge, above, below, left and
# right of it) whose box stays inside the diagram and meets no other label and no state box; a
# label that finds none goes to a legend row under the diagram. Widths are estimated on the wide
# side (DejaVu Sans Bold, Debian's default UI font, at the label's 10 px), so a narrower font only
# leaves more room; tests/e2e measures the rendered boxes.
LABEL_FONT_PX = 10.0  # .ahp-sm-label.taken in widgets.css
_LABEL_ASCENT, _LABEL_DESCENT = 9.0, 3.0  # of the text box around its baseline
_LABEL_GAP = 2.0  # between two label boxes, and between a label and a state box
_LEGEND_ROW = 15.0
_NARROW = frozenset("iljtfrI.,:;'!|()[]/ ")
_WIDE = frozenset("mwMW")


def label_width(text: str, font_px: float = LABEL_FONT_PX) -> float:
    """Estimated width of ``text`` in the label font (on the wide side)."""
    em = 0.0
    for ch in text:
        if ch in _NARROW:
            em += 0.42
        elif ch in _WIDE:
            em += 1.06
        elif ch.isupper():
            em += 0.80
        elif ch.isdigit():
            em += 0.72
        else:
            em += 0.70
    return em * font_px


def _label_box(x: float, y: float, anchor: str, width: float) -> tuple[float, float, float, float]:
    left = x - width / 2 if anchor == "middle" else x - width if anchor == "end" else x
    return (left, y - _LABEL_ASCENT, left + width, y + _LABEL_DESCENT)


def _meets(a: tuple[float, ...], b: tuple[float, ...], gap: float = _LABEL_GAP) -> bool:
    return a[0] < b[2] + gap and b[0] < a[2] + gap and a[1] < b[3] + gap and b[1] < a[3] + gap


def _path_points(d: str, samples: int = 16) -> list[tuple[float, float]]:
    """Points along an SVG path made of absolute M, L, Q and C commands (the routes above)."""
    nums: list[float] = []
    cmd = ""
    pts: list[tuple[float, float]] = []
    pos = (0.0, 0.0)
    tokens = (
        d.replace(",", " ").replace("M", " M ").replace("L", " L ").replace("Q", " Q ").replace("C", " C ")
    )

    def flush() -> None:
        nonlocal pos
        if cmd == "M" and len(nums) >= 2:
            pos = (nums[0], nums[1])
            pts.append(pos)
        elif cmd == "L" and len(nums) >= 2:
            end = (nums[0], nums[1])
            pts.extend((pos[0] + (end[0] - pos[0]) * k / samples, pos[1] + (end[1] - pos[1]) * k / samples)
                       for k in range(1, samples + 1))  # fmt: skip
            pos = end
        elif cmd in ("Q", "C") and len(nums) >= (4 if cmd == "Q" else 6):
            ctrl = [pos] + [(nums[i], nums[i + 1]) for i in range(0, len(nums) - 1, 2)]
            for k in range(1, samples + 1):
                t = k / samples
                layer = ctrl
                while len(layer) > 1:  # de Casteljau
                    layer = [
                        (a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t)
                        for a, b in zip(layer, layer[1:], strict=False)
                    ]
                pts.append(layer[0])
            pos = ctrl[-1]

    for tok in tokens.split():
        if tok in ("M", "L", "Q", "C"):
            flush()
            cmd, nums = tok, []
        else:
            nums.append(float(tok))
    flush()
    return pts


def _along(points: list[tuple[float, float]], fraction: float) -> tuple[float, float]:
    """The point at ``fraction`` of a polyline's length."""
    if len(points) < 2:
        return points[0] if points else (0.0, 0.0)
    lengths = [0.0]
    for a, b in zip(points, points[1:], strict=False):
        lengths.append(lengths[-1] + ((b[0] - a[0]) ** 2 + (b[1] - a[1]) ** 2) ** 0.5)
    want = lengths[-1] * fraction
    for k in range(1, len(points)):
        if lengths[k] >= want:
            seg = lengths[k] - lengths[k - 1] or 1.0
            t = (want - lengths[k - 1]) / seg
            a, b = points[k - 1], points[k]
            return (a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t)
    return points[-1]


def _candidates(edge: Mapping[str, Any]) -> tuple[tuple[float, float, str], ...]:
    """Label positions for one edge, best first: its hand-picked anchor, then around its points."""
    return _candidates_of(edge["d"], float(edge["lx"]), float(edge["ly"]), edge.get("anchor") or "middle")


@functools.lru_cache(maxsize=256)
def _candidates_of(d: str, lx: float, ly: float, anchor: str) -> tuple[tuple[float, float, str], ...]:
    out = [(lx, ly - 3, anchor)]
    points = _path_points(d)
    for fraction in (0.5, 0.35, 0.65, 0.2, 0.8, 0.1, 0.9):
        x, y = _along(points, fraction)
        out += [
            (x, y - 5, "middle"),  # above
            (x, y + 13, "middle"),  # below
            (x + 7, y + 4, "start"),  # right
            (x - 7, y + 4, "end"),  # left
        ]
    return tuple(out)


def layout_labels(
    labelled: list[tuple[Mapping[str, Any], str]],
    nodes: Iterable[Mapping[str, Any]],
    width: float = WIDTH,
    height: float = HEIGHT,
) -> tuple[dict[str, dict[str, Any]], float]:
    """Positions ``{edge id: {"x", "y", "anchor", "box"}}`` for ``(edge, text)`` pairs (placed in
    order), and the diagram's height with the legend rows the labels that found no room need."""
    obstacles = [
        (n["x"] - n["w"] / 2, n["y"] - n["h"] / 2, n["x"] + n["w"] / 2, n["y"] + n["h"] / 2) for n in nodes
    ]
    placed: dict[str, dict[str, Any]] = {}
    boxes: list[tuple[float, float, float, float]] = []
    legend: list[tuple[str, float]] = []
    for edge, text in labelled:
        w = label_width(text)
        spot = None
        for x, y, anchor in _candidates(edge):
            box = _label_box(x, y, anchor, w)
            if box[0] < 1 or box[2] > width - 1 or box[1] < 1 or box[3] > height - 1:
                continue
            if any(_meets(box, b) for b in boxes) or any(_meets(box, o) for o in obstacles):
                continue
            spot = (x, y, anchor, box)
            break
        if spot is None:
            legend.append((edge["id"], w))
            continue
        boxes.append(spot[3])
        placed[edge["id"]] = {
            "x": round(spot[0], 1),
            "y": round(spot[1], 1),
            "anchor": spot[2],
            "box": spot[3],
        }
    # the legend: rows under the diagram, filled left to right
    x, y = 8.0, height + _LEGEND_ROW - _LABEL_DESCENT
    for edge_id, w in legend:
        if x > 8.0 and x + w > width - 8:
            x, y = 8.0, y + _LEGEND_ROW
        placed[edge_id] = {
            "x": x,
            "y": y,
            "anchor": "start",
            "box": _label_box(x, y, "start", w),
            "legend": True,
        }
        x += w + 16
    return placed, (y + _LABEL_DESCENT + 4 if legend else height)


_EDGE_BY_ID = {e["id"]: e for e in _STATIC_EDGES}
_NODE_BOXES = [
    {"x": x, "y": y, "w": w, "h": w if name.startswith("[") else _NODE_H}
    for name, (x, y, w) in _NODES.items()
]


@functools.lru_cache(maxsize=512)
def _static_layout(labelled: tuple[tuple[str, str], ...]) -> tuple[dict[str, dict[str, Any]], float]:
    """:func:`layout_labels` on this diagram, remembered: a streaming call redraws the same labels
    at every sync (the caller only reads the result)."""
    return layout_labels([(_EDGE_BY_ID[i], text) for i, text in labelled], _NODE_BOXES)


def _label_text(steps: list[int], actions: list[str]) -> str:
    """The edge's action names after the numbers of the call's steps that took it ("4, 6.
    toolCallConfirmed"): the numbers read as the steps, in the order the call took them."""
    names = " / ".join(dict.fromkeys(a.removeprefix("chat/") for a in actions if a)) or "?"
    if len(names) > 48:
        names = names[:47] + "…"
    if not steps:
        return names
    numbers = ", ".join(map(str, steps[:3])) + (", …" if len(steps) > 3 else "")
    return f"{numbers}. {names}"


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
    actions: dict[str, list[str]] = {}
    numbers: dict[str, list[int]] = {}  # edge -> the numbers of the steps that took it
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
        actions.setdefault(edge, []).append(str(step.get("action") or ""))
        # a run of merged steps (a stream of deltas) is one step: the label, and with it the
        # diagram synced to the browser, does not change with every delta
        numbers.setdefault(edge, []).append(sum(map(len, numbers.values())) + 1)
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
    labelled = []
    for e in _STATIC_EDGES:
        seqs = taken.get(e["id"])
        edge = {
            **e,
            "taken": seqs is not None,
            "order": order.get(e["id"]),
            "seqs": [s for s in (seqs or [])[:20] if isinstance(s, int)],
        }
        if seqs is not None and e["label"]:
            edge["text"] = _label_text(numbers.get(e["id"], []), actions.get(e["id"], []))
            labelled.append((edge, edge["text"]))
        edges.append(edge)
    labelled.sort(key=lambda pair: pair[0]["order"] or 0)
    spots, height = _static_layout(tuple((edge["id"], text) for edge, text in labelled))
    for edge, _text in labelled:
        spot = spots[edge["id"]]
        edge.update(
            {"lx": spot["x"], "ly": spot["y"], "anchor": spot["anchor"], "legend": spot.get("legend", False)}
        )
    known = current in STATUSES
    return {
        "width": WIDTH,
        "height": height,
        "nodes": nodes,
        "edges": edges,
        "current": current if known else None,
        "unknownCurrent": None if known or current is None else str(current)[:80],
    }
