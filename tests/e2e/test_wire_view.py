"""The raw wire view in a real JupyterLab: the frames a served lab exchanged with a second client.

One cell serves the notebook's host and connects a second client over a real socket; the wire
view lists the served connections' frames. Filtering by method narrows the rows, a large frame is
cut in its row and shown whole when selected. Screenshots: ``artifacts/wire-*.png``.
"""

from __future__ import annotations

from .conftest import ARTIFACTS_DIR, open_cells, run_cell

SETUP = """\
from ahp_lab import Lab
from ahp_lab.lab.remote import RemoteLab
lab = Lab()
url = lab.serve()
ide = await RemoteLab.open(url, session=lab.session, client_id="ide")
await ide.send("hello from the IDE")
await ide.adispatch({"type": "session/titleChanged", "title": "long " + "x" * 3000}, ide.session)
w = lab.wire()
w
"""


def test_the_wire_view_lists_filters_and_opens_frames(jupyter_server, page):
    errors = open_cells(jupyter_server, page, "wire_view.ipynb", [SETUP])
    run_cell(page, 0)
    view = page.locator(".ahp-wire")
    view.wait_for()
    page.wait_for_function("() => document.querySelectorAll('.ahp-wire .ahp-wrow[data-n]').length > 20")
    ARTIFACTS_DIR.mkdir(exist_ok=True)
    view.screenshot(path=str(ARTIFACTS_DIR / "wire-all.png"))
    directions = set(
        page.locator(".ahp-wire .ahp-wrow[data-n]").evaluate_all("rs => rs.map(r => r.dataset.direction)")
    )
    assert directions == {"in", "out"}

    # a large frame is cut in the list ...
    big = page.locator(".ahp-wire .ahp-wrow[data-n]", has_text="session/titleChanged").first
    assert big.locator(".ahp-wpreview").inner_text().endswith("…")
    # ... and whole (within the view's bound) when selected
    big.click()
    detail = page.locator(".ahp-wire .ahp-wdetail pre")
    detail.wait_for()
    page.wait_for_function(
        "() => (document.querySelector('.ahp-wire .ahp-wdetail pre')?.textContent || '').includes('x'.repeat(3000))"
    )

    # filter by method: only the initialize request and nothing else
    page.get_by_role("searchbox", name="Filter frames").fill("initialize")
    page.wait_for_function(
        """() => { const rows = [...document.querySelectorAll('.ahp-wire .ahp-wrow[data-n]')];
                   return rows.length === 1 && rows[0].textContent.includes('initialize'); }"""
    )
    page.locator(".ahp-wire .ahp-wrow[data-n]").first.click()
    page.wait_for_function(
        "() => (document.querySelector('.ahp-wire .ahp-wdetail pre')?.textContent || '').includes('\"clientId\": \"ide\"')"
    )
    view.screenshot(path=str(ARTIFACTS_DIR / "wire-initialize.png"))
    assert not errors, errors


PAGED = """\
import json
from ahp_lab.transport.tap import FrameLog
from ahp_lab.widgets.wire import WireView

class Sink:
    def send(self, text): pass
    def set_receiver(self, receiver, on_close): pass
    def close(self): pass

log = FrameLog()
tapped = log.wrap(Sink())
for i in range(450):
    tapped.send(json.dumps({"jsonrpc": "2.0", "method": "dispatchAction", "params": {"clientSeq": i}}))
WireView(log)
"""


def test_the_wire_view_pages_back_to_the_first_frame(jupyter_server, page):
    """It said "495 of 495" and listed the newest 200, opened at their top (the first-hour user,
    round 54): it names the page, opens at the newest frame, and pages back to the first."""
    errors = open_cells(jupyter_server, page, "wire_paged.ipynb", [PAGED])
    run_cell(page, 0)
    view = page.locator(".ahp-wire")
    count = view.locator(".ahp-count")
    count.filter(has_text="251–450 of 450").wait_for()
    rows = view.locator(".ahp-wrows")
    page.wait_for_function(
        "e => e.scrollTop > 0 && e.scrollTop + e.clientHeight >= e.scrollHeight - 4",
        arg=rows.element_handle(),
    )
    view.get_by_role("button", name="◀ Older").click()
    count.filter(has_text="51–250 of 450").wait_for()
    view.get_by_role("button", name="◀ Older").click()
    count.filter(has_text="1–50 of 450").wait_for()
    assert view.locator(".ahp-wrow[data-n]").first.get_attribute("data-n") == "1"
    assert view.get_by_role("button", name="◀ Older").is_disabled()
    view.screenshot(path=str(ARTIFACTS_DIR / "wire-oldest.png"))
    view.get_by_role("button", name="Newest").click()
    count.filter(has_text="251–450 of 450").wait_for()
    assert not errors, errors
