"""Write-ahead reconciliation of one subscribed channel (overview §6), free of any transport.

A :class:`Replica` keeps ``confirmed`` (built only from snapshots and host envelopes), ``pending``
(this client's dispatches the host has not echoed yet, oldest first) and ``optimistic`` =
``confirmed`` with every pending action re-applied in order. The invariant, checked by the property
tests, is exact: after every step ``optimistic == reduce(confirmed, pending)``, and ``confirmed``
equals the host's state after the same envelopes.

* Own echo, accepted: the matching pending entry leaves, the host's action is applied to
  ``confirmed``. When the echo is the head of ``pending`` and carries the very action that was
  sent, ``optimistic`` is already right and is kept (no rebase).
* Own echo, rejected: the entry leaves, nothing is applied, the rest is rebased.
* Foreign envelope: applied to ``confirmed`` (unless rejected), pending rebased on top.
* An own echo with client seq *k* also settles every older pending entry of the channel: the
  host handles a connection's dispatches in order, so an older one without an echo was dropped
  (its channel was gone) and will never be echoed.
* Envelopes at or below the last applied server seq are ignored, so a replay that overlaps what
  arrived live applies nothing twice.
* A dispatch the host dropped with no later own echo to reveal it is settled by a round trip:
  once the answer to a request sent after it arrives, every echo it could have had has arrived
  too (:meth:`forget_through`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..reducers import REDUCERS

__all__ = ["Replica", "Outcome"]


@dataclass(frozen=True)
class Outcome:
    """What one envelope did to a replica."""

    kind: str  # "stale" | "own" | "own-rejected" | "foreign" | "foreign-rejected"
    client_seq: int | None = None
    dropped: tuple[int, ...] = ()  # older pending client seqs the host dropped without an echo
    sent: dict | None = None  # the pending action an own echo answers (None: it answers none)


@dataclass
class Replica:
    """One state-bearing channel as a client sees it."""

    kind: str
    confirmed: Any
    seq: int  # highest server seq reflected in ``confirmed`` (a snapshot's ``fromSeq`` at first)
    pending: list[tuple[int, dict]] = field(default_factory=list)
    optimistic: Any = None

    def __post_init__(self) -> None:
        self.reducer = REDUCERS[self.kind]
        if self.optimistic is None:
            self.rebase(0)

    def rebase(self, now_ms: int) -> None:
        """Recompute ``optimistic`` = ``confirmed`` with every pending action re-applied."""
        state = self.confirmed
        for _, action in self.pending:
            state = self.reducer(state, action, now_ms)
        self.optimistic = state

    def dispatch(self, client_seq: int, action: dict, now_ms: int) -> None:
        """Apply a local dispatch optimistically (the caller sends it)."""
        self.pending.append((client_seq, action))
        self.optimistic = self.reducer(self.optimistic, action, now_ms)

    def reset(self, state: Any, from_seq: int, now_ms: int, *, keep_pending: bool = False) -> None:
        """Replace ``confirmed`` with a snapshot taken at server seq ``from_seq``."""
        self.confirmed = state
        self.seq = from_seq
        if not keep_pending:
            self.pending = []
        self.rebase(now_ms)

    def forget_through(self, client_seq: int, now_ms: int) -> list[tuple[int, dict]]:
        """Drop pending entries up to ``client_seq`` (the host answered a later request without
        echoing them, so it dropped them); returns them."""
        gone = [(s, a) for s, a in self.pending if s <= client_seq]
        if gone:
            self.pending = [(s, a) for s, a in self.pending if s > client_seq]
            self.rebase(now_ms)
        return gone

    def receive(self, envelope: dict, client_id: str, now_ms: int) -> Outcome:
        """Apply one host ``action`` envelope (overview §6 table)."""
        seq = envelope.get("serverSeq")
        if isinstance(seq, int):
            if seq <= self.seq:
                return Outcome("stale")
            self.seq = seq
        action = envelope.get("action")
        origin = envelope.get("origin")
        rejected = envelope.get("rejectionReason") is not None
        own = isinstance(origin, dict) and origin.get("clientId") == client_id
        if not own:
            if rejected:
                return Outcome("foreign-rejected")
            self.confirmed = self.reducer(self.confirmed, action, now_ms)
            if self.pending:
                self.rebase(now_ms)
            else:
                self.optimistic = self.confirmed
            return Outcome("foreign")
        client_seq = origin.get("clientSeq")
        at = next((i for i, (s, _) in enumerate(self.pending) if s == client_seq), None)
        dropped: tuple[int, ...] = ()
        if at is None:
            sent = None
        else:
            dropped = tuple(s for s, _ in self.pending[:at])
            sent = self.pending[at][1]
            del self.pending[: at + 1]
        if rejected:
            self.rebase(now_ms)
            return Outcome("own-rejected", client_seq, dropped, sent)
        self.confirmed = self.reducer(self.confirmed, action, now_ms)
        if at == 0 and sent == action:
            if not self.pending:
                self.optimistic = self.confirmed
            # else: optimistic already is confirmed + (this action) + the remaining pending
        else:
            self.rebase(now_ms)
        return Outcome("own", client_seq, dropped)
