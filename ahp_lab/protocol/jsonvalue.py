"""Helpers for the JSON-shaped values that reducers, the store and the wire share."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .text import Text
from .vector import Vector

__all__ = [
    "to_json",
    "strip_nulls",
    "dumps",
    "utf8_json",
    "utf8_bytes",
    "valid_unicode",
    "held_back",
    "loads",
    "json_equal",
    "json_patch",
    "apply_patch",
]


#: Recent conversions of containers: id -> (value, plain form). The same unchanged state converts
#: to the same plain object, so a caller can still tell "unchanged" by identity.
_RECENT: dict[int, tuple[Any, Any]] = {}
_RECENT_SIZE = 8


def to_json(value: Any) -> Any:
    """Return ``value`` as plain JSON data (``Text`` becomes ``str``, ``Vector`` a list).

    Containers are copied only where they hold such values, and converting the same object again
    soon after gives the very same result.
    """
    if type(value) is dict or type(value) is Vector:
        recent = _RECENT.get(id(value))
        if recent is not None and recent[0] is value:
            return recent[1]
        out = _to_json(value)
        if out is not value:
            if len(_RECENT) >= _RECENT_SIZE:
                del _RECENT[next(iter(_RECENT))]
            _RECENT[id(value)] = (value, out)
        return out
    return _to_json(value)


def _to_json(value: Any) -> Any:
    if isinstance(value, Text):
        return str(value)
    if type(value) is Vector:
        return [_to_json(v) for v in value]
    if isinstance(value, dict):
        out = None
        for k, v in value.items():
            nv = _to_json(v)
            if nv is not v:
                if out is None:
                    out = dict(value)
                out[k] = nv
        return value if out is None else out
    if isinstance(value, (list, tuple)):
        items = [_to_json(v) for v in value]
        if isinstance(value, list) and all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items
    return value


def strip_nulls(value: Any) -> Any:
    """Recursively delete object keys whose value is ``null`` (array elements are kept).

    AHP treats a ``null`` member as absent; this is the canonical form used to compare states and to
    print them with absent members omitted. A number JSON cannot carry (NaN, ±Infinity: ``1e400``
    parses to one) is ``null``, as ``JSON.stringify`` writes it.
    """
    if isinstance(value, Text):
        return str(value)
    if isinstance(value, dict):
        return {k: strip_nulls(v) for k, v in value.items() if v is not None and not _non_finite(v)}
    if isinstance(value, (list, tuple)):
        return [strip_nulls(v) for v in value]
    return None if _non_finite(value) else value


def _non_finite(value: Any) -> bool:
    return type(value) is float and not math.isfinite(value)


def _default(obj: Any) -> Any:
    if isinstance(obj, Text):
        return str(obj)
    if isinstance(obj, (tuple, Vector)):
        return list(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def dumps(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` that understands :class:`Text`. Keeps non-ASCII characters as they are."""
    kwargs.setdefault("ensure_ascii", False)
    return json.dumps(value, default=_default, **kwargs)


def utf8_bytes(text: str) -> int:
    """How many bytes ``text`` takes in UTF-8 (a lone surrogate as 3, as its escape-free form)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8_json(text: str) -> str:
    """JSON text (from :func:`dumps`) as UTF-8 can carry it, and as ``JSON.stringify`` writes strings
    JavaScript built by ``+``: two halves of a character that sit apart in Python are one character,
    and a lone half is written escaped (``\\ud83d``), so that reading it back gives the same string."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", joined)


def valid_unicode(text: str) -> str:
    """``text`` as valid Unicode, as UTF-8 and every peer can carry it: two halves of a character
    that sit apart in Python are joined, and a lone half becomes U+FFFD."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def held_back(text: str) -> tuple[str, str]:
    """``(text, "")``, or, when ``text`` ends on the first half of a character (a stream cut it by
    UTF-16 units), ``(text without it, that half)``: the half waits for the next piece."""
    if text and "\ud800" <= text[-1] <= "\udbff":
        return text[:-1], text[-1]
    return text, ""


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


def _pointer(path: str, key: str | int) -> str:
    return f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"


def json_patch(before: Any, after: Any, path: str = "") -> list[dict]:
    """An RFC 6902 JSON patch turning ``before`` into ``after`` (``Text`` read as plain strings).

    Shared subtrees (the same object on both sides) are skipped without being walked, so the cost
    follows what changed, not the size of the state. Lists that only grew at the end produce
    ``add`` operations; other list changes are compared element by element when the length is
    unchanged and replaced otherwise.
    """
    if before is after:
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        ops: list[dict] = []
        for key in before:
            if key not in after:
                ops.append({"op": "remove", "path": _pointer(path, key)})
        for key, value in after.items():
            if key not in before:
                ops.append({"op": "add", "path": _pointer(path, key), "value": to_json(value)})
            else:
                ops.extend(json_patch(before[key], value, _pointer(path, key)))
        return ops
    if isinstance(before, list) and isinstance(after, list):
        n, m = len(before), len(after)
        changed = _changed_positions(before, after, min(n, m))
        if m >= n and all(json_equal(before[i], after[i]) for i in changed):
            return [{"op": "add", "path": _pointer(path, i), "value": to_json(after[i])} for i in range(n, m)]
        if m == n:
            ops = []
            for i in changed:
                ops.extend(json_patch(before[i], after[i], _pointer(path, i)))
            return ops
        return [{"op": "replace", "path": path, "value": to_json(after)}]
    if isinstance(before, (str, Text)) and isinstance(after, (str, Text)):
        return [] if before == after else [{"op": "replace", "path": path, "value": str(after)}]
    if json_equal(before, after):
        return []
    return [{"op": "replace", "path": path, "value": to_json(after)}]


def _changed_positions(before: Any, after: Any, k: int) -> list[int]:
    """Positions below ``k`` whose entries are not the same object on both sides."""
    if type(before) is Vector and type(after) is Vector:
        return before.differing(after, k)
    return [i for i, (a, b) in enumerate(zip(before, after, strict=False)) if i < k and a is not b]


def apply_patch(document: Any, patch: list[dict]) -> Any:
    """Apply an RFC 6902 patch made of add/remove/replace operations (returns a new document).

    The document is copied as the JSON tree it stands for: a state shares subtrees (one message
    object may sit in a turn and in the queue), and a patch must change one place, not every alias.
    """
    import copy

    doc = loads(dumps(document))
    for op in patch:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        if not parts:
            doc = copy.deepcopy(op.get("value"))
            continue
        parent = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        last = parts[-1]
        if isinstance(parent, list):
            index = len(parent) if last == "-" else int(last)
            if op["op"] == "add":
                parent.insert(index, copy.deepcopy(op["value"]))
            elif op["op"] == "remove":
                del parent[index]
            else:
                parent[index] = copy.deepcopy(op["value"])
        elif op["op"] == "remove":
            del parent[last]
        else:
            parent[last] = copy.deepcopy(op["value"])
    return doc
