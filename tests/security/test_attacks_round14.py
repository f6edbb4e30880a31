"""Attacker round 14: a stranger holding the token, against what other clients and the notebook own.

- Client tools had no bound but the action's size: 16 connections of 12,000 tools each held the
  host's loop 4.5 s for every turn of the session (the agent reads each tool's name), and 1 s for
  each completion. The session's clients may hold ``max_client_tools`` tools together.
"""

from __future__ import annotations

from .conftest import arun, asks_to_deploy, open_lab, pending_call


def _tools(prefix: str, count: int) -> list[dict]:
    return [{"name": f"{prefix}_{i}", "inputSchema": {"type": "object"}} for i in range(count)]


def test_the_sessions_client_tools_are_bounded_for_strangers(connect_stranger):
    async def main():
        async with open_lab(limits={"max_client_tools": 300}) as lab:
            mallory = await connect_stranger(lab, "mallory")
            await mallory.initialize("mallory")
            await mallory.call("subscribe", {"channel": lab.session})
            entry = {"clientId": "mallory", "tools": _tools("m", 301)}
            mallory.dispatch(lab.session, 1, {"type": "session/activeClientSet", "activeClient": entry})
            assert (await mallory.echo(1))["rejectionReason"] == (
                "session/activeClientSet: the session's clients may hold at most 300 tools together "
                "(Limits.max_client_tools); this entry has 301 and the others 0"
            )
            entry = {"clientId": "mallory", "tools": _tools("m", 200)}
            mallory.dispatch(lab.session, 2, {"type": "session/activeClientSet", "activeClient": entry})
            assert "rejectionReason" not in await mallory.echo(2)

            eve = await connect_stranger(lab, "eve")
            await eve.initialize("eve")
            await eve.call("subscribe", {"channel": lab.session})
            entry = {"clientId": "eve", "tools": _tools("e", 101)}
            eve.dispatch(lab.session, 1, {"type": "session/activeClientSet", "activeClient": entry})
            assert "the others 200" in (await eve.echo(1))["rejectionReason"]
            # its own entry again, smaller: what it had is not counted twice
            entry = {"clientId": "mallory", "tools": _tools("m", 300)}
            mallory.dispatch(lab.session, 3, {"type": "session/activeClientSet", "activeClient": entry})
            assert "rejectionReason" not in await mallory.echo(3)
            assert len(lab.session_state["activeClients"][-1]["tools"]) == 300

    arun(main())


def test_a_stranger_cannot_approve_a_call_of_another_clients_tool(connect_stranger):
    """A stranger started a turn calling the notebook's destructive tool, then approved it with
    an input of its own (``editedToolInput``): the notebook ran it. A call of a client's tool is
    confirmed by that client or the notebook; any client may still confirm the host's."""

    async def main():
        async with open_lab() as lab:
            ran = []

            @lab.tool(confirm=True)
            def deploy(target: str) -> str:
                ran.append(target)
                return f"deployed to {target}"

            mallory = await connect_stranger(lab, "mallory")
            await mallory.initialize("mallory")
            call = await asks_to_deploy(mallory, lab, 1)
            approve = {
                "type": "chat/toolCallConfirmed",
                "turnId": "m1",
                "toolCallId": call["toolCallId"],
                "approved": True,
                "confirmed": "user-action",
                "editedToolInput": '{"target": "production; rm -rf /"}',
            }
            mallory.dispatch(lab.chat, 2, approve)
            refused = (await mallory.echo(2))["rejectionReason"]
            assert (
                "runs the notebook's tool" in refused
                and "the notebook confirms it, not client mallory" in refused
            )
            assert (await pending_call(mallory, lab))["toolCallId"] == call["toolCallId"] and ran == []
            lab.approve()  # the notebook's person decides
            done = await mallory.wait(
                lambda: (lab.host.store.state(lab.chat).get("activeTurn") is None) or None
            )
            assert done and ran == ["staging"]

    arun(main())
