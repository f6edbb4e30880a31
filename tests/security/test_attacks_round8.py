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
    from ahp_lab.transport.websocket_server import MAX_OPENING

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


def _multi_directory_agent():
    from ahp_lab.agents.scripted import ScriptedAgent

    class MultiDirAgent(ScriptedAgent):
        def info(self):
            info = dict(super().info())
            info["capabilities"] = {**(info.get("capabilities") or {}), "multipleWorkingDirectories": {}}
            return info

    return MultiDirAgent()


def test_working_directories_are_plain_uris_and_each_is_counted_in_its_own_slot(connect_stranger, tmp_path):
    """A query made the same folder a new entry each time (file:///work?<900 KB>), and every
    directory was counted in one slot keyed on a field the action does not have: 40 of them grew
    the state to 36 MB while 900 KB were counted, and removing any one gave back the lot."""
    from ahp_lab.host.resources import file_uri

    folders = [tmp_path / ("d" * 200 + str(n)) for n in range(5)]
    for folder in folders:
        folder.mkdir()

    async def main():
        async with open_lab(roots=[tmp_path], agent=_multi_directory_agent()) as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            counted = lab.host.client_content
            for seq, query in enumerate(("?" + "q" * 1000, "#frag", "?"), 1):
                set_it = {"type": "session/workingDirectorySet", "directory": file_uri(folders[0]) + query}
                mallory.dispatch(lab.session, seq, set_it)
                assert "query or a fragment" in (await mallory.echo(seq))["rejectionReason"]
            assert counted.total == 0
            for seq, folder in enumerate(folders, 10):
                set_it = {"type": "session/workingDirectorySet", "directory": file_uri(folder)}
                mallory.dispatch(lab.session, seq, set_it)
                assert "rejectionReason" not in await mallory.echo(seq)
            assert counted.total > 5 * 200
            each = counted.total // 5
            removed = {"type": "session/workingDirectoryRemoved", "directory": file_uri(folders[0])}
            mallory.dispatch(lab.session, 20, removed)
            assert "rejectionReason" not in await mallory.echo(20)
            assert counted.total == 4 * each  # its own slot, not everyone's

    arun(main())


def test_what_create_chat_and_create_session_put_in_state_is_counted(connect_stranger, tmp_path):
    """createChat listed one working directory 524,000 times in a 16 MB message: 12 chats took the
    host from 45 MB to 725 MB with nothing counted, and titles of a megabyte were not counted
    either. A folder listed twice is one, and what the parameters put in state is counted in the
    new channel (given back when it is disposed), refused past max_client_content_bytes."""
    from ahp_lab.host.resources import file_uri

    work = tmp_path / "work"
    work.mkdir()

    async def main():
        limits = {"max_client_content_bytes": 300_000}
        async with open_lab(roots=[tmp_path], agent=_multi_directory_agent(), limits=limits) as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            counted = lab.host.client_content
            lab.host.dispatch(
                lab.session, {"type": "session/workingDirectorySet", "directory": file_uri(work)}
            )
            many = [file_uri(work)] * 50_000
            params = {"channel": lab.session, "chat": "ahp-chat:/m1", "workingDirectories": many}
            assert "error" not in await mallory.call("createChat", params)
            assert lab.host.store.state("ahp-chat:/m1")["workingDirectories"] == [file_uri(work)]
            session = "ahp-session:/m"
            answer = await mallory.call("createSession", {"channel": session, "title": "t" * 200_000})
            assert "error" not in answer
            await mallory.wait(lambda: lab.host.store.state(session) is not None)
            assert 200_000 < counted.total < 300_000
            answer = await mallory.call(
                "createSession", {"channel": "ahp-session:/m2", "title": "t" * 200_000}
            )
            assert "max_client_content_bytes" in answer["error"]["message"]
            assert lab.host.store.state("ahp-session:/m2") is None
            assert "error" not in await mallory.call("disposeSession", {"channel": session})
            assert counted.total < 1_000  # the session's title went with it

    arun(main())


def test_a_host_started_in_the_home_directory_never_hands_out_its_hidden_folders(
    connect_stranger, tmp_path, monkeypatch
):
    """The default root is the kernel's working directory, often ~: a stranger named ~/.ssh as a
    working directory and read the private key from it."""
    from ahp_lab.host.resources import file_uri

    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    (home / "project").mkdir()
    monkeypatch.setenv("HOME", str(home))

    async def main():
        async with open_lab(roots=[home]) as lab:
            mallory = await connect_stranger(lab, "mallory")
            await mallory.initialize("mallory")
            for folder, allowed in ((home / ".ssh", False), (home / "project", True)):
                uri = "ahp-session:/" + folder.name.strip(".")
                answer = await mallory.call(
                    "createSession", {"channel": uri, "workingDirectories": [file_uri(folder)]}
                )
                assert ("error" not in answer) is allowed, answer
                if not allowed:
                    assert "hidden or app data folder of the user's home" in answer["error"]["message"]

    arun(main())


async def _slow_link(port: int, rate: float) -> asyncio.Server:
    """A TCP relay to ``port`` that carries the host's bytes to the client at ``rate`` bytes/s."""

    async def relay(reader, writer, paced: bool) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
                if paced:
                    await asyncio.sleep(len(data) / rate)  # the link's pace, not a synchronization
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def handle(client_reader, client_writer) -> None:
        host_reader, host_writer = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.gather(
            relay(client_reader, host_writer, False), relay(host_reader, client_writer, True)
        )

    return await asyncio.start_server(handle, "127.0.0.1", 0)


def test_a_live_client_on_a_slow_link_keeps_its_id_when_a_stranger_floods_it_and_claims_it():
    """A stranger put a 15 MB draft on a chat the victim reads, then claimed the victim's id: the
    ping that tells a live holder from a dead socket waited behind those megabytes, so the host
    closed the live victim and gave its id away (its reconnects then refused for good). A holder
    that goes on taking what it is sent is alive."""
    from urllib.parse import urlsplit

    from ahp_lab.transport import connect_websocket

    async def main():
        async with open_lab(limits={"identity_grace_s": 0.5}) as lab:
            url = await lab.aserve()
            port = urlsplit(url).port
            link = await _slow_link(port, 4_000_000)
            via = url.replace(f":{port}/", f":{link.sockets[0].getsockname()[1]}/")
            victim = Stranger(await connect_websocket(via))
            await victim.initialize("victim")
            await victim.call("subscribe", {"channel": lab.chat})
            mallory = Stranger(await connect_websocket(url))
            await mallory.initialize("mallory")
            await mallory.call("subscribe", {"channel": lab.chat})
            big = "d" * 990_000
            draft = {
                "text": big,
                "origin": {"kind": "user"},
                "attachments": [{"type": "simple", "label": big}] * 12,
            }
            mallory.dispatch(lab.chat, 1, {"type": "chat/draftChanged", "draft": draft})
            assert "rejectionReason" not in await mallory.echo(1, timeout=30)
            thief = Stranger(await connect_websocket(url))
            answer = await thief.call("initialize", {"protocolVersions": ["0.8.0"], "clientId": "victim"})
            assert answer["error"]["code"] == -32010, answer
            await victim.wait(
                lambda: any(
                    m.get("params", {}).get("origin", {}).get("clientSeq") == 1 for m in victim.received
                ),
                timeout=30,
            )
            assert not victim.closed
            for peer in (victim, mallory, thief):
                peer.close()
            link.close()

    arun(main())
