"""Killing the socket mid-stream: the client resumes and catches up with no gaps and no duplicates.

Replay from the last seen server seq; snapshots when the host cannot replay that far; a fresh
``initialize`` with the same client id when the host does not resume at all; giving up when the
host refuses the token. The client id survives a restart of the client.
"""

from __future__ import annotations

import asyncio
import json

from websockets.asyncio.server import serve as ws_serve

import ahp_lab
from ahp_lab import Lab
from ahp_lab.agents.scripted import say
from ahp_lab.client.connect import persisted_client_id
from ahp_lab.host import connection as host_connection
from ahp_lab.lab.remote import RemoteLab
from ahp_lab.transport import WebSocketServer

from .conftest import ROOT, run, session_without_activity, without_modified_at

LONG_TEXT = " ".join(f"word{i}" for i in range(600))


def _kill_served(lab: Lab, client_id: str) -> None:
    """Abort, from the host's side, the socket of one client (no closing handshake)."""
    conn = next(c for c in lab.host.connections if c.client_id == client_id)
    conn.peer.transport.ws.transport.abort()


async def _stream_and_kill(lab: Lab, remote: RemoteLab, missed: int = 0) -> tuple[str, int]:
    """Start a long streamed answer; kill the remote's socket once some of it has arrived.

    With ``missed``, the client reconnects only once the host has sequenced that many more
    actions (the gap the replay must cover).
    """
    if missed:
        factory = remote.client.reconnector.factory

        async def late_factory():
            target = remote.client.last_seen_seq + missed
            await lab.wait_for(lab.chat, lambda _s: True if lab.store.last_seq >= target else None)
            return await factory()

        remote.client.reconnector.factory = late_factory
    pending = lab.start("tell me a story", script=[say(LONG_TEXT, chunk_size=6)])

    def some_text(state):
        active = state.get("activeTurn") or {}
        parts = [p for p in active.get("responseParts") or () if p.get("kind") == "markdown"]
        return True if parts and len(str(parts[0].get("content", ""))) > 200 else None

    await remote.wait_for(remote.chat, some_text)
    seen_before = remote.client.last_seen_seq
    _kill_served(lab, remote.client.client_id)
    turn = await pending
    return turn.id, seen_before


async def _caught_up(lab: Lab, remote: RemoteLab, turn_id: str) -> None:
    await remote.wait_for(
        remote.chat, lambda s: any(t.get("id") == turn_id for t in s.get("turns") or ()), timeout=60
    )
    await remote.client.settle()
    assert without_modified_at(remote.state(lab.chat)) == without_modified_at(lab.state(lab.chat))
    remote_session, host_session = (session_without_activity(s.state(lab.session)) for s in (remote, lab))
    assert without_modified_at(remote_session) == without_modified_at(host_session)


def test_kill_mid_stream_replays_with_no_gap_and_no_duplicate():
    async def main():
        lab = await Lab.open(pace_s=0.002)
        url = await lab.aserve()
        remote = await RemoteLab.open(url, session=lab.session, client_id="viewer")
        first = remote.client.last_seen_seq  # the snapshots it joined with
        turn_id, seen_before = await _stream_and_kill(lab, remote)
        await _caught_up(lab, remote, turn_id)
        history = remote.client.reconnector.history
        assert [h["mode"] for h in history] == ["replay"]
        # it resumes from what it had seen: the seq read before the kill, or a later one when an
        # envelope the host wrote before the abort was still in flight and arrived after it
        assert seen_before <= history[0]["lastSeenServerSeq"] < lab.store.last_seq
        host_seqs = [t.seq for t in lab.transitions if t.channel in (lab.session, lab.chat) and t.seq > first]
        client_seqs = [t.seq for t in remote.transitions if t.seq > first]
        assert client_seqs == host_seqs  # every envelope once, in order
        await remote.aclose()
        await lab.aclose()

    run(main())


def test_a_host_that_cannot_replay_that_far_sends_snapshots(monkeypatch):
    monkeypatch.setattr(host_connection, "REPLAY_LIMIT", 3)

    async def main():
        lab = await Lab.open(pace_s=0.002)
        url = await lab.aserve()
        remote = await RemoteLab.open(url, session=lab.session, client_id="viewer")
        turn_id, _ = await _stream_and_kill(lab, remote, missed=20)
        await _caught_up(lab, remote, turn_id)
        assert [h["mode"] for h in remote.client.reconnector.history] == ["snapshot"]
        await remote.aclose()
        await lab.aclose()

    run(main())


async def _foreign_host(received: list[dict], sockets: list, *, initialize_once: bool = False):
    """A minimal AHP host of another make that does not implement ``reconnect`` (and, with
    ``initialize_once``, refuses every ``initialize`` after the first)."""

    async def handler(ws):
        sockets.append(ws)
        async for text in ws:
            message = json.loads(text)
            received.append(message)
            method, rid = message.get("method"), message.get("id")
            params = message.get("params") or {}
            if rid is None:
                continue
            if method == "initialize" and initialize_once and len(sockets) > 1:
                error = {"code": -32005, "message": "no", "data": {"supportedVersions": ["9.0.0"]}}
                answer = {"jsonrpc": "2.0", "id": rid, "error": error}
            elif method == "initialize":
                snaps = [
                    {"resource": ROOT, "state": {"agents": [], "activeSessions": len(received)}, "fromSeq": 7}
                ]
                result = {"protocolVersion": "0.8.0", "serverSeq": 7, "snapshots": snaps}
                answer = {"jsonrpc": "2.0", "id": rid, "result": result}
                if ROOT not in (params.get("initialSubscriptions") or ()):
                    result["snapshots"] = []
            elif method == "ping":
                answer = {"jsonrpc": "2.0", "id": rid, "result": None}
            else:
                answer = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method}"}}
            await ws.send(json.dumps(answer))

    return await ws_serve(handler, "127.0.0.1", 0)


def test_a_host_without_reconnect_gets_initialize_again_with_the_same_id():
    async def main():
        received: list[dict] = []
        sockets: list = []
        server = await _foreign_host(received, sockets)
        port = next(iter(server.sockets)).getsockname()[1]
        client = await ahp_lab.connect(f"ws://127.0.0.1:{port}/", client_id="traveller")
        assert client.state(ROOT)["activeSessions"] == 1
        sockets[0].transport.abort()
        await client.wait_for(ROOT, lambda _s: True if client.reconnector.history else None, timeout=30)
        assert [h["mode"] for h in client.reconnector.history] == ["initialize"]
        methods = [(m.get("method"), (m.get("params") or {}).get("clientId")) for m in received]
        assert methods == [
            ("initialize", "traveller"),
            ("reconnect", "traveller"),
            ("initialize", "traveller"),
        ]
        assert client.state(ROOT)["activeSessions"] == 3  # the new snapshot replaced the old state
        await client.aclose()
        server.close()
        await server.wait_closed()

    run(main())


def test_a_host_that_will_not_take_the_client_back_stops_the_reconnecting():
    async def main():
        server = await _foreign_host([], sockets := [], initialize_once=True)
        port = next(iter(server.sockets)).getsockname()[1]
        client = await ahp_lab.connect(f"ws://127.0.0.1:{port}/", client_id="unwanted")
        sockets[0].transport.abort()
        await client.wait_for(ROOT, lambda _s: True if client.closed else None, timeout=30)
        assert client.reconnector.error.code == -32005 and client.reconnector.history == []
        await client.aclose()
        server.close()
        await server.wait_closed()

    run(main())


def test_a_refused_token_stops_the_reconnecting():
    async def main():
        lab = await Lab.open()
        url = await lab.aserve()
        client = await ahp_lab.connect(url, client_id="locked-out")
        port = lab.server.port
        await lab.astop_serving()
        # the host comes back on the same port with a new token: the old one is refused (403)
        again = WebSocketServer(lab.host.attach, port=port)
        await again.start()
        await client.wait_for(ROOT, lambda _s: True if client.closed else None, timeout=30)
        assert client.reconnector.error.status == 403
        assert again.refused.get(403, 0) >= 1 and again.accepted == 0
        await again.stop()
        await client.aclose()
        await lab.aclose()

    run(main())


def test_the_client_id_is_persisted_per_host(tmp_path, monkeypatch):
    monkeypatch.setenv("AHP_LAB_STATE_DIR", str(tmp_path))
    one = persisted_client_id("ws://127.0.0.1:9000/?tkn=secret")
    assert persisted_client_id("ws://127.0.0.1:9000/?tkn=other") == one  # the token is not the host
    assert persisted_client_id("ws://127.0.0.1:9001/") != one
    stored = (tmp_path / "client-ids.json").read_text()
    assert "secret" not in stored

    async def main():
        lab = await Lab.open()
        url = await lab.aserve()
        first = await ahp_lab.connect(url)
        await first.aclose()
        second = await ahp_lab.connect(url)  # a restarted notebook keeps its identity
        assert second.client_id == first.client_id
        await second.aclose()
        await lab.aclose()

    run(main())


def test_a_departed_clients_running_tool_call_fails_after_the_grace_period():
    async def main():
        from ahp_lab.host import Host

        lab = await Lab.open(host=Host(client_grace_s=0.2))
        url = await lab.aserve()
        remote = await RemoteLab.open(url, session=lab.session, client_id="ide", reconnect=False)
        never = asyncio.Event()

        @remote.tool(approval="never")
        async def wait_forever(*, ctx) -> str:
            """Wait for something that never happens."""
            await never.wait()
            return "unreachable"

        pending = lab.start("wait_forever")

        def running(state):
            for part in (state.get("activeTurn") or {}).get("responseParts") or ():
                if (part.get("toolCall") or {}).get("status") == "running":
                    return True
            return None

        await lab.wait_for(lab.chat, running)
        _kill_served(lab, "ide")
        turn = await pending
        call = turn.tool_calls[0]
        assert call.status == "completed" and call.success is False
        assert not any(c["clientId"] == "ide" for c in lab.session_state["activeClients"])
        await remote.aclose()
        await lab.aclose()

    run(main())
