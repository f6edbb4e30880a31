"""``nesting_exceeds``, the depth check made before a peer's message is parsed, against a plain count."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ahp_lab.protocol.limits import nesting_exceeds
from tests.conftest import examples


def _deepest(text: str) -> int | None:
    """Deepest bracket nesting outside strings, read character by character; ``None`` once the
    closing brackets outnumber the opening ones (malformed, left to the parser)."""
    depth = deepest = 0
    in_string = escaped = False
    for c in text:
        if in_string:
            escaped, in_string = (False, True) if escaped else (c == "\\", c != '"')
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
            if depth < 0:
                return None
    return deepest


pieces = st.sampled_from(["[", "]", "{", "}", '"a[{"', '"\\"["', ",", "1", ":", "[]", "{}"])


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(pieces, max_size=400), st.integers(1, 40))
def test_the_check_agrees_with_a_plain_count(parts, cap):
    text = "".join(parts)
    deepest = _deepest(text)
    if deepest is not None:
        assert nesting_exceeds(text, cap) == (deepest > cap)


@given(st.integers(1, 600))
def test_valid_json_is_too_deep_exactly_past_the_cap(depth):
    text = json.dumps(json.loads("[" * depth + "]" * depth)) if depth < 900 else ""
    assert nesting_exceeds(text, 512) == (depth > 512)
    mixed = '{"a":' * depth + "[" * depth + "]" * depth + "}" * depth
    assert nesting_exceeds(mixed, 512) == (2 * depth > 512)
