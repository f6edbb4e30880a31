"""Streamed text that appends cheaply and still behaves like the plain string the wire carries.

`chat/delta` and `chat/reasoning` append to a response part's ``content`` thousands of times per
turn. Rebuilding a Python ``str`` on every append copies the whole text, which is quadratic over a
turn. :class:`Text` keeps the text as a short *tail* string, to which small appends are added
(copying at most :data:`TAIL_MAX` characters), over a stack of chunks whose lengths shrink
geometrically from bottom to top (a binary-counter rope): a full tail is pushed as one chunk and
only the small chunks on top are merged, so every character is copied O(log n) times over the
whole stream, and the stack stays O(log n) deep. Every ``Text`` is immutable; appending returns a
new one that shares the chunks with its predecessor, so reducers stay pure and old states stay
valid.

A ``Text`` compares equal to the equal ``str`` (and hashes like it), serializes as a plain string
through :func:`ahp_lab.protocol.jsonvalue.to_json` / ``dumps``, and ``str(text)`` joins it once and
caches the result.
"""

from __future__ import annotations

__all__ = ["Text", "append_text", "TAIL_MAX"]

#: Appends go to a tail string until it holds this many characters; then it becomes a chunk.
TAIL_MAX = 256


class Text:
    """An immutable string built by appends; see the module docstring."""

    __slots__ = ("_chunks", "_tail", "_len", "_joined")

    def __init__(self, chunks: tuple[str, ...] = ()) -> None:
        self._chunks = chunks
        self._tail = ""
        self._len = sum(len(c) for c in chunks)
        self._joined: str | None = chunks[0] if len(chunks) == 1 else ("" if not chunks else None)

    @classmethod
    def of(cls, value: str | Text) -> Text:
        return value if isinstance(value, Text) else cls((value,) if value else ())

    def append(self, more: str) -> Text:
        """Return a new ``Text`` equal to ``self + more``; ``self`` is unchanged."""
        if not more:
            return self
        out = Text.__new__(Text)
        tail = self._tail + more
        if len(tail) <= TAIL_MAX:
            out._chunks = self._chunks
            out._tail = tail
        else:
            stack = list(self._chunks)
            stack.append(tail)
            # Merge while the chunk below is not at least twice as long as the top one.
            while len(stack) >= 2 and len(stack[-2]) < 2 * len(stack[-1]):
                top = stack.pop()
                stack[-1] = stack[-1] + top
            out._chunks = tuple(stack)
            out._tail = ""
        out._len = self._len + len(more)
        out._joined = None
        return out

    def __str__(self) -> str:
        joined = self._joined
        if joined is None:
            joined = "".join(self._chunks) + self._tail
            # Compact in place: the value is unchanged, later appends start from one chunk.
            self._chunks = (joined,)
            self._tail = ""
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
