"""A chat attachment names a chat the host has and a completed turn it keeps (chat-channel §1).

The host rejects unknown chats and an ``endTurn`` that is unknown, no longer kept or still in
progress; without one it fixes the transcript's end at the chat's newest completed turn when it
accepts the message, so the attachment means the same whatever the chat does next.
"""

from __future__ import annotations

import asyncio

from ahp_lab.protocol.jsonrpc import ErrorCode

from .test_wire import _client_with_chat, settle


def _message(**attachment) -> dict:
    return {
        "text": "see",
        "origin": {"kind": "user"},
        "attachments": [{"type": "chat", "label": "c", **attachment}],
    }


def test_chat_attachments_are_checked_and_their_end_is_fixed():
    async def main():
        host, client, source = await _client_with_chat("c", "ahp-session:/att", 3)
        host.dispatch(source, {"type": "chat/truncated", "turnId": "t1"})  # t2 is no longer kept
        user = {"text": "go", "origin": {"kind": "user"}}
        host.dispatch(
            source, {"type": "chat/turnStarted", "turnId": "live", "startedAt": "x", "message": user}
        )
        target = "ahp-chat:/target"
        assert "error" not in await client.call("createChat", {"channel": "ahp-session:/att", "chat": target})
        await client.call("subscribe", {"channel": target})
        cases = [
            (_message(resource="ahp-chat:/nope"), "names no chat"),
            (_message(resource=source, endTurn="zz"), "does not have"),
            (_message(resource=source, endTurn="t2"), "does not have"),
            (_message(resource=source, endTurn="live"), "still in progress"),
        ]
        for seq, (message, _) in enumerate(cases, 1):
            client.dispatch(
                target,
                seq,
                {"type": "chat/turnStarted", "turnId": f"x{seq}", "startedAt": "x", "message": message},
            )
            client.dispatch(
                target,
                100 + seq,
                {"type": "chat/pendingMessageSet", "kind": "queued", "id": f"q{seq}", "message": message},
            )
        await settle()
        echoes = {e["origin"]["clientSeq"]: e for e in client.actions() if e.get("origin")}
        for seq, (_, why) in enumerate(cases, 1):
            for n in (seq, 100 + seq):
                assert why in echoes[n].get("rejectionReason", ""), (n, echoes[n].get("rejectionReason"))
        assert host.store.state(target)["turns"] == [] and "activeTurn" not in host.store.state(target)

        client.dispatch(
            target,
            9,
            {
                "type": "chat/turnStarted",
                "turnId": "ok",
                "startedAt": "x",
                "message": _message(resource=source),
            },
        )
        await settle()
        [echo] = [e for e in client.actions() if (e.get("origin") or {}).get("clientSeq") == 9]
        assert "rejectionReason" not in echo
        state = host.store.state(target)
        kept = (state.get("activeTurn") or state["turns"][-1])["message"]["attachments"][0]
        assert kept["endTurn"] == "t1"  # the newest completed turn when the message was accepted

        answer = await client.call(
            "createChat",
            {
                "channel": "ahp-session:/att",
                "chat": "ahp-chat:/second",
                "initialMessage": _message(resource="ahp-chat:/nope"),
            },
        )
        assert (
            answer["error"]["code"] == ErrorCode.INVALID_PARAMS
            and "names no chat" in answer["error"]["message"]
        )

    asyncio.run(main())
