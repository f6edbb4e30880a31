"""The AHP WebSocket server: each authenticated socket becomes a
:class:`~.websocket.WebSocketTransport` handed to the host.

* **Authentication before the upgrade.** The server requires a token, generated when none is
  given. It is accepted as the ``tkn`` query parameter (browsers cannot set headers; editors use
  it too) or as ``Authorization: Bearer <token>``, compared in constant time. A missing token is
  refused with HTTP 401, a wrong one with 403, before any JSON-RPC message is read.
* **Origin.** Checked only when the request carries one (non-browser clients send none) against
  an allow-list (default: pages served from this machine); anything else gets HTTP 403.
* **Binding.** 127.0.0.1 unless another interface is asked for; then a warning says the traffic
  (token included) is unencrypted unless an ``ssl`` context is given.
* **Sockets.** At most ``max_connections`` served at once, and at most ``MAX_OPENING`` in their
  opening handshake (the oldest silent one is let go first).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import logging
import secrets
import ssl as ssl_module
import warnings
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import ServerConnection
from websockets.asyncio.server import serve as ws_serve

from .websocket import (
    CLOSE_GOING_AWAY,
    DEFAULT_MAX_FRAME_BYTES,
    DEFAULT_MAX_SEND_BUFFER_BYTES,
    DEFAULT_MAX_UNSENT_BYTES_TOTAL,
    DEFAULT_PING_INTERVAL_S,
    DEFAULT_PING_TIMEOUT_S,
    UnsentPool,
    WebSocketTransport,
    _lib_log,
    _PongBacklog,
)

__all__ = ["DEFAULT_ALLOWED_ORIGINS", "DEFAULT_MAX_CONNECTIONS", "MAX_OPENING", "WebSocketServer"]

log = logging.getLogger("ahp_lab.transport.websocket")

#: Sockets served at once; past it an upgrade is refused (HTTP 503). A socket sending frames at
#: the 16 MB limit makes the host hold some 65 MB (the frame being read, those read and waiting
#: their turn, their copies): 40 sockets of one token holder held 2.6 GB.
DEFAULT_MAX_CONNECTIONS = 32
#: Sockets in their opening handshake at once (before the token is checked, or sending nothing at
#: all); past it the oldest is let go, so that strangers without the token cannot take all of the
#: process's file descriptors (each is let go after ``OPEN_TIMEOUT_S`` anyway). A client with the
#: token needs its socket kept for the milliseconds its handshake takes: a flood must open this
#: many sockets meanwhile to push it out (at 64, one process on two cores did).
MAX_OPENING = 512  # and a quarter of the process's open files at most
#: The soft limit on open files the server raises the process to (within the hard limit), so that
#: ``MAX_OPENING`` and ``max_connections`` fit beside whatever else the kernel has open.
OPEN_FILES = 65536
OPEN_TIMEOUT_S = 10.0
#: Origins accepted by default: pages served from this machine, any port, http or https.
DEFAULT_ALLOWED_ORIGINS = ("http://localhost", "http://127.0.0.1", "http://[::1]")

# Frames the library may hold read but not yet handled, per connection (high, low water): with
# frames up to max_frame_bytes each, this bounds what a fast sender makes the host buffer.
_SERVER_QUEUE = (4, 1)


def _open_files() -> int:
    """Raise the soft limit on open files towards ``OPEN_FILES`` (never lower it); returns the
    limit the process runs with."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = OPEN_FILES if hard == resource.RLIM_INFINITY else min(OPEN_FILES, hard)
        if soft != resource.RLIM_INFINITY and soft < wanted:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        return OPEN_FILES if soft == resource.RLIM_INFINITY else soft
    except (ImportError, ValueError, OSError):  # not on this system, or not allowed
        return 1024


def _bounded_connections(most: int, backlog: int) -> type[ServerConnection]:
    """The library's server connection, for one server that keeps at most ``most`` sockets in
    their opening handshake: a new one lets the oldest go, the oldest that has sent nothing yet
    first. A client with the token sends its request at once and finishes its handshake in
    milliseconds, so a flood of sockets that never send one does not lock it out. A peer that
    pings and never reads is let go past ``backlog`` (:class:`_PongBacklog`)."""
    opening: dict[ServerConnection, None] = {}  # in arrival order
    silent: dict[ServerConnection, None] = {}  # those of them that have sent nothing

    def opened(connection: ServerConnection) -> None:  # its handshake is over, or it is gone
        opening.pop(connection, None)
        silent.pop(connection, None)

    class BoundedConnection(_PongBacklog, ServerConnection):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            opening[self] = silent[self] = None
            if len(opening) > most:
                oldest = next(iter(silent or opening))
                opened(oldest)
                oldest.transport.abort()

        def data_received(self, data: bytes) -> None:
            silent.pop(self, None)
            super().data_received(data)

        async def handshake(self, *args: Any, **kwargs: Any) -> None:
            try:
                await super().handshake(*args, **kwargs)
            finally:
                opened(self)

        def connection_lost(self, exc: Exception | None) -> None:
            opened(self)
            super().connection_lost(exc)

    BoundedConnection.backlog = backlog
    return BoundedConnection


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _origin_matches(origin: str, allowed: str) -> bool:
    """``allowed`` without a port matches any port of that scheme and host; ``*`` matches all."""
    if allowed == "*":
        return True
    if origin == allowed:
        return True
    try:  # a malformed origin (``http://[zz``) matches nothing
        o, a = urlsplit(origin), urlsplit(allowed)
        if not o.scheme or not o.hostname:
            return False
        o.port  # noqa: B018 - an out-of-range port (``:99999``) raises: no page has it
        schemes = {a.scheme, "https"} if a.scheme == "http" else {a.scheme}
        return o.scheme in schemes and o.hostname == a.hostname and (a.port is None or o.port == a.port)
    except ValueError:
        return False


class WebSocketServer:
    """Serve AHP over WebSocket: each authenticated socket becomes a transport for ``on_connection``.

    ``on_connection(transport)`` is called with every accepted :class:`WebSocketTransport` (the host
    passes its ``attach``). ``token`` is generated when not given and shown once by whoever starts
    the server (``url_with_token``). ``allowed_origins`` lists the ``Origin`` values a browser page
    may connect from (``"*"`` for any); requests without ``Origin`` are not browser pages and are
    judged by their token alone.
    """

    def __init__(
        self,
        on_connection: Callable[[WebSocketTransport], Any],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        allowed_origins: Iterable[str] | None = None,
        ssl: ssl_module.SSLContext | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        max_send_buffer_bytes: int = DEFAULT_MAX_SEND_BUFFER_BYTES,
        ping_interval: float = DEFAULT_PING_INTERVAL_S,
        ping_timeout: float = DEFAULT_PING_TIMEOUT_S,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        max_unsent_bytes_total: int = DEFAULT_MAX_UNSENT_BYTES_TOTAL,
    ) -> None:
        if token is not None and (not isinstance(token, str) or len(token) < 16):
            raise ValueError("a token must be a string of at least 16 characters")
        self.on_connection = on_connection
        self.host = host
        self.port = port
        self._token = token or secrets.token_urlsafe(32)
        self.allowed_origins = tuple(DEFAULT_ALLOWED_ORIGINS if allowed_origins is None else allowed_origins)
        self.ssl = ssl
        self.max_frame_bytes = max_frame_bytes
        self.max_send_buffer_bytes = max_send_buffer_bytes
        self.ping_interval = ping_interval
        self.ping_timeout = ping_timeout
        self.max_connections = max_connections
        self.transports: set[WebSocketTransport] = set()
        self.unsent = UnsentPool(max_unsent_bytes_total, self.transports)
        self._read_gate = asyncio.Lock()  # one frame of all peers handled at a time
        self.refused: dict[int, int] = {}  # HTTP status -> count of refused upgrades
        self.accepted = 0  # upgrades that reached ``on_connection``
        self._server: Any = None

    def __repr__(self) -> str:
        where = self.url if self._server is not None else "not serving"
        return f"<WebSocketServer {where} connections={len(self.transports)}>"

    @property
    def token(self) -> str:
        """The secret a client must present (never logged)."""
        return self._token

    @property
    def url(self) -> str:
        """``ws://host:port/`` without the token (safe to print)."""
        scheme = "wss" if self.ssl is not None else "ws"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}/"

    @property
    def url_with_token(self) -> str:
        """The URL a client connects to, token included: show it once, never log it."""
        return f"{self.url}?tkn={self._token}"

    @property
    def serving(self) -> bool:
        """Whether the server is accepting connections."""
        return self._server is not None

    async def start(self) -> str:
        """Bind and start accepting; returns :attr:`url_with_token`."""
        if self._server is not None:
            return self.url_with_token
        if not _is_loopback(self.host) and self.ssl is None:
            warnings.warn(
                f"serving AHP on {self.host}, which is reachable from other machines, without TLS: "
                "the token and every message travel unencrypted; pass ssl=... or bind 127.0.0.1",
                RuntimeWarning,
                stacklevel=3,
            )
        # a quarter of the descriptors at most: sockets accepted and not yet let go come on top
        opening = max(16, min(MAX_OPENING, _open_files() // 4))
        self._server = await ws_serve(
            self._handle,
            self.host,
            self.port,
            process_request=self._check_request,
            ssl=self.ssl,
            max_size=self.max_frame_bytes,
            max_queue=_SERVER_QUEUE,
            ping_interval=self.ping_interval,
            ping_timeout=self.ping_timeout,
            compression=None,
            logger=_lib_log,
            server_header=None,
            open_timeout=OPEN_TIMEOUT_S,
            create_connection=_bounded_connections(opening, self.max_send_buffer_bytes),
        )
        sock = next(iter(self._server.sockets))
        self.port = sock.getsockname()[1]
        return self.url_with_token

    async def stop(self) -> None:
        """Stop accepting and close every connection (code 1001)."""
        server, self._server = self._server, None
        if server is None:
            return
        for transport in list(self.transports):
            transport.close(CLOSE_GOING_AWAY, "the host stopped serving")
        server.close(close_connections=False)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(server.wait_closed(), 10)

    # -- the opening handshake --------------------------------------------------------------------

    def _refuse(self, connection: Any, status: int, text: str) -> Any:
        self.refused[status] = self.refused.get(status, 0) + 1
        response = connection.respond(status, text + "\n")
        if status == 401:
            response.headers["WWW-Authenticate"] = 'Bearer realm="ahp"'
        return response

    def _check_request(self, connection: Any, request: Any) -> Any:
        for name in ("Origin", "Authorization"):
            if len(request.headers.get_all(name)) > 1:
                return self._refuse(connection, 400, f"the {name} header must appear at most once")
        origin = request.headers.get("Origin")
        if origin is not None and not any(_origin_matches(origin, a) for a in self.allowed_origins):
            return self._refuse(connection, 403, "this Origin is not allowed")
        offered = None
        auth = request.headers.get("Authorization")
        if auth is not None:
            scheme, _, value = auth.partition(" ")
            if scheme.lower() == "bearer":
                offered = value.strip()
        if offered is None:
            values = parse_qs(urlsplit(request.path).query).get("tkn")
            offered = values[0] if values else None
        if not offered:
            return self._refuse(connection, 401, "a token is required: ?tkn=<token> or Authorization: Bearer")
        if not hmac.compare_digest(offered.encode("utf-8"), self._token.encode("utf-8")):
            return self._refuse(connection, 403, "wrong token")
        if len(self.transports) >= self.max_connections:
            return self._refuse(
                connection, 503, f"this host serves at most {self.max_connections} connections at once"
            )
        return None

    async def _handle(self, ws: Any) -> None:
        transport = WebSocketTransport(
            ws,
            name="host",
            max_send_buffer_bytes=self.max_send_buffer_bytes,
            max_frame_bytes=self.max_frame_bytes,
            stall_timeout=(self.ping_interval + self.ping_timeout) / 2,
            unsent_pool=self.unsent,
            read_gate=self._read_gate,
        )
        self.transports.add(transport)
        self.accepted += 1
        try:
            self.on_connection(transport)
        except Exception:
            log.exception("the host refused a WebSocket connection")
            self.transports.discard(transport)
            await ws.close(1011, "the host could not serve this connection")
            return
        try:
            await transport.run()
        finally:
            self.transports.discard(transport)
