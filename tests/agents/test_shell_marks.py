"""Terminal output in any chunks, stripped of shell-integration sequences, joins to the whole
output stripped at once (other-channels §1: ``terminal/data`` carries none)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ahp_lab.host.terminals import ShellMarks
from tests.conftest import examples

pieces = st.sampled_from(
    [
        "hello",
        " ",
        "\n",
        "é",
        "\x1b[1m",  # a colour: the terminal's own, kept
        "\x1b]0;title\x07",  # a window title: not shell integration, kept
        "\x1b]633;A\x07",
        "\x1b]633;E;ls -la\x1b\\",
        "\x1b]133;D;0\x07",
        "\x1b]7;file:///tmp\x07",
        "\x1b",
        "]",
    ]
)
MARKS = re.compile(r"\x1b\](?:633|133|697|7);[^\x07\x1b]*(?:\x07|\x1b\\)")


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(pieces, max_size=40), st.lists(st.integers(0, 400), max_size=8))
def test_chunks_stripped_join_to_the_whole_stripped(parts, cuts):
    text = "".join(parts)
    bounds = sorted({min(c, len(text)) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0, *bounds], [*bounds, len(text)], strict=True)]
    marks = ShellMarks()
    out = "".join(marks.strip(chunk) for chunk in chunks) + marks.strip("", final=True)
    assert out == MARKS.sub("", text)
    assert "\x1b]633;" not in out and "\x1b]133;" not in out
