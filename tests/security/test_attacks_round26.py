"""Attacker round 26, and the second review of stop 51."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ahp_lab.agents.acp import AcpAgent

from ..agents.conftest import EXAMPLE_AGENT
from .conftest import arun, joined, open_lab


async def _write(mallory, path: Path, data: str = "print('x')\n") -> dict:
    return await mallory.call("resourceWrite", {"uri": path.as_uri(), "data": data, "encoding": "utf-8"})


def test_an_agents_cwd_and_what_commands_read_above_it_are_kept_from_strangers(
    connect_stranger, tmp_path: Path
):
    """With ``AcpAgent([python, "agent.py"], cwd=proj)`` a stranger rewrote ``proj/agent.py``; a
    ``.cargo/config.toml`` there ran its runner at ``cargo run``; and ``npx`` from ``proj/work``
    read a ``.npmrc`` and ``node_modules`` one folder up (attacker round 26, the second review).
    The folder a command starts in is its code, and what commands look for above it is kept."""
    proj = tmp_path / "proj"
    work = proj / "work"
    work.mkdir(parents=True)
    (work / "agent.py").write_text(EXAMPLE_AGENT.read_text())
    agent = AcpAgent([sys.executable, "agent.py"], cwd=work, initialize_timeout=20)

    async def main():
        writable = [{"path": proj, "contents": "skill", "writable": True}]
        async with open_lab(
            agent=agent, roots=[tmp_path], working_directories=[work], directories=writable
        ) as lab:
            try:
                mallory = await joined(connect_stranger, lab, "mallory")
                for target in (work / "agent.py", work / ".cargo" / "config.toml", proj / ".npmrc"):
                    answer = await _write(mallory, target)
                    assert answer["error"]["code"] == -32009, (target, answer)
                made = await mallory.call("resourceMkdir", {"uri": (proj / "node_modules").as_uri()})
                assert made["error"]["code"] == -32009, made
                assert "result" in await _write(mallory, proj / "notes.md")  # the rest is written
            finally:
                await agent.aclose()

    arun(main())


def test_project_folders_of_code_take_new_modules_and_a_strangers_folder_does_not(
    connect_stranger, tmp_path: Path, monkeypatch
):
    """The module rule refused every new ``.py`` under a project's ``tests/``, ``scripts/`` or
    ``src/`` (no ``__init__``) beside the notebook, to any client (the second review). A top folder
    already holding the person's modules or packages takes new ones; one a stranger made does
    not (its ``opentelemetry/trace.py`` would run at ``import acp``); nor does a copy of a link to
    a package put one where the kernel imports from (attacker round 26)."""
    monkeypatch.chdir(tmp_path)
    for name in ("tests/test_old.py", "src/mypkg/__init__.py", "releases/v2/__init__.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    (tmp_path / "current").symlink_to(tmp_path / "releases" / "v2")

    async def main():
        writable = [{"path": tmp_path, "contents": "skill", "writable": True}]
        async with open_lab(roots=[tmp_path], directories=writable) as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            for name in ("tests/test_new.py", "src/mypkg/new_module.py"):
                assert "result" in await _write(mallory, tmp_path / name), name
            assert "result" in await mallory.call(
                "resourceMkdir", {"uri": (tmp_path / "opentelemetry").as_uri()}
            )
            refused = await _write(mallory, tmp_path / "opentelemetry" / "trace.py")
            assert refused["error"]["code"] == -32009, refused
            copied = await mallory.call(
                "resourceCopy",
                {
                    "source": (tmp_path / "current").as_uri(),
                    "destination": (tmp_path / "websockets").as_uri(),
                },
            )
            assert copied["error"]["code"] == -32009, copied
            assert not (tmp_path / "websockets").exists()

    arun(main())


def test_a_link_on_sys_path_switched_later_is_read_where_it_leads_now(
    connect_stranger, tmp_path: Path, monkeypatch
):
    """The folders the kernel imports from were resolved once and kept: a ``sys.path`` entry
    through ``current -> v1`` switched to ``v2`` let a stranger's ``v2/lib/evil.py`` in (the second
    review). They are resolved at each write."""
    for version in ("v1", "v2"):
        (tmp_path / version / "lib").mkdir(parents=True)
    (tmp_path / "current").symlink_to(tmp_path / "v1")
    monkeypatch.syspath_prepend(str(tmp_path / "current" / "lib"))

    async def main():
        writable = [{"path": tmp_path, "contents": "skill", "writable": True}]
        async with open_lab(roots=[tmp_path], directories=writable) as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            assert (await _write(mallory, tmp_path / "v1" / "lib" / "evil.py"))["error"]["code"] == -32009
            (tmp_path / "current").unlink()
            (tmp_path / "current").symlink_to(tmp_path / "v2")
            assert (await _write(mallory, tmp_path / "v2" / "lib" / "evil.py"))["error"]["code"] == -32009
            assert "result" in await _write(mallory, tmp_path / "v1" / "lib" / "evil.py")

    arun(main())


@pytest.fixture(autouse=True)
def _no_leftover_sys_path(monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))


def test_a_printed_transition_log_carries_no_terminal_escapes(connect_stranger):
    """A stranger's member name or rejected action type holding an OSC 52 sequence showed raw in
    ``repr(lab.transitions)``: printed in a terminal, it wrote the clipboard (attacker round 26)."""
    osc = "\x1b]52;c;cHduZWQ=\x07"

    async def main():
        async with open_lab() as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            mallory.dispatch(lab.session, 91, {"type": "session/titleChanged", "title": "t", osc: 1})
            await mallory.echo(91)
            mallory.dispatch(lab.session, 92, {"type": "session/" + osc})
            await mallory.echo(92)
            printed = repr(lab.transitions) + "".join(repr(t) for t in lab.transitions)
            assert "\x1b" not in printed and "\x07" not in printed
            assert "52;c;cHduZWQ=" in printed  # shown, without its escape

    arun(main())


def test_an_agent_named_by_a_relative_path_still_starts_from_its_own_folder(monkeypatch):
    """An ACP agent with no ``cwd`` starts in an empty folder of its own (round 24): its command's
    ``examples/acp_agent.py``, as the example's docstring writes it, no longer named a file there
    and no session opened (the first review). A path that names a file here is made absolute."""
    monkeypatch.chdir(EXAMPLE_AGENT.parents[1])
    agent = AcpAgent([sys.executable, "examples/acp_agent.py"], initialize_timeout=20)
    assert agent.command[1] == str(EXAMPLE_AGENT)

    async def main():
        async with open_lab(agent=agent) as lab:
            try:
                assert lab.session_state["lifecycle"] == "ready"
                assert (await lab.send("hello")).status == "complete"
            finally:
                await agent.aclose()

    arun(main())
