"""What the hardening costs and whether the host's event loop stays responsive (issue 9).

Run: ``python benchmarks/bench_security.py [--skills 20000] [--updates 10000] [--actions 20000]``.
Prints one table per measurement:

* **loop stalls**: a heartbeat task ticks every 5 ms on the kernel's loop while (a) a plugin
  folder with N skills loads (with the default ``max_folder_files`` and with the limit raised
  so all N are resolved), then is watched for a few seconds (its CPU share is reported), and
  (b) a client tool streams M ``ctx.update`` calls. The longest gap between ticks, minus the
  5 ms, is the longest stall (goal: under 100 ms);
* **YAML peak RSS**: a fresh process resolves the issue's 200 KB agent file (50,000 aliases to
  a 4 KB string), and one under the size limit with 12,000 aliases, beside a process resolving
  an ordinary plugin and one loading the 12,000-alias file without the caps; peak RSS of each
  process, the peak memory the resolution itself allocated (tracemalloc), and the ratio;
* **validation and redaction cost**: per action, the unvalidated path (``store.apply``) against
  the redacting host path (``host.dispatch``) and the validating client path
  (``dispatch_from_client``: limits, protocol model, host rules), with their parts alone;
  ratios are taken in one run (the machine is shared and noisy).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from ahp_lab import Lab
from ahp_lab.agents.scripted import call
from ahp_lab.host.redaction import Redactor
from ahp_lab.protocol import validate_action
from ahp_lab.protocol.limits import DEFAULT_LIMITS, check_json

TICK = 0.005


class Heartbeat:
    """Ticks every 5 ms; ``stall`` is the longest extra delay between two ticks.

    CPython's full (generation 2) garbage collections are recorded too: ``gc_pause`` is the
    longest, and ``host_stall`` the longest stall with the collector's time taken out, i.e. what
    the host's own steps cost.
    """

    def __init__(self) -> None:
        self.stall = 0.0
        self.host_stall = 0.0
        self.gc_pause = 0.0
        self._gc_started = 0.0
        self._collections: list[tuple[float, float]] = []
        self._task: asyncio.Task | None = None

    def _on_gc(self, phase: str, info: dict) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            end = time.perf_counter()
            self._collections.append((self._gc_started, end))
            self.gc_pause = max(self.gc_pause, end - self._gc_started)

    async def _run(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(TICK)
            now = time.perf_counter()
            gap = now - last - TICK
            collecting = sum(min(e, now) - max(b, last) for b, e in self._collections if e > last and b < now)
            self.stall = max(self.stall, gap)
            self.host_stall = max(self.host_stall, gap - collecting)
            last = now

    def __enter__(self) -> Heartbeat:
        gc.callbacks.append(self._on_gc)
        self._task = asyncio.ensure_future(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        gc.callbacks.remove(self._on_gc)


async def idle_stall(seconds: float) -> Heartbeat:
    """The noise floor: the heartbeat alone, on a loop that does nothing else."""
    with Heartbeat() as beat:
        await asyncio.sleep(seconds)
    return beat


def make_plugin(root: Path, skills: int) -> Path:
    plugin = root / f"plugin-{skills}"
    (plugin / ".plugin").mkdir(parents=True)
    (plugin / ".plugin/plugin.json").write_text(json.dumps({"name": "big", "version": "1.0.0"}))
    for i in range(skills):
        d = plugin / "skills" / f"skill-{i:05d}"
        d.mkdir(parents=True)
        (d / "SKILL.md").write_text(f"---\nname: skill-{i:05d}\ndescription: Skill {i}.\n---\nDo it.\n")
    return plugin


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def folder_stalls(plugin: Path, limits: dict, watch_s: float) -> tuple[Heartbeat, float, int, float]:
    """(heartbeat while loading, load seconds, children, watcher share of a core)."""
    await (await Lab.open()).aclose()  # imports and first-use costs are not the folder's
    with Heartbeat() as beat:
        start = time.perf_counter()
        lab = await Lab.open(plugins=[plugin], limits=limits)
        seconds = time.perf_counter() - start
        entry = lab.session_state["customizations"][0]
        children = len(entry.get("children") or ())
    try:
        started_cpu, started = cpu(), time.perf_counter()
        await asyncio.sleep(watch_s)  # the watcher polls the folder meanwhile
        share = (cpu() - started_cpu) / (time.perf_counter() - started)
    finally:
        await lab.aclose()
    return beat, seconds, children, share


async def update_stall(updates: int) -> tuple[Heartbeat, float]:
    lab = await Lab.open()
    try:

        @lab.tool
        async def stream(n: int, *, ctx) -> str:
            for i in range(n):
                await ctx.update(f"line {i}")
            return "done"

        with Heartbeat() as beat:
            start = time.perf_counter()
            turn = await lab.send("stream", script=[call("stream", {"n": updates})])
            seconds = time.perf_counter() - start
        assert turn.tool_calls[0].result_text == "done"
        return beat, seconds
    finally:
        await lab.aclose()


RSS_CHILD = textwrap.dedent(
    """
    import resource, sys, tracemalloc
    from pathlib import Path
    from ahp_lab.host.plugin_resolver import resolve_plugin
    from ahp_lab.host.plugin_sources import DiskSource
    tracemalloc.start()
    if len(sys.argv) > 2:  # what the same file costs without the caps: plain safe_load, then JSON
        import json, yaml
        text = next(Path(sys.argv[1]).rglob("*.md")).read_text()
        data = yaml.safe_load(text.split("---")[1])
        encoded = json.dumps(data)
        children, warnings = 1, 0
    else:
        res = resolve_plugin(DiskSource(Path(sys.argv[1])), "p")
        children, warnings = len(res.children), len(res.warnings)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(rss, peak, children, warnings)
    """
)


def peak_rss(plugin: Path, unbounded: bool = False) -> tuple[float, float, int, int]:
    """(peak RSS of the process, peak memory the resolution allocated, children, warnings)."""
    argv = [sys.executable, "-c", RSS_CHILD, str(plugin)] + (["unbounded"] if unbounded else [])
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    rss, peak, children, warnings = out.stdout.split()
    return float(rss), float(peak), int(children), int(warnings)


def yaml_plugins(root: Path) -> dict[str, Path]:
    out = {}
    for name, aliases in (
        ("issue: 200 KB, 50,000 aliases", 50_000),
        ("under size limit, 12,000 aliases", 12_000),
    ):
        plugin = root / f"yaml-{aliases}"
        agent = plugin / "agents" / "bomb.md"
        agent.parent.mkdir(parents=True)
        body = [
            "---",
            "name: bomb",
            "x: &x " + "A" * 4096,
            "tools: [" + ", ".join(["*x"] * aliases) + "]",
            "---",
            "hi",
        ]
        agent.write_text("\n".join(body))
        out[name] = plugin
    plain = root / "yaml-plain"
    (plain / "agents").mkdir(parents=True)
    (plain / "agents" / "ok.md").write_text("---\nname: ok\ndescription: fine\n---\nhi\n")
    out["ordinary agent file"] = plain
    return out


def per_action(
    paths: list[tuple[str, object, list]], rounds: int = 5, batch: int = 1000
) -> list[tuple[str, float]]:
    """Seconds per action of each ``(label, fn, actions)``; paths interleave, best batch wins."""
    best = {label: float("inf") for label, _, _ in paths}
    for r in range(rounds):
        for label, fn, actions in paths:
            chunk = actions[(r * batch) % len(actions) :][:batch] or actions[:batch]
            start = time.perf_counter()
            for a in chunk:
                fn(a)
            best[label] = min(best[label], (time.perf_counter() - start) / len(chunk))
    return [(label, best[label]) for label, _, _ in paths]


async def validation_costs(n: int) -> list[tuple[str, float]]:
    lab = await Lab.open()
    try:
        conn = lab.host.connection_of("notebook")
        session = lab.session
        titles = [{"type": "session/titleChanged", "title": f"title {i} " + "x" * 60} for i in range(n)]
        prose = ("The suite ran 12 tests in 0.4 s; all passed. Coverage is 87 %. " * 20)[:1000]
        result = {"success": True, "pastTenseMessage": "Ran it", "content": [{"type": "text", "text": prose}]}
        results = [
            {"type": "chat/toolCallComplete", "turnId": "t", "toolCallId": f"c{i}", "result": result}
            for i in range(n)
        ]
        redactor = Redactor()
        redactor.add("sk-live-abcdef0123456789", "hdr-secret-value-xyz")
        store = lab.store
        seq = iter(range(1, 10**9))
        host = lab.host
        rows = per_action(
            [
                ("store.apply (unvalidated, unredacted)", lambda a: store.apply(session, a), titles),
                (
                    "host.dispatch without redaction (host follow-ups)",
                    lambda a: _without_redaction(host, session, a),
                    titles,
                ),
                ("host.dispatch (redacted, host follow-ups)", lambda a: host.dispatch(session, a), titles),
                (
                    "dispatch_from_client (validated: limits, model, rules)",
                    lambda a: host.dispatch_from_client(conn, next(seq), session, a),
                    titles,
                ),
                ("  check_json alone (limits walk)", lambda a: check_json(a, DEFAULT_LIMITS), titles),
                ("  validate_action alone (limits + model)", validate_action, titles),
                ("  redact alone (2 known secrets)", redactor.action, titles),
                ("  check_json, 1 KB tool result", lambda a: check_json(a, DEFAULT_LIMITS), results),
                ("  validate_action, 1 KB tool result", validate_action, results),
                ("  redact, 1 KB tool result", redactor.action, results),
            ]
        )
        return rows
    finally:
        await lab.aclose()


#: 1 MB texts a stranger may send in one member, for :func:`redaction_per_megabyte`.
HOSTILE_TEXTS = {
    "prose": ("The suite ran 12 tests in 0.4 s; all passed. Coverage is 87 %. " * 20_000)[: 1 << 20],
    "query parameters (A=1&A=1&...)": ("x?" + "A=1&" * (1 << 18))[: 1 << 20],
    "secret parameters (key=1&...)": ("x?" + "key=1&" * (1 << 18))[: 1 << 20],
    "assignments (token = x; ...)": ("token = x; " * (1 << 17))[: 1 << 20],
    "long parameter names (&sss...skey=1)": ("x?" + ("&" + "s" * 1000 + "key=1") * 1100)[: 1 << 20],
}


def redaction_per_megabyte() -> list[tuple[str, float]]:
    """Seconds the redactor takes over each 1 MB text of :data:`HOSTILE_TEXTS`, best of 3: what
    one member of a stranger's action costs the host's loop per megabyte (attacker round 34: 14 MB
    of ``A=1&…`` held it 10.7 s)."""
    redactor = Redactor()
    redactor.add("sk-live-abcdef0123456789")
    out = []
    for label, text in HOSTILE_TEXTS.items():
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            redactor.text(text)
            best = min(best, time.perf_counter() - start)
        out.append((label, best))
    return out


class _NoRedaction:
    def action(self, action: dict) -> dict:
        return action


def _without_redaction(host, session: str, action: dict):
    real, host.redactor = host.redactor, _NoRedaction()
    try:
        return host.dispatch(session, action)
    finally:
        host.redactor = real


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=20_000)
    parser.add_argument("--updates", type=int, default=10_000)
    parser.add_argument("--actions", type=int, default=20_000)
    parser.add_argument("--watch", type=float, default=3.0, help="seconds to measure the watcher's CPU")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-security-"))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, work dir {work}\n")
    try:
        plugin = make_plugin(work, args.skills)
        print(f"## Event-loop stalls (heartbeat every {TICK * 1000:.0f} ms; goal < 100 ms)\n")
        print(
            "| workload | longest stall | longest full GC | longest stall, GC excluded | wall time | children "
            "| watcher CPU |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")

        def row(label: str, beat: Heartbeat, seconds: float, children: str = "", share: str = "") -> None:
            print(
                f"| {label} | {beat.stall * 1000:.1f} ms | {beat.gc_pause * 1000:.1f} ms | "
                f"{beat.host_stall * 1000:.1f} ms | {seconds:.2f} s | {children} | {share} |"
            )

        row("idle loop (noise floor)", asyncio.run(idle_stall(3.0)), 3.0)
        for label, limits in (
            (f"{args.skills:,}-skill folder, default limits", None),
            (
                f"{args.skills:,}-skill folder, all resolved",
                {"max_folder_files": args.skills * 2, "max_customization_entry_bytes": 64 * 1024 * 1024},
            ),
        ):
            beat, seconds, children, share = asyncio.run(folder_stalls(plugin, limits or {}, args.watch))
            row(label, beat, seconds, f"{children:,}", f"{share * 100:.1f} %")
        beat, seconds = asyncio.run(update_stall(args.updates))
        row(f"{args.updates:,} ctx.update calls (client tool)", beat, seconds)
        print(f"\n(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")

        print("\n## Peak RSS resolving YAML alias files (fresh process each)\n")
        print(
            "| file | peak RSS | peak allocated while resolving | children | warnings | peak RSS ratio to ordinary |"
        )
        print("|---|---:|---:|---:|---:|---:|")
        plugins = yaml_plugins(work)
        measured = {name: peak_rss(p) for name, p in plugins.items()}
        dense = plugins["under size limit, 12,000 aliases"]
        measured["same 12,000-alias file, plain safe_load + JSON (no caps)"] = peak_rss(dense, unbounded=True)
        base = measured["ordinary agent file"][0]
        for name, (rss, peak, children, warnings) in measured.items():
            print(f"| {name} | {rss:.1f} MB | {peak:.2f} MB | {children} | {warnings} | {rss / base:.2f} |")

        print(
            "\n## Validation and redaction cost per action (paths interleaved, best of 5 batches of 1,000)\n"
        )
        rows = asyncio.run(validation_costs(args.actions))
        base = rows[0][1]
        print("| path | µs per action | ratio to store.apply |")
        print("|---|---:|---:|")
        for label, seconds in rows:
            print(f"| {label} | {seconds * 1e6:.1f} | {seconds / base:.2f} |")
        print("\n## Redaction of 1 MB texts (best of 3)\n")
        print("| text | seconds per MB |")
        print("|---|---:|")
        for label, seconds in redaction_per_megabyte():
            print(f"| {label} | {seconds:.3f} |")

    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
