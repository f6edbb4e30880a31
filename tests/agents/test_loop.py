"""LoopAgent: the model loop behind the host, with the scripted model and with a real OpenAI SDK
client talking to a fake chat-completions server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import io
import json

from ahp_lab.agents.models import ModelResponse, OpenAIModel, ScriptedModel, respond, use

from ..loop_helpers import actions, arun, loop_lab, notes
from .fake_openai import FakeOpenAI, text_reply, tool_reply


def test_a_scripted_turn_streams_deltas_and_its_tool_calls_surface_like_the_scripted_agents(tmp_path):
    async def main():
        model = ScriptedModel(
            [respond("Let me check the weather first.", use("weather", city="Oslo")), "It is sunny in Oslo."],
            chunk_size=5,
        )
        lab, agent = await loop_lab(tmp_path, model)

        @lab.tool
        def weather(city: str) -> str:
            """The weather in a city."""
            return f"sunny in {city}"

        turn = await lab.send("weather in Oslo?")
        assert turn.text == "Let me check the weather first.\n\nIt is sunny in Oslo."
        assert len(actions(lab, "chat/delta")) >= 8  # streamed in 5-character pieces, not at once
        [tc] = turn.tool_calls
        assert (tc.name, tc.status, tc.success, tc.result_text) == (
            "weather",
            "completed",
            True,
            "sunny in Oslo",
        )
        kinds = [t.type for t in lab.transitions if t.action.get("toolCallId") == tc.id]
        assert (
            kinds[0] == "chat/toolCallStart"
            and "chat/toolCallReady" in kinds
            and kinds[-1] == "chat/toolCallComplete"
        )
        # the model saw the tool and, on its second call, the result
        first, second = agent.model_calls
        assert [t["function"]["name"] for t in first.request.tools] == ["weather"]
        assert second.request.messages[-1] == {
            "role": "tool",
            "tool_call_id": second.request.messages[-2]["tool_calls"][0]["id"],
            "content": "sunny in Oslo",
        }
        assert turn.state["usage"]["inputTokens"] > 0
        await lab.aclose()

    arun(main())


def test_a_function_model_sees_the_whole_history_across_turns(tmp_path):
    seen = []

    def model(request):
        seen.append([(m["role"], m["content"]) for m in request.messages])
        return f"reply {len(seen)}"

    async def main():
        lab, _agent = await loop_lab(tmp_path, ScriptedModel(model))
        await lab.send("one")
        await lab.send("two")
        await lab.aclose()

    arun(main())
    assert seen == [[("user", "one")], [("user", "one"), ("assistant", "reply 1"), ("user", "two")]]


def test_bad_tool_arguments_from_the_model_are_reported_and_nothing_runs(tmp_path):
    async def main():
        bad = ModelResponse(tool_calls=[use("weather", city="x")])
        bad.tool_calls[0] = type(bad.tool_calls[0])("call_bad", "weather", "{not json")
        lab, agent = await loop_lab(tmp_path, ScriptedModel([bad, "ok"]))
        ran = []

        @lab.tool
        def weather(city: str) -> str:
            ran.append(city)
            return city

        turn = await lab.send("go")
        assert turn.state["state"] == "complete" and not ran and not turn.tool_calls
        assert any("not valid JSON" in n for n in notes(lab))
        assert "not valid JSON" in agent.model_calls[-1].request.messages[-1]["content"]
        await lab.aclose()

    arun(main())


def test_a_failing_model_ends_the_turn_with_an_error_and_the_next_turn_works(tmp_path):
    calls = []

    def model(request):
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("the endpoint went away")
        return "back"

    async def main():
        lab, agent = await loop_lab(tmp_path, ScriptedModel(model))
        turn = await lab.send("hi")
        assert turn.state["state"] == "error" and "the endpoint went away" in turn.state["error"]["message"]
        assert agent.model_calls[0].error.startswith("ConnectionError")
        assert (await lab.send("again")).text == "back"
        await lab.aclose()

    arun(main())


def test_cancelling_a_turn_stops_the_loop(tmp_path):
    release = asyncio.Event()

    async def model(request):
        await release.wait()
        return "too late"

    async def main():
        lab, agent = await loop_lab(tmp_path, ScriptedModel(model))
        pending = lab.start("wait")
        await lab.wait_for(lab.chat, lambda s: s.get("activeTurn"))
        await lab.wait_for(lab.chat, lambda s: len(agent.model_calls) == 1 or None)
        await lab.cancel()
        turn = await pending
        assert turn.state["state"] == "cancelled"
        assert agent.model_calls[0].error == "cancelled"
        await lab.aclose()

    arun(main())


# -- the OpenAI SDK against a fake server ----------------------------------------------------------


def test_openai_model_streams_text_and_assembles_tool_call_deltas(tmp_path):
    secret = "sk-test-do-not-leak-1234"
    replies = [
        tool_reply("weather", {"city": "Oslo"}, split=4, text="Checking."),
        text_reply("It is ", "sunny", "."),
    ]
    with FakeOpenAI(replies) as server:

        async def main():
            model = OpenAIModel("fake-model", base_url=server.base_url, api_key=secret, temperature=0)
            lab, agent = await loop_lab(tmp_path, model)

            @lab.tool
            def weather(city: str) -> str:
                """The weather in a city."""
                return f"sunny in {city}"

            turn = await lab.send("weather?")
            log = io.StringIO()
            lab.store.export(log)
            calls_json = json.dumps([c.to_json() for c in agent.model_calls])
            await lab.aclose()
            return turn, log.getvalue(), calls_json, repr(model), agent

        turn, exported, calls_json, shown, agent = arun(main())
    assert turn.text == "Checking.\n\nIt is sunny."
    [tc] = turn.tool_calls
    assert tc.input == {"city": "Oslo"} and tc.result_text == "sunny in Oslo"
    first, second = server.requests
    assert first["stream"] is True and first["model"] == "fake-model" and first["temperature"] == 0
    assert first["tools"][0]["function"]["name"] == "weather"
    assert first["messages"][0]["role"] == "system" and first["messages"][-1] == {
        "role": "user",
        "content": "weather?",
    }
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "sunny in Oslo"}
    assert second["messages"][-2]["tool_calls"][0]["function"] == {
        "name": "weather",
        "arguments": '{"city": "Oslo"}',
    }
    assert server.headers[0]["authorization"] == f"Bearer {secret}"  # the key is used ...
    for where in (exported, calls_json, shown, repr(agent)):  # ... and never recorded
        assert secret not in where
    # the turn's usage is the sum over its model calls (chat/usage replaces it), as the record says
    assert turn.state["usage"] == {"inputTokens": 20 + 11, "outputTokens": 5 + 7, "model": "fake-model"}
    assert [c.response.usage for c in agent.model_calls] == [
        {"inputTokens": 20, "outputTokens": 5},
        {"inputTokens": 11, "outputTokens": 7},
    ]
    assert [c.stable for c in agent.model_calls] == [None, True]


def test_an_endpoint_error_fails_the_turn_with_the_reason(tmp_path):
    with FakeOpenAI([], status=500) as server:

        async def main():
            lab, _agent = await loop_lab(tmp_path, OpenAIModel("m", base_url=server.base_url, api_key="k"))
            turn = await lab.send("hi")
            await lab.aclose()
            return turn

        turn = arun(main())
    assert turn.state["state"] == "error"
    assert turn.state["error"]["errorType"] == "modelError" and "500" in turn.state["error"]["message"]


def test_a_rate_limit_error_says_the_retry_after_the_endpoint_sent(tmp_path):
    """The 429's ``Retry-After`` was dropped from the error; ``max_retries`` has the SDK wait it out."""
    with FakeOpenAI([], status=429) as server:
        plain = server._server.RequestHandlerClass

        class SendsRetryAfter(plain):  # the fake, with the header a rate-limiting endpoint sends
            def send_response(self, code, message=None):
                super().send_response(code, message)
                self.send_header("retry-after", "0.01")

        server._server.RequestHandlerClass = SendsRetryAfter

        async def main():
            turns = []
            for retries in (0, 1):
                model = OpenAIModel("m", base_url=server.base_url, api_key="k", max_retries=retries)
                lab, agent = await loop_lab(tmp_path, model)
                turns.append(await lab.send("hi"))
                await lab.aclose()
            return turns, agent

        (once, retried), agent = arun(main())
    message = once.state["error"]["message"]
    assert once.state["error"]["errorType"] == "modelError"
    assert message.startswith(
        "The model call failed, and the endpoint asked to retry after 0.01 s: RateLimitError"
    )
    assert agent.model_calls[0].error.endswith("(Retry-After: 0.01 s)")
    assert retried.state["error"]["message"] == message and len(server.requests) == 3  # 1, then 1 + 1 retry


def test_a_model_that_does_not_stream_still_shows_its_answer(tmp_path):
    from ahp_lab.agents.models import ModelEvent

    class Batch:
        name = "batch"

        async def stream(self, request):
            yield ModelEvent("done", response=ModelResponse(text="all at once", reasoning="quietly"))

    async def main():
        lab, _agent = await loop_lab(tmp_path, Batch())
        turn = await lab.send("hi")
        kinds = [p["kind"] for p in turn.state["responseParts"]]
        assert turn.text == "all at once" and kinds == ["reasoning", "markdown"]
        await lab.aclose()

    arun(main())


def test_past_the_tool_limit_the_catalogs_entry_tools_are_still_offered(tmp_path):
    """With 127 or more resident tools, SearchTools and ExecuteTool (built last) were the tools cut
    at the 128-tool limit, and no catalog entry could be reached."""
    from ahp_lab.agents.loop import MAX_MODEL_TOOLS
    from ahp_lab.extensions import Catalog, CatalogEntry, Extension, ExtensionTool

    units = Catalog(
        "units", lambda rt: [CatalogEntry("km_to_miles", "Convert km.", execute=lambda rt, c: "ok")]
    )
    many = [ExtensionTool(f"T{i:03d}", f"tool {i}", lambda rt, c: "x") for i in range(MAX_MODEL_TOOLS + 2)]
    model = ScriptedModel(["hi"])

    async def main():
        lab, _agent = await loop_lab(tmp_path, model, [Extension("big", catalogs=[units], tools=many)])
        await lab.send("hi")
        await lab.aclose()

    arun(main())
    offered = [t["function"]["name"] for t in model.requests[0].tools]
    assert len(offered) == MAX_MODEL_TOOLS and offered[:2] == ["SearchTools", "ExecuteTool"]


def test_a_loop_agent_without_a_model_says_how_to_give_it_one(tmp_path):
    """``LoopAgent()`` answered "(The scripted model has no more responses.)", which says nothing
    of the missing model."""

    async def main():
        lab, _agent = await loop_lab(tmp_path)
        turn = await lab.send("hello")
        await lab.aclose()
        return turn

    assert arun(main()).text == (
        '(This LoopAgent has no model: give it one with LoopAgent(model=...), say OpenAIModel("gpt-4o-mini", '
        "base_url=..., api_key=...) or ScriptedModel([...]).)"
    )
