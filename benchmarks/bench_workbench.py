"""What a displayed workbench costs while an agent streams 5,000 deltas per second.

Run: ``python benchmarks/bench_workbench.py [--rate 5000] [--seconds 5] [--max-syncs 30]``.

A real :class:`~ahp_lab.lab.Lab` (in-kernel host, scripted agent, this process as the client)
first runs a few warm-up turns (client tool calls, text) so the conversation, the timeline and
the log are not empty; then one turn streams ``rate × seconds`` markdown deltas, paced by the
host's ``pace`` hook at ``rate`` per second, into a ``Workbench`` whose front end is simulated
(the chat pane said ``hello``, the inspector asked for its window, as the browser does).

Every message a widget would send to the front end goes through ``ipywidgets.Widget._send``
(traitlet state syncs — ``send_state`` — and custom messages — ``send``); the benchmark replaces
it with a recorder, so nothing is lost and nothing needs a kernel. It reports, per widget:

* messages per second actually sent (state syncs + custom messages; max over 1 s windows) and
  the coalescer's flushes per second — target: at most ``--max-syncs`` (30) per widget;
* bytes per second sent (JSON), and the size of a message early vs late in the stream: a delta
  must not resend the whole conversation or the whole log, so late messages are no bigger than
  early ones although the streamed text has grown by ``rate × seconds`` deltas;
* the share of the kernel's time spent in view code (the widgets' transition listeners, their
  flushes and message serialization) over the wall time of the stream, next to the CPU share of
  the whole process with and without a workbench.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import statistics
import time
from collections import defaultdict
from typing import Any

import ipywidgets

from ahp_lab.agents.scripted import call, say
from ahp_lab.lab import Lab
from ahp_lab.widgets import views
from ahp_lab.widgets.base import SourceView

TOKEN = "tok "  # one delta


class Recorder:
    """Replaces ``Widget._send``: records (time, widget, kind, bytes) of every outgoing message."""

    def __init__(self) -> None:
        self.records: list[tuple[float, str, str, int, int]] = []  # t, widget, kind, bytes, flush #
        self.names: dict[int, str] = {}
        self.active = False
        self._orig = ipywidgets.Widget._send

    def install(self) -> None:
        recorder = self

        def _send(widget: Any, msg: dict, buffers: Any = None) -> None:
            if not recorder.active:
                return
            name = recorder.names.get(id(widget))
            if name is None:
                return
            data = json.dumps(msg, separators=(",", ":"), ensure_ascii=False, default=str)
            kind = "custom" if msg.get("method") == "custom" else "state"
            coalescer = getattr(widget, "_coalescer", None)
            flush = coalescer.flushes if coalescer is not None else 0
            recorder.records.append((time.perf_counter(), name, kind, len(data.encode()), flush))

        ipywidgets.Widget._send = _send  # type: ignore[method-assign]

    def uninstall(self) -> None:
        ipywidgets.Widget._send = self._orig  # type: ignore[method-assign]


class ViewTimer:
    """Wall time spent inside view code (listeners, flushes, message handling), outermost calls only."""

    def __init__(self) -> None:
        self.total = 0.0
        self.calls = 0
        self._depth = 0
        self._patched: list[tuple[type, str, Any]] = []
        self.active = False

    def wrap(self, cls: type, name: str) -> None:
        orig = cls.__dict__.get(name)
        if orig is None:
            return
        timer = self

        @functools.wraps(orig)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if timer._depth or not timer.active:
                timer._depth += 1
                try:
                    return orig(*args, **kwargs)
                finally:
                    timer._depth -= 1
            timer._depth += 1
            t0 = time.perf_counter()
            try:
                return orig(*args, **kwargs)
            finally:
                timer.total += time.perf_counter() - t0
                timer.calls += 1
                timer._depth -= 1

        setattr(cls, name, timed)
        self._patched.append((cls, name, orig))

    def unwrap(self) -> None:
        for cls, name, orig in reversed(self._patched):
            setattr(cls, name, orig)
        self._patched.clear()


class Pacer:
    """``host.pace``: at most ``rate`` chunks per second (sleeps only when ahead of schedule)."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.n = 0
        self.t0: float | None = None

    async def __call__(self) -> None:
        now = time.perf_counter()
        if self.t0 is None:
            self.t0 = now
        self.n += 1
        ahead = self.t0 + self.n / self.rate - now
        await asyncio.sleep(ahead if ahead > 0 else 0)


async def warm_up(lab: Lab, turns: int) -> None:
    @lab.tool
    def run_unit_tests(pattern: str = "test_*") -> str:
        """Run the unit tests matching a pattern."""
        return f"{pattern}: 12 passed"

    for i in range(turns):
        await lab.send(
            f"warm-up {i}",
            script=[say(f"Turn {i}: running the tests. " * 5), call("run_unit_tests", pattern=f"t{i}")],
        )


async def run(
    rate: float, seconds: float, with_workbench: bool, max_syncs: float, warm: int, scenario: str = "text"
) -> dict:
    lab = await Lab.open()
    await warm_up(lab, warm)
    n_deltas = int(rate * seconds)
    pacer = Pacer(rate)

    @lab.tool
    async def build(target: str = "all", *, ctx) -> str:
        """Build a target, streaming its log (the progress of a running tool call)."""
        for i in range(n_deltas):
            await pacer()
            await ctx.update(f"[{i}] compiling unit {i} of {target}")
        return "built"

    recorder = Recorder()
    timer = ViewTimer()
    wb = None
    if with_workbench:
        for cls in (SourceView, *(getattr(views, n) for n in views.__all__ if n != "Workbench")):
            for meth in ("_on_transition", "_refresh", "_on_custom_msg"):
                timer.wrap(cls, meth)
        recorder.install()
        wb = lab.show()
        for v in wb.views:
            v.max_syncs_per_s = max_syncs
            recorder.names[id(v)] = type(v).__name__
        recorder.names[id(wb)] = "Workbench"
        # what the browser does when the views render
        wb.chat._on_custom_msg(wb.chat, {"type": "hello"})
        n = wb.inspector.total
        wb.inspector._on_custom_msg(wb.inspector, {"type": "window", "start": max(0, n - 60), "count": 60})
    gc.collect()
    first_seq = lab.store.last_seq
    recorder.active = timer.active = True
    cpu0, t0 = time.process_time(), time.perf_counter()
    if scenario == "text":
        lab.host.pace = pacer  # type: ignore[method-assign]
        turn = await lab.send("stream", script=[say(TOKEN * n_deltas, chunk_size=len(TOKEN))])
    else:  # a running client tool streams its progress; the timeline shows it (lane selected)
        if wb is not None:
            wb.timeline.selected = None

            def select_running(_t: Any) -> None:
                lanes = wb.timeline.model.get("lanes") or []
                if wb.timeline.selected is None and lanes and lanes[-1]["status"] == "running":
                    # as a click in the browser does it (no echo of the value back to the browser)
                    wb.timeline.set_state({"selected": lanes[-1]["key"]})

            unselect = lab.subscribe(select_running)
        turn = await lab.send("build", script=[call("build", target="lab")])
        if wb is not None:
            unselect()
    await asyncio.sleep(0.1)  # let the last coalesced flush run
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    recorder.active = timer.active = False
    recorder.uninstall()
    timer.unwrap()
    if scenario == "text":
        assert len(turn.text) == n_deltas * len(TOKEN), len(turn.text)
    else:
        assert turn.tool_calls[-1].status == "completed", turn
    transitions = lab.store.last_seq - first_seq
    out: dict[str, Any] = {
        "deltas": n_deltas,
        "transitions": transitions,
        "wall": wall,
        "cpu": cpu,
        "delta_rate": n_deltas / (wall - 0.1),
    }
    if wb is not None:
        out["flushes"] = {type(v).__name__: v._coalescer.flushes for v in wb.views}
        out["records"] = recorder.records
        out["t0"] = t0
        out["view_time"] = timer.total
        out["view_calls"] = timer.calls
        out["chat_text"] = len(turn.text)
        out["scenario"] = scenario
        wb.close()
    return out


def _max_per_window(times: list[float], window: float = 1.0) -> int:
    """Most events in any sliding window of ``window`` seconds (half-open)."""
    best, lo = 0, 0
    for hi, t in enumerate(times):
        while times[lo] <= t - window:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


WIDGETS = ["ChatPane", "InputQueue", "CustomizationTree", "ToolCallTimeline", "TransitionInspector"]


def report(base: dict, got: dict, max_syncs: float) -> bool:
    records, t0, wall = got["records"], got["t0"], got["wall"]
    stream_s = wall - 0.1
    per: dict[str, list[tuple[float, str, int, int]]] = defaultdict(list)
    for t, name, kind, size, flush in records:
        per[name].append((t - t0, kind, size, flush))
    print(
        f"{got['deltas']:,} deltas in {stream_s:.2f} s = {got['delta_rate']:,.0f} deltas/s "
        f"({got['transitions']:,} transitions); streamed text {got['chat_text']:,} chars"
    )
    print()
    print(
        "syncs = flushes that sent anything (one flush may send a state update and a custom message);"
        " max 1 s = most syncs in any 1 s window"
    )
    hdr = (
        f"{'widget':<20}{'flushes/s':>10}{'syncs/s':>8}{'max 1 s':>8}{'msgs/s':>7}{'state':>6}{'custom':>7}"
        f"{'KB/s':>8}{'B/delta':>8}{'msg B, 1st s':>13}{'last s':>8}"
    )
    print(hdr)
    print("-" * len(hdr))
    ok = True
    total_bytes = 0
    for name in WIDGETS:
        msgs = per.get(name, [])
        flush_of = sorted({(f, t) for t, _k, _s, f in msgs})
        sync_times: list[float] = []
        seen: set[int] = set()
        for f, t in flush_of:
            if f not in seen:
                seen.add(f)
                sync_times.append(t)
        sync_times.sort()
        nbytes = sum(sz for _t, _k, sz, _f in msgs)
        total_bytes += nbytes
        early = [sz for t, _k, sz, _f in msgs if t < 1.0]
        late = [sz for t, _k, sz, _f in msgs if t >= stream_s - 1.0]
        flush_rate = got["flushes"].get(name, 0) / stream_s
        state = sum(1 for _t, k, _s, _f in msgs if k == "state")
        max_syncs_1s = _max_per_window(sync_times) if sync_times else 0
        print(
            f"{name:<20}{flush_rate:>10.1f}{len(sync_times) / stream_s:>8.1f}{max_syncs_1s:>8}"
            f"{len(msgs) / stream_s:>7.1f}{state:>6}{len(msgs) - state:>7}"
            f"{nbytes / stream_s / 1024:>8.1f}{nbytes / got['deltas']:>8.1f}"
            f"{statistics.mean(early) if early else 0:>13.0f}{statistics.mean(late) if late else 0:>8.0f}"
        )
        # +1: a person's action (here: selecting the running call) refreshes at once, uncoalesced
        if max_syncs_1s > max_syncs + 1:
            ok = False
        if early and late and statistics.mean(late) > 2 * statistics.mean(early) + 1024:
            ok = False  # later messages grew with the conversation: something resends it whole
    print("-" * len(hdr))
    print(
        f"{'all widgets':<20}{'':>26}{len(records) / stream_s:>7.1f}{'':>13}"
        f"{total_bytes / stream_s / 1024:>8.1f}{total_bytes / got['deltas']:>8.1f}"
    )
    print()
    share = got["view_time"] / wall
    print(f"kernel time in view code (listeners + flushes + serialization): {got['view_time']:.3f} s of {wall:.2f} s wall "
          f"= {share:.1%}  ({got['view_calls']:,} outermost calls)")  # fmt: skip
    print(
        f"process CPU: {got['cpu'] / wall:.1%} of wall with the workbench, "
        f"{base['cpu'] / base['wall']:.1%} without (same stream: {base['deltas']:,} deltas "
        f"at {base['delta_rate']:,.0f}/s)"
    )
    print(f"targets (<= {max_syncs:g} syncs/s per widget; late messages no bigger than early ones): "
          f"{'MET' if ok else 'MISSED'}")  # fmt: skip
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=5000, help="deltas per second")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of the stream")
    parser.add_argument("--max-syncs", type=float, default=30.0, help="coalescing limit per widget")
    parser.add_argument("--warm", type=int, default=20, help="warm-up turns before the stream")
    parser.add_argument(
        "--scenario",
        choices=["text", "tool", "both"],
        default="both",
        help="text: markdown deltas; tool: a running client tool streaming its progress",
    )
    args = parser.parse_args()
    ok = True
    for scenario in ["text", "tool"] if args.scenario == "both" else [args.scenario]:
        print(f"== scenario {scenario} ==")
        base = asyncio.run(run(args.rate, args.seconds, False, args.max_syncs, args.warm, scenario))
        got = asyncio.run(run(args.rate, args.seconds, True, args.max_syncs, args.warm, scenario))
        ok = report(base, got, args.max_syncs) and ok
        print()
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
