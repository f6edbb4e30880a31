"""The inspector's "export as fixture" over a real lab (issue 13 §5): the selected range of one
channel becomes an upstream reducer fixture that passes against the reference reducers, or a pytest
file that replays it; the browser chooses neither the seqs beyond the selection nor the path."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from ahp_lab import Lab
from ahp_lab.agents.scripted import call, say
from ahp_lab.conformance import run_reducer_fixture

from .test_with_lab import _run


def test_the_selected_range_exports_as_a_fixture_and_a_pytest_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    async def main():
        lab = await Lab.open()

        @lab.tool
        def shout(text: str) -> str:
            """Say it louder."""
            return text.upper()

        await lab.send("first", script=[say("hello")])
        await lab.send("second", script=[call("shout", text="hi"), say("done")])
        insp = lab.show().inspector
        assert insp.can_export and insp.export_range == {}
        chat = [t for t in lab.transitions if t.channel == lab.chat]
        # a range that starts mid-log (the second turn) and spans other channels' transitions too
        second = next(
            t.seq for t in chat if t.type == "chat/turnStarted" and t.action["message"]["text"] == "second"
        )
        insp.selected_seq = second
        insp.range_seq = lab.store.last_seq
        want = [t for t in chat if t.seq >= second]
        assert insp.export_range == {
            "first": second,
            "last": lab.store.last_seq,
            "channel": lab.chat,
            "channelLabel": insp.export_range["channelLabel"],
            "actions": len(want),
        }
        insp._on_custom_msg(insp, {"type": "export", "format": "fixture", "description": "the second turn"})
        res = insp.export_result
        assert res["ok"] and res["reducer"] == "chat" and res["actions"] == len(want), res
        # said whole, so that the command runs from any folder (a terminal opens at the server's
        # root, not in the notebook's folder where the export is written: a first-hour user)
        assert Path(res["path"]).is_absolute()
        python, *args = shlex.split(res["command"])
        assert python == "python" and args[:3] == ["-m", "ahp_lab.conformance", "run"]
        ran = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd="/")
        assert ran.returncode == 0, ran.stdout + ran.stderr
        fixture = json.loads(Path(res["path"]).read_text())
        assert fixture["description"] == "the second turn" and fixture["reducer"] == "chat"
        assert [a["type"] for a in fixture["actions"]] == [t.type for t in want]
        assert run_reducer_fixture(fixture, "exported").passed  # against the reference behaviour
        # the same range again: a new file, never an overwrite
        insp._on_custom_msg(insp, {"type": "export", "format": "fixture"})
        assert insp.export_result["path"] != res["path"] and Path(res["path"]).exists()
        # a pytest file that replays it, and passes
        insp._on_custom_msg(insp, {"type": "export", "format": "pytest", "description": "the second turn"})
        test_file = Path(insp.export_result["path"])
        assert test_file.name.startswith("test_chat_seq") and test_file.suffix == ".py"
        assert insp.export_result["command"] == f"pytest {shlex.quote(str(test_file))}"
        # the exported path is the source's, not the browser's: a message naming one is ignored
        insp._on_custom_msg(
            insp, {"type": "export", "format": "fixture", "path": "/etc/evil.json", "first": 0}
        )
        assert insp.export_result["ok"] and not Path("/etc/evil.json").exists()
        assert Path(insp.export_result["path"]).resolve().parent == (tmp_path / "ahp-fixtures").resolve()
        # bad requests get a reason, and lose nothing
        insp._on_custom_msg(insp, {"type": "export", "format": "zip"})
        assert insp.export_result == {
            "ok": False,
            "format": "zip",
            "message": "export as 'fixture' or 'pytest'",
        }
        insp.selected_seq = None
        insp._on_custom_msg(insp, {"type": "export", "format": "fixture"})
        assert not insp.export_result["ok"] and "select a transition" in insp.export_result["message"]
        await lab.aclose()
        # a closed lab's log still exports (its views say "closed" and only dispatching stops)
        insp.selected_seq, insp.range_seq = second, lab.store.last_seq
        insp._on_custom_msg(insp, {"type": "export", "format": "fixture"})
        assert insp.mode == "closed" and insp.export_result["ok"], insp.export_result
        return test_file

    holder = {}

    async def go():
        holder["file"] = await main()

    _run(go)
    # inside a project whose pytest options need a plugin (this repository's need nbval), the
    # command the export suggests still runs: the folder carries its own pytest.ini
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\naddopts = "--an-option-of-a-plugin-not-installed"\n'
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(holder["file"])],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout + proc.stderr
