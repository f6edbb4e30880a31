"""``lab.serve()`` and ``Lab.attach(url)``: the notebook API over a real socket, from both ends."""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys

import pytest

import ahp_lab
from ahp_lab import Lab
from ahp_lab.agents.scripted import ask, call, say, text_question
from ahp_lab.lab.clientlog import ClientLog
from ahp_lab.lab.remote import NotAvailableRemotely, RemoteLab
from ahp_lab.protocol.jsonvalue import to_json
from ahp_lab.widgets import inspector_rows

from .conftest import run, without_modified_at


def test_a_remote_lab_runs_client_tools_and_keeps_its_own_log(tmp_path):
    async def main():
        lab = await Lab.open()
        url = await lab.aserve()
        assert url.startswith("ws://127.0.0.1:") and "?tkn=" in url
        remote = await RemoteLab.open(url, session=lab.session, client_id="ide")
        assert (remote.session, remote.chat) == (lab.session, lab.chat)

        @remote.tool(approval="never")
        async def run_unit_tests(pattern: str = "test_*", *, ctx) -> str:
            """Run the unit tests matching a pattern."""
            await ctx.update("collecting...")
            return f"12 passed ({pattern})"

        # the tool is listed by the host under the remote client
        assert any(
            c["clientId"] == "ide" and [t["name"] for t in c["tools"]] == ["run_unit_tests"]
            for c in lab.session_state["activeClients"]
        )
        turn = await remote.send("run_unit_tests pattern=auth")
        assert turn.tool_calls[0].status == "completed"
        assert turn.tool_calls[0].result_text == "12 passed (auth)"

        # the remote lab's view equals the host's (each side stamps its own modifiedAt)
        for channel in (lab.session, lab.chat):
            assert without_modified_at(remote.state(channel)) == without_modified_at(lab.state(channel))
        # its log: the host's seqs, with origins as the wire tells them
        theirs = [
            t
            for t in lab.transitions
            if t.channel in (lab.session, lab.chat) and t.seq > remote.store.first_seq
        ]
        mine = list(remote.transitions)
        assert [t.seq for t in mine][-len(theirs) :] == [t.seq for t in theirs]
        started = next(t for t in mine if t.type == "chat/turnStarted")
        assert started.origin == {
            "kind": "client",
            "clientId": "ide",
            "clientSeq": started.origin["clientSeq"],
        }
        completed = next(t for t in mine if t.type == "chat/toolCallComplete")
        assert completed.origin["clientId"] == "ide"  # the remote client completed its own call
        assert next(t for t in mine if t.type == "chat/delta").origin == {"kind": "host"}
        # the workbench's inspector over the remote lab shows each action's origin as the wire told it
        wb = remote.show()
        rows = inspector_rows(remote.transitions, 0, 500)["rows"]
        by_type = {(r["type"], r["origin"]) for r in rows}
        assert ("chat/toolCallComplete", f"client ide #{completed.origin['clientSeq']}") in by_type
        assert ("chat/delta", "host") in by_type
        assert wb.inspector.total == len(remote.transitions)
        wb.close()
        # time travel on the client's own log
        at = started.seq
        assert remote.state_at(at)[lab.chat]["activeTurn"]["id"] == turn.id
        # export and replay reproduce the client's states exactly
        path = tmp_path / "remote.jsonl"
        remote.export(path)
        replayed = Lab.replay(path)
        assert replayed.store.states() == remote.store.states()
        assert replayed.state_at(at) == remote.state_at(at)
        assert len(replayed.transitions) == len(remote.transitions)

        # host-only features say so clearly
        with pytest.raises(NotAvailableRemotely, match="lab.host is not available .* remote host"):
            remote.host  # noqa: B018
        with pytest.raises(NotAvailableRemotely, match="scripts"):
            await remote.send("hello", script=[say("hi")])
        with pytest.raises(NotAvailableRemotely, match="client tool"):
            remote.server_tool(lambda: None)
        assert "tkn" not in repr(remote) and remote._token is None

        # a further client on the same remote host (its own socket) joins the session
        third = await remote.add_client("third", "A third client")
        assert "third" in [c["clientId"] for c in lab.session_state["activeClients"]]
        assert lab.server.accepted == 2
        await third.aclose()

        await remote.aclose()
        await lab.aclose()
        assert lab.server is None

    run(main())


def test_two_clients_in_one_notebook_race_a_confirmation():
    """The first confirmation wins; the second is rejected with the host's reason; both converge."""

    async def main():
        lab = await Lab.open(confirm_tools="always")
        url = await lab.aserve()
        second = await RemoteLab.open(url, session=lab.session, client_id="second")

        @lab.server_tool
        def read_file(path: str) -> str:
            """Read a file."""
            return f"contents of {path}"

        started = lab.start("read it", script=[call("read_file", path="README.md", confirm=True)])

        def pending(state):
            for part in (state.get("activeTurn") or {}).get("responseParts") or ():
                tc = part.get("toolCall") or {}
                if tc.get("status") == "pending-confirmation":
                    return tc
            return None

        tc = await second.wait_for(second.chat, pending)
        turn_id = second.chat_state["activeTurn"]["id"]
        decision = {"type": "chat/toolCallConfirmed", "turnId": turn_id, "toolCallId": tc["toolCallId"]}
        # both dispatch before either hears the other: the host's order decides
        first_seq = lab.client.dispatch(lab.chat, {**decision, "approved": True, "confirmed": "user-action"})
        second_seq = second.client.dispatch(second.chat, {**decision, "approved": False, "reason": "denied"})
        await lab.client.settle()
        await second.client.settle()
        verdicts = {
            (t.origin.get("clientId"), t.origin.get("clientSeq")): t.rejection_reason
            for t in lab.transitions
            if t.type == "chat/toolCallConfirmed"
        }
        assert verdicts[("notebook", first_seq)] is None
        assert "is not waiting for confirmation" in verdicts[("second", second_seq)]
        assert second.client.rejections[-1]["reason"] == verdicts[("second", second_seq)]
        turn = await started
        assert turn.tool_calls[0].result_text == "contents of README.md"
        await second.client.settle()
        assert without_modified_at(second.state(lab.chat)) == without_modified_at(lab.state(lab.chat))
        await second.aclose()
        await lab.aclose()

    run(main())


def _serve() -> subprocess.Popen:
    """``ahp-lab serve`` in another process, with the scripted agent; its first line is the URL."""
    return subprocess.Popen(
        [sys.executable, "-m", "ahp_lab.cli", "serve", "--port", "0", "--agent", "scripted"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def test_ahp_lab_serve_prints_the_url_once_and_serves():
    proc = _serve()
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("ws://127.0.0.1:") and "?tkn=" in url

        async def main():
            client = await ahp_lab.connect(url, client_id="cli-test")
            session = await client.create_session(title="from outside Jupyter")
            state = await client.wait_for(
                session, lambda s: s if s.get("lifecycle") == "ready" else None, timeout=30
            )
            assert state["title"] == "from outside Jupyter"
            listed = await client.request("listSessions")
            assert [s["resource"] for s in listed["items"]] == [session]
            await client.aclose()

        run(main())
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert url.split("tkn=")[1] not in out + err  # shown once: only on the first line, read above
    assert "Traceback" not in err


def test_a_client_log_replays_exactly_from_its_export():
    async def main():
        lab = await Lab.open()
        url = await lab.aserve()
        remote = await RemoteLab.open(url, session=lab.session)
        await remote.send("hello there")
        buffer = io.StringIO()
        remote.store.export(buffer)
        buffer.seek(0)
        loaded = ClientLog.load(buffer)
        assert loaded.states() == remote.store.states()
        assert [t.envelope() for t in loaded.transitions] == [t.envelope() for t in remote.transitions]
        assert to_json(loaded.state_at(remote.store.last_seq)) == to_json(
            remote.state_at(remote.store.last_seq)
        )
        await remote.aclose()
        await lab.aclose()

    run(main())


_FLOODER = """
import asyncio, sys
import ahp_lab

async def main(url, chat):
    flooder = await ahp_lab.connect(url, client_id="flooder")
    await flooder.subscribe(chat)
    for n in range(120):
        draft = {"text": f"{n:03}" + "z" * 90_000, "origin": {"kind": "user"}}
        flooder.dispatch(chat, {"type": "chat/draftChanged", "draft": draft})
    await flooder.settle()
    await flooder.aclose()

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def test_a_host_flooding_large_drafts_cannot_grow_an_attached_labs_log_without_bound():
    """The host is a stranger too: 120 drafts of 90,000 characters (11 MB) pushed to an attached lab
    leave it holding about its log budget (3 MB; with what its states and checkpoints hold, under
    9 MB: all of them would be over 11), not all of them. Measured as this process's
    allocations (the host runs in another process; the frame log's bounded tail is not counted).
    Time travel says what was dropped, and the export still replays to the states the lab holds."""
    import gc
    import tracemalloc

    from ahp_lab.transport import tap

    budget = 3_000_000
    proc = _serve()

    def held() -> int:
        gc.collect()
        snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tap.__file__)])
        return sum(stat.size for stat in snapshot.statistics("filename"))

    try:
        url = proc.stdout.readline().strip()

        async def main():
            remote = await RemoteLab.open(url, client_id="notebook", max_log_bytes=budget)
            first = remote.store.last_seq
            tracemalloc.start()
            try:
                before = held()
                # the flooder is a client in a process of its own: what it holds (its own copies of
                # the drafts, its echoes still queued in its socket under load) is not the lab's
                flooder = await asyncio.create_subprocess_exec(
                    sys.executable, "-c", _FLOODER, url, remote.chat
                )
                assert await asyncio.wait_for(flooder.wait(), 120) == 0

                def last_draft(s):
                    return s if (s.get("draft") or {}).get("text", "").startswith("119") else None

                await remote.client.wait_for(remote.chat, last_draft, timeout=60)
                grown = held() - before
            finally:
                tracemalloc.stop()
            assert grown < 3 * budget, f"the attached lab grew by {grown:,} bytes"
            log = remote.store
            assert log.log_bytes <= budget
            assert log.dropped_through > first  # the oldest were dropped, not the newest
            assert log.transitions[-1].action["draft"]["text"].startswith("119")
            with pytest.raises(IndexError, match="was dropped to keep this client's log within"):
                log.state_at(first)
            assert to_json(log.state_at(log.last_seq)[remote.chat]) == to_json(remote.state(remote.chat))
            buffer = io.StringIO()
            log.export(buffer)
            buffer.seek(0)
            loaded = ClientLog.load(buffer)
            assert to_json(loaded.states()) == to_json(log.states())
            assert [t.seq for t in loaded.transitions] == [t.seq for t in log.transitions]
            await remote.aclose()

        run(main())
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_serve_in_a_plain_script_warns_that_nothing_serves_between_calls():
    """Outside a running loop the server answers only while the script is inside a lab call: a
    user's script slept after serve() and every client timed out, with no word from the lab."""
    lab = Lab()
    try:
        with pytest.warns(RuntimeWarning, match="outside a running event loop.*ahp-lab serve"):
            url = lab.serve()
        assert url.startswith("ws://127.0.0.1:")
    finally:
        lab.close()


async def _a_phone_behind_a_waiting_turn():
    """A served lab whose chat's turn waits for a person, and a remote lab ("phone") that sees it."""
    lab = await Lab.open()
    url = await lab.aserve()
    remote = await RemoteLab.open(url, session=lab.session, client_id="phone")
    first = lab.start("q", script=[ask(text_question("name", "Name?", required=True)), say("ok")])
    await first.until_blocked()
    await remote.client.wait_for(remote.chat, lambda s: s.get("activeTurn"), timeout=30)
    return lab, remote, first


def test_a_remote_labs_queued_message_the_host_starts_becomes_its_turn():
    """The host starts a queued message by removing it from the queue and then starting its turn
    (chat-channel §10); a remote lab reads the two apart, and took the removal for a client's: the
    message's turn ran, and awaiting it raised "removed before its turn started"."""

    async def main():
        lab, remote, first = await _a_phone_behind_a_waiting_turn()
        second = remote.start("hello")
        assert second.queued
        lab.answer(answers={"name": "x"})
        assert (await first).status == "complete"
        turn = await asyncio.wait_for(second, 30)
        assert turn.status == "complete" and "You said" in turn.text
        await remote.aclose()
        await lab.aclose()

    run(main())


def test_closing_a_remote_lab_ends_the_wait_of_its_message_still_queued():
    """A remote lab's queued message, still behind a turn when the remote lab closed, was awaited
    forever: the connection is gone, so no state says it started."""

    async def main():
        lab, remote, first = await _a_phone_behind_a_waiting_turn()
        second = remote.start("hello")
        await remote.client.wait_for(remote.chat, lambda s: s.get("queuedMessages"), timeout=30)
        await remote.aclose()
        with pytest.raises(RuntimeError, match="closed before the queued message"):
            await asyncio.wait_for(second, 10)
        queued = [m["message"]["text"] for m in lab.chat_state["queuedMessages"]]
        await lab.aclose()
        return queued

    assert run(main()) == ["hello"]


def test_awaiting_a_remote_labs_turn_after_it_closed_fails_at_once():
    """A closed remote lab hears nothing more of its host: awaiting a turn it had started (or the
    turn it steered) waited forever (a verification round)."""

    async def main():
        lab, remote, _ = await _a_phone_behind_a_waiting_turn()
        turn = remote.start("and this", steer=True)  # the remote lab's wait: the steered turn's end
        await remote.aclose()
        with pytest.raises(RuntimeError, match="closed before turn .* ended"):
            await asyncio.wait_for(turn, 10)
        await lab.aclose()

    run(main())
