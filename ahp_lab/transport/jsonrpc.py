"""A JSON-RPC 2.0 peer over any message transport (one JSON text per message).

Both ends of an AHP connection are peers: each may send requests and notifications and answer the
other's requests (the host also sends ``resourceRead`` to clients). Requests are answered in
tasks; notifications are handled synchronously in arrival order, which keeps ``dispatchAction``
and ``action`` envelopes ordered.

Whatever arrives, the peer answers and carries on: a message over the size limit, nested too
deep for the parser, not JSON (``NaN`` and ``Infinity`` included), not JSON-RPC, or with an id
that is neither an integer within ±(2^53 - 1) nor a short string gets a JSON-RPC error (with the
request's id when it can be read, else ``null``). Nothing it sends contains ``NaN`` or
``Infinity``. Every success response carries ``"result"``, ``null`` included.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import json
import logging
import math
import re
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ..protocol.jsonrpc import ErrorCode
from ..protocol.jsonvalue import dumps, utf8_bytes
from ..protocol.limits import (
    ENVELOPE_DEPTH,
    Limits,
    clipped,
    items_exceed,
    nesting_exceeds,
    valid_request_id,
)

log = logging.getLogger("ahp_lab.transport")

__all__ = [
    "RpcError",
    "JsonRpcPeer",
    "PerMinute",
    "RequestBudget",
    "Transport",
    "RequestHandler",
    "NotificationHandler",
]

#: Nesting beyond which a message is refused before it is parsed (well below Python's recursion
#: limit, so ``json.loads`` never recurses too deep). A peer with ``limits`` (the host's) refuses
#: what is deeper than those limits itself, with the field named.
PARSER_DEPTH = 512
#: The same bound for a peer without limits (a client): what it reads it applies, logs and shows
#: through recursive walks (up to four frames a level), so it reads half as deep (at 512, a
#: host's action nested 500 deep made displaying the client's log raise RecursionError).
READ_DEPTH = 256
# The id of a request whose text is too big or too deep to parse: read from the first members.
_LEADING_ID = re.compile(
    r'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,16}|"[^"\\]{0,256}")\s*[,}]'
)


class RequestBudget:
    """How much one peer's requests may make this side send: ``rate`` characters per second, after
    a burst of four seconds' worth. Answers are charged as they are sent; a request handler charges
    what else it sent on the request's behalf (the actions it broadcast), and a notification handler
    what its notification made this side send. While the budget is spent, that peer's next requests
    wait their turn, in order, and after a notification its transport reads nothing more (when it
    can pause: ``pause_reading(seconds)``) until the budget refills; the other peers are not
    slowed.

    A ``shared`` budget (the one of all the host's strangers together) is charged with all its
    members are. While it is spent, a member that has used at least its share of it lately waits
    for it too: each of 80 sockets of one token holder had a budget of its own, and together they
    held the loop for seconds at a time; a client that used little is not held back by them."""

    #: Seconds over which what a budget's holder used lately fades (``used``, by ``e`` each).
    FADE_S = 4.0

    def __init__(self, rate: float, *, shared: RequestBudget | None = None) -> None:
        self.rate = float(rate)
        self.burst = 4 * self.rate
        self._level = self.burst
        self._at = time.monotonic()
        self.shared = shared
        self.members: weakref.WeakSet[RequestBudget] = weakref.WeakSet()  # (a shared one) its members
        self.used = 0.0  # what was charged lately, fading
        #: seconds of the loop charged so far (:meth:`charge_seconds`)
        self.seconds = 0.0
        if shared is not None:
            shared.members.add(self)

    def _refill(self) -> None:
        now = time.monotonic()
        elapsed = now - self._at
        self._level = min(self.burst, self._level + elapsed * self.rate)
        if self.used:
            self.used *= math.exp(-elapsed / self.FADE_S)
        self._at = now

    def charge(self, chars: int) -> None:
        """Spend ``chars`` (the level may go below zero: the next requests then wait longer)."""
        self._refill()
        self._level -= chars
        self.used += chars
        if self.shared is not None:
            self.shared.charge(chars)

    def charge_seconds(self, seconds: float) -> None:
        """Spend ``seconds`` of the loop, a second for a second of ``rate``."""
        self.seconds += seconds
        self.charge(int(seconds * self.rate))

    def delay(self) -> float:
        """Seconds until the budget is no longer spent (0 when a request may be served now)."""
        self._refill()
        own = 0.0 if self._level >= 0 else -self._level / self.rate
        shared = self.shared
        if shared is None or (wait := shared.delay()) <= 0:
            return own
        # the members that used at least an even share of it lately wait for it; a member that
        # used next to nothing lately is no share (30 idle sockets lowered the flooder's share to
        # a 31st, and a client that used a 20th of what it did waited as long)
        for member in shared.members:
            member._refill()
        floor = shared.used / 100
        active = sum(1 for member in shared.members if member.used > floor)
        return max(own, wait) if self.used * max(active, 1) >= shared.used else own

    def release(self) -> None:
        """This budget's holder is gone: it no longer counts among its shared budget's members."""
        if self.shared is not None:
            self.shared.members.discard(self)
            self.shared = None


#: Control characters (terminal escapes among them), line and paragraph separators and the bidi
#: controls in an error the other side sent: none of them may forge or reorder a line it is shown on.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]+")
#: An error message the other side sent is kept up to this many characters.
MAX_ERROR_CHARS = 2000


def _their_message(text: Any) -> str:
    """An error message from the other side as it may be raised, shown and logged: one line,
    without control characters, valid Unicode, cut to ``MAX_ERROR_CHARS``."""
    if not isinstance(text, str):
        return "error"
    return clipped(_CONTROL.sub(" ", text), MAX_ERROR_CHARS)


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

    def send(self, text: str, *, history: bool = False) -> None: ...
    def set_receiver(self, receiver: Callable[[str], None], on_close: Callable[[], None]) -> None: ...
    def close(self) -> None: ...
    async def alive(self, timeout: float) -> bool: ...


RequestHandler = Callable[[str, dict], Any]  # (method, params) -> result (or awaitable)
NotificationHandler = Callable[[str, dict], None]


#: Messages from this many characters on are parsed with the cyclic collector paused.
_LARGE_MESSAGE = 64 * 1024


def _loads(text: str) -> Any:
    """``json.loads``, with the cyclic collector paused for a large text: parsing makes no cycles,
    while the many containers of a frame of small arrays or objects set off collections that read
    the whole heap (5 million ``[]`` parsed in 1.8 s with it, 0.2 s without)."""
    if len(text) < _LARGE_MESSAGE or not gc.isenabled():
        return json.loads(text, parse_constant=_reject_constant)
    gc.disable()
    try:
        return json.loads(text, parse_constant=_reject_constant)
    finally:
        gc.enable()


class PerMinute:
    """Counts events by the minute, for logs that strangers could otherwise fill: :meth:`count`
    says how many came before this one in the current minute (a log keeps the first few)."""

    def __init__(self) -> None:
        self._start = 0.0
        self._count = 0

    def count(self) -> int:
        now = time.monotonic()
        if now - self._start >= 60:
            self._start, self._count = now, 0
        self._count += 1
        return self._count - 1


#: Tracebacks of the other side's failed messages logged per minute, by every peer together: a
#: request that fails the same way each time (a stranger's) would otherwise write a traceback per
#: request (300 of 185 bytes wrote 297 KB of log in 0.1 s).
FAILURES_LOGGED_PER_MINUTE = 20
_failures = PerMinute()


def _log_failure(message: str, *args: Any) -> None:
    """``log.exception(message, *args)``, at most :data:`FAILURES_LOGGED_PER_MINUTE` a minute."""
    count = _failures.count()
    if count < FAILURES_LOGGED_PER_MINUTE:
        log.exception(message, *args)
    elif count == FAILURES_LOGGED_PER_MINUTE:
        log.error("further failed messages this minute are answered but not logged")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _leading_id(text: str) -> Any:
    """The id of a request that cannot be parsed, when it is one of the first members."""
    match = _LEADING_ID.match(text[:400])
    if match is None:
        return None
    try:
        value = json.loads(match.group(1))
    except ValueError:
        return None
    return value if valid_request_id(value) else None


class JsonRpcPeer:
    """One end of a JSON-RPC 2.0 connection.

    ``limits`` (the host's :class:`~ahp_lab.protocol.limits.Limits`) bounds incoming messages:
    their size and the number of the other side's requests still being answered. Nesting beyond
    ``PARSER_DEPTH`` (``READ_DEPTH`` without limits) is refused before parsing; the payload limits
    themselves (depth, strings) are checked by the receiver (the host's connection), which can name
    the field.
    """

    def __init__(
        self,
        transport: Transport,
        on_request: RequestHandler | None = None,
        on_notification: NotificationHandler | None = None,
        on_close: Callable[[], None] | None = None,
        name: str = "peer",
        limits: Limits | None = None,
        budget: RequestBudget | None = None,
        max_items: int | None = None,
    ) -> None:
        self.transport = transport
        #: a message holding more values and keys is refused unread (a stranger's connection:
        #: ``limits.max_message_items``); ``None``: not counted
        self.max_items = max_items
        self.name = name
        self.on_request = on_request
        self.on_notification = on_notification
        self.on_close = on_close
        self.limits = limits
        # The parser guard: deep enough that an over-deep payload still parses and is refused
        # with a precise reason by the receiver's limit check (an action: with a rejection echo).
        self._depth_cap = max(PARSER_DEPTH, limits.max_depth + ENVELOPE_DEPTH) if limits else READ_DEPTH
        self._next_id = 1
        self._pending: dict[int | str, asyncio.Future] = {}
        self._tasks: set[asyncio.Task] = set()
        #: what the other side's requests may make this side send (``None``: unbounded)
        self.budget = budget
        self._waiting: set[asyncio.Task] = set()  # requests waiting for the budget, in order
        self._waiting_chars = 0  # the characters of their messages
        self._turn = asyncio.Lock()
        self.closed = False
        self.sent = 0
        self.received = 0
        transport.set_receiver(self._receive, self._closed)

    # -- sending --------------------------------------------------------------------------------

    def _send(self, message: dict) -> int:
        if self.closed:
            raise ConnectionError(f"{self.name}: the connection is closed")
        text = dumps(message, separators=(",", ":"), allow_nan=False)
        self.sent += 1
        self.transport.send(text)
        return len(text)

    def send_text(self, text: str, *, history: bool = False) -> None:
        """Send an already-encoded message (used to broadcast one encoding to many peers).

        ``history``: a page of history the peer's window lacks (``chat/turnsLoaded``), which the
        transport may take a while to deliver and does not count as a backlog."""
        if self.closed:
            return
        self.sent += 1
        if history:
            self.transport.send(text, history=True)
        else:
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
            try:
                return await asyncio.wait_for(future, timeout)
            except TimeoutError:
                raise TimeoutError(f"{self.name}: no answer to {method} within {timeout:g} s") from None
        finally:
            self._pending.pop(request_id, None)

    @property
    def busy(self) -> int:
        """Requests of the other side this peer is still answering."""
        return len(self._tasks)

    # -- receiving ------------------------------------------------------------------------------

    def _receive(self, text: str) -> None:
        self.received += 1
        try:
            self._receive_text(text)
        except Exception:  # never let one message break the connection
            _log_failure("%s: a message could not be handled", self.name)
            self.send_error(None, RpcError(ErrorCode.INTERNAL_ERROR, "the message could not be handled"))

    def _parse(self, text: Any) -> tuple[Any, RpcError | None]:
        if not isinstance(text, str):
            return None, RpcError(ErrorCode.INVALID_REQUEST, "a message must be one JSON text")
        limits = self.limits
        if limits is not None and len(text) * 4 > limits.max_message_bytes:  # (a character is 1 to 4 bytes)
            size = utf8_bytes(text)
            if size > limits.max_message_bytes:
                return _leading_id(text), RpcError(
                    ErrorCode.INVALID_REQUEST,
                    f"the message is {size:,} bytes of UTF-8, over the limit of {limits.max_message_bytes:,}",
                )
        if self.max_items is not None and items_exceed(text, self.max_items):
            return _leading_id(text), RpcError(
                ErrorCode.INVALID_REQUEST, f"the message holds more than {self.max_items:,} values and keys"
            )
        if nesting_exceeds(text, self._depth_cap):
            return _leading_id(text), RpcError(
                ErrorCode.INVALID_REQUEST, f"the message nests deeper than {self._depth_cap} levels"
            )
        try:
            return _loads(text), None
        except RecursionError:
            return _leading_id(text), RpcError(
                ErrorCode.INVALID_REQUEST, "the message nests too deep to parse"
            )
        except ValueError as exc:
            if "integer string conversion" in str(exc):  # Python's advice on its own digit limit
                return _leading_id(text), RpcError(
                    ErrorCode.PARSE_ERROR, "invalid JSON: a number has more than 4,300 digits"
                )
            return _leading_id(text), RpcError(ErrorCode.PARSE_ERROR, f"invalid JSON: {exc}")

    def _receive_text(self, text: str) -> None:
        message, error = self._parse(text)
        if error is not None:
            # An answer to one of our requests that cannot be read fails that request at once
            # (else it waited out its timeout, and a resume retried for ever); anything else
            # unreadable is answered with the error.
            future = self._pending.get(message) if message is not None else None
            if future is not None and not future.done() and '"method"' not in text:
                future.set_exception(RpcError(error.code, f"its answer could not be read: {error.message}"))
                return
            self.send_error(message, error)
            self._wait_for_budget()  # unreadable frames cost their reading too
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            # a request whose id can be read is answered with it (JSON-RPC 2.0 §5: null only when
            # the id cannot be detected), so that its sender's wait ends
            request_id = message.get("id") if isinstance(message, dict) and "method" in message else None
            self.send_error(
                request_id if valid_request_id(request_id) else None,
                RpcError(
                    ErrorCode.INVALID_REQUEST, 'not a JSON-RPC 2.0 message ("jsonrpc": "2.0" is required)'
                ),
            )
            return
        has_id = "id" in message
        request_id = message.get("id")
        if has_id and not valid_request_id(request_id):
            self.send_error(
                None,
                RpcError(
                    ErrorCode.INVALID_REQUEST,
                    "the id must be an integer between -(2^53 - 1) and 2^53 - 1 or a string of at most 256 characters",
                ),
            )
            return
        method = message.get("method")
        if "method" in message:
            if not isinstance(method, str):
                if has_id:
                    self.send_error(
                        request_id, RpcError(ErrorCode.INVALID_REQUEST, "method must be a string")
                    )
                return
            params = message.get("params")
            if params is None:
                params = {}
            if not isinstance(params, dict):
                if has_id:
                    self.send_error(
                        request_id, RpcError(ErrorCode.INVALID_PARAMS, "params must be an object")
                    )
                return
            if has_id:
                self._handle_request(request_id, method, params, len(text))
            else:
                self._handle_notification(method, params)
            return
        if has_id and ("result" in message or "error" in message):
            self._handle_response(message)
            return
        future = self._pending.get(request_id) if has_id and valid_request_id(request_id) else None
        if future is not None and not future.done():  # an answer to our request, but an empty one
            future.set_exception(
                RpcError(
                    ErrorCode.INVALID_REQUEST,
                    f"{self.name}: the answer to request {request_id} has neither result nor error",
                )
            )
        self.send_error(
            request_id if has_id else None,
            RpcError(ErrorCode.INVALID_REQUEST, "neither a request, a notification nor a response"),
        )

    def _handle_response(self, message: dict) -> None:
        future = self._pending.get(message["id"])
        if future is None or future.done():
            log.debug("%s: response for unknown request %r", self.name, message.get("id"))
            return
        if "error" in message:
            err = message["error"] if isinstance(message["error"], dict) else {}
            code = err.get("code")
            text = err.get("message")
            future.set_exception(
                RpcError(
                    code if type(code) is int else ErrorCode.INTERNAL_ERROR,
                    _their_message(text),
                    err.get("data"),
                )
            )
        else:
            future.set_result(message.get("result"))

    def _handle_notification(self, method: str, params: dict) -> None:
        if self.on_notification is None:
            return
        try:
            self.on_notification(method, params)
        except Exception:  # a bad notification never kills the connection
            _log_failure("%s: notification %s failed", self.name, method)
        # A notification has no answer to hold back: once the budget is spent (the handler charged
        # what it made this side send), this peer's next messages are not read until it refills.
        self._wait_for_budget()

    def _wait_for_budget(self) -> None:
        """Read nothing more from this peer until its budget refills (when it is spent)."""
        if self.budget is not None and (wait := self.budget.delay()) > 0:
            pause = getattr(self.transport, "pause_reading", None)
            if pause is not None:
                pause(wait)

    def _handle_request(self, request_id: Any, method: str, params: dict, size: int = 0) -> None:
        if self.on_request is None:
            self.send_error(
                request_id, RpcError(ErrorCode.METHOD_NOT_FOUND, f"method {method} is not served here")
            )
            return
        limits = self.limits
        if limits is not None and len(self._tasks) >= limits.max_pending_requests and method != "ping":
            self.send_error(
                request_id,
                RpcError(
                    ErrorCode.INVALID_REQUEST,
                    f"this connection already has {len(self._tasks)} requests waiting for an answer "
                    f"(the limit is {limits.max_pending_requests}); wait for some answers first",
                ),
            )
            return
        if self.budget is not None and method != "ping" and (self._waiting or self.budget.delay() > 0):
            # what waits is held parsed: bounded in characters too, not only in requests (64 of
            # 15 MB each held 600 MB for one connection)
            if limits is not None and self._waiting_chars + size > limits.max_message_bytes:
                self.send_error(
                    request_id,
                    RpcError(
                        ErrorCode.INVALID_REQUEST,
                        f"this connection's requests waiting for their turn already hold "
                        f"{self._waiting_chars:,} characters (the limit is {limits.max_message_bytes:,}, "
                        "max_message_bytes); wait for some answers first",
                    ),
                )
                return
            self._waiting_chars += size
            task = asyncio.ensure_future(self._serve_in_turn(request_id, method, params))
            for tasks in (self._tasks, self._waiting):
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            task.add_done_callback(lambda _t: self._served_waiting(size))
            return
        self._serve(request_id, method, params)

    def _served_waiting(self, size: int) -> None:
        self._waiting_chars -= size

    async def _serve_in_turn(self, request_id: Any, method: str, params: dict) -> None:
        """Serve a request once the requests before it were served and the budget allows."""
        async with self._turn:
            while (wait := self.budget.delay()) > 0:  # type: ignore[union-attr]
                await asyncio.sleep(wait)
            if not self.closed:
                self._serve(request_id, method, params)

    def _serve(self, request_id: Any, method: str, params: dict) -> None:
        try:
            result = self.on_request(method, params)  # type: ignore[misc]
        except RpcError as exc:
            self.send_error(request_id, exc)
            return
        except Exception as exc:
            _log_failure("%s: request %s failed", self.name, method)
            self.send_error(request_id, RpcError(ErrorCode.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"))
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
            self.send_error(request_id, exc)
        except asyncio.CancelledError:
            self.send_error(request_id, RpcError(ErrorCode.INTERNAL_ERROR, f"{method} was cancelled"))
            raise
        except Exception as exc:
            _log_failure("%s: request %s failed", self.name, method)
            self.send_error(request_id, RpcError(ErrorCode.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"))
        else:
            self._reply(request_id, result)

    def _reply(self, request_id: Any, result: Any) -> None:
        if self.closed:
            return
        try:
            sent = self._send({"jsonrpc": "2.0", "id": request_id, "result": result})
            if self.budget is not None:
                self.budget.charge(sent)
        except (ValueError, TypeError) as exc:  # e.g. NaN in a result: never put it on the wire
            log.error("%s: a result could not be encoded: %s", self.name, exc)
            self.send_error(
                request_id, RpcError(ErrorCode.INTERNAL_ERROR, "the result could not be encoded as JSON")
            )
        except ConnectionError:
            pass

    def send_error(self, request_id: Any, error: RpcError) -> None:
        """Send an error response (``request_id`` ``None`` for a message whose id is unknown)."""
        if self.closed:
            return
        body = error.to_json()
        body["message"] = str(body["message"]).encode("utf-8", "replace").decode("utf-8")
        try:
            self._send({"jsonrpc": "2.0", "id": request_id, "error": body})
        except (ValueError, TypeError):  # data that cannot be encoded: send the sentence alone
            body.pop("data", None)
            self._send({"jsonrpc": "2.0", "id": request_id, "error": body})
        except ConnectionError:
            pass

    # -- closing --------------------------------------------------------------------------------

    def _closed(self) -> None:
        if self.closed:
            return
        self.closed = True
        for task in tuple(self._waiting):  # requests waiting for the budget are not served now
            task.cancel()
        why = getattr(self.transport, "close_reason", None)
        for future in self._pending.values():
            if not future.done():
                future.set_exception(
                    ConnectionError(f"{self.name}: the connection closed" + (f" ({why})" if why else ""))
                )
        self._pending.clear()
        if self.on_close is not None:
            try:
                self.on_close()
            except Exception:
                log.exception("%s: close handler failed", self.name)

    def close(self) -> None:
        self.transport.close()
