"""Attacker round 25."""

from __future__ import annotations

import mistune

from .conftest import arun, joined, open_lab

XSS = "<img src=x onerror=\"document.body.dataset.pwned='1'\"> [click](javascript:alert(1)) `<b>x</b>`"
ESCAPES = "\x1b]52;c;cHduZWQ=\x07\x1b]0;title\x07\x1b[2J\u202eevil"


def test_a_strangers_text_in_a_turn_shown_in_a_cell_is_text_not_html(connect_stranger):
    """A cell showing a turn (``Turn._repr_markdown_``) pasted the message, the agent's text, tool
    results and errors into markdown as they were, and JupyterLab puts a cell's markdown into the
    page as trusted HTML: a stranger's ``<img onerror>`` ran in the notebook's page, where the
    Jupyter server's API runs code in the kernel (attacker round 25: its own turn, a steering
    message the agent quoted, the agent echoing a prompt). Every text is now shown as written; a
    printed turn (``repr``) carries no terminal escapes (its OSC 52 wrote the terminal's clipboard)."""

    async def main():
        async with open_lab() as lab:
            mallory = await joined(connect_stranger, lab, "mallory", chat=True)
            message = {"text": XSS + ESCAPES, "origin": {"kind": "user"}}
            turn = {"type": "chat/turnStarted", "turnId": "m1", "startedAt": "x", "message": message}
            mallory.dispatch(lab.chat, 91, turn)
            assert "rejectionReason" not in await mallory.echo(91)
            await lab.wait_for(lab.chat, lambda c: c.get("activeTurn") is None or None, timeout=30)
            shown = lab.turns()[-1]
            html = mistune.html(shown._repr_markdown_())  # as JupyterLab renders markdown: HTML kept
            assert (
                "<img" not in html and "<b>" not in html and "<a " not in html and "<code>&lt;b" not in html
            )
            assert "&lt;img src=x onerror=" in html  # the text is all there, as written
            printed = repr(shown)
            assert "\x1b" not in printed and "\u202e" not in printed and "\x07" not in printed

    arun(main())
