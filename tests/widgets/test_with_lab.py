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
