"""Models behind :class:`~ahp_lab.agents.loop.LoopAgent`: a scripted one (no network) and OpenAI's.

A model turns a :class:`ModelRequest` (system prompt, resident tools, messages in the OpenAI
chat-completions shape) into a stream of :class:`ModelEvent` s: text and reasoning deltas as they
arrive, then the finished :class:`ModelResponse` (its text, its tool calls, its usage)::

    model = ScriptedModel([
        respond("Let me look.", use("read_file", path="README.md")),   # a tool call
        "It says hello.",                                               # plain text
    ])
    model = ScriptedModel(lambda request: f"you said {request.messages[-1]['content']}")
    model = OpenAIModel("gpt-4o-mini", base_url="http://127.0.0.1:8000/v1", api_key="...")

The API key of :class:`OpenAIModel` lives in the SDK client only: it is never part of a request, a
response, a log record or a ``repr``, nor is a password or query value in its base URL.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ..protocol.jsonvalue import valid_unicode
from ..protocol.uris import shown_url
from .base import TurnFailed

__all__ = [
    "Model",
    "ModelRequest",
    "ModelResponse",
    "ModelEvent",
    "ModelToolCall",
    "ScriptedModel",
    "OpenAIModel",
    "respond",
    "use",
    "checked_response",
    "MAX_ANSWER_CHARS",
    "MAX_ARGUMENTS_CHARS",
    "MAX_TOOL_CALLS",
]

#: What one model answer may hold: text and reasoning together, one tool call's arguments, tool
#: calls, and a tool call's id or name (characters). An answer past a bound ends the model call
#: with a one-sentence ``modelError``; what streamed into the chat before stays there.
MAX_ANSWER_CHARS = 1 << 21
MAX_ARGUMENTS_CHARS = 1 << 20
MAX_TOOL_CALLS = 64
MAX_NAME_CHARS = 256
#: A finish reason is kept up to this many characters.
_MAX_FINISH_CHARS = 64


@dataclass(frozen=True)
class ModelToolCall:
    """One tool call the model asked for: its id, the tool's name and the arguments as JSON text."""

    id: str
    name: str
    arguments: str = "{}"

    def wire(self) -> dict:
        """The call as it appears in an assistant message."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass
class ModelResponse:
    """What one model call produced."""

    text: str = ""
    tool_calls: list[ModelToolCall] = field(default_factory=list)
    reasoning: str = ""
    usage: dict | None = None  # {"inputTokens", "outputTokens"}
    model: str | None = None
    #: Why the model stopped, as the API says (``"stop"``, ``"tool_calls"``, ``"length"``, ...);
    #: ``"incomplete"`` when its stream ended without saying; ``None`` for a model that never says.
    finish_reason: str | None = None
    #: What the model said when it refused to answer (the API's ``refusal``); ``""`` when it did
    #: not. A refusal ends the turn with ``refusal``, as finish reason ``content_filter`` does.
    refusal: str = ""

    def message(self) -> dict:
        """The assistant message that goes into the history (OpenAI shape)."""
        out: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            out["tool_calls"] = [c.wire() for c in self.tool_calls]
        return out


@dataclass(frozen=True)
class ModelEvent:
    """A streamed piece: ``kind`` is ``"text"`` or ``"reasoning"`` (with ``text``) or ``"done"``."""

    kind: str
    text: str = ""
    response: ModelResponse | None = None


@dataclass(frozen=True)
class ModelRequest:
    """Everything one model call sends: the model name, the system prompt, the resident tools (in
    the chat-completions ``tools`` shape) and the messages, whose last ``synthetic`` entries are
    the synthetic tail of this call only."""

    model: str
    system: str
    tools: list[dict]
    messages: list[dict]
    synthetic: int = 0

    def wire_messages(self) -> list[dict]:
        """The messages as sent: the system prompt first."""
        head = [{"role": "system", "content": self.system}] if self.system else []
        return head + [{k: v for k, v in m.items() if not k.startswith("_")} for m in self.messages]

    def segments(self, *, without_tail: bool = False) -> list[str]:
        """The request as the model's cache sees it, in order: a header line (model, system prompt,
        tools), then one line per message, each canonical JSON. ``without_tail`` drops the
        synthetic tail."""
        header = _canonical_json({"model": self.model, "system": self.system, "tools": self.tools})
        messages = self.messages[: len(self.messages) - self.synthetic] if without_tail else self.messages
        return [header] + [_message_line(m) for m in messages]

    def canonical(self, *, without_tail: bool = False) -> bytes:
        """:meth:`segments` joined by newlines, as UTF-8 (what the stable-prefix share compares)."""
        return "\n".join(self.segments(without_tail=without_tail)).encode("utf-8", "surrogatepass")


def _canonical_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


# History messages are never changed once sent, and every request repeats them: their lines are
# computed once (keyed by identity, checked on use), up to 50,000 lines of 64 Mi characters in all.
_LINES: dict[int, tuple[dict, str]] = {}
_lines_chars = 0


def _message_line(message: dict) -> str:
    global _lines_chars
    hit = _LINES.get(id(message))
    if hit is not None and hit[0] is message:
        return hit[1]
    line = _canonical_json({k: v for k, v in message.items() if not k.startswith("_")})
    if len(_LINES) > 50_000 or _lines_chars > 1 << 26:
        _LINES.clear()
        _lines_chars = 0
    _LINES[id(message)] = (message, line)
    _lines_chars += len(line)
    return line


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if value is None:
        return "null"
    return {dict: "an object", list: "an array"}.get(type(value), f"a {type(value).__name__}")


def _malformed(why: str) -> TurnFailed:
    return TurnFailed(f"The model's answer is malformed: {why}.", "modelError")


def _too_long(what: str, limit: int) -> TurnFailed:
    return TurnFailed(
        f"The model's answer is too long: {what} passed {limit:,} characters, so the call was stopped there.",
        "modelError",
    )


def _too_many_calls() -> TurnFailed:
    return TurnFailed(
        f"The model asked for more than {MAX_TOOL_CALLS} tool calls in one answer; none of them was run.",
        "modelError",
    )


def _string(value: Any, what: str, limit: int) -> str:
    """``value`` when it is a string within ``limit`` characters, else the ``modelError`` saying why."""
    if not isinstance(value, str):
        raise _malformed(f"{what} is {_json_kind(value)}, not a string")
    if len(value) > limit:
        raise _too_long(what, limit)
    return value


def checked_response(response: Any) -> ModelResponse:
    """``response`` as the loop keeps it and sends it back in the next requests: strings that are
    valid Unicode and within the bounds above, tool calls with a name and an id of their own each
    (the API refuses a history that repeats an id or names no tool), a finish reason that is a
    short string, and usage counts that are JSON-safe integers (any other count is dropped).
    ``TurnFailed`` (``modelError``) says, in one sentence, what is wrong with an answer it cannot
    keep."""
    if not isinstance(response, ModelResponse):
        raise _malformed(f"the model gave {_json_kind(response)}, not a ModelResponse")
    text = _string(response.text, "its text", MAX_ANSWER_CHARS)
    reasoning = _string(response.reasoning, "its reasoning", MAX_ANSWER_CHARS - len(text))
    refusal = _string(response.refusal, "its refusal", MAX_ANSWER_CHARS - len(text) - len(reasoning))
    calls = response.tool_calls
    if not isinstance(calls, list):
        raise _malformed(f"its tool calls are {_json_kind(calls)}, not a list")
    if len(calls) > MAX_TOOL_CALLS:
        raise _too_many_calls()
    checked: list[ModelToolCall] = []
    for call in calls:
        if not isinstance(call, ModelToolCall):
            raise _malformed(f"a tool call is {_json_kind(call)}, not a ModelToolCall")
        call_id = valid_unicode(_string(call.id, "a tool call's id", MAX_NAME_CHARS))
        name = valid_unicode(_string(call.name, "a tool call's name", MAX_NAME_CHARS))
        if not name:
            raise _malformed("a tool call names no tool, so none of them was run")
        if any(c.id == call_id for c in checked):
            shown = call_id if len(call_id) <= 40 else call_id[:40] + "…"
            raise _malformed(f"two of its tool calls have the id {shown!r}, so none of them was run")
        checked.append(
            ModelToolCall(
                call_id,
                name,
                valid_unicode(_string(call.arguments, "the arguments of a tool call", MAX_ARGUMENTS_CHARS)),
            )
        )
    finish = response.finish_reason
    if finish is not None:
        finish = _string(finish, "its finish reason", 1 << 30)
        finish = valid_unicode(
            finish if len(finish) <= _MAX_FINISH_CHARS else finish[:_MAX_FINISH_CHARS] + "…"
        )
    usage = response.usage
    if isinstance(usage, dict):
        counts = {k: usage.get(k) for k in ("inputTokens", "outputTokens")}
        usage = {k: v for k, v in counts.items() if type(v) is int and 0 <= v < 1 << 53} or None
    else:
        usage = None
    model = response.model if isinstance(response.model, str) else None
    model = None if model is None else valid_unicode(model[:MAX_NAME_CHARS])
    return ModelResponse(
        valid_unicode(text), checked, valid_unicode(reasoning), usage, model, finish, valid_unicode(refusal)
    )


class Model(Protocol):
    """A model the loop can call."""

    name: str

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream the answer to ``request``; the last event is ``done`` with the response."""


# -- scripted ----------------------------------------------------------------------------------------


def use(name: str, args: dict | None = None, /, *, id: str | None = None, **kwargs: Any) -> ModelToolCall:
    """A tool call for a scripted response: ``use("UpdateTodos", todos=[...])`` (or the arguments
    as a dict: ``use("ExecuteTool", {"toolRef": ..., "arguments": {...}})``)."""
    merged = {**(args or {}), **kwargs}
    return ModelToolCall(id or f"call_{uuid.uuid4().hex[:8]}", name, json.dumps(merged, ensure_ascii=False))


def respond(text: str = "", *calls: ModelToolCall, reasoning: str = "") -> ModelResponse:
    """A scripted response: some text, then any tool calls (see :func:`use`)."""
    return ModelResponse(text=text, tool_calls=list(calls), reasoning=reasoning)


def _as_response(value: Any) -> ModelResponse:
    if isinstance(value, ModelResponse):
        return replace(value, tool_calls=list(value.tool_calls))
    if isinstance(value, str):
        return ModelResponse(text=value)
    if isinstance(value, ModelToolCall):
        return ModelResponse(tool_calls=[value])
    if isinstance(value, (list, tuple)) and all(isinstance(v, ModelToolCall) for v in value):
        return ModelResponse(tool_calls=list(value))
    if isinstance(value, dict):
        calls = [
            c if isinstance(c, ModelToolCall) else use(c["name"], c.get("arguments"))
            for c in value.get("tool_calls") or ()
        ]
        return ModelResponse(str(value.get("text") or ""), calls, str(value.get("reasoning") or ""))
    raise TypeError(
        f"a scripted model response must be text, respond(...), use(...) or a dict, not {type(value).__name__}"
    )


class ScriptedModel:
    """A deterministic model: responses taken in order from a list, or computed by a function.

    ``responses`` is a list of text, :func:`respond` / :func:`use` values or dicts, or a function
    ``request -> response`` (sync or async). When a list runs out the model answers with a plain
    sentence saying so. Text streams in ``chunk_size`` pieces, so the chat shows deltas.
    """

    def __init__(
        self,
        responses: Sequence[Any] | Callable[[ModelRequest], Any] | None = None,
        *,
        name: str = "scripted-model",
        chunk_size: int = 16,
    ) -> None:
        self.name = name
        self.chunk_size = chunk_size
        self._fn = responses if callable(responses) else None
        self._queue = list(responses or ()) if not callable(responses) else []
        self.requests: list[ModelRequest] = []

    def add(self, *responses: Any) -> None:
        """Queue more responses."""
        self._queue.extend(responses)

    async def _next(self, request: ModelRequest) -> ModelResponse:
        if self._fn is not None:
            value = self._fn(request)
            if inspect.isawaitable(value):
                value = await value
            return _as_response(value)
        if self._queue:
            return _as_response(self._queue.pop(0))
        return ModelResponse(text="(The scripted model has no more responses.)")

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The next response, streamed in ``chunk_size`` pieces (reasoning first, then text)."""
        self.requests.append(request)
        response = await self._next(request)
        size = max(1, self.chunk_size)
        for kind, text in (("reasoning", response.reasoning), ("text", response.text)):
            for i in range(0, len(text), size):
                yield ModelEvent(kind, text[i : i + size])
        if response.usage is None:
            sent = sum(len(s) for s in request.segments())
            response.usage = {
                "inputTokens": max(1, sent // 4),
                "outputTokens": max(1, len(response.text) // 4),
            }
        response.model = response.model or self.name
        yield ModelEvent("done", response=response)

    def __repr__(self) -> str:
        left = "a function" if self._fn is not None else f"{len(self._queue)} queued responses"
        return f"<ScriptedModel {self.name}: {left}>"


# -- OpenAI-compatible chat completions ---------------------------------------------------------------


class OpenAIModel:
    """An OpenAI-compatible chat-completions model through the official ``openai`` SDK, streaming.

    ``base_url`` and ``api_key`` default to ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``; ``params``
    go to ``chat.completions.create`` as they are (``temperature=0``, ...). The key is kept by the
    SDK client only. ``max_retries``: how many times the SDK retries a call that failed with a
    connection error, 408, 409, 429 or 5xx, waiting as the endpoint's ``Retry-After`` asks (``0``:
    the first failure ends the turn, its error saying any ``Retry-After``).
    """

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 0,
        **params: Any,
    ) -> None:
        import openai

        self.name = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.params = params
        self.timeout = timeout
        key = api_key or os.environ.get("OPENAI_API_KEY")
        self._key_given = bool(key)  # a local endpoint may need none: "not-set" is sent then
        self._client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=key or "not-set",
            timeout=timeout,
            max_retries=max_retries,
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """One streaming ``chat.completions.create`` call: text and reasoning deltas as they arrive,
        refusal and tool-call deltas assembled (the calls by index, told from their ids when the
        endpoint sends none: see ``_inferred_index``), usage from the final chunk."""
        kwargs: dict[str, Any] = {
            "model": request.model or self.name,
            "messages": request.wire_messages(),
            "stream": True,
            **self.params,
        }
        if kwargs["stream"]:  # APIs refuse stream_options on a request that does not stream
            kwargs.setdefault("stream_options", {"include_usage": True})
        if request.tools:
            kwargs["tools"] = request.tools
        try:
            stream = await self._client.chat.completions.create(**kwargs)
        except Exception as exc:
            raise self._explained(exc) from exc
        if not hasattr(stream, "__aiter__"):  # params asked for stream=False: one whole completion
            stream = _chunks_of(stream)
        elif stream.response.headers.get("content-type", "").startswith("application/json"):
            await stream.close()
            raise TurnFailed(
                f"The endpoint at {self._where()} answered with one JSON document, not a stream: "
                "pass stream=False to OpenAIModel.",
                "modelError",
            )
        text: list[str] = []
        reasoning: list[str] = []
        refusal: list[str] = []  # not streamed into the chat: a refusal ends the turn with it
        said = 0  # characters of text and reasoning so far (MAX_ANSWER_CHARS)
        calls: dict[int, dict[str, Any]] = {}
        usage = None
        model = None
        finish = "incomplete"
        try:
            async for chunk in stream:
                model = getattr(chunk, "model", None) or model
                if getattr(chunk, "usage", None) is not None:
                    u = chunk.usage  # counts are checked with the response (checked_response)
                    usage = {"inputTokens": u.prompt_tokens or 0, "outputTokens": u.completion_tokens or 0}
                for choice in chunk.choices or ():
                    if getattr(choice, "finish_reason", None):
                        finish = choice.finish_reason
                    delta = choice.delta
                    if delta is None:
                        continue
                    thought = getattr(delta, "reasoning_content", None) or getattr(delta, "reasoning", None)
                    if not isinstance(thought, str):
                        thought = None  # reasoning some endpoints send as an object is not shown
                    for kind, piece, kept in (
                        ("reasoning", thought, reasoning),
                        ("text", delta.content, text),
                    ):
                        if piece is None or piece == "":
                            continue
                        said += len(_string(piece, f"a {kind} chunk", MAX_ANSWER_CHARS))
                        if said > MAX_ANSWER_CHARS:
                            raise _too_long("its text and reasoning", MAX_ANSWER_CHARS)
                        kept.append(piece)
                        yield ModelEvent(kind, piece)
                    piece = getattr(delta, "refusal", None)
                    if piece is not None and piece != "":
                        said += len(_string(piece, "a refusal chunk", MAX_ANSWER_CHARS))
                        if said > MAX_ANSWER_CHARS:
                            raise _too_long("its text, reasoning and refusal", MAX_ANSWER_CHARS)
                        refusal.append(piece)
                    for tc in delta.tool_calls or ():
                        _add_call_piece(calls, tc)
        except Exception as exc:
            explained = self._explained(exc)
            if explained is exc:
                raise
            raise explained from exc
        finally:
            close = getattr(stream, "close", None)
            if close is not None:  # the endpoint's connection goes at once, whatever ended the call
                await close()
        tool_calls = [
            ModelToolCall(c["id"] or f"call_{i}", c["name"], c["arguments"] or "{}")
            for i, c in sorted(calls.items())
        ]
        response = ModelResponse(
            "".join(text), tool_calls, "".join(reasoning), usage, model, finish, "".join(refusal)
        )
        yield ModelEvent("done", response=response)

    def _where(self) -> str:
        return shown_url(str(self._client.base_url).rstrip("/"))

    def _explained(self, exc: Exception) -> Exception:
        """``exc`` as a ``modelError`` that says what to do, for the failures whose own message
        does not (nothing listening, a wrong path, no key, a timeout, a stream that is not JSON);
        any other ``exc`` as it is."""
        import httpx
        import openai

        if isinstance(exc, (openai.APITimeoutError, httpx.TimeoutException)):
            why = (
                f"The endpoint at {self._where()} sent nothing for {self.timeout:g} s "
                "(OpenAIModel's timeout=), so the call was stopped."
            )
        elif isinstance(exc, openai.APIConnectionError):
            why = (
                f"Nothing answered at {self._where()} ({type(exc).__name__}: {exc}): start the endpoint, "
                "or pass OpenAIModel the base_url it listens at."
            )
        elif isinstance(exc, openai.NotFoundError):
            said = " ".join(str(exc).split())[:300]  # the SDK quotes an {"error": ...} body
            why = (
                f"The endpoint answered 404 Not Found for {shown_url(str(exc.request.url))} ({said}): "
                "check the model name and base_url (OpenAI-compatible base URLs usually end in /v1)."
            )
        elif isinstance(exc, openai.AuthenticationError) and not self._key_given:
            why = (
                f"The endpoint at {self._where()} refused the call (401) and no API key was given: "
                "set OPENAI_API_KEY or pass api_key= to OpenAIModel."
            )
        elif isinstance(exc, json.JSONDecodeError):
            why = (
                f"The endpoint at {self._where()} sent data that is not JSON in its answer ({exc.msg}); "
                "check that base_url points at an OpenAI-compatible API."
            )
        else:
            return exc
        return TurnFailed(why, "modelError")

    def secrets(self) -> tuple[str, ...]:
        """The API key, and the credentials the base URL carries (its password, or a user name
        given alone, as a token is; the values of query parameters named as keys are, such as
        ``?key=``), for the host to mask wherever an error message quotes them. Other query values
        are not secrets: ``?api-version=2024-02-01`` masked every date in every text."""
        from urllib.parse import parse_qsl, urlsplit

        key = self._client.api_key
        parts = urlsplit(str(self._client.base_url))
        found = [key if key != "not-set" else None, parts.password or parts.username]
        found += [v for k, v in parse_qsl(parts.query) if _names_a_credential(k)]
        return tuple(s for s in found if s)

    def __repr__(self) -> str:
        where = shown_url(self.base_url) if self.base_url else "the default endpoint"
        return f"<OpenAIModel {self.name} at {where}>"


#: The words of a query parameter's name that name a credential (``key``, ``api_key``,
#: ``accessToken``, ``sig``); a name that is only ``code`` is one too (an Azure Functions key).
_SECRET_QUERY_WORDS = frozenset(
    {
        "key",
        "apikey",
        "token",
        "secret",
        "password",
        "passwd",
        "pwd",
        "auth",
        "sig",
        "signature",
        "credential",
        "credentials",
    }
)


def _names_a_credential(name: str) -> bool:
    words = [w.lower() for w in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", name)]
    return name.lower() == "code" or any(w in _SECRET_QUERY_WORDS for w in words) or "apikey" in name.lower()


def _retry_after(exc: BaseException) -> float | None:
    """The seconds an endpoint's error response asked to wait before retrying (its
    ``Retry-After`` or ``retry-after-ms`` header), or ``None`` when it did not say."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None or not hasattr(headers, "get"):
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            seconds = float(ms) / 1000
        else:
            value = headers.get("retry-after")
            if value is None:
                return None
            try:
                seconds = float(value)
            except ValueError:  # an HTTP date
                from email.utils import parsedate_to_datetime

                when = parsedate_to_datetime(value)
                seconds = when.timestamp() - time.time()
    except (TypeError, ValueError, OverflowError):
        return None
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _add_call_piece(calls: dict[int, dict[str, Any]], tc: Any) -> None:
    """Add one streamed tool-call piece to the call with its index (or, for a piece without one,
    the index :func:`_inferred_index` tells), within the bounds above."""
    index = getattr(tc, "index", None)
    indexed = index is not None
    if not indexed:
        index = _inferred_index(calls, tc)
    elif type(index) is not int:
        raise _malformed(f"a tool call's index is {_json_kind(index)}, not an integer")
    elif any(not e["indexed"] for e in calls.values()):
        raise _unindexed()
    entry = calls.get(index)
    if entry is None:
        if len(calls) >= MAX_TOOL_CALLS:
            raise _too_many_calls()
        entry = calls[index] = {"id": None, "name": "", "arguments": "", "indexed": indexed}
    if getattr(tc, "id", None):
        entry["id"] = _string(tc.id, "a tool call's id", MAX_NAME_CHARS)
    function = getattr(tc, "function", None)
    if function is not None:
        for field_, what, limit in (
            ("name", "a tool call's name", MAX_NAME_CHARS),
            ("arguments", "the arguments of a tool call", MAX_ARGUMENTS_CHARS),
        ):
            piece = getattr(function, field_, None)
            if piece:
                entry[field_] = _string(entry[field_] + _string(piece, what, limit), what, limit)


def _unindexed() -> TurnFailed:
    return _malformed(
        "some of its tool-call pieces have an index and some have none, so which call each one "
        "continues cannot be told; OpenAIModel(..., stream=False) asks for whole answers, which need none"
    )


def _inferred_index(calls: dict[int, dict[str, Any]], tc: Any) -> int:
    """The index of a tool-call piece sent without one (as Ollama and Gemini's OpenAI-compatible
    API do): a piece with a new id, or with a name and no id when the last call is named already,
    starts a new call; any other piece continues the last call. A piece that repeats an earlier
    call's id, or a stream that mixes pieces with and without an index, is refused."""
    if any(e["indexed"] for e in calls.values()):
        raise _unindexed()
    if not calls:
        return 0
    last = max(calls)
    call_id = getattr(tc, "id", None)
    if call_id and call_id != calls[last]["id"]:
        if any(e["id"] == call_id for e in calls.values()):
            raise _malformed(
                "a tool-call piece without an index repeats an earlier call's id, so which call it "
                "continues cannot be told; OpenAIModel(..., stream=False) asks for whole answers, which need none"
            )
        return last + 1
    if not call_id and getattr(getattr(tc, "function", None), "name", None) and calls[last]["name"]:
        return last + 1
    return last


async def _chunks_of(completion: Any) -> AsyncIterator[Any]:
    """A non-streamed ``ChatCompletion`` as the one chunk a stream would end with."""
    from types import SimpleNamespace

    choices = []
    for c in completion.choices or ():
        message = c.message
        calls = [
            SimpleNamespace(index=i, id=call.id, function=call.function)
            for i, call in enumerate(message.tool_calls or ())
        ]
        delta = SimpleNamespace(
            content=message.content,
            tool_calls=calls,
            reasoning_content=getattr(message, "reasoning_content", None),
            refusal=getattr(message, "refusal", None),
        )
        choices.append(SimpleNamespace(finish_reason=c.finish_reason, delta=delta))
    yield SimpleNamespace(model=completion.model, usage=completion.usage, choices=choices)
