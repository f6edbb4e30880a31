"""Attacker round 17: what a stranger's text costs the redactor, and where its secrets went.

- The query-parameter rule of the redaction went back over every way to split a name into words:
  a title of ``?key_key_…key =`` (80 KB) held the host's loop 21 s before the action was accepted,
  and every connection waited. The name is now matched as one run and its words looked up after.
"""

from __future__ import annotations

import json
import time

from .conftest import arun, joined, open_lab, publish


def test_a_title_of_nested_query_names_does_not_hold_the_hosts_loop(connect_stranger):
    """80 KB of ``?key_key_…`` with no value: 21 s of the loop before (a megabyte: hours)."""

    async def main():
        async with open_lab() as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            title = "?" + "key_" * 20_000 + " ="
            started = time.monotonic()
            mallory.dispatch(lab.session, 1, {"type": "session/titleChanged", "title": title})
            echo = await mallory.echo(1, timeout=60)
            # the loop is held while the title is redacted, so no timeout can fire meanwhile: the
            # time it took is the check (21 s before, milliseconds now)
            assert time.monotonic() - started < 5
            assert "rejectionReason" not in echo
            assert lab.session_state["title"] == title  # nothing in it is a secret: kept as sent

    arun(main())


SK = "sk-proj-A1b2C3d4E5f6G7h8I9j0KLMNopqr"
GHP = "ghp_" + "Zx9" * 12


def _leaks(text: str) -> list[str]:
    return [s for s in (SK, GHP, "abcd1234efgh5678") if s in text]


def test_a_strangers_secrets_in_object_keys_and_on_the_wire_reach_no_record(connect_stranger, tmp_path):
    """Keys were copied as sent: a token naming a property of a tool's schema, or a ``_meta``
    member, reached state, the export and every bystander, masked as a value beside it and kept as
    a key. And the served connections' frame log (``lab.frames``, the raw wire view) kept a
    stranger's frames as sent, secrets and all; it is shown and saved with the notebook."""

    async def main():
        async with open_lab() as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            bob = await joined(connect_stranger, lab, "bob")
            schema = {"type": "object", "properties": {SK: {"type": "string"}}, "required": [SK]}
            tool = {"name": "peek", "inputSchema": schema, "_meta": {GHP: 1}}
            active = {"clientId": "mallory", "tools": [tool]}
            mallory.dispatch(lab.session, 1, {"type": "session/activeClientSet", "activeClient": active})
            assert "rejectionReason" not in await mallory.echo(1)
            title = f"see {SK} with Authorization: Bearer abcd1234efgh5678"
            mallory.dispatch(lab.session, 2, {"type": "session/titleChanged", "title": title})
            assert "rejectionReason" not in await mallory.echo(2)
            await bob.wait(lambda: len(bob.envelopes()) >= 2)
            [client] = [c for c in lab.session_state["activeClients"] if c["clientId"] == "mallory"]
            assert list(client["tools"][0]["inputSchema"]["properties"]) == ["***"]  # still one property
            lab.export(tmp_path / "log.jsonl")
            assert _leaks(json.dumps(lab.host.store.states())) == []
            assert _leaks((tmp_path / "log.jsonl").read_text()) == []
            assert _leaks(json.dumps(bob.envelopes())) == []
            if lab.frames is not None:  # the socket's frames: what the raw wire view shows
                received = [f.text for f in lab.frames.frames if f.direction == "in"]
                assert any("peek" in t for t in received)
                assert _leaks("\n".join(received)) == []

    arun(main())


def _big_skill(name: str) -> str:
    return f"---\nname: {name}\ndescription: the {name} skill\n---\n" + "x" * 100_000 + "\n"


async def _plugin_loaded(lab, session: str, plugin_name: str) -> dict:
    def check(state):
        for e in state.get("customizations") or ():
            if e.get("name") == plugin_name and (e.get("load") or {}).get("kind") not in (None, "loading"):
                return e
        return None

    return await lab.wait_for(session, check, timeout=30)


def test_the_plugin_files_one_client_makes_the_host_hold_are_bounded_across_sessions(connect_stranger):
    """One client published 16 plugins of 15 one-megabyte files in each session it created: 12
    sessions held the host at 2 GB (each plugin was bounded on its own). What the host reads of
    one client's plugins, in all sessions together, is bounded now; leaving gives the room back."""

    async def main():
        async with open_lab(limits={"max_client_plugin_bytes": 250_000}) as lab:
            s = await joined(connect_stranger, lab, "hoarder")
            second = "ahp-session:/hoarder-2"
            assert "result" in await s.call("createSession", {"channel": second})
            await s.call("subscribe", {"channel": second})
            files = {"skills/one/SKILL.md": _big_skill("one"), "skills/two/SKILL.md": _big_skill("two")}
            await publish(s, "hoarder", "a", files)
            assert (await _plugin_loaded(lab, lab.session, "a"))["load"]["kind"] == "loaded"
            reads = len([m for m in s.received if m.get("method") == "resourceRead"])
            s.session = second
            await publish(s, "hoarder", "b", files, seq=2)
            entry = await _plugin_loaded(lab, second, "b")
            assert "for all of this client's plugins (Limits.max_client_plugin_bytes)" in json.dumps(
                entry["load"]
            )
            assert len([m for m in s.received if m.get("method") == "resourceRead"]) - reads == 1
            # leaving the first session gives its room back: the plugin reads whole when republished
            s.dispatch(lab.session, 3, {"type": "session/activeClientRemoved", "clientId": "hoarder"})
            assert "rejectionReason" not in await s.echo(3)
            await publish(s, "hoarder", "b", files, nonce="2", seq=4)

            def whole(state):
                for e in state.get("customizations") or ():
                    if e.get("name") == "b" and (e.get("load") or {}).get("kind") == "loaded":
                        return e
                return None

            assert len((await lab.wait_for(second, whole, timeout=30))["children"]) == 2

    arun(main())


# -- the verification round of this stop's fixes ---------------------------------------------------


def test_a_title_of_jwt_starts_does_not_hold_the_hosts_loop(connect_stranger):
    """``eyJ-eyJ-…``: the JWT shape started after every "-" and scanned the rest of the text for
    a "." that never came (2.5 s of the loop for 100 KB, 9 s for 200 KB)."""

    async def main():
        async with open_lab() as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            title = "eyJ-" * 60_000
            started = time.monotonic()
            mallory.dispatch(lab.session, 1, {"type": "session/titleChanged", "title": title})
            assert "rejectionReason" not in await mallory.echo(1, timeout=120)
            assert time.monotonic() - started < 5  # the loop was held meanwhile: the time is the check

    arun(main())


def test_keys_that_mask_alike_stay_apart_at_the_cost_of_the_message(connect_stranger, tmp_path):
    """6,000 keys masked alike became ``***``, ``****``, … (each looked up as it grew): 11 s of the
    host's loop and an 18 MB echo for a 180 KB message. And a key first seen under a ``toolInput``
    member (where only known secrets are masked) was remembered as clean, then kept everywhere."""

    async def main():
        async with open_lab() as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            keys = {f"sk-{n:020d}abcdef": n for n in range(6_000)}
            started = time.monotonic()
            title = {"type": "session/titleChanged", "title": "t", "_meta": keys}
            mallory.dispatch(lab.session, 1, title)
            echo = await mallory.echo(1, timeout=120)
            assert time.monotonic() - started < 5 and "rejectionReason" not in echo
            kept = echo["action"]["_meta"]
            assert len(kept) == 6_000 and sorted(kept.values()) == list(range(6_000))
            assert len(json.dumps(echo)) < 400_000
            for seq, meta in ((2, {"toolInput": {SK: 1}}), (3, {SK: "after"})):
                mallory.dispatch(
                    lab.session, seq, {"type": "session/titleChanged", "title": "u", "_meta": meta}
                )
                assert "rejectionReason" not in await mallory.echo(seq)
            lab.export(tmp_path / "log.jsonl")
            assert _leaks((tmp_path / "log.jsonl").read_text()) == []
            assert _leaks(json.dumps(lab.host.store.states())) == []

    arun(main())


def test_plugins_read_at_once_share_their_clients_room(connect_stranger):
    """The room was looked at before each file was read, and a client's plugins are read at once:
    each passed the look before any file landed, and 16 plugins held 2.9 times the bound."""

    async def main():
        async with open_lab(limits={"max_client_plugin_bytes": 250_000}) as lab:
            s = await joined(connect_stranger, lab, "hoarder")
            plugins = []
            for n in range(8):
                root = f"virtual://hoarder/p{n}"
                s.files[f"{root}/skills/s{n}/SKILL.md"] = _big_skill(f"s{n}")
                plugins.append(
                    {"type": "plugin", "id": f"p{n}", "uri": root, "name": f"p{n}", "enabled": True}
                )
            active = {"clientId": "hoarder", "tools": [], "customizations": plugins}
            s.dispatch(lab.session, 1, {"type": "session/activeClientSet", "activeClient": active})
            assert "rejectionReason" not in await s.echo(1)

            def all_read(state):
                entries = [e for e in state.get("customizations") or () if e.get("clientId") == "hoarder"]
                done = [e for e in entries if (e.get("load") or {}).get("kind") not in (None, "loading")]
                return entries if len(entries) == 8 and len(done) == 8 else None

            entries = await lab.wait_for(lab.session, all_read, timeout=30)
            loaded = sum(len(e.get("children") or ()) for e in entries)
            assert loaded == 2  # 2 x 100 KB fit in 250 KB; the third file did not
            assert sum("Limits.max_client_plugin_bytes" in json.dumps(e["load"]) for e in entries) == 6

    arun(main())


#: SK with its "p"s written as JSON escapes: the same key to the host.
ESCAPED = SK.replace("p", "\\u0070")


async def _served_stranger(connect_stranger, lab):
    """An initialized stranger, when it reached the lab over a socket (``None`` otherwise)."""
    mallory = await connect_stranger(lab, "mallory")
    await mallory.initialize("mallory")
    return mallory if lab.frames is not None else None


def test_the_wire_log_keeps_no_secret_a_stranger_sent_escaped_or_had_quoted_back(connect_stranger):
    """The served connections' frame log kept the errors the host sent back as they were, and they
    quote what the stranger sent (``method sk-… is not supported``); and an inbound key written
    with JSON escapes (``sk-\\u0070roj…``) passed the text rules."""

    async def main():
        async with open_lab() as lab:
            mallory = await _served_stranger(connect_stranger, lab)
            if mallory is None:
                return  # only the served connections have a wire log
            answer = await mallory.call(SK, {"channel": "ahp-root://"})
            assert "error" in answer
            mallory.send(
                '{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"'
                + lab.session
                + '","clientSeq":1,"action":{"type":"session/titleChanged","title":"'
                + ESCAPED
                + '"}}}'
            )
            await mallory.echo(1)
            assert _leaks("\n".join(f.text for f in lab.frames.frames)) == []
            assert any("is not supported" in f.text for f in lab.frames.frames if f.direction == "out")

    arun(main())


def test_a_strangers_extra_tool_input_members_are_text_like_any(connect_stranger, tmp_path):
    """Only the input a person edited (``editedToolInput``) keeps its generic parts in another
    client's action: ``toolInput`` and ``partialInput`` members it adds to a confirmation run
    nowhere, and were kept unmasked in the echo and the export."""
    from ahp_lab.agents.scripted import call, say

    async def main():
        async with open_lab() as lab:

            @lab.server_tool(annotations={"destructiveHint": True})
            def zap(name: str) -> str:
                """Zap something (asks for confirmation)."""
                return f"zapped {name}"

            mallory = await connect_stranger(lab, "mallory")
            await mallory.initialize("mallory")
            await mallory.call("subscribe", {"channel": lab.chat})
            pending = lab.start("go", script=[call("zap", name="a"), say("done")])
            await pending.until_blocked()
            tc = next(
                p["toolCall"]
                for p in lab.chat_state["activeTurn"]["responseParts"]
                if p.get("kind") == "toolCall"
            )
            secret = "API_KEY=Hx9k2mP4qR7tLw5z"
            confirm = {
                "type": "chat/toolCallConfirmed",
                "turnId": pending.turn_id,
                "toolCallId": tc["toolCallId"],
                "approved": True,
                "confirmed": "user-action",
                "toolInput": secret,
                "partialInput": secret,
            }
            mallory.dispatch(lab.chat, 1, confirm)
            echo = await mallory.echo(1)
            assert "Hx9k2mP4qR7tLw5z" not in json.dumps(echo)
            await pending
            lab.export(tmp_path / "log.jsonl")
            assert "Hx9k2mP4qR7tLw5z" not in (tmp_path / "log.jsonl").read_text()

    arun(main())


def test_the_wire_log_masks_an_escaped_key_in_a_frame_it_cuts_or_cannot_parse(connect_stranger):
    async def main():
        async with open_lab() as lab:
            mallory = await _served_stranger(connect_stranger, lab)
            if mallory is None:
                return  # only the served connections have a wire log
            mallory.send('{"jsonrpc":"2.0","id":7,"method":"listSessions","params":{"x":"' + ESCAPED + '"')
            title = ESCAPED + " " + "z" * 70_000
            mallory.send(
                '{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"'
                + lab.session
                + '","clientSeq":1,"action":{"type":"session/titleChanged","title":"'
                + title
                + '"}}}'
            )
            await mallory.echo(1)
            kept = "\n".join(f.text for f in lab.frames.frames if f.direction == "in")
            assert "\\u0070roj" not in kept and _leaks(kept) == []

    arun(main())


def test_a_deeply_nested_frame_with_an_escape_is_answered_and_the_connection_stays(connect_stranger):
    """The frame log's token masking recursed over the parsed frame: at depth 2,000 with a
    ``\\u`` escape it raised, and the stranger's connection closed without its -32600."""

    async def main():
        async with open_lab() as lab:
            mallory = await connect_stranger(lab, "mallory")
            await mallory.initialize("mallory")
            deep = "[" * 2_000 + '"\\u0041"' + "]" * 2_000
            mallory.send('{"jsonrpc":"2.0","id":8,"method":"ping","params":{"token":"x","x":' + deep + "}}")
            answer = await mallory.response(8)
            assert answer["error"]["code"] == -32600
            assert "result" in await mallory.call("ping", {"channel": "ahp-root://"})

    arun(main())
