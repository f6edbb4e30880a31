"""Shared test settings. Keep small: per-area fixtures live next to their tests (e.g. tests/e2e/).

The upstream conformance corpus is found through one setting, :data:`CORPUS_SETTING`
(``AHP_CONFORMANCE_DIR``): a folder holding ``reducers/`` and ``round-trips/``, such as a checkout
of the upstream repository's ``types/test-cases``. Without it, ``../shared/conformance`` beside the
clone is used when present (as in CI). When neither exists, the tests that need the corpus are
skipped with :data:`CORPUS_MISSING` as their reason; everything else runs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# ../shared beside the clone: the AHP spec, conformance material and seeds shared by the project.
SHARED_DIR = REPO_ROOT.parent / "shared"
ARTIFACTS_DIR = REPO_ROOT / "artifacts"  # screenshots and other test output (git-ignored)

CORPUS_SETTING = "AHP_CONFORMANCE_DIR"
#: The benchmark workload generator (``gen_workloads.py``) used by the fuzz-log test.
BENCH_SETTING = "AHP_BENCH_DIR"


def _located(setting: str, default: Path, marker: str) -> Path | None:
    configured = os.environ.get(setting)
    if configured:
        return Path(configured).expanduser().resolve()
    return default if (default / marker).exists() else None


#: The conformance corpus folder, or ``None`` when it is not available.
CORPUS_DIR = _located(CORPUS_SETTING, SHARED_DIR / "conformance", "reducers")
CORPUS_MISSING = (
    f"needs the upstream conformance corpus: set {CORPUS_SETTING} to a folder holding reducers/ and "
    "round-trips/ (e.g. a checkout of the upstream types/test-cases)"
)
#: Marks a test (or a module, as ``pytestmark``) that reads the corpus.
requires_corpus = pytest.mark.skipif(CORPUS_DIR is None, reason=CORPUS_MISSING)

#: The folder holding ``gen_workloads.py``, or ``None``.
BENCH_DIR = _located(BENCH_SETTING, SHARED_DIR / "bench", "gen_workloads.py")
BENCH_MISSING = (
    f"needs the benchmark workload generator: set {BENCH_SETTING} to a folder holding gen_workloads.py"
)


def _positive_int(setting: str, default: int) -> int:
    raw = os.environ.get(setting, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise pytest.UsageError(f"{setting} must be a positive whole number, not {raw!r}")
    return int(raw)


#: ``AHP_HYPOTHESIS_SCALE=N`` runs every property test with N times its examples: a deeper campaign
#: than the suite's default (1), e.g. before touching the reducers.
EXAMPLES_SCALE_SETTING = "AHP_HYPOTHESIS_SCALE"
EXAMPLES_SCALE = _positive_int(EXAMPLES_SCALE_SETTING, 1)


def examples(n: int) -> int:
    """A property test's ``max_examples``: ``n``, times ``AHP_HYPOTHESIS_SCALE``."""
    return n * EXAMPLES_SCALE


#: ``AHP_FUZZ_SEEDS=A-B`` replays the fuzzed logs of seeds A to B (inclusive) instead of 1-8.
FUZZ_SEEDS_SETTING = "AHP_FUZZ_SEEDS"


def fuzz_seeds() -> range:
    raw = os.environ.get(FUZZ_SEEDS_SETTING, "").strip() or "1-8"
    first, sep, last = raw.partition("-")
    if not (sep and first.isdigit() and last.isdigit() and int(first) <= int(last)):
        raise pytest.UsageError(f"{FUZZ_SEEDS_SETTING} must be a range of seeds such as 1-8, not {raw!r}")
    return range(int(first), int(last) + 1)


def corpus_files(kind: str) -> list[Path]:
    """The corpus's ``*.json`` files of ``kind`` (``reducers`` or ``round-trips``), sorted; ``[]`` without it."""
    return sorted((CORPUS_DIR / kind).glob("*.json")) if CORPUS_DIR is not None else []


def pytest_configure(config: pytest.Config) -> None:
    # One folder for what the run leaves behind, removed at its end:
    # - clients persist their id per host under AHP_LAB_STATE_DIR: keep the tests (and the notebook
    #   kernels nbval starts, which inherit the environment) out of the home directory;
    # - the processes the tests start (nbval's kernels, agents, servers) make their temporary files
    #   under TMPDIR. nbval stops a kernel without the shutdown that would run its TemporaryDirectory
    #   finalizers, so a notebook's scratch folder would otherwise stay in /tmp after every run.
    #   (This process keeps the temporary folder it has already resolved.)
    config._ahp_run_dir = run_dir = Path(tempfile.mkdtemp(prefix="ahp-lab-test-"))
    if "AHP_LAB_STATE_DIR" not in os.environ:
        (run_dir / "state").mkdir()
        os.environ["AHP_LAB_STATE_DIR"] = config._ahp_state_dir = str(run_dir / "state")
    config._ahp_tmpdir = os.environ.get("TMPDIR")
    (run_dir / "tmp").mkdir()
    os.environ["TMPDIR"] = str(run_dir / "tmp")
    # addopts names the nbval sanitize file relative to the repo root; make it work from any cwd.
    sanitize = getattr(config.option, "nbval_sanitize_with", None)
    if sanitize and not Path(sanitize).is_absolute() and not Path(sanitize).exists():
        candidate = config.rootpath / sanitize
        if candidate.exists():
            config.option.nbval_sanitize_with = str(candidate)
    configured = os.environ.get(CORPUS_SETTING)
    if configured and not (Path(configured).expanduser() / "reducers").is_dir():
        raise pytest.UsageError(f"{CORPUS_SETTING}={configured} is not a folder holding reducers/")


def pytest_unconfigure(config: pytest.Config) -> None:
    if getattr(config, "_ahp_state_dir", None):
        os.environ.pop("AHP_LAB_STATE_DIR", None)
    run_dir = getattr(config, "_ahp_run_dir", None)
    if run_dir is not None:
        if config._ahp_tmpdir is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = config._ahp_tmpdir
        shutil.rmtree(run_dir, ignore_errors=True)
