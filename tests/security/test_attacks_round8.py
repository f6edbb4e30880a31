"""Attacks from the eighth round: one request's cost, and what a stranger's parameters put in state."""

from __future__ import annotations

from ahp_lab.host.connection import MAX_COMPLETION_ITEMS

from .conftest import arun, joined, open_lab


def test_one_completions_request_costs_the_text_once_not_once_per_item(connect_stranger):
    """Each item's range was converted to UTF-16 by scanning the text before it again: 300 tools
    the stranger published and a megabyte of text froze the host for every client for 15 s. Each
    position is now converted once, and an answer lists at most MAX_COMPLETION_ITEMS items."""

    async def main():
        async with open_lab() as lab:
            mallory = await joined(connect_stranger, lab, "mallory")
            tools = [
                {"name": f"t{i}", "description": "d", "inputSchema": {"type": "object"}} for i in range(2000)
            ]
            active = {"clientId": "mallory", "tools": tools}
            mallory.dispatch(lab.session, 1, {"type": "session/activeClientSet", "activeClient": active})
            assert "rejectionReason" not in await mallory.echo(1)
            text = "😀" + "x" * 999_990 + " @t1"
            units = len(text.encode("utf-16-le")) // 2
            params = {"channel": lab.chat, "kind": "userMessage", "text": text, "offset": units}
            # 2,000 items over a megabyte would have taken minutes: the call's own 10 s bound fails it
            answer = await mallory.call("completions", params)
            assert "result" in answer, answer
            items = answer["result"]["items"]
            assert len(items) == MAX_COMPLETION_ITEMS
            assert all(i["insertText"].startswith("t1") for i in items)
            # the range is the word "@t1", in UTF-16 units (the emoji counts two)
            assert {(i["rangeStart"], i["rangeEnd"]) for i in items} == {(units - 3, units)}

    arun(main())
