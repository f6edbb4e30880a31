"""Every ``wait_for`` (the lab's, its client's, its host's) takes the channel first, then the
check; the other order, or a wrong type, is refused with a message that shows the right call."""

from __future__ import annotations

import asyncio

import pytest

from ahp_lab import Lab


def arun(coro):
    return asyncio.run(coro)


@pytest.mark.parametrize("who", ["lab", "client", "host"])
def test_every_wait_for_takes_the_channel_first_and_says_so(who):
    async def main():
        lab = await Lab.open()
        target = {"lab": lab, "client": lab.client, "host": lab.host}[who]
        with pytest.raises(TypeError, match=r"channel first, then the check: wait_for\(lab.chat, lambda"):
            await target.wait_for(lambda s: True, lab.chat)  # the order the lab used to take
        with pytest.raises(TypeError, match="channel must be a channel URI such as lab.chat, not 42"):
            await target.wait_for(42, lambda s: True)
        with pytest.raises(TypeError, match="check must be a function of the channel's state, not 'ready'"):
            await target.wait_for(lab.session, "ready")
        state = await target.wait_for(lab.session, lambda s: s if s.get("lifecycle") == "ready" else None)
        assert state["lifecycle"] == "ready"

    arun(main())


def test_the_old_one_argument_call_is_explained():
    async def main():
        lab = await Lab.open()
        with pytest.raises(TypeError, match="channel first, then the check.*got a function, then None"):
            await lab.wait_for(lambda s: True)

    arun(main())
