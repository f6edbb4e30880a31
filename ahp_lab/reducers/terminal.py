"""Terminal channel reducer: output stream, commands (shell integration), claim, size, title."""

from __future__ import annotations

from ..protocol.text import append_text
from ._util import as_list, make_reducer, put, put_many, replace_at, set_field


def _data(state, action, now_ms):
    data = action.get("data")
    if not isinstance(data, str):
        return state
    content = as_list(state.get("content"))
    tail = content[-1] if content else None
    appendable = isinstance(tail, dict) and (
        tail.get("type") == "unclassified" or (tail.get("type") == "command" and not tail.get("isComplete"))
    )
    if appendable and not data:
        return state
    if isinstance(tail, dict) and tail.get("type") == "command" and not tail.get("isComplete"):
        tail = put(tail, "output", append_text(tail.get("output") or "", data))
    elif isinstance(tail, dict) and tail.get("type") == "unclassified":
        tail = put(tail, "value", append_text(tail.get("value") or "", data))
    else:
        return put(state, "content", [*content, {"type": "unclassified", "value": data}])
    return put(state, "content", replace_at(content, len(content) - 1, tail))


def _command_executed(state, action, now_ms):
    part = {
        "type": "command",
        "commandId": action.get("commandId"),
        "commandLine": action.get("commandLine"),
        "output": "",
        "timestamp": action.get("timestamp"),
        "isComplete": False,
    }
    part = {k: v for k, v in part.items() if v is not None}
    return put_many(state, content=[*as_list(state.get("content")), part], supportsCommandDetection=True)


def _command_finished(state, action, now_ms):
    content = as_list(state.get("content"))
    command_id = action.get("commandId")
    out, changed = list(content), False
    for i, part in enumerate(content):
        if isinstance(part, dict) and part.get("type") == "command" and part.get("commandId") == command_id:
            out[i] = put_many(
                part, isComplete=True, exitCode=action.get("exitCode"), durationMs=action.get("durationMs")
            )
            changed = True
    return put(state, "content", out) if changed else state


reduce_terminal = make_reducer(
    "terminal",
    {
        "terminal/data": _data,
        "terminal/input": lambda s, a, n: s,
        "terminal/resized": lambda s, a, n: put_many(s, cols=a.get("cols"), rows=a.get("rows")),
        "terminal/claimed": set_field("claim"),
        "terminal/titleChanged": set_field("title"),
        "terminal/cwdChanged": set_field("cwd"),
        "terminal/exited": set_field("exitCode"),
        "terminal/cleared": lambda s, a, n: put(s, "content", []),
        "terminal/commandDetectionAvailable": lambda s, a, n: put(s, "supportsCommandDetection", True),
        "terminal/commandExecuted": _command_executed,
        "terminal/commandFinished": _command_finished,
    },
)
