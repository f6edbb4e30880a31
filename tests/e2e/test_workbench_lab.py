"""The workbench over the REAL in-kernel host (``Lab``), in a real JupyterLab and Chromium.

One notebook drives a whole session: a turn whose client tool call needs confirmation is approved
with a click in the input queue and reaches ``completed`` both in the kernel's state (checked by a
further cell) and in the timeline; a plugin toggled off in the customization tree greys out every
child; a transition selected in the inspector shows its diff; a client tool registered with
``approval="always"`` waits for this notebook's *local* approval, given with a click too.
Screenshots of each view go to ``artifacts/lab-*.png``.
"""

from __future__ import annotations

import json
import re

from .conftest import ARTIFACTS_DIR, cell_output_text, run_cell, wait_idle, write_notebook
from .test_views_fake import _set_theme

PLUGIN = {
    "type": "plugin",
    "id": "p-lint",
    "uri": "file:///plugins/lint-pack",
    "name": "Lint pack",
    "version": "1.2.0",
    "enabled": True,
    "load": {"kind": "loaded"},
    "children": [
        {"type": "skill", "id": "s-format", "uri": "file:///plugins/lint-pack/skills/format", "name": "Format code"},
        {"type": "rule", "id": "r-style", "uri": "file:///plugins/lint-pack/rules/style", "name": "House style"},
        {"type": "prompt", "id": "pr-review", "uri": "file:///plugins/lint-pack/prompts/review", "name": "Review"},
        {
            "type": "mcpServer",
            "id": "m-lint",
            "uri": "file:///plugins/lint-pack/mcp/lint",
            "name": "Lint server",
            "enabled": True,
            "state": {"kind": "ready"},
        },
    ],
}  # fmt: skip
CHILDREN = [c["id"] for c in PLUGIN["children"]]
OTHER = {
    "type": "directory",
    "id": "d-agents",
    "uri": "file:///work/.agents",
    "name": "Workspace agents",
    "enabled": True,
    "contents": "agent",
    "writable": True,
    "children": [{"type": "agent", "id": "a-rev", "uri": "file:///work/.agents/rev.md", "name": "Reviewer"}],
}

# a lab with a client tool that a confirmation guards (other browser tests start from it too)
LAB_WITH_DROP_TABLE = """\
from ahp_lab import Lab
from ahp_lab.agents.scripted import call, summarize
lab = Lab()

@lab.tool
def drop_table(name: str) -> str:
    \"\"\"Drop a database table.\"\"\"
    return f"dropped {name}"
"""
SETUP = (
    LAB_WITH_DROP_TABLE
    + f"""

@lab.tool(approval="always")
def wipe_cache(path: str) -> str:
    \"\"\"Wipe a cache directory.\"\"\"
    return f"wiped {{path}}"

lab.host.dispatch(lab.session, {{"type": "session/customizationUpdated", "customization": {PLUGIN!r}}})
lab.host.dispatch(lab.session, {{"type": "session/customizationUpdated", "customization": {OTHER!r}}})
task = lab.start("clean up", script=[call("drop_table", name="users", confirm=True), summarize()])
wb = lab.show()
wb
"""
)
CHECK_TURN = """\
turn = await task
[tc] = turn.tool_calls
assert tc.status == "completed" and tc.success and tc.result_text == "dropped users", tc
state_tc = lab.chat_state["turns"][-1]["responseParts"][0]["toolCall"]
assert state_tc["status"] == "completed" and state_tc["toolCallId"] == tc.id, state_tc
print("OK", tc.id, tc.status)
"""
CHECK_TREE = """\
import json
[plugin] = [c for c in lab.session_state["customizations"] if c["id"] == "p-lint"]
print("TREE=" + json.dumps({"enabled": plugin["enabled"], "last": lab.transitions[-1].action}))
"""
LOCAL = """\
task2 = lab.start("wipe it", script=[call("wipe_cache", path="/tmp/cache")])
"""
CHECK_LOCAL = """\
turn2 = await task2
[tc2] = turn2.tool_calls
assert tc2.status == "completed" and tc2.success and tc2.result_text == "wiped /tmp/cache", tc2
assert not lab.client.approvals
print("OK2", tc2.id, tc2.status)
"""


def _shot(page, selector: str, name: str) -> None:
    """Screenshot one element (the viewport grows so that a tall element is captured whole)."""
    ARTIFACTS_DIR.mkdir(exist_ok=True)
    loc = page.locator(selector).first
    size = page.viewport_size
    box = loc.bounding_box()
    if box and box["height"] > size["height"] - 120:
        page.set_viewport_size({"width": size["width"], "height": int(box["height"]) + 400})
        page.wait_for_timeout(300)
    try:
        loc.scroll_into_view_if_needed()
        page.wait_for_timeout(150)  # let rAF-throttled redraws land
        loc.screenshot(path=str(ARTIFACTS_DIR / f"{name}.png"))
    finally:
        page.set_viewport_size(size)


def test_workbench_drives_a_real_lab(jupyter_server, page):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on(
        "console",
        lambda msg: errors.append(msg.text) if msg.type == "error" and "ahp" in msg.text.lower() else None,
    )
    cells = [SETUP, CHECK_TURN, CHECK_TREE, LOCAL, CHECK_LOCAL]
    write_notebook(jupyter_server.root_dir, "lab_workbench.ipynb", cells)
    jupyter_server.open_notebook(page, "lab_workbench.ipynb")
    run_cell(page, 0)
    for sel in (".ahp-tree", ".ahp-timeline", ".ahp-inputs", ".ahp-inspector", ".ahp-chat"):
        page.wait_for_selector(sel)

    # 1. the tool call waits for confirmation: visible in the queue and as a lane in the timeline
    card = page.locator(".ahp-inputs [data-kind='toolConfirmation']")
    card.wait_for()
    tcid = card.get_attribute("data-tool-call-id")
    assert tcid and tcid.startswith("tc-"), tcid
    lane = f".ahp-timeline .ahp-lane[data-tool-call-id='{tcid}']"
    page.wait_for_selector(f"{lane}[data-state='pending-confirmation']")
    _shot(page, ".ahp-inputs", "lab-inputs-confirmation")
    page.get_by_role("button", name="Approve Drop Table", exact=True).click()
    page.wait_for_selector(f"{lane}[data-state='completed']")
    page.wait_for_selector(".ahp-inputs [data-kind='toolConfirmation']", state="detached")
    run_cell(page, 1)
    out = cell_output_text(page, 1)
    assert f"OK {tcid} completed" in out, out
    # the lane's steps and the state machine show the path it took
    page.locator(lane).click()
    page.wait_for_selector(
        f".ahp-timeline .ahp-tl-detail [data-tool-call-id='{tcid}'][data-state='completed']"
    )
    page.wait_for_selector(".ahp-timeline .ahp-machine [data-node='completed'][data-current='true']")
    steps = page.locator(".ahp-timeline .ahp-steps tbody tr").all_inner_texts()
    assert any("toolCallConfirmed" in s and "pending-confirmation → running" in s for s in steps), steps
    _shot(page, ".ahp-timeline", "lab-timeline")
    _shot(page, ".ahp-chat", "lab-chat")

    # 2. toggle the plugin off: the host accepts it and every child shows disabled
    plugin = page.locator(".ahp-tree [data-id='p-lint'][data-type='plugin']")
    plugin.wait_for()
    for cid in CHILDREN:
        assert plugin.locator(f"[data-id='{cid}']").get_attribute("data-effective") == "true", cid
    _shot(page, ".ahp-tree", "lab-tree-enabled")
    toggle = page.get_by_role("checkbox", name="Enable Lint pack")
    assert toggle.is_checked()
    other = ".ahp-tree [data-id='d-agents'][data-type='directory']"
    page.locator(other).evaluate("e => { e.dataset.mark = 'kept'; }")
    toggle.click()
    page.wait_for_selector(".ahp-tree [data-id='p-lint'][data-effective='false']")
    assert not toggle.is_checked()
    # keyed rendering: the untouched container keeps its element (only the toggled one is rebuilt)
    assert page.locator(other).get_attribute("data-mark") == "kept"
    assert page.locator(f"{other} [data-id='a-rev']").get_attribute("data-effective") == "true"
    for cid in CHILDREN:
        child = plugin.locator(f"[data-id='{cid}']")
        assert child.get_attribute("data-effective") == "false", cid
        assert "ahp-greyed" in (child.get_attribute("class") or ""), cid
    _shot(page, ".ahp-tree", "lab-tree-disabled")
    run_cell(page, 2)
    got = json.loads(re.search(r"^TREE=(.*)$", cell_output_text(page, 2), re.M).group(1))
    assert got == {
        "enabled": False,
        "last": {"type": "session/customizationToggled", "id": "p-lint", "enabled": False},
    }, got

    # 3. select that transition in the inspector: its diff is shown
    page.locator(".ahp-inspector select[data-filter='type']").select_option("session/customizationToggled")
    # wait until the filtered rows have replaced the unfiltered ones (the kernel answers the filter)
    page.wait_for_function(
        """() => { const rows = [...document.querySelectorAll('.ahp-inspector .ahp-trow[data-seq]')];
                   return rows.length > 0 && rows.every(r => r.textContent.includes('customizationToggled')); }"""
    )
    row = page.locator(".ahp-inspector .ahp-trow[data-seq]").first
    seq = row.get_attribute("data-seq")
    row.click()
    detail = page.locator(f".ahp-inspector .ahp-tdetail [data-seq='{seq}']")
    detail.wait_for()
    assert "session/customizationToggled" in detail.inner_text()
    op = page.locator(".ahp-inspector .ahp-diff .ahp-op").first
    op.wait_for()
    diff = page.locator(".ahp-inspector .ahp-diff").inner_text()
    assert "customizations/" in diff and "enabled" in diff and "false" in diff, diff
    _shot(page, ".ahp-inspector", "lab-inspector-diff")
    page.locator(".ahp-inspector select[data-filter='type']").select_option("")

    # 4. a local approval: the client waits for this notebook's person before running the tool
    run_cell(page, 3)
    local = page.locator(".ahp-inputs [data-kind='toolClientExecution'] [data-local-approval]")
    local.wait_for()
    tcid2 = local.get_attribute("data-local-approval")
    page.wait_for_selector(f".ahp-timeline .ahp-lane[data-tool-call-id='{tcid2}'][data-state='running']")
    _shot(page, ".ahp-inputs", "lab-inputs-local-approval")
    _set_theme(page, "JupyterLab Dark")
    _shot(page, ".ahp-inputs", "lab-inputs-local-approval-dark")
    _shot(page, ".ahp-tree", "lab-tree-disabled-dark")
    _set_theme(page, "JupyterLab Light")
    page.get_by_role("button", name="Approve Wipe Cache locally").click()
    page.wait_for_selector(f".ahp-timeline .ahp-lane[data-tool-call-id='{tcid2}'][data-state='completed']")
    page.wait_for_selector(".ahp-inputs [data-local-approval]", state="detached")
    run_cell(page, 4)
    out = cell_output_text(page, 4)
    assert f"OK2 {tcid2} completed" in out, out

    wait_idle(page)
    _shot(page, ".ahp-workbench", "lab-workbench")
    assert errors == [], errors
