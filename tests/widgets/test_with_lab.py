"""The views over the real in-kernel host (``Lab``), whose log is indexed by seq, not position."""

import asyncio
import threading

import pytest

lab_mod = pytest.importorskip("ahp_lab.lab")


from .conftest import capture  # noqa: E402


def _run(coro_fn) -> None:
    """asyncio.run in a thread of its own: Playwright's sync API (browser tests in the same pytest
    process) leaves a running loop in the main thread, where asyncio.run refuses to start."""
    errors: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(coro_fn())
        except BaseException as exc:  # re-raised in the test's thread
            errors.append(exc)

    th = threading.Thread(target=target)
    th.start()
    th.join(120)
    if errors:
        raise errors[0]


def test_workbench_over_a_live_lab():
    async def main():
        lab = await lab_mod.Lab.open()

        @lab.tool
        async def run_unit_tests(pattern: str = "test_*", *, ctx) -> str:
            """Run the unit tests matching a pattern."""
            await ctx.update("collecting...")
            return "12 passed"

        await lab.send("run_unit_tests pattern=auth")
        wb = lab.show()
        sent = capture(wb.inspector)
        n = len(lab.transitions)
        assert wb.inspector.total == n
        first = lab.store.first_seq
        reply = wb.inspector.rows(0, 5)
        assert [r["seq"] for r in reply["rows"]] == list(range(first, first + 5))
        assert wb.inspector.rows(n - 2, 5)["rows"][-1]["seq"] == lab.store.last_seq
        [lane] = wb.timeline.model["lanes"]
        assert lane["status"] == "completed" and [s["status"] for s in lane["segments"]] == [
            "streaming",
            "running",
            "completed",
        ]
        wb.timeline.selected = lane["key"]
        actions = [s["action"] for s in wb.timeline.model["detail"]["steps"]]
        assert actions[0] == "chat/toolCallStart" and actions[-1] == "chat/toolCallComplete"
        assert "chat/toolCallContentChanged" in actions
        # live: a second turn arrives incrementally
        await lab.send("run_unit_tests pattern=x")
        await asyncio.sleep(0)
        wb.timeline.refresh()
        assert wb.timeline.model["total"] == 2
        assert wb.inspector.total == len(lab.transitions) and sent and sent[-1]["type"] == "appended"
        # detail and time travel through the store
        wb.inspector.selected_seq = lab.store.last_seq
        assert wb.inspector.detail["seq"] == lab.store.last_seq
        wb.inspector.selected_seq = first + 3
        wb.inspector.time_travel = True
        assert wb.tree.read_only and wb.timeline.model["total"] == 0
        wb.inspector.time_travel = False
        assert wb.timeline.model["total"] == 2
        chat_sent = capture(wb.chat)
        wb.chat._on_custom_msg(wb.chat, {"type": "hello"})
        assert chat_sent[-1]["view"]["turnCount"] == 2
        # clicks go through this notebook's client to the host, without blocking the kernel
        wb.tree._on_custom_msg(
            wb.tree,
            {
                "type": "dispatch",
                "channel": lab.session,
                "action": {"type": "session/titleChanged", "title": "From a click"},
            },
        )
        await lab.wait_for(lab.session, lambda s: s.get("title") == "From a click")
        assert lab.transitions[-1].origin["clientId"] == "notebook"
        wb.tree._on_custom_msg(
            wb.tree, {"type": "dispatch", "channel": lab.session, "action": {"type": "session/titleChanged"}}
        )
        assert "'title' is required" in wb.tree.error
        wb.chat._on_custom_msg(wb.chat, {"type": "prompt", "text": "hello"})
        await lab.client.wait_for(lab.chat, lambda s: s if len(s.get("turns", [])) == 3 else None, timeout=5)
        wb.close()

    _run(main)


def test_the_log_view_follows_a_store_that_drops_its_oldest_transitions():
    """A lab with a small log budget: after the store drops its start, the inspector's filtered
    rows are still the transitions the store holds, each once and in order."""

    async def main():
        lab = await lab_mod.Lab.open(limits={"max_log_bytes": 400_000})
        wb = lab.show()
        wb.inspector.filters = {"type": "session/titleChanged"}
        for k in range(10):
            lab.dispatch({"type": "session/titleChanged", "title": f"small {k}"})
            lab.dispatch({"type": "chat/draftChanged", "draft": None}, lab.chat)
        assert wb.inspector.rows(0, 50)["total"] == 10
        for k in range(40):  # past the budget: the start is dropped
            lab.dispatch({"type": "session/titleChanged", "title": f"big {k:02} " + "t" * 10_000})
        assert lab.store.first_seq > 1
        for k in range(300):  # and the log grows past its old length again
            lab.dispatch({"type": "chat/draftChanged", "draft": None}, lab.chat)
            if k % 10 == 0:
                lab.dispatch({"type": "session/titleChanged", "title": f"late {k}"})
        held = [t.seq for t in lab.transitions if t.type == "session/titleChanged"]
        reply = wb.inspector.rows(0, 500)
        assert [r["seq"] for r in reply["rows"]] == held and reply["total"] == len(held)
        assert {r["type"] for r in reply["rows"]} == {"session/titleChanged"}
        wb.inspector.filters = {}
        everything = wb.inspector.rows(0, 5)["rows"]
        assert [r["seq"] for r in everything] == list(range(lab.store.first_seq, lab.store.first_seq + 5))
        wb.close()
        await lab.aclose()

    _run(main)


def test_the_chat_views_stop_button_cancels_the_running_turn():
    """A turn waits for a person; the person clicks Stop instead: the turn ends cancelled, its
    call is skipped, and the view no longer offers Stop. A second click says nothing runs."""

    async def main():
        lab = await lab_mod.Lab.open()

        @lab.tool(annotations={"destructiveHint": True})
        def delete_branch(name: str) -> str:
            """Delete a git branch."""
            return f"deleted {name}"

        running = lab.start("delete_branch name=old")
        assert await running.until_blocked() == "Delete Branch is pending-confirmation"
        chat = lab.show().chat
        assert chat.header["active"] is True
        chat._on_custom_msg(chat, {"type": "stop"})
        turn = await asyncio.wait_for(running, 10)
        assert turn.status == "cancelled" and chat.error == ""
        [call] = turn.tool_calls
        assert (call.status, call.state.get("reason")) == ("cancelled", "skipped")
        assert chat.header["active"] is False
        chat._on_custom_msg(chat, {"type": "stop"})
        assert chat.error == "there is no active turn to cancel"
        await lab.aclose()

    _run(main)
