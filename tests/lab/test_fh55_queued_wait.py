"""A cell that awaits a message queued behind a turn that waits for a person is told so.

Before, ``await lab.send(...)`` (and ``await pending`` of a queued ``lab.start``) behind such a
turn waited with no word: a first-hour user who got ``approve="no"`` wrong, fixed it and ran the cell
again saw ``[*]`` for good (the corrected message queued behind the turn the first try left
waiting), and Kernel → Interrupt does not stop an awaiting cell in ipykernel 7. ``lab.run`` already
raised ``HumanInputNeeded`` saying why; an awaiting cell may wait for a click (that is what it is
for), so it now gets a warning naming the turn ahead, what it waits for and where to answer it.
"""

from __future__ import annotations

import asyncio
import warnings

import pytest

from ahp_lab import Lab
from ahp_lab.agents.scripted import call, say


async def _lab():
    lab = await Lab.open()

    @lab.tool
    def delete_branch(name: str) -> str:
        """Delete a git branch."""
        return f"deleted {name}"

    return lab


def _queued(lab):
    return lab.wait_for(lab.chat, lambda s: s.get("queuedMessages"))


def _told(caught):
    return [str(w.message) for w in caught if "this cell waits" in str(w.message)]


def test_a_corrected_send_behind_the_turn_left_waiting_says_why_it_waits():
    async def main():
        lab = await _lab()
        script = [call("delete_branch", name="keep", confirm=True)]
        with pytest.raises(ValueError, match="has no confirmation option 'no'. It still waits"):
            await lab.send("x", script=script, approve="no")
        first = lab.chat_state["activeTurn"]["id"]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            again = asyncio.ensure_future(lab.send("x again", script=script, approve=False))
            await _queued(lab)
            [told] = _told(caught)
            assert (
                told.startswith("this cell waits: the message 'x again' (msg-")
                and f") is queued behind turn {first}, which waits for a person: Delete Branch is pending-confirmation. "
                in told
            )
            assert "answer or stop that turn in the workbench (lab.show())" in told
            assert "Kernel → Interrupt does not stop a cell that awaits (Kernel → Restart does)" in told
            lab.deny()  # the person answers the turn ahead: the queued message becomes its turn
            turn = await again
        assert turn.tool_calls[0].status == "cancelled"  # its own approve=False denied it
        assert len(_told(caught)) == 1  # said once
        await lab.aclose()

    asyncio.run(main())


def test_awaiting_a_queued_pending_turn_says_why_it_waits():
    async def main():
        lab = await _lab()
        first = lab.start("delete_branch name=old", script=[call("delete_branch", name="old", confirm=True)])
        await first.until_blocked()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            second = lab.start("then hi", script=[say("hi")])  # start returns at once: nothing said
            await _queued(lab)
            assert _told(caught) == []
            awaiting = asyncio.ensure_future(_await(second))  # a cell awaits it
            await lab.client.settle()  # a round trip: the awaiting cell has started to wait
            [told] = _told(caught)
            assert f"is queued behind turn {first.turn_id}, which waits for a person" in told
            lab.approve()
            assert (await awaiting).text == "hi"
        await lab.aclose()

    asyncio.run(main())


async def _await(pending):
    return await pending


def test_nothing_is_said_when_the_turn_ahead_is_answered_by_its_own_approve():
    async def main():
        lab = await _lab()
        hold = [call("delete_branch", name="old", confirm=True)]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first = lab.start("first", script=hold, approve=True)
            second = asyncio.ensure_future(lab.send("second", script=[say("hi")]))
            assert (await first).status == "complete"
            assert (await second).text == "hi"
        assert _told(caught) == []
        await lab.aclose()

    asyncio.run(main())
