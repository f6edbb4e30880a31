"""The kernel-side interface the workbench views consume.

The host/store implements :class:`WorkbenchSource`; the views only read state through it and turn
clicks into :meth:`WorkbenchSource.dispatch` / :meth:`~WorkbenchSource.prompt` /
:meth:`~WorkbenchSource.authenticate` calls. ``ahp_lab.widgets.fake.FakeSource`` is a small
in-memory implementation for tests and demos.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["as_source", "LocalApprovalSource", "Transition", "WorkbenchSource"]


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

    def stop(self, chat: str) -> None:
        """Cancel the chat's active turn (``chat/turnCancelled``); ``LookupError`` when none runs."""
        ...

    def authenticate(self, resource: str, token: str) -> None:
        """AHP ``authenticate`` command (MCP auth), scheduled."""
        ...


@runtime_checkable
class LocalApprovalSource(Protocol):
    """Optional extension of :class:`WorkbenchSource`: this notebook's *local* approvals.

    A client tool registered with ``approval="always"`` makes the notebook's client wait for its
    own person before the tool's function runs. That wait is client state, not host state (the
    host only sees a ``running`` call and a ``toolClientExecution`` input entry), so the views ask
    the source for it. A source without these methods simply shows no local approvals.
    """

    def local_approvals(self) -> list[dict]:
        """The waiting approvals: ``{"toolCallId", "chat", "turnId", "toolName", "title",
        "toolInput", "clientId"}`` each, oldest first."""
        ...

    def decide_local(self, tool_call_id: str, approved: bool, chat: str | None = None) -> None:
        """Approve (run the tool) or deny (fail the call) a waiting approval (of ``chat``, when
        given: a call id is unique within its chat only); ``LookupError`` if none is waiting."""
        ...

    def subscribe_local_approvals(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` whenever the set of waiting approvals changes; returns unsubscribe."""
        ...


class AcpFrameSource(Protocol):
    """Optional extension of :class:`WorkbenchSource`: the raw ACP frames behind the session.

    A source whose agent speaks ACP (``AcpAgent``) offers every JSON-RPC frame of that connection,
    each linked to the server seqs it produced (incoming) or was caused by (outgoing). A source
    without these methods shows no ACP lane.
    """

    def acp_frames(self) -> list[dict]:
        """The session's frames as JSON (``index``, ``direction``, ``kind``, ``label``, ``ms``,
        ``seqs``, ``message``), oldest first."""
        ...

    def acp_frames_for_seq(self, seq: int) -> list[dict]:
        """The frames linked to one transition (the way back from an AHP action)."""
        ...


def as_source(obj: Any) -> Any:
    """The :class:`WorkbenchSource` behind ``obj``: a lab gives its own (``lab.as_source()``)."""
    make = getattr(obj, "as_source", None)
    return make() if callable(make) else obj
