"""A JSON array that updates in O(log n) and finds entries by key without scanning.

Reducers keep state JSON-shaped and never mutate it (DESIGN decision 1). With plain lists, every
change to one entry of a long collection (the turns of a chat, the parts of an active turn, the
customization tree) copies the whole list, so per-action cost grows with the session. A
:class:`Vector` is the persistent replacement, like :class:`~ahp_lab.protocol.text.Text` is for
strings:

* a 32-way trie of tuples with a tail (the layout of Clojure's persistent vector):
  :meth:`appended` and :meth:`replaced` copy O(log32 n) small tuples and share the rest with the
  previous version, which stays valid and unchanged. :meth:`of` wraps an existing plain list as
  a shared prefix without copying it (state is never mutated), so a long history loaded from a
  snapshot costs nothing until an entry in it is replaced;
* it equals the plain list it stands for (``Vector.of([1, 2]) == [1, 2]``), is unhashable like a
  list, reads like one (``len``, indexing, negative indices, slices returning plain lists,
  iteration, ``in``) and passes ``isinstance(v, list)``, so code written for plain JSON keeps
  working; :func:`ahp_lab.protocol.jsonvalue.to_json` and ``dumps`` serialize it as a list, and
  copying or pickling it gives a plain list. It has no mutating methods.
* :meth:`find` and :meth:`candidates` look entries up through an index keyed by a function of the
  entry (an id). The index is built on first use and shared, as a superset, by every version
  later derived from that one through :meth:`appended` and :meth:`replaced` (never by the versions
  it was derived from, which may hold entries it lacks); each lookup checks its candidates against
  the version it is asked on, so a shared index never gives a wrong answer, only a rare stale
  candidate. :meth:`sole` answers the common lookup by id (one candidate, nothing a search could
  stop at) in one call. :meth:`count_where` keeps a per-version count of entries matching a predicate.

Keys must be hashable; a key function returns :data:`NO_KEY` for an entry that cannot match, and
:data:`STOP` for an entry that a search cannot pass: :meth:`find` raises ``TypeError`` when it
would reach one before a match, as a JavaScript ``findIndex`` whose callback reads a member of a
``null`` entry throws.

Short collections stay plain lists: below :data:`PLAIN_MAX` entries, copying a list costs no more
than a trie update. The module functions :func:`appended`, :func:`replaced`, :func:`find`,
:func:`find_all`, :func:`candidates` and :func:`count` take either form and switch a list to a
``Vector`` when it grows past that size. Plain ``json.dumps`` cannot serialize a ``Vector`` (its
C encoder only knows real lists): use :func:`ahp_lab.protocol.jsonvalue.dumps` or ``to_json``.
"""

from __future__ import annotations

import copy
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, repeat
from itertools import count as _naturals
from typing import Any

__all__ = [
    "Vector",
    "NO_KEY",
    "STOP",
    "PLAIN_MAX",
    "as_vector",
    "sequence",
    "appended",
    "replaced",
    "removed",
    "find",
    "find_all",
    "candidates",
    "count",
]

_BITS = 5
_WIDTH = 1 << _BITS
_MASK = _WIDTH - 1

#: Returned by a key function for an entry that no lookup can match (it is not indexed).
NO_KEY = object()
#: Returned by a key function for an entry that a search cannot pass (it is indexed like a key).
STOP = object()
#: Lists up to this length are updated as plain lists; longer ones become a :class:`Vector`.
PLAIN_MAX = 16
#: Holes are compacted away once there are more than this many and more than an eighth of storage.
COMPACT_HOLES = 32
#: Recently wrapped plain lists: id -> (list, Vector). The list is kept alive, so ids stay valid.
_WRAPPED: dict[int, tuple[list, Vector]] = {}

KeyFn = Callable[[Any], Any]


class Vector:
    """An immutable JSON array; see the module docstring."""

    __slots__ = ("_base", "_nb", "_n", "_holes", "_shift", "_root", "_tail", "_index", "_counts", "_hint")

    def __init__(self) -> None:
        # Storage positions ("physical") differ from list positions once entries are removed: a
        # removal leaves a hole (kept in the sorted tuple ``_holes``) so that no position after
        # it moves and the shared indexes stay valid; holes are compacted away in bulk.
        self._base: list | tuple = ()  # a shared, never-mutated prefix (positions 0 .. _nb - 1)
        self._nb = 0
        self._n = 0  # physical length, holes included
        self._holes: tuple[int, ...] = ()
        self._shift = _BITS
        self._root: tuple = ()
        self._tail: tuple = ()
        # key function -> (multi, {key: positions}); shared along appended/replaced. A key's
        # positions are one int (most keys: no list to allocate) or an ascending list of several.
        self._index: dict | None = None
        # predicate -> number of entries matching it in this version
        self._counts: dict | None = None
        # (list position, storage position) of the last entry found while there are holes: the
        # read or update that usually follows a find does not convert the position again
        self._hint: tuple[int, int] | None = None

    # -- building -------------------------------------------------------------------------------

    @classmethod
    def of(cls, items: Iterable[Any]) -> Vector:
        """A vector holding ``items`` (a ``Vector`` is returned as it is).

        A plain list is wrapped, not copied: it must never be mutated afterwards, which holds for
        every list in reducer state.
        """
        if type(items) is Vector:
            return items
        if type(items) is list:
            # The same state list wraps to the same Vector, so its indexes survive actions that
            # leave the list unchanged (a lookup that misses returns the old state).
            recent = _WRAPPED.get(id(items))
            if recent is not None and recent[0] is items:
                return recent[1]
        out = cls()
        out._base = items if type(items) is list else list(items)
        out._n = out._nb = len(out._base)
        if type(items) is list and out._n > PLAIN_MAX:
            if len(_WRAPPED) >= 16:
                del _WRAPPED[next(iter(_WRAPPED))]
            _WRAPPED[id(items)] = (items, out)
        return out

    @classmethod
    def _trie(cls, items: list) -> Vector:
        """A vector holding ``items`` wholly in the trie (no shared prefix)."""
        out = cls()
        n = len(items)
        if not n:
            return out
        tailoff = ((n - 1) >> _BITS) << _BITS
        nodes = [tuple(items[i : i + _WIDTH]) for i in range(0, tailoff, _WIDTH)]
        shift = _BITS
        while len(nodes) > _WIDTH:
            nodes = [tuple(nodes[i : i + _WIDTH]) for i in range(0, len(nodes), _WIDTH)]
            shift += _BITS
        out._n = n
        out._shift = shift
        out._root = tuple(nodes)
        out._tail = tuple(items[tailoff:])
        return out

    def _phys(self, i: int) -> int:
        """The storage position of list position ``i`` (``0 <= i < len(self)``).

        It is the least ``p >= i`` with ``p = i + (holes at or before p)``: iterating that from
        ``p = i`` only moves up and stops there, one bisection per step.
        """
        holes = self._holes
        p = i
        while True:
            q = i + bisect_right(holes, p)
            if q == p:
                return p
            p = q

    def _position(self, i: int) -> int:
        """List position ``i`` (negative counts from the end) as a storage position, checked."""
        size = self._n - len(self._holes)
        if i < 0:
            i += size
        if not 0 <= i < size:
            raise IndexError("Vector index out of range")
        if not self._holes:
            return i
        hint = self._hint
        return hint[1] if hint is not None and hint[0] == i else self._phys(i)

    def appended(self, item: Any) -> Vector:
        """A new vector with ``item`` added at the end; ``self`` is unchanged."""
        n, tail = self._n, self._tail
        # a new version, written out as in replaced: appending to a long turn is frequent
        out = _new(Vector)
        out._base = self._base
        out._nb = self._nb
        out._n = n + 1
        out._holes = self._holes
        indexes = out._index = self._index
        out._hint = None
        if len(tail) < _WIDTH:
            out._shift = self._shift
            out._root = self._root
            out._tail = tail + (item,)
        else:  # the tail is full: it becomes a leaf of the trie
            m = n - self._nb  # entries in the trie and tail
            shift, root = self._shift, self._root
            if (m >> _BITS) > (1 << shift):
                root = (root, _path(shift, tail))
                shift += _BITS
            else:
                root = _push_tail(m, shift, root, tail)
            out._shift = shift
            out._root = root
            out._tail = (item,)
        if indexes is not None:
            for key_fn, (multi, index) in indexes.items():
                keys = key_fn(item)
                if not multi and keys not in index and keys is not NO_KEY:
                    index[keys] = n  # a new key (most appends): _add_keys, inlined
                else:
                    _add_keys(index, n, keys, multi)
        counts = out._counts = self._counts
        if counts:
            changed = None
            for pred, c in counts.items():
                if pred(item):
                    if changed is None:
                        changed = dict(counts)
                    changed[pred] = c + 1
            if changed is not None:
                out._counts = changed  # else shared while unchanged
        return out

    def replaced(self, i: int, item: Any, *, same_keys: bool = False, same_counts: bool = False) -> Vector:
        """A new vector with entry ``i`` replaced by ``item``; ``self`` is unchanged.

        Pass ``same_keys=True`` when ``item`` has the same keys as the entry it replaces under
        every index (e.g. a toggled flag on an entry with the same id): it skips the key updates.
        Pass ``same_counts=True`` when ``item`` satisfies every counted predicate as the entry it
        replaces does (e.g. a tool call whose status is unchanged): it skips the count updates.
        """
        tail = self._tail
        j = i - self._n + len(tail)
        if same_keys and not self._holes and (same_counts or not self._counts):
            # The most frequent updates: an entry keyed and counted as before, so the indexes and
            # counts carry over unchanged, either recent, in the tail (a tool call of a long turn),
            # or in a leaf under the root (an entry of a tree of some 1,000, such as a toggle's).
            if 0 <= j < len(tail):
                tail = [*tail]
                tail[j] = item
                tail = tuple(tail)
                root = self._root
            elif j < 0 <= (k := i - self._nb) and self._shift == _BITS:
                root = [*self._root]
                leaf = [*root[k >> _BITS]]
                leaf[k & _MASK] = item
                root[k >> _BITS] = tuple(leaf)
                root = tuple(root)
            else:
                root = None
            if root is not None:
                out = _new(Vector)
                out._base = self._base
                out._nb = self._nb
                out._n = self._n
                out._holes = ()
                out._shift = self._shift
                out._root = root
                out._tail = tail
                out._index = self._index
                out._counts = self._counts if same_counts else None
                out._hint = None
                return out
        if self._holes or not 0 <= i < self._n:
            i = self._position(i)  # a storage position from here on
        src = self
        if i < src._nb:  # inside the shared prefix: move everything into the trie once
            src = Vector._trie(list(self._stored()))
            src._holes, src._index, src._counts = self._holes, self._index, self._counts
        # a new version, written out: this is the most frequent update
        out = _new(Vector)
        out._base = src._base
        out._nb = src._nb
        n = out._n = src._n
        out._holes = src._holes
        shift = out._shift = src._shift
        index = out._index = src._index
        out._hint = None
        counts = src._counts
        if same_counts:
            out._counts = counts
            counts = None
        tail = src._tail
        tailoff = n - len(tail)
        if i >= tailoff:
            j = i - tailoff
            old = tail[j]
            out._root = src._root
            out._tail = _with(tail, j, item)
        else:
            old = src._get(i) if counts or not same_keys else None
            k = i - src._nb  # the position in the trie (the index keeps storage positions, i)
            root = src._root
            if shift == _BITS:  # _assoc at the common depth, written out: a root over leaves
                sub = k >> _BITS
                leaf = [*root[sub]]
                leaf[k & _MASK] = item
                root = [*root]
                root[sub] = tuple(leaf)
                out._root = tuple(root)
            else:
                out._root = _assoc(shift, root, k, item)
            out._tail = tail
        if index is not None and not same_keys:
            for key_fn, (multi, positions) in index.items():
                keys = key_fn(item)
                if old is _HOLE or keys != key_fn(old):  # an entry keyed as before is indexed already
                    _add_keys(positions, i, keys, multi)
        if counts:
            hole = item is _HOLE
            changed = None
            for pred, c in counts.items():  # a loop, not a comprehension: no extra frame
                d = (0 if hole else bool(pred(item))) - bool(pred(old))
                if d:
                    if changed is None:
                        changed = dict(counts)
                    changed[pred] = c + d
            # An unchanged table is shared: count() adds to a table by copying it.
            out._counts = counts if changed is None else changed
        elif not same_counts:
            out._counts = None
        return out

    def removed(self, i: int) -> Vector:
        """A new vector without entry ``i``; ``self`` is unchanged.

        The entry becomes a hole, so nothing after it moves and the indexes stay shared; once
        holes make up an eighth of the storage they are compacted away (indexes remapped).
        """
        p = self._position(i)
        out = self.replaced(i, _HOLE, same_keys=True)
        holes = self._holes
        j = bisect_left(holes, p)
        out._holes = holes[:j] + (p,) + holes[j:] if holes else (p,)
        if len(out._holes) > max(COMPACT_HOLES, out._n >> 3):
            return out._compacted()
        return out

    def _compacted(self) -> Vector:
        holes, n = self._holes, self._n
        stored = list(self._stored())
        for h in reversed(holes):
            del stored[h]
        out = Vector._trie(stored)
        out._counts = self._counts
        if self._index is not None:
            out._index = {}
            # Each storage position's new position (-1 for a hole), computed once for all keys: the
            # positions between two holes move down together, by the holes before them.
            moved = [-1] * n
            start = 0
            for k, h in enumerate(holes):
                moved[start:h] = range(start - k, h - k)
                start = h + 1
            moved[start:] = range(start - len(holes), n - len(holes))
            for key_fn, (multi, index) in self._index.items():
                remapped = {}
                for k, positions in index.items():
                    if type(positions) is int:
                        if positions < n and (q := moved[positions]) >= 0:
                            remapped[k] = q
                        continue
                    kept = [q for p in positions if p < n and (q := moved[p]) >= 0]
                    if kept:
                        remapped[k] = kept if len(kept) > 1 else kept[0]
                out._index[key_fn] = (multi, remapped)
        return out

    def prefix(self, k: int) -> Vector:
        """The first ``k`` entries (rebuilt, keeping the shared index valid when it can)."""
        if k >= len(self):
            return self
        out = Vector.of(self.to_list()[:k])
        if not self._holes:
            out._index = self._index
        return out

    # -- lookups --------------------------------------------------------------------------------

    def _index_of(self, key_fn: KeyFn, multi: bool) -> dict:
        shared = self._index
        entry = shared.get(key_fn) if shared is not None else None
        if entry is None:
            index: dict | None = None
            if multi:
                # Most trees key every entry apart (no key in two places): the keys and their
                # positions go into the dict in bulk, and the loop below runs only when some key
                # repeats or an entry is unkeyed, over the keys already read.
                keys = [() if item is _HOLE else key_fn(item) for item in self._stored()]
                bulk = dict(
                    zip(
                        chain.from_iterable(keys),
                        chain.from_iterable(map(repeat, _naturals(), map(len, keys))),
                        strict=True,
                    )
                )
                if len(bulk) == sum(map(len, keys)) and NO_KEY not in bulk:
                    index = bulk
            if index is None:
                index = {}
                get = index.get
                for i, item in enumerate(self._stored()):  # positions arrive in order: plain appends
                    if item is _HOLE:
                        continue
                    for k in keys[i] if multi else (key_fn(item),):
                        if k is not NO_KEY:
                            positions = get(k)
                            if positions is None:
                                index[k] = i
                            elif type(positions) is int:
                                if positions != i:
                                    index[k] = [positions, i]
                            elif positions[-1] != i:
                                positions.append(i)
            # A new index is this version's (and its later derivations'), in a new table: built
            # here, it lacks what older versions sharing the table held at removed or replaced
            # positions, and what newer ones added; put in the shared table, a lookup on one of
            # those missed their entries (a toggle on an older state dropped).
            self._index = {key_fn: (multi, index)} if shared is None else {**shared, key_fn: (multi, index)}
            return index
        return entry[1]

    def candidates(self, key_fn: KeyFn, key: Any, *, multi: bool = False) -> list[int]:
        """Positions, ascending, that may hold an entry with ``key`` (a superset: check each).

        With ``multi=True``, ``key_fn`` returns a tuple of keys per entry (e.g. its children's ids).
        """
        shared = self._index
        entry = shared.get(key_fn) if shared is not None else None
        positions = (self._index_of(key_fn, multi) if entry is None else entry[1]).get(key)
        if positions is None:
            return []
        if type(positions) is int:
            positions = [positions]
        n = self._n
        if positions[-1] >= n:
            positions = positions[: bisect_left(positions, n)]
        holes = self._holes
        if not holes:
            return positions
        return [p - bisect_left(holes, p) for p in positions if not _in(holes, p)]

    def sole(self, key_fn: KeyFn, key: Any, *, multi: bool = False) -> tuple[int, Any] | None:
        """``(position, entry)`` of the only entry that may be keyed ``key``, in one call: when the
        index names exactly one candidate (check it), no entry is keyed ``STOP`` and none was
        removed. ``None`` otherwise: ask :meth:`candidates`. It is the lookup by id that most
        updates of a long collection make (a tool call in a long turn). ``multi`` as in
        :meth:`candidates`.
        """
        shared = self._index
        entry = shared.get(key_fn) if shared is not None else None
        index = self._index_of(key_fn, multi) if entry is None else entry[1]
        p = index.get(key)
        n = self._n
        if type(p) is not int or p >= n or self._holes or STOP in index:
            return None
        tail = self._tail
        q = p - n + len(tail)
        if q >= 0:
            return p, tail[q]  # a recent entry (most lookups in a long turn) read in place
        k = p - self._nb
        if k >= 0 and self._shift == _BITS:  # a leaf under the root (a tree of some 1,000 entries)
            return p, self._root[k >> _BITS][k & _MASK]
        return p, self._get(p)

    def find(self, key_fn: KeyFn, key: Any) -> int:
        """The first position whose entry has ``key_fn(entry) == key``, else ``-1``."""
        if key is NO_KEY:
            return -1
        # Storage positions are checked in place; a hole never matches (it is not an entry).
        shared = self._index
        entry = shared.get(key_fn) if shared is not None else None
        index = self._index_of(key_fn, False) if entry is None else entry[1]
        positions = index.get(key)
        found = -1
        if positions is not None:
            n = self._n
            for p in (positions,) if type(positions) is int else positions:
                if p >= n:
                    break
                item = self._get(p)
                if item is not _HOLE and key_fn(item) == key:
                    found = p
                    break
        stops = index.get(STOP) if key is not STOP else None
        if stops is not None:  # an entry the search cannot pass, if it comes first, fails it
            stop = self._first(key_fn, STOP, stops)
            if stop >= 0 and (found < 0 or stop < found):
                raise TypeError("the lookup reaches an entry it cannot read")
        if found < 0 or not self._holes:
            return found
        i = found - bisect_left(self._holes, found)
        self._hint = (i, found)
        return i

    def _first(self, key_fn: KeyFn, key: Any, positions: int | list[int]) -> int:
        """The first storage position among the indexed ``positions`` whose entry keys ``key``, else ``-1``."""
        n = self._n
        for p in (positions,) if type(positions) is int else positions:
            if p >= n:
                break
            item = self._get(p)
            if item is not _HOLE and key_fn(item) is key:
                return p
        return -1

    def find_all(self, key_fn: KeyFn, key: Any) -> list[int]:
        """Every position whose entry has ``key_fn(entry) == key``, ascending."""
        if key is NO_KEY:
            return []
        return [i for i in self.candidates(key_fn, key) if key_fn(self[i]) == key]

    def count_where(self, pred: Callable[[Any], Any]) -> int:
        """How many entries satisfy ``pred`` (counted once, then kept up to date by updates)."""
        counts = self._counts
        c = counts.get(pred) if counts is not None else None
        if c is None:  # counted once; the table may be shared with other versions, so it is copied
            c = sum(1 for item in self if pred(item))
            self._counts = {**counts, pred: c} if counts else {pred: c}
        return c

    def differing(self, other: Vector, k: int) -> list[int]:
        """Positions below ``k`` whose entries are not the same object in ``self`` and ``other``.

        Leaves shared by the two versions are skipped whole, so comparing a version with the one
        it was derived from costs O(n / 32) plus the changed leaves.
        """
        if self._base is not other._base or self._holes or other._holes:
            return [i for i, (a, b) in enumerate(zip(self, other, strict=False)) if i < k and a is not b]
        out: list[int] = []
        base = self._nb
        for mine, theirs in zip(
            _leaves(self._root, self._shift), _leaves(other._root, other._shift), strict=False
        ):
            if base >= k:
                break
            if mine is not theirs:
                out.extend(
                    base + j
                    for j, (a, b) in enumerate(zip(mine, theirs, strict=False))
                    if a is not b and base + j < k
                )
            base += _WIDTH
        out.extend(i for i in range(base, k) if self[i] is not other[i])
        return out

    # -- reading like a list --------------------------------------------------------------------

    def __len__(self) -> int:
        return self._n - len(self._holes)

    def __bool__(self) -> bool:
        return self._n > len(self._holes)

    def __getitem__(self, i):
        if type(i) is not int:
            if isinstance(i, slice):
                return self.to_list()[i]
            i = i.__index__()
        if self._holes:
            return self._get(self._position(i))
        if i < 0:
            i += self._n
            if i < 0:
                raise IndexError("Vector index out of range")
        if i < self._nb:  # the shared prefix and the tail inlined: most reads end here
            return self._base[i]
        tail = self._tail
        tailoff = self._n - len(tail)
        if i >= tailoff:
            return tail[i - tailoff]  # raises IndexError past the end
        return self._get(i)

    def _get(self, i: int) -> Any:
        """The entry at storage position ``0 <= i`` (``IndexError`` past the end)."""
        n = self._n
        nb = self._nb
        if i < nb:
            return self._base[i]
        tailoff = n - len(self._tail)
        if i >= tailoff:
            return self._tail[i - tailoff]  # raises IndexError past the end
        i -= nb
        node = self._root
        level = self._shift
        while level > 0:
            node = node[(i >> level) & _MASK]
            level -= _BITS
        return node[i & _MASK]

    def _stored(self) -> Iterator[Any]:
        """Every stored entry in order, holes included."""
        return chain(self._base, chain.from_iterable(_leaves(self._root, self._shift)), self._tail)

    def __iter__(self) -> Iterator[Any]:
        if self._holes:
            return (x for x in self._stored() if x is not _HOLE)
        return self._stored()

    def __reversed__(self) -> Iterator[Any]:
        return reversed(self.to_list())

    def __contains__(self, item: Any) -> bool:
        return any(x is item or x == item for x in self)

    def index(self, item: Any, *bounds: int) -> int:
        """Like ``list.index``."""
        return self.to_list().index(item, *bounds)

    def count(self, item: Any) -> int:
        """Like ``list.count``: how many entries equal ``item``."""
        return sum(1 for x in self if x is item or x == item)

    def copy(self) -> list:
        """Like ``list.copy``: a new plain list."""
        return self.to_list()

    def to_list(self) -> list:
        """The entries as a new plain list (entries themselves are shared, not copied)."""
        return list(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Vector):
            same = self._root is other._root and self._tail is other._tail and self._base is other._base
            if same and self._holes == other._holes:
                return True
            return len(self) == len(other) and all(a is b or a == b for a, b in zip(self, other, strict=True))
        if type(other) is list:
            return len(self) == len(other) and all(a is b or a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None  # type: ignore[assignment]  # unhashable, like the list it stands for

    def __add__(self, other: Any) -> list:
        return self.to_list() + list(other)

    def __radd__(self, other: Any) -> list:
        return list(other) + self.to_list()

    def __mul__(self, n: Any) -> list:
        return self.to_list() * n

    __rmul__ = __mul__

    def __lt__(self, other: Any) -> bool:
        return self.to_list() < _plain(other)

    def __le__(self, other: Any) -> bool:
        return self.to_list() <= _plain(other)

    def __gt__(self, other: Any) -> bool:
        return self.to_list() > _plain(other)

    def __ge__(self, other: Any) -> bool:
        return self.to_list() >= _plain(other)

    @property  # type: ignore[misc]
    def __class__(self):  # noqa: D105
        return _ListFace  # isinstance(v, list) is True: it reads as the list it stands for

    def __repr__(self) -> str:
        return repr(self.to_list())

    def __copy__(self) -> list:
        return self.to_list()

    def __deepcopy__(self, memo: dict) -> list:
        return copy.deepcopy(self.to_list(), memo)

    def __reduce__(self):
        return (list, (self.to_list(),))


def _plain(value: Any) -> Any:
    """A :class:`Vector` as the plain list it stands for (anything else as it is), for ordering."""
    return value.to_list() if type(value) is Vector else value


class _ListFace(list):
    """What ``Vector().__class__`` answers: a list type, so ``isinstance(v, list)`` holds."""


_ListFace.__name__ = _ListFace.__qualname__ = "Vector"


#: What a removed entry leaves behind in storage until the holes are compacted.
_HOLE = NO_KEY
_new = object.__new__


def _in(sorted_positions: tuple[int, ...], p: int) -> bool:
    j = bisect_left(sorted_positions, p)
    return j < len(sorted_positions) and sorted_positions[j] == p


def as_vector(value: Any) -> Vector | None:
    """``value`` as a :class:`Vector` (converting a plain list once), or ``None`` for a non-list."""
    if type(value) is Vector:
        return value
    if type(value) is list:
        return Vector.of(value)
    return None


# -- either form: a plain list while short, a Vector once long ---------------------------------------


def sequence(items: list) -> list | Vector:
    """``items`` in the form its length calls for (a plain list while short)."""
    return items if len(items) <= PLAIN_MAX else Vector.of(items)


def appended(seq: list | Vector, item: Any) -> list | Vector:
    """``seq`` with ``item`` added at the end (``seq`` is unchanged)."""
    if type(seq) is list:
        if len(seq) < PLAIN_MAX:
            return [*seq, item]
        seq = Vector.of(seq)
    return seq.appended(item)


def replaced(
    seq: list | Vector, i: int, item: Any, *, same_keys: bool = False, same_counts: bool = False
) -> list | Vector:
    """``seq`` with entry ``i`` replaced by ``item`` (``seq`` is unchanged)."""
    if type(seq) is list:
        if len(seq) <= PLAIN_MAX:
            out = list(seq)
            out[i] = item
            return out
        seq = Vector.of(seq)
    return seq.replaced(i, item, same_keys=same_keys, same_counts=same_counts)


def removed(seq: list | Vector, i: int) -> list | Vector:
    """``seq`` without entry ``i`` (``seq`` is unchanged)."""
    if type(seq) is Vector:
        return seq.removed(i)
    out = seq.copy()
    del out[i]
    return out


def candidates(seq: list | Vector, key_fn: KeyFn, key: Any, *, multi: bool = False) -> list[int]:
    """Positions that may hold ``key`` (exact for a plain list; a superset for a ``Vector``)."""
    if type(seq) is Vector:
        return seq.candidates(key_fn, key, multi=multi)
    if multi:
        return [i for i, item in enumerate(seq) if key in key_fn(item)]
    return [i for i, item in enumerate(seq) if key_fn(item) == key]


def find(seq: list | Vector, key_fn: KeyFn, key: Any) -> int:
    """The first position whose entry has ``key_fn(entry) == key``, else ``-1``.

    Raises ``TypeError`` when an entry keyed :data:`STOP` comes first.
    """
    if type(seq) is Vector:
        return seq.find(key_fn, key)
    if key is not NO_KEY:
        for i, item in enumerate(seq):
            k = key_fn(item)
            if k == key:
                return i
            if k is STOP:
                raise TypeError("the lookup reaches an entry it cannot read")
    return -1


def find_all(seq: list | Vector, key_fn: KeyFn, key: Any) -> list[int]:
    """Every position whose entry has ``key_fn(entry) == key``."""
    if type(seq) is Vector:
        return seq.find_all(key_fn, key)
    return [] if key is NO_KEY else [i for i, item in enumerate(seq) if key_fn(item) == key]


def count(seq: list | Vector, pred: Callable[[Any], Any]) -> int:
    """How many entries satisfy ``pred``."""
    if type(seq) is Vector:
        return seq.count_where(pred)
    return sum(1 for item in seq if pred(item))


# -- trie helpers ---------------------------------------------------------------------------------


def _path(level: int, node: tuple) -> tuple:
    while level > 0:
        node = (node,)
        level -= _BITS
    return node


def _push_tail(n: int, level: int, parent: tuple, tail: tuple) -> tuple:
    """``parent`` with the full ``tail`` leaf added as the leaf for positions ``n - 32 .. n - 1``."""
    sub = ((n - 1) >> level) & _MASK
    if level == _BITS:
        insert = tail
    elif sub < len(parent):
        insert = _push_tail(n, level - _BITS, parent[sub], tail)
    else:
        insert = _path(level - _BITS, tail)
    return parent[:sub] + (insert,) if sub >= len(parent) else _with(parent, sub, insert)


def _with(node: tuple, j: int, item: Any) -> tuple:
    """``node`` with entry ``j`` replaced (a list copy, then a tuple: the cheapest way in CPython)."""
    out = [*node]
    out[j] = item
    return tuple(out)


def _assoc(level: int, node: tuple, i: int, item: Any) -> tuple:
    """``node`` (a trie level above the leaves at ``level``) with position ``i`` set to ``item``."""
    if level == _BITS:  # the common depth, without recursion: a root over leaves
        sub = (i >> _BITS) & _MASK
        return _with(node, sub, _with(node[sub], i & _MASK, item))
    sub = (i >> level) & _MASK
    return _with(node, sub, _assoc(level - _BITS, node[sub], i, item))


def _leaves(node: tuple, level: int) -> Iterator[tuple]:
    if level == _BITS:
        yield from node
    else:
        for child in node:
            yield from _leaves(child, level - _BITS)


def _add_keys(index: dict, i: int, keys: Any, multi: bool) -> None:
    for key in keys if multi else (keys,):
        if key is NO_KEY:
            continue
        positions = index.get(key)
        if positions is None:
            index[key] = i
        elif type(positions) is int:
            if positions != i:
                index[key] = [positions, i] if positions < i else [i, positions]
        elif positions[-1] < i:
            positions.append(i)
        else:
            j = bisect_left(positions, i)
            if j == len(positions) or positions[j] != i:
                insort(positions, i)
