"""``createSession`` with ``fork``: the new session starts from the source session's default chat
through a turn's response, in the source's working directories (session-channel §4)."""

from __future__ import annotations

import asyncio

import pytest

from ahp_lab import Lab
from ahp_lab.protocol.jsonrpc import ErrorCode
from ahp_lab.transport import RpcError


def test_a_forked_session_starts_from_the_turns_through_the_one_named(tmp_path):
    async def main():
        lab = await Lab.open(working_directories=[tmp_path])
        try:
            await lab.send("first")
            await lab.send("second")
            first, second = lab.chat_state["turns"]
            fork = "ahp-session:/fork-1"
            params = {"channel": fork, "fork": {"session": lab.session, "turnId": first["id"]}}
            assert (
                await lab.client.request("createSession", {**params, "workingDirectories": ["file:///tmp"]})
                is None
            )
            ready = await lab.host.wait_for(
                fork, lambda s: s if s.get("lifecycle") == "ready" else None, timeout=10
            )
            chat = lab.host.store.state(ready["defaultChat"])
            assert [t["id"] for t in chat["turns"]] == [first["id"]]  # through that turn, not after it
            assert chat["turns"][0]["message"]["text"] == "first"
            assert chat["origin"] == {"kind": "fork", "chat": lab.chat, "turnId": first["id"]}
            assert ready["workingDirectories"] == lab.session_state["workingDirectories"]  # the source's
            assert [t["id"] for t in lab.chat_state["turns"]] == [first["id"], second["id"]]  # source intact

            with pytest.raises(RpcError) as unknown:
                await lab.client.request(
                    "createSession",
                    {
                        "channel": "ahp-session:/fork-2",
                        "fork": {"session": "ahp-session:/nope", "turnId": "t"},
                    },
                )
            assert unknown.value.code == ErrorCode.SESSION_NOT_FOUND
            with pytest.raises(RpcError, match="is not a completed turn") as bad_turn:
                await lab.client.request(
                    "createSession",
                    {"channel": "ahp-session:/fork-3", "fork": {"session": lab.session, "turnId": "nope"}},
                )
            assert bad_turn.value.code == ErrorCode.INVALID_PARAMS
            assert lab.host.store.state("ahp-session:/fork-3") is None  # nothing was created
        finally:
            await lab.aclose()

    asyncio.run(main())
