"""The one async interface every agent backend implements, and what the host offers it per turn.

An agent never touches state: it receives a :class:`TurnContext` from the host and calls its
methods (stream text, call a tool, ask the user, ...); the host turns each call into AHP actions,
applies them through the store and waits for whatever the protocol says comes next (a
confirmation, a client's result, an answer).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import AsyncIterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "Agent",
    "SessionAgent",
    "SessionContext",
    "TurnContext",
    "ToolInfo",
    "ToolOutcome",
    "InputOutcome",
    "TurnFailed",
    "FileAccessDenied",
    "COMMAND_META",
]


class TurnFailed(Exception):
    """Raise from an agent to end the turn with ``chat/error`` (``error_type`` becomes ``errorType``)."""

    def __init__(self, message: str, error_type: str = "agentError", applied: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.applied = tuple(applied)  # for a refused config change: the properties taken before


class FileAccessDenied(Exception):
    """Raised by :class:`SessionContext` file and terminal helpers for a path outside the session's folders."""


#: The ``_meta`` of the attachment that the completion of an agent's slash command carries (a
#: client keeps ``_meta`` verbatim): the command is in the prompt's text, which the agent reads
#: itself, so a bridge sends the attachment nowhere.
COMMAND_META = {"ahpLab": {"agentCommand": True}}


@dataclass(frozen=True)
class ToolInfo:
    """A tool the agent may call this turn: a server tool, an MCP tool or a client tool."""

    name: str
    description: str = ""
    title: str | None = None
    input_schema: dict = field(default_factory=dict)
    owner: str = "server"  # "server", "mcp:<customizationId>" or "client:<clientId>"
    annotations: dict = field(default_factory=dict)

    def defaults(self) -> dict:
        props = self.input_schema.get("properties") or {}
        return {k: v["default"] for k, v in props.items() if isinstance(v, dict) and "default" in v}


@dataclass
class ToolOutcome:
    """How a tool call ended, as the agent sees it."""

    tool_call_id: str
    status: str  # "completed" or "cancelled"
    success: bool
    message: str = ""  # pastTenseMessage or the cancellation reason message
    text: str = ""  # the text content of the result
    result: dict = field(default_factory=dict)  # the whole ToolCallResult (completed only)
    reason: str | None = None  # cancellation reason: denied / skipped / result-denied
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "completed" and self.success


@dataclass
class InputOutcome:
    """The user's answer to an input request."""

    request_id: str
    response: str  # "accept" | "decline" | "cancel"
    answers: dict = field(default_factory=dict)  # questionId -> ChatInputAnswer

    def value(self, question_id: str) -> Any:
        """The submitted value of one question (``None`` when skipped or unanswered)."""
        answer = self.answers.get(question_id) or {}
        value = answer.get("value")
        return value.get("value") if isinstance(value, dict) else None


@runtime_checkable
class TurnContext(Protocol):
    """What an agent can do during one turn; implemented by the host."""

    session: str
    chat: str
    turn_id: str
    message: dict  # the initiating Message

    @property
    def prompt(self) -> str:
        """The text of the message that started the turn."""

    def tools(self) -> list[ToolInfo]:
        """The tools the agent may call now: server tools, then each active client's."""

    async def say(self, text: str | AsyncIterable[str], *, chunk_size: int | None = None) -> str:
        """Stream markdown as a new response part (a string in chunks, or each piece of a live
        stream as it arrives); returns the part id."""

    async def think(self, text: str | AsyncIterable[str], *, chunk_size: int | None = None) -> str:
        """Stream reasoning as a new response part (like :meth:`say`); returns the part id."""

    async def notify(self, text: str) -> None:
        """Append a system notification part."""

    async def call_tool(
        self,
        name: str,
        arguments: dict | None = None,
        *,
        confirm: bool | None = None,
        options: list[dict] | None = None,
        title: str | None = None,
        intention: str | None = None,
        requires_result_confirmation: bool = False,
        editable: bool | None = None,
    ) -> ToolOutcome:
        """Call a tool through the protocol (confirmation, the owner's result) and return how it ended."""

    async def ask(self, questions: list[dict], *, message: str | None = None) -> InputOutcome:
        """Ask the user an input request and wait for the answer."""

    async def usage(self, input_tokens: int, output_tokens: int, model: str | None = None) -> None:
        """Report the turn's token usage (``chat/usage``)."""

    async def activity(self, text: str | None) -> None:
        """Say what the agent is doing now (``chat/activityChanged``; ``None`` clears it)."""

    def take_steering(self) -> dict | None:
        """Consume the chat's steering message, if any (returns its Message)."""

    def emit(self, action: dict) -> int:
        """Apply one chat action of this turn as the agent (its ``turnId`` must be this turn's).

        For backends that map their own event stream one to one onto AHP actions (the ACP bridge);
        returns the action's server seq. Raises ``asyncio.CancelledError`` once the turn is over.
        """

    async def wait_tool_call(
        self, tool_call_id: str, leaving: set[str], timeout: float | None = None
    ) -> dict:
        """Wait until the tool call's status is not in ``leaving``; returns the call's state.

        Raises ``asyncio.CancelledError`` when the turn ends first, ``TimeoutError`` after ``timeout``.
        """


class Agent(Protocol):
    """An agent backend behind the host."""

    name: str

    def info(self) -> dict:
        """The ``AgentInfo`` for the root state (provider, displayName, description, models, ...)."""

    async def run_turn(self, ctx: TurnContext) -> None:
        """Produce one turn. Return normally to complete it; raise :class:`TurnFailed` to fail it.

        Cancellation (``chat/turnCancelled``) arrives as ``asyncio.CancelledError``.
        """


@runtime_checkable
class SessionContext(Protocol):
    """What an agent can do for one AHP session outside a single turn; implemented by the host.

    Paths are local paths; every file and terminal helper is confined to the session's working
    directories (through the host's one path-confinement check) and raises
    :class:`FileAccessDenied` with a one-sentence reason for anything outside them.
    """

    session: str
    working_directories: list[str]  # local absolute paths; the first is the primary one

    def config_values(self) -> dict:
        """The session's current config values (``{}`` without a config)."""

    def add_secret_env(self, env: Mapping[str, str]) -> None:
        """The environment the agent was given: its secrets (all but settings such as
        ``LOG_LEVEL=info``) never show in state, the log or exports."""

    def redact(self, text: str) -> str:
        """``text`` as the host would publish it: secrets masked (a text cut later must not cut
        through one first)."""

    async def opened(self) -> None:
        """Wait until the session's channel exists (at once when it does): during ``open_session``
        it does not, so the agent's updates to the session wait for this."""

    def update_config(self, values: dict, offered: dict | None = None) -> int | None:
        """Agent-initiated config change (the agent switched its own mode): ``session/configChanged``.

        Returns the action's server seq (``None`` when nothing changed). A value the session's
        config schema does not allow is a ``ValueError`` that says which, and changes nothing,
        unless ``offered`` lists it for its property: values the agent offers now, beyond the
        schema the session was created with (which no AHP action changes).
        """

    def update_title(self, title: str | None) -> int | None:
        """Agent-initiated session title (``session/titleChanged``); returns its seq. ``None``
        clears the agent's title: the session has the title it had before the agent named it."""

    def latest_seq(self, channel: str, action_type: str, **fields: Any) -> int | None:
        """The seq of the newest accepted action of that type on a channel whose fields match."""

    def set_commands(self, commands: list[dict]) -> None:
        """The agent's slash commands (``{name, description, hint?}``), offered by ``completions`` on ``/``."""

    def put_content(self, data: str | bytes, content_type: str = "text/plain") -> dict:
        """Keep ``data`` for ``resourceRead`` and return its ``ContentRef`` (diff sides, images)."""

    def file_turn(self) -> Any:
        """An async context manager: while it is held, no resource command's file work runs (take
        it around a path check and the file work on that path, as the ACP bridge's file requests do)."""

    def check_path(self, path: str, *, write: bool = False) -> str:
        """The absolute path if it is inside the working directories, else :class:`FileAccessDenied`."""

    def read_text_file(self, path: str, line: int | None = None, limit: int | None = None) -> str:
        """A text file's content (``line`` is 1-based, ``limit`` a line count)."""

    def write_text_file(self, path: str, content: str) -> None:
        """Write a text file inside the working directories."""

    async def create_terminal(
        self,
        command: str,
        args: list[str] | None = None,
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        on_output: Any = None,
    ) -> Any:
        """Start a command as an AHP terminal channel (``ahp-terminal:/...``); returns its handle.

        The handle has ``uri``, ``title``, ``output()`` → ``(text, truncated, exit_code, signal)``,
        ``await wait_for_exit()``, ``kill()`` and ``release()``. ``on_output(handle)`` is called
        after each chunk of output.
        """

    def claim_terminal(self, terminal: Any, turn_id: str | None, tool_call_id: str | None) -> None:
        """Record which tool call of which turn uses a terminal (``terminal/claimed``)."""


class SessionAgent(Agent, Protocol):
    """An agent that keeps per-session state (a subprocess, a remote session). All hooks optional.

    The host calls each hook only when the agent has it:

    * ``await open_session(ctx: SessionContext) -> dict | None`` while the AHP session is being
      created, before ``session/ready``; it may return the session's initial ``config``
      (``{"schema": SessionConfigSchema, "values": {...}}``). Raising makes the session start
      without a config; the reason is kept and the agent's next turn reports it.
    * ``await close_session(session: str)`` when the session is disposed.
    * ``await config_changed(session: str, changes: dict) -> None`` after a client's accepted
      ``session/configChanged`` (``changes`` = the properties it changed). Raising
      :class:`TurnFailed` makes the host put the previous values back, but for the properties
      named in its ``applied`` (those the backend took before it refused the rest).
    * ``await restart(session: str)`` for ``lab.restart_agent()``: start the backend afresh and
      restore the session's config values onto it.
    * ``await resolve_session_config(params: dict) -> dict | None`` for ``resolveSessionConfig``
      (``{schema, values}``), given the command's params.
    """


def runs_from(words: Sequence[Any], cwd: Any = None, env: Any = None) -> list[Path]:
    """Where a command runs code from, as far as its words say: its working folder; the command
    itself (a bare one found on its ``PATH``; ``python`` is the kernel's interpreter, as the host
    runs it) and the folder it is in, and a script's folder (its modules sit beside it, and Python
    looks there first); a file another word names (a database, say) is kept itself, not its
    folder; the virtual environment an interpreter is in; and the folders its ``env``'s
    ``PYTHONPATH``/``NODE_PATH`` name. The host lets no stranger write there
    (``docs/security.md`` §3)."""
    out = []
    env = env if isinstance(env, dict) else {}
    if isinstance(cwd, (str, os.PathLike)) and os.fspath(cwd):
        out.append(Path(os.path.expanduser(os.fspath(cwd))))
    for n, word in enumerate(words):
        if not isinstance(word, str) or not word:
            continue
        if n == 0 and not os.path.isabs(word):
            path = env.get("PATH") if isinstance(env.get("PATH"), str) else None
            word = sys.executable if word in ("python", "python3") else shutil.which(word, path=path) or word
        if os.path.isabs(word) and os.path.exists(word):
            file = Path(word)
            runs = n == 0 or file.suffix in SCRIPT_SUFFIXES or file.is_dir()
            out.append(file.parent if runs and file.is_file() else file)
            environment = file.parent.parent
            if (environment / "pyvenv.cfg").is_file():
                out.append(environment)
    for name in ("PYTHONPATH", "NODE_PATH"):
        value = env.get(name)
        if isinstance(value, str):
            out.extend(Path(os.path.expanduser(part)) for part in value.split(os.pathsep) if part)
    return out


#: The files a command's word names that are code it runs (their folder is kept, not only them).
SCRIPT_SUFFIXES = frozenset(
    {".py", ".pyw", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".sh", ".bash", ".php", ".lua"}
)
