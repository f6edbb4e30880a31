"""The ACP bridge's cost: latency per mapped update and throughput of a 10,000-chunk stream.

Run: ``python benchmarks/bench_acp.py [--chunks 10000]``. The offline example agent runs as a
real subprocess. In one run, so the ratios are comparable:

* latency per mapped update: from the moment the SDK hands the bridge an incoming
  ``session/update`` frame to the moment the host has broadcast the AHP envelope it produced
  (median, p90, p99), for the chunks of the stream;
* throughput: chunks/s of ``stream N`` through the bridge (agent process → pipe → SDK → mapping
  → host → store → JSON-RPC → the notebook's client), against the same number of deltas from an
  in-process agent (no ACP at all) as the baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_host import StreamingAgent  # the baseline: the same number of deltas, made in the kernel

from ahp_lab.agents.acp import AcpAgent
from ahp_lab.lab import Lab

AGENT = Path(__file__).resolve().parents[1] / "examples" / "acp_agent.py"


def latencies_us(lab: Lab, sent: dict[int, int], since: int) -> list[float]:
    """Per chunk frame: envelope broadcast time of the delta it produced minus the frame's arrival."""
    return [
        (sent[f.seqs[-1]] - f.t_ns) / 1000
        for f in lab.acp_frames
        if f.index >= since
        and f.label == "session/update agent_message_chunk"
        and f.seqs
        and f.seqs[-1] in sent
    ]


async def acp_stream(n: int, paced: int) -> tuple[float, list[float], list[float]]:
    """``(chunks/s of an n-chunk burst, its latencies, latencies of a paced stream)``."""
    with tempfile.TemporaryDirectory() as work:
        agent = AcpAgent([sys.executable, str(AGENT)], cwd=work)
        lab = await Lab.open(agent=agent)
        sent: dict[int, int] = {}
        lab.store.subscribe(lambda t: sent.__setitem__(t.seq, time.perf_counter_ns()))
        await lab.send("stream 10")  # warm up
        since = agent.frames.next_index
        turn = await lab.send(f"stream {paced} 2")  # 2 ms apart: the bridge is idle between updates
        assert turn.text.count("chunk ") == paced
        idle = latencies_us(lab, sent, since)
        since = agent.frames.next_index
        start = time.perf_counter()
        turn = await lab.send(f"stream {n}")
        elapsed = time.perf_counter() - start
        assert turn.text.count("chunk ") == n, "every chunk arrived"
        burst = latencies_us(lab, sent, since)
        await agent.aclose()
        return n / elapsed, burst, idle


async def in_process_stream(n: int) -> float:
    lab = await Lab.open(agent=StreamingAgent(n), chunk_size=1)
    start = time.perf_counter()
    turn = await lab.send("go")
    elapsed = time.perf_counter() - start
    assert len(turn.text) == n
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000, help="chunks in the stream")
    n = parser.parse_args().chunks
    acp_rate, burst, idle = asyncio.run(acp_stream(n, 500))
    base_rate = asyncio.run(in_process_stream(n))
    print(f"{'case':<64} {'chunks/s':>10} {'µs each':>9}")
    print(
        f"{'in-process agent -> host -> store -> JSON-RPC -> client (baseline)':<64} {base_rate:>10,.0f} {1e6 / base_rate:>9.1f}"
    )
    print(
        f"{f'ACP agent subprocess -> SDK -> bridge -> host ... ({n:,} chunks)':<64} {acp_rate:>10,.0f} {1e6 / acp_rate:>9.1f}"
    )
    print()
    print(f"throughput ratio, ACP stream / in-process stream: {acp_rate / base_rate:.2f}")
    print("latency per mapped update, ACP frame in -> AHP envelope out:")
    for label, values in [("paced stream (2 ms apart)", idle), (f"{n:,}-chunk burst (queued)", burst)]:
        q = statistics.quantiles(values, n=100)
        print(
            f"  {label:<32} {len(values):>6,} updates: median {statistics.median(values):>8,.0f} µs, "
            f"p90 {q[89]:>8,.0f} µs, p99 {q[98]:>8,.0f} µs"
        )
    per_delta = 1e6 / base_rate
    print(f"paced median latency / in-process cost of one delta: {statistics.median(idle) / per_delta:.1f}x")


if __name__ == "__main__":
    main()
