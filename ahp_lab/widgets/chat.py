"""View model of the chat pane: turns, response parts, and the active turn as patches."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .content import tool_call_view
from .sanitize import one_line, safe_url, text_block

__all__ = ["part_view", "turn_view", "chat_view_model", "active_turn_patch", "promote_patch", "MAX_PARTS"]

MAX_PARTS = 400
#: A turn of more than MAX_PARTS parts shows its newest ones, from a part whose position is a
#: multiple of this: the window moves in steps (each a reset of the active turn in the view),
#: not at every part.
PARTS_STEP = 100


def _m(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def part_view(part: Any, ref: str, limits: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Display form of one response part (unknown kinds become ``{"kind": "unknown"}``)."""
    p = _m(part)
    kind = p.get("kind")
    if kind == "markdown":
        return {
            "kind": "markdown",
            "id": one_line(p.get("id"), 200),
            "block": text_block(p.get("content"), ref, limits, markdown=True),
        }
    if kind == "reasoning":
        return {
            "kind": "reasoning",
            "id": one_line(p.get("id"), 200),
            "block": text_block(p.get("content"), ref, limits, markdown=False),
        }
    if kind == "toolCall":
        return {"kind": "toolCall", "toolCall": tool_call_view(p.get("toolCall"), ref, limits, full=False)}
    if kind == "systemNotification":
        return {"kind": "systemNotification", "block": text_block(p.get("content"), ref, limits)}
    if kind == "contentRef":
        return {
            "kind": "contentRef",
            "uri": one_line(p.get("uri"), 300),
            "contentType": one_line(p.get("contentType"), 100),
        }
    if kind == "inputRequest":
        req = _m(p.get("request"))
        qs = req.get("questions")
        return {
            "kind": "inputRequest",
            "requestId": one_line(req.get("id"), 200),
            "message": one_line(req.get("message"), 500),
            "url": safe_url(req.get("url")),
            "questions": len(qs) if isinstance(qs, list) else 0,
            "response": one_line(p.get("response"), 20) or None,
        }
    return {"kind": "unknown", "rawKind": one_line(kind, 60) if kind is not None else "?"}


def _message_view(message: Any, ref: str, limits: Mapping[str, int] | None) -> dict[str, Any]:
    msg = _m(message)
    origin = _m(msg.get("origin")).get("kind")
    atts = msg.get("attachments")
    return {
        "block": text_block(msg.get("text"), ref, limits, markdown=False),
        "origin": one_line(origin, 40) or "user",
        "attachments": [one_line(_m(a).get("label"), 120) for a in atts[:20]]
        if isinstance(atts, list)
        else [],
    }


def _cached_part(p: Any, ref: str, limits: Mapping[str, int] | None, cache: dict | None) -> dict[str, Any]:
    if cache is None:
        return part_view(p, ref, limits)
    hit = cache.get(id(p))
    if hit is not None and hit[0] is p and hit[1] == ref:
        return hit[2]
    view = part_view(p, ref, limits)
    cache[id(p)] = (p, ref, view)
    return view


def turn_view(
    turn: Any,
    limits: Mapping[str, int] | None = None,
    *,
    active: bool = False,
    cache: dict | None = None,
) -> dict[str, Any]:
    """Display form of a completed turn (or, with ``active=True``, of the active turn).

    ``cache`` (a dict the caller keeps, cleared when ``limits`` change) reuses part views of part
    objects seen before: reducers share unchanged parts, so a delta recomputes only its own part."""
    t = _m(turn)
    tid = one_line(t.get("id"), 200)
    parts = t.get("responseParts")
    parts = parts if isinstance(parts, list) else []
    # the newest parts: a question or a tool call waiting for the person, and the answer, come last
    # (the oldest 400 were shown, and "N more parts not shown" hid them: ACP round 16)
    first = 0 if len(parts) <= MAX_PARTS else -(-(len(parts) - MAX_PARTS) // PARTS_STEP) * PARTS_STEP
    err = _m(t.get("error"))
    usage = _m(t.get("usage"))
    return {
        "id": tid,
        "active": active,
        "state": "active" if active else (one_line(t.get("state"), 20) or "complete"),
        "message": _message_view(t.get("message"), f"turn/{tid}/message", limits),
        "parts": [
            _cached_part(p, f"turn/{tid}/part/{i}", limits, cache) for i, p in enumerate(parts[first:], first)
        ],
        "partsOmitted": first,  # the earliest ones
        "error": one_line(err.get("message"), 500) if err else None,
        "duration": t.get("duration")
        if isinstance(t.get("duration"), (int, float)) and not isinstance(t.get("duration"), bool)
        else None,
        "usage": {k: usage[k] for k in ("inputTokens", "outputTokens") if isinstance(usage.get(k), int)}
        or None,
    }


def chat_view_model(
    chat_state: Any,
    *,
    tail: int = 20,
    limits: Mapping[str, int] | None = None,
    read_only: bool = False,
) -> dict[str, Any]:
    """The chat pane's full view: the last ``tail`` completed turns and the active turn.

    The widget sends this once (on render and on resets) and then only
    :func:`active_turn_patch` results and newly completed turns.
    """
    st = _m(chat_state)
    turns = st.get("turns")
    turns = [t for t in turns if isinstance(t, Mapping)] if isinstance(turns, list) else []
    first = max(0, len(turns) - max(0, tail))
    active = st.get("activeTurn")
    return {
        "title": one_line(st.get("title"), 200),
        "status": st.get("status") if isinstance(st.get("status"), int) else None,
        "turnCount": len(turns),
        "first": first,
        "turns": [turn_view(t, limits) for t in turns[first:]],
        "active": turn_view(active, limits, active=True) if isinstance(active, Mapping) else None,
        "readOnly": bool(read_only),
        "hasOlder": first > 0 or bool(st.get("turnsNextCursor")),
    }


def _block_append(q: Any, p: Mapping[str, Any]) -> list[Any] | None:
    """``[text]`` or ``[text, length, truncated]`` turning part view ``q`` into ``p`` when only the
    text of its block grew; ``None`` when the part must be sent whole."""
    if not isinstance(q, Mapping) or q.get("kind") != p.get("kind") or "block" not in p or "block" not in q:
        return None
    a, b = q["block"], p["block"]
    if a["truncated"] and not b["truncated"]:
        return None  # a "show more" or a shrink: send it whole
    if a.get("ref") != b.get("ref") or a.get("markdown") != b.get("markdown"):
        return None
    if not b["text"].startswith(a["text"]):
        return None
    if {k: v for k, v in p.items() if k != "block"} != {k: v for k, v in q.items() if k != "block"}:
        return None
    text = b["text"][len(a["text"]) :]
    if not a["truncated"] and not b["truncated"] and b["length"] == a["length"] + len(text):
        return [text]
    return [text, b["length"], b["truncated"]]


def active_turn_patch(
    previous: dict[str, Any] | None, current: dict[str, Any] | None
) -> dict[str, Any] | None:
    """What the view needs to go from the active-turn view ``previous`` to ``current``.

    ``None`` when nothing changed; ``{"reset": current}`` for a new (or removed) active turn;
    otherwise ``{"id", "parts": [[index, part]...], "appends": [[index, text]...], "length"}`` where
    an append extends a text block that only grew (streamed deltas). Once a block is capped (its
    view shows the first ``limit`` characters of a longer text), an append is
    ``[index, text, length, truncated]``: the text that still fits (often ``""``) and the new raw
    length, so a stream past the cap costs a few bytes per sync instead of the whole capped block.
    """
    if previous == current:
        return None
    if previous is None or current is None or previous.get("id") != current.get("id"):
        return {"reset": current}
    if previous.get("message") != current.get("message") or previous.get("partsOmitted") != current.get(
        "partsOmitted"
    ):
        return {"reset": current}  # (the window of the newest parts moved: indexes differ)
    old = previous.get("parts", [])
    new = current.get("parts", [])
    parts: list[list[Any]] = []
    appends: list[list[Any]] = []
    for i, p in enumerate(new):
        q = old[i] if i < len(old) else None
        if q == p:
            continue
        append = _block_append(q, p)
        if append is not None:
            appends.append([i, *append])
            continue
        parts.append([i, p])
    extra = {k: current[k] for k in ("usage",) if current.get(k) != previous.get(k)}
    return {"id": current.get("id"), "parts": parts, "appends": appends, "length": len(new), **extra}


_TURN_FIELDS = ("active", "state", "error", "duration", "usage", "partsOmitted")


def promote_patch(active: dict[str, Any] | None, done: dict[str, Any]) -> dict[str, Any] | None:
    """The active turn the view holds (``active``) became the completed turn ``done``: what turns
    one into the other, so a finished turn is not sent again whole (its streamed text can be
    64 KB). ``{"id", "patch": <active_turn_patch>, "fields": {...}}``, or ``None`` when ``done`` is
    another turn (or its message changed) and must be sent whole."""
    if not isinstance(active, Mapping) or active.get("id") != done.get("id"):
        return None
    patch = active_turn_patch(dict(active), {**done, "active": True})
    if patch is None:
        patch = {"id": done.get("id"), "parts": [], "appends": [], "length": len(done.get("parts", []))}
    if "reset" in patch:
        return None
    return {"id": done.get("id"), "patch": patch, "fields": {k: done.get(k) for k in _TURN_FIELDS}}
