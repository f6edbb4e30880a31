"""Redaction of text streamed a chunk at a time (:class:`StreamedText`), the host's use of the
:class:`~ahp_lab.host.redaction.Redactor` for ``chat/delta``, ``chat/reasoning``, ``terminal/data``
and ``chat/toolCallDelta``: a secret in two chunks is masked as if it had come in one."""

from __future__ import annotations

from .redaction import _RUN_CHARACTERS, Redactor

__all__ = ["STREAMED_FIELDS", "StreamedText"]

#: The actions after which a stream takes no more text (a turn's parts, a terminal's output): what
#: they held goes in first.
_STREAM_ENDS = frozenset(
    {"chat/turnComplete", "chat/turnCancelled", "chat/error", "chat/truncated", "terminal/exited"}
)
#: The streamed action types, and the field each streams its text in.
STREAMED_FIELDS = {
    "chat/delta": "content",
    "chat/reasoning": "content",
    "terminal/data": "data",
    "chat/toolCallDelta": "content",
}
#: A streamed tool input: only the secrets the host knows are masked in it (a tool runs with it),
#: and it is held for them alone.
_TOOL_INPUT_DELTA = "chat/toolCallDelta"


class StreamedText:
    """Redaction of text streamed a chunk at a time (``chat/delta``, ``chat/reasoning``, a
    terminal's ``terminal/data``, a tool call's input in ``chat/toolCallDelta``) across its chunks:
    a model streams token by token, and a command writes when it likes, so a key in two chunks
    would enter state as two halves, each too short to be recognised.

    The end of a part's text that could begin a known secret is held back and read again with the
    part's next chunk; the rest is redacted and goes out. Each part holds its own, so nothing
    else on the chat (another part, a client's action, a page of history) moves it, except that
    the turn's text of the same kind going on in a new part takes it there when the two read
    differently together (a key cut by a thought). When the turn
    ends (:meth:`ending`), or the terminal's command exits, what was held goes in, masked when it
    is ``HELD_MASKED`` characters or more (the key never came whole, but its start did)."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        #: (chat, turn id, part id, action type) -> (raw text held, the origin of its delta)
        self.held: dict[tuple, tuple[str, dict]] = {}
        #: deltas giving a part back what it held, to apply first (see take_flushed)
        self.flushed: list[tuple[dict, dict]] = []
        self.chats: dict[str, int] = {}  # chat -> how many parts hold text

    def delta(self, channel: str, action: dict, origin: dict) -> dict:
        """``action`` (a streamed delta from ``origin``) redacted, with the end it holds back taken
        out."""
        field = STREAMED_FIELDS[action["type"]]
        content = action.get(field)
        if type(content) is not str:
            return self.redactor.action(action)
        kind = action["type"]
        tool_input = kind == _TOOL_INPUT_DELTA
        part = action.get("toolCallId" if tool_input else "partId")
        stream = (channel, action.get("turnId"), part, kind)
        held = self._take(stream) if self.held else None
        if held is None and self.held and stream[1] is not None and not tool_input:
            # the turn's text of this kind goes on in a new part (another part came between, a
            # thought in a message, say): when the earlier part's held end reads differently
            # with this chunk after it (a key cut by the thought), it goes on here and is read
            # whole; else it goes back to its own part, as it was ("Let me read the token").
            earlier = next((k for k in self.held if k[:2] == stream[:2] and k[3] == stream[3]), None)
            if earlier is not None:
                held = self._take(earlier)
                # its part's text ends there (a first letter alone always does: "plan B", then a
                # thought, then "asked for it" made "plan " and "Basked for it")
                if self._letter(held[0]) or not self._spans(held[0], content):
                    self.flushed.append((self._given_back(earlier, held[0]), held[1]))
                    held = None
        numbers = kind != "terminal/data"  # a command's counter waits on its last digits
        if (
            held is None
            and not self.redactor.secrets
            and (tool_input or not self.redactor.credential_begun(content, numbers=numbers))
        ):
            return self.redactor.action(action)  # most chunks: nothing held, nothing to hold
        text = held[0] + content if held is not None else content
        shown, kept = self.redactor.streamed(text, generic=not tool_input, numbers=numbers)
        if kept:
            self.held[stream] = (kept, origin)
            self.chats[channel] = self.chats.get(channel, 0) + 1
        return {**self.redactor.action({**action, field: ""}), field: shown}

    def _letter(self, held: str) -> bool:
        """Whether ``held`` is a first letter held alone, not the start of a secret the host knows."""
        return len(held) == 1 and not self.redactor.secret_prefix(held)

    def _spans(self, held: str, content: str) -> bool:
        """Whether ``held`` (the end a part held back) and ``content`` (the next chunk of its kind,
        in another part) read differently together than apart: a secret spans them."""
        redactor = self.redactor
        together = redactor.text(held + content, generic=False)
        if together[-1:] in _RUN_CHARACTERS and max(
            redactor.secret_prefix(together), redactor.credential_begun(together)
        ) > len(content):
            return True  # a token still coming, begun before this chunk: it goes on
        # (a name then only "\n\n" or ":" is not one: "Let me read the token" stays whole)
        return redactor.text(held + content) != redactor.text(held) + redactor.text(content)

    def take_flushed(self) -> list[tuple[dict, dict]]:
        """The deltas (with their origins) that give earlier parts back what they held, to apply
        before the delta :meth:`delta` returned (see the carry there)."""
        out, self.flushed = self.flushed, []
        return out

    def ending(self, channel: str, action: dict) -> list[tuple[dict, dict]]:
        """The deltas (with their origins) to apply before ``action`` on ``channel``: what the
        parts of the turn it ends held; before any other action but streamed text (a tool call, a
        question for the person), a first letter a part holds alone ("plan A" showed "plan " while
        the turn waited for the person), and what a tool call's input held (the call's own next
        action ends its input's stream)."""
        if channel not in self.chats:
            return []
        kind = action.get("type")
        if kind in _STREAM_ENDS:
            return self.drop(channel)
        if kind in STREAMED_FIELDS:
            return []
        return self.drop(channel, letters=True, call=(action.get("turnId"), action.get("toolCallId")))

    def drop(self, channel: str, letters: bool = False, call: tuple | None = None) -> list[tuple[dict, dict]]:
        """Every part of ``channel`` gives up what it held, as deltas to apply with their origins;
        with ``letters``, only a first letter held alone, and the input of tool call ``call``
        (turn id, call id), whose own next action ends its input's stream: another's action
        gave back the start of a secret the call's next chunk went on with, raw."""
        out = []
        for stream in [
            s
            for s, h in self.held.items()
            if s[0] == channel
            and (not letters or (s[1:3] == call if s[3] == _TOOL_INPUT_DELTA else self._letter(h[0])))
        ]:
            raw, origin = self._take(stream)
            out.append((self._given_back(stream, raw), origin))
        return out

    def _given_back(self, stream: tuple, raw: str) -> dict:
        """The delta that gives part ``stream`` what it held, as its text's end (a key's start
        masked, :meth:`Redactor.held_end`)."""
        _, turn_id, part_id, kind = stream
        text = self.redactor.held_end(raw, generic=kind != _TOOL_INPUT_DELTA)
        if kind == "terminal/data":
            return {"type": kind, "data": text}
        if kind == _TOOL_INPUT_DELTA:
            return {"type": kind, "turnId": turn_id, "toolCallId": part_id, "content": text}
        return {"type": kind, "turnId": turn_id, "partId": part_id, STREAMED_FIELDS[kind]: text}

    def _take(self, stream: tuple) -> tuple[str, dict] | None:
        held = self.held.pop(stream, None)
        if held is not None:
            left = self.chats[stream[0]] - 1
            if left:
                self.chats[stream[0]] = left
            else:
                del self.chats[stream[0]]
        return held
