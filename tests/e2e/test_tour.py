"""The tour notebook (``notebooks/00-tour.ipynb``) in a real JupyterLab: Run All renders the workbench.

The test copies the tour (outputs cleared, so nothing stale renders before the run, and its
exercise answered with the worked solution, as a reader who solved it) into the server's root,
runs every cell through the menu, checks that no cell failed and that the workbench
shows the session it drove, then does what a reader would: sends one more prompt from the chat
pane, looks at the confirmation it waits for (input queue, timeline lane and state machine, the
transition that stopped it) and takes ``artifacts/tour-workbench.png`` (the workbench in
JupyterLab), then clicks Approve and sees the call complete. With ``AHP_UPDATE_DOCS_IMG=1`` the
screenshot also replaces ``docs/img/workbench.png``, the README's picture; refresh it that way
whenever the views change.
"""

from __future__ import annotations

import os
import shutil

import nbformat

from ..notebook_tools import solved
from .conftest import ARTIFACTS_DIR, REPO_ROOT, run_all

TOUR = REPO_ROOT / "notebooks" / "00-tour.ipynb"
DOCS_IMG = REPO_ROOT / "docs" / "img" / "workbench.png"
VIEWPORT = {"width": 1400, "height": 1000}  # grown to the workbench's height for the screenshot


def _fresh_copy(root_dir) -> str:
    """The tour at ``notebooks/00-tour.ipynb`` under the server's root, beside a copy of ``examples/``
    (the tour loads ``../examples/plugins/ahp-lab-demo``), with its outputs cleared and its
    exercise solved after it (as a reader does it, after Run All)."""
    shutil.copytree(REPO_ROOT / "examples", root_dir / "examples", dirs_exist_ok=True)
    nb, _checks = solved(nbformat.read(TOUR, as_version=4), TOUR)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.metadata.pop("widgets", None)
    (root_dir / "notebooks").mkdir(exist_ok=True)
    nbformat.write(nb, root_dir / "notebooks" / "00-tour.ipynb")
    return "notebooks/00-tour.ipynb"


def test_tour_runs_and_renders_the_workbench(jupyter_server, page):
    page.set_viewport_size(VIEWPORT)
    name = _fresh_copy(jupyter_server.root_dir)
    jupyter_server.open_notebook(page, name)
    run_all(page, timeout_ms=120_000)

    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']")
    assert errors.count() == 0, errors.first.inner_text()
    # the exercise's check cell ran and passed
    assert page.get_by_text("Well done: the agent called your tool and got HELLO").count() == 1

    workbench = page.locator(".ahp-workbench").first
    workbench.wait_for()
    # the views show what the tour did: its tool calls, in the chat and in the timeline
    for text in ("Run Unit Tests", "Delete Branch", "Shout"):
        workbench.get_by_text(text).first.wait_for()
    # and the sample plugin in the customization tree, its MCP server running
    tree = workbench.locator(".ahp-tree")
    tree.get_by_text("ahp-lab-demo").first.wait_for()
    tree.get_by_text("ready").first.wait_for()

    # a person asks for one more destructive call in the chat pane: it waits in the input queue
    prompt = workbench.locator(".ahp-chat textarea.ahp-prompt-input")
    prompt.fill("delete_branch name=tmp-experiment")
    prompt.press("Enter")
    approve = workbench.get_by_role("button", name="Approve Delete Branch")
    approve.wait_for()
    pending = workbench.locator(".ahp-timeline .ahp-lane[data-state='pending-confirmation']")
    pending.click()  # its steps so far and its place in the state machine
    workbench.locator(".ahp-tl-machine svg").first.wait_for()
    row = workbench.locator(".ahp-inspector .ahp-trow[data-seq]", has_text="chat/toolCallReady").last
    row.click()  # the action that stopped it, and its diff
    workbench.locator(".ahp-inspector .ahp-detail-head").first.wait_for()

    # the whole workbench in the viewport, with JupyterLab around it (no file browser)
    page.keyboard.press("Escape")  # command mode: no blinking cursor in the picture
    page.keyboard.press("Control+b")  # hide the left sidebar
    height = workbench.bounding_box()["height"]
    page.set_viewport_size({"width": VIEWPORT["width"], "height": int(height) + 150})
    workbench.evaluate("el => el.scrollIntoView({block: 'start'})")
    page.mouse.move(0, 0)  # no hover highlight
    page.wait_for_timeout(300)  # let the rAF-throttled redraws after the resize land
    # the conversation scrolled to its newest message (the call that waits), as a reader would see it
    workbench.locator(".ahp-chat-log").evaluate("el => { el.scrollTop = el.scrollHeight; }")
    page.wait_for_timeout(100)
    ARTIFACTS_DIR.mkdir(exist_ok=True)
    shot = ARTIFACTS_DIR / "tour-workbench.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
    if os.environ.get("AHP_UPDATE_DOCS_IMG") == "1":
        DOCS_IMG.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, DOCS_IMG)

    # the click reaches the kernel: the call runs and completes
    approve.click()
    workbench.locator(".ahp-timeline .ahp-lane[data-state='completed']").nth(3).wait_for()
    assert pending.count() == 0
