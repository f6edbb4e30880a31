"""Views into a :class:`~ahp_lab.store.Store`'s log: one transition, the whole log, and ranges of it.

A :class:`Transition` reads its action, origin, clock value and states from the store's columns
when asked (states are rebuilt from the nearest checkpoint); a :class:`TransitionList` prints as a
table and exports a range as an upstream-format reducer fixture or a pytest file.
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..protocol.jsonvalue import dumps, json_patch, strip_nulls, to_json, utf8_json
from ..protocol.printable import printable
from ..reducers import FIXTURE_NOW_MS, REDUCERS

if TYPE_CHECKING:
    from . import Store

__all__ = ["Transition", "TransitionLog", "TransitionList", "summarize_action"]


class Transition:
    """One action the host sequenced on a channel, accepted or rejected; a view into the log."""

    __slots__ = ("_store", "index", "_before", "_after", "_action")

    def __init__(
        self, store: Store, index: int, before: Any = None, after: Any = None, action: Any = None
    ) -> None:
        self._store = store
        self.index = index
        self._before = before
        self._after = after
        self._action = action

    @property
    def seq(self) -> int:
        """The server sequence number the host assigned (the echo carries it as ``serverSeq``)."""
        return self._store._seq0 + self.index

    @property
    def channel(self) -> str:
        """The URI of the channel the action was applied to."""
        return self._store._channel_of(self.index).uri

    @property
    def channel_kind(self) -> str:
        """The channel's kind: root, session, chat, terminal, changeset, annotations or resourceWatch."""
        return self._store._channel_of(self.index).kind

    @property
    def action(self) -> dict:
        """The action as the host sequenced it (normalized JSON)."""
        if self._action is None:
            self._action = self._store._action_of(self.index)
        return self._action

    @property
    def type(self) -> str:
        """The action type, e.g. ``chat/delta``."""
        action = self.action
        return action.get("type", "?") if isinstance(action, dict) else "?"

    @property
    def origin(self) -> dict:
        """Who sent it: ``{kind: client, clientId, clientSeq}``, ``{kind: agent, name}`` or ``{kind: host}``."""
        return self._store._origin_of(self.index)

    @property
    def rejection_reason(self) -> str | None:
        """The host's one-sentence reason when it rejected a client dispatch, else ``None``."""
        return self._store._rejections.get(self.index)

    @property
    def accepted(self) -> bool:
        """False for a rejected dispatch (which changed nothing)."""
        return self.index not in self._store._rejections

    @property
    def now_ms(self) -> int:
        """The clock value (epoch ms) the reducer was given."""
        return self._store._now_of(self.index)

    @property
    def wall_time(self) -> float:
        """Epoch seconds of the clock value the reducer saw."""
        return self.now_ms / 1000.0

    @property
    def reducer_ns(self) -> int:
        """How long the reducer took, in nanoseconds (0 for a rejection)."""
        return self._store._reducer_ns_of(self.index)

    @property
    def before(self) -> Any:
        """The channel's state right before this transition (rebuilt from a checkpoint if needed)."""
        if self._before is None:
            self._before = self._store._state_around(self.index, after=False)
        return self._before

    @property
    def after(self) -> Any:
        """The channel's state right after this transition (``before`` when rejected)."""
        if self._after is None:
            self._after = self._store._state_around(self.index, after=True)
        return self._after

    @property
    def diff(self) -> list[dict]:
        """RFC 6902 JSON patch from ``before`` to ``after`` (empty for rejected and no-op actions)."""
        return json_patch(self.before, self.after)

    def envelope(self) -> dict:
        """The wire ``ActionEnvelope`` of this transition."""
        env: dict[str, Any] = {"channel": self.channel, "action": to_json(self.action), "serverSeq": self.seq}
        origin = self.origin
        if origin.get("kind") == "client":
            env["origin"] = {"clientId": origin["clientId"], "clientSeq": origin["clientSeq"]}
        reason = self.rejection_reason
        if reason is not None:
            env["rejectionReason"] = reason
        return env

    def origin_label(self) -> str:
        """The origin as a short label (``client notebook #3``, ``agent scripted``, ``host``)."""
        origin = self.origin
        kind = origin.get("kind")
        if kind == "client":
            return f"client {origin.get('clientId')} #{origin.get('clientSeq')}"
        if kind == "agent":
            return f"agent {origin.get('name')}"
        return str(kind)

    def summary(self) -> str:
        """A short human description of the action's payload."""
        return summarize_action(self.action)

    def row(self) -> dict:
        """The transition as a table row (seq, time, channel, type, origin, status, summary), its
        texts printable: a stranger's action type or member name holding an OSC 52 sequence wrote
        the clipboard of the terminal a log was printed in (attacker round 26)."""
        return {
            "seq": self.seq,
            "time": time.strftime("%H:%M:%S", time.gmtime(self.wall_time)) + f".{self.now_ms % 1000:03d}",
            "channel": printable(str(self.channel)),
            "type": printable(str(self.type)),
            "origin": printable(self.origin_label()),
            "status": "accepted" if self.accepted else "rejected",
            "summary": printable(str(self.rejection_reason if not self.accepted else self.summary())),
        }

    def __repr__(self) -> str:
        r = self.row()
        mark = "" if self.accepted else " REJECTED"
        return f"<Transition seq={r['seq']} {r['type']} on {r['channel']} by {r['origin']}{mark}: {r['summary']}>"

    def _repr_html_(self) -> str:
        return _rows_html([self])


def summarize_action(action: Any, limit: int = 72) -> str:
    if not isinstance(action, dict):
        return repr(action)[:limit]
    bits = []
    for key, value in action.items():
        if key == "type" or value is None:
            continue
        if isinstance(value, (dict, list)):
            text = json.dumps(strip_nulls(value), ensure_ascii=False)
        else:
            text = json.dumps(to_json(value), ensure_ascii=False)
        if len(text) > 32:
            text = text[:29] + "..."
        bits.append(f"{key}={text}")
    out = " ".join(bits)
    return out if len(out) <= limit else out[: limit - 3] + "..."


def _escape(text: Any) -> str:
    """Text for HTML, in an element or an attribute (quotes too: a title holds what an agent said)."""
    return html.escape(str(text), quote=True)


#: Left-aligned, one line a cell: a notebook's tables right-align cells, and whole channel URIs
#: wrapped each row over three lines (a first-hour user).
_CELL = "text-align:left;white-space:nowrap"


def channel_label(uri: str, kind: str) -> str:
    """Short label of a channel URI for a table cell: its ``kind`` and the tail of its id
    (``chat …-5608eb68be62``), as the log's table and the workbench's inspector show it."""
    if kind == "root":
        return "root"
    tail = uri.split(":", 1)[1].lstrip("/") if ":" in uri else uri
    if kind == "annotations":
        tail = tail.removesuffix("/annotations")
    if len(tail) > 14:
        tail = "…" + tail[-13:]
    return f"{kind} {tail}" if kind != "other" else uri[:40]


def _rows_html(transitions: list[Transition]) -> str:
    head = "".join(
        f"<th style='{_CELL}'>{h}</th>" for h in ("seq", "time", "channel", "action", "origin", "", "summary")
    )
    body = []
    for t in transitions:
        r = t.row()
        status = "✓" if t.accepted else "✗ rejected"
        summary = str(r["summary"])
        cells = [
            (r["seq"], None),
            (r["time"], None),
            (channel_label(t.channel, t.channel_kind), r["channel"]),
            (r["type"], None),
            (r["origin"], None),
            (status, None),
            (summary if len(summary) <= 100 else summary[:99] + "…", summary if len(summary) > 100 else None),
        ]
        body.append(
            "<tr>"
            + "".join(
                f"<td style='{_CELL}'"
                + (f" title='{_escape(title)}'" if title else "")
                + f">{_escape(v)}</td>"
                for v, title in cells
            )
            + "</tr>"
        )
    return (
        f"<table class='ahp-transitions'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


#: The module :meth:`TransitionList.to_pytest` writes.
PYTEST_TEMPLATE = '''"""Replays a range recorded by ahp_lab: {description}."""

import json

from ahp_lab.conformance import run_reducer_fixture

FIXTURE = json.loads(
    r"""
{fixture}
"""
)


def test_{name}():
    result = run_reducer_fixture(FIXTURE, {description})
    assert result.passed, result.detail
'''


class TransitionLog:
    """The transition log as a read-only sequence.

    ``log[42]`` is the transition with server seq 42; negative indices count from the newest
    (``log[-1]`` is the latest); slices work the same way (``log[-5:]``, ``log[10:20]``). When the
    store drops its oldest transitions to stay within ``max_log_bytes``, the log starts later
    (``len`` counts what it holds) and an older seq is an ``IndexError`` that says so.
    """

    def __init__(self, store: Store) -> None:
        self._store = store

    def __len__(self) -> int:
        return len(self._store._actions) - self._store._dropped

    def _position(self, i: int) -> int:
        if isinstance(i, bool) or not isinstance(i, int):  # "x" said "'<' not supported between ..."
            raise TypeError(
                f"lab.transitions[...] takes a server seq (an int, negative from the newest) or a slice, "
                f"not {type(i).__name__}; to filter, use lab.transitions.where(channel=..., type=...)"
            )
        store = self._store
        end = len(store._actions)
        pos = end + i if i < 0 else i - store._seq0
        if not store._dropped <= pos < end:
            if 0 <= pos < store._dropped:
                raise IndexError(store._dropped_reason(i if i >= 0 else store._seq0 + pos))
            raise IndexError(
                f"no transition {i}: the log holds seqs {store.first_seq}..{store.last_seq}"
                if len(self)
                else "the log is empty"
            )
        return pos

    def __getitem__(self, item):
        store = self._store
        if isinstance(item, slice):
            lo, end = store._dropped, len(store._actions)

            def bound(value, default):
                if value is None:
                    return default
                return max(lo, min(end, end + value if value < 0 else value - store._seq0))

            start, stop = bound(item.start, lo), bound(item.stop, end)
            return TransitionList([store._transition(p) for p in range(start, stop, item.step or 1)])
        return store._transition(self._position(item))

    def __iter__(self) -> Iterator[Transition]:
        for pos in range(self._store._dropped, len(self._store._actions)):
            yield self._store._transition(pos)

    def window(self, start: int, count: int) -> TransitionList:
        """``count`` transitions starting at log position ``start`` (0 = the oldest it holds)."""
        n = len(self)
        start = max(0, min(n, start))
        lo = self._store._dropped
        return TransitionList([self._store._transition(lo + p) for p in range(start, min(n, start + count))])

    def where(
        self, channel: str | None = None, type: str | None = None, origin: str | None = None
    ) -> TransitionList:
        """Transitions filtered by channel URI, action type (prefix match) and origin kind."""
        out = []
        for t in self:
            if channel is not None and t.channel != channel:
                continue
            if type is not None and not (isinstance(t.type, str) and t.type.startswith(type)):
                continue
            if origin is not None and t.origin.get("kind") != origin:
                continue
            out.append(t)
        return TransitionList(out)

    def __repr__(self) -> str:
        return repr(self[-10:]) if len(self) else "<empty transition log>"

    def _repr_html_(self) -> str:
        return self[-10:]._repr_html_() if len(self) else "<em>empty transition log</em>"


class TransitionList(list):
    """A list of transitions that prints as a readable table and exports as a conformance test.

    :meth:`to_fixture` turns a recorded range (``lab.transitions[a:b]``) into an upstream-format
    reducer fixture; :meth:`to_pytest` into a pytest file that replays it.
    """

    def to_fixture(
        self, path: str | Path | None = None, *, description: str | None = None, channel: str | None = None
    ) -> dict:
        """The range as a reducer fixture ``{description, reducer, initial, actions, expected}``.

        ``initial`` is the channel's state right before the first transition, ``actions`` are the
        accepted actions in order (rejected dispatches changed nothing and are left out) and
        ``expected`` is what the reducer makes of them with the fixtures' frozen clock
        (``now_ms = 9999``), exactly as ``python -m ahp_lab.conformance run`` replays them. The
        range must cover one channel, or name it with ``channel``. Writes the JSON to ``path``
        when given; returns the fixture either way.
        """
        if path is not None and not isinstance(path, (str, Path)):
            raise TypeError(
                f"to_fixture writes to a path (a str or Path), not {type(path).__name__} {path!r:.40}"
            )
        chosen = [t for t in self if channel is None or t.channel == channel]
        channels = sorted({t.channel for t in chosen})
        if not chosen:
            where = f" on {channel}" if channel is not None else ""
            raise ValueError(f"the range holds no transition{where}: there is nothing to export")
        if len(channels) > 1:
            raise ValueError(
                f"the range spans {len(channels)} channels ({', '.join(channels)}): "
                "pass channel=... to export one of them"
            )
        first = chosen[0]
        kind = first.channel_kind
        actions = [to_json(t.action) for t in chosen if t.accepted]
        initial = strip_nulls(first.before)
        state: Any = initial
        for action in actions:
            state = REDUCERS[kind](state, action, FIXTURE_NOW_MS)
        fixture = {
            "description": description
            or f"{len(actions)} {kind} actions recorded by ahp_lab (seqs {first.seq}..{chosen[-1].seq})",
            "reducer": kind,
            "initial": initial,
            "actions": actions,
            "expected": strip_nulls(state),
        }
        if path is not None:
            Path(path).write_text(utf8_json(dumps(fixture, indent=2)) + "\n", encoding="utf-8")
        return fixture

    def to_pytest(
        self, path: str | Path, *, description: str | None = None, channel: str | None = None
    ) -> Path:
        """Write a pytest file that replays :meth:`to_fixture`'s fixture through ``ahp_lab.conformance``."""
        fixture = self.to_fixture(description=description, channel=channel)
        path = Path(path)
        name = "".join(c if c.isalnum() else "_" for c in path.stem).strip("_") or "fixture"
        source = PYTEST_TEMPLATE.format(
            description=json.dumps(fixture["description"], ensure_ascii=False),
            fixture=dumps(fixture, indent=4),
            name=name,
        )
        path.write_text(source, encoding="utf-8")
        return path

    def __repr__(self) -> str:
        if not self:
            return "[]"
        rows = [t.row() for t in self]
        cols = ("seq", "channel", "type", "origin", "status", "summary")
        widths = {c: min(48, max(len(c), *(len(str(r[c])) for r in rows))) for c in cols}
        line = "  ".join(c.ljust(widths[c]) for c in cols)
        out = [line, "  ".join("-" * widths[c] for c in cols)]
        for r in rows:
            out.append("  ".join(str(r[c])[: widths[c]].ljust(widths[c]) for c in cols))
        return "\n".join(out)

    def _repr_html_(self) -> str:
        return _rows_html(list(self))
