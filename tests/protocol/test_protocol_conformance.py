"""Conformance corpora through the typed wire vocabulary.

* every round-trip fixture: ``dump(parse(type, input))`` equals the expected output exactly
  (key-order independent, key-presence sensitive, ints stay ints). ``ahp_lab`` keeps unknown keys,
  so group B fixtures are asserted against ``preservedOutput``;
* every reducer fixture: each action validates as its known variant (unknown types are rejected
  by ``validate_action`` and kept raw by ``parse``); every ``initial``/``expected`` state validates,
  re-dumps to the same JSON and uses only declared members (a cross-check of the models against
  real data).

Fixtures are read in place from the upstream corpus (``AHP_CONFORMANCE_DIR``, else ``../shared/conformance``);
without it this module is skipped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from ahp_lab.protocol import (
    ACTION_TYPES,
    ActionEnvelope,
    ForkChatSource,
    InitializeResult,
    PluginCustomization,
    ProtocolError,
    RootState,
    SessionAddedParams,
    SessionTitleChangedAction,
    SideChatSource,
    dump,
    parse,
    roundtrip,
    strip_nulls,
    validate_action,
    validate_state,
)
from tests.conftest import corpus_files, requires_corpus

pytestmark = requires_corpus
ROUND_TRIPS = corpus_files("round-trips")
REDUCERS = corpus_files("reducers")


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def assert_json_identical(actual: Any, expected: Any, path: str = "$") -> None:
    """Deep equality of JSON values that also distinguishes bool/int/float and key presence."""
    assert type(actual) is type(expected), (
        f"{path}: {type(actual).__name__} {actual!r} != {type(expected).__name__} {expected!r}"
    )
    if isinstance(expected, dict):
        assert actual.keys() == expected.keys(), f"{path}: keys {sorted(actual)} != {sorted(expected)}"
        for key in expected:
            assert_json_identical(actual[key], expected[key], f"{path}.{key}")
    elif isinstance(expected, list):
        assert len(actual) == len(expected), f"{path}: length {len(actual)} != {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_json_identical(a, e, f"{path}[{i}]")
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"


def undeclared_members(value: Any, path: str = "$"):
    """Yield ``(path, model, keys)`` for every model holding keys its class does not declare."""
    if isinstance(value, BaseModel):
        if value.__pydantic_extra__:
            yield path, type(value).__name__, sorted(value.__pydantic_extra__)
        for name in type(value).model_fields:
            yield from undeclared_members(getattr(value, name), f"{path}.{name}")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from undeclared_members(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from undeclared_members(item, f"{path}[{i}]")


# ------------------------------------------------------------------------------- round trips


def test_corpus_sizes() -> None:
    assert len(ROUND_TRIPS) == 39
    assert len(REDUCERS) == 175


@pytest.mark.parametrize("path", ROUND_TRIPS, ids=lambda p: p.name)
def test_round_trip_fixture(path: Path) -> None:
    fx = load(path)
    assert len(fx["acceptableOutputs"]) == 1
    # ahp_lab keeps unknown keys on known models (extra="allow"): group B → preservedOutput.
    expected = fx["preservedOutput"] if fx.get("group") == "B" else fx["acceptableOutputs"][0]
    out = roundtrip(fx["type"], fx["input"])
    assert_json_identical(out, expected)
    # and a second pass is stable
    assert_json_identical(roundtrip(fx["type"], out), expected)


def test_round_trip_decodes_typed_variants() -> None:
    by_name = {p.name: load(p) for p in ROUND_TRIPS}
    env = parse("ActionEnvelope", by_name["001-action-envelope-session-title-changed.json"]["input"])
    assert isinstance(env, ActionEnvelope)
    assert isinstance(env.action, SessionTitleChangedAction) and env.action.title == "Hello"
    assert env.origin is None and "origin" not in dump(env)

    raw = parse("StateAction", by_name["002-state-action-unknown-variant-preserved.json"]["input"])
    assert raw == {"type": "future/newAction", "foo": 42} and isinstance(raw, dict)

    unknown = parse("Customization", by_name["003-customization-unknown-type-preserved.json"]["input"])
    assert isinstance(unknown, dict)
    plugin = parse("Customization", by_name["027-agent-customization-model-and-tools.json"]["input"])
    assert isinstance(plugin, PluginCustomization)
    assert plugin.children[0].model == "claude-sonnet-4.5"
    assert plugin.children[0].tools == ["read", "grep", "edit"]

    big = parse("ActionEnvelope", by_name["016-long-above-int32-max-preserved.json"]["input"])
    assert big.server_seq == 2148131814

    init = parse("InitializeResult", by_name["030-agent-side-chat-capability.json"]["input"])
    assert isinstance(init, InitializeResult)
    assert isinstance(init.snapshots[0].state, RootState)
    assert init.snapshots[0].state.agents[0].capabilities.multiple_chats.side_chat is True

    added = parse("SessionAddedParams", by_name["019-channel-scoped-notification-uri.json"]["input"])
    assert isinstance(added, SessionAddedParams) and added.channel == "ahp:/root"
    assert added.__pydantic_extra__ == {"unknownFutureKey": {"nested": True}}

    fork = parse("ChatSource", by_name["036-chat-source-fork.json"]["input"])
    side = parse("ChatSource", by_name["038-chat-source-side-chat-selection.json"]["input"])
    assert isinstance(fork, ForkChatSource) and isinstance(side, SideChatSource)
    assert side.selection.response_part_id == "part-7"


# ------------------------------------------------------------------------------- reducer fixtures


@pytest.mark.parametrize("path", REDUCERS, ids=lambda p: p.name)
def test_reducer_fixture_actions_validate(path: Path) -> None:
    fx = load(path)
    for raw in fx["actions"]:
        action = strip_nulls(raw)
        action_type = action["type"]
        if action_type not in ACTION_TYPES:  # fixtures that deliberately use unknown types
            with pytest.raises(ProtocolError, match="unknown action type"):
                validate_action(action)
            assert parse("StateAction", raw) == raw  # kept raw, verbatim
            continue
        model = parse("StateAction", action)
        assert isinstance(model, ACTION_TYPES[action_type]), (action_type, type(model))
        assert not list(undeclared_members(model)), list(undeclared_members(model))
        assert_json_identical(validate_action(action), action)
        # the raw fixture action (with its nulls) normalizes to the stripped form
        assert validate_action(raw) == action


@pytest.mark.parametrize("path", REDUCERS, ids=lambda p: p.name)
def test_reducer_fixture_states_validate(path: Path) -> None:
    fx = load(path)
    for key in ("initial", "expected"):
        state = strip_nulls(fx[key])
        model = validate_state(fx["reducer"], state)
        assert not list(undeclared_members(model)), (key, list(undeclared_members(model)))
        assert_json_identical(dump(model), state)
        # nulls in the fixture are treated as absent
        assert_json_identical(dump(validate_state(fx["reducer"], fx[key])), state)
