"""JSON-RPC 2.0 framing and transports: an in-process pair and WebSocket (``websockets``)."""

from .inprocess import InProcessTransport, pipe
from .jsonrpc import JsonRpcPeer, RpcError, Transport
from .websocket import HandshakeRefused, WebSocketTransport, connect_websocket
from .websocket_server import WebSocketServer

__all__ = [
    "JsonRpcPeer",
    "RpcError",
    "Transport",
    "InProcessTransport",
    "pipe",
    "HandshakeRefused",
    "WebSocketServer",
    "WebSocketTransport",
    "connect_websocket",
]
