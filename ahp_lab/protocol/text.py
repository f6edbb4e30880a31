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
caches the result. It answers what a string answers through its operators and methods (``in``,
``+`` either side, ordering, ``format``, slicing, iteration, ``startswith``, ``count``, ``encode``
and every other ``str`` method); what insists on a real ``str`` (``json.loads``, ``re``, ``*``,
``isinstance(text, str)``) takes ``str(text)``. :func:`append_text` keeps a text of up to :data:`TAIL_MAX` characters a plain
``str`` (copying that little costs less than a new object), so short parts stay plain JSON.
"""

from __future__ import annotations

from itertools import chain

__all__ = ["Text", "append_text", "TAIL_MAX", "PAGE_SIZE"]

#: Appends go to a tail string until it holds this many characters; then it becomes a chunk. A
#: short tail is cheaper to copy, and stays within CPython's small-object allocator (objects up to
#: 512 bytes): 256 measured 4-6% faster per streamed delta than 1024.
TAIL_MAX = 256
#: Chunks per page.
PAGE_SIZE = 64


class Text:
    """An immutable string built by appends; see the module docstring."""

    # ``_head`` is ``(pages, page, length of both)``, shared by every version with the same chunks;
    # an append that fits the tail only makes a new object with two pointers.
    __slots__ = ("_head", "_tail")

    def __init__(self, chunks: tuple[str, ...] = ()) -> None:
        page = tuple(chunks)
        self._head: tuple[tuple[tuple[str, ...], ...], tuple[str, ...], int] = (
            (),
            page,
            sum(len(c) for c in page),
        )
        self._tail = ""

    @classmethod
    def of(cls, value: str | Text) -> Text:
        """``value`` as a ``Text`` (a ``Text`` is returned as it is)."""
        return value if isinstance(value, Text) else cls((value,) if value else ())

    def append(self, more: str) -> Text:
        """Return a new ``Text`` equal to ``self + more``; ``self`` is unchanged."""
        if not more:
            return self
        if "\udc00" <= more < "\ue000" and self._ends_high():  # one string comparison, nearly always false
            return self._trimmed().append(_joined(str(self)[-1], more))
        tail = self._tail + more
        out = _new(Text)
        if len(tail) <= TAIL_MAX:
            out._head = self._head
        else:  # the tail becomes a chunk of the current page, or the page a full page
            pages, page, n = self._head
            if len(page) < PAGE_SIZE - 1:
                out._head = (pages, page + (tail,), n + len(tail))
            else:
                out._head = (pages + (page + (tail,),), (), n + len(tail))
            tail = ""
        out._tail = tail
        return out

    def _ends_high(self) -> bool:
        """Whether the text ends with the first half of a surrogate pair."""
        last = self._tail[-1:] or str(self)[-1:]
        return "\ud800" <= last < "\udc00" if last else False

    def _trimmed(self) -> Text:
        """The text without its last character."""
        if self._tail:
            out = _new(Text)
            out._head, out._tail = self._head, self._tail[:-1]
            return out
        return Text.of(str(self)[:-1])

    def __str__(self) -> str:
        pages, page, _ = self._head
        tail = self._tail
        if not pages:
            if not page:
                return tail
            if len(page) == 1 and not tail:
                return page[0]
        joined = "".join(chain(chain.from_iterable(pages), page)) + tail
        # Compact in place: the value is unchanged, later reads are free and appends start from one chunk.
        self._head, self._tail = ((), (joined,), len(joined)), ""
        return joined

    def __len__(self) -> int:
        return self._head[2] + len(self._tail)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Text):
            return len(self) == len(other) and str(self) == str(other)
        if isinstance(other, str):
            return len(self) == len(other) and str(self) == other
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash(str(self))

    def __add__(self, other: str | Text) -> Text:
        return self.append(str(other))

    def __bool__(self) -> bool:
        return self._head[2] > 0 or bool(self._tail)

    def __repr__(self) -> str:
        s = str(self)
        return f"Text({s[:60]!r}{'...' if len(s) > 60 else ''}, len={len(s)})"

    def __radd__(self, other: str) -> str:
        return other + str(self)

    def __contains__(self, part: str | Text) -> bool:
        return _plain(part) in str(self)

    def __mod__(self, values):  # %-formatting of the joined text
        return str(self) % values

    def __iter__(self):
        return iter(str(self))

    def __getitem__(self, item):  # slicing reads the joined text
        return str(self)[item]

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __lt__(self, other: str | Text) -> bool:
        return str(self) < str(other) if isinstance(other, (str, Text)) else NotImplemented

    def __le__(self, other: str | Text) -> bool:
        return str(self) <= str(other) if isinstance(other, (str, Text)) else NotImplemented

    def __gt__(self, other: str | Text) -> bool:
        return str(self) > str(other) if isinstance(other, (str, Text)) else NotImplemented

    def __ge__(self, other: str | Text) -> bool:
        return str(self) >= str(other) if isinstance(other, (str, Text)) else NotImplemented

    def __reduce__(self):
        return (Text, ((str(self),),))


def _plain(value):
    """``value``, a :class:`Text` read as the string it stands for (str's own methods take no other)."""
    return str(value) if type(value) is Text else value


def _str_method(name: str):
    def method(self: Text, *args, **kwargs):
        args = [_plain(a) for a in args]  # another Text (a second streamed content) as its string
        if kwargs:
            kwargs = {k: _plain(v) for k, v in kwargs.items()}
        return getattr(str(self), name)(*args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``str.{name}`` on the joined text."
    return method


# Every other ``str`` method (``startswith``, ``count``, ``encode``, ``splitlines``, ...), on the
# joined text: set on the class, not found through ``__getattr__``, whose hook would slow every
# attribute read of every ``Text`` (some 8% of a streamed delta).
for _name in dir(str):
    if not _name.startswith("_") and not hasattr(Text, _name):
        setattr(Text, _name, _str_method(_name))
del _name

_new = object.__new__


def _joined(high: str, more: str) -> str:
    """``high + more`` where ``high`` is the first half of a surrogate pair and ``more`` starts with
    the second: the two halves become the one character they are, as in a JavaScript string, where
    ``"\ud83d" + "\ude00"`` is ``"😀"`` (two deltas that split a character between them)."""
    low = more[0]
    return chr(0x10000 + ((ord(high) - 0xD800) << 10) + (ord(low) - 0xDC00)) + more[1:]


def append_text(current: object, more: str) -> str | Text:
    """Append ``more`` to a ``str`` or :class:`Text` value.

    The result stays a plain ``str`` while it is no longer than :data:`TAIL_MAX` (a short copy
    costs less than a new ``Text``), and is a ``Text`` beyond that.
    """
    if type(current) is Text:
        return current.append(more)
    if isinstance(current, str):
        if "\udc00" <= more < "\ue000" and "\ud800" <= current[-1:] < "\udc00":
            current, more = current[:-1], _joined(current[-1], more)
        if len(current) + len(more) <= TAIL_MAX:
            return current + more
        return Text.of(current).append(more)
    raise TypeError(f"cannot append text to {type(current).__name__}")
