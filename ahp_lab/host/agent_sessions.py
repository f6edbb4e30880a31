"""The host's side of the optional per-session agent hooks (:class:`~ahp_lab.agents.base.SessionAgent`).

An agent with ``open_session`` is opened while its AHP session is being created, so the config
schema it announces (modes, config options) is in the session's first state; ``session/ready``
follows. The host then forwards a client's accepted ``session/configChanged`` to
``config_changed``, disposal to ``close_session``, ``lab.restart_agent()`` to ``restart`` and
``resolveSessionConfig`` to ``resolve_session_config``.

Each session gets a :class:`HostSessionContext`: what the agent may do outside a turn. Its file
helpers go through the host's one path check (:class:`~ahp_lab.host.resources.ResourceService`)
with the session's working directories as the only roots; its terminals are AHP terminal
channels whose processes the host runs (:mod:`ahp_lab.host.terminals`); ``put_content`` keeps text (diff sides, images) for
``resourceRead`` under ``ahp-content:/`` URIs.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import logging
import os
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..agents.base import COMMAND_META, FileAccessDenied, TurnFailed
from ..protocol.jsonrpc import ErrorCode
from ..protocol.jsonvalue import to_json
from ..protocol.printable import printable
from ..store import agent_origin
from ..transport import RpcError
from .redaction import Redactor
from .resources import ResourceService, file_turn, file_uri, uri_path
from .terminals import HostTerminal
from .validation import config_value_problem

if TYPE_CHECKING:
    from .host import Host

log = logging.getLogger("ahp_lab.host")

__all__ = ["AgentSessions", "HostSessionContext", "HostTerminal", "CONTENT_SCHEME"]

CONTENT_SCHEME = "ahp-content:/"
#: Inputs of ``put_content`` this long or longer are remembered, the last few, with where they went.
_RECENT_INPUT_MIN = 64 * 1024
_RECENT_INPUTS = 8
MAX_COMMANDS = 200
#: The longest name, description or hint of an agent's slash command (a longer name is not offered)
MAX_COMMAND_TEXT = 1000
#: Ended and released terminals a session keeps listing in ``RootState.terminals`` (the newest)
MAX_ENDED_TERMINALS = 32
#: How many times the read limit a read of some lines may scan to reach them (8 MiB by default: 64 MiB)
MAX_SCANNED_READS = 8
_SEQ_SEARCH = 2000  # how far back latest_seq looks
# The environment a terminal starts from: enough to find programs, never the kernel's secrets.
_TERMINAL_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR", "USER", "LOGNAME", "SHELL")


def _has(agent: Any, hook: str) -> bool:
    return callable(getattr(agent, hook, None))


def _valid_config(config: Any, redactor: Redactor) -> dict | None:
    """The ``{schema, values}`` an agent returned, if it has that shape, redacted: it is text the
    host did not write (a key in a mode's description went into state, the export and every
    client's view, and ``resolveSessionConfig``'s answer). The choices it offers every client (a
    mode's id, an option's values) are no secrets, even where its ``env`` named them too."""
    if not isinstance(config, dict):
        return None
    schema, values = config.get("schema"), config.get("values")
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return None
    redactor.forget(
        *(
            choice
            for prop in schema["properties"].values()
            if isinstance(prop, dict) and isinstance(prop.get("enum"), list)
            for choice in prop["enum"]
        )
    )
    return redactor.redact(
        {"schema": to_json(schema), "values": to_json(values) if isinstance(values, dict) else {}}
    )


class HostSessionContext:
    """The host's :class:`~ahp_lab.agents.base.SessionContext` for one session."""

    def __init__(self, sessions: AgentSessions, session: str, provider: str, directories: list[str]) -> None:
        self.sessions = sessions
        self.host = sessions.host
        self.session = session
        self.provider = provider
        self.working_directories = directories
        self.origin = agent_origin(getattr(sessions.host.agents.get(provider), "name", "agent"))
        self._untitled: str | None = None  # the title before the agent's first (None: not named)
        self._agent_title: str | None = None  # the title the agent gave last
        self.commands: list[dict] = []
        self.terminals: dict[str, HostTerminal] = {}
        self._starting = 0  # terminals whose process is being started
        # the host's one path check, with the session's working directories as the only roots
        roots = lambda _connection: self.working_directories  # noqa: E731
        self._files = ResourceService(roots, roots, self.host.limits)

    # -- config ---------------------------------------------------------------------------------

    def config_values(self) -> dict:
        config = (self.host.store.state(self.session) or {}).get("config") or {}
        return to_json(config.get("values") or {})

    async def opened(self) -> None:
        await self.sessions.wait_opened(self.session)

    def update_config(self, values: dict, offered: dict | None = None) -> int | None:
        # read as the schema was kept, redacted: a mode whose id holds a key is offered masked
        redact = self.host.redactor.redact
        values, offered = redact(values), (None if offered is None else redact(offered))
        state = self.host.store.state(self.session) or {}
        config = state.get("config") or {}
        props = (config.get("schema") or {}).get("properties") or {}
        current = config.get("values") or {}
        changes = {k: v for k, v in values.items() if k in props and current.get(k) != v}
        for key, value in changes.items():  # the schema the agent offered, checked as a client's change is
            if offered is not None and value in offered.get(key, ()):
                continue
            reason = config_value_problem(props[key], value)
            if reason is not None:
                raise ValueError(f"{key} {value!r}, which is not among the values it offered ({reason})")
        if not changes:
            return None
        return self.host.dispatch(
            self.session, {"type": "session/configChanged", "config": changes}, self.origin
        ).seq

    def update_title(self, title: str | None) -> int | None:
        if not self.host.store.has_channel(self.session):
            return None
        current = (self.host.store.state(self.session) or {}).get("title")
        if title is None:  # cleared: back to the title from before the agent's first
            if self._untitled is None or current != self._agent_title:
                return None  # never named by the agent, or renamed since by someone else
            title, self._untitled = self._untitled, None
        else:
            # one printable line (a newline or a right-to-left override in a title shows in every
            # client's session list), masked before it is cut: a secret cut in two is no longer
            # recognised whole
            title = self.redact(" ".join(printable(str(title)).split()))[:200]
            if self._untitled is None:
                self._untitled = current if isinstance(current, str) else ""
            self._agent_title = title
        if current == title:
            return None
        return self.host.dispatch(
            self.session, {"type": "session/titleChanged", "title": title}, self.origin
        ).seq

    def latest_seq(self, channel: str, action_type: str, **fields: Any) -> int | None:
        log_ = self.host.store.transitions
        for back in range(1, min(len(log_), _SEQ_SEARCH) + 1):
            t = log_[-back]
            if (
                t.accepted
                and t.type == action_type
                and t.channel == channel
                and all(t.action.get(k) == v for k, v in fields.items())
            ):
                return t.seq
        return None

    def add_secret_env(self, env: Mapping[str, str]) -> None:
        self.host.redactor.add_env(env)

    @property
    def redactor(self) -> Any:
        """The host's redactor (an agent's own record of what it exchanged masks with it)."""
        return self.host.redactor

    def redact(self, text: str) -> str:
        return self.host.redactor.text(text)

    def set_commands(self, commands: list[dict]) -> None:
        """The agent's slash commands, each name once, and only names a ``/`` word can be (no
        whitespace or control character: a name with a line break was offered as a completion
        whose text held one)."""
        named = {}
        for c in commands:
            name = c.get("name") if isinstance(c, dict) else None
            if (
                isinstance(name, str)
                and 0 < len(name) <= MAX_COMMAND_TEXT
                and printable(name) == name
                and not any(ch.isspace() for ch in name)
                and name not in named
            ):
                named[name] = {**c, "description": self._command_text(c.get("description"))}
                if c.get("hint") is not None:
                    named[name]["hint"] = self._command_text(c["hint"])
        self.commands = list(named.values())[:MAX_COMMANDS]

    def _command_text(self, text: Any) -> str:
        """A command's description or hint, cut at :data:`MAX_COMMAND_TEXT` characters, masked before
        the cut: 200 commands of 150,000 characters made each ``/`` completion 30 MB, masked again
        each time, the loop held 3 s (attacker round 35)."""
        text = text if isinstance(text, str) else ""
        if len(text) <= MAX_COMMAND_TEXT:
            return text
        # a secret the first cut leaves the start of is masked from where it starts (masking
        # shortens the text: a key at character 1,185 of one holding twelve before came within the
        # 1,000 kept: attacker round 36)
        return self.host.redactor.cut(text[: MAX_COMMAND_TEXT + 200])[:MAX_COMMAND_TEXT] + "…"

    def put_content(self, data: str | bytes, content_type: str = "text/plain") -> dict:
        return self.sessions.put_content(data, content_type)

    # -- files ----------------------------------------------------------------------------------

    def _uri(self, path: str) -> str:
        if not isinstance(path, str) or not os.path.isabs(path):
            raise FileAccessDenied(f"{path!r} is refused because it is not an absolute path")
        return file_uri(path)

    def file_turn(self) -> Any:
        return file_turn()

    def check_path(self, path: str, *, write: bool = False) -> str:
        try:
            return str(self._files.check(None, self._uri(path), write=write))
        except RpcError as exc:
            raise FileAccessDenied(_working_dirs_reason(exc.message, self.working_directories)) from None

    def read_text_file(self, path: str, line: int | None = None, limit: int | None = None) -> str:
        """A file inside the working directories, whole or ``limit`` lines from ``line`` (1-based).

        Lines end at ``\\n`` only, as an editor counts them (not at a form feed or U+2028). What is
        returned is at most the host's read limit; lines are read from the file as they come, so a
        few lines of a file larger than that limit can be read too.
        """
        try:
            if line is None and limit is None:
                text = self._files._resourceRead(None, {"uri": self._uri(path), "encoding": "utf-8"})
                if text.get("encoding") != "utf-8":
                    raise OSError(f"{path} is not a UTF-8 text file")
                return text["data"]
            handle, _st = self._files.open_checked(None, self._uri(path))
        except RpcError as exc:
            if exc.code == ErrorCode.PERMISSION_DENIED:
                raise FileAccessDenied(_working_dirs_reason(exc.message, self.working_directories)) from None
            if exc.code == ErrorCode.NOT_FOUND:
                raise FileNotFoundError(exc.message) from None
            raise OSError(exc.message) from None
        first = max(0, (line or 1) - 1)
        end = None if limit is None else first + max(0, limit)
        most = self.host.limits.max_read_bytes
        # the lines skipped count too: line 2 of an 8 GiB file without a line break read it all
        scan = MAX_SCANNED_READS * most
        kept: list[bytes] = []
        size = number = scanned = 0
        with handle as f:
            while end is None or number < end:
                piece = f.readline(most + 1)  # a bounded piece: a line longer than that comes in several
                if not piece:
                    break
                scanned += len(piece)
                if scanned > scan:
                    raise OSError(
                        f"reading line {first + 1:,} of {path} takes reading more than {scan:,} bytes, "
                        f"{MAX_SCANNED_READS} times the read limit"
                    )
                if number >= first:
                    size += len(piece)
                    if size > most:
                        raise OSError(
                            f"the lines asked for of {path} are over the read limit of {most:,} bytes"
                        )
                    kept.append(piece)
                if piece.endswith(b"\n"):
                    number += 1
        try:
            return b"".join(kept).decode("utf-8")
        except UnicodeDecodeError:
            raise OSError(f"{path} is not a UTF-8 text file") from None

    def write_text_file(self, path: str, content: str) -> None:
        """Write a file inside the working directories, creating its missing folders there too."""
        uri = self._uri(path)
        try:
            parent = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(parent):
                self._files._resourceMkdir(None, {"uri": file_uri(parent)})  # checked as the file is
            self._files._resourceWrite(None, {"uri": uri, "data": content, "encoding": "utf-8"})
        except RpcError as exc:
            if exc.code == ErrorCode.PERMISSION_DENIED:
                raise FileAccessDenied(_working_dirs_reason(exc.message, self.working_directories)) from None
            raise OSError(exc.message) from None

    # -- terminals ------------------------------------------------------------------------------

    async def create_terminal(
        self,
        command: str,
        args: list[str] | None = None,
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        on_output: Callable[[HostTerminal], Any] | None = None,
    ) -> HostTerminal:
        live = [t for t in self.terminals.values() if not t.released]
        most = self.host.limits.max_agent_terminals
        # the ones still starting count too: 60 requests sent at once all passed the check, made
        # before the first process had started
        if len(live) + self._starting >= most:
            raise FileAccessDenied(f"this session already has {most} terminals; release one first")
        workdir = self.check_path(cwd or self.working_directories[0])
        if not os.path.isdir(workdir):
            raise FileAccessDenied(f"{workdir} is not a folder")
        base = {k: os.environ[k] for k in _TERMINAL_ENV if k in os.environ}
        base.update({str(k): str(v) for k, v in (env or {}).items()})
        self._starting += 1
        try:
            process = await asyncio.create_subprocess_exec(
                command,
                *(args or []),
                cwd=workdir,
                env=base,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            self._starting -= 1
        uri = f"ahp-terminal:/{uuid.uuid4()}"
        # the channel's first state is not an action the host redacts: masked here, before the cut
        # one line without escapes, control or bidi characters, as the session's title (the raw
        # command line reached every client's RootState.terminals: attacker round 35)
        title = self.redact(" ".join(printable(" ".join([command, *(args or [])])).split()))[:200]
        self.host.store.add_channel(
            uri,
            "terminal",
            {
                "title": title,
                "cwd": self.redact(file_uri(workdir)),  # a folder named after a key the agent got
                "content": [],
                "claim": {"kind": "session", "session": self.session},
                "isPty": False,
            },
        )
        most = self.host.limits.max_terminal_output_bytes
        if isinstance(output_byte_limit, int) and output_byte_limit >= 0:  # 0 keeps nothing
            most = min(output_byte_limit, most)
        terminal = HostTerminal(self, uri, title, process, most, on_output)
        self.terminals[uri] = terminal
        self.publish_terminals()
        return terminal

    def claim_terminal(self, terminal: HostTerminal, turn_id: str | None, tool_call_id: str | None) -> None:
        claim: dict[str, Any] = {"kind": "session", "session": self.session}
        if turn_id and tool_call_id:
            claim.update(turnId=turn_id, toolCallId=tool_call_id)
        state = self.host.store.state(terminal.uri)
        if state is not None and state.get("claim") != claim:
            self.host.dispatch(terminal.uri, {"type": "terminal/claimed", "claim": claim}, self.origin)
            self.publish_terminals()

    def publish_terminals(self) -> None:
        """Replace ``RootState.terminals`` with the host's terminals (``root/terminalsChanged``):
        those running, and the newest :data:`MAX_ENDED_TERMINALS` that ended and were released.
        Each change sends the whole list: an agent creating and releasing terminals by the
        thousand made every event cost more (attacker round 33). An ended terminal no longer
        listed goes, its channel with it (its output stays in the transition log, as long as the
        log keeps it): each kept up to 1 MiB of output in the host's state, and 40 commands run
        one after another held 160 MiB for good (attacker round 35)."""
        ended = [uri for uri, t in self.terminals.items() if t.released and t.exited]
        for uri in ended[: max(0, len(ended) - MAX_ENDED_TERMINALS)]:
            self.forget_terminal(uri)
        self.sessions.publish_terminals()

    def forget_terminal(self, uri: str) -> None:
        """Drop terminal ``uri``: the session's record of it and its channel, with the host's
        subscribers to it, and the output it kept. What its output held back goes into the channel
        first, as when its command exits (a session disposed as its command ended lost the last
        words' held end)."""
        terminal = self.terminals.pop(uri, None)
        if terminal is not None:
            terminal.forget()
        host = self.host
        if host.store.has_channel(uri):
            host.end_streams(uri)
        host.store.remove_channel(uri)
        host.subscribers.pop(uri, None)

    def close(self) -> None:
        """Stop the session's terminals (their commands and whatever those started)."""
        for terminal in self.terminals.values():
            terminal.release()

    async def aclose(self) -> None:
        """:meth:`close`, then wait until every terminal's command has been reaped."""
        self.close()
        pumps = [t._pump for t in self.terminals.values() if not t._pump.done()]
        if pumps:
            await asyncio.wait(pumps, timeout=5.0)


def _working_dirs_reason(message: str, dirs: list[str]) -> str:
    """The resource check's reason, naming what an agent may touch instead of the grant it would need."""
    head = message.split(" is refused because ")[0]
    if " is refused because it is not inside any " in message:
        return f"{head} is outside the session's working directories ({', '.join(dirs) or 'none'})"
    return message


class AgentSessions:
    """Calls an agent's optional session hooks and serves what a session context offers."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.contexts: dict[str, HostSessionContext] = {}
        self.opening: dict[str, asyncio.Future] = {}
        self._content: dict[str, tuple[str | bytes, str, int]] = {}  # uri -> (data, type, bytes)
        self._content_bytes = 0
        # a large input -> (uri, bytes, secrets known when it was masked)
        self._recent_inputs: dict[str | bytes, tuple[str, int, int]] = {}
        self._evicted: set[str] = set()  # content given up for newer (resourceRead says so)
        self._last_config: dict[str, dict] = {}  # provider -> the schema its last opened session had
        self._tasks: set[asyncio.Task] = set()

    # -- opening and closing --------------------------------------------------------------------

    def opens(self, provider: str) -> bool:
        """Whether the provider's agent wants to be opened before the session is ready."""
        return _has(self.host.agents.get(provider), "open_session")

    def open(
        self,
        uri: str,
        provider: str,
        directories: list[str],
        add: Callable[[dict | None, str | None, list], None],
    ) -> Awaitable[None]:
        """Open the agent for a new session, then ``add(config, error, directories)`` its channel."""
        future = asyncio.get_running_loop().create_future()
        self.opening[uri] = future

        async def run() -> None:
            ctx = HostSessionContext(self, uri, provider, list(directories))
            config, error, cancelled = None, None, False
            try:
                config = _valid_config(await self.host.agents[provider].open_session(ctx), self.host.redactor)
            except asyncio.CancelledError:  # the agent closed, say: the session is not left opening
                error, cancelled = "the agent was stopped before it set up the session", True
            except Exception as exc:  # the agent's failure becomes the session's creation error
                error = str(exc) or type(exc).__name__
            if config is not None:
                self._last_config[provider] = config
            self.contexts[uri] = ctx
            try:
                add(config, error, ctx.working_directories)
            finally:
                self.opening.pop(uri, None)
                if not future.done():
                    future.set_result(None)
            if cancelled:
                raise asyncio.CancelledError

        return run()

    async def wait_opened(self, uri: str) -> None:
        """Wait until a session being opened has its channel (no-op otherwise)."""
        future = self.opening.get(uri)
        if future is not None:
            await asyncio.shield(future)

    def context(self, session: str) -> HostSessionContext | None:
        return self.contexts.get(session)

    async def aclose(self) -> None:
        """Stop every session's terminals (the host is closing), and wait for them."""
        for ctx in list(self.contexts.values()):
            await ctx.aclose()
        self.publish_terminals()

    def on_session_disposed(self, uri: str) -> None:
        ctx = self.contexts.pop(uri, None)
        if ctx is None:
            return
        ctx.close()
        for terminal in list(ctx.terminals):  # their commands are stopped: nothing shows them now
            ctx.forget_terminal(terminal)
        self.publish_terminals()
        agent = self.host.agents.get(ctx.provider)
        if _has(agent, "close_session"):
            self._spawn(agent.close_session(uri))

    # -- config ---------------------------------------------------------------------------------

    def on_client_action(self, transition: Any, client_id: str) -> None:
        if transition.type != "session/configChanged" or transition.channel not in self.contexts:
            return
        agent = self.host.agents.get(self.contexts[transition.channel].provider)
        if not _has(agent, "config_changed"):
            return
        before = ((transition.before or {}).get("config") or {}).get("values") or {}
        after = ((transition.after or {}).get("config") or {}).get("values") or {}
        keys = [*after, *(k for k in before if k not in after)]  # in the order the client wrote them
        changes = {k: after.get(k) for k in keys if before.get(k) != after.get(k)}
        if changes:
            self._spawn(self._config_changed(agent, transition.channel, changes, to_json(before)))

    def chosen_config(self, session: str, changes: dict) -> None:
        """``createSession``'s config values (checked against the schema): into the session's
        state, and to its agent, as a client's ``session/configChanged`` goes."""
        before = to_json(((self.host.store.state(session) or {}).get("config") or {}).get("values") or {})
        self.host.dispatch(session, {"type": "session/configChanged", "config": changes})
        ctx = self.contexts.get(session)
        agent = self.host.agents.get(ctx.provider) if ctx is not None else None
        if _has(agent, "config_changed"):
            self._spawn(self._config_changed(agent, session, to_json(changes), before))

    async def _config_changed(self, agent: Any, session: str, changes: dict, before: dict) -> None:
        try:
            await agent.config_changed(session, to_json(changes))
        except Exception as exc:
            reason = str(exc) if isinstance(exc, TurnFailed) else f"{type(exc).__name__}: {exc}"
            log.warning("the agent refused the config change %.200s of %s: %.500s", changes, session, reason)
            applied = exc.applied if isinstance(exc, TurnFailed) else ()
            if not self.host.store.has_channel(session):
                return
            # what it took stays, and so does what the agent (or a client) set since: an agent that
            # switched itself to another mode, then refused the one it was sent, runs its own
            now = to_json(((self.host.store.state(session) or {}).get("config") or {}).get("values") or {})
            undo = {k: before.get(k) for k in changes if k not in applied and now.get(k) == changes[k]}
            if undo:
                self.host.dispatch(session, {"type": "session/configChanged", "config": undo})

    async def resolve_session_config(self, params: dict) -> dict:
        """``resolveSessionConfig``: the agent's answer, else the schema its last session announced."""
        provider = params.get("provider") or next(iter(self.host.agents))
        agent = self.host.agents.get(provider)
        if agent is None:
            raise RpcError(ErrorCode.PROVIDER_NOT_FOUND, f"no agent provider {provider!r}")
        resolved = None
        if _has(agent, "resolve_session_config"):
            resolved = _valid_config(await agent.resolve_session_config(params), self.host.redactor)
        resolved = (
            resolved or self._last_config.get(provider) or {"schema": {"type": "object", "properties": {}}}
        )
        values = dict(resolved.get("values") or {})
        wanted = params.get("config") if isinstance(params.get("config"), dict) else {}
        props = resolved["schema"]["properties"]
        # a value the schema does not take is left at the default (createSession would refuse it)
        values.update(
            {k: v for k, v in wanted.items() if k in props and config_value_problem(props[k], v) is None}
        )
        return {"schema": resolved["schema"], "values": values}

    async def restart(self, session: str) -> None:
        """Restart the session's agent backend (``lab.restart_agent()``)."""
        ctx = self.contexts.get(session)
        if ctx is None:
            raise LookupError(f"{session} has no agent session to restart")
        agent = self.host.agents.get(ctx.provider)
        if not _has(agent, "restart"):
            raise TypeError(f"the {getattr(agent, 'name', 'agent')} agent cannot be restarted")
        await agent.restart(session)

    # -- completions ----------------------------------------------------------------------------

    def completion_items(self, session: str, chat: str, word: str, start: int, end: int) -> list[dict]:
        """``completions`` items for a ``/`` word: the agent's slash commands (a host-extension hook)."""
        ctx = self.contexts.get(session)
        if ctx is None or not word.startswith("/"):
            return []
        items = []
        for command in ctx.commands:
            name = str(command["name"])
            if name.startswith(word[1:]):
                items.append(
                    {
                        "insertText": f"/{name} ",
                        "rangeStart": start,
                        "rangeEnd": end,
                        "attachment": {
                            "type": "simple",
                            "label": f"/{name}",
                            "modelRepresentation": str(command.get("description") or ""),
                            "_meta": COMMAND_META,  # the prompt's text carries the command
                        },
                    }
                )
        return self.host.redactor.redact(items)  # the agent's words, answered without an action

    # -- content for resourceRead ---------------------------------------------------------------

    def put_content(self, data: str | bytes, content_type: str = "text/plain") -> dict:
        # A large input given again (a call's diff sides at each of its updates, its completion and
        # its confirmation) is not masked again: masking a megabyte takes the loop some 0.2 s.
        # (unless the host learnt a secret since, which the content may hold)
        redactor = self.host.redactor
        recent = self._recent_inputs.get(data) if len(data) >= _RECENT_INPUT_MIN else None
        if recent is not None and recent[0] in self._content and recent[2] == redactor.secrets:
            uri, size, _ = recent
            self._content[uri] = self._content.pop(uri)  # the most recent again
            return {"uri": uri, "sizeHint": size, "contentType": content_type}
        source = data
        # what resourceRead serves is masked as state is (a diff's sides, an embedded blob)
        data = redactor.masked_bytes(data) if isinstance(data, bytes) else redactor.text(data)
        raw = data if isinstance(data, bytes) else data.encode("utf-8", "replace")
        uri = f"{CONTENT_SCHEME}{hashlib.sha256(raw).hexdigest()[:32]}"
        size = len(raw)
        if len(source) >= _RECENT_INPUT_MIN:
            if len(self._recent_inputs) >= _RECENT_INPUTS:
                del self._recent_inputs[next(iter(self._recent_inputs))]
            self._recent_inputs[source] = (uri, size, redactor.secrets)
        kept = self._content.pop(uri, None)
        if kept is not None:
            self._content[uri] = kept  # the most recent again
            return {"uri": uri, "sizeHint": size, "contentType": content_type}
        most = self.host.limits.max_agent_content_bytes
        if size > most:
            raise FileAccessDenied(
                f"{size:,} bytes of agent content are over what the host keeps for resourceRead ({most:,} bytes)"
            )
        while self._content_bytes + size > most:  # the oldest go: a long session keeps its recent diffs
            old_uri = next(iter(self._content))
            self._content_bytes -= self._content.pop(old_uri)[2]
            self._evicted.add(old_uri)
        self._evicted.discard(uri)
        self._content[uri] = (data, content_type, size)
        self._content_bytes += size
        return {"uri": uri, "sizeHint": size, "contentType": content_type}

    methods = frozenset({"resourceRead"})

    def handle_request(self, connection: Any, method: str, params: dict) -> Any:
        """``resourceRead`` of ``ahp-content:/`` URIs; any other URI goes on to the next extension."""
        uri = params.get("uri") if isinstance(params, dict) else None
        if not isinstance(uri, str) or not uri.startswith(CONTENT_SCHEME):
            for ext in self.host.extensions:
                if ext is not self and method in getattr(ext, "methods", ()):
                    return ext.handle_request(connection, method, params)
            raise RpcError(ErrorCode.METHOD_NOT_FOUND, f"method {method} is not supported by this host")
        found = self._content.get(uri)
        if found is None:
            if uri in self._evicted:  # ContentNotFound: a content URI (the spec's error table)
                raise RpcError(
                    ErrorCode.CONTENT_NOT_FOUND,
                    f"{uri} is no longer kept: the host keeps the most recent "
                    f"{self.host.limits.max_agent_content_bytes:,} bytes of agent content",
                )
            raise RpcError(ErrorCode.CONTENT_NOT_FOUND, f"{uri} is not content this host keeps")
        data, content_type, _ = found
        if isinstance(data, bytes) or params.get("encoding") == "base64":
            raw = data if isinstance(data, bytes) else data.encode("utf-8")
            return {
                "data": base64.b64encode(raw).decode("ascii"),
                "encoding": "base64",
                "contentType": content_type,
            }
        return {"data": data, "encoding": "utf-8", "contentType": content_type}

    # -- terminals catalogue --------------------------------------------------------------------

    def publish_terminals(self) -> None:
        from .host import ROOT

        items = []
        for ctx in self.contexts.values():
            for terminal in ctx.terminals.values():
                state = self.host.store.state(terminal.uri)
                if state is None:
                    continue
                info: dict[str, Any] = {
                    "resource": terminal.uri,
                    "title": state["title"],
                    "claim": state["claim"],
                }
                if state.get("exitCode") is not None:
                    info["exitCode"] = state["exitCode"]
                items.append(info)
        root = self.host.store.state(ROOT) or {}
        if to_json(root.get("terminals") or []) != items:
            self.host.dispatch(ROOT, {"type": "root/terminalsChanged", "terminals": items})

    # -- plumbing -------------------------------------------------------------------------------

    def _spawn(self, coro: Awaitable) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def working_directory_paths(uris: list) -> list[str]:
    """Local paths of ``file://`` working-directory URIs (others are skipped)."""
    out = []
    for uri in uris or ():
        with contextlib.suppress(RpcError):
            out.append(str(uri_path(uri)))
    return out
