"""Protocol validation errors and the ValidationError → one-sentence converter.

:class:`ProtocolError` is what every public entry point of :mod:`ahp_lab.protocol` raises for
malformed wire data. Its message is a single sentence naming the subject (an action type, a type
name or a state kind), the offending field path and the rule that was broken, e.g.::

    chat/delta: field 'content' must be a string, got int
    session/titleChanged: field 'title' is required

:func:`explain` turns a pydantic ``ValidationError`` into the ``(field, rule)`` pair and sentence.
Tagged-union branch labels that pydantic inserts into error locations are removed, so the path is
the JSON path a wire author would recognise (``message.attachments[0].resource``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

__all__ = ["ProtocolError", "explain", "describe_error", "json_type_name"]

#: Branch labels of tagged unions (registered by :mod:`ahp_lab.protocol.base`); they appear in
#: pydantic error locations and are stripped from field paths.
UNION_TAGS: set[str] = set()


class ProtocolError(ValueError):
    """Wire data that does not satisfy the protocol types.

    Attributes:
        field: dotted JSON path of the offending member (``None`` when the value as a whole is wrong).
        rule: the broken rule as a phrase (``"is required"``, ``"must be a string, got int"``, …).
        subject: what was being validated (action type, type name or ``"<kind> state"``).
        code: a short machine-readable reason (pydantic error type or an AHP-specific code).
    """

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        rule: str = "",
        subject: str | None = None,
        code: str = "invalid",
    ) -> None:
        super().__init__(message)
        self.field = field
        self.rule = rule or message
        self.subject = subject
        self.code = code

    @classmethod
    def build(cls, subject: str | None, field: str | None, rule: str, code: str = "invalid") -> ProtocolError:
        """A ProtocolError whose message names the subject, the field and the rule."""
        prefix = f"{subject}: " if subject else ""
        if field:
            message = f"{prefix}field '{field}' {rule}"
        else:
            message = f"{prefix}{rule}" if subject else rule
        return cls(message, field=field, rule=rule, subject=subject, code=code)


def json_type_name(value: Any) -> str:
    """Short JSON-ish name of a Python value's type (``null``, ``boolean``, ``int``, ``float``, …)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def path_step(path: str, key: Any) -> str:
    """``path`` followed by one step: ``[3]`` for an index, ``.name`` for a key, and ``["..."]``
    (JSON-quoted, ``'`` escaped too) for a key that would not read on one line or inside the message's
    quotes, such as one holding a newline or a quote."""
    if isinstance(key, int) and not isinstance(key, bool):
        return f"{path}[{key}]"
    key = str(key)
    if not key or not key.isprintable() or "'" in key or '"' in key:
        quoted = json.dumps(key).replace("'", "\\u0027")
        return f"{path}[{quoted}]"
    return f"{path}.{key}" if path else key


def _format_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for item in loc:
        if isinstance(item, str) and item in UNION_TAGS:
            continue
        out = path_step(out, item)
    return out


_TYPE_RULES = {
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be a boolean",
    "bool_parsing": "must be a boolean",
    "list_type": "must be an array",
    "tuple_type": "must be an array",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "dataclass_type": "must be an object",
    "ahp_number": "must be a number",
    "ahp_finite_number": "must be a finite number",
    "ahp_json_primitive": "must be a JSON primitive (string, number, boolean or null)",
    "ahp_jsonrpc_id": "must be an integer or a string",
    "ahp_string_or_markdown": "must be a string or a {markdown} object",
    "ahp_tool_input": "must be a string or a ContentRef object",
}


def describe_error(err: dict[str, Any]) -> tuple[str | None, str, str]:
    """Return ``(field path, rule phrase, code)`` for one pydantic error dict."""
    etype = err.get("type", "invalid")
    loc = tuple(err.get("loc", ()))
    value = err.get("input")
    ctx = err.get("ctx") or {}
    path = _format_path(loc)
    if etype == "missing":
        return path or None, "is required", "required"
    if etype == "ahp_discriminator":
        found = re.search(r"'([^']+)'", str(err.get("msg", "")))
        disc = found.group(1) if found else "type"
        if not isinstance(value, dict):
            return path or None, f"must be an object, got {json_type_name(value)}", "type"
        sub = f"{path}.{disc}" if path else disc
        if disc not in value or value[disc] is None:
            return sub, "is required", "required"
        return sub, f"must be a string, got {json_type_name(value[disc])}", "type"
    if etype == "ahp_required_when":
        sub = str(ctx.get("field", ""))
        msg = str(err.get("msg", ""))
        when = msg[msg.find(" when ") + 1 :] if " when " in msg else ""
        full = f"{path}.{sub}" if path and sub else (sub or path)
        return full or None, f"is required {when}".strip(), "required"
    if etype == "ahp_jsonrpc_kind":
        return (
            path or None,
            ("is not a JSON-RPC 2.0 message (expected 'method', or 'id' with 'result' or 'error')"),
            "jsonrpc",
        )
    if etype in _TYPE_RULES:
        return path or None, f"{_TYPE_RULES[etype]}, got {json_type_name(value)}", "type"
    if etype == "literal_error":
        expected = ctx.get("expected", "")
        return path or None, f"must be {expected}, got {value!r}", "value"
    if etype in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        op = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}[
            etype
        ]
        bound = next(iter(ctx.values()), "?")
        return path or None, f"must be {op} {bound}, got {value!r}", "range"
    if etype == "extra_forbidden":
        return path or None, "is not allowed", "extra"
    msg = str(err.get("msg", "is invalid"))
    if msg[:1].isupper():
        msg = msg[0].lower() + msg[1:]
    return path or None, f"is invalid: {msg}", etype


def _pick(errors: list[dict[str, Any]]) -> dict[str, Any]:
    """Choose the most relevant error.

    Tagged unions already restrict errors to the branch matching the discriminator, so the first
    error (pydantic reports in field order) is the one about the earliest offending field. Errors
    about the discriminator itself win, because nothing else is meaningful without it.
    """
    for err in errors:
        if err.get("type") in ("ahp_discriminator", "ahp_jsonrpc_kind"):
            return err
    return errors[0]


def explain(error: ValidationError, subject: str | None = None) -> str:
    """One sentence describing ``error``: ``"<subject>: field '<path>' <rule>"``."""
    return to_protocol_error(error, subject).args[0]


def to_protocol_error(error: ValidationError, subject: str | None = None) -> ProtocolError:
    errors = error.errors(include_url=False)
    if not errors:  # pragma: no cover - pydantic always reports at least one
        return ProtocolError.build(subject, None, "is invalid")
    field, rule, code = describe_error(_pick(errors))
    return ProtocolError.build(subject, field, rule, code)
