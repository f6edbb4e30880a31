"""Parsing customization files: YAML frontmatter of markdown files, JSON with source ranges.

:func:`split_frontmatter` reads the ``---``-delimited YAML header of a skill, agent, prompt or
rule with a safe loader and bounded input: at most ``Limits.max_frontmatter_bytes`` of YAML, at
most ``Limits.max_yaml_aliases`` aliases, and an expanded value of at most four times the
frontmatter size (a "billion laughs" of aliases is refused, not expanded). :class:`JsonDocument`
parses a JSON file (manifest, ``hooks.json``, ``.mcp.json``) and remembers where each member
was declared, so that children can carry a ``range``.
"""

from __future__ import annotations

import bisect
import json
import re
from json.decoder import scanstring
from typing import Any

import yaml

from ..protocol.limits import DEFAULT_LIMITS, Limits, nesting_exceeds
from .plugin_sources import SourceError

__all__ = ["FrontmatterError", "split_frontmatter", "JsonDocument"]

_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class FrontmatterError(ValueError):
    """YAML frontmatter that cannot be parsed; the message is one sentence."""


def _expanded_size(value: Any, budget: int) -> int:
    """Characters ``value`` stands for once YAML aliases are expanded (counting stops at ``budget``)."""
    used = 0
    stack = [value]
    while stack and used <= budget:
        item = stack.pop()
        if isinstance(item, dict):
            used += 2 + len(item)
            for key, sub in item.items():
                stack.append(key)
                stack.append(sub)
        elif isinstance(item, (list, tuple, set)):
            used += 2 + len(item)
            stack.extend(item)
        else:
            used += len(item) if isinstance(item, (str, bytes)) else 8
    return used


def split_frontmatter(text: str, limits: Limits = DEFAULT_LIMITS) -> tuple[dict, str]:
    """Split ``---``-delimited YAML frontmatter from a markdown body; no frontmatter ⇒ ``{}``.

    Raises :class:`FrontmatterError` for YAML that is invalid, larger than
    ``limits.max_frontmatter_bytes``, uses more than ``limits.max_yaml_aliases`` aliases or
    expands to more than four times its size.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r") != "---":
        return {}, text
    for idx in range(1, len(lines)):
        if lines[idx].rstrip("\r") in ("---", "..."):
            header = "\n".join(lines[1:idx])
            body = "\n".join(lines[idx + 1 :])
            break
    else:
        raise FrontmatterError("its frontmatter has no closing '---' line")
    size = len(header.encode("utf-8"))
    if size > limits.max_frontmatter_bytes:
        raise FrontmatterError(
            f"its frontmatter is {size:,} bytes, over the limit of {limits.max_frontmatter_bytes:,}"
        )
    try:
        aliases = sum(
            1 for event in yaml.parse(header, Loader=_SAFE_LOADER) if isinstance(event, yaml.AliasEvent)
        )
        if aliases > limits.max_yaml_aliases:
            raise FrontmatterError(
                f"its frontmatter uses {aliases:,} YAML aliases, over the limit of {limits.max_yaml_aliases:,}"
            )
        data = yaml.load(header, Loader=_SAFE_LOADER)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        where = f" at line {mark.line + 2}" if mark is not None else ""
        raise FrontmatterError(f"its frontmatter is not valid YAML{where} ({problem})") from None
    except RecursionError:
        raise FrontmatterError("its frontmatter nests too deep") from None
    budget = 4 * limits.max_frontmatter_bytes
    if aliases and _expanded_size(data, budget) > budget:
        raise FrontmatterError(
            f"its frontmatter expands to more than {budget:,} characters through YAML aliases"
        )
    if data is None:
        return {}, body
    if not isinstance(data, dict):
        raise FrontmatterError("its frontmatter is not a mapping of keys to values")
    return data, body


_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_WS = re.compile(r"[ \t\n\r]*")


class _SpanParser:
    """A small JSON parser that remembers where each object member and array item was declared."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.spans: dict[tuple, tuple[int, int]] = {}

    def parse(self) -> Any:
        value, i = self._value(_WS.match(self.text, 0).end(), ())
        return value

    def _value(self, i: int, path: tuple) -> tuple[Any, int]:
        c = self.text[i]
        if c == "{":
            out: dict = {}
            i = _WS.match(self.text, i + 1).end()
            if self.text[i] == "}":
                return out, i + 1
            while True:
                start = i
                key, i = scanstring(self.text, i + 1)
                i = _WS.match(self.text, i).end() + 1  # the ':'
                i = _WS.match(self.text, i).end()
                value, i = self._value(i, path + (key,))
                self.spans[path + (key,)] = (start, i)
                out.setdefault(key, value)
                i = _WS.match(self.text, i).end()
                if self.text[i] == "}":
                    return out, i + 1
                i = _WS.match(self.text, i + 1).end()
        if c == "[":
            items: list = []
            i = _WS.match(self.text, i + 1).end()
            if self.text[i] == "]":
                return items, i + 1
            while True:
                start = i
                value, i = self._value(i, path + (len(items),))
                self.spans[path + (len(items),)] = (start, i)
                items.append(value)
                i = _WS.match(self.text, i).end()
                if self.text[i] == "]":
                    return items, i + 1
                i = _WS.match(self.text, i + 1).end()
        if c == '"':
            return scanstring(self.text, i + 1)
        for word, value in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, i):
                return value, i + len(word)
        m = _NUMBER.match(self.text, i)
        return json.loads(m.group()), m.end()


class JsonDocument:
    """A parsed JSON file and the ranges of its declarations (as ``TextRange``)."""

    def __init__(self, text: str, max_depth: int = DEFAULT_LIMITS.max_depth) -> None:
        if nesting_exceeds(text, max_depth):
            raise SourceError(f"it nests deeper than {max_depth} levels")
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            raise SourceError(
                f"it is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
            ) from None
        parser = _SpanParser(text)
        self.value = parser.parse()
        self._spans = parser.spans
        self._text = text
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def _position(self, offset: int) -> dict:
        line = bisect.bisect_right(self._line_starts, offset) - 1
        col_text = self._text[self._line_starts[line] : offset]
        return {"line": line, "character": len(col_text.encode("utf-16-le")) // 2}

    def range(self, path: tuple) -> dict | None:
        span = self._spans.get(path)
        if span is None:
            return None
        return {"start": self._position(span[0]), "end": self._position(span[1])}
