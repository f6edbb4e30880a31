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
