"""Issue 13 §4, the views as a new user meets them, in a real JupyterLab and Chromium (light and dark).

* the chat follows the newest content through an approval and a theme switch, unless the person
  scrolled up: then a "jump to latest" button shows, and brings them back;
* a failed tool call shows one status, "failed" in red ("completed · failed" in the detail), and the
  tool-call list is as tall as its lanes (no large empty box);
* the inspector's columns fit their content at 1,400 px, show full values on hover, resize by drag,
  and diff paths wrap only between segments;
* a range selected in the inspector exports as a fixture and as a pytest file, which both pass;

Screenshots go to ``artifacts/fix-*.png``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from .conftest import open_cells, run_cell, wait_idle
from .test_views_fake import _set_theme
from .test_workbench_lab import _shot

SETUP = """\
from ahp_lab import Lab
from ahp_lab.agents.scripted import call, say, summarize
lab = Lab()

@lab.tool
def fetch_page(url: str) -> str:
    \"\"\"Fetch a web page (this one never answers).\"\"\"
    raise ConnectionError(f"cannot reach {url}")

@lab.tool
def drop_table(name: str) -> str:
    \"\"\"Drop a database table.\"\"\"
    return f"dropped {name}"

for i in range(5):
    await lab.send(f"question {i}", script=[say(f"Answer {i}. " + "A fairly long answer. " * 40)])
await lab.send("fetch it", script=[call("fetch_page", url="https://example.invalid/page"), summarize()])
task = lab.start("clean up", script=[call("drop_table", name="users", confirm=True), summarize()])
wb = lab.show()
wb
"""
MORE = """\
await task
await lab.send("one more", script=[say("The newest message. " * 30)])
"""

LOG = ".ahp-chat .ahp-chat-log"
AT_BOTTOM = f"""() => {{ const l = document.querySelector("{LOG}");
  return l.scrollHeight > l.clientHeight + 100 && l.scrollHeight - l.scrollTop - l.clientHeight <= 24; }}"""
LAST_TURN_VISIBLE = f"""() => {{ const l = document.querySelector("{LOG}");
  const turns = l.querySelectorAll(".ahp-turn"); const last = turns[turns.length - 1];
  if (!last) return false;
  const a = l.getBoundingClientRect(), b = last.getBoundingClientRect();
  return b.bottom <= a.bottom + 2 && b.bottom > a.top; }}"""
# cells cut off: by their own column, or by the table (scrolled sideways)
TRUNCATED_CELLS = """() => { const t = document.querySelector('.ahp-inspector .ahp-table').getBoundingClientRect();
  return [...document.querySelectorAll('.ahp-inspector .ahp-trow[data-seq] > span, .ahp-inspector .ahp-thead .ahp-col-name')]
    .filter(c => c.scrollWidth > c.clientWidth + 1 || c.getBoundingClientRect().right > t.right + 1)
    .map(c => `${c.closest('[data-seq]') ? c.closest('[data-seq]').dataset.seq : 'head'}: ${c.textContent}`); }"""
# each line of a diff path after the first starts a segment (the previous character is "/")
MID_WORD_BREAKS = """() => {
  const bad = [];
  for (const el of document.querySelectorAll('.ahp-inspector .ahp-op-path')) {
    const text = el.textContent; let lastTop = null; let i = 0;
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      for (let k = 0; k < n.data.length; k++, i++) {
        const r = document.createRange(); r.setStart(n, k); r.setEnd(n, k + 1);
        const rect = r.getClientRects()[0]; if (!rect) continue;
        if (lastTop !== null && rect.top > lastTop + 2 && text[i - 1] !== "/") bad.push(`${text} at ${i}`);
        lastTop = rect.top;
      }
    }
  }
  return bad; }"""


def _color(page, selector: str) -> tuple[str, str]:
    """The badge's status colour and the theme's error colour."""
    return page.evaluate(
        """(sel) => [getComputedStyle(document.querySelector(sel)).getPropertyValue('--ahp-c').trim(),
                     getComputedStyle(document.body).getPropertyValue('--jp-error-color1').trim()]""",
        selector,
    )


def test_chat_follows_failed_badge_and_inspector_columns(jupyter_server, page):
    errors = open_cells(jupyter_server, page, "view_fixes.ipynb", [SETUP, MORE])
    run_cell(page, 0, wait=False)
    page.wait_for_selector(".ahp-inputs [data-kind='toolConfirmation']")

    # 1. the chat follows the newest content, through an approval (the queue's card goes away and
    # the workbench reflows) and a theme switch
    page.wait_for_function(AT_BOTTOM)
    page.get_by_role("button", name="Approve Drop Table", exact=True).click()
    page.wait_for_selector(".ahp-timeline .ahp-lane[data-state='completed'] >> text=Drop Table")
    page.wait_for_selector(".ahp-inputs [data-kind='toolConfirmation']", state="detached")
    wait_idle(page)
    page.wait_for_function(AT_BOTTOM)
    page.wait_for_function(LAST_TURN_VISIBLE)
    assert page.locator(".ahp-chat .ahp-jump").is_hidden()
    _set_theme(page, "JupyterLab Dark")
    page.wait_for_function(AT_BOTTOM)
    _shot(page, ".ahp-chat", "fix-chat-follows-dark")
    _set_theme(page, "JupyterLab Light")
    page.wait_for_function(AT_BOTTOM)

    # ... unless the person scrolled up: the newest message does not pull them down, a button does
    page.locator(LOG).hover()
    page.mouse.wheel(0, -3000)
    jump = page.locator(".ahp-chat .ahp-jump")
    jump.wait_for(state="visible")
    run_cell(page, 1)
    page.wait_for_selector(".ahp-chat .ahp-turn >> text=The newest message.")
    assert not page.evaluate(AT_BOTTOM) and jump.is_visible()
    _shot(page, ".ahp-chat", "fix-chat-scrolled-up")
    jump.click()
    page.wait_for_function(AT_BOTTOM)
    page.wait_for_function(LAST_TURN_VISIBLE)
    jump.wait_for(state="hidden")
    _shot(page, ".ahp-chat", "fix-chat-follows")

    # 2. a failed call: one status, "failed", in red; "completed · failed" in the detail
    lane = page.locator(".ahp-timeline .ahp-lane", has_text="Fetch Page")
    assert lane.get_attribute("data-state") == "completed" and lane.get_attribute("data-outcome") == "failed"
    badge = lane.locator(".ahp-status")
    assert badge.inner_text() == "failed" and badge.get_attribute("data-state") == "failed"
    ahp_c, error_color = _color(page, ".ahp-timeline .ahp-lane[data-outcome='failed'] .ahp-status")
    assert ahp_c == error_color, (ahp_c, error_color)
    card = page.locator(".ahp-chat .ahp-toolcard[data-outcome='failed']")
    assert card.locator(".ahp-status").inner_text() == "failed"
    assert "cannot reach https://example.invalid/page" in card.inner_text()
    # the card does not repeat the title as "Ran Drop Table" under "Drop Table"
    ok_card = page.locator(".ahp-chat .ahp-toolcard", has_text="Drop Table")
    assert "Ran Drop Table" not in ok_card.inner_text(), ok_card.inner_text()
    lane.click()
    head = page.locator(".ahp-timeline .ahp-tl-detail .ahp-detail-head .ahp-status")
    head.wait_for()
    assert head.inner_text() == "completed · failed" and head.get_attribute("data-state") == "failed"
    # the lanes box is as tall as its two lanes, not a 300 px box
    box = page.locator(".ahp-timeline .ahp-tl-lanes").bounding_box()
    assert box["height"] <= 2 * 30 + 4, box
    _shot(page, ".ahp-timeline", "fix-timeline-failed")
    _set_theme(page, "JupyterLab Dark")
    _shot(page, ".ahp-timeline", "fix-timeline-failed-dark")
    _set_theme(page, "JupyterLab Light")

    # 3. the inspector at 1,400 px: no cell is cut off; full values on hover; columns resize
    assert page.viewport_size["width"] == 1400
    page.locator(".ahp-inspector .ahp-tscroll").scroll_into_view_if_needed()
    page.wait_for_selector(".ahp-inspector .ahp-trow[data-seq]")
    page.wait_for_function(f"() => ({TRUNCATED_CELLS})().length === 0")
    action = page.locator(".ahp-inspector .ahp-trow[data-seq] .ahp-c-action").last
    assert action.get_attribute("title") == action.inner_text()
    origin = page.locator(".ahp-inspector .ahp-trow[data-seq] .ahp-c-origin").last
    assert origin.get_attribute("title") == origin.inner_text()
    page.locator(".ahp-inspector select[data-filter='type']").select_option("chat/toolCallComplete")
    page.wait_for_function(
        """() => { const rows = [...document.querySelectorAll('.ahp-inspector .ahp-trow[data-seq]')];
                   return rows.length > 0 && rows.every(r => r.textContent.includes('toolCallComplete')); }"""
    )
    page.locator(".ahp-inspector .ahp-trow[data-seq]").last.click()
    page.wait_for_selector(".ahp-inspector .ahp-diff .ahp-op")
    _shot(page, ".ahp-inspector", "fix-inspector")
    _set_theme(page, "JupyterLab Dark")
    _shot(page, ".ahp-inspector", "fix-inspector-dark")
    _set_theme(page, "JupyterLab Light")
    # drag the action column narrower: it ellipsizes (the full value stays in its tooltip)
    grip = page.locator(".ahp-inspector .ahp-col-resize[data-col='action']").bounding_box()
    before = page.locator(".ahp-inspector .ahp-thead > [data-col='action']").bounding_box()["width"]
    page.mouse.move(grip["x"] + grip["width"] / 2, grip["y"] + grip["height"] / 2)
    page.mouse.down()
    page.mouse.move(grip["x"] - 80, grip["y"] + grip["height"] / 2, steps=5)
    page.mouse.up()
    after = page.locator(".ahp-inspector .ahp-thead > [data-col='action']").bounding_box()["width"]
    assert before - 90 < after < before - 70, (before, after)
    assert any("chat/" in t for t in page.evaluate(TRUNCATED_CELLS))
    # a narrow detail pane: diff paths wrap between segments, never inside one
    page.locator(".ahp-inspector .ahp-tdetail").evaluate("e => { e.style.width = '190px'; }")
    assert page.evaluate(MID_WORD_BREAKS) == []
    page.locator(".ahp-inspector .ahp-tdetail").evaluate("e => { e.style.width = ''; }")

    # 4. export a range as a test: click a row, shift+click another, export as fixture and pytest
    page.locator(".ahp-inspector select[data-filter='type']").select_option("")
    page.locator(".ahp-inspector select[data-filter='channel']").select_option(index=0)
    # the rows once the type filter is cleared, read in one go (the table re-renders when the
    # kernel answers each filter change; a row click below waits for its row)
    seqs = page.wait_for_function(
        """() => { const rows = [...document.querySelectorAll('.ahp-inspector .ahp-trow[data-seq]')];
                   const cleared = rows.some(r => !r.textContent.includes('toolCallComplete'));
                   return rows.length > 8 && cleared
                     && rows.sort((a, b) => a.dataset.index - b.dataset.index).map(r => r.dataset.seq); }"""
    ).json_value()
    page.locator(f".ahp-inspector .ahp-trow[data-seq='{seqs[2]}']").click()
    page.locator(f".ahp-inspector .ahp-trow[data-seq='{seqs[8]}']").click(modifiers=["Shift"])
    page.wait_for_function(
        "() => document.querySelectorAll('.ahp-inspector .ahp-trow.ahp-in-range').length === 7"
    )
    bar = page.locator(".ahp-inspector .ahp-export")
    page.wait_for_function(  # the kernel's answer: the range and how many actions it holds
        f"""() => document.querySelector('.ahp-inspector .ahp-export-range').textContent
                   .startsWith('seq {seqs[2]}–{seqs[8]} of chat')"""
    )
    assert re.match(r"seq \d+–\d+ of chat .*: \d+ actions?$", bar.locator(".ahp-export-range").inner_text())
    bar.get_by_role("textbox", name="Description of the exported fixture").fill("the end of the session")
    bar.get_by_role("button", name="Export the selected range as fixture").click()
    path = bar.locator("[data-export-path]")
    path.wait_for()
    written = Path(jupyter_server.root_dir) / path.inner_text()
    assert (
        written.suffix == ".json"
        and json.loads(written.read_text())["description"] == "the end of the session"
    )
    assert f"python -m ahp_lab.conformance run {written.parent}" in bar.inner_text()  # from anywhere
    _shot(page, ".ahp-inspector", "fix-inspector-export")
    bar.get_by_role("button", name="Export the selected range as pytest file").click()
    page.wait_for_function(
        "() => /test_.*\\.py/.test(document.querySelector('.ahp-inspector [data-export-path]').textContent)"
    )
    # both pass against the reference reducers
    run = subprocess.run(
        [sys.executable, "-m", "ahp_lab.conformance", "run", "ahp-fixtures"],
        cwd=jupyter_server.root_dir, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    test_file = Path(jupyter_server.root_dir) / path.inner_text()
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
        cwd=test_file.parent, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout + run.stderr
    _set_theme(page, "JupyterLab Dark")
    _shot(page, ".ahp-inspector", "fix-inspector-export-dark")
    _set_theme(page, "JupyterLab Light")
    assert errors == [], errors
