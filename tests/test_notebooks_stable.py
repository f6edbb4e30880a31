"""Committed notebooks survive a reader's open → Run All → save.

Every notebook in ``notebooks/`` (new ones included, automatically) must be in the form
``scripts/normalize_notebooks.py`` writes, and a run in a fresh kernel must reproduce its outputs
exactly, apart from what ``notebooks/nbval-sanitize.cfg`` masks. When this fails, run
``python scripts/normalize_notebooks.py <notebook>`` after making the outputs deterministic.
"""

from __future__ import annotations

import json
import os
import re

import nbformat
import pytest

from .notebook_tools import NOTEBOOKS, nbtools

IDS = [p.name for p in NOTEBOOKS]
OBJECT_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>")
FIX = "run `python scripts/normalize_notebooks.py {name}`"


def test_every_notebook_is_checked():
    assert len(NOTEBOOKS) >= 7, NOTEBOOKS


def _notebook(*outputs, metadata=None):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print(lab.session)", execution_count=1)
    cell.id, cell.outputs, cell.metadata = "c1", list(outputs), dict(metadata or {})
    nb.cells = [cell]
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    return nb


def test_the_comparison_masks_ids_and_catches_a_changed_output():
    out = nbformat.v4.new_output
    a = _notebook(
        out("stream", name="stdout", text="ahp-session:/0b6c4a4e-28a8-4f41-a25b-43c1b3bfbd8e 2 turns\n")
    )
    same = _notebook(
        out("stream", name="stdout", text="ahp-session:/9f0e1d2c-3b4a-4596-8877-665544332211 2 turns\n")
    )
    other = _notebook(
        out("stream", name="stdout", text="ahp-session:/9f0e1d2c-3b4a-4596-8877-665544332211 3 turns\n")
    )
    assert nbtools.differences(a, same) == ""
    diff = nbtools.differences(a, other, "demo.ipynb")
    assert "cell 0" in diff and "-" in diff and "3 turns" in diff


def test_normalizing_drops_run_metadata_and_merges_streams_as_jupyterlab_saves():
    out = nbformat.v4.new_output
    nb = _notebook(
        out("stream", name="stdout", text="a\n"),
        out("stream", name="stdout", text="b\n"),
        metadata={"execution": {"iopub.status.busy": "2026-01-01T00:00:00Z"}, "tags": ["keep"]},
    )
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    normal = nbtools.normalize(nb)
    assert "widgets" not in normal.metadata and normal.cells[0].metadata == {"tags": ["keep"]}
    assert [o["text"] for o in normal.cells[0].outputs] == ["a\nb\n"]
    assert nbtools.normalize(normal) == normal  # a normalized notebook stays as it is


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_committed_notebook_is_saved_in_normalized_form(path):
    text = path.read_text(encoding="utf-8")
    nb = nbformat.reads(text, as_version=4)
    assert text == nbtools.file_text(nbtools.normalize(nb)), (
        f"{path.name} carries run-specific metadata (timings, widget state) or another format: "
        + FIX.format(name=f"notebooks/{path.name}")
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_saved_output_is_an_object_repr(path):
    nb = nbformat.read(path, as_version=4)
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", ()):
            text = json.dumps(output.get("data", {}).get("text/plain", ""))
            assert not OBJECT_REPR.search(text), (
                f"{path.name} cell {index} saved an object repr: {text[:200]}"
            )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_a_fresh_run_reproduces_the_committed_outputs(path):
    committed = nbformat.read(path, as_version=4)
    fresh = nbtools.normalize(nbtools.execute(committed, path.parent))
    diff = nbtools.differences(committed, fresh, path.name)
    assert not diff, (
        f"a fresh run of {path.name} differs beyond notebooks/nbval-sanitize.cfg: make the output "
        f"deterministic (or mask it there), then {FIX.format(name=os.path.relpath(path))}\n{diff}"
    )


def test_notebooks_and_docs_cite_the_upstream_specification_not_a_local_copy():
    root = NOTEBOOKS[0].parents[1]
    files = [*NOTEBOOKS, *sorted((root / "docs").rglob("*.md"))]
    local = [p.name for p in files if re.search(r"shared/spec|\.\./shared\b", p.read_text(encoding="utf-8"))]
    assert not local, f"cite https://github.com/microsoft/agent-host-protocol/tree/main/docs instead: {local}"
    assert "github.com/microsoft/agent-host-protocol" in (root / "docs" / "coverage.md").read_text()
