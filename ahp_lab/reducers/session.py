"""Session channel reducer (``ahp-session:/<uuid>``).

Lifecycle, metadata, the chat catalogue, active clients, working directories, the session-level
``inputNeeded`` aggregate and the customization tree (top level first, then children).
"""

from __future__ import annotations

from typing import Any

from ._util import (
    as_int,
    as_list,
    config_changed,
    directory_removed,
    directory_set,
    find_index,
    keyed,
    make_reducer,
    merge,
    put,
    put_many,
    remove_at,
    remove_handler,
    replace_at,
    set_field,
    upsert,
    upsert_handler,
    with_flag,
)

IS_READ = 32
IS_ARCHIVED = 64
ACTIVITY_MASK = 0x1F
INPUT_NEEDED = 24


def input_needed_status(status: Any, entries: list) -> int:
    """Session status after ``inputNeeded`` changed (reducer-rules §6.1)."""
    s = as_int(status)
    if any(isinstance(e, dict) and e.get("kind") != "toolClientExecution" for e in entries):
        return (s & ~ACTIVITY_MASK) | INPUT_NEEDED
    return s & ~16


# -- lifecycle and catalogue -------------------------------------------------------------------


def _chat_removed(state, action, now_ms):
    chat = action.get("chat")
    chats = as_list(state.get("chats"))
    i = find_index(chats, keyed("resource", chat))
    if i < 0:
        return state
    out = put(state, "chats", remove_at(chats, i))
    if state.get("defaultChat") == chat:
        out.pop("defaultChat", None)
    return out


def _chat_updated(state, action, now_ms):
    chats = as_list(state.get("chats"))
    i = find_index(chats, keyed("resource", action.get("chat")))
    if i < 0:
        return state
    changes = {k: v for k, v in (action.get("changes") or {}).items() if k != "resource"}
    return put(state, "chats", replace_at(chats, i, merge(chats[i], changes)))


def _creation_failed(state, action, now_ms):
    return put_many(state, lifecycle="creationFailed", creationError=action.get("error"))


# -- metadata ----------------------------------------------------------------------------------


def _flag(field: str, flag: int):
    return lambda state, action, now_ms: put(
        state, "status", with_flag(state.get("status"), flag, bool(action.get(field)))
    )


# -- active clients and working directories -----------------------------------------------------


# -- input needed ------------------------------------------------------------------------------


def _input_needed_set(state, action, now_ms):
    request = action.get("request")
    if not isinstance(request, dict):
        return state
    entries = upsert(as_list(state.get("inputNeeded")), "id", request)
    return put_many(state, inputNeeded=entries, status=input_needed_status(state.get("status"), entries))


def _input_needed_removed(state, action, now_ms):
    entries = state.get("inputNeeded")
    i = find_index(entries, keyed("id", action.get("id")))
    if i < 0:
        return state
    remaining = remove_at(entries, i)
    return put_many(
        state,
        inputNeeded=remaining or None,
        status=input_needed_status(state.get("status"), remaining),
    )


# -- customizations ----------------------------------------------------------------------------


def is_container(entry: Any) -> bool:
    """A top-level entry whose children are searched: anything but an MCP server, with a children list."""
    return (
        isinstance(entry, dict)
        and entry.get("type") != "mcpServer"
        and isinstance(entry.get("children"), list)
    )


def _customization_toggled(state, action, now_ms):
    tree = state.get("customizations")
    if not isinstance(tree, list):
        return state
    cid, enabled = action.get("id"), action.get("enabled")
    i = find_index(tree, keyed("id", cid))
    if i >= 0:
        return put(state, "customizations", replace_at(tree, i, put(tree[i], "enabled", enabled)))
    for i, entry in enumerate(tree):
        if not is_container(entry):
            continue
        children = entry["children"]
        j = find_index(children, keyed("id", cid))
        if j >= 0:
            child = put(children[j], "enabled", enabled)
            return put(
                state,
                "customizations",
                replace_at(tree, i, put(entry, "children", replace_at(children, j, child))),
            )
    return state


def _customization_removed(state, action, now_ms):
    tree = state.get("customizations")
    if not isinstance(tree, list):
        return state
    cid = action.get("id")
    i = find_index(tree, keyed("id", cid))
    if i >= 0:
        return put(state, "customizations", remove_at(tree, i))
    out, changed = list(tree), False
    for i, entry in enumerate(tree):
        if is_container(entry):
            j = find_index(entry["children"], keyed("id", cid))
            if j >= 0:
                out[i] = put(entry, "children", remove_at(entry["children"], j))
                changed = True
    return put(state, "customizations", out) if changed else state


def _mcp_update(state: dict, cid: Any, server_state: Any, channel: Any) -> dict:
    """Write ``state``/``channel`` onto the MCP server(s) with id ``cid`` (session-channel §3.3)."""
    tree = state.get("customizations")
    if not isinstance(tree, list):
        return state

    def update(entry: dict) -> dict:
        return put_many(entry, state=server_state, channel=channel)

    i = find_index(tree, keyed("id", cid))
    if i >= 0:
        if tree[i].get("type") != "mcpServer":
            return state
        return put(state, "customizations", replace_at(tree, i, update(tree[i])))
    out, changed = list(tree), False
    for i, entry in enumerate(tree):
        if not is_container(entry):
            continue
        children = entry["children"]
        j = find_index(children, keyed("id", cid))
        if j >= 0 and children[j].get("type") == "mcpServer":
            out[i] = put(entry, "children", replace_at(children, j, update(children[j])))
            changed = True
    return put(state, "customizations", out) if changed else state


reduce_session = make_reducer(
    "session",
    {
        "session/ready": lambda s, a, n: put(s, "lifecycle", "ready"),
        "session/creationFailed": _creation_failed,
        "session/chatAdded": upsert_handler("chats", "summary", "resource"),
        "session/chatRemoved": _chat_removed,
        "session/chatUpdated": _chat_updated,
        "session/defaultChatChanged": set_field("defaultChat"),
        "session/titleChanged": set_field("title"),
        "session/isReadChanged": _flag("isRead", IS_READ),
        "session/isArchivedChanged": _flag("isArchived", IS_ARCHIVED),
        "session/activityChanged": set_field("activity"),
        "session/changesetsChanged": set_field("changesets"),
        "session/configChanged": lambda s, a, n: config_changed(s, a),
        "session/metaChanged": set_field("_meta"),
        "session/serverToolsChanged": set_field("serverTools", "tools"),
        "session/activeClientSet": upsert_handler("activeClients", "activeClient", "clientId"),
        "session/activeClientRemoved": remove_handler("activeClients", "clientId", "clientId"),
        "session/workingDirectorySet": directory_set,
        "session/workingDirectoryRemoved": directory_removed,
        "session/inputNeededSet": _input_needed_set,
        "session/inputNeededRemoved": _input_needed_removed,
        "session/customizationsChanged": set_field("customizations"),
        "session/customizationToggled": _customization_toggled,
        "session/customizationUpdated": upsert_handler("customizations", "customization", "id"),
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
