"""Command params/results (overview.md §3.1–§3.6, §7) and notification params (§3.3–§3.4, §4).

Every command params type carries ``channel`` (the target channel, or the literal
``"ahp-root://"`` for connection-level commands) and an optional ``_meta``. ``COMMANDS`` maps each
method to ``(params model, result type)``; ``NOTIFICATIONS`` maps each notification method to its
params model.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .actions import StateAction
from .annotation import AnnotationsState
from .base import URI, Int, Number, OpaqueMap, WireModel, kinded_union, tagged_union
from .changeset import ChangesetOperationTarget, ChangesetState
from .chat import ChatSource, ChatState, Message, MessageAttachment
from .common import ContentRef, Implementation, ProtectedResourceMetadata, StringOrMarkdown
from .resource_watch import ResourceWatchPatterns, ResourceWatchState
from .root import RootState
from .session import (
    PartialSessionSummary,
    SessionActiveClient,
    SessionConfigSchema,
    SessionState,
    SessionSummary,
)
from .terminal import TerminalClaim, TerminalState

__all__ = [
    "ROOT_CHANNEL",
    "ChannelState",
    "Snapshot",
    # commands
    "CommandParams",
    "EmptyResult",
    "ClientCapabilities",
    "InitializeParams",
    "TelemetryChannels",
    "InitializeResult",
    "PingParams",
    "ReconnectParams",
    "ReconnectReplayResult",
    "ReconnectSnapshotResult",
    "ReconnectResult",
    "DeliveryOptions",
    "ViewOptions",
    "SubscribeParams",
    "SubscribeResult",
    "ForkSpec",
    "CreateSessionParams",
    "DisposeSessionParams",
    "CreateChatParams",
    "DisposeChatParams",
    "CreateTerminalParams",
    "DisposeTerminalParams",
    "CreateResourceWatchParams",
    "CreateResourceWatchResult",
    "ListSessionsParams",
    "ListSessionsResult",
    "ResolveSessionConfigParams",
    "ResolveSessionConfigResult",
    "SessionConfigCompletionsParams",
    "SessionConfigCompletionItem",
    "SessionConfigCompletionsResult",
    "FetchTurnsParams",
    "FetchTurnsResult",
    "CompletionsParams",
    "CompletionItem",
    "CompletionsResult",
    "AuthenticateParams",
    "AuthenticateResult",
    "InvokeChangesetOperationParams",
    "ChangesetOperationFollowUp",
    "InvokeChangesetOperationResult",
    "ResourceReadParams",
    "ResourceReadResult",
    "ResourceWriteParams",
    "ResourceWriteResult",
    "ResourceListParams",
    "ResourceListEntry",
    "ResourceListResult",
    "ResourceCopyParams",
    "ResourceCopyResult",
    "ResourceDeleteParams",
    "ResourceDeleteResult",
    "ResourceMoveParams",
    "ResourceMoveResult",
    "ResourceResolveParams",
    "ResourceResolveResult",
    "ResourceMkdirParams",
    "ResourceMkdirResult",
    "ResourceRequestParams",
    "ResourceRequestResult",
    # error data
    "UnsupportedProtocolVersionErrorData",
    "AuthRequiredErrorData",
    "PermissionDeniedErrorData",
    # notifications
    "UnsubscribeParams",
    "DispatchActionParams",
    "ActionOrigin",
    "ActionEnvelope",
    "SessionAddedParams",
    "SessionRemovedParams",
    "SessionSummaryChangedParams",
    "ProgressParams",
    "AuthRequiredParams",
    "OtlpExportParams",
    "COMMANDS",
    "HOST_TO_CLIENT_COMMANDS",
    "NOTIFICATIONS",
]

ROOT_CHANNEL = "ahp-root://"

# ====================================================================== snapshots

_STATE_CLASSES: dict[str, type[WireModel]] = {
    "root": RootState,
    "session": SessionState,
    "chat": ChatState,
    "terminal": TerminalState,
    "changeset": ChangesetState,
    "annotations": AnnotationsState,
    "resourceWatch": ResourceWatchState,
}
_STATE_BY_CLASS = {cls: kind for kind, cls in _STATE_CLASSES.items()}


def _state_kind(value: Any) -> str | None:
    """Guess a snapshot state's channel kind from its required keys (``raw`` if unrecognised)."""
    kind = _STATE_BY_CLASS.get(type(value))
    if kind is not None:
        return kind
    if not isinstance(value, dict):
        return None
    if "lifecycle" in value:
        return "session"
    if "agents" in value:
        return "root"
    if "turns" in value:
        return "chat"
    if "claim" in value and "content" in value:
        return "terminal"
    if "files" in value and "status" in value:
        return "changeset"
    if "annotations" in value:
        return "annotations"
    if "root" in value and "recursive" in value:
        return "resourceWatch"
    return "raw"


#: Any channel state. A snapshot does not name its channel kind, so the kind is recognised by the
#: state's required keys (``lifecycle`` → session, ``agents`` → root, ``turns`` → chat, …);
#: anything else is kept as a raw object.
ChannelState = kinded_union(
    "ChannelState",
    {**_STATE_CLASSES, "raw": dict[str, Any]},
    _state_kind,
    "ahp_channel_state",
    "must be a channel state object",
)


class Snapshot(WireModel):
    resource: URI
    state: ChannelState
    #: later actions on that channel have ``serverSeq > fromSeq``
    from_seq: Int


# ====================================================================== commands


class CommandParams(WireModel):
    channel: URI
    meta: OpaqueMap | None = Field(None, alias="_meta")


class EmptyResult(WireModel):
    """``{}``."""


class ClientCapabilities(WireModel):
    #: ``{}`` ⇒ the client can render MCP Apps
    mcp_apps: OpaqueMap | None = None


class InitializeParams(CommandParams):
    #: SemVer, most preferred first
    protocol_versions: list[str]
    client_id: str
    client_info: Implementation | None = None
    initial_subscriptions: list[URI] | None = None
    #: BCP 47
    locale: str | None = None
    capabilities: ClientCapabilities | None = None


class TelemetryChannels(WireModel):
    logs: URI | None = None
    traces: URI | None = None
    metrics: URI | None = None


class InitializeResult(WireModel):
    protocol_version: str
    server_seq: Int
    server_info: Implementation | None = None
    snapshots: list[Snapshot]
    default_directory: URI | None = None
    completion_trigger_characters: list[str] | None = None
    #: currently ``"!"``; absent ⇒ no command-prefix support
    terminal_command_prefix: str | None = None
    telemetry: TelemetryChannels | None = None


class PingParams(WireModel):
    """``ping`` params (may be omitted entirely); result ``null``."""

    channel: URI | None = None
    meta: OpaqueMap | None = Field(None, alias="_meta")


class ReconnectParams(CommandParams):
    client_id: str
    last_seen_server_seq: Int
    subscriptions: list[URI]


class DeliveryOptions(WireModel):
    #: advisory; ``0`` asks for no intentional delay
    max_latency_ms: Number | None = None


class ViewOptions(WireModel):
    #: advisory number of most-recent completed turns
    turns: Int | None = None


class SubscribeParams(CommandParams):
    delivery: DeliveryOptions | None = None
    view: ViewOptions | None = None


class SubscribeResult(WireModel):
    """``{snapshot?}`` (``{}`` for stateless channels)."""

    snapshot: Snapshot | None = None


class ForkSpec(WireModel):
    session: URI
    turn_id: str


class CreateSessionParams(CommandParams):
    provider: str | None = None
    working_directories: list[URI] | None = None
    fork: ForkSpec | None = None
    #: values from ``resolveSessionConfig``
    config: OpaqueMap | None = None
    active_client: SessionActiveClient | None = None
    progress_token: str | None = None


class DisposeSessionParams(CommandParams):
    pass


class CreateChatParams(CommandParams):
    """``channel`` is the owning session; ``chat`` the client-chosen chat URI."""

    chat: URI
    initial_message: Message | None = None
    source: ChatSource | None = None
    working_directories: list[URI] | None = None


class DisposeChatParams(CommandParams):
    pass


class CreateTerminalParams(CommandParams):
    claim: TerminalClaim
    name: str | None = None
    cwd: URI | None = None
    cols: Int | None = None
    rows: Int | None = None


class DisposeTerminalParams(CommandParams):
    pass


class CreateResourceWatchParams(CommandParams):
    uri: URI
    recursive: bool | None = None
    excludes: ResourceWatchPatterns | None = None
    includes: ResourceWatchPatterns | None = None


class CreateResourceWatchResult(WireModel):
    #: an ``ahp-resource-watch:/…`` URI
    channel: URI


class ListSessionsParams(CommandParams):
    limit: Int | None = None
    cursor: str | None = None


class ListSessionsResult(WireModel):
    items: list[SessionSummary]
    next_cursor: str | None = None


class ResolveSessionConfigParams(CommandParams):
    provider: str | None = None
    working_directory: URI | None = None
    config: OpaqueMap | None = None


class ResolveSessionConfigResult(WireModel):
    schema_: SessionConfigSchema = Field(alias="schema")
    values: OpaqueMap


class SessionConfigCompletionsParams(ResolveSessionConfigParams):
    property: str
    query: str | None = None


class SessionConfigCompletionItem(WireModel):
    value: str
    label: str
    description: str | None = None


class SessionConfigCompletionsResult(WireModel):
    items: list[SessionConfigCompletionItem]


class FetchTurnsParams(CommandParams):
    cursor: str | None = None


class FetchTurnsResult(EmptyResult):
    """``{}``; the turns arrive as a ``chat/turnsLoaded`` action before the response."""


class CompletionsParams(CommandParams):
    #: ``"userMessage"``
    kind: str
    text: str
    #: UTF-16 code units, ``0 ≤ offset ≤ len(text)``
    offset: Int


class CompletionItem(WireModel):
    insert_text: str
    range_start: Int | None = None
    range_end: Int | None = None
    #: keep its ``_meta`` verbatim
    attachment: MessageAttachment


class CompletionsResult(WireModel):
    items: list[CompletionItem]


class AuthenticateParams(CommandParams):
    resource: str
    token: str
    scopes: list[str] | None = None


class AuthenticateResult(EmptyResult):
    pass


class InvokeChangesetOperationParams(CommandParams):
    operation_id: str
    target: ChangesetOperationTarget | None = None


class ChangesetOperationFollowUp(WireModel):
    content: ContentRef
    external: bool | None = None


class InvokeChangesetOperationResult(WireModel):
    message: StringOrMarkdown | None = None
    follow_up: ChangesetOperationFollowUp | None = None


class ResourceReadParams(CommandParams):
    uri: URI
    #: ``"base64" | "utf-8"``
    encoding: str | None = None


class ResourceReadResult(WireModel):
    data: str
    encoding: str
    content_type: str | None = None


class ResourceWriteParams(CommandParams):
    uri: URI
    data: str
    encoding: str
    content_type: str | None = None
    create_only: bool | None = None
    #: ``"truncate" | "append" | "insert"`` (default truncate)
    mode: str | None = None
    #: bytes (default 0)
    position: Number | None = None
    if_match: str | None = None


class ResourceWriteResult(EmptyResult):
    pass


class ResourceListParams(CommandParams):
    uri: URI


class ResourceListEntry(WireModel):
    name: str
    #: ``"file" | "directory"``
    type: str


class ResourceListResult(WireModel):
    entries: list[ResourceListEntry]


class ResourceCopyParams(CommandParams):
    source: URI
    destination: URI
    fail_if_exists: bool | None = None


class ResourceCopyResult(EmptyResult):
    pass


class ResourceDeleteParams(CommandParams):
    uri: URI
    recursive: bool | None = None


class ResourceDeleteResult(EmptyResult):
    pass


class ResourceMoveParams(CommandParams):
    source: URI
    destination: URI
    fail_if_exists: bool | None = None


class ResourceMoveResult(EmptyResult):
    pass


class ResourceResolveParams(CommandParams):
    uri: URI
    #: default true
    follow_symlinks: bool | None = None


class ResourceResolveResult(WireModel):
    uri: URI
    #: ``"file" | "directory" | "symlink"``
    type: str
    size: Number | None = None
    mtime: Number | None = None
    ctime: Number | None = None
    content_type: str | None = None
    etag: str | None = None


class ResourceMkdirParams(CommandParams):
    uri: URI


class ResourceMkdirResult(EmptyResult):
    pass


class ResourceRequestParams(CommandParams):
    uri: URI
    read: bool | None = None
    write: bool | None = None


class ResourceRequestResult(EmptyResult):
    pass


class UnsupportedProtocolVersionErrorData(WireModel):
    """``data`` of error -32005 (entries are versions or SemVer ranges)."""

    supported_versions: list[str] | None = None


class AuthRequiredErrorData(WireModel):
    """``data`` of error -32007 (required)."""

    resources: list[ProtectedResourceMetadata]


class PermissionDeniedErrorData(WireModel):
    """``data`` of error -32009: the grant that would unlock the call."""

    request: ResourceRequestParams | None = None


# ====================================================================== notifications


class UnsubscribeParams(WireModel):
    channel: URI


class DispatchActionParams(WireModel):
    channel: URI
    client_seq: Int
    action: StateAction


class ActionOrigin(WireModel):
    client_id: str
    client_seq: Int


class ActionEnvelope(WireModel):
    """Params of the host → client ``action`` notification."""

    channel: URI
    action: StateAction
    #: one global counter; may exceed 2^31
    server_seq: Int
    #: absent for host-originated actions (omitted, never ``null``)
    origin: ActionOrigin | None = None
    #: present only when the host rejected a client-dispatched action
    rejection_reason: str | None = None


class SessionAddedParams(WireModel):
    channel: URI
    summary: SessionSummary


class SessionRemovedParams(WireModel):
    channel: URI
    session: URI


class SessionSummaryChangedParams(WireModel):
    channel: URI
    session: URI
    #: identity fields ``resource``/``provider``/``createdAt`` are ignored if present
    changes: PartialSessionSummary


class ProgressParams(WireModel):
    channel: URI
    progress_token: str
    progress: Number
    total: Number | None = None
    message: str | None = None


class AuthRequiredParams(WireModel):
    channel: URI
    resource: str
    #: ``"required" | "expired"``
    reason: str | None = None


class OtlpExportParams(WireModel):
    channel: URI
    #: OTLP/JSON ``Export*ServiceRequest``
    payload: OpaqueMap


class ReconnectReplayResult(WireModel):
    type: Literal["replay"] = "replay"
    #: all with ``serverSeq > lastSeenServerSeq``
    actions: list[ActionEnvelope]
    #: channels to drop from the subscription set
    missing: list[URI]


class ReconnectSnapshotResult(WireModel):
    type: Literal["snapshot"] = "snapshot"
    snapshots: list[Snapshot]


ReconnectResult = tagged_union("type", [ReconnectReplayResult, ReconnectSnapshotResult])

#: client → host requests: method → (params model, result type; ``None`` = JSON ``null``)
COMMANDS: dict[str, tuple[type[WireModel], Any]] = {
    "initialize": (InitializeParams, InitializeResult),
    "ping": (PingParams, None),
    "reconnect": (ReconnectParams, ReconnectResult),
    "subscribe": (SubscribeParams, SubscribeResult),
    "createSession": (CreateSessionParams, None),
    "disposeSession": (DisposeSessionParams, None),
    "createChat": (CreateChatParams, None),
    "disposeChat": (DisposeChatParams, None),
    "createTerminal": (CreateTerminalParams, None),
    "disposeTerminal": (DisposeTerminalParams, None),
    "createResourceWatch": (CreateResourceWatchParams, CreateResourceWatchResult),
    "listSessions": (ListSessionsParams, ListSessionsResult),
    "resolveSessionConfig": (ResolveSessionConfigParams, ResolveSessionConfigResult),
    "sessionConfigCompletions": (SessionConfigCompletionsParams, SessionConfigCompletionsResult),
    "fetchTurns": (FetchTurnsParams, FetchTurnsResult),
    "completions": (CompletionsParams, CompletionsResult),
    "authenticate": (AuthenticateParams, AuthenticateResult),
    "invokeChangesetOperation": (InvokeChangesetOperationParams, InvokeChangesetOperationResult),
    "resourceRead": (ResourceReadParams, ResourceReadResult),
    "resourceWrite": (ResourceWriteParams, ResourceWriteResult),
    "resourceList": (ResourceListParams, ResourceListResult),
    "resourceCopy": (ResourceCopyParams, ResourceCopyResult),
    "resourceDelete": (ResourceDeleteParams, ResourceDeleteResult),
    "resourceMove": (ResourceMoveParams, ResourceMoveResult),
    "resourceResolve": (ResourceResolveParams, ResourceResolveResult),
    "resourceMkdir": (ResourceMkdirParams, ResourceMkdirResult),
    "resourceRequest": (ResourceRequestParams, ResourceRequestResult),
}

#: host → client requests (same shapes; overview.md §3.2)
HOST_TO_CLIENT_COMMANDS: frozenset[str] = frozenset(
    {
        "resourceRead",
        "resourceWrite",
        "resourceList",
        "resourceCopy",
        "resourceDelete",
        "resourceMove",
        "resourceResolve",
        "resourceMkdir",
        "resourceRequest",
        "createResourceWatch",
    }
)

#: notification method → params model (both directions)
NOTIFICATIONS: dict[str, type[WireModel]] = {
    "unsubscribe": UnsubscribeParams,
    "dispatchAction": DispatchActionParams,
    "action": ActionEnvelope,
    "root/sessionAdded": SessionAddedParams,
    "root/sessionRemoved": SessionRemovedParams,
    "root/sessionSummaryChanged": SessionSummaryChangedParams,
    "root/progress": ProgressParams,
    "auth/required": AuthRequiredParams,
    "otlp/exportLogs": OtlpExportParams,
    "otlp/exportTraces": OtlpExportParams,
    "otlp/exportMetrics": OtlpExportParams,
}
