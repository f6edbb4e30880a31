"""Requirement 6: every input is validated and bounded, on the wire and from cells.

Each attack is refused with one clear sentence, nothing in state changes, and the host, the
attacker's connection and the other clients carry on.
"""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from ahp_lab import ProtocolError
from ahp_lab.protocol.jsonrpc import ErrorCode

from .conftest import ROOT, arun, open_lab


async def subscribed(connect_stranger, lab, name="mallory"):
    s = await connect_stranger(lab, name)
    await s.initialize(name)
    await s.call("subscribe", {"channel": lab.session})
    return s


def nested(depth: int, leaf="x"):
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def test_too_deep_input_gets_an_error_and_the_connection_stays_usable(connect_stranger):
    async def main():
        async with open_lab() as lab:
            s = await subscribed(connect_stranger, lab)
            deep = "[" * 1000 + "]" * 1000
            s.send(
                '{"jsonrpc":"2.0","id":41,"method":"listSessions","params":{"channel":"ahp-root://","_meta":'
                + deep
                + "}}"
            )
            answer = await s.response(41)
            assert (
                answer["error"]["code"] == ErrorCode.INVALID_REQUEST
                and "deeper" in answer["error"]["message"]
            )
            s.send("[" * 100_000)  # unbalanced and far beyond any recursion limit
            await s.wait(lambda: s.errors_without_id())
            # params nested past the limit but within the parser guard: -32602 naming the field
            answer = await s.call("listSessions", {"channel": ROOT, "_meta": nested(70)})
            assert answer["error"]["code"] == ErrorCode.INVALID_PARAMS
            assert "_meta" in answer["error"]["message"] and "deeper than 64" in answer["error"]["message"]
            # a dispatch with _meta nested 254 deep is rejected with a reason, not ignored
            before = lab.session_state
            for seq, depth in ((7, 64), (8, 254)):
                s.dispatch(
                    lab.session, seq, {"type": "session/titleChanged", "title": "t", "_meta": nested(depth)}
                )
                echo = await s.echo(seq)
                assert (
                    "field '_meta" in echo["rejectionReason"]
                    and "deeper than 64 levels" in echo["rejectionReason"]
                )
                assert len(json.dumps(echo)) < 3_000
            assert lab.session_state == before
            assert (await s.call("ping"))["result"] is None

    arun(main())


def test_lone_surrogates_are_refused_at_the_boundary_and_export_keeps_working(connect_stranger, tmp_path):
    async def main():
        async with open_lab() as lab:
            s = await subscribed(connect_stranger, lab)
            s.send(
                '{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"'
                + lab.session
                + '","clientSeq":1,"action":{"type":"session/titleChanged","title":"bad \\ud800 title"}}}'
            )
            echo = await s.echo(1)
            assert "lone surrogate" in echo["rejectionReason"] and "title" in echo["rejectionReason"]
            s.send(
                '{"jsonrpc":"2.0","id":902,"method":"createSession","params":{"channel":"ahp-session:/\\udfff"}}'
            )
            answer = await s.response(902)
            assert (
                answer["error"]["code"] == ErrorCode.INVALID_PARAMS
                and "lone surrogate" in answer["error"]["message"]
            )
            with pytest.raises(ProtocolError, match="lone surrogate"):
                lab.dispatch({"type": "session/titleChanged", "title": "cell \ud800"})
            with pytest.raises(ProtocolError, match="lone surrogate"):
                await lab.send("prompt \udc00")
            lab.export(tmp_path / "run.jsonl")  # still encodable
            assert all("\\ud800" not in t for t in s.texts)

    arun(main())


def test_client_seq_and_request_ids_must_be_integers_in_range_and_an_action_an_object(connect_stranger):
    async def main():
        async with open_lab() as lab:
            s = await subscribed(connect_stranger, lab)
            watcher = await subscribed(connect_stranger, lab, "watcher")
            seen = len(watcher.envelopes())
            for raw_seq in ('"abc"', "1.5", "NaN", "-1", "9007199254740993", "true", "null"):
                s.send(
                    '{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"'
                    + lab.session
                    + '","clientSeq":'
                    + raw_seq
                    + ',"action":{"type":"session/titleChanged","title":"x"}}}'
                )
            for action in ("", ',"action":null', ',"action":[1]', ',"action":"x"'):  # no action to echo
                s.send(
                    '{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"'
                    + lab.session
                    + '","clientSeq":1'
                    + action
                    + "}}"
                )
            assert (await s.call("ping"))["result"] is None  # the connection handles them in order
            # a notification is never answered (overview §2): only the one that is not JSON is
            assert [e["code"] for e in s.errors_without_id()] == [ErrorCode.PARSE_ERROR]
            for raw_id in (
                "NaN",
                "Infinity",
                "-Infinity",
                "1.5",
                "true",
                "[1]",
                '{"a":1}',
                "1e400",
                "9007199254740993",
            ):
                s.send('{"jsonrpc":"2.0","id":' + raw_id + ',"method":"ping"}')
            await s.wait(lambda: len(s.errors_without_id()) >= 10)
            for text in s.texts:  # every answer is strict JSON: no NaN or Infinity values
                json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} on the wire"))
            assert (await watcher.call("ping"))["result"] is None
            assert len(watcher.envelopes()) == seen  # nothing was echoed to anyone
            assert lab.session_state["title"] != "x"
            # string ids are fine
            s.send('{"jsonrpc":"2.0","id":"req-1","method":"ping"}')
            assert (await s.response("req-1"))["result"] is None

    arun(main())


def test_create_session_params_are_validated_field_by_field(connect_stranger):
    async def main():
        async with open_lab() as lab:
            s = await connect_stranger(lab)
            await s.initialize()
            cases = [
                ({"title": 123}, "title"),
                ({"title": {"markdown": "x"}}, "title"),
                ({"workingDirectories": "abc"}, "workingDirectories"),
                ({"workingDirectories": [1]}, "workingDirectories[0]"),
                ({"provider": ["scripted"]}, "provider"),
                ({"activeClient": {"clientId": "stranger", "tools": "all"}}, "activeClient.tools"),
                ({"fork": {"session": 1}}, "fork"),
            ]
            for n, (extra, field) in enumerate(cases):
                uri = f"ahp-session:/bad-{n}"
                answer = await s.call("createSession", {"channel": uri, **extra})
                assert answer["error"]["code"] == ErrorCode.INVALID_PARAMS, extra
                assert f"'{field}" in answer["error"]["message"], answer["error"]["message"]
                assert uri not in lab.host.sessions and not lab.store.has_channel(uri)
            assert (await s.call("createSession", {"channel": "ahp-session:/good", "title": "fine"}))[
                "result"
            ] is None

    arun(main())


def test_huge_values_are_refused_and_a_rejected_action_is_logged_truncated(connect_stranger):
    async def main():
        async with open_lab(limits={"max_message_bytes": 4_000_000}) as lab:
            s = await subscribed(connect_stranger, lab)
            big = "A" * 5_000_000  # over the frame limit: refused unread, with the request's id
            s.send(
                '{"jsonrpc":"2.0","id":9,"method":"createSession","params":{"channel":"ahp-session:/big","title":"'
                + big
                + '"}}'
            )
            answer = await s.response(9)
            assert "over the limit of 4,000,000" in answer["error"]["message"]
            title = "T" * 1_500_000  # within the frame, over the string limit
            s.dispatch(lab.session, 1, {"type": "session/titleChanged", "title": title})
            echo = await s.echo(1)
            assert (
                "title" in echo["rejectionReason"]
                and "over the limit of 1,000,000" in echo["rejectionReason"]
            )
            assert len(json.dumps(echo)) < 5_000
            logged = lab.transitions[echo["serverSeq"]]
            assert not logged.accepted and len(json.dumps(logged.action)) < 5_000
            assert logged.action["type"] == "session/titleChanged"
            with pytest.raises(ProtocolError, match="over the limit"):
                lab.dispatch({"type": "session/titleChanged", "title": title})
            assert lab.session_state["title"] != title

    arun(main())


def test_subscriptions_per_connection_are_bounded(connect_stranger):
    async def main():
        async with open_lab(limits={"max_subscriptions": 3}) as lab:
            s = await connect_stranger(lab)
            await s.initialize()
            for n in range(3):
                await s.call("createSession", {"channel": f"ahp-session:/s{n}"})
                assert "result" in await s.call("subscribe", {"channel": f"ahp-session:/s{n}"})
            answer = await s.call("subscribe", {"channel": lab.session})
            assert (
                answer["error"]["code"] == ErrorCode.INVALID_REQUEST
                and "the limit is 3" in answer["error"]["message"]
            )
            s.notify("unsubscribe", {"channel": "ahp-session:/s0"})
            assert "result" in await s.call("subscribe", {"channel": lab.session})

    arun(main())


class Stall:
    """A host extension whose requests wait until released (a slow backend)."""

    methods = frozenset({"stall"})

    def __init__(self) -> None:
        self.release = asyncio.Event()

    def handle_request(self, connection, method, params):
        async def wait():
            await self.release.wait()
            return {}

        return wait()


def test_too_many_requests_in_flight_are_refused_and_the_rest_answered(connect_stranger):
    async def main():
        async with open_lab(limits={"max_pending_requests": 2}) as lab:
            stall = Stall()
            lab.host.extensions.append(stall)
            s = await connect_stranger(lab)
            await s.initialize()
            for rid in (1, 2):
                s.send({"jsonrpc": "2.0", "id": rid, "method": "stall", "params": {"channel": ROOT}})
            refused = await s.call("stall", {"channel": ROOT})
            assert refused["error"]["code"] == ErrorCode.INVALID_REQUEST
            assert "the limit is 2" in refused["error"]["message"]
            assert (await s.call("ping"))["result"] is None  # ping is always answered
            stall.release.set()
            assert (await s.response(1))["result"] == {} and (await s.response(2))["result"] == {}
            assert (await s.call("stall", {"channel": ROOT}))["result"] == {}

    arun(main())


def test_from_a_cell_too_deep_or_non_json_values_are_refused_with_a_reason_not_a_crash():
    async def main():
        async with open_lab() as lab:
            before = lab.store.last_seq
            for meta, rule in (
                (nested(10_000), "deeper than 64 levels"),
                ({"when": float("nan")}, "must be a finite number"),
                ({"blob": b"bytes"}, "which JSON cannot carry"),
                ({1: "int key"}, "JSON keys are strings"),
            ):
                with pytest.raises(ProtocolError, match=rule):
                    lab.dispatch({"type": "session/titleChanged", "title": "t", "_meta": meta})
            assert lab.store.last_seq == before  # nothing was sent, nothing recorded

    arun(main())


def test_names_and_counts_chosen_by_a_peer_are_bounded_in_answers(connect_stranger):
    async def main():
        async with open_lab(limits={"max_subscriptions": 4}) as lab:
            s = await connect_stranger(lab)
            answer = await s.call("m" * 100_000, {})
            assert len(answer["error"]["message"]) < 300
            flood = await s.initialize("many", initialSubscriptions=[ROOT] * 5)
            assert (
                flood["error"]["code"] == ErrorCode.INVALID_PARAMS
                and "over the limit" in flood["error"]["message"]
            )
            assert lab.host.connection_of("many") is None
            assert "result" in await s.initialize("many", initialSubscriptions=[ROOT, lab.session])
            answer = await s.call("m" * 100_000, {})
            assert (
                answer["error"]["code"] == ErrorCode.METHOD_NOT_FOUND
                and len(answer["error"]["message"]) < 300
            )

    arun(main())


def test_a_50_mb_title_and_a_10_mb_rejected_action_never_reach_state_or_the_log(connect_stranger):
    async def main():
        async with open_lab() as lab:
            s = await subscribed(connect_stranger, lab)
            # over the message limit, within the frame a socket reads (the limit and 1 MiB): an error
            wire_title = "T" * 16_900_000
            s.send(
                '{"jsonrpc":"2.0","id":77,"method":"createSession","params":{"channel":"ahp-session:/t","title":"'
                + wire_title
                + '"}}'
            )
            answer = await s.response(77)
            assert (
                answer["error"]["code"] == ErrorCode.INVALID_REQUEST
                and "over the limit" in answer["error"]["message"]
            )
            assert "ahp-session:/t" not in lab.host.sessions
            with pytest.raises(ProtocolError, match="over the limit of 1,000,000"):
                lab.dispatch({"type": "session/titleChanged", "title": "T" * 50_000_000})
            # 10 MB in many small strings: within every per-field limit, but host-only, so rejected
            bulk = {f"k{n}": "v" * 500 for n in range(20_000)}
            s.dispatch(lab.session, 5, {"type": "session/ready", "_meta": bulk})
            echo = await s.echo(5)
            assert "host-only" in echo["rejectionReason"]
            logged = lab.transitions[echo["serverSeq"]]
            assert not logged.accepted and len(json.dumps(logged.action)) < 5_000
            assert len(json.dumps(echo)) < 5_000

    arun(main())


def test_tool_results_with_lone_surrogates_or_over_the_size_limit_fail_the_call_and_the_turn_goes_on(
    tmp_path,
):
    from ahp_lab.agents.scripted import call, say

    async def main():
        async with open_lab(limits={"max_tool_result_bytes": 100_000}) as lab:

            @lab.tool
            def broken_text() -> str:
                return "bad \ud800 result"

            @lab.tool
            def huge() -> list:
                return ["x" * 500] * 400  # 200 KB of JSON in short strings

            @lab.server_tool
            def huge_on_the_host() -> list:
                return ["y" * 500] * 400

            script = [call("broken_text"), call("huge"), call("huge_on_the_host"), say("done")]
            turn = await lab.send("go", script=script)
            surrogate, client_big, server_big = (tc.result_text for tc in turn.tool_calls)
            assert "lone surrogate" in surrogate
            assert "over the limit of 100,000" in client_big and "over the limit of 100,000" in server_big
            assert not any(tc.state.get("success") for tc in turn.tool_calls)
            assert turn.text.endswith("done")
            lab.export(tmp_path / "run.jsonl")  # still encodable

    arun(main())


def test_strangers_cannot_create_sessions_without_bound(connect_stranger):
    async def main():
        async with open_lab(limits={"max_client_channels": 3}) as lab:
            a = await connect_stranger(lab, "a")
            await a.initialize("a")
            b = await connect_stranger(lab, "b")
            await b.initialize("b")
            for client, uri in ((a, "ahp-session:/a1"), (b, "ahp-session:/b1"), (b, "ahp-session:/b2")):
                assert (await client.call("createSession", {"channel": uri}))["result"] is None
            refused = await b.call("createSession", {"channel": "ahp-session:/b3"})
            assert (
                refused["error"]["code"] == ErrorCode.INVALID_REQUEST
                and "the limit is 3" in refused["error"]["message"]
            )
            assert "ahp-session:/b3" not in lab.host.sessions
            assert (await a.call("disposeSession", {"channel": "ahp-session:/a1"}))["result"] is None
            assert (await b.call("createSession", {"channel": "ahp-session:/b3"}))["result"] is None
            # the notebook is not counted, nor limited
            await lab.client.request("createSession", {"channel": "ahp-session:/mine"})
            assert "ahp-session:/mine" in lab.host.sessions

    arun(main())


def test_the_served_hosts_frame_log_keeps_only_the_head_of_large_frames():
    """Twenty 5 MB frames: the raw wire log keeps their sizes but not their bodies."""
    from ahp_lab.transport import connect_websocket
    from ahp_lab.transport.tap import KEPT_CHARS

    from .conftest import Stranger

    async def main():
        async with open_lab() as lab:
            s = Stranger(await connect_websocket(await lab.aserve()))
            big = '{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"x":"' + "x" * 5_000_000 + '"}}'
            for n in range(20):
                s.send(big % n)
                answer = await s.response(n)
                assert answer["id"] == n  # handled and answered
            kept = [f for f in lab.frames.frames if f.direction == "in"]
            assert len(kept) == 20 and all(f.size > 5_000_000 and f.truncated for f in kept)
            assert sum(len(f.text) for f in lab.frames.frames) < 21 * KEPT_CHARS + 100_000
            assert kept[0].info()["method"] == "ping" and kept[0].info()["id"] == 0

    arun(main())


def test_a_rejection_reason_quoting_a_huge_id_is_cut_in_the_echo_and_the_log(connect_stranger):
    async def main():
        async with open_lab() as lab:
            s = await subscribed(connect_stranger, lab)
            huge = "i" * 900_000  # within every limit, and no such customization
            s.dispatch(lab.session, 3, {"type": "session/customizationToggled", "id": huge, "enabled": True})
            echo = await s.echo(3)
            reason = echo["rejectionReason"]
            assert reason.startswith("session/customizationToggled: no customization with id 'iii")
            assert "more characters]" in reason and len(reason) < 2_100
            assert lab.transitions[echo["serverSeq"]].rejection_reason == reason

    arun(main())


def test_an_integer_a_double_cannot_hold_is_refused_like_1e400(connect_stranger):
    """Other peers read JSON numbers as doubles: a 400-digit integer would reach them as Infinity."""

    async def main():
        async with open_lab() as lab:
            s = await subscribed(connect_stranger, lab)
            s.dispatch(
                lab.session, 1, {"type": "session/titleChanged", "title": "t", "_meta": {"n": 10**400}}
            )
            echo = await s.echo(1)
            assert (
                "'_meta.n'" in echo["rejectionReason"]
                and "beyond the range of a double" in echo["rejectionReason"]
            )
            s.dispatch(
                lab.session, 2, {"type": "session/titleChanged", "title": "t2", "_meta": {"n": 10**300}}
            )
            assert "rejectionReason" not in await s.echo(2)
            assert lab.session_state["title"] == "t2"

    arun(main())


def test_a_flood_of_large_drafts_from_a_stranger_stays_within_the_hosts_log_budget(connect_stranger):
    budget = 3_000_000

    async def main():
        async with open_lab(limits={"max_log_bytes": budget}) as lab:
            s = await connect_stranger(lab, "mallory")
            await s.initialize("mallory")
            await s.call("subscribe", {"channel": lab.chat})
            first = lab.store.first_seq
            for n in range(1, 121):
                s.dispatch(
                    lab.chat,
                    n,
                    {
                        "type": "chat/draftChanged",
                        "draft": {"text": f"{n:03}" + "z" * 90_000, "origin": {"kind": "user"}},
                    },
                )
                s.dispatch(lab.chat, 1_000 + n, {"type": "chat/nonsense", "blob": "q" * 5_000})
                assert "rejectionReason" not in await s.echo(n)
                assert "rejectionReason" in await s.echo(1_000 + n)
            assert lab.store.state(lab.chat)["draft"]["text"].startswith("120")
            assert lab.store.log_bytes <= budget
            assert lab.store.first_seq > first  # the oldest transitions were dropped, not the newest
            assert lab.transitions[-1].origin["clientSeq"] == 1_120
            # the notebook's own time travel says what happened to an old seq
            with pytest.raises(IndexError, match="was dropped to keep the transition log within"):
                lab.state_at(first)
            # a client that reconnects from before the cut gets snapshots, not a broken replay
            again = await connect_stranger(lab, "mallory-again")
            answer = await again.reconnect("mallory-again", first, [lab.chat])
            assert answer["result"]["type"] == "snapshot"

    arun(main())


def test_a_flood_of_costly_requests_waits_its_turn_and_fetch_turns_sends_a_history_once(connect_stranger):
    """A stranger pipelining requests that make the host send a chat's history (each subscribe
    answers with its snapshot) is charged for what they make the host send: past its budget its
    requests wait, in order, while another client's subscribe is answered at once; what waits
    counts as pending. fetchTurns sends a windowed client the turns it lacks once: each fetch paged
    in the whole chat again, so four strangers' fetches of a 100 MB chat held the loop 6 s
    (attacker round 14); the next ones page in nothing, and a full subscriber's pages in nothing."""
    user = {"text": "hi", "origin": {"kind": "user"}}

    async def main():
        async with open_lab(limits={"max_request_bytes_per_s": 200_000}) as lab:
            for i in range(300):
                for action in (
                    {"type": "chat/turnStarted", "turnId": f"t{i}", "startedAt": "x", "message": user},
                    {"type": "chat/responsePart", "turnId": f"t{i}", "part": {"kind": "markdown", "id": "p", "content": "w" * 2_000}},
                    {"type": "chat/turnComplete", "turnId": f"t{i}"},
                ):  # fmt: skip
                    lab.host.dispatch(lab.chat, action)
            mallory = await connect_stranger(lab, "mallory")
            await mallory.initialize("mallory")
            await mallory.call("subscribe", {"channel": lab.chat, "view": {"turns": 0}})
            alice = await connect_stranger(lab, "alice")
            await alice.initialize("alice")
            await alice.call("subscribe", {"channel": lab.chat})
            fetch = {"channel": lab.chat}
            for n in range(1, 31):
                mallory.send({"jsonrpc": "2.0", "id": n, "method": "fetchTurns", "params": fetch})
            await mallory.response(30)
            loaded = [
                e["action"]["turns"] for e in mallory.envelopes() if e["action"]["type"] == "chat/turnsLoaded"
            ]
            assert sum(len(t) for t in loaded) == 300 and loaded[-29:] == [[]] * 29  # the history once
            # the history goes to the client that asked for it, not to every subscriber
            assert not [e for e in alice.envelopes() if e["action"]["type"] == "chat/turnsLoaded"]
            answer = await alice.call("fetchTurns", fetch)  # a full subscriber holds every turn
            assert "result" in answer and alice.envelopes()[-1]["action"] == {
                "type": "chat/turnsLoaded",
                "turns": [],
            }

            for n in range(31, 61):
                mallory.send(
                    {"jsonrpc": "2.0", "id": n, "method": "subscribe", "params": {"channel": lab.chat}}
                )
            mallory.send({"jsonrpc": "2.0", "id": 99, "method": "ping"})
            await mallory.response(99)  # every subscribe has arrived; ping is never held back
            answer = await alice.call("subscribe", {"channel": lab.session})
            assert "result" in answer and not alice.closed
            answered = [m["id"] for m in mallory.received if m.get("id") in range(31, 61)]
            assert len(answered) < 10, f"{len(answered)} of 30 subscribes were served at once"
            assert answered == list(range(31, 31 + len(answered)))  # in order
            # what waits counts as pending: past max_pending_requests the host refuses at once
            for n in range(100, 160):
                mallory.send(
                    {"jsonrpc": "2.0", "id": n, "method": "subscribe", "params": {"channel": lab.chat}}
                )
            refused = await mallory.response(159)
            assert "requests waiting for an answer" in refused["error"]["message"]

    arun(main())


def test_a_flood_of_dispatches_is_read_at_the_rate_of_its_budget_and_nothing_is_lost(connect_stranger):
    """Every accepted dispatch is broadcast to every subscriber, so a stranger flooding large
    drafts makes the host send what it sends times the subscribers. Past its budget its next
    messages are not read until the budget refills: another client is answered meanwhile, and
    every draft still arrives, whole and in order."""
    rate, count, size = 400_000, 60, 50_000  # 3 MB broadcast, 1.6 MB of burst: ~3.5 s of waiting

    async def main():
        async with open_lab(limits={"max_request_bytes_per_s": rate}) as lab:
            alice = await connect_stranger(lab, "alice")
            await alice.initialize("alice")
            await alice.call("subscribe", {"channel": lab.chat})
            mallory = await connect_stranger(lab, "mallory")
            await mallory.initialize("mallory")
            loop = asyncio.get_running_loop()
            start = loop.time()
            for n in range(1, count + 1):
                draft = {"text": f"{n:03}" + "z" * size, "origin": {"kind": "user"}}
                mallory.dispatch(lab.chat, n, {"type": "chat/draftChanged", "draft": draft})
            mallory.send({"jsonrpc": "2.0", "id": 99, "method": "ping"})
            answer = await alice.call("subscribe", {"channel": lab.session})
            assert "result" in answer and not alice.closed
            assert not any(m.get("id") == 99 for m in mallory.received)  # mallory still waits
            await mallory.response(99, timeout=60)  # read after every dispatch before it
            elapsed = loop.time() - start
            assert elapsed > 0.5 * (count * size - 4 * rate) / rate, f"the flood took only {elapsed:.2f} s"

            def drafts() -> list[str]:
                return [
                    e["action"]["draft"]["text"]
                    for e in alice.envelopes()
                    if e["action"]["type"] == "chat/draftChanged"
                ]

            await alice.wait(lambda: len(drafts()) == count)
            assert [t[:3] for t in drafts()] == [f"{n:03}" for n in range(1, count + 1)]
            assert all(len(t) == 3 + size for t in drafts())
            assert lab.store.state(lab.chat)["draft"]["text"].startswith(f"{count:03}")

    arun(main())


def test_dropped_notifications_cannot_fill_the_hosts_log_however_many_connections(
    connect_stranger, caplog, monkeypatch
):
    """Five log lines a connection let a stranger opening connection after connection write
    about 730 KiB of log a second; the host logs at most 20 reasons a minute in all."""
    from ahp_lab.host import connection
    from ahp_lab.transport.jsonrpc import PerMinute

    monkeypatch.setattr(connection, "_refusals", PerMinute())  # a minute of its own

    async def main():
        async with open_lab() as lab:
            for n in range(30):
                s = await connect_stranger(lab, f"churn-{n}")
                await s.initialize(f"churn-{n}")
                for _ in range(3):
                    s.send(
                        '{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"x","clientSeq":-1}}'
                    )
                assert (await s.call("ping"))["result"] is None
                s.close()

    with caplog.at_level(logging.WARNING, logger="ahp_lab.host"):
        arun(main())
    dropped = [r.getMessage() for r in caplog.records if r.getMessage().startswith("dropped a notification")]
    assert len(dropped) == 20
    assert dropped[-1].endswith("(further ones this minute are not logged)")


def test_limits_a_lab_raises_apply_to_its_own_cells_too():
    """The notebook's client checked each dispatch against the default limits before sending it:
    ``Lab(limits={"max_string_chars": 4_000_000})``, as the docs show, still refused a 2 MB title
    from a cell, while the host would have taken it."""

    async def main():
        async with open_lab(limits={"max_string_chars": 4_000_000}) as lab:
            accepted = await lab.adispatch({"type": "session/titleChanged", "title": "x" * 2_000_000})
            with pytest.raises(ProtocolError, match="over the limit of 4,000,000"):
                await lab.adispatch({"type": "session/titleChanged", "title": "x" * 5_000_000})
            return accepted.accepted, len(lab.session_state["title"])

    assert arun(main()) == (True, 2_000_000)
