"""The inspector's ACP lane in a real JupyterLab: raw ACP frames beside the AHP transitions.

A real ACP agent subprocess (the offline example) streams an answer; in the browser the ACP lane is
switched on, a chunk frame is clicked (the transition it produced is selected and its detail names
the frame), and a frame chip in a transition's detail is clicked (the lane shows that frame's
JSON-RPC message), and a seq chip in the lane scrolls the table to that transition. Screenshot:
``artifacts/acp-lane.png``.
"""

from __future__ import annotations

import sys

from .conftest import REPO_ROOT, run_cell, write_notebook
from .test_workbench_lab import _shot

SETUP = f"""\
import sys, tempfile
from ahp_lab import Lab
from ahp_lab.agents.acp import AcpAgent
from ahp_lab.widgets import TransitionInspector
agent = AcpAgent([{sys.executable!r}, {str(REPO_ROOT / "examples" / "acp_agent.py")!r}], cwd=tempfile.mkdtemp())
lab = await Lab.open(agent=agent)
turn = await lab.send("hello")
insp = TransitionInspector(lab.as_source())
insp
"""
CLOSE = "await agent.aclose()"
#: the selected row lies within what the table's scroller shows (rows sit at ``top: i * ROW_H``)
SHOWN_IN_THE_TABLE = """() => {
  const s = document.querySelector(".ahp-inspector .ahp-tscroll");
  const r = s && s.querySelector(".ahp-trow.ahp-selected");
  if (!r) return false;
  const top = parseFloat(r.style.top);
  return top >= s.scrollTop && top + r.offsetHeight <= s.scrollTop + s.clientHeight;
}"""


def test_acp_lane_links_frames_and_transitions(jupyter_server, page):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    write_notebook(jupyter_server.root_dir, "acp_lane.ipynb", [SETUP, CLOSE])
    jupyter_server.open_notebook(page, "acp_lane.ipynb")
    run_cell(page, 0)
    toggle = page.get_by_role("checkbox", name="Show the ACP lane")
    toggle.wait_for()
    toggle.check()
    lane = page.locator(".ahp-inspector .ahp-acp-lane")
    lane.wait_for()
    chunk = lane.locator(".ahp-acp-row[data-direction='in']", has_text="agent_message_chunk").nth(2)
    chunk.wait_for()
    frame = chunk.get_attribute("data-frame")
    chunk.click()
    # frame -> transition: the delta it produced is selected, and its detail names the frame back
    detail = page.locator(".ahp-inspector .ahp-tdetail")
    detail.locator(".ahp-detail-head", has_text="chat/delta").wait_for()
    back = detail.locator(f".ahp-frame-chip[data-frame='{frame}']")
    back.wait_for()
    assert "agent_message_chunk" in back.inner_text()
    page.wait_for_selector(f".ahp-inspector .ahp-acp-row.ahp-linked[data-frame='{frame}']")
    # transition -> frame: clicking the chip shows the frame's JSON-RPC message
    back.click()
    message = lane.locator(".ahp-acp-detail")
    message.locator(".ahp-detail-head", has_text="agent_message_chunk").wait_for()
    assert "sessionUpdate" in message.inner_text()
    # an outgoing frame links to the action that caused it: session/prompt <- chat/turnStarted
    prompt = lane.locator(".ahp-acp-row[data-direction='out']", has_text="session/prompt").first
    prompt.locator(".ahp-seq-chip").first.click()
    detail.locator(".ahp-detail-head", has_text="chat/turnStarted").wait_for()
    # the table scrolls to it (it had followed the end, far below): its row is in view, selected
    row = page.locator(".ahp-inspector .ahp-trow.ahp-selected", has_text="chat/turnStarted")
    row.wait_for()
    page.wait_for_function(SHOWN_IN_THE_TABLE)
    assert not page.get_by_role("checkbox", name="Follow new transitions").is_checked()
    _shot(page, ".ahp-inspector", "acp-lane")
    run_cell(page, 1)
    assert not errors, errors
