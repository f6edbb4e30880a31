"""A turn of more than 400 parts shows its newest ones in the chat pane, the earliest said left out
above them: it showed its first 400 and "N more parts not shown", hiding the tool call that waited
for the person and the agent's answer, which come last (ACP round 16)."""

from __future__ import annotations

from .conftest import open_cells, run_cell, screenshot

SETUP = """\
from ahp_lab import Lab
lab = await Lab.open()
user = {"text": "go", "origin": {"kind": "user"}}
lab.host.dispatch(lab.chat, {"type": "chat/turnStarted", "turnId": "t", "startedAt": "2026-12-07T00:00:00.000Z", "message": user})
for i in range(450):
    part = {"kind": "markdown", "id": f"p{i}", "content": f"step {i} done"}
    lab.host.dispatch(lab.chat, {"type": "chat/responsePart", "turnId": "t", "part": part})
lab.show()
"""


def test_a_long_turn_shows_its_newest_parts_and_says_the_earliest_are_left_out(jupyter_server, page):
    errors = open_cells(jupyter_server, page, "chat_long_turn.ipynb", [SETUP])
    run_cell(page, 0)
    chat = page.locator(".ahp-workbench .ahp-chat")
    chat.get_by_text("step 449 done").wait_for(timeout=30_000)
    note = chat.locator(".ahp-parts-omitted")
    assert note.inner_text() == "100 earlier parts not shown"
    assert chat.get_by_text("step 100 done", exact=True).count() == 1
    assert chat.get_by_text("step 99 done", exact=True).count() == 0
    # the note comes before the parts it stands for
    assert page.evaluate(
        "([n, p]) => !!(n.compareDocumentPosition(p) & Node.DOCUMENT_POSITION_FOLLOWING)",
        [note.element_handle(), chat.get_by_text("step 100 done", exact=True).element_handle()],
    )
    chat.locator(".ahp-chat-log").evaluate("e => e.scrollTop = 0")
    screenshot(page, "chat-long-turn")
    assert errors == []
