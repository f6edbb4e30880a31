"""Small helpers shared by the channel reducers.

Reducer state is JSON-shaped (dicts with camelCase keys, lists, strings, numbers, booleans). Helpers
here never mutate their arguments: they return a shallow copy with the change, so untouched
subtrees are shared between the old and the new state.

``None`` stands for JSON ``null``, which AHP treats exactly like an absent key: reading a missing key
and reading ``null`` both give ``None``, and writing ``None`` removes the key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..protocol.vector import STOP
from ._js import array_from, key, spread, to_string, to_uint32, truthy

Json = Any
Action = dict[str, Any]
Handler = Callable[[Any, Action, int], Any]
Log = Callable[[str], None]


class _Null(dict):
    """A ``null`` state as the raising reducers read it: empty when spread (``{...null}`` is
    ``{}``), a ``TypeError`` when a member is read, as the reference's reading throws."""

    def _read(self, *args: Any) -> Any:
        raise TypeError("Cannot read properties of null")

    get = __getitem__ = __contains__ = _read


_NULL = _Null()


def destructured(state: Any) -> None:
    """Where the reference takes members out of the state by destructuring it, which throws on a
    null state (the raising reducers' ``_Null``)."""
    if type(state) is _Null:
        raise TypeError("Cannot destructure 'state' as it is null")


def put(obj: dict, key: str, value: Any) -> dict:
    """Copy of ``obj`` with ``key`` set to ``value``, or removed when ``value`` is ``None``."""
    out = dict(obj)
    if value is None:
        out.pop(key, None)
    else:
        out[key] = value
    return out


def put_many(obj: dict, **changes: Any) -> dict:
    out = dict(obj)
    for name, value in changes.items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = value
    return out


def merge(target: dict | None, payload: dict | None) -> dict:
    """Shallow merge used by AHP merges: payload keys win, a payload ``null`` removes the key."""
    out = dict(target or {})
    for name, value in (payload or {}).items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = value
    return out


def pick(source: dict, keys: Iterable[str]) -> dict:
    """The present (non-null) members of ``source`` among ``keys``."""
    out = {}
    for k in keys:  # a loop, not a comprehension: no extra frame, one lookup per key
        value = source.get(k)
        if value is not None:
            out[k] = value
    return out


def replace_at(items: list, index: int, value: Any) -> list:
    out = list(items)
    out[index] = value
    return out


def remove_at(items: list, index: int) -> list:
    return items[:index] + items[index + 1 :]


def find_index(items: list | None, pred: Callable[[Any], bool]) -> int:
    if not items:
        return -1
    for i, item in enumerate(items):
        if pred(item):
            return i
    return -1


def member(item: Any, field: str) -> Any:
    """``item[field]`` as JavaScript reads it: undefined (``None``) on a string, number or array.

    Reading a member of ``null`` throws in JavaScript, and here (a ``TypeError``, which makes the
    action a no-op): a lookup that reaches a null entry fails as the reference's does.
    """
    if type(item) is dict:
        return item.get(field)
    if item is None:
        raise TypeError(f"cannot read {field!r} of null")
    return None


def key_of(field: str) -> Callable[[Any], Any]:
    """The key function of entries keyed by ``field``: ``entry[field]`` under ``===``.

    A string, number, boolean or array entry keys as undefined (``None``), as JavaScript reads a
    member of it. A null entry makes the reference's lookup throw when it reaches it: it keys as
    :data:`~ahp_lab.protocol.vector.STOP`, which fails a search that reaches it first.
    """

    def key_fn(entry: Any) -> Any:
        if type(entry) is not dict:
            return STOP if entry is None else None
        value = entry.get(field)
        return value if type(value) is str else key(value)

    key_fn.__name__ = f"{field}_key"
    key_fn.field = field  # type: ignore[attr-defined]  # read by session._find
    return key_fn


def keyed(field: str, value: Any) -> Callable[[Any], bool]:
    """Predicate: an entry whose ``field`` is ``value`` under JavaScript ``===``."""
    wanted = key(value)
    return lambda item: key(member(item, field)) == wanted


def upsert(items: list | None, key: str, item: Any) -> list:
    """Replace the first element whose ``key`` equals ``item[key]`` in place, else append.

    ``item`` need not be an object: its key then reads as undefined, as in the reference. The
    reference reads a missing item's key inside its search, so that throws (``TypeError``: the
    action is a no-op) unless the list is empty, where the missing item is appended as ``null``.
    """
    items = items or []
    if item is None:
        if items:
            raise TypeError(f"cannot read {key!r} of undefined")
        return [None]
    i = find_index(items, keyed(key, member(item, key)))
    return replace_at(items, i, item) if i >= 0 else [*items, item]


def array_of(value: Any) -> list:
    """``value`` as the array an array method (``find``, ``filter``, ``map``) is called on: anything
    else has no such method, and the call throws (``TypeError``)."""
    if isinstance(value, list):
        return value
    raise TypeError(f"{type(value).__name__} has no array methods")


#: A status bitset as an unsigned 32-bit int, as JavaScript's bitwise operators read it.
as_int = to_uint32


def with_flag(status: Any, flag: int, on: Any) -> int:
    """``status`` with ``flag`` set when ``on`` is truthy (JavaScript truthiness), else cleared."""
    s = as_int(status)
    return s | flag if truthy(on) else s & ~flag


def make_reducer(channel: str, handlers: dict[str, Handler]):
    """Build a total reducer ``(state, action, now_ms=0, log=None) -> state`` from per-type handlers.

    Unknown action types return the very same state object. A malformed action (wrong JSON types)
    that trips a handler is a no-op too, whatever it raises (a ``TypeError`` where the reference's
    JavaScript would throw, an ``OverflowError``, …): handlers never mutate, so the input state is
    intact. Only ``RecursionError`` (input nested past Python's stack) propagates.

    ``reduce.raising`` is the same reducer for a replay that must stop where the reference throws
    (the replay CLI): the ``TypeError`` that models a throw propagates.
    """

    get_handler = handlers.get

    def build(total: bool):
        def reduce(
            state: Any, action: Any, now_ms: int | Callable[[], int] = 0, log: Log | None = None
        ) -> Any:
            if type(now_ms) is not int and callable(now_ms):  # the spec's clock: a function
                now_ms = now_ms()
            if type(action) is dict:
                kind = action.get("type")
                if type(kind) is str and type(state) is dict:
                    handler = get_handler(kind)
                    if handler is not None:
                        try:
                            return handler(state, action, now_ms)
                        # input nested past Python's stack: the caller's limits' business
                        except RecursionError:
                            raise
                        except Exception as exc:  # noqa: BLE001 - handlers never mutate their input: a no-op
                            if not total and isinstance(exc, TypeError):
                                raise
                            if log is not None:
                                log(f"Malformed {kind} action ignored by the {channel} reducer: {exc}")
                            return state
                elif type(kind) is str and get_handler(kind) is not None:
                    # A state that is not an object reads as its spread, as the reference's
                    # ``{...state, ...}`` makes it (an array's or a string's entries by index, else
                    # nothing); where that makes no change, the state is returned as it was. A null
                    # one reads as nothing too, but where the reference reads a member of it, it
                    # throws: the raising reducer raises there.
                    if state is None and not total:
                        return handler_of_null(kind, action, now_ms)
                    view = spread(state)
                    out = reduce(view, action, now_ms, log)
                    return state if out is view else out
            else:
                if action is None and not total:  # the reference reads action.type
                    raise TypeError("Cannot read properties of null (reading 'type')")
                kind = None
            if log is not None:
                log(f"Unhandled action type: {kind!r} on the {channel} reducer")
            return state

        def handler_of_null(kind: str, action: dict, now_ms: int) -> Any:
            out = get_handler(kind)(_NULL, action, now_ms)
            return None if out is _NULL else out

        return reduce

    reduce = build(total=True)
    reduce.__name__ = f"reduce_{channel}"
    reduce.__qualname__ = reduce.__name__
    reduce.__doc__ = f"Pure reducer for the {channel} channel: ``(state, action, now_ms) -> state``."
    reduce.handled_types = frozenset(handlers)  # type: ignore[attr-defined]
    reduce.raising = build(total=False)  # type: ignore[attr-defined]
    return reduce


def config_changed(state: dict, action: Action) -> dict:
    """``root/configChanged`` and ``session/configChanged``: merge or replace ``config.values``.

    As the reference: a falsy ``config`` is a no-op, and any other is spread (a string or array by
    index; ``values`` reads as undefined on anything but an object).
    """
    config = state.get("config")
    if not truthy(config):
        return state
    payload = spread(action.get("config"))
    if truthy(action.get("replace")):
        values = dict(payload)
    else:
        values = merge(spread(config.get("values") if type(config) is dict else None), payload)
    return put(state, "config", put(spread(config), "values", values))


def directory_set(state: dict, action: Action, now_ms: int) -> dict:
    """``session|chat/workingDirectorySet``: append if absent (creating the list).

    A missing directory is appended as ``null`` unless one is there, as the reference's
    ``includes(undefined)`` and append do. Off-type lists behave as there too: a string's
    ``includes`` tests a substring and its spread gives its characters; a number, boolean or
    object has no ``includes``, and the action is a no-op.
    """
    directory = action.get("directory")
    dirs = state.get("workingDirectories")
    if dirs is None:
        dirs = []
    elif isinstance(dirs, str):
        if to_string(directory) in dirs:
            return state
        dirs = array_from(dirs)
    elif not isinstance(dirs, list):
        raise TypeError("workingDirectories.includes is not a function")
    wanted = key(directory)
    if any(key(d) == wanted for d in dirs):
        return state
    return put(state, "workingDirectories", [*dirs, directory])


def directory_removed(state: dict, action: Action, now_ms: int) -> dict:
    """``session|chat/workingDirectoryRemoved``: remove the first equal entry (may leave ``[]``).

    Off-type lists behave as the reference's ``indexOf`` then ``splice`` do: a falsy one is left
    alone; a string's ``indexOf`` finds a substring, and then it has no ``splice``; a number,
    boolean or object has no ``indexOf``. Either throws.
    """
    dirs = state.get("workingDirectories")
    if not truthy(dirs):
        return state
    directory = action.get("directory")
    if isinstance(dirs, str):
        if to_string(directory) in dirs:
            raise TypeError("workingDirectories.splice is not a function")
        return state
    if not isinstance(dirs, list):
        raise TypeError("workingDirectories.indexOf is not a function")
    wanted = key(directory)
    i = find_index(dirs, lambda d: key(d) == wanted)
    return state if i < 0 else put(state, "workingDirectories", remove_at(dirs, i))


def set_field(field: str, key: str | None = None) -> Handler:
    """Handler that unconditionally sets ``field`` from the action's ``key`` (absent ⇒ removed)."""
    key = key or field
    return lambda state, action, now_ms: put(state, field, action.get(key))


def upsert_handler(field: str, payload: str, key: str) -> Handler:
    """Handler upserting ``action[payload]`` into the list ``state[field]`` by ``key``."""

    def handler(state: dict, action: Action, now_ms: int) -> dict:
        items = array_of(state.get(field))  # the reference searches the list: anything else throws
        return put(state, field, upsert(items, key, action.get(payload)))

    return handler


def remove_handler(field: str, id_field: str, key: str) -> Handler:
    """Handler removing the first element of ``state[field]`` whose ``key`` is ``action[id_field]``."""

    def handler(state: dict, action: Action, now_ms: int) -> dict:
        items = array_of(state.get(field))  # the reference searches the list: anything else throws
        i = find_index(items, keyed(key, action.get(id_field)))
        return state if i < 0 else put(state, field, remove_at(items, i))

    return handler
