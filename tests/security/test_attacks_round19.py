"""Attacker round 19 (and this stop's own finds)."""

from __future__ import annotations

import asyncio

from ahp_lab import Lab
from ahp_lab.agents.scripted import ScriptedAgent

from .conftest import arun, joined


class Lingering(ScriptedAgent):
    """An agent whose turn takes its time to stop (an ACP agent answering a cancel late)."""

    def __init__(self) -> None:
        super().__init__()
        self.turns = 0
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    async def run_turn(self, ctx) -> None:
        self.turns += 1
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await self.release.wait()
            raise


def test_a_stranger_cannot_start_a_turn_while_the_lab_closes(connect_stranger):
    """Closing a lab ends its turns and waits for them to stop; meanwhile its served host still
    took a stranger's ``turnStarted``, and ran its agent for a lab that had closed."""

    async def main():
        agent = Lingering()
        lab = await Lab.open(agent=agent)
        mallory = await joined(connect_stranger, lab, "mallory")
        await mallory.call("subscribe", {"channel": lab.chat})
        lab.start("work")
        await asyncio.wait_for(agent.started.wait(), 10)
        lab.close()  # in the background: the running turn is ended, and waited for
        await lab.host.wait_for(lab.chat, lambda s: True if not s.get("activeTurn") else None, timeout=10)
        message = {"text": "run after close", "origin": {"kind": "user"}}
        start = {"type": "chat/turnStarted", "turnId": "late", "startedAt": "x", "message": message}
        mallory.dispatch(lab.chat, 7, start)
        echo = await mallory.echo(7)
        agent.release.set()
        assert "the host is closing" in echo.get("rejectionReason", ""), echo
        assert agent.turns == 1
        assert not any(t["id"] == "late" for t in lab.host.store.state(lab.chat).get("turns") or ())
        await lab.aclose()

    arun(main())
