import json

import pytest

from ahp_lab.widgets import InputQueue
from ahp_lab.widgets.demo import demo_source
from ahp_lab.widgets.inputs import MAX_SCHEMA_CHARS, inputs_view_model, tool_input_schema

from .conftest import WEIRD

C = "ahp-chat:/demo-chat"


def _entries(src):
    return {e["id"].split("#")[1]: e for e in inputs_view_model(src.state(src.session))["entries"]}


def test_tool_confirmation_actions(demo):
    e = _entries(demo)["edit-1"]
    assert e["kind"] == "toolConfirmation" and e["phase"] == "tool" and e["displayName"] == "Edit file"
    assert e["approve"] == {
        "channel": C,
        "action": {
            "type": "chat/toolCallConfirmed",
            "turnId": "t2",
            "toolCallId": "edit-1",
            "approved": True,
            "confirmed": "user-action",
        },
    }
    assert e["deny"] == {
        "channel": C,
        "action": {
            "type": "chat/toolCallConfirmed",
            "turnId": "t2",
            "toolCallId": "edit-1",
            "approved": False,
            "reason": "denied",
        },
    }
    opts = {o["id"]: o for o in e["options"]}
    assert opts["always"]["action"]["action"] == {**e["approve"]["action"], "selectedOptionId": "always"}
    assert opts["never"]["action"]["action"] == {**e["deny"]["action"], "selectedOptionId": "never"}
    assert [o["group"] for o in e["options"]] == [1, 1, 2]
    assert e["editable"] and e["inputText"] == '{"path": "src/tokenizer.py", "patch": "..."}'
    assert e["risk"]["safety"] == 0.82 and e["title"]["markdown"] is True
    assert e["chatTitle"] == "Refactor the parser" and e["blocking"]


def test_result_confirmation(demo):
    e = _entries(demo)["shell-1"]
    assert e["phase"] == "result" and not e["editable"] and e["options"] == []
    assert e["approve"]["action"] == {
        "type": "chat/toolCallResultConfirmed",
        "turnId": "t2",
        "toolCallId": "shell-1",
        "approved": True,
    }
    assert e["deny"]["action"]["approved"] is False
    assert e["result"]["success"] and e["result"]["content"][0]["block"]["text"].startswith(
        " src/tokenizer.py"
    )


def test_client_execution_and_authentication(demo):
    es = _entries(demo)
    ce = es["tests-1"]
    assert ce["kind"] == "toolClientExecution" and not ce["blocking"]
    assert (
        ce["clientId"] == "vscode-1"
        and ce["clientName"] == "VS Code"
        and ce["displayName"] == "Run Unit Tests"
    )
    au = es["jira-1"]
    assert au["kind"] == "toolAuthentication" and au["resource"] == "https://mcp.example/jira"
    assert au["reason"] == "insufficientScope" and au["scopes"] == ["read:issues"]
    # the server by its name, not its id (the first-hour user, round 54: "mcp mcpServer-1")
    assert au["contributor"] == {"kind": "mcp", "label": "mcp jira", "id": "m-jira"}


def test_chat_input_questions(demo):
    q = _entries(demo)["q-1"]
    assert q["requestId"] == "q-1" and q["message"]["text"].startswith("A few choices")
    qs = {x["id"]: x for x in q["questions"]}
    assert [x["kind"] for x in q["questions"]] == [
        "single-select",
        "multi-select",
        "text",
        "integer",
        "number",
        "boolean",
    ]
    assert qs["style"]["allowFreeform"] and qs["style"]["options"][0] == {
        "id": "snake",
        "label": "snake_case",
        "description": "",
        "recommended": True,
    }
    assert qs["style"]["answerKind"] == "selected" and qs["targets"]["answerKind"] == "selected-many"
    assert (qs["targets"]["min"], qs["targets"]["max"]) == (0, 2)
    assert qs["email"]["format"] == "email" and qs["email"]["max"] == 80
    assert qs["depth"]["default"] == 3 and qs["depth"]["answerKind"] == "number"
    assert qs["commit"]["default"] is False and qs["commit"]["answerKind"] == "boolean"


def test_draft_answers_are_shown(demo):
    demo.apply(
        C,
        {
            "type": "chat/inputAnswerChanged",
            "requestId": "q-1",
            "questionId": "targets",
            "answer": {
                "state": "draft",
                "value": {"kind": "selected-many", "value": ["lexer"], "freeformValues": ["docs"]},
            },
        },
    )
    req = demo.state(C)["activeTurn"]["responseParts"][7]["request"]
    st = dict(demo.state(demo.session))
    st["inputNeeded"] = [
        e if not e["id"].endswith("q-1") else {**e, "request": req} for e in st["inputNeeded"]
    ]
    q = {x["id"]: x for x in {e["id"]: e for e in inputs_view_model(st)["entries"]}[f"{C}#q-1"]["questions"]}
    assert q["targets"]["answer"] == {
        "state": "draft",
        "kind": "selected-many",
        "value": ["lexer"],
        "freeform": ["docs"],
    }


def test_empty_and_unknown():
    assert inputs_view_model({}) == {"entries": [], "count": 0, "shown": 0, "blocking": 0, "readOnly": False}
    vm = inputs_view_model({"inputNeeded": [{"kind": "holographic", "id": "h", "chat": C}]}, read_only=True)
    assert (
        vm["entries"][0]["kind"] == "unknown"
        and vm["entries"][0]["rawKind"] == "holographic"
        and vm["readOnly"]
    )


def test_hostile_content(hostile):
    e = _entries(hostile)["q-evil"]
    assert e["url"] is None and e["rawUrl"] == "javascript:window.__pwned=1"
    assert e["questions"][0]["title"] == '<b onmouseover="window.__pwned=1">title</b>'  # text, never markup
    assert e["message"]["markdown"] is True  # rendered in the browser through marked + DOMPurify


def test_large_queue_is_bounded():
    big = [
        {
            "kind": "toolConfirmation",
            "id": f"e{i}",
            "chat": C,
            "turnId": "t",
            "toolCall": {
                "status": "pending-confirmation",
                "toolCallId": f"c{i}",
                "toolName": "x",
                "displayName": "X",
                "invocationMessage": "m",
                "toolInput": "y" * 200_000,
            },
        }
        for i in range(500)
    ]
    vm = inputs_view_model({"inputNeeded": big})
    assert vm["count"] == 500 and vm["shown"] == 200
    assert len(json.dumps(vm)) < 200 * 200_000


@pytest.mark.parametrize("weird", WEIRD)
def test_malformed_never_raises(weird):
    for entry in [
        weird,
        {"kind": "toolConfirmation", "id": weird, "chat": weird, "toolCall": weird},
        {
            "kind": "toolConfirmation",
            "id": "a",
            "chat": C,
            "toolCall": {
                "status": weird,
                "options": weird,
                "riskAssessment": weird,
                "toolInput": weird,
                "edits": weird,
            },
        },
        {"kind": "chatInput", "id": "b", "chat": C, "request": weird},
        {
            "kind": "chatInput",
            "id": "b",
            "chat": C,
            "request": {
                "id": "r",
                "questions": [
                    weird,
                    {"kind": weird, "id": weird, "options": weird},
                    {"kind": "single-select", "id": "s", "options": [weird]},
                ],
                "answers": weird,
                "url": weird,
            },
        },
        {
            "kind": "chatInput",
            "id": "c",
            "chat": C,
            "request": {"id": "r", "questions": [{"kind": "text", "id": "t"}], "answers": {"t": weird}},
        },
        {"kind": "toolAuthentication", "id": "d", "chat": C, "toolCall": {"auth": weird}},
        {"kind": "toolClientExecution", "id": "e", "chat": C, "clientId": weird, "toolCall": weird},
    ]:
        json.dumps(inputs_view_model({"inputNeeded": [entry], "activeClients": weird, "chats": weird}))
    json.dumps(inputs_view_model({"inputNeeded": weird}))


# -- approve with edits: the tool's schema, and the last edit remembered ----------------------------

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def _session(server=(), clients=()):
    return {
        "serverTools": list(server),
        "activeClients": [{"clientId": cid, "tools": list(tools)} for cid, tools in clients],
    }


def test_the_schema_comes_from_the_tool_the_call_names():
    other = {"type": "object", "properties": {"s": {"type": "string"}}}
    st_ = _session(
        server=[{"name": "shared", "inputSchema": other}],
        clients=[
            ("a", [{"name": "shared", "inputSchema": SCHEMA}]),
            ("b", [{"name": "only_b", "inputSchema": SCHEMA}]),
        ],
    )
    assert tool_input_schema(st_, "shared") == other  # a host call: the server tool
    assert tool_input_schema(st_, "shared", {"kind": "client", "clientId": "a"}) == SCHEMA  # its own client's
    assert tool_input_schema(st_, "only_b", {"kind": "mcp"}) == SCHEMA
    assert tool_input_schema(st_, "nope") is None and tool_input_schema(st_, 42) is None
    huge = {"type": "object", "description": "x" * MAX_SCHEMA_CHARS}
    assert tool_input_schema(_session(server=[{"name": "big", "inputSchema": huge}]), "big") is None
    assert tool_input_schema(_session(server=[{"name": "bad", "inputSchema": "not a schema"}]), "bad") is None
    assert tool_input_schema("garbage", "x") is None


def test_a_confirmation_carries_its_tools_schema():
    src = demo_source()
    state = dict(src.state(src.session))
    state["serverTools"] = [{"name": "editFile", "inputSchema": SCHEMA}]
    [entry] = [e for e in inputs_view_model(state)["entries"] if e.get("toolCallId") == "edit-1"]
    assert entry["editable"] and entry["inputSchema"] == SCHEMA


def test_the_last_approved_edit_is_remembered_per_tool():
    src = demo_source()
    w = InputQueue(src)
    [entry] = [e for e in w.model["entries"] if e.get("toolCallId") == "edit-1"]
    action = {**entry["approve"]["action"], "editedToolInput": '{"path": "b.py"}'}
    src.dispatch_error = "rejected by the host"
    w._on_custom_msg(
        w, {"type": "dispatch", "channel": entry["chat"], "action": action, "remember": "edit_file"}
    )
    assert w.last_inputs == {} and "rejected" in w.error  # a failed approval is not remembered
    src.dispatch_error = None
    w._on_custom_msg(
        w, {"type": "dispatch", "channel": entry["chat"], "action": action, "remember": "edit_file"}
    )
    assert w.last_inputs == {"edit_file": '{"path": "b.py"}'} and w.error == ""
    assert src.dispatched[-1] == (entry["chat"], action)
    # bounded: a huge edit or a silly tool name is not kept
    big = {**action, "editedToolInput": "x" * (InputQueue.MAX_REMEMBERED_CHARS + 1)}
    w._remember("edit_file", big)
    w._remember("x" * 500, action)
    w._remember(None, action)
    assert w.last_inputs == {"edit_file": '{"path": "b.py"}'}
    for k in range(InputQueue.MAX_REMEMBERED + 5):
        w._remember(f"tool{k}", action)
    assert len(w.last_inputs) == InputQueue.MAX_REMEMBERED and "tool0" not in w.last_inputs


# -- an approval goes out only for the call the person saw ----------------------------------------


async def _a_call_waiting_for_a_person():
    """A lab whose turn waits for a person to confirm ``zap name=a``, its input queue, the card the
    queue shows for the call, and ``resend(**fields)``: the agent sending the call again (T4)."""
    from ahp_lab import Lab

    lab = await Lab.open()

    @lab.tool(annotations={"destructiveHint": True})
    def zap(name: str) -> str:
        """Zap something (asks for confirmation)."""
        return f"zapped {name}"

    pending = lab.start("call zap name=a")
    await pending.until_blocked()
    queue = InputQueue(lab)
    [seen] = [e for e in queue.model["entries"] if e["kind"] == "toolConfirmation"]
    runner = lab.host.turns[lab.chat]  # the agent's own turn: what an agent emits through

    def resend(**fields):
        runner.emit(
            {
                "type": "chat/toolCallReady",
                "turnId": runner.turn_id,
                "toolCallId": seen["toolCallId"],
                **fields,
            }
        )

    return lab, pending, queue, seen, resend


def _click(queue, target, seen):
    queue._on_custom_msg(queue, {"type": "dispatch", **target, "shown": seen["shown"]})


def test_an_approval_of_a_call_whose_input_changed_after_it_was_shown_is_refused():
    """An agent may send new input (``toolCallReady`` again, T4) while a person reads the old one:
    the Approve clicked on the old card must not approve the new input."""
    import asyncio

    async def main():
        lab, pending, queue, seen, resend = await _a_call_waiting_for_a_person()
        assert '"a"' in seen["inputText"]
        resend(invocationMessage="Zap", toolInput='{"name": "everything"}')
        await lab.wait_for(
            lab.session,
            lambda s: any("everything" in str(e.get("toolCall")) for e in s.get("inputNeeded") or ()) or None,
        )
        before = len(lab.transitions)
        _click(queue, seen["approve"], seen)
        assert queue.error == (
            f"the tool call {seen['toolCallId']} changed after it was shown: look at it again before approving"
        )
        assert len(lab.transitions) == before  # nothing was sent: the call still waits for a person
        # denying what was seen is always possible; approving the card as it is now goes through
        queue.refresh()
        [now] = [e for e in queue.model["entries"] if e["kind"] == "toolConfirmation"]
        assert '"everything"' in now["inputText"] and now["shown"] != seen["shown"]
        _click(queue, now["approve"], now)
        assert queue.error == ""
        turn = await pending
        assert turn.tool_calls[0].result_text == "zapped everything"
        await lab.aclose()

    asyncio.run(main())


def test_a_denial_of_a_changed_call_still_goes_out():
    import asyncio

    async def main():
        lab, pending, queue, seen, resend = await _a_call_waiting_for_a_person()
        resend(invocationMessage="Zap", toolInput='{"name": "b"}')
        _click(queue, seen["deny"], seen)
        assert queue.error == ""
        turn = await pending
        assert turn.tool_calls[0].status == "cancelled"
        await lab.aclose()

    asyncio.run(main())


def test_the_same_input_sent_again_with_other_spacing_is_still_what_was_shown():
    import asyncio

    async def main():
        lab, pending, queue, seen, resend = await _a_call_waiting_for_a_person()
        resend(invocationMessage='Zap(name="a")', toolInput='{ "name" :  "a" }')
        await lab.wait_for(
            lab.session,
            lambda s: any('"name" :' in str(e.get("toolCall")) for e in s.get("inputNeeded") or ()) or None,
        )
        _click(queue, seen["approve"], seen)
        assert queue.error == ""
        assert (await pending).tool_calls[0].result_text == "zapped a"
        await lab.aclose()

    asyncio.run(main())
