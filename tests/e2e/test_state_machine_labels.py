"""Notebook 03 in a real JupyterLab and Chromium: for every tool call it drives, no two edge labels
of the state-machine diagram intersect in the rendered SVG, and none leaves it (issue 13 §4).
Screenshots go to ``artifacts/fix-machine-*.png`` (light and dark)."""

from __future__ import annotations

import shutil
from pathlib import Path

from .conftest import REPO_ROOT, run_all
from .test_views_fake import _set_theme
from .test_workbench_lab import _shot


def test_state_machine_labels_never_overlap_in_notebook_03(jupyter_server, page):
    src = REPO_ROOT / "notebooks" / "03-tool-call-state-machine.ipynb"
    shutil.copy(src, Path(jupyter_server.root_dir) / "03-state-machine.ipynb")
    jupyter_server.open_notebook(page, "03-state-machine.ipynb")
    run_all(page, timeout_ms=120_000)
    timeline = page.locator(".ahp-timeline").last
    timeline.locator(".ahp-machine").wait_for()
    keys = timeline.locator(".ahp-lane").evaluate_all("ls => ls.map(l => l.dataset.key)")
    assert len(keys) >= 10, keys
    for key in keys:
        timeline.locator(f".ahp-lane[data-key='{key}']").click()
        timeline.locator(
            f".ahp-tl-detail .ahp-detail-head[data-tool-call-id='{key.split(chr(0x241F))[1]}']"
        ).wait_for()
        timeline.locator(".ahp-machine .ahp-sm-labels text").first.wait_for()
        boxes = timeline.locator(".ahp-machine").evaluate(
            """svg => [...svg.querySelectorAll('.ahp-sm-labels text')].map(t => {
                 const b = t.getBBox(); return [t.textContent, b.x, b.y, b.x + b.width, b.y + b.height]; })"""
        )
        width, height = timeline.locator(".ahp-machine").evaluate(
            "s => [s.viewBox.baseVal.width, s.viewBox.baseVal.height]"
        )
        for i, a in enumerate(boxes):
            assert a[1] >= 0 and a[3] <= width and a[2] >= 0 and a[4] <= height, (key, a)
            for b in boxes[i + 1 :]:
                assert a[3] <= b[1] or b[3] <= a[1] or a[4] <= b[2] or b[4] <= a[2], (key, a, b)
        if key.endswith("edit") or key.endswith("migrate"):
            _shot(page, ".ahp-timeline >> nth=-1", f"fix-machine-{key.split(chr(0x241F))[1]}")
    _set_theme(page, "JupyterLab Dark")
    _shot(page, ".ahp-timeline >> nth=-1", "fix-machine-dark")
    _set_theme(page, "JupyterLab Light")
