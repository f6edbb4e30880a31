"""``file://`` URIs of local paths, as AHP names files (one spelling for the host and the agents)."""

from __future__ import annotations

import os
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

__all__ = ["file_uri", "shown_url"]

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


def shown_url(url: str) -> str:
    """``url`` with the credentials it may carry (its user info, its query's values) as ``***``."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rpartition("@")[2]
    query = "&".join(f"{k}=***" for k, _ in parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
