"""Our ACP agent, rounds 14 and 15: an interrupted start, keys on the command line or rotated in
``env``, an update nested past what can be read, an agent closed while it starts, updates between
turns."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from ahp_lab import Lab
from ahp_lab.agents.acp import AcpAgent
from ahp_lab.host import Host

from .conftest import BAD_AGENT, SECRET_ENV, acp_lab, arun, bad_agent

KEY = SECRET_ENV["BAD_AGENT_KEY"]


def test_a_start_interrupted_before_its_session_leaves_the_next_message_to_a_fresh_process(tmp_path: Path):
    """A restart given up on (a cell's ``wait_for``, a cancelled turn) while the fresh process
    answered ``initialize`` left the bridge running with no ACP session: the next message went out
    with no session id, failed with a reason that blamed the agent, and never reached it."""
    marker = tmp_path / "respawned"

    async def go():
        async with acp_lab(tmp_path, bad_agent("slow_respawn", str(marker))) as lab:
            with pytest.raises(TimeoutError):  # the fresh process waits for the marker to go
                await asyncio.wait_for(lab.restart_agent(), 1)
            marker.unlink()
            turn = await asyncio.wait_for(lab.send("hello"), 30)
            assert turn.status == "complete", turn.error
            assert "got hello" in turn.text
            assert "fresh agent process" in json.dumps(lab.chat_state)  # and it says so

    arun(go())


def test_a_key_on_the_agents_command_line_reaches_no_client(tmp_path: Path):
    """The agent's description on the root channel held its whole command line: a key given as
    ``--api-key`` went to every client, into transition 1 and the export, although the person
    gave the same value in ``env``."""

    async def go():
        agent = AcpAgent(
            [sys.executable, str(BAD_AGENT), "echo_key", "--api-key", KEY], env=SECRET_ENV, cwd=tmp_path
        )
        lab = await Lab.open(agent=agent, working_directories=[tmp_path])
        try:
            turn = await lab.send("say it")
            assert "my key is ***" in turn.text
            lab.export(tmp_path / "log.jsonl")
            assert (
                KEY not in json.dumps(lab.store.states()) and KEY not in (tmp_path / "log.jsonl").read_text()
            )
            [info] = lab.store.state("ahp-root://")["agents"]
            assert (
                info["description"]
                == "An ACP agent over stdio: " + Path(sys.executable).name + " bad_agent.py"
            )
        finally:
            await agent.aclose()
            await lab.aclose()

    arun(go())


def test_a_key_rotated_into_the_agents_env_is_masked_once_its_process_gets_it(tmp_path: Path):
    """The values of ``env`` were registered as secrets once, when the session opened: a key put
    into ``lab.agent.env`` later reached the fresh process of ``restart_agent()``, and the agent
    said it unmasked."""
    rotated = "rot8NEWkey-5521-ppqq-zz"

    async def go():
        async with acp_lab(tmp_path, bad_agent("echo_key")) as lab:
            lab.agent.env["BAD_AGENT_KEY"] = rotated
            await lab.restart_agent()
            turn = await lab.send("say it")
            lab.export(tmp_path / "log.jsonl")
            assert "my key is ***" in turn.text and rotated not in (tmp_path / "log.jsonl").read_text()

    arun(go())


def test_an_update_nested_past_what_can_be_read_fails_the_agent_with_the_reason(tmp_path: Path):
    """A tool call whose output nested 300 levels deep vanished: the turn ended as if the agent had
    said nothing, and only a log line told of it."""

    async def go():
        async with acp_lab(tmp_path, bad_agent("deep_update")) as lab:
            turn = await asyncio.wait_for(lab.send("go"), 30)
            assert turn.status == "error" and turn.error["errorType"] == "agentFailed"
            assert "could not read the agent's session/update" in turn.error["message"]

    arun(go())


def test_a_value_on_the_command_line_is_not_in_the_description():
    """The description named the command's second word whatever it was: ``my-agent <key>`` put the
    key in every client's root state (the review of stop 53's commits). A script's file is named."""
    assert (
        AcpAgent(["my-agent", "zq9SECRETvalue-7781"]).info()["description"]
        == "An ACP agent over stdio: my-agent"
    )
    assert (
        AcpAgent(["/usr/bin/python3", "/x/agent.py", "--key", "k"])
        .info()["description"]
        .endswith("python3 agent.py")
    )


def _running_children(word: str) -> list[int]:
    """Our child processes whose command line holds ``word`` and that have not exited."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # after the command's name: state, ppid, ...
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and word.encode() in cmdline:
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the agent's process in /proc")
def test_closing_an_agent_whose_session_is_still_starting_stops_its_process(tmp_path: Path):
    """A lab given up on while its agent had not answered ``initialize`` (a cell's ``wait_for``, an
    interrupted cell) left the process running, its pipes open and the tasks reading them alive
    until the initialize timeout, however long: ``agent.aclose()`` did not know of it. The session
    stayed "opening" too, and its URI could not be created again."""

    async def go():
        agent = AcpAgent(bad_agent("silent"), cwd=tmp_path, initialize_timeout=600)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(Lab.open(agent=agent, working_directories=[tmp_path]), 1)
        assert _running_children("silent")  # still waiting for its initialize answer
        await agent.aclose()
        assert _running_children("silent") == []
        assert [task for task in asyncio.all_tasks() if task is not asyncio.current_task()] == []

    arun(go())


def test_a_session_whose_agent_closed_while_it_started_fails_with_the_reason(tmp_path: Path):
    """A client creating a session when the agent closed mid-start waited for it forever (the
    session stayed "opening"): it is created, failed, saying why."""

    async def go():
        agent = AcpAgent(bad_agent("silent"), cwd=tmp_path, initialize_timeout=600)
        host = Host(agent)
        uri = "ahp-session:/started-then-closed"
        creating = asyncio.ensure_future(host.create_session(uri, {}))
        await asyncio.wait_for(_until(lambda: _running_children("silent")), 30)
        await agent.aclose()
        assert creating.cancelled()
        await asyncio.wait_for(host.agent_sessions.wait_opened(uri), 5)
        state = host.store.state(uri)
        assert state["lifecycle"] == "creationFailed"
        assert "stopped before it set up the session" in json.dumps(state)

    arun(go())


async def _until(check) -> None:
    while not check():
        await asyncio.sleep(0.01)


def test_a_call_announced_between_turns_and_ended_in_the_next_is_no_violation(tmp_path: Path):
    """An agent announced a call after its turn ended (a background job) and completed it in the
    next turn: the update failed the turn as a protocol violation ("never announced", a claim the
    frame log contradicts), and the process was killed with the conversation (our ACP agent, round
    15). A call and text between turns have no turn to show in; they stay in the frame log."""

    async def go():
        async with acp_lab(tmp_path, bad_agent("between_turns")) as lab:
            first = await asyncio.wait_for(lab.send("first"), 30)
            assert first.status == "complete"
            await lab.agent.frames.wait_for(
                lambda f: "said between turns" in json.dumps(f.message), timeout=10
            )
            second = await asyncio.wait_for(lab.send("second"), 30)
            assert second.status == "complete", second.error
            assert "got second" in second.text
            assert "fresh agent process" not in json.dumps(lab.chat_state)

    arun(go())


@pytest.mark.parametrize("ending", ["crash", "error", "hang"])
def test_the_plan_keeps_its_checklist_however_the_turn_ends(tmp_path: Path, ending: str):
    """docs/acp.md: the plan is "completed with the last checklist when the turn ends"; a turn the
    agent's crash, its error or a cancel ended left the plan call running, then skipped, its
    checklist dropped (our ACP agent, round 15)."""

    async def go():
        async with acp_lab(tmp_path, bad_agent("plan_ends")) as lab:
            pending = lab.start(ending)
            if ending == "hang":
                await lab.wait_for(
                    lab.chat, lambda chat: "step one" in json.dumps(chat.get("activeTurn")), 20
                )
                await lab.cancel()
            turn = await asyncio.wait_for(pending, 30)
            assert turn.status == ("cancelled" if ending == "hang" else "error")
            [plan] = [c.state for c in turn.tool_calls if c.state["toolName"] == "plan"]
            assert plan["status"] == "completed" and plan["success"] is True
            assert "- [x] step one" in json.dumps(plan["content"])

    arun(go())


def test_a_fresh_process_offers_its_own_commands_not_the_old_ones(tmp_path: Path):
    """The slash commands a replaced process announced stayed offered after ``restart_agent()``,
    though the fresh process announced none (our ACP agent, round 15)."""

    async def offered(lab) -> list:
        params = {"channel": lab.chat, "kind": "userMessage", "text": "/", "offset": 1}
        answer = await lab.client.request("completions", params)
        return [item.get("insertText") for item in answer.get("items") or ()]

    async def go():
        async with acp_lab(tmp_path, bad_agent("commands_once", str(tmp_path / "respawned"))) as lab:
            await lab.wait_for(lab.session, lambda s: s.get("lifecycle") == "ready" or None, 20)
            assert "/mid " in await offered(lab)
            await asyncio.wait_for(lab.restart_agent(), 30)
            assert "/mid " not in await offered(lab)

    arun(go())


def test_an_agent_that_needs_a_login_says_how_to_log_in(tmp_path: Path):
    """An agent that refused ``session/new`` with auth_required left the person with
    "Authentication required": the ways to log in it declared were dropped (our ACP agent, round 15)."""

    async def go():
        agent = AcpAgent(bad_agent("needs_login"), cwd=tmp_path)
        try:
            with pytest.raises(RuntimeError) as refused:
                await asyncio.wait_for(Lab.open(agent=agent, working_directories=[tmp_path]), 30)
        finally:
            await agent.aclose()
        assert (
            "Authentication required; the agent needs a login first, and offers: Log in (run `agent "
            "login`); API key: set AGENT_API_KEY in AcpAgent(env=...). Then create the session again"
        ) in str(refused.value)

    arun(go())


def test_an_agent_may_read_its_instructions_before_it_answers_session_new(tmp_path: Path):
    """docs/acp.md says a read "while a session opens" is served; an agent reading AGENTS.md before
    answering ``session/new`` (under the id its answer then gave) failed the session's creation:
    "the agent used session id 's1', which it never created" (our ACP agent, round 15)."""
    (tmp_path / "AGENTS.md").write_text("be nice\n")

    async def go():
        async with acp_lab(tmp_path, bad_agent("reads_first", str(tmp_path / "AGENTS.md"))) as lab:
            turn = await asyncio.wait_for(lab.send("hi"), 30)
            assert turn.status == "complete" and "read first: be nice" in turn.text

    arun(go())


def test_a_hostile_agents_login_text_reaches_the_person_as_one_masked_printable_line(tmp_path: Path):
    """The login hint passed the agent's text through raw: a clipboard-writing escape (run when a
    script's traceback prints), a bidi override, line breaks, and its own key with an escape
    inside, which the masking missed (the review of this session's commits, round 57)."""

    async def go():
        agent = AcpAgent(bad_agent("needs_login", "hostile"), cwd=tmp_path, env=SECRET_ENV)
        try:
            with pytest.raises(RuntimeError) as refused:
                await asyncio.wait_for(Lab.open(agent=agent, working_directories=[tmp_path]), 30)
        finally:
            await agent.aclose()
        text = str(refused.value).split(". Its stderr ended with:")[0]
        assert "offers: Log in (run" in text and "agent" in text
        assert not any(c in text for c in "\x1b\x07\u202e\n") and KEY not in text and KEY[5:] not in text

    arun(go())
