"""A small MCP server for ahp_lab's notebooks and tests, written with the SDK's ``MCPServer``.

Run it over stdio (the default) or streamable HTTP::

    python examples/mcp_server.py                          # stdio
    python examples/mcp_server.py --http --port 8765       # http://127.0.0.1:8765/mcp

Tools:

* ``echo(text)`` — answers at once with the text.
* ``slow_count(steps, delay)`` — counts slowly and reports MCP progress after every step
  (``notifications/progress``, which ahp_lab shows as ``chat/toolCallContentChanged``).
* ``read_secret(name)`` — demands authorization (see below).
* ``add_tool(name, description)`` / ``remove_tool(name)`` — change the tool list mid-session and
  say so with ``notifications/tools/list_changed`` (the host lists the tools again).
* ``crash(code)`` — exits the process at once (to watch a server die mid-session).

How authorization is demanded
-----------------------------
MCP over stdio has no HTTP status codes, so this server signals an authorization challenge as a
JSON-RPC error on the request that needs it:

* ``code`` = ``-32401`` (``AUTH_ERROR_CODE``), ``message`` = a one-sentence reason;
* ``data`` = ``{"auth": McpAuthRequirement}``: ``reason`` (``"required"``, ``"expired"`` or
  ``"insufficientScope"``), ``resource`` (RFC 9728 protected-resource metadata whose
  ``resource`` is the value to authenticate for), ``requiredScopes`` and ``description``.
  It never contains a token.

The client proves authorization by sending the token in the request's ``_meta`` under
``"ahp_lab/authorization"`` as ``"Bearer <token>"`` (over HTTP the ``Authorization`` header works
too). ahp_lab's host turns the error into ``chat/toolCallAuthRequired`` (and, for
``required``/``expired``, the server's ``authRequired`` state), waits for the ``authenticate``
command for ``resource.resource``, and then retries the request with the token.

* ``read_secret`` without a token fails with reason ``insufficientScope`` (a step-up that blocks
  only that call); with a token that ``--token`` does not accept, with reason ``expired``.
* ``--require-auth`` makes every ``tools/list`` and ``tools/call`` demand the token (reason
  ``required``), so the server itself stops in ``authRequired`` right after its handshake. Over
  streamable HTTP it uses the SDK's own resource-server support instead: requests without a valid
  ``Authorization: Bearer`` header get HTTP 401 with a ``WWW-Authenticate`` header pointing at
  RFC 9728 protected-resource metadata (``resource`` = the server's ``/mcp`` URL).
* Without ``--token`` any non-empty token is accepted; with ``--token T`` only ``T`` is.

Misbehaviour for demonstrating failure states (``--misbehave``): ``crash`` exits with an error on
stderr before the handshake, ``hang`` never answers the handshake, ``garbage`` writes lines that
are not JSON-RPC.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

AUTH_ERROR_CODE = -32401
TOKEN_META_KEY = "ahp_lab/authorization"
DEFAULT_RESOURCE = "https://mcp.example.invalid/ahp-lab-demo"
AUTH_SERVER = "https://auth.example.invalid"
SECRET_SCOPE = "secrets:read"


def _token_from(meta: Any, headers: Any) -> str | None:
    value = None
    if isinstance(meta, dict):
        value = meta.get(TOKEN_META_KEY)
    if not value and headers is not None:
        value = headers.get("authorization") or headers.get("Authorization")
    if not isinstance(value, str) or not value.strip():
        return None
    value = value.strip()
    return value[7:].strip() if value.lower().startswith("bearer ") else value


class AuthPolicy:
    """Which tokens count and how a challenge looks (see the module docstring)."""

    def __init__(self, resource: str, accepted: str | None) -> None:
        self.resource = resource
        self.accepted = accepted

    def challenge(self, reason: str, message: str, scopes: list[str] | None = None) -> MCPError:
        auth: dict[str, Any] = {
            "reason": reason,
            "resource": {
                "resource": self.resource,
                "resource_name": "ahp_lab demo MCP server",
                "authorization_servers": [AUTH_SERVER],
                "scopes_supported": [SECRET_SCOPE],
                "bearer_methods_supported": ["header"],
            },
            "description": message,
        }
        if scopes:
            auth["requiredScopes"] = scopes
        return MCPError(AUTH_ERROR_CODE, message, {"auth": auth})

    def check(self, token: str | None, *, reason_if_missing: str, scopes: list[str] | None = None) -> None:
        if token is None:
            raise self.challenge(reason_if_missing, "This request needs an access token.", scopes)
        if self.accepted is not None and token != self.accepted:
            raise self.challenge("expired", "The access token was not accepted (expired or revoked).", scopes)


class RequireAuth:
    """Server middleware: with ``--require-auth`` every tools request needs a token."""

    def __init__(self, policy: AuthPolicy) -> None:
        self.policy = policy

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.request_id is not None and ctx.method in ("tools/list", "tools/call"):
            params = ctx.params if isinstance(ctx.params, dict) else {}
            token = _token_from(params.get("_meta"), getattr(ctx.request, "headers", None))
            self.policy.check(token, reason_if_missing="required")
        return await call_next(ctx)


class DemoTokenVerifier:
    """Bearer tokens for streamable HTTP with ``--require-auth``: the SDK answers HTTP 401 without one."""

    def __init__(self, policy: AuthPolicy) -> None:
        self.policy = policy

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        if not token or (self.policy.accepted is not None and token != self.policy.accepted):
            return None
        return AccessToken(
            token=token, client_id="ahp-lab", scopes=[SECRET_SCOPE], resource=self.policy.resource
        )


def build_server(policy: AuthPolicy, require_auth: bool = False, http_url: str | None = None) -> MCPServer:
    options: dict[str, Any] = {}
    if require_auth and http_url:  # real HTTP 401s with RFC 9728 metadata, from the SDK itself
        from mcp.server.auth.settings import AuthSettings

        policy.resource = http_url
        options["token_verifier"] = DemoTokenVerifier(policy)
        options["auth"] = AuthSettings(issuer_url=AUTH_SERVER, resource_server_url=http_url)
    elif require_auth:
        options["middleware"] = [RequireAuth(policy)]
    server = MCPServer(
        "ahp-lab-demo",
        title="ahp_lab demo server",
        version="0.1.0",
        instructions="A demo server: echo, a slow counter with progress, and a tool that needs a token.",
        **options,
    )

    @server.tool(title="Echo")
    def echo(text: str) -> str:
        """Send the text back unchanged."""
        return text

    @server.tool(title="Slow count")
    async def slow_count(ctx: Context, steps: int = 5, delay: float = 0.2) -> str:
        """Count to `steps`, pausing `delay` seconds between steps and reporting progress after each."""
        steps = max(1, min(int(steps), 1000))
        for i in range(1, steps + 1):
            await asyncio.sleep(max(0.0, min(float(delay), 10.0)))
            await ctx.report_progress(i, steps, f"counted {i} of {steps}")
        return f"counted to {steps}"

    @server.tool(title="Read a secret")
    def read_secret(ctx: Context, name: str = "launch-code") -> str:
        """Read a named secret; needs an access token with the secrets:read scope."""
        token = _token_from(ctx.request_context.meta, ctx.headers)
        policy.check(token, reason_if_missing="insufficientScope", scopes=[SECRET_SCOPE])
        return f"the secret {name!r} is 'swordfish'"

    @server.tool(title="Add a tool")
    async def add_tool(ctx: Context, name: str = "extra", description: str = "An added tool.") -> str:
        """Add a tool that echoes its text and tell the client (``notifications/tools/list_changed``)."""

        def added(text: str = "") -> str:
            return f"{name}: {text}"

        server.add_tool(added, name=name, description=description)
        await ctx.session.send_tool_list_changed()
        return f"added the tool {name}"

    @server.tool(title="Remove a tool")
    async def remove_tool(ctx: Context, name: str) -> str:
        """Remove a tool and tell the client (``notifications/tools/list_changed``)."""
        server.remove_tool(name)
        await ctx.session.send_tool_list_changed()
        return f"removed the tool {name}"

    @server.tool(title="Crash")
    def crash(code: int = 3) -> str:
        """Exit the server process at once (for watching a server die)."""
        print(f"crash tool called: exiting with status {code}", file=sys.stderr, flush=True)
        os._exit(int(code))

    return server


def _misbehave(kind: str) -> None:
    if kind == "crash":
        print("demo server: refusing to start (--misbehave crash)", file=sys.stderr, flush=True)
        sys.exit(2)
    if kind == "hang":
        print("demo server: will never answer (--misbehave hang)", file=sys.stderr, flush=True)
        while True:
            time.sleep(3600)
    if kind == "garbage":
        print("demo server: speaking garbage (--misbehave garbage)", file=sys.stderr, flush=True)
        for line in sys.stdin:
            sys.stdout.write("this is not JSON-RPC: " + line[:40].strip() + "\n")
            sys.stdout.flush()
        sys.exit(0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--token", default=os.environ.get("AHP_DEMO_TOKEN"), help="the only accepted token")
    parser.add_argument("--resource", default=DEFAULT_RESOURCE, help="the protected resource URI")
    parser.add_argument("--require-auth", action="store_true", help="every tools request needs a token")
    parser.add_argument("--misbehave", choices=["crash", "hang", "garbage"])
    args = parser.parse_args(argv)
    if args.misbehave:
        _misbehave(args.misbehave)
    http_url = f"http://{args.host}:{args.port}/mcp" if args.http else None
    server = build_server(
        AuthPolicy(args.resource, args.token), require_auth=args.require_auth, http_url=http_url
    )
    if args.http:
        server.run("streamable-http", host=args.host, port=args.port)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
