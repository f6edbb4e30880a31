"""Driving one turn: the host's implementation of the agent-facing :class:`TurnContext`.

Every method turns an agent's intent into AHP actions on the chat channel and, where the protocol
says someone else moves next (a person confirms, a client returns a result, the user answers),
waits for the chat state to show it.
"""

from __future__ import annotations

import asyncio
import json
import traceback
import uuid
from collections.abc import AsyncIterable
from typing import TYPE_CHECKING, Any

from ..agents.base import InputOutcome, ToolInfo, ToolOutcome, TurnFailed
from ..protocol.jsonvalue import to_json
from ..store import agent_origin
from ..tools import ToolContext, bounded_result, failure_result, run_tool_call
from .validation import find_open_request, find_tool_call

if TYPE_CHECKING:
    from .host import Host

__all__ = ["TurnRunner"]


def _short_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def text_of(content: Any) -> str:
    """The plain text of ``ToolResultContent[]`` (other block kinds summarized)."""
    out = []
    for block in content or ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            out.append(str(block.get("text", "")))
        elif block.get("type") in ("resource", "embeddedResource"):
            out.append(f"[{block.get('type')} {block.get('uri') or block.get('contentType', '')}]")
    return "\n".join(out)


def markdown_text(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("markdown", ""))
    return "" if value is None else str(value)


class TurnRunner:
    """Runs ``agent.run_turn`` for one turn and ends the turn the way the protocol says."""

    def __init__(self, host: Host, session: str, chat: str, turn_id: str, message: dict, agent: Any) -> None:
        self.host = host
        self.session = session
        self.chat = chat
        self.turn_id = turn_id
        self.message = message
        self.agent = agent
        self.origin = agent_origin(getattr(agent, "name", "agent"))
        self.started_ms = host.store.clock_ms()
        self.task: asyncio.Task | None = None
        self.chunk_size = host.chunk_size
        self.tool_tasks: dict[asyncio.Task, ToolContext] = {}  # the server tools running, by task

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> asyncio.Task:
        self.task = asyncio.ensure_future(self._run())
        return self.task

    async def _run(self) -> None:
        try:
            await self.agent.run_turn(self)
        except asyncio.CancelledError:
            self._cancel_tools()
            return  # chat/turnCancelled already ended the turn (or the host is shutting down)
        except TurnFailed as exc:
            self._end("chat/error", error={"errorType": exc.error_type, "message": str(exc)})
        except GeneratorExit:
            raise
        except BaseException as exc:  # noqa: BLE001 - an agent bug (even SystemExit) ends the turn, never the kernel
            self._end(
                "chat/error",
                error={
                    "errorType": type(exc).__name__,
                    "message": str(exc) or type(exc).__name__,
                    "stack": "".join(traceback.format_exception(exc))[-4000:],
                },
            )
        else:
            self._end("chat/turnComplete")
        finally:
            self._cancel_tools()
            self.host._turn_finished(self)

    def cancel(self) -> None:
        """Cancel the turn: its tools see ``ctx.cancelled`` set before the cancellation reaches them."""
        for ctx in self.tool_tasks.values():
            ctx.cancelled.set()
        if self.task is not None:
            self.task.cancel()

    def stop(self) -> asyncio.Task | None:
        """End the turn as cancelled and cancel it (the host is closing); its task, to wait for, or
        ``None`` when it is done."""
        if self.task is None or self.task.done():
            return None
        self._end("chat/turnCancelled")
        self.cancel()
        return self.task

    def _cancel_tools(self) -> None:
        for task, ctx in list(self.tool_tasks.items()):
            ctx.cancelled.set()
            task.cancel()

    def _end(self, kind: str, **extra: Any) -> None:
        chat = self.host.store.state(self.chat) or {}
        if (chat.get("activeTurn") or {}).get("id") != self.turn_id:
            return  # truncated or replaced meanwhile: nothing to end
        duration = max(0, self.host.store.clock_ms() - self.started_ms)
        self._dispatch({"type": kind, "turnId": self.turn_id, "duration": duration, **extra})

    def _dispatch(self, action: dict) -> None:
        self.host.dispatch(self.chat, action, self.origin)

    def _ensure_active(self) -> None:
        chat = self.host.store.state(self.chat) or {}
        if (chat.get("activeTurn") or {}).get("id") != self.turn_id:
            raise asyncio.CancelledError()

    # -- TurnContext ----------------------------------------------------------------------------

    @property
    def prompt(self) -> str:
        return str(self.message.get("text", ""))

    def tools(self) -> list[ToolInfo]:
        return self.host.available_tools(self.session)

    async def _stream(self, kind: str, text: str | AsyncIterable[str], chunk_size: int | None) -> str:
        self._ensure_active()
        part_id = _short_id("md" if kind == "markdown" else "rs")
        self._dispatch(
            {
                "type": "chat/responsePart",
                "turnId": self.turn_id,
                "part": {"kind": kind, "id": part_id, "content": ""},
            }
        )
        action_type = "chat/delta" if kind == "markdown" else "chat/reasoning"

        def delta(content: str) -> None:
            self._ensure_active()
            self._dispatch(
                {"type": action_type, "turnId": self.turn_id, "partId": part_id, "content": content}
            )

        if isinstance(text, str):
            size = chunk_size or self.chunk_size
            for i in range(0, len(text), size):
                await self.host.pace()
                delta(text[i : i + size])
        else:  # a live stream (a model's deltas): one chat/delta per piece, as it arrives
            async for piece in text:
                if piece:
                    delta(piece)
        return part_id

    async def say(self, text: str | AsyncIterable[str], *, chunk_size: int | None = None) -> str:
        return await self._stream("markdown", text, chunk_size)

    async def think(self, text: str | AsyncIterable[str], *, chunk_size: int | None = None) -> str:
        return await self._stream("reasoning", text, chunk_size)

    async def notify(self, text: str) -> None:
        self._ensure_active()
        self._dispatch(
            {
                "type": "chat/responsePart",
                "turnId": self.turn_id,
                "part": {"kind": "systemNotification", "content": text},
            }
        )

    async def usage(self, input_tokens: int, output_tokens: int, model: str | None = None) -> None:
        usage: dict[str, Any] = {"inputTokens": input_tokens, "outputTokens": output_tokens}
        if model:
            usage["model"] = model
        self._dispatch({"type": "chat/usage", "turnId": self.turn_id, "usage": usage})

    async def activity(self, text: str | None) -> None:
        action: dict[str, Any] = {"type": "chat/activityChanged"}
        if text is not None:
            action["activity"] = text
        self._dispatch(action)

    def take_steering(self) -> dict | None:
        chat = self.host.store.state(self.chat) or {}
        steering = chat.get("steeringMessage")
        if not isinstance(steering, dict):
            return None
        self.host.dispatch(
            self.chat, {"type": "chat/pendingMessageRemoved", "kind": "steering", "id": steering.get("id")}
        )
        return steering.get("message")

    def emit(self, action: dict) -> int:
        self._ensure_active()
        if (
            not str(action.get("type", "")).startswith("chat/")
            or action.get("turnId", self.turn_id) != self.turn_id
        ):
            raise ValueError(
                f"an agent may emit only chat actions of its own turn, not {action.get('type')!r}"
            )
        return self.host.dispatch(self.chat, action, self.origin).seq

    async def wait_tool_call(
        self, tool_call_id: str, leaving: set[str], timeout: float | None = None
    ) -> dict:
        return await self._wait_call(tool_call_id, set(leaving), timeout)

    # -- tool calls -----------------------------------------------------------------------------

    def _tool_call(self, call_id: str) -> dict | None:
        return find_tool_call(self.host.store.state(self.chat) or {}, self.turn_id, call_id)

    async def _wait_call(self, call_id: str, leaving: set[str], timeout: float | None = None) -> dict:
        """Wait until the call's status is not in ``leaving``; returns the call."""

        def check(chat: dict) -> Any:
            active = chat.get("activeTurn") or {}
            if active.get("id") != self.turn_id:
                return ("gone", None)
            tc = find_tool_call(chat, self.turn_id, call_id)
            if tc is None:
                return ("gone", None)
            return None if tc.get("status") in leaving else ("ok", tc)

        result = await self.host.wait_for(self.chat, check, timeout=timeout)
        if result[0] == "gone":
            raise asyncio.CancelledError()
        return result[1]

    async def call_tool(
        self,
        name: str,
        arguments: dict | None = None,
        *,
        confirm: bool | None = None,
        options: list[dict] | None = None,
        title: str | None = None,
        intention: str | None = None,
        requires_result_confirmation: bool = False,
        editable: bool | None = None,
    ) -> ToolOutcome:
        self._ensure_active()
        host = self.host
        resolved = host.resolve_tool(self.session, name, preferred_client=self._turn_client())
        call_id = _short_id("tc")
        base = {"turnId": self.turn_id, "toolCallId": call_id}
        display = title or (resolved.title if resolved else None) or name
        start: dict[str, Any] = {
            "type": "chat/toolCallStart",
            **base,
            "toolName": name,
            "displayName": display,
        }
        if resolved is not None and resolved.contributor is not None:
            start["contributor"] = resolved.contributor
        if intention:
            start["intention"] = intention
        self._dispatch(start)
        args_json = json.dumps(arguments or {}, ensure_ascii=False)
        step = max(1, (len(args_json) + 2) // 3)
        for i in range(0, len(args_json), step):
            await host.pace()
            self._ensure_active()
            self._dispatch(
                {
                    "type": "chat/toolCallDelta",
                    **base,
                    "content": args_json[i : i + step],
                    "invocationMessage": f"Preparing {display}",
                }
            )
        invocation = f"{display}({', '.join(f'{k}={json.dumps(v, ensure_ascii=False)}' for k, v in (arguments or {}).items())})"
        if resolved is None:
            # No server or client tool has that name: the call is declined with a failed result.
            message = f"No tool named {name!r} is available in this session"
            return self._decline(call_id, invocation, args_json, display, message, "unknownTool")
        if resolved.kind == "client" and not host.is_active_client(self.session, resolved.owner):
            # The owner left while the call streamed (customizations §5.2): a streaming call cannot
            # be completed, so the removal skipped it, and made ready it ran for an absent client
            # while the turn waited out client_tool_timeout (300 s). It fails now instead, as the
            # removal fails the owner's running calls.
            message = f"Client {resolved.owner} left the session before the tool call was ready"
            return self._decline(call_id, invocation, args_json, display, message, "clientRemoved")
        needs_confirmation = host.needs_confirmation(resolved, confirm)
        ready: dict[str, Any] = {
            "type": "chat/toolCallReady",
            **base,
            "invocationMessage": invocation,
            "toolInput": args_json,
        }
        if needs_confirmation:
            ready["confirmationTitle"] = f"Run {display}?"
            if options:
                ready["options"] = options
            ready["editable"] = True if editable is None else editable
        else:
            ready["confirmed"] = "not-needed"
        self._dispatch(ready)
        tc = await self._wait_call(call_id, {"pending-confirmation"})
        if tc.get("status") == "running":
            if resolved.kind == "server":
                await self._run_server_tool(resolved, call_id, tc, requires_result_confirmation)
            elif resolved.kind == "client":
                await self._wait_client(call_id, resolved)
            else:
                await host.run_external_tool(self, resolved, call_id, tc, requires_result_confirmation)
            tc = await self._wait_call(call_id, {"running", "auth-required"})
        if tc.get("status") == "pending-result-confirmation":
            await self._wait_call(call_id, {"pending-result-confirmation"})
        return self._outcome(call_id)

    def _decline(
        self, call_id: str, invocation: str, args_json: str, display: str, message: str, error_type: str
    ) -> ToolOutcome:
        """Make the call ready and complete it at once with a failed result (nobody runs it)."""
        base = {"turnId": self.turn_id, "toolCallId": call_id}
        self._dispatch(
            {
                "type": "chat/toolCallReady",
                **base,
                "invocationMessage": invocation,
                "toolInput": args_json,
                "confirmed": "not-needed",
            }
        )
        self._dispatch(
            {"type": "chat/toolCallComplete", **base, "result": failure_result(display, message, error_type)}
        )
        return self._outcome(call_id)

    def _turn_client(self) -> str | None:
        return self.host.turn_clients.get((self.chat, self.turn_id))

    async def _run_server_tool(
        self, resolved: Any, call_id: str, tc: dict, requires_result_confirmation: bool
    ) -> None:
        tool = resolved.tool
        base = {"turnId": self.turn_id, "toolCallId": call_id}
        loop = asyncio.get_running_loop()

        def send_content(blocks: list) -> None:
            current = self._tool_call(call_id)
            if current is not None and current.get("status") == "running":
                self._dispatch({"type": "chat/toolCallContentChanged", **base, "content": blocks})

        ctx = ToolContext(call_id, tool.name, self.session, self.chat, self.turn_id, send_content, loop)
        task = asyncio.ensure_future(run_tool_call(tool, tc.get("toolInput"), ctx))
        self.tool_tasks[task] = ctx
        try:
            result = await task
        finally:
            self.tool_tasks.pop(task, None)
        if self._tool_call(call_id) is None:
            return
        result = bounded_result(result, tool.title, self.host.limits.max_tool_result_bytes)
        action: dict[str, Any] = {"type": "chat/toolCallComplete", **base, "result": result}
        if requires_result_confirmation:
            action["requiresResultConfirmation"] = True
        self.host.dispatch(self.chat, action)

    async def _wait_client(self, call_id: str, resolved: Any) -> None:
        timeout = self.host.client_tool_timeout
        try:
            await self._wait_call(call_id, {"running"}, timeout=timeout)
        except TimeoutError:
            if (self._tool_call(call_id) or {}).get("status") == "running":
                message = f"Client {resolved.owner} did not return a result within {timeout:g} s"
                self.host.dispatch(
                    self.chat,
                    {
                        "type": "chat/toolCallComplete",
                        "turnId": self.turn_id,
                        "toolCallId": call_id,
                        "result": failure_result(resolved.title, message, "timeout"),
                    },
                )

    def _outcome(self, call_id: str) -> ToolOutcome:
        tc = self._tool_call(call_id) or {}
        status = tc.get("status", "cancelled")
        if status == "completed":
            error = (tc.get("error") or {}).get("message")
            return ToolOutcome(
                call_id,
                "completed",
                bool(tc.get("success")),
                markdown_text(tc.get("pastTenseMessage")),
                text_of(tc.get("content")),
                {
                    k: to_json(tc[k])
                    for k in ("success", "pastTenseMessage", "content", "structuredContent", "error")
                    if k in tc
                },
                None,
                error,
            )
        return ToolOutcome(
            call_id, status, False, markdown_text(tc.get("reasonMessage")), "", {}, tc.get("reason")
        )

    # -- input requests -------------------------------------------------------------------------

    async def ask(self, questions: list[dict], *, message: str | None = None) -> InputOutcome:
        self._ensure_active()
        request_id = _short_id("in")
        request: dict[str, Any] = {"id": request_id, "questions": questions}
        if message:
            request["message"] = message
        self._dispatch({"type": "chat/inputRequested", "request": request})

        def answered(chat: dict) -> Any:
            active = chat.get("activeTurn") or {}
            if active.get("id") != self.turn_id:
                return ("gone", None)
            if find_open_request(chat, request_id) is not None:
                return None
            for part in active.get("responseParts") or ():
                if part.get("kind") == "inputRequest" and (part.get("request") or {}).get("id") == request_id:
                    return ("ok", part)
            return ("gone", None)

        result = await self.host.wait_for(self.chat, answered)
        if result[0] == "gone":
            raise asyncio.CancelledError()
        part = result[1]
        return InputOutcome(
            request_id, part.get("response", "cancel"), to_json(part["request"].get("answers") or {})
        )
