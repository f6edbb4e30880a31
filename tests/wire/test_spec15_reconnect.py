"""Reconnecting clients, as an independent client found them (spec15).

An active client is removed when it "disconnects and does not come back within a host-defined grace
period" (customizations §5.1); a reconnect's replay must bring what the client holds up to date
(overview §7).
"""

from __future__ import annotations

from ahp_lab.host import Host

from .conftest import ROOT, RawPeer, run, served

SESSION = "ahp-session:/0b3d7c1e-0000-4000-8000-0000000000f2"


async def _active(server, client_id: str) -> RawPeer:
    """A client that joins the session as an active client (subscribed to it)."""
    peer = await RawPeer.open(server.url_with_token)
    await peer.initialize(client_id, [ROOT, SESSION])
    entry = {"clientId": client_id, "tools": []}
    action = {"type": "session/activeClientSet", "activeClient": entry}
    peer.notify("dispatchAction", {"channel": SESSION, "clientSeq": 1, "action": action})
    await peer.wait(
        lambda: any(e.get("origin", {}).get("clientId") == client_id for e in peer.actions(SESSION))
    )
    return peer


async def _reconnect(server, client_id: str, last: int) -> RawPeer:
    peer = await RawPeer.open(server.url_with_token)
    answer = await peer.call(
        "reconnect",
        {"channel": ROOT, "clientId": client_id, "lastSeenServerSeq": last, "subscriptions": [ROOT, SESSION]},
    )
    assert answer["result"]["type"] == "replay", answer
    return peer


def test_a_client_that_dropped_twice_is_judged_by_its_last_drop():
    """Each drop's timer asked only whether the client was connected when it fired: the first
    drop's timer removed a client that had come back and dropped again just now (129 drops and
    returns in 2.1 s, none away longer than 38 ms, and it was removed)."""

    async def main():
        async with served(Host(client_grace_s=1.0)) as (host, server):
            observer = await RawPeer.open(server.url_with_token)
            await observer.initialize("observer")
            assert "result" in await observer.call("createSession", {"channel": SESSION})
            await observer.call("subscribe", {"channel": SESSION})
            flapper = await _active(server, "flapper")
            canary = await _active(server, "canary")

            await flapper.close()  # the first drop: its grace period starts
            flapper = await _reconnect(server, "flapper", host.store.last_seq)  # back at once
            # the canary drops after the flapper's first drop and before its second: its grace
            # period ends after the first drop's and before the second drop's
            await canary.close()
            await flapper.call("ping", {"channel": ROOT})
            await flapper.close()

            def removed() -> list:
                kinds = [e["action"] for e in observer.actions(SESSION)]
                return [a["clientId"] for a in kinds if a["type"] == "session/activeClientRemoved"]

            # the flapper was away 1 s only after its second drop: it leaves after the canary
            assert await observer.wait(lambda: removed() if len(removed()) == 2 else None) == [
                "canary",
                "flapper",
            ]
            assert host.departures == {}
            await observer.close()

    run(main(), timeout=60)
