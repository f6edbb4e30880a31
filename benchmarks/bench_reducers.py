"""Reducer throughput: how the per-action cost grows with text length, history and tree size.

Run: ``python benchmarks/bench_reducers.py [--quick]``. Prints a table of µs per action and
actions/s per case, and the growth ratios (rate at the large size / rate at the small size) that
issue 2 asks about. Not a test: machines are noisy, so compare the ratios within one run.
"""

from __future__ import annotations

import argparse
import gc
import time

from ahp_lab.reducers import reduce_chat, reduce_session

NOW = 1_700_000_000_000
USER = {"text": "hello", "origin": {"kind": "user"}}


def completed_turn(i: int) -> dict:
    return {
        "id": f"old-{i}",
        "startedAt": "2026-01-01T00:00:00.000Z",
        "duration": 10,
        "message": USER,
        "responseParts": [{"kind": "markdown", "id": f"m{i}", "content": "an answer"}],
        "state": "complete",
    }


def chat_state(turns: int = 0, parts: list | None = None) -> dict:
    return {
        "resource": "ahp-chat:/bench",
        "title": "bench",
        "status": 8,
        "modifiedAt": "2026-01-01T00:00:00.000Z",
        "turns": [completed_turn(i) for i in range(turns)],
        "activeTurn": {
            "id": "t",
            "startedAt": "2026-01-01T00:00:00.000Z",
            "message": USER,
            "responseParts": parts if parts is not None else [],
        },
    }


def best_rate(run, repeats: int) -> float:
    """Best actions/s over ``repeats`` runs of ``run() -> (actions, seconds)``."""
    best = 0.0
    for _ in range(repeats):
        gc.collect()
        n, seconds = run()
        best = max(best, n / seconds)
    return best


def stream(initial_text: str, turns: int, deltas: int):
    def run():
        state = chat_state(turns, [{"kind": "markdown", "id": "p", "content": initial_text}])
        actions = [
            {"type": "chat/delta", "turnId": "t", "partId": "p", "content": "tok "} for _ in range(deltas)
        ]
        start = time.perf_counter()
        for action in actions:
            state = reduce_chat(state, action, NOW)
        elapsed = time.perf_counter() - start
        assert len(state["activeTurn"]["responseParts"][0]["content"]) == len(initial_text) + 4 * deltas
        return deltas, elapsed

    return run


def turn_complete(turns: int, n: int):
    state = chat_state(turns, [{"kind": "markdown", "id": "p", "content": "done"}])
    action = {"type": "chat/turnComplete", "turnId": "t", "duration": 5}

    def run():
        start = time.perf_counter()
        for _ in range(n):
            out = reduce_chat(state, action, NOW)
        elapsed = time.perf_counter() - start
        assert len(out["turns"]) == turns + 1
        return n, elapsed

    return run


def tool_call_lifecycle(parts: int, calls: int):
    filler = [{"kind": "markdown", "id": f"f{i}", "content": "x"} for i in range(parts - 1)]

    def actions_for(i: int) -> list[dict]:
        base = {"turnId": "t", "toolCallId": f"tc{i}"}
        return [
            {"type": "chat/toolCallStart", **base, "toolName": "run", "displayName": "Run"},
            {"type": "chat/toolCallDelta", **base, "content": '{"a":1}'},
            {"type": "chat/toolCallReady", **base, "invocationMessage": "Run", "toolInput": '{"a":1}'},
            {"type": "chat/toolCallConfirmed", **base, "approved": True, "confirmed": "user-action"},
            {"type": "chat/toolCallContentChanged", **base, "content": [{"type": "text", "text": "..."}]},
            {"type": "chat/toolCallComplete", **base, "result": {"success": True, "pastTenseMessage": "Ran"}},
        ]

    def run():
        total, elapsed = 0, 0.0
        for i in range(calls):
            state = chat_state(0, list(filler))  # `parts - 1` parts, then the call makes `parts`
            acts = actions_for(i)
            start = time.perf_counter()
            for action in acts:
                state = reduce_chat(state, action, NOW)
            elapsed += time.perf_counter() - start
            total += len(acts)
            assert state["activeTurn"]["responseParts"][-1]["toolCall"]["status"] == "completed"
        return total, elapsed

    return run


def customization_toggles(plugins: int, children: int, n: int):
    tree = [
        {
            "type": "plugin",
            "id": f"p{p}",
            "uri": f"file:///plugins/{p}",
            "name": f"plugin {p}",
            "enabled": True,
            "children": [
                {"type": "skill", "id": f"p{p}/s{c}", "uri": f"file:///plugins/{p}/s{c}", "name": f"s{c}"}
                for c in range(children)
            ],
        }
        for p in range(plugins)
    ]
    state = {
        "provider": "x",
        "title": "t",
        "status": 1,
        "lifecycle": "ready",
        "activeClients": [],
        "chats": [],
        "customizations": tree,
    }
    # Spread the targets over the whole tree: half containers, half children.
    targets = [
        f"p{(i * 7919) % plugins}" if i % 2 else f"p{(i * 7919) % plugins}/s{i % children}" for i in range(n)
    ]
    actions = [
        {"type": "session/customizationToggled", "id": t, "enabled": bool(i % 3)}
        for i, t in enumerate(targets)
    ]

    def run():
        s = state
        start = time.perf_counter()
        for action in actions:
            s = reduce_session(s, action, NOW)
        return n, time.perf_counter() - start

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations (smoke run)")
    args = parser.parse_args()
    k = 10 if args.quick else 1
    rep = 3 if args.quick else 5
    kb, mb4 = "x" * 1024, "x" * (4 * 1024 * 1024)
    rows: list[tuple[str, str, float]] = []

    def case(group: str, label: str, run) -> float:
        rate = best_rate(run, rep)
        rows.append((group, label, rate))
        print(f"  {group:<28} {label:<26} {1e6 / rate:10.2f} µs/action {rate:14,.0f} actions/s", flush=True)
        return rate

    print(f"reducer throughput (best of {rep} runs)")
    d_1k = case("chat/delta", "part holds 1 KB", stream(kb, 10, 20_000 // k))
    d_4m = case("chat/delta", "part holds 4 MB", stream(mb4, 10, 20_000 // k))
    d_10 = case("chat/delta", "chat holds 10 turns", stream(kb, 10, 20_000 // k))
    d_10k = case("chat/delta", "chat holds 10,000 turns", stream(kb, 10_000, 20_000 // k))
    c_10 = case("chat/turnComplete", "chat holds 10 turns", turn_complete(10, 20_000 // k))
    c_100k = case("chat/turnComplete", "chat holds 100,000 turns", turn_complete(100_000, 200 // min(k, 2)))
    t_5 = case("tool-call lifecycle", "5 parts in the turn", tool_call_lifecycle(5, 2_000 // k))
    t_500 = case("tool-call lifecycle", "500 parts in the turn", tool_call_lifecycle(500, 200 // k))
    g_10 = case(
        "customizationToggled", "10 plugins x 20 children", customization_toggles(10, 20, 20_000 // k)
    )
    g_1k = case(
        "customizationToggled", "1,000 plugins x 20 children", customization_toggles(1000, 20, 2_000 // k)
    )

    print("\ngrowth ratios (rate at large / rate at small; 1.0 = no slowdown)")
    print(f"  chat/delta 4 MB vs 1 KB part            {d_4m / d_1k:6.2f}   (issue 2 requires >= 0.8)")
    print(f"  chat/delta 10,000 vs 10 turns           {d_10k / d_10:6.2f}   (issue 2 requires >= 0.8)")
    print(f"  chat/turnComplete 100,000 vs 10 turns   {c_100k / c_10:6.4f}   (copies the turns array)")
    print(f"  tool-call lifecycle 500 vs 5 parts      {t_500 / t_5:6.3f}")
    print(f"  customizationToggled 21,000 vs 210 entries {g_1k / g_10:6.3f}")


if __name__ == "__main__":
    main()
