"""The record of what the model saw: every request a :class:`LoopAgent` sent, and the answer.

Each :class:`ModelCall` keeps the request (system prompt, resident tools, messages with the
capability notices and the synthetic tail marked) and the response, and measures it against the
previous call of the same chat: the **stable prefix** is the part of this request that is
byte-identical to the previous request minus its synthetic tail (requests compared in the canonical
form of :meth:`ModelRequest.canonical`: a header line with model, system prompt and tools, then a
line per message). Its share of the request is the proxy for a KV-cache hit; ``stable`` says the
whole previous request (minus its tail) is a prefix, which is what "never modify a sent prefix"
asks for.

A call keeps what was sent and received as it was. What it shows (:meth:`ModelCall.to_json`,
:meth:`ModelCallLog.table` and the Model calls view) goes through the log's ``redact``, which a
:class:`~ahp_lab.agents.loop.LoopAgent` sets to its host's redactor: an endpoint that echoes the
key, or a tool's output quoting a secret, is masked there as in the host's state.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .models import ModelRequest, ModelResponse

__all__ = ["ModelCall", "ModelCallLog"]


def _shown(value: Any) -> Any:
    return value


def _common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


@dataclass
class ModelCall:
    """One model call: the request, the response, and how much of the request was a stable prefix."""

    index: int
    session: str
    chat: str
    turn_id: str
    request: ModelRequest
    started_at: float
    previous: int | None = None  # index of the previous call of the same chat
    prefix_bytes: int = 0
    total_bytes: int = 0
    stable: bool | None = None  # None for a chat's first call
    response: ModelResponse | None = None
    error: str | None = None
    duration_s: float | None = None
    reports: list[str] = field(default_factory=list)  # hooks that failed or timed out
    notices: list[int] = field(default_factory=list)  # message indexes that are capability notices
    new_notices: list[int] = field(default_factory=list)  # those not in the previous request
    _base: bytes = field(default=b"", repr=False)  # this request minus its tail, for the next call
    #: What the call's JSON and views go through before they are shown (see the module docstring).
    redact: Callable[[Any], Any] = field(default=_shown, repr=False)

    @property
    def share(self) -> float:
        """The stable prefix as a share of the request's bytes (0 for a chat's first call)."""
        return self.prefix_bytes / self.total_bytes if self.total_bytes else 0.0

    @property
    def tail(self) -> list[dict]:
        """The synthetic tail messages of this call (each ``_synthetic`` names its extension)."""
        return self.request.messages[len(self.request.messages) - self.request.synthetic :]

    def to_json(self) -> dict:
        """The call as plain JSON (what the Model calls view shows)."""
        response = self.response
        return self.redact(
            {
                "index": self.index,
                "chat": self.chat,
                "turnId": self.turn_id,
                "model": self.request.model,
                "system": self.request.system,
                "tools": [t.get("function", {}).get("name") for t in self.request.tools],
                "toolDefinitions": self.request.tools,
                "messages": self.request.messages,
                "synthetic": self.request.synthetic,
                "notices": list(self.notices),
                "newNotices": list(self.new_notices),
                "previous": self.previous,
                "prefixBytes": self.prefix_bytes,
                "totalBytes": self.total_bytes,
                "share": round(self.share, 4),
                "stable": self.stable,
                "reports": list(self.reports),
                "error": self.error,
                "durationMs": None if self.duration_s is None else round(self.duration_s * 1000, 1),
                "response": None
                if response is None
                else {
                    "text": response.text,
                    "reasoning": response.reasoning,
                    "refusal": response.refusal,
                    "toolCalls": [c.wire() for c in response.tool_calls],
                    "usage": response.usage,
                },
            }
        )

    def __repr__(self) -> str:
        stable = "first" if self.stable is None else ("stable" if self.stable else "BROKEN")
        return (
            f"<ModelCall #{self.index} {len(self.request.messages)} messages, {len(self.request.tools)} tools, "
            f"prefix {self.share:.0%} ({stable})>"
        )


class ModelCallLog:
    """Every model call of one agent, oldest first; ``log.for_chat(uri)`` filters, listeners hear
    each call as it starts and as it ends."""

    def __init__(self, limit: int = 2000, redact: Callable[[Any], Any] = _shown) -> None:
        self.limit = limit
        self.redact = redact
        self._calls: list[ModelCall] = []
        self._last: dict[str, ModelCall] = {}
        self._listeners: list[Callable[[ModelCall], None]] = []
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._calls)

    def __iter__(self) -> Iterator[ModelCall]:
        return iter(list(self._calls))

    def __getitem__(self, i: Any) -> Any:
        return self._calls[i]

    def for_chat(self, chat: str) -> list[ModelCall]:
        """The calls made for one chat, oldest first."""
        return [c for c in self._calls if c.chat == chat]

    def for_session(self, session: str) -> list[ModelCall]:
        """The calls made in one session (all its chats, subagents' included), oldest first."""
        return [c for c in self._calls if c.session == session]

    def subscribe(self, listener: Callable[[ModelCall], None]) -> Callable[[], None]:
        """Call ``listener(call)`` when a call starts and when it ends; returns unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _notify(self, call: ModelCall) -> None:
        for listener in list(self._listeners):
            with contextlib.suppress(Exception):  # a view's bug must not stop the agent
                listener(call)

    def begin(
        self, session: str, chat: str, turn_id: str, request: ModelRequest, notices: list[int]
    ) -> ModelCall:
        """Record a request before it is sent and measure its stable prefix."""
        index = (self._calls[-1].index + 1) if self._calls else 0
        call = ModelCall(
            index,
            session,
            chat,
            turn_id,
            request,
            time.time(),
            notices=notices,
            new_notices=notices,
            redact=self.redact,
        )
        segments = request.segments()
        current = "\n".join(segments).encode("utf-8", "surrogatepass")
        call.total_bytes = len(current)
        previous = self._last.get(chat)
        if previous is not None:
            # new: past the messages this request shares with the previous one (after a
            # truncation that is fewer than the previous request held)
            sent = previous.request.messages[: len(previous.request.messages) - previous.request.synthetic]
            shared = 0
            for before, now in zip(sent, request.messages, strict=False):
                if before is not now and before != now:
                    break
                shared += 1
            call.new_notices = [i for i in notices if i >= shared]
            call.previous = previous.index
            call.prefix_bytes = _common_prefix(previous._base, current)
            call.stable = call.prefix_bytes == len(previous._base)
            previous._base = b""  # compared once: a record does not keep a copy of its request
        kept = len(segments) - request.synthetic
        call._base = (
            "\n".join(segments[:kept]).encode("utf-8", "surrogatepass") if request.synthetic else current
        )
        self._last[chat] = call
        self._calls.append(call)
        if len(self._calls) > self.limit:
            drop = len(self._calls) - self.limit
            del self._calls[:drop]
            self.dropped += drop
        self._notify(call)
        return call

    def end(self, call: ModelCall, response: ModelResponse | None = None, error: str | None = None) -> None:
        """Record how a call ended: its response, or the error that ended it."""
        call.response = response
        call.error = error
        call.duration_s = time.time() - call.started_at
        self._notify(call)

    def table(self) -> str:
        """A plain-text table: one line per call."""
        lines = ["  #  chat      turn           msgs tools  prefix  stable  tail  response"]
        for c in self._calls:
            stable = "first" if c.stable is None else ("yes" if c.stable else "NO")
            r = c.response
            said = (
                "error: " + (c.error or "")
                if c.error
                else (
                    (f"{len(r.tool_calls)} tool call(s) " if r and r.tool_calls else "")
                    + (repr(c.redact(r.text)[:30]) if r else "…")  # masked whole, then cut
                )
            )
            lines.append(
                c.redact(
                    f"{c.index:3}  {c.chat[-8:]:8}  {c.turn_id[-13:]:13}  {len(c.request.messages):4} {len(c.request.tools):5}"
                    f"  {c.share:6.0%}  {stable:6}  {c.request.synthetic:4}  {said}"
                )
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.table()
