"""Attacker round 18: secrets a stranger's text carried past the redaction.

- ``createSession``/``createChat`` titles went into state as sent (the host's own path, not an
  action), so a key reached every client's ``listSessions``, the snapshots and the export.
- A secret as an object's member (``{"password": "…"}``) was read one string at a time: the name
  and its value were never seen together, as the same text written in one string is.
- A rejected action was clipped before it was redacted: a key cut by the clip was no longer one,
  and its start reached every subscriber's echo.
- Common names and shapes were left: ``SECRET_KEY=…``, ``SIGNING_KEY=…``, Stripe, GitLab, Hugging
  Face and npm tokens, AWS session keys, Slack webhooks, PEM private keys.
"""

from __future__ import annotations

import json

from ahp_lab.agents.scripted import ask, call, text_question

from .conftest import ROOT, arun, joined, open_lab

SK = "sk-proj-A1b2C3d4E5f6G7h8I9j0KLMNopqr"
PASSWORD = "Hunter2-Correct-Horse"


def _leaks(text: str, *secrets: str) -> list[str]:
    return [s for s in (SK, PASSWORD, *secrets) if s in text or s[:12] in text]


def test_the_titles_of_a_strangers_new_session_and_chat_are_redacted(connect_stranger, tmp_path):
    async def main():
        async with open_lab() as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            bob = await joined(connect_stranger, lab, "bob")
            session = "ahp-session:/titled"
            made = await mallory.call("createSession", {"channel": session, "title": f"key {SK}"})
            assert "error" not in made, made
            ready = await lab.wait_for(session, lambda s: s if s.get("defaultChat") else None, timeout=30)
            chat = "ahp-chat:/titled-2"
            title = f'password="{PASSWORD}"'
            made = await mallory.call("createChat", {"channel": session, "chat": chat, "title": title})
            assert "error" not in made, made
            listed = await bob.call("listSessions", {"channel": ROOT})
            snapshot = await bob.call("subscribe", {"channel": chat})
            assert listed["result"]["items"] and snapshot["result"]["snapshot"]["state"]["title"]
            lab.export(tmp_path / "log.jsonl")
            for name, text in {
                "listSessions": json.dumps(listed),
                "snapshot": json.dumps(snapshot),
                "states": json.dumps(lab.host.store.states()),
                "export": (tmp_path / "log.jsonl").read_text(),
            }.items():
                assert _leaks(text) == [], name
            assert lab.state(session)["title"] == "key ***" and ready["title"] == "key ***"
            assert lab.state(chat)["title"] == 'password="***"'

    arun(main())


def test_a_secret_written_as_an_objects_member_is_masked_like_the_same_assignment_in_text(
    connect_stranger, tmp_path
):
    """``{"password": "…"}`` in a draft's ``_meta``, an env-like object and a tool's schema default
    reached every bystander in clear; the same text in one string was masked."""
    api_key = "q8ZrP0w9Xy7LmN5"

    async def main():
        async with open_lab() as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            bob = await joined(connect_stranger, lab, "bob", chat=True)
            meta = {
                "password": PASSWORD,
                "env": {"OPENAI_API_KEY": api_key, "PWD": "/home/me"},
                "retries": "3",
                # named like secrets, but none: pagination, a tokenizer's, a placeholder
                "nextPageToken": "page-2-of-9",
                "eos_token": "<|endoftext|>",
                "GITHUB_TOKEN": "${GITHUB_TOKEN}",
            }
            draft = {"text": "hello", "origin": {"kind": "user"}, "_meta": meta}
            mallory.dispatch(lab.chat, 1, {"type": "chat/draftChanged", "draft": draft})
            schema = {"type": "object", "properties": {"dsn": {"type": "string", "x-password": PASSWORD}}}
            tool = {"name": "peek", "inputSchema": schema, "_meta": {"auth": {"client_secret": api_key}}}
            active = {"clientId": "mallory", "tools": [tool]}
            mallory.dispatch(lab.session, 2, {"type": "session/activeClientSet", "activeClient": active})
            for seq in (1, 2):
                assert "rejectionReason" not in await mallory.echo(seq)
            await bob.wait(lambda: len(bob.envelopes()) >= 2)
            lab.export(tmp_path / "log.jsonl")
            for text in (
                json.dumps(bob.envelopes()),
                json.dumps(lab.host.store.states()),
                (tmp_path / "log.jsonl").read_text(),
            ):
                assert _leaks(text, api_key) == []
            kept = lab.state(lab.chat)["draft"]["_meta"]
            assert kept == {**meta, "password": "***", "env": {"OPENAI_API_KEY": "***", "PWD": "/home/me"}}

    arun(main())


def test_a_rejected_actions_text_is_masked_before_it_is_cut(connect_stranger):
    """A rejected action is kept and echoed with its strings cut to 250 characters; cut first, a key
    that the cut fell inside was no longer one, and its first characters went to every subscriber."""

    async def main():
        async with open_lab() as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            bob = await joined(connect_stranger, lab, "bob", chat=True)
            for seq, pad in enumerate(range(200, 300, 2), 1):  # the cut is at 250: some fall in the key
                draft = {"text": "x" * pad + " " + SK, "origin": {"kind": "agent"}}  # refused: not the user's
                mallory.dispatch(lab.chat, seq, {"type": "chat/draftChanged", "draft": draft})
                assert "rejectionReason" in await mallory.echo(seq)
            await bob.wait(lambda: len(bob.envelopes()) >= 50)
            assert [s for s in (SK[:10], SK[8:18]) if s in json.dumps(bob.envelopes())] == []
            assert SK[:10] not in json.dumps([t.envelope() for t in lab.host.store.transitions])

    arun(main())


def test_names_and_shapes_people_paste_every_day_are_masked(connect_stranger):
    secrets = {
        "SECRET_KEY=Zx81lkjhQ2": "Zx81lkjhQ2",
        'JWT_SECRET_KEY="Zx81lkjhQ3"': "Zx81lkjhQ3",
        "SIGNING_KEY=abcd1234xyz": "abcd1234xyz",
        "sk_live_" + "a1B2" * 6: "a1B2a1B2a1B2",
        "rk_test_" + "c3D4" * 6: "c3D4c3D4c3D4",
        "glpat-" + "x1Y2" * 5: "x1Y2x1Y2x1Y2",
        "hf_" + "AbCd" * 9: "AbCdAbCdAbCd",
        "npm_" + "ef12" * 9: "ef12ef12ef12",
        "ASIA" + "ABCDEFGH12345678": "ABCDEFGH1234",
        "https://hooks.slack.com/services/T0001/B0002/XXXXyyyyZZZZ": "XXXXyyyyZZZZ",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA75qq\nZm9vYmFy\n-----END RSA PRIVATE KEY-----": "MIIEpAIBAAKC",
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0A1B\n\n"
        "MIIEpQIBAAKCAQEA99zz\n-----END RSA PRIVATE KEY-----": "MIIEpQIBAAKC",
    }

    async def main():
        async with open_lab() as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            for seq, text in enumerate(secrets, 1):
                mallory.dispatch(
                    lab.session, seq, {"type": "session/titleChanged", "title": f"see {text} ok"}
                )
                echo = await mallory.echo(seq)
                assert "rejectionReason" not in echo
                title = echo["action"]["title"]
                assert secrets[text] not in title and "***" in title and title.endswith(" ok"), title
            words = "ASIAPACIFICREGIONALHUB runs hf_hub_download and npm_install"  # words, not keys
            mallory.dispatch(lab.session, 99, {"type": "session/titleChanged", "title": words})
            assert (await mallory.echo(99))["action"]["title"] == words

    arun(main())


def test_the_result_of_another_strangers_tool_is_anyones_to_confirm_first_accepted_wins(connect_stranger):
    """Bob's tool returned a result that waits for confirmation. Round 18 let only Bob confirm it;
    the spec lets any client (chat-channel §6.5: "any client (first accepted wins)", a phone
    answering for an IDE), and an independent client found Bob's calls blocked until Bob answered
    (spec client round 10). Only the notebook's own tools, which run in the kernel, are the
    notebook's alone to confirm (round 14)."""

    async def main():
        async with open_lab() as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            bob = await joined(connect_stranger, lab, "bob")
            tool = {
                "name": "peek",
                "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
            }
            bob.dispatch(
                lab.session,
                1,
                {"type": "session/activeClientSet", "activeClient": {"clientId": "bob", "tools": [tool]}},
            )
            assert "rejectionReason" not in await bob.echo(1)
            for s in (mallory, bob):
                await s.call("subscribe", {"channel": lab.chat})
            pending = lab.start("peek", script=[call("peek", q="a")])

            def call_in(status):
                active = lab.host.store.state(lab.chat).get("activeTurn") or {}
                calls = [
                    p["toolCall"] for p in active.get("responseParts") or () if p.get("kind") == "toolCall"
                ]
                return calls[0] if calls and calls[0]["status"] == status else None

            tc = await bob.wait(lambda: call_in("running"))
            ids = {"turnId": pending.turn_id, "toolCallId": tc["toolCallId"]}
            result = {
                "success": True,
                "pastTenseMessage": "peeked",
                "content": [{"type": "text", "text": "42"}],
            }
            complete = {
                "type": "chat/toolCallComplete",
                **ids,
                "result": result,
                "requiresResultConfirmation": True,
            }
            bob.dispatch(lab.chat, 2, complete)
            assert "rejectionReason" not in await bob.echo(2)
            await bob.wait(lambda: call_in("pending-result-confirmation"))
            mallory.dispatch(lab.chat, 10, {"type": "chat/toolCallResultConfirmed", **ids, "approved": True})
            assert "rejectionReason" not in await mallory.echo(10)
            bob.dispatch(lab.chat, 3, {"type": "chat/toolCallResultConfirmed", **ids, "approved": False})
            assert "rejectionReason" in await bob.echo(3)  # the first accepted won
            assert (await pending).tool_calls[0].status == "completed"

    arun(main())


def test_a_strangers_empty_arrays_are_charged_as_the_memory_they_take(connect_stranger):
    """Queued messages whose ``_meta`` held 24,000 empty arrays: 3 bytes of JSON each, some 56 of
    memory. Charged as JSON text, 43 MB of them held the host at 1 GB and made every snapshot of
    the chat cost its loop 11 s to encode. Each value is charged what it takes in memory."""

    async def main():
        async with open_lab(limits={"max_client_content_bytes": 4_000_000}) as lab:
            blocked = lab.start("ask", script=[ask(text_question("name", "Name?"))])
            await blocked.until_blocked()
            mallory = await joined(connect_stranger, lab, "mallory")
            meta = {"pad": [[] for _ in range(20_000)]}  # 60 KB of JSON
            refused_at = None
            for seq in range(1, 30):
                message = {"text": f"m{seq}", "origin": {"kind": "user"}, "_meta": meta}
                action = {
                    "type": "chat/pendingMessageSet",
                    "kind": "queued",
                    "id": f"q{seq}",
                    "message": message,
                }
                mallory.dispatch(lab.chat, seq, action)
                if "rejectionReason" in await mallory.echo(seq):
                    refused_at = seq
                    break
            assert refused_at is not None and refused_at <= 5, refused_at  # 60 KB each: 66 would fit
            lab.answer(answers={"name": "x"})
            await blocked

    arun(main())


def test_the_scripted_agent_does_not_echo_a_strangers_megabyte_prompt_back(connect_stranger):
    """The scripted agent (``ahp-lab serve``'s) quoted the whole prompt back as its own text, which
    no client's budget counts: 115 MB of prompts held the host at 900 MB and 127 s of its CPU."""

    async def main():
        async with open_lab() as lab:
            mallory = await joined(connect_stranger, lab, "mallory", chat=True)
            message = {"text": "z" * 1_000_000, "origin": {"kind": "user"}}
            start = {"type": "chat/turnStarted", "turnId": "big", "startedAt": "x", "message": message}
            mallory.dispatch(lab.chat, 1, start)
            assert "rejectionReason" not in await mallory.echo(1)
            done = await lab.wait_for(
                lab.chat,
                lambda s: next((t for t in s.get("turns") or () if t["id"] == "big"), None),
                timeout=30,
            )
            said = "".join(
                p.get("content") or "" for p in done["responseParts"] if p.get("kind") == "markdown"
            )
            assert "1,000,000 characters" in said and len(said) < 1000

    arun(main())
