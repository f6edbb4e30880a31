"""The "Model calls" view: every request a LoopAgent sent to its model, and the stable prefix.

:func:`model_calls_view_model` is pure (tested without a browser): the list of calls (newest
last, windowed to the last ``MAX_ROWS``) with each call's stable-prefix share, and the selected
call's detail: system prompt, resident tools, every message marked as part of the byte-identical
prefix of the previous request (``prefix``), new (``new``), straddling the boundary (``partial``) or
the synthetic tail of this call only (``tail``), the capability notices flagged, and the response.

The calls come from the source (``source.model_calls()``; a source without them shows no view).
They are not AHP state: the view always shows the live log, also during time travel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import traitlets

from .base import SourceView
from .sanitize import json_preview, one_line, text_block
from .source import as_source

__all__ = ["model_calls_view_model", "message_marks", "ModelCallsView", "MAX_ROWS", "MAX_MESSAGES"]

MAX_ROWS = 300
MAX_MESSAGES = 400
_TEXT = 4000


def message_marks(call: Any) -> tuple[str, list[str]]:
    """Where the stable prefix ends, per segment: the header's mark and each message's.

    A segment (header or message) is ``prefix`` when it lies wholly inside the stable prefix,
    ``partial`` when the prefix ends inside it, otherwise ``new``; synthetic tail messages are
    ``tail`` whatever their bytes (they are never part of the next request).
    """
    request = call.request
    segments = request.segments()
    prefix = call.prefix_bytes if call.previous is not None else 0
    marks: list[str] = []
    offset = 0
    for seg in segments:
        size = len(seg.encode("utf-8"))
        end = offset + size
        marks.append("prefix" if end <= prefix else ("partial" if offset < prefix else "new"))
        offset = end + 1  # the newline between segments
    tail_from = len(request.messages) - request.synthetic
    messages = ["tail" if i >= tail_from else m for i, m in enumerate(marks[1:])]
    return marks[0], messages


def _redactor(call: Any) -> Any:
    """What the call's log shows its text through (ModelCall.redact: the host's secrets masked).
    Each text is masked whole before it is cut: a cut through a secret would leave its start."""
    return getattr(call, "redact", None) or (lambda value: value)


def _row(call: Any) -> dict[str, Any]:
    r = call.response
    redact = _redactor(call)
    if call.error:
        said = f"error: {one_line(redact(call.error), 120)}"
    elif r is None:
        said = "…"
    else:
        bits = (
            [f"{len(r.tool_calls)} tool call{'s' if len(r.tool_calls) != 1 else ''}"] if r.tool_calls else []
        )
        if r.text:
            bits.append(one_line(redact(r.text), 80))
        said = " · ".join(bits) or "(empty)"
    return {
        "index": call.index,
        "chat": call.chat,
        "turnId": call.turn_id,
        "messages": len(call.request.messages),
        "tools": len(call.request.tools),
        "share": round(call.share, 4),
        "stable": call.stable,
        "synthetic": call.request.synthetic,
        "notices": len(call.new_notices),
        "reports": len(call.reports),
        "pending": call.response is None and call.error is None,
        "said": said,
    }


def _content(message: Mapping[str, Any]) -> Any:
    content = message.get("content")
    if message.get("tool_calls"):
        calls = [f"{c['function']['name']}({c['function']['arguments']})" for c in message["tool_calls"]]
        content = (str(content or "") + "\n" if content else "") + "\n".join(f"→ {c}" for c in calls)
    return content if isinstance(content, str) else str(content)


def _detail(call: Any, limits: Mapping[str, int]) -> dict[str, Any]:
    header, marks = message_marks(call)
    request = call.request
    redact = _redactor(call)
    notices = set(call.notices)
    items = []
    start = max(0, len(request.messages) - MAX_MESSAGES)
    for i in range(start, len(request.messages)):
        m = request.messages[i]
        kind = "notice" if i in notices else ("tail" if marks[i] == "tail" else m.get("role", "?"))
        items.append(
            {
                "i": i,
                "role": str(m.get("role", "?")),
                "kind": kind,
                "mark": marks[i],
                "extension": m.get("_synthetic"),
                "block": text_block(
                    redact(_content(m)), f"mc{call.index}.m{i}", limits, markdown=False, limit=_TEXT
                ),
            }
        )
    r = call.response
    return {
        "index": call.index,
        "chat": call.chat,
        "turnId": call.turn_id,
        "model": request.model,
        "share": round(call.share, 4),
        "stable": call.stable,
        "previous": call.previous,
        "prefixBytes": call.prefix_bytes,
        "totalBytes": call.total_bytes,
        "header": header,
        "system": text_block(
            redact(request.system), f"mc{call.index}.system", limits, markdown=False, limit=_TEXT
        ),
        "tools": [t.get("function", {}).get("name") for t in request.tools],
        "toolDefinitions": json_preview(redact(request.tools), f"mc{call.index}.tools", limits),
        "messages": items,
        "messagesOmitted": start,
        "reports": [one_line(redact(r_), 300) for r_ in call.reports],
        "error": one_line(redact(call.error), 300) if call.error else None,
        "response": None
        if r is None
        else {
            "block": text_block(
                redact(_content(r.message()) or "(no text)"),
                f"mc{call.index}.response",
                limits,
                markdown=False,
                limit=_TEXT,
            ),
            "usage": r.usage,
        },
    }


def model_calls_view_model(
    calls: Sequence[Any] | None, selected: int | None = None, *, limits: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """The view model: ``rows`` (the last ``MAX_ROWS`` calls), ``total``, ``stableShare`` (the mean
    share of the calls after each chat's first), ``broken`` (how many broke the prefix), and the
    ``detail`` of the selected call (the newest when ``selected`` is ``None``)."""
    calls = list(calls or ())
    limits = limits or {}
    later = [c for c in calls if c.previous is not None]
    chosen = next((c for c in calls if c.index == selected), calls[-1] if calls else None)
    return {
        "available": True,
        "total": len(calls),
        "omitted": max(0, len(calls) - MAX_ROWS),
        "rows": [_row(c) for c in calls[-MAX_ROWS:]],
        "stableShare": round(sum(c.share for c in later) / len(later), 4) if later else None,
        "broken": sum(1 for c in later if not c.stable),
        "selected": chosen.index if chosen is not None else None,
        "detail": _detail(chosen, limits) if chosen is not None else None,
    }


class ModelCallsView(SourceView):
    """What the model saw, call by call (see the module docstring). Click a row to see a call."""

    _kind = traitlets.Unicode("modelcalls").tag(sync=True)
    rows = traitlets.List([]).tag(sync=True)
    summary = traitlets.Dict({}).tag(sync=True)
    detail = traitlets.Dict({}).tag(sync=True)
    selected = traitlets.Int(None, allow_none=True).tag(sync=True)

    def __init__(self, source: Any, **kwargs: Any) -> None:
        source = as_source(source)
        self._unsubscribe_calls: Any = None
        super().__init__(source, **kwargs)
        subscribe = getattr(source, "subscribe_model_calls", None)
        if callable(subscribe):
            self._unsubscribe_calls = subscribe(lambda _call: self._coalescer.request())

    @traitlets.observe("selected")
    def _selected_changed(self, _change: Any) -> None:
        if hasattr(self, "_coalescer"):
            self.refresh()

    def render_view(self) -> None:
        get = getattr(self._source, "model_calls", None)
        calls = get() if callable(get) else None
        vm = model_calls_view_model(calls, self.selected, limits=self._limits)
        rows = vm.pop("rows")
        detail = vm.pop("detail") or {}
        if rows != self.rows:
            self.rows = rows
        if detail != self.detail:
            self.detail = detail
        if vm != self.summary:
            self.summary = vm

    def _context_changed(self) -> None:
        # model calls are not AHP state: time travel leaves this view live
        self.refresh()

    def close(self) -> None:
        unsubscribe, self._unsubscribe_calls = self._unsubscribe_calls, None
        if unsubscribe is not None:
            unsubscribe()
        super().close()
