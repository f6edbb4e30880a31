"""Attacks from the sixth round: state a stranger can grow, bounded."""

from __future__ import annotations

from .conftest import arun, joined, open_lab, publish

TEXT = 300_000  # characters in each of the stranger's messages


def _turn(turn_id: str, fill: str = "m") -> dict:
    message = {"text": fill * TEXT, "origin": {"kind": "user"}}
    return {"type": "chat/turnStarted", "turnId": turn_id, "startedAt": "x", "message": message}


async def _idle(peer, lab, chat: str) -> None:
    await peer.wait(lambda: lab.host.store.state(chat).get("activeTurn") is None)


def test_a_strangers_turns_cannot_grow_the_hosts_state_past_its_bound(connect_stranger):
    """Every turn a stranger starts stays in state (the log's bound does not shrink it): 60 turns
    of 15 MB took the host to 1.3 GB. What untrusted clients add to chats is counted; past
    max_client_content_bytes an addition is refused with a reason, and a truncation, a removed
    pending message or a disposed chat gives room back. The notebook is not bounded."""

    async def main():
        async with open_lab(limits={"max_client_content_bytes": 1_000_000}) as lab:
            mallory = await connect_stranger(lab, "mallory")
            await mallory.initialize("mallory")
            await mallory.call("subscribe", {"channel": lab.chat})
            for n in range(1, 4):
                mallory.dispatch(lab.chat, n, _turn(f"m{n}"))
                assert "rejectionReason" not in await mallory.echo(n)
                await _idle(mallory, lab, lab.chat)
            held = lab.host.client_content.total
            assert 3 * TEXT <= held < 1_000_000

            mallory.dispatch(lab.chat, 4, _turn("m4"))
            refused = (await mallory.echo(4))["rejectionReason"]
            assert "max_client_content_bytes" in refused and "truncate a chat" in refused
            turns = lab.host.store.state(lab.chat)["turns"]
            assert [t["id"] for t in turns] == ["m1", "m2", "m3"]  # nothing half-applied
            # the notebook's own turns are not counted (this one stays active: messages queue behind it)
            lab.host.dispatch(lab.chat, _turn("nb", "n"))
            assert lab.host.client_content.total == held
            # a pending message counts as much, and replacing or removing one is not a way around it
            queued = {"type": "chat/pendingMessageSet", "kind": "queued", "id": "q"}
            for seq in range(5, 25, 2):
                mallory.dispatch(
                    lab.chat, seq, {**queued, "message": {"text": "q" * 50_000, "origin": {"kind": "user"}}}
                )
                assert "rejectionReason" not in await mallory.echo(seq)
                mallory.dispatch(
                    lab.chat, seq + 1, {"type": "chat/pendingMessageRemoved", "kind": "queued", "id": "q"}
                )
                assert "rejectionReason" not in await mallory.echo(seq + 1)
            assert lab.host.client_content.total == held  # ten set-and-remove rounds left nothing counted
            lab.host.dispatch(lab.chat, {"type": "chat/turnComplete", "turnId": "nb"})

            # truncating after the first turn gives back what was counted for the two it drops,
            # and no more: the notebook's turn it drops too was never counted
            mallory.dispatch(lab.chat, 30, {"type": "chat/truncated", "turnId": "m1"})
            assert "rejectionReason" not in await mallory.echo(30)
            assert TEXT < lab.host.client_content.total == held // 3
            mallory.dispatch(lab.chat, 31, _turn("m5"))
            assert "rejectionReason" not in await mallory.echo(31)
            await _idle(mallory, lab, lab.chat)

            # a chat the stranger fills and disposes of gives back all of it
            side = "ahp-chat:/mallory-side"
            before = lab.host.client_content.total
            assert "error" not in await mallory.call("createChat", {"channel": lab.session, "chat": side})
            await mallory.call("subscribe", {"channel": side})
            mallory.dispatch(side, 40, _turn("s1"))
            assert "rejectionReason" not in await mallory.echo(40)
            await _idle(mallory, lab, side)
            assert lab.host.client_content.total >= before + TEXT
            answer = await mallory.call("disposeChat", {"channel": side})
            assert "error" not in answer
            assert lab.host.client_content.total == before

    arun(main())


def test_the_hosts_requests_to_a_client_name_the_root_channel(connect_stranger):
    """Every request's params carry ``channel`` (overview §2), the host's to a client too: reading
    a client's plugin sent ``resourceList``/``resourceRead`` with the URI alone."""

    async def main():
        async with open_lab() as lab:
            skill = "---\ndescription: Hi\n---\nSay hi.\n"
            s = await joined(connect_stranger, lab, "pub")
            await publish(s, "pub", "kit", {"skills/hi/SKILL.md": skill})
            requests = lambda: [m for m in s.received if m.get("method") in ("resourceList", "resourceRead")]  # noqa: E731
            await s.wait(lambda: any(m["method"] == "resourceRead" for m in requests()))
            assert requests() and all(m["params"]["channel"] == "ahp-root://" for m in requests())

    arun(main())


def test_answers_tool_content_forks_first_messages_and_client_entries_are_counted_too(connect_stranger):
    """Counting action types that 'add' missed what replaces a value in place: drafted answers
    (1.5 GB in 30 turns), a tool call's _meta kept past its completion (500 MB in 5 s), a fork's
    copy of turns the source then dropped, createChat's first message, an activeClient entry.
    Each accepted action is counted in the slot of state it fills; a truncation gives back what
    was counted for the turns it drops, the active one included, and nothing else."""
    big = "z" * 200_000

    async def main():
        async with open_lab(limits={"max_client_content_bytes": 2_000_000}) as lab:
            counted = lab.host.client_content
            m = await connect_stranger(lab, "m")
            await m.initialize("m")
            for channel in (lab.session, lab.chat):
                await m.call("subscribe", {"channel": channel})
            # an input request's drafted answers, with members the wire lets through
            m.dispatch(
                lab.chat, 1, {**_turn("a1"), "message": {"text": "please ask", "origin": {"kind": "user"}}}
            )
            assert "rejectionReason" not in await m.echo(1)

            def open_request():
                parts = (lab.host.store.state(lab.chat).get("activeTurn") or {}).get("responseParts") or ()
                return next((p["request"] for p in parts if p.get("kind") == "inputRequest"), None)

            request = await m.wait(open_request)
            before = counted.total
            answer = {"state": "draft", "value": {"kind": "text", "value": "n"}, "extra": big}
            for seq in range(2, 6):  # the same answer drafted again: one slot, counted once
                m.dispatch(
                    lab.chat,
                    seq,
                    {
                        "type": "chat/inputAnswerChanged",
                        "turnId": "a1",
                        "requestId": request["id"],
                        "questionId": "name",
                        "answer": answer,
                    },
                )
                assert "rejectionReason" not in await m.echo(seq)
            assert big.__len__() < counted.total - before < 2 * len(big)
            # truncating everything drops the active turn: what was counted for it comes back
            m.dispatch(lab.chat, 6, {"type": "chat/truncated"})
            assert "rejectionReason" not in await m.echo(6)
            assert counted.total == 0

            # a first message, and a fork that keeps it after its source let go of it
            answer = await m.call(
                "createChat",
                {
                    "channel": lab.session,
                    "chat": "ahp-chat:/m1",
                    "initialMessage": {"text": big, "origin": {"kind": "user"}},
                },
            )
            assert "error" not in answer
            first = counted.total
            assert first > len(big)
            await m.call("subscribe", {"channel": "ahp-chat:/m1"})
            await _idle(m, lab, "ahp-chat:/m1")
            [turn] = lab.host.store.state("ahp-chat:/m1")["turns"]
            fork = {"kind": "fork", "chat": "ahp-chat:/m1", "turnId": turn["id"]}
            assert "error" not in await m.call(
                "createChat", {"channel": lab.session, "chat": "ahp-chat:/m2", "source": fork}
            )
            assert counted.total == 2 * first
            m.dispatch("ahp-chat:/m1", 7, {"type": "chat/truncated"})
            assert "rejectionReason" not in await m.echo(7)
            # the fork still holds it, and is still charged; the chat it came from keeps its title
            titled = counted.held["ahp-chat:/m1"][("created",)]
            assert counted.total == first + titled

            # an active client entry counts once, at its latest size, and goes with the client
            tools = [
                {"name": f"t{i}", "description": big, "inputSchema": {"type": "object"}} for i in range(10)
            ]
            entry = {"clientId": "m", "tools": tools}
            m.dispatch(lab.session, 8, {"type": "session/activeClientSet", "activeClient": entry})
            refused = (await m.echo(8)).get("rejectionReason", "")
            assert "max_client_content_bytes" in refused  # 2 MB: more than the bound leaves
            m.dispatch(
                lab.session,
                9,
                {"type": "session/activeClientSet", "activeClient": {**entry, "tools": tools[:1]}},
            )
            assert "rejectionReason" not in await m.echo(9)
            with_entry = counted.total
            m.dispatch(lab.session, 10, {"type": "session/activeClientRemoved", "clientId": "m"})
            assert "rejectionReason" not in await m.echo(10)
            assert counted.total == first + titled < with_entry

    arun(main())


def test_initialize_answers_one_snapshot_per_channel_however_often_it_is_listed(connect_stranger):
    """initialSubscriptions listing one 2 MB chat 256 times made the host build a 512 MB answer."""

    async def main():
        async with open_lab() as lab:
            s = await connect_stranger(lab, "dup")
            answer = await s.call(
                "initialize",
                {
                    "channel": "ahp-root://",
                    "protocolVersions": ["0.8.0"],
                    "clientId": "dup",
                    "initialSubscriptions": [lab.chat] * 200 + [lab.session] * 50,
                },
            )
            assert [snap["resource"] for snap in answer["result"]["snapshots"]] == [lab.chat, lab.session]

    arun(main())
