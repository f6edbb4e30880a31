"""Attacker round 29: the notebook's own automation (approve=, answers=, local approvals) turned
against the person."""

from __future__ import annotations

import asyncio

import pytest

from ahp_lab.agents.scripted import call, then
from ahp_lab.host.redaction import Redactor

from .conftest import arun, deploy_tool, joined, open_lab, waiting_call
from .test_attacks_round28 import _open_request


def test_a_refused_start_leaves_no_policy_for_a_stranger_to_take(connect_stranger):
    """``lab.start(..., approve=True, queue=False)`` refused by the host (another client's turn
    ran) left its policy armed under its turn id, which the rejection showed every subscriber; a
    stranger's later turn under that id had its call of a kernel tool approved (attacker round 29)."""

    async def main():
        async with open_lab() as lab:
            ran = []
            deploy_tool(lab, ran, confirm=True)
            mallory = await joined(connect_stranger, lab, "mallory", chat=True)
            hello = {"text": "hello", "origin": {"kind": "user"}}
            mallory.dispatch(
                lab.chat, 90, {"type": "chat/turnStarted", "turnId": "m1", "startedAt": "x", "message": hello}
            )
            await mallory.echo(90)
            await lab.wait_for(lab.chat, lambda chat: chat.get("activeTurn"))
            with pytest.raises(Exception, match="a turn is already in progress"):
                await lab.send("deploy target=staging", approve=True, queue=False)
            [refused] = await mallory.wait(
                lambda: (
                    [
                        e
                        for e in mallory.envelopes()
                        if e.get("rejectionReason") and e["action"]["type"] == "chat/turnStarted"
                    ]
                    or None
                )
            )
            leaked = refused["action"]["turnId"]
            await lab.wait_for(lab.chat, lambda chat: chat.get("activeTurn") is None or None)
            message = {"text": "deploy target=production", "origin": {"kind": "user"}}
            mallory.dispatch(
                lab.chat,
                91,
                {"type": "chat/turnStarted", "turnId": leaked, "startedAt": "x", "message": message},
            )
            assert "rejectionReason" not in await mallory.echo(91)
            waiting = await lab.wait_for(lab.chat, waiting_call)  # nobody's policy answers it
            assert waiting["toolName"] == "deploy" and ran == [] and not lab._policies

    arun(main())


def test_an_answer_naming_another_turn_still_ends_the_pre_approval(connect_stranger):
    """A stranger's answer carrying a made-up ``turnId`` (no field of ``chat/inputCompleted``) was
    taken as one for that other turn, and the notebook's pre-approved turn kept its policy: the
    kernel ran ``deploy("production")`` (attacker round 29, around round 28's fix)."""

    async def main():
        async with open_lab() as lab:
            ran = []
            deploy_tool(lab, ran, confirm=True)
            mallory = await joined(connect_stranger, lab, "mallory", chat=True)
            from ahp_lab.agents.scripted import ask, text_question

            script = [
                ask(text_question("target", "Which target?")),
                then(lambda scope: call("deploy", target=scope.last_input.value("target"), confirm=True)),
            ]
            pending = lab.start("deploy; ask me the target", approve=True, script=script)
            request = await lab.wait_for(lab.chat, _open_request)
            value = {"state": "submitted", "value": {"kind": "text", "value": "production"}}
            answer = {
                "type": "chat/inputCompleted",
                "turnId": "elsewhere",
                "requestId": request["id"],
                "response": "accept",
                "answers": {"target": value},
            }
            mallory.dispatch(lab.chat, 91, answer)
            assert "rejectionReason" not in await mallory.echo(91)
            waiting = await lab.wait_for(lab.chat, waiting_call)
            assert waiting["toolName"] == "deploy" and ran == []
            lab.deny()
            await asyncio.wait_for(pending, 10)

    arun(main())


def test_a_strangers_tool_result_ends_the_pre_approval(connect_stranger):
    """The notebook's pre-approved turn called a tool a stranger published; its result
    ("production") decided the next call of the notebook's kernel tool, which approve= approved
    (attacker round 29). What another client's tool returns is that client's words too."""

    async def main():
        async with open_lab() as lab:
            ran = []
            deploy_tool(lab, ran, confirm=True)
            mallory = await joined(connect_stranger, lab, "mallory", chat=True)
            tool = {"name": "lookup_target", "description": "Which target", "inputSchema": {"type": "object"}}
            active = {"clientId": "mallory", "tools": [tool]}
            mallory.dispatch(lab.session, 90, {"type": "session/activeClientSet", "activeClient": active})
            assert "rejectionReason" not in await mallory.echo(90)
            script = [
                call("lookup_target"),
                then(lambda scope: call("deploy", target=scope.last_tool.text.strip(), confirm=True)),
            ]
            pending = lab.start("deploy where lookup_target says", approve=True, script=script)

            def running():
                turn = (lab.host.store.state(lab.chat) or {}).get("activeTurn") or {}
                for part in turn.get("responseParts") or ():
                    tc = part.get("toolCall") if part.get("kind") == "toolCall" else None
                    if tc and tc["toolName"] == "lookup_target" and tc["status"] == "running":
                        return turn["id"], tc["toolCallId"]
                return None

            turn_id, call_id = await mallory.wait(running)
            result = {
                "success": True,
                "pastTenseMessage": "Looked up",
                "content": [{"type": "text", "text": "production"}],
            }
            complete = {
                "type": "chat/toolCallComplete",
                "turnId": turn_id,
                "toolCallId": call_id,
                "result": result,
            }
            mallory.dispatch(lab.chat, 91, complete)
            assert "rejectionReason" not in await mallory.echo(91)
            waiting = await lab.wait_for(lab.chat, waiting_call)
            assert waiting["toolName"] == "deploy" and ran == []
            lab.deny()
            await asyncio.wait_for(pending, 10)

    arun(main())


@pytest.mark.parametrize(
    ("verdict", "outcome"),
    [
        (lambda call: {"deny": True}, "denied"),
        (lambda call: None, "left"),  # left to a person
        (lambda call: {"edit": {"target": "staging"}}, "refused"),  # a local approval takes no edit
        (True, "ran"),
    ],
)
def test_a_local_approval_reads_verdicts_as_every_answer_does(verdict, outcome):
    """A local approval (``@lab.tool(approval="always")``) took anything but ``False``/``"deny"``
    for a yes: ``{"deny": True}`` approved, an approver returning ``None`` approved, and an edit
    ran the agent's input unedited (attacker round 29). ``None`` leaves it to a person, and an
    edit, which a local approval cannot carry, is refused with the reason."""

    async def main():
        async with open_lab() as lab:
            done = []
            deploy_tool(lab, done, approval="always")
            pending = lab.start("deploy", script=[call("deploy", target="production")], approve=verdict)
            if outcome == "refused":
                with pytest.raises(ValueError, match="with an option or an edit"):
                    await asyncio.wait_for(pending, 10)
            if outcome in ("left", "refused"):
                await lab.client.wait_for(lab.chat, lambda _state: lab.client.approvals or None, timeout=10)
                with pytest.raises(ValueError, match="without an option or an edit"):
                    lab.approve(edit={"target": "staging"})
                assert lab.client.approvals and done == []
                lab.deny()
            if outcome != "refused":
                await asyncio.wait_for(pending, 10)
            assert done == (["production"] if outcome == "ran" else [])

    arun(main())


def test_an_agents_choice_unmasks_no_word_of_a_named_secret():
    """A passphrase's long words are masked on their own too; an agent offering one of them as a
    choice un-masked that word everywhere (attacker round 29)."""
    redactor = Redactor()
    redactor.add_env({"DB_PASSPHRASE": "correct horsebattery staple"})
    redactor.forget("horsebattery")
    assert redactor.text("the horsebattery") == "the ***"


def test_a_strangers_denial_with_a_message_ends_the_pre_approval(connect_stranger):
    """A stranger denied a call in the notebook's pre-approved turn with a ``reasonMessage``
    ("production"), which the agent reads as the call's outcome; approve= went on approving, and
    the kernel ran ``deploy("production")`` (the review of stop 52's last commits)."""

    async def main():
        async with open_lab() as lab:
            ran = []
            deploy_tool(lab, ran, confirm=True)

            @lab.server_tool(confirm=True)
            def lookup_target() -> str:
                """Which target to deploy to (the host runs it: any client may confirm it)."""
                return "staging"

            mallory = await joined(connect_stranger, lab, "mallory", chat=True)
            script = [
                call("lookup_target", confirm=True),
                then(
                    lambda scope: call("deploy", target=scope.last_tool.message.strip() or "?", confirm=True)
                ),
            ]
            # the approver leaves the lookup to a person (None), and approves deploys
            pending = lab.start(
                "deploy", script=script, approve=lambda c: True if c.name == "deploy" else None
            )
            waiting = await lab.wait_for(lab.chat, waiting_call)
            deny = {
                "type": "chat/toolCallConfirmed",
                "turnId": lab.chat_state["activeTurn"]["id"],
                "toolCallId": waiting["toolCallId"],
                "approved": False,
                "reason": "denied",
                "reasonMessage": {"markdown": "production"},
            }
            mallory.dispatch(lab.chat, 91, deny)
            assert "rejectionReason" not in await mallory.echo(91)
            waiting = await lab.wait_for(
                lab.chat, lambda chat: (c := waiting_call(chat)) and c["toolName"] == "deploy" and c
            )
            assert ran == []
            lab.deny()
            await asyncio.wait_for(pending, 10)
            assert ran == []

    with pytest.warns(UserWarning, match="took words from client 'mallory'"):
        arun(main())


def test_a_stranger_copies_no_git_directory_to_rewrite(connect_stranger, tmp_path):
    """A stranger copied the project's ``.git`` under another name (a read of ``.git`` is allowed)
    and rewrote its ``config``: git took the copy for a git directory, and its ``core.fsmonitor``
    ran at ``git status`` there (the review of stop 52's last commits)."""
    import subprocess

    proj = tmp_path / "proj"
    proj.mkdir()
    subprocess.run(["git", "init", "-q", str(proj)], check=True)

    async def main():
        writable = [{"path": proj, "contents": "skill", "writable": True}]
        async with open_lab(roots=[tmp_path], working_directories=[proj], directories=writable) as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            copy = {"source": (proj / ".git").as_uri(), "destination": (proj / "evil").as_uri()}
            copied = await mallory.call("resourceCopy", copy)
            assert copied["error"]["code"] == -32009 and "holds 'HEAD'" in copied["error"]["message"], copied
            (proj / "notes").mkdir()
            (proj / "notes" / "a.md").write_text("a")
            other = {"source": (proj / "notes").as_uri(), "destination": (proj / "notes2").as_uri()}
            assert "result" in await mallory.call("resourceCopy", other)  # any other folder copies

    arun(main())
    assert not (proj / "evil").exists()


def test_run_with_an_approver_that_leaves_a_call_to_a_person_says_so():
    """``lab.run(..., approve=f)`` with ``f`` returning ``None`` (leave it to a person) waited for
    ever, as ``lab.run`` with ``approve=`` did on a question: it refuses to wait for a person, and
    says the turn waits for one (the review of stop 52's last commits)."""
    from ahp_lab import HumanInputNeeded, Lab

    lab = Lab()
    ran = []
    deploy_tool(lab, ran, confirm=True)
    with pytest.raises(HumanInputNeeded, match="waiting for a person"):
        lab.run("deploy target=prod", approve=lambda c: None)
    lab.deny()
    assert ran == []
    turn = lab.run("deploy target=prod", approve=1)  # a truthy number is a yes, as True is
    assert turn.tool_calls[0].status == "completed" and ran == ["prod"]
    lab.close()
