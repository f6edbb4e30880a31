"""Customization resolution and watch latency.

Run: ``python benchmarks/bench_customizations.py [--skills 200] [--rounds 20]``. Reports:

* resolving an Open Plugins folder with N skills (``resolve_plugin`` over the disk, best and
  median of several runs), and the same through a whole lab: ``Lab.open`` until the plugin's
  ``load`` is ``loaded`` in the notebook client's view;
* one watcher poll of that plugin when nothing changed (what the host pays every 0.2 s);
* watch latency: a new ``SKILL.md`` written into a watched directory until the client sees the
  skill in the tree (``session/customizationUpdated``), and a removed one until it is gone.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from ahp_lab.host.customizations import DiskSource, resolve_plugin
from ahp_lab.lab import Lab


def make_plugin(root: Path, skills: int) -> Path:
    plugin = root / "big-plugin"
    (plugin / ".plugin").mkdir(parents=True)
    (plugin / ".plugin/plugin.json").write_text('{"name": "big-plugin", "version": "1.0.0"}')
    for i in range(skills):
        d = plugin / "skills" / f"skill-{i:04d}"
        d.mkdir(parents=True)
        (d / "SKILL.md").write_text(
            f"---\nname: skill-{i:04d}\ndescription: Skill number {i} does one small thing well.\n"
            f"disable-model-invocation: {str(i % 2 == 0).lower()}\n---\n\n" + "Step.\n" * 20
        )
    return plugin


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f} ms"


def bench_resolve(plugin: Path, runs: int = 7) -> tuple[float, float, int]:
    times = []
    children = 0
    for _ in range(runs):
        start = time.perf_counter()
        res = resolve_plugin(DiskSource(plugin), plugin.name)
        times.append(time.perf_counter() - start)
        children = len(res.children)
    return min(times), statistics.median(times), children


def bench_poll(plugin: Path, runs: int = 20) -> float:
    src = DiskSource(plugin)
    resolve_plugin(src, plugin.name)
    start = time.perf_counter()
    for _ in range(runs):
        assert not src.changed()
    return (time.perf_counter() - start) / runs


async def bench_lab_load(plugin: Path) -> float:
    warm = await Lab.open()  # first-use imports are not part of the measure
    await warm.aclose()
    start = time.perf_counter()
    lab = await Lab.open(plugins=[plugin])

    def loaded(s):
        for e in (s or {}).get("customizations") or ():
            if (e.get("load") or {}).get("kind") == "loaded":
                return e
        return None

    await lab.client.wait_for(lab.session, loaded, timeout=60)
    elapsed = time.perf_counter() - start
    await lab.aclose()
    return elapsed


async def bench_watch(root: Path, rounds: int) -> tuple[list[float], list[float]]:
    watched = root / "watched"
    lab = await Lab.open(directories=[{"path": watched, "contents": "skill"}])

    def names(s):
        for e in (s or {}).get("customizations") or ():
            if e.get("type") == "directory":
                return {c["name"] for c in e.get("children") or ()}
        return set()

    await lab.client.wait_for(
        lab.session, lambda s: "children" in (s or {}).get("customizations", [{}])[0] or None, timeout=10
    )
    appear, vanish = [], []
    for i in range(rounds):
        name = f"new-{i}"
        folder = watched / name
        start = time.perf_counter()
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: fresh\n---\nbody\n")
        await lab.client.wait_for(lab.session, lambda s, n=name: n in names(s) or None, timeout=10)
        appear.append(time.perf_counter() - start)
        start = time.perf_counter()
        shutil.rmtree(folder)
        await lab.client.wait_for(lab.session, lambda s, n=name: n not in names(s) or None, timeout=10)
        vanish.append(time.perf_counter() - start)
    await lab.aclose()
    return appear, vanish


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        plugin = make_plugin(root, args.skills)
        best, median, children = bench_resolve(plugin)
        poll = bench_poll(plugin)
        lab_load = asyncio.run(bench_lab_load(plugin))
        appear, vanish = asyncio.run(bench_watch(root, args.rounds))
    print(f"{'measure':58} {'value':>12}")
    print("-" * 71)
    print(f"{f'resolve a plugin with {args.skills} skills (best)':58} {ms(best):>12}")
    print(f"{f'resolve a plugin with {args.skills} skills (median of 7)':58} {ms(median):>12}")
    print(f"{'  children resolved':58} {children:>12}")
    print(f"{'Lab.open until that plugin is loaded in the client view':58} {ms(lab_load):>12}")
    print(f"{'one watcher poll of that plugin, nothing changed':58} {ms(poll):>12}")
    print(
        f"{f'new SKILL.md until it shows in the tree (median of {args.rounds})':58} {ms(statistics.median(appear)):>12}"
    )
    print(f"{'new SKILL.md until it shows in the tree (max)':58} {ms(max(appear)):>12}")
    print(f"{'removed skill until it leaves the tree (median)':58} {ms(statistics.median(vanish)):>12}")
    print(f"{'removed skill until it leaves the tree (max)':58} {ms(max(vanish)):>12}")


if __name__ == "__main__":
    main()
