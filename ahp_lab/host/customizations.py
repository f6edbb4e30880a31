"""Customizations: the host extension that keeps every session's customization tree current.

The host resolves every customization source into a container of the session's customization
tree (customizations-and-client-tools.md):

* a **plugin folder** (``Lab(plugins=[...])``, or a plugin a client publishes) is resolved by
  :func:`~ahp_lab.host.plugin_resolver.resolve_plugin` (Open Plugins v1.0.0);
* a **directory** (``Lab(directories=[{"path", "contents", "writable"}])``) holds one kind of
  child, may not exist yet, and is watched: files added, changed or removed show up within a
  second as a new ``session/customizationUpdated`` carrying the whole container.

Folders are resolved, and watched for changes, in a worker thread, so a large plugin never
blocks the kernel's event loop; the watcher polls less often when a sweep is slow (it costs at
most about a tenth of a core). A container whose entry would exceed
``Limits.max_customization_entry_bytes`` is published with a ``load`` error instead.

Children carry only protocol fields. Host-internal details — hook commands and matchers, MCP
``command``/``args``/``env`` — stay in :attr:`CustomizationManager` and never reach the wire.
Problems never stop the rest of the tree: a skipped file makes its container ``degraded`` with
one sentence per problem; a folder that cannot be read makes it ``error``.

Files come from :mod:`~ahp_lab.host.plugin_sources`, are parsed by
:mod:`~ahp_lab.host.plugin_documents` and resolved by :mod:`~ahp_lab.host.plugin_resolver`;
their public names are re-exported here.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import site
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..agents.base import runs_from
from ..protocol.customizations import CHILD_TYPES, effective_enabled
from ..protocol.jsonvalue import dumps, to_json
from ..protocol.limits import Limits
from ..protocol.messages import ROOT_CHANNEL
from .plugin_documents import FrontmatterError, split_frontmatter
from .plugin_resolver import (
    MANIFEST_LOCATIONS,
    ChildSpec,
    Resolution,
    expand_plugin_paths,
    resolve_directory,
    resolve_plugin,
)
from .plugin_sources import DiskSource, MemorySource, SourceError
from .resources import file_uri

log = logging.getLogger("ahp_lab.host.customizations")

#: Where clients' plugins are resolved: one worker, apart from the default executor, where the
#: notebook's sync tools and its own plugins run. A stranger's 16 plugins of 64 skills with 60 KiB
#: of YAML each held that executor 158 s (a sync tool waited as long), 378 s of CPU of which 79 s
#: were charged to it (attacker round 34). One resolution at a time, its time charged to the client
#: (:func:`_timed`); one a new nonce replaced before it started never runs.
_CLIENT_PLUGIN_WORK = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ahp-client-plugins")


def _timed(work: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    """``(the thread's CPU seconds, work(*args))``."""
    start = time.thread_time()
    out = work(*args)
    return time.thread_time() - start, out


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
    "expand_plugin_paths",
    "MANIFEST_LOCATIONS",
]

# Client (virtual) plugins are fetched whole; these bound how deep and how long the host reads.
_CLIENT_MAX_DEPTH = 6
_CLIENT_TIMEOUT = 10.0


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
    held: int = 0  # bytes of a client's plugin files read for it (CustomizationManager._hold)


@dataclass
class _Session:
    uri: str
    containers: dict[str, _Container] = field(default_factory=dict)
    servers: dict[str, dict] = field(default_factory=dict)  # top-level MCP server id -> config
    client_plugins: dict[tuple[str, str], str] = field(default_factory=dict)
    counter: int = 0
    watcher: asyncio.Task | None = None


def _may_hold_servers(plugin: Path) -> bool:
    """Whether a plugin folder may declare MCP servers: a ``.mcp.json``, or a manifest that names
    ``mcpServers`` (read up to 64 KB)."""
    if (plugin / ".mcp.json").exists():
        return True
    for manifest in MANIFEST_LOCATIONS:
        try:
            with open(plugin / manifest, encoding="utf-8", errors="replace") as f:
                if "mcpServers" in f.read(65536):
                    return True
        except OSError:
            continue
    return False


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
        limits: Limits | None = None,
    ) -> None:
        self.host = host
        self.limits = Limits.of(limits if limits is not None else getattr(host, "limits", None))
        self.plugins = expand_plugin_paths(list(plugins))
        # the folders given, a folder of plugins among them (a plugin made there later is one too)
        self._plugin_folders = [Path(os.path.abspath(os.path.expanduser(os.fspath(p)))) for p in plugins]
        #: More places code is run from, each a function giving folders (the notebook's published
        #: plugin folders): see :meth:`executed`.
        self.code_sources: list[Callable[[], Iterable[Any]]] = []
        self.directories = [self._directory_config(d) for d in directories]
        self.mcp_servers = dict(mcp_servers or {})
        for name, config in self.mcp_servers.items():
            if not isinstance(config, dict) or not (config.get("command") or config.get("url")):
                raise ValueError(f"mcp_servers[{name!r}] needs a 'command' or a 'url'")
        self.poll_interval = poll_interval
        self.sessions: dict[str, _Session] = {}
        self.stats = {"resolves": 0, "client_fetches": 0}
        # bytes of client plugin files read and kept resolved, per client and in all
        self._held_by_client: dict[str, int] = {}
        self._held_total = 0

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

    @property
    def starts_processes(self) -> bool:
        """Whether each session may start processes: the person's MCP servers that are commands,
        or a plugin or directory of theirs that may hold MCP servers (a ``.mcp.json``, a manifest
        naming ``mcpServers``, a directory of ``mcpServer`` contents)."""
        if any(isinstance(c, dict) and c.get("command") for c in self.mcp_servers.values()):
            return True
        if any(d.get("contents") == "mcpServer" for d in self.directories):
            return True
        return any(_may_hold_servers(Path(p)) for p in self.plugins)

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

    def executed(self) -> list[Path]:
        """The folders the host runs or imports code from: the person's plugins (a folder of plugins
        too) and MCP server directories, the working folder, command and script files (and their
        virtual environment) of the person's own MCP servers, the notebook's published plugin
        folders, and what the host's agents load (a ``LoopAgent``'s custom tools and configuration).
        No stranger writes there, even inside a writable directory: the host would run what it
        wrote as the person's own, without asking (``docs/security.md`` §3)."""
        folders = [
            *self._plugin_folders,
            *self.plugins,
            *(d["path"] for d in self.directories if d["contents"] == "mcpServer"),
        ]
        for config in self.mcp_servers.values():
            args = config.get("args") if isinstance(config.get("args"), list) else []
            folders.extend(runs_from([config.get("command"), *args], config.get("cwd"), config.get("env")))
        # the kernel's own environment and the user's site folder: a .pth file there runs at
        # every start of its interpreter
        folders += [Path(sys.prefix), Path(sys.base_prefix), Path(site.getusersitepackages())]
        for agent in list(getattr(self.host, "agents", {}).values()):
            code = getattr(agent, "code_folders", None)
            if code is not None:
                folders.extend(code())
        for source in self.code_sources:
            folders.extend(source())
        return folders

    def executed_names(self) -> set[str]:
        """Names of files and folders agents run code from wherever they are (an ACP agent's
        ``.claude`` or ``.mcp.json`` in whatever folder a session gives it): no stranger writes a
        path through one."""
        return {
            name
            for agent in list(getattr(self.host, "agents", {}).values())
            for name in getattr(agent, "code_names", ())
        }

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
            self._hold(c, 0)
            if c.task is not None:
                c.task.cancel()

    def _hold(self, c: _Container, size: int) -> None:
        """Count ``size`` bytes of client ``c.client_id``'s plugin files as read for ``c``."""
        change = size - c.held
        if not change or c.client_id is None:
            return
        c.held = size
        self._held_total += change
        left = self._held_by_client.get(c.client_id, 0) + change
        if left > 0:
            self._held_by_client[c.client_id] = left
        else:
            self._held_by_client.pop(c.client_id, None)

    def _room(self, c: _Container) -> tuple[int, str]:
        """How many more bytes of files may be read for client plugin ``c``, and the bound that
        says so: one plugin's, its client's in all sessions, or every client's together."""
        limits = self.limits
        per_client = limits.max_client_plugin_bytes - self._held_by_client.get(c.client_id or "", 0)
        total = limits.max_client_plugin_bytes_total - self._held_total
        return min(
            (limits.max_message_bytes - c.held, f"{limits.max_message_bytes:,} bytes"),
            (
                per_client,
                f"{limits.max_client_plugin_bytes:,} bytes for all of this client's plugins (Limits.max_client_plugin_bytes)",
            ),
            (
                total,
                f"{limits.max_client_plugin_bytes_total:,} bytes for all clients' plugins (Limits.max_client_plugin_bytes_total)",
            ),
        )

    @staticmethod
    def _no_room(sub: str, bound: str) -> str:
        return f"The plugin's files add up to more than {bound}: the rest, from {sub[:200]!r}, was not read."

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
        if sess.containers.get(c.id) is not c:
            return  # removed meanwhile
        entry = self.entry(sess, c)
        size = len(dumps(entry, separators=(",", ":")))
        if size > self.limits.max_customization_entry_bytes:
            entry = self._oversized(entry, c, size)
        current = self._current(sess.uri, c.id)
        if current is not None and to_json(current) == entry:
            return
        self.host.dispatch(sess.uri, {"type": "session/customizationUpdated", "customization": entry})

    def _oversized(self, entry: dict, c: _Container, size: int) -> dict:
        """The entry of a container too large to publish: its identity and a load error."""
        c.internal = {}  # nothing of it runs either
        limit = self.limits.max_customization_entry_bytes
        kept = {
            k: entry[k]
            for k in ("type", "id", "uri", "name", "enabled", "contents", "writable", "clientId")
            if k in entry
        }
        message = (
            f"The {c.type} resolved to {size:,} characters of customization data, over the limit of "
            f"{limit:,}; it was not loaded (Limits.max_customization_entry_bytes)."
        )
        return {**kept, "load": {"kind": "error", "message": message}, "children": []}

    def _forget(self, sess: _Session, cid: str) -> None:
        c = sess.containers.pop(cid, None)
        if c is None:
            return
        self._hold(c, 0)
        if c.task is not None:
            c.task.cancel()
        for ident, hid in list(sess.client_plugins.items()):
            if hid == cid:
                del sess.client_plugins[ident]
        if self._current(sess.uri, cid) is not None and self.host.store.has_channel(sess.uri):
            self.host.dispatch(sess.uri, {"type": "session/customizationRemoved", "id": cid})

    # -- disk containers ------------------------------------------------------------------------

    def _resolve_files(self, c: _Container) -> tuple[Resolution, DiskSource]:
        """Resolve a disk container (files only: safe in a worker thread)."""
        src = DiskSource(c.path, self.limits.max_customization_file_bytes)
        try:
            if c.type == "plugin":
                res = resolve_plugin(src, c.path.name, self.limits)
            else:
                res = resolve_directory(src, c.contents or "skill", c.name or c.path.name, self.limits)
        except Exception as exc:  # defensive: report instead of crashing the watcher
            log.exception("resolving %s failed", c.uri)
            res = Resolution(
                c.name or "", error=f"The folder could not be resolved: {type(exc).__name__}: {exc}."
            )
        return res, src

    def resolve_disk(self, c: _Container) -> None:
        """Resolve a disk container now, on the calling thread."""
        c.resolution, c.source = self._resolve_files(c)
        self.stats["resolves"] += 1

    async def _resolve_in_thread(self, sess: _Session, c: _Container) -> None:
        res, src = await asyncio.to_thread(self._resolve_files, c)
        self.stats["resolves"] += 1
        c.resolution, c.source = res, src
        self._publish(sess, c)

    async def _load_and_watch(self, sess: _Session) -> None:
        try:
            for c in list(sess.containers.values()):
                if c.path is None or c.client_id is not None:
                    continue
                await self._resolve_in_thread(sess, c)
            interval = self.poll_interval
            while any(c.source is not None for c in sess.containers.values()):
                await asyncio.sleep(interval)
                watched = [c for c in sess.containers.values() if c.source is not None]
                started = time.perf_counter()
                changed = await asyncio.to_thread(_changed, watched)
                # a slow sweep (a huge folder) is repeated less often: at most ~10% of a core
                interval = max(self.poll_interval, 10 * (time.perf_counter() - started))
                for c in changed:
                    await self._resolve_in_thread(sess, c)
        except asyncio.CancelledError:
            raise
        except Exception:  # a watcher bug must not take the host down
            log.exception("the customization watcher of %s stopped", sess.uri)

    def _resolve_and_publish(self, sess: _Session, c: _Container) -> None:
        self.resolve_disk(c)
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
            src = await self._fetch_client_files(c)
        except SourceError as exc:
            c.resolution = Resolution(fallback, error=f"The client's plugin could not be read: {exc}.")
        else:
            self.stats["resolves"] += 1
            loop = asyncio.get_running_loop()
            spent, c.resolution = await loop.run_in_executor(
                _CLIENT_PLUGIN_WORK, _timed, resolve_plugin, src, fallback, self.limits
            )
            conn = self.host.connection_of(c.client_id)
            if conn is not None:  # the time its plugin took, charged as the loop's time is
                conn.charge_time(spent)
        self._publish(sess, c)

    async def _fetch_client_files(self, c: _Container) -> MemorySource:
        """Read a client's (virtual) plugin with host→client ``resourceList``/``resourceRead``.

        What is read counts as held for ``c`` as it comes (:meth:`_hold`), so that the plugins a
        client publishes at once share its room."""
        client_id, root_uri = c.client_id, c.uri
        from ..transport import RpcError

        conn = self.host.connection_of(client_id)
        if conn is None:
            raise SourceError(f"client {client_id} is not connected")
        self.stats["client_fetches"] += 1
        root = root_uri.rstrip("/")
        files: dict[str, bytes] = {}
        errors: dict[str, str] = {}
        notes: list[str] = []
        pending: list[tuple[str, int]] = [("", 0)]
        count = 0
        self._hold(c, 0)  # what an earlier read of it held is replaced (c.held: the bytes read)
        max_files = self.limits.max_folder_files

        async def call(method: str, uri: str) -> Any:
            return await conn.peer.request(
                method, {"channel": ROOT_CHANNEL, "uri": uri}, timeout=_CLIENT_TIMEOUT
            )

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
            entries = listing.get("entries") if isinstance(listing, dict) else None
            if not isinstance(entries, list):
                reason = "answered resourceList with something that is not a listing of entries"
                if not rel:
                    raise SourceError(f"the client {reason}")
                errors[rel] = reason
                continue
            for item in entries:
                count += 1  # every entry a listing holds, a name or not, counts toward the bound
                name = item.get("name") if isinstance(item, dict) else None
                if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
                    continue
                sub = f"{rel}/{name}" if rel else name
                # Past a bound the walk stops: one problem says so, and nothing more is listed or
                # read (one error per further entry, and every listing already queued, let a
                # stranger's plugin grow the host by 85 MB/s).
                if count > max_files:
                    notes.append(
                        f"The plugin has more than {max_files:,} entries (Limits.max_folder_files): "
                        f"the rest, from {sub[:200]!r}, was not looked at."
                    )
                    pending.clear()
                    break
                room, bound = self._room(c)
                if room <= 0:
                    notes.append(self._no_room(sub, bound))
                    pending.clear()
                    break
                if item.get("type") == "directory":
                    if depth + 1 < _CLIENT_MAX_DEPTH:
                        pending.append((sub, depth + 1))
                    continue
                try:
                    got = await call("resourceRead", f"{root}/{sub}")
                    data = got.get("data", "") if isinstance(got, dict) else None
                    if not isinstance(data, str):
                        errors[sub] = "the client answered resourceRead without text data"
                        continue
                    read = base64.b64decode(data) if got.get("encoding") == "base64" else data.encode("utf-8")
                except (RpcError, TimeoutError, ConnectionError, ValueError) as exc:
                    errors[sub] = _rpc_reason(exc)
                    continue
                # the room is taken as the file lands (no await between the look and the count):
                # plugins read at once each see what the others kept
                room, bound = self._room(c)
                if len(read) > room:
                    notes.append(self._no_room(sub, bound))
                    pending.clear()
                    break
                files[sub] = read
                self._hold(c, c.held + len(read))
        return MemorySource(root, files, errors, self.limits.max_customization_file_bytes, notes)


def _changed(containers: list[_Container]) -> list[_Container]:
    """The containers whose files changed (a stat sweep; runs in a worker thread)."""
    return [c for c in containers if c.source is not None and c.source.changed()]


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
