"""The permissions an ACP agent asks its client for (``session/request_permission``), put to the
person as AHP confirmations, and the check of a client's answer against the agent's options.

A mixin of :class:`~.bridge.Bridge`: it reads the bridge's session context, current turn and
remembered "always" answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

from acp import RequestError
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

from . import content, mapping
from .context import _CAUSE, _TURN

__all__ = ["PermissionRequests", "MAX_PERMISSION_OPTIONS"]

MAX_PERMISSION_OPTIONS = 16
#: Permission requests of one session that may wait for the person at once: 3,000 asked at once,
#: each about a call of its own past the turn's MAX_TURN_CALLS, held the loop 9.8 s (attacker
#: round 36), each waiting one reading the chat again at every change.
MAX_OPEN_PERMISSIONS = 32


class PermissionRequests:
    """``session/request_permission`` for :class:`~.bridge.Bridge`."""

    # -- the SDK's Client interface: permissions -----------------------------------------------

    async def request_permission(self, session_id: str, tool_call: Any, options: list, **kwargs: Any) -> Any:
        """Ask the person through an AHP confirmation; answer with the option they chose."""
        cancelled = RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        if not self._check_session(session_id) or self.turn is None or _TURN.get() is not self.turn:
            return cancelled  # no turn, or asked during a turn that was cancelled since
        turn, ctx, over = self.turn, self.turn_ctx, self._turn_over
        opts = mapping.as_json(options)
        ids = [o.get("optionId") for o in opts]
        if not opts or len(opts) > MAX_PERMISSION_OPTIONS or len(set(ids)) != len(ids):
            raise RequestError.invalid_params(
                {"details": f"1 to {MAX_PERMISSION_OPTIONS} options with distinct ids are required"}
            )
        asked = mapping.as_json(tool_call)
        for what, value in [
            ("the tool call id", asked.get("toolCallId")),
            *(("an option id", i) for i in ids),
        ]:
            problem = mapping.id_problem(value)
            if problem is not None:
                raise RequestError.invalid_params({"details": f"{what} {problem}"})
        known = turn.calls.get(str(asked.get("toolCallId")))
        if len(self._asking) >= MAX_OPEN_PERMISSIONS:
            raise RequestError.invalid_params(
                {"details": f"{MAX_OPEN_PERMISSIONS} permission requests are waiting for the person already"}
            )
        if known is None and len(turn.calls) >= mapping.MAX_TURN_CALLS:
            raise RequestError.invalid_params(
                {
                    "details": f"this turn shows {mapping.MAX_TURN_CALLS:,} tool calls already: ask in the next turn"
                }
            )
        if known is not None and known.options is not None:
            # one confirmation per call: a person's answer to it cannot be told apart for two requests
            raise RequestError.invalid_params(
                {
                    "details": f"a permission request for tool call {known.id!r} is already waiting for an answer"
                }
            )
        if known is not None and known.status in ("completed", "cancelled"):
            raise RequestError.invalid_params({"details": f"tool call {known.id!r} has already ended"})
        call, actions = mapping.permission_call(turn, asked)
        for action in actions:
            self.emit(action)
        # A mode switch (seed 001's "exit plan mode") is never remembered: its options name modes to
        # run in, not standing grants, and each plan it carries is for the person to read.
        # An "always allow" covers requests of the same kind and title with the same input, content
        # and locations: by kind and title only, "Always allow `npm test`" for a call titled
        # "Terminal" let the host approve `curl … | sh` under that title by itself (and so did an
        # input left out, ACP's rawInput being optional, with the command shown in the content).
        # An "always reject" covers the kind and title.
        key = None if call.kind == "switch_mode" else (call.kind, call.title)
        allowed = (
            None if key is None else (*key, _canonical([call.raw_input, _own(call.content), call.locations]))
        )
        remembered = self.always.get(key) if key is not None else None  # an "always reject"
        if remembered is None and allowed is not None:
            remembered = self.always.get(allowed)
        chosen = _first(opts, "allow_always", "allow_once") if remembered == "allow" else None
        if chosen is not None:  # an earlier "always allow" answers, if the agent offers to allow
            self.emit(mapping._ready(turn, call, confirmed="setting"))
            call.status, call.asked = "running", True
            self._show_content(turn, call)  # running drops it (T3), as a person's approval does
            return _selected(chosen)
        self.emit(mapping.confirmation(turn, call, opts, self.resolver))
        call.status, call.options = "pending-confirmation", opts
        # An "always reject" answers by itself where the agent offers a way to reject: without one,
        # its answer would be ``cancelled``, which in ACP cancels the whole turn; the person decides.
        chosen = _first(opts, "reject_always", "reject_once") if remembered == "reject" else None
        if chosen is not None:
            self.emit(
                {
                    "type": "chat/toolCallConfirmed",
                    "turnId": turn.turn_id,
                    "toolCallId": call.id,
                    "approved": False,
                    "reason": "denied",
                    "selectedOptionId": chosen,
                }
            )
            call.status = "cancelled"
            return _selected(chosen)
        turn.waiting_on_host += 1
        waiting = asyncio.ensure_future(ctx.wait_tool_call(call.id, {"pending-confirmation"}))
        self._asking.add(waiting)
        try:
            state = await waiting
        except asyncio.CancelledError:
            if asyncio.current_task().cancelling():
                raise
            # the turn ended, or the agent was stopped, while the person was deciding
            await _cancel_told(over)
            return cancelled
        finally:
            call.options = None
            waiting.cancel()
            self._asking.discard(waiting)
            turn.waiting_on_host -= 1
            self._last_in = time.monotonic()
        status = state.get("status")
        picked = (state.get("selectedOption") or {}).get("id")
        by_id = {o["optionId"]: o for o in opts}
        _CAUSE.set(self._seq(ctx.chat, "chat/toolCallConfirmed", toolCallId=call.id))
        if status == "running":
            call.status, call.asked = "running", True
            chosen = picked if picked in by_id else _first(opts, "allow_once")  # never an "always" unasked
            self._show_content(turn, call)
        elif status == "cancelled" and state.get("reason") == "denied":
            call.status = "cancelled"
            # a denial is always carried: "always reject" when that is the only way to reject
            chosen = picked if picked in by_id else _first(opts, "reject_once", "reject_always")
        else:
            call.status = str(status)
            if status != "completed":  # the turn's end skipped it: its session/cancel goes first
                await _cancel_told(over)
            # else the agent ended the call itself while the person decided: answered at once
            return cancelled
        if chosen is None:
            return cancelled
        kind = by_id[chosen].get("kind")
        if key is not None and chosen == picked and kind == "allow_always":  # when chosen
            self.always[allowed] = "allow"
        elif key is not None and chosen == picked and kind == "reject_always":
            self.always[key] = "reject"  # the newest answer: it ends the kind and title's grants
            for remembered_key in [k for k in self.always if len(k) > 2 and k[:2] == key]:
                del self.always[remembered_key]
        return _selected(chosen)

    def _show_content(self, turn: Any, call: Any) -> None:
        """The content a call had while it waited, shown again now that it runs."""
        if call.content or call.locations:
            self.emit(
                {
                    "type": "chat/toolCallContentChanged",
                    "turnId": turn.turn_id,
                    "toolCallId": call.id,
                    "content": content.tool_content(call, self.resolver),
                }
            )

    def confirmation_refusal(self, action: dict, trusted: bool = True) -> str | None:
        """Why a client's ``chat/toolCallConfirmed`` of a call the agent asks permission for cannot
        be passed on as one of its options, else ``None``: an option that says the opposite of the
        action (a denial naming an allow option would have run the tool), or an approval naming no
        option when the agent offers none that allows just once (it got ``cancelled``, which in
        ACP cancels the whole turn, while the chat showed the call approved), or a denial when the
        agent offers no option that rejects (the same ``cancelled``: the turn ended as cancelled
        by the agent), or an approval with an edited input, which ACP cannot carry."""
        turn = self.turn
        if turn is None or action.get("turnId") != turn.turn_id:
            return None
        call = turn.calls.get(action.get("toolCallId"))
        opts = call.options if call is not None else None
        if not opts:
            return None
        approved = action.get("approved") is True
        if approved and action.get("editedToolInput") is not None:
            # ACP answers a permission request with an option only: the chat showed the edited
            # input approved while the agent ran its own
            return (
                f"the agent cannot run an edited input for tool call {call.id!r} (an ACP permission "
                "is answered with an option only): approve the call as it is, or deny it"
            )
        picked = next((o for o in opts if o.get("optionId") == action.get("selectedOptionId")), None)
        if (
            picked is not None
            and not trusted
            and str(picked.get("kind")).endswith("_always")
            and call.kind != "switch_mode"
        ):
            # a standing answer: the bridge remembers it, and later calls of the kind would run (or
            # be refused) unasked, on another client's word. A mode switch's options name modes,
            # which any client may choose (as it may set the session's mode), and none is remembered
            return (
                f"option {picked['optionId']!r} answers tool call {call.id!r} for the rest of the "
                "session: only the notebook gives a standing answer; pick a one-time option"
            )
        if picked is not None:
            allows = str(picked.get("kind")).startswith("allow")
            if allows == approved:
                return None
            return (
                f"option {picked['optionId']!r} {'allows' if allows else 'rejects'} tool call {call.id!r}, "
                f"but the action {'approves' if approved else 'denies'} it"
            )
        if not approved:
            if _first(opts, "reject_once") is not None:
                return None
            if _first(opts, "reject_always") is not None:
                if trusted:
                    return None
                # the agent takes its only refusal, "always", as one for the rest of the session
                return (
                    f"the agent offers only a standing refusal of tool call {call.id!r} ('always'), "
                    "which only the notebook gives: approve it, or leave it to the notebook"
                )
            # the denial would go as ``cancelled``, which in ACP cancels the whole turn, and the
            # turn ended as "the agent cancelled the turn on its own"
            return (
                f"the agent offers no option that refuses tool call {call.id!r}: approve it, or cancel "
                "the turn"
            )
        if _first(opts, "allow_once") is not None:
            return None
        allowing = [
            f"{o['optionId']!r} ({o.get('name') or o.get('kind')})"
            for o in opts
            if o.get("kind") == "allow_always"
        ]
        if not allowing:
            return f"the agent offers no option that allows tool call {call.id!r}: it can only be denied"
        return (
            f"the agent offers no option that allows tool call {call.id!r} just once: approve it by "
            f"naming an option in selectedOptionId ({', '.join(allowing)}), or deny it"
        )


async def _cancel_told(over: asyncio.Event | None) -> None:
    """Before a permission request is answered ``cancelled``: a cancelled turn's session/cancel
    goes to the agent first, as ACP orders them (up to 5 s). No await once the turn is over: a
    stop closes the pipe, and an answer sent after that would wait for ever."""
    if over is not None and not over.is_set():
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5.0):
                await over.wait()


def _first(options: list[dict], *kinds: str) -> str | None:
    for kind in kinds:
        for o in options:
            if o.get("kind") == kind:
                return o["optionId"]
    return None


def _selected(option_id: str) -> Any:
    return RequestPermissionResponse(outcome=AllowedOutcome(option_id=option_id, outcome="selected"))


def _canonical(value: Any) -> str:
    """A tool call's input (its content, its locations) as one text, whatever the order of its members."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _own(content: list) -> list:
    """The content items the agent sent (not the host's notes of the files it read or wrote)."""
    return [c for c in content if not (isinstance(c, dict) and c.get("_host"))]
