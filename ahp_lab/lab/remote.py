"""The lab on the wire: serving a lab's host over WebSocket, and ``Lab.attach`` to a remote host.

``serve_host`` gives a host a :class:`~ahp_lab.transport.WebSocketServer` whose connections are
recorded in a :class:`~ahp_lab.transport.tap.FrameLog` (the raw wire view reads it).
"""

from __future__ import annotations

from typing import Any

from ..transport.tap import FrameLog
from ..transport.websocket import WebSocketServer

__all__ = ["serve_host"]


def serve_host(
    host: Any, /, *, frames: FrameLog | None = None, **options: Any
) -> tuple[WebSocketServer, FrameLog]:
    """A (not yet started) WebSocket server for ``host`` (options as for ``WebSocketServer``, ``host=``
    naming the interface); every accepted socket is recorded in ``frames``."""
    frames = frames if frames is not None else FrameLog()

    def accept(transport: Any) -> None:
        host.attach(frames.wrap(transport))

    return WebSocketServer(accept, **options), frames
