"""Changeset catalogue and channel state (other-channels.md §2)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import URI, OpaqueMap, WireModel, tagged_union
from .common import ErrorInfo, FileEdit, StringOrMarkdown, TextRange

__all__ = [
    "ChangesetCapabilities",
    "Changeset",
    "ChangesetFile",
    "ChangesetOperation",
    "ChangesetState",
    "ResourceChangesetOperationTarget",
    "RangeChangesetOperationTarget",
    "ChangesetOperationTarget",
]


class ChangesetCapabilities(WireModel):
    #: present (``{}``) ⇒ per-file review supported
    review: OpaqueMap | None = None


class Changeset(WireModel):
    """Catalogue entry in ``SessionState.changesets``."""

    label: str
    #: RFC 6570 template (``{turnId}``, ``{originalTurnId}``/``{modifiedTurnId}``)
    uri_template: str
    description: str | None = None
    #: open string; known: ``session``, ``branch``, ``uncommitted``, ``turn``, ``compare-turns``
    change_kind: str
    capabilities: ChangesetCapabilities | None = None


class ChangesetFile(WireModel):
    id: str
    edit: FileEdit
    #: absent = not reviewed
    reviewed: bool | None = None
    meta: OpaqueMap | None = Field(None, alias="_meta")


class ChangesetOperation(WireModel):
    id: str
    label: str
    description: str | None = None
    #: ``"changeset" | "resource" | "range"`` entries
    scopes: list[str]
    #: present ⇒ confirm first (destructive styling)
    confirmation: StringOrMarkdown | None = None
    #: the spec leaves the shape of ``icon`` and ``group`` open; kept verbatim
    icon: Any = None
    group: Any = None
    #: ``"idle" | "running" | "error" | "disabled"``
    status: str
    error: ErrorInfo | None = None


class ChangesetState(WireModel):
    #: ``"computing" | "ready" | "error"``
    status: str
    error: ErrorInfo | None = None
    files: list[ChangesetFile]
    operations: list[ChangesetOperation] | None = None


class ResourceChangesetOperationTarget(WireModel):
    kind: Literal["resource"] = "resource"
    resource: URI
    #: ``"before" | "after"``
    side: str | None = None


class RangeChangesetOperationTarget(WireModel):
    kind: Literal["range"] = "range"
    resource: URI
    side: str | None = None
    range: TextRange


ChangesetOperationTarget = tagged_union(
    "kind", [ResourceChangesetOperationTarget, RangeChangesetOperationTarget]
)
