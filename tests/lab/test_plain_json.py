"""What a cell reads from a lab serializes with plain ``json.dumps``.

Long texts and long lists live in state as compact values (``Text``, ``Vector``) that equal the
plain ones but that ``json.dumps`` does not know; the lab's reading methods hand out plain JSON.
"""

from __future__ import annotations

import json

from ahp_lab import Lab, to_json
from ahp_lab.agents.scripted import say
from ahp_lab.protocol.vector import Vector


def test_time_travel_and_current_states_serialize_with_plain_json_dumps():
    lab = Lab()
    for i in range(20):  # more turns than a plain list keeps, and answers longer than a short text
        lab.run(f"question {i}", script=[say("a long streamed answer " * 20)])
    seq = lab.store.last_seq
    host_own = lab.store.state_at(seq)[lab.chat]
    assert to_json(host_own) is not host_own  # the host's own values are compact: converted
    assert isinstance(host_own["turns"], Vector)

    at = lab.state_at(seq)
    assert json.loads(json.dumps(at)) == at
    assert at[lab.chat] == lab.chat_state and at[lab.session] == lab.session_state
    json.dumps([lab.chat_state, lab.session_state, lab.state(lab.chat), lab.root])
    last = lab.transitions[-1]
    json.dumps([last.action, last.diff, last.envelope(), to_json(last.before), to_json(last.after)])
    earlier = lab.state_at(seq // 2)
    assert json.loads(json.dumps(earlier)) == earlier
