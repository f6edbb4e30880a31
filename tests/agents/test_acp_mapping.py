"""The ACP → AHP mapping table on its own: prompts, config schemas, and (property test) any
sequence of ACP updates maps to actions the chat reducer applies, ending where ACP says."""

from __future__ import annotations

import base64
import re
from itertools import dropwhile

from hypothesis import given, settings
from hypothesis import strategies as st

from ahp_lab.agents.acp import content, mapping
from ahp_lab.agents.acp.config import config_from_acp, values_from_options
from ahp_lab.agents.acp.content import Resolver
from ahp_lab.agents.acp.mapping import ProtocolViolation, TurnMap
from ahp_lab.reducers import reduce_chat
from tests.conftest import examples


def _resolver() -> Resolver:
    kept: dict[str, str] = {}

    def put(data, content_type, binary=False):
        uri = f"ahp-content:/{len(kept)}"
        kept[uri] = data
        return {"uri": uri, "contentType": content_type}

    return Resolver(put, lambda tid: None, lambda path: "file://" + path)


def test_prompt_blocks_map_attachments_by_what_the_agent_accepts() -> None:
    message = {
        "text": "look",
        "attachments": [
            {"type": "resource", "label": "main.py", "uri": "file:///w/main.py", "contentType": "text/x-python"},
            {"type": "embeddedResource", "label": "shot", "data": base64.b64encode(b"\x89PNG").decode(), "contentType": "image/png"},
            {"type": "embeddedResource", "label": "notes", "data": base64.b64encode(b"hi").decode(), "contentType": "text/plain"},
            {"type": "simple", "label": "sel", "modelRepresentation": "selected lines 1-3"},
        ],
    }  # fmt: skip
    rich = mapping.prompt_blocks(message, {"image": True, "embeddedContext": True})
    assert [b["type"] for b in rich] == ["text", "resource_link", "image", "resource", "text"]
    assert rich[1] == {
        "type": "resource_link",
        "uri": "file:///w/main.py",
        "name": "main.py",
        "mimeType": "text/x-python",
    }
    assert rich[3]["resource"]["text"] == "hi"
    assert rich[4]["text"] == "[sel] selected lines 1-3"
    plain = mapping.prompt_blocks(message, {})  # baseline ACP: text and resource links only
    assert [b["type"] for b in plain] == ["text", "resource_link", "text", "text", "text"]
    assert "not supported by the agent" in plain[2]["text"]


def test_config_schema_from_modes_options_and_a_mode_category_option() -> None:
    modes = {
        "currentModeId": "ask",
        "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code", "description": "d"}],
    }
    options = [
        {"id": "model", "name": "Model", "type": "select", "currentValue": "b", "options": [{"group": "g", "name": "G", "options": [{"value": "a", "name": "A"}, {"value": "b", "name": "B"}]}]},
        {"id": "tests", "name": "Run tests", "type": "boolean", "currentValue": True},
        {"id": "weird", "name": "?", "type": "slider", "currentValue": 3},
    ]  # fmt: skip
    config, routes = config_from_acp(modes, options)
    props = config["schema"]["properties"]
    assert list(props) == ["mode", "model", "tests"]  # an unknown option type is not offered
    assert props["mode"]["enumDescriptions"] == ["", "d"] and props["model"]["enum"] == ["a", "b"]
    assert props["tests"] == {"type": "boolean", "title": "Run tests", "sessionMutable": True}
    assert config["values"] == {"mode": "ask", "model": "b", "tests": True}
    assert routes == {
        "mode": ("mode",),
        "model": ("option", "model", "select"),
        "tests": ("option", "tests", "boolean"),
    }
    # the newer form: a config option of category "mode" is the mode; legacy modes are ignored
    newer = [
        {
            "id": "agent-mode",
            "name": "Mode",
            "category": "mode",
            "type": "select",
            "currentValue": "x",
            "options": [{"value": "x", "name": "X"}],
        }
    ]
    config, routes = config_from_acp(modes, newer)
    assert config["values"] == {"mode": "x"} and routes["mode"] == ("option", "agent-mode", "select")
    assert values_from_options([{"id": "agent-mode", "currentValue": "y"}], routes) == {"mode": "y"}
    assert config_from_acp(None, None) == (None, {})


STATUSES = ["pending", "in_progress", "completed", "failed"]
RANK = {"pending": 0, "in_progress": 1, "completed": 2, "failed": 2}
EVENT = st.one_of(
    st.tuples(st.just("chunk"), st.text(max_size=5)),
    st.tuples(st.just("thought"), st.text(max_size=5)),
    st.tuples(st.just("start"), st.integers(0, 3), st.sampled_from(STATUSES)),
    st.tuples(st.just("update"), st.integers(0, 3), st.sampled_from(STATUSES), st.booleans()),
    st.tuples(
        st.just("plan"), st.lists(st.sampled_from(["pending", "in_progress", "completed"]), max_size=3)
    ),
)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(EVENT, max_size=30))
def test_any_update_sequence_maps_to_actions_the_reducer_applies(events) -> None:
    turn = TurnMap("t")
    resolver = _resolver()
    chat = {"resource": "ahp-chat:/x", "title": "c", "status": 1, "modifiedAt": "x", "turns": []}
    chat = reduce_chat(chat, {"type": "chat/turnStarted", "turnId": "t", "startedAt": "x", "message": {"text": "hi", "origin": {"kind": "user"}}}, 1)  # fmt: skip
    text = ""
    final: dict[str, str] = {}
    for event in events:
        kind = event[0]
        try:
            if kind == "chunk":
                actions = mapping.on_message_chunk(
                    turn, {"content": {"type": "text", "text": event[1]}}, resolver
                )
                text += event[1]
            elif kind == "thought":
                actions = mapping.on_thought_chunk(
                    turn, {"content": {"type": "text", "text": event[1]}}, resolver
                )
            elif kind == "start":
                update = {
                    "toolCallId": f"c{event[1]}",
                    "title": f"call {event[1]}",
                    "kind": "edit",
                    "status": event[2],
                }
                actions = mapping.on_tool_call(turn, update, resolver)
            elif kind == "update":
                update = {"toolCallId": f"c{event[1]}", "status": event[2]}
                if event[3]:
                    update["content"] = [{"type": "content", "content": {"type": "text", "text": "x"}}]
                actions = mapping.on_tool_call_update(turn, update, resolver)
            else:
                actions = mapping.on_plan(
                    turn,
                    {"entries": [{"content": "s", "status": s, "priority": "medium"} for s in event[1]]},
                    resolver,
                )
        except ProtocolViolation:
            assert kind == "update"  # only an update for a call never announced is a violation
            continue
        if kind in ("start", "update"):
            # an AHP call only moves forward: it ends where ACP first said it ended, and a call
            # that runs never goes back to streaming when ACP says "pending" again
            call_id, now = f"c{event[1]}", turn.calls[f"c{event[1]}"].acp_status
            was = final.get(call_id, "pending")
            if was not in ("completed", "failed") and RANK[now] >= RANK[was]:
                final[call_id] = now
        for action in actions:
            before = chat
            chat = reduce_chat(chat, action, 1)
            # every mapped action has an effect: none is a no-op the reducer ignores
            assert chat is not before, action
    parts = chat["activeTurn"]["responseParts"]
    assert "".join(str(p["content"]) for p in parts if p["kind"] == "markdown") == text
    calls = {p["toolCall"]["toolCallId"]: p["toolCall"] for p in parts if p["kind"] == "toolCall"}
    for call_id, acp_status in final.items():
        expected = {"pending": "streaming", "in_progress": "running"}.get(acp_status, "completed")
        assert calls[call_id]["status"] == expected, (call_id, acp_status)
        if expected == "completed":
            assert calls[call_id]["success"] is (acp_status == "completed")


def test_prompt_blocks_use_audio_text_and_selections_where_the_agent_takes_them() -> None:
    wav = base64.b64encode(b"RIFF").decode()
    notes = base64.b64encode(b"line one\nline two").decode()
    selection = {"range": {"start": {"line": 2, "character": 0}, "end": {"line": 4, "character": 1}}}
    message = {
        "text": "hear this",
        "attachments": [
            {"type": "embeddedResource", "label": "sound.wav", "data": wav, "contentType": "audio/wav"},
            {"type": "embeddedResource", "label": "notes.txt", "data": notes, "contentType": "text/plain", "selection": selection},
            {"type": "resource", "label": "main.py", "uri": "file:///w/main.py", "selection": selection},
        ],
    }  # fmt: skip
    blocks = mapping.prompt_blocks(message, {"audio": True})
    assert blocks[1] == {"type": "audio", "data": wav, "mimeType": "audio/wav"}
    # text goes to any agent (ACP's baseline), embedded context or not
    assert blocks[2] == {
        "type": "text",
        "text": "[attachment notes.txt (text/plain, lines 3-5)]\nline one\nline two",
    }
    assert blocks[3]["description"] == "the person selected lines 3-5"


def test_usage_keeps_the_window_and_the_counts_ahp_has_no_field_for() -> None:
    turn = TurnMap("t1")
    window = mapping.on_usage(
        turn, {"used": 900, "size": 200_000, "cost": {"amount": 0.1, "currency": "USD"}}, _resolver()
    )
    assert window[0]["usage"] == {
        "_meta": {"acp": {"used": 900, "size": 200_000, "cost": {"amount": 0.1, "currency": "USD"}}}
    }
    final = mapping.usage_action(
        turn,
        tokens={
            "inputTokens": 10,
            "outputTokens": 15,
            "cachedReadTokens": 3,
            "thoughtTokens": 4,
            "totalTokens": 32,
        },
    )
    assert final["usage"] == {
        "inputTokens": 10,
        "outputTokens": 15,
        "cacheReadTokens": 3,
        "_meta": {"acp": {"used": 900, "size": 200_000, "cost": {"amount": 0.1, "currency": "USD"}, "thoughtTokens": 4, "totalTokens": 32}},
    }  # fmt: skip


def test_tool_call_updates_keep_input_error_text_and_plain_links() -> None:
    turn, resolver = TurnMap("t1"), _resolver()
    start = mapping.on_tool_call(
        turn, {"toolCallId": "c1", "title": "Run", "kind": "execute", "status": "in_progress"}, resolver
    )
    assert "toolInput" not in start[1]  # the agent sent no input: none is shown
    update = mapping.on_tool_call_update(turn, {"toolCallId": "c1", "rawInput": {"v": 3}}, resolver)
    assert [(a["type"], a.get("toolInput")) for a in update] == [("chat/toolCallReady", '{"v": 3}')]
    diff = {"type": "diff", "path": "/w/a.txt", "oldText": "a\n", "newText": "b\n"}
    said = {"type": "content", "content": {"type": "text", "text": "Permission denied"}}
    failed = mapping.on_tool_call_update(
        turn, {"toolCallId": "c1", "status": "failed", "content": [diff, said]}, resolver
    )
    assert failed[-1]["result"]["error"]["message"] == "Permission denied"  # the agent's words, not the diff
    link = {"type": "resource_link", "name": "odd] (title", "uri": "https://e.x/a b"}
    text = mapping.on_message_chunk(turn, {"content": link}, resolver)[-1]["content"]
    assert text == "[odd\\] (title](<https://e.x/a b>)"
    # a title and a target on several lines made no link (ACP agent round 9)
    link = {"type": "resource_link", "title": "multi\nline", "uri": "file:///tmp/a b\nc.txt"}
    text = mapping.on_message_chunk(turn, {"content": link}, resolver)[-1]["content"]
    assert text == "[multi line](<file:///tmp/a b%0Ac.txt>)"
    # a file's text was glued into the sentence and read as markdown (its "# " line a heading)
    embedded = {
        "type": "resource",
        "resource": {"uri": "file:///w/README.md", "text": "# Title\n```sh\nls\n```"},
    }
    text = mapping.on_message_chunk(turn, {"content": embedded}, resolver)[-1]["content"]
    assert text == (
        "\n\n[file:///w/README.md](<file:///w/README.md>)\n\n````\n# Title\n```sh\nls\n```\n````\n\n"
    )


def test_empty_chunks_and_plan_entries_on_several_lines() -> None:
    turn, resolver = TurnMap("t1"), _resolver()
    assert mapping.on_message_chunk(turn, {"content": {"type": "text", "text": "hi"}}, resolver)
    assert mapping.on_thought_chunk(turn, {"content": {"type": "text", "text": ""}}, resolver) == []
    more = mapping.on_message_chunk(turn, {"content": {"type": "text", "text": " there"}}, resolver)
    assert [a["type"] for a in more] == ["chat/delta"]  # the empty thought did not end the run
    assert (
        mapping.plan_markdown([{"content": "read\nthe code", "status": "pending"}])
        == "- [ ] read the code (pending)"
    )


def test_content_that_arrives_while_a_person_decides_refreshes_the_confirmation() -> None:
    turn, resolver = TurnMap("t1"), _resolver()
    call, start = mapping.permission_call(turn, {"toolCallId": "c1", "title": "Edit", "kind": "edit"})
    options = [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}]
    mapping.confirmation(turn, call, options, resolver)
    call.status, call.options = "pending-confirmation", options
    said = {"type": "content", "content": {"type": "text", "text": "It rewrites config.yaml"}}
    [refresh] = mapping.on_tool_call_update(turn, {"toolCallId": "c1", "content": [said]}, resolver)
    assert refresh["type"] == "chat/toolCallReady" and "confirmed" not in refresh  # T4: still pending
    assert "It rewrites config.yaml" in refresh["confirmationTitle"]["markdown"]
    assert [o["id"] for o in refresh["options"]] == ["ok"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(alphabet=st.sampled_from("ab\U0001f600é\n")), min_size=1, max_size=5), st.integers(2, 9)
)
def test_a_chunk_longer_than_a_delta_is_split_without_losing_or_cutting_a_character(chunks, most):
    """An agent's megabytes in one chunk go as several deltas, each within every limit (one 40 MB
    delta was over max_message_bytes and max_string_chars), never between a character's halves."""
    saved, mapping.MAX_DELTA_CHARS = mapping.MAX_DELTA_CHARS, most
    try:
        turn = TurnMap("t")
        units = [c.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass") for c in chunks]
        deltas = []
        for text in units:
            update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
            deltas += [
                a["content"]
                for a in mapping.on_message_chunk(turn, update, None)
                if a["type"] == "chat/delta"
            ]
        assert "".join(deltas) == "".join(units)
        assert all(0 < len(d) <= most for d in deltas)
        assert not any("\ud800" <= d[-1] <= "\udbff" for d in deltas)
    finally:
        mapping.MAX_DELTA_CHARS = saved


def test_a_chat_attachment_is_said_not_passed_and_a_path_shows_its_control_characters() -> None:
    """An ACP agent of our own (round 5): a chat attachment reached the agent as a bare
    ``ahp-chat:`` URI it cannot read, where the docs promise a note; and a file the agent wrote as
    ``rtl\\u202eevil.txt`` was titled with the right-to-left override live, reading as another name."""
    message = {
        "text": "see",
        "attachments": [{"type": "chat", "label": "earlier", "resource": "ahp-chat:/other"}],
    }
    blocks = mapping.prompt_blocks(message, {})
    assert blocks[1] == {
        "type": "text",
        "text": "[attachment earlier (another chat's transcript) not supported by the agent]",
    }
    assert content.shown("/w/rtl\u202eevil.txt") == "/w/rtl\\u202eevil.txt"
    assert content.shown("/w/plain é.txt") == "/w/plain é.txt"


_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _patched(old: str, diff: str) -> str:
    """``old`` with a unified diff applied (each hunk's header and context checked)."""
    a, out, i, previous = old.splitlines(keepends=True), [], 0, " "
    lines = diff.splitlines(keepends=True)[2:]
    for line in lines:
        header = _HUNK_HEADER.match(line)
        if header:
            start = int(header[1]) - (1 if header[2] != "0" else 0)
            out += a[i:start]
            i = start
        elif line.startswith("\\"):  # no newline at the end of the line before
            out[-1] = out[-1].rstrip("\n") if previous in " +" else out[-1]
        else:
            previous = line[0]
            if line[0] in " -":
                assert a[i].rstrip("\n") == line[1:].rstrip("\n")
                if line[0] == " ":
                    out.append(a[i])
                i += 1
            else:
                out.append(line[1:])
    return "".join(out + a[i:])


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\n", "}\n", "\n"]), max_size=40),
    st.lists(st.tuples(st.integers(0, 50), st.sampled_from(["x\n", "y\n", "a\n", None])), max_size=6),
    st.booleans(),
)
def test_a_diff_of_only_the_changed_middle_still_turns_one_side_into_the_other(lines, edits, cut_end):
    """The diff compares only the lines between the sides' common start and end (difflib's cost grows
    with the pairs it compares: 200,000 characters of 150 distinct lines held the loop 21 s), and
    numbers its hunks as in the whole files."""
    new_lines = list(lines)
    for at, line in edits:
        if line is None and new_lines:
            del new_lines[at % len(new_lines)]
        elif line is not None:
            new_lines.insert(at % (len(new_lines) + 1), line)
    old, new = "".join(lines), "".join(new_lines)
    new = new.rstrip("\n") if cut_end else new
    diff = content.unified_diff("/f", old, new)
    assert _patched(old, diff) == new


def test_a_source_file_edited_at_both_ends_shows_its_diff_and_each_hunk_applies():
    """Comparing only the middle made a 1,200-line file edited at its top and its end compare the
    whole file, over a bound of line pairs, so the person approved the edit without its diff; and a
    diff of the middle alone ended some hunks with less context than they began with, which patch
    and git apply read as the end of the file (a verification round)."""
    body = [f"def f{i}(x):\n    return x + {i}\n\n" for i in range(400)]
    old = "import os\n" + "".join(body)
    new = "import os\nimport sys\n" + "".join(body) + "def g():\n    pass\n"
    assert content.unified_diff("rel.txt", "a\n", "b\n").startswith("--- a/rel.txt\n+++ b/rel.txt\n")
    diff = content.unified_diff("/src/m.py", old, new)
    assert diff.count("@@ ") == 2 and "+import sys\n" in diff and "+def g():\n" in diff
    assert _patched(old, diff) == new
    for hunk in diff.split("@@ ")[1:]:  # as much context after a change as before it, in the middle
        lines = hunk.splitlines()[1:]
        leading = len(lines) - len(lines_after := list(dropwhile(lambda x: x.startswith(" "), lines)))
        trailing = len(lines_after) - len(list(dropwhile(lambda x: x.startswith(" "), reversed(lines_after))))
        assert leading in (0, 1, 3) and trailing in (0, 3), hunk


def test_a_diff_that_would_compare_too_many_lines_is_not_computed():
    old = "".join(f"{i % 150:06d}\n" for i in range(14_000))
    new = "".join(f"{i * 7 % 150:06d}\n" for i in range(14_000))
    assert content.unified_diff("/lock", old, new) is None
    # the note says why: 196,000 characters are not too many (it said only their number)
    assert content.diff_text({"path": "/lock", "oldText": old, "newText": new}).endswith(
        "its lines repeat too often to compare them quickly]"
    )
    assert content.unified_diff("/lock", old, old[:-7] + "999999\n").endswith(
        "+999999\n"
    )  # one change: shown


def test_plans_and_permission_options_are_bounded_like_every_tool_call() -> None:
    """A plan entry of 20 MB and a permission option named with 18 MB became single actions no
    client could take (and an ``inputNeeded`` entry too): each entry and label is cut, and at most
    256 entries are shown (ACP agent round 9)."""
    entries = [{"content": "x" * 2_000_000, "status": "pending"}] + [
        {"content": f"step {i}"} for i in range(299)
    ]
    text = mapping.plan_markdown(entries)
    assert len(text) < 20_000 and "more characters]" in text
    assert text.endswith("- [44 more plan entries]")
    options = [{"optionId": "ok", "name": "A" * 18_000_000, "kind": "allow_once"}]
    shown = mapping.confirmation_options(options)
    assert shown[0]["id"] == "ok" and len(shown[0]["label"]) < 1100


def test_a_call_with_more_items_than_shown_keeps_its_own_and_the_newest_notes() -> None:
    """The host's notes of the files a running call read are appended to it: 80 reads showed the
    first 64 and hid the newest (ACP agent round 9)."""
    turn, resolver = TurnMap("t1"), _resolver()
    call, _ = mapping.permission_call(turn, {"toolCallId": "c1", "title": "Analyse", "kind": "read"})
    own = {"type": "content", "content": {"type": "text", "text": "the agent's words"}}
    notes = [
        {"type": "content", "content": {"type": "text", "text": f"read f{i}"}, "_host": True}
        for i in range(80)
    ]
    changed = {
        "type": "content",
        "content": {"type": "text", "text": "the agent changed the input"},
        "_host": "input",
    }
    call.content = [own, *notes[:10], changed, *notes[10:]]  # more files read after the change
    texts = [item.get("text") for item in content.tool_content(call, resolver)]
    assert texts[:3] == [
        "the agent's words",
        "the agent changed the input",
        "read f18",
    ]  # (a verification round)
    assert texts[63] == "read f79"
    assert texts[-1] == "[18 more content items]"


def test_an_attachment_whose_data_is_not_base64_is_said_not_sent() -> None:
    """A text attachment whose ``data`` did not decode failed the turn with a Python traceback in
    the chat's state, and left the bridge taking the ended turn for running (ACP round 16)."""
    message = {
        "text": "look",
        "attachments": [
            {
                "type": "embeddedResource",
                "label": "x.txt",
                "data": "!!!notbase64",
                "contentType": "text/plain",
            },
            {"type": "embeddedResource", "label": "shot", "data": "abcde", "contentType": "image/png"},
        ],
    }
    for caps in ({}, {"image": True, "embeddedContext": True}):
        blocks = mapping.prompt_blocks(message, caps)
        assert [b["type"] for b in blocks] == ["text", "text", "text"]
        assert blocks[1]["text"] == "[attachment x.txt (text/plain) is not valid base64: not sent]"
        assert blocks[2]["text"] == "[attachment shot (image/png) is not valid base64: not sent]"


def test_json_and_other_text_attachments_reach_an_agent_that_takes_only_text() -> None:
    """Embedded text reaches any agent as a text block (ACP's baseline), but only ``text/*`` was
    taken for text: a JSON attachment became "not supported by the agent" (ACP round 16)."""
    data = base64.b64encode(b'{"a": 1}').decode()
    for mime in ("application/json", "application/vnd.api+json", "application/json; charset=utf-8"):
        message = {"text": "see", "attachments": [{"type": "embeddedResource", "label": "d", "data": data, "contentType": mime}]}  # fmt: skip
        plain = mapping.prompt_blocks(message, {})
        assert plain[1] == {"type": "text", "text": f'[attachment d ({mime})]\n{{"a": 1}}'}
        rich = mapping.prompt_blocks(message, {"embeddedContext": True})
        assert rich[1]["resource"] == {"uri": "attachment:d", "mimeType": mime, "text": '{"a": 1}'}
    binary = {"text": "see", "attachments": [{"type": "embeddedResource", "label": "z", "data": data, "contentType": "application/zip"}]}  # fmt: skip
    assert "not supported by the agent" in mapping.prompt_blocks(binary, {})[1]["text"]
