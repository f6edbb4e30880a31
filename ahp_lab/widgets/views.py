"""The anywidget classes of the workbench: thin shells whose traitlets carry the view models."""

from __future__ import annotations

import contextlib
from bisect import bisect_left
from collections.abc import Mapping
from typing import Any

import ipywidgets
import traitlets

from ..protocol.limits import valid_seq
from . import base as _base
from .base import VIEW_TEXT, SourceView, ViewContext, text_fallback
from .chat import active_turn_patch, chat_view_model, promote_patch, turn_view
from .inputs import changed_since_shown, inputs_view_model
from .inspector import (
    MAX_WINDOW,
    TransitionFilter,
    acp_frame_detail,
    acp_frame_row,
    acp_lane,
    export_range,
    origin_view,
    transition_detail,
    transition_row,
)
from .logaccess import LogStart, find_seq, log_at, log_slice
from .model_calls import ModelCallsView
from .sanitize import one_line
from .source import as_source
from .timeline import ToolCallHistory, collect_tool_calls, timeline_view_model
from .tree import tree_view_model

__all__ = [
    "CustomizationTree",
    "ToolCallTimeline",
    "InputQueue",
    "TransitionInspector",
    "ChatPane",
    "ModelCallsView",
    "Workbench",
]


class CustomizationTree(SourceView):
    """The session's customizations: containers, children by type, load and MCP server states.

    A checkbox dispatches ``session/customizationToggled``; MCP start/stop buttons dispatch
    ``session/mcpServerStartRequested`` / ``…StopRequested``. A remote client's MCP server that
    waits for permission gets an "Allow" button, which calls the source's ``allow_mcp(id, shown)``
    (``lab.allow_mcp``, with the configuration its notice names): a decision of the person at the
    kernel, not a protocol action.
    """

    _kind = traitlets.Unicode("tree").tag(sync=True)
    session = traitlets.Unicode("").tag(sync=True)
    model = traitlets.Dict({}).tag(sync=True)
    type_filter = traitlets.Unicode("").tag(sync=True)
    text_filter = traitlets.Unicode("").tag(sync=True)

    def __init__(self, source: Any, **kwargs: Any) -> None:
        source = as_source(source)
        self._memo: tuple[Any, Any] | None = None
        super().__init__(source, session=str(source.session), **kwargs)

    @traitlets.observe("type_filter", "text_filter")
    def _filters_changed(self, _change: Any) -> None:
        if hasattr(self, "_coalescer"):
            self.refresh()

    def handle_view_message(self, typ: Any, content: dict[str, Any]) -> None:
        """``allow_mcp``: the person allows a remote client's MCP server (a local decision)."""
        if typ != "allow_mcp":
            return
        allow = getattr(self._source, "allow_mcp", None)
        server = content.get("id")
        refused = self.refuse_reason()  # a replay, a closed lab, time travel
        if refused is not None or allow is None:
            self._show_error(refused or "read-only: MCP servers can be allowed only in the live workbench")
            return
        if not isinstance(server, str) or not server or len(server) > 300:
            self._show_error("allow needs the id of an MCP server")
            return
        shown = content.get("shown")
        try:
            allow(server, shown if isinstance(shown, str) else None)
        except Exception as exc:  # LookupError, PermissionError: shown, never raised into the kernel
            self._show_error(str(exc) or type(exc).__name__)
        else:
            self.error = ""

    def render_view(self) -> None:
        state = self.state_of(self.session)
        key = (self.type_filter, self.text_filter, self.read_only, self.mode)
        if self._memo is not None and self._memo[0] is state and self._memo[1] == key:
            return  # the session did not change (e.g. a chat delta)
        self._memo = (state, key)
        self.model = tree_view_model(
            state,
            type_filter=self.type_filter,
            text_filter=self.text_filter[:200],
            read_only=self.read_only,
            closed=self.mode == "closed",
        )


class ToolCallTimeline(SourceView):
    """Every tool call of the chat, one lane each, with the steps that moved it (windowed).

    ``model`` is the whole :func:`timeline_view_model` (kernel side only); the browser gets it in
    four synced parts, each sent only when it changed: ``meta`` (total, window, axis, counts),
    ``lanes`` (the window's lanes), ``detail`` (the selected call without its diagram) and
    ``machine`` (its state-machine diagram). While a tool streams, only ``meta`` (the axis grows)
    and ``detail`` (content, steps) travel, not the window of lanes and the diagram again.
    """

    _kind = traitlets.Unicode("timeline").tag(sync=True)
    chat = traitlets.Unicode("").tag(sync=True)
    model = traitlets.Dict({})
    meta = traitlets.Dict({}).tag(sync=True)
    lanes = traitlets.List([]).tag(sync=True)
    detail = traitlets.Dict({}).tag(sync=True)
    machine = traitlets.Dict({}).tag(sync=True)
    window_start = traitlets.Int(0).tag(sync=True)
    window_count = traitlets.Int(40).tag(sync=True)
    selected = traitlets.Unicode(None, allow_none=True).tag(sync=True)

    def __init__(self, source: Any, *, chat: str | None = None, **kwargs: Any) -> None:
        source = as_source(source)
        self._history = ToolCallHistory()
        self._fed = 0
        self._log_start = LogStart()
        self._turn_calls: dict[int, tuple[Any, list[dict[str, Any]]]] = {}
        super().__init__(source, chat=str(chat or source.chat), **kwargs)

    @traitlets.observe("window_start", "window_count", "selected")
    def _window_changed(self, _change: Any) -> None:
        if hasattr(self, "_coalescer"):
            self.refresh()

    def _feed(self) -> None:
        """Feed the log into the history: live transitions come through the listener (they carry
        their states); this only catches up when the log and the history disagree (first render,
        a replaced log)."""
        log = self._source.transitions
        n = len(log)
        self._fed = max(0, self._fed - self._log_start.moved(log))
        if n < self._fed:
            self._history = ToolCallHistory()
            self._fed = 0
        if n > self._fed:
            for t in log_slice(log, self._fed, n):
                self._history.feed(t)
            self._fed = n

    def _on_transition(self, t: Any) -> None:
        if self._fed == len(self._source.transitions) - 1:
            self._history.feed(t)
            self._fed += 1
        super()._on_transition(t)

    def _calls(self, state: Any) -> list[dict[str, Any]]:
        """``collect_tool_calls`` with completed turns cached by identity (they never change)."""
        if not isinstance(state, Mapping):
            return []
        out: list[dict[str, Any]] = []
        cache: dict[int, tuple[Any, list[dict[str, Any]]]] = {}
        turns = state.get("turns")
        for turn in turns if isinstance(turns, list) else ():
            hit = self._turn_calls.get(id(turn))
            calls = hit[1] if hit is not None and hit[0] is turn else collect_tool_calls({"turns": [turn]})
            cache[id(turn)] = (turn, calls)
            out.extend(calls)
        self._turn_calls = cache
        active = state.get("activeTurn")
        if isinstance(active, Mapping):
            out.extend(collect_tool_calls({"activeTurn": active}))
        return out

    def render_view(self) -> None:
        self._feed()
        state = self.state_of(self.chat)
        self.model = timeline_view_model(
            state,
            self._history,
            calls=self._calls(state),
            channel=self.chat,
            start=self.window_start,
            count=self.window_count,
            selected=self.selected,
            limits=self._limits,
            at_seq=self._context.at_seq,
            read_only=self.read_only,
        )
        vm = self.model
        self.meta = {k: v for k, v in vm.items() if k not in ("lanes", "detail")}
        # lanes of the active turn: their last seq and step count grow with every transition, and
        # the view draws them up to the axis end anyway
        self.lanes = [
            {k: v for k, v in lane.items() if k not in ("lastSeq", "stepCount")}
            if lane.get("active")
            else lane
            for lane in vm.get("lanes") or ()
        ]
        detail = vm.get("detail") or {}
        self.detail = {k: v for k, v in detail.items() if k != "machine"}
        self.machine = detail.get("machine") or {}


class InputQueue(SourceView):
    """``inputNeeded`` across the session's chats, with controls to answer each entry.

    ``last_inputs`` remembers, per tool name, the last edited input this view approved (at most
    ``MAX_REMEMBERED`` tools): the edit form offers it again for the next call of that tool.
    """

    _kind = traitlets.Unicode("inputs").tag(sync=True)
    session = traitlets.Unicode("").tag(sync=True)
    model = traitlets.Dict({}).tag(sync=True)
    debounce_ms = traitlets.Int(300).tag(sync=True)
    last_inputs = traitlets.Dict({}).tag(sync=True)

    MAX_REMEMBERED = 50
    MAX_REMEMBERED_CHARS = 64 * 1024

    def __init__(self, source: Any, **kwargs: Any) -> None:
        source = as_source(source)
        self._memo: tuple[Any, Any] | None = None
        self._unsubscribe_local: Any = None
        super().__init__(source, session=str(source.session), **kwargs)
        subscribe = getattr(source, "subscribe_local_approvals", None)
        if callable(subscribe):
            self._unsubscribe_local = subscribe(self._coalescer.request)

    def _local_approvals(self) -> list[dict[str, Any]] | None:
        """This notebook's local approvals (live only: they are not part of the host's past)."""
        get = getattr(self._source, "local_approvals", None)
        if not callable(get) or self._context.at_seq is not None:
            return None
        try:
            got = get()
        except Exception as exc:
            self._show_error(f"local approvals unavailable: {type(exc).__name__}: {exc}")
            return None
        return list(got) if isinstance(got, (list, tuple)) else None

    def render_view(self) -> None:
        state = self.state_of(self.session)
        local = self._local_approvals()
        key = (self.read_only, tuple(sorted(self._limits.items())), local)
        if self._memo is not None and self._memo[0] is state and self._memo[1] == key:
            return  # the session did not change (e.g. a chat delta)
        self._memo = (state, key)
        self.model = inputs_view_model(
            state, read_only=self.read_only, limits=self._limits, local_approvals=local
        )

    def handle_message(self, content: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "dispatch" and "shown" in content:
            channel = content.get("channel")
            chat = self.state_of(channel) if isinstance(channel, str) else None
            why = changed_since_shown(
                self.state_of(self.session), chat, channel, content.get("action"), content.get("shown")
            )
            if why is not None:
                self._show_error(why)
                return
        if isinstance(content, dict) and content.get("type") == "dispatch" and "remember" in content:
            if self._do("dispatch", content):
                self._remember(content.get("remember"), content.get("action"))
            return
        super().handle_message(content)

    def _remember(self, tool: Any, action: Any) -> None:
        edited = action.get("editedToolInput") if isinstance(action, dict) else None
        if not isinstance(tool, str) or not 0 < len(tool) <= 200 or not isinstance(edited, str):
            return
        if len(edited) > self.MAX_REMEMBERED_CHARS:
            return
        kept = {k: v for k, v in self.last_inputs.items() if k != tool}
        kept[tool] = edited
        self.last_inputs = dict(list(kept.items())[-self.MAX_REMEMBERED :])

    def handle_view_message(self, typ: Any, content: dict[str, Any]) -> None:
        if typ != "local_approval":
            return
        refused = self.refuse_reason()
        if refused is not None:
            self._show_error(refused)
            return
        tcid, approved = content.get("toolCallId"), content.get("approved")
        if not isinstance(tcid, str) or not tcid or not isinstance(approved, bool):
            self._show_error("local_approval needs a toolCallId and approved: true|false")
            return
        decide = getattr(self._source, "decide_local", None)
        if not callable(decide):
            self._show_error("this source has no local approvals")
            return
        chat = content.get("chat")  # a call id is unique within its chat only
        try:
            decide(tcid, approved, chat=chat if isinstance(chat, str) and chat else None)
        except Exception as exc:
            self._show_error(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
        else:
            if self.error:
                self.error = ""
        self.refresh()

    def close(self) -> None:
        unsubscribe, self._unsubscribe_local = self._unsubscribe_local, None
        if unsubscribe is not None:
            with contextlib.suppress(Exception):
                unsubscribe()
        super().close()


class TransitionInspector(SourceView):
    """The transition log as a virtualized table, filters, a detail pane, and time travel.

    Rows travel as custom messages: the browser asks ``{"type": "window", "start", "count"}`` and
    gets ``{"type": "rows", "version", "start", "total", "rows"}``; new transitions are announced
    with ``{"type": "appended", "version", "total", "rows"}`` (the last ``APPEND_TAIL`` rows only:
    about what a following table shows; it asks for any other window it scrolls to). A transition
    picked elsewhere (the ACP lane) is found with ``{"type": "reveal", "seq"}``, answered with
    ``{"type": "revealed", "version", "seq", "index"}`` (its row, ``None`` when it is filtered out).

    While transitions stream in, the ``total`` traitlet is not synced with every flush (each
    ``appended`` message carries the total already): it follows once the log has been quiet for
    ``TOTAL_QUIET_S``, so a stream costs one message per flush, not two. A filter change or a
    replaced log syncs it at once, together with the new ``version``.
    """

    _kind = traitlets.Unicode("inspector").tag(sync=True)
    DISPATCHES = False  # filters, selection, time travel and export never change the lab
    total = traitlets.Int(0).tag(sync=True)
    version = traitlets.Int(0).tag(sync=True)
    filters = traitlets.Dict({}).tag(sync=True)
    options = traitlets.Dict({"channels": [], "types": [], "origins": []}).tag(sync=True)
    selected_seq = traitlets.Int(None, allow_none=True).tag(sync=True)
    range_seq = traitlets.Int(None, allow_none=True).tag(sync=True)  # the other end of a selected range
    detail = traitlets.Dict({}).tag(sync=True)
    time_travel = traitlets.Bool(False).tag(sync=True)
    #: the ACP lane: ``{"available": bool, "total": frames}``; rows travel as ``acpRows`` messages
    acp = traitlets.Dict({"available": False, "total": 0}).tag(sync=True)
    selected_frame = traitlets.Int(None, allow_none=True).tag(sync=True)
    frame_detail = traitlets.Dict({}).tag(sync=True)
    can_export = traitlets.Bool(False).tag(sync=True)
    export_range = traitlets.Dict({}).tag(sync=True)
    export_result = traitlets.Dict({}).tag(sync=True)

    APPEND_TAIL = 30  # the table shows ~13 rows (300 px); it asks for any other window
    TOTAL_QUIET_S = 0.5

    def __init__(self, source: Any, **kwargs: Any) -> None:
        source = as_source(source)
        self._total_handle: Any = None
        self._total_version: int | None = None
        self._announced_total = 0
        self._index: list[int] = []
        self._scanned = 0
        self._log_start = LogStart()
        self._filter = TransitionFilter()
        self._channels: dict[str, None] = {}
        self._types: dict[str, None] = {}
        self._origins: dict[str, None] = {}
        self._last_origin: Any = None
        super().__init__(source, **kwargs)
        self._update_export_range()

    # traitlet observers ----------------------------------------------------------------------------
    @traitlets.observe("filters")
    def _filters_changed(self, change: Any) -> None:
        if not hasattr(self, "_coalescer"):
            return
        self._filter = TransitionFilter.from_json(change["new"])
        self._index = []
        self._scanned = 0
        self.version += 1
        self.refresh()
        self._update_export_range()

    @traitlets.observe("selected_seq")
    def _selected_changed(self, _change: Any) -> None:
        if not hasattr(self, "_coalescer"):
            return
        self._update_detail()
        self._update_export_range()
        if self.time_travel:
            self._context.set_at_seq(self.selected_seq)

    @traitlets.observe("range_seq")
    def _range_changed(self, _change: Any) -> None:
        if hasattr(self, "_coalescer"):
            self._update_export_range()

    @traitlets.observe("time_travel")
    def _time_travel_changed(self, change: Any) -> None:
        if not hasattr(self, "_coalescer"):
            return
        self._context.set_at_seq(self.selected_seq if change["new"] else None)

    # incremental index -----------------------------------------------------------------------------
    def _scan(self) -> list[int]:
        log = self._source.transitions
        n = len(log)
        moved = self._log_start.moved(log)
        if moved:  # the store dropped its oldest transitions: positions move down
            self._index = [p - moved for p in self._index if p >= moved]
            self._scanned = max(0, self._scanned - moved)
            self.version += 1
        if n < self._scanned:
            self._index, self._scanned = [], 0
            self.version += 1
        new_positions: list[int] = []
        if n > self._scanned:
            flt = self._filter
            for pos, t in enumerate(log_slice(log, self._scanned, n), start=self._scanned):
                self._note_options(t)
                if flt.empty or flt.matches(t):
                    self._index.append(pos)
                    new_positions.append(pos)
            self._scanned = n
        return new_positions

    def _note_options(self, t: Any) -> None:
        ch = getattr(t, "channel", None)
        if isinstance(ch, str) and ch not in self._channels and len(self._channels) < 500:
            self._channels[ch] = None
        action = getattr(t, "action", None)
        typ = action.get("type") if isinstance(action, Mapping) else None
        if isinstance(typ, str) and typ not in self._types and len(self._types) < 500:
            self._types[typ] = None
        origin = getattr(t, "origin", None)
        if origin is self._last_origin and origin is not None:
            return  # a stream repeats the same origin object: its key is noted already
        self._last_origin = origin
        ok = origin_view(origin)["key"]
        if ok not in self._origins and len(self._origins) < 200:
            self._origins[ok] = None

    def rows(self, start: int, count: int) -> dict[str, Any]:
        """The window ``[start, start+count)`` of the filtered log (what a ``window`` request gets)."""
        self._scan()
        log = self._source.transitions
        total = len(self._index)
        start = max(0, min(int(start), total))
        count = max(0, min(int(count), MAX_WINDOW))
        rows = [
            transition_row(log_at(log, self._index[k]), k) for k in range(start, min(total, start + count))
        ]
        return {"type": "rows", "version": self.version, "start": start, "total": total, "rows": rows}

    def row_of(self, seq: int) -> int | None:
        """The row of transition ``seq`` in the filtered table (``None``: not in the log, or filtered out)."""
        self._scan()
        pos, _t = find_seq(self._source.transitions, seq)
        if pos is None:
            return None
        k = bisect_left(self._index, pos)
        return k if k < len(self._index) and self._index[k] == pos else None

    def render_view(self) -> None:
        old_total = len(self._index)
        first_version = self.version
        new_positions = self._scan()
        total = len(self._index)
        streaming = bool(new_positions) and self.version == first_version == self._total_version
        if not streaming:
            self._set_total(total)
        opts = {
            "channels": list(self._channels),
            "types": sorted(self._types),
            "origins": list(self._origins),
        }
        if opts != self.options:
            self.options = opts
        if new_positions and self.version == first_version:
            log = self._source.transitions
            tail_from = max(old_total, total - self.APPEND_TAIL)
            rows = [transition_row(log_at(log, self._index[k]), k) for k in range(tail_from, total)]
            self.send_msg({"type": "appended", "version": self.version, "total": total, "rows": rows})
            self._announced_total = total
            if streaming:
                self._total_when_quiet()
        if self.selected_seq is not None and not self.detail:
            self._update_detail()
        self._update_acp()

    def _set_total(self, total: int) -> None:
        self._cancel_total()
        self._total_version = self.version
        self._announced_total = total
        self.total = total

    def _cancel_total(self) -> None:
        h, self._total_handle = self._total_handle, None
        if h is not None:
            with contextlib.suppress(Exception):
                h.cancel()

    def _total_when_quiet(self) -> None:
        """Sync ``total`` once no rows were appended for ``TOTAL_QUIET_S`` (each new append restarts
        the wait); at once without a running loop."""
        self._cancel_total()
        get_loop = self._coalescer._get_loop
        loop = get_loop() if get_loop is not None else _base._running_loop()
        if loop is None:
            self._fire_total()
        else:
            self._total_handle = loop.call_later(self.TOTAL_QUIET_S, self._fire_total)

    def _fire_total(self) -> None:
        self._total_handle = None
        if self._total_version == self.version:
            self.total = self._announced_total

    def close(self) -> None:
        self._cancel_total()
        super().close()

    def resync(self) -> None:
        # a new version: the browser drops its cached rows (and its window requests whose answers
        # were lost) and asks again for the rows it shows
        self.version += 1
        super().resync()

    def _find(self, seq: int) -> Any:
        return find_seq(self._source.transitions, seq)[1]

    def _update_detail(self) -> None:
        seq = self.selected_seq
        if seq is None:
            self.detail = {}
            return
        t = self._find(seq)
        detail = transition_detail(t, self._limits) if t is not None else {"missing": seq}
        linked = getattr(self._source, "acp_frames_for_seq", None)
        if t is not None and linked is not None:
            detail["acpFrames"] = [acp_frame_row(f, -1) for f in linked(seq)[:MAX_WINDOW]]
        self.detail = detail

    # the ACP lane -------------------------------------------------------------------------------
    def _acp_frames(self) -> list | None:
        frames = getattr(self._source, "acp_frames", None)
        return frames() if frames is not None else None

    def _update_acp(self) -> None:
        frames = self._acp_frames()
        acp = {"available": frames is not None and len(frames) > 0, "total": len(frames or ())}
        if acp != self.acp:
            self.acp = acp

    @traitlets.observe("selected_frame")
    def _selected_frame_changed(self, _change: Any) -> None:
        if not hasattr(self, "_coalescer"):
            return
        frames = self._acp_frames() or []
        index = self.selected_frame
        frame = next((f for f in frames if f.get("index") == index), None)
        self.frame_detail = acp_frame_detail(frame, self._limits) if frame is not None else {}

    def handle_message(self, content: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "more":
            ref = content.get("ref")
            if isinstance(ref, str) and len(ref) < 1000:
                self._limits[ref] = min(4 * 1024 * 1024, self.limit_for(ref) * 4)
                self._update_detail()
            return
        super().handle_message(content)

    def _update_export_range(self) -> None:
        self.can_export = callable(getattr(self._source, "export_fixture", None))
        self.export_range = (
            export_range(self._source.transitions, self.selected_seq, self.range_seq, self._filter.channel)
            if self.can_export
            else {}
        )

    def _export(self, content: dict[str, Any]) -> None:
        """Export the selected range as a fixture (``format: "fixture"``) or a pytest file; the
        browser names neither the seqs (the selection traitlets do) nor the path (the source does)."""
        fmt = content.get("format")
        description = content.get("description")
        description = (
            one_line(description, 300) if isinstance(description, str) and description.strip() else None
        )
        rng = self.export_range
        try:
            if fmt not in ("fixture", "pytest"):
                raise ValueError("export as 'fixture' or 'pytest'")
            if not self.can_export:
                raise ValueError("this source cannot export fixtures")
            if not rng:
                raise ValueError("select a transition first (shift+click another to select a range)")
            got = self._source.export_fixture(
                rng["first"],
                rng["last"],
                channel=rng["channel"],
                pytest=fmt == "pytest",
                description=description,
            )
        except Exception as exc:  # a range with nothing to export, a disk error: say it, keep going
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            self.export_result = {"ok": False, "format": fmt, "message": one_line(msg, 300)}
            return
        self.export_result = {"ok": True, "format": fmt, **got}

    def handle_view_message(self, typ: Any, content: dict[str, Any]) -> None:
        if typ == "export":
            self._export(content)
        elif typ == "window":
            start, count = content.get("start", 0), content.get("count", 100)
            if not isinstance(start, int) or isinstance(start, bool):
                start = 0
            if not isinstance(count, int) or isinstance(count, bool):
                count = 100
            reply = self.rows(start, count)
            if "req" in content:
                reply["req"] = content["req"]
            self.send_msg(reply)
        elif typ == "reveal":  # where a transition selected elsewhere (the ACP lane) is in the table
            seq = content.get("seq")
            index = self.row_of(seq) if valid_seq(seq) else None
            self.send_msg({"type": "revealed", "version": self.version, "seq": seq, "index": index})
        elif typ == "acpWindow":
            start, count = content.get("start", 0), content.get("count", 100)
            lane = acp_lane(
                self._acp_frames() or [],
                start if isinstance(start, int) else 0,
                count if isinstance(count, int) else 100,
            )
            self.send_msg(
                {"type": "acpRows", **lane, **({"req": content["req"]} if "req" in content else {})}
            )

    def _context_changed(self) -> None:
        # the inspector is the time-travel control itself: it stays live and interactive
        self.at_seq = self._context.at_seq
        if self._context.at_seq is None and self.time_travel:
            self.time_travel = False


class ChatPane(SourceView):
    """The conversation (user messages, streamed markdown, reasoning, tool-call cards, system
    notifications) plus a prompt box.

    The view says ``{"type": "hello"}`` when it renders and gets ``{"type": "reset", "view"}``;
    afterwards only ``{"type": "patch", "active", "turns", "turnCount"}`` messages travel: new
    completed turns once each, and the active turn as per-part patches with text appends.
    """

    _kind = traitlets.Unicode("chat").tag(sync=True)
    chat = traitlets.Unicode("").tag(sync=True)
    header = traitlets.Dict({}).tag(sync=True)
    tail = traitlets.Int(20).tag(sync=True)

    def __init__(self, source: Any, *, chat: str | None = None, **kwargs: Any) -> None:
        source = as_source(source)
        self._sent_ids: list[Any] | None = None
        self._sent_active: dict[str, Any] | None = None
        self._part_cache: dict[int, Any] = {}
        super().__init__(source, chat=str(chat or source.chat), **kwargs)

    def _chat_state(self) -> Mapping[str, Any]:
        st = self.state_of(self.chat)
        return st if isinstance(st, Mapping) else {}

    def full_view(self) -> dict[str, Any]:
        st = self._chat_state()
        view = chat_view_model(st, tail=self.tail, limits=self._limits, read_only=self.read_only)
        turns = st.get("turns") if isinstance(st.get("turns"), list) else []
        self._sent_ids = [t.get("id") if isinstance(t, Mapping) else None for t in turns]
        self._sent_active = view["active"]
        return view

    def _send_reset(self) -> None:
        self.send_msg({"type": "reset", "view": self.full_view()})

    def render_view(self) -> None:
        st = self._chat_state()
        status = st.get("status")
        self.header = {
            "title": str(st.get("title") or "")[:200],
            "status": status if isinstance(status, int) else None,
            "active": isinstance(st.get("activeTurn"), Mapping),
        }
        if self._sent_ids is None:  # nothing sent yet: the view will say hello
            return
        turns = st.get("turns") if isinstance(st.get("turns"), list) else []
        ids = [t.get("id") if isinstance(t, Mapping) else None for t in turns]
        n_old = len(self._sent_ids)
        if ids[:n_old] != self._sent_ids or len(ids) - n_old > self.tail:
            self._send_reset()
            return
        new_turns = []
        for k, t in enumerate(turns[n_old:]):
            done = turn_view(t, self._limits, cache=self._part_cache)
            # the turn that was active: send what changed since (the view promotes its copy)
            promote = promote_patch(self._sent_active, done) if k == 0 else None
            if promote is not None:
                new_turns.append({"index": n_old + k, "promote": promote})
            else:
                new_turns.append({"index": n_old + k, "turn": done})
        self._sent_ids = ids
        active = st.get("activeTurn")
        if len(self._part_cache) > 4 * 400:
            self._part_cache.clear()
        active_view = (
            turn_view(active, self._limits, active=True, cache=self._part_cache)
            if isinstance(active, Mapping)
            else None
        )
        patch = active_turn_patch(self._sent_active, active_view)
        self._sent_active = active_view
        if patch is None and not new_turns:
            return
        self.send_msg({"type": "patch", "active": patch, "turns": new_turns, "turnCount": len(ids)})

    def _context_changed(self) -> None:
        super()._context_changed()
        if self._sent_ids is not None:
            self._send_reset()

    def resync(self) -> None:
        super().resync()
        self._send_reset()  # the conversation travels as custom messages: all of it again

    def handle_message(self, content: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "more":
            ref = content.get("ref")
            if isinstance(ref, str) and len(ref) < 1000:
                self._limits[ref] = min(4 * 1024 * 1024, self.limit_for(ref) * 4)
                self._part_cache.clear()
                self._send_reset()
            return
        super().handle_message(content)

    def handle_view_message(self, typ: Any, content: dict[str, Any]) -> None:
        if typ == "hello":
            self._send_reset()
        elif typ == "stop":  # the Stop button: cancel this chat's active turn
            self._do("stop", {"chat": self.chat})
        elif typ == "older":
            before = content.get("before")
            count = content.get("count", 10)
            if not isinstance(before, int) or not isinstance(count, int):
                return
            st = self._chat_state()
            turns = st.get("turns") if isinstance(st.get("turns"), list) else []
            before = max(0, min(before, len(turns)))
            first = max(0, before - max(1, min(count, 50)))
            self.send_msg(
                {
                    "type": "older",
                    "first": first,
                    "turns": [turn_view(t, self._limits) for t in turns[first:before]],
                }
            )


class Workbench(ipywidgets.GridBox):
    """The four views and the chat pane in one layout, sharing one time-travel context.

    ``Workbench(source)``; the parts are ``.chat``, ``.inputs``, ``.tree``, ``.timeline`` and
    ``.inspector``, plus ``.model_calls`` when the session's agent calls a model (else ``None``).
    """

    def __init__(self, source: Any, *, max_syncs_per_s: float = 30.0, **kwargs: Any) -> None:
        source = as_source(source)
        ctx = ViewContext()
        common = {"context": ctx, "max_syncs_per_s": max_syncs_per_s}
        self.context = ctx
        self.source = source
        self.chat = ChatPane(source, layout=ipywidgets.Layout(grid_area="chat", min_width="0"), **common)
        self.inputs = InputQueue(
            source, layout=ipywidgets.Layout(grid_area="inputs", min_width="0"), **common
        )
        self.tree = CustomizationTree(
            source, layout=ipywidgets.Layout(grid_area="tree", min_width="0"), **common
        )
        self.timeline = ToolCallTimeline(
            source, layout=ipywidgets.Layout(grid_area="timeline", min_width="0"), **common
        )
        self.inspector = TransitionInspector(
            source, layout=ipywidgets.Layout(grid_area="inspector", min_width="0"), **common
        )
        # a LoopAgent's session also shows what its model saw (ahp_lab.widgets.model_calls)
        calls = getattr(source, "model_calls", None)
        self.model_calls = (
            ModelCallsView(source, layout=ipywidgets.Layout(grid_area="calls", min_width="0"), **common)
            if callable(calls) and calls() is not None
            else None
        )
        areas = '"chat inputs" "chat tree" "timeline timeline" "inspector inspector"'
        layout = ipywidgets.Layout(
            width="100%",
            grid_template_columns="minmax(0, 3fr) minmax(0, 2fr)",
            grid_template_areas=areas + (' "calls calls"' if self.model_calls is not None else ""),
            grid_gap="8px",
        )
        super().__init__(
            children=self.views,
            layout=kwargs.pop("layout", layout),
            **kwargs,
        )
        self.add_class("ahp-workbench")

    @property
    def views(self) -> list[SourceView]:
        extra = [self.model_calls] if self.model_calls is not None else []
        return [self.chat, self.inputs, self.tree, self.timeline, self.inspector, *extra]

    def __repr__(self) -> str:
        return text_fallback(VIEW_TEXT["workbench"])

    def close(self) -> None:
        for v in self.views:
            v.close()
        super().close()
