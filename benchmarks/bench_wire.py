"""Load on the WebSocket endpoint: broadcast throughput, dispatch-to-echo latency, memory per connection.

Run: ``python benchmarks/bench_wire.py [--clients 1 10 50] [--rate 1000] [--seconds 5]``.

The host runs in its own process (``ahp-lab serve``, the scripted agent, 127.0.0.1). This
process holds one dispatching client (the full :class:`~ahp_lab.client.AhpClient`: validation,
optimistic apply, reconciliation); N receivers — bare ``websockets`` clients subscribed to the
session, which note when each envelope arrives (``time.monotonic``, one clock for the machine) —
are spread over ``--procs`` worker processes. For every client count, in one run:

* **throughput**: actions dispatched as fast as the dispatcher can, divided by the time until
  the last receiver has the last one (actions/s broadcast to N clients);
* **latency at a fixed rate** (``--rate`` actions/s for ``--seconds``): for each action, the time
  from ``dispatch`` to the moment *every* receiver has its echo; p50 / p99 / max;
* **host CPU per action**: the host process's CPU time (user + system) during the fixed-rate run
  divided by the actions, which the machine's load does not inflate the way it inflates latency;
  ``1e6 / that`` is the rate one free core would sustain;
* **memory per connection**: the host process's RSS growth per subscribed idle connection;
* **host full GCs**: CPython generation-2 collections in the host process during the case
  (``gc.callbacks`` in the host): how many, and the longest, which stalls every connection.

Both ends share this machine (2 cores, often with other work): the receivers' own cost is part
of every number, so compare ratios taken in one run. The goal: p99 < 10 ms at 1,000 actions/s
with 10 clients on loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import time

try:
    import psutil
except ImportError:  # the benchmarks' one extra dependency
    raise SystemExit(
        'bench_wire.py reads the host\'s memory with psutil: pip install -e ".[bench]"'
    ) from None
from websockets.asyncio.client import connect as ws_connect

import ahp_lab

ROOT = "ahp-root://"
DISPATCHER = "bench-dispatcher"
MARK = f'"clientId":"{DISPATCHER}"'


#: ``ahp-lab serve`` with its generation-2 collections recorded; their (monotonic end, seconds)
#: are printed as JSON when it stops.
HOST_CODE = """
import gc, json, sys, time
from ahp_lab import cli
passes, started = [], [0.0]
def on_gc(phase, info):
    if info.get("generation") == 2:
        if phase == "start":
            started[0] = time.monotonic()
        else:
            passes.append((time.monotonic(), time.monotonic() - started[0]))
gc.callbacks.append(on_gc)
status = cli.main(["serve", "--port", "0"])
print(json.dumps(passes), flush=True)
sys.exit(status)
"""


def start_host() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOST_CODE],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    return proc, proc.stdout.readline().strip()


class Receiver:
    """A bare subscribed client: records when each of the dispatcher's echoes arrives."""

    def __init__(self, ws) -> None:
        self.ws = ws
        self.arrived: dict[int, float] = {}
        self.task = asyncio.ensure_future(self._read())
        self.wanted = 0
        self.done = asyncio.Event()

    @classmethod
    async def open(cls, url: str, session: str, n: int) -> Receiver:
        ws = await ws_connect(url, max_size=None, compression=None)
        params = {
            "channel": ROOT,
            "protocolVersions": ["0.8.0"],
            "clientId": f"bench-receiver-{n}",
            "initialSubscriptions": [session],
        }
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}))
        await ws.recv()  # the initialize answer (with the snapshot)
        return cls(ws)

    async def _read(self) -> None:
        now = time.monotonic  # one clock for every process on this machine
        arrived = self.arrived
        try:
            async for text in self.ws:
                if MARK in text:
                    seq = json.loads(text)["params"]["origin"]["clientSeq"]
                    arrived[seq] = now()
                    if seq >= self.wanted:
                        self.done.set()
        except Exception:
            pass

    async def wait_for(self, seq: int) -> None:
        self.wanted = seq
        while seq not in self.arrived:
            self.done.clear()
            await self.done.wait()

    async def close(self) -> None:
        await self.ws.close()
        await asyncio.gather(self.task, return_exceptions=True)


async def worker(url: str, session: str, first: int, count: int) -> None:
    """A receiver process: ``count`` receivers; on ``wait A B`` it answers, for each seq in A..B,
    when its last receiver had it (so receivers spread over processes, as clients are)."""
    receivers = [await Receiver.open(url, session, first + n) for n in range(count)]
    print("ready", flush=True)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := (await reader.readline()).decode().split():
        if line[0] != "wait":
            break
        a, b = int(line[1]), int(line[2])
        await asyncio.gather(*(r.wait_for(b) for r in receivers))
        got = {seq: max(r.arrived[seq] for r in receivers) for seq in range(a, b + 1)}
        print(json.dumps(got), flush=True)
    for r in receivers:
        await r.close()


class Workers:
    """Receiver processes holding N receivers between them."""

    def __init__(self, procs: list) -> None:
        self.procs = procs

    @classmethod
    async def start(cls, url: str, session: str, n_clients: int, n_procs: int) -> Workers:
        shares = [n_clients // n_procs + (1 if i < n_clients % n_procs else 0) for i in range(n_procs)]
        procs, first = [], 0
        for share in (s for s in shares if s):
            procs.append(
                await asyncio.create_subprocess_exec(
                    sys.executable, __file__, "--worker", url, session, str(first), str(share),
                    stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=2**26,
                )
            )  # fmt: skip
            first += share
        for proc in procs:
            assert (await proc.stdout.readline()).strip() == b"ready"
        return cls(procs)

    async def arrivals(self, a: int, b: int) -> dict[int, float]:
        """For each seq in a..b, when the last of all receivers had it."""
        for proc in self.procs:
            proc.stdin.write(f"wait {a} {b}\n".encode())
            await proc.stdin.drain()
        got: dict[int, float] = {}
        for proc in self.procs:
            for seq, t in json.loads(await proc.stdout.readline()).items():
                got[int(seq)] = max(got.get(int(seq), 0.0), t)
        return got

    async def stop(self) -> None:
        for proc in self.procs:
            proc.stdin.write(b"quit\n")
            await proc.stdin.drain()
            await proc.wait()


def title(i: int) -> dict:
    return {"type": "session/titleChanged", "title": f"title {i}"}


async def throughput(client, session: str, workers: Workers, n: int) -> float:
    first = client.client_seq + 1
    start = time.monotonic()
    for i in range(n):
        client.dispatch(session, title(i))
        if i % 200 == 199:
            await client.settle()  # keep the host's inbox bounded
    got = await workers.arrivals(first, client.client_seq)
    return n / (max(got.values()) - start)


async def latency_at_rate(client, session: str, workers: Workers, rate: float, seconds: float):
    sent: dict[int, float] = {}
    total = int(rate * seconds)
    loop = asyncio.get_running_loop()
    start = loop.time()
    i = 0
    while i < total:
        due = min(total, int((loop.time() - start) * rate) + 1)
        while i < due:
            t = time.monotonic()
            seq = client.dispatch(session, title(i))
            sent[seq] = t
            i += 1
        await asyncio.sleep(max(0.0, start + i / rate - loop.time()))
    achieved = total / (loop.time() - start)
    got = await workers.arrivals(min(sent), max(sent))
    return [got[seq] - t0 for seq, t0 in sent.items()], achieved


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


async def run_case(url: str, host_pid: int, n_clients: int, args) -> dict:
    client = await ahp_lab.connect(url, client_id=DISPATCHER)
    session = await client.create_session(title="bench")
    await client.wait_for(session, lambda s: True if s.get("lifecycle") == "ready" else None, timeout=30)
    host = psutil.Process(host_pid)
    started = time.monotonic()
    gc.collect()
    rss_before = host.memory_info().rss
    workers = await Workers.start(url, session, n_clients, min(args.procs, n_clients))
    await client.settle()
    rss_after = host.memory_info().rss
    rate = await throughput(client, session, workers, args.burst)
    cpu = host.cpu_times()
    latencies, achieved = await latency_at_rate(client, session, workers, args.rate, args.seconds)
    cpu_after = host.cpu_times()
    cpu_s = (cpu_after.user + cpu_after.system) - (cpu.user + cpu.system)
    await workers.stop()
    await client.aclose()
    return {
        "window": (started, time.monotonic()),
        "clients": n_clients,
        "throughput": rate,
        "achieved": achieved,
        "p50": pct(latencies, 50) * 1000,
        "p99": pct(latencies, 99) * 1000,
        "max": max(latencies) * 1000,
        "mean": statistics.fmean(latencies) * 1000,
        "rss_per_conn": (rss_after - rss_before) / n_clients,
        "cpu_us": cpu_s / len(latencies) * 1e6,
    }


async def main_async(args) -> list[dict]:
    proc, url = start_host()
    try:
        results = [await run_case(url, proc.pid, n, args) for n in args.clients]
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    passes = json.loads(out.strip().splitlines()[-1]) if out.strip() else []
    for r in results:
        start, end = r.pop("window")
        during = [seconds for t, seconds in passes if start <= t <= end]
        r["gc_count"], r["gc_max"] = len(during), max(during, default=0.0) * 1000
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--rate", type=float, default=1000.0, help="actions/s for the latency run")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of the latency run")
    parser.add_argument("--burst", type=int, default=5000, help="actions in the throughput run")
    parser.add_argument("--procs", type=int, default=2, help="processes the receivers are spread over")
    parser.add_argument(
        "--worker", nargs=4, metavar=("URL", "SESSION", "FIRST", "COUNT"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.worker:
        url, session, first, count = args.worker
        asyncio.run(worker(url, session, int(first), int(count)))
        return
    results = asyncio.run(main_async(args))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(
        f"{'clients':>7} {'broadcast actions/s':>20} {'rate held':>10} "
        f"{'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'host CPU µs/action':>19} {'host RSS/conn':>14}"
        f" {'host full GCs':>14} {'longest GC ms':>14}"
    )
    for r in results:
        print(
            f"{r['clients']:>7} {r['throughput']:>20,.0f} {r['achieved']:>10,.0f} "
            f"{r['p50']:>8.2f} {r['p99']:>8.2f} {r['max']:>8.2f} {r['cpu_us']:>19,.0f} "
            f"{r['rss_per_conn'] / 1024:>10,.0f} KiB {r['gc_count']:>14} {r['gc_max']:>14.1f}"
        )
    base = results[0]
    print()
    for r in results[1:]:
        print(
            f"{r['clients']} vs {base['clients']} client(s): throughput x{r['throughput'] / base['throughput']:.2f}, "
            f"p99 x{r['p99'] / base['p99']:.2f}, host CPU per action x{r['cpu_us'] / base['cpu_us']:.2f}"
        )
    ten = next((r for r in results if r["clients"] == 10), None)
    if ten is not None:
        verdict = "met" if ten["p99"] < 10 and ten["achieved"] >= 0.95 * args.rate else "NOT met"
        print(
            f"goal p99 < 10 ms at {args.rate:,.0f} actions/s with 10 clients: {verdict} (p99 {ten['p99']:.2f} ms)"
        )


if __name__ == "__main__":
    main()
