"""Timestamps as the protocol writes them (plain Python: the reducers import this)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


_last_iso: list = [None, ""]  # the last clock value rendered, and its text (actions share a clock tick)


def iso_ms(now_ms: int) -> str:
    """Render epoch milliseconds exactly like JavaScript ``Date.prototype.toISOString()``."""
    if now_ms == _last_iso[0] and type(now_ms) is type(_last_iso[0]):
        return _last_iso[1]
    ms = int(now_ms)
    dt = _EPOCH + timedelta(milliseconds=ms)
    text = f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}.{ms % 1000:03d}Z"
    _last_iso[0], _last_iso[1] = now_ms, text
    return text
