"""The raw wire view model: rows of every frame, filters, truncation, the selected frame's JSON."""

from __future__ import annotations

import json

from ahp_lab.transport.tap import KEPT_CHARS, FrameLog
from ahp_lab.widgets.wire import MAX_ROWS, PREVIEW_CHARS, WireView, wire_view_model


class Sink:
    """The other end of a transport: just collects what is sent."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.receiver = None

    def send(self, text: str) -> None:
        self.sent.append(text)

    def set_receiver(self, receiver, on_close) -> None:
        self.receiver = receiver

    def close(self) -> None:
        pass


def _log() -> tuple[FrameLog, list]:
    log = FrameLog(clock=lambda: 1_700_000_000.0)
    sink = Sink()
    tapped = log.wrap(sink)
    got: list[str] = []
    tapped.set_receiver(got.append, lambda: None)
    tapped.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientId": "x"}}))
    sink.receiver(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "0.8.0"}}))
    big = "é" * 10_000
    sink.receiver(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "method": "action",
                "params": {
                    "channel": "ahp-chat:/c",
                    "action": {"type": "chat/delta", "content": big},
                    "serverSeq": 9,
                },
            }
        )
    )
    sink.receiver("{not json\x1b[31m")
    tapped.send(
        json.dumps({"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "no such method"}})
    )
    return log, got


def test_the_tap_passes_everything_through_and_records_both_directions():
    log, got = _log()
    assert len(got) == 3  # the receiver still got every frame it was sent
    rows = wire_view_model(log.frames)["rows"]
    assert [(r["direction"], r["kind"], r["method"], r["id"]) for r in rows] == [
        ("out", "request", "initialize", 1),
        ("in", "result", None, 1),
        ("in", "notification", "action chat/delta", None),
        ("in", "invalid", None, None),
        ("out", "error", None, 2),
    ]
    assert rows[4]["error"] == "no such method"


def test_large_frames_are_cut_in_the_list_and_whole_in_the_detail():
    log, _ = _log()
    model = wire_view_model(log.frames, selected=3)
    row = model["rows"][2]
    assert row["truncated"] and len(row["preview"]) <= PREVIEW_CHARS and row["size"] > 10_000
    detail = model["detail"]
    assert detail["n"] == 3 and '"chat/delta"' in detail["json"]["text"]
    assert detail["json"]["length"] > 10_000
    # control characters from the peer never reach the view
    assert "\x1b" not in wire_view_model(log.frames, selected=4)["detail"]["json"]["text"]
    assert "\x1b" not in model["rows"][3]["preview"]


def test_filters_by_direction_text_and_connection():
    log, _ = _log()
    assert [r["n"] for r in wire_view_model(log.frames, direction="out")["rows"]] == [1, 5]
    assert [r["n"] for r in wire_view_model(log.frames, text="DELTA")["rows"]] == [3]
    assert [r["n"] for r in wire_view_model(log.frames, text="error")["rows"]] == [5]
    assert wire_view_model(log.frames, connection=2)["rows"] == []
    assert wire_view_model(log.frames, selected=99)["detail"] == {"missing": 99}


def test_the_log_is_bounded_and_the_rows_are_windowed():
    log = FrameLog(capacity=500)
    tapped = log.wrap(Sink())
    for i in range(1200):
        tapped.send(json.dumps({"jsonrpc": "2.0", "method": "dispatchAction", "params": {"clientSeq": i}}))
    assert len(log) == 500 and log.count == 1200
    model = wire_view_model(log.frames)
    assert model["total"] == 500 and len(model["rows"]) == MAX_ROWS
    assert model["rows"][-1]["n"] == 1200  # the newest frames are shown


def test_the_widget_follows_the_log_and_its_filters():
    log, _ = _log()
    view = WireView(log, get_loop=lambda: None)  # no loop: every new frame refreshes at once
    assert view.model["matched"] == 5
    view.direction = "in"
    assert view.model["matched"] == 3
    log.wrap(Sink()).send('{"jsonrpc":"2.0","method":"ping","id":7}')
    assert view.model["total"] == 6 and view.model["connections"] == [1, 2]
    view.selected = 1
    assert view.model["detail"]["method"] == "initialize"
    assert "frames" in repr(view)
    view.close()


def test_large_frames_push_the_oldest_out_so_the_log_keeps_at_most_its_characters():
    """A peer sending 300 frames of 100,000 characters: each is kept cut to its first KEPT_CHARS,
    and all of them together to max_chars, the newest always kept whole up to that cut."""
    log = FrameLog(max_chars=1_000_000)
    tapped = log.wrap(Sink())
    tapped.send(json.dumps({"jsonrpc": "2.0", "method": "initialize", "id": 1}))
    for i in range(300):
        tapped.send(
            json.dumps(
                {"jsonrpc": "2.0", "method": "dispatchAction", "params": {"n": i, "blob": "x" * 100_000}}
            )
        )
    frames = log.frames
    assert log.count == 301
    assert sum(len(f.text) for f in frames) <= 1_000_000
    assert len(frames) == 1_000_000 // KEPT_CHARS  # the newest that fit
    assert frames[-1].n == 301 and frames[-1].size > 100_000 and frames[-1].truncated
    assert frames[-1].info()["method"] == "dispatchAction"


def test_older_frames_than_a_page_holds_are_reached_page_by_page():
    """The view said "495 of 495" but listed only the newest 200, and the handshake could only be
    found by filtering (the first-hour user, round 54): the header names the page, and Older /
    Newer / Newest page through every frame the log holds."""
    log = FrameLog(capacity=1000)
    tapped = log.wrap(Sink())
    for i in range(450):
        tapped.send(json.dumps({"jsonrpc": "2.0", "method": "dispatchAction", "params": {"clientSeq": i}}))
    view = WireView(log, get_loop=lambda: None)
    seen = [row["n"] for row in view.model["rows"]]
    assert view.model["newest"] and (view.model["first"], view.model["last"], view.model["matched"]) == (
        251,
        450,
        450,
    )
    while view.model["older"] is not None:
        view.before = view.model["older"]
        seen = [row["n"] for row in view.model["rows"]] + seen
    assert seen == list(range(1, 451)) and view.model["first"] == 1  # every frame, once, in order
    assert len(view.model["rows"]) == 50 and not view.model["newest"]
    tapped.send('{"jsonrpc":"2.0","method":"ping","id":7}')  # an older page stays where it is
    assert [row["n"] for row in view.model["rows"]] == list(range(1, 51))
    view.before = view.model["newer"]
    assert (view.model["first"], view.model["last"]) == (51, 250) and not view.model["newest"]
    view.before = view.model["newer"]
    assert (view.model["first"], view.model["last"]) == (251, 450) and view.model["newer"] is None
    view.before = view.model["newer"]  # the newest page again, which follows the log
    assert view.model["newest"] and view.model["rows"][-1]["n"] == 451
    view.text_filter = "ping"
    view.before = 100  # a page of what the filter matches
    assert view.model["matched"] == 1 and view.model["rows"] == [] and view.model["newer"] is None
    view.close()
