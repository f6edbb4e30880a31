"""What a turn's end, however it comes, does to the agent's open work: the calls that wrote files,
the terminals a cancelled call ran, a call the agent reports on after it ended (real subprocesses)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from ahp_lab.lab.turns import ActionRejected
from ahp_lab.protocol.jsonvalue import to_json

from .conftest import acp_lab, arun, bad_agent, pending_call


def _wrote(chat: dict) -> bool:
    parts = (chat.get("activeTurn") or {}).get("responseParts") or []
    return "important.py: wrote" in json.dumps(to_json(parts))


@pytest.mark.parametrize("how", ["exit", "violation", "end_turn", "max_tokens", "idle", "restart"])
def test_a_call_that_wrote_a_file_keeps_saying_so_however_its_turn_ends(tmp_path: Path, how: str) -> None:
    """An agent rewrote a file inside a running call, then its turn ended another way than a cancel
    (it exited, broke ACP, ended its turn with the call running, went silent, was restarted): the
    turn's end dropped the open call's content (chat-channel T13) and the chat no longer said the
    file had changed (ACP agent round 11). Such a call now ends first, as on a cancel, its note
    kept, saying the turn ended while it ran and the file stays written."""
    (tmp_path / "important.py").write_text("old\n")
    extra = () if how in ("idle", "restart") else (how,)

    async def go() -> None:
        idle = 1.0 if how == "idle" else 20.0
        async with acp_lab(
            tmp_path, bad_agent("write_then_wait", str(tmp_path), *extra), idle_timeout=idle
        ) as lab:
            pending = lab.start("go")
            if how == "restart":
                await lab.wait_for(lab.chat, _wrote, timeout=30)
                await lab.restart_agent()
            turn = await asyncio.wait_for(pending, 30)
            assert turn.status != "cancelled" and (tmp_path / "important.py").read_text() == "new\n"
            [call] = [c for c in turn.tool_calls if c.state.get("toolCallId") == "e1"]
            assert call.state["status"] == "completed" and call.state["success"] is False
            assert "important.py: wrote 4 bytes" in json.dumps(call.state["content"])
            assert call.state["error"]["message"] == (
                "the turn ended while it ran; the files it wrote stay written"
            )

    arun(go())


def test_a_denied_call_the_agent_reports_as_run_is_said_beside_it(tmp_path: Path) -> None:
    """The person denied a call, and the agent then reported it running, then completed ("forced
    push done"): the chat showed only the denial, the report was in the frame log only (ACP agent
    round 11). The call stays denied, and a notification beside it says each report."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("denied_ran")) as lab:
            pending = lab.start("go")
            await pending_call(lab)
            lab.deny()
            turn = await asyncio.wait_for(pending, 30)
            [call] = turn.tool_calls
            assert call.state["status"] == "cancelled" and call.state["reason"] == "denied"
            notes = [
                p["content"] for p in turn.state["responseParts"] if p.get("kind") == "systemNotification"
            ]
            assert notes == [
                "The agent reported on tool call 'Force push' (d1) after the person denied it: it is "
                "running. The call stays as it ended.",
                "The agent reported on tool call 'Force push' (d1) after the person denied it: it "
                "completed, forced push done. The call stays as it ended.",
            ]

    arun(go())


def test_a_denial_the_agent_offers_no_way_to_take_is_refused(tmp_path: Path) -> None:
    """The person denied a call whose permission request offered only ways to allow it: the agent
    was told ``cancelled``, which in ACP cancels the whole turn, and the turn ended as "The agent
    cancelled the turn on its own" (ACP agent round 11). The denial is refused with the reason, as
    an approval is when the agent offers no way to allow; the call keeps waiting."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("ask", "allow_only")) as lab:
            pending = lab.start("go")
            call = await pending_call(lab)
            with pytest.raises(ActionRejected) as refused:
                lab.deny()
            assert str(refused.value) == (
                f"the agent offers no option that refuses tool call {call['toolCallId']!r}: approve it, "
                "or cancel the turn"
            )
            assert (await pending_call(lab))["status"] == "pending-confirmation"
            lab.approve()
            turn = await asyncio.wait_for(pending, 20)
            assert turn.status == "complete" and 'outcome={"optionId": "ao"' in turn.text

    arun(go())


def test_a_remembered_always_reject_asks_when_the_agent_offers_no_way_to_reject(tmp_path: Path) -> None:
    """An "always reject" answered the next request of its kind and title by itself, as
    ``cancelled`` when that request offered only ways to allow: in ACP that cancels the whole
    turn, which ended as "The agent cancelled the turn on its own". That request is put to the
    person instead (the fix helper's note, ACP agent round 11)."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("ask", "reject_always_then_allow_only")) as lab:
            pending = lab.start("go")
            call = await pending_call(lab)
            turn_id = lab.state(lab.chat)["activeTurn"]["id"]
            denial = {
                "turnId": turn_id,
                "toolCallId": call["toolCallId"],
                "approved": False,
                "reason": "denied",
            }
            lab.client.dispatch(
                lab.chat, {"type": "chat/toolCallConfirmed", **denial, "selectedOptionId": "ra"}
            )
            turn = await asyncio.wait_for(pending, 20)
            assert 'outcome={"optionId": "ra"' in turn.text  # remembered: always reject
            pending = lab.start("again")
            call = await asyncio.wait_for(pending_call(lab), 20)  # asked, not cancelled
            assert call["status"] == "pending-confirmation"
            lab.approve()
            turn = await asyncio.wait_for(pending, 20)
            assert turn.status == "complete" and 'outcome={"optionId": "ao"' in turn.text

    arun(go())


def test_a_policy_whose_denial_is_refused_says_so_and_the_call_waits(tmp_path: Path) -> None:
    """``approve=False`` against an agent offering only ways to allow: the host refuses the denial,
    and the turn waited for ever, no error, the policy never hearing of it (review of this stop)."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("ask", "allow_only")) as lab:
            pending = lab.start("go", approve=False)
            with pytest.raises(Exception, match="approve= cannot answer .*offers no option that refuses"):
                await asyncio.wait_for(pending, 20)
            assert (await pending_call(lab))["status"] == "pending-confirmation"  # still the person's
            lab.approve()

    arun(go())
