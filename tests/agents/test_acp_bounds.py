"""The agent's texts that reach state through the session or a turn's end are bounded and clean:
its error answers, its modes' and config options' names, a tool call's titles (real subprocesses)."""

from __future__ import annotations

import json
from pathlib import Path

from ahp_lab.protocol.jsonvalue import to_json

from .conftest import SECRET_ENV, acp_lab, arun, bad_agent, pending_call


def test_an_agents_error_answer_is_cut(tmp_path: Path) -> None:
    """An agent answered the prompt with a JSON-RPC error of 20 MB (its data): the turn's
    ``chat/error`` carried it whole, and a remote client was cut off for it (ACP agent round 11).
    It is cut as a title is, at 1,000 characters, saying how many more came, and a key the cut
    falls in is masked whole."""
    key = SECRET_ENV["BAD_AGENT_KEY"]

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("big_texts")) as lab:
            turn = await lab.send("go")
            message = turn.error["message"]
            assert turn.status == "error" and len(message) < 1200, len(message)
            assert message.endswith(" more characters]") and "e***" in message
            assert key[:5] not in json.dumps(to_json(turn.state))

    arun(go())


def test_the_names_and_descriptions_of_an_agents_modes_and_options_are_cut(tmp_path: Path) -> None:
    """An agent's session/new offered a mode whose description was 20 MB, all of it in the
    session's state (ACP agent round 11). Mode names and descriptions, and config options' names,
    descriptions and choice labels, are cut as a title is, at 1,000 characters."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("big_texts")) as lab:
            props = lab.session_state["config"]["schema"]["properties"]
            texts = [
                props["mode"]["enumLabels"][0],
                props["mode"]["enumDescriptions"][0],
                *(props[k][field] for k in ("v", "f") for field in ("title", "description")),
                props["v"]["enumLabels"][0],
                props["v"]["enumDescriptions"][0],
            ]
            assert texts == ["b" * 1000 + "…[2,999,000 more characters]"] * len(texts)
            # an id or a value too long to offer is left out (the review found 6 MB of them kept)
            assert props["mode"]["enum"] == ["ask", "code"] and props["v"]["enum"] == ["normal"]
            assert lab.session_state["config"]["values"].get("v") is None  # nor a current value
            assert len(json.dumps(to_json(lab.session_state))) < 100_000

    arun(go())


def test_a_tool_calls_titles_are_one_clean_line(tmp_path: Path) -> None:
    """An agent titled its calls with a NUL, an escape sequence, a right-to-left override and a
    line break: they reached the call's displayName, invocationMessage, pastTenseMessage and
    confirmation title unchanged, while the session's title was cleaned (ACP agent round 11).
    They are made one line without them, as the session's title is; so is an option's label."""
    clean = "evil line red nul end"

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("odd_titles")) as lab:
            pending = lab.start("go")
            asked = await pending_call(lab)
            assert asked["confirmationTitle"]["markdown"] == f"**{clean}**"
            assert [o["label"] for o in asked["options"]] == [clean]
            lab.approve()
            turn = await pending
            shown = [
                c.state.get(field)
                for c in turn.tool_calls
                for field in ("displayName", "invocationMessage", "pastTenseMessage")
            ]
            assert shown == [clean] * 6

    arun(go())


def test_a_current_value_is_a_choice_or_a_boolean() -> None:
    """Third review: a list or an object as an option's ``currentValue`` went into the config
    whole (6 MB of it)."""
    from ahp_lab.agents.acp.config import config_from_acp

    options = [
        {"type": "boolean", "id": "b", "name": "B", "currentValue": ["x"] * 1000},
        {
            "type": "select",
            "id": "s",
            "name": "S",
            "currentValue": {"a": 1},
            "options": [{"value": "v", "name": "V"}],
        },
    ]
    config, _ = config_from_acp(None, options)
    assert config["values"] == {"b": None, "s": None}
