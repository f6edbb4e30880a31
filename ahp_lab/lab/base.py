"""What a live lab and a replayed log share: the store and its readable views, and the source the
workbench views read from (``LabSource``). A replay is read-only: ``read_only`` says so to the views;
a closed lab is ``closed``, and so is the source of its views."""

from __future__ import annotations

import asyncio
import importlib.util
import shlex
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..host import ROOT
from ..protocol.jsonvalue import to_json
from ..store import Store, Transition
from .turns import ToolCall, Turn


class LabBase:
    """What a live lab and a replayed log have in common: the store and its views."""

    store: Store
    session: str | None
    chat: str | None
    read_only: bool = False  # a replayed log: views show it and dispatch nothing
    closed: bool = False  # a closed lab (``aclose()``): views show it and dispatch nothing

    @property
    def transitions(self):
        """The transition log: ``lab.transitions[42]`` is seq 42, ``lab.transitions[-5:]`` the newest five."""
        return self.store.transitions

    def state_at(self, seq: int) -> dict[str, Any]:
        """Every channel's state right after transition ``seq`` (time travel), as plain JSON."""
        return {channel: to_json(state) for channel, state in self.store.state_at(seq).items()}

    def state(self, channel: str | None = None) -> Any:
        """The authoritative state of a channel (default: the session's default chat), as plain JSON."""
        return to_json(self.store.state(channel or self.chat))

    @property
    def root(self) -> Any:
        """The root channel's state (agents, active session count)."""
        return to_json(self.store.state(ROOT))

    @property
    def session_state(self) -> Any:
        """The session channel's state, as plain JSON."""
        return to_json(self.store.state(self.session)) if self.session else None

    @property
    def chat_state(self) -> Any:
        """The default chat's state, as plain JSON."""
        return to_json(self.store.state(self.chat)) if self.chat else None

    def as_source(self) -> LabSource:
        """What the workbench views read and do (``Workbench(lab)`` calls this for you)."""
        return LabSource(self)

    def turns(self, chat: str | None = None) -> list[Turn]:
        """Every turn of a chat (default: the session's chat), oldest first; the active one last."""
        chat = chat or self.chat
        state = self.store.state(chat) or {}
        out = [Turn(t, chat, self) for t in state.get("turns") or ()]
        if state.get("activeTurn"):
            out.append(Turn(state["activeTurn"], chat, self, active=True))
        return out

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Every tool call of the default chat, oldest first."""
        return [call for turn in self.turns() for call in turn.tool_calls]

    def export(self, path: str | Path) -> int:
        """Write the transition log as JSON Lines; returns the number of lines."""
        return self.store.export(path)

    def subscribe(self, listener: Callable[[Transition], None]) -> Callable[[], None]:
        """Call ``listener(transition)`` after every transition; returns a function that unsubscribes."""
        return self.store.subscribe(listener)


EXPORT_FOLDER = "ahp-fixtures"  # where the inspector's export button writes, next to the notebook
#: Written beside exported pytest files: inside a project whose pytest options need plugins (this
#: repository's need nbval), ``pytest ahp-fixtures/test_x.py`` runs with these instead.
_EXPORT_PYTEST_INI = (
    "# written by ahp_lab's export: these tests need nothing but pytest and ahp_lab\n[pytest]\n"
)


def _unused(path: Path) -> Path:
    """``path``, or ``name-2.ext``, ``name-3.ext``, ... : the first that does not exist yet."""
    k = 1
    candidate = path
    while candidate.exists():
        k += 1
        candidate = path.with_name(f"{path.stem}-{k}{path.suffix}")
    return candidate


class LabSource:
    """What the workbench views read and do, backed by a lab (see ``ahp_lab.widgets.source``).

    Reads come from the host's store (the authoritative state and the transition log); clicks
    are dispatched through this notebook's client without waiting, so the kernel never blocks.
    The source holds a live lab weakly: views do not keep a lab (and its MCP servers) alive once
    its variable is gone. Then, or once the lab is closed, ``closed`` is true, reads show the
    last state, and every dispatch raises ``PermissionError``.
    """

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The loop the lab's work runs on (its agent's pipes, its connection): the views hand the
        browser's messages to it (``None``: the lab is gone, or has none)."""
        lifetime = getattr(self._lab(), "_lifetime", None)
        return lifetime.state.get("loop") if lifetime is not None else None

    def __init__(self, lab: LabBase) -> None:
        self.store = lab.store
        self.read_only = lab.read_only
        self._lab = weakref.ref(lab)
        self._replay = lab if lab.read_only else None  # a replay has no processes: keep it
        self._session, self._chat = lab.session, lab.chat

    @property
    def lab(self) -> LabBase | None:
        """The lab behind the views (``None`` once a live lab was garbage-collected)."""
        return self._lab()

    @property
    def closed(self) -> bool:
        """Whether the live lab behind the views is closed or gone (a replay is never closed)."""
        if self.read_only:
            return False
        lab = self._lab()
        return lab is None or lab.closed

    @property
    def session(self) -> str | None:
        lab = self._lab()
        return lab.session if lab is not None else self._session

    @property
    def chat(self) -> str | None:
        lab = self._lab()
        return lab.chat if lab is not None else self._chat

    @property
    def transitions(self):
        return self.store.transitions

    def state(self, channel: str) -> Any:
        return self.store.state(channel)

    def state_at(self, seq: int) -> dict[str, Any]:
        return self.store.state_at(seq)

    def subscribe(self, listener: Callable[[Transition], None]) -> Callable[[], None]:
        return self.store.subscribe(listener)

    def _live(self) -> Any:
        """The lab to act through; ``PermissionError`` for a replay or a closed lab."""
        if self.read_only:
            raise PermissionError("a replayed log is read-only")
        lab = self._lab()
        if lab is None or lab.closed:
            raise PermissionError("this lab is closed: its views show its last state and send nothing")
        return lab

    def export_fixture(
        self,
        first_seq: int,
        last_seq: int,
        *,
        channel: str | None = None,
        pytest: bool = False,
        description: str | None = None,
        folder: str | Path = EXPORT_FOLDER,
    ) -> dict[str, Any]:
        """Write seqs ``first_seq..last_seq`` (inclusive) of one channel as an upstream reducer
        fixture (``lab.transitions[a:b].to_fixture``), or as a pytest file that replays it
        (``.to_pytest``), into ``folder`` (relative to the kernel's working directory, the
        notebook's folder) under a new name. Returns ``{"path", "folder", "command", "reducer",
        "actions"}`` (absolute paths; ``command`` runs the export from any folder);
        ``ValueError`` when the range holds nothing to export (the inspector's export button)."""
        lo, hi = sorted((int(first_seq), int(last_seq)))
        picked = self.store.transitions[lo : hi + 1]  # a closed lab (or a replay) exports too
        fixture = picked.to_fixture(description=description, channel=channel)
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        stem = f"{fixture['reducer']}_seq{lo}_{hi}"
        path = _unused(out / (f"test_{stem}.py" if pytest else f"{stem}.json"))
        if pytest:
            picked.to_pytest(path, description=description, channel=channel)
            ini = out / "pytest.ini"
            if not ini.exists():  # `pytest FILE` reads this, not the options of a project above it
                ini.write_text(_EXPORT_PYTEST_INI, encoding="utf-8")
        else:
            picked.to_fixture(path, description=description, channel=channel)
        path, out = path.resolve(), out.resolve()  # said whole: a terminal opens elsewhere
        if pytest:
            command = f"pytest {shlex.quote(str(path))}"
            if importlib.util.find_spec("pytest") is None:
                command += " (install pytest first: pip install pytest)"
        else:
            command = f"python -m ahp_lab.conformance run {shlex.quote(str(out))}"
        return {
            "path": str(path),
            "folder": str(out),
            "command": command,
            "reducer": fixture["reducer"],
            "actions": len(fixture["actions"]),
        }

    def dispatch(self, channel: str, action: dict) -> None:
        self._live().client.dispatch(channel, action)

    def prompt(self, text: str) -> None:
        self._live().start(text)

    def stop(self, chat: str) -> None:
        self._live().stop(chat)

    def authenticate(self, resource: str, token: str) -> None:
        self._live().authenticate(resource, token)

    def allow_mcp(self, server: str, shown: str | None = None) -> None:
        """The person allows a remote client's MCP server (the tree's "Allow" button, which gives
        the fingerprint of the configuration it showed)."""
        self._live().allow_mcp(server, shown)

    # -- model calls (a LoopAgent's record, not host state; see ahp_lab.widgets.model_calls) -----

    def _call_log(self) -> Any:
        host = getattr(self.lab, "host", None)  # none for a replay, or a lab that is gone
        session = self.session
        if host is None or session not in getattr(host, "sessions", {}):
            return None
        return getattr(host.agent_for(session), "model_calls", None)

    def model_calls(self) -> list | None:
        """The model calls of this session (``None`` when its agent calls no model)."""
        log = self._call_log()
        return None if log is None else log.for_session(self.session)

    def subscribe_model_calls(self, listener: Callable[[Any], None]) -> Callable[[], None]:
        """Call ``listener(call)`` as each model call starts and ends; returns unsubscribe."""
        log = self._call_log()
        return log.subscribe(listener) if log is not None else (lambda: None)

    # -- local approvals (client state, not host state; see ahp_lab.widgets.source) -------------

    def local_approvals(self) -> list[dict]:
        """Client tool calls waiting for this notebook's own approval (``approval="always"``)."""
        lab = self._lab()
        if self.read_only or lab is None:
            return []
        client = lab.client
        return [
            {
                "toolCallId": a.tool_call_id,
                "chat": a.chat,
                "turnId": a.turn_id,
                "toolName": a.tool_name,
                "title": a.title,
                "toolInput": a.tool_input,
                "clientId": client.client_id,
            }
            for a in list(client.approvals.values())
            if not a.future.done()  # decided, the client drops it on its next step
        ]

    def decide_local(self, tool_call_id: str, approved: bool, chat: str | None = None) -> None:
        waiting = self._live().client.approvals.values()
        approval = next(
            (
                a
                for a in waiting
                if a.tool_call_id == tool_call_id and chat in (None, a.chat) and not a.future.done()
            ),
            None,
        )
        if approval is None:
            raise LookupError(f"no local approval is waiting for tool call {tool_call_id!r}")
        approval.approve() if approved else approval.deny()

    @staticmethod
    def _frame_log(lab: Any) -> Any:
        host = getattr(lab, "host", None)  # a replayed log (or a lab that is gone) has no frames
        return getattr(lab.agent, "frames", None) if host is not None else None

    def acp_frames(self) -> list[dict]:
        """The raw ACP frames of the lab's session (empty unless its agent speaks ACP)."""
        lab = self._lab()
        frames = self._frame_log(lab)
        if frames is None:
            return []
        # the views show them: redacted like any text the host did not write
        return [f.to_json() for f in frames.redacted(self.session, lab.host.redactor)]

    def acp_frames_for_seq(self, seq: int) -> list[dict]:
        """The ACP frames linked to the transition ``seq``."""
        lab = self._lab()
        frames = self._frame_log(lab)
        return [f.to_json() for f in frames.redacted_for_seq(seq, lab.host.redactor)] if frames else []

    def subscribe_local_approvals(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` when a local approval appears or ends (``$localApproval[Done]``)."""
        lab = self._lab()
        if self.read_only or lab is None:
            return lambda: None

        def on_change(_channel: str, action: dict) -> None:
            if action.get("type") in ("$localApproval", "$localApprovalDone"):
                listener()

        return lab.client.on_change(on_change)


class LabReplay(LabBase):
    """A read-only lab rebuilt from an exported transition log."""

    read_only = True

    def __init__(self, store: Store) -> None:
        self.store = store
        channels = store.channels()
        self.session = next((u for u, k in channels.items() if k == "session"), None)
        session = store.state(self.session) if self.session else None
        self.chat = (session or {}).get("defaultChat") or next(
            (u for u, k in channels.items() if k == "chat"), None
        )

    def __repr__(self) -> str:
        return f"<LabReplay {len(self.store.transitions)} transitions, session={self.session}>"

    def __getattr__(self, name: str) -> Any:
        from .live import Lab  # what a live lab can do that a replay cannot

        if not name.startswith("_") and hasattr(Lab, name):
            raise AttributeError(
                f"a replay is read-only: {name} belongs to a live Lab(); a replay has transitions, "
                "state_at(), state(), turns(), export() and show()",
                name=name,
                obj=self,
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}", name=name, obj=self)

    def show(self):
        """The workbench over the replayed log (read-only)."""
        from ..widgets import Workbench

        return Workbench(LabSource(self))
