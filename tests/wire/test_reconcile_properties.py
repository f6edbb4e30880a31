"""Write-ahead reconciliation (overview §6) is exact: a hypothesis-driven host and one client.

The model host holds the authoritative state of one session channel and the ordered inboxes of a
real connection: this client's dispatches reach it in order and are accepted, rejected, dropped
(no echo, as for a vanished channel) or normalized (the host echoes a different action than the
one sent); other clients' actions interleave. Envelopes reach the client in server order, and
some arrive twice (a replay overlapping what arrived live). A ``ping`` round trip settles the
dispatches the host dropped. After every step:

* ``optimistic == reduce(confirmed, pending)``, exactly;
* ``confirmed`` equals the host's state at the last server seq the client applied;

and once every message is delivered the client's states equal the host's and nothing is pending.
"""

from __future__ import annotations

from collections import deque

from hypothesis import given, settings
from hypothesis import strategies as st

from ahp_lab.client.reconcile import Replica
from ahp_lab.reducers import REDUCERS
from tests.conftest import examples

NOW = 9999
ME, OTHER = "me", "other"
SESSION = "ahp-session:/11111111-2222-4333-8444-555555555555"
INITIAL = {
    "summary": {"resource": SESSION, "provider": "scripted", "title": "start", "status": 1},
    "lifecycle": "ready",
    "title": "start",
    "activeClients": [],
    "chats": [],
}
reduce_session = REDUCERS["session"]

titles = st.sampled_from(["a", "b", "c", "d"])
actions = st.one_of(
    st.builds(lambda t: {"type": "session/titleChanged", "title": t}, titles),
    st.builds(lambda v: {"type": "session/isReadChanged", "isRead": v}, st.booleans()),
    st.builds(lambda v: {"type": "session/isArchivedChanged", "isArchived": v}, st.booleans()),
    st.builds(
        lambda c, n: {
            "type": "session/activeClientSet",
            "activeClient": {"clientId": c, "displayName": n, "tools": []},
        },
        st.sampled_from(["x", "y"]),
        titles,
    ),
    st.builds(lambda c: {"type": "session/activeClientRemoved", "clientId": c}, st.sampled_from(["x", "y"])),
)
# what the host does with the next dispatch it reads from this client
verdicts = st.sampled_from(["accept", "accept", "accept", "reject", "drop", "normalize"])
steps = st.lists(
    st.one_of(
        st.tuples(st.just("dispatch"), actions),
        st.tuples(st.just("foreign"), actions),
        st.tuples(st.just("host"), verdicts),
        st.tuples(st.just("deliver"), st.integers(1, 4)),
        st.tuples(st.just("redeliver"), st.integers(0, 50)),
        st.tuples(st.just("settle"), st.none()),
    ),
    max_size=80,
)


def fold(state, pending):
    for _, action in pending:
        state = reduce_session(state, action, NOW)
    return state


class ModelHost:
    def __init__(self) -> None:
        self.state = INITIAL
        self.seq = 0
        self.history = {0: INITIAL}  # server seq -> state after it
        self.inbox: deque = deque()  # this client's dispatches, in the order sent
        self.outbox: deque = deque()  # envelopes to this client, in server order
        self.sent: list[dict] = []  # every envelope ever sent (for redelivery)
        self.settled = 0  # the client knows the host is done with its client seqs up to this

    def _sequence(self, action: dict, origin: dict | None, reason: str | None = None) -> None:
        self.seq += 1
        if reason is None:
            self.state = reduce_session(self.state, action, NOW)
        self.history[self.seq] = self.state
        env = {"channel": SESSION, "action": action, "serverSeq": self.seq}
        if origin is not None:
            env["origin"] = origin
        if reason is not None:
            env["rejectionReason"] = reason
        self.outbox.append(env)
        self.sent.append(env)

    def deliver(self, replica: Replica) -> None:
        message = self.outbox.popleft()
        if "pong" in message:
            replica.forget_through(message["pong"], NOW)
            self.settled = max(self.settled, message["pong"])
        else:
            replica.receive(message, ME, NOW)
            origin = message.get("origin") or {}
            if origin.get("clientId") == ME:
                self.settled = max(self.settled, origin["clientSeq"])

    def foreign(self, action: dict) -> None:
        self._sequence(action, {"clientId": OTHER, "clientSeq": self.seq + 1})

    def handle_next(self, verdict: str) -> None:
        if not self.inbox:
            return
        client_seq, action = self.inbox.popleft()
        if action is None:  # a ping: answered after every dispatch sent before it
            self.outbox.append({"pong": client_seq})
            return
        origin = {"clientId": ME, "clientSeq": client_seq}
        if verdict == "drop":
            return  # e.g. the channel vanished: no echo at all
        if verdict == "reject":
            self._sequence(action, origin, "rejected by the model host")
        elif verdict == "normalize":
            self._sequence({**action, "type": "session/titleChanged", "title": "normalized"}, origin)
        else:
            self._sequence(action, origin)


def check(replica: Replica, host: ModelHost) -> None:
    assert replica.optimistic == fold(replica.confirmed, replica.pending)
    assert replica.confirmed == host.history[replica.seq]
    # nothing the host is known to be done with stays pending (echoed, rejected or dropped)
    assert all(seq > host.settled for seq, _ in replica.pending)


@settings(max_examples=examples(400), deadline=None)
@given(steps)
def test_reconciliation_is_exact(run):
    host = ModelHost()
    replica = Replica("session", INITIAL, 0)
    client_seq = 0
    for op, arg in run:
        if op == "dispatch":
            client_seq += 1
            replica.dispatch(client_seq, arg, NOW)
            host.inbox.append((client_seq, arg))
        elif op == "foreign":
            host.foreign(arg)
        elif op == "host":
            host.handle_next(arg)
        elif op == "deliver":
            for _ in range(arg):
                if host.outbox:
                    host.deliver(replica)
        elif op == "settle":
            host.inbox.append((client_seq, None))
        elif op == "redeliver" and host.sent:
            env = host.sent[arg % len(host.sent)]
            if env["serverSeq"] <= replica.seq:  # only what already arrived can arrive again
                before = (replica.confirmed, list(replica.pending), replica.optimistic)
                assert replica.receive(env, ME, NOW).kind == "stale"
                assert (replica.confirmed, replica.pending, replica.optimistic) == before
        check(replica, host)
    # a last round trip; the host answers everything left, then every message is delivered
    host.inbox.append((client_seq, None))
    while host.inbox:
        host.handle_next("accept")
    while host.outbox:
        host.deliver(replica)
        check(replica, host)
    assert replica.pending == []
    assert replica.confirmed == host.state
    assert replica.optimistic == host.state


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(actions, min_size=1, max_size=20), st.data())
def test_rejection_rolls_back_and_rebases_the_rest(dispatched, data):
    """Reject one pending action in the middle: the others still apply, in order, on the host's state."""
    host = ModelHost()
    replica = Replica("session", INITIAL, 0)
    for i, action in enumerate(dispatched, 1):
        replica.dispatch(i, action, NOW)
        host.inbox.append((i, action))
    victim = data.draw(st.integers(1, len(dispatched)))
    while host.inbox:
        host.handle_next("reject" if host.inbox[0][0] == victim else "accept")
    expected = INITIAL
    for i, action in enumerate(dispatched, 1):
        if i != victim:
            expected = reduce_session(expected, action, NOW)
    outcomes = []
    while host.outbox:
        outcomes.append(replica.receive(host.outbox.popleft(), ME, NOW).kind)
        check(replica, host)
    assert outcomes.count("own-rejected") == 1 and outcomes.count("own") == len(dispatched) - 1
    assert replica.optimistic == replica.confirmed == expected == host.state
