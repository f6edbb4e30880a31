"""Session channel state and the session catalogue (session-channel.md §1, root-channel.md §4)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .annotation import AnnotationsSummary
from .base import URI, Int, OpaqueMap, SessionStatus, WireModel, tagged_union
from .changeset import Changeset
from .chat import (
    ChatInputRequest,
    ChatSummary,
    ToolCallAuthRequiredState,
    ToolCallConfirmationState,
    ToolCallRunningState,
)
from .common import ConfigPropertySchema, ErrorInfo
from .customizations import ClientPluginCustomization, Customization

__all__ = [
    "ProjectInfo",
    "ToolAnnotations",
    "ToolDefinition",
    "SessionActiveClient",
    "SessionConfigPropertySchema",
    "SessionConfigSchema",
    "SessionConfigState",
    "ChatInputSessionInputRequest",
    "ToolConfirmationSessionInputRequest",
    "ToolClientExecutionSessionInputRequest",
    "ToolAuthenticationSessionInputRequest",
    "SessionInputRequest",
    "SessionMetadata",
    "SessionState",
    "SessionChanges",
    "SessionSummary",
    "PartialSessionSummary",
]


class ProjectInfo(WireModel):
    uri: URI
    display_name: str


class ToolAnnotations(WireModel):
    """All advisory."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


class ToolDefinition(WireModel):
    #: flat namespace shared by server and client tools (open string)
    name: str
    title: str | None = None
    description: str | None = None
    #: JSON Schema ``{type:"object", properties?, required?}``, kept verbatim
    input_schema: OpaqueMap | None = None
    output_schema: OpaqueMap | None = None
    annotations: ToolAnnotations | None = None
    meta: OpaqueMap | None = Field(None, alias="_meta")


class SessionActiveClient(WireModel):
    #: equals the ``clientId`` from ``initialize``
    client_id: str
    display_name: str | None = None
    #: client-executed tools
    tools: list[ToolDefinition]
    #: plugins published by this client
    customizations: list[ClientPluginCustomization] | None = None


class SessionConfigPropertySchema(ConfigPropertySchema):
    #: values come from ``sessionConfigCompletions``; ``enum`` holds seeds
    enum_dynamic: bool | None = None
    #: may be changed after creation via ``session/configChanged``
    session_mutable: bool | None = None


class SessionConfigSchema(WireModel):
    type: Literal["object"] = "object"
    properties: dict[str, SessionConfigPropertySchema]
    required: list[str] | None = None


class SessionConfigState(WireModel):
    schema_: SessionConfigSchema = Field(alias="schema")
    values: OpaqueMap


# ---------------------------------------------------------------- inputNeeded (by kind)


class _SessionInputRequestBase(WireModel):
    #: opaque, unique in the list
    id: str
    #: the chat to answer on
    chat: URI


class ChatInputSessionInputRequest(_SessionInputRequestBase):
    kind: Literal["chatInput"] = "chatInput"
    request: ChatInputRequest


class ToolConfirmationSessionInputRequest(_SessionInputRequestBase):
    kind: Literal["toolConfirmation"] = "toolConfirmation"
    turn_id: str
    tool_call: ToolCallConfirmationState


class ToolClientExecutionSessionInputRequest(_SessionInputRequestBase):
    """Delegated work for the owning client; does not block the user."""

    kind: Literal["toolClientExecution"] = "toolClientExecution"
    turn_id: str
    client_id: str
    tool_call: ToolCallRunningState


class ToolAuthenticationSessionInputRequest(_SessionInputRequestBase):
    kind: Literal["toolAuthentication"] = "toolAuthentication"
    turn_id: str
    tool_call: ToolCallAuthRequiredState


SessionInputRequest = tagged_union(
    "kind",
    [
        ChatInputSessionInputRequest,
        ToolConfirmationSessionInputRequest,
        ToolClientExecutionSessionInputRequest,
        ToolAuthenticationSessionInputRequest,
    ],
)


# ---------------------------------------------------------------- state and catalogue


class SessionMetadata(WireModel):
    """Fields shared by :class:`SessionState` and :class:`SessionSummary`."""

    #: agent provider id
    provider: str
    title: str
    status: SessionStatus
    activity: str | None = None
    project: ProjectInfo | None = None
    working_directories: list[URI] | None = None
    #: absent ⇒ no annotations channel
    annotations: AnnotationsSummary | None = None


class SessionState(SessionMetadata):
    #: ``"creating" | "ready" | "creationFailed"``
    lifecycle: str
    creation_error: ErrorInfo | None = None
    server_tools: list[ToolDefinition] | None = None
    active_clients: list[SessionActiveClient]
    chats: list[ChatSummary]
    default_chat: URI | None = None
    config: SessionConfigState | None = None
    customizations: list[Customization] | None = None
    changesets: list[Changeset] | None = None
    input_needed: list[SessionInputRequest] | None = None
    meta: OpaqueMap | None = Field(None, alias="_meta")


class SessionChanges(WireModel):
    """Roll-up of file changes on a catalogue entry."""

    additions: Int | None = None
    deletions: Int | None = None
    files: Int | None = None


class SessionSummary(SessionMetadata):
    """Catalogue entry (``listSessions``, ``root/sessionAdded``)."""

    resource: URI
    #: ISO 8601
    created_at: str
    modified_at: str
    changes: SessionChanges | None = None
    meta: OpaqueMap | None = Field(None, alias="_meta")


class PartialSessionSummary(WireModel):
    """``Partial<SessionSummary>`` (``root/sessionSummaryChanged.changes``): every field optional."""

    resource: URI | None = None
    provider: str | None = None
    title: str | None = None
    status: SessionStatus | None = None
    activity: str | None = None
    project: ProjectInfo | None = None
    working_directories: list[URI] | None = None
    annotations: AnnotationsSummary | None = None
    created_at: str | None = None
    modified_at: str | None = None
    changes: SessionChanges | None = None
    meta: OpaqueMap | None = Field(None, alias="_meta")
