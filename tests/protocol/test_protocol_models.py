"""Decoding/encoding policy and error messages of the typed wire vocabulary."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from ahp_lab.protocol import (
    TYPES,
    ActionEnvelope,
    ChatInputIntegerQuestion,
    ChatInputNumberQuestion,
    ChatState,
    ClientToolCallContributor,
    JsonRpcErrorResponse,
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcSuccessResponse,
    Markdown,
    MarkdownResponsePart,
    Message,
    MessageOrigin,
    ProtocolError,
    ReconnectReplayResult,
    ReconnectSnapshotResult,
    SessionState,
    SessionTitleChangedAction,
    Text,
    ToolCallRunningState,
    Turn,
    dump,
    explain,
    parse,
    roundtrip,
    validate_action,
    validate_state,
)

# ----------------------------------------------------------------------------- scalars


@pytest.mark.parametrize("value", [0, 1, 72, 2147483720, 2**70])
def test_session_status_is_a_plain_int_bitset(value: int) -> None:
    assert parse("SessionStatus", value) == value
    assert roundtrip("SessionStatus", value) == value
    assert type(roundtrip("SessionStatus", value)) is int


@pytest.mark.parametrize("value", [-1, True, 1.5, "8", None])
def test_session_status_rejects_non_bitsets(value) -> None:
    with pytest.raises(ProtocolError):
        parse("SessionStatus", value)


def test_numbers_keep_ints_and_floats() -> None:
    out = roundtrip("ChatInputQuestion", {"kind": "number", "id": "q", "message": "m", "min": 0, "max": 2.5})
    assert out == {"kind": "number", "id": "q", "message": "m", "min": 0, "max": 2.5}
    assert type(out["min"]) is int and type(out["max"]) is float
    with pytest.raises(ProtocolError, match="must be a number, got boolean"):
        parse("ChatInputQuestion", {"kind": "number", "id": "q", "message": "m", "min": True})


def test_number_and_integer_questions_stay_distinct() -> None:
    n = parse("ChatInputQuestion", {"kind": "number", "id": "a", "message": "m"})
    i = parse("ChatInputQuestion", {"kind": "integer", "id": "b", "message": "m", "defaultValue": 3})
    assert isinstance(n, ChatInputNumberQuestion) and isinstance(i, ChatInputIntegerQuestion)
    assert dump(i)["kind"] == "integer"


def test_server_seq_is_unbounded() -> None:
    env = {"channel": "c", "action": {"type": "session/ready"}, "serverSeq": 2**63 + 5}
    assert roundtrip("ActionEnvelope", env) == env


def test_string_or_markdown_keeps_its_form() -> None:
    assert roundtrip("StringOrMarkdown", "hi") == "hi"
    assert roundtrip("StringOrMarkdown", {"markdown": "**hi**"}) == {"markdown": "**hi**"}
    assert isinstance(parse("StringOrMarkdown", {"markdown": "x"}), Markdown)
    with pytest.raises(ProtocolError, match=r"must be a string or a \{markdown\} object, got int"):
        parse("StringOrMarkdown", 3)


# ----------------------------------------------------------------------------- null / absent / unknown


def test_null_is_absent_and_absent_stays_absent() -> None:
    summary = {
        "resource": "ahp-session:/s",
        "provider": "p",
        "title": "t",
        "status": 0,
        "createdAt": "a",
        "modifiedAt": "b",
        "project": None,
        "activity": None,
    }
    out = roundtrip("SessionSummary", summary)
    assert "project" not in out and "activity" not in out
    assert out["status"] == 0  # falsy but present


def test_falsy_present_values_are_emitted() -> None:
    content = {"type": "terminal", "resource": "r", "title": "t", "isPty": False}
    assert roundtrip("ToolResultContent", content) == content
    params = {"jsonrpc": "2.0", "method": "action", "params": {}}
    assert roundtrip("JsonRpcMessage", params) == params
    mcp = {
        "type": "mcpServer",
        "id": "m",
        "uri": "u",
        "name": "n",
        "enabled": False,
        "state": {"kind": "stopped"},
    }
    assert roundtrip("Customization", mcp) == mcp


def test_opaque_maps_are_verbatim() -> None:
    meta = {"a": None, "nested": {"b": None, "c": [None, 1]}, "camel_case": 1}
    part = {"kind": "systemNotification", "content": "x", "_meta": meta}
    assert roundtrip("ResponsePart", part) == part


def test_unknown_keys_are_preserved_and_snake_case_is_not_a_field_name() -> None:
    data = {"type": "session/titleChanged", "title": "x", "future": {"k": 1}, "tool_call_id": "y"}
    model = parse("StateAction", data)
    assert isinstance(model, SessionTitleChangedAction)
    assert dump(model) == data
    # a snake_case spelling of a declared field is an unknown key on the wire, not the field
    call = {
        "status": "running",
        "toolCallId": "a",
        "toolName": "n",
        "displayName": "d",
        "invocationMessage": "m",
        "confirmed": "setting",
        "tool_input": "kept as unknown",
    }
    parsed = parse("ToolCallState", call)
    assert isinstance(parsed, ToolCallRunningState) and parsed.tool_input is None
    assert dump(parsed) == call


def test_unknown_variants_are_kept_raw_and_known_malformed_ones_fail() -> None:
    state = {
        "resource": "ahp-chat:/c",
        "title": "t",
        "status": 8,
        "modifiedAt": "m",
        "turns": [],
        "activeTurn": {
            "id": "t1",
            "startedAt": "s",
            "message": {"text": "hi", "origin": {"kind": "user"}},
            "responseParts": [{"kind": "unknownFuturePart"}, {"kind": "markdown", "id": "p", "content": ""}],
        },
    }
    chat = validate_state("chat", state)
    assert isinstance(chat, ChatState)
    assert chat.active_turn.response_parts[0] == {"kind": "unknownFuturePart"}
    assert isinstance(chat.active_turn.response_parts[1], MarkdownResponsePart)
    assert dump(chat) == state

    assert parse("Customization", {"type": "future", "x": None}) == {"type": "future", "x": None}
    with pytest.raises(ProtocolError, match="field 'enabled' is required"):
        parse("Customization", {"type": "plugin", "id": "p", "uri": "u", "name": "n"})
    with pytest.raises(ProtocolError, match="field 'kind' is required"):
        parse("ResponsePart", {"id": "x"})


def test_protected_resource_metadata_is_snake_case() -> None:
    prm = {
        "resource": "https://r",
        "resource_name": "R",
        "authorization_servers": ["https://a"],
        "scopes_supported": ["s"],
        "bearer_methods_supported": ["header"],
        "required": False,
    }
    assert roundtrip("ProtectedResourceMetadata", prm) == prm
    state = {"kind": "authRequired", "reason": "required", "resource": prm, "requiredScopes": ["s"]}
    assert roundtrip("McpServerState", state) == state


# ----------------------------------------------------------------------------- python-built models


def test_python_built_models_emit_discriminators_and_omit_absent() -> None:
    assert dump(SessionTitleChangedAction(title="x")) == {"type": "session/titleChanged", "title": "x"}
    turn = Turn(
        id="t",
        message=Message(text="hi", origin=MessageOrigin(kind="user")),
        response_parts=[MarkdownResponsePart(id="p", content="")],
        state="complete",
        error=None,
    )
    assert dump(turn) == {
        "id": "t",
        "message": {"text": "hi", "origin": {"kind": "user"}},
        "responseParts": [{"kind": "markdown", "id": "p", "content": ""}],
        "state": "complete",
    }
    # None written later through model_copy is still omitted
    assert "usage" not in dump(turn.model_copy(update={"usage": None}))
    contributor = ClientToolCallContributor(client_id="c1")
    assert dump(contributor) == {"kind": "client", "clientId": "c1"}
    assert dump(Markdown(markdown="m")) == {"markdown": "m"}


def test_validate_state_accepts_text_ropes() -> None:
    state = {
        "title": "t",
        "content": [{"type": "unclassified", "value": Text.of("ab").append("cd")}],
        "claim": {"kind": "client", "clientId": "c"},
    }
    model = validate_state("terminal", state)
    assert dump(model)["content"][0]["value"] == "abcd"
    with pytest.raises(ProtocolError, match="unknown channel kind"):
        validate_state("nope", {})
    with pytest.raises(ProtocolError, match=r"^session state: field 'lifecycle' is required$"):
        validate_state(
            "session", {"provider": "p", "title": "t", "status": 0, "activeClients": [], "chats": []}
        )
    session = {
        "provider": "p",
        "title": "t",
        "status": 0,
        "activeClients": [],
        "chats": [],
        "lifecycle": "ready",
    }
    assert isinstance(validate_state("session", session), SessionState)


# ----------------------------------------------------------------------------- JSON-RPC and envelopes


@pytest.mark.parametrize(
    ("message", "cls"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}, JsonRpcRequest),
        ({"jsonrpc": "2.0", "id": 2, "method": "ping"}, JsonRpcRequest),
        ({"jsonrpc": "2.0", "method": "action", "params": {}}, JsonRpcNotification),
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, JsonRpcSuccessResponse),
        ({"jsonrpc": "2.0", "id": 1, "result": None}, JsonRpcSuccessResponse),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "x"}}, JsonRpcErrorResponse),
        (
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "bad json"}},
            JsonRpcErrorResponse,
        ),
    ],
)
def test_jsonrpc_classification(message, cls) -> None:
    parsed = parse("JsonRpcMessage", message)
    assert isinstance(parsed, cls)
    assert roundtrip("JsonRpcMessage", message) == message


def test_jsonrpc_invalid_message() -> None:
    with pytest.raises(ProtocolError, match="not a JSON-RPC 2.0 message"):
        parse("JsonRpcMessage", {"jsonrpc": "2.0", "result": 1})
    with pytest.raises(ProtocolError, match="field 'id' must be an integer or a string, got float"):
        parse("JsonRpcMessage", {"jsonrpc": "2.0", "id": 1.5, "method": "x"})


def test_action_envelope_origin() -> None:
    host = {"channel": "ahp-session:/s", "action": {"type": "session/ready"}, "serverSeq": 1, "origin": None}
    assert roundtrip("ActionEnvelope", host) == {k: v for k, v in host.items() if k != "origin"}
    client = {
        "channel": "ahp-session:/s",
        "action": {"type": "session/titleChanged", "title": "t"},
        "serverSeq": 2,
        "origin": {"clientId": "c", "clientSeq": 0},
        "rejectionReason": "no",
    }
    env = parse("ActionEnvelope", client)
    assert isinstance(env, ActionEnvelope) and env.origin.client_seq == 0
    assert roundtrip("ActionEnvelope", client) == client


def test_reconnect_results() -> None:
    replay = {"type": "replay", "actions": [], "missing": ["ahp-chat:/x"]}
    snap = {
        "type": "snapshot",
        "snapshots": [{"resource": "ahp-root://", "state": {"agents": []}, "fromSeq": 0}],
    }
    assert isinstance(parse("ReconnectResult", replay), ReconnectReplayResult)
    assert isinstance(parse("ReconnectResult", snap), ReconnectSnapshotResult)
    assert roundtrip("ReconnectResult", snap) == snap


# ----------------------------------------------------------------------------- validate_action


def test_validate_action_normalizes_nulls_but_keeps_merge_nulls() -> None:
    assert validate_action({"type": "chat/activityChanged", "activity": None}) == {
        "type": "chat/activityChanged"
    }
    merges = [
        {"type": "session/configChanged", "config": {"a": None, "b": 1}},
        {"type": "root/configChanged", "config": {"a": None}, "replace": False},
        {"type": "session/chatUpdated", "chat": "c", "changes": {"activity": None, "status": 1}},
        {"type": "chat/inputCompleted", "requestId": "r", "response": "accept", "answers": {"q": None}},
        {
            "type": "chat/toolCallComplete",
            "turnId": "t",
            "toolCallId": "c",
            "result": {"success": False, "pastTenseMessage": "x", "content": None},
        },
    ]
    for action in merges:
        assert validate_action(action) == action
    meta = {"type": "session/metaChanged", "_meta": {"x": None}}
    assert validate_action(meta) == meta


@pytest.mark.parametrize(
    ("action", "message", "field"),
    [
        (
            {"type": "chat/delta", "turnId": "t", "partId": "p", "content": 5},
            "chat/delta: field 'content' must be a string, got int",
            "content",
        ),
        ({"type": "session/titleChanged"}, "session/titleChanged: field 'title' is required", "title"),
        (
            {"type": "session/titleChanged", "title": None},
            "session/titleChanged: field 'title' is required",
            "title",
        ),
        (
            {"type": "session/isReadChanged", "isRead": "yes"},
            "session/isReadChanged: field 'isRead' must be a boolean, got string",
            "isRead",
        ),
        (
            {"type": "terminal/resized", "cols": 80.5, "rows": 24},
            "terminal/resized: field 'cols' must be an integer, got float",
            "cols",
        ),
        (
            {"type": "chat/queuedMessagesReordered", "order": "a,b"},
            "chat/queuedMessagesReordered: field 'order' must be an array, got string",
            "order",
        ),
        (
            {"type": "chat/queuedMessagesReordered", "order": ["a", 2]},
            "chat/queuedMessagesReordered: field 'order[1]' must be a string, got int",
            "order[1]",
        ),
        (
            {
                "type": "chat/turnStarted",
                "turnId": "t",
                "startedAt": "s",
                "message": {
                    "text": "hi",
                    "origin": {"kind": "user"},
                    "attachments": [{"type": "chat", "label": "l"}],
                },
            },
            "chat/turnStarted: field 'message.attachments[0].resource' is required",
            "message.attachments[0].resource",
        ),
        (
            {"type": "chat/responsePart", "turnId": "t", "part": {"kind": "markdown", "id": "p"}},
            "chat/responsePart: field 'part.content' is required",
            "part.content",
        ),
        (
            {"type": "chat/responsePart", "turnId": "t", "part": {"kind": 7}},
            "chat/responsePart: field 'part.kind' must be a string, got int",
            "part.kind",
        ),
        (
            {"type": "session/creationFailed", "error": "boom"},
            "session/creationFailed: field 'error' must be an object, got string",
            "error",
        ),
        (
            {"type": "root/configChanged", "config": {}, "replace": 1},
            "root/configChanged: field 'replace' must be a boolean, got int",
            "replace",
        ),
        (
            {"type": "chat/toolCallConfirmed", "turnId": "t", "toolCallId": "c", "approved": True},
            "chat/toolCallConfirmed: field 'confirmed' is required when 'approved' is true",
            "confirmed",
        ),
        (
            {"type": "chat/toolCallConfirmed", "turnId": "t", "toolCallId": "c", "approved": False},
            "chat/toolCallConfirmed: field 'reason' is required when 'approved' is false",
            "reason",
        ),
        (
            {"type": "chat/turnComplete", "turnId": "t", "duration": float("nan")},
            "chat/turnComplete: field 'duration' must be a finite number, got float",
            "duration",
        ),
        (
            {"type": "session/mcpServerStateChanged", "id": "m", "state": {"kind": "error"}},
            "session/mcpServerStateChanged: field 'state.error' is required",
            "state.error",
        ),
    ],
)
def test_validate_action_error_messages(action, message, field) -> None:
    with pytest.raises(ProtocolError) as info:
        validate_action(action)
    assert str(info.value) == message
    assert info.value.field == field
    assert info.value.rule and info.value.rule in message
    assert info.value.subject == action["type"]
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ({"type": "future/newAction", "foo": 42}, "unknown action type 'future/newAction'"),
        ({"type": "chat/nonExistent"}, "unknown action type 'chat/nonExistent'"),
        ({"title": "x"}, "action: field 'type' is required"),
        ({"type": None}, "action: field 'type' is required"),
        ({"type": 3}, "action: field 'type' must be a string, got int"),
        ("session/ready", "action: must be a JSON object, got string"),
        ([{"type": "session/ready"}], "action: must be a JSON object, got array"),
    ],
)
def test_validate_action_envelope_level_errors(action, message) -> None:
    with pytest.raises(ProtocolError) as info:
        validate_action(action)
    assert str(info.value) == message


def test_explain_converts_validation_errors() -> None:
    try:
        TYPES["ChatDeltaAction"].validate_python({"type": "chat/delta", "turnId": "t", "partId": "p"})
    except ValidationError as exc:
        assert explain(exc, "chat/delta") == "chat/delta: field 'content' is required"
        assert explain(exc) == "field 'content' is required"
    else:  # pragma: no cover
        raise AssertionError("expected a ValidationError")


def test_parse_errors_name_the_type() -> None:
    with pytest.raises(ProtocolError, match=r"^SessionSummary: field 'title' is required$"):
        parse(
            "SessionSummary",
            {"resource": "r", "provider": "p", "status": 0, "createdAt": "a", "modifiedAt": "b"},
        )
    with pytest.raises(ProtocolError, match="unknown protocol type"):
        parse("NoSuchType", {})


@pytest.mark.parametrize("bad_key", ["\n", "a\nb", "it's", 'say "hi"', "\x00", ""])
def test_a_field_path_through_an_odd_key_stays_one_quoted_line(bad_key):
    from ahp_lab.protocol.codec import validate_action
    from ahp_lab.protocol.limits import Limits, check_json

    action = {
        "type": "chat/inputCompleted",
        "requestId": "r",
        "response": "accept",
        "answers": {bad_key: False},
    }
    with pytest.raises(ProtocolError) as model_error:
        validate_action(action)
    deep = {bad_key: [[[[1]]]]}
    with pytest.raises(ProtocolError) as limit_error:
        check_json(deep, Limits(max_depth=3), subject="chat/draftChanged")
    for error in (model_error.value, limit_error.value):
        message = str(error)
        assert "\n" not in message and message.count("'") == 2, message
        quoted = error.field[error.field.index("[") + 1 :]
        assert json.JSONDecoder().raw_decode(quoted)[0] == bad_key  # JSON-quoted, so it reads back
