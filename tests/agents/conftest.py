"""Fixtures for ACP tests: the offline example agent and a misbehaving one, as real subprocesses."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from ahp_lab import Lab
from ahp_lab.agents.acp import AcpAgent

from ..host.test_scenarios import assert_replay_reproduces as assert_replays  # noqa: F401 (shared)

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_AGENT = REPO_ROOT / "examples" / "acp_agent.py"
BAD_AGENT = Path(__file__).with_name("bad_agent.py")


def arun(coro):
    return asyncio.run(coro)


@contextlib.asynccontextmanager
async def acp_lab(workdir: Path, command: list[str] | None = None, **options) -> AsyncIterator[Lab]:
    """A Lab whose agent is an ACP subprocess working in ``workdir``; stopped on exit. ``limits``
    goes to the lab, every other option to :class:`AcpAgent`."""
    options.setdefault("idle_timeout", 20.0)
    options.setdefault("initialize_timeout", 20.0)
    options.setdefault("env", SECRET_ENV)
    lab_options = {"limits": options.pop("limits")} if "limits" in options else {}
    agent = AcpAgent(command or [sys.executable, str(EXAMPLE_AGENT)], cwd=workdir, **options)
    lab = await Lab.open(agent=agent, working_directories=[workdir], **lab_options)
    try:
        yield lab
    finally:
        await agent.aclose()
        await lab.aclose()


def bad_agent(mode: str, *extra: str) -> list[str]:
    return [sys.executable, str(BAD_AGENT), mode, *extra]


#: A secret the person hands the agent (``AcpAgent(env=...)``); agents print it on stderr.
SECRET_ENV = {"BAD_AGENT_KEY": "hunter2-secret-value", "OFFLINE_AGENT_TOKEN": "sk-test1234567890abcdef"}


def transitions(lab: Lab, action_type: str, origin_kind: str | None = None) -> list:
    return [
        t
        for t in lab.transitions
        if t.accepted
        and t.type == action_type
        and (origin_kind is None or t.origin.get("kind") == origin_kind)
    ]


async def pending_call(lab: Lab, timeout: float = 20) -> dict:
    """Wait until a tool call of the active turn waits for confirmation; returns it."""

    def find(chat):
        for part in (chat.get("activeTurn") or {}).get("responseParts") or ():
            tc = part.get("toolCall") if part.get("kind") == "toolCall" else None
            if tc and tc.get("status") == "pending-confirmation":
                return tc
        return None

    return await lab.wait_for(lab.chat, find, timeout=timeout)
