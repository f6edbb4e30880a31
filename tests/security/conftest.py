"""Attacks on the host, run through a *connection factory*.

Every attack in this folder talks to the host as a :class:`Stranger`: a bare JSON-RPC peer that
sends exactly the texts an attacker would and records everything the host sends back. The
``connect_stranger`` fixture makes one for a lab, once per entry of ``FACTORIES``: a second
in-process connection (an untrusted stranger, like any connection but the notebook's own), and a
real WebSocket to the lab's served host. A factory is a coroutine ``(lab, name) -> transport``
whose transport has ``send(text)``, ``set_receiver(on_text, on_close)`` and ``close()``.

No sleeps: every wait is on a condition (a message arriving, a state changing) with a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from ahp_lab import Lab

ROOT = "ahp-root://"
REPO = Path(__file__).resolve().parents[2]
DEMO_SERVER = REPO / "examples" / "mcp_server.py"


def arun(coro: Awaitable) -> Any:
    return asyncio.run(coro)


class Stranger:
    """A raw wire peer: what an untrusted program connected to the host can do."""

    def __init__(self, transport: Any, *, answer_pings: bool = True, files: dict[str, str] | None = None):
        self.transport = transport
        self.received: list[dict] = []
        self.texts: list[str] = []
        self.answer_pings = answer_pings
        self.files = dict(files or {})  # uri -> text this peer serves to resourceRead/resourceList
        self.closed = False
        self._changed = asyncio.Event()
        self._next_id = 10_000  # raw sends in tests use small ids
        transport.set_receiver(self._on_text, self._on_close)

    # -- receiving --

    def _on_text(self, text: str) -> None:
        self.texts.append(text)
        message = json.loads(text)
        self.received.append(message)
        self._changed.set()
        if "method" in message and "id" in message:
            self._answer(message)

    def _on_close(self) -> None:
        self.closed = True
        self._changed.set()

    def _answer(self, request: dict) -> None:
        method, params = request["method"], request.get("params") or {}
        if method == "ping":
            if self.answer_pings:
                self.send({"jsonrpc": "2.0", "id": request["id"], "result": None})
            return
        uri = str(params.get("uri", ""))
        if method == "resourceRead" and uri in self.files:
            result = {"data": self.files[uri], "encoding": "utf-8"}
            self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})
        elif method == "resourceList" and self.files:
            prefix = uri.rstrip("/") + "/"
            names = sorted({u[len(prefix) :].split("/")[0] for u in self.files if u.startswith(prefix)})
            entries = [
                {
                    "name": n,
                    "type": "directory"
                    if any(u.startswith(prefix + n + "/") for u in self.files)
                    else "file",
                }
                for n in names
            ]
            self.send({"jsonrpc": "2.0", "id": request["id"], "result": {"entries": entries}})
        else:
            error = {"code": -32601, "message": f"{method} is not served here"}
            self.send({"jsonrpc": "2.0", "id": request["id"], "error": error})

    async def wait(self, check: Callable[[], Any], timeout: float = 10.0) -> Any:
        """Wait until ``check()`` returns something truthy (re-checked after every message)."""

        async def loop() -> Any:
            while True:
                result = check()
                if result:
                    return result
                self._changed.clear()
                await self._changed.wait()

        return await asyncio.wait_for(loop(), timeout)

    # -- sending --

    def send(self, obj: Any) -> None:
        self.transport.send(obj if isinstance(obj, str) else json.dumps(obj))

    def notify(self, method: str, params: dict) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def call(self, method: str, params: dict | None = None, *, timeout: float = 10.0) -> dict:
        """Send a request and return the whole response message (``result`` or ``error``)."""
        rid = self._next_id
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return await self.response(rid, timeout=timeout)

    async def response(self, rid: Any, *, timeout: float = 10.0) -> dict:
        def found() -> Any:
            return next(
                (m for m in self.received if m.get("id") == rid and ("result" in m or "error" in m)), None
            )

        return await self.wait(found, timeout)

    async def initialize(self, client_id: str = "stranger", **extra: Any) -> dict:
        params = {"channel": ROOT, "protocolVersions": ["0.8.0"], "clientId": client_id, **extra}
        return await self.call("initialize", params)

    async def reconnect(self, client_id: str, last_seen: int, subscriptions: list[str]) -> dict:
        params = {
            "channel": ROOT,
            "clientId": client_id,
            "lastSeenServerSeq": last_seen,
            "subscriptions": subscriptions,
        }
        return await self.call("reconnect", params)

    def dispatch(self, channel: str, client_seq: Any, action: Any) -> None:
        self.notify("dispatchAction", {"channel": channel, "clientSeq": client_seq, "action": action})

    def envelopes(self) -> list[dict]:
        return [m["params"] for m in self.received if m.get("method") == "action"]

    async def echo(self, client_seq: Any, timeout: float = 10.0) -> dict:
        """The envelope echoing this peer's dispatch ``client_seq``."""
        me = None

        def found() -> Any:
            for env in self.envelopes():
                origin = env.get("origin") or {}
                if origin.get("clientSeq") == client_seq and (me is None or origin.get("clientId") == me):
                    return env
            return None

        return await self.wait(found, timeout)

    def errors_without_id(self) -> list[dict]:
        return [m["error"] for m in self.received if "error" in m and m.get("id") is None]

    def close(self) -> None:
        self.transport.close()


async def publish(
    s, client_id: str, name: str, files: dict[str, str], nonce: str = "1", seq: int = 1
) -> None:
    """The stranger joins the session and publishes a virtual plugin it serves itself."""
    root = f"virtual://{client_id}/{name}"
    s.files.update({f"{root}/{path}": text for path, text in files.items()})
    plugin = {"type": "plugin", "id": name, "uri": root, "name": name, "enabled": True, "nonce": nonce}
    active = {"clientId": client_id, "tools": [], "customizations": [plugin]}
    s.dispatch(s.session, seq, {"type": "session/activeClientSet", "activeClient": active})
    assert "rejectionReason" not in await s.echo(seq)


async def joined(connect_stranger, lab, client_id: str, *, chat: bool = False):
    """A stranger ``client_id`` initialized and subscribed to the lab's session (and, with
    ``chat=True``, to its chat too)."""
    s = await connect_stranger(lab, client_id)
    await s.initialize(client_id)
    await s.call("subscribe", {"channel": lab.session})
    if chat:
        await s.call("subscribe", {"channel": lab.chat})
    s.session = lab.session
    return s


async def pending_call(stranger: Stranger, lab: Lab) -> dict:
    """The active turn's first tool call, once it waits for confirmation."""

    def waiting():
        active = lab.host.store.state(lab.chat).get("activeTurn") or {}
        calls = [p["toolCall"] for p in active.get("responseParts") or () if p.get("kind") == "toolCall"]
        return calls[0] if calls and calls[0]["status"] == "pending-confirmation" else None

    return await stranger.wait(waiting)


def deploy_tool(lab: Lab, ran: list, **options: Any) -> None:
    """Register the notebook's kernel tool ``deploy(target)`` (``options``: ``confirm=True``,
    ``approval="always"``, ...); each target it runs with is appended to ``ran``."""

    @lab.tool(**options)
    def deploy(target: str) -> str:
        """Deploy to a target."""
        ran.append(target)
        return f"deployed to {target}"


def waiting_call(chat: dict) -> dict | None:
    """A ``wait_for`` check: the active turn's first tool call waiting for confirmation."""
    for part in (chat.get("activeTurn") or {}).get("responseParts") or ():
        if part.get("kind") == "toolCall" and part["toolCall"]["status"] == "pending-confirmation":
            return part["toolCall"]
    return None


async def queued_behind_a_waiting_turn(lab: Lab) -> tuple[Any, Any, dict]:
    """The notebook's turn "deploy target=dev" waits for a person, and its next message, "deploy
    target=staging" sent with ``approve=True``, is queued: ``(first, queued, queued message)``."""
    first = lab.start("deploy target=dev")
    await lab.wait_for(lab.chat, waiting_call)
    queued = lab.start("deploy target=staging", approve=True)
    [message] = await lab.wait_for(lab.chat, lambda chat: chat.get("queuedMessages"))
    return first, queued, message


async def asks_to_deploy(stranger: Stranger, lab: Lab, seq: int) -> dict:
    """``stranger`` starts turn ``m1``, "deploy target=staging", on the lab's chat (dispatched as
    ``seq``, accepted); returns the call of the ``deploy`` tool waiting for confirmation."""
    await stranger.call("subscribe", {"channel": lab.chat})
    message = {"text": "deploy target=staging", "origin": {"kind": "user"}}
    stranger.dispatch(
        lab.chat, seq, {"type": "chat/turnStarted", "turnId": "m1", "startedAt": "x", "message": message}
    )
    assert "rejectionReason" not in await stranger.echo(seq)
    return await pending_call(stranger, lab)


async def _inprocess(lab: Lab, name: str) -> Any:
    return lab.host.connect(name)


async def _websocket(lab: Lab, name: str) -> Any:
    """A real socket on 127.0.0.1 to the lab's served host (token in ``?tkn=``, no Origin)."""
    from ahp_lab.transport import connect_websocket

    return await connect_websocket(await lab.aserve())


#: How a stranger reaches the host: a second in-process connection, or a WebSocket.
FACTORIES: dict[str, Callable[[Lab, str], Awaitable[Any]]] = {
    "inprocess": _inprocess,
    "websocket": _websocket,
}


@pytest.fixture(params=sorted(FACTORIES))
def connect_stranger(request) -> Callable[..., Awaitable[Stranger]]:
    """``await connect_stranger(lab, name="x", answer_pings=True, files=None)`` → a :class:`Stranger`."""
    make = FACTORIES[request.param]

    async def connect(lab: Lab, name: str = "stranger", **options: Any) -> Stranger:
        return Stranger(await make(lab, name), **options)

    return connect


@contextlib.asynccontextmanager
async def open_lab(**options: Any):
    """A lab for one attack; its MCP servers and watchers are stopped afterwards."""
    lab = await Lab.open(**options)
    try:
        yield lab
    finally:
        await lab.aclose()


async def ping_flood(writer: asyncio.StreamWriter, burst: bytes, most: int = 400 * 1024 * 1024) -> int:
    """Write ``burst`` (ping frames) again and again and never read, until ``most`` bytes are sent
    or the peer lets go; returns the bytes sent. The answers pile up on the peer's side."""
    sent = 0
    try:
        while sent < most:
            writer.write(burst)
            await writer.drain()
            sent += len(burst)
    except ConnectionError:
        pass
    writer.close()
    return sent


def demo_server_config(*args: str, **extra: Any) -> dict:
    return {"command": sys.executable, "args": [str(DEMO_SERVER), *args], **extra}
