"""Chat channel state (chat-channel.md §1–§3)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import URI, Number, OpaqueMap, PatchModel, SessionStatus, WireModel, tagged_union
from .common import (
    ContentRef,
    ErrorInfo,
    FileEdit,
    FileEditDiff,
    FileEditSide,
    McpAuthRequirement,
    ModelSelection,
    StringOrMarkdown,
    TextRange,
    TextSelection,
    ToolInput,
    UsageInfo,
)

#: The answer value kind each question kind takes (chat-channel §3).
ANSWER_KINDS: dict[str, str] = {
    "text": "text",
    "number": "number",
    "integer": "number",
    "boolean": "boolean",
    "single-select": "selected",
    "multi-select": "selected-many",
}
#: An answer's ``state`` and an input request's ``response`` (chat-channel §3).
ANSWER_STATES: tuple[str, ...] = ("draft", "submitted", "skipped")
INPUT_RESPONSES: tuple[str, ...] = ("accept", "decline", "cancel")
#: How an approved tool call was confirmed (``chat/toolCallConfirmed``'s ``confirmed``).
CONFIRMED: tuple[str, ...] = ("not-needed", "user-action", "setting")
#: Why a client denied a tool call (``chat/toolCallConfirmed``'s ``reason``; ``"result-denied"`` is
#: the host's, for a denied result).
DENIAL_REASONS: tuple[str, ...] = ("denied", "skipped")

__all__ = [
    "ANSWER_KINDS",
    "ANSWER_STATES",
    "INPUT_RESPONSES",
    # messages
    "MessageOrigin",
    "AgentSelection",
    "MessageAttachmentBase",
    "SimpleMessageAttachment",
    "EmbeddedResourceMessageAttachment",
    "ResourceMessageAttachment",
    "AnnotationsMessageAttachment",
    "ChatMessageAttachment",
    "MessageAttachment",
    "Message",
    "PendingMessage",
    # tool calls
    "ClientToolCallContributor",
    "McpToolCallContributor",
    "ToolCallContributor",
    "ConfirmationOption",
    "JudgeRiskAssessmentLoading",
    "JudgeRiskAssessmentComplete",
    "ToolCallRiskAssessment",
    "ToolCallEdits",
    "TextToolResultContent",
    "EmbeddedResourceToolResultContent",
    "ResourceToolResultContent",
    "FileEditToolResultContent",
    "TerminalCommandResult",
    "TerminalToolResultContent",
    "SubagentToolResultContent",
    "ToolResultContent",
    "ToolCallResultError",
    "ToolCallResult",
    "ToolCallResultPatch",
    "ToolCallStateBase",
    "ToolCallStreamingState",
    "ToolCallPendingConfirmationState",
    "ToolCallRunningState",
    "ToolCallAuthRequiredState",
    "ToolCallPendingResultConfirmationState",
    "ToolCallCompletedState",
    "ToolCallCancelledState",
    "ToolCallState",
    "ToolCallConfirmationState",
    # input requests
    "ChatInputOption",
    "ChatInputQuestionBase",
    "ChatInputTextQuestion",
    "ChatInputNumberQuestion",
    "ChatInputIntegerQuestion",
    "ChatInputBooleanQuestion",
    "ChatInputSingleSelectQuestion",
    "ChatInputMultiSelectQuestion",
    "ChatInputQuestion",
    "ChatInputTextValue",
    "ChatInputNumberValue",
    "ChatInputBooleanValue",
    "ChatInputSelectedValue",
    "ChatInputSelectedManyValue",
    "ChatInputAnswerValue",
    "ChatInputValueAnswer",
    "ChatInputSkippedAnswer",
    "ChatInputAnswer",
    "ChatInputRequest",
    # response parts, turns
    "MarkdownResponsePart",
    "ReasoningResponsePart",
    "ContentRefResponsePart",
    "ToolCallResponsePart",
    "SystemNotificationResponsePart",
    "InputRequestResponsePart",
    "ResponsePart",
    "Turn",
    "ActiveTurn",
    # chat
    "ChatSelection",
    "UserChatOrigin",
    "ForkChatOrigin",
    "SideChatOrigin",
    "ToolChatOrigin",
    "ChatOrigin",
    "ForkChatSource",
    "SideChatSource",
    "ChatSource",
    "ChatSummary",
    "ChatSummaryChanges",
    "ChatState",
]

# ================================================================ messages


class MessageOrigin(WireModel):
    #: ``"user" | "agent" | "tool" | "systemNotification"`` (clients may only send ``"user"``)
    kind: str


class AgentSelection(WireModel):
    """Custom agent; matches an ``AgentCustomization.uri``."""

    uri: URI


class MessageAttachmentBase(WireModel):
    label: str
    #: span in ``Message.text`` that refers to the attachment
    range: TextRange | None = None
    #: open set: ``image``, ``document``, ``symbol``, ``directory``, ``selection``, …
    display_kind: str | None = None
    meta: OpaqueMap | None = Field(None, alias="_meta")


class SimpleMessageAttachment(MessageAttachmentBase):
    type: Literal["simple"] = "simple"
    model_representation: str | None = None


class EmbeddedResourceMessageAttachment(MessageAttachmentBase):
    type: Literal["embeddedResource"] = "embeddedResource"
    #: base64
    data: str
    content_type: str
    selection: TextSelection | None = None


class ResourceMessageAttachment(MessageAttachmentBase, ContentRef):
    type: Literal["resource"] = "resource"
    selection: TextSelection | None = None


class AnnotationsMessageAttachment(MessageAttachmentBase):
    type: Literal["annotations"] = "annotations"
    #: annotations channel URI
    resource: URI
    #: absent ⇒ all
    annotation_ids: list[str] | None = None


class ChatMessageAttachment(MessageAttachmentBase):
    """A transcript of another chat (any session), optionally ending at ``endTurn``."""

    type: Literal["chat"] = "chat"
    resource: URI
    end_turn: str | None = None


MessageAttachment = tagged_union(
    "type",
    [
        SimpleMessageAttachment,
        EmbeddedResourceMessageAttachment,
        ResourceMessageAttachment,
        AnnotationsMessageAttachment,
        ChatMessageAttachment,
    ],
)


class Message(WireModel):
    text: str
    origin: MessageOrigin
    attachments: list[MessageAttachment] | None = None
    model: ModelSelection | None = None
    agent: AgentSelection | None = None
    meta: OpaqueMap | None = Field(None, alias="_meta")


class PendingMessage(WireModel):
    id: str
    message: Message


# ================================================================ tool calls


class ClientToolCallContributor(WireModel):
    kind: Literal["client"] = "client"
    client_id: str


class McpToolCallContributor(WireModel):
    kind: Literal["mcp"] = "mcp"
    customization_id: str


ToolCallContributor = tagged_union("kind", [ClientToolCallContributor, McpToolCallContributor])


class ConfirmationOption(WireModel):
    id: str
    label: str
    #: ``"approve" | "deny"``
    kind: str
    group: Number | None = None


class JudgeRiskAssessmentLoading(WireModel):
    kind: Literal["judge"] = "judge"
    status: Literal["loading"] = "loading"


class JudgeRiskAssessmentComplete(WireModel):
    kind: Literal["judge"] = "judge"
    status: Literal["complete"] = "complete"
    reason: StringOrMarkdown
    #: 0 = unsafe … 1 = safe
    safety: Number


#: ``{kind:"judge", status:"loading"|"complete"}``; discriminated on ``status`` (the only kind is
#: ``judge``; any other shape is kept raw).
ToolCallRiskAssessment = tagged_union("status", [JudgeRiskAssessmentLoading, JudgeRiskAssessmentComplete])


class ToolCallEdits(WireModel):
    items: list[FileEdit]


class TextToolResultContent(WireModel):
    type: Literal["text"] = "text"
    text: str


class EmbeddedResourceToolResultContent(WireModel):
    type: Literal["embeddedResource"] = "embeddedResource"
    data: str
    content_type: str


class ResourceToolResultContent(ContentRef):
    type: Literal["resource"] = "resource"


class FileEditToolResultContent(WireModel):
    type: Literal["fileEdit"] = "fileEdit"
    before: FileEditSide | None = None
    after: FileEditSide | None = None
    diff: FileEditDiff | None = None


class TerminalCommandResult(WireModel):
    exit_code: Number | None = None
    preview: str | None = None
    truncated: bool | None = None


class TerminalToolResultContent(WireModel):
    type: Literal["terminal"] = "terminal"
    #: subscribable terminal URI
    resource: URI
    title: str
    is_pty: bool | None = None
    #: filled when the command exits
    result: TerminalCommandResult | None = None


class SubagentToolResultContent(WireModel):
    type: Literal["subagent"] = "subagent"
    #: worker chat URI
    resource: URI
    title: str
    agent_name: str | None = None
    description: str | None = None


ToolResultContent = tagged_union(
    "type",
    [
        TextToolResultContent,
        EmbeddedResourceToolResultContent,
        ResourceToolResultContent,
        FileEditToolResultContent,
        TerminalToolResultContent,
        SubagentToolResultContent,
    ],
)


class ToolCallResultError(WireModel):
    message: str
    code: str | None = None


class ToolCallResult(WireModel):
    success: bool
    past_tense_message: StringOrMarkdown
    content: list[ToolResultContent] | None = None
    structured_content: OpaqueMap | None = None
    error: ToolCallResultError | None = None


class ToolCallResultPatch(ToolCallResult, PatchModel):
    """``chat/toolCallComplete.result``: merged onto the tool call, so an explicit ``null`` member
    is kept (it removes that key from the call)."""


class ToolCallStateBase(WireModel):
    tool_call_id: str
    #: internal name (open string)
    tool_name: str
    display_name: str
    intention: str | None = None
    #: absent = host tool
    contributor: ToolCallContributor | None = None
    meta: OpaqueMap | None = Field(None, alias="_meta")


class _ParameterFields(ToolCallStateBase):
    invocation_message: StringOrMarkdown
    tool_input: ToolInput | None = None


class _ConfirmedFields(_ParameterFields):
    #: ``"not-needed" | "user-action" | "setting"``
    confirmed: str
    selected_option: ConfirmationOption | None = None


class _ResultFields(_ConfirmedFields):
    success: bool
    past_tense_message: StringOrMarkdown
    content: list[ToolResultContent] | None = None
    structured_content: OpaqueMap | None = None
    error: ToolCallResultError | None = None


class ToolCallStreamingState(ToolCallStateBase):
    status: Literal["streaming"] = "streaming"
    partial_input: str | None = None
    invocation_message: StringOrMarkdown | None = None


class ToolCallPendingConfirmationState(_ParameterFields):
    status: Literal["pending-confirmation"] = "pending-confirmation"
    confirmation_title: StringOrMarkdown | None = None
    risk_assessment: ToolCallRiskAssessment | None = None
    edits: ToolCallEdits | None = None
    editable: bool | None = None
    options: list[ConfirmationOption] | None = None


class ToolCallRunningState(_ConfirmedFields):
    status: Literal["running"] = "running"
    #: partial, live
    content: list[ToolResultContent] | None = None


class ToolCallAuthRequiredState(_ConfirmedFields):
    status: Literal["auth-required"] = "auth-required"
    #: required and MCP-kind in this status
    contributor: McpToolCallContributor
    auth: McpAuthRequirement
    content: list[ToolResultContent] | None = None


class ToolCallPendingResultConfirmationState(_ResultFields):
    status: Literal["pending-result-confirmation"] = "pending-result-confirmation"


class ToolCallCompletedState(_ResultFields):
    status: Literal["completed"] = "completed"


class ToolCallCancelledState(_ParameterFields):
    status: Literal["cancelled"] = "cancelled"
    #: ``"denied" | "skipped" | "result-denied"``
    reason: str
    reason_message: StringOrMarkdown | None = None
    user_suggestion: Message | None = None
    selected_option: ConfirmationOption | None = None


ToolCallState = tagged_union(
    "status",
    [
        ToolCallStreamingState,
        ToolCallPendingConfirmationState,
        ToolCallRunningState,
        ToolCallAuthRequiredState,
        ToolCallPendingResultConfirmationState,
        ToolCallCompletedState,
        ToolCallCancelledState,
    ],
)

#: pending-confirmation | pending-result-confirmation (what a ``toolConfirmation`` entry carries)
ToolCallConfirmationState = tagged_union(
    "status", [ToolCallPendingConfirmationState, ToolCallPendingResultConfirmationState]
)

# ================================================================ input requests


class ChatInputOption(WireModel):
    id: str
    label: str
    description: str | None = None
    recommended: bool | None = None


class ChatInputQuestionBase(WireModel):
    id: str
    title: str | None = None
    message: str
    required: bool | None = None


class ChatInputTextQuestion(ChatInputQuestionBase):
    kind: Literal["text"] = "text"
    #: e.g. ``email``, ``uri``, ``date``, ``date-time``
    format: str | None = None
    #: length bounds
    min: Number | None = None
    max: Number | None = None
    default_value: str | None = None


class ChatInputNumberQuestion(ChatInputQuestionBase):
    kind: Literal["number"] = "number"
    min: Number | None = None
    max: Number | None = None
    default_value: Number | None = None


class ChatInputIntegerQuestion(ChatInputQuestionBase):
    """Same fields as the number question; ``kind`` stays ``"integer"``."""

    kind: Literal["integer"] = "integer"
    min: Number | None = None
    max: Number | None = None
    default_value: Number | None = None


class ChatInputBooleanQuestion(ChatInputQuestionBase):
    kind: Literal["boolean"] = "boolean"
    default_value: bool | None = None


class ChatInputSingleSelectQuestion(ChatInputQuestionBase):
    kind: Literal["single-select"] = "single-select"
    options: list[ChatInputOption]
    allow_freeform_input: bool | None = None


class ChatInputMultiSelectQuestion(ChatInputQuestionBase):
    kind: Literal["multi-select"] = "multi-select"
    options: list[ChatInputOption]
    allow_freeform_input: bool | None = None
    #: count bounds
    min: Number | None = None
    max: Number | None = None


ChatInputQuestion = tagged_union(
    "kind",
    [
        ChatInputTextQuestion,
        ChatInputNumberQuestion,
        ChatInputIntegerQuestion,
        ChatInputBooleanQuestion,
        ChatInputSingleSelectQuestion,
        ChatInputMultiSelectQuestion,
    ],
)


class ChatInputTextValue(WireModel):
    kind: Literal["text"] = "text"
    value: str


class ChatInputNumberValue(WireModel):
    kind: Literal["number"] = "number"
    value: Number


class ChatInputBooleanValue(WireModel):
    kind: Literal["boolean"] = "boolean"
    value: bool


class ChatInputSelectedValue(WireModel):
    kind: Literal["selected"] = "selected"
    #: option id
    value: str
    freeform_values: list[str] | None = None


class ChatInputSelectedManyValue(WireModel):
    kind: Literal["selected-many"] = "selected-many"
    value: list[str]
    freeform_values: list[str] | None = None


ChatInputAnswerValue = tagged_union(
    "kind",
    [
        ChatInputTextValue,
        ChatInputNumberValue,
        ChatInputBooleanValue,
        ChatInputSelectedValue,
        ChatInputSelectedManyValue,
    ],
)


class ChatInputValueAnswer(WireModel):
    state: Literal["draft", "submitted"]
    value: ChatInputAnswerValue


class ChatInputSkippedAnswer(WireModel):
    state: Literal["skipped"] = "skipped"
    freeform_values: list[str] | None = None


ChatInputAnswer = tagged_union("state", [ChatInputValueAnswer, ChatInputSkippedAnswer])


class ChatInputRequest(WireModel):
    id: str
    message: str | None = None
    url: URI | None = None
    questions: list[ChatInputQuestion] | None = None
    #: keyed by question id
    answers: dict[str, ChatInputAnswer] | None = None


# ================================================================ response parts and turns


class MarkdownResponsePart(WireModel):
    kind: Literal["markdown"] = "markdown"
    id: str
    content: str


class ReasoningResponsePart(WireModel):
    kind: Literal["reasoning"] = "reasoning"
    id: str
    content: str


class ContentRefResponsePart(ContentRef):
    kind: Literal["contentRef"] = "contentRef"


class ToolCallResponsePart(WireModel):
    kind: Literal["toolCall"] = "toolCall"
    tool_call: ToolCallState


class SystemNotificationResponsePart(WireModel):
    kind: Literal["systemNotification"] = "systemNotification"
    content: StringOrMarkdown
    meta: OpaqueMap | None = Field(None, alias="_meta")


class InputRequestResponsePart(WireModel):
    kind: Literal["inputRequest"] = "inputRequest"
    request: ChatInputRequest
    #: ``"accept" | "decline" | "cancel"``; absent ⇒ the request is open
    response: str | None = None


ResponsePart = tagged_union(
    "kind",
    [
        MarkdownResponsePart,
        ReasoningResponsePart,
        ContentRefResponsePart,
        ToolCallResponsePart,
        SystemNotificationResponsePart,
        InputRequestResponsePart,
    ],
)


class Turn(WireModel):
    """A completed turn."""

    id: str
    started_at: str | None = None
    #: ms
    duration: Number | None = None
    message: Message
    response_parts: list[ResponsePart]
    usage: UsageInfo | None = None
    #: ``"complete" | "cancelled" | "error"``
    state: str
    error: ErrorInfo | None = None


class ActiveTurn(WireModel):
    id: str
    started_at: str
    message: Message
    response_parts: list[ResponsePart]
    usage: UsageInfo | None = None


# ================================================================ chat origin / source / summary


class ChatSelection(WireModel):
    #: non-empty
    text: str
    #: provenance only
    response_part_id: str | None = None


class UserChatOrigin(WireModel):
    kind: Literal["user"] = "user"


class ForkChatOrigin(WireModel):
    kind: Literal["fork"] = "fork"
    chat: URI
    turn_id: str


class SideChatOrigin(WireModel):
    kind: Literal["sideChat"] = "sideChat"
    chat: URI
    turn_id: str
    selection: ChatSelection | None = None


class ToolChatOrigin(WireModel):
    kind: Literal["tool"] = "tool"
    chat: URI
    tool_call_id: str


ChatOrigin = tagged_union("kind", [UserChatOrigin, ForkChatOrigin, SideChatOrigin, ToolChatOrigin])


class ForkChatSource(WireModel):
    kind: Literal["fork"] = "fork"
    chat: URI
    turn_id: str


class SideChatSource(WireModel):
    kind: Literal["sideChat"] = "sideChat"
    chat: URI
    turn_id: str
    selection: ChatSelection | None = None


ChatSource = tagged_union("kind", [ForkChatSource, SideChatSource])


class ChatSummary(WireModel):
    """Catalogue entry in ``SessionState.chats`` (the summary fields of :class:`ChatState`)."""

    resource: URI
    title: str
    status: SessionStatus
    activity: str | None = None
    #: ISO 8601 ms, ``Z``
    modified_at: str
    origin: ChatOrigin | None = None
    #: ``"full" | "read-only" | "hidden"``; absent ⇒ ``"full"``
    interactivity: str | None = None
    #: absent ⇒ inherits the session set; ``[]`` ⇒ none
    working_directories: list[URI] | None = None


class ChatSummaryChanges(PatchModel):
    """``Partial<ChatSummary>`` merged by ``session/chatUpdated``; ``null`` members mean "remove"."""

    resource: URI | None = None
    title: str | None = None
    status: SessionStatus | None = None
    activity: str | None = None
    modified_at: str | None = None
    origin: ChatOrigin | None = None
    interactivity: str | None = None
    working_directories: list[URI] | None = None


class ChatState(ChatSummary):
    turns: list[Turn]
    #: present ⇒ older turns can be paged in with ``fetchTurns``
    turns_next_cursor: str | None = None
    active_turn: ActiveTurn | None = None
    steering_message: PendingMessage | None = None
    queued_messages: list[PendingMessage] | None = None
    draft: Message | None = None
    meta: OpaqueMap | None = Field(None, alias="_meta")
