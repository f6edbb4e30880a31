"""Timestamps as the protocol writes them (plain Python: the reducers import this)."""

from __future__ import annotations

_DAY_MS = 86_400_000
#: JavaScript's time values end 100,000,000 days either side of the epoch (ECMA-262 TimeClip).
_MAX_MS = 8_640_000_000_000_000

_last_iso: list = [None, ""]  # the last clock value rendered, and its text (actions share a clock tick)


def _civil(days: int) -> tuple[int, int, int]:
    """Year, month and day of the proleptic Gregorian calendar, ``days`` after 1970-01-01."""
    days += 719_468  # counted from 0000-03-01, so that a leap day ends its year
    era = days // 146_097
    doe = days - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def iso_ms(now_ms: int) -> str:
    """Render epoch milliseconds exactly like JavaScript ``Date.prototype.toISOString()``: a year
    outside 0000-9999 has a sign and six digits (``+010000``); beyond JavaScript's range of time
    values it raises ``ValueError``, as ``toISOString`` throws a ``RangeError``."""
    if now_ms == _last_iso[0] and type(now_ms) is type(_last_iso[0]):
        return _last_iso[1]
    ms = int(now_ms)  # toward zero, as TimeClip
    if not -_MAX_MS <= ms <= _MAX_MS:
        raise ValueError(f"{now_ms} ms is outside JavaScript's range of dates")
    days, rest = divmod(ms, _DAY_MS)
    year, month, day = _civil(days)
    shown = f"{year:04d}" if 0 <= year <= 9999 else f"{'+' if year > 0 else '-'}{abs(year):06d}"
    seconds, millis = divmod(rest, 1000)
    text = (
        f"{shown}-{month:02d}-{day:02d}T{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        f".{millis:03d}Z"
    )
    _last_iso[0], _last_iso[1] = now_ms, text
    return text
