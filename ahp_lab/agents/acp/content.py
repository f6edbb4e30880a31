"""A tool call's content as AHP shows it: what an ACP tool call's content items (text, images and
audio, links, embedded resources, file diffs, terminals) and locations become in its AHP
``ToolResultContent``, each bounded, with what is left out said in its place.

Content that must be kept for ``resourceRead`` (a diff's sides, binary content) or that lives
elsewhere (terminals) is reached through the :class:`Resolver` the bridge passes in.
:mod:`.mapping` builds the tool-call actions around it.
"""

from __future__ import annotations

import difflib
import functools
import json
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...protocol.limits import cut_noted
from ..base import FileAccessDenied

if TYPE_CHECKING:
    from .mapping import ToolCall

__all__ = ["Resolver", "tool_content", "file_edit", "diff_text", "unified_diff", "shown"]

#: Characters of a terminal's output a tool call shows (its ``text`` item and ``result.preview``).
TERMINAL_PREVIEW = 4000


@dataclass
class Resolver:
    """What the mapping needs from outside: keep content for ``resourceRead``, find terminals."""

    put_content: Callable[..., dict]
    terminal: Callable[[str], Any]  # terminalId -> host terminal handle (or None)
    file_uri: Callable[[str], str]
    # (text, characters) -> the text cut to that many, secrets masked before the cut: a secret
    # cut in two is no longer recognised whole when the action is redacted
    clip: Callable[[str, int], str] = lambda text, n: text[:n]


#: The most characters (both sides together) of a file edit whose unified diff is computed:
#: difflib runs on the event loop, and the rewrite of a 1.7 MB lock file held it 4.7 s.
MAX_DIFFED_CHARS = 400_000
#: The most comparisons difflib may make between the changed middles of the two sides (the
#: middle lines of one side times how often each occurs in the other's, leaving out the lines
#: difflib itself takes for noise): its time grows with them, and 200,000 characters of 150
#: distinct lines (1.4 million) held the loop 21 s, where the lines of a source file mostly occur
#: once (a 1,200-line file edited at both ends: some 1,300). At the bound: some 0.2 s.
MAX_DIFFED_PAIRS = 50_000
_CONTEXT = 3  # lines of context around a change


@functools.lru_cache(maxsize=128)  # more than the diffs one call shows (MAX_CALL_ITEMS)
def unified_diff(path: str, old: str | None, new: str) -> str | None:
    """A unified diff of one file (``/dev/null`` for a created file), or ``None`` when it would cost
    too much to compute (:data:`MAX_DIFFED_CHARS`, :data:`MAX_DIFFED_PAIRS`). difflib compares only
    the lines between the sides' common start and end; the hunks are drawn from the whole files.
    Computed once for a call's content, its counts and its confirmation, which all show it."""
    if len(old or "") + len(new) > MAX_DIFFED_CHARS:
        return None
    a, b = (old or "").splitlines(keepends=True), new.splitlines(keepends=True)
    same = min(len(a), len(b))
    lo = next((k for k in range(same) if a[k] != b[k]), same)
    hi = next((k for k in range(same - lo) if a[-1 - k] != b[-1 - k]), same - lo)
    a_mid, b_mid = a[lo : len(a) - hi], b[lo : len(b) - hi]
    if _comparisons(a_mid, b_mid) > MAX_DIFFED_PAIRS:
        return None
    codes = [("equal", 0, lo, 0, lo)] if lo else []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a_mid, b_mid).get_opcodes():
        codes.append((tag, i1 + lo, i2 + lo, j1 + lo, j2 + lo))
    if hi:
        codes.append(("equal", len(a) - hi, len(a), len(b) - hi, len(b)))
    whole = difflib.SequenceMatcher(None, (), ())
    whole.opcodes = codes  # what get_grouped_opcodes reads: the middle's, placed in the whole files
    named = path if path.startswith("/") else f"/{path}"  # a/rel.txt, not arel.txt
    out = [f"--- {'/dev/null' if old is None else f'a{named}'}\n", f"+++ b{named}\n"]
    for group in whole.get_grouped_opcodes(_CONTEXT) if lo < len(a) or lo < len(b) else ():
        first, last = group[0], group[-1]
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += (" " + line for line in a[i1:i2])
                continue
            if tag in ("replace", "delete"):
                out += ("-" + line for line in a[i1:i2])
            if tag in ("replace", "insert"):
                out += ("+" + line for line in b[j1:j2])
    if len(out) == 2:
        return ""
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in out)


def _range(start: int, stop: int) -> str:
    """A hunk's line range as a unified diff writes it (difflib's own form)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def _comparisons(a: list[str], b: list[str]) -> int:
    """About how many line comparisons difflib makes for ``a`` and ``b``: how often each line of
    ``a`` occurs in ``b``, leaving out the lines it takes for noise (more than 1% of 200 or more)."""
    seen = Counter(b)
    popular = len(b) // 100 + 1 if len(b) >= 200 else len(b) + 1
    return sum(n for n in map(seen.get, a) if n is not None and n <= popular)


#: The longest side of a file edit kept for ``resourceRead``: it is masked on the event loop
#: first (some 0.2 s a megabyte), and a 9 MB file's two sides held the loop 2 s.
MAX_KEPT_SIDE_CHARS = 1024 * 1024


def file_edit(item: dict, resolver: Resolver) -> dict:
    """An ACP ``diff`` as an AHP ``FileEdit``, its sides kept for ``resourceRead``
    (``FileAccessDenied`` when a side is too large to keep)."""
    path = str(item.get("path", ""))
    old, new = item.get("oldText"), str(item.get("newText", ""))
    longest = max(len(new), len(str(old or "")))
    if longest > MAX_KEPT_SIDE_CHARS:
        raise FileAccessDenied(f"a side of {longest:,} characters is over {MAX_KEPT_SIDE_CHARS:,}")
    uri = resolver.file_uri(path)
    edit: dict[str, Any] = {"after": {"uri": uri, "content": resolver.put_content(new, "text/plain")}}
    if old is not None:
        edit["before"] = {"uri": uri, "content": resolver.put_content(str(old), "text/plain")}
    diff = unified_diff(shown(path), None if old is None else str(old), new)
    if diff is not None:  # (counts of a diff too large to compute are not known)
        added = removed = 0
        for line in diff.splitlines()[2:]:
            added += line.startswith("+")
            removed += line.startswith("-")
        edit["diff"] = {"added": added, "removed": removed}
    return edit


def diff_text(item: dict) -> str:
    """The unified diff an ACP ``diff`` shows as text, or a note when it is too large."""
    path, old, new = shown(str(item.get("path", ""))), item.get("oldText"), str(item.get("newText", ""))
    diff = unified_diff(path, None if old is None else str(old), new)
    if diff is None:
        size = len(str(old or "")) + len(new)
        if size > MAX_DIFFED_CHARS:
            return f"[the diff of {path} is not shown: its two sides have {size:,} characters]"
        return f"[the diff of {path} is not shown: its lines repeat too often to compare them quickly]"
    return diff


def _embedded(data: str, content_type: str, resolver: Resolver) -> dict:
    """A tool call's binary content (image, audio, blob) as a ``resource`` item: its bytes are kept
    for ``resourceRead``, masked as state is, never inlined (20 MB of base64 inlined made the
    chat larger than a client's message limit, and a key inside it stayed unmasked)."""
    try:
        return {"type": "resource", **resolver.put_content(data, content_type, True)}
    except FileAccessDenied as exc:
        return {"type": "text", "text": f"[{content_type or 'binary'} content not kept: {exc}]"}


def tool_content(call: ToolCall, resolver: Resolver) -> list[dict]:
    """Display-ready ``ToolResultContent[]``: text, diffs (a unified diff + a ``fileEdit``),
    terminals (the terminal + its output so far), then the call's locations as resources."""
    out: list[dict] = []
    terminals_shown: set[str] = set()  # a terminal listed 64 times is shown once (attacker round 33)
    for item in _shown_items(call.content):
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "content":
            block = item.get("content") or {}
            btype = block.get("type")
            if btype == "text":
                out.append({"type": "text", "text": cut_noted(str(block.get("text", "")), MAX_SHOWN_CHARS)})
            elif btype in ("image", "audio") and isinstance(block.get("data"), str):
                out.append(_embedded(block["data"], str(block.get("mimeType") or ""), resolver))
            elif btype == "resource_link":
                uri = str(block.get("uri"))
                if len(uri) > MAX_URI_CHARS:
                    out.append({"type": "text", "text": f"[a link of {len(uri):,} characters is not shown]"})
                    continue
                ref = {"type": "resource", "uri": uri}
                if isinstance(block.get("mimeType"), str):
                    ref["contentType"] = block["mimeType"][:MAX_TITLE_CHARS]
                out.append(ref)
            elif btype == "resource":
                res = block.get("resource") or {}
                if isinstance(res.get("text"), str):
                    out.append({"type": "text", "text": cut_noted(res["text"], MAX_SHOWN_CHARS)})
                elif isinstance(res.get("blob"), str):
                    out.append(_embedded(res["blob"], str(res.get("mimeType") or ""), resolver))
        elif kind == "diff":
            size = len(str(item.get("path", "")))
            if size > MAX_URI_CHARS:
                out.append(
                    {"type": "text", "text": f"[an edit of a path of {size:,} characters is not shown]"}
                )
                continue
            out.append({"type": "text", "text": diff_text(item)})
            try:
                out.append({"type": "fileEdit", **file_edit(item, resolver)})
            except FileAccessDenied as exc:  # the diff above stays; its sides are not kept
                out.append({"type": "text", "text": f"[the file's sides are not kept: {exc}]"})
        elif kind == "terminal":
            if str(item.get("terminalId")) in terminals_shown:
                continue
            terminals_shown.add(str(item.get("terminalId")))
            terminal = resolver.terminal(str(item.get("terminalId")))
            if terminal is None:
                out.append(
                    {"type": "text", "text": f"[terminal {item.get('terminalId')} is not known to this host]"}
                )
                continue
            # the tool call shows the output's tail, readable: the whole of it is the terminal
            # channel's (the output so far, up to 1 MiB, sent again at each read grew the log 15-fold)
            # without escapes and control characters: raw in a tool call, a client would print them
            text, cut = terminal.preview(TERMINAL_PREVIEW)
            entry: dict[str, Any] = {
                "type": "terminal",
                "resource": terminal.uri,
                "title": terminal.title,
                "isPty": False,
            }
            if terminal.exited:
                result: dict[str, Any] = {"preview": text, "truncated": cut}
                if terminal.shown_exit_code is not None:  # as the terminal channel says it (137: a kill)
                    result["exitCode"] = terminal.shown_exit_code
                entry["result"] = result
            out.append(entry)
            if not text:  # an exited command's tail may also be cut away whole (inside a character)
                text = "(no output yet)" if not terminal.exited else "(output cut)" if cut else "(no output)"
            elif cut:
                text = "…" + text
            out.append({"type": "text", "text": text})
    if len(call.content) > MAX_CALL_ITEMS:
        out.append(_left_out(len(call.content) - MAX_CALL_ITEMS, "content items"))
    for loc in call.locations[:MAX_CALL_ITEMS]:
        if isinstance(loc, dict) and isinstance(loc.get("path"), str) and len(loc["path"]) <= MAX_URI_CHARS:
            uri = resolver.file_uri(loc["path"])
            out.append(
                {
                    "type": "resource",
                    "uri": f"{uri}#L{loc['line']}" if isinstance(loc.get("line"), int) else uri,
                }
            )
    if len(call.locations) > MAX_CALL_ITEMS:
        out.append(_left_out(len(call.locations) - MAX_CALL_ITEMS, "locations"))
    return _within_budget(out)


def _shown_items(items: list) -> list:
    """At most :data:`MAX_CALL_ITEMS` of a call's content items, in order: the agent's own and the
    host's note of a changed input first, then the host's newest notes of the files it read or
    wrote (80 reads showed the first 64 and hid the newest)."""
    if len(items) <= MAX_CALL_ITEMS:
        return items
    # the file notes give way; the note that the agent changed an approved input never does
    notes = [i for i, c in enumerate(items) if isinstance(c, dict) and c.get("_host") is True]
    kept = [i for i, c in enumerate(items) if not (isinstance(c, dict) and c.get("_host") is True)][
        :MAX_CALL_ITEMS
    ]
    room = MAX_CALL_ITEMS - len(kept)
    if room:
        kept += notes[-room:]
    return [items[i] for i in sorted(kept)]


def _within_budget(items: list[dict]) -> list[dict]:
    """``items`` up to :data:`MAX_CALL_CHARS` of text in all, then a note of what is left out: each
    is bounded, and 70 texts of 262,000 characters made an 18 MB call no client could take."""
    left = MAX_CALL_CHARS
    for i, item in enumerate(items):
        left -= len(json.dumps(item, ensure_ascii=False))  # every member: a file edit's URIs too
        if left < 0:
            return [*items[:i], _left_out(len(items) - i, "content items")]
    return items


def _left_out(n: int, what: str) -> dict:
    """The text item that says ``n`` more ``what`` were left out of a tool call."""
    return {"type": "text", "text": f"[{n:,} more {what}]"}


#: The most characters of one piece of a tool call shown (its input, a text of its content, its
#: raw output as JSON): an agent's 20-million-character input made one action over every client's
#: message limit, and no client could join the chat again.
MAX_SHOWN_CHARS = 1 << 18  # what one chat/delta carries (mapping.MAX_DELTA_CHARS)
#: The most characters of a tool call's title (its invocation message and past-tense message).
MAX_TITLE_CHARS = 1000
#: The most content items, and the most locations, of one tool call shown.
MAX_CALL_ITEMS = 64
#: The most characters of text all the content of one tool call (or its confirmation) shows.
MAX_CALL_CHARS = 1 << 20
#: The longest link (a ``resource_link``'s URI, a location's path) a tool call shows.
MAX_URI_CHARS = 8192


def shown(text: str) -> str:
    """``text`` (a path the agent named) as it may be shown: a control or formatting character
    (a right-to-left override that makes ``rtl\u202eevil.txt`` read otherwise, a tab) as its escape."""
    if not any(unicodedata.category(ch) in ("Cc", "Cf") for ch in text):
        return text
    return "".join(
        ch.encode("unicode_escape").decode("ascii") if unicodedata.category(ch) in ("Cc", "Cf") else ch
        for ch in text
    )
