"""Conformance fixture runner: reducer fixtures and wire round-trip fixtures.

Reducer fixtures are ``{description, reducer, initial, actions, expected}``; they run with the
clock frozen at ``now_ms=9999`` and compare with ``null`` treated as absent. Round-trip fixtures
are ``{name, type, input, acceptableOutputs, preservedOutput?}``; they decode then re-encode and
compare key-presence sensitively. ``python -m ahp_lab.conformance --help`` is the command line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..protocol.jsonvalue import strip_nulls
from ..reducers import FIXTURE_NOW_MS, REDUCERS

__all__ = [
    "FIXTURE_NOW_MS",
    "CaseResult",
    "Report",
    "first_difference",
    "fixture_kind",
    "run_reducer_fixture",
    "run_roundtrip_fixture",
    "run_fixture",
    "run_dir",
]


@dataclass
class CaseResult:
    name: str
    passed: bool
    detail: str = ""


@dataclass
class Report:
    results: list[CaseResult] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def failed(self) -> int:
        return sum(not r.passed for r in self.results)

    @property
    def failures(self) -> list[str]:
        return [r.name for r in self.results if not r.passed]


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def first_difference(actual: Any, expected: Any, path: str = "$") -> str | None:
    """The JSON path of the first place ``actual`` and ``expected`` differ, with both values; else ``None``.

    Object key order is irrelevant and numbers compare numerically (``0 == 0.0``). Callers strip
    nulls first when null means absent.
    """
    if isinstance(actual, dict) and isinstance(expected, dict):
        for key in sorted(set(actual) | set(expected)):
            sub = f"{path}.{key}"
            if key not in actual:
                return f"{sub}: missing, expected {_short(expected[key])}"
            if key not in expected:
                return f"{sub}: unexpected {_short(actual[key])}"
            diff = first_difference(actual[key], expected[key], sub)
            if diff:
                return diff
        return None
    if isinstance(actual, list) and isinstance(expected, list):
        for i, (a, e) in enumerate(zip(actual, expected, strict=False)):
            diff = first_difference(a, e, f"{path}[{i}]")
            if diff:
                return diff
        if len(actual) != len(expected):
            return f"{path}: length {len(actual)}, expected {len(expected)}"
        return None
    if _is_number(actual) and _is_number(expected):
        return None if actual == expected else f"{path}: {_short(actual)}, expected {_short(expected)}"
    if type(actual) is not type(expected) or actual != expected:
        return f"{path}: {_short(actual)}, expected {_short(expected)}"
    return None


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(strip_nulls(value), ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def fixture_kind(fixture: Any) -> str | None:
    """``"reducer"``, ``"roundtrip"`` or ``None`` for a file that is neither."""
    if isinstance(fixture, dict):
        if {"reducer", "initial", "actions", "expected"} <= fixture.keys():
            return "reducer"
        if {"type", "input", "acceptableOutputs"} <= fixture.keys():
            return "roundtrip"
    return None


def run_reducer_fixture(fixture: dict, name: str = "") -> CaseResult:
    kind = fixture["reducer"]
    reducer = REDUCERS.get(kind)
    if reducer is None:
        return CaseResult(name, False, f"unknown reducer {kind!r}")
    state = fixture["initial"]
    for action in fixture["actions"]:
        state = reducer(state, action, FIXTURE_NOW_MS)
    diff = first_difference(strip_nulls(state), strip_nulls(fixture["expected"]))
    return CaseResult(name, diff is None, diff or "")


def run_roundtrip_fixture(fixture: dict, name: str = "") -> CaseResult:
    from ..protocol import roundtrip  # the wire layer; imported lazily so reducer runs stay light

    try:
        out = roundtrip(fixture["type"], fixture["input"])
    except Exception as exc:  # a decoding failure is a failed case, reported with its reason
        return CaseResult(name, False, f"decode failed: {exc}")
    # Unknown keys on known types are preserved by ahp_lab, so group B compares preservedOutput.
    expected = fixture["preservedOutput"] if fixture.get("group") == "B" else fixture["acceptableOutputs"][0]
    diff = first_difference(out, expected)
    return CaseResult(name, diff is None, diff or "")


def run_fixture(fixture: Any, name: str = "") -> CaseResult:
    kind = fixture_kind(fixture)
    if kind == "reducer":
        return run_reducer_fixture(fixture, name)
    if kind == "roundtrip":
        return run_roundtrip_fixture(fixture, name)
    return CaseResult(name, False, "not a reducer or round-trip fixture")


def iter_fixture_files(directory: Path) -> Iterable[Path]:
    return sorted(p for p in Path(directory).rglob("*.json") if p.is_file())


def run_dir(directory: str | Path) -> Report:
    """Run every fixture file under ``directory`` (sorted by path)."""
    directory = Path(directory)
    report = Report()
    for path in iter_fixture_files(directory):
        name = str(path.relative_to(directory))
        try:
            fixture = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            report.results.append(CaseResult(name, False, f"unreadable fixture: {exc}"))
            continue
        report.results.append(run_fixture(fixture, name))
    return report
