"""Rules from the spec that the shared fixtures do not pin down (spec/conformance.md §1.5 and more).

Expected values here are read off the spec text, not produced by the code under test.
"""

from __future__ import annotations

import pytest

from ahp_lab.reducers import REDUCERS, reduce, reduce_chat

from .samples import apply, started, tool_call

chat, session = REDUCERS["chat"], REDUCERS["session"]


START = {"type": "chat/toolCallStart", "toolCallId": "tc1", "toolName": "run", "displayName": "Run"}
READY = {"type": "chat/toolCallReady", "toolCallId": "tc1", "invocationMessage": "Run it", "toolInput": "{}"}


def test_modified_at_renders_like_javascript_to_iso_string():
    assert started()["modifiedAt"] == "1970-01-01T00:00:09.999Z"
    s = chat(started(), {"type": "chat/turnComplete", "turnId": "t1", "duration": 1}, 1741632123123)
    assert s["modifiedAt"] == "2025-03-10T18:42:03.123Z"
    s = chat(started(), {"type": "chat/turnComplete", "turnId": "t1", "duration": 1}, 0)
    assert s["modifiedAt"] == "1970-01-01T00:00:00.000Z"


def test_modified_at_outside_four_digit_years_has_a_sign_and_six_digits_as_javascript_writes_it():
    # toISOString: "+010000-01-01T00:00:00.000Z", and the ends of JavaScript's range of dates
    complete = {"type": "chat/turnComplete", "turnId": "t1", "duration": 1}
    for now_ms, text in [
        (253402300800000, "+010000-01-01T00:00:00.000Z"),
        (8640000000000000, "+275760-09-13T00:00:00.000Z"),
        (-62198755200000, "-000001-01-01T00:00:00.000Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
    ]:
        assert chat(started(), complete, now_ms)["modifiedAt"] == text
    # beyond them toISOString throws (RangeError), and the reference's state stays as it was
    assert chat(started(), complete, 8640000000000001) == started()


@pytest.mark.parametrize("status", [{}, ["x"]])
def test_a_tool_call_whose_status_is_an_object_or_array_is_simply_not_blocking(status):
    # the reference compares status with ===: false for an object; the other call still runs
    odd = {
        "kind": "toolCall",
        "toolCall": {"status": status, "toolCallId": "x", "toolName": "t", "displayName": "T"},
    }
    s = started()
    s = {**s, "activeTurn": {**s["activeTurn"], "responseParts": [odd]}}
    s = apply(s, START, {**READY, "confirmed": "not-needed"})
    assert s["activeTurn"]["responseParts"][-1]["toolCall"]["status"] == "running"
    assert s["status"] & 0x1F == 8


def test_complete_from_running_drops_live_content_without_result_content():
    s = apply(
        started(),
        START,
        {**READY, "confirmed": "not-needed"},
        {
            "type": "chat/toolCallContentChanged",
            "toolCallId": "tc1",
            "content": [{"type": "text", "text": "live"}],
        },
        {
            "type": "chat/toolCallComplete",
            "toolCallId": "tc1",
            "result": {"success": True, "pastTenseMessage": "Ran"},
        },
    )
    tc = tool_call(s)
    assert tc["status"] == "completed" and "content" not in tc and tc["confirmed"] == "not-needed"


def test_response_part_with_open_input_request_does_not_rederive_until_next_st_action():
    s = apply(
        started(), {"type": "chat/responsePart", "part": {"kind": "inputRequest", "request": {"id": "r1"}}}
    )
    assert s["status"] == 8
    s = apply(s, {"type": "chat/toolCallReady", "toolCallId": "unknown", "invocationMessage": "x"})
    assert s["status"] == 24


def test_unknown_high_status_bits_survive_turn_completion_unsigned():
    s = started(status=2147483720)  # 2^31 + 64 (archived) + 8
    s = apply(s, {"type": "chat/turnComplete", "duration": 5})
    assert s["status"] == 2147483713


def test_input_requested_for_an_answered_id_appends_a_second_part():
    req = {"type": "chat/inputRequested", "request": {"id": "r1", "message": "?"}}
    s = apply(started(), req, {"type": "chat/inputCompleted", "requestId": "r1", "response": "decline"}, req)
    parts = [p for p in s["activeTurn"]["responseParts"] if p["kind"] == "inputRequest"]
    assert len(parts) == 2 and parts[0]["response"] == "decline" and "response" not in parts[1]
    assert s["status"] == 24


def test_duplicate_child_id_removed_from_every_container():
    tree = [
        {
            "type": "plugin",
            "id": "p1",
            "uri": "u",
            "name": "a",
            "enabled": True,
            "children": [{"type": "skill", "id": "dup", "uri": "u", "name": "s"}],
        },
        {
            "type": "directory",
            "id": "d1",
            "uri": "u",
            "name": "b",
            "enabled": True,
            "contents": "skill",
            "writable": False,
            "children": [{"type": "skill", "id": "dup", "uri": "u", "name": "s"}],
        },
    ]
    s = session({"customizations": tree}, {"type": "session/customizationRemoved", "id": "dup"})
    assert [c["children"] for c in s["customizations"]] == [[], []]


def test_toggle_top_level_first_then_first_container_child_only():
    tree = [
        {
            "type": "plugin",
            "id": "p1",
            "uri": "u",
            "name": "a",
            "enabled": True,
            "children": [{"type": "skill", "id": "s", "uri": "u", "name": "s"}],
        },
        {
            "type": "plugin",
            "id": "p2",
            "uri": "u",
            "name": "b",
            "enabled": True,
            "children": [{"type": "skill", "id": "s", "uri": "u", "name": "s"}],
        },
    ]
    s = session(
        {"customizations": tree}, {"type": "session/customizationToggled", "id": "s", "enabled": False}
    )
    assert s["customizations"][0]["children"][0]["enabled"] is False
    assert "enabled" not in s["customizations"][1]["children"][0]
    s = session(
        {"customizations": tree}, {"type": "session/customizationToggled", "id": "p2", "enabled": False}
    )
    assert s["customizations"][1]["enabled"] is False and s["customizations"][0]["enabled"] is True


def test_mcp_update_ignores_non_mcp_top_level_match_and_updates_child_servers():
    server = {
        "type": "mcpServer",
        "id": "m",
        "uri": "u",
        "name": "m",
        "enabled": True,
        "state": {"kind": "ready"},
        "channel": "mcp://x",
    }
    tree = [{"type": "plugin", "id": "p", "uri": "u", "name": "p", "enabled": True, "children": [server]}]
    s = session({"customizations": tree}, {"type": "session/mcpServerStopRequested", "id": "m"})
    child = s["customizations"][0]["children"][0]
    assert child["state"] == {"kind": "stopped"} and "channel" not in child
    same = {"customizations": tree}
    assert session(same, {"type": "session/mcpServerStartRequested", "id": "p"}) == same
    top = {"customizations": [{**server, "type": "skill"}]}
    assert (
        session(top, {"type": "session/mcpServerStateChanged", "id": "m", "state": {"kind": "ready"}}) == top
    )


@pytest.mark.parametrize(
    ("status", "entries", "expected"),
    [
        (1, [{"kind": "chatInput", "id": "a", "chat": "c"}], 24),
        (40, [{"kind": "toolConfirmation", "id": "a", "chat": "c"}], 56),
        (1, [{"kind": "toolClientExecution", "id": "a", "chat": "c"}], 1),
        (24, [{"kind": "toolClientExecution", "id": "a", "chat": "c"}], 8),
    ],
)
def test_input_needed_status(status, entries, expected):
    s = {"status": status}
    for entry in entries:
        s = session(s, {"type": "session/inputNeededSet", "request": entry})
    assert s["status"] == expected


def test_removing_the_last_input_needed_entry_collapses_the_list_and_falls_back_to_in_progress():
    s = session(
        {"status": 1}, {"type": "session/inputNeededSet", "request": {"kind": "chatInput", "id": "a"}}
    )
    s = session(s, {"type": "session/inputNeededRemoved", "id": "a"})
    assert s == {"status": 8}


def test_ready_without_confirmed_from_running_is_reconfirmation_dropping_post_confirmation_fields():
    s = apply(
        started(),
        START,
        {**READY, "confirmed": "not-needed"},
        {
            "type": "chat/toolCallContentChanged",
            "toolCallId": "tc1",
            "content": [{"type": "text", "text": "x"}],
        },
        {**READY, "toolInput": None, "options": [{"id": "o", "label": "Ok", "kind": "approve"}]},
    )
    tc = tool_call(s)
    assert tc["status"] == "pending-confirmation"
    assert tc["toolInput"] == "{}" and "confirmed" not in tc and "content" not in tc
    assert s["status"] == 24


def test_confirmation_with_edited_input_and_option():
    opts = [{"id": "once", "label": "Allow once", "kind": "approve"}]
    s = apply(
        started(),
        START,
        {**READY, "options": opts},
        {
            "type": "chat/toolCallConfirmed",
            "toolCallId": "tc1",
            "approved": True,
            "confirmed": "user-action",
            "editedToolInput": '{"x":1}',
            "selectedOptionId": "once",
        },
    )
    tc = tool_call(s)
    assert tc["status"] == "running" and tc["toolInput"] == '{"x":1}' and tc["selectedOption"] == opts[0]
    assert "options" not in tc and s["status"] == 8


def test_edited_input_never_replaces_a_content_ref():
    ref = {"uri": "ahp-content:/1"}
    s = apply(
        started(),
        START,
        {**READY, "toolInput": ref},
        {
            "type": "chat/toolCallConfirmed",
            "toolCallId": "tc1",
            "approved": True,
            "confirmed": "user-action",
            "editedToolInput": "{}",
        },
    )
    assert tool_call(s)["toolInput"] == ref


def test_auth_required_only_for_mcp_contributor_and_resolution_keeps_content():
    mcp = {"kind": "mcp", "customizationId": "m"}
    auth = {"reason": "insufficientScope", "resource": {"resource": "https://x"}}
    s = apply(
        started(),
        {**START, "contributor": mcp},
        {**READY, "confirmed": "not-needed"},
        {
            "type": "chat/toolCallContentChanged",
            "toolCallId": "tc1",
            "content": [{"type": "text", "text": "p"}],
        },
        {"type": "chat/toolCallAuthRequired", "toolCallId": "tc1", "auth": auth},
    )
    assert tool_call(s)["status"] == "auth-required" and s["status"] == 24
    ok = apply(
        s,
        {
            "type": "chat/toolCallComplete",
            "toolCallId": "tc1",
            "result": {"success": True, "pastTenseMessage": "x"},
        },
    )
    assert tool_call(ok) == tool_call(s)  # success:true from auth-required is a no-op
    resumed = apply(s, {"type": "chat/toolCallAuthResolved", "toolCallId": "tc1"})
    tc = tool_call(resumed)
    assert tc["status"] == "running" and tc["content"] == [{"type": "text", "text": "p"}] and "auth" not in tc
    gave_up = apply(
        s,
        {
            "type": "chat/toolCallComplete",
            "toolCallId": "tc1",
            "requiresResultConfirmation": True,
            "result": {"success": False, "pastTenseMessage": "cancelled"},
        },
    )
    tc = tool_call(gave_up)
    assert tc["status"] == "completed" and tc["content"] == [{"type": "text", "text": "p"}]
    host = apply(
        started(),
        START,
        {**READY, "confirmed": "not-needed"},
        {"type": "chat/toolCallAuthRequired", "toolCallId": "tc1", "auth": auth},
    )
    assert tool_call(host)["status"] == "running"


def test_contributor_ownership_never_moves():
    client = {"kind": "client", "clientId": "a"}
    s = apply(
        started(),
        {**START, "contributor": client},
        {**READY, "confirmed": "not-needed", "contributor": {"kind": "client", "clientId": "b"}},
    )
    assert tool_call(s)["contributor"] == client
    s = apply(started(), START, {**READY, "contributor": client})
    assert "contributor" not in tool_call(s)
    mcp = {"kind": "mcp", "customizationId": "m"}
    s = apply(started(), START, {**READY, "contributor": mcp})
    assert tool_call(s)["contributor"] == mcp


def test_turn_end_cancels_streaming_call_with_empty_invocation_message():
    s = apply(
        started(),
        START,
        {"type": "chat/toolCallDelta", "toolCallId": "tc1", "content": '{"a"'},
        {"type": "chat/turnCancelled", "duration": -5},
    )
    turn = s["turns"][-1]
    assert turn["duration"] == 0 and turn["state"] == "cancelled"
    assert turn["responseParts"][0]["toolCall"] == {
        "status": "cancelled",
        "toolCallId": "tc1",
        "toolName": "run",
        "displayName": "Run",
        "invocationMessage": "",
        "reason": "skipped",
    }


def test_error_keeps_flags_and_sets_error_activity():
    s = started(status=97)  # idle + read + archived; turn start clears read
    assert s["status"] == 72
    s = apply(s, {"type": "chat/error", "duration": 3, "error": {"errorType": "x", "message": "boom"}})
    assert s["status"] == 66 and s["turns"][-1]["error"]["message"] == "boom"


def test_delta_stops_at_first_matching_identifier_even_if_wrong_kind():
    s = apply(
        started(),
        {"type": "chat/responsePart", "part": {"kind": "reasoning", "id": "p", "content": ""}},
        {"type": "chat/responsePart", "part": {"kind": "markdown", "id": "p", "content": ""}},
        {"type": "chat/delta", "partId": "p", "content": "x"},
    )
    assert [p["content"] for p in s["activeTurn"]["responseParts"]] == ["", ""]


def test_terminal_command_finished_refinishes_every_part_with_the_id():
    s = {"title": "t", "content": [], "claim": {"kind": "client", "clientId": "a"}}
    for action in [
        {"type": "terminal/commandExecuted", "commandId": "c", "commandLine": "ls", "timestamp": 1},
        {"type": "terminal/data", "data": "out"},
        {"type": "terminal/commandFinished", "commandId": "c", "exitCode": 0, "durationMs": 4},
        {"type": "terminal/data", "data": "more"},
        {"type": "terminal/commandFinished", "commandId": "c"},
    ]:
        s = reduce("terminal", s, action)
    assert s["content"] == [
        {
            "type": "command",
            "commandId": "c",
            "commandLine": "ls",
            "output": "out",
            "timestamp": 1,
            "isComplete": True,
        },
        {"type": "unclassified", "value": "more"},
    ]
    assert s["supportsCommandDetection"] is True


def test_changeset_review_flags_absent_differs_from_false():
    s = {"status": "ready", "files": [{"id": "a", "edit": {}}, {"id": "b", "edit": {}, "reviewed": False}]}
    s = reduce(
        "changeset", s, {"type": "changeset/filesReviewChanged", "files": ["a", "b"], "reviewed": False}
    )
    assert s["files"][0]["reviewed"] is False and s["files"][1]["reviewed"] is False
    same = reduce(
        "changeset", s, {"type": "changeset/filesReviewChanged", "files": ["a", "b"], "reviewed": False}
    )
    assert same is s


def test_annotations_update_cannot_clear_range():
    ann = {
        "id": "a",
        "turnId": "t",
        "resource": "r",
        "range": {"start": {}, "end": {}},
        "resolved": False,
        "entries": [],
    }
    s = reduce(
        "annotations",
        {"annotations": [ann]},
        {"type": "annotations/updated", "annotationId": "a", "range": None, "resolved": True},
    )
    assert s["annotations"][0]["range"] == ann["range"] and s["annotations"][0]["resolved"] is True


def test_unknown_channel_kind_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown channel kind 'nope'"):
        reduce("nope", {}, {"type": "x"})


def test_the_specs_clock_function_stamps_the_actions_that_write_modified_at():
    """reducer-rules §1 types the clock as a function (``now_ms=lambda: 9999`` in conformance.md
    §1.1); given one, every action that writes ``modifiedAt`` was silently ignored (the reducer
    hunt, round 14)."""
    chat = {"resource": "c", "title": "t", "status": 1, "modifiedAt": "x", "turns": []}
    started = {
        "type": "chat/turnStarted",
        "turnId": "t1",
        "message": {"text": "hi", "origin": {"kind": "user"}},
    }
    for out in (reduce_chat(chat, started, lambda: 9999), reduce("chat", chat, started, now_ms=lambda: 9999)):
        assert out["activeTurn"]["id"] == "t1" and out["modifiedAt"] == "1970-01-01T00:00:09.999Z"
