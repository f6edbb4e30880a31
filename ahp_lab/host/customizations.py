"""Customizations: Open Plugins folders, watched directories and client-published plugins.

The host resolves every customization source into a container of the session's customization
tree (customizations-and-client-tools.md):

* a **plugin folder** (``Lab(plugins=[...])``, or a plugin a client publishes) follows the Open
  Plugins specification v1.0.0: the manifest ``.plugin/plugin.json`` (preferred over the other
  manifest locations hosts accept: ``.claude-plugin/``, ``.cursor-plugin/``, ``.codex-plugin/``,
  a root ``plugin.json``), components in their default locations unless the manifest names
  ``./``-relative paths, ``${PLUGIN_ROOT}`` expanded in MCP configuration, and child names
  namespaced ``plugin:component``;
* a **directory** (``Lab(directories=[{"path", "contents", "writable"}])``) holds one kind of
  child, may not exist yet, and is watched: files added, changed or removed show up within a
  second as a new ``session/customizationUpdated`` carrying the whole container.

Children carry only protocol fields. Host-internal details — hook commands and matchers, MCP
``command``/``args``/``env`` — stay in :attr:`CustomizationManager` and never reach the wire.
Problems never stop the rest of the tree: a skipped file makes its container ``degraded`` with
one sentence per problem; a folder that cannot be read makes it ``error``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import errno
import json
import logging
import os
import re
import stat as statmod
from dataclasses import dataclass, field
from json.decoder import scanstring
from pathlib import Path
from typing import Any
from urllib.parse import quote

import yaml

from ..protocol.customizations import CHILD_TYPES, effective_enabled
from ..protocol.jsonvalue import to_json
from .resources import file_uri

log = logging.getLogger("ahp_lab.host.customizations")

__all__ = [
    "CustomizationManager",
    "DiskSource",
    "MemorySource",
    "Resolution",
    "ChildSpec",
    "SourceError",
    "FrontmatterError",
    "effective_enabled",
    "resolve_plugin",
    "resolve_directory",
    "split_frontmatter",
    "MAX_FILE_BYTES",
    "MANIFEST_LOCATIONS",
]

#: Larger component files are skipped (with a warning) instead of read.
MAX_FILE_BYTES = 1_000_000
#: Manifest locations in order of precedence; the first one present is the manifest.
MANIFEST_LOCATIONS = (
    ".plugin/plugin.json",
    ".claude-plugin/plugin.json",
    ".cursor-plugin/plugin.json",
    ".codex-plugin/plugin.json",
    "plugin.json",
)
INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", "GEMINI.md")
_PLUGIN_NAME = re.compile(r"^(?!.*--)(?!.*\.\.)[a-z0-9](?:[a-z0-9.-]{0,62}[a-z0-9])?$")
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Client (virtual) plugins are fetched whole; these bound what one client can make the host read.
_CLIENT_MAX_FILES = 400
_CLIENT_MAX_DEPTH = 6
_CLIENT_TIMEOUT = 10.0


class SourceError(Exception):
    """A file or folder that cannot be used; the message is one sentence ("it is ...")."""


class FrontmatterError(ValueError):
    """YAML frontmatter that cannot be parsed; the message is one sentence."""


# ---------------------------------------------------------------------------------------------
# frontmatter and JSON with source ranges


def split_frontmatter(text: str) -> tuple[dict, str]:
    """Split ``---``-delimited YAML frontmatter from a markdown body; no frontmatter ⇒ ``{}``."""
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
    try:
        data = yaml.load(header, Loader=_SAFE_LOADER)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        where = f" at line {mark.line + 2}" if mark is not None else ""
        raise FrontmatterError(f"its frontmatter is not valid YAML{where} ({problem})") from None
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


class _JsonDoc:
    """A parsed JSON file and the ranges of its declarations (as ``TextRange``)."""

    def __init__(self, text: str) -> None:
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
        import bisect

        line = bisect.bisect_right(self._line_starts, offset) - 1
        col_text = self._text[self._line_starts[line] : offset]
        return {"line": line, "character": len(col_text.encode("utf-16-le")) // 2}

    def range(self, path: tuple) -> dict | None:
        span = self._spans.get(path)
        if span is None:
            return None
        return {"start": self._position(span[0]), "end": self._position(span[1])}


# ---------------------------------------------------------------------------------------------
# sources: where a container's files come from


def _errno_reason(err: int | None) -> str:
    if err == errno.ELOOP:
        return "it is part of a symlink loop"
    if err in (errno.EACCES, errno.EPERM):
        return "it cannot be read (permission denied)"
    if err == errno.ENOTDIR:
        return "a part of its path is not a folder"
    return f"it cannot be read ({os.strerror(err) if err else 'unknown error'})"


class DiskSource:
    """Files under a local folder; records every path it looked at so a watcher can poll them."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(os.path.abspath(os.path.expanduser(os.fspath(root))))
        self._root_real: str | None = None
        self.touched: dict[str, tuple] = {}

    @property
    def local_root(self) -> Path:
        return self.root

    def path(self, rel: str) -> Path:
        return self.root / rel if rel else self.root

    def uri(self, rel: str = "") -> str:
        return file_uri(self.path(rel))

    @staticmethod
    def signature(path: Path) -> tuple:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return ("link",) if os.path.islink(path) else ("absent",)
        except OSError as exc:
            return ("error", exc.errno)
        kind = "dir" if statmod.S_ISDIR(st.st_mode) else "file" if statmod.S_ISREG(st.st_mode) else "other"
        return (kind, st.st_mtime_ns, st.st_size, st.st_ino)

    def kind(self, rel: str) -> str | None:
        """``"dir"``, ``"file"``, ``"other"`` or ``None`` (absent); raises :class:`SourceError`."""
        path = self.path(rel)
        sig = self.signature(path)
        self.touched[rel] = sig
        if sig[0] == "absent":
            return None
        if sig[0] == "link":
            raise SourceError("it is a symlink to something that does not exist")
        if sig[0] == "error":
            raise SourceError(_errno_reason(sig[1]))
        if rel:
            if self._root_real is None:
                self._root_real = os.path.realpath(self.root)
            real = os.path.realpath(path)
            if not (real == self._root_real or real.startswith(self._root_real + os.sep)):
                raise SourceError("it resolves outside the folder (a symlink points out)")
        return sig[0]

    def size(self, rel: str) -> int:
        sig = self.touched.get(rel) or self.signature(self.path(rel))
        return sig[2] if len(sig) > 2 else 0

    def list(self, rel: str) -> list[str]:
        try:
            return sorted(os.listdir(self.path(rel)))
        except OSError as exc:
            raise SourceError(_errno_reason(exc.errno)) from None

    def read(self, rel: str) -> str:
        kind = self.kind(rel)
        if kind is None:
            raise SourceError("it does not exist")
        if kind != "file":
            raise SourceError("it is not a regular file")
        size = self.size(rel)
        if size > MAX_FILE_BYTES:
            raise SourceError(
                f"it is {size / 1e6:.1f} MB, over the {MAX_FILE_BYTES / 1e6:g} MB limit for customization files"
            )
        try:
            with open(self.path(rel), "rb") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise SourceError(_errno_reason(exc.errno)) from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise SourceError("it is not UTF-8 text") from None

    def changed(self) -> bool:
        """Whether anything this source looked at changed since (added, edited, removed)."""
        return any(self.signature(self.path(rel)) != sig for rel, sig in self.touched.items())


class MemorySource:
    """Files held in memory (a client's virtual plugin, fetched over ``resourceRead``)."""

    def __init__(self, root_uri: str, files: dict[str, bytes], errors: dict[str, str] | None = None) -> None:
        self.root_uri = root_uri.rstrip("/")
        self.files = files
        self.errors = dict(errors or {})
        self.dirs = {""}
        for rel in list(files) + list(self.errors):
            parts = rel.split("/")
            for n in range(1, len(parts)):
                self.dirs.add("/".join(parts[:n]))

    local_root = None

    def uri(self, rel: str = "") -> str:
        return f"{self.root_uri}/{quote(rel)}" if rel else self.root_uri

    def kind(self, rel: str) -> str | None:
        if rel in self.errors:
            raise SourceError(self.errors[rel])
        if rel in self.files:
            return "file"
        return "dir" if rel in self.dirs else None

    def list(self, rel: str) -> list[str]:
        prefix = f"{rel}/" if rel else ""
        names = {
            p[len(prefix) :].split("/")[0]
            for p in list(self.files) + list(self.errors)
            if p.startswith(prefix)
        }
        return sorted(n for n in names if n)

    def read(self, rel: str) -> str:
        if self.kind(rel) != "file":
            raise SourceError("it does not exist" if self.kind(rel) is None else "it is not a regular file")
        data = self.files[rel]
        if len(data) > MAX_FILE_BYTES:
            raise SourceError(
                f"it is {len(data) / 1e6:.1f} MB, over the {MAX_FILE_BYTES / 1e6:g} MB limit for customization files"
            )
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise SourceError("it is not UTF-8 text") from None


# ---------------------------------------------------------------------------------------------
# resolution


@dataclass
class ChildSpec:
    """One resolved child: protocol ``fields`` plus host-only ``internal`` details."""

    type: str
    key: str  # stable identity within its container (keeps the child's id across re-parses)
    fields: dict
    internal: dict | None = None


@dataclass
class Resolution:
    name: str
    children: list[ChildSpec] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    version: str | None = None
    description: str | None = None


def _text(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _flag(fm: dict, *keys: str) -> bool | None:
    for key in keys:
        value = fm.get(key)
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
    return None


def _string_list(value: Any) -> list[str] | None:
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, list):
        items = [str(v).strip() for v in value if isinstance(v, (str, int, float))]
    else:
        return None
    return [v for v in items if v]


def _stem(name: str, *suffixes: str) -> str:
    for suffix in suffixes:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def expand_root(value: Any, root: str | None) -> Any:
    """Expand ``${PLUGIN_ROOT}`` (and ``${CLAUDE_PLUGIN_ROOT}``) in every string of a config value."""
    if isinstance(value, str):
        if root is None:
            return value
        return value.replace("${PLUGIN_ROOT}", root).replace("${CLAUDE_PLUGIN_ROOT}", root)
    if isinstance(value, list):
        return [expand_root(v, root) for v in value]
    if isinstance(value, dict):
        return {k: expand_root(v, root) for k, v in value.items()}
    return value


class _Resolver:
    def __init__(self, src: Any, namespace: str | None) -> None:
        self.src = src
        self.ns = namespace
        self.children: list[ChildSpec] = []
        self.warnings: list[str] = []
        self._keys: set[str] = set()
        self._mcp_names: set[str] = set()

    # -- plumbing --

    def warn(self, rel: str, reason: str) -> None:
        self.warnings.append(f"{rel or '.'} was skipped: {reason}.")

    def name(self, base: str) -> str:
        return f"{self.ns}:{base}" if self.ns else base

    def kind(self, rel: str) -> str | None:
        """The kind of ``rel`` or ``"bad"`` (already reported)."""
        try:
            return self.src.kind(rel)
        except SourceError as exc:
            self.warn(rel, str(exc))
            return "bad"

    def listing(self, rel: str) -> list[str]:
        try:
            return self.src.list(rel)
        except SourceError as exc:
            self.warn(rel, str(exc))
            return []

    def document(self, rel: str) -> tuple[dict, str] | None:
        try:
            text = self.src.read(rel)
        except SourceError as exc:
            self.warn(rel, str(exc))
            return None
        try:
            return split_frontmatter(text)
        except FrontmatterError as exc:
            self.warn(rel, str(exc))
            return None

    def json_doc(self, rel: str) -> _JsonDoc | None:
        try:
            return _JsonDoc(self.src.read(rel))
        except SourceError as exc:
            self.warn(rel, str(exc))
            return None

    def add(self, type_: str, key: str, fields: dict, internal: dict | None = None) -> None:
        if key in self._keys:
            return
        self._keys.add(key)
        self.children.append(
            ChildSpec(type_, key, {k: v for k, v in fields.items() if v is not None}, internal)
        )

    def files(self, rel: str, suffixes: tuple[str, ...]) -> list[str]:
        """``rel`` itself when it is a matching file, else the matching files directly inside it."""
        kind = self.kind(rel)
        if kind in (None, "bad"):
            return []
        if kind == "file":
            return [rel]
        if kind != "dir":
            self.warn(rel, "it is neither a file nor a folder")
            return []
        out = []
        for name in self.listing(rel):
            if not name.endswith(suffixes) or name.startswith("."):
                continue
            sub = f"{rel}/{name}" if rel else name
            k = self.kind(sub)
            if k == "file":
                out.append(sub)
            elif k not in (None, "bad"):
                self.warn(sub, "it is not a regular file")
        return out

    # -- components --

    def skills(self, rel: str, *, flat: bool = False) -> None:
        kind = self.kind(rel)
        if kind in (None, "bad"):
            return
        if kind != "dir":
            self.warn(rel, "it is not a folder")
            return
        own = f"{rel}/SKILL.md" if rel else "SKILL.md"
        if rel and self.kind(own) == "file":  # a manifest path naming one skill's folder
            self.skill(own, rel.rsplit("/", 1)[-1])
            return
        for name in self.listing(rel):
            if name.startswith("."):
                continue
            sub = f"{rel}/{name}" if rel else name
            k = self.kind(sub)
            if k == "dir":
                md = f"{sub}/SKILL.md"
                km = self.kind(md)
                if km == "file":
                    self.skill(md, name)
                elif km not in (None, "bad"):
                    self.warn(md, "it is not a regular file")
            elif k == "file" and flat and name.endswith(".md"):
                self.command(sub)

    def skill(self, rel: str, dirname: str) -> None:
        doc = self.document(rel)
        if doc is None:
            return
        self.add_skill(f"skill:{rel}", rel, dirname, doc[0])

    def add_skill(self, key: str, rel: str, base: str, fm: dict) -> None:
        """A skill child (from ``skills/<name>/SKILL.md`` or a slash command's ``commands/*.md``)."""
        self.add(
            "skill",
            key,
            {
                "name": self.name(base),
                "uri": self.src.uri(rel),
                "description": _text(fm.get("description")),
                "disableModelInvocation": _flag(fm, "disable-model-invocation", "disableModelInvocation"),
                "disableUserInvocation": _user_flag(fm),
            },
        )

    def command(self, rel: str) -> None:
        doc = self.document(rel)
        if doc is None:
            return
        self.add_skill(f"command:{rel}", rel, _stem(rel.rsplit("/", 1)[-1], ".md"), doc[0])

    def agent(self, rel: str) -> None:
        doc = self.document(rel)
        if doc is None:
            return
        fm, _body = doc
        base = _text(fm.get("name")) or _stem(rel.rsplit("/", 1)[-1], ".agent.md", ".md")
        model = _text(fm.get("model"))
        self.add(
            "agent",
            f"agent:{rel}",
            {
                "name": self.name(base),
                "uri": self.src.uri(rel),
                "description": _text(fm.get("description")),
                "model": None if model in (None, "inherit") else model,
                "tools": _string_list(fm.get("tools")),
                "disableModelInvocation": _flag(fm, "disable-model-invocation", "disableModelInvocation"),
                "disableUserInvocation": _user_flag(fm),
            },
        )

    def prompt(self, rel: str) -> None:
        doc = self.document(rel)
        if doc is None:
            return
        fm, _body = doc
        base = _text(fm.get("name")) or _stem(rel.rsplit("/", 1)[-1], ".prompt.md", ".md")
        self.add(
            "prompt",
            f"prompt:{rel}",
            {"name": self.name(base), "uri": self.src.uri(rel), "description": _text(fm.get("description"))},
        )

    def rule(self, rel: str, *, always: bool | None = None) -> None:
        doc = self.document(rel)
        if doc is None:
            return
        fm, _body = doc
        base = _stem(rel.rsplit("/", 1)[-1], ".instructions.md", ".mdc", ".md")
        globs = _string_list(fm.get("globs"))
        if globs is None:
            globs = _string_list(fm.get("applyTo"))
        always_apply = _flag(fm, "alwaysApply", "always-apply")
        self.add(
            "rule",
            f"rule:{rel}",
            {
                "name": self.name(base),
                "uri": self.src.uri(rel),
                "description": _text(fm.get("description")),
                "alwaysApply": always if always_apply is None and always is not None else always_apply,
                "globs": globs or None,
            },
        )

    def hooks(self, rel: str, doc: _JsonDoc | None = None, prefix: tuple = ()) -> None:
        doc = doc or self.json_doc(rel)
        if doc is None:
            return
        events = _member(doc.value, prefix + ("hooks",))
        if not isinstance(events, dict):
            self.warn(rel, 'it has no "hooks" object mapping events to hook rules')
            return
        for event, rules in events.items():
            if not isinstance(rules, list):
                self.warn(rel, f'its "hooks.{event}" entry is not a list of hook rules')
                continue
            for index, rule in enumerate(rules):
                if not isinstance(rule, dict) or not isinstance(rule.get("hooks"), list):
                    self.warn(rel, f'its "hooks.{event}[{index}]" rule has no "hooks" list')
                    continue
                matcher = rule.get("matcher") if isinstance(rule.get("matcher"), str) else None
                label = event if len(rules) == 1 else f"{event} #{index + 1}"  # the matcher stays internal
                self.add(
                    "hook",
                    f"hook:{rel}#{'/'.join(map(str, prefix))}/{event}/{index}",
                    {
                        "name": self.name(label),
                        "uri": self.src.uri(rel),
                        "range": doc.range(prefix + ("hooks", event, index)),
                    },
                    {"event": event, "matcher": matcher, "hooks": rule.get("hooks")},
                )

    def mcp(self, rel: str, doc: _JsonDoc | None = None, prefix: tuple = ()) -> None:
        doc = doc or self.json_doc(rel)
        if doc is None:
            return
        servers = _member(doc.value, prefix + ("mcpServers",))
        if not isinstance(servers, dict):
            self.warn(rel, 'it has no "mcpServers" object')
            return
        root = self.src.local_root
        for name, config in servers.items():
            if not isinstance(config, dict) or not (
                isinstance(config.get("command"), str) or isinstance(config.get("url"), str)
            ):
                self.warn(rel, f'its MCP server "{name}" has neither a "command" nor a "url"')
                continue
            if name in self._mcp_names:
                self.warn(rel, f'its MCP server "{name}" is declared twice and the first declaration wins')
                continue
            self._mcp_names.add(name)
            internal = expand_root(
                {
                    k: config[k]
                    for k in ("command", "args", "env", "cwd", "url", "headers", "type", "startTimeout")
                    if k in config
                },
                str(root) if root is not None else None,
            )
            internal.update({"server": name, "pluginRoot": str(root) if root is not None else None})
            self.add(
                "mcpServer",
                f"mcp:{name}",
                {
                    "name": self.name(name),
                    "uri": self.src.uri(rel),
                    "range": doc.range(prefix + ("mcpServers", name)),
                },
                internal,
            )


def _member(value: Any, path: tuple) -> Any:
    """The JSON value at ``path`` inside ``value`` (``None`` where an object is missing)."""
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _user_flag(fm: dict) -> bool | None:
    flag = _flag(fm, "disable-user-invocation", "disableUserInvocation")
    if flag is None:
        invocable = _flag(fm, "user-invocable", "userInvocable")
        if invocable is not None:
            return not invocable
    return flag


def _manifest_paths(
    r: _Resolver, manifest: dict, field_name: str, default: list[str]
) -> tuple[list[str], Any]:
    """The ``./`` paths a manifest names for a component type (or the default), and any inline value."""
    if field_name not in manifest:
        return default, None
    value = manifest[field_name]
    inline_key = {"mcpServers": "mcpServers", "hooks": "hooks"}.get(field_name)
    if isinstance(value, str):
        raw = [value]
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        raw = list(value)
    elif isinstance(value, dict) and isinstance(value.get("paths"), list) and (inline_key not in value):
        raw = [v for v in value["paths"] if isinstance(v, str)]
    elif isinstance(value, dict) and inline_key and inline_key in value and "paths" not in value:
        return [], value
    else:
        r.warnings.append(f'The manifest field "{field_name}" has an unrecognized shape and was ignored.')
        return [], None
    out = []
    for path in raw:
        norm = os.path.normpath(path[2:]) if path.startswith("./") else None
        if norm is None or norm.startswith("..") or os.path.isabs(norm):
            r.warnings.append(
                f'The manifest path "{path}" for "{field_name}" was ignored: plugin paths start with "./" and stay inside the plugin.'
            )
            continue
        out.append("" if norm == "." else norm.replace(os.sep, "/").rstrip("/"))
    return out, None


def resolve_plugin(src: Any, fallback_name: str) -> Resolution:
    """Resolve an Open Plugins folder (a :class:`DiskSource` or :class:`MemorySource`)."""
    try:
        root_kind = src.kind("")
    except SourceError as exc:
        return Resolution(fallback_name, error=f"The plugin folder cannot be read: {exc}.")
    if root_kind is None:
        return Resolution(fallback_name, error="The plugin folder does not exist.")
    if root_kind != "dir":
        return Resolution(fallback_name, error="The plugin path is not a folder.")
    try:
        src.list("")
    except SourceError as exc:
        return Resolution(fallback_name, error=f"The plugin folder cannot be read: {exc}.")
    probe = _Resolver(src, None)
    manifest: dict = {}
    manifest_rel: str | None = None
    manifest_doc: _JsonDoc | None = None
    present = [loc for loc in MANIFEST_LOCATIONS if probe.kind(loc) == "file"]
    warnings = list(probe.warnings)
    if present:
        manifest_rel = present[0]
        text = None
        try:
            text = src.read(manifest_rel)
            manifest_doc = _JsonDoc(text)
        except SourceError as exc:
            warnings.append(
                f"{manifest_rel} was skipped: {exc}; the plugin loads with its folder name and default locations."
            )
        if manifest_doc is not None:
            if isinstance(manifest_doc.value, dict):
                manifest = manifest_doc.value
            else:
                warnings.append(f"{manifest_rel} was skipped: it is not a JSON object.")
                manifest_doc = None
        for other in present[1:]:
            with contextlib.suppress(SourceError, ValueError):
                if text is not None and json.loads(src.read(other)) != json.loads(text):
                    warnings.append(
                        f"{other} was skipped: it differs from {manifest_rel}, which is the manifest used."
                    )
    name = fallback_name
    manifest_name = manifest.get("name")
    if isinstance(manifest_name, str) and manifest_name.strip():
        name = manifest_name.strip()
        if not _PLUGIN_NAME.match(name):
            warnings.append(
                f'The plugin name "{name}" breaks the naming rules (1-64 lowercase letters, digits, "-" and ".").'
            )
    elif manifest_doc is not None and "name" in manifest:
        warnings.append(f'{manifest_rel} has no usable "name"; the folder name is used.')
    r = _Resolver(src, name)
    r.warnings = warnings
    version = _text(manifest.get("version"))

    paths, _ = _manifest_paths(r, manifest, "skills", ["skills"])
    for rel in paths:
        r.skills(rel)
    paths, _ = _manifest_paths(r, manifest, "commands", ["commands"])
    for rel in paths:
        for f in r.files(rel, (".md",)):
            r.command(f)
    paths, _ = _manifest_paths(r, manifest, "agents", ["agents"])
    for rel in paths:
        for f in r.files(rel, (".md",)):
            r.agent(f)
    paths, _ = _manifest_paths(r, manifest, "prompts", ["prompts"])
    for rel in paths:
        for f in r.files(rel, (".md",)):
            r.prompt(f)
    paths, _ = _manifest_paths(r, manifest, "rules", ["rules"])
    for rel in paths:
        for f in r.files(rel, (".md", ".mdc")):
            r.rule(f)
    for fname in INSTRUCTION_FILES:
        if r.kind(fname) == "file":
            r.rule(fname, always=True)
    paths, inline = _manifest_paths(r, manifest, "hooks", ["hooks/hooks.json"])
    if inline is not None and manifest_rel is not None:
        r.hooks(manifest_rel, manifest_doc, ("hooks",))
    for rel in paths:
        if r.kind(rel) == "file":
            r.hooks(rel)
    paths, inline = _manifest_paths(r, manifest, "mcpServers", [".mcp.json"])
    if inline is not None and manifest_rel is not None:
        r.mcp(manifest_rel, manifest_doc, ("mcpServers",))
    for rel in paths:
        kind = r.kind(rel)
        if kind == "file":
            r.mcp(rel)
        elif kind not in (None, "bad"):
            r.warn(rel, "MCP configuration paths must name JSON files, not folders")
    return Resolution(
        name, r.children, r.warnings, version=version, description=_text(manifest.get("description"))
    )


def resolve_directory(src: Any, contents: str, name: str) -> Resolution:
    """Resolve a directory customization holding children of type ``contents``."""
    try:
        kind = src.kind("")
    except SourceError as exc:
        return Resolution(name, error=f"The folder cannot be read: {exc}.")
    if kind is None:
        return Resolution(name)  # may not exist yet: parsed, contributes nothing
    if kind != "dir":
        return Resolution(name, error="The path is not a folder.")
    try:
        src.list("")
    except SourceError as exc:
        return Resolution(name, error=f"The folder cannot be read: {exc}.")
    r = _Resolver(src, None)
    if contents == "skill":
        r.skills("", flat=True)
    elif contents == "agent":
        for f in r.files("", (".md",)):
            r.agent(f)
    elif contents == "prompt":
        for f in r.files("", (".md",)):
            r.prompt(f)
    elif contents == "rule":
        for f in r.files("", (".md", ".mdc")):
            r.rule(f)
    elif contents == "hook":
        for f in r.files("", (".json",)):
            r.hooks(f)
    elif contents == "mcpServer":
        for f in r.files("", (".json",)):
            r.mcp(f)
    return Resolution(name, r.children, r.warnings)


def looks_like_plugin(path: Path) -> bool:
    markers = [
        *MANIFEST_LOCATIONS[:-1],
        "skills",
        "commands",
        "agents",
        "rules",
        "prompts",
        "hooks",
        ".mcp.json",
    ]
    return any((path / m).exists() for m in markers)


def expand_plugin_paths(paths: list) -> list[Path]:
    """Plugin folders from ``Lab(plugins=[...])``: a folder of plugin folders expands to its plugins."""
    out: list[Path] = []
    for raw in paths:
        path = Path(os.path.abspath(os.path.expanduser(os.fspath(raw))))
        if path.is_dir() and not looks_like_plugin(path):
            subs = [p for p in sorted(path.iterdir()) if p.is_dir() and looks_like_plugin(p)]
            if subs:
                out.extend(subs)
                continue
        out.append(path)
    return out


# ---------------------------------------------------------------------------------------------
# the host extension


@dataclass
class _Container:
    id: str
    type: str  # "plugin" | "directory"
    uri: str
    path: Path | None = None
    name: str | None = None
    contents: str | None = None
    writable: bool = False
    client_id: str | None = None
    trusted: bool = False  # published by the notebook's own (trusted) connection
    nonce: str | None = None
    initial_enabled: bool = True
    resolution: Resolution | None = None
    source: DiskSource | None = None
    child_ids: dict[str, str] = field(default_factory=dict)
    internal: dict[str, dict] = field(default_factory=dict)
    task: asyncio.Task | None = None


@dataclass
class _Session:
    uri: str
    containers: dict[str, _Container] = field(default_factory=dict)
    servers: dict[str, dict] = field(default_factory=dict)  # top-level MCP server id -> config
    client_plugins: dict[tuple[str, str], str] = field(default_factory=dict)
    counter: int = 0
    watcher: asyncio.Task | None = None


class CustomizationManager:
    """Host extension: resolves, publishes and watches every customization container of a session.

    ``plugins`` are plugin folders (a folder of plugin folders expands to them); ``directories``
    are ``{"path", "contents", "writable"?, "name"?, "enabled"?}``; ``mcp_servers`` maps a name to
    ``{"command", "args"?, "env"?, "cwd"?}`` or ``{"url", "headers"?}`` (bare top-level servers),
    optionally with ``"enabled": False`` or ``"startTimeout": <seconds>``. Client plugins come
    from ``session/activeClientSet`` (re-parsed only when their ``nonce`` changes) and are read
    from the client with host→client ``resourceList``/``resourceRead``.
    """

    def __init__(
        self,
        host: Any,
        *,
        plugins: list | tuple = (),
        directories: list | tuple = (),
        mcp_servers: dict | None = None,
        poll_interval: float = 0.2,
    ) -> None:
        self.host = host
        self.plugins = expand_plugin_paths(list(plugins))
        self.directories = [self._directory_config(d) for d in directories]
        self.mcp_servers = dict(mcp_servers or {})
        for name, config in self.mcp_servers.items():
            if not isinstance(config, dict) or not (config.get("command") or config.get("url")):
                raise ValueError(f"mcp_servers[{name!r}] needs a 'command' or a 'url'")
        self.poll_interval = poll_interval
        self.sessions: dict[str, _Session] = {}
        self.stats = {"resolves": 0, "client_fetches": 0}

    @staticmethod
    def _directory_config(d: Any) -> dict:
        if isinstance(d, (str, os.PathLike)):
            d = {"path": d}
        if not isinstance(d, dict) or "path" not in d:
            raise ValueError("a directory customization needs a 'path'")
        contents = d.get("contents", "skill")
        if contents not in CHILD_TYPES:
            raise ValueError(f"directory contents must be one of {', '.join(CHILD_TYPES)}, not {contents!r}")
        path = Path(os.path.abspath(os.path.expanduser(os.fspath(d["path"]))))
        return {
            "path": path,
            "contents": contents,
            "writable": bool(d.get("writable", False)),
            "name": d.get("name") or path.name,
            "enabled": bool(d.get("enabled", True)),
        }

    # -- queries used by the MCP manager and the resource service --------------------------------

    def mcp_config(self, session: str, cid: str) -> dict | None:
        """Host-internal configuration of an MCP server customization (never on the wire)."""
        sess = self.sessions.get(session)
        if sess is None:
            return None
        if cid in sess.servers:
            return sess.servers[cid]
        for c in sess.containers.values():
            if cid in c.internal and c.internal[cid] is not None and "server" in c.internal[cid]:
                return {
                    **c.internal[cid],
                    "plugin": c.resolution.name if c.type == "plugin" and c.resolution else None,
                    "clientId": c.client_id,
                    "trusted": c.client_id is None or c.trusted,
                }
        return None

    def internal(self, session: str, cid: str) -> dict | None:
        """Host-internal details of any child (hook event/matcher/commands, MCP config)."""
        sess = self.sessions.get(session)
        for c in sess.containers.values() if sess else ():
            if cid in c.internal:
                return c.internal[cid]
        return None

    def _sessions_of(self, connection: Any) -> list[_Session]:
        subscribed = getattr(connection, "subscriptions", ())
        return [sess for uri, sess in self.sessions.items() if uri in subscribed]

    def read_roots(self, connection: Any) -> list[Path]:
        """Folders ``connection`` may read: the containers and working directories of the sessions
        it is subscribed to."""
        from .resources import uri_path

        roots: list[Path] = []
        for sess in self._sessions_of(connection):
            roots.extend(c.path for c in sess.containers.values() if c.path is not None)
            state = self.host.store.state(sess.uri) or {}
            for uri in state.get("workingDirectories") or ():
                if isinstance(uri, str) and uri.startswith("file://"):
                    with contextlib.suppress(Exception):
                        roots.append(uri_path(uri))
        return roots

    def write_roots(self, connection: Any) -> list[Path]:
        """Folders ``connection`` may write: writable directories of the sessions it is subscribed to."""
        return [
            c.path
            for sess in self._sessions_of(connection)
            for c in sess.containers.values()
            if c.type == "directory" and c.writable and c.path is not None
        ]

    # -- host hooks -----------------------------------------------------------------------------

    def on_session_created(self, session: str) -> None:
        sess = _Session(session)
        self.sessions[session] = sess
        for path in self.plugins:
            c = _Container(self._mint(sess, "plugin"), "plugin", file_uri(path), path=path)
            sess.containers[c.id] = c
            self._publish(sess, c)
        for d in self.directories:
            c = _Container(
                self._mint(sess, "directory"),
                "directory",
                file_uri(d["path"]),
                path=d["path"],
                name=d["name"],
                contents=d["contents"],
                writable=d["writable"],
                initial_enabled=d["enabled"],
            )
            sess.containers[c.id] = c
            self._publish(sess, c)
        for name, config in self.mcp_servers.items():
            self.add_mcp_server(session, name, config)
        sess.watcher = asyncio.ensure_future(self._load_and_watch(sess))

    def add_mcp_server(self, session: str, name: str, config: dict) -> str:
        """Add a top-level MCP server to one session (trusted callers only); returns its id.

        ``config`` is ``{"command", "args"?, "env"?, "cwd"?}`` or ``{"url", "headers"?}``; it stays
        host-internal, only the entry (name, uri, state) reaches the session's tree.
        """
        if not isinstance(config, dict) or not (config.get("command") or config.get("url")):
            raise ValueError(f"the MCP server {name!r} needs a 'command' or a 'url'")
        sess = self.sessions[session]
        sid = self._mint(sess, "mcpServer")
        sess.servers[sid] = {**config, "server": name, "pluginRoot": None, "plugin": None}
        enabled = bool(config.get("enabled", True))
        entry = {
            "type": "mcpServer",
            "id": sid,
            "uri": _server_uri(config),
            "name": name,
            "enabled": enabled,
            "state": {"kind": "starting" if enabled else "stopped"},
        }
        self.host.dispatch(session, {"type": "session/customizationUpdated", "customization": entry})
        return sid

    def on_transition(self, transition: Any) -> None:
        if transition.channel_kind != "session" or transition.type != "session/activeClientSet":
            return
        sess = self.sessions.get(transition.channel)
        if sess is not None:
            self._client_set(sess, transition.action.get("activeClient") or {})

    def on_client_left(self, session: str, client_id: str) -> None:
        sess = self.sessions.get(session)
        if sess is None:
            return
        for ident, cid in list(sess.client_plugins.items()):
            if ident[0] == client_id:
                self._forget(sess, cid)

    def on_session_disposed(self, session: str) -> None:
        sess = self.sessions.pop(session, None)
        if sess is None:
            return
        if sess.watcher is not None:
            sess.watcher.cancel()
        for c in sess.containers.values():
            if c.task is not None:
                c.task.cancel()

    async def aclose(self) -> None:
        for session in list(self.sessions):
            self.on_session_disposed(session)

    # -- publishing -----------------------------------------------------------------------------

    @staticmethod
    def _mint(sess: _Session, prefix: str) -> str:
        sess.counter += 1
        return f"{prefix}-{sess.counter}"

    def _current(self, session: str, cid: str) -> dict | None:
        for entry in (self.host.store.state(session) or {}).get("customizations") or ():
            if isinstance(entry, dict) and entry.get("id") == cid:
                return entry
        return None

    def entry(self, sess: _Session, c: _Container) -> dict:
        """The whole top-level entry for a container, carrying toggles and MCP states over."""
        current = self._current(sess.uri, c.id) or {}
        enabled = current.get("enabled") if isinstance(current.get("enabled"), bool) else c.initial_enabled
        res = c.resolution
        name = c.name if c.type == "directory" else (res.name if res else c.name) or Path(c.uri).name
        entry: dict[str, Any] = {"type": c.type, "id": c.id, "uri": c.uri, "name": name, "enabled": enabled}
        if c.type == "directory":
            entry["contents"] = c.contents
            entry["writable"] = c.writable
        if c.client_id is not None:
            entry["clientId"] = c.client_id
        if res is None:
            entry["load"] = {"kind": "loading"}
            return entry
        if c.type == "plugin" and res.version:
            entry["version"] = res.version
        if res.error:
            entry["load"] = {"kind": "error", "message": res.error}
            entry["children"] = []
            return entry
        if res.warnings:
            count = len(res.warnings)
            entry["load"] = {
                "kind": "degraded",
                "message": f"{count} problem{'s' if count != 1 else ''}: " + " ".join(res.warnings),
            }
            entry["_meta"] = {"ahp_lab/warnings": list(res.warnings)}
        else:
            entry["load"] = {"kind": "loaded"}
        previous = {ch.get("id"): ch for ch in current.get("children") or () if isinstance(ch, dict)}
        children = []
        internal: dict[str, dict] = {}
        for spec in res.children:
            cid = c.child_ids.get(spec.key)
            if cid is None:
                cid = c.child_ids[spec.key] = self._mint(sess, spec.type)
            child = {"type": spec.type, "id": cid, **spec.fields}
            prev = previous.get(cid) or {}
            if spec.type == "mcpServer":
                child["enabled"] = prev["enabled"] if isinstance(prev.get("enabled"), bool) else True
                if isinstance(prev.get("state"), dict):
                    child["state"] = prev["state"]
                else:
                    on = enabled and child["enabled"]
                    child["state"] = {"kind": "starting" if on else "stopped"}
            elif isinstance(prev.get("enabled"), bool):
                child["enabled"] = prev["enabled"]
            children.append(child)
            if spec.internal is not None:
                internal[cid] = spec.internal
        c.internal = internal
        entry["children"] = children
        return entry

    def _publish(self, sess: _Session, c: _Container) -> None:
        if sess.uri not in self.sessions or not self.host.store.has_channel(sess.uri):
            return
        entry = self.entry(sess, c)
        current = self._current(sess.uri, c.id)
        if current is not None and to_json(current) == entry:
            return
        self.host.dispatch(sess.uri, {"type": "session/customizationUpdated", "customization": entry})

    def _forget(self, sess: _Session, cid: str) -> None:
        c = sess.containers.pop(cid, None)
        if c is None:
            return
        if c.task is not None:
            c.task.cancel()
        for ident, hid in list(sess.client_plugins.items()):
            if hid == cid:
                del sess.client_plugins[ident]
        if self._current(sess.uri, cid) is not None and self.host.store.has_channel(sess.uri):
            self.host.dispatch(sess.uri, {"type": "session/customizationRemoved", "id": cid})

    # -- disk containers ------------------------------------------------------------------------

    def resolve_disk(self, c: _Container) -> None:
        src = DiskSource(c.path)
        self.stats["resolves"] += 1
        if c.type == "plugin":
            c.resolution = resolve_plugin(src, c.path.name)
        else:
            c.resolution = resolve_directory(src, c.contents or "skill", c.name or c.path.name)
        c.source = src

    async def _load_and_watch(self, sess: _Session) -> None:
        try:
            for c in list(sess.containers.values()):
                if c.path is None or c.client_id is not None:
                    continue
                self._resolve_and_publish(sess, c)
                await asyncio.sleep(0)
            while any(c.source is not None for c in sess.containers.values()):
                await asyncio.sleep(self.poll_interval)
                for c in list(sess.containers.values()):
                    if c.source is not None and c.source.changed():
                        self._resolve_and_publish(sess, c)
        except asyncio.CancelledError:
            raise
        except Exception:  # a watcher bug must not take the host down
            log.exception("the customization watcher of %s stopped", sess.uri)

    def _resolve_and_publish(self, sess: _Session, c: _Container) -> None:
        try:
            self.resolve_disk(c)
        except Exception as exc:  # defensive: report instead of crashing the watcher
            log.exception("resolving %s failed", c.uri)
            c.resolution = Resolution(
                c.name or "", error=f"The folder could not be resolved: {type(exc).__name__}: {exc}."
            )
        self._publish(sess, c)

    def refresh(self, session: str) -> None:
        """Re-resolve every disk container of a session now (the watcher does this on changes)."""
        sess = self.sessions.get(session)
        for c in list(sess.containers.values()) if sess else ():
            if c.path is not None and c.client_id is None:
                self._resolve_and_publish(sess, c)

    # -- client-published plugins ---------------------------------------------------------------

    def _client_set(self, sess: _Session, active_client: dict) -> None:
        client_id = active_client.get("clientId")
        if not isinstance(client_id, str):
            return
        seen: set[tuple[str, str]] = set()
        trusted = self.host.is_trusted(client_id)  # decided by the connection, never by the entry
        for plugin in active_client.get("customizations") or ():
            if not isinstance(plugin, dict) or plugin.get("type", "plugin") != "plugin":
                continue
            uri = plugin.get("uri")
            key = plugin.get("id") or uri
            if not isinstance(uri, str) or not isinstance(key, str):
                continue
            ident = (client_id, key)
            seen.add(ident)
            nonce = plugin.get("nonce") if isinstance(plugin.get("nonce"), str) else None
            hid = sess.client_plugins.get(ident)
            c = sess.containers.get(hid) if hid else None
            if c is None:
                c = _Container(
                    self._mint(sess, "plugin"),
                    "plugin",
                    uri,
                    name=plugin.get("name") if isinstance(plugin.get("name"), str) else None,
                    client_id=client_id,
                    trusted=trusted,
                    nonce=nonce,
                    initial_enabled=plugin.get("enabled") is not False,
                )
                sess.containers[c.id] = c
                sess.client_plugins[ident] = c.id
                self._publish(sess, c)
            elif (
                nonce is not None
                and nonce == c.nonce
                and uri == c.uri
                and trusted == c.trusted
                and c.resolution is not None
            ):
                continue  # unchanged nonce: no re-parse
            else:
                c.nonce, c.uri, c.trusted = nonce, uri, trusted
            if c.task is not None:
                c.task.cancel()
            c.task = asyncio.ensure_future(self._resolve_client_plugin(sess, c))
        for ident, hid in list(sess.client_plugins.items()):
            if ident[0] == client_id and ident not in seen:
                self._forget(sess, hid)

    async def _resolve_client_plugin(self, sess: _Session, c: _Container) -> None:
        fallback = c.name or c.uri.rstrip("/").rsplit("/", 1)[-1] or "plugin"
        try:
            src = await self._fetch_client_files(c.client_id, c.uri)
        except SourceError as exc:
            c.resolution = Resolution(fallback, error=f"The client's plugin could not be read: {exc}.")
        else:
            self.stats["resolves"] += 1
            c.resolution = resolve_plugin(src, fallback)
        if sess.containers.get(c.id) is c:
            self._publish(sess, c)

    async def _fetch_client_files(self, client_id: str | None, root_uri: str) -> MemorySource:
        """Read a client's (virtual) plugin with host→client ``resourceList``/``resourceRead``."""
        from ..transport import RpcError

        conn = self.host.connection_of(client_id)
        if conn is None:
            raise SourceError(f"client {client_id} is not connected")
        self.stats["client_fetches"] += 1
        root = root_uri.rstrip("/")
        files: dict[str, bytes] = {}
        errors: dict[str, str] = {}
        pending: list[tuple[str, int]] = [("", 0)]
        count = 0

        async def call(method: str, uri: str) -> Any:
            return await conn.peer.request(method, {"uri": uri}, timeout=_CLIENT_TIMEOUT)

        while pending:
            rel, depth = pending.pop(0)
            uri = f"{root}/{rel}" if rel else root
            try:
                listing = await call("resourceList", uri)
            except (RpcError, TimeoutError, ConnectionError) as exc:
                if not rel:
                    raise SourceError(_rpc_reason(exc)) from None
                errors[rel] = _rpc_reason(exc)
                continue
            for item in (listing or {}).get("entries") or ():
                name = item.get("name") if isinstance(item, dict) else None
                if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
                    continue
                sub = f"{rel}/{name}" if rel else name
                count += 1
                if count > _CLIENT_MAX_FILES:
                    errors[sub] = f"the plugin has more than {_CLIENT_MAX_FILES} entries"
                    continue
                if item.get("type") == "directory":
                    if depth + 1 < _CLIENT_MAX_DEPTH:
                        pending.append((sub, depth + 1))
                    continue
                try:
                    got = await call("resourceRead", f"{root}/{sub}")
                    data = got.get("data", "") if isinstance(got, dict) else ""
                    if isinstance(got, dict) and got.get("encoding") == "base64":
                        files[sub] = base64.b64decode(data)
                    else:
                        files[sub] = str(data).encode("utf-8")
                except (RpcError, TimeoutError, ConnectionError, ValueError) as exc:
                    errors[sub] = _rpc_reason(exc)
        return MemorySource(root, files, errors)


def _rpc_reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return f"the client did not answer within {_CLIENT_TIMEOUT:g} s"
    if isinstance(exc, ConnectionError):
        return "the client's connection closed"
    message = getattr(exc, "message", None) or str(exc)
    return f"the client refused to serve it ({message})"


def _server_uri(config: dict) -> str:
    """A descriptive URI for a bare MCP server: its URL, or the script or program it runs."""
    if config.get("url"):
        return str(config["url"])
    import shutil

    for arg in config.get("args") or ():
        if isinstance(arg, str) and not arg.startswith("-") and os.path.isfile(arg):
            return file_uri(arg)
    command = str(config.get("command"))
    found = shutil.which(command) or command
    return file_uri(found) if os.path.isabs(found) else f"file:{quote(found)}"
