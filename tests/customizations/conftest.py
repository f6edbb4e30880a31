"""Helpers for the customization and MCP tests: real folders on disk, real server subprocesses."""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
DEMO_PLUGIN = EXAMPLES / "plugins" / "ahp-lab-demo"
DEMO_SERVER = EXAMPLES / "mcp_server.py"


def arun(coro):
    return asyncio.run(coro)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def skill_md(name: str, description: str, body: str = "Do the thing.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n"


def demo_server(*args: str, **extra) -> dict:
    """An ``mcp_servers`` entry running examples/mcp_server.py with the test's interpreter."""
    return {"command": sys.executable, "args": [str(DEMO_SERVER), *args], **extra}


def entries(state) -> list[dict]:
    return list((state or {}).get("customizations") or ())


def find(state, cid: str) -> dict | None:
    for entry in entries(state):
        if entry.get("id") == cid:
            return entry
        for child in entry.get("children") or ():
            if child.get("id") == cid:
                return child
    return None


def by_type(state, type_: str) -> list[dict]:
    out = []
    for entry in entries(state):
        if entry.get("type") == type_:
            out.append(entry)
        out.extend(c for c in entry.get("children") or () if c.get("type") == type_)
    return out


async def wait_state(lab, check, timeout: float = 20.0):
    """Wait on the session state (as the notebook's client sees it) until ``check`` returns a value."""
    return await lab.client.wait_for(lab.session, lambda s: check(s or {}), timeout=timeout)


async def wait_loaded(lab, timeout: float = 20.0) -> list[dict]:
    """Wait until no container is loading any more; returns the top-level entries."""

    def done(s):
        items = entries(s)
        if items and all((e.get("load") or {}).get("kind") != "loading" for e in items if "load" in e):
            return items
        return None

    return await wait_state(lab, done, timeout)


async def wait_server(lab, cid: str, *kinds: str, timeout: float = 20.0) -> dict:
    def check(s):
        entry = find(s, cid)
        return entry if entry and (entry.get("state") or {}).get("kind") in kinds else None

    return await wait_state(lab, check, timeout)


@pytest.fixture
def demo_plugin(tmp_path: Path) -> Path:
    """A copy of examples/plugins/ahp-lab-demo whose .mcp.json points at the real demo server."""
    target = tmp_path / "plugins" / "ahp-lab-demo"
    shutil.copytree(DEMO_PLUGIN, target)
    mcp = (target / ".mcp.json").read_text().replace("${PLUGIN_ROOT}/../../mcp_server.py", str(DEMO_SERVER))
    (target / ".mcp.json").write_text(mcp)
    return target


def assert_protocol_entry(entry: dict) -> None:
    """The entry validates as a ``Customization`` and carries no key the protocol does not define."""
    from pydantic import TypeAdapter

    from ahp_lab.protocol import customizations as pc

    models = {
        "plugin": pc.PluginCustomization,
        "directory": pc.DirectoryCustomization,
        "agent": pc.AgentCustomization,
        "skill": pc.SkillCustomization,
        "prompt": pc.PromptCustomization,
        "rule": pc.RuleCustomization,
        "hook": pc.HookCustomization,
        "mcpServer": pc.McpServerCustomization,
    }
    TypeAdapter(pc.Customization).validate_python(entry)
    model = models[entry["type"]]
    allowed = {f.alias or name for name, f in model.model_fields.items()}
    assert set(entry) <= allowed, (entry["type"], set(entry) - allowed)
    for child in entry.get("children") or ():
        assert_protocol_entry(child)
