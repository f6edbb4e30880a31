"""Every shared reducer fixture, plus the guards the fixtures cannot express themselves."""

from __future__ import annotations

import copy

import pytest

from ahp_lab.conformance import FIXTURE_NOW_MS, first_difference, run_reducer_fixture
from ahp_lab.protocol.jsonvalue import strip_nulls
from ahp_lab.reducers import REDUCERS

from ..conftest import requires_corpus
from .fixtures import reducer_fixtures

pytestmark = requires_corpus
CASES = reducer_fixtures()


def test_the_whole_shared_corpus_is_present():
    assert len(CASES) == 175


@pytest.mark.parametrize(("name", "fixture"), CASES, ids=[n for n, _ in CASES])
def test_reducer_fixture(name, fixture):
    result = run_reducer_fixture(fixture, name)
    assert result.passed, result.detail


@pytest.mark.parametrize(("name", "fixture"), CASES, ids=[n for n, _ in CASES])
def test_reducers_never_mutate_their_inputs(name, fixture):
    reducer = REDUCERS[fixture["reducer"]]
    state = fixture["initial"]
    seen = []  # (object handed to the reducer, deep copy taken before the call)
    for action in fixture["actions"]:
        seen.append((state, copy.deepcopy(state)))
        seen.append((action, copy.deepcopy(action)))
        state = reducer(state, action, FIXTURE_NOW_MS)
    for original, snapshot in seen:
        assert original == snapshot, f"{name}: a reducer mutated its input"


def _objects(value, out):
    if isinstance(value, (dict, list)):
        out.add(id(value))
        for item in value.values() if isinstance(value, dict) else value:
            _objects(item, out)
    return out


def _uses(value, action_ids):
    return id(value) in action_ids or (
        isinstance(value, (dict, list))
        and any(_uses(v, action_ids) for v in (value.values() if isinstance(value, dict) else value))
    )


def _unshared(old, new, action_ids, path="$"):
    """Paths where an unchanged subtree of ``new`` is an equal copy instead of the shared original.

    A subtree rebuilt around a payload the action carried is a new value, not a copy.
    """
    if old is new:
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key, value in new.items():
            if key in old:
                copied = value == old[key] and value is not old[key] and isinstance(value, (dict, list))
                if copied and not _uses(value, action_ids):
                    out.append(f"{path}.{key}")
                else:
                    out.extend(_unshared(old[key], value, action_ids, f"{path}.{key}"))
        return out
    return []


@pytest.mark.parametrize(("name", "fixture"), CASES, ids=[n for n, _ in CASES])
def test_unchanged_subtrees_are_shared(name, fixture):
    reducer = REDUCERS[fixture["reducer"]]
    state = fixture["initial"]
    for action in fixture["actions"]:
        new = reducer(state, action, FIXTURE_NOW_MS)
        assert _unshared(state, new, _objects(action, set())) == [], (
            f"{name}: {action['type']} copied unchanged subtrees"
        )
        state = new


def test_first_difference_names_the_path():
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == "$.a[1].b: 2, expected 3"
    assert first_difference({"a": 1}, {"a": 1.0}) is None
    assert first_difference({"a": True}, {"a": 1}) is not None
    assert "missing" in first_difference({}, {"x": 1})


def test_a_broken_rule_is_caught():
    """The runner is not vacuous: a wrong expectation fails with the differing path."""
    name, fixture = next((n, f) for n, f in CASES if n.startswith("030-"))
    broken = copy.deepcopy(fixture)
    broken["expected"]["title"] = "something else"
    result = run_reducer_fixture(broken, name)
    assert not result.passed and "$.title" in result.detail
    assert strip_nulls(fixture["expected"])["title"] != "something else"
