"""Attacker round 34: a stranger's frame nested 20,000 levels deep, on a real socket."""

from __future__ import annotations

import asyncio

from ahp_lab.widgets.wire import wire_view_model

from .conftest import arun, open_lab


def test_a_frame_nested_past_pythons_stack_leaves_the_wire_view_and_its_filters_working():
    """The host refused the frame, but its wire log had recorded it: ``lab.frames.where`` raised
    ``RecursionError`` into the notebook's cell, and the wire view showed "wire view failed" and
    no row (with a filter, until the frame left the log). The frame is an invalid one, shown as
    its text."""
    from ahp_lab.transport import connect_websocket

    async def go() -> None:
        async with open_lab() as lab:
            transport = await connect_websocket(await lab.aserve())
            answers: list[str] = []
            got = asyncio.Event()
            transport.set_receiver(lambda text: (answers.append(text), got.set()), lambda: None)
            transport.send("[" * 20_000 + "]" * 20_000)
            transport.send('{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {}}')
            await asyncio.wait_for(got.wait(), 10)
            while not any('"id": 1' in a or '"id":1' in a for a in answers):
                got.clear()
                await asyncio.wait_for(got.wait(), 10)
            deep = next(f for f in lab.frames.frames if f.direction == "in" and f.text.startswith("[["))
            assert deep.info()["kind"] == "invalid"
            assert [f.info()["method"] for f in lab.frames.where("in", "ping")] == ["ping"]
            view = wire_view_model(lab.frames.frames, selected=deep.n)
            assert view["rows"] and view["detail"]["json"]["text"].startswith("[[[")
            filtered = wire_view_model(lab.frames.frames, text="invalid", selected=deep.n)
            assert [r["n"] for r in filtered["rows"]] == [deep.n]
            transport.close()

    arun(go())
