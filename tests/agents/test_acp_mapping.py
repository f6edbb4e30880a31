"""The ACP → AHP mapping table on its own: prompts, config schemas, and (property test) any
sequence of ACP updates maps to actions the chat reducer applies, ending where ACP says."""

from __future__ import annotations

import base64

from hypothesis import given, settings
from hypothesis import strategies as st

from ahp_lab.agents.acp import mapping
from ahp_lab.agents.acp.mapping import ProtocolViolation, Resolver, TurnMap
from ahp_lab.reducers import reduce_chat
from tests.conftest import examples


def _resolver() -> Resolver:
    kept: dict[str, str] = {}

    def put(data, content_type, binary=False):
        uri = f"ahp-content:/{len(kept)}"
        kept[uri] = data
        return {"uri": uri, "contentType": content_type}

    return Resolver(put, lambda tid: None, lambda path: "file://" + path)


def test_prompt_blocks_map_attachments_by_what_the_agent_accepts() -> None:
    message = {
        "text": "look",
        "attachments": [
            {"type": "resource", "label": "main.py", "uri": "file:///w/main.py", "contentType": "text/x-python"},
            {"type": "embeddedResource", "label": "shot", "data": base64.b64encode(b"\x89PNG").decode(), "contentType": "image/png"},
            {"type": "embeddedResource", "label": "notes", "data": base64.b64encode(b"hi").decode(), "contentType": "text/plain"},
            {"type": "simple", "label": "sel", "modelRepresentation": "selected lines 1-3"},
        ],
    }  # fmt: skip
    rich = mapping.prompt_blocks(message, {"image": True, "embeddedContext": True})
    assert [b["type"] for b in rich] == ["text", "resource_link", "image", "resource", "text"]
    assert rich[1] == {
        "type": "resource_link",
        "uri": "file:///w/main.py",
        "name": "main.py",
        "mimeType": "text/x-python",
    }
    assert rich[3]["resource"]["text"] == "hi"
    assert rich[4]["text"] == "[sel] selected lines 1-3"
    plain = mapping.prompt_blocks(message, {})  # baseline ACP: text and resource links only
    assert [b["type"] for b in plain] == ["text", "resource_link", "text", "text", "text"]
    assert "not supported by the agent" in plain[2]["text"]


def test_config_schema_from_modes_options_and_a_mode_category_option() -> None:
    modes = {
        "currentModeId": "ask",
        "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code", "description": "d"}],
    }
    options = [
        {"id": "model", "name": "Model", "type": "select", "currentValue": "b", "options": [{"group": "g", "name": "G", "options": [{"value": "a", "name": "A"}, {"value": "b", "name": "B"}]}]},
        {"id": "tests", "name": "Run tests", "type": "boolean", "currentValue": True},
        {"id": "weird", "name": "?", "type": "slider", "currentValue": 3},
    ]  # fmt: skip
    config, routes = mapping.config_from_acp(modes, options)
    props = config["schema"]["properties"]
    assert list(props) == ["mode", "model", "tests"]  # an unknown option type is not offered
    assert props["mode"]["enumDescriptions"] == ["", "d"] and props["model"]["enum"] == ["a", "b"]
    assert props["tests"] == {"type": "boolean", "title": "Run tests", "sessionMutable": True}
    assert config["values"] == {"mode": "ask", "model": "b", "tests": True}
    assert routes == {
        "mode": ("mode",),
        "model": ("option", "model", "select"),
        "tests": ("option", "tests", "boolean"),
    }
    # the newer form: a config option of category "mode" is the mode; legacy modes are ignored
    newer = [
        {
            "id": "agent-mode",
            "name": "Mode",
            "category": "mode",
            "type": "select",
            "currentValue": "x",
            "options": [{"value": "x", "name": "X"}],
        }
    ]
    config, routes = mapping.config_from_acp(modes, newer)
    assert config["values"] == {"mode": "x"} and routes["mode"] == ("option", "agent-mode", "select")
    assert mapping.values_from_options([{"id": "agent-mode", "currentValue": "y"}], routes) == {"mode": "y"}
    assert mapping.config_from_acp(None, None) == (None, {})


STATUSES = ["pending", "in_progress", "completed", "failed"]
RANK = {"pending": 0, "in_progress": 1, "completed": 2, "failed": 2}
EVENT = st.one_of(
    st.tuples(st.just("chunk"), st.text(max_size=5)),
    st.tuples(st.just("thought"), st.text(max_size=5)),
    st.tuples(st.just("start"), st.integers(0, 3), st.sampled_from(STATUSES)),
    st.tuples(st.just("update"), st.integers(0, 3), st.sampled_from(STATUSES), st.booleans()),
    st.tuples(
        st.just("plan"), st.lists(st.sampled_from(["pending", "in_progress", "completed"]), max_size=3)
    ),
)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(EVENT, max_size=30))
def test_any_update_sequence_maps_to_actions_the_reducer_applies(events) -> None:
    turn = TurnMap("t")
    resolver = _resolver()
    chat = {"resource": "ahp-chat:/x", "title": "c", "status": 1, "modifiedAt": "x", "turns": []}
    chat = reduce_chat(chat, {"type": "chat/turnStarted", "turnId": "t", "startedAt": "x", "message": {"text": "hi", "origin": {"kind": "user"}}}, 1)  # fmt: skip
    text = ""
    final: dict[str, str] = {}
    for event in events:
        kind = event[0]
        try:
            if kind == "chunk":
                actions = mapping.on_message_chunk(
                    turn, {"content": {"type": "text", "text": event[1]}}, resolver
                )
                text += event[1]
            elif kind == "thought":
                actions = mapping.on_thought_chunk(
                    turn, {"content": {"type": "text", "text": event[1]}}, resolver
                )
            elif kind == "start":
                update = {
                    "toolCallId": f"c{event[1]}",
                    "title": f"call {event[1]}",
                    "kind": "edit",
                    "status": event[2],
                }
                actions = mapping.on_tool_call(turn, update, resolver)
            elif kind == "update":
                update = {"toolCallId": f"c{event[1]}", "status": event[2]}
                if event[3]:
                    update["content"] = [{"type": "content", "content": {"type": "text", "text": "x"}}]
                actions = mapping.on_tool_call_update(turn, update, resolver)
            else:
                actions = mapping.on_plan(
                    turn,
                    {"entries": [{"content": "s", "status": s, "priority": "medium"} for s in event[1]]},
                    resolver,
                )
        except ProtocolViolation:
            assert kind == "update"  # only an update for a call never announced is a violation
            continue
        if kind in ("start", "update"):
            # an AHP call only moves forward: it ends where ACP first said it ended, and a call
            # that runs never goes back to streaming when ACP says "pending" again
            call_id, now = f"c{event[1]}", turn.calls[f"c{event[1]}"].acp_status
            was = final.get(call_id, "pending")
            if was not in ("completed", "failed") and RANK[now] >= RANK[was]:
                final[call_id] = now
        for action in actions:
            before = chat
            chat = reduce_chat(chat, action, 1)
            # every mapped action has an effect: none is a no-op the reducer ignores
            assert chat is not before, action
    parts = chat["activeTurn"]["responseParts"]
    assert "".join(str(p["content"]) for p in parts if p["kind"] == "markdown") == text
    calls = {p["toolCall"]["toolCallId"]: p["toolCall"] for p in parts if p["kind"] == "toolCall"}
    for call_id, acp_status in final.items():
        expected = {"pending": "streaming", "in_progress": "running"}.get(acp_status, "completed")
        assert calls[call_id]["status"] == expected, (call_id, acp_status)
        if expected == "completed":
            assert calls[call_id]["success"] is (acp_status == "completed")
