"""The mcp extension with a real MCP server subprocess (examples/mcp_server.py), and the rule the
whole design serves: never modify a sent prefix. Over a 20-turn session with todo, subagent,
skills and mcp active, and an MCP server whose tool list changes mid-session, every model request
starts with the previous request minus its synthetic tail, except right after a truncation or a
compaction, where the notices are sent again."""

from __future__ import annotations

import json
import sys

from ahp_lab.agents.models import ScriptedModel, respond, use
from ahp_lab.extensions import mcp_extension, skills_extension, subagent_extension, todo_extension
from ahp_lab.extensions.subagent import SUBAGENT_INSTRUCTIONS

from ..customizations.conftest import DEMO_SERVER, skill_md, write
from ..loop_helpers import arun, loop_lab, notes, wait_for


def _config(tmp_path) -> None:
    server = {
        "command": sys.executable,
        "args": [str(DEMO_SERVER)],
        "env": {"DEMO_API_KEY": "hunter2-secret"},
    }
    (tmp_path / "user.json").write_text(json.dumps({"mcp": {"servers": {"demo": server}}}))


def _ready(state) -> bool:
    return any(
        e.get("type") == "mcpServer" and e.get("state", {}).get("kind") == "ready"
        for e in state.get("customizations") or ()
    )


def _tools(state) -> set[str]:
    return {t["name"] for t in state.get("serverTools") or ()}


def test_mcp_tools_are_a_catalog_run_through_execute_tool_as_nested_mcp_calls(tmp_path):
    _config(tmp_path)

    def model(request):
        last = request.messages[-1]
        if last["role"] == "user":
            return respond("", use("SearchTools", query="echo"))
        if '"toolRef"' in last["content"]:
            ref = json.loads(last["content"])[0]["toolRef"]
            return respond("", use("ExecuteTool", toolRef=ref, arguments={"text": "hello"}))
        return f"echoed: {last['content']}"

    async def main():
        lab, agent = await loop_lab(tmp_path, ScriptedModel(model), [mcp_extension()])
        await wait_for(lab, _ready)
        assert "mcp__demo__echo" in _tools(lab.session_state)  # the host serves them ...
        turn = await lab.send("say hello through MCP")
        first = agent.model_calls[0]
        assert [t["function"]["name"] for t in first.request.tools] == [
            "SearchTools",
            "ExecuteTool",
        ]  # ... not resident
        [notice] = [first.request.messages[i]["content"] for i in first.notices]
        assert notice.startswith("<mcp>\nThese MCP tools are loaded on demand.")
        assert "- demo: " in notice and "echo" in notice and "slow_count" in notice
        search, execute, echo = turn.tool_calls
        assert (search.name, execute.name, echo.name) == ("SearchTools", "ExecuteTool", "mcp__demo__echo")
        assert json.loads(search.result_text)[0]["toolRef"] == "mcp.tools/mcp__demo__echo"
        sid = next(e["id"] for e in lab.session_state["customizations"] if e["type"] == "mcpServer")
        assert (
            echo.state["contributor"] == {"kind": "mcp", "customizationId": sid}
            and echo.result_text == "hello"
        )
        assert execute.result_text == "hello" and turn.text == "echoed: hello"
        exported = json.dumps([t.envelope() for t in lab.transitions])
        assert "hunter2-secret" not in exported  # the server's env stays host-internal
        await lab.aclose()

    arun(main())


def test_twenty_turns_keep_a_byte_stable_prefix_while_the_mcp_tool_list_changes(tmp_path):
    _config(tmp_path)
    skills = tmp_path / "skills"
    write(
        skills / "triage" / "SKILL.md",
        skill_md("triage", "Triage a bug report", "Reproduce, bisect, report."),
    )

    def plan(n: int) -> list:
        return [
            {"id": str(i), "content": f"step {i}", "status": "completed" if i < n else "in_progress"}
            for i in range(1, n + 1)
        ]

    scripts = {
        1: [use("SearchTools", query="echo count")],
        2: [use("ExecuteTool", toolRef="mcp.tools/mcp__demo__echo", arguments={"text": "ping"})],
        3: [use("UpdateTodos", todos=plan(1))],
        4: [use("Skill", skill="triage")],
        5: [use("SpawnAgent", task="check the logs", title="Log check")],
        6: [
            use(
                "ExecuteTool",
                toolRef="mcp.tools/mcp__demo__add_tool",
                arguments={"name": "late_tool", "description": "Added late."},
            )
        ],
        8: [use("UpdateTodos", todos=plan(2))],
        9: [use("SpawnAgent", task="background scan", run_in_background=True)],
        11: [use("ExecuteTool", toolRef="mcp.tools/mcp__demo__late_tool", arguments={"text": "hi"})],
        14: [use("UpdateTodos", todos=plan(3))],
        17: [use("ExecuteTool", toolRef="mcp.tools/mcp__demo__remove_tool", arguments={"name": "late_tool"})],
    }

    def model(request):
        if request.system == SUBAGENT_INSTRUCTIONS:
            return "subagent done"
        prompt = next(
            m["content"]
            for m in reversed(request.messages)
            if m["role"] == "user" and str(m["content"]).startswith("turn ")
        )
        n = int(prompt.split()[1])
        last = [m for m in request.messages if "_synthetic" not in m][-1]
        if last["role"] == "tool":
            return f"turn {n} done"
        return respond(f"Working on turn {n}.", *scripts.get(n, []))

    async def main():
        lab, agent = await loop_lab(
            tmp_path,
            ScriptedModel(model),
            [todo_extension(), subagent_extension(), skills_extension(), mcp_extension()],
            lab={"directories": [{"path": skills, "contents": "skill"}]},
        )
        await wait_for(
            lab, lambda s: _ready(s) and any(c.get("children") for c in s.get("customizations") or ())
        )
        resets = {}
        for n in range(1, 21):
            if n == 13:
                keep = lab.state()["turns"][9]["id"]  # back to turn 10
                await lab.adispatch({"type": "chat/truncated", "turnId": keep})
                resets[len(agent.model_calls.for_chat(lab.chat))] = "truncation"
            if n == 16:
                agent.compact(lab.chat)
                resets[len(agent.model_calls.for_chat(lab.chat))] = "compaction"
            turn = await lab.send(f"turn {n}")
            assert turn.state["state"] == "complete", turn
            if n == 6:
                await wait_for(lab, lambda s: "mcp__demo__late_tool" in _tools(s))
            if n == 17:
                await wait_for(lab, lambda s: "mcp__demo__late_tool" not in _tools(s))
        calls = agent.model_calls.for_chat(lab.chat)
        await lab.aclose()
        return calls, resets

    calls, resets = arun(main())
    assert len(calls) >= 30
    broken = [i for i, c in enumerate(calls) if i > 0 and not c.stable]
    assert broken == sorted(resets), (broken, resets)  # only where a truncation or compaction happened
    for i in resets:
        assert calls[i].notices, f"the notices are re-sent after the {resets[i]}"
    tools = {json.dumps(c.request.tools, sort_keys=True) for c in calls}
    assert len(tools) == 1  # the resident tool list never changed, though the MCP tools did
    assert [t["function"]["name"] for t in calls[0].request.tools] == [
        "SearchTools", "ExecuteTool", "UpdateTodos", "SpawnAgent", "GetAgentResult", "Skill"
    ]  # fmt: skip
    notices = [c.request.messages[i]["content"] for c in calls for i in c.notices]
    assert any("Added:\n- demo: late_tool" in n for n in notices)
    assert any("Removed:\n- demo: late_tool" in n for n in notices)
    assert all(c.share > 0.5 for i, c in enumerate(calls) if i > 0 and i not in resets)


def test_one_unusable_server_in_the_configuration_leaves_the_others_and_their_catalog(tmp_path):
    """A server entry with neither ``command`` nor ``url`` is one problem told in the chat; the
    other servers start and their tools stay in the mcp catalog. One bad entry used to fail the
    whole extension's activation: no MCP tool for the model at all, though the good server ran."""
    good = {"command": sys.executable, "args": [str(DEMO_SERVER)]}
    servers = {"broken": {"args": ["--nothing-to-run"]}, "demo": good}
    (tmp_path / "user.json").write_text(json.dumps({"mcp": {"servers": servers}}))

    def model(request):
        last = request.messages[-1]
        if last["role"] == "user":
            return respond("", use("SearchTools", query="echo"))
        return f"found: {last['content']}"

    async def main():
        lab, agent = await loop_lab(tmp_path, ScriptedModel(model), [mcp_extension()])
        await wait_for(lab, _ready)
        turn = await lab.send("find the echo tool")
        assert "mcp__demo__echo" in turn.text
        said = [n for n in notes(lab) if "broken" in n]
        assert said == [
            "The session's extensions met 1 problem: mcp could not start the MCP server 'broken': "
            "the MCP server 'broken' needs a 'command' or a 'url'."
        ]
        await lab.aclose()

    arun(main())
