"""Smoke test of the browser harness: an anywidget renders, a click reaches the kernel."""

from __future__ import annotations

from .conftest import cell_output_text, run_all, run_cell, screenshot, wait_idle, write_notebook

WIDGET_CELL = '''\
import anywidget
import traitlets


class Clicker(anywidget.AnyWidget):
    _esm = """
    function render({ model, el }) {
      const b = document.createElement("button");
      b.className = "smoke-clicker";
      b.setAttribute("aria-label", "Smoke clicker");
      const label = () => { b.textContent = `clicked ${model.get("count")} times`; };
      label();
      b.addEventListener("click", () => { model.set("count", model.get("count") + 1); model.save_changes(); });
      model.on("change:count", label);
      el.appendChild(b);
    }
    export default { render };
    """
    count = traitlets.Int(0).tag(sync=True)


w = Clicker()
w
'''
READ_CELL = 'print(f"kernel count={w.count}")'


def test_click_in_browser_reaches_kernel(jupyter_server, page):
    write_notebook(jupyter_server.root_dir, "smoke.ipynb", [WIDGET_CELL, READ_CELL])
    jupyter_server.open_notebook(page, "smoke.ipynb")
    run_all(page)

    button = page.get_by_role("button", name="Smoke clicker")
    button.wait_for()
    assert "kernel count=0" in cell_output_text(page, 1)

    button.click()
    page.wait_for_function("document.querySelector('button.smoke-clicker').textContent === 'clicked 1 times'")
    # read the value back from the kernel in a cell that runs after the click
    run_cell(page, 1)
    wait_idle(page)
    out = cell_output_text(page, 1)
    screenshot(page, "e2e-smoke-clicker")
    assert out.strip() == "kernel count=1", out
