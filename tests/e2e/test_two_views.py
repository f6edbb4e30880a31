"""One chat model shown twice (a second cell, or JupyterLab's "Create New View for Cell Output",
which the tour suggests): each view shows the conversation once. Every view of a model gets the
same message object, and the first view's appends to it were appended again by the second: the
agent's streamed answer read twice, run together (a first-hour user)."""

from __future__ import annotations

from .conftest import open_cells, run_cell

SETUP = """\
from ahp_lab import Lab
lab = Lab()
chat = lab.show().chat
chat
"""
AGAIN = "chat\n"
SEND = 'turn = await lab.send("hello")\nprint("TEXT=" + turn.text)\n'


def test_two_views_of_one_chat_show_the_answer_once(jupyter_server, page):
    errors = open_cells(jupyter_server, page, "two_views.ipynb", [SETUP, AGAIN, SEND])
    for i in range(3):
        run_cell(page, i)
    views = page.locator(".ahp-chat")
    assert views.count() == 2
    answer = page.locator(".ahp-chat .ahp-part-md").first.inner_text()
    page.wait_for_function(
        """() => { const v = [...document.querySelectorAll('.ahp-chat')];
                   return v.length === 2 && v.every(c => c.querySelector('.ahp-turn[data-state="complete"]')); }"""
    )
    texts = [views.nth(i).locator(".ahp-turn .ahp-part-md").all_inner_texts() for i in range(2)]
    assert texts[0] == texts[1] and len(texts[0]) >= 1, texts
    assert all(t.count(texts[0][0][:20]) == 1 for t in texts[0]), texts  # not run together twice
    assert answer and errors == []
