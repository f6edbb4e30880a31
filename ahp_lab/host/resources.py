"""The ``resource*`` commands over ``file://`` URIs, with the host's permission policy.

Roots are per session and per connection: a connection may read under the plugin folders,
directory customizations and working directories of the sessions *it is subscribed to*, and
write (``resourceWrite``, ``resourceMkdir``, ``resourceDelete``, ``resourceCopy``'s destination,
``resourceMove``'s source and destination) only under their ``writable``
directory customizations. A path that resolves outside every allowed root — through ``..``
(encoded or not), an absolute path elsewhere or a symlink pointing out — or that holds a NUL is
refused with -32009 PermissionDenied and a one-sentence reason (``data.request`` names the grant
that would unlock it, as overview §2 describes).
"""

from __future__ import annotations

import base64
import contextlib
import importlib.machinery
import os
import site
import stat as statmod
import sys
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ..protocol.jsonrpc import ErrorCode
from ..protocol.limits import DEFAULT_LIMITS, Limits
from ..protocol.uris import file_uri
from ..transport import RpcError
from .file_work import (
    Transfer,
    atomic_write,
    content_type_of,
    decoded,
    etag_of,
    file_turn,
    in_turn,
    listing,
    off_the_loop,
    os_error,
    removed_tree,
    stat_of,
    transferred,
)

__all__ = ["ResourceService", "file_turn", "file_uri", "uri_path"]

_METHODS = (
    "resourceRead",
    "resourceWrite",
    "resourceList",
    "resourceMkdir",
    "resourceResolve",
    "resourceDelete",
    "resourceCopy",
    "resourceMove",
    "resourceRequest",
)


def uri_path(uri: Any) -> Path:
    """The local path a ``file://`` URI names; raises InvalidParams for anything else."""
    if not isinstance(uri, str) or not uri:
        raise RpcError(ErrorCode.INVALID_PARAMS, "params.uri is required and must be a file:// URI")
    parts = urlsplit(uri)
    if parts.scheme != "file":
        raise RpcError(
            ErrorCode.INVALID_PARAMS, f"{uri} is not a file:// URI; this host serves only local files"
        )
    if parts.netloc not in ("", "localhost"):
        raise RpcError(ErrorCode.INVALID_PARAMS, f"{uri} names another machine ({parts.netloc})")
    path = unquote(parts.path)
    if not path.startswith("/"):
        raise RpcError(ErrorCode.INVALID_PARAMS, f"{uri} does not hold an absolute path")
    if "\x00" in path:
        raise RpcError(ErrorCode.INVALID_PARAMS, f"{uri} contains a NUL character")
    return Path(path)


def _stranger(connection: Any) -> bool:
    """Whether ``connection`` is a client other than the notebook's own (``None``: the host's own
    file helpers for an agent, confined to its working directories)."""
    return connection is not None and not getattr(connection, "trusted", False)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _along(path: Path, known: dict[str, str]) -> list[str]:
    """Where ``path`` leads, and each entry on its way as itself (:func:`_entry`: a link on the way
    is the link, not where it leads). ``known`` keeps the folders resolved so far: roots share
    most of their way (400 roots took 110 ms, each resolving its own)."""
    absolute = os.path.abspath(path)
    out = [_real(Path(absolute))]
    parent = os.sep
    for name in Path(absolute).parts[1:]:
        real_parent = known.get(parent)
        if real_parent is None:
            real_parent = known[parent] = os.path.realpath(parent)
        out.append(os.path.join(real_parent, name))
        parent = os.path.join(parent, name)
    return out


#: What Python imports a module from: ``name.py``, ``name.pyc``, an extension module.
_IMPORTABLE = tuple(importlib.machinery.all_suffixes())
#: A folder of compiled modules, which Python takes in place of a source whose size and time it
#: records (a stranger could read both): written nowhere by a stranger.
_BYTECODE = "__pycache__"
#: Where tools the person runs in any folder take commands from: git's ``.git`` (its config's
#: ``core.fsmonitor``, ``core.pager``, hooks: the next ``git status`` there, the person's, an IDE's
#: or an agent's, runs them), and editors' ``.vscode`` and ``.idea`` (tasks, run configurations).
#: No stranger writes a path through one, wherever it is, in any letter case (a file system may
#: not tell ``.GIT`` from ``.git``).
_TOOL_CONFIGURATION = (".git", ".vscode", ".idea")
#: Nor a file named ``HEAD``, without which git takes no folder for a git directory: a stranger's
#: ``HEAD``, ``objects/``, ``refs/`` and ``config`` made one, whose ``core.fsmonitor`` ran at the
#: next ``git status`` in that folder.
_GIT_HEAD = "head"


def _import_folders() -> list[tuple[str, str]]:
    """The folders Python imports modules from by name, as ``(given, resolved)``: the entries of the
    kernel's ``sys.path`` (its working folder among them, as IPython and ``python -m`` put it
    there) and the working folder itself (where a server the host starts with no folder of its own
    runs: ``python -m name``). Those inside the kernel's environment are left out: no stranger
    writes there at all. Resolved each time, as a link on the way may change."""
    environment = [os.path.abspath(p) for p in (sys.prefix, sys.base_prefix, _USER_SITE)]
    given = dict.fromkeys(os.path.abspath(entry or ".") for entry in (*sys.path, "."))
    return [(g, _real(Path(g))) for g in given if not any(_inside(g, e) for e in environment)]


_USER_SITE = site.getusersitepackages()


def _importable(name: str) -> bool:
    return name.endswith(_IMPORTABLE)


def _module_refusal(path: str, folder: str) -> bool:
    """Whether a stranger writing ``path`` would make a module that Python finds by name in the
    import folder ``folder``: the folder itself (made where ``sys.path`` names one, or replaced);
    a module file at its top (``json.py``); or a module under a top folder that is neither a
    package of the person's nor a folder of their code (one holding modules or packages already,
    as a project's ``tests/`` or ``src/`` does): Python imports from such a namespace folder too,
    and a stranger's ``opentelemetry/trace.py`` ran at ``import acp``. An existing regular file is
    the person's own module, edited as any project file is."""
    if path == folder:
        return True
    if not _inside(path, folder):
        return False
    if not _importable(os.path.basename(path)) or (os.path.isfile(path) and not os.path.islink(path)):
        return False
    return _found_by_name(path, folder)


def _found_by_name(path: str, folder: str) -> bool:
    """Whether what is at ``path``, inside the import folder ``folder``, is found there by name: at
    its top, or under a top folder that is not the person's code (:func:`_persons_code`)."""
    parts = Path(os.path.relpath(path, folder)).parts
    return len(parts) == 1 or not _persons_code(os.path.join(folder, parts[0]))


def _is_package(folder: str) -> bool:
    """Whether ``folder`` is a regular package (it has an ``__init__`` module)."""
    try:
        return any(n.startswith("__init__.") and _importable(n) for n in os.listdir(folder))
    except OSError:
        return False


#: The most entries of a top folder read to tell whether it holds the person's code.
_CODE_ENTRIES_READ = 1000


def _persons_code(folder: str) -> bool:
    """Whether ``folder`` (a top folder of an import folder) is the person's code: a package, or a
    folder already holding a module or a package (a project's ``tests/``, ``scripts/``, ``src/``),
    where a new module is the project's own; a folder a stranger just made holds none."""
    try:
        with os.scandir(folder) as entries:
            for n, entry in enumerate(entries):
                if n >= _CODE_ENTRIES_READ:
                    return False
                if entry.is_file(follow_symlinks=False) and _importable(entry.name):
                    return True
                if entry.is_dir(follow_symlinks=False) and _is_package(entry.path):
                    return True
    except OSError:
        return False
    return False


#: The most entries of a folder a stranger copies or moves where the kernel imports from that are
#: read for modules; a larger one is refused.
_MOVED_ENTRIES_READ = 10_000


def _git_directory_holding(path: str) -> str | None:
    """The folder among ``path``'s parents that is a git directory (it holds a ``HEAD`` file): a
    bare repository under any name (``proj/remote.git``), whose ``config`` and ``hooks`` git runs
    commands from."""
    folder = os.path.dirname(path)
    while True:
        if os.path.isfile(os.path.join(folder, "HEAD")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _found_in(folder: str, match: Callable[[str, bool], bool]) -> str | bool | None:
    """The name of the first entry anywhere in ``folder`` for which ``match(name, is_file)``
    holds; ``False`` when none does, ``None`` when there are too many entries to tell."""
    seen = 0
    for _root, dirs, files in os.walk(folder):
        seen += len(dirs) + len(files)
        if seen > _MOVED_ENTRIES_READ:
            return None
        found = next((n for n in dirs if match(n, False)), None) or next(
            (n for n in files if match(n, True)), None
        )
        if found is not None:
            return found
    return False


def _holds_module(folder: str) -> str | bool | None:
    """A module file ``folder`` holds anywhere (its name), ``False``, or ``None``: too many entries."""
    return _found_in(folder, lambda name, is_file: is_file and _importable(name))


def _real(path: Path) -> str:
    """``realpath`` that also works when the tail does not exist yet (symlinks in the prefix count)."""
    return os.path.realpath(path)


def _entry(path: Path) -> str:
    """Where the entry ``path`` names is: its folder resolved, its own name kept (a link itself,
    not what it leads to)."""
    return os.path.join(_real(path.parent), path.name)


class ResourceService:
    """Serves ``resource*`` requests; a host extension (``methods`` + ``handle_request``).

    ``read_roots(connection)`` and ``write_roots(connection)`` give the folders one connection
    may read and write (those of the sessions it is subscribed to).
    """

    methods = frozenset(_METHODS)

    def __init__(
        self,
        read_roots: Callable[[Any], Iterable[str | os.PathLike]],
        write_roots: Callable[[Any], Iterable[str | os.PathLike]],
        limits: Limits = DEFAULT_LIMITS,
        executed: Callable[[], Iterable[str | os.PathLike]] = tuple,
        executed_names: Callable[[], Iterable[str]] = tuple,
    ) -> None:
        self._read_roots = read_roots
        self._write_roots = write_roots
        self.limits = limits
        self._executed = executed
        self._executed_names = executed_names

    # -- host extension hook --------------------------------------------------------------------

    def handle_request(self, connection: Any, method: str, params: dict) -> Awaitable[dict]:
        """Serve one ``resource*`` request of an initialized connection (its params validated), once
        the resource commands before it on this loop, every host's, are done."""
        return in_turn(getattr(self, "_" + method), connection, params)

    # -- permissions ----------------------------------------------------------------------------

    def check(self, connection: Any, uri: Any, *, write: bool = False) -> Path:
        """The path ``uri`` names if this host lets ``connection`` read (or write) it, else -32009."""
        path = uri_path(uri)
        what = "write" if write else "read"
        request = {"uri": uri, "write": True} if write else {"uri": uri, "read": True}
        if ".." in path.parts:
            raise RpcError(
                ErrorCode.PERMISSION_DENIED,
                f"{uri} is refused because it contains '..', which could step outside the allowed folders",
                {"request": request},
            )
        real = _real(path)
        writable = list(self._write_roots(connection))
        roots = writable if write else list(self._read_roots(connection)) + writable
        never = (os.sep, _real(Path.home()))
        for root in roots:
            root_abs = os.path.abspath(os.fspath(root))
            root_real = _real(Path(root_abs))
            if root_real in never:
                continue  # resolved when it is used: a root that now leads to / or home grants nothing
            if _inside(os.path.abspath(path), root_abs) or _inside(real, root_real):
                if not _inside(real, root_real):
                    raise RpcError(
                        ErrorCode.PERMISSION_DENIED,
                        f"{uri} is refused because it resolves to {real}, outside {root_abs} (a symlink points out)",
                        {"request": request},
                    )
                executed = self._executed_by_host(path, real) if write and _stranger(connection) else None
                if executed is not None:
                    raise RpcError(
                        ErrorCode.PERMISSION_DENIED,
                        f"{uri} is refused because {executed}, so only the notebook may write there",
                        {"request": request},
                    )
                return path
        kind = (
            "writable directory customization" if write else "plugin folder, directory or working directory"
        )
        raise RpcError(
            ErrorCode.PERMISSION_DENIED,
            f"{uri} is refused because it is not inside any {kind} of a session this connection "
            f"is subscribed to, so this host may not {what} it",
            {"request": request},
        )

    def open_checked(self, connection: Any, uri: Any) -> tuple[Any, os.stat_result]:
        """The regular file ``uri`` names, opened for reading if this host lets ``connection`` read
        it, and its ``fstat``. The file opened is checked again (a symlink swapped between the
        check and the open read a file outside the roots), and a FIFO or a device is refused, never
        waited on (opened without blocking: a FIFO swapped in held the host's loop)."""
        path = self.check(connection, uri)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        except OSError as exc:
            raise os_error(exc, uri) from None
        try:
            st = os.fstat(fd)
            if not statmod.S_ISREG(st.st_mode):
                raise RpcError(ErrorCode.INVALID_PARAMS, f"{uri} is not a regular file")
            self._check_opened(connection, fd, uri)
            return os.fdopen(fd, "rb"), st
        except BaseException:
            os.close(fd)
            raise

    def _check_opened(
        self, connection: Any, fd: int, uri: Any, name: str | None = None, write: bool = False
    ) -> None:
        """The file (or, with ``name``, that entry of the folder) open as ``fd`` is one ``connection``
        may use: where it really is, as the kernel opened it (Linux's /proc/self/fd; elsewhere the
        check before the open stands)."""
        try:
            opened = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return
        try:
            self.check(connection, file_uri(os.path.join(opened, name) if name else opened), write=write)
        except RpcError:
            raise RpcError(
                ErrorCode.PERMISSION_DENIED,
                f"{uri} is refused because it changed while it was opened: it led to {opened}",
                {"request": {"uri": uri, "write": True} if write else {"uri": uri, "read": True}},
            ) from None

    # -- commands -------------------------------------------------------------------------------

    def _resourceRequest(self, connection: Any, params: dict) -> dict:
        self.check(connection, params.get("uri"), write=bool(params.get("write")))
        return {}

    def _resourceRead(self, connection: Any, params: dict) -> dict:
        uri = params.get("uri")
        handle, st = self.open_checked(connection, uri)
        limit = self.limits.max_read_bytes
        with handle:
            if st.st_size > limit:
                raise RpcError(
                    ErrorCode.INVALID_PARAMS,
                    f"{uri} is {st.st_size:,} bytes, over the read limit of {limit:,} bytes",
                )
            try:
                data = handle.read(limit + 1)  # a file growing meanwhile is read no further
            except OSError as exc:
                raise os_error(exc, uri) from None
        if len(data) > limit:
            raise RpcError(ErrorCode.INVALID_PARAMS, f"{uri} grew past the read limit of {limit:,} bytes")
        wanted = params.get("encoding") or "utf-8"
        result: dict[str, Any] = {}
        if wanted == "utf-8":
            try:
                result = {"data": data.decode("utf-8"), "encoding": "utf-8"}
            except UnicodeDecodeError:
                wanted = "base64"
        if wanted == "base64":
            result = {"data": base64.b64encode(data).decode("ascii"), "encoding": "base64"}
        elif not result:
            raise RpcError(ErrorCode.INVALID_PARAMS, f"unknown encoding {wanted!r}; use 'utf-8' or 'base64'")
        content_type = content_type_of(uri_path(uri))
        if content_type:
            result["contentType"] = content_type
        return result

    def _resourceWrite(self, connection: Any, params: dict) -> dict:
        uri = params.get("uri")
        # the request's own fields first (-32602), then whether it may write there (-32009)
        mode = params.get("mode") or "truncate"
        if mode not in ("truncate", "append", "insert"):
            raise RpcError(ErrorCode.INVALID_PARAMS, f"unknown mode {mode!r}; use truncate, append or insert")
        position = params.get("position") or 0
        if not isinstance(position, int) or isinstance(position, bool) or position < 0:
            raise RpcError(ErrorCode.INVALID_PARAMS, "params.position must be a non-negative integer")
        data = decoded(params)
        path = self.check(connection, uri, write=True)
        if not path.parent.is_dir():
            raise RpcError(
                ErrorCode.NOT_FOUND,
                f"the folder {file_uri(path.parent)} does not exist; create it with resourceMkdir first",
            )
        exists = os.path.lexists(path)
        if exists and params.get("createOnly"):
            raise RpcError(ErrorCode.ALREADY_EXISTS, f"{uri} already exists and createOnly is set")
        if exists and not path.is_file():
            raise RpcError(ErrorCode.ALREADY_EXISTS, f"{uri} exists and is not a regular file")
        if_match = params.get("ifMatch")
        if if_match is not None:
            current = etag_of(os.stat(path)) if exists else None
            if current != if_match:
                raise RpcError(
                    ErrorCode.CONFLICT,
                    f"{uri} changed since it was read (etag {current or 'none'}, expected {if_match})",
                )
        # The size the write makes is known from the file's: a file far past the limit is refused
        # before it is read (an append to a 1 GB log read it whole, on the host's loop).
        # (A truncate reads only what it keeps, the first ``position`` bytes.)
        try:
            size = os.stat(path).st_size if exists else 0
            grown = (min(position, size) if mode == "truncate" else size) + len(data)
            if grown > self.limits.max_write_bytes:
                raise RpcError(
                    ErrorCode.INVALID_PARAMS,
                    f"{uri} would grow past the write limit of {self.limits.max_write_bytes:,} bytes",
                )
            existing = b""
            if exists:
                handle, _st = self.open_checked(connection, uri)  # what it keeps is read where it is
                with handle:
                    existing = handle.read(min(position, size)) if mode == "truncate" else handle.read(size)
        except OSError as exc:
            raise os_error(exc, uri) from None
        if mode == "truncate":
            new = existing[:position] + data
        elif mode == "append":
            cut = max(0, len(existing) - position)
            new = existing[:cut] + data + existing[cut:]
        else:
            cut = min(position, len(existing))
            new = existing[:cut] + data + existing[cut:]
        if len(new) > self.limits.max_write_bytes:
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                f"{uri} would grow past the write limit of {self.limits.max_write_bytes:,} bytes",
            )
        atomic_write(path, new, uri, lambda fd: self._check_opened(connection, fd, uri, path.name, True))
        return {}

    def _resourceList(self, connection: Any, params: dict) -> Awaitable[dict]:
        uri = params.get("uri")
        path = self.check(connection, uri)
        st = stat_of(path, uri)
        if not statmod.S_ISDIR(st.st_mode):
            raise RpcError(ErrorCode.INVALID_PARAMS, f"{uri} is not a folder")
        # A folder of 100,000 entries takes most of a second to list: in a worker thread, the
        # host goes on serving every other connection meanwhile.
        return off_the_loop(listing, path, uri)

    def _resourceMkdir(self, connection: Any, params: dict) -> dict:
        uri = params.get("uri")
        path = self.check(connection, uri, write=True)
        missing = []  # the folders to make, deepest first (a loop: Path.mkdir recurses on each)
        at = path
        while not os.path.lexists(at) and at != at.parent:
            missing.append(at)
            at = at.parent
        try:
            for folder in reversed(missing):
                with contextlib.suppress(FileExistsError):  # made meanwhile: as exist_ok
                    os.mkdir(folder)
            if not path.is_dir():
                raise RpcError(ErrorCode.ALREADY_EXISTS, f"{uri} exists and is not a folder")
        except OSError as exc:
            raise os_error(exc, uri) from None
        return {}

    def _resourceDelete(self, connection: Any, params: dict) -> dict | Awaitable[dict]:
        uri = params.get("uri")
        path = self.check(connection, uri, write=True)
        if not os.path.lexists(path):
            raise RpcError(ErrorCode.NOT_FOUND, f"{uri} does not exist")
        self._keeps_roots(connection, uri, _entry(path))
        if path.is_dir() and not path.is_symlink() and params.get("recursive"):
            return off_the_loop(removed_tree, path, _real(path), uri)  # a large tree
        try:
            if path.is_dir() and not path.is_symlink():
                path.rmdir()
            else:
                path.unlink()
        except OSError as exc:
            raise os_error(exc, uri) from None
        return {}

    def _resourceCopy(self, connection: Any, params: dict) -> Awaitable[dict]:
        return off_the_loop(transferred, self._transfer(connection, params, move=False))

    def _resourceMove(self, connection: Any, params: dict) -> Awaitable[dict]:
        return off_the_loop(transferred, self._transfer(connection, params, move=True))

    def _transfer(self, connection: Any, params: dict, *, move: bool) -> Transfer:
        """``resourceCopy``/``resourceMove`` checked: the source readable (writable for a move, which
        removes it), the destination writable and its folder there, no root moved nor replaced (nor
        one inside what is: a root nested in another), nothing put inside itself, a move within one
        file system, and no existing destination when ``failIfExists``."""
        source_uri, destination_uri = params.get("source"), params.get("destination")
        source = self.check(connection, source_uri, write=move)
        destination = self.check(connection, destination_uri, write=True)
        if not os.path.lexists(source):
            raise RpcError(ErrorCode.NOT_FOUND, f"{source_uri} does not exist")
        if not destination.parent.is_dir():
            raise RpcError(
                ErrorCode.NOT_FOUND,
                f"the folder {file_uri(destination.parent)} does not exist; create it with resourceMkdir first",
            )
        source_real, parent_real = _real(source.parent), _real(destination.parent)
        at_source, at_destination = _entry(source), _entry(destination)
        if move:
            self._keeps_roots(connection, source_uri, at_source)
        self._keeps_roots(connection, destination_uri, at_destination)
        if _inside(at_destination, _real(source)):
            raise RpcError(ErrorCode.INVALID_PARAMS, f"{destination_uri} is inside {source_uri}")
        if move and os.lstat(at_source).st_dev != os.stat(parent_real).st_dev:
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                f"{source_uri} and {destination_uri} are on two file systems: copy it, then delete it",
            )
        self._package_moved_in(connection, source, destination, destination_uri)
        if not move:  # (a move takes what is there along: nothing new to rewrite under a new name)
            self._code_copied(connection, source, destination_uri)
        if params.get("failIfExists") and os.path.lexists(at_destination):
            raise RpcError(
                ErrorCode.ALREADY_EXISTS, f"{destination_uri} already exists and failIfExists is set"
            )
        return Transfer(
            at_source, source_real, source.parent, at_destination, parent_real, destination.parent, move,
            bool(params.get("failIfExists")), self.limits.max_write_bytes, str(destination_uri),
        )  # fmt: skip

    def _keeps_roots(self, connection: Any, uri: Any, entry: str) -> None:
        """Refuse (-32009) to delete, move or replace ``entry`` (an :func:`_entry`) when it is or holds
        a folder the host serves to ``connection``: a root, or one nested inside another, stays where
        it is; so does, for a stranger, a folder the host runs code from (replaced, it would run
        the stranger's)."""
        kept = [*self._read_roots(connection), *self._write_roots(connection)]
        if _stranger(connection):
            kept += [*self._executed(), *(f for f, _ in _import_folders())]
        known: dict[str, str] = {}
        for root in kept:
            # where it leads, and every entry on its way, each as itself: a link on the way (a
            # project's "current" link to a release) replaced or deleted changes where it leads
            if any(_inside(on_the_way, entry) for on_the_way in _along(Path(os.fspath(root)), known)):
                raise RpcError(
                    ErrorCode.PERMISSION_DENIED,
                    f"{uri} is or holds a folder the host serves or runs code from, which stays where it is",
                )

    def _executed_by_host(self, path: Path, real: str) -> str | None:
        """Why the host would run what is written at ``path`` (resolved: ``real``), naming the
        first place it runs code from that the path is in or goes through by name (an agent's
        ``.claude``, a ``__pycache__``, a ``.git``), or the folder it is a module of by name (``json.py`` where
        the kernel imports from: :func:`_import_folders`); ``None`` when it would not."""
        names = self._kept_names()
        given_path = os.path.abspath(path)
        named = next((p for p in (*Path(given_path).parts, *Path(real).parts) if p.lower() in names), None)
        if named is None and _GIT_HEAD in (
            os.path.basename(given_path).lower(),
            os.path.basename(real).lower(),
        ):
            return "a file named HEAD makes its folder a git directory, whose config git runs commands from"
        git = (
            None if named is not None else _git_directory_holding(given_path) or _git_directory_holding(real)
        )
        if git is not None:
            return (
                f"{git} is a git directory (it holds a HEAD), whose config and hooks git runs commands from"
            )
        for folder in () if named is not None else self._executed():
            given = os.path.abspath(os.fspath(folder))
            if _inside(real, _real(Path(given))) or _inside(given_path, given):
                named = given
                break
        if named is not None:
            return (
                f"the host runs what {named} holds (a plugin, an MCP server, an agent's tools or "
                "command, compiled modules, git's or an editor's commands)"
            )
        for folder, resolved in _import_folders():
            if _module_refusal(given_path, folder) or _module_refusal(real, resolved):
                return f"the kernel imports modules from {folder} by name, and this would be one"
        return None

    def _code_copied(self, connection: Any, source: Path, uri: Any) -> None:
        """Refuse (-32009) a stranger's copy of a folder holding what no stranger writes by name (a
        ``.git``, a ``HEAD`` file, an agent's ``.claude``, …): the copy writes it under the new name
        all the same, where the stranger may then rewrite it (a copy of ``proj/.git`` as ``proj/evil``, then its ``config``
        rewritten, made a git directory whose ``core.fsmonitor`` ran at ``git status``)."""
        if not _stranger(connection) or not os.path.isdir(source):
            return
        names = self._kept_names()
        found = _found_in(
            os.path.realpath(source),
            lambda name, is_file: name.lower() in names or (is_file and name.lower() == _GIT_HEAD),
        )
        if found is not False:
            raise RpcError(
                ErrorCode.PERMISSION_DENIED,
                f"{uri} is refused because the folder "
                + (
                    f"holds {found!r}, which the host keeps from other clients wherever it is"
                    if found
                    else f"has more than {_MOVED_ENTRIES_READ:,} entries to look through"
                ),
            )

    def _kept_names(self) -> set[str]:
        """The names (lower case) no stranger writes a path through, wherever they are."""
        return {name.lower() for name in (*self._executed_names(), _BYTECODE, *_TOOL_CONFIGURATION)}

    def _package_moved_in(self, connection: Any, source: Path, destination: Path, uri: Any) -> None:
        """Refuse (-32009) a stranger's copy or move of a folder holding a module file (or of a link
        to one: a copy keeps the link, through which the modules are then written) to where modules
        are imported by name: the top of an import folder, or under a top folder there that is not
        the person's code (:func:`_persons_code`)."""
        if not _stranger(connection) or not os.path.isdir(source):  # a link to a folder too
            return
        given, resolved = os.path.abspath(destination), _real(destination)
        if not any(
            _inside(place, base) and place != base and _found_by_name(place, base)
            for folder, real in _import_folders()
            for place, base in ((given, folder), (resolved, real))
        ):
            return
        holds = _holds_module(os.path.realpath(source))
        if holds is not False:
            raise RpcError(
                ErrorCode.PERMISSION_DENIED,
                f"{uri} is refused because modules are imported by name where it would go, "
                + (
                    "and the folder holds modules Python would import"
                    if holds
                    else f"and the folder has more than {_MOVED_ENTRIES_READ:,} entries to look through"
                ),
            )

    def _resourceResolve(self, connection: Any, params: dict) -> dict:
        uri = params.get("uri")
        follow = params.get("followSymlinks", True) is not False
        try:
            path = self.check(connection, uri)
        except RpcError as refused:
            # the entry itself, a link not followed, is read where it is: a link in a root that
            # points out resolves to "symlink" (its target is neither read nor named)
            entry = uri_path(uri)
            if follow or not entry.name or entry.name == "..":  # "x/..": the folder above, not an entry
                raise
            try:
                path = self.check(connection, file_uri(entry.parent)) / entry.name
            except RpcError:
                raise refused from None
        try:
            st = os.stat(path) if follow else os.lstat(path)
        except OSError as exc:
            raise os_error(exc, uri) from None
        if statmod.S_ISLNK(st.st_mode):
            kind = "symlink"
        elif statmod.S_ISDIR(st.st_mode):
            kind = "directory"
        else:
            kind = "file"
        out: dict[str, Any] = {
            "uri": file_uri(_real(path)) if follow else uri,
            "type": kind,
            "mtime": st.st_mtime_ns // 1_000_000,
            "ctime": st.st_ctime_ns // 1_000_000,
        }
        if kind == "file":
            out["size"] = st.st_size
            out["etag"] = etag_of(st)
            content_type = content_type_of(path)
            if content_type:
                out["contentType"] = content_type
        return out
