""" "Approve with edits" refuses a required text field left empty, in a real JupyterLab and Chromium.

Before, clearing the required **Name \\*** of a call (notebook 05's ``delete_branch``) and clicking
*Approve with edits* sent ``editedToolInput: '{"name":""}'`` and the tool ran as ``deleted ''``: the
form read the empty text as ``""``, which JSON Schema counts as present. The question form in the
same pane refuses a required question left empty; the edit form now does too, next to the field.
Screenshot: ``artifacts/fh55-edit-required-empty.png``.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.e2e.conftest import (  # noqa: F401 - the browser tests' fixtures
    browser,
    cell_output_text,
    jupyter_server,
    open_cells,
    page,
    run_cell,
    screenshot,
)

pytestmark = pytest.mark.e2e

SETUP = """\
from ahp_lab import Lab
from ahp_lab.agents.scripted import call, summarize
lab = Lab()

@lab.tool
def delete_branch(name: str) -> str:
    \"\"\"Delete a git branch.\"\"\"
    return f"deleted {name!r}"

task = lab.start("clean up", script=[call("delete_branch", name="old", confirm=True), summarize()])
lab.show()
"""
STATUS = """\
import json
print("CALL=" + json.dumps({"status": lab.tool_calls[-1].status,
      "confirmed": [t.action.get("editedToolInput") for t in lab.transitions if t.type == "chat/toolCallConfirmed"]}))
"""
FINISH = """\
turn = await task
print("DONE=" + json.dumps({"result": turn.tool_calls[0].result_text, "input": turn.tool_calls[0].input}))
"""
CARD = ".ahp-inputs [data-kind='toolConfirmation']"
NAME = f"{CARD} .ahp-edit .ahp-field[data-field='/name']"


def _printed(page, index: int, key: str) -> dict:  # noqa: F811 - the page it is given
    run_cell(page, index)
    m = re.search(rf"^{key}=(.*)$", cell_output_text(page, index), re.M)
    assert m, cell_output_text(page, index)
    return json.loads(m.group(1))


def test_a_required_text_left_empty_is_refused_next_to_its_field(jupyter_server, page):  # noqa: F811
    errors = open_cells(jupyter_server, page, "fh55_edit_required.ipynb", [SETUP, STATUS, FINISH])
    run_cell(page, 0)
    page.wait_for_selector(CARD)
    page.get_by_role("button", name="Edit input of Delete Branch before approving").click()
    page.wait_for_selector(f"{CARD} .ahp-edit[data-edit-mode='form']")
    approve = page.get_by_role("button", name="Approve Delete Branch with edited input")
    assert page.locator(f"{NAME} input").input_value() == "old" and approve.is_enabled()

    page.locator(f"{NAME} input").fill("")
    error = page.locator(f"{NAME} .ahp-field-error")
    error.wait_for(state="visible")
    assert error.inner_text() == "is required: fill it in before approving"
    assert approve.is_disabled()
    screenshot(page, "fh55-edit-required-empty")
    got = _printed(page, 1, "CALL")  # nothing reached the kernel
    assert got == {"status": "pending-confirmation", "confirmed": []}, got

    page.locator(f"{NAME} input").fill("stale")
    page.wait_for_selector(f"{CARD} .ahp-edit[data-valid='true']")
    approve.click()
    page.wait_for_selector(CARD, state="detached")
    done = _printed(page, 2, "DONE")
    assert done == {"result": "deleted 'stale'", "input": {"name": "stale"}}, done
    assert errors == [], errors
