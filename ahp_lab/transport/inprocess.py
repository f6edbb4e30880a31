"""An in-process transport pair: the same JSON texts a WebSocket would carry, delivered in order
through the running event loop (``loop.call_soon``), never synchronously re-entrant."""

from __future__ import annotations

import asyncio
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

    def set_receiver(self, receiver: Callable[[str], None], on_close: Callable[[], None]) -> None:
        self._receiver = receiver
        self._on_close = on_close
        backlog, self._backlog = self._backlog, []
        for text in backlog:
            receiver(text)

    def send(self, text: str) -> None:
        if self.closed or self.peer is None or self.peer.closed:
            raise ConnectionError(f"{self.name}: transport closed")
        self.bytes_sent += len(text)
        _loop().call_soon(self.peer._deliver, text)

    def _deliver(self, text: str) -> None:
        if self.closed:
            return
        if self._receiver is None:
            self._backlog.append(text)
        else:
            self._receiver(text)

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
