"""Real sockets on 127.0.0.1: a host served over WebSocket, bare wire peers, helpers.

No mocks of our own code: the host is the real in-kernel host, the socket is a real TCP socket
opened by the ``websockets`` library, and a :class:`RawPeer` speaks JSON text frames the way a
foreign client does (no Origin, no Authorization header, token in ``?tkn=``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from websockets.asyncio.client import connect as ws_connect

from ahp_lab.host import Host
from ahp_lab.transport import WebSocketServer

ROOT = "ahp-root://"


def run(coro, timeout: float = 120.0) -> Any:
    """Run a test coroutine in a fresh loop, failing (not hanging) after ``timeout`` seconds."""

    async def bounded():
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


@contextlib.asynccontextmanager
async def served(host: Host | None = None, **options: Any) -> AsyncIterator[tuple[Host, WebSocketServer]]:
    """A host serving on 127.0.0.1 (a free port) for the duration of the block."""
    host = host or Host()
    server = WebSocketServer(host.attach, **options)
    await server.start()
    try:
        yield host, server
    finally:
        await server.stop()


class RawPeer:
    """A bare WebSocket peer: sends JSON texts, collects every message the host sends back."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.received: list[dict] = []
        self.texts: list[str] = []
        self._next_id = 1
        self._arrived = asyncio.Event()
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def open(cls, url: str, **kwargs: Any) -> RawPeer:
        return cls(await ws_connect(url, **kwargs))

    async def _read(self) -> None:
        with contextlib.suppress(Exception):
            async for text in self.ws:
                self.texts.append(text)
                try:
                    self.received.append(json.loads(text))
                except ValueError:
                    self.received.append({"unparsable": text})
                self._arrived.set()
        self._arrived.set()

    @property
    def closed(self) -> bool:
        return self._reader.done()

    def send(self, obj: Any) -> None:
        """Send a JSON value (or a raw string) as one text frame."""
        text = obj if isinstance(obj, str) else json.dumps(obj)
        asyncio.ensure_future(self.ws.send(text))

    async def wait(self, check: Callable[[], Any], timeout: float = 10.0) -> Any:
        """Wait until ``check()`` returns something truthy (re-checked as messages arrive)."""

        async def loop():
            while True:
                result = check()
                if result:
                    return result
                if self.closed:
                    raise ConnectionError("the socket closed while waiting")
                self._arrived.clear()
                await self._arrived.wait()

        return await asyncio.wait_for(loop(), timeout)

    async def call(self, method: str, params: dict | None = None, timeout: float = 10.0) -> dict:
        """Send a request; return the whole response message (``result`` or ``error``)."""
        rid = self._next_id
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return await self.wait(lambda: next((m for m in self.received if m.get("id") == rid), None), timeout)

    def notify(self, method: str, params: dict) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def actions(self, channel: str | None = None) -> list[dict]:
        out = [m["params"] for m in self.received if m.get("method") == "action"]
        return out if channel is None else [e for e in out if e.get("channel") == channel]

    async def initialize(self, client_id: str, subscriptions: list[str] | None = None) -> dict:
        answer = await self.call(
            "initialize",
            {
                "channel": ROOT,
                "protocolVersions": ["0.8.0"],
                "clientId": client_id,
                "initialSubscriptions": subscriptions or [ROOT],
            },
        )
        assert "result" in answer, answer
        return answer["result"]

    async def close(self) -> None:
        await self.ws.close()
        await asyncio.gather(self._reader, return_exceptions=True)


def without_modified_at(value: Any) -> Any:
    """Each side's reducer stamps ``modifiedAt`` from its own clock: compare everything else."""
    if isinstance(value, dict):
        return {k: without_modified_at(v) for k, v in value.items() if k != "modifiedAt"}
    if isinstance(value, list):
        return [without_modified_at(v) for v in value]
    return value


def session_without_activity(state: dict) -> dict:
    """A session's state but for its status activity bits: a snapshot carries the catalogue's
    (session-channel §6), which no session action updates, so a client that took its snapshot
    mid-turn keeps that turn's bits while the host's reduced state keeps its own."""
    return {**state, "status": int(state.get("status") or 0) & ~0x1F}
