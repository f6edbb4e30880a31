"""LoopAgent when things go wrong: a turn cancelled mid-call, an endpoint that quotes the key or
cuts its answer short, extension code that raises SystemExit or ignores its deadline. The model
side is the real OpenAI SDK against a fake chat-completions server on 127.0.0.1 that refuses what
the real API refuses."""

from __future__ import annotations

import asyncio
import io
import json
import sys

import pytest

from ahp_lab.agents.models import OpenAIModel, ScriptedModel, respond, use
from ahp_lab.extensions import (
    Catalog,
    Extension,
    ExtensionTool,
    Hooks,
    Lifecycle,
    ToolError,
)

from ..loop_helpers import arun, loop_lab, notes
from .fake_openai import FakeOpenAI, text_reply, tool_reply


def test_a_turn_cancelled_during_a_tool_call_leaves_a_history_the_api_accepts(tmp_path):
    started = asyncio.Event()
    replies = [tool_reply("slow", {}, call_id="call_S"), text_reply("Fine again.")]
    with FakeOpenAI(replies) as server:

        async def main():
            lab, agent = await loop_lab(tmp_path, OpenAIModel("m", base_url=server.base_url, api_key="k"))

            @lab.tool
            async def slow() -> str:
                """Takes its time."""
                started.set()
                await asyncio.sleep(60)
                return "never"

            pending = lab.start("run slow")
            await asyncio.wait_for(started.wait(), 30)
            await lab.cancel()
            first = await pending
            second = await lab.send("again please")
            await lab.aclose()
            return first, second

        first, second = arun(main())
    assert first.state["state"] == "cancelled"
    assert second.state["state"] == "complete" and second.text == "Fine again."
    sent = server.requests[-1]["messages"]
    # the cancelled call is answered before the next user message
    assert (sent[3]["role"], sent[3]["tool_call_id"]) == ("tool", "call_S"), sent
    assert "did not finish" in sent[3]["content"]


def test_an_api_key_the_endpoint_quotes_in_its_error_is_masked_everywhere(tmp_path):
    secret = "zz-secret-Key-4f9a7c21d0e8b3a6"  # no well-known shape: only the literal value can catch it
    with FakeOpenAI([], status=401) as server:

        async def main():
            lab, agent = await loop_lab(tmp_path, OpenAIModel("m", base_url=server.base_url, api_key=secret))
            turn = await lab.send("hi")
            log = io.StringIO()
            lab.store.export(log)
            records = json.dumps([c.to_json() for c in agent.model_calls])
            await lab.aclose()
            return turn, log.getvalue(), records, agent.model_calls[-1].error

        turn, exported, records, error = arun(main())
    message = turn.state["error"]["message"]
    assert turn.state["error"]["errorType"] == "modelError" and "401" in message
    assert "Incorrect API key provided: ***" in message
    for where in (message, exported, records, error):
        assert secret not in where


def test_an_answer_cut_short_ends_the_turn_with_an_error_not_as_complete(tmp_path):
    replies = [text_reply("truncated answ", finish="length"), text_reply("partial answer", finish=None)]
    with FakeOpenAI(replies) as server:

        async def main():
            lab, _agent = await loop_lab(tmp_path, OpenAIModel("m", base_url=server.base_url, api_key="k"))
            cut = await lab.send("long please")
            unfinished = await lab.send("again")
            await lab.aclose()
            return cut, unfinished

        cut, unfinished = arun(main())
    assert cut.state["state"] == "error" and cut.state["error"]["errorType"] == "maxTokens"
    assert cut.text == "truncated answ"  # what was streamed stays
    assert unfinished.state["state"] == "error" and unfinished.state["error"]["errorType"] == "modelError"
    assert "no finish reason" in unfinished.state["error"]["message"]
    # the cut answer is in the history the next request sent, as it is in the chat
    assert {"role": "assistant", "content": "truncated answ"} in server.requests[1]["messages"]


def test_params_may_turn_streaming_off(tmp_path):
    replies = [tool_reply("echo", {"text": "hi"}), text_reply("Echoed.")]
    with FakeOpenAI(replies) as server:

        async def main():
            model = OpenAIModel("m", base_url=server.base_url, api_key="k", stream=False)
            lab, _agent = await loop_lab(tmp_path, model)

            @lab.tool
            def echo(text: str) -> str:
                """Echo."""
                return text

            turn = await lab.send("echo hi")
            await lab.aclose()
            return turn

        turn = arun(main())
    assert server.requests[0]["stream"] is False
    assert turn.state["state"] == "complete" and turn.text == "Echoed."
    assert turn.tool_calls[0].result_text == "hi"


def test_system_exit_in_extension_code_is_reported_and_never_ends_the_kernel(tmp_path):
    def leave(*_args):
        sys.exit(5)

    extensions = [
        Extension("quits-on-start", lifecycle=Lifecycle(activate=leave)),
        Extension("quits-in-hook", hooks=Hooks(before_model_call=leave, before_tool_call=leave)),
        Extension("quits-in-catalog", catalogs=[Catalog("c", discover=leave)]),
    ]
    model = ScriptedModel([respond("Using it.", use("echo", text="x")), "Done."])

    async def main():
        lab, agent = await loop_lab(tmp_path, model, extensions)

        @lab.tool
        def echo(text: str) -> str:
            """Echo."""
            return text

        turn = await lab.send("go")
        problems = list(agent.extension_session(lab.session).problems)
        said = notes(lab)
        await lab.aclose()
        return turn, problems, said

    turn, problems, said = arun(main())  # asyncio.run itself would raise SystemExit otherwise
    assert turn.state["state"] == "complete" and turn.text.endswith("Done.")
    assert any("quits-on-start failed to activate: SystemExit" in p for p in problems)
    assert any("before_model_call raised SystemExit" in n for n in said)
    assert any("before_tool_call raised SystemExit" in n for n in said)


def test_a_hook_that_ignores_its_cancellation_still_loses_at_its_deadline(tmp_path):
    release = asyncio.Event()

    async def stubborn(_runtime):
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue  # ignores the cancellation: only the release ends it
        return "too late"

    extension = Extension("stubborn", hooks=Hooks(before_model_call=stubborn, timeout=0.2))

    async def main():
        lab, _agent = await loop_lab(tmp_path, ScriptedModel(["Answered."]), [extension])
        turn = await lab.send("go")  # never returns if the deadline waits for the hook
        said = notes(lab)
        release.set()
        await lab.aclose()
        return turn, said

    turn, said = arun(main())
    assert turn.state["state"] == "complete" and turn.text == "Answered."
    assert any("did not finish within its 0.2 s deadline" in n for n in said)


def test_a_tool_sees_its_cancellation_before_its_cleanup_runs(tmp_path):
    seen: list[bool] = []
    started = asyncio.Event()

    async def wait_long(_runtime, call):
        started.set()
        try:
            await asyncio.sleep(60)
        finally:
            seen.append(call.cancelled.is_set())
        return "never"

    extension = Extension("waits", tools=[ExtensionTool("WaitLong", "Waits.", wait_long)])
    model = ScriptedModel([respond("Waiting.", use("WaitLong"))])

    async def main():
        lab, _agent = await loop_lab(tmp_path, model, [extension])
        pending = lab.start("wait")
        await asyncio.wait_for(started.wait(), 30)
        await lab.cancel()
        await pending
        await lab.aclose()

    arun(main())
    assert seen == [True]


def test_bad_hook_values_and_bad_declarations_are_refused_with_a_reason(tmp_path):
    with pytest.raises(ValueError, match="positive number of seconds"):
        Hooks(timeout=-1)
    with pytest.raises(ValueError, match="tool name .bad name/x. must be 1-128 letters"):
        ExtensionTool("bad name/x", "bad", lambda rt, call: "x")
    with pytest.raises(TypeError, match="the parameters of the tool .Bad. must be a pydantic model"):
        ExtensionTool("Bad", "bad", lambda rt, call: "x", {"type": "object"})
    assert ToolError("why").args == ("why",)  # importable where docs/extensions.md says

    extension = Extension("says-no", hooks=Hooks(before_tool_call=lambda rt, call: "deny this"))
    model = ScriptedModel([respond("Using it.", use("echo", text="x")), "Done."])

    async def main():
        lab, _agent = await loop_lab(tmp_path, model, [extension])

        @lab.tool
        def echo(text: str) -> str:
            """Echo."""
            return text

        turn = await lab.send("go")
        said = notes(lab)
        await lab.aclose()
        return turn, said

    turn, said = arun(main())
    assert any("before_tool_call returned an object of type str, not a Block or None" in n for n in said)
    assert turn.text.endswith("Done.")


def test_a_hook_raising_an_exception_without_a_message_is_named_without_a_dangling_colon(tmp_path):
    def interrupt(*_args):
        raise KeyboardInterrupt()

    extensions = [Extension("bad", hooks=Hooks(after_tool_call=interrupt))]
    model = ScriptedModel([respond("", use("echo", text="x")), "Done."])

    async def main():
        lab, _agent = await loop_lab(tmp_path, model, extensions)

        @lab.tool
        def echo(text: str) -> str:
            """Echo."""
            return text

        turn = await lab.send("go")
        said = notes(lab)
        await lab.aclose()
        return turn, said

    turn, said = arun(main())
    assert turn.state["state"] == "complete"
    assert "Extension hook bad.after_tool_call raised KeyboardInterrupt; skipped for this call." in said


def test_a_turn_at_max_steps_ends_as_an_error_that_names_max_steps(tmp_path):
    """A turn cut at max_steps ended ``complete`` with only a notification."""

    async def main():
        model = ScriptedModel([respond("", use("tick")), respond("", use("tick")), "Went on."])
        lab, _agent = await loop_lab(tmp_path, model, max_steps=2)

        @lab.tool
        def tick() -> str:
            """Tick."""
            return "tock"

        stopped = await lab.send("tick forever")
        again = await lab.send("go on")
        await lab.aclose()
        return stopped, again, model.requests[-1].messages

    stopped, again, sent = arun(main())
    assert stopped.state["state"] == "error" and stopped.state["error"] == {
        "errorType": "maxTurnRequests",
        "message": "The turn stopped after 2 model calls (LoopAgent's max_steps): send a message to let "
        "the model go on, or give the agent a higher max_steps.",
    }
    assert [c.result_text for c in stopped.tool_calls] == ["tock", "tock"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "tool", "user"]
    assert again.state["state"] == "complete" and again.text == "Went on."
