"""A recorded range becomes a conformance fixture and a pytest file that pass (issue 13 §5)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from ahp_lab import Lab
from ahp_lab.conformance import FIXTURE_NOW_MS, run_reducer_fixture
from ahp_lab.store import Store


async def _session() -> Lab:
    """A session like the notebooks': a client tool, a denied call, customizations, a second turn."""
    lab = await Lab.open()

    @lab.tool
    async def run_unit_tests(pattern: str = "test_*", *, ctx) -> str:
        """Run the unit tests matching a pattern."""
        await ctx.update([{"type": "text", "text": "running 12 tests"}])
        return "12 passed"

    await lab.send("run_unit_tests pattern=auth")
    await lab.send("hello again")
    return lab


@pytest.fixture(scope="module")
def lab():
    loop = asyncio.new_event_loop()
    lab = loop.run_until_complete(_session())
    yield lab
    loop.run_until_complete(lab.aclose())
    loop.close()


def test_every_channel_of_a_session_exports_a_fixture_that_passes(lab, tmp_path):
    channels = sorted({t.channel for t in lab.transitions})
    assert len(channels) >= 2  # at least a session and a chat
    for i, channel in enumerate(channels):
        fixture = lab.transitions[:].to_fixture(tmp_path / f"{i:03d}.json", channel=channel)
        assert set(fixture) == {"description", "reducer", "initial", "actions", "expected"}
        assert run_reducer_fixture(fixture).passed
    # the command line runs them too, as the upstream corpus
    out = subprocess.run(
        [sys.executable, "-m", "ahp_lab.conformance", "run", str(tmp_path)], capture_output=True, text=True
    )
    assert out.returncode == 0 and f"{len(channels)} passed, 0 failed" in out.stdout, out.stdout


def test_a_fixture_starts_from_the_state_before_the_range_and_uses_the_fixture_clock(lab):
    chat = lab.chat
    seqs = [t.seq for t in lab.transitions if t.channel == chat and t.type == "chat/turnStarted"]
    second_turn = seqs[-1]
    fixture = lab.transitions[second_turn:].to_fixture(channel=chat)
    assert fixture["reducer"] == "chat"
    assert fixture["actions"][0]["type"] == "chat/turnStarted"
    assert len(fixture["initial"]["turns"]) == 1  # the first turn happened before the range
    assert fixture["expected"]["modifiedAt"] == "1970-01-01T00:00:09.999Z"  # now_ms = 9999
    assert FIXTURE_NOW_MS == 9999
    assert json.loads(json.dumps(fixture)) == fixture  # plain JSON, nothing left to convert


def test_a_range_over_several_channels_needs_a_channel_and_says_so(lab):
    with pytest.raises(ValueError, match=r"spans \d+ channels .*pass channel="):
        lab.transitions[:].to_fixture()
    with pytest.raises(ValueError, match="no transition on ahp-chat:/nope"):
        lab.transitions[:].to_fixture(channel="ahp-chat:/nope")


def test_rejected_dispatches_are_left_out():
    store = Store(lambda: 1_000)
    store.add_channel(
        "ahp-session:/s", "session", {"title": "t", "status": 1, "chats": [], "activeClients": []}
    )
    store.apply("ahp-session:/s", {"type": "session/titleChanged", "title": "a"})
    store.reject(
        "ahp-session:/s", {"type": "session/titleChanged", "title": "no"}, {"kind": "host"}, "refused"
    )
    fixture = store.transitions[:].to_fixture()
    assert [a["title"] for a in fixture["actions"]] == ["a"] and fixture["expected"]["title"] == "a"


def test_the_exported_pytest_file_replays_the_fixture_and_fails_when_the_expectation_is_wrong(lab, tmp_path):
    path = lab.transitions[:].to_pytest(
        tmp_path / "test_recorded.py", channel=lab.chat, description="my session"
    )
    assert path.exists() and "my session" in path.read_text()
    ok = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert ok.returncode == 0, ok.stdout[-2000:]
    path.write_text(path.read_text().replace('"state": "complete"', '"state": "cancelled"', 1))
    bad = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert bad.returncode == 1 and "expected" in bad.stdout
