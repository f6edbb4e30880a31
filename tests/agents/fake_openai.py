"""A fake of the *other side*: an OpenAI-compatible chat-completions server on 127.0.0.1.

It speaks the streaming wire format (server-sent events of ``chat.completion.chunk`` objects, then
``data: [DONE]``), answers each request with the next scripted reply, and records what it received
(headers and JSON body), so a test can check what the official SDK really sent.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def text_reply(*pieces: str, usage: tuple[int, int] | None = (11, 7)) -> dict:
    return {"pieces": list(pieces), "tool_calls": [], "usage": usage}


def tool_reply(
    name: str, arguments: dict, *, call_id: str = "call_1", split: int = 3, text: str = ""
) -> dict:
    return {
        "pieces": [text] if text else [],
        "tool_calls": [(call_id, name, json.dumps(arguments), split)],
        "usage": (20, 5),
    }


class FakeOpenAI:
    """``with FakeOpenAI([reply, ...]) as server: server.base_url``."""

    def __init__(self, replies: list[dict], *, status: int = 200) -> None:
        self.replies = list(replies)
        self.status = status
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                outer.requests.append(body)
                outer.headers.append({k.lower(): v for k, v in self.headers.items()})
                if outer.status != 200:
                    self.send_response(outer.status)
                    self.send_header("content-type", "application/json")
                    self.end_headers()
                    self.wfile.write(
                        json.dumps(
                            {"error": {"message": "the fake refuses", "type": "server_error"}}
                        ).encode()
                    )
                    return
                reply = outer.replies.pop(0) if outer.replies else text_reply("(no more replies)")
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for chunk in outer._chunks(body.get("model", "fake"), reply):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @staticmethod
    def _chunks(model: str, reply: dict):
        def chunk(delta: dict | None, finish: str | None = None, usage: Any = None) -> dict:
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

        yield chunk({"role": "assistant", "content": ""})
        for piece in reply["pieces"]:
            yield chunk({"content": piece})
        for index, (call_id, name, arguments, split) in enumerate(reply["tool_calls"]):
            step = max(1, len(arguments) // split)
            parts = [arguments[i : i + step] for i in range(0, len(arguments), step)]
            yield chunk(
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
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
        yield chunk({}, "tool_calls" if reply["tool_calls"] else "stop")
        if reply.get("usage"):
            p, c = reply["usage"]
            yield chunk(None, usage={"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c})

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *_exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
