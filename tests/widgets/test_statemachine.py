import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ahp_lab.widgets.statemachine import (
    _NODES,
    EDGES,
    HEIGHT,
    STATUSES,
    WIDTH,
    edge_for_step,
    label_width,
    state_machine_model,
)
from ahp_lab.widgets.timeline import next_status
from tests.conftest import examples

# Every transition of chat-channel.md §7.2 (the mermaid diagram), as (from, to, kind).
SPEC_TRANSITIONS = {
    ("[*]", "streaming", "action"),
    ("streaming", "streaming", "action"),
    ("streaming", "pending-confirmation", "action"),
    ("streaming", "running", "action"),
    ("pending-confirmation", "pending-confirmation", "action"),
    ("pending-confirmation", "running", "action"),
    ("pending-confirmation", "cancelled", "action"),
    ("pending-confirmation", "completed", "action"),
    ("pending-confirmation", "pending-result-confirmation", "action"),
    ("running", "running", "action"),
    ("running", "pending-confirmation", "action"),
    ("running", "auth-required", "action"),
    ("running", "completed", "action"),
    ("running", "pending-result-confirmation", "action"),
    ("auth-required", "running", "action"),
    ("auth-required", "completed", "action"),
    ("pending-result-confirmation", "completed", "action"),
    ("pending-result-confirmation", "cancelled", "action"),
    ("streaming", "cancelled", "turnEnd"),
    ("pending-confirmation", "cancelled", "turnEnd"),
    ("running", "cancelled", "turnEnd"),
    ("auth-required", "cancelled", "turnEnd"),
    ("pending-result-confirmation", "cancelled", "turnEnd"),
}


def test_all_states_and_transitions_are_drawn():
    m = state_machine_model()
    assert {n["id"] for n in m["nodes"] if not n["pseudo"]} == set(STATUSES)
    drawn = {(e["from"], e["to"], e["kind"]) for e in m["edges"] if e["kind"] != "final"}
    assert drawn == SPEC_TRANSITIONS
    finals = {(e["from"], e["kind"]) for e in m["edges"] if e["kind"] == "final"}
    assert finals == {("completed", "final"), ("cancelled", "final")}
    assert all(e["d"].startswith("M") for e in m["edges"]) and len(EDGES) == len(m["edges"])
    assert not any(e["taken"] for e in m["edges"]) and m["current"] is None


def test_path_highlight_and_current():
    steps = [
        {"from": None, "to": "streaming", "action": "chat/toolCallStart", "seq": 1},
        {"from": "streaming", "to": "pending-confirmation", "action": "chat/toolCallReady", "seq": 2},
        {"from": "pending-confirmation", "to": "running", "action": "chat/toolCallConfirmed", "seq": 3},
        {"from": "running", "to": "cancelled", "action": "chat/turnCancelled", "seq": 4},
    ]
    m = state_machine_model(steps, "cancelled")
    taken = {e["id"]: (e["order"], e["seqs"]) for e in m["edges"] if e["taken"]}
    assert taken == {
        "start": (1, [1]),
        "S-PC": (2, [2]),
        "PC-R": (3, [3]),
        "R-X-end": (4, [4]),
        "X-end": (5, []),
    }
    nodes = {n["id"]: n for n in m["nodes"]}
    assert nodes["cancelled"]["current"] and not nodes["running"]["current"]
    assert nodes["running"]["visited"] and not nodes["auth-required"]["visited"]


def test_denial_versus_turn_end_edges():
    assert edge_for_step("pending-confirmation", "cancelled", "chat/toolCallConfirmed") == "PC-X"
    assert edge_for_step("pending-confirmation", "cancelled", "chat/error") == "PC-X-end"
    assert (
        edge_for_step("pending-result-confirmation", "cancelled", "chat/toolCallResultConfirmed") == "PRC-X"
    )
    assert edge_for_step("completed", "running", "chat/whatever") is None


def test_malformed_steps_and_unknown_status():
    m = state_machine_model(
        [None, 5, {"to": 3}, {"from": "x", "to": "y"}, {"from": None, "to": "streaming"}], "teleporting"
    )
    assert m["current"] is None and m["unknownCurrent"] == "teleporting"
    json.dumps(m)


# -- edge labels: laid out with no overlaps (issue 13) ------------------------------------------

ACTIONS = (
    {"type": "chat/toolCallDelta", "content": "x"},
    {"type": "chat/toolCallReady"},
    {"type": "chat/toolCallReady", "confirmed": "not-needed"},
    {"type": "chat/toolCallConfirmed", "approved": True},
    {"type": "chat/toolCallConfirmed", "approved": False},
    {"type": "chat/toolCallComplete", "result": {"success": True}},
    {"type": "chat/toolCallComplete", "result": {"success": False}},
    {"type": "chat/toolCallComplete", "requiresResultConfirmation": True, "result": {"success": True}},
    {"type": "chat/toolCallResultConfirmed", "approved": True},
    {"type": "chat/toolCallResultConfirmed", "approved": False},
    {"type": "chat/toolCallContentChanged"},
    {"type": "chat/toolCallAuthRequired"},
    {"type": "chat/toolCallAuthResolved"},
    {"type": "chat/turnCancelled"},
)


def _walk(choices: list[int]) -> tuple[list[dict], str]:
    """A tool call's recorded steps along a random path through the state machine (MCP-owned, so
    every edge is reachable)."""
    steps = [{"from": None, "to": "streaming", "action": "chat/toolCallStart", "seq": 1}]
    status = "streaming"
    for k, choice in enumerate(choices):
        action = ACTIONS[choice % len(ACTIONS)]
        nxt = "cancelled" if action["type"] == "chat/turnCancelled" else next_status(status, action, True)
        if nxt is None:
            continue
        steps.append({"from": status, "to": nxt, "action": action["type"], "seq": k + 2, "count": 1})
        status = nxt
        if status in ("completed", "cancelled"):
            break
    return steps, status


def _boxes(model: dict) -> list[tuple[str, tuple[float, float, float, float]]]:
    out = []
    for e in model["edges"]:
        if not e.get("text"):
            continue
        w = label_width(e["text"])
        left = {"middle": e["lx"] - w / 2, "end": e["lx"] - w}.get(e["anchor"], e["lx"])
        out.append((e["id"], (left, e["ly"] - 9, left + w, e["ly"] + 3)))
    return out


def _meets(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.integers(0, 1000), max_size=40))
def test_no_two_labels_meet_and_none_leaves_the_diagram(choices):
    steps, status = _walk(choices)
    m = state_machine_model(steps, status)
    boxes = _boxes(m)
    taken = [e for e in m["edges"] if e["taken"] and e["label"]]
    assert len(boxes) == len(taken)  # every taken edge is labelled
    nodes = [
        (x - w / 2, y - 15, x + w / 2, y + 15)
        for name, (x, y, w) in _NODES.items()
        if not name.startswith("[")
    ]
    for i, (edge, a) in enumerate(boxes):
        assert a[0] >= 0 and a[2] <= m["width"] and a[1] >= 0 and a[3] <= m["height"], (edge, a)
        assert not any(_meets(a, n) for n in nodes), (edge, a)
        for other, b in boxes[i + 1 :]:
            assert not _meets(a, b), (edge, other, a, b)


def test_labels_name_the_actions_that_took_the_edge_after_the_steps_that_took_it():
    """The numbers were the order of each edge's first use: "4. toolCallConfirmed ×2" then
    "5. toolCallReady" read as steps 4 and 5, where the 6th step was the second confirmation (the
    first-hour user, round 54). They are the call's step numbers now."""
    steps = [
        {"from": None, "to": "streaming", "action": "chat/toolCallStart", "seq": 1},
        {"from": "streaming", "to": "streaming", "action": "chat/toolCallDelta", "seq": 2, "count": 3},
        {"from": "streaming", "to": "pending-confirmation", "action": "chat/toolCallReady", "seq": 5},
        {"from": "pending-confirmation", "to": "running", "action": "chat/toolCallConfirmed", "seq": 6},
        {"from": "running", "to": "pending-confirmation", "action": "chat/toolCallReady", "seq": 7},
        {"from": "pending-confirmation", "to": "running", "action": "chat/toolCallConfirmed", "seq": 8},
    ]
    m = state_machine_model(steps, "running")
    texts = {e["id"]: e["text"] for e in m["edges"] if e.get("text")}
    assert texts == {
        "start": "1. toolCallStart",
        "S-S": "2. toolCallDelta",  # three merged deltas: one run
        "S-PC": "3. toolCallReady",
        "PC-R": "4, 6. toolCallConfirmed",
        "R-PC": "5. toolCallReady",
    }
    assert m["height"] == HEIGHT and m["width"] == WIDTH  # the notebooks' paths need no legend


def test_every_edge_taken_at_once_still_fits_with_a_legend():
    steps = [{"from": None, "to": "streaming", "action": "chat/toolCallStart", "seq": 1}]
    for k, (eid, frm, to, _label, kind) in enumerate(EDGES):
        if frm.startswith("[") or to.startswith("["):
            continue
        action = "chat/turnCancelled" if kind == "turnEnd" else "chat/toolCallSomethingRatherLong"
        assert edge_for_step(frm, to, action) == eid
        steps.append({"from": frm, "to": to, "action": action, "seq": k + 2})
    m = state_machine_model(steps, "completed")
    boxes = _boxes(m)
    assert len(boxes) == sum(1 for e in EDGES if e[3])  # all of them labelled
    assert any(e.get("legend") for e in m["edges"]) and m["height"] > HEIGHT  # some went to the legend
    for i, (_e, a) in enumerate(boxes):
        assert a[0] >= 0 and a[2] <= m["width"] and a[3] <= m["height"]
        assert not any(_meets(a, b) for _o, b in boxes[i + 1 :])
    json.dumps(m)


def test_a_stream_of_merged_steps_leaves_the_diagram_unchanged():
    # the timeline syncs the diagram only when it changes: a tool streaming content must not
    # resend it with every delta (a growing "×n" in a label would)
    steps = [
        {"from": None, "to": "streaming", "action": "chat/toolCallStart", "seq": 1},
        {"from": "streaming", "to": "running", "action": "chat/toolCallReady", "seq": 2},
    ]

    def streamed(n):
        run = {"from": "running", "to": "running", "action": "chat/toolCallContentChanged", "seq": 3}
        return [*steps, {**run, "seqEnd": 2 + n, "count": n}]

    assert state_machine_model(streamed(1), "running") == state_machine_model(streamed(500), "running")
