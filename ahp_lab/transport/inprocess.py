"""An in-process transport pair: the same JSON texts a WebSocket would carry, delivered in order
through the running event loop (``loop.call_soon``), never synchronously re-entrant."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

__all__ = ["InProcessTransport", "pipe"]


def _loop() -> asyncio.AbstractEventLoop:
    """The running loop, or (from synchronous code between runs) the thread's current loop."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.get_event_loop_policy().get_event_loop()


class InProcessTransport:
    def __init__(self, name: str) -> None:
        self.name = name
        self.peer: InProcessTransport | None = None
        self._receiver: Callable[[str], None] | None = None
        self._on_close: Callable[[], None] | None = None
        self._backlog: list[str] = []
        self.closed = False
        self.bytes_sent = 0
        self._held: deque[str] = deque()  # arrived while reading is paused, delivered in order later
        self._paused_until = 0.0

    def set_receiver(self, receiver: Callable[[str], None], on_close: Callable[[], None]) -> None:
        self._receiver = receiver
        self._on_close = on_close
        backlog, self._backlog = self._backlog, []
        for text in backlog:
            receiver(text)

    def send(self, text: str, *, history: bool = False) -> None:
        if self.closed or self.peer is None or self.peer.closed:
            raise ConnectionError(f"{self.name}: transport closed")
        self.bytes_sent += len(text)
        _loop().call_soon(self.peer._deliver, text)

    def _deliver(self, text: str) -> None:
        if self.closed:
            return
        if self._receiver is None:
            self._backlog.append(text)
        elif self._held or _loop().time() < self._paused_until:
            self._held.append(text)
        else:
            self._receiver(text)

    async def alive(self, timeout: float) -> bool:
        """An in-process peer cannot vanish unnoticed: alive while neither end has closed."""
        return not self.closed and self.peer is not None and not self.peer.closed

    def pause_reading(self, seconds: float) -> None:
        """Deliver nothing more for ``seconds``; what arrives meanwhile is delivered after, in order."""
        loop = _loop()
        until = loop.time() + seconds
        if until > self._paused_until:
            self._paused_until = until
            loop.call_later(seconds, self._resume)

    def _resume(self) -> None:
        loop = _loop()
        while self._held and not self.closed:
            if (wait := self._paused_until - loop.time()) > 0:  # paused again, or woken early
                loop.call_later(wait, self._resume)
                return
            self._receiver(self._held.popleft())  # type: ignore[misc]

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        peer = self.peer
        if self._on_close:
            self._on_close()
        if peer is not None and not peer.closed:
            try:
                asyncio.get_running_loop().call_soon(peer.close)
            except RuntimeError:
                peer.close()


def pipe(a: str = "client", b: str = "host") -> tuple[InProcessTransport, InProcessTransport]:
    """Two connected transports."""
    left, right = InProcessTransport(a), InProcessTransport(b)
    left.peer, right.peer = right, left
    return left, right
