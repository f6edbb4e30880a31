"""Notebook 05 leaves its last question for the reader: Run All ends waiting for a click.

With a person at the notebook (``AHP_LAB_UNATTENDED`` unset), the last cell awaits the turn whose
input request the cell before it left open. The test answers it as a reader would, in the input
queue displayed under that cell, and the waiting cell then finishes.
"""

from __future__ import annotations

import shutil

import nbformat

from .conftest import REPO_ROOT, cell_output_text, run_all, screenshot, wait_idle

NOTEBOOK = REPO_ROOT / "notebooks" / "05-input-requests.ipynb"


def test_the_last_question_waits_for_the_readers_click(jupyter_server, page):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    (jupyter_server.root_dir / "notebooks").mkdir(exist_ok=True)
    nbformat.write(nb, jupyter_server.root_dir / "notebooks" / NOTEBOOK.name)
    shutil.copytree(REPO_ROOT / "examples", jupyter_server.root_dir / "examples", dirs_exist_ok=True)
    jupyter_server.open_notebook(page, f"notebooks/{NOTEBOOK.name}")
    run_all(page, wait=False)

    asking, waiting = len(nb.cells) - 2, len(nb.cells) - 1
    queue = page.locator(".jp-Notebook .jp-Cell").nth(asking).locator(".ahp-inputs")
    queue.get_by_text("Which notebook would you like to read next?").wait_for(timeout=120_000)
    # every other cell has run, and the last one is still waiting for the person
    assert "The request was answered" not in cell_output_text(page, waiting)
    assert "Not yet" in page.locator(".jp-Notebook").inner_text()  # the exercise is left unsolved
    # Submit with the required choice left empty says so by the form (it showed nothing)
    queue.get_by_role("button", name="Submit answers").click()
    alert = queue.get_by_role("alert")
    alert.wait_for(state="visible")
    # a question without a title is named by its one-line message, not by its id ("next")
    assert (
        alert.inner_text()
        == "“Which notebook would you like to read next?” needs an answer before you submit."
    ), alert.inner_text()
    # in the error colour, as the form's other errors (it was the text's own colour)
    assert alert.evaluate("e => getComputedStyle(e).color") == queue.evaluate(
        "q => { const s = document.createElement('span'); s.className = 'ahp-err-text'; q.appendChild(s);"
        " const c = getComputedStyle(s).color; s.remove(); return c; }"
    )
    assert queue.locator(".ahp-q-label").first.inner_text().startswith("Which notebook would you like")
    assert "The request was answered" not in cell_output_text(page, waiting)
    queue.get_by_label("MCP servers").check()
    screenshot(page, "input-requests-your-turn")
    queue.get_by_role("button", name="Submit answers").click()
    wait_idle(page)
    assert "The request was answered by you: accept MCP servers" in cell_output_text(page, waiting)
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']")
    assert errors.count() == 0, errors.first.inner_text()
