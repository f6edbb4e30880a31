"""JavaScript value semantics the reference reducers rely on, for exact parity on off-type input.

The reference reducers are TypeScript. Where they test a field by truthiness (``if (action.x)``),
add with ``+``, clamp with ``Math.max`` or spread with ``{...x}``, a JSON value of an unexpected type
behaves as JavaScript says, not as Python would: ``[]`` is truthy, ``""`` and ``0`` are falsy,
``"a" + 5`` is ``"a5"``. ``None`` stands for ``undefined`` (the fixture runner turns every ``null``
into ``undefined`` before reducing). Fast paths cover the well-typed case.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..protocol.text import Text, append_text

__all__ = [
    "truthy",
    "to_number",
    "to_string",
    "plus",
    "json_plus",
    "spread",
    "array_from",
    "to_uint32",
    "clamp_non_negative",
    "key",
]

_NAN = float("nan")
_NUMERIC = re.compile(r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")
_RADIX = re.compile(r"0(?:[xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)")  # no sign, no "_", ASCII only
_WHITESPACE = " \t\n\r\v\f\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def truthy(value: Any) -> bool:
    """JavaScript truthiness: ``undefined``, ``false``, ``0``, ``NaN`` and ``""`` are falsy; objects and arrays are truthy."""
    if value is None or value is False:
        return False
    if value is True:
        return True
    if isinstance(value, (str, Text)):
        return len(value) > 0
    if isinstance(value, (int, float)):
        return value != 0 and value == value
    return True


#: Integers beyond this magnitude are not exact in a double: JavaScript rounds them as it parses.
_EXACT = 2**53


def as_double(x: int | float) -> float | int:
    """``x`` as JavaScript holds the number: an integer beyond 2**53 rounded to a double (±Infinity
    beyond the largest), anything else unchanged."""
    if type(x) is int and not -_EXACT <= x <= _EXACT:
        try:
            return float(x)
        except OverflowError:
            return math.inf if x > 0 else -math.inf
    return x


def to_number(value: Any) -> float | int:
    """JavaScript ``ToNumber`` (``undefined`` and malformed strings give ``NaN``)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return as_double(value)
    if value is None or isinstance(value, dict):
        return _NAN
    if isinstance(value, list):
        return to_number(to_string(value))
    text = str(value).strip(_WHITESPACE)
    if not text:
        return 0
    if text[:2].lower() in ("0x", "0o", "0b"):
        return as_double(int(text, 0)) if _RADIX.fullmatch(text) else _NAN
    if not _NUMERIC.fullmatch(text):
        return _NAN
    return float(text.replace("Infinity", "inf"))


def _number_to_string(x: float | int) -> str:
    """JavaScript ``Number.prototype.toString()`` for a double."""
    if isinstance(x, int) and abs(x) < 2**53:
        return str(x)
    x = float(as_double(x))
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    mantissa, _, exp = repr(abs(x)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    point = len(whole) + (int(exp) if exp else 0)  # decimal point position in `whole + frac`
    point -= len(whole + frac) - len((whole + frac).lstrip("0"))
    digits = digits.rstrip("0") or "0"
    k, n = len(digits), point
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        body = digits[0] + ("." + digits[1:] if k > 1 else "") + ("e+" if e >= 0 else "e-") + str(abs(e))
    return sign + body


def to_string(value: Any) -> str:
    """JavaScript ``String(value)`` for JSON values (arrays join with ``,``; objects are ``[object Object]``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Text):
        return str(value)
    if value is None:
        return "undefined"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _number_to_string(value)
    if isinstance(value, list):
        return ",".join("" if v is None else to_string(v) for v in value)
    return "[object Object]"


def plus(a: Any, b: Any) -> Any:
    """JavaScript ``a + b``: string concatenation when either side is (or becomes) a string."""
    if isinstance(b, str) and isinstance(a, (str, Text)):
        return append_text(a, b)
    if isinstance(a, (list, dict)):
        a = to_string(a)
    if isinstance(b, (list, dict)):
        b = to_string(b)
    if isinstance(a, (str, Text)) or isinstance(b, (str, Text)):
        return append_text(to_string(a), to_string(b))
    return as_double(to_number(a) + to_number(b))


def json_plus(a: Any, b: Any) -> Any:
    """``a + b`` as JSON carries it: NaN (``undefined + undefined``) and ±Infinity serialize as null
    (``None``)."""
    out = plus(a, b)
    if type(out) is float and (out != out or out in (math.inf, -math.inf)):
        return None
    return out


def array_from(value: Any) -> list:
    """``[...value]``: a list as it is, a string by code point; anything else is not iterable."""
    if isinstance(value, list):
        return value
    if isinstance(value, (str, Text)):
        return list(str(value))
    raise TypeError(f"{type(value).__name__} is not iterable")


def spread(value: Any) -> dict:
    """The own enumerable properties ``{...value}`` copies (strings by UTF-16 code unit)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, list):
        return {str(i): v for i, v in enumerate(value)}
    if isinstance(value, (str, Text)):
        units = str(value).encode("utf-16-le", "surrogatepass")
        return {
            str(i): units[2 * i : 2 * i + 2].decode("utf-16-le", "surrogatepass")
            for i in range(len(units) // 2)
        }
    return {}


def to_uint32(value: Any) -> int:
    """``ToUint32``: the unsigned view of JavaScript's 32-bit bitwise operators (status bitsets)."""
    if type(value) is int and 0 <= value <= 0xFFFFFFFF:
        return value
    x = to_number(value)
    if x != x or x in (math.inf, -math.inf):
        return 0
    return int(x) & 0xFFFFFFFF


def clamp_non_negative(value: Any) -> Any:
    """``Math.max(0, value)`` as JSON: ``None`` (absent) where JavaScript gives ``NaN``."""
    if type(value) is int:
        return value if value > 0 else 0
    x = to_number(value)
    if x != x or x == math.inf:  # NaN and Infinity serialize as null
        return None
    x = max(0, x)
    if isinstance(x, float) and x.is_integer() and abs(x) < 2**53:
        return int(x)
    return x


class _NoMatch:
    """A key that equals nothing (an object or array id: ``===`` compares identity in JavaScript)."""

    __slots__ = ()


def key(value: Any) -> Any:
    """A hashable stand-in for ``value`` under JavaScript ``===``: ``1 == 1.0`` but ``true != 1``."""
    if type(value) is str or value is None:
        return value
    if isinstance(value, Text):
        return str(value)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("number", as_double(value)) if value == value else _NoMatch()
    return _NoMatch()


def same(a: Any, b: Any) -> bool:
    """JavaScript ``a === b`` for ids (the common case, two strings, first). Two objects or arrays
    are never the same: JSON never gives one object twice, and a Python caller reusing one would
    see its state differ from the log's replay, which reads each action's own copy."""
    if type(a) is str and type(b) is str:
        return a == b
    return key(a) == key(b)
