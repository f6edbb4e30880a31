"""A client that stops reading does not slow the others and is disconnected with a reason.

The stalled peer is a real WebSocket client that subscribes and then never reads: the kernel's
socket buffers fill, the ``websockets`` write buffer fills, and the host-side send buffer grows
until it passes its bound. Measured, not timed: while the stalled connection holds a growing
backlog, the healthy clients have every envelope (a round trip each proves it); then the stalled
one is cut off with a reason and the host no longer sends to it, while the others carry on.
"""

from __future__ import annotations

import asyncio
import json
import socket

import pytest
from websockets.asyncio.client import connect as ws_connect

import ahp_lab
from ahp_lab.protocol.jsonvalue import to_json

from .conftest import ROOT, run, served, without_modified_at

BUFFER = 512 * 1024


def _long_chat(host, session: str) -> str:
    """The session's default chat, made 8 MB long: more than loopback's socket buffers hold."""
    chat = host.store.state(session)["defaultChat"]
    user = {"text": "x" * 500_000, "origin": {"kind": "user"}}
    for i in range(16):
        host.dispatch(
            chat, {"type": "chat/turnStarted", "turnId": f"t{i}", "startedAt": "x", "message": user}
        )
        host.dispatch(chat, {"type": "chat/turnComplete", "turnId": f"t{i}"})
    return chat


async def _never_reading(server, client_id: str, chat: str):
    """A raw socket that initializes subscribed to ``chat`` and then reads nothing at all (a small
    receive buffer: the kernel holds little of what it is sent)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", server.port))
    ws = await ws_connect(server.url_with_token, sock=sock, max_size=None, ping_interval=None)
    ws.transport.pause_reading()
    hello = {"protocolVersions": ["0.8.0"], "clientId": client_id, "initialSubscriptions": [chat]}
    await ws.send(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"channel": ROOT, **hello}})
    )
    return ws


def test_a_stalled_reader_is_cut_off_and_the_others_do_not_wait():
    async def main():
        async with served(max_send_buffer_bytes=BUFFER) as (host, server):
            healthy = [await ahp_lab.connect(server.url_with_token, client_id=f"ok{i}") for i in range(2)]
            session = await healthy[0].create_session(title="busy")
            await healthy[1].subscribe(session)

            # the stranger subscribes, then never reads again (max_queue=1: the library stops
            # reading from the socket as soon as one message waits unread)
            stalled = await ws_connect(server.url_with_token, max_queue=1)
            for rid, (method, params) in enumerate(
                [
                    ("initialize", {"protocolVersions": ["0.8.0"], "clientId": "stalled"}),
                    ("subscribe", {"channel": session}),
                ],
                1,
            ):
                await stalled.send(
                    json.dumps(
                        {"jsonrpc": "2.0", "id": rid, "method": method, "params": {"channel": ROOT, **params}}
                    )
                )
            for _ in range(1000):  # round trips until the host has handled the stranger's subscribe
                if any(c.client_id == "stalled" and session in c.subscriptions for c in host.connections):
                    break
                await healthy[0].settle()
            victim = next(t for t in server.transports if t.remote.endswith(str(stalled.local_address[1])))

            backlog_seen = []
            batches = 0
            while not victim.closed and batches < 400:
                for i in range(20):
                    healthy[batches % 2].dispatch(
                        session, {"type": "session/titleChanged", "title": f"{batches}-{i} " + "x" * 4000}
                    )
                for client in healthy:  # both have every envelope sent so far
                    await client.settle()
                    assert client.channels[session].pending == []
                if not victim.closed:
                    backlog_seen.append(victim.buffered)
                batches += 1

            assert victim.closed, "the stalled client was never disconnected"
            assert "send buffer" in victim.close_reason and "reconnect" in victim.close_reason
            # it had been holding a growing backlog the whole time the others were served
            assert max(backlog_seen) > BUFFER // 2
            assert all(c.client_id != "stalled" for c in host.connections)
            # the others carry on, identical to the host
            healthy[0].dispatch(session, {"type": "session/titleChanged", "title": "after"})
            for client in healthy:
                await client.settle()
                assert without_modified_at(to_json(client.confirmed(session))) == without_modified_at(
                    to_json(host.store.state(session))
                )
            assert host.store.state(session)["title"] == "after"
            stalled.transport.abort()
            for client in healthy:
                await client.aclose()

    run(main(), timeout=300)


@pytest.mark.parametrize(("interval", "timeout"), [(0.5, 2.0), (5.0, 1.0)])
def test_a_reader_that_never_takes_one_large_snapshot_is_let_go(interval, timeout):
    """One snapshot larger than the socket's buffers, never read, is a single message: the send
    buffer's bound (a backlog of several) never trips, and the host held it for as long as the
    client stayed. A ping sent before the client stopped reading goes unanswered (the keepalive);
    one the host would send after it waits behind the snapshot, never sent, so the write itself
    is watched: a client that takes nothing of it for a while is let go, and the snapshot with it."""

    async def main():
        async with served(ping_interval=interval, ping_timeout=timeout) as (host, server):
            owner = await ahp_lab.connect(server.url_with_token, client_id="owner")
            session = await owner.create_session(title="long")
            chat = _long_chat(host, session)
            stalled = await _never_reading(server, "stalled", chat)
            port = str(stalled.local_address[1])
            victim = next(t for t in server.transports if t.remote.endswith(port))
            await victim.ws.wait_closed()  # the host's end of the socket
            for _ in range(100):  # its reader task notices on its next turn of the loop
                if victim.closed:
                    break
                await asyncio.sleep(0)
            assert victim.peak_buffered < server.max_send_buffer_bytes  # never a backlog
            assert "stopped reading" in victim.close_reason and "reconnect" in victim.close_reason
            assert all(c.client_id != "stalled" for c in host.connections)
            # the owner, who reads (and so answers every ping), is still served
            await owner.settle()
            assert any(c.client_id == "owner" for c in host.connections)
            stalled.transport.abort()
            await owner.aclose()

    run(main(), timeout=120)


def test_a_reading_client_is_sent_a_history_larger_than_its_send_buffer():
    """``fetchTurns`` pages in every older turn at once, in pages within max_message_bytes. Those
    pages queued together used to count as a backlog: a windowed client that fetched a history
    larger than its send buffer was cut off as 'not reading' while it was reading. History pages
    are not a backlog (up to three send buffers of them); the client receives them all, in order,
    and stays. Asking again sends nothing more: its window is complete."""
    from ahp_lab.host import Host
    from ahp_lab.reducers import reduce

    from .conftest import RawPeer

    async def main():
        host = Host(limits={"max_message_bytes": 200_000})
        async with served(host, max_send_buffer_bytes=BUFFER) as (host, server):
            owner = await ahp_lab.connect(server.url_with_token, client_id="owner")
            session = await owner.create_session(title="long")
            chat = host.store.state(session)["defaultChat"]
            user = {"text": "h" * 28_000, "origin": {"kind": "user"}}
            for i in range(60):  # 1.7 MB of history: more than three send buffers
                host.dispatch(
                    chat, {"type": "chat/turnStarted", "turnId": f"t{i}", "startedAt": "x", "message": user}
                )
                host.dispatch(chat, {"type": "chat/turnComplete", "turnId": f"t{i}"})
            reader = await RawPeer.open(server.url_with_token, max_size=None)
            await reader.initialize("reader")
            answer = await reader.call("subscribe", {"channel": chat, "view": {"turns": 1}})
            state = answer["result"]["snapshot"]["state"]
            assert [t["id"] for t in state["turns"]] == ["t59"]
            answer = await reader.call("fetchTurns", {"channel": chat, "cursor": state["turnsNextCursor"]})
            assert answer.get("result") == {}, answer
            pages = [e for e in reader.actions(chat) if e["action"]["type"] == "chat/turnsLoaded"]
            assert len(pages) > 10  # many pages, each within the message limit
            for envelope in reader.actions(chat):
                state = reduce("chat", state, envelope["action"], 0)
            assert [t["id"] for t in state["turns"]] == [f"t{i}" for i in range(60)]
            assert not reader.closed and any(c.client_id == "reader" for c in host.connections)
            # asking again and again sends nothing more: the window is complete (a hoarder that
            # asked six times and never read was sent 10 MB, past its send buffer)
            for _ in range(6):
                answer = await reader.call("fetchTurns", {"channel": chat, "cursor": "before:t59"})
                assert answer.get("result") == {}, answer
            again = [e for e in reader.actions(chat) if e["action"]["type"] == "chat/turnsLoaded"][
                len(pages) :
            ]
            assert [e["action"]["turns"] for e in again] == [[]] * 6
            await reader.close()
            await owner.aclose()

    run(main(), timeout=120)


def test_strangers_that_never_read_large_snapshots_cannot_make_the_host_hold_more_than_its_bound():
    """Each peer is bounded on its own, and one snapshot it never reads is no backlog: 40 strangers
    subscribing to a 140 MB chat and reading nothing held the host at 15 GB (an attacker). What the
    server holds for all its peers together is bounded: a large message past it is not queued, and
    that peer is closed with 1013 (try again later) and the reason; small messages still go to
    everyone, and a reader that comes once the stalled peers are gone gets its snapshot."""

    async def main():
        async with served(max_unsent_bytes_total=24 * 2**20) as (host, server):
            seen = []  # every transport the server made (a closed one leaves server.transports)
            attach = server.on_connection
            server.on_connection = lambda transport: (seen.append(transport), attach(transport))[1]
            owner = await ahp_lab.connect(server.url_with_token, client_id="owner")
            session = await owner.create_session(title="long")
            chat = _long_chat(host, session)
            stalled = []
            for n in range(4):
                stalled.append(await _never_reading(server, f"stalled{n}", chat))
                await owner.settle()  # the host has answered (or refused) it
            refused = [t for t in seen if t.closed and "try again later" in (t.close_reason or "")]
            assert refused, "every stalled peer was queued its snapshot"
            assert "that its peers have not taken yet" in refused[0].close_reason
            assert server.unsent.held() <= 24 * 2**20  # the bound
            # small messages still reach every live peer, the owner among them
            owner.dispatch(session, {"type": "session/titleChanged", "title": "still served"})
            await owner.settle()
            assert host.store.state(session)["title"] == "still served"
            # a reader that comes while the stalled peers are still connected: those that took
            # nothing since they were last looked at are let go to make room (one such socket kept
            # every later reader out until the keepalive let it go, 20 to 40 s: a verifier)
            server.unsent.stalled_s = 0.0  # (5 s by default)
            early = await ahp_lab.connect(server.url_with_token, client_id="early", max_frame_bytes=None)
            assert len((await early.subscribe(chat))["turns"]) == 16
            let_go = [t for t in seen if "while others needed room" in (t.close_reason or "")]
            assert let_go
            await early.aclose()
            for ws in stalled:
                ws.transport.abort()
            for _ in range(200):  # the host notices the dropped sockets
                if server.unsent.held() < 2**20:
                    break
                await asyncio.sleep(0.01)
            reader = await ahp_lab.connect(server.url_with_token, client_id="reader", max_frame_bytes=None)
            state = await reader.subscribe(chat)
            assert len(state["turns"]) == 16
            await reader.aclose()
            await owner.aclose()

    run(main(), timeout=120)
