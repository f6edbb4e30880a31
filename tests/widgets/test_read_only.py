"""Views of a replay, or of a closed lab, say so and act on nothing: every control that would
dispatch is disabled, and a message from the browser that tries anyway is refused with a reason."""

from ahp_lab.widgets import ChatPane, CustomizationTree, TransitionInspector, Workbench
from ahp_lab.widgets.base import recheck_modes
from ahp_lab.widgets.demo import demo_source


def test_views_of_a_replay_are_read_only_and_say_so():
    src = demo_source()
    src.read_only = True
    wb = Workbench(src)
    for view in (wb.chat, wb.inputs, wb.tree, wb.timeline):
        assert view.mode == "replay" and view.read_only, view
    assert wb.inspector.mode == "replay" and not wb.inspector.read_only  # it never dispatches
    assert wb.tree.model["readOnly"] and wb.inputs.model["readOnly"]
    # an attack: the browser sends the actions anyway; nothing reaches the source
    wb.tree._on_custom_msg(
        wb.tree,
        {
            "type": "dispatch",
            "channel": src.session,
            "action": {"type": "session/customizationToggled", "id": "x"},
        },
    )
    wb.chat._on_custom_msg(wb.chat, {"type": "prompt", "text": "hello"})
    wb.chat._on_custom_msg(wb.chat, {"type": "stop"})
    wb.inputs._on_custom_msg(wb.inputs, {"type": "local_approval", "toolCallId": "t", "approved": True})
    allowed = []
    src.allow_mcp = allowed.append  # a source that could allow an MCP server: the replay still refuses
    wb.tree._on_custom_msg(wb.tree, {"type": "allow_mcp", "id": "m-files"})
    assert allowed == [] and wb.tree.error.startswith("replay: read-only")
    assert src.dispatched == [] and src.prompts == [] and src.stops == [] and src.local_decisions == []
    assert wb.tree.error.startswith("replay: read-only") and wb.chat.error.startswith("replay: read-only")
    assert wb.inputs.error.startswith("replay: read-only")


def test_views_of_a_closed_lab_say_closed_and_act_on_nothing():
    src = demo_source()
    chat, tree = ChatPane(src), CustomizationTree(src)
    assert chat.mode == "live" and not chat.read_only
    src.closed = True  # nothing in the log says so: a click on the view notices it
    tree._on_custom_msg(
        tree,
        {
            "type": "dispatch",
            "channel": src.session,
            "action": {"type": "session/mcpServerStartRequested", "id": "m"},
        },
    )
    assert src.dispatched == [] and tree.error.startswith("closed:")
    assert (tree.mode, tree.read_only) == ("closed", True)
    # its MCP servers stopped with it: none shows "ready" or "starting", none can be started
    mcps = [
        n["mcp"]
        for c in tree.model["containers"]
        for n in [c, *(k for g in c["groups"] for k in g["children"])]
        if "mcp" in n
    ]
    assert len(mcps) >= 2 and {m["label"] for m in mcps} == {"stopped (lab closed)"}
    assert not any(m["canStart"] or m["canStop"] or m["busy"] for m in mcps)
    assert chat.mode == "live"  # ... and the others after the cell that closed the lab has run
    recheck_modes()
    assert (chat.mode, chat.read_only) == ("closed", True)
    insp = TransitionInspector(src)
    assert insp.mode == "closed" and not insp.read_only
