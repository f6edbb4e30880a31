"""End-to-end scenarios through the real stack: client → JSON-RPC → host → store → agent.

Each scenario ends by exporting the transition log and replaying it: the replayed states must
equal the live ones exactly.
"""

from __future__ import annotations

import asyncio
import io
import json

import pytest

from ahp_lab import ActionRejected, Lab, LabReplay
from ahp_lab.agents.scripted import (
    ask,
    boolean_question,
    call,
    choice_question,
    integer_question,
    say,
    summarize,
    text_question,
)
from ahp_lab.store import Store


def arun(coro):
    return asyncio.run(coro)


def assert_replay_reproduces(lab: Lab) -> None:
    buffer = io.StringIO()
    lab.store.export(buffer)
    buffer.seek(0)
    replayed = LabReplay(Store.load(buffer))
    assert replayed.store.states() == lab.store.states()
    assert len(replayed.transitions) == len(lab.transitions)
    for seq in (lab.store.first_seq, lab.store.last_seq // 2, lab.store.last_seq):
        assert replayed.state_at(seq) == lab.state_at(seq)


def tool_call_transitions(lab: Lab, call_id: str) -> list:
    return [t for t in lab.transitions if t.action.get("toolCallId") == call_id]


def test_client_tool_happy_path_streams_content():
    async def main():
        lab = await Lab.open()
        seen = []

        @lab.tool
        async def run_unit_tests(pattern: str = "test_*", *, ctx) -> str:
            """Run the unit tests matching a pattern."""
            seen.append(pattern)
            await ctx.update("collecting...")
            await ctx.update([{"type": "text", "text": "running 12 tests"}])
            return "12 passed"

        turn = await lab.send("run_unit_tests pattern=auth")
        assert seen == ["auth"]
        [tc] = turn.tool_calls
        assert (tc.status, tc.success, tc.result_text) == ("completed", True, "12 passed")
        assert tc.input == {"pattern": "auth"}
        steps = tool_call_transitions(lab, tc.id)
        content = [t for t in steps if t.type == "chat/toolCallContentChanged"]
        assert [t.action["content"][0]["text"] for t in content] == ["collecting...", "running 12 tests"]
        assert all(
            t.origin == {"kind": "client", "clientId": "notebook", "clientSeq": t.origin["clientSeq"]}
            for t in content
        )
        # the host mirrored the client execution into the session's input-needed list and removed it again
        kinds = [t.action["request"]["kind"] for t in lab.transitions if t.type == "session/inputNeededSet"]
        assert "toolClientExecution" in kinds
        assert "inputNeeded" not in lab.session_state
        assert "12 passed" in turn.text
        assert_replay_reproduces(lab)

    arun(main())


@pytest.mark.parametrize(
    ("verdict", "status", "expect_ran"),
    [
        (True, "completed", True),
        (False, "cancelled", False),
        ("always", "completed", True),
        ("never", "cancelled", False),
    ],
)
def test_confirmation_approved_denied_and_with_options(verdict, status, expect_ran):
    async def main():
        lab = await Lab.open()
        ran = []

        @lab.tool
        def delete_branch(name: str) -> str:
            ran.append(name)
            return f"deleted {name}"

        options = [
            {"id": "always", "label": "Always allow", "kind": "approve", "group": 0},
            {"id": "never", "label": "Never", "kind": "deny", "group": 1},
        ]
        turn = await lab.send(
            "clean up",
            script=[call("delete_branch", name="old", confirm=True, options=options)],
            approve=verdict,
        )
        [tc] = turn.tool_calls
        assert tc.status == status
        assert bool(ran) == expect_ran
        confirmed = next(t for t in lab.transitions if t.type == "chat/toolCallConfirmed")
        assert confirmed.origin["clientId"] == "notebook"
        if isinstance(verdict, str):
            assert tc.state["selectedOption"]["id"] == verdict
        if status == "cancelled":
            assert tc.state["reason"] == "denied"
        # while pending, the session showed a toolConfirmation entry and the InputNeeded status
        pending = next(
            t
            for t in lab.transitions
            if t.type == "session/inputNeededSet" and t.action["request"]["kind"] == "toolConfirmation"
        )
        assert pending.after["status"] & 24 == 24
        assert_replay_reproduces(lab)

    arun(main())


def test_confirmation_with_edited_input_runs_the_edited_arguments():
    async def main():
        lab = await Lab.open()
        got = []

        @lab.tool
        def deploy(target: str, replicas: int = 1) -> str:
            got.append((target, replicas))
            return "ok"

        turn = await lab.send(
            "deploy",
            script=[call("deploy", target="staging", confirm=True)],
            approve=lambda call: {"edit": {"target": "prod", "replicas": 3}},
        )
        assert got == [("prod", 3)]
        assert turn.tool_calls[0].input == {"target": "prod", "replicas": 3}
        assert_replay_reproduces(lab)

    arun(main())


def test_an_async_approver_is_awaited_and_its_no_is_a_no():
    """``approve=`` may be an ``async def``: its answer is awaited. A coroutine object is truthy, and
    it used to approve every call, whatever the approver would have said."""

    async def main():
        lab = await Lab.open()
        ran = []

        @lab.tool
        def drop_table(name: str) -> str:
            ran.append(name)
            return "dropped"

        async def never(call) -> bool:
            await asyncio.sleep(0)  # an approver that looks something up first
            return call.name != "drop_table"

        turn = await lab.send(
            "clean up", script=[call("drop_table", name="users", confirm=True)], approve=never
        )
        assert ran == [] and turn.tool_calls[0].status == "cancelled"

        async def yes(call) -> bool:
            return True

        turn = await lab.send("again", script=[call("drop_table", name="tmp", confirm=True)], approve=yes)
        assert ran == ["tmp"] and turn.tool_calls[0].status == "completed"

    arun(main())


def test_edited_input_that_breaks_the_schema_fails_the_call_without_running_the_function():
    async def main():
        lab = await Lab.open()
        got = []

        @lab.tool
        def deploy(target: str, replicas: int = 1) -> str:
            got.append(target)
            return "ok"

        # the lab refuses such an edit before sending it (it knows the tool's schema) ...
        with pytest.raises(ValueError, match="the edited input does not fit the tool's schema"):
            await lab.send(
                "deploy",
                script=[call("deploy", target="staging", confirm=True)],
                approve=lambda call: {"edit": {"target": "prod", "replicas": "many"}},
            )
        [waiting] = [c for c in lab.turns()[-1].tool_calls if c.status == "pending-confirmation"]
        # ... and the host, given one by a client that does not check, fails the call unrun
        lab.client.dispatch(
            lab.chat,
            {
                "type": "chat/toolCallConfirmed",
                "turnId": waiting.turn_id,
                "toolCallId": waiting.id,
                "approved": True,
                "confirmed": "user-action",
                "editedToolInput": json.dumps({"target": "prod", "replicas": "many"}),
            },
        )
        await lab.wait_for(lab.chat, lambda s: not s.get("activeTurn") or None, timeout=30)
        [tc] = lab.turns()[-1].tool_calls
        assert got == [] and tc.status == "completed" and tc.success is False
        assert "replicas" in tc.state["error"]["message"]
        await lab.aclose()

    arun(main())


@pytest.mark.parametrize(("approve", "status"), [(True, "completed"), (False, "cancelled")])
def test_result_confirmation(approve, status):
    async def main():
        lab = await Lab.open()
        lab.server_tool(lambda query: f"3 rows for {query}", name="sql", title="SQL")
        turn = await lab.send(
            "query",
            script=[call("sql", query="select 1", requires_result_confirmation=True)],
            approve=approve,
        )
        tc = turn.tool_calls[0]
        assert tc.status == status
        steps = [t.type for t in tool_call_transitions(lab, tc.id)]
        assert "chat/toolCallResultConfirmed" in steps
        statuses = [
            t.after["activeTurn"]["responseParts"][-1]["toolCall"]["status"]
            for t in tool_call_transitions(lab, tc.id)
            if t.type == "chat/toolCallComplete"
        ]
        assert statuses == ["pending-result-confirmation"]
        if status == "cancelled":
            assert tc.state["reason"] == "result-denied"
        assert_replay_reproduces(lab)

    arun(main())


def test_unknown_tool_is_declined():
    async def main():
        lab = await Lab.open()
        turn = await lab.send("x", script=[call("no_such_tool", a=1), summarize()])
        [tc] = turn.tool_calls
        assert tc.status == "completed" and tc.success is False
        assert "No tool named 'no_such_tool'" in tc.state["error"]["message"]
        assert "failed" in turn.text
        assert_replay_reproduces(lab)

    arun(main())


def test_client_declines_a_call_for_a_tool_it_does_not_have():
    async def main():
        lab = await Lab.open()
        ide = await lab.add_client("ide")
        # a stale registration: the IDE advertises a tool it cannot run
        ide.dispatch(
            lab.session,
            {
                "type": "session/activeClientSet",
                "activeClient": {
                    "clientId": "ide",
                    "tools": [{"name": "format_code", "inputSchema": {"type": "object"}}],
                },
            },
        )
        await ide.wait_for(
            lab.session,
            lambda s: (
                s
                if any(t.get("name") == "format_code" for c in s["activeClients"] for t in c.get("tools", []))
                else None
            ),
        )
        turn = await lab.send("x", script=[call("format_code")])
        [tc] = turn.tool_calls
        assert tc.status == "completed" and tc.success is False
        assert "has no tool named 'format_code'" in tc.state["error"]["message"]
        complete = next(t for t in tool_call_transitions(lab, tc.id) if t.type == "chat/toolCallComplete")
        assert complete.origin["clientId"] == "ide"
        assert_replay_reproduces(lab)

    arun(main())


def test_removing_a_client_mid_call_fails_its_running_calls():
    async def main():
        lab = await Lab.open()
        ide = await lab.add_client("ide", "An IDE")
        started, cancelled = asyncio.Event(), []

        async def slow_build(*, ctx) -> str:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(ctx.call_id)
                raise
            return "never"

        from ahp_lab import Tool

        ide.register_tool(Tool(slow_build))
        await lab.client.wait_for(
            lab.session,
            lambda s: (
                s
                if any(t.get("name") == "slow_build" for c in s["activeClients"] for t in c.get("tools", []))
                else None
            ),
        )
        task = lab.start("build", script=[call("slow_build"), summarize()])
        await asyncio.wait_for(started.wait(), 5)
        lab.remove_client("ide")
        turn = await asyncio.wait_for(task, 5)
        [tc] = turn.tool_calls
        assert tc.status == "completed" and tc.success is False
        assert tc.state["error"]["code"] == "clientRemoved"
        assert "ide" in tc.state["error"]["message"]
        await asyncio.sleep(0)
        assert cancelled == [tc.id]  # the function on the departed client was stopped too
        assert all(c["clientId"] != "ide" for c in lab.session_state["activeClients"])
        assert_replay_reproduces(lab)

    arun(main())


def _long_job(lab: Lab) -> tuple[asyncio.Event, asyncio.Event]:
    """Register client tool ``long_job``, which runs until it is cancelled; returns the events set
    when it starts and when it is cancelled."""
    started, cancelled = asyncio.Event(), asyncio.Event()

    @lab.tool
    async def long_job(*, ctx) -> str:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "done"

    return started, cancelled


def test_cancelling_the_turn_cancels_the_running_client_function():
    async def main():
        lab = await Lab.open()
        started, cancelled = _long_job(lab)

        task = lab.start("go", script=[call("long_job")])
        await asyncio.wait_for(started.wait(), 5)
        await lab.cancel()
        turn = await asyncio.wait_for(task, 5)
        await asyncio.wait_for(cancelled.wait(), 5)
        assert turn.status == "cancelled"
        [tc] = turn.tool_calls
        assert (tc.status, tc.state["reason"]) == ("cancelled", "skipped")
        assert lab.chat_state["status"] & 0x1F == 1
        assert_replay_reproduces(lab)

    arun(main())


def test_a_turn_cancelled_right_after_it_was_started_is_cancelled():
    """``lab.start(...)`` then at once ``await lab.cancel()`` raised "there is no active turn" (the
    turn's echo was not back yet) and the turn ran to its end (ACP agent round 13)."""

    async def main():
        lab = await Lab.open()
        started, cancelled = _long_job(lab)
        task = lab.start("go", script=[call("long_job")])
        await lab.cancel()
        turn = await asyncio.wait_for(task, 5)
        assert turn.status == "cancelled" and not started.is_set()
        await lab.aclose()

    arun(main())


def test_input_request_answered():
    async def main():
        lab = await Lab.open()
        script = [
            ask(
                text_question("name", "Name?", required=True),
                choice_question("runtime", "Runtime?", ["py", "js"]),
                integer_question("n", "How many?", min=1, max=5),
                boolean_question("ok", "OK?"),
            ),
            say("thanks"),
        ]
        turn = await lab.send(
            "setup", script=script, answers={"name": "demo", "runtime": "py", "n": 3, "ok": True}
        )
        [part] = turn.input_requests
        assert part["response"] == "accept"
        answers = part["request"]["answers"]
        assert answers["name"]["value"] == {"kind": "text", "value": "demo"}
        assert answers["n"]["value"] == {"kind": "number", "value": 3}
        chat_input = next(t for t in lab.transitions if t.type == "session/inputNeededSet")
        assert chat_input.action["request"]["kind"] == "chatInput"
        assert "inputNeeded" not in lab.session_state
        assert_replay_reproduces(lab)

    arun(main())


def test_invalid_answers_are_rejected_with_a_reason_and_nothing_changes():
    async def main():
        lab = await Lab.open()
        task = lab.start(
            "setup", script=[ask(integer_question("n", "How many?", required=True, min=1, max=5))]
        )
        await lab.client.wait_for(
            lab.chat,
            lambda s: (
                s
                if s.get("activeTurn")
                and any(p.get("kind") == "inputRequest" for p in s["activeTurn"]["responseParts"])
                else None
            ),
        )
        request_id = lab.turns()[-1].input_requests[0]["request"]["id"]
        before = lab.chat_state
        with pytest.raises(ActionRejected, match="at most 5"):
            await lab.adispatch(
                {
                    "type": "chat/inputCompleted",
                    "requestId": request_id,
                    "response": "accept",
                    "answers": {"n": {"state": "submitted", "value": {"kind": "number", "value": 9}}},
                }
            )
        with pytest.raises(ActionRejected, match="required question 'n'"):
            await lab.adispatch(
                {"type": "chat/inputCompleted", "requestId": request_id, "response": "accept"}
            )
        assert lab.chat_state is before
        assert [t.accepted for t in lab.transitions[-2:]] == [False, False]
        lab.answer(request_id, {"n": 2})
        turn = await asyncio.wait_for(task, 5)
        assert turn.input_requests[0]["response"] == "accept"

    arun(main())


def test_first_confirmation_wins_and_the_second_is_rejected():
    async def main():
        lab = await Lab.open()
        ide = await lab.add_client("ide")
        lab.server_tool(lambda: "ok", name="risky")
        task = lab.start("x", script=[call("risky", confirm=True)])
        state = await lab.client.wait_for(
            lab.chat,
            lambda s: (
                s
                if s.get("activeTurn")
                and any(
                    p.get("toolCall", {}).get("status") == "pending-confirmation"
                    for p in s["activeTurn"]["responseParts"]
                )
                else None
            ),
        )
        tc = state["activeTurn"]["responseParts"][-1]["toolCall"]
        base = {"turnId": state["activeTurn"]["id"], "toolCallId": tc["toolCallId"]}
        ide.dispatch(
            lab.chat, {"type": "chat/toolCallConfirmed", **base, "approved": False, "reason": "denied"}
        )
        lab.client.dispatch(
            lab.chat, {"type": "chat/toolCallConfirmed", **base, "approved": True, "confirmed": "user-action"}
        )
        turn = await asyncio.wait_for(task, 5)
        confirmations = [t for t in lab.transitions if t.type == "chat/toolCallConfirmed"]
        assert [(t.origin["clientId"], t.accepted) for t in confirmations] == [
            ("ide", True),
            ("notebook", False),
        ]
        assert "not waiting for confirmation" in confirmations[1].rejection_reason
        assert turn.tool_calls[0].status == "cancelled"
        assert_replay_reproduces(lab)

    arun(main())


def test_only_the_owner_may_complete_a_client_tool_call():
    async def main():
        lab = await Lab.open()
        ide = await lab.add_client("ide")
        gate = asyncio.Event()

        @lab.tool
        async def work() -> str:
            await gate.wait()
            return "mine"

        task = lab.start("x", script=[call("work")])
        state = await lab.client.wait_for(
            lab.chat,
            lambda s: (
                s
                if s.get("activeTurn")
                and any(
                    p.get("toolCall", {}).get("status") == "running" for p in s["activeTurn"]["responseParts"]
                )
                else None
            ),
        )
        tc = state["activeTurn"]["responseParts"][-1]["toolCall"]
        ide.dispatch(
            lab.chat,
            {
                "type": "chat/toolCallComplete",
                "turnId": state["activeTurn"]["id"],
                "toolCallId": tc["toolCallId"],
                "result": {"success": True, "pastTenseMessage": "hijacked"},
            },
        )
        await ide.settle()  # the host has handled the forged completion before the tool finishes
        gate.set()
        turn = await asyncio.wait_for(task, 5)
        assert turn.tool_calls[0].result_text == "mine"
        hijack = next(
            t
            for t in lab.transitions
            if t.origin.get("clientId") == "ide" and t.type == "chat/toolCallComplete"
        )
        assert not hijack.accepted and "executed by notebook" in hijack.rejection_reason

    arun(main())


@pytest.mark.parametrize(
    ("raise_what", "message"),
    [
        ("error", "ValueError: bad input"),
        ("unserializable", "not JSON-serializable"),
        ("timeout", "did not finish within"),
    ],
)
def test_failing_tools_end_as_failures_and_the_session_goes_on(raise_what, message):
    async def main():
        lab = await Lab.open()

        @lab.tool(timeout=0.05)
        async def flaky() -> object:
            if raise_what == "error":
                raise ValueError("bad input")
            if raise_what == "unserializable":
                return object()
            await asyncio.sleep(10)

        turn = await lab.send("x", script=[call("flaky")])
        tc = turn.tool_calls[0]
        assert tc.status == "completed" and tc.success is False and message in tc.state["error"]["message"]
        again = await lab.send("hello")
        assert again.status == "complete"

    arun(main())


def test_a_sync_tool_runs_in_a_worker_thread_and_can_stream():
    async def main():
        lab = await Lab.open()
        import threading

        threads = []

        @lab.tool
        def count(n: int, *, ctx) -> int:
            threads.append(threading.current_thread().name)
            ctx.update_sync(f"counting to {n}")
            return n

        turn = await lab.send("count n=3")
        tc = turn.tool_calls[0]
        assert tc.state["structuredContent"] == {"result": 3}
        assert threads and threads[0] != threading.main_thread().name

    arun(main())


def test_approval_always_waits_for_the_local_approval():
    async def main():
        lab = await Lab.open()
        ran = []

        @lab.tool(approval="always")
        def wipe() -> str:
            ran.append(1)
            return "wiped"

        task = lab.start("x", script=[call("wipe")])
        await lab.client.wait_for(lab.chat, lambda s: True if lab.client.approvals else None)
        assert ran == []  # the host auto-confirmed, but this client keeps its own policy
        lab.approve()
        turn = await asyncio.wait_for(task, 5)
        assert ran == [1] and turn.tool_calls[0].success is True

    arun(main())


def test_local_approvals_of_the_same_call_id_in_two_chats_are_both_kept():
    """A call id is unique within its chat only (a host may start "call-1" in two chats): the
    second local approval took the first's place, whose call then waited for ever (an attacker,
    reading the client). Each waits on its own, and each is decided on its own."""

    async def main():
        lab = await Lab.open()

        @lab.tool(approval="always")
        def wipe() -> str:
            return "wiped"

        tool = lab.client.tools["wipe"]
        loop = asyncio.get_running_loop()
        tc = {"toolCallId": "call-1", "toolName": "wipe", "toolInput": "{}"}
        first = asyncio.ensure_future(lab.client._approved_locally("ahp-chat:/a", "t1", tc, tool, loop))
        second = asyncio.ensure_future(lab.client._approved_locally("ahp-chat:/b", "t1", tc, tool, loop))
        await asyncio.sleep(0)
        assert sorted(a.chat for a in lab.client.approvals.values()) == ["ahp-chat:/a", "ahp-chat:/b"]
        # the input queue's buttons name the chat: a click on one decides that one only
        lab.as_source().decide_local("call-1", False, chat="ahp-chat:/b")
        await asyncio.sleep(0)
        assert [a.chat for a in lab.client.approvals.values() if not a.future.done()] == ["ahp-chat:/a"]
        next(a for a in lab.client.approvals.values() if a.chat == "ahp-chat:/a").approve()
        assert await asyncio.wait_for(first, 5) is True and await asyncio.wait_for(second, 5) is False
        assert lab.client.approvals == {}
        await lab.aclose()

    arun(main())


def test_tool_names_clashing_with_server_tools_are_prefixed():
    async def main():
        lab = await Lab.open()
        lab.server_tool(lambda: "server", name="status")
        await lab.wait_for(
            lab.session, lambda s: any(t["name"] == "status" for t in s.get("serverTools", []))
        )
        published = lab.client.register_tool(__import__("ahp_lab").Tool(lambda: "client", name="status"))
        assert published == "notebook.status"
        clients = await lab.wait_for(
            lab.session,
            lambda s: [
                c for c in s.get("activeClients", []) if any(t["name"].endswith("status") for t in c["tools"])
            ],
        )
        names = [t["name"] for c in clients for t in c["tools"]]
        assert names == ["notebook.status"]
        turn = await lab.send("x", script=[call("notebook.status")])
        assert turn.tool_calls[0].result_text == "client"

    arun(main())


def test_a_call_the_host_ends_stops_the_client_function_in_a_long_turn():
    """The client looks only at the call an action changed (a turn of 3,000 calls was re-read for
    each action): a call the host fails while the function runs, after twenty others in the same
    turn, still stops that function."""

    async def main():
        lab = await Lab.open()
        started, cancelled = _long_job(lab)

        @lab.tool
        def quick() -> str:
            return "ok"

        script = [*(call("quick") for _ in range(20)), call("long_job"), ask(text_question("next", "Next?"))]
        task = lab.start("go", script=script)
        await asyncio.wait_for(started.wait(), 10)
        active = lab.chat_state["activeTurn"]
        [running] = [
            p["toolCall"]
            for p in active["responseParts"]
            if p["kind"] == "toolCall" and p["toolCall"]["status"] == "running"
        ]
        failed = {
            "success": False,
            "pastTenseMessage": "stopped",
            "error": {"message": "the host stopped it"},
        }
        lab.host.dispatch(
            lab.chat,
            {
                "type": "chat/toolCallComplete",
                "turnId": active["id"],
                "toolCallId": running["toolCallId"],
                "result": failed,
            },
        )
        await asyncio.wait_for(cancelled.wait(), 5)
        assert lab.chat_state.get("activeTurn")  # stopped by the call's end, not the turn's
        await lab.cancel()
        turn = await asyncio.wait_for(task, 10)
        assert len(turn.tool_calls) == 21

    arun(main())


def test_a_truncation_at_a_turn_the_chat_does_not_have_leaves_the_running_turn_alone():
    """chat-channel §5: a chat/truncated naming a turn not in turns is a no-op, the active turn
    kept. The host stopped its agent anyway, so the answered question went nowhere, the chat
    stayed "in progress" and refused every new turn (a client written from the spec)."""

    async def main():
        lab = await Lab.open()
        await lab.send("first")
        task = lab.start(
            "setup", script=[ask(integer_question("n", "How many?", required=True)), say("done")]
        )
        state = await lab.client.wait_for(
            lab.chat,
            lambda s: s if s.get("activeTurn") and s["activeTurn"]["responseParts"] else None,
        )
        running = state["activeTurn"]["id"]
        for turn_id in ("no-such-turn", running):  # neither is in turns: both are no-ops
            await lab.adispatch({"type": "chat/truncated", "turnId": turn_id})
            assert lab.chat_state["activeTurn"]["id"] == running
        request_id = lab.turns()[-1].input_requests[0]["request"]["id"]
        lab.answer(request_id, {"n": 2})
        turn = await asyncio.wait_for(task, 10)
        assert turn.status == "complete" and "done" in turn.text
        assert (await lab.send("and another")).status == "complete"
        await lab.aclose()

    arun(main())
