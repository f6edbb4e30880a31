"""Requirement 4: a token goes only to the requirement that asked for it."""

from __future__ import annotations

import json
from pathlib import Path

from ahp_lab.protocol.jsonrpc import ErrorCode

from .conftest import ROOT, arun, demo_server_config, open_lab

RESOURCE = "https://mcp.example.invalid/protected"
TOKEN = "tok-3f9a1c7e-very-secret"


def top_server(state, name: str) -> dict | None:
    return next((c for c in state.get("customizations") or () if c.get("name") == name), None)


async def wait_kind(lab, name: str, kind: str) -> dict:
    def check(state):
        entry = top_server(state, name)
        return entry if entry and (entry.get("state") or {}).get("kind") == kind else None

    return await lab.wait_for(lab.session, check, timeout=30)


def test_authenticate_reaches_only_the_server_that_asked_not_a_copycat_or_a_stranger(
    connect_stranger, tmp_path: Path
):
    async def main():
        servers = {
            "owner": demo_server_config("--require-auth", "--resource", RESOURCE),
            "copycat": {**demo_server_config("--require-auth", "--resource", RESOURCE), "enabled": False},
        }
        async with open_lab(mcp_servers=servers) as lab:
            await wait_kind(lab, "owner", "authRequired")
            # the copycat names the same resource once the owner is waiting for it
            copy = top_server(lab.session_state, "copycat")
            lab.dispatch({"type": "session/customizationToggled", "id": copy["id"], "enabled": True})
            refused = await wait_kind(lab, "copycat", "error")
            assert "the MCP server owner is waiting for" in refused["state"]["error"]["message"]

            # a connection not subscribed to the session cannot deliver (or steal a delivery)
            outsider = await connect_stranger(lab, "outsider")
            await outsider.initialize("outsider")
            answer = await outsider.call(
                "authenticate", {"channel": ROOT, "resource": RESOURCE, "token": TOKEN}
            )
            assert answer["error"]["code"] == ErrorCode.INVALID_PARAMS
            assert TOKEN not in json.dumps(answer)
            assert top_server(lab.session_state, "owner")["state"]["kind"] == "authRequired"

            # a subscribed client authenticates: the owner gets it, nobody else
            s = await connect_stranger(lab, "ide")
            await s.initialize("ide")
            await s.call("subscribe", {"channel": lab.session})
            assert (await s.call("authenticate", {"channel": ROOT, "resource": RESOURCE, "token": TOKEN}))[
                "result"
            ] == {}
            await wait_kind(lab, "owner", "ready")
            tokens = {rt.name: rt.token for rt in lab.mcp.runtimes.values()}
            assert tokens == {"owner": TOKEN, "copycat": None}

            # and the token is nowhere: not in state, the log, the export or what clients saw
            path = tmp_path / "run.jsonl"
            lab.export(path)
            assert TOKEN not in path.read_text(encoding="utf-8")
            assert TOKEN not in json.dumps(lab.session_state)
            assert not any(TOKEN in text for text in s.texts[1:] + outsider.texts)

    arun(main())
