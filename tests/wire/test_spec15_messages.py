"""Rejection reasons as a client author of a served host (no notebook) reads them (spec15)."""

from __future__ import annotations

from .conftest import ROOT, RawPeer, run, served

SESSION = "ahp-session:/0b3d7c1e-0000-4000-8000-0000000000f3"


def test_rejections_name_the_turn_and_what_a_wire_client_can_do():
    """A second turn's rejection was the one reason without its action type, and did not name the
    turn in progress; a tool call of a turn that had ended was "not in the active turn 't1'" though
    no turn was active (a stale turn read like a wrong call id); removing another client was "only
    for the notebook that owns the host", which a served host does not have."""

    async def main():
        async with served() as (host, server):
            owner = await RawPeer.open(server.url_with_token)
            await owner.initialize("owner")
            tools = [{"name": "fetchDocs", "inputSchema": {"type": "object"}}]
            active = {"clientId": "owner", "tools": tools}
            assert "result" in await owner.call("createSession", {"channel": SESSION, "activeClient": active})
            await owner.call("subscribe", {"channel": SESSION})
            await owner.wait(lambda: host.store.state(SESSION)["lifecycle"] == "ready")
            chat = host.store.state(SESSION)["defaultChat"]
            await owner.call("subscribe", {"channel": chat})
            other = await RawPeer.open(server.url_with_token)
            await other.initialize("other", [ROOT, SESSION, chat])
            seqs = {"owner": 0, "other": 0}

            async def rejection(peer: RawPeer, name: str, channel: str, action: dict) -> str | None:
                seqs[name] += 1
                seq = seqs[name]
                peer.notify("dispatchAction", {"channel": channel, "clientSeq": seq, "action": action})
                echo = await peer.wait(
                    lambda: next(
                        (
                            e
                            for e in peer.actions(channel)
                            if e.get("origin") == {"clientId": name, "clientSeq": seq}
                        ),
                        None,
                    )
                )
                return echo.get("rejectionReason")

            def started(turn_id: str, text: str) -> dict:
                message = {"text": text, "origin": {"kind": "user"}}
                return {"type": "chat/turnStarted", "turnId": turn_id, "startedAt": "x", "message": message}

            assert await rejection(owner, "owner", chat, started("t1", "fetchDocs")) is None
            ready = await owner.wait(
                lambda: next(
                    (e for e in owner.actions(chat) if e["action"]["type"] == "chat/toolCallReady"), None
                )
            )
            second = await rejection(other, "other", chat, started("t2", "hello"))
            assert second.startswith("chat/turnStarted: a turn is already in progress ('t1')")

            call = {"turnId": "t1", "toolCallId": ready["action"]["toolCallId"]}
            done = {
                "type": "chat/toolCallComplete",
                **call,
                "result": {"success": True, "pastTenseMessage": "ok"},
            }
            assert await rejection(owner, "owner", chat, done) is None
            await owner.wait(
                lambda: any(e["action"]["type"] == "chat/turnComplete" for e in owner.actions(chat))
            )
            stale = await rejection(owner, "owner", chat, done)
            assert stale == (
                "chat/toolCallComplete: turn 't1' has ended (no turn is active): "
                "only the active turn's tool calls can change"
            )

            remove = {"type": "session/activeClientRemoved", "clientId": "owner"}
            reason = await rejection(other, "other", SESSION, remove)
            assert reason.startswith("session/activeClientRemoved: a client may only remove itself")
            assert "the host removes other clients when they leave" in reason and "notebook" not in reason
            await owner.close()
            await other.close()

    run(main(), timeout=60)
