"""Attacker round 19 (and this stop's own finds)."""

from __future__ import annotations

import asyncio
import json

from ahp_lab import Lab
from ahp_lab.agents.scripted import ScriptedAgent

from .conftest import ROOT, arun, demo_server_config, joined, open_lab


class Lingering(ScriptedAgent):
    """An agent whose turn takes its time to stop (an ACP agent answering a cancel late)."""

    def __init__(self) -> None:
        super().__init__()
        self.turns = 0
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    async def run_turn(self, ctx) -> None:
        self.turns += 1
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await self.release.wait()
            raise


def test_a_stranger_cannot_start_a_turn_while_the_lab_closes(connect_stranger):
    """Closing a lab ends its turns and waits for them to stop; meanwhile its served host still
    took a stranger's ``turnStarted``, and ran its agent for a lab that had closed."""

    async def main():
        agent = Lingering()
        lab = await Lab.open(agent=agent)
        mallory = await joined(connect_stranger, lab, "mallory", chat=True)
        lab.start("work")
        await asyncio.wait_for(agent.started.wait(), 10)
        lab.close()  # in the background: the running turn is ended, and waited for
        await lab.host.wait_for(lab.chat, lambda s: True if not s.get("activeTurn") else None, timeout=10)
        message = {"text": "run after close", "origin": {"kind": "user"}}
        start = {"type": "chat/turnStarted", "turnId": "late", "startedAt": "x", "message": message}
        mallory.dispatch(lab.chat, 7, start)
        echo = await mallory.echo(7)
        agent.release.set()
        assert "the host is closing" in echo.get("rejectionReason", ""), echo
        assert agent.turns == 1
        assert not any(t["id"] == "late" for t in lab.host.store.state(lab.chat).get("turns") or ())
        await lab.aclose()

    arun(main())


RESOURCE = "https://mcp.example.invalid/protected"


def _server(state: dict, name: str) -> dict | None:
    return next((c for c in state.get("customizations") or () if c.get("name") == name), None)


def _auth_required(state: dict) -> bool | None:
    return True if (_server(state, "owner") or {}).get("state", {}).get("kind") == "authRequired" else None


def _left(state: dict) -> bool | None:
    return True if all(c["clientId"] != "vscode://laptop/alice" for c in state["activeClients"]) else None


def test_a_strangers_token_masks_nothing_of_anyone_elses_and_is_bounded(connect_stranger):
    """``authenticate`` added a stranger's token to the redactor every client's text goes through:
    the "token" ``ahp-chat:/`` masked every chat URI in later actions (a new chat was catalogued
    as ``***0f1e…``, a URI that names no channel), and 100,000 words of one held the loop 8 s and
    made every later action 150 times slower. A stranger's token now only reaches its server."""

    async def main():
        servers = {"owner": demo_server_config("--require-auth", "--resource", RESOURCE)}
        async with open_lab(mcp_servers=servers) as lab:
            await lab.wait_for(lab.session, _auth_required, timeout=30)
            mallory = await joined(connect_stranger, lab, "mallory")
            known = lab.host.redactor.secrets  # (a served lab's own token among them)
            words = " ".join(f"word{i:05d}xx" for i in range(2_000))  # 24,000 characters
            refused = await mallory.call(
                "authenticate", {"channel": ROOT, "resource": RESOURCE, "token": words}
            )
            assert "at most" in refused["error"]["message"] or "16,384" in refused["error"]["message"]
            answer = await mallory.call(
                "authenticate", {"channel": ROOT, "resource": RESOURCE, "token": "ahp-chat:/"}
            )
            assert "error" not in answer, answer
            assert lab.host.redactor.secrets == known
            editor = await joined(connect_stranger, lab, "editor")
            chat = "ahp-chat:/0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
            made = await editor.call("createChat", {"channel": lab.session, "chat": chat})
            assert "error" not in made, made
            assert chat in [c["resource"] for c in lab.session_state["chats"]]
            turn = await lab.send("please echo ahp-chat:/abc")
            assert "ahp-chat:/abc" in turn.text

    arun(main())


def test_a_client_id_the_redactor_would_change_is_refused(connect_stranger):
    """The host checked that an ``activeClientSet`` was the client's own entry, then redaction
    rewrote its ``clientId`` (``vscode://alice@laptop`` became ``vscode://laptop``): the client's
    own tool results were refused and its turn ran for ever, the entry outlived it, and a stranger
    that took the rewritten id answered its tool calls. An id with a credential's shape (``sk-…``,
    masked to ``***``) left a ghost entry holding 2,000 tools that locked every other client out."""

    async def main():
        async with open_lab() as lab:
            ghost = await connect_stranger(lab, "ghost")
            answer = await ghost.initialize("sk-ghostghostghost1234567890")
            assert "looks like it holds a credential" in answer["error"]["message"], answer
            for shaped in ("vscode://alice:hunter2@laptop", "vscode://alice@laptop"):  # a URL's user too
                answer = await ghost.initialize(shaped)
                assert "looks like it holds a credential" in answer["error"]["message"], answer
            editor = await joined(connect_stranger, lab, "vscode://laptop/alice")
            tool = {"name": "lint", "description": "Lint", "inputSchema": {"type": "object"}}
            active = {"clientId": "vscode://laptop/alice", "tools": [tool]}
            editor.dispatch(lab.session, 1, {"type": "session/activeClientSet", "activeClient": active})
            assert "rejectionReason" not in await editor.echo(1)
            assert [c["clientId"] for c in lab.session_state["activeClients"]][-1] == "vscode://laptop/alice"
            editor.close()
            await lab.wait_for(lab.session, _left, timeout=10)

    arun(main())


def test_no_action_a_stranger_sends_goes_out_over_one_message(connect_stranger):
    """The host bounded what came in, in characters, and not what it sent: 5 million emoji (5 million
    characters, 20 MB) and 13 MB of ``&sid=1`` (masked to ``&sid=***``, 17 MB) were broadcast over
    every client's message limit, and every subscriber closed on them for good (a resume would send
    them again). Both are refused, each with its reason, and the subscriber stays."""

    async def main():
        async with open_lab() as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            bob = await joined(connect_stranger, lab, "bob")
            emoji = "\U0001f600" * 860_000  # 17.2 MB in all: within the frame a socket reads, over a message
            tools = [
                {"name": f"t{i}", "description": emoji, "inputSchema": {"type": "object"}} for i in range(5)
            ]
            action = {
                "type": "session/activeClientSet",
                "activeClient": {"clientId": "mallory", "tools": tools},
            }
            params = {"channel": lab.session, "clientSeq": 1, "action": action}
            mallory.send(
                json.dumps(
                    {"jsonrpc": "2.0", "method": "dispatchAction", "params": params}, ensure_ascii=False
                )
            )
            refused = await mallory.wait(lambda: mallory.errors_without_id())
            assert "bytes of UTF-8, over the limit" in refused[-1]["message"]
            grows = "&sid=1" * 158_000  # 948,000 characters, 1,264,000 once masked
            tools = [
                {"name": f"t{i}", "description": grows, "inputSchema": {"type": "object"}} for i in range(14)
            ]
            mallory.dispatch(lab.session, 2, {"type": "session/activeClientSet",
                                              "activeClient": {"clientId": "mallory", "tools": tools}})  # fmt: skip
            echo = await mallory.echo(2, timeout=30)
            assert "once masked, over the limit of one message" in echo["rejectionReason"]
            assert all(c["clientId"] != "mallory" for c in lab.session_state["activeClients"])
            # a removal puts nothing into state, so it was not measured at all (a verification round)
            await mallory.call("subscribe", {"channel": lab.chat})
            removal = {"type": "chat/truncated", "_meta": {f"k{i}": grows for i in range(14)}}
            mallory.dispatch(lab.chat, 3, removal)
            echo = await mallory.echo(3, timeout=30)
            assert "once masked, over the limit of one message" in echo["rejectionReason"]
            assert not bob.closed and "result" in await bob.call("ping", {"channel": ROOT})

    arun(main())


def test_a_session_larger_than_one_message_can_still_be_joined():
    """A snapshot holds a channel's whole state: two strangers' 9 MB entries made an 18 MB session,
    and an attached lab, reading frames up to the host's 16 MiB message limit, closed on its
    snapshot and never joined. Clients read frames up to 256 MiB."""
    from ahp_lab.lab.remote import RemoteLab

    async def main():
        async with open_lab() as lab:
            url = await lab.aserve()
            peers = []
            for name in ("mallory", "trudy"):
                peer = await RemoteLab.open(url, session=lab.session, client_id=name)
                peers.append(peer)
                tools = [
                    {"name": f"t{i}", "description": "d" * 900_000, "inputSchema": {"type": "object"}}
                    for i in range(10)
                ]
                action = {
                    "type": "session/activeClientSet",
                    "activeClient": {"clientId": name, "tools": tools},
                }
                assert (await peer.adispatch(action, lab.session)).accepted
            assert len(json.dumps(lab.session_state)) > 18_000_000
            editor = await RemoteLab.open(url, session=lab.session, client_id="editor")
            assert {"mallory", "trudy"} <= {c["clientId"] for c in editor.state(lab.session)["activeClients"]}
            for remote in (editor, *peers):
                await remote.aclose()

    arun(main())


def _ready(state: dict) -> bool | None:
    return True if (_server(state, "owner") or {}).get("state", {}).get("kind") == "ready" else None


def test_a_strangers_token_is_masked_in_its_servers_output_and_a_short_one_masks_nothing(connect_stranger):
    """A stranger's token is masked where it can go: what its server says. A one-character "token"
    was masked too, in every result of that server (the notebook's turns too): "own***r"."""

    async def echoed(token: str, text: str) -> str:
        servers = {"owner": demo_server_config("--require-auth", "--resource", RESOURCE)}
        async with open_lab(mcp_servers=servers) as lab:
            await lab.wait_for(lab.session, _auth_required, timeout=30)
            mallory = await joined(connect_stranger, lab, "mallory")
            answer = await mallory.call(
                "authenticate", {"channel": ROOT, "resource": RESOURCE, "token": token}
            )
            assert "error" not in answer, answer
            await lab.wait_for(lab.session, _ready, timeout=30)
            [call] = (await lab.send(f"mcp__owner__echo text={text}")).tool_calls
            return json.dumps(
                [call.state.get(k) for k in ("content", "structuredContent", "pastTenseMessage")]
            )

    shown = arun(echoed("e", "hello_there"))
    assert "***" not in shown and "hello_there" in shown
    shown = arun(echoed("required", "was_required"))  # a word: not a credential's shape
    assert "***" not in shown and "was_required" in shown
    shown = arun(echoed("TOKEN-s3cr3t-value", "my-TOKEN-s3cr3t-value"))
    assert "TOKEN-s3cr3t" not in shown and "my-***" in shown


def test_a_write_with_a_bad_mode_is_bad_params_before_it_is_a_refusal(connect_stranger, tmp_path):
    """``resourceWrite`` with ``mode: "weird"`` got -32009 (not inside a writable directory) where
    the spec's -32602 names the field: a client that then asked for access would still send bad
    params (a client written from the spec, round 7)."""

    async def main():
        async with open_lab() as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            params = {
                "channel": ROOT,
                "uri": (tmp_path / "z").as_uri(),
                "data": "x",
                "encoding": "utf-8",
                "mode": "weird",
            }
            answer = await mallory.call("resourceWrite", params)
            assert answer["error"]["code"] == -32602 and "unknown mode 'weird'" in answer["error"]["message"]
            answer = await mallory.call("resourceWrite", {**params, "mode": "append"})
            assert answer["error"]["code"] == -32009

    arun(main())


def test_numbers_past_what_json_carries_get_a_clear_error(connect_stranger):
    """A 5,000-digit number got Python's advice to call ``sys.set_int_max_str_digits()``, and a
    count past 2^53 - 1 (which a JavaScript peer reads as another number) was taken as it came."""

    async def main():
        async with open_lab() as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            mallory.send('{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"n": ' + "9" * 5000 + "}}")
            answer = await mallory.wait(lambda: next((m for m in mallory.received if "error" in m), None))
            assert answer["error"]["message"] == "invalid JSON: a number has more than 4,300 digits"
            answer = await mallory.call("subscribe", {"channel": lab.chat, "view": {"turns": 10**30}})
            assert (
                answer["error"]["code"] == -32602
                and "'view.turns' must be an integer" in answer["error"]["message"]
            )
            # what a client carries through is not the host's number: a nanosecond clock in _meta
            meta = {"sentAtNs": 1733540000123456789}
            answer = await mallory.call("subscribe", {"channel": lab.chat, "_meta": meta})
            assert "result" in answer, answer

    arun(main())


def test_a_rejected_actions_secrets_are_masked_with_their_names_and_urls_whole(connect_stranger):
    """Cutting a rejected action before masking it (to spare the loop) cut a long member name
    before the word that makes it a secret's, and a URL before the ``@`` of its ``user:password``:
    the values reached the echo whole (a verification round)."""

    async def main():
        async with open_lab() as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            mallory.dispatch(lab.session, 1, {"type": "bogus/type", "x" * 75 + "_password": "hunter2hunter2"})
            url = "x" * 200 + " postgres://admin:Xs3cretPassw0rdQ@db.example/app " + "y" * 300
            mallory.dispatch(lab.session, 2, {"type": "bogus/type", "note": url})
            echoes = [await mallory.echo(seq) for seq in (1, 2)]
            assert all("rejectionReason" in e for e in echoes)
            shown = json.dumps([echoes, [t.envelope() for t in lab.host.store.transitions]])
            assert "hunter2hunter2" not in shown and "Xs3cret" not in shown

    arun(main())
