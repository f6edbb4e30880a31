"""What a stream costs on the wire: past the display cap a delta is a few bytes, a finished turn is
not resent whole, and the inspector sends one message per flush (see benchmarks/bench_workbench.py).
"""

import json

from ahp_lab.widgets import ChatPane, TransitionInspector
from ahp_lab.widgets.chat import active_turn_patch, promote_patch, turn_view
from ahp_lab.widgets.sanitize import BLOCK_LIMIT

from .conftest import capture
from .test_widgets import _big_log


def _turn(text, *, active=True, state=None, limits=None):
    t = {
        "id": "t",
        "message": {"text": "go", "origin": {"kind": "user"}},
        "responseParts": [{"kind": "markdown", "id": "m", "content": text}],
    }
    if state:
        t["state"] = state
    return turn_view(t, limits, active=active)


def test_appends_past_the_cap_carry_the_length_not_the_text():
    a = _turn("x" * (BLOCK_LIMIT - 3))
    b = _turn("x" * (BLOCK_LIMIT + 10))
    p = active_turn_patch(a, b)
    assert p["parts"] == [] and p["appends"] == [[0, "xxx", BLOCK_LIMIT + 10, True]]
    c = _turn("x" * (BLOCK_LIMIT + 500))
    p = active_turn_patch(b, c)
    assert p["appends"] == [[0, "", BLOCK_LIMIT + 500, True]] and len(json.dumps(p)) < 200
    # below the cap: the plain two-element form
    assert active_turn_patch(_turn("ab"), _turn("abc"))["appends"] == [[0, "c"]]
    # "show more" (truncated -> not truncated) and edits are sent whole
    assert active_turn_patch(c, _turn("x" * (BLOCK_LIMIT + 500), limits={"turn/t/part/0": 10**6}))["parts"]
    assert active_turn_patch(_turn("abc"), _turn("abd"))["parts"]


def test_promote_sends_what_changed_since_the_active_turn():
    active = _turn("hello")
    done = _turn("hello world", active=False, state="complete")
    p = promote_patch(active, done)
    assert p["id"] == "t" and p["patch"]["appends"] == [[0, " world"]]
    assert p["fields"]["active"] is False and p["fields"]["state"] == "complete"
    assert promote_patch(active, _turn("hello", active=False))["patch"]["appends"] == []
    assert promote_patch(None, done) is None
    other = dict(done, id="u")
    assert promote_patch(active, other) is None


def test_chat_pane_stream_past_the_cap_and_turn_end(demo):
    w = ChatPane(demo)
    sent = capture(w)
    w._on_custom_msg(w, {"type": "hello"})
    delta = {"type": "chat/delta", "turnId": "t2", "partId": "m2", "content": "y" * 4096}
    for _ in range(BLOCK_LIMIT // 4096 + 4):
        demo.apply(demo.chat, delta)
    sizes = [len(json.dumps(m)) for m in sent[1:]]
    assert max(sizes) < 4096 + 300, sizes  # never the whole capped block
    parts = w._chat_state()["activeTurn"]["responseParts"]
    [(i, text, length, truncated)] = sent[-1]["active"]["appends"]
    assert text == "" and length == len(parts[i]["content"]) and truncated
    demo.apply(demo.chat, {"type": "chat/turnComplete", "turnId": "t2", "duration": 1})
    last = sent[-1]
    assert last["active"] == {"reset": None} and "promote" in last["turns"][0]
    assert len(json.dumps(last)) < 5000  # not the 64 KB turn again


def test_inspector_total_follows_the_stream_once_quiet(loop, clock):
    src = _big_log(100)
    w = TransitionInspector(src, get_loop=lambda: loop, clock=clock)
    state_syncs = []
    w.observe(lambda ch: state_syncs.append(ch["new"]), names="total")
    sent = capture(w)
    for _ in range(10):
        for _ in range(300):
            src.record(src.chat, {"type": "chat/delta"}, {})
        loop.advance(1 / 30)
    appended = [m for m in sent if m["type"] == "appended"]
    assert len(appended) >= 9 and appended[-1]["total"] <= 3100
    assert all(len(m["rows"]) <= w.APPEND_TAIL for m in appended)
    assert state_syncs == []  # the appended messages carry the total meanwhile
    loop.advance(1.0)
    assert state_syncs == [3100] and w.total == 3100
    # a filter change syncs total at once, together with the version
    w.filters = {"channel": src.session}
    assert w.total == len(w._index) and state_syncs[-1] == w.total
    for _ in range(10):
        src.record(src.session, {"type": "session/titleChanged", "title": "x"}, {})
    loop.advance(1 / 30)
    assert w._total_handle is not None
    w.close()
    assert w._total_handle is None
