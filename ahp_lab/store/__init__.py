"""The store: current state of every channel, the transition log, subscriptions, time travel, replay.

Nothing writes state except :meth:`Store.apply`, which runs the channel's pure reducer on an
action the host accepted and records a transition. The log is column-oriented so that recording
costs little time and memory: each transition keeps its action, channel, origin, clock value and
reducer time; channel states are kept for the live head, at periodic checkpoints and in a small
cache. Actions and origins are kept in a form CPython's cyclic garbage collector does not traverse
(:class:`_Column`), so that a long log does not lengthen every full collection of the process. Any earlier state (``transition.before``/``after``, :meth:`Store.state_at`) is rebuilt on
demand by replaying the channel's actions from the nearest checkpoint with the clock values that
were recorded — the reducers are pure, so the result is exactly the state that existed.

Export writes JSON Lines: a header, each channel's initial state where it appears, and one
envelope per transition; :meth:`Store.load` replays such a file into a store whose states equal
the live ones. The views into the log (a transition, the log, a range of it) are in
:mod:`ahp_lab.store.transitions`.
"""

from __future__ import annotations

import gc
import json
import math
import time
from array import array
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import IO, Any

from ..protocol import PROTOCOL_VERSION
from ..protocol.jsonvalue import dumps, to_json
from ..reducers import REDUCERS
from .transitions import Transition, TransitionList, TransitionLog, summarize_action

__all__ = [
    "Store",
    "Transition",
    "TransitionLog",
    "TransitionList",
    "HOST",
    "agent_origin",
    "client_origin",
    "summarize_action",
    "wall_clock_ms",
]

HOST: dict = {"kind": "host"}
_AGENT_ORIGINS: dict[str, dict] = {}
#: Origin records shared by many transitions (``HOST``, one per agent): a log column stores their
#: position in this list. They live as long as the module, so their ids stay valid.
_SHARED: list[dict] = [HOST]
_SHARED_IDS: dict[int, int] = {id(HOST): 0}
LOG_FORMAT = "ahp_lab.transitions"
LOG_VERSION = 1
#: Values per sealed chunk of a :class:`_Column`.
_CHUNK = 1024


def agent_origin(name: str) -> dict:
    """The (shared) origin record of actions an agent produced through the host."""
    origin = _AGENT_ORIGINS.get(name)
    if origin is None:
        origin = _AGENT_ORIGINS[name] = {"kind": "agent", "name": name}
        _SHARED_IDS[id(origin)] = len(_SHARED)
        _SHARED.append(origin)
    return origin


def client_origin(client_id: str, client_seq: int) -> dict:
    return {"kind": "client", "clientId": client_id, "clientSeq": client_seq}


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


Listener = Callable[["Transition"], None]


#: A nested value with at most this many members in all is kept as its JSON text.
_TEXT_MAX = 32
_ATOMS = (str, int, bool, type(None))


def _small_plain_json(value: Any) -> bool:
    """Whether ``value`` has at most :data:`_TEXT_MAX` members and is plain JSON (dicts with str
    keys, lists, str, int, finite float, bool, null), so that its JSON text reads back equal and
    of the same types. Stops at the first member over the budget: a big tree costs nothing."""
    budget = _TEXT_MAX
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            budget -= len(item)
            if budget < 0 or not all(type(k) is str for k in item):
                return False
            stack.extend(item.values())
        elif kind is list:
            budget -= len(item)
            if budget < 0:
                return False
            stack.extend(item)
        elif kind is float:
            if not math.isfinite(item):
                return False
        elif kind not in _ATOMS:
            return False
    return True


class _Column:
    """One value per transition, held where CPython's cyclic garbage collector does not look.

    A full collection visits every reference of every tracked container, so plain lists of a
    million actions and origins lengthen every one of them by tens of milliseconds, and a nested
    action dict is never untracked. Here a value is stored as an atomic the collector can
    untrack: a shared origin (``HOST``, an agent's) as ``-1 - position`` in ``_SHARED``; a dict
    the collector does not track (only atomic members: streamed deltas, client origins) as a flat
    ``(key, value, ...)`` tuple of the same objects; a small nested value of plain JSON (a tool
    result, a content update) as its JSON text. Both read back as equal values. Every
    :data:`_CHUNK` of them are sealed in a tuple, which the collector then untracks. Any other
    value (a big tree such as a customization list, whose parts channel states share) stays the
    same object, kept in ``_objects`` and stored as its position there.
    """

    __slots__ = ("_chunks", "_open", "_objects")

    def __init__(self) -> None:
        self._chunks: list[tuple] = []
        self._open: list = []
        self._objects: list = []

    def __len__(self) -> int:
        return len(self._chunks) * _CHUNK + len(self._open)

    def append(self, value: Any) -> None:
        shared = _SHARED_IDS.get(id(value))
        if shared is not None and _SHARED[shared] is value:
            packed: Any = -1 - shared
        elif type(value) is dict and not gc.is_tracked(value):
            packed = tuple(chain.from_iterable(value.items()))
        elif type(value) in (dict, list) and _small_plain_json(value):
            packed = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        else:
            packed = len(self._objects)
            self._objects.append(value)
        self._open.append(packed)
        if len(self._open) == _CHUNK:
            self._chunks.append(tuple(self._open))
            self._open = []

    def __getitem__(self, index: int) -> Any:
        chunk, offset = divmod(index, _CHUNK)
        packed = self._chunks[chunk][offset] if chunk < len(self._chunks) else self._open[offset]
        kind = type(packed)
        if kind is tuple:
            return dict(zip(packed[::2], packed[1::2], strict=True))
        if kind is str:
            return json.loads(packed)
        return _SHARED[-1 - packed] if packed < 0 else self._objects[packed]


@dataclass
class _Channel:
    uri: str
    kind: str
    reducer: Callable
    first_index: int  # log length when the channel appeared
    initial: Any
    positions: array = field(default_factory=lambda: array("q"))  # log indices of its transitions
    checkpoints: list = field(default_factory=list)  # [(count, state)] state after `count` transitions
    checkpoint_counts: array = field(default_factory=lambda: array("q"))  # the counts above, for bisect
    removed_at: int | None = None  # log length when it was removed


class Store:
    """Authoritative state per channel plus the record of every transition."""

    def __init__(
        self,
        clock_ms: Callable[[], int] = wall_clock_ms,
        *,
        first_seq: int = 1,
        checkpoint_every: int = 512,
        cache_size: int = 512,
    ) -> None:
        self.clock_ms = clock_ms
        self.first_seq = first_seq
        self.checkpoint_every = checkpoint_every
        self._channels: dict[str, _Channel] = {}
        self._history: list[_Channel] = []  # every channel ever added, in order
        self._states: dict[str, Any] = {}
        # columns of the log
        self._actions = _Column()
        self._origins = _Column()
        self._chan: array = array("I")  # index into self._history
        self._now: array = array("q")
        self._reducer_ns: array = array("I")  # ns, capped at 2**32 - 1 (4.3 s)
        self._rejections: dict[int, str] = {}
        self._events: list[tuple[int, str, _Channel]] = []  # (log length, "add"/"remove", channel)
        self._cache: OrderedDict[tuple[int, int], Any] = OrderedDict()
        self._cache_size = cache_size
        self._listeners: list[Listener] = []
        self._channel_listeners: dict[str, list[Listener]] = {}
        self.transitions = TransitionLog(self)

    # -- channels -----------------------------------------------------------------------------

    def add_channel(self, uri: str, kind: str, state: Any) -> None:
        """Start tracking a channel with its initial state (recorded for replay and time travel)."""
        if uri in self._channels:
            raise ValueError(f"channel {uri} already exists")
        reducer = REDUCERS.get(kind)
        if reducer is None:
            raise ValueError(f"unknown channel kind {kind!r} for {uri}")
        ch = _Channel(uri, kind, reducer, len(self._actions), state)
        ch.index = len(self._history)  # type: ignore[attr-defined]
        ch.checkpoints.append((0, state))
        ch.checkpoint_counts.append(0)
        self._history.append(ch)
        self._channels[uri] = ch
        self._states[uri] = state
        self._events.append((len(self._actions), "add", ch))

    def remove_channel(self, uri: str) -> None:
        """Stop tracking a channel (it disappears from later ``state_at`` results; its history stays)."""
        ch = self._channels.pop(uri, None)
        if ch is None:
            return
        self._states.pop(uri, None)
        ch.removed_at = len(self._actions)
        self._events.append((len(self._actions), "remove", ch))
        self._channel_listeners.pop(uri, None)

    def has_channel(self, uri: str) -> bool:
        """Whether the channel is live."""
        return uri in self._channels

    def kind_of(self, uri: str) -> str | None:
        """The kind of a live channel (``None`` when it does not exist)."""
        ch = self._channels.get(uri)
        return ch.kind if ch else None

    def state(self, uri: str) -> Any:
        """The current state of a channel (``None`` if it does not exist)."""
        return self._states.get(uri)

    def states(self) -> dict[str, Any]:
        """Current state of every live channel."""
        return dict(self._states)

    def channels(self) -> dict[str, str]:
        """Live channels and their kinds."""
        return {uri: ch.kind for uri, ch in self._channels.items()}

    @property
    def last_seq(self) -> int:
        """The seq of the newest transition (``first_seq - 1`` when the log is empty)."""
        return self.first_seq + len(self._actions) - 1

    # -- applying -----------------------------------------------------------------------------

    def apply(
        self, channel: str, action: dict, origin: dict = HOST, *, now_ms: int | None = None
    ) -> Transition:
        """Reduce an accepted action into ``channel`` and record the transition."""
        ch = self._channels.get(channel)
        if ch is None:
            raise KeyError(f"no channel {channel}")
        now = self.clock_ms() if now_ms is None else now_ms
        before = self._states[channel]
        t0 = time.perf_counter_ns()
        after = ch.reducer(before, action, now)
        elapsed = time.perf_counter_ns() - t0
        self._states[channel] = after
        index = self._record(ch, action, origin, now, elapsed)
        count = len(ch.positions)
        if count % self.checkpoint_every == 0:
            ch.checkpoints.append((count, after))
            ch.checkpoint_counts.append(count)
        transition = Transition(self, index, before, after, action)
        self._notify(channel, transition)
        return transition

    def reject(
        self, channel: str, action: Any, origin: dict, reason: str, *, now_ms: int | None = None
    ) -> Transition:
        """Record a rejected dispatch: it takes a seq (the echo carries it) but changes nothing."""
        ch = self._channels.get(channel)
        if ch is None:
            raise KeyError(f"no channel {channel}")
        now = self.clock_ms() if now_ms is None else now_ms
        index = self._record(ch, action, origin, now, 0)
        self._rejections[index] = reason
        state = self._states[channel]
        transition = Transition(self, index, state, state, action)
        self._notify(channel, transition)
        return transition

    def _record(self, ch: _Channel, action: Any, origin: dict, now: int, elapsed: int) -> int:
        index = len(self._actions)
        self._actions.append(action)
        self._origins.append(origin)
        self._chan.append(ch.index)  # type: ignore[attr-defined]
        self._now.append(now)
        self._reducer_ns.append(elapsed if elapsed < 0xFFFFFFFF else 0xFFFFFFFF)
        ch.positions.append(index)
        return index

    # -- subscriptions --------------------------------------------------------------------------

    def subscribe(self, listener: Listener, channel: str | None = None) -> Callable[[], None]:
        """Call ``listener(transition)`` after every transition (of ``channel`` only, if given)."""
        bucket = self._listeners if channel is None else self._channel_listeners.setdefault(channel, [])
        bucket.append(listener)

        def unsubscribe() -> None:
            if listener in bucket:
                bucket.remove(listener)

        return unsubscribe

    def _notify(self, channel: str, transition: Transition) -> None:
        for listener in tuple(self._channel_listeners.get(channel, ())) + tuple(self._listeners):
            try:
                listener(transition)
            except Exception as exc:  # a broken view must never break the host
                import logging

                logging.getLogger("ahp_lab").exception("transition listener %r failed: %s", listener, exc)

    # -- history ------------------------------------------------------------------------------

    def _channel_of(self, index: int) -> _Channel:
        return self._history[self._chan[index]]

    def _transition(self, index: int) -> Transition:
        return Transition(self, index)

    def _state_around(self, index: int, after: bool) -> Any:
        """The channel state right before or right after the transition at log ``index``."""
        ch = self._channel_of(index)
        count = bisect_right(ch.positions, index)  # transitions of the channel up to and including index
        return self._state_after_count(ch, count if after else count - 1)

    def _state_after_count(self, ch: _Channel, count: int) -> Any:
        if count == len(ch.positions) and ch.uri in self._channels:
            return self._states[ch.uri]
        key = (ch.index, count)  # type: ignore[attr-defined]
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        i = bisect_right(ch.checkpoint_counts, count) - 1
        done, state = ch.checkpoints[i]
        for k in range(done, count):
            index = ch.positions[k]
            if index not in self._rejections:
                state = ch.reducer(state, self._actions[index], self._now[index])
        self._cache[key] = state
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return state

    def state_at(self, seq: int) -> dict[str, Any]:
        """Every channel's state as it was right after transition ``seq`` (time travel)."""
        upto = seq - self.first_seq + 1  # number of transitions included
        if upto < 0 or upto > len(self._actions):
            raise IndexError(f"no seq {seq}: the log holds seqs {self.first_seq}..{self.last_seq}")
        out: dict[str, Any] = {}
        for ch in self._history:
            # visible at transition index upto-1: added before it and not removed before it
            if ch.first_index >= upto or (ch.removed_at is not None and ch.removed_at < upto):
                continue
            count = bisect_right(ch.positions, upto - 1)
            out[ch.uri] = self._state_after_count(ch, count)
        return out

    # -- export / replay ------------------------------------------------------------------------

    def export(self, target: str | Path | IO[str]) -> int:
        """Write the log as JSON Lines (initial channel states + envelopes); returns the line count."""
        if isinstance(target, (str, Path)):
            with open(target, "w", encoding="utf-8") as fh:
                return self.export(fh)
        lines = 0

        def write(obj: dict) -> None:
            nonlocal lines
            target.write(dumps(obj, separators=(",", ":")) + "\n")
            lines += 1

        write(
            {
                "format": LOG_FORMAT,
                "version": LOG_VERSION,
                "protocolVersion": PROTOCOL_VERSION,
                "firstSeq": self.first_seq,
            }
        )
        events = iter(self._events)
        pending = next(events, None)
        for index in range(len(self._actions) + 1):
            while pending is not None and pending[0] == index:
                at, what, ch = pending
                if what == "add":
                    write({"channel": ch.uri, "kind": ch.kind, "state": to_json(ch.initial)})
                else:
                    write({"removed": ch.uri})
                pending = next(events, None)
            if index == len(self._actions):
                break
            t = self._transition(index)
            write({"envelope": t.envelope(), "origin": t.origin, "nowMs": t.now_ms})
        return lines

    @classmethod
    def load(cls, source: str | Path | IO[str], **kwargs: Any) -> Store:
        """Rebuild a store by replaying an exported log; its states equal the exported ones."""
        if isinstance(source, (str, Path)):
            with open(source, encoding="utf-8") as fh:
                return cls.load(fh, **kwargs)
        store: Store | None = None
        for lineno, line in enumerate(source, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise ValueError(f"line {lineno}: not JSON ({exc})") from None
            if store is None:
                if record.get("format") != LOG_FORMAT:
                    raise ValueError(
                        f"line {lineno}: not an ahp_lab transition log (no {LOG_FORMAT!r} header)"
                    )
                store = cls(first_seq=int(record.get("firstSeq", 1)), **kwargs)
                continue
            if "envelope" in record:
                env = record["envelope"]
                expected = store.last_seq + 1
                if env.get("serverSeq") != expected:
                    raise ValueError(
                        f"line {lineno}: serverSeq {env.get('serverSeq')} where {expected} was expected"
                    )
                if env["channel"] not in store._channels:
                    raise ValueError(f"line {lineno}: envelope for unknown channel {env['channel']}")
                origin = record.get("origin") or HOST
                if "rejectionReason" in env:
                    store.reject(
                        env["channel"], env["action"], origin, env["rejectionReason"], now_ms=record["nowMs"]
                    )
                else:
                    store.apply(env["channel"], env["action"], origin, now_ms=record["nowMs"])
            elif "removed" in record:
                store.remove_channel(record["removed"])
            elif "channel" in record:
                store.add_channel(record["channel"], record["kind"], record["state"])
            else:
                raise ValueError(f"line {lineno}: unknown record {sorted(record)}")
        if store is None:
            raise ValueError("empty transition log")
        return store
