"""The transition log's byte budget: a bounded log drops its oldest transitions and nothing else.

A store with ``max_log_bytes`` must keep, for every seq it still holds, exactly what an unbounded
store keeps (states, actions, origins, verdicts), export a log that replays to the live states, and
say clearly that an older seq was dropped. The attack on the served host is in
``tests/security/test_limits.py``.
"""

from __future__ import annotations

import copy
import gc
import io
import json
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ahp_lab.store import Store, agent_origin, client_origin
from tests.conftest import examples

from ..reducers.samples import SAMPLES
from ..reducers.test_properties import perturbed_action

KINDS = ("chat", "session", "terminal")


@st.composite
def operations(draw):
    """A script of store operations over up to three channels that come and go."""
    ops = []
    for _ in range(draw(st.integers(1, 60))):
        ops.append(
            draw(
                st.one_of(
                    st.tuples(
                        st.just("apply"), st.integers(0, 2), st.sampled_from(KINDS).flatmap(perturbed_action)
                    ),
                    st.tuples(st.just("reject"), st.integers(0, 2), st.text(max_size=300)),
                    st.tuples(st.just("add"), st.integers(0, 2), st.sampled_from(KINDS)),
                    st.tuples(st.just("remove"), st.integers(0, 2), st.none()),
                )
            )
        )
    return ops


def play(store: Store, ops: list, check=None) -> None:
    live: dict[int, str] = {}
    added = 0
    for i, (what, slot, arg) in enumerate(ops):
        uri = f"ch{slot}"
        if what == "add" and slot not in live:
            added += 1
            store.add_channel(f"{uri}.{added}", arg, copy.deepcopy(SAMPLES[arg][0][0]))
            live[slot] = f"{uri}.{added}"
        elif what == "remove" and slot in live:
            store.remove_channel(live.pop(slot))
        elif what == "apply" and slot in live:
            store.apply(live[slot], arg, agent_origin("a"))
        elif what == "reject" and slot in live:
            store.reject(live[slot], {"type": "x", "text": arg}, client_origin("c", i), "no: " + arg)
        if check is not None:
            check(store)


def within_budget(store: Store) -> None:
    assert store.log_bytes <= store.max_log_bytes or len(store.transitions) == 1


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations(), st.integers(200, 6_000), st.integers(1, 6))
def test_a_bounded_log_keeps_exactly_what_an_unbounded_one_has_for_every_seq_it_holds(ops, budget, every):
    clock = iter(range(1_000, 10**9))
    full = Store(lambda: next(clock), checkpoint_every=every)
    clock2 = iter(range(1_000, 10**9))
    bounded = Store(lambda: next(clock2), checkpoint_every=every, cache_size=2, max_log_bytes=budget)
    play(full, ops)
    play(bounded, ops, within_budget)

    assert bounded.states() == full.states() and bounded.last_seq == full.last_seq
    assert len(bounded.transitions) == bounded.last_seq - bounded.first_seq + 1
    for t in bounded.transitions:
        u = full.transitions[t.seq]
        assert (t.channel, t.action, t.origin, t.accepted, t.now_ms) == (
            u.channel,
            u.action,
            u.origin,
            u.accepted,
            u.now_ms,
        )
        assert t.before == u.before and t.after == u.after, f"seq {t.seq}"
        assert bounded.state_at(t.seq) == full.state_at(t.seq), f"seq {t.seq}"
    if bounded.first_seq > full.first_seq:
        for seq in (full.first_seq, bounded.first_seq - 1):
            with pytest.raises(IndexError, match=f"seq {seq} was dropped .*max_log_bytes"):
                bounded.state_at(seq)
            with pytest.raises(IndexError, match=f"seq {seq} was dropped"):
                bounded.transitions[seq]
    buffer = io.StringIO()
    bounded.export(buffer)
    buffer.seek(0)
    header = json.loads(buffer.getvalue().splitlines()[0])
    assert header["firstSeq"] == bounded.first_seq
    replayed = Store.load(buffer)
    assert replayed.states() == bounded.states() and replayed.first_seq == bounded.first_seq
    assert [t.envelope() for t in replayed.transitions] == [t.envelope() for t in bounded.transitions]


def test_a_transition_held_from_before_the_cut_says_it_was_dropped():
    store = Store(lambda: 1, max_log_bytes=20_000)
    store.add_channel("s", "session", copy.deepcopy(SAMPLES["session"][0][0]))
    old = store.apply("s", {"type": "session/titleChanged", "title": "first"})
    for n in range(200):
        store.apply("s", {"type": "session/titleChanged", "title": f"title {n} " + "x" * 500})
    assert store.first_seq > old.seq and store.state("s")["title"].startswith("title 199")
    assert old.action["title"] == "first"  # what a listener was handed stays readable
    with pytest.raises(IndexError, match=f"seq {old.seq} was dropped"):
        old.origin  # noqa: B018 - the column no longer holds it


BUDGET = 4_000_000


def _flooded(flood) -> Store:
    """A chat store allowed ``BUDGET`` bytes after ``flood(store, n)`` for n in 0..299, checked to
    hold about its budget in memory afterwards, not the flood."""
    store = Store(lambda: 1, max_log_bytes=BUDGET)
    store.add_channel("c", "chat", copy.deepcopy(SAMPLES["chat"][0][0]))
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for n in range(300):
            flood(store, n)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert store.log_bytes <= BUDGET
    assert held < 2 * BUDGET, f"the store holds {held:,} bytes for a budget of {BUDGET:,}"
    return store


def test_memory_the_log_holds_follows_its_budget():
    """300 drafts of 100,000 characters (30 MB of text) into a store allowed 4 MB: the memory
    it holds afterwards is about the budget, not the flood."""

    def flood(store: Store, n: int) -> None:
        text = f"{n:04}" + "d" * 100_000
        store.apply("c", {"type": "chat/draftChanged", "draft": {"text": text}}, client_origin("m", n))
        store.reject("c", {"type": "chat/nope", "blob": "r" * 1_500}, client_origin("m", n), "no " * 300)

    store = _flooded(flood)
    assert store.state("c")["draft"]["text"].startswith("0299")


def test_actions_with_long_distinct_keys_are_charged_for_their_keys():
    """The log packs an action of atomic members as its values beside a key tuple shared by every
    action of that shape. A stranger's rejected actions with a new 100,000-character key each
    (30 MB of keys, tiny values) must still count their keys against the budget, and the shared
    key tuples must not keep them once the log drops them."""

    def flood(store: Store, n: int) -> None:
        action = {"type": "chat/nope", f"{n:04}" + "k" * 100_000: 1}
        store.reject("c", action, client_origin("m", n), "no")

    store = _flooded(flood)
    assert store.transitions[-1].action == {"type": "chat/nope", "0299" + "k" * 100_000: 1}
