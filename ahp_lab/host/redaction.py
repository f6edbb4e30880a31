"""Redaction: the one function that removes secrets from text the host did not write.

:meth:`Redactor.redact` runs once on every host-, agent- and MCP-originated action (in
:meth:`Host.dispatch <ahp_lab.host.Host.dispatch>`) and on every action a client other than the
notebook dispatches, before it enters state — so stderr tails, error messages, tool results, other
clients' text and customization URIs reach neither the store, the transition log, the export, the
client mirrors nor the views with a secret in them. It removes:

* the literal values of secrets the host handed out: the ``env`` entries (but paths that exist
  here, and settings: :func:`secret_values`) and ``headers`` it passed to each MCP server and the
  tokens it delivered (also
  JSON-escaped or percent-encoded);
* the userinfo of URLs (``https://user:password@host/`` becomes ``https://host/``);
* the values of URL query parameters whose names look like secrets (``?api_key=…``,
  ``&token=…``, ``access_token``, ``password``, ``signature``, …);
* ``Bearer …`` / ``Basic …`` credentials;
* free-text assignments to secret-looking names, as programs print them (``API_KEY=…``,
  ``"password": "…"``, ``client_secret: …``), whatever the value's source (a file the server read,
  not only the env the host passed);
* tokens in well-known shapes (``sk-…``, ``ghp_…``, ``github_pat_…``, ``AKIA…``/``ASIA…``,
  ``xoxb-…``, ``AIza…``, Stripe ``sk_live_…``/``rk_live_…``, ``glpat-…``, ``hf_…``, ``npm_…``, Slack
  webhook URLs, JWTs, PEM and armored PGP private keys, a PuTTY key's private lines);
* the string value of an object's member whose name looks like it holds a secret
  (``{"password": "…"}``, ``{"OPENAI_API_KEY": "…"}``, ``{"clientSecret": "…"}``), as the same
  assignment written in text is.

It also makes the text valid Unicode (a lone surrogate, which no UTF-8 export or wire can carry,
becomes U+FFFD), since clients' text is refused for it at the wire but agents' is not.

Tool inputs (``toolInput``, ``editedToolInput``, streamed tool-call arguments) are what a tool
will run with, so only the literal secrets are masked there.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import os
import re
import weakref
from typing import Any
from urllib.parse import quote

from ..protocol.jsonvalue import valid_unicode

__all__ = ["Redactor", "MASK", "masked_literal", "secret_values"]

#: A URL's ``user:password`` cut before its ``@`` (group 1: from the user on).
_BEGUN_USERINFO = re.compile(r"(?i)\b[a-z][a-z0-9+.\-]{0,30}://([^\s/?#@\"'<>\[\]]*:[^\s/?#@\"'<>\[\]]*)\Z")
#: A PEM private key cut before its END line (group 1: from its BEGIN line on).
_BEGUN_PRIVATE_KEY = re.compile(
    r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:(?!-----END )[\s\S])*)\Z"
)
_BASE64_LAYOUT = re.compile(r"[\s=]+")  # line breaks of MIME base64, and its padding (put back)
_URL_SAFE = str.maketrans("-_", "+/")

MASK = "***"
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{0,30}://)[^\s/?#@\"'<>\[\]]+@")
# A query parameter one of whose words (split at _ . -) names a secret: "access_token",
# "X-Amz-Signature", "api_key"; not "keyword", "monkey" or "author". The name is matched as one run
# and its words are looked up after (:func:`_masked_query`): a pattern with the words in it went
# back over every way to split a name, and "?key_key_…key =" of 80 KB held the host's loop 21 s.
_QUERY_WORDS = frozenset(
    [
        "apikey",
        "key",
        "token",
        "secret",
        "password",
        "passwd",
        "pwd",
        "auth",
        "credential",
        "credentials",
        "signature",
        "sig",
        "session",
        "sessionid",
        "sid",
        "cookie",
        "jwt",
        "bearer",
        "private",
        "tkn",
    ]
)
_QUERY_PARAMETER = re.compile(r"(?i)([?&;][a-z0-9_.\-]+=)([^&#\s\"'<>]+)")
#: The words of the query rule, as the quick look for them in the case-folded text reads them.
_QUERY_HINTS = tuple(sorted(_QUERY_WORDS))
_QUERY_SEPARATORS = re.compile(r"[_.\-]")
# A Bearer/Basic credential: a token with a digit or one of + / = _ ~ in it ("Basic dXNlcjpw...",
# "Bearer eyJ..."), not a word ("a basic example", "bearer bonds").
_CREDENTIAL_PATTERN = r"(?i)START(bearer|basic)(\s+)(?=[A-Za-z.\-]*[0-9+/=_~])[A-Za-z0-9._~+/=\-]{8,}"
#: Where a word starts: after no word character, and, in text holding a backslash, right after a
#: JSON-escaped line break or tab too ("\\nsk-…", as a tool's arguments carry text). Two versions of
#: each pattern: the escape-aware one scans a third slower, and most text holds no backslash.
_WORD_START, _WORD_START_ESCAPED = r"\b", r"(?:\b|(?<=\\[nrt]))"


def _word_patterns(pattern: str) -> tuple[re.Pattern, re.Pattern]:
    """``pattern`` (its word start written ``START``) compiled for plain text and for escaped text."""
    return re.compile(pattern.replace("START", _WORD_START, 1)), re.compile(
        pattern.replace("START", _WORD_START_ESCAPED, 1)
    )


_CREDENTIAL, _CREDENTIAL_ESCAPED = _word_patterns(_CREDENTIAL_PATTERN)
# NAME = value / "name": "value" / name: value, where NAME looks like it holds a secret; the value
# must be 6+ characters and not only digits (so "max_tokens=4096" or "tokens: 1200" stay; a
# base64 key's "000000/A==" is not only digits).
_SECRET_WORD = (
    r"(?:api[_\-]?key|apikey|account[_\-]?key|secret(?:[_\-]?key)?|signing[_\-]?key|passw(?:or)?d|pwd|credentials?|"
    r"private[_\-]?key|access[_\-]?key|auth[_\-]?token|access[_\-]?token|refresh[_\-]?token|"
    r"session[_\-]?token|token|cookie|passphrase|[_\-]pass(?=[\"']?\s*=)|authorization|_auth|"
    r"encryption[_\-]?key|master[_\-]?key)"
)
# The secret word first, then the rest of the name found backwards (:func:`_masked_assignment`): the
# name first tried every word of the text, 160 ms a megabyte, which a stranger's large message
# would cost the host's loop; this way it is about 40.
_SECRET_ASSIGNMENT = re.compile(
    rf"(?i)(?=[aspctrem_\-])({_SECRET_WORD}[\"']?\s*[:=]\s*[\"']?)(?![0-9]+(?![A-Za-z0-9+/=_\-]))([^\s\"'&,;]{{6,}})"
)
#: The characters of a name (``API_KEY``, ``client.secret``, ``X-Token``).
_NAME_CHARACTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
#: Words one of which every secret's name holds: a cheap look before the assignment rules.
_NAME_HINTS = ("key", "secret", "pass", "pwd", "credential", "token", "auth", "cookie")
# The lines of a PEM private key after its BEGIN line: headers ("Proc-Type: 4,ENCRYPTED") and
# base64, each on its line (a line break may be JSON-escaped). Prose is not one: a BEGIN line
# mentioned in a sentence masks that line, not the text after it.
_PEM_BREAK = r"(?:\r?\n|\\r\\n|\\n)"
_PEM_LINE = r"[ \t]*+(?:[A-Za-z][A-Za-z0-9-]*+:[^\r\n\\]*+|[A-Za-z0-9+/=]*+)[ \t]*+"
# The label of a private key's BEGIN or END line: "RSA PRIVATE KEY", "PGP PRIVATE KEY BLOCK".
_PEM_LABEL = r"[A-Z ]{0,24}PRIVATE KEY(?: BLOCK)?-----"
# The private lines of a PuTTY key file (.ppk), after its "Private-Lines: N" header.
# The first is a key's (16 base64 characters or more): prose after the header is not masked.
_PPK_LINES = (
    rf"Private-Lines:[ \t]*+\d++{_PEM_BREAK}[A-Za-z0-9+/=]{{16,}}+(?![:-])"
    rf"(?:{_PEM_BREAK}[A-Za-z0-9+/=]++(?![:-]))*+"
)
# Tokens recognisable by their shape alone.
# A JWT starts only where a run of token characters starts, and its segments do not give back
# (possessive): with a start after every "-" of "eyJ-eyJ-…", each scanned the rest of the run for
# a "." that never came, 2.5 s for 100 KB of a stranger's title.
_KNOWN_TOKEN, _KNOWN_TOKEN_ESCAPED = _word_patterns(
    r"START(?:sk-[A-Za-z0-9_\-]{16,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|A(?:KIA|SIA)[0-9A-Z]{16}(?![0-9A-Za-z])|"
    r"xox[abprs]-[A-Za-z0-9\-]{10,}|AIza[0-9A-Za-z_\-]{30,}|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|"
    r"glpat-[A-Za-z0-9_\-]{20,}|hf_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{36,}|"
    r"hooks\.slack\.com/services/[A-Za-z0-9_/]{20,}|"
    # SendGrid, Twilio and Discord (bot) keys
    r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}|SK[0-9a-f]{32}(?![0-9A-Za-z])|"
    r"[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,}|"
    # Google OAuth access tokens, DigitalOcean and Shopify keys
    r"ya29\.[A-Za-z0-9_\-]{20,}|dop_v1_[a-f0-9]{64}(?![0-9A-Za-z])|shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}(?![0-9A-Za-z]))"
    r"|(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{8,}+\.[A-Za-z0-9_\-]{8,}+\.[A-Za-z0-9_\-]++"
    # a PEM private key, its lines to its END line (a cut one: as far as its lines go)
    + rf"|-----BEGIN {_PEM_LABEL}(?:{_PEM_BREAK}{_PEM_LINE})*+"
    + rf"(?:{_PEM_BREAK}?[ \t]*+-----END {_PEM_LABEL})?"
    + rf"|{_PPK_LINES}"
)

#: Secrets known by what comes before them: (a literal the text must hold, the pattern, what
#: replaces it). Each starts with its literal, so that looking for it costs little: a Telegram
#: bot's token (in a URL, after "bot"), the credential of an "Authorization: Token …" or
#: "… Bot …" header (Bearer and Basic are :data:`_CREDENTIAL`'s), and a .netrc line's password.
#: A .netrc line's password (after a space or a tab, or starting a line: see :func:`_masked_netrc`);
#: the pattern starts with its word, so that looking for it costs little.
_NETRC_PASSWORD = re.compile(r"(password[ \t]+)(?=\S*[0-9!@#$%^&*])[^\s\"']{6,}")
_AUTHORIZATION_WORD = re.compile("(?i)authorization")  # any case: "AUTHorization" too
_AUTHORIZATION = re.compile(
    r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?(?:token|bot)\s+)[A-Za-z0-9._~+/=\-]{8,}"
)
_AFTER_NAME = (
    (":AA", re.compile(r"(?<![0-9])[0-9]{6,12}:AA[A-Za-z0-9_\-]{30,}"), MASK),
    # any case, as a header or a JSON member: "Authorization:Token …", {"authorization": "Bot …"}
    (_AUTHORIZATION_WORD, _AUTHORIZATION, rf"\1{MASK}"),
    # a .netrc line's password, after a space or a tab, or starting a line
    ("password", _NETRC_PASSWORD, lambda match: _masked_netrc(match)),
)


def _masked_netrc(match: re.Match) -> str:
    start, text = match.start(), match.string
    # after a space, a tab or a line break, a JSON-escaped one too ("\\npassword …" in a frame)
    if start and not text[start - 1].isspace() and text[max(0, start - 2) : start] not in ("\\n", "\\t"):
        return match.group(0)  # a word ending in "password": not a line's
    return match.group(1) + MASK


def _begun(literal: str, body: str) -> str:
    """A pattern for the start of a token that begins with ``literal`` and goes on in ``body``
    characters, cut anywhere after its first two: ``sk``, ``sk-``, ``sk-abc``, … for
    ``_begun("sk-", ...)``. (A first letter alone is held by :meth:`Redactor.credential_begun`.)"""
    out = f"{body}*"
    for ch in reversed(literal[2:]):
        out = f"{re.escape(ch)}(?:{out})?"
    return re.escape(literal[:2]) + f"(?:{out})?"


#: A token of a known shape, cut anywhere after its first two letters, reaching the end of a text.
_TOKEN_BEGUN = re.compile(
    rf"{_WORD_START_ESCAPED}(?:"  # after a JSON-escaped line break or tab too
    + "|".join(
        _begun(literal, body)
        for literal, body in (
            ("sk-", r"[A-Za-z0-9_\-]"),
            ("gh", r"(?:[pousr](?:_[A-Za-z0-9]*)?)"),
            ("github_pat_", r"[A-Za-z0-9_]"),
            ("AKIA", r"[0-9A-Z]"),
            ("xox", r"(?:[abprs](?:-[A-Za-z0-9\-]*)?)"),
            ("AIza", r"[0-9A-Za-z_\-]"),
            ("ASIA", r"[0-9A-Z]"),
            ("eyJ", r"[A-Za-z0-9_\-.]"),
            ("sk_live_", r"[A-Za-z0-9]"),
            ("sk_test_", r"[A-Za-z0-9]"),
            ("rk_live_", r"[A-Za-z0-9]"),
            ("rk_test_", r"[A-Za-z0-9]"),
            ("glpat-", r"[A-Za-z0-9_\-]"),
            ("hf_", r"[A-Za-z0-9]"),
            ("npm_", r"[A-Za-z0-9]"),
            ("SG.", r"[A-Za-z0-9_\-.]"),
            ("SK", r"[0-9a-f]"),
            ("hooks.slack.com/services/", r"[A-Za-z0-9_/]"),
            ("ya29.", r"[A-Za-z0-9_\-]"),
            ("dop_v1_", r"[a-f0-9]"),
            ("shpat_", r"[a-fA-F0-9]"),
            ("shpss_", r"[a-fA-F0-9]"),
        )
    )
    + r")\Z"
)
#: A Discord bot token begun (its first segment, the user id, is no secret: :meth:`Redactor.held_end`
#: masks one cut in its third).
_DISCORD_BEGUN = re.compile(
    rf"{_WORD_START_ESCAPED}[MNO][A-Za-z0-9_\-]{{0,27}}(?:\.[A-Za-z0-9_\-]{{0,6}}(?:\.[A-Za-z0-9_\-]*+)?)?\Z"
)
#: A Telegram bot token begun: the bot's number (cut anywhere), its ":" and the key from "AA" on.
_TELEGRAM_BEGUN = re.compile(r"(?<![0-9])[0-9]{1,12}(?::(?:A(?:A[A-Za-z0-9_\-]*+)?)?)?\Z")
#: The credential of an "Authorization: Token …" or "… Bot …" header begun, from the header's name.
_AUTHORIZATION_BEGUN = re.compile(
    r"(?i)authorization[\"']?\s*(?:[:=]\s*[\"']?(?:t(?:o(?:k(?:e(?:n)?)?)?)?|b(?:o(?:t)?)?|(?:token|bot)\s+[A-Za-z0-9._~+/=\-]*)?)?\Z"
)
#: A .netrc line's password begun (the shape rule's word, then its value so far).
_NETRC_BEGUN = re.compile(r"password[ \t]+[^\s\"']*\Z")
#: The end of a secret-looking name's assignment (``API_KEY``, ``token: "ab``), from the name's
#: last word on (:meth:`Redactor.credential_begun` finds where the name begins), or of a
#: ``Bearer``/``Basic`` credential.
_ASSIGNMENT_BEGUN = re.compile(
    rf"(?i)(?:{_SECRET_WORD}[\"']?\s*(?:[:=]\s*[\"']?[^\s\"'&,;]*)?|{_WORD_START_ESCAPED}(?:bearer|basic)(?:\s+[A-Za-z0-9._~+/=\-]*)?)\Z"
)
#: The words that make a name secret-looking (:data:`_SECRET_ASSIGNMENT`), and ``Bearer``/``Basic``.
_SECRET_WORDS = (
    "api_key", "api-key", "apikey", "secret", "password", "passwd", "pwd", "credential", "private_key",
    "private-key", "privatekey", "access_key", "access-key", "accesskey", "token", "bearer", "basic",
    "secret_key", "secret-key", "secretkey", "signing_key", "signing-key", "signingkey",
    "account_key", "account-key", "accountkey", "authorization", "cookie", "passphrase", "_auth",
)  # fmt: skip
#: Their starts of two characters or more: a name cut there ("API" then "_KEY=...") is held whole.
_SECRET_WORD_STARTS = frozenset(word[:k] for word in _SECRET_WORDS for k in range(2, len(word)))
_SECRET_WORD_FIRSTS = frozenset(word[0] for word in _SECRET_WORDS)
#: The first letters of those words and of the tokens of a known shape (``sk-``, ``gh…``, ``AKIA``,
#: ``AIza``, ``xox…``, ``eyJ``, ``rk_…``, ``hf_``, ``npm_``, ``SG.``, ``SK…``, a Discord token's
#: ``M``/``N``/``O``, ``hooks.slack.com``), lower case: a text ending in one of them alone is held, since a
#: stream sent a character at a time cuts every key after its first letter.
_FIRST_LETTERS = _SECRET_WORD_FIRSTS | frozenset("sgaxerhnmoyd")
_NAME_HELD_MAX = 64
_ASSIGNMENT_HINTS = (*_NAME_HINTS, "bearer", "basic")  # and a credential's scheme
#: The longest end a stream holds back for a credential begun: a run of token characters longer
#: than this is no credential the rules know, and goes out.
CREDENTIAL_HELD_MAX = 1024
#: The longest PEM private key a stream holds back until its END line (an RSA key of 8,192 bits is
#: some 6,400 characters): the text from a BEGIN line further back goes out, masked to its end.
PEM_HELD_MAX = 16 * 1024
#: A PEM private key begun and not ended at the end of a text: from its BEGIN line on, with its END
#: line cut or not come yet (the shape rule masks a key only whole or cut short of its END line).
_PEM_BEGUN = re.compile(
    rf"-----BEGIN {_PEM_LABEL}(?:{_PEM_BREAK}{_PEM_LINE})*+"
    r"(?:\r|\\|\\r|\\r\\)?"  # a line break cut
    r"(?:[ \t]*+-{1,5}(?:E(?:N(?:D(?: [A-Z ]{0,40}-{0,4})?)?)?)?)?\Z"
)
#: A BEGIN line cut at the end of a text, however short ("-" of "-----BEGIN …", a stream sent a
#: character at a time); not yet one of a private key's. A line's closing dashes ("KEY-----") are
#: not one.
_PEM_LINE_BEGUN = re.compile(r"(?<![A-Z\-])-{1,5}(?:B(?:E(?:G(?:I(?:N(?: [A-Z ]{0,40}-{0,4})?)?)?)?)?)?\Z")
#: A PuTTY key's private lines begun and not ended at the end of a text (a line break may be cut).
_PPK_BEGUN = re.compile(rf"Private-Lines:[ \t]*+\d*+(?:{_PEM_BREAK}[A-Za-z0-9+/=]*+)*+(?:\r|\\|\\r|\\r\\)?\Z")
#: Their header cut at the end of a text ("P", "Priv", "Private-Li", …), not inside a word.
_PPK_HEADER_BEGUN = re.compile(
    r"(?:(?<![A-Za-z])|(?<=\\n))"  # not inside a word; a line break may be JSON-escaped
    + "".join(f"(?:{c}" for c in "Private-Lines")
    + ")?" * 12
    + ")"
    + r"\Z"
)


def _pem_begun(text: str) -> int:
    """How many characters at the end of ``text`` may be a PEM private key a stream is still
    writing: from its last BEGIN line on while no END line closed it, or a BEGIN line cut; or the
    private lines of a PuTTY key, from their header (a cut one too) to the last of them."""
    size = len(text)
    start = text.rfind("-----BEGIN ", max(0, size - PEM_HELD_MAX))
    if start != -1 and _PEM_BEGUN.match(text, start):
        return size - start
    start = text.rfind("Private-Lines:", max(0, size - PEM_HELD_MAX))
    if start != -1 and _PPK_BEGUN.match(text, start):
        return size - start
    begun = 0
    if text[-1:] in "Privatens-L" and (header := _PPK_HEADER_BEGUN.search(text, max(0, size - 13))):
        begun = size - header.start()
    if text[-1:] in "-ABCDEFGHIJKLMNOPQRSTUVWXYZ " and (
        line := _PEM_LINE_BEGUN.search(text, max(0, size - 64))
    ):
        begun = max(begun, size - line.start())
    return begun


def _token_begun(text: str, run: int) -> int:
    """How many characters at the end of ``text`` (whose last ``run`` are token characters) begin
    a token of a known shape: at the run's start, or after a ``-`` in it."""
    if not 0 < run <= CREDENTIAL_HELD_MAX:
        return 0
    size = len(text)
    token = _TOKEN_BEGUN.search(text, size - run)
    return size - token.start() if token is not None else 0


def _shape_begun(text: str, run: int, numbers: bool = True) -> int:
    """How many characters at the end of ``text`` (whose last ``run`` are token characters) begin
    a Discord or a Telegram bot's token (the bot's number, cut or not (``numbers``), its ":" and
    key so far)."""
    if run > CREDENTIAL_HELD_MAX:
        return 0
    size, begun = len(text), 0
    if run and (discord := _DISCORD_BEGUN.search(text, size - run)):
        begun = size - discord.start()
    last = text[-1:]
    # without ``numbers``, a number of a bot's length still is (a counter's rarely is six digits)
    digits = last.isdigit() and (numbers or text[-6:].isdigit())
    if digits or last == ":" or ":A" in text[size - run - 1 : size - run + 1]:
        telegram = _TELEGRAM_BEGUN.search(text, max(0, size - run - 14))
        if telegram is not None:
            begun = max(begun, size - telegram.start())
    return begun


def _shape_end_masked(text: str) -> str | None:
    """``text`` with a Discord or Telegram bot's token cut at its end masked from where it starts,
    once its secret part came (a third segment; 12 characters of the key after ":"); else ``None``."""
    run = len(text) - len(text.rstrip(_RUN_CHARACTERS))
    discord = _DISCORD_BEGUN.search(text, len(text) - run) if run else None
    if discord is not None and discord.group(0).count(".") == 2 and len(discord.group(0)) >= 40:
        return text[: discord.start()] + MASK
    telegram = _TELEGRAM_BEGUN.search(text, max(0, len(text) - run - 14))
    if telegram is not None and ":" in (found := telegram.group(0)) and len(found.split(":")[1]) >= 12:
        return text[: telegram.start()] + MASK
    return None


_RUN_CHARACTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.~+/=-"
#: The longest value of an assignment held back (a longer token of a known shape is still held).
_VALUE_HELD_MAX = 256
_LEAD = 40  # before the run: a secret-looking name, its quotes, ":" or "=", spaces; or "Bearer "
_TRIVIAL = frozenset({"true", "false", "null", "none", "yes", "no", "on", "off"})
#: A known secret that is a short lower-case word, masked only as a whole word (see ``_compile``).
_WORD = re.compile(r"[a-z]{4,12}")
#: (an escape before it, ``\\n`` in JSON text or ``%2F`` in a URL, is no letter of a word)
_WORD_SECRET = r"(?:(?<![A-Za-z])|(?<=\\[nrtbf])|(?<=%[0-9A-Fa-f]{{2}})){}(?![A-Za-z])"
#: The start of an escape at the end of a stream's chunk, whose rest comes with the next one.
_ESCAPE_BEGUN = re.compile(r"(?:\\|%[0-9A-Fa-f]?)\Z")
# Keys whose strings a tool will run with: only literal secrets are masked there.
_TOOL_INPUT_KEYS = frozenset({"toolInput", "editedToolInput", "partialInput"})
#: The one of them another client may send: the input a person edited before approving.
_CLIENT_INPUT_KEYS = frozenset({"editedToolInput"})
_NO_INPUTS: frozenset = frozenset()


#: Names that look like a password's (``pwd``) but are the shell's working directories, as ``env``
#: prints them (upper case).
_WORKING_DIRECTORY_NAMES = frozenset({"PWD", "OLDPWD"})


#: What an unquoted value must have to be taken for a secret: a digit, a symbol, or a capital
#: after its first letter ("hunter2", "s3cr3t", "xK9..."), not a word of prose ("The secret: nobody
#: reads", "Password: required").
_SECRET_LOOKING = re.compile(r"[0-9!#$%^&*+/=~@_\-]|.[A-Z]")
#: An unquoted value that is code, not a secret: "token = tokenizer.encode(text)",
#: "api_key = os.environ['KEY']".
_CODE = re.compile(r"[(\[{]")  # a call or an index ("a secret (see above)" closes one: no code)


def _masked_query(match: re.Match) -> str:
    """A query parameter with its value masked when a word of its name names a secret. A name is
    read once (split into its words): every parameter went through that, and 14 MB of "A=1&…" in
    one title held the loop 10.7 s (attacker round 34); a lookahead for the words instead made names
    of 1,000 letters 15 times slower to read (attacker round 37)."""
    name = match.group(1)
    secret = _QUERY_NAMES.get(name)
    if secret is None:
        secret = not _QUERY_WORDS.isdisjoint(_QUERY_SEPARATORS.split(name[1:-1].casefold()))
        if len(name) <= 64:  # a stranger's long names are read each time, not kept
            if len(_QUERY_NAMES) >= 4096:
                _QUERY_NAMES.clear()
            _QUERY_NAMES[name] = secret
    return name + MASK if secret else match.group(0)


#: Parameter names up to 64 characters (their separator and ``=`` included) read so far -> whether
#: they name a secret.
_QUERY_NAMES: dict[str, bool] = {}


def _masked_assignment(match: re.Match) -> str:
    head = match.group(1)
    value = match.group(2)
    if head[-1:] not in ("'", '"') and (_CODE.search(value) or not _SECRET_LOOKING.search(value)):
        return match.group(0)  # prose or code after the name, not a literal secret
    text, start = match.string, match.start()
    before = text[max(0, start - 64) : start]  # the name's start: back over its other characters
    begin = start - (len(before) - len(before.rstrip(_NAME_CHARACTERS)))  # ("OLD" of "OLDPWD")
    name = text[begin:start] + head.rstrip("\"' \t:=")
    if begin > 0 and text[begin - 1] == "\\" and name[:1] in ("n", "r", "t"):
        name = name[1:]  # after a JSON-escaped line break ("...\\nPWD=/home/me")
    if name in _WORKING_DIRECTORY_NAMES:
        return match.group(0)
    # the end of a markdown link's target (``[t](<https://x/?token=v>)``) is the link's, not the
    # value's: masked with it, the link was left open and took the rest of the text
    return head + MASK + (">)" if value.endswith(">)") else "")


#: The loggers whose records are redacted: ahp_lab's own, and those of the libraries it talks to
#: peers through, whose debug records quote what was sent and received (headers included).
_REDACTED_LOGGERS = ("ahp_lab", "openai", "httpx", "httpcore", "websockets", "acp", "mcp")
#: Every host's redactor, for the log records of those loggers (:func:`_redacting_records`).
_LIVE: weakref.WeakSet = weakref.WeakSet()
_records_redacted = False


def _redacting_records() -> None:
    """Make every log record of the ``_REDACTED_LOGGERS`` carry its message (and traceback) redacted
    by every live host's redactor: a log line may quote what an agent, a server or a model endpoint
    said (a refusal, a reason, a response's headers), and a secret never reaches the logs. Installed
    once, chained to the previous factory."""
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if record.name.startswith(_REDACTED_LOGGERS) and _LIVE:
            try:
                message = record.getMessage()
            except Exception:  # arguments that do not format: logging reports it when it emits
                return record
            redactors = list(_LIVE)
            for redactor in redactors:
                message = redactor.text(message)
            record.msg, record.args = message, None
            if record.exc_info and record.exc_info[0] is not None:
                # formatters print exc_text when it is set (the exception stays on the record)
                trace = logging.Formatter().formatException(record.exc_info)
                for redactor in redactors:
                    trace = redactor.text(trace)
                record.exc_text = trace
        return record

    logging.setLogRecordFactory(factory)


#: A member's name that says its value is a secret: it ends in a secret word ("password",
#: "OPENAI_API_KEY", "clientSecret", "accessToken").
_SECRET_MEMBER = re.compile(rf"(?i){_SECRET_WORD}\Z")
#: Names that end so but hold no secret (lower case, without ``_``/``-``): the protocol's progress
#: token, pagination tokens, a tokenizer's special tokens.
_NOT_SECRET_MEMBERS = frozenset(
    {"progresstoken", "pagetoken", "nextpagetoken", "prevpagetoken", "nexttoken", "continuationtoken"}
    | {f"{special}token" for special in ("eos", "bos", "pad", "unk", "sep", "cls", "mask")}
)
#: A value that names where the secret is, not the secret: ``${GITHUB_TOKEN}``, ``$API_KEY``.
_PLACEHOLDER = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?")


def _secret_name(key: Any) -> bool:
    """Whether member name ``key`` says its value is a secret; a short one is looked up once (most
    are the protocol's own names), a long one is read each time, not kept (a stranger's keys)."""
    if type(key) is not str:
        return False
    return _short_secret_name(key) if len(key) < 64 else _reads_secret_name(key)


def _reads_secret_name(key: str) -> bool:
    return (
        key not in _WORKING_DIRECTORY_NAMES
        and key.lower().replace("_", "").replace("-", "") not in _NOT_SECRET_MEMBERS
        and _SECRET_MEMBER.search(key) is not None
    )


_short_secret_name = functools.lru_cache(maxsize=4096)(_reads_secret_name)


def _secret_member(key: Any, value: str) -> bool:
    """Whether member ``key`` with string ``value`` is a secret to mask whole: a secret's name, and a
    value as the assignment rule takes one (6 characters or more, not only digits, not a word such
    as "true" or "none", not a placeholder such as ``${GITHUB_TOKEN}``, not already masked)."""
    return (
        len(value) >= 6
        and _secret_name(key)
        and not value.isdigit()
        and value.lower() not in _TRIVIAL
        and value != MASK
        and _PLACEHOLDER.fullmatch(value) is None
    )


#: A variable's name that says its value may be a secret (``DB_PASS``, ``SESSION_ID``, ``SENTRY_DSN``).
_SECRET_VARIABLE = re.compile(
    r"(?i)key|secret|pass|pwd|pw\b|pin\b|phrase|login|cred|token|auth|cookie|session|sig|private|cert|dsn|conn"
)
#: Values that are settings, not secrets (masked, every "information" the host published was
#: "***rmation"): log levels, environments' names, switches, a port, a version or an address.
_SETTINGS = frozenset(
    (
        "debug", "info", "information", "notice", "warn", "warning", "error", "critical", "fatal",
        "trace", "verbose", "quiet", "silent", "notset", "production", "prod", "development", "dev",
        "staging", "stage", "test", "testing", "local", "ci", "enabled", "disabled", "true", "false",
        "yes", "no", "on", "off", "none", "null", "auto", "always", "never", "localhost",
    )
)  # fmt: skip
_SETTING_NUMBER = re.compile(r"[0-9]{1,5}|[0-9]+(?:[.:][0-9]+)+")


def named_secret_values(env: Any) -> list[str]:
    """The values of ``env`` under a name that says secret (``DB_PASSWORD``, ``API_TOKEN``): they
    stay masked whatever else offers the same word (:meth:`Redactor.forget`)."""
    if not isinstance(env, dict):
        return []
    return [v for k, v in env.items() if isinstance(v, str) and _SECRET_VARIABLE.search(str(k))]


def secret_values(env: Any) -> list[str]:
    """The values of ``env`` (a variable name -> value mapping, a process's environment) that are
    secrets to mask wherever they show: all but a path that exists here (it names a place: a
    plugin passing its own folder had its URIs masked to ``file://***``) and, under a name that
    does not say secret, a setting (``LOG_LEVEL=info``, ``NODE_ENV=production``, ``PORT=8080``)."""
    if not isinstance(env, dict):
        return []
    out = []
    for name, value in env.items():
        if not isinstance(value, str):
            continue
        path = os.path.expanduser(value)
        if os.path.isabs(path) and os.path.exists(path):
            continue
        plain = value.strip()
        if not _SECRET_VARIABLE.search(str(name)) and (
            plain.lower() in _SETTINGS or _SETTING_NUMBER.fullmatch(plain)
        ):
            continue
        out.append(value)
    return out


#: How many clean object keys a :class:`Redactor` remembers (a stranger's keys cannot grow it past).
_CLEAN_KEYS = 4096


class Redactor:
    """Known secrets plus the generic rules; :meth:`redact` applies both to a JSON value."""

    def __init__(self) -> None:
        self._secrets: set[str] = set()
        self._kept: set[str] = set()  # values known as secrets for sure: never forgotten
        self._literal: re.Pattern | None = None
        self._words = False  # whether a secret is masked as a word (_WORD_SECRET)
        #: counts the changes to what is masked (a copy masked before a change may be stale)
        self.generation = 0
        self._clean_keys: set[str] = set()  # object keys with nothing to mask, for _key
        global _records_redacted
        if not _records_redacted:
            _records_redacted = True
            _redacting_records()
        _LIVE.add(self)

    def add(self, *values: Any, plain: bool = False) -> None:
        """Remember secret values (strings shorter than 4 characters and booleans are ignored).
        ``plain``: values under a name that does not say secret (an environment's), which an
        agent's offering the same word as a choice makes no secret (:meth:`forget`)."""
        changed = False
        for value in values:
            if not isinstance(value, str):
                continue
            value = value.strip()
            if len(value) < 4 or value.lower() in _TRIVIAL:
                continue
            parts = [p for p in value.split() if len(p) >= 8] if " " in value else []
            forms = (value, json.dumps(value)[1:-1], quote(value, safe=""), *parts)
            if not plain:
                self._kept.update(forms)  # (a long word of a passphrase is masked alone too)
            for form in forms:
                if form not in self._secrets:
                    self._secrets.add(form)
                    changed = True
        if changed:
            self._clean_keys.clear()  # a key clean so far may hold the new secret
            self._compile()

    def add_env(self, env: Any) -> None:
        """Remember the secrets of a process's environment (:func:`secret_values`); those under a
        name that does not say secret are ``plain``."""
        named = set(named_secret_values(env))
        values = secret_values(env)
        self.add(*(v for v in values if v in named))
        self.add(*(v for v in values if v not in named), plain=True)

    def forget(self, *values: Any) -> None:
        """Stop masking ``values``: words an agent offers every client as its choices (a mode id,
        an option's value), which its ``env`` named too (``DEFAULT_MODE=plan`` made the ``plan``
        mode ``***``, which no client could then choose). Only values added ``plain``: a value
        known as a secret for sure (``DB_PASSWORD=review``, a token) stays masked."""
        forms = {
            form
            for value in values
            if isinstance(value, str)
            for form in (value.strip(), json.dumps(value.strip())[1:-1], quote(value.strip(), safe=""))
            if form not in self._kept
        }
        if forms & self._secrets:
            self._secrets -= forms
            self._compile()

    def _compile(self) -> None:
        self.generation += 1
        ordered = sorted(self._secrets, key=len, reverse=True)  # longest first
        self._words = any(_WORD.fullmatch(s) for s in ordered)
        # a secret that is a lower-case word is masked as a word, not inside others ("high" in
        # "highlight"); any other is masked wherever it shows
        self._literal = (
            re.compile(
                "|".join(_WORD_SECRET.format(s) if _WORD.fullmatch(s) else re.escape(s) for s in ordered)
            )
            if ordered
            else None
        )

    @property
    def secrets(self) -> int:
        """How many secret forms are known (values × their encodings)."""
        return len(self._secrets)

    def text(self, text: str, *, generic: bool = True) -> str:
        """``text`` with every known secret and (if ``generic``) every credential-looking part masked,
        as valid Unicode: a surrogate pair is joined, a lone surrogate becomes U+FFFD."""
        text = valid_unicode(text)
        if self._literal is not None and any(secret in text for secret in self._secrets):
            text = self._literal.sub(MASK, text)
        if generic:
            if "://" in text:
                text = _URL_USERINFO.sub(r"\1", text)
            # the words a rule needs are looked for in the case-folded text first, at memory speed:
            # a case-insensitive pattern scans a megabyte in some 0.14 s, each
            low = text.casefold()  # (as the patterns' IGNORECASE reads "ſ" for "s" and "K" for "k")
            if (
                "=" in text
                and ("?" in text or "&" in text or ";" in text)
                and any(word in low for word in _QUERY_HINTS)
            ):
                text = _QUERY_PARAMETER.sub(_masked_query, text)
            if "earer" in text or "asic" in text or "EARER" in text or "ASIC" in text:
                credential = _CREDENTIAL_ESCAPED if "\\" in text else _CREDENTIAL
                if credential.search(text):
                    text = credential.sub(rf"\1\2{MASK}", text)
            if ("=" in text or ":" in text) and any(hint in low for hint in _NAME_HINTS):
                text = _SECRET_ASSIGNMENT.sub(_masked_assignment, text)
            if len(text) >= 15:  # the shortest token of a known shape: "xoxb-" and 10 more
                text = (_KNOWN_TOKEN_ESCAPED if "\\" in text else _KNOWN_TOKEN).sub(MASK, text)
                for literal, pattern, masked in _AFTER_NAME:
                    if (literal in text) if type(literal) is str else literal.search(text):
                        text = pattern.sub(masked, text)
        return text

    def masked_bytes(self, data: bytes) -> bytes:
        """``data`` with every known secret (its UTF-8 bytes) masked: binary content the host
        serves, such as an embedded blob; the generic rules are for text."""
        if self._secrets:
            for secret in sorted(self._secrets, key=len, reverse=True):
                data = data.replace(secret.encode("utf-8", "replace"), MASK.encode())
        return data

    def masked_base64(self, text: str) -> str:
        """``text``, when it is base64 whose bytes hold a known secret, encoded again with the secret
        masked (an embedded image or blob as the agent sent it); else as it was."""
        if not self._secrets or len(text) < 8:
            return text
        compact = _BASE64_LAYOUT.sub("", text).translate(_URL_SAFE)  # MIME lines, URL-safe letters
        try:
            raw = base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True)
        except ValueError:
            return text
        masked = self.masked_bytes(raw)
        return text if masked == raw else base64.b64encode(masked).decode("ascii")

    def cut(self, text: str) -> str:
        """``text``, cut at its end, redacted: a known secret cut there is masked from where it
        starts (``HELD_MASKED`` characters of it or more), where :meth:`text` only knows whole
        ones, and a token of a known shape as :meth:`held_end` masks it ("sk-learn" stays)."""
        text = self.text(text)
        keep = self.secret_prefix(text)
        if keep >= HELD_MASKED:
            return text[:-keep] + MASK
        return self.held_end(text)  # a token's start cut there, as a stream's end gives it

    def cut_eagerly(self, text: str) -> str:
        """:meth:`cut`, masking whatever at the end may begin a credential, however short (the
        start of an ``sk-`` key, a secret-looking name's value): for text cut where its rest will
        never be read (a rejected action's logged form), where an 11-character start of a key is
        too much to show."""
        text = self.text(text)
        keep = max(self.secret_prefix(text), self.credential_begun(text))
        begun = _BEGUN_USERINFO.search(text) or _BEGUN_PRIVATE_KEY.search(text)  # cut before its end
        if begun is not None:
            keep = max(keep, len(text) - begun.start(1))
        return text[:-keep] + MASK if keep else text

    def secret_prefix(self, text: str) -> int:
        """How many characters at the end of ``text`` could be the start of a known secret (the
        longest such tail, shorter than the secret), which a stream holds back until it sees how
        the text goes on."""
        longest = 0
        size = len(text)
        for secret in self._secrets:
            p = text.find(secret[0], max(0, size - len(secret) + 1))
            while p != -1 and size - p > longest:
                if secret.startswith(text[p:]):
                    longest = size - p
                    break
                p = text.find(secret[0], p + 1)
        return longest

    def secret_suffix(self, text: str) -> int:
        """How many characters at the start of ``text`` could be the end of a known secret (the
        longest such head, shorter than the secret): what a cut at the start left of one."""
        first = text[:1]
        longest = 0
        if first:
            for secret in self._secrets:
                p = secret.find(first, max(1, len(secret) - len(text)))
                while p != -1 and len(secret) - p > longest:
                    if text.startswith(secret[p:]):
                        longest = len(secret) - p
                        break
                    p = secret.find(first, p + 1)
        return longest

    def start_cut(self, text: str) -> str:
        """``text``, cut at its start (the tail of an output kept): the end of a known secret left
        there (``HELD_MASKED`` characters of it or more) is masked, which :meth:`text`, knowing
        only whole secrets, cannot tell. Nothing else is masked: whole secrets are the readers'."""
        keep = self.secret_suffix(text)
        if keep < HELD_MASKED:
            return text
        # a whole secret that begins inside the masked head goes with it: with the cut where a
        # secret that repeats its start at its end ("hunter2-hunter2") begins, masking only the
        # repeated end left the rest no whole secret the readers' masking knows (review 58)
        longest = max(map(len, self._secrets))
        for match in self._literal.finditer(text, 0, keep + longest) if self._literal is not None else ():
            if match.start() >= keep:
                break
            keep = max(keep, match.end())
        return MASK + text[keep:]

    def credential_begun(self, text: str, *, numbers: bool = True) -> int:
        """How many characters at the end of ``text`` may begin a credential the generic rules
        mask whole (a token of a known shape cut anywhere, a secret-looking name's assignment, a
        ``Bearer`` credential), up to ``CREDENTIAL_HELD_MAX``: held back by a stream, so that a key
        a model writes token by token is masked whole. Only the end is read. Without ``numbers``
        (a terminal's output, whose progress counters end in digits and wait there), a number
        at the end shorter than a Telegram bot's (six digits) is not held as one."""
        size = len(text)
        run = size - len(text.rstrip(_RUN_CHARACTERS))  # the end's run of token characters
        if 0 < run < size and text[-run - 1] == "\\":
            run -= 1  # the letter of an escape before it ("\\n") is not the run's
        begun = max(_token_begun(text, run), _shape_begun(text, run, numbers))
        # a word's first letter, after a space or in a run ("//h" of a URL, "-s" of a flag)
        if run and text[-1].lower() in _FIRST_LETTERS and (run == 1 or not text[-2:-1].isalnum()):
            begun = max(begun, 1)  # "s" of "sk-…", "A" of "API_KEY=…": a key sent a character at a time
        lead = max(0, size - min(run, _VALUE_HELD_MAX) - _LEAD)
        found = None
        end = text[lead:].lower()
        if any(hint in end for hint in _ASSIGNMENT_HINTS):  # most ends name no secret: a cheap look first
            found = _ASSIGNMENT_BEGUN.search(text, lead)
        if found is None and run:
            # a name cut inside its secret word ("API" then "_KEY=..."): the word that ends the text
            word = text[size - min(run, _NAME_HELD_MAX) :].lower()
            word = word[len(word.rstrip(_NAME_CHARACTERS.lower())) :]
            if (
                any(word[-k:] in _SECRET_WORD_STARTS for k in range(2, min(len(word), 12) + 1))
                # "client_": a name's next word may be one ("KEY-----" ends a PEM line: not a name)
                or (len(word) >= 2 and word[-1] in "_-" and word[-2] not in "_-")
                or (word[-2:-1] in ("_", "-", ".") and word[-1:] in _SECRET_WORD_FIRSTS)  # "client_s"
            ):
                begun = max(begun, len(word))
        wide = max(0, size - min(run, _VALUE_HELD_MAX) - _VALUE_HELD_MAX)  # a header's aligned gap
        if "uthoriz" in text[wide:].lower() and (header := _AUTHORIZATION_BEGUN.search(text, wide)):
            found = header if found is None or header.start() < found.start() else found
        if "password" in text[-_VALUE_HELD_MAX - 16 :] and (
            netrc := _NETRC_BEGUN.search(text, max(0, size - _VALUE_HELD_MAX - 16))
        ):
            begun = max(begun, size - netrc.start())
        if found is not None:
            head = text[: found.start()]
            start = len(head.rstrip(_NAME_CHARACTERS)) if found.group(0)[:1].isalpha() else found.start()
            begun = max(begun, size - start)
        if text[-1:] == "\\" or text[-2:] == "\\n":  # a JSON-escaped line break (a cut one too), which
            begun = max(begun, 1 if text[-1:] == "\\" else 2)  # a key's header or a token may follow
        return max(begun, _pem_begun(text))

    def streamed(self, text: str, *, generic: bool = True, numbers: bool = True) -> tuple[str, str]:
        """A stream's text so far (what it held, then its new chunk) as ``(what goes out, redacted;
        the end held back, raw)``: the known secrets first (whole ones masked), then the end that
        could begin one, or begin a credential of a known shape, is held, and the generic rules
        see the rest. Without ``generic`` (a tool's input, streamed), only the known secrets."""
        text = self.text(text, generic=False)
        keep = (
            max(self.secret_prefix(text), self.credential_begun(text, numbers=numbers))
            if generic
            else self.secret_prefix(text)
        )
        if keep or self._words:
            # an escape begun ("\\", "%", "%3") is held with what follows it, which is read with it:
            # a word secret after "\\n" or "%3A" is masked as a word, the letter before it being the
            # escape's ("%3" then "Ahunter" would read as the word "Ahunter")
            begun = _ESCAPE_BEGUN.search(text, 0, len(text) - keep)
            if begun is not None:
                keep += len(begun.group())
        return self.text(text[: len(text) - keep], generic=generic), text[len(text) - keep :]

    def held_end(self, raw: str, *, generic: bool = True) -> str:
        """What the text a stream held becomes when the stream ends without its rest: masked from
        where it ends in ``HELD_MASKED`` characters or more of a known secret's start, or ends in the start of
        a token of a known shape of 12 characters or more with a digit (its start came, its end
        never did); redacted as it is otherwise (without ``generic``: for the known secrets only)."""
        keep = self.secret_prefix(raw) if len(raw) >= HELD_MASKED else 0
        if keep >= HELD_MASKED:  # (a stream holds a run of word characters whole: "FFF…hunter2-se")
            return self.text(raw[:-keep], generic=generic) + MASK
        if not generic:
            return self.text(raw, generic=False)
        token = _token_begun(raw, len(raw) - len(raw.rstrip(_RUN_CHARACTERS)))
        if token >= _TOKEN_END_MASKED and any(c.isdigit() for c in raw[-token:]):
            return self.text(raw[:-token]) + MASK  # not a word: "sk-learn", "AKIAEXAMPLE" stay
        masked = _shape_end_masked(raw)
        if masked is not None:
            return self.text(masked[: -len(MASK)]) + MASK
        return self.text(raw)

    def redact(
        self, value: Any, *, generic: bool = True, inputs: frozenset = _NO_INPUTS, nested: bool = False
    ) -> Any:
        """A copy of ``value`` (a JSON value, e.g. an action) with secrets masked in every string.

        Every dict and list is a fresh one (strings and numbers are shared, being immutable), so
        nothing the caller does to its objects afterwards reaches what the host stored. A tool's
        input (``toolInput``, ``editedToolInput``, ``partialInput``) keeps its generic parts, since
        the tool runs with them: the members of ``value`` named in ``inputs``, and, with ``nested``,
        those of every ``toolCall`` object inside it (:meth:`action` says where).
        """
        if isinstance(value, str):
            return self.text(value, generic=generic) if value else value
        if isinstance(value, dict):
            out = {}
            taken: dict[str, int] | None = None  # a masked key -> the next number for its namesakes
            clean = self._clean_keys
            for key, item in value.items():
                shown = key if key in clean else self._key(key, generic)
                if shown in out:  # two keys masked alike stay two entries: "***", "***#2", …
                    taken = {} if taken is None else taken
                    n = taken.get(shown, 2)
                    while f"{shown}#{n}" in out:
                        n += 1
                    taken[shown] = n + 1
                    shown = f"{shown}#{n}"
                kind = type(item)
                if kind is str:  # most members: read here, without a call per value
                    if item and generic and key not in inputs and _secret_member(key, item):
                        out[shown] = MASK
                    else:
                        out[shown] = self.text(item, generic=generic and key not in inputs) if item else item
                elif kind is int or kind is bool or item is None or kind is float:
                    out[shown] = item
                else:
                    out[shown] = self.redact(
                        item,
                        generic=generic and key not in inputs,
                        inputs=_TOOL_INPUT_KEYS if nested and key == "toolCall" else _NO_INPUTS,
                        nested=nested,
                    )
            return out
        if isinstance(value, list):
            return [self.redact(item, generic=generic, nested=nested) for item in value]
        return value

    def _key(self, key: Any, generic: bool) -> Any:
        """An object's key, redacted as text is: a stranger's schema or ``_meta`` may name its
        properties with a token. Keys found clean are remembered (at most ``_CLEAN_KEYS``, until
        another secret is known): most are the protocol's own names, in every action."""
        if type(key) is not str:  # (a clean one :meth:`redact` found before calling)
            return key
        shown = self.text(key, generic=generic)
        if shown == key and generic and len(key) < 64:  # clean under every rule: remembered
            if len(self._clean_keys) >= _CLEAN_KEYS:
                self._clean_keys.clear()  # a stranger's many keys do not crowd out the protocol's
            self._clean_keys.add(key)
        return shown

    def action(self, action: dict, *, from_client: bool = False, rejected: bool = False) -> dict:
        """Redact an action. A tool's input keeps its generic parts where it is one: a tool-call
        action's own fields (a ``chat/toolCallDelta`` streams tool input), and, in a host's or an
        agent's action, the tool calls inside it. From another client, only the input a person
        edited (``chat/toolCallConfirmed``'s ``editedToolInput``), and only in an action the host
        accepts: any other member named ``toolInput`` is text like any (no tool runs with it)."""
        kind = action.get("type")
        if from_client:
            keys = _CLIENT_INPUT_KEYS if kind == "chat/toolCallConfirmed" and not rejected else _NO_INPUTS
            return self.redact(action, inputs=keys)
        if kind == "chat/toolCallDelta":
            return self.redact(action, generic=False)
        tool_action = isinstance(kind, str) and kind.startswith("chat/toolCall")
        return self.redact(action, inputs=_TOOL_INPUT_KEYS if tool_action else _NO_INPUTS, nested=True)


#: Held text this long or longer that a turn ends on is masked: it begins a known secret, and a
#: shorter end ("hunt") is more likely the text's own than the start of a key.
HELD_MASKED = 6
#: The start of a token of a known shape a turn ends on is masked from this many characters, with
#: a digit in it: shorter, or only letters, it is more likely a word ("sk-learn", "xoxb-test").
_TOKEN_END_MASKED = 12


def masked_literal(value: Any, secret: str) -> Any:
    """``value`` (a JSON value) with every occurrence of ``secret`` in its strings masked: one
    secret, for one source's output (an MCP server's result and the token a client gave it)."""
    if isinstance(value, str):
        return value.replace(secret, MASK) if secret in value else value
    if isinstance(value, dict):
        return {k: masked_literal(v, secret) for k, v in value.items()}
    if isinstance(value, list):
        return [masked_literal(v, secret) for v in value]
    return value
