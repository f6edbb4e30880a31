"""Shared test settings. Keep small: per-area fixtures live next to their tests (e.g. tests/e2e/)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# ../shared beside the clone: the AHP spec, conformance material and seeds shared by the project.
SHARED_DIR = REPO_ROOT.parent / "shared"
ARTIFACTS_DIR = REPO_ROOT / "artifacts"  # screenshots and other test output (git-ignored)


def pytest_configure(config: pytest.Config) -> None:
    # addopts names the nbval sanitize file relative to the repo root; make it work from any cwd.
    sanitize = getattr(config.option, "nbval_sanitize_with", None)
    if sanitize and not Path(sanitize).is_absolute() and not Path(sanitize).exists():
        candidate = config.rootpath / sanitize
        if candidate.exists():
            config.option.nbval_sanitize_with = str(candidate)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    assert SHARED_DIR.is_dir(), f"expected the shared folder beside the repo at {SHARED_DIR}"
    return SHARED_DIR
