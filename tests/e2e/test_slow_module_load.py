"""Views whose module loads late still show, and follow, the kernel's state.

anywidget's front end (0.11) gives each model 2 s from its creation to import and bind the view
module; past that deadline its runtime's ``ready`` promise rejects for good and every later message
from the kernel to that model is dropped without a word. On a loaded machine the tour then showed a
timeline saying "No tool calls yet" beside a chat with four tool calls (1 run in ~11). The views
notice it after they render and ask the kernel for everything again (``js/src/resync.js``,
``SourceView.resync``).

The test makes every widget module take 2.5 s to evaluate (an init script wraps the blob URL
anywidget imports), displays a workbench over the demo source, and checks that each view shows the
demo state and then follows new tool calls.
"""

from __future__ import annotations

from .conftest import run_cell, write_notebook

DELAY_MS = 2500  # past anywidget's 2 s deadline

# anywidget imports `_esm` from a blob URL: hand it a module that imports the real one, then waits
DELAY_MODULES_JS = """
(() => {
  const create = URL.createObjectURL.bind(URL);
  URL.createObjectURL = (obj) => {
    const url = create(obj);
    const delay = window.__ahpDelayModules || 0;
    if (!delay || !(obj instanceof Blob) || obj.type !== "text/javascript") return url;
    const wrapper = `const m = await import(${JSON.stringify(url)});
await new Promise((resolve) => setTimeout(resolve, ${delay}));
export default m.default;`;
    return create(new Blob([wrapper], { type: "text/javascript" }));
  };
})();
"""

CELLS = [
    "from ahp_lab.widgets import Workbench\n"
    "from ahp_lab.widgets.demo import add_tool_calls, demo_source\n"
    "src = demo_source()\n"
    "wb = Workbench(src)\n"
    "wb",
    "add_tool_calls(src, 3)\nprint('TOTAL', wb.timeline.meta['total'], 'LOG', wb.inspector.total)",
]


def _lanes(page) -> int:
    return page.locator(".ahp-timeline .ahp-lane").count()


def test_views_follow_the_kernel_after_a_slow_module_load(jupyter_server, page):
    repaired: list[str] = []
    errors: list[str] = []
    page.on("console", lambda msg: repaired.append(msg.text) if "[ahp_lab]" in msg.text else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.add_init_script(DELAY_MODULES_JS)
    write_notebook(jupyter_server.root_dir, "slow_module.ipynb", CELLS)
    jupyter_server.open_notebook(page, "slow_module.ipynb")

    page.evaluate(f"window.__ahpDelayModules = {DELAY_MS}")
    run_cell(page, 0)
    for sel in (".ahp-tree", ".ahp-timeline", ".ahp-inputs", ".ahp-inspector", ".ahp-chat"):
        page.wait_for_selector(sel)
    page.evaluate("window.__ahpDelayModules = 0")

    # every view shows the demo state, although the kernel sent it while the models were deaf
    page.wait_for_function(
        "document.querySelectorAll('.ahp-timeline .ahp-lane').length === 7", timeout=20_000
    )
    page.wait_for_selector(".ahp-tree [data-id='p-review'][data-type='plugin']")
    page.wait_for_selector(".ahp-inputs [data-kind='toolConfirmation']")
    page.wait_for_selector(".ahp-inspector .ahp-trow[data-seq]")
    page.wait_for_selector(".ahp-chat .ahp-turn[data-turn-id='t1'] .ahp-md strong")
    page.wait_for_selector(".ahp-chat .ahp-toolcard[data-tool-call-id='tests-1'][data-state='running']")
    assert repaired, (
        "the delay did not make anywidget drop messages any more (no view had to reconnect): "
        "if anywidget no longer has a load deadline, this test and js/src/resync.js can go"
    )

    # and they follow what happens next
    run_cell(page, 1)
    page.wait_for_function("document.querySelectorAll('.ahp-timeline .ahp-lane').length === 10")
    page.wait_for_function(
        "(document.querySelector('.ahp-timeline .ahp-count') || {}).textContent?.trim().startsWith('10 ')"
    )
    page.wait_for_selector(".ahp-chat .ahp-toolcard[data-tool-call-id='bulk-2']")
    assert not errors, errors
