"""The ACP bridge against the offline example agent, spawned as a real subprocess over stdio."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from ahp_lab import ActionRejected, Lab
from ahp_lab.protocol.jsonrpc import ErrorCode
from ahp_lab.transport import RpcError

from .conftest import acp_lab, arun, assert_replays, bad_agent, pending_call, transitions


def test_streamed_text_arrives_as_one_delta_per_acp_chunk(tmp_path: Path) -> None:
    async def go() -> None:
        async with acp_lab(tmp_path) as lab:
            turn = await lab.send("hello")
            assert turn.status == "complete"
            assert turn.text == "Hello from the offline ACP agent! I speak real ACP over stdio. "
            assert turn.reasoning == "The user greeted me; I will answer briefly."
            chunks = [f for f in lab.acp_frames if f.label == "session/update agent_message_chunk"]
            deltas = transitions(lab, "chat/delta", "agent")
            assert len(chunks) == len(deltas) == len(turn.text.split(" ")) - 1
            # linked both ways: each chunk produced its delta, and the delta names its chunk
            for frame, delta in zip(chunks, deltas, strict=True):
                assert delta.seq in frame.seqs
                assert lab.agent.frames.frames_for_seq(delta.seq) == [frame]
                assert delta.action["content"] == frame.message["params"]["update"]["content"]["text"]
            prompt = next(f for f in lab.acp_frames if f.label == "session/prompt")
            started = transitions(lab, "chat/turnStarted")[-1]
            assert prompt.seqs == [started.seq]
            assert prompt.message["params"]["prompt"] == [{"type": "text", "text": "hello"}]
            assert_replays(lab)

    arun(go())


def test_session_config_schema_comes_from_modes_and_config_options(tmp_path: Path) -> None:
    async def go() -> None:
        async with acp_lab(tmp_path) as lab:
            config = lab.session_state["config"]
            mode = config["schema"]["properties"]["mode"]
            assert mode["enum"] == ["ask", "code", "plan"]
            assert mode["enumLabels"] == ["Ask", "Code", "Plan"]
            assert mode["enumDescriptions"][0] == "Request permission before making any changes"
            assert mode["sessionMutable"] is True
            verbosity = config["schema"]["properties"]["verbosity"]
            assert verbosity["enum"] == ["brief", "detailed"] and verbosity["sessionMutable"] is True
            assert config["values"] == {"mode": "ask", "verbosity": "brief"}
            # the first state of the session already had it (no action changes a schema)
            first = next(t for t in lab.transitions if t.channel == lab.session).before
            assert first["lifecycle"] == "creating" and first["config"]["schema"] == config["schema"]
            resolved = await lab.client.request("resolveSessionConfig", {"provider": "acp"})
            assert resolved["schema"] == config["schema"]
            assert lab.session_state["workingDirectories"] == [tmp_path.resolve().as_uri()]

    arun(go())


def test_permission_is_answered_from_an_ahp_confirmation_with_the_chosen_option(tmp_path: Path) -> None:
    async def go() -> None:
        target = tmp_path / "notes.txt"
        target.write_text("old line\n")
        async with acp_lab(tmp_path) as lab:
            pending = lab.start("edit notes.txt new line")
            tc = await pending_call(lab)
            assert [(o["id"], o["kind"], o["group"]) for o in tc["options"]] == [
                ("allow-once", "approve", 0),
                ("allow-always", "approve", 1),
                ("reject-once", "deny", 0),
                ("reject-always", "deny", 1),
            ]
            assert "-old line\n+new line" in tc["confirmationTitle"]["markdown"]
            edit = tc["edits"]["items"][0]
            assert edit["after"]["uri"] == target.resolve().as_uri()
            assert edit["diff"] == {"added": 1, "removed": 1}
            served = await lab.client.request("resourceRead", {"uri": edit["after"]["content"]["uri"]})
            assert served["data"] == "new line\n"
            lab.approve(option="allow-once")
            turn = await pending
            assert "permission: selected allow-once" in turn.text
            assert target.read_text() == "new line\n"
            call = next(c for c in turn.tool_calls if c.state["displayName"] == "Edit notes.txt")
            assert call.state["status"] == "completed" and call.state["success"] is True
            assert call.state["selectedOption"]["id"] == "allow-once"
            texts = [c.get("text", "") for c in call.state["content"] if c["type"] == "text"]
            assert any("-old line" in t and "+new line" in t for t in texts)  # the unified diff
            assert any(c["type"] == "resource" and c["uri"].endswith("#L1") for c in call.state["content"])
            # the answer the agent got is linked to the confirmation that decided it
            confirmed = transitions(lab, "chat/toolCallConfirmed")[-1]
            answer = next(
                f
                for f in lab.acp_frames
                if f.direction == "out" and "result" in f.message and "outcome" in (f.message["result"] or {})
            )
            assert answer.message["result"]["outcome"] == {"outcome": "selected", "optionId": "allow-once"}
            assert answer.seqs == [confirmed.seq]
            assert_replays(lab)

    arun(go())


def test_plain_approve_and_deny_pick_the_one_time_options_and_always_is_remembered(tmp_path: Path) -> None:
    async def go() -> None:
        async with acp_lab(tmp_path) as lab:
            pending = lab.start("edit a.txt one")
            await pending_call(lab)
            lab.approve()
            assert "permission: selected allow-once" in (await pending).text
            pending = lab.start("edit a.txt two")
            await pending_call(lab)
            lab.deny()
            turn = await pending
            assert "permission: selected reject-once" in turn.text
            assert (tmp_path / "a.txt").read_text() == "one\n"
            pending = lab.start("edit a.txt three")
            await pending_call(lab)
            # a denial naming an option that approves is refused, not read as the option (it approved)
            with pytest.raises(
                ValueError, match="'allow-always' approves .*a denial picks one of its deny options"
            ):
                lab.deny(option="allow-always")
            lab.deny(option="reject-always")
            assert "permission: selected reject-always" in (await pending).text
            # remembered for the session: the next edit of the same kind is refused without asking
            turn = await lab.send("edit a.txt four")
            assert "permission: selected reject-always" in turn.text
            assert (tmp_path / "a.txt").read_text() == "one\n"
            edit = next(c for c in turn.tool_calls if c.state["displayName"] == "Edit a.txt")
            assert edit.state["status"] == "cancelled" and edit.state["reason"] == "denied"

    arun(go())


def test_mode_changes_in_both_directions(tmp_path: Path) -> None:
    async def go() -> None:
        async with acp_lab(tmp_path) as lab:
            await lab.adispatch({"type": "session/configChanged", "config": {"mode": "code"}})
            set_mode = await _frame(lab, "session/set_mode")
            assert set_mode.message["params"]["modeId"] == "code"
            assert set_mode.seqs == [transitions(lab, "session/configChanged")[-1].seq]
            assert (await lab.send("config")).text == "mode=code verbosity=brief"
            turn = await lab.send("mode plan")  # the agent switches itself: current_mode_update
            assert "switched myself to plan" in turn.text
            assert lab.session_state["config"]["values"]["mode"] == "plan"
            change = transitions(lab, "session/configChanged", "agent")[-1]
            assert change.action["config"] == {"mode": "plan"}
            assert (
                lab.agent.frames.frames_for_seq(change.seq)[0].label == "session/update current_mode_update"
            )

    arun(go())


def test_config_option_change_and_values_outside_the_schema(tmp_path: Path) -> None:
    async def go() -> None:
        async with acp_lab(tmp_path) as lab:
            await lab.adispatch({"type": "session/configChanged", "config": {"verbosity": "detailed"}})
            await _frame(lab, "session/set_config_option")
            assert (await lab.send("config")).text == "mode=ask verbosity=detailed"
            with pytest.raises(ActionRejected, match="must be one of brief, detailed"):
                await lab.adispatch({"type": "session/configChanged", "config": {"verbosity": "shouting"}})
            # the agent changes an option itself: config_option_update
            await lab.send("verbosity brief")
            assert lab.session_state["config"]["values"]["verbosity"] == "brief"

    arun(go())


def test_a_mode_the_agent_refuses_is_put_back(tmp_path: Path) -> None:
    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("env")) as lab:
            await lab.adispatch({"type": "session/configChanged", "config": {"mode": "code"}})
            reverted = await lab.wait_for(
                lab.session, lambda s: s["config"]["values"]["mode"] == "ask" or None
            )
            assert reverted
            undo = transitions(lab, "session/configChanged", "host")[-1]
            assert undo.action["config"] == {"mode": "ask"}

    arun(go())


def test_exit_plan_mode_end_to_end(tmp_path: Path) -> None:
    async def go() -> None:
        async with acp_lab(tmp_path) as lab:
            await lab.adispatch({"type": "session/configChanged", "config": {"mode": "plan"}})
            await _frame(lab, "session/set_mode")
            pending = lab.start("exit plan")
            tc = await pending_call(lab)
            assert tc["toolName"] == "switch_mode"
            assert [o["id"] for o in tc["options"]] == ["code", "ask", "reject"]
            assert "Implementation Plan" in tc["confirmationTitle"]["markdown"]
            lab.approve(option="code")
            turn = await pending
            assert "Switched to code mode." in turn.text
            assert lab.session_state["config"]["values"]["mode"] == "code"
            assert_replays(lab)

    arun(go())


def test_another_client_may_pick_the_mode_an_exit_from_plan_mode_goes_on_in(tmp_path: Path) -> None:
    """Seed 001's "Yes, and auto-accept edits" (an ``allow_always`` option of the switch_mode call)
    was the notebook's only, refused to an IDE as "a standing answer for the rest of the session":
    but a mode switch's options name modes, none is remembered, and any client may set the mode
    (ACP agent round 13)."""

    async def go() -> None:
        async with acp_lab(tmp_path) as lab:
            await lab.adispatch({"type": "session/configChanged", "config": {"mode": "plan"}})
            await _frame(lab, "session/set_mode")
            ide = await lab.add_client("ide")
            await ide.subscribe(lab.chat)
            pending = lab.start("exit plan")
            tc = await pending_call(lab)
            confirm = {
                "type": "chat/toolCallConfirmed",
                "turnId": lab.chat_state["activeTurn"]["id"],
                "toolCallId": tc["toolCallId"],
                "approved": True,
                "confirmed": "user-action",
                "selectedOptionId": "code",
            }
            seq = ide.dispatch(lab.chat, confirm)
            await ide.settle()
            assert not [r for r in ide.rejections if r["clientSeq"] == seq]
            turn = await pending
            assert "Switched to code mode." in turn.text
            assert lab.session_state["config"]["values"]["mode"] == "code"

    arun(go())


def test_cancel_mid_turn_sends_session_cancel_and_the_next_turn_works(tmp_path: Path) -> None:
    async def go() -> None:
        async with acp_lab(tmp_path) as lab:
            pending = lab.start("slow")
            await lab.wait_for(
                lab.chat, lambda c: "tick 3" in str((c.get("activeTurn") or {}).get("responseParts")) or None
            )
            await lab.cancel()
            turn = await pending
            assert turn.status == "cancelled"
            cancel = await _frame(lab, "session/cancel")
            assert cancel.seqs == [transitions(lab, "chat/turnCancelled")[-1].seq]
            # the agent closes the prompt with stopReason cancelled; the next turn is a fresh prompt
            turn = await lab.send("hello")
            assert turn.status == "complete" and "offline ACP agent" in turn.text
            assert "tick" not in turn.text

    arun(go())


def test_crash_mid_turn_then_restart_restores_the_mode(tmp_path: Path) -> None:
    """A crash, then ``restart_agent()`` or a next turn, starts a fresh process with the session's
    mode; the turn after a crash says that the process does not have the conversation (ACP agent
    round 10: it said so only after a cancel's grace ran out)."""

    async def go() -> None:
        async with acp_lab(tmp_path) as lab:
            await lab.adispatch({"type": "session/configChanged", "config": {"mode": "code"}})
            await _frame(lab, "session/set_mode")
            turn = await lab.send("crash")
            assert turn.status == "error"
            message = turn.error["message"]
            assert "exited unexpectedly (exit code 3)" in message
            assert "crashing on purpose" in message  # the stderr tail...
            assert "sk-test1234567890abcdef" not in message and "my token is ***" in message  # ...redacted
            assert "About to crash" in turn.text  # what streamed before the crash stays
            await lab.restart_agent()
            turn = await lab.send("config")
            assert turn.text == "mode=code verbosity=brief"
            # a crash without restart_agent(): the next turn respawns by itself, and says first that
            # the fresh process does not have the conversation (the chat read as one going on)
            await lab.send("crash")
            turn = await lab.send("hello")
            assert turn.status == "complete"
            [notice] = [p for p in turn.state["responseParts"] if p.get("kind") == "systemNotification"]
            assert "fresh agent process, which does not have the conversation" in str(notice["content"])
            assert not [
                p
                for p in (await lab.send("again")).state["responseParts"]
                if p.get("kind") == "systemNotification"
            ]

    arun(go())


def test_out_of_tree_write_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    async def go() -> None:
        work = tmp_path / "work"
        work.mkdir()
        outside = tmp_path / "outside.txt"
        async with acp_lab(work) as lab:
            for path in (outside, work / ".." / "outside.txt"):
                turn = await lab.send(f"write {path} pwned")
                assert (
                    "write refused" in turn.text and "outside the session's working directories" in turn.text
                )
                assert not outside.exists()
                call = turn.tool_calls[-1]
                assert call.state["status"] == "completed" and call.state["success"] is False
            turn = await lab.send("read /etc/passwd")
            assert "could not read" in turn.text and "root:" not in str(turn.state)
            turn = await lab.send("write inside.txt fine")
            assert (work / "inside.txt").read_text() == "fine\n"

    arun(go())


def test_terminal_output_is_streamed_into_the_tool_call(tmp_path: Path) -> None:
    async def go() -> None:
        script = tmp_path / "count.py"
        script.write_text(
            "import sys, time\nfor i in range(3):\n    print('line', i, flush=True)\n    time.sleep(0.15)\n"
        )
        async with acp_lab(tmp_path) as lab:
            turn = await lab.send(f"run {sys.executable} count.py")
            assert turn.status == "complete"
            assert "exited with 0" in turn.text
            call = turn.tool_calls[0]
            terminal = next(c for c in call.state["content"] if c["type"] == "terminal")
            assert terminal["result"]["exitCode"] == 0
            assert "line 2" in terminal["result"]["preview"]
            # streamed: the running call's content grew while the command ran
            shown = [
                next((c["text"] for c in t.action["content"] if c["type"] == "text"), "")
                for t in transitions(lab, "chat/toolCallContentChanged")
                if t.action["toolCallId"] == call.state["toolCallId"]
            ]
            assert any("line 0" in s and "line 2" not in s for s in shown)
            # the AHP terminal channel holds the output, claimed by the tool call
            state = lab.store.state(terminal["resource"])
            assert "line 0" in "".join(str(p.get("value", "")) for p in state["content"])
            assert state["exitCode"] == 0
            assert_replays(lab)

    arun(go())


def test_terminal_data_carries_no_shell_integration_sequences(tmp_path: Path) -> None:
    """other-channels §1: ``terminal/data`` has shell-integration escape sequences stripped (they
    were kept, OSC 633 and 133 marks in the channel's content). One is written in two pieces,
    as a pty may deliver it."""

    async def go() -> None:
        script = tmp_path / "marks.py"
        script.write_text(
            "import sys, time\n"
            "w = sys.stdout.write\n"
            "w('\\x1b]633;A\\x07\\x1b]133;B\\x1b\\\\hello\\x1b]633;E;ec'); sys.stdout.flush(); time.sleep(0.2)\n"
            "w('ho hi\\x07 \\x1b[1mworld\\x1b[0m\\x1b]7;file:///tmp\\x07\\n\\x1b]633;D;0\\x07'); sys.stdout.flush()\n"
        )
        async with acp_lab(tmp_path) as lab:
            turn = await lab.send(f"run {sys.executable} marks.py")
            call = turn.tool_calls[0]
            terminal = next(c for c in call.state["content"] if c["type"] == "terminal")
            state = lab.store.state(terminal["resource"])
            shown = "".join(str(p.get("value", "")) for p in state["content"])
            assert shown == "hello \x1b[1mworld\x1b[0m\n"  # colours are the terminal's own
            # the tool call's preview and text are for reading: no escape sequence at all (raw, a
            # client printed \x1b]633;A and the colour codes)
            assert terminal["result"]["preview"] == "hello world\n"
            assert {"type": "text", "text": "hello world\n"} in call.state["content"]

    arun(go())


def test_a_long_output_shows_its_tail_in_the_tool_call_and_whole_in_the_terminal(tmp_path: Path) -> None:
    """Each read of a command's output sent the output so far (up to 1 MiB) again in the tool
    call: 3 MB of output made a 45 MB log (an ACP agent of our own). The tool call shows the last
    4,000 characters; the terminal channel has all of it."""
    from ahp_lab.agents.acp.content import TERMINAL_PREVIEW

    async def go() -> None:
        script = tmp_path / "long.py"
        script.write_text("import sys\nfor i in range(3000):\n    print(f'line {i:05} ' + 'y' * 60)\n")
        async with acp_lab(tmp_path) as lab:
            turn = await lab.send(f"run {sys.executable} long.py")
            call = turn.tool_calls[0]
            texts = [c["text"] for c in call.state["content"] if c["type"] == "text"]
            tail = next(t for t in texts if "line 02999" in t)
            assert tail.startswith("…") and len(tail) <= TERMINAL_PREVIEW + 1
            terminal = next(c for c in call.state["content"] if c["type"] == "terminal")
            whole = "".join(str(p.get("value", "")) for p in lab.store.state(terminal["resource"])["content"])
            assert "line 00000 " in whole and "line 02999 " in whole
            changes = [t for t in lab.transitions if t.type == "chat/toolCallContentChanged"]
            assert all(len(json.dumps(t.action)) < 3 * TERMINAL_PREVIEW for t in changes)

    arun(go())


def test_plan_is_a_checklist_updated_in_place(tmp_path: Path) -> None:
    async def go() -> None:
        async with acp_lab(tmp_path) as lab:
            turn = await lab.send("plan")
            plans = [c for c in turn.tool_calls if c.state["toolName"] == "plan"]
            assert len(plans) == 1
            final = plans[0].state
            assert final["status"] == "completed"
            assert final["content"][0]["text"].splitlines() == [
                "- [x] Read the code (completed)",
                "- [x] Write the change (completed)",
                "- [x] Run the tests (completed)",
            ]
            revisions = [
                t
                for t in transitions(lab, "chat/toolCallContentChanged")
                if t.action["toolCallId"] == final["toolCallId"]
            ]
            assert len(revisions) == 4  # one per ACP plan update, each replacing the checklist
            assert "- [-] Read the code (in progress)" in revisions[0].action["content"][0]["text"]

    arun(go())


def test_usage_refusal_and_slash_commands(tmp_path: Path) -> None:
    async def go() -> None:
        async with acp_lab(tmp_path) as lab:
            turn = await lab.send("usage")
            # AHP's fields, and in _meta.acp what UsageInfo has no field for
            assert turn.state["usage"] == {
                "inputTokens": 1,
                "outputTokens": 42,
                "_meta": {"acp": {"totalTokens": 43}},
            }
            turn = await lab.send("refuse")
            assert turn.status == "error" and turn.error["errorType"] == "refusal"
            items = await lab.client.request(
                "completions", {"channel": lab.chat, "kind": "userMessage", "text": "/pl", "offset": 3}
            )
            assert [i["insertText"] for i in items["items"]] == ["/plan "]
            assert (await lab.send("hello")).status == "complete"  # still usable after a refusal
            # the item taken as AHP says (its text and its attachment): the agent gets the text
            # only, where it got a second block "[/plan] <description>" after the command's words
            said = {
                "text": "/plan the diff",
                "origin": {"kind": "user"},
                "attachments": [items["items"][0]["attachment"]],
            }
            await lab.adispatch(
                {"type": "chat/turnStarted", "turnId": "cmd-1", "startedAt": "now", "message": said}
            )
            await lab.wait_for(lab.chat, lambda s: s.get("activeTurn") is None or None, timeout=20)
            prompt = [f for f in lab.acp_frames if f.label == "session/prompt"][-1].message["params"][
                "prompt"
            ]
            assert prompt == [{"type": "text", "text": "/plan the diff"}]

    arun(go())


async def _frame(lab, label: str, timeout: float = 20):
    """The first frame with that label (the frame log wakes the waiter when one arrives)."""
    return await lab.agent.frames.wait_for(lambda f: f.label == label, timeout=timeout)


def test_diffs_past_the_content_budget_keep_their_calls_and_the_newest_sides(tmp_path: Path) -> None:
    """The host keeps the most recent ``max_agent_content_bytes`` of diff sides: a long session's
    later diffs kept failing (the whole tool call vanished from the chat) once the budget was
    spent; now the oldest sides go, and reading one says so."""

    async def go() -> None:
        async with acp_lab(
            tmp_path, bad_agent("diffs", str(tmp_path)), limits={"max_agent_content_bytes": 100_000}
        ) as lab:
            turn = await lab.send("go")
            assert turn.status == "complete"
            calls = [
                p["toolCall"] for p in lab.chat_state["turns"][-1]["responseParts"] if p["kind"] == "toolCall"
            ]
            assert [c["toolCallId"] for c in calls] == ["d0", "d1", "d2"]
            assert all(c["status"] == "completed" for c in calls)
            edits = [next(i for i in c["content"] if i["type"] == "fileEdit") for c in calls]
            client = lab.client
            newest = await client.request("resourceRead", {"uri": edits[2]["after"]["content"]["uri"]})
            assert newest["data"] == "2" * 40000
            with pytest.raises(RpcError, match="no longer kept") as gone:
                await client.request("resourceRead", {"uri": edits[0]["after"]["content"]["uri"]})
            assert gone.value.code == ErrorCode.CONTENT_NOT_FOUND  # -32006, not a file's -32008
            with pytest.raises(RpcError, match="is not content this host keeps") as unknown:
                await client.request("resourceRead", {"uri": "ahp-content:/nope"})
            assert unknown.value.code == ErrorCode.CONTENT_NOT_FOUND

    arun(go())


def test_a_turn_cancelled_during_a_permission_request_sends_session_cancel_before_its_answer(
    tmp_path: Path,
) -> None:
    """ACP has the client send session/cancel, then answer the pending permission request
    ``cancelled``; the answer went first, so the agent learnt of the cancel from it."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("ask", "always")) as lab:
            pending = lab.start("go")
            await pending_call(lab)
            asked = next(f for f in lab.acp_frames if f.method == "session/request_permission")
            await lab.cancel()
            assert (await pending).status == "cancelled"
            answer = await _frame(lab, f"response #{asked.message['id']}")
            cancel = await _frame(lab, "session/cancel")
            assert answer.message["result"]["outcome"] == {"outcome": "cancelled"}
            assert cancel.index < answer.index
            again = lab.start("again")  # the next turn asks again, and goes on once answered
            await pending_call(lab)
            lab.approve(option="aa")
            assert (await again).status == "complete"

    arun(go())


def test_a_call_an_always_allow_approves_shows_its_content_while_it_runs(tmp_path: Path) -> None:
    """A person's approval showed the call's content again once it ran; an approval remembered from
    "always allow" left the running call without it (running drops it, T3), so what it runs could
    not be seen (ACP agent round 9)."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("always_twice")) as lab:
            pending = lab.start("go")
            await asyncio.wait_for(pending.until_blocked(), 30)
            lab.approve(option="aa")
            turn = await asyncio.wait_for(pending, 30)
            assert 'outcome={"optionId": "aa"' in turn.text  # t2: approved by the host
            ready = [
                t for t in transitions(lab, "chat/toolCallReady") if t.action.get("confirmed") == "setting"
            ]
            shown = [
                t
                for t in lab.transitions
                if t.seq > ready[-1].seq
                and t.type == "chat/toolCallContentChanged"
                and t.action.get("toolCallId") == ready[-1].action["toolCallId"]
            ]
            assert shown and "will run npm test" in json.dumps(shown[0].action["content"])

    arun(go())


def test_closing_a_second_lab_on_a_host_leaves_the_first_labs_agent_running(tmp_path: Path) -> None:
    """A lab opened on another lab's host (``Lab(host=...)``) stopped, as it closed, the agent
    process of every session on that host: the first lab's next turn failed ("no ACP agent was
    opened") and so did every restart (ACP round 16). It stops only its own session's now."""

    async def go() -> None:
        async with acp_lab(tmp_path) as first:
            second = await Lab.open(host=first.host, working_directories=[tmp_path], client_id="second")
            assert (await first.send("hello")).status == "complete"
            assert (await second.send("hello")).status == "complete"
            await second.aclose()
            again = await first.send("hello")
            assert again.status == "complete", again.error
            assert again.text.startswith("Hello from the offline ACP agent!")

    arun(go())
