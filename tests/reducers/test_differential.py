"""Differential property tests: off-type values follow the reference's rules, in both state forms.

The reference reducers are TypeScript: a field they test by truthiness treats ``""``, ``0``, ``false``
and ``null`` as absent and ``[]``/``{}`` as true, while a field they test by presence keeps ``""``.
These tests put off-type values (``""``, ``0``, ``false``, ``[]``, ``{}``, ``null`` and more) on every
field of generated actions and check the invariants that the fixtures and the spec digest imply,
so that a rule of the ``confirmed: ""`` kind cannot hide again. Each sequence is also reduced twice,
with short collections as plain lists and with every collection as a ``Vector``: both must agree.
"""

from __future__ import annotations

import contextlib
import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ahp_lab.protocol import vector
from ahp_lab.protocol.jsonvalue import dumps, to_json
from ahp_lab.reducers import REDUCERS
from ahp_lab.reducers import chat as chat_reducer
from ahp_lab.reducers import session as session_reducer
from ahp_lab.reducers._js import truthy

from ..conftest import examples
from .samples import chat_state
from .test_properties import INITIALS, TEMPLATES

OFF_TYPE = ["", 0, False, [], {}, None, "x", 1, True, 0.5, -1, [1], {"a": 1}]
JS_FALSY = ["", 0, False, None]
JS_TRUTHY_OFF_TYPE = [[], {}, "x", 1, -1, 0.5, [0], {"a": None}]

#: (action type, field) the reference tests by truthiness: every JS-falsy value behaves as absent.
TRUTHY_FIELDS = {
    ("chat/toolCallReady", "confirmed"),
    ("chat/toolCallConfirmed", "approved"),
    ("chat/toolCallConfirmed", "selectedOptionId"),
    ("chat/toolCallResultConfirmed", "approved"),
    ("chat/toolCallComplete", "requiresResultConfirmation"),
    ("chat/turnStarted", "queuedMessageId"),
    ("session/isReadChanged", "isRead"),
    ("session/isArchivedChanged", "isArchived"),
    ("session/configChanged", "replace"),
    ("root/configChanged", "replace"),
    ("session/changesetsChanged", "changesets"),
}
#: Boolean flags among them: every JS-truthy value behaves as ``true``.
FLAGS = {
    ("chat/toolCallConfirmed", "approved"),
    ("chat/toolCallResultConfirmed", "approved"),
    ("chat/toolCallComplete", "requiresResultConfirmation"),
    ("session/isReadChanged", "isRead"),
    ("session/isArchivedChanged", "isArchived"),
    ("session/configChanged", "replace"),
    ("root/configChanged", "replace"),
}
#: Chat actions that write modifiedAt when they are not no-ops (reducer-rules §2); no other does.
MODIFIES_AT = {
    "chat/turnStarted",
    "chat/turnComplete",
    "chat/turnCancelled",
    "chat/error",
    "chat/truncated",
    "chat/inputRequested",
    "chat/inputAnswerChanged",
    "chat/inputCompleted",
}
KINDS = ("chat", "session", "root")


#: Every bound under which a reducer keeps a short list plain and scans it (module, name).
#: With 0, removals are compacted as soon as holes are an eighth of a Vector's storage.
SCAN_BOUNDS = [
    (vector, "PLAIN_MAX"),
    (vector, "COMPACT_HOLES"),
    (chat_reducer, "PLAIN_MAX"),
    (session_reducer, "_SCANNED_CHILDREN"),
    (session_reducer, "_LISTED_CHILDREN"),
    (session_reducer, "_LISTED_TREE"),
]


@contextlib.contextmanager
def scan_bounds(value: int):
    """Set every scan bound to ``value``: 0 makes every collection a ``Vector`` however short, so no
    scan path runs; a huge value keeps every collection a plain list, scanned (the simplest model)."""
    saved = [getattr(module, name) for module, name in SCAN_BOUNDS]
    for module, name in SCAN_BOUNDS:
        setattr(module, name, value)
    try:
        yield
    finally:
        for (module, name), bound in zip(SCAN_BOUNDS, saved, strict=True):
            setattr(module, name, bound)


def all_vectors():
    return scan_bounds(0)


def all_plain():
    return scan_bounds(10**9)


def _agree(kind: str, initial, actions: list) -> None:
    """The states after every prefix are equal with the default bounds, all plain lists and all Vectors."""
    runs = [_run(kind, copy.deepcopy(initial), actions)]
    for bounds in (all_plain, all_vectors):
        with bounds():
            runs.append(_run(kind, copy.deepcopy(initial), actions))
    for i, states in enumerate(zip(*runs, strict=True)):
        default, plain, vectors = (to_json(state) for state in states)
        where = f"prefix {i}, after {actions[i - 1] if i else None}"
        assert default == plain, f"default bounds and plain lists differ at {where}"
        assert vectors == plain, f"Vectors and plain lists differ at {where}"


@st.composite
def off_type_action(draw, kind: str) -> dict:
    action = copy.deepcopy(draw(st.sampled_from(TEMPLATES[kind])))
    for key in list(action):
        if key == "type":
            continue
        roll = draw(st.integers(0, 6))
        if roll == 0:
            action[key] = copy.deepcopy(draw(st.sampled_from(OFF_TYPE)))
        elif roll == 1:
            del action[key]
    return action


@st.composite
def scenario(draw):
    kind = draw(st.sampled_from(KINDS))
    initial = copy.deepcopy(draw(st.sampled_from(INITIALS[kind])))
    actions = draw(st.lists(off_type_action(kind), min_size=1, max_size=30))
    return kind, initial, actions


def _run(kind: str, state, actions: list) -> list:
    states = [state]
    for action in actions:
        state = REDUCERS[kind](state, action, 9999)
        states.append(state)
    return states


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_plain_lists_and_vectors_reduce_to_the_same_states(case):
    _agree(*case)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario(), st.data())
def test_null_behaves_exactly_like_an_absent_field(case, data):
    kind, initial, actions = case
    state = _run(kind, initial, actions[:-1])[-1]
    action = actions[-1]
    for key in [k for k in action if k != "type"]:
        with_null = {**action, key: None}
        without = {k: v for k, v in action.items() if k != key}
        reducer = REDUCERS[kind]
        assert to_json(reducer(state, with_null, 9999)) == to_json(reducer(state, without, 9999)), key


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario(), st.data())
def test_fields_tested_by_truthiness_treat_falsy_as_absent_and_truthy_as_true(case, data):
    kind, initial, actions = case
    state = _run(kind, initial, actions[:-1])[-1]
    reducer = REDUCERS[kind]
    for action in TEMPLATES[kind]:
        for key in [k for k in action if (action["type"], k) in TRUTHY_FIELDS]:
            without = {k: v for k, v in action.items() if k != key}
            absent = to_json(reducer(state, without, 9999))
            falsy = data.draw(st.sampled_from(JS_FALSY))
            assert to_json(reducer(state, {**action, key: falsy}, 9999)) == absent, (
                action["type"],
                key,
                falsy,
            )
            if (action["type"], key) in FLAGS:
                truthy_value = copy.deepcopy(data.draw(st.sampled_from(JS_TRUTHY_OFF_TYPE)))
                as_true = to_json(reducer(state, {**action, key: True}, 9999))
                got = to_json(reducer(state, {**action, key: truthy_value}, 9999))
                assert got == as_true, (action["type"], key, truthy_value)


def _tool_calls(state) -> dict:
    active = state.get("activeTurn") if isinstance(state, dict) else None
    parts = active.get("responseParts") if isinstance(active, dict) else None
    out = {}
    for part in parts if isinstance(parts, list) else ():
        if (
            isinstance(part, dict)
            and part.get("kind") == "toolCall"
            and isinstance(part.get("toolCall"), dict)
        ):
            out.setdefault(json.dumps(part["toolCall"].get("toolCallId")), part["toolCall"])
    return out


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(INITIALS["chat"]), st.sampled_from(OFF_TYPE + ["not-needed", "user-action"]))
def test_tool_call_ready_runs_only_with_a_truthy_confirmed(initial, confirmed):
    state = REDUCERS["chat"](
        copy.deepcopy(initial),
        {
            "type": "chat/turnStarted",
            "turnId": "t",
            "startedAt": "s",
            "message": {"text": "hi", "origin": {"kind": "user"}},
        },
        9999,
    )
    state = REDUCERS["chat"](
        state,
        {"type": "chat/toolCallStart", "turnId": "t", "toolCallId": "c", "toolName": "x", "displayName": "X"},
        9999,
    )
    action = {
        "type": "chat/toolCallReady",
        "turnId": "t",
        "toolCallId": "c",
        "invocationMessage": "Run",
        "confirmed": confirmed,
    }
    tc = to_json(REDUCERS["chat"](state, action, 9999))["activeTurn"]["responseParts"][-1]["toolCall"]
    if truthy(confirmed):
        assert tc["status"] == "running" and tc["confirmed"] == confirmed
    else:
        assert tc["status"] == "pending-confirmation" and "confirmed" not in tc
        assert to_json(REDUCERS["chat"](state, {**action, "confirmed": None}, 9999))["status"] & 24 == 24


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_invariants_the_spec_digest_implies_hold_after_every_action(case):
    kind, state, actions = case
    reducer = REDUCERS[kind]
    for action in actions:
        new = reducer(state, action, 9999)
        json.loads(dumps(new))  # still JSON
        if action.get("type") not in reducer.handled_types:
            assert new is state
        plain = to_json(new)
        if kind == "chat":
            old_status, status = state.get("status"), plain.get("status")
            if isinstance(old_status, int) and not isinstance(old_status, bool) and 0 <= old_status < 2**32:
                # IsArchived and unknown bits never change; IsRead is only ever cleared
                assert status & ~0x3F == old_status & ~0x3F and status & 32 <= old_status & 32
            if plain.get("modifiedAt") != to_json(state).get("modifiedAt"):
                assert action.get("type") in MODIFIES_AT, action
            assert plain.get("queuedMessages") != [], "an emptied queue collapses to absent"
            for tc_id, tc in _tool_calls(plain).items():
                if tc.get("status") == "pending-confirmation" and tc is not _tool_calls(to_json(state)).get(
                    tc_id
                ):
                    assert "confirmed" not in tc, "a call waiting for confirmation stores no confirmed"
        if kind == "session":
            assert plain.get("inputNeeded") != [], "an emptied inputNeeded collapses to absent"
        state = new


# -- catalogues and customization trees whose actions hit ------------------------------------------
#
# The scenarios above come from the corpus's shapes, whose ids rarely hit long collections. These
# build session catalogues and customization trees of every size around the scan bounds, with
# ids drawn from a small pool (duplicates included), so that every lookup, update and removal runs
# on a plain list in one reduction and on a Vector in the other.

TOP_IDS = [f"p-{i}" for i in range(6)]
CHILD_IDS = [f"c-{i}" for i in range(12)]
IDS = TOP_IDS + CHILD_IDS


@st.composite
def customization_tree(draw) -> list:
    tree = []
    # Mostly trees under the bounds (a plain list in one run, a Vector in the other), some above.
    wide = draw(st.integers(0, 3)) == 0
    for _ in range(draw(st.integers(0, 20 if wide else 5))):
        ident = draw(st.sampled_from(TOP_IDS))
        if draw(st.integers(0, 4)) == 0:
            tree.append({"type": "mcpServer", "id": ident, "name": ident, "enabled": True})
            continue
        children = [
            {
                "type": draw(st.sampled_from(["skill", "mcpServer", "agent"])),
                "id": draw(st.sampled_from(CHILD_IDS)),
                "name": "c",
            }
            for _ in range(draw(st.integers(0, 30 if wide else 4)))
        ]
        tree.append({"type": "plugin", "id": ident, "name": ident, "enabled": True, "children": children})
    return tree


@st.composite
def catalogue_action(draw) -> dict:
    ident = draw(st.sampled_from(IDS))
    top = draw(st.sampled_from(TOP_IDS))
    entry = draw(st.sampled_from(TOP_IDS))  # catalogue entries: a small pool, so that removals hit
    chat = f"ahp-chat:/{entry}"
    return draw(
        st.sampled_from(
            [
                {"type": "session/customizationToggled", "id": ident, "enabled": draw(st.booleans())},
                {"type": "session/customizationRemoved", "id": ident},
                {
                    "type": "session/customizationUpdated",
                    "customization": {
                        "type": "plugin",
                        "id": top,
                        "name": "u",
                        "children": [
                            {"type": "skill", "id": c, "name": "n"}
                            for c in draw(st.lists(st.sampled_from(CHILD_IDS), max_size=4))
                        ],
                    },
                },
                {
                    "type": "session/mcpServerStateChanged",
                    "id": ident,
                    "state": {"kind": "ready"},
                    "channel": "c",
                },
                {"type": "session/mcpServerStartRequested", "id": ident},
                {"type": "session/mcpServerStopRequested", "id": ident},
                {
                    "type": "session/inputNeededSet",
                    "request": {"kind": "chatInput", "id": entry, "chat": chat},
                },
                {"type": "session/inputNeededRemoved", "id": entry},
                {"type": "session/activeClientSet", "activeClient": {"clientId": entry, "tools": []}},
                {"type": "session/activeClientRemoved", "clientId": entry},
                {"type": "session/chatAdded", "summary": {"resource": chat, "title": entry, "status": 1}},
                {"type": "session/chatRemoved", "chat": chat},
                {"type": "session/chatUpdated", "chat": chat, "changes": {"title": "t", "resource": "x"}},
            ]
        )
    )


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(customization_tree(), st.lists(catalogue_action(), min_size=10, max_size=80))
def test_catalogues_and_trees_reduce_alike_as_plain_lists_and_as_vectors(tree, actions):
    _agree(
        "session",
        {"provider": "p", "title": "t", "status": 1, "lifecycle": "ready", "customizations": tree},
        actions,
    )


ODD_ENTRIES = [
    None,
    "s",
    5,
    [],
    {"kind": "toolCall"},
    {"kind": "inputRequest"},
    {"kind": "toolCall", "toolCall": "x"},
]


@st.composite
def odd_entries(draw, make):
    """A list of well-formed entries (ids from a small pool) with entries a search may not pass."""
    ids = st.sampled_from(["a", "b", "c"])
    entry = st.one_of(ids.map(make), st.sampled_from(ODD_ENTRIES))
    return copy.deepcopy(draw(st.lists(entry, max_size=8)))


SESSION_SEARCHES = [
    {"type": "session/chatAdded", "summary": {"resource": "a", "title": "n"}},
    {"type": "session/chatRemoved", "chat": "a"},
    {"type": "session/chatUpdated", "chat": "b", "changes": {"title": "x"}},
    {"type": "session/activeClientSet", "activeClient": {"clientId": "c"}},
    {"type": "session/activeClientRemoved", "clientId": "a"},
    {"type": "session/inputNeededSet", "request": {"id": "b", "kind": "chatInput"}},
    {"type": "session/inputNeededRemoved", "id": "a"},
    {"type": "session/customizationToggled", "id": "b", "enabled": False},
    {"type": "session/customizationRemoved", "id": "c"},
    {"type": "session/mcpServerStopRequested", "id": "a"},
]


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    odd_entries(lambda i: {"resource": i, "title": i}),
    odd_entries(lambda i: {"clientId": i}),
    odd_entries(lambda i: {"id": i, "kind": "chatInput"}),
    odd_entries(
        lambda i: {"id": f"p-{i}", "type": "plugin", "children": [{"id": i, "type": "mcpServer"}, None][:2]}
    ),
    st.lists(st.sampled_from(SESSION_SEARCHES), min_size=1, max_size=12),
)
def test_searches_through_odd_session_entries_agree_in_both_forms(chats, clients, needed, tree, actions):
    state = {
        "provider": "p",
        "title": "t",
        "status": 24,
        "lifecycle": "ready",
        "chats": chats,
        "activeClients": clients,
        "inputNeeded": needed,
        "customizations": tree,
    }
    _agree("session", state, copy.deepcopy(actions))


CHAT_SEARCHES = [
    {"type": "chat/delta", "turnId": "t1", "partId": "a", "content": "+"},
    {"type": "chat/delta", "turnId": "t1", "content": "+"},
    {"type": "chat/toolCallContentChanged", "turnId": "t1", "toolCallId": "b", "content": []},
    {"type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "a", "invocationMessage": "m"},
    {"type": "chat/toolCallComplete", "turnId": "t1", "toolCallId": "c", "result": {"success": True}},
    {"type": "chat/inputAnswerChanged", "turnId": "t1", "requestId": "a", "questionId": "q", "answer": 1},
    {"type": "chat/inputCompleted", "turnId": "t1", "requestId": "b", "response": "accept"},
    {"type": "chat/inputRequested", "turnId": "t1", "request": {"id": "c"}},
    {"type": "chat/responsePart", "turnId": "t1", "part": None},
    {"type": "chat/turnComplete", "turnId": "t1"},
]


def _chat_part(i: str) -> dict:
    return {
        "a": {"kind": "markdown", "id": "a", "content": ""},
        "b": {
            "kind": "toolCall",
            "toolCall": {"toolCallId": "b", "toolName": "n", "displayName": "n", "status": "running"},
        },
        "c": {"kind": "inputRequest", "request": {"id": "b"}},
    }[i]


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(odd_entries(_chat_part), st.lists(st.sampled_from(CHAT_SEARCHES), min_size=1, max_size=12))
def test_searches_through_odd_parts_agree_in_both_forms(parts, actions):
    state = chat_state(status=8, activeTurn={"id": "t1", "responseParts": parts})
    _agree("chat", state, copy.deepcopy(actions))


@pytest.mark.parametrize(
    ("written", "then"),
    [
        (
            "NEW",
            {"type": "chat/toolCallResultConfirmed", "turnId": "T", "toolCallId": "NEW", "approved": True},
        ),
        (None, {"type": "chat/toolCallResultConfirmed", "turnId": "T", "approved": False}),
        ("p", {"type": "chat/delta", "turnId": "T", "partId": "p", "content": "b"}),
    ],
)
def test_a_completion_that_writes_another_call_id_is_found_by_it_in_both_forms(written, then):
    """``chat/toolCallComplete`` writes every key of its ``result`` over the call (T7), its
    ``toolCallId`` too: a turn long enough to index its parts kept the call under its old id, so
    the next action on the new one missed it (reducer hunt round 10); a markdown part ``p`` after
    it took a delta that the call, first with that id now, stops (§6.3)."""
    calls = [
        {"kind": "toolCall", "toolCall": {"toolCallId": f"c{i}", "toolName": "t", "status": "running"}}
        for i in range(20)
    ]
    parts = [*calls, {"kind": "markdown", "id": "p", "content": "a"}]
    initial = {"resource": "c", "title": "t", "status": 8, "activeTurn": {"id": "T", "responseParts": parts}}
    complete = {
        "type": "chat/toolCallComplete",
        "turnId": "T",
        "toolCallId": "c5",
        "requiresResultConfirmation": True,
        "result": {"success": True, "toolCallId": written},
    }
    _agree("chat", initial, [complete, then])
