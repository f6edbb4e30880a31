"""Every limit the host enforces, in one place (DESIGN decision 10).

A :class:`Limits` value bounds what one connection, one message and one customization can make
the host hold or do. The defaults suit a local workbench; ``Lab(limits=...)`` or
``Host(limits=...)`` changes them (a :class:`Limits`, or a mapping of field names to values)::

    Lab(limits={"max_string_chars": 4_000_000, "max_folder_files": 50_000})

The same limits apply on every entry path: the wire (any connection), cells (``lab.dispatch``,
``lab.send``) and widgets, because all of them reach the host as JSON-RPC messages and actions.
:func:`check_json` is the one walk that checks a JSON value against them (nesting depth, string
length, lone surrogates, non-finite numbers, overall size); :func:`nesting_exceeds` and
:func:`items_exceed` guard the JSON parser itself, before it can recurse too deep or spend long
on a frame of tiny values; :func:`truncated` is the short form in which a
rejected payload is kept in the log.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable, Mapping
from itertools import accumulate
from typing import Any

from .errors import ProtocolError, json_type_name, path_step
from .text import Text

__all__ = [
    "Limits",
    "LimitError",
    "DEFAULT_LIMITS",
    "ENVELOPE_DEPTH",
    "MAX_SAFE_INTEGER",
    "check_json",
    "check_text",
    "clipped",
    "cut_noted",
    "items_exceed",
    "nesting_exceeds",
    "truncated",
    "valid_request_id",
    "valid_seq",
]

#: The largest integer every JSON implementation represents exactly (2^53 - 1): the range of
#: JSON-RPC ids and ``clientSeq``.
MAX_SAFE_INTEGER = 2**53 - 1
#: Levels a JSON-RPC message adds around a payload (message → params → action → …): the frame
#: guard allows ``max_depth + ENVELOPE_DEPTH`` so that a payload at the limit still arrives.
ENVELOPE_DEPTH = 8
_MAX_ID_CHARS = 256


@dataclasses.dataclass(frozen=True)
class Limits:
    """Bounds on what the host accepts; every field is documented in ``docs/security.md``.

    Sizes are in characters of JSON text (what a message carries), times in seconds.
    """

    #: One JSON-RPC message (one WebSocket frame); larger messages are refused unread.
    max_message_bytes: int = 16 * 1024 * 1024
    #: Items in one JSON-RPC message: its values and object keys, counted from its commas, colons
    #: and opening brackets before it is parsed (an empty array or object counts twice). Parsing
    #: and checking cost time per item, which a frame of tiny values packs densely: 5 million
    #: ``[]`` in one 14.6 MB frame held the host's loop 7 s. Larger messages are refused unread.
    #: The notebook's own connection is not bounded by it.
    max_message_items: int = 250_000
    #: Arrays and objects in one action: checking and normalizing an action costs some
    #: microseconds for each (an action of 245,000 nested empty arrays, 0.5 MB, held the host's
    #: loop 1.5 s), where a plain value costs a tenth of that.
    max_action_containers: int = 25_000
    #: Nesting of one command's params or one action (objects and arrays count one level each).
    max_depth: int = 64
    #: Length of any one string in params or actions (a title, a message text, a tool result block).
    max_string_chars: int = 1_000_000
    #: A tool call's result (or streamed content) as JSON text.
    max_tool_result_bytes: int = 4 * 1024 * 1024
    #: One top-level customization entry as JSON text (a plugin with all its children).
    max_customization_entry_bytes: int = 2 * 1024 * 1024
    #: One customization file (skill, agent, rule, manifest, hooks or MCP configuration).
    max_customization_file_bytes: int = 1_000_000
    #: The YAML frontmatter of one markdown customization file.
    max_frontmatter_bytes: int = 64 * 1024
    #: YAML aliases (``*name``) in one frontmatter; the expanded value may also be at most four
    #: times ``max_frontmatter_bytes``.
    max_yaml_aliases: int = 100
    #: Files the host looks at in one plugin, watched folder or client-published plugin.
    max_folder_files: int = 2_000
    #: Channels one connection may be subscribed to at once.
    max_subscriptions: int = 256
    #: Sessions and chats that clients other than the notebook have created and not disposed
    #: (each session starts the configured MCP servers, so this also bounds processes).
    max_client_channels: int = 64
    #: Of those, the sessions whose agent runs as a process of its own or that start the person's
    #: MCP servers (one stranger's 64 sessions started 122 processes holding 6.6 GiB).
    max_client_process_sessions: int = 16
    #: Plugins one client may publish in its ``activeClient.customizations``: the host reads each
    #: (up to ``max_message_bytes``) and keeps what it resolved.
    max_client_plugins: int = 16
    #: The files the host reads of the plugins one client publishes, in all sessions together (it
    #: keeps what it resolved of them); past it, a plugin's further files are not read and its
    #: load says so. One stranger publishing 16 plugins of 15 one-megabyte files in each of 12
    #: sessions held the host at 2 GB.
    max_client_plugin_bytes: int = 64 * 1024 * 1024
    #: The same, for every client other than the notebook together.
    max_client_plugin_bytes_total: int = 512 * 1024 * 1024
    #: Client tools a session may hold, all its active clients together, when a client other than
    #: the notebook publishes: the agent reads each tool's name for every turn, and 16 clients of
    #: 12,000 tools held the host's loop 4.5 s a turn.
    max_client_tools: int = 2_000
    #: Requests of one connection the host is still working on (further ones are refused).
    max_pending_requests: int = 64
    #: Characters one connection's requests may make the host send per second: the answers
    #: (snapshots, listings, file reads) and the actions they broadcast to every subscriber
    #: (``fetchTurns``'s ``chat/turnsLoaded``), after a burst of four seconds' worth. Past it, that
    #: connection's next requests wait their turn (as pending requests), and after a
    #: ``dispatchAction`` (charged for its broadcast) nothing more is read from it until the budget
    #: refills; others are not slowed.
    #: The notebook's own connection is not bounded.
    max_request_bytes_per_s: int = 8 * 1024 * 1024
    #: Messages queued for one WebSocket peer that has stopped reading; past this the peer is
    #: disconnected with a reason (it can reconnect and replay) and the others are not slowed.
    max_send_buffer_bytes: int = 16 * 1024 * 1024
    #: What the WebSocket server holds for all its peers together (messages queued and not yet
    #: taken by their sockets). A message of 1 MiB or more that would take it past this is not
    #: queued: that peer is closed (1013, try again later) with the reason. One snapshot a peer
    #: never reads is no backlog for ``max_send_buffer_bytes``: 40 strangers subscribing to a
    #: 140 MB chat and reading nothing held the host at 15 GB.
    max_unsent_bytes_total: int = 1024 * 1024 * 1024
    #: The transition log: about this many bytes of recorded actions, origins and reasons. Past
    #: it the oldest transitions are dropped (time travel and export then start later), so a
    #: stream of large or rejected actions cannot grow the host's memory without bound.
    max_log_bytes: int = 256 * 1024 * 1024
    #: A rejected action is kept in the log (and echoed) cut to about this many characters.
    max_logged_action_chars: int = 2_000
    #: ``resourceRead`` of one file.
    max_read_bytes: int = 8 * 1024 * 1024
    #: A file ``resourceWrite`` may produce.
    max_write_bytes: int = 8 * 1024 * 1024
    #: Content agents hand the host for ``resourceRead`` (diff sides, images), in total.
    max_agent_content_bytes: int = 64 * 1024 * 1024
    #: What connections other than the notebook's add to chats (messages, queued messages, their
    #: tools' deltas and results, answers), as JSON text, in total over the host's chats: past it,
    #: such additions are refused with a reason until a truncation or a disposed chat frees room.
    max_client_content_bytes: int = 256 * 1024 * 1024
    #: Messages a chat's queue holds (``queuedMessages``): a new one past it is refused, since each
    #: queued message costs every later ``chat/pendingMessageSet`` a walk of the queue (20,000
    #: one-character messages held the host's loop 7 s, far under the content budget).
    max_queued_messages: int = 1000
    #: Terminals an agent may have running in one session (ACP ``terminal/create``).
    max_agent_terminals: int = 16
    #: Output kept per agent terminal (its tail), and put into the terminal channel's state.
    max_terminal_output_bytes: int = 1024 * 1024
    #: Seconds the live holder of a client id has to answer a WebSocket ping when another
    #: connection claims that id; a holder that does not answer is closed and the newcomer takes over.
    identity_grace_s: float = 2.0

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"Limits.{f.name} must be a positive number, got {value!r}")
            if f.type == "int" and not isinstance(value, int):
                raise ValueError(f"Limits.{f.name} must be an integer, got {value!r}")

    @classmethod
    def of(cls, value: Limits | Mapping[str, Any] | None) -> Limits:
        """``value`` as :class:`Limits`: ``None`` gives the defaults, a mapping overrides fields."""
        if value is None:
            return DEFAULT_LIMITS
        if isinstance(value, Limits):
            return value
        if isinstance(value, Mapping):
            known = {f.name for f in dataclasses.fields(cls)}
            unknown = sorted(set(value) - known)
            if unknown:
                raise ValueError(f"unknown limit {unknown[0]!r}; known limits: {', '.join(sorted(known))}")
            return cls(**dict(value))
        raise TypeError(f"limits must be a Limits or a mapping, not {type(value).__name__}")

    def replace(self, **changes: Any) -> Limits:
        """A copy with some limits changed."""
        return dataclasses.replace(self, **changes)


DEFAULT_LIMITS = Limits()


class LimitError(ProtocolError):
    """A value that breaks a limit or cannot travel as JSON; the message names the field and rule."""


def _path(node: Any) -> str:
    parts: list[Any] = []
    while node is not None:
        node, key = node
        parts.append(key)
    out = ""
    for key in reversed(parts):
        out = path_step(out, key)
    return out


def _fail(subject: str | None, node: Any, rule: str, code: str) -> LimitError:
    path = _path(node) or None
    prefix = f"{subject}: " if subject else ""
    message = f"{prefix}field '{path}' {rule}" if path else f"{prefix}{rule}"
    return LimitError(message, field=path, rule=rule, subject=subject, code=code)


def _string_problem(value: str, max_chars: int) -> tuple[str, str] | None:
    if len(value) > max_chars:
        return f"is {len(value):,} characters long, over the limit of {max_chars:,}", "too_long"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            bad = value[exc.start]
            return (
                f"contains a lone surrogate (U+{ord(bad):04X} at index {exc.start}), which is not valid Unicode",
                "surrogate",
            )
    return None


def check_text(value: str, limits: Limits = DEFAULT_LIMITS, subject: str | None = None) -> None:
    """Check one string against :func:`check_json`'s string rules."""
    problem = _string_problem(value, limits.max_string_chars)
    if problem is not None:
        raise _fail(subject, None, *problem)


#: Integers from this magnitude on round to Infinity in a double, as every JSON peer but Python
#: reads numbers (the midpoint between the largest double and 2^1024 rounds up).
_DOUBLE_LIMIT = 2**1024 - 2**970
_OUT_OF_RANGE = "must be a finite number, got an integer beyond the range of a double (about 1.8e308)"


def check_json(
    value: Any,
    limits: Limits = DEFAULT_LIMITS,
    subject: str | None = None,
    *,
    max_depth: int | None = None,
    max_chars: int | None = None,
    max_containers: int | None = None,
) -> int:
    """Check that ``value`` is JSON within ``limits``; returns its approximate size in characters.

    Rules: only JSON types (``dict`` with string keys, ``list``/``tuple``, ``str``, finite numbers
    (integers too: one that a double rounds to Infinity is refused), ``bool``, ``None``); nesting at
    most ``max_depth`` (default ``limits.max_depth``); every string (keys included) at most
    ``limits.max_string_chars`` characters and valid Unicode (no lone surrogates); the whole at most
    ``max_chars`` (default ``limits.max_message_bytes``); at most ``max_containers`` arrays and
    objects when given. Raises :class:`LimitError` naming the first offending field. The walk is iterative, so a value nested far too deep is reported, not a
    ``RecursionError``.
    """
    depth_cap = limits.max_depth if max_depth is None else max_depth
    size_cap = limits.max_message_bytes if max_chars is None else max_chars
    max_str = limits.max_string_chars
    size = 0
    containers = -1 if max_containers is None else max_containers  # left to take; -1: no bound
    stack: list[tuple[Any, int, Any]] = [(value, 1, None)]
    pop, push = stack.pop, stack.append
    while stack:
        v, depth, node = pop()
        t = type(v)
        if t is str:
            size += len(v) + 2
            if len(v) > max_str or not v.isascii():
                problem = _string_problem(v, max_str)
                if problem is not None:
                    raise _fail(subject, node, *problem)
        elif t is dict or t is list or t is tuple:
            if depth > depth_cap:
                raise _fail(subject, node, f"nests deeper than {depth_cap} levels", "too_deep")
            if not containers:
                raise _too_many_containers(subject, max_containers)
            containers -= 1
            if t is dict:
                size += 2
                for k in v:
                    if type(k) is not str:
                        raise _fail(
                            subject, node, f"has a {json_type_name(k)} key; JSON keys are strings", "type"
                        )
                    size += len(k) + 3
                    if len(k) > max_str or not k.isascii():
                        problem = _string_problem(k, max_str)
                        if problem is not None:
                            raise _fail(subject, (node, k[:40]), *problem)
                members: Any = v.items()
            else:
                size += 2 + len(v)
                members = enumerate(v)
            for step, item in members:
                # a plain leaf that passes is counted in place (most items: a walk of a million
                # pushed as many tuples); anything else is pushed and checked as it is popped
                ti = type(item)
                if ti is str:
                    if len(item) <= max_str and item.isascii():
                        size += len(item) + 2
                        continue
                elif ti is int:
                    if -_DOUBLE_LIMIT < item < _DOUBLE_LIMIT:
                        size += 5
                        continue
                elif ti is bool or item is None:
                    size += 5
                    continue
                push((item, depth + 1, (node, step)))
        elif t is int:
            if not -_DOUBLE_LIMIT < v < _DOUBLE_LIMIT:
                raise _fail(subject, node, _OUT_OF_RANGE, "nan")
            size += 5
        elif t is bool or v is None:
            size += 5
        elif t is float:
            if not math.isfinite(v):
                raise _fail(subject, node, "must be a finite number, got float", "nan")
            size += 8
        elif isinstance(v, (str, Text)):  # str subclasses, and Text (appended text in states)
            stack.append((str(v), depth, node))
            continue
        elif isinstance(v, int) and not isinstance(v, bool):  # an int subclass: checked as an int
            stack.append((int(v), depth, node))
            continue
        else:
            raise _fail(subject, node, f"is a {type(v).__name__}, which JSON cannot carry", "type")
        if size > size_cap:
            raise _fail(subject, None, f"is over the size limit of {size_cap:,} characters", "too_large")
    if size > size_cap:  # leaves counted in place after the last pop
        raise _fail(subject, None, f"is over the size limit of {size_cap:,} characters", "too_large")
    return size


def _too_many_containers(subject: str | None, most: int | None) -> LimitError:
    return _fail(
        subject,
        None,
        f"holds more than {most:,} arrays and objects (Limits.max_action_containers)",
        "too_many",
    )


_NON_BRACKETS = re.compile(r"[^\[\]{}]+")
_JSON_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_ONE_KIND = str.maketrans("{}", "[]")  # nesting counts both kinds of bracket alike
_STEP = {"[": 1, "]": -1}


def nesting_exceeds(text: str, cap: int) -> bool:
    """Whether the JSON ``text`` nests more than ``cap`` levels (checked before parsing it).

    Cheap for ordinary messages (fewer brackets than ``cap``). Otherwise strings are cut out, and the
    brackets left are read ``cap`` at a time: a block whose opening brackets cannot take the depth
    past ``cap`` is passed over whole, and only the others are followed bracket by bracket, so the
    check is linear in the text whatever its shape. Input whose closing brackets outnumber its
    opening ones at some point is malformed: it is left to the parser.
    """
    if text.count("[") + text.count("{") <= cap:
        return False
    skeleton = _NON_BRACKETS.sub("", _JSON_STRINGS.sub("", text)).translate(_ONE_KIND)
    depth = 0
    for start in range(0, len(skeleton), cap):
        block = skeleton[start : start + cap]
        opens = block.count("[")
        if depth + opens > cap:  # this block may go past the cap: follow it
            deepest = max(accumulate(map(_STEP.__getitem__, block), initial=depth))
            if deepest > cap:
                return True
        depth += 2 * opens - len(block)
        if depth < 0:
            return False
    return False


def items_exceed(text: str, cap: int) -> bool:
    """Whether the JSON ``text`` holds more than ``cap`` items (values and object keys), checked
    before parsing it.

    Every item but the first follows a comma, a colon or an opening bracket, so their count
    outside strings, plus one, bounds the items (an empty array or object adds one for its bracket).
    Free for a text shorter than ``cap``; otherwise the counts in the whole text decide when they
    are within ``cap``. Else strings are cut out and the structure counted, unless the text holds
    more than ``cap`` strings already (a frame of tiny strings, which cutting would take long on).
    """
    if len(text) <= cap:
        return False
    punctuation = text.count(",") + text.count(":") + text.count("[") + text.count("{")
    if punctuation < cap:
        return False
    # A backslash-quote pair is an escaped quote, or the end of a string after an escaped
    # backslash: the quotes less those pairs are at most the quotes that delimit strings.
    if (text.count('"') - text.count('\\"')) // 2 > cap:
        return True
    skeleton = _JSON_STRINGS.sub("", text)
    return skeleton.count(",") + skeleton.count(":") + skeleton.count("[") + skeleton.count("{") >= cap


def valid_request_id(value: Any) -> bool:
    """A JSON-RPC id AHP accepts: an integer within ±(2^53 - 1), or a string of at most 256 characters.

    A whole number written with a fraction (``7.0``) is the same JSON number as ``7``: accepted, and
    echoed as it came.
    """
    if type(value) is int:
        return -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    if type(value) is float:
        return value.is_integer() and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    if type(value) is str:
        return len(value) <= _MAX_ID_CHARS and _string_problem(value, _MAX_ID_CHARS) is None
    return False


def valid_seq(value: Any) -> bool:
    """A sequence number (a ``clientSeq``, a ``serverSeq``, a ``fromSeq``): an integer from 0 to
    2^53 - 1."""
    return type(value) is int and 0 <= value <= MAX_SAFE_INTEGER


def cut_noted(text: str, limit: int, kept: Callable[[str], str] | None = None) -> str:
    """``text`` cut to ``limit`` characters, saying how many more there were; ``kept`` is applied to
    the start that is kept (a redactor's, masking a secret the cut fell inside)."""
    if len(text) <= limit:
        return text
    start = text[:limit] if kept is None else kept(text[:limit])
    return f"{start}…[{len(text) - limit:,} more characters]"


def clipped(text: str, limit: int) -> str:
    """:func:`cut_noted`, with lone surrogates made ``?`` (text for a log or a reason)."""
    return cut_noted(text.encode("utf-8", "replace").decode("utf-8"), limit)


def truncated(
    value: Any,
    max_chars: int = DEFAULT_LIMITS.max_logged_action_chars,
    cut: Callable[[str], str] | None = None,
) -> Any:
    """A short, always-encodable form of a (possibly huge or malformed) payload, for the log.

    Strings are cut, long arrays and objects elided, deep nesting replaced by ``"…"``, lone
    surrogates replaced; the result is valid JSON of roughly ``max_chars`` characters at most.
    ``cut`` is applied to the kept start of each string cut short (a redactor's, which masks a
    secret the cut fell inside): what is dropped is never read again.
    """
    budget = [max(64, max_chars)]
    piece = max(16, max_chars // 8)

    def clip(text: str, limit: int) -> str:
        if cut is None or len(text) <= limit:
            return clipped(text, limit)
        return cut_noted(text, limit, lambda start: cut(start.encode("utf-8", "replace").decode("utf-8")))

    def walk(v: Any, depth: int) -> Any:
        if budget[0] <= 0:
            return "…"
        if isinstance(v, str):
            out = clip(v, min(piece, budget[0]))
            budget[0] -= len(out) + 2
            return out
        if isinstance(v, bool) or v is None:
            budget[0] -= 5
            return v
        if isinstance(v, int):
            budget[0] -= 8
            return v if abs(v) <= MAX_SAFE_INTEGER else clipped(str(v), 40)
        if isinstance(v, float):
            budget[0] -= 8
            return v if math.isfinite(v) else repr(v)
        if depth >= 8:
            return "…"
        if isinstance(v, dict):
            out: dict[str, Any] = {}
            for i, (k, item) in enumerate(v.items()):
                if budget[0] <= 0 or i >= 50:
                    out["…"] = f"{len(v) - i} more members"
                    break
                key = clip(str(k), max(80, piece // 4))
                budget[0] -= len(key) + 3
                out[key] = walk(item, depth + 1)
            return out
        if isinstance(v, (list, tuple)):
            items: list[Any] = []
            for i, item in enumerate(v):
                if budget[0] <= 0 or i >= 20:
                    items.append(f"… {len(v) - i} more items")
                    break
                items.append(walk(item, depth + 1))
            return items
        return clip(repr(v), piece)

    out = walk(value, 0)
    json.dumps(out, allow_nan=False)  # the contract: always encodable
    return out
