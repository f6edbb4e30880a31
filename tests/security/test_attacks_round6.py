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
            assert "max_client_content_bytes" in refused and "truncate or dispose" in refused
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

            # truncating after the first turn gives back the two turns it drops (and the notebook's)
            mallory.dispatch(lab.chat, 30, {"type": "chat/truncated", "turnId": "m1"})
            assert "rejectionReason" not in await mallory.echo(30)
            assert lab.host.client_content.total <= held - 2 * TEXT
            mallory.dispatch(lab.chat, 31, _turn("m5"))
            assert "rejectionReason" not in await mallory.echo(31)
            await _idle(mallory, lab, lab.chat)

            # a chat the stranger fills and disposes of gives back all of it
            side = "ahp-chat:/mallory-side"
            assert "error" not in await mallory.call("createChat", {"channel": lab.session, "chat": side})
            await mallory.call("subscribe", {"channel": side})
            before = lab.host.client_content.total
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
