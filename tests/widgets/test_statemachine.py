import json

from ahp_lab.widgets.statemachine import EDGES, STATUSES, edge_for_step, state_machine_model

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
