"""View model of the tool-call timeline: one lane per tool call of a chat, with the steps that moved it.

Steps come from the transition log (:class:`ToolCallHistory`, fed incrementally): every accepted
``chat/toolCall*`` transition that changed a call's status or content, and every turn end that
force-cancelled it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from typing import Any

from ..protocol.names import (  # the tool-call states, named once
    AUTH_REQUIRED,
    CANCELLED,
    COMPLETED,
    PENDING_CONFIRMATION,
    PENDING_RESULT_CONFIRMATION,
    RUNNING,
    STREAMING,
)
from .content import status_of, tool_call_view
from .sanitize import one_line
from .statemachine import TERMINAL_STATUSES, TURN_END_ACTIONS, state_machine_model

__all__ = [
    "ToolCallHistory",
    "collect_tool_calls",
    "tool_call_key",
    "tool_call_steps",
    "next_status",
    "timeline_view_model",
]

MAX_STEPS_SHOWN = 200
BUSY_STATUSES = frozenset({"streaming", "running"})
WAITING_STATUSES = frozenset({"pending-confirmation", "pending-result-confirmation", "auth-required"})


_EMPTY: dict[str, Any] = {}


def _m(v: Any) -> Mapping[str, Any]:
    return v if type(v) is dict or isinstance(v, Mapping) else _EMPTY


def tool_call_key(turn_id: Any, tool_call_id: Any) -> str:
    """Lane key: tool-call ids are only unique within a turn."""
    return f"{turn_id}\u241f{tool_call_id}"


def _parts(turn: Any) -> list:
    p = _m(turn).get("responseParts")
    return p if isinstance(p, list) else []


def _tool_calls_of(turn: Any) -> Iterable[tuple[int, Mapping[str, Any]]]:
    # hot path (runs over every part on each sync): exact dict checks before the slow ABC check
    for i, part in enumerate(_parts(turn)):
        if (type(part) is dict or isinstance(part, Mapping)) and part.get("kind") == "toolCall":
            tc = part.get("toolCall")
            if type(tc) is dict or isinstance(tc, Mapping):
                yield i, tc


def collect_tool_calls(chat_state: Any) -> list[dict[str, Any]]:
    """Every tool call of a chat, completed turns first (oldest first), then the active turn."""
    st = _m(chat_state)
    out: list[dict[str, Any]] = []
    turns = st.get("turns")
    for turn in turns if isinstance(turns, list) else ():
        tid = _m(turn).get("id")
        for _i, tc in _tool_calls_of(turn):
            out.append({"turnId": tid, "toolCall": tc, "active": False, "turnState": _m(turn).get("state")})
    active = st.get("activeTurn")
    if isinstance(active, Mapping):
        tid = active.get("id")
        for _i, tc in _tool_calls_of(active):
            out.append({"turnId": tid, "toolCall": tc, "active": True, "turnState": None})
    return out


def next_status(status: str, action: Mapping[str, Any], mcp: bool) -> str | None:
    """The status a tool call in ``status`` moves to under ``action`` (chat-channel §7.1), or
    ``None`` when the action is a no-op for it. ``mcp`` says whether its contributor is an MCP
    server (only those can become ``auth-required``)."""
    typ = action.get("type")
    if typ == "chat/toolCallDelta":
        return STREAMING if status == STREAMING else None
    if typ == "chat/toolCallReady":
        if status not in (STREAMING, PENDING_CONFIRMATION, RUNNING):
            return None
        return RUNNING if action.get("confirmed") is not None else PENDING_CONFIRMATION
    if typ == "chat/toolCallConfirmed":
        if status != PENDING_CONFIRMATION:
            return None
        return RUNNING if action.get("approved") else CANCELLED
    if typ == "chat/toolCallComplete":
        result = action.get("result")
        success = isinstance(result, Mapping) and bool(result.get("success"))
        if status == AUTH_REQUIRED:
            return None if success else COMPLETED
        if status not in (RUNNING, PENDING_CONFIRMATION):
            return None
        return PENDING_RESULT_CONFIRMATION if action.get("requiresResultConfirmation") else COMPLETED
    if typ == "chat/toolCallResultConfirmed":
        if status != PENDING_RESULT_CONFIRMATION:
            return None
        return COMPLETED if action.get("approved") else CANCELLED
    if typ == "chat/toolCallContentChanged":
        return RUNNING if status == RUNNING else None
    if typ == "chat/toolCallAuthRequired":
        return AUTH_REQUIRED if status == RUNNING and mcp else None
    if typ == "chat/toolCallAuthResolved":
        return RUNNING if status == AUTH_REQUIRED else None
    return None


def _is_mcp(contributor: Any) -> bool:
    return isinstance(contributor, Mapping) and contributor.get("kind") == "mcp"


def _refine_is_mcp(current_mcp: bool, current_client: bool, nxt: Any) -> bool:
    # chat-channel §6.4: a client-owned call stays client-owned; otherwise an MCP contributor sticks
    if not isinstance(nxt, Mapping) or current_client:
        return current_mcp
    return True if nxt.get("kind") == "mcp" else current_mcp


class ToolCallHistory:
    """Incremental index of tool-call steps from the transition log.

    ``feed(t)`` for each transition in order; ``steps(channel, key)`` gives the recorded steps of
    one call: ``{"seq", "seqEnd", "count", "action", "from", "to", "time", "origin"}`` (``from`` is
    ``None`` for the start; consecutive content-only steps are merged, counting them).

    Statuses follow the transition table of chat-channel §7.1 applied to the recorded actions, so
    the log's states are never replayed (a long log indexes in milliseconds); a channel whose
    first transition finds an active turn already in progress is seeded from that transition's
    ``before`` state, once.
    """

    def __init__(self) -> None:
        self._steps: dict[tuple[str, str], list[dict[str, Any]]] = {}
        # per call: [status, is_mcp, is_client]
        self._calls: dict[tuple[str, str], list[Any]] = {}
        self._turn_calls: dict[tuple[str, Any], list[str]] = {}
        self._active: dict[str, Any] = {}  # channel -> active turn id (None: no active turn)
        self._done_turns: dict[str, list[Any]] = {}  # channel -> completed turn ids, oldest first
        self.fed = 0
        self.seq_min: dict[str, int] = {}
        self.seq_max: dict[str, int] = {}

    def steps(self, channel: str, key: str) -> list[dict[str, Any]]:
        return self._steps.get((channel, key), [])

    def _record(self, channel: str, key: str, step: dict[str, Any]) -> None:
        lst = self._steps.setdefault((channel, key), [])
        if lst and step["from"] == step["to"]:
            last = lst[-1]
            if last["from"] == last["to"] == step["to"] and last["action"] == step["action"]:
                last["seqEnd"] = step["seq"]
                last["count"] += 1
                return
        lst.append(step)
        s = step["seq"]
        if isinstance(s, int):
            self.seq_min.setdefault(channel, s)
            self.seq_max[channel] = max(self.seq_max.get(channel, s), s)

    def feed(self, t: Any) -> None:
        self.fed += 1
        with contextlib.suppress(Exception):  # a malformed record never breaks the view
            self._feed(t)

    def _seed(self, channel: str, t: Any) -> None:
        """First sight of a chat channel: learn its active turn (and its calls) from ``before``."""
        self._active[channel] = None
        before = getattr(t, "before", None)
        active = before.get("activeTurn") if isinstance(before, Mapping) else None
        if not isinstance(active, Mapping):
            return
        tid = active.get("id")
        self._active[channel] = tid
        for _i, tc in _tool_calls_of(active):
            key = tool_call_key(tid, tc.get("toolCallId"))
            contributor = tc.get("contributor")
            is_client = isinstance(contributor, Mapping) and contributor.get("kind") == "client"
            self._calls[(channel, key)] = [status_of(tc), _is_mcp(contributor), is_client]
            self._turn_calls.setdefault((channel, tid), []).append(key)
        turns = before.get("turns")
        self._done_turns[channel] = [
            tt.get("id") for tt in (turns if isinstance(turns, list) else ()) if isinstance(tt, Mapping)
        ]

    def _feed(self, t: Any) -> None:
        if getattr(t, "rejection_reason", None):
            return
        action = getattr(t, "action", None)
        if not isinstance(action, Mapping):
            return
        typ = action.get("type")
        if not isinstance(typ, str) or not typ.startswith("chat/"):
            return
        channel = str(getattr(t, "channel", ""))
        if channel not in self._active:
            self._seed(channel, t)
        active = self._active[channel]
        turn_id = action.get("turnId")
        seq = getattr(t, "seq", None)

        def step(frm: str | None, to: str) -> dict[str, Any]:
            return {
                "seq": seq,
                "seqEnd": seq,
                "count": 1,
                "action": typ,
                "from": frm,
                "to": to,
                "time": getattr(t, "wall_time", None),
                "origin": _origin_label(getattr(t, "origin", None)),
            }

        if typ == "chat/turnStarted":
            self._active[channel] = turn_id
        elif typ in TURN_END_ACTIONS:
            if active is None or active != turn_id:
                return
            for key in self._turn_calls.get((channel, turn_id), ()):
                call = self._calls.get((channel, key))
                if call is None or call[0] in TERMINAL_STATUSES:
                    continue
                self._record(channel, key, step(call[0], CANCELLED))
                call[0] = CANCELLED
            self._active[channel] = None
            self._done_turns.setdefault(channel, []).append(turn_id)
        elif typ == "chat/truncated":
            done = self._done_turns.setdefault(channel, [])
            if turn_id is None:
                done.clear()
                self._active[channel] = None
            elif turn_id in done:
                del done[done.index(turn_id) + 1 :]
                self._active[channel] = None
        elif typ == "chat/turnsLoaded":
            turns = action.get("turns")
            done = self._done_turns.setdefault(channel, [])
            loaded = [
                tt.get("id") for tt in (turns if isinstance(turns, list) else ()) if isinstance(tt, Mapping)
            ]
            done[:0] = [i for i in loaded if i not in done]
        elif typ == "chat/toolCallStart":
            if active is None or active != turn_id:
                return
            key = tool_call_key(turn_id, action.get("toolCallId"))
            contributor = action.get("contributor")
            is_client = isinstance(contributor, Mapping) and contributor.get("kind") == "client"
            self._calls[(channel, key)] = [STREAMING, _is_mcp(contributor), is_client]
            self._turn_calls.setdefault((channel, turn_id), []).append(key)
            self._record(channel, key, step(None, STREAMING))
        elif typ.startswith("chat/toolCall"):
            if active is None or active != turn_id:
                return
            key = tool_call_key(turn_id, action.get("toolCallId"))
            call = self._calls.get((channel, key))
            if call is None:
                return
            nxt = next_status(call[0], action, call[1])
            if nxt is None:
                return
            if (
                typ == "chat/toolCallDelta"
                and action.get("content") is None
                and action.get("invocationMessage") is None
            ):
                return  # nothing visible changed
            if typ == "chat/toolCallReady":
                call[1] = _refine_is_mcp(call[1], call[2], action.get("contributor"))
            self._record(channel, key, step(call[0], nxt))
            call[0] = nxt


def _origin_label(origin: Any) -> str:
    o = _m(origin)
    kind = o.get("kind")
    if kind == "client":
        return f"client {one_line(o.get('clientId'), 60)}"
    if kind == "agent":
        return f"agent {one_line(o.get('name'), 60)}"
    if kind == "host" or not o:
        return "host"
    return one_line(kind, 40)


def tool_call_steps(transitions: Iterable[Any], channel: str) -> dict[str, list[dict[str, Any]]]:
    """Pure form of :class:`ToolCallHistory`: steps per lane key for one chat channel."""
    h = ToolCallHistory()
    for t in transitions:
        h.feed(t)
    return {key: steps for (ch, key), steps in h._steps.items() if ch == channel}


def _segments(steps: list[dict[str, Any]], status: str) -> list[dict[str, Any]]:
    segs: list[dict[str, Any]] = []
    for s in steps:
        if s["from"] == s["to"] and segs:
            continue
        if segs and segs[-1]["status"] == s["to"]:
            continue
        segs.append({"seq": s["seq"], "status": one_line(s["to"], 60)})
    if not segs or segs[-1]["status"] != status:
        segs.append({"seq": steps[-1]["seqEnd"] if steps else None, "status": status})
    return segs[-40:]


def _norm_step(s: Any) -> dict[str, Any] | None:
    if not isinstance(s, Mapping) or not isinstance(s.get("to"), str):
        return None
    frm = s.get("from")
    seq = s.get("seq") if isinstance(s.get("seq"), int) and not isinstance(s.get("seq"), bool) else None
    seq_end = (
        s.get("seqEnd") if isinstance(s.get("seqEnd"), int) and not isinstance(s.get("seqEnd"), bool) else seq
    )
    count = s.get("count") if isinstance(s.get("count"), int) and not isinstance(s.get("count"), bool) else 1
    return {
        "seq": seq,
        "seqEnd": seq_end,
        "count": count,
        "action": s.get("action") if isinstance(s.get("action"), str) else "",
        "from": frm if isinstance(frm, str) else None,
        "to": s["to"],
        "time": s.get("time") if isinstance(s.get("time"), (int, float)) else None,
        "origin": s.get("origin") if isinstance(s.get("origin"), str) else "",
    }


def _steps_until(steps: Any, at_seq: int | None) -> list[dict[str, Any]]:
    out = []
    for raw in steps if isinstance(steps, list) else ():
        s = (
            raw
            if isinstance(raw, dict)
            and raw.keys() >= {"seq", "seqEnd", "count", "action", "from", "to", "time"}
            else _norm_step(raw)
        )
        if s is None:
            continue
        if at_seq is not None and isinstance(s["seq"], int) and s["seq"] > at_seq:
            continue
        out.append(s)
    return out


def timeline_view_model(
    chat_state: Any,
    history: ToolCallHistory | Mapping[str, list[dict[str, Any]]] | None = None,
    *,
    channel: str = "",
    start: int = 0,
    count: int = 60,
    selected: str | None = None,
    limits: Mapping[str, int] | None = None,
    at_seq: int | None = None,
    read_only: bool = False,
    calls: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Lanes ``[start, start+count)`` of the chat's tool calls plus the selected call's detail.

    ``history`` is a :class:`ToolCallHistory` (or a mapping key → steps from
    :func:`tool_call_steps`); ``at_seq`` hides steps after that seq (time travel); ``calls`` is
    ``collect_tool_calls(chat_state)`` when the caller already has it.
    """
    if calls is None:
        calls = collect_tool_calls(chat_state)
    total = len(calls)
    count = max(0, min(int(count), 500))
    start = max(0, min(int(start), max(0, total - 1)))

    def steps_for(key: str) -> list[dict[str, Any]]:
        if isinstance(history, ToolCallHistory):
            return _steps_until(history.steps(channel, key), at_seq)
        if isinstance(history, Mapping):
            return _steps_until(history.get(key), at_seq)
        return []

    lanes = []
    for idx in range(start, min(total, start + count)):
        c = calls[idx]
        tc = c["toolCall"]
        key = tool_call_key(c["turnId"], tc.get("toolCallId"))
        steps = steps_for(key)
        status = one_line(status_of(tc), 60)
        lane = tool_call_view(tc, key, limits, full=False)
        lane.update(
            {
                "index": idx,
                "key": key,
                "turnId": one_line(c["turnId"], 200),
                "active": c["active"],
                "segments": _segments(steps, status),
                "firstSeq": steps[0]["seq"] if steps else None,
                "lastSeq": steps[-1]["seqEnd"] if steps else None,
                "busy": status in BUSY_STATUSES,
                "waiting": status in WAITING_STATUSES,
                "stepCount": sum(s["count"] for s in steps),
            }
        )
        lanes.append(lane)

    if isinstance(history, ToolCallHistory):
        lo, hi = history.seq_min.get(channel), history.seq_max.get(channel)
    else:
        all_seqs = [
            s["seq"]
            for lst in (history or {}).values()
            for s in _steps_until(lst, None)
            if isinstance(s["seq"], int)
        ]
        lo, hi = (min(all_seqs), max(all_seqs)) if all_seqs else (None, None)
    if at_seq is not None and hi is not None:
        hi = min(hi, at_seq)

    detail = None
    if selected:
        for c in calls:
            tc = c["toolCall"]
            key = tool_call_key(c["turnId"], tc.get("toolCallId"))
            if key != selected:
                continue
            steps = steps_for(key)
            status = status_of(tc)
            detail = tool_call_view(tc, key, limits, full=True)
            detail.update(
                {
                    "key": key,
                    "turnId": one_line(c["turnId"], 200),
                    "active": c["active"],
                    "steps": [
                        {
                            **s,
                            "from": s["from"],
                            "action": one_line(s["action"], 80),
                            "time": s["time"] if isinstance(s["time"], (int, float)) else None,
                        }
                        for s in steps[-MAX_STEPS_SHOWN:]
                    ],
                    "stepsOmitted": max(0, len(steps) - MAX_STEPS_SHOWN),
                    "machine": state_machine_model(steps, status),
                }
            )
            break
    return {
        "total": total,
        "start": start,
        "count": count,
        "lanes": lanes,
        "axis": {"min": lo, "max": hi},
        "selected": selected if detail is not None else None,
        "detail": detail,
        "readOnly": bool(read_only),
        "counts": _status_counts(calls),
    }


def _status_counts(calls: list[dict[str, Any]]) -> dict[str, int]:
    """Calls by status, a completed call that failed counted as ``failed``, as its row's badge
    says (the header read "5 completed" above a row marked failed)."""
    out: dict[str, int] = {}
    for c in calls:
        tc = c["toolCall"]
        st = tc.get("status")
        st = st if type(st) is str else "unknown"
        if st == "completed" and tc.get("success") is False:
            st = "failed"
        out[st] = out.get(st, 0) + 1
    return out
