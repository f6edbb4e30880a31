"""No MCP server process outlives its lab: ``aclose()``, garbage collection, a re-run of the cell
that made the lab, and the kernel shutting down all stop it. The processes are counted in the
process table (``/proc``), as a person would with ``ps``."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import re
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import KernelManager

from ahp_lab import Lab
from ahp_lab.widgets import Workbench

from ..notebook_tools import REPO_ROOT, nbtools

SERVER = REPO_ROOT / "examples" / "mcp_server.py"
ACP_AGENT = REPO_ROOT / "examples" / "acp_agent.py"
DEMO_PLUGIN = REPO_ROOT / "examples" / "plugins" / "ahp-lab-demo"  # its .mcp.json runs SERVER
PROC = Path("/proc")
DEADLINE_S = 30

pytestmark = pytest.mark.skipif(not PROC.is_dir(), reason="counts processes in /proc (Linux)")


def _status(pid: str) -> dict[str, str]:
    lines = (PROC / pid / "status").read_text().splitlines()
    return dict(line.split(":\t", 1) for line in lines if ":\t" in line)


def servers(*, parent: int | None = None, marker: str | None = None, script: Path = SERVER) -> set[int]:
    """Live (not zombie) processes running ``script`` (default: examples/mcp_server.py), by parent
    pid or env marker."""
    found = set()
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if script.name.encode() not in (entry / "cmdline").read_bytes():
                continue
            status = _status(entry.name)
            if status.get("State", "").startswith("Z"):
                continue
            if parent is not None and int(status.get("PPid", "0").strip()) != parent:
                continue
            if marker is not None and marker.encode() not in (entry / "environ").read_bytes():
                continue
        except OSError:  # it exited while we looked
            continue
        found.add(int(entry.name))
    return found


async def until(condition, what: str, timeout: float = DEADLINE_S):
    """Poll a condition on the process table (no event tells us a process exited) until it holds."""
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        await asyncio.sleep(0.05)
    return result


def _ready(session: dict) -> bool:
    return any((e.get("state") or {}).get("kind") == "ready" for e in session.get("customizations") or ())


async def _lab_with_a_server() -> tuple[Lab, str]:
    marker = uuid.uuid4().hex
    config = {"command": sys.executable, "args": [str(SERVER)], "env": {"AHP_TEST_MARKER": marker}}
    lab = await Lab.open(mcp_servers={"probe": config})
    await lab.wait_for(lab.session, _ready)
    assert len(servers(marker=marker)) == 1
    return lab, marker


def test_a_garbage_collected_lab_stops_its_server_even_with_its_views_displayed():
    async def main():
        lab, marker = await _lab_with_a_server()
        views = Workbench(lab)  # a displayed workbench does not keep the lab alive
        del lab
        gc.collect()
        await until(lambda: not servers(marker=marker), "the collected lab's server exited")
        assert views.source.closed  # the views now say the lab is closed, and send nothing
        views.tree.handle_message(
            {
                "type": "dispatch",
                "channel": views.source.session,
                "action": {"type": "session/titleChanged", "title": "x"},
            }
        )
        assert "this lab is closed" in views.tree.error

    asyncio.run(main())


def test_a_garbage_collected_lab_stops_its_acp_agent_process(tmp_path):
    from ahp_lab.agents.acp import AcpAgent

    async def main():
        agent = AcpAgent([sys.executable, str(ACP_AGENT)], cwd=tmp_path)
        lab = await Lab.open(agent=agent)
        assert (await lab.send("hello")).status == "complete"
        assert len(servers(parent=os.getpid(), script=ACP_AGENT)) == 1
        del lab
        gc.collect()
        await until(lambda: not servers(parent=os.getpid(), script=ACP_AGENT), "the agent process exited")

    asyncio.run(main())


def test_aclose_stops_the_server_and_closes_the_lab_and_its_views():
    async def main():
        lab, marker = await _lab_with_a_server()
        views = lab.show()
        assert not lab.closed and not views.source.closed
        await lab.aclose()
        assert not servers(marker=marker)  # aclose() waits until the process has exited
        assert lab.closed and views.source.closed
        views.chat.handle_message({"type": "prompt", "text": "hello?"})
        assert "this lab is closed" in views.chat.error
        with pytest.raises(RuntimeError, match="this lab is closed"):
            await lab.send("hello?")
        assert lab.session_state["lifecycle"] == "ready"  # its state can still be read

    asyncio.run(main())


# -- in a real kernel ------------------------------------------------------------------------


@contextlib.contextmanager
def _kernel(*, now: bool = True) -> Iterator[tuple[KernelManager, Any]]:
    """A real kernel of this Python, ready: ``(manager, client)``; shut down on exit (``now=False``:
    with a shutdown request, as JupyterLab sends)."""
    km = KernelManager(kernel_name="python3", kernel_spec_manager=nbtools.this_python_kernels())
    km.start_kernel(cwd=str(REPO_ROOT), env={**os.environ, "AHP_LAB_UNATTENDED": "1"})
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=DEADLINE_S)
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=now)


def _send(
    kc, msg_type: str, content: dict, *, subshell: str | None = None, metadata: dict | None = None
) -> str:
    """Send a shell message (to ``subshell``, a kernel subshell, when given); its id."""
    msg = kc.session.msg(msg_type, content, metadata=metadata or {})
    if subshell is not None:
        msg["header"]["subshell_id"] = subshell
    kc.shell_channel.send(msg)
    return msg["header"]["msg_id"]


def _output(kc, msg_id: str) -> str:
    """The stdout of request ``msg_id`` once the kernel is idle again; its error raises."""
    out = []
    while True:
        reply = kc.get_iopub_msg(timeout=DEADLINE_S)
        if reply["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = reply["msg_type"], reply["content"]
        if kind == "stream":
            out.append(content["text"])
        elif kind == "error":
            raise AssertionError("\n".join(content["traceback"]))
        elif kind == "status" and content["execution_state"] == "idle":
            return "".join(out)


def _execute(kc, code: str, cell_id: str | None = None, subshell: str | None = None) -> str:
    """Run ``code`` as JupyterLab does (with the cell's id in the request's metadata); its stdout."""
    content = {
        "code": code,
        "silent": False,
        "store_history": True,
        "user_expressions": {},
        "allow_stdin": False,
    }
    metadata = {"cellId": cell_id} if cell_id else {}
    return _output(kc, _send(kc, "execute_request", content, subshell=subshell, metadata=metadata))


LAB_CELL = f"from ahp_lab import Lab\nlab = Lab(plugins=[{str(DEMO_PLUGIN)!r}])\nlab"  # the tour's first cell
WAIT_READY = """await lab.wait_for(lab.session, lambda s: any(
    (c.get("state") or {}).get("kind") == "ready" for e in s["customizations"] for c in e.get("children") or ()))"""


def test_rerunning_a_lab_cell_three_times_leaves_one_server_and_none_after_shutdown():
    with _kernel(now=False) as (km, kc):
        kernel = km.provisioner.process.pid
        seen: set[int] = set()

        def only_the_newest_server_runs() -> None:
            asyncio.run(until(lambda: len(servers(parent=kernel)) == 1, "only the newest lab's server runs"))
            seen.update(servers(parent=kernel))

        for _ in range(3):  # no cell id (a script, nbval): replacing the variable collects the lab
            _execute(kc, f"from ahp_lab import Lab\nlab = Lab(plugins=[{str(DEMO_PLUGIN)!r}])")
            _execute(kc, WAIT_READY)
            only_the_newest_server_runs()
        for _ in range(3):  # a person re-running the tour's first cell, which displays the lab
            _execute(kc, LAB_CELL, cell_id="tour-cell-1")
            _execute(kc, WAIT_READY, cell_id="wait")
            only_the_newest_server_runs()
        for _ in range(3):  # the same cell from a frontend that sends no cell id (jupyter console)
            _execute(kc, LAB_CELL)
            _execute(kc, WAIT_READY)
            only_the_newest_server_runs()
        assert len(seen) == 9  # each run started a server of its own, and stopped the one before
        said = _execute(kc, "print([old.closed for old in Out.values() if isinstance(old, Lab)], lab.closed)")
        # Out still holds them: closed all the same
        assert said.strip() == "[True, True, True, True, True, False] False"
        last = servers(parent=kernel)
    asyncio.run(until(lambda: not (last & servers()), "the last lab's server exited with the kernel"))


def test_a_script_ending_on_a_turn_that_waits_for_a_person_prints_only_its_error(tmp_path):
    """A script whose ``lab.run`` raised ``HumanInputNeeded`` ended with "Task was destroyed but
    it is pending!" twice and "RuntimeError: no running event loop" after the real error: a
    newcomer reads that as a crash of the library."""
    import subprocess

    script = tmp_path / "blocked.py"
    script.write_text(
        "from ahp_lab import Lab\n"
        "lab = Lab()\n"
        "@lab.tool(annotations={'destructiveHint': True})\n"
        "def rm(path: str) -> str:\n"
        "    '''Remove.'''\n"
        "    return 'removed ' + path\n"
        "lab.run('rm path=a')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 1
    assert "HumanInputNeeded: turn" in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ahp_lab.lab.turns.HumanInputNeeded"), done.stderr[-2000:]
    assert "Task was destroyed" not in done.stderr and "Exception ignored" not in done.stderr


def test_closing_a_lab_given_another_labs_host_leaves_that_labs_turns_and_queue():
    """Closing a lab stops its host's turns, but a lab given another lab's host (``host=``) does not
    own it: closing it cancelled the other lab's running turn and stopped its queue for good."""
    from ahp_lab.agents.scripted import ask, say, text_question

    async def main():
        first = await Lab.open()
        second = await Lab.open(host=first.host, client_id="second")
        running = first.start("one", script=[ask(text_question("q", "Name?"))])
        await running.until_blocked()
        queued = first.start("two", script=[say("hi")])
        assert queued.queued
        await second.aclose()
        first.answer(answers={"q": "x"})
        assert (await asyncio.wait_for(running, 10)).status == "complete"
        assert (await asyncio.wait_for(queued, 10)).text == "hi"
        await first.aclose()

    asyncio.run(main())


def test_a_lab_closing_on_another_labs_host_takes_its_queued_message_out_of_the_queue():
    """The host goes on when a lab given it closes: the closed lab's queued message started later,
    without the script it was sent with (the agent's default reply instead), while awaiting it had
    said it was kept in the queue (a verification round)."""
    from ahp_lab.agents.scripted import ask, say, text_question

    async def main():
        owner = await Lab.open()
        guest = await Lab.open(host=owner.host, client_id="guest")
        first = guest.start("q", script=[ask(text_question("name", "Name?", required=True)), say("ok")])
        await first.until_blocked()
        queued = guest.start("then say hi", script=[say("hi from the guest's script")])
        assert queued.queued
        await guest.aclose()
        with pytest.raises(RuntimeError, match="taken out of the chat's queue"):
            await asyncio.wait_for(queued, 10)
        await owner.wait_for(guest.chat, lambda s: True if not s.get("queuedMessages") else None, timeout=10)
        chat = owner.host.store.state(guest.chat)  # the guest's turn still waits; nothing queued after it
        await owner.aclose()
        return chat["activeTurn"]["message"]["text"], chat.get("queuedMessages") or []

    assert asyncio.run(main()) == ("q", [])


def test_a_rejected_dispatch_in_a_cell_shows_the_cell_and_the_reason_not_the_event_loop():
    """A refused ``lab.dispatch`` in a notebook printed some 49 lines through run_sync,
    nest_asyncio2 and asyncio's futures and tasks before the host's one-sentence reason (the
    first-hour user, round 54); the guide promises the reason, from the caller's cell."""
    with _kernel() as (_km, kc):
        _execute(kc, "from ahp_lab import Lab\nlab = Lab()")
        confirm = {"type": "chat/toolCallConfirmed", "turnId": "x", "toolCallId": "y", "approved": True}
        confirm["confirmed"] = "user-action"
        with pytest.raises(AssertionError) as shown:
            _execute(kc, f"lab.dispatch({confirm!r})")
    lines = re.sub(r"\x1b\[[0-9;]*m", "", str(shown.value)).splitlines()
    assert lines[-1] == "ActionRejected: chat/toolCallConfirmed: no tool call 'y' in the active turn 'x'"
    assert not [line for line in lines if "asyncio" in line or "ahp_lab/lab/turns.py" in line]
    assert len(lines) < 20, "\n".join(lines)


def _subshell(kc) -> str:
    """A new kernel subshell (ipykernel 7): a thread and an event loop of its own."""
    msg = kc.session.msg("create_subshell_request", {})
    kc.control_channel.send(msg)
    while True:
        reply = kc.control_channel.get_msg(timeout=DEADLINE_S)
        if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            return reply["content"]["subshell_id"]


ACP_LAB = f"""\
import json, sys, tempfile, threading
from ahp_lab import Lab
from ahp_lab.agents.acp import AcpAgent
from ahp_lab.protocol.jsonvalue import to_json
agent = AcpAgent([sys.executable, {str(REPO_ROOT / "examples" / "acp_agent.py")!r}], cwd=tempfile.mkdtemp())
lab = await Lab.open(agent=agent)
answered = threading.Event()
lab.store.subscribe(lambda _t: "Hello from the offline ACP agent" in json.dumps(to_json(lab.chat_state)) and answered.set())
"""


@pytest.mark.parametrize("made_in", ["main shell", "subshell console"])
def test_a_chat_message_sent_through_a_subshell_reaches_an_acp_agent_while_the_kernel_idles(made_in):
    """JupyterLab sends widget messages through kernel subshells (ipykernel 7), each with its own
    thread and loop; the view ran the turn there, while the ACP agent's pipes live on the lab's
    loop: the chat read "working…" until a cell ran on the main shell (the first-hour user, round
    54), and, for a view made in a subshell console, after the first fix too (the review, round 57)."""
    with _kernel() as (_km, kc):
        console, comms, waiter = _subshell(kc), _subshell(kc), _subshell(kc)
        _execute(kc, ACP_LAB)
        make = "views = lab.show(); print(views.chat.comm.comm_id)"
        comm_id = _execute(kc, make, subshell=console if made_in == "subshell console" else None).strip()
        prompt = {"method": "custom", "content": {"type": "prompt", "text": "hello there"}}
        _send(kc, "comm_msg", {"comm_id": comm_id, "data": prompt}, subshell=comms)
        # nothing runs on the main shell from here: the answer comes while it idles
        assert _execute(kc, "print(answered.wait(30))", subshell=waiter).strip() == "True"


def test_a_lab_served_on_another_labs_host_stops_serving_however_it_closes():
    """Closing a lab on another lab's host had come to stop none of the host's extensions, its own
    WebSocket server among them: after ``lab.close()`` (what running its cell again does) the
    server went on taking clients (review 58). The lab's own server stops; the host goes on."""
    import websockets

    from ahp_lab.lab import lifetime

    async def main():
        owner = await Lab.open()
        guest = await Lab.open(host=owner.host, client_id="guest")
        url = await guest.aserve()
        guest.close()
        marker = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon_threadsafe(marker.set_result, None)  # after close's own
        await marker
        await asyncio.gather(*list(lifetime._closing))
        with pytest.raises((OSError, websockets.exceptions.WebSocketException)):
            async with websockets.connect(url, open_timeout=5):
                pass
        assert not [e for e in owner.host.extensions if type(e).__name__ == "_ServingExtension"]
        assert (await owner.send("still here")).status == "complete"
        await owner.aclose()

    asyncio.run(main())
