"""Every frame on the socket is protocol JSON, as the round-trip fixtures define it.

A whole conversation goes over a real socket (initialize, subscribe, a turn with a client tool, a
rejected dispatch, a dropped socket and its reconnect, a second client in another process) while
the host records every frame. Each one must decode as a ``JsonRpcMessage`` and re-encode to the
very same JSON (the protocol models are the ones the round-trip fixtures check); each ``action``
notification is an ``ActionEnvelope`` (``origin`` present for a client's action, absent for the
host's and the agent's); each answer carries ``result`` or ``error``, and the results of
``initialize``, ``subscribe`` and ``reconnect`` decode as their result types.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap

from ahp_lab import Lab
from ahp_lab.lab import RemoteLab
from ahp_lab.protocol.codec import roundtrip

from .conftest import run

OUTSIDER = textwrap.dedent(
    """
    import asyncio, sys
    import ahp_lab

    async def main(url, session):
        client = await ahp_lab.connect(url, client_id="outsider")
        await client.subscribe(session)
        client.dispatch(session, {"type": "session/titleChanged", "title": "set from another process"})
        await client.settle()
        print(client.confirmed(session)["title"])
        await client.aclose()

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)

RESULT_TYPES = {
    "initialize": "InitializeResult",
    "subscribe": "SubscribeResult",
    "reconnect": "ReconnectResult",
}


def test_every_frame_is_protocol_json_and_a_client_in_another_process_takes_part():
    async def main():
        lab = await Lab.open()
        url = await lab.aserve()
        ide = await RemoteLab.open(url, session=lab.session, client_id="ide")

        @ide.tool(approval="never")
        def word_count(text: str) -> int:
            """Count the words of a text."""
            return len(text.split())

        await lab.send("word_count text=one-two")
        ide.client.dispatch(ide.chat, {"type": "chat/pendingMessageRemoved", "kind": "queued", "id": "nope"})
        await ide.client.settle()
        ide.client.peer.transport.abort()
        await ide.client.wait_for("ahp-root://", lambda _s: ide.client.connected or None, timeout=30)
        await ide.client.settle()

        outsider = await asyncio.create_subprocess_exec(
            sys.executable, "-c", OUTSIDER, url, lab.session, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        out, err = await asyncio.wait_for(outsider.communicate(), 120)
        assert outsider.returncode == 0, err.decode()
        assert out.decode().strip() == "set from another process"
        assert lab.session_state["title"] == "set from another process"
        await ide.client.settle()
        assert ide.session_state["title"] == "set from another process"

        frames = lab.frames.frames
        await ide.aclose()
        await lab.aclose()
        return frames

    frames = run(main())
    requests: dict[tuple[int, object], str] = {}
    kinds = set()
    origins = {"present": 0, "absent": 0}
    for frame in frames:
        message = json.loads(frame.text)
        assert roundtrip("JsonRpcMessage", message) == message, frame.text[:300]
        info = frame.info()
        kinds.add((frame.direction, info["kind"]))
        if info["kind"] == "request":
            requests[(frame.connection, message["id"])] = message["method"]
        elif info["kind"] in ("result", "error") and frame.direction == "out":
            assert ("result" in message) != ("error" in message)
            method = requests.get((frame.connection, message["id"]))
            if method in RESULT_TYPES and "result" in message:
                assert roundtrip(RESULT_TYPES[method], message["result"]) == message["result"], method
            if method == "reconnect":
                assert message["result"]["type"] == "replay" and isinstance(
                    message["result"]["missing"], list
                )
        if message.get("method") == "action":
            envelope = message["params"]
            assert roundtrip("ActionEnvelope", envelope) == envelope
            origins["present" if "origin" in envelope else "absent"] += 1
            assert envelope.get("origin", {}) != {"clientId": None}
    assert {("in", "request"), ("in", "notification"), ("out", "result"), ("out", "notification")} <= kinds
    assert origins["present"] > 0 and origins["absent"] > 0
    assert "reconnect" in requests.values() and "initialize" in requests.values()
    rejected = [json.loads(f.text)["params"] for f in frames if '"rejectionReason"' in f.text]
    assert rejected and all(r["origin"]["clientId"] == "ide" for r in rejected)
