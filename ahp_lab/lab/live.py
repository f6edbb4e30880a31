"""``Lab``: the one facade a notebook needs.

``Lab()`` starts an in-kernel AHP host with the scripted agent, connects this notebook to it as
an AHP client over the in-process JSON-RPC pair, creates a session and subscribes to its default
chat. From there::

    @lab.tool
    async def run_unit_tests(pattern: str = "test_*", *, ctx) -> str: ...

    turn = await lab.send("run the tests")   # never blocks the kernel's event loop
    lab.transitions[-5:]                      # the transition log as a table
    lab.state_at(42)                          # every channel as it was after seq 42
    lab.dispatch({...})                       # any client-dispatchable action
    lab.export("run.jsonl"); Lab.replay("run.jsonl")

``lab.run(...)`` is the synchronous twin of ``send`` for scripts and nbval; it refuses to wait for
a person (a blocked cell cannot receive widget clicks) and says to ``await`` instead.
"""

from __future__ import annotations

import asyncio
import os
import re
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..agents.base import Agent
from ..client import AhpClient
from ..host import ROOT, Host
from ..protocol import ProtocolError
from ..protocol.actions import channel_kind_of_action
from ..protocol.jsonrpc import ErrorCode
from ..protocol.jsonvalue import to_json
from ..store import Store, Transition, wall_clock_ms
from ..tools import Tool
from ..transport.jsonrpc import RpcError
from ..waiting import check_wait_arguments
from .answering import Answering
from .base import LabBase, LabReplay, LabSource
from .checks import cell_action, tool_function
from .lifetime import LabLifetime, weakly
from .sending import LOST, Sending
from .turns import (
    ActionRejected,
    Sent,
    TurnPolicy,
    parse_ms,
    run_sync,
)


class Lab(Sending, Answering, LabBase):
    """An in-kernel AHP host, its scripted agent, one session, and this notebook as a client.

    Customizations: ``plugins=[folder, ...]`` (Open Plugins folders), ``directories=[{"path": ...,
    "contents": "skill", "writable": True}, ...]`` (watched folders) and ``mcp_servers={name:
    {"command": ..., "args": [...]} | {"url": ...}}`` (MCP servers the host runs) fill the
    session's customization tree; ``lab.customizations`` and ``lab.mcp`` are the host extensions
    behind it, ``lab.write_skill(...)`` saves a skill through the protocol.

    Agents: ``agent=`` any backend (``AcpAgent([...])`` runs a real ACP agent, ``docs/acp.md``);
    ``working_directories=[folder, ...]`` become the session's working directories.

    Security (``docs/security.md``): ``roots=[folder, ...]`` are the folders under which other
    clients may name working directories (default: the kernel's working directory);
    ``limits=`` (a :class:`~ahp_lab.protocol.limits.Limits` or a mapping of its fields) bounds
    what any connection, cell or widget can make the host hold. A remote client's MCP server
    runs only after ``lab.allow_mcp(...)``.
    """

    def __init__(
        self,
        *,
        agent: Agent | None = None,
        client_id: str = "notebook",
        display_name: str = "This notebook",
        title: str = "Notebook session",
        clock_ms: Callable[[], int] = wall_clock_ms,
        chunk_size: int = 24,
        pace_s: float = 0.0,
        confirm_tools: str = "auto",
        client_tool_timeout: float = 300.0,
        host: Host | None = None,
        connect: bool = True,
        plugins: list | tuple = (),
        directories: list | tuple = (),
        mcp_servers: dict | None = None,
        roots: list | tuple | None = None,
        limits: Any = None,
        working_directories: list | tuple = (),
    ) -> None:
        plugins, directories = _several("plugins", plugins), _several("directories", directories)
        working_directories = _several("working_directories", working_directories)
        roots = None if roots is None else _several("roots", roots)
        owns_host = host is None
        self.host = host or Host(
            agent,
            clock_ms=clock_ms,
            chunk_size=chunk_size,
            pace_s=pace_s,
            confirm_tools=confirm_tools,
            client_tool_timeout=client_tool_timeout,
            limits=limits,
            roots=roots,
        )
        self.store = self.host.store
        # Customizations (plugins, directories, client plugins), MCP servers and resource* commands.
        self.customizations, self.mcp = _attach_customizations(self.host, plugins, directories, mcp_servers)
        for raw in plugins:
            given = Path(os.path.expanduser(os.fspath(raw)))
            if not given.exists():  # (a directory may not exist yet; a plugin folder must)
                where = (
                    "" if given.is_absolute() else f" (read from the kernel's working folder, {os.getcwd()})"
                )
                warnings.warn(
                    f"Lab(plugins=...): there is no plugin folder at {given.absolute()}{where}; its entry in "
                    "the tree shows the error",
                    stacklevel=2,
                )
        self.client = AhpClient(  # the notebook's own client: the one trusted connection
            self.host.connect(client_id, trusted=True),
            client_id=client_id,
            display_name=display_name,
            clock_ms=clock_ms,
            request_timeout=None,  # its own host, in this process: the host's limits bound its answers
            limits=self.host.limits,
        )
        # the folders this notebook publishes plugins from are the host's to run code from
        client = weakref.ref(self.client)
        self.customizations.code_sources.append(lambda: getattr(client(), "published_folders", {}).values())
        self.session: str | None = None
        self.chat: str | None = None
        self._policies: dict[str, TurnPolicy] = {}
        self._queued: dict[str, Sent] = {}  # queued message id -> what waits for its turn
        self._echoes: dict[int, Transition] = {}  # client seq -> its echo (see Sending._on_transition)
        self._steering_setters: dict[str, str | None] = {}  # chat -> who set its steering message
        self._title = title
        self._working_directories = [Path(d).expanduser().resolve().as_uri() for d in working_directories]
        self._background: set[asyncio.Task] = set()
        self._added_clients: dict[str, AhpClient] = {}  # client id -> the client add_client connected
        # Held weakly, like the views' source: nothing the lab owns keeps the lab alive.
        self.client.on_change(weakly(self._on_client_change))
        self.store.subscribe(weakly(self._on_transition))
        self._lifetime = LabLifetime(self, self.host, owns_host)
        if connect:
            run_sync(self._start())

    @classmethod
    async def open(cls, **options: Any) -> Lab:
        """``await Lab.open(...)``: the same as ``Lab(...)`` from inside a coroutine (no nested loop)."""
        lab = cls(connect=False, **options)
        await lab._start()
        return lab

    async def _start(self) -> None:
        self._lifetime.started()
        await self.client.initialize([ROOT])
        await self._create_session()

    async def _create_session(self) -> None:
        extra = {"workingDirectories": self._working_directories} if self._working_directories else {}
        # createSession's title is an ahp_lab extension: another host gets the protocol's
        # session/titleChanged once the session is ready
        ours = self.client.server_info.get("name") == "ahp_lab"
        if ours:
            extra["title"] = self._title
        self.session = await self.client.create_session(**extra)
        lifetime = getattr(self, "_lifetime", None)  # (a lab attached to another host has none)
        if lifetime is not None:
            lifetime.state["sessions"].add(self.session)
        state = await self.client.wait_for(
            self.session,
            lambda s: s if s and s.get("lifecycle") in ("ready", "creationFailed") else None,
            timeout=30,
        )
        if state.get("lifecycle") != "ready":
            raise RuntimeError(
                f"the session could not be created: {(state.get('creationError') or {}).get('message')}"
            )
        if not ours and self._title and state.get("title") != self._title:
            try:
                await self._verdict(
                    self.session,
                    self.client.dispatch(
                        self.session, {"type": "session/titleChanged", "title": self._title}
                    ),
                )
            except (ActionRejected, ConnectionError, LookupError) as exc:
                warnings.warn(f"the host kept its own session title: {exc}", RuntimeWarning, stacklevel=2)
        self.chat = state["defaultChat"]
        await self.client.subscribe(self.chat)
        # plugin folders and directories are resolved in a worker thread: return once they are
        await self.wait_for(self.session, _folders_resolved, timeout=60)
        # a LoopAgent: its extensions are active and their tools listed (an attached lab has no
        # agent here: its ``agent`` is a NotAvailableRemotely, an AttributeError)
        ready = getattr(getattr(self, "agent", None), "wait_ready", None)
        if ready is not None:
            await ready(self.session)

    def __repr__(self) -> str:
        state = self.session_state or {}
        tools = [t.get("name") for c in state.get("activeClients") or () for t in c.get("tools") or ()]
        return (
            f"<Lab session={self.session} chat={self.chat} agent={self.agent.name} "
            f"transitions={len(self.store.transitions)} client tools={tools}>"
        )

    @property
    def agent(self) -> Agent:
        """The agent behind this lab's session (the scripted agent unless another was given)."""
        return self.host.agent_for(self.session)

    @property
    def model_calls(self) -> list:
        """What the model saw: every request a :class:`~ahp_lab.agents.loop.LoopAgent` sent in this
        session, with its stable-prefix share (``[]`` for agents that call no model)."""
        log = getattr(self.agent, "model_calls", None)
        return log.for_session(self.session) if log is not None else []

    # -- tools ----------------------------------------------------------------------------------

    def tool(self, fn: Callable | None = None, /, **options: Any):
        """Register a client tool (this notebook executes it): ``@lab.tool`` or ``@lab.tool(...)``.

        Options are those of :class:`~ahp_lab.tools.Tool` (``name``, ``title``, ``description``,
        ``input_model``, ``annotations``, ``approval``, ``confirm``, ``timeout``, ``render_call``,
        ``render_result``). Returns once the host lists the tool in the session.
        """

        def register(f: Callable) -> Tool:
            tool_function(f, "lab.tool")
            self._check_open()
            t = f if isinstance(f, Tool) else Tool(f, **options)
            published = self.client.register_tool(t)
            me = self.client.client_id

            def listed(state: Any) -> Any:
                for client in (state or {}).get("activeClients") or ():
                    if client.get("clientId") == me and any(
                        d.get("name") == published for d in client.get("tools") or ()
                    ):
                        return True
                return None

            run_sync(self.wait_for(self.session, listed, timeout=10))
            return t

        return register if fn is None else register(fn)

    def server_tool(self, fn: Callable | None = None, /, **options: Any):
        """Register a server tool (the host executes it): ``@lab.server_tool`` or ``@lab.server_tool(...)``."""

        def register(f: Callable) -> Tool:
            tool_function(f, "lab.server_tool")
            self._check_open()
            t = f if isinstance(f, Tool) else Tool(f, **options)
            self.host.add_server_tool(t)

            def known(state: Any) -> Any:
                return (
                    True
                    if any(d.get("name") == t.name for d in (state or {}).get("serverTools") or ())
                    else None
                )

            # wait until this notebook's client has seen it too (client tool names avoid clashes with it)
            run_sync(self.client.wait_for(self.session, known, timeout=10))
            return t

        return register if fn is None else register(fn)

    async def wait_for(
        self, channel: str, check: Callable[[Any], Any] | None = None, timeout: float | None = 30
    ) -> Any:
        """Wait until ``check(state)`` of ``channel`` in the host returns something truthy, and return it.

        ``channel`` is ``lab.chat``, ``lab.session``, ...: it comes first, as in every ``wait_for``
        (the client's and the host's too).
        ``check`` runs on the host's authoritative state, as plain JSON, after every change of that
        channel. Raises ``TimeoutError`` after ``timeout`` seconds, and ``TypeError`` for arguments
        in the wrong order.
        """
        check_wait_arguments(channel, check)
        return await self.host.wait_for(channel, lambda state: check(to_json(state)) or None, timeout=timeout)

    async def restart_agent(self) -> None:
        """Restart this session's agent backend now (an ACP agent: a fresh process, same mode and config)."""
        await self.host.agent_sessions.restart(self.session)

    @property
    def acp_frames(self) -> list:
        """Every ACP frame of this session (agents that record them, e.g. ``AcpAgent``), oldest
        first: copies with secrets masked, as the views show them (a frame printed in a cell is
        saved with the notebook)."""
        frames = getattr(self.agent, "frames", None)
        if frames is None:
            return []
        return frames.redacted(self.session, self.host.redactor)

    async def cancel(self, chat: str | None = None) -> None:
        """Cancel the active turn of the chat (``chat/turnCancelled``)."""
        chat = chat or self.chat
        await self.adispatch(self._cancel_action(chat), chat)

    def stop(self, chat: str | None = None) -> None:
        """Cancel the active turn of the chat and return at once (the chat view's Stop button)."""
        chat = chat or self.chat
        self.client.dispatch(chat, self._cancel_action(chat))

    def _cancel_action(self, chat: str) -> dict:
        # the optimistic state: a turn this lab just started (its echo not back yet) is cancelled
        active = (self.client.state(chat) or {}).get("activeTurn")
        if not active:
            raise LookupError("there is no active turn to cancel")
        return {
            "type": "chat/turnCancelled",
            "turnId": active["id"],
            "duration": max(0, self.store.clock_ms() - parse_ms(active.get("startedAt"))),
        }

    # -- dispatch -------------------------------------------------------------------------------

    def _route(self, action: Any, channel: str | None) -> str:
        """The channel a cell's action goes to; its checks raise before anything is sent."""
        __tracebackhide__ = True  # IPython shows the caller's cell and the reason
        kind = cell_action(action, stacklevel=4)
        self._check_open()
        if channel is not None:
            return channel
        target = {"root": ROOT, "session": self.session, "chat": self.chat}.get(
            channel_kind_of_action(kind) or ""
        )
        if target is None:
            raise ProtocolError(
                f"say which channel {kind} goes to: lab.dispatch(action, channel=...)",
                field="channel",
                rule="is required for this action",
                subject=kind,
            )
        return target

    async def adispatch(self, action: dict, channel: str | None = None) -> Transition:
        """Dispatch as this notebook's client and wait for the host's verdict.

        Raises :class:`ProtocolError` for malformed input (nothing is sent) and
        :class:`ActionRejected` with the host's reason when the host rejects it (the rejection is
        in the transition log).
        """
        __tracebackhide__ = True  # IPython shows the caller's cell and the reason
        return await self._adispatch(action, self._route(action, channel))

    async def _adispatch(self, action: dict, channel: str) -> Transition:
        return await self._verdict(channel, self.client.dispatch(channel, action))

    async def _verdict(self, channel: str, seq: int) -> Transition:
        """The transition the host recorded for this client's dispatch ``seq``."""

        client = self.client

        def echoed(_state: Any) -> Any:
            # recorded as it was logged: a scan of the newest transitions missed an echo that a
            # fast agent's stream had pushed past them (more than 50 between dispatch and check)
            echo = self._echoes.pop(seq, None)
            if echo is not None:
                return echo
            # never to be echoed: dropped with the connection before the host sequenced it, or
            # its channel gone (disposed, or reported missing when the client resumed)
            if any(e.get("clientSeq") == seq and e.get("channel") == channel for e in client.unconfirmed):
                return "lost"
            return "gone" if channel not in client.channels else None

        transition = await client.wait_for(channel, echoed, timeout=30)
        if transition == "lost":
            raise ConnectionError(LOST.format("action"))
        if transition == "gone":
            raise LookupError(
                f"the host no longer has {channel} (it was disposed, or reported missing when the "
                "client resumed), so the action will never be applied"
                if channel in client.missing
                else f"the client is no longer subscribed to {channel}: the action's verdict will not come"
            )
        if not transition.accepted:
            raise ActionRejected(transition.rejection_reason, transition)
        return transition

    def dispatch(self, action: dict, channel: str | None = None) -> Transition:
        """Synchronous :meth:`adispatch` (the host answers at once; no person is involved)."""
        __tracebackhide__ = True  # IPython shows the caller's cell and the reason
        channel = self._route(action, channel)
        seq = self.client.dispatch(channel, action)  # malformed input fails here, in the caller's frame
        try:
            return run_sync(self._verdict(channel, seq))
        except (ActionRejected, LookupError, ConnectionError) as exc:
            # the host's reason, from the caller's cell: not forty lines of the event loop's frames
            raise exc.with_traceback(None)  # noqa: B904 - the same exception, its reason intact

    # -- clients --------------------------------------------------------------------------------

    async def add_client(
        self, client_id: str, display_name: str | None = None, *, trusted_host: bool = True
    ) -> AhpClient:
        """Connect another client (say, an IDE) and make it active in this session."""
        # The id is this lab's until remove_client (which closes that client's connection): running
        # the cell again replaces the client this lab added under that id, as running Lab() again
        # replaces the lab.
        self._check_client_id(client_id)
        await self._replace_client(client_id)
        client = AhpClient(
            self.host.connect(client_id),
            client_id=client_id,
            display_name=display_name,
            trusted_host=trusted_host,
            clock_ms=self.store.clock_ms,
            limits=self.host.limits,
        )
        self._added_clients[client_id] = client
        try:
            await client.initialize([ROOT])
        except RpcError as exc:
            client.close()
            self._added_clients.pop(client_id, None)
            if exc.code == ErrorCode.ALREADY_EXISTS:  # another connection (not this lab's) holds it
                raise RpcError(  # noqa: B904 - the host's reason, without the client's frames
                    exc.code,
                    f"client id {client_id!r} is held by another live connection (not one this lab "
                    "added): pick another id",
                ) from None
            raise
        return await self._make_active(client)

    def _check_client_id(self, client_id: Any) -> None:
        if not isinstance(client_id, str) or not client_id:
            raise TypeError(f"add_client(client_id): a non-empty string, not {client_id!r}")
        if client_id == self.client.client_id:
            raise ValueError(
                f"{client_id!r} is this notebook's own client id (lab.client): pick another id for "
                "the other client"
            )

    async def _replace_client(self, client_id: str) -> None:
        """A client this lab added under ``client_id`` before (its cell ran again, or it was
        removed) leaves the session and closes before the id is taken again: a second
        ``add_client("ide")`` was refused, even after ``remove_client("ide")``."""
        old = self._added_clients.get(client_id)
        if old is None:
            return
        if self.session is not None and not self.closed:
            self._remove_client(client_id, "was replaced: add_client ran again")
        self._added_clients.pop(client_id, None)
        await old.aclose()

    async def _make_active(self, client: AhpClient) -> AhpClient:
        """Subscribe another client to this session and its chat and wait until it is listed."""
        await client.subscribe(self.session)
        await client.subscribe(self.chat)
        client.sessions.add(self.session)
        client.publish(self.session)
        # wait for the host (not the new client's optimistic view) to list the client
        await self.wait_for(
            self.session,
            lambda s: any(c.get("clientId") == client.client_id for c in s.get("activeClients") or ()),
            timeout=10,
        )
        return client

    def publish_plugin(
        self,
        name: str,
        files: dict[str, str] | None = None,
        *,
        folder: str | Path | None = None,
        timeout: float = 10,
    ) -> dict:
        """Publish a plugin from this notebook's client and wait until the host has resolved it.

        Give ``files`` (path inside the plugin → text) for a plugin made up in memory, or
        ``folder`` to publish a folder from disk. The host reads the files from this client over
        the protocol and shows the plugin at the top of the tree with ``clientId`` set. Returns the
        resolved container as the host shows it.
        """
        if (files is None) == (folder is None):
            raise TypeError("give either files= or folder=")
        if folder is not None:
            entry = self.client.publish_plugin_folder(folder, name=name)
        else:
            entry = self.client.publish_plugin(name, files)
        me = self.client.client_id

        def resolved(state: Any) -> Any:
            for c in state.get("customizations") or ():
                if (
                    c.get("clientId") == me
                    and c.get("uri") == entry["uri"]
                    and (c.get("load") or {}).get("kind")
                    not in (
                        None,
                        "loading",
                    )
                ):
                    return c
            return None

        return run_sync(self.wait_for(self.session, resolved, timeout=timeout))

    def remove_client(self, client_id: str) -> None:
        """Remove an active client from the session (its running tool calls fail)."""
        self._remove_client(client_id, "was removed from the session")

    def _remove_client(self, client_id: str, why: str) -> None:
        """A client that :meth:`add_client` connected is disconnected too, so that its id can be
        added again (its connection kept the id: a second ``add_client("ide")`` was refused)."""
        self.host.remove_client(self.session, client_id, why)
        added = self._added_clients.pop(client_id, None)
        if added is not None:
            added.close()

    def allow_mcp(self, server: str, shown: str | None = None) -> dict:
        """Let a remote client's MCP server run: a local decision, recorded in ``lab.mcp.decisions``.

        ``server`` is the server's customization id, its name in the tree (``plugin:server``) or
        its bare name; ``shown`` the configuration its notice in the tree names (with what it would
        run), which the tree's "Allow" gives: the decision covers that configuration only, one the
        client published since is refused with what it would run now, and without ``shown`` the
        error says what it would run and the call that allows that. If the client publishes a
        different one later, it must be allowed again. Returns the decision record.
        """
        matches = []
        for entry in (self.session_state or {}).get("customizations") or ():
            for child in entry.get("children") or () if entry.get("clientId") else ():
                name = str(child.get("name") or "")
                if child.get("type") == "mcpServer" and server in (
                    child.get("id"),
                    name,
                    name.split(":")[-1],
                ):
                    matches.append(child)
        if not matches:
            raise LookupError(f"no MCP server {server!r} published by a client in this session")
        if len(matches) > 1:
            ids = ", ".join(str(c.get("id")) for c in matches)
            raise LookupError(f"{server!r} names several MCP servers ({ids}); pass the id")
        return self.mcp.allow(self.session, matches[0]["id"], shown)

    def authenticate(self, resource: str, token: str) -> None:
        """Send the AHP ``authenticate`` command for a protected resource (does not wait)."""
        task = asyncio.ensure_future(
            self.client.request("authenticate", {"resource": resource, "token": token})
        )
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- customizations -------------------------------------------------------------------------

    def write_skill(self, name: str, description: str, body: str, **options: Any) -> dict:
        """Synchronous :meth:`awrite_skill` (no person is involved, so it is safe in a cell)."""
        return run_sync(self.awrite_skill(name, description, body, **options))

    async def awrite_skill(
        self,
        name: str,
        description: str,
        body: str,
        *,
        directory: str | None = None,
        create_only: bool = False,
        timeout: float = 10.0,
    ) -> dict:
        """Write ``<writable skills dir>/<name>/SKILL.md`` through the protocol and wait for the skill.

        The notebook's client sends ``resourceMkdir`` and ``resourceWrite`` to the host (writes are
        allowed only under ``writable`` directory customizations), then waits until the watched
        directory re-publishes itself with the skill in its ``children``; returns that child.
        ``directory`` picks the directory customization by id, name or URI (default: the first
        writable one holding skills).
        """
        import yaml

        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", name or ""):
            raise ValueError(f"{name!r} is not a usable skill name (letters, digits, '.', '_' and '-')")
        state = self.client.state(self.session) or {}
        target = None
        for entry in state.get("customizations") or ():
            if (
                entry.get("type") != "directory"
                or not entry.get("writable")
                or entry.get("contents") != "skill"
            ):
                continue
            if directory is None or directory in (entry.get("id"), entry.get("name"), entry.get("uri")):
                target = entry
                break
        if target is None:
            raise LookupError(
                "no writable skills directory in this session; pass "
                "Lab(directories=[{'path': ..., 'contents': 'skill', 'writable': True}])"
            )
        front = yaml.safe_dump(
            {"name": name, "description": description}, sort_keys=False, allow_unicode=True
        )
        text = f"---\n{front}---\n\n{body.rstrip()}\n"
        folder = f"{target['uri'].rstrip('/')}/{name}"
        await self.client.request("resourceMkdir", {"uri": folder})
        await self.client.request(
            "resourceWrite",
            {
                "uri": f"{folder}/SKILL.md",
                "data": text,
                "encoding": "utf-8",
                "contentType": "text/markdown",
                "createOnly": create_only,
            },
        )

        def appeared(s: Any) -> Any:
            for entry in (s or {}).get("customizations") or ():
                if entry.get("id") != target["id"]:
                    continue
                for child in entry.get("children") or ():
                    if (
                        child.get("type") == "skill"
                        and child.get("name") == name
                        and (child.get("description") or "") == (description.strip() or "")
                    ):
                        return child
            return None

        return await self.client.wait_for(self.session, appeared, timeout=timeout)

    @property
    def closed(self) -> bool:
        """Whether the lab is closed (:meth:`aclose`, :meth:`close`, or its cell ran again)."""
        return self._lifetime.closed

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("this lab is closed and its MCP servers are stopped: make a new Lab()")

    async def aclose(self) -> None:
        """Close the lab: stop its MCP servers, watchers and agent processes, and wait until they exit.

        Afterwards :attr:`closed` is true, its views say so and send nothing, and sending or
        dispatching raises ``RuntimeError``, as does awaiting a message still queued (it stays in the
        chat's queue); reading its state and log still works. A lab that
        is garbage-collected, replaced by a new run of its cell, or alive when the kernel shuts
        down is closed the same way (see :mod:`ahp_lab.lab.lifetime`). A served lab stops serving.
        """
        await self.astop_serving()
        self._unqueue()
        await self._lifetime.aclose()
        self._wake_waits()

    def close(self) -> None:
        """Close the lab without waiting: like :meth:`aclose`, its processes stop in the background."""
        self._unqueue()
        self._lifetime.close()
        self._wake_waits()

    @property
    def _queued_when_closed(self) -> str:
        if self._lifetime.state["owner"]:
            return "the message stays in the chat's queue"
        return "the message was taken out of the chat's queue (the host is another lab's)"

    def _unqueue(self) -> None:
        """A lab closing on another lab's host takes its queued messages out of the queue: the host
        goes on, and would run them without what this lab sent with them (a script, answers)."""
        if self._lifetime.state["owner"] or self.closed:
            return
        for sent in list(self._queued.values()):
            if sent.turn_id is None:
                removal = {"type": "chat/pendingMessageRemoved", "kind": "queued", "id": sent.message_id}
                self.client.dispatch(sent.chat, removal)

    # -- serving over WebSocket (ahp_lab.lab.remote) --------------------------------------------

    server = None  # the WebSocketServer while serving
    frames = None  # FrameLog of every served connection (the raw wire view reads it)

    def serve(self, port: int = 0, **options: Any) -> str:
        """Serve this lab's host to other AHP clients over WebSocket; returns the URL with its token.

        Binds 127.0.0.1 unless ``host=`` names another interface (then pass ``ssl=``). Options:
        ``token``, ``allowed_origins``, ``ssl``, ``max_frame_bytes``, ``max_send_buffer_bytes``,
        ``max_connections``, ``ping_interval``, ``ping_timeout``.
        The token is in the URL returned here, shown once: keep it out of shared outputs.

        In a notebook the kernel's event loop serves clients between cells. A plain script has no
        loop running between its calls, so the server would answer no one while the script waits:
        there, use ``await lab.aserve()`` inside ``asyncio.run`` and keep that coroutine running,
        or ``ahp-lab serve``. This method warns when it is called outside a running loop.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            warnings.warn(
                "lab.serve() outside a running event loop (a plain script): the server answers only "
                "while this script is inside a call of the lab; use `await lab.aserve()` in asyncio, "
                "or `ahp-lab serve`",
                RuntimeWarning,
                stacklevel=2,
            )
        return run_sync(self.aserve(port, **options))

    async def aserve(self, port: int = 0, **options: Any) -> str:
        """:meth:`serve` from inside a coroutine."""
        from .remote import serve_host

        self._check_open()
        if self.server is None:
            self.server, self.frames = serve_host(self.host, port=port, **options)
            # one of the host's extensions, so every way the lab closes (aclose, a cell run again,
            # garbage collection, kernel shutdown) stops serving too
            serving = _ServingExtension(self.server)
            self.host.extensions.append(serving)
            lifetime = getattr(self, "_lifetime", None)
            if lifetime is not None:  # its own, however the host's owner goes on
                lifetime.state["extensions"].append(serving)
        return await self.server.start()

    def wire(self, connection: int | None = None):
        """The raw wire view: every JSON-RPC frame of this lab's WebSocket connections (served, or
        to the remote host), with direction, method, size and time; ``connection`` picks one socket."""
        from ..widgets.wire import WireView

        if self.frames is None:
            raise LookupError("no WebSocket connection yet: call lab.serve() (or use Lab.attach(url))")
        return WireView(self.frames, connection=connection)

    def stop_serving(self) -> None:
        """Stop serving: the WebSocket clients are disconnected (code 1001)."""
        run_sync(self.astop_serving())

    async def astop_serving(self) -> None:
        """:meth:`stop_serving` from inside a coroutine."""
        server, self.server = self.server, None
        if server is not None:
            self.host.extensions[:] = [
                e
                for e in self.host.extensions
                if not (isinstance(e, _ServingExtension) and e.server is server)
            ]
            await server.stop()

    def show(self):
        """The workbench: customization tree, tool-call timeline, input queue, transitions, chat."""
        from ..widgets import Workbench

        return Workbench(LabSource(self))

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.show())

    @classmethod
    def replay(cls, path: str | Path) -> LabReplay:
        """Load an exported log (a host's, or an attached lab's own); the replayed states equal the
        live ones at export time."""
        from .clientlog import ClientLog, is_client_log

        return LabReplay(ClientLog.load(path) if is_client_log(path) else Store.load(path))

    @classmethod
    def attach(cls, url: str, token: str | None = None, **options: Any) -> Lab:
        """The same notebook API and workbench over a remote AHP host (see :class:`~ahp_lab.lab.remote.RemoteLab`)."""
        from .remote import RemoteLab

        return run_sync(RemoteLab.open(url, token, **options))


def _several(name: str, value: Any) -> list:
    """``plugins=``, ``directories=``, ``working_directories=``, ``roots=``: a list of entries, of
    which one alone (a path, or a directory's mapping) is a list of one. A string was read as a
    list of characters: ``Lab(plugins="examples/plugins/ahp-lab-demo")`` made 29 plugins named
    ``e``, ``x``, ``a``, ... and as many warnings."""
    if isinstance(value, (str, os.PathLike, Mapping)):
        return [value]
    if isinstance(value, (bytes, bytearray)) or not isinstance(value, Iterable):
        raise TypeError(f"Lab({name}=...) takes a folder or a list of folders, not {type(value).__name__}")
    return list(value)


def _folders_resolved(session: Any) -> bool:
    """Whether every host container (plugin folder, directory) of a session has been resolved."""
    return all(
        (entry.get("load") or {}).get("kind") != "loading"
        for entry in session.get("customizations") or ()
        if entry.get("type") in ("plugin", "directory") and not entry.get("clientId")
    )


def _attach_customizations(host: Host, plugins: Any, directories: Any, mcp_servers: Any) -> tuple:
    """Give the host its customization, MCP and resource extensions (once per host)."""
    from ..host.customizations import CustomizationManager
    from ..host.mcp import McpManager
    from ..host.resources import ResourceService

    manager = next((e for e in host.extensions if isinstance(e, CustomizationManager)), None)
    if manager is None:
        manager = CustomizationManager(
            host, plugins=list(plugins), directories=list(directories), mcp_servers=mcp_servers
        )
        mcp = McpManager(host, manager)
        host.extensions.extend(
            [
                manager,
                mcp,
                ResourceService(
                    manager.read_roots,
                    manager.write_roots,
                    host.limits,
                    manager.executed,
                    manager.executed_names,
                ),
            ]
        )
    else:
        extra = CustomizationManager(
            host, plugins=list(plugins), directories=list(directories), mcp_servers=mcp_servers
        )
        manager.plugins.extend(extra.plugins)
        manager.directories.extend(extra.directories)
        manager.mcp_servers.update(extra.mcp_servers)
        mcp = next(e for e in host.extensions if isinstance(e, McpManager))
    return manager, mcp


class _ServingExtension:
    """A served lab's WebSocket server as a host extension: closing the host's extensions stops it."""

    def __init__(self, server: Any) -> None:
        self.server = server

    async def aclose(self) -> None:
        await self.server.stop()
