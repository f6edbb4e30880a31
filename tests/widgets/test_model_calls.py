"""The Model calls view model and widget, without a browser: rows, marks, selection, live updates."""

from __future__ import annotations

from ahp_lab.agents.models import ScriptedModel
from ahp_lab.extensions import Extension, Hooks
from ahp_lab.widgets import ModelCallsView, Workbench, model_calls_view_model
from ahp_lab.widgets.model_calls import message_marks

from ..loop_helpers import arun, loop_lab


def test_marks_rows_selection_and_live_updates(tmp_path):
    clock = Extension("clock", hooks=Hooks(before_model_call=lambda runtime: "It is noon."))

    async def main():
        lab, agent = await loop_lab(tmp_path, ScriptedModel(["a", "b", "c"]), [clock])
        view = ModelCallsView(lab)
        await lab.send("one")
        await lab.send("two")
        first, second = lab.model_calls
        assert message_marks(first) == ("new", ["new", "tail"])
        assert message_marks(second) == ("prefix", ["prefix", "new", "new", "tail"])  # the answer is new
        vm = model_calls_view_model(lab.model_calls)
        assert [r["stable"] for r in vm["rows"]] == [None, True] and vm["broken"] == 0
        assert vm["selected"] == 1 and vm["detail"]["messages"][-1]["extension"] == "clock"
        assert 0 < vm["stableShare"] < 1
        view.refresh()
        assert [r["index"] for r in view.rows] == [0, 1] and view.detail["index"] == 1
        view.selected = 0
        assert view.detail["index"] == 0 and view.detail["messages"][0]["block"]["text"] == "one"
        await lab.send("three")  # a new call reaches the view through its subscription
        await lab.wait_for(lab.chat, lambda s: True)
        view.refresh()
        assert len(view.rows) == 3 and view.summary["total"] == 3
        assert Workbench(lab).model_calls is not None
        view.close()
        await lab.aclose()

    arun(main())


def test_a_scripted_agent_lab_has_no_model_calls_view():
    from ahp_lab import Lab

    async def main():
        lab = await Lab.open()
        wb = Workbench(lab)
        assert wb.model_calls is None and len(wb.views) == 5 and lab.model_calls == []
        await lab.aclose()

    arun(main())
