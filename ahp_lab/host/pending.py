"""Who set each pending message of a chat (its steering message, its queued messages).

AHP lets any client set or remove a pending message by id, and the ids are in every subscriber's
state. A stranger replaced the notebook's queued message with its own text, the host started that
text as a turn, and the notebook's ``approve=`` for its message approved the stranger's call of a
tool that runs in the kernel. So a stranger replaces or removes only the pending messages it set
itself; the notebook (a trusted connection) may still remove anyone's.
"""

from __future__ import annotations

from typing import Any

from ..protocol.jsonvalue import dumps
from ..reducers._js import truthy

SET = "chat/pendingMessageSet"
REMOVED = "chat/pendingMessageRemoved"
STARTED = "chat/turnStarted"


def _key(action: dict) -> Any:
    """The slot an action names: the steering message, or one queued message by id."""
    if action.get("kind") == "steering":
        return "steering"
    pid = action.get("id")
    return ("queued", pid if isinstance(pid, str) else dumps(pid))


def held(chat: Any, action: dict) -> bool:
    """Whether the chat holds the pending message ``action`` would replace or remove."""
    if not isinstance(chat, dict):
        return False
    if action.get("kind") == "steering":
        steering = chat.get("steeringMessage")
        if not isinstance(steering, dict):
            return False
        return action["type"] == SET or steering.get("id") == action.get("id")
    queued = chat.get("queuedMessages")
    return isinstance(queued, list) and any(
        isinstance(m, dict) and m.get("id") == action.get("id") for m in queued
    )


class PendingOwners:
    """chat URI -> slot -> the client id that set what the slot holds."""

    def __init__(self, max_queued: int) -> None:
        self.max_queued = max_queued
        self.by_chat: dict[str, dict[Any, str]] = {}

    def refusal(self, chat_uri: str, chat: Any, action: dict, client_id: str) -> str | None:
        """Why a stranger's ``action`` may not replace or remove a pending message, or ``None``
        (a client's ``chat/turnStarted`` naming a ``queuedMessageId`` removes that message too: a
        stranger that cancelled its own turn started the next one at once under the notebook's
        queued message, before the host took it from the queue)."""
        if action.get("type") == STARTED and truthy(action.get("queuedMessageId")):
            named = action["queuedMessageId"]
            for kind in ("steering", "queued"):
                removal = {"type": REMOVED, "kind": kind, "id": named}
                if held(chat, removal) and self.by_chat.get(chat_uri, {}).get(_key(removal)) != client_id:
                    return (
                        f"{STARTED}: queuedMessageId {named!r} names a pending message another client "
                        "set; a client's turn may take only its own"
                    )
            return None
        if action.get("type") not in (SET, REMOVED) or not held(chat, action):
            return None
        if self.by_chat.get(chat_uri, {}).get(_key(action)) == client_id:
            return None
        what = (
            "steering message" if action.get("kind") == "steering" else f"queued message {action.get('id')!r}"
        )
        verb = "replace" if action["type"] == SET else "remove"
        return (
            f"{action['type']}: the {what} was set by another client, and a client may {verb} "
            "only the pending messages it set"
        )

    def record(self, chat_uri: str, chat: Any, action: dict, client_id: str) -> None:
        """Note an accepted client action (``chat`` is the state it left)."""
        if action.get("type") == SET:
            owners = self.by_chat.setdefault(chat_uri, {})
            owners[_key(action)] = client_id
            if len(owners) > self.max_queued + 1:  # the host consumed some: keep those still held
                kept = (
                    {_key({"kind": "steering"})}
                    if isinstance((chat or {}).get("steeringMessage"), dict)
                    else set()
                )
                kept.update(
                    _key({"id": m.get("id")})
                    for m in (chat or {}).get("queuedMessages") or ()
                    if isinstance(m, dict)
                )
                self.by_chat[chat_uri] = {k: v for k, v in owners.items() if k in kept}
        elif action.get("type") == REMOVED:
            self.by_chat.get(chat_uri, {}).pop(_key(action), None)

    def forget(self, chat_uri: str) -> None:
        self.by_chat.pop(chat_uri, None)
