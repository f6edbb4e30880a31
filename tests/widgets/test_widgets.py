"""The anywidget classes without a browser: messages in, traitlets and messages out."""

import json

from ahp_lab.protocol.errors import ProtocolError
from ahp_lab.widgets import (
    ChatPane,
    Coalescer,
    CustomizationTree,
    InputQueue,
    ToolCallTimeline,
    TransitionInspector,
    Workbench,
)
from ahp_lab.widgets.demo import add_tool_calls, demo_source
from ahp_lab.widgets.fake import FakeSource

from .conftest import capture


def _bytes(w) -> int:
    """Size of the synced view state (without the bundled front-end code)."""
    state = {k: v for k, v in w.get_state().items() if k not in ("_esm", "_css")}
    return len(json.dumps(state, default=str))


# -- coalescing --------------------------------------------------------------------------------


def test_coalescer_without_loop_is_synchronous():
    calls = []
    c = Coalescer(lambda: calls.append(1), 30, get_loop=lambda: None)
    for _ in range(5):
        c.request()
    assert len(calls) == 5


def test_coalescer_bounds_syncs_per_second(loop, clock):
    calls = []
    c = Coalescer(lambda: calls.append(clock.now), 30, clock=clock, get_loop=lambda: loop)
    c.request()
    c.request()
    assert calls == [] and len(loop.pending) == 1  # scheduled, not run
    loop.advance(0)
    assert len(calls) == 1
    # a burst of 10,000 requests over one second: at most ~30 flushes
    for _i in range(10_000):
        c.request()
        loop.advance(0.0001)
    assert 25 <= len(calls) <= 32
    gaps = [b - a for a, b in zip(calls, calls[1:], strict=False)]
    assert min(gaps) >= 1 / 30 - 1e-9
    c.request()
    c.cancel()
    loop.advance(1)
    assert not loop.pending


def test_widget_burst_is_coalesced(loop, clock):
    src = demo_source()
    w = InputQueue(src, get_loop=lambda: loop, clock=clock, max_syncs_per_s=10)
    n0 = w._coalescer.flushes
    for i in range(200):
        src.apply(src.session, {"type": "session/titleChanged", "title": f"t{i}"})
    assert w._coalescer.flushes == n0  # nothing synced yet
    loop.advance(0.001)
    assert w._coalescer.flushes == n0 + 1
    for i in range(200):
        src.apply(src.session, {"type": "session/titleChanged", "title": f"u{i}"})
        loop.advance(0.005)  # one second of deltas
    assert w._coalescer.flushes - n0 <= 12
    w.max_syncs_per_s = 1000
    assert w.max_syncs_per_s == 1000


def test_no_running_loop_updates_synchronously():
    src = demo_source()
    w = CustomizationTree(src)
    src.apply(src.session, {"type": "session/customizationToggled", "id": "s-lint", "enabled": True})
    lint = [
        k for c in w.model["containers"] for g in c["groups"] for k in g["children"] if k["id"] == "s-lint"
    ][0]
    assert lint["effective"] is True


# -- dispatch and errors --------------------------------------------------------------------------


def test_click_dispatches_and_state_comes_back():
    src = demo_source()
    w = CustomizationTree(src)
    w._on_custom_msg(
        w,
        {
            "type": "dispatch",
            "channel": src.session,
            "action": {"type": "session/customizationToggled", "id": "m-files", "enabled": True},
        },
    )
    assert src.dispatched[-1] == (
        src.session,
        {"type": "session/customizationToggled", "id": "m-files", "enabled": True},
    )
    files = [c for c in w.model["containers"] if c["id"] == "m-files"][0]
    assert files["enabled"] is True and w.error == ""
    w._on_custom_msg(
        w,
        {
            "type": "dispatch",
            "channel": src.session,
            "action": {"type": "session/mcpServerStartRequested", "id": "m-files"},
        },
    )
    files = [c for c in w.model["containers"] if c["id"] == "m-files"][0]
    assert files["mcp"]["kind"] == "starting" and files["mcp"]["busy"]


def test_protocol_error_is_shown_not_raised():
    src = demo_source()
    w = InputQueue(src)

    def boom(channel, action):
        raise ProtocolError("approved must be a boolean, got 'yes'\nmore detail")

    src.dispatch = boom
    w._on_custom_msg(
        w,
        {
            "type": "dispatch",
            "channel": src.chat,
            "action": {"type": "chat/toolCallConfirmed", "approved": "yes"},
        },
    )
    assert w.error == "approved must be a boolean, got 'yes'" and w.error_count == 1
    src.dispatch = lambda c, a: (_ for _ in ()).throw(RuntimeError("host exploded"))
    w._on_custom_msg(w, {"type": "dispatch", "channel": src.chat, "action": {"type": "x"}})
    assert w.error == "host exploded"
    for bad in [
        None,
        [],
        {"type": "dispatch"},
        {"type": "dispatch", "channel": 5, "action": {}},
        {"type": "dispatch", "channel": "c", "action": {"type": 3}},
        {"type": "prompt", "text": ""},
        {"type": "authenticate", "resource": "r"},
        {"type": "window", "start": "x"},
        {"type": "more", "ref": 7},
        "junk",
    ]:
        w._on_custom_msg(w, bad)
    assert "needs" in w.error or "prompt" in w.error
    w._on_custom_msg(w, {"type": "clear_error"})
    assert w.error == ""


def test_prompt_and_authenticate():
    src = demo_source()
    chat = ChatPane(src)
    chat._on_custom_msg(chat, {"type": "prompt", "text": "hello"})
    inputs = InputQueue(src)
    inputs._on_custom_msg(
        inputs, {"type": "authenticate", "resource": "https://mcp.example/jira", "token": "t0k"}
    )
    assert src.prompts == ["hello"] and src.authentications == [("https://mcp.example/jira", "t0k")]


def test_rejected_dispatch_shows_up_in_the_log():
    src = demo_source()
    src.reject_reason = "tool call edit-1 is not pending confirmation"
    insp = TransitionInspector(src)
    sent = capture(insp)
    w = InputQueue(src)
    w._on_custom_msg(
        w,
        {
            "type": "dispatch",
            "channel": src.chat,
            "action": {
                "type": "chat/toolCallConfirmed",
                "turnId": "t2",
                "toolCallId": "edit-1",
                "approved": True,
                "confirmed": "user-action",
            },
        },
    )
    row = sent[-1]["rows"][-1]
    assert row["rejected"] and row["reason"].startswith("tool call edit-1")


# -- inspector windows ------------------------------------------------------------------------


def _big_log(n=10_000) -> FakeSource:
    src = FakeSource(reducers=None)
    for i in range(n):
        src.record(
            src.chat if i % 3 else src.session,
            {"type": "chat/delta" if i % 3 else "session/titleChanged", "i": i},
            {"i": i},
        )
    return src


def test_window_request_returns_the_right_rows():
    src = _big_log()
    w = TransitionInspector(src)
    sent = capture(w)
    w._on_custom_msg(w, {"type": "window", "start": 4000, "count": 50, "req": "k"})
    reply = sent[-1]
    assert (
        reply["type"] == "rows"
        and reply["req"] == "k"
        and reply["total"] == 10_000
        and reply["version"] == w.version
    )
    assert [r["seq"] for r in reply["rows"]] == list(range(4001, 4051)) and [r["i"] for r in reply["rows"]][
        :2
    ] == [4000, 4001]
    assert len(json.dumps(reply)) < 50 * 400
    # the synced state never carries the log
    assert _bytes(w) < 20_000
    # filtering bumps the version and re-indexes
    v = w.version
    w.filters = {"channel": src.session}
    assert w.version == v + 1 and w.total == 3334
    w._on_custom_msg(w, {"type": "window", "start": 0, "count": 3})
    assert [r["seq"] for r in sent[-1]["rows"]] == [1, 4, 7] and sent[-1]["version"] == w.version
    w._on_custom_msg(w, {"type": "window", "start": 99_999, "count": 10_000})
    assert sent[-1]["rows"] == [] and sent[-1]["start"] == 3334


def test_new_transitions_are_appended_incrementally():
    src = _big_log(100)
    w = TransitionInspector(src)
    sent = capture(w)
    src.record(src.chat, {"type": "chat/delta"}, {})
    assert (
        sent[-1]["type"] == "appended"
        and sent[-1]["total"] == 101
        and [r["seq"] for r in sent[-1]["rows"]] == [101]
    )
    # a burst larger than the tail sends only the tail
    w._coalescer._get_loop = lambda: None
    for _ in range(500):
        src.record(src.chat, {"type": "chat/delta"}, {})
    assert all(len(m["rows"]) <= w.APPEND_TAIL for m in sent)


def test_detail_and_time_travel():
    src = demo_source()
    wb = Workbench(src)
    insp = wb.inspector
    insp.selected_seq = 5
    assert insp.detail["seq"] == 5 and insp.detail["type"] == "chat/turnStarted"
    insp.time_travel = True
    assert wb.context.at_seq == 5
    for v in (wb.tree, wb.timeline, wb.inputs, wb.chat):
        assert v.read_only and v.at_seq == 5
    assert not insp.read_only and insp.at_seq == 5
    assert wb.timeline.model["total"] == 0 and wb.inputs.model["entries"] == []
    wb.tree._on_custom_msg(
        wb.tree,
        {
            "type": "dispatch",
            "channel": src.session,
            "action": {"type": "session/customizationToggled", "id": "s-lint", "enabled": True},
        },
    )
    assert "read-only" in wb.tree.error and src.dispatched == []
    insp.selected_seq = 30
    assert wb.context.at_seq == 30 and wb.timeline.model["total"] >= 4
    insp.time_travel = False
    assert wb.context.at_seq is None and not wb.tree.read_only
    assert wb.timeline.model["total"] == 7
    insp.selected_seq = 10_000
    assert insp.detail == {"missing": 10_000}


# -- timeline -----------------------------------------------------------------------------------


def test_timeline_window_traitlets_and_size():
    src = demo_source()
    add_tool_calls(src, 1000)
    w = ToolCallTimeline(src)
    assert w.model["total"] == 1007 and len(w.model["lanes"]) == 40
    w.window_start = 900
    assert w.model["lanes"][0]["index"] == 900
    w.selected = w.model["lanes"][3]["key"]
    assert w.model["detail"]["key"] == w.selected and w.model["detail"]["machine"]["current"] == "completed"
    assert _bytes(w) < 120_000
    # streaming deltas keep the synced model small
    src.apply(
        src.chat,
        {
            "type": "chat/toolCallStart",
            "turnId": "t2",
            "toolCallId": "s",
            "toolName": "w",
            "displayName": "W",
        },
    )
    for _i in range(300):
        src.apply(
            src.chat, {"type": "chat/toolCallDelta", "turnId": "t2", "toolCallId": "s", "content": "x" * 50}
        )
    assert w.model["total"] == 1008 and w._history.steps(src.chat, "t2\u241fs")[-1]["count"] == 300


def test_show_more_raises_the_limit(hostile):
    w = ToolCallTimeline(
        hostile,
    )
    w.selected = "t2\u241fbig-1"
    block = w.model["detail"]["content"][0]["block"]
    assert len(block["text"]) == 65536
    w._on_custom_msg(w, {"type": "more", "ref": block["ref"]})
    assert len(w.model["detail"]["content"][0]["block"]["text"]) == 4 * 65536


# -- chat pane ------------------------------------------------------------------------------------


def test_chat_hello_then_patches_with_appends_only():
    src = demo_source()
    w = ChatPane(src)
    sent = capture(w)
    src.apply(
        src.chat, {"type": "chat/delta", "turnId": "t2", "partId": "m2", "content": " ignored before hello"}
    )
    assert sent == []  # the view has not said hello yet
    w._on_custom_msg(w, {"type": "hello"})
    assert sent[-1]["type"] == "reset" and sent[-1]["view"]["turnCount"] == 1
    size_reset = len(json.dumps(sent[-1]))
    src.apply(src.chat, {"type": "chat/delta", "turnId": "t2", "partId": "m2", "content": " More text."})
    p = sent[-1]
    assert (
        p["type"] == "patch"
        and p["active"]["appends"] == [[0, " More text."]]
        and p["active"]["parts"] == []
        and p["turns"] == []
    )
    assert len(json.dumps(p)) < 200 < size_reset
    src.apply(
        src.chat,
        {
            "type": "chat/toolCallConfirmed",
            "turnId": "t2",
            "toolCallId": "edit-1",
            "approved": True,
            "confirmed": "user-action",
        },
    )
    p = sent[-1]
    assert [i for i, _ in p["active"]["parts"]] == [1] and p["active"]["parts"][0][1]["toolCall"][
        "status"
    ] == "running"
    src.apply(src.chat, {"type": "chat/turnComplete", "turnId": "t2", "duration": 1})
    p = sent[-1]
    assert p["active"] == {"reset": None} and [t["index"] for t in p["turns"]] == [1] and p["turnCount"] == 2
    # a truncation is not an append: the view is reset
    src.apply(src.chat, {"type": "chat/truncated"})
    assert sent[-1]["type"] == "reset" and sent[-1]["view"]["turnCount"] == 0


def test_chat_older_turns_window():
    src = demo_source()
    for i in range(30):
        src.apply(
            src.chat,
            {
                "type": "chat/turnStarted",
                "turnId": f"x{i}",
                "startedAt": "2025-01-01T00:00:00.000Z",
                "message": {"text": f"m{i}", "origin": {"kind": "user"}},
            },
        )
        src.apply(src.chat, {"type": "chat/turnComplete", "turnId": f"x{i}", "duration": 1})
    w = ChatPane(src)
    sent = capture(w)
    w._on_custom_msg(w, {"type": "hello"})
    assert sent[-1]["view"]["first"] == 11 and len(sent[-1]["view"]["turns"]) == 20
    w._on_custom_msg(w, {"type": "older", "before": 11, "count": 10})
    assert sent[-1]["first"] == 1 and len(sent[-1]["turns"]) == 10


def test_close_unsubscribes():
    src = demo_source()
    wb = Workbench(src)
    assert len(src._listeners) == 5
    wb.close()
    assert src._listeners == []


def test_views_survive_garbage_state():
    src = FakeSource(reducers=None)
    src.set_state(src.session, {"customizations": "nope", "inputNeeded": [1, None], "chats": 3})
    src.set_state(src.chat, ["not", "a", "chat"])
    wb = Workbench(src)
    sent = capture(wb.chat)
    wb.chat._on_custom_msg(wb.chat, {"type": "hello"})
    assert sent[-1]["view"]["active"] is None
    src.record(src.chat, {"type": None}, 42)
    assert all(v.error == "" for v in wb.views)
