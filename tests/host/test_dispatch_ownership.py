"""What a cell dispatches through the host is the host's own: changing it afterwards changes nothing.

A notebook user builds an action dict, hands it to ``lab.host.dispatch`` (as notebook 03 does) and
then reuses or edits the same dict or list for the next one. State is never mutated (DESIGN
decision 1), and the reducers' indexes of a long list rely on that: if the host kept the caller's
objects, those later edits would rewrite the state and the recorded history without a transition.
"""

from __future__ import annotations

import io

from ahp_lab import Lab, LabReplay
from ahp_lab.store import Store


def _plugins(n: int) -> list[dict]:
    return [
        {"type": "plugin", "id": f"p{i}", "uri": f"file:///p{i}", "name": f"Plugin {i}", "enabled": True}
        for i in range(n)
    ]


def _replayed(lab: Lab) -> LabReplay:
    buffer = io.StringIO()
    lab.store.export(buffer)
    buffer.seek(0)
    return LabReplay(Store.load(buffer))


def test_editing_a_dispatched_action_afterwards_changes_neither_state_nor_history():
    lab = Lab()
    tree = _plugins(3)
    action = {"type": "session/customizationsChanged", "customizations": tree}
    transition = lab.host.dispatch(lab.session, action)
    seq = transition.seq

    # the caller edits and reuses its objects, as a notebook cell would
    tree[0]["name"] = "renamed behind the host's back"
    tree.append({"type": "plugin", "id": "sneaked-in", "uri": "file:///x", "name": "X", "enabled": True})
    action["customizations"] = []

    names = [c["name"] for c in lab.session_state["customizations"]]
    assert names == ["Plugin 0", "Plugin 1", "Plugin 2"]
    assert [c["name"] for c in lab.transitions[seq].action["customizations"]] == names
    assert [c["name"] for c in lab.state_at(seq)[lab.session]["customizations"]] == names
    assert _replayed(lab).store.states() == lab.store.states()


def test_a_toggle_after_the_caller_reorders_its_long_list_finds_the_entry_in_state():
    # 40 entries: a list the reducer indexes by id (a Vector), the index keyed by the list it wraps
    lab = Lab()
    tree = _plugins(40)
    lab.host.dispatch(lab.session, {"type": "session/customizationsChanged", "customizations": tree})
    lab.host.dispatch(lab.session, {"type": "session/customizationToggled", "id": "p5", "enabled": False})

    # the caller puts a second p3 first in its own list: the state's list is not that list
    tree.insert(0, {"type": "plugin", "id": "p3", "uri": "file:///other", "name": "Other", "enabled": True})
    lab.host.dispatch(lab.session, {"type": "session/customizationToggled", "id": "p3", "enabled": False})

    state = lab.session_state["customizations"]
    assert len(state) == 40
    assert [c["id"] for c in state if c["enabled"] is False] == ["p3", "p5"]
    assert _replayed(lab).store.states() == lab.store.states()


def test_editing_a_nested_tool_call_argument_after_dispatch_keeps_the_recorded_input():
    lab = Lab()
    turn = "t-own"
    lab.host.dispatch(
        lab.chat,
        {"type": "chat/turnStarted", "turnId": turn, "message": {"text": "hi", "origin": {"kind": "user"}}},
    )
    lab.host.dispatch(
        lab.chat, {"type": "chat/toolCallStart", "turnId": turn, "toolCallId": "c1", "toolName": "t"}
    )
    tool_input = {"path": "a.txt", "lines": [1, 2]}
    ready = {"type": "chat/toolCallReady", "turnId": turn, "toolCallId": "c1", "toolInput": tool_input}
    lab.host.dispatch(lab.chat, {**ready, "confirmed": "not-needed"})
    tool_input["lines"].append(3)
    tool_input["path"] = "/etc/passwd"

    part = lab.chat_state["activeTurn"]["responseParts"][0]
    assert part["toolCall"]["toolInput"] == {"path": "a.txt", "lines": [1, 2]}
    assert lab.transitions[-1].action["toolInput"] == {"path": "a.txt", "lines": [1, 2]}
