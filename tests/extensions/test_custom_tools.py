"""Custom tools (seed 004): discovery rules from real directories, streamed updates, cancellation
that kills the tool's process, lifecycle events, and failures that never stop the rest."""

from __future__ import annotations

import asyncio
import os
import textwrap
from pathlib import Path

import pytest

from ahp_lab.agents.models import ScriptedModel, respond, use
from ahp_lab.extensions import CustomTool, todo_extension

from ..customizations.conftest import write
from ..loop_helpers import actions, arun, loop_lab

TOOL = """
from ahp_lab.extensions import CustomTool

def factory(api):
    async def execute(call_id, params, on_update, ctx, cancel):
        return "{name} ran"
    return CustomTool(name="{name}", description="The {name} tool.", execute=execute)
"""


def tool_module(name: str) -> str:
    return TOOL.replace("{name}", name)


def _tree_tools(lab) -> dict[str, list[str]]:
    out = {}
    for c in lab.session_state.get("customizations") or ():
        if c.get("contents") == "tool":
            out[c["name"]] = [ch["name"] for ch in c.get("children") or ()]
    return out


def _container(lab, directory) -> dict:
    return next(
        c
        for c in lab.session_state["customizations"]
        if c.get("contents") == "tool" and str(directory) in c["name"]
    )


def test_discovery_rules(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    marker = tmp_path / "executed"
    write(home / "tools" / "alpha.py", tool_module("alpha"))
    ws = tmp_path / "ws"
    rel = ws / "more-tools"
    write(rel / "beta.py", tool_module("beta"))
    write(rel / "clash.py", tool_module("UpdateTodos"))  # a built-in's name
    write(rel / "again.py", tool_module("alpha"))  # already loaded from the user directory
    write(rel / "broken.py", "import no_such_module_here\n")
    write(rel / "notes.md", f"open({str(marker)!r}, 'w')\n")  # metadata: never executed
    write(rel / "schema.json", f"__import__('pathlib').Path({str(marker)!r}).touch()\n")
    write(rel / "pkg" / "__init__.py", tool_module("gamma"))
    os.symlink(rel, ws / "linked-tools")
    write(
        ws / ".ahp_lab" / "tools" / "project.py",
        f"open({str(marker)!r}, 'w')\n" + tool_module("project_tool"),
    )

    async def main(trusted: bool):
        lab, agent = await loop_lab(
            tmp_path,
            ScriptedModel(["ok"]),
            [todo_extension()],
            trusted=trusted,
            user_tools="~/tools",
            tool_paths=["more-tools", "./more-tools", "linked-tools", str(rel)],  # one folder, four ways
        )
        tree = _tree_tools(lab)
        server = {t["name"] for t in lab.session_state["serverTools"]}
        container = _container(lab, rel)
        discovery = agent.bridge.discoveries[lab.session]
        await lab.aclose()
        return tree, server, container, discovery

    tree, server, container, discovery = arun(main(False))
    assert tree == {f"Custom tools ({home / 'tools'})": ["alpha"], f"Custom tools ({rel})": ["beta", "gamma"]}
    assert {"alpha", "beta", "gamma", "UpdateTodos"} <= server and "project_tool" not in server
    message = container["load"]["message"]
    assert container["load"]["kind"] == "degraded"
    assert "broken.py: it could not be loaded: ModuleNotFoundError" in message
    assert "clash.py: the tool name 'UpdateTodos' is already taken" in message
    assert "again.py: the tool name 'alpha' is already taken" in message
    assert [s.path.name for s in discovery.sources if s.metadata] == ["notes.md", "schema.json"]
    assert len([s for s in discovery.sources if s.path.name == "beta.py"]) == 1  # de-duplicated
    assert not marker.exists()  # neither the metadata nor the untrusted project folder ran

    tree, server, _container_, _discovery = arun(main(True))
    assert "project_tool" in server and marker.exists()  # trusted: the project folder counts


def test_a_discovered_tool_streams_updates_and_cancellation_kills_its_process(tmp_path):
    pidfile = tmp_path / "pid"
    events = tmp_path / "events"
    write(
        tmp_path / "ws" / "tools" / "worker.py",
        textwrap.dedent(
            f"""
            from pydantic import BaseModel
            from ahp_lab.extensions import CustomTool

            class Count(BaseModel):
                steps: int = 3

            def factory(api):
                async def count(call_id, params, on_update, ctx, cancel):
                    for i in range(1, params.steps + 1):
                        await on_update(f"step {{i}} of {{params.steps}}")
                    return f"counted {{params.steps}}"

                async def wait(call_id, params, on_update, ctx, cancel):
                    await on_update("starting a long job")
                    result = await api.exec("sh", ["-c", "echo $$ > {pidfile}; exec sleep 60"], cancel=cancel)
                    return result.stdout

                def on_session(event):
                    with open({str(events)!r}, "a") as f:
                        f.write(event["reason"] + "\\n")

                return [
                    CustomTool(name="count", description="Count with progress.", parameters=Count, execute=count, on_session=on_session),
                    CustomTool(name="wait_long", description="Run a long process.", execute=wait),
                ]
            """
        ),
    )

    async def main():
        model = ScriptedModel(
            [respond("", use("count", steps=3)), "counted", respond("", use("wait_long")), "never"]
        )
        lab, _agent = await loop_lab(tmp_path, model, tool_paths=["tools"])
        turn = await lab.send("count")
        [tc] = turn.tool_calls
        assert tc.result_text == "counted 3"
        streamed = [
            a["content"][0]["text"]
            for a in actions(lab, "chat/toolCallContentChanged")
            if a["toolCallId"] == tc.id
        ]
        assert streamed == ["step 1 of 3", "step 2 of 3", "step 3 of 3"]

        pending = lab.start("wait")
        await _poll(lambda: pidfile.exists() and pidfile.read_text().strip(), "the tool's process to start")
        pid = int(pidfile.read_text())
        os.kill(pid, 0)  # running
        await lab.cancel()
        turn = await pending
        assert turn.state["state"] == "cancelled"
        await _until_dead(pid)
        await lab.aclose()

    arun(main())
    # lifecycle events reached the tool (shutdown happens as the lab closes)
    assert events.read_text().split()[:1] == ["start"]


async def _poll(condition, what: str, timeout: float = 20.0) -> None:
    """Wait for a condition outside AHP state (a process, a file) under a deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def _dead(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def _until_dead(pid: int) -> None:
    await _poll(lambda: _dead(pid), f"process {pid} to be killed by the cancellation", timeout=10)


def test_sdk_custom_tools_can_abort_the_turn_and_a_failing_factory_is_listed(tmp_path):
    async def stop(call_id, params, on_update, ctx, cancel):
        ctx.abort()
        await asyncio.Event().wait()

    def bad_factory(api):
        raise RuntimeError("no config")

    async def main():
        lab, agent = await loop_lab(
            tmp_path,
            ScriptedModel([respond("", use("stop_now"))]),
            custom_tools=[CustomTool("stop_now", "Abort the turn.", stop), bad_factory],
        )
        turn = await lab.send("stop")
        assert turn.state["state"] == "cancelled"
        source = agent.bridge.discoveries[lab.session].sources[0]
        assert [t.name for t in source.tools] == [
            "stop_now"
        ] and "its factory failed: RuntimeError: no config" in source.error
        # the tree says they were given in code, not found in the workspace's folder
        [container] = [c for c in lab.session_state["customizations"] if c.get("contents") == "tool"]
        assert container["name"] == "Custom tools (given in code)"
        assert container["load"]["message"] == "custom_tools: its factory failed: RuntimeError: no config."
        assert container["children"][0]["uri"] == Path(__file__).resolve().as_uri()
        await lab.aclose()

    arun(main())


def test_a_custom_tool_turned_off_in_the_tree_leaves_the_session_and_renderers_fall_back(tmp_path, capsys):
    def shout(call_id, params, on_update, ctx, cancel):
        return "HEY"

    def broken_renderer(result):
        raise ValueError("cannot draw")

    tool = CustomTool(
        "shout", "Shout.", shout, render_call=lambda args: f"shout({args})", render_result=broken_renderer
    )

    async def main():
        lab, agent = await loop_lab(
            tmp_path,
            ScriptedModel([respond("", use("shout")), "ok", respond("", use("shout")), "ok"]),
            custom_tools=[tool],
        )
        turn = await lab.send("shout")
        call = turn.tool_calls[0]
        assert call._tool().render_call({"a": 1}) == "shout({'a': 1})"
        capsys.readouterr()
        call._ipython_display_()  # the result's renderer raises: the default text, not raw dicts
        assert capsys.readouterr().out == "<ToolCall shout [completed] ok: HEY>\n"
        [container] = [c for c in lab.session_state["customizations"] if c.get("contents") == "tool"]
        child = container["children"][0]["id"]
        await lab.adispatch({"type": "session/customizationToggled", "id": child, "enabled": False})
        assert "shout" not in {t["name"] for t in lab.session_state["serverTools"]}
        turn = await lab.send("shout again")
        assert not turn.tool_calls[0].success and "No tool named 'shout'" in turn.tool_calls[0].result_text
        assert "shout" not in [t["function"]["name"] for t in agent.model_calls[-1].request.tools]
        await lab.aclose()

    arun(main())


def test_a_custom_tool_may_return_seed_004s_content_and_details(tmp_path):
    """Seed 004's ``return {content, details}`` was shown (and told to the model) as raw JSON."""
    seed = {"content": [{"type": "text", "text": "Found 3 files"}], "details": {"count": 3}}
    other = {"content": "not blocks", "details": {"count": 3}}  # not the shape: shown as its JSON

    def returning(value):
        return lambda call_id, params, on_update, ctx, cancel: value

    model = ScriptedModel([respond("", use("stats"), use("odd")), "Counted."])

    async def main():
        lab, agent = await loop_lab(
            tmp_path,
            model,
            custom_tools=[
                CustomTool("stats", "Count.", returning(seed)),
                CustomTool("odd", "Odd.", returning(other)),
            ],
        )
        turn = await lab.send("count")
        await lab.aclose()
        return turn

    turn = arun(main())
    stats, odd = turn.tool_calls
    assert stats.state["content"] == [{"type": "text", "text": "Found 3 files"}]
    assert stats.state["structuredContent"] == {"count": 3}
    told = [m for m in model.requests[1].messages if m["role"] == "tool"]
    assert told[0]["content"] == "Found 3 files"
    assert odd.state["structuredContent"] == other  # other values work as before
    assert '"not blocks"' in told[1]["content"]


def test_factories_that_never_finish_are_named_and_the_other_tools_load(tmp_path, monkeypatch):
    """An async factory that never returned held Lab.open for 30 s, then a blank TimeoutError: the
    file was not named and every other tool was lost. Each then had its own FACTORY_TIMEOUT one after
    another, so three that hung held it past the 30 s all the same (review); sharing one deadline, a
    hung one left the factories after it no time (second review). They run together."""
    from ahp_lab.agents import loop
    from ahp_lab.extensions import custom_tools

    monkeypatch.setattr(custom_tools, "FACTORY_TIMEOUT", 0.2, raising=False)
    monkeypatch.setattr(loop, "READY_TIMEOUT", 0.5, raising=False)
    folder = tmp_path / "ws" / "tools"
    for name in ("hanging", "hanging2", "hanging3"):
        write(
            folder / f"{name}.py",
            "import asyncio\n\nasync def factory(api):\n    await asyncio.Event().wait()\n",
        )
    write(folder / "good.py", tool_module("good"))
    slow = tool_module("slow").replace(
        "def factory(api):", "async def factory(api):\n    await asyncio.sleep(0.05)"
    )
    write(folder / "zz_slow.py", "import asyncio\n" + slow)

    async def main():
        lab, _agent = await loop_lab(
            tmp_path, ScriptedModel([respond("", use("good")), "ok"]), tool_paths=["tools"]
        )
        container = _container(lab, folder)
        for name in ("hanging", "hanging2", "hanging3"):
            said = f"{name}.py: its factory did not finish within 0.2 s; its tools are left out"
            assert said in container["load"]["message"]
        assert sorted(c["name"] for c in container["children"]) == ["good", "slow"]
        turn = await lab.send("run good")
        assert turn.tool_calls[0].result_text == "good ran"
        await lab.aclose()

    arun(main())


def test_wait_ready_says_what_it_waited_for(tmp_path):
    """wait_ready past its timeout raised a TimeoutError with no message."""
    from ahp_lab import Lab
    from ahp_lab.agents.loop import LoopAgent
    from ahp_lab.extensions import Extension, Lifecycle, Workspace

    async def main():
        entered, gate = asyncio.Event(), asyncio.Event()

        async def activate(runtime):
            entered.set()
            await gate.wait()

        slow = Extension("slow", lifecycle=Lifecycle(activate=activate))
        (tmp_path / "ws").mkdir()
        agent = LoopAgent(
            extensions=[slow],
            user_tools=None,
            user_config=tmp_path / "u.json",
            workspace=Workspace.at(tmp_path / "ws"),
        )
        opening = asyncio.ensure_future(Lab.open(agent=agent))
        await entered.wait()
        [session] = agent.bridge.sessions
        with pytest.raises(TimeoutError) as raised:
            await agent.wait_ready(session, timeout=0.05)
        said = str(raised.value)
        gate.set()
        lab = await opening
        assert said.startswith("The session's custom tools and extensions were not ready within 0.05 s")
        assert "agent.wait_ready(session, timeout=...)" in said
        await lab.aclose()

    arun(main())


def test_a_factory_that_returns_no_tool_says_what_it_returned(tmp_path):
    """A factory returning 42 read "the factory returned a int, not a CustomTool"."""

    async def main():
        lab, agent = await loop_lab(tmp_path, custom_tools=[lambda api: 42])
        error = agent.bridge.discoveries[lab.session].sources[0].error
        await lab.aclose()
        return error

    assert arun(main()) == (
        "its factory failed: TypeError: the factory returned an object of type int, not a CustomTool or a list of them"
    )


def test_a_sync_factory_that_blocks_takes_no_time_from_the_others(tmp_path, monkeypatch):
    """The factories ran together: a sync one that blocked stalled the loop, and an async one that
    needed a moment was reported as not finished in time (third review)."""
    from ahp_lab.extensions import custom_tools

    monkeypatch.setattr(custom_tools, "FACTORY_TIMEOUT", 0.3, raising=False)
    folder = tmp_path / "ws" / "tools"
    fast = tool_module("fast").replace(
        "def factory(api):", "async def factory(api):\n    await asyncio.sleep(0.05)"
    )
    write(folder / "a_fast.py", "import asyncio\n" + fast)
    write(
        folder / "b_sync.py",
        "import time\n"
        + tool_module("syncy").replace("def factory(api):", "def factory(api):\n    time.sleep(0.6)"),
    )

    async def main():
        lab, _agent = await loop_lab(tmp_path, ScriptedModel(["ok"]), tool_paths=["tools"])
        container = _container(lab, folder)
        assert sorted(c["name"] for c in container["children"]) == ["fast", "syncy"], container.get("load")
        await lab.aclose()

    arun(main())


def test_a_tool_file_without_a_factory_or_with_a_wrong_execute_says_so_when_it_loads(tmp_path, monkeypatch):
    """A custom tool whose ``execute`` takes the wrong arguments loaded, and failed only when the
    model called it ("execute() takes 1 positional argument but 5 were given"); a file without a
    factory read "it could not be loaded: ToolError: …" (a first-hour user). Both are said at load."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    tools = tmp_path / "ws" / "tools"
    write(
        tools / "wrong.py",
        tool_module("wrong").replace("(call_id, params, on_update, ctx, cancel)", "(params)"),
    )
    write(tools / "nofactory.py", "x = 1\n")
    write(tools / "right.py", tool_module("right"))

    async def main():
        lab, agent = await loop_lab(tmp_path, tool_paths=["tools"])
        found = agent.bridge.discoveries[lab.session]
        errors = {s.path.name: s.error for s in found.sources}
        names = [t.name for s in found.sources for t in s.tools]
        await lab.aclose()
        return errors, names

    errors, names = arun(main())
    assert names == ["right"]
    assert errors["nofactory.py"] == "it defines no factory(api) function"
    assert errors["wrong.py"].startswith(
        "the tool 'wrong' is not valid: TypeError: execute(params) cannot be called"
    )
