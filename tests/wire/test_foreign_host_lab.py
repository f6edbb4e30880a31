"""``Lab.attach`` over a host that is not ahp_lab's: a small host written here from the spec, which
knows nothing of ahp_lab's extensions and drops the connection where a real network would.

What the notebook user must get: the session titled as asked, and a one-sentence answer at once
(not a 30 s timeout) when an action can never be applied.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from ahp_lab.lab.remote import RemoteLab
from ahp_lab.protocol import ProtocolError

from .conftest import run
from .test_foreign_host import foreign_host

ROOT = "ahp-root://"
CHAT = "ahp-chat:/c1"


class SpecHost:
    """Sessions as the spec has them: ``createSession`` takes no title (a new session is
    "New session"), and ``session/titleChanged`` sets one. ``drop_on`` names a title whose
    dispatch drops the connection before it is sequenced; ``forget_session`` makes the session
    disposed while its client is away."""

    def __init__(self, drop_on: str | None = None) -> None:
        self.drop_on = drop_on
        self.forget_session = False
        self.seq = 0
        self.states: dict[str, dict] = {ROOT: {"agents": [], "activeSessions": 0}}
        self.received: list[dict] = []

    def _snapshot(self, channel: str) -> dict:
        return {"resource": channel, "state": self.states[channel], "fromSeq": self.seq}

    async def __call__(self, ws: Any, message: dict) -> None:
        self.received.append(message)
        method, params = message.get("method"), message.get("params") or {}
        answer = None
        if method == "initialize":
            subs = [c for c in params.get("initialSubscriptions") or () if c in self.states]
            answer = {
                "protocolVersion": "0.8.0",
                "serverSeq": self.seq,
                "snapshots": [self._snapshot(c) for c in subs],
            }
        elif method == "createSession":
            self.states[params["channel"]] = {
                "provider": "spec",
                "title": "New session",
                "status": 1,
                "lifecycle": "ready",
                "chats": [{"resource": CHAT, "title": "Chat", "status": 1}],
                "defaultChat": CHAT,
                "activeClients": [params["activeClient"]],
            }
            self.states[CHAT] = {"title": "Chat", "status": 1, "turns": []}
        elif method == "subscribe":
            answer = {"snapshot": self._snapshot(params["channel"])}
        elif method == "reconnect":
            if self.forget_session:
                gone = [c for c in params["subscriptions"] if c != ROOT]
                answer = {"type": "replay", "actions": [], "missing": gone}
            else:
                answer = {"type": "replay", "actions": []}
        elif method == "dispatchAction":
            action = params["action"]
            if action.get("title") == self.drop_on:
                ws.transport.abort()  # gone before it was sequenced
                return
            channel = params["channel"]
            if action["type"] == "session/titleChanged":
                self.states[channel] = {**self.states[channel], "title": action["title"]}
            self.seq += 1
            envelope = {
                "channel": channel,
                "action": action,
                "serverSeq": self.seq,
                "origin": {"clientId": message_client(self), "clientSeq": params["clientSeq"]},
            }
            await ws.send(json.dumps({"jsonrpc": "2.0", "method": "action", "params": envelope}))
            return
        if "id" in message:
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": answer}))


def message_client(host: SpecHost) -> str:
    return next(m["params"]["clientId"] for m in host.received if m.get("method") == "initialize")


def test_the_session_is_titled_as_asked_on_a_host_without_the_title_extension():
    host = SpecHost()

    async def main():
        async with foreign_host(host) as url:
            lab = await RemoteLab.open(url, title="Indie session", reconnect=False)
            title = lab.session_state["title"]
            await lab.aclose()
            return title

    assert run(main()) == "Indie session"
    assert (
        host.states[next(c for c in host.states if c.startswith("ahp-session:"))]["title"] == "Indie session"
    )


def test_an_action_lost_with_the_connection_fails_at_once_saying_so():
    host = SpecHost(drop_on="lost")

    async def main():
        async with foreign_host(host) as url:
            lab = await RemoteLab.open(url)
            started = asyncio.get_running_loop().time()
            with pytest.raises(ConnectionError, match=r"lost when the connection to the host dropped"):
                await lab.adispatch({"type": "session/titleChanged", "title": "lost"})
            waited = asyncio.get_running_loop().time() - started
            unconfirmed = [e["action"]["title"] for e in lab.client.unconfirmed]
            await lab.aclose()
            return waited, unconfirmed

    waited, unconfirmed = run(main())
    assert unconfirmed == ["lost"]  # kept, to send again
    assert waited < 20  # it waited out its 30 s echo timeout before


def test_a_session_disposed_while_the_client_was_away_is_named_as_gone():
    host = SpecHost(drop_on="lost")

    async def main():
        async with foreign_host(host) as url:
            lab = await RemoteLab.open(url)
            host.forget_session = True
            with pytest.raises((ConnectionError, LookupError)):
                await lab.adispatch({"type": "session/titleChanged", "title": "lost"})
            await lab.client.wait_for(ROOT, lambda _s: lab.session not in lab.client.channels or None, 10)
            with pytest.raises(ProtocolError, match=r"the host no longer has ahp-session:/.*reported the"):
                lab.client.dispatch(lab.session, {"type": "session/titleChanged", "title": "again"})
            await lab.aclose()

    run(main())
