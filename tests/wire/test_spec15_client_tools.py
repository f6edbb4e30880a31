"""A client tool whose owner leaves the session while the call is still streaming (found by an
independent client, spec15).

Customizations §5.2: a removed client's in-flight calls fail; a call still ``streaming`` cannot be
completed then. The host used to make such a call ready anyway, ``running`` for a client that was
no longer active, with a ``toolClientExecution`` entry naming it, and the turn waited out
``client_tool_timeout`` (300 s).
"""

from __future__ import annotations

from ahp_lab.host import Host

from .conftest import ROOT, RawPeer, run, served

SESSION = "ahp-session:/0b3d7c1e-0000-4000-8000-0000000000f1"


def _calls(state: dict) -> list[dict]:
    parts = (state.get("activeTurn") or {}).get("responseParts") or ()
    return [p["toolCall"] for p in parts if p.get("kind") == "toolCall"]


def test_a_call_whose_owner_left_while_it_streamed_fails_instead_of_running():
    async def main():
        # slowed streaming: the call's arguments take three paced deltas, time enough for the owner
        # to leave between toolCallStart and toolCallReady
        async with served(Host(pace_s=0.5)) as (host, server):
            owner = await RawPeer.open(server.url_with_token)
            await owner.initialize("owner")
            tools = [{"name": "fetchDocs", "inputSchema": {"type": "object"}}]
            created = await owner.call(
                "createSession",
                {"channel": SESSION, "activeClient": {"clientId": "owner", "tools": tools}},
            )
            assert "result" in created, created
            observer = await RawPeer.open(server.url_with_token)
            await observer.initialize("observer", [ROOT, SESSION])
            await observer.wait(lambda: host.store.state(SESSION)["lifecycle"] == "ready")
            chat = host.store.state(SESSION)["defaultChat"]
            await observer.call("subscribe", {"channel": chat})
            await owner.call("subscribe", {"channel": SESSION})
            await owner.call("subscribe", {"channel": chat})

            message = {"text": "fetchDocs topic=install", "origin": {"kind": "user"}}
            turn = {"type": "chat/turnStarted", "turnId": "t1", "startedAt": "x", "message": message}
            owner.notify("dispatchAction", {"channel": chat, "clientSeq": 1, "action": turn})
            await owner.wait(
                lambda: any(e["action"]["type"] == "chat/toolCallStart" for e in owner.actions(chat))
            )
            owner.notify("unsubscribe", {"channel": SESSION})  # the owner leaves: removed at once

            def first(channel: str, kind: str) -> dict | None:
                return next((e for e in observer.actions(channel) if e["action"]["type"] == kind), None)

            removed = await observer.wait(lambda: first(SESSION, "session/activeClientRemoved"))
            complete = await observer.wait(lambda: first(chat, "chat/toolCallComplete"))
            ready = first(chat, "chat/toolCallReady")
            assert first(chat, "chat/toolCallStart")["serverSeq"] < removed["serverSeq"] < ready["serverSeq"]

            result = complete["action"]["result"]
            assert result["success"] is False and result["error"]["code"] == "clientRemoved"
            assert "owner left the session" in result["error"]["message"]
            [call] = _calls(host.store.state(chat))
            assert call["status"] == "completed" and call["success"] is False
            assert host.store.state(SESSION).get("inputNeeded", []) == []
            await owner.close()
            await observer.close()

    run(main(), timeout=60)
