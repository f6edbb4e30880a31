"""Synchronous helpers (``lab.approve``, ``lab.run``, ``Lab()``) inside a running loop, as a
notebook's Run All drives them: many handles ready at once, one of them a cell that nests."""

from __future__ import annotations

import subprocess
import sys

# Run in a fresh interpreter: nest_asyncio2 patches the loop class once per process, and the
# failure happens only at the first nesting, inside asyncio's own _run_once.
SCRIPT = """
import asyncio
from ahp_lab.lab.turns import run_sync

async def work():
    for _ in range(5):
        await asyncio.sleep(0)
    return "done"

async def main():
    loop = asyncio.get_running_loop()
    seen = []
    for i in range(20):
        loop.call_soon(seen.append, i)
    loop.call_soon(lambda: seen.append(run_sync(work())))  # the cell that calls lab.approve()
    for i in range(20, 40):
        loop.call_soon(seen.append, i)
    while len(seen) < 41:
        await asyncio.sleep(0)
    return seen

seen = asyncio.run(main())
assert sorted(x for x in seen if isinstance(x, int)) == list(range(40)), seen
assert "done" in seen
print("ok")
"""


def test_the_first_synchronous_helper_under_run_all_does_not_end_the_kernel():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
