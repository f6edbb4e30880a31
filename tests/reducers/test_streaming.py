"""A streamed delta starts from the state the previous one made, which the reducer remembers.

The ``chat/delta`` handler keeps the last state it made for a turn of one part, and appends to it
without reading or checking it again. That shortcut must give what the full reading gives, for
any delta (wrong ids, content that is not a string, empty content), for an older state applied
again (a branch in time travel) and for two chats streaming in turns.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from ahp_lab.protocol.jsonvalue import dumps
from ahp_lab.reducers import REDUCERS
from ahp_lab.reducers.chat import _append_to_part

chat = REDUCERS["chat"]
_delta = _append_to_part("markdown")  # a handler of its own: it remembers nothing of chat's


def _read_in_full(state: dict, action: dict) -> dict:
    try:
        return _delta(state, action, 0)
    except Exception:  # the reducer's no-op for an action its rules cannot apply
        return state


def _started(turn_id: str) -> dict:
    state = {"resource": "ahp-chat:/c", "title": "t", "status": 1, "turns": []}
    state = chat(
        state,
        {
            "type": "chat/turnStarted",
            "turnId": turn_id,
            "startedAt": "x",
            "message": {"text": "hi", "origin": {"kind": "user"}},
        },
    )
    part = {"kind": "markdown", "id": "md", "content": ""}
    return chat(state, {"type": "chat/responsePart", "turnId": turn_id, "part": part})


contents = st.one_of(
    st.sampled_from(["ab ", "word " * 20, "x" * 257, "", None, 0, False, [], {}]),
    st.text(min_size=0, max_size=300),
)
deltas = st.fixed_dictionaries(
    {
        "type": st.just("chat/delta"),
        "turnId": st.sampled_from(["t", "t", "t", "u", ""]),
        "partId": st.sampled_from(["md", "md", "md", "other", None]),
        "content": contents,
    }
)
steps = st.tuples(st.sampled_from(["next", "next", "next", "old", "other chat"]), deltas)


@settings(max_examples=150, deadline=None)
@given(st.lists(steps, min_size=30, max_size=120), st.integers(0, 2**32))
def test_a_delta_from_the_remembered_state_equals_one_read_in_full(script, seed):
    rng = random.Random(seed)
    mine, theirs = _started("t"), _started("t")
    history = [(mine, dumps(mine))]  # every state made, with its JSON when it was made
    for where, action in script:
        if where == "other chat":  # another stream makes the handler remember its state instead
            theirs = chat(theirs, action)
            continue
        base, was = rng.choice(history) if where == "old" else history[-1]
        got = chat(base, action)
        read_in_full = _read_in_full(dict(base), action)  # a copy: never the remembered state
        assert dumps(got) == dumps(read_in_full)
        assert dumps(base) == was  # states are never changed by what is made from them
        history.append((got, dumps(got)))


def test_a_long_stream_appends_every_delta_once():
    state = _started("t")
    pieces = [f"w{i} " for i in range(5_000)]
    for piece in pieces:
        state = chat(state, {"type": "chat/delta", "turnId": "t", "partId": "md", "content": piece})
    assert str(state["activeTurn"]["responseParts"][0]["content"]) == "".join(pieces)
