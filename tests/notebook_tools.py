"""Notebook helpers shared by the notebook tests: ``nbtools`` is ``scripts/normalize_notebooks.py``
as a module (normalize, execute, compare)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

_spec = importlib.util.spec_from_file_location(
    "normalize_notebooks", REPO_ROOT / "scripts" / "normalize_notebooks.py"
)
nbtools = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nbtools)

NOTEBOOKS = nbtools.notebooks()
