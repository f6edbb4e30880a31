"""Attacker round 12: a stranger holding the token, over the socket (and in process).

- A frame of tiny values: parsing and checking cost time per value, and ``[]`` packs one into
  three characters, so one 14.6 MB frame of them held the host's loop 7 s (every connection
  waited) before it was answered, far under the frame limit. Past ``max_message_items`` a message
  is refused unread, with its reason under its id; a message under it is served as before.
- An action of nested empty arrays: checking and normalizing an action costs microseconds for
  each array or object, so 0.5 MB of them (245,000, under the item limit) held the loop 1.5 s,
  and four such frames queued by the library 4.6 s. Past ``max_action_containers`` an action is
  rejected before it is normalized, and after a large frame the other connections go first.
- ``resourceWrite`` truncating at a position far past the file's end asked to read that many
  bytes: ``MemoryError`` and a traceback in the log per request (3 MB of log a second).
- Requests waiting for the connection's send budget are held parsed: bounded in number only, 64
  of 15 MB each held 600 MB for one connection. They are bounded in characters too.
- A ping flood from a peer that never reads: the WebSocket library answers each ping with a pong
  written straight to the socket, so the host grew by 35 MB a second and never let the peer go.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import struct
from urllib.parse import urlsplit

from ahp_lab.protocol.jsonrpc import ErrorCode

from .conftest import ROOT, arun, open_lab, ping_flood

REFUSED = "the message holds more than 250,000 values and keys"


def _dense(message: dict, count: int) -> str:
    """``message`` as JSON text with ``count`` empty arrays in place of its ``"DENSE"``."""
    return json.dumps(message).replace('"DENSE"', "[" + ",".join(["[]"] * count) + "]")


def test_a_frame_of_tiny_values_is_refused_unread_and_nothing_else_is_lost(connect_stranger):
    async def main():
        async with open_lab() as lab:  # the default limits
            mallory = await connect_stranger(lab, "mallory")
            await mallory.initialize("mallory")
            # 130,000 empty arrays: 260,001 items in 390 KB, past the default of 250,000
            request = {"jsonrpc": "2.0", "id": 7, "method": "listSessions", "params": {"channel": ROOT}}
            request["params"]["x"] = "DENSE"
            mallory.send(_dense(request, 130_000))
            answer = await mallory.response(7)
            assert answer["error"] == {"code": ErrorCode.INVALID_REQUEST, "message": REFUSED}
            # the same as a notification: refused, never applied nor broadcast
            before = lab.host.store.state(lab.chat)
            action = {"type": "chat/titleChanged", "title": "owned", "x": "DENSE"}
            mallory.send(
                _dense(
                    {
                        "jsonrpc": "2.0",
                        "method": "dispatchAction",
                        "params": {"channel": lab.chat, "clientSeq": 1, "action": action},
                    },
                    130_000,
                )
            )
            await mallory.wait(lambda: REFUSED in [e["message"] for e in mallory.errors_without_id()])
            # a message under the limit is served, and the connection still works
            fine = await mallory.call("listSessions", {"channel": ROOT, "x": [[]] * 100_000})
            assert "result" in fine and fine["result"]["items"]
            assert lab.host.store.state(lab.chat) is before  # nothing applied

    arun(main())


def test_the_limit_is_the_labs_to_change(connect_stranger):
    async def main():
        async with open_lab(limits={"max_message_items": 100}) as lab:
            mallory = await connect_stranger(lab, "mallory")
            await mallory.initialize("mallory")
            # commas, colons and brackets inside strings are not counted
            wordy = await mallory.call("listSessions", {"channel": ROOT, "x": ["a, b: [c] {d}," * 50] * 40})
            assert "result" in wordy
            refused = await mallory.call("listSessions", {"channel": ROOT, "x": list(range(100))})
            assert refused["error"]["message"] == "the message holds more than 100 values and keys"

    arun(main())


def _masked_pings(count: int, size: int = 125) -> bytes:
    payload = os.urandom(size)
    key = b"\x00\x00\x00\x00"  # a zero mask leaves the payload as it is
    return (struct.pack("!BB", 0x89, 0x80 | size) + key + payload) * count


def test_a_peer_that_pings_and_never_reads_is_let_go_before_its_pongs_fill_the_host():
    async def main():
        async with open_lab(limits={"max_send_buffer_bytes": 1024 * 1024}) as lab:
            url = urlsplit(await lab.aserve())
            reader, writer = await asyncio.open_connection(url.hostname, url.port)
            key = base64.b64encode(os.urandom(16)).decode()
            writer.write(
                (
                    f"GET /?{url.query} HTTP/1.1\r\nHost: {url.netloc}\r\nUpgrade: websocket\r\n"
                    f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
                ).encode()
            )
            assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 101")
            # never read again: the answers pile up on the host's side of the socket
            return await ping_flood(writer, _masked_pings(2000))

    sent = arun(main())
    # let go once about 1 MiB of pongs waited (the socket buffers hold some more); before, the
    # host took all 400 MB and kept every pong
    assert sent < 100 * 1024 * 1024


def test_an_action_of_nested_arrays_is_rejected_before_it_is_normalized(connect_stranger):
    def draft(containers: int) -> dict:
        deep = [[[[[[[[[]]]]]]]]]  # 9 arrays
        return {
            "type": "chat/draftChanged",
            "draft": {"text": "x", "origin": {"kind": "user"}, "extra": [deep] * (containers // 9)},
        }

    async def main():
        async with open_lab() as lab:
            mallory = await connect_stranger(lab, "mallory")
            await mallory.initialize("mallory")
            await mallory.call("subscribe", {"channel": lab.chat})
            mallory.dispatch(lab.chat, 1, draft(27_000))  # 3,000 x 9 nested, past 25,000
            refused = await mallory.echo(1)
            assert refused["rejectionReason"] == (
                "chat/draftChanged: holds more than 25,000 arrays and objects (Limits.max_action_containers)"
            )
            mallory.dispatch(lab.chat, 2, draft(24_000))
            assert "rejectionReason" not in await mallory.echo(2)

    arun(main())


def test_a_truncating_write_far_past_the_end_keeps_the_file_and_reads_only_it(tmp_path):
    writable = tmp_path / "w"
    writable.mkdir()
    (writable / "a.txt").write_bytes(b"hello")

    async def main():
        async with open_lab(directories=[{"path": writable, "contents": "skill", "writable": True}]) as lab:
            uri = (writable / "a.txt").as_uri()
            params = {"uri": uri, "data": "!", "encoding": "utf-8", "mode": "truncate", "position": 2**52}
            return await lab.client.request("resourceWrite", params)

    assert arun(main()) == {}
    assert (writable / "a.txt").read_bytes() == b"hello!"  # kept up to the position, then the data


def test_requests_waiting_for_their_turn_are_bounded_in_characters(connect_stranger):
    async def main():
        limits = {"max_request_bytes_per_s": 5_000, "max_message_bytes": 200_000}
        async with open_lab(limits=limits) as lab:
            message = {"text": "t" * 30_000, "origin": {"kind": "user"}}
            lab.host.dispatch(
                lab.chat, {"type": "chat/turnStarted", "turnId": "nb", "startedAt": "x", "message": message}
            )
            mallory = await connect_stranger(lab, "mallory")
            await mallory.initialize("mallory")
            await mallory.call("subscribe", {"channel": lab.chat})  # 30,000: past the 20,000 of burst
            pad = "p" * 60_000
            for n in range(5):  # none answered yet: they wait for the budget, held
                mallory.send(
                    {
                        "jsonrpc": "2.0",
                        "id": n,
                        "method": "listSessions",
                        "params": {"channel": ROOT, "x": pad},
                    }
                )
            answers = [await mallory.response(n, timeout=60) for n in range(5)]
            return [a.get("error", {}).get("message", "") for a in answers]

    errors = arun(main())
    assert errors[:3] == ["", "", ""]  # 180,000 characters wait
    assert all("requests waiting for their turn already hold 180," in e for e in errors[3:]), errors


def test_the_notebooks_own_dispatches_are_not_counted_in_items():
    """The item bound guards the host against strangers' dense frames. The notebook's own dispatch
    past it was refused unread with no id to answer, so the cell waited out 30 s for a verdict."""

    async def main():
        async with open_lab() as lab:
            draft = {"text": "x", "origin": {"kind": "user"}, "_meta": {"data": [0] * 300_000}}
            verdict = await asyncio.wait_for(lab.adispatch({"type": "chat/draftChanged", "draft": draft}), 10)
            return verdict.accepted, len(lab.chat_state["draft"]["_meta"]["data"])

    assert arun(main()) == (True, 300_000)
