"""The subagent extension: each subagent is an AHP chat spawned by the tool call, its result comes
back (foreground) or is reported through before_model_call (background); children cannot spawn."""

from __future__ import annotations

import asyncio

from ahp_lab.agents.models import ScriptedModel, respond, use
from ahp_lab.extensions import subagent_extension, todo_extension
from ahp_lab.extensions.subagent import SUBAGENT_INSTRUCTIONS

from ..loop_helpers import arun, loop_lab


def _is_child(request) -> bool:
    return request.system == SUBAGENT_INSTRUCTIONS


def test_a_foreground_subagent_runs_in_a_tool_spawned_chat_and_cannot_spawn_further(tmp_path):
    child_requests = []

    def model(request):
        last = request.messages[-1]
        if _is_child(request):
            child_requests.append(request)
            if last["role"] == "user":  # the child tries to spawn a grandchild
                return respond("", use("SpawnAgent", task="recurse"))
            return "The answer is 42."
        if last["role"] == "user":
            return respond("Asking a helper.", use("SpawnAgent", task="compute the answer", title="Helper"))
        return f"The helper said: {last['content']}"

    async def main():
        lab, agent = await loop_lab(tmp_path, ScriptedModel(model), [subagent_extension(), todo_extension()])
        turn = await lab.send("what is the answer?")
        [tc] = turn.tool_calls
        assert tc.success and tc.result_text.endswith("The answer is 42.")
        [block] = [b for b in tc.state["content"] if b["type"] == "subagent"]
        child = block["resource"]
        child_state = lab.state(child)
        assert child_state["origin"] == {"kind": "tool", "chat": lab.chat, "toolCallId": tc.id}
        assert child in [c["resource"] for c in lab.session_state["chats"]]
        assert block["title"] == "Helper" and block["agentName"] == "subagent-1"
        # the child's tool list has no SpawnAgent / GetAgentResult / UpdateTodos, and its attempt was refused
        tools = {t["function"]["name"] for t in child_requests[0].tools}
        assert not tools & {"SpawnAgent", "GetAgentResult", "UpdateTodos"}
        assert "not available to a subagent" in child_requests[-1].messages[-1]["content"]
        assert not lab.state(child)["turns"][0]["responseParts"][0].get("toolCall")
        assert turn.text.endswith("The helper said: " + tc.result_text)
        await lab.aclose()

    arun(main())


def test_a_background_subagent_is_reported_once_by_before_model_call(tmp_path):
    release = asyncio.Event()

    async def model(request):
        last = request.messages[-1]
        if _is_child(request):
            await release.wait()
            return "background result"
        if last["role"] == "user" and last["content"] == "start":
            return respond("", use("SpawnAgent", task="slow job", run_in_background=True))
        return "noted"

    async def main():
        lab, agent = await loop_lab(tmp_path, ScriptedModel(model), [subagent_extension()])
        turn = await lab.send("start")
        [tc] = turn.tool_calls
        assert "Background subagent started as subagent-1" in tc.result_text
        assert turn.state["state"] == "complete"  # the main turn did not wait
        release.set()
        run = agent.extension_session(lab.session).instances["subagent"].runs["subagent-1"]
        await asyncio.wait_for(run.wait(), 20)
        assert run.status == "completed" and run.chat in [
            b["resource"] for b in tc.state["content"] if b["type"] == "subagent"
        ]
        await lab.send("anything new?")
        tail = [m["content"] for m in agent.model_calls[-1].tail]
        assert (
            len(tail) == 1
            and 'Background subagent "slow job" (subagent-1) completed: background result' in tail[0]
        )
        await lab.send("and now?")
        assert agent.model_calls[-1].tail == []  # reported once
        await lab.aclose()

    arun(main())


def test_get_agent_result_waits_for_a_background_subagent(tmp_path):
    def model(request):
        last = [m for m in request.messages if "_synthetic" not in m][-1]  # not a hook's tail
        if _is_child(request):
            return "collected"
        if last["role"] == "user":
            return respond("", use("SpawnAgent", task="job", run_in_background=True))
        if "started as" in last["content"]:
            return respond("", use("GetAgentResult", agentId="subagent-1", timeout_s=20))
        return "done"

    async def main():
        lab, agent = await loop_lab(tmp_path, ScriptedModel(model), [subagent_extension()])
        turn = await lab.send("go")
        spawn, get = turn.tool_calls
        assert get.result_text == "collected" and get.state["structuredContent"] == {
            "agentId": "subagent-1",
            "status": "completed",
        }
        await lab.send("more")
        assert agent.model_calls[-1].tail == []  # collected, so not reported again
        await lab.aclose()

    arun(main())
