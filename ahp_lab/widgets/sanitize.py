"""Neutralize peer-supplied content before it reaches a view.

Everything a peer sends (agent text, tool results, names, URIs) is untrusted. The view models run
every string they emit through :func:`clean_text` (terminal escapes and control characters removed)
and cap it (:func:`text_block`, 64 KB per block by default, with a "show more" reference). Markdown
is turned into HTML only in the browser, through marked and then DOMPurify; URLs that become links
go through :func:`safe_url` here *and* a DOMPurify hook there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ahp_lab.protocol.printable import printable
from ahp_lab.protocol.text import Text
from ahp_lab.protocol.vector import Vector

__all__ = [
    "BLOCK_LIMIT",
    "clean_text",
    "clip",
    "text_block",
    "as_text",
    "one_line",
    "safe_url",
    "json_preview",
]

BLOCK_LIMIT = 64 * 1024
"""Default cap, in characters, of one rendered text block."""


def clean_text(value: Any) -> str:
    """Return ``value`` as a string with ANSI CSI/OSC sequences and control characters removed.

    ``\\n`` and ``\\t`` are kept; ``\\r\\n`` and lone ``\\r`` become ``\\n``. Non-strings are
    converted with :func:`as_text` first.
    """
    # a lone surrogate (a remote host's) could not be sent to the browser: printable replaces it
    return printable(value if isinstance(value, str) else as_text(value))


def clip(s: str, limit: int) -> tuple[str, bool]:
    """Cut ``s`` to at most ``limit`` characters; return the text and whether it was cut."""
    if limit < 0:
        limit = 0
    if len(s) <= limit:
        return s, False
    return s[:limit], True


def as_text(value: Any) -> str:
    """Best-effort plain string of a peer value: ``str``/``Text`` as is, ``StringOrMarkdown``
    objects by their ``markdown`` member, numbers and booleans by ``str``, anything else empty."""
    if isinstance(value, str):
        return value
    if isinstance(value, Text):
        return str(value)
    if isinstance(value, Mapping):
        md = value.get("markdown")
        if isinstance(md, (str, Text)):
            return str(md)
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return ""


def is_markdown(value: Any) -> bool:
    """True for the ``{markdown: ...}`` form of ``StringOrMarkdown``."""
    return isinstance(value, Mapping) and isinstance(value.get("markdown"), (str, Text))


def text_block(
    value: Any,
    ref: str,
    limits: Mapping[str, int] | None = None,
    *,
    markdown: bool | None = None,
    limit: int = BLOCK_LIMIT,
) -> dict[str, Any]:
    """A capped, cleaned text block for a view.

    ``ref`` names the block so the view can ask for more ("show more" raises ``limits[ref]``).
    The result is ``{"text", "length", "truncated", "ref", "markdown"}``; ``length`` is the length
    of the raw text, ``text`` at most ``limits.get(ref, limit)`` characters.
    """
    raw = value if isinstance(value, str) else as_text(value)
    cap = limit
    if limits is not None:
        got = limits.get(ref)
        if isinstance(got, int) and not isinstance(got, bool) and got > 0:
            cap = got
    # Clean only a bounded prefix: a 5 MB result must not be regex-scanned in full on every sync.
    # (grow the prefix when removed escape sequences left it short of the cap)
    take = cap + 1024
    while True:
        head = raw if len(raw) <= take else raw[:take]
        cleaned = clean_text(head)
        if len(cleaned) >= cap or len(head) >= len(raw):
            break
        take *= 2
    text, cut = clip(cleaned, cap)
    return {
        "text": text,
        "length": len(raw),
        "truncated": cut or len(head) < len(raw),
        "ref": ref,
        "markdown": is_markdown(value) if markdown is None else bool(markdown),
    }


def one_line(value: Any, limit: int = 200) -> str:
    """A short single-line label: cleaned, whitespace collapsed, cut with an ellipsis."""
    s = value if isinstance(value, str) else as_text(value)
    if len(s) > limit * 4:
        s = s[: limit * 4]
    s = " ".join(clean_text(s).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


_SAFE_SCHEMES = ("http:", "https:", "mailto:")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*):")


def safe_url(url: Any) -> str | None:
    """Return ``url`` if it may become a clickable link (http, https, mailto), else ``None``.

    ``javascript:``, ``data:``, ``vbscript:``, ``file:`` and every other scheme are refused, as is
    anything with control characters or whitespace tricks in the scheme.
    """
    if not isinstance(url, (str, Text)):
        return None
    s = str(url)
    if len(s) > 4096:
        return None
    stripped = re.sub(r"[\x00-\x20\x7f-\x9f]", "", s)
    m = _SCHEME.match(stripped)
    if not m:
        return None
    if (m.group(1).lower() + ":") not in _SAFE_SCHEMES:
        return None
    if stripped != s.strip():
        return None
    return s.strip()


def _json_default(obj: Any) -> Any:
    if isinstance(obj, Text):
        return str(obj)
    if isinstance(obj, (Vector, set, frozenset, tuple)):
        return list(obj)
    return repr(obj)


def json_preview(value: Any, ref: str, limits: Mapping[str, int] | None = None, *, indent: int = 2) -> dict:
    """Pretty JSON of ``value`` as a capped, cleaned :func:`text_block`."""
    try:
        s = json.dumps(value, indent=indent, ensure_ascii=False, default=_json_default, sort_keys=False)
    except (ValueError, TypeError, RecursionError) as exc:  # circular or exotic values
        s = f"<unserializable: {type(exc).__name__}>"
    return text_block(s, ref, limits, markdown=False)
