"""Helpers shared by the LoopAgent and extension tests: a Lab whose agent is a LoopAgent, set up in
temporary folders (no user config or tools from the machine), and small state queries."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ahp_lab import Lab
from ahp_lab.agents.loop import LoopAgent
from ahp_lab.extensions import Workspace


def arun(coro):
    return asyncio.run(coro)


async def loop_lab(
    tmp_path: Path,
    model: Any = None,
    extensions: Any = (),
    *,
    trusted: bool = False,
    lab: dict | None = None,
    **options: Any,
) -> tuple[Lab, LoopAgent]:
    """A Lab with a LoopAgent in ``tmp_path/ws`` (user config ``tmp_path/user.json``)."""
    (tmp_path / "ws").mkdir(exist_ok=True)
    options.setdefault("user_tools", None)
    options.setdefault("user_config", tmp_path / "user.json")
    options.setdefault("workspace", Workspace.at(tmp_path / "ws", trusted=trusted))
    agent = LoopAgent(model, extensions=list(extensions), **options)
    the_lab = await Lab.open(agent=agent, **(lab or {}))  # returns once the extensions are active
    return the_lab, agent


def actions(lab: Lab, type_: str, chat: str | None = None) -> list[dict]:
    return [t.action for t in lab.transitions if t.type == type_ and (chat is None or t.channel == chat)]


def notes(lab: Lab, chat: str | None = None) -> list[str]:
    """The system notifications of a chat, oldest first."""
    out = []
    for turn in (lab.state(chat or lab.chat) or {}).get("turns") or ():
        for part in turn.get("responseParts") or ():
            if part.get("kind") == "systemNotification":
                content = part.get("content")
                out.append(content if isinstance(content, str) else str((content or {}).get("markdown")))
    return out


async def wait_for(lab: Lab, check, channel: str | None = None, timeout: float = 20.0):
    return await lab.host.wait_for(channel or lab.session, lambda s: check(s) or None, timeout=timeout)
