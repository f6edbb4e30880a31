"""DESIGN.md decision 7 in a real browser: a cell awaiting a turn receives the click that unblocks it.

The cell `turn = await lab.send(...)` waits on a tool call that needs confirmation; while it
awaits, a person clicks "Approve" in the workbench displayed by the previous cell. The click (a
widget comm message) must reach the kernel during the await, the turn must finish, and the
awaiting cell must print the completed tool call.
"""

from __future__ import annotations

from .conftest import cell_output_text, run_all, screenshot, wait_idle, write_notebook

SETUP = """\
from ahp_lab import Lab
from ahp_lab.agents.scripted import call, summarize
lab = Lab()

@lab.tool
def drop_table(name: str) -> str:
    \"\"\"Drop a database table.\"\"\"
    return f"dropped {name}"

lab.show()
"""
AWAIT = """\
turn = await lab.send("clean up", script=[call("drop_table", name="users", confirm=True), summarize()])
print("STATUS", turn.tool_calls[0].status, turn.tool_calls[0].result_text)
"""


def test_a_click_reaches_a_cell_that_is_awaiting_the_turn(jupyter_server, page):
    write_notebook(jupyter_server.root_dir, "await_click.ipynb", [SETUP, AWAIT])
    jupyter_server.open_notebook(page, "await_click.ipynb")
    run_all(page, wait=False)
    approve = page.get_by_role("button", name="Approve Drop Table")
    approve.wait_for(timeout=60_000)
    # the second cell is still running: it is awaiting the person
    assert "STATUS" not in cell_output_text(page, 1)
    screenshot(page, "await-click-before")
    approve.click()
    wait_idle(page)
    out = cell_output_text(page, 1)
    assert "STATUS completed dropped users" in out, out
    screenshot(page, "await-click-after")
