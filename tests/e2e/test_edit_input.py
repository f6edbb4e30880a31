""" "Approve with edits" in a real JupyterLab and Chromium (issue 13 §4): the edited input is a form
built from the tool's input schema (raw JSON as a fallback), checked in the view before it is sent.
A bad edit (a word for a number, JSON that does not parse, a field the tool does not have) is
blocked with the error next to its field, and nothing reaches the kernel; a good one is sent, the
tool runs with it, and the next call of that tool offers it again. Screenshots:
``artifacts/edit-*.png`` (light and dark)."""

from __future__ import annotations

import json
import re

from .conftest import cell_output_text, open_cells, run_cell, screenshot, wait_idle
from .test_views_fake import _set_theme
from .test_workbench_lab import _shot

SETUP = """\
from typing import Literal
from ahp_lab import Lab
from ahp_lab.agents.scripted import call, summarize
lab = Lab()

@lab.tool
def resize_image(path: str, width: int, height: int, unit: Literal["px", "em"] = "px",
                 keep_ratio: bool = True, tags: list[str] = []) -> str:
    \"\"\"Resize an image.\"\"\"
    return f"{path} -> {width}x{height}{unit} keep_ratio={keep_ratio} tags={tags}"

script = [call("resize_image", path="cat.png", width=100, height=50, confirm=True), summarize()]
task = lab.start("make it bigger", script=script)
wb = lab.show()
wb
"""
STATUS = """\
import json
[tc] = [c for c in lab.tool_calls if c.name == "resize_image"][-1:]
print("CALL=" + json.dumps({"status": tc.status, "input": tc.input,
      "confirmed": [t.action.get("editedToolInput") for t in lab.transitions if t.type == "chat/toolCallConfirmed"]}))
"""
FINISH = """\
turn = await task
[tc] = turn.tool_calls
print("DONE=" + json.dumps({"status": tc.status, "success": tc.success, "result": tc.result_text, "input": tc.input}))
task2 = lab.start("again", script=script)
"""
CARD = ".ahp-inputs [data-kind='toolConfirmation']"
EDIT = f"{CARD} .ahp-edit"


def _call(page, index: int, key: str) -> dict:
    run_cell(page, index)
    out = cell_output_text(page, index)
    m = re.search(rf"^{key}=(.*)$", out, re.M)
    assert m, out
    return json.loads(m.group(1))


def _field(page, name: str):
    return page.locator(f"{EDIT} .ahp-field[data-field='/{name}']")


def test_edit_validation_blocks_a_bad_edit_and_sends_a_good_one(jupyter_server, page):
    errors = open_cells(jupyter_server, page, "edit_input.ipynb", [SETUP, STATUS, FINISH])
    run_cell(page, 0)
    page.wait_for_selector(CARD)
    page.get_by_role("button", name="Edit input of Resize Image before approving").click()
    page.wait_for_selector(f"{EDIT}[data-edit-mode='form']")
    approve = page.get_by_role("button", name="Approve Resize Image with edited input")
    # the form shows the agent's input, one field per property, typed by the schema
    assert _field(page, "path").locator("input").input_value() == "cat.png"
    assert _field(page, "width").locator("input").input_value() == "100"
    assert _field(page, "unit").locator("select option:checked").inner_text() == "(default: px)"
    assert _field(page, "keep_ratio").locator("input[type=checkbox]").is_checked()
    assert approve.is_enabled()
    # approving the input as it was is not offered beside an open edit (a first-hour user clicked
    # it and the old input ran); cancelling the edit offers it again
    as_shown = page.get_by_role("button", name="Approve Resize Image", exact=True)
    assert as_shown.is_disabled()
    page.get_by_role("button", name="Cancel the edit of Resize Image's input").click()
    assert as_shown.is_enabled()
    page.get_by_role("button", name="Edit input of Resize Image before approving").click()
    page.wait_for_selector(f"{EDIT}[data-edit-mode='form']")

    # 1. a word where the schema wants a whole number: the error is next to the field; no send
    _field(page, "width").locator("input").fill("wide")
    err = _field(page, "width").locator(".ahp-field-error")
    err.wait_for(state="visible")
    assert err.inner_text() == "must be a whole number (got string)"
    assert approve.is_disabled()
    _shot(page, ".ahp-inputs", "edit-bad-field")
    _set_theme(page, "JupyterLab Dark")
    _shot(page, ".ahp-inputs", "edit-bad-field-dark")
    _set_theme(page, "JupyterLab Light")

    # 2. raw JSON: what does not parse, and a field the tool does not have, are refused too
    page.get_by_role("button", name="Edit input of Resize Image as raw JSON").click()
    area = page.locator(f"{EDIT} textarea.ahp-edit-json")
    assert json.loads(area.input_value())["width"] == "wide"
    general = page.locator(f"{EDIT} .ahp-edit-errors")
    area.fill('{"path": "cat.png", "width": 640,')
    general.wait_for(state="visible")
    assert general.inner_text().startswith("the input: not valid JSON"), general.inner_text()
    assert approve.is_disabled()
    area.fill('{"path": "cat.png", "width": 640, "height": 480, "colour": "red"}')
    page.wait_for_function(
        "() => document.querySelector('.ahp-inputs .ahp-edit-errors').innerText.includes('colour: is not a field')"
    )
    assert approve.is_disabled()
    _shot(page, ".ahp-inputs", "edit-bad-json")
    # nothing reached the kernel: the call still waits, and no confirmation was dispatched
    got = _call(page, 1, "CALL")
    assert got == {"status": "pending-confirmation", "input": {"path": "cat.png", "width": 100, "height": 50},
                   "confirmed": []}, got  # fmt: skip

    # 3. a good edit, back in the form: sent, and the tool runs with it
    area.fill('{"path": "cat.png", "width": 640, "height": 480, "unit": "em", "tags": ["a"]}')
    page.get_by_role("button", name="Edit input of Resize Image as a form").click()
    page.wait_for_selector(f"{EDIT}[data-edit-mode='form'][data-valid='true']")
    _field(page, "keep_ratio").locator("input[type=checkbox]").uncheck()
    _field(page, "tags").get_by_role("button", name="Add an item to tags").click()
    _field(page, "tags").locator(".ahp-array-item input").nth(1).fill("b")
    assert approve.is_enabled()
    _shot(page, ".ahp-inputs", "edit-good")
    approve.click()
    page.wait_for_selector(CARD, state="detached")
    done = _call(page, 2, "DONE")
    want = {
        "path": "cat.png",
        "width": 640,
        "height": 480,
        "unit": "em",
        "tags": ["a", "b"],
        "keep_ratio": False,
    }
    assert done == {
        "status": "completed",
        "success": True,
        "result": "cat.png -> 640x480em keep_ratio=False tags=['a', 'b']",
        "input": want,
    }, done

    # 4. the next call of that tool offers the last edit again
    page.wait_for_selector(CARD)
    page.get_by_role("button", name="Edit input of Resize Image before approving").click()
    assert _field(page, "width").locator("input").input_value() == "100"
    page.get_by_role("button", name="Use my last edit of Resize Image").click()
    page.wait_for_function(
        f"""() => document.querySelector("{EDIT} .ahp-field[data-field='/width'] input").value === '640'"""
    )
    assert not _field(page, "keep_ratio").locator("input[type=checkbox]").is_checked()
    _shot(page, ".ahp-inputs", "edit-last-input")
    page.get_by_role("button", name="Deny Resize Image", exact=True).click()
    page.wait_for_selector(CARD, state="detached")
    wait_idle(page)
    assert errors == [], errors


REQUIRED_SETUP = """\
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
REQUIRED_STATUS = """\
import json
print("CALL=" + json.dumps({"status": lab.tool_calls[-1].status,
      "confirmed": [t.action.get("editedToolInput") for t in lab.transitions if t.type == "chat/toolCallConfirmed"]}))
"""
REQUIRED_FINISH = """\
turn = await task
print("DONE=" + json.dumps({"result": turn.tool_calls[0].result_text, "input": turn.tool_calls[0].input}))
"""
NAME = f"{CARD} .ahp-edit .ahp-field[data-field='/name']"


def test_a_required_text_left_empty_is_refused_next_to_its_field(jupyter_server, page):
    """Clearing the required **Name \\*** of a call (notebook 05's ``delete_branch``) and clicking
    *Approve with edits* sent ``editedToolInput: '{"name":""}'`` and the tool ran as ``deleted ''``:
    the form read the empty text as ``""``, which JSON Schema counts as present (first-hour user,
    round 55). The edit form refuses it next to the field, as the question form does. Screenshot:
    ``artifacts/fh55-edit-required-empty.png``."""
    errors = open_cells(
        jupyter_server, page, "fh55_edit_required.ipynb", [REQUIRED_SETUP, REQUIRED_STATUS, REQUIRED_FINISH]
    )
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
    got = _call(page, 1, "CALL")  # nothing reached the kernel
    assert got == {"status": "pending-confirmation", "confirmed": []}, got

    page.locator(f"{NAME} input").fill("stale")
    page.wait_for_selector(f"{CARD} .ahp-edit[data-valid='true']")
    approve.click()
    page.wait_for_selector(CARD, state="detached")
    done = _call(page, 2, "DONE")
    assert done == {"result": "deleted 'stale'", "input": {"name": "stale"}}, done
    assert errors == [], errors
