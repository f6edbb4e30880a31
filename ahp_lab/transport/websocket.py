"""AHP over WebSocket, with the ``websockets`` library: the transport both ends use, and the
client side.

One JSON-RPC 2.0 message travels per text frame (overview §2). :class:`WebSocketTransport` is one
socket as a transport; :func:`connect_websocket` opens the client side, and
:class:`~.websocket_server.WebSocketServer` (its own module: authentication, origins, binding and
the bound on sockets) hands each socket it accepts to the host as one.

* **Bounds.** Incoming frames above ``max_frame_bytes`` close the socket (code 1009, by
  ``websockets``). Outgoing messages wait in a bounded per-connection send buffer; a client that
  falls more than ``max_send_buffer_bytes`` behind is disconnected (code 1008) with a reason,
  and the host stops sending to it at once, so a stalled reader never slows the others. It can
  reconnect and replay. What a server holds for all its peers together is bounded too
  (:class:`UnsentPool`).
* **Quiet logs.** Tokens, URLs with their query and message bodies are never logged: the
  library's frame-level debug logging is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl as ssl_module
import time
from collections import deque
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI
from websockets.protocol import State

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "FRAME_MARGIN_BYTES",
    "CLIENT_MAX_FRAME_BYTES",
    "DEFAULT_MAX_SEND_BUFFER_BYTES",
    "HandshakeRefused",
    "WebSocketTransport",
    "connect_websocket",
    "redact_url",
]

log = logging.getLogger("ahp_lab.transport.websocket")

#: Largest incoming frame (one JSON-RPC message) accepted, in bytes (a snapshot of a long chat is
#: one message, so a client needs room too).
DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024
#: What a host reads beyond ``max_message_bytes`` in one frame, so that a message just over the limit
#: still gets a JSON-RPC error with its id (a larger frame closes the socket unread, 1009).
FRAME_MARGIN_BYTES = 1024 * 1024
#: The largest frame a client reads from its host. A host sends no action over its message limit,
#: but a snapshot holds a channel's whole state, which many clients' entries together can make
#: larger than one message (two strangers' 9 MB entries made an 18 MB session): at the host's
#: limit, a client that subscribed closed on it (1009) and never reconnected.
CLIENT_MAX_FRAME_BYTES = 256 * 1024 * 1024
#: How far (in characters of queued messages) a client may fall behind before it is disconnected.
DEFAULT_MAX_SEND_BUFFER_BYTES = 16 * 1024 * 1024
#: Seconds between the host's WebSocket pings, and seconds a peer has to answer one. A peer that
#: stops reading cannot answer (the ping waits behind what it has not read), so one large message it
#: never takes (a snapshot) is let go after about their sum, while the send buffer's bound catches a
#: backlog of many messages.
DEFAULT_PING_INTERVAL_S = 20.0
DEFAULT_PING_TIMEOUT_S = 20.0
#: A pending write the peer takes less than this of in ``stall_timeout`` seconds means it
#: stopped reading: the keepalive cannot tell, as its ping waits behind that write.
MIN_PROGRESS_BYTES = 64 * 1024
#: After handling a frame this long, the reader lets the other connections go first: frames
#: already queued by the library are otherwise handled one after another (four frames of an
#: action costing 1.5 s each held every other connection 4.6 s).
LARGE_FRAME = 64 * 1024
#: After a frame this long, the reader pings the peer, so that the library lets it go (see run).
KEPT_FRAME = 1024 * 1024
#: History pages queued for a peer (``send(..., history=True)``) are not a backlog up to this many
#: send buffers: a 48 MiB history goes to a reading client, a peer asking again and again without
#: reading is disconnected like any other that stopped reading.
HISTORY_BUFFERS = 3
#: What the server holds for all its peers together (messages queued, being written, and bytes the
#: sockets have not taken yet). A message of at least ``UNSENT_CHECKED`` characters that would take
#: it past this is not queued: that peer is closed with code 1013 (try again later) and the reason.
#: Each peer is bounded on its own, but one snapshot it never reads is no backlog: 40 strangers
#: subscribing to a 140 MB chat and reading nothing held the host at 15 GB.
DEFAULT_MAX_UNSENT_BYTES_TOTAL = 1024 * 1024 * 1024
UNSENT_CHECKED = 1024 * 1024
#: A peer that has taken nothing of what it holds for this long is let go when another needs room
#: under ``max_unsent_bytes_total``.
DEFAULT_STALLED_S = 5.0

# WebSocket close codes used here (RFC 6455 §7.4.1).
CLOSE_NORMAL = 1000
CLOSE_POLICY = 1008  # the client fell too far behind (send buffer exceeded)
CLOSE_GOING_AWAY = 1001  # the server stops serving
CLOSE_TRY_AGAIN_LATER = 1013  # the server holds too much for its peers to take this one's message


class UnsentPool:
    """The bound on what a server holds for all its peers together (``limit`` bytes): see
    :data:`DEFAULT_MAX_UNSENT_BYTES_TOTAL`. Summed when a large message is about to be queued."""

    def __init__(self, limit: int, transports: set, stalled_s: float = DEFAULT_STALLED_S) -> None:
        self.limit = limit
        self.transports = transports
        self.stalled_s = stalled_s

    def held(self) -> int:
        return sum(t.held for t in self.transports)

    def admits(self, size: int) -> bool:
        """Whether a message of ``size`` characters may be queued: counted twice, as its text and
        the bytes it is encoded to are both held while it is written. When there is no room, the
        peers that have taken nothing of what they hold for ``stalled_s`` are let go first (one
        socket that never read a large snapshot kept every later reader out until the keepalive
        let it go, 20 to 40 s)."""
        if self.held() + 2 * size <= self.limit:
            return True
        now = time.monotonic()
        for transport in list(self.transports):
            if transport.stalled_for(now) > self.stalled_s:
                transport.let_go_stalled(self.stalled_s)
        return self.held() + 2 * size <= self.limit


class _PongBacklog:
    """Lets go of a peer whose socket holds more than ``backlog`` bytes besides the write in
    progress (``writing``, in characters). The library answers each ping with a pong written
    straight to the socket, so a peer that pings and never reads grew us by 35 MB a second, with no
    write of ours pending for the send buffer or the stall watchdog to see. Mixed into the
    library's server and client connections: a host and a client are each other's strangers."""

    backlog = DEFAULT_MAX_SEND_BUFFER_BYTES
    writing = 0  # characters of the write in progress (WebSocketTransport sets it)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)  # type: ignore[misc]
        transport = self.transport  # type: ignore[attr-defined]
        if transport.get_write_buffer_size() > self.backlog + 4 * self.writing and not transport.is_closing():
            log.warning(
                "disconnected the peer %s: over %d MiB of answers to its pings waited in the "
                "socket; it sends and does not read",
                _peer_name(self),
                self.backlog // (1024 * 1024),
            )
            transport.abort()


def _client_connection(backlog: int) -> type[ClientConnection]:
    """The library's client connection, letting a host that pings and never reads go past
    ``backlog`` (:class:`_PongBacklog`)."""

    class BoundedClientConnection(_PongBacklog, ClientConnection):
        pass

    BoundedClientConnection.backlog = backlog
    return BoundedClientConnection


class _NoFrames(logging.Filter):
    """Drop the library's debug records: they print frames (bodies) and handshake details."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.DEBUG


_lib_log = logging.getLogger("ahp_lab.transport.websocket.lib")
_lib_log.addFilter(_NoFrames())


def redact_url(url: str) -> str:
    """The URL without its query and userinfo (where tokens travel): safe to print or log."""
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class HandshakeRefused(ConnectionError):
    """The server refused the WebSocket upgrade (HTTP ``status``: 401 no token, 403 wrong token or origin)."""

    def __init__(self, status: int, reason: str) -> None:
        why = _REFUSALS.get(status, "")
        super().__init__(f"the host refused the connection: HTTP {status} {reason}".rstrip() + why)
        self.status = status


#: What a refused upgrade means, for the person reading it (a first-hour user got "HTTP 403
#: Forbidden" for a wrong token, and nothing more).
_REFUSALS = {
    401: ": no token was given; pass the one the host printed (token=..., or the URL with its ?tkn=)",
    403: ": the token is not this host's (pass the one it printed when it started serving), or this "
    "client's Origin is not allowed",
}


class WebSocketTransport:
    """One WebSocket as an AHP transport: text frames in order, a bounded send buffer out.

    ``send`` never blocks: messages queue until the socket can take them. When more than
    ``max_send_buffer_bytes`` characters wait in more than one message the peer is too slow: the
    transport closes (code 1008, ``close_reason`` says why) and reports the close to its owner
    immediately. (One message larger than that is a frame, bounded by the receiver's frame limit.)
    Pages of history the peer's window lacks (``send(text, history=True)``) do not count: a
    history larger than the buffer takes the socket a while, and is no sign of a stalled peer (one
    that stops reading is let go by the keepalive, its pings waiting behind what it did not read).
    """

    def __init__(
        self,
        ws: Any,
        *,
        name: str = "websocket",
        max_send_buffer_bytes: int = DEFAULT_MAX_SEND_BUFFER_BYTES,
        max_frame_bytes: int | None = None,
        stall_timeout: float = (DEFAULT_PING_INTERVAL_S + DEFAULT_PING_TIMEOUT_S) / 2,
        unsent_pool: UnsentPool | None = None,
        read_gate: asyncio.Lock | None = None,
    ) -> None:
        self.ws = ws
        self.name = name
        self.unsent_pool = unsent_pool  # the server's bound on what all its peers hold
        #: the server's: one frame of all its peers is handled at a time, and the loop's other
        #: callbacks run before the next (80 sockets' 16 MB frames, handled one after the other in
        #: one turn of the loop, held it 8-12 s; 30 sockets' frames just under 64 KiB, 3.8 s)
        self.read_gate = read_gate
        self._progress: tuple[float, int] | None = None  # (when, taken) last seen moving
        self.max_send_buffer_bytes = max_send_buffer_bytes
        self.stall_timeout = stall_timeout
        self.closed = False
        self.close_reason: str | None = None
        self.too_big = False  # closed because the peer sent a message over this side's frame limit
        self.max_frame_bytes = max_frame_bytes  # that limit (the socket's max_size), for messages
        self.unsent: list[str] = []  # messages still queued when the socket died: never sent
        self.remote = _peer_name(ws)
        self.frames_in = self.frames_out = 0
        self.bytes_in = self.bytes_out = 0
        self.peak_buffered = 0
        self._queue: deque[str] = deque()
        self._buffered = 0
        # history pages still queued, as (start, end) offsets in the stream of queued characters
        self._history: deque[tuple[int, int]] = deque()
        self._receiver: Callable[[str], None] | None = None
        self._on_close: Callable[[], None] | None = None
        self._backlog: list[str] = []
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()  # set while nothing is queued
        self._idle.set()
        self._writer: asyncio.Task | None = None
        self._writing = False  # a write is waiting for the socket (the watchdog looks at it)
        self._writes = 0  # writes done
        self._reader: asyncio.Task | None = None
        self._closer: asyncio.Task | None = None
        self._paused_until = 0.0  # loop time before which no further frame is read
        self._read_budget: Any = None  # charged with the time each frame read takes (charge_reads_to)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<WebSocketTransport {self.name} {self.remote} {state}>"

    # -- Transport interface ----------------------------------------------------------------------

    def set_receiver(self, receiver: Callable[[str], None], on_close: Callable[[], None]) -> None:
        """Deliver incoming texts to ``receiver``; call ``on_close`` once when the socket ends."""
        self._receiver = receiver
        self._on_close = on_close
        backlog, self._backlog = self._backlog, []
        for text in backlog:
            receiver(text)

    def send(self, text: str, *, history: bool = False) -> None:
        """Queue one message (one text frame); raises ``ConnectionError`` once closed.

        ``history``: a page of history the peer asked for or lacks, not counted as a backlog."""
        if self.closed:
            raise ConnectionError(f"{self.name}: the WebSocket is closed")
        pool = self.unsent_pool
        if pool is not None and len(text) >= UNSENT_CHECKED:
            if not pool.admits(len(text)):
                self._refuse_large(len(text), pool)
                return
            self._progress = (time.monotonic(), self._taken())
        if history:
            start = self.bytes_out + self._buffered
            self._history.append((start, start + len(text)))
        self._queue.append(text)
        self._idle.clear()
        self._buffered += len(text)
        if self._buffered > self.peak_buffered:
            self.peak_buffered = self._buffered
        if self._buffered > self.max_send_buffer_bytes and len(self._queue) > 1 and self._backlog_over():
            self._overflow()  # a backlog, not one large message: the peer has stopped reading
            return
        self._wakeup.set()

    def _backlog_over(self) -> bool:
        """Whether what is queued is over the send buffer's bound, history pages aside up to
        :data:`HISTORY_BUFFERS` times that bound (a peer that asks for history and does not read
        it must not make the host hold any amount)."""
        history = self._history
        sent = self.bytes_out
        while history and history[0][1] <= sent:
            history.popleft()
        pages = sum(end - max(start, sent) for start, end in history)
        pages = min(pages, HISTORY_BUFFERS * self.max_send_buffer_bytes)
        return self._buffered - pages > self.max_send_buffer_bytes

    def close(self, code: int = CLOSE_NORMAL, reason: str = "") -> None:
        """Close the socket (the queued messages are sent first when the peer keeps reading)."""
        if self.closed:
            return
        self._finish(reason or None, lost=False)
        self._start_closing(code, reason, flush=True)

    def abort(self) -> None:
        """Drop the socket at once, without a closing handshake: what a network failure does (to try
        reconnecting). What was still queued is kept in :attr:`unsent`."""
        if not self.closed:
            self._finish("aborted")
        with contextlib.suppress(Exception):
            self.ws.transport.abort()

    async def alive(self, timeout: float) -> bool:
        """Whether the peer answers a WebSocket ping within ``timeout``, or took at least
        ``MIN_PROGRESS_BYTES`` of what it was sent meanwhile. Its WebSocket library answers a ping
        by itself, whatever the application does: only a socket that died without notice (or a peer
        that stopped reading it) stays silent."""
        if self.closed:
            return False
        taken = self.bytes_out - self._unwritten()
        try:
            async with asyncio.timeout(timeout):
                await (await self.ws.ping())
        except ConnectionClosed:
            return False
        except TimeoutError:
            # The ping may wait behind megabytes queued for the peer (a stranger's large broadcast):
            # a peer that went on taking them is on a slow link, not a dead socket.
            return self.bytes_out - self._unwritten() - taken >= MIN_PROGRESS_BYTES
        return True

    def charge_reads_to(self, budget: Any) -> None:
        """Charge ``budget`` (a :class:`~.jsonrpc.RequestBudget`) with the loop's time each frame
        read takes (its parse and checks, and what its handling charged nothing for): a frame of
        16 MB costs some 0.3 s to read before any handler runs. The peer waits for the budget as
        it does for what its messages make this side send."""
        self._read_budget = budget

    def pause_reading(self, seconds: float) -> None:
        """Read no further frame for ``seconds``: the peer's own writes then wait in its socket
        (TCP backpressure), and nothing it sends piles up here."""
        until = asyncio.get_running_loop().time() + seconds
        if until > self._paused_until:
            self._paused_until = until

    # -- running ------------------------------------------------------------------------------------

    @property
    def buffered(self) -> int:
        """Characters queued and not yet handed to the socket."""
        return self._buffered

    def _taken(self) -> int:
        """What the peer's socket has taken of what was handed to it, about."""
        return self.bytes_out - self._unwritten()

    def stalled_for(self, now: float) -> float:
        """Seconds this peer has taken nothing of what it holds (0 while it takes some, or holds
        nothing); looked at when another peer needs room."""
        progress = self._progress
        if progress is None or self.held == 0:
            return 0.0
        taken = self._taken()
        if taken != progress[1]:
            self._progress = (now, taken)
            return 0.0
        return now - progress[0]

    def let_go_stalled(self, seconds: float) -> None:
        """Let go of a peer that took nothing for ``seconds`` while others needed room."""
        self._let_go(
            f"the client took nothing of what the host holds for it in {seconds:g} s while others "
            "needed room: it stopped reading; reconnect to replay"
        )

    @property
    def held(self) -> int:
        """What this peer makes us hold: messages queued, the one being written (its text), and the
        bytes its socket has not taken yet."""
        if self.closed:
            return 0
        return self._buffered + getattr(self.ws, "writing", 0) + self._unwritten()

    def start(self) -> None:
        """Start reading and writing in background tasks (the client side)."""
        if self._reader is None:
            self._reader = asyncio.ensure_future(self.run())

    def _take(self, message: str | bytes) -> None:
        """Hand one frame read to the receiver (or keep it until there is one)."""
        if isinstance(message, bytes):
            # One JSON-RPC message per *text* frame: answer like a malformed message.
            self.send(
                '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,'
                '"message":"binary frames are not accepted: send one JSON-RPC message per text frame"}}'
            )
            return
        self.frames_in += 1
        self.bytes_in += len(message)
        if self._receiver is None:
            self._backlog.append(message)
        else:
            self._receiver(message)

    async def run(self) -> None:
        """Read frames until the socket closes (the server awaits this in its handler)."""
        self._writer = asyncio.ensure_future(self._write_loop())
        try:
            async for message in self.ws:
                if self.closed:
                    break
                size = len(message)
                gate = self.read_gate
                if gate is not None:
                    await gate.acquire()
                try:
                    if self.closed:
                        break
                    budget = self._read_budget
                    if budget is not None:
                        started, charged = time.perf_counter(), budget.seconds
                    self._take(message)
                    if budget is not None:  # (what the handlers charged is not charged twice)
                        spent = time.perf_counter() - started - (budget.seconds - charged)
                        budget.charge_seconds(max(0.0, spent))
                    # not kept while the peer waits to send its next frame: each idle connection
                    # held its last 16 MB frame
                    del message
                    # the loop's other work goes first: what the frame made the host send among
                    # it (a run of frames read at once held each echo back: p99 15 ms at 1,000
                    # actions/s to 10 clients, 4 ms so, for a third less of a flood's rate)
                    if gate is not None or size > LARGE_FRAME:
                        await asyncio.sleep(0)
                finally:
                    if gate is not None:
                        gate.release()
                if size > KEPT_FRAME:
                    # The library keeps a frame's bytes until the peer's next frame: a ping asks for
                    # one now (its pong), and a peer that does not answer is closed by the keepalive
                    # (40 idle connections held 600 MB of their last frames).
                    with contextlib.suppress(ConnectionClosed):
                        await self.ws.ping()
                if (wait := self._paused_until - asyncio.get_running_loop().time()) > 0:
                    with contextlib.suppress(asyncio.TimeoutError):  # a close ends the pause
                        await asyncio.wait_for(self.ws.wait_closed(), wait)
        except ConnectionClosed:
            pass
        finally:
            if not self.closed:
                code, why = self.ws.close_code, self.ws.close_reason
                limit = self.max_frame_bytes
                sent = getattr(getattr(self.ws, "protocol", None), "close_sent", None)  # the frame it refused
                if getattr(sent, "code", None) == 1011 and "ping" in getattr(sent, "reason", ""):
                    self._finish(
                        "the peer did not answer a ping in time: it stopped reading (what it had "
                        "not taken is dropped; it can reconnect and replay)"
                    )
                elif getattr(sent, "code", None) == 1009:
                    self.too_big = True
                    self._finish(
                        "the peer sent a message larger than this side's frame limit"
                        + (f" of {limit:,} bytes" if isinstance(limit, int) else "")
                        + " (code 1009)"
                    )
                else:
                    self._finish(f"closed by the peer (code {code}{': ' + why if why else ''})")
            if self._closer is None:
                self._writer.cancel()
            else:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._closer

    async def _write_loop(self) -> None:
        ws = self.ws
        queue = self._queue
        batch = _batch_writer(ws)
        watchdog = asyncio.ensure_future(self._watch_writes())
        try:
            while True:
                while queue:
                    self._writing = True
                    if batch is not None and len(queue) > 1:
                        texts = self._take_batch()
                        ws.writing = sum(map(len, texts))  # what the socket may hold meanwhile
                        await batch(texts)
                    else:
                        text = queue.popleft()
                        self._buffered -= len(text)
                        self.frames_out += 1
                        self.bytes_out += len(text)
                        ws.writing = len(text)
                        await ws.send(text)
                    ws.writing = 0
                    self._writing = False
                    self._writes += 1
                self._idle.set()
                self._wakeup.clear()
                await self._wakeup.wait()
        except ConnectionClosed:
            if not self.closed:
                self._finish("the connection was lost")
        finally:
            watchdog.cancel()

    async def _watch_writes(self) -> None:
        """Let go of a peer that took less than :data:`MIN_PROGRESS_BYTES` of one pending write in
        ``stall_timeout`` seconds: it stopped reading. (A single large message is no backlog for
        the send buffer, and the keepalive's ping waits behind it.) One look per period for the
        connection, nothing per write."""
        seen = None  # (writes done, bytes the socket still held) when a write was seen pending
        while True:
            await asyncio.sleep(self.stall_timeout)
            if not self._writing:
                seen = None
                continue
            now = (self._writes, self._unwritten())
            if seen is not None and seen[0] == now[0] and seen[1] - now[1] < MIN_PROGRESS_BYTES:
                self._stalled()
                return
            seen = now

    def _unwritten(self) -> int:
        """Bytes handed to the socket and not yet taken by the peer's system."""
        try:
            return self.ws.transport.get_write_buffer_size()
        except Exception:  # no transport any more: nothing waits
            return 0

    def _stalled(self) -> None:
        self._let_go(
            f"the client took under {MIN_PROGRESS_BYTES // 1024} KiB of a message in "
            f"{self.stall_timeout:g} s: it stopped reading; reconnect to replay"
        )

    def _let_go(self, reason: str) -> None:
        """Drop a peer that stopped reading, with ``reason``, without a closing handshake."""
        log.warning("%s: disconnected the peer %s: %s", self.name, self.remote, reason)
        self._finish(reason)
        with contextlib.suppress(Exception):  # it cannot take a closing handshake either
            self.ws.transport.abort()

    def _take_batch(self, limit: int = 256 * 1024) -> list[str]:
        queue = self._queue
        texts: list[str] = []
        size = 0
        while queue and size < limit:
            text = queue.popleft()
            texts.append(text)
            size += len(text)
        self._buffered -= size
        self.frames_out += len(texts)
        self.bytes_out += size
        return texts

    async def wait_closed(self) -> None:
        """Wait until the socket is closed and this transport's tasks have ended."""
        tasks = [t for t in (self._reader, self._closer) if t is not None]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._writer is not None and not self._writer.done():
            self._writer.cancel()
            await asyncio.gather(self._writer, return_exceptions=True)

    # -- closing ------------------------------------------------------------------------------------

    def _refuse_large(self, size: int, pool: UnsentPool) -> None:
        held = pool.held()
        reason = (
            f"the host holds {held / 2**20:,.0f} MB that its peers have not taken yet, and this "
            f"connection's next message of {size / 2**20:,.0f} MB would take it past "
            f"{pool.limit / 2**20:,.0f} MB; try again later"
        )
        log.warning("%s: disconnected the peer %s: %s", self.name, self.remote, reason)
        self._finish(reason, lost=False)
        self._start_closing(
            CLOSE_TRY_AGAIN_LATER, "the host holds too much for its peers; try again later", flush=True
        )

    def _overflow(self) -> None:
        limit = self.max_send_buffer_bytes
        reason = f"send buffer over {limit} bytes: the peer is not reading; reconnect to replay"
        log.warning("%s: disconnected the peer %s: %s", self.name, self.remote, reason)
        self._queue.clear()
        self._buffered = 0
        self._idle.set()
        self._finish(reason)  # (the dropped backlog is not `unsent`: it was for a peer that left)
        self._start_closing(CLOSE_POLICY, reason[:120], flush=False)

    def _finish(self, reason: str | None, *, lost: bool = True) -> None:
        """Mark closed and tell the owner now (it stops sending to us at once)."""
        if self.closed:
            return
        self.closed = True
        self.close_reason = reason
        if lost and self._queue:  # the socket died under us: what never left is known
            self.unsent = list(self._queue)
            self._queue.clear()
            self._buffered = 0
            self._idle.set()
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            try:
                on_close()
            except Exception:
                log.exception("%s: close handler failed", self.name)

    def _start_closing(self, code: int, reason: str, *, flush: bool) -> None:
        if self._closer is not None:
            return
        try:
            self._closer = asyncio.ensure_future(self._close(code, reason, flush))
        except RuntimeError:  # no loop any more: nothing left to close cleanly
            with contextlib.suppress(Exception):
                self.ws.transport.abort()

    async def _close(self, code: int, reason: str, flush: bool, timeout: float = 5.0) -> None:
        writer = self._writer
        try:
            if flush and writer is not None and self._queue:
                self._wakeup.set()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._idle.wait(), timeout)
            if writer is not None:
                writer.cancel()
            # A peer that never reads cannot complete the closing handshake: abort after a while.
            await asyncio.wait_for(self.ws.close(code, reason), timeout)
        except (TimeoutError, Exception):
            with contextlib.suppress(Exception):
                self.ws.transport.abort()


def _batch_writer(ws: Any) -> Callable[[list[str]], Any] | None:
    """Several queued messages in one socket write (one frame each): a broadcast burst to a
    connection costs one system call, not one per message. Uses the ``websockets`` Sans-I/O
    protocol under the connection; ``None`` (send one by one) if this version lacks it."""
    protocol = getattr(ws, "protocol", None)
    transport = getattr(ws, "transport", None)
    drain = getattr(ws, "drain", None)
    if protocol is None or transport is None or drain is None or not hasattr(protocol, "data_to_send"):
        return None

    async def write(texts: list[str]) -> None:
        if protocol.state is not State.OPEN:
            for text in texts:  # raises ConnectionClosed as a single send would
                await ws.send(text)
            return
        for text in texts:
            protocol.send_text(text.encode("utf-8"))
        transport.write(b"".join(protocol.data_to_send()))
        await drain()

    return write


def _peer_name(ws: Any) -> str:
    try:
        host, port = ws.remote_address[:2]
        return f"{host}:{port}"
    except Exception:
        return "?"


async def connect_websocket(
    url: str,
    token: str | None = None,
    *,
    origin: str | None = None,
    ssl: ssl_module.SSLContext | None = None,
    open_timeout: float = 10.0,
    max_frame_bytes: int = CLIENT_MAX_FRAME_BYTES,
    max_send_buffer_bytes: int = DEFAULT_MAX_SEND_BUFFER_BYTES,
) -> WebSocketTransport:
    """Open a WebSocket to an AHP host and return it as a started transport.

    ``token`` travels as ``Authorization: Bearer``; a URL that already carries ``?tkn=`` works
    without it. Raises :class:`HandshakeRefused` when the host refuses the upgrade (401/403) and
    ``OSError`` (a ``ConnectionError`` when something else than a WebSocket server answers) when the
    endpoint cannot be reached.
    """
    shown = redact_url(url)  # the URL may carry the token: errors name it without its query
    if urlsplit(url).scheme not in ("ws", "wss"):
        raise ValueError(f"{shown} is not a WebSocket URL: it must start with ws:// or wss://")
    headers = {"Authorization": f"Bearer {token}"} if token else None
    kwargs: dict[str, Any] = {}
    if ssl is not None:
        kwargs["ssl"] = ssl
    try:
        ws = await ws_connect(
            url,
            additional_headers=headers,
            origin=origin,
            open_timeout=open_timeout,
            max_size=max_frame_bytes,
            compression=None,
            logger=_lib_log,
            user_agent_header=None,
            create_connection=_client_connection(max_send_buffer_bytes),
            **kwargs,
        )
    except InvalidStatus as exc:
        response = exc.response
        raise HandshakeRefused(response.status_code, response.reason_phrase) from None
    except InvalidHandshake as exc:  # not a WebSocket server there (or TLS mismatch)
        raise ConnectionError(f"no AHP WebSocket endpoint at {shown}: {exc}") from None
    except ConnectionRefusedError as exc:
        raise ConnectionRefusedError(
            exc.errno,
            f"nothing answers at {shown} ({exc.strerror or exc}): is the host serving there? "
            "(lab.serve() in its notebook, or ahp-lab serve)",
        ) from None
    except (InvalidURI, ValueError) as exc:  # the library's text quotes the whole URL, token included
        raise ValueError(str(exc).replace(url, shown)) from None
    transport = WebSocketTransport(
        ws, name="client", max_send_buffer_bytes=max_send_buffer_bytes, max_frame_bytes=max_frame_bytes
    )
    transport.start()
    return transport
