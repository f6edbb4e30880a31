import json

import pytest

from ahp_lab.widgets.fake import FakeSource, FakeTransition
from ahp_lab.widgets.inspector import (
    TransitionFilter,
    channel_label,
    inspector_rows,
    origin_view,
    readable_patch,
    transition_detail,
)

from .conftest import WEIRD


def _log(n: int) -> FakeSource:
    src = FakeSource(reducers=None)
    for i in range(n):
        ch = src.chat if i % 2 else src.session
        origin = {"kind": "client", "clientId": "nb", "clientSeq": i} if i % 5 == 0 else {"kind": "host"}
        src.record(
            ch,
            {"type": ("chat/delta" if i % 2 else "session/titleChanged"), "i": i},
            {"n": i},
            origin=origin,
            rejection_reason="nope" if i % 97 == 0 else None,
        )
    return src


def test_rows_window_and_total():
    src = _log(10_000)
    out = inspector_rows(src.transitions, 9_990, 100)
    assert (
        out["total"] == 10_000
        and out["start"] == 9_990
        and [r["seq"] for r in out["rows"]] == list(range(9_991, 10_001))
    )
    out = inspector_rows(src.transitions, 0, 10_000)
    assert len(out["rows"]) == 500  # capped window
    assert len(json.dumps(out)) < 500 * 400
    r = out["rows"][10]
    assert r == {
        "i": 10,
        "seq": 11,
        "time": r["time"],
        "channel": src.session,
        "channelKind": "session",
        "channelLabel": "session s1",
        "type": "session/titleChanged",
        "origin": "client nb #10",
        "rejected": False,
        "reason": None,
    }


def test_filters():
    src = _log(1000)
    t = src.transitions
    assert inspector_rows(t, 0, 10, {"channel": src.chat})["total"] == 500
    assert inspector_rows(t, 0, 10, {"type": "chat/"})["total"] == 500
    assert inspector_rows(t, 0, 10, {"type": "session/titleChanged"})["total"] == 500
    assert inspector_rows(t, 0, 10, {"origin": "client nb"})["total"] == 200
    assert inspector_rows(t, 0, 10, {"origin": "client"})["total"] == 200
    assert inspector_rows(t, 0, 10, {"origin": "host"})["total"] == 800
    rej = inspector_rows(t, 0, 50, {"status": "rejected"})
    assert rej["total"] == 11 and all(r["rejected"] and r["reason"] == "nope" for r in rej["rows"])
    assert inspector_rows(t, 0, 10, TransitionFilter(channel=src.chat, action_type="session/"))["total"] == 0


def test_detail_has_action_and_readable_diff():
    src = FakeSource(reducers=None)
    src.set_state("c", {"a": 1, "list": [1], "gone": True})
    t = src.record(
        "c",
        {"type": "x/y", "msg": "\x1b[31mred"},
        {"a": 2, "list": [1, {"k": "v"}], "new": "s"},
        origin={"kind": "agent", "name": "bot"},
    )
    d = transition_detail(t)
    assert d["seq"] == 1 and d["origin"] == "agent bot" and '"type": "x/y"' in d["action"]["text"]
    ops = {(o["op"], o["path"]) for o in d["diff"]["ops"]}
    assert ops == {("remove", "/gone"), ("replace", "/a"), ("add", "/list/1"), ("add", "/new")}
    assert "\x1b" not in d["action"]["text"]


def test_detail_survives_a_failing_diff():
    class Broken(FakeTransition):
        @property
        def diff(self):
            raise RuntimeError("boom")

    d = transition_detail(Broken(1, "c", {"type": "t"}, {}, {}, {}))
    assert d["diffError"] == "RuntimeError: boom" and d["diff"]["ops"] == []


def test_huge_patch_is_bounded():
    patch = [{"op": "add", "path": f"/x/{i}", "value": "v" * 100_000} for i in range(5000)]
    out = readable_patch(patch)
    assert (
        len(out["ops"]) == 300 and out["omitted"] == 4700 and all(len(o["value"]) <= 400 for o in out["ops"])
    )


def test_labels():
    assert channel_label("ahp-chat:/0b5f7a9c-aaaa-bbbb-cccc-1234567890ab") == "chat …-1234567890ab"
    assert channel_label("ahp-root://") == "root"
    assert origin_view(None)["label"] == "host" and origin_view({"clientId": "z"})["key"] == "client z"


@pytest.mark.parametrize("weird", WEIRD)
def test_malformed_never_raises(weird):
    t = FakeTransition(
        weird if isinstance(weird, int) and not isinstance(weird, bool) else 1,
        weird,
        weird,
        weird,
        weird,
        weird,
        rejection_reason=weird,
        wall_time=weird if isinstance(weird, float) else 0.0,
    )
    json.dumps(inspector_rows([t], 0, 10, weird))
    json.dumps(transition_detail(t))
    json.dumps(readable_patch(weird))


def test_a_transition_picked_in_the_acp_lane_is_found_in_the_filtered_table():
    """The lane's seq chip selected a transition the table did not scroll to: the browser asks
    ``reveal`` and gets its row in the table as filtered, or ``None`` when it is not shown."""
    from ahp_lab.widgets import TransitionInspector

    src = _log(1000)
    insp = TransitionInspector(src)
    sent: list = []
    insp.send_msg = sent.append
    insp.filters = {"channel": src.chat}  # the odd seqs' transitions, rows 0..499
    for seq in (2, 1, 1000, "3", True, 5000):
        insp._on_custom_msg(insp, {"type": "reveal", "seq": seq})
    assert [(m["seq"], m["index"]) for m in sent if m["type"] == "revealed"] == [
        (2, 0),  # seq 2 is i == 1: the chat's first row
        (1, None),  # a session transition, filtered out
        (1000, 499),  # the last one
        ("3", None),
        (True, None),
        (5000, None),
    ]
    insp.close()
