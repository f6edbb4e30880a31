"""Attacker round 30."""

from __future__ import annotations

from ahp_lab.agents.scripted import ScriptedAgent

from .conftest import arun, deploy_tool, joined, open_lab, waiting_call


def test_a_stranger_changing_the_agents_mode_does_not_drop_a_tools_confirmation(connect_stranger):
    """A tool registered with ``confirm=True`` is confirmed whatever the agent asks. A stranger set
    the session's mode to ``code`` (a mode is any client's to change), in which the agent calls
    tools without asking, and its own turn then ran the notebook's ``confirm=True`` kernel tool
    with its input, unconfirmed (attacker round 30)."""

    async def main():
        async with open_lab(agent=ScriptedAgent(modes=True)) as lab:
            ran = []
            deploy_tool(lab, ran, confirm=True)
            mallory = await joined(connect_stranger, lab, "mallory", chat=True)
            mallory.dispatch(lab.session, 1, {"type": "session/configChanged", "config": {"mode": "code"}})
            assert "rejectionReason" not in await mallory.echo(1)  # the spec lets any client
            message = {"text": "deploy target=production", "origin": {"kind": "user"}}
            start = {"type": "chat/turnStarted", "turnId": "m1", "startedAt": "x", "message": message}
            mallory.dispatch(lab.chat, 2, start)
            assert "rejectionReason" not in await mallory.echo(2)
            waiting = await lab.wait_for(lab.chat, waiting_call, timeout=20)
            assert waiting["toolName"] == "deploy" and ran == []  # it waits for the notebook
            lab.deny()
            await lab.wait_for(lab.chat, lambda s: not s.get("activeTurn") or None, timeout=20)
            assert ran == []

    arun(main())


def test_a_stranger_changing_the_mode_does_not_drop_a_destructive_tools_confirmation(connect_stranger):
    """The same with a tool annotated ``destructiveHint`` (the guide: it waits for a person): the
    agent's mode dropped its confirmation too (the review of stop 53's commits)."""

    async def main():
        async with open_lab(agent=ScriptedAgent(modes=True)) as lab:
            ran = []

            @lab.tool(annotations={"destructiveHint": True})
            def deploy(target: str) -> str:
                """Deploy to a target."""
                ran.append(target)
                return f"deployed to {target}"

            mallory = await joined(connect_stranger, lab, "mallory", chat=True)
            mallory.dispatch(lab.session, 1, {"type": "session/configChanged", "config": {"mode": "code"}})
            assert "rejectionReason" not in await mallory.echo(1)
            message = {"text": "deploy target=production", "origin": {"kind": "user"}}
            start = {"type": "chat/turnStarted", "turnId": "m1", "startedAt": "x", "message": message}
            mallory.dispatch(lab.chat, 2, start)
            assert "rejectionReason" not in await mallory.echo(2)

            def settled(chat):
                return waiting_call(chat) or (not chat.get("activeTurn") and chat.get("turns")) or None

            await lab.wait_for(lab.chat, settled, timeout=20)
            assert ran == [], f"the destructive tool ran unconfirmed with the stranger's input: {ran}"

    arun(main())
