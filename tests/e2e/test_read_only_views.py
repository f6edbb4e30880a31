"""A replay's workbench and a closed lab's, in a real JupyterLab and Chromium (issue 13 §4): each view
says "replay: read-only" or "closed", and every control that would dispatch (the prompt box and
Send, the queue's Approve / Deny / Edit, the tree's checkboxes and MCP buttons) is disabled before
anyone types a word. Screenshots: ``artifacts/readonly-*.png`` (light and dark)."""

from __future__ import annotations

from .conftest import open_cells, run_cell, wait_idle
from .test_views_fake import _set_theme
from .test_workbench_lab import LAB_WITH_DROP_TABLE, PLUGIN, _shot

LIVE = (
    LAB_WITH_DROP_TABLE
    + f"""
lab.host.dispatch(lab.session, {{"type": "session/customizationUpdated", "customization": {PLUGIN!r}}})
task = lab.start("clean up", script=[call("drop_table", name="users", confirm=True), summarize()])
live = lab.show()
live
"""
)
REPLAY = """\
lab.export("session.jsonl")
replay = Lab.replay("session.jsonl")
replay.show()
"""
CLOSE = """\
await lab.aclose()
"""
# the controls that would dispatch something: none may be enabled in a replay or a closed lab
DISPATCHING = (
    ".ahp-chat textarea, .ahp-chat button[type=submit], .ahp-inputs .ahp-actions button, "
    ".ahp-tree input[type=checkbox], .ahp-tree .ahp-mcp button"
)
ENABLED = f"""(wb) => [...wb.querySelectorAll("{DISPATCHING}")].filter(e => !e.disabled)
  .map(e => e.getAttribute('aria-label') || e.textContent)"""
COUNT = f"""(wb) => wb.querySelectorAll("{DISPATCHING}").length"""


def _badges(workbench) -> list[str]:
    return workbench.locator(".ahp-head .ahp-mode:visible").all_inner_texts()


def test_replay_and_closed_lab_controls_are_disabled(jupyter_server, page):
    errors = open_cells(jupyter_server, page, "read_only.ipynb", [LIVE, REPLAY, CLOSE])
    run_cell(page, 0, wait=False)
    live = page.locator(".ahp-workbench").nth(0)
    live.locator(".ahp-inputs [data-kind='toolConfirmation']").wait_for()
    assert live.evaluate(COUNT) >= 8 and live.evaluate(ENABLED) != []  # live: the controls work
    assert _badges(live) == []

    # a replay: read-only from the start, and it says so in every view
    run_cell(page, 1)
    replay = page.locator(".ahp-workbench").nth(1)
    replay.locator(".ahp-inputs [data-kind='toolConfirmation']").wait_for()
    replay.locator(".ahp-tree [data-id='p-lint']").wait_for()
    assert _badges(replay) == ["replay: read-only"] * 5, _badges(replay)
    assert replay.evaluate(COUNT) >= 8
    assert replay.evaluate(ENABLED) == [], replay.evaluate(ENABLED)
    prompt = replay.get_by_role("textbox", name="Prompt")
    assert prompt.is_disabled() and prompt.get_attribute("placeholder").startswith("replay: read-only")
    # the inspector never dispatches: it stays usable (time travel, export) in a replay
    assert replay.locator(".ahp-inspector .ahp-toolbar select").first.is_enabled()
    _shot(page, ".ahp-workbench >> nth=1", "readonly-replay")
    _set_theme(page, "JupyterLab Dark")
    _shot(page, ".ahp-workbench >> nth=1", "readonly-replay-dark")
    _set_theme(page, "JupyterLab Light")

    # a closed lab: after the cell that closes it, its views say "closed" and act on nothing
    run_cell(page, 2)
    page.wait_for_function(
        """() => document.querySelectorAll('.ahp-workbench')[0]
                   .querySelectorAll('.ahp-head .ahp-mode[data-mode="closed"]:not([hidden])').length === 5"""
    )
    assert _badges(live) == ["closed"] * 5, _badges(live)
    assert live.evaluate(ENABLED) == [], live.evaluate(ENABLED)
    assert live.get_by_role("textbox", name="Prompt").get_attribute("placeholder").startswith("closed")
    # its MCP server stopped with it: no "ready" badge, no Start / Stop
    assert live.locator(".ahp-tree .ahp-mcp-state").all_text_contents() == ["stopped (lab closed)"]
    assert _badges(replay) == ["replay: read-only"] * 5  # the replay is not the lab: it stays as it was
    _shot(page, ".ahp-workbench >> nth=0", "readonly-closed")
    _set_theme(page, "JupyterLab Dark")
    _shot(page, ".ahp-workbench >> nth=0", "readonly-closed-dark")
    _set_theme(page, "JupyterLab Light")
    wait_idle(page)
    assert errors == [], errors
