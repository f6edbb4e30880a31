"""Annotations channel reducer: review comments anchored to files produced by turns."""

from __future__ import annotations

from ._js import spread
from ._util import (
    array_of,
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
    annotations = array_of(state.get("annotations"))  # the reference searches it: anything else throws
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
    entries = array_of(member(annotations[i], "entries"))  # the reference searches them too
    updated = put(spread(annotations[i]), "entries", upsert(entries, "id", action.get("entry")))
    return put(state, "annotations", replace_at(annotations, i, updated))


def _entry_removed(state, action, now_ms):
    annotations, i = _annotation(state, action)
    if i < 0:
        return state
    entries = array_of(member(annotations[i], "entries"))
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
