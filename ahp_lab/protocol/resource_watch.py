"""Resource-watch channel state (other-channels.md §4)."""

from __future__ import annotations

from .base import URI, WireModel

__all__ = ["ResourceWatchPatterns", "ResourceWatchState", "ResourceChange", "ResourceChanges"]


class ResourceWatchPatterns(WireModel):
    items: list[str]


class ResourceWatchState(WireModel):
    """Fixed for the watch's lifetime."""

    root: URI
    recursive: bool
    excludes: ResourceWatchPatterns | None = None
    includes: ResourceWatchPatterns | None = None


class ResourceChange(WireModel):
    uri: URI
    #: ``"added" | "updated" | "deleted"``
    type: str


class ResourceChanges(WireModel):
    items: list[ResourceChange]
