"""Chat channel reducer (``ahp-chat:/<uuid>``).

Turns and streaming, pending (steering/queued) messages, drafts, working directories, input
requests, and the tool-call state machine with its field-carry rules T2–T13 (chat-channel §6–§7).
Streamed text (``chat/delta``, ``chat/reasoning``, ``chat/toolCallDelta``) is appended through
:class:`ahp_lab.protocol.text.Text`, so a long stream costs O(1) amortized per delta.
"""

from __future__ import annotations

from typing import Any

from ..protocol.text import append_text
from ._util import (
    as_int,
    as_list,
    directory_removed,
    directory_set,
    find_index,
    iso_ms,
    keyed,
    make_reducer,
    merge,
    pick,
    put,
    put_many,
    replace_at,
    upsert,
)

IDLE, ERROR, IN_PROGRESS, INPUT_NEEDED, IS_READ = 1, 2, 8, 24, 32
ACTIVITY_MASK = 0x1F

STREAMING = "streaming"
PENDING_CONFIRMATION = "pending-confirmation"
RUNNING = "running"
AUTH_REQUIRED = "auth-required"
PENDING_RESULT_CONFIRMATION = "pending-result-confirmation"
COMPLETED = "completed"
CANCELLED = "cancelled"

TOOL_CALL_STATES = (
    STREAMING,
    PENDING_CONFIRMATION,
    RUNNING,
    AUTH_REQUIRED,
    PENDING_RESULT_CONFIRMATION,
    COMPLETED,
    CANCELLED,
)
BLOCKING_TOOL_CALL_STATES = frozenset({PENDING_CONFIRMATION, PENDING_RESULT_CONFIRMATION, AUTH_REQUIRED})
BASE_KEYS = ("toolCallId", "toolName", "displayName", "intention", "contributor", "_meta")
RESULT_KEYS = ("success", "pastTenseMessage", "content", "structuredContent", "error")
CONFIRMATION_KEYS = ("confirmationTitle", "riskAssessment", "edits", "editable", "options")


# -- status ------------------------------------------------------------------------------------


def blocks_user(part: Any) -> bool:
    """Whether a response part of the active turn makes the chat ``InputNeeded``."""
    if not isinstance(part, dict):
        return False
    kind = part.get("kind")
    if kind == "inputRequest":
        return part.get("response") is None
    if kind == "toolCall":
        tc = part.get("toolCall")
        return isinstance(tc, dict) and tc.get("status") in BLOCKING_TOOL_CALL_STATES
    return False


def derive_status(state: dict, terminal: int | None = None) -> int:
    """``ChatState.status`` derived from the state after a change (reducer-rules §6.2)."""
    active = state.get("activeTurn")
    if terminal == ERROR:
        activity = ERROR
    elif isinstance(active, dict) and any(blocks_user(p) for p in as_list(active.get("responseParts"))):
        activity = INPUT_NEEDED
    elif isinstance(active, dict):
        activity = IN_PROGRESS
    else:
        activity = IDLE
    return (as_int(state.get("status")) & ~ACTIVITY_MASK) | activity


def _with_status(state: dict, status: int) -> dict:
    return state if state.get("status") == status else put(state, "status", status)


def _active(state: dict, action: dict) -> dict | None:
    """The active turn if ``action.turnId`` names it, else ``None`` (wrong turn ⇒ no-op)."""
    active = state.get("activeTurn")
    if isinstance(active, dict) and active.get("id") == action.get("turnId"):
        return active
    return None


def _with_parts(state: dict, active: dict, parts: list) -> dict:
    return put(state, "activeTurn", put(active, "responseParts", parts))


# -- turn lifecycle and streaming ----------------------------------------------------------------


def _turn_started(state, action, now_ms):
    turn = {
        "id": action.get("turnId"),
        "startedAt": action.get("startedAt"),
        "message": action.get("message"),
    }
    turn = {k: v for k, v in turn.items() if v is not None}
    turn["responseParts"] = []
    out = put_many(state, activeTurn=turn, modifiedAt=iso_ms(now_ms))
    out["status"] = derive_status(out) & ~IS_READ
    queued_id = action.get("queuedMessageId")
    if queued_id is not None:
        steering = out.get("steeringMessage")
        if isinstance(steering, dict) and steering.get("id") == queued_id:
            out.pop("steeringMessage")
        queued = out.get("queuedMessages")
        if isinstance(queued, list):
            kept = [m for m in queued if not (isinstance(m, dict) and m.get("id") == queued_id)]
            if len(kept) != len(queued):
                out = put(out, "queuedMessages", kept or None)
    return out


def _response_part(state, action, now_ms):
    active = _active(state, action)
    part = action.get("part")
    if active is None or part is None:
        return state
    return _with_parts(state, active, [*as_list(active.get("responseParts")), part])


def part_identifier(part: Any) -> Any:
    """The identifier ``chat/delta`` and ``chat/reasoning`` match against (chat-channel §6.3)."""
    if not isinstance(part, dict):
        return None
    if part.get("kind") == "toolCall":
        tc = part.get("toolCall")
        return tc.get("toolCallId") if isinstance(tc, dict) else None
    if part.get("kind") in ("contentRef", "systemNotification", "inputRequest"):
        return None
    return part.get("id")


def _append_to_part(kind: str):
    def handler(state, action, now_ms):
        active = _active(state, action)
        content = action.get("content")
        if active is None or not isinstance(content, str):
            return state
        parts = as_list(active.get("responseParts"))
        part_id = action.get("partId")
        for i, part in enumerate(parts):
            if part_identifier(part) == part_id and part_id is not None:
                if part.get("kind") != kind:
                    return state
                new_part = put(part, "content", append_text(part.get("content", ""), content))
                return _with_parts(state, active, replace_at(parts, i, new_part))
        return state

    return handler


def _usage(state, action, now_ms):
    active = _active(state, action)
    if active is None:
        return state
    return put(state, "activeTurn", put(active, "usage", action.get("usage")))


def cancelled_by_turn_end(tc: dict) -> dict:
    """T13: an unfinished tool call force-cancelled because its turn ended."""
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


def _finish_part(part: Any) -> Any:
    if isinstance(part, dict) and part.get("kind") == "toolCall":
        tc = part.get("toolCall")
        if isinstance(tc, dict) and tc.get("status") not in (COMPLETED, CANCELLED):
            return put(part, "toolCall", cancelled_by_turn_end(tc))
    return part


def _end_turn(turn_state: str):
    terminal = ERROR if turn_state == "error" else None

    def handler(state, action, now_ms):
        active = _active(state, action)
        if active is None:
            return state
        parts = as_list(active.get("responseParts"))
        turn: dict[str, Any] = {"id": active.get("id")}
        if active.get("startedAt") is not None:
            turn["startedAt"] = active["startedAt"]
        duration = action.get("duration")
        if isinstance(duration, (int, float)) and not isinstance(duration, bool) and duration == duration:
            turn["duration"] = max(0, duration)
        if active.get("message") is not None:
            turn["message"] = active["message"]
        turn["responseParts"] = [_finish_part(p) for p in parts]
        if active.get("usage") is not None:
            turn["usage"] = active["usage"]
        turn["state"] = turn_state
        if terminal == ERROR and action.get("error") is not None:
            turn["error"] = action["error"]
        out = dict(state)
        out["turns"] = [*as_list(state.get("turns")), turn]
        out.pop("activeTurn", None)
        out["modifiedAt"] = iso_ms(now_ms)
        out["status"] = derive_status(out, terminal)
        return out

    return handler


# -- history, pending messages, drafts, directories -----------------------------------------------


def _truncated(state, action, now_ms):
    turns = as_list(state.get("turns"))
    turn_id = action.get("turnId")
    if turn_id is not None:
        i = find_index(turns, keyed("id", turn_id))
        if i < 0:
            return state
        out = put(state, "turns", turns[: i + 1])
    else:
        out = put_many(state, turns=[], turnsNextCursor=None)
    out.pop("activeTurn", None)
    out["modifiedAt"] = iso_ms(now_ms)
    out["status"] = derive_status(out)
    return out


def _turns_loaded(state, action, now_ms):
    existing = {t.get("id") for t in as_list(state.get("turns")) if isinstance(t, dict)}
    loaded = [
        t for t in as_list(action.get("turns")) if not (isinstance(t, dict) and t.get("id") in existing)
    ]
    return put_many(
        state,
        turns=[*loaded, *as_list(state.get("turns"))],
        turnsNextCursor=action.get("turnsNextCursor"),
    )


def _pending_message_set(state, action, now_ms):
    entry = {"id": action.get("id"), "message": action.get("message")}
    entry = {k: v for k, v in entry.items() if v is not None}
    kind = action.get("kind")
    if kind == "steering":
        return put(state, "steeringMessage", entry)
    if kind == "queued":
        return put(state, "queuedMessages", upsert(as_list(state.get("queuedMessages")), "id", entry))
    return state


def _pending_message_removed(state, action, now_ms):
    kind, mid = action.get("kind"), action.get("id")
    if kind == "steering":
        steering = state.get("steeringMessage")
        if not isinstance(steering, dict) or steering.get("id") != mid:
            return state
        return put(state, "steeringMessage", None)
    if kind == "queued":
        queued = state.get("queuedMessages")
        if not isinstance(queued, list):
            return state
        kept = [m for m in queued if not (isinstance(m, dict) and m.get("id") == mid)]
        if len(kept) == len(queued):
            return state
        return put(state, "queuedMessages", kept or None)
    return state


def _queued_reordered(state, action, now_ms):
    queued = state.get("queuedMessages")
    if not isinstance(queued, list):
        return state
    placed: set[int] = set()
    ordered = []
    for mid in as_list(action.get("order")):
        for i, m in enumerate(queued):
            if i not in placed and isinstance(m, dict) and m.get("id") == mid:
                placed.add(i)
                ordered.append(m)
                break
    ordered.extend(m for i, m in enumerate(queued) if i not in placed)
    if all(a is b for a, b in zip(ordered, queued, strict=True)):
        return state
    return put(state, "queuedMessages", ordered)


# -- input requests ----------------------------------------------------------------------------


def _open_request_index(parts: list, request_id: Any) -> int:
    for i, part in enumerate(parts):
        if (
            isinstance(part, dict)
            and part.get("kind") == "inputRequest"
            and part.get("response") is None
            and isinstance(part.get("request"), dict)
            and part["request"].get("id") == request_id
        ):
            return i
    return -1


def _input_requested(state, action, now_ms):
    active = state.get("activeTurn")
    request = action.get("request")
    if not isinstance(active, dict) or not isinstance(request, dict):
        return state
    parts = as_list(active.get("responseParts"))
    i = _open_request_index(parts, request.get("id"))
    if i >= 0:
        answers = request.get("answers")
        if answers is None:
            answers = parts[i]["request"].get("answers")
        parts = replace_at(parts, i, {"kind": "inputRequest", "request": put(request, "answers", answers)})
    else:
        parts = [*parts, {"kind": "inputRequest", "request": request}]
    out = _with_parts(state, active, parts)
    out["modifiedAt"] = iso_ms(now_ms)
    out["status"] = derive_status(out) & ~IS_READ
    return out


def _input_answer_changed(state, action, now_ms):
    active = state.get("activeTurn")
    if not isinstance(active, dict):
        return state
    parts = as_list(active.get("responseParts"))
    i = _open_request_index(parts, action.get("requestId"))
    if i < 0:
        return state
    request = parts[i]["request"]
    answers = dict(request.get("answers") or {})
    answer = action.get("answer")
    if answer is None:
        answers.pop(action.get("questionId"), None)
    else:
        answers[action.get("questionId")] = answer
    part = put(parts[i], "request", put(request, "answers", answers or None))
    out = _with_parts(state, active, replace_at(parts, i, part))
    out["modifiedAt"] = iso_ms(now_ms)
    return out


def _input_completed(state, action, now_ms):
    active = state.get("activeTurn")
    if not isinstance(active, dict):
        return state
    parts = as_list(active.get("responseParts"))
    i = _open_request_index(parts, action.get("requestId"))
    if i < 0:
        return state
    request = parts[i]["request"]
    old = request.get("answers") or {}
    given = action.get("answers") or {}
    final = merge(old, given)
    # The reference counts keys carried with null when testing emptiness (chat-channel §5).
    keep = bool(final) or bool(set(old) | set(given))
    part = put_many(
        parts[i], request=put(request, "answers", final if keep else None), response=action.get("response")
    )
    out = _with_parts(state, active, replace_at(parts, i, part))
    out["modifiedAt"] = iso_ms(now_ms)
    out["status"] = derive_status(out)
    return out


# -- tool calls --------------------------------------------------------------------------------


def _base(tc: dict, action: dict) -> dict:
    """B: the base fields of the current call, with ``_meta`` overridden by the action's."""
    out = pick(tc, BASE_KEYS)
    if action.get("_meta") is not None:
        out["_meta"] = action["_meta"]
    return out


def _copy(out: dict, source: dict, keys: tuple[str, ...]) -> dict:
    for key in keys:
        if source.get(key) is not None:
            out[key] = source[key]
    return out


def refine_contributor(current: Any, nxt: Any) -> Any:
    """Contributor on ``toolCallReady``: execution ownership never moves (chat-channel §6.4)."""
    if not isinstance(nxt, dict):
        return current
    cur_kind = current.get("kind") if isinstance(current, dict) else None
    if cur_kind == "client":
        if nxt.get("kind") == "client" and nxt.get("clientId") == current.get("clientId"):
            return nxt
        return current
    if nxt.get("kind") == "mcp":
        return nxt
    return current


def _resolve_option(options: Any, option_id: Any) -> Any:
    if not isinstance(options, list) or option_id is None:
        return None
    for option in options:
        if isinstance(option, dict) and option.get("id") == option_id:
            return option
    return None


def _t_delta(tc: dict, action: dict) -> dict | None:  # T2
    if tc.get("status") != STREAMING:
        return None
    out = dict(tc)
    if action.get("_meta") is not None:
        out["_meta"] = action["_meta"]
    content = action.get("content")
    if isinstance(content, str):
        out["partialInput"] = append_text(tc.get("partialInput") or "", content)
    if action.get("invocationMessage") is not None:
        out["invocationMessage"] = action["invocationMessage"]
    return out


def _t_ready(tc: dict, action: dict) -> dict | None:  # T3 / T4
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
    if confirmed is not None:
        out["status"] = RUNNING
        out["confirmed"] = confirmed
        return out
    out["status"] = PENDING_CONFIRMATION
    previous = tc if source == PENDING_CONFIRMATION else {}
    for key in CONFIRMATION_KEYS:
        value = action.get(key)
        if value is None:
            value = previous.get(key)
        if value is not None:
            out[key] = value
    return out


def _t_confirmed(tc: dict, action: dict) -> dict | None:  # T5 / T6
    if tc.get("status") != PENDING_CONFIRMATION:
        return None
    out = _base(tc, action)
    _copy(out, tc, ("invocationMessage",))
    if action.get("approved"):
        out["status"] = RUNNING
        tool_input = tc.get("toolInput")
        edited = action.get("editedToolInput")
        if edited is not None and isinstance(tool_input, str):
            tool_input = edited
        if tool_input is not None:
            out["toolInput"] = tool_input
        if action.get("confirmed") is not None:
            out["confirmed"] = action["confirmed"]
    else:
        out["status"] = CANCELLED
        _copy(out, tc, ("toolInput",))
        _copy(out, action, ("reason", "reasonMessage", "userSuggestion"))
    option = _resolve_option(tc.get("options"), action.get("selectedOptionId"))
    if option is not None:
        out["selectedOption"] = option
    return out


def _t_complete(tc: dict, action: dict) -> dict | None:  # T7
    source = tc.get("status")
    result = action.get("result")
    result = result if isinstance(result, dict) else {}
    if source == AUTH_REQUIRED:
        if result.get("success"):
            return None
    elif source not in (RUNNING, PENDING_CONFIRMATION):
        return None
    out = _base(tc, action)
    needs_confirmation = bool(action.get("requiresResultConfirmation")) and source != AUTH_REQUIRED
    out["status"] = PENDING_RESULT_CONFIRMATION if needs_confirmation else COMPLETED
    _copy(out, tc, ("invocationMessage", "toolInput"))
    if source in (RUNNING, AUTH_REQUIRED):
        _copy(out, tc, ("confirmed", "selectedOption"))
    else:
        out["confirmed"] = "not-needed"
    if source == AUTH_REQUIRED:
        _copy(out, tc, ("content",))
    return merge(out, result)


def _t_result_confirmed(tc: dict, action: dict) -> dict | None:  # T8 / T9
    if tc.get("status") != PENDING_RESULT_CONFIRMATION:
        return None
    out = _base(tc, action)
    if action.get("approved"):
        out["status"] = COMPLETED
        return _copy(out, tc, ("invocationMessage", "toolInput", "confirmed", "selectedOption", *RESULT_KEYS))
    out["status"] = CANCELLED
    _copy(out, tc, ("invocationMessage", "toolInput"))
    out["reason"] = "result-denied"
    return _copy(out, tc, ("selectedOption",))


def _t_content_changed(tc: dict, action: dict) -> dict | None:  # T10
    if tc.get("status") != RUNNING:
        return None
    out = put(tc, "content", action.get("content"))
    if action.get("_meta") is not None:
        out["_meta"] = action["_meta"]
    return out


def _t_auth_required(tc: dict, action: dict) -> dict | None:  # T11
    contributor = tc.get("contributor")
    if tc.get("status") != RUNNING or not (
        isinstance(contributor, dict) and contributor.get("kind") == "mcp"
    ):
        return None
    out = _base(tc, action)
    out["status"] = AUTH_REQUIRED
    _copy(out, tc, ("invocationMessage", "toolInput", "confirmed", "selectedOption", "content"))
    if action.get("auth") is not None:
        out["auth"] = action["auth"]
    return out


def _t_auth_resolved(tc: dict, action: dict) -> dict | None:  # T12
    if tc.get("status") != AUTH_REQUIRED:
        return None
    out = _base(tc, action)
    out["status"] = RUNNING
    return _copy(out, tc, ("invocationMessage", "toolInput", "confirmed", "selectedOption", "content"))


def _tool_call_action(transform, rederive: bool):
    """Apply ``transform`` to every tool call of the active turn with the action's ``toolCallId``."""

    def handler(state, action, now_ms):
        active = _active(state, action)
        out = state
        if active is not None:
            parts = as_list(active.get("responseParts"))
            call_id = action.get("toolCallId")
            new_parts = None
            for i, part in enumerate(parts):
                if not (isinstance(part, dict) and part.get("kind") == "toolCall"):
                    continue
                tc = part.get("toolCall")
                if not isinstance(tc, dict) or tc.get("toolCallId") != call_id:
                    continue
                new_tc = transform(tc, action)
                if new_tc is not None:
                    if new_parts is None:
                        new_parts = list(parts)
                    new_parts[i] = put(part, "toolCall", new_tc)
            if new_parts is not None:
                out = _with_parts(state, active, new_parts)
        # Status is re-derived even when the tool-call update was a no-op (reducer-rules §4).
        return _with_status(out, derive_status(out)) if rederive else out

    return handler


def _tool_call_start(state, action, now_ms):
    active = _active(state, action)
    if active is None:
        return state
    tc = {"status": STREAMING, **pick(action, ("toolCallId", "toolName", "displayName"))}
    _copy(tc, action, ("intention", "contributor", "_meta"))
    return _with_parts(
        state, active, [*as_list(active.get("responseParts")), {"kind": "toolCall", "toolCall": tc}]
    )


reduce_chat = make_reducer(
    "chat",
    {
        "chat/turnStarted": _turn_started,
        "chat/responsePart": _response_part,
        "chat/delta": _append_to_part("markdown"),
        "chat/reasoning": _append_to_part("reasoning"),
        "chat/usage": _usage,
        "chat/turnComplete": _end_turn("complete"),
        "chat/turnCancelled": _end_turn("cancelled"),
        "chat/error": _end_turn("error"),
        "chat/activityChanged": lambda s, a, n: put(s, "activity", a.get("activity")),
        "chat/truncated": _truncated,
        "chat/turnsLoaded": _turns_loaded,
        "chat/pendingMessageSet": _pending_message_set,
        "chat/pendingMessageRemoved": _pending_message_removed,
        "chat/queuedMessagesReordered": _queued_reordered,
        "chat/draftChanged": lambda s, a, n: put(s, "draft", a.get("draft")),
        "chat/workingDirectorySet": directory_set,
        "chat/workingDirectoryRemoved": directory_removed,
        "chat/inputRequested": _input_requested,
        "chat/inputAnswerChanged": _input_answer_changed,
        "chat/inputCompleted": _input_completed,
        "chat/toolCallStart": _tool_call_start,
        "chat/toolCallDelta": _tool_call_action(_t_delta, rederive=False),
        "chat/toolCallReady": _tool_call_action(_t_ready, rederive=True),
        "chat/toolCallConfirmed": _tool_call_action(_t_confirmed, rederive=True),
        "chat/toolCallComplete": _tool_call_action(_t_complete, rederive=True),
        "chat/toolCallResultConfirmed": _tool_call_action(_t_result_confirmed, rederive=True),
        "chat/toolCallContentChanged": _tool_call_action(_t_content_changed, rederive=False),
        "chat/toolCallAuthRequired": _tool_call_action(_t_auth_required, rederive=True),
        "chat/toolCallAuthResolved": _tool_call_action(_t_auth_resolved, rederive=True),
    },
)
