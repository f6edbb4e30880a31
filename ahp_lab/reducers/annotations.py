"""Annotations channel reducer: review comments anchored to files produced by turns."""

from __future__ import annotations

from ._js import spread
from ._util import (
    as_list,
    find_index,
    keyed,
    make_reducer,
    member,
    pick,
    put,
    remove_at,
    remove_handler,
    replace_at,
    upsert,
    upsert_handler,
)


def _annotation(state, action):
    annotations = as_list(state.get("annotations"))
    return annotations, find_index(annotations, keyed("id", action.get("annotationId")))


def _updated(state, action, now_ms):
    annotations, i = _annotation(state, action)
    if i < 0:
        return state
    updated = {**spread(annotations[i]), **pick(action, ("turnId", "resource", "range", "resolved"))}
    return put(state, "annotations", replace_at(annotations, i, updated))


def _entry_set(state, action, now_ms):
    annotations, i = _annotation(state, action)
    if i < 0:
        return state
    entries = member(annotations[i], "entries")
    if not isinstance(entries, list):  # the reference searches the entries: a missing list throws
        return state
    updated = put(spread(annotations[i]), "entries", upsert(entries, "id", action.get("entry")))
    return put(state, "annotations", replace_at(annotations, i, updated))


def _entry_removed(state, action, now_ms):
    annotations, i = _annotation(state, action)
    if i < 0:
        return state
    entries = as_list(member(annotations[i], "entries"))
    j = find_index(entries, keyed("id", action.get("entryId")))
    if j < 0:
        return state
    updated = put(spread(annotations[i]), "entries", remove_at(entries, j))
    return put(state, "annotations", replace_at(annotations, i, updated))


reduce_annotations = make_reducer(
    "annotations",
    {
        "annotations/set": upsert_handler("annotations", "annotation", "id"),
        "annotations/updated": _updated,
        "annotations/removed": remove_handler("annotations", "annotationId", "id"),
        "annotations/entrySet": _entry_set,
        "annotations/entryRemoved": _entry_removed,
    },
)
