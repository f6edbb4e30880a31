"""Helpers for the JSON-shaped values that reducers, the store and the wire share."""

from __future__ import annotations

import json
from typing import Any

from .text import Text

__all__ = ["to_json", "strip_nulls", "dumps", "loads", "json_equal"]


def to_json(value: Any) -> Any:
    """Return ``value`` as plain JSON data (``Text`` becomes ``str``); containers are copied only if needed."""
    if isinstance(value, Text):
        return str(value)
    if isinstance(value, dict):
        out = None
        for k, v in value.items():
            nv = to_json(v)
            if nv is not v:
                if out is None:
                    out = dict(value)
                out[k] = nv
        return value if out is None else out
    if isinstance(value, (list, tuple)):
        items = [to_json(v) for v in value]
        if isinstance(value, list) and all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items
    return value


def strip_nulls(value: Any) -> Any:
    """Recursively delete object keys whose value is ``null`` (array elements are kept).

    AHP treats a ``null`` member as absent; this is the canonical form used to compare states and to
    print them with absent members omitted.
    """
    if isinstance(value, Text):
        return str(value)
    if isinstance(value, dict):
        return {k: strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [strip_nulls(v) for v in value]
    return value


def _default(obj: Any) -> Any:
    if isinstance(obj, Text):
        return str(obj)
    if isinstance(obj, tuple):
        return list(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def dumps(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` that understands :class:`Text`. Keeps non-ASCII characters as they are."""
    kwargs.setdefault("ensure_ascii", False)
    return json.dumps(value, default=_default, **kwargs)


def loads(data: str | bytes) -> Any:
    return json.loads(data)


def json_equal(a: Any, b: Any) -> bool:
    """Deep equality of JSON values with numbers compared numerically (``0 == 0.0``) but ``True != 1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b
