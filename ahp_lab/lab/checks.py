"""What a cell passes to the lab, checked before anything is sent: each mistake gets one sentence
about the argument the person wrote (an action, a prompt, a tool function), not an error from
deeper inside."""

from __future__ import annotations

import difflib
import warnings
from typing import Any

from pydantic import BaseModel, ValidationError

from ..protocol import ProtocolError
from ..protocol.actions import ACTION_TYPES, CHANNEL_KINDS
from ..protocol.errors import to_protocol_error

__all__ = ["UnknownFieldWarning", "cell_action", "message_text", "tool_function"]

_EXAMPLE = "{'type': 'session/titleChanged', 'title': 'Renamed'}"


class UnknownFieldWarning(UserWarning):
    """A dispatched action has fields its type does not define (probably a typo).

    The action is still sent as written: AHP is forward compatible, so a host ignores fields it
    does not know rather than refusing them, and a newer host may know them.
    """


def _shown(value: Any) -> str:
    if value is None:
        return "None"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


def cell_action(action: Any, *, stacklevel: int = 3) -> str:
    """The ``type`` of an action a cell dispatches; raises :class:`ProtocolError` when it is not a
    dict, has no ``type`` or an unknown one, and warns (:class:`UnknownFieldWarning`) about fields
    that its type does not define."""
    __tracebackhide__ = True  # IPython shows the caller's cell and the reason
    if not isinstance(action, dict):
        raise ProtocolError(
            f"dispatch takes an action, a dict such as {_EXAMPLE}, not {_shown(action)}",
            field=None,
            rule="must be a dict",
        )
    kind = action.get("type")
    if kind is None:
        raise ProtocolError(
            f"the action has no 'type': name the action, as in {_EXAMPLE}",
            field="type",
            rule="is required",
            code="missing",
        )
    if not isinstance(kind, str):
        raise ProtocolError(
            f"the action's 'type' must be a string such as 'chat/turnStarted', not {_shown(kind)}",
            field="type",
            rule="must be a string",
        )
    model = ACTION_TYPES.get(kind)
    if model is None:
        close = difflib.get_close_matches(kind, ACTION_TYPES, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        prefixes = ", ".join(f"{k}/" for k in CHANNEL_KINDS)
        raise ProtocolError(
            f"unknown action type {kind!r}: {hint}action types start with {prefixes}",
            field="type",
            rule="is not a known action type",
            subject=kind,
            code="unknown_action_type",
        )
    known = sorted(info.alias or name for name, info in model.model_fields.items())
    try:
        extra = _extras(model.model_validate(action, by_alias=True, by_name=False), "")
    except ValidationError as exc:
        # malformed: the client's validation would say what is wrong; a misspelt field is said
        # with it ("field 'title' is required" for a "titel")
        typos = [
            f"unknown field {name!r}: did you mean {close[0]!r}?"
            for name in action
            if name not in known
            and name not in ("type", "_meta")
            and (close := difflib.get_close_matches(name, known, n=1))
            and close[0] not in action
        ]
        if not typos:
            return kind
        error = to_protocol_error(exc, kind)
        raise ProtocolError(
            f"{error} ({'; '.join(typos)})", field=error.field, rule=error.rule, subject=kind, code=error.code
        ) from None
    if extra:
        guesses = [g for f in extra for g in difflib.get_close_matches(f.rsplit(".", 1)[-1], known, n=1)]
        hint = f" (did you mean {', '.join(repr(g) for g in guesses)}?)" if guesses else ""
        warnings.warn(
            f"{kind}: unknown field{'s' if len(extra) > 1 else ''} {', '.join(repr(f) for f in extra)}{hint}; "
            f"it is sent as written (unless this warning is made an error), and a host ignores fields it does not know",
            UnknownFieldWarning,
            stacklevel=stacklevel,
        )
    return kind


def _extras(value: Any, path: str) -> list[str]:
    if isinstance(value, BaseModel):
        # ``_meta`` is never a typo: opaque metadata by convention, on any object (receivers ignore it)
        out = [f"{path}{key}" for key in value.model_extra or {} if key != "_meta"]
        for name, info in type(value).model_fields.items():
            out += _extras(getattr(value, name), f"{path}{info.alias or name}.")
        return out
    if isinstance(value, (list, tuple)):
        return [f for i, item in enumerate(value) for f in _extras(item, f"{path.rstrip('.')}[{i}].")]
    return []


def message_text(text: Any, method: str) -> str:
    """The prompt of ``lab.send``/``start``/``run``; ``TypeError`` unless it is a string."""
    if not isinstance(text, str):
        raise TypeError(
            f"{method} takes the message text as a string, such as lab.{method}('run the tests'), "
            f"not {_shown(text)}"
        )
    return text


def tool_function(fn: Any, decorator: str) -> None:
    """Reject ``@lab.tool`` / ``@lab.server_tool`` applied to something that is not a function."""
    if not callable(fn):
        raise TypeError(
            f"{decorator} registers a function: put @{decorator} above a def, or pass options by "
            f"name (@{decorator}(name='...')); got {_shown(fn)}"
        )
