"""Reading an AHP host's answers as a client: snapshots, sequence numbers and the negotiated
version, checked before they are applied (a host is a stranger too), and the envelopes of a
channel that arrive before its snapshot is applied (held, bounded, then applied on top of it).
"""

from __future__ import annotations

from typing import Any

from ..protocol import PROTOCOL_VERSION, SUPPORTED_VERSIONS
from ..protocol.jsonrpc import ErrorCode
from ..protocol.limits import valid_seq
from ..transport import RpcError

__all__ = ["MAX_EARLY_BYTES", "channel_kind_of_uri"]

ROOT = "ahp-root://"

#: What the client keeps of envelopes while their channels' snapshots are on the way (applied on
#: top of them), in bytes as ``store.tree_bytes`` estimates them, all channels together: a host that
#: sends more fails that subscribe, initialize or resume.
MAX_EARLY_BYTES = 64 << 20


class _Early:
    """The envelopes of one channel that arrived before its snapshot was applied; ``pool`` (shared
    by a client's channels) counts their bytes against ``MAX_EARLY_BYTES``."""

    __slots__ = ("envelopes", "size", "overflowed", "pool")

    def __init__(self, pool: list[int]) -> None:
        self.envelopes: list[dict] = []
        self.size = 0
        self.overflowed = False
        self.pool = pool

    def add(self, envelope: dict) -> None:
        if self.overflowed:
            return
        from ..store import tree_bytes

        size = tree_bytes(envelope)
        self.size += size
        self.pool[0] += size
        if self.pool[0] > MAX_EARLY_BYTES:
            self.release()
            self.overflowed = True
        else:
            self.envelopes.append(envelope)

    def release(self) -> None:
        """Give the pool back what this channel held (its entry leaves the client)."""
        self.pool[0] -= self.size
        self.size = 0
        self.envelopes = []

    def taken(self, channel: str) -> list[dict]:
        """The envelopes to apply after the snapshot; ``ValueError`` when some had to be let go."""
        envelopes, overflowed = self.envelopes, self.overflowed
        self.release()
        if overflowed:
            raise ValueError(
                f"the host sent more than {MAX_EARLY_BYTES:,} bytes of actions before {channel}'s "
                "snapshot, more than the client keeps: the channel was not applied"
            )
        return envelopes


def _taken(early: dict[str, _Early | None], channel: str) -> list[dict]:
    entry = early.pop(channel, None)
    return [] if entry is None else entry.taken(channel)


def _bad_answer(method: str, why: str) -> RpcError:
    """A host's answer this client cannot read: the error names the field, as a refusal would."""
    return RpcError(ErrorCode.INTERNAL_ERROR, f"the host's answer to {method} is malformed: {why}")


def _answer_seq(result: dict, method: str) -> int:
    seq = result.get("serverSeq")
    if seq is None:
        return 0
    if not valid_seq(seq):
        raise _bad_answer(method, f"serverSeq is {seq!r:.40}, not a sequence number")
    return seq


def _checked_snapshot(snapshot: Any, method: str) -> dict:
    """A ``Snapshot`` the client can apply: ``resource`` a channel URI, a ``state``, ``fromSeq`` a number."""
    if not isinstance(snapshot, dict):
        raise _bad_answer(method, f"a snapshot is {type(snapshot).__name__}, not an object")
    resource = snapshot.get("resource")
    if not isinstance(resource, str) or not resource:
        raise _bad_answer(method, f"a snapshot's resource is {resource!r:.60}, not a channel URI")
    if not isinstance(snapshot.get("state"), dict):
        raise _bad_answer(method, f"the snapshot of {resource!r:.200} has no state object")
    seq = snapshot.get("fromSeq")
    if seq is not None and not valid_seq(seq):
        raise _bad_answer(
            method, f"the snapshot of {resource!r:.200} has fromSeq {seq!r:.40}, not a sequence number"
        )
    return snapshot


def _server_info(result: Any) -> dict:
    info = result.get("serverInfo") if isinstance(result, dict) else None
    return info if isinstance(info, dict) else {}


def _negotiated(result: Any) -> str:
    """The protocol version an ``initialize`` result names: one this client offered."""
    if not isinstance(result, dict):
        raise RpcError(
            ErrorCode.INTERNAL_ERROR, f"the host's answer to initialize is not an object: {result!r:.60}"
        )
    version = result.get("protocolVersion", PROTOCOL_VERSION)
    if version not in SUPPORTED_VERSIONS:
        raise RpcError(
            ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
            f"the host chose protocol version {version!r}, which this client did not offer "
            f"(it offered {', '.join(SUPPORTED_VERSIONS)})",
        )
    return version


def _version_refusal(exc: RpcError) -> RpcError:
    """A host's unsupported-version error, saying which versions each side speaks."""
    if exc.code != ErrorCode.UNSUPPORTED_PROTOCOL_VERSION:
        return exc
    data = exc.data if isinstance(exc.data, dict) else {}
    theirs = data.get("supportedVersions") or "(it did not say)"
    theirs = ", ".join(map(str, theirs)) if isinstance(theirs, list) else str(theirs)
    return RpcError(
        exc.code,
        f"the host speaks none of this client's protocol versions (it speaks {theirs}; "
        f"this client offered {', '.join(SUPPORTED_VERSIONS)})",
        exc.data,
    )


def _by_resource(result: Any, method: str) -> dict[str, dict]:
    """The ``snapshots`` of an ``initialize`` or ``reconnect`` result, by channel URI, each checked."""
    found = result.get("snapshots") if isinstance(result, dict) else None
    if found is None:
        return {}
    if not isinstance(found, list):
        raise _bad_answer(method, f"snapshots is {type(found).__name__}, not a list")
    return {s["resource"]: s for s in (_checked_snapshot(s, method) for s in found)}


def channel_kind_of_uri(uri: str) -> str | None:
    """The channel kind a URI names, where its scheme tells (annotations share the session scheme)."""
    if uri == ROOT:
        return "root"
    if uri.startswith("ahp-session:/"):
        return "annotations" if uri.endswith("/annotations") else "session"
    if uri.startswith("ahp-chat:/"):
        return "chat"
    if uri.startswith("ahp-terminal:/"):
        return "terminal"
    if uri.startswith("ahp-changeset:/"):
        return "changeset"
    if uri.startswith("ahp-resource-watch:/"):
        return "resourceWatch"
    return None
