"""A record of every ACP frame a bridge saw, linked to the AHP transitions each produced.

The SDK calls an observer with every JSON-RPC message of a connection, both ways. The bridge
turns each into an :class:`AcpFrame` and links it to server seqs: an incoming frame to the AHP
actions its mapping applied; an outgoing frame to the AHP action that caused it (the turn that
became ``session/prompt``, the confirmation that became a permission answer, the config change
that became ``session/set_mode``). ``frames_for_seq`` is the link back.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["AcpFrame", "AcpFrameLog", "MAX_FRAMES", "MAX_FRAME_CHARS", "MAX_LOG_CHARS"]

MAX_FRAMES = 50_000  # frames kept per agent (the oldest go first)
MAX_FRAME_CHARS = 16_384  # a frame's JSON kept verbatim up to this size, else a preview
#: The kept frames' JSON in all, per agent: an agent is a stranger too, and 50,000 frames of
#: 16 KiB would be 800 MiB; past it the oldest go first (never the newest).
MAX_LOG_CHARS = 32 * 1024 * 1024


@dataclass
class AcpFrame:
    """One JSON-RPC message between the host and an ACP agent."""

    index: int
    direction: str  # "in" (agent → host) or "out" (host → agent)
    session: str  # the AHP session URI
    message: Any  # the JSON message (or ``{"preview": ...}`` when it was too large)
    ms: int
    seqs: list[int] = field(default_factory=list)
    t_ns: int = 0  # ``time.perf_counter_ns()`` when the frame was seen (for latency measurements)

    @property
    def method(self) -> str | None:
        """The JSON-RPC method (``None`` for a response)."""
        return self.message.get("method") if isinstance(self.message, dict) else None

    @property
    def kind(self) -> str:
        """``request``, ``notification``, ``response`` or ``error``."""
        m = self.message if isinstance(self.message, dict) else {}
        if "method" in m:
            return "request" if "id" in m else "notification"
        return "error" if "error" in m else "response"

    @property
    def label(self) -> str:
        """A short label: the method, the ``session/update`` kind, or ``response #id``."""
        m = self.message if isinstance(self.message, dict) else {}
        if m.get("method") == "session/update":
            update = (m.get("params") or {}).get("update") or {}
            return f"session/update {update.get('sessionUpdate', '?')}"
        if "method" in m:
            return str(m["method"])
        return f"{'error' if 'error' in m else 'response'} #{m.get('id')}"

    def redacted(self, redactor: Any) -> AcpFrame:
        """A copy with secrets masked by ``redactor`` (a host's), a preview's cut end included:
        what views, cells and exports get."""
        message = _blobs_masked(redactor.redact(self.message), redactor)
        if isinstance(message, dict) and isinstance(self.message.get("preview"), str):
            # a blob cut in a preview cannot be read to mask what its bytes hold: it is not shown
            preview = _BASE64_RUN.sub(lambda m: _blob_note(m.group()), self.message["preview"])
            message["preview"] = redactor.cut(preview)
        return replace(self, message=message, seqs=list(self.seqs))

    def to_json(self) -> dict:
        """The frame as plain JSON (for exports and views)."""
        return {
            "index": self.index,
            "direction": self.direction,
            "session": self.session,
            "kind": self.kind,
            "label": self.label,
            "ms": self.ms,
            "seqs": list(self.seqs),
            "message": self.message,
        }


#: The longest base64 member a frame shows (its bytes are served, masked, through resourceRead).
_SHOWN_BLOB = 4096
#: A run of base64 in a frame's preview (a frame too large to keep whole is kept cut, as text).
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_\-]{256,}={0,2}")


def _blob_note(text: str) -> str:
    return f"[{len(text):,} characters of base64]"


def _blobs_masked(value: Any, redactor: Any) -> Any:
    """``value`` (a fresh copy, :meth:`Redactor.redact`'s) with the known secrets inside its base64
    members masked too: an image's ``data`` and a resource's ``blob``, as state keeps them."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k in ("data", "blob") and isinstance(v, str):
                value[k] = redactor.masked_base64(v) if len(v) <= _SHOWN_BLOB else _blob_note(v)
            else:
                _blobs_masked(v, redactor)
    elif isinstance(value, list):
        for v in value:
            _blobs_masked(v, redactor)
    return value


def _bounded(message: Any) -> tuple[Any, int]:
    """The message as kept (a preview when too large), and about the characters that keeps."""
    text = json.dumps(message, ensure_ascii=False, default=str)
    if len(text) <= MAX_FRAME_CHARS:
        return message, len(text)
    head = {k: message[k] for k in ("jsonrpc", "id", "method") if isinstance(message, dict) and k in message}
    return {**head, "preview": text[:MAX_FRAME_CHARS], "size": len(text)}, MAX_FRAME_CHARS


class AcpFrameLog:
    """The frames of one :class:`~ahp_lab.agents.acp.AcpAgent`, newest last, with seq links.

    Once the agent runs under a host, what a cell reads here (iterating, indexing,
    :meth:`frames_for_seq`, :meth:`wait_for`) are copies with the host's secrets masked, as
    :meth:`redacted` gives them: a frame printed in a cell is saved with the notebook.
    """

    def __init__(self, limit: int = MAX_FRAMES, *, max_chars: int = MAX_LOG_CHARS) -> None:
        #: the host's redactor, once the agent runs under one (its sessions' secrets)
        self.redactor: Any = None
        self._frames: deque[AcpFrame] = deque()
        self._chars: deque[int] = deque()  # what each kept frame holds, as _bounded counts it
        self.limit = limit
        self.max_chars = max_chars
        self._held = 0
        self._by_seq: dict[int, list[AcpFrame]] = {}
        self._counter = itertools.count()
        self._waiters: list[tuple[Any, asyncio.Future]] = []
        self._links = 0  # seq links made (a masked copy carries the links made before it)
        self._masked: tuple[tuple, list[AcpFrame]] | None = None  # the last _shown(), and for what

    @property
    def next_index(self) -> int:
        """The index the next frame will get (pass it as ``since`` to wait for a later frame)."""
        return self._frames[-1].index + 1 if self._frames else 0

    async def wait_for(self, check: Any, *, since: int = 0, timeout: float | None = 30) -> AcpFrame:
        """The first frame with ``index >= since`` for which ``check(frame)`` is true (waits for
        it); ``check`` sees the frame with secrets masked, and the caller gets it masked in its
        session's run, as iterating gives it (a key streamed across two chunks is masked whole)."""

        def seen(frame: AcpFrame) -> AcpFrame:
            return frame if self.redactor is None else frame.redacted(self.redactor)

        def shown(frame: AcpFrame) -> AcpFrame:
            if self.redactor is None:
                return frame
            # (a frame dropped from the log meanwhile is masked by itself)
            copies = (c for c in self.redacted(frame.session, self.redactor) if c.index == frame.index)
            return next(copies, None) or frame.redacted(self.redactor)

        for frame in self._frames:
            if frame.index >= since and check(seen(frame)):
                return shown(frame)
        future = asyncio.get_running_loop().create_future()
        entry = (lambda f: f.index >= since and check(seen(f)), future)
        self._waiters.append(entry)
        try:
            return shown(await asyncio.wait_for(future, timeout))
        finally:
            self._waiters.remove(entry)

    def __len__(self) -> int:
        return len(self._frames)

    def _shown(self) -> list[AcpFrame]:
        """Every frame, oldest first, masked (each session's run read as :meth:`redacted` does)."""
        if self.redactor is None:
            return list(self._frames)
        # masked again only when the log, its links or the secrets changed: log[i] in a loop
        # would otherwise mask the whole log on every read
        first = self._frames[0].index if self._frames else None
        key = (self.redactor, self.redactor.generation, first, self.next_index, self._links)
        if self._masked is not None and self._masked[0] == key:
            return self._masked[1]
        sessions = dict.fromkeys(f.session for f in self._frames)
        copies = [c for session in sessions for c in self.redacted(session, self.redactor)]
        shown = sorted(copies, key=lambda f: f.index)
        self._masked = (key, shown)
        return shown

    def __iter__(self):
        return iter(list(self._shown()))

    def __getitem__(self, i: int | slice) -> Any:
        return self._shown()[i]

    def record(self, direction: str, session: str, message: Any, seqs: list[int] | None = None) -> AcpFrame:
        """Add a frame (its message bounded to :data:`MAX_FRAME_CHARS`); the oldest go once there
        are more than ``limit`` or they hold more than ``max_chars``."""
        kept, chars = _bounded(message)
        frame = AcpFrame(
            next(self._counter),
            direction,
            session,
            kept,
            int(time.time() * 1000),
            t_ns=time.perf_counter_ns(),
        )
        self._frames.append(frame)
        self._chars.append(chars)
        self._held += chars
        while len(self._frames) > 1 and (len(self._frames) > self.limit or self._held > self.max_chars):
            self._drop_oldest()
        for seq in seqs or ():
            self.link(frame, seq)
        for check, future in list(self._waiters):
            if not future.done() and check(frame):
                future.set_result(frame)
        return frame

    def _drop_oldest(self) -> None:
        old = self._frames.popleft()
        self._held -= self._chars.popleft()
        for seq in old.seqs:
            bucket = self._by_seq.get(seq)
            if bucket is not None and old in bucket:
                bucket.remove(old)
                if not bucket:
                    del self._by_seq[seq]

    def link(self, frame: AcpFrame, seq: int | None) -> None:
        """Record that ``frame`` produced (or was caused by) the transition ``seq``."""
        if seq is None or seq in frame.seqs:
            return
        frame.seqs.append(seq)
        self._links += 1
        self._by_seq.setdefault(seq, []).append(frame)

    def frames_for_seq(self, seq: int) -> list[AcpFrame]:
        """The frames linked to a server seq (the way back from an AHP action), masked."""
        if self.redactor is None:
            return list(self._by_seq.get(seq, ()))
        return self.redacted_for_seq(seq, self.redactor)

    def for_session(self, session: str) -> list[AcpFrame]:
        """The frames of one AHP session."""
        return [f for f in self._frames if f.session == session]

    def redacted(self, session: str, redactor: Any) -> list[AcpFrame]:
        """The frames of ``session``, oldest first, as copies with secrets masked by ``redactor``
        (a host's): what views, cells and exports get (a frame printed in a cell is saved with the
        notebook). The text of streamed chunks is read across its chunks, as the host reads it
        into the chat: a key a model streams in pieces is masked whole, in the frame where it ends
        (what a chunk's end may begin moves to the next chunk of its kind)."""
        return _redacted_run(self.for_session(session), redactor)

    def redacted_for_seq(self, seq: int, redactor: Any) -> list[AcpFrame]:
        """The frames linked to ``seq``, redacted as :meth:`redacted` does (in their session's run)."""
        linked = self._by_seq.get(seq, ())
        wanted = {f.index for f in linked}
        out = []
        for session in dict.fromkeys(f.session for f in linked):
            out += [f for f in self.redacted(session, redactor) if f.index in wanted]
        return out


#: ``session/update`` kinds whose text streams in chunks (read across them when redacted).
_CHUNKS = frozenset({"agent_message_chunk", "agent_thought_chunk", "user_message_chunk"})


def _chunk(message: Any) -> tuple[str, dict] | None:
    """``(update kind, its content)`` of a streamed text chunk frame, else ``None``."""
    if not isinstance(message, dict) or message.get("method") != "session/update":
        return None
    update = (message.get("params") or {}).get("update")
    if not isinstance(update, dict) or update.get("sessionUpdate") not in _CHUNKS:
        return None
    content = update.get("content")
    if (
        not isinstance(content, dict)
        or content.get("type") != "text"
        or not isinstance(content.get("text"), str)
    ):
        return None
    return update["sessionUpdate"], content


#: Requests after which the chunks before them are over: a prompt's (a further one too), and a
#: fresh process's first ones.
_STARTS = frozenset({"session/prompt", "initialize", "session/new"})


def _turn_over(frame: AcpFrame, prompts: set) -> bool:
    """Whether the chunks before ``frame`` are over: a prompt's answer (a result, or an error: a
    turn the agent failed), a new prompt, or a fresh process's start. ``prompts`` keeps the ids of
    the prompts sent so far."""
    message = frame.message
    if not isinstance(message, dict):
        return False
    ident = message.get("id")
    if frame.direction == "out":
        if message.get("method") == "session/prompt" and isinstance(ident, (int, str)):
            prompts.add(ident)
        return message.get("method") in _STARTS
    if "method" in message:
        return False
    result = message.get("result")
    return (isinstance(result, dict) and "stopReason" in result) or (
        isinstance(ident, (int, str)) and ident in prompts
    )


def _redacted_run(frames: list[AcpFrame], redactor: Any) -> list[AcpFrame]:
    out: list[AcpFrame] = []
    held: dict[str, tuple[dict, str]] = {}  # chunk kind -> (the copy's content that holds, raw text)
    prompts: set = set()

    def end() -> None:
        for content, raw in held.values():
            content["text"] += redactor.held_end(raw)
        held.clear()

    for frame in frames:
        copy = frame.redacted(redactor)
        raw_chunk, chunk = _chunk(frame.message), _chunk(copy.message)
        if raw_chunk is not None and chunk is not None:
            kind, raw = raw_chunk[0], raw_chunk[1]["text"]
            earlier = held.pop(kind, None)
            chunk[1]["text"], kept = redactor.streamed((earlier[1] if earlier else "") + raw)
            if kept:
                held[kind] = (chunk[1], kept)
        elif _turn_over(frame, prompts):
            end()
        out.append(copy)
    end()
    return out
