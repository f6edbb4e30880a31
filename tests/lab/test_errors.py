"""Errors a person can act on: each mistake below, made as a person would make it in a cell, is
refused with one sentence about what they wrote, nothing is sent, and the lab keeps working."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable

import pytest

from ahp_lab import Lab, ProtocolError
from ahp_lab.lab import UnknownFieldWarning
from ahp_lab.widgets import Workbench


def arun(coro):
    return asyncio.run(coro)


def _still_works(lab: Lab) -> None:
    """Nothing was sent and the lab is fine: the next dispatch is accepted."""
    assert lab.dispatch({"type": "session/titleChanged", "title": "still fine"}).accepted


# -- dispatch --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lab():
    return Lab()


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (
            {"type": "no/suchAction"},
            r"unknown action type 'no/suchAction': action types start with root/, session/, chat/",
        ),
        (
            {"type": "chat/turnStartd"},
            r"unknown action type 'chat/turnStartd': did you mean 'chat/turnStarted'\?",
        ),
        (
            {"title": "x"},
            r"the action has no 'type': name the action, as in \{'type': 'session/titleChanged'",
        ),
        ({"type": 7}, r"the action's 'type' must be a string such as 'chat/turnStarted', not int 7"),
        (None, r"dispatch takes an action, a dict such as \{'type': 'session/titleChanged'.*not None"),
        ("session/titleChanged", r"dispatch takes an action, a dict .* not str 'session/titleChanged'"),
    ],
)
def test_a_malformed_action_is_refused_before_anything_is_sent(lab, action, message):
    before = len(lab.transitions)
    with pytest.raises(ProtocolError, match=message):
        lab.dispatch(action)
    assert "say which channel" not in message and len(lab.transitions) == before
    _still_works(lab)


def test_an_unknown_extra_field_warns_naming_it_and_the_action_is_still_sent(lab):
    with pytest.warns(
        UnknownFieldWarning, match=r"session/titleChanged: unknown field 'titel' \(did you mean 'title'\?\)"
    ) as caught:
        accepted = lab.dispatch({"type": "session/titleChanged", "title": "typo", "titel": "typo"})
    assert caught[0].filename == __file__  # the warning points at the cell, not at ahp_lab
    assert accepted.accepted and lab.session_state["title"] == "typo"  # forward compatible: sent as written


def test_a_misspelt_required_field_is_named_with_the_missing_one(lab):
    """``{"titel": ...}`` said only "field 'title' is required": the misspelling, which the guide
    promises a hint for, was never named, since the warning comes after validation (a first-hour
    user)."""
    before = len(lab.transitions)
    with pytest.raises(
        ProtocolError, match=r"field 'title' is required \(unknown field 'titel': did you mean 'title'\?\)"
    ):
        lab.dispatch({"type": "session/titleChanged", "titel": "x"})
    assert len(lab.transitions) == before


def test_unknown_fields_inside_a_message_are_named_by_their_path(lab):
    action = {
        "type": "chat/draftChanged",
        "draft": {"text": "hi", "origin": {"kind": "user"}, "txet": "typo"},
    }
    with pytest.warns(UnknownFieldWarning, match=r"unknown field 'draft.txet'"):
        lab.dispatch(action)


def test_a_known_action_with_only_known_fields_does_not_warn(lab):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lab.dispatch({"type": "session/titleChanged", "title": "clean"})
        lab.dispatch({"type": "session/titleChanged", "title": "meta", "_meta": {"by": "me"}})  # a convention
        lab.dispatch(
            {"type": "chat/draftChanged", "draft": {"text": "hi", "origin": {"kind": "user"}}, "_meta": {}}
        )


# -- other errors --------------------------------------------------------------------------------


@pytest.mark.parametrize("decorator", ["tool", "server_tool"])
@pytest.mark.parametrize("value", [42, "my_tool"])
def test_a_tool_decorator_given_something_that_is_not_a_function(lab, decorator, value):
    with pytest.raises(
        TypeError, match=rf"lab.{decorator} registers a function: put @lab.{decorator} above a def"
    ):
        getattr(lab, decorator)(value)


@pytest.mark.parametrize("method", ["send", "start", "run"])
@pytest.mark.parametrize("text", [None, 42, {"text": "hi"}])
def test_a_prompt_that_is_not_text_is_about_the_methods_own_argument(lab, method, text):
    before = len(lab.transitions)
    call = getattr(lab, method)
    with pytest.raises(
        TypeError, match=rf"{method} takes the message text as a string, such as lab.{method}\("
    ):
        arun(call(text)) if method == "send" else call(text)  # not "field 'message.text' is required"
    assert len(lab.transitions) == before


def test_a_replay_is_read_only_and_says_so(lab, tmp_path):
    path = tmp_path / "run.jsonl"
    lab.export(path)
    replay = Lab.replay(path)
    for name in ("send", "start", "run", "dispatch", "approve", "tool", "aclose"):
        with pytest.raises(AttributeError, match=rf"a replay is read-only: {name} belongs to a live Lab\(\)"):
            getattr(replay, name)
    assert not hasattr(replay, "send")  # hasattr() and getattr(..., default) still work
    with pytest.raises(AttributeError, match="has no attribute 'no_such_thing'"):
        replay.no_such_thing  # noqa: B018
    assert replay.state(lab.session)["title"] == lab.session_state["title"]  # reading works
    source = Workbench(replay).source
    assert source.read_only and not source.closed
    with pytest.raises(PermissionError, match="a replayed log is read-only"):
        source.prompt("hello")


class _Opaque:
    """A class pydantic has no JSON Schema for."""


def _callable_hint(f: Callable[[int], int]) -> str:
    return "x"


def _class_hint(x: _Opaque) -> str:
    return "x"


def _undefined_hint(x: NoSuchType) -> str:  # noqa: F821 - the mistake under test
    return "x"


def _star_args(*args) -> str:
    return "x"


@pytest.mark.parametrize(
    "fn, why",
    [
        (
            _callable_hint,
            r"parameter 'f' is annotated collections.abc.Callable\[\[int\], int\], which has no JSON Schema",
        ),
        (_class_hint, r"parameter 'x' is annotated _Opaque, which has no JSON Schema"),
        (_undefined_hint, r"a type hint names NoSuchType, which is not defined where the function is"),
        (_star_args, r"\*args cannot be filled from a JSON object of arguments"),
    ],
)
def test_a_tool_whose_hints_are_not_json_is_refused_by_name_and_later_tools_still_register(lab, fn, why):
    name = fn.__name__
    with pytest.raises(TypeError, match=rf"the tool '{name}' cannot take its input from JSON: {why}"):
        lab.tool(fn)

    @lab.tool
    def still_fine(n: int) -> str:
        """Registers after the refusal."""
        return str(n)

    published = [t["name"] for c in lab.session_state["activeClients"] for t in c.get("tools") or ()]
    assert "still_fine" in published and name not in published


def test_send_without_await_says_that_nothing_was_sent(lab):
    before = len(lab.transitions)
    unsent = lab.send("hello")
    assert "has not sent anything: write `await lab.send(...)`" in repr(unsent)
    assert len(lab.transitions) == before
    # read as the turn it is not (an exercise's check cell did): it says why, not just "no attribute"
    with pytest.raises(AttributeError, match=r"'tool_calls': this is lab.send\('hello'\) not awaited"):
        unsent.tool_calls  # noqa: B018
    unsent.close()  # the coroutine it holds, never awaited: no warning at collection


@pytest.mark.parametrize("how", ["a dict", "a function", "an async function"])
def test_an_answer_of_the_wrong_kind_is_said_instead_of_waiting_forever(how):
    """The client refuses an answer whose value does not fit its question (a ProtocolError from
    its dispatch): the turn waited for ever for the answer never sent; from an async answerer,
    nothing woke the sender even once the reason was known."""
    from ahp_lab.agents.scripted import ask, integer_question, say

    form = [ask(integer_question("n", "How many?", required=True)), say("ok")]

    async def wrong(request):
        return {"n": "x"}

    answers = {"a dict": {"n": "x"}, "a function": lambda request: {"n": "x"}, "an async function": wrong}[
        how
    ]

    async def main():
        lab = await Lab.open()
        with pytest.raises(ValueError, match=r"field 'answers.n.value.value' must be a number, got string"):
            await asyncio.wait_for(lab.send("x", script=form, answers=answers), 30)
        assert lab.answer(answers={"n": 3}).accepted  # still open, and answerable
        await lab.wait_for(lab.chat, lambda s: not s.get("activeTurn") or None, timeout=30)
        await lab.aclose()

    arun(main())


def test_a_lab_whose_session_was_disposed_says_so_instead_of_waiting():
    """After ``lab.host.dispose_session(lab.session)`` a send waited for ever and a dispatch 30 s
    for a generic timeout: the host drops an action for a channel it no longer has. The client
    now drops the session and its chats when the host says ``root/sessionRemoved``."""

    async def main():
        lab = await Lab.open()
        lab.host.dispose_session(lab.session)
        with pytest.raises(
            (ProtocolError, LookupError), match=r"the host no longer has ahp-chat:/.*disposed"
        ):
            await asyncio.wait_for(lab.send("hello"), 10)
        with pytest.raises(
            (ProtocolError, LookupError), match=r"the host no longer has ahp-session:/.*disposed"
        ):
            await asyncio.wait_for(lab.adispatch({"type": "session/titleChanged", "title": "z"}), 10)
        await lab.aclose()

    arun(main())


def test_a_send_whose_session_is_disposed_while_its_turn_waits_says_the_turn_left():
    """A send waiting on its turn's question when the session is disposed ends with the reason (the
    turn left with its chat), not a ``KeyError`` from looking up the disposed session's agent."""
    from ahp_lab.agents.scripted import ask, say, text_question

    form = [ask(text_question("name", "Project name?", required=True)), say("ok")]

    async def main():
        lab = await Lab.open()
        sending = asyncio.ensure_future(lab.send("x", script=form))

        def asked(chat):
            parts = (chat.get("activeTurn") or {}).get("responseParts") or ()
            return [p for p in parts if p.get("kind") == "inputRequest"] or None

        await lab.wait_for(lab.chat, asked, timeout=30)
        lab.host.dispose_session(lab.session)
        with pytest.raises(
            LookupError, match=r"left the chat before it ended \(the chat was truncated or disposed\)"
        ):
            await asyncio.wait_for(sending, 10)
        await lab.aclose()

    arun(main())


def test_answers_naming_no_question_say_so_instead_of_waiting_forever():
    from ahp_lab.agents.scripted import ask, say, text_question

    form = [ask(text_question("name", "Project name?", required=True)), say("ok")]

    async def main():
        lab = await Lab.open()
        with pytest.raises(
            ValueError,
            match=r"answers names 'nmae': input request .* has no such question \(its questions: 'name'\)",
        ):
            await asyncio.wait_for(lab.send("x", script=form, answers={"nmae": "acme"}), 30)
        with pytest.raises(ValueError, match=r"requires an answer to 'name'; answers has none"):
            lab.answer(answers={})
        assert lab.answer(answers={"name": "acme"}).accepted  # still open, and answerable
        await lab.wait_for(lab.chat, lambda s: not s.get("activeTurn") or None, timeout=30)
        assert lab.turns()[-1].text == "ok"
        await lab.aclose()

    arun(main())


def test_an_edit_that_does_not_fit_the_tools_schema_is_refused_before_it_is_sent():
    async def main():
        lab = await Lab.open()

        @lab.tool(annotations={"destructiveHint": True})
        def zap(name: str) -> str:
            """Zap something (asks for confirmation)."""
            return f"zapped {name}"

        def waiting(state):
            parts = (state.get("activeTurn") or {}).get("responseParts") or ()
            return (
                any((p.get("toolCall") or {}).get("status") == "pending-confirmation" for p in parts) or None
            )

        pending = lab.start("call zap name=a")
        await lab.wait_for(lab.chat, waiting, timeout=30)
        before = len(lab.transitions)
        with pytest.raises(
            ValueError, match=r"the edited input does not fit the tool's schema \(Zap: argument 'name'"
        ):
            lab.approve(edit={"name": 5})
        assert len(lab.transitions) == before  # nothing sent: the call still waits
        lab.approve(edit={"name": "b"})
        turn = await pending
        assert turn.tool_calls[0].result_text == "zapped b"
        await lab.aclose()

    arun(main())


def test_arguments_of_the_wrong_kind_are_named_in_the_error(lab):
    with pytest.raises(
        TypeError, match=r"agent must be an agent object, such as ScriptedAgent\(\).*str 'gpt-4'"
    ):
        Lab(agent="gpt-4")
    with pytest.raises(TypeError, match=r"export writes to a path or a text file, not int 42"):
        lab.export(42)
    with pytest.raises(TypeError, match=r"to_fixture writes to a path \(a str or Path\), not int 42"):
        lab.transitions[-2:].to_fixture(42, channel=lab.session)

    async def never():
        await lab.client.wait_for(lab.chat, lambda s: None, timeout=0.05)

    with pytest.raises(TimeoutError, match=r"no state of ahp-chat:.* satisfied the condition within 0.05 s"):
        arun(never())


def test_a_plugin_folder_that_is_not_there_is_said_when_the_lab_is_made(tmp_path, monkeypatch):
    """``Lab(plugins=["examples/plugins/ahp-lab-demo"])`` run from ``notebooks/`` made a lab whose
    tree showed an error entry, and nothing in the cell said so (a first-hour user)."""
    monkeypatch.chdir(tmp_path)
    with pytest.warns(
        UserWarning, match=r"there is no plugin folder at .*nope \(read from the kernel.s working folder"
    ):
        lab = Lab(plugins=["plugins/nope"])
    lab.close()
