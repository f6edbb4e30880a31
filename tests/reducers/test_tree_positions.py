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
