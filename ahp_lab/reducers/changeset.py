"""Changeset channel reducer: files of a change, their review flags, and operations."""

from __future__ import annotations

from ._js import array_from, key, spread
from ._util import (
    array_of,
    destructured,
    find_index,
    keyed,
    make_reducer,
    member,
    put,
    put_many,
    remove_handler,
    replace_at,
    upsert_handler,
)


def _status_changed(state, action, now_ms):
    status = action.get("status")
    if status != "error":
        destructured(state)  # the error is taken out
    return put_many(state, status=status, error=action.get("error") if status == "error" else None)


def _operations_changed(state, action, now_ms):
    operations = action.get("operations")
    if operations is None:
        destructured(state)  # the operations are taken out
    return put(state, "operations", operations)


def _files_review_changed(state, action, now_ms):
    # As the reference: ``new Set(action.files)`` (a string gives its characters, a missing list
    # none), then every file whose id is in it and whose ``reviewed`` differs under ``===``.
    listed = action.get("files")
    ids = {key(f) for f in ([] if listed is None else array_from(listed))}
    reviewed = action.get("reviewed")
    wanted = key(reviewed)
    files = array_of(state.get("files"))  # the reference maps over it
    out, changed = list(files), False
    for i, file in enumerate(files):
        if key(member(file, "id")) in ids and key(member(file, "reviewed")) != wanted:
            out[i] = put(spread(file), "reviewed", reviewed)
            changed = True
    return put(state, "files", out) if changed else state


def _content_changed(state, action, now_ms):
    out = put(state, "files", action.get("files"))
    if action.get("operations") is not None:
        out["operations"] = action["operations"]
    return put(out, "error", action.get("error"))


def _operation_status_changed(state, action, now_ms):
    if "operations" not in state:  # absent: unchanged; anything else (null too) has no findIndex
        return state
    operations = array_of(state["operations"])
    i = find_index(operations, keyed("id", action.get("operationId")))
    if i < 0:
        return state
    status = action.get("status")
    operation = put_many(
        spread(operations[i]), status=status, error=action.get("error") if status == "error" else None
    )
    return put(state, "operations", replace_at(operations, i, operation))


def _cleared(state, action, now_ms):
    files = state.get("files")
    if files is None:
        raise TypeError("files is missing")  # the reference reads its length, and throws
    length = len(files) if isinstance(files, (list, str)) else member(files, "length")
    if key(length) == key(0):  # `files.length === 0`
        return state
    return put(state, "files", [])


reduce_changeset = make_reducer(
    "changeset",
    {
        "changeset/statusChanged": _status_changed,
        "changeset/fileSet": upsert_handler("files", "file", "id"),
        "changeset/fileRemoved": remove_handler("files", "fileId", "id"),
        "changeset/filesReviewChanged": _files_review_changed,
        "changeset/contentChanged": _content_changed,
        "changeset/operationsChanged": _operations_changed,
        "changeset/operationStatusChanged": _operation_status_changed,
        "changeset/cleared": _cleared,
    },
)
