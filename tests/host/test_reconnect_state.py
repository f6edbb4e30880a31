"""What a client holds after a reconnect equals what the host holds (found by an independent client).

A reconnect's replay is every logged action of the client's channels since its last seq, but some
logged actions were sent to some connections only (history paged in to a window that lacked it),
some are newer than the version the client negotiated, and the host must remember that a client's
chat state may be a window. An active client that never subscribed to its session leaves it when
it disconnects, like one that did.
"""

from __future__ import annotations

import asyncio

from ahp_lab.host import Host
from ahp_lab.reducers import reduce

from .test_wire import RawClient, _client_with_chat, settle


async def _reconnect(host: Host, client_id: str, last: int, channels: list[str]) -> tuple[RawClient, dict]:
    client = RawClient(host)
    answer = await client.call(
        "reconnect",
        {
            "channel": "ahp-root://",
            "clientId": client_id,
            "lastSeenServerSeq": last,
            "subscriptions": channels,
        },
    )
    return client, answer["result"]


def _ids(state: dict) -> list:
    return [t["id"] for t in state["turns"]]


def test_a_windowed_client_keeps_its_window_across_a_reconnect():
    async def main():
        host, owner, chat = await _client_with_chat("owner", "ahp-session:/r", 7)
        await owner.call("subscribe", {"channel": chat})
        away = RawClient(host)
        await away.initialize("away")
        window = (await away.call("subscribe", {"channel": chat, "view": {"turns": 2}}))["result"]
        state, last = window["snapshot"]["state"], host.store.last_seq
        assert _ids(state) == ["t5", "t6"] and state["turnsNextCursor"] == "before:t5"
        away.transport.close()
        await settle()

        # while it is away, another windowed client pages in history: sent to that client only
        other = RawClient(host)
        await other.initialize("other")
        theirs = (await other.call("subscribe", {"channel": chat, "view": {"turns": 4}}))["result"]
        cursor = theirs["snapshot"]["state"]["turnsNextCursor"]
        assert (await other.call("fetchTurns", {"channel": chat, "cursor": cursor}))["result"] == {}

        back, result = await _reconnect(host, "away", last, [chat])
        assert result["type"] == "replay"
        for envelope in result["actions"]:
            state = reduce("chat", state, envelope["action"], 0)
        # the other client's pages are not in its replay: they made [t0, t1, t2, t5, t6] of it
        assert _ids(state) == ["t5", "t6"] and state["turnsNextCursor"] == "before:t5"

        # the host still knows it may hold a window: a truncation into it pages history in first
        owner.dispatch(chat, 1, {"type": "chat/truncated", "turnId": "t1"})
        await settle()
        for envelope in back.actions():
            state = reduce("chat", state, envelope["action"], 0)
        assert _ids(state) == _ids(host.store.state(chat)) == ["t0", "t1"]

    asyncio.run(main())


def test_a_replay_keeps_to_the_version_the_client_negotiated():
    async def main():
        host = Host()
        old = RawClient(host)
        await old.call(
            "initialize", {"channel": "ahp-root://", "protocolVersions": ["0.5.1"], "clientId": "old"}
        )
        session = "ahp-session:/v"
        await old.call("createSession", {"channel": session})
        await old.call("subscribe", {"channel": session})
        last = host.store.last_seq
        old.transport.close()
        await settle()
        host.dispatch(session, {"type": "session/titleChanged", "title": "while away"})
        host.dispatch(session, {"type": "session/workingDirectorySet", "uri": "file:///tmp/w"})  # 0.7.0
        back, result = await _reconnect(host, "old", last, [session])
        assert [e["action"]["type"] for e in result["actions"]] == ["session/titleChanged"]
        host.dispatch(session, {"type": "session/workingDirectoryRemoved", "uri": "file:///tmp/w"})
        await settle()
        assert back.actions() == []  # nor is it sent one live

    asyncio.run(main())


def test_a_client_on_an_older_version_is_sent_an_mcp_stop_request_as_the_state_change_it_makes():
    """``session/mcpServerStopRequested`` came in 0.5.2: a 0.5.1 client was sent nothing in its
    place, and its copy of the server stayed in the state from before (found by a client written
    from the spec). It is sent the change to ``stopped`` (0.3.0) instead, live and in a replay, so
    its state stays the host's."""

    async def main():
        host = Host()
        session = "ahp-session:/m"
        current, old = RawClient(host), RawClient(host)
        await current.initialize("current")
        await old.call(
            "initialize", {"channel": "ahp-root://", "protocolVersions": ["0.5.1"], "clientId": "old"}
        )
        await current.call("createSession", {"channel": session})
        server = {"type": "mcpServer", "id": "mcp-1", "uri": "https://mcp.example/a", "name": "A",
                  "enabled": True, "state": {"kind": "error", "message": "crashed"}}  # fmt: skip
        host.dispatch(session, {"type": "session/customizationsChanged", "customizations": [server]})
        state = (await old.call("subscribe", {"channel": session}))["result"]["snapshot"]["state"]
        last = host.store.last_seq
        current.dispatch(session, 1, {"type": "session/mcpServerStopRequested", "id": "mcp-1"})
        await settle()
        sent = old.actions()
        assert [e["action"] for e in sent][:1] == [
            {"type": "session/mcpServerStateChanged", "id": "mcp-1", "state": {"kind": "stopped"}}
        ]
        for envelope in sent:
            state = reduce("session", state, envelope["action"], 0)
        assert state["customizations"] == host.store.state(session)["customizations"]
        assert state["customizations"][0]["state"] == {"kind": "stopped"}

        old.transport.close()
        await settle()
        _, result = await _reconnect(host, "old", last, [session])
        assert [e["action"] for e in result["actions"]] == [e["action"] for e in sent]
        assert [e["serverSeq"] for e in result["actions"]] == [e["serverSeq"] for e in sent]

    asyncio.run(main())


def test_the_rejected_echo_of_a_type_no_version_has_goes_to_its_sender_only():
    """No version introduced ``session/futureThing``: its rejected echo is its sender's (whose
    pending list waits for it), and a client that negotiated an older version is not sent an action
    type it cannot know (overview §3.6), live or in a replay, nor is anyone else."""

    async def main():
        host = Host()
        session = "ahp-session:/u"
        sender, old, current = RawClient(host), RawClient(host), RawClient(host)
        await sender.initialize("sender")
        await old.call(
            "initialize", {"channel": "ahp-root://", "protocolVersions": ["0.5.1"], "clientId": "old"}
        )
        await current.initialize("current")
        await sender.call("createSession", {"channel": session})
        for client in (sender, old, current):
            await client.call("subscribe", {"channel": session})
        last = host.store.last_seq
        sender.dispatch(session, 1, {"type": "session/futureThing", "x": 1})
        sender.dispatch(session, 2, {"type": "session/titleChanged", "title": "known"})
        await settle()
        (echo, title) = sender.actions()
        assert (
            echo["action"]["type"] == "session/futureThing"
            and "unknown action type" in echo["rejectionReason"]
        )
        for client in (old, current):
            assert [e["action"]["type"] for e in client.actions()] == ["session/titleChanged"]
        current.transport.close()
        await settle()
        _, result = await _reconnect(host, "current", last, [session])
        assert [e["action"]["type"] for e in result["actions"]] == ["session/titleChanged"]

    asyncio.run(main())


def test_an_active_client_that_never_subscribed_leaves_its_session_when_it_disconnects():
    async def main():
        host = Host(client_grace_s=0)
        owner = RawClient(host)
        await owner.initialize("owner")
        session = "ahp-session:/a"
        await owner.call("createSession", {"channel": session})
        await settle()
        tool = {"name": "e_tool", "description": "E", "inputSchema": {"type": "object"}}
        visitor = RawClient(host)
        await visitor.initialize("visitor")
        visitor.dispatch(
            session,
            1,
            {"type": "session/activeClientSet", "activeClient": {"clientId": "visitor", "tools": [tool]}},
        )
        await settle()
        assert host.is_active_client(session, "visitor")
        visitor.transport.close()
        await settle()
        assert not host.is_active_client(session, "visitor")

    asyncio.run(main())
