"""ACP → AHP, one table: what each ACP message becomes in the host's state.

Read :data:`SESSION_UPDATES` top to bottom: every ``session/update`` variant, the function that
maps it and the AHP actions it produces. The functions are pure apart from the ``ToolCalls``
record of one turn they update; what a tool call's content items show is :mod:`.content`
(content kept for ``resourceRead``, such as diff sides and images, or living elsewhere, such as
terminals, is reached through its ``Resolver``, which the bridge passes in); the session's
config (modes and config options) is :mod:`.config`. ``docs/acp.md`` is
this table in prose, with what is lost on the way.

============================  ======================================================================
ACP                           AHP
============================  ======================================================================
initialize                    only the client capabilities the host honours (fs, terminal)
session/new                   the session's working directories → ``cwd`` + ``additionalDirectories``;
                              ``modes`` + ``configOptions`` → the session's ``config`` (schema, values)
session/prompt                a turn: message text + attachments → content blocks
  stopReason end_turn         ``chat/turnComplete``
  refusal / max_tokens /      ``chat/error`` (``errorType`` = the stop reason)
  max_turn_requests
  cancelled                   (the turn was already ended by ``chat/turnCancelled``)
session/cancel                sent when the AHP turn is cancelled
agent_message_chunk           ``chat/responsePart`` (markdown, once per run of chunks) + ``chat/delta``
agent_thought_chunk           ``chat/responsePart`` (reasoning) + ``chat/reasoning``
tool_call                     ``chat/toolCallStart`` [+ ``toolCallReady``] [+ ``toolCallComplete``]
tool_call_update              ``toolCallReady`` / ``toolCallContentChanged`` / ``toolCallComplete``
session/request_permission    ``toolCallReady`` without ``confirmed`` → pending-confirmation
plan                          a ``plan`` tool call whose checklist content is replaced in place
available_commands_update     ``/`` completions (the ``completions`` command)
current_mode_update           ``session/configChanged`` {mode}
config_option_update          ``session/configChanged`` {option ids}
session_info_update           ``session/titleChanged``
usage_update                  ``chat/usage`` (``_meta.acp`` carries the context window)
PromptResponse.usage          ``chat/usage``
============================  ======================================================================
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import math
import re
import unicodedata
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from typing import Any

from ...protocol.jsonvalue import held_back
from ...protocol.limits import MAX_SAFE_INTEGER, cut_noted
from ...protocol.printable import printable
from ..base import COMMAND_META, FileAccessDenied
from .content import (
    MAX_CALL_CHARS,
    MAX_CALL_ITEMS,
    MAX_SHOWN_CHARS,
    MAX_TITLE_CHARS,
    Resolver,
    diff_text,
    file_edit,
    tool_content,
)

__all__ = [
    "SESSION_UPDATES",
    "STOP_REASONS",
    "OPTION_KINDS",
    "ToolCalls",
    "TurnMap",
    "prompt_blocks",
    "confirmation_options",
    "plan_markdown",
]

log = logging.getLogger(__name__)

MAX_ID = 200  # longest ACP id (tool call, option) the bridge accepts

#: ACP stop reason → ``None`` (the turn completes) or the ``chat/error`` errorType and message.
STOP_REASONS: dict[str, tuple[str, str] | None] = {
    "end_turn": None,
    "cancelled": None,
    "refusal": ("refusal", "The agent refused to continue this turn"),
    "max_tokens": ("maxTokens", "The agent reached its token limit for this turn"),
    "max_turn_requests": ("maxTurnRequests", "The agent reached its limit of model requests for this turn"),
}

#: ACP permission option kind → AHP ``ConfirmationOption`` kind and group (0 = once, 1 = always).
OPTION_KINDS: dict[str, tuple[str, int]] = {
    "allow_once": ("approve", 0),
    "allow_always": ("approve", 1),
    "reject_once": ("deny", 0),
    "reject_always": ("deny", 1),
}

# ACP tool call status → AHP tool-call status it drives the call to.
_STATUS = {"pending": "streaming", "in_progress": "running", "completed": "completed", "failed": "completed"}


@dataclass
class ToolCall:
    """One ACP tool call as the bridge knows it, and the AHP status it has reached."""

    id: str
    title: str
    kind: str
    status: str = "streaming"  # AHP status
    acp_status: str = "pending"
    content: list = field(default_factory=list)
    locations: list = field(default_factory=list)
    raw_input: Any = None
    raw_output: Any = None
    options: list | None = None  # the permission options while a person is asked
    asked: bool = False  # a person (or a remembered answer) confirmed it, not the bridge
    wrote: bool = False  # the agent wrote a file while it ran
    late: set = field(default_factory=set)  # the statuses it was reported in after it had ended (said)


ToolCalls = dict[str, ToolCall]


#: The most tool calls of the agent's a turn shows: 25,000 small ones took the loop 60 s and made
#: a chat of 21 MB, more than a message may be (attacker round 35).
MAX_TURN_CALLS = 2_000


@dataclass
class TurnMap:
    """Per-turn mapping state: the open text part and the turn's tool calls."""

    turn_id: str
    text_part: tuple[str, str] | None = None  # (kind, part id) that chunks of that kind append to
    calls: ToolCalls = field(default_factory=dict)
    plan_call: str | None = None
    usage: dict = field(default_factory=dict)
    parts: int = 0
    held: str = ""  # the first half of a surrogate pair that ended the last text chunk
    usage_meta: dict = field(default_factory=dict)  # what chat/usage keeps in _meta.acp
    ended_calls: Container[str] = ()  # ids of the agent's calls in turns that ended
    waiting_on_host: int = 0  # the agent's requests of this turn the host has not answered yet
    commands: dict = field(default_factory=dict)  # terminal id -> one started while no call was open
    calls_left_out: int = 0  # the agent's calls past MAX_TURN_CALLS, not shown

    def new_id(self, prefix: str) -> str:
        self.parts += 1
        return f"{prefix}-{self.turn_id}-{self.parts}"


# -- prompts -----------------------------------------------------------------------------------------


def prompt_blocks(message: dict, prompt_caps: dict) -> list[dict]:
    """ACP content blocks for an AHP message: its text, then one block per attachment."""
    blocks: list[dict] = [{"type": "text", "text": str(message.get("text", ""))}]
    for att in message.get("attachments") or ():
        if not isinstance(att, dict) or att.get("_meta") == COMMAND_META:
            continue  # a slash command's completion: the command is in the text
        kind, label = att.get("type"), str(att.get("label") or "attachment")
        selection = _selection(att.get("selection"))
        if kind == "resource" and isinstance(att.get("uri"), str):
            block: dict[str, Any] = {"type": "resource_link", "uri": att["uri"], "name": label}
            if att.get("contentType"):
                block["mimeType"] = att["contentType"]
            if selection:
                block["description"] = f"the person selected {selection}"
            blocks.append(block)
        elif kind == "embeddedResource" and isinstance(att.get("data"), str):
            mime = str(att.get("contentType") or "application/octet-stream")
            media = mime.split("/")[0]
            try:  # data that is not base64 failed the turn with a traceback (ACP round 16)
                raw = base64.b64decode(att["data"])
            except ValueError:
                blocks.append(
                    {"type": "text", "text": f"[attachment {label} ({mime}) is not valid base64: not sent]"}
                )
                continue
            text = raw.decode("utf-8", "replace") if textual(mime) else None
            if media in ("image", "audio") and prompt_caps.get(media):
                blocks.append({"type": media, "data": att["data"], "mimeType": mime})
            elif prompt_caps.get("embeddedContext"):
                resource = {"uri": f"attachment:{label}", "mimeType": mime}
                resource.update({"text": text} if text is not None else {"blob": att["data"]})
                blocks.append({"type": "resource", "resource": resource})
            elif text is not None:  # text every agent takes (ACP's baseline), as a block of its own
                where = f", {selection}" if selection else ""
                blocks.append({"type": "text", "text": f"[attachment {label} ({mime}{where})]\n{text}"})
            else:
                blocks.append(
                    {"type": "text", "text": f"[attachment {label} ({mime}) not supported by the agent]"}
                )
        elif kind in ("chat", "annotations"):  # a channel the agent cannot read: said, not passed
            what = "another chat's transcript" if kind == "chat" else "annotations"
            blocks.append(
                {"type": "text", "text": f"[attachment {label} ({what}) not supported by the agent]"}
            )
        else:
            text = att.get("modelRepresentation") or label
            blocks.append({"type": "text", "text": f"[{label}] {text}" if text != label else f"[{label}]"})
    return blocks


def _selection(selection: Any) -> str | None:
    """``lines 3-5`` for an attachment's ``TextSelection`` (zero-based lines), else ``None``."""
    try:
        first, last = selection["range"]["start"]["line"], selection["range"]["end"]["line"]
    except (TypeError, KeyError):
        return None
    if not isinstance(first, int) or not isinstance(last, int):
        return None
    return f"line {first + 1}" if first == last else f"lines {first + 1}-{last + 1}"


# -- streamed text ---------------------------------------------------------------------------------


def _chunk_text(content: dict, resolver: Resolver) -> str | dict:
    """Text of a content block, or a ``contentRef`` part for binary content."""
    kind = content.get("type")
    if kind == "text":
        return str(content.get("text", ""))
    if kind == "resource_link":
        return _link(content.get("title") or content.get("name") or content.get("uri"), content.get("uri"))
    try:
        if kind in ("image", "audio") and isinstance(content.get("data"), str):
            ref = resolver.put_content(
                content["data"], str(content.get("mimeType") or "application/octet-stream"), True
            )
            return {"kind": "contentRef", **ref}
        if kind == "resource":
            res = content.get("resource") or {}
            if isinstance(res.get("text"), str):  # a file's text, set apart and named (not prose)
                fence = _fence(res["text"])
                return f"\n\n{_link(res.get('uri'), res.get('uri'))}\n\n{fence}\n{res['text']}\n{fence}\n\n"
            if isinstance(res.get("blob"), str):
                return {
                    "kind": "contentRef",
                    **resolver.put_content(res["blob"], str(res.get("mimeType") or ""), True),
                }
    except FileAccessDenied as exc:  # too large to keep: said in place of the content
        return f"[{kind} content not kept: {exc}]"
    return f"[{kind} content]"


def _link(label: Any, uri: Any) -> str:
    """A markdown link whose text and target survive brackets, spaces and line breaks."""
    label = " ".join(str(label).split())
    label = label.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
    target = str(uri).replace("<", "%3C").replace(">", "%3E").replace("\n", "%0A").replace("\r", "%0D")
    return f"[{label}](<{target}>)"


_BACKTICKS = re.compile("`{3,}")


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks in ``text``, which stays inside it."""
    return "`" * max(3, 1 + max((len(run) for run in _BACKTICKS.findall(text)), default=0))


#: The action that appends to a text part of each kind.
_STREAM_ACTIONS = {"markdown": "chat/delta", "reasoning": "chat/reasoning"}


#: The most characters one ``chat/delta`` carries: an agent's chunk longer than this (megabytes of
#: text in one message) is split, so that no action is over a client's message or string limits.
MAX_DELTA_CHARS = MAX_SHOWN_CHARS


def end_run(turn: TurnMap) -> list[dict]:
    """End the run of text (a tool call, other content or the turn's end follows): the first half
    of a character that never got its other half becomes U+FFFD at the end of the run's part."""
    out = []
    if turn.held and turn.text_part is not None:
        out.append(
            {
                "type": _STREAM_ACTIONS[turn.text_part[0]],
                "turnId": turn.turn_id,
                "partId": turn.text_part[1],
                "content": "\ufffd",
            }
        )
    turn.held, turn.text_part = "", None
    return out


def _stream(turn: TurnMap, part_kind: str, update: dict, resolver: Resolver) -> list[dict]:
    text = _chunk_text(update.get("content") or {}, resolver)
    if isinstance(text, dict):  # binary content: its own part, and the text run ends
        return [*end_run(turn), {"type": "chat/responsePart", "turnId": turn.turn_id, "part": text}]
    if not text:
        return []  # an empty chunk starts no part and ends no run
    out = []
    if turn.text_part is None or turn.text_part[0] != part_kind:
        out += end_run(turn)
        part_id = turn.new_id("md" if part_kind == "markdown" else "rs")
        turn.text_part = (part_kind, part_id)
        out.append(
            {
                "type": "chat/responsePart",
                "turnId": turn.turn_id,
                "part": {"kind": part_kind, "id": part_id, "content": ""},
            }
        )
    # A chunk may end inside a character: an agent that cuts text by UTF-16 units can split a
    # surrogate pair between chunks. The first half waits for the next chunk of the run.
    text, turn.held = held_back(turn.held + text)
    start = 0
    while start < len(text):  # a huge chunk goes as several deltas, each within every limit
        end = start + MAX_DELTA_CHARS
        if end < len(text) and "\ud800" <= text[end - 1] <= "\udbff":
            end -= 1  # never between the halves of a character
        out.append(
            {
                "type": _STREAM_ACTIONS[part_kind],
                "turnId": turn.turn_id,
                "partId": turn.text_part[1],
                "content": text[start:end],
            }
        )
        start = end
    return out


def on_message_chunk(turn: TurnMap, update: dict, resolver: Resolver) -> list[dict]:
    """``agent_message_chunk`` → a markdown part (when a new run of text starts) + ``chat/delta``."""
    return _stream(turn, "markdown", update, resolver)


def on_thought_chunk(turn: TurnMap, update: dict, resolver: Resolver) -> list[dict]:
    """``agent_thought_chunk`` → a reasoning part (when a new run starts) + ``chat/reasoning``."""
    return _stream(turn, "reasoning", update, resolver)


# -- tool calls ------------------------------------------------------------------------------------


def _merge(call: ToolCall, update: dict) -> None:
    if isinstance(update.get("title"), str):
        call.title = _line(update["title"])
    if isinstance(update.get("kind"), str):
        call.kind = update["kind"]
    if isinstance(
        update.get("content"), list
    ):  # the agent's content replaces its own, never the host's notes
        call.content = [
            *update["content"],
            *(c for c in call.content if isinstance(c, dict) and c.get("_host")),
        ]
    if isinstance(update.get("locations"), list):
        call.locations = update["locations"]
    if "rawInput" in update and update["rawInput"] is not None:
        call.raw_input = update["rawInput"]
    if "rawOutput" in update and update["rawOutput"] is not None:
        call.raw_output = update["rawOutput"]


def _input_json(call: ToolCall) -> str:
    return cut_noted(
        json.dumps(call.raw_input if call.raw_input is not None else {}, ensure_ascii=False, default=str),
        MAX_SHOWN_CHARS,
    )


def _base(turn: TurnMap, call: ToolCall) -> dict:
    return {"turnId": turn.turn_id, "toolCallId": call.id}


def _ready(turn: TurnMap, call: ToolCall, **extra: Any) -> dict:
    action = {"type": "chat/toolCallReady", **_base(turn, call), "invocationMessage": call.title, **extra}
    if call.raw_input is not None:  # an agent that sends no rawInput gave no input to show
        action["toolInput"] = _input_json(call)
    return action


def _complete(turn: TurnMap, call: ToolCall, resolver: Resolver) -> dict:
    ok = call.acp_status == "completed"
    result: dict[str, Any] = {"success": ok, "pastTenseMessage": call.title}
    content = tool_content(call, resolver)
    if content:
        result["content"] = content
    if isinstance(call.raw_output, dict) and len(json.dumps(call.raw_output, default=str)) <= MAX_SHOWN_CHARS:
        result["structuredContent"] = call.raw_output  # (a larger one is the agent's, not shown)
    if not ok:  # the agent's own words: its text content, not a diff or terminal rendered as text
        said = _first_text(call.content)
        result["error"] = {"message": (resolver.clip(said, 500) if said else "") or f"{call.title} failed"}
    return {"type": "chat/toolCallComplete", **_base(turn, call), "result": result}


def _first_text(items: Any) -> str | None:
    """The first text the agent wrote among a call's content ``items`` (not the host's notes)."""
    for c in items or ():
        if (
            isinstance(c, dict)
            and c.get("type") == "content"
            and not c.get("_host")
            and isinstance(c.get("content"), dict)
            and isinstance(c["content"].get("text"), str)
        ):
            return c["content"]["text"]
    return None


def interrupted(turn: TurnMap, call: ToolCall, resolver: Resolver, how: str = "cancelled") -> dict:
    """``toolCallComplete`` of a call that wrote files, for a turn that ends while it runs (``how``
    it ended: ``cancelled``, or the turn's end by any other way)."""
    call.acp_status, call.status = "failed", "completed"
    action = _complete(turn, call, resolver)
    action["result"]["error"] = {"message": f"{how} while it ran; the files it wrote stay written"}
    return action


def advance(
    turn: TurnMap, call: ToolCall, resolver: Resolver, content_changed: bool, input_changed: bool = False
) -> list[dict]:
    """The actions that bring the AHP call to where the ACP status says it is."""
    target = _STATUS.get(call.acp_status, call.status)
    out: list[dict] = []
    if call.status in ("completed", "cancelled"):
        return out  # already ended on the AHP side (a denial, a turn end): later updates change nothing
    if target in ("running", "completed") and call.status == "streaming":
        out.append(_ready(turn, call, confirmed="not-needed"))
        call.status = "running"
        content_changed = bool(call.content or call.locations)  # what it gathered while streaming
        input_changed = False
    if target == "completed" and call.status in ("running", "pending-confirmation"):
        out.append(_complete(turn, call, resolver))
        call.status = "completed"
    elif call.status == "pending-confirmation" and call.options and (content_changed or input_changed):
        # what the person is deciding on changed: T4 refreshes the confirmation in place
        out.append(confirmation(turn, call, call.options, resolver))
    elif call.status == "running":
        if input_changed and not call.asked:  # T3 keeps a running call running, with the new input
            out.append(_ready(turn, call, confirmed="not-needed"))
            content_changed = bool(call.content or call.locations)  # which T3 drops
        elif input_changed:
            # Not a new toolCallReady: T3 would replace how the call was confirmed (a person's
            # approval would read "not-needed"). The input the person approved stays; the agent's
            # new input is shown as the host's note.
            note = f"The agent changed this call's input after it started: {resolver.clip(_input_json(call), 2000)}"
            call.content = [
                *(c for c in call.content if not (isinstance(c, dict) and c.get("_host") == "input")),
                {"type": "content", "content": {"type": "text", "text": note}, "_host": "input"},
            ]
            content_changed = True
        if content_changed:
            content = tool_content(call, resolver)
            out.append({"type": "chat/toolCallContentChanged", **_base(turn, call), "content": content})
    return out


def as_json(model: Any) -> Any:
    """An SDK model (or a list of them) as the JSON the agent sent, field names as ACP spells them."""
    if hasattr(model, "model_dump"):
        return model.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(model, list):
        return [as_json(m) for m in model]
    return model


#: Media types outside ``text/`` whose content is text (a JSON attachment was "not supported" by an
#: agent that takes text: ACP round 16).
TEXT_APPLICATIONS = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/sql",
        "application/graphql",
        "application/x-sh",
        "application/x-httpd-php",
    }
)


def textual(mime: str) -> bool:
    """Whether content of media type ``mime`` is text: ``text/*``, JSON, XML, YAML and the like."""
    base = mime.split(";")[0].strip().lower()
    return base.startswith("text/") or base.endswith(("+json", "+xml")) or base in TEXT_APPLICATIONS


def id_problem(value: Any) -> str | None:
    """Why ``value`` cannot be an ACP id the bridge shows (a tool call's, a permission option's),
    else ``None``: ids end up in AHP state, in URIs and on screen."""
    if type(value) is not str or not value:
        return "is not a non-empty string"
    if len(value) > MAX_ID:
        return f"is {len(value):,} characters long, over {MAX_ID}"
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Cs") for ch in value):
        return "contains a control or formatting character"
    return None


def _line(text: str) -> str:
    """A title the agent wrote as one line without escape sequences, control or bidi characters
    (as the session's title is), cut at :data:`MAX_TITLE_CHARS`."""
    return cut_noted(" ".join(printable(text).split()), MAX_TITLE_CHARS)


def _start(turn: TurnMap, update: dict) -> tuple[ToolCall, list[dict]]:
    """A new tool call: the run of text ends, and ``toolCallStart``."""
    problem = id_problem(update.get("toolCallId"))
    if problem is not None:
        raise ProtocolViolation(f"the agent's tool call id {problem}")
    kind = _line(str(update.get("kind") or "other"))
    title = _line(str(update.get("title") or kind))
    call = ToolCall(str(update["toolCallId"]), title, kind)
    turn.calls[call.id] = call
    ended = end_run(turn)
    start = {
        "type": "chat/toolCallStart",
        **_base(turn, call),
        "toolName": kind,
        "displayName": title,
        "_meta": {"acp": {"kind": kind}},
    }
    return call, [*ended, start]


def on_tool_call(turn: TurnMap, update: dict, resolver: Resolver) -> list[dict]:
    """``tool_call`` → ``toolCallStart``, then whatever its status already says (ready, complete).

    A turn shows at most :data:`MAX_TURN_CALLS` of the agent's calls; of the rest, one note says
    they are not shown (a permission request still shows its call)."""
    known = turn.calls.get(str(update.get("toolCallId")))
    if known is not None:  # announced again: an update
        return on_tool_call_update(turn, update, resolver)
    if len(turn.calls) >= MAX_TURN_CALLS:
        turn.calls_left_out += 1
        if turn.calls_left_out > 1:
            return []
        text = f"The agent's further tool calls in this turn are not shown: it announced more than {MAX_TURN_CALLS:,}."
        part = {"kind": "systemNotification", "content": text}
        return [*end_run(turn), {"type": "chat/responsePart", "turnId": turn.turn_id, "part": part}]
    call, start = _start(turn, update)
    _merge(call, update)
    call.acp_status = str(update.get("status") or "pending")
    return [*start, *advance(turn, call, resolver, content_changed=False)]


def on_tool_call_update(turn: TurnMap, update: dict, resolver: Resolver) -> list[dict]:
    """``tool_call_update`` → ready / content changed / complete, as the merged fields say."""
    call = turn.calls.get(str(update.get("toolCallId")))
    if call is None:
        if str(update.get("toolCallId")) in turn.ended_calls:
            return []  # a call of a turn that ended (and closed it): too late to show
        if turn.calls_left_out:
            return []  # (most likely) one of the calls past MAX_TURN_CALLS, not shown
        raise ProtocolViolation(
            f"the agent updated tool call {update.get('toolCallId')!r}, which it never announced"
        )
    before = call.raw_input
    late = []
    if call.status in ("completed", "cancelled"):  # AHP's end is final: the update is only logged,
        log.info("ACP: tool call %s already ended (%s); the agent updated it again", call.id, call.status)
        status = update.get("status")
        # but for a call that completed, each status the agent reports after is said beside it, once
        # (an agent reusing a completed call's id, or reporting on it late); a call cancelled here
        # (the person denied it) is one the agent then reports failed, as it should: running or
        # completed, it ran what the person refused, which is said too
        if (
            status in _LATE_STATUS
            and status not in call.late
            and (call.status == "completed" or status in _RAN)
        ):
            call.late.add(status)
            late = [*end_run(turn), _late_notice(turn, call, update, resolver)]
    _merge(call, update)
    if isinstance(update.get("status"), str):
        call.acp_status = update["status"]
    changed = any(update.get(k) is not None for k in ("content", "locations"))
    return [
        *late,
        *advance(turn, call, resolver, content_changed=changed, input_changed=call.raw_input != before),
    ]


_LATE_STATUS = {
    "failed": "it failed",
    "completed": "it completed",
    "in_progress": "it is running",
    "pending": "it is pending",
}
#: The statuses in which a call runs: one the agent reports of a call the person denied.
_RAN = ("in_progress", "completed")


def _late_notice(turn: TurnMap, call: ToolCall, update: dict, resolver: Resolver) -> dict:
    """A ``systemNotification`` part saying what the agent reported of a call after it had ended
    (a failure reported then was nowhere in the chat: ACP call ids are unique in a session, and
    AHP's end of a call is final), or that it ran a call the person denied."""
    said = _LATE_STATUS[update["status"]]
    if (first := _first_text(update.get("content"))) is not None:
        said += f", {resolver.clip(first, 500)}"
    when = "the person denied it" if call.status == "cancelled" else "it had ended"
    text = f"The agent reported on tool call {call.title!r} ({call.id}) after {when}: {said}. The call stays as it ended."
    return {
        "type": "chat/responsePart",
        "turnId": turn.turn_id,
        "part": {"kind": "systemNotification", "content": text},
    }


def permission_call(turn: TurnMap, update: dict) -> tuple[ToolCall, list[dict]]:
    """The call a ``session/request_permission`` is about (announced now when it is new)."""
    call = turn.calls.get(str(update.get("toolCallId")))
    out: list[dict] = []
    if call is None:
        call, start = _start(turn, update)
        out += start
    _merge(call, update)
    return call, out


def confirmation_options(options: list[dict]) -> list[dict]:
    """ACP permission options → AHP ``ConfirmationOption[]`` (ids kept, kinds per :data:`OPTION_KINDS`).

    Labels are cut at :data:`MAX_TITLE_CHARS`: an 18 MB label made a call and an ``inputNeeded``
    entry no client could take. (The bridge refuses more than 16 options and ids over
    :data:`MAX_ID` characters before.)"""
    out = []
    for o in options:
        option_id = str(o["optionId"])
        kind, group = OPTION_KINDS.get(str(o.get("kind")), ("deny", 0))
        label = _line(str(o.get("name") or option_id))
        out.append({"id": option_id, "label": label, "kind": kind, "group": group})
    return out


def confirmation(turn: TurnMap, call: ToolCall, options: list[dict], resolver: Resolver) -> dict:
    """The ``toolCallReady`` (no ``confirmed``) that puts a call in pending-confirmation."""
    title_md = f"**{call.title}**"
    diffs = [c for c in call.content if isinstance(c, dict) and c.get("type") == "diff"]
    texts = [
        c["content"]["text"]
        for c in call.content
        if isinstance(c, dict)
        and c.get("type") == "content"
        and (c.get("content") or {}).get("type") == "text"
    ]
    for text in texts:
        title_md += f"\n\n{text}"
    for d in diffs[:MAX_CALL_ITEMS]:
        diff = diff_text(d)
        fence = _fence(diff)
        title_md += f"\n\n{fence}diff\n{diff}{fence}"
    title_md = cut_noted(printable(title_md), MAX_CALL_CHARS)  # its texts: no escape or control
    extra: dict[str, Any] = {
        "confirmationTitle": {"markdown": title_md},
        "options": confirmation_options(options),
        "editable": False,
    }
    if diffs:
        # the diffs are in the confirmation's text: when their sides cannot be kept, that is all
        with contextlib.suppress(FileAccessDenied):
            extra["edits"] = {"items": [file_edit(d, resolver) for d in diffs[:MAX_CALL_ITEMS]]}
    return _ready(turn, call, **extra)


# -- plans -----------------------------------------------------------------------------------------

_CHECK = {"completed": "[x]", "in_progress": "[-]", "pending": "[ ]"}


#: The most plan entries shown; more are counted in a last line.
MAX_PLAN_ENTRIES = 256


def plan_markdown(entries: list[dict]) -> str:
    """A checklist, one line per plan entry with its status (and priority when not medium).

    Each entry is cut at :data:`MAX_TITLE_CHARS`, and at most :data:`MAX_PLAN_ENTRIES` are shown: an
    entry of 20 MB made a call no client could take."""
    lines = []
    for e in entries[:MAX_PLAN_ENTRIES]:
        status = cut_noted(str(e.get("status") or "pending"), 40)
        priority = cut_noted(str(e.get("priority") or "medium"), 40)
        note = f" ({status.replace('_', ' ')}{', ' + priority + ' priority' if priority != 'medium' else ''})"
        # one line per entry, whatever it holds
        text = " ".join(cut_noted(str(e.get("content", "")), MAX_TITLE_CHARS).split())
        lines.append(f"- {_CHECK.get(status, '[ ]')} {text}{note}")
    if len(entries) > MAX_PLAN_ENTRIES:
        lines.append(f"- [{len(entries) - MAX_PLAN_ENTRIES:,} more plan entries]")
    return "\n".join(lines) or "(the plan is empty)"


def on_plan(turn: TurnMap, update: dict, resolver: Resolver) -> list[dict]:
    """``plan`` → a ``plan`` tool call (running) whose checklist content each revision replaces.

    AHP can only append to a markdown part, so a plan that is revised in place travels as the
    content of a tool call; the turn's end completes it with the last checklist.
    """
    text = plan_markdown([e for e in update.get("entries") or () if isinstance(e, dict)])
    out: list[dict] = []
    if turn.plan_call is None:
        call, start = _start(turn, {"toolCallId": turn.new_id("plan"), "kind": "plan", "title": "Plan"})
        call.acp_status, call.status = "in_progress", "running"
        turn.plan_call = call.id
        out += [*start, _ready(turn, call, confirmed="not-needed")]
    call = turn.calls[turn.plan_call]
    call.content = [{"type": "content", "content": {"type": "text", "text": text}}]
    out.append(
        {
            "type": "chat/toolCallContentChanged",
            **_base(turn, call),
            "content": [{"type": "text", "text": text}],
        }
    )
    return out


def finish_plan(turn: TurnMap, resolver: Resolver) -> list[dict]:
    """Complete the turn's plan call (so the turn's end does not mark it skipped)."""
    call = turn.calls.get(turn.plan_call or "")
    if call is None or call.status != "running":
        return []
    call.acp_status = "completed"
    return advance(turn, call, resolver, content_changed=False)


# -- usage -----------------------------------------------------------------------------------------


def usage_action(turn: TurnMap, tokens: dict | None = None, window: dict | None = None) -> dict:
    """``chat/usage`` from ``PromptResponse.usage`` (tokens) or ``usage_update`` (context window).

    Either keeps what the other reported: the counts AHP's ``UsageInfo`` has (input, output, cache
    read), and in ``_meta.acp`` the context window (``used``, ``size``, ``cost``) and the counts it
    has no field for (``thoughtTokens``, ``cachedWriteTokens``, ``totalTokens``).
    """
    if tokens:
        turn.usage = {
            ahp: tokens[acp_key]
            for acp_key, ahp in _USAGE_FIELDS.items()
            if _count(tokens.get(acp_key)) is not None
        }
        turn.usage_meta.update(
            {
                k: tokens[k]
                for k in ("thoughtTokens", "cachedWriteTokens", "totalTokens")
                if _count(tokens.get(k)) is not None
            }
        )
    if window:
        turn.usage_meta.update({k: window[k] for k in ("used", "size") if _count(window.get(k)) is not None})
        cost = window.get("cost") if isinstance(window.get("cost"), dict) else {}
        amount, currency = cost.get("amount"), cost.get("currency")
        if (
            type(amount) in (int, float)
            and math.isfinite(amount)
            and isinstance(currency, str)
            and len(currency) <= 16
        ):
            turn.usage_meta["cost"] = {"amount": amount, "currency": currency}  # (1e400 was Infinity)
    usage = dict(turn.usage)
    if turn.usage_meta:
        usage["_meta"] = {"acp": dict(turn.usage_meta)}
    return {"type": "chat/usage", "turnId": turn.turn_id, "usage": usage}


def _count(value: Any) -> int | None:
    """``value`` when it is a count every JSON reader takes exactly (a whole number from 0 to
    2^53 - 1; a JavaScript client reads a larger one as another number), else ``None``."""
    return value if type(value) is int and 0 <= value <= MAX_SAFE_INTEGER else None


_USAGE_FIELDS = {
    "inputTokens": "inputTokens",
    "outputTokens": "outputTokens",
    "cachedReadTokens": "cacheReadTokens",
}


def on_usage(turn: TurnMap, update: dict, resolver: Resolver) -> list[dict]:
    """``usage_update`` → ``chat/usage`` with the last token counts and the context window in ``_meta``."""
    return [usage_action(turn, window=update)]


class ProtocolViolation(Exception):
    """The agent broke ACP (an unknown session, an unknown tool call, a second response, ...)."""


#: ``session/update`` kind → the function mapping it to chat actions of the current turn.
#: Session-level updates (modes, config options, commands, session info) are handled by the
#: bridge on the session, in or out of a turn; ``user_message_chunk`` (history replayed by
#: ``session/load``) is not mapped.
SESSION_UPDATES: dict[str, Callable[[TurnMap, dict, Resolver], list[dict]]] = {
    "agent_message_chunk": on_message_chunk,
    "agent_thought_chunk": on_thought_chunk,
    "tool_call": on_tool_call,
    "tool_call_update": on_tool_call_update,
    "plan": on_plan,
    "usage_update": on_usage,
}
SESSION_LEVEL_UPDATES = frozenset(
    {"current_mode_update", "config_option_update", "available_commands_update", "session_info_update"}
)
