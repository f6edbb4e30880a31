"""Text a peer wrote, made safe to print: terminal escape sequences and control characters removed.

An agent's stderr, a terminal's output or a tool's result may carry ANSI sequences (colours,
clear-screen, OSC titles and hyperlinks, shell integration) and control characters. Raw in state,
a client printing them to a terminal would run them, and an escape inside a key would hide it from
redaction. The views (``ahp_lab.widgets.sanitize``) and the ACP bridge use the same rules.
"""

from __future__ import annotations

import re

from .jsonvalue import valid_unicode

__all__ = ["printable"]

#: ESC-introduced sequences: CSI (ESC [ ... final), OSC (ESC ] ... BEL | ST | end), DCS/SOS/PM/APC
#: (ESC P/X/^/_ ... ST | end), and two-byte escapes (ESC + one char in @-_ or a charset designator).
#: A string sequence without its end takes 1,024 characters at most: unbounded, one stray ``ESC P``
#: hid everything after it (an agent's error message in its stderr tail).
_ESCAPES = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]?            # CSI
  | \x9b[0-?]*[ -/]*[@-~]?              # 8-bit CSI
  | \x1b\][^\x07\x1b\x9c]{0,1024}(?:\x07|\x1b\\|\x9c)?   # OSC, terminated by BEL / ST or unterminated
  | \x9d[^\x07\x1b\x9c]{0,1024}(?:\x07|\x1b\\|\x9c)?     # 8-bit OSC
  | \x1b[PX^_][^\x1b\x9c]{0,1024}(?:\x1b\\|\x9c)?        # DCS, SOS, PM, APC
  | \x1b[()*+\-./][ -~]?                # charset designation
  | \x1b[ -~]?                          # any other two-byte escape (or a lone ESC)
    """,
    re.VERBOSE,
)
#: Remaining C0 controls except \t and \n, DEL, C1 controls, and bidi overrides/isolates.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(s: str) -> str:
    """``s`` without escape sequences and control characters.

    ``\\n`` and ``\\t`` are kept; ``\\r\\n`` and lone ``\\r`` become ``\\n``; a lone surrogate
    becomes U+FFFD.
    """
    if not s:
        return ""
    if "\x1b" in s or "\x9b" in s or "\x9d" in s:
        s = _ESCAPES.sub("", s)
    if "\r" in s:
        s = s.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROLS.sub("", valid_unicode(s))
