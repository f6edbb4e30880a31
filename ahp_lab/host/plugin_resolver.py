"""Resolving a customization container into children: the Open Plugins layout and directories.

:func:`resolve_plugin` follows the Open Plugins specification v1.0.0: the manifest
``.plugin/plugin.json`` (preferred over the other locations hosts accept: ``.claude-plugin/``,
``.cursor-plugin/``, ``.codex-plugin/``, a root ``plugin.json``), components in their default
locations unless the manifest names ``./``-relative paths, ``${PLUGIN_ROOT}`` expanded in MCP
configuration, and child names namespaced ``plugin:component``. :func:`resolve_directory`
resolves a folder holding one kind of child. Problems never stop the rest: a skipped file adds
one sentence to ``Resolution.warnings``; at most ``Limits.max_folder_files`` files are looked
at per container. Resolution touches only the files (no host state), so the host runs it in a
worker thread.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..protocol.limits import DEFAULT_LIMITS, Limits
from .plugin_documents import FrontmatterError, JsonDocument, split_frontmatter
from .plugin_sources import SourceError

__all__ = [
    "ChildSpec",
    "Resolution",
    "resolve_plugin",
    "resolve_directory",
    "expand_root",
    "expand_plugin_paths",
    "looks_like_plugin",
    "MANIFEST_LOCATIONS",
    "INSTRUCTION_FILES",
]

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
    def __init__(self, src: Any, namespace: str | None, limits: Limits = DEFAULT_LIMITS) -> None:
        self.src = src
        self.ns = namespace
        self.limits = limits
        self.children: list[ChildSpec] = []
        # what the source could not fetch in full (a client's plugin cut at a bound) comes first
        self.warnings: list[str] = list(getattr(src, "notes", ()))
        self._keys: set[str] = set()
        self._mcp_names: set[str] = set()
        self._files_left = limits.max_folder_files

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
        """The names in folder ``rel``; at most ``max_folder_files`` names in the whole container."""
        try:
            names = self.src.list(rel)
        except SourceError as exc:
            self.warn(rel, str(exc))
            return []
        if len(names) > self._files_left:
            limit = self.limits.max_folder_files
            self.warnings.append(
                f"{rel or '.'} holds more files than the host looks at in one container "
                f"(the limit is {limit:,}): the rest of it was skipped."
            )
            names = names[: self._files_left]
        self._files_left -= len(names)
        return names

    def document(self, rel: str) -> tuple[dict, str] | None:
        try:
            text = self.src.read(rel)
        except SourceError as exc:
            self.warn(rel, str(exc))
            return None
        try:
            return split_frontmatter(text, self.limits)
        except FrontmatterError as exc:
            self.warn(rel, str(exc))
            return None

    def json_doc(self, rel: str) -> JsonDocument | None:
        try:
            return JsonDocument(self.src.read(rel), self.limits.max_depth)
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

    def hooks(self, rel: str, doc: JsonDocument | None = None, prefix: tuple = ()) -> None:
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

    def mcp(self, rel: str, doc: JsonDocument | None = None, prefix: tuple = ()) -> None:
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


def resolve_plugin(src: Any, fallback_name: str, limits: Limits = DEFAULT_LIMITS) -> Resolution:
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
    probe = _Resolver(src, None, limits)
    manifest: dict = {}
    manifest_rel: str | None = None
    manifest_doc: JsonDocument | None = None
    present = [loc for loc in MANIFEST_LOCATIONS if probe.kind(loc) == "file"]
    warnings = list(probe.warnings)
    if present:
        manifest_rel = present[0]
        text = None
        try:
            text = src.read(manifest_rel)
            manifest_doc = JsonDocument(text, limits.max_depth)
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
            with contextlib.suppress(SourceError, ValueError, RecursionError):  # too deep: not compared
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
    r = _Resolver(src, name, limits)
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


def resolve_directory(src: Any, contents: str, name: str, limits: Limits = DEFAULT_LIMITS) -> Resolution:
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
    r = _Resolver(src, None, limits)
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
