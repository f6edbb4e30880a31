"""Catalogs: SearchTools scoring, stable tool refs (a removed one is an error result, not a crash),
and capability notices (first full, then only changes, nothing when unchanged, re-sent after a
truncation or a compaction)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from ahp_lab.agents.models import ScriptedModel, respond, use
from ahp_lab.extensions import Catalog, CatalogEntry, Extension, ToolResult
from ahp_lab.extensions import catalog as cat

from ..loop_helpers import arun, loop_lab


def test_scoring_follows_the_seed_weights():
    terms = cat.terms_of("GitHub create_issue")
    assert terms == ["github", "create_issue"]
    assert cat.score("create_issue", "", ["create_issue"]) == 16
    assert cat.score("mcp__github__create_issue", "", terms) == 16  # 8 + 8
    assert cat.score("open_pr", "Opens a pull request on GitHub", terms) == 2
    assert cat.score("weather", "rain", terms) == 0
    entries = [
        ("r1", "weather", "rain"),
        ("r2", "open_pr", "on github"),
        ("r3", "mcp__github__create_issue", ""),
        ("r4", "github", ""),
    ]
    assert cat.search(entries, "github create_issue") == ["r4", "r3", "r2"]  # 16, 16 (ties by name), 2
    many = [(f"r{i}", f"tool_{i:02}", "") for i in range(20)]
    assert len(cat.search(many, "tool")) == cat.SEARCH_LIMIT


@given(st.text(alphabet="abc_", min_size=1, max_size=6), st.text(alphabet="abc_ ", max_size=20))
def test_an_exact_name_always_outranks_a_description_mention(name, description):
    terms = cat.terms_of(name)
    if terms == [name]:
        assert cat.score(name, "", terms) > cat.score("zz" + name + "zz", description, terms) > 0
        assert cat.score("zz" + name + "zz", "", terms) > cat.score("qqq", name, terms) > 0


class Toolbox:
    """A catalog whose entries a test changes between turns."""

    def __init__(self) -> None:
        self.entries = {
            "convert_units": "Convert between units of measure.",
            "lookup_word": "Look a word up in the dictionary.",
        }
        self.ran: list = []

    def extension(self) -> Extension:
        def discover(runtime):
            return [
                CatalogEntry(
                    n, d, {"type": "object", "properties": {"x": {"type": "string"}}}, execute=self._run(n)
                )
                for n, d in self.entries.items()
            ]

        return Extension("box", catalogs=[Catalog("tools", discover)])

    def _run(self, name):
        def execute(runtime, call):
            self.ran.append((name, call.args))
            return ToolResult(f"{name} ran", details={"args": call.args})

        return execute


def _notice_texts(agent, index: int) -> list[str]:
    call = agent.model_calls[index]
    return [call.request.messages[i]["content"] for i in call.notices]


def test_search_then_execute_by_a_stable_ref_and_a_removed_ref_is_an_error_result(tmp_path):
    box = Toolbox()
    found = {}

    def model(request):
        last = request.messages[-1]
        n = len([m for m in request.messages if m["role"] == "assistant"])
        if n == 0:
            return respond("", use("SearchTools", query="convert units"))
        if n == 1:
            found["matches"] = json.loads(last["content"])
            return respond(
                "", use("ExecuteTool", toolRef=found["matches"][0]["toolRef"], arguments={"x": "1 km"})
            )
        if n == 2 or last["role"] == "tool":
            return "done"
        return respond("", use("ExecuteTool", toolRef=found["matches"][0]["toolRef"], arguments={}))

    async def main():
        lab, agent = await loop_lab(tmp_path, ScriptedModel(model), [box.extension()])
        turn = await lab.send("convert 1 km")
        assert [t["function"]["name"] for t in agent.model_calls[0].request.tools] == [
            "SearchTools",
            "ExecuteTool",
        ]
        assert found["matches"][0] == {
            "toolRef": "box.tools/convert_units",
            "name": "convert_units",
            "description": "Convert between units of measure.",
            "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}},
        }
        assert box.ran == [("convert_units", {"x": "1 km"})]
        assert [tc.name for tc in turn.tool_calls] == ["SearchTools", "ExecuteTool"]
        del box.entries["convert_units"]  # the tool goes away mid-session
        turn = await lab.send("again")
        [tc] = turn.tool_calls
        assert turn.state["state"] == "complete" and tc.status == "completed" and not tc.success
        assert "names no tool any more" in tc.result_text and "SearchTools" in tc.result_text
        await lab.aclose()

    arun(main())


def test_notices_are_full_first_then_only_changes_then_resent_after_truncation_and_compaction(tmp_path):
    box = Toolbox()

    async def main():
        lab, agent = await loop_lab(tmp_path, ScriptedModel(lambda r: "ok"), [box.extension()])
        t1 = await lab.send("one")
        [first] = _notice_texts(agent, 0)
        assert (
            first.startswith("<tool>\nThese tools are loaded on demand.")
            and "- convert_units\n- lookup_word\n</tool>" in first
        )
        await lab.send("two")
        assert _notice_texts(agent, 1) == [first]  # the old notice is history; nothing new was added
        assert agent.model_calls[1].stable
        box.entries["spell_check"] = "Check spelling."
        box.entries["lookup_word"] = "Look a word up (now with examples)."
        del box.entries["convert_units"]
        await lab.send("three")
        *_, diff = _notice_texts(agent, 2)
        assert diff == (
            "<tool>\n"
            + cat._GUIDES["tool"]
            + "\nAdded:\n- spell_check\nRemoved:\n- convert_units\nUpdated:\n- lookup_word\n</tool>"
        )
        assert agent.model_calls[2].stable  # a diff is appended; the sent prefix is untouched
        await lab.adispatch({"type": "chat/truncated", "turnId": t1.id})
        await lab.send("four")
        *_, resent = _notice_texts(agent, 3)
        assert (
            "Added:\n- spell_check\nRemoved:\n- convert_units\nUpdated:\n- lookup_word" in resent
        )  # vs turn 1's notice
        agent.compact(lab.chat)
        await lab.send("five")
        call = agent.model_calls[4]
        assert call.request.messages[0]["content"].startswith("Summary of the conversation so far")
        [full] = _notice_texts(agent, 4)
        assert "- lookup_word\n- spell_check\n</tool>" in full and "Added:" not in full  # sent again in full
        await lab.aclose()

    arun(main())


def test_render_notice_groups_mcp_tools_by_server_and_skills_with_descriptions():
    current = {
        "mcp": {
            "mcp__github__create_issue": ("github", "", "f1"),
            "mcp__github__get_pr": ("github", "", "f2"),
            "mcp__we0__list": ("we0", "", "f3"),
        },
        "skill": {"brainstorming": (None, "Explore ideas before building", "f4")},
    }
    text = cat.render_notice({}, current)
    assert "- github: create_issue, get_pr\n- we0: list" in text
    assert (
        "<skill>\nLoad a skill with the Skill tool before following it.\n- brainstorming: Explore ideas before building\n</skill>"
        in text
    )
    assert cat.render_notice(cat.snapshot(current), current) is None


def test_an_inventory_sent_again_after_a_truncation_is_marked_new(tmp_path):
    """The Model calls view marks the notices a request adds to the previous one; after a
    truncation the inventory is sent again at an index the previous request also had."""
    catalog = Extension("t", catalogs=[Catalog("c", lambda rt: [CatalogEntry("alpha", "a")])])

    async def main():
        lab, agent = await loop_lab(tmp_path, ScriptedModel(["1", "2"]), [catalog])
        await lab.send("one")
        assert agent.model_calls[0].new_notices == [1]
        await lab.adispatch({"type": "chat/truncated"})
        await lab.send("two")
        call = agent.model_calls[-1]
        assert call.notices == [1] and call.new_notices == [1]

    arun(main())


def test_an_entry_listed_for_information_says_so_when_run(tmp_path):
    """An entry without ``execute`` is not 'removed': the model is told it cannot be run."""
    info = Extension("t", catalogs=[Catalog("c", lambda rt: [CatalogEntry("noexec", "metadata only")])])

    async def main():
        model = ScriptedModel([respond("", use("ExecuteTool", toolRef="t.c/noexec", arguments={})), "fine"])
        lab, agent = await loop_lab(tmp_path, model, [info])
        [tc] = (await lab.send("run it")).tool_calls
        assert not tc.success and "listed for information only" in tc.result_text

    arun(main())
