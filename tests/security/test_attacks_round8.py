"""Attacks from the eighth round: one request's cost, and what a stranger's parameters put in state."""

from __future__ import annotations

import asyncio

from ahp_lab.host.connection import MAX_COMPLETION_ITEMS

from .conftest import Stranger, arun, joined, open_lab


def test_one_completions_request_costs_the_text_once_not_once_per_item(connect_stranger):
    """Each item's range was converted to UTF-16 by scanning the text before it again: 300 tools
    the stranger published and a megabyte of text froze the host for every client for 15 s. Each
    position is now converted once, and an answer lists at most MAX_COMPLETION_ITEMS items."""

    async def main():
        async with open_lab() as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            tools = [
                {"name": f"t{i}", "description": "d", "inputSchema": {"type": "object"}} for i in range(2000)
            ]
            active = {"clientId": "mallory", "tools": tools}
            mallory.dispatch(lab.session, 1, {"type": "session/activeClientSet", "activeClient": active})
            assert "rejectionReason" not in await mallory.echo(1)
            text = "😀" + "x" * 999_990 + " @t1"
            units = len(text.encode("utf-16-le")) // 2
            params = {"channel": lab.chat, "kind": "userMessage", "text": text, "offset": units}
            # 2,000 items over a megabyte would have taken minutes: the call's own 10 s bound fails it
            answer = await mallory.call("completions", params)
            assert "result" in answer, answer
            items = answer["result"]["items"]
            assert len(items) == MAX_COMPLETION_ITEMS
            assert all(i["insertText"].startswith("t1") for i in items)
            # the range is the word "@t1", in UTF-16 units (the emoji counts two)
            assert {(i["rangeStart"], i["rangeEnd"]) for i in items} == {(units - 3, units)}

    arun(main())


def test_sockets_that_never_finish_their_handshake_cannot_lock_out_a_token_holder():
    """Without the token, 1,050 sockets that sent nothing took all of the host's file descriptors
    (accept failed with EMFILE) and locked out every user. At most MAX_OPENING sockets wait in
    their handshake; a new one lets the oldest go, so a real client still gets in."""
    from urllib.parse import urlsplit

    from ahp_lab.transport import connect_websocket
    from ahp_lab.transport.websocket import MAX_OPENING

    async def main():
        async with open_lab() as lab:
            url = await lab.aserve()
            port = urlsplit(url).port
            idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(MAX_OPENING + 20)]

            async def let_go(reader: asyncio.StreamReader) -> bool:
                try:
                    return await asyncio.wait_for(reader.read(1), 5) == b""  # the handshake timeout is 10 s
                except ConnectionResetError:
                    return True

            # the first twenty were let go as the later ones arrived
            assert all([await let_go(reader) for reader, _ in idle[:20]])
            transport = await connect_websocket(url)
            peer = Stranger(transport)
            assert "result" in await peer.initialize("alice")
            peer.close()
            for _, writer in idle:
                writer.close()

    arun(main())


def test_a_header_that_decides_admission_given_twice_is_refused_not_a_server_error(caplog):
    """Two Origin or two Authorization headers made the token check raise: HTTP 500 and an ERROR
    with a traceback for every such request, a log anyone could flood without the token."""
    from urllib.parse import urlsplit

    async def main():
        async with open_lab() as lab:
            port = urlsplit(await lab.aserve()).port
            statuses = []
            for twice in ("Origin: http://localhost", "Authorization: Bearer a"):
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(
                    (
                        "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                        f"{twice}\r\n{twice}\r\n\r\n"
                    ).encode()
                )
                statuses.append((await reader.readline()).decode().strip())
                writer.close()
            assert statuses == ["HTTP/1.1 400 Bad Request"] * 2

    with caplog.at_level("WARNING"):
        arun(main())
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
