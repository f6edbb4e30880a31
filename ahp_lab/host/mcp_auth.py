"""MCP authorization: which requirement a token is for, and the HTTP challenges behind them.

The part of :class:`~ahp_lab.host.mcp.McpManager` that handles mcp-servers.md §5. A server asks
for a token by raising an ``McpAuthRequirement`` (the -32401 convention of
``examples/mcp_server.py``) or by an HTTP 401/403 challenge. A resource belongs to the server it
protects: an HTTP server may only name a resource on its own origin, and no server may name a
resource another server of the session serves or waits for, so a copycat is stopped instead of
being handed another server's token. ``authenticate`` delivers a token only to the server-level
or tool-call-level requirement that asked for that resource, in a session the authenticating
connection is subscribed to; the host's redactor remembers the token so it never reaches state.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from typing import Any

from ..protocol.jsonvalue import dumps
from .redaction import masked_literal

__all__ = ["McpAuthorization", "AuthAtConnect", "auth_requirement", "bounded_auth"]

#: What a server's ``McpAuthRequirement`` may hold: it goes into state and to every subscriber, and
#: a server's output is a stranger's (a 30 MB description went to every client in one message,
#: over their limit, and a list of a million empty scopes into state).
REASONS = ("required", "expired", "insufficientScope")
MAX_DESCRIPTION_CHARS = 2_000
MAX_SCOPES, MAX_SCOPE_CHARS = 64, 256
MAX_RESOURCE_URI_CHARS = 2_048
#: Resource metadata (RFC 9728) and an ``oauthClient`` past this JSON size are left out: the
#: resource's URI alone is kept.
MAX_METADATA_BYTES = 16_384


def _origin(url: str) -> str:
    """``scheme://host[:port]`` of a URL (lower case), or the string itself when it has none."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return url
    if not parts.scheme or not parts.netloc:
        return url
    return f"{parts.scheme.lower()}://{(parts.hostname or '').lower()}{port}"


def json_bytes(value: Any) -> int | None:
    """The size of ``value`` as JSON in UTF-8 (``None``: not JSON), for bounding what a server said."""
    try:
        return len(dumps(value, allow_nan=False).encode())
    except (TypeError, ValueError, RecursionError):  # (a lone surrogate cannot be encoded: not JSON)
        return None


def _small(value: Any) -> bool:
    """Whether ``value`` is JSON of at most :data:`MAX_METADATA_BYTES`."""
    size = json_bytes(value)
    return size is not None and size <= MAX_METADATA_BYTES


def bounded_auth(auth: Any) -> dict | None:
    """An MCP server's authorization requirement as the host publishes it: its known fields only,
    each checked and bounded (a ``reason`` outside the spec's is ``"required"``, an over-long
    description is cut, scopes are strings, metadata too large is left out); ``None`` when it names
    no protected resource (``resource.resource``, a URI)."""
    if not isinstance(auth, dict):
        return None
    resource = auth.get("resource")
    uri = resource.get("resource") if isinstance(resource, dict) else None
    if not isinstance(uri, str) or not uri or len(uri) > MAX_RESOURCE_URI_CHARS:
        return None
    if len(resource) > MAX_SCOPES or not _small(resource):
        resource = {"resource": uri}
    out: dict[str, Any] = {
        "reason": auth.get("reason") if auth.get("reason") in REASONS else "required",
        "resource": resource,
    }
    client = auth.get("oauthClient")
    if isinstance(client, dict) and len(client) <= MAX_SCOPES and _small(client):
        out["oauthClient"] = client
    scopes = auth.get("requiredScopes")
    if isinstance(scopes, list):
        kept = [s for s in scopes[:MAX_SCOPES] if isinstance(s, str) and 0 < len(s) <= MAX_SCOPE_CHARS]
        if kept:
            out["requiredScopes"] = kept
    description = auth.get("description")
    if isinstance(description, str) and description:
        cut = len(description) > MAX_DESCRIPTION_CHARS
        out["description"] = description[: MAX_DESCRIPTION_CHARS - 1] + "…" if cut else description
    return out


def auth_requirement(exc: BaseException) -> dict | None:
    """The McpAuthRequirement an MCP error carries (the -32401 convention), if any, bounded."""
    sdk = sys.modules.get("mcp.shared.exceptions")  # no MCP error exists before the SDK is imported
    if sdk is None or not isinstance(exc, sdk.MCPError):
        return None
    data = exc.data if isinstance(exc.data, dict) else {}
    return bounded_auth(data.get("auth"))


class AuthAtConnect(Exception):
    def __init__(self, auth: dict) -> None:
        super().__init__("authorization required")
        self.auth = auth


#: A stranger's token is masked in its server's output only when it looks like a credential: this
#: long at least, with letters and digits, and no spaces, slashes or colons. Any text a stranger
#: chose, masked, corrupted every result of that server, the notebook's included (the "token" "e"
#: made "own***r", "https://" and "required" masked links and words).
MIN_MASKED_TOKEN = 16
#: The tokens of other connections a server's output is masked for (the last ones given).
MAX_GIVEN_TOKENS = 4


def _credential_like(token: str) -> bool:
    return (
        len(token) >= MIN_MASKED_TOKEN
        and any(c.isdigit() for c in token)
        and any(c.isalpha() for c in token)
        and not any(c.isspace() or c in "/:" for c in token)
    )


def masked_tokens(rt: Any, value: Any) -> Any:
    """``value`` (what a server said) with the tokens other connections gave it masked."""
    for token in rt.given:
        value = masked_literal(value, token)
    return value


class McpAuthorization:
    """Authorization of MCP servers and their tool calls (mixed into ``McpManager``)."""

    def authenticate(self, connection: Any, resource: str, token: str, scopes: Any = None) -> bool:
        """Deliver a token to the requirements that asked for ``resource`` in the sessions
        ``connection`` is subscribed to: a server waiting in ``authRequired`` for it, or a tool
        call waiting in ``auth-required`` for it. Nothing else receives it (another server that
        merely names the same resource included); returns whether anything did."""
        subscribed = getattr(connection, "subscriptions", ())
        matched = False
        for rt in list(self.runtimes.values()):
            if rt.session not in subscribed:
                continue
            hit = rt.auth is not None and (rt.auth.get("resource") or {}).get("resource") == resource
            for res, fut in list(rt.call_waiters):
                if res == resource and not fut.done():
                    hit = True
                    fut.set_result(token)
            if not hit:
                continue
            matched = True
            if getattr(connection, "trusted", False):
                self.host.redactor.add(token)  # masked everywhere: the notebook's own secret
            elif _credential_like(token) and token not in rt.given:
                rt.given = [*rt.given[-(MAX_GIVEN_TOKENS - 1) :], token]
            # A stranger's token is masked only in what that server returns (run_tool): added to
            # the redactor every client's text goes through, any string a stranger chose as its
            # "token" (a chat's URI, an action's type) was masked in everyone's actions, and 100,000
            # words of one held the loop 8 s and made every later action 150 times slower.
            rt.token = token
            if rt.auth is not None and (rt.auth.get("resource") or {}).get("resource") == resource:
                rt.auth = None
                if rt.auth_mid_turn:
                    rt.auth_mid_turn = False
                    rt.state = "ready"
                    self._set_state(rt, rt.gen, {"kind": "ready"})
                rt.wake.set()
        return matched

    def _claims(self, rt: Any, auth: dict) -> str | None:
        """Why ``rt`` may not ask for a token for the resource ``auth`` names (``None``: it may).

        A resource belongs to the server it protects: an HTTP server may only name a resource on
        its own origin, and no server may name a resource another server of the session is
        already waiting for or is served from. The host never passes another server's token."""
        resource = str((auth.get("resource") or {}).get("resource") or "")
        url = rt.config.get("url")
        if url and _origin(resource) != _origin(str(url)):
            return f"it asked for a token for {resource}, which is not on its own origin {_origin(str(url))}"
        for other in self.runtimes.values():
            if other is rt or other.session != rt.session:
                continue
            theirs = {(other.auth or {}).get("resource", {}).get("resource")}
            theirs.update(res for res, _ in other.call_waiters)
            if other.config.get("url") and _origin(resource) == _origin(str(other.config["url"])):
                return f"it asked for a token for {resource}, which belongs to the MCP server {other.name}"
            if resource in theirs:
                return (
                    f"it asked for a token for {resource}, which the MCP server {other.name} is waiting for"
                )
        return None

    async def _http_auth(self, rt: Any, exc: BaseException) -> dict | None:
        """The auth requirement behind an error: the -32401 convention or an HTTP 401/403 challenge."""
        auth = auth_requirement(exc)
        if auth is not None or rt.http_challenge is None:
            return auth
        challenge, rt.http_challenge = rt.http_challenge, None
        params: dict[str, str] = {}
        header = challenge.get("header") or ""
        for part in re.finditer(r'(\w+)="?([^",]*)"?', header.split(" ", 1)[-1] if " " in header else ""):
            params[part.group(1)] = part.group(2)
        status = challenge.get("status")
        if status == 403 or params.get("error") == "insufficient_scope":
            reason = "insufficientScope"
        else:
            reason = "expired" if rt.token else "required"
        resource: dict[str, Any] = {"resource": str(rt.config.get("url"))}
        metadata_url = params.get("resource_metadata")
        if metadata_url:
            resource = await self._fetch_resource_metadata(rt, metadata_url) or resource
        out: dict[str, Any] = {"reason": reason, "resource": resource}
        if params.get("scope"):
            out["requiredScopes"] = params["scope"].split()
        out["description"] = params.get("error_description") or f"The MCP server answered HTTP {status}."
        return bounded_auth(out)

    async def _fetch_resource_metadata(self, rt: Any, url: str) -> dict | None:
        """RFC 9728 protected-resource metadata from the URL a ``WWW-Authenticate`` header names:
        only on the server's own origin (a server named any address, the kernel fetched it and the
        answer went into state for every client to read), at most :data:`MAX_METADATA_BYTES`."""
        import httpx2

        if _origin(url) != _origin(str(rt.config.get("url"))) or "://" not in url:
            return None
        try:
            body = b""
            async with httpx2.AsyncClient(timeout=5.0) as client, client.stream("GET", url) as response:
                if response.status_code != 200:
                    return None
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_METADATA_BYTES:
                        return None
            data = json.loads(body)
        except Exception:  # noqa: BLE001 - the metadata is a nicety; the URL is the fallback
            return None
        if isinstance(data, dict) and isinstance(data.get("resource"), str):
            return data
        return None

    async def _wait_call_auth(self, runner: Any, call_id: str, rt: Any, auth: dict) -> str | None:
        """Move the call to ``auth-required`` and wait for ``authenticate`` (None: gave up or stopped)."""
        base = {"turnId": runner.turn_id, "toolCallId": call_id}
        current = runner._tool_call(call_id)
        if current is None or current.get("status") != "running":
            return None
        self.host.dispatch(runner.chat, {"type": "chat/toolCallAuthRequired", **base, "auth": auth})
        if auth.get("reason") in ("required", "expired") and rt.state == "ready":
            rt.auth = auth
            rt.auth_mid_turn = True
            rt.state = "authRequired"
            self._set_state(rt, rt.gen, {"kind": "authRequired", **auth})
        resource = auth["resource"]["resource"]
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        entry = (resource, future)
        rt.call_waiters.append(entry)
        left = asyncio.ensure_future(runner._wait_call(call_id, {"auth-required"}))
        try:
            await asyncio.wait({future, left}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            left.cancel()
            if entry in rt.call_waiters:
                rt.call_waiters.remove(entry)
        if future.done() and not future.cancelled():
            return future.result()
        return None
