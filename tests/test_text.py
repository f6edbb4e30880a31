"""The streamed-text rope: equal to the plain string, cheap to append, immutable."""

from __future__ import annotations

import json
import pickle

from hypothesis import given
from hypothesis import strategies as st

from ahp_lab.protocol.jsonvalue import dumps, strip_nulls, to_json
from ahp_lab.protocol.text import Text, append_text


@given(st.text(max_size=50), st.lists(st.text(max_size=30), max_size=40))
def test_text_behaves_like_the_concatenated_string(start, chunks):
    text = Text.of(start)
    for chunk in chunks:
        text = text.append(chunk)
    plain = start + "".join(chunks)
    assert text == plain and plain == text
    assert not text != plain  # noqa: SIM202 - __ne__ is part of the contract
    assert len(text) == len(plain) and str(text) == plain and hash(text) == hash(plain)
    assert json.loads(dumps({"content": text})) == {"content": plain}
    assert to_json([text]) == [plain] and strip_nulls({"a": text, "b": None}) == {"a": plain}
    assert pickle.loads(pickle.dumps(text)) == plain


def test_appending_to_a_large_text_never_copies_it():
    """Appends touch only the tail and the current page: the 4 MB chunk stays the same object."""
    big = "x" * (4 * 1024 * 1024)
    text = Text.of(big)
    versions = []
    for i in range(10_000):
        text = text.append("tok ")
        if i % 1000 == 0:
            versions.append(text)

    def first_chunk(t: Text) -> str:
        pages, page, _ = t._head
        return pages[0][0] if pages else page[0]

    assert first_chunk(text) is big
    assert len(text._tail) <= 1024 and len(text._head[1]) <= 64  # an append copies a bounded amount
    assert all(first_chunk(v) is big for v in versions)  # shared
    assert len(text) == len(big) + 40_000


def test_older_versions_are_unchanged_by_later_appends():
    base = Text.of("a").append("b")
    left, right = base.append("c"), base.append("d")
    assert (str(base), str(left), str(right)) == ("ab", "abc", "abd")


def test_append_text_accepts_str_and_rejects_other_values():
    assert append_text("ab", "c") == "abc"
    assert type(append_text("ab", "c")) is str  # a short text stays plain JSON
    long = append_text("a" * 1024, "b")
    assert type(long) is Text and long == "a" * 1024 + "b"
    try:
        append_text(5, "c")
    except TypeError as exc:
        assert "int" in str(exc)
    else:
        raise AssertionError("appending to a number must fail")


def test_two_halves_of_a_character_appended_apart_are_that_character():
    """``"\\ud83d" + "\\ude00"`` is ``"😀"`` in JavaScript; here it stayed two halves, which compare
    unequal to it: a snapshot (which joins them) and the same state reduced differed, and
    ``conformance run`` failed such a fixture (a reducer divergence hunt)."""
    assert append_text("a", "\ud83d") + "" != "a😀"
    assert append_text(append_text("a", "\ud83d"), "\ude00b") == "a😀b"
    long = Text.of("x" * 600).append("\ud83d")
    assert long.append("\ude00") == "x" * 600 + "😀" and long == "x" * 600 + "\ud83d"  # unchanged
    flushed = Text.of("x" * 10).append("y" * 300 + "\ud83d")  # the half sits in a chunk, not the tail
    assert flushed.append("\ude00!") == "x" * 10 + "y" * 300 + "😀!"
    assert append_text("\ude00", "\ud83d") == "\ude00\ud83d"  # the other order is no character


def test_two_halves_streamed_apart_are_that_character_on_every_path_of_the_reducers():
    """The reducers' own fast paths appended without joining the halves: a long part's streamed
    delta and a tool call's short partial input kept two halves where the checked path (and
    JavaScript's ``+``) gives one character (a reducer divergence hunt)."""
    from ahp_lab.reducers import REDUCERS

    chat = REDUCERS["chat"]
    message = {"text": "m", "origin": {"kind": "user"}}
    part = {"kind": "markdown", "id": "p", "content": "a" * 300}
    state = {"resource": "r", "title": "t", "status": 8, "modifiedAt": "x", "turns": [],
             "activeTurn": {"id": "t1", "startedAt": "s", "message": message, "responseParts": [part]}}  # fmt: skip
    for content in ("x", "\ud83d", "\ude00"):  # the second and third take the stream's fast path
        state = chat(state, {"type": "chat/delta", "turnId": "t1", "partId": "p", "content": content}, 0)
    assert str(state["activeTurn"]["responseParts"][0]["content"]).endswith("x😀")
    start = {
        "type": "chat/toolCallStart",
        "turnId": "t1",
        "toolCallId": "c",
        "toolName": "t",
        "displayName": "T",
    }
    state = chat(state, start, 0)
    for content in ('{"a": "\ud83d', '\ude00"}'):
        state = chat(
            state, {"type": "chat/toolCallDelta", "turnId": "t1", "toolCallId": "c", "content": content}, 0
        )
    [call] = [p["toolCall"] for p in state["activeTurn"]["responseParts"] if p["kind"] == "toolCall"]
    assert call["partialInput"] == '{"a": "😀"}'


@given(st.text(min_size=257, max_size=600), st.text(max_size=8), st.text(max_size=3))
def test_a_long_text_answers_every_string_question_as_its_string(body, part, other):
    """A text over 256 characters (any long markdown or reasoning in a state) answered ``in``
    wrongly and silently (character by character: ``"needle" in text`` was False), and
    ``">" + text``, ``startswith``, ``count``, ``encode``, ``f"{text:.5}"`` and ``<`` raised (the
    reducer hunt, round 14). A cell's ``wait_for(chat, lambda c: "done" in ...)`` never resolved."""
    text = append_text(body[:200], body[200:] + part)
    plain = body + part
    assert type(text) is Text and text == plain
    assert (part in text) is (part in plain) and (other in text) is (other in plain)
    assert other + text == other + plain and text + other == plain + other
    assert text.startswith(other) is plain.startswith(other) and text.count(other) == plain.count(other)
    assert text.encode("utf-8", "surrogatepass") == plain.encode("utf-8", "surrogatepass")
    assert f"{text:.5}|{text!s:>3}" == f"{plain:.5}|{plain:>3}" and list(text) == list(plain)
    assert (text < other, text <= other, text > other) == (plain < other, plain <= other, plain > other)
    assert text.splitlines() == plain.splitlines() and text.upper() == plain.upper()


def test_a_text_answers_another_text_as_it_answers_a_string():
    """Two streamed contents are both ``Text``: ``word in big``, ``big.count(word)``,
    ``.startswith``, ``.replace`` and ``%`` raised ``TypeError`` where a ``str`` argument worked
    (hunt 15)."""
    needle = "x" * 200 + "needle" + "y" * 100  # long enough to be a Text once appended
    big = append_text(append_text("the " + needle + " and ", "the haystack, " * 30), "a " + needle)
    word = append_text(needle[:150], needle[150:])
    assert type(big) is Text and type(word) is Text
    plain_big, plain_word = str(big), str(word)
    assert (word in big) is True and (plain_word in big) is True
    assert big.count(word) == plain_big.count(plain_word) == 2
    assert big.startswith(append_text("the " + needle[:150], needle[150:])) and big.find(word) == 4
    assert big.replace(word, "pin") == plain_big.replace(plain_word, "pin")
    assert big.split(word) == plain_big.split(plain_word)
    assert append_text("%s and " * 60, "%d") % (*"a" * 60, 2) == "a and " * 60 + "2"
