"""The connection lifecycle as an independent client (or an attacker) meets it on the wire."""

from __future__ import annotations

import json

from ahp_lab.protocol import SUPPORTED_VERSIONS
from ahp_lab.protocol.jsonrpc import ErrorCode

from .conftest import ROOT, arun, joined, open_lab, publish


def test_ping_is_answered_before_initialize_and_other_requests_are_not_initialized(connect_stranger, caplog):
    async def main():
        async with open_lab() as lab:
            s = await connect_stranger(lab)
            pong = await s.call("ping", {"channel": ROOT})
            assert pong["result"] is None
            assert '"result":null' in s.texts[-1]  # the key is there, even for null
            for method, params in [
                ("listSessions", {"channel": ROOT}),
                ("subscribe", {"channel": lab.session}),
                ("createSession", {"channel": "ahp-session:/x"}),
                ("resourceRead", {"channel": ROOT, "uri": "file:///etc/passwd"}),
                ("noSuchMethod", {}),
            ]:
                answer = await s.call(method, params)
                assert answer["error"]["code"] == ErrorCode.INVALID_REQUEST
                assert "not initialized" in answer["error"]["message"]
            s.dispatch(lab.session, 1, {"type": "session/titleChanged", "title": "pwned"})
            assert (await s.call("ping", {"channel": ROOT}))["result"] is None  # handled in order
            assert not s.errors_without_id()  # a notification is never answered (overview §2)
            assert "dispatchAction: not initialized" in caplog.text  # the reason is in the host's log
            assert lab.session_state["title"] != "pwned"
            assert "ahp-session:/x" not in lab.host.sessions

    arun(main())


def test_a_minimal_initialize_with_one_version_works_and_a_second_one_is_refused(connect_stranger):
    async def main():
        async with open_lab() as lab:
            s = await connect_stranger(lab)
            # only what independent clients send: channel, clientId, protocolVersions, locale
            ok = await s.call(
                "initialize",
                {"channel": ROOT, "clientId": "ide-1", "protocolVersions": ["0.8.0"], "locale": "en-US"},
            )
            assert ok["result"]["protocolVersion"] == "0.8.0"
            assert ok["result"]["snapshots"] == []
            for client_id in ("ide-1", "ide-2"):
                again = await s.initialize(client_id)
                assert again["error"]["code"] == ErrorCode.INVALID_REQUEST
                assert "already initialized" in again["error"]["message"]
            reconnect = await s.reconnect("x", 0, [])
            assert "already initialized" in reconnect["error"]["message"]
            assert lab.host.connection_of("ide-2") is None
            assert (await s.call("listSessions", {"channel": ROOT}))["result"]["items"]

    arun(main())


def test_version_negotiation_honours_the_most_preferred_version_it_can_speak(connect_stranger):
    async def main():
        async with open_lab() as lab:
            cases = [
                (["9.9.9", "0.7.0", "0.8.0"], "0.7.0"),  # client preference order wins
                (["0.8.3", "0.8.0"], "0.8.0"),  # a patch it does not implement is passed over
                ("0.6.0", "0.6.0"),  # one version, not even in a list
                (["1.0.0", "0.5.1"], "0.5.1"),
            ]
            for n, (offered, chosen) in enumerate(cases):
                s = await connect_stranger(lab, f"v{n}")
                answer = await s.call(
                    "initialize", {"channel": ROOT, "clientId": f"v{n}", "protocolVersions": offered}
                )
                assert answer["result"]["protocolVersion"] == chosen, offered
            for offered in (["9.9.9"], ["0.9.0", "0.4.0"], ["0.8"], [], ["08.0.0"], ["0.8.3"]):
                s = await connect_stranger(lab, "bad")
                answer = await s.call(
                    "initialize", {"channel": ROOT, "clientId": "bad", "protocolVersions": offered}
                )
                assert answer["error"]["code"] == ErrorCode.UNSUPPORTED_PROTOCOL_VERSION, offered
                assert answer["error"]["data"]["supportedVersions"] == list(SUPPORTED_VERSIONS)
                assert (await s.call("ping"))["result"] is None  # still usable, still not initialized
                assert lab.host.connection_of("bad") is None

    arun(main())


def test_initialize_params_are_validated_with_the_protocol_model(connect_stranger):
    async def main():
        async with open_lab() as lab:
            s = await connect_stranger(lab)
            cases = [
                ({"channel": ROOT, "protocolVersions": ["0.8.0"]}, "clientId", "is required"),
                (
                    {"channel": ROOT, "protocolVersions": ["0.8.0"], "clientId": 7},
                    "clientId",
                    "must be a string",
                ),
                (
                    {"channel": ROOT, "protocolVersions": [8], "clientId": "a"},
                    "protocolVersions[0]",
                    "must be a string",
                ),
                ({"channel": ROOT, "clientId": "a"}, "protocolVersions", "is required"),
                (
                    {
                        "channel": ROOT,
                        "protocolVersions": ["0.8.0"],
                        "clientId": "a",
                        "initialSubscriptions": "x",
                    },
                    "initialSubscriptions",
                    "must be an array",
                ),
                ({"channel": ROOT, "protocolVersions": ["0.8.0"], "clientId": ""}, "clientId", "1 to 256"),
                (
                    {"channel": ROOT, "protocolVersions": ["0.8.0"], "clientId": "a\u0000b"},
                    "clientId",
                    "printable",
                ),
                (
                    {"channel": ROOT, "protocolVersions": ["0.8.0"], "clientId": "ide\n[host]"},
                    "clientId",
                    "printable",
                ),
            ]
            for params, field, rule in cases:
                answer = await s.call("initialize", params)
                assert answer["error"]["code"] == ErrorCode.INVALID_PARAMS, params
                assert field in answer["error"]["message"] and rule in answer["error"]["message"], answer
            assert (await s.initialize("fine"))["result"]["protocolVersion"] == "0.8.0"

    arun(main())


def test_reconnect_may_be_the_first_request_and_its_result_always_has_arrays(connect_stranger):
    async def main():
        async with open_lab() as lab:
            first = await connect_stranger(lab, "editor")
            await first.initialize("editor")
            await first.call("subscribe", {"channel": lab.session})
            seen = lab.store.last_seq
            first.close()
            lab.dispatch({"type": "session/titleChanged", "title": "while you were away"})
            again = await connect_stranger(lab, "editor")
            replay = await again.reconnect("editor", seen, [lab.session, "ahp-session:/gone"])
            result = replay["result"]
            assert result["type"] == "replay"
            assert result["missing"] == ["ahp-session:/gone"]
            assert [a["action"]["title"] for a in result["actions"]] == ["while you were away"]
            # nothing missed, nothing missing: still arrays
            again.close()
            third = await connect_stranger(lab, "editor")
            quiet = await third.reconnect("editor", lab.store.last_seq, [])
            assert quiet["result"] == {"type": "replay", "actions": [], "missing": []}
            # a seq the host never reached (another host instance): fresh snapshots
            third.close()
            fourth = await connect_stranger(lab, "editor")
            fresh = await fourth.reconnect("editor", 10**9, [lab.session])
            assert fresh["result"]["type"] == "snapshot"
            assert [snap["resource"] for snap in fresh["result"]["snapshots"]] == [lab.session]
            assert fresh["result"]["missing"] == []

    arun(main())


def test_a_client_that_answers_method_not_found_to_resource_requests_keeps_working(connect_stranger):
    async def main():
        async with open_lab() as lab:
            s = await joined(connect_stranger, lab, "ide")  # answers every resource* with -32601
            await publish(s, "ide", "p", {})
            entry = await lab.wait_for(
                lab.session,
                lambda st: next(
                    (
                        c
                        for c in st.get("customizations") or ()
                        if c.get("clientId") == "ide" and c.get("load", {}).get("kind") == "error"
                    ),
                    None,
                ),
                timeout=10,
            )
            assert "refused to serve it" in entry["load"]["message"]
            assert (await s.call("listSessions", {"channel": ROOT}))["result"]["items"]
            assert (await s.call("ping"))["result"] is None

    arun(main())


def test_every_success_response_carries_result_even_null(connect_stranger):
    async def main():
        async with open_lab() as lab:
            s = await connect_stranger(lab)
            await s.initialize()
            await s.call("createSession", {"channel": "ahp-session:/mine"})
            await s.call("disposeSession", {"channel": "ahp-session:/mine"})
            await s.call("ping")
            answers = [json.loads(t) for t in s.texts if '"id"' in t and "method" not in json.loads(t)]
            assert answers and all("result" in a or "error" in a for a in answers)
            assert [a["result"] for a in answers[-3:]] == [None, None, None]

    arun(main())


def test_a_client_of_an_older_version_is_not_sent_action_types_introduced_after_it(connect_stranger):
    """overview §3.6: a host SHOULD NOT send an action type introduced after the negotiated version
    (``session/workingDirectorySet`` is 0.7.0); a 0.8.0 client is sent it."""

    async def main():
        async with open_lab() as lab:
            old = await connect_stranger(lab, "old")
            assert (await old.initialize("old", protocolVersions=["0.5.1"]))["result"][
                "protocolVersion"
            ] == "0.5.1"
            new = await connect_stranger(lab, "new")
            await new.initialize("new")
            for peer in (old, new):
                await peer.call("subscribe", {"channel": lab.session})
            lab.host.dispatch(
                lab.session, {"type": "session/workingDirectorySet", "directory": "file:///tmp/w"}
            )
            lab.host.dispatch(lab.session, {"type": "session/titleChanged", "title": "after"})
            for peer in (old, new):
                await peer.wait(
                    lambda p=peer: any(e["action"]["type"] == "session/titleChanged" for e in p.envelopes())
                )
            assert "session/workingDirectorySet" in [e["action"]["type"] for e in new.envelopes()]
            assert [e["action"]["type"] for e in old.envelopes()] == ["session/titleChanged"]

    arun(main())
