"""Off-type input as the reference reducers treat it: payloads that are not objects, lookups that
reach entries they cannot read, JavaScript numbers, strict equality and spreads.

The spec is silent on most of these; each expected value is read off the reference's behaviour
(reducer-rules §3 says the reducers reproduce it, off-type input included), not produced by the
code under test. Each case runs on a short list and, where the reducers index long ones, on a long
list too, so both paths must agree.
"""

from __future__ import annotations

import pytest

from ahp_lab.protocol.jsonvalue import strip_nulls
from ahp_lab.reducers import REDUCERS

from .samples import apply, chat_state, started, tool_call

chat, session = REDUCERS["chat"], REDUCERS["session"]


SESSION = {"provider": "p", "title": "t", "status": 1, "lifecycle": "ready"}


@pytest.mark.parametrize(
    "action",
    [
        {"type": "session/chatAdded", "summary": {"resource": "ahp-chat:/c", "title": "c", "status": 1}},
        {"type": "session/activeClientSet", "activeClient": {"clientId": "c1", "tools": []}},
    ],
)
def test_upserts_that_do_not_create_their_list_are_no_ops_without_it(action):
    # reducer-rules §3.6 names the actions that create a missing collection; these two are not
    # among them (the reference reads the missing list and throws), so nothing changes.
    assert session(SESSION, action, 9999) is SESSION


def test_a_payload_that_is_not_an_object_is_upserted_as_the_reference_does():
    # The reference looks the entry up by `payload.key` (undefined for a string or number) and
    # appends the payload as sent when nothing matches; an entry without the key matches undefined.
    state = {**SESSION, "chats": [{"resource": "ahp-chat:/a"}], "activeClients": []}
    state = session(state, {"type": "session/chatAdded", "summary": "x"}, 9999)
    assert state["chats"] == [{"resource": "ahp-chat:/a"}, "x"]
    state = session(state, {"type": "session/chatAdded", "summary": {"title": "no resource"}}, 9999)
    assert state["chats"] == [{"resource": "ahp-chat:/a"}, {"title": "no resource"}]  # replaced "x"
    state = session(state, {"type": "session/activeClientSet", "activeClient": 7}, 9999)
    assert state["activeClients"] == [7]
    state = session(state, {"type": "session/customizationUpdated", "customization": False}, 9999)
    assert state["customizations"] == [False]
    # A string entry's kind reads as undefined, which is not toolClientExecution: it awaits the user.
    state = session(state, {"type": "session/inputNeededSet", "request": "r"}, 9999)
    assert state["inputNeeded"] == ["r"] and state["status"] == 24
    # A missing payload is what the reference throws on: the state is unchanged.
    assert session(state, {"type": "session/chatAdded"}, 9999) is state


def test_a_missing_working_directory_is_appended_as_null_once():
    state = session(
        {**SESSION, "workingDirectories": ["file:///a"]}, {"type": "session/workingDirectorySet"}, 9999
    )
    assert state["workingDirectories"] == ["file:///a", None]
    assert session(state, {"type": "session/workingDirectorySet"}, 9999) is state


def test_an_input_request_that_is_not_an_object_is_appended_as_sent():
    state = apply(started(), {"type": "chat/inputRequested", "request": "ab"})
    assert state["activeTurn"]["responseParts"] == [{"kind": "inputRequest", "request": "ab"}]


def test_loaded_turns_without_an_id_are_dropped_when_a_turn_without_an_id_is_loaded_already():
    # `turn.id` is undefined for a string turn and for a turn without an id: undefined === undefined.
    state = chat_state(turns=["old"])
    state = chat(state, {"type": "chat/turnsLoaded", "turns": [{"state": "complete"}, {"id": "t0"}]}, 9999)
    assert state["turns"] == [{"id": "t0"}, "old"]


def test_small_channel_upserts_take_a_payload_that_is_not_an_object():
    changeset = REDUCERS["changeset"]
    state = changeset(
        {"status": "ready", "files": [{"id": "f1"}]}, {"type": "changeset/fileSet", "file": "x"}, 9999
    )
    assert state["files"] == [{"id": "f1"}, "x"]
    annotations = REDUCERS["annotations"]
    state = annotations({"annotations": []}, {"type": "annotations/set", "annotation": 1}, 9999)
    assert state["annotations"] == [1]


def test_a_lookup_that_reaches_a_null_entry_fails_as_the_reference_does():
    # `files.findIndex(f => f.id === id)` reads `null.id` before it reaches "f1", and throws: no-op.
    changeset = REDUCERS["changeset"]
    state = {"status": "ready", "files": [None, {"id": "f1"}]}
    assert changeset(state, {"type": "changeset/fileRemoved", "fileId": "f1"}, 9999) is state
    # An earlier match is found before the null entry is read.
    state = {"status": "ready", "files": [{"id": "f1"}, None]}
    assert changeset(state, {"type": "changeset/fileRemoved", "fileId": "f1"}, 9999)["files"] == [None]


def test_terminal_data_grows_text_by_javascript_plus_and_ids_compare_strictly():
    terminal = REDUCERS["terminal"]
    state = {"title": "t", "content": [{"type": "unclassified", "value": "$ "}]}
    assert terminal(state, {"type": "terminal/data", "data": 5}, 9999)["content"][0]["value"] == "$ 5"
    assert terminal(state, {"type": "terminal/data"}, 9999)["content"][0]["value"] == "$ undefined"
    # undefined + undefined is NaN, serialized as null: the value is absent.
    empty = {"title": "t", "content": [{"type": "unclassified"}]}
    assert terminal(empty, {"type": "terminal/data"}, 9999)["content"] == [{"type": "unclassified"}]
    # true !== 1: a boolean command id does not finish command 1.
    running = {
        "title": "t",
        "content": [{"type": "command", "commandId": 1, "output": "", "isComplete": False}],
    }
    assert terminal(running, {"type": "terminal/commandFinished", "commandId": True}, 9999) is running
    # A missing content list is what the reference throws on: nothing changes.
    bare = {"title": "t"}
    assert terminal(bare, {"type": "terminal/data", "data": "x"}, 9999) is bare


def test_a_missing_payload_is_appended_as_null_to_an_empty_list_only():
    # The reference reads the payload's key inside its search: nothing is read on an empty list,
    # and the missing payload is appended; on a non-empty list the read throws (no change).
    changeset = REDUCERS["changeset"]
    empty = {"status": "ready", "files": []}
    assert changeset(empty, {"type": "changeset/fileSet"}, 9999)["files"] == [None]
    full = {"status": "ready", "files": [{"id": "f1"}]}
    assert changeset(full, {"type": "changeset/fileSet"}, 9999) is full
    assert session({**SESSION, "chats": []}, {"type": "session/chatAdded"}, 9999)["chats"] == [None]
    # inputNeededSet then reads the new entry's kind for the status, which throws: no change.
    assert session(SESSION, {"type": "session/inputNeededSet"}, 9999) is SESSION


def test_changeset_review_flags_compare_strictly_and_cleared_reads_the_length():
    changeset = REDUCERS["changeset"]
    state = {"status": "ready", "files": [{"id": "f1", "reviewed": True}]}
    out = changeset(state, {"type": "changeset/filesReviewChanged", "files": ["f1"], "reviewed": 1}, 9999)
    assert out["files"] == [{"id": "f1", "reviewed": 1}]  # true !== 1
    assert changeset({"status": "ready", "files": False}, {"type": "changeset/cleared"}, 9999)["files"] == []
    kept = {"status": "ready", "files": []}
    assert changeset(kept, {"type": "changeset/cleared"}, 9999) is kept


def test_an_annotation_entry_is_set_only_into_an_entries_list_the_annotation_has():
    # entrySet is not among the actions that create a missing collection (reducer-rules §3.6):
    # the reference searches `annotation.entries`, which throws when it is missing or not a list.
    annotations = REDUCERS["annotations"]
    entry = {"type": "annotations/entrySet", "annotationId": "a1", "entry": {"id": "e1", "text": "hi"}}
    bare = {"annotations": [{"id": "a1", "resource": "file:///x"}]}
    assert annotations(bare, entry, 9999) is bare
    odd = {"annotations": [{"id": "a1", "entries": "e1"}]}
    assert annotations(odd, entry, 9999) is odd
    # A missing entry is appended as null to empty entries, and is a no-op on non-empty ones.
    empty = {"annotations": [{"id": "a1", "entries": []}]}
    missing = {"type": "annotations/entrySet", "annotationId": "a1"}
    assert annotations(empty, missing, 9999)["annotations"] == [{"id": "a1", "entries": [None]}]
    full = annotations(empty, entry, 9999)
    assert full["annotations"] == [{"id": "a1", "entries": [{"id": "e1", "text": "hi"}]}]
    assert annotations(full, missing, 9999) is full


def test_working_directory_set_on_an_off_type_list_behaves_as_the_reference_does():
    # `(state.workingDirectories ?? []).includes(dir)`, then `[...list, dir]`.
    text = {**SESSION, "workingDirectories": "file:///ab"}
    assert session(text, {"type": "session/workingDirectorySet", "directory": "file:///a"}, 9999) is text
    out = session(text, {"type": "session/workingDirectorySet", "directory": "x"}, 9999)
    assert out["workingDirectories"] == [*"file:///ab", "x"]
    for odd in (5, True, {"a": 1}):  # no includes: the reference throws
        state = {**SESSION, "workingDirectories": odd}
        assert session(state, {"type": "session/workingDirectorySet", "directory": "x"}, 9999) is state


def test_an_operation_status_change_needs_an_operations_list():
    # `state.operations.findIndex(...)`: a string's characters are not operations.
    changeset = REDUCERS["changeset"]
    state = {"status": "ready", "files": [], "operations": "ab"}
    assert changeset(state, {"type": "changeset/operationStatusChanged", "status": "running"}, 9999) is state


def _big(entries: list, pad: dict) -> list:
    """``entries`` behind enough padding that the reducer indexes the list instead of scanning it."""
    return [dict(pad, id=f"pad-{i}", clientId=f"pad-{i}", resource=f"pad-{i}") for i in range(40)] + entries


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize(
    "field,entries,action",
    [
        ("chats", [None, {"resource": "a"}], {"type": "session/chatRemoved", "chat": "a"}),
        ("chats", [None], {"type": "session/chatAdded", "summary": {"resource": "b"}}),
        (
            "chats",
            [None, {"resource": "a"}],
            {"type": "session/chatUpdated", "chat": "a", "changes": {"title": "x"}},
        ),
        ("activeClients", [None], {"type": "session/activeClientSet", "activeClient": {"clientId": "c"}}),
        (
            "activeClients",
            [None, {"clientId": "c"}],
            {"type": "session/activeClientRemoved", "clientId": "c"},
        ),
        (
            "inputNeeded",
            [None],
            {"type": "session/inputNeededSet", "request": {"id": "r", "kind": "chatInput"}},
        ),
        ("inputNeeded", [None, {"id": "r"}], {"type": "session/inputNeededRemoved", "id": "r"}),
        ("customizations", [None], {"type": "session/customizationUpdated", "customization": {"id": "x"}}),
        (
            "customizations",
            [None, {"id": "p", "children": [{"id": "x"}]}],
            {"type": "session/customizationToggled", "id": "x", "enabled": False},
        ),
        (
            "customizations",
            [{"id": "p", "children": [None, {"id": "x"}]}],
            {"type": "session/customizationToggled", "id": "x", "enabled": False},
        ),
    ],
)
def test_a_search_that_reaches_a_null_entry_first_fails_as_the_reference_does(size, field, entries, action):
    # `list.findIndex(c => c.<key> === …)` reads a member of the null entry and throws: no change,
    # whether the list is scanned (short) or found through an index (long).
    if size == "large":
        entries = _big(entries, {"kind": "toolClientExecution"} if field == "inputNeeded" else {})
    state = {**SESSION, "status": 24, field: entries}
    assert session(state, action, 9999) is state


def test_a_match_before_a_null_entry_is_found_and_the_status_search_still_stops_at_the_null():
    # The match comes first, so the search succeeds; inputNeeded's status then runs
    # `some(awaitsUser)`, which reaches the null (nothing before it awaits the user) and throws.
    state = {**SESSION, "chats": [{"resource": "a"}, None]}
    assert session(state, {"type": "session/chatRemoved", "chat": "a"}, 9999)["chats"] == [None]
    for entries in ([{"id": "a"}, None], _big([{"id": "a"}, None], {"kind": "toolClientExecution"})):
        state = {**SESSION, "status": 24, "inputNeeded": entries}
        assert session(state, {"type": "session/inputNeededRemoved", "id": "a"}, 9999) is state
    # A user-blocking entry before the null ends `some` first: no throw.
    state = {**SESSION, "status": 1, "inputNeeded": [{"id": "a"}, None]}
    out = session(
        state, {"type": "session/inputNeededSet", "request": {"id": "a", "kind": "chatInput"}}, 9999
    )
    assert out["status"] == 24


@pytest.mark.parametrize("size", ["small", "large"])
def test_the_child_search_fails_on_a_container_it_cannot_search(size):
    # Children that are truthy but not an array have no findIndex. The toggle's loop reaches the
    # containers up to its match; removal and the MCP actions map over every container.
    def tree(*containers):
        pad = [{"id": f"pad-{i}", "type": "plugin", "children": [{"id": f"c-{i}"}]} for i in range(20)]
        return [*(pad if size == "large" else []), *containers]

    toggle = {"type": "session/customizationToggled", "id": "x", "enabled": False}
    remove = {"type": "session/customizationRemoved", "id": "x"}
    stop = {"type": "session/mcpServerStopRequested", "id": "m"}
    bad_first = {
        **SESSION,
        "customizations": tree({"id": "p", "children": "abc"}, {"id": "q", "children": [{"id": "x"}]}),
    }
    assert session(bad_first, toggle, 9999) is bad_first
    bad_after = {
        **SESSION,
        "customizations": tree({"id": "q", "children": [{"id": "x"}]}, {"id": "p", "children": 5}),
    }
    toggled = session(bad_after, toggle, 9999)
    assert toggled["customizations"][-2]["children"] == [{"id": "x", "enabled": False}]  # reached first
    assert session(bad_after, remove, 9999) is bad_after
    null_later = {
        **SESSION,
        "customizations": tree({"id": "q", "children": [{"id": "x"}]}, {"id": "r", "children": [None]}),
    }
    assert session(null_later, remove, 9999) is null_later
    mcp = {
        **SESSION,
        "customizations": tree(
            {"id": "p", "children": [{"id": "m", "type": "mcpServer"}]}, {"id": "q", "children": True}
        ),
    }
    assert session(mcp, stop, 9999) is mcp
    # Falsy children and MCP servers are skipped before anything is read.
    fine = {
        **SESSION,
        "customizations": tree(
            {"id": "p", "children": ""},
            {"id": "s", "type": "mcpServer", "children": "x"},
            {"id": "q", "children": [{"id": "x"}]},
        ),
    }
    assert session(fine, remove, 9999)["customizations"][-1]["children"] == []


def test_chat_removed_compares_the_default_chat_strictly_and_chat_updated_needs_changes():
    state = {**SESSION, "chats": [{"resource": 1}], "defaultChat": True}
    assert session(state, {"type": "session/chatRemoved", "chat": 1}, 9999) == {
        **SESSION,
        "chats": [],
        "defaultChat": True,
    }
    state = {**SESSION, "chats": ["ab"]}
    assert session(state, {"type": "session/chatUpdated"}, 9999) is state


def test_numbers_behave_as_javascript_doubles():
    # JavaScript holds every number as a double: integers beyond 2**53 round, sums beyond the
    # largest double are Infinity, which JSON carries as null (absent).
    terminal = REDUCERS["terminal"]
    big = {"title": "t", "content": [{"type": "unclassified", "value": 2**53}]}
    assert terminal(big, {"type": "terminal/data", "data": 1}, 9999)["content"][0]["value"] == 2**53
    huge = {"title": "t", "content": [{"type": "unclassified", "value": 1e308}]}
    assert terminal(huge, {"type": "terminal/data", "data": 1e308}, 9999)["content"] == [
        {"type": "unclassified"}
    ]
    # An integer literal too large for a double is Infinity, not an error.
    vast = {"title": "t", "content": [{"type": "unclassified", "value": 10**400}]}
    assert terminal(vast, {"type": "terminal/data", "data": "x"}, 9999)["content"][0]["value"] == "Infinityx"
    # Ids beyond 2**53 that round to the same double are ===.
    state = {**SESSION, "chats": [{"resource": 2**53}]}
    assert session(state, {"type": "session/chatRemoved", "chat": 2**53 + 1}, 9999)["chats"] == []
    # Status arithmetic reads Number(): no "_" separators, no non-ASCII digits.
    assert (
        session({**SESSION, "status": "0x1_0"}, {"type": "session/isReadChanged", "isRead": True}, 9999)[
            "status"
        ]
        == 32
    )
    assert (
        session({**SESSION, "status": "\u0663"}, {"type": "session/isReadChanged", "isRead": True}, 9999)[
            "status"
        ]
        == 32
    )


@pytest.mark.parametrize("kind", ["root", "session"])
def test_config_changed_spreads_any_truthy_config(kind):
    # `if (!state.config) return state;` then `{...state.config, values: …}`.
    base = SESSION if kind == "session" else {}
    action = {"type": f"{kind}/configChanged", "config": {"x": 1}}
    assert REDUCERS[kind]({**base, "config": "ab"}, action, 9999)["config"] == {
        "0": "a",
        "1": "b",
        "values": {"x": 1},
    }
    assert REDUCERS[kind]({**base, "config": 5}, action, 9999)["config"] == {"values": {"x": 1}}
    assert REDUCERS[kind]({**base, "config": [7]}, action, 9999)["config"] == {"0": 7, "values": {"x": 1}}
    falsy = {**base, "config": ""}
    assert REDUCERS[kind](falsy, action, 9999) is falsy


def test_cleared_reads_the_length_as_the_reference_does():
    changeset = REDUCERS["changeset"]
    state = {"status": "ready", "files": {"length": 0}}
    assert changeset(state, {"type": "changeset/cleared"}, 9999) is state


def _chat_with(parts, status=8, **extra):
    return chat_state(status=status, activeTurn={"id": "t1", "responseParts": parts}, **extra)


STREAMING_CALL = {
    "kind": "toolCall",
    "toolCall": {"toolCallId": "c", "toolName": "x", "displayName": "x", "status": "streaming"},
}


@pytest.mark.parametrize(
    "current,offered,kept",
    [
        (None, {"kind": "host"}, {"kind": "host"}),  # any kind that is not a client
        ({"kind": "mcp", "customizationId": "m"}, {"x": 1}, {"x": 1}),
        (None, "x", "x"),
        (
            {"kind": "client", "clientId": "a"},
            {"kind": "mcp", "customizationId": "m"},
            {"kind": "client", "clientId": "a"},
        ),
        (
            {"kind": "client", "clientId": "a"},
            {"kind": "client", "clientId": "a", "tools": 1},
            {"kind": "client", "clientId": "a", "tools": 1},
        ),
        (
            {"kind": "mcp", "customizationId": "m"},
            {"kind": "client", "clientId": "b"},
            {"kind": "mcp", "customizationId": "m"},
        ),
    ],
)
def test_a_ready_call_takes_any_new_contributor_but_a_client(current, offered, kept):
    call = {**STREAMING_CALL["toolCall"], **({"contributor": current} if current else {})}
    state = _chat_with([{"kind": "toolCall", "toolCall": call}])
    out = apply(
        state,
        {
            "type": "chat/toolCallReady",
            "toolCallId": "c",
            "invocationMessage": "m",
            "confirmed": "not-needed",
            "contributor": offered,
        },
    )
    assert tool_call(out, "c").get("contributor") == kept


def test_chat_status_is_rewritten_unless_it_is_strictly_the_derived_one():
    # refreshSummaryStatus compares with ===: an idle chat's stored true is not the derived 1
    state = chat_state(status=True)
    out = apply(state, {"type": "chat/toolCallReady", "toolCallId": "zz"})
    assert out["status"] == 1 and out["status"] is not True


def test_pending_messages_are_filtered_as_the_reference_filters_them():
    # turnStarted with a queuedMessageId filters any truthy queue and drops it when empty
    state = chat_state(status=1, queuedMessages=[])
    out = chat(state, {"type": "chat/turnStarted", "turnId": "t2", "queuedMessageId": "q"}, 9999)
    assert "queuedMessages" not in out and out["activeTurn"]["id"] == "t2"
    for queue in ("abc", [None]):  # no filter on a string; a null entry's id cannot be read
        odd = {**state, "queuedMessages": queue}
        assert chat(odd, {"type": "chat/turnStarted", "turnId": "t2", "queuedMessageId": "q"}, 9999) is odd
    odd = {**state, "queuedMessages": [{"id": "a"}, None]}
    assert chat(odd, {"type": "chat/pendingMessageRemoved", "kind": "queued", "id": "a"}, 9999) is odd


def test_reordering_places_the_last_entry_of_each_listed_id():
    # new Map(existing.map(m => [m.id, m])) keeps the last entry per id, and every entry whose
    # id was placed is left out of the rest.
    state = chat_state(
        status=1, queuedMessages=[{"id": "a", "message": 1}, {"id": "a", "message": 2}, {"id": "b"}]
    )
    out = chat(state, {"type": "chat/queuedMessagesReordered", "order": ["b", "a"]}, 9999)
    assert out["queuedMessages"] == [{"id": "b"}, {"id": "a", "message": 2}]
    out = chat(state, {"type": "chat/queuedMessagesReordered", "order": ["a"]}, 9999)
    assert out["queuedMessages"] == [{"id": "a", "message": 2}, {"id": "b"}]
    nulls = {**state, "queuedMessages": [{"id": "a"}, None]}
    assert chat(nulls, {"type": "chat/queuedMessagesReordered", "order": ["a"]}, 9999) is nulls


def test_a_turn_ends_into_the_turns_it_can_spread():
    state = _chat_with([])
    del state["turns"]
    assert chat(state, {"type": "chat/turnComplete", "turnId": "t1"}, 9999) is state
    out = chat({**state, "turns": "ab"}, {"type": "chat/turnComplete", "turnId": "t1"}, 9999)
    assert out["turns"][:2] == ["a", "b"] and out["turns"][2]["id"] == "t1"


def test_parts_spread_as_the_reference_spreads_them():
    out = apply(
        _chat_with("ab"),
        {"type": "chat/responsePart", "part": {"kind": "markdown", "id": "p", "content": ""}},
    )
    assert out["activeTurn"]["responseParts"] == ["a", "b", {"kind": "markdown", "id": "p", "content": ""}]


def test_the_turn_end_rebuilds_a_force_cancelled_part():
    # T13 returns a fresh {kind, toolCall}; a call that is not an object has no status, so it is
    # unfinished, and cancels to a bare call.
    part = {
        "kind": "toolCall",
        "_meta": {"p": 1},
        "extra": 2,
        "toolCall": {"toolCallId": "c", "status": "running"},
    }
    out = apply(_chat_with([part, {"kind": "toolCall", "toolCall": "x"}]), {"type": "chat/turnComplete"})
    assert out["turns"][0]["responseParts"] == [
        {"kind": "toolCall", "toolCall": {"toolCallId": "c", "status": "cancelled", "reason": "skipped"}},
        {"kind": "toolCall", "toolCall": {"status": "cancelled", "reason": "skipped"}},
    ]


def test_confirmation_options_and_auth_results_are_read_as_the_reference_reads_them():
    pending = {**STREAMING_CALL["toolCall"], "status": "pending-confirmation", "options": "abc"}
    state = _chat_with([{"kind": "toolCall", "toolCall": pending}], status=24)
    confirm = {"type": "chat/toolCallConfirmed", "toolCallId": "c", "approved": True, "selectedOptionId": "o"}
    assert apply(state, confirm) is state  # "abc".find is not a function
    pending = {**pending, "options": [None, {"id": "o"}]}
    state = _chat_with([{"kind": "toolCall", "toolCall": pending}], status=24)
    assert apply(state, confirm) is state  # null.id
    auth = {
        **STREAMING_CALL["toolCall"],
        "status": "auth-required",
        "contributor": {"kind": "mcp", "customizationId": "m"},
    }
    state = _chat_with([{"kind": "toolCall", "toolCall": auth}], status=24)
    assert apply(state, {"type": "chat/toolCallComplete", "toolCallId": "c"}) is state  # undefined.success


def test_usage_lands_on_whatever_active_turn_the_check_lets_through():
    state = chat_state(status=8, activeTurn="x")
    out = chat(state, {"type": "chat/usage", "usage": {"inputTokens": 1}}, 9999)
    assert out["activeTurn"] == {"0": "x", "usage": {"inputTokens": 1}}


def _long(parts: list, size: str) -> list:
    """``parts`` after enough finished markdown parts that the reducer indexes them (size "large")."""
    pad = (
        [{"kind": "markdown", "id": f"pad-{i}", "content": "x"} for i in range(20)] if size == "large" else []
    )
    return [*pad, *parts]


MD = {"kind": "markdown", "id": "p", "content": "a"}
RUNNING_CALL = {
    "kind": "toolCall",
    "toolCall": {"toolCallId": "c", "toolName": "x", "displayName": "x", "status": "running"},
}
OPEN_REQUEST = {"kind": "inputRequest", "request": {"id": "r"}}


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize(
    "parts,action",
    [
        # `'id' in part` throws on a null or primitive part before the target, and so does
        # `part.toolCall.toolCallId` on a tool-call part without its call
        ([None, MD], {"type": "chat/delta", "partId": "p", "content": "b"}),
        (["x", MD], {"type": "chat/delta", "partId": "p", "content": "b"}),
        ([{"kind": "toolCall"}, MD], {"type": "chat/delta", "partId": "p", "content": "b"}),
        # the tool-call map reads every part: a bad part anywhere, matched or not
        ([RUNNING_CALL, None], {"type": "chat/toolCallContentChanged", "toolCallId": "c", "content": []}),
        (
            [RUNNING_CALL, {"kind": "toolCall"}],
            {"type": "chat/toolCallContentChanged", "toolCallId": "c", "content": []},
        ),
        ([None], {"type": "chat/toolCallReady", "toolCallId": "zz"}),
        # the end of the turn maps every part
        ([None], {"type": "chat/turnComplete"}),
        ([{"kind": "toolCall"}], {"type": "chat/turnCancelled"}),
        # findIndex for an open request reads a null part, or an open part without a request
        ([None], {"type": "chat/inputRequested", "request": {"id": "r"}}),
        (
            [None, OPEN_REQUEST],
            {"type": "chat/inputAnswerChanged", "requestId": "r", "questionId": "q", "answer": 1},
        ),
        (
            [{"kind": "inputRequest"}, OPEN_REQUEST],
            {"type": "chat/inputCompleted", "requestId": "r", "response": "accept"},
        ),
        # the status scans after the change: no open request is left, and a null part comes next
        ([OPEN_REQUEST, None], {"type": "chat/inputCompleted", "requestId": "r", "response": "accept"}),
    ],
)
def test_a_part_the_reference_cannot_read_fails_the_search_that_reaches_it(size, parts, action):
    state = _chat_with(_long(parts, size), status=8)
    assert apply(state, action) is state


@pytest.mark.parametrize("size", ["small", "large"])
def test_parts_after_the_match_or_harmless_to_a_search_do_not_fail_it(size):
    state = _chat_with(_long([MD, None], size))
    out = apply(state, {"type": "chat/delta", "partId": "p", "content": "b"})
    assert out["activeTurn"]["responseParts"][-2]["content"] == "ab"
    # a string part has no kind: the tool-call map passes it
    state = _chat_with(_long(["x", RUNNING_CALL], size))
    out = apply(
        state,
        {
            "type": "chat/toolCallContentChanged",
            "toolCallId": "c",
            "content": [{"type": "text", "text": "t"}],
        },
    )
    assert out["activeTurn"]["responseParts"][-1]["toolCall"]["content"] == [{"type": "text", "text": "t"}]
    # with no partId, the first part whose id reads as undefined is the match (a call that is not
    # an object has none): the delta changes nothing
    state = _chat_with(
        _long([{"kind": "toolCall", "toolCall": "x"}, {"kind": "markdown", "content": "a"}], size)
    )
    assert apply(state, {"type": "chat/delta", "content": "b"}) == state


@pytest.mark.parametrize("active", ["", 0, "x", {"id": "t1"}, {"id": "t1", "responseParts": "ab"}])
def test_status_derivation_on_an_active_turn_without_parts_fails_as_the_reference_does(active):
    # refreshSummaryStatus runs `activeTurn?.responseParts.some(...)` even when the call was not found
    state = chat_state(status=8, activeTurn=active)
    assert chat(state, {"type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "c"}, 9999) is state


def test_answers_are_written_as_javascript_writes_object_members():
    # `answers[questionId] = answer` with "__proto__" sets the prototype, not an own key; a request
    # that is not an object (matched by a missing requestId) spreads by index.
    state = _chat_with([OPEN_REQUEST])
    out = apply(
        state,
        {"type": "chat/inputAnswerChanged", "requestId": "r", "questionId": "__proto__", "answer": {"v": 1}},
    )
    assert out["activeTurn"]["responseParts"][0]["request"] == {"id": "r"}
    state = _chat_with([{"kind": "inputRequest", "request": "ab"}])
    out = apply(state, {"type": "chat/inputAnswerChanged", "questionId": "q", "answer": 1})
    assert out["activeTurn"]["responseParts"][0]["request"] == {"0": "a", "1": "b", "answers": {"q": 1}}


def test_radix_strings_and_stored_infinities_read_as_javascript_numbers():
    # Number("0x20000000000001") is a double: 2**53 + 1 rounds to 2**53, whose low bits are 0.
    out = session(
        {**SESSION, "status": "0x20000000000001"}, {"type": "session/isReadChanged", "isRead": False}, 9999
    )
    assert out["status"] == 0
    # 1e400 parses to Infinity, which JSON.stringify writes as null: the member is absent.
    assert strip_nulls({"durationMs": float("inf"), "values": [float("-inf"), 1]}) == {"values": [None, 1]}


def test_a_tool_call_action_on_a_long_turn_ignores_a_part_another_version_appended():
    """The reducers are pure: a tool-call action on a turn of more than 16 parts took a part that
    another version of the chat appended at the same position (a null part, on a client's optimistic
    branch) for one of its own, and was dropped as if the reference had thrown (a reducer divergence
    hunt, round 7): the call stayed running."""
    chat = REDUCERS["chat"]
    parts = [{"kind": "markdown", "id": f"m{i}", "content": "x"} for i in range(16)]
    call = {
        "toolCallId": "tc",
        "toolName": "t",
        "displayName": "T",
        "status": "running",
        "invocationMessage": "m",
    }
    parts.append({"kind": "toolCall", "toolCall": call})
    s0 = {"title": "c", "status": 8, "turns": [], "activeTurn": {"id": "A", "responseParts": parts}}
    chat(s0, {"type": "chat/toolCallDelta", "turnId": "A", "toolCallId": "zz", "content": "x"}, 0)  # indexes
    markdown = {"kind": "markdown", "id": "m99", "content": "y"}
    b = chat(s0, {"type": "chat/responsePart", "turnId": "A", "part": markdown}, 0)
    chat(s0, {"type": "chat/responsePart", "turnId": "A", "part": None}, 0)  # another branch, same position
    result = {"success": True, "pastTenseMessage": "done"}
    done = chat(b, {"type": "chat/toolCallComplete", "turnId": "A", "toolCallId": "tc", "result": result}, 0)
    assert done["activeTurn"]["responseParts"][16]["toolCall"]["status"] == "completed"


@pytest.mark.parametrize(
    ("dirs", "directory", "throws"),
    [
        ({}, "a", True),
        (True, "a", True),
        (7, "a", True),
        ("a/b", "b", True),
        ("a/b", "z", False),
        (0, "a", False),
    ],
)
def test_a_working_directory_removed_from_an_off_type_list_throws_where_the_reference_does(
    dirs, directory, throws
):
    """The reference reads ``workingDirectories.indexOf``, then ``splice``s a copy: an object, a
    number or ``true`` has no ``indexOf``, a string finds a substring and has no ``splice``; a
    falsy one is left as it is. ``{}`` was a no-op here and ``true`` threw by accident (a
    verification round)."""
    state = {**SESSION, "workingDirectories": dirs}
    action = {"type": "session/workingDirectoryRemoved", "directory": directory}
    assert session(state, action, 0) is state  # a host's reducer: a throw is a no-op
    if throws:
        with pytest.raises(TypeError, match="is not a function"):
            session.raising(state, action, 0)
    else:
        assert session.raising(state, action, 0) is state


_CHATS = {**SESSION, "chats": [{"resource": "c1", "title": "x", "status": 1}]}


@pytest.mark.parametrize(
    ("channel", "state", "action"),
    [
        # a list searched with findIndex: anything else has none
        ("annotations", {"annotations": "str"}, {"type": "annotations/set", "annotation": {"id": "a"}}),
        ("annotations", {}, {"type": "annotations/removed", "annotationId": "a"}),
        ("changeset", {"status": "ready", "files": {}}, {"type": "changeset/fileSet", "file": {"id": "f"}}),
        ("changeset", {"status": "ready", "files": None}, {"type": "changeset/fileRemoved", "fileId": "f"}),
        (
            "changeset",
            {"status": "ready", "files": [], "operations": None},
            {"type": "changeset/operationStatusChanged", "operationId": "o", "status": "idle"},
        ),
        (
            "annotations",
            {"annotations": [{"id": "a", "turnId": "t", "resource": "r", "resolved": False}]},
            {"type": "annotations/entrySet", "annotationId": "a", "entry": {"id": "e"}},
        ),
        ("session", SESSION, {"type": "session/chatAdded", "summary": {"resource": "c2"}}),
        ("session", SESSION, {"type": "session/chatRemoved", "chat": "c1"}),
        (
            "session",
            {**SESSION, "activeClients": 7},
            {"type": "session/activeClientRemoved", "clientId": "x"},
        ),
        ("session", {**SESSION, "inputNeeded": {}}, {"type": "session/inputNeededRemoved", "id": "x"}),
        (
            "session",
            {**SESSION, "customizations": "x"},
            {"type": "session/customizationUpdated", "customization": {"id": "a"}},
        ),
        # a missing item's key read inside the search of a non-empty list, or a missing request's kind
        ("session", _CHATS, {"type": "session/chatAdded"}),
        ("session", {**SESSION, "activeClients": [{"clientId": "x"}]}, {"type": "session/activeClientSet"}),
        ("session", SESSION, {"type": "session/inputNeededSet"}),
        # the changes of a chat found, destructured
        ("session", _CHATS, {"type": "session/chatUpdated", "chat": "c1"}),
    ],
)
def test_an_action_the_reference_throws_on_stops_the_replay_and_changes_nothing(channel, state, action):
    """Each of these throws in the reference (a search on what is not an array, a missing item's key
    read, the changes of a found chat destructured): a host's reducer leaves the state as it was,
    and the replay stops there (exit 3). They were no-ops in both, so a replay went on past them
    (reducer hunt round 9)."""
    reduce = REDUCERS[channel]
    assert reduce(state, action, 0) is state
    with pytest.raises(TypeError):
        reduce.raising(state, action, 0)


@pytest.mark.parametrize(
    ("channel", "state", "action"),
    [
        ("session", {**SESSION, "inputNeeded": None}, {"type": "session/inputNeededRemoved", "id": "x"}),
        ("session", {**SESSION, "chats": []}, {"type": "session/chatAdded"}),  # appended as null
        ("session", SESSION, {"type": "session/customizationUpdated", "customization": {"id": "a"}}),
        (
            "changeset",
            {"status": "ready", "files": []},
            {"type": "changeset/operationStatusChanged", "operationId": "o"},
        ),
        ("session", _CHATS, {"type": "session/chatUpdated", "chat": "c9"}),  # not found: not destructured
    ],
)
def test_their_neighbours_the_reference_takes_do_not_stop_the_replay(channel, state, action):
    """The guards the reference has: a falsy ``inputNeeded`` on removal, ``?? []`` for a missing
    customization tree, absent operations, an empty list searched, a chat not found."""
    REDUCERS[channel].raising(state, action, 0)


_C = {"resource": "ahp-chat:/1", "title": "t", "status": 1, "modifiedAt": "x", "turns": []}
_NO_PARTS = {"id": "T", "startedAt": "s", "message": {"text": "m"}}  # an active turn without responseParts
_PART = {"kind": "markdown", "id": "p", "content": ""}


@pytest.mark.parametrize(
    ("reducer", "state", "action"),
    [
        ("chat", _C, {"type": "chat/turnsLoaded", "turns": "x"}),
        ("chat", _C, {"type": "chat/turnsLoaded"}),
        ("chat", {**_C, "turns": True}, {"type": "chat/turnsLoaded", "turns": []}),
        ("chat", {**_C, "activeTurn": {**_NO_PARTS, "responseParts": []}}, {"type": "chat/inputRequested"}),
        ("chat", {**_C, "activeTurn": _NO_PARTS}, {"type": "chat/inputRequested", "request": {"id": "r"}}),
        (
            "chat",
            {**_C, "activeTurn": "x"},
            {"type": "chat/inputCompleted", "requestId": "r", "response": "accept"},
        ),
        (
            "chat",
            {**_C, "activeTurn": _NO_PARTS},
            {"type": "chat/inputAnswerChanged", "requestId": "r", "questionId": "q"},
        ),
        (
            "chat",
            {**_C, "queuedMessages": ""},
            {"type": "chat/pendingMessageSet", "kind": "queued", "id": "q"},
        ),
        (
            "chat",
            {**_C, "queuedMessages": {}},
            {"type": "chat/pendingMessageSet", "kind": "queued", "id": "q"},
        ),
        ("chat", {k: v for k, v in _C.items() if k != "turns"}, {"type": "chat/truncated", "turnId": "t1"}),
        (
            "chat",
            {**_C, "activeTurn": _NO_PARTS},
            {"type": "chat/delta", "turnId": "T", "partId": "p", "content": "x"},
        ),
        (
            "chat",
            {**_C, "activeTurn": _NO_PARTS},
            {"type": "chat/toolCallDelta", "turnId": "T", "toolCallId": "c"},
        ),
        (
            "chat",
            {**_C, "activeTurn": {**_NO_PARTS, "responseParts": "ab"}},
            {"type": "chat/turnComplete", "turnId": "T"},
        ),
        ("chat", {**_C, "activeTurn": _NO_PARTS}, {"type": "chat/error", "turnId": "T"}),
        ("chat", {**_C, "activeTurn": "ab"}, {"type": "chat/responsePart", "part": _PART}),
        (
            "chat",
            {**_C, "activeTurn": "ab"},
            {"type": "chat/toolCallDelta", "toolCallId": "c", "content": "x"},
        ),
        ("session", {**SESSION, "customizations": "x"}, {"type": "session/customizationToggled", "id": "a"}),
        ("session", {**SESSION, "customizations": {}}, {"type": "session/customizationRemoved", "id": "a"}),
        ("session", {**SESSION, "customizations": 1}, {"type": "session/mcpServerStartRequested", "id": "a"}),
    ],
)
def test_where_the_reference_throws_the_replay_stops_and_the_host_changes_nothing(reducer, state, action):
    """The reference throws (a member of undefined read, an array method of what is not an array):
    the reducers returned the state unchanged, as a host must, but the replay printed a state and
    exit 0 where the reference stops (reducer divergence hunt 12). The raising reducer raises."""
    with pytest.raises(TypeError):
        REDUCERS[reducer].raising(state, action, 9999)
    assert REDUCERS[reducer](state, action, 9999) is state
    # a falsy active turn or tree is none (``if (!list) return state``): a no-op, not a throw
    for field in ("activeTurn", "customizations"):
        if field in state and not isinstance(state[field], dict):
            quiet = {**state, field: 0}
            assert REDUCERS[reducer].raising(quiet, action, 9999) is quiet
