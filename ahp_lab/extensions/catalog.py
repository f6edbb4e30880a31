"""On-demand tools: ``SearchTools`` scoring, stable tool refs, and capability notices (seed 003 §4–5).

Catalog tools are never in the model request. The model learns their *names* from capability
notices and fetches a schema with ``SearchTools``; ``ExecuteTool`` runs one by its ``toolRef``.

* **Scoring** (:func:`score`): the query is split into lowercase terms (runs of letters, digits
  and ``_``); per term, an exact name scores 16, a name containing it 8, a description containing
  it 2. The best 8 with a positive score are returned, ties by name.
* **Tool refs** are ``<extension>.<catalog>/<name>``: the same tool keeps its ref for the whole
  session, a refreshed list does not change it, a removed tool's ref gives an error result.
* **Capability notices** (:func:`render_notice`): the first model call of a conversation gets the
  full inventory; later calls only what was Added / Removed / Updated since what the history
  already told (:func:`told_inventory` folds it from the notices in the history, so truncation or
  compaction re-sends what was lost); nothing at all when nothing changed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any

from .contract import INVENTORIES

__all__ = [
    "NOTICE_META",
    "SEARCH_LIMIT",
    "terms_of",
    "score",
    "search",
    "fingerprint",
    "told_inventory",
    "render_notice",
]

#: Key of a notice message's metadata: ``{section: {name: fingerprint}}``.
NOTICE_META = "_capabilityInventory"
#: How many matches ``SearchTools`` returns at most.
SEARCH_LIMIT = 8

_GUIDES = {
    "tool": "These tools are loaded on demand. Search a name with SearchTools to get its toolRef and "
    "input schema, then call ExecuteTool. A toolRef stays valid for the whole session.",
    "mcp": "These MCP tools are loaded on demand. Search a name with SearchTools to get its toolRef and "
    "input schema, then call ExecuteTool. A toolRef stays valid for the whole session.",
    "skill": "Load a skill with the Skill tool before following it.",
}


def terms_of(query: Any) -> list[str]:
    """The search terms of a query: lowercase runs of letters, digits and ``_``."""
    return [t for t in re.split(r"[^0-9a-z_]+", str(query or "").lower()) if t][:32]


def score(name: str, description: str, terms: Iterable[str]) -> int:
    """The seed's weights: exact name +16, name contains +8, description contains +2 (per term)."""
    name, description = name.lower(), (description or "").lower()
    total = 0
    for term in terms:
        if name == term:
            total += 16
        elif term in name:
            total += 8
        elif term in description:
            total += 2
    return total


def search(entries: Iterable[tuple[str, str, str]], query: Any, limit: int = SEARCH_LIMIT) -> list[str]:
    """The refs of the best matches among ``(ref, name, description)`` entries, best first."""
    terms = terms_of(query)
    scored = [(score(name, desc, terms), name, ref) for ref, name, desc in entries]
    scored = [s for s in scored if s[0] > 0]
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [ref for _score, _name, ref in scored[:limit]]


def fingerprint(description: str, schema: Any) -> str:
    """A short hash of what the model would learn about a tool (an "Updated" is a changed one)."""
    text = json.dumps([description or "", schema or {}], sort_keys=True, ensure_ascii=False)
    hit = _FINGERPRINTS.get(text)
    if hit is None:
        if len(_FINGERPRINTS) > 20_000:
            _FINGERPRINTS.clear()
        hit = _FINGERPRINTS[text] = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    return hit


_FINGERPRINTS: dict[str, str] = {}


def told_inventory(messages: Iterable[dict]) -> dict[str, dict[str, str]]:
    """What the history already told the model: the snapshot in the last notice message."""
    told: dict[str, dict[str, str]] = {}
    for message in messages:
        snapshot = message.get(NOTICE_META)
        if isinstance(snapshot, dict):
            told = snapshot
    return told


def _render(section: str, names: list[str], info: dict[str, tuple[str | None, str]]) -> list[str]:
    if section == "skill":
        return [f"- {n}: {info[n][1]}" if info.get(n, (None, ""))[1] else f"- {n}" for n in names]
    if section == "mcp":
        groups: dict[str, list[str]] = {}
        for n in names:
            parts = n.split("__")
            group = info.get(n, (None, ""))[0] or (parts[1] if len(parts) >= 3 else "mcp")
            short = n.split("__", 2)[-1] if n.startswith("mcp__") else n
            groups.setdefault(group, []).append(short)
        return [f"- {g}: {', '.join(ns)}" for g, ns in groups.items()]
    return [f"- {n}" for n in names]


def render_notice(
    told: dict[str, dict[str, str]], current: dict[str, dict[str, tuple[str | None, str, str]]]
) -> str | None:
    """The notice text for ``current`` given what was ``told``, or ``None`` when nothing changed.

    ``current`` maps a section (``tool``/``mcp``/``skill``) to ``{name: (group, description,
    fingerprint)}``; ``told`` maps a section to ``{name: fingerprint}``.
    """
    blocks: list[str] = []
    for section in INVENTORIES:
        now = current.get(section) or {}
        before = told.get(section) or {}
        info = {n: (g, d) for n, (g, d, _f) in now.items()}
        added = [n for n in now if n not in before]
        removed = [n for n in before if n not in now]
        updated = [n for n in now if n in before and before[n] != now[n][2]]
        if not (added or removed or updated):
            continue
        lines = [f"<{section}>", _GUIDES[section]]
        if not before:
            lines.extend(_render(section, added, info))
        else:
            if added:
                lines += ["Added:", *_render(section, added, info)]
            if removed:
                lines += ["Removed:", *_render(section, removed, {})]
            if updated:
                lines += ["Updated:", *_render(section, updated, info)]
        lines.append(f"</{section}>")
        blocks.append("\n".join(lines))
    return "\n".join(blocks) if blocks else None


def snapshot(current: dict[str, dict[str, tuple[str | None, str, str]]]) -> dict[str, dict[str, str]]:
    """What a notice records as told: ``{section: {name: fingerprint}}``."""
    return {s: {n: f for n, (_g, _d, f) in entries.items()} for s, entries in current.items() if entries}
