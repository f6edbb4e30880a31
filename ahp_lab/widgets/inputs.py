"""View model of the session input queue (``SessionState.inputNeeded``).

Each entry carries ready-made actions (channel + action JSON) for its buttons, so the browser only
fills in what the person typed (an edited tool input, answers) and never invents protocol shapes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from ..protocol.chat import ANSWER_KINDS
from ..protocol.jsonvalue import to_json
from ..reducers.chat import tool_call_parts
from .content import contributor_view, customization_names, result_content_view, tool_call_view
from .sanitize import as_text, is_markdown, one_line, safe_url, text_block

__all__ = ["inputs_view_model", "question_view", "local_approval_view", "tool_input_schema", "ANSWER_KINDS"]

MAX_ENTRIES = 200
MAX_LOCAL = 50
MAX_OPTIONS = 100
MAX_SCHEMA_CHARS = 64 * 1024  # a larger inputSchema is not sent: the edit is raw JSON, unchecked


def _m(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _num(v: Any) -> float | int | None:
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _answer_value(answer: Any) -> dict[str, Any] | None:
    """Current answer of a question as ``{"state", "kind", "value", "freeform"}``."""
    a = _m(answer)
    state = a.get("state")
    if state == "skipped":
        return {"state": "skipped"}
    val = _m(a.get("value"))
    kind = val.get("kind")
    v = val.get("value")
    if kind == "text":
        v = one_line(v, 10_000) if not isinstance(v, str) else as_text(v)[:10_000]
    elif kind == "number":
        v = _num(v)
    elif kind == "boolean":
        v = v if isinstance(v, bool) else None
    elif kind == "selected":
        v = one_line(v, 200) if v is not None else None
    elif kind == "selected-many":
        v = [one_line(x, 200) for x in v[:MAX_OPTIONS]] if isinstance(v, list) else []
    else:
        return None
    ff = val.get("freeformValues")
    return {
        "state": one_line(state, 20) or "draft",
        "kind": kind,
        "value": v,
        "freeform": [one_line(x, 500) for x in ff[:20]] if isinstance(ff, list) else [],
    }


def question_view(q: Any, answers: Any, ref: str) -> dict[str, Any]:
    """Display form of one ``ChatInputQuestion`` with its current (draft) answer."""
    qq = _m(q)
    kind = qq.get("kind")
    kind_s = kind if isinstance(kind, str) else "unknown"
    qid = one_line(qq.get("id"), 200)
    view: dict[str, Any] = {
        "id": qid,
        "kind": kind_s if kind_s in ANSWER_KINDS else "unknown",
        "rawKind": one_line(kind_s, 40),
        "answerKind": ANSWER_KINDS.get(kind_s),
        "title": one_line(qq.get("title"), 200),
        "message": text_block(
            qq.get("message"), f"{ref}/{qid}/message", None, markdown=is_markdown(qq.get("message"))
        ),
        "required": qq.get("required") is True,
        "min": _num(qq.get("min")),
        "max": _num(qq.get("max")),
    }
    if kind_s == "text":
        view["format"] = one_line(qq.get("format"), 40)
        d = qq.get("defaultValue")
        view["default"] = as_text(d)[:10_000] if isinstance(d, str) else None
    elif kind_s in ("number", "integer"):
        view["default"] = _num(qq.get("defaultValue"))
    elif kind_s == "boolean":
        d = qq.get("defaultValue")
        view["default"] = d if isinstance(d, bool) else None
    elif kind_s in ("single-select", "multi-select"):
        opts = qq.get("options")
        view["options"] = [
            {
                "id": one_line(_m(o).get("id"), 200),
                "label": one_line(_m(o).get("label"), 200) or one_line(_m(o).get("id"), 200),
                "description": one_line(_m(o).get("description"), 300),
                "recommended": _m(o).get("recommended") is True,
            }
            for o in (opts[:MAX_OPTIONS] if isinstance(opts, list) else [])
            if isinstance(o, Mapping)
        ]
        view["allowFreeform"] = qq.get("allowFreeformInput") is True
    view["answer"] = _answer_value(_m(answers).get(qq.get("id"))) if isinstance(qq.get("id"), str) else None
    return view


def _options_view(options: Any) -> list[dict[str, Any]]:
    out = []
    for o in options[:MAX_OPTIONS] if isinstance(options, list) else []:
        if not isinstance(o, Mapping):
            continue
        kind = o.get("kind")
        out.append(
            {
                "id": one_line(o.get("id"), 200),
                "label": one_line(o.get("label"), 200) or one_line(o.get("id"), 200),
                "kind": kind if kind in ("approve", "deny") else "approve",
                "group": _num(o.get("group")),
            }
        )
    return out


def _risk_view(risk: Any) -> dict[str, Any] | None:
    r = _m(risk)
    if not r:
        return None
    status = r.get("status")
    safety = _num(r.get("safety"))
    return {
        "status": one_line(status, 20),
        "loading": status == "loading",
        "safety": max(0.0, min(1.0, float(safety))) if safety is not None else None,
        "reason": one_line(r.get("reason"), 500),
    }


def tool_input_schema(session_state: Any, tool_name: Any, contributor: Any = None) -> dict[str, Any] | None:
    """The ``inputSchema`` of the tool a call names, from the session's tool definitions
    (``serverTools`` and each active client's ``tools``; the contributing client's own first), as
    plain JSON; ``None`` when no tool has that name, it declares no schema, or the schema is larger
    than ``MAX_SCHEMA_CHARS``. The view validates an edited input against it before sending."""
    if not isinstance(tool_name, str) or not tool_name:
        return None
    st = _m(session_state)
    owner = _m(contributor).get("clientId") if _m(contributor).get("kind") == "client" else None
    clients = (
        [c for c in st.get("activeClients") or () if isinstance(c, Mapping)]
        if isinstance(st.get("activeClients"), list)
        else []
    )
    clients.sort(key=lambda c: c.get("clientId") != owner)
    lists = [c.get("tools") for c in clients]
    lists.insert(0 if owner is None else len(lists), st.get("serverTools"))
    for tools in lists:
        for d in tools if isinstance(tools, list) else ():
            if isinstance(d, Mapping) and d.get("name") == tool_name:
                schema = d.get("inputSchema")
                if not isinstance(schema, Mapping):
                    return None
                schema = to_json(dict(schema))
                try:
                    size = len(json.dumps(schema))
                except (TypeError, ValueError, RecursionError):
                    return None
                return schema if size <= MAX_SCHEMA_CHARS else None
    return None


#: What a person decides on when asked to confirm a tool call (``tool``) or its result
#: (``result``): an approval from the view goes out only while these are as the view showed them.
DECIDED_ON = {
    "tool": (
        "toolName",
        "toolInput",
        "invocationMessage",
        "confirmationTitle",
        "riskAssessment",
        "edits",
        "options",
    ),
    "result": ("toolName", "toolInput", "content", "success", "pastTenseMessage"),
}
_PHASES = {"pending-confirmation": "tool", "pending-result-confirmation": "result"}


def _decided_on(tc: Any, phase: str) -> dict[str, str]:
    t = _m(tc)
    out = {}
    for k in DECIDED_ON[phase]:
        value = to_json(t.get(k))
        if k == "toolInput" and isinstance(value, str):
            # the same JSON sent again with other spacing or key order is the same input
            with contextlib.suppress(ValueError, RecursionError):
                value = {"json": json.loads(value)}
        out[k] = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return out


def shown_fingerprint(tc: Any, phase: str) -> str:
    """A digest of what a person decides on in tool call ``tc`` (see :data:`DECIDED_ON`)."""
    text = json.dumps([phase, _decided_on(tc, phase)], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _current_call(session_state: Any, chat_state: Any, chat: str, turn_id: Any, tcid: Any) -> Any:
    """Tool call ``tcid`` as it is now: in the chat's active turn when this view holds the chat,
    else in the session's input-needed entry for it (``None`` when neither has it)."""
    active = _m(chat_state).get("activeTurn")
    if isinstance(active, dict) and active.get("id") == turn_id:
        for part in tool_call_parts(active, tcid):
            return part["toolCall"]
    entries = _m(session_state).get("inputNeeded")
    for entry in entries if isinstance(entries, list) else ():
        e = _m(entry)
        tc = _m(e.get("toolCall"))
        if e.get("kind") == "toolConfirmation" and e.get("chat") == chat and tc.get("toolCallId") == tcid:
            return tc
    return None


def changed_since_shown(
    session_state: Any, chat_state: Any, channel: Any, action: Any, shown: Any
) -> str | None:
    """Why an approval clicked in the view must not go out: the tool call it approves changed
    after the view showed it (an agent may send new input while a person reads the old one).
    ``None`` when it may go (a denial always may; an unknown call is the host's to refuse)."""
    a = _m(action)
    if (
        a.get("type") not in ("chat/toolCallConfirmed", "chat/toolCallResultConfirmed")
        or a.get("approved") is not True
    ):
        return None
    tc = _current_call(session_state, chat_state, channel, a.get("turnId"), a.get("toolCallId"))
    phase = _PHASES.get(_m(tc).get("status"))
    if tc is None or phase is None or not isinstance(shown, str) or shown_fingerprint(tc, phase) == shown:
        return None
    return (
        f"the tool call {one_line(a.get('toolCallId'), 80)} changed after it was shown: "
        "look at it again before approving"
    )


def _tool_confirmation(
    entry: Mapping[str, Any], base: dict[str, Any], limits: Mapping[str, int] | None, session: Any
) -> None:
    tc = _m(entry.get("toolCall"))
    phase = _PHASES.get(tc.get("status"), "tool")
    ref = f"input/{base['id']}"
    view = tool_call_view(tc, ref, limits, full=True)
    chat = base["chat"]
    turn_id = entry.get("turnId")
    tcid = tc.get("toolCallId")
    head = {"turnId": turn_id, "toolCallId": tcid}
    tool_input = tc.get("toolInput")
    editable = phase == "tool" and isinstance(tool_input, str) and tc.get("editable") is not False
    options = _options_view(tc.get("options")) if phase == "tool" else []
    if phase == "tool":
        approve = {"type": "chat/toolCallConfirmed", **head, "approved": True, "confirmed": "user-action"}
        deny = {"type": "chat/toolCallConfirmed", **head, "approved": False, "reason": "denied"}
        for o in options:
            base_action = approve if o["kind"] == "approve" else deny
            o["action"] = {"channel": chat, "action": {**base_action, "selectedOptionId": o["id"]}}
    else:
        approve = {"type": "chat/toolCallResultConfirmed", **head, "approved": True}
        deny = {"type": "chat/toolCallResultConfirmed", **head, "approved": False}
    base.update(
        {
            "phase": phase,
            "toolCall": view,
            "toolCallId": one_line(tcid, 200),
            "displayName": view["displayName"],
            "editable": editable,
            "inputText": view["toolInput"]["block"]["text"] if editable and view.get("toolInput") else None,
            "inputTruncated": bool(
                editable and view.get("toolInput") and view["toolInput"]["block"]["truncated"]
            ),
            "inputSchema": tool_input_schema(session, tc.get("toolName"), tc.get("contributor"))
            if editable
            else None,
            "options": options,
            "risk": _risk_view(tc.get("riskAssessment")) if phase == "tool" else None,
            "title": text_block(tc.get("confirmationTitle"), f"{ref}/title", limits)
            if tc.get("confirmationTitle") is not None
            else None,
            "edits": len(_m(tc.get("edits")).get("items") or [])
            if isinstance(_m(tc.get("edits")).get("items"), list)
            else 0,
            "approve": {"channel": chat, "action": approve},
            "deny": {"channel": chat, "action": deny},
            "shown": shown_fingerprint(tc, phase),
        }
    )
    if phase == "result":
        base["result"] = {
            "success": tc.get("success") is True,
            "pastTense": text_block(tc.get("pastTenseMessage"), f"{ref}/pastTense", limits),
            "content": result_content_view(tc.get("content"), f"{ref}/result", limits),
        }


def local_approval_view(approval: Any, ref: str, limits: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Display form of one local approval (a client tool waiting for *this notebook's* own approval
    before it runs; not host state). The buttons send ``{"type": "local_approval", "toolCallId",
    "chat", "approved"}`` to the kernel, which calls ``source.decide_local``."""
    a = _m(approval)
    tool_input = a.get("toolInput")
    return {
        "toolCallId": one_line(a.get("toolCallId"), 200),
        "chat": a.get("chat") if isinstance(a.get("chat"), str) else "",
        "turnId": one_line(a.get("turnId"), 200) if a.get("turnId") is not None else None,
        "toolName": one_line(a.get("toolName"), 120),
        "title": one_line(a.get("title"), 120) or one_line(a.get("toolName"), 120) or "(tool)",
        "clientId": one_line(a.get("clientId"), 120),
        "input": text_block(tool_input, f"{ref}/input", limits, markdown=False)
        if tool_input not in (None, "")
        else None,
    }


def inputs_view_model(
    session_state: Any,
    *,
    read_only: bool = False,
    limits: Mapping[str, int] | None = None,
    chats: Mapping[str, str] | None = None,
    local_approvals: Any = None,
) -> dict[str, Any]:
    """The session's input-needed entries as JSON for the view.

    ``chats`` optionally maps chat URIs to titles. Unknown kinds are listed (without controls).
    ``local_approvals`` (``source.local_approvals()``: client tool calls waiting for this
    notebook's own approval) are attached to the matching ``toolClientExecution`` entry as
    ``localApproval`` (which makes it blocking), or listed as entries of kind ``localApproval``
    when the session has no such entry (yet).
    """
    st = _m(session_state)
    raw = st.get("inputNeeded")
    entries_in = raw if isinstance(raw, list) else []
    clients = {
        _m(c).get("clientId"): one_line(_m(c).get("displayName"), 120)
        for c in (st.get("activeClients") if isinstance(st.get("activeClients"), list) else [])
        if isinstance(c, Mapping)
    }
    titles = dict(chats or {})
    for c in st.get("chats") if isinstance(st.get("chats"), list) else []:
        if isinstance(c, Mapping) and isinstance(c.get("resource"), str):
            titles.setdefault(c["resource"], one_line(c.get("title"), 120))
    out: list[dict[str, Any]] = []
    blocking = 0
    for entry in entries_in[:MAX_ENTRIES]:
        if not isinstance(entry, Mapping):
            continue
        kind = entry.get("kind")
        chat = entry.get("chat") if isinstance(entry.get("chat"), str) else ""
        base: dict[str, Any] = {
            "id": one_line(entry.get("id"), 300),
            "kind": kind if isinstance(kind, str) else "unknown",
            "chat": chat,
            "chatTitle": titles.get(chat, "") if chat else "",
            "turnId": one_line(entry.get("turnId"), 200) if entry.get("turnId") is not None else None,
            "blocking": kind != "toolClientExecution",
        }
        if base["blocking"]:
            blocking += 1
        try:
            if kind == "toolConfirmation":
                _tool_confirmation(entry, base, limits, st)
            elif kind == "toolClientExecution":
                tc = _m(entry.get("toolCall"))
                cid = one_line(entry.get("clientId"), 120) or one_line(
                    _m(tc.get("contributor")).get("clientId"), 120
                )
                base.update(
                    {
                        "clientId": cid,
                        "clientName": clients.get(entry.get("clientId")) or "",
                        "toolCallId": one_line(tc.get("toolCallId"), 200),
                        "toolCall": tool_call_view(tc, f"input/{base['id']}", limits, full=False),
                        "displayName": one_line(tc.get("displayName"), 120)
                        or one_line(tc.get("toolName"), 120)
                        or "(tool)",
                    }
                )
            elif kind == "chatInput":
                req = _m(entry.get("request"))
                rid = req.get("id")
                qs = req.get("questions")
                base.update(
                    {
                        "requestId": one_line(rid, 200),
                        "message": text_block(
                            req.get("message"), f"input/{base['id']}/message", limits, markdown=True
                        )
                        if req.get("message") is not None
                        else None,
                        "url": safe_url(req.get("url")),
                        "rawUrl": one_line(req.get("url"), 300) if req.get("url") is not None else None,
                        "questions": [
                            question_view(q, req.get("answers"), f"input/{base['id']}")
                            for q in (qs[:50] if isinstance(qs, list) else [])
                            if isinstance(q, Mapping)
                        ],
                        "validRequest": isinstance(rid, str),
                    }
                )
            elif kind == "toolAuthentication":
                tc = _m(entry.get("toolCall"))
                auth = _m(tc.get("auth"))
                res = _m(auth.get("resource"))
                scopes = auth.get("requiredScopes")
                base.update(
                    {
                        "toolCall": tool_call_view(tc, f"input/{base['id']}", limits, full=False),
                        "displayName": one_line(tc.get("displayName"), 120) or "(tool)",
                        "contributor": contributor_view(tc.get("contributor"), customization_names(st)),
                        "resource": as_text(res.get("resource"))[:2000]
                        if isinstance(res.get("resource"), str)
                        else "",
                        "reason": one_line(auth.get("reason"), 40),
                        "description": one_line(auth.get("description"), 500),
                        "scopes": [one_line(s, 80) for s in scopes[:20]] if isinstance(scopes, list) else [],
                    }
                )
            else:
                base["kind"] = "unknown"
                base["rawKind"] = one_line(kind, 60) if kind is not None else "?"
        except Exception as exc:  # never let one malformed entry hide the others
            base["kind"] = "unknown"
            base["rawKind"] = f"malformed {one_line(kind, 40)} ({type(exc).__name__})"
        out.append(base)
    local_count = 0
    if isinstance(local_approvals, (list, tuple)):
        by_call = {(e["chat"], e.get("toolCallId")): e for e in out if e["kind"] == "toolClientExecution"}
        for approval in local_approvals[:MAX_LOCAL]:
            if not isinstance(approval, Mapping):
                continue
            try:
                tcid = one_line(approval.get("toolCallId"), 200)
                view = local_approval_view(approval, f"local/{tcid}", limits)
            except Exception:  # a malformed approval must not hide the queue
                continue
            local_count += 1
            entry = by_call.get((view["chat"], tcid))
            if entry is not None:
                entry["localApproval"] = view
                if not entry["blocking"]:
                    entry["blocking"] = True
                    blocking += 1
                continue
            blocking += 1
            out.append(
                {
                    "id": f"local/{view['chat']}#{tcid}",
                    "kind": "localApproval",
                    "chat": view["chat"],
                    "chatTitle": titles.get(view["chat"], "") if view["chat"] else "",
                    "turnId": view["turnId"],
                    "blocking": True,
                    "toolCallId": tcid,
                    "displayName": view["title"],
                    "localApproval": view,
                }
            )
    model: dict[str, Any] = {
        "entries": out,
        "count": len(entries_in) + sum(1 for e in out if e["kind"] == "localApproval"),
        "shown": len(out),
        "blocking": blocking,
        "readOnly": bool(read_only),
    }
    if local_approvals is not None:
        model["local"] = local_count
    return model
