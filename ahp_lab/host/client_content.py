"""What clients other than the notebook have put into chats, bounded in total.

A chat's turns are the one part of the host's state a client can grow without end: every
``chat/turnStarted`` adds a message of up to ``max_message_bytes``, and the bound on the log does
not shrink state (a stranger took the host to 1.3 GB in 60 turns). So the host counts the JSON
size of what untrusted connections *add* to chats (messages started or queued, deltas and results
of their tools, answers to input requests), gives it back when that content leaves the state (a
truncation drops turns, a client replaces or removes a pending message, the chat is disposed),
and refuses an addition past ``limits.max_client_content_bytes`` with a reason.

Replacing actions (a draft, a title, a model) are not counted: each is one value per chat, bounded
by ``max_message_bytes``. What the agent or the notebook writes is not counted either.
"""

from __future__ import annotations

from typing import Any

from ..protocol.jsonvalue import dumps
from .validation import turn_index

#: Client chat actions that add content to a chat's state (rather than replace one value).
ADDS = frozenset(
    {
        "chat/turnStarted",
        "chat/pendingMessageSet",
        "chat/toolCallDelta",
        "chat/toolCallComplete",
        "chat/inputCompleted",
    }
)


def _id(entry: Any) -> Any:
    return entry.get("id") if isinstance(entry, dict) else None


class ClientContent:
    """Bytes of JSON untrusted clients have added to each chat and that are still held."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        #: chat URI -> bytes counted for it
        self.held: dict[str, int] = {}

    @property
    def total(self) -> int:
        return sum(self.held.values())

    def cost(self, action: dict) -> int:
        """What an accepted client action would add (0 for actions that add no content)."""
        kind = action.get("type")
        if kind == "chat/pendingMessageSet":  # what a replacement or removal gives back
            return len(dumps(action.get("message")))
        return len(dumps(action)) if kind in ADDS else 0

    def problem(self, size: int) -> str | None:
        """Why an addition of ``size`` bytes is refused, or ``None``."""
        total = self.total
        if not size or total + size <= self.limit:
            return None
        return (
            f"clients have put {total:,} bytes into this host's chats and this action's {size:,} "
            f"would go over the limit of {self.limit:,} bytes (max_client_content_bytes): "
            "truncate or dispose of a chat to make room"
        )

    def add(self, chat: str, size: int) -> None:
        self.held[chat] = self.held.get(chat, 0) + size

    def given_back(self, chat: str, state: Any, action: dict, origin: dict) -> int:
        """Bytes counted for ``chat`` that ``action`` would take out of its state (measured before
        it is applied; 0 when nothing counted is there). A truncation gives back what it drops; a
        client's replacement or removal of a pending message gives back that message (the host's
        own removal, when it starts a queued message as a turn, moves it into the turn instead)."""
        held = self.held.get(chat)
        if not held or not isinstance(state, dict):
            return 0
        kind = action.get("type")
        if kind == "chat/truncated":
            turns = state.get("turns") or []
            if "turnId" in action:
                index = turn_index(turns, action["turnId"])
                if index is None:
                    return 0
                dropped = turns[index + 1 :]
            else:
                dropped = turns
            size = 0
            for turn in dropped:
                size += len(dumps(turn))
                if size >= held:
                    return held
            return size
        if (
            kind in ("chat/pendingMessageSet", "chat/pendingMessageRemoved")
            and origin.get("kind") == "client"
        ):
            if action.get("kind") == "steering":
                entry = state.get("steeringMessage")
                if kind == "chat/pendingMessageRemoved" and _id(entry) != action.get("id"):
                    entry = None
            else:
                queued = state.get("queuedMessages")
                entry = (
                    next((m for m in queued if _id(m) == action.get("id")), None)
                    if isinstance(queued, list)
                    else None
                )
            return min(held, len(dumps(entry.get("message")))) if entry else 0
        return 0

    def give_back(self, chat: str, size: int) -> None:
        left = self.held.get(chat, 0) - size
        if left > 0:
            self.held[chat] = left
        else:
            self.held.pop(chat, None)

    def forget(self, chat: str) -> None:
        """The chat is disposed: what it held is gone."""
        self.held.pop(chat, None)
