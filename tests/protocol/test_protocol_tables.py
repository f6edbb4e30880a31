"""Action tables, registries and constants of ``ahp_lab.protocol``."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from pydantic import TypeAdapter

import ahp_lab.protocol as protocol
from ahp_lab.protocol import (
    ACTION_SINCE,
    ACTION_TYPES,
    CLIENT_DISPATCHABLE,
    COMMANDS,
    NOTIFICATIONS,
    PROTOCOL_VERSION,
    STATE_TYPES,
    SUPPORTED_VERSIONS,
    TYPES,
    ErrorCode,
    channel_kind_of_action,
    is_client_dispatchable,
)
from tests.conftest import corpus_files, requires_corpus  # noqa: E402

EXPECTED_CLIENT_DISPATCHABLE = {
    "root/configChanged",
    "session/titleChanged",
    "session/activeClientSet",
    "session/activeClientRemoved",
    "session/workingDirectorySet",
    "session/workingDirectoryRemoved",
    "session/customizationToggled",
    "session/mcpServerStartRequested",
    "session/mcpServerStopRequested",
    "session/isReadChanged",
    "session/isArchivedChanged",
    "session/configChanged",
    "chat/turnStarted",
    "chat/toolCallConfirmed",
    "chat/toolCallComplete",
    "chat/toolCallResultConfirmed",
    "chat/toolCallContentChanged",
    "chat/turnCancelled",
    "chat/workingDirectorySet",
    "chat/workingDirectoryRemoved",
    "chat/pendingMessageSet",
    "chat/pendingMessageRemoved",
    "chat/queuedMessagesReordered",
    "chat/draftChanged",
    "chat/inputAnswerChanged",
    "chat/inputCompleted",
    "chat/truncated",
    "terminal/input",
    "terminal/resized",
    "terminal/claimed",
    "terminal/titleChanged",
    "terminal/cleared",
    "changeset/filesReviewChanged",
    "annotations/set",
    "annotations/updated",
    "annotations/removed",
    "annotations/entrySet",
    "annotations/entryRemoved",
}


def test_85_action_types_per_channel() -> None:
    assert len(ACTION_TYPES) == 85
    per_channel = Counter(channel_kind_of_action(t) for t in ACTION_TYPES)
    assert per_channel == {
        "root": 4,
        "session": 27,
        "chat": 29,
        "terminal": 11,
        "changeset": 8,
        "annotations": 5,
        "resourceWatch": 1,
    }
    for type_name, cls in ACTION_TYPES.items():
        assert cls.model_fields["type"].default == type_name
        assert cls.action_type == type_name


def test_client_dispatchable_exact() -> None:
    assert len(CLIENT_DISPATCHABLE) == 38
    assert set(CLIENT_DISPATCHABLE) == EXPECTED_CLIENT_DISPATCHABLE
    assert isinstance(CLIENT_DISPATCHABLE, frozenset)
    assert set(ACTION_TYPES) >= CLIENT_DISPATCHABLE
    assert not is_client_dispatchable("session/defaultChatChanged")  # host-only per §8
    for unknown in ("future/newAction", "", "chat/", None, 3, ["chat/turnStarted"]):
        assert not is_client_dispatchable(unknown)
    for type_name in ACTION_TYPES:
        assert is_client_dispatchable(type_name) == (type_name in EXPECTED_CLIENT_DISPATCHABLE)
        assert ACTION_TYPES[type_name].client_dispatchable == (type_name in EXPECTED_CLIENT_DISPATCHABLE)


def test_action_since() -> None:
    assert ACTION_SINCE.keys() == ACTION_TYPES.keys()
    known = {"0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0", "0.5.1", "0.5.2", "0.6.0", "0.7.0"}
    assert set(ACTION_SINCE.values()) <= known
    spot = {
        "root/agentsChanged": "0.1.0",
        "session/chatAdded": "0.4.0",
        "session/changesetsChanged": "0.2.0",
        "session/mcpServerStateChanged": "0.3.0",
        "session/activeClientSet": "0.5.0",
        "session/inputNeededSet": "0.5.1",
        "session/mcpServerStartRequested": "0.5.2",
        "session/workingDirectorySet": "0.7.0",
        "session/customizationRemoved": "0.2.0",
        "chat/turnStarted": "0.4.0",
        "chat/activityChanged": "0.5.0",
        "chat/turnsLoaded": "0.5.1",
        "chat/draftChanged": "0.5.0",
        "chat/toolCallAuthRequired": "0.6.0",
        "chat/workingDirectoryRemoved": "0.7.0",
        "terminal/commandFinished": "0.1.0",
        "changeset/filesReviewChanged": "0.6.0",
        "changeset/contentChanged": "0.4.0",
        "changeset/operationStatusChanged": "0.3.0",
        "annotations/entrySet": "0.4.0",
        "resourceWatch/changed": "0.2.0",
    }
    for type_name, version in spot.items():
        assert ACTION_SINCE[type_name] == version, type_name


@pytest.mark.parametrize(
    ("type_name", "kind"),
    [
        ("root/configChanged", "root"),
        ("session/ready", "session"),
        ("chat/delta", "chat"),
        ("terminal/data", "terminal"),
        ("changeset/cleared", "changeset"),
        ("annotations/set", "annotations"),
        ("resourceWatch/changed", "resourceWatch"),
        ("chat/someFutureAction", "chat"),
        ("future/newAction", None),
        ("noslash", None),
        ("", None),
        (None, None),
        (42, None),
    ],
)
def test_channel_kind_of_action(type_name, kind) -> None:
    assert channel_kind_of_action(type_name) == kind


def test_versions_and_error_codes() -> None:
    assert PROTOCOL_VERSION == "0.8.0"
    assert SUPPORTED_VERSIONS == ("0.8.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1")
    assert {e.name: int(e) for e in ErrorCode} == {
        "PARSE_ERROR": -32700,
        "INVALID_REQUEST": -32600,
        "METHOD_NOT_FOUND": -32601,
        "INVALID_PARAMS": -32602,
        "INTERNAL_ERROR": -32603,
        "SESSION_NOT_FOUND": -32001,
        "PROVIDER_NOT_FOUND": -32002,
        "SESSION_ALREADY_EXISTS": -32003,
        "TURN_IN_PROGRESS": -32004,
        "UNSUPPORTED_PROTOCOL_VERSION": -32005,
        "CONTENT_NOT_FOUND": -32006,
        "AUTH_REQUIRED": -32007,
        "NOT_FOUND": -32008,
        "PERMISSION_DENIED": -32009,
        "ALREADY_EXISTS": -32010,
        "CONFLICT": -32011,
    }


@requires_corpus
def test_types_registry_covers_fixtures_and_models() -> None:
    assert all(isinstance(ta, TypeAdapter) for ta in TYPES.values())
    fixture_types = {json.loads(p.read_text())["type"] for p in corpus_files("round-trips")}
    assert fixture_types == {
        "ActionEnvelope",
        "StateAction",
        "Customization",
        "SessionStatus",
        "StringOrMarkdown",
        "JsonRpcMessage",
        "ChangesetOperationTarget",
        "ChatInputQuestion",
        "SessionSummary",
        "SessionAddedParams",
        "PartialSessionSummary",
        "Implementation",
        "InitializeResult",
        "ChatSource",
    }
    assert fixture_types <= TYPES.keys()
    for cls in ACTION_TYPES.values():
        assert cls.__name__ in TYPES
    for cls in STATE_TYPES.values():
        assert cls.__name__ in TYPES
    for params, _result in COMMANDS.values():
        assert params.__name__ in TYPES
    for params in NOTIFICATIONS.values():
        assert params.__name__ in TYPES
    for name in (
        "RootState",
        "AgentInfo",
        "SessionModelInfo",
        "TerminalInfo",
        "RootConfigState",
        "SessionState",
        "SessionActiveClient",
        "ToolDefinition",
        "SessionConfigSchema",
        "SessionConfigState",
        "SessionInputRequest",
        "Changeset",
        "AnnotationsSummary",
        "ChatState",
        "Turn",
        "ActiveTurn",
        "Message",
        "MessageAttachment",
        "ResponsePart",
        "ToolCallState",
        "ToolResultContent",
        "ConfirmationOption",
        "ToolCallRiskAssessment",
        "McpAuthRequirement",
        "ChatInputRequest",
        "ChatInputQuestion",
        "ChatInputAnswer",
        "PendingMessage",
        "ChatOrigin",
        "ChatSummary",
        "Customization",
        "ClientPluginCustomization",
        "CustomizationLoadState",
        "McpServerState",
        "TerminalState",
        "TerminalContentPart",
        "TerminalClaim",
        "ChangesetState",
        "ChangesetFile",
        "ChangesetOperation",
        "FileEdit",
        "ContentRef",
        "AnnotationsState",
        "ResourceWatchState",
        "Icon",
        "TextRange",
        "UsageInfo",
        "ErrorInfo",
        "ProtectedResourceMetadata",
        "ConfigPropertySchema",
        "ConfigSchema",
        "CompletionItem",
        "Snapshot",
        "InitializeParams",
        "ReconnectResult",
        "SubscribeParams",
        "CreateSessionParams",
        "CreateChatParams",
        "FetchTurnsParams",
        "CompletionsParams",
        "AuthenticateParams",
        "ResourceWriteParams",
        "ListSessionsResult",
        "ResolveSessionConfigResult",
        "SessionRemovedParams",
        "SessionSummaryChangedParams",
        "ProgressParams",
        "AuthRequiredParams",
        "OtlpExportParams",
        "JsonRpcRequest",
        "JsonRpcNotification",
        "JsonRpcSuccessResponse",
        "JsonRpcErrorResponse",
    ):
        assert name in TYPES, name
        assert hasattr(protocol, name), name


def test_commands_catalogue() -> None:
    assert set(COMMANDS) == {
        "initialize",
        "ping",
        "reconnect",
        "subscribe",
        "createSession",
        "disposeSession",
        "createChat",
        "disposeChat",
        "createTerminal",
        "disposeTerminal",
        "createResourceWatch",
        "listSessions",
        "resolveSessionConfig",
        "sessionConfigCompletions",
        "fetchTurns",
        "completions",
        "authenticate",
        "invokeChangesetOperation",
        "resourceRead",
        "resourceWrite",
        "resourceList",
        "resourceCopy",
        "resourceDelete",
        "resourceMove",
        "resourceResolve",
        "resourceMkdir",
        "resourceRequest",
    }
    for method in ("ping", "createSession", "disposeSession", "createChat", "disposeChat"):
        assert COMMANDS[method][1] is None  # JSON null result
    assert set(NOTIFICATIONS) == {
        "unsubscribe",
        "dispatchAction",
        "action",
        "root/sessionAdded",
        "root/sessionRemoved",
        "root/sessionSummaryChanged",
        "root/progress",
        "auth/required",
        "otlp/exportLogs",
        "otlp/exportTraces",
        "otlp/exportMetrics",
    }


def test_public_api_names() -> None:
    for name in (
        "parse",
        "dump",
        "roundtrip",
        "validate_action",
        "validate_state",
        "explain",
        "ProtocolError",
        "TYPES",
        "ACTION_TYPES",
        "ACTION_SINCE",
        "CLIENT_DISPATCHABLE",
        "is_client_dispatchable",
        "channel_kind_of_action",
        "PROTOCOL_VERSION",
        "SUPPORTED_VERSIONS",
        "ErrorCode",
    ):
        assert name in protocol.__all__, name
        assert hasattr(protocol, name), name
    assert len(protocol.__all__) == len(set(protocol.__all__))
    assert all(hasattr(protocol, n) for n in protocol.__all__)
