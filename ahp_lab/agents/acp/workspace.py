"""The files and terminals an ACP agent asks its client for, served inside the session's working
directories (``fs/*`` and ``terminal/*`` of the SDK's ``Client`` interface).

A mixin of :class:`~.bridge.Bridge`: it reads the bridge's session context, current turn and
terminals, and shows each request in the turn's timeline.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from acp import RequestError
from acp.schema import (
    CreateTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from ..base import FileAccessDenied
from . import content, mapping

#: The statuses of a tool call that has not ended.
OPEN_CALL = ("running", "streaming", "pending-confirmation")

__all__ = ["WorkspaceServices"]

log = logging.getLogger(__name__)


#: How often, at most, a running tool call shows its terminal's output as it grows (seconds).
PREVIEW_EVERY_S = 0.25
#: The running calls showing one terminal whose previews follow its output (the newest of them)
MAX_PREVIEW_CALLS = 8


class WorkspaceServices:
    """``fs/read_text_file``, ``fs/write_text_file`` and ``terminal/*`` for :class:`~.bridge.Bridge`."""

    # -- the SDK's Client interface: files -----------------------------------------------------

    def _fs_call(self, verb: str, path: str, detail: str, ok: bool) -> None:
        """Show a file request in the timeline: in the tool call it belongs to, or as its own call."""
        turn = self.turn
        if turn is None:
            return
        named = content.shown(path)  # as shown; the location keeps the path itself
        text = f"{verb} {named}: {detail}"
        open_calls = [c for c in turn.calls.values() if c.status == "running" and c.id != turn.plan_call]
        if open_calls and ok:
            call = open_calls[-1]
            call.wrote = call.wrote or verb == "write"
            # the host's note ("_host"): shown with the call, never taken for the agent's own words
            note = {"type": "content", "content": {"type": "text", "text": text}, "_host": True}
            call.content = [*call.content, note]
            for action in mapping.advance(turn, call, self.resolver, content_changed=True):
                self.emit(action)
            return
        call, actions = mapping.permission_call(
            turn,
            {
                "toolCallId": turn.new_id("fs"),
                "kind": "read" if verb == "read" else "edit",
                "title": f"{verb} {named}",
            },
        )
        call.content = [{"type": "content", "content": {"type": "text", "text": text}}]
        call.locations = [{"path": path}]
        call.acp_status = "completed" if ok else "failed"
        for action in [*actions, *mapping.advance(turn, call, self.resolver, content_changed=False)]:
            self.emit(action)

    async def _serve_file(self, session_id: str, verb: str, path: str, do: Any, done: Any) -> Any:
        """Run one file request through the session context, in the host's turn for file work (a
        stranger's move running meanwhile could turn a checked folder into a link out); show it in
        the timeline either way."""
        if not self._check_session(session_id) or not self.agent.fs:
            raise RequestError.method_not_found(f"fs/{verb}_text_file")
        try:
            async with self.ctx.file_turn():
                if verb == "write" and self.frame_turn() is None:  # no turn would show it (asked
                    # when its turn comes: a turn cancelled while the write waited has ended)
                    log.warning("refused the agent's write of %s: no turn is running", path)
                    raise RequestError(
                        -32602,
                        "no prompt turn is running: files are written during a turn only",
                        {"path": path},
                    )
                result = do()
        except FileAccessDenied as exc:
            self._fs_call(verb, path, f"refused: {exc}", False)
            raise RequestError(-32602, str(exc), {"path": path}) from None
        except UnicodeError:  # text a file cannot hold: refused like any bad input, and shown
            why = "the content is not valid Unicode (it has a lone surrogate); nothing was written"
            self._fs_call(verb, path, f"refused: {why}", False)
            raise RequestError(-32602, why, {"path": path}) from None
        except FileNotFoundError as exc:  # ACP's own code for it, which agents look for
            self._fs_call(verb, path, f"failed: {exc}", False)
            raise RequestError(-32002, f"Resource not found: {exc}", {"uri": path}) from None
        except OSError as exc:
            self._fs_call(verb, path, f"failed: {exc}", False)
            raise RequestError(-32603, str(exc), {"path": path}) from None
        self._fs_call(verb, path, done(result), True)
        return result

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> Any:
        """``fs/read_text_file`` inside the session's working directories only."""
        content = await self._serve_file(
            session_id,
            "read",
            path,
            lambda: self.ctx.read_text_file(path, line, limit),
            lambda text: _lines(text),
        )
        return ReadTextFileResponse(content=content)

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        """``fs/write_text_file`` inside the session's working directories only (nothing else is
        touched), while a turn runs: a write between turns, or after a cancel, would change the
        person's files with nothing in the timeline to show it."""
        await self._serve_file(
            session_id,
            "write",
            path,
            lambda: self.ctx.write_text_file(path, content),
            lambda _: f"wrote {len(content.encode('utf-8')):,} bytes",
        )
        return WriteTextFileResponse()

    # -- the SDK's Client interface: terminals -------------------------------------------------

    def _terminal(self, session_id: str, terminal_id: str) -> Any:
        if not self._check_session(session_id) or not self.agent.terminal:
            raise RequestError.method_not_found("terminal/*")
        terminal = self.terminals.get(terminal_id)
        if terminal is None or terminal.released:
            raise RequestError.invalid_params({"details": f"no terminal {terminal_id!r}"})
        return terminal

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> Any:
        """``terminal/create``: the host runs the command in a working directory, as an AHP terminal."""
        if not self._check_session(session_id) or not self.agent.terminal:
            raise RequestError.method_not_found("terminal/create")
        if self.frame_turn() is None:  # as a write: no turn would show what the command changes
            log.warning("refused the agent's command %.200s: no turn is running", command)
            raise RequestError(
                -32602, "no prompt turn is running: commands run during a turn only", {"command": command}
            )
        refused = _command_refusal(command, args, env)
        if refused is not None:
            raise RequestError(-32602, refused, {"command": command})
        try:
            terminal = await self.ctx.create_terminal(
                command,
                list(args or []),
                env={e.name: e.value for e in env or ()},
                cwd=cwd,
                output_byte_limit=output_byte_limit,
                on_output=self._terminal_output,
            )
        except FileAccessDenied as exc:
            raise RequestError(-32602, str(exc), {"cwd": cwd}) from None
        except OSError as exc:
            raise RequestError(
                -32603, f"the command could not be started: {exc}", {"command": command}
            ) from None
        for gone in [k for k, t in self.terminals.items() if getattr(t, "forgotten", False)]:
            self.claims.pop(self.terminals.pop(gone), None)  # the host dropped it: so does the bridge
        self.terminals_made += 1
        terminal_id = f"term-{self.terminals_made}"
        self.terminals[terminal_id] = terminal
        turn = self.turn
        if turn is not None:
            running = [  # the turn's plan is a call of the host's, which runs no command
                c for c in turn.calls.values() if c.status in OPEN_CALL and c.id != turn.plan_call
            ]
            if running:
                self.claims[terminal] = running[-1].id
                self.ctx.claim_terminal(terminal, turn.turn_id, running[-1].id)
            else:  # shown once it exits, or the turn ends, unless a call of the agent's shows it
                turn.commands[terminal_id] = terminal
                self._spawn(self._show_on_exit(turn, terminal_id, terminal))
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def _show_on_exit(self, turn: Any, terminal_id: str, terminal: Any) -> None:
        await terminal.wait_for_exit()
        if self.turn is turn:
            self._command_call(turn, terminal_id)

    def end_command_calls(self, turn: Any) -> None:
        """Before the turn ends: show each command started while no call was open, still running."""
        for terminal_id in list(turn.commands):
            self._command_call(turn, terminal_id)

    def _command_call(self, turn: Any, terminal_id: str) -> None:
        """Show a command started while no call was open, and that no call of the agent's showed, as
        a completed tool call of its own (as a bare file request is): its terminal, with its output
        and exit code, or saying it still runs when the turn ended first."""
        terminal = turn.commands.pop(terminal_id, None)
        if terminal is None or any(shows_terminal(c, terminal_id) for c in turn.calls.values()):
            return
        call, actions = mapping.permission_call(
            turn, {"toolCallId": turn.new_id("term"), "kind": "execute", "title": f"run {terminal.title}"}
        )
        call.content = [{"type": "terminal", "terminalId": terminal_id}]
        if terminal in self._stopped:
            note = "The cancel stopped this command; its terminal shows what it wrote."
            call.content.append({"type": "content", "content": {"type": "text", "text": note}})
        elif not terminal.exited:
            note = "The command was still running when the turn ended; its terminal shows the rest."
            call.content.append({"type": "content", "content": {"type": "text", "text": note}})
        failed = terminal.exited and terminal not in self._stopped and (terminal.signal or terminal.exit_code)
        if failed:  # the call fails, saying why, as a failed file request's does
            note = (
                f"A signal ({terminal.signal}) ended the command."
                if terminal.signal
                else f"The command exited with code {terminal.exit_code}."
            )
            call.content.append({"type": "content", "content": {"type": "text", "text": note}})
        call.acp_status = "failed" if failed else "completed"
        for action in [*actions, *mapping.advance(turn, call, self.resolver, content_changed=False)]:
            self.emit(action)
        self.claims[terminal] = call.id
        self.ctx.claim_terminal(terminal, turn.turn_id, call.id)

    def stop_commands(self, turn: Any) -> None:
        """On a cancel: kill the commands the turn's open calls run (each terminal a call claimed
        that still runs), each said in a notice, and the commands it started while no call was open
        (their own calls say so). The cancel ends the agent's work, and an agent that answered
        ``cancelled`` leaving its terminal alone had its command run on, unseen."""
        for terminal_id, terminal in turn.commands.items():
            if any(shows_terminal(c, terminal_id) for c in turn.calls.values()):
                continue  # a call of the agent's shows it: that call's own (an open one's is above)
            if not terminal.exited and not terminal.released:
                terminal.kill()
                self._stopped.add(terminal)
        for terminal, owner in list(self.claims.items()):
            call = turn.calls.get(owner or "")
            if call is None or call.status not in OPEN_CALL or terminal.exited or terminal.released:
                continue
            terminal.kill()
            said = f"The cancel stopped the command {terminal.title!r} that tool call {call.title!r} ({call.id}) ran."
            self.emit(
                {
                    "type": "chat/responsePart",
                    "turnId": turn.turn_id,
                    "part": {"kind": "systemNotification", "content": said},
                }
            )

    def _terminal_output(self, terminal: Any) -> None:
        """Show terminals' output as it grows, in the running tool calls that show them: at most
        every :data:`PREVIEW_EVERY_S`, each call once for all its terminals that wrote meanwhile.
        Each showing sends the call's whole content again: 20,000 short lines, each shown, made
        82 MB of actions for 200 KB of output; 16 terminals shown in one call rebuilt it 64 times a
        second, the loop 80% busy (attacker round 35)."""
        self._preview_pending.add(terminal)
        if self._preview_handle is None:
            self._preview_handle = asyncio.get_running_loop().call_later(PREVIEW_EVERY_S, self._preview_due)

    def _preview_due(self) -> None:
        self._preview_handle = None
        terminals, self._preview_pending = self._preview_pending, set()
        turn = self.turn
        if turn is None:
            return
        calls: dict[str, Any] = {}
        for tid in [k for k, v in self.terminals.items() if v in terminals]:
            showing = [c for c in turn.calls.values() if c.status == "running" and shows_terminal(c, tid)]
            # the newest few: 200 calls showing one terminal made each tick block the loop 8 s
            # (attacker round 33); the others show it as it is when they end
            for call in showing[-MAX_PREVIEW_CALLS:]:
                calls[call.id] = call
        for call in calls.values():
            self.emit(
                {
                    "type": "chat/toolCallContentChanged",
                    "turnId": turn.turn_id,
                    "toolCallId": call.id,
                    "content": content.tool_content(call, self.resolver),
                }
            )

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        """``terminal/output``: what the command printed so far (and its exit status once it exited)."""
        terminal = self._terminal(session_id, terminal_id)
        text, truncated, code, signal = terminal.output()
        status = TerminalExitStatus(exit_code=code, signal=signal) if terminal.exited else None
        return TerminalOutputResponse(output=text, truncated=truncated, exit_status=status)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        """``terminal/wait_for_exit``: however long the command runs (a test suite), the agent waits
        on the host meanwhile, so its silence is not taken for a hang."""
        terminal = self._terminal(session_id, terminal_id)
        turn = self.turn  # a wait begun in an earlier turn (a dev server's) is not this turn's
        if turn is not None:
            turn.waiting_on_host += 1
        try:
            code, signal = await terminal.wait_for_exit()
        finally:
            if turn is not None:
                turn.waiting_on_host -= 1
            self._last_in = time.monotonic()
        return WaitForTerminalExitResponse(exit_code=code, signal=signal)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        """``terminal/kill``: stop the command, keep its output."""
        self._terminal(session_id, terminal_id).kill()
        return None

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        """``terminal/release``: stop the command if needed and forget the id (the channel stays)."""
        self._terminal(session_id, terminal_id).release()
        return ReleaseTerminalResponse()


def _lines(text: str) -> str:
    """How many lines a read returned, counted as ``line`` / ``limit`` count them: each ends at
    ``\\n`` (a form feed, U+2028 or a lone ``\\r`` ends none), and a last one may have no end."""
    count = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    return f"{count} line" if count == 1 else f"{count} lines"


def _command_refusal(command: str, args: list[str] | None, env: list | None) -> str | None:
    """Why a command cannot be run as given (one sentence), or ``None``: the operating system
    takes no NUL, no lone surrogate and no variable name that is empty or holds "="."""
    texts = [("the command", command), *((f"argument {i + 1}", a) for i, a in enumerate(args or ()))]
    for variable in env or ():
        name = variable.name
        if not name or "=" in name:
            return f"environment variable name {name!r:.80} is empty or holds '='"
        texts += [
            (f"environment variable {name!r:.80}", name),
            (f"environment variable {name!r:.80}", variable.value),
        ]
    if not command:
        return "the command is empty"
    for what, text in texts:
        if "\0" in text:
            return f"{what} holds a NUL character"
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return f"{what} is not valid Unicode (a lone surrogate)"
    return None


def shows_terminal(call: Any, terminal_id: Any) -> bool:
    """Whether ``call``'s content shows the terminal ``terminal_id``."""
    return any(
        isinstance(c, dict) and c.get("type") == "terminal" and c.get("terminalId") == terminal_id
        for c in call.content
    )
