"""``file://`` URIs of local paths, as AHP names files (one spelling for the host and the agents)."""

from __future__ import annotations

import os
from urllib.parse import quote

__all__ = ["file_uri"]

_SAFE = "/:@!$&'()*+,;=-._~"  # what a path keeps as it is in a URI


def file_uri(path: str | os.PathLike) -> str:
    """The ``file://`` URI of an absolute path (percent-encoded). A name that is not UTF-8 (Python
    reads its bytes as lone surrogates, ``\udcff``) keeps those bytes (``%FF``); another lone
    surrogate becomes U+FFFD."""
    p = os.path.abspath(os.fspath(path))
    try:
        return "file://" + quote(p, safe=_SAFE, errors="surrogateescape")
    except UnicodeEncodeError:
        return "file://" + quote(p, safe=_SAFE, errors="replace")
