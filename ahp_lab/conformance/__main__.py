"""Command line: ``python -m ahp_lab.conformance run DIR [--json]`` and ``... replay ...``.

``run DIR`` runs every reducer or round-trip fixture found under DIR, prints one line per failure
with the first differing path, then ``N passed, M failed``; ``--json`` prints
``{"passed": N, "failed": M, "failures": [names]}`` instead. Exit status 0 only when all pass.

``replay --reducer KIND --initial FILE --actions FILE.jsonl [--now-ms N] [--repeat R]`` applies
the actions in order, R times from the same initial state, prints the final state as JSON on
stdout (absent members omitted) and, as the last line on stderr,
``{"actions": n, "seconds": s, "actions_per_s": r, "per_run_seconds": [...], "max_rss_mb": m}``
where ``n`` is the number of actions applied over all runs, ``seconds`` sums the per-run reduce
loops only (no file reading, parsing or output) and ``max_rss_mb`` is the process's peak resident
memory. Exit status: 0 on success, 2 for usage errors, 3 when a reducer raised, with
``{"error", "index", "type"}`` (the message, the action's 0-based index and its type) as the last
stderr line: where the reference's reducers throw (reading a member of ``null``, an array method of
what is not an array), which the host's reducers take for a no-op, the replay stops. The state is
written in ``JSON.stringify``'s form: no spaces between members, numbers as JavaScript writes them.
Its values are the reference's; the order of an object's members may differ (compare parsed).

JSON is read as JavaScript's ``JSON.parse`` reads it: an integer beyond 2^53 becomes the nearest
double, as the reference holds it. In the actions' log, only ``\\n`` ends a line and only JSON's
whitespace pads one.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import resource
import sys
import time
from pathlib import Path

from ..protocol.jsonvalue import dumps, strip_nulls, utf8_json
from ..reducers import REDUCERS, prepared
from . import FIXTURE_NOW_MS, run_dir


def _cmd_run(args: argparse.Namespace) -> int:
    directory = Path(args.dir)
    if not directory.is_dir():
        print(f"error: {directory} is not a directory", file=sys.stderr)
        return 2
    report = run_dir(directory)
    if args.json:
        print(json.dumps({"passed": report.passed, "failed": report.failed, "failures": report.failures}))
    else:
        for result in report.results:
            if not result.passed:
                # a detail may quote a lone surrogate, which a UTF-8 stdout cannot print
                print(
                    f"FAIL {result.name}: {result.detail}".encode("utf-8", "backslashreplace").decode("utf-8")
                )
        print(f"{report.passed} passed, {report.failed} failed")
    if not report.results:
        print(f"error: {directory} holds no reducer or round-trip fixture (*.json)", file=sys.stderr)
    return 0 if report.failed == 0 and report.results else 1


_LONG_NUMBER = re.compile(r"\d{16}")  # the shortest run of digits that can exceed 2^53
_SAFE = 2**53


def _js_int(text: str) -> int | float:
    """An integer as ``JSON.parse`` reads it: beyond 2^53, the double nearest to it (written back
    as JavaScript writes that double: ``12345678901234567000``, ``1.2345678901234569e+23``)."""
    value = int(text)
    return value if -_SAFE <= value <= _SAFE else float(text)


#: The recursion limit the CLI reads and reduces with: the reference's reader and reducers take
#: some 1,200 levels of nesting.
_DEPTH = 5_000
#: The recursion limit it writes the final state with (a state 2,500 levels deep, which the
#: reference writes, overflowed the writer at 5,000).
_WRITE_DEPTH = 12_000


def _js_text(x: float) -> str:
    """``x`` as JavaScript's ``Number.prototype.toString`` writes it (ECMA-262 Number::toString):
    the same shortest digits as Python's ``repr``, placed differently (``1e-7`` for ``1e-07``,
    ``0.00001`` for ``1e-05``, ``1152921504606847000`` for ``1.152921504606847e+18``)."""
    if x == 0:
        return "0"
    mantissa, _, power = repr(abs(x)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    n = int(power or 0) - len(fraction) + len(digits)  # x = 0.digits × 10^n
    s = digits.rstrip("0")
    k = len(s)
    minus = "-" if x < 0 else ""
    if k <= n <= 21:
        return minus + s + "0" * (n - k)
    if 0 < n <= 21:
        return minus + s[:n] + "." + s[n:]
    if -6 < n <= 0:
        return minus + "0." + "0" * -n + s
    e = n - 1
    return f"{minus}{s if k == 1 else s[0] + '.' + s[1:]}e{'+' if e >= 0 else '-'}{abs(e)}"


def _js_numbers(value: object, marker: str, texts: dict[str, str]) -> object:
    """``value`` with each float as ``JSON.stringify`` writes it: a whole one below 1e21 as an int
    (``1500`` for ``1500.0``, ``0`` for ``-0.0``), any other whose text differs from Python's as a
    string ``marker`` + a number, which ``texts`` maps (quoted) to the text that replaces it."""
    if type(value) is float:
        text = _js_text(value)
        if text.lstrip("-").isdigit():
            return int(text)
        if text == repr(value):
            return value
        placeholder = f"{marker}{len(texts)}"
        texts[json.dumps(placeholder)] = text
        return placeholder
    if type(value) is dict:
        keys = sorted(value, key=_index_first) if any(k[:1].isdigit() for k in value) else value
        return {k: _js_numbers(value[k], marker, texts) for k in keys}
    if type(value) is list:
        return [_js_numbers(v, marker, texts) for v in value]
    return value


def _index_first(name: str) -> tuple[int, int]:
    """The order JavaScript gives an object's keys: array indices (``"0"``, ``"17"``: canonical
    integers below 2^32 - 1) first, ascending, then the others as they came (a stable sort)."""
    if name.isdigit() and (name == "0" or name[0] != "0") and int(name) < 0xFFFFFFFF:
        return (0, int(name))
    return (1, 0)


def _written(state: object) -> str:
    """The final state in ``JSON.stringify``'s form (its member order aside), numbers included."""
    texts: dict[str, str] = {}
    marker = f"\x00{os.urandom(16).hex()}:"  # new to each run: no string in the state holds it
    text = dumps(_js_numbers(strip_nulls(state), marker, texts), separators=(",", ":"))
    for quoted, number in texts.items():
        text = text.replace(quoted, number)
    return utf8_json(text)


def _why(exc: BaseException) -> str:
    return f"nested deeper than {_DEPTH:,} levels" if isinstance(exc, RecursionError) else str(exc)


def _not_json(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _loads(text: str) -> object:
    """``json.loads`` as ``JSON.parse`` reads: integers beyond 2^53 rounded to a double, and
    ``NaN``/``Infinity`` refused (Python's reader takes them)."""
    if _LONG_NUMBER.search(text):
        return json.loads(text, parse_int=_js_int, parse_constant=_not_json)
    return json.loads(text, parse_constant=_not_json)


def _read_actions(path: Path) -> list:
    """The log's actions, one JSON text per line as JSON Lines has them: only ``\\n`` ends a line,
    and only JSON's own whitespace (space, tab, CR, LF) pads one, as ``JSON.parse`` reads it (a line
    padded with a no-break space was read, and one with a bare CR between its tokens refused)."""
    actions = []
    with path.open(encoding="utf-8", newline="\n") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.strip(" \t\r\n")
            if not line:
                continue
            try:
                actions.append(_loads(line))
            except ValueError as exc:
                raise ValueError(f"line {lineno} is not JSON ({exc})") from None
    return actions


def _cmd_replay(args: argparse.Namespace) -> int:
    reducer = getattr(REDUCERS.get(args.reducer), "raising", None)  # it stops where the reference throws
    if reducer is None:
        print(
            f"error: unknown reducer {args.reducer!r}; expected one of {', '.join(REDUCERS)}", file=sys.stderr
        )
        return 2
    try:
        initial = _loads(Path(args.initial).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        print(f"error: cannot read initial state {args.initial}: {_why(exc)}", file=sys.stderr)
        return 2
    try:
        actions = _read_actions(Path(args.actions))
    except (OSError, ValueError, RecursionError) as exc:
        print(f"error: cannot read actions {args.actions}: {_why(exc)}", file=sys.stderr)
        return 2
    if args.repeat < 1:
        print("error: --repeat must be at least 1", file=sys.stderr)
        return 2
    initial = prepared(args.reducer, initial)  # as loading a state holds it (indexed), untimed
    now_ms = args.now_ms
    # The loaded state and actions live until the end: collect the loader's garbage and move them
    # out of the collector's view, so that a collection during the timed loop traverses only what
    # the reducers made (a 100,000-turn state is a million objects).
    gc.collect()
    gc.freeze()
    per_run: list[float] = []
    state = initial
    for _ in range(args.repeat):
        state = initial
        start = time.perf_counter()
        try:
            for action in actions:
                state = reducer(state, action, now_ms)
        except Exception as exc:  # the contract: report which action broke the reducer, exit 3
            index = next(i for i, a in enumerate(actions) if a is action)
            kind = action.get("type") if isinstance(action, dict) else None
            print(
                json.dumps({"error": f"{type(exc).__name__}: {exc}", "index": index, "type": kind}),
                file=sys.stderr,
            )
            return 3
        per_run.append(time.perf_counter() - start)
    # Written with more stack than the reducers ran with: the reference writes a state deeper than
    # its reducers' own recursion takes (its `+` throws at some 1,200 levels of arrays).
    sys.setrecursionlimit(_WRITE_DEPTH)
    try:
        text = _written(state)
    except RecursionError:
        print(f"error: the final state is nested deeper than {_WRITE_DEPTH:,} levels", file=sys.stderr)
        return 2
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    total_actions = len(actions) * args.repeat
    seconds = sum(per_run)
    stats = {
        "actions": total_actions,
        "seconds": seconds,
        "actions_per_s": (total_actions / seconds) if seconds > 0 else None,
        "per_run_seconds": per_run,
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,  # Linux reports KiB
    }
    print(json.dumps(stats), file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    called = os.path.basename(sys.argv[0])  # the console script, or this module run with -m
    parser = argparse.ArgumentParser(
        prog="python -m ahp_lab.conformance" if called == "__main__.py" else called or None,
        description="Run AHP conformance fixtures, or replay actions through a reducer.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{run,replay}")
    run = sub.add_parser("run", help="run every reducer / round-trip fixture in DIR")
    run.add_argument("dir", help="a folder of fixtures (searched recursively)")
    run.add_argument("--json", action="store_true", help="print a JSON summary instead of text")
    run.set_defaults(func=_cmd_run)
    replay = sub.add_parser("replay", help="apply a JSON Lines file of actions to an initial state")
    replay.add_argument("--reducer", required=True, choices=sorted(REDUCERS))
    replay.add_argument("--initial", required=True, help="JSON file with the initial channel state")
    replay.add_argument("--actions", required=True, help="JSON Lines file, one action per line")
    replay.add_argument(
        "--now-ms", type=int, default=FIXTURE_NOW_MS, help="the injected clock (default 9999)"
    )
    replay.add_argument("--repeat", type=int, default=1, help="replay R times from the same initial state")
    replay.set_defaults(func=_cmd_replay)
    args = parser.parse_args(argv)
    # deep JSON (the reference's reader and reducers take thousands of levels) within Python's stack
    sys.setrecursionlimit(max(sys.getrecursionlimit(), _DEPTH))
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
