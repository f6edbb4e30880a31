"""The Model calls view over a real LoopAgent, in a real JupyterLab and Chromium.

The custom tools a LoopAgent discovered show in the customization tree. Two turns keep the prefix; then a client tool registered mid-session changes the resident tool
list, and the view shows that call as "prefix broken", with its messages past the system prompt
and tools marked new. Clicking a call shows its messages marked stable prefix / new / synthetic
tail, and the capability notice. Screenshots go to ``artifacts/model-calls*.png``.
"""

from __future__ import annotations

from .conftest import cell_output_text, run_cell, write_notebook
from .test_workbench_lab import _shot

SETUP = """\
import tempfile
from pathlib import Path
from ahp_lab import Lab
from ahp_lab.agents.loop import LoopAgent
from ahp_lab.agents.models import ScriptedModel, respond, use
from ahp_lab.extensions import Catalog, CatalogEntry, Extension, Hooks, todo_extension

clock = Extension("clock", hooks=Hooks(before_model_call=lambda runtime: "It is 12:00."))
box = Extension("box", catalogs=[Catalog("tools", lambda runtime: [CatalogEntry("convert_units", "Convert units.")])])
model = ScriptedModel([
    respond("Planning.", use("UpdateTodos", todos=[{"id": "1", "content": "ship it", "status": "in_progress"}])),
    "Planned.", "Second answer.", "Third answer.",
])
tools = Path(tempfile.mkdtemp())
(tools / "shout.py").write_text(
    "from ahp_lab.extensions import CustomTool\\n"
    "def factory(api):\\n"
    "    return CustomTool(name='shout', description='Shout a word.', execute=lambda *a: 'HEY')\\n"
)
(tools / "broken.py").write_text("import nowhere\\n")
agent = LoopAgent(model, extensions=[todo_extension(), clock, box], user_tools=None, tool_paths=[str(tools)])
lab = Lab(agent=agent)
wb = lab.show()
wb
"""
TURNS = """\
await lab.send("plan the release")
await lab.send("and then?")

@lab.tool
def deploy(target: str) -> str:
    \"\"\"Deploy somewhere.\"\"\"
    return target

await lab.send("deploy?")
print("CALLS", [(c.index, c.stable) for c in lab.model_calls])
"""


def test_model_calls_view_shows_the_stable_prefix_and_where_it_broke(jupyter_server, page):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    write_notebook(jupyter_server.root_dir, "model_calls.ipynb", [SETUP, TURNS])
    jupyter_server.open_notebook(page, "model_calls.ipynb")
    run_cell(page, 0)
    view = page.locator(".ahp-modelcalls")
    view.wait_for()
    assert "No model calls yet" in view.inner_text()
    run_cell(page, 1)
    out = cell_output_text(page, 1)
    assert "CALLS [(0, None), (1, True), (2, True), (3, False)]" in out, out
    page.wait_for_selector(".ahp-modelcalls .ahp-mc-row[data-index='3'][data-stable='false']")
    assert page.locator(".ahp-modelcalls .ahp-mc-row[data-stable='true']").count() == 2
    assert "1 broken" in page.locator(".ahp-modelcalls .ahp-count").inner_text()

    # the newest call is selected: the tool list changed, so nothing after the header is cached
    detail = page.locator(".ahp-modelcalls .ahp-mc-detail")
    page.wait_for_selector(".ahp-modelcalls .ahp-mc-head[data-index='3']")
    assert "The system prompt or the tool list changed" in detail.inner_text()
    assert detail.locator(".ahp-mc-msg[data-mark='prefix']").count() == 0
    _shot(page, ".ahp-modelcalls", "model-calls-broken")

    # a call that kept the prefix: history marked prefix, the new prompt new, the hook's text tail
    page.locator(".ahp-modelcalls .ahp-mc-row[data-index='2']").click()
    page.wait_for_selector(".ahp-modelcalls .ahp-mc-head[data-index='2']")
    marks = detail.locator(".ahp-mc-msg[data-i]").evaluate_all(
        "els => els.map(e => e.dataset.mark + ':' + e.dataset.kind)"
    )
    assert marks[0] == "prefix:user" and marks[1] == "prefix:notice", marks
    assert marks[-1] == "tail:tail" and "new:user" in marks, marks
    assert "synthetic · clock" in detail.inner_text() and "It is 12:00." in detail.inner_text()
    assert "capability notice" in detail.inner_text() and "convert_units" in detail.inner_text()
    _shot(page, ".ahp-modelcalls", "model-calls")
    _shot(page, ".ahp-workbench", "model-calls-workbench")

    # the discovered custom tools are a container of the customization tree, with the failed module
    folder = page.locator(".ahp-tree .ahp-container[data-type='directory']", has_text="Custom tools")
    folder.wait_for()
    assert folder.locator("[data-type='tool']", has_text="shout").count() == 1
    assert "broken.py: it could not be loaded" in folder.inner_text()
    _shot(page, ".ahp-tree", "model-calls-custom-tools-tree")
    assert errors == [], errors
