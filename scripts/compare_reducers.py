"""Check that this tree's reducers and another checkout's give the same state after every action.

Run: ``python scripts/compare_reducers.py --against DIR [--seeds 1-200] [--cases] [--work DIR]``.

``DIR`` is another checkout of ahp_lab, for example the last version you trust:
``git worktree add /tmp/before main``. Each workload is replayed through both trees' reducers, each
in its own process importing the ``ahp_lab`` of its tree, and the states are compared by a digest of
their JSON (member order ignored, as the fixtures compare). Use it after changing how a reducer is
built rather than what it does (an index, a fast path, a persistent collection): the two trees must
agree on every prefix.

- ``--seeds A-B``: the harness's fuzzed logs (``gen_workloads.py fuzz``), 400 actions of each
  reducer it fuzzes (``chat`` and ``session``) per seed; compared after every action.
- ``--cases``: also the harness's 24 scaling and throughput cases (``bench.py``'s suite, generated
  into ``--work``), compared at 200 evenly spaced actions and the last: the largest states are
  megabytes, too big to serialize after every one of their 10,000 to 1,000,000 actions.

It prints, for each workload that differs, the first checkpoint where the trees disagree, the action
there and what each tree made of it (a digest, or the exception it raised), then a summary. The exit
status is 1 when any workload differs, 2 for a usage error. The workload generator is found through
``AHP_BENCH_DIR``, else ``../shared/bench`` beside the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_reducers as harness  # noqa: E402 - the workloads as the benchmarks generate and cache them

BENCH_DIR = harness.BENCH_DIR
FUZZ_ACTIONS = 400
CASE_CHECKPOINTS = 200

#: The start of both runners below, run in a fresh process whose current folder (first on
#: ``sys.path`` under ``-c``) is a tree: a workload folder, loaded for that tree's reducers.
_LOAD = """
import hashlib, json, sys
import ahp_lab
from ahp_lab.protocol.jsonvalue import to_json
from ahp_lab.reducers import REDUCERS

def load(folder):
    meta = json.load(open(folder + "/meta.json"))
    with open(folder + "/actions.jsonl", encoding="utf-8") as fh:
        actions = [json.loads(line) for line in fh if line.strip()]
    state = json.load(open(folder + "/initial.json"))
    return REDUCERS[meta["reducer"]], meta.get("now_ms", 9999), state, actions
"""

#: argv: EVERY, CHECKPOINTS, FOLDER...; prints where ahp_lab came from and, for each folder,
#: ``[[action index, digest or "raises ..."], ...]``.
_DIGESTS = (
    _LOAD
    + """
every, checkpoints = int(sys.argv[1]), int(sys.argv[2])
out = {"ahp_lab": ahp_lab.__file__, "workloads": []}
for folder in sys.argv[3:]:
    reducer, now_ms, state, actions = load(folder)
    step = every or max(1, len(actions) // checkpoints)
    points = []
    for i, action in enumerate(actions):
        try:
            state = reducer(state, action, now_ms)
        except Exception as exc:
            points.append([i, f"raises {type(exc).__name__}"])
            break
        if i % step == step - 1 or i == len(actions) - 1:
            text = json.dumps(to_json(state), sort_keys=True, ensure_ascii=False)
            points.append([i, hashlib.sha256(text.encode()).hexdigest()[:16]])
    out["workloads"].append(points)
print(json.dumps(out))
"""
)

#: argv: FOLDER, UPTO; prints the state after action UPTO (or the exception's message).
_STATE = (
    _LOAD
    + """
reducer, now_ms, state, actions = load(sys.argv[1])
try:
    for action in actions[: int(sys.argv[2]) + 1]:
        state = reducer(state, action, now_ms)
    print(json.dumps({"state": to_json(state)}))
except Exception as exc:
    print(json.dumps({"raises": f"{type(exc).__name__}: {exc}"}))
"""
)


def _fuzz(work: Path, seeds: range) -> list[Path]:
    jobs = [
        (
            work,
            f"fuzz-{reducer}-{seed}",
            ["fuzz", "--reducer", reducer, "--actions", str(FUZZ_ACTIONS), "--seed", str(seed)],
        )
        for seed in seeds
        for reducer in ("chat", "session")
    ]
    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        return list(pool.map(lambda job: harness._workload(*job), jobs))


def _cases(work: Path) -> list[Path]:
    return [harness._workload(work, name, gen) for name, gen in harness._suite()]


def _in(tree: Path, code: str, *args: str) -> dict:
    """What ``code`` prints (JSON), run with the ``ahp_lab`` of ``tree``."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tree)},
        cwd=tree,
    )
    if done.returncode:
        raise SystemExit(f"replaying with the reducers of {tree} failed:\n{done.stderr.strip()}")
    return json.loads(done.stdout)


def _digests(tree: Path, folders: list[Path], every: int) -> list[list]:
    """Each folder's checkpoints as ``tree``'s reducers reach them."""
    out = _in(tree, _DIGESTS, str(every), str(CASE_CHECKPOINTS), *map(str, folders))
    if not Path(out["ahp_lab"]).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"{tree}: the replay imported ahp_lab from {out['ahp_lab']}, not from that tree")
    return out["workloads"]


def _action(folder: Path, index: int) -> str:
    with open(folder / "actions.jsonl", encoding="utf-8") as fh:
        lines = [line for line in fh if line.strip()]
    text = lines[index].strip()
    return text if len(text) <= 240 else text[:240] + "..."


_ABSENT = object()  # a member one state has and the other has not


def _differences(a: object, b: object, path: str = "", limit: int = 5) -> list[str]:
    """Up to ``limit`` paths where two JSON values differ, each with both values, shortened."""
    if type(a) is dict and type(b) is dict:
        found: list[str] = []
        for k in [*a, *(k for k in b if k not in a)]:
            if len(found) >= limit:
                break
            found += _differences(a.get(k, _ABSENT), b.get(k, _ABSENT), f"{path}.{k}", limit - len(found))
        return found
    if type(a) is list and type(b) is list and len(a) == len(b):
        found = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if len(found) >= limit:
                break
            found += _differences(x, y, f"{path}[{i}]", limit - len(found))
        return found
    if a == b and type(a) is type(b):
        return []

    def short(value: object) -> str:
        text = "(absent)" if value is _ABSENT else json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 100 else text[:100] + "..."

    return [f"{path or '(the state)'}: {short(a)} here, {short(b)} there"]


def _explain(ours: Path, theirs: Path, folder: Path, index: int) -> list[str]:
    """Why the trees' states after action ``index`` differ: the exception, or where they differ."""
    a, b = (_in(tree, _STATE, str(folder), str(index)) for tree in (ours, theirs))
    if "raises" in a or "raises" in b:
        return [f"{tree}: {got.get('raises', 'no exception')}" for tree, got in ((ours, a), (theirs, b))]
    return _differences(a["state"], b["state"])


def compare(ours: Path, theirs: Path, folders: list[Path], every: int) -> int:
    """Print every folder whose checkpoints differ between the trees; return how many differ."""
    with ThreadPoolExecutor(2) as pool:  # the two trees side by side
        mine, other = pool.map(lambda tree: _digests(tree, folders, every), (ours, theirs))
    differ = 0
    for folder, a, b in zip(folders, mine, other, strict=True):
        if a == b:
            continue
        differ += 1
        at = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        x = a[at] if at < len(a) else None
        y = b[at] if at < len(b) else None
        index = min(p[0] for p in (x, y) if p is not None)
        print(f"{folder.name}: the trees differ after action {index}: {_action(folder, index)}")
        for line in _explain(ours, theirs, folder, index):
            print(f"  {line}")
    return differ


def _seeds(text: str) -> range:
    first, sep, last = text.partition("-")
    if not (sep and first.isdigit() and last.isdigit() and int(first) <= int(last)):
        raise argparse.ArgumentTypeError(f"a range of seeds such as 1-200, not {text!r}")
    return range(int(first), int(last) + 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True, type=Path, help="another checkout of ahp_lab")
    parser.add_argument(
        "--seeds", type=_seeds, default=_seeds("1-200"), help="fuzz seeds A-B (default 1-200)"
    )
    parser.add_argument("--cases", action="store_true", help="also the harness's 24 scaling cases")
    parser.add_argument(
        "--work", type=Path, default=Path(tempfile.gettempdir()) / "ahp-bench", help="workload cache"
    )
    args = parser.parse_args(argv)
    if not (args.against / "ahp_lab" / "reducers").is_dir():
        parser.error(f"--against {args.against}: not a checkout of ahp_lab (no ahp_lab/reducers in it)")
    if not (BENCH_DIR / "gen_workloads.py").exists():
        parser.error(
            f"no workload generator at {BENCH_DIR}: set AHP_BENCH_DIR to a folder holding gen_workloads.py"
        )
    args.work.mkdir(parents=True, exist_ok=True)
    fuzzed = _fuzz(args.work, args.seeds)
    differ = compare(ROOT, args.against, fuzzed, every=1)
    compared = len(fuzzed) * FUZZ_ACTIONS
    cases = _cases(args.work) if args.cases else []
    if cases:
        differ += compare(ROOT, args.against, cases, every=0)
    print(
        f"{len(fuzzed)} fuzzed logs ({compared:,} actions, compared after each)"
        + (f" and {len(cases)} harness cases (compared at {CASE_CHECKPOINTS} points each)" if cases else "")
        + f": {differ} differ"
    )
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
