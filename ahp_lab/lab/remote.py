"""The lab on the wire: serving a lab's host over WebSocket, and ``Lab.attach`` to a remote host.

``serve_host`` gives a host a :class:`~ahp_lab.transport.WebSocketServer` whose connections are
recorded in a :class:`~ahp_lab.transport.tap.FrameLog` (the raw wire view reads it).
:class:`RemoteLab` is what ``Lab.attach(url, token=...)`` returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Callable
from functools import partial
from typing import Any

from ..client import AhpClient
from ..host import ROOT
from ..protocol.jsonvalue import to_json
from ..protocol.limits import Limits
from ..transport.tap import FrameLog
from ..transport.websocket import FRAME_MARGIN_BYTES, redact_url
from ..transport.websocket_server import WebSocketServer
from ..waiting import check_wait_arguments
from .clientlog import ClientLog
from .lifetime import weakly
from .live import Lab
from .turns import run_sync

__all__ = ["serve_host", "RemoteLab", "NotAvailableRemotely"]


def redacted_frame(redactor: Any, text: str, cut: bool) -> str:
    """A frame's text with a stranger's secrets masked by ``redactor``: read as JSON when it has
    escapes (``sk-\\u0041…`` is the same key to the host), as text otherwise; a cut frame's end,
    where a key may be cut, as :meth:`~ahp_lab.host.redaction.Redactor.cut` does."""
    if "\\u" in text:
        if not cut:
            try:
                return json.dumps(redactor.redact(json.loads(text)), ensure_ascii=False)
            except (ValueError, RecursionError):
                pass
        # cut, or not JSON: the escapes of token characters read as the characters they stand for
        text = _TOKEN_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
    return redactor.cut(text) if cut else redactor.text(text)


#: A JSON escape of a character tokens are made of (a letter, a digit, ``-``, ``_``, ``.``, ``+``,
#: ``/``, ``=``, ``~``), for a frame that does not parse.
_TOKEN_ESCAPE = re.compile(r"\\u(00(?:[46][1-9a-fA-F]|[57][0-9aA]|3[0-9]|2[bBdDeEfF]|5[fF]|3[dD]|7[eE]))")


def serve_host(
    host: Any, /, *, frames: FrameLog | None = None, **options: Any
) -> tuple[WebSocketServer, FrameLog]:
    """A (not yet started) WebSocket server for ``host`` (options as for ``WebSocketServer``, ``host=``
    naming the interface); every accepted socket is recorded in ``frames``.

    Bounds come from the host's limits: a peer falls at most ``max_send_buffer_bytes`` behind; a
    frame is read up to ``max_message_bytes`` and a margin, so that a message just over the limit
    still gets the host's JSON-RPC error with its id, and a larger frame closes the socket unread
    (1009). (Frames were read up to four times the limit, which counted characters: 64 MiB held
    per connection, 644 MB for six.)
    """
    frames = frames if frames is not None else FrameLog()
    redactor = getattr(host, "redactor", None)
    if frames.redact is None and redactor is not None:
        frames.redact = partial(redacted_frame, redactor)  # the frame log is shown and saved
    limits = getattr(host, "limits", None)
    if limits is not None:
        options.setdefault("max_frame_bytes", limits.max_message_bytes + FRAME_MARGIN_BYTES)
        options.setdefault("max_send_buffer_bytes", limits.max_send_buffer_bytes)
        options.setdefault("max_unsent_bytes_total", limits.max_unsent_bytes_total)

    def accept(transport: Any) -> None:
        host.attach(frames.wrap(transport))

    server = WebSocketServer(accept, **options)
    if redactor is not None:  # the URL it is in is shown once; text quoting it is masked
        redactor.add(server.token)
    return server, frames


class NotAvailableRemotely(AttributeError, RuntimeError):
    """A host-only feature was asked of a lab attached to a remote host.

    An ``AttributeError`` too, so that ``getattr(lab, "host", None)`` and ``hasattr`` tell code
    that can do without the host that there is none."""


def _host_only(what: str, instead: str) -> NotAvailableRemotely:
    return NotAvailableRemotely(
        f"{what} is not available on a lab attached to a remote host (the host runs in another "
        f"process and only speaks AHP to this client); {instead}"
    )


class RemoteLab(Lab):
    """``Lab.attach(url, token=...)``: the notebook API and the workbench over a remote AHP host.

    This notebook is one AHP client of that host (over WebSocket, reconnecting on drops). What a
    client can do works as in a local lab: ``send``/``start``/``run``, ``approve``/``deny``/
    ``answer``, ``dispatch``, ``@lab.tool`` (client tools run here), ``publish_plugin``,
    ``write_skill``, ``show()``. The log and time travel are this client's own
    (:class:`~ahp_lab.lab.clientlog.ClientLog`): the remote host's transitions as this client saw
    them, each with its origin. What needs the host's internals — ``lab.host``, ``lab.agent`` and
    scripts, server tools, ``serve`` — raises :class:`NotAvailableRemotely` saying so.
    """

    def __init__(self) -> None:  # use RemoteLab.open(...) or Lab.attach(...)
        self._url = ""
        self._token: str | None = None
        self.client: AhpClient | None = None
        self.store = ClientLog()
        self.frames = FrameLog()
        self.session: str | None = None
        self.chat: str | None = None
        self._policies: dict = {}
        self._queued: dict = {}  # queued message id -> what waits for its turn (see Sending)
        self._echoes: dict = {}  # client seq -> its echo (see Sending._on_transition)
        self._steering_setters: dict = {}  # chat -> who set its steering message (see Sending)
        self._title = "Notebook session"
        self._working_directories: list[str] = []  # a new session is created without any
        self._background: set[asyncio.Task] = set()
        self._added_clients: dict = {}  # client id -> the client add_client connected (see Lab)
        self._closed = False

    @classmethod
    async def open(  # type: ignore[override]
        cls,
        url: str,
        token: str | None = None,
        *,
        session: str | None = None,
        client_id: str | None = None,
        display_name: str = "This notebook (remote)",
        title: str = "Notebook session",
        reconnect: bool = True,
        max_log_bytes: int | None = Limits.max_log_bytes,
    ) -> RemoteLab:
        """Connect, then join ``session`` (its default chat) or create a new session titled ``title``.

        ``max_log_bytes`` bounds this client's log (:class:`~ahp_lab.lab.clientlog.ClientLog`),
        as the host's own is bounded; ``None`` keeps everything.
        """
        from ..client.connect import connect

        lab = cls()
        lab._url, lab._token, lab._title = url, token, title
        lab.client = await connect(
            url,
            token,
            client_id=client_id,
            display_name=display_name,
            reconnect=reconnect,
            tap=lab.frames,
            subscriptions=[],
        )
        lab.store = ClientLog(
            lab.client.clock_ms, client_id=lab.client.client_id, max_log_bytes=max_log_bytes
        )
        lab.client.on_confirmed(lab.store.record)
        lab.store.subscribe(weakly(lab._on_transition))  # our queued messages becoming turns
        lab.client.on_change(lab._on_client_change)
        lab.client.on_change(
            lambda channel, action: lab.store.forget(channel) if action.get("type") == "$missing" else None
        )
        try:
            await lab.client.subscribe(ROOT)
            if session is None:
                await lab._create_session()
            else:
                await lab._join(session)
        except BaseException:  # no lab to close it later: the connection would resume for ever
            await lab.client.aclose()
            raise
        return lab

    async def _join(self, session: str) -> None:
        client = self.client
        await client.subscribe(session)
        state = await client.wait_for(
            session,
            lambda s: s if s and s.get("lifecycle") in ("ready", "creationFailed") else None,
            timeout=30,
        )
        if state.get("lifecycle") != "ready":
            raise RuntimeError(f"the session {session} is not ready: {state.get('lifecycle')}")
        self.session = session
        self.chat = state["defaultChat"]
        await client.subscribe(self.chat)
        client.sessions.add(session)
        client.publish(session)

    def __repr__(self) -> str:
        state = "connected" if self.client is not None and self.client.connected else "disconnected"
        return (
            f"<RemoteLab {redact_url(self._url)} {state} session={self.session} chat={self.chat} "
            f"transitions seen={len(self.store.transitions)}>"
        )

    # -- what a remote lab cannot do ---------------------------------------------------------------

    @property
    def host(self):  # type: ignore[override]
        """Not available remotely: the host runs in another process."""
        raise _host_only(
            "lab.host", "use lab.transitions, lab.state_at(seq) and lab.export(...) (this client's own log)"
        )

    @property
    def agent(self):  # type: ignore[override]
        """Not available remotely: the agent is behind the remote host."""
        raise _host_only(
            "lab.agent", "send prompts with lab.send(...); scripts (script=...) need a local Lab()"
        )

    @property
    def customizations(self):
        """Not available remotely: the customization manager lives in the host."""
        raise _host_only("lab.customizations", "read the tree from lab.session_state['customizations']")

    @property
    def mcp(self):
        """Not available remotely: MCP servers are the host's."""
        raise _host_only("lab.mcp", "start or stop servers with lab.dispatch(session/mcpServer...Requested)")

    def server_tool(self, fn=None, /, **options: Any):
        """Not available remotely: server tools run inside the host."""
        raise _host_only(
            "lab.server_tool", "register a client tool with @lab.tool (it runs in this notebook)"
        )

    async def aserve(self, port: int = 0, **options: Any) -> str:
        """Not available remotely: only a local Lab() serves its host."""
        raise _host_only("lab.serve", "the remote host is already served at its own URL")

    # -- the same API, through the client ----------------------------------------------------------

    async def wait_for(
        self, channel: str, check: Callable[[Any], Any] | None = None, timeout: float | None = 30
    ) -> Any:
        """Wait until ``check(state)`` of ``channel`` returns something truthy, and return it.

        The channel comes first, as in every ``wait_for``. ``check`` runs on this client's
        *confirmed* state (what the host has sequenced, as far as this client has heard) after every
        change of that channel.
        """
        check_wait_arguments(channel, check)
        client = self.client

        def confirmed(_optimistic: Any) -> Any:
            return check(to_json(client.confirmed(channel))) or None

        return await client.wait_for(channel, confirmed, timeout=timeout)

    async def add_client(
        self, client_id: str, display_name: str | None = None, *, trusted_host: bool = False
    ) -> AhpClient:
        """Connect another client to the same remote host (a second socket) and make it active here."""
        from ..client.connect import connect

        self._check_client_id(client_id)
        # a client added under this id before (its cell ran again, or it was removed) leaves and its
        # socket closes first: the host kept the id for that socket, and refused the id again
        old = self._added_clients.pop(client_id, None)
        if old is not None:
            await self._leave(old)
        client = await connect(
            self._url, self._token, client_id=client_id, display_name=display_name, trusted_host=trusted_host
        )
        self._added_clients[client_id] = client
        return await self._make_active(client)

    def remove_client(self, client_id: str) -> None:
        """Ask the host to remove an active client from the session (``session/activeClientRemoved``)."""
        added = self._added_clients.pop(client_id, None)
        if added is None:
            self.dispatch({"type": "session/activeClientRemoved", "clientId": client_id}, self.session)
        else:  # one add_client connected leaves by itself (only the host's notebook removes others)
            run_sync(self._leave(added))

    async def _leave(self, client: AhpClient) -> None:
        """A client :meth:`add_client` connected leaves the session and its socket closes, so that
        the host frees its id (the socket kept it: the id was refused to the next ``add_client``)."""
        if not client.closed:
            client.dispatch(
                self.session, {"type": "session/activeClientRemoved", "clientId": client.client_id}
            )
            with contextlib.suppress(ConnectionError, TimeoutError):
                await client.settle(timeout=10)
        await client.aclose()

    _deaf_when_closed = True
    _queued_when_closed = "the message stays in the host's queue"

    @property
    def closed(self) -> bool:
        """Whether this lab's connection was closed (:meth:`aclose` or :meth:`close`)."""
        return self._closed

    def close(self) -> None:
        """Close the connection to the remote host without waiting."""
        self._closed = True
        if self.client is not None:
            self.client.close()
            self._wake_waits()

    async def aclose(self) -> None:
        """Close the connection to the remote host and wait until it has shut down."""
        self._closed = True
        if self.client is not None:
            await self.client.aclose()
            self._wake_waits()
