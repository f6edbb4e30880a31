"""Attacks an independent attacker's probe suite (round 5) made work, each now refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ahp_lab.host.resources import file_uri
from ahp_lab.protocol.jsonrpc import ErrorCode

from .conftest import arun, joined, open_lab, publish


def test_a_process_cwd_under_proc_a_file_or_a_missing_folder_is_never_a_working_directory(
    connect_stranger, tmp_path: Path
):
    """``/proc/<pid>/cwd`` resolved inside the roots when the session was made, and later to
    wherever that process went (``/``): a stranger read /etc/shadow through it."""
    root = tmp_path / "projects"
    (root / "app").mkdir(parents=True)
    (root / "notes.txt").write_text("a file")
    helper = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], cwd=root / "app", stdin=subprocess.PIPE
    )

    async def main():
        async with open_lab(roots=[root]) as lab:
            s = await connect_stranger(lab)
            await s.initialize()
            for n, uri in enumerate(
                [
                    f"file:///proc/{helper.pid}/cwd",
                    "file:///proc/self/cwd",
                    file_uri(root / "notes.txt"),
                    file_uri(root / "gone"),
                ]
            ):
                answer = await s.call(
                    "createSession", {"channel": f"ahp-session:/wd-{n}", "workingDirectories": [uri]}
                )
                assert answer["error"]["code"] == ErrorCode.INVALID_PARAMS, (uri, answer)

    try:
        arun(main())
    finally:
        helper.stdin.close()
        helper.wait()


def test_a_client_publishes_a_bounded_number_of_plugins(connect_stranger):
    """Each published plugin makes the host read up to max_message_bytes and keep what it
    resolved: 60 plugins of 18 MB held a gigabyte."""

    async def main():
        async with open_lab() as lab:
            s = await connect_stranger(lab)
            await s.initialize()
            await s.call("subscribe", {"channel": lab.session})
            plugins = [
                {
                    "type": "plugin",
                    "id": f"p{i}",
                    "uri": f"file:///client/p{i}",
                    "name": f"p{i}",
                    "enabled": True,
                }
                for i in range(17)
            ]
            entry = {"clientId": "stranger", "tools": [], "customizations": plugins}
            s.dispatch(lab.session, 1, {"type": "session/activeClientSet", "activeClient": entry})
            echo = await s.echo(1)
            assert "at most 16 plugins" in echo["rejectionReason"]
            assert not [
                c for c in lab.session_state.get("customizations") or () if c.get("clientId") == "stranger"
            ]

    arun(main())


def test_a_chat_title_is_text(connect_stranger):
    async def main():
        async with open_lab() as lab:
            s = await connect_stranger(lab)
            await s.initialize()
            answer = await s.call(
                "createChat", {"channel": lab.session, "chat": "ahp-chat:/t", "title": {"a": 1}}
            )
            assert (
                answer["error"]["code"] == ErrorCode.INVALID_PARAMS and "title" in answer["error"]["message"]
            )

    arun(main())


def test_a_reconnect_whose_replay_would_be_huge_gets_snapshots(connect_stranger):
    """Replays were built whole for every reconnect (54 MB each: 30 connections took the host to
    3 GB). Past max_message_bytes of log since the client's seq, the answer is the channels' states."""

    async def main():
        async with open_lab(limits={"max_message_bytes": 1_000_000}) as lab:
            start = lab.host.store.last_seq
            for n in range(1, 9):  # 8 drafts of 200,000 characters: 1.6 MB of log, one draft in state
                lab.host.dispatch(
                    lab.chat, {"type": "chat/draftChanged", "draft": {"text": str(n) * 200_000}}
                )
            late = await connect_stranger(lab, "late")
            answer = await late.reconnect("late", start, [lab.chat])
            result = answer["result"]
            assert result["type"] == "snapshot"
            [snapshot] = result["snapshots"]
            assert snapshot["state"]["draft"]["text"] == "8" * 200_000
            small = await (await connect_stranger(lab, "small")).reconnect(
                "small", lab.host.store.last_seq - 1, [lab.chat]
            )
            assert small["result"]["type"] == "replay"  # a short gap is still replayed

    arun(main())


def test_a_malformed_answer_to_the_plugin_fetch_puts_the_plugin_in_error(connect_stranger):
    """A listing that is not one left the plugin 'loading' forever, its error swallowed in a task."""
    from .test_customization_limits import loaded

    async def main():
        async with open_lab() as lab:
            s = await joined(connect_stranger, lab, "odd")
            answer = s._answer

            def odd(request: dict) -> None:
                if request.get("method") == "resourceList":
                    s.send({"jsonrpc": "2.0", "id": request["id"], "result": ["not", "a", "listing"]})
                else:
                    answer(request)

            s._answer = odd
            await publish(s, "odd", "p", {})
            entry = await loaded(lab, timeout=10)
            assert entry["load"]["kind"] == "error" and "not a listing" in entry["load"]["message"]

    arun(main())
