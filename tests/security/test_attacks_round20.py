"""Attacker round 20 (and this stop's own finds)."""

from __future__ import annotations

import asyncio
import json

from .conftest import ROOT, arun, joined, open_lab


def test_a_created_sessions_active_client_is_measured_once_masked(connect_stranger):
    """``createSession.activeClient`` was measured as it came, and not as it went out: 13 MB of
    ``&sid=1`` (masked to ``&sid=***``) made a session whose ``activeClientSet`` was 17.7 MB, over
    every client's message limit. It is refused with the reason, and nothing of it is kept."""

    async def main():
        async with open_lab() as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            grows = "&sid=1" * 158_000  # 948,000 characters, 1,264,000 once masked
            tools = [
                {"name": f"t{i}", "description": grows, "inputSchema": {"type": "object"}} for i in range(14)
            ]
            entry = {"clientId": "mallory", "tools": tools}
            refused = await mallory.call(
                "createSession", {"channel": "ahp-session:/big", "activeClient": entry}, timeout=60
            )
            assert refused["error"]["code"] == -32602
            assert "once masked, over the limit of one message" in refused["error"]["message"]
            assert not lab.host.store.has_channel("ahp-session:/big")
            entry = {"clientId": "mallory", "tools": tools[:1]}
            made = await mallory.call("createSession", {"channel": "ahp-session:/big", "activeClient": entry})
            assert "error" not in made
            assert "result" in await mallory.call("ping", {"channel": ROOT})

    arun(main())


def test_an_idle_connection_keeps_neither_its_last_large_frame_nor_unknown_capabilities():
    """Each connection kept what it sent: its ``initialize.capabilities`` parsed (29 MB for 15 MB of
    strings), its last frame as text (the reader's loop variable) and as bytes (the library's
    parser, until the peer's next frame). 40 idle token holders held 2.4 GB. The host keeps the
    capabilities it knows, drops the text, and pings after a large frame so the library lets its
    bytes go."""
    import tracemalloc

    import websockets

    async def main():
        async with open_lab() as lab:
            url = await lab.aserve()
            junk = [f"{i:060d}" for i in range(160_000)]  # 10 MB
            params = {
                "protocolVersions": ["0.8.0"],
                "clientId": "idle",
                "capabilities": {"x": junk, "mcpApps": {}},
            }
            text = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
            del junk, params
            tracemalloc.start()
            try:
                async with websockets.connect(url, max_size=None) as ws:
                    before = tracemalloc.get_traced_memory()[0]
                    await ws.send(text)
                    assert "result" in json.loads(await ws.recv())
                    [conn] = [c for c in lab.host.connections if c.client_id == "idle"]
                    assert conn.capabilities == {"mcpApps": {}}
                    # the client sends nothing more; the host's ping is answered by its library
                    deadline = asyncio.get_running_loop().time() + 10
                    while tracemalloc.get_traced_memory()[0] - before > 4_000_000:
                        assert asyncio.get_running_loop().time() < deadline, (
                            "the idle connection holds its frame"
                        )
                        await asyncio.sleep(0.01)
            finally:
                tracemalloc.stop()

    arun(main())


def test_a_channel_uri_a_stranger_chooses_is_short_printable_text_the_host_never_masks(connect_stranger):
    """A stranger's chat ``ahp-chat:/ghp_…`` was listed in the notebook's session as
    ``ahp-chat:/***``, a chat that does not exist (two keys made one entry, and disposing one chat
    removed the other's); a session named by a key showed it in listSessions and the export; escape
    sequences and NUL went into the notebook's session; and chats with 1,000,000-character URIs
    made each "hi" turn cost 2 MB for every subscriber and a full core. Each is refused with its
    reason; a plain URI is taken."""

    async def main():
        async with open_lab() as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            key = "ghp_" + "Q1w2E3r4" * 5
            bad = {
                "ahp-chat:/" + key: "looks like it holds a credential",
                "ahp-chat:/x\x1b[2J": "must be printable text",
                "ahp-chat:/a\u202eb": "must be printable text",
                "ahp-chat:/" + "x" * 900_000: "must be 1 to 2,048 characters long",
            }
            for uri, reason in bad.items():
                answer = await mallory.call("createChat", {"channel": lab.session, "chat": uri})
                assert answer["error"]["code"] == -32602 and reason in answer["error"]["message"], answer
            answer = await mallory.call("createSession", {"channel": "ahp-session:/" + key})
            assert "looks like it holds a credential" in answer["error"]["message"]
            chats = [c["resource"] for c in lab.session_state["chats"]]
            assert all(key not in c and "***" not in c and len(c) < 100 for c in chats)
            answer = await mallory.call("createChat", {"channel": lab.session, "chat": "ahp-chat:/mallory-1"})
            assert "error" not in answer
            assert "ahp-chat:/mallory-1" in [c["resource"] for c in lab.session_state["chats"]]

    arun(main())


def test_the_ids_a_stranger_names_for_what_it_brings_are_printable_and_never_masked(connect_stranger):
    """A turn a stranger named by a key was kept as ``***``; two tools so named became two tools
    of one name; a tool, a turn and a pending message named with escape sequences, or 100,000
    characters long, went into every client's workbench (a verification round). Each is refused
    with its reason, like a client id; a plain id is taken."""

    async def main():
        async with open_lab() as lab:
            mallory = await joined(connect_stranger, lab, "mallory", chat=True)
            key = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
            message = {"text": "hi", "origin": {"kind": "user"}}
            attempts = [
                (lab.chat, {"type": "chat/turnStarted", "turnId": key, "startedAt": "x", "message": message},
                 "turnId looks like it holds a credential"),
                (lab.chat, {"type": "chat/turnStarted", "turnId": "t\x1b]0;x\x07", "startedAt": "x", "message": message},
                 "with control characters"),
                (lab.chat, {"type": "chat/pendingMessageSet", "kind": "queued", "id": "q" * 100_000, "message": message},
                 "got 100,000 characters"),
                (lab.session, {"type": "session/activeClientSet", "activeClient": {"clientId": "mallory", "tools": [
                    {"name": key, "description": "d", "inputSchema": {"type": "object"}}]}},
                 "tools[0].name looks like it holds a credential"),
            ]  # fmt: skip
            for seq, (channel, action, reason) in enumerate(attempts, 1):
                mallory.dispatch(channel, seq, action)
                echo = await mallory.echo(seq)
                assert reason in echo.get("rejectionReason", ""), echo
            assert not lab.state(lab.chat).get("queuedMessages")
            assert all(c["clientId"] != "mallory" for c in lab.session_state["activeClients"])
            tools = [{"name": "lookup", "description": "d", "inputSchema": {"type": "object"}}]
            mallory.dispatch(lab.session, 9, {"type": "session/activeClientSet",
                                              "activeClient": {"clientId": "mallory", "tools": tools}})  # fmt: skip
            assert "rejectionReason" not in await mallory.echo(9)

    arun(main())
