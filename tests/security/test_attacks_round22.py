"""Attacker round 22 (and this stop's own finds)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ahp_lab import Lab
from ahp_lab.agents.acp import AcpAgent

from ..agents.conftest import bad_agent
from .conftest import arun


def test_an_agents_file_request_waits_for_the_resource_command_before_it(tmp_path: Path) -> None:
    """An ACP agent's file requests were checked and served on the loop while a resource command's
    file work ran in its thread: a stranger's move putting a link where a checked folder was could
    send the agent's write outside every root. They now take the same turn as resource commands:
    an agent's read sent while a copy runs reads the copy done, where it found nothing before (a
    copy is put in place whole, at its end)."""
    work = tmp_path / "work"
    (work / "big").mkdir(parents=True)
    for i in range(3000):
        (work / "big" / f"f{i}").write_text("copied")

    async def go() -> None:
        agent = AcpAgent(bad_agent("read_all", str(work / "c" / "f0")), cwd=work, initialize_timeout=20.0)
        lab = await Lab.open(
            agent=agent,
            working_directories=[work],
            directories=[{"path": work, "contents": "skill", "writable": True}],
        )
        try:
            copy = asyncio.ensure_future(
                lab.client.request(
                    "resourceCopy", {"source": (work / "big").as_uri(), "destination": (work / "c").as_uri()}
                )
            )
            turn = await lab.send("go")
            assert copy.done() and await copy == {}
            assert turn.status == "complete" and "read 6 characters" in turn.text, turn.text
        finally:
            await agent.aclose()
            await lab.aclose()

    arun(go())
