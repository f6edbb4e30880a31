"""Loading the upstream conformance fixtures in place (they are never copied into the repo)."""

from __future__ import annotations

import json
from functools import cache

from ..conftest import corpus_files


@cache
def reducer_fixtures() -> tuple[tuple[str, dict], ...]:
    """``(file name, fixture)`` for every reducer fixture of the corpus; empty without the corpus."""
    return tuple((p.name, json.loads(p.read_text(encoding="utf-8"))) for p in corpus_files("reducers"))
