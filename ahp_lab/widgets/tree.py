"""View model of the customization tree (``SessionState.customizations``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ahp_lab.protocol.customizations import MCP_NOT_ALLOWED, child_effective, is_enabled

from .sanitize import one_line, safe_url

__all__ = [
    "CHILD_TYPES",
    "effective_customizations",
    "mcp_state_view",
    "tree_view_model",
]

CHILD_TYPES = ("agent", "skill", "prompt", "rule", "hook", "mcpServer")
GROUP_LABELS = {
    "agent": "Agents",
    "skill": "Skills",
    "prompt": "Prompts",
    "rule": "Rules",
    "hook": "Hooks",
    "mcpServer": "MCP servers",
}
MAX_NODES = 2000


def _str(v: Any, limit: int = 200) -> str:
    return one_line(v, limit) if v is not None else ""


def effective_customizations(customizations: Any) -> list[dict[str, Any]]:
    """Normalise the top-level customization list and compute effective enablement once.

    Returns one record per well-formed top-level entry (entries that are not objects are skipped),
    in order: ``{"entry": <raw>, "id", "type", "enabled", "effective", "isContainer",
    "children": [ {"entry", "id", "type", "enabled", "effective"} ] | None}``.

    * a container (any non-``mcpServer`` type with a ``children`` array) is effective iff enabled;
    * a child is effective iff ``container.enabled and (child.enabled ?? true)``;
    * a top-level ``mcpServer`` (or any leaf) uses its own ``enabled`` (absent ⇒ enabled).
    """
    out: list[dict[str, Any]] = []
    if not isinstance(customizations, list):
        return out
    for entry in customizations:
        if not isinstance(entry, Mapping):
            continue
        typ = entry.get("type")
        typ = typ if isinstance(typ, str) else ""
        enabled = is_enabled(entry)
        kids = entry.get("children")
        is_container = typ != "mcpServer" and isinstance(kids, list)
        children: list[dict[str, Any]] | None = None
        if is_container:
            children = []
            for child in kids:
                if not isinstance(child, Mapping):
                    continue
                ctype = child.get("type")
                c_enabled = is_enabled(child)
                children.append(
                    {
                        "entry": child,
                        "id": child.get("id") if isinstance(child.get("id"), str) else "",
                        "type": ctype if isinstance(ctype, str) else "",
                        "enabled": c_enabled,
                        "effective": child_effective(entry, child),
                    }
                )
        out.append(
            {
                "entry": entry,
                "id": entry.get("id") if isinstance(entry.get("id"), str) else "",
                "type": typ,
                "enabled": enabled,
                "effective": enabled,
                "isContainer": is_container,
                "children": children,
            }
        )
    return out


_MCP_LABELS = {
    "starting": "starting",
    "ready": "ready",
    "authRequired": "authentication required",
    "error": "error",
    "stopped": "stopped",
}


# an MCP server of a closed lab: stopped with the lab
CLOSED_MCP = {
    "kind": "stopped",
    "label": "stopped (lab closed)",
    "busy": False,
    "canStart": False,
    "canStop": False,
}


#: The fingerprint a "not allowed" notice names (``ahp_lab.host.mcp.fingerprint``).
_CONFIGURATION = re.compile(r"\(configuration ([0-9a-f]{16})\)")


def mcp_state_view(state: Any) -> dict[str, Any]:
    """Display form of an ``McpServerState`` (tolerates anything)."""
    st = state if isinstance(state, Mapping) else {}
    kind = st.get("kind")
    kind = kind if isinstance(kind, str) else "unknown"
    view: dict[str, Any] = {
        "kind": kind,
        "label": _MCP_LABELS.get(kind, _str(kind, 40) or "unknown"),
        "busy": kind == "starting",
        "canStart": kind in ("stopped", "error", "unknown") or kind not in _MCP_LABELS,
        "canStop": kind in ("starting", "ready", "authRequired") or kind not in _MCP_LABELS,
    }
    if kind == "error":
        err = st.get("error")
        view["message"] = _str(err.get("message") if isinstance(err, Mapping) else err, 300)
        if isinstance(err, Mapping) and err.get("errorType") == MCP_NOT_ALLOWED:
            view["allowable"] = True  # only the person at the kernel can start it: "Allow"
            view["canStart"] = False
            view["label"] = "not allowed yet"
            # what it would run is read before allowing it: the whole notice, and the fingerprint
            # it names, which "Allow" gives back (a configuration published since is refused)
            view["message"] = _str(err.get("message"), 3000)
            named = _CONFIGURATION.findall(view["message"])
            if named:  # the host's own, after what it would run (a name may hold a decoy before it)
                view["configuration"] = named[-1]
    if kind == "authRequired":
        res = st.get("resource")
        resource = res.get("resource") if isinstance(res, Mapping) else None
        scopes = st.get("requiredScopes")
        auth_servers = res.get("authorization_servers") if isinstance(res, Mapping) else None
        view["auth"] = {
            "reason": _str(st.get("reason"), 40),
            "resource": _str(resource, 300),
            "description": _str(st.get("description"), 300),
            "scopes": [_str(s, 80) for s in scopes[:20]] if isinstance(scopes, list) else [],
            "authorizationServers": [u for u in (safe_url(a) for a in auth_servers[:5]) if u]
            if isinstance(auth_servers, list)
            else [],
        }
    return view


def _load_view(load: Any) -> dict[str, Any] | None:
    if not isinstance(load, Mapping):
        return None
    kind = load.get("kind")
    kind = kind if isinstance(kind, str) else "unknown"
    return {"kind": _str(kind, 40), "message": _str(load.get("message"), 300), "busy": kind == "loading"}


def _matches(node: Mapping[str, Any], text: str) -> bool:
    if not text:
        return True
    hay = " ".join(str(node.get(k) or "") for k in ("name", "id", "uri", "description", "type")).lower()
    return text in hay


def _leaf_node(rec: Mapping[str, Any], parent_enabled: bool | None) -> dict[str, Any]:
    entry = rec["entry"]
    typ = rec["type"]
    node: dict[str, Any] = {
        "id": _str(rec["id"], 300),
        "type": _str(typ, 40) or "unknown",
        "name": _str(entry.get("name"), 200) or _str(rec["id"], 200) or "(unnamed)",
        "uri": _str(entry.get("uri"), 300),
        "description": _str(entry.get("description"), 300),
        "enabled": rec["enabled"],
        "effective": rec["effective"],
        "greyed": parent_enabled is False,
        "toggleable": bool(rec["id"]),
    }
    if typ == "mcpServer":
        node["mcp"] = mcp_state_view(entry.get("state"))
    if typ == "agent" and isinstance(entry.get("model"), str):
        node["model"] = _str(entry.get("model"), 80)
    if typ not in CHILD_TYPES and typ not in ("plugin", "directory"):
        node["unknownType"] = True
    return node


def tree_view_model(
    session_state: Any,
    *,
    type_filter: str = "",
    text_filter: str = "",
    read_only: bool = False,
    closed: bool = False,
    max_nodes: int = MAX_NODES,
) -> dict[str, Any]:
    """The customization tree of a session as JSON for the view.

    ``closed`` (a lab after ``aclose()``): its MCP servers were stopped with it, whatever the
    session's last state said ("ready"), so they show as stopped, with nothing to start or stop.

    ``type_filter`` keeps only children (and bare top-level entries) of that type (``""`` = all);
    ``text_filter`` keeps entries whose name, id, uri, description or type contains the text
    (case-insensitive); a container matching the text keeps all its children. At most
    ``max_nodes`` nodes are emitted (``truncated`` says how many were left out).
    """
    state = session_state if isinstance(session_state, Mapping) else {}
    records = effective_customizations(state.get("customizations"))
    text = (text_filter or "").strip().lower()
    tf = type_filter or ""
    type_counts: dict[str, int] = {}
    containers: list[dict[str, Any]] = []
    emitted = 0
    left_out = 0
    auth_needed: list[dict[str, str]] = []
    for rec in records:
        entry = rec["entry"]
        typ = rec["type"]
        for kid in rec["children"] or ():
            type_counts[kid["type"] or "unknown"] = type_counts.get(kid["type"] or "unknown", 0) + 1
            if kid["type"] == "mcpServer":
                st = kid["entry"].get("state")
                if isinstance(st, Mapping) and st.get("kind") == "authRequired":
                    auth_needed.append(
                        {"id": _str(kid["id"], 300), "name": _str(kid["entry"].get("name"), 200)}
                    )
        if not rec["isContainer"]:
            type_counts[typ or "unknown"] = type_counts.get(typ or "unknown", 0) + 1
            if typ == "mcpServer":
                st = entry.get("state")
                if isinstance(st, Mapping) and st.get("kind") == "authRequired":
                    auth_needed.append({"id": _str(rec["id"], 300), "name": _str(entry.get("name"), 200)})
        load = _load_view(entry.get("load"))
        node: dict[str, Any] = {
            "id": _str(rec["id"], 300),
            "type": _str(typ, 40) or "unknown",
            "name": _str(entry.get("name"), 200) or _str(rec["id"], 200) or "(unnamed)",
            "uri": _str(entry.get("uri"), 300),
            "enabled": rec["enabled"],
            "effective": rec["effective"],
            "isContainer": rec["isContainer"],
            "clientId": _str(entry.get("clientId"), 120) if isinstance(entry.get("clientId"), str) else None,
            "load": load,
            "version": _str(entry.get("version"), 40) if isinstance(entry.get("version"), str) else None,
            "toggleable": bool(rec["id"]),
            "parsed": rec["children"] is not None,
        }
        if typ == "directory":
            node["contents"] = _str(entry.get("contents"), 40)
            node["writable"] = entry.get("writable") is True
        if typ == "mcpServer":
            node["mcp"] = mcp_state_view(entry.get("state"))
        if typ not in ("plugin", "directory", "mcpServer"):
            node["unknownType"] = True
        container_hit = _matches(node, text)
        groups: list[dict[str, Any]] = []
        if rec["children"] is not None:
            by_type: dict[str, list[dict[str, Any]]] = {}
            for kid in rec["children"]:
                ktype = kid["type"] or "unknown"
                if tf and ktype != tf:
                    continue
                leaf = _leaf_node(kid, rec["enabled"])
                if not container_hit and not _matches(leaf, text):
                    continue
                if emitted >= max_nodes:
                    left_out += 1
                    continue
                emitted += 1
                by_type.setdefault(ktype, []).append(leaf)
            order = [t for t in CHILD_TYPES if t in by_type] + sorted(
                t for t in by_type if t not in CHILD_TYPES
            )
            groups = [
                {"type": t, "label": GROUP_LABELS.get(t, _str(t, 40)), "children": by_type[t]} for t in order
            ]
            node["childCount"] = len(rec["children"])
        # keep a container if it matches, or any child does; bare entries filter by type too
        if tf and not groups and (rec["isContainer"] or typ != tf):
            continue
        if text and not container_hit and not groups:
            continue
        if emitted >= max_nodes:
            left_out += 1
            continue
        emitted += 1
        node["groups"] = groups
        containers.append(node)
    if closed:
        for node in containers:
            for n in [node, *(c for g in node["groups"] for c in g["children"])]:
                if "mcp" in n:
                    n["mcp"] = dict(CLOSED_MCP)
        auth_needed = []
    return {
        "containers": containers,
        "typeCounts": [{"type": t, "count": type_counts[t]} for t in sorted(type_counts)],
        "total": sum(1 + len(r["children"] or ()) for r in records),
        "shown": emitted,
        "truncated": left_out,
        "authRequired": auth_needed[:50],
        "readOnly": bool(read_only),
        "typeFilter": tf,
        "textFilter": text_filter or "",
        "hasCustomizations": bool(records),
    }
