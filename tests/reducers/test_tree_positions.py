"""A child is found in its container through a table of positions, which must stay exact and bounded.

The table keeps the children lists it knows alive (their ids are its keys), so it must not keep an
unbounded number of old versions from being freed, and a list it dropped must be found again.
"""

from __future__ import annotations

import random

from ahp_lab.reducers import REDUCERS
from ahp_lab.reducers import session as session_reducer

session = REDUCERS["session"]


def _tree(containers: int, children: int) -> list:
    return [
        {
            "type": "plugin",
            "id": f"p{p}",
            "enabled": True,
            "children": [{"type": "skill", "id": f"p{p}/s{c}", "enabled": True} for c in range(children)],
        }
        for p in range(containers)
    ]


def test_toggles_stay_exact_while_the_table_is_cleared_to_its_bound(monkeypatch):
    monkeypatch.setattr(session_reducer, "_HELD_MAX", 200)  # fewer children than the tree has
    monkeypatch.setattr(session_reducer, "_held", 0)
    monkeypatch.setattr(session_reducer, "_POSITIONS", {})
    state = {
        "provider": "p",
        "title": "t",
        "status": 1,
        "lifecycle": "ready",
        "customizations": _tree(60, 20),
    }
    expected = {f"p{p}/s{c}": True for p in range(60) for c in range(20)}
    rng = random.Random(7)
    for _ in range(400):
        cid, enabled = f"p{rng.randrange(60)}/s{rng.randrange(20)}", rng.random() < 0.5
        state = session(state, {"type": "session/customizationToggled", "id": cid, "enabled": enabled})
        expected[cid] = enabled
        held = session_reducer._POSITIONS.values()
        assert session_reducer._held == sum(len(children) for children, _ in held) <= 200
    got = {child["id"]: child["enabled"] for entry in state["customizations"] for child in entry["children"]}
    assert got == expected


def test_an_old_version_of_the_tree_still_finds_its_children():
    base = {"provider": "p", "title": "t", "status": 1, "lifecycle": "ready", "customizations": _tree(40, 30)}
    toggle = {"type": "session/customizationToggled", "id": "p3/s29", "enabled": False}
    first = session(base, toggle)
    again = session(base, {**toggle, "enabled": "again"})  # from the version whose list was handed on
    assert first["customizations"][3]["children"][29]["enabled"] is False
    assert again["customizations"][3]["children"][29]["enabled"] == "again"
    assert base["customizations"][3]["children"][29]["enabled"] is True


def _reloads(state: dict, start: int, count: int) -> dict:
    """``count`` plugin reloads: a container replaced by a new version, then a child toggled."""
    for k in range(start, start + count):
        p = k % 30
        body = {**_tree(p + 1, 20)[p], "version": f"1.{k}"}  # fresh objects, as the wire gives
        state = session(state, {"type": "session/customizationUpdated", "customization": body})
        state = session(
            state, {"type": "session/customizationToggled", "id": f"p{p}/s3", "enabled": k % 2 == 0}
        )
    return state


def test_a_container_replaced_many_times_is_not_kept_alive():
    """A session whose plugins reload for hours holds one version of each container, not every one."""
    import tracemalloc

    state = {
        "provider": "p",
        "title": "t",
        "status": 1,
        "lifecycle": "ready",
        "customizations": _tree(30, 20),
    }
    state = _reloads(state, 0, 60)  # every container replaced once: what remains is the steady state
    tracemalloc.start()
    try:
        state = _reloads(state, 60, 1500)
        grown = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # Keeping each replaced version's children alive would hold some 1,500 x 20 child objects (MBs).
    assert grown < 500_000, f"{grown:,} bytes still held after 1,500 reloads"
    assert [entry["version"] for entry in state["customizations"]][:3] == ["1.1530", "1.1531", "1.1532"]


def test_children_stay_exact_after_their_container_is_replaced_removed_or_changed():
    base = {"provider": "p", "title": "t", "status": 1, "lifecycle": "ready", "customizations": _tree(30, 20)}
    toggle = {"type": "session/customizationToggled", "id": "p4/s7", "enabled": False}
    state = session(base, toggle)  # indexes the tree
    reordered = _tree(5, 20)[4]
    reordered["children"].reverse()  # the same ids at other positions
    state = session(state, {"type": "session/customizationUpdated", "customization": reordered})
    state = session(state, {**toggle, "enabled": "after update"})
    children = state["customizations"][4]["children"]
    assert [c["enabled"] for c in children if c["id"] == "p4/s7"] == ["after update"] and children[12][
        "id"
    ] == "p4/s7"
    state = session(state, {"type": "session/customizationRemoved", "id": "p4/s0"})  # a child leaves
    state = session(state, {**toggle, "enabled": "after removal"})
    assert [c["enabled"] for c in state["customizations"][4]["children"] if c["id"] == "p4/s7"] == [
        "after removal"
    ]
    tree = _tree(30, 20)
    tree[4]["children"] = tree[4]["children"][::-1]
    state = session(state, {"type": "session/customizationsChanged", "customizations": tree})
    state = session(state, {**toggle, "enabled": "after change"})
    assert state["customizations"][4]["children"][12] == {
        "type": "skill",
        "id": "p4/s7",
        "enabled": "after change",
    }
    # older versions still find their own children
    assert session(base, {**toggle, "enabled": 1})["customizations"][4]["children"][7]["enabled"] == 1


def test_an_older_state_finds_its_children_after_a_newer_one_built_the_index():
    """The reducers are pure: the child index built on a state without plugin p21 was put in the
    table the older states share, and a toggle of p21's child on an older state was dropped (found
    by a differential hunt; the client reduces foreign envelopes on an older, confirmed state)."""
    s0 = {"status": 1, "customizations": _tree(22, 3)}
    s1 = session(s0, {"type": "session/customizationRemoved", "id": "p21"}, 0)
    session(s1, {"type": "session/mcpServerStateChanged", "id": "none", "state": {"kind": "ready"}}, 0)
    toggled = session(s0, {"type": "session/customizationToggled", "id": "p21/s1", "enabled": False}, 0)
    assert toggled["customizations"][21]["children"][1]["enabled"] is False


def test_a_plugin_appended_past_a_large_tree_and_replaced_finds_its_new_children():
    """A tree of more than 64 entries grew by 33 plugins, then one of them was given a child: the
    child index recorded the child at the plugin's position in the trie, not in the tree (70 became
    0), and the child's toggle was dropped (a reducer divergence hunt, round 7)."""
    state = {
        "status": 1,
        "customizations": [{"id": f"s{i}", "type": "skill", "name": "n"} for i in range(70)],
    }
    for k in range(40):
        plugin = {"id": f"p{k}", "type": "plugin", "children": []}
        state = session(state, {"type": "session/customizationUpdated", "customization": plugin}, 0)
    state = session(state, {"type": "session/customizationToggled", "id": "nothing", "enabled": True}, 0)
    plugin = {"id": "p0", "type": "plugin", "children": [{"id": "kid", "type": "skill", "name": "k"}]}
    state = session(state, {"type": "session/customizationUpdated", "customization": plugin}, 0)
    state = session(state, {"type": "session/customizationToggled", "id": "kid", "enabled": False}, 0)
    assert state["customizations"][70]["children"][0]["enabled"] is False
