"""The count of what strangers put into state stays consistent whatever they send, in any order.

Random sequences of a stranger's chat and session actions (turns, drafts, answers to a request
that does not exist, pending messages set, replaced and removed, truncations, client entries)
and the notebook's own turns: after every step the total equals the sum of the slots, is never
negative, never passes the bound, and a chat truncated to nothing with its pending messages
removed holds nothing counted.
"""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from ahp_lab.host import Host

from .test_wire import RawClient, settle

LIMIT = 60_000
texts = st.sampled_from(["", "a", "b" * 5_000, "c" * 20_000])
ids = st.sampled_from(["t1", "t2", "t3"])
user = st.builds(lambda text: {"text": text, "origin": {"kind": "user"}}, texts)
actions = st.one_of(
    st.builds(
        lambda t, m: {"type": "chat/turnStarted", "turnId": t, "startedAt": "x", "message": m}, ids, user
    ),
    st.builds(lambda t: {"type": "chat/turnCancelled", "turnId": t}, ids),
    st.builds(lambda t: {"type": "chat/truncated", "turnId": t}, ids),
    st.just({"type": "chat/truncated"}),
    st.builds(lambda d: {"type": "chat/draftChanged", "draft": d}, user),
    st.builds(
        lambda k, i, m: {"type": "chat/pendingMessageSet", "kind": k, "id": i, "message": m},
        st.sampled_from(["queued", "steering"]),
        ids,
        user,
    ),
    st.builds(
        lambda k, i: {"type": "chat/pendingMessageRemoved", "kind": k, "id": i},
        st.sampled_from(["queued", "steering"]),
        ids,
    ),
    st.builds(
        lambda text: {
            "type": "session/activeClientSet",
            "activeClient": {"clientId": "m", "displayName": text, "tools": []},
        },
        texts,
    ),
    st.just({"type": "session/activeClientRemoved", "clientId": "m"}),
    st.builds(lambda t, text: {"notebook": True, "turnId": t, "text": text}, ids, texts),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(actions, min_size=1, max_size=40))
def test_the_count_stays_consistent_and_within_its_bound(script):
    async def main():
        host = Host(limits={"max_client_content_bytes": LIMIT})
        owner = RawClient(host)
        await owner.initialize("owner")
        session = "ahp-session:/cc"
        await owner.call("createSession", {"channel": session})
        await settle()
        chat = host.store.state(session)["defaultChat"]
        stranger = RawClient(host)
        await stranger.initialize("m")
        counted = host.client_content
        for seq, action in enumerate(script, 1):
            if action.get("notebook"):  # the notebook's turns are never counted
                host.dispatch(chat, {"type": "chat/truncated"})
                message = {"text": action["text"], "origin": {"kind": "user"}}
                host.dispatch(
                    chat,
                    {
                        "type": "chat/turnStarted",
                        "turnId": "nb" + action["turnId"],
                        "startedAt": "x",
                        "message": message,
                    },
                )
            else:
                channel = session if action["type"].startswith("session/") else chat
                stranger.dispatch(channel, seq, action)
            await settle()
            slots = [size for held in counted.held.values() for size in held.values()]
            assert counted.total == sum(slots) and all(size > 0 for size in slots)
            assert 0 <= counted.total <= LIMIT
        stranger.dispatch(chat, 900, {"type": "chat/truncated"})
        for n, kind in enumerate(("queued", "steering")):
            for i in ("t1", "t2", "t3"):
                stranger.dispatch(
                    chat,
                    901 + 3 * n + ["t1", "t2", "t3"].index(i),
                    {"type": "chat/pendingMessageRemoved", "kind": kind, "id": i},
                )
        await settle()
        assert chat not in counted.held or set(counted.held[chat]) <= {("field", "chat/draftChanged")}

    asyncio.run(main())
