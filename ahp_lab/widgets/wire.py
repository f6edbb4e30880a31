"""The raw wire view: every JSON-RPC frame of a connection, as it crossed the socket.

``wire_view_model(frames, ...)`` is the pure part (tested without a browser): filtered rows with
direction, kind, method (``action <type>`` for envelopes), id, size and time, each with a short,
cleaned preview; large frames are cut in the list and shown whole (bounded, "show more") only in
the detail of the selected frame. :class:`WireView` is the widget over a
:class:`~ahp_lab.transport.tap.FrameLog` (``lab.wire()``), refreshed at most ``max_syncs_per_s``
times a second however fast frames arrive.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import traitlets

from .base import STATIC, BrowserView, Coalescer
from .sanitize import json_preview, one_line, text_block

__all__ = ["wire_view_model", "frame_row", "WireView", "PREVIEW_CHARS", "MAX_ROWS"]

PREVIEW_CHARS = 160  # characters of a frame shown in its row
MAX_ROWS = 200  # rows sent to the browser at once


def frame_row(frame: Any) -> dict[str, Any]:
    """One table row: small and bounded whatever the frame's size."""
    info = frame.info()
    preview = one_line(frame.text[: PREVIEW_CHARS * 2], PREVIEW_CHARS)
    return {
        "n": frame.n,
        "direction": frame.direction,
        "connection": frame.connection,
        "kind": info["kind"],
        "method": one_line(info["method"], 100) if info["method"] else None,
        "id": info["id"] if isinstance(info["id"], int) or info["id"] is None else one_line(info["id"], 40),
        "error": one_line(info["error"], 200) if info["error"] else None,
        "size": frame.size,
        "time": frame.time,
        "preview": preview,
        "truncated": frame.size > PREVIEW_CHARS,
    }


def _detail(frame: Any, limits: dict[str, int] | None) -> dict[str, Any]:
    ref = f"frame-{frame.n}"
    try:
        block = json_preview(json.loads(frame.text), ref, limits)
    # not JSON, or nested past Python's stack (a stranger's frame of 20,000 levels blanked the
    # view: attacker round 34): the raw text (cleaned, capped)
    except (ValueError, RecursionError):
        block = text_block(frame.text, ref, limits, markdown=False)
    return {**frame_row(frame), "json": block}


def wire_view_model(
    frames: Sequence[Any],
    *,
    direction: str = "",
    text: str = "",
    connection: int | None = None,
    count: int = MAX_ROWS,
    before: int | None = None,
    selected: int | None = None,
    limits: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Rows of the newest ``count`` frames passing the filters (those numbered below ``before``,
    when given: an older page), and the selected frame's detail.

    ``direction`` is ``"in"``/``"out"`` (as seen by this side), ``text`` matches the kind, method
    or id (case-insensitive), ``connection`` picks one socket of the log. ``first``/``last`` place
    the page among the matched frames (1-based); ``older`` is the ``before`` of the page before it
    (``None`` at the oldest), ``newer`` that of the page after it (``None``: the newest page, which
    follows new frames), and ``newest`` says whether this is the newest page.
    """
    needle = text.strip().lower()[:200]
    matched = []
    for frame in frames:
        if direction and frame.direction != direction:
            continue
        if connection is not None and frame.connection != connection:
            continue
        if needle:
            info = frame.info()
            label = (
                f"{info['kind']} {info['method'] or ''} {'' if info['id'] is None else info['id']}".lower()
            )
            if needle not in label:
                continue
        matched.append(frame)
    count = max(1, min(MAX_ROWS, count))
    end = len(matched) if before is None else bisect.bisect_left(matched, before, key=lambda f: f.n)
    start = max(0, end - count)
    shown = matched[start:end]
    detail = None
    if selected is not None:
        found = next((f for f in frames if f.n == selected), None)
        detail = _detail(found, limits) if found is not None else {"missing": selected}
    return {
        "total": len(frames),
        "matched": len(matched),
        "rows": [frame_row(f) for f in shown],
        "first": start + 1,
        "last": end,
        "older": shown[0].n if start > 0 else None,
        "newer": matched[end + count].n if end + count < len(matched) else None,
        "newest": end == len(matched),
        "connections": sorted({f.connection for f in frames}),
        "detail": detail,
    }


class WireView(BrowserView):
    """The raw JSON-RPC frames of a connection: filterable rows, the selected frame's JSON.

    ``WireView(lab.frames)`` or ``lab.wire()``. ``direction``, ``text_filter`` and ``connection``
    filter the rows; clicking a row selects it (``selected`` is its frame number). The rows are a
    page of at most :data:`MAX_ROWS` frames, the newest by default; ``before`` (the Older / Newer /
    Newest buttons) pages back through the rest.
    """

    _esm = STATIC / "widgets.js"
    _css = STATIC / "widgets.css"
    _kind = traitlets.Unicode("wire").tag(sync=True)
    read_only = traitlets.Bool(False).tag(sync=True)
    at_seq = traitlets.Int(None, allow_none=True).tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    error_count = traitlets.Int(0).tag(sync=True)
    title = traitlets.Unicode("Wire").tag(sync=True)
    direction = traitlets.Unicode("").tag(sync=True)
    text_filter = traitlets.Unicode("").tag(sync=True)
    connection = traitlets.Int(None, allow_none=True).tag(sync=True)
    selected = traitlets.Int(None, allow_none=True).tag(sync=True)
    #: the page shown: the newest frames numbered below this one (``None``: the newest page, which
    #: follows new frames)
    before = traitlets.Int(None, allow_none=True).tag(sync=True)
    model = traitlets.Dict({}).tag(sync=True)

    def __init__(
        self,
        frames: Any,
        *,
        title: str = "Wire",
        max_syncs_per_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        get_loop: Callable[[], Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(title=title, **kwargs)
        self._frames = frames
        self._limits: dict[str, int] = {}
        self._coalescer = Coalescer(self.refresh, max_syncs_per_s, clock=clock, get_loop=get_loop)
        self._unsubscribe = frames.subscribe(lambda _frame: self._coalescer.request())
        self.on_msg(self._on_msg)
        self.refresh()

    @traitlets.observe("direction", "text_filter", "connection", "selected", "before")
    def _filters_changed(self, _change: Any) -> None:
        if hasattr(self, "_coalescer"):
            self.refresh()

    def refresh(self) -> None:
        """Recompute the rows now."""
        direction = self.direction if self.direction in ("in", "out") else ""
        try:
            self.model = wire_view_model(
                self._frames.frames,
                direction=direction,
                text=self.text_filter,
                connection=self.connection,
                before=self.before,
                selected=self.selected,
                limits=self._limits,
            )
        except Exception as exc:  # a view never takes the kernel down
            self.error = one_line(f"wire view failed: {type(exc).__name__}: {exc}", 300)
            self.error_count += 1

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any = None) -> None:
        if not isinstance(content, dict):
            return
        if content.get("type") == "more" and isinstance(content.get("ref"), str):
            ref = content["ref"][:100]
            self._limits[ref] = min(4 * 1024 * 1024, self._limits.get(ref, 64 * 1024) * 4)
            self.refresh()
        elif content.get("type") == "clear_error":
            self.error = ""
        elif content.get("type") == "sync":
            self.refresh()
            self.send_state()

    def close(self) -> None:
        """Stop listening to the frame log."""
        self._coalescer.cancel()
        with contextlib.suppress(Exception):
            self._unsubscribe()
        super().close()

    def __repr__(self) -> str:
        m = self.model or {}
        return f"<WireView {m.get('matched', 0)} of {m.get('total', 0)} frames>"
