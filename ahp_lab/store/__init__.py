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
import operator
import time
from array import array
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from sys import getsizeof
from typing import IO, Any

from ..protocol import PROTOCOL_VERSION
from ..protocol.jsonvalue import dumps, to_json, utf8_json
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
#: The initial state of a channel whose whole history was dropped from the log.
_GONE = object()
#: Values per sealed chunk of a :class:`_Column`.
_CHUNK = 1024
_is_tracked = gc.is_tracked
#: The key tuples of the untracked dicts a :class:`_Column` has packed (an action type's fields,
#: an origin's), each kept once: at most :data:`_KEYS_MAX` of them, each with at most
#: :data:`_KEY_TEXT_MAX` characters of keys, so that strangers' dicts cannot grow it much.
_KEYS: dict[tuple, tuple] = {}
_KEYS_MAX = 4096
_KEY_TEXT_MAX = 256


def _shape(keys: tuple) -> tuple[tuple, int]:
    """``keys``, kept in ``_KEYS`` when short, and the bytes a packed dict still holds for them
    (0 when kept: every dict of that shape shares them)."""
    text = sum([len(k) for k in keys if type(k) is str])
    if text <= _KEY_TEXT_MAX and len(_KEYS) < _KEYS_MAX:
        _KEYS[keys] = keys
        return keys, 0
    return keys, 56 + 8 * len(keys) + text


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
    the collector does not track (only atomic members: streamed deltas, client origins) as a
    ``(keys, value, ...)`` tuple of the same values, one key tuple shared by the dicts of a shape;
    a small nested value of plain JSON (a tool result, a content update) as its JSON text. Both
    read back as equal values. Every :data:`_CHUNK` of them are sealed in a tuple, which the
    collector then untracks. Any other value (a big tree such as a customization list, whose parts
    channel states share) stays the same object, kept in ``_objects`` under a number that is
    stored instead.

    Indices are absolute: :meth:`drop` forgets the oldest values, and they are not renumbered.
    """

    __slots__ = ("_chunks", "_open", "_objects", "_numbered", "_base")

    def __init__(self) -> None:
        self._chunks: list[tuple] = []
        self._open: list = []
        self._objects: dict[int, Any] = {}
        self._numbered = 0  # objects ever numbered
        self._base = 0  # the index of the first value of _chunks[0] (or of _open)

    def __len__(self) -> int:
        return self._base + len(self._chunks) * _CHUNK + len(self._open)

    def append(self, value: Any, measure: bool = True) -> int:
        """Store ``value``; returns about how many bytes it holds (0 unless ``measure``)."""
        size = 0
        if type(value) is dict and not _is_tracked(value):
            shared = _SHARED_IDS.get(id(value))
            if shared is not None and _SHARED[shared] is value:
                packed: Any = -1 - shared
            else:
                keys = tuple(value)
                shape, held = _KEYS.get(keys), 0
                if shape is None:
                    shape, held = _shape(keys)
                packed = (shape, *value.values())
                if measure:
                    try:
                        text = len("".join(packed[1:]))  # all strings: the quick way
                    except TypeError:
                        text = sum([len(v) for v in packed if type(v) is str])
                    size = held + 56 + 8 * len(packed) + text
        elif type(value) in (dict, list) and _small_plain_json(value):
            packed = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
            size = 64 + len(packed)
        else:
            packed = self._numbered
            self._numbered += 1
            self._objects[packed] = value
            size = tree_bytes(value) if measure else 0
        self._open.append(packed)
        if len(self._open) == _CHUNK:
            self._chunks.append(tuple(self._open))
            self._open = []
        return size

    def __getitem__(self, index: int) -> Any:
        chunk, offset = divmod(index - self._base, _CHUNK)
        packed = self._chunks[chunk][offset] if chunk < len(self._chunks) else self._open[offset]
        kind = type(packed)
        if kind is tuple:
            return dict(zip(packed[0], packed[1:], strict=True))
        if kind is str:
            return json.loads(packed)
        return _SHARED[-1 - packed] if packed < 0 else self._objects[packed]

    def drop(self, upto: int) -> None:
        """Forget the values at indices below ``upto``; the caller never reads them again."""
        whole = min(len(self._chunks), (upto - self._base) // _CHUNK)
        for chunk in self._chunks[:whole]:
            self._forget(chunk)
        del self._chunks[:whole]
        self._base += whole * _CHUNK
        part = upto - self._base
        if part <= 0:
            return
        if self._chunks:
            first = self._chunks[0]
            self._forget(first[:part])
            self._chunks[0] = (None,) * part + first[part:]
        else:
            self._forget(self._open[:part])
            self._open[:part] = [None] * part

    def _forget(self, packed_values: Any) -> None:
        for packed in packed_values:
            if type(packed) is int and packed >= 0:
                self._objects.pop(packed, None)


def tree_bytes(value: Any) -> int:
    """About the bytes a JSON-shaped value holds: its strings as Python stores them (one, two or
    four bytes a character, whichever the widest needs) and a few words per member."""
    size = 0
    stack = [value]
    budget = 10_000_000  # members: a cyclic value (never JSON) still ends
    while stack and budget:
        budget -= 1
        item = stack.pop()
        if isinstance(item, str):
            size += getsizeof(item)
        elif isinstance(item, dict):
            size += 64 + 16 * len(item)
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            size += 56 + 8 * len(item)
            stack.extend(item)
        else:
            size += 32
    return size


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
    """Authoritative state per channel plus the record of every transition.

    With ``max_log_bytes``, the log is kept within about that many bytes of recorded actions,
    origins and reasons (an estimate of what they hold): past it, the oldest transitions are
    dropped until a quarter of the budget is free, and the log then starts from each channel's
    state at the cut, as if that were its initial state. Time travel, the views and export then
    start there (:attr:`first_seq`); asking for an older seq is an ``IndexError`` that says so.
    Without it (``None``), nothing is ever dropped.
    """

    def __init__(
        self,
        clock_ms: Callable[[], int] = wall_clock_ms,
        *,
        first_seq: int = 1,
        checkpoint_every: int = 512,
        cache_size: int = 512,
        max_log_bytes: int | None = None,
    ) -> None:
        if max_log_bytes is not None and (isinstance(max_log_bytes, bool) or max_log_bytes <= 0):
            raise ValueError(f"max_log_bytes must be a positive number of bytes, got {max_log_bytes!r}")
        self.clock_ms = clock_ms
        self._seq0 = first_seq  # the seq of log index 0
        self.checkpoint_every = checkpoint_every
        self.max_log_bytes = max_log_bytes
        self._dropped = 0  # log indices below this were dropped (the columns start here)
        self._lost = False  # loaded from a log that had dropped its start (its header says so)
        self._bytes = 0  # what the kept log holds, about
        self._channels: dict[str, _Channel] = {}
        self._history: list[_Channel] = []  # every channel ever added, in order
        self._states: dict[str, Any] = {}
        # columns of the log
        self._actions = _Column()
        self._origins = _Column()
        self._chan: array = array("I")  # index into self._history
        self._now: array = array("q")
        self._reducer_ns: array = array("I")  # ns, capped at 2**32 - 1 (4.3 s)
        self._sizes: array = array("I")  # about the bytes each transition's record holds
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
    def first_seq(self) -> int:
        """The seq of the oldest transition the log holds (later than 1 once some were dropped)."""
        return self._seq0 + self._dropped

    @property
    def last_seq(self) -> int:
        """The seq of the newest transition (``first_seq - 1`` when the log is empty)."""
        return self._seq0 + len(self._actions) - 1

    @property
    def log_bytes(self) -> int:
        """About how many bytes the kept log's actions, origins and reasons hold."""
        return self._bytes

    def log_bytes_since(self, seq: int) -> int:
        """About how many bytes the transitions from ``seq`` on hold (all channels)."""
        return sum(self._sizes[max(0, seq - self.first_seq) :])

    # -- applying -----------------------------------------------------------------------------

    def apply(
        self, channel: str, action: dict, origin: dict = HOST, *, now_ms: int | None = None
    ) -> Transition:
        """Reduce an accepted action into ``channel`` and record the transition."""
        ch = self._channels.get(channel)
        if ch is None:
            raise KeyError(f"no channel {channel}")
        now = _checked_now(self.clock_ms() if now_ms is None else now_ms)
        before = self._states[channel]
        t0 = time.perf_counter_ns()
        after = ch.reducer(before, action, now)
        elapsed = time.perf_counter_ns() - t0
        # recorded first: a transition the log cannot take (a number JSON cannot write) leaves the
        # state as it was, which the log and every replay agree with (hunt 15)
        index = self._record(ch, action, origin, now, elapsed)
        self._states[channel] = after
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
        now = _checked_now(self.clock_ms() if now_ms is None else now_ms)
        index = self._record(ch, action, origin, now, 0, 64 + len(reason))
        self._rejections[index] = reason
        state = self._states[channel]
        transition = Transition(self, index, state, state, action)
        self._notify(channel, transition)
        return transition

    def _record(self, ch: _Channel, action: Any, origin: dict, now: int, elapsed: int, extra: int = 0) -> int:
        index = self._dropped + len(self._sizes)  # len(self._actions), without a Python call
        # an origin is small (a client id is at most 256 characters): a fixed share of the 96
        size = 96 + extra + self._actions.append(action)
        self._origins.append(origin, False)
        self._chan.append(ch.index)  # type: ignore[attr-defined]
        self._now.append(now)
        self._reducer_ns.append(elapsed if elapsed < 0xFFFFFFFF else 0xFFFFFFFF)
        self._sizes.append(size if size < 0xFFFFFFFF else 0xFFFFFFFF)
        self._bytes += size
        ch.positions.append(index)
        if self.max_log_bytes is not None and self._bytes > self.max_log_bytes:
            self._drop_oldest()
        return index

    def _drop_oldest(self) -> None:
        """Drop the oldest transitions until a quarter of the budget is free (never the newest);
        each channel's state at the cut becomes its initial state and first checkpoint."""
        target = self.max_log_bytes * 3 // 4  # type: ignore[operator]
        freed, keep = 0, len(self._sizes) - 1
        excess = self._bytes - target
        k = 0
        for size in self._sizes:
            if freed >= excess or k == keep:
                break
            freed += size
            k += 1
        if k == 0:
            return
        first_drop = self._dropped == 0
        cut = self._dropped + k
        rebased = []
        for ch in self._history:
            if ch.initial is _GONE or ch.first_index >= cut:
                continue
            if ch.removed_at is not None and ch.removed_at <= cut:
                ch.initial, ch.checkpoints = _GONE, []
                ch.positions, ch.checkpoint_counts = array("q"), array("q")
                continue
            count = bisect_left(ch.positions, cut)  # its transitions before the cut
            state = self._state_after_count(ch, count)
            ch.initial, ch.first_index = state, cut
            del ch.positions[:count]
            ch.checkpoints = [(0, state), *((c - count, st) for c, st in ch.checkpoints if c > count)]
            ch.checkpoint_counts = array("q", [c for c, _ in ch.checkpoints])
            rebased.append((cut, "add", ch))
        self._events = rebased + [e for e in self._events if e[0] >= cut and e[2].initial is not _GONE]
        self._actions.drop(cut)
        self._origins.drop(cut)
        for column in (self._chan, self._now, self._reducer_ns, self._sizes):
            del column[:k]
        self._rejections = {i: r for i, r in self._rejections.items() if i >= cut}
        self._cache.clear()
        self._bytes -= freed
        self._dropped = cut
        if first_drop:
            import logging

            logging.getLogger("ahp_lab").warning(
                "the transition log passed its budget of %s bytes: transitions before seq %s were "
                "dropped, and time travel and export now start there",
                self.max_log_bytes,
                self.first_seq,
            )

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

    def _kept(self, index: int) -> int:
        """The position of log ``index`` in the per-transition arrays; an ``IndexError`` that says
        why when it was dropped."""
        at = index - self._dropped
        if at < 0:
            raise IndexError(self._dropped_reason(self._seq0 + index))
        return at

    def _dropped_reason(self, seq: int) -> str:
        return (
            f"seq {seq} was dropped to keep the transition log within max_log_bytes "
            f"({self.max_log_bytes:,}): the log holds seqs {self.first_seq}..{self.last_seq}"
        )

    def _channel_of(self, index: int) -> _Channel:
        return self._history[self._chan[self._kept(index)]]

    def _now_of(self, index: int) -> int:
        return self._now[self._kept(index)]

    def _reducer_ns_of(self, index: int) -> int:
        return self._reducer_ns[self._kept(index)]

    def _action_of(self, index: int) -> Any:
        self._kept(index)
        return self._actions[index]

    def _origin_of(self, index: int) -> dict:
        self._kept(index)
        return self._origins[index]

    def _transition(self, index: int) -> Transition:
        return Transition(self, index)

    def _state_around(self, index: int, after: bool) -> Any:
        """The channel state right before or right after the transition at log ``index``."""
        ch = self._channel_of(index)
        count = bisect_right(ch.positions, index)  # transitions of the channel up to and including index
        return self._state_after_count(ch, count if after else count - 1)

    def _state_after_count(self, ch: _Channel, count: int) -> Any:
        if count == len(ch.positions) and self._channels.get(ch.uri) is ch:  # live: not a channel
            # removed, its URI since taken by another
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
                state = ch.reducer(state, self._actions[index], self._now[index - self._dropped])
        self._cache[key] = state
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return state

    def state_at(self, seq: int) -> dict[str, Any]:
        """Every channel's state as it was right after transition ``seq`` (time travel)."""
        upto = seq - self._seq0 + 1  # number of transitions included
        if self._dropped and 0 <= upto <= self._dropped:
            raise IndexError(self._dropped_reason(seq))
        if upto < 0 or upto > len(self._actions):
            raise IndexError(f"no seq {seq}: the log holds seqs {self.first_seq}..{self.last_seq}")
        out: dict[str, Any] = {}
        for ch in self._history:
            if ch.initial is _GONE:
                continue
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
        if not callable(getattr(target, "write", None)):
            raise TypeError(
                f"export writes to a path or a text file, not {type(target).__name__} {target!r:.40}"
            )
        lines = 0

        def write(obj: dict) -> None:
            nonlocal lines
            # a lone UTF-16 half (a client's text may hold one) is written escaped, as UTF-8 can
            # carry it, so that the line reads back the same
            target.write(utf8_json(dumps(obj, separators=(",", ":"))) + "\n")
            lines += 1

        write(
            {
                "format": LOG_FORMAT,
                "version": LOG_VERSION,
                "protocolVersion": PROTOCOL_VERSION,
                "firstSeq": self.first_seq,
                **({"droppedBefore": self.first_seq} if self._dropped or self._lost else {}),
            }
        )
        events = iter(self._events)
        pending = next(events, None)
        for index in range(self._dropped, len(self._actions) + 1):
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
        """Rebuild a store by replaying an exported log; its states equal the exported ones.

        Actions are replayed as they were recorded, unknown types and odd values included (the
        reducers met them live, and treat them the same way again); a record without the fields
        a log is made of is a ``ValueError`` naming its line.
        """
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
                store._lost = "droppedBefore" in record
                continue
            if not isinstance(record, dict):
                raise ValueError(f"line {lineno}: a record is a JSON object, not {type(record).__name__}")
            if "envelope" in record:
                env = record["envelope"]
                if not (
                    isinstance(env, dict)
                    and isinstance(env.get("channel"), str)
                    and "action" in env  # any value: an odd one was applied as a no-op, as recorded
                    and type(record.get("nowMs")) is int
                ):
                    raise ValueError(
                        f"line {lineno}: an envelope record needs envelope.channel (a string), "
                        "envelope.action and nowMs (an integer)"
                    )
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
                if not isinstance(record["channel"], str) or record.get("kind") not in REDUCERS:
                    raise ValueError(
                        f"line {lineno}: a channel record needs channel (a URI) and kind (one of {', '.join(REDUCERS)})"
                    )
                store.add_channel(record["channel"], record["kind"], record.get("state"))
            else:
                raise ValueError(f"line {lineno}: unknown record {sorted(record)}")
        if store is None:
            raise ValueError("empty transition log")
        return store


def _checked_now(now: Any) -> int:
    """The clock's reading for a transition: epoch milliseconds, an integer the log's column holds
    (a float from a clock of one's own was refused half-way, with the state already changed). An
    integer of another type (``numpy.int64``) is taken as the ``int`` it is; ``True`` is not one."""
    if type(now) is not int:
        try:
            now = operator.index(now) if not isinstance(now, bool) else None
        except TypeError:
            now = None
        if now is None:
            raise TypeError("now_ms must be an integer number of epoch milliseconds")
        now = int(now)
    if not -(2**63) <= now < 2**63:
        raise TypeError(f"now_ms must be an integer number of epoch milliseconds, not {now}")
    return now
