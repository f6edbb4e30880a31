"""MCP servers for real: the host runs them with the official ``mcp`` SDK and mirrors them into AHP.

Every ``mcpServer`` customization (a bare top-level server or a container's child) gets a
runtime here. Stdio servers run as subprocesses, streamable HTTP servers are reached by URL.
Their state follows mcp-servers.md §3 through ``session/mcpServerStateChanged``::

    starting → ready | authRequired (with the McpAuthRequirement, never a token) | error | stopped

A server that crashes, never answers its handshake, or writes something that is not JSON-RPC
ends in ``error`` (with the tail of its stderr) within ``start_timeout``; nothing here blocks
the kernel's event loop. Start and stop requests from clients, toggles and a disabled container
start and stop servers. A ready server's tools become session server tools named
``mcp__plugin_<plugin>_<server>__<tool>`` (``mcp__<server>__<tool>`` outside plugins) whose tool
calls carry ``contributor: {kind: "mcp", customizationId}``.

Authorization: a request answered with an authorization challenge — an HTTP 401/403, or the
JSON-RPC error ``-32401`` whose ``data.auth`` is an ``McpAuthRequirement`` (the convention of
``examples/mcp_server.py``) — moves the server to ``authRequired`` (at connect time) or the tool
call to ``auth-required`` (``chat/toolCallAuthRequired``; for reasons ``required``/``expired``
the server too). ``authenticate`` for the advertised ``resource.resource`` stores the token
and resumes: the host retries with ``_meta["ahp_lab/authorization"] = "Bearer <token>"`` (and the
``Authorization`` header over HTTP), then ``chat/toolCallAuthResolved`` and the call continues.

A stdio server whose ``command`` is ``python`` or ``python3`` runs with the kernel's interpreter
(``sys.executable``), so a plugin's Python server sees the packages the notebook sees. Plugin
servers get ``PLUGIN_ROOT`` in their environment and the plugin folder as working directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

import anyio

from ..protocol.customizations import MCP_NOT_ALLOWED, effective_enabled
from ..protocol.printable import printable
from ..protocol.uris import shown_url
from .mcp_auth import AuthAtConnect, McpAuthorization, masked_tokens
from .mcp_tools import McpToolCalls, _Tool, one_line
from .redaction import Redactor

log = logging.getLogger("ahp_lab.host.mcp")

__all__ = ["McpManager", "AUTH_ERROR_CODE", "TOKEN_META_KEY", "NOT_ALLOWED"]


# The ``mcp`` SDK is imported when the first server starts (``_load_sdk``), not with this module:
# it is tens of thousands of objects that every full garbage collection of a kernel or an
# ``ahp-lab serve`` process would otherwise visit, whether or not any MCP server is configured.
mt: Any = None
ClientSession: Any = None
StdioServerParameters: Any = None
stdio_client: Any = None
MCPError: Any = None


def _load_sdk() -> None:
    """Import the ``mcp`` SDK into this module's names (idempotent; run off the event loop)."""
    global mt, ClientSession, StdioServerParameters, stdio_client, MCPError
    if MCPError is not None:
        return
    import mcp_types
    from mcp.client.session import ClientSession as session_type
    from mcp.client.stdio import StdioServerParameters as stdio_parameters
    from mcp.client.stdio import stdio_client as open_stdio
    from mcp.shared.exceptions import MCPError as error_type

    mt, ClientSession, StdioServerParameters, stdio_client = (
        mcp_types,
        session_type,
        stdio_parameters,
        open_stdio,
    )
    MCPError = error_type


AUTH_ERROR_CODE = -32401
TOKEN_META_KEY = "ahp_lab/authorization"
#: ``errorType`` of the state of a client's MCP server that waits for the notebook's permission
NOT_ALLOWED = MCP_NOT_ALLOWED
_RELEVANT = frozenset(
    {
        "session/customizationsChanged",
        "session/customizationToggled",
        "session/customizationUpdated",
        "session/customizationRemoved",
        "session/mcpServerStartRequested",
        "session/mcpServerStopRequested",
    }
)
_STDERR_TAIL = 2000


class _Failure(Exception):
    """A server failure described in one sentence (``error_type`` names it in the error state)."""

    def __init__(self, message: str, error_type: str = "McpServerError") -> None:
        super().__init__(message)
        self.error_type = error_type


@dataclass
class _Runtime:
    session: str
    id: str
    config: dict
    config_key: str
    wanted: bool = True
    failed: bool = False
    last_effective: bool | None = None
    gen: int = 0
    state: str = "stopped"
    task: asyncio.Task | None = None
    client: ClientSession | None = None
    tools: list[_Tool] = field(default_factory=list)
    token: str | None = None
    # the tokens connections other than the notebook gave it (the last few): masked in what the
    # server says, which is all they reach (the notebook's own go to the host's redactor)
    given: list[str] = field(default_factory=list)
    auth: dict | None = None  # the live server-level requirement
    auth_mid_turn: bool = False
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    stopping: bool = False
    dead: bool = False  # failed; its task may still be cleaning up
    call_waiters: list[tuple[str, asyncio.Future]] = field(default_factory=list)
    http_challenge: dict | None = None
    tools_stale: bool = False  # the server said notifications/tools/list_changed
    shown_key: str | None = None  # the configuration the last "not allowed" notice showed

    @property
    def name(self) -> str:
        return str(self.config.get("server") or self.id)

    @property
    def active(self) -> bool:
        return self.task is not None and not self.task.done()


def _over(rt: _Runtime, gen: int) -> bool:
    """Whether the connection of generation ``gen`` is to end: stopped, or a newer one started."""
    return rt.stopping or gen != rt.gen


def _key(config: dict) -> str:
    return json.dumps(config, sort_keys=True, default=str)


#: What a client's server would run is shown whole in its "not allowed" notice up to this many
#: characters; a longer one is not allowed (the person cannot read it).
SHOWN_MAX = 2000
_QUOTED = re.compile(r"[\s'\"\\`]")
#: Environment variables that change what a command runs (a shell function, a preloaded library,
#: an interpreter's path or options): one whose value is masked cannot be read, so not allowed.
_CODE_ENV = re.compile(
    r"BASH_FUNC_.*|BASH_ENV|ENV|SHELLOPTS|PROMPT_COMMAND|IFS|PATH|LD_PRELOAD|LD_LIBRARY_PATH|LD_AUDIT|"
    r"DYLD_INSERT_LIBRARIES|DYLD_LIBRARY_PATH|PYTHONPATH|PYTHONHOME|PYTHONSTARTUP|PYTHONUSERBASE|"
    r"NODE_OPTIONS|NODE_PATH|PERL5LIB|PERL5OPT|PERLLIB|RUBYOPT|RUBYLIB|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|"
    r"CLASSPATH|GCONV_PATH|GIT_SSH|GIT_SSH_COMMAND|GIT_EXEC_PATH|UV_INDEX_URL|UV_EXTRA_INDEX_URL|"
    r"UV_DEFAULT_INDEX|UV_INDEX|PIP_INDEX_URL|PIP_EXTRA_INDEX_URL|NPM_CONFIG_REGISTRY|YARN_REGISTRY"
)
#: The host's generic masking alone (no known secrets): what it changes in a command is unreadable.
_GENERIC = Redactor()


def _word(text: str) -> str:
    """A word of a command as it reads, in JSON quotes when it holds a space or a quote."""
    return text if text and not _QUOTED.search(text) else json.dumps(text)


def _short(name: Any) -> str:
    """A name in a notice, at most 100 characters (a name of thousands pushed the command out of
    what the tree shows)."""
    text = str(name)
    return text if len(text) <= 100 else text[:99] + "…"


def fingerprint(key: str, secret: bytes) -> str:
    """A configuration's fingerprint, shown with it and given back by "Allow": keyed by the host's
    own secret, so a client cannot make two configurations that share one (8 hex digits of a plain
    hash were found colliding in a second)."""
    return hmac.new(secret, key.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:16]


def _unwrap(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        inner = [
            e
            for e in exc.exceptions
            if not isinstance(e, (asyncio.CancelledError, anyio.get_cancelled_exc_class()))
        ]
        exc = (inner or list(exc.exceptions))[0]
    return exc


class McpManager(McpToolCalls, McpAuthorization):
    """Host extension: MCP server lifecycles, their tools, tool calls and authorization."""

    def __init__(
        self,
        host: Any,
        customizations: Any,
        *,
        start_timeout: float = 15.0,
        tool_timeout: float = 300.0,
    ) -> None:
        self.host = host
        self.customizations = customizations
        self.start_timeout = start_timeout
        self.tool_timeout = tool_timeout
        self.runtimes: dict[tuple[str, str], _Runtime] = {}
        #: (session, server id) → the configuration the person at the kernel allowed to run
        self.allowed: dict[tuple[str, str], str] = {}
        #: every such decision, in order (who published the server, what it runs, when)
        self.decisions: list[dict] = []
        self._scheduled: set[str] = set()
        self._tasks: set[asyncio.Task] = set()
        self._secret = os.urandom(32)  # keys the configurations' fingerprints

    # -- host hooks -----------------------------------------------------------------------------

    def on_transition(self, transition: Any) -> None:
        if transition.channel_kind != "session" or transition.type not in _RELEVANT:
            return
        session = transition.channel
        action = transition.action
        rt = self.runtimes.get((session, action.get("id"))) if isinstance(action.get("id"), str) else None
        if transition.type == "session/mcpServerStartRequested" and rt is not None:
            serving = rt.active and not rt.stopping and not rt.dead
            rt.wanted, rt.failed = True, False
            if serving:
                self._set_state(rt, rt.gen, self._state_json(rt))  # already running: confirm its state
        elif transition.type == "session/mcpServerStopRequested" and rt is not None:
            rt.wanted = False
        self._schedule(session)

    def on_session_disposed(self, session: str) -> None:
        for key, rt in list(self.runtimes.items()):
            if key[0] == session:
                del self.runtimes[key]
                self._spawn(self._stop(rt, publish=False))

    def server_tool_definitions(self, session: str) -> list[dict]:
        out = []
        for (s, _), rt in self.runtimes.items():
            if s == session and rt.client is not None:
                out.extend(t.definition for t in rt.tools)
        return out

    def tool_owner(self, session: str, name: str) -> str | None:
        found = self._find_tool(session, name)
        return f"mcp:{found[0].id}" if found else None

    def resolve_tool(self, session: str, name: str) -> Any:
        found = self._find_tool(session, name)
        if found is None:
            return None
        from .host import ResolvedTool

        rt, tool = found
        return ResolvedTool(
            "mcp",
            name,
            tool.title,
            tool.definition,
            owner=rt.id,
            contributor={"kind": "mcp", "customizationId": rt.id},
        )

    async def aclose(self) -> None:
        runtimes = list(self.runtimes.values())
        self.runtimes.clear()
        await asyncio.gather(*(self._stop(rt, publish=False) for rt in runtimes), return_exceptions=True)

    # -- reconciling the tree with the running servers ------------------------------------------

    def _schedule(self, session: str) -> None:
        if session in self._scheduled:
            return
        self._scheduled.add(session)
        try:
            asyncio.get_running_loop().call_soon(self._reconcile, session)
        except RuntimeError:
            self._scheduled.discard(session)

    def _servers(self, session: str) -> dict[str, dict]:
        state = self.host.store.state(session) or {}
        out: dict[str, dict] = {}
        for entry in state.get("customizations") or ():
            if not isinstance(entry, dict):
                continue
            if entry.get("type") == "mcpServer":
                out.setdefault(entry.get("id"), entry)
                continue
            for child in entry.get("children") or ():
                if isinstance(child, dict) and child.get("type") == "mcpServer":
                    out.setdefault(child.get("id"), child)
        return out

    def _reconcile(self, session: str) -> None:
        self._scheduled.discard(session)
        if not self.host.store.has_channel(session):
            return
        servers = self._servers(session)
        effective = effective_enabled((self.host.store.state(session) or {}).get("customizations"))
        for sid, entry in servers.items():
            config = self.customizations.mcp_config(session, sid)
            if config is None:
                continue
            eff = effective.get(sid, True)
            rt = self.runtimes.get((session, sid))
            if rt is None:
                rt = _Runtime(session, sid, config, _key(config), wanted=eff, last_effective=eff)
                self.runtimes[(session, sid)] = rt
            elif eff != rt.last_effective:
                rt.last_effective = eff
                rt.wanted, rt.failed = eff, False
            if _key(config) != rt.config_key:
                rt.config, rt.config_key, rt.failed = config, _key(config), False
                if rt.active:
                    self._spawn(self._restart(rt))
                    continue
            kind = (entry.get("state") or {}).get("kind")
            if rt.wanted and not eff:
                rt.wanted = False
                self._set_state(
                    rt,
                    rt.gen,
                    self._error_state(f"The MCP server {rt.name} is disabled; enable it before starting it."),
                )
                continue
            if rt.wanted and not rt.failed and (not rt.active or rt.stopping or rt.dead):
                self._start(rt)
            elif not rt.wanted and rt.active and not rt.stopping and not rt.dead:
                self._spawn(self._stop(rt))
            elif not rt.wanted and not rt.active and kind not in ("stopped", "error"):
                self._set_state(rt, rt.gen, {"kind": "stopped"})
        for key, rt in list(self.runtimes.items()):
            if key[0] == session and key[1] not in servers:
                del self.runtimes[key]
                self._spawn(self._stop(rt, publish=False))

    def _spawn(self, coro: Any) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- lifecycle ------------------------------------------------------------------------------

    def _start(self, rt: _Runtime) -> None:
        previous = rt.task
        rt.gen += 1
        rt.stopping = False
        rt.failed = False
        rt.dead = False
        # the previous connection ends: its generation is over (a start while it was being
        # stopped reset ``stopping``, and it served on, unseen, while this one waited for it 8 s,
        # its server shown "starting" meanwhile)
        rt.wake.set()
        rt.wake = asyncio.Event()
        rt.state = "starting"
        self._set_state(rt, rt.gen, {"kind": "starting"})
        rt.task = asyncio.ensure_future(self._serve(rt, rt.gen, previous))

    async def _restart(self, rt: _Runtime) -> None:
        await self._stop(rt, publish=False)
        if rt.wanted and (rt.session, rt.id) in self.runtimes:
            self._start(rt)

    async def _stop(self, rt: _Runtime, publish: bool = True) -> None:
        rt.stopping = True
        gen = rt.gen
        for _res, fut in rt.call_waiters:
            if not fut.done():
                fut.set_result(None)
        rt.auth = None
        rt.auth_mid_turn = False
        rt.wake.set()
        task = rt.task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), timeout=8)
            except (TimeoutError, asyncio.CancelledError, Exception):
                task.cancel()
        self._drop_tools(rt)
        if publish and rt.gen == gen and not rt.wanted:
            rt.state = "stopped"
            self._set_state(rt, gen, {"kind": "stopped"})

    def _drop_tools(self, rt: _Runtime) -> None:
        rt.client = None
        if rt.tools:
            rt.tools = []
            if rt.session in self.host.sessions:
                self.host._publish_server_tools(rt.session)

    def _state_json(self, rt: _Runtime) -> dict:
        if rt.state == "authRequired" and rt.auth is not None:
            return {"kind": "authRequired", **rt.auth}
        return {"kind": rt.state}

    @staticmethod
    def _error_state(message: str, stderr: str = "", error_type: str = "McpServerError") -> dict:
        error: dict[str, Any] = {"errorType": error_type, "message": message}
        if stderr:
            error["stack"] = stderr
        return {"kind": "error", "error": error}

    def _set_state(self, rt: _Runtime, gen: int, state: dict) -> None:
        if gen != rt.gen or not self.host.store.has_channel(rt.session):
            return
        state = masked_tokens(rt, state)  # an error may quote what the server said
        entry = self._servers(rt.session).get(rt.id)
        if entry is None or entry.get("state") == state:
            return
        self.host.dispatch(rt.session, {"type": "session/mcpServerStateChanged", "id": rt.id, "state": state})

    def _check_startable(self, rt: _Runtime) -> None:
        config = rt.config
        text = json.dumps({k: config.get(k) for k in ("command", "args", "env", "cwd", "url")})
        if "${PLUGIN_ROOT}" in text and not config.get("pluginRoot"):
            raise _Failure(
                f"The MCP server {rt.name} refers to ${{PLUGIN_ROOT}}, but its plugin has no folder on this machine."
            )
        client_id = config.get("clientId")
        if client_id and not config.get("trusted") and self.allowed.get((rt.session, rt.id)) != rt.config_key:
            rt.shown_key = rt.config_key
            shown = self._fingerprint(rt.config_key)
            what, unreadable = self._what_runs(config)
            decision = (
                f"It cannot be allowed: {unreadable}, and the host runs only what the person can read."
                if unreadable
                else "The host starts a client's server only when the person at the kernel allows what it "
                f"would run: lab.allow_mcp({rt.id!r}, {shown!r}), or the Allow button in the customization tree."
            )
            raise _Failure(
                f"The MCP server {_short(rt.name)} was published by remote client {_short(client_id)} and was "
                f"not started: it would run {what} (configuration {shown}). {decision}",
                NOT_ALLOWED,
            )

    def _fingerprint(self, key: str) -> str:
        return fingerprint(key, self._secret)

    def _what_runs(self, config: dict) -> tuple[str, str | None]:
        """What a server would run, as the person reads it before allowing it, and why it cannot be
        allowed (``None``: it can): its command and arguments or its URL (its query's values and
        user info shown as ``***``) and header names, its working folder and environment.

        What the person cannot read whole is not allowable: arguments that are not a list (a
        dict's keys ran, unshown), a word with control or formatting characters (an escape
        sequence can hide text in a terminal), a command or folder the host's generic masking
        changes (a rule that drops a URL's user info hid code), a variable that changes what
        runs (:data:`_CODE_ENV`) whose value is masked, and a configuration of more than
        :data:`SHOWN_MAX` characters. The host's known secrets (another server's environment
        values) are masked where they appear, which does not make a configuration unreadable."""
        redact, generic = self.host.redactor.text, _GENERIC.text
        unreadable = None
        if config.get("url"):
            what = f"the URL {shown_url(str(config.get('url')))}"
            headers = config.get("headers")
            if isinstance(headers, dict) and headers:
                what += " with the headers " + ", ".join(_word(str(k)) for k in headers)  # values: secrets
        else:
            args = config.get("args")
            if args is not None and not isinstance(args, list):
                unreadable = "its args are not a list"
            words = [config.get("command"), *(args if isinstance(args, list) else ())]
            what = "`" + " ".join(_word(str(a)) for a in words) + "`"
        if config.get("cwd"):
            what += f" in the folder {_word(str(config.get('cwd')))}"
        if printable(what) != what:
            unreadable = unreadable or "it holds control or formatting characters"
        if generic(what) != what:
            unreadable = (
                unreadable or "what it runs holds text the host masks (a secret, or what looks like one)"
            )
        what = redact(what)
        env = config.get("env")
        if isinstance(env, dict) and env:
            shown_env = []
            for name, value in env.items():
                pair = f"{_word(str(name))}={_word(str(value))}"
                if printable(pair) != pair:
                    unreadable = unreadable or "its environment holds control or formatting characters"
                if redact(pair) != pair:
                    pair = f"{_word(redact(str(name)))}=***"
                    if _CODE_ENV.fullmatch(str(name).upper()) or redact(str(name)) != str(name):
                        unreadable = unreadable or (
                            f"its environment's {redact(str(name))}, which changes what runs, is masked"
                        )
                shown_env.append(pair)
            what += " with the environment " + " ".join(shown_env)
        if len(what) > SHOWN_MAX:
            what, unreadable = f"a configuration of {len(what):,} characters", "it is too long to show"
        return what, unreadable

    def allow(self, session: str, cid: str, shown: str | None = None) -> dict:
        """Record the local decision to run the MCP server ``cid`` of ``session`` and start it.

        The decision covers the configuration the person was shown (command, arguments,
        environment, URL): ``shown`` is its fingerprint as the tree showed it, else the one the
        server's last "not allowed" notice named. A configuration the client published since is
        refused (``PermissionError``, saying what it would run now): the person looks again. If
        the client publishes another one later, it must be allowed again. Returns the record
        (also kept in :attr:`decisions`).
        """
        config = self.customizations.mcp_config(session, cid)
        if config is None:
            raise LookupError(f"no MCP server {cid!r} in session {session}")
        key = _key(config)
        rt = self.runtimes.get((session, cid))
        name, now = _short(config.get("server") or cid), self._fingerprint(key)
        what, unreadable = self._what_runs(config)
        if unreadable:
            raise PermissionError(
                f"the MCP server {name} cannot be allowed: {unreadable}, and the host runs only what "
                "the person can read"
            )
        if shown is None:
            raise ValueError(
                f"say which configuration of the MCP server {name} you allow: it would run {what}; if "
                f"that is what you allow, lab.allow_mcp({cid!r}, {now!r})"
            )
        if shown != now:
            raise PermissionError(
                f"the MCP server {name} changed since it was shown to you: it would now run {what} "
                f"(configuration {now}); look at it again, then allow it again"
            )
        self.allowed[(session, cid)] = key
        record = {
            "session": session,
            "id": cid,
            "server": config.get("server"),
            "clientId": config.get("clientId"),
            "command": config.get("command") or config.get("url"),
            "configuration": now,
            "at": self.host.store.clock_ms(),
        }
        self.decisions.append(record)
        log.info(
            "the notebook allowed MCP server %s of client %s", config.get("server"), config.get("clientId")
        )
        if rt is not None:
            rt.wanted, rt.failed = True, False
        self._schedule(session)
        return record

    async def _serve(self, rt: _Runtime, gen: int, previous: asyncio.Task | None) -> None:
        """Run one connection to the server until it is stopped or fails."""
        if MCPError is None:
            await asyncio.to_thread(_load_sdk)  # a large import: the loop keeps running meanwhile
        if previous is not None and not previous.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(previous), timeout=8)
        errlog = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below
        closed: dict[str, Any] = {"eof": False, "garbage": None}
        reported = False

        def fail(message: str, error_type: str = "McpServerError") -> None:
            nonlocal reported
            if reported or rt.stopping or gen != rt.gen:
                return
            reported = True
            rt.dead = True
            tail = _tail(errlog)
            last = next((line for line in reversed(tail.splitlines()) if line.strip()), "")
            if last:
                message = f"{message.rstrip('.')} (stderr: {one_line(last, 200)})."
            rt.failed = True
            rt.state = "error"
            self._drop_tools(rt)
            for _res, fut in rt.call_waiters:
                if not fut.done():
                    fut.set_result(None)
            self._set_state(rt, gen, self._error_state(message, tail, error_type))

        try:
            async with contextlib.AsyncExitStack() as stack:
                try:
                    self._check_startable(rt)
                    read, write = await self._open_transport(rt, stack, errlog)
                    relay_send, relay_recv = anyio.create_memory_object_stream(0)
                    tg = await stack.enter_async_context(anyio.create_task_group())
                    stack.callback(tg.cancel_scope.cancel)
                    tg.start_soon(self._relay, read, relay_send, rt, closed)

                    async def on_message(message: Any) -> None:
                        if isinstance(message, mt.ToolListChangedNotification):
                            rt.tools_stale = True
                            rt.wake.set()

                    session = await stack.enter_async_context(
                        ClientSession(
                            relay_recv,
                            write,
                            client_info=mt.Implementation(name="ahp_lab", version="0.1.0"),
                            message_handler=on_message,
                        )
                    )
                    tools = await self._connect(rt, gen, session, closed)
                    if tools is None or _over(rt, gen):
                        return  # stopped while waiting for authorization, or a newer start took over
                    rt.client = session
                    rt.tools = tools
                    rt.state = "ready"
                    self._set_state(rt, gen, {"kind": "ready"})
                    self.host._publish_server_tools(rt.session)
                    while not _over(rt, gen) and not closed["eof"]:
                        rt.wake.clear()
                        await rt.wake.wait()
                        if rt.tools_stale and not _over(rt, gen) and not closed["eof"]:
                            rt.tools_stale = False  # a changed tool list: list again, republish
                            rt.tools = await self._list_tools(rt, session)
                            self.host._publish_server_tools(rt.session)
                    if not _over(rt, gen):
                        raise _Failure(self._eof_reason(rt, closed, "while it was running"))
                except _Failure as exc:
                    fail(str(exc), exc.error_type)
                except TimeoutError:
                    fail(
                        f"The MCP server {rt.name} did not answer its handshake within {self._start_timeout(rt):g} s.",
                        "McpServerTimeout",
                    )
                except (asyncio.CancelledError, anyio.get_cancelled_exc_class()):
                    raise
                except BaseException as raw:  # noqa: BLE001 - every failure becomes an error state
                    exc = _unwrap(raw)
                    if isinstance(exc, _Failure):
                        fail(str(exc), exc.error_type)
                    elif isinstance(exc, TimeoutError):
                        fail(
                            f"The MCP server {rt.name} did not answer its handshake within {self._start_timeout(rt):g} s.",
                            "McpServerTimeout",
                        )
                    elif isinstance(exc, MCPError) and (closed["eof"] or closed["garbage"]):
                        fail(self._eof_reason(rt, closed, "before completing its handshake"))
                    elif isinstance(exc, OSError):
                        # its program's name (not its path, nor its arguments, which may hold a token)
                        program = os.path.basename(str(rt.config.get("command") or ""))[:120]
                        why = f"{exc.strerror or exc}" + (f" ({program})" if program else "")
                        fail(f"The MCP server {rt.name} could not be started: {why}.", "McpServerSpawnFailed")
                    else:
                        fail(f"The MCP server {rt.name} failed: {one_line(exc) or type(exc).__name__}.")
        except (asyncio.CancelledError, anyio.get_cancelled_exc_class()):
            raise
        except BaseException as raw:  # noqa: BLE001 - cleanup trouble after the fact
            log.debug("MCP server %s cleanup: %r", rt.name, _unwrap(raw))
            fail(f"The MCP server {rt.name} failed: {one_line(_unwrap(raw))}.")
        finally:
            if gen == rt.gen:
                self._drop_tools(rt)
            with contextlib.suppress(Exception):
                errlog.close()

    @staticmethod
    def _eof_reason(rt: _Runtime, closed: dict, when: str) -> str:
        if closed["garbage"]:
            return f"The MCP server {rt.name} wrote output that is not MCP JSON-RPC {when} ({one_line(closed['garbage'], 160)})."
        return f"The MCP server {rt.name} exited {when}."

    async def _open_transport(self, rt: _Runtime, stack: contextlib.AsyncExitStack, errlog: Any) -> tuple:
        config = rt.config
        if config.get("url"):
            from mcp.client.streamable_http import streamable_http_client

            http = self._http_client(rt)
            await stack.enter_async_context(http)
            return await stack.enter_async_context(
                streamable_http_client(str(config["url"]), http_client=http)
            )
        env = {str(k): str(v) for k, v in (config.get("env") or {}).items()}
        # every value but a path (a plugin passes its own folder) and a setting (see secret_values)
        self.host.redactor.add_env(env)
        if config.get("pluginRoot"):
            env.setdefault("PLUGIN_ROOT", str(config["pluginRoot"]))
        cwd = config.get("cwd") or config.get("pluginRoot") or None
        command = str(config["command"])
        if command in ("python", "python3"):
            command = sys.executable  # a plugin's "python" is the kernel's interpreter
        params = StdioServerParameters(
            command=command,
            args=[str(a) for a in config.get("args") or ()],
            env=env or None,
            cwd=cwd,
        )
        return await stack.enter_async_context(stdio_client(params, errlog=errlog))

    def _http_client(self, rt: _Runtime) -> Any:
        import httpx2

        manager_rt = rt

        class _Bearer(httpx2.Auth):
            def auth_flow(self, request: Any) -> Any:
                if manager_rt.token:
                    request.headers["Authorization"] = f"Bearer {manager_rt.token}"
                yield request

        async def on_response(response: Any) -> None:
            if response.status_code in (401, 403):
                manager_rt.http_challenge = {
                    "status": response.status_code,
                    "header": response.headers.get("www-authenticate", ""),
                }

        headers = {str(k): str(v) for k, v in (rt.config.get("headers") or {}).items()}
        self.host.redactor.add(*headers.values())
        return httpx2.AsyncClient(
            headers=headers or None,
            auth=_Bearer(),
            timeout=httpx2.Timeout(30.0, read=300.0),
            event_hooks={"response": [on_response]},
        )

    async def _relay(self, read: Any, send: Any, rt: _Runtime, closed: dict) -> None:
        """Forward the transport's messages to the session; notice EOF and garbage."""
        try:
            async with send:
                async for item in read:
                    if isinstance(item, Exception):
                        closed["garbage"] = str(item).splitlines()[0] if str(item) else type(item).__name__
                        return  # closing the session's stream fails whatever waits on the server
                    await send.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            pass
        finally:
            closed["eof"] = True
            rt.wake.set()

    async def _handshake(self, rt: _Runtime, session: ClientSession, closed: dict) -> None:
        try:
            with anyio.fail_after(self._start_timeout(rt)):
                await session.initialize()
        except MCPError as exc:
            auth = await self._http_auth(rt, exc)
            if auth is not None:
                raise AuthAtConnect(auth) from None
            if closed["eof"] or closed["garbage"]:
                raise _Failure(self._eof_reason(rt, closed, "before completing its handshake")) from None
            raise _Failure(
                f"The MCP server {rt.name} refused the handshake: {one_line(exc.message)}."
            ) from None

    async def _connect(
        self, rt: _Runtime, gen: int, session: ClientSession, closed: dict
    ) -> list[_Tool] | None:
        """Handshake and list the tools, waiting for ``authenticate`` whenever the server asks."""
        initialized = False
        while True:
            try:
                if not initialized:
                    await self._handshake(rt, session, closed)
                    initialized = True
                return await self._list_tools(rt, session)
            except (MCPError, AuthAtConnect) as exc:
                auth = exc.auth if isinstance(exc, AuthAtConnect) else await self._http_auth(rt, exc)
                if auth is None:
                    if closed["eof"] or closed["garbage"]:
                        raise _Failure(self._eof_reason(rt, closed, "while listing its tools")) from None
                    raise _Failure(
                        f"The MCP server {rt.name} could not list its tools: {one_line(exc)}."
                    ) from None
                refused = self._claims(rt, auth)
                if refused:
                    raise _Failure(
                        f"The MCP server {rt.name} was stopped: {refused}; the host never passes one server's tokens to another."
                    ) from None
                rt.auth = auth
                rt.auth_mid_turn = False
                rt.state = "authRequired"
                rt.token = None if auth.get("reason") != "insufficientScope" else rt.token
                self._set_state(rt, gen, {"kind": "authRequired", **auth})
                while rt.auth is not None and not _over(rt, gen) and not closed["eof"]:
                    rt.wake.clear()
                    await rt.wake.wait()
                if _over(rt, gen):
                    return None
                if closed["eof"]:
                    raise _Failure(self._eof_reason(rt, closed, "while waiting for authorization")) from None
                rt.state = "starting"
                self._set_state(rt, gen, {"kind": "starting"})

    async def _list_tools(self, rt: _Runtime, session: ClientSession) -> list[_Tool]:
        listed: list = []
        cursor = None
        for _page in range(50):
            params = mt.PaginatedRequestParams(cursor=cursor, _meta=self._meta(rt))
            with anyio.fail_after(self._start_timeout(rt)):
                result = await session.list_tools(params=params)
            listed.extend(result.tools)
            cursor = result.next_cursor
            if not cursor:
                break
        return self._tools(rt, listed)

    def _start_timeout(self, rt: _Runtime) -> float:
        """Seconds a server has to answer its handshake (``startTimeout`` in its config overrides)."""
        value = rt.config.get("startTimeout")
        return float(value) if isinstance(value, (int, float)) and value > 0 else self.start_timeout

    def _meta(self, rt: _Runtime) -> dict | None:
        return {TOKEN_META_KEY: f"Bearer {rt.token}"} if rt.token else None


def _tail(handle: Any) -> str:
    try:
        handle.flush()
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(0, size - _STDERR_TAIL))
        return handle.read().decode("utf-8", "replace").strip()
    except (OSError, ValueError):
        return ""
