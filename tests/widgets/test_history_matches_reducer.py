"""The timeline infers statuses from actions (never replaying the log); check it against the real
chat reducer on random action sequences."""

import random

import pytest

from ahp_lab.widgets.fake import FakeSource
from ahp_lab.widgets.timeline import ToolCallHistory, collect_tool_calls, tool_call_key

reducers = pytest.importorskip("ahp_lab.reducers")

IDS = ["a", "b", "c"]


def _random_action(rng: random.Random, turns: list[str], started: set[tuple[str, str]]) -> dict:
    # ids are unique as the spec requires: a new turn gets a new id, a call id starts once per turn
    turn = rng.choice(turns[-2:])
    tc = rng.choice(IDS)
    kind = rng.choice(
        ["start", "delta", "ready", "readyc", "confirm", "deny", "complete", "completer", "completef", "rconfirm",
         "rdeny", "content", "auth", "authres", "turnStarted", "turnComplete", "turnCancelled", "error", "truncated"]
    )  # fmt: skip
    base = {"turnId": turn, "toolCallId": tc}
    contributor = rng.choice(
        [None, {"kind": "mcp", "customizationId": "m"}, {"kind": "client", "clientId": "x"}]
    )
    action = {
        "start": {
            "type": "chat/toolCallStart",
            **base,
            "toolName": "t",
            "displayName": "T",
            **({"contributor": contributor} if contributor else {}),
        },
        "delta": {"type": "chat/toolCallDelta", **base, "content": "x"},
        "ready": {
            "type": "chat/toolCallReady",
            **base,
            "invocationMessage": "m",
            **({"contributor": contributor} if contributor else {}),
        },
        "readyc": {"type": "chat/toolCallReady", **base, "invocationMessage": "m", "confirmed": "not-needed"},
        "confirm": {"type": "chat/toolCallConfirmed", **base, "approved": True, "confirmed": "user-action"},
        "deny": {"type": "chat/toolCallConfirmed", **base, "approved": False, "reason": "denied"},
        "complete": {
            "type": "chat/toolCallComplete",
            **base,
            "result": {"success": True, "pastTenseMessage": "p"},
        },
        "completer": {
            "type": "chat/toolCallComplete",
            **base,
            "result": {"success": True, "pastTenseMessage": "p"},
            "requiresResultConfirmation": True,
        },
        "completef": {
            "type": "chat/toolCallComplete",
            **base,
            "result": {"success": False, "pastTenseMessage": "p"},
        },
        "rconfirm": {"type": "chat/toolCallResultConfirmed", **base, "approved": True},
        "rdeny": {"type": "chat/toolCallResultConfirmed", **base, "approved": False},
        "content": {
            "type": "chat/toolCallContentChanged",
            **base,
            "content": [{"type": "text", "text": "c"}],
        },
        "auth": {
            "type": "chat/toolCallAuthRequired",
            **base,
            "auth": {"reason": "required", "resource": {"resource": "r"}},
        },
        "authres": {"type": "chat/toolCallAuthResolved", **base},
        "turnStarted": {
            "type": "chat/turnStarted",
            "turnId": turn,
            "startedAt": "2025-01-01T00:00:00.000Z",
            "message": {"text": "q", "origin": {"kind": "user"}},
        },
        "turnComplete": {"type": "chat/turnComplete", "turnId": turn, "duration": 1},
        "turnCancelled": {"type": "chat/turnCancelled", "turnId": turn, "duration": 1},
        "error": {
            "type": "chat/error",
            "turnId": turn,
            "duration": 1,
            "error": {"errorType": "x", "message": "m"},
        },
        "truncated": {"type": "chat/truncated", **({"turnId": turn} if rng.random() < 0.5 else {})},
    }[kind]
    if kind == "start":
        if (turn, tc) in started:
            return {"type": "chat/toolCallDelta", **base, "content": "y"}
        started.add((turn, tc))
    if kind == "turnStarted":
        turns.append(f"t{len(turns) + 1}")
        action["turnId"] = turns[-1]
    return action


@pytest.mark.parametrize("seed", range(300))
def test_inferred_statuses_match_the_reducer(seed):
    rng = random.Random(seed)
    src = FakeSource()
    start = {
        "resource": src.chat,
        "title": "",
        "status": 1,
        "modifiedAt": "1970-01-01T00:00:00.000Z",
        "turns": [],
    }
    if rng.random() < 0.3:  # sometimes the log starts mid-turn, with calls already present
        start["activeTurn"] = {
            "id": "t1",
            "startedAt": "x",
            "message": {"text": "q"},
            "responseParts": [
                {
                    "kind": "toolCall",
                    "toolCall": {
                        "status": "running",
                        "toolCallId": "a",
                        "toolName": "t",
                        "displayName": "T",
                        "contributor": {"kind": "mcp", "customizationId": "m"},
                        "invocationMessage": "m",
                        "confirmed": "setting",
                    },
                }
            ],
        }
    src.set_state(src.chat, start)
    h = ToolCallHistory()
    src.subscribe(h.feed)
    turns, started = ["t1"], {("t1", "a")}
    for _ in range(80):
        src.apply(src.chat, _random_action(rng, turns, started), now_ms=0)
        state = src.state(src.chat)
        actual = {}
        for c in collect_tool_calls(state):
            if c["active"]:
                actual[tool_call_key(c["turnId"], c["toolCall"]["toolCallId"])] = c["toolCall"]["status"]
        for key, status in actual.items():
            assert h._calls[(src.chat, key)][0] == status, (seed, key, h.steps(src.chat, key))
    # every recorded last step ends in the status the call has now (completed turns included)
    for c in collect_tool_calls(src.state(src.chat)):
        key = tool_call_key(c["turnId"], c["toolCall"]["toolCallId"])
        steps = h.steps(src.chat, key)
        if steps and h._calls.get((src.chat, key)) is not None:
            assert steps[-1]["to"] == h._calls[(src.chat, key)][0]
