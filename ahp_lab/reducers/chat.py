"""Chat channel reducer (``ahp-chat:/<uuid>``).

Turns and streaming, pending (steering/queued) messages, drafts, working directories, input
requests, and the tool calls of the active turn (chat-channel §6–§7), whose state machine, with its
field-carry rules T2–T13, is :mod:`ahp_lab.reducers.tool_call`.

Per-action cost does not grow with the chat: streamed text (``chat/delta``, ``chat/reasoning``,
``chat/toolCallDelta``) is appended through :class:`~ahp_lab.protocol.text.Text`; ``turns`` and
the active turn's ``responseParts`` are :class:`~ahp_lab.protocol.vector.Vector` values, so a
turn is appended and a part replaced without copying the others, parts are found by identifier
through an index, and the number of user-blocking parts (which decides ``status``) is counted
incrementally. Off-type values behave as they do in the JavaScript reference (see ``_js``).
"""

from __future__ import annotations

from typing import Any

from ..protocol.clock import iso_ms
from ..protocol.names import (
    BLOCKING_TOOL_CALL_STATES,
    CANCELLED,
    COMPLETED,
    STREAMING,
)
from ..protocol.text import TAIL_MAX, Text, append_text
from ..protocol.vector import (
    NO_KEY,
    PLAIN_MAX,
    STOP,
    Vector,
    appended,
    candidates,
    find,
    replaced,
    sequence,
)
from . import tool_call
from ._js import array_from, clamp_non_negative, json_plus, key, same, spread, to_string, truthy
from ._util import (
    array_of,
    as_int,
    directory_removed,
    directory_set,
    key_of,
    make_reducer,
    member,
    merge,
    pick,
    put,
    put_many,
    upsert,
)

IDLE, ERROR, IN_PROGRESS, INPUT_NEEDED, IS_READ = 1, 2, 8, 24, 32
ACTIVITY_MASK = 0x1F

_FINISHED = (COMPLETED, CANCELLED)

# -- status ------------------------------------------------------------------------------------

_new = object.__new__


def blocks_user(part: Any) -> bool:
    """Whether a response part of the active turn makes the chat ``InputNeeded``."""
    if type(part) is not dict:
        return False
    kind = part.get("kind")
    if kind == "toolCall":
        tc = part.get("toolCall")
        return type(tc) is dict and tc.get("status") in BLOCKING_TOOL_CALL_STATES
    if kind == "inputRequest":
        return part.get("response") is None
    return False


def _blocking(parts: list | Vector, stops: list[int] | None = None) -> bool:
    """An open input request, else a blocking tool call, among the parts: the reference's two
    ``some`` scans, which throw (``TypeError``) on a null part they reach, and the second on a
    tool-call part without its call. ``stops``: the parts' ``STOP`` candidates, when the caller
    has them already."""
    if type(parts) is Vector and not (parts.candidates(_part_key, STOP) if stops is None else stops):
        return parts.count_where(blocks_user) > 0  # no part a scan could stop at: the count is exact
    for part in parts:
        if type(part) is dict:
            if part.get("kind") == "inputRequest" and part.get("response") is None:
                return True
        elif part is None:
            raise TypeError("cannot read 'kind' of null")
    for part in parts:
        if type(part) is dict and part.get("kind") == "toolCall":
            tc = part.get("toolCall")
            if tc is None:
                raise TypeError("cannot read 'status' of undefined")
            if type(tc) is dict and tc.get("status") in BLOCKING_TOOL_CALL_STATES:
                return True
    return False


def derive_status(state: dict, terminal: int | None = None, stops: list[int] | None = None) -> int:
    """``ChatState.status`` derived from the state after a change (reducer-rules §6.2).

    An active turn whose parts are not an array fails it (``TypeError``), as the reference's
    ``activeTurn?.responseParts.some(...)`` throws. ``stops``: see :func:`_blocking`.
    """
    active = state.get("activeTurn")
    if terminal == ERROR:
        activity = ERROR
    elif active is None:
        activity = IDLE
    else:
        parts = member(active, "responseParts")
        if type(parts) is not list and type(parts) is not Vector:
            raise TypeError("activeTurn.responseParts has no some()")
        activity = INPUT_NEEDED if _blocking(parts, stops) else IN_PROGRESS
    return (as_int(state.get("status")) & ~ACTIVITY_MASK) | activity


def _with_status(state: dict, status: int) -> dict:
    current = state.get("status")  # ===: a stored true is not 1
    return state if current == status and type(current) is not bool else put(state, "status", status)


def _active(state: dict, action: dict) -> dict | None:
    """The active turn if ``action.turnId`` names it, else ``None`` (wrong turn ⇒ no-op)."""
    active = state.get("activeTurn")
    if type(active) is dict:
        return active if same(active.get("id"), action.get("turnId")) else None
    _not_a_turn(active, action)
    return None


def _not_a_turn(active: Any, action: dict) -> None:
    """``TypeError`` for an active turn that is truthy but not an object, when the action's
    ``turnId`` matches its (undefined) id: the reference then reads its ``responseParts``, which
    it has none of, and throws."""
    if truthy(active) and same(member(active, "id"), action.get("turnId")):
        raise TypeError("the active turn is not an object: it has no responseParts")


def _turn_and_parts(state: dict) -> tuple[dict, list | Vector] | None:
    """The active turn and its parts for the input-request actions, which do not check a turn id:
    ``None`` without an active turn, ``TypeError`` when the turn or its parts are not what the
    reference's ``activeTurn.responseParts.findIndex`` can read."""
    active = state.get("activeTurn")
    if not truthy(active):
        return None
    parts = _parts(active) if type(active) is dict else None
    if parts is None:
        raise TypeError("activeTurn.responseParts.findIndex is not a function")
    return active, parts


def _seq(value: Any) -> list | Vector | None:
    """``value`` when it is a JSON array (a list or a :class:`Vector`), else ``None``."""
    return value if type(value) is list or type(value) is Vector else None


def _parts(active: dict) -> list | Vector | None:
    """The active turn's parts (``None`` when they are not an array)."""
    return _seq(active.get("responseParts"))


def _with_parts(state: dict, active: dict, parts: list | Vector) -> dict:
    out = state.copy()
    turn = active.copy()
    turn["responseParts"] = parts
    out["activeTurn"] = turn
    return out


def part_identifier(part: Any) -> Any:
    """The identifier ``chat/delta``, ``chat/reasoning`` and tool-call actions match (chat-channel §6.3).

    A tool-call part's ``toolCall.toolCallId``, else the part's ``id`` (absent for contentRef,
    systemNotification and inputRequest parts, which only an action without ``partId`` meets).
    """
    if type(part) is not dict:
        return None
    if part.get("kind") == "toolCall":
        tc = part.get("toolCall")
        return tc.get("toolCallId") if type(tc) is dict else None
    return part.get("id")


def _part_key(part: Any) -> Any:
    """The identifier parts are searched by, as the reference reads it: a tool call's
    ``toolCallId``, else ``'id' in part ? part.id : undefined``. ``STOP`` where that read throws: a
    null, string, number or boolean part, or a tool-call part without its call."""
    if type(part) is dict:
        if part.get("kind") == "toolCall":
            tc = part.get("toolCall")
            if type(tc) is not dict:
                return STOP if tc is None else None  # a call that is not an object has no id
            ident = tc.get("toolCallId")
        else:
            ident = part.get("id")
        return ident if type(ident) is str else key(ident)
    return None if isinstance(part, list) else STOP


def _same_id(new_tc: dict, wanted: Any) -> bool:
    """Whether an updated call is found by the id it was found by (``wanted``, a key): a
    completion writes every key of its ``result`` over the call (T7), its ``toolCallId`` too."""
    new = new_tc.get("toolCallId")
    return (new if type(new) is str else key(new)) == wanted


def touched_tool_call(action: dict) -> str | None:
    """The id of the one tool call a ``chat/toolCall*`` action changes (``None`` for other actions,
    and for an id that is not a string): what follows that call need not read the whole turn."""
    if not str(action.get("type")).startswith("chat/toolCall"):
        return None
    call = action.get("toolCallId")
    return call if type(call) is str else None


def tool_call_parts(active: dict, call_id: Any) -> list[dict]:
    """The tool-call parts of turn ``active`` whose call has id ``call_id``, in order: found through
    the parts' index, so a host following one call of a long turn does not read every part."""
    parts = _parts(active)
    if parts is None or call_id is None:
        return []
    found = []
    for i in candidates(parts, _part_key, key(call_id)):
        part = parts[i]
        if type(part) is dict and part.get("kind") == "toolCall":
            tc = part.get("toolCall")
            if type(tc) is dict and same(tc.get("toolCallId"), call_id):
                found.append(part)
    return found


def _request_key(part: Any) -> Any:
    """The key an open input request is found by (its ``request.id``); ``STOP`` where that search
    throws: a null part, or an open request part without a request."""
    if type(part) is dict:
        if part.get("kind") != "inputRequest" or part.get("response") is not None:
            return NO_KEY
        request = part.get("request")
        if type(request) is dict:
            return key(request.get("id"))
        return STOP if request is None else None  # the id of a string or number reads as undefined
    return STOP if part is None else NO_KEY


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
    if truthy(queued_id):
        steering = out.get("steeringMessage")
        if type(steering) is dict and same(steering.get("id"), queued_id):
            out.pop("steeringMessage")
        queued = out.get("queuedMessages")
        if truthy(queued):  # filtered, and left absent when empty (an empty queue too)
            kept = _queue_without(queued, queued_id)
            out = put(out, "queuedMessages", kept or None)
    return out


def _queue_without(queued: Any, mid: Any) -> list:
    """``queued.filter(m => m.id !== mid)``: it throws on a queue that is not an array, or with a
    null entry (``TypeError``)."""
    return [m for m in array_of(queued) if not same(member(m, "id"), mid)]


def _response_part(state, action, now_ms):
    active = _active(state, action)
    if active is None:
        return state
    return _with_parts(state, active, appended(array_from(active.get("responseParts")), action.get("part")))


def _append_to_part(kind: str):
    # (state, its active turn, that turn's one part) as this handler last made or checked them: the
    # next delta of a stream starts from that state, and finds its part without checking it again
    streamed: tuple = (None, None, None)

    def handler(state, action, now_ms):
        nonlocal streamed
        if state is not streamed[0]:
            # The start of a stream from this state (most of a chat's actions are its deltas): a
            # turn whose one part has this kind, Text content and a string id, the turn a string id.
            active = state.get("activeTurn")
            if type(active) is dict:
                parts = active.get("responseParts")
                if type(parts) is list and len(parts) == 1:
                    part = parts[0]
                    if (
                        type(part) is dict
                        and part.get("kind") == kind
                        and type(part.get("content")) is Text
                        and type(part.get("id")) is str
                        and type(active.get("id")) is str
                    ):
                        streamed = (state, active, part)
        if state is streamed[0]:
            # (A state is never mutated, so the same object is the same state, checked as above.)
            active, part = streamed[1], streamed[2]
            if part["id"] == action.get("partId") and active["id"] == action.get("turnId"):
                more = action.get("content")
                current = part["content"]
                if (
                    type(more) is str
                    and more
                    and len(tail := current._tail + more) <= TAIL_MAX
                    and not "\udc00" <= more < "\ue000"  # a second half joins its first: Text.append
                ):
                    # Text.append written out, for an append that fits the tail (most deltas of a
                    # long part), and the turn's one part not copied to be replaced: at 0.8 µs an
                    # action, those calls and copies were a fifth of it (delta@content=1000000)
                    text = _new(Text)
                    text._head = current._head
                    text._tail = tail
                    new_part = part.copy()
                    new_part["content"] = text
                    turn = active.copy()
                    turn["responseParts"] = [new_part]
                    out = state.copy()
                    out["activeTurn"] = turn
                    streamed = (out, turn, new_part)
                    return out
        return _append_checked(state, action, kind)

    return handler


def _append_checked(state: dict, action: dict, kind: str) -> dict:
    """``chat/delta``/``chat/reasoning`` that the stream's fast case does not take: the active
    turn's part found by a checked scan (=== on strings is ==; non-string ids may compare
    otherwise, 1 == True), else by the full rules."""
    active = state.get("activeTurn")
    if type(active) is not dict:
        _not_a_turn(active, action)
        return state
    turn_id = active.get("id")
    if type(turn_id) is str:
        if turn_id != action.get("turnId"):
            return state
    elif not same(turn_id, action.get("turnId")):
        return state
    parts = active.get("responseParts")
    part_id = action.get("partId")
    if not (type(parts) is list and len(parts) <= PLAIN_MAX and type(part_id) is str):
        return _append_by_rules(state, action, kind, active, parts, part_id)
    # A short list is scanned for the first part keyed ``part_id`` (a tool call by its
    # toolCallId); a part whose key cannot be read fails the search (``TypeError``).
    for i, part in enumerate(parts):  # noqa: B007 - i is read after the break
        if type(part) is dict:
            part_kind = part.get("kind")
            if part_kind != "toolCall":
                if part.get("id") == part_id:
                    break
                continue
        k = _part_key(part)
        if k == part_id:
            break
        if k is STOP:
            raise TypeError("the part search reaches a part it cannot read")
    else:
        return state
    if part_kind != kind:
        return state
    current, more = part.get("content"), action.get("content")
    if type(more) is not str or (type(current) is not Text and type(current) is not str):
        return _append_by_rules(state, action, kind, active, parts, part_id)
    new_part = part.copy()
    new_part["content"] = current.append(more) if type(current) is Text else append_text(current, more)
    new_parts = parts.copy()
    new_parts[i] = new_part
    turn = active.copy()
    turn["responseParts"] = new_parts
    out = state.copy()
    out["activeTurn"] = turn
    return out


def _append_by_rules(state: dict, action: dict, kind: str, active: dict, parts: Any, part_id: Any) -> dict:
    """``chat/delta``/``chat/reasoning`` on the active turn (its id matched) by the full rules: any
    id type, a long turn through its index, and content that is not two strings (JavaScript ``+``)."""
    wanted = part_id if type(part_id) is str else key(part_id)
    if type(parts) is list:
        i = -1
        for j, part in enumerate(parts):  # short list: a scan is cheaper than an index
            k = _part_key(part)
            if k == wanted:
                i = j
                break
            if k is STOP:
                raise TypeError("the part search reaches a part it cannot read")
    elif type(parts) is Vector:
        i = parts.find(_part_key, wanted)
    else:
        raise TypeError("activeTurn.responseParts.map is not a function")
    if i < 0:
        return state
    part = parts[i]
    if part.get("kind") != kind:
        return state
    current, more = part.get("content"), action.get("content")
    if type(more) is str and type(current) in (str, Text):
        new_part = dict(part)
        new_part["content"] = append_text(current, more)
    else:
        new_part = put(part, "content", json_plus(current, more))
    return _with_parts(state, active, replaced(parts, i, new_part, same_keys=True))


def _usage(state, action, now_ms):
    active = state.get("activeTurn")
    if type(active) is not dict:  # any truthy active turn the id check lets through is spread
        if not truthy(active) or not same(member(active, "id"), action.get("turnId")):
            return state
        active = spread(active)
    elif not same(active.get("id"), action.get("turnId")):
        return state
    return put(state, "activeTurn", put(active, "usage", action.get("usage")))


def _unfinished(part: Any) -> bool:
    """A tool-call part whose call is not finished (a call that is not an object has no status, so
    it is unfinished too). ``TypeError`` where the reference's read throws: on a null part, or a
    tool-call part without a call."""
    if type(part) is not dict:
        if part is None:
            raise TypeError("cannot read 'kind' of null")
        return False
    if part.get("kind") != "toolCall":
        return False
    tc = part.get("toolCall")
    if tc is None:
        raise TypeError("cannot read 'status' of undefined")
    return type(tc) is not dict or tc.get("status") not in _FINISHED


def _ended_parts(parts: list | Vector) -> list | Vector:
    """The parts as their turn ends: an unfinished tool call is force-cancelled (T13), its part
    rebuilt as ``{kind, toolCall}``. Every part is read, as the reference's map reads them."""
    unfinished = [_unfinished(part) for part in parts]
    if not any(unfinished):
        return parts
    return sequence(
        [
            {"kind": "toolCall", "toolCall": tool_call.cancelled_by_turn_end(part["toolCall"])}
            if cancel
            else part
            for part, cancel in zip(parts, unfinished, strict=True)
        ]
    )


def _end_turn(turn_state: str):
    terminal = ERROR if turn_state == "error" else None

    def handler(state, action, now_ms):
        active = _active(state, action)
        if active is None:
            return state
        parts = _parts(active)
        if parts is None:
            raise TypeError("activeTurn.responseParts.map is not a function")
        turn: dict[str, Any] = {}
        if active.get("id") is not None:  # an undefined id is absent, as JSON drops it, never null
            turn["id"] = active["id"]
        if active.get("startedAt") is not None:
            turn["startedAt"] = active["startedAt"]
        duration = clamp_non_negative(action.get("duration"))
        if duration is not None:
            turn["duration"] = duration
        if active.get("message") is not None:
            turn["message"] = active["message"]
        turn["responseParts"] = _ended_parts(parts)
        if active.get("usage") is not None:
            turn["usage"] = active["usage"]
        turn["state"] = turn_state
        if terminal == ERROR and action.get("error") is not None:
            turn["error"] = action["error"]
        out = dict(state)  # [...state.turns, turn]: a string spreads, anything else not an array throws
        out["turns"] = appended(array_from(state.get("turns")), turn)
        out.pop("activeTurn", None)
        out["modifiedAt"] = iso_ms(now_ms)
        out["status"] = derive_status(out, terminal)
        return out

    return handler


# -- history, pending messages, drafts, directories -----------------------------------------------


_turn_key = key_of("id")


def _truncated(state, action, now_ms):
    turn_id = action.get("turnId")
    if turn_id is not None:
        turns = _seq(state.get("turns"))
        if turns is None:
            raise TypeError("state.turns.findIndex is not a function")
        i = find(turns, _turn_key, key(turn_id))
        if i < 0:
            return state
        out = put(state, "turns", turns.prefix(i + 1) if type(turns) is Vector else turns[: i + 1])
    else:
        out = put_many(state, turns=[], turnsNextCursor=None)
    out.pop("activeTurn", None)
    out["modifiedAt"] = iso_ms(now_ms)
    out["status"] = derive_status(out)
    return out


def _turns_loaded(state, action, now_ms):
    turns = _seq(state.get("turns"))
    given = action.get("turns")
    if turns is None:
        raise TypeError("state.turns.map is not a function")
    if not isinstance(given, list):
        raise TypeError("action.turns.filter is not a function")
    if find(turns, _turn_key, STOP) >= 0:  # `state.turns.map(turn => turn.id)` reads every turn
        raise TypeError("cannot read 'id' of null")
    loaded = [t for t in given if find(turns, _turn_key, key(member(t, "id"))) < 0]
    return put_many(
        state,
        turns=sequence([*loaded, *turns]) if loaded else turns,
        turnsNextCursor=action.get("turnsNextCursor"),
    )


def _pending_message_set(state, action, now_ms):
    entry = {"id": action.get("id"), "message": action.get("message")}
    entry = {k: v for k, v in entry.items() if v is not None}
    if action.get("kind") == "steering":
        return put(state, "steeringMessage", entry)
    queued = state.get("queuedMessages")
    if queued is not None and not isinstance(queued, list):
        raise TypeError("queuedMessages.findIndex is not a function")
    return put(state, "queuedMessages", upsert(queued, "id", entry))


def _pending_message_removed(state, action, now_ms):
    mid = action.get("id")
    if action.get("kind") == "steering":
        steering = state.get("steeringMessage")
        if not truthy(steering) or not same(steering.get("id") if type(steering) is dict else None, mid):
            return state
        return put(state, "steeringMessage", None)
    queued = state.get("queuedMessages")
    if not truthy(queued):
        return state
    kept = _queue_without(queued, mid)
    if len(kept) == len(queued):
        return state
    return put(state, "queuedMessages", kept or None)


def _queued_reordered(state, action, now_ms):
    """The listed ids first, in order, then the rest; as the reference builds it, by a map from
    id to the *last* entry with it, so entries that share a placed id leave only that one."""
    queued = state.get("queuedMessages")
    if not truthy(queued):
        return state
    by_id = {key(member(m, "id")): m for m in array_of(queued)}
    placed: set = set()
    ordered = []
    for mid in array_of(action.get("order")):
        k = key(mid)
        if k in by_id and k not in placed:
            placed.add(k)
            ordered.append(by_id[k])
    ordered.extend(m for m in queued if key(member(m, "id")) not in placed)
    if len(ordered) == len(queued) and all(a is b for a, b in zip(ordered, queued, strict=True)):
        return state
    return put(state, "queuedMessages", ordered)


# -- input requests ----------------------------------------------------------------------------


def _open_request_index(parts: list | Vector, request_id: Any) -> int:
    """The open input request part with ``request.id === request_id``, else ``-1``; ``TypeError``
    where the reference's ``findIndex`` throws before reaching it."""
    wanted = key(request_id)
    found = -1
    for i in candidates(parts, _request_key, wanted):
        if _request_key(parts[i]) == wanted:
            found = i
            break
    for i in candidates(parts, _request_key, STOP):
        if 0 <= found <= i:
            break
        if _request_key(parts[i]) is STOP:
            raise TypeError("the input request search reaches a part it cannot read")
    return found


def _input_requested(state, action, now_ms):
    if not truthy(state.get("activeTurn")):
        return state
    request = action.get("request")
    if request is None:
        raise TypeError("cannot read 'id' of undefined")
    active, parts = _turn_and_parts(state)
    # A request that is not an object is stored as sent, as in the reference; its members read as
    # undefined (and spread as JavaScript spreads it).
    fields = request if type(request) is dict else {}
    i = _open_request_index(parts, fields.get("id"))
    if i >= 0:
        answers = fields.get("answers")
        if answers is None:
            old = parts[i]["request"]
            answers = old.get("answers") if type(old) is dict else None
        parts = replaced(
            parts, i, {"kind": "inputRequest", "request": put(spread(request), "answers", answers)}
        )
    else:
        parts = appended(parts, {"kind": "inputRequest", "request": request})
    out = _with_parts(state, active, parts)
    out["modifiedAt"] = iso_ms(now_ms)
    out["status"] = derive_status(out) & ~IS_READ
    return out


def _input_answer_changed(state, action, now_ms):
    found = _turn_and_parts(state)
    if found is None:
        return state
    active, parts = found
    i = _open_request_index(parts, action.get("requestId"))
    if i < 0:
        return state
    request = spread(parts[i]["request"])  # a request that is not an object spreads as JavaScript's
    answers = dict(spread(request.get("answers")))
    answer = action.get("answer")
    question = action.get("questionId")
    question = question if type(question) is str else to_string(question)  # a property key
    if answer is None:
        answers.pop(question, None)
    elif question != "__proto__" or question in answers:  # assigning __proto__ sets no own key
        answers[question] = answer
    part = put(parts[i], "request", put(request, "answers", answers or None))
    out = _with_parts(state, active, replaced(parts, i, part, same_keys=True))
    out["modifiedAt"] = iso_ms(now_ms)
    return out


def _input_completed(state, action, now_ms):
    found = _turn_and_parts(state)
    if found is None:
        return state
    active, parts = found
    i = _open_request_index(parts, action.get("requestId"))
    if i < 0:
        return state
    request = spread(parts[i]["request"])
    old = spread(request.get("answers"))
    given = spread(action.get("answers"))
    final = merge(old, given)
    # The reference counts keys carried with null when testing emptiness (chat-channel §5).
    keep = bool(final) or bool(set(old) | set(given))
    part = put_many(
        parts[i], request=put(request, "answers", final if keep else None), response=action.get("response")
    )
    out = _with_parts(state, active, replaced(parts, i, part, same_keys=True))
    out["modifiedAt"] = iso_ms(now_ms)
    out["status"] = derive_status(out)
    return out


# -- tool calls: applying the state machine of tool_call.py to the active turn ---------------


def _tool_call_action(transform, rederive: bool):
    """Apply ``transform`` to every tool call of the active turn with the action's ``toolCallId``."""

    def handler(state, action, now_ms):
        active = state.get("activeTurn")
        if type(active) is dict:  # _active and _parts, inlined
            turn_id = active.get("id")
            if (
                turn_id != action.get("turnId")
                if type(turn_id) is str
                else not same(turn_id, action.get("turnId"))
            ):
                active = None
        else:
            _not_a_turn(active, action)
            active = None
        parts = active.get("responseParts") if active is not None else None
        if active is not None and type(parts) is not list and type(parts) is not Vector:
            raise TypeError("activeTurn.responseParts.map is not a function")
        out = state
        stops = None  # the STOP candidates of a long turn's parts, which derive_status needs too
        if type(parts) is list or type(parts) is Vector:
            call_id = action.get("toolCallId")
            wanted = call_id if type(call_id) is str else key(call_id)
            if type(parts) is list and len(parts) <= PLAIN_MAX:
                # A short list (most turns) is scanned in place, and copied once however many match.
                new_parts = None
                for i, part in enumerate(parts):
                    if type(part) is not dict:
                        if part is None:  # the reference's map reads every part's kind
                            raise TypeError("cannot read 'kind' of null")
                    elif part.get("kind") == "toolCall":
                        tc = part.get("toolCall")
                        if type(tc) is not dict:
                            if tc is None:
                                raise TypeError("cannot read 'toolCallId' of undefined")
                            continue
                        ident = tc.get("toolCallId")
                        if (ident if type(ident) is str else key(ident)) == wanted:
                            new_tc = transform(tc, action)
                            if new_tc is not None:
                                new_part = part.copy()
                                new_part["toolCall"] = new_tc
                                if new_parts is None:
                                    new_parts = parts.copy()
                                new_parts[i] = new_part
                if new_parts is not None:
                    out = _with_parts(state, active, new_parts)
            else:  # a long turn: the calls are found through the parts' index
                vec = parts if type(parts) is Vector else Vector.of(parts)
                sole = vec.sole(_part_key, wanted)
                if sole is not None:
                    # Most actions: one candidate, and no part the map could fail on. These are the
                    # loop's steps below, written out: a loop over the one candidate cost 4-5% of
                    # the action in a long turn (timed on toolcalls@10x1000).
                    stops = []
                    i, part = sole
                    tc = (
                        part.get("toolCall")
                        if type(part) is dict and part.get("kind") == "toolCall"
                        else None
                    )
                    if type(tc) is dict:
                        ident = tc.get("toolCallId")
                        new_tc = (
                            transform(tc, action)
                            if (ident if type(ident) is str else key(ident)) == wanted
                            else None
                        )
                        if new_tc is not None:
                            new_part = part.copy()
                            new_part["toolCall"] = new_tc
                            status = tc.get("status")
                            same_status = type(status) is str and new_tc.get("status") == status
                            new_parts = vec.replaced(
                                i,
                                new_part,
                                same_keys=new_tc.get("toolCallId") is ident or _same_id(new_tc, wanted),
                                same_counts=same_status,
                            )
                            out = _with_parts(state, active, new_parts)
                else:
                    stops = vec.candidates(_part_key, STOP)
                    for i in stops:  # parts the map cannot read (rare; a candidate may be stale)
                        part = vec[i]
                        if part is None or (
                            type(part) is dict
                            and part.get("kind") == "toolCall"
                            and part.get("toolCall") is None
                        ):
                            raise TypeError("the reference's map reaches a part it cannot read")
                    new_parts = vec
                    for i in vec.candidates(_part_key, wanted):
                        part = vec[i]
                        if type(part) is not dict or part.get("kind") != "toolCall":
                            continue
                        tc = part.get("toolCall")
                        if type(tc) is not dict:
                            continue
                        ident = tc.get("toolCallId")  # _part_key, inlined
                        if (ident if type(ident) is str else key(ident)) != wanted:
                            continue
                        new_tc = transform(tc, action)
                        if new_tc is not None:
                            new_part = part.copy()
                            new_part["toolCall"] = new_tc
                            # The counted predicate (blocks_user) reads only the status.
                            status = tc.get("status")
                            same_status = type(status) is str and new_tc.get("status") == status
                            new_parts = new_parts.replaced(
                                i,
                                new_part,
                                same_keys=new_tc.get("toolCallId") is ident or _same_id(new_tc, wanted),
                                same_counts=same_status,
                            )
                    if new_parts is not vec:
                        out = _with_parts(state, active, new_parts)
        if not rederive:
            return out
        # Status is re-derived even when the tool-call update was a no-op (reducer-rules §4). The
        # new parts have the same keys, so the same STOP candidates, as those just searched.
        status = derive_status(out, stops=stops)
        if out is state:
            return _with_status(state, status)
        out["status"] = status  # out is this call's own copy (from _with_parts): set in place
        return out

    return handler


def _tool_call_start(state, action, now_ms):
    active = _active(state, action)
    if active is None:
        return state
    tc = {"status": STREAMING, **pick(action, ("toolCallId", "toolName", "displayName"))}
    tool_call.copy_present(tc, action, ("intention", "contributor", "_meta"))
    return _with_parts(
        state, active, appended(array_from(active.get("responseParts")), {"kind": "toolCall", "toolCall": tc})
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
        "chat/toolCallDelta": _tool_call_action(tool_call.delta, rederive=False),
        "chat/toolCallReady": _tool_call_action(tool_call.ready, rederive=True),
        "chat/toolCallConfirmed": _tool_call_action(tool_call.confirmed, rederive=True),
        "chat/toolCallComplete": _tool_call_action(tool_call.complete, rederive=True),
        "chat/toolCallResultConfirmed": _tool_call_action(tool_call.result_confirmed, rederive=True),
        "chat/toolCallContentChanged": _tool_call_action(tool_call.content_changed, rederive=False),
        "chat/toolCallAuthRequired": _tool_call_action(tool_call.auth_required, rederive=True),
        "chat/toolCallAuthResolved": _tool_call_action(tool_call.auth_resolved, rederive=True),
    },
)
