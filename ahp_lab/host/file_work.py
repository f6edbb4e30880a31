"""The resource commands' file work: checked on the loop, done in a worker thread, in the loop's turn.

:mod:`ahp_lab.host.resources` decides what a connection may touch; this module carries the work
out and turns what the file system says into the protocol's errors: reading a listing, removing
a tree without following links, copying and moving with bounds, writing a file atomically in the
folder as it was opened, and the turn (:func:`file_turn`) that keeps a command's checks and its
work together.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import inspect
import mimetypes
import os
import re
import secrets
import stat as statmod
import tempfile
import time
import weakref
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..protocol.jsonrpc import ErrorCode
from ..transport import RpcError


def etag_of(st: os.stat_result) -> str:
    return f'"{st.st_ino:x}-{st.st_mtime_ns:x}-{st.st_size:x}"'


def content_type_of(path: Path) -> str | None:
    if path.suffix in (".md", ".mdc"):
        return "text/markdown"
    return mimetypes.guess_type(path.name)[0]


#: The resource commands' file work that may take long runs here, apart from the default executor
#: that sync tools, customization resolution and the SDKs share.
_FILE_WORK = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ahp-resources")
#: Each loop's turn for resource commands. A command checks its paths, then acts on them, and no
#: other command's file work may run in between: a move can put a link where a folder was (a folder
#: holding a link, moved over it), and one running in its thread beside a write, a read, a listing,
#: a deletion or a copy checked inside a root made it act outside (files written, read and deleted
#: outside every root; 9,000 files written outside by a copy).
_TURNS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()


def file_turn() -> asyncio.Lock:
    """The running loop's turn for file work that checks paths, then acts on them: resource
    commands take it for their checks and file work, an agent's file requests for theirs (an
    agent's write checked while a stranger's move ran in its thread could land outside). A queue,
    in order: a burst waits behind itself, not the host's loop."""
    loop = asyncio.get_running_loop()
    turn = _TURNS.get(loop)
    if turn is None:
        turn = _TURNS[loop] = asyncio.Lock()
    return turn


async def in_turn(command: Callable[[Any, dict], Any], connection: Any, params: dict) -> dict:
    """``command(connection, params)``, checks and file work, in this loop's :func:`file_turn`; the
    time it holds the turn (its checks on the loop, its file work in a worker thread, which
    takes the interpreter from the loop too) is charged to the connection: a stranger's pipelined
    1 MB writes held the loop 73% of the time and were charged nothing (attacker round 26)."""
    async with file_turn():
        started = time.perf_counter()
        try:
            out = command(connection, params)
            return await out if inspect.isawaitable(out) else out
        finally:
            charge = getattr(connection, "charge_time", None)
            if charge is not None:
                charge(time.perf_counter() - started)


def off_the_loop(work: Callable[..., dict], *args: Any) -> Awaitable[dict]:
    return asyncio.get_running_loop().run_in_executor(_FILE_WORK, work, *args)


def removed_tree(path: Path, real: str, uri: str) -> dict:
    """``resourceDelete``'s recursive removal of folder ``path`` (in a worker thread); ``real`` is
    where it led when its permission was checked: a path that now leads elsewhere (a folder on
    the way swapped for a link meanwhile) is refused, not followed.

    The tree is walked with a list, not by recursion (``shutil.rmtree`` recursed once a level, and
    a tree some 1,200 levels deep failed with an internal error); links are removed, never
    followed."""
    try:
        if os.path.realpath(path) != real:
            raise RpcError(
                ErrorCode.PERMISSION_DENIED, f"{uri} changed while it was being deleted; nothing was"
            )
        folders = [(real, False)]
        while folders:
            folder, emptied = folders.pop()
            if emptied:
                os.rmdir(folder)
                continue
            folders.append((folder, True))
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append((entry.path, False))
                    else:
                        os.unlink(entry.path)
    except OSError as exc:
        raise os_error(exc, uri) from None
    return {}


#: The most entries ``resourceCopy`` copies from one folder tree.
MAX_COPIED_ENTRIES = 10_000
#: The deepest folder tree ``resourceCopy`` copies (Python's copy recurses: a tree of 1,500 levels
#: failed with an internal error).
MAX_COPIED_DEPTH = 256


@dataclass(frozen=True)
class Transfer:
    """A checked ``resourceCopy``/``resourceMove``, carried out by :func:`transferred`."""

    source: str  # the source's real folder joined with its name
    source_folder: str  # that real folder, as it was when checked
    source_parent: Path  # the folder as the request named it
    destination: str
    destination_folder: str
    destination_parent: Path
    move: bool
    fail_if_exists: bool
    most_bytes: int
    uri: str


def transferred(t: Transfer) -> dict:
    """Carry out ``t`` in a worker thread, and lose nothing when it fails: a copy is built beside the
    destination, then put in its place; what it replaces is moved aside first, and put back if the
    new one cannot take its place; it is deleted last. The folders are checked again first: a
    folder on the way swapped for a link since the check is refused, not followed."""
    import shutil

    if (
        os.path.realpath(t.source_parent) != t.source_folder
        or os.path.realpath(t.destination_parent) != t.destination_folder
    ):
        raise RpcError(
            ErrorCode.PERMISSION_DENIED, f"a folder on the way to {t.uri} changed meanwhile; nothing was done"
        )
    if t.fail_if_exists and os.path.lexists(t.destination):
        raise RpcError(ErrorCode.ALREADY_EXISTS, f"{t.uri} already exists and failIfExists is set")
    work = tempfile.mkdtemp(prefix=".ahp-transfer-", dir=t.destination_folder)
    try:
        new = os.path.join(work, "new")
        if t.move:
            new = t.source
        else:
            _copy_bounded(t.source, new, t.most_bytes, t.uri)
        replaced = os.path.lexists(t.destination)
        if replaced:
            os.rename(t.destination, os.path.join(work, "old"))
        try:
            os.rename(new, t.destination)
        except OSError:
            if replaced:  # put back what was there
                os.rename(os.path.join(work, "old"), t.destination)
            raise
    except shutil.Error as exc:
        raise RpcError(
            ErrorCode.INVALID_PARAMS,
            f"{t.uri}: {len(exc.args[0]) if exc.args and isinstance(exc.args[0], list) else 'some'} entries "
            "could not be copied (a pipe, a socket or an unreadable file); nothing was",
        ) from None
    except OSError as exc:
        raise os_error(exc, t.uri) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {}


def _copy_bounded(source: str, target: str, most_bytes: int, uri: str) -> None:
    """Copy ``source`` to ``target`` (which does not exist), at most ``most_bytes`` and
    :data:`MAX_COPIED_ENTRIES` entries in all, as a write is bounded. Links are copied as links,
    never followed: a link pointing out of the roots stays a link the roots' checks refuse."""
    import shutil

    if os.path.isdir(source) and not os.path.islink(source):
        size = count = 0
        top = source.count(os.sep)
        for folder, folders, files in os.walk(source):
            if folders and folder.count(os.sep) - top >= MAX_COPIED_DEPTH:
                raise RpcError(
                    ErrorCode.INVALID_PARAMS,
                    f"copying to {uri} is refused: its folders nest deeper than {MAX_COPIED_DEPTH} levels",
                )
            count += len(folders) + len(files)
            size += sum(os.lstat(os.path.join(folder, name)).st_size for name in files)
            if count > MAX_COPIED_ENTRIES or size > most_bytes:
                raise RpcError(
                    ErrorCode.INVALID_PARAMS,
                    f"copying to {uri} is refused: more than {MAX_COPIED_ENTRIES:,} entries or "
                    f"{most_bytes:,} bytes (the write limit)",
                )
        shutil.copytree(source, target, symlinks=True)
    else:
        if os.lstat(source).st_size > most_bytes:
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                f"copying to {uri} is refused: over the write limit of {most_bytes:,} bytes",
            )
        shutil.copy2(source, target, follow_symlinks=False)


#: The lone surrogates ``os.listdir`` makes of bytes that are not UTF-8.
_UNDECODED = re.compile("[\udc80-\udcff]")


def listing(path: Path, uri: str) -> dict:
    """``resourceList``'s answer for folder ``path``: its entries by name, each a file or a folder."""
    entries = []
    try:
        names = sorted(os.listdir(path))
    except OSError as exc:
        raise os_error(exc, uri) from None
    for name in names:
        if not name.isascii() and _UNDECODED.search(name):
            continue  # a name that is not UTF-8 cannot be sent, nor named back: not listed
        try:
            mode = os.stat(path / name).st_mode
        except OSError:
            continue  # dangling symlinks and loops are not listed
        entries.append({"name": name, "type": "directory" if statmod.S_ISDIR(mode) else "file"})
    return {"entries": entries}


def stat_of(path: Path, uri: Any) -> os.stat_result:
    try:
        return os.stat(path)
    except OSError as exc:
        raise os_error(exc, uri) from None


def os_error(exc: OSError, uri: Any) -> RpcError:
    import errno

    uri = str(uri)
    if len(uri) > 200:  # a reason is one sentence: a long name is cut in it
        uri = uri[:200] + "…"
    if exc.errno == errno.ENAMETOOLONG:
        return RpcError(ErrorCode.INVALID_PARAMS, f"{uri}: the name is too long for the file system")
    if exc.errno == errno.ENOENT:
        return RpcError(ErrorCode.NOT_FOUND, f"{uri} does not exist")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return RpcError(
            ErrorCode.PERMISSION_DENIED, f"{uri} cannot be accessed: the operating system denied it"
        )
    if exc.errno == errno.ELOOP:
        return RpcError(ErrorCode.INVALID_PARAMS, f"{uri} is a symlink loop")
    if exc.errno == errno.ENOTEMPTY:
        return RpcError(
            ErrorCode.INVALID_PARAMS, f"{uri} is a folder that is not empty; pass recursive: true"
        )
    return RpcError(ErrorCode.INTERNAL_ERROR, f"{uri}: {exc.strerror or exc}")


def decoded(params: dict) -> bytes:
    data = params.get("data")
    if not isinstance(data, str):
        raise RpcError(ErrorCode.INVALID_PARAMS, "params.data is required and must be a string")
    encoding = params.get("encoding") or "utf-8"
    if encoding == "utf-8":
        return data.encode("utf-8")
    if encoding == "base64":
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise RpcError(ErrorCode.INVALID_PARAMS, "params.data is not valid base64") from None
    raise RpcError(ErrorCode.INVALID_PARAMS, f"unknown encoding {encoding!r}; use 'utf-8' or 'base64'")


def atomic_write(path: Path, data: bytes, uri: Any, check_folder: Callable[[int], None]) -> None:
    """Write through a temporary file and rename it into place, so a watcher never sees half a file.

    Everything happens in the folder as opened (``check_folder`` is given its descriptor and raises
    when it is not one the writer may write in): a folder swapped for a symlink after the path was
    checked made the host write outside the roots. The rename replaces the entry itself, a symlink
    swapped in for the file too, and never follows it."""
    try:
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise os_error(exc, uri) from None
    try:
        check_folder(folder)
        try:
            old = os.stat(path.name, dir_fd=folder, follow_symlinks=False)
            mode = old.st_mode & 0o7777 if statmod.S_ISREG(old.st_mode) else None
        except FileNotFoundError:
            mode = None
        tmp = f".{path.name}.{secrets.token_hex(6)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                os.fchmod(handle.fileno(), mode if mode is not None else 0o666 & ~_umask())
            os.replace(tmp, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=folder)
            raise
    except OSError as exc:
        raise os_error(exc, uri) from None
    finally:
        os.close(folder)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
