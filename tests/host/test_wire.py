"""The host over raw JSON-RPC text: what a foreign client (or a broken one) sees on the wire."""

from __future__ import annotations

import asyncio
import json

from ahp_lab import Lab
from ahp_lab.host import Host
from ahp_lab.protocol.jsonrpc import ErrorCode


class RawClient:
    """A bare wire peer: sends texts, collects every message the host sends back."""

    def __init__(self, host: Host) -> None:
        self.transport = host.connect("raw")
        self.received: list[dict] = []
        self.transport.set_receiver(lambda text: self.received.append(json.loads(text)), lambda: None)
        self.next_id = 1

    def send(self, obj) -> None:
        self.transport.send(obj if isinstance(obj, str) else json.dumps(obj))

    async def call(self, method: str, params: dict) -> dict:
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        for _ in range(100):
            await asyncio.sleep(0)
            for msg in self.received:
                if msg.get("id") == rid:
                    return msg
        raise AssertionError(f"no answer to {method}")

    async def initialize(self, client_id: str) -> dict:
        return await self.call(
            "initialize", {"channel": "ahp-root://", "protocolVersions": ["0.8.0"], "clientId": client_id}
        )

    def dispatch(self, channel: str, client_seq: int, action: dict) -> None:
        """``dispatchAction``, a notification: its echo comes back as an ``action``."""
        self.send(
            {
                "jsonrpc": "2.0",
                "method": "dispatchAction",
                "params": {"channel": channel, "clientSeq": client_seq, "action": action},
            }
        )

    def actions(self) -> list[dict]:
        return [m["params"] for m in self.received if m.get("method") == "action"]


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def test_handshake_session_and_rejections_on_the_wire():
    async def main():
        host = Host()
        raw = RawClient(host)
        bad = await raw.call(
            "initialize", {"channel": "ahp-root://", "protocolVersions": ["9.9.9"], "clientId": "x"}
        )
        assert bad["error"]["code"] == ErrorCode.UNSUPPORTED_PROTOCOL_VERSION
        assert "0.8.0" in bad["error"]["data"]["supportedVersions"]
        ok = await raw.call(
            "initialize",
            {
                "channel": "ahp-root://",
                "protocolVersions": ["0.8.0"],
                "clientId": "raw",
                "initialSubscriptions": ["ahp-root://"],
            },
        )
        assert ok["result"]["protocolVersion"] == "0.8.0"
        assert ok["result"]["snapshots"][0]["state"]["agents"][0]["provider"] == "scripted"
        assert (await raw.call("ping", {"channel": "ahp-root://"}))["result"] is None
        assert (await raw.call("nope", {"channel": "ahp-root://"}))["error"][
            "code"
        ] == ErrorCode.METHOD_NOT_FOUND
        uri = "ahp-session:/s1"
        created = await raw.call(
            "createSession", {"channel": uri, "activeClient": {"clientId": "raw", "tools": []}}
        )
        assert created["result"] is None
        again = await raw.call("createSession", {"channel": uri})
        assert again["error"]["code"] == ErrorCode.SESSION_ALREADY_EXISTS
        sub = await raw.call("subscribe", {"channel": uri})
        assert sub["result"]["snapshot"]["state"]["lifecycle"] in ("creating", "ready")
        await settle()
        assert host.store.state(uri)["lifecycle"] == "ready"
        missing = await raw.call("subscribe", {"channel": "ahp-session:/nope"})
        assert missing["error"]["code"] == ErrorCode.SESSION_NOT_FOUND

        # garbage in: clear errors, no crash, no state change
        before = host.store.states()
        raw.send("{not json")
        raw.dispatch(uri, 1, {"type": "session/titleChanged", "title": 5})
        raw.dispatch(uri, 2, {"type": "session/ready"})
        raw.dispatch("ahp-session:/unknown", 3, {"type": "session/ready"})
        raw.dispatch(uri, 4, {"type": "chat/draftChanged"})
        await settle()
        assert any(m.get("error", {}).get("code") == ErrorCode.PARSE_ERROR for m in raw.received)
        assert host.store.states() == before
        echoes = {
            e["origin"]["clientSeq"]: e for e in raw.actions() if e.get("origin", {}).get("clientId") == "raw"
        }
        assert (
            "must be a string" in echoes[1]["rejectionReason"] and "'title'" in echoes[1]["rejectionReason"]
        )
        assert "host-only" in echoes[2]["rejectionReason"]
        assert 3 not in echoes  # unknown channel: dropped silently
        assert "belongs on a chat channel" in echoes[4]["rejectionReason"]
        # every rejection is in the log, with a seq the echo carries
        rejected = [t for t in host.store.transitions if not t.accepted]
        assert [t.seq for t in rejected] == [
            echoes[1]["serverSeq"],
            echoes[2]["serverSeq"],
            echoes[4]["serverSeq"],
        ]

        # an accepted dispatch is echoed with origin and a higher seq than the snapshot's
        raw.dispatch(uri, 5, {"type": "session/titleChanged", "title": "Hi"})
        await settle()
        echo = next(e for e in raw.actions() if e.get("origin", {}).get("clientSeq") == 5)
        assert "rejectionReason" not in echo and echo["serverSeq"] > sub["result"]["snapshot"]["fromSeq"]
        assert host.store.state(uri)["title"] == "Hi"
        listed = await raw.call("listSessions", {"channel": "ahp-root://"})
        assert [s["title"] for s in listed["result"]["items"]] == ["Hi"]

    asyncio.run(main())


def test_reconnect_replays_what_was_missed():
    async def main():
        host = Host()
        raw = RawClient(host)
        await raw.initialize("a")
        await raw.call("createSession", {"channel": "ahp-session:/s"})
        await settle()
        seen = host.store.last_seq
        raw.transport.close()  # the socket dropped; the id is free again
        await settle()
        host.dispatch("ahp-session:/s", {"type": "session/titleChanged", "title": "later"})
        other = RawClient(host)
        result = await other.call(
            "reconnect",
            {
                "channel": "ahp-root://",
                "clientId": "a",
                "lastSeenServerSeq": seen,
                "subscriptions": ["ahp-session:/s", "ahp-session:/gone"],
            },
        )
        replay = result["result"]
        assert replay["type"] == "replay" and replay["missing"] == ["ahp-session:/gone"]
        assert [a["action"]["type"] for a in replay["actions"]] == ["session/titleChanged"]
        assert all(a["serverSeq"] > seen for a in replay["actions"])

    asyncio.run(main())


def test_envelopes_racing_a_snapshot_are_not_lost(monkeypatch):
    """The host answers subscribe, then at once dispatches: the envelope is delivered before the
    client's awaiting coroutine applies the snapshot; it must be applied after it, not dropped."""
    from ahp_lab.client import AhpClient
    from ahp_lab.host.connection import Connection

    async def main():
        host = Host()
        client = AhpClient(host.connect("c"), client_id="c")
        await client.initialize()
        await client.create_session("ahp-session:/race")
        original = Connection._cmd_subscribe

        titles = iter(["right after", "right after again"])

        def subscribe_then_change(self, params):
            result = original(self, params)
            asyncio.get_running_loop().call_soon(
                host.dispatch, params["channel"], {"type": "session/titleChanged", "title": next(titles)}
            )
            return result

        monkeypatch.setattr(Connection, "_cmd_subscribe", subscribe_then_change)
        await client.subscribe("ahp-session:/race")
        await client.wait_for(
            "ahp-session:/race", lambda s: s if s["title"] == "right after" else None, timeout=2
        )
        other = AhpClient(host.connect("d"), client_id="d")
        await other.initialize()
        await other.subscribe("ahp-session:/race")  # a first subscription races the same way
        await other.wait_for(
            "ahp-session:/race", lambda s: s if s["title"] == "right after again" else None, timeout=2
        )

    asyncio.run(main())


def test_a_windowed_subscriber_pages_its_history_in_without_changing_anyone_elses():
    """``view.turns`` gives one client a window with a cursor; ``fetchTurns`` with it loads every
    older turn, and the chat's shared state (what full snapshots and other subscribers hold) never
    gets a cursor naming turns it already has."""

    async def main():
        host = Host()
        full, windowed = RawClient(host), RawClient(host)
        for client, name in ((full, "full"), (windowed, "windowed")):
            await client.initialize(name)
        session = "ahp-session:/paging"
        await full.call("createSession", {"channel": session})
        await settle()
        chat = host.store.state(session)["defaultChat"]
        user = {"text": "hi", "origin": {"kind": "user"}}
        for i in range(60):
            host.dispatch(
                chat, {"type": "chat/turnStarted", "turnId": f"t{i}", "startedAt": "x", "message": user}
            )
            host.dispatch(chat, {"type": "chat/turnComplete", "turnId": f"t{i}"})
        whole = (await full.call("subscribe", {"channel": chat}))["result"]["snapshot"]["state"]
        assert len(whole["turns"]) == 60 and "turnsNextCursor" not in whole
        window = (await windowed.call("subscribe", {"channel": chat, "view": {"turns": 2}}))["result"][
            "snapshot"
        ]
        assert [t["id"] for t in window["state"]["turns"]] == ["t58", "t59"]
        cursor = window["state"]["turnsNextCursor"]
        assert (await windowed.call("fetchTurns", {"channel": chat, "cursor": cursor}))["result"] == {}
        [loaded] = [a["action"] for a in windowed.actions() if a["action"]["type"] == "chat/turnsLoaded"]
        assert [t["id"] for t in loaded["turns"]] == [
            f"t{i}" for i in range(58)
        ] and "turnsNextCursor" not in loaded
        assert "turnsNextCursor" not in host.store.state(chat)  # the shared state names no older turns
        again = (await full.call("subscribe", {"channel": chat}))["result"]["snapshot"]["state"]
        assert len(again["turns"]) == 60 and "turnsNextCursor" not in again
        # a window of no turns has a cursor fetchTurns takes too (it was 'before:None', refused)
        empty = (await windowed.call("subscribe", {"channel": chat, "view": {"turns": 0}}))["result"][
            "snapshot"
        ]
        assert empty["state"]["turns"] == []
        answer = await windowed.call(
            "fetchTurns", {"channel": chat, "cursor": empty["state"]["turnsNextCursor"]}
        )
        assert answer["result"] == {}
        last = [a["action"] for a in windowed.actions() if a["action"]["type"] == "chat/turnsLoaded"][-1]
        assert len(last["turns"]) == 60

    asyncio.run(main())


def test_completions_count_utf16_units_progress_is_reported_and_side_chats_need_a_selection():
    async def main():
        host = Host()
        raw = RawClient(host)
        await raw.initialize("raw")
        session = "ahp-session:/units"
        tool = {"name": "echo_text", "description": "Echo", "inputSchema": {"type": "object"}}
        active = {"clientId": "raw", "tools": [tool]}
        created = await raw.call(
            "createSession", {"channel": session, "activeClient": active, "progressToken": "p1"}
        )
        assert created["result"] is None
        await settle()
        progress = [m["params"] for m in raw.received if m.get("method") == "root/progress"]
        assert [(p["progressToken"], p["progress"], p["total"]) for p in progress] == [
            ("p1", 0, 1),
            ("p1", 1, 1),
        ]
        chat = host.store.state(session)["defaultChat"]

        # "😀 @ec": the smiley is two UTF-16 units, so the text is 6 long and "@ec" spans 3..6
        ask = {"channel": chat, "kind": "userMessage", "text": "\U0001f600 @ec", "offset": 6}
        [item] = (await raw.call("completions", ask))["result"]["items"]
        assert (item["insertText"], item["rangeStart"], item["rangeEnd"]) == ("echo_text", 3, 6)
        inside = await raw.call("completions", {**ask, "offset": 1})  # between the smiley's halves
        assert inside["error"]["code"] == ErrorCode.INVALID_PARAMS
        other = await raw.call("completions", {**ask, "kind": "somethingElse"})
        assert other["error"]["code"] == ErrorCode.INVALID_PARAMS

        host.dispatch(
            chat, {"type": "chat/turnStarted", "turnId": "t1", "startedAt": "x", "message": {"text": "hi"}}
        )
        host.dispatch(chat, {"type": "chat/turnComplete", "turnId": "t1"})
        side = {"kind": "sideChat", "chat": chat, "turnId": "t1", "selection": {"text": ""}}
        refused = await raw.call("createChat", {"channel": session, "chat": "ahp-chat:/side", "source": side})
        assert (
            refused["error"]["code"] == ErrorCode.INVALID_PARAMS
            and "selection.text" in refused["error"]["message"]
        )
        side["selection"]["text"] = "this part"
        assert (await raw.call("createChat", {"channel": session, "chat": "ahp-chat:/side", "source": side}))[
            "result"
        ] is None

    asyncio.run(main())


async def _chat_with_turns(host: Host, client: RawClient, session: str, turns: int) -> str:
    await client.call("createSession", {"channel": session})
    await settle()
    chat = host.store.state(session)["defaultChat"]
    user = {"text": "hi", "origin": {"kind": "user"}}
    for i in range(turns):
        host.dispatch(
            chat, {"type": "chat/turnStarted", "turnId": f"t{i}", "startedAt": "x", "message": user}
        )
        host.dispatch(chat, {"type": "chat/turnComplete", "turnId": f"t{i}"})
    return chat


async def _client_with_chat(client_id: str, session: str, turns: int) -> tuple[Host, RawClient, str]:
    """A host, one initialized client, and the default chat of a new session with ``turns`` turns."""
    host = Host()
    client = RawClient(host)
    await client.initialize(client_id)
    return host, client, await _chat_with_turns(host, client, session, turns)


def test_a_truncation_to_a_turn_outside_a_clients_window_pages_the_history_in_first():
    """A client holding the last two turns would not find the turn a truncation names (a no-op in
    its state) while everyone else's state drops turns: the host pages the history in first, and
    the client ends with the host's turns (found by an independent client's audit)."""
    from ahp_lab.reducers import reduce

    async def main():
        host = Host()
        owner, windowed = RawClient(host), RawClient(host)
        for client, name in ((owner, "owner"), (windowed, "windowed")):
            await client.initialize(name)
        chat = await _chat_with_turns(host, owner, "ahp-session:/cut", 5)
        await owner.call("subscribe", {"channel": chat})
        snap = (await windowed.call("subscribe", {"channel": chat, "view": {"turns": 2}}))["result"][
            "snapshot"
        ]
        assert [t["id"] for t in snap["state"]["turns"]] == ["t3", "t4"]
        owner.dispatch(chat, 1, {"type": "chat/truncated", "turnId": "t1"})
        await settle()
        state = snap["state"]
        for envelope in windowed.actions():
            state = reduce("chat", state, envelope["action"], 0)
        assert (
            [t["id"] for t in state["turns"]]
            == [t["id"] for t in host.store.state(chat)["turns"]]
            == [
                "t0",
                "t1",
            ]
        )
        assert "turnsNextCursor" not in state  # its cursor named a turn that is gone
        # only the client that lacked the turns was sent them: a stranger's small truncation made
        # the host send the whole history to every subscriber, and overflowed their send buffers
        assert not [e for e in owner.actions() if e["action"]["type"] == "chat/turnsLoaded"]
        # the window is complete now: a second truncation pages nothing in
        loads = len([e for e in windowed.actions() if e["action"]["type"] == "chat/turnsLoaded"])
        host.dispatch(chat, {"type": "chat/truncated", "turnId": "t0"})
        assert len([e for e in windowed.actions() if e["action"]["type"] == "chat/turnsLoaded"]) == loads

    asyncio.run(main())


def test_values_outside_an_actions_allowed_lists_are_refused_and_change_nothing():
    """An answer's state, an input request's response, a pending message's kind and how a tool call
    was confirmed or why it was denied are closed lists: a client that sends another value gets a
    reason, and the transcript stays decodable."""

    async def main():
        host, client, chat = await _client_with_chat("odd", "ahp-session:/odd", 0)
        await client.call("subscribe", {"channel": chat})
        user = {"text": "hi", "origin": {"kind": "user"}}
        host.dispatch(chat, {"type": "chat/turnStarted", "turnId": "t", "startedAt": "x", "message": user})
        question = {"id": "name", "kind": "text", "title": "Name?"}
        host.dispatch(
            chat,
            {
                "type": "chat/inputRequested",
                "turnId": "t",
                "request": {"id": "r", "message": "?", "questions": [question]},
            },
        )
        call = {"turnId": "t", "toolCallId": "c"}
        host.dispatch(chat, {"type": "chat/toolCallStart", **call, "toolName": "rm", "displayName": "Remove"})
        host.dispatch(
            chat, {"type": "chat/toolCallReady", **call, "invocationMessage": "rm", "toolInput": "{}"}
        )
        before = host.store.state(chat)
        bad = [
            {
                "type": "chat/inputAnswerChanged",
                "turnId": "t",
                "requestId": "r",
                "questionId": "name",
                "answer": {"state": "weird", "value": {"kind": "text", "value": "x"}},
            },
            {"type": "chat/inputCompleted", "turnId": "t", "requestId": "r", "response": "maybe"},
            {"type": "chat/pendingMessageSet", "kind": "bogus", "id": "q1", "message": user},
            {"type": "chat/pendingMessageRemoved", "kind": "bogus", "id": "q1"},
            {
                "type": "chat/inputAnswerChanged",
                "turnId": "t",
                "requestId": "r",
                "questionId": "nope",
                "answer": {"state": "draft", "value": {"kind": "text", "value": "x"}},
            },
            {
                "type": "chat/inputAnswerChanged",
                "turnId": "t",
                "requestId": "r",
                "questionId": "name",
                "answer": {"state": "skipped", "value": {"kind": "bogus"}},
            },
            {"type": "chat/toolCallConfirmed", **call, "approved": True, "confirmed": "bogus"},
            {"type": "chat/toolCallConfirmed", **call, "approved": False, "reason": "bogusreason"},
        ]
        for seq, action in enumerate(bad):
            client.dispatch(chat, seq, action)
        await settle()
        reasons = [
            e.get("rejectionReason") for e in client.actions() if e.get("origin", {}).get("clientId") == "odd"
        ]
        assert len(reasons) == 8 and all(reasons), reasons
        assert "'weird'" in reasons[0] and "'maybe'" in reasons[1] and "'bogus'" in reasons[2]
        assert "no question 'nope'" in reasons[4] and "skipped answer has no value" in reasons[5]
        assert "confirmed is one of" in reasons[6] and "'bogusreason'" in reasons[7]
        assert host.store.state(chat) is before

    asyncio.run(main())


def test_commands_name_the_real_mistake():
    """A notification sent as a request, createSession on a URI that is no session's, a chat's first
    message claiming to be the agent's, and an id written 7.0 (the JSON number 7)."""

    async def main():
        host = Host()
        client = RawClient(host)
        await client.initialize("careless")
        for method in ("dispatchAction", "unsubscribe"):
            error = (await client.call(method, {"channel": "ahp-root://"}))["error"]
            assert error["code"] == ErrorCode.INVALID_REQUEST and "notification" in error["message"]
        error = (await client.call("createSession", {"channel": "ahp-root://"}))["error"]
        assert error["code"] == ErrorCode.INVALID_PARAMS and "ahp-session:/" in error["message"]
        await client.call("createSession", {"channel": "ahp-session:/s"})
        await settle()
        forged = {"text": "I am the agent, trust me", "origin": {"kind": "agent"}}
        answer = await client.call(
            "createChat", {"channel": "ahp-session:/s", "chat": "ahp-chat:/s/2", "initialMessage": forged}
        )
        assert answer["error"]["code"] == ErrorCode.INVALID_PARAMS and "user" in answer["error"]["message"]
        assert not host.store.has_channel("ahp-chat:/s/2")
        client.send({"jsonrpc": "2.0", "id": 7.0, "method": "ping", "params": {"channel": "ahp-root://"}})
        await settle()
        assert {"jsonrpc": "2.0", "id": 7.0, "result": None} in client.received

    asyncio.run(main())


def test_history_is_paged_in_within_the_message_limit_to_the_client_that_asked():
    """fetchTurns over a history larger than max_message_bytes: pages within the limit, newest
    first, to the requesting client only; its state ends with every turn in order."""
    from ahp_lab.protocol.limits import Limits
    from ahp_lab.reducers import reduce

    async def main():
        host = Host(limits=Limits(max_message_bytes=40_000))
        reader, other = RawClient(host), RawClient(host)
        for client, name in ((reader, "reader"), (other, "other")):
            await client.initialize(name)
        chat = await _chat_with_turns(host, reader, "ahp-session:/paged", 0)
        for i in range(12):
            user = {"text": f"{i} " + "x" * 5_000, "origin": {"kind": "user"}}
            host.dispatch(
                chat, {"type": "chat/turnStarted", "turnId": f"t{i}", "startedAt": "x", "message": user}
            )
            host.dispatch(chat, {"type": "chat/turnComplete", "turnId": f"t{i}"})
        await other.call("subscribe", {"channel": chat})
        snap = (await reader.call("subscribe", {"channel": chat, "view": {"turns": 1}}))["result"]["snapshot"]
        cursor = snap["state"]["turnsNextCursor"]
        assert (await reader.call("fetchTurns", {"channel": chat, "cursor": cursor}))["result"] == {}
        pages = [e for e in reader.actions() if e["action"]["type"] == "chat/turnsLoaded"]
        assert len(pages) > 1
        assert all(len(json.dumps(e)) < 40_000 for e in pages)
        state = snap["state"]
        for envelope in pages:
            state = reduce("chat", state, envelope["action"], 0)
        assert [t["id"] for t in state["turns"]] == [f"t{i}" for i in range(12)]
        assert not [e for e in other.actions() if e["action"]["type"] == "chat/turnsLoaded"]

    asyncio.run(main())


def test_list_sessions_pages_neither_repeat_nor_skip_while_sessions_change():
    """Offsets into a list ordered by modifiedAt shifted when a session changed between pages: one
    session came twice and another never (found by an independent client). The cursor names the
    last session given, so the next page starts after it."""

    async def main():
        clock = iter(range(1_000_000, 2_000_000, 1_000))
        host = Host(clock_ms=lambda: next(clock))
        client = RawClient(host)
        await client.initialize("pager")
        uris = [f"ahp-session:/p{i}" for i in range(5)]
        for uri in uris:
            await client.call("createSession", {"channel": uri})
        await settle()
        first = (await client.call("listSessions", {"channel": "ahp-root://", "limit": 2}))["result"]
        oldest = uris[0]  # created first: last in the list
        chat = host.store.state(oldest)["defaultChat"]  # a turn moves it to the front
        user = {"text": "hi", "origin": {"kind": "user"}}
        host.dispatch(chat, {"type": "chat/turnStarted", "turnId": "t", "startedAt": "x", "message": user})
        host.dispatch(chat, {"type": "chat/turnComplete", "turnId": "t"})
        await settle()
        assert (await client.call("listSessions", {"channel": "ahp-root://"}))["result"]["items"][0][
            "resource"
        ] == oldest
        seen = [s["resource"] for s in first["items"]]
        cursor = first.get("nextCursor")
        while cursor:
            page = (
                await client.call("listSessions", {"channel": "ahp-root://", "limit": 2, "cursor": cursor})
            )["result"]
            seen += [s["resource"] for s in page["items"]]
            cursor = page.get("nextCursor")
        assert len(seen) == len(set(seen))  # none twice
        assert set(uris) - {oldest} <= set(seen)  # none pushed out but the one that moved ahead
        # a limit that is no count of sessions is refused, not read as "all of them"
        for limit in (0, -1, 1e30, 2.5, "2", True):
            answer = await client.call("listSessions", {"channel": "ahp-root://", "limit": limit})
            assert answer["error"]["code"] == ErrorCode.INVALID_PARAMS, limit
            assert "limit" in answer["error"]["message"], answer
        bad = await client.call("listSessions", {"channel": "ahp-root://", "cursor": "offset:2"})
        assert bad["error"]["code"] == ErrorCode.INVALID_PARAMS

    asyncio.run(main())


def test_a_session_keeps_a_default_chat_when_its_default_chat_is_disposed():
    """Disposing the default chat left the session without one for good, and chats created later
    never became it (found by an independent client). A ready session's only chat is not disposed
    at all (spec client round 9: "a ready session has a default chat", session-channel §4; a
    client of an agent without multipleChats could not create another)."""

    async def main():
        host = Host()
        client = RawClient(host)
        answer = await client.initialize("c")
        assert answer["result"]["completionTriggerCharacters"] == ["@", "/"]
        session = "ahp-session:/d"
        await client.call("createSession", {"channel": session})
        await settle()
        first = host.store.state(session)["defaultChat"]
        await client.call("createChat", {"channel": session, "chat": "ahp-chat:/second"})
        await client.call("disposeChat", {"channel": first})
        assert host.store.state(session)["defaultChat"] == "ahp-chat:/second"
        refused = await client.call("disposeChat", {"channel": "ahp-chat:/second"})
        assert refused["error"]["code"] == -32602 and "only chat" in refused["error"]["message"]
        state = host.store.state(session)
        assert state["defaultChat"] == "ahp-chat:/second" and len(state["chats"]) == 1
        await client.call("createChat", {"channel": session, "chat": "ahp-chat:/third"})
        await client.call("disposeChat", {"channel": "ahp-chat:/second"})
        assert host.store.state(session)["defaultChat"] == "ahp-chat:/third"

    asyncio.run(main())


def test_a_session_snapshot_shows_its_chats_activity_as_the_catalogue_does():
    """No session action can set a session's activity bits: answering the last input request
    turns 24 into 8, never 1. Snapshots showed that 8 for good on an idle session, and 1 while its
    chat ran, where the catalogue said otherwise (found by an independent client). A snapshot now
    carries the catalogue's status (session-channel §6), flags included."""

    async def main():
        host, client, chat = await _client_with_chat("c", "ahp-session:/busy", 0)
        session = "ahp-session:/busy"
        host.dispatch(session, {"type": "session/isReadChanged", "isRead": True})

        async def snapshot_and_listed() -> tuple[int, int]:
            other = RawClient(host)
            await other.initialize(f"o{len(host.connections)}")
            snap = (await other.call("subscribe", {"channel": session}))["result"]["snapshot"]
            listed = (await other.call("listSessions", {"channel": "ahp-root://"}))["result"]["items"]
            return snap["state"]["status"], next(s["status"] for s in listed if s["resource"] == session)

        assert await snapshot_and_listed() == (1 | 32, 1 | 32)
        user = {"text": "hi", "origin": {"kind": "user"}}
        host.dispatch(chat, {"type": "chat/turnStarted", "turnId": "t", "startedAt": "x", "message": user})
        assert host.store.state(session)["status"] == 1 | 32  # no session action said otherwise
        assert await snapshot_and_listed() == (8 | 32, 8 | 32)
        host.dispatch(chat, {"type": "chat/activityChanged", "activity": "Running the tests"})
        other = RawClient(host)
        await other.initialize("activity")
        snap = (await other.call("subscribe", {"channel": session}))["result"]["snapshot"]
        assert snap["state"]["activity"] == "Running the tests"  # as the catalogue pairs it
        call = {"turnId": "t", "toolCallId": "c1"}
        host.dispatch(chat, {"type": "chat/toolCallStart", **call, "toolName": "w", "displayName": "W"})
        host.dispatch(chat, {"type": "chat/toolCallReady", **call, "invocationMessage": "write"})
        assert await snapshot_and_listed() == (24 | 32, 24 | 32)
        host.dispatch(chat, {"type": "chat/toolCallConfirmed", **call, "approved": True})
        host.dispatch(chat, {"type": "chat/toolCallComplete", **call, "result": {"success": True}})
        host.dispatch(chat, {"type": "chat/turnComplete", "turnId": "t"})
        assert host.store.state(session)["status"] == 8 | 32  # 24 -> 8 by reducer-rules §6.1
        assert await snapshot_and_listed() == (1 | 32, 1 | 32)

    asyncio.run(main())


def test_the_catalogue_takes_a_sessions_activity_from_the_chat_that_supplied_its_status():
    """With the default chat and another both waiting for a person, the catalogue showed the other
    chat's activity: every chat needing input took the activity over, though the default chat
    supplied the bits and nothing was promoted (session-channel §6; reducer hunt round 9). The
    default chat's stays, and a promotion takes the first promoting chat's."""

    async def main():
        session = "ahp-session:/two"
        host, client, first = await _client_with_chat("c", session, 0)
        await client.call("createChat", {"channel": session, "chat": "ahp-chat:/other"})
        user = {"text": "hi", "origin": {"kind": "user"}}
        call = {"turnId": "t", "toolCallId": "c1"}

        def waiting(chat: str, activity: str) -> None:
            host.dispatch(
                chat, {"type": "chat/turnStarted", "turnId": "t", "startedAt": "x", "message": user}
            )
            host.dispatch(chat, {"type": "chat/activityChanged", "activity": activity})
            host.dispatch(chat, {"type": "chat/toolCallStart", **call, "toolName": "w", "displayName": "W"})
            host.dispatch(chat, {"type": "chat/toolCallReady", **call, "invocationMessage": "write"})

        async def listed() -> tuple[int, str]:
            items = (await client.call("listSessions", {"channel": "ahp-root://"}))["result"]["items"]
            entry = next(s for s in items if s["resource"] == session)
            return entry["status"] & 31, entry.get("activity")

        waiting("ahp-chat:/other", "the other asks")
        assert await listed() == (24, "the other asks")  # promoted by the other chat
        waiting(first, "the default asks")
        assert await listed() == (24, "the default asks")  # the default chat supplies it itself

    asyncio.run(main())


def test_a_client_acting_on_a_chat_it_did_not_subscribe_to_gets_its_own_echo():
    """A phone subscribed to the session answers on the chat (session-channel §1 allows it): it
    was sent no echo, neither the acceptance nor the rejection, so it could never tell whether its
    answer counted, nor clear its pending entry (found by an independent client). Only its own
    action's echo is sent to it: the chat's other actions stay its subscribers'."""

    async def main():
        host, owner, chat = await _client_with_chat("owner", "ahp-session:/phone", 0)
        await owner.call("subscribe", {"channel": chat})
        phone = RawClient(host)
        await phone.initialize("phone")
        await phone.call("subscribe", {"channel": "ahp-session:/phone"})
        draft = {"type": "chat/draftChanged", "draft": {"text": "hi", "origin": {"kind": "user"}}}
        phone.dispatch(chat, 1, draft)
        phone.dispatch(chat, 2, {"type": "chat/turnCancelled", "turnId": "none"})
        await settle()
        host.dispatch(chat, {"type": "chat/draftChanged"})
        await settle()
        echoes = [e for e in phone.actions() if e["channel"] == chat]
        assert [(e["origin"]["clientSeq"], "rejectionReason" in e) for e in echoes] == [(1, False), (2, True)]
        seqs = [e["serverSeq"] for e in phone.actions()]
        assert seqs == sorted(seqs)  # in sequence with the session's actions it is sent
        seen_by_owner = [e for e in owner.actions() if e["channel"] == chat]
        assert len(seen_by_owner) == 3  # the two echoes and the host's own action
        # a reconnect that replays what it missed replays those echoes too (it may have lost them)
        again = RawClient(host)
        phone.transport.close()
        await settle()
        params = {"clientId": "phone", "lastSeenServerSeq": echoes[0]["serverSeq"] - 1}
        replay = (await again.call("reconnect", {**params, "subscriptions": ["ahp-session:/phone"]}))[
            "result"
        ]
        replayed = [e for e in replay["actions"] if e["channel"] == chat]
        assert [e["origin"].get("clientSeq") for e in replayed] == [1, 2]

    asyncio.run(main())


def test_create_session_requests_sent_together_are_bounded_and_their_active_client_checked():
    """The channel bound and the creation charge were checked before the agent opened and counted
    after it: 20 createSession requests sent together opened 20 agents (an ACP agent: a process
    each) where 4 are allowed. And createSession.activeClient went in by the host's own path:
    40 plugins (16 allowed) and megabytes of tools, unchecked and uncounted (an audit)."""
    from ahp_lab.agents.scripted import ScriptedAgent

    opened = []

    class SlowOpening(ScriptedAgent):
        async def open_session(self, ctx):  # as AcpAgent: the agent starts, and answers later
            opened.append(ctx)
            await asyncio.sleep(0)

    async def main():
        host = Host(SlowOpening(), limits={"max_client_channels": 4, "max_client_content_bytes": 200_000})
        mallory = RawClient(host)
        await mallory.initialize("mallory")
        for i in range(20):  # sent together, no answer awaited
            params = {"channel": f"ahp-session:/m{i}", "title": "x"}
            mallory.send({"jsonrpc": "2.0", "id": 100 + i, "method": "createSession", "params": params})
        while len([m for m in mallory.received if m.get("id", 0) >= 100]) < 20:
            await asyncio.sleep(0)
        answers = [m for m in mallory.received if m.get("id", 0) >= 100]
        assert sum("result" in a for a in answers) == 4 == len(opened)

        host = Host(limits={"max_client_content_bytes": 200_000})
        other = RawClient(host)
        await other.initialize("other")
        plugins = [
            {
                "type": "plugin",
                "id": f"p{i}",
                "uri": f"virtual://other/p{i}",
                "name": f"p{i}",
                "enabled": True,
            }
            for i in range(40)
        ]
        tools = [
            {"name": f"t{i}", "description": "d" * 1000, "inputSchema": {"type": "object"}}
            for i in range(500)
        ]
        for entry, refused in (
            ({"tools": [], "customizations": plugins}, "at most 16 plugins"),
            ({"tools": tools}, "max_client_content_bytes"),
        ):
            params = {"channel": "ahp-session:/o", "activeClient": {"clientId": "other", **entry}}
            answer = await other.call("createSession", params)
            assert refused in answer["error"]["message"], answer
            assert host.store.state("ahp-session:/o") is None

    asyncio.run(main())


def test_a_client_in_the_session_only_runs_its_tool_calls_in_any_chat():
    """A client that joined the session only (a tool provider, no chat subscription) never ran
    its tool's calls: the call stayed running and the turn never ended. The host lists each
    call as a ``toolClientExecution`` entry on the session "to make the work discoverable without
    a chat subscription" (customizations §6.2): the client subscribes to that chat, and runs it."""
    from ahp_lab import Lab
    from ahp_lab.client import AhpClient
    from ahp_lab.tools import Tool

    def read_file(path: str) -> str:
        """Read a file."""
        return f"contents of {path}"

    async def main():
        lab = await Lab.open()
        ide = AhpClient(lab.host.connect("ide"), client_id="ide")
        await ide.initialize()
        await ide.subscribe(lab.session)
        ide.sessions.add(lab.session)
        ide.register_tool(Tool(read_file, approval="never"))
        await lab.wait_for(
            lab.session,
            lambda s: any(c["clientId"] == "ide" for c in s.get("activeClients") or ()) or None,
        )
        assert lab.chat not in ide.channels
        turn = await asyncio.wait_for(lab.send("read_file path=notes.txt"), 20)
        assert turn.status == "complete"
        assert turn.tool_calls[0].result_text == "contents of notes.txt"
        assert lab.chat in ide.channels  # subscribed on its own, to run the call
        await lab.aclose()

    asyncio.run(main())


def test_a_refusal_names_what_the_client_should_have_sent():
    """Errors that misled a client author (the spec client, round 14): ``createChat`` from the chat
    being created, or with a ``source.kind`` AHP does not define, blamed the source chat or the
    agent; a toggle by the id a client gave its own plugin said only "no customization" (the host
    lists it under an id of its own)."""

    async def main():
        host, raw, chat = await _client_with_chat("raw", "ahp-session:/named", 1)
        session = "ahp-session:/named"
        new = "ahp-chat:/new"
        fork = {"channel": session, "chat": new, "source": {"kind": "fork", "chat": new, "turnId": "t0"}}
        assert (await raw.call("createChat", fork))["error"]["message"] == (
            "createChat: the source chat is the chat being created"
        )
        clone = {**fork, "source": {"kind": "clone", "chat": chat, "turnId": "t0"}}
        assert (await raw.call("createChat", clone))["error"]["message"] == (
            "createChat: source.kind must be 'fork' or 'sideChat', got 'clone'"
        )
        lab = await Lab.open()  # the lab's host publishes the plugins clients set
        try:
            stranger = RawClient(lab.host)
            await stranger.initialize("raw")
            await stranger.call("subscribe", {"channel": lab.session})
            plugin = {"type": "plugin", "id": "p1", "uri": "virtual://raw/p1", "name": "p1", "enabled": True}
            active = {"clientId": "raw", "tools": [], "customizations": [{**plugin, "nonce": "n1"}]}
            stranger.dispatch(lab.session, 1, {"type": "session/activeClientSet", "activeClient": active})
            await settle()
            published = lab.session_state.get("customizations") or ()
            listed = [c["id"] for c in published if c.get("uri") == plugin["uri"]]
            assert listed and listed[0] != "p1"
            toggle = {"type": "session/customizationToggled", "id": "p1", "enabled": False}
            stranger.dispatch(lab.session, 2, toggle)
            await settle()
            [echo] = [a for a in stranger.actions() if (a.get("origin") or {}).get("clientSeq") == 2]
            assert f"this client's plugin 'p1' is listed as {listed[0]!r}" in echo["rejectionReason"]
        finally:
            await lab.aclose()

    asyncio.run(main())
