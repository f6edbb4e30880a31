"""An attached lab's own log (ClientLog) under its byte budget drops its oldest records and nothing else.

For every seq it still holds, a bounded log must give exactly what an unbounded one gives (states,
transitions), its export must replay to the same states, and an older seq must say it was dropped.
The attack (a host flooding an attached lab) is in ``tests/wire/test_remote_lab.py``.
"""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ahp_lab.lab.clientlog import ClientLog
from ahp_lab.protocol.jsonvalue import to_json
from ahp_lab.reducers import REDUCERS
from tests.conftest import examples

from ..reducers.samples import SAMPLES
from ..reducers.test_properties import perturbed_action

CHANNELS = {"ahp-session:/s1": "session", "ahp-chat:/s1/c1": "chat", "ahp-chat:/s1/c2": "chat"}


@st.composite
def wire(draw):
    """What a host sends a client: a snapshot per channel, then envelopes (some rejected, some large)
    and now and then a new snapshot (a resubscription)."""
    uris = list(CHANNELS)
    events = []
    for _ in range(draw(st.integers(1, 50))):
        uri = draw(st.sampled_from(uris))
        roll = draw(st.integers(0, 9))
        if roll == 0:
            events.append(("snapshot", uri, None))
        else:
            action = draw(perturbed_action(CHANNELS[uri]))
            if roll == 1:
                action = {**action, "_meta": {"blob": "b" * draw(st.integers(0, 5_000))}}
            events.append(("reject" if roll == 2 else "apply", uri, action))
    return events


def _feed(log: ClientLog, events) -> None:
    states = {uri: SAMPLES[kind][0] for uri, kind in CHANNELS.items()}
    seq = 0
    for uri in CHANNELS:
        log.record(
            uri, {"snapshot": {"resource": uri, "state": states[uri], "fromSeq": 0}}, None, states[uri], 0
        )
    for n, (what, uri, action) in enumerate(events, 1):
        seq += 1
        if what == "snapshot":
            snap = {"resource": uri, "state": to_json(states[uri]), "fromSeq": seq}
            log.record(uri, {"snapshot": snap}, states[uri], snap["state"], n)
            continue
        envelope = {"channel": uri, "action": action, "serverSeq": seq}
        before = states[uri]
        if what == "reject":
            envelope["rejectionReason"] = "not allowed"
            after = before
        else:
            after = REDUCERS[CHANNELS[uri]](before, action, n)
        states[uri] = after
        log.record(uri, envelope, before, after, n)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=wire(), budget=st.integers(2_000, 40_000))
def test_a_bounded_client_log_keeps_exactly_what_an_unbounded_one_holds_for_every_seq_it_keeps(
    events, budget
):
    full, bounded = ClientLog(max_log_bytes=None), ClientLog(max_log_bytes=budget)
    _feed(full, events)
    _feed(bounded, events)
    assert bounded.log_bytes <= budget or len(bounded._records) == 1
    assert to_json(bounded.states()) == to_json(full.states())
    kept = [t.seq for t in bounded.transitions]
    assert kept == [t.seq for t in full.transitions][len(full.transitions) - len(kept) :]
    for seq in range(bounded.dropped_through, full.last_seq + 1):
        assert to_json(bounded.state_at(seq)) == to_json(full.state_at(seq)), seq
    if bounded.dropped_through > 0:
        with pytest.raises(IndexError, match=f"seq {bounded.dropped_through - 1} was dropped"):
            bounded.state_at(bounded.dropped_through - 1)
    buffer = io.StringIO()
    bounded.export(buffer)
    buffer.seek(0)
    loaded = ClientLog.load(buffer)
    assert to_json(loaded.states()) == to_json(full.states())
    assert [t.seq for t in loaded.transitions] == kept


def test_a_client_log_budget_must_be_a_positive_number_of_bytes():
    for bad in (0, -5, True):
        with pytest.raises(ValueError, match="max_log_bytes must be a positive number of bytes"):
            ClientLog(max_log_bytes=bad)
