"""Throughput and memory of the whole in-kernel host.

Run: ``python benchmarks/bench_host.py [--n 100000]``. Reports, in one run so the ratios are
comparable:

* reducers alone (``chat/delta`` applied in a loop) — the baseline;
* the store recording each transition (``Store.apply``) and its ratio to the baseline;
* the same with the log kept within a small ``max_log_bytes``, dropping its start as it goes;
* an agent streaming deltas through the host: host → store → JSON-RPC envelope → client reduce;
* client dispatches: client validate → JSON-RPC → host validate → store → echo → client reconcile;
* tool calls through the host (start, ready, complete: the session's inputNeeded follows each) in a
  turn of 100 and of 3,000 calls, and the growth of their cost (1.0 = flat); the same for text
  parts appended to a turn (``chat/responsePart``);
* memory per recorded streamed-delta transition (tracemalloc, the store's growth over N deltas).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
import tracemalloc

from ahp_lab.agents.base import TurnContext
from ahp_lab.lab import Lab
from ahp_lab.reducers import reduce_chat
from ahp_lab.store import Store, agent_origin

USER = {"text": "hi", "origin": {"kind": "user"}}


def streaming_chat() -> dict:
    return {
        "resource": "ahp-chat:/bench",
        "title": "bench",
        "status": 8,
        "modifiedAt": "2026-01-01T00:00:00.000Z",
        "turns": [],
        "activeTurn": {
            "id": "t",
            "startedAt": "x",
            "message": USER,
            "responseParts": [{"kind": "markdown", "id": "p", "content": ""}],
        },
    }


def bench_reducer(n: int) -> float:
    state = streaming_chat()
    gc.collect()
    start = time.perf_counter()
    for i in range(n):
        state = reduce_chat(
            state, {"type": "chat/delta", "turnId": "t", "partId": "p", "content": f"tok{i % 10} "}, 1
        )
    return n / (time.perf_counter() - start)


#: A log budget small enough that the bounded case drops its start many times over.
BOUNDED_LOG = 4 << 20


def bench_store(n: int, measure_memory: bool = False, max_log_bytes: int | None = None) -> float:
    """Transitions/s of Store.apply, or (``measure_memory``) bytes the store grows per transition.

    Memory is measured in a separate run because tracemalloc slows every allocation down. The
    actions are created inside the measured region: the log keeps them, so they are part of
    what a recorded transition costs. With ``max_log_bytes`` the log drops its oldest
    transitions as it goes, and the drops are part of the measured time.
    """
    store = Store(lambda: 1, max_log_bytes=max_log_bytes)
    store.add_channel("ahp-chat:/bench", "chat", streaming_chat())
    origin = agent_origin("bench")
    gc.collect()
    if measure_memory:
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
    start = time.perf_counter()
    for i in range(n):
        store.apply(
            "ahp-chat:/bench",
            {"type": "chat/delta", "turnId": "t", "partId": "p", "content": f"tok{i % 10} "},
            origin,
            now_ms=1,
        )
    elapsed = time.perf_counter() - start
    if measure_memory:
        grown = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
        return grown / n
    return n / elapsed


class StreamingAgent:
    name = "bench"

    def __init__(self, n: int) -> None:
        self.n = n

    def info(self) -> dict:
        return {"provider": "bench", "displayName": "bench", "description": "", "models": []}

    async def run_turn(self, ctx: TurnContext) -> None:
        await ctx.say("x" * self.n, chunk_size=1)


async def bench_streaming_through_host(n: int, measure_memory: bool = False) -> float:
    lab = await Lab.open(agent=StreamingAgent(n), chunk_size=1)
    gc.collect()
    if measure_memory:
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
    first = lab.store.last_seq
    start = time.perf_counter()
    turn = await lab.send("go")
    elapsed = time.perf_counter() - start
    recorded = lab.store.last_seq - first
    assert len(turn.text) == n and lab.client.state(lab.chat) is not None
    if measure_memory:
        grown = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
        return grown / recorded
    return recorded / elapsed


async def bench_client_dispatch(n: int) -> float:
    lab = await Lab.open()
    client = lab.client
    gc.collect()
    done = asyncio.get_running_loop().create_future()
    target = n

    def on_change(channel, action):
        pending = client.channels[lab.chat].pending
        if (
            action.get("type") == "chat/draftChanged"
            and not pending
            and not done.done()
            and client.client_seq >= target
        ):
            done.set_result(None)

    client.on_change(on_change)
    start = time.perf_counter()
    for i in range(n):
        client.dispatch(
            lab.chat,
            {"type": "chat/draftChanged", "draft": {"text": f"draft {i}", "origin": {"kind": "user"}}},
        )
        if i % 500 == 0:
            await asyncio.sleep(0)
    await done
    elapsed = time.perf_counter() - start
    assert lab.chat_state["draft"]["text"] == f"draft {n - 1}"
    return n / elapsed


def _host_in_a_turn() -> tuple:
    """A host with one session whose chat has a turn ``t`` running: ``(host, chat)``."""
    from ahp_lab.host import Host

    host = Host()
    session = "ahp-session:/bench"
    host.create_session(session, {})
    chat = host.store.state(session)["defaultChat"]
    host.dispatch(chat, {"type": "chat/turnStarted", "turnId": "t", "startedAt": "x", "message": USER})
    gc.collect()
    return host, chat


def bench_tool_calls_through_host(calls: int) -> float:
    """Tool calls per second, each started, run and completed in one turn of ``calls`` calls."""
    host, chat = _host_in_a_turn()
    start = time.perf_counter()
    for i in range(calls):
        base = {"turnId": "t", "toolCallId": f"c{i}"}
        host.dispatch(chat, {"type": "chat/toolCallStart", **base, "toolName": "x", "displayName": "X"})
        host.dispatch(
            chat, {"type": "chat/toolCallReady", **base, "invocationMessage": "go", "confirmed": "not-needed"}
        )
        result = {"success": True, "pastTenseMessage": "did"}
        host.dispatch(chat, {"type": "chat/toolCallComplete", **base, "result": result})
    return calls / (time.perf_counter() - start)


def bench_parts_through_host(parts: int) -> float:
    """Response parts per second, each a text part appended (``chat/responsePart``) to one turn
    of ``parts`` parts, as an ACP agent's alternating thought and message chunks make them."""
    host, chat = _host_in_a_turn()
    start = time.perf_counter()
    for i in range(parts):
        part = {"kind": "markdown", "id": f"p{i}", "content": "a few words"}
        host.dispatch(chat, {"type": "chat/responsePart", "turnId": "t", "part": part})
    return parts / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="transitions per case")
    args = parser.parse_args()
    n = args.n
    reducer = bench_reducer(n)
    store_rate = bench_store(n)
    store_mem = bench_store(n, measure_memory=True)
    bounded_rate = bench_store(n, max_log_bytes=BOUNDED_LOG)
    host_rate = asyncio.run(bench_streaming_through_host(n))
    host_mem = asyncio.run(bench_streaming_through_host(n, measure_memory=True))
    dispatch_rate = asyncio.run(bench_client_dispatch(n // 5))
    short_turn = max(bench_tool_calls_through_host(100) for _ in range(5))
    long_turn = bench_tool_calls_through_host(3000)
    few_parts = max(bench_parts_through_host(100) for _ in range(5))
    many_parts = bench_parts_through_host(3000)
    print(f"{'case':<60} {'transitions/s':>14} {'µs each':>9}")
    for label, rate in [
        ("chat/delta, reducer alone", reducer),
        ("chat/delta, Store.apply (reduce + record + notify)", store_rate),
        (f"chat/delta, Store.apply, log kept within {BOUNDED_LOG >> 20} MiB", bounded_rate),
        ("chat/delta, agent -> host -> store -> JSON-RPC -> client", host_rate),
        (f"chat/draftChanged, client -> JSON-RPC -> host -> echo ({n // 5:,})", dispatch_rate),
    ]:
        print(f"{label:<60} {rate:>14,.0f} {1e6 / rate:>9.2f}")
    print()
    print(f"recording cost: Store.apply / reducer alone = {reducer / store_rate:.2f}x  (target < 2x)")
    # the ratio moves with the reducer's own speed: the store's cost per transition, alone
    print(f"recording cost per transition, beyond the reducer: {1e6 / store_rate - 1e6 / reducer:.2f} µs")
    print(
        f"bounded log: Store.apply within {BOUNDED_LOG >> 20} MiB / unbounded = {bounded_rate / store_rate:.2f}x"
    )
    print(f"memory per recorded delta transition, store alone: {store_mem:,.0f} bytes  (target < 1 KB)")
    print(f"memory per transition, whole streaming session (host + client): {host_mem:,.0f} bytes")
    print(
        f"tool calls through the host: {short_turn:,.0f}/s in a turn of 100, {long_turn:,.0f}/s in a turn "
        f"of 3,000; growth {long_turn / short_turn:.2f} (1.0 = flat)"
    )
    print(
        f"text parts through the host: {few_parts:,.0f}/s in a turn of 100, {many_parts:,.0f}/s in a turn "
        f"of 3,000; growth {many_parts / few_parts:.2f} (1.0 = flat)"
    )


if __name__ == "__main__":
    main()
