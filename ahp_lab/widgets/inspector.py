"""View model of the transition inspector: rows of the transition log, filters, one transition's detail."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ahp_lab.protocol.text import Text

from ..client.client import channel_kind_of_uri
from ..store.transitions import channel_label as short_label
from .logaccess import find_seq, log_slice
from .sanitize import clean_text, json_preview, one_line

__all__ = [
    "TransitionFilter",
    "channel_kind",
    "channel_label",
    "origin_view",
    "transition_row",
    "inspector_rows",
    "transition_detail",
    "readable_patch",
    "export_range",
]

MAX_WINDOW = 500
MAX_DIFF_OPS = 300


def channel_kind(uri: Any) -> str:
    """The channel kind a URI names (``"other"`` when its scheme does not tell)."""
    return channel_kind_of_uri(str(uri or "")) or "other"


def channel_label(uri: Any) -> str:
    """Short label of a channel URI for a table cell: its kind and the tail of its id."""
    s = one_line(uri, 300)
    return short_label(s, channel_kind(s))


def origin_view(origin: Any) -> dict[str, Any]:
    o = origin if isinstance(origin, Mapping) else {}
    kind = o.get("kind")
    if kind == "client" or (kind is None and "clientId" in o):
        cid = one_line(o.get("clientId"), 80)
        cseq = o.get("clientSeq")
        return {
            "kind": "client",
            "label": f"client {cid}" + (f" #{cseq}" if isinstance(cseq, int) else ""),
            "key": f"client {cid}",
        }
    if kind == "agent":
        name = one_line(o.get("name"), 80)
        return {"kind": "agent", "label": f"agent {name}", "key": f"agent {name}"}
    if kind == "host" or not o:
        return {"kind": "host", "label": "host", "key": "host"}
    k = one_line(kind, 40)
    return {"kind": k, "label": k, "key": k}


class TransitionFilter:
    """Filter on channel (exact URI), action type (exact, or a prefix ending in ``/``), origin key
    (``host``, ``client <id>``, ``agent <name>``, or just a kind) and accepted/rejected."""

    def __init__(self, channel: str = "", action_type: str = "", origin: str = "", status: str = "") -> None:
        self.channel = channel or ""
        self.action_type = action_type or ""
        self.origin = origin or ""
        self.status = status or ""

    @classmethod
    def from_json(cls, value: Any) -> TransitionFilter:
        v = value if isinstance(value, Mapping) else {}
        g = lambda k: v.get(k) if isinstance(v.get(k), str) else ""  # noqa: E731
        return cls(g("channel"), g("type"), g("origin"), g("status"))

    @property
    def empty(self) -> bool:
        return not (self.channel or self.action_type or self.origin or self.status)

    def matches(self, t: Any) -> bool:
        if self.channel and getattr(t, "channel", None) != self.channel:
            return False
        if self.action_type:
            action = getattr(t, "action", None)
            typ = action.get("type") if isinstance(action, Mapping) else None
            typ = typ if isinstance(typ, str) else ""
            if self.action_type.endswith("/"):
                if not typ.startswith(self.action_type):
                    return False
            elif typ != self.action_type:
                return False
        if self.origin:
            ov = origin_view(getattr(t, "origin", None))
            if self.origin not in (ov["key"], ov["kind"]):
                return False
        if self.status:
            rejected = bool(getattr(t, "rejection_reason", None))
            if (self.status == "rejected") != rejected:
                return False
        return True


def transition_row(t: Any, index: int) -> dict[str, Any]:
    """One table row (small, bounded)."""
    action = getattr(t, "action", None)
    typ = action.get("type") if isinstance(action, Mapping) else None
    reason = getattr(t, "rejection_reason", None)
    wall = getattr(t, "wall_time", None)
    seq = getattr(t, "seq", None)
    return {
        "i": index,
        "seq": seq if isinstance(seq, int) else None,
        "time": float(wall) if isinstance(wall, (int, float)) and not isinstance(wall, bool) else None,
        "channel": one_line(getattr(t, "channel", ""), 200),
        "channelKind": channel_kind(getattr(t, "channel", "")),
        "channelLabel": channel_label(getattr(t, "channel", "")),
        "type": one_line(typ, 100) if typ is not None else "(no type)",
        "origin": origin_view(getattr(t, "origin", None))["label"],
        "rejected": bool(reason),
        "reason": one_line(reason, 300) if reason else None,
    }


def inspector_rows(
    transitions: Sequence[Any],
    start: int = 0,
    count: int = 100,
    flt: TransitionFilter | Mapping[str, Any] | None = None,
    index: Sequence[int] | None = None,
) -> dict[str, Any]:
    """A window of rows of the (filtered) log: ``{"start", "total", "rows"}``.

    ``index`` (positions into ``transitions`` that pass the filter) can be passed in when the caller
    keeps it incrementally; otherwise it is computed. ``count`` is capped at ``MAX_WINDOW``.
    """
    if not isinstance(flt, TransitionFilter):
        flt = TransitionFilter.from_json(flt)
    if index is None:
        index = (
            range(len(transitions)) if flt.empty else [i for i, t in enumerate(transitions) if flt.matches(t)]
        )
    total = len(index)
    start = max(0, min(int(start), total))
    count = max(0, min(int(count), MAX_WINDOW))
    rows = [transition_row(transitions[index[k]], k) for k in range(start, min(total, start + count))]
    return {"start": start, "total": total, "rows": rows}


def _short_json(value: Any, limit: int = 400) -> str:
    if isinstance(value, Text):
        value = str(value)
    if isinstance(value, str):
        head = value[: limit * 2]
        s = json.dumps(clean_text(head), ensure_ascii=False)
    else:
        try:
            s = json.dumps(
                value, ensure_ascii=False, default=lambda o: str(o) if isinstance(o, Text) else repr(o)
            )
        except (TypeError, ValueError, RecursionError):
            s = "<unserializable>"
    s = clean_text(s[: limit * 2])
    return s if len(s) <= limit else s[: limit - 1] + "…"


def readable_patch(patch: Any, max_ops: int = MAX_DIFF_OPS) -> dict[str, Any]:
    """RFC 6902 ops as short readable lines: ``{"ops": [{"op", "path", "value", "from"}], "omitted"}``."""
    ops = patch if isinstance(patch, list) else []
    out = []
    for op in ops[:max_ops]:
        if not isinstance(op, Mapping):
            continue
        item = {"op": one_line(op.get("op"), 20), "path": one_line(op.get("path"), 300)}
        if "value" in op:
            item["value"] = _short_json(op.get("value"))
        if "from" in op:
            item["from"] = one_line(op.get("from"), 300)
        out.append(item)
    return {"ops": out, "omitted": max(0, len(ops) - max_ops), "total": len(ops)}


def transition_detail(t: Any, limits: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The selected transition: its action as JSON, the origin, rejection reason and readable diff."""
    row = transition_row(t, -1)
    seq = row["seq"]
    try:
        patch = t.diff
    except Exception as exc:  # a diff that cannot be computed is shown as such
        patch = None
        diff_error = f"{type(exc).__name__}: {one_line(str(exc), 200)}"
    else:
        diff_error = None
    origin = getattr(t, "origin", None)
    reducer_ns = getattr(t, "reducer_ns", None)
    return {
        **row,
        "originJson": json_preview(origin if isinstance(origin, Mapping) else {}, f"t{seq}/origin", limits),
        "action": json_preview(getattr(t, "action", None), f"t{seq}/action", limits),
        "diff": readable_patch(patch) if diff_error is None else {"ops": [], "omitted": 0, "total": 0},
        "diffError": diff_error,
        "reducerUs": round(reducer_ns / 1000, 1) if isinstance(reducer_ns, int) else None,
    }


# -- the ACP lane: raw ACP frames next to the AHP transitions each produced ------------------------

MAX_FRAME_SEQS = 20


def acp_frame_row(frame: Any, index: int) -> dict[str, Any]:
    """One ACP frame as a lane row: direction, label, kind and the linked seqs (bounded)."""
    f = frame if isinstance(frame, Mapping) else {}
    seqs = [s for s in f.get("seqs") or () if isinstance(s, int) and not isinstance(s, bool)]
    return {
        "i": index,
        "frame": f.get("index") if isinstance(f.get("index"), int) else None,
        "direction": "in" if f.get("direction") == "in" else "out",
        "label": one_line(f.get("label"), 120),
        "kind": one_line(f.get("kind"), 20),
        "ms": f.get("ms") if isinstance(f.get("ms"), int) else None,
        "seqs": seqs[:MAX_FRAME_SEQS],
        "moreSeqs": max(0, len(seqs) - MAX_FRAME_SEQS),
    }


def acp_lane(frames: Sequence[Any], start: int = 0, count: int = 100) -> dict[str, Any]:
    """A window of the ACP lane: ``{"start", "total", "rows"}`` (``count`` capped at ``MAX_WINDOW``)."""
    total = len(frames)
    start = max(0, min(int(start), total))
    count = max(0, min(int(count), MAX_WINDOW))
    rows = [acp_frame_row(frames[k], k) for k in range(start, min(total, start + count))]
    return {"start": start, "total": total, "rows": rows}


def acp_frame_detail(frame: Any, limits: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The selected ACP frame: its row plus the JSON-RPC message, bounded like any JSON preview."""
    row = acp_frame_row(frame, -1)
    message = frame.get("message") if isinstance(frame, Mapping) else None
    return {**row, "message": json_preview(message, f"acp{row['frame']}/message", limits)}


MAX_RANGE_SCAN = 20_000  # transitions counted for the export preview; a longer range says "many"


def export_range(
    transitions: Sequence[Any], anchor: int | None, other: int | None, channel: str = ""
) -> dict[str, Any]:
    """What "export as fixture" would take: seqs ``anchor..other`` (either order; ``other`` ``None``
    for the anchor alone) on one channel, the channel filter's or else the anchor transition's.
    ``{"first", "last", "channel", "channelLabel", "actions"}`` (``actions``: accepted transitions
    on that channel in the range, ``None`` past ``MAX_RANGE_SCAN``), or ``{}`` with no anchor."""
    if anchor is None:
        return {}
    lo, hi = sorted((anchor, anchor if other is None else other))
    if not channel:
        t = find_seq(transitions, anchor)[1]
        channel = str(getattr(t, "channel", "") or "")
    start = find_seq(transitions, lo)[0]
    stop = find_seq(transitions, hi)[0]
    actions = None
    if start is not None and stop is not None and stop - start < MAX_RANGE_SCAN:
        actions = sum(
            1
            for t in log_slice(transitions, start, stop + 1)
            if getattr(t, "channel", None) == channel and not getattr(t, "rejection_reason", None)
        )
    return {
        "first": lo,
        "last": hi,
        "channel": one_line(channel, 300),
        "channelLabel": channel_label(channel),
        "actions": actions,
    }
