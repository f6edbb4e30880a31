"""The catalogue: a ``root/sessionSummaryChanged`` goes out exactly when a session's summary changes."""

from __future__ import annotations

import asyncio

from ahp_lab import Lab
from ahp_lab.store import agent_origin


def test_summary_notifications_only_for_changes_of_the_summary():
    async def main():
        lab = await Lab.open()
        try:
            seen: list[dict] = []
            arrived = asyncio.Event()

            def listen(channel: str, action: dict) -> None:
                if (
                    action.get("type") == "$root/sessionSummaryChanged"
                    and action.get("session") == lab.session
                ):
                    seen.append(action["changes"])
                    arrived.set()

            lab.client.on_change(listen)

            async def next_change() -> dict:
                await asyncio.wait_for(arrived.wait(), timeout=10)
                arrived.clear()
                return seen[-1]

            host, session, chat = lab.host, lab.session, lab.chat
            host.dispatch(session, {"type": "session/titleChanged", "title": "first"})
            assert await next_change() == {"title": "first"}
            # session actions that leave the summary as it was announce nothing ...
            host.dispatch(
                session, {"type": "session/chatUpdated", "chat": chat, "changes": {"title": "a chat"}}
            )
            host.dispatch(session, {"type": "session/titleChanged", "title": "first"})
            # ... and the next real change is the next notification
            host.dispatch(session, {"type": "session/titleChanged", "title": "second"})
            assert await next_change() == {"title": "second"}
            assert len(seen) == 2
            # a chat whose status changes changes the summary through the session's mirror of it
            host.dispatch(
                chat,
                {
                    "type": "chat/turnStarted",
                    "turnId": "t1",
                    "startedAt": "2026-01-01T00:00:00Z",
                    "message": {"text": "hi", "origin": {"kind": "user"}},
                },
                agent_origin("test"),
            )
            changes = await next_change()
            assert changes.get("status") is not None
            listed = next(s for s in host.list_sessions() if s["resource"] == session)
            assert listed["title"] == "second" and listed["status"] == changes["status"]
        finally:
            await lab.aclose()

    asyncio.run(main())
