"""A second prompt waits its turn: ``send``/``start`` on a busy chat queue the message, the host
starts it when the chat is free, and the caller gets that turn. ``steer=True`` steers the running
turn instead; only ``queue=False`` fails fast."""

from __future__ import annotations

import asyncio

import pytest

from ahp_lab import ActionRejected, HumanInputNeeded, Lab
from ahp_lab.agents.scripted import ask, say, text_question
from ahp_lab.lab.remote import RemoteLab


def arun(coro):
    return asyncio.run(coro)


async def _busy_lab():
    """A lab whose chat is busy: a turn waits for a person to confirm a destructive call."""
    lab = await Lab.open()

    @lab.tool(annotations={"destructiveHint": True})
    def delete_branch(name: str) -> str:
        """Delete a git branch."""
        return f"deleted {name}"

    first = lab.start("delete_branch name=old")
    assert await first.until_blocked() == "Delete Branch is pending-confirmation"
    return lab, first


def _chat_types(lab):
    return [(t.type, t.action.get("kind")) for t in lab.transitions.where(channel=lab.chat)]


def test_a_second_prompt_is_queued_and_becomes_the_next_turn():
    async def main():
        lab, first = await _busy_lab()
        second = lab.start("and then say hi", script=[say("hi!")])
        third = asyncio.ensure_future(lab.send("and then bye", script=[say("bye!")]))
        await lab.wait_for(lab.chat, lambda s: len(s.get("queuedMessages") or ()) == 2)
        assert second.queued and second.turn_id is None and second.state is None
        queued = lab.chat_state["queuedMessages"]
        assert [m["message"]["text"] for m in queued] == ["and then say hi", "and then bye"]
        assert not second.done() and not third.done()  # they wait while the first turn waits for a person

        lab.approve()
        done = [await first, await second, await third]
        assert [t.status for t in done] == ["complete"] * 3
        assert [t.text for t in done[1:]] == ["hi!", "bye!"]  # each queued turn ran its own script
        assert [t.state["message"]["text"] for t in done] == [
            "delete_branch name=old",
            "and then say hi",
            "and then bye",
        ]
        assert [t["id"] for t in lab.chat_state["turns"]] == [t.id for t in done]  # in order, FIFO
        started = [t.action for t in lab.transitions.where(channel=lab.chat, type="chat/turnStarted")]
        assert [a.get("queuedMessageId") is not None for a in started] == [False, True, True]
        assert ("chat/pendingMessageSet", "queued") in _chat_types(lab)
        assert "queuedMessages" not in lab.chat_state

    arun(main())


def test_a_queued_turn_gets_its_own_answers():
    async def main():
        lab, first = await _busy_lab()
        form = [ask(text_question("name", "Project name?", required=True)), say("Created.")]
        queued = asyncio.ensure_future(lab.send("new project", script=form, answers={"name": "acme"}))
        await lab.wait_for(lab.chat, lambda s: s.get("queuedMessages"))
        lab.approve()
        await first
        turn = await queued
        assert turn.input_requests[0]["response"] == "accept"
        assert turn.input_requests[0]["request"]["answers"]["name"]["value"]["value"] == "acme"

    arun(main())


def test_queue_false_fails_fast_with_the_hosts_reason():
    async def main():
        lab, first = await _busy_lab()
        with pytest.raises(ActionRejected, match="a turn is already in progress"):
            await lab.send("right now", queue=False)
        assert "queuedMessages" not in lab.chat_state and not first.done()
        lab.approve()
        await first

    arun(main())


def test_a_turn_id_already_used_in_the_chat_is_refused():
    """Turn ids are unique within a chat (reducer-rules §5): a client reusing a finished turn's id
    would make truncation, forks and references to that turn ambiguous."""

    async def main():
        lab = await Lab.open()
        try:
            done = await lab.send("hello")
            again = {
                "type": "chat/turnStarted",
                "turnId": done.id,
                "startedAt": "2026-12-05T00:00:00.000Z",
                "message": {"text": "same id", "origin": {"kind": "user"}},
            }
            with pytest.raises(ActionRejected, match="already has a turn"):
                await lab.adispatch(again)
            assert [t["id"] for t in lab.chat_state["turns"]] == [done.id]
        finally:
            await lab.aclose()

    arun(main())


def test_steer_sends_a_steering_message_to_the_running_turn():
    async def main():
        lab, first = await _busy_lab()
        steered = lab.start("use the force flag", steer=True)
        steering = await lab.wait_for(lab.chat, lambda s: s.get("steeringMessage"))
        assert steering["message"]["text"] == "use the force flag"
        assert steered.turn_id == first.turn_id and "queuedMessages" not in lab.chat_state
        assert ("chat/pendingMessageSet", "steering") in _chat_types(lab)
        lab.approve()
        turn = await steered
        assert turn.id == (await first).id  # steering returns the turn it steered
        assert len(lab.chat_state["turns"]) == 1  # and started no turn of its own
        # the agent took it (an independent client saw it stay in the chat for ever)
        assert "steeringMessage" not in lab.chat_state
        assert ("chat/pendingMessageRemoved", "steering") in _chat_types(lab)
        assert "Steering taken into account: “use the force flag”." in turn.text

    arun(main())


def test_steer_needs_a_running_turn_and_takes_no_script():
    async def main():
        lab = await Lab.open()
        with pytest.raises(LookupError, match="there is no running turn to steer"):
            await lab.send("faster", steer=True)
        lab2, first = await _busy_lab()
        with pytest.raises(TypeError, match="steer=True adds to the running turn"):
            await lab2.send("faster", steer=True, script=[say("x")])
        lab2.approve()
        await first

    arun(main())


def test_run_behind_a_turn_that_waits_for_a_person_refuses_to_block():
    async def main():
        lab, first = await _busy_lab()
        with pytest.raises(
            HumanInputNeeded, match="queued behind turn .* which waits for a person"
        ) as caught:
            lab.run("meanwhile", script=[say("later")])
        pending = caught.value.turn
        assert pending.queued
        lab.approve()
        await first
        assert (await pending).text == "later"  # the queued message still became its turn

    arun(main())


def test_a_queued_message_removed_by_someone_else_ends_the_wait_with_a_reason():
    """Another client may not remove the notebook's queued message (it is the notebook's); where
    one does (the host's own notebook, for a lab attached to that host), the wait ends saying so."""

    async def main():
        lab, first = await _busy_lab()
        waiting = lab.start("maybe later")
        [entry] = await lab.wait_for(lab.chat, lambda s: s.get("queuedMessages"))
        ide = await lab.add_client("ide")
        removal = {"type": "chat/pendingMessageRemoved", "kind": "queued", "id": entry["id"]}
        seq = ide.dispatch(lab.chat, removal)
        await ide.settle()
        assert "set by another client" in next(r["reason"] for r in ide.rejections if r["clientSeq"] == seq)
        remote = await RemoteLab.open(await lab.aserve(), session=lab.session, client_id="visitor")
        try:
            queued = remote.start("and me later")
            [_, theirs] = await lab.wait_for(
                lab.chat,
                lambda s: s.get("queuedMessages") if len(s.get("queuedMessages") or ()) == 2 else None,
            )
            lab.dispatch({**removal, "id": theirs["id"]})
            with pytest.raises(
                LookupError, match=f"queued message {theirs['id']} was removed before its turn"
            ):
                await queued
        finally:
            await remote.aclose()
        lab.approve()
        await first
        assert (await waiting).status == "complete"

    arun(main())


def test_a_verdict_is_found_however_many_transitions_came_after_its_echo():
    """The verdict looked for the echo among the newest 50 transitions: an agent streaming fast
    (an ACP agent's 100,000 chunks) pushed it past them before the check, and adispatch, approve
    and answer waited out 30 s for an action the host had accepted."""

    async def main():
        lab = await Lab.open()
        try:
            seq = lab.client.dispatch(lab.session, {"type": "session/titleChanged", "title": "mine"})
            await lab.client.settle()  # echoed by now
            for n in range(200):  # the agent's stream, logged after the echo
                lab.host.dispatch(lab.session, {"type": "session/activityChanged", "activity": f"step {n}"})
            verdict = await asyncio.wait_for(lab._verdict(lab.session, seq), 5)
            return verdict.accepted, verdict.action["title"]
        finally:
            await lab.aclose()

    assert arun(main()) == (True, "mine")


def test_until_blocked_on_a_queued_message_names_the_turn_ahead_that_waits_for_a_person():
    """A message queued behind a turn that waits for a person needs that person too:
    ``until_blocked`` said nothing for 30 s and then timed out with a generic message."""

    async def main():
        lab, first = await _busy_lab()
        second = lab.start("and then say hi", script=[say("hi!")])
        reason = await asyncio.wait_for(second.until_blocked(), 10)
        assert second.queued
        assert reason == f"queued behind turn {first.turn_id}, which waits for a person: {first.blocked}"
        lab.approve()
        assert (await second).text == "hi!"
        await lab.aclose()

    arun(main())


def test_closing_the_lab_ends_the_wait_of_a_message_still_queued_and_keeps_the_message():
    """Awaiting a message still queued when its lab closed waited forever (its turn never starts:
    closing stops the host's turns and queue); it now fails at once, saying the message is kept."""

    async def main():
        lab, first = await _busy_lab()
        second = lab.start("and then say hi", script=[say("hi!")])
        assert second.queued
        await lab.aclose()
        assert (await asyncio.wait_for(first, 10)).status == "cancelled"
        with pytest.raises(RuntimeError, match="closed before the queued message .* started its turn"):
            await asyncio.wait_for(second, 10)
        return [m["message"]["text"] for m in lab.chat_state["queuedMessages"]]

    assert arun(main()) == ["and then say hi"]
