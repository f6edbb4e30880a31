"""``lab.add_client(id)`` run again (a re-run cell), with or without ``lab.remove_client(id)``
between: the id is the lab's to use again.

Before, ``remove_client`` only took the client out of the session's list; its in-process
connection kept the id, and the second ``add_client("ide")`` of the guide's "More clients" snippet
was refused with a 57-line traceback ("client id 'ide' belongs to another live connection; ...
reconnect after that connection has closed"), which a notebook user had no way to do.
"""

from __future__ import annotations

import asyncio

import pytest

from ahp_lab import Lab
from ahp_lab.lab.remote import RemoteLab


def _active(lab):
    return [c["clientId"] for c in lab.session_state["activeClients"]]


def test_remove_client_frees_the_id_for_add_client():
    async def main():
        lab = await Lab.open()
        for _ in range(3):
            ide = await lab.add_client("ide", "An IDE")
            assert _active(lab) == ["notebook", "ide"]
            lab.remove_client("ide")
            assert _active(lab) == ["notebook"]
            assert ide.closed  # its connection closed with it: nothing holds the id
        await lab.aclose()

    asyncio.run(main())


def test_add_client_run_again_replaces_the_client_it_added():
    async def main():
        lab = await Lab.open()
        first = await lab.add_client("ide", "An IDE")
        second = await lab.add_client("ide", "An IDE")  # the cell ran again, no remove_client
        assert first.closed and not second.closed
        assert _active(lab) == ["notebook", "ide"]  # listed once: the new one
        assert lab.host.connection_of("ide") is not None
        lab.remove_client("ide")
        assert second.closed and _active(lab) == ["notebook"]
        await lab.aclose()

    asyncio.run(main())


def test_add_client_with_the_notebooks_own_id_says_so():
    async def main():
        lab = await Lab.open()
        with pytest.raises(ValueError, match="this notebook's own client id"):
            await lab.add_client("notebook")
        assert _active(lab) == ["notebook"]
        await lab.aclose()

    asyncio.run(main())


def test_a_remote_lab_adds_a_removed_client_again():
    """The same over WebSocket: the removed client's socket is closed, so the host frees its id."""

    async def main():
        lab = await Lab.open()
        remote = await RemoteLab.open(await lab.aserve(), session=lab.session, client_id="visitor")
        for _ in range(2):
            ide = await remote.add_client("ide", "An IDE")
            await lab.wait_for(lab.session, lambda s: "ide" in [c["clientId"] for c in s["activeClients"]])
            remote.remove_client("ide")
            await lab.wait_for(
                lab.session, lambda s: "ide" not in [c["clientId"] for c in s["activeClients"]]
            )
        again = await remote.add_client("ide", "An IDE")  # run again without remove_client
        assert ide.closed and not again.closed
        await remote.aclose()
        await again.aclose()
        await lab.aclose()

    asyncio.run(main())
