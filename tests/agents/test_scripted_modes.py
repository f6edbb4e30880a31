"""Session modes on the scripted agent: the same config mechanism as an ACP agent's modes."""

from __future__ import annotations

import pytest

from ahp_lab import ActionRejected, Lab
from ahp_lab.agents.scripted import ScriptedAgent

from .conftest import arun, assert_replays


def _lab() -> Lab:
    return Lab(agent=ScriptedAgent(modes=True))


def test_modes_are_a_session_mutable_config_property() -> None:
    lab = _lab()
    config = lab.session_state["config"]
    mode = config["schema"]["properties"]["mode"]
    assert mode["enum"] == ["ask", "code", "plan"] and mode["sessionMutable"] is True
    assert config["values"] == {"mode": "ask"}
    with pytest.raises(ActionRejected, match="mode"):
        lab.dispatch({"type": "session/configChanged", "config": {"mode": "yolo"}})
    assert Lab().session_state.get("config") is None  # without modes: no config, as before


def test_ask_confirms_code_runs_plan_describes_and_exit_plan_switches() -> None:
    async def go() -> None:
        lab = await Lab.open(agent=ScriptedAgent(modes=True))

        @lab.server_tool
        def deploy(target: str = "staging") -> str:
            """Deploy the app."""
            return f"deployed to {target}"

        pending = lab.start("deploy target=prod")
        await lab.wait_for(
            lab.chat,
            lambda c: (
                any(
                    (p.get("toolCall") or {}).get("status") == "pending-confirmation"
                    for p in (c.get("activeTurn") or {}).get("responseParts") or ()
                )
                or None
            ),
        )
        lab.approve()
        assert "deployed to prod" in (await pending).text
        await lab.adispatch({"type": "session/configChanged", "config": {"mode": "code"}})
        turn = await lab.send("deploy target=prod")
        assert turn.tool_calls[0].state["confirmed"] == "not-needed"
        await lab.adispatch({"type": "session/configChanged", "config": {"mode": "plan"}})
        turn = await lab.send("deploy target=prod")
        assert not turn.tool_calls and "plan mode" in turn.text
        turn = await lab.send("exit plan", answers={"mode": "code"})
        assert "Switched to code mode." in turn.text
        assert lab.session_state["config"]["values"]["mode"] == "code"
        assert_replays(lab)

    arun(go())


def test_a_client_resolves_the_config_first_and_creates_the_session_with_its_choice() -> None:
    """resolveSessionConfig before any session gave an empty schema, echoed values the schema does
    not take, and createSession ignored its config: a session asked for in code mode came up in
    ask mode (found by an independent client). Now the chosen values reach the session and its
    agent, and a value the schema does not take fails the creation with the reason."""

    async def go() -> None:
        lab = await Lab.open(agent=ScriptedAgent(modes=True))
        agent = lab.host.agents["scripted"]
        resolved = await lab.client.request("resolveSessionConfig", {"provider": "scripted"})
        assert resolved["schema"]["properties"]["mode"]["enum"] == ["ask", "code", "plan"]
        assert resolved["values"] == {"mode": "ask"}
        chosen = await lab.client.request("resolveSessionConfig", {"config": {"mode": "code"}})
        assert chosen["values"] == {"mode": "code"}
        bogus = await lab.client.request("resolveSessionConfig", {"config": {"mode": "bogus"}})
        assert bogus["values"] == {"mode": "ask"}  # left at the default: createSession would refuse it

        await lab.client.create_session("ahp-session:/coded", config=chosen["values"])
        state = await lab.wait_for(
            "ahp-session:/coded", lambda s: s if s["lifecycle"] != "creating" else None
        )
        assert state["lifecycle"] == "ready" and state["config"]["values"] == {"mode": "code"}
        assert agent.mode("ahp-session:/coded") == "code"
        await lab.client.create_session("ahp-session:/bad", config={"mode": "zzz"})
        failed = await lab.wait_for("ahp-session:/bad", lambda s: s if s["lifecycle"] != "creating" else None)
        assert failed["lifecycle"] == "creationFailed" and "mode" in failed["creationError"]["message"]
        await lab.client.create_session("ahp-session:/odd", config={"speed": 3})
        odd = await lab.wait_for("ahp-session:/odd", lambda s: s if s["lifecycle"] != "creating" else None)
        assert "no property 'speed'" in odd["creationError"]["message"]
        await lab.aclose()

    arun(go())


def test_the_greeting_names_a_few_tools_and_counts_the_rest():
    """The tour's greeting listed every tool, six long MCP names among them, as its first words to
    a new user (a first-hour user); it names five and counts the rest."""
    from ahp_lab.agents.base import ToolInfo
    from ahp_lab.agents.scripted import ScriptedAgent

    tools = [ToolInfo(f"mcp__plugin_demo__tool_{i}") for i in range(8)]
    [greeting] = ScriptedAgent().scenario("Hello!", tools)
    assert "`mcp__plugin_demo__tool_4` and 3 more)" in greeting.text
    assert "tool_5`" not in greeting.text
    [alone] = ScriptedAgent().scenario("Hello!", [])
    assert "available: none yet (register one with `@lab.tool`)" in alone.text
