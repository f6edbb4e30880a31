"""A fake of the *other side*: an OpenAI-compatible chat-completions server on 127.0.0.1.

It speaks the streaming wire format (server-sent events of ``chat.completion.chunk`` objects, then
``data: [DONE]``), answers each request with the next scripted reply, and records what it received
(headers and JSON body), so a test can check what the official SDK really sent.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def text_reply(*pieces: str, usage: tuple[int, int] | None = (11, 7), finish: str | None = "stop") -> dict:
    """Streamed text; ``finish`` is the finish reason sent (``None``: the stream ends without one)."""
    return {"pieces": list(pieces), "tool_calls": [], "usage": usage, "finish": finish}


def tool_reply(
    name: str, arguments: dict, *, call_id: str = "call_1", split: int = 3, text: str = ""
) -> dict:
    return {
        "pieces": [text] if text else [],
        "tool_calls": [(call_id, name, json.dumps(arguments), split)],
        "usage": (20, 5),
    }


def raw_reply(*events: Any, keepalive: float | None = None, echo_key: bool = False) -> dict:
    """Events sent as they are: a dict as one ``data:`` event (see :func:`chunk`), a string as an
    event of its own; then ``data: [DONE]``, or with ``keepalive``, an SSE comment every
    ``keepalive`` seconds for as long as the client stays (``FakeOpenAI.left`` is set when it goes).
    ``echo_key``: a response header quotes the request's ``Authorization``, as a debugging proxy may."""
    return {"raw": list(events), "keepalive": keepalive, "echo_key": echo_key}


def whole_reply(reply: dict) -> dict:
    """``reply`` as one whole ``chat.completion`` even when a stream was asked, as some endpoints do."""
    return reply | {"whole": True}


def stalled_reply() -> dict:
    """No answer at all until the server closes (``FakeOpenAI.release``): a client's timeout ends it."""
    return {"stall": True}


def chunk(delta: dict | None, finish: Any = None, usage: Any = None, model: str = "fake") -> dict:
    """One ``chat.completion.chunk``: ``delta`` in one choice (``None``: no choice), its finish reason."""
    out: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        out["usage"] = usage
    return out


def unanswered_tool_calls(messages: list[dict]) -> list[str]:
    """The ids of assistant tool calls that no ``tool`` message answers before the next turn: the
    real API refuses such a history (HTTP 400)."""
    missing: list[str] = []
    for i, m in enumerate(messages):
        if m.get("role") != "assistant" or not m.get("tool_calls"):
            continue
        answered = set()
        for later in messages[i + 1 :]:
            if later.get("role") != "tool":
                break
            answered.add(later.get("tool_call_id"))
        missing += [c["id"] for c in m["tool_calls"] if c["id"] not in answered]
    return missing


class FakeOpenAI:
    """``with FakeOpenAI([reply, ...]) as server: server.base_url``.

    As the real API: a history with unanswered tool calls is refused with 400, an error status
    quotes the key it was given (``Incorrect API key provided: ...``), and a request with
    ``stream: false`` gets one whole ``chat.completion`` (or 400 if it carries ``stream_options``).
    A path other than ``/v1/chat/completions`` is 404, as a server says it (``{"detail": ...}``).
    """

    def __init__(self, replies: list[dict], *, status: int = 200) -> None:
        self.replies = list(replies)
        self.status = status
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.left = threading.Event()  # a client went while a keepalive reply was still streaming
        self.release = threading.Event()  # set on close: a stalled reply ends
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                outer.requests.append(body)
                outer.headers.append({k.lower(): v for k, v in self.headers.items()})
                if self.path != "/v1/chat/completions":
                    self.send_response(404)
                    self.send_header("content-type", "application/json")
                    self.end_headers()
                    self.wfile.write(b'{"detail": "Not Found"}')
                    return
                key = (self.headers.get("authorization") or "").removeprefix("Bearer ")
                missing = unanswered_tool_calls(body.get("messages") or [])
                if body.get("stream") is False and "stream_options" in body:  # as the real API refuses it
                    self.send_response(400)
                    self.send_header("content-type", "application/json")
                    self.end_headers()
                    message = "The 'stream_options' parameter is only allowed when 'stream' is enabled."
                    self.wfile.write(json.dumps({"error": {"message": message, "type": "error"}}).encode())
                    return
                if outer.status != 200 or missing:
                    status, message = outer.status, f"the fake refuses (Incorrect API key provided: {key})"
                    if missing:
                        status = 400
                        message = (
                            "An assistant message with 'tool_calls' must be followed by tool messages "
                            f"responding to each 'tool_call_id'. Missing: {', '.join(missing)}"
                        )
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.end_headers()
                    self.wfile.write(json.dumps({"error": {"message": message, "type": "error"}}).encode())
                    return
                reply = outer.replies.pop(0) if outer.replies else text_reply("(no more replies)")
                if "stall" in reply:
                    outer.release.wait()
                    return
                if "raw" in reply:
                    self._raw(reply, self.headers.get("authorization") or "")
                    return
                if body.get("stream") is False or reply.get("whole"):
                    self._whole(body.get("model", "fake"), reply)
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for chunk in outer._chunks(body.get("model", "fake"), reply):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _raw(self, reply: dict, authorization: str) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                if reply["echo_key"]:
                    self.send_header("x-seen-authorization", authorization)
                self.end_headers()
                for event in reply["raw"]:
                    data = event if isinstance(event, str) else json.dumps(event)
                    self.wfile.write(f"data: {data}\n\n".encode("utf-8", "surrogatepass"))
                self.wfile.flush()
                if reply["keepalive"] is None:
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                    return
                try:
                    while True:  # the peer's behaviour, not a test's wait: it trickles until the client goes
                        self.wfile.write(b": keep-alive\n\n")
                        self.wfile.flush()
                        time.sleep(reply["keepalive"])
                except OSError:
                    outer.left.set()

            def _whole(self, model: str, reply: dict) -> None:
                message: dict[str, Any] = {"role": "assistant", "content": "".join(reply["pieces"])}
                if reply["tool_calls"]:
                    message["tool_calls"] = [
                        {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                        for cid, name, args, _split in reply["tool_calls"]
                    ]
                p, c = reply.get("usage") or (0, 0)
                finish = "tool_calls" if reply["tool_calls"] else reply.get("finish", "stop")
                completion = {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": 0,
                    "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c},
                }
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(json.dumps(completion).encode())

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @staticmethod
    def _chunks(model: str, reply: dict):
        def event(*args: Any, **kwargs: Any) -> dict:
            return chunk(*args, model=model, **kwargs)

        yield event({"role": "assistant", "content": ""})
        for piece in reply["pieces"]:
            yield event({"content": piece})
        for index, (call_id, name, arguments, split) in enumerate(reply["tool_calls"]):
            step = max(1, len(arguments) // split)
            parts = [arguments[i : i + step] for i in range(0, len(arguments), step)]
            yield event(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": parts[0]},
                        }
                    ]
                }
            )
            for part in parts[1:]:
                yield event({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
        finish = "tool_calls" if reply["tool_calls"] else reply.get("finish", "stop")
        if finish is not None:
            yield event({}, finish)
        if reply.get("usage"):
            p, c = reply["usage"]
            yield event(None, usage={"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c})

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
