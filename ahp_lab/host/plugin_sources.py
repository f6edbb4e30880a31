"""Where a customization container's files come from: a local folder or a client's memory.

Both sources answer ``kind``, ``list``, ``read`` and ``uri`` for paths relative to the
container's root and raise :class:`SourceError` (one sentence, "it is ...") for what cannot be
used. :class:`DiskSource` refuses paths that a symlink leads outside the folder and remembers
every path it looked at, so a watcher can poll exactly those; :class:`MemorySource` holds a
client-published plugin fetched with ``resourceList``/``resourceRead``.
"""

from __future__ import annotations

import errno
import os
import stat as statmod
from pathlib import Path
from urllib.parse import quote

from ..protocol.limits import DEFAULT_LIMITS
from .resources import file_uri

__all__ = ["SourceError", "DiskSource", "MemorySource"]


class SourceError(Exception):
    """A file or folder that cannot be used; the message is one sentence ("it is ...")."""


def _too_big(size: int, limit: int) -> str:
    return f"it is {size:,} bytes, over the limit of {limit:,} for one customization file"


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

    def __init__(
        self, root: str | os.PathLike, max_file_bytes: int = DEFAULT_LIMITS.max_customization_file_bytes
    ) -> None:
        self.root = Path(os.path.abspath(os.path.expanduser(os.fspath(root))))
        self.max_file_bytes = max_file_bytes
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
        if size > self.max_file_bytes:
            raise SourceError(_too_big(size, self.max_file_bytes))
        try:
            with open(self.path(rel), "rb") as handle:
                data = handle.read(self.max_file_bytes + 1)
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

    def __init__(
        self,
        root_uri: str,
        files: dict[str, bytes],
        errors: dict[str, str] | None = None,
        max_file_bytes: int = DEFAULT_LIMITS.max_customization_file_bytes,
        notes: list[str] | None = None,
    ) -> None:
        self.root_uri = root_uri.rstrip("/")
        self.max_file_bytes = max_file_bytes
        self.files = files
        self.errors = dict(errors or {})
        self.notes = list(notes or ())  # sentences about the whole (a fetch cut short)
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
        if len(data) > self.max_file_bytes:
            raise SourceError(_too_big(len(data), self.max_file_bytes))
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise SourceError("it is not UTF-8 text") from None
