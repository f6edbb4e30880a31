"""``Lab``: the one facade a notebook needs.

``Lab()`` starts an in-kernel AHP host with the scripted agent, connects this notebook to it as
an AHP client over the in-process JSON-RPC pair, creates a session and subscribes to its default
chat. From there::

    @lab.tool
    async def run_unit_tests(pattern: str = "test_*", *, ctx) -> str: ...

    turn = await lab.send("run the tests")   # never blocks the kernel's event loop
    lab.transitions[-5:]                      # the transition log as a table
    lab.state_at(42)                          # every channel as it was after seq 42
    lab.dispatch({...})                       # any client-dispatchable action
    lab.export("run.jsonl"); Lab.replay("run.jsonl")

A message sent while a turn runs waits its turn (it is queued); ``steer=True`` steers the running
turn instead. A lab's MCP servers stop with the lab: ``await lab.aclose()``, or when it is
garbage-collected, replaced by a new run of its cell, or the kernel shuts down.

``lab.run(...)`` is the synchronous twin of ``send`` for scripts and nbval; it refuses to wait for
a person (a blocked cell cannot receive widget clicks) and says to ``await`` instead.
"""

from .base import LabReplay, LabSource
from .checks import UnknownFieldWarning
from .live import Lab
from .remote import NotAvailableRemotely, RemoteLab
from .turns import ActionRejected, HumanInputNeeded, PendingTurn, ToolCall, Turn, run_sync

__all__ = [
    "Lab",
    "LabReplay",
    "RemoteLab",
    "NotAvailableRemotely",
    "LabSource",
    "PendingTurn",
    "Turn",
    "ToolCall",
    "ActionRejected",
    "HumanInputNeeded",
    "UnknownFieldWarning",
    "run_sync",
]
