"""A widget output saved in a notebook shows what the view is, never an object repr.

IPython asks each widget for its mime bundle; ``text/plain`` is what a notebook viewer without
the widget front end (GitHub, nbviewer, a fresh JupyterLab before the cell runs) displays.
"""

from __future__ import annotations

from IPython.core.formatters import DisplayFormatter

from ahp_lab.widgets import Workbench


def _text_plain(widget) -> str:
    data, _meta = DisplayFormatter().format(widget)
    return data["text/plain"]


def test_the_workbench_and_each_view_say_what_they_show(demo):
    bench = Workbench(demo)
    texts = {"workbench": _text_plain(bench)} | {v._kind: _text_plain(v) for v in bench.views}
    assert set(texts) == {"workbench", "chat", "inputs", "tree", "timeline", "inspector"}
    for kind, text in texts.items():
        assert " object at 0x" not in text and "children=" not in text, (kind, text)
        assert text.startswith("AHP ") and text.endswith("(run the cell to see it live)"), (kind, text)
        assert len(text) <= 110, (kind, len(text))  # ipywidgets cuts longer text with "…"
    assert "chat" in texts["workbench"] and "transitions" in texts["workbench"]
    assert "tool-call timeline" in texts["timeline"]
