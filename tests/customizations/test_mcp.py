"""Real MCP servers (examples/mcp_server.py subprocesses) through the real stack."""

from __future__ import annotations

import asyncio
import http.server
import io
import json
import socket
import subprocess
import sys
import threading

import pytest

from ahp_lab import Lab
from ahp_lab.agents.scripted import call
from ahp_lab.store import Store

from .conftest import DEMO_PLUGIN, DEMO_SERVER, arun, by_type, demo_server, find, wait_server, wait_state

DEMO_TOOLS = {"echo", "slow_count", "read_secret", "crash"}


def server_id(lab: Lab, name: str) -> str:
    return next(e["id"] for e in by_type(lab.session_state, "mcpServer") if e["name"].endswith(name))


def tool_names(state) -> set[str]:
    return {t["name"] for t in (state or {}).get("serverTools") or ()}


def test_a_plugin_server_reaches_ready_and_its_tools_run_end_to_end():
    async def main():
        lab = await Lab.open(plugins=[DEMO_PLUGIN])  # .mcp.json runs ${PLUGIN_ROOT}/../../mcp_server.py
        try:
            await wait_state(lab, lambda s: by_type(s, "mcpServer") or None)
            sid = server_id(lab, "demo")
            await wait_server(lab, sid, "ready")
            prefix = "mcp__plugin_ahp-lab-demo_demo__"
            assert tool_names(lab.session_state) >= {prefix + t for t in DEMO_TOOLS}
            turn = await lab.send(f"please {prefix}echo text=hello")  # the scripted agent picks the tool
            [tc] = turn.tool_calls
            assert (tc.status, tc.success, tc.result_text) == ("completed", True, "hello")
            assert tc.state["contributor"] == {"kind": "mcp", "customizationId": sid}
            turn = await lab.send("count", script=[call(prefix + "slow_count", steps=3, delay=0.01)])
            [tc] = turn.tool_calls
            assert tc.result_text == "counted to 3"
            progress = [
                t.action["content"][0]["text"]
                for t in lab.transitions
                if t.type == "chat/toolCallContentChanged" and t.action["toolCallId"] == tc.id
            ]
            assert progress == ["counted 1 of 3 (1/3)", "counted 2 of 3 (2/3)", "counted 3 of 3 (3/3)"]
            # every change went through the store: the exported log replays to the same states
            buffer = io.StringIO()
            lab.store.export(buffer)
            buffer.seek(0)
            assert Store.load(buffer).states() == lab.store.states()
        finally:
            await lab.aclose()

    arun(main())


def test_a_plugin_turned_off_and_on_at_once_shows_its_server_ready():
    """A plugin turned off and on while its server was starting (Run All of notebook 02) left the
    server shown "starting" for 8 s, though it ran: the start reset the stop, the first connection
    served on unseen and the second waited for it (a first-hour user)."""

    async def main():
        lab = await Lab.open(plugins=[DEMO_PLUGIN])
        try:
            await wait_state(lab, lambda s: by_type(s, "mcpServer") or None)
            sid = server_id(lab, "demo")
            plugin = lab.session_state["customizations"][0]["id"]
            await asyncio.sleep(0)  # the server's start is under way
            lab.dispatch({"type": "session/customizationToggled", "id": plugin, "enabled": False})
            await asyncio.sleep(0)
            lab.dispatch({"type": "session/customizationToggled", "id": plugin, "enabled": True})
            await wait_server(lab, sid, "ready", timeout=7.5)  # before the 8 s it waited
        finally:
            await lab.aclose()

    arun(main())


def test_auth_required_then_authenticate_resumes_the_tool_call():
    async def main():
        lab = await Lab.open(mcp_servers={"vault": demo_server("--token", "s3cret")})
        try:
            sid = server_id(lab, "vault")
            await wait_server(lab, sid, "ready")
            task = lab.start("read", script=[call("mcp__vault__read_secret", name="launch-code")])

            def blocked(s):
                return next(
                    (e for e in s.get("inputNeeded") or () if e["kind"] == "toolAuthentication"), None
                )

            entry = await wait_state(lab, blocked)
            auth = entry["toolCall"]["auth"]
            assert entry["toolCall"]["status"] == "auth-required"
            assert (auth["reason"], auth["requiredScopes"]) == ("insufficientScope", ["secrets:read"])
            resource = auth["resource"]["resource"]
            assert await lab.client.request("authenticate", {"resource": resource, "token": "s3cret"}) == {}
            turn = await asyncio.wait_for(task, 20)
            [tc] = turn.tool_calls
            assert (tc.status, tc.success) == ("completed", True)
            assert "swordfish" in tc.result_text
            kinds = [t.type for t in lab.transitions if t.action.get("toolCallId") == tc.id]
            assert kinds.index("chat/toolCallAuthRequired") < kinds.index("chat/toolCallAuthResolved")
            assert kinds[-1] == "chat/toolCallComplete"
            assert "inputNeeded" not in lab.session_state
            assert "s3cret" not in json.dumps(lab.store.states())  # the token never reaches state
        finally:
            await lab.aclose()

    arun(main())


def test_a_client_may_give_up_on_a_call_blocked_on_auth():
    """mcp-servers §5.2: instead of authenticating, a client completes the call as failed."""

    async def main():
        lab = await Lab.open(mcp_servers={"vault": demo_server("--token", "s3cret")})
        try:
            await wait_server(lab, server_id(lab, "vault"), "ready")
            task = lab.start("read", script=[call("mcp__vault__read_secret", name="launch-code")])
            entry = await wait_state(
                lab,
                lambda s: next(
                    (e for e in s.get("inputNeeded") or () if e["kind"] == "toolAuthentication"), None
                ),
            )
            tc = entry["toolCall"]
            await lab.adispatch(
                {
                    "type": "chat/toolCallComplete",
                    "turnId": entry["turnId"],
                    "toolCallId": tc["toolCallId"],
                    "result": {
                        "success": False,
                        "pastTenseMessage": "Gave up",
                        "error": {"message": "no access", "code": "cancelled"},
                    },
                }
            )
            turn = await asyncio.wait_for(task, 20)
            [done] = turn.tool_calls
            assert (done.status, done.success, done.state["error"]["code"]) == (
                "completed",
                False,
                "cancelled",
            )
            assert "inputNeeded" not in lab.session_state
        finally:
            await lab.aclose()

    arun(main())


def test_a_server_that_demands_auth_at_connect_waits_in_auth_required():
    async def main():
        lab = await Lab.open(mcp_servers={"locked": demo_server("--require-auth", "--token", "good")})
        try:
            sid = server_id(lab, "locked")
            state = (await wait_server(lab, sid, "authRequired"))["state"]
            assert state["reason"] == "required" and '"token"' not in json.dumps(state)
            assert not any(n.startswith("mcp__locked__") for n in tool_names(lab.session_state))
            resource = state["resource"]["resource"]
            await lab.client.request("authenticate", {"resource": resource, "token": "bad"})
            await wait_state(lab, lambda s: (find(s, sid)["state"].get("reason") == "expired") or None)
            await lab.client.request("authenticate", {"resource": resource, "token": "good"})
            await wait_server(lab, sid, "ready")
            turn = await lab.send("x", script=[call("mcp__locked__echo", text="in")])
            assert turn.tool_calls[0].result_text == "in"
        finally:
            await lab.aclose()

    arun(main())


def test_crashing_hanging_garbage_and_missing_servers_end_in_error_with_a_reason():
    async def main():
        lab = await Lab.open(
            mcp_servers={
                "crasher": demo_server("--misbehave", "crash"),
                "hanger": demo_server("--misbehave", "hang", startTimeout=1.5),
                "babbler": demo_server("--misbehave", "garbage"),
                "ghost": {"command": "/nonexistent/mcp-server"},
                "fine": demo_server(),
            }
        )
        try:
            errors = {}
            for name in ("crasher", "hanger", "babbler", "ghost"):
                entry = await wait_server(lab, server_id(lab, name), "error", timeout=15)
                errors[name] = entry["state"]["error"]
            assert "exited before completing its handshake" in errors["crasher"]["message"]
            assert "refusing to start" in errors["crasher"]["message"]  # the stderr tail
            assert "refusing to start" in errors["crasher"]["stack"]
            assert "did not answer its handshake within 1.5 s" in errors["hanger"]["message"]
            assert "not MCP JSON-RPC" in errors["babbler"]["message"]
            # the program is named (its path and arguments are not: they may hold a token)
            assert errors["ghost"]["message"].endswith(
                "could not be started: No such file or directory (mcp-server)."
            )
            for error in errors.values():
                assert error["message"].endswith(".") and error["message"].count(". ") == 0
            # the rest of the tree carries on
            await wait_server(lab, server_id(lab, "fine"), "ready")
        finally:
            await lab.aclose()

    arun(main())


def test_a_server_that_dies_mid_session_goes_to_error_and_its_tools_leave():
    async def main():
        lab = await Lab.open(mcp_servers={"fragile": demo_server()})
        try:
            sid = server_id(lab, "fragile")
            await wait_server(lab, sid, "ready")
            turn = await lab.send("x", script=[call("mcp__fragile__crash", code=7)])
            assert turn.tool_calls[0].success is False
            entry = await wait_server(lab, sid, "error")
            assert "exited while it was running" in entry["state"]["error"]["message"]
            assert "exiting with status 7" in entry["state"]["error"]["stack"]
            await wait_state(
                lab, lambda s: not any(n.startswith("mcp__fragile__") for n in tool_names(s)) or None
            )
            # a start request brings it back
            await lab.adispatch({"type": "session/mcpServerStartRequested", "id": sid})
            await wait_server(lab, sid, "ready")
        finally:
            await lab.aclose()

    arun(main())


def test_stop_and_start_requests_and_disabling_the_plugin(demo_plugin):
    async def main():
        lab = await Lab.open(plugins=[demo_plugin])
        try:
            await wait_state(lab, lambda s: by_type(s, "mcpServer") or None)
            sid = server_id(lab, "demo")
            plugin_id = lab.session_state["customizations"][0]["id"]
            await wait_server(lab, sid, "ready")
            await lab.adispatch({"type": "session/mcpServerStopRequested", "id": sid})
            await wait_state(
                lab, lambda s: (find(s, sid)["state"] == {"kind": "stopped"} and not tool_names(s)) or None
            )
            await lab.adispatch({"type": "session/mcpServerStartRequested", "id": sid})
            await wait_server(lab, sid, "ready")
            assert tool_names(lab.session_state)
            # disabling the container stops its servers; enabling it starts them again
            await lab.adispatch({"type": "session/customizationToggled", "id": plugin_id, "enabled": False})
            await wait_state(
                lab, lambda s: (find(s, sid)["state"] == {"kind": "stopped"} and not tool_names(s)) or None
            )
            assert find(lab.session_state, sid)["enabled"] is True  # intent of the child is untouched
            await lab.adispatch({"type": "session/mcpServerStartRequested", "id": sid})
            entry = await wait_server(lab, sid, "error")
            assert "is disabled" in entry["state"]["error"]["message"]
            await lab.adispatch({"type": "session/customizationToggled", "id": plugin_id, "enabled": True})
            await wait_server(lab, sid, "ready")
            # disabling the server itself stops it too
            await lab.adispatch({"type": "session/customizationToggled", "id": sid, "enabled": False})
            await wait_server(lab, sid, "stopped")
        finally:
            await lab.aclose()

    arun(main())


def test_a_streamable_http_server_by_url_with_a_real_http_401():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, str(DEMO_SERVER), "--http", "--port", str(port), "--require-auth", "--token", "tok"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    async def port_open() -> None:
        while True:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                return
            except OSError:
                await asyncio.sleep(0.05)

    async def main():
        await asyncio.wait_for(port_open(), 20)
        lab = await Lab.open(mcp_servers={"web": {"url": f"http://127.0.0.1:{port}/mcp"}})
        try:
            sid = server_id(lab, "web")
            url = f"http://127.0.0.1:{port}/mcp"
            assert find(lab.session_state, sid)["uri"] == url
            # a real HTTP 401 with RFC 9728 metadata: the server waits in authRequired
            state = (await wait_server(lab, sid, "authRequired"))["state"]
            assert state["reason"] == "required"
            assert state["resource"]["resource"] == url
            assert state["resource"]["authorization_servers"] == ["https://auth.example.invalid"]
            await lab.client.request("authenticate", {"resource": url, "token": "tok"})
            await wait_server(lab, sid, "ready")
            turn = await lab.send("x", script=[call("mcp__web__echo", text="over http")])
            assert turn.tool_calls[0].result_text == "over http"
            turn = await lab.send("x", script=[call("mcp__web__read_secret")])
            assert "swordfish" in turn.tool_calls[0].result_text  # the bearer token rides along
        finally:
            await lab.aclose()

    try:
        arun(main())
    finally:
        proc.terminate()
        proc.wait(10)


def test_an_expired_token_mid_turn_blocks_the_server_too_and_a_stop_ends_the_wait():
    async def main():
        lab = await Lab.open(mcp_servers={"vault": demo_server("--token", "good")})
        try:
            sid = server_id(lab, "vault")
            await wait_server(lab, sid, "ready")

            def waiting(reason):
                def check(s):
                    entry = next(
                        (e for e in s.get("inputNeeded") or () if e["kind"] == "toolAuthentication"), None
                    )
                    return entry if entry and entry["toolCall"]["auth"]["reason"] == reason else None

                return check

            task = lab.start("read", script=[call("mcp__vault__read_secret")])
            entry = await wait_state(lab, waiting("insufficientScope"))
            resource = entry["toolCall"]["auth"]["resource"]["resource"]
            await lab.client.request("authenticate", {"resource": resource, "token": "stale"})
            await wait_state(lab, waiting("expired"))
            server = await wait_server(lab, sid, "authRequired")  # raised mid-turn: the server is blocked too
            assert server["state"]["reason"] == "expired"
            assert lab.session_state["status"] & 16  # InputNeeded at session level
            await lab.client.request("authenticate", {"resource": resource, "token": "good"})
            turn = await asyncio.wait_for(task, 20)
            assert turn.tool_calls[0].success is True
            assert find(lab.session_state, sid)["state"] == {"kind": "ready"}
            # a stop request while a call waits for authorization fails the call and clears the entry
            task = lab.start("read", script=[call("mcp__vault__read_secret", name="other")])
            await asyncio.wait_for(task, 20)  # the stored token is used: no new challenge
            lab.mcp.runtimes[(lab.session, sid)].token = None
            task = lab.start("read", script=[call("mcp__vault__read_secret", name="third")])
            await wait_state(lab, waiting("insufficientScope"))
            await lab.adispatch({"type": "session/mcpServerStopRequested", "id": sid})
            turn = await asyncio.wait_for(task, 20)
            [tc] = turn.tool_calls
            assert (tc.status, tc.success) == ("completed", False)
            assert "not authorized" in tc.state["error"]["message"]
            assert "inputNeeded" not in lab.session_state
            await wait_server(lab, sid, "stopped")
        finally:
            await lab.aclose()

    arun(main())


class _Challenger(http.server.BaseHTTPRequestHandler):
    """An HTTP MCP server that answers every request 401, its challenge naming RFC 9728 metadata at
    ``server.metadata_url``; and the metadata of ``server.resource`` itself, at ``/meta``. ``server.hits`` lists the paths
    asked for."""

    def _answer(self) -> None:
        self.server.hits.append(self.path)
        if self.path == "/meta":
            body = json.dumps({"resource": self.server.resource, "scopes_supported": ["read"]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
        else:
            body = b'{"error": "unauthorized"}'
            self.send_response(401)
            self.send_header("WWW-Authenticate", f'Bearer resource_metadata="{self.server.metadata_url}"')
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, *args) -> None:  # quiet
        pass


@pytest.mark.parametrize("where", ["own origin", "another origin"])
def test_resource_metadata_is_fetched_from_the_servers_own_origin_only(where):
    """A server's 401 names where its RFC 9728 metadata is. The kernel fetches it only on the
    server's own origin: a server that named any address had the kernel fetch it (from inside the
    person's network) and put the answer into state for every client to read."""
    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Challenger) for _ in range(2)]
    mcp, other = servers
    for server in servers:
        server.hits = []
        threading.Thread(target=server.serve_forever, daemon=True).start()
    host = mcp if where == "own origin" else other
    mcp.metadata_url = f"http://127.0.0.1:{host.server_address[1]}/meta"
    url = f"http://127.0.0.1:{mcp.server_address[1]}/mcp"
    mcp.resource = other.resource = url

    async def main():
        lab = await Lab.open(mcp_servers={"web": {"url": url}})
        try:
            state = (await wait_server(lab, server_id(lab, "web"), "authRequired"))["state"]
            return state["resource"]
        finally:
            await lab.aclose()

    try:
        resource = arun(main())
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
    if where == "own origin":
        assert resource == {"resource": url, "scopes_supported": ["read"]}
        assert "/meta" in mcp.hits
    else:
        assert resource == {"resource": url}  # the server's own URL, as without metadata
        assert other.hits == []  # never asked


def test_run_with_approve_says_a_call_waiting_for_a_token_waits_for_a_person():
    """``lab.run(..., approve=True)`` whose MCP call needs a token waited for ever: the turn's
    policy answers confirmations, never an authentication."""
    from ahp_lab import HumanInputNeeded

    async def main():
        lab = await Lab.open(mcp_servers={"vault": demo_server("--token", "s3cret")})
        try:
            await wait_server(lab, server_id(lab, "vault"), "ready")
            script = [call("mcp__vault__read_secret", name="launch-code")]

            def give_the_token():  # a guard, not a synchronisation: without the rule, run never returns
                [entry] = lab.session_state["inputNeeded"]
                token = {"resource": entry["toolCall"]["auth"]["resource"]["resource"], "token": "s3cret"}
                asyncio.ensure_future(lab.client.request("authenticate", token))

            guard = asyncio.get_running_loop().call_later(10, give_the_token)
            try:
                with pytest.raises(HumanInputNeeded, match=r"waiting for a person \(.* is auth-required\)"):
                    lab.run("read", approve=True, script=script)
            finally:
                guard.cancel()
        finally:
            await lab.aclose()

    arun(main())
