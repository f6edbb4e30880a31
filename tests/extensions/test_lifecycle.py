"""Lifecycle: activate gives the instance, deactivate releases it when the session is disposed; an
extension that fails to activate is reported and left out while the others work."""

from __future__ import annotations

from ahp_lab.agents.models import ScriptedModel, respond, use
from ahp_lab.extensions import Extension, ExtensionTool, Hooks, Lifecycle

from ..loop_helpers import arun, loop_lab


def test_activate_and_deactivate_bracket_the_session_and_a_failing_activate_is_left_out(tmp_path):
    log: list = []

    class Pool:
        def __init__(self) -> None:
            self.open = True

    async def activate(runtime):
        log.append(("activate", runtime.session))
        return Pool()

    def deactivate(pool):
        pool.open = False
        log.append(("deactivate", pool.open))

    def boom(runtime):
        raise OSError("the socket is taken")

    pooled = Extension(
        "pooled",
        lifecycle=Lifecycle(activate, deactivate),
        tools=[ExtensionTool("PoolOpen", "Is the pool open?", lambda rt, call: str(rt.instance.open))],
        hooks=Hooks(before_model_call=lambda rt: f"pool open: {rt.instance.open}"),
    )
    broken = Extension(
        "broken", lifecycle=Lifecycle(boom), tools=[ExtensionTool("Never", "x", lambda rt, call: "no")]
    )

    async def main():
        lab, agent = await loop_lab(
            tmp_path, ScriptedModel([respond("", use("PoolOpen")), "ok"]), [pooled, broken]
        )
        es = agent.extension_session(lab.session)
        assert es.problems == ["broken failed to activate: OSError: the socket is taken."]
        tools = {t["name"] for t in lab.session_state["serverTools"]}
        assert "PoolOpen" in tools and "Never" not in tools
        turn = await lab.send("is it open?")
        assert turn.tool_calls[0].result_text == "True"
        assert agent.model_calls[0].tail[0]["content"] == "pool open: True"
        await lab.client.request("disposeSession", {"channel": lab.session})
        await lab.aclose()  # waits for the deactivations under way

    arun(main())
    assert log[0][0] == "activate" and log[-1] == ("deactivate", False)
