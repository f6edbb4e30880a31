"""An offline ACP agent: scripted, but speaking real ACP over stdio through the SDK's agent side.

Run it behind the host with ``Lab(agent=AcpAgent([sys.executable, "examples/acp_agent.py"]))``.
It needs no model and no network. What it does depends on the first word of the prompt:

=====================  ==========================================================================
``hello`` (default)    thinks, then streams a short answer word by word
``stream N [MS]``      streams N chunks (``chunk 1 `` ...), as fast as it can or MS apart
``plan``               shows a three-step plan and revises it as it "works"
``read PATH``          a ``read`` tool call; reads the file through the client (``fs/read_text_file``)
``edit PATH TEXT``     an ``edit`` tool call with a diff and a location; asks permission; on
                       allow writes TEXT through the client (``fs/write_text_file``)
``write PATH TEXT``    writes without asking (to show a refused out-of-tree write)
``run CMD ARGS...``    an ``execute`` tool call with a terminal (``terminal/create``), streaming
``exit plan``          in ``plan`` mode: the exit-plan-mode tool call of ACP's session-modes docs;
                       the chosen option's mode becomes current (``current_mode_update``)
``mode MODE``          the agent switches its own mode
``config``             says its current mode and verbosity
``slow``               streams one chunk every 50 ms until cancelled (``session/cancel``)
``usage``              answers with token usage
``refuse``             ends the turn with the ``refusal`` stop reason
``crash``              exits mid-turn (exit code 3)
=====================  ==========================================================================

Modes: ``ask`` (asks before edits), ``code`` (edits without asking), ``plan`` (no edits). Config
option ``verbosity`` (``brief`` / ``detailed``). Every permission outcome is reported in text:
``permission: selected <optionId>`` or ``permission: cancelled``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import uuid
from typing import Any

import acp
from acp import helpers
from acp.schema import (
    AgentCapabilities,
    AvailableCommand,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    ToolCallLocation,
    ToolCallUpdate,
    Usage,
)

MODES = [
    SessionMode(id="ask", name="Ask", description="Request permission before making any changes"),
    SessionMode(id="code", name="Code", description="Write and modify code with full tool access"),
    SessionMode(id="plan", name="Plan", description="Design and plan without implementation"),
]
VERBOSITY = ["brief", "detailed"]


class _Session:
    def __init__(self, cwd: str) -> None:
        self.cwd = cwd
        self.mode = "ask"
        self.verbosity = "brief"
        self.cancelled = asyncio.Event()


class OfflineAgent:
    """The scripted ACP agent (the SDK's ``Agent`` interface)."""

    def __init__(self) -> None:
        self.conn: Any = None
        self.sessions: dict[str, _Session] = {}
        self.client_caps: Any = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    # -- lifecycle -------------------------------------------------------------------------------

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **kw: Any
    ):
        self.client_caps = client_capabilities
        return InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                prompt_capabilities=PromptCapabilities(image=False, embedded_context=True)
            ),
            agent_info=Implementation(name="ahp-lab-offline-agent", title="Offline ACP agent", version="1.0"),
        )

    async def new_session(
        self, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **kw: Any
    ):
        session_id = f"sess-{uuid.uuid4().hex[:8]}"
        session = self.sessions[session_id] = _Session(cwd)
        asyncio.get_running_loop().call_soon(asyncio.ensure_future, self._announce_commands(session_id))
        return NewSessionResponse(
            session_id=session_id,
            modes=SessionModeState(current_mode_id=session.mode, available_modes=MODES),
            config_options=[self._verbosity_option(session)],
        )

    def _verbosity_option(self, session: _Session) -> SessionConfigOptionSelect:
        return SessionConfigOptionSelect(
            id="verbosity",
            name="Verbosity",
            description="How much the agent says",
            type="select",
            current_value=session.verbosity,
            options=[SessionConfigSelectOption(value=v, name=v.title()) for v in VERBOSITY],
        )

    async def _announce_commands(self, session_id: str) -> None:
        commands = [
            AvailableCommand(name="plan", description="Show a plan and work through it"),
            AvailableCommand(name="hello", description="Say hello"),
        ]
        await self.conn.session_update(
            session_id,
            AvailableCommandsUpdate(session_update="available_commands_update", available_commands=commands),
        )

    async def set_session_mode(self, session_id: str, mode_id: str, **kw: Any):
        if mode_id not in {m.id for m in MODES}:
            raise acp.RequestError.invalid_params({"details": f"unknown mode {mode_id}"})
        self.sessions[session_id].mode = mode_id
        return SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: Any, **kw: Any):
        session = self.sessions[session_id]
        if config_id != "verbosity" or value not in VERBOSITY:
            raise acp.RequestError.invalid_params({"details": f"unknown option {config_id}={value}"})
        session.verbosity = value
        return SetSessionConfigOptionResponse(config_options=[self._verbosity_option(session)])

    async def cancel(self, session_id: str, **kw: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            session.cancelled.set()

    async def authenticate(self, method_id: str, **kw: Any):
        return None

    # -- helpers ----------------------------------------------------------------------------------

    async def say(self, session_id: str, text: str) -> None:
        await self.conn.session_update(session_id, helpers.update_agent_message_text(text))

    async def think(self, session_id: str, text: str) -> None:
        await self.conn.session_update(session_id, helpers.update_agent_thought_text(text))

    async def ask(self, session_id: str, call: ToolCallUpdate, options: list[PermissionOption]) -> str | None:
        response = await self.conn.request_permission(session_id=session_id, tool_call=call, options=options)
        outcome = response.outcome
        chosen = getattr(outcome, "option_id", None)
        await self.say(session_id, f"permission: {'selected ' + chosen if chosen else 'cancelled'}\n")
        return chosen

    # -- the prompt -------------------------------------------------------------------------------

    async def prompt(self, prompt: list, session_id: str, **kw: Any) -> PromptResponse:
        session = self.sessions[session_id]
        session.cancelled.clear()
        text = " ".join(getattr(block, "text", "") for block in prompt).strip()
        words = text.split()
        verb = words[0].lower().lstrip("/") if words else "hello"
        args = words[1:]
        handler = getattr(self, f"do_{verb}", None)
        if handler is None:
            handler, args = self.do_hello, words
        stop = await handler(session_id, session, args)
        usage = (
            Usage(input_tokens=len(words), output_tokens=42, total_tokens=len(words) + 42)
            if verb == "usage"
            else None
        )
        return PromptResponse(
            stop_reason=stop or ("cancelled" if session.cancelled.is_set() else "end_turn"), usage=usage
        )

    async def do_hello(self, sid: str, session: _Session, args: list[str]) -> None:
        await self.think(sid, "The user greeted me; ")
        await self.think(sid, "I will answer briefly.")
        answer = "Hello from the offline ACP agent! I speak real ACP over stdio."
        if session.verbosity == "detailed":
            answer += " Every word you read arrived as its own agent_message_chunk."
        for word in answer.split(" "):
            await self.say(sid, word + " ")

    async def do_usage(self, sid: str, session: _Session, args: list[str]) -> None:
        await self.say(sid, "Counting tokens.")

    async def do_stream(self, sid: str, session: _Session, args: list[str]) -> None:
        pause = float(args[1]) / 1000 if len(args) > 1 else 0.0
        for i in range(int(args[0]) if args else 100):
            await self.say(sid, f"chunk {i + 1} ")
            if pause:
                await asyncio.sleep(pause)

    async def do_slow(self, sid: str, session: _Session, args: list[str]) -> str | None:
        for i in range(10_000):
            if session.cancelled.is_set():
                return "cancelled"
            await self.say(sid, f"tick {i + 1} ")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(session.cancelled.wait(), 0.05)
        return None

    async def do_config(self, sid: str, session: _Session, args: list[str]) -> None:
        await self.say(sid, f"mode={session.mode} verbosity={session.verbosity}")

    async def do_mode(self, sid: str, session: _Session, args: list[str]) -> None:
        mode = args[0] if args else "code"
        session.mode = mode
        await self.conn.session_update(sid, helpers.update_current_mode(mode))
        await self.say(sid, f"I switched myself to {mode} mode.")

    async def do_verbosity(self, sid: str, session: _Session, args: list[str]) -> None:
        session.verbosity = args[0] if args and args[0] in VERBOSITY else "detailed"
        await self.conn.session_update(
            sid,
            ConfigOptionUpdate(
                session_update="config_option_update", config_options=[self._verbosity_option(session)]
            ),
        )
        await self.say(sid, f"verbosity is now {session.verbosity}")

    async def do_refuse(self, sid: str, session: _Session, args: list[str]) -> str:
        await self.say(sid, "I will not do that.")
        return "refusal"

    async def do_crash(self, sid: str, session: _Session, args: list[str]) -> None:
        await self.say(sid, "About to crash... ")
        token = os.environ.get("OFFLINE_AGENT_TOKEN", "none")
        sys.stderr.write(f"offline agent: crashing on purpose (my token is {token})\n")
        sys.stderr.flush()
        await asyncio.sleep(0.05)
        os._exit(3)

    async def do_plan(self, sid: str, session: _Session, args: list[str]) -> None:
        steps = ["Read the code", "Write the change", "Run the tests"]
        for done in range(len(steps) + 1):
            entries = [
                helpers.plan_entry(
                    s, status="completed" if i < done else "in_progress" if i == done else "pending"
                )
                for i, s in enumerate(steps)
            ]
            await self.conn.session_update(sid, helpers.update_plan(entries))
            if done < len(steps):
                await self.say(sid, f"Working on: {steps[done]}. ")
        await self.say(sid, "All steps done.")

    def _path(self, session: _Session, arg: str) -> str:
        return arg if os.path.isabs(arg) else os.path.join(session.cwd, arg)

    async def do_read(self, sid: str, session: _Session, args: list[str]) -> None:
        path = self._path(session, args[0] if args else "README.md")
        call_id = f"read-{uuid.uuid4().hex[:6]}"
        await self.conn.session_update(
            sid, helpers.start_read_tool_call(call_id, f"Read {os.path.basename(path)}", path)
        )
        try:
            result = await self.conn.read_text_file(session_id=sid, path=path, limit=20)
        except acp.RequestError as exc:
            await self.conn.session_update(
                sid,
                helpers.update_tool_call(
                    call_id, status="failed", content=[helpers.tool_content(helpers.text_block(str(exc)))]
                ),
            )
            await self.say(sid, f"I could not read {path}: {exc}")
            return
        await self.conn.session_update(
            sid,
            helpers.update_tool_call(
                call_id,
                status="completed",
                content=[helpers.tool_content(helpers.text_block(result.content))],
            ),
        )
        await self.say(
            sid,
            f"{os.path.basename(path)} starts with: {result.content.splitlines()[0] if result.content else '(empty)'}",
        )

    async def do_write(self, sid: str, session: _Session, args: list[str]) -> None:
        path = self._path(session, args[0] if args else "out.txt")
        try:
            await self.conn.write_text_file(session_id=sid, path=path, content=" ".join(args[1:]) + "\n")
        except acp.RequestError as exc:
            await self.say(sid, f"write refused: {exc}")
            return
        await self.say(sid, f"wrote {path}")

    async def do_edit(self, sid: str, session: _Session, args: list[str]) -> None:
        path = self._path(session, args[0] if args else "notes.txt")
        new = " ".join(args[1:]) or "edited by the offline agent"
        new += "\n"
        try:
            old = (await self.conn.read_text_file(session_id=sid, path=path)).content
        except acp.RequestError:
            old = None
        call_id = f"edit-{uuid.uuid4().hex[:6]}"
        title = f"Edit {os.path.basename(path)}"
        diff = helpers.tool_diff_content(path, new, old)
        await self.conn.session_update(
            sid,
            helpers.start_tool_call(
                call_id,
                title,
                kind="edit",
                status="pending",
                content=[diff],
                locations=[ToolCallLocation(path=path, line=1)],
                raw_input={"path": path, "content": new},
            ),
        )
        if session.mode == "plan":
            await self.conn.session_update(sid, helpers.update_tool_call(call_id, status="failed"))
            await self.say(sid, "I am in plan mode and do not edit files.")
            return
        chosen = "allow-once"
        if session.mode == "ask":
            chosen = await self.ask(
                sid,
                ToolCallUpdate(
                    tool_call_id=call_id, title=title, kind="edit", status="pending", content=[diff]
                ),
                [
                    PermissionOption(option_id="allow-once", name="Allow once", kind="allow_once"),
                    PermissionOption(
                        option_id="allow-always", name="Always allow edits", kind="allow_always"
                    ),
                    PermissionOption(option_id="reject-once", name="Reject", kind="reject_once"),
                    PermissionOption(
                        option_id="reject-always", name="Never allow edits", kind="reject_always"
                    ),
                ],
            )
        if chosen is None or chosen.startswith("reject"):
            await self.conn.session_update(sid, helpers.update_tool_call(call_id, status="failed"))
            await self.say(sid, "I left the file alone.")
            return
        await self.conn.session_update(sid, helpers.update_tool_call(call_id, status="in_progress"))
        try:
            await self.conn.write_text_file(session_id=sid, path=path, content=new)
        except acp.RequestError as exc:
            await self.conn.session_update(
                sid,
                helpers.update_tool_call(
                    call_id, status="failed", content=[helpers.tool_content(helpers.text_block(str(exc)))]
                ),
            )
            await self.say(sid, f"write refused: {exc}")
            return
        await self.conn.session_update(
            sid, helpers.update_tool_call(call_id, status="completed", raw_output={"written": path})
        )
        await self.say(sid, f"Edited {os.path.basename(path)}.")

    async def do_run(self, sid: str, session: _Session, args: list[str]) -> None:
        command, rest = (args[0], args[1:]) if args else ("echo", ["hello"])
        call_id = f"run-{uuid.uuid4().hex[:6]}"
        await self.conn.session_update(
            sid,
            helpers.start_tool_call(
                call_id,
                f"Run {' '.join([command, *rest])}",
                kind="execute",
                status="pending",
                raw_input={"command": [command, *rest]},
            ),
        )
        try:
            terminal = await self.conn.create_terminal(
                session_id=sid, command=command, args=rest, cwd=session.cwd
            )
        except acp.RequestError as exc:
            await self.conn.session_update(sid, helpers.update_tool_call(call_id, status="failed"))
            await self.say(sid, f"could not start {command}: {exc}")
            return
        await self.conn.session_update(
            sid,
            helpers.update_tool_call(
                call_id, status="in_progress", content=[helpers.tool_terminal_ref(terminal.terminal_id)]
            ),
        )
        exit_status = await self.conn.wait_for_terminal_exit(session_id=sid, terminal_id=terminal.terminal_id)
        output = await self.conn.terminal_output(session_id=sid, terminal_id=terminal.terminal_id)
        await self.conn.release_terminal(session_id=sid, terminal_id=terminal.terminal_id)
        ok = exit_status.exit_code == 0
        await self.conn.session_update(
            sid, helpers.update_tool_call(call_id, status="completed" if ok else "failed")
        )
        await self.say(
            sid,
            f"{os.path.basename(command)} exited with {exit_status.exit_code}; it printed {len(output.output)} characters.",
        )

    async def do_exit(self, sid: str, session: _Session, args: list[str]) -> None:
        if session.mode != "plan":
            await self.say(sid, "I am not in plan mode.")
            return
        call_id = f"switch-{uuid.uuid4().hex[:6]}"
        await self.conn.session_update(
            sid,
            helpers.start_tool_call(
                call_id, "Ready for implementation", kind="switch_mode", status="pending"
            ),
        )
        chosen = await self.ask(
            sid,
            ToolCallUpdate(
                tool_call_id=call_id,
                title="Ready for implementation",
                kind="switch_mode",
                status="pending",
                content=[
                    helpers.tool_content(
                        helpers.text_block("## Implementation Plan\n1. Edit the file\n2. Run the tests")
                    )
                ],
            ),
            [
                PermissionOption(
                    option_id="code", name="Yes, and auto-accept all actions", kind="allow_always"
                ),
                PermissionOption(option_id="ask", name="Yes, and manually accept actions", kind="allow_once"),
                PermissionOption(option_id="reject", name="No, stay in plan mode", kind="reject_once"),
            ],
        )
        if chosen in ("code", "ask"):
            await self.conn.session_update(sid, helpers.update_tool_call(call_id, status="in_progress"))
            session.mode = chosen
            await self.conn.session_update(sid, helpers.update_current_mode(chosen))
            await self.conn.session_update(sid, helpers.update_tool_call(call_id, status="completed"))
            await self.say(sid, f"Switched to {chosen} mode.")
        else:
            await self.conn.session_update(sid, helpers.update_tool_call(call_id, status="failed"))
            await self.say(sid, "Staying in plan mode.")


async def main() -> None:
    await acp.run_agent(OfflineAgent())


if __name__ == "__main__":
    asyncio.run(main())
