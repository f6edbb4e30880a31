"""Misbehaving ACP agents (real subprocesses, ``bad_agent.py``): every failure ends the turn with
``chat/error`` carrying the reason and a redacted stderr tail, the session stays usable, the agent
can be restarted, and the kernel's event loop keeps running throughout."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import signal
import time
from pathlib import Path

import pytest

from ahp_lab import Lab
from ahp_lab.agents.acp import AcpAgent
from ahp_lab.lab.remote import RemoteLab

from .conftest import SECRET_ENV, acp_lab, arun, bad_agent

CASES = {
    "hang": "sent nothing for 1.5 s during a turn",
    "garbage": "wrote a line to stdout that is not JSON-RPC",
    "flood": "flooded stderr (more than 1,000,000 bytes)",
    "unknown_session": "used session id 'someone-else', which it never created",
    "unknown_call": "updated tool call 'ghost', which it never announced",
    "second_response": "sent a second response to request #1",
    # the violation and the prompt's answer arrive in one read: the violation still ends the turn
    "unknown_call_answered": "updated tool call 'ghost', which it never announced",
    "unknown_session_answered": "used session id 'someone-else', which it never created",
    "bad_mode": "reported mode 'no-such-mode', which is not among the values it offered",
    "bad_stop": "answered session/prompt with a message that is not valid ACP: stopReason",
    "bad_update": "sent a session/update notification that is not valid ACP",
}


async def _loop_stays_responsive(done: asyncio.Future, budget_s: float = 0.5) -> float:
    """The longest gap between 20 ms ticks while ``done`` is pending (a blocked loop shows up here)."""
    worst = 0.0
    last = time.monotonic()
    while not done.done():
        await asyncio.sleep(0.02)  # a probe of the loop's latency, not synchronization
        now = time.monotonic()
        worst = max(worst, now - last)
        last = now
    assert worst < budget_s, f"the event loop was blocked for {worst:.2f} s"
    return worst


@pytest.mark.parametrize("mode", sorted(CASES))
def test_a_misbehaving_agent_ends_the_turn_with_the_reason(mode: str, tmp_path: Path) -> None:
    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent(mode), idle_timeout=1.5, stderr_limit=1_000_000) as lab:
            pending = asyncio.ensure_future(lab.send("go"))
            await _loop_stays_responsive(pending)
            turn = await pending
            assert turn.status == "error"
            assert turn.error["errorType"] == "agentFailed"
            message = turn.error["message"]
            assert CASES[mode] in message
            assert "bad agent starting" in message or mode == "flood"  # the stderr tail...
            assert "api_key=***" in message or mode == "flood"  # ...with the secret it was given masked
            assert "hunter2-secret-value" not in message  # redacted
            assert "working..." in turn.text  # what streamed before the failure stays
            # the session stays usable: the agent is restarted and the next turn runs again
            frames_before = len(lab.acp_frames)
            await lab.restart_agent()
            assert lab.session_state["lifecycle"] == "ready"
            second = await lab.send("again")
            assert second.status == "error" and CASES[mode] in second.error["message"]
            assert any(f.label == "initialize" for f in lab.acp_frames[frames_before:])  # a fresh process

    arun(go())


def test_nothing_an_agent_sends_after_its_failure_is_shown_in_the_failed_turn(tmp_path: Path) -> None:
    """A protocol violation has one outcome, the turn's error: the frames read after it in the same
    go were still mapped, a tool call and text before the chat/error."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("violation_then_more"), idle_timeout=5) as lab:
            turn = await lab.send("go")
            assert (
                turn.status == "error"
                and "updated tool call 'ghost-1', which it never announced" in (turn.error["message"])
            )
            assert "still here" not in turn.text and turn.tool_calls == []

    arun(go())


def test_an_agent_that_dies_between_turns_is_reported_by_the_next_turn(tmp_path: Path) -> None:
    """Killed after a turn (out of memory, say): the next turn says so, with the reason and the
    stderr tail, rather than silently running on a fresh process that lost the conversation."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("env")) as lab:
            assert (await lab.send("hello")).status == "complete"
            process = lab.agent.bridges[lab.session].process
            os.kill(process.pid, signal.SIGKILL)
            await process.wait()
            turn = await lab.send("are you there?")
            assert turn.status == "error" and turn.error["errorType"] == "agentFailed"
            message = turn.error["message"]
            assert "exited unexpectedly (exit code -9), between turns" in message
            assert "this message was not sent to it" in message
            assert "does not have the conversation so far" in message
            assert "bad agent starting in env mode; api_key=***" in message  # the stderr tail, redacted
            assert "hunter2-secret-value" not in message
            turn = await lab.send("again")  # the turn after runs on a fresh process
            assert turn.status == "complete"
            assert [f.label for f in lab.acp_frames].count("initialize") == 2

    arun(go())


def test_a_message_sent_behind_a_mode_change_that_failed_the_agent_runs_on_a_fresh_process(
    tmp_path: Path,
) -> None:
    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("mode_hang"), initialize_timeout=1.0) as lab:
            await lab.adispatch({"type": "session/configChanged", "config": {"mode": "code"}})
            turn = await lab.send("hi")  # waits for the mode change, which the agent never answers
            assert turn.status == "complete" and turn.text == "working... "
            assert lab.session_state["config"]["values"]["mode"] == "ask"  # put back
            labels = [f.label for f in lab.acp_frames]
            assert labels.count("initialize") == 2
            assert labels.index("session/prompt") > labels.index("initialize", 1)  # sent to the new one

    arun(go())


LONG_LOG = json.dumps({"level": "debug", "msg": "x" * 200})


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (
            '{"level":"info","msg":"starting"}',
            'a JSON object that is no request, notification or response: {"level":"info","msg":"starting"}',
        ),
        ("[1,2,3]", "a JSON array: [1,2,3]"),
        ("42", "a JSON number: 42"),
        ("hello there", "text that is not JSON: hello there"),
        (LONG_LOG, 'a JSON object that is no request, notification or response: {"level":"debug","msg":"xxx'),
    ],
    ids=["log-object", "array", "number", "text", "long-line"],
)
def test_json_on_stdout_that_is_not_json_rpc_fails_the_turn_saying_what_it_was(
    line: str, said: str, tmp_path: Path, caplog
) -> None:
    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("stdout_line", line)) as lab:
            turn = await lab.send("go")
            assert turn.status == "error" and turn.error["errorType"] == "agentFailed"
            message = turn.error["message"]
            assert message.startswith(f"the agent wrote a line to stdout that is not JSON-RPC but {said}")
            assert "(ACP allows only JSON-RPC messages there)" in message
            assert "exited" not in message  # it did not: it is stopped for what it wrote
            assert len(message.split(". Its stderr")[0]) < 300  # a long line is cut short
            assert "Receive loop failed" not in caplog.text  # no traceback besides the reason

    arun(go())


def test_an_agent_that_never_answers_initialize(tmp_path: Path) -> None:
    async def go() -> None:
        agent = AcpAgent(bad_agent("silent"), cwd=tmp_path, initialize_timeout=1.0, env=SECRET_ENV)
        started = time.monotonic()
        with pytest.raises(RuntimeError) as info:
            await Lab.open(agent=agent)
        assert "did not answer initialize within 1 s" in str(info.value)
        assert "hunter2-secret-value" not in str(info.value)
        assert time.monotonic() - started < 15
        assert not agent.bridges  # nothing left running

    arun(go())


def test_an_agent_of_another_protocol_version_is_refused(tmp_path: Path) -> None:
    async def go() -> None:
        agent = AcpAgent(bad_agent("future"), cwd=tmp_path)
        with pytest.raises(RuntimeError, match="speaks ACP protocol version 2; this host speaks 1"):
            await Lab.open(agent=agent)

    arun(go())


def test_a_respawn_that_never_answers_initialize_fails_the_turn(tmp_path: Path) -> None:
    async def go() -> None:
        marker = tmp_path / "started-once"
        async with acp_lab(
            tmp_path, bad_agent("crash_then_silent", str(marker)), initialize_timeout=1.0
        ) as lab:
            turn = await lab.send("go")
            assert turn.status == "error" and "exit code 5" in turn.error["message"]
            assert "crashing now" in turn.error["message"]
            turn = await lab.send("again")  # the next turn respawns the agent, which stays silent
            assert turn.status == "error"
            assert "did not answer initialize within 1 s" in turn.error["message"]

    arun(go())


def test_a_permission_request_after_cancel_is_answered_cancelled(tmp_path: Path) -> None:
    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("late_permission")) as lab:
            pending = lab.start("go")
            await lab.wait_for(
                lab.chat,
                lambda c: "working" in json.dumps((c.get("activeTurn") or {}).get("responseParts")) or None,
            )
            await lab.cancel()
            assert (await pending).status == "cancelled"
            answer = await lab.agent.frames.wait_for(
                lambda f: f.direction == "out" and f.message.get("id") == 900 and "result" in f.message
            )
            assert answer.message["result"]["outcome"] == {"outcome": "cancelled"}
            # no tool call was left waiting for a person
            assert not (lab.session_state.get("inputNeeded") or [])

    arun(go())


def test_kernel_secrets_do_not_reach_the_agent_process(tmp_path: Path, monkeypatch) -> None:
    """The agent process gets a trimmed environment plus what the person passed in ``env``."""
    monkeypatch.setenv("AHP_LAB_TEST_SECRET", "do-not-leak")

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("env"), env={"GIVEN": "1", **SECRET_ENV}) as lab:
            turn = await lab.send("go")
            names = json.loads(turn.text.removeprefix("working... "))
            assert "GIVEN" in names and "PATH" in names and "AHP_LAB_TEST_SECRET" not in names

    arun(go())


def test_a_message_over_the_line_bound_fails_the_agent_before_it_is_read_whole(tmp_path: Path) -> None:
    """An ACP agent of our own (round 5): one message chunk of 100 MB, in one line, was read whole
    and parsed on the kernel's loop, holding every session 2.4 s. Past ``max_line_bytes`` the agent
    fails with that reason, its line unread, and the next turn runs on a fresh process."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("huge_line"), max_line_bytes=4 * 1024 * 1024) as lab:
            turn = await lab.send("go")
            assert turn.status == "error"
            assert "wrote a message of more than 4,194,304 bytes to stdout" in turn.error["message"]
            assert "z" * 1000 not in turn.text  # nothing of it was applied

    arun(go())


def test_an_agent_streaming_large_chunks_fills_the_frame_log_only_up_to_its_budget(tmp_path: Path) -> None:
    """The agent is a stranger too: 200 chunks of 16,000 characters (3.2 MB of frames) leave the
    frame log holding at most its budget, the newest frames kept and the oldest unlinked from
    their transitions; the turn's text, which lives in state, keeps every chunk."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("big_chunks")) as lab:
            frames = lab.agent.frames
            frames.max_chars = 1_000_000
            turn = await lab.send("go")
            assert turn.status == "complete"
            assert all(f"[{i:03}]" in turn.text for i in range(200))
            kept = list(frames)
            assert sum(len(json.dumps(f.message)) for f in kept) <= 1_000_000
            assert kept[-1].kind == "response"  # the newest (the prompt's answer) is kept
            assert any(f.label == "session/update agent_message_chunk" for f in kept)
            deltas = [t for t in lab.transitions if t.type == "chat/delta"]
            first, last = frames.frames_for_seq(deltas[0].seq), frames.frames_for_seq(deltas[-1].seq)
            assert first == [] and len(last) == 1 and "[199]" in json.dumps(last[0].message)

    arun(go())


def test_a_cancelled_prompt_the_agent_never_ends_costs_it_its_process(tmp_path: Path) -> None:
    """The agent ignores ``session/cancel``: ``cancel_grace`` after the cancel its process is
    stopped, and the person's next turn runs on a fresh process, not failed for the old one, and
    says first that the fresh process does not have the conversation (it did so silently)."""

    async def go() -> None:
        marker = tmp_path / "started-once"
        async with acp_lab(tmp_path, bad_agent("deaf_once", str(marker)), cancel_grace=1.0) as lab:
            pending = lab.start("go")
            await lab.wait_for(
                lab.chat,
                lambda c: "working" in json.dumps((c.get("activeTurn") or {}).get("responseParts")) or None,
            )
            old = lab.agent.bridges[lab.session].process
            await lab.cancel()
            assert (await pending).status == "cancelled"
            assert await asyncio.wait_for(old.wait(), 15) is not None  # stopped, with no turn asking
            turn = await lab.send("again")
            assert turn.status == "complete", turn.error
            assert '"verbosity": "normal"' in turn.text  # the respawned process answered
            first = turn.state["responseParts"][0]
            assert first["kind"] == "systemNotification"
            assert "did not end the cancelled prompt within 1 s" in first["content"]
            assert "does not have the conversation so far" in first["content"]

    arun(go())


def test_a_change_of_two_options_leaves_host_and_agent_agreeing(tmp_path: Path) -> None:
    """Each ``set_config_option`` answer carries every option's value: the first answer's value
    of the second option (not sent yet) must not overwrite the client's change."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("options")) as lab:
            await lab.adispatch(
                {"type": "session/configChanged", "config": {"verbosity": "terse", "fast": True}}
            )
            turn = await lab.send("go")  # sent after the config reached the agent
            assert json.loads(turn.text.removeprefix("working... ")) == {"fast": True, "verbosity": "terse"}
            values = lab.session_state["config"]["values"]
            assert (values["verbosity"], values["fast"]) == ("terse", True)
            await lab.restart_agent()  # restoring both onto a fresh process agrees as well
            values = lab.session_state["config"]["values"]
            assert (values["verbosity"], values["fast"]) == ("terse", True)
            turn = await lab.send("again")
            assert json.loads(turn.text.removeprefix("working... ")) == {"fast": True, "verbosity": "terse"}

    arun(go())


def test_a_late_update_of_a_call_from_an_ended_turn_is_ignored_not_a_violation(tmp_path: Path) -> None:
    """ACP tool-call ids are unique in a session: an update of a call the agent announced in a turn
    that has ended comes too late to show, but the call was announced. It killed the agent, saying
    it never was; an id never announced still is a violation (the unknown_call mode)."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("late_update")) as lab:
            first = await lab.send("first")
            assert first.status == "complete"
            [call] = [p["toolCall"] for p in first.parts if p["kind"] == "toolCall"]
            assert call["status"] == "cancelled"  # the turn's end closed it
            second = await lab.send("second")
            assert second.status == "complete" and "done" in second.text
            assert not [p for p in second.parts if p["kind"] == "toolCall"]

    arun(go())


def test_a_stderr_tail_cut_through_the_agents_key_shows_none_of_it(tmp_path: Path) -> None:
    """The error keeps the last 2,048 bytes of stderr: cut before redaction, the cut fell inside
    the key and its end ('ecret-value'), too short to be recognised, showed (found by an ACP audit).
    The tail is cut from the redacted text."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("key_tail")) as lab:
            turn = await lab.send("go")
            message = turn.error["message"]
            assert turn.status == "error" and "BBBB" in message
            key = SECRET_ENV["BAD_AGENT_KEY"]
            assert not any(key[i:] in message for i in range(len(key) - 4))

    arun(go())


def test_a_stderr_tail_ending_in_the_start_of_the_agents_key_shows_none_of_it(tmp_path: Path) -> None:
    """An agent that died writing its key left 15 of its characters at the end of stderr, and the
    chat's error showed them (ACP agent round 13). The tail's end is read as a stream's end is."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("key_start")) as lab:
            turn = await lab.send("go")
            message = turn.error["message"]
            assert turn.status == "error" and message.endswith("dying: *** ; ***"), message
            assert SECRET_ENV["BAD_AGENT_KEY"][:6] not in message

    arun(go())


def test_a_stderr_tail_is_shown_without_escape_sequences_and_a_key_split_by_one_is_masked(
    tmp_path: Path,
) -> None:
    """The stderr tail went into the chat's error raw: colours, a window title, a hyperlink to
    another site and a clear-screen, which a client printing it to a terminal runs; and a key with
    an escape sequence inside it was not recognised, so redaction left it in."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("escapes")) as lab:
            turn = await lab.send("go")
            message = turn.error["message"]
            assert turn.status == "error" and "fatal: link cleared\nover key=" in message, message
            assert not any(c in message for c in "\x1b\x07\r") and "evil.example" not in message
            key = SECRET_ENV["BAD_AGENT_KEY"]
            assert key[6:] not in message

    arun(go())


LONG_KEY = "sk-proj-" + "Q7xZ" * 20 + "-tail-of-the-key"


def _no_part_of(key: str, text: str) -> bool:
    return not any(key[i:] in text or key[: len(key) - i] in text for i in range(len(key) - 4))


def test_a_stderr_buffer_cut_through_a_key_shows_none_of_it(tmp_path: Path) -> None:
    """The bridge keeps the last bytes of stderr, cut anywhere: when redaction shrank what it
    kept below the tail (an agent printing its 104-character key on every retry), the buffer's
    first line, starting inside a key, went into the error whole (audit). A cut buffer loses its
    first line."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("key_retries"), env={"BAD_AGENT_KEY": LONG_KEY}) as lab:
            turn = await lab.send("go")
            message = turn.error["message"]
            assert turn.status == "error" and "connecting with key ***" in message
            assert _no_part_of(LONG_KEY, message)

    arun(go())


def test_a_stdout_line_that_is_not_json_rpc_is_shown_without_part_of_a_key(tmp_path: Path) -> None:
    """The reason quotes the line's first 80 characters: cut before redaction, it ended inside the
    agent's key ('using key hunter2-correct-hor…'). The line is redacted, then cut."""

    async def go() -> None:
        line = "x" * 50 + " using key " + LONG_KEY
        async with acp_lab(tmp_path, bad_agent("stdout_line", line), env={"BAD_AGENT_KEY": LONG_KEY}) as lab:
            turn = await lab.send("go")
            message = turn.error["message"]
            assert turn.status == "error" and "using key ***" in message
            assert _no_part_of(LONG_KEY, message)

    arun(go())


def test_the_frames_a_cell_reads_have_the_agents_secrets_masked(tmp_path: Path) -> None:
    """``lab.acp_frames`` gave the frames as recorded, so a cell printing one saved the agent's key
    into the notebook, while the views showed them masked."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("echo_key"), env={"BAD_AGENT_KEY": LONG_KEY}) as lab:
            turn = await lab.send("go")
            assert "my key is ***" in turn.text
            frames = lab.acp_frames
            chunks = [f for f in frames if f.label == "session/update agent_message_chunk"]
            assert chunks and all(LONG_KEY not in json.dumps(f.message) for f in frames)
            assert any("my key is ***" in json.dumps(f.message) for f in chunks)

    arun(go())


def test_an_agents_key_is_masked_where_the_host_cuts_or_serves_what_it_says(tmp_path: Path) -> None:
    """An ACP agent of our own (round 3): the key reached the state through a 200-character title
    (cut before it was masked: 42 of its 43 characters stayed), a failed call's error (cut at 500),
    a frame's preview (cut at 16,384), and strangers through ``completions`` (a command's
    description) and ``resourceRead`` (a diff's new text, an embedded blob), which no action
    carries. None of it shows anywhere now."""
    import base64
    import re

    async def go() -> None:
        async with acp_lab(
            tmp_path, bad_agent("leaks", str(tmp_path)), env={"BAD_AGENT_KEY": LONG_KEY}
        ) as lab:
            turn = await lab.send("go")
            assert turn.state["state"] == "complete"
            assert lab.session_state["title"] == "t" * 190 + "***"
            shown = json.dumps([lab.session_state, lab.chat_state])
            assert _no_part_of(LONG_KEY, shown)
            [failed] = [c for c in turn.tool_calls if not c.success]
            assert failed.state["error"]["message"].startswith("y" * 490)

            served = []
            for uri in sorted(set(re.findall(r'"(ahp-content:[^"]+)"', shown))):
                answer = await lab.client.request("resourceRead", {"uri": uri})
                data = answer["data"]
                served.append(base64.b64decode(data).decode() if answer.get("encoding") == "base64" else data)
            assert any("KEY=***" in text for text in served) and any("blob ***" in text for text in served)
            assert all(_no_part_of(LONG_KEY, text) for text in served)

            params = {"channel": lab.chat, "kind": "userMessage", "text": "/dep", "offset": 4}
            offered = await lab.client.request("completions", params)
            assert "Deploy with key ***" in json.dumps(offered) and _no_part_of(LONG_KEY, json.dumps(offered))

            frames = json.dumps([f.message for f in lab.acp_frames])
            assert '"preview"' in frames and _no_part_of(LONG_KEY, frames)
            lab.export(tmp_path / "run.jsonl")
            assert _no_part_of(LONG_KEY, (tmp_path / "run.jsonl").read_text())

    arun(go())


@pytest.mark.parametrize(
    ("mode", "method"), [("write_between", "fs/write_text_file"), ("command_between", "terminal/create")]
)
def test_a_write_or_a_command_between_turns_is_refused_and_leaves_the_file_alone(
    mode: str, method: str, tmp_path: Path
) -> None:
    """An ACP agent of our own (round 3): a write sent after its turn ended was served, with
    nothing in the timeline (no turn to show it in), so the person's file changed unseen; and
    (round 7) a command was run then, which could change or delete any file, as unseen."""
    target = tmp_path / "between.txt"

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent(mode, str(target))) as lab:
            assert (await lab.send("first")).status == "complete"
            # the request reaches the host between the turns: the agent sends it after its answer,
            # and on a loaded machine it may come only after the next prompt went out, when no
            # host can tell it from that turn's (the next prompt waits for it here)
            await lab.agent.frames.wait_for(lambda f: f.direction == "in" and f.method == method)
            second = await lab.send("second")
            assert '"code": -32602' in second.text and "no prompt turn is running" in second.text
            assert not target.exists()

    arun(go())


def test_a_failed_calls_error_is_the_agents_words_not_the_hosts_note(tmp_path: Path) -> None:
    """An ACP agent of our own (round 3): a call that read a file and then failed with no content
    of its own had the host's note of the read as its error ("read …: 2 lines")."""
    target = tmp_path / "f.txt"
    target.write_text("one\ntwo\n")

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("read_then_fail", str(target))) as lab:
            turn = await lab.send("go")
            [call] = turn.tool_calls
            assert call.state["error"]["message"] == "Analyse failed"
            assert f"read {target}: 2 lines" in json.dumps(call.state["content"])  # still shown

    arun(go())


def test_an_agent_that_closes_its_output_alive_is_said_to_have_done_so(tmp_path: Path) -> None:
    """It was told as "the agent process exited unexpectedly (exit code None)", though it had not
    exited (an ACP agent of our own, round 3)."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("close_stdout")) as lab:
            turn = await lab.send("go")
            assert turn.status == "error"
            assert "the agent closed its output while still running; it was stopped" in turn.error["message"]

    arun(go())


def test_commands_the_system_cannot_run_are_refused_with_a_reason(tmp_path: Path, caplog) -> None:
    """An ACP agent of our own (round 7): an environment variable named "A=B", a NUL or a lone
    surrogate in a command got "Internal error" (-32603) and a traceback in the host's log."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("odd_commands")) as lab:
            turn = await asyncio.wait_for(lab.send("go"), 20)
            assert turn.status == "complete", turn.error
            assert turn.text.count("failed (-32602)") == 4, turn.text
            for reason in (
                "is empty or holds '='",
                "holds a NUL character",
                "lone surrogate",
                "command is empty",
            ):
                assert reason in turn.text
            assert "Traceback" not in caplog.text

    arun(go())


def test_a_file_name_that_is_not_utf8_is_shown_and_read_without_failing_the_agent(
    tmp_path: Path, caplog
) -> None:
    """An ACP agent of our own (round 7): a Python agent names a file whose name is not UTF-8 with a
    lone surrogate ("\\udcff"), valid JSON; its location or diff failed the agent (its process
    killed, "the host could not show the agent's tool_call"), and a read of it an internal error."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("odd_path", str(tmp_path))) as lab:
            turn = await asyncio.wait_for(lab.send("go"), 20)
            assert turn.status == "complete", turn.error
            [call, *_] = turn.tool_calls
            assert "%FF.txt" in json.dumps(call.state)  # the name's byte, in the file's URI
            assert "failed (-32002)" in turn.text  # the file is not there: ACP's own answer
            assert "Traceback" not in caplog.text

    arun(go())


async def _turns_a_late_client_sees(lab: Lab) -> list[str]:
    """The turns a client joining the lab's chat now over a socket sees (a snapshot it can read)."""
    url = await lab.aserve()
    remote = await RemoteLab.open(url, session=lab.session, client_id="late")
    try:
        return [t["id"] for t in remote.state(remote.chat)["turns"]]
    finally:
        await remote.aclose()


def test_a_tool_call_of_megabytes_is_shown_cut_and_the_chat_stays_joinable(tmp_path: Path) -> None:
    """An ACP agent of our own (round 7): a tool call's 20-million-character input became one action
    over every client's message limit; a remote client was disconnected and none could join the
    chat again. Its title, input, text and raw output are shown cut, saying how much more came."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("big_call")) as lab:
            turn = await asyncio.wait_for(lab.send("go"), 30)
            assert turn.status == "complete", turn.error
            [call] = turn.tool_calls
            state = json.dumps(call.state)
            assert len(state) < 1_000_000  # 7 MB came
            assert "more characters]" in call.state["toolInput"] and len(call.state["displayName"]) < 1100
            assert "structuredContent" not in json.dumps(call.state)
            assert await _turns_a_late_client_sees(lab) == [turn.id]

    arun(go())


def test_a_tool_call_of_every_content_kind_past_its_bound_stays_small_and_masked(tmp_path: Path) -> None:
    """Round 7 bounded a tool call's title, input and texts; the rest went into state whole (round
    8): a 20 MB image, a blob, a diff, a link, any number of locations and items. Each made the chat
    larger than a client's message limit, so no client could join it again; the blob's key was
    not masked (it is in state as base64), and a 9 MB diff held the loop 11 s."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("big_content")) as lab:
            turn = await asyncio.wait_for(lab.send("go"), 60)
            assert turn.status == "complete", turn.error
            call, small = turn.tool_calls
            content = call.state["content"]
            shown = json.dumps(turn.state)
            assert len(shown) < 1_500_000  # 16 MB came
            assert not any(c["type"] == "embeddedResource" for c in content)
            kept = [c for c in content if c["type"] == "resource" and c["uri"].startswith("ahp-content:/")]
            assert [c["contentType"] for c in kept] == ["image/png", "text/plain"]
            key = SECRET_ENV["BAD_AGENT_KEY"]
            blob = await lab.client.request("resourceRead", {"uri": kept[1]["uri"]})
            assert key not in base64.b64decode(blob["data"]).decode() and key not in shown
            notes = [c["text"] for c in content if c["type"] == "text" and c["text"].startswith("[")]
            assert any("link of 20,010 characters" in n for n in notes)
            assert any("more content items" in n for n in notes)
            assert any("a path of 20,003 characters is not shown" in n for n in notes)
            assert any("the diff of /w/big.txt is not shown" in n for n in notes)
            assert small.state["content"][0]["uri"] == kept[1]["uri"]  # the same bytes, kept once
            frames = json.dumps([f.to_json() for f in lab.acp_frames])
            assert "Read .env" in frames
            assert (
                re.search("[A-Za-z0-9+/]{300}", frames) is None
            )  # the image, cut in a preview, is not shown
            assert (
                "OPENAI_API_KEY=***" in base64.b64decode(frames.split('"blob": "')[1].split('"')[0]).decode()
            )
            assert await _turns_a_late_client_sees(lab) == [turn.id]

    arun(go())


def test_a_diff_with_a_code_fence_stays_inside_its_block_in_the_confirmation(tmp_path: Path) -> None:
    """The confirmation put each diff in a ``` block: a ``` line of the file (a README) closed it
    early, and the change itself showed as a paragraph, in the text the person decides on."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("fenced_edit")) as lab:
            pending = lab.start("go")
            await asyncio.wait_for(pending.until_blocked(), 30)
            call = next(c for c in pending.state["responseParts"] if c.get("kind") == "toolCall")["toolCall"]
            markdown = call["confirmationTitle"]["markdown"]
            assert "\n````diff\n" in markdown and markdown.endswith("+New usage line\n````")
            lab.approve()
            assert (await pending).status == "complete"

    arun(go())


@pytest.mark.parametrize("mode", ["always_scope", "always_no_input"])
def test_always_allow_covers_the_same_input_only(tmp_path: Path, mode: str) -> None:
    """An "always allow" was remembered by the call's kind and title: "Always allow `npm test`" for a
    call titled "Terminal" let the host approve `curl … | sh` under the same title by itself, without
    asking (ACP probe, round 8); and so it did for an agent that sends no input (rawInput is
    optional in ACP), the command in the call's content (ACP agent round 10). A request with
    another input, content or locations is put to the person."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent(mode)) as lab:
            pending = lab.start("go")
            await asyncio.wait_for(pending.until_blocked(), 30)
            lab.approve(option="aa")
            blocked = await asyncio.wait_for(pending.until_blocked(), 30)
            assert blocked is not None and "pending-confirmation" in blocked
            calls = [p["toolCall"] for p in pending.state["responseParts"] if p.get("kind") == "toolCall"]
            assert calls[-1]["toolCallId"] == "a2" and calls[-1]["status"] == "pending-confirmation"
            lab.deny()
            turn = await asyncio.wait_for(pending, 30)
            assert '"optionId": "aa"' in turn.text and '"optionId": "ro"' in turn.text

    arun(go())


def test_a_newer_always_reject_ends_an_always_allow_of_the_same_kind_and_title(tmp_path: Path) -> None:
    """An "always allow" remembered for one input outlived a later "always reject" of the same kind
    and title: the first input was approved again without asking (a verification round)."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("always_rejected")) as lab:
            pending = lab.start("go")
            await asyncio.wait_for(pending.until_blocked(), 30)
            lab.approve(option="aa")
            await asyncio.wait_for(pending.until_blocked(), 30)
            lab.deny(option="ra")
            turn = await asyncio.wait_for(pending, 30)
            assert 'first={"optionId": "aa"' in turn.text and 'second={"optionId": "ra"' in turn.text
            assert 'outcome={"optionId": "ra"' in turn.text  # npm test again: rejected, not allowed

    arun(go())


def test_a_wait_left_from_an_earlier_turn_does_not_hide_a_hang(tmp_path: Path) -> None:
    """An agent that left a wait for a dev server's exit in one turn was never taken for hung
    again: the host counted the agent's unanswered waits for the whole process. Only the turn's
    own waits count (ACP agent round 9)."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("background_wait"), idle_timeout=1.0) as lab:
            first = await lab.send("start the server")
            assert first.status == "complete", first.error
            second = await asyncio.wait_for(lab.send("now hang"), 30)  # it waited for ever
            assert second.status == "error" and "sent nothing for 1 s" in second.error["message"], (
                second.error
            )

    arun(go())


def test_a_permission_the_agent_ended_itself_is_answered_at_once(tmp_path: Path) -> None:
    """An agent that failed its own call while the person decided got its answer (``cancelled``)
    only 5 s later, and an agent with a shorter idle limit was failed as hung meanwhile, though it
    waited on the host (ACP agent round 9)."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("ends_own_call"), idle_timeout=2.0) as lab:
            turn = await lab.send("go")
            assert turn.status == "complete", turn.error
            assert 'outcome={"outcome": "cancelled"}' in turn.text

    arun(go())
