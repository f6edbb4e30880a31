"""Model-call overhead of extensions: 10 extensions with hooks versus none, in one run.

Run: ``python benchmarks/bench_extensions.py [--turns 60] [--repeat 3]``. Each configuration runs
the same session of ``--turns`` turns against an instant scripted model (one model call per turn),
through the real in-kernel host. Reported per configuration:

* **prep**: the loop's work for one model call before the model is invoked: catalog refresh,
  capability inventory and notice, ``before_model_call`` hooks, the history, the resident tools, the
  request record and its stable-prefix measure;
* **turn**: a whole turn through the host (turn start, streamed deltas, usage, completion);

and each as a ratio to "no extensions", the number to quote. The ten extensions each declare
session state, a resident tool, a small catalog and all three hooks (``before_model_call`` returns a
short context; the tool hooks are not reached, as the model calls no tool).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel

from ahp_lab import Lab
from ahp_lab.agents.loop import LoopAgent
from ahp_lab.agents.models import ModelEvent, ModelResponse
from ahp_lab.extensions import Catalog, CatalogEntry, Extension, ExtensionTool, Hooks, SessionState, Workspace


class Note(BaseModel):
    n: int = 0


def extension(i: int) -> Extension:
    entries = [CatalogEntry(f"tool_{i}_{k}", f"Catalog tool {k} of extension {i}.") for k in range(3)]
    return Extension(
        f"ext{i}",
        session_state=SessionState(Note),
        tools=[ExtensionTool(f"Tool{i}", f"Resident tool of extension {i}.", lambda rt, call: "ok")],
        catalogs=[Catalog("c", lambda rt, entries=entries: entries)],
        hooks=Hooks(
            before_model_call=lambda rt, i=i: f"extension {i}: state {rt.state.value.n}",
            before_tool_call=lambda rt, call: None,
            after_tool_call=lambda rt, call, result: None,
        ),
    )


class InstantModel:
    """Answers at once; records when each call reached it."""

    name = "instant"

    def __init__(self) -> None:
        self.reached: list[float] = []

    async def stream(self, request):
        self.reached.append(time.perf_counter())
        yield ModelEvent("text", "ok")
        yield ModelEvent(
            "done", response=ModelResponse(text="ok", usage={"inputTokens": 1, "outputTokens": 1})
        )


class TimedLoop(LoopAgent):
    """Notes when each model call's preparation starts."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.started: list[float] = []

    async def _model_call(self, *args, **kwargs):
        self.started.append(time.perf_counter())
        return await super()._model_call(*args, **kwargs)


async def run(n_extensions: int, turns: int) -> tuple[list[float], list[float]]:
    model = InstantModel()
    with tempfile.TemporaryDirectory() as tmp:
        agent = TimedLoop(
            model,
            extensions=[extension(i) for i in range(n_extensions)],
            user_tools=None,
            user_config=Path(tmp) / "none.json",
            workspace=Workspace.at(tmp),
        )
        lab = await Lab.open(agent=agent)
        await agent.extension_session(lab.session).ready.wait()
        turn_times = []
        for i in range(turns):
            start = time.perf_counter()
            await lab.send(f"turn {i}")
            turn_times.append(time.perf_counter() - start)
        await lab.aclose()
    prep = [reached - started for started, reached in zip(agent.started, model.reached, strict=True)]
    return prep, turn_times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    results: dict[int, tuple[list[float], list[float]]] = {0: ([], []), 10: ([], [])}
    for _ in range(args.repeat):  # interleaved, so drift on a shared machine hits both alike
        for n in results:
            prep, turn = asyncio.run(run(n, args.turns))
            results[n][0].extend(prep[1:])  # the first call also builds the first notice
            results[n][1].extend(turn[1:])
    base_prep = statistics.median(results[0][0])
    base_turn = statistics.median(results[0][1])
    print(f"{args.turns} turns x {args.repeat} runs, one model call per turn, medians")
    print(f"{'extensions':>10}  {'prep µs':>9}  {'prep ratio':>10}  {'turn ms':>8}  {'turn ratio':>10}")
    for n, (prep, turn) in results.items():
        p, t = statistics.median(prep), statistics.median(turn)
        print(f"{n:>10}  {p * 1e6:9.0f}  {p / base_prep:10.2f}  {t * 1e3:8.2f}  {t / base_turn:10.2f}")


if __name__ == "__main__":
    main()
