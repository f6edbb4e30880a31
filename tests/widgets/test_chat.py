import json

import pytest

from ahp_lab.widgets.chat import active_turn_patch, chat_view_model, part_view, turn_view
from ahp_lab.widgets.demo import HOSTILE_MARKDOWN

from .conftest import WEIRD


def test_chat_view(demo):
    vm = chat_view_model(demo.state(demo.chat))
    assert vm["turnCount"] == 1 and vm["first"] == 0 and vm["title"] == "Refactor the parser"
    t1 = vm["turns"][0]
    assert t1["state"] == "complete" and t1["message"]["block"]["text"] == "What does the tokenizer do?"
    assert [p["kind"] for p in t1["parts"]] == ["reasoning", "toolCall", "markdown"]
    assert t1["parts"][2]["block"]["markdown"] is True and "**splits**" in t1["parts"][2]["block"]["text"]
    a = vm["active"]
    assert a["active"] and [p["kind"] for p in a["parts"]] == ["markdown"] + ["toolCall"] * 6 + [
        "inputRequest"
    ]
    tc = a["parts"][2]["toolCall"]
    assert tc["status"] == "running" and tc["contributor"]["label"] == "client vscode-1"
    assert a["parts"][7]["questions"] == 6 and a["parts"][7]["response"] is None


def test_tail_window():
    turns = [
        {"id": f"t{i}", "message": {"text": f"q{i}"}, "responseParts": [], "state": "complete"}
        for i in range(100)
    ]
    vm = chat_view_model({"turns": turns}, tail=20)
    assert vm["first"] == 80 and len(vm["turns"]) == 20 and vm["hasOlder"]
    assert len(json.dumps(vm)) < 20_000


def test_patch_sends_appends_for_streamed_text():
    def turn(text, n_parts=1):
        return turn_view(
            {
                "id": "t",
                "message": {"text": "hi"},
                "responseParts": [{"kind": "markdown", "id": "m", "content": text}]
                + [{"kind": "reasoning", "id": f"r{i}", "content": "x"} for i in range(n_parts - 1)],
            },
            active=True,
        )

    a, b = turn("Hello"), turn("Hello, world")
    p = active_turn_patch(a, b)
    assert p == {"id": "t", "parts": [], "appends": [[0, ", world"]], "length": 1}
    assert active_turn_patch(b, b) is None
    p = active_turn_patch(b, turn("Hello, world", 2))
    assert p["parts"][0][0] == 1 and p["appends"] == [] and p["length"] == 2
    assert active_turn_patch(b, turn("Changed"))["parts"][0][0] == 0
    assert "reset" in active_turn_patch(None, b) and active_turn_patch(b, None) == {"reset": None}


def test_hostile_markdown_is_text_with_escapes_stripped():
    p = part_view({"kind": "markdown", "id": "m", "content": HOSTILE_MARKDOWN}, "r")
    assert "\x1b" not in p["block"]["text"] and "\x07" not in p["block"]["text"]
    assert "red ANSI" in p["block"]["text"] and p["block"]["markdown"]
    big = part_view({"kind": "markdown", "id": "m", "content": "a" * 5_000_000}, "r")
    assert len(big["block"]["text"]) == 64 * 1024 and big["block"]["truncated"]


def test_unknown_parts():
    assert part_view({"kind": "hologram", "id": "h"}, "r") == {"kind": "unknown", "rawKind": "hologram"}
    assert part_view(None, "r") == {"kind": "unknown", "rawKind": "?"}


@pytest.mark.parametrize("weird", WEIRD)
def test_malformed_never_raises(weird):
    for st in [
        weird,
        {"turns": weird, "activeTurn": weird, "title": weird, "status": weird},
        {
            "turns": [
                weird,
                {
                    "id": weird,
                    "message": weird,
                    "responseParts": weird,
                    "error": weird,
                    "usage": weird,
                    "duration": weird,
                },
            ],
            "activeTurn": {
                "id": "a",
                "message": {"text": weird, "origin": weird, "attachments": weird},
                "responseParts": [
                    weird,
                    {"kind": "markdown", "content": weird},
                    {"kind": "toolCall", "toolCall": weird},
                    {"kind": "inputRequest", "request": weird},
                    {"kind": "systemNotification", "content": weird},
                ],
            },
        },
    ]:
        json.dumps(chat_view_model(st))


def test_a_long_turn_shows_its_newest_parts_where_the_question_and_the_answer_are():
    """A turn of more than 400 parts showed its first 400 and "N more parts not shown": a tool call
    waiting for the person and the agent's answer, which come last, never appeared (ACP round 16).
    The view holds the newest parts; its window moves in steps, each a reset of the active turn."""

    def turn(n):
        parts = [{"kind": "markdown", "id": f"p{i}", "content": f"thought {i}"} for i in range(n - 1)]
        call = {
            "toolCallId": "c1",
            "toolName": "rm",
            "displayName": "Delete files",
            "status": "pending-confirmation",
        }
        return {
            "id": "t",
            "message": {"text": "go"},
            "responseParts": [*parts, {"kind": "toolCall", "toolCall": call}],
        }

    view = turn_view(turn(1000), active=True)
    assert view["partsOmitted"] == 600 and len(view["parts"]) == 400
    assert view["parts"][-1]["toolCall"]["status"] == "pending-confirmation"
    assert view["parts"][0]["block"]["text"] == "thought 600"
    grown = turn_view(turn(1001), active=True)
    assert grown["partsOmitted"] == 700 and grown["parts"][-1]["kind"] == "toolCall"
    assert active_turn_patch(view, grown) == {"reset": grown}  # the window moved
    again = turn_view(turn(1002), active=True)
    patch = active_turn_patch(grown, again)
    assert "reset" not in patch and patch["length"] == len(again["parts"]) == 302
    assert [i for i, _ in patch["parts"]] == [300, 301]  # the call moved one on; a thought took its place
