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

A cell is known by the id JupyterLab sends with each execution (IPython's ``cell_id``) and by its
code, for frontends that send no id (``jupyter console``, ``jupyter_client``, older ``nbclient``):
running the same code again puts a new lab where the old one was. A script has no cells: only the
other two apply there.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import weakref
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["LabLifetime", "close_extensions", "weakly"]

_closing: set[asyncio.Future] = set()  # finalizers' close tasks, kept until they are done
_by_cell: dict[str, list[weakref.ref]] = {}  # cell id -> the labs its runs made
_made_this_run: list[tuple[list[str], weakref.ref]] = []  # (cell keys, lab) made by the cell now running
_hooked = False


def weakly(method: Callable[..., Any]) -> Callable[..., None]:
    """A callback that calls a bound ``method`` while its object lives, without keeping it alive."""
    ref = weakref.WeakMethod(method)

    def call(*args: Any) -> None:
        target = ref()
        if target is not None:
            target(*args)

    return call


async def close_extensions(
    host: Any, owner: bool = True, own: Iterable[str] = (), own_extensions: Iterable[Any] = ()
) -> None:
    """Stop what a host runs outside this process: its extensions' MCP servers and directory
    watchers, and its sessions' agent processes (an ACP agent's ``close_session``). Its turns
    stop first, when the lab closing is the ``owner`` of the host: a queued message starting as
    the lab closed spawned an agent after it had.

    A lab given another lab's host stops only what it started: the agent processes of the
    sessions it made (``own``) and its own extensions (``own_extensions``: its WebSocket server),
    which leave the host; the host goes on, with its extensions and the other labs' sessions
    (closing a second lab on a host ended the first lab's agent for good: ACP round 16)."""
    stop_turns = getattr(host, "stop_turns", None)  # none for a lab attached to another host
    if stop_turns is not None and owner:
        running = stop_turns()
        if running:
            await asyncio.wait(running, timeout=10)
    for ext in list(host.extensions) if owner else list(own_extensions):
        if not owner:
            if ext not in host.extensions:
                continue  # stopped already (lab.stop_serving())
            host.extensions.remove(ext)
        close = getattr(ext, "aclose", None)
        if close is not None:
            await close()
    live = getattr(host, "sessions", ())
    for session in list(live) if owner else [s for s in own if s in live]:
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
    sessions = getattr(host, "agent_sessions", None)  # none for a lab attached to another host
    for uri, ctx in list(sessions.contexts.items()) if sessions is not None else ():
        if state["owner"] or uri in state["sessions"]:
            ctx.close()  # agents' terminals lead their own process groups: killed now, loop or not
    loop = state["loop"]
    if loop is None or loop.is_closed():
        return  # nothing to drive them: stdio servers see their stdin close when this process exits
    if loop.is_running():  # in a cell, or collected on another thread: close on the lab's loop

        def schedule() -> None:
            task = asyncio.ensure_future(
                close_extensions(host, state["owner"], state["sessions"], state["extensions"])
            )
            _closing.add(task)
            task.add_done_callback(_closing.discard)

        with contextlib.suppress(RuntimeError):  # the loop closed in between
            loop.call_soon_threadsafe(schedule)
    else:  # interpreter exit (a kernel shutting down, a script ending): the loop can still run
        with contextlib.suppress(Exception):
            loop.run_until_complete(
                asyncio.wait_for(
                    close_extensions(host, state["owner"], state["sessions"], state["extensions"]), 10
                )
            )


class LabLifetime:
    """Ties a lab's processes to the lab: finalizer, cell re-runs, interpreter exit (see module).

    ``owns_host`` is false for a lab given someone else's host: collecting that lab stops nothing.
    """

    def __init__(self, lab: Any, host: Any, owns_host: bool) -> None:
        self.host = host
        # the sessions and extensions the lab made: what closing it stops on a host it does not own
        self.state: dict[str, Any] = {
            "closed": False,
            "loop": None,
            "owner": owns_host,
            "sessions": set(),
            "extensions": [],
        }
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
        await close_extensions(
            self.host, self.state["owner"], self.state["sessions"], self.state["extensions"]
        )


def _current_cell() -> list[str]:
    """The keys of the cell being run: the id JupyterLab sends, and its code; none outside one."""
    try:
        from IPython import get_ipython
    except ImportError:
        return []
    shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    get_parent: Callable[..., Any] | None = getattr(kernel, "get_parent", None)
    if get_parent is None:
        return []
    keys = []
    with contextlib.suppress(Exception):
        parent = get_parent("shell") or {}
        cell = (parent.get("metadata") or {}).get("cellId")
        if isinstance(cell, str) and cell:
            keys.append(cell)
        code = (parent.get("content") or {}).get("code")
        if isinstance(code, str) and code.strip():
            keys.append("code:" + hashlib.sha256(code.encode("utf-8", "replace")).hexdigest())
    return keys


def _track_cell(lab: Any) -> None:
    global _hooked
    keys = _current_cell()
    if not keys:
        return
    from IPython import get_ipython

    if not _hooked:
        get_ipython().events.register("post_run_cell", _after_cell)
        _hooked = True
    ref = weakref.ref(lab)
    _made_this_run.append((keys, ref))
    for key in keys:
        _by_cell.setdefault(key, []).append(ref)


def _after_cell(_result: Any) -> None:
    """After a cell that made labs: close the labs earlier runs of the same cell made."""
    made = {id(r) for _keys, r in _made_this_run}
    cells = {key for keys, _r in _made_this_run for key in keys}
    _made_this_run.clear()
    for cell in cells:
        earlier = [r for r in _by_cell[cell] if id(r) not in made]
        _by_cell[cell] = [r for r in _by_cell[cell] if id(r) in made]
        for ref in earlier:
            lab = ref()
            if lab is not None and not lab.closed:
                lab.close()
