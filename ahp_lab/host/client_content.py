"""What clients other than the notebook have put into the host's state, bounded in total.

The log's bound does not shrink state, and what a client dispatches stays there: a turn's message,
its answers, its tools' results and ``_meta``, pending messages, its ``activeClient`` entry with
its tools (a stranger took the host to 1.3 GB in 60 turns, then to 1.5 GB through input drafts).
So the host counts the size of every accepted action of an untrusted connection (its JSON text,
plus the memory its values take that the text does not show, :func:`unseen_bytes`), in the
*slot* of state it fills:

* a value the action replaces (a draft, a title, a pending message, one answer, one tool call's
  content or result, a client's ``activeClient`` entry) counts once, at its latest size;
* what an action appends (a tool call's streamed input) adds up;
* a slot inside a turn belongs to that turn, so a truncation gives back exactly what was counted
  for the turns (and the active turn) it drops, and a fork is charged again for the turns it copies;
* a removal gives its slot back (a client's removed pending message, a removed active client or
  working directory), and so does a disposed chat or session.

Past ``limits.max_client_content_bytes`` in total, an action that would add is refused with a
reason. What the agent or the notebook writes is not counted.
"""

from __future__ import annotations

from typing import Any

from ..protocol.jsonvalue import dumps
from .validation import turn_index

#: Actions that only take something out of state (their slots are given back, not counted).
_REMOVALS = frozenset(
    {
        "chat/truncated",
        "chat/pendingMessageRemoved",
        "chat/workingDirectoryRemoved",
        "session/activeClientRemoved",
        "session/workingDirectoryRemoved",
        "session/customizationRemoved",
    }
)
_TOOL_CALL = "chat/toolCall"


def _name(value: Any) -> Any:
    """An id as a slot's key part (an off-type id, a list say, as its JSON)."""
    return value if value is None or isinstance(value, (str, int, float)) else dumps(value)


#: What an array, an object, an object's key or a string costs in memory beyond its JSON text: a
#: Python object of some 50 bytes (an empty array is 2 bytes of JSON and 56 of memory). Counted as
#: JSON text alone, 43 MB of queued messages of 24,000 empty arrays each held the host at 1 GB,
#: and a snapshot of them cost the loop 11 s to encode. A number costs ``NUMBER_BYTES``.
NODE_BYTES = 48
NUMBER_BYTES = 16


def unseen_bytes(value: Any) -> int:
    """The memory ``value`` takes beyond its JSON text (see :data:`NODE_BYTES`)."""
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            total += NODE_BYTES * (1 + len(item))
            stack.extend(item.values())
        elif isinstance(item, list):
            total += NODE_BYTES
            stack.extend(item)
        else:
            total += NODE_BYTES if isinstance(item, str) else NUMBER_BYTES
    return total


def slot(action: dict) -> tuple[tuple, bool]:
    """The slot of state an accepted client action fills, and whether it appends to it (else it
    replaces what the slot held)."""
    action = {k: _name(v) if k.endswith(("Id", "id", "uri")) else v for k, v in action.items()}
    kind = action.get("type")
    turn = action.get("turnId")
    if kind == "chat/turnStarted":
        return ("turn", turn, "message"), False
    if kind == "chat/toolCallDelta":
        return ("turn", turn, "tool", action.get("toolCallId"), "input"), True
    if kind.startswith(_TOOL_CALL):
        return ("turn", turn, "tool", action.get("toolCallId"), kind), False
    if kind == "chat/inputAnswerChanged":
        return ("turn", turn, "input", action.get("requestId"), action.get("questionId")), False
    if kind == "chat/inputCompleted":
        return ("turn", turn, "input", action.get("requestId")), False
    if kind == "chat/pendingMessageSet":
        pending = "steering" if action.get("kind") == "steering" else action.get("id")
        return ("pending", pending), False
    if kind == "session/activeClientSet":
        return ("client", (action.get("activeClient") or {}).get("clientId")), False
    if kind in ("chat/workingDirectorySet", "session/workingDirectorySet"):
        return ("directory", _name(action.get("directory"))), False
    if turn is not None:
        return ("turn", turn, kind), False
    return ("field", kind), False


class ClientContent:
    """Bytes of JSON untrusted clients have put into each channel's state, by slot."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        #: channel URI -> slot -> bytes counted for it
        self.held: dict[str, dict[tuple, int]] = {}
        self.total = 0

    @staticmethod
    def measure(action: dict) -> tuple[tuple, bool, int] | None:
        """What a client action puts into state: its slot, whether it appends to it, and its size
        (``None`` for a removal). Measured once, for :meth:`refusal` and then :meth:`count`."""
        if action.get("type") in _REMOVALS:
            return None
        key, appends = slot(action)
        return key, appends, len(dumps(action)) + unseen_bytes(action)

    def refusal(self, channel: str, measured: tuple[tuple, bool, int] | None) -> str | None:
        """Why a measured action on ``channel`` is refused (it would take the total past the
        limit), or ``None``."""
        if measured is None:
            return None
        key, appends, size = measured
        added = size if appends else size - self.held.get(channel, {}).get(key, 0)
        if added <= 0 or self.total + added <= self.limit:
            return None
        return (
            f"clients have put {self.total:,} bytes into this host's state and this action would add "
            f"{added:,}, over the limit of {self.limit:,} bytes (max_client_content_bytes): "
            "remove something first (truncate a chat, dispose of a chat or session)"
        )

    def count(self, channel: str, measured: tuple[tuple, bool, int] | None) -> None:
        """Count an accepted, measured client action in its slot."""
        if measured is None:
            return
        key, appends, size = measured
        slots = self.held.setdefault(channel, {})
        before = slots.get(key, 0)
        slots[key] = before + size if appends else size
        self.total += slots[key] - before

    def before_apply(self, channel: str, state: Any, action: dict, origin: dict) -> list[tuple]:
        """The slots ``action`` (of any origin) will empty, read from the state before it: those of
        the turns a truncation drops and of the active turn, a client's removed pending message,
        a removed active client or working directory."""
        slots = self.held.get(channel)
        if not slots or not isinstance(state, dict):
            return []
        kind = action.get("type")
        if kind == "chat/truncated":
            turns = state.get("turns") or []
            index = turn_index(turns, action["turnId"]) if "turnId" in action else -1
            if index is None:
                return []  # no such turn: a no-op
            dropped = {_name(t.get("id")) for t in turns[index + 1 :] if isinstance(t, dict)}
            active = state.get("activeTurn")
            if isinstance(active, dict):
                dropped.add(_name(active.get("id")))
            return [k for k in slots if k[0] == "turn" and k[1] in dropped]
        if kind == "chat/pendingMessageRemoved":
            if action.get("kind") == "steering":
                return [("pending", "steering")]  # to the agent, or away: out of state either way
            if origin.get("kind") != "client":
                return []  # the host starts the queued message as a turn: it moves (see moved)
            return [("pending", _name(action.get("id")))]
        if kind == "chat/turnStarted" and "queuedMessageId" in action:
            # a steering message with the queued message's id goes with it (chat-channel §10)
            steering = state.get("steeringMessage")
            if isinstance(steering, dict) and steering.get("id") == action["queuedMessageId"]:
                return [("pending", "steering")]
        if kind == "session/activeClientRemoved":
            return [("client", _name(action.get("clientId")))]
        if kind in ("chat/workingDirectoryRemoved", "session/workingDirectoryRemoved"):
            return [("directory", _name(action.get("directory")))]
        return []

    def give_back(self, channel: str, keys: list[tuple]) -> None:
        slots = self.held.get(channel)
        if not slots:
            return
        for key in keys:
            self.total -= slots.pop(key, 0)
        if not slots:
            del self.held[channel]

    def moved(self, chat: str, queued_id: Any, turn_id: Any) -> None:
        """A queued message the host started as a turn: its count belongs to that turn now."""
        slots = self.held.get(chat)
        queued = ("pending", _name(queued_id))
        if slots and queued in slots:
            slots[("turn", _name(turn_id), "message")] = slots.pop(queued)

    def copied(self, source: str, chat: str, turns: Any) -> None:
        """A fork copied ``turns`` of ``source`` into ``chat``: charged again (the copy keeps them
        when the source lets go of them)."""
        slots = self.held.get(source)
        if not slots:
            return
        ids = {_name(t.get("id")) for t in turns if isinstance(t, dict)}
        copy = {k: v for k, v in slots.items() if k[0] == "turn" and k[1] in ids}
        if copy:
            self.held.setdefault(chat, {}).update(copy)
            self.total += sum(copy.values())

    def forget(self, channel: str) -> None:
        """The channel is disposed: what it held is gone."""
        self.total -= sum(self.held.pop(channel, {}).values())
