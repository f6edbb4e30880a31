"""A client's own transition log: what one client saw of a remote host, with time travel.

An attached lab (``Lab.attach``) has no access to the host's authoritative log. Its
:class:`ClientLog` records, from the client's confirmed states, every envelope the client applied
(server seq, channel, action, origin, rejection) and every snapshot it took, so that the same
views and notebook calls work: ``transitions``, ``state_at(seq)``, ``export``. Seqs are the
host's server seqs (sparse: only the channels this client subscribed to). Origins are what the
wire says: a client's ``{clientId, clientSeq}``, or none for the host and its agent alike.

``export`` writes JSON Lines (``"format": "ahp_lab.client-log"``); :meth:`ClientLog.load`
replays such a file with the same reducers and clock values, reproducing every state exactly.

The log is bounded like the host's (``max_log_bytes``, by default the host's
:attr:`~ahp_lab.protocol.limits.Limits.max_log_bytes`): the host is a stranger too, and a stream
of large actions from it must not grow this kernel without bound. Past the budget the oldest
records are dropped; each channel then starts from its state at the cut (export writes it as a
snapshot), and asking for an older seq is an ``IndexError`` that says so.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Callable
from pathlib import Path
from sys import getsizeof
from typing import IO, Any

from ..client.client import channel_kind_of_uri
from ..protocol.jsonvalue import dumps, json_patch, to_json, utf8_json
from ..protocol.limits import Limits
from ..reducers import REDUCERS
from ..store import Transition as _StoreTransition
from ..store import TransitionList, summarize_action, tree_bytes

__all__ = ["ClientLog", "ClientTransition", "CLIENT_LOG_FORMAT"]

CLIENT_LOG_FORMAT = "ahp_lab.client-log"
_HOST_ORIGIN = {"kind": "host"}
#: What one record keeps beyond its action or snapshot, about: the transition, the record, the
#: history entry and the new top-level state dicts its states do not share.
_RECORD_BYTES = 1024


#: How deep :func:`_fresh_bytes` follows the containers an action replaced (a reducer copies the
#: path to what it changes: chat, active turn, part, tool call).
_FRESH_DEPTH = 4


def _fresh_bytes(after: Any, before: Any, depth: int) -> int:
    """About the bytes of the containers ``after`` does not share with ``before``: the copies the
    reducer made on the way to what it changed. A host's snapshot of 100,000 top-level keys made
    each 100-byte action keep a 3.7 MB copy, while the log counted the action's size only."""
    if after is before or depth == 0 or not isinstance(after, (dict, list)):
        return 0
    size = getsizeof(after)
    if isinstance(after, dict):
        old = before if isinstance(before, dict) else {}
        for key, value in after.items():
            if isinstance(value, (dict, list)):
                size += _fresh_bytes(value, old.get(key), depth - 1)
    return size


class ClientTransition:
    """One envelope as this client applied it (the same reading surface as a host transition)."""

    __slots__ = (
        "seq",
        "channel",
        "channel_kind",
        "action",
        "origin",
        "rejection_reason",
        "before",
        "after",
        "now_ms",
    )

    def __init__(
        self,
        seq: int,
        channel: str,
        channel_kind: str,
        action: Any,
        origin: dict,
        rejection_reason: str | None,
        before: Any,
        after: Any,
        now_ms: int,
    ) -> None:
        self.seq = seq
        self.channel = channel
        self.channel_kind = channel_kind
        self.action = action
        self.origin = origin
        self.rejection_reason = rejection_reason
        self.before = before
        self.after = after
        self.now_ms = now_ms

    reducer_ns = 0  # not measured on the client
    type = property(
        lambda self: self.action.get("type", "?") if isinstance(self.action, dict) else "?",
        doc="The action type, e.g. ``chat/delta``.",
    )
    accepted = property(lambda self: self.rejection_reason is None, doc="False for a rejected dispatch.")
    wall_time = property(lambda self: self.now_ms / 1000.0, doc="Epoch seconds when this client applied it.")

    @property
    def diff(self) -> list[dict]:
        """RFC 6902 JSON patch from ``before`` to ``after``."""
        return json_patch(self.before, self.after)

    def envelope(self) -> dict:
        """The ``ActionEnvelope`` as it came over the wire."""
        env: dict[str, Any] = {"channel": self.channel, "action": to_json(self.action), "serverSeq": self.seq}
        if self.origin.get("kind") == "client":
            env["origin"] = {"clientId": self.origin["clientId"], "clientSeq": self.origin["clientSeq"]}
        if self.rejection_reason is not None:
            env["rejectionReason"] = self.rejection_reason
        return env

    origin_label = _StoreTransition.origin_label
    row = _StoreTransition.row

    def summary(self) -> str:
        """A short human description of the action's payload."""
        return summarize_action(self.action)

    __repr__ = _StoreTransition.__repr__

    def _repr_html_(self) -> str:
        return TransitionList([self])._repr_html_()


def _origin(envelope: dict) -> dict:
    origin = envelope.get("origin")
    if isinstance(origin, dict) and "clientId" in origin:
        return {"kind": "client", "clientId": origin.get("clientId"), "clientSeq": origin.get("clientSeq")}
    return _HOST_ORIGIN


class ClientLog:
    """Confirmed states and the envelopes that built them, as one client saw a host.

    Feed it with :meth:`record` (``client.on_confirmed(log.record)``), or :meth:`load` a file.
    """

    def __init__(
        self,
        clock_ms: Callable[[], int] | None = None,
        *,
        client_id: str | None = None,
        max_log_bytes: int | None = Limits.max_log_bytes,
    ) -> None:
        from ..store import wall_clock_ms

        if max_log_bytes is not None and (isinstance(max_log_bytes, bool) or max_log_bytes <= 0):
            raise ValueError(f"max_log_bytes must be a positive number of bytes, got {max_log_bytes!r}")
        self.clock_ms = clock_ms or wall_clock_ms
        self.client_id = client_id
        self.max_log_bytes = max_log_bytes
        self.transitions = _ClientTransitions()
        self._states: dict[str, Any] = {}
        self._kinds: dict[str, str] = {}
        self._history: dict[str, list[tuple[int, Any]]] = {}  # channel -> [(seq, state after it)]
        # snapshots and envelopes in arrival order (for export): (channel, seq, record, state after, bytes)
        self._records: list[tuple[str, int, dict, Any, int]] = []
        self._bases: dict[str, tuple[int, Any]] = {}  # channel -> (seq, state) at the last cut
        self._bytes = 0
        self._listeners: list[Callable[[Any], None]] = []

    def __repr__(self) -> str:
        return f"<ClientLog {len(self.transitions)} transitions on {len(self._states)} channels>"

    # -- recording -------------------------------------------------------------------------------

    def record(self, channel: str, envelope: dict, before: Any, after: Any, now_ms: int) -> None:
        """Record an envelope applied to (or a snapshot that replaced) a channel's confirmed state."""
        if "snapshot" in envelope:
            snapshot = envelope["snapshot"]
            self._kinds[channel] = self._kinds.get(channel) or channel_kind_of_uri(channel) or "?"
            seq = int(snapshot.get("fromSeq") or 0)
            self._put(channel, seq, after)
            record = {"snapshot": to_json(snapshot), "kind": self._kinds[channel]}
            self._keep(channel, seq, record, after, tree_bytes(record["snapshot"].get("state")))
            return
        seq = envelope.get("serverSeq")
        if not isinstance(seq, int):
            return
        kind = self._kinds.get(channel) or channel_kind_of_uri(channel) or "?"
        self._kinds[channel] = kind
        t = ClientTransition(
            seq,
            channel,
            kind,
            envelope.get("action"),
            _origin(envelope),
            envelope.get("rejectionReason"),
            before,
            after,
            now_ms,
        )
        self.transitions.append(t)
        self._put(channel, seq, after)
        size = tree_bytes(envelope) + _fresh_bytes(after, before, _FRESH_DEPTH)
        self._keep(channel, seq, {"envelope": envelope, "nowMs": now_ms}, after, size)
        for listener in tuple(self._listeners):
            try:
                listener(t)
            except Exception:  # a broken view never breaks the client
                import logging

                logging.getLogger("ahp_lab").exception("client log listener failed")

    def _put(self, channel: str, seq: int, state: Any) -> None:
        self._states[channel] = state
        history = self._history.setdefault(channel, [])
        if history and seq < history[-1][0]:
            history.insert(bisect_right([s for s, _ in history], seq), (seq, state))
        else:
            history.append((seq, state))

    def _keep(self, channel: str, seq: int, record: dict, after: Any, size: int) -> None:
        size += _RECORD_BYTES
        self._records.append((channel, seq, record, after, size))
        self._bytes += size
        if self.max_log_bytes is not None and self._bytes > self.max_log_bytes:
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        """Drop the oldest records until a quarter of the budget is free (never the newest); each
        channel they touched starts from its state after the last of them (its base)."""
        target = self.max_log_bytes * 3 // 4  # type: ignore[operator]
        excess, freed, k = self._bytes - target, 0, 0
        records = self._records
        while k < len(records) - 1 and freed < excess:
            freed += records[k][4]
            k += 1
        if k == 0:
            return
        first_drop = not self._bases
        envelopes = 0
        touched = {}  # channel -> its base: the state after the last of its dropped records
        for channel, seq, record, after, _ in records[:k]:
            touched[channel] = (seq, after)
            envelopes += "envelope" in record
        del records[:k]
        del self.transitions[:envelopes]
        for channel, (seq, state) in touched.items():  # the other channels' history is as it was
            history = self._history.get(channel, [])
            self._history[channel] = [(seq, state), *(h for h in history if h[0] > seq)]
        self._bases.update(touched)
        self._bytes -= freed
        if first_drop:
            import logging

            logging.getLogger("ahp_lab").warning(
                "this client's log passed its budget of %s bytes: what it saw before seq %s was "
                "dropped, and time travel and export now start there",
                self.max_log_bytes,
                self.dropped_through,
            )

    @property
    def log_bytes(self) -> int:
        """About the bytes the kept records hold (what ``max_log_bytes`` bounds)."""
        return self._bytes

    @property
    def dropped_through(self) -> int:
        """The newest seq dropped to stay within ``max_log_bytes`` (0 while nothing was dropped):
        time travel reaches back to the state right after it."""
        return max((seq for seq, _ in self._bases.values()), default=0)

    def forget(self, channel: str) -> None:
        """The client dropped the channel (unsubscribed, or missing after a reconnect)."""
        self._states.pop(channel, None)

    # -- the Store's reading surface ---------------------------------------------------------------

    def state(self, uri: str) -> Any:
        """The confirmed state of a channel (``None`` if this client does not hold it)."""
        return self._states.get(uri)

    def states(self) -> dict[str, Any]:
        """Confirmed state of every channel this client holds."""
        return dict(self._states)

    def channels(self) -> dict[str, str]:
        """Channels this client holds and their kinds."""
        return {uri: self._kinds[uri] for uri in self._states}

    def kind_of(self, uri: str) -> str | None:
        """The kind of a channel this client holds."""
        return self._kinds.get(uri) if uri in self._states else None

    @property
    def first_seq(self) -> int:
        """The oldest server seq in the log (0 when empty)."""
        return self.transitions[0].seq if self.transitions else 0

    @property
    def last_seq(self) -> int:
        """The newest server seq this client applied (0 when empty)."""
        return self.transitions[-1].seq if self.transitions else 0

    def state_at(self, seq: int) -> dict[str, Any]:
        """Every channel this client held, as it was right after server seq ``seq``.

        ``IndexError`` for a seq older than what the log keeps (see ``max_log_bytes``).
        """
        cut = self.dropped_through
        if seq < cut:
            raise IndexError(
                f"seq {seq} was dropped to keep this client's log within max_log_bytes "
                f"({self.max_log_bytes:,}): the log holds seqs {cut}..{self.last_seq}"
            )
        out: dict[str, Any] = {}
        for channel, history in self._history.items():
            i = bisect_right([s for s, _ in history], seq) - 1
            if i >= 0:
                out[channel] = history[i][1]
        return out

    def subscribe(self, listener: Callable[[Any], None], channel: str | None = None) -> Callable[[], None]:
        """Call ``listener(transition)`` after every recorded envelope (of ``channel`` only, if given)."""
        if channel is not None:
            inner = listener

            def listener(t: Any) -> None:
                if t.channel == channel:
                    inner(t)

        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    # -- export / load -----------------------------------------------------------------------------

    def export(self, target: str | Path | IO[str]) -> int:
        """Write the log as JSON Lines (snapshots + envelopes with their clock values); returns lines."""
        if isinstance(target, (str, Path)):
            with open(target, "w", encoding="utf-8") as fh:
                return self.export(fh)
        head = {"format": CLIENT_LOG_FORMAT, "version": 1, "clientId": self.client_id}
        target.write(utf8_json(dumps(head)) + "\n")  # a host's lone surrogate is written escaped
        lines = 1
        for channel, (seq, state) in self._bases.items():  # where the kept records start
            base = {
                "snapshot": {"resource": channel, "state": state, "fromSeq": seq},
                "kind": self._kinds[channel],
            }
            target.write(utf8_json(dumps(base, separators=(",", ":"))) + "\n")
            lines += 1
        for _, _, record, _, _ in self._records:
            target.write(utf8_json(dumps(record, separators=(",", ":"))) + "\n")
            lines += 1
        return lines

    @classmethod
    def load(cls, source: str | Path | IO[str]) -> ClientLog:
        """Rebuild a log from :meth:`export` output by replaying it with the reducers."""
        if isinstance(source, (str, Path)):
            with open(source, encoding="utf-8") as fh:
                return cls.load(fh)
        lines = iter(source)
        header = json.loads(next(lines, "{}") or "{}")
        if header.get("format") != CLIENT_LOG_FORMAT:
            raise ValueError(f"not an ahp_lab client log (no {CLIENT_LOG_FORMAT!r} header)")
        log = cls(client_id=header.get("clientId"))
        for lineno, line in enumerate(lines, 2):
            if not line.strip():
                continue
            record = json.loads(line)
            if "snapshot" in record:
                snap = record["snapshot"]
                uri = snap["resource"]
                log._kinds[uri] = record.get("kind") or channel_kind_of_uri(uri) or "?"
                log.record(uri, {"snapshot": snap}, log._states.get(uri), snap["state"], 0)
            elif "envelope" in record:
                env = record["envelope"]
                uri = env["channel"]
                if uri not in log._states:
                    raise ValueError(f"line {lineno}: envelope for {uri} before its snapshot")
                before = log._states[uri]
                after = before
                if env.get("rejectionReason") is None:
                    after = REDUCERS[log._kinds[uri]](before, env["action"], record["nowMs"])
                log.record(uri, env, before, after, record["nowMs"])
            else:
                raise ValueError(f"line {lineno}: unknown record {sorted(record)}")
        return log


class _ClientTransitions(TransitionList):
    """The log's transitions, oldest first (a list; also filterable like the host's log)."""

    def where(
        self, channel: str | None = None, type: str | None = None, origin: str | None = None
    ) -> TransitionList:
        """Transitions filtered by channel URI, action type (prefix match) and origin kind."""
        return TransitionList(
            t
            for t in self
            if (channel is None or t.channel == channel)
            and (type is None or (isinstance(t.type, str) and t.type.startswith(type)))
            and (origin is None or t.origin.get("kind") == origin)
        )

    def window(self, start: int, count: int) -> TransitionList:
        """``count`` transitions starting at position ``start`` (0 = oldest)."""
        return TransitionList(self[max(0, start) : max(0, start) + count])

    def __getitem__(self, item):
        found = super().__getitem__(item)
        return TransitionList(found) if isinstance(item, slice) else found


def is_client_log(path: str | Path) -> bool:
    """Whether a file starts with a client-log header (``Lab.replay`` reads both kinds)."""
    with open(path, encoding="utf-8") as fh:
        first = fh.readline()
    try:
        return json.loads(first).get("format") == CLIENT_LOG_FORMAT
    except (ValueError, AttributeError):
        return False
