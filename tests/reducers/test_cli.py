"""``python -m ahp_lab.conformance``: the replay contract the benchmark harness reads, on real files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ahp_lab.conformance.__main__ import _js_text


def _replay(tmp_path, initial, actions, *extra, reducer="chat"):
    (tmp_path / "initial.json").write_text(json.dumps(initial))
    lines = (a if isinstance(a, str) else json.dumps(a) for a in actions)
    (tmp_path / "actions.jsonl").write_text("".join(line + "\n" for line in lines))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "ahp_lab.conformance",
            "replay",
            "--reducer",
            reducer,
            "--initial",
            str(tmp_path / "initial.json"),
            "--actions",
            str(tmp_path / "actions.jsonl"),
            *extra,
        ],
        capture_output=True,
        text=True,
    )


CHAT = {"resource": "ahp-chat:/c", "title": "t", "status": 1, "modifiedAt": "m", "turns": []}
START = {
    "type": "chat/turnStarted",
    "turnId": "t1",
    "startedAt": "s",
    "message": {"text": "hi", "origin": {"kind": "user"}},
}
PART = {"type": "chat/responsePart", "turnId": "t1", "part": {"kind": "markdown", "id": "p", "content": ""}}


def test_replay_prints_the_final_state_and_a_timing_line(tmp_path):
    deltas = [{"type": "chat/delta", "turnId": "t1", "partId": "p", "content": c} for c in ("Hel", "lo")]
    out = _replay(tmp_path, CHAT, [START, PART, *deltas], "--repeat", "2")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["activeTurn"]["responseParts"][0]["content"] == "Hello"
    timing = json.loads(out.stderr.strip().splitlines()[-1])
    assert timing["actions"] == 8 and len(timing["per_run_seconds"]) == 2
    assert timing["seconds"] > 0 and timing["max_rss_mb"] > 1


def test_numbers_are_read_as_javascript_reads_them(tmp_path):
    # JSON.parse holds 9007199254740993 as the double 9007199254740992: so does the replay
    out = _replay(tmp_path, CHAT, ['{"type": "chat/activityChanged", "activity": 9007199254740993}'])
    assert out.returncode == 0, out.stderr
    assert '"activity":9007199254740992' in out.stdout
    small = _replay(tmp_path, CHAT, ['{"type": "chat/activityChanged", "activity": "id 12345678901234567"}'])
    assert json.loads(small.stdout)["activity"] == "id 12345678901234567"  # digits in a string stay


def test_the_final_state_is_written_as_json_stringify_writes_it(tmp_path):
    """Integer keys first, ascending, as a JavaScript object holds them; an integer beyond 2^53 as
    the double JSON.parse made of it, written as JavaScript writes that double. Keys came as they
    were inserted, and 12345678901234567890 as 12345678901234567168 (reducer hunt round 9)."""
    numbers = "[12345678901234567890, 123456789012345678901234]"
    actions = [
        '{"type": "chat/activityChanged", "activity": {"b": 1, "10": 2, "a": 3, "2": 4, "01": '
        + numbers
        + "}}"
    ]
    out = _replay(tmp_path, CHAT, actions)
    assert out.returncode == 0, out.stderr
    written = '"activity":{"2":4,"10":2,"b":1,"a":3,"01":[12345678901234567000,1.2345678901234569e+23]}'
    assert written in out.stdout


def test_a_reducer_that_raises_exits_3_naming_the_action(tmp_path):
    # content nested 3,000 arrays deep (the reference takes some 1,200): turning it into a string, as
    # JavaScript's + would, recurses past the stack, and the reducer raises instead of returning a state
    nested = "[" * 3000 + "]" * 3000
    bad = '{"type": "chat/delta", "turnId": "t1", "partId": "p", "content": ' + nested + "}"
    out = _replay(tmp_path, CHAT, [START, PART, bad])
    assert out.returncode == 3, out.stderr[-500:]
    report = json.loads(out.stderr.strip().splitlines()[-1])
    assert report["index"] == 2 and report["type"] == "chat/delta" and "Recursion" in report["error"]


def test_the_replay_stops_where_the_reference_throws(tmp_path):
    """The reducers take an action the reference throws on (reading a member of null) for a no-op,
    as a host must; the replay printed a state and exit 0, and went on to the next actions, where
    the reference stops with exit 3 (a reducer divergence hunt)."""
    chat = {
        **CHAT,
        "activeTurn": {"id": "t1", "startedAt": "s", "message": START["message"], "responseParts": [None]},
    }
    out = _replay(tmp_path, chat, [{"type": "chat/turnComplete", "turnId": "t1"}])
    assert out.returncode == 3 and out.stdout == "", out.stderr[-300:]
    report = json.loads(out.stderr.strip().splitlines()[-1])
    assert report == {
        "error": "TypeError: cannot read 'kind' of null",
        "index": 0,
        "type": "chat/turnComplete",
    }
    session = {"provider": "p", "title": "t", "status": 1, "lifecycle": "ready", "activeClients": [],
               "chats": [], "customizations": [None, {"type": "plugin", "id": "a", "enabled": True}]}  # fmt: skip
    toggle = {"type": "session/customizationToggled", "id": "zz", "enabled": False}
    out = _replay(
        tmp_path, session, [toggle, {"type": "session/titleChanged", "title": "after"}], reducer="session"
    )
    assert out.returncode == 3 and json.loads(out.stderr.strip().splitlines()[-1])["index"] == 0


def test_a_null_action_or_a_null_state_stops_the_replay_where_the_reference_throws(tmp_path):
    """A ``null`` action (the reference reads its type), and an action that reads a member of a
    ``null`` state or takes one out of it: the replay went on with exit 0 (reducer hunt 13). An
    action that only spreads a ``null`` state reads nothing of it, there as here."""
    out = _replay(tmp_path, CHAT, [{"type": "chat/draftChanged", "draft": "d"}, "null"])
    assert out.returncode == 3, out.stderr[-300:]
    assert json.loads(out.stderr.strip().splitlines()[-1]) == {
        "error": "TypeError: Cannot read properties of null (reading 'type')",
        "index": 1,
        "type": None,
    }
    for reducer, action in [
        ("root", {"type": "root/configChanged", "config": {"a": 1}}),
        ("chat", {"type": "chat/delta", "turnId": "t", "partId": "p", "content": "x"}),
        ("changeset", {"type": "changeset/statusChanged", "status": "ready"}),  # its error taken out
        ("session", {"type": "session/changesetsChanged", "changesets": []}),
    ]:
        out = _replay(tmp_path, None, [action], reducer=reducer)
        assert out.returncode == 3, (action, out.stderr[-300:])
    for reducer, action, state in [
        ("chat", {"type": "chat/draftChanged", "draft": "d"}, {"draft": "d"}),
        ("changeset", {"type": "changeset/statusChanged", "status": "error"}, {"status": "error"}),
        ("session", {"type": "session/customizationsChanged", "customizations": []}, {"customizations": []}),
    ]:
        out = _replay(tmp_path, None, [action], reducer=reducer)
        assert out.returncode == 0 and json.loads(out.stdout) == state, (action, out.stderr[-300:])


@pytest.mark.parametrize(
    ("line", "read"),
    [
        ('{"type":"chat/draftChanged","draft":"a"}\u00a0', False),  # a no-break space after it
        ('{"type":"chat/draftChanged","draft":"a"}\x1c', False),
        ('\u2028{"type":"chat/draftChanged","draft":"a"}', False),
        ('{"type":"chat/draftChanged","draft":"a"}\f', False),
        ('{"type":\r"chat/draftChanged","draft":"a"}', True),  # a bare CR is JSON's whitespace
        ('\t{"type":"chat/draftChanged","draft":"a"}\r', True),
    ],
)
def test_the_log_is_read_as_json_lines_and_json_parse_read_it(tmp_path, line, read):
    """Only ``\\n`` ends a line, and only JSON's whitespace pads one: the reader stripped any
    whitespace Python knows and split lines at a bare CR, so it read lines ``JSON.parse`` refuses
    and refused one it reads (reducer hunt 13)."""
    (tmp_path / "initial.json").write_text(json.dumps(CHAT))
    (tmp_path / "actions.jsonl").write_bytes((line + "\n").encode())
    command = [sys.executable, "-m", "ahp_lab.conformance", "replay", "--reducer", "chat", "--initial",
               str(tmp_path / "initial.json"), "--actions", str(tmp_path / "actions.jsonl")]  # fmt: skip
    out = subprocess.run(command, capture_output=True, text=True)
    assert (out.returncode == 0) is read, out.stderr[-300:]
    if not read:
        assert out.returncode == 2 and "line 1 is not JSON" in out.stderr


def test_usage_errors_exit_2(tmp_path):
    out = _replay(tmp_path, CHAT, [START], "--repeat", "0")
    assert out.returncode == 2 and "--repeat" in out.stderr
    out = _replay(tmp_path, CHAT, [START, "{not json"])  # exited 1 (a reducer divergence hunt)
    assert out.returncode == 2 and "line 2 is not JSON" in out.stderr
    deep = '{"type": "chat/draftChanged", "draft": ' + "[" * 100_000 + "]" * 100_000 + "}"
    out = _replay(tmp_path, CHAT, [deep])  # a RecursionError traceback, exit 1
    assert out.returncode == 2 and "nested deeper than" in out.stderr and "Traceback" not in out.stderr


def test_a_state_2500_levels_deep_is_written_as_the_reference_writes_it(tmp_path):
    """The state was reduced, then writing it overflowed Python's stack (exit 1, a traceback);
    the reference reads and writes the same value."""
    deep = "[" * 2500 + "]" * 2500
    out = _replay(tmp_path, CHAT, ['{"type": "chat/draftChanged", "draft": ' + deep + "}"])
    assert out.returncode == 0, out.stderr
    assert f'"draft":{deep}' in out.stdout


def test_what_only_a_javascript_reader_and_writer_would_do_is_done_as_there(tmp_path):
    """Found by a differential audit at scale: the two halves of a character appended apart are
    one character in JavaScript's strings (Python's output failed to encode them); a lone half is
    written escaped; NaN is not JSON; deep input the reference takes (600 levels) does not blow
    Python's stack; a state that is not an object reads as its spread."""
    halves = [
        {"type": "chat/delta", "turnId": "t1", "partId": "p", "content": c} for c in ("\ud83d", "\ude00")
    ]
    out = _replay(tmp_path, CHAT, [START, PART, *halves])
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["activeTurn"]["responseParts"][0]["content"] == "😀"
    lone = _replay(tmp_path, CHAT, [START, PART, halves[0]])
    assert lone.returncode == 0 and '"\\ud83d"' in lone.stdout

    (tmp_path / "nan.json").write_text('{"status": NaN}')
    refused = _replay(tmp_path, CHAT, [])  # writes initial.json; then read nan.json instead
    refused = subprocess.run(
        [sys.executable, "-m", "ahp_lab.conformance", "replay", "--reducer", "chat", "--initial",
         str(tmp_path / "nan.json"), "--actions", str(tmp_path / "actions.jsonl")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert refused.returncode == 2 and "NaN is not JSON" in refused.stderr

    deep = {"type": "chat/draftChanged", "draft": {"text": "d", "_meta": json.loads("[" * 600 + "]" * 600)}}
    out = _replay(tmp_path, CHAT, [deep])
    assert out.returncode == 0, out.stderr[-300:]

    spread = _replay(tmp_path, ["a", "b"], [{"type": "chat/activityChanged", "activity": "x"}])
    assert json.loads(spread.stdout) == {"0": "a", "1": "b", "activity": "x"}


def test_whole_numbers_are_written_as_javascript_writes_them(tmp_path):
    """``1500.0`` was written as Python writes it, where ``JSON.stringify`` writes ``1500`` (and
    ``0`` for ``-0.0``, ``10000000000000000`` for ``1e16``): equal values, different text (a
    reducer divergence hunt)."""
    usage = {
        "type": "chat/usage",
        "turnId": "t1",
        "usage": {"inputTokens": 1500.0, "outputTokens": -0.0, "cost": 1e16, "x": 0.5},
    }
    out = _replay(tmp_path, CHAT, [START, usage])
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert (
        '"inputTokens":1500,' in text and '"outputTokens":0,' in text and '"cost":10000000000000000' in text
    )
    assert '"x":0.5' in text


def test_every_number_is_written_as_javascript_writes_it(tmp_path):
    """The digits of ``repr`` placed as ``JSON.stringify`` places them: ``1e-05`` was written where
    the reference writes ``0.00001``, ``1e-07`` for ``1e-7``, and 2^60 as its exact integer
    ``1152921504606846976`` where the reference writes ``1152921504606847000``."""
    usage = {
        "type": "chat/usage",
        "turnId": "t1",
        "usage": {"a": 1e-05, "b": -1e-07, "c": 2.0**60, "d": 1.5e300, "e": "\u0000 1e-05", "f": 0.001},
    }
    out = _replay(tmp_path, CHAT, [START, usage])
    assert out.returncode == 0, out.stderr
    written = out.stdout[out.stdout.index('"usage"') :]
    assert written.startswith(
        '"usage":{"a":0.00001,"b":-1e-7,"c":1152921504606847000,"d":1.5e+300,"e":"\\u0000 1e-05","f":0.001}'
    ), written[:200]


@settings(max_examples=15, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=300))
def test_number_text_agrees_with_javascript(numbers):
    """``_js_text`` against ``String(x)`` in Node, for any double (the reference's writer)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("needs Node.js (node) on PATH, to compare with JavaScript's own text")
    numbers += [10.0**e for e in range(-8, 23)] + [2.0**e for e in range(50, 70)]
    source = "for (const x of JSON.parse(require('fs').readFileSync(0, 'utf8'))) console.log(String(x))"
    out = subprocess.run([node, "-e", source], input=json.dumps(numbers), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert [_js_text(x) for x in numbers] == out.stdout.split()
