"""Property tests: reducers are total, pure and forward compatible on arbitrary action sequences.

Actions are drawn from the shapes the conformance corpus uses, then perturbed: ids swapped among a
small pool so they sometimes hit and sometimes miss, fields deleted, fields replaced by arbitrary
JSON (malformed actions), and action types the reducers do not know.
"""

from __future__ import annotations

import copy
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ahp_lab.protocol.jsonvalue import dumps, to_json
from ahp_lab.reducers import REDUCERS

from ..conftest import examples
from .fixtures import reducer_fixtures
from .samples import SAMPLES

# Seeds: the project's own samples always, plus every corpus fixture when the corpus is available.
TEMPLATES: dict[str, list[dict]] = {kind: list(actions) for kind, (_, actions) in SAMPLES.items()}
INITIALS: dict[str, list[dict]] = {kind: list(initials) for kind, (initials, _) in SAMPLES.items()}
for _name, _fx in reducer_fixtures():
    TEMPLATES.setdefault(_fx["reducer"], []).extend(_fx["actions"])
    INITIALS.setdefault(_fx["reducer"], []).append(_fx["initial"])

ID_KEYS = {
    "turnId",
    "toolCallId",
    "partId",
    "id",
    "requestId",
    "questionId",
    "clientId",
    "chat",
    "commandId",
    "fileId",
    "operationId",
    "annotationId",
    "entryId",
}
ID_POOL = ["turn-1", "turn-2", "tc-1", "tool-1", "part-1", "md-1", "q1", "input-1", "c1", "x"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**33) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def perturbed_action(draw, kind: str):
    action = copy.deepcopy(draw(st.sampled_from(TEMPLATES[kind])))
    for key in list(action):
        if key == "type":
            continue
        roll = draw(st.integers(0, 9))
        if roll == 0:
            del action[key]
        elif roll == 1:
            action[key] = draw(json_values)
        elif roll <= 4 and key in ID_KEYS:
            action[key] = draw(st.sampled_from(ID_POOL))
    if draw(st.integers(0, 15)) == 0:
        action["type"] = draw(st.sampled_from([f"{kind}/futureAction", "chat/delta", "session/ready", "x"]))
    return action


def _has_null_member(value) -> bool:
    if isinstance(value, dict):
        return any(v is None or _has_null_member(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_null_member(v) for v in value)
    return False


def _has_null(value) -> bool:
    """Any null at all, array elements included (``{...[null]}`` makes one a member, as in JS)."""
    if value is None:
        return True
    if isinstance(value, dict):
        return any(_has_null(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_null(v) for v in value)
    return False


@st.composite
def scenario(draw):
    kind = draw(st.sampled_from(sorted(TEMPLATES)))
    initial = copy.deepcopy(draw(st.sampled_from(INITIALS[kind])))
    actions = draw(st.lists(perturbed_action(kind), max_size=25))
    return kind, initial, actions


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_reducers_are_total_and_pure(case):
    kind, state, actions = case
    reducer = REDUCERS[kind]
    for action in actions:
        before_state, before_action = copy.deepcopy(state), copy.deepcopy(action)
        new = reducer(state, action, 9999)
        assert state == before_state, "the reducer mutated its input state"
        assert action == before_action, "the reducer mutated the action"
        json.loads(dumps(new))  # the result is still plain JSON
        if isinstance(action.get("type"), str) and action["type"] not in reducer.handled_types:
            assert new is state, "an unknown action type must return the very same state object"
        state = new


@settings(max_examples=examples(200), deadline=None)
@given(st.sampled_from(sorted(REDUCERS)), json_values, json_values)
def test_arbitrary_garbage_never_raises(kind, state, action):
    result = REDUCERS[kind](state, action, 0)
    kind_of_action = action.get("type") if isinstance(action, dict) else None
    if not isinstance(kind_of_action, str) or kind_of_action not in REDUCERS[kind].handled_types:
        assert result is state


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_reducers_never_write_null(case):
    """Absent is absent: with no nulls in the inputs, the output contains no null members."""
    kind, state, actions = case
    state = json.loads(json.dumps(state), object_hook=lambda d: {k: v for k, v in d.items() if v is not None})
    clean = [a for a in actions if not _has_null(a)]
    for action in clean:
        state = REDUCERS[kind](state, action, 9999)
    assert not _has_null_member(to_json(state))


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.text(max_size=20), max_size=60))
def test_streamed_deltas_equal_plain_concatenation(chunks):
    state = {"resource": "ahp-chat:/c", "title": "t", "status": 1, "modifiedAt": "x", "turns": []}
    state = REDUCERS["chat"](
        state,
        {
            "type": "chat/turnStarted",
            "turnId": "t1",
            "startedAt": "s",
            "message": {"text": "hi", "origin": {"kind": "user"}},
        },
        1,
    )
    state = REDUCERS["chat"](
        state,
        {"type": "chat/responsePart", "turnId": "t1", "part": {"kind": "markdown", "id": "p", "content": ""}},
        1,
    )
    snapshots = []
    for chunk in chunks:
        snapshots.append(state)
        state = REDUCERS["chat"](
            state, {"type": "chat/delta", "turnId": "t1", "partId": "p", "content": chunk}, 2
        )
    content = state["activeTurn"]["responseParts"][0]["content"]
    assert content == "".join(chunks) and str(content) == "".join(chunks)
    # every earlier state still shows exactly the text it had (appends never leak backwards)
    for i, old in enumerate(snapshots):
        assert old["activeTurn"]["responseParts"][0]["content"] == "".join(chunks[:i])
