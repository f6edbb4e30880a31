"""Shared machinery of the workbench widgets: coalesced updates, time travel, message handling."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from ahp_lab.protocol.jsonvalue import to_json

from .sanitize import BLOCK_LIMIT, one_line

__all__ = [
    "BrowserView",
    "Coalescer",
    "ViewContext",
    "SourceView",
    "STATIC",
    "VIEW_TEXT",
    "recheck_modes",
    "source_mode",
    "text_fallback",
]

STATIC = Path(__file__).parent / "static"
MAX_BLOCK_LIMIT = 4 * 1024 * 1024
# synced traitlets of every anywidget (module, layout, the code itself): not part of a view
_BASE_SYNC_KEYS = frozenset(anywidget.AnyWidget.class_trait_names(sync=True)) | {
    "_esm",
    "_css",
    "_anywidget_id",
}


#: What each view shows, in words: the plain-text fallback of a widget output saved in a notebook.
VIEW_TEXT = {
    "workbench": "workbench: chat, input queue, customizations, tool calls and transitions",
    "chat": "chat pane: the conversation as it streams, and a prompt box",
    "inputs": "input queue: approvals and questions waiting for a person",
    "tree": "customization tree: plugins, skills, rules and MCP servers",
    "timeline": "tool-call timeline: each call's steps through its state machine",
    "inspector": "transition inspector: every action, its origin, and its diff",
}


def text_fallback(what: str) -> str:
    """The ``text/plain`` of a view: what it shows and how to see it (at most 110 characters, the
    length ipywidgets keeps), instead of an object repr in a saved notebook."""
    return f"AHP {what} (run the cell to see it live)"


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


READ_ONLY_REASONS = {
    "replay": "replay: read-only; a replayed log dispatches nothing",
    "closed": "closed: this lab is closed and its MCP servers are stopped; make a new Lab() to act",
}


def source_mode(source: Any) -> str:
    """``"closed"`` for a closed lab's source, ``"replay"`` for a replayed (read-only) log, else
    ``"live"``. Sources say so with ``closed`` / ``read_only`` attributes (both optional)."""
    if getattr(source, "closed", False) is True:
        return "closed"
    if getattr(source, "read_only", False) is True:
        return "replay"
    return "live"


_open_views: weakref.WeakSet[SourceView] = weakref.WeakSet()
_cell_hook: list[Any] = []  # the IPython shell whose post_run_cell calls recheck_modes, once


def recheck_modes(*_args: Any) -> None:
    """Let every open view notice a source that became closed (``await lab.aclose()``, a lab
    replaced or collected): nothing in the log says so, so views check after each cell runs."""
    for view in list(_open_views):
        view.check_mode()


def _hook_cells() -> None:
    if _cell_hook:
        return
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipykernel
        return
    shell = get_ipython()
    if shell is not None:
        shell.events.register("post_run_cell", recheck_modes)
        _cell_hook.append(shell)


class Coalescer:
    """Run ``flush`` at most ``max_per_s`` times per second however often :meth:`request` is called.

    With a running asyncio loop (the kernel's), the first request schedules a flush with
    ``loop.call_later`` (immediately if the last flush is older than ``1/max_per_s``); requests
    arriving before it runs are absorbed. Without a running loop every request flushes
    synchronously. ``clock`` and ``get_loop`` are injectable for tests.
    """

    def __init__(
        self,
        flush: Callable[[], None],
        max_per_s: float = 30.0,
        *,
        clock: Callable[[], float] = time.monotonic,
        get_loop: Callable[[], Any] | None = None,
    ) -> None:
        self._flush = flush
        self.max_per_s = max_per_s
        self._clock = clock
        self._get_loop = get_loop
        self._handle: Any = None
        self._last = -math.inf
        self.flushes = 0

    @property
    def interval(self) -> float:
        return 1.0 / self.max_per_s if self.max_per_s and self.max_per_s > 0 else 0.0

    @property
    def pending(self) -> bool:
        return self._handle is not None

    def request(self) -> None:
        if self._handle is not None:
            return
        loop = self._get_loop() if self._get_loop is not None else _running_loop()
        if loop is None:
            self._run()
            return
        delay = max(0.0, self._last + self.interval - self._clock())
        self._handle = loop.call_later(delay, self._fire)

    def flush_now(self) -> None:
        """Flush immediately (cancelling a scheduled flush)."""
        self.cancel()
        self._run()

    def cancel(self) -> None:
        h, self._handle = self._handle, None
        if h is not None:
            with contextlib.suppress(Exception):
                h.cancel()

    def _fire(self) -> None:
        self._handle = None
        self._run()

    def _run(self) -> None:
        self._last = self._clock()
        self.flushes += 1
        self._flush()


class ViewContext:
    """What the views of one workbench share: the time-travel position.

    ``at_seq`` is ``None`` for live state; otherwise every view renders ``source.state_at(at_seq)``
    read-only.
    """

    def __init__(self) -> None:
        self.at_seq: int | None = None
        self._views: weakref.WeakSet[SourceView] = weakref.WeakSet()
        self._snapshot: tuple[int, dict[str, Any]] | None = None

    def attach(self, view: SourceView) -> None:
        self._views.add(view)

    def detach(self, view: SourceView) -> None:
        self._views.discard(view)

    def state(self, source: Any, channel: str) -> Any:
        if self.at_seq is None:
            return source.state(channel)
        if self._snapshot is None or self._snapshot[0] != self.at_seq:
            snap = source.state_at(self.at_seq)
            self._snapshot = (self.at_seq, snap if isinstance(snap, dict) else {})
        return self._snapshot[1].get(channel)

    def set_at_seq(self, seq: int | None) -> None:
        if seq == self.at_seq:
            return
        self.at_seq = seq
        self._snapshot = None
        for view in list(self._views):
            view._context_changed()


class BrowserView(anywidget.AnyWidget):
    """A widget whose messages from the browser are handled on its work loop (:meth:`work_loop`):
    its lab's, for a view of a lab, else the loop it was made on.

    JupyterLab may send a widget's messages to a kernel subshell (ipykernel 7), whose own thread
    and event loop would then run the view's handlers: a lab's work (an ACP agent's pipes, its
    tasks) lives on the notebook's loop, and a turn a click started there waited, unseen, until a
    cell ran (the first-hour user, round 54). Each message is handed to that loop.
    """

    def __init__(self, **kwargs: Any) -> None:
        self._home = asyncio._get_running_loop()  # None in a script: messages are handled where they arrive
        super().__init__(**kwargs)

    def work_loop(self) -> asyncio.AbstractEventLoop | None:
        """The loop this view's messages are handled on: the one it was made on (a view of a lab
        hands them to the lab's own, wherever the view was made: a subshell console's view too)."""
        return self._home

    def _handle_msg(self, msg: dict) -> None:
        home = self.work_loop()
        if home is not None and asyncio._get_running_loop() is not home and not home.is_closed():
            home.call_soon_threadsafe(self._handle_at_home, msg)
            return
        super()._handle_msg(msg)

    def _handle_at_home(self, msg: dict) -> None:
        super()._handle_msg(msg)


class SourceView(BrowserView):
    """Base of the workbench widgets: subscribes to a source, coalesces refreshes, and turns custom
    messages from the browser into ``dispatch``/``prompt``/``authenticate`` calls.

    A dispatch that raises (a ``ProtocolError`` for malformed input, or anything else) is shown in
    the view as a one-line error (the ``error`` traitlet) and never propagates into the kernel.
    """

    _esm = STATIC / "widgets.js"
    _css = STATIC / "widgets.css"
    DISPATCHES = True  # has controls that dispatch (so it is read-only in a replay or time travel)

    _kind = traitlets.Unicode("").tag(sync=True)
    # "live", "replay" (a replayed log) or "closed" (a lab after ``aclose()``): see source_mode()
    mode = traitlets.Unicode("live").tag(sync=True)
    read_only = traitlets.Bool(False).tag(sync=True)
    at_seq = traitlets.Int(None, allow_none=True).tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    error_count = traitlets.Int(0).tag(sync=True)

    def __init__(
        self,
        source: Any,
        *,
        context: ViewContext | None = None,
        max_syncs_per_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        get_loop: Callable[[], Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._source = source
        self._context = context if context is not None else ViewContext()
        self._limits: dict[str, int] = {}
        self._coalescer = Coalescer(self._refresh, max_syncs_per_s, clock=clock, get_loop=get_loop)
        self._context.attach(self)
        _open_views.add(self)
        _hook_cells()
        self._unsubscribe: Callable[[], None] | None = source.subscribe(self._on_transition)
        self.on_msg(self._on_custom_msg)
        self.sent_messages = 0
        self._refresh()

    def work_loop(self) -> asyncio.AbstractEventLoop | None:
        return getattr(getattr(self, "_source", None), "loop", None) or super().work_loop()

    def __repr__(self) -> str:
        return text_fallback(VIEW_TEXT.get(self._kind, "workbench view"))

    # -- plumbing -------------------------------------------------------------------------------
    @property
    def source(self) -> Any:
        return self._source

    @property
    def context(self) -> ViewContext:
        return self._context

    @property
    def max_syncs_per_s(self) -> float:
        return self._coalescer.max_per_s

    @max_syncs_per_s.setter
    def max_syncs_per_s(self, value: float) -> None:
        self._coalescer.max_per_s = value

    def state_of(self, channel: str) -> Any:
        return self._context.state(self._source, channel)

    def _on_transition(self, _t: Any) -> None:
        self._coalescer.request()

    def _context_changed(self) -> None:
        self._coalescer.cancel()
        self._refresh()

    def _refresh(self) -> None:
        at = self._context.at_seq
        try:
            with self.hold_sync():
                self.mode = source_mode(self._source)
                self.at_seq = at
                self.read_only = self.DISPATCHES and (at is not None or self.mode != "live")
                self.render_view()
        except Exception as exc:  # a view must never take the kernel down
            self._show_error(f"view update failed: {type(exc).__name__}: {exc}")

    def render_view(self) -> None:  # pragma: no cover - overridden
        """Recompute the view model and set the synced traitlets (subclasses)."""

    def refresh(self) -> None:
        """Recompute now (bypassing coalescing)."""
        self._coalescer.cancel()
        self._refresh()

    def view_keys(self) -> list[str]:
        """The synced traitlets that make up the view (not anywidget's own: code, layout)."""
        return [k for k in dict.fromkeys(self.keys) if k not in _BASE_SYNC_KEYS]

    def resync(self) -> None:
        """Send the browser the whole view again, changed or not.

        The front end asks (``{"type": "sync"}``) when it finds its model deaf: anywidget's front
        end drops every message from the kernel to a model whose module took longer than its load
        deadline (2 s) to import, which a loaded machine can take; see ``js/src/resync.js``.
        Subclasses also resend what travels as custom messages.
        """
        self.refresh()
        self.send_state(key=self.view_keys())

    def send_msg(self, content: dict[str, Any]) -> None:
        self.sent_messages += 1
        self.send(to_json(content))

    def check_mode(self) -> None:
        """Redraw if the source's mode changed (a lab closed since the last refresh)."""
        if source_mode(self._source) != self.mode:
            self.refresh()

    def close(self) -> None:
        _open_views.discard(self)
        self._coalescer.cancel()
        if self._unsubscribe is not None:
            with contextlib.suppress(Exception):
                self._unsubscribe()
            self._unsubscribe = None
        self._context.detach(self)
        super().close()

    def _show_error(self, message: str) -> None:
        self.error = one_line(message, 300)
        self.error_count += 1

    def limit_for(self, ref: str) -> int:
        return self._limits.get(ref, BLOCK_LIMIT)

    # -- messages from the browser --------------------------------------------------------------
    def _on_custom_msg(self, _widget: Any, content: Any, _buffers: Any = None) -> None:
        try:
            self.check_mode()  # a click on a view of a lab closed since: it redraws as closed
            self.handle_message(content)
        except Exception as exc:
            self._show_error(f"{type(exc).__name__}: {exc}")

    def handle_message(self, content: Any) -> None:
        if not isinstance(content, dict):
            return
        typ = content.get("type")
        if typ == "dispatch":
            self._do("dispatch", content)
        elif typ == "prompt":
            self._do("prompt", content)
        elif typ == "authenticate":
            self._do("authenticate", content)
        elif typ == "more":
            ref = content.get("ref")
            if isinstance(ref, str) and len(ref) < 1000:
                self._limits[ref] = min(MAX_BLOCK_LIMIT, self.limit_for(ref) * 4)
                self.refresh()
        elif typ == "clear_error":
            self.error = ""
        elif typ == "sync":
            self.resync()
        else:
            self.handle_view_message(typ, content)

    def handle_view_message(self, typ: Any, content: dict[str, Any]) -> None:
        """Widget-specific messages (subclasses)."""

    def refuse_reason(self) -> str | None:
        """Why this view may not act now (a replay, a closed lab, time travel), or ``None``."""
        mode = source_mode(self._source)
        if mode != "live":
            return READ_ONLY_REASONS[mode]
        if self._context.at_seq is not None:
            return f"read-only: viewing the state at seq {self._context.at_seq}; leave time travel to act"
        return None

    def _do(self, what: str, content: dict[str, Any]) -> bool:
        """Dispatch, prompt, stop or authenticate for the browser; whether it went through."""
        refused = self.refuse_reason()
        if refused is not None:
            self._show_error(refused)
            return False
        try:
            if what == "dispatch":
                channel, action = content.get("channel"), content.get("action")
                if not isinstance(channel, str) or not channel:
                    raise ValueError("dispatch needs a channel URI")
                if not isinstance(action, dict) or not isinstance(action.get("type"), str):
                    raise ValueError("dispatch needs an action object with a string type")
                self._source.dispatch(channel, action)
            elif what == "prompt":
                text = content.get("text")
                if not isinstance(text, str) or not text.strip():
                    raise ValueError("a prompt needs some text")
                self._source.prompt(text)
            elif what == "stop":
                self._source.stop(content["chat"])
            else:
                resource, token = content.get("resource"), content.get("token")
                if not isinstance(resource, str) or not resource:
                    raise ValueError("authenticate needs the protected resource URI")
                if not isinstance(token, str) or not token:
                    raise ValueError("authenticate needs a token")
                self._source.authenticate(resource, token)
        except Exception as exc:  # ProtocolError (a ValueError) or anything the host raised
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            self._show_error(msg)
            return False
        if self.error:
            self.error = ""
        return True
