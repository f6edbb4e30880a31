"""Session state follows the conversation tree (truncate, fork); hooks add a synthetic tail that
never enters the history; a hook that raises or overruns its deadline is reported and skipped."""

from __future__ import annotations

import asyncio
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from ahp_lab.agents.models import ScriptedModel, respond, use
from ahp_lab.extensions import Block, Extension, ExtensionTool, Hooks, SessionState, todo_extension
from tests.conftest import examples

from ..loop_helpers import arun, loop_lab, notes


def todos(*items: tuple[str, str]) -> list[dict]:
    return [{"id": i, "content": f"task {i}", "status": s} for i, s in items]


def plan(*items: tuple[str, str]):
    return respond("", use("UpdateTodos", todos=todos(*items)))


def todo_state(agent, lab, chat=None) -> list[tuple[str, str]]:
    """The todo list as the model would see it next in ``chat``."""
    es = agent.extension_session(lab.session)
    value = es.state_value("todo", chat or lab.chat, None)
    return [(t.id, t.status) for t in value.items]


def test_todo_state_rewinds_with_truncation_and_is_inherited_by_a_fork(tmp_path):
    model = ScriptedModel(
        [
            plan(("a", "in_progress")),
            "planned",
            plan(("a", "completed"), ("b", "in_progress")),
            "moved on",
            "third",
        ]
    )

    async def main():
        lab, agent = await loop_lab(tmp_path, model, [todo_extension()])
        t1 = await lab.send("plan")
        await lab.send("progress")
        await lab.send("anything else?")
        assert todo_state(agent, lab) == [("a", "completed"), ("b", "in_progress")]
        # the synthetic reminder of the third turn's call showed the state of turn 2
        tail = agent.model_calls[-1].tail
        assert len(tail) == 1 and '"b"' in tail[0]["content"] and tail[0]["_synthetic"] == "todo"

        fork = f"ahp-chat:/{uuid.uuid4()}"
        await lab.client.request(
            "createChat",
            {
                "channel": lab.session,
                "chat": fork,
                "source": {"kind": "fork", "chat": lab.chat, "turnId": t1.id},
            },
        )
        assert todo_state(agent, lab, fork) == [("a", "in_progress")]  # the fork has turn 1's state

        await lab.adispatch({"type": "chat/truncated", "turnId": t1.id})
        assert todo_state(agent, lab) == [("a", "in_progress")]  # back to turn 1
        await lab.adispatch({"type": "chat/truncated"})
        assert todo_state(agent, lab) == []  # before any turn: the default
        await lab.aclose()

    arun(main())


def test_an_invalid_todo_update_is_refused_and_the_state_is_unchanged(tmp_path):
    model = ScriptedModel(
        [plan(("a", "in_progress")), plan(("a", "in_progress"), ("b", "in_progress")), "ok"]
    )

    async def main():
        lab, agent = await loop_lab(tmp_path, model, [todo_extension()])
        turn = await lab.send("plan")
        ok, refused = turn.tool_calls
        assert ok.success and not refused.success
        assert "at most one todo may be in_progress" in refused.result_text
        assert todo_state(agent, lab) == [("a", "in_progress")]
        await lab.aclose()

    arun(main())


class Counter(BaseModel):
    n: int = 0


def _counter() -> Extension:
    def bump(runtime, call):
        return str(runtime.state.update(lambda c: Counter(n=c.n + 1)).n)

    return Extension(
        "counter", session_state=SessionState(Counter), tools=[ExtensionTool("Bump", "Add one.", bump)]
    )


@settings(
    max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.one_of(st.just("bump"), st.just("talk"), st.integers(min_value=0, max_value=6)),
        min_size=1,
        max_size=8,
    )
)
def test_state_always_equals_the_count_of_bumps_on_the_kept_branch(tmp_path_factory, ops):
    """Model-based: turns that bump or not, truncations to a random earlier turn; the state is
    always the number of bumping turns the chat still holds."""
    tmp_path = tmp_path_factory.mktemp("prop")

    def model(request):
        last = request.messages[-1]
        if last["role"] == "user" and last["content"] == "bump":
            return respond("", use("Bump"))
        return "ok"

    async def main():
        lab, agent = await loop_lab(tmp_path, ScriptedModel(model), [_counter()])
        kept: list[tuple[str, bool]] = []
        es = agent.extension_session(lab.session)
        for op in ops:
            if isinstance(op, int):
                if not kept:
                    continue
                i = op % len(kept)
                await lab.adispatch({"type": "chat/truncated", "turnId": kept[i][0]})
                kept = kept[: i + 1]
            else:
                turn = await lab.send(op)
                kept.append((turn.id, op == "bump"))
            assert es.state_value("counter", lab.chat, None).n == sum(b for _t, b in kept)
        await lab.aclose()

    arun(main())


def test_the_synthetic_tail_is_in_the_call_and_never_in_the_history(tmp_path):
    hook = Extension("clock", hooks=Hooks(before_model_call=lambda runtime: "It is 12:00 (synthetic)."))

    async def main():
        lab, agent = await loop_lab(tmp_path, ScriptedModel(["one", "two"]), [hook])
        await lab.send("first")
        await lab.send("second")
        first, second = agent.model_calls
        assert first.request.messages[-1] == {
            "role": "user",
            "content": "It is 12:00 (synthetic).",
            "_synthetic": "clock",
        }
        history = second.request.messages[: -second.request.synthetic]
        assert all("synthetic" not in str(m.get("content")) for m in history)
        assert [m["content"] for m in history] == ["first", "one", "second"]
        assert all("synthetic" not in str(m.get("content")) for m in agent.history(lab.chat))
        await lab.aclose()

    arun(main())


def test_a_hook_that_raises_or_overruns_is_reported_and_skipped_and_the_turn_goes_on(tmp_path):
    def broken(runtime):
        raise RuntimeError("oops")

    async def slow(runtime):
        await asyncio.sleep(30)
        return "never"

    good = Extension("good", hooks=Hooks(before_model_call=lambda runtime: "still here"))
    exts = [
        Extension("broken", hooks=Hooks(before_model_call=broken)),
        Extension("slow", hooks=Hooks(before_model_call=slow, timeout=0.2)),
        good,
    ]

    async def main():
        lab, agent = await loop_lab(tmp_path, ScriptedModel(["fine"]), exts)
        turn = await lab.send("go")
        assert turn.state["state"] == "complete" and turn.text == "fine"
        said = notes(lab)
        assert any("broken.before_model_call raised RuntimeError: oops" in n for n in said)
        assert any("slow.before_model_call did not finish within its 0.2 s deadline" in n for n in said)
        call = agent.model_calls[-1]
        assert [m["content"] for m in call.tail] == ["still here"] and len(call.reports) == 2
        await lab.aclose()

    arun(main())


def test_before_tool_call_can_block_and_after_tool_call_sees_the_result(tmp_path):
    seen = []

    def guard(runtime, call):
        if call.name == "rm" and call.arguments.get("path") == "/":
            return Block("refusing to delete /")
        return None

    exts = [
        Extension(
            "guard",
            hooks=Hooks(
                before_tool_call=guard,
                after_tool_call=lambda rt, call, result: seen.append((call.name, result.status, result.ok)),
            ),
        )
    ]
    model = ScriptedModel([respond("", use("rm", path="/"), use("rm", path="/tmp/x")), "done"])

    async def main():
        lab, agent = await loop_lab(tmp_path, model, exts)
        removed = []

        @lab.tool
        def rm(path: str) -> str:
            removed.append(path)
            return f"removed {path}"

        turn = await lab.send("clean")
        assert removed == ["/tmp/x"] and [tc.input["path"] for tc in turn.tool_calls] == ["/tmp/x"]
        assert any("blocked by guard: refusing to delete /" in n for n in notes(lab))
        told = [m["content"] for m in agent.model_calls[-1].request.messages if m["role"] == "tool"]
        assert told == ["The call of rm was blocked by guard: refusing to delete /.", "removed /tmp/x"]
        assert seen == [("rm", "blocked", False), ("rm", "completed", True)]
        await lab.aclose()

    arun(main())


def test_after_tool_call_rewrites_what_the_model_is_told_and_the_chat_keeps_the_result(tmp_path):
    """Seed 004: a tool_result handler may rewrite a result, even its error status. The model is
    told the rewrite; the chat keeps what the tool returned; later hooks see the rewrite."""
    from ahp_lab.extensions import ToolResult

    seen = []

    def redact(runtime, call, result):
        if "s3cret" in result.text:
            return ToolResult(result.text.replace("s3cret", "[redacted]"))
        if call.name == "flaky":
            return ToolResult("the service is down; try later", is_error=True)
        return None

    exts = [
        Extension("redact", hooks=Hooks(after_tool_call=redact)),
        Extension("audit", hooks=Hooks(after_tool_call=lambda rt, call, r: seen.append((r.ok, r.text)))),
        Extension("odd", hooks=Hooks(after_tool_call=lambda rt, call, r: 42)),
    ]
    model = ScriptedModel([respond("", use("read_env"), use("flaky")), "done"])

    async def main():
        lab, agent = await loop_lab(tmp_path, model, exts)

        @lab.tool
        def read_env() -> str:
            return "TOKEN=s3cret"

        @lab.tool
        def flaky() -> str:
            return "ok, 200"

        turn = await lab.send("look")
        told = [m["content"] for m in agent.model_calls[-1].request.messages if m["role"] == "tool"]
        assert told == ["TOKEN=[redacted]", "Error: the service is down; try later"]
        assert seen == [(True, "TOKEN=[redacted]"), (False, "Error: the service is down; try later")]
        assert [tc.result_text for tc in turn.tool_calls] == ["TOKEN=s3cret", "ok, 200"]
        assert [tc.success for tc in turn.tool_calls] == [True, True]
        assert any(
            "odd.after_tool_call returned an object of type int, not a ToolResult or None" in n
            for n in notes(lab)
        )
        await lab.aclose()

    arun(main())


def test_a_hook_reads_the_customizations_of_one_type_by_the_documented_keyword(tmp_path):
    """``runtime.customizations(type="tool")`` as docs/extensions.md writes it (the keyword was
    ``type_``, and the call raised ``TypeError``, reported as a failed hook)."""
    from ahp_lab.extensions import CustomTool

    seen = []
    ext = Extension(
        "peek",
        hooks=Hooks(
            before_model_call=lambda rt: seen.append([c["name"] for c in rt.customizations(type="tool")])
        ),
    )
    tool = CustomTool("shout", "Shout.", lambda *args: "HEY")

    async def main():
        lab, _agent = await loop_lab(tmp_path, ScriptedModel(["ok"]), [ext], custom_tools=[tool])
        await lab.send("hi")
        assert seen == [["shout"]] and not notes(lab)
        await lab.aclose()

    arun(main())


def test_session_state_persists_with_the_session_in_its_log_and_export(tmp_path):
    """Seed 003: an extension's session state persists with the session. Each change is recorded
    in the session's _meta (turn id -> extension id -> value), so an export holds it and a replay
    shows it."""
    from ahp_lab import Lab

    async def main():
        lab, agent = await loop_lab(
            tmp_path,
            ScriptedModel([respond("", use("UpdateTodos", todos=todos(("Read", "in_progress")))), "ok"]),
            [todo_extension()],
        )
        turn = await lab.send("plan it")
        recorded = lab.session_state["_meta"]["ahpLab"]["extensionState"][turn.id]
        assert [i["content"] for i in recorded["todo"]["items"]] == ["task Read"]
        out = tmp_path / "log.jsonl"
        lab.export(out)
        replayed = Lab.replay(out).state(lab.session)
        assert replayed["_meta"] == lab.session_state["_meta"]

    arun(main())
