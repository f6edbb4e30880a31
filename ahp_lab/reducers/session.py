"""Session channel reducer (``ahp-session:/<uuid>``).

Lifecycle, metadata, the chat catalogue, active clients, working directories, the session-level
``inputNeeded`` aggregate and the customization tree (top level first, then children). Long
collections (the chat catalogue, the customization tree and its children) are
:class:`~ahp_lab.protocol.vector.Vector` values found through indexes, so per-action cost does
not grow with them.
"""

from __future__ import annotations

from typing import Any

from ..protocol import vector
from ..protocol.vector import STOP, Vector, appended, find, removed, replaced
from ._js import key, spread, truthy
from ._util import (
    array_of,
    as_int,
    config_changed,
    destructured,
    directory_removed,
    directory_set,
    key_of,
    make_reducer,
    merge,
    put,
    put_many,
    set_field,
    with_flag,
)

IS_READ = 32
IS_ARCHIVED = 64
ACTIVITY_MASK = 0x1F
INPUT_NEEDED = 24


def _awaits_user(entry: Any) -> bool:
    if type(entry) is dict:
        return entry.get("kind") != "toolClientExecution"
    return entry is not None  # a string or number entry: its ``kind`` reads as undefined


def _some_awaits_user(entries: list | Vector) -> bool:
    """``inputNeeded.some(awaitsUser)``, which throws on a null entry it reaches (``TypeError``)."""
    if type(entries) is Vector and entries.find(_id_key, STOP) < 0:  # no null entry: the count is exact
        return entries.count_where(_awaits_user) > 0
    for entry in entries:
        if entry is None:
            raise TypeError("cannot read 'kind' of null")
        if _awaits_user(entry):
            return True
    return False


def input_needed_status(status: Any, entries: list | Vector) -> int:
    """Session status after ``inputNeeded`` changed (reducer-rules §6.1)."""
    s = as_int(status)
    if _some_awaits_user(entries):
        return (s & ~ACTIVITY_MASK) | INPUT_NEEDED
    return s & ~16


# -- lifecycle and catalogue -------------------------------------------------------------------


_resource_key = key_of("resource")
_id_key = key_of("id")


def _find(entries: list | Vector, key_fn, wanted: Any) -> int:
    """:func:`~ahp_lab.protocol.vector.find`, with a short list's scan inlined for a string key.

    For a string ``wanted``, ``entry.get(field) == wanted`` is ``key_fn(entry) == wanted``: only a
    string (or a streamed text equal to it) equals a string. A null entry reached first fails the
    search (``TypeError``), as the reference's callback reading its member throws.
    """
    if type(entries) is list and type(wanted) is str:
        field = key_fn.field
        for i, entry in enumerate(entries):
            if type(entry) is dict:
                if entry.get(field) == wanted:
                    return i
            elif entry is None:
                raise TypeError(f"cannot read {field!r} of null")
        return -1
    return entries.find(key_fn, wanted) if type(entries) is Vector else find(entries, key_fn, wanted)


def _upsert_into(state: dict, field: str, key_fn, item: Any, *, create: bool) -> list | Vector:
    """``state[field]`` with ``item`` upserted by key.

    An absent list is created only for the actions that create one (reducer-rules §3.6:
    ``inputNeededSet``, as ``?? []``); anything else that is not an array has no ``findIndex``, and
    the reference's search throws (``TypeError``; the total reducer leaves the state unchanged).

    As in the reference, an item that is not an object is upserted too: its key reads as undefined,
    so it replaces the first entry without one, else it is appended. The reference reads a missing
    item's key inside its search, so it throws unless the list is empty, where the missing item is
    appended as ``null``.
    """
    entries = state.get(field)
    if type(entries) is not list and type(entries) is not Vector:
        entries = [] if entries is None and create else array_of(entries)
    return _upserted(entries, key_fn, item)


def _upserted(entries: list | Vector, key_fn, item: Any, replacing=None) -> list | Vector:
    """``entries`` with ``item`` upserted by key (see :func:`_upsert_into`).

    ``replacing``, when given, is called with the entry that ``item`` replaces.
    """
    if item is None:
        if len(entries):
            raise TypeError("cannot read the key of a missing item")
        return appended(entries, None)
    i = _find(entries, key_fn, key_fn(item))
    if i < 0:
        return appended(entries, item)
    out = replaced(entries, i, item)
    if replacing is not None:
        replacing(entries[i])
    return out


def _remove_from(
    state: dict, field: str, key_fn, wanted: Any, *, falsy: bool = False
) -> list | Vector | None:
    """``state[field]`` without its first entry keyed ``wanted``; ``None`` when there is none (or,
    with ``falsy``, when the list is falsy: the reference's guard). Anything else that is not an
    array has no ``findIndex``: ``TypeError``, as the reference's search throws."""
    entries = state.get(field)
    if type(entries) is Vector:
        i = entries.find(key_fn, key(wanted))
        return None if i < 0 else entries.removed(i)
    if type(entries) is not list:
        if falsy and not truthy(entries):
            return None
        entries = array_of(entries)
    i = _find(entries, key_fn, key(wanted))
    return None if i < 0 else removed(entries, i)


def _chat_added(state, action, now_ms):
    return put(
        state, "chats", _upsert_into(state, "chats", _resource_key, action.get("summary"), create=False)
    )


def _chat_removed(state, action, now_ms):
    chat = action.get("chat")
    chats = _remove_from(state, "chats", _resource_key, chat)
    if chats is None:
        return state
    out = put(state, "chats", chats)
    if key(state.get("defaultChat")) == key(chat):  # ===
        out.pop("defaultChat", None)
    return out


def _chat_updated(state, action, now_ms):
    chats = array_of(state.get("chats"))
    i = _find(chats, _resource_key, key(action.get("chat")))
    if i < 0:
        return state
    if action.get("changes") is None:
        raise TypeError("cannot destructure the changes")  # as the reference does, once found
    changes = {k: v for k, v in spread(action.get("changes")).items() if k != "resource"}
    return put(state, "chats", replaced(chats, i, merge(spread(chats[i]), changes), same_keys=True))


def _creation_failed(state, action, now_ms):
    return put_many(state, lifecycle="creationFailed", creationError=action.get("error"))


def _changesets_changed(state, action, now_ms):
    destructured(state)  # the changesets are taken out, then set again when there are any
    changesets = action.get("changesets")
    return put(state, "changesets", changesets if truthy(changesets) else None)


# -- metadata ----------------------------------------------------------------------------------


def _flag(field: str, flag: int):
    return lambda state, action, now_ms: put(
        state, "status", with_flag(state.get("status"), flag, action.get(field))
    )


# -- input needed ------------------------------------------------------------------------------


def _input_needed_set(state, action, now_ms):
    if action.get("request") is None:  # even on an empty list: the status reads its kind, and throws
        raise TypeError("cannot read 'kind' of a missing request")
    entries = _upsert_into(state, "inputNeeded", _id_key, action.get("request"), create=True)
    out = state.copy()
    out["inputNeeded"] = entries
    out["status"] = input_needed_status(state.get("status"), entries)
    return out


def _input_needed_removed(state, action, now_ms):
    remaining = _remove_from(state, "inputNeeded", _id_key, action.get("id"), falsy=True)
    if remaining is None:
        return state
    out = state.copy()
    if remaining:
        out["inputNeeded"] = remaining
    else:
        del out["inputNeeded"]
    out["status"] = input_needed_status(state.get("status"), remaining)
    return out


# -- active clients ----------------------------------------------------------------------------

_client_key = key_of("clientId")


def _active_client_set(state, action, now_ms):
    clients = _upsert_into(state, "activeClients", _client_key, action.get("activeClient"), create=False)
    return put(state, "activeClients", clients)


def _active_client_removed(state, action, now_ms):
    clients = _remove_from(state, "activeClients", _client_key, action.get("clientId"))
    return state if clients is None else put(state, "activeClients", clients)


# -- customizations ----------------------------------------------------------------------------
#
# The tree is searched top level first, then children in container order (session-channel §3).
# Both levels are found through indexes: top-level entries by id, containers by the ids of their
# children, and a child in its container by its position, so a toggle or an MCP state change
# costs the same in a tree of 20 or 20,000 (but for the cache, which a large tree outgrows).


#: A container's children are scanned up to this many; a longer list is found through its
#: positions (:func:`_child_positions`).
_SCANNED_CHILDREN = vector.PLAIN_MAX
#: A container's children stay a plain list up to this many; a longer one becomes a Vector.
_LISTED_CHILDREN = 64
#: A customization tree stays a plain list, scanned, up to this many entries (top level and
#: children together); a larger one becomes a Vector with indexes. Scanning a few plugins costs
#: less than the indexes (measured: fuzzed session actions 9% faster at 64 than at 16), while a
#: tree of 10 plugins × 20 children (210) is 40% faster indexed.
_LISTED_TREE = 64


def _child_ids(entry: Any) -> Any:
    """The ids of a container's children, for the tree's child index.

    A container whose children the reference's search cannot pass keys as ``STOP`` too: children
    that are truthy but not an array (``findIndex`` is not a function), or a null child. Building
    the tree's index this way also builds the :func:`_child_positions` of every list too long to
    scan.
    """
    if type(entry) is not dict or entry.get("type") == "mcpServer":
        return ()
    children = entry.get("children")
    if type(children) is list and len(children) > _SCANNED_CHILDREN:
        return _child_positions(children).keys()
    if type(children) is list or type(children) is Vector:
        return _child_keys(children)
    return (STOP,) if truthy(children) else ()


def _child_keys(children: list | Vector) -> list:
    """``_id_key`` of every child, inlined for string ids: this runs for every child of the tree."""
    return [
        (v if type(v := c.get("id")) is str else key(v)) if type(c) is dict else _id_key(c) for c in children
    ]


#: A container's children list id -> (the list, its positions); the lists are kept alive, so the
#: ids stay valid. A list replaced through :func:`_child_replaced` hands its positions to the new
#: list. The table is cleared once the lists it keeps alive hold more than ``_HELD_MAX`` children
#: (a bound on the memory it keeps from being freed); a list looked up again rebuilds its positions.
_POSITIONS: dict[int, tuple[list, dict]] = {}
_HELD_MAX = 1 << 18
_held = 0  # children in the lists the table holds


def _child_positions(children: list) -> dict:
    """``{key: first position}`` of the children's ids (``STOP``: the first null child).

    Built once per list, when the tree's child index is, and handed on as a toggle or an MCP
    state change replaces the list: a child is found without reading its siblings, whose reads
    miss the cache once the tree is larger than it.
    """
    known = _POSITIONS.get(id(children))  # the table keeps its lists alive: the id is this list's
    if known is not None:
        return known[1]
    keys = _child_keys(children)
    # last positions first, so that a repeated key keeps its first
    positions = dict(zip(reversed(keys), range(len(keys) - 1, -1, -1), strict=True))
    _remember(children, positions)
    return positions


def _remember(children: list, positions: dict) -> None:
    global _held
    if _held + len(children) > _HELD_MAX:
        _POSITIONS.clear()  # rebuilt as they are needed
        _held = 0
    _POSITIONS[id(children)] = (children, positions)
    _held += len(children)


def _hand_over(children: list, out: list) -> None:
    """Give ``children``'s positions to ``out``, the same list with one child replaced (same id)."""
    global _held
    known = _POSITIONS.pop(id(children), None)
    if known is not None:
        _held -= len(children)
        _remember(out, known[1])


def _forget(entry: Any) -> None:
    """Drop the positions of ``entry``'s children, which leave the tree (the container is replaced or
    removed, or its list loses a child), so that the table does not keep them alive. A state that
    still holds them (an older version) finds its children by rebuilding the positions."""
    global _held
    children = entry.get("children") if type(entry) is dict else None
    if type(children) is list and _POSITIONS.pop(id(children), None) is not None:
        _held -= len(children)


def _tree(state: dict) -> list | Vector | None:
    """The customization tree, or ``None`` when it is not an array.

    A tree with more entries (top level and children together) than ``_LISTED_TREE`` becomes a
    :class:`Vector`, indexed by id and by child id; a smaller one stays a plain list, scanned.
    """
    tree = state.get("customizations")
    if type(tree) is Vector:
        return tree
    if type(tree) is not list:
        return None
    small = _LISTED_TREE
    size = len(tree)
    if size <= small:
        for entry in tree:  # children counted whatever the entry's type: a bound, cheaply
            if type(entry) is dict:
                children = entry.get("children")
                if type(children) is list or type(children) is Vector:
                    size += len(children)
        if size <= small:
            return tree
    return Vector.of(tree)


def _tree_read(state: dict) -> list | Vector | None:
    """:func:`_tree` for the actions that search it: ``None`` when it is absent or falsy (a no-op),
    ``TypeError`` when it is something else that is not an array (the reference's
    ``list.findIndex`` throws)."""
    tree = _tree(state)
    if tree is None and truthy(state.get("customizations")):
        raise TypeError("customizations.findIndex is not a function")
    return tree


def indexed(state: Any) -> Any:
    """``state`` (a session's) with a large customization tree held as a :class:`Vector` whose
    indexes, by id and by child id, are built: what the first action on that tree would build,
    once. Loading a session pays it (10 ms for 1,000 plugins of 20 children) instead of the first
    toggle. The result equals ``state``."""
    if type(state) is not dict:
        return state
    tree = _tree(state)
    if type(tree) is not Vector:
        return state
    tree.find(_id_key, STOP)
    tree.candidates(_child_ids, STOP, multi=True)
    return state if tree is state.get("customizations") else {**state, "customizations": tree}


def _child_position(children: list | Vector, cid: Any) -> int:
    """The position of child ``cid`` in a container's children, else ``-1``.

    ``TypeError`` when a null child comes first, as the reference's search reading its id throws.
    """
    if type(children) is Vector:
        return children.find(_id_key, cid)
    if len(children) <= _SCANNED_CHILDREN:
        return _find(children, _id_key, cid)
    positions = _child_positions(children)
    j = positions.get(cid, -1)
    stop = positions.get(STOP)
    if stop is not None and (j < 0 or stop < j):
        raise TypeError("cannot read 'id' of null")
    return j


def _child_replaced(children: list | Vector, j: int, child: Any) -> list | Vector:
    """``children`` with child ``j`` replaced by one with the same id.

    A list short enough stays a list, and keeps its positions, which the same ids leave valid.
    """
    if type(children) is list and len(children) <= _LISTED_CHILDREN:
        out = children.copy()
        out[j] = child
        if len(children) > _SCANNED_CHILDREN:
            _hand_over(children, out)
        return out
    return replaced(children, j, child, same_keys=True)


def _searched(entry: Any, cid: Any) -> tuple[list | Vector, int] | None:
    """``(children, position of cid)`` when the reference's child search in ``entry`` finds ``cid``.

    ``None`` when ``entry`` is not searched (not an object, an MCP server, falsy children) or has no
    child ``cid``; ``TypeError`` where that search throws: children that are not an array, or a
    null child before the match.
    """
    if type(entry) is not dict:
        if entry is None:
            raise TypeError("cannot read 'type' of null")
        return None
    if entry.get("type") == "mcpServer":
        return None
    children = entry.get("children")
    if type(children) is not list and type(children) is not Vector:
        if truthy(children):
            raise TypeError("children.findIndex is not a function")
        return None
    j = _child_position(children, cid)
    return None if j < 0 else (children, j)


def _containers_with(tree: list | Vector, cid: Any, every: bool) -> list[tuple[int, dict, Any, int]]:
    """``(position, container, its children, child position)`` of the first container with a child
    ``cid``, or of every one, as the reference's loop (the first) or map (every) finds them.

    Its search throws (``TypeError``) on a container it reaches whose children it cannot search:
    the loop reaches the containers up to the first match, the map every container.
    """
    found = []
    if type(tree) is list:  # a small tree: every container in order, as the reference goes
        for i, entry in enumerate(tree):
            hit = _searched(entry, cid)
            if hit is not None:
                found.append((i, entry, hit[0], hit[1]))
                if not every:
                    break
        return found
    # A large one through the child index: the one container with a child cid when no container
    # could fail the search (most lookups), else the containers with a child cid, then those that
    # the search could fail on (few) among the ones it reaches.
    sole = tree.sole(_child_ids, cid, multi=True)
    if sole is not None:
        hit = _searched(sole[1], cid)
        return [] if hit is None else [(sole[0], sole[1], hit[0], hit[1])]
    for i in tree.candidates(_child_ids, cid, multi=True):
        entry = tree[i]
        hit = _searched(entry, cid)
        if hit is not None:
            found.append((i, entry, hit[0], hit[1]))
            if not every:
                break
    hazards = tree.candidates(_child_ids, STOP, multi=True)
    if hazards:
        reached = found[0][0] if found and not every else len(tree)
        matched = {f[0] for f in found}
        for i in hazards:
            if i >= reached:
                break
            if i not in matched:
                _searched(tree[i], cid)  # raises if the search fails here
    return found


def _customization_toggled(state, action, now_ms):
    tree = _tree_read(state)
    if tree is None:
        return state
    cid, enabled = key(action.get("id")), action.get("enabled")
    i = _find(tree, _id_key, cid)
    if i >= 0:
        entry = put(spread(tree[i]), "enabled", enabled)
        return put(state, "customizations", replaced(tree, i, entry, same_keys=True))
    for i, entry, children, j in _containers_with(tree, cid, every=False):
        child = put(spread(children[j]), "enabled", enabled)
        entry = put(entry, "children", _child_replaced(children, j, child))
        return put(state, "customizations", replaced(tree, i, entry, same_keys=True))
    return state


def _customizations_changed(state, action, now_ms):
    old = state.get("customizations") if type(state) is dict else None  # (the reference reads none)
    if type(old) is list or type(old) is Vector:
        for entry in old:
            _forget(entry)
    return put(state, "customizations", action.get("customizations"))


def _customization_updated(state, action, now_ms):
    item = action.get("customization")
    tree = [] if state.get("customizations") is None else array_of(_tree(state))  # ?? []
    return put(state, "customizations", _upserted(tree, _id_key, item, _forget))


def _customization_removed(state, action, now_ms):
    tree = _tree_read(state)
    if tree is None:
        return state
    cid = key(action.get("id"))
    i = _find(tree, _id_key, cid)
    if i >= 0:
        _forget(tree[i])
        return put(state, "customizations", removed(tree, i))
    out = tree
    for i, entry, children, j in _containers_with(tree, cid, every=True):
        _forget(entry)
        out = replaced(out, i, put(entry, "children", removed(children, j)))
    return state if out is tree else put(state, "customizations", out)


def _mcp_update(state: dict, cid: Any, server_state: Any, channel: Any) -> dict:
    """Write ``state``/``channel`` onto the MCP server(s) with id ``cid`` (session-channel §3.3)."""
    tree = _tree_read(state)
    if tree is None:
        return state
    cid = key(cid)

    def update(entry: dict) -> dict:
        return put_many(entry, state=server_state, channel=channel)

    i = _find(tree, _id_key, cid)
    if i >= 0:
        if tree[i].get("type") != "mcpServer":
            return state
        return put(state, "customizations", replaced(tree, i, update(tree[i]), same_keys=True))
    out = tree
    for i, entry, children, j in _containers_with(tree, cid, every=True):
        if type(children[j]) is dict and children[j].get("type") == "mcpServer":
            entry = put(entry, "children", _child_replaced(children, j, update(children[j])))
            out = replaced(out, i, entry, same_keys=True)
    return state if out is tree else put(state, "customizations", out)


reduce_session = make_reducer(
    "session",
    {
        "session/ready": lambda s, a, n: put(s, "lifecycle", "ready"),
        "session/creationFailed": _creation_failed,
        "session/chatAdded": _chat_added,
        "session/chatRemoved": _chat_removed,
        "session/chatUpdated": _chat_updated,
        "session/defaultChatChanged": set_field("defaultChat"),
        "session/titleChanged": set_field("title"),
        "session/isReadChanged": _flag("isRead", IS_READ),
        "session/isArchivedChanged": _flag("isArchived", IS_ARCHIVED),
        "session/activityChanged": set_field("activity"),
        "session/changesetsChanged": _changesets_changed,
        "session/configChanged": lambda s, a, n: config_changed(s, a),
        "session/metaChanged": set_field("_meta"),
        "session/serverToolsChanged": set_field("serverTools", "tools"),
        "session/activeClientSet": _active_client_set,
        "session/activeClientRemoved": _active_client_removed,
        "session/workingDirectorySet": directory_set,
        "session/workingDirectoryRemoved": directory_removed,
        "session/inputNeededSet": _input_needed_set,
        "session/inputNeededRemoved": _input_needed_removed,
        "session/customizationsChanged": _customizations_changed,
        "session/customizationToggled": _customization_toggled,
        "session/customizationUpdated": _customization_updated,
        "session/customizationRemoved": _customization_removed,
        "session/mcpServerStateChanged": lambda s, a, n: _mcp_update(
            s, a.get("id"), a.get("state"), a.get("channel")
        ),
        "session/mcpServerStartRequested": lambda s, a, n: _mcp_update(
            s, a.get("id"), {"kind": "starting"}, None
        ),
        "session/mcpServerStopRequested": lambda s, a, n: _mcp_update(
            s, a.get("id"), {"kind": "stopped"}, None
        ),
    },
)
