"""``scripts/compare_reducers.py``: two trees' reducers compared action by action on fuzzed logs.

The script is what a developer runs after rebuilding how a reducer works (an index, a fast path)
against the last version they trust. It must say nothing is different when nothing is, and name the
first action where a rule changed, with what changed in the state, when one did. Run as a user runs
it: a subprocess, against a copy of this tree, with the harness's generator. Skipped, with a reason
naming the setting, when the generator is not available.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from ..conftest import BENCH_DIR, BENCH_MISSING, REPO_ROOT

pytestmark = pytest.mark.skipif(BENCH_DIR is None, reason=BENCH_MISSING)
SCRIPT = REPO_ROOT / "scripts" / "compare_reducers.py"
DRAFT_RULE = '"chat/draftChanged": lambda s, a, n: put(s, "draft", a.get("draft")),'


def _tree_copy(tmp_path, rule: str | None = None):
    """A copy of this tree's package, with the ``chat/draftChanged`` rule replaced by ``rule``."""
    tree = tmp_path / "other"
    shutil.copytree(REPO_ROOT / "ahp_lab", tree / "ahp_lab", ignore=shutil.ignore_patterns("__pycache__"))
    if rule is not None:
        chat = tree / "ahp_lab" / "reducers" / "chat.py"
        source = chat.read_text()
        assert DRAFT_RULE in source, "the rule this test changes has moved: update DRAFT_RULE"
        chat.write_text(source.replace(DRAFT_RULE, rule))
    return tree


def _compare(tmp_path, tree) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--against",
            str(tree),
            "--seeds",
            "1-1",
            "--work",
            str(tmp_path / "work"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "AHP_BENCH_DIR": str(BENCH_DIR)},
        timeout=300,
    )


def test_the_same_reducers_agree_on_every_prefix(tmp_path):
    done = _compare(tmp_path, _tree_copy(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "2 fuzzed logs (800 actions, compared after each): 0 differ"


def test_a_changed_rule_is_named_at_the_first_action_it_changes(tmp_path):
    # the other tree drops a draft's origin
    rule = (
        '"chat/draftChanged": lambda s, a, n: put(s, "draft", {k: v for k, v in a["draft"].items() if k != "origin"}'
        ' if type(a.get("draft")) is dict else a.get("draft")),'
    )
    done = _compare(tmp_path, _tree_copy(tmp_path, rule))
    assert done.returncode == 1, done.stdout + done.stderr
    log = tmp_path / "work" / "fuzz-chat-1" / "actions.jsonl"
    actions = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    first = next(
        i
        for i, a in enumerate(actions)
        if a["type"] == "chat/draftChanged" and isinstance(a.get("draft"), dict) and "origin" in a["draft"]
    )
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"fuzz-chat-1: the trees differ after action {first}: ")
    assert '"type":"chat/draftChanged"' in lines[0]
    assert lines[1].strip().startswith(".draft.origin: ") and lines[1].endswith("here, (absent) there")
    assert lines[-1] == "2 fuzzed logs (800 actions, compared after each): 1 differ"


def test_a_folder_that_is_not_a_checkout_is_a_usage_error(tmp_path):
    done = _compare(tmp_path, tmp_path)
    assert done.returncode == 2
    assert "not a checkout of ahp_lab" in done.stderr
