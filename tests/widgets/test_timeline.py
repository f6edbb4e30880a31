import json

import pytest

from ahp_lab.widgets.demo import add_tool_calls, demo_source
from ahp_lab.widgets.fake import FakeSource
from ahp_lab.widgets.timeline import (
    ToolCallHistory,
    collect_tool_calls,
    timeline_view_model,
    tool_call_key,
    tool_call_steps,
)

from .conftest import WEIRD


def _history(src):
    h = ToolCallHistory()
    for t in src.transitions:
        h.feed(t)
    return h


def test_lanes_in_order_with_status_and_contributor(demo):
    vm = timeline_view_model(demo.state(demo.chat), _history(demo), channel=demo.chat)
    assert [(lane["toolCallId"], lane["status"]) for lane in vm["lanes"]] == [
        ("read-1", "completed"),
        ("edit-1", "pending-confirmation"),
        ("tests-1", "running"),
        ("jira-1", "auth-required"),
        ("shell-1", "pending-result-confirmation"),
        ("rm-1", "cancelled"),
        ("write-1", "streaming"),
    ]
    lanes = {lane["toolCallId"]: lane for lane in vm["lanes"]}
    assert lanes["tests-1"]["contributor"] == {"kind": "client", "label": "client vscode-1", "id": "vscode-1"}
    assert (
        lanes["jira-1"]["contributor"]["label"] == "mcp m-jira"
        and lanes["read-1"]["contributor"]["kind"] == "host"
    )
    assert lanes["tests-1"]["busy"] and lanes["edit-1"]["waiting"] and not lanes["read-1"]["active"]
    assert [s["status"] for s in lanes["rm-1"]["segments"]] == [
        "streaming",
        "pending-confirmation",
        "cancelled",
    ]
    assert vm["total"] == 7 and vm["counts"]["running"] == 1


def test_steps_record_cause_and_merge_deltas(demo):
    steps = tool_call_steps(demo.transitions, demo.chat)
    w = steps[tool_call_key("t2", "write-1")]
    assert [(s["action"], s["from"], s["to"], s["count"]) for s in w] == [
        ("chat/toolCallStart", None, "streaming", 1),
        ("chat/toolCallDelta", "streaming", "streaming", 3),
    ]
    assert w[1]["seqEnd"] > w[1]["seq"]
    rm = steps[tool_call_key("t2", "rm-1")]
    assert rm[-1]["action"] == "chat/toolCallConfirmed" and rm[-1]["origin"] == "client vscode-1"
    # the rejected second confirmation changed nothing and left no step
    assert len(rm) == 3
    tests = steps[tool_call_key("t2", "tests-1")]
    assert (
        tests[-1]["action"] == "chat/toolCallContentChanged"
        and tests[-1]["from"] == tests[-1]["to"] == "running"
    )


def test_turn_end_cancels_unfinished_calls(demo):
    demo.apply(demo.chat, {"type": "chat/turnCancelled", "turnId": "t2", "duration": 10})
    steps = tool_call_steps(demo.transitions, demo.chat)
    last = {k.split("\u241f")[1]: v[-1] for k, v in steps.items()}
    for tcid in ("edit-1", "tests-1", "jira-1", "shell-1", "write-1"):
        assert last[tcid]["to"] == "cancelled" and last[tcid]["action"] == "chat/turnCancelled"
    assert last["rm-1"]["action"] == "chat/toolCallConfirmed"  # already cancelled: untouched
    vm = timeline_view_model(
        demo.state(demo.chat),
        tool_call_steps(demo.transitions, demo.chat),
        channel=demo.chat,
        selected=tool_call_key("t2", "jira-1"),
    )
    d = vm["detail"]
    assert d["status"] == "cancelled" and d["reason"] == "skipped"
    assert [e["id"] for e in d["machine"]["edges"] if e["taken"]] == [
        "start",
        "S-R",
        "R-AR",
        "AR-X-end",
        "X-end",
    ]
    assert all(not lane["active"] for lane in vm["lanes"])


def test_selected_detail(demo):
    vm = timeline_view_model(
        demo.state(demo.chat), _history(demo), channel=demo.chat, selected=tool_call_key("t2", "write-1")
    )
    d = vm["detail"]
    assert d["partialInput"]["text"].startswith('{"path": "src/scan_helpers.py"')
    assert d["machine"]["current"] == "streaming"
    vm = timeline_view_model(
        demo.state(demo.chat), _history(demo), channel=demo.chat, selected=tool_call_key("t1", "read-1")
    )
    assert (
        vm["detail"]["pastTense"]["text"] == "Read src/tokenizer.py (212 lines)" and vm["detail"]["success"]
    )
    assert timeline_view_model(demo.state(demo.chat), None, selected="nope")["detail"] is None


def test_time_travel_hides_later_steps(demo):
    h = _history(demo)
    write_start = tool_call_steps(demo.transitions, demo.chat)[tool_call_key("t2", "write-1")][0]["seq"]
    past = demo.state_at(write_start)
    vm = timeline_view_model(
        past[demo.chat], h, channel=demo.chat, at_seq=write_start, selected=tool_call_key("t2", "write-1")
    )
    assert vm["detail"].get("stepCount", True)
    assert [s["seq"] for s in vm["detail"]["steps"]] == [write_start]
    assert vm["axis"]["max"] == write_start


def test_thousand_calls_window_is_bounded():
    src = demo_source()
    add_tool_calls(src, 1000)
    h = _history(src)
    chat = src.state(src.chat)
    assert len(collect_tool_calls(chat)) == 1007
    vm = timeline_view_model(chat, h, channel=src.chat, start=500, count=40)
    assert vm["total"] == 1007 and len(vm["lanes"]) == 40 and vm["lanes"][0]["index"] == 500
    assert len(json.dumps(vm)) < 40 * 1500
    vm = timeline_view_model(chat, h, channel=src.chat, start=10_000, count=10_000)
    assert len(vm["lanes"]) <= 500


def test_large_result_is_capped(hostile):
    vm = timeline_view_model(
        hostile.state(hostile.chat),
        _history(hostile),
        channel=hostile.chat,
        selected=tool_call_key("t2", "big-1"),
    )
    block = vm["detail"]["content"][0]["block"]
    assert block["truncated"] and len(block["text"]) == 64 * 1024 and block["length"] > 4_000_000
    assert "\x1b" not in block["text"]
    assert len(json.dumps(vm)) < 200_000


@pytest.mark.parametrize("weird", WEIRD)
def test_malformed_never_raises(weird):
    chats = [
        weird,
        {"turns": weird, "activeTurn": weird},
        {
            "turns": [weird, {"id": weird, "responseParts": weird}],
            "activeTurn": {"id": "t", "responseParts": [weird]},
        },
        {
            "activeTurn": {
                "id": "t",
                "responseParts": [
                    {"kind": "toolCall", "toolCall": weird},
                    {
                        "kind": "toolCall",
                        "toolCall": {
                            "status": weird,
                            "toolCallId": weird,
                            "contributor": weird,
                            "content": weird,
                            "partialInput": weird,
                        },
                    },
                ],
            }
        },
    ]
    for chat in chats:
        json.dumps(timeline_view_model(chat, {"k": weird}, selected="t\u241fNone"))
    src = FakeSource(reducers=None)
    src.set_state(src.chat, {"activeTurn": {"id": "t", "responseParts": []}})
    src.record(src.chat, {"type": "chat/toolCallStart", "turnId": "t", "toolCallId": weird}, weird)
    src.record(src.chat, weird if isinstance(weird, dict) else {"type": weird}, {"activeTurn": weird})
    src.record(src.chat, {"type": "chat/turnComplete", "turnId": "t"}, weird)
    assert isinstance(tool_call_steps(src.transitions, src.chat), dict)


def test_the_header_counts_a_completed_call_that_failed_as_failed():
    """Notebook 03's header said "5 completed · 5 cancelled" above a row marked failed (a
    first-hour user): a completed call whose result failed is counted as the badge names it."""
    from ahp_lab.widgets.timeline import _status_counts

    calls = [
        {"toolCall": {"status": "completed", "success": True}},
        {"toolCall": {"status": "completed", "success": False}},
        {"toolCall": {"status": "cancelled"}},
        {"toolCall": {"status": 7}},
    ]
    assert _status_counts(calls) == {"completed": 1, "failed": 1, "cancelled": 1, "unknown": 1}
