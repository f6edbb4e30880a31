"""The benchmark's fuzzed logs (``gen_workloads.py fuzz``, many seeds) replay cleanly at every prefix.

Replaying must never raise, every prefix state must stay valid for the protocol's state schema, and
the states must not depend on whether collections are kept as plain lists or as Vectors.
Skipped, with a reason naming the setting, when the generator is not available.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ahp_lab.protocol import validate_state
from ahp_lab.protocol.jsonvalue import to_json
from ahp_lab.reducers import REDUCERS

from ..conftest import BENCH_DIR, BENCH_MISSING, fuzz_seeds
from .test_differential import _agree

pytestmark = pytest.mark.skipif(BENCH_DIR is None, reason=BENCH_MISSING)
SEEDS = fuzz_seeds()


def _workload(tmp_path, reducer: str, seed: int) -> tuple[dict, list[dict]]:
    out = tmp_path / f"{reducer}-{seed}"
    subprocess.run(
        [
            sys.executable,
            str(BENCH_DIR / "gen_workloads.py"),
            "fuzz",
            "--reducer",
            reducer,
            "--actions",
            "400",
            "--seed",
            str(seed),
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    initial = json.loads((out / "initial.json").read_text())
    actions = [json.loads(line) for line in (out / "actions.jsonl").read_text().splitlines() if line.strip()]
    return initial, actions


@pytest.mark.parametrize("reducer", ["chat", "session"])
@pytest.mark.parametrize("seed", SEEDS)
def test_every_prefix_of_a_fuzzed_log_reduces_to_a_schema_valid_state(tmp_path, reducer, seed):
    initial, actions = _workload(tmp_path, reducer, seed)
    state = initial
    validate_state(reducer, to_json(state))
    for index, action in enumerate(actions):
        state = REDUCERS[reducer](state, action, 9999)
        try:
            validate_state(reducer, to_json(state))
        except Exception as exc:  # name the action that broke the schema
            raise AssertionError(f"seed {seed}, action {index} ({action.get('type')}): {exc}") from exc


@pytest.mark.parametrize("reducer", ["chat", "session"])
@pytest.mark.parametrize("seed", SEEDS)
def test_fuzzed_logs_reduce_alike_with_plain_lists_and_with_vectors(tmp_path, reducer, seed):
    initial, actions = _workload(tmp_path, reducer, seed)
    _agree(reducer, initial, actions)
