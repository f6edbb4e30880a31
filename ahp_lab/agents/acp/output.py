"""What an ACP agent writes besides its messages: stdout lines that are not JSON-RPC, a line too
long to read, and stderr, whose tail a failure shows; its process's exit, and how a failure or a
refusal reads to the person.

A mixin of :class:`~.bridge.Bridge`: it reads the bridge's agent, session context and process,
and fails the bridge (:meth:`~.bridge.Bridge.fail`) when the agent breaks a bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from ...protocol.printable import printable
from ...tools import first_error
from .content import MAX_TITLE_CHARS
from .context import _BRIDGE

__all__ = ["AgentOutput", "masked_cut", "not_jsonrpc", "said_line"]

#: Past a cut, how much more of the text is masked first: a secret the cut falls in is masked whole.
CUT_MARGIN = 1024

AUTH_REQUIRED = -32000  # ACP's error for a session/new that needs a login first
MAX_AUTH_METHODS = 8  # the ways to log in a refusal names
#: How much of a stdout line that is not JSON-RPC the failure's reason shows.
MAX_GARBAGE_SHOWN = 80
_JSON_KINDS = {list: "a JSON array", str: "a JSON string", bool: "a JSON boolean", type(None): "JSON null"}


def masked_cut(text: str, most: int, redact: Callable[[str], str]) -> str:
    """``text`` cut at ``most`` characters, saying how many more came, masked before the cut
    (only up to :data:`CUT_MARGIN` past it: masking 20 MB of an agent's error held the loop)."""
    if len(text) <= most:
        return text
    return f"{redact(text[: most + CUT_MARGIN])[:most]}…[{len(text) - most:,} more characters]"


def said_line(text: str, redact: Callable[[str], str]) -> str:
    """Words the agent wrote (an error's message, a login method's description) as one printable
    line, masked, cut as a title is: printable first, so that an escape sequence inside a key does
    not hide it from the masking (and none reaches a terminal a traceback prints in)."""
    return masked_cut(" ".join(printable(text).split()), MAX_TITLE_CHARS, redact)


def not_jsonrpc(line: str, what: str, redact: Callable[[str], str]) -> str:
    """The reason for a stdout line that is not JSON-RPC: what it is, and its start (redacted
    before it is cut, so that a cut never leaves part of a key)."""
    line = redact(line)
    shown = line if len(line) <= MAX_GARBAGE_SHOWN else line[: MAX_GARBAGE_SHOWN - 1] + "…"
    shown = shown.encode("utf-8", "replace").decode("utf-8")  # no lone surrogate
    return (
        f"the agent wrote a line to stdout that is not JSON-RPC but {what}: {shown} "
        "(ACP allows only JSON-RPC messages there)"
    )


def _jsonrpc_problem(message: Any) -> str | None:
    """What a parsed stdout line is when it is no JSON-RPC message (``None`` when it is one)."""
    if isinstance(message, dict):
        if isinstance(message.get("method"), str) or (
            "id" in message and ("result" in message or "error" in message)
        ):
            return None
        return "a JSON object that is no request, notification or response"
    if isinstance(message, int | float) and not isinstance(message, bool):
        return "a JSON number"
    return _JSON_KINDS.get(type(message), "a JSON value")


class _GarbageFilter(logging.Filter):
    """The SDK logs and skips a stdout line that is not JSON, and a notification whose parameters
    are not valid ACP; the bridge reading it fails instead. (JSON that is not JSON-RPC fails it in
    the observer; the SDK's receive loop then breaks on a line that is not an object, which the
    failure already says.)"""

    def filter(self, record: logging.LogRecord) -> bool:
        bridge = _BRIDGE.get()
        if bridge is None:
            return True
        error = record.exc_info[1] if record.exc_info else None
        if record.msg == "Error parsing JSON-RPC message":
            line = getattr(error, "doc", None) or getattr(error, "object", None) or ""
            if isinstance(line, bytes):
                line = line.decode("utf-8", "replace")
            bridge.fail(not_jsonrpc(str(line), "text that is not JSON", bridge.ctx.redact))
            return False
        if record.msg in ("Receive loop failed", "Stream observer failed") and bridge.failure is not None:
            return False
        if record.msg.startswith("Unhandled error while handling notification") and isinstance(
            error, ValidationError
        ):
            method = record.args[0] if isinstance(record.args, tuple) and record.args else "a"
            bridge.fail(
                f"the agent sent a {method} notification that is not valid ACP: {': '.join(first_error(error, 'message'))}"
            )
            return False
        return True


_FILTER = _GarbageFilter()
if _FILTER not in logging.getLogger().filters:
    logging.getLogger().addFilter(_FILTER)


#: Bytes of stderr kept beyond ``stderr_tail_bytes``, so that the tail is cut after redaction.
_STDERR_MARGIN = 4096


class AgentOutput:
    """The bridge's reading of its agent's stdout bounds and stderr."""

    def _bound_lines(self, process: Any) -> None:
        """Fail the agent once one line of its stdout (one JSON-RPC message) passes
        ``max_line_bytes``: the SDK reads a line whole, however long, then parses it on the loop.
        Its reader gives a long line up in pieces (``readexactly``) before the end (``readuntil``):
        the pieces are counted, and past the bound the process is stopped, its line unread.
        ``_stdout_ended`` is set once the reader reached the end of stdout."""
        reader, limit = process.stdout, self.agent.max_line_bytes
        ended = self._stdout_ended = asyncio.Event()
        if reader is None:
            ended.set()
            return
        readexactly, readuntil = reader.readexactly, reader.readuntil
        taken = [0]  # bytes of the line being read, before its end
        draining: list[asyncio.Task] = []  # kept referenced until it ends

        async def discard() -> None:
            with contextlib.suppress(Exception):
                while await reader.read(1 << 20):
                    pass

        async def bounded_readexactly(n: int) -> bytes:
            taken[0] += n
            if taken[0] > limit:
                self.fail(f"the agent wrote a message of more than {limit:,} bytes to stdout")
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                draining.append(asyncio.ensure_future(discard()))  # the pipe closes once read to its end
                raise asyncio.IncompleteReadError(b"", None)  # the SDK takes it as the end of output
            return await readexactly(n)

        async def bounded_readuntil(separator: bytes = b"\n") -> bytes:
            try:
                line = await readuntil(separator)
            except BaseException:
                ended.set()  # the end of its output (or of reading it): what it said is read
                raise
            taken[0] = 0
            return line

        reader.readexactly, reader.readuntil = bounded_readexactly, bounded_readuntil

    async def _drain_stderr(self, process: Any) -> None:
        """Keep the last bytes of stderr; more than the agent's budget in total is a failure."""
        stream = process.stderr
        limit = self.agent.stderr_limit
        while stream is not None:
            chunk = await stream.read(65536)
            if not chunk:
                return
            self._stderr_total += len(chunk)
            self._stderr += chunk
            # a margin beyond the tail: the tail is cut from redacted text, never through a secret
            del self._stderr[: max(0, len(self._stderr) - self.agent.stderr_tail_bytes - _STDERR_MARGIN)]
            if self._stderr_total > limit:
                self.fail(f"the agent flooded stderr (more than {limit:,} bytes)")
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                return

    async def stderr_read(self) -> None:
        """Wait (1 s at most) until an exited agent's stderr is read to its end: its last words."""
        task, process = self._stderr_task, self.process
        if task is not None and not task.done() and process is not None and process.returncode is not None:
            await asyncio.wait({task}, timeout=1.0)

    def stderr_tail(self) -> str:
        """The last lines the agent wrote to stderr (at most ``stderr_tail_bytes``).

        It is redacted before it is cut (the values of ``AcpAgent(env=...)`` are the host's
        secrets): a cut through a key would leave its end, too short to be recognised, in the
        error. Its end is read as a stream's end (the process may have died writing a key: 20 of a
        key's 24 characters showed). It starts at a line when one begins within the tail.
        """
        # printable first: an escape sequence inside a key hid it from redaction, and raw in a
        # chat's error a client printing it to a terminal would run it
        text = printable(bytes(self._stderr).decode("utf-8", "replace"))
        redactor = getattr(self.ctx, "redactor", None)
        if redactor is not None:
            shown, held = redactor.streamed(text)
            text = shown + redactor.held_end(held)
        else:
            text = self.ctx.redact(text)
        if self._stderr_total > len(self._stderr):  # its start was cut, maybe inside a key
            line = text.find("\n")
            text = text[line + 1 :] if line >= 0 else text[_STDERR_MARGIN:]
        text = text.strip()
        size = self.agent.stderr_tail_bytes
        if len(text.encode("utf-8")) <= size:
            return text
        tail = text.encode("utf-8")[-size:].decode("utf-8", "ignore")
        line = tail.find("\n")
        return tail[line + 1 :] if 0 <= line < len(tail) - 1 else tail

    def failure_message(self, reason: str) -> str:
        tail = self.stderr_tail()
        return f"{reason}. Its stderr ended with:\n{tail}" if tail else f"{reason}."

    async def _watch_exit(self, process: Any) -> None:
        generation, ended = self.generation, self._stdout_ended
        code = await process.wait()
        if self._stopping:
            return
        # what it wrote before it exited is read first (an answer in the pipe is its answer); a
        # child of its that holds stdout open is waited for 1 s at most
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(ended.wait(), 1.0)
        if not self._stopping and generation == self.generation:  # not stopped or restarted meanwhile
            self.fail(f"the agent process exited unexpectedly (exit code {code})", exited=True)

    def unreported_failure(self) -> str | None:
        """The failure nobody was told of yet (the agent failed between turns: its process exited,
        say), once; ``None`` when there is none."""
        process = self.process
        if process is not None and process.returncode is not None and not self._stopping:
            self.fail(f"the agent process exited unexpectedly (exit code {process.returncode})")
        if self.failure is None or self.failure_reported:
            return None
        self.failure_reported = True
        return self.failure

    def refusal(self, exc: Exception) -> str:
        """Why the agent refused to set up a session, for the person: for ``auth_required``, the
        ways to log in the agent offers (the lab does not log in for it)."""
        reason = str(exc)
        if getattr(exc, "code", None) != AUTH_REQUIRED or not self.auth_methods:
            return reason
        reason = said_line(reason, self.ctx.redact)
        ways = []
        for method in self.auth_methods[:MAX_AUTH_METHODS]:
            if not isinstance(method, dict):
                continue
            way = str(method.get("name") or method.get("id") or "")
            if method.get("description"):
                way += f" ({method['description']})"
            names = [v.get("name") for v in method.get("vars") or () if isinstance(v, dict) and v.get("name")]
            if method.get("type") == "env_var" and names:
                way += f": set {', '.join(map(str, names))} in AcpAgent(env=...)"
            elif method.get("type") == "terminal":
                args = " ".join(map(str, method.get("args") or ()))
                way += f": run the agent's command{' with ' + args if args else ''} in a terminal"
            ways.append(said_line(way, self.ctx.redact))
        return f"{reason}; the agent needs a login first, and offers: {'; '.join(ways)}. Then create the session again"
