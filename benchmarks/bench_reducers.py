"""Reducer throughput and how per-action cost grows with the session, plus store history and imports.

Run: ``python benchmarks/bench_reducers.py [--quick] [--rounds N] [--baseline PATH] [--counted]``. Not a test:
machines are noisy, so compare ratios taken in one run. With ``--baseline`` (a checkout of another
version, e.g. ``main``), every case also runs against that code, interleaved in the same rounds, and
the table shows this tree / baseline; multiplied by the baseline's ratio to the reference (README),
that estimates the ratio to the reference on a loaded machine. It prints:

1. **Workloads of the shared harness** (``../shared/bench``, or ``AHP_BENCH_DIR``): the 24 cases of
   ``bench.py``, generated with ``gen_workloads.py`` into a cache folder and replayed in this process
   (cold: first pass over a freshly loaded state, as ``bench.py`` reports). Cases are interleaved over
   ``--rounds`` rounds and the best round is kept, which filters out load from other processes.
2. **Growth ratios** of every family (rate at the largest size / rate at the smallest; 1.0 = flat;
   issue 14 asks for >= 0.8), beside the reference's ratio from ``../shared/bench/README.md``, with
   the lowest and the highest ratio taken within one round: how far the machine's noise moves it.
3. **Store history**: ``state_at(seq)`` on a long streamed log (median ms) and memory per recorded
   transition (bytes, tracemalloc, action objects included).
4. **Imports**: ``import ahp_lab`` and ``python -m ahp_lab.conformance run`` on one fixture, wall time.
5. **What CPython allows**: our ``chat/delta`` beside the least a Python delta reducer can do and
   keep state immutable (the four copies and the text append, no checks, no dispatch), interleaved
   in this process; the one pass over the harness's customization tree that its first lookup
   makes to index it (P=10 and P=1000, fresh processes), and the family's growth with and without
   that pass, then without the time spent in the cyclic collector's passes too; and the whole
   customization log at P=10 and P=1000, ours beside a floor that reduces its customization actions
   by the copies alone (lookups prebuilt, not timed) and the rest by ours, cold in fresh processes,
   with the growth of each, and the growth ours would have if nothing of its own grew with the tree
   but the one pass its index makes over the tree (timed apart).
   Issue 14's notes use all of them.
6. **Growth per action type**: each family's small and large case, cold, timed per action type
   (the timer's cost, some 60 ns, is in both). A family's workloads mix the types differently at
   each size, so this shows which actions grow and which only weigh more. The slowest single
   action at the large size is shown too: a first lookup that indexes a collection once weighs on
   its type's mean.
7. **Counted, not timed** (``--counted``, needs valgrind; some 20 minutes): each family's small
   and large case under cachegrind, with the machine's L1 data cache, L2 and a branch predictor
   simulated: instructions, L1 and L2 data misses and mispredicted branches per action of the
   cold pass, and how many of the L2 misses the cyclic garbage collector adds.
   Counts do not move with the machine's load, so their growth separates work that grows from
   memory that is slower to reach.

For the harness's own numbers run ``python3 ../shared/bench/bench.py --cmd "python -m ahp_lab.conformance"``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from ahp_lab.protocol.text import Text, append_text
from ahp_lab.reducers import REDUCERS, prepared
from ahp_lab.store import Store, agent_origin

HERE = Path(__file__).resolve().parent
BENCH_DIR = Path(os.environ.get("AHP_BENCH_DIR") or HERE.parent.parent / "shared" / "bench")

#: The reference's cold actions/s from ../shared/bench/README.md (V8, same 2-core machine class).
REFERENCE = {
    "stream-100k": 974_273,
    "stream-1M": 859_690,
    "toolcalls-10k": 391_665,
    "customizations-10k": 120_500,
    "customizations-100k": 162_849,
    "fuzz-chat-100k": 511_283,
    "fuzz-session-100k": 601_642,
    "delta@turns=100000": 912_194,
    "delta@content=1000000": 1_265_955,
    "turn@turns=100000": 2_277,
    "toolcalls@1000x10": 375_741,
    "toolcalls@10x1000": 84_938,
    "customizations@P=10": 183_664,
    "customizations@P=1000": 6_587,
}
#: family -> (small case, large case, the reference's large/small ratio)
FAMILIES = {
    "delta, turns 100000 / 10": ("delta@turns=10", "delta@turns=100000", 0.95),
    "delta, content 1M / 10k": ("delta@content=10000", "delta@content=1000000", 1.24),
    "turnComplete, turns 100000 / 10": ("turn@turns=10", "turn@turns=100000", 0.008),
    "tool calls, 10x1000 / 1000x10": ("toolcalls@1000x10", "toolcalls@10x1000", 0.23),
    "customizations, P=1000 / P=10": ("customizations@P=10", "customizations@P=1000", 0.034),
}
#: The customization family's small and large case, which section 5 looks into (first lookup, floor).
CUSTOMIZATION_CASES = FAMILIES["customizations, P=1000 / P=10"][:2]
QUICK = {"stream-100k", "toolcalls-10k", "customizations-10k", "fuzz-chat-100k", "fuzz-session-100k"} | {
    case for pair in FAMILIES.values() for case in pair[:2] if "1000000" not in case
}


def _suite() -> list[tuple[str, list[str]]]:
    sys.path.insert(0, str(BENCH_DIR))
    try:
        import bench  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    return [(name, gen) for name, gen, _group, _what in bench.SUITE]


def _workload(work: Path, name: str, gen: list[str]) -> Path:
    folder = work / name
    stamp = folder / "gen-argv.json"
    if not (stamp.exists() and json.loads(stamp.read_text()) == gen):
        subprocess.run(
            [sys.executable, str(BENCH_DIR / "gen_workloads.py"), *gen, "--out", str(folder)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        stamp.write_text(json.dumps(gen))
    return folder


# The start of every runner below, which :func:`_run` puts before it: the workload in FOLDER (the
# first argument), loaded. Each timed loop then starts as the replay CLI's does (``python -m
# ahp_lab.conformance replay``, which bench.py runs): the loader's garbage collected, the loaded
# state frozen out of the collector.
_LOADED = """
import gc, json, sys, time
from ahp_lab import reducers as _reducers
from ahp_lab.reducers import REDUCERS
folder = sys.argv[1]
meta = json.load(open(folder + "/meta.json"))
# held as the replay holds a loaded state (older checkouts have no prepared: as loaded)
state = getattr(_reducers, "prepared", lambda kind, s: s)(meta["reducer"], json.load(open(folder + "/initial.json")))
actions = [json.loads(line) for line in open(folder + "/actions.jsonl", encoding="utf-8") if line.strip()]
reducer = REDUCERS[meta["reducer"]]
"""


def _run(runner: str, folder: Path, *args: str, code: Path = HERE.parent, under: tuple = ()) -> str:
    """The output of ``runner`` on the workload in ``folder``, in a fresh process with the
    ``ahp_lab`` found at ``code`` (run ``under`` a tool such as valgrind, when given)."""
    out = subprocess.run(  # cwd too: `python -c` puts the current folder first on sys.path
        [*under, sys.executable, "-c", _LOADED + runner, str(folder), *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(code)},
        cwd=code,
    )
    return out.stdout


_RUNNER = """
gc.collect()
gc.freeze()
start = time.perf_counter()
for action in actions:
    state = reducer(state, action, 9999)
print(len(actions) / (time.perf_counter() - start))
"""


_CUSTOMIZATION_RUNNER = """
from ahp_lab.protocol.vector import Vector
mode = sys.argv[2]
kinds = ("session/customizationToggled", "session/customizationUpdated", "session/mcpServerStateChanged",
         "session/mcpServerStartRequested", "session/mcpServerStopRequested")
top, kids = {}, {}  # the floor's lookups by id (the log appends containers and removes none)


def indexed(i, entry):
    top.setdefault(entry["id"], i)
    if entry.get("type") != "mcpServer":
        for j, child in enumerate(entry.get("children") or ()):
            kids.setdefault(child["id"], i << 16 | j)  # an int: no tuple for the collector to track


tree = state["customizations"]
if mode == "floor":  # its lookups, prebuilt (not timed); ours reads a tree nothing has read since loading
    n = 0
    for entry in tree:
        indexed(n, entry)
        n += 1
    for action in actions:
        if action["type"] == kinds[1] and action["customization"]["id"] not in top:
            indexed(n, action["customization"])
            n += 1
state = {**state, "customizations": Vector.of(tree)}
gc.collect()
gc.freeze()
first = 0.0
if mode == "ours":  # its one pass over the tree, which indexes it: timed apart
    start = time.perf_counter()
    missing = {"type": kinds[0], "id": "(in no customization)", "enabled": True}
    state = reducer(state, missing, 9999)  # changes nothing, but reads the whole tree once
    first = time.perf_counter() - start
passes = []  # the cyclic collector's passes during the run: [start, end] times
gc.callbacks.append(lambda phase, info: passes.append(time.perf_counter()))
start = time.perf_counter()
for action in actions:
    kind = action["type"]
    if mode == "ours" or kind not in kinds:
        state = reducer(state, action, 9999)
        continue
    # the copies that immutability needs for the customization actions, and nothing else
    tree = state["customizations"]
    if kind == "session/customizationUpdated":
        i = top[action["customization"]["id"]]
        entry = action["customization"]
    else:
        if kind == "session/customizationToggled":
            change = {"enabled": action["enabled"]}
        elif kind == "session/mcpServerStateChanged":
            change = {"state": action["state"], "channel": action.get("channel")}
        else:
            change = {"state": {"kind": "starting" if kind.endswith("StartRequested") else "stopped"}}
        i = top.get(action["id"])
        if i is not None:
            entry = {**tree[i], **change}
        else:
            found = kids.get(action["id"])
            if found is None or found >> 16 >= len(tree):
                continue
            i, j = found >> 16, found & 0xFFFF
            entry = tree[i]
            children = entry["children"].copy()
            children[j] = {**children[j], **change}
            entry = {**entry, "children": children}
    tree = tree.replaced(i, entry, same_keys=True) if i < len(tree) else tree.appended(entry)
    state = {**state, "customizations": tree}
rest = time.perf_counter() - start
collector = sum(passes[1::2]) - sum(passes[0::2])
print(json.dumps([first, rest, collector, len(actions)]))
"""


def _customization_runs(folders: dict[str, Path], rounds: int) -> dict[tuple[str, str], list] | None:
    """The harness's customization log at P=10 and P=1000, cold in fresh processes, through ours
    and through a floor: every customization action reduced by the copies alone, found in dicts of
    every id prebuilt and not timed, and the rest by ours. Our first lookup (its one pass over the
    tree, to index it) and the cyclic collector's passes (``gc.callbacks``) are timed apart.

    ``{(case, mode): [first lookup, rest, collector in the rest, actions]}``: the first lookup's
    best, the rest and its collector from the round whose rest was the best."""
    cases = CUSTOMIZATION_CASES
    if not all(case in folders for case in cases):
        return None
    best: dict[tuple[str, str], list] = {}
    for _ in range(rounds):
        for case in cases:
            for mode in ("ours", "floor"):
                run = json.loads(_run(_CUSTOMIZATION_RUNNER, folders[case], mode))
                known = best.get((case, mode))
                if known is None or run[1] < known[1]:
                    best[case, mode] = [min(run[0], known[0]) if known else run[0], *run[1:]]
                else:
                    known[0] = min(run[0], known[0])
    return best


def _first_lookup(runs: dict[tuple[str, str], list]) -> None:
    """Our first lookup at P=10 and P=1000, and the family's growth with and without it, then
    without the collector's passes too."""
    (first_s, rest_s, gc_s, _), (first_l, rest_l, gc_l, n) = (
        runs[case, "ours"] for case in CUSTOMIZATION_CASES
    )
    print(
        f"  first lookup in the customization tree (indexes it, once)  P=10 {first_s * 1e3:5.2f} ms,"
        f" P=1000 {first_l * 1e3:5.2f} ms ({first_l / n * 1e6:.2f} us per action of its {n:,}-action run)"
    )
    print(
        f"  customizations P=1000 / P=10 after that first lookup: growth {rest_s / rest_l:.2f}"
        f" (with it, as the harness times: {(first_s + rest_s) / (first_l + rest_l):.2f})"
    )
    print(
        f"  ... of which the cyclic collector's passes   P=10 {gc_s * 1e3:5.2f} ms, P=1000 {gc_l * 1e3:5.2f} ms;"
        f" without them: growth {(rest_s - gc_s) / (rest_l - gc_l):.2f}"
    )


def _tree_floor(runs: dict[tuple[str, str], list]) -> None:
    """Ours beside the floor. Any index reads the whole tree once, as ours does on its first
    lookup: ours could grow no less than the floor plus that pass do, with the rest of its own
    work as at P=10."""
    (first_s, rest_s, _, _), (first_l, rest_l, _, _), (_, floor_s, _, _), (_, floor_l, _, _) = (
        runs[case, mode] for mode in ("ours", "floor") for case in CUSTOMIZATION_CASES
    )
    ours_s, ours_l = first_s + rest_s, first_l + rest_l
    for what, small, large in (
        ("ours", ours_s, ours_l),
        ("the copies alone (lookups prebuilt)", floor_s, floor_l),
        ("ours, had nothing grown but those and its pass", ours_s, floor_l + first_l + rest_s - floor_s),
    ):
        print(
            f"  customizations family, {what:<47} P=10 {small * 1e3:5.1f} ms, P=1000 {large * 1e3:5.1f} ms,"
            f" growth {small / large:.2f}"
        )


_TYPES_RUNNER = """
gc.collect()
gc.freeze()
clock = time.perf_counter_ns
spent, counts, slowest = {}, {}, [None, 0]
for action in actions:
    start = clock()
    state = reducer(state, action, 9999)
    took = clock() - start
    kind = action["type"]
    spent[kind] = spent.get(kind, 0) + took
    counts[kind] = counts.get(kind, 0) + 1
    if took > slowest[1]:
        slowest = [kind, took]
types = {kind: [spent[kind] / counts[kind], counts[kind]] for kind in spent}
print(json.dumps({"types": types, "slowest": slowest}))
"""


def growth_by_type(folders: dict[str, Path], rounds: int) -> None:
    """Each family's growth per action type: the families' workloads mix their types differently
    at each size, so the family's total compares mixes as well as sizes."""
    print("\n6. growth per action type (cold ns per action at the small and large size, best of rounds;")
    print("   growth = small cost / large cost, as in section 2: 1.0 = flat, goal >= 0.8)")
    for family, (small, large, _ref) in FAMILIES.items():
        if small not in folders or large not in folders:
            continue
        best: dict[str, dict[str, list[float]]] = {small: {}, large: {}}
        slowest: list = [None, float("inf")]  # the large size's slowest single action, best of rounds
        for _ in range(rounds):
            for case in (small, large):
                timed = json.loads(_run(_TYPES_RUNNER, folders[case]))
                for kind, (cost, count) in timed["types"].items():
                    known = best[case].get(kind)
                    best[case][kind] = [min(cost, known[0]) if known else cost, count]
                if case == large and timed["slowest"][1] < slowest[1]:
                    slowest = timed["slowest"]
        print(f"  {family}")
        at_large = sum(cost * count for cost, count in best[large].values())
        for kind, (cost, count) in sorted(best[large].items(), key=lambda item: -item[1][0] * item[1][1]):
            was = best[small].get(kind)
            if was is None or min(count, was[1]) < 100:
                continue
            print(
                f"    {kind:<32} {was[0]:8.0f} {cost:8.0f} ns  growth {was[0] / cost:5.2f}"
                f"  ({count:,} actions, {100 * cost * count / at_large:4.1f}% of the time at the large size)"
            )
        print(
            f"    the slowest single action at the large size: {slowest[0]}, {slowest[1] / 1e6:.2f} ms"
            f" ({100 * slowest[1] / at_large:.1f}% of the time; in its type's cost above)"
        )


_PASS_RUNNER = """
import os
mode = sys.argv[2]
gc.collect()
gc.freeze()
if mode == "without-gc":
    gc.disable()
if mode != "load":
    for action in actions:
        state = reducer(state, action, 9999)
# Leave without the interpreter's shutdown: its last collection traverses every container the pass
# left in the state, which is not the pass's work (it doubled the misses counted at P=1000).
sys.stdout.flush()
os._exit(0)
"""
#: Section 7 skips a case with more actions than this: under valgrind it would take many minutes.
_SIMULATED_MAX = 200_000


#: A count in cachegrind's summary ("==pid== I   refs:   1,234"); LLd is the simulated L2 here.
_COUNT = re.compile(r"==\d+== (I +refs|D1 +misses|LLd misses|Mispredicts): +([\d,]+)")


def _cache(index: int, default: tuple[int, int]) -> tuple[int, int]:
    """This machine's cache ``index`` (0: L1 data, 2: L2) as (bytes, ways), as Linux reports it;
    ``default`` when it does not."""
    cache = Path(f"/sys/devices/system/cpu/cpu0/cache/index{index}")
    try:
        size = (cache / "size").read_text().strip()
        ways = int((cache / "ways_of_associativity").read_text())
        return int(size.rstrip("K")) * 1024 if size.endswith("K") else int(size), ways
    except (OSError, ValueError):
        return default


def _simulated(folder: Path, mode: str, l1: tuple[int, int], l2: tuple[int, int]) -> dict[str, int]:
    """Instructions, data reads and writes missing the L1 and the L2, and mispredicted branches of
    the process, under cachegrind. Its branch predictor is simpler than a real one, so its
    mispredictions are a relative measure: an interpreter mispredicts more when the bytecode it
    runs changes often."""
    with tempfile.NamedTemporaryFile("r", suffix=".log") as log:
        tool = (
            # one hash seed: the run without the pass then loads exactly as the run with it, so
            # their difference is the pass (a 100,000-turn load varies by more than the pass)
            "env",
            "PYTHONHASHSEED=0",
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=yes",
            "--branch-sim=yes",
            f"--D1={l1[0]},{l1[1]},64",
            f"--LL={l2[0]},{l2[1]},64",
        )
        _run(
            _PASS_RUNNER,
            folder,
            mode,
            under=(*tool, "--cachegrind-out-file=/dev/null", f"--log-file={log.name}"),
        )
        text = log.read()
    return {" ".join(name.split()): int(n.replace(",", "")) for name, n in _COUNT.findall(text)}


def simulated(folders: dict[str, Path]) -> None:
    """Each family's small and large case under cachegrind: instructions and misses per action.

    Counted, not timed, so the noise of the machine does not reach them. A pass's counts are the
    process's with the pass less the process's without it (the same loading in both); the run
    with the cyclic garbage collector disabled shows the L2 misses that the collector's
    traversals of the pass's new containers add. An L1 miss that the L2 serves costs a few
    nanoseconds, an L2 miss tens: a family whose instructions are flat can still grow in time
    through either.
    """
    if shutil.which("valgrind") is None:
        print("\n7. (valgrind is not installed: no counted section)")
        return
    l1, l2 = _cache(0, (32 * 1024, 8)), _cache(2, (512 * 1024, 8))
    print(
        f"\n7. counted under cachegrind, per action of the cold pass (L1 data simulated as {l1[0] // 1024} KiB,"
        f" {l1[1]}-way; L2 as {l2[0] // 1024} KiB, {l2[1]}-way);"
    )
    print("   growth = small count / large count, as in section 2: 1.0 = flat")
    print(
        f"  {'case':<24} {'instructions':>12} {'L1 misses':>10} {'L2 misses':>10} {'of them, GC':>12}"
        f" {'mispredicts':>12}"
    )
    kinds = ("I refs", "D1 misses", "LLd misses", "Mispredicts")
    for family, (small, large, _ref) in FAMILIES.items():
        if small not in folders or large not in folders:
            continue
        sizes = {
            case: json.loads((folders[case] / "meta.json").read_text())["actions"] for case in (small, large)
        }
        if max(sizes.values()) > _SIMULATED_MAX:
            print(f"  {family}: skipped, {max(sizes.values()):,} actions take too long under valgrind")
            continue
        per_action = {}
        for case in (small, large):
            base = _simulated(folders[case], "load", l1, l2)
            full = _simulated(folders[case], "pass", l1, l2)
            without_gc = _simulated(folders[case], "without-gc", l1, l2)
            n = sizes[case]
            counts = {kind: (full[kind] - base[kind]) / n for kind in kinds}
            counts["GC"] = (full["LLd misses"] - without_gc["LLd misses"]) / n
            per_action[case] = counts
            print(
                f"  {case:<24} {counts['I refs']:12,.0f} {counts['D1 misses']:10,.1f}"
                f" {counts['LLd misses']:10,.1f} {counts['GC']:12,.1f} {counts['Mispredicts']:12,.1f}"
            )
        s, g = per_action[small], per_action[large]
        growth = {kind: s[kind] / max(g[kind], 1e-9) for kind in kinds}
        print(
            f"  {family}: instruction growth {growth['I refs']:.2f}, L1-miss growth {growth['D1 misses']:.2f},"
            f" L2-miss growth {growth['LLd misses']:.2f}, misprediction growth {growth['Mispredicts']:.2f}"
        )


def _cold_rate_of(code: Path, folder: Path) -> float:
    """:func:`_cold_rate` with the ``ahp_lab`` found at ``code``, in a fresh process."""
    return float(_run(_RUNNER, folder, code=code))


def _cold_rate(folder: Path) -> float:
    """Actions/s of one pass over a freshly loaded state (as bench.py's cold figure)."""
    meta = json.loads((folder / "meta.json").read_text())
    initial = prepared(meta["reducer"], json.loads((folder / "initial.json").read_text()))
    with open(folder / "actions.jsonl", encoding="utf-8") as fh:
        actions = [json.loads(line) for line in fh if line.strip()]
    reducer = REDUCERS[meta["reducer"]]
    gc.collect()
    gc.freeze()
    state = initial
    start = time.perf_counter()
    for action in actions:
        state = reducer(state, action, 9999)
    rate = len(actions) / (time.perf_counter() - start)
    gc.unfreeze()  # this process goes on to the next case
    return rate


def workloads(args) -> dict[str, Path]:
    """Generate (or reuse) the harness's workloads, print sections 1 and 2, and return the folders."""
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    cases = [(n, g) for n, g in _suite() if not args.quick or n in QUICK]
    folders = {name: _workload(work, name, gen) for name, gen in cases}
    best: dict[str, float] = {}
    base: dict[str, float] = {}
    rounds: dict[str, list[float]] = {name: [] for name in folders}  # every round's rate, for the spread
    here = HERE.parent
    for _ in range(args.rounds):  # interleaved: a burst of load hits every case a little
        for name in folders:
            if args.baseline:
                base[name] = max(base.get(name, 0.0), _cold_rate_of(Path(args.baseline), folders[name]))
                rate = _cold_rate_of(here, folders[name])
            else:
                rate = _cold_rate(folders[name])
            rounds[name].append(rate)
            best[name] = max(best.get(name, 0.0), rate)
    print(f"\n1. workloads of the shared harness (cold actions/s, best of {args.rounds} interleaved rounds)")
    head = f"  {'case':<24} {'ahp_lab':>12} {'reference':>12} {'ratio':>7}"
    print(head + (f" {'baseline':>12} {'/baseline':>10}" if base else ""))
    for name, rate in best.items():
        ref = REFERENCE.get(name)
        line = f"  {name:<24} {rate:12,.0f} " + (f"{ref:12,} {rate / ref:7.2f}" if ref else f"{'':12} {'':7}")
        if base:
            line += f" {base[name]:12,.0f} {rate / base[name]:10.2f}"
        print(line)
    print("\n2. growth ratios (rate at the largest size / at the smallest; 1.0 = flat; goal >= 0.8);")
    print("   the best rates' ratio, and the lowest and highest ratio within one round (the machine's noise)")
    print(
        f"  {'family':<34} {'ahp_lab':>8} {'in a round':>11} {'reference':>10}"
        + (f" {'baseline':>9}" if base else "")
    )
    for family, (small, large, ref) in FAMILIES.items():
        if small in best and large in best:
            within = [b / a for a, b in zip(rounds[small], rounds[large], strict=True)]
            spread = f"{min(within):.2f}-{max(within):.2f}"
            line = f"  {family:<34} {best[large] / best[small]:8.2f} {spread:>11} {ref:10.3f}"
            print(line + (f" {base[large] / base[small]:9.3f}" if base else ""))
    return folders


def store_history(quick: bool) -> None:
    n = 100_000 if quick else 1_000_000
    chat = "ahp-chat:/bench"
    clock = iter(range(1_000, 10**12))
    store = Store(lambda: next(clock))
    store.add_channel(
        chat, "chat", {"resource": chat, "title": "t", "status": 1, "modifiedAt": "m", "turns": []}
    )
    origin = agent_origin("bench")
    user = {"text": "hi", "origin": {"kind": "user"}}
    store.apply(chat, {"type": "chat/turnStarted", "turnId": "t", "startedAt": "s", "message": user}, origin)
    store.apply(
        chat,
        {"type": "chat/responsePart", "turnId": "t", "part": {"kind": "markdown", "id": "p", "content": ""}},
        origin,
    )
    words = ["tok", "en ", "s a", "re ", "str", "eam", "ed "]
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(n):  # each action a fresh dict with its own content string, as an agent makes them
        store.apply(
            chat,
            {"type": "chat/delta", "turnId": "t", "partId": "p", "content": words[i % 7] + str(i % 10)},
            origin,
        )
    per_transition = (tracemalloc.get_traced_memory()[0] - before) / n
    tracemalloc.stop()
    seqs = [store.first_seq + (i * 7919) % (n - 1) for i in range(1, 41)]
    times = []
    for seq in seqs:
        start = time.perf_counter()
        store.state_at(seq)
        times.append(time.perf_counter() - start)
    print(f"\n3. store history over {n:,} streamed chat/delta transitions")
    print(
        f"  state_at(seq), median of {len(seqs)} random seqs: {1e3 * statistics.median(times):8.2f} ms (goal < 50)"
    )
    print(f"  memory per recorded transition:            {per_transition:8.0f} bytes (goal <= 300)")


def imports() -> None:
    def wall(cmd: list[str]) -> float:
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            best = min(best, time.perf_counter() - start)
        return best

    with tempfile.TemporaryDirectory() as folder:
        fixture = {
            "description": "one",
            "reducer": "root",
            "initial": {"agents": [], "activeSessions": 0},
            "actions": [{"type": "root/activeSessionsChanged", "activeSessions": 1}],
            "expected": {"agents": [], "activeSessions": 1},
        }
        Path(folder, "one.json").write_text(json.dumps(fixture))
        run = wall([sys.executable, "-m", "ahp_lab.conformance", "run", folder])
    print("\n4. imports and start-up (best of 5, wall seconds)")
    print(f"  python -c 'pass'                               {wall([sys.executable, '-c', 'pass']):6.3f}")
    print(
        f"  python -c 'import ahp_lab'                     {wall([sys.executable, '-c', 'import ahp_lab']):6.3f} (goal < 0.25)"
    )
    print(
        f"  python -c 'from ahp_lab import Lab'            {wall([sys.executable, '-c', 'from ahp_lab import Lab']):6.3f}"
    )
    print(f"  python -m ahp_lab.conformance run (1 fixture)  {run:6.3f} (goal < 0.3)")


def _copy_only_delta(state: dict, action: dict, now_ms: int = 0) -> dict:
    """The least a Python ``chat/delta`` can do and keep state immutable: no checks, no dispatch."""
    active = state["activeTurn"]
    parts = active["responseParts"]
    part = parts[0]
    new_part = part.copy()
    content = part["content"]
    more = action["content"]
    new_part["content"] = content.append(more) if type(content) is Text else append_text(content, more)
    new_parts = parts.copy()
    new_parts[0] = new_part
    turn = active.copy()
    turn["responseParts"] = new_parts
    out = state.copy()
    out["activeTurn"] = turn
    return out


def limits(quick: bool, folders: dict[str, Path], rounds: int) -> None:
    n = 20_000 if quick else 1_000_000  # as many as delta@content=1000000
    chat = REDUCERS["chat"]
    # A chat laid out like the harness's (its keys, one streaming turn) and actions parsed from JSON
    # one by one, as the replay CLI reads them.
    state: dict = {
        "resource": "ahp-chat:/bench",
        "title": "Benchmark chat",
        "status": 1,
        "modifiedAt": "2026-08-01T00:00:00.000Z",
        "origin": {"kind": "new"},
        "interactivity": "full",
        "turns": [],
    }
    state = chat(
        state, {"type": "chat/turnStarted", "turnId": "t", "startedAt": "s", "message": {"text": "x"}}
    )
    state = chat(
        state,
        {"type": "chat/responsePart", "turnId": "t", "part": {"kind": "markdown", "id": "m", "content": ""}},
    )
    line = '{{"type": "chat/delta", "turnId": "t", "partId": "m", "content": "w{:02d} "}}'
    actions = [json.loads(line.format(i % 97)) for i in range(n)]
    best = {"ours": float("inf"), "copy_only": float("inf")}
    for _ in range(5):  # interleaved rounds, best kept
        for name, reducer in (("ours", chat), ("copy_only", _copy_only_delta)):
            current = state
            start = time.perf_counter()
            for action in actions:
                current = reducer(current, action, 9999)
            best[name] = min(best[name], (time.perf_counter() - start) / n)
    print("\n5. what CPython allows (in this process)")
    print(f"  chat/delta, ours (checks and dispatch)        {best['ours'] * 1e9:6.0f} ns per delta")
    print(f"  chat/delta, copies and append only            {best['copy_only'] * 1e9:6.0f} ns per delta")
    for case in ("delta@turns=100000", "delta@content=1000000"):
        print(f"  the reference at {case:<24}     {1e9 / REFERENCE[case]:6.0f} ns per delta")
    runs = _customization_runs(folders, rounds)
    if runs is not None:
        _first_lookup(runs)
        _tree_floor(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer and smaller cases (smoke run)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per case (best kept)")
    parser.add_argument(
        "--baseline", help="a checkout of another ahp_lab version to compare with, interleaved"
    )
    parser.add_argument(
        "--work", default=os.path.join(tempfile.gettempdir(), "ahp-bench"), help="workload cache"
    )
    parser.add_argument(
        "--counted", action="store_true", help="add section 7, counted under valgrind (some 20 minutes)"
    )
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    folders: dict[str, Path] = {}
    if (BENCH_DIR / "gen_workloads.py").exists():
        folders = workloads(args)
    else:
        print(f"(no workload generator at {BENCH_DIR}: set AHP_BENCH_DIR to run sections 1 and 2)")
    store_history(args.quick)
    imports()
    limits(args.quick, folders, args.rounds)
    growth_by_type(folders, args.rounds)
    if args.counted:
        simulated(folders)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
