"""Recording the raw JSON-RPC frames of a connection (the raw wire view reads a :class:`FrameLog`).

``log.wrap(transport)`` returns a transport that behaves exactly like the one it wraps and records
every text it sends (``"out"``) and receives (``"in"``) with its size and time. The log keeps the
newest ``capacity`` frames as small tuples; :class:`Frame` objects, and a frame's method, id and
kind (read from its JSON), are made only when someone looks (:attr:`FrameLog.frames`). Of a frame
longer than :data:`KEPT_CHARS` it keeps only the first ``KEPT_CHARS`` characters (and the full
size), so a peer sending large frames, even refused ones, cannot make the log hold them. An
answer's file content read as base64 is kept as a note of its length, not as sent.
"""

from __future__ import annotations

import json
import re
import time
from collections import deque
from collections.abc import Callable
from typing import Any

__all__ = ["Frame", "FrameLog", "TappedTransport", "KEPT_CHARS"]


class Frame:
    """One JSON-RPC frame as it crossed the wire."""

    __slots__ = ("n", "direction", "text", "time", "connection", "size", "_info")

    def __init__(
        self, n: int, direction: str, text: str, at: float, connection: int, size: int | None = None
    ) -> None:
        self.n = n  # position in the log since it was created (never reused)
        self.direction = direction  # "in" (received by this side) or "out" (sent)
        self.text = text  # the frame's text, or its first KEPT_CHARS characters when it was longer
        self.time = at  # epoch seconds
        self.connection = connection  # which socket of the log (a reconnect opens a new one)
        self.size = len(text) if size is None else size  # the whole frame's length in characters
        self._info: dict | None = None

    @property
    def truncated(self) -> bool:
        """Whether only the first :data:`KEPT_CHARS` characters of the frame were kept."""
        return self.size > len(self.text)

    def info(self) -> dict:
        """``{"kind", "method", "id", "error"}`` read from the JSON (``kind`` "invalid" when it is not)."""
        if self._info is None:
            self._info = _classify_head(self.text) if self.truncated else _classify(self.text)
        return self._info

    def __repr__(self) -> str:
        i = self.info()
        return f"<Frame #{self.n} {self.direction} {i['kind']} {i['method'] or i['id']} {self.size} chars>"


_PARSE_LIMIT = 64 * 1024  # larger frames are classified from their first characters only
#: A frame's characters a :class:`FrameLog` keeps (the rest is dropped; its size is kept).
KEPT_CHARS = _PARSE_LIMIT
#: The value of a ``"token"`` member (``authenticate``'s), up to its closing quote or the end of a
#: cut frame: masked before a frame is kept, in or out, since a frame log is shown and exported
#: and the host only learns a token once it has delivered it (a refused one never).
_TOKEN = re.compile(
    '("' + "".join(f"(?:{c}|\\\\u(?i:{ord(c):04x}))" for c in "token") + r'"\s*:\s*")(?:[^"\\]|\\.)*("|\\?$)'
)  # the key written plainly or with any of its letters escaped (``"to\\u006ben"``)
#: A ``"data"`` string of base64 characters up to its closing quote or the end of a cut frame: a
#: file read as base64, in a frame that does not parse.
_BASE64_DATA = re.compile(r'("data"\s*:\s*")[A-Za-z0-9+/=]+("|$)')
_HEAD = re.compile(r'"(method|id|type)"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,20})')


def _classify_head(text: str) -> dict:
    head = text[:4096]
    found: dict[str, Any] = {}
    for key, value in _HEAD.findall(head):
        found.setdefault(key, json.loads(value))
    method = found.get("method") if isinstance(found.get("method"), str) else None
    if method is not None:
        kind = "request" if "id" in found else "notification"
    else:
        kind = "error" if '"error"' in head else ("result" if '"result"' in head else "invalid")
    if method == "action" and isinstance(found.get("type"), str):
        method = f"action {found['type']}"
    rid = found.get("id")
    return {"kind": kind, "method": method, "id": rid if isinstance(rid, (int, str)) else None, "error": None}


def _classify(text: str) -> dict:
    if len(text) > _PARSE_LIMIT:
        return _classify_head(text)
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):  # a frame nested past Python's stack is no message either
        return {"kind": "invalid", "method": None, "id": None, "error": None}
    if not isinstance(message, dict):
        return {"kind": "invalid", "method": None, "id": None, "error": None}
    method = message.get("method") if isinstance(message.get("method"), str) else None
    rid = message.get("id")
    error = message.get("error") if isinstance(message.get("error"), dict) else None
    if method is not None:
        kind = "request" if "id" in message else "notification"
    elif "error" in message:
        kind = "error"
    elif "result" in message:
        kind = "result"
    else:
        kind = "invalid"
    if method == "action" and isinstance(message.get("params"), dict):
        action = message["params"].get("action")
        if isinstance(action, dict) and isinstance(action.get("type"), str):
            method = f"action {action['type']}"
    return {
        "kind": kind,
        "method": method,
        "id": rid if isinstance(rid, (int, str)) else None,
        "error": error.get("message") if error else None,
    }


class FrameLog:
    """The newest ``capacity`` frames of one side's connections, oldest first, with listeners.

    ``redact(text, cut)`` (a host's redaction) masks the secrets of the frames received, and of the
    answers and errors sent (an answer may hold a file's text, read by ``resourceRead``; an error
    may quote what a peer sent), before they are kept; ``cut`` says the text is the first
    :data:`KEPT_CHARS` characters of a longer frame. The actions sent are the host's state's,
    redacted already. An answer's ``data`` in base64 (a file ``resourceRead`` read as base64, which
    a redaction of text cannot read) is kept as a note saying how many characters were left out;
    the frame stays JSON, and what the peer receives is unchanged.

    At most ``max_chars`` characters of frame text are kept in all (each frame's first
    :data:`KEPT_CHARS`): a peer sending large frames pushes the oldest out sooner, so what a
    stranger sends cannot hold more than that in the kernel however large its frames.
    """

    def __init__(
        self,
        capacity: int = 2000,
        *,
        max_chars: int = 16 * 1024 * 1024,
        clock: Callable[[], float] = time.time,
        redact: Callable[[str, bool], str] | None = None,
    ) -> None:
        # what a stranger's frames pass through before they are kept (a host's redaction: its
        # secret must not reach a log that is shown and saved with the notebook)
        self.redact = redact
        self._raw: deque[tuple] = deque(maxlen=capacity)  # (n, direction, text, time, connection, size)
        self.max_chars = max_chars
        self._chars = 0  # the kept text of the frames in _raw
        self._made: dict[int, Frame] = {}  # frames already built (their parsed info is kept)
        self.count = 0
        self.connections = 0
        self._clock = clock
        self._listeners: list[Callable[[Frame], None]] = []

    def __len__(self) -> int:
        return len(self._raw)

    @property
    def frames(self) -> list[Frame]:
        """The recorded frames, oldest first."""
        made = self._made
        if self._raw and len(made) > len(self._raw):
            oldest = self._raw[0][0]
            self._made = made = {n: f for n, f in made.items() if n >= oldest}
        out = []
        for raw in self._raw:
            frame = made.get(raw[0])
            if frame is None:
                frame = made[raw[0]] = Frame(*raw)
            out.append(frame)
        return out

    def wrap(self, transport: Any) -> TappedTransport:
        """A transport that records into this log (each wrap is a new connection number)."""
        self.connections += 1
        return TappedTransport(transport, self, self.connections)

    def record(self, direction: str, text: str, connection: int = 0) -> None:
        """Append a frame and tell the listeners."""
        self.count += 1
        cut = len(text) > KEPT_CHARS
        kept = text[:KEPT_CHARS] if cut else text
        if '"result"' in kept and (cut or '"base64"' in kept):  # before redaction: it has less to read
            kept = _without_base64(kept)
        if self.redact is not None and (direction == "in" or '"error"' in kept or '"result"' in kept):
            kept = self.redact(kept, cut)
        if '"token"' in kept or "\\u" in kept:
            kept = _without_tokens(kept)
        raw = (self.count, direction, kept, self._clock(), connection, len(text))
        frames = self._raw
        if len(frames) == frames.maxlen:
            self._chars -= len(frames[0][2])
        frames.append(raw)
        self._chars += len(kept)
        while self._chars > self.max_chars and len(frames) > 1:  # never the newest
            self._chars -= len(frames.popleft()[2])
        if self._listeners:
            frame = Frame(*raw)
            for listener in tuple(self._listeners):
                listener(frame)

    def subscribe(self, listener: Callable[[Frame], None]) -> Callable[[], None]:
        """Call ``listener(frame)`` for every new frame; returns a function that unsubscribes."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def where(self, direction: str = "", text: str = "", connection: int | None = None) -> list[Frame]:
        """Frames in one direction (``"in"``/``"out"``), of one connection, whose method, kind or id
        contains ``text``."""
        needle = text.lower()
        out = []
        for frame in self.frames:
            if (direction and frame.direction != direction) or (
                connection is not None and frame.connection != connection
            ):
                continue
            if needle:
                i = frame.info()
                label = f"{i['kind']} {i['method'] or ''} {i['id'] if i['id'] is not None else ''}".lower()
                if needle not in label:
                    continue
            out.append(frame)
        return out


def _without_tokens(text: str) -> str:
    """``text`` with the value of every ``token`` member masked, its key written plainly or with
    escapes (``"to\\u006ben"`` is the same key to the host); a cut frame, which does not parse, as
    far as its plain form goes."""
    try:
        value = json.loads(text)
        masked, found = _masked(value)  # recursive: a frame nested past Python's stack is text
    except (ValueError, RecursionError):
        return _TOKEN.sub(r"\1***\2", text)
    return json.dumps(masked, ensure_ascii=False) if found else text


def _left_out(chars: int, closed: str = '"') -> str:
    return f"(base64 left out of the log: {chars:,} characters{'' if closed else ' before the cut'})"


def _without_base64(text: str) -> str:
    """``text`` with the ``data`` of an answer's base64 file content (``resourceRead``'s, which
    redaction cannot read) replaced by a note of its length; a cut frame, which does not parse
    (its ``data`` runs to the cut, before the ``encoding`` that names it), has each base64-looking
    ``data`` string replaced the same way."""
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        return _BASE64_DATA.sub(
            lambda m: m[1] + _left_out(len(m[0]) - len(m[1]) - len(m[2]), m[2]) + m[2], text
        )
    result = message.get("result") if isinstance(message, dict) else None
    if not (
        isinstance(result, dict)
        and result.get("encoding") == "base64"
        and isinstance(result.get("data"), str)
    ):
        return text
    message["result"] = {**result, "data": _left_out(len(result["data"]))}
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"))


def _masked(value: Any) -> tuple[Any, bool]:
    if isinstance(value, dict):
        out, found = {}, False
        for key, item in value.items():
            if key == "token":
                out[key], found = "***", True
            else:
                out[key], hit = _masked(item)
                found = found or hit
        return out, found
    if isinstance(value, list):
        pairs = [_masked(item) for item in value]
        return [item for item, _ in pairs], any(hit for _, hit in pairs)
    return value, False


class TappedTransport:
    """A transport that records what passes through it into a :class:`FrameLog`."""

    def __init__(self, inner: Any, log: FrameLog, connection: int) -> None:
        self.inner = inner
        self.log = log
        self.connection = connection

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def send(self, text: str, **options: Any) -> None:
        """Send through the wrapped transport, then record the frame."""
        self.inner.send(text, **options)
        self.log.record("out", text, self.connection)

    def set_receiver(self, receiver: Callable[[str], None], on_close: Callable[[], None]) -> None:
        """Receive through the wrapped transport, recording each frame before it is handled."""

        def receive(text: str) -> None:
            self.log.record("in", text, self.connection)
            receiver(text)

        self.inner.set_receiver(receive, on_close)

    def close(self, *args: Any) -> None:
        """Close the wrapped transport."""
        self.inner.close(*args)
