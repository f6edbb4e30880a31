"""The commands the host runs for an agent (ACP ``terminal/create``), each mirrored into an AHP
terminal channel: its output kept for the agent (the last ``outputByteLimit`` bytes), streamed into
the channel without shell-integration sequences and within the channel's byte cap, previewed for
the tool calls that show it, and its process group stopped with it."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import re
import signal
from collections import deque
from collections.abc import Callable
from itertools import islice
from typing import TYPE_CHECKING, Any

from ..protocol.printable import printable

if TYPE_CHECKING:
    from .agent_sessions import HostSessionContext

log = logging.getLogger("ahp_lab.host")

__all__ = ["HostTerminal", "ShellMarks"]

#: After a terminal's command exits, how long its output is still read when something it started
#: keeps the output open.
_DRAIN_S = 0.5
#: A terminal's output goes into its channel at most this often (one ``terminal/data`` for what
#: came meanwhile): a command writing a character at a time made one action per read, and 16 of
#: them kept the loop 83% busy (attacker round 35).
_DATA_EVERY_S = 0.05
#: After a small read, a terminal's output is read again this much later (what came meanwhile in
#: one read): 16 commands writing a character at a time were read some 4,000 times a second.
_TRICKLE_S = 0.02

#: Shell-integration escape sequences (OSC 633 and 133 marks, OSC 697, OSC 7's working
#: directory), which other-channels §1 says ``terminal/data`` carries stripped; ended by BEL or ST.
_SHELL_INTEGRATION = re.compile(r"\x1b\](?:633|133|697|7);[^\x07\x1b]*(?:\x07|\x1b\\)")
#: An OSC sequence that a chunk of output ends inside: held for the next chunk (up to 4 KiB).
_OPEN_OSC = re.compile(r"\x1b(?:\](?:[^\x07\x1b]{0,4096}(?:\x1b)?)?)?\Z")


class ShellMarks:
    """Strips shell-integration sequences from output read in chunks: a sequence a chunk ends
    inside is held for the next (up to 4 KiB), so the stripped chunks join to the whole, stripped."""

    def __init__(self) -> None:
        self._held = ""

    def strip(self, text: str, final: bool = False) -> str:
        text, self._held = self._held + text, ""
        if not final and (open_at := _OPEN_OSC.search(text)) is not None:
            text, self._held = text[: open_at.start()], text[open_at.start() :]
        return _SHELL_INTEGRATION.sub("", text)


def _group_members(group: int) -> list[int]:
    """The processes of process group ``group`` but its leader (``/proc``; none where there is no
    ``/proc``)."""
    members = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == group:
                continue
            with contextlib.suppress(OSError, ValueError, IndexError):
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()  # after the command's name
                if int(fields[2]) == group:  # state, ppid, pgrp
                    members.append(int(entry.name))
    return members


class HostTerminal:
    """A command the host runs for an agent, mirrored into an AHP terminal channel (its output
    without shell-integration sequences; the agent reads it as the command wrote it)."""

    def __init__(
        self,
        ctx: HostSessionContext,
        uri: str,
        title: str,
        process: asyncio.subprocess.Process,
        limit: int,
        on_output: Callable[[HostTerminal], Any] | None,
    ) -> None:
        self.ctx = ctx
        self.uri = uri
        self.title = title
        self.process = process
        self.limit = limit
        self.on_output = on_output
        # the output kept: the last ``limit`` bytes, as the chunks read, each with its size in
        # bytes (one read re-encoded the whole kept output: a command writing a byte at a time
        # into a full 1 MiB kept the loop 48% busy, 16 of them 90%: attacker round 35)
        self._chunks: deque[str] = deque()
        self._sizes: deque[int] = deque()
        self._bytes = 0
        self._truncated = False
        self._marks = ShellMarks()  # what the state shows: the output without them
        self._in_state = 0
        self._state_cap = ctx.host.limits.max_terminal_output_bytes
        self._unsent: list[str] = []  # output for the channel, sent every _DATA_EVERY_S
        self._send_handle: asyncio.TimerHandle | None = None
        self.exit_code: int | None = None
        self.signal: str | None = None
        # The exit code AHP shows once the command ended: its own, or for one a signal ended (no
        # code of its own; AHP has no field for the signal, and an absent exitCode reads as "still
        # running") the shell's 128 + the signal's number (137 for a kill).
        self.shown_exit_code: int | None = None
        self.released = False
        self.forgotten = False  # dropped by the host (see forget)
        self._pump = asyncio.ensure_future(self._read())

    def output(self) -> tuple[str, bool, int | None, str | None]:
        """``(text kept so far, whether the start was cut, exit code, signal name)``.

        Where the start was cut, the end of a known secret left there is masked
        (:meth:`~ahp_lab.host.redaction.Redactor.start_cut`): the agent's own record of the
        exchange, which views and exports show masked, knows only whole secrets."""
        excess = self._bytes - self.limit
        if excess > 0:
            first = self._chunks[0].encode("utf-8")[excess:].decode("utf-8", "ignore")
            text = first + "".join(islice(self._chunks, 1, None))
        else:
            text = "".join(self._chunks)
        cut = self._truncated or excess > 0
        if cut:
            text = self.ctx.host.redactor.start_cut(text)
        return text, cut, self.exit_code, self.signal

    def preview(self, chars: int) -> tuple[str, bool]:
        """``(the last chars characters or fewer of the output kept, readable, whether its start was
        cut)``: what a tool call showing the terminal previews. Read from the newest chunks (a
        preview of a 1 MiB output reads its end), without escapes and control characters, and the
        end of a known secret left at the cut masked (as :meth:`output`)."""
        taken: list[str] = []
        size = 0
        # the newest chunks but the first, which :meth:`output` cuts to the bytes kept
        for chunk in islice(reversed(self._chunks), max(0, len(self._chunks) - 1)):
            taken.append(chunk)
            size += len(chunk)
            if size >= 2 * chars:
                text, cut = "".join(reversed(taken)), True
                break
        else:
            text, cut, _, _ = self.output()
        text = printable(text[-2 * chars :])
        cut = cut or len(text) > chars
        text = text[-chars:] if chars else ""
        return (self.ctx.host.redactor.start_cut(text) if cut else text), cut

    @property
    def exited(self) -> bool:
        return self._pump.done()

    async def wait_for_exit(self) -> tuple[int | None, str | None]:
        """Wait for the command to exit; returns ``(exit code, signal name)``."""
        await asyncio.shield(self._pump)
        return self.exit_code, self.signal

    def kill(self) -> None:
        """Kill the command and whatever it started (its process group); the terminal stays readable."""
        # The command leads its own session (start_new_session), so its group id is its pid. Until
        # the command is reaped its pid is its own; after, the id may be another program's (killing
        # group <pid> then killed whatever took the pid: attacker round 33), so the processes left
        # of the group are killed one by one: while one of them lives, no other can take the id.
        pid = self.process.pid
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            return
        for member in _group_members(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(member, signal.SIGKILL)

    def release(self) -> None:
        """Kill the command if it still runs and stop tracking it; the channel's history stays."""
        self.kill()
        self.released = True

    async def _read(self) -> None:
        """Mirror the output until the command exits; then its output is read to the end, unless
        something it left running keeps the output open (a background child): reading then stops
        after :data:`_DRAIN_S`, since the command itself has exited."""
        host = self.ctx.host
        reader = asyncio.ensure_future(self._read_output())
        try:
            await self._exit()
            await asyncio.wait({reader}, timeout=_DRAIN_S)
        finally:
            reader.cancel()
            self._send()  # (a reader stopped at the drain's end sent nothing final)
            code = self.process.returncode
            if code is not None and code < 0:
                with contextlib.suppress(ValueError):
                    self.signal = signal.Signals(-code).name
                self.exit_code = None
            else:
                self.exit_code = code
            if code is not None:
                self.shown_exit_code = 128 - code if code < 0 else code  # (minus the signal's number)
            if host.store.has_channel(self.uri):
                action: dict[str, Any] = {"type": "terminal/exited"}
                if self.shown_exit_code is not None:
                    action["exitCode"] = self.shown_exit_code
                host.dispatch(self.uri, action, self.ctx.origin)
                self.ctx.publish_terminals()
            self._notify()
            if self.forgotten:
                self._close_transport()

    async def _exit(self) -> None:
        """Wait for the command's process to end. (``Process.wait`` also waits for its output to
        close, which a background child of the command can hold open for good.)"""
        loop = asyncio.get_running_loop()
        try:
            fd = os.pidfd_open(self.process.pid)
        except OSError:  # reaped already, or no pidfd: the exit asyncio's watcher reports
            fd = None
        if fd is not None:
            ended = loop.create_future()
            loop.add_reader(fd, lambda: ended.done() or ended.set_result(None))
            try:
                await ended
            finally:
                loop.remove_reader(fd)
                os.close(fd)
        while self.process.returncode is None:  # asyncio's child watcher reaps it an instant later
            await asyncio.sleep(0.005)

    async def _read_output(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        stream = self.process.stdout
        while stream is not None:
            chunk = await stream.read(65536)
            if not chunk:
                break
            self._append(decoder.decode(chunk))
            if len(chunk) < 4096:  # a trickle: let it gather in the pipe rather than read each byte
                await asyncio.sleep(_TRICKLE_S)
        self._append(decoder.decode(b"", final=True), final=True)

    def _append(self, text: str, final: bool = False) -> None:
        if not text and not final:
            return
        if text:
            self._chunks.append(text)
            self._sizes.append(len(text.encode("utf-8")))
            self._bytes += self._sizes[-1]
            # drop the chunks wholly before the last ``limit`` bytes (output cuts into the first)
            while self._chunks and self._bytes - self._sizes[0] >= self.limit:
                self._bytes -= self._sizes.popleft()
                self._chunks.popleft()
                self._truncated = True
        text = self._marks.strip(text, final)
        host = self.ctx.host
        if text and host.store.has_channel(self.uri) and self._in_state < self._state_cap:
            raw = text.encode("utf-8")  # the cap is in bytes: 4-byte characters counted one made it 4 MiB
            room = self._state_cap - self._in_state
            self._in_state += min(len(raw), room)
            if len(raw) > room:
                # What fits, then the stream's end: a known secret the cap cuts is masked from where
                # it starts, with what the stream held of it from the reads before (14 of a key's
                # 20 characters reached the channel: review 58; 15 written in two reads: attacker
                # round 36), then the note, a stream of its own.
                self._unsent.append(raw[:room].decode("utf-8", "ignore"))
                self._send()
                host.end_streams(self.uri)
                note = {"type": "terminal/data", "data": "\n[output beyond this point is not recorded]\n"}
                host.dispatch(self.uri, note, self.ctx.origin)
                self._in_state = self._state_cap
            else:
                self._unsent.append(text)
                if self._send_handle is None:
                    self._send_handle = asyncio.get_running_loop().call_later(_DATA_EVERY_S, self._send)
        if final:
            self._send()
        self._notify()

    def forget(self) -> None:
        """What the host does as it drops the terminal: the output not yet in the channel goes in
        (a session disposed within 50 ms of its command's last words lost them), and the output
        kept for the agent goes (the agent's bridge may keep the terminal: 27 ended ones held 27
        MiB after their channels were gone). The agent released it: its id is no longer valid."""
        self._send()
        self.forgotten = True
        self._chunks.clear()
        self._sizes.clear()
        self._bytes = 0
        if self.exited:
            self._close_transport()  # (else once the command has exited: the end of _read)

    def _close_transport(self) -> None:
        """Close the command's transport, which the host no longer reads: collected later, once the
        loop had closed, it could not close itself."""
        transport = getattr(self.process, "_transport", None)
        if transport is not None:
            transport.close()

    def _send(self) -> None:
        """Put the output that came since the last time into the terminal's channel."""
        if self._send_handle is not None:
            self._send_handle.cancel()
            self._send_handle = None
        if self._unsent and self.ctx.host.store.has_channel(self.uri):
            data = "".join(self._unsent)
            self.ctx.host.dispatch(self.uri, {"type": "terminal/data", "data": data}, self.ctx.origin)
        self._unsent.clear()

    def _notify(self) -> None:
        if self.on_output is not None:
            try:
                self.on_output(self)
            except Exception:
                log.exception("terminal output callback failed")
