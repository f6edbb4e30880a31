"""Two common wrong arguments of a first hour, each refused in one sentence that shows the right call.

Before, ``call("search_code", "auth")`` (an argument given by position) raised ``TypeError: 'str'
object is not a mapping``, and ``lab.transitions["x"]`` raised ``TypeError: '<' not supported
between instances of 'str' and 'int'``.
"""

from __future__ import annotations

import pytest

from ahp_lab import Lab
from ahp_lab.agents.scripted import call


def test_a_tool_argument_given_by_position_says_how_to_give_it():
    with pytest.raises(TypeError) as caught:
        call("search_code", "auth")
    assert str(caught.value) == (
        "call('search_code', 'auth'): a tool's arguments go as keywords, "
        "call('search_code', argument=value), or as a dict, call('search_code', {'argument': value})"
    )
    assert call("search_code", {"query": "auth"}) is not None  # a dict still works


def test_a_transition_index_that_is_not_a_seq_says_what_one_is():
    lab = Lab()
    try:
        with pytest.raises(
            TypeError, match=r"^lab\.transitions\[\.\.\.\] takes a server seq .* not str; to filter"
        ):
            lab.transitions["x"]
        assert lab.transitions[-1].seq == lab.transitions[lab.transitions[-1].seq].seq
    finally:
        lab.close()
