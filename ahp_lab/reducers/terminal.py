"""Terminal channel reducer: output stream, commands (shell integration), claim, size, title."""

from __future__ import annotations

from ..protocol.text import Text
from ._js import array_from, json_plus, key, spread, truthy
from ._util import array_of, make_reducer, member, put, put_many, replace_at, set_field


def _data(state, action, now_ms):
    # As the reference: the tail command's output or the unclassified tail's value grows by
    # JavaScript ``+`` (so a missing value reads "undefined"), else a new unclassified part.
    content = array_from(state.get("content"))
    data = action.get("data")
    tail = content[-1] if content else None
    if truthy(tail) and member(tail, "type") == "command" and not truthy(member(tail, "isComplete")):
        field = "output"
    elif truthy(tail) and member(tail, "type") == "unclassified":
        field = "value"
    else:
        field = None
    if field is not None:
        old = member(tail, field)
        if data == "" and isinstance(old, (str, Text)):
            return state  # the same text: nothing to copy
        tail = put(spread(tail), field, json_plus(old, data))
    else:
        part = {"type": "unclassified"} if data is None else {"type": "unclassified", "value": data}
        return put(state, "content", [*content, part])
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
    return put_many(state, content=[*array_from(state.get("content")), part], supportsCommandDetection=True)


def _command_finished(state, action, now_ms):
    content = array_of(state.get("content"))  # the reference maps over it
    wanted = key(action.get("commandId"))
    out = [
        put_many(
            spread(part),
            isComplete=True,
            exitCode=action.get("exitCode"),
            durationMs=action.get("durationMs"),
        )
        if member(part, "type") == "command" and key(member(part, "commandId")) == wanted
        else part
        for part in content
    ]
    if all(new is old for new, old in zip(out, content, strict=True)):
        return state  # no command with that id
    return put(state, "content", out)


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
