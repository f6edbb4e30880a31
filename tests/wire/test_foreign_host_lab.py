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
from ahp_lab.protocol.jsonrpc import ErrorCode
from ahp_lab.transport import RpcError

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
        self.refuse_reconnect = False  # as a restarted host does: it knows no client
        self.ws: Any = None
        self.catalogue = 0  # sessions listSessions lists, two a page unless asked otherwise
        self.loop_cursor = False  # every page names the first one again
        self.endless_pages = False  # every page is empty and names a new cursor
        self.silent_list = False  # listSessions is never answered
        self.fake_calls = 0  # calls of the new session's chat waiting for a tool its client lacks
        self.fake_tool, self.fake_status = "not_this_clients", "pending-confirmation"  # or its own, running
        self.echo = True  # False: dispatches are never echoed (a host that sequences nothing)
        self.seq = 0
        self.states: dict[str, dict] = {ROOT: {"agents": [], "activeSessions": 0}}
        self.received: list[dict] = []

    def _snapshot(self, channel: str) -> dict:
        return {"resource": channel, "state": self.states[channel], "fromSeq": self.seq}

    async def __call__(self, ws: Any, message: dict) -> None:
        self.received.append(message)
        self.ws = ws
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
            if self.fake_calls:
                contributor = {"kind": "client", "clientId": params["activeClient"]["clientId"]}
                calls = [
                    {
                        "kind": "toolCall",
                        "toolCall": {
                            "toolCallId": f"fake-{n}",
                            "toolName": self.fake_tool,
                            "displayName": "Fake",
                            "status": self.fake_status,
                            "toolInput": "{}",
                            "contributor": contributor,
                        },
                    }
                    for n in range(self.fake_calls)
                ]
                said = {"text": "hi", "origin": {"kind": "user"}}
                active = {"id": "t1", "message": said, "responseParts": calls}
                self.states[CHAT] = {**self.states[CHAT], "activeTurn": active}
        elif method == "listSessions" and self.silent_list:
            return
        elif method == "listSessions" and self.endless_pages:
            answer = {"items": [], "nextCursor": str(int(params.get("cursor") or 0) + 1)}
        elif method == "listSessions":
            start = int(params.get("cursor") or 0)
            uris = [f"ahp-session:/{n}" for n in range(self.catalogue)]
            limit = params.get("limit") or 2
            answer = {"items": [{"resource": u, "title": u[-1]} for u in uris[start : start + limit]]}
            if start + limit < len(uris):
                answer["nextCursor"] = "0" if self.loop_cursor else str(start + limit)
        elif method == "subscribe" and params["channel"] not in self.states:
            error = {"code": ErrorCode.SESSION_NOT_FOUND, "message": "no such session"}
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}))
            return
        elif method == "subscribe":
            answer = {"snapshot": self._snapshot(params["channel"])}
        elif method == "reconnect" and self.refuse_reconnect:
            error = {"code": -32602, "message": "unknown client"}
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}))
            return
        elif method == "reconnect":
            if self.forget_session:
                gone = [c for c in params["subscriptions"] if c != ROOT]
                answer = {"type": "replay", "actions": [], "missing": gone}
            else:
                answer = {"type": "replay", "actions": []}
        elif method == "dispatchAction" and not self.echo:
            return
        elif method == "dispatchAction":
            action = params["action"]
            if self.drop_on is not None and action.get("title") == self.drop_on:
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
    [create] = [m["params"] for m in host.received if m.get("method") == "createSession"]
    assert "title" not in create  # ahp_lab's extension goes to ahp_lab hosts only
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
            with pytest.raises(
                ProtocolError, match=r"the host no longer has ahp-session:/.*reported it missing"
            ):
                lab.client.dispatch(lab.session, {"type": "session/titleChanged", "title": "again"})
            await lab.aclose()

    run(main())


def test_after_a_host_restart_the_client_counts_from_the_hosts_new_numbers():
    """A restarted host that numbers from 0 again: the client kept the old, higher number as
    ``lastSeenServerSeq``, so its next ``reconnect`` asked for a replay from a future the host
    never reached."""
    host = SpecHost()

    def reconnects() -> list[int]:
        return [m["params"]["lastSeenServerSeq"] for m in host.received if m.get("method") == "reconnect"]

    async def main():
        async with foreign_host(host) as url:
            lab = await RemoteLab.open(url)
            for title in ("a", "b", "c"):
                await lab.adispatch({"type": "session/titleChanged", "title": title})
            host.seq, host.refuse_reconnect = 0, True  # restarted: numbering begins again
            host.ws.transport.abort()
            initialized = [m for m in host.received if m.get("method") == "initialize"]
            await lab.client.wait_for(
                ROOT,
                lambda _s: (
                    lab.client.connected
                    and len([m for m in host.received if m.get("method") == "initialize"]) > len(initialized)
                    or None
                ),
                10,
            )
            assert lab.client.last_seen_seq == 0
            await lab.adispatch({"type": "session/titleChanged", "title": "d"})  # numbered 1
            host.refuse_reconnect = False
            host.ws.transport.abort()
            await lab.client.wait_for(ROOT, lambda _s: len(reconnects()) >= 2 or None, 10)
            title = lab.session_state["title"]
            await lab.aclose()
            return title

    assert run(main()) == "d"
    assert reconnects() == [4, 1]  # before: [4, 4]


def test_joining_a_session_the_host_does_not_have_leaves_no_connection_behind():
    """The failed open raised, with no lab to close: its connection stayed, and resumed for ever
    once the host went away ("Task was destroyed but it is pending" at exit)."""
    host = SpecHost()

    async def main():
        async with foreign_host(host) as url:
            with pytest.raises(RpcError, match="no such session"):
                await RemoteLab.open(url, session="ahp-session:/nowhere")
            await asyncio.wait_for(host.ws.wait_closed(), 10)

    run(main())


def test_the_catalogue_is_listed_page_after_page_and_a_loop_of_pages_ends():
    host = SpecHost()
    host.catalogue = 7

    async def main():
        async with foreign_host(host) as url:
            lab = await RemoteLab.open(url)
            listed = [s["resource"] for s in await lab.client.list_sessions()]
            three = [m["params"].get("limit") for m in host.received if m.get("method") == "listSessions"]
            by_three = await lab.client.list_sessions(page_size=3)
            host.loop_cursor = True
            with pytest.raises(ValueError, match=r"pages do not end: it gave cursor '0' twice"):
                await lab.client.list_sessions()
            # empty pages, each with a new cursor: 535,000 round trips a minute, for ever (attacker
            # round 13); a page never answered: waited for ever
            host.endless_pages = True
            with pytest.raises(ValueError, match=r"pages do not end: over 50 pages \(max_pages\)"):
                await lab.client.list_sessions(max_pages=50)
            host.silent_list, lab.client.request_timeout = True, 0.5
            with pytest.raises(TimeoutError):
                await lab.client.list_sessions()
            await lab.aclose()
            return listed, three, len(by_three)

    listed, limits, by_three = run(main())
    assert listed == [f"ahp-session:/{n}" for n in range(7)]  # four pages of two
    assert limits == [None] * 4 and by_three == 7


def test_a_host_naming_this_client_in_thousands_of_calls_gets_a_bounded_number_of_declines():
    """Attacker round 13: a snapshot holding 20,000 waiting calls attributed to this client, for
    tools it never registered, had it send 20,000 declines (1 s of its loop), and as many again
    at each look. It declines at most 100 a look, and a call once."""
    host = SpecHost()
    host.fake_calls = 500

    async def main():
        async with foreign_host(host) as url:
            lab = await RemoteLab.open(url, reconnect=False)
            await lab.client.request("ping")  # sent after the declines: they have all arrived
            await lab.client.subscribe(CHAT)  # a second look at the same calls
            await lab.client.request("ping")
            await lab.aclose()

    run(main())
    declined = [
        m["params"]["action"]["toolCallId"]
        for m in host.received
        if m.get("method") == "dispatchAction" and m["params"]["action"]["type"] == "chat/toolCallConfirmed"
    ]
    # 100 a look, and none twice: the second look declines the next 100
    assert declined == [f"fake-{n}" for n in range(200)]


def test_a_host_marking_hundreds_of_this_clients_calls_running_gets_a_bounded_number_run():
    """Attacker round 15 (read in the client): a host can mark any number of calls of a read-only
    client tool running, and the client ran every one at once. It runs at most 64 at a time and
    fails the others with the reason."""
    from ahp_lab.client.contributions import MAX_EXECUTIONS

    host = SpecHost()
    host.fake_calls, host.fake_tool, host.fake_status = 100, "peek", "running"
    started = []

    async def main():
        async with foreign_host(host) as url:
            lab = await RemoteLab.open(url, reconnect=False)
            release = asyncio.Event()

            @lab.tool(annotations={"readOnlyHint": True})
            async def peek() -> str:
                started.append(1)
                await release.wait()
                return "seen"

            await lab.client.subscribe(CHAT)
            await lab.client.request("ping")
            for _ in range(100):
                await asyncio.sleep(0)
            assert len(started) == MAX_EXECUTIONS and len(lab.client.executions) == MAX_EXECUTIONS
            release.set()
            await lab.aclose()

    run(main())
    failed = [
        m["params"]["action"]
        for m in host.received
        if m.get("method") == "dispatchAction"
        and m["params"]["action"]["type"] == "chat/toolCallComplete"
        and m["params"]["action"]["result"].get("success") is False
    ]
    assert len(failed) == 100 - MAX_EXECUTIONS
    assert "runs at most 64 calls at once" in json.dumps(failed[0])


def test_a_host_streaming_calls_for_tools_this_client_lacks_and_never_echoing_gets_a_bounded_number_of_declines():
    """Attacker round 16: 2,000 calls attributed to this client, each started and made to wait in an
    action of its own, got 2,000 declines; none was echoed, so all stayed pending, and every
    envelope re-applied them all (the loop held 14 s). Declines not echoed yet count against the
    100 a look: the client keeps at most 100 pending."""
    from ahp_lab.client.contributions import MAX_DECLINES

    host = SpecHost()

    async def main():
        async with foreign_host(host) as url:
            lab = await RemoteLab.open(url, reconnect=False)
            await lab.client.subscribe(CHAT)
            host.echo = False
            contributor = {"kind": "client", "clientId": lab.client.client_id}
            said = {"text": "hi", "origin": {"kind": "user"}}
            actions = [{"type": "chat/turnStarted", "turnId": "t1", "startedAt": "x", "message": said}]
            for n in range(600):
                call = {"turnId": "t1", "toolCallId": f"s-{n}"}
                actions.append(
                    {"type": "chat/toolCallStart", **call, "toolName": "absent", "displayName": "A",
                     "contributor": contributor}
                )  # fmt: skip
                actions.append({"type": "chat/toolCallReady", **call, "invocationMessage": "A"})
            for action in actions:
                host.seq += 1
                envelope = {"channel": CHAT, "action": action, "serverSeq": host.seq}
                await host.ws.send(json.dumps({"jsonrpc": "2.0", "method": "action", "params": envelope}))
            await lab.client.request("ping")  # answered after every envelope was handled
            pending = len(lab.client.channels[CHAT].pending)
            await lab.aclose()
            return pending

    assert run(main()) == MAX_DECLINES
    declined = [
        m
        for m in host.received
        if m.get("method") == "dispatchAction" and m["params"]["action"]["type"] == "chat/toolCallConfirmed"
    ]
    assert len(declined) == MAX_DECLINES


def test_a_wide_state_from_a_host_counts_its_copies_against_the_clients_log_budget():
    """Attacker round 16: a chat snapshot of 100,000 junk keys, then tiny actions on it: each
    action's reducer copies the wide dict, the log kept every copy and counted the action's 100
    bytes, and the kernel reached 1.9 GB while the log said 5.5 MB. The copies count: the log
    drops its oldest records within its budget."""
    import tracemalloc

    host = SpecHost()
    budget = 8 * 2**20

    async def main():
        async with foreign_host(host) as url:
            lab = await RemoteLab.open(url, reconnect=False, max_log_bytes=budget)
            host.states[CHAT] = {**host.states[CHAT], **{f"junk{n}": n for n in range(20_000)}}
            await lab.client.subscribe(CHAT)
            tracemalloc.start()
            base = tracemalloc.get_traced_memory()[0]
            for n in range(60):
                host.seq += 1
                action = {"type": "chat/activityChanged", "activity": f"a{n}"}
                envelope = {"channel": CHAT, "action": action, "serverSeq": host.seq}
                await host.ws.send(json.dumps({"jsonrpc": "2.0", "method": "action", "params": envelope}))
            await lab.client.request("ping")
            grown = tracemalloc.get_traced_memory()[0] - base
            tracemalloc.stop()
            logged = lab.store.log_bytes
            await lab.aclose()
            return grown, logged

    grown, logged = run(main())
    assert logged <= budget
    assert grown < 2 * budget  # without the count: 60 copies of a 1.3 MB dict, about 80 MB


def test_an_awaited_turn_a_host_never_echoes_the_cancel_of_ends_as_this_client_saw_it(monkeypatch):
    """A turn this client cancelled is waited for as the host ended it (the host's last actions of
    the turn come before its echo of the cancel), but a host that never echoes the cancel kept
    ``await lab.start(...)`` waiting for ever (a review of this stop's commits). Past HOST_ECHO_S,
    or with the connection gone, the turn ends as this client saw it."""
    from ahp_lab.lab import sending

    monkeypatch.setattr(sending, "HOST_ECHO_S", 0.3)
    host = SpecHost()

    async def main():
        async with foreign_host(host) as url:
            lab = await RemoteLab.open(url, reconnect=False)
            try:
                pending = lab.start("hello")
                await lab.wait_for(lab.chat, lambda c: c.get("activeTurn") or None, timeout=10)
                host.echo = False  # the host sequences nothing more
                turn_id = lab.state(lab.chat)["activeTurn"]["id"]
                lab.client.dispatch(
                    lab.chat, {"type": "chat/turnCancelled", "turnId": turn_id, "duration": 1}
                )
                turn = await asyncio.wait_for(pending, 10)
                return turn.status, turn.id == turn_id
            finally:
                await lab.aclose()

    assert run(main()) == ("cancelled", True)
