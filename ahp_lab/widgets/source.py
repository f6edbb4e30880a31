"""The kernel-side interface the workbench views consume.

The host/store implements :class:`WorkbenchSource`; the views only read state through it and turn
clicks into :meth:`WorkbenchSource.dispatch` / :meth:`~WorkbenchSource.prompt` /
:meth:`~WorkbenchSource.authenticate` calls. ``ahp_lab.widgets.fake.FakeSource`` is a small
in-memory implementation for tests and demos.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["Transition", "WorkbenchSource"]


@runtime_checkable
class Transition(Protocol):
    """One record per action the host sequenced (accepted or rejected)."""

    seq: int  # server seq
    channel: str  # channel URI, e.g. "ahp-chat:/<uuid>"
    action: dict  # the action JSON (type, ...)
    origin: (
        dict  # {"kind":"client","clientId":..,"clientSeq":..} | {"kind":"host"} | {"kind":"agent","name":..}
    )
    rejection_reason: str | None  # set when the host rejected a client dispatch (state unchanged)
    before: Any
    after: Any  # channel state before/after (after is before when rejected)
    wall_time: float  # epoch seconds
    reducer_ns: int

    @property
    def diff(self) -> list[dict]:  # RFC 6902 JSON patch before -> after, computed on demand
        ...


@runtime_checkable
class WorkbenchSource(Protocol):
    """What a workbench needs from the in-kernel host."""

    session: str  # session channel URI
    chat: str  # default chat channel URI

    def state(self, channel: str) -> Any:
        """Current state of a channel (JSON dict; text fields may be ``Text`` objects)."""
        ...

    def state_at(self, seq: int) -> dict[str, Any]:
        """Every channel's state right after ``seq`` (time travel)."""
        ...

    @property
    def transitions(self) -> Sequence[Transition]:
        """The whole log, oldest first; supports len/index/slice."""
        ...

    def subscribe(self, listener: Callable[[Transition], None]) -> Callable[[], None]:
        """Call ``listener`` synchronously after each new transition; returns unsubscribe."""
        ...

    def dispatch(self, channel: str, action: dict) -> None:
        """Dispatch as this notebook's client; raises ValueError for malformed input."""
        ...

    def prompt(self, text: str) -> None:
        """Start a new turn with a user message on the default chat."""
        ...

    def authenticate(self, resource: str, token: str) -> None:
        """AHP ``authenticate`` command (MCP auth), scheduled."""
        ...
