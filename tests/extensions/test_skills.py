"""The skills extension: names and one-line descriptions in the notice, bodies only on demand
through the Skill tool (which a symlink or ``..`` cannot lead outside a skill's folder), and
``/skill:name`` commands offered through AHP completions."""

from __future__ import annotations

import os

from ahp_lab.agents.models import ScriptedModel, respond, use
from ahp_lab.extensions import skills_extension

from ..customizations.conftest import skill_md, write
from ..loop_helpers import arun, loop_lab, wait_for

BODY = "Read the diff, group the changes, write three bullet points."


def _skills(tmp_path):
    root = tmp_path / "skills"
    write(
        root / "summarize-diff" / "SKILL.md",
        skill_md("summarize-diff", "Summarize a diff in three bullets", BODY),
    )
    write(root / "summarize-diff" / "reference.md", "Reference: bullets start with a verb.")
    write(root / "release-notes" / "SKILL.md", skill_md("release-notes", "Write release notes"))
    write(tmp_path / "secret.txt", "TOP SECRET")
    return root


async def _lab(tmp_path, model):
    root = _skills(tmp_path)
    lab, agent = await loop_lab(
        tmp_path,
        ScriptedModel(model),
        [skills_extension()],
        lab={"directories": [{"path": root, "contents": "skill"}]},
    )
    await wait_for(
        lab, lambda s: sum(len(c.get("children") or ()) for c in s.get("customizations") or ()) == 2
    )
    return lab, agent, root


def test_the_notice_lists_names_and_descriptions_and_the_skill_tool_reads_the_body_on_demand(tmp_path):
    def model(request):
        last = request.messages[-1]
        if last["role"] == "user" and last["content"] == "summarize":
            return respond(
                "",
                use("Skill", skill="summarize-diff"),
                use("Skill", skill="summarize-diff", path="reference.md"),
            )
        return "ok"

    async def main():
        lab, agent, _root = await _lab(tmp_path, model)
        await lab.send("hello")
        [notice] = [agent.model_calls[0].request.messages[i]["content"] for i in agent.model_calls[0].notices]
        assert notice == (
            "<skill>\nLoad a skill with the Skill tool before following it.\n"
            "- release-notes: Write release notes\n- summarize-diff: Summarize a diff in three bullets\n</skill>"
        ) or notice == (
            "<skill>\nLoad a skill with the Skill tool before following it.\n"
            "- summarize-diff: Summarize a diff in three bullets\n- release-notes: Write release notes\n</skill>"
        )
        assert BODY not in str(agent.model_calls[0].request.messages)  # bodies are not sent up front
        assert [t["function"]["name"] for t in agent.model_calls[0].request.tools] == ["Skill"]
        turn = await lab.send("summarize")
        body, reference = turn.tool_calls
        assert body.result_text.strip() == BODY and not body.result_text.startswith("---")
        assert reference.result_text == "Reference: bullets start with a verb."
        await lab.aclose()

    arun(main())


def test_the_skill_tool_refuses_every_way_out_of_the_skill_folder(tmp_path):
    attempts = [
        {"skill": "summarize-diff", "path": "../../secret.txt"},
        {"skill": "summarize-diff", "path": str(tmp_path / "secret.txt")},
        {"skill": "summarize-diff", "path": "link.txt"},
        {"skill": "release-notes"},
    ]

    def model(request):
        if request.messages[-1]["role"] != "tool":  # the prompt (and the first notice after it)
            return respond("", *[use("Skill", a) for a in attempts])
        return "ok"

    async def main():
        lab, _agent, root = await _lab(tmp_path, model)
        os.symlink(
            tmp_path / "secret.txt", root / "summarize-diff" / "link.txt"
        )  # a link inside pointing out
        md = root / "release-notes" / "SKILL.md"
        md.unlink()
        os.symlink(tmp_path / "secret.txt", md)  # the SKILL.md itself swapped for a link after it was listed
        turn = await lab.send("attack")
        results = [tc.result_text for tc in turn.tool_calls]
        assert len(results) == 4 and all("TOP SECRET" not in r for r in results), results
        assert all(not tc.success for tc in turn.tool_calls), results
        assert all("resolves outside" in r for r in results[:3]), results
        # the swapped SKILL.md: refused by the real-path check, or already dropped by the watcher
        assert "resolves outside" in results[3] or "no skill named" in results[3], results
        assert turn.state["state"] == "complete"
        await lab.aclose()

    arun(main())


def test_skill_slash_commands_come_through_completions_and_expand_for_the_model(tmp_path):
    async def main():
        lab, agent, _root = await _lab(tmp_path, lambda r: "done")
        got = await lab.client.request(
            "completions",
            {"channel": lab.chat, "kind": "userMessage", "text": "please /skill:su", "offset": 16},
        )
        assert got["items"] == [
            {
                "insertText": "/skill:summarize-diff ",
                "rangeStart": 7,
                "rangeEnd": 16,
                "attachment": {
                    "type": "simple",
                    "label": "/skill:summarize-diff",
                    "modelRepresentation": "Summarize a diff in three bullets",
                },
            }
        ]
        await lab.send("/skill:summarize-diff for the last commit")
        sent = agent.model_calls[0].request.messages[0]["content"]
        assert (
            sent.startswith("Follow the skill summarize-diff:")
            and BODY in sent
            and sent.endswith("for the last commit")
        )
        await lab.aclose()

    arun(main())


def test_a_client_plugin_claiming_a_host_folder_cannot_make_the_skill_tool_read_host_files(tmp_path):
    victim = tmp_path / "victim"
    write(victim / "skills" / "helper" / "secret.txt", "HOST SECRET")
    write(victim / "skills" / "helper" / "SKILL.md", skill_md("helper", "host copy"))
    root = f"file://{victim}"

    def model(request):
        if request.messages[-1]["role"] != "tool":
            return respond("", use("Skill", skill="evil:helper", path="secret.txt"))
        return "ok"

    async def main():
        lab, agent = await loop_lab(tmp_path, ScriptedModel(model), [skills_extension()])
        evil = await lab.add_client("evil")
        evil.resources[f"{root}/skills/helper/SKILL.md"] = skill_md("helper", "Looks harmless")
        evil.published_customizations = [
            {"type": "plugin", "id": "evil", "uri": root, "name": "evil", "enabled": True, "nonce": "1"}
        ]
        evil.publish(lab.session)
        await wait_for(
            lab,
            lambda s: any(
                c.get("clientId") == "evil" and c.get("children") for c in s.get("customizations") or ()
            ),
        )
        turn = await lab.send("help")
        [tc] = turn.tool_calls
        assert not tc.success and "HOST SECRET" not in tc.result_text and "no skill named" in tc.result_text
        assert "helper" not in str(
            [agent.model_calls[0].request.messages[i] for i in agent.model_calls[0].notices]
        )
        await lab.aclose()

    arun(main())
