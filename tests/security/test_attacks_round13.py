"""Attacker round 13: what one message costs the host's loop, and a hostile host against our client.

- The scripted agent (``ahp-lab serve``'s default) chose its scenario with regular expressions
  over the whole prompt: a prompt naming a tool and then one long word took 10 s of the loop for
  40,000 characters (every start position inside the word was tried again), and each of the
  stranger's tools cost 33 ms per megabyte of prompt (1,000 tools: 34 s). Every connection waited.
  It now reads the prompt's first ``PROMPT_READ`` characters, and finds names without going back.
- A host that pings and never reads: the WebSocket library answers each ping with a pong written
  straight to the socket, so our client grew 30 MB a second (1.4 GB in 45 s) and still said it was
  connected. It lets the host go past ``max_send_buffer_bytes``, as the host does a client.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import time

from ahp_lab.transport import connect_websocket

from .conftest import arun, open_lab, ping_flood


def _client_tools(count: int) -> list[dict]:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    return [{"name": f"tool_{i}", "title": f"tool {i} x", "inputSchema": schema} for i in range(count)]


def test_a_long_prompt_naming_one_of_many_tools_does_not_hold_the_hosts_loop(connect_stranger):
    """160,000 characters of prompt after a tool's name, with 2,000 tools in the session. Before,
    the agent's first words came after a minute of the host's loop (a megabyte: hours); now at
    once, and the tool named before the long word is the one called."""

    async def main():
        async with open_lab() as lab:
            mallory = await connect_stranger(lab, "mallory")
            await mallory.initialize("mallory")
            await mallory.call("subscribe", {"channel": lab.session})
            await mallory.call("subscribe", {"channel": lab.chat})
            active = {"clientId": "mallory", "tools": _client_tools(2000)}
            mallory.dispatch(lab.session, 1, {"type": "session/activeClientSet", "activeClient": active})
            assert "rejectionReason" not in await mallory.echo(1)
            text = "please run tool_1999 a=[ " + "a" * 100_000 + " a=[ a=[ " * 10_000
            message = {"text": text, "origin": {"kind": "user"}}
            turn = {"type": "chat/turnStarted", "turnId": "m1", "startedAt": "x", "message": message}
            started = time.monotonic()
            mallory.dispatch(lab.chat, 2, turn)
            assert "rejectionReason" not in await mallory.echo(2)

            def first_words():
                active_turn = lab.host.store.state(lab.chat).get("activeTurn") or {}
                return any(p.get("kind") == "markdown" for p in active_turn.get("responseParts") or ())

            await mallory.wait(first_words, timeout=20)
            # the loop is held while the scenario is chosen, so a timeout cannot fire meanwhile:
            # the time it took is the check (about 40 s before, milliseconds now)
            assert time.monotonic() - started < 10
            said = lab.host.store.state(lab.chat)["activeTurn"]["responseParts"][0]["content"]
            assert "`tool_1999`" in str(said)  # the tool named before the long word is the one called

    arun(main())


def _accept(key: str) -> str:
    digest = hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()
    return base64.b64encode(digest).decode()


def test_a_host_that_pings_and_never_reads_is_let_go_before_its_pongs_fill_the_client():
    """A hostile host on 127.0.0.1 finishes the handshake, then only writes pings. Before, our
    client kept every pong (400 MB here, and on); now it lets the host go once about 1 MiB waits."""
    sent = 0

    async def host(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal sent
        request = await reader.readuntil(b"\r\n\r\n")
        key = next(
            line.split(b":", 1)[1].strip().decode()
            for line in request.split(b"\r\n")
            if line.lower().startswith(b"sec-websocket-key:")
        )
        writer.write(
            (
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Accept: {_accept(key)}\r\n\r\n"
            ).encode()
        )
        burst = (b"\x89\x7d" + b"p" * 125) * 2000  # unmasked pings of 125 bytes, host to client
        sent = await ping_flood(writer, burst)  # the pongs pile up on the client's side of the socket

    async def main():
        server = await asyncio.start_server(host, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            transport = await connect_websocket(f"ws://127.0.0.1:{port}/", max_send_buffer_bytes=1024 * 1024)
            closed = asyncio.get_running_loop().create_future()
            transport.set_receiver(lambda text: None, lambda: closed.done() or closed.set_result(True))
            await asyncio.wait_for(closed, timeout=60)
            transport.close()

    arun(main())
    assert sent < 100 * 1024 * 1024
