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
            mallory = await connect_stranger(lab, "mallory")
            await mallory.initialize("mallory")
            await mallory.call("subscribe", {"channel": lab.session})
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
            mallory = await connect_stranger(lab, "mallory")
            await mallory.initialize("mallory")
            await mallory.call("subscribe", {"channel": lab.session})
            bob = await connect_stranger(lab, "bob")
            await bob.initialize("bob")
            await bob.call("subscribe", {"channel": lab.session})
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
