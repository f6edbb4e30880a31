"""Stopping an ACP agent (a restart, a crash, closing the lab) stops what it started and ends what
waits on it: its terminals with everything their commands started, the running turn, and a
permission request still waiting for a person. Real agent subprocesses (``bad_agent.py``)."""

from __future__ import annotations

import asyncio
import os
import select
from pathlib import Path

from .conftest import acp_lab, arun, bad_agent, pending_call


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
            terminals = lab.host.store.state("ahp-root:/") or {}
            assert not [
                t for t in terminals.get("terminals") or () if t.get("exitCode") is None and "exited" not in t
            ]

    arun(go())


def test_killing_a_terminal_kills_what_its_command_started(tmp_path: Path) -> None:
    """``terminal/kill`` signals the command's whole process group, so ``wait_for_exit`` returns
    even while a background child of the command still holds its output open."""
    marker = tmp_path / "pid"

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("terminal_group", str(marker))) as lab:
            turn = await asyncio.wait_for(lab.send("go"), 20)
            assert turn.status == "complete", turn.error
            assert 'exited={"signal": "SIGKILL"}' in turn.text
            assert _exits(_pid(marker))  # the background sleep went with it

    arun(go())


def test_a_command_has_exited_when_its_process_has(tmp_path: Path) -> None:
    """A background child holding the output open does not keep ``wait_for_exit`` waiting; releasing
    the terminal then stops that child too."""
    marker = tmp_path / "pid"

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("terminal_background", str(marker))) as lab:
            turn = await asyncio.wait_for(lab.send("go"), 20)
            assert turn.status == "complete", turn.error
            assert 'exited={"exitCode": 0}' in turn.text
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
