"""Loading the shared conformance fixtures in place (they are never copied into the repo)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
REDUCER_FIXTURES = SHARED / "conformance" / "reducers"
ROUNDTRIP_FIXTURES = SHARED / "conformance" / "round-trips"


@cache
def reducer_fixtures() -> tuple[tuple[str, dict], ...]:
    paths = sorted(REDUCER_FIXTURES.glob("*.json"))
    assert paths, f"no reducer fixtures found in {REDUCER_FIXTURES}"
    return tuple((p.name, json.loads(p.read_text(encoding="utf-8"))) for p in paths)
