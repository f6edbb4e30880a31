"""The store: transitions, time travel and export/replay agree with applying the reducers directly."""

from __future__ import annotations

import copy
import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ahp_lab.protocol.jsonvalue import apply_patch, json_patch, to_json
from ahp_lab.reducers import REDUCERS
from ahp_lab.store import HOST, Store, agent_origin, client_origin
from tests.conftest import examples

from ..reducers.fixtures import reducer_fixtures
from ..reducers.samples import SAMPLES
from ..reducers.test_properties import perturbed_action

# Starting points: the project's own sample states, plus the corpus fixtures' when available.
FIXTURES = [
    {"reducer": kind, "initial": initial}
    for kind in ("chat", "session", "terminal")
    for initial in SAMPLES[kind][0]
] + [fx for _, fx in reducer_fixtures() if fx["reducer"] in ("chat", "session", "terminal")]


@st.composite
def runs(draw):
    fx = draw(st.sampled_from(FIXTURES))
    actions = draw(st.lists(perturbed_action(fx["reducer"]), max_size=40))
    rejected = draw(st.lists(st.booleans(), min_size=len(actions), max_size=len(actions)))
    return fx, actions, rejected


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs(), st.integers(1, 7))
def test_history_matches_direct_reduction(run, checkpoint_every):
    fx, actions, rejected = run
    clock = iter(range(1_000, 100_000))
    store = Store(lambda: next(clock), checkpoint_every=checkpoint_every, cache_size=3)
    store.add_channel("ch", fx["reducer"], copy.deepcopy(fx["initial"]))
    expected = [fx["initial"]]
    reducer = REDUCERS[fx["reducer"]]
    for i, (action, reject) in enumerate(zip(actions, rejected, strict=True)):
        if reject:
            store.reject("ch", action, client_origin("c", i), "no")
            expected.append(expected[-1])
        else:
            t = store.apply("ch", action, agent_origin("a"))
            expected.append(reducer(expected[-1], action, t.now_ms))
    assert store.state("ch") == expected[-1]
    for k, t in enumerate(store.transitions):
        assert t.before == expected[k] and t.after == expected[k + 1], f"seq {t.seq}"
        assert t.accepted == (not rejected[k])
        assert apply_patch(to_json(t.before), t.diff) == to_json(t.after)
        assert store.state_at(t.seq)["ch"] == expected[k + 1]
    buffer = io.StringIO()
    store.export(buffer)
    buffer.seek(0)
    again = Store.load(buffer)
    assert again.states() == store.states()
    assert [t.envelope() for t in again.transitions] == [t.envelope() for t in store.transitions]


def test_log_is_indexed_by_seq_and_prints_as_a_table():
    store = Store(lambda: 0)
    store.add_channel("ahp-session:/s", "session", {"title": "a", "status": 1})
    for title in "bcdefg":
        store.apply("ahp-session:/s", {"type": "session/titleChanged", "title": title}, HOST)
    log = store.transitions
    assert len(log) == 6 and log[1].seq == 1 and log[6].action["title"] == "g" and log[-1].seq == 6
    assert [t.seq for t in log[-2:]] == [5, 6] and [t.seq for t in log[2:4]] == [2, 3]
    with pytest.raises(IndexError, match="seqs 1..6"):
        log[0]
    table = repr(log[-2:])
    assert "session/titleChanged" in table.splitlines()[2] and table.splitlines()[0].startswith("seq")
    assert "<table" in log[-2:]._repr_html_()
    assert log.where(type="session/").__len__() == 6


def test_the_logs_html_table_is_short_per_row_and_quotes_what_it_shows():
    """In a notebook, whole channel URIs wrapped each row over three lines (a first-hour user):
    a row names the channel's kind and the end of its URI, the whole URI in its title; what an
    agent or a client wrote is quoted, in cells and in titles."""
    store = Store(lambda: 0)
    uri = "ahp-session:/2145bbb0-bd26-429a-8306-2e041220abf0"
    store.add_channel(uri, "session", {"title": "a", "status": 1})
    store.apply(uri, {"type": "session/titleChanged", "title": "x' onmouseover='alert(1)" + "y" * 200}, HOST)
    table = store.transitions[-1:]._repr_html_()
    assert f">session …{uri[-13:]}</td>" in table and f"title='{uri}'" in table
    assert "' onmouseover" not in table and "&#x27; onmouseover" in table
    assert "text-align:left;white-space:nowrap" in table


def test_channels_added_later_and_removed_travel_in_time():
    store = Store(lambda: 0)
    store.add_channel("ahp-session:/s", "session", {"title": "a", "status": 1})
    store.apply("ahp-session:/s", {"type": "session/titleChanged", "title": "b"})
    store.add_channel(
        "ahp-chat:/c",
        "chat",
        {"resource": "ahp-chat:/c", "title": "c", "status": 1, "modifiedAt": "x", "turns": []},
    )
    store.apply(
        "ahp-chat:/c", {"type": "chat/draftChanged", "draft": {"text": "d", "origin": {"kind": "user"}}}
    )
    store.remove_channel("ahp-chat:/c")
    store.apply("ahp-session:/s", {"type": "session/titleChanged", "title": "z"})
    assert set(store.state_at(1)) == {"ahp-session:/s"}
    assert store.state_at(2)["ahp-chat:/c"]["draft"]["text"] == "d"
    assert set(store.state_at(3)) == {"ahp-session:/s"}
    buffer = io.StringIO()
    store.export(buffer)
    buffer.seek(0)
    again = Store.load(buffer)
    assert again.states() == store.states() and again.state_at(2) == store.state_at(2)


def test_a_broken_log_file_is_refused_with_the_line_number():
    with pytest.raises(ValueError, match="not an ahp_lab transition log"):
        Store.load(io.StringIO('{"hello": 1}\n'))
    header = '{"format":"ahp_lab.transitions","version":1,"firstSeq":1}\n'
    with pytest.raises(ValueError, match="line 2: envelope for unknown channel"):
        Store.load(io.StringIO(header + '{"envelope":{"channel":"x","action":{},"serverSeq":1},"nowMs":0}\n'))
    with pytest.raises(ValueError, match="line 2: not JSON"):
        Store.load(io.StringIO(header + "{oops\n"))
    channel = '{"channel":"ahp-session:/s","kind":"session","state":{}}\n'
    for broken in (
        '{"envelope":{"action":{},"serverSeq":1},"nowMs":0}',  # no channel
        '{"envelope":{"channel":"ahp-session:/s","serverSeq":1},"nowMs":0}',  # no action
        '{"envelope":{"channel":"ahp-session:/s","action":{},"serverSeq":1}}',  # no clock value
        '{"envelope":"nope"}',
        "[1, 2]",
    ):
        with pytest.raises(ValueError, match="line 3: (an envelope record needs|a record is a JSON object)"):
            Store.load(io.StringIO(header + channel + broken + "\n"))
    with pytest.raises(ValueError, match="line 2: a channel record needs channel"):
        Store.load(io.StringIO(header + '{"channel":"ahp-x:/y","kind":"nonsense","state":{}}\n'))


def test_a_failing_listener_does_not_break_the_store():
    store = Store(lambda: 0)
    store.add_channel("ahp-session:/s", "session", {"title": "a", "status": 1})
    seen = []
    store.subscribe(lambda t: 1 / 0)
    store.subscribe(seen.append, channel="ahp-session:/s")
    store.apply("ahp-session:/s", {"type": "session/titleChanged", "title": "b"})
    assert store.state("ahp-session:/s")["title"] == "b" and len(seen) == 1


def test_a_long_log_adds_nothing_for_the_garbage_collector_to_traverse():
    # A full CPython collection visits every reference of every tracked container: a log that
    # kept one action and one origin per transition in plain lists lengthened every full
    # collection of the kernel by tens of milliseconds per million transitions (issue 14).
    import gc

    def references() -> int:
        gc.collect()
        gc.collect()
        return sum(len(gc.get_referents(o)) for o in gc.get_objects())

    store = Store(lambda: 5_000)
    store.add_channel("ses", "session", {"resource": "ses", "title": "t"})
    n = 20_000
    before = references()
    for i in range(n):
        origin = client_origin("c", i) if i % 2 else agent_origin("a")
        store.apply("ses", {"type": "session/titleChanged", "title": f"title {i}"}, origin)
        if i % 10 == 0:  # a small nested one too (the session reducer ignores it)
            store.apply("ses", {"type": "session/x", "content": [{"type": "text", "text": f"{i}"}]}, HOST)
    added = references() - before
    open_chunks = 2 * 1024  # the newest (not yet sealed) entries of the action and origin columns
    assert added < open_chunks + 0.01 * n, f"a full collection visits {added} more references after {n}"
    # and every transition reads back what was recorded
    assert len(store.transitions) == n + n // 10
    first, nested, second, last = (store.transitions[k] for k in (1, 2, 3, -1))
    assert first.action == {"type": "session/titleChanged", "title": "title 0"}
    assert first.origin is agent_origin("a")
    assert nested.action == {"type": "session/x", "content": [{"type": "text", "text": "0"}]}
    assert second.origin == {"kind": "client", "clientId": "c", "clientSeq": 1}
    assert last.action["title"] == f"title {n - 1}" == store.state("ses")["title"]


def test_big_or_unusual_actions_are_kept_as_the_same_object():
    # a big tree's parts may be shared with channel states (a customization list): copying them
    # would cost; values that are not plain JSON would not read back as they were
    store = Store(lambda: 1)
    store.add_channel("ses", "session", {"resource": "ses", "title": "t"})
    big = {"type": "session/x", "entries": [{"id": str(i)} for i in range(1_000)]}
    unusual = [
        {"type": "session/x", "value": {"pair": (2, "t")}},
        {"type": "session/x", "value": [float("nan")]},
        {"type": "session/x", "value": {1: "an int key"}},
        {"type": "session/x", "value": [object()]},
        "not even an object",
    ]
    for action in [big, *unusual]:
        store.reject("ses", action, HOST, "no")
    for t, action in zip(store.transitions, [big, *unusual], strict=True):
        assert t.action is action and t.origin is HOST


def test_a_diff_applies_to_one_place_when_the_state_shares_a_subtree():
    # Structural sharing puts one object in several places (a message in a turn and in the queue);
    # a patch to one of them must leave the others as they were.
    message = {"text": "hi", "origin": {"kind": "user"}}
    before = {"activeTurn": {"message": message}, "queuedMessages": [{"id": "q1", "message": message}]}
    after = {"activeTurn": {"message": {}}, "queuedMessages": [{"id": "q1", "message": message}]}
    assert apply_patch(before, json_patch(before, after)) == after
    assert before["queuedMessages"][0]["message"] == {"text": "hi", "origin": {"kind": "user"}}


def test_a_lone_utf16_half_a_client_sent_is_exported_and_read_back(tmp_path):
    """A client's draft holding half of a character (JSON ``"\\ud83d"``, which JSON.parse reads) made
    the export to a file raise half-way, leaving a log that loaded to another state (reducer hunt
    round 9). The half is written as its JSON escape; the log and a fixture read back the same."""
    import json

    chat = "ahp-chat:/1"
    store = Store(clock_ms=lambda: 0)
    store.add_channel(
        chat, "chat", {"resource": chat, "title": "t", "status": 1, "modifiedAt": "x", "turns": []}
    )
    draft = json.loads(
        '{"type": "chat/draftChanged", "draft": {"text": "half \\ud83d", "origin": {"kind": "user"}}}'
    )
    store.apply(chat, draft)
    store.apply(chat, {"type": "chat/activityChanged", "activity": "after"})
    path = tmp_path / "log.jsonl"
    assert store.export(path) == 4
    loaded = Store.load(path)
    assert loaded.last_seq == 2 and loaded.state(chat) == store.state(chat)
    store.transitions[:].to_fixture(tmp_path / "f.json", channel=chat)
    assert json.loads((tmp_path / "f.json").read_text())["expected"]["draft"]["text"] == "half \ud83d"


def _terminal_title(title: str) -> dict:
    return {"type": "terminal/titleChanged", "title": title}


def test_a_channel_removed_then_added_again_under_its_uri_keeps_its_own_history():
    """Time travel answered the old channel's last state with the live state of the one that took
    its URI since (a session's URI can be reused after it is disposed), and the log budget's cut
    made that the old one's initial state in the export (reducer hunt round 10)."""
    store = Store(clock_ms=lambda: 0, max_log_bytes=40_000)
    store.add_channel("ahp-root://", "root", {"agents": [], "activeSessions": 0})
    store.add_channel("t", "terminal", {"content": [], "title": "old"})
    first = store.apply("t", _terminal_title("OLD-1"))
    for n in range(100):
        store.apply("ahp-root://", {"type": "root/activeSessionsChanged", "activeSessions": n})
    store.remove_channel("t")
    removed = store.last_seq
    store.add_channel("t", "terminal", {"content": [], "title": "NEW-0"})
    store.apply("t", _terminal_title("NEW-1"))
    assert store.state_at(first.seq)["t"]["title"] == "OLD-1"
    assert first.after["title"] == "OLD-1"
    while store.first_seq <= first.seq:  # push the old channel's transition out of the budget
        store.apply("ahp-root://", {"type": "root/activeSessionsChanged", "activeSessions": 1})
    assert store.first_seq < removed  # the cut came while the old channel was there
    text = io.StringIO()
    store.export(text)
    records = [json.loads(line) for line in text.getvalue().splitlines()]
    titles = [r["state"]["title"] for r in records if r.get("channel") == "t" and "kind" in r]
    assert titles == ["OLD-1", "NEW-0"]
    assert Store.load(io.StringIO(text.getvalue())).state("t")["title"] == "NEW-1"


def test_a_clock_that_is_not_integer_milliseconds_changes_nothing():
    """A float from a clock of one's own was refused by the log's column after the state had
    changed: the live state showed the action, its seq was given again, time travel failed."""
    store = Store(clock_ms=lambda: 1.5)
    store.add_channel("t", "terminal", {"content": [], "title": "old"})
    for bad in (lambda: store.apply("t", _terminal_title("new")), lambda: store.reject("t", {}, HOST, "no")):
        with pytest.raises(TypeError, match="now_ms must be an integer number of epoch milliseconds"):
            bad()
    assert store.state("t")["title"] == "old" and store.last_seq == 0
    done = store.apply("t", _terminal_title("new"), now_ms=7)
    assert done.seq == 1 and store.state_at(1)["t"]["title"] == "new"

    class Millis(int):  # an integer of another type (numpy.int64, say) is the int it is
        pass

    assert store.apply("t", _terminal_title("newer"), now_ms=Millis(8)).now_ms == 8


def test_a_log_loaded_from_one_that_had_dropped_its_start_says_so_when_exported():
    store = Store(clock_ms=lambda: 0, max_log_bytes=5_000)
    store.add_channel("t", "terminal", {"content": [], "title": "old"})
    while store.first_seq == 1:
        store.apply("t", _terminal_title("x" * 100))
    text = io.StringIO()
    store.export(text)
    again = io.StringIO()
    Store.load(io.StringIO(text.getvalue())).export(again)
    assert again.getvalue() == text.getvalue()
    assert '"droppedBefore"' in again.getvalue().splitlines()[0]


@pytest.mark.parametrize("odd", ["", 0, [], None, "chat/turnStarted"])
def test_a_log_with_an_action_that_is_not_an_object_loads_as_it_was_exported(odd):
    """The reducers take any action (one that is not an object changes nothing) and the store
    records it, but loading its export refused it (the reducer hunt, round 11)."""
    store = Store(clock_ms=lambda: 5)
    store.add_channel("t", "terminal", {"content": [], "title": "old"})
    store.apply("t", _terminal_title("new"))
    store.apply("t", odd)
    text = io.StringIO()
    store.export(text)
    loaded = Store.load(io.StringIO(text.getvalue()))
    assert loaded.states() == store.states() and loaded.last_seq == store.last_seq == 2
    assert loaded.state_at(2) == store.state_at(1)


def test_an_action_reusing_an_object_of_the_state_reduces_as_its_replay_does():
    """``===`` matched one Python object used as the turn id of two actions, live; the log keeps
    each action's own copy, so time travel and a loaded export gave another state."""
    turn_id = ["t"]
    store = Store(clock_ms=lambda: 0)
    store.add_channel("c", "chat", {"title": "x", "status": 1})
    store.apply("c", {"type": "chat/turnStarted", "turnId": turn_id})
    part = {"kind": "markdown", "id": "p", "content": "hi"}
    done = store.apply("c", {"type": "chat/responsePart", "turnId": turn_id, "part": part})
    text = io.StringIO()
    store.export(text)
    live = to_json(store.state("c"))
    assert to_json(store.state_at(done.seq)["c"]) == live
    assert to_json(Store.load(io.StringIO(text.getvalue())).state("c")) == live


def test_an_action_the_log_cannot_take_leaves_the_state_as_the_log_has_it(tmp_path):
    """``Store.apply`` set the live state before recording: an action holding an integer JSON
    cannot write (10**5000) raised, but the state kept its change, which the log, the listeners,
    an export and every replay lacked (hunt 15)."""
    from ahp_lab.store import Store

    store = Store()
    uri = "ahp-session:/big"
    store.add_channel(uri, "session", {"title": "t", "status": 1})
    heard = []
    store.subscribe(heard.append)
    with pytest.raises(ValueError):
        store.apply(uri, {"type": "session/metaChanged", "_meta": {"n": 10**5000}})
    assert "_meta" not in store.state(uri) and heard == [] and store.last_seq == 0
    store.apply(uri, {"type": "session/titleChanged", "title": "after"})
    store.export(tmp_path / "log.jsonl")
    assert (
        Store.load(tmp_path / "log.jsonl").state(uri) == store.state(uri) == {"title": "after", "status": 1}
    )
