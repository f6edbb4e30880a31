"""The tool-call state machine: one call's next value for each tool-call action (chat-channel §6.4).

Each transform takes the current call and the action and returns the new call, or ``None`` when
the action does not apply in the call's status. The field-carry rules are the spec's T2–T13: which
fields a transition keeps (``B``, the base fields, always), which it takes from the action and which
it drops. :mod:`ahp_lab.reducers.chat` finds the calls in the active turn and applies these.
"""

from __future__ import annotations

from typing import Any

from ..protocol.names import (
    AUTH_REQUIRED,
    CANCELLED,
    COMPLETED,
    PENDING_CONFIRMATION,
    PENDING_RESULT_CONFIRMATION,
    RUNNING,
    STREAMING,
)
from ..protocol.text import TAIL_MAX, Text
from ._js import plus, same, spread, truthy
from ._util import array_of, member, merge, pick, put

BASE_KEYS = ("toolCallId", "toolName", "displayName", "intention", "contributor", "_meta")
RESULT_KEYS = ("success", "pastTenseMessage", "content", "structuredContent", "error")
CONFIRMATION_KEYS = ("confirmationTitle", "riskAssessment", "edits", "editable", "options")


def _base(tc: dict, action: dict) -> dict:
    """B: the base fields of the current call, with ``_meta`` overridden by the action's."""
    out = pick(tc, BASE_KEYS)
    if action.get("_meta") is not None:
        out["_meta"] = action["_meta"]
    return out


def copy_present(out: dict, source: dict, keys: tuple[str, ...]) -> dict:
    """Copy the ``keys`` that ``source`` has (not null) into ``out``."""
    for k in keys:
        if source.get(k) is not None:
            out[k] = source[k]
    return out


def _copy_truthy(out: dict, source: dict, keys: tuple[str, ...]) -> dict:
    """``...(x ? {k: x} : {})`` in the reference: copy only values JavaScript finds truthy."""
    for k in keys:
        if truthy(source.get(k)):
            out[k] = source[k]
    return out


def refine_contributor(current: Any, nxt: Any) -> Any:
    """Contributor on ``toolCallReady``: execution ownership never moves (chat-channel §6.4).

    A client's call keeps its contributor unless the same client is named again; a call without a
    client contributor takes any new contributor that is not a client (an unknown kind included).
    """
    if not truthy(nxt):
        return current
    next_kind = nxt.get("kind") if type(nxt) is dict else None
    if (current.get("kind") if type(current) is dict else None) == "client":
        if next_kind == "client" and same(nxt.get("clientId"), current.get("clientId")):
            return nxt
        return current
    return current if next_kind == "client" else nxt


def _resolve_option(options: Any, option_id: Any) -> Any:
    """``options.find(o => o.id === id)`` after ``if (!id || !options)``: it throws (``TypeError``)
    on options that are not an array and on a null option it reaches."""
    if not truthy(option_id) or not truthy(options):
        return None
    for option in array_of(options):
        if same(member(option, "id"), option_id):
            return option
    return None


def delta(tc: dict, action: dict) -> dict | None:  # T2
    if tc.get("status") != STREAMING:
        return None
    out = tc.copy()
    if action.get("_meta") is not None:
        out["_meta"] = action["_meta"]
    content = action.get("content")
    if content is not None:
        partial = tc.get("partialInput")
        if partial is None:
            partial = ""
        if (
            type(content) is str
            and type(partial) is str
            and len(partial) + len(content) <= TAIL_MAX
            and not "\udc00" <= content < "\ue000"  # a character's second half joins its first in plus
        ):
            out["partialInput"] = partial + content  # plus, for two short strings
        else:
            out["partialInput"] = plus(partial, content)
    if action.get("invocationMessage") is not None:
        out["invocationMessage"] = action["invocationMessage"]
    return out


def ready(tc: dict, action: dict) -> dict | None:  # T3 / T4
    source = tc.get("status")
    if source not in (STREAMING, PENDING_CONFIRMATION, RUNNING):
        return None
    out = _base(tc, action)
    out.pop("contributor", None)
    contributor = refine_contributor(tc.get("contributor"), action.get("contributor"))
    if contributor is not None:
        out["contributor"] = contributor
    if action.get("intention") is not None:
        out["intention"] = action["intention"]
    if action.get("invocationMessage") is not None:
        out["invocationMessage"] = action["invocationMessage"]
    tool_input = action.get("toolInput")
    if tool_input is None and source != STREAMING:
        tool_input = tc.get("toolInput")
    if tool_input is not None:
        out["toolInput"] = tool_input
    confirmed = action.get("confirmed")
    if truthy(confirmed):  # the reference tests truthiness: "" behaves as absent (reducer-rules §3.2)
        out["status"] = RUNNING
        out["confirmed"] = confirmed
        return out
    out["status"] = PENDING_CONFIRMATION
    previous = tc if source == PENDING_CONFIRMATION else {}
    for k in CONFIRMATION_KEYS:
        value = action.get(k)
        if value is None:
            value = previous.get(k)
        if value is not None and (k != "options" or truthy(value)):
            out[k] = value
    return out


def confirmed(tc: dict, action: dict) -> dict | None:  # T5 / T6
    if tc.get("status") != PENDING_CONFIRMATION:
        return None
    out = _base(tc, action)
    copy_present(out, tc, ("invocationMessage",))
    if truthy(action.get("approved")):
        out["status"] = RUNNING
        tool_input = tc.get("toolInput")
        edited = action.get("editedToolInput")
        if edited is not None and isinstance(tool_input, (str, Text)):
            tool_input = edited
        if tool_input is not None:
            out["toolInput"] = tool_input
        if action.get("confirmed") is not None:
            out["confirmed"] = action["confirmed"]
    else:
        out["status"] = CANCELLED
        copy_present(out, tc, ("toolInput",))
        copy_present(out, action, ("reason", "reasonMessage", "userSuggestion"))
    option = _resolve_option(tc.get("options"), action.get("selectedOptionId"))
    if truthy(option):
        out["selectedOption"] = option
    return out


def complete(tc: dict, action: dict) -> dict | None:  # T7
    source = tc.get("status")
    result = action.get("result")
    if source == AUTH_REQUIRED:
        if truthy(member(result, "success")):  # reading it from a missing result throws
            return None
    elif source not in (RUNNING, PENDING_CONFIRMATION):
        return None
    out = _base(tc, action)
    needs_confirmation = truthy(action.get("requiresResultConfirmation")) and source != AUTH_REQUIRED
    out["status"] = PENDING_RESULT_CONFIRMATION if needs_confirmation else COMPLETED
    copy_present(out, tc, ("invocationMessage", "toolInput"))
    if source in (RUNNING, AUTH_REQUIRED):
        copy_present(out, tc, ("confirmed",))
        _copy_truthy(out, tc, ("selectedOption",))
    else:
        out["confirmed"] = "not-needed"
    if source == AUTH_REQUIRED:
        _copy_truthy(out, tc, ("content",))
    return merge(out, spread(result))


def result_confirmed(tc: dict, action: dict) -> dict | None:  # T8 / T9
    if tc.get("status") != PENDING_RESULT_CONFIRMATION:
        return None
    out = _base(tc, action)
    if truthy(action.get("approved")):
        out["status"] = COMPLETED
        copy_present(out, tc, ("invocationMessage", "toolInput", "confirmed"))
        _copy_truthy(out, tc, ("selectedOption",))
        return copy_present(out, tc, RESULT_KEYS)
    out["status"] = CANCELLED
    copy_present(out, tc, ("invocationMessage", "toolInput"))
    out["reason"] = "result-denied"
    return _copy_truthy(out, tc, ("selectedOption",))


def content_changed(tc: dict, action: dict) -> dict | None:  # T10
    if tc.get("status") != RUNNING:
        return None
    out = put(tc, "content", action.get("content"))
    if action.get("_meta") is not None:
        out["_meta"] = action["_meta"]
    return out


def auth_required(tc: dict, action: dict) -> dict | None:  # T11
    contributor = tc.get("contributor")
    if tc.get("status") != RUNNING or not (
        isinstance(contributor, dict) and contributor.get("kind") == "mcp"
    ):
        return None
    out = _base(tc, action)
    out["status"] = AUTH_REQUIRED
    copy_present(out, tc, ("invocationMessage", "toolInput", "confirmed"))
    _copy_truthy(out, tc, ("selectedOption", "content"))
    if action.get("auth") is not None:
        out["auth"] = action["auth"]
    return out


def auth_resolved(tc: dict, action: dict) -> dict | None:  # T12
    if tc.get("status") != AUTH_REQUIRED:
        return None
    out = _base(tc, action)
    out["status"] = RUNNING
    copy_present(out, tc, ("invocationMessage", "toolInput", "confirmed"))
    return _copy_truthy(out, tc, ("selectedOption", "content"))


def cancelled_by_turn_end(tc: Any) -> dict:
    """T13: an unfinished tool call force-cancelled because its turn ended (a call that is not an
    object has no members: it becomes a bare cancelled call)."""
    if type(tc) is not dict:
        tc = {}
    streaming = tc.get("status") == STREAMING
    out = pick(tc, BASE_KEYS)
    out["status"] = CANCELLED
    message = tc.get("invocationMessage")
    if streaming:
        out["invocationMessage"] = "" if message is None else message
    else:
        if message is not None:
            out["invocationMessage"] = message
        if tc.get("toolInput") is not None:
            out["toolInput"] = tc["toolInput"]
    out["reason"] = "skipped"
    return out
