"""Pure functions the host uses to keep the session channel in step with its chats.

* ``session/chatUpdated`` mirrors a chat's summary fields into ``SessionState.chats``;
* ``session/inputNeededSet|Removed`` mirror blocking chat conditions into ``SessionState.inputNeeded``
  (session-channel §5);
* the catalogue ``SessionSummary`` aggregates status across chats (session-channel §6).
"""

from __future__ import annotations

from typing import Any

from ..protocol.jsonvalue import to_json
from ..reducers.chat import tool_call_parts

SUMMARY_KEYS = (
    "resource",
    "title",
    "status",
    "activity",
    "modifiedAt",
    "origin",
    "interactivity",
    "workingDirectories",
)
ACTIVITY_MASK = 0x1F
IDLE, ERROR, IN_PROGRESS, INPUT_NEEDED = 1, 2, 8, 24


def chat_summary(chat: dict) -> dict:
    """The ``ChatSummary`` of a chat state."""
    return {k: chat[k] for k in SUMMARY_KEYS if chat.get(k) is not None}


def summary_changes(summary: dict | None, chat: dict) -> dict:
    """Keys of the chat's summary that differ from ``summary`` (removed keys map to ``None``)."""
    summary = summary or {}
    changes: dict[str, Any] = {}
    for key in SUMMARY_KEYS:
        if key == "resource":
            continue
        new, old = chat.get(key), summary.get(key)
        if new != old:
            changes[key] = new
    return changes


def entry_id(chat: str, local_id: str) -> str:
    return f"{chat}#{local_id}"


def input_needed_for_chat(chat_uri: str, chat: dict) -> dict[str, dict]:
    """The ``SessionInputRequest`` entries a chat's active turn calls for, keyed by entry id."""
    active = chat.get("activeTurn") if isinstance(chat, dict) else None
    if not isinstance(active, dict):
        return {}
    out: dict[str, dict] = {}
    for part in active.get("responseParts") or ():
        if not isinstance(part, dict):
            continue
        kind = part.get("kind")
        if kind == "inputRequest" and part.get("response") is None and isinstance(part.get("request"), dict):
            request = part["request"]
            eid = entry_id(chat_uri, f"input:{request.get('id')}")
            out[eid] = {"kind": "chatInput", "id": eid, "chat": chat_uri, "request": to_json(request)}
        elif kind == "toolCall" and isinstance(part.get("toolCall"), dict):
            entry = _tool_call_entry(chat_uri, active.get("id"), part["toolCall"])
            if entry is not None:
                out[entry["id"]] = entry
    return out


def asks_nobody(action: dict) -> bool:
    """Whether ``action`` is a ``chat/responsePart`` appending a part nobody answers (text,
    reasoning, a content reference): the turn's ``inputNeeded`` entries stand as they were. Each
    of a long turn's parts read the whole turn again (10,000 streamed parts: 23 s, the loop held
    5 s at a time: ACP round 16; now 5.6 s and 0.65 s, the agent's own work)."""
    if action.get("type") != "chat/responsePart":
        return False
    part = action.get("part")
    return not isinstance(part, dict) or part.get("kind") not in ("toolCall", "inputRequest")


def _tool_call_entry(chat_uri: str, turn_id: Any, tc: dict) -> dict | None:
    """The entry a tool call in this state calls for (``None``: it needs nobody)."""
    status = tc.get("status")
    contributor = tc.get("contributor") or {}
    if status in ("pending-confirmation", "pending-result-confirmation"):
        kind = "toolConfirmation"
    elif status == "auth-required":
        kind = "toolAuthentication"
    elif status == "running" and contributor.get("kind") == "client":
        kind = "toolClientExecution"
    else:
        return None  # most calls: no copy of the call is made
    eid = entry_id(chat_uri, str(tc.get("toolCallId")))
    entry = {"kind": kind, "id": eid, "chat": chat_uri, "turnId": turn_id, "toolCall": to_json(tc)}
    if kind == "toolClientExecution":
        entry["clientId"] = contributor.get("clientId")
    return entry


def _comparable(entry: dict) -> dict:
    """An entry without the live fields that change while a call runs (they are not worth a re-set)."""
    if entry.get("kind") != "toolClientExecution":
        return entry
    tc = {k: v for k, v in entry["toolCall"].items() if k not in ("content", "_meta")}
    return {**entry, "toolCall": tc}


def input_needed_actions(
    chat_uri: str, chat: dict, session: dict, tool_call_id: str | None = None
) -> list[dict]:
    """``session/inputNeededSet|Removed`` actions that bring the session in line with the chat.

    With ``tool_call_id`` (an action changed that call only), only that call's entry is brought in
    line: the rest of a long turn is not read again.
    """
    if tool_call_id is None:
        wanted = input_needed_for_chat(chat_uri, chat)
        only = None
    else:
        only = entry_id(chat_uri, tool_call_id)
        wanted = {}
        active = chat.get("activeTurn") if isinstance(chat, dict) else None
        for part in tool_call_parts(active, tool_call_id) if isinstance(active, dict) else ():
            entry = _tool_call_entry(chat_uri, active.get("id"), part["toolCall"])
            if entry is not None:  # the last call with the id that needs someone, as a full scan
                wanted[only] = entry
    current = {
        e.get("id"): e
        for e in (session.get("inputNeeded") or ())
        if isinstance(e, dict) and e.get("chat") == chat_uri and (only is None or e.get("id") == only)
    }
    actions: list[dict] = []
    for eid in current:
        if eid not in wanted:
            actions.append({"type": "session/inputNeededRemoved", "id": eid})
    for eid, entry in wanted.items():
        old = current.get(eid)
        if old is None or _comparable(to_json(old)) != _comparable(entry):
            actions.append({"type": "session/inputNeededSet", "request": entry})
    return actions


def aggregate_status(session: dict, chats: dict[str, dict]) -> tuple[int, str | None]:
    """Catalogue status and activity of a session from its chats (session-channel §6)."""
    flags = int(session.get("status") or 0) & ~ACTIVITY_MASK
    default = chats.get(session.get("defaultChat") or "")
    if default is None and chats:
        default = max(chats.values(), key=lambda c: c.get("modifiedAt") or "")
    source = default or {}
    activity_bits = int(source.get("status") or IDLE) & ACTIVITY_MASK
    activity = source.get("activity")
    # promoted by the first chat that needs input, then by the first in error, each only when the
    # source is not there already: the activity is the chat's that supplied the bits (the default
    # chat's when it needs input itself, not another's that does too)
    for promoted in (INPUT_NEEDED, ERROR):
        if activity_bits in (promoted, ERROR):
            continue
        for chat in chats.values():
            if int(chat.get("status") or 0) & ACTIVITY_MASK == promoted:
                activity_bits, activity = promoted, chat.get("activity")
                break
    return flags | (activity_bits or IDLE), activity
