"""Display forms shared by several views: contributors, tool-result content, tool-call summaries."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .sanitize import as_text, is_markdown, one_line, text_block

__all__ = [
    "contributor_view",
    "result_content_view",
    "tool_call_view",
    "status_of",
    "MAX_CONTENT_ITEMS",
]

MAX_CONTENT_ITEMS = 50


def _m(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def status_of(tool_call: Any) -> str:
    if type(tool_call) is not dict and not isinstance(tool_call, Mapping):
        return "unknown"
    st = tool_call.get("status")
    return st if type(st) is str else "unknown"


def contributor_view(contributor: Any, names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``{"kind": "host"|"client"|"mcp"|<other>, "label": ..., "id": ...}``; ``names`` (the session's
    customization ids -> names, see :func:`customization_names`) names an MCP server by its name."""
    c = _m(contributor)
    kind = c.get("kind")
    if not c or kind is None:
        return {"kind": "host", "label": "host", "id": None}
    if kind == "client":
        cid = one_line(c.get("clientId"), 120)
        return {"kind": "client", "label": f"client {cid}" if cid else "client", "id": cid or None}
    if kind == "mcp":
        cid = one_line(c.get("customizationId"), 120)
        shown = one_line((names or {}).get(cid), 120) or cid
        return {"kind": "mcp", "label": f"mcp {shown}" if shown else "mcp", "id": cid or None}
    k = one_line(kind, 40) or "unknown"
    return {"kind": k, "label": k, "id": None}


def customization_names(session_state: Any) -> dict[str, str]:
    """The session's customizations (their children too) by id: id -> name."""
    names: dict[str, str] = {}
    for entry in _m(session_state).get("customizations") or ():
        entry = _m(entry)
        for c in (entry, *map(_m, entry.get("children") or ())):
            if isinstance(c.get("id"), str) and isinstance(c.get("name"), str):
                names[c["id"]] = c["name"]
    return names


def result_content_view(
    items: Any, ref: str, limits: Mapping[str, int] | None = None
) -> list[dict[str, Any]]:
    """Display forms of ``ToolResultContent[]`` (at most ``MAX_CONTENT_ITEMS``; binary data is never
    sent to the view, only its type and size)."""
    out: list[dict[str, Any]] = []
    if not isinstance(items, list):
        return out
    for i, item in enumerate(items[:MAX_CONTENT_ITEMS]):
        it = _m(item)
        typ = it.get("type")
        r = f"{ref}/{i}"
        if typ == "text":
            out.append({"type": "text", "block": text_block(it.get("text"), r, limits, markdown=False)})
        elif typ == "embeddedResource":
            data = it.get("data")
            out.append(
                {
                    "type": "embeddedResource",
                    "contentType": one_line(it.get("contentType"), 100),
                    "bytes": (len(data) * 3) // 4 if isinstance(data, str) else 0,
                }
            )
        elif typ == "resource":
            out.append(
                {
                    "type": "resource",
                    "uri": one_line(it.get("uri"), 300),
                    "contentType": one_line(it.get("contentType"), 100),
                }
            )
        elif typ == "fileEdit":
            before = _m(it.get("before"))
            after = _m(it.get("after"))
            diff = _m(it.get("diff"))
            out.append(
                {
                    "type": "fileEdit",
                    "before": one_line(before.get("uri"), 300),
                    "after": one_line(after.get("uri"), 300),
                    "added": diff.get("added") if isinstance(diff.get("added"), int) else None,
                    "removed": diff.get("removed") if isinstance(diff.get("removed"), int) else None,
                }
            )
        elif typ == "terminal":
            res = _m(it.get("result"))
            out.append(
                {
                    "type": "terminal",
                    "title": one_line(it.get("title"), 200),
                    "resource": one_line(it.get("resource"), 300),
                    "exitCode": res.get("exitCode") if isinstance(res.get("exitCode"), int) else None,
                    "preview": text_block(res.get("preview"), r, limits, markdown=False)
                    if res.get("preview") is not None
                    else None,
                }
            )
        elif typ == "subagent":
            out.append(
                {
                    "type": "subagent",
                    "title": one_line(it.get("title"), 200),
                    "resource": one_line(it.get("resource"), 300),
                    "agentName": one_line(it.get("agentName"), 120),
                }
            )
        else:
            out.append({"type": "unknown", "rawType": one_line(typ, 60) if typ is not None else "?"})
    if len(items) > MAX_CONTENT_ITEMS:
        out.append({"type": "more", "count": len(items) - MAX_CONTENT_ITEMS})
    return out


def _tool_input_view(value: Any, ref: str, limits: Mapping[str, int] | None) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        return {
            "ref": True,
            "uri": one_line(value.get("uri"), 300),
            "contentType": one_line(value.get("contentType"), 100),
        }
    if isinstance(value, str) or hasattr(value, "endswith"):
        return {"ref": False, "block": text_block(as_text(value), ref, limits, markdown=False)}
    return None


def _restates_title(summary: str, title: str) -> bool:
    """Whether a past-tense message only restates the tool's title: "Run Unit Tests succeeded" and
    "Run Unit Tests failed" are what ahp_lab's tools write when the tool says nothing better (other
    hosts write "Ran Run Unit Tests"); under the title and its status badge they would read twice."""
    s, t = summary.strip().casefold(), title.strip().casefold()
    return bool(t) and s in (f"ran {t}", f"{t} succeeded", f"{t} failed", t)


def tool_call_view(
    tool_call: Any,
    ref: str,
    limits: Mapping[str, int] | None = None,
    *,
    full: bool = True,
) -> dict[str, Any]:
    """Display form of one ``ToolCallState`` of any status (unknown statuses are tolerated).

    With ``full=False`` only the one-line fields are emitted (for compact lists)."""
    tc = _m(tool_call)
    status = status_of(tc)
    view: dict[str, Any] = {
        "toolCallId": one_line(tc.get("toolCallId"), 200),
        "toolName": one_line(tc.get("toolName"), 120),
        "displayName": one_line(tc.get("displayName"), 120)
        or one_line(tc.get("toolName"), 120)
        or "(unnamed tool)",
        "status": one_line(status, 60),
        "contributor": contributor_view(tc.get("contributor")),
        "intention": one_line(tc.get("intention"), 300),
        "invocation": one_line(tc.get("invocationMessage"), 300),
    }
    if status in ("completed", "pending-result-confirmation"):
        view["success"] = tc.get("success") is True
        summary = one_line(tc.get("pastTenseMessage"), 300)
        view["summary"] = "" if _restates_title(summary, view["displayName"]) else summary
        err = _m(tc.get("error"))
        if err:
            view["errorMessage"] = one_line(err.get("message"), 300)
    # one status to show: a completed call whose result failed reads "failed" (in red), and
    # "completed · failed" where there is room for both (the detail)
    view["failed"] = status == "completed" and tc.get("success") is not True
    view["statusLabel"] = ("completed · failed" if full else "failed") if view["failed"] else view["status"]
    if status == "cancelled":
        view["reason"] = one_line(tc.get("reason"), 40)
        view["reasonMessage"] = one_line(tc.get("reasonMessage"), 300)
    if status == "auth-required":
        auth = _m(tc.get("auth"))
        view["authResource"] = one_line(_m(auth.get("resource")).get("resource"), 300)
        view["authReason"] = one_line(auth.get("reason"), 40)
    if not full:
        return view
    view["invocationBlock"] = text_block(tc.get("invocationMessage"), f"{ref}/invocation", limits)
    if status == "streaming":
        view["partialInput"] = text_block(
            tc.get("partialInput"), f"{ref}/partialInput", limits, markdown=False
        )
    view["toolInput"] = _tool_input_view(tc.get("toolInput"), f"{ref}/toolInput", limits)
    if tc.get("content") is not None:
        view["content"] = result_content_view(tc.get("content"), f"{ref}/content", limits)
    if status in ("completed", "pending-result-confirmation"):
        view["pastTense"] = text_block(tc.get("pastTenseMessage"), f"{ref}/pastTense", limits)
        if tc.get("structuredContent") is not None:
            from .sanitize import json_preview

            view["structuredContent"] = json_preview(tc.get("structuredContent"), f"{ref}/structured", limits)
    if status == "cancelled" and tc.get("reasonMessage") is not None:
        view["reasonBlock"] = text_block(tc.get("reasonMessage"), f"{ref}/reasonMessage", limits)
    sel = _m(tc.get("selectedOption"))
    if sel:
        view["selectedOption"] = {
            "id": one_line(sel.get("id"), 120),
            "label": one_line(sel.get("label"), 120),
        }
    if tc.get("confirmed") is not None:
        view["confirmed"] = one_line(tc.get("confirmed"), 40)
    if is_markdown(tc.get("confirmationTitle")) or isinstance(tc.get("confirmationTitle"), str):
        view["confirmationTitle"] = text_block(tc.get("confirmationTitle"), f"{ref}/title", limits)
    return view
