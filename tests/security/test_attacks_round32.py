"""Attacker round 32."""

from __future__ import annotations

import asyncio
import json

import websockets

from ahp_lab import Lab
from ahp_lab.agents.scripted import ScriptedAgent

from .conftest import arun

SESSION = "ahp-session:/ghost-subscribers"


class SlowToOpen(ScriptedAgent):
    """A scripted agent whose session :data:`SESSION` opens once ``gate`` is set (as an ACP agent's
    opens once its process answered, seconds later)."""

    def __init__(self) -> None:
        super().__init__(modes=True)
        self.gate = asyncio.Event()
        self.open_session = self._held_open

    async def _held_open(self, ctx):
        if ctx.session == SESSION:
            await self.gate.wait()
        return await self._open_session(ctx)


async def _until(check) -> None:
    while not check():
        await asyncio.sleep(0.01)


def test_sockets_that_subscribed_to_an_opening_session_and_closed_hold_nothing():
    """Sockets that subscribed to a session while its agent was still opening it, then closed,
    stayed its subscribers for good: each later action on it was counted once per dead socket
    against the sender's budget and the strangers' (20 of them made a 1 kB title cost 23 kB), and
    connect, subscribe, close could go on one socket after another (attacker round 32)."""

    async def main():
        agent = SlowToOpen()
        lab = await Lab.open(agent=agent)
        try:
            url = await lab.aserve()

            async def initialized(client_id: str):
                ws = await websockets.connect(url, compression=None)
                params = {"channel": "ahp-root://", "protocolVersions": ["0.8.0"], "clientId": client_id}
                await ws.send(
                    json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
                )
                assert "result" in json.loads(await ws.recv())
                return ws

            creator = await initialized("creator")
            create = {"channel": SESSION, "provider": "scripted"}
            await creator.send(
                json.dumps({"jsonrpc": "2.0", "id": 2, "method": "createSession", "params": create})
            )
            await asyncio.wait_for(_until(lambda: SESSION in lab.host.agent_sessions.opening), 10)
            peers = [await initialized(f"peer{i}") for i in range(20)]
            for ws in peers:  # the subscribe waits for the session; the socket leaves meanwhile
                await ws.send(
                    json.dumps(
                        {"jsonrpc": "2.0", "id": 2, "method": "subscribe", "params": {"channel": SESSION}}
                    )
                )
            for ws in peers:
                await ws.close()
            peer_left = lambda: not any((c.client_id or "").startswith("peer") for c in lab.host.connections)  # noqa: E731
            await asyncio.wait_for(_until(peer_left), 10)
            agent.gate.set()
            await lab.wait_for(SESSION, lambda s: s.get("lifecycle") == "ready" or None, timeout=10)
            assert [c for c in lab.host.subscribers.get(SESSION) or () if c.closed] == []
            before = lab.host.broadcast_chars
            lab.host.dispatch(SESSION, {"type": "session/titleChanged", "title": "x" * 1000})
            assert lab.host.broadcast_chars - before < 3000  # the creator's copy alone
            await creator.close()
        finally:
            await lab.aclose()

    arun(main())


def test_a_creator_that_closed_while_its_session_opened_is_not_left_its_active_client():
    """A client created a session naming itself its active client and closed its socket while the
    agent opened it: the ready session listed it for good (its tools offered to the agent, counted
    against the session's limits), since its close looked only at the sessions already open (the
    review of this session's commits, round 57)."""

    async def main():
        agent = SlowToOpen()
        lab = await Lab.open(agent=agent)
        try:
            url = await lab.aserve()
            ws = await websockets.connect(url, compression=None)
            params = {"channel": "ahp-root://", "protocolVersions": ["0.8.0"], "clientId": "mallory"}
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}))
            assert "result" in json.loads(await ws.recv())
            tool = {"name": "lurk", "description": "x", "inputSchema": {"type": "object"}}
            create = {"channel": SESSION, "activeClient": {"clientId": "mallory", "tools": [tool]}}
            await ws.send(
                json.dumps({"jsonrpc": "2.0", "id": 2, "method": "createSession", "params": create})
            )
            await asyncio.wait_for(_until(lambda: SESSION in lab.host.agent_sessions.opening), 10)
            await ws.close()
            await asyncio.wait_for(_until(lambda: lab.host.connection_of("mallory") is None), 10)
            agent.gate.set()
            ready = await lab.wait_for(
                SESSION, lambda s: s if s.get("lifecycle") == "ready" else None, timeout=10
            )
            assert [c["clientId"] for c in ready.get("activeClients") or ()] == []
        finally:
            await lab.aclose()

    arun(main())
