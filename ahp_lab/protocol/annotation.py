"""Annotations channel state (other-channels.md §3)."""

from __future__ import annotations

from pydantic import Field

from .base import URI, Int, OpaqueMap, WireModel
from .common import StringOrMarkdown, TextRange

__all__ = ["AnnotationEntry", "Annotation", "AnnotationsState", "AnnotationsSummary"]


class AnnotationEntry(WireModel):
    id: str
    text: StringOrMarkdown
    meta: OpaqueMap | None = Field(None, alias="_meta")


class Annotation(WireModel):
    id: str
    #: anchor: file versions produced by that turn
    turn_id: str
    resource: URI
    #: absent ⇒ whole file
    range: TextRange | None = None
    resolved: bool
    entries: list[AnnotationEntry]
    meta: OpaqueMap | None = Field(None, alias="_meta")


class AnnotationsState(WireModel):
    annotations: list[Annotation]


class AnnotationsSummary(WireModel):
    """Host-maintained summary on the session (``SessionState.annotations``)."""

    resource: URI
    annotation_count: Int
    entry_count: Int
