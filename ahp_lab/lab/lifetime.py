"""A lab's processes live no longer than the lab.

A lab starts subprocesses (MCP servers, an ACP agent's process) and file watchers through its host.
``await lab.aclose()`` stops them; so do these, for a person who never calls it:

* **garbage collection**: a finalizer stops them when the lab is collected, for instance when a
  cell puts a new lab in the same variable. Nothing the lab owns refers back to it (its client's
  listeners and the workbench views hold it weakly), so dropping the last reference is enough;
* **re-running a cell**: IPython keeps every displayed value in its output history (``Out``), so
  a cell ending in ``lab`` keeps that lab alive for good. When a cell that made labs runs again
  and makes new ones, the labs its earlier runs made are closed;
* **the kernel shutting down**: the finalizer also runs at interpreter exit, for labs still open.

Cells are told apart by the id JupyterLab sends with each execution (IPython's ``cell_id``);
where there is none (a script, nbval) only the other two apply.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["LabLifetime", "close_extensions", "weakly"]

_closing: set[asyncio.Future] = set()  # finalizers' close tasks, kept until they are done
_by_cell: dict[str, list[weakref.ref]] = {}  # cell id -> the labs its runs made
_made_this_run: list[weakref.ref] = []
_hooked = False


def weakly(method: Callable[..., Any]) -> Callable[..., None]:
    """A callback that calls a bound ``method`` while its object lives, without keeping it alive."""
    ref = weakref.WeakMethod(method)

    def call(*args: Any) -> None:
        target = ref()
        if target is not None:
            target(*args)

    return call


async def close_extensions(host: Any) -> None:
    """Stop what a host runs outside this process: its extensions' MCP servers and directory
    watchers, and its sessions' agent processes (an ACP agent's ``close_session``)."""
    for ext in list(host.extensions):
        close = getattr(ext, "aclose", None)
        if close is not None:
            await close()
    for session in list(getattr(host, "sessions", ())):
        try:
            close_session = getattr(host.agent_for(session), "close_session", None)
        except KeyError:  # a session whose agent is gone
            continue
        if close_session is not None:
            await close_session(session)


def _release(host: Any, state: dict) -> None:
    """Stop the host's processes without waiting (the finalizer, and ``lab.close()``). It holds the
    host and the lab's loop, never the lab (which may be gone)."""
    if state["closed"]:
        return
    state["closed"] = True
    loop = state["loop"]
    if loop is None or loop.is_closed():
        return  # nothing to drive them: stdio servers see their stdin close when this process exits
    if loop.is_running():  # in a cell, or collected on another thread: close on the lab's loop

        def schedule() -> None:
            task = asyncio.ensure_future(close_extensions(host))
            _closing.add(task)
            task.add_done_callback(_closing.discard)

        with contextlib.suppress(RuntimeError):  # the loop closed in between
            loop.call_soon_threadsafe(schedule)
    else:  # interpreter exit (a kernel shutting down, a script ending): the loop can still run
        with contextlib.suppress(Exception):
            loop.run_until_complete(asyncio.wait_for(close_extensions(host), 10))


class LabLifetime:
    """Ties a lab's processes to the lab: finalizer, cell re-runs, interpreter exit (see module).

    ``owns_host`` is false for a lab given someone else's host: collecting that lab stops nothing.
    """

    def __init__(self, lab: Any, host: Any, owns_host: bool) -> None:
        self.host = host
        self.state: dict[str, Any] = {"closed": False, "loop": None}
        self._finalizer = weakref.finalize(lab, _release, host, self.state) if owns_host else None
        _track_cell(lab)

    def started(self) -> None:
        """Called on the lab's loop once it runs: the loop its processes belong to."""
        self.state["loop"] = asyncio.get_running_loop()

    @property
    def closed(self) -> bool:
        return self.state["closed"]

    def close(self) -> None:
        """Mark closed and stop the processes in the background."""
        if self._finalizer is not None:
            self._finalizer()  # runs _release once, and never again at exit
        else:
            _release(self.host, self.state)

    async def aclose(self) -> None:
        """Mark closed, stop the processes, and wait until they have stopped."""
        self.state["closed"] = True
        if self._finalizer is not None:
            self._finalizer.detach()
        await close_extensions(self.host)


def _current_cell() -> str | None:
    """The id of the notebook cell being run (JupyterLab sends it), or ``None``."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    get_parent: Callable[..., Any] | None = getattr(kernel, "get_parent", None)
    if get_parent is None:
        return None
    with contextlib.suppress(Exception):
        parent = get_parent("shell") or {}
        cell = (parent.get("metadata") or {}).get("cellId")
        return cell if isinstance(cell, str) and cell else None
    return None


def _track_cell(lab: Any) -> None:
    global _hooked
    cell = _current_cell()
    if cell is None:
        return
    from IPython import get_ipython

    if not _hooked:
        get_ipython().events.register("post_run_cell", _after_cell)
        _hooked = True
    ref = weakref.ref(lab)
    _made_this_run.append(ref)
    _by_cell.setdefault(cell, []).append(ref)


def _after_cell(result: Any) -> None:
    """After a cell that made labs: close the labs earlier runs of the same cell made."""
    made = {id(r) for r in _made_this_run}
    _made_this_run.clear()
    cell = getattr(getattr(result, "info", None), "cell_id", None)
    if not made or cell not in _by_cell:
        return
    earlier = [r for r in _by_cell[cell] if id(r) not in made]
    _by_cell[cell] = [r for r in _by_cell[cell] if id(r) in made]
    for ref in earlier:
        lab = ref()
        if lab is not None and not lab.closed:
            lab.close()
