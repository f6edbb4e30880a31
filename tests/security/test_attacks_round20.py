"""Attacker round 20 (and this stop's own finds)."""

from __future__ import annotations

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
