"""JSON-RPC 2.0 framing and transports (in-process pair; WebSocket later)."""

from .inprocess import InProcessTransport, pipe
from .jsonrpc import JsonRpcPeer, RpcError, Transport

__all__ = ["JsonRpcPeer", "RpcError", "Transport", "InProcessTransport", "pipe"]
