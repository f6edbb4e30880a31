"""``AcpAgent``: any ACP agent, run as a subprocess over stdio, behind the in-kernel AHP host."""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import tempfile
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from acp import RequestError

from ..base import SCRIPT_SUFFIXES, SessionContext, TurnContext, TurnFailed, runs_from
from . import mapping
from .bridge import AgentFailure, Bridge
from .frames import AcpFrameLog

#: What ACP agents read in their working folder and run code from: hooks and MCP servers (Claude
#: Code's ``.claude`` and ``.mcp.json``, Gemini CLI's ``.gemini``, Codex's ``.codex``).
AGENT_CONFIGURATION = (".claude", ".mcp.json", ".gemini", ".codex")
#: What a command looks for in the folders above the one it starts in to find the code it runs
#: (``npx`` takes the nearest folder holding ``node_modules`` or ``package.json`` as its project,
#: and its ``.npmrc``; ``cargo`` reads every ``.cargo/config.toml`` up to the root): no stranger's.
RUNTIME_CONFIGURATION = (
    "node_modules", "package.json", ".npmrc", ".yarnrc.yml", ".pnpmfile.cjs", "deno.json", "deno.jsonc",
    "bunfig.toml", "pyproject.toml", "uv.toml", ".python-version", ".venv", "venv", "__pypackages__",
    ".cargo", "Cargo.toml", "go.mod", "go.work", ".tool-versions", ".envrc", "Gemfile",
)  # fmt: skip

__all__ = ["AcpAgent"]


#: A second word of the command named in the agent's description: a script's file, not a value
#: (``my-agent <key>`` put the key in every client's root state).
_SCRIPTS = (".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".sh")


class AcpAgent:
    """An ACP agent behind the host: ``Lab(agent=AcpAgent(["my-agent", "--acp"], cwd=...))``.

    Each AHP session gets its own agent process (``initialize`` + ``session/new`` while the
    session is being created, so its modes and config options are the session's config schema);
    each turn is a ``session/prompt``. See :mod:`ahp_lab.agents.acp.mapping` for what every ACP
    message becomes, and ``docs/acp.md`` for what is lost.

    ``env`` is added to a trimmed environment (the SDK's default: ``HOME``, ``PATH``, ...; the
    kernel's own variables are not passed on). ``cwd`` is the process's folder and the session's
    working directory when the session names none; no stranger writes in it, since the folder a
    process starts in is where many commands look for code (``python -m`` imports from it first,
    ``npx`` runs its ``node_modules``, ``cargo run`` builds it). Without one, the process starts in
    an empty folder of its own and each session's working directory reaches the agent as ACP's
    ``cwd``, which stays writable: a stranger who wrote ``name.py`` in a working directory it may
    write had it run by ``python -m name`` (attacker round 24). ``fs`` / ``terminal`` declare
    (and serve) the
    ACP client capabilities; both are confined to the session's working directories.

    Limits: ``initialize_timeout`` for ``initialize``, ``session/new`` and config changes;
    ``idle_timeout`` of silence during a turn (time the agent waits on the host, for a person or
    for a command to exit, does not count);
    ``cancel_grace`` for the agent to end a cancelled prompt; ``stderr_limit`` bytes of stderr
    in the life of a process; ``max_line_bytes`` for one JSON-RPC message on its stdout (reading
    and parsing a 100 MB message held the kernel's loop, every session's, 2.4 s). Breaking one is a
    failure: the turn ends with ``chat/error``.
    """

    def __init__(
        self,
        command: Sequence[str] | str,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike | None = None,
        provider: str = "acp",
        name: str = "acp",
        display_name: str | None = None,
        fs: bool = True,
        terminal: bool = True,
        initialize_timeout: float = 30.0,
        idle_timeout: float = 300.0,
        cancel_grace: float = 5.0,
        stderr_limit: int = 16 * 1024 * 1024,
        stderr_tail_bytes: int = 2048,
        max_line_bytes: int = 32 * 1024 * 1024,
    ) -> None:
        self.command = shlex.split(command) if isinstance(command, str) else [str(c) for c in command]
        if not self.command:
            raise ValueError("AcpAgent needs a command to run")
        if cwd is None:  # a path here ("examples/acp_agent.py") still names it from its own folder
            self.command = [
                os.path.abspath(w)
                if not os.path.isabs(w)
                and (os.sep in w or os.path.splitext(w)[1] in SCRIPT_SUFFIXES)
                and os.path.exists(w)
                else w
                for w in self.command
            ]
        self.env = {str(k): str(v) for k, v in (env or {}).items()}
        self.cwd = os.path.abspath(os.path.expanduser(cwd)) if cwd is not None else None
        self.provider = provider
        self.name = name
        self.display_name = display_name or os.path.basename(self.command[0])
        self.fs = fs
        self.terminal = terminal
        self.initialize_timeout = initialize_timeout
        self.idle_timeout = idle_timeout
        self.cancel_grace = cancel_grace
        self.stderr_limit = stderr_limit
        self.stderr_tail_bytes = stderr_tail_bytes
        self.max_line_bytes = max_line_bytes
        self.frames = AcpFrameLog()
        self.agent_info: dict = {}  # the agent's own ``agentInfo`` from its last initialize
        self.bridges: dict[str, Bridge] = {}
        self._stopping: set[asyncio.Task] = set()
        self._opening: set[asyncio.Task] = set()  # open_session calls still starting their process
        self._folder: str | None = None  # the empty folder a process with no cwd starts in

    def process_folder(self) -> str:
        """The folder the agent's processes start in: ``cwd``, else an empty one of the agent's own
        (made once, removed with the agent), which no client can write in."""
        if self.cwd is not None:
            return self.cwd
        if self._folder is None or not os.path.isdir(self._folder):
            self._folder = tempfile.mkdtemp(prefix="ahp-lab-acp-")
            weakref.finalize(self, shutil.rmtree, self._folder, True)
        return self._folder

    def attach(self, host: Any) -> None:
        """Join ``host``: the values of :attr:`env` are its secrets from now on (before anything
        the agent says is published; each process started registers its own ``env`` again)."""
        host.redactor.add_env(self.env)

    def info(self) -> dict:
        """The ``AgentInfo`` this agent publishes on the root channel: its program, not its
        arguments (a key given as ``--api-key`` went to every client and into exports)."""
        words = [os.path.basename(self.command[0])]
        if len(self.command) > 1 and self.command[1].endswith(_SCRIPTS):
            words.append(os.path.basename(self.command[1]))  # the script: python agent.py
        return {
            "provider": self.provider,
            "displayName": self.display_name,
            "description": f"An ACP agent over stdio: {' '.join(words)}",
            "models": [],
            "capabilities": {"multipleWorkingDirectories": {}},
        }

    # -- session hooks -------------------------------------------------------------------------

    async def open_session(self, ctx: SessionContext) -> dict | None:
        """Spawn the agent for a new AHP session; returns its modes and config options as config."""
        if not ctx.working_directories:
            ctx.working_directories.append(self.cwd or os.getcwd())
        ctx.add_secret_env(self.env)  # what the agent was given never shows up in state
        self.frames.redactor = getattr(ctx, "redactor", None)  # what a cell reads of them is masked
        bridge = Bridge(self, ctx)
        task = asyncio.current_task()
        self._opening.add(task)
        try:
            config = await bridge.start()
        except (AgentFailure, RequestError) as exc:
            message = bridge.failure_message(bridge.refusal(exc))
            await bridge.stop()
            raise RuntimeError(message) from None
        except BaseException:
            # interrupted (a cell's wait_for, the kernel's interrupt): the process goes, and with it
            # its pipes and the tasks that read them, even if this is interrupted again meanwhile
            await asyncio.shield(bridge.stop())
            raise
        finally:
            self._opening.discard(task)
        self.bridges[ctx.session] = bridge
        return config

    async def close_session(self, session: str) -> None:
        """Stop the session's agent process.

        :meth:`aclose` waits for it too: a session disposed just before the agent was closed left
        its process running past the loop's end."""
        bridge = self.bridges.pop(session, None)
        if bridge is not None:
            stop = asyncio.ensure_future(bridge.stop())
            self.track(stop)
            await asyncio.shield(stop)

    async def config_changed(self, session: str, changes: dict) -> None:
        """A client changed the mode or a config option: ``session/set_mode`` / ``set_config_option``."""
        bridge = self._bridge(session)
        if not bridge.running:
            return  # restored onto the new process when it starts
        async with bridge.config_lock:  # a prompt sent meanwhile waits: it sees the new config
            try:
                await bridge.set_configs(changes)
            except (AgentFailure, RequestError) as exc:
                if isinstance(exc, AgentFailure):
                    bridge.failure_reported = True  # the change is undone, with the reason
                raise TurnFailed(str(exc), applied=getattr(exc, "applied", ())) from None

    async def restart(self, session: str) -> None:
        """Stop the session's agent and start a fresh one, restoring mode and config values."""
        bridge = self._bridge(session)
        try:
            await bridge.restart()
        except (AgentFailure, RequestError) as exc:
            bridge.failure_reported = True  # the caller is told
            message = bridge.failure_message(bridge.refusal(exc))
            await bridge.stop()
            raise RuntimeError(message) from None

    def turn_cancelling(self, session: str, turn_id: Any) -> None:
        """A client is cancelling turn ``turn_id`` of ``session`` (a host hook, before the cancel is
        applied): its calls that wrote files end first, saying so (see :meth:`Bridge.cancelling`)."""
        bridge = self.bridges.get(session)
        if bridge is not None:
            bridge.cancelling(turn_id)

    #: Each session runs the agent as a process of its own (the host bounds strangers' sessions).
    starts_processes = True

    #: Names of what agents run hooks and MCP servers from in any working folder they are given.
    code_names = AGENT_CONFIGURATION

    def code_folders(self) -> list[Path]:
        """Where this agent runs code from, as far as the host can tell: its ``cwd`` (for
        ``cargo run``, ``npm start`` or ``python -m`` the folder a command starts in is its code),
        its command's files and the folders its ``env``'s ``PYTHONPATH``/``NODE_PATH`` name; in its
        working folder the configuration agents run hooks and MCP servers from
        (:data:`AGENT_CONFIGURATION`); and in every folder above the one it starts in what
        commands look for there (:data:`RUNTIME_CONFIGURATION`). The host lets no stranger write
        there (``docs/security.md`` §3)."""
        folder = Path(self.cwd or os.getcwd())
        started = Path(self.process_folder())
        return [
            *runs_from(self.command, self.cwd, self.env),
            *(folder / name for name in AGENT_CONFIGURATION),
            *(above / name for above in started.parents for name in RUNTIME_CONFIGURATION),
        ]

    def confirmation_refusal(self, session: str, action: dict, trusted: bool = True) -> str | None:
        """Why a client's ``chat/toolCallConfirmed`` cannot reach this session's agent as one of
        the permission options it offered (the host rejects it with this reason), else ``None``;
        ``trusted``: whether it comes from the notebook's own client."""
        bridge = self.bridges.get(session)
        return None if bridge is None else bridge.confirmation_refusal(action, trusted)

    def _bridge(self, session: str) -> Bridge:
        bridge = self.bridges.get(session)
        if bridge is None:
            raise TurnFailed(f"no ACP agent was opened for {session}", "agentError")
        return bridge

    def track(self, task: asyncio.Task) -> None:
        """Keep a background stop (after a failure, or a cancel the agent ignores) for :meth:`aclose`."""
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)

    async def aclose(self) -> None:
        """Stop every agent process this agent started, those still starting too."""
        for task in list(self._opening):
            task.cancel()  # its session's creation fails, and open_session stops the process
        if self._opening:
            await asyncio.wait(list(self._opening))
        for session in list(self.bridges):
            await self.close_session(session)
        for task in list(self._stopping):
            await task

    # -- turns ---------------------------------------------------------------------------------

    async def run_turn(self, ctx: TurnContext) -> None:
        """One ``session/prompt`` (and one more for each steering message the chat is given meanwhile);
        the last one's stop reason ends the AHP turn (see ``mapping.STOP_REASONS``)."""
        bridge = self._bridge(ctx.session)
        try:
            await bridge.settle()  # a prompt cancelled before this turn ends first, or the agent failed
            async with bridge.config_lock:  # a config change made before this turn reaches the agent
                pass  # first; when it failed the agent, this turn starts a fresh process
            missed = bridge.unreported_failure()
            if missed is not None:  # it failed between turns: this turn says so, instead of the
                await bridge.stderr_read()  # conversation silently going with the old process
                raise AgentFailure(
                    f"{missed}, between turns; this message was not sent to it, and the next one starts "
                    "a fresh agent process, which does not have the conversation so far"
                )
            if not bridge.running:
                await bridge.restart()  # a crashed or stopped agent is respawned by the next turn
            if bridge.notice is not None:
                notice, bridge.notice = bridge.notice, None
                await ctx.notify(notice)
            response = await bridge.prompt(ctx)
            usage = _tokens(None, response)
            # a steering message goes to the agent as soon as ACP lets it: once a prompt has ended
            while response.stop_reason == "end_turn" and (steering := ctx.take_steering()) is not None:
                try:
                    response = await bridge.steer(ctx, steering)
                except AgentFailure as exc:  # taken from the chat, never delivered: said, not lost
                    text = " ".join(str(steering.get("text", "")).split())
                    raise AgentFailure(
                        f"{exc}; the steering message {text[:200]!r} was not delivered: send it again"
                    ) from None
                usage = _tokens(usage, response)  # the turn's, over its prompts
        except asyncio.CancelledError:
            bridge.cancel(ctx.chat, ctx.turn_id)
            raise
        except AgentFailure as exc:
            bridge.failure_reported = True
            bridge.finish_turn()  # a character the agent cut is kept, as U+FFFD, and the plan shown
            bridge.end_turn()
            message = bridge.failure_message(bridge.refusal(exc))
            self.track(asyncio.ensure_future(bridge.stop(bridge.generation)))  # the turn ends at once
            raise TurnFailed(message, "agentFailed") from None
        except RequestError as exc:
            bridge.finish_turn()
            bridge.end_turn()
            raise TurnFailed(bridge.refusal(exc), "agentError") from None
        except Exception:  # a fault of ours: the turn fails, and the bridge no longer takes it for running
            bridge.finish_turn()
            bridge.end_turn()
            raise
        bridge.finish_turn()
        if usage is not None:
            bridge.emit(mapping.usage_action(bridge.turn, tokens=usage))
        bridge.end_turn()
        outcome = mapping.STOP_REASONS.get(
            response.stop_reason, ("stopReason", f"The agent stopped: {response.stop_reason}")
        )
        if response.stop_reason == "cancelled":
            raise TurnFailed("The agent cancelled the turn on its own", "cancelled")
        if outcome is not None:
            raise TurnFailed(outcome[1], outcome[0])


def _tokens(total: dict | None, response: Any) -> dict | None:
    """``total`` (prompt responses' ``usage``, as JSON) with ``response``'s added: a turn that
    sends a steering message is several prompts, and each reports its own."""
    usage = response.usage.model_dump(by_alias=True) if response.usage is not None else None
    if usage is None or total is None:
        return usage or total
    out = dict(total)
    for key, value in usage.items():
        if isinstance(value, int) and isinstance(out.get(key), int):
            out[key] += value
        elif value is not None:
            out[key] = value
    return out
