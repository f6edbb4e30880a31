"""Host-side validation of client-dispatched actions (overview §6.1, session-channel §7).

:func:`check_client_action` returns ``None`` when the host accepts the action, or a one-sentence
rejection reason that is echoed to the client as ``rejectionReason`` and recorded in the log.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..protocol import CLIENT_DISPATCHABLE, ProtocolError, validate_action
from ..protocol.actions import channel_kind_of_action
from ..protocol.chat import ANSWER_KINDS, ANSWER_STATES, CONFIRMED, DENIAL_REASONS, INPUT_RESPONSES
from ..protocol.jsonvalue import dumps
from ..protocol.limits import DEFAULT_LIMITS, Limits
from ..reducers.chat import tool_call_parts
from .pending import held


def _active_turn(chat: dict) -> dict | None:
    active = chat.get("activeTurn")
    return active if isinstance(active, dict) else None


def find_tool_call(chat: dict, turn_id: Any, call_id: Any) -> dict | None:
    """The first tool call ``call_id`` of the active turn ``turn_id`` (``None`` when there is none)."""
    active = _active_turn(chat)
    if active is None or active.get("id") != turn_id:
        return None
    parts = tool_call_parts(active, call_id)
    return parts[0]["toolCall"] if parts else None


def _no_tool_call(kind: str, chat: dict, turn_id: Any, call_id: Any) -> str:
    """Why ``kind`` finds no tool call to act on. A turn that has ended is named as such: a client
    acting on a call of a turn that had just completed was told there was no such call "in the
    active turn", though no turn was active, which read like a wrong tool call id."""
    if any(type(t) is dict and t.get("id") == turn_id for t in chat.get("turns") or ()):
        active = _active_turn(chat)
        now = "no turn is active" if active is None else f"the active turn is {active.get('id')!r}"
        return f"{kind}: turn {turn_id!r} has ended ({now}): only the active turn's tool calls can change"
    return f"{kind}: no tool call {call_id!r} in the active turn {turn_id!r}"


def find_open_request(chat: dict, request_id: Any) -> dict | None:
    active = _active_turn(chat)
    for part in (active or {}).get("responseParts") or ():
        if (
            isinstance(part, dict)
            and part.get("kind") == "inputRequest"
            and part.get("response") is None
            and (part.get("request") or {}).get("id") == request_id
        ):
            return part["request"]
    return None


def check_answer(question: dict | None, answer: dict) -> str | None:
    """Why an answer does not fit its question (``None`` when it does)."""
    state = answer.get("state")
    if state not in ANSWER_STATES:
        return f"an answer's state is one of {', '.join(map(repr, ANSWER_STATES))}, not {state!r}"
    if state == "skipped":
        return "a skipped answer has no value" if "value" in answer else None
    value = answer.get("value")
    if not isinstance(value, dict):
        return f"a {state} answer needs a value"
    if question is None:
        return None
    want = ANSWER_KINDS.get(question.get("kind"))
    if want is not None and value.get("kind") != want:
        return f"question '{question.get('id')}' takes a {want} answer, not {value.get('kind')}"
    v = value.get("value")
    kind = question.get("kind")
    if kind == "integer" and not (isinstance(v, int) and not isinstance(v, bool)):
        return f"question '{question.get('id')}' takes a whole number"
    if kind in ("number", "integer"):
        if question.get("min") is not None and v < question["min"]:
            return f"question '{question.get('id')}' takes a number of at least {question['min']}"
        if question.get("max") is not None and v > question["max"]:
            return f"question '{question.get('id')}' takes a number of at most {question['max']}"
    if kind in ("single-select", "multi-select") and not question.get("allowFreeformInput"):
        known = {o.get("id") for o in question.get("options") or ()}
        chosen = v if isinstance(v, list) else [v]
        unknown = [c for c in chosen if c not in known]
        if unknown:
            return f"question '{question.get('id')}' has no option {unknown[0]!r}"
    if kind == "multi-select" and isinstance(v, list):
        if question.get("min") is not None and len(v) < question["min"]:
            return f"question '{question.get('id')}' needs at least {question['min']} choices"
        if question.get("max") is not None and len(v) > question["max"]:
            return f"question '{question.get('id')}' allows at most {question['max']} choices"
    if kind == "text" and isinstance(v, str):
        if question.get("min") is not None and len(v) < question["min"]:
            return f"question '{question.get('id')}' needs at least {question['min']} characters"
        if question.get("max") is not None and len(v) > question["max"]:
            return f"question '{question.get('id')}' allows at most {question['max']} characters"
    return None


def turn_index(turns: Any, turn_id: Any) -> int | None:
    """The position of the completed turn ``turn_id`` among a chat's ``turns``, else ``None``."""
    return next((i for i, t in enumerate(turns) if isinstance(t, dict) and t.get("id") == turn_id), None)


def fixed_chat_attachments(
    where: str, message: Any, chat_state: Callable[[str], dict | None]
) -> tuple[Any, str | None]:
    """A client's message with its chat attachments checked and their ends fixed (chat-channel
    §1), or the reason it is refused: the chat must exist (``chat_state`` returns its state, or
    ``None`` for no chat); an ``endTurn`` must name a completed turn the chat still has; without
    one, the end is fixed at the chat's newest completed turn now (none: an empty transcript)."""
    attachments = message.get("attachments") if isinstance(message, dict) else None
    if not isinstance(attachments, list):
        return message, None
    fixed, changed = [], False
    for n, attachment in enumerate(attachments):
        if isinstance(attachment, dict) and attachment.get("type") == "chat":
            uri = attachment.get("resource")
            state = chat_state(uri) if isinstance(uri, str) else None
            if state is None:
                return message, f"{where}: attachment {n} names no chat the host has ({uri!r:.100})"
            turns = state.get("turns") or []
            end = attachment.get("endTurn")
            if end is None:
                if turns:
                    attachment, changed = {**attachment, "endTurn": turns[-1].get("id")}, True
            elif turn_index(turns, end) is None:
                active = state.get("activeTurn")
                still = isinstance(active, dict) and active.get("id") == end
                return message, (
                    f"{where}: attachment {n} ends at turn {end!r:.100} of {uri}, which "
                    + (
                        "is still in progress"
                        if still
                        else "the chat does not have (unknown, or no longer kept)"
                    )
                )
        fixed.append(attachment)
    return ({**message, "attachments": fixed} if changed else message), None


def not_from_user(where: str, message: dict | None, field: str = "") -> str | None:
    """Why a client's ``message`` is refused (``None``: absent, or the user's): clients may only
    send user messages. ``field`` names where the message sits (``"initialMessage."``)."""
    if message is None or (message.get("origin") or {}).get("kind") == "user":
        return None
    return f"{where}: clients may only send user messages ({field}origin.kind must be 'user')"


def _questions(request: dict) -> dict[str, dict]:
    return {q.get("id"): q for q in request.get("questions") or () if isinstance(q, dict)}


def check_client_action(
    action: dict,
    channel: str,
    channel_kind: str,
    state: Any,
    client_id: str,
    *,
    session: dict | None = None,
    agent_capabilities: dict | None = None,
    trusted: bool = False,
    limits: Limits = DEFAULT_LIMITS,
    working_directories: Callable[[Any], str | None] | None = None,
    is_trusted: Callable[[Any], bool] = lambda client_id: True,
) -> str | None:
    """Validate a client dispatch; ``action`` must already be normalized by ``validate_action``.

    ``client_id`` is the id bound to the dispatching connection and ``trusted`` whether that is
    the notebook's own connection (it may remove other clients and name any working directory);
    ``working_directories(uri)`` says why a directory may not be used (``None``: it may);
    ``is_trusted(client_id)`` whether that client is the notebook's (its tools run in the kernel).
    """
    kind = action["type"]
    if kind not in CLIENT_DISPATCHABLE:
        return f"{kind} is host-only: clients cannot dispatch it"
    if channel_kind_of_action(kind) != channel_kind:
        return f"{kind} belongs on a {channel_kind_of_action(kind)} channel, but {channel} is a {channel_kind} channel"
    caps = agent_capabilities or {}
    if channel_kind == "chat":
        reason = _check_tool_result_size(action, kind, limits) or _check_queue(action, kind, state, limits)
        return reason or _check_chat(action, kind, state, client_id, session, caps, trusted, is_trusted)
    if channel_kind == "session":
        published = (
            (action.get("activeClient") or {}).get("customizations")
            if kind == "session/activeClientSet"
            else None
        )
        if isinstance(published, list) and len(published) > limits.max_client_plugins and not trusted:
            return (
                f"session/activeClientSet: a client may publish at most {limits.max_client_plugins} plugins "
                f"(Limits.max_client_plugins), this one lists {len(published)}"
            )
        if kind == "session/activeClientSet" and not trusted:
            reason = _check_client_tools(action, state, client_id, limits)
            if reason:
                return reason
        return _check_session(action, kind, state, client_id, caps, trusted, working_directories)
    if kind == "terminal/claimed":
        claim = (state or {}).get("claim") or {}
        if not (claim.get("kind") == "client" and claim.get("clientId") == client_id):
            return "terminal/claimed: only the client holding the claim may transfer it"
    return None


def _check_tool_result_size(action: dict, kind: str, limits: Limits) -> str | None:
    if kind == "chat/toolCallComplete":
        payload, what = action.get("result"), "result"
    elif kind == "chat/toolCallContentChanged":
        payload, what = action.get("content"), "content"
    else:
        return None
    size = len(dumps(payload, separators=(",", ":")))
    if size > limits.max_tool_result_bytes:
        return (
            f"{kind}: the {what} is {size:,} characters of JSON, over the limit of "
            f"{limits.max_tool_result_bytes:,} for one tool call"
        )
    return None


def _check_queue(action: dict, kind: str, chat: Any, limits: Limits) -> str | None:
    """A new queued message when the chat's queue is full (``limits.max_queued_messages``)."""
    if kind != "chat/pendingMessageSet" or action.get("kind") != "queued":
        return None
    queued = chat.get("queuedMessages") if isinstance(chat, dict) else None
    if not isinstance(queued, list) or len(queued) < limits.max_queued_messages:
        return None
    if any(type(m) is dict and m.get("id") == action.get("id") for m in queued):
        return None  # a queued message replaced: the queue does not grow
    return (
        f"chat/pendingMessageSet: the chat already queues {len(queued):,} messages, the most it holds "
        "(Limits.max_queued_messages); remove one or wait for the queue to run"
    )


def _check_chat(
    action: dict,
    kind: str,
    chat: dict,
    client_id: str,
    session: dict | None,
    caps: dict,
    trusted: bool = False,
    is_trusted: Callable[[Any], bool] = lambda client_id: True,
) -> str | None:
    if kind in ("chat/turnStarted", "chat/pendingMessageSet", "chat/draftChanged"):
        message = action.get("message") if kind != "chat/draftChanged" else action.get("draft")
        reason = not_from_user(kind, message)
        if reason is not None:
            return reason
    if kind in ("chat/pendingMessageSet", "chat/pendingMessageRemoved") and action.get("kind") not in (
        "steering",
        "queued",
    ):
        return f"{kind}: kind is 'steering' or 'queued', not {action.get('kind')!r}"
    if kind == "chat/inputCompleted" and action.get("response") not in INPUT_RESPONSES:
        return (
            f"chat/inputCompleted: response is one of {', '.join(map(repr, INPUT_RESPONSES))}, "
            f"not {action.get('response')!r}"
        )
    if kind == "chat/toolCallConfirmed" and isinstance(action.get("userSuggestion"), dict):
        # a Message as the others are: a client's suggestion said to be the agent's was accepted
        reason = not_from_user(kind, action["userSuggestion"], "userSuggestion.")
        if reason is not None:
            return reason
    if kind == "chat/toolCallConfirmed":
        # a value outside the enum went into state and to every subscriber, whose typed client
        # could not read it (chat-channel §2.1, §2.2)
        field, allowed = (
            ("confirmed", CONFIRMED) if action.get("approved") is True else ("reason", DENIAL_REASONS)
        )
        value = action.get(field)
        if value is not None and value not in allowed:
            return f"{kind}: {field} is one of {', '.join(map(repr, allowed))}, not {value!r}"
    if kind == "chat/turnStarted" and (active := _active_turn(chat)) is not None:
        return (
            f"chat/turnStarted: a turn is already in progress ({active.get('id')!r}): cancel it "
            "first (chat/turnCancelled) or queue the message with chat/pendingMessageSet"
        )
    if kind == "chat/turnStarted":
        turn_id = action.get("turnId")
        if any(type(t) is dict and t.get("id") == turn_id for t in (chat or {}).get("turns") or ()):
            return f"chat/turnStarted: this chat already has a turn {turn_id!r}; a new turn needs a new id"
    if kind == "chat/turnCancelled":
        active = _active_turn(chat)
        if active is None:
            return "chat/turnCancelled: there is no active turn to cancel"
        if active.get("id") != action.get("turnId"):
            return f"chat/turnCancelled: turn {action.get('turnId')!r} is not the active turn"
    if kind in (
        "chat/toolCallConfirmed",
        "chat/toolCallResultConfirmed",
        "chat/toolCallComplete",
        "chat/toolCallContentChanged",
    ):
        tc = find_tool_call(chat, action.get("turnId"), action.get("toolCallId"))
        if tc is None:
            return _no_tool_call(kind, chat, action.get("turnId"), action.get("toolCallId"))
        status = tc.get("status")
        if kind == "chat/toolCallConfirmed" and status != "pending-confirmation":
            return f"{kind}: tool call {action.get('toolCallId')!r} is not waiting for confirmation (it is {status})"
        contributor = tc.get("contributor") or {}
        runner = contributor.get("clientId") if contributor.get("kind") == "client" else None
        confirms = kind in ("chat/toolCallConfirmed", "chat/toolCallResultConfirmed")
        if confirms and not trusted and runner not in (None, client_id) and is_trusted(runner):
            # The notebook's tool runs in the kernel: a stranger approving it (and editing its
            # input) made the kernel run what the stranger chose, and approving its result passed
            # it to the agent before the person had read it. Any other client's call is anyone's
            # to confirm, first accepted wins (chat-channel §6.5: a phone answers for an IDE).
            return (
                f"{kind}: tool call {action.get('toolCallId')!r} runs the notebook's tool "
                f"({runner}): the notebook confirms it, not client {client_id}"
            )
        edits = kind == "chat/toolCallConfirmed" and action.get("editedToolInput") is not None
        if edits and not trusted and runner != client_id:
            # Approving is anyone's (§6.5), but an edited input is what the tool runs: a stranger's
            # edit of a host tool's call, or of an in-process client's, ran its input in the kernel.
            owner = f"client {runner}" if runner is not None else "the host"
            return (
                f"{kind}: tool call {action.get('toolCallId')!r} is run by {owner}: only the notebook "
                f"or the tool's own client edits its input, not client {client_id}"
            )
        if kind == "chat/toolCallResultConfirmed" and status != "pending-result-confirmation":
            return f"tool call {action.get('toolCallId')!r} has no result waiting for confirmation (it is {status})"
        gives_up = (
            kind == "chat/toolCallComplete"
            and status == "auth-required"
            and not (action.get("result") or {}).get("success")
        )
        if gives_up:
            return None  # any client may give up on a call blocked on auth (mcp-servers §5.2)
        if kind in ("chat/toolCallComplete", "chat/toolCallContentChanged"):
            if contributor.get("kind") != "client" or contributor.get("clientId") != client_id:
                owner = contributor.get("clientId") if contributor.get("kind") == "client" else "the host"
                return f"{kind}: tool call {action.get('toolCallId')!r} is executed by {owner}, not by client {client_id}"
            if kind == "chat/toolCallContentChanged" and status != "running":
                return f"chat/toolCallContentChanged: tool call {action.get('toolCallId')!r} is {status}, not running"
            if kind == "chat/toolCallComplete" and status not in ("running", "pending-confirmation"):
                return f"chat/toolCallComplete: tool call {action.get('toolCallId')!r} is {status} and cannot complete now"
    if kind in ("chat/inputAnswerChanged", "chat/inputCompleted"):
        request = find_open_request(chat, action.get("requestId"))
        if request is None:
            return f"{kind}: no open input request {action.get('requestId')!r} in the active turn"
        questions = _questions(request)
        named = (
            [action.get("questionId")]
            if kind == "chat/inputAnswerChanged"
            else list(action.get("answers") or ())
        )
        unknown = [q for q in named if q not in questions]
        if unknown:
            return f"{kind}: input request {action.get('requestId')!r} has no question {unknown[0]!r}"
        if kind == "chat/inputAnswerChanged" and action.get("answer") is not None:
            reason = check_answer(questions.get(action.get("questionId")), action["answer"])
            if reason:
                return f"chat/inputAnswerChanged: {reason}"
        if kind == "chat/inputCompleted":
            given = action.get("answers") or {}
            if any(v is None for v in given.values()):
                return "chat/inputCompleted: answers must not be null (omit the key instead)"
            for qid, answer in given.items():
                reason = check_answer(questions.get(qid), answer)
                if reason:
                    return f"chat/inputCompleted: {reason}"
            if action.get("response") == "accept":
                final = {**(request.get("answers") or {}), **given}
                for qid, q in questions.items():
                    if q.get("required") and (final.get(qid) or {}).get("state") != "submitted":
                        return f"chat/inputCompleted: required question '{qid}' has no submitted answer"
    if kind == "chat/pendingMessageRemoved" and not held(chat, action):
        return f"chat/pendingMessageRemoved: no {action.get('kind')} message {action.get('id')!r}"
    if kind in ("chat/workingDirectorySet", "chat/workingDirectoryRemoved"):
        if "multipleWorkingDirectories" not in caps:
            return f"{kind}: the agent does not support multiple working directories"
        if kind == "chat/workingDirectorySet" and action.get("directory") not in (
            (session or {}).get("workingDirectories") or ()
        ):
            return f"chat/workingDirectorySet: {action.get('directory')} is not one of the session's working directories"
    return None


def _check_client_tools(action: dict, state: Any, client_id: str | None, limits: Limits) -> str | None:
    """A stranger's active-client entry may not take the session's client tools past the bound."""
    tools = (action.get("activeClient") or {}).get("tools")
    mine = len(tools) if isinstance(tools, list) else 0
    others = sum(
        len(c["tools"])
        for c in (state or {}).get("activeClients") or ()
        if isinstance(c, dict) and c.get("clientId") != client_id and isinstance(c.get("tools"), list)
    )
    if mine + others <= limits.max_client_tools:
        return None
    return (
        f"session/activeClientSet: the session's clients may hold at most {limits.max_client_tools:,} "
        f"tools together (Limits.max_client_tools); this entry has {mine:,} and the others {others:,}"
    )


def _check_session(
    action: dict,
    kind: str,
    session_state: dict,
    client_id: str,
    caps: dict,
    trusted: bool = False,
    working_directories: Callable[[Any], str | None] | None = None,
) -> str | None:
    if kind == "session/activeClientSet" and (action.get("activeClient") or {}).get("clientId") != client_id:
        return (
            f"session/activeClientSet: a client may only set its own entry (clientId must be {client_id!r})"
        )
    if kind == "session/activeClientRemoved" and action.get("clientId") != client_id and not trusted:
        return (
            f"session/activeClientRemoved: a client may only remove itself (clientId {client_id!r}); "
            "the host removes other clients when they leave (unsubscribe from the session, or "
            "disconnect and do not come back)"
        )
    if kind == "session/customizationToggled" and not _customization_exists(session_state, action.get("id")):
        listed = _published_as(session_state, client_id, action.get("id"))
        return f"session/customizationToggled: no customization with id {action.get('id')!r}" + (
            f" (this client's plugin {action.get('id')!r} is listed as {listed!r}: the host names the "
            "plugins clients publish, since two clients may use the same id)"
            if listed
            else ""
        )
    if kind in ("session/mcpServerStartRequested", "session/mcpServerStopRequested"):
        entry = _customization(session_state, action.get("id"))
        if entry is None or entry.get("type") != "mcpServer":
            return f"{kind}: {action.get('id')!r} is not an MCP server of this session"
    if kind == "session/configChanged":
        config = session_state.get("config")
        if not isinstance(config, dict):
            return "session/configChanged: this session has no configuration"
        props = (config.get("schema") or {}).get("properties") or {}
        values = config.get("values") if isinstance(config.get("values"), dict) else {}
        for key in action.get("config") or {}:
            if key not in props:
                return f"session/configChanged: unknown configuration property {key!r}"
            unchanged = key in values and dumps(values[key]) == dumps(action["config"][key])
            if not props[key].get("sessionMutable") and not unchanged:  # (a full replacement names it)
                return (
                    f"session/configChanged: property {key!r} cannot be changed after the session was created"
                )
            reason = config_value_problem(props[key], action["config"][key])
            if reason is not None:
                return f"session/configChanged: {key!r} {reason}"
        if action.get("replace"):
            # a replacement sets exactly the action's values: each one it leaves out is changed too
            for key in values:
                if key not in (action.get("config") or {}) and not (props.get(key) or {}).get(
                    "sessionMutable"
                ):
                    return (
                        f"session/configChanged: replace would remove property {key!r}, which cannot be "
                        "changed after the session was created; name it with its value, or leave replace out"
                    )
    if kind in ("session/workingDirectorySet", "session/workingDirectoryRemoved"):
        multi = caps.get("multipleWorkingDirectories")
        if multi is None:
            return f"{kind}: the agent does not support multiple working directories"
        dirs = session_state.get("workingDirectories") or []
        if (
            kind == "session/workingDirectoryRemoved"
            and multi.get("immutablePrimary")
            and dirs[:1] == [action.get("directory")]
        ):
            return "session/workingDirectoryRemoved: the primary working directory cannot be removed"
        if kind == "session/workingDirectorySet" and working_directories is not None:
            refused = working_directories(action.get("directory"))
            if refused:
                return f"session/workingDirectorySet: {refused}"
    return None


def _customization(session: dict, cid: Any) -> dict | None:
    for entry in session.get("customizations") or ():
        if entry.get("id") == cid:
            return entry
    for entry in session.get("customizations") or ():
        for child in entry.get("children") or () if entry.get("type") != "mcpServer" else ():
            if child.get("id") == cid:
                return child
    return None


def _customization_exists(session: dict, cid: Any) -> bool:
    return _customization(session, cid) is not None


def _published_as(session: dict, client_id: str, cid: Any) -> str | None:
    """The id under which the session lists the plugin ``client_id`` published as ``cid``."""
    for entry in session.get("activeClients") or ():
        if not isinstance(entry, dict) or entry.get("clientId") != client_id:
            continue
        for plugin in entry.get("customizations") or ():
            if isinstance(plugin, dict) and plugin.get("id") == cid and isinstance(plugin.get("uri"), str):
                for listed in session.get("customizations") or ():
                    if isinstance(listed, dict) and listed.get("uri") == plugin["uri"]:
                        return listed.get("id")
    return None


def normalize_client_action(raw: Any, limits: Limits = DEFAULT_LIMITS) -> tuple[dict | None, str | None]:
    """Validate the wire shape of a dispatched action: ``(action, None)`` or ``(None, reason)``."""
    try:
        return validate_action(raw, limits), None
    except ProtocolError as exc:
        return None, str(exc)


_CONFIG_TYPES = {
    "string": (str,),
    "boolean": (bool,),
    "number": (int, float),
    "array": (list,),
    "object": (dict,),
}


def requested_config_problem(schema: Any, wanted: dict) -> str | None:
    """Why ``createSession``'s ``config`` values do not fit the schema the agent announced."""
    props = (schema.get("properties") or {}) if isinstance(schema, dict) else {}
    for key, value in wanted.items():
        if key not in props:
            known = ", ".join(props) or "none"
            return f"createSession: config has no property {key!r:.100} (this agent's: {known})"
        reason = config_value_problem(props[key], value)
        if reason is not None:
            return f"createSession: config value {key!r} {reason}"
    return None


def config_value_problem(schema: dict, value: Any) -> str | None:
    """Why ``value`` does not fit a config property's schema (its enum and type), else ``None``."""
    if value is None:
        return None  # null removes the value (a merge payload), it is never "wrong"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and not schema.get("enumDynamic") and value not in enum:
        return f"must be one of {', '.join(map(str, enum))}, not {value!r}"
    kinds = _CONFIG_TYPES.get(schema.get("type"))
    if kinds is not None and (
        not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool))
    ):
        return f"must be a {schema.get('type')}, not {type(value).__name__}"
    return None


def named_ids(action: dict) -> list[tuple[str, Any]]:
    """The ids a client names for something it brings (label, value): a new turn's, a pending
    message's, its tools' names and its plugins' ids. Host code checks them as it checks client ids."""
    kind = action.get("type")
    if kind == "chat/turnStarted":
        return [("turnId", action.get("turnId"))]
    if kind == "chat/pendingMessageSet":
        return [("id", action.get("id"))]
    if kind == "session/activeClientSet":
        entry = action.get("activeClient") if isinstance(action.get("activeClient"), dict) else {}
        tools = entry.get("tools") if isinstance(entry.get("tools"), list) else []
        plugins = entry.get("customizations") if isinstance(entry.get("customizations"), list) else []
        return [(f"tools[{i}].name", t.get("name")) for i, t in enumerate(tools) if isinstance(t, dict)] + [
            (f"customizations[{i}].id", p.get("id")) for i, p in enumerate(plugins) if isinstance(p, dict)
        ]
    return []
