"""One ACP agent subprocess behind one AHP session: the SDK's client side, answering the agent.

The bridge spawns the agent with the SDK's ``spawn_agent_process``, drives it with the SDK's
``ClientSideConnection`` and implements the SDK's ``Client`` interface (the requests an agent
sends a client). What each message becomes in AHP is :mod:`.mapping`; this module does the
plumbing: the process, its stderr, time limits, failures, the current turn and the frame record;
permissions are :mod:`.permissions`, files and terminals :mod:`.workspace`, stdout's bounds and
stderr :mod:`.output` (mixins of the bridge).

Every failure of the agent (it exits, hangs, writes something that is not JSON-RPC to stdout,
floods stderr, breaks ACP, never answers ``initialize``) is one :class:`AgentFailure` with a
one-sentence reason; the bridge is then *broken*: the turn ends with ``chat/error`` carrying the
reason and the agent's stderr tail (redacted where it enters state), the process is stopped, and the next turn (or
``lab.restart_agent()``) starts a fresh one and restores the session's mode and config values. A
failure between turns (the process exits) is the next turn's error, and the turn after starts afresh.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
import weakref
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

import acp
from acp import RequestError
from acp.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
)
from pydantic import ValidationError

from ...protocol.uris import file_uri
from ...tools import first_error
from ..base import FileAccessDenied, SessionContext, TurnContext
from . import mapping
from .config import MODE_PROPERTY, config_from_acp, offered_values, values_from_options
from .config_requests import ConfigRequests
from .content import MAX_TITLE_CHARS, Resolver
from .context import _BRIDGE, _CAUSE, _FRAME, _TURN, AgentFailure
from .frames import AcpFrame
from .mapping import ProtocolViolation, TurnMap
from .output import AgentOutput, _jsonrpc_problem, masked_cut, not_jsonrpc, said_line
from .permissions import PermissionRequests
from .workspace import OPEN_CALL, WorkspaceServices, shows_terminal

if TYPE_CHECKING:
    from .agent import AcpAgent

log = logging.getLogger("ahp_lab.acp")

__all__ = ["AgentFailure", "Bridge"]

#: ``session/update`` kept while ``session/new`` is not answered yet (applied after it).
MAX_EARLY_UPDATES = 64
#: How many tool-call ids of ended turns are remembered, so that a late update of one is ignored.
MAX_ENDED_CALLS = 10_000


#: What the first turn on a restarted agent process says first (a ``systemNotification``).
FRESH_PROCESS = "This turn runs on a fresh agent process, which does not have the conversation so far."


class Bridge(WorkspaceServices, PermissionRequests, ConfigRequests, AgentOutput):
    """The SDK ``Client`` for one AHP session, holding its agent process and ACP session."""

    def __init__(self, agent: AcpAgent, ctx: SessionContext) -> None:
        self.agent = agent
        self.ctx = ctx
        self.conn: Any = None
        self.process: Any = None
        self.session_id: str | None = None
        self.capabilities: dict = {}
        self.auth_methods: list = []  # how the agent says a person logs in (initialize's authMethods)
        self.routes: dict[str, tuple] = {}
        self.turn: TurnMap | None = None
        self.turn_ctx: TurnContext | None = None
        self.prompt_task: asyncio.Task | None = None
        self.always: dict[tuple[str, str], str] = {}
        self.terminals: dict[str, Any] = {}
        self.terminals_made = 0  # the ids are term-1, term-2, ...: never one of a terminal dropped since
        self._preview_pending: set = set()  # terminals that wrote since the last preview
        self._preview_handle: asyncio.TimerHandle | None = None
        self.failure: str | None = None
        self._exited = False  # the failure is the process's exit (not a fault of what it sent)
        self._failed_from = 0  # the index of the first frame after the failure (see fail)
        # whether the person was told of the failure (a turn's or a config change's error, say): one
        # that happens between turns is reported by the next turn instead
        self.failure_reported = False
        self.notice: str | None = None  # what the next turn tells the person first (a systemNotification)
        self._failed = asyncio.Event()
        self._answered: set = set()
        self._new_session_request: Any = None
        self._named_early: str | None = None  # the session id the agent used before session/new's answer
        self._last_in = time.monotonic()
        # requests of the agent the host is still answering (a person deciding on a permission, a
        # command it waits to exit): the agent is waiting on us then, and its silence does not count
        self._cancel_deadline = 0.0  # when a cancelled prompt must have ended (monotonic)
        # set once the current turn is over for the agent: ended, or its session/cancel sent (a
        # permission request that the cancel ends is answered after that, as ACP orders them)
        self._turn_over: asyncio.Event | None = None
        self._prompt_request: Any = None  # the id of the last session/prompt sent
        self._answered_turn: TurnMap | None = None  # the turn whose prompt the agent answered
        #: config property -> the frame index of the agent's last report of it, and of the last
        #: config request sent and its answer: a report between the two is older than the answer,
        #: one after the answer newer (the SDK handles it before the answer's waiter resumes)
        self._reported_at: dict[str, tuple[int, Any]] = {}  # key -> (frame index, value reported)
        self._config_sent = (None, -1)
        self._config_answered = -1
        self.claims: dict[Any, str | None] = {}  # terminal -> the tool call that claimed it
        self._stopped: weakref.WeakSet = weakref.WeakSet()  # terminals a cancel stopped
        self._stderr = bytearray()
        self._stderr_total = 0
        self._stack: contextlib.AsyncExitStack | None = None
        self._stderr_task: asyncio.Task | None = None
        self._tasks: set[asyncio.Task] = set()
        self._asking: set[asyncio.Future] = set()  # permission requests waiting for a person
        # session/update the agent sent before its session's channel existed (before session/new's
        # answer, or in the moment between it and the channel), with their frames; None once mapped
        self._early: list[tuple[str, Any, AcpFrame | None]] | None = []
        self._stopping = False
        self._life = asyncio.Lock()  # one start or stop at a time
        self.generation = 0  # which process this is (each start makes a new one)
        # ids of this process's tool calls in turns that ended (the most recent MAX_ENDED_CALLS):
        # an update for one of them comes too late to show, and is no violation
        self._ended_calls: dict[str, None] = {}
        self.config_lock = asyncio.Lock()  # config changes reach the agent before a later prompt
        self.resolver = Resolver(self._put_content, self.terminals.get, self._path_uri, self._clip)

    # -- process ------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the agent process is up, its session set up, and it has not failed (a start
        interrupted before ``session/new`` answered leaves it not running: the next turn starts
        a fresh process)."""
        return (
            self.conn is not None
            and self.session_id is not None
            and self.failure is None
            and not self._stopping
        )

    async def start(self) -> dict | None:
        """Spawn the agent, ``initialize`` and ``session/new``; returns the session's config."""
        async with self._life:
            return await self._start()

    async def _start(self) -> dict | None:
        agent = self.agent
        self.generation += 1
        self.failure, self.failure_reported, self._stopping, self.session_id = None, False, False, None
        self._exited = False
        self._early, self._new_session_request, self._named_early = [], None, None
        self._failed = asyncio.Event()
        self._answered.clear()
        self._ended_calls.clear()  # a new process numbers its calls afresh
        self.ctx.set_commands([])  # and offers its own commands, none until it says which
        self._stderr.clear()
        self._stderr_total = 0
        self._stack = contextlib.AsyncExitStack()
        self.ctx.add_secret_env(agent.env)  # each process's (the env may have changed since)
        token = _BRIDGE.set(self)
        try:
            self.conn, self.process = await self._stack.enter_async_context(
                acp.spawn_agent_process(
                    self,
                    agent.command[0],
                    *agent.command[1:],
                    env=agent.env,
                    cwd=agent.process_folder(),
                    transport_kwargs={"shutdown_timeout": 1.0},
                    observers=[self._observe],
                )
            )
        except OSError as exc:
            self.conn = None
            raise AgentFailure(f"the agent could not be started: {exc}") from None
        finally:
            _BRIDGE.reset(token)
        self._bound_lines(self.process)
        self._stderr_task = self._spawn(self._drain_stderr(self.process))
        self._spawn(self._watch_exit(self.process))
        try:
            return await self._set_up(agent)
        except BaseException:
            # interrupted (the turn cancelled, a cell's wait_for) before the session was set up: the
            # process goes, quietly, and the bridge is not running, so the next turn starts afresh
            # and says so (it sent its prompt with no session id, and the message was lost)
            if self.failure is None and self.session_id is None:
                self._stopping = True
                if self.process.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        self.process.kill()
            raise

    async def _set_up(self, agent: Any) -> dict | None:
        """``initialize`` and ``session/new`` on the process just started."""
        fs = agent.fs
        init = await self.until(
            self.conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs), terminal=agent.terminal
                ),
                client_info=Implementation(name="ahp_lab", title="ahp_lab in-kernel host", version="0.1.0"),
            ),
            agent.initialize_timeout,
            "initialize",
        )
        if init.protocol_version != acp.PROTOCOL_VERSION:
            self.fail(
                f"the agent speaks ACP protocol version {init.protocol_version}; "
                f"this host speaks {acp.PROTOCOL_VERSION}"
            )
            raise AgentFailure(self.failure)
        self.capabilities = mapping.as_json(init.agent_capabilities) or {}
        self.auth_methods = mapping.as_json(init.auth_methods) or []
        self.agent.agent_info = mapping.as_json(init.agent_info) or {}
        dirs = list(self.ctx.working_directories)
        extra = (
            dirs[1:]
            if (self.capabilities.get("sessionCapabilities") or {}).get("additionalDirectories") is not None
            else []
        )
        session = await self.until(
            self.conn.new_session(cwd=dirs[0], additional_directories=extra or None, mcp_servers=[]),
            agent.initialize_timeout,
            "session/new",
        )
        self.session_id = session.session_id
        if self._named_early is not None and self._named_early != self.session_id:
            self.fail(
                f"the agent used session id {self._named_early!r} before it answered session/new, "
                f"which then created {self.session_id!r}"
            )
            raise AgentFailure(self.failure)
        config, self.routes = config_from_acp(
            mapping.as_json(session.modes),
            mapping.as_json(session.config_options),
            lambda text: masked_cut(text, MAX_TITLE_CHARS, self.ctx.redact),
        )
        # updates sent before the answer (an agent's first commands, say) and until the session's
        # channel exists (the host creates it from the config this returns) wait for it
        self._spawn(self._map_early())
        return config

    async def _map_early(self) -> None:
        await self.ctx.opened()
        self._flush_early()

    def _flush_early(self) -> None:
        """Map the updates kept while the session's channel did not exist, in the order they came."""
        early, self._early = self._early, None
        for session_id, update, frame in early or ():
            token = _FRAME.set(frame)
            try:
                self._map_update(session_id, update)
            finally:
                _FRAME.reset(token)

    async def stop(self, generation: int | None = None) -> None:
        """Stop the agent process (stdin closed, then terminate, then kill).

        With ``generation``, only if that process is still the current one (a stop scheduled after
        a failure must not stop the process a restart started meanwhile).
        """
        async with self._life:
            if generation is None or generation == self.generation:
                await self._stop()

    async def _stop(self) -> None:
        self._stopping = True
        stack, self._stack = self._stack, None
        tasks = list(self._tasks)
        if self.process is not None and self.process.returncode is None and self.failure is not None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()  # a failed agent gets no grace period
        for terminal in self.terminals.values():
            terminal.release()  # its commands stop with it (a fresh process knows none of them)
        # and their ids with it: a fresh process that names term-1 means its own, not the old one's
        self.terminals.clear()
        if self._turn_over is not None:
            self._turn_over.set()  # no session/cancel will be sent: nothing to wait for
        for waiting in list(self._asking):
            waiting.cancel()  # a permission request still waiting for a person is answered cancelled
        if self.prompt_task is not None:
            self.prompt_task.cancel()
        if stack is not None:
            with contextlib.suppress(Exception):
                await stack.aclose()
        for task in tasks:
            task.cancel()
        self.conn = None

    async def restart(self) -> None:
        """Stop, start afresh and restore the session's config values (those that differ) onto it.
        The next turn says first that the fresh process does not have the conversation (after a
        crash, the chat read as one conversation going on)."""
        async with self._life:
            await self._stop()
            config = await self._start() or {}
        if self.notice is None:
            self.notice = FRESH_PROCESS
        wanted = self.ctx.config_values()  # the session's values, before the fresh process's own
        self._flush_early()  # the session's channel exists: what the process sent early is mapped now
        fresh = config.get("values") or {}
        offered = {
            key: prop.get("enum") or ()
            for key, prop in ((config.get("schema") or {}).get("properties") or {}).items()
        }
        restore = {
            key: value
            for key, value in wanted.items()
            if key in self.routes and value is not None and fresh.get(key) != value
        }
        shown = {}  # what the session must show: the values the agent runs with
        keys = list(restore)
        for n, key in enumerate(keys):  # each on its own: one the fresh process refuses (a choice
            try:  # only the old process offered) does not keep the others from it
                await self.set_config(key, restore[key], pending=keys[n + 1 :])
                if self.ctx.config_values().get(key) != restore[key]:  # an early update showed another
                    shown[key] = restore[key]  # value: the session shows the one the agent took
            except RequestError as exc:
                log.warning(
                    "ACP agent %s: the fresh process refused %s=%r: %s",
                    self.agent.name,
                    key,
                    restore[key],
                    exc,
                )
                if fresh.get(key) is not None:
                    shown[key] = fresh[key]
        if shown:  # the session shows what the agent now runs with, not what it refused
            self._link(self._agent_config(shown, offered))

    def fail(self, reason: str, *, exited: bool = False) -> None:
        """Mark the agent as failed (the first reason wins; ``exited``: its process's exit) and wake
        whatever waits on it."""
        if self.failure is None:
            self.failure, self.failure_reported, self._exited = reason, False, exited
            # the frames from here on are not shown: from the one after the frame being handled (a
            # mapping's violation; frames read after it in the same go are queued already), or
            # from the next one read (a violation the reader saw, a timeout, the process exiting)
            frame = _FRAME.get()
            self._failed_from = frame.index + 1 if frame is not None else self.agent.frames.next_index
            # during a turn its error says so in the chat; between turns only the log does, until
            # the next turn (a warning in a notebook shows under the cell that started the agent)
            log.log(
                logging.INFO if self.turn is not None else logging.WARNING,
                "ACP agent %s: %s",
                self.agent.name,
                reason,
            )
            self._failed.set()

    async def until(
        self, awaitable: Awaitable, timeout: float | None, what: str, *, idle: bool = False
    ) -> Any:
        """Await an ACP request, failing on the agent's failure, ``timeout`` or (``idle``) silence."""
        task = asyncio.ensure_future(awaitable)
        failed = asyncio.ensure_future(self._failed.wait())
        started = time.monotonic()
        try:
            while True:
                wait = timeout
                if idle:
                    quiet = time.monotonic() - self._last_in
                    wait = max(0.05, self.agent.idle_timeout - quiet)
                elif timeout is not None:
                    wait = max(0.0, timeout - (time.monotonic() - started))
                done, _ = await asyncio.wait(
                    {task, failed}, timeout=wait, return_when=asyncio.FIRST_COMPLETED
                )
                if self.failure is not None and not (self._exited and task in done):
                    # before the answer: a violation handled in the same read as the answer (the
                    # SDK runs each notification as a task, queued before the answer's waiters);
                    # an answer the agent sent before it exited is its answer
                    raise AgentFailure(self.failure)
                if task in done:
                    break
                if idle:
                    if (
                        self.turn is None or self.turn.waiting_on_host == 0
                    ) and time.monotonic() - self._last_in >= self.agent.idle_timeout:
                        self.fail(f"the agent sent nothing for {self.agent.idle_timeout:g} s during a turn")
                        raise AgentFailure(self.failure)
                elif time.monotonic() - started >= (timeout or 0):
                    self.fail(f"the agent did not answer {what} within {timeout:g} s")
                    raise AgentFailure(self.failure)
        except BaseException:
            if not task.done():
                task.cancel()
            elif not task.cancelled():
                task.exception()  # the failure is the outcome: the answer's error is not reported too
            raise
        finally:
            failed.cancel()
        try:
            return task.result()
        except asyncio.CancelledError:
            if asyncio.current_task().cancelling():
                raise  # the caller itself is being cancelled
            # the request was ended under the caller: the process was stopped or restarted
            raise AgentFailure(self.failure or f"the agent was stopped while {what} was open") from None
        except ValidationError as exc:
            self.fail(
                f"the agent answered {what} with a message that is not valid ACP: {': '.join(first_error(exc, 'message'))}"
            )
            raise AgentFailure(self.failure) from None
        except RequestError as exc:  # the agent's words, cut as a title is (20 MB of data in one)
            detail = f" ({exc.data})" if exc.data else ""
            said = said_line(f"{exc}{detail}", self.ctx.redact)
            raise RequestError(exc.code, f"the agent answered {what} with an error: {said}") from None
        except ConnectionError:
            if self.process is not None:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self.process.wait(), 1.0)
            code = self.process.returncode if self.process is not None else None
            why = (
                f"the agent process exited unexpectedly (exit code {code})"
                if code is not None or self.process is None
                else "the agent closed its output while still running; it was stopped"
            )
            self.fail(self.failure or why)
            raise AgentFailure(self.failure) from None

    def _spawn(self, coro: Awaitable) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- frames --------------------------------------------------------------------------------

    def _observe(self, event: Any) -> None:
        message = event.message
        incoming = event.direction.value == "incoming"
        if incoming:
            self._last_in = time.monotonic()
            problem = _jsonrpc_problem(message)
            if problem is not None:
                text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), default=str)
                self.fail(not_jsonrpc(text, problem, self.ctx.redact))
            elif "method" not in message and "id" in message:
                if message["id"] in self._answered:
                    self.fail(f"the agent sent a second response to request #{message['id']}")
                self._answered.add(message["id"])
                if message["id"] == self._new_session_request and isinstance(message.get("result"), dict):
                    # known before any later update is handled (they may follow the response at once)
                    self.session_id = message["result"].get("sessionId")
                if message["id"] == self._prompt_request and not self._steered(message):
                    self._answered_turn = self.turn  # the agent's turn is over, whatever it sends next
            frame = self.agent.frames.record("in", self.ctx.session, message)
            if "method" not in message and message.get("id") == self._config_sent[0]:
                self._config_answered = frame.index
            _FRAME.set(frame)
            # the turn this frame belongs to: none once the agent has answered the turn's prompt
            _TURN.set(None if self.turn is self._answered_turn else self.turn)
        else:
            if message.get("method") == "session/new":
                self._new_session_request = message.get("id")
            elif message.get("method") == "session/prompt":
                self._prompt_request = message.get("id")
                self._answered_turn = None  # a steering message's prompt goes on with the same turn
            frame = self.agent.frames.record("out", self.ctx.session, message, list(_CAUSE.get()))
            if message.get("method") in ("session/set_mode", "session/set_config_option"):
                self._config_sent = (message.get("id"), frame.index)

    def _steered(self, message: dict) -> bool:
        """Whether the agent's answer to its prompt leaves the turn going on: it ended its turn and
        the chat has a steering message, which goes to it next as a further prompt (what it sent
        with the answer, read before that prompt, was dropped)."""
        result, ctx = message.get("result"), self.turn_ctx
        if ctx is None or not isinstance(result, dict) or result.get("stopReason") != "end_turn":
            return False
        return isinstance((ctx.host.store.state(ctx.chat) or {}).get("steeringMessage"), dict)

    def frame_turn(self) -> TurnMap | None:
        """The turn the frame being handled belongs to (``None``: between turns, or after the
        agent answered the turn's prompt)."""
        return _TURN.get() if self.turn is not None else None

    def _link(self, seq: int | None) -> None:
        frame = _FRAME.get()
        if frame is not None and seq is not None:
            self.agent.frames.link(frame, seq)

    def _check_session(self, session_id: str) -> bool:
        if self.session_id is None and self._new_session_request is not None and not self._stopping:
            # session/new not answered yet: an agent may read its instructions (AGENTS.md) first;
            # the first id it names is the one its answer must give (see _set_up)
            if self._named_early is None:
                self._named_early = session_id
            if session_id == self._named_early:
                return True
        if session_id != self.session_id:
            self.fail(f"the agent used session id {session_id!r}, which it never created")
            return False
        return True

    # -- turns ---------------------------------------------------------------------------------

    def emit(self, action: dict) -> int | None:
        """Apply one mapped action to the current turn and link it to the frame being handled."""
        if self.turn_ctx is None:
            return None
        try:
            seq = self.turn_ctx.emit(action)
        except asyncio.CancelledError:
            return None  # the turn ended meanwhile
        self._link(seq)
        return seq

    async def settle(self) -> None:
        """Wait for a cancelled prompt to end, up to ``cancel_grace`` after its cancel; an agent
        that does not end it has failed (a turn started now then gets a fresh process)."""
        previous = self.prompt_task
        if previous is not None and not previous.done():
            await asyncio.wait({previous}, timeout=max(0.0, self._cancel_deadline - time.monotonic()))
            if not previous.done():
                self.fail(f"the agent did not end a cancelled prompt within {self.agent.cancel_grace:g} s")
                # the turn was cancelled: the next one runs on a fresh process, and says so
                self.failure_reported = True
                self.notice = (
                    f"The agent did not end the cancelled prompt within {self.agent.cancel_grace:g} s and "
                    "was stopped: this turn runs on a fresh agent process, which does not have the "
                    "conversation so far."
                )

    async def _stop_unless_settled(self, generation: int) -> None:
        """After a cancel: stop the process if it has not ended the prompt within the grace."""
        await self.settle()
        if self.failure is not None:
            await self.stop(generation)

    async def _read_what_came_before(self) -> None:
        """Let the frames the agent wrote before this prompt be read first, so that they belong to
        no turn: a write it sent just after answering the last prompt, read late under load, was
        served as the next turn's. (The reader is waited for until its buffer is empty twice in a
        row; each wait also lets the loop take what the pipe holds.)"""
        reader = self.process.stdout if self.process is not None else None
        quiet = 0
        for _ in range(64):
            if reader is None or reader.at_eof():
                return
            quiet = 0 if getattr(reader, "_buffer", None) else quiet + 1
            if quiet >= 2:
                return
            await asyncio.sleep(0)

    async def prompt(self, ctx: TurnContext) -> Any:
        """Run one ``session/prompt`` for the AHP turn ``ctx``; returns the ``PromptResponse``."""
        async with self.config_lock:
            pass  # a config change a client made before this turn reaches the agent first
        if self.failure is not None:  # it failed the agent (a restart was sending it meanwhile)
            raise AgentFailure(self.failure)
        await self._read_what_came_before()
        self.turn, self.turn_ctx = TurnMap(ctx.turn_id, ended_calls=self._ended_calls), ctx
        self._turn_over = asyncio.Event()
        return await self._prompted(ctx.message, self._seq(ctx.chat, "chat/turnStarted", turnId=ctx.turn_id))

    async def steer(self, ctx: TurnContext, message: dict) -> Any:
        """Send the turn's steering ``message`` (taken from the chat) to the agent as a further
        ``session/prompt`` of the same AHP turn, once its last one ended: ACP takes a person's
        words only between prompts. Returns its ``PromptResponse``."""
        self.end_text_run()
        cause = self._seq(ctx.chat, "chat/pendingMessageRemoved", kind="steering")
        return await self._prompted(message, cause)

    async def _prompted(self, message: dict, cause: tuple[int, ...]) -> Any:
        self._last_in = time.monotonic()
        blocks = mapping.prompt_blocks(message, self.capabilities.get("promptCapabilities") or {})
        token = _CAUSE.set(cause)
        try:
            self.prompt_task = asyncio.ensure_future(
                self.conn.prompt(session_id=self.session_id, prompt=blocks)
            )
        finally:
            _CAUSE.reset(token)
        self.prompt_task.add_done_callback(lambda t: t.cancelled() or t.exception())
        # shielded: a cancelled AHP turn leaves the request open until the agent answers it
        # (``cancelled``), so the next prompt is sent only after the old one is closed
        return await self.until(asyncio.shield(self.prompt_task), None, "session/prompt", idle=True)

    def finish_turn(self) -> None:
        """Complete what only lives for the turn (its run of text, the plan call) before its end."""
        self.end_text_run()
        if self.turn is not None:
            for action in mapping.finish_plan(self.turn, self.resolver):
                self.emit(action)

    def end_text_run(self) -> None:
        """End the turn's run of text before a failure ends the turn (see :func:`mapping.end_run`)."""
        if self.turn is not None:
            for action in mapping.end_run(self.turn):
                self.emit(action)

    def end_turn(self, *, agent_told: bool = True) -> None:
        """The turn is over (``agent_told``: nothing more need reach the agent before a pending
        permission request is answered ``cancelled``). Its open calls that wrote files end first,
        saying so, however the turn ended (the agent failed, was restarted, stopped early, or ended
        its turn with the call running)."""
        if agent_told and self._turn_over is not None:
            self._turn_over.set()
        if self.turn is not None:
            self.end_command_calls(self.turn)
            self.end_written(self.turn, "the turn ended")
            self._call_ended(*self.turn.calls)
        self.turn, self.turn_ctx = None, None

    def _call_ended(self, *call_ids: str) -> None:
        """Later updates of these calls are too late to show (the most recent MAX_ENDED_CALLS)."""
        self._ended_calls.update(dict.fromkeys(call_ids))
        while len(self._ended_calls) > MAX_ENDED_CALLS:
            del self._ended_calls[next(iter(self._ended_calls))]

    def cancelling(self, turn_id: Any) -> None:
        """Turn ``turn_id`` is about to be cancelled: the commands its open calls run are stopped,
        each said (see :meth:`stop_commands`), those no call shows get a call (see
        :meth:`end_command_calls`), and each open call of it that wrote a file ends
        first, its content kept, saying that it was cancelled and the files stay written. A
        cancel drops an open call's content (chat-channel T13), and the person saw no sign of a
        file the agent had rewritten."""
        turn = self.turn
        if turn is not None and turn.turn_id == turn_id:
            self.stop_commands(turn)
            self.end_command_calls(turn)
            self.end_written(turn, "cancelled")
            for action in mapping.finish_plan(turn, self.resolver):  # the plan keeps its checklist
                self.emit(action)

    def end_written(self, turn: TurnMap, how: str) -> None:
        """End each open call of ``turn`` that wrote a file, its content kept, saying ``how`` the
        turn ended while it ran and that the files stay written (a turn's end drops an open call's
        content: chat-channel T13)."""
        for call in turn.calls.values():
            if call.wrote and call.status not in ("completed", "cancelled"):
                self.emit(mapping.interrupted(turn, call, self.resolver, how))

    def cancel(self, chat: str, turn_id: str) -> None:
        """The AHP turn was cancelled: tell the agent (``session/cancel``) without waiting."""
        over = self._turn_over
        self.end_turn(agent_told=False)
        if not self.running:
            if over is not None:
                over.set()
        else:
            token = _CAUSE.set(self._seq(chat, "chat/turnCancelled", turnId=turn_id))
            try:
                self._spawn(self._send_cancel(over))
            finally:
                _CAUSE.reset(token)
            self._cancel_deadline = time.monotonic() + self.agent.cancel_grace
            # not in _tasks: stopping the process cancels those, and this task is what stops it
            watch = asyncio.ensure_future(self._stop_unless_settled(self.generation))
            self.agent.track(watch)

    async def _send_cancel(self, over: asyncio.Event | None) -> None:
        try:
            await asyncio.wait_for(self.conn.cancel(session_id=self.session_id), 5.0)
        finally:
            if over is not None:
                over.set()

    def _seq(self, channel: str, action_type: str, **match: Any) -> tuple[int, ...]:
        seq = self.ctx.latest_seq(channel, action_type, **match)
        return () if seq is None else (seq,)

    # -- the SDK's Client interface: notifications ------------------------------------------------

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        """Map one ``session/update`` (synchronously, so the SDK's order is the order of actions)."""
        if self._early is not None and self._new_session_request is not None and not self._stopping:
            if len(self._early) >= MAX_EARLY_UPDATES:
                self.fail(
                    f"the agent sent more than {MAX_EARLY_UPDATES} session/update before its session "
                    "was set up (session/new)"
                )
            else:  # mapped once the session's channel exists
                self._early.append((session_id, update, _FRAME.get()))
            return
        self._map_update(session_id, update)

    def _map_update(self, session_id: str, update: Any) -> None:
        if not self._check_session(session_id):
            return
        frame = _FRAME.get()
        if self.failure is not None and (frame is None or frame.index >= self._failed_from):
            # a failed agent has one outcome, its error: nothing it sent after the failure
            log.info("ACP agent %s: an update after its failure was not shown", self.agent.name)
            return
        try:
            data = mapping.as_json(update)
        except Exception as exc:  # (nested past what can be read): shown as the agent's failure, not lost
            self.fail(f"the host could not read the agent's session/update ({type(exc).__name__}: {exc})")
            return
        kind = data.get("sessionUpdate")
        if kind == "current_mode_update":
            if self.routes.get(MODE_PROPERTY) == ("mode",):  # else a mode option is the mode
                values = {MODE_PROPERTY: data.get("currentModeId")}
                self._reported(values)
                self._link(self._agent_config(values))
        elif kind == "config_option_update":
            options = data.get("configOptions")
            values = values_from_options(options, self.routes)
            self._reported(values)
            self._link(self._agent_config(values, offered_values(options, self.routes)))
        elif kind == "available_commands_update":
            self.ctx.set_commands(
                [
                    {
                        "name": c.get("name"),
                        "description": c.get("description", ""),
                        "hint": (c.get("input") or {}).get("hint"),
                    }
                    for c in data.get("availableCommands") or ()
                ]
            )
        elif kind == "session_info_update":
            if isinstance(data.get("title"), str):
                self._link(self.ctx.update_title(data["title"]))
            elif "title" in getattr(update, "model_fields_set", ()):  # null (absent in data): cleared
                self._link(self.ctx.update_title(None))
        elif kind in mapping.SESSION_UPDATES and _TURN.get() is not None and _TURN.get() is self.turn:
            try:
                actions = mapping.SESSION_UPDATES[kind](self.turn, data, self.resolver)
            except ProtocolViolation as exc:
                self.fail(str(exc))
                return
            except Exception as exc:  # the SDK would only log it: the update would vanish unseen
                log.exception("ACP agent %s: mapping %s failed", self.agent.name, kind)
                self.fail(f"the host could not show the agent's {kind} ({type(exc).__name__}: {exc})")
                return
            for action in actions:
                self.emit(action)
            if kind in ("tool_call", "tool_call_update"):
                self._claim_shown_terminals(str(data.get("toolCallId")))
        elif kind in mapping.SESSION_UPDATES:  # between turns: AHP's parts and calls belong to a turn
            if kind == "tool_call":  # its updates in the next turn are no violation, only too late
                self._call_ended(str(data.get("toolCallId")))
            log.info("ACP agent %s: %s between turns, not shown", self.agent.name, kind)

    def _claim_shown_terminals(self, call_id: str) -> None:
        """A terminal a call shows is that call's (``terminal/claimed``), unless another open call
        shows it too: one created before the call that runs it was claimed by the session, by the
        turn's plan, or by the call last started, which may not be the one that shows it."""
        turn = self.turn
        call = turn.calls.get(call_id) if turn is not None else None
        if call is None or call.id == turn.plan_call:
            return
        for item in call.content:
            terminal = self.terminals.get(item.get("terminalId")) if isinstance(item, dict) else None
            if terminal is None or item.get("type") != "terminal":
                continue
            owner = turn.calls.get(self.claims.get(terminal) or "")
            if owner is call or (
                owner is not None
                and owner.status in OPEN_CALL
                and shows_terminal(owner, item.get("terminalId"))
            ):
                continue  # another open call shows it: it keeps it (the claim at creation is a guess)
            self.claims[terminal] = call.id
            self.ctx.claim_terminal(terminal, turn.turn_id, call.id)

    # -- the SDK's Client interface: the rest --------------------------------------------------

    async def ext_method(self, method: str, params: dict) -> dict:
        """Extension requests (``_...``) are not served."""
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict) -> None:
        """Extension notifications are ignored (their frames are still recorded)."""

    def on_connect(self, conn: Any) -> None:
        """The SDK hands over the connection (kept by ``start`` instead)."""

    # -- content -------------------------------------------------------------------------------

    def _path_uri(self, path: str) -> str:
        """A ``file://`` URI for a path the agent names (ACP's are absolute; a relative one is read
        from the session's first working directory, as the agent's own cwd)."""
        return file_uri(os.path.join((self.ctx.working_directories or [os.getcwd()])[0], path))

    def _clip(self, text: str, most: int) -> str:
        return self.ctx.redact(text)[:most]

    def _put_content(self, data: str, content_type: str, binary: bool = False) -> dict:
        if binary:
            import base64

            try:
                data = base64.b64decode("".join(data.split()), validate=True)  # MIME line breaks too
            except ValueError:  # served as the text it is, not as the image it claims to be
                raise FileAccessDenied(f"its data is not base64 (as {content_type or 'binary'})") from None
        return self.ctx.put_content(data, content_type)
