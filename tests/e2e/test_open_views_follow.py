"""What a first-hour user met in views already on the page (a first-hour user, stop 53):

* another client's draft answer shows in a question card already open (only views made after the
  draft showed it; notebook 05 says drafts exist "so a second device sees the half-filled form");
* the Customizations list keeps its scroll after a Start/Stop (it jumped to the top: the row just
  clicked, and its new state, went out of view);
* an answered question reads "answered" in the chat (it read "— accept");
* words in the views' text blocks are not broken in the middle (JupyterLab's own rule won).
"""

from __future__ import annotations

from .conftest import REPO_ROOT, open_cells, run_cell

PLUGIN = REPO_ROOT / "examples" / "plugins" / "ahp-lab-demo"
SETUP = f"""\
from ahp_lab import Lab
from ahp_lab.agents.scripted import ask, say, text_question
lab = Lab(plugins=[{str(PLUGIN)!r}])
lab
"""
ASK = """\
task = lab.start("q", script=[ask(text_question("name", "Project name?", required=True), message="Project settings"), say("ok")])
[entry] = await lab.client.wait_for(lab.session, lambda s: s.get("inputNeeded"), timeout=30)
"""
DRAFT = """\
draft = {"state": "draft", "value": {"kind": "text", "value": "acme"}}
lab.dispatch({"type": "chat/inputAnswerChanged", "requestId": entry["request"]["id"], "questionId": "name", "answer": draft})
"""
ANSWER = 'lab.answer(entry["request"]["id"], {"name": "acme"})\nawait task\n'


def test_open_views_follow_drafts_keep_their_scroll_and_read_naturally(jupyter_server, page):
    errors = open_cells(jupyter_server, page, "open_views.ipynb", [SETUP, ASK, DRAFT, ANSWER])
    run_cell(page, 0)
    workbench = page.locator(".jp-Notebook .jp-Cell").nth(0)
    tree = workbench.locator(".ahp-view[data-kind=tree]")
    inputs = workbench.locator(".ahp-view[data-kind=inputs]")
    chat = workbench.locator(".ahp-view[data-kind=chat]")

    # the tree keeps its scroll through a Stop
    tree.locator("[data-mcp-state=ready]").wait_for()
    body = tree.locator(".ahp-tree-body")
    body.evaluate("e => { e.scrollTop = e.scrollHeight }")
    before = body.evaluate("e => e.scrollTop")
    assert before > 0  # the list is taller than its pane
    tree.get_by_role("button", name="Stop ahp-lab-demo:demo").click()
    tree.locator("[data-mcp-state=stopped]").wait_for()
    page.wait_for_function("([e, top]) => e.scrollTop === top", arg=[body.element_handle(), before])

    # another client's draft shows in the card already open
    run_cell(page, 1)
    field = inputs.locator("input[data-question-id=name]")
    field.wait_for()
    assert field.input_value() == ""
    run_cell(page, 2)
    page.wait_for_function("e => e.value === 'acme'", arg=field.element_handle())

    # answered: said as a person says it
    run_cell(page, 3)
    line = chat.locator(".ahp-inputreq").first
    page.wait_for_function("e => e.dataset.response === 'accept'", arg=line.element_handle())
    assert line.inner_text().endswith("— answered"), line.inner_text()

    # words whole in text blocks, whatever JupyterLab's own rule for <pre>
    block = workbench.locator(".ahp-pre").first
    block.wait_for()
    assert block.evaluate("e => getComputedStyle(e).wordBreak") == "normal"
    assert errors == []


WORKBENCH = f"""\
from ahp_lab import Lab
lab = Lab(plugins=[{str(PLUGIN)!r}])
lab.show()
"""


def test_filtering_the_customizations_leaves_the_chat_beside_them_as_tall(jupyter_server, page):
    """Filtering the customization tree shrank the chat beside it (its log from some 490 to 330
    px, the "Jump to latest" button over its last line): the workbench's row followed the rows the
    filter hid (the first-hour user, round 54)."""
    errors = open_cells(jupyter_server, page, "filter_height.ipynb", [WORKBENCH])
    run_cell(page, 0)
    workbench = page.locator(".ahp-workbench").first
    tree = workbench.locator(".ahp-view[data-kind=tree]")
    chat = workbench.locator(".ahp-view[data-kind=chat]")
    tree.locator("[data-mcp-state=ready]").wait_for()
    before = chat.bounding_box()["height"]
    tree.get_by_role("searchbox", name="Filter customizations by text").fill("release")
    tree.locator(".ahp-count", has_text="2 shown").wait_for()
    assert abs(chat.bounding_box()["height"] - before) < 2
    assert errors == []
