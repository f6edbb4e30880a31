"""Attacker round 11: a stranger holding the token, over the socket (and in process).

Each test is an attack that worked before its fix: a queue of tiny messages whose every addition
walked the whole queue (the host's loop stalled for seconds, far under the content budget), and a
negative sequence number taken by ``reconnect``.
"""

from __future__ import annotations

from ahp_lab.protocol.jsonrpc import ErrorCode

from .conftest import arun, open_lab


def test_a_chats_queue_is_bounded_in_messages_not_only_in_bytes(connect_stranger):
    """20,000 one-character queued messages (2.4 MB, under 1% of the content budget) held the
    host's loop 7 s: each one walked the queue. Past ``max_queued_messages`` a new one is refused;
    replacing or removing one still works, and the notebook's chat stays usable."""

    async def main():
        async with open_lab(limits={"max_queued_messages": 20}) as lab:
            mallory = await connect_stranger(lab, "mallory")
            await mallory.initialize("mallory")
            await mallory.call("subscribe", {"channel": lab.chat})
            message = {"text": "x", "origin": {"kind": "user"}}
            # a turn that stays active: the messages wait in the queue behind it
            lab.host.dispatch(
                lab.chat, {"type": "chat/turnStarted", "turnId": "nb", "startedAt": "x", "message": message}
            )
            queued = {"type": "chat/pendingMessageSet", "kind": "queued", "message": message}
            for seq in range(1, 26):
                mallory.dispatch(lab.chat, seq, {**queued, "id": f"q{seq}"})
            echoes = [await mallory.echo(seq) for seq in range(1, 26)]
            assert all("rejectionReason" not in e for e in echoes[:20])
            refused = {e["rejectionReason"] for e in echoes[20:]}
            assert refused == {
                "chat/pendingMessageSet: the chat already queues 20 messages, the most it holds "
                "(Limits.max_queued_messages); remove one or wait for the queue to run"
            }
            mallory.dispatch(lab.chat, 26, {**queued, "id": "q3", "message": {**message, "text": "y"}})
            assert "rejectionReason" not in await mallory.echo(26)  # a replacement adds nothing
            mallory.dispatch(
                lab.chat, 27, {"type": "chat/pendingMessageRemoved", "kind": "queued", "id": "q1"}
            )
            mallory.dispatch(lab.chat, 28, {**queued, "id": "q21"})
            assert "rejectionReason" not in await mallory.echo(28)  # room again
            queue = lab.host.store.state(lab.chat)["queuedMessages"]
            assert len(queue) == 20 and [m["id"] for m in queue][-1] == "q21"

    arun(main())


def test_reconnect_refuses_a_negative_sequence_number(connect_stranger):
    async def main():
        async with open_lab() as lab:
            mallory = await connect_stranger(lab, "mallory")
            answer = await mallory.call(
                "reconnect",
                {
                    "channel": "ahp-root://",
                    "clientId": "mallory",
                    "lastSeenServerSeq": -5,
                    "subscriptions": [],
                },
            )
            assert answer["error"]["code"] == ErrorCode.INVALID_PARAMS
            assert "lastSeenServerSeq must be 0 or more" in answer["error"]["message"]

    arun(main())
