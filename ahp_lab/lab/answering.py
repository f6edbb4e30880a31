"""Answering from a cell: ``approve``, ``deny`` and ``answer`` of :class:`~ahp_lab.Lab`.

A tool call waiting for confirmation gets ``chat/toolCallConfirmed`` (or, waiting for its result
to be confirmed, ``chat/toolCallResultConfirmed``) with the option the verdict names, or the call's
first one-time option of the verdict's kind; an open input request gets ``chat/inputCompleted``
with plain values turned into the request's answer shapes. A local approval of this notebook
(a tool with ``approval="always"``) is answered in place.
"""

from __future__ import annotations

import json
from typing import Any

from ..store import Transition
from ..tools import ToolError
from .turns import ToolCall, answer_for, answer_local, read_verdict

__all__ = ["Answering"]


class Answering:
    """The answering half of :class:`~ahp_lab.Lab` (a mixin: it uses the lab's client and dispatch)."""

    def _pending_calls(self, chat: str) -> list[tuple[str, dict]]:
        state = self.client.confirmed(chat) or {}
        active = state.get("activeTurn") or {}
        return [
            (active.get("id"), p["toolCall"])
            for p in active.get("responseParts") or ()
            if p.get("kind") == "toolCall"
            and p["toolCall"].get("status") in ("pending-confirmation", "pending-result-confirmation")
        ]

    def _decision(self, chat: str, turn_id: str, tc: dict, verdict: Any) -> dict:
        """The ``chat/toolCallConfirmed`` or ``chat/toolCallResultConfirmed`` action for a verdict."""
        if callable(verdict):
            verdict = verdict(ToolCall(tc, turn_id, chat, self))
        read = read_verdict(verdict)
        if read is None:
            raise ValueError("the verdict is None: nothing to answer (None leaves a call to a person)")
        approved, option, edit = read
        denied = approved is False
        if approved is None:  # an option without a yes or no: its kind decides
            approved = self._option_kind(tc, option) != "deny"
        base = {"turnId": turn_id, "toolCallId": tc.get("toolCallId")}
        if tc.get("status") == "pending-result-confirmation":
            return {"type": "chat/toolCallResultConfirmed", **base, "approved": approved}
        action: dict[str, Any] = {"type": "chat/toolCallConfirmed", **base}
        if option is None and tc.get("options"):  # the first one-time option of the verdict's kind
            option = _default_option(tc, "approve" if approved else "deny")
        if option is not None:
            kind = self._option_kind(tc, option)
            if kind is None:
                raise ValueError(f"{tc.get('displayName')} has no confirmation option {option!r}")
            if denied and kind == "approve":
                raise ValueError(
                    f"{option!r} approves {tc.get('displayName')}: a denial picks one of its deny options"
                )
            approved = kind == "approve"
            action["selectedOptionId"] = option
        action["approved"] = approved
        if approved:
            action["confirmed"] = "user-action"
            if edit is not None:
                self._check_edit(tc, edit)
                action["editedToolInput"] = edit if isinstance(edit, str) else json.dumps(edit)
        else:
            action["reason"] = "denied"
        return action

    def _check_edit(self, tc: dict, edit: Any) -> None:
        """An edited input for a tool this lab knows (its own client tools, its host's server
        tools) must fit the tool's schema: the call would otherwise fail when it runs."""
        name = tc.get("toolName")
        client = self.client
        tool = client.tools.get(client.tool_names.get(name, name))
        host = getattr(self, "host", None)
        if tool is None and host is not None:
            tool = host.server_tools.get(name)
        if tool is None:
            return  # another client's or an MCP server's tool: its owner checks the input
        try:
            tool.parse_input(edit)
        except ToolError as exc:
            raise ValueError(
                f"the edited input does not fit the tool's schema ({exc}); nothing was sent"
            ) from None

    def _decide(self, chat: str, turn_id: str, tc: dict, verdict: Any) -> int:
        """Answer a confirmation without waiting (used by ``approve=`` policies inside the loop);
        returns the dispatch's client seq, whose echo says whether the host took it."""
        return self.client.dispatch(chat, self._decision(chat, turn_id, tc, verdict))

    @staticmethod
    def _option_kind(tc: dict, option_id: str) -> str | None:
        for option in tc.get("options") or ():
            if option.get("id") == option_id:
                return option.get("kind")
        return None

    def approve(
        self,
        tool_call_id: str | None = None,
        *,
        option: str | None = None,
        edit: Any = None,
        chat: str | None = None,
    ) -> Transition | None:
        """Approve a tool call waiting for confirmation (the newest one by default).

        ``option`` picks one of the call's confirmation options; ``edit`` replaces its input.
        Also approves a local approval of this notebook (tools with ``approval="always"``).
        Returns the accepted transition; raises :class:`LookupError` when no call (or none with
        that id) waits for confirmation, nothing sent, and :class:`ActionRejected` with the host's
        reason when the host refuses the approval.
        """
        verdict = {"option": option, "edit": edit} if (option or edit is not None) else True
        return self._answer_call(tool_call_id, verdict, chat)

    def deny(
        self, tool_call_id: str | None = None, *, option: str | None = None, chat: str | None = None
    ) -> Transition | None:
        """Deny a tool call waiting for confirmation (or reject a result waiting for confirmation).

        ``option`` picks one of the call's deny options (an ACP agent's ``reject_always``, say);
        without it a call that has options gets its first one-time deny option.
        """
        return self._answer_call(tool_call_id, {"option": option, "deny": True} if option else False, chat)

    def _answer_call(self, tool_call_id: str | None, verdict: Any, chat: str | None) -> Transition | None:
        chat = chat or self.chat
        for approval in list(self.client.approvals.values()):
            if tool_call_id in (None, approval.tool_call_id) and approval.chat == chat:
                answer_local(approval, verdict)
                return None
        pending = self._pending_calls(chat)
        if tool_call_id is not None:
            pending = [(t, tc) for t, tc in pending if tc.get("toolCallId") == tool_call_id]
        if not pending:
            raise LookupError(
                "no tool call is waiting for confirmation"
                + (f" with id {tool_call_id!r}" if tool_call_id else "")
            )
        turn_id, tc = pending[-1]
        return self.dispatch(self._decision(chat, turn_id, tc, verdict), chat)

    def _completion(self, chat: str, request_id: str | None, answers: dict | None, response: str) -> dict:
        state = self.client.confirmed(chat) or {}
        active = state.get("activeTurn") or {}
        open_requests = [
            p["request"]
            for p in active.get("responseParts") or ()
            if p.get("kind") == "inputRequest" and p.get("response") is None
        ]
        if request_id is not None:
            open_requests = [r for r in open_requests if r.get("id") == request_id]
        if not open_requests:
            raise LookupError("no input request is open" + (f" with id {request_id!r}" if request_id else ""))
        request = open_requests[-1]
        questions = {q.get("id"): q for q in request.get("questions") or ()}
        asked = ", ".join(repr(q) for q in questions) or "none"
        unknown = [qid for qid in answers or {} if qid not in questions]
        if unknown:
            raise ValueError(
                f"answers names {', '.join(repr(q) for q in unknown)}: input request {request.get('id')!r} "
                f"has no such question (its questions: {asked})"
            )
        if response == "accept":
            earlier = request.get("answers") or {}
            missing = [
                qid
                for qid, q in questions.items()
                if q.get("required") and (answers or {}).get(qid) is None and qid not in earlier
            ]
            if missing:
                raise ValueError(
                    f"input request {request.get('id')!r} requires an answer to "
                    f"{', '.join(repr(q) for q in missing)}; answers has none"
                )
        built = {
            qid: value
            if isinstance(value, dict) and "state" in value
            else answer_for(questions.get(qid), value)
            for qid, value in (answers or {}).items()
        }
        action: dict[str, Any] = {
            "type": "chat/inputCompleted",
            "requestId": request.get("id"),
            "response": response,
        }
        if built:
            action["answers"] = built
        return action

    def answer(
        self,
        request_id: str | None = None,
        answers: dict | None = None,
        *,
        response: str = "accept",
        chat: str | None = None,
    ) -> Transition:
        """Answer an open input request (the newest one by default).

        ``answers`` maps question ids to plain values (``{"name": "demo", "workers": 3}``) or to
        full ``ChatInputAnswer`` objects; ``response`` is ``"accept"``, ``"decline"`` or
        ``"cancel"``. Returns the accepted transition. Checked before anything is sent:
        :class:`LookupError` when no request (or none with that id) is open, and
        :class:`ValueError` for an answer to a question the request does not ask or, when
        accepting, a required question left unanswered. The host's refusal (a value outside a
        question's bounds, say) raises :class:`ActionRejected` with its reason.
        """
        chat = chat or self.chat
        return self.dispatch(self._completion(chat, request_id, answers, response), chat)


def _default_option(tc: dict, kind: str) -> str | None:
    """The first option of ``kind`` in the one-time group (group 0 or no group), else the first of
    ``kind``; ``None`` when the call offers none. An approval is never given through an option of
    another group when the call does have a one-time group (ACP's "allow always" is in group 1
    beside a one-time "reject"): that is ``ValueError``, since a plain approval grants once. A
    plain denial names no option outside the one-time group (``None``): naming ACP's "reject
    always" would make the agent's bridge remember it as the person's standing choice."""
    options = [o for o in tc.get("options") or () if isinstance(o, dict)]
    of_kind = [o for o in options if o.get("kind") == kind]
    once = [o for o in of_kind if not o.get("group")]
    if once:
        return once[0].get("id")
    if kind == "deny":
        return None
    if of_kind and kind == "approve" and any(not o.get("group") for o in options):
        offered = ", ".join(f"{o.get('id')!r} ({o.get('label')})" for o in of_kind)
        raise ValueError(
            f"{tc.get('displayName') or tc.get('toolName')} offers no one-time approve option, only "
            f"{offered}; choose one with lab.approve(option=...)"
        )
    return of_kind[0].get("id") if of_kind else None
