"""Several clients on one session over real sockets: they stay identical to the host.

A randomized run of 10,000 client actions (titles, read/archived flags, drafts, and actions the
host rejects) from 2 or 10 clients, while sockets are killed at random from either side. The
clients reconnect with backoff and replay; at the end each client's confirmed *and* optimistic
state equals the host's (except ``modifiedAt``, which each side stamps from its own clock), no
envelope was applied twice or skipped, and every dispatch is accounted for: sequenced by the host
or reported in ``client.unconfirmed``.
"""

from __future__ import annotations

import contextlib
import random

import pytest

import ahp_lab
from ahp_lab.host import Host
from ahp_lab.protocol.jsonvalue import to_json

from .conftest import ROOT, run, served, without_modified_at

ACTIONS = 10_000


def _random_action(rng: random.Random, me: str, session: str, chat: str) -> tuple[str, dict]:
    roll = rng.random()
    if roll < 0.35:
        return session, {"type": "session/titleChanged", "title": f"{me} {rng.randrange(1000)}"}
    if roll < 0.5:
        return session, {"type": "session/isReadChanged", "isRead": rng.random() < 0.5}
    if roll < 0.6:
        return session, {"type": "session/isArchivedChanged", "isArchived": rng.random() < 0.5}
    if roll < 0.9:
        text = f"draft by {me} #{rng.randrange(1000)}"
        return chat, {"type": "chat/draftChanged", "draft": {"text": text, "origin": {"kind": "user"}}}
    # rejected by the host: there is no such pending message
    return chat, {"type": "chat/pendingMessageRemoved", "kind": "queued", "id": f"nope-{rng.randrange(99)}"}


def _kill(rng: random.Random, server, clients) -> None:
    """Abort one socket without a closing handshake, from the host's side or a client's."""
    if rng.random() < 0.5 and server.transports:
        victim = rng.choice(sorted(server.transports, key=id))
        victim.ws.transport.abort()
    else:
        client = rng.choice(clients)
        ws = getattr(client.peer.transport, "ws", None)
        if ws is not None:
            ws.transport.abort()


async def _settled(client) -> None:
    """Connected again and one round trip answered (a socket killed just now is still resuming)."""
    while True:
        await client.wait_for(ROOT, lambda _s: True if client.connected else None, timeout=60)
        try:
            return await client.settle()
        except ConnectionError:
            continue  # the drop was noticed only now: wait for the resume


@pytest.mark.parametrize("n_clients", [2, 10])
def test_clients_stay_identical_to_the_host_through_random_disconnects(n_clients):
    rng = random.Random(1000 + n_clients)

    async def main():
        # a long grace period: a dropped client stays active, so reconnects replay, not re-create
        async with served(Host(client_grace_s=120)) as (host, server):
            clients = [
                await ahp_lab.connect(server.url_with_token, client_id=f"c{i}") for i in range(n_clients)
            ]
            for c in clients:  # resumed at once, each time: the kills come faster than any network flaps
                c.reconnector.base_s = 0.01
                c.reconnector.STABLE_S = 0.0
            session = await clients[0].create_session(title="shared")
            ready = await clients[0].wait_for(
                session, lambda s: s if s.get("lifecycle") == "ready" else None, timeout=30
            )
            chat = ready["defaultChat"]
            applied: dict[str, dict[str, list[int]]] = {c.client_id: {session: [], chat: []} for c in clients}
            for c in clients:
                await c.subscribe(session)
                await c.subscribe(chat)

                def record(channel, env, _before, _after, _now, log=applied[c.client_id]):
                    if channel in log:
                        log[channel].append(env.get("serverSeq") if "serverSeq" in env else ("snapshot", env))

                c.on_confirmed(record)
            first_seq = host.store.last_seq

            kills = 0
            for k in range(ACTIONS):
                client = rng.choice(clients)
                channel, action = _random_action(rng, client.client_id, session, chat)
                client.dispatch(channel, action)
                if rng.random() < 1 / 400:
                    _kill(rng, server, clients)
                    kills += 1
                if k % 25 == 0:  # let the sockets move: one round trip of some connected client
                    live = [c for c in clients if c.connected]
                    if live:
                        with contextlib.suppress(ConnectionError):  # just killed: it is reconnecting
                            await rng.choice(live).settle()
            for c in clients:
                await _settled(c)
            for c in clients:  # after every resume: what the last resumes resent has reached them all
                await c.settle()

            expected_session = without_modified_at(to_json(host.store.state(session)))
            expected_chat = without_modified_at(to_json(host.store.state(chat)))
            host_seqs = {
                ch: [t.seq for t in host.store.transitions[first_seq + 1 :] if t.channel == ch]
                for ch in (session, chat)
            }
            resumes = []
            accounted = 0
            for c in clients:
                for ch, expected in ((session, expected_session), (chat, expected_chat)):
                    assert without_modified_at(to_json(c.confirmed(ch))) == expected, (c.client_id, ch)
                    assert without_modified_at(to_json(c.state(ch))) == expected, (c.client_id, ch)
                    assert c.channels[ch].pending == []
                    seen = [s for s in applied[c.client_id][ch] if isinstance(s, int)]
                    assert seen == sorted(set(seen)), "an envelope was applied twice or out of order"
                    if not any(isinstance(s, tuple) for s in applied[c.client_id][ch]):
                        # no snapshot reset: every envelope of the channel, no gaps
                        assert [s for s in seen if s > first_seq] == host_seqs[ch]
                sequenced = {
                    t.origin.get("clientSeq")
                    for t in host.store.transitions
                    if t.origin.get("clientId") == c.client_id
                }
                lost = {e["clientSeq"] for e in c.unconfirmed}
                assert sequenced | lost >= set(range(1, c.client_seq + 1)), "a dispatch vanished silently"
                accounted += len(sequenced | lost)
                resumes.extend(c.reconnector.history)
            assert kills > 5 and len(resumes) >= kills // 2
            assert {r["mode"] for r in resumes} == {"replay"}
            assert accounted == ACTIONS
            # what was in flight on a killed socket (never reached the host, or its echo was lost)
            lost = sum(len(c.unconfirmed) for c in clients)
            assert lost < ACTIONS * 0.05, f"{lost} dispatches lost in flight in {kills} kills"
            for c in clients:
                await c.aclose()

    run(main(), timeout=600)
