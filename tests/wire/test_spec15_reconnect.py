"""Reconnecting clients, as an independent client found them (spec15).

An active client is removed when it "disconnects and does not come back within a host-defined grace
period" (customizations §5.1); a reconnect's replay must bring what the client holds up to date
(overview §7).
"""

from __future__ import annotations

from ahp_lab.host import Host
from ahp_lab.reducers import reduce

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


def _last_seen(peer: RawPeer, snapshot: dict) -> int:
    return max([snapshot["fromSeq"]] + [e["serverSeq"] for e in peer.actions()])


def _caught_up(result: dict, channel: str, held: dict) -> dict:
    """What a client holds of ``channel`` after applying a reconnect's result (overview §7)."""
    if result["type"] == "snapshot":
        return next(s["state"] for s in result["snapshots"] if s["resource"] == channel)
    state = held
    for envelope in result["actions"]:
        if envelope["channel"] == channel:
            state = reduce(
                envelope["channel"].split(":")[0].removeprefix("ahp-"), state, envelope["action"], 0
            )
    return state


async def _session_with_chat(host: Host, owner: RawPeer) -> str:
    """A session of the scripted agent, ready; its default chat."""
    assert "result" in await owner.call("createSession", {"channel": SESSION})
    await owner.call("subscribe", {"channel": SESSION})
    await owner.wait(lambda: host.store.state(SESSION)["lifecycle"] == "ready")
    return host.store.state(SESSION)["defaultChat"]


async def _turn(owner: RawPeer, chat: str, turn_id: str, seq: int) -> None:
    """A turn of the scripted agent, to its end."""
    message = {"text": "hello", "origin": {"kind": "user"}}
    action = {"type": "chat/turnStarted", "turnId": turn_id, "startedAt": "x", "message": message}
    owner.notify("dispatchAction", {"channel": chat, "clientSeq": seq, "action": action})
    await owner.wait(
        lambda: any(
            e["action"]["type"] == "chat/turnComplete" and e["action"]["turnId"] == turn_id
            for e in owner.actions(chat)
        )
    )


def _turn_ids(state: dict) -> list:
    return [t["id"] for t in state.get("turns") or ()]


def test_a_windowed_client_that_missed_a_truncation_holds_what_the_host_holds_after_a_reconnect():
    """Chat-channel §9: history is paged in before a truncation into a client's window. A client
    away at the time was replayed the truncation alone, a no-op in its window: it kept ['t3'] while
    the host held ['t0', 't1']."""

    async def main():
        async with served() as (host, server):
            owner = await RawPeer.open(server.url_with_token)
            await owner.initialize("owner")
            chat = await _session_with_chat(host, owner)
            await owner.call("subscribe", {"channel": chat})
            for i in range(4):
                await _turn(owner, chat, f"t{i}", i + 1)

            viewer = await RawPeer.open(server.url_with_token)
            await viewer.initialize("viewer")
            window = (await viewer.call("subscribe", {"channel": chat, "view": {"turns": 1}}))["result"][
                "snapshot"
            ]
            assert _turn_ids(window["state"]) == ["t3"]
            last = _last_seen(viewer, window)
            await viewer.close()

            truncate = {"type": "chat/truncated", "turnId": "t1"}
            owner.notify("dispatchAction", {"channel": chat, "clientSeq": 9, "action": truncate})
            await owner.wait(lambda: any(e["action"] == truncate for e in owner.actions(chat)))

            back = await RawPeer.open(server.url_with_token)
            answer = await back.call(
                "reconnect",
                {"channel": ROOT, "clientId": "viewer", "lastSeenServerSeq": last, "subscriptions": [chat]},
            )
            held = _caught_up(answer["result"], chat, window["state"])
            assert _turn_ids(held) == _turn_ids(host.store.state(chat)) == ["t0", "t1"]
            await back.close()
            await owner.close()

    run(main(), timeout=60)


def test_a_chat_disposed_and_created_again_under_its_uri_is_sent_as_it_is_now():
    """Overview §7: the replay brings what the client holds up to date. A chat disposed and
    created again while the client was away was replayed nothing, and the client kept the old
    chat's turn for a chat the host held empty."""

    async def main():
        async with served() as (host, server):
            owner = await RawPeer.open(server.url_with_token)
            await owner.initialize("owner")
            await _session_with_chat(host, owner)
            second = "ahp-chat:/0b3d7c1e-0000-4000-8000-0000000000c2"
            assert "result" in await owner.call("createChat", {"channel": SESSION, "chat": second})
            await owner.call("subscribe", {"channel": second})
            await _turn(owner, second, "old", 1)

            viewer = await RawPeer.open(server.url_with_token)
            await viewer.initialize("viewer")
            snapshot = (await viewer.call("subscribe", {"channel": second}))["result"]["snapshot"]
            assert _turn_ids(snapshot["state"]) == ["old"]
            last = _last_seen(viewer, snapshot)
            await viewer.close()

            assert "result" in await owner.call("disposeChat", {"channel": second})
            assert "result" in await owner.call("createChat", {"channel": SESSION, "chat": second})

            back = await RawPeer.open(server.url_with_token)
            answer = await back.call(
                "reconnect",
                {"channel": ROOT, "clientId": "viewer", "lastSeenServerSeq": last, "subscriptions": [second]},
            )
            assert answer["result"]["missing"] == []
            held = _caught_up(answer["result"], second, snapshot["state"])
            assert _turn_ids(held) == _turn_ids(host.store.state(second)) == []
            await back.close()
            await owner.close()

    run(main(), timeout=60)


def test_a_session_disposed_and_created_again_under_its_uri_is_sent_as_it_is_now():
    async def main():
        async with served() as (host, server):
            owner = await RawPeer.open(server.url_with_token)
            await owner.initialize("owner")
            await _session_with_chat(host, owner)
            title = {"type": "session/titleChanged", "title": "the old one"}
            owner.notify("dispatchAction", {"channel": SESSION, "clientSeq": 1, "action": title})
            await owner.wait(lambda: any(e["action"] == title for e in owner.actions(SESSION)))

            viewer = await RawPeer.open(server.url_with_token)
            await viewer.initialize("viewer")
            snapshot = (await viewer.call("subscribe", {"channel": SESSION}))["result"]["snapshot"]
            assert snapshot["state"]["title"] == "the old one"
            last = _last_seen(viewer, snapshot)
            await viewer.close()

            assert "result" in await owner.call("disposeSession", {"channel": SESSION})
            await _session_with_chat(host, owner)

            back = await RawPeer.open(server.url_with_token)
            answer = await back.call(
                "reconnect",
                {
                    "channel": ROOT,
                    "clientId": "viewer",
                    "lastSeenServerSeq": last,
                    "subscriptions": [SESSION],
                },
            )
            held = _caught_up(answer["result"], SESSION, snapshot["state"])
            assert held["title"] == host.store.state(SESSION)["title"] != "the old one"
            assert held["chats"] == host.store.state(SESSION)["chats"]
            await back.close()
            await owner.close()

    run(main(), timeout=60)
