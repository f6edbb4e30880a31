"""Requirement 5: secrets are redacted in everything the host publishes but did not write."""

from __future__ import annotations

import itertools
import json
import re
import string
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ahp_lab.host.redaction import Redactor
from ahp_lab.widgets.tree import tree_view_model
from tests.conftest import examples

from .conftest import arun, joined, open_lab

ENV_SECRET = "sk-live-51HxQ2eZvKYlo2C9Xa"
HEADER_SECRET = "hdr-7b1e0c55d1f04a0f"
ECHO_AND_DIE = (
    "import os, sys; print('connecting with key', os.environ['API_KEY'], 'and', os.environ['OTHER'], "
    "file=sys.stderr); sys.exit(3)"
)


def everything_published(lab, export: Path) -> str:
    """State, the client's mirror, the view model and the export, as one text."""
    lab.export(export)
    parts = [
        json.dumps(lab.session_state),
        json.dumps(lab.client.state(lab.session)),
        json.dumps(tree_view_model(lab.session_state)),
        export.read_text(encoding="utf-8"),
    ]
    return "\n".join(parts)


async def wait_error(lab, name: str) -> dict:
    def check(state):
        for entry in state.get("customizations") or ():
            if entry.get("name") == name and (entry.get("state") or {}).get("kind") == "error":
                return entry
        return None

    return await lab.wait_for(lab.session, check, timeout=30)


def test_a_servers_stderr_echoing_its_env_secret_is_published_redacted(tmp_path: Path):
    async def main():
        servers = {
            "leaky": {
                "command": sys.executable,
                "args": ["-c", ECHO_AND_DIE],
                "env": {"API_KEY": ENV_SECRET, "OTHER": "p@ss word-123", "DEBUG": "1"},
            }
        }
        async with open_lab(mcp_servers=servers) as lab:
            entry = await wait_error(lab, "leaky")
            error = entry["state"]["error"]
            assert "connecting with key ***" in error["stack"] and "***" in error["message"]
            published = everything_published(lab, tmp_path / "run.jsonl")
            assert ENV_SECRET not in published
            assert "p@ss word-123" not in published and json.dumps("p@ss word-123")[1:-1] not in published

    arun(main())


def test_a_folder_passed_in_a_servers_env_is_a_place_not_a_secret(tmp_path: Path):
    """Every ``env`` value was taken for a secret: a plugin passing its own folder
    (``"${PLUGIN_ROOT}"``, a common pattern) had its URIs turn into ``file://***`` in every session
    created after its server started, and reading its files was refused ("names another machine").
    A path that exists on this machine is a place; the key beside it is still masked."""
    folder = tmp_path / "plugin-root"
    folder.mkdir()
    script = "import os, sys; print('in', os.environ['DATA_DIR'], 'with', os.environ['API_KEY'], file=sys.stderr); sys.exit(3)"

    async def main():
        servers = {
            "leaky": {
                "command": sys.executable,
                "args": ["-c", script],
                "env": {"API_KEY": ENV_SECRET, "DATA_DIR": str(folder)},
            }
        }
        async with open_lab(mcp_servers=servers) as lab:
            entry = await wait_error(lab, "leaky")
            assert f"in {folder} with ***" in entry["state"]["error"]["stack"]
            assert lab.host.redactor.text(f"file://{folder}/skills/a.md") == f"file://{folder}/skills/a.md"
            assert ENV_SECRET not in everything_published(lab, tmp_path / "run.jsonl")

    arun(main())


def test_a_setting_in_a_servers_env_is_not_taken_for_a_secret(tmp_path: Path):
    """Every ``env`` value of 4 characters or more was a known secret: ``LOG_LEVEL=info`` made
    every "information" the host published "***rmation", and ``NODE_ENV=production`` every
    "production" "***". A setting (a lower-case word, a number) under a name that does not say
    secret is not one; a secret's name masks even a plain word, and any other value is masked."""
    script = (
        "import os, sys; print('information for production on 8080 with', os.environ['DB_PASS'], "
        "os.environ['TOKEN_HINT'], file=sys.stderr); sys.exit(3)"
    )

    async def main():
        env = {
            "LOG_LEVEL": "info",
            "NODE_ENV": "production",
            "PORT": "8080",
            "DB_PASS": "letmein",
            "TOKEN_HINT": "Zx9-plain",
            "OPS_ACCESS": "opensesame",  # a plain word under a neutral name: still a secret
        }
        servers = {"leaky": {"command": sys.executable, "args": ["-c", script], "env": env}}
        async with open_lab(mcp_servers=servers) as lab:
            entry = await wait_error(lab, "leaky")
            stack = entry["state"]["error"]["stack"]
            assert "information for production on 8080 with *** ***" in stack, stack
            published = everything_published(lab, tmp_path / "run.jsonl")
            assert "letmein" not in published and "Zx9-plain" not in published
            assert lab.host.redactor.text("opensesame") == "***"

    arun(main())


def test_server_urls_lose_their_userinfo_and_secret_query_values(tmp_path: Path):
    async def main():
        url = "http://admin:hunter2-pw@127.0.0.1:9/mcp?api_key=AKIA0000SECRET&region=eu&access_token=t0k3n"
        servers = {"remote": {"url": url, "headers": {"Authorization": f"Bearer {HEADER_SECRET}"}}}
        async with open_lab(mcp_servers=servers) as lab:
            entry = await wait_error(lab, "remote")
            assert entry["uri"] == "http://127.0.0.1:9/mcp?api_key=***&region=eu&access_token=***"
            published = everything_published(lab, tmp_path / "run.jsonl")
            for secret in ("hunter2-pw", "admin:", "AKIA0000SECRET", "t0k3n", HEADER_SECRET):
                assert secret not in published, secret

    arun(main())


@settings(max_examples=examples(200), deadline=None)
@given(
    secret=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=4, max_size=40).filter(
        lambda s: s.strip() == s and s.lower() not in ("true", "false", "null", "none") and "*" not in s
    ),
    before=st.text(max_size=30),
    after=st.text(max_size=30),
)
def test_a_known_secret_never_survives_redaction_in_any_surrounding(secret, before, after):
    """(A secret that is a short lower-case word is masked as a word: inside a longer word, where a
    letter touches it, it is that word's, "high" in "highlight".)"""
    if re.fullmatch(r"[a-z]{4,12}", secret):
        before, after = before.rstrip(string.ascii_letters), after.lstrip(string.ascii_letters)
    redactor = Redactor()
    redactor.add(secret)
    escaped = json.dumps(secret)[1:-1]
    for text in (before + secret + after, before + escaped + after):
        out = redactor.redact({"message": text, "nested": [text]})
        for value in (out["message"], out["nested"][0]):
            assert secret not in value and escaped not in value


FILE_SECRET = "s3cr3t-from-a-dotfile-9f2c"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def test_a_secret_the_server_read_itself_is_published_redacted(tmp_path: Path):
    """The host never passed these values: the generic rules must catch them by name and by shape."""
    dotfile = tmp_path / ".env"
    dotfile.write_text(f"API_KEY={FILE_SECRET}\n", encoding="utf-8")
    script = (
        "import sys; line = open(sys.argv[1]).read().strip(); "
        f"print('loaded', line, 'password: \"hunter2-xyz\"', 'and {GITHUB_TOKEN}', file=sys.stderr); sys.exit(3)"
    )
    servers = {"dotenv": {"command": sys.executable, "args": ["-c", script, str(dotfile)]}}

    async def main():
        async with open_lab(mcp_servers=servers) as lab:
            entry = await wait_error(lab, "dotenv")
            assert "loaded API_KEY=***" in entry["state"]["error"]["stack"]
            published = everything_published(lab, tmp_path / "run.jsonl")
            for secret in (FILE_SECRET, "hunter2-xyz", GITHUB_TOKEN):
                assert secret not in published, secret

    arun(main())


def test_ordinary_text_keeps_its_numbers_and_words():
    """Redaction must not eat what a person needs to read: counts, authors, prose about tokens."""
    redactor = Redactor()
    for text in (
        "max_tokens=4096, inputTokens: 1200",
        "author: Bob Smith",
        "the token expired, ask for a new one",
        "monkey: banana split",
        "status: running (3 of 5)",
        "PWD=/tmp/audit-x OLDPWD=/home/user",  # the shell's working directories, as env prints them
        json.dumps("HOME=/root\nPWD=/tmp/work\n"),  # the same, quoted in a JSON text
    ):
        assert redactor.text(text) == text
    assert redactor.text("DB_PWD=hunter22 pwd: hunter22") == "DB_PWD=*** pwd: ***"
    assert redactor.text('{"client_secret": "abc-123-xyz"}') == '{"client_secret": "***"}'
    assert redactor.text("key AKIAABCDEFGHIJKLMNOP leaked") == "key *** leaked"


def test_text_from_an_agent_enters_state_as_valid_unicode():
    """A lone surrogate (an agent cutting text by UTF-16 units) cannot be written as UTF-8 by an
    export or the wire: it becomes U+FFFD, and a pair that arrived as two halves is joined."""
    redactor = Redactor()
    assert redactor.redact({"text": "smile \ud83d", "more": ["\ud83d\ude00", "\ude00!"]}) == {
        "text": "smile \ufffd",
        "more": ["\U0001f600", "\ufffd!"],
    }


@settings(max_examples=examples(150), deadline=None)
@given(
    secret=st.text(alphabet="defghijk0123456789_", min_size=8, max_size=30),
    # (the generic rules see one chunk at a time: "API_KEY=" with its value in the next chunk is
    # the case below, with a known secret)
    before=st.sampled_from(["", "my key: ", "a b XYZ-"]),
    after=st.text(alphabet="abc XYZ-", max_size=20),
    cuts=st.lists(st.integers(0, 80), max_size=6),
    between=st.lists(st.sampled_from([None, "draft", "usage", "other part"]), min_size=8, max_size=8),
)
def test_a_known_secret_streamed_in_chunks_never_reaches_state_and_no_other_text_is_lost(
    secret, before, after, cuts, between
):
    """Each delta was redacted alone: an agent streaming its key as 'hunter2-correct-' then
    'horse-battery' (a model writes token by token) put the whole key in state and the export.
    Each part holds back the end that could begin a known secret until its next chunk or the
    turn's end; nothing else moves it (a stranger's action, the agent's usage, another part's
    text: each once let the held half out), and the text that is not a secret all arrives."""
    from ahp_lab.host import Host
    from ahp_lab.store import agent_origin
    from tests.host.test_wire import RawClient, _chat_with_turns, settle

    text = before + secret + after
    bounds = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    chunks = [text[a:b] for a, b in itertools.pairwise(bounds)]

    async def main():
        host = Host()
        host.redactor.add(secret)
        client = RawClient(host)
        await client.initialize("c")
        chat = await _chat_with_turns(host, client, "ahp-session:/s", 0)
        await client.call("subscribe", {"channel": chat})
        agent = agent_origin("a")
        user = {"text": "hi", "origin": {"kind": "user"}}
        host.dispatch(chat, {"type": "chat/turnStarted", "turnId": "t", "startedAt": "x", "message": user})
        for kind, pid in (("markdown", "p"), ("reasoning", "r")):
            part = {"kind": kind, "id": pid, "content": ""}
            host.dispatch(chat, {"type": "chat/responsePart", "turnId": "t", "part": part}, agent)
        for n, chunk in enumerate(chunks):
            for action, pid in (("chat/delta", "p"), ("chat/reasoning", "r")):
                host.dispatch(chat, {"type": action, "turnId": "t", "partId": pid, "content": chunk}, agent)
                step = between[(2 * n + (pid == "r")) % len(between)]
                if step == "draft":  # a stranger's action on the chat
                    client.dispatch(chat, n + 1, {"type": "chat/draftChanged", "draft": user})
                    await settle()
                elif step == "usage":
                    host.dispatch(
                        chat, {"type": "chat/usage", "turnId": "t", "usage": {"inputTokens": n}}, agent
                    )
        host.dispatch(chat, {"type": "chat/turnComplete", "turnId": "t"}, agent)
        [turn] = host.store.state(chat)["turns"]
        assert [str(p["content"]) for p in turn["responseParts"]] == [host.redactor.text(text)] * 2
        logged = json.dumps([t.action for t in host.store.transitions])
        assert secret not in logged

    arun(main())


async def _streamed_part(host, client, session: str, turns: int) -> tuple[str, dict]:
    """A chat of ``session`` (with ``turns`` done) whose turn "t" an agent streams into its markdown
    part "p"; returns the chat and the agent's origin."""
    from ahp_lab.store import agent_origin
    from tests.host.test_wire import _chat_with_turns

    chat = await _chat_with_turns(host, client, session, turns)
    agent = agent_origin("a")
    user = {"text": "hi", "origin": {"kind": "user"}}
    host.dispatch(chat, {"type": "chat/turnStarted", "turnId": "t", "startedAt": "x", "message": user})
    part = {"kind": "markdown", "id": "p", "content": ""}
    host.dispatch(chat, {"type": "chat/responsePart", "turnId": "t", "part": part}, agent)
    return chat, agent


def test_a_private_key_a_model_streams_in_pieces_reaches_neither_state_nor_the_log():
    """A PEM private key written a few characters a delta went into state and the log whole, BEGIN
    and END lines included: the shape rule reads one chunk at a time, and no chunk held a whole key.
    A part holds a key from its BEGIN line (a cut one too) until its END line, then masks it."""
    from ahp_lab.host import Host
    from tests.host.test_wire import RawClient

    body = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"
    key = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----"
    text = f"Here is the key:\n{key}\n---\nKeep it safe."

    async def main():
        host = Host()
        client = RawClient(host)
        await client.initialize("c")
        chat, agent = await _streamed_part(host, client, "ahp-session:/s", 0)
        for i in range(0, len(text), 7):
            delta = {"type": "chat/delta", "turnId": "t", "partId": "p", "content": text[i : i + 7]}
            host.dispatch(chat, delta, agent)
        host.dispatch(chat, {"type": "chat/turnComplete", "turnId": "t"}, agent)
        [turn] = host.store.state(chat)["turns"]
        assert str(turn["responseParts"][0]["content"]) == "Here is the key:\n***\n---\nKeep it safe."
        logged = json.dumps([t.action for t in host.store.transitions])
        assert body[:20] not in logged and body[-20:] not in logged

    arun(main())


def test_a_generic_rule_does_not_mask_half_a_known_secret_streamed_in_two_chunks():
    """'export API_KEY=hunter2-cor' then 'rect-horse-battery': the generic rule masked the first
    half, so the held end never met the rest, which went out ('API_KEY=***rect-horse-battery').
    The known secrets are read first."""
    from ahp_lab.host.streamed import StreamedText

    redactor = Redactor()
    redactor.add("hunter2-correct-horse-battery")
    streamed = StreamedText(redactor)
    texts = []
    for content in ("export API_KEY=hunter2-cor", "rect-horse-battery", " done"):
        action = {"type": "chat/delta", "turnId": "t", "partId": "p", "content": content}
        texts.append(streamed.delta("ahp-chat:/c", action, {"kind": "agent"})["content"])
    assert "".join(texts) == "export API_KEY=*** done"


_TOKEN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_BLOCK = {"PGP ": " BLOCK"}  # an armored PGP key's label ends so
_BLOCK.update({k: "" for k in ("", "RSA ", "OPENSSH ", "EC ", "ENCRYPTED ")})


@settings(max_examples=examples(300), deadline=None)
@given(
    credential=st.one_of(
        st.text(_TOKEN_CHARS + "_-", min_size=16, max_size=60).map(lambda body: "sk-" + body),
        st.text(_TOKEN_CHARS, min_size=30, max_size=50).map(lambda body: "ghp_" + body),
        st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=16, max_size=16).map(lambda b: "AKIA" + b),
        st.text(_TOKEN_CHARS + "_-", min_size=20, max_size=60).map(lambda body: "ya29." + body),
        st.text("0123456789abcdef", min_size=64, max_size=64).map(lambda body: "dop_v1_" + body),
        st.text("0123456789abcdef", min_size=32, max_size=32).map(lambda body: "shpat_" + body),
        st.text(_TOKEN_CHARS + "-", min_size=10, max_size=40).map(lambda body: "xoxb-" + body),
        st.tuples(
            st.sampled_from(
                ["API_KEY=", 'password: "', "client_secret = '", "Bearer ", "Cookie: ", "DB_PASS=", "_auth="]
            ),
            # a value with a digit and a letter: an unquoted word of prose is no secret to the rules
            st.text(_TOKEN_CHARS, min_size=8, max_size=40).filter(
                lambda v: any(c.isdigit() for c in v) and any(c.isalpha() for c in v)
            ),
        ).map("".join),
        st.tuples(
            st.sampled_from(["", "RSA ", "OPENSSH ", "EC ", "ENCRYPTED ", "PGP "]),
            st.lists(st.text(_TOKEN_CHARS + "+/", min_size=1, max_size=70), min_size=1, max_size=4),
        ).map(
            lambda k: (
                f"-----BEGIN {k[0]}PRIVATE KEY{_BLOCK[k[0]]}-----\n{chr(10).join(k[1])}\n"
                f"-----END {k[0]}PRIVATE KEY{_BLOCK[k[0]]}-----"
            )
        ),
        st.tuples(
            st.sampled_from(["\n", "\\n"]),  # a line break, or one JSON-escaped (a tool's arguments)
            st.text(_TOKEN_CHARS + "+/", min_size=16, max_size=70),
            st.lists(st.text(_TOKEN_CHARS + "+/", min_size=1, max_size=70), max_size=3),
        ).map(lambda k: f"Private-Lines: {len(k[2]) + 1}{k[0]}{k[0].join([k[1], *k[2]])}"),
        # the shapes of stop 50 (round 22): SendGrid, Twilio, Discord, Telegram, a Slack webhook,
        # an "Authorization: Token/Bot" header, a .netrc password, an Azure account key
        st.tuples(
            st.text(_TOKEN_CHARS, min_size=16, max_size=24), st.text(_TOKEN_CHARS, min_size=16, max_size=40)
        ).map(lambda k: f"SG.{k[0]}.{k[1]}"),
        st.text("0123456789abcdef", min_size=32, max_size=32).map(lambda h: "SK" + h),
        st.tuples(
            st.sampled_from("MNO"),
            st.text(_TOKEN_CHARS, min_size=23, max_size=27),
            st.text(_TOKEN_CHARS, min_size=6, max_size=6),
            st.text(_TOKEN_CHARS, min_size=27, max_size=38),
        ).map(lambda k: f"{k[0]}{k[1]}.{k[2]}.{k[3]}"),
        st.tuples(
            st.sampled_from(["", "https://api.telegram.org/bot"]),
            st.integers(100_000, 999_999_999_999),
            st.text(_TOKEN_CHARS + "_-", min_size=30, max_size=40),
        ).map(lambda k: f"{k[0]}{k[1]}:AA{k[2]}"),
        st.text(_TOKEN_CHARS, min_size=20, max_size=30).map(
            lambda k: f"https://hooks.slack.com/services/T0/B1/{k}"
        ),
        st.tuples(
            st.sampled_from(["Authorization: Token ", '{"authorization": "Bot ', "AUTHORIZATION=token "]),
            st.text(_TOKEN_CHARS, min_size=8, max_size=40).filter(lambda v: any(c.isdigit() for c in v)),
        ).map("".join),
        st.text(_TOKEN_CHARS + "!@#$%^&*", min_size=6, max_size=30)
        .filter(lambda v: any(c in "0123456789!@#$%^&*" for c in v))
        .map(lambda v: f"machine example.com login me password {v}"),
        st.text(_TOKEN_CHARS + "+/", min_size=8, max_size=60).map(
            lambda v: f"AccountName=x;AccountKey={v}=="
        ),
    ),
    before=st.sampled_from(
        ["", "Here it is: ", "the key (", "export ", "a rule\n---\n", "Public-Lines: 1\\nAAAA\\n"]
    ),
    after=st.sampled_from(["", " and done.", "\nnext line", ") ok", '" ok', "\n-----\n- item"]),
    cuts=st.lists(st.integers(0, 400), max_size=12),
)
def test_a_credential_streamed_in_chunks_is_masked_as_if_it_came_whole(credential, before, after, cuts):
    """The generic rules read one chunk at a time: a model streaming 'sk-' then 'A1b2C3' then the
    rest (each too short for the shape rule) put the whole key in state (found with an ACP agent),
    and a PEM private key streamed in pieces went in whole, BEGIN and END lines included (an
    armored PGP key, and a PuTTY key's private lines, whole or in pieces, as well).
    A part holds back the end that may begin a credential of a known shape or form until its next
    chunk or the turn's end, so the text that goes out is what redacting it whole gives, however it
    was cut: anywhere, right after its first letter too ("A" then "PI_KEY=…", "s" then "k-…", as an
    agent sending a character a chunk cuts it). The shapes added at stop 50 were masked whole but
    not held: sent a character a chunk, each went out whole (found at stop 51)."""
    from ahp_lab.host.streamed import StreamedText

    text = before + credential + after
    bounds = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    redactor = Redactor()
    streamed = StreamedText(redactor)
    out = []
    for a, b in itertools.pairwise(bounds):
        action = {"type": "chat/delta", "turnId": "t", "partId": "p", "content": text[a:b]}
        out.append(streamed.delta("ahp-chat:/c", action, {"kind": "agent"})["content"])
    out += [delta["content"] for delta, _ in streamed.ending("ahp-chat:/c", {"type": "chat/turnComplete"})]
    assert "".join(out) == redactor.text(text)
    assert credential[-6:] not in "".join(out)


def test_a_key_in_another_clients_text_reaches_neither_state_the_log_nor_the_others(
    connect_stranger, tmp_path: Path
):
    """An editor's user pasting a key in a title or a prompt put it in state, the log, the export and
    every connection's listSessions, while the agent's echo of it was masked (an attacker). A client
    other than the notebook writes text the host did not write: it is redacted like an agent's, and
    its own echo says what the host kept."""
    from .conftest import ROOT

    key, other = "ghp_" + "Q" * 36, "sk-" + "W" * 40

    async def main():
        async with open_lab() as lab:
            editor = await joined(connect_stranger, lab, "editor", chat=True)
            editor.dispatch(lab.session, 1, {"type": "session/titleChanged", "title": f"deploy with {key}"})
            echo = await editor.echo(1)
            assert "rejectionReason" not in echo and echo["action"]["title"] == "deploy with ***"
            message = {"text": f"my key is {other}, use it", "origin": {"kind": "user"}}
            editor.dispatch(
                lab.chat,
                2,
                {"type": "chat/turnStarted", "turnId": "e1", "startedAt": "x", "message": message},
            )
            assert (await editor.echo(2))["action"]["message"]["text"] == "my key is ***, use it"
            editor.dispatch(
                lab.chat, 3, {"type": "chat/toolCallComplete", "result": {"pastTenseMessage": other}}
            )
            assert "rejectionReason" in await editor.echo(3)  # refused, and logged masked
            await editor.wait(lambda: lab.host.store.state(lab.chat).get("activeTurn") is None)
            phone = await connect_stranger(lab, "phone")
            await phone.initialize("phone")
            listed = await phone.call("listSessions", {"channel": ROOT})
            lab.export(tmp_path / "log.json")
            published = "\n".join(
                [
                    json.dumps(listed),
                    json.dumps(lab.session_state),
                    json.dumps(lab.chat_state),
                    json.dumps([t.action for t in lab.host.store.transitions]),
                    (tmp_path / "log.json").read_text(encoding="utf-8"),
                ]
            )
            assert key not in published and other not in published
            assert "deploy with ***" in json.dumps(listed)

    arun(main())


@pytest.mark.parametrize(
    "text",
    [
        "This is a basic example of recursion",
        "Please explain a basic password reset flow",
        "Basic understanding of bearer bonds",
        "The secret: nobody reads the docs",
        "Password: required field",
        "https://example.com/books?author=tolkien&page=2",
        "https://www.google.com/search?q=python&keyword=asyncio",
        "/?monkey=banana",
        "token = tokenizer.encode(text)",
        "password = getpass.getpass()",
        "api_key = os.environ['OPENAI_API_KEY']",
        "the compass: northwest",
        "sort_key=name",
        "author: Jane Doe",
        "Pass the salt: please",
        "Test pass: 120/124, fail: 4/124",
        "partition_key=tenant-42, sort_key=created_at#2024",
        "s3 object_key: reports/2024/q3.csv",
        "primary-key: order_id",
    ],
)
def test_what_people_write_every_day_is_not_taken_for_a_secret(text):
    """Found checking other clients' text, which is now redacted: 'a basic example' became 'a basic
    ***', a URL's 'keyword=' or 'author=' lost its value, and code assigning 'token = ...' or prose
    after 'The secret:' was masked. Credentials still are (test above and below)."""
    assert Redactor().text(text) == text


def test_credentials_in_the_forms_people_paste_them_are_masked():
    r = Redactor()
    assert r.text("Authorization: Bearer abcdefghijklmnop123") == "Authorization: Bearer ***"
    assert r.text("Authorization: Basic dXNlcjpwYXNzd29yZA==") == "Authorization: Basic ***"
    assert r.text('{"password": "correcthorse"}') == '{"password": "***"}'  # quoted: a literal
    assert r.text("client_secret = s3cr3tvalue") == "client_secret = ***"
    assert (
        r.text("https://x.io/cb?access_token=abc123def&state=1") == "https://x.io/cb?access_token=***&state=1"
    )
    assert (
        r.text("https://s3.example/x?X-Amz-Signature=abcd1234ef")
        == "https://s3.example/x?X-Amz-Signature=***"
    )
    assert r.text("export TOKEN=xK9aLpQ2") == "export TOKEN=***"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("Cookie: sessionid=Hx9kq2LmPzQ1", "Cookie: ***"),
        ("Set-Cookie: session=Hx9kq2LmPzQ1; Path=/; HttpOnly", "Set-Cookie: ***; Path=/; HttpOnly"),
        ("DB_PASS=Hx9kq2LmPz", "DB_PASS=***"),
        ("GPG_PASSPHRASE=Hx9kq2LmPz", "GPG_PASSPHRASE=***"),
        ("ENCRYPTION_KEY=Hx9kq2LmPz", "ENCRYPTION_KEY=***"),
        ("Authorization: ya29.a0AfH6SMBHx9kq2LmPzHx9kq2LmPz", "Authorization: ***"),
        ("//registry.npmjs.org/:_auth=dXNlcjpIeDlrcTJMbVB6", "//registry.npmjs.org/:_auth=***"),
        ("token ya29.a0AfH6SMBHx9kq2LmPzHx9kq2LmPz here", "token *** here"),
        ("do " + "dop_v1_" + "4f" * 32, "do ***"),
        ("shop " + "shpat_" + "a1b2" * 8, "shop ***"),
    ],
)
def test_more_credential_forms_are_masked(text, masked):
    """Forms an MCP server's stderr, a tool's result or an agent's terminal shows (curl -v, a .env,
    an .npmrc) that were left as written: cookies, a bare Authorization value, *_PASS, *PASSPHRASE,
    any *_KEY, .npmrc's _auth, and Google, DigitalOcean and Shopify tokens (attacker round 30)."""
    assert Redactor().text(text) == masked


def test_a_log_line_quoting_what_an_agent_said_carries_no_secret(caplog):
    """The host logs an agent's refusal or reason as it said it ("license check failed for key
    hunter2-…"): every log record of ahp_lab's loggers, traceback included, is redacted with what
    each live host knows and the generic rules (found by an ACP audit)."""
    import logging

    from ahp_lab.host import Host

    host = Host()
    host.redactor.add("hunter2-correct-horse-battery")
    log = logging.getLogger("ahp_lab.host.agent_sessions")
    with caplog.at_level(logging.INFO, logger="ahp_lab"):
        log.warning("the agent refused: license check failed for key %s", "hunter2-correct-horse-battery")
        try:
            raise RuntimeError("token=hunter2-correct-horse-battery")
        except RuntimeError:
            log.exception("it failed")
    text = caplog.text
    assert "license check failed for key ***" in text and "RuntimeError" in text
    assert "hunter2" not in text
    assert all(r.exc_info is not None for r in caplog.records if r.message == "it failed")
    # arguments that do not format are logging's to report when it emits, not a raise at the call
    record = logging.getLogRecordFactory()("ahp_lab.x", logging.WARNING, "f", 1, "bad %d", ("x",), None)
    assert record.args == ("x",)


def test_held_text_reaches_every_subscriber_when_another_client_pages_history_in():
    """A stranger's fetchTurns pages history in to itself alone: the held end of a streamed text
    went out inside that page, so every subscriber lost it for good ('Here is the plan. ing
    season'). Only a turn's end lets held text go."""
    from ahp_lab.host import Host
    from ahp_lab.reducers import reduce
    from tests.host.test_wire import RawClient, settle

    async def main():
        host = Host()
        host.redactor.add("hunter2-correct-horse-battery")
        owner = RawClient(host)
        await owner.initialize("owner")
        chat, agent = await _streamed_part(host, owner, "ahp-session:/p", 1)
        state = (await owner.call("subscribe", {"channel": chat}))["result"]["snapshot"]["state"]
        stranger = RawClient(host)
        await stranger.initialize("stranger")
        delta = {"type": "chat/delta", "turnId": "t", "partId": "p"}
        host.dispatch(chat, {**delta, "content": "Here is the plan. hunt"}, agent)
        assert "result" in await stranger.call("fetchTurns", {"channel": chat})
        host.dispatch(chat, {**delta, "content": "ing season opens soon."}, agent)
        host.dispatch(chat, {"type": "chat/turnComplete", "turnId": "t"}, agent)
        await settle()
        for envelope in owner.actions():
            state = reduce("chat", state, envelope["action"], 0)
        text = "Here is the plan. hunting season opens soon."
        assert str(state["turns"][-1]["responseParts"][0]["content"]) == text
        assert str(host.store.state(chat)["turns"][-1]["responseParts"][0]["content"]) == text

    arun(main())


@pytest.mark.parametrize(
    "script_words",
    [
        ("Let me read the token", "The file is fine."),
        ("Checking your password", "It is long enough."),
        ("Run the tests with sk", "learn installed"),
    ],
)
def test_a_held_word_stays_in_its_own_part_when_another_part_comes_between(script_words):
    """A part's held end (a word that could begin a credential) went on into the next markdown
    part once a tool call or a thought came between: "Let me read the " … "tokenThe file is fine."
    It goes on there only when it reads differently with what follows (a key cut in two)."""
    from ahp_lab.agents.scripted import call, say, think

    first, then = script_words

    async def main():
        async with open_lab() as lab:

            @lab.server_tool
            def read_file(path: str) -> str:
                """Read a file."""
                return "contents"

            between = think("hmm") if then.startswith("learn") else call("read_file", path="a.txt")
            await lab.send("hi", script=[say(first), between, say(then)], approve=True)
            parts = lab.state(lab.chat)["turns"][-1]["responseParts"]
            shown = [p["content"] for p in parts if p.get("kind") == "markdown"]
            assert shown == [first, then]

    arun(main())


@pytest.mark.parametrize(
    "ending", ["We used sk-learn", "e.g. AKIAEXAMPLE", "Slack: xoxb-test", "the ghp_abc"]
)
def test_a_turn_ending_on_a_word_shaped_like_a_token_start_keeps_it(ending):
    """A turn whose text ended in what could begin a token of a known shape had it masked, even
    when it came in one chunk; the start of a key is masked there only from 12 characters with a
    digit (``sk-proj-Q7xW``)."""
    from ahp_lab.agents.scripted import say

    async def main():
        async with open_lab() as lab:
            turn = await lab.send("hi", script=[say(ending)])
            assert turn.text == ending
            cut = await lab.send("hi", script=[say("the other: sk-proj-Q7xW9zR2")])
            assert cut.text == "the other: ***"

    arun(main())


class _Pieces:
    """A scripted step that streams its text in the given chunks (a model sends "\\n\\n" alone)."""

    def __new__(cls, pieces):
        from ahp_lab.agents.scripted import Step

        class Pieces(Step):
            async def run(self, scope):
                async def chunks():
                    for piece in pieces:
                        yield piece

                await scope.ctx.say(chunks())

        return Pieces()


@pytest.mark.parametrize("first", ["Let me read the token", "Use the Bearer", "It is the client_secret"])
@pytest.mark.parametrize(
    "then", [["\n\n", "The file is fine."], [":", " it is in .env, not here."], [" ", "ok"]]
)
def test_a_held_word_stays_in_its_part_when_the_next_part_starts_with_a_blank_chunk(first, then):
    """The next part's first chunk alone ("\\n\\n", ":") kept a held name being held, so it went
    on into that part: "Let me read the " and then "token\\n\\nThe file is fine."."""
    from ahp_lab.agents.scripted import say, think

    async def main():
        async with open_lab() as lab:
            await lab.send("hi", script=[say(first), think("hmm"), _Pieces(then)])
            parts = lab.state(lab.chat)["turns"][-1]["responseParts"]
            assert [p["content"] for p in parts if p.get("kind") == "markdown"] == [first, "".join(then)]

    arun(main())


def test_the_held_start_of_a_key_a_part_gives_back_is_masked_as_at_a_turns_end():
    """A held key start given back to its own part (a thought came, then other text) went in as it
    was; at a turn's end the same start is masked."""
    from ahp_lab.agents.scripted import say, think

    async def main():
        async with open_lab() as lab:
            turn = await lab.send(
                "hi", script=[say("the key: sk-proj-Q7xW9zR2aB"), think("hmm"), say("\n\nSorry.")]
            )
            parts = lab.state(lab.chat)["turns"][-1]["responseParts"]
            assert [p["content"] for p in parts if p.get("kind") == "markdown"] == [
                "the key: ***",
                "\n\nSorry.",
            ]
            assert "Q7xW" not in turn.text

    arun(main())


@pytest.mark.parametrize("text", ["see github", "we use sk-learn", "e.g. AKIAEXAMPLE", "Slack: xoxb-test"])
def test_a_cut_preview_keeps_a_last_word_shaped_like_a_token_start(text):
    redactor = Redactor()
    assert redactor.cut(text) == text
    assert redactor.cut("the other: sk-proj-Q7xW9zR2") == "the other: ***"


@pytest.mark.parametrize(
    ("first", "second"), [("Use plan B", "asked for it"), ("Press t", "oken ok"), ("plan A", "PI is up")]
)
def test_a_first_letter_a_part_holds_alone_stays_in_its_part(first, second):
    """A part ending in a first letter alone holds it (a key sent a character at a time starts so);
    with a tool call between, the letter went on into the next part when the two read like a key's
    start together: "Use plan " and "Basked for it"."""
    from ahp_lab.agents.scripted import call, say

    async def main():
        async with open_lab() as lab:

            @lab.tool
            def lookup(q: str) -> str:
                return "ok"

            script = [say(first, chunk_size=2), call("lookup", q="x"), say(second, chunk_size=2)]
            turn = await lab.send("go", script=script)
            parts = [p["content"] for p in turn.state["responseParts"] if p.get("kind") == "markdown"]
            assert parts == [first, second]

    arun(main())


def test_a_first_letter_held_alone_shows_while_the_turn_waits_for_a_person():
    from ahp_lab.agents.scripted import ask, say, text_question

    async def main():
        async with open_lab() as lab:
            pending = lab.start(
                "go", script=[say("Shall I use plan A", chunk_size=1), ask(text_question("n", "Name?"))]
            )
            await pending.until_blocked()
            parts = (lab.state(lab.chat).get("activeTurn") or {}).get("responseParts") or []
            assert [p.get("content") for p in parts if p.get("kind") == "markdown"] == ["Shall I use plan A"]
            lab.answer(answers={"n": "x"})
            await pending

    arun(main())


def test_a_begin_line_mentioned_in_prose_masks_that_line_not_the_rest():
    """A PEM key's shape took everything after a BEGIN line to the next five dashes: a model
    explaining "the file begins with `-----BEGIN OPENSSH PRIVATE KEY-----`" lost the rest of its
    answer, whole and streamed (held to the turn's end, then masked). Only a key's own lines are."""
    from ahp_lab.host.streamed import StreamedText

    text = "Check that the file begins with `-----BEGIN OPENSSH PRIVATE KEY-----`. Then run ssh-add.\nDone."
    redactor = Redactor()
    assert redactor.text(text) == "Check that the file begins with `***`. Then run ssh-add.\nDone."
    streamed, out = StreamedText(redactor), []
    for i in range(0, len(text), 5):
        action = {"type": "chat/delta", "turnId": "t", "partId": "p", "content": text[i : i + 5]}
        out.append(streamed.delta("ahp-chat:/c", action, {"kind": "agent"})["content"])
    assert "".join(out).endswith("Then run ssh-add.\nDone") or "".join(out).endswith("Done.")
    out += [d["content"] for d, _ in streamed.ending("ahp-chat:/c", {"type": "chat/turnComplete"})]
    assert "".join(out) == redactor.text(text)


@pytest.mark.parametrize(
    "text",
    ["Step 3/10", "Pick a port [default 8080", "Authorization:" + " " * 40 + "Tok", "export BOT=1234567890"],
)
def test_a_terminals_output_ending_in_a_number_shows_whole_while_it_waits(text):
    """Holding a number at a stream's end (a Telegram bot's token may follow) kept a command's
    "Step 3/10" as "Step 3/" until it wrote again (the review of stop 51's hold-back): a terminal's
    output holds no number; a header's start is still held however far its value is aligned."""
    from ahp_lab.host.streamed import StreamedText

    streamed = StreamedText(Redactor())
    shown = streamed.delta("ahp-terminal:/t", {"type": "terminal/data", "data": text}, {"kind": "agent"})[
        "data"
    ]
    if text.endswith("Tok"):
        assert shown == "", shown  # "Authorization: Token …" may be coming: held
    elif text.endswith("1234567890"):  # a bot's number: ":AA…" may follow (the second review)
        assert shown == "export BOT=", shown
        rest = {"type": "terminal/data", "data": ":AAH" + "x1" * 20 + " ok"}
        assert streamed.delta("ahp-terminal:/t", rest, {"kind": "agent"})["data"] == "*** ok"
    else:
        assert shown == text


def test_a_masked_token_in_a_links_target_leaves_the_link_closed():
    """An agent's resource link to ``…?token=…`` became ``[T](<https://…?token=***`` : the mask took
    the link's closing ``>)`` too, and the rest of the message rendered inside the link's target
    (ACP agent round 13)."""
    import mistune

    from ahp_lab.agents.acp.mapping import _link

    redactor = Redactor()
    # the part ends with the link, as the agent's part did: the stream held its end from "token="
    link = _link("the report", "https://example.com/a b?token=abcdef123456")
    shown, held = redactor.streamed(f"see {link}")
    text = shown + redactor.held_end(held)
    assert text == "see [the report](<https://example.com/a b?token=***>)"
    html = mistune.html(text + " and more")
    assert "abcdef" not in html and "</a> and more" in html, html


@pytest.mark.parametrize("around", ["{}", "x\\n{}", "%3A{}%2F", "\\t{}\\n", "a {}.", "({})"])
def test_a_secret_that_is_a_word_is_masked_as_a_word_after_an_escape_too(around):
    """A secret that is a short word is masked as a word (not inside "highlight"); the letter of
    an escape before it (``\\n`` in JSON text, ``%3A`` in a URL) is no letter of a word: masked only
    where no letter touched it, it showed after them (the review of stop 52)."""
    redactor = Redactor()
    redactor.add("hunter")
    assert redactor.text(around.format("hunter")) == around.format("***")
    assert redactor.text("hunters and the hunter") == "hunters and the ***"
