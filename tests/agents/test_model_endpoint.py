"""A hostile model endpoint, and what strangers publish, never break a LoopAgent's chat.

The model side is the real OpenAI SDK against a fake chat-completions server on 127.0.0.1 that
sends what a broken or hostile endpoint would: lone surrogates, off-type finish reasons and usage,
answers past every bound, a stream that trickles keep-alives forever, the key echoed back. Each
answer ends its call with one sentence or is kept as valid, bounded text, and the next turn works.
"""

from __future__ import annotations

import io
import json
import logging
import re

from hypothesis import given
from hypothesis import strategies as st

from ahp_lab.agents.loop import MAX_TOOL_DESCRIPTION_CHARS, model_tool_name
from ahp_lab.agents.models import MAX_ANSWER_CHARS, MAX_TOOL_CALLS, OpenAIModel
from ahp_lab.widgets.model_calls import model_calls_view_model

from ..loop_helpers import arun, loop_lab, notes, wait_for
from ..security.conftest import Stranger
from .fake_openai import FakeOpenAI, chunk, raw_reply, stalled_reply, text_reply, tool_reply, whole_reply

KEY = "zz-endpoint-Key-7c1e93b0a4d25f68"  # no well-known shape: only the literal value can catch it


def _turns(server: FakeOpenAI, prompts: list[str], **options):
    async def main():
        lab, agent = await loop_lab(
            options.pop("tmp_path"), OpenAIModel("m", base_url=server.base_url, api_key=KEY), **options
        )
        turns = [await lab.send(p) for p in prompts]
        await lab.aclose()
        return turns, agent

    return arun(main())


async def _two_turns_beside_strangers_tools(lab, tools: list[dict]):
    """A stranger (mallory) publishes ``tools`` in the lab's session; then two turns run. Returns
    the turns and the chat's notices, and closes the lab."""
    mallory = Stranger(lab.host.connect("mallory"))
    await mallory.initialize("mallory")
    await mallory.call("subscribe", {"channel": lab.session})
    active = {"clientId": "mallory", "tools": tools}
    mallory.dispatch(lab.session, 1, {"type": "session/activeClientSet", "activeClient": active})
    assert "rejectionReason" not in await mallory.echo(1)
    turns = [await lab.send("hi"), await lab.send("again")]
    told = notes(lab)
    await lab.aclose()
    return turns, told


def test_a_lone_surrogate_from_the_endpoint_is_kept_as_a_replacement_character(tmp_path):
    """A lone half in the text (or a tool call's arguments) was kept in the history as it came, and
    every later request of the chat failed to encode it: the chat was broken for good."""
    call = {
        "index": 0,
        "id": "c1",
        "type": "function",
        "function": {"name": "echo", "arguments": '{"t": "\\ud800"}'},
    }
    replies = [
        raw_reply(chunk({"content": "bad \ud800 text"}), chunk({}, "stop")),
        raw_reply(chunk({"tool_calls": [call]}), chunk({}, "tool_calls")),
        text_reply("echoed"),
        text_reply("fine again"),
    ]
    with FakeOpenAI(replies) as server:

        async def main():
            lab, agent = await loop_lab(tmp_path, OpenAIModel("m", base_url=server.base_url, api_key="k"))
            seen = []

            @lab.tool
            def echo(t: str) -> str:
                """Echo."""
                seen.append(t)
                return t

            turns = [await lab.send(p) for p in ("one", "two", "three")]
            await lab.aclose()
            return turns, seen

        turns, seen = arun(main())
    assert [t.state["state"] for t in turns] == ["complete"] * 3, [t.state.get("error") for t in turns]
    assert turns[0].text == "bad \ufffd text"
    assert seen == ["\ufffd"]  # the tool ran with valid text
    history = server.requests[-1]["messages"]
    assert {"role": "assistant", "content": "bad \ufffd text"} in history
    assert len(server.requests) == 4  # every later call was sent


def test_an_off_type_finish_reason_or_usage_gets_one_sentence_not_a_stack(tmp_path):
    usage = {"prompt_tokens": 10**30, "completion_tokens": -5, "total_tokens": 1}
    replies = [
        raw_reply(chunk({"content": "listed"}), chunk({}, ["stop"])),
        raw_reply(chunk({"content": "huge"}), chunk({}, "x" * 3_000_000)),
        raw_reply(chunk({"content": "odd counts"}), chunk({}, "stop"), chunk(None, usage=usage)),
        raw_reply(chunk({"content": {"not": "text"}}), chunk({}, "stop")),
    ]
    with FakeOpenAI(replies) as server:
        turns, _agent = _turns(server, ["a", "b", "c", "d"], tmp_path=tmp_path)
    listed, huge, odd, dict_text = turns
    assert listed.state["error"] == {
        "errorType": "modelError",
        "message": "The model's answer is malformed: its finish reason is an array, not a string.",
    }
    assert huge.state["error"]["errorType"] == "modelError"
    assert len(huge.state["error"]["message"]) < 300  # the 3 MB reason is cut, not quoted
    assert odd.state["state"] == "complete" and odd.text == "odd counts"
    assert not odd.state.get("usage")  # counts that are not JSON-safe integers are dropped
    assert dict_text.state["error"]["message"] == (
        "The model's answer is malformed: a text chunk is an object, not a string."
    )
    assert "[object Object]" not in dict_text.text


def test_an_answer_past_its_bounds_ends_the_call_and_keeps_what_came(tmp_path):
    piece = "y" * 65536
    pieces = [chunk({"content": piece}) for _ in range(MAX_ANSWER_CHARS // len(piece) + 2)]
    calls = [
        chunk({"tool_calls": [{"index": i, "id": f"c{i}", "function": {"name": "echo", "arguments": "{}"}}]})
        for i in range(MAX_TOOL_CALLS + 1)
    ]
    replies = [
        raw_reply(*pieces, chunk({}, "stop")),
        raw_reply(*calls, chunk({}, "tool_calls")),
        text_reply("ok"),
    ]
    with FakeOpenAI(replies) as server:
        turns, _agent = _turns(server, ["talk", "call", "again"], tmp_path=tmp_path)
    talk, many, again = turns
    assert talk.state["error"]["errorType"] == "modelError"
    assert f"passed {MAX_ANSWER_CHARS:,} characters" in talk.state["error"]["message"]
    assert MAX_ANSWER_CHARS - len(piece) < len(talk.text) <= MAX_ANSWER_CHARS  # kept up to the bound
    assert many.state["error"]["message"] == (
        f"The model asked for more than {MAX_TOOL_CALLS} tool calls in one answer; none of them was run."
    )
    assert again.state["state"] == "complete" and again.text == "ok"


def test_a_stream_that_trickles_forever_is_stopped_at_the_calls_deadline(tmp_path):
    replies = [raw_reply(chunk({"content": "thinking"}), keepalive=0.05), text_reply("back")]
    with FakeOpenAI(replies) as server:
        turns, agent = _turns(server, ["wait", "again"], tmp_path=tmp_path, call_timeout=1.0)
    stuck, again = turns
    assert stuck.state["error"] == {
        "errorType": "modelError",
        "message": "The model call took longer than LoopAgent's call_timeout of 1 s, so it was stopped.",
    }
    assert stuck.text == "thinking"
    assert server.left.wait(30)  # the endpoint's connection was closed
    assert again.state["state"] == "complete" and again.text == "back"
    # what the person saw stays in the history
    assert server.requests[-1]["messages"][-2:] == [
        {"role": "assistant", "content": "thinking"},
        {"role": "user", "content": "again"},
    ]
    assert agent.model_calls[0].error == stuck.state["error"]["message"]


def test_a_key_the_endpoint_echoes_is_masked_in_what_the_model_call_record_shows(tmp_path, caplog):
    pieces = [chunk({"content": KEY[i : i + 4]}) for i in range(0, len(KEY), 4)]
    replies = [raw_reply(*pieces, chunk({}, "stop"), echo_key=True)]
    with FakeOpenAI(replies) as server, caplog.at_level(logging.DEBUG):
        turns, agent = _turns(server, ["what is my key"], tmp_path=tmp_path)
    assert turns[0].state["state"] == "complete"
    assert agent.model_calls[0].response.text == KEY  # kept as received
    shown = [
        json.dumps(agent.model_calls[0].to_json()),
        agent.model_calls.table(),
        json.dumps(model_calls_view_model(list(agent.model_calls))),
    ]
    for where in shown:
        assert KEY not in where
    assert "***" in shown[0]
    # the HTTP library's debug records quote the response's headers, the echoed key among them
    records = [r for r in caplog.records if "x-seen-authorization" in r.getMessage()]
    assert records and not any(KEY in r.getMessage() for r in records)


def test_a_tool_whose_name_the_models_api_refuses_is_offered_under_an_alias_and_runs(tmp_path):
    """A tool named ``files.read`` (a name AHP and MCP allow, OpenAI's API does not), or a plugin's
    MCP tool past 64 characters, made the API refuse every request of the session; then it was left
    out. It is offered under a name the API takes, and a call of that name runs the tool; a huge
    description is cut."""
    dotted = "files.read"
    long_name = "mcp__plugin_code-review-toolkit_github__search_pull_requests_by_label"
    alias, long_alias = model_tool_name(dotted), model_tool_name(long_name)
    assert alias.startswith("files_read_") and len(long_alias) == 64 and long_alias != long_name[:64]
    replies = [
        tool_reply(alias, {"path": "notes.txt"}),
        text_reply("read it"),
        tool_reply(alias, {"path": "again.txt"}, call_id="call_2"),
        text_reply("again"),
    ]
    with FakeOpenAI(replies) as server:

        async def main():
            lab, _agent = await loop_lab(tmp_path, OpenAIModel("m", base_url=server.base_url, api_key="k"))
            read = []

            @lab.tool(name=dotted)
            def files_read(path: str) -> str:
                """Read a file."""
                read.append(path)
                return f"contents of {path}"

            tools = [
                {"name": long_name, "description": "d", "inputSchema": {"type": "object"}},
                {"name": "chatty", "description": "w" * 900_000, "inputSchema": {"type": "object"}},
            ]
            turns, told = await _two_turns_beside_strangers_tools(lab, tools)
            return turns, told, read

        turns, told, read = arun(main())
    assert [t.text for t in turns] == ["read it", "again"]
    assert read == ["notes.txt", "again.txt"]
    assert [c.name for c in turns[0].tool_calls] == [dotted]  # the chat shows the tool's own name
    for request in server.requests:
        sent = {t["function"]["name"]: t["function"] for t in request["tools"]}
        assert alias in sent and long_alias in sent and dotted not in sent
        assert len(sent["chatty"]["description"]) == MAX_TOOL_DESCRIPTION_CHARS
    answer = server.requests[1]["messages"][-1]
    assert answer == {"role": "tool", "tool_call_id": "call_1", "content": "contents of notes.txt"}
    assert not [n for n in told if n.startswith("Not offered to the model")]


def test_tool_arguments_nested_too_deep_are_refused_with_a_reason(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    call = {"index": 0, "id": "c1", "function": {"name": "echo", "arguments": deep}}
    replies = [raw_reply(chunk({"tool_calls": [call]}), chunk({}, "tool_calls")), text_reply("ok")]
    with FakeOpenAI(replies) as server:
        turns, _agent = _turns(server, ["go"], tmp_path=tmp_path)
    assert turns[0].state["state"] == "complete" and turns[0].text == "ok"
    answer = server.requests[-1]["messages"][-1]
    assert answer["role"] == "tool" and "nest too deep" in answer["content"]


def test_the_export_never_holds_what_the_endpoint_echoed(tmp_path):
    """The chat state and the export were masked before; kept here beside the record's views."""
    replies = [raw_reply(chunk({"content": f"your key is {KEY}"}), chunk({}, "stop"))]
    with FakeOpenAI(replies) as server:

        async def main():
            lab, _agent = await loop_lab(tmp_path, OpenAIModel("m", base_url=server.base_url, api_key=KEY))
            await lab.send("hi")
            out = io.StringIO()
            lab.store.export(out)
            await lab.aclose()
            return out.getvalue()

        exported = arun(main())
    assert KEY not in exported and "your key is" in exported


def test_what_strangers_publish_never_makes_the_request_one_the_api_refuses(tmp_path):
    """A name offered twice, more than 128 tools, a schema that is not an object schema: each made
    the real API refuse every request of the session. The notebook's own tools come first; what is
    left out is told in one notice a model call, each tool once."""
    with FakeOpenAI([text_reply("one"), text_reply("two")]) as server:

        async def main():
            lab, _agent = await loop_lab(tmp_path, OpenAIModel("m", base_url=server.base_url, api_key="k"))

            @lab.tool
            def echo(text: str) -> str:
                """The notebook's own echo."""
                return text

            obj = {"type": "object"}
            tools = [
                {"name": "echo", "description": "mallory's echo", "inputSchema": obj},
                {"name": "stringy", "description": "d", "inputSchema": {"type": "string"}},
                *({"name": f"t{i}", "description": "d", "inputSchema": obj} for i in range(300)),
            ]
            return await _two_turns_beside_strangers_tools(lab, tools)

        turns, told = arun(main())
    assert [t.text for t in turns] == ["one", "two"]
    offered = [t["function"] for t in server.requests[-1]["tools"]]
    names = [f["name"] for f in offered]
    assert len(names) == len(set(names)) <= 128
    assert next(f for f in offered if f["name"] == "echo")["description"] == "The notebook's own echo."
    assert "stringy" not in names
    not_offered = [n for n in told if n.startswith("Not offered to the model")]
    assert len(not_offered) == 1  # one notice, in the first turn only
    assert "'echo': an earlier tool has that name" in not_offered[0]
    assert "'stringy': its input schema is not an object schema" in not_offered[0]
    assert "and " in not_offered[0] and "more." in not_offered[0]  # 170-odd names are not listed one by one


def test_a_character_split_between_two_chunks_shows_whole_in_the_chat(tmp_path):
    """The history joined the halves, but the chat showed two U+FFFD: what the person saw was not
    what the model said."""
    replies = [
        raw_reply(
            chunk({"reasoning_content": "hmm \ud83d"}),
            chunk({"reasoning_content": "\ude00"}),
            chunk({"content": "smile \ud83d"}),
            chunk({"content": "\ude00 done"}),
            chunk({}, "stop"),
        )
    ]
    with FakeOpenAI(replies) as server:
        turns, agent = _turns(server, ["go"], tmp_path=tmp_path)
    assert turns[0].text == "smile \U0001f600 done"
    parts = turns[0].state["responseParts"]
    assert [p["content"] for p in parts if p["kind"] == "reasoning"] == ["hmm \U0001f600"]
    assert agent.model_calls[0].response.text == "smile \U0001f600 done"


def test_a_key_is_masked_whole_before_the_view_cuts_its_text(tmp_path):
    """The view cut the text (80 characters in a row, 20 in the table), then masked: a key across
    the cut no longer matched, and all of it but the last characters showed."""
    text = "x" * 60 + KEY  # the row's 80-character cut falls inside the key
    with FakeOpenAI([raw_reply(chunk({"content": text}), chunk({}, "stop"))]) as server:
        _turns_, agent = _turns(server, ["hi"], tmp_path=tmp_path)
    view = json.dumps(model_calls_view_model(list(agent.model_calls)))
    for shown in (view, agent.model_calls.table()):
        assert KEY[:8] not in shown


def test_call_timeout_must_be_a_number_of_seconds():
    import pytest

    from ahp_lab.agents.loop import LoopAgent

    for wrong in ("5", float("nan"), 0, -1, True):
        with pytest.raises(ValueError, match="call_timeout must be a number of seconds above 0, or None"):
            LoopAgent(call_timeout=wrong)
    assert LoopAgent(call_timeout=None).call_timeout is None


def test_a_model_call_record_keeps_no_copy_of_its_request_once_compared(tmp_path):
    """Each record kept its whole request as bytes for the next call's comparison, for all 2,000
    records the log keeps; only a chat's last call is ever compared again."""
    with FakeOpenAI([text_reply(f"answer {i}") for i in range(3)]) as server:
        _turns_, agent = _turns(server, ["a", "b", "c"], tmp_path=tmp_path)
    calls = list(agent.model_calls)
    assert [len(c._base) > 0 for c in calls] == [False, False, True]
    assert all(c.stable for c in calls[1:])


@given(st.text(max_size=200))
def test_every_tool_name_gets_one_stable_alias_the_models_api_takes(name):
    alias = model_tool_name(name)
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", alias)
    assert model_tool_name(name) == alias  # the history names the same tool the same way
    if re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name):
        assert alias == name
    else:  # two names that read alike differ in their digest
        assert alias != model_tool_name(name + ".") and alias != model_tool_name("." + name)


def test_a_refusal_ends_the_turn_with_refusal_quoting_it_masked_and_bounded(tmp_path):
    """A refusal (streamed ``delta.refusal``, finish reason ``stop``) gave an empty, complete turn."""
    said = f"I can't help with that ({KEY}). " + "No. " * 2000
    replies = [
        raw_reply(
            chunk({"role": "assistant", "content": None, "refusal": ""}),
            chunk({"refusal": said[:30]}),
            chunk({"refusal": said[30:]}),
            chunk({}, "stop"),
            chunk(None, usage={"prompt_tokens": 4, "completion_tokens": 6, "total_tokens": 10}),
        ),
        text_reply("fine again"),
    ]
    with FakeOpenAI(replies) as server:
        turns, agent = _turns(server, ["help?", "again"], tmp_path=tmp_path)
    refused, again = turns
    error = refused.state["error"]
    assert error["errorType"] == "refusal"
    assert error["message"].startswith("The model refused to answer: I can't help with that (***")
    assert KEY not in error["message"] and len(error["message"]) < 2100  # masked, then cut
    assert refused.state["usage"]["inputTokens"] == 4  # the call's usage still counts
    record = agent.model_calls[0]
    assert record.error == error["message"]  # the Model calls view shows it
    shown = record.to_json()
    assert shown["response"]["refusal"].startswith("I can't help with that (***") and KEY not in json.dumps(
        shown
    )
    assert again.state["state"] == "complete" and again.text == "fine again"


def test_a_whole_completion_keeps_its_refusal():
    """``stream=False``: ``message.refusal`` with ``content: null`` was dropped."""
    import asyncio

    from openai.types.chat import ChatCompletion

    from ahp_lab.agents.models import _chunks_of

    completion = ChatCompletion.model_validate(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": None, "refusal": "I can't help with that."},
                }
            ],
        }
    )

    async def first():
        return [c async for c in _chunks_of(completion)][0]

    [choice] = asyncio.run(first()).choices
    assert choice.delta.refusal == "I can't help with that."


def test_duplicate_tool_call_ids_or_a_nameless_call_are_malformed_and_nothing_runs(tmp_path):
    """Two calls sharing an id both ran (the next request answered one id twice); a call without a
    name ran as tool '' (the next request named a tool '')."""

    def call(index, call_id, name=None):
        function = {"arguments": '{"text": "x"}'} | ({"name": name} if name is not None else {})
        return chunk(
            {"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": function}]}
        )

    replies = [
        raw_reply(call(0, "dup", "echo"), call(1, "dup", "echo"), chunk({}, "tool_calls")),
        raw_reply(call(0, "c1"), chunk({}, "tool_calls")),
        text_reply("fine again"),
    ]
    with FakeOpenAI(replies) as server:

        async def main():
            lab, agent = await loop_lab(tmp_path, OpenAIModel("m", base_url=server.base_url, api_key="k"))
            ran = []

            @lab.tool
            def echo(text: str) -> str:
                """Echo."""
                ran.append(text)
                return text

            turns = [await lab.send(p) for p in ("twice", "nameless", "again")]
            await lab.aclose()
            return turns, ran

        (twice, nameless, again), ran = arun(main())
    assert twice.state["error"] == {
        "errorType": "modelError",
        "message": "The model's answer is malformed: two of its tool calls have the id 'dup', so none of them was run.",
    }
    assert nameless.state["error"] == {
        "errorType": "modelError",
        "message": "The model's answer is malformed: a tool call names no tool, so none of them was run.",
    }
    assert ran == [] and not twice.tool_calls and not nameless.tool_calls
    assert again.state["state"] == "complete" and again.text == "fine again"
    last = server.requests[-1]["messages"]
    assert not any(m.get("role") == "tool" or m.get("tool_calls") for m in last)  # nothing half-kept


def test_tool_call_pieces_without_an_index_are_assembled_when_unambiguous(tmp_path):
    """Ollama and Gemini's OpenAI-compatible API send tool-call pieces without ``index``: every
    tool-calling turn failed ("a tool call's index is null, not an integer")."""

    def piece(function, call_id=None, index=None):
        tc = {"type": "function", "function": function}
        tc |= {"id": call_id} if call_id else {}
        tc |= {"index": index} if index is not None else {}
        return chunk({"tool_calls": [tc]})

    replies = [
        # a new id starts a call; a piece with neither id nor index continues the last one
        raw_reply(
            piece({"name": "echo", "arguments": '{"text": '}, "a"),
            piece({"arguments": '"one"}'}),
            piece({"name": "echo", "arguments": '{"text": "two"}'}, "b"),
            chunk({}, "tool_calls"),
        ),
        text_reply("ids done"),
        # whole calls without an id either: a second name starts a second call
        raw_reply(
            piece({"name": "echo", "arguments": '{"text": "three"}'}),
            piece({"name": "echo", "arguments": '{"text": "four"}'}),
            chunk({}, "tool_calls"),
        ),
        text_reply("names done"),
        # pieces with and without an index: which call a piece continues cannot be told
        raw_reply(
            piece({"name": "echo", "arguments": "{}"}, "c", index=0),
            piece({"arguments": "{}"}),
            chunk({}, "tool_calls"),
        ),
        text_reply("fine again"),
    ]
    with FakeOpenAI(replies) as server:

        async def main():
            lab, agent = await loop_lab(tmp_path, OpenAIModel("m", base_url=server.base_url, api_key="k"))
            ran = []

            @lab.tool
            def echo(text: str) -> str:
                """Echo."""
                ran.append(text)
                return text

            turns = [await lab.send(p) for p in ("ids", "names", "mixed", "again")]
            await lab.aclose()
            return turns, ran

        (ids, names, mixed, again), ran = arun(main())
    assert ran == ["one", "two", "three", "four"]
    assert ids.text == "ids done" and names.text == "names done"
    sent = server.requests[1]["messages"]
    assert [c["id"] for m in sent for c in m.get("tool_calls") or ()] == ["a", "b"]
    assert mixed.state["error"] == {
        "errorType": "modelError",
        "message": "The model's answer is malformed: some of its tool-call pieces have an index and some have "
        "none, so which call each one continues cannot be told; OpenAIModel(..., stream=False) asks for "
        "whole answers, which need none.",
    }
    assert again.state["state"] == "complete" and again.text == "fine again"


def test_endpoint_failures_a_new_user_cannot_act_on_say_what_to_do(tmp_path, monkeypatch):
    """Connection refused read ``APIConnectionError: Connection error.``, a wrong path only the
    404, a stream that is not JSON a JSONDecodeError, a whole answer to a stream request a stream
    with no finish reason, a missing key the endpoint's 401 about the key "not-set", a timeout
    ``Request timed out.``: none said what to do."""
    import socket

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    closed = socket.socket()  # bound, never listening: a connection to it is refused
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]

    async def error_of(model: OpenAIModel, case: str) -> str:
        (tmp_path / case).mkdir()
        lab, _agent = await loop_lab(tmp_path / case, model)
        turn = await lab.send("hi")
        await lab.aclose()
        assert turn.state["error"]["errorType"] == "modelError"
        return turn.state["error"]["message"]

    replies = [raw_reply("this is not json"), whole_reply(text_reply("whole")), stalled_reply()]
    with (
        FakeOpenAI(replies) as server,
        FakeOpenAI([], status=401) as refusing,
        FakeOpenAI([text_reply("hi")]) as keyless,
    ):
        url = server.base_url

        async def main():
            said = {
                "refused": await error_of(
                    OpenAIModel("m", base_url=f"http://127.0.0.1:{port}/v1"), "refused"
                ),
                "404": await error_of(OpenAIModel("m", base_url=url.removesuffix("/v1"), api_key=KEY), "404"),
                "not json": await error_of(OpenAIModel("m", base_url=url, api_key=KEY), "json"),
                "whole": await error_of(OpenAIModel("m", base_url=url, api_key=KEY), "whole"),
                "slow": await error_of(OpenAIModel("m", base_url=url, api_key=KEY, timeout=0.5), "slow"),
                "no key": await error_of(OpenAIModel("m", base_url=refusing.base_url), "nokey"),
                "bad key": await error_of(
                    OpenAIModel("m", base_url=refusing.base_url, api_key=KEY), "badkey"
                ),
            }
            (tmp_path / "keyless").mkdir()
            lab, _agent = await loop_lab(tmp_path / "keyless", OpenAIModel("m", base_url=keyless.base_url))
            said["keyless"] = (await lab.send("hi")).text  # a local endpoint that needs no key
            await lab.aclose()
            return said

        said = arun(main())
    closed.close()
    host = url.removesuffix("/v1")
    assert said == {
        "refused": f"Nothing answered at http://127.0.0.1:{port}/v1 (APIConnectionError: Connection error.): "
        "start the endpoint, or pass OpenAIModel the base_url it listens at.",
        "404": f"The endpoint answered 404 Not Found for {host}/chat/completions (Error code: 404): "
        "check the model name and base_url (OpenAI-compatible base URLs usually end in /v1).",
        "not json": f"The endpoint at {url} sent data that is not JSON in its answer (Expecting value); "
        "check that base_url points at an OpenAI-compatible API.",
        "whole": f"The endpoint at {url} answered with one JSON document, not a stream: pass stream=False to OpenAIModel.",
        "slow": f"The endpoint at {url} sent nothing for 0.5 s (OpenAIModel's timeout=), so the call was stopped.",
        "no key": f"The endpoint at {refusing.base_url} refused the call (401) and no API key was given: "
        "set OPENAI_API_KEY or pass api_key= to OpenAIModel.",
        "bad key": "The model call failed: AuthenticationError: Error code: 401 - the fake refuses "
        "(Incorrect API key provided: ***)",
        "keyless": "hi",
    }


def test_text_shown_before_a_stream_failed_or_was_cancelled_stays_in_the_history(tmp_path):
    """A turn whose stream broke (data that is not JSON) or was cancelled mid-stream lost the text
    the person saw from the model's history, though the docs say what was said stays in it."""
    replies = [
        raw_reply(chunk({"content": "Half an "}), "not json"),
        text_reply("next"),
        raw_reply(chunk({"content": "Still talking"}), keepalive=0.05),
        text_reply("after the cancel"),
    ]
    with FakeOpenAI(replies) as server:

        async def main():
            lab, _agent = await loop_lab(tmp_path, OpenAIModel("m", base_url=server.base_url, api_key="k"))
            broken = await lab.send("one")
            await lab.send("two")
            pending = lab.start("three")
            await wait_for(lab, lambda s: "Still talking" in json.dumps(s.get("activeTurn") or {}), lab.chat)
            await lab.cancel()
            cancelled = await pending
            await lab.send("four")
            await lab.aclose()
            return broken, cancelled

        broken, cancelled = arun(main())
    assert broken.state["state"] == "error" and broken.text == "Half an "
    assert cancelled.state["state"] == "cancelled"
    second, fourth = server.requests[1]["messages"], server.requests[3]["messages"]
    assert second[-2:] == [{"role": "assistant", "content": "Half an "}, {"role": "user", "content": "two"}]
    assert fourth[-2:] == [
        {"role": "assistant", "content": "Still talking"},
        {"role": "user", "content": "four"},
    ]


def test_credentials_in_the_base_url_are_masked_in_reprs(tmp_path):
    """A password (``http://bob:pw@host``) or a key (``?key=``) in base_url showed in
    ``repr(OpenAIModel)`` and ``repr(LoopAgent)``."""
    secret = "pw-in-the-url-4f1d"
    with FakeOpenAI([]) as server:
        port = server.base_url.split(":")[2].split("/")[0]

        async def main():
            shown = []
            for base in (f"http://bob:{secret}@127.0.0.1:{port}/v1", f"{server.base_url}?key={secret}"):
                model = OpenAIModel("m", base_url=base, api_key=KEY)
                lab, agent = await loop_lab(tmp_path, model)
                shown += [repr(model), repr(agent)]
                assert secret in model.secrets()  # masked by the host where an error quotes it
                await lab.aclose()
            return shown

        shown = arun(main())
    assert not any(secret in s for s in shown)
    assert shown[0] == f"<OpenAIModel m at http://***@127.0.0.1:{port}/v1>"
    assert shown[2] == f"<OpenAIModel m at {server.base_url}?key=***>"


def test_only_credentials_in_the_base_url_go_to_the_hosts_masking():
    """Every query value went to the host's masking: Azure's ``?api-version=2024-02-01`` turned
    every "2024-02-01" in every text into ``***``; a token given as the user name did not go
    (review of this stop)."""
    azure = OpenAIModel(
        "m", base_url="https://x.example/v1?api-version=2024-02-01&sig=s1g-v4lue", api_key=KEY
    )
    assert "2024-02-01" not in azure.secrets() and "s1g-v4lue" in azure.secrets()
    token = OpenAIModel("m", base_url="https://tok-9f8e7d6c@x.example/v1", api_key=KEY)
    assert "tok-9f8e7d6c" in token.secrets()
    named = OpenAIModel(
        "m", base_url="https://x.example/v1?code=c0de-1&accessToken=at-2&apiToken=at-3", api_key=KEY
    )
    assert {"c0de-1", "at-2", "at-3"} <= set(named.secrets())
