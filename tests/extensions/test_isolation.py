"""One extension's trouble stays its own: an ``activate`` or a catalog's ``discover`` that hangs
meets a deadline, a catalog that fails once keeps what it found (the model is not told its tools
were removed), and two extensions that claim the same tool or command leave the session usable."""

from __future__ import annotations

import asyncio

from ahp_lab.agents.models import ScriptedModel
from ahp_lab.extensions import Catalog, CatalogEntry, Extension, ExtensionTool, Lifecycle
from ahp_lab.extensions import session as extension_session

from ..loop_helpers import arun, loop_lab


def test_a_catalog_that_fails_or_hangs_keeps_its_entries_and_is_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(extension_session, "CATALOG_TIMEOUT", 0.2)
    calls = []

    async def discover(runtime):
        calls.append(len(calls))
        if len(calls) == 2:
            raise ConnectionError("the registry is down")
        if len(calls) == 3:
            await asyncio.Event().wait()  # never answers
        return [
            CatalogEntry("alpha", "First tool", {"type": "object"}),
            CatalogEntry("beta", "Second", {"type": "object"}),
        ]

    ext = Extension("registry", catalogs=[Catalog("tools", discover)])

    async def main():
        lab, agent = await loop_lab(tmp_path, ScriptedModel(["one", "two", "three", "four"]), [ext])
        for text in ("one", "two", "three", "four"):
            turn = await asyncio.wait_for(lab.send(text), 10)
            assert turn.status == "complete", turn.error
        first, failed, hung, after = agent.model_calls[:4]
        assert "- alpha" in first.request.messages[-1]["content"]
        for record in (failed, hung, after):  # nothing was removed: no notice at all
            assert not any(
                "Removed" in str(m.get("content"))
                for m in record.request.messages[len(first.request.messages) :]
            )
        assert failed.reports == [
            "registry.tools.discover failed: ConnectionError: the registry is down; skipped for this call"
        ]
        assert hung.reports == ["registry.tools.discover did not finish within 0.2 s; skipped for this call"]
        assert after.reports == [] and len(calls) == 4  # asked again, and answering again
        assert "the registry is down" in lab.chat_state["turns"][1]["responseParts"][0]["content"]

    arun(main())


def test_an_activate_that_never_returns_leaves_only_its_extension_out(tmp_path, monkeypatch):
    monkeypatch.setattr(extension_session, "ACTIVATE_TIMEOUT", 0.2)

    async def hang(runtime):
        await asyncio.Event().wait()

    stuck = Extension(
        "stuck", lifecycle=Lifecycle(hang), tools=[ExtensionTool("Never", "x", lambda rt, call: "no")]
    )
    fine = Extension("fine", tools=[ExtensionTool("Works", "y", lambda rt, call: "yes")])

    async def main():
        lab, agent = await asyncio.wait_for(loop_lab(tmp_path, ScriptedModel(["ok"]), [stuck, fine]), 10)
        assert agent.extension_session(lab.session).problems == [
            "stuck did not activate within 0.2 s; it is left out of the session."
        ]
        tools = {t["name"] for t in lab.session_state["serverTools"]}
        assert "Works" in tools and "Never" not in tools
        assert (await lab.send("hi")).status == "complete"

    arun(main())


def test_two_extensions_claiming_one_tool_or_command_keep_the_first(tmp_path):
    def commands(name: str):
        def activate(runtime):
            runtime.register_command("go", f"from {name}", lambda args: f"{name} expanded {args}")

        return Lifecycle(activate)

    a = Extension(
        "a", lifecycle=commands("a"), tools=[ExtensionTool("Same", "from a", lambda rt, call: "a's")]
    )
    b = Extension(
        "b", lifecycle=commands("b"), tools=[ExtensionTool("Same", "from b", lambda rt, call: "b's")]
    )

    async def main():
        lab, agent = await loop_lab(tmp_path, ScriptedModel(["ok"]), [a, b])  # it used to fail to open
        es = agent.extension_session(lab.session)
        assert es.problems == [
            "b defines the tool 'Same', which a defines too: b's is left out.",
            "b registers the command /go, which a registered first: b's is left out.",
        ]
        [same] = [t for t in lab.session_state["serverTools"] if t["name"] == "Same"]
        assert same["description"] == "from a"
        assert es.all_commands()["go"].description == "from a"

    arun(main())


def test_a_skill_list_without_the_skill_tool_is_named_as_a_problem(tmp_path):
    """The inventory notice tells the model to load skills with the Skill tool: a catalog listing
    skills in a session without that tool would send the model to a tool that does not exist."""
    lister = Extension(
        "mine",
        catalogs=[Catalog("skills", lambda rt: [CatalogEntry("deploy", "How we deploy")], inventory="skill")],
    )

    async def main():
        lab, agent = await loop_lab(tmp_path, ScriptedModel(["ok"]), [lister])
        assert any(
            "no extension of the session offers the Skill tool" in p
            for p in agent.extension_session(lab.session).problems
        )

    arun(main())
