"""An in-memory :class:`~ahp_lab.widgets.source.WorkbenchSource` for tests, demos and docs.

``FakeSource`` records transitions you feed it (``record`` with a hand-built state, or ``apply``
through ``ahp_lab.reducers.REDUCERS`` when that package is available) and remembers what the views
asked for (``dispatched``, ``prompts``, ``authentications``).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..protocol.jsonvalue import json_patch  # the one diff, shared with the store

__all__ = ["FakeTransition", "FakeSource", "json_patch"]


class FakeTransition:
    """One recorded transition (the fields of :class:`~ahp_lab.widgets.source.Transition`)."""

    __slots__ = (
        "seq",
        "channel",
        "action",
        "origin",
        "rejection_reason",
        "before",
        "after",
        "wall_time",
        "reducer_ns",
    )

    def __init__(
        self,
        seq: int,
        channel: str,
        action: dict,
        origin: dict,
        before: Any,
        after: Any,
        rejection_reason: str | None = None,
        wall_time: float | None = None,
        reducer_ns: int = 0,
    ) -> None:
        self.seq = seq
        self.channel = channel
        self.action = action
        self.origin = origin
        self.rejection_reason = rejection_reason
        self.before = before
        self.after = after
        self.wall_time = time.time() if wall_time is None else wall_time
        self.reducer_ns = reducer_ns

    @property
    def diff(self) -> list[dict]:
        return json_patch(self.before, self.after)

    def __repr__(self) -> str:
        return f"FakeTransition(seq={self.seq}, channel={self.channel!r}, type={self.action.get('type')!r})"


def _load_reducers() -> Mapping[str, Callable[..., Any]] | None:
    try:
        from ahp_lab.reducers import REDUCERS  # type: ignore[attr-defined]
    except Exception:
        return None
    return REDUCERS


def _kind(channel: str) -> str:
    if channel.startswith("ahp-chat:"):
        return "chat"
    if channel.startswith("ahp-session:"):
        return "annotations" if channel.endswith("/annotations") else "session"
    if channel.startswith("ahp-root:"):
        return "root"
    return channel.split(":", 1)[0]


class FakeSource:
    """A scriptable, synchronous workbench source.

    * ``set_state(channel, state)`` sets a channel's state without a transition (initial state);
    * ``record(channel, action, after, ...)`` appends a transition with a hand-built ``after``;
    * ``apply(channel, action, ...)`` reduces with ``ahp_lab.reducers.REDUCERS`` (when available);
    * ``dispatch`` records the call in ``dispatched`` and, when ``apply_dispatches`` is true and
      reducers exist, applies it as a client action; set ``dispatch_error`` to make it raise
      ``ValueError`` and ``reject_reason`` to record a rejected transition instead.
    """

    def __init__(
        self,
        states: Mapping[str, Any] | None = None,
        *,
        session: str = "ahp-session:/s1",
        chat: str = "ahp-chat:/c1",
        client_id: str = "notebook",
        reducers: Mapping[str, Callable[..., Any]] | None | bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.session = session
        self.chat = chat
        self.client_id = client_id
        self._states: dict[str, Any] = dict(states or {})
        self._initial: dict[str, Any] = dict(self._states)
        self._log: list[FakeTransition] = []
        self._listeners: list[Callable[[Any], None]] = []
        self.reducers = _load_reducers() if reducers is True else (reducers or None)
        self._clock = clock
        self._client_seq = 0
        self.dispatched: list[tuple[str, dict]] = []
        self.prompts: list[str] = []
        self.stops: list[str] = []
        self.authentications: list[tuple[str, str]] = []
        self.apply_dispatches = True
        self.dispatch_error: str | None = None
        self.reject_reason: str | None = None
        self.local: dict[str, dict] = {}
        self.local_decisions: list[tuple[str, bool]] = []
        self.read_only = False  # True: a replay (the views disable every control that dispatches)
        self.closed = False  # True: a closed lab (likewise, and the views say "closed")
        self._local_listeners: list[Callable[[], None]] = []

    # -- WorkbenchSource -------------------------------------------------------------------------
    def state(self, channel: str) -> Any:
        return self._states.get(channel)

    def state_at(self, seq: int) -> dict[str, Any]:
        states = dict(self._initial)
        for t in self._log:
            if t.seq > seq:
                break
            states[t.channel] = t.after
        return states

    @property
    def transitions(self) -> list[FakeTransition]:
        return self._log

    def subscribe(self, listener: Callable[[Any], None]) -> Callable[[], None]:
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def dispatch(self, channel: str, action: dict) -> None:
        self.dispatched.append((channel, copy.deepcopy(action)))
        if self.dispatch_error:
            raise ValueError(self.dispatch_error)
        if not isinstance(action, dict) or not isinstance(action.get("type"), str):
            raise ValueError("an action needs a string 'type'")
        self._client_seq += 1
        origin = {"kind": "client", "clientId": self.client_id, "clientSeq": self._client_seq}
        if self.reject_reason:
            self.record(channel, action, None, origin=origin, rejection_reason=self.reject_reason)
        elif self.apply_dispatches and self.reducers is not None:
            self.apply(channel, action, origin=origin)

    def prompt(self, text: str) -> None:
        self.prompts.append(text)

    def stop(self, chat: str) -> None:
        self.stops.append(chat)

    def authenticate(self, resource: str, token: str) -> None:
        self.authentications.append((resource, token))

    # -- LocalApprovalSource (optional) ------------------------------------------------------------
    def local_approvals(self) -> list[dict]:
        return [dict(a) for a in self.local.values()]

    def decide_local(self, tool_call_id: str, approved: bool, chat: str | None = None) -> None:
        if tool_call_id not in self.local:
            raise LookupError(f"no local approval is waiting for tool call {tool_call_id!r}")
        self.local_decisions.append((tool_call_id, bool(approved)))
        del self.local[tool_call_id]
        self._notify_local()

    def subscribe_local_approvals(self, listener: Callable[[], None]) -> Callable[[], None]:
        self._local_listeners.append(listener)
        return lambda: self._local_listeners.remove(listener) if listener in self._local_listeners else None

    def add_local_approval(
        self,
        tool_call_id: str,
        *,
        chat: str | None = None,
        turn_id: str | None = None,
        tool_name: str = "tool",
        title: str | None = None,
        tool_input: Any = None,
    ) -> None:
        """Make a client tool call wait for a local approval (what ``approval="always"`` does)."""
        self.local[tool_call_id] = {
            "toolCallId": tool_call_id,
            "chat": chat or self.chat,
            "turnId": turn_id,
            "toolName": tool_name,
            "title": title or tool_name,
            "toolInput": tool_input,
            "clientId": self.client_id,
        }
        self._notify_local()

    def _notify_local(self) -> None:
        for listener in list(self._local_listeners):
            listener()

    # -- scripting ---------------------------------------------------------------------------------
    def set_state(self, channel: str, state: Any) -> None:
        self._states[channel] = state
        if not self._log:
            self._initial[channel] = state

    def record(
        self,
        channel: str,
        action: dict,
        after: Any,
        *,
        origin: dict | None = None,
        rejection_reason: str | None = None,
        wall_time: float | None = None,
        reducer_ns: int = 0,
    ) -> FakeTransition:
        before = self._states.get(channel)
        if rejection_reason:
            after = before
        t = FakeTransition(
            seq=(self._log[-1].seq + 1) if self._log else 1,
            channel=channel,
            action=action,
            origin=origin or {"kind": "host"},
            before=before,
            after=after,
            rejection_reason=rejection_reason,
            wall_time=self._clock() if wall_time is None else wall_time,
            reducer_ns=reducer_ns,
        )
        self._states[channel] = after
        self._log.append(t)
        for listener in list(self._listeners):
            listener(t)
        return t

    def apply(
        self, channel: str, action: dict, *, origin: dict | None = None, now_ms: int | None = None
    ) -> FakeTransition:
        if self.reducers is None:
            raise RuntimeError("no reducers available: use record() with a hand-built state")
        reducer = self.reducers[_kind(channel)]
        before = self._states.get(channel)
        t0 = time.perf_counter_ns()
        after = reducer(before, action, int(self._clock() * 1000) if now_ms is None else now_ms)
        return self.record(channel, action, after, origin=origin, reducer_ns=time.perf_counter_ns() - t0)
