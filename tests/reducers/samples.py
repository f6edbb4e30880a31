"""The project's own sample states and actions: seeds for property tests that run without the corpus.

They follow the shapes of the protocol reference (chat, session, root and terminal channels) and
cover every action type those reducers handle, so hypothesis can perturb them into sequences that
hit and miss ids, reorder tool-call transitions and carry off-type values.
"""

from __future__ import annotations

from ahp_lab.reducers import reduce_chat

CHAT = "ahp-chat:/s/c1"
USER = {"text": "hi", "origin": {"kind": "user"}}


def chat_state(status=1, **fields) -> dict:
    """A minimal chat state (``ahp-chat:/c``, no turns) with ``fields`` set on it."""
    return {
        "resource": "ahp-chat:/c",
        "title": "t",
        "status": status,
        "modifiedAt": "x",
        "turns": [],
        **fields,
    }


def started(status=1, **fields) -> dict:
    """:func:`chat_state` with turn ``t1`` started."""
    action = {"type": "chat/turnStarted", "turnId": "t1", "startedAt": "s", "message": USER}
    return reduce_chat(chat_state(status=status, **fields), action, 9999)


def apply(state: dict, *actions: dict, reducer=None) -> dict:
    """``state`` after ``actions``, each sent with ``turnId: "t1"`` (the chat reducer by default)."""
    for action in actions:
        state = (reducer or reduce_chat)(state, {"turnId": "t1", **action}, 9999)
    return state


def tool_call(state: dict, call_id: str = "tc1") -> dict:
    """The active turn's tool call ``call_id``."""
    for part in state["activeTurn"]["responseParts"]:
        if part.get("kind") == "toolCall" and part["toolCall"]["toolCallId"] == call_id:
            return part["toolCall"]
    raise AssertionError(f"no tool call {call_id}")


def _tc(step: str, **fields) -> dict:
    return {"type": f"chat/toolCall{step}", "turnId": "turn-1", "toolCallId": "tc-1", **fields}


CHAT_INITIALS = [
    {"resource": CHAT, "title": "Chat", "status": 1, "modifiedAt": "1970-01-01T00:00:00.000Z", "turns": []},
    {
        "resource": CHAT,
        "title": "Chat",
        "status": 8 | 32,
        "modifiedAt": "1970-01-01T00:00:00.000Z",
        "turns": [
            {
                "id": "turn-0",
                "message": USER,
                "responseParts": [{"kind": "markdown", "id": "md-0", "content": "old"}],
                "state": "complete",
            }
        ],
        "activeTurn": {
            "id": "turn-1",
            "startedAt": "2026-01-01T00:00:00.000Z",
            "message": USER,
            "responseParts": [
                {"kind": "markdown", "id": "md-1", "content": "Hel"},
                {"kind": "reasoning", "id": "rs-1", "content": ""},
                {
                    "kind": "toolCall",
                    "toolCall": {
                        "status": "pending-confirmation",
                        "toolCallId": "tc-1",
                        "toolName": "bash",
                        "displayName": "Bash",
                        "invocationMessage": "Run ls",
                        "toolInput": "{}",
                        "options": [{"id": "ok", "label": "Allow", "kind": "approve"}],
                        "contributor": {"kind": "mcp", "customizationId": "mcp-1"},
                    },
                },
            ],
        },
        "queuedMessages": [{"id": "q1", "message": USER}],
        "steeringMessage": {"id": "s1", "message": USER},
    },
]

CHAT_ACTIONS = [
    {
        "type": "chat/turnStarted",
        "turnId": "turn-1",
        "startedAt": "2026-01-01T00:00:00.000Z",
        "message": USER,
    },
    {
        "type": "chat/turnStarted",
        "turnId": "turn-2",
        "startedAt": "s",
        "message": USER,
        "queuedMessageId": "q1",
    },
    {
        "type": "chat/responsePart",
        "turnId": "turn-1",
        "part": {"kind": "markdown", "id": "md-1", "content": ""},
    },
    {
        "type": "chat/responsePart",
        "turnId": "turn-1",
        "part": {"kind": "reasoning", "id": "rs-1", "content": ""},
    },
    {"type": "chat/delta", "turnId": "turn-1", "partId": "md-1", "content": "lo"},
    {"type": "chat/reasoning", "turnId": "turn-1", "partId": "rs-1", "content": "hmm"},
    {"type": "chat/usage", "turnId": "turn-1", "usage": {"inputTokens": 1, "outputTokens": 2}},
    {"type": "chat/turnComplete", "turnId": "turn-1", "duration": 5},
    {"type": "chat/turnCancelled", "turnId": "turn-1", "duration": 5},
    {"type": "chat/error", "turnId": "turn-1", "duration": 5, "error": {"errorType": "x", "message": "boom"}},
    {"type": "chat/activityChanged", "activity": "Thinking"},
    {"type": "chat/truncated", "turnId": "turn-0"},
    {"type": "chat/truncated"},
    {
        "type": "chat/turnsLoaded",
        "turns": [{"id": "turn-m", "message": USER, "responseParts": [], "state": "complete"}],
    },
    {"type": "chat/pendingMessageSet", "kind": "queued", "id": "q2", "message": USER},
    {"type": "chat/pendingMessageSet", "kind": "steering", "id": "s2", "message": USER},
    {"type": "chat/pendingMessageRemoved", "kind": "queued", "id": "q1"},
    {"type": "chat/pendingMessageRemoved", "kind": "steering", "id": "s1"},
    {"type": "chat/queuedMessagesReordered", "order": ["q2", "q1"]},
    {"type": "chat/draftChanged", "draft": {"text": "dr", "origin": {"kind": "user"}}},
    {"type": "chat/workingDirectorySet", "directory": "file:///w"},
    {"type": "chat/workingDirectoryRemoved", "directory": "file:///w"},
    {"type": "chat/inputRequested", "request": {"id": "in-1", "message": "Which?", "questions": []}},
    {
        "type": "chat/inputAnswerChanged",
        "requestId": "in-1",
        "questionId": "q",
        "answer": {"state": "draft", "value": {"kind": "boolean", "value": True}},
    },
    {
        "type": "chat/inputCompleted",
        "requestId": "in-1",
        "response": "accept",
        "answers": {"q": {"state": "skipped"}},
    },
    _tc(
        "Start", toolName="bash", displayName="Bash", contributor={"kind": "mcp", "customizationId": "mcp-1"}
    ),
    _tc("Delta", content='{"a"', invocationMessage="Preparing"),
    _tc(
        "Ready",
        invocationMessage="Run",
        toolInput="{}",
        confirmationTitle="Allow?",
        options=[{"id": "ok", "label": "Allow", "kind": "approve"}],
    ),
    _tc("Ready", invocationMessage="Run", toolInput="{}", confirmed="not-needed"),
    _tc("Confirmed", approved=True, confirmed="user-action", selectedOptionId="ok", editedToolInput="{}"),
    _tc("Confirmed", approved=False, reason="denied", reasonMessage="no"),
    _tc("ContentChanged", content=[{"type": "text", "text": "out"}]),
    _tc("Complete", result={"success": True, "pastTenseMessage": "Ran"}, requiresResultConfirmation=True),
    _tc("Complete", result={"success": False, "pastTenseMessage": "Failed"}),
    _tc("ResultConfirmed", approved=True),
    _tc("ResultConfirmed", approved=False),
    _tc("AuthRequired", auth={"reason": "required", "resource": {"resource": "https://mcp.example"}}),
    _tc("AuthResolved"),
]

SESSION_INITIALS = [
    {
        "provider": "p",
        "title": "Session",
        "status": 1,
        "lifecycle": "ready",
        "activeClients": [],
        "chats": [{"resource": CHAT, "title": "Chat", "status": 1, "modifiedAt": "m"}],
        "defaultChat": CHAT,
        "config": {"schema": {"type": "object"}, "values": {"model": "a"}},
        "customizations": [
            {
                "type": "plugin",
                "id": "p1",
                "uri": "file:///p1",
                "name": "P1",
                "enabled": True,
                "children": [
                    {"type": "skill", "id": "p1/s", "uri": "file:///p1/s", "name": "s"},
                    {
                        "type": "mcpServer",
                        "id": "mcp-1",
                        "uri": "x",
                        "name": "m",
                        "enabled": True,
                        "state": {"kind": "stopped"},
                    },
                ],
            },
            {
                "type": "mcpServer",
                "id": "mcp-2",
                "uri": "y",
                "name": "m2",
                "enabled": True,
                "state": {"kind": "stopped"},
            },
        ],
    }
]

_REQUEST = {
    "kind": "chatInput",
    "id": f"{CHAT}#in-1",
    "chat": CHAT,
    "request": {"id": "in-1", "message": "?"},
}

SESSION_ACTIONS = [
    {"type": "session/ready"},
    {"type": "session/creationFailed", "error": {"errorType": "spawn", "message": "no"}},
    {
        "type": "session/chatAdded",
        "summary": {"resource": "ahp-chat:/s/c2", "title": "C2", "status": 1, "modifiedAt": "m"},
    },
    {"type": "session/chatRemoved", "chat": CHAT},
    {"type": "session/chatUpdated", "chat": CHAT, "changes": {"title": "T", "status": 8, "resource": "x"}},
    {"type": "session/defaultChatChanged", "defaultChat": "ahp-chat:/s/c2"},
    {"type": "session/titleChanged", "title": "New"},
    {"type": "session/isReadChanged", "isRead": True},
    {"type": "session/isArchivedChanged", "isArchived": True},
    {"type": "session/activityChanged", "activity": "Busy"},
    {
        "type": "session/changesetsChanged",
        "changesets": [{"label": "L", "uriTemplate": "u", "changeKind": "session"}],
    },
    {"type": "session/configChanged", "config": {"model": "b"}, "replace": False},
    {"type": "session/metaChanged", "_meta": {"k": 1}},
    {"type": "session/serverToolsChanged", "tools": [{"name": "t", "description": "d"}]},
    {"type": "session/activeClientSet", "activeClient": {"clientId": "c1", "displayName": "C1", "tools": []}},
    {"type": "session/activeClientRemoved", "clientId": "c1"},
    {"type": "session/workingDirectorySet", "directory": "file:///w"},
    {"type": "session/workingDirectoryRemoved", "directory": "file:///w"},
    {"type": "session/inputNeededSet", "request": _REQUEST},
    {"type": "session/inputNeededRemoved", "id": _REQUEST["id"]},
    {"type": "session/customizationsChanged", "customizations": []},
    {"type": "session/customizationToggled", "id": "p1/s", "enabled": False},
    {"type": "session/customizationToggled", "id": "p1", "enabled": False},
    {
        "type": "session/customizationUpdated",
        "customization": {
            "type": "plugin",
            "id": "p2",
            "uri": "file:///p2",
            "name": "P2",
            "enabled": True,
            "children": [],
        },
    },
    {"type": "session/customizationRemoved", "id": "p1/s"},
    {
        "type": "session/mcpServerStateChanged",
        "id": "mcp-1",
        "state": {"kind": "ready"},
        "channel": "mcp://mcp-1",
    },
    {"type": "session/mcpServerStartRequested", "id": "mcp-2"},
    {"type": "session/mcpServerStopRequested", "id": "mcp-1"},
]

ROOT_INITIALS = [{"agents": [], "activeSessions": 0, "config": {"schema": {"type": "object"}, "values": {}}}]
ROOT_ACTIONS = [
    {
        "type": "root/agentsChanged",
        "agents": [{"provider": "p", "displayName": "P", "description": "d", "models": []}],
    },
    {"type": "root/activeSessionsChanged", "activeSessions": 2},
    {"type": "root/terminalsChanged", "terminals": []},
    {"type": "root/configChanged", "config": {"a": 1}, "replace": True},
]

TERMINAL_INITIALS = [{"title": "bash", "content": []}]
TERMINAL_ACTIONS = [
    {"type": "terminal/data", "data": "ls\n"},
    {"type": "terminal/input", "data": "x"},
    {"type": "terminal/resized", "cols": 80, "rows": 24},
    {"type": "terminal/claimed", "claim": {"kind": "client", "clientId": "c1"}},
    {"type": "terminal/titleChanged", "title": "zsh"},
    {"type": "terminal/cwdChanged", "cwd": "file:///w"},
    {"type": "terminal/exited", "exitCode": 0},
    {"type": "terminal/cleared"},
    {"type": "terminal/commandDetectionAvailable"},
    {"type": "terminal/commandExecuted", "commandId": "k1", "commandLine": "ls", "timestamp": 1},
    {"type": "terminal/commandFinished", "commandId": "k1", "exitCode": 0, "durationMs": 3},
]

#: reducer kind -> (initial states, actions)
SAMPLES: dict[str, tuple[list[dict], list[dict]]] = {
    "chat": (CHAT_INITIALS, CHAT_ACTIONS),
    "session": (SESSION_INITIALS, SESSION_ACTIONS),
    "root": (ROOT_INITIALS, ROOT_ACTIONS),
    "terminal": (TERMINAL_INITIALS, TERMINAL_ACTIONS),
}
