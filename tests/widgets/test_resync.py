"""``{"type": "sync"}``: a view whose browser model was deaf gets the whole view again.

anywidget's front end drops every message from the kernel to a model whose module missed its 2 s
load deadline (a loaded machine); the view then notices and asks for a sync (``js/src/resync.js``).
What the kernel sent meanwhile (and will not send again, since for the kernel nothing changed) must
travel once more: the synced traitlets of the view, and what travels as custom messages.
"""

from ahp_lab.widgets import Workbench
from ahp_lab.widgets.demo import add_tool_calls
from ahp_lab.widgets.timeline import collect_tool_calls


def _outbox(widget) -> list[dict]:
    """Every message the widget sends to the browser (state updates and custom messages)."""
    out: list[dict] = []
    widget._send = lambda msg, buffers=None: out.append(msg)
    return out


def _synced(out: list[dict]) -> dict:
    state: dict = {}
    for msg in out:
        if msg.get("method") == "update":
            state.update(msg["state"])
    return state


def test_sync_resends_every_view_whole(demo):
    wb = Workbench(demo)
    for view in wb.views:
        out = _outbox(view)
        view._on_custom_msg(view, {"type": "sync"})
        state = _synced(out)
        assert set(view.view_keys()) <= set(state), type(view).__name__
        # not anywidget's own traitlets (the bundle alone is ~100 KB)
        assert not {"_esm", "_css", "layout"} & set(state), type(view).__name__
        assert not view.error


def test_timeline_after_a_deaf_spell_gets_every_call(demo):
    """The flake: the tour's timeline said "No tool calls yet" beside four tool calls."""
    wb = Workbench(demo)
    tl = wb.timeline
    add_tool_calls(demo, 3)  # synced while the browser's model dropped everything
    out = _outbox(tl)
    tl._on_custom_msg(tl, {"type": "sync"})
    meta = _synced(out)["meta"]
    calls = collect_tool_calls(demo.state(demo.chat))
    assert meta["total"] == len(calls) == 10
    assert len(_synced(out)["lanes"]) == 10


def test_chat_sync_resets_the_conversation(demo):
    wb = Workbench(demo)
    out = _outbox(wb.chat)
    wb.chat._on_custom_msg(wb.chat, {"type": "sync"})
    resets = [m["content"] for m in out if m.get("method") == "custom" and m["content"]["type"] == "reset"]
    assert len(resets) == 1
    assert resets[0]["view"]["turnCount"] == len(demo.state(demo.chat)["turns"])


def test_inspector_sync_makes_the_browser_ask_for_its_rows_again(demo):
    wb = Workbench(demo)
    ins = wb.inspector
    version = ins.version
    out = _outbox(ins)
    ins._on_custom_msg(ins, {"type": "sync"})
    state = _synced(out)
    # a new version: the browser drops its cache and its unanswered window requests
    assert state["version"] == ins.version == version + 1
    assert state["total"] == len(demo.transitions)
    reply = ins.rows(0, 5)
    assert reply["version"] == ins.version and len(reply["rows"]) == 5
