"""ahp_lab's client against a host that is not ahp_lab's: a scripted WebSocket server on 127.0.0.1,
written here from the spec, that misbehaves the way a stranger's host can. The client must end
every wait, say what went wrong in one sentence, and never take another channel's state."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from websockets.asyncio.server import serve

from ahp_lab.client.connect import connect
from ahp_lab.transport import RpcError

from .conftest import run

SESSION = "ahp-session:/s1"
Script = Callable[[Any, dict], Awaitable[None]]


def _answer(ws: Any, message: dict, result: Any) -> Awaitable[None]:
    return ws.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}))


def _snapshot(resource: str, state: dict, seq: int = 1) -> dict:
    return {"resource": resource, "state": state, "fromSeq": seq}


ROOT_STATE = {"agents": [], "activeSessions": 0}
SESSION_STATE = {"provider": "x", "title": "mine", "status": 1, "lifecycle": "ready", "chats": []}


async def _initialize(ws: Any, message: dict, version: str = "0.8.0") -> None:
    subs = message["params"].get("initialSubscriptions") or []
    snaps = [_snapshot("ahp-root://", ROOT_STATE)] if "ahp-root://" in subs else []
    await _answer(ws, message, {"protocolVersion": version, "serverSeq": 1, "snapshots": snaps})


def _with_session(ws: Any, message: dict) -> Awaitable[None]:
    """Answer ``initialize`` with the root's and the session's snapshots."""
    snapshots = [_snapshot("ahp-root://", ROOT_STATE), _snapshot(SESSION, SESSION_STATE)]
    return _answer(ws, message, {"protocolVersion": "0.8.0", "serverSeq": 1, "snapshots": snapshots})


@asynccontextmanager
async def foreign_host(on_message: Script, on_open: Callable[[Any], Awaitable[None]] | None = None):
    """A host that hands each JSON-RPC message to ``on_message(ws, message)``."""

    async def handler(ws: Any) -> None:
        if on_open is not None:
            await on_open(ws)
        async for text in ws:
            await on_message(ws, json.loads(text))

    async with serve(handler, "127.0.0.1", 0, max_size=None) as server:
        port = server.sockets[0].getsockname()[1]
        yield f"ws://127.0.0.1:{port}/"


def test_a_host_that_never_answers_initialize_is_a_timeout_that_names_the_command():
    async def silent(_ws, _message):
        pass

    async def main():
        async with foreign_host(silent) as url:
            with pytest.raises(TimeoutError, match=r"no answer to initialize within 0.3 s"):
                await asyncio.wait_for(connect(url, reconnect=False, request_timeout=0.3), 10)

    run(main())


def test_a_subscribe_answered_with_another_channels_snapshot_changes_nothing():
    async def hijack(ws, message):
        if message.get("method") == "initialize":
            await _with_session(ws, message)
        elif message.get("method") == "subscribe":  # asked for a chat, answers with the session
            await _answer(
                ws, message, {"snapshot": _snapshot(SESSION, {**SESSION_STATE, "title": "HIJACKED"})}
            )

    async def main():
        async with foreign_host(hijack) as url:
            client = await connect(url, reconnect=False, subscriptions=["ahp-root://", SESSION])
            with pytest.raises(
                RpcError, match=r"answered subscribe ahp-chat:/c1 with a snapshot of 'ahp-session:/s1'"
            ):
                await client.subscribe("ahp-chat:/c1")
            assert client.state(SESSION)["title"] == "mine"
            client.close()

    run(main())


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (
            {"error": {"code": -32005, "message": "unsupported", "data": {"supportedVersions": ["0.9.0"]}}},
            r"speaks none of this client's protocol versions \(it speaks 0.9.0; this client offered 0.8.0",
        ),
        (
            {"result": {"protocolVersion": "9.9.9", "serverSeq": 0, "snapshots": []}},
            r"chose protocol version '9.9.9'",
        ),
        ({"result": None}, r"answer to initialize is not an object"),
    ],
)
def test_a_version_the_client_did_not_offer_is_refused_saying_both_sides(answer, why):
    async def host(ws, message):
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], **answer}))

    async def main():
        async with foreign_host(host) as url:
            with pytest.raises(RpcError, match=why):
                await connect(url, reconnect=False, request_timeout=5)

    run(main())


def test_one_message_over_the_frame_limit_ends_the_connection_once_with_a_reason():
    opened = []

    async def on_open(ws):
        opened.append(ws)

    async def host(ws, message):
        if message.get("method") in ("initialize", "reconnect"):
            await _initialize(ws, message)
            await ws.send(json.dumps({"jsonrpc": "2.0", "method": "action", "params": {"pad": "x" * 70_000}}))

    async def main():
        async with foreign_host(host, on_open) as url:
            client = await connect(url, max_frame_bytes=64_000)
            for _ in range(200):
                if client.closed:
                    break
                await asyncio.sleep(0.05)
            assert client.closed and not client.connected
            error = str(client.reconnector.error)
            assert "larger than this side's frame limit of 64,000 bytes" in error
            assert "connect again with a larger max_frame_bytes" in error
            assert len(opened) == 1  # no resume loop replaying the same message

    run(main())


def test_a_host_briefly_unavailable_is_retried_not_given_up():
    state = {"refuse": 0, "opened": 0}

    async def host(ws, message):
        if message.get("method") == "initialize":
            await _initialize(ws, message)
        elif message.get("method") == "reconnect":
            await _answer(ws, message, {"type": "replay", "actions": []})

    async def process_request(_connection, _request):
        if state["refuse"] > 0:
            state["refuse"] -= 1
            from websockets.datastructures import Headers
            from websockets.http11 import Response

            return Response(503, "Service Unavailable", Headers(), b"")
        return None

    async def main():
        async def handler(ws):
            state["opened"] += 1
            async for text in ws:
                await host(ws, json.loads(text))

        async with serve(handler, "127.0.0.1", 0, process_request=process_request) as server:
            url = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
            client = await connect(url)
            state["refuse"] = 2  # the next two upgrades get HTTP 503
            client.peer.transport.abort()
            await asyncio.wait_for(client.wait_for("ahp-root://", lambda _s: client.connected or None), 20)
            assert not client.closed and client.reconnector.error is None
            assert state["opened"] == 2 and state["refuse"] == 0
            client.close()

    run(main())


def test_a_host_that_drops_the_client_right_after_taking_it_back_is_retried_ever_later():
    """Each drop started the count again, and attempt 0 waits for nothing: a host that answered
    ``reconnect`` and closed kept the client resuming, snapshots and all, as fast as it answered."""
    bounds: list[float] = []

    class Jitter:
        def uniform(self, low: float, high: float) -> float:
            bounds.append(high)
            return 0.0  # no waiting in the test: the bounds asked for are what it checks

    async def host(ws, message):
        if message.get("method") == "initialize":
            await _initialize(ws, message)
        elif message.get("method") == "reconnect":
            await _answer(ws, message, {"type": "replay", "actions": []})
            await ws.close()

    async def main():
        async with foreign_host(host) as url:
            client = await connect(url)
            client.reconnector.rng = Jitter()
            client.peer.transport.abort()
            resumed = client.reconnector.history
            await client.wait_for("ahp-root://", lambda _s: len(resumed) >= 6 or None, 20)
            client.close()
            return resumed

    resumed = run(main())
    assert [r["attempts"] for r in resumed[:6]] == [1] * 6  # each resume took the host's first answer
    assert bounds[:5] == [0.1, 0.2, 0.4, 0.8, 1.6]  # yet each came later than the one before


def _on_ping(initialize: Script, ping: Script) -> Script:
    """A host that answers ``initialize`` with ``initialize`` and a ``ping`` with ``ping``."""

    async def host(ws: Any, message: dict) -> None:
        if message.get("method") == "initialize":
            await initialize(ws, message)
        elif message.get("method") == "ping":
            await ping(ws, message)

    return host


def test_an_envelope_without_a_server_seq_is_not_applied():
    async def ping(ws, message):  # the envelopes come once the client listens
        for seq in (None, "7", 2):
            params = {"channel": SESSION, "action": {"type": "session/titleChanged", "title": f"seq {seq}"}}
            if seq is not None:
                params["serverSeq"] = seq
            await ws.send(json.dumps({"jsonrpc": "2.0", "method": "action", "params": params}))
        await _answer(ws, message, {})

    async def main():
        async with foreign_host(_on_ping(_with_session, ping)) as url:
            client = await connect(url, reconnect=False, subscriptions=["ahp-root://", SESSION])
            titles = []
            client.on_change(lambda channel, _action: titles.append(client.state(channel).get("title")))
            await client.settle(10)
            assert titles == ["seq 2"] and client.last_seen_seq == 2
            client.close()

    run(main())


def test_an_answer_with_neither_result_nor_error_fails_the_request_at_once():
    async def empty_answer(ws, message):
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": message["id"]}))

    async def main():
        async with foreign_host(_on_ping(_initialize, empty_answer)) as url:
            client = await connect(url, reconnect=False)
            with pytest.raises(RpcError, match=r"the answer to request \d+ has neither result nor error"):
                await asyncio.wait_for(client.settle(), 5)  # not the 30 s request timeout
            client.close()

    run(main())


CHAT = "ahp-chat:/c1"


def test_a_send_whose_turn_start_the_host_never_sequences_ends_with_a_timeout_that_says_so():
    from ahp_lab.lab import RemoteLab

    seq = {"n": 1}
    states = {
        "ahp-root://": ROOT_STATE,
        SESSION: {**SESSION_STATE, "chats": [{"resource": CHAT, "title": "c"}], "defaultChat": CHAT},
        CHAT: {"resource": CHAT, "title": "c", "status": 1, "turns": []},
    }

    async def host(ws, message):
        method, params = message.get("method"), message.get("params") or {}
        if method == "initialize":
            await _initialize(ws, message)
        elif method == "subscribe":
            await _answer(ws, message, {"snapshot": _snapshot(params["channel"], states[params["channel"]])})
        elif (
            method == "dispatchAction" and params["action"]["type"] != "chat/turnStarted"
        ):  # that one: dropped
            seq["n"] += 1
            envelope = {
                "channel": params["channel"],
                "action": params["action"],
                "serverSeq": seq["n"],
                "origin": {"clientId": "remote", "clientSeq": params["clientSeq"]},
            }
            await ws.send(json.dumps({"jsonrpc": "2.0", "method": "action", "params": envelope}))

    async def main():
        async with foreign_host(host) as url:
            lab = await RemoteLab.open(url, session=SESSION, client_id="remote", reconnect=False)
            lab.client.request_timeout = 0.5
            with pytest.raises(TimeoutError, match=r"has not sequenced the start of turn .* within 0.5 s"):
                await asyncio.wait_for(lab.send("hello"), 10)  # not a wait without end
            lab.client.close()

    run(main())


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/?tkn=S3CRET-tkn-x", "ws:///?tkn=S3CRET-tkn-x"])
def test_a_mistyped_url_is_refused_without_quoting_its_token(url):
    """The library's error quoted the whole URL: a notebook's traceback (and the saved .ipynb)
    showed the token."""

    async def main():
        with pytest.raises(ValueError) as refused:
            await connect(url, reconnect=False)
        return str(refused.value)

    message = run(main())
    assert "S3CRET" not in message and message.split(" ")[0].rstrip("/:") in url


@pytest.mark.parametrize(
    "answer",
    [
        {"type": "replay", "actions": 5},
        {"type": "replay", "missing": [7]},
        {"type": "snapshot", "snapshots": [{"resource": "ahp-root://"}]},  # no state
        {"type": "snapshot", "snapshots": [{"resource": "ahp-root://", "state": {}, "fromSeq": "abc"}]},
    ],
)
def test_a_malformed_reconnect_answer_ends_resuming_with_the_reason(answer):
    """The reconnector died on the answer (TypeError, KeyError) and left the client neither
    connected nor closed, with no error: every later call waited out its timeout."""
    opened = []

    async def host(ws, message):
        if message.get("method") == "initialize":
            await _initialize(ws, message)
        elif message.get("method") == "reconnect":
            await _answer(ws, message, answer)

    async def on_open(ws):
        opened.append(ws)

    async def main():
        async with foreign_host(host, on_open) as url:
            client = await connect(url)
            closed = []
            client.on_change(
                lambda channel, event: closed.append(event) if event["type"] == "$closed" else None
            )
            client.peer.transport.abort()
            await client.wait_for("ahp-root://", lambda _s: client.reconnector.task is not None or None, 10)
            await asyncio.wait_for(client.reconnector.task, 20)
            assert client.closed and not client.connected
            assert "the host's answer to reconnect is malformed" in str(client.reconnector.error)
            assert closed and "malformed" in closed[-1]["reason"]
            await asyncio.wait_for(opened[-1].wait_closed(), 10)  # the socket it resumed on is closed
            assert len(opened) == 2  # given up, not retried in a loop

    run(main())


def test_rejections_are_kept_only_for_actions_this_client_sent():
    """A host's envelopes carrying our client id and a rejection were all kept, whole: 200 of 1 MB
    grew the kernel by 212 MB."""

    async def host(ws, message):
        method, params = message.get("method"), message.get("params") or {}
        if method == "initialize":
            await _with_session(ws, message)
        elif method == "dispatchAction":
            for n in range(50):  # rejections of actions never sent, then of the one that was
                forged = {
                    "channel": SESSION,
                    "action": {"type": "session/titleChanged", "title": "x" * 100_000},
                    "serverSeq": 2 + n,
                    "origin": {"clientId": "me", "clientSeq": 1000 + n},
                    "rejectionReason": "no",
                }
                await ws.send(json.dumps({"jsonrpc": "2.0", "method": "action", "params": forged}))
            real = {
                "channel": SESSION,
                "action": params["action"],
                "serverSeq": 100,
                "origin": {"clientId": "me", "clientSeq": params["clientSeq"]},
                "rejectionReason": "r" * 10_000,
            }
            await ws.send(json.dumps({"jsonrpc": "2.0", "method": "action", "params": real}))
        elif method == "ping":
            await _answer(ws, message, {})

    async def main():
        async with foreign_host(host) as url:
            client = await connect(
                url, reconnect=False, client_id="me", subscriptions=["ahp-root://", SESSION]
            )
            seq = client.dispatch(SESSION, {"type": "session/titleChanged", "title": "mine too"})
            await client.settle(10)
            rejections = list(client.rejections)
            client.close()
            return seq, rejections

    seq, rejections = run(main())
    assert [(r["clientSeq"], r["action"]["title"]) for r in rejections] == [(seq, "mine too")]
    assert len(rejections[0]["reason"]) == 2000


@pytest.mark.parametrize("pad", ["objects", "emoji"])
def test_a_flood_before_the_subscribe_answer_fails_that_subscribe_instead_of_growing_without_end(pad):
    """Envelopes waiting for a subscribe's snapshot were kept without bound (200 x 4 MB: +797 MB).
    The bound counts memory, not JSON text: 3 MB of empty objects hold some 60 MB, and an emoji
    four bytes where the count had one (17 Mi of them passed a 64 MiB bound)."""
    from ahp_lab.client.answers import MAX_EARLY_BYTES

    chat = "ahp-chat:/s1/c1"
    if pad == "objects":
        padded, envelopes = [{}] * 50_000, MAX_EARLY_BYTES // (50_000 * 64) + 2
    else:
        padded, envelopes = "\U0001f600" * (1 << 20), MAX_EARLY_BYTES // (4 << 20) + 1

    async def host(ws, message):
        method = message.get("method")
        if method == "initialize":
            await _initialize(ws, message)
        elif method == "subscribe":
            action = {"type": "session/metaChanged", "_meta": {"pad": padded}}
            for n in range(envelopes):
                envelope = {"channel": chat, "action": action, "serverSeq": 2 + n}
                frame = {"jsonrpc": "2.0", "method": "action", "params": envelope}
                await ws.send(json.dumps(frame, ensure_ascii=False))
            await _answer(
                ws, message, {"snapshot": _snapshot(chat, {"resource": chat, "title": "c", "turns": []})}
            )

    async def main():
        async with foreign_host(host) as url:
            client = await connect(url, reconnect=False)
            with pytest.raises(
                ValueError, match=r"more than 67,108,864 bytes of actions before ahp-chat:/s1/c1's"
            ):
                await client.subscribe(chat)
            assert chat not in client.channels and not client._early and client._early_pool == [0]
            client.close()

    run(main())


def _sending_on_ping(*numbered: tuple[int, dict]) -> Script:
    """A host with the root and SESSION that answers a ``ping`` after sending SESSION's
    envelopes, each ``(serverSeq, action)``: a client's ``settle`` has them all applied."""

    async def ping(ws: Any, message: dict) -> None:
        for seq, action in numbered:
            envelope = {"channel": SESSION, "action": action, "serverSeq": seq}
            await ws.send(json.dumps({"jsonrpc": "2.0", "method": "action", "params": envelope}))
        await _answer(ws, message, {})

    return _on_ping(_with_session, ping)


async def _logged_client(url: str) -> tuple[Any, Any]:
    """A client of the root and SESSION whose ClientLog records from their first snapshots on."""
    from ahp_lab.lab.clientlog import ClientLog

    log = ClientLog(client_id="me")
    client = await connect(url, reconnect=False, client_id="me", subscriptions=[])
    client.on_confirmed(log.record)
    await client.initialize(["ahp-root://", SESSION])
    return client, log


def test_a_lone_surrogate_from_the_host_is_exported_escaped_not_a_failed_export(tmp_path):
    """A title with the JSON escape \\ud800 went into state and the log; export then raised
    UnicodeEncodeError and left a truncated file, every time, while the record was kept."""
    from ahp_lab.lab.clientlog import ClientLog

    async def host(ws, message):
        if message.get("method") == "initialize":
            snapshots = [
                _snapshot("ahp-root://", ROOT_STATE),
                _snapshot(SESSION, {**SESSION_STATE, "title": "a\ud800b"}),
            ]
            text = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "result": {"protocolVersion": "0.8.0", "snapshots": snapshots},
                }
            )
            await ws.send(text)  # json.dumps writes the lone half as the escape \ud800

    async def main():
        async with foreign_host(host) as url:
            client, log = await _logged_client(url)
            client.close()
            return log

    log = run(main())
    out = tmp_path / "client.jsonl"
    log.export(out)
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    titles = [line["snapshot"]["state"].get("title") for line in lines if "snapshot" in line]
    assert "a\ud800b" in titles  # read back as it came
    assert ClientLog.load(out).state(SESSION)["title"] == "a\ud800b"


def test_an_envelope_nested_past_what_the_client_reads_is_refused_and_the_rest_displays():
    """An action nested 500 deep was applied and logged; displaying ``lab.transitions`` then
    raised RecursionError. The parser now refuses it, and everything else still shows."""
    deep: dict = {}
    inner = deep
    for _ in range(250):  # 500 levels
        inner["a"] = [{}]
        inner = inner["a"][0]

    host = _sending_on_ping(
        (2, {"type": "session/metaChanged", "_meta": deep}),
        (3, {"type": "session/metaChanged", "_meta": {"fine": True}}),
    )

    async def main():
        async with foreign_host(host) as url:
            client, log = await _logged_client(url)
            await client.settle(10)
            meta = client.state(SESSION).get("_meta")
            client.close()
            return log, meta

    log, meta = run(main())
    assert meta == {"fine": True}
    assert "session/metaChanged" in log.transitions._repr_html_()


def test_a_hosts_error_message_is_raised_on_one_line_without_terminal_escapes():
    """A host's refusal went into the exception and the client's log as sent: terminal escapes
    (clearing the screen of whoever reads the log) and line breaks (forged log lines), any length."""

    async def host(ws, message):
        if message.get("method") == "initialize":
            await _initialize(ws, message)
        elif message.get("method") == "subscribe":
            text = "no\x1b[2J\nWARNING forged line\r\u2028\u202e" + "z" * 100_000
            error = {"code": -32602, "message": text}
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}))

    async def main():
        async with foreign_host(host) as url:
            client = await connect(url, reconnect=False)
            with pytest.raises(RpcError) as refused:
                await client.subscribe(SESSION)
            client.close()
            return refused.value.message

    message = run(main())
    assert message.startswith("no [2J WARNING forged line")
    assert not any(c in message for c in "\x1b\n\r\u2028\u202e")
    assert len(message) < 2_100 and message.endswith("more characters]")


def test_a_hosts_notification_cannot_pass_for_one_of_the_clients_own_events():
    """A notification whose params carried a ``type``, or whose method was a bare name
    (``missing``), became the client's own ``$missing``: the lab forgot a chat it was still
    subscribed to. Only the protocol's methods (each with a ``/``) become events, as themselves."""

    async def host(ws, message):
        if message.get("method") == "initialize":
            await _with_session(ws, message)
        elif message.get("method") == "ping":
            forged = [("root/progress", {"type": "$missing"}), ("missing", {}), ("closed", {})]
            for method, params in forged:
                notification = {"jsonrpc": "2.0", "method": method, "params": {"channel": SESSION, **params}}
                await ws.send(json.dumps(notification))
            await _answer(ws, message, {})

    async def main():
        async with foreign_host(host) as url:
            client = await connect(url, reconnect=False, subscriptions=["ahp-root://", SESSION])
            seen = []
            client.on_change(lambda channel, event: seen.append(event["type"]))
            await client.settle(10)
            subscribed = SESSION in client.channels
            client.close()
            return seen, subscribed

    assert run(main()) == (["$root/progress"], True)


@pytest.mark.parametrize("unreadable", ["nan", "deep"])
def test_a_reconnect_answer_the_client_cannot_read_is_a_refusal_at_once(unreadable):
    """An answer the parser refused (NaN, nested past the read depth) was answered with an error
    while the request waited out its timeout; the reconnector then retried for ever."""
    opened = []
    body = "NaN" if unreadable == "nan" else "[" * 300 + "]" * 300

    async def host(ws, message):
        if message.get("method") == "initialize":
            await _initialize(ws, message)
        elif message.get("method") == "reconnect":
            head = f'{{"jsonrpc":"2.0","id":{json.dumps(message["id"])},'
            await ws.send(head + '"result":{"type":"replay","actions":' + body + "}}")

    async def on_open(ws):
        opened.append(ws)

    async def main():
        async with foreign_host(host, on_open) as url:
            client = await connect(url, request_timeout=60)
            client.peer.transport.abort()
            await client.wait_for("ahp-root://", lambda _s: client.reconnector.task is not None or None, 10)
            await asyncio.wait_for(client.reconnector.task, 20)  # not the 60 s request timeout
            # the unreadable answer is a refusal: the client initializes again on the same socket
            assert client.connected and client.reconnector.error is None
            assert client.reconnector.history[-1]["mode"] == "initialize" and len(opened) == 2
            client.close()

    run(main())


def test_what_a_replay_or_a_fallback_names_touches_only_the_clients_own_channels():
    """A fallback subscribe answered with another channel's snapshot installed that channel; a
    replay listing 3.5 M missing channels fired an event for each."""
    other = "ahp-chat:/elsewhere/x"
    state = {"drops": 0}

    async def host(ws, message):
        method, params = message.get("method"), message.get("params") or {}
        if method == "initialize":
            if params.get("initialSubscriptions") and state["drops"]:
                await ws.send(
                    json.dumps(
                        {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32602, "message": "gone"}}
                    )
                )
            else:
                await _with_session(ws, message)
        elif method == "reconnect":
            await ws.send(
                json.dumps(
                    {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32602, "message": "no"}}
                )
            )
        elif method == "subscribe":
            await _answer(ws, message, {"snapshot": _snapshot(other, {"title": "INJECTED"})})

    async def main():
        async with foreign_host(host) as url:
            client = await connect(url, subscriptions=["ahp-root://", SESSION])
            state["drops"] += 1
            client.peer.transport.abort()
            await client.wait_for("ahp-root://", lambda _s: client.reconnector.task is not None or None, 10)
            await asyncio.wait_for(client.reconnector.task, 20)
            channels = set(client.channels)
            client.close()
            return channels

    channels = run(main())
    assert other not in channels and SESSION not in channels  # it could not be resubscribed


def test_an_envelope_numbered_past_what_json_carries_is_not_applied():
    """serverSeq 2**200 froze the channel: every later envelope counted as stale."""

    host = _sending_on_ping(
        (2**200, {"type": "session/titleChanged", "title": "frozen"}),
        (2, {"type": "session/titleChanged", "title": "applied"}),
    )

    async def main():
        async with foreign_host(host) as url:
            client = await connect(url, reconnect=False, subscriptions=["ahp-root://", SESSION])
            await client.settle(10)
            title, seq = client.state(SESSION)["title"], client.last_seen_seq
            client.close()
            return title, seq

    assert run(main()) == ("applied", 2)


def test_a_snapshot_whose_state_is_not_an_object_is_refused_with_the_reason():
    async def host(ws, message):
        if message.get("method") == "initialize":
            await _initialize(ws, message)
        elif message.get("method") == "subscribe":
            await _answer(ws, message, {"snapshot": _snapshot("ahp-chat:/c9", 7)})

    async def main():
        async with foreign_host(host) as url:
            client = await connect(url, reconnect=False)
            with pytest.raises(RpcError, match="the snapshot of 'ahp-chat:/c9' has no state object"):
                await client.subscribe("ahp-chat:/c9")
            assert "ahp-chat:/c9" not in client.channels
            client.close()

    run(main())


def test_a_resume_that_fails_gives_back_what_its_channels_held_before_their_snapshots():
    """A resume that failed after the host sent envelopes (a dropped socket, a timeout) kept their
    bytes in the client's pool for good: a flaky host filled it, and then every subscribe, and the
    next resume, was refused."""
    state = {"reconnects": 0}

    async def host(ws, message):
        if message.get("method") == "initialize":
            await _with_session(ws, message)
        elif message.get("method") == "reconnect":
            state["reconnects"] += 1
            if state["reconnects"] == 1:  # envelopes before the answer, then the socket goes
                padded = {"type": "session/metaChanged", "_meta": {"pad": [{}] * 50_000}}
                for n in range(10):
                    envelope = {"channel": SESSION, "action": padded, "serverSeq": 2 + n}
                    await ws.send(json.dumps({"jsonrpc": "2.0", "method": "action", "params": envelope}))
                await ws.close()
            else:
                await _answer(ws, message, {"type": "replay", "actions": []})

    async def main():
        async with foreign_host(host) as url:
            client = await connect(url, subscriptions=["ahp-root://", SESSION])
            client.peer.transport.abort()
            await client.wait_for("ahp-root://", lambda _s: client.reconnector.task is not None or None, 10)
            await asyncio.wait_for(client.reconnector.task, 20)
            assert client.connected and state["reconnects"] == 2
            pool = list(client._early_pool)
            client.close()
            return pool

    assert run(main()) == [0]


def test_a_message_of_millions_of_values_is_refused_unread_and_the_client_goes_on():
    """One frame of 100 MB of empty arrays from a host took an attached kernel to 3 GB and held its
    loop over 20 s (attacker round 21): the client parsed any message up to its frame limit. A
    message from a host elsewhere holding more than HOST_MAX_ITEMS values and keys is refused
    unread: a subscribe answered so fails at once with the reason, and the connection goes on."""
    from ahp_lab.client.connect import HOST_MAX_ITEMS

    bomb = "[" + "[]," * HOST_MAX_ITEMS + "[]]"

    async def flood(ws, message):
        if message.get("method") == "initialize":
            await _with_session(ws, message)
        elif message.get("method") == "subscribe":
            head = '{"provider": "x", "title": "t", "status": 1, "lifecycle": "ready", "chats": '
            snapshot = '{"resource": "ahp-session:/s2", "state": ' + head + bomb + '}, "fromSeq": 1}'
            await ws.send(
                f'{{"jsonrpc": "2.0", "id": {message["id"]}, "result": {{"snapshot": {snapshot}}}}}'
            )
        elif message.get("method") == "ping":
            await _answer(ws, message, {})

    async def main():
        async with foreign_host(flood) as url:
            client = await connect(url, reconnect=False)
            try:
                with pytest.raises(RpcError, match=f"more than {HOST_MAX_ITEMS:,} values and keys"):
                    await client.subscribe("ahp-session:/s2")
                assert client.connected and client.state("ahp-root://") == ROOT_STATE
            finally:
                client.close()

    run(main())
