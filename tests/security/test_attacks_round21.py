"""Attacker round 21 (and this stop's own finds)."""

from __future__ import annotations

import asyncio
import json

import pytest

from ahp_lab import Lab
from ahp_lab.protocol.jsonvalue import to_json
from ahp_lab.transport import RpcError

from .conftest import arun


def test_resource_commands_act_one_at_a_time_in_the_order_they_came(tmp_path):
    """A stranger pipelined a ``resourceMove`` of a folder holding a link to outside over ``x``
    with writes, reads and a recursive delete under ``x/p``: each was checked while ``x/p`` was a
    folder of the writable one and acted after the move, through the link (files written, read
    and deleted outside every root). Commands now run one at a time, each checked when its turn
    comes: a read pipelined behind a copy sees the copy done, and a write behind the move that
    puts the link there is refused."""
    writable, outside = tmp_path / "w", tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside every root")
    (writable / "big").mkdir(parents=True)
    for i in range(2000):
        (writable / "big" / f"f{i}").write_text("x")
    (writable / "x" / "p").mkdir(parents=True)
    (writable / "holder").mkdir()
    (writable / "holder" / "p").symlink_to(outside)

    async def main():
        lab = await Lab.open(directories=[{"path": writable, "contents": "skill", "writable": True}])
        try:
            req = lab.client.request
            copy = asyncio.ensure_future(
                req(
                    "resourceCopy",
                    {"source": (writable / "big").as_uri(), "destination": (writable / "c").as_uri()},
                )
            )
            read = asyncio.ensure_future(req("resourceRead", {"uri": (writable / "c" / "f1999").as_uri()}))
            await copy
            assert (await read)["data"] == "x"

            move = asyncio.ensure_future(
                req(
                    "resourceMove",
                    {"source": (writable / "holder").as_uri(), "destination": (writable / "x").as_uri()},
                )
            )
            write = asyncio.ensure_future(
                req(
                    "resourceWrite",
                    {"uri": (writable / "x/p/new.txt").as_uri(), "data": "in", "encoding": "utf-8"},
                )
            )
            await move
            with pytest.raises(RpcError) as err:
                await write
            assert err.value.code == -32009 and "symlink points out" in str(err.value)
            assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
        finally:
            await lab.aclose()

    arun(main())


def test_a_known_secret_in_a_tool_calls_streamed_input_never_enters_state_or_the_log():
    """A secret the host knows (an MCP server's env value) that an agent put in a tool's arguments
    went into ``partialInput``, the log and the export whole: each ``chat/toolCallDelta`` chunk was
    masked alone, and the secret was cut across two. A call's streamed input now holds the end
    that could begin a known secret until its next chunk (or the call's next action), as streamed
    text does; the input that is not a secret all arrives."""
    from ahp_lab.agents.scripted import call

    secret = "Zq7-hunter2-correct-horse-battery-4411"

    async def main():
        lab = await Lab.open()
        try:
            lab.host.redactor.add(secret)  # as an MCP server's env value is

            @lab.tool
            async def lookup(query: str = "", note: str = "") -> str:
                return "done"

            await lab.send("go", script=[call("lookup", query=secret, note="x" * 20)])
            logged = json.dumps([to_json(t.action) for t in lab.host.store.transitions])
            assert secret[:12] not in logged and secret[-12:] not in logged
            streamed = "".join(
                to_json(t.action)["content"]
                for t in lab.host.store.transitions
                if t.action.get("type") == "chat/toolCallDelta"
            )
            assert streamed == json.dumps({"query": "***", "note": "x" * 20})
        finally:
            await lab.aclose()

    arun(main())


def test_a_folder_tree_too_deep_to_copy_is_refused_with_the_reason(tmp_path):
    """One ``resourceMkdir`` made 1,500 nested folders, and their ``resourceCopy`` failed with an
    internal error (Python's copy recursed past its stack). It is refused before anything is
    copied, and the folder can still be deleted. (``resourceMkdir`` itself recursed once for each
    folder it made: it makes them in a loop.)"""
    writable = tmp_path / "w"
    writable.mkdir()
    deep = writable.joinpath("a", *["d"] * 1200)

    async def main():
        lab = await Lab.open(directories=[{"path": writable, "contents": "skill", "writable": True}])
        try:
            req = lab.client.request
            await req("resourceMkdir", {"uri": deep.as_uri()})
            with pytest.raises(RpcError) as err:
                params = {"source": (writable / "a").as_uri(), "destination": (writable / "b").as_uri()}
                await req("resourceCopy", params)
            assert err.value.code == -32602 and "nest deeper than 256 levels" in str(err.value)
            assert sorted(p.name for p in writable.iterdir()) == ["a"]
            await req("resourceDelete", {"uri": (writable / "a").as_uri(), "recursive": True})
            assert not list(writable.iterdir())
        finally:
            await lab.aclose()

    arun(main())


def test_another_calls_action_does_not_give_back_the_start_of_a_secret_a_call_holds():
    """Every held tool input was given back at any other action on the chat: call B's start, while
    call A held ``Zq7-`` (too short to mask), sent it out raw, and A's next chunk brought the rest,
    so A's ``partialInput`` held the secret whole (a review of this stop's commits). A call's input
    is given back at its own next action, or the turn's end."""
    from ahp_lab.store import agent_origin

    secret = "Zq7-hunter2-correct-horse-battery-4411"

    async def main():
        lab = await Lab.open()
        try:
            lab.host.redactor.add(secret)
            agent, chat = agent_origin("a"), lab.chat
            user = {"text": "go", "origin": {"kind": "user"}}
            steps = [
                {"type": "chat/turnStarted", "turnId": "t", "startedAt": "x", "message": user},
                {
                    "type": "chat/toolCallStart",
                    "turnId": "t",
                    "toolCallId": "a",
                    "toolName": "q",
                    "displayName": "Q",
                },
                {
                    "type": "chat/toolCallDelta",
                    "turnId": "t",
                    "toolCallId": "a",
                    "content": '{"query": "Zq7-',
                },
                {
                    "type": "chat/toolCallStart",
                    "turnId": "t",
                    "toolCallId": "b",
                    "toolName": "q",
                    "displayName": "Q",
                },
                {
                    "type": "chat/toolCallDelta",
                    "turnId": "t",
                    "toolCallId": "b",
                    "content": '{"query": "other"}',
                },
                {
                    "type": "chat/toolCallDelta",
                    "turnId": "t",
                    "toolCallId": "a",
                    "content": secret[4:] + '"}',
                },
                {"type": "chat/toolCallReady", "turnId": "t", "toolCallId": "a", "invocationMessage": "Q"},
            ]
            for action in steps:
                lab.host.dispatch(chat, action, agent)
            store = lab.host.store
            states = [
                json.dumps(to_json(store.state_at(seq).get(chat)))
                for seq in range(store.first_seq, store.last_seq + 1)
            ]
            assert not [s for s in states if secret in s]
            inputs = "".join(
                to_json(t.action)["content"]
                for t in store.transitions
                if t.action.get("type") == "chat/toolCallDelta"
            )
            assert inputs == '{"query": "' + '{"query": "other"}' + '***"}'  # nothing lost, nothing raw
        finally:
            await lab.aclose()

    arun(main())


def test_a_root_given_as_a_link_is_neither_deleted_nor_replaced(tmp_path):
    """The check that keeps a root in place compared where each root leads with the entry a
    command names, its link not followed: a writable root given as a link was deleted (a review
    of this stop's commits; before that stop, deleting a root itself had been refused)."""
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    (tmp_path / "other").mkdir()

    async def main():
        lab = await Lab.open(directories=[{"path": link, "contents": "skill", "writable": True}])
        try:
            req = lab.client.request
            for method, params in [
                ("resourceDelete", {"uri": link.as_uri(), "recursive": True}),
                ("resourceDelete", {"uri": real.as_uri(), "recursive": True}),
                ("resourceMove", {"source": (real / "sub").as_uri(), "destination": link.as_uri()}),
            ]:
                with pytest.raises(RpcError) as err:
                    await req(method, params)
                assert err.value.code == -32009, (method, params, err.value)
            assert link.is_symlink() and (real / "sub").is_dir()
        finally:
            await lab.aclose()

    arun(main())
