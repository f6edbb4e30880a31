"""All 85 ``StateAction`` types, the ``StateAction`` union and the action tables.

Tables (built from the spec's per-channel action tables):

* :data:`ACTION_TYPES` — ``type`` string → model class (85 entries);
* :data:`ACTION_SINCE` — ``type`` → protocol version that introduced it;
* :data:`CLIENT_DISPATCHABLE` — the 38 client-dispatchable types (overview.md §8).

Merge payloads keep explicit ``null`` members because there ``null`` means "remove this key":
``root/configChanged.config`` and ``session/configChanged.config`` (opaque maps),
``session/chatUpdated.changes`` (:class:`~ahp_lab.protocol.chat.ChatSummaryChanges`),
``chat/inputCompleted.answers`` (map values may be ``null``) and ``chat/toolCallComplete.result``
(:class:`~ahp_lab.protocol.chat.ToolCallResultPatch`, merged onto the call per reducer-rules §3.4).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, get_args

from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from .annotation import Annotation, AnnotationEntry
from .base import URI, Int, Number, OpaqueMap, WireModel, tagged_union
from .changeset import Changeset, ChangesetFile, ChangesetOperation
from .chat import (
    ChatInputAnswer,
    ChatInputRequest,
    ChatSummary,
    ChatSummaryChanges,
    ConfirmationOption,
    Message,
    ResponsePart,
    ToolCallContributor,
    ToolCallEdits,
    ToolCallResultPatch,
    ToolCallRiskAssessment,
    ToolResultContent,
    Turn,
)
from .common import ErrorInfo, McpAuthRequirement, StringOrMarkdown, TextRange, ToolInput, UsageInfo
from .customizations import Customization, McpServerState
from .resource_watch import ResourceChanges
from .root import AgentInfo, TerminalInfo
from .session import SessionActiveClient, SessionInputRequest, ToolDefinition
from .terminal import TerminalClaim

__all__ = [
    "ActionBase",
    "ACTION_TYPES",
    "ACTION_SINCE",
    "CLIENT_DISPATCHABLE",
    "CHANNEL_KINDS",
    "StateAction",
    "is_client_dispatchable",
    "channel_kind_of_action",
]

#: Channel kinds, as used by the action ``type`` prefix and the fixture ``reducer`` names.
CHANNEL_KINDS: tuple[str, ...] = (
    "root",
    "session",
    "chat",
    "terminal",
    "changeset",
    "annotations",
    "resourceWatch",
)

ACTION_TYPES: dict[str, type[ActionBase]] = {}
ACTION_SINCE: dict[str, str] = {}
_CLIENT: set[str] = set()


class ActionBase(WireModel):
    """Base of every action model. ``type`` is declared by each subclass as a ``Literal``."""

    action_type: ClassVar[str] = ""
    since: ClassVar[str] = ""
    client_dispatchable: ClassVar[bool] = False


def action(since: str, *, client: bool = False):
    """Register an action class (its ``type`` literal, introduction version, dispatchability)."""

    def register(cls: type[ActionBase]) -> type[ActionBase]:
        (type_name,) = get_args(cls.model_fields["type"].annotation)
        assert type_name not in ACTION_TYPES, type_name
        cls.action_type = type_name
        cls.since = since
        cls.client_dispatchable = client
        ACTION_TYPES[type_name] = cls
        ACTION_SINCE[type_name] = since
        if client:
            _CLIENT.add(type_name)
        return cls

    return register


# ====================================================================== root (4)


@action("0.1.0")
class RootAgentsChangedAction(ActionBase):
    type: Literal["root/agentsChanged"] = "root/agentsChanged"
    agents: list[AgentInfo]


@action("0.1.0")
class RootActiveSessionsChangedAction(ActionBase):
    type: Literal["root/activeSessionsChanged"] = "root/activeSessionsChanged"
    active_sessions: Int


@action("0.1.0")
class RootTerminalsChangedAction(ActionBase):
    type: Literal["root/terminalsChanged"] = "root/terminalsChanged"
    terminals: list[TerminalInfo]


@action("0.1.0", client=True)
class RootConfigChangedAction(ActionBase):
    """Merge (or with ``replace`` replace) ``config.values``; a ``null`` value removes a key."""

    type: Literal["root/configChanged"] = "root/configChanged"
    config: OpaqueMap
    replace: bool | None = None


# ====================================================================== session (27)


@action("0.1.0")
class SessionReadyAction(ActionBase):
    type: Literal["session/ready"] = "session/ready"


@action("0.1.0")
class SessionCreationFailedAction(ActionBase):
    type: Literal["session/creationFailed"] = "session/creationFailed"
    error: ErrorInfo


@action("0.4.0")
class SessionChatAddedAction(ActionBase):
    type: Literal["session/chatAdded"] = "session/chatAdded"
    summary: ChatSummary


@action("0.4.0")
class SessionChatRemovedAction(ActionBase):
    type: Literal["session/chatRemoved"] = "session/chatRemoved"
    chat: URI


@action("0.4.0")
class SessionChatUpdatedAction(ActionBase):
    type: Literal["session/chatUpdated"] = "session/chatUpdated"
    chat: URI
    #: merge payload: ``null`` members remove keys
    changes: ChatSummaryChanges


@action("0.4.0")
class SessionDefaultChatChangedAction(ActionBase):
    type: Literal["session/defaultChatChanged"] = "session/defaultChatChanged"
    default_chat: URI | None = None


@action("0.1.0", client=True)
class SessionTitleChangedAction(ActionBase):
    type: Literal["session/titleChanged"] = "session/titleChanged"
    title: str


@action("0.1.0", client=True)
class SessionIsReadChangedAction(ActionBase):
    type: Literal["session/isReadChanged"] = "session/isReadChanged"
    is_read: bool


@action("0.1.0", client=True)
class SessionIsArchivedChangedAction(ActionBase):
    type: Literal["session/isArchivedChanged"] = "session/isArchivedChanged"
    is_archived: bool


@action("0.1.0")
class SessionActivityChangedAction(ActionBase):
    type: Literal["session/activityChanged"] = "session/activityChanged"
    activity: str | None = None


@action("0.2.0")
class SessionChangesetsChangedAction(ActionBase):
    type: Literal["session/changesetsChanged"] = "session/changesetsChanged"
    changesets: list[Changeset] | None = None


@action("0.1.0", client=True)
class SessionConfigChangedAction(ActionBase):
    type: Literal["session/configChanged"] = "session/configChanged"
    config: OpaqueMap
    replace: bool | None = None


@action("0.1.0")
class SessionMetaChangedAction(ActionBase):
    type: Literal["session/metaChanged"] = "session/metaChanged"
    meta: OpaqueMap | None = Field(None, alias="_meta")


@action("0.1.0")
class SessionServerToolsChangedAction(ActionBase):
    type: Literal["session/serverToolsChanged"] = "session/serverToolsChanged"
    tools: list[ToolDefinition]


@action("0.5.0", client=True)
class SessionActiveClientSetAction(ActionBase):
    type: Literal["session/activeClientSet"] = "session/activeClientSet"
    active_client: SessionActiveClient


@action("0.5.0", client=True)
class SessionActiveClientRemovedAction(ActionBase):
    type: Literal["session/activeClientRemoved"] = "session/activeClientRemoved"
    client_id: str


@action("0.7.0", client=True)
class SessionWorkingDirectorySetAction(ActionBase):
    type: Literal["session/workingDirectorySet"] = "session/workingDirectorySet"
    directory: URI


@action("0.7.0", client=True)
class SessionWorkingDirectoryRemovedAction(ActionBase):
    type: Literal["session/workingDirectoryRemoved"] = "session/workingDirectoryRemoved"
    directory: URI


@action("0.5.1")
class SessionInputNeededSetAction(ActionBase):
    type: Literal["session/inputNeededSet"] = "session/inputNeededSet"
    request: SessionInputRequest


@action("0.5.1")
class SessionInputNeededRemovedAction(ActionBase):
    type: Literal["session/inputNeededRemoved"] = "session/inputNeededRemoved"
    id: str


@action("0.1.0")
class SessionCustomizationsChangedAction(ActionBase):
    type: Literal["session/customizationsChanged"] = "session/customizationsChanged"
    customizations: list[Customization]


@action("0.1.0", client=True)
class SessionCustomizationToggledAction(ActionBase):
    type: Literal["session/customizationToggled"] = "session/customizationToggled"
    id: str
    enabled: bool


@action("0.1.0")
class SessionCustomizationUpdatedAction(ActionBase):
    type: Literal["session/customizationUpdated"] = "session/customizationUpdated"
    customization: Customization


@action("0.2.0")
class SessionCustomizationRemovedAction(ActionBase):
    type: Literal["session/customizationRemoved"] = "session/customizationRemoved"
    id: str


@action("0.3.0")
class SessionMcpServerStateChangedAction(ActionBase):
    type: Literal["session/mcpServerStateChanged"] = "session/mcpServerStateChanged"
    id: str
    state: McpServerState
    channel: URI | None = None


@action("0.5.2", client=True)
class SessionMcpServerStartRequestedAction(ActionBase):
    type: Literal["session/mcpServerStartRequested"] = "session/mcpServerStartRequested"
    id: str


@action("0.5.2", client=True)
class SessionMcpServerStopRequestedAction(ActionBase):
    type: Literal["session/mcpServerStopRequested"] = "session/mcpServerStopRequested"
    id: str


# ====================================================================== chat (29)


class ChatActionBase(ActionBase):
    """Chat actions accept an optional ``_meta`` (only tool-call actions store it)."""

    meta: OpaqueMap | None = Field(None, alias="_meta")


class ChatTurnActionBase(ChatActionBase):
    turn_id: str


class ToolCallActionBase(ChatTurnActionBase):
    tool_call_id: str


@action("0.4.0", client=True)
class ChatTurnStartedAction(ChatTurnActionBase):
    type: Literal["chat/turnStarted"] = "chat/turnStarted"
    started_at: str
    message: Message
    queued_message_id: str | None = None


@action("0.4.0")
class ChatResponsePartAction(ChatTurnActionBase):
    type: Literal["chat/responsePart"] = "chat/responsePart"
    part: ResponsePart


@action("0.4.0")
class ChatDeltaAction(ChatTurnActionBase):
    type: Literal["chat/delta"] = "chat/delta"
    part_id: str
    content: str


@action("0.4.0")
class ChatReasoningAction(ChatTurnActionBase):
    type: Literal["chat/reasoning"] = "chat/reasoning"
    part_id: str
    content: str


@action("0.4.0")
class ChatUsageAction(ChatTurnActionBase):
    type: Literal["chat/usage"] = "chat/usage"
    usage: UsageInfo


@action("0.4.0")
class ChatTurnCompleteAction(ChatTurnActionBase):
    type: Literal["chat/turnComplete"] = "chat/turnComplete"
    duration: Number


@action("0.4.0", client=True)
class ChatTurnCancelledAction(ChatTurnActionBase):
    type: Literal["chat/turnCancelled"] = "chat/turnCancelled"
    duration: Number


@action("0.4.0")
class ChatErrorAction(ChatTurnActionBase):
    type: Literal["chat/error"] = "chat/error"
    duration: Number
    error: ErrorInfo


@action("0.5.0")
class ChatActivityChangedAction(ChatActionBase):
    type: Literal["chat/activityChanged"] = "chat/activityChanged"
    activity: str | None = None


@action("0.4.0", client=True)
class ChatTruncatedAction(ChatActionBase):
    type: Literal["chat/truncated"] = "chat/truncated"
    turn_id: str | None = None


@action("0.5.1")
class ChatTurnsLoadedAction(ChatActionBase):
    type: Literal["chat/turnsLoaded"] = "chat/turnsLoaded"
    #: oldest first
    turns: list[Turn]
    turns_next_cursor: str | None = None


@action("0.4.0", client=True)
class ChatPendingMessageSetAction(ChatActionBase):
    type: Literal["chat/pendingMessageSet"] = "chat/pendingMessageSet"
    #: ``"steering" | "queued"``
    kind: str
    id: str
    message: Message


@action("0.4.0", client=True)
class ChatPendingMessageRemovedAction(ChatActionBase):
    type: Literal["chat/pendingMessageRemoved"] = "chat/pendingMessageRemoved"
    #: ``"steering" | "queued"``
    kind: str
    id: str


@action("0.4.0", client=True)
class ChatQueuedMessagesReorderedAction(ChatActionBase):
    type: Literal["chat/queuedMessagesReordered"] = "chat/queuedMessagesReordered"
    order: list[str]


@action("0.5.0", client=True)
class ChatDraftChangedAction(ChatActionBase):
    type: Literal["chat/draftChanged"] = "chat/draftChanged"
    draft: Message | None = None


@action("0.7.0", client=True)
class ChatWorkingDirectorySetAction(ChatActionBase):
    type: Literal["chat/workingDirectorySet"] = "chat/workingDirectorySet"
    directory: URI


@action("0.7.0", client=True)
class ChatWorkingDirectoryRemovedAction(ChatActionBase):
    type: Literal["chat/workingDirectoryRemoved"] = "chat/workingDirectoryRemoved"
    directory: URI


@action("0.4.0")
class ChatInputRequestedAction(ChatActionBase):
    type: Literal["chat/inputRequested"] = "chat/inputRequested"
    request: ChatInputRequest


@action("0.4.0", client=True)
class ChatInputAnswerChangedAction(ChatActionBase):
    type: Literal["chat/inputAnswerChanged"] = "chat/inputAnswerChanged"
    request_id: str
    question_id: str
    #: absent ⇒ delete the answer
    answer: ChatInputAnswer | None = None


@action("0.4.0", client=True)
class ChatInputCompletedAction(ChatActionBase):
    type: Literal["chat/inputCompleted"] = "chat/inputCompleted"
    request_id: str
    #: ``"accept" | "decline" | "cancel"``
    response: str
    #: merge payload: a ``null`` value deletes that answer
    answers: dict[str, ChatInputAnswer | None] | None = None


@action("0.4.0")
class ChatToolCallStartAction(ToolCallActionBase):
    type: Literal["chat/toolCallStart"] = "chat/toolCallStart"
    tool_name: str
    display_name: str
    intention: str | None = None
    contributor: ToolCallContributor | None = None


@action("0.4.0")
class ChatToolCallDeltaAction(ToolCallActionBase):
    type: Literal["chat/toolCallDelta"] = "chat/toolCallDelta"
    #: partial parameters
    content: str | None = None
    invocation_message: StringOrMarkdown | None = None


@action("0.4.0")
class ChatToolCallReadyAction(ToolCallActionBase):
    """Without ``confirmed`` → pending-confirmation; with it → running."""

    type: Literal["chat/toolCallReady"] = "chat/toolCallReady"
    invocation_message: StringOrMarkdown
    contributor: ToolCallContributor | None = None
    intention: str | None = None
    tool_input: ToolInput | None = None
    confirmation_title: StringOrMarkdown | None = None
    risk_assessment: ToolCallRiskAssessment | None = None
    edits: ToolCallEdits | None = None
    editable: bool | None = None
    #: ``"not-needed" | "user-action" | "setting"``
    confirmed: str | None = None
    options: list[ConfirmationOption] | None = None


@action("0.4.0", client=True)
class ChatToolCallConfirmedAction(ToolCallActionBase):
    """Approved: ``approved:true`` + ``confirmed`` (+ ``editedToolInput?``); denied:
    ``approved:false`` + ``reason`` (``"denied" | "skipped"``) + ``userSuggestion?``/``reasonMessage?``.
    """

    type: Literal["chat/toolCallConfirmed"] = "chat/toolCallConfirmed"
    approved: bool
    confirmed: str | None = None
    edited_tool_input: str | None = None
    selected_option_id: str | None = None
    reason: str | None = None
    user_suggestion: Message | None = None
    reason_message: StringOrMarkdown | None = None

    @model_validator(mode="after")
    def _variant_fields(self) -> ChatToolCallConfirmedAction:
        if self.approved and self.confirmed is None:
            raise PydanticCustomError(
                "ahp_required_when", "'confirmed' is required when 'approved' is true", {"field": "confirmed"}
            )
        if not self.approved and self.reason is None:
            raise PydanticCustomError(
                "ahp_required_when", "'reason' is required when 'approved' is false", {"field": "reason"}
            )
        return self


@action("0.4.0", client=True)
class ChatToolCallCompleteAction(ToolCallActionBase):
    type: Literal["chat/toolCallComplete"] = "chat/toolCallComplete"
    #: merged onto the tool call (every key of ``result`` is written; ``null`` removes)
    result: ToolCallResultPatch
    requires_result_confirmation: bool | None = None


@action("0.4.0", client=True)
class ChatToolCallResultConfirmedAction(ToolCallActionBase):
    type: Literal["chat/toolCallResultConfirmed"] = "chat/toolCallResultConfirmed"
    approved: bool


@action("0.4.0", client=True)
class ChatToolCallContentChangedAction(ToolCallActionBase):
    type: Literal["chat/toolCallContentChanged"] = "chat/toolCallContentChanged"
    content: list[ToolResultContent]


@action("0.6.0")
class ChatToolCallAuthRequiredAction(ToolCallActionBase):
    type: Literal["chat/toolCallAuthRequired"] = "chat/toolCallAuthRequired"
    auth: McpAuthRequirement


@action("0.6.0")
class ChatToolCallAuthResolvedAction(ToolCallActionBase):
    type: Literal["chat/toolCallAuthResolved"] = "chat/toolCallAuthResolved"


# ====================================================================== terminal (11)


@action("0.1.0")
class TerminalDataAction(ActionBase):
    type: Literal["terminal/data"] = "terminal/data"
    data: str


@action("0.1.0", client=True)
class TerminalInputAction(ActionBase):
    type: Literal["terminal/input"] = "terminal/input"
    data: str


@action("0.1.0", client=True)
class TerminalResizedAction(ActionBase):
    type: Literal["terminal/resized"] = "terminal/resized"
    cols: Int
    rows: Int


@action("0.1.0", client=True)
class TerminalClaimedAction(ActionBase):
    type: Literal["terminal/claimed"] = "terminal/claimed"
    claim: TerminalClaim


@action("0.1.0", client=True)
class TerminalTitleChangedAction(ActionBase):
    type: Literal["terminal/titleChanged"] = "terminal/titleChanged"
    title: str


@action("0.1.0")
class TerminalCwdChangedAction(ActionBase):
    type: Literal["terminal/cwdChanged"] = "terminal/cwdChanged"
    cwd: URI


@action("0.1.0")
class TerminalExitedAction(ActionBase):
    type: Literal["terminal/exited"] = "terminal/exited"
    exit_code: Int | None = None


@action("0.1.0", client=True)
class TerminalClearedAction(ActionBase):
    type: Literal["terminal/cleared"] = "terminal/cleared"


@action("0.1.0")
class TerminalCommandDetectionAvailableAction(ActionBase):
    type: Literal["terminal/commandDetectionAvailable"] = "terminal/commandDetectionAvailable"


@action("0.1.0")
class TerminalCommandExecutedAction(ActionBase):
    type: Literal["terminal/commandExecuted"] = "terminal/commandExecuted"
    command_id: str
    command_line: str
    timestamp: Number


@action("0.1.0")
class TerminalCommandFinishedAction(ActionBase):
    type: Literal["terminal/commandFinished"] = "terminal/commandFinished"
    command_id: str
    exit_code: Int | None = None
    duration_ms: Number | None = None


# ====================================================================== changeset (8)


@action("0.2.0")
class ChangesetStatusChangedAction(ActionBase):
    type: Literal["changeset/statusChanged"] = "changeset/statusChanged"
    #: ``"computing" | "ready" | "error"``
    status: str
    error: ErrorInfo | None = None


@action("0.2.0")
class ChangesetFileSetAction(ActionBase):
    type: Literal["changeset/fileSet"] = "changeset/fileSet"
    file: ChangesetFile


@action("0.2.0")
class ChangesetFileRemovedAction(ActionBase):
    type: Literal["changeset/fileRemoved"] = "changeset/fileRemoved"
    file_id: str


@action("0.6.0", client=True)
class ChangesetFilesReviewChangedAction(ActionBase):
    type: Literal["changeset/filesReviewChanged"] = "changeset/filesReviewChanged"
    files: list[str]
    reviewed: bool


@action("0.4.0")
class ChangesetContentChangedAction(ActionBase):
    type: Literal["changeset/contentChanged"] = "changeset/contentChanged"
    files: list[ChangesetFile]
    operations: list[ChangesetOperation] | None = None
    error: ErrorInfo | None = None


@action("0.2.0")
class ChangesetOperationsChangedAction(ActionBase):
    type: Literal["changeset/operationsChanged"] = "changeset/operationsChanged"
    operations: list[ChangesetOperation] | None = None


@action("0.3.0")
class ChangesetOperationStatusChangedAction(ActionBase):
    type: Literal["changeset/operationStatusChanged"] = "changeset/operationStatusChanged"
    operation_id: str
    #: ``"idle" | "running" | "error" | "disabled"``
    status: str
    error: ErrorInfo | None = None


@action("0.2.0")
class ChangesetClearedAction(ActionBase):
    type: Literal["changeset/cleared"] = "changeset/cleared"


# ====================================================================== annotations (5)


@action("0.4.0", client=True)
class AnnotationsSetAction(ActionBase):
    type: Literal["annotations/set"] = "annotations/set"
    annotation: Annotation


@action("0.4.0", client=True)
class AnnotationsUpdatedAction(ActionBase):
    type: Literal["annotations/updated"] = "annotations/updated"
    annotation_id: str
    turn_id: str | None = None
    resource: URI | None = None
    range: TextRange | None = None
    resolved: bool | None = None


@action("0.4.0", client=True)
class AnnotationsRemovedAction(ActionBase):
    type: Literal["annotations/removed"] = "annotations/removed"
    annotation_id: str


@action("0.4.0", client=True)
class AnnotationsEntrySetAction(ActionBase):
    type: Literal["annotations/entrySet"] = "annotations/entrySet"
    annotation_id: str
    entry: AnnotationEntry


@action("0.4.0", client=True)
class AnnotationsEntryRemovedAction(ActionBase):
    type: Literal["annotations/entryRemoved"] = "annotations/entryRemoved"
    annotation_id: str
    entry_id: str


# ====================================================================== resourceWatch (1)


@action("0.2.0")
class ResourceWatchChangedAction(ActionBase):
    type: Literal["resourceWatch/changed"] = "resourceWatch/changed"
    #: never empty
    changes: ResourceChanges


# ====================================================================== tables

#: The 38 client-dispatchable action types (overview.md §8); everything else is host-only.
CLIENT_DISPATCHABLE: frozenset[str] = frozenset(_CLIENT)

#: Every known action (by ``type``) plus a raw ``dict`` for unknown types (forward compatibility).
StateAction = tagged_union("type", list(ACTION_TYPES.values()))


def is_client_dispatchable(action_type: Any) -> bool:
    """``True`` iff ``action_type`` is one of the 38 client-dispatchable types."""
    return isinstance(action_type, str) and action_type in CLIENT_DISPATCHABLE


def channel_kind_of_action(action_type: Any) -> str | None:
    """The channel kind named by the ``type`` prefix before ``/`` (``None`` if not a known kind)."""
    if not isinstance(action_type, str):
        return None
    prefix, sep, _ = action_type.partition("/")
    return prefix if sep and prefix in CHANNEL_KINDS else None


__all__ += sorted(cls.__name__ for cls in ACTION_TYPES.values())
__all__ += ["ChatActionBase", "ChatTurnActionBase", "ToolCallActionBase"]
