"""Positional access to a transition log, whatever its own indexing convention.

A source's ``transitions`` may be a plain list (position-indexed) or a log indexed by server seq
(``log[42]`` is seq 42). Both agree on ``len``, iteration (oldest first) and *negative* indices
(``log[-1]`` is the newest), so positions are addressed through negative indices here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["LogStart", "log_at", "log_slice", "find_seq"]


def log_at(log: Sequence[Any], pos: int) -> Any:
    """The transition at position ``pos`` (0 = oldest)."""
    n = len(log)
    if not 0 <= pos < n:
        raise IndexError(f"position {pos} outside the log (0..{n - 1})")
    return log[pos - n]


def log_slice(log: Sequence[Any], start: int, stop: int) -> list[Any]:
    """Transitions at positions ``[start, stop)``."""
    n = len(log)
    start, stop = max(0, start), min(n, stop)
    if start >= stop:
        return []
    return list(log[start - n : (stop - n) if stop < n else None])


def _seq(t: Any) -> int:
    s = getattr(t, "seq", None)
    return s if isinstance(s, int) else -1


def find_seq(log: Sequence[Any], seq: int) -> tuple[int, Any] | tuple[None, None]:
    """Position and transition with server seq ``seq`` (seqs increase along the log)."""
    n = len(log)
    if n == 0:
        return None, None
    first = _seq(log_at(log, 0))
    guess = seq - first
    if 0 <= guess < n:
        t = log_at(log, guess)
        if _seq(t) == seq:
            return guess, t
    lo, hi = 0, n
    while lo < hi:  # binary search on positions
        mid = (lo + hi) // 2
        if _seq(log_at(log, mid)) < seq:
            lo = mid + 1
        else:
            hi = mid
    if lo < n:
        t = log_at(log, lo)
        if _seq(t) == seq:
            return lo, t
    return None, None


class LogStart:
    """Notices a log that dropped its oldest transitions (a store keeping within ``max_log_bytes``).

    ``moved(log)`` is how many positions the log's start moved since the previous call: a view
    that keeps positions shifts them down by that much. It is 0 for a log that only grew.
    """

    def __init__(self) -> None:
        self._seq: int | None = None

    def moved(self, log: Sequence[Any]) -> int:
        if not len(log):
            self._seq = None
            return 0
        before, self._seq = self._seq, _seq(log_at(log, 0))
        return self._seq - before if before is not None and self._seq > before else 0
