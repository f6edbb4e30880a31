"""Property tests: the validators never fail with anything but ``ProtocolError``.

* arbitrary JSON values through ``validate_action`` and ``parse``;
* valid actions (every known action from the reducer and round-trip fixtures) mutated by deleting
  members or replacing them with arbitrary JSON of another shape;
* valid actions normalize idempotently.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ahp_lab.protocol import ACTION_TYPES, ProtocolError, parse, strip_nulls, validate_action
from tests.conftest import corpus_files, examples, requires_corpus
from tests.reducers.samples import SAMPLES


def _valid_actions() -> list[dict[str, Any]]:
    """The project's own sample actions, plus every known action of the corpus when available."""
    out: list[dict[str, Any]] = [a for _, actions in SAMPLES.values() for a in actions]
    for path in corpus_files("reducers"):
        out.extend(a for a in json.loads(path.read_text())["actions"] if a.get("type") in ACTION_TYPES)
    for path in corpus_files("round-trips"):
        fx = json.loads(path.read_text())
        if fx["type"] == "StateAction" and fx["input"].get("type") in ACTION_TYPES:
            out.append(fx["input"])
        elif fx["type"] == "ActionEnvelope":
            out.append(fx["input"]["action"])
    return [strip_nulls(a) for a in out]


VALID_ACTIONS = _valid_actions()

json_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
action_like = st.fixed_dictionaries(
    {"type": st.sampled_from(sorted(ACTION_TYPES)) | st.text(max_size=20)},
    optional={
        "turnId": json_values,
        "title": json_values,
        "content": json_values,
        "message": json_values,
        "part": json_values,
        "result": json_values,
        "config": json_values,
        "_meta": json_values,
    },
)


def _check(value: Any) -> None:
    try:
        out = validate_action(value)
    except ProtocolError as exc:
        assert str(exc) and "\n" not in str(exc)
        assert exc.rule
    else:
        assert isinstance(out, dict)
        assert out["type"] in ACTION_TYPES
        assert validate_action(out) == out  # idempotent normalization


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """All member paths inside ``value`` (dict keys and list indices)."""
    out = []
    if isinstance(value, dict):
        for key, item in value.items():
            out.append((*prefix, key))
            out.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out.append((*prefix, i))
            out.extend(_paths(item, (*prefix, i)))
    return out


def _mutate(value: Any, path: tuple, op: str, replacement: Any) -> Any:
    value = json.loads(json.dumps(value))
    parent = value
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if op == "delete":
        del parent[last]
    else:
        parent[last] = replacement
    return value


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_arbitrary_json_never_crashes(value: Any) -> None:
    _check(value)
    for type_name in ("StateAction", "JsonRpcMessage", "ActionEnvelope", "ChatState", "Customization"):
        with contextlib.suppress(ProtocolError):
            parse(type_name, value)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(action_like)
def test_action_shaped_json_never_crashes(value: dict) -> None:
    _check(value)


@settings(max_examples=examples(600), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_valid_actions_never_crash(data: st.DataObject) -> None:
    action = data.draw(st.sampled_from(VALID_ACTIONS))
    mutated = action
    for _ in range(data.draw(st.integers(1, 3))):
        paths = _paths(mutated)
        if not paths:
            break
        path = data.draw(st.sampled_from(paths))
        op = data.draw(st.sampled_from(["delete", "replace"]))
        replacement = data.draw(json_values)
        mutated = _mutate(mutated, path, op, replacement)
    _check(mutated)
    with contextlib.suppress(ProtocolError):
        parse("StateAction", mutated)


@requires_corpus
def test_valid_actions_are_fixed_points() -> None:
    assert len(VALID_ACTIONS) > 300
    for action in VALID_ACTIONS:
        assert validate_action(action) == action
