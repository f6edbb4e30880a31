"""Streamed text that appends cheaply and still behaves like the plain string the wire carries.

`chat/delta` and `chat/reasoning` append to a response part's ``content`` thousands of times per
turn. Rebuilding a Python ``str`` on every append copies the whole text, which is quadratic over a
turn. :class:`Text` keeps the text as a short *tail* string, to which small appends are added
(copying at most :data:`TAIL_MAX` characters), over fixed chunks that are never copied again: a
full tail becomes a chunk of the current *page* (a tuple of at most :data:`PAGE_SIZE` chunks), and
a full page joins the tuple of pages. An append therefore copies O(TAIL_MAX) characters and
O(PAGE_SIZE) pointers at worst, whatever the length, and every version shares all of its chunks
with the versions before and after it, so keeping old states (the store's checkpoints) costs
little. Every ``Text`` is immutable; appending returns a new one, so reducers stay pure and old
states stay valid.

A ``Text`` compares equal to the equal ``str`` (and hashes like it), serializes as a plain string
through :func:`ahp_lab.protocol.jsonvalue.to_json` / ``dumps``, and ``str(text)`` joins it once and
caches the result.
"""

from __future__ import annotations

from itertools import chain

__all__ = ["Text", "append_text", "TAIL_MAX", "PAGE_SIZE"]

#: Appends go to a tail string until it holds this many characters; then it becomes a chunk.
TAIL_MAX = 1024
#: Chunks per page.
PAGE_SIZE = 64


class Text:
    """An immutable string built by appends; see the module docstring."""

    __slots__ = ("_pages", "_page", "_tail", "_len", "_joined")

    def __init__(self, chunks: tuple[str, ...] = ()) -> None:
        self._pages: tuple[tuple[str, ...], ...] = ()
        self._page = tuple(chunks)
        self._tail = ""
        self._len = sum(len(c) for c in chunks)
        self._joined: str | None = chunks[0] if len(chunks) == 1 else ("" if not chunks else None)

    @classmethod
    def of(cls, value: str | Text) -> Text:
        """``value`` as a ``Text`` (a ``Text`` is returned as it is)."""
        return value if isinstance(value, Text) else cls((value,) if value else ())

    def append(self, more: str) -> Text:
        """Return a new ``Text`` equal to ``self + more``; ``self`` is unchanged."""
        if not more:
            return self
        out = Text.__new__(Text)
        tail = self._tail + more
        if len(tail) <= TAIL_MAX:
            out._pages, out._page, out._tail = self._pages, self._page, tail
        elif len(self._page) < PAGE_SIZE - 1:
            out._pages, out._page, out._tail = self._pages, (*self._page, tail), ""
        else:
            out._pages, out._page, out._tail = (*self._pages, (*self._page, tail)), (), ""
        out._len = self._len + len(more)
        out._joined = None
        return out

    def __str__(self) -> str:
        joined = self._joined
        if joined is None:
            joined = "".join(chain(chain.from_iterable(self._pages), self._page)) + self._tail
            # Compact in place: the value is unchanged, later appends start from one chunk.
            self._pages, self._page, self._tail = (), (joined,), ""
            self._joined = joined
        return joined

    def __len__(self) -> int:
        return self._len

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Text):
            return self._len == other._len and str(self) == str(other)
        if isinstance(other, str):
            return self._len == len(other) and str(self) == other
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash(str(self))

    def __add__(self, other: str | Text) -> Text:
        return self.append(str(other))

    def __bool__(self) -> bool:
        return self._len > 0

    def __repr__(self) -> str:
        s = str(self)
        return f"Text({s[:60]!r}{'...' if len(s) > 60 else ''}, len={self._len})"

    def endswith(self, suffix: str) -> bool:
        return str(self).endswith(suffix)

    def __getitem__(self, item):  # slicing reads the joined text
        return str(self)[item]

    def __reduce__(self):
        return (Text, ((str(self),),))


def append_text(current: object, more: str) -> Text:
    """Append ``more`` to a ``str`` or :class:`Text` value, returning a ``Text``."""
    if type(current) is Text:
        return current.append(more)
    if isinstance(current, str):
        return Text.of(current).append(more)
    raise TypeError(f"cannot append text to {type(current).__name__}")
