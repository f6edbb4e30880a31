"""Where clients may point a session's working directories (``Lab(roots=[...])``).

A session's working directories become read roots for the connections subscribed to that session
(:mod:`ahp_lab.host.resources`), so a client must not be able to name just any folder. A
directory a client supplies (``createSession.workingDirectories``, ``createChat``,
``session/workingDirectorySet``) must be a ``file://`` URI of a folder inside one of the roots the
kernel's user configured (default: the kernel's working directory when the host starts). It is
refused when it is ``/``, the user's home directory, or anything above or beside the roots;
``..`` (encoded or not), NUL characters and symlinks pointing out are refused too. The notebook's
own trusted client is the person at the kernel and is not restricted.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from ..transport import RpcError
from .resources import _inside, uri_path

__all__ = ["WorkingDirectories"]


def _real(path: str | os.PathLike) -> str:
    return os.path.realpath(os.path.abspath(os.path.expanduser(os.fspath(path))))


#: The kernel's pseudo file systems: never a working directory (``/proc/<pid>/cwd`` resolves to
#: wherever that process is at the moment it is read).
_PSEUDO = ("/proc", "/sys", "/dev")
#: Folders at the top of a home where apps keep their data, not hidden: macOS's ``Library``
#: (keychains, browser profiles and cookies), Windows' ``AppData``, Linux snaps' ``snap`` (each
#: app's own dotfiles). A host started in ``~`` has the home among its roots. Compared in any
#: letter case: macOS's and Windows' file systems do not tell ``library`` from ``Library``.
_APP_DATA = ("library", "appdata", "snap")


class WorkingDirectories:
    """The folders under which clients may name working directories, and the check itself."""

    def __init__(self, roots: list | tuple | None = None) -> None:
        chosen = list(roots) if roots is not None else [os.getcwd()]
        self.roots: list[str] = [_real(r) for r in chosen]

    def refusal(self, uri: Any, trusted: bool = False) -> str | None:
        """Why a client may not use ``uri`` as a working directory (``None`` when it may)."""
        if trusted:
            return None
        try:
            path = uri_path(uri)
        except RpcError as exc:
            return exc.message
        parts = urlsplit(uri)
        if parts.query or parts.fragment or uri.endswith(("?", "#")):
            # a folder has one URI: a query would make the same folder a new entry each time
            return f"{uri:.200} carries a query or a fragment; a working directory is a plain file:// URI"
        if ".." in path.parts:
            return f"{uri} contains '..', which could step outside the allowed folders"
        real = _real(path)
        for system in _PSEUDO:
            if _inside(os.path.abspath(path), system) or _inside(real, system):
                return (
                    f"{uri} is in {system}, whose entries are the system's, and whose links (such as a "
                    "process's cwd) move after the check"
                )
        home = _real("~")
        if real == os.sep:
            return f"{uri} is the root of the file system, which is never a working directory"
        if real == home:
            return f"{uri} is the user's home directory, which is never a working directory"
        top = os.path.relpath(real, home).split(os.sep, 1)[0] if _inside(real, home) else None
        if top is not None and (top.startswith(".") or (top.casefold() in _APP_DATA and home != os.sep)):
            # keys and settings (~/.ssh, ~/.aws, ~/Library), even when the home is among the roots
            return (
                f"{uri} is in a hidden or app data folder of the user's home (such as ~/.ssh or "
                "~/Library), which holds keys and settings and is never a working directory"
            )
        if _inside(home, real):
            return f"{uri} holds the user's home directory, which is never in a working directory"
        if not any(_inside(real, root) for root in self.roots):
            shown = ", ".join(self.roots) or "none"
            return (
                f"{uri} is outside the folders this host allows for working directories ({shown}); "
                "the person at the kernel can widen them with Lab(roots=[...])"
            )
        if not os.path.isdir(real):
            return f"{uri} is not a folder"
        return None

    def checker(self, trusted: bool) -> Callable[[Any], str | None]:
        """``refusal`` bound to one connection's trust."""
        return lambda uri: self.refusal(uri, trusted)
