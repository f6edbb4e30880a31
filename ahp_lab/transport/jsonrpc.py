"""A JSON-RPC 2.0 peer over any message transport (one JSON text per message).

Both ends of an AHP connection are peers: each may send requests and notifications and answer the
other's requests (the host also sends ``resourceRead`` to clients). Requests are answered in
tasks; notifications are handled synchronously in arrival order, which keeps ``dispatchAction``
and ``action`` envelopes ordered.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ..protocol.jsonrpc import ErrorCode
from ..protocol.jsonvalue import dumps

log = logging.getLogger("ahp_lab.transport")

__all__ = ["RpcError", "JsonRpcPeer", "Transport", "RequestHandler", "NotificationHandler"]


class RpcError(Exception):
    """A JSON-RPC error response (raised by request handlers and by :meth:`JsonRpcPeer.request`)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = int(code)
        self.message = message
        self.data = data

    def to_json(self) -> dict:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            out["data"] = self.data
        return out

    def __str__(self) -> str:
        try:
            name = ErrorCode(self.code).name
        except ValueError:
            name = str(self.code)
        return f"{self.message} ({name})"


class Transport(Protocol):
    """Carries JSON texts in order between two peers."""

    def send(self, text: str) -> None: ...
    def set_receiver(self, receiver: Callable[[str], None], on_close: Callable[[], None]) -> None: ...
    def close(self) -> None: ...


RequestHandler = Callable[[str, dict], Any]  # (method, params) -> result (or awaitable)
NotificationHandler = Callable[[str, dict], None]


class JsonRpcPeer:
    """One end of a JSON-RPC 2.0 connection."""

    def __init__(
        self,
        transport: Transport,
        on_request: RequestHandler | None = None,
        on_notification: NotificationHandler | None = None,
        on_close: Callable[[], None] | None = None,
        name: str = "peer",
    ) -> None:
        self.transport = transport
        self.name = name
        self.on_request = on_request
        self.on_notification = on_notification
        self.on_close = on_close
        self._next_id = 1
        self._pending: dict[int | str, asyncio.Future] = {}
        self._tasks: set[asyncio.Task] = set()
        self.closed = False
        self.sent = 0
        self.received = 0
        transport.set_receiver(self._receive, self._closed)

    # -- sending --------------------------------------------------------------------------------

    def _send(self, message: dict) -> None:
        if self.closed:
            raise ConnectionError(f"{self.name}: the connection is closed")
        self.sent += 1
        self.transport.send(dumps(message, separators=(",", ":")))

    def send_text(self, text: str) -> None:
        """Send an already-encoded message (used to broadcast one encoding to many peers)."""
        if self.closed:
            return
        self.sent += 1
        self.transport.send(text)

    def notify(self, method: str, params: dict | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)

    async def request(self, method: str, params: dict | None = None, *, timeout: float | None = None) -> Any:
        """Send a request and wait for its result; raises :class:`RpcError` on an error response."""
        request_id = self._next_id
        self._next_id += 1
        future = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            self._send(message)
            if timeout is None:
                return await future
            return await asyncio.wait_for(future, timeout)
        finally:
            self._pending.pop(request_id, None)

    # -- receiving ------------------------------------------------------------------------------

    def _receive(self, text: str) -> None:
        self.received += 1
        try:
            message = json.loads(text)
        except ValueError:
            self._send(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": ErrorCode.PARSE_ERROR, "message": "invalid JSON"},
                }
            )
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self._reply_error(None, RpcError(ErrorCode.INVALID_REQUEST, "not a JSON-RPC 2.0 message"))
            return
        method = message.get("method")
        params = message.get("params")
        if params is None:
            params = {}
        if isinstance(method, str):
            if not isinstance(params, dict):
                if "id" in message:
                    self._reply_error(
                        message["id"], RpcError(ErrorCode.INVALID_PARAMS, "params must be an object")
                    )
                return
            if "id" in message:
                self._handle_request(message["id"], method, params)
            else:
                self._handle_notification(method, params)
            return
        if "id" in message and ("result" in message or "error" in message):
            future = self._pending.get(message["id"])
            if future is None or future.done():
                log.debug("%s: response for unknown request %r", self.name, message.get("id"))
                return
            if "error" in message:
                err = message["error"] if isinstance(message["error"], dict) else {}
                future.set_exception(
                    RpcError(
                        err.get("code", ErrorCode.INTERNAL_ERROR),
                        err.get("message", "error"),
                        err.get("data"),
                    )
                )
            else:
                future.set_result(message.get("result"))
            return
        self._reply_error(
            message.get("id"),
            RpcError(ErrorCode.INVALID_REQUEST, "neither a request, a notification nor a response"),
        )

    def _handle_notification(self, method: str, params: dict) -> None:
        if self.on_notification is None:
            return
        try:
            self.on_notification(method, params)
        except Exception:  # a bad notification never kills the connection
            log.exception("%s: notification %s failed", self.name, method)

    def _handle_request(self, request_id: Any, method: str, params: dict) -> None:
        if self.on_request is None:
            self._reply_error(
                request_id, RpcError(ErrorCode.METHOD_NOT_FOUND, f"method {method} is not served here")
            )
            return
        try:
            result = self.on_request(method, params)
        except RpcError as exc:
            self._reply_error(request_id, exc)
            return
        except Exception as exc:
            log.exception("%s: request %s failed", self.name, method)
            self._reply_error(request_id, RpcError(ErrorCode.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"))
            return
        if inspect.isawaitable(result):
            task = asyncio.ensure_future(self._finish(request_id, method, result))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        else:
            self._reply(request_id, result)

    async def _finish(self, request_id: Any, method: str, pending: Awaitable) -> None:
        try:
            result = await pending
        except RpcError as exc:
            self._reply_error(request_id, exc)
        except asyncio.CancelledError:
            self._reply_error(request_id, RpcError(ErrorCode.INTERNAL_ERROR, f"{method} was cancelled"))
            raise
        except Exception as exc:
            log.exception("%s: request %s failed", self.name, method)
            self._reply_error(request_id, RpcError(ErrorCode.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"))
        else:
            self._reply(request_id, result)

    def _reply(self, request_id: Any, result: Any) -> None:
        if not self.closed:
            self._send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def _reply_error(self, request_id: Any, error: RpcError) -> None:
        if not self.closed:
            self._send({"jsonrpc": "2.0", "id": request_id, "error": error.to_json()})

    # -- closing --------------------------------------------------------------------------------

    def _closed(self) -> None:
        if self.closed:
            return
        self.closed = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionError(f"{self.name}: the connection closed"))
        self._pending.clear()
        if self.on_close is not None:
            try:
                self.on_close()
            except Exception:
                log.exception("%s: close handler failed", self.name)

    def close(self) -> None:
        self.transport.close()
