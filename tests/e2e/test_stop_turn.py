"""The chat's Stop button, in a real JupyterLab and Chromium: while a turn runs (here it waits for a
person to confirm a call) the chat offers Stop; a click cancels the turn, which the kernel's state
shows too, and Stop goes away. Screenshot: ``artifacts/chat-stop.png``."""

from __future__ import annotations

from .conftest import cell_output_text, open_cells, run_cell
from .test_workbench_lab import LAB_WITH_DROP_TABLE, _shot

LIVE = (
    LAB_WITH_DROP_TABLE
    + """
task = lab.start("clean up", script=[call("drop_table", name="users", confirm=True), summarize()])
lab.show()
"""
)
CHECK = """\
turn = await task
[tc] = turn.tool_calls
print("STOPPED", turn.status, tc.status, tc.state["reason"], lab.chat_state.get("activeTurn"))
"""


def test_stop_cancels_the_running_turn(jupyter_server, page):
    errors = open_cells(jupyter_server, page, "stop_turn.ipynb", [LIVE, CHECK])
    run_cell(page, 0, wait=False)
    chat = page.locator(".ahp-workbench .ahp-chat")
    page.locator(".ahp-inputs [data-kind='toolConfirmation']").wait_for()
    stop = chat.get_by_role("button", name="Stop the running turn")
    stop.wait_for()
    _shot(page, ".ahp-chat", "chat-stop")
    stop.click()
    chat.get_by_text("Turn cancelled").wait_for()
    stop.wait_for(state="hidden")
    page.locator(".ahp-inputs [data-kind='toolConfirmation']").wait_for(state="detached")
    run_cell(page, 1)
    assert "STOPPED cancelled cancelled skipped None" in cell_output_text(page, 1)
    assert errors == []
