"""Stopping an ACP agent (a restart, a crash, closing the lab) stops what it started and ends what
waits on it: its terminals with everything their commands started, the running turn, and a
permission request still waiting for a person. Real agent subprocesses (``bad_agent.py``)."""

from __future__ import annotations

import asyncio
import json
import os
import select
import sys
import threading
from pathlib import Path

import pytest

from ahp_lab import Lab
from ahp_lab.agents.acp import AcpAgent

from .conftest import EXAMPLE_AGENT, SECRET_ENV, acp_lab, arun, bad_agent, pending_call


def _exits(pid: int, timeout: float = 10.0) -> bool:
    """Whether process ``pid`` ends within ``timeout`` (a pidfd becomes readable when it does)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


def _pid(path: Path) -> int:
    return int(path.read_text().strip())


def test_a_restart_and_closing_the_lab_stop_the_terminals_the_agent_left_running(tmp_path: Path) -> None:
    marker = tmp_path / "pid"

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("terminal_left", str(marker))) as lab:
            assert (await lab.send("go")).status == "complete"
            first = _pid(marker)
            assert not _exits(first, 0)  # the agent never released it: it runs on after the turn
            await lab.restart_agent()
            assert _exits(first)
            assert (await lab.send("again")).status == "complete"
            second = _pid(marker)
            assert second != first and not _exits(second, 0)
            await asyncio.wait_for(lab.aclose(), 15)
            assert _exits(second)
            terminals = lab.host.store.state("ahp-root://")
            assert not [
                t for t in terminals.get("terminals") or () if t.get("exitCode") is None and "exited" not in t
            ]

    arun(go())


@pytest.mark.parametrize(
    ("mode", "exit_status"),
    [
        # terminal/kill signals the command's whole process group: wait_for_exit returns, and the
        # background sleep that held the output open goes with it
        ("terminal_group", '{"signal": "SIGKILL"}'),
        # the command exits while its background child holds the output open: wait_for_exit does
        # not wait for that child, and releasing the terminal stops it
        ("terminal_background", '{"exitCode": 0}'),
    ],
)
def test_a_terminal_has_exited_when_its_command_has_and_takes_what_it_started(
    mode: str, exit_status: str, tmp_path: Path
) -> None:
    marker = tmp_path / "pid"

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent(mode, str(marker))) as lab:
            turn = await asyncio.wait_for(lab.send("go"), 20)
            assert turn.status == "complete", turn.error
            assert f"exited={exit_status}" in turn.text
            assert _exits(_pid(marker))

    arun(go())


def test_a_restart_during_a_turn_ends_that_turn(tmp_path: Path) -> None:
    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("ask")) as lab:
            pending = lab.start("go")
            await pending_call(lab)  # the agent waits for a person
            await lab.restart_agent()
            turn = await asyncio.wait_for(pending, 10)
            assert turn.status == "error" and turn.error["errorType"] == "agentFailed"
            assert "stopped" in turn.error["message"]
            assert "stack" not in turn.error
            # the chat is free again: the next turn runs on the fresh process
            second = await asyncio.wait_for(lab.send("again", approve=True), 20)
            assert second.status == "complete" and 'outcome={"optionId": "ao"' in second.text

    arun(go())


def test_closing_the_lab_while_a_permission_request_waits_for_a_person(tmp_path: Path) -> None:
    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("ask")) as lab:
            pending = lab.start("go")
            await pending_call(lab)
            await asyncio.wait_for(lab.aclose(), 15)  # it used to wait for the person forever
            turn = await asyncio.wait_for(pending, 10)
            assert turn.status in ("error", "cancelled")

    arun(go())


def test_an_agent_waiting_for_its_command_to_exit_is_not_taken_for_a_hung_one(tmp_path: Path) -> None:
    """The agent sends nothing for 2 s while ``terminal/wait_for_exit`` waits on its command (a test
    suite, in real life): with a 1 s idle timeout it was killed for silence while it waited on us."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("terminal_slow"), idle_timeout=1.0) as lab:
            turn = await lab.send("go")
            assert turn.status == "complete", turn.error
            assert '"exitCode": 0' in turn.text

    arun(go())


def test_a_home_relative_folder_is_the_users_home_for_the_agent_and_the_session(
    tmp_path: Path, monkeypatch
) -> None:
    """``AcpAgent(cwd="~/project")`` and ``Lab(working_directories=["~/project"])``, as docs/acp.md
    writes them: ``~`` is the home folder, as for every other path ahp_lab takes. The agent could
    not be started (a folder named ``~`` under the kernel's), and the session named that folder."""
    monkeypatch.setenv("HOME", str(tmp_path))
    project = tmp_path / "project"
    project.mkdir()

    async def main() -> None:
        agent = AcpAgent([sys.executable, str(EXAMPLE_AGENT)], cwd="~/project", env=SECRET_ENV)
        lab = await Lab.open(agent=agent, working_directories=["~/project"])
        try:
            assert lab.session_state["workingDirectories"] == [project.resolve().as_uri()]
            turn = await lab.send("hello")
            assert turn.state["state"] == "complete"
        finally:
            await agent.aclose()
            await lab.aclose()

    arun(main())


def test_a_fresh_process_naming_an_old_terminal_id_is_not_shown_the_old_terminal(tmp_path: Path) -> None:
    """An ACP agent of our own (round 3): after a restart, the fresh process's ``term-1`` resolved
    to the terminal the old process had created, its output and exit shown in the new call."""
    marker = tmp_path / "pid"

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("terminal_left", str(marker))) as lab:
            assert (await lab.send("go")).status == "complete"
            await lab.restart_agent()
            turn = await lab.send("embed")
            [call] = turn.tool_calls
            content = call.state["content"]
            assert [c.get("type") for c in content] == ["text"]
            assert content[0]["text"] == "[terminal term-1 is not known to this host]"

    arun(go())


def test_an_agent_clearing_its_title_gives_the_session_its_title_back(tmp_path: Path) -> None:
    """ACP's session_info_update: a title set to null clears it (an ACP agent of our own, round 3:
    the agent's title stayed). The session gets back the title it had before the agent named it."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("title_cleared")) as lab:
            before = lab.session_state["title"]
            await lab.send("name it")
            assert lab.session_state["title"] == "Agent title"
            await lab.send("clear it")
            assert lab.session_state["title"] == before != "Agent title"

    arun(go())


def test_closing_the_lab_as_a_queued_message_starts_leaves_no_turn_running(tmp_path: Path) -> None:
    """Closing right after a cancel, as the message queued behind the cancelled turn started: the
    lab closed, but that turn's runner went on and started an agent process after it, and the
    script's ``asyncio.run`` then hung waiting for it. Closing stops the host's turns first."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("ask")) as lab:
            first = lab.start("go")
            await pending_call(lab)
            second = lab.start("next")
            assert second.queued
            await lab.cancel()
            assert (await asyncio.wait_for(first, 10)).status == "cancelled"
            await asyncio.wait_for(lab.aclose(), 15)
            running = [t for t in asyncio.all_tasks() if "TurnRunner" in repr(t.get_coro())]
            assert running == []

    done: list = []
    runs = threading.Thread(target=lambda: done.append(arun(go())), daemon=True)
    runs.start()
    runs.join(60)
    assert done == [None], "asyncio.run did not return: a task of the closed lab still runs"


def test_a_terminal_is_claimed_by_the_call_that_shows_it_not_the_plan(tmp_path: Path) -> None:
    """A terminal created while only the turn's plan ran was claimed by the plan (a call of the
    host's, which runs no command), and the claim was never corrected once call e1 showed it (ACP
    agent round 9)."""

    async def go() -> None:
        for mode, shown_by in (("plan_terminal", "e1"), ("two_calls_terminal", "x1")):
            async with acp_lab(tmp_path, bad_agent(mode)) as lab:
                turn = await lab.send("go")
                assert turn.status == "complete", turn.error
                [terminal] = lab.host.store.state("ahp-root://")["terminals"]
                claim = lab.host.store.state(terminal["resource"])["claim"]
                assert claim["toolCallId"] == shown_by, claim  # not y1, the call started last

    arun(go())


def test_a_cancel_stops_the_command_a_cancelled_call_runs(tmp_path: Path) -> None:
    """The person cancelled a turn while a call ran a command, and the agent answered ``cancelled``
    leaving its terminal alone: the command ran on, and the chat said nothing (ACP agent round
    11). The cancel stops the commands of the calls it cancels, and a notice says so."""
    marker = tmp_path / "pid"

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("cancelled_terminal", str(marker))) as lab:
            pending = lab.start("go")

            def said_running(chat: dict) -> bool:
                parts = (chat.get("activeTurn") or {}).get("responseParts") or ()
                return any(p.get("kind") == "markdown" and p.get("content") == "running" for p in parts)

            await lab.wait_for(lab.chat, said_running, timeout=20)
            await lab.cancel()
            turn = await asyncio.wait_for(pending, 20)
            assert turn.status == "cancelled" and _exits(_pid(marker))
            notes = [
                p["content"] for p in turn.state["responseParts"] if p.get("kind") == "systemNotification"
            ]
            assert notes == [
                "The cancel stopped the command 'sh -c echo $$ > "
                f"{marker}; echo started; exec sleep 1000' that tool call 'npm install' (c1) ran."
            ]

    arun(go())


@pytest.mark.parametrize("prompt", ["go", "leave", "wait", "fail"])
def test_a_command_no_call_runs_gets_a_call_of_its_own(tmp_path: Path, prompt: str) -> None:
    """An agent ran a command while no tool call was open, and no call of its showed it: nothing in
    the chat did (ACP agent round 11), where a bare file request gets a call of its own. So does
    such a command, once it exits (its output and exit code), or when the turn ends first (saying
    it still runs), a cancel too. One that failed showed a successful call (ACP agent round 15)."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("bare_terminal")) as lab:
            pending = lab.start(prompt)
            if prompt == "wait":
                await lab.wait_for(lab.chat, lambda chat: "running" in json.dumps(chat.get("activeTurn")), 20)
                await lab.cancel()
            turn = await asyncio.wait_for(pending, 20)
            [call] = turn.tool_calls
            state = call.state
            [terminal, output, *note] = state["content"]
            assert state["status"] == "completed" and state["success"] is (prompt != "fail")
            assert terminal["type"] == "terminal" and output["type"] == "text"
            if prompt == "fail":
                assert terminal["result"]["exitCode"] == 2 and "failing" in terminal["result"]["preview"]
                assert note[0]["text"] == "The command exited with code 2."
                assert state["error"]["message"] == "The command exited with code 2."
            elif prompt == "go":
                assert state["displayName"] == "run sh -c echo hello"
                assert terminal["result"]["exitCode"] == 0 and "hello" in terminal["result"]["preview"]
                assert note == []
            elif prompt == "leave":
                assert state["displayName"] == "run sh -c exec sleep 30" and "result" not in terminal
                assert note[0]["text"] == (
                    "The command was still running when the turn ended; its terminal shows the rest."
                )
            else:  # the cancel stopped it (a review found it running on, the chat saying it still ran)
                assert note[0]["text"] == "The cancel stopped this command; its terminal shows what it wrote."
                await lab.wait_for(terminal["resource"], lambda t: t.get("exitCode") is not None, 20)
            claims = lab.host.store.state(terminal["resource"])["claim"]
            assert claims["toolCallId"] == state["toolCallId"]

    arun(go())


def test_a_cancel_leaves_a_command_a_completed_call_shows(tmp_path: Path) -> None:
    """A cancel stops the commands no call shows; one a completed call of the agent's shows (a dev
    server it started and left running) runs on, as it does when the turn ends by itself."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("bare_terminal")) as lab:
            pending = lab.start("shown")
            await lab.wait_for(lab.chat, lambda chat: "running" in json.dumps(chat.get("activeTurn")), 20)
            await lab.cancel()
            turn = await asyncio.wait_for(pending, 20)
            [call] = turn.tool_calls
            terminal = call.state["content"][0]
            assert call.state["toolCallId"] == "srv" and terminal["type"] == "terminal"
            with pytest.raises(TimeoutError):  # it runs on: no exit comes (a kill's would, at once)
                await lab.wait_for(terminal["resource"], lambda t: t.get("exitCode") is not None, 3)
            notices = [
                p.get("content") for p in turn.state["responseParts"] if p.get("kind") == "systemNotification"
            ]
            assert not any("The cancel stopped" in str(n) for n in notices)

    arun(go())
