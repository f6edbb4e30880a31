"""The subagent extension: spawn subagents, in the foreground or in the background (seed 003 §3).

``SpawnAgent`` runs a subagent through the controlled ``call.run_agent`` callback (no host
internals): each is an AHP chat of the session spawned by the tool call (``origin.kind: "tool"``),
and the call's result carries a ``subagent`` content block pointing at it. Children get every
resident tool except these three, so they cannot spawn further. ``run_in_background`` returns at
once; ``GetAgentResult`` waits for or collects a result; the ``before_model_call`` hook reports
finished background subagents once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from ..tools import ToolError
from .contract import Extension, ExtensionTool, Hooks, Lifecycle, ToolResult
from .runtime import AgentRun

__all__ = ["subagent_extension", "SUBAGENT_EXCLUDE_TOOLS", "SUBAGENT_INSTRUCTIONS", "MAX_RUNNING"]

SUBAGENT_EXCLUDE_TOOLS = ("SpawnAgent", "GetAgentResult", "UpdateTodos")
SUBAGENT_INSTRUCTIONS = (
    "You are a subagent. Do the task you are given with the tools you have, then answer with the result only."
)
#: Subagents of one session running at once, at most.
MAX_RUNNING = 4
_SUMMARY = 2000


@dataclass
class SubagentPool:
    """The extension's instance: every subagent it started, by id."""

    runs: dict[str, AgentRun] = field(default_factory=dict)

    def running(self) -> int:
        return sum(r.status == "running" for r in self.runs.values())


class SpawnArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: str = Field(min_length=1, max_length=20_000, description="What the subagent should do.")
    title: str | None = Field(default=None, max_length=200)
    run_in_background: bool = Field(default=False, description="Return at once; collect with GetAgentResult.")


class GetArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    agentId: str
    timeout_s: float = Field(default=30.0, ge=0, le=600)


def _block(run: AgentRun) -> dict:
    return {"type": "subagent", "resource": run.chat, "title": run.title, "agentName": run.agent_id}


async def _spawn(runtime, call) -> ToolResult:
    pool: SubagentPool = runtime.instance
    if pool.running() >= MAX_RUNNING:
        raise ToolError(
            f"at most {MAX_RUNNING} subagents may run at once; collect one with GetAgentResult first"
        )
    args: SpawnArgs = call.args
    run = await call.run_agent(
        args.task,
        instructions=SUBAGENT_INSTRUCTIONS,
        exclude_tools=SUBAGENT_EXCLUDE_TOOLS,
        detached=True,
        title=args.title or args.task[:60],
    )
    pool.runs[run.agent_id] = run
    if args.run_in_background:
        text = f"Background subagent started as {run.agent_id}. Collect its result with GetAgentResult."
        return ToolResult(
            text,
            details={"agentId": run.agent_id, "status": "running"},
            content=[_block(run), {"type": "text", "text": text}],
        )
    try:
        await run.wait()
    except asyncio.CancelledError:
        run.cancel()  # the spawning call was cancelled: so is its subagent
        raise
    run.notified = True
    if run.status == "failed":
        raise ToolError(f"the subagent {run.agent_id} failed: {run.text}")
    return ToolResult(
        run.text,
        details={"agentId": run.agent_id, "status": run.status},
        content=[_block(run), {"type": "text", "text": run.text}],
    )


async def _get(runtime, call) -> ToolResult:
    pool: SubagentPool = runtime.instance
    run = pool.runs.get(call.args.agentId)
    if run is None:
        raise ToolError(f"no subagent has the id {call.args.agentId!r}")
    if run.status == "running" and call.args.timeout_s > 0:
        try:
            await run.wait(call.args.timeout_s)
        except TimeoutError:
            return ToolResult(
                f"{run.agent_id} is still running.", details={"agentId": run.agent_id, "status": "running"}
            )
    run.notified = run.status != "running"
    return ToolResult(
        run.text or f"{run.agent_id} is {run.status}.",
        details={"agentId": run.agent_id, "status": run.status},
    )


def _report(runtime) -> str | None:
    pool: SubagentPool = runtime.instance
    done = [r for r in pool.runs.values() if r.status != "running" and not r.notified]
    if not done:
        return None
    for r in done:
        r.notified = True
    return "\n".join(
        f'Background subagent "{r.title}" ({r.agent_id}) {r.status}: {r.text[:_SUMMARY]} '
        "Collect the full result with GetAgentResult if needed."
        for r in done
    )


def subagent_extension() -> Extension:
    """The subagent extension (id ``subagent``)."""
    return Extension(
        id="subagent",
        lifecycle=Lifecycle(activate=lambda _runtime: SubagentPool()),
        hooks=Hooks(before_model_call=_report),
        tools=[
            ExtensionTool(
                "SpawnAgent",
                "Start a subagent on a task: wait for its answer, or run_in_background and collect it later.",
                _spawn,
                SpawnArgs,
                title="Spawn agent",
                execution_mode="parallel",
            ),
            ExtensionTool(
                "GetAgentResult",
                "Wait for (up to timeout_s) and return the result of a subagent started by SpawnAgent.",
                _get,
                GetArgs,
                title="Get agent result",
                execution_mode="parallel",
            ),
        ],
    )
