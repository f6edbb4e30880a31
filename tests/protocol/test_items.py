"""``items_exceed``, the count of a message's values and keys made before it is parsed, against a
count taken from the parsed value."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ahp_lab.protocol.limits import items_exceed
from tests.conftest import examples


def _items(value) -> int:
    """The items ``items_exceed`` counts: the value, and for each array or object one per
    member (a key and its value for an object), or one for its bracket when it is empty."""
    if isinstance(value, list):
        return 1 + (sum(_items(v) for v in value) if value else 1)
    if isinstance(value, dict):
        return 1 + (sum(1 + _items(v) for v in value.values()) if value else 1)
    return 1


# strings made of what the count looks at: quotes, backslashes and punctuation
tricky = st.text(alphabet='",:[]{}\\ aé\n', max_size=12)
values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), tricky),
    lambda inner: st.one_of(st.lists(inner, max_size=6), st.dictionaries(tricky, inner, max_size=5)),
    max_leaves=60,
)


@settings(max_examples=examples(500), deadline=None)
@given(values, st.booleans(), st.sampled_from([None, 1, (",", ":")]), st.integers(0, 3))
def test_the_count_agrees_with_the_parsed_value(value, ascii_only, layout, below):
    if layout == 1:
        text = json.dumps(value, ensure_ascii=ascii_only, indent=1)
    else:
        text = json.dumps(value, ensure_ascii=ascii_only, separators=layout)
    count = _items(value)
    for cap in (count - below, count, count + below, 1):
        if cap >= 1:
            assert items_exceed(text, cap) == (count > cap), (text, cap, count)


def test_a_frame_of_tiny_values_is_counted_without_parsing_it():
    tiny = "[" + ",".join(["[]"] * 300_000) + "]"  # 900,000 characters, 600,001 items
    assert items_exceed(tiny, 600_001) is False
    assert items_exceed(tiny, 600_000) is True
    strings = json.dumps(["\\"] * 300_000)  # each a backslash: a quote pair the count discounts
    assert items_exceed(strings, 300_000) is True
    assert items_exceed(strings, 300_001) is False


def test_punctuation_inside_strings_is_not_counted():
    prose = json.dumps({"text": 'Hello, world: [a] {b} "c", ' * 50_000})  # 1.3 M characters
    assert items_exceed(prose, 3) is False
    assert items_exceed(prose, 2) is True
