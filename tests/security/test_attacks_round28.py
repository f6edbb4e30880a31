"""Attacker round 28: ways around round 27's rules, and a stranger's truncation."""

from __future__ import annotations

import asyncio
import subprocess

import pytest

from ahp_lab.agents.scripted import ask, call, text_question, then

from .conftest import (
    arun,
    asks_to_deploy,
    deploy_tool,
    joined,
    open_lab,
    queued_behind_a_waiting_turn,
    waiting_call,
)
from .test_attacks_round27 import _queued


def test_a_stranger_makes_no_folder_that_git_takes_for_a_git_directory(connect_stranger, tmp_path):
    """A stranger made ``evil/`` with ``HEAD``, ``objects/``, ``refs/`` and a ``config`` whose
    ``core.fsmonitor`` ran at the next ``git status`` in ``evil`` (attacker round 28: no path went
    through ``.git``). Without a ``HEAD`` git takes no folder for a git directory; and the names
    kept from strangers are kept in any letter case."""
    proj = tmp_path / "proj"
    proj.mkdir()
    config = '[core]\n\trepositoryformatversion = 0\n\tworktree = ..\n\tfsmonitor = "touch PWNED; false"\n'

    async def main():
        writable = [{"path": proj, "contents": "skill", "writable": True}]
        async with open_lab(roots=[tmp_path], working_directories=[proj], directories=writable) as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            for folder in ("evil/objects", "evil/refs"):
                assert "result" in await mallory.call("resourceMkdir", {"uri": (proj / folder).as_uri()})
            for name, data in (("evil/config", config), ("evil/HEAD", "ref: refs/heads/main\n")):
                await mallory.call(
                    "resourceWrite", {"uri": (proj / name).as_uri(), "data": data, "encoding": "utf-8"}
                )
            for name in ("evil/head", ".GIT/config", ".Vscode/tasks.json"):
                answer = await mallory.call(
                    "resourceWrite", {"uri": (proj / name).as_uri(), "data": "x", "encoding": "utf-8"}
                )
                assert answer["error"]["code"] == -32009, (name, answer)

    arun(main())
    assert not (proj / "evil" / "HEAD").exists()
    subprocess.run(["git", "status"], cwd=proj / "evil", capture_output=True, check=False)
    assert not (proj / "evil" / "PWNED").exists() and not (proj / "PWNED").exists()


def _open_request(chat):
    for part in (chat.get("activeTurn") or {}).get("responseParts") or ():
        if part.get("kind") == "inputRequest" and part.get("response") is None:
            return part["request"]
    return None


def test_a_strangers_answer_ends_the_notebooks_pre_approval_of_its_turn(connect_stranger):
    """The notebook's turn, sent with ``approve=True``, asked which target; a stranger answered
    "production" before the person, and the agent's next call, ``deploy(target="production")`` of
    a kernel tool, was approved by the notebook's policy (attacker round 28: round 27 covered a
    steering message only). Another client's answer, too, leaves the turn's later calls to a person."""

    async def main():
        async with open_lab() as lab:
            ran = []

            deploy_tool(lab, ran, confirm=True)

            mallory = await joined(connect_stranger, lab, "mallory", chat=True)
            script = [
                ask(text_question("target", "Which target?")),
                then(lambda scope: call("deploy", target=scope.last_input.value("target"), confirm=True)),
            ]
            pending = lab.start("deploy; ask me the target", approve=True, script=script)
            request = await lab.wait_for(lab.chat, _open_request)
            value = {"state": "submitted", "value": {"kind": "text", "value": "production"}}
            answer = {
                "type": "chat/inputCompleted",
                "turnId": lab.chat_state["activeTurn"]["id"],
                "requestId": request["id"],
                "response": "accept",
                "answers": {"target": value},
            }
            mallory.dispatch(lab.chat, 91, answer)
            assert "rejectionReason" not in await mallory.echo(91)
            waiting = await lab.wait_for(lab.chat, waiting_call)  # left to a person
            assert waiting["toolName"] == "deploy" and ran == []
            lab.deny()
            await asyncio.wait_for(pending, 10)
            assert ran == []

    arun(main())


def test_a_queued_message_id_elsewhere_is_not_the_notebooks_and_no_client_turn_takes_it(connect_stranger):
    """A stranger used the id of the notebook's queued message in a chat of its own, and the lab
    took it for a replacement of its message (attacker round 28); a turn there naming that id as
    its ``queuedMessageId`` would have had the notebook's ``approve=``. The id counts in the
    message's own chat only, and the notebook's queued message runs as sent."""

    async def main():
        async with open_lab() as lab:
            ran = []

            deploy_tool(lab, ran, confirm=True)

            mallory = await joined(connect_stranger, lab, "mallory", chat=True)
            first, queued, mine = await queued_behind_a_waiting_turn(lab)
            own = "ahp-chat:/mallory-own"
            made = await mallory.call("createChat", {"channel": lab.session, "chat": own})
            assert "error" not in made, made
            await mallory.call("subscribe", {"channel": own})
            # the chat is idle: the host starts the message at once, naming its id as queuedMessageId
            mallory.dispatch(own, 91, _queued("deploy target=production", mine["id"]))
            assert "rejectionReason" not in await mallory.echo(91)
            assert await lab.wait_for(own, waiting_call)  # its turn waits: no approve= of ours
            lab.deny()
            await first
            turn = await asyncio.wait_for(queued, 30)
            assert turn.state["message"]["text"] == "deploy target=staging" and ran == ["staging"]

    arun(main())


def test_a_turn_truncated_away_by_a_stranger_ends_the_notebooks_wait(connect_stranger):
    """A stranger's ``chat/truncated`` dropped the notebook's running turn, and the notebook's
    ``send`` waited for it for ever, with no error (attacker round 28)."""

    async def main():
        async with open_lab() as lab:
            deploy_tool(lab, [], confirm=True)

            mallory = await joined(connect_stranger, lab, "mallory", chat=True)
            pending = lab.start("deploy target=dev")
            await lab.wait_for(lab.chat, waiting_call)
            mallory.dispatch(lab.chat, 91, {"type": "chat/truncated"})
            assert "rejectionReason" not in await mallory.echo(91)
            with pytest.raises(LookupError, match="left the chat before it ended"):
                await asyncio.wait_for(pending, 10)

    arun(main())


def test_a_strangers_turn_may_not_take_the_notebooks_queued_message(connect_stranger):
    """A stranger cancelled its own turn and at once started the next under the notebook's queued
    message (``queuedMessageId``), before the host took it from the queue: the reducer dropped the
    notebook's message and the lab gave the stranger's turn its ``approve=``, which ran a kernel
    tool with the stranger's input (the review of stop 52). A client's turn takes only its own
    pending message, and a lab attaches its options to the turn the host starts only."""

    async def main():
        async with open_lab() as lab:
            ran = []

            deploy_tool(lab, ran, confirm=True)

            mallory = await joined(connect_stranger, lab, "mallory")
            await asks_to_deploy(mallory, lab, 90)  # the stranger's turn m1 waits for a person
            queued = lab.start("deploy target=staging", approve=True)
            [mine] = await lab.wait_for(lab.chat, lambda chat: chat.get("queuedMessages"))
            message = {"text": "deploy target=production", "origin": {"kind": "user"}}
            start = {"type": "chat/turnStarted", "turnId": "m2", "startedAt": "x", "message": message}
            mallory.dispatch(lab.chat, 91, {"type": "chat/turnCancelled", "turnId": "m1", "duration": 1})
            mallory.dispatch(lab.chat, 92, {**start, "queuedMessageId": mine["id"]})
            assert "rejectionReason" not in await mallory.echo(91)
            refused = (await mallory.echo(92)).get("rejectionReason") or ""
            assert "names a pending message another client set" in refused, refused
            turn = await asyncio.wait_for(queued, 30)
            assert turn.state["message"]["text"] == "deploy target=staging" and ran == ["staging"]

    arun(main())
