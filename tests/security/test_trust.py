"""Requirement 2: trust is decided locally. A stranger's plugin never makes the host run anything."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from ahp_lab.agents.scripted import call
from ahp_lab.host.mcp import NOT_ALLOWED
from ahp_lab.widgets.tree import mcp_state_view

from .conftest import DEMO_SERVER, arun, joined, open_lab, publish

MARKER_SCRIPT = "import sys; open(sys.argv[1], 'w').write('the host ran me')"


def mcp_servers(state, client_id: str) -> list[dict]:
    return [
        child
        for entry in state.get("customizations") or ()
        if entry.get("clientId") == client_id
        for child in entry.get("children") or ()
        if child.get("type") == "mcpServer"
    ]


async def server_state(lab, client_id: str, kind: str, error_type: str | None = None) -> dict:
    def check(state):
        for server in mcp_servers(state, client_id):
            st = server.get("state") or {}
            if st.get("kind") == kind and (
                error_type is None or (st.get("error") or {}).get("errorType") == error_type
            ):
                return server
        return None

    return await lab.wait_for(lab.session, check, timeout=30)


async def not_allowed(lab, client_id: str, count: int) -> dict[str, tuple[str, dict]]:
    """Once ``count`` servers of ``client_id`` wait to be allowed: each one's name (after its
    plugin's) -> (its id, its view in the tree)."""

    def waiting(state):
        found = {
            ch["name"].split(":")[-1]: (ch["id"], mcp_state_view(ch["state"]))
            for ch in mcp_servers(state, client_id)
            if (ch.get("state") or {}).get("error", {}).get("errorType") == NOT_ALLOWED
        }
        return found if len(found) == count else None

    return await lab.wait_for(lab.session, waiting, timeout=30)


def test_a_strangers_plugin_naming_a_command_is_shown_not_started_until_the_notebook_allows_it(
    connect_stranger, tmp_path: Path
):
    marker = tmp_path / "ran.txt"

    async def main():
        async with open_lab() as lab:
            s = await joined(connect_stranger, lab, "mallory")
            evil = {
                "mcpServers": {
                    "evil": {"command": sys.executable, "args": ["-c", MARKER_SCRIPT, str(marker)]}
                }
            }
            await publish(s, "mallory", "p", {".mcp.json": json.dumps(evil)})
            server = await server_state(lab, "mallory", "error", NOT_ALLOWED)
            message = server["state"]["error"]["message"]
            assert "remote client mallory" in message and "lab.allow_mcp" in message
            # a start request from the stranger changes nothing
            s.dispatch(lab.session, 2, {"type": "session/mcpServerStartRequested", "id": server["id"]})
            await s.echo(2)
            await server_state(lab, "mallory", "error", NOT_ALLOWED)
            assert not marker.exists()
            assert lab.mcp.decisions == []

    arun(main())


def test_the_notebook_allows_a_strangers_server_and_a_changed_config_needs_a_new_decision(connect_stranger):
    async def main():
        async with open_lab() as lab:
            s = await joined(connect_stranger, lab, "ide")
            config = {"mcpServers": {"demo": {"command": sys.executable, "args": [str(DEMO_SERVER)]}}}
            await publish(s, "ide", "tools", {".mcp.json": json.dumps(config)})
            waiting = await server_state(lab, "ide", "error", NOT_ALLOWED)
            notice = waiting["state"]["error"]["message"]
            assert str(DEMO_SERVER) in notice  # what it would run, read before it is allowed
            with pytest.raises(ValueError, match="say which configuration of the MCP server demo you allow"):
                lab.allow_mcp("demo")  # what it allows is named: the notice's configuration
            record = lab.allow_mcp("demo", mcp_state_view(waiting["state"])["configuration"])
            assert record["clientId"] == "ide" and record["command"] == sys.executable
            assert lab.mcp.decisions == [record]
            await server_state(lab, "ide", "ready")
            # the same plugin republished with another command: not covered by the decision
            config["mcpServers"]["demo"]["args"].append("--require-auth")
            await publish(s, "ide", "tools", {".mcp.json": json.dumps(config)}, nonce="2", seq=2)
            await server_state(lab, "ide", "error", NOT_ALLOWED)

    arun(main())


def test_a_strangers_url_server_is_never_contacted_before_it_is_allowed(connect_stranger):
    async def main():
        hits = []

        async def count(reader, writer):
            hits.append(1)
            writer.close()

        listener = await asyncio.start_server(count, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        try:
            async with open_lab() as lab:
                s = await joined(connect_stranger, lab, "mallory")
                config = {
                    "mcpServers": {"web": {"url": f"http://127.0.0.1:{port}/mcp", "headers": {"X": "y"}}}
                }
                await publish(s, "mallory", "w", {".mcp.json": json.dumps(config)})
                await server_state(lab, "mallory", "error", NOT_ALLOWED)
                assert (await s.call("ping"))["result"] is None
                assert hits == []
        finally:
            listener.close()

    arun(main())


def test_hooks_of_a_strangers_plugin_never_run(connect_stranger, tmp_path: Path):
    marker = tmp_path / "hooked.txt"

    async def main():
        async with open_lab() as lab:

            @lab.tool
            def echo(text: str) -> str:
                return text

            s = await joined(connect_stranger, lab, "mallory")
            command = f"{sys.executable} -c \"open({str(marker)!r}, 'w')\""
            hooks = {
                "hooks": {
                    "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]
                }
            }
            await publish(s, "mallory", "h", {"hooks/hooks.json": json.dumps(hooks)})

            def hook_listed(state):
                return any(
                    child.get("type") == "hook"
                    for entry in state.get("customizations") or ()
                    if entry.get("clientId") == "mallory"
                    for child in entry.get("children") or ()
                )

            await lab.wait_for(lab.session, hook_listed, timeout=10)
            turn = await lab.send("use a tool", script=[call("echo", {"text": "hi"})])
            assert turn.tool_calls[0].result_text == "hi"
            assert not marker.exists()
            assert "command" not in json.dumps(lab.session_state)  # hook commands stay host-internal

    arun(main())


def test_the_trees_allow_button_is_the_same_local_decision_and_a_replay_cannot_make_it(
    connect_stranger, tmp_path: Path
):
    from ahp_lab import Lab
    from ahp_lab.widgets import CustomizationTree
    from ahp_lab.widgets.tree import tree_view_model

    async def main():
        async with open_lab() as lab:
            s = await joined(connect_stranger, lab, "ide")
            config = {"mcpServers": {"demo": {"command": sys.executable, "args": [str(DEMO_SERVER)]}}}
            await publish(s, "ide", "tools", {".mcp.json": json.dumps(config)})
            server = await server_state(lab, "ide", "error", NOT_ALLOWED)
            [node] = [
                leaf
                for c in tree_view_model(lab.session_state)["containers"]
                for g in c["groups"]
                for leaf in g["children"]
            ]
            assert node["mcp"]["allowable"] and not node["mcp"]["canStart"]
            path = tmp_path / "run.jsonl"
            lab.export(path)
            replayed = CustomizationTree(Lab.replay(path))
            replayed.handle_message({"type": "allow_mcp", "id": server["id"]})
            assert "read-only" in replayed.error and lab.mcp.decisions == []
            tree = CustomizationTree(lab)
            shown = node["mcp"]["configuration"]  # what the button sends: the card's configuration
            tree.handle_message({"type": "allow_mcp", "id": server["id"], "shown": shown})
            assert tree.error == "" and [d["id"] for d in lab.mcp.decisions] == [server["id"]]
            await server_state(lab, "ide", "ready")
            tree.close()
            replayed.close()

    arun(main())
