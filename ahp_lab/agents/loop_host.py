"""How a :class:`~ahp_lab.agents.loop.LoopAgent` joins a host: through the host's extension hooks.

:class:`LoopHost` sits in ``host.extensions``. For every session of the agent's provider it
activates an :class:`~ahp_lab.extensions.session.ExtensionSession` (and discovers custom tools),
publishes the resident tools as the session's server tools, resolves and lets the host run them,
shows discovered tools as customizations, offers slash-command completions, and provides the
controlled services extensions may use (``HostServices``): the session's tools and
customizations, MCP servers from trusted configuration, subagents in tool-spawned chats, nested
tool calls, aborting a turn.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..extensions.custom_tools import (
    CustomToolAPI,
    Discovery,
    ToolSource,
    as_host_tool,
    discover_tools,
    load_custom_tools,
)
from ..extensions.runtime import AgentRun
from ..extensions.session import ExtensionSession, described
from ..protocol.jsonvalue import to_json
from ..protocol.uris import file_uri
from ..tools import FAILURES, ResolvedTool, ToolError

if TYPE_CHECKING:
    from .loop import LoopAgent

__all__ = ["LoopHost", "SubagentSpec"]

log = logging.getLogger("ahp_lab.agents.loop")


@dataclass
class SubagentSpec:
    """What a tool-spawned chat's agent runs with."""

    parent_chat: str
    call_id: str
    instructions: str
    exclude: frozenset
    run: AgentRun


def _defined_in(tool: Any, otherwise: Any) -> Any:
    """The file that defines a tool given in code (its ``execute``), else ``otherwise``."""
    try:
        return inspect.getsourcefile(inspect.unwrap(tool.execute)) or otherwise
    except (TypeError, ValueError):  # a built-in or a callable object without a source file
        return otherwise


#: The session ``_meta`` key under which ahp_lab keeps what it records there.
STATE_META = "ahpLab"


class LoopHost:
    """Host extension of one LoopAgent (see the module docstring)."""

    def __init__(self, agent: LoopAgent, host: Any) -> None:
        self.agent = agent
        self.host = host
        self.sessions: dict[str, ExtensionSession] = {}
        self.discoveries: dict[str, Discovery] = {}
        self.subagents: dict[str, SubagentSpec] = {}
        self._tasks: set[asyncio.Task] = set()
        self._activations: dict[str, asyncio.Task] = {}
        self._disposing: set[asyncio.Task] = set()  # deactivations under way: aclose waits for them
        self._counter = 0

    def _spawn(self, coro: Any) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _ours(self, session: str) -> bool:
        runtime = self.host.sessions.get(session)
        return runtime is not None and runtime.provider == self.agent.provider

    # -- host hooks -----------------------------------------------------------------------------

    def on_session_created(self, session: str) -> None:
        if not self._ours(session):
            return
        es = ExtensionSession(
            session,
            self.agent.extensions,
            self,
            workspace=self.agent.workspace,
            user_config=self.agent.user_config,
            hook_timeout=self.agent.hook_timeout,
        )
        self.sessions[session] = es
        self._activations[session] = self._spawn(self._activate(session, es))

    def activation(self, session: str) -> asyncio.Future:
        """The task activating a session's extensions (done once its tools are published)."""
        return self._activations[session]

    async def _activate(self, session: str, es: ExtensionSession) -> None:
        try:
            discovery = await self._discover(session, es)
            es.set_extra_tools([as_host_tool(t, self.abort) for t in discovery.tools])
            await es.activate()
            await self._session_event(session, {"reason": "start"})
        except FAILURES as exc:  # never leave a turn waiting forever
            log.exception("activating the extensions of %s failed", session)
            es.problems.append(f"activating the extensions failed: {described(exc)}.")
            es.ready.set()
        if self.host.store.has_channel(session):
            self._publish_custom_tools(session)
            self.host._publish_server_tools(session)

    async def _discover(self, session: str, es: ExtensionSession) -> Discovery:
        agent = self.agent
        builtin = set(es.tools) | {t.name for t in self.host.server_tools.values()}
        discovery = await discover_tools(
            agent.workspace,
            paths=agent.tool_paths,
            user_dir=agent.user_tools,
            builtin=builtin,
            has_ui=agent.has_ui,
        )
        if agent.custom_tools:
            source = ToolSource(agent.workspace.root, agent.workspace.root, given=True)
            taken = builtin | {t.name for t in discovery.tools}
            api = CustomToolAPI(agent.workspace.root, has_ui=agent.has_ui)
            await load_custom_tools(agent.custom_tools, api, taken, source)
            discovery.sources.insert(0, source)
        self.discoveries[session] = discovery
        return discovery

    def on_session_disposed(self, session: str) -> None:
        self._activations.pop(session, None)
        es = self.sessions.pop(session, None)
        if es is None:
            return
        runtime = self.host.sessions.get(session)
        for chat in runtime.chats if runtime is not None else ():
            self.subagents.pop(chat, None)
        self._disposing.add(self._spawn(self._dispose(session, es)))

    async def _dispose(self, session: str, es: ExtensionSession) -> None:
        await self._session_event(session, {"reason": "shutdown"})
        await es.deactivate()
        self.discoveries.pop(session, None)

    async def _session_event(self, session: str, event: dict) -> None:
        for source in (self.discoveries.get(session) or Discovery()).sources:
            for t in source.tools:
                if t.on_session is None:
                    continue
                try:
                    value = t.on_session(dict(event))
                    if asyncio.iscoroutine(value):
                        await value
                except FAILURES as exc:  # logged as a warning, never fatal (seed 004)
                    log.warning(
                        "on_session(%s) of %s failed: %s: %s",
                        event.get("reason"),
                        t.name,
                        type(exc).__name__,
                        exc,
                    )

    def on_transition(self, transition: Any) -> None:
        t = transition.type
        if (
            t == "session/customizationToggled"
            and transition.channel in self.sessions
            and self._custom_names(transition.channel)
        ):
            self.host._publish_server_tools(transition.channel)  # a custom tool turned on or off
        elif t == "chat/truncated":
            session = self.host.chat_session.get(transition.channel)
            if session in self.sessions:
                self._spawn(self._session_event(session, {"reason": "tree", "chat": transition.channel}))
        elif t == "session/chatAdded" and transition.channel in self.sessions:
            origin = (transition.action.get("summary") or {}).get("origin") or {}
            if origin.get("kind") == "fork":
                event = {"reason": "branch", "chat": (transition.action.get("summary") or {}).get("resource")}
                self._spawn(self._session_event(transition.channel, event))

    def server_tool_definitions(self, session: str) -> list[dict]:
        es = self.sessions.get(session)
        if es is None or not es.ready.is_set():
            return []
        custom = self._custom_names(session)
        if not custom:
            return es.definitions()
        enabled = self._enabled_custom_tools(session)  # a custom tool turned off in the tree is left out
        return [d for d in es.definitions() if d["name"] in enabled or d["name"] not in custom]

    def resolve_tool(self, session: str, name: str) -> ResolvedTool | None:
        es = self.sessions.get(session)
        if es is None or name not in es.tools:
            return None
        if name in self._custom_names(session) and name not in self._enabled_custom_tools(session):
            return None
        tool = es.tools[name]
        return ResolvedTool("server", name, tool.title, tool.definition(), tool=tool)

    def completion_items(self, session: str, chat: str, word: str, start: int, offset: int) -> list[dict]:
        es = self.sessions.get(session)
        if es is None or not word.startswith("/"):
            return []
        items = []
        for name, command in sorted(es.all_commands().items()):
            if name.startswith(word[1:]):
                items.append(
                    {
                        "insertText": f"/{name} ",
                        "rangeStart": start,
                        "rangeEnd": offset,
                        "attachment": {
                            "type": "simple",
                            "label": f"/{name}",
                            "modelRepresentation": command.description,
                        },
                    }
                )
        return items

    async def aclose(self) -> None:
        """Deactivate every session's extensions (running ``deactivate``) and stop background work."""
        for session in list(self.sessions):
            es = self.sessions.pop(session)
            await self._dispose(session, es)
        await asyncio.gather(*self._disposing, return_exceptions=True)
        self._disposing.clear()
        for task in list(self._tasks):
            task.cancel()

    # -- custom tools in the tree ---------------------------------------------------------------

    def _custom_names(self, session: str) -> set[str]:
        return {t.name for t in (self.discoveries.get(session) or Discovery()).tools}

    def _enabled_custom_tools(self, session: str) -> set[str]:
        es = self.sessions.get(session)
        if es is None:
            return set()
        return {c.get("name") for c in es.customizations("tool")}

    def _publish_custom_tools(self, session: str) -> None:
        discovery = self.discoveries.get(session)
        if discovery is None:
            return
        # one container per directory, and one for the tools given in code (named as such, each
        # tool's uri the file that defines it: they come from no folder of the workspace)
        by_dir: dict[str | None, list[ToolSource]] = {}
        for source in discovery.sources:
            by_dir.setdefault(None if source.given else str(source.directory), []).append(source)
        for n, (directory, sources) in enumerate(by_dir.items()):
            children = []
            problems = []
            for source in sources:
                for t in source.tools:
                    children.append(
                        {
                            "type": "tool",
                            "id": f"customTool-{len(children) + 1}-{n}",
                            "uri": file_uri(_defined_in(t, source.path) if source.given else source.path),
                            "name": t.name,
                            "description": t.description,
                        }
                    )
                if source.error:
                    label = "custom_tools" if source.given else source.path.name
                    problems.append(f"{label}: {source.error}.")
            entry: dict[str, Any] = {
                "type": "directory",
                "id": f"customTools-{n + 1}",
                "uri": file_uri(sources[0].directory if directory is None else directory),
                "name": "Custom tools (given in code)"
                if directory is None
                else f"Custom tools ({directory})",
                "enabled": True,
                "contents": "tool",
                "writable": False,
                "children": children,
                "load": {"kind": "degraded", "message": " ".join(problems)}
                if problems
                else {"kind": "loaded"},
            }
            self.host.dispatch(session, {"type": "session/customizationUpdated", "customization": entry})

    # -- HostServices ---------------------------------------------------------------------------

    def host_tools(self, session: str) -> list:
        es = self.sessions.get(session)
        own = set(es.tools) if es is not None else set()
        return [t for t in self.host.available_tools(session) if t.name not in own]

    def customizations(self, session: str) -> list[dict]:
        return to_json((self.host.store.state(session) or {}).get("customizations") or [])

    def add_mcp_server(self, session: str, name: str, config: dict) -> str:
        manager = next(
            (e for e in self.host.extensions if e is not self and hasattr(e, "add_mcp_server")), None
        )
        if manager is None:
            raise ToolError("this host runs no MCP servers (no customization manager)")
        return manager.add_mcp_server(session, name, config)

    def record_state(self, session: str, turn_id: str, extension_id: str, value: Any) -> None:
        """The state goes into the session's ``_meta`` under ``ahpLab.extensionState`` (turn id ->
        extension id -> value), so the log, the export and every client hold it (seed 003: it
        persists with the session)."""
        meta = to_json((self.host.store.state(session) or {}).get("_meta") or {})
        ours = meta.get(STATE_META) if isinstance(meta.get(STATE_META), dict) else {}
        by_turn = ours.get("extensionState") if isinstance(ours.get("extensionState"), dict) else {}
        by_turn = {**by_turn, turn_id: {**(by_turn.get(turn_id) or {}), extension_id: value}}
        meta[STATE_META] = {**ours, "extensionState": by_turn}
        self.host.dispatch(session, {"type": "session/metaChanged", "_meta": meta})

    def branch(self, chat: str) -> list[str]:
        state = self.host.store.state(chat) or {}
        ids = [t.get("id") for t in state.get("turns") or ()]
        active = state.get("activeTurn")
        if isinstance(active, dict):
            ids.append(active.get("id"))
        origin = state.get("origin") or {}
        if origin.get("kind") == "sideChat" and origin.get("chat") != chat:
            source = self.branch(origin.get("chat"))
            if origin.get("turnId") in source:
                source = source[: source.index(origin["turnId"]) + 1]
            ids = source + ids
        return ids

    async def run_agent(self, session: str, chat: str, call_id: str, request: dict) -> AgentRun:
        if chat in self.subagents:
            raise ToolError("a subagent cannot start further subagents")
        self._counter += 1
        agent_id = request.get("agent_id") or f"subagent-{self._counter}"
        title = request.get("title") or f"Subagent {self._counter}"
        child = f"ahp-chat:/{uuid.uuid4()}"
        run = AgentRun(agent_id, child, title, stop=lambda: self.abort(child))
        self.subagents[child] = SubagentSpec(
            chat, call_id, request.get("instructions") or "", frozenset(request.get("exclude") or ()), run
        )
        done: asyncio.Future = asyncio.get_running_loop().create_future()
        run.task = done
        self.host.create_chat(
            session,
            child,
            {"title": title, "initialMessage": {"text": request["prompt"], "origin": {"kind": "agent"}}},
            origin={"kind": "tool", "chat": chat, "toolCallId": call_id},
        )
        self._spawn(self._follow(run, done))
        return run

    async def _follow(self, run: AgentRun, done: asyncio.Future) -> None:
        def ended(state: Any) -> Any:
            if not state:
                return ("gone", None)
            turns = state.get("turns") or []
            return ("ok", turns[-1]) if turns and not state.get("activeTurn") else None

        try:
            kind, turn = await self.host.wait_for(run.chat, ended)
        except Exception as exc:
            kind, turn = "gone", None
            run.text = f"the subagent could not be followed: {exc}"
        if kind == "ok":
            run.status = {"complete": "completed", "error": "failed"}.get(turn.get("state"), "cancelled")
            run.text = self.agent.final_text(turn.get("id")) or _markdown_of(turn)
            if run.status == "failed":
                run.text = run.text or str((turn.get("error") or {}).get("message") or "the subagent failed")
        elif run.status == "running":
            run.status = "cancelled"
        if not done.done():
            done.set_result(run.text)

    async def call_host_tool(self, chat: str, turn_id: str, name: str, arguments: dict) -> Any:
        runner = self.host.turns.get(chat)
        if runner is None or runner.turn_id != turn_id:
            raise ToolError("the turn of this tool call is over")
        return await runner.call_tool(name, arguments)

    def abort(self, chat: str, turn_id: str | None = None) -> None:
        state = self.host.store.state(chat) or {}
        active = state.get("activeTurn") or {}
        if not active or (turn_id is not None and active.get("id") != turn_id):
            return
        runner = self.host.turns.get(chat)
        self.host.dispatch(chat, {"type": "chat/turnCancelled", "turnId": active.get("id"), "duration": 0})
        if runner is not None and runner.task is not None:
            runner.task.cancel()


def _markdown_of(turn: dict) -> str:
    parts = [p.get("content") for p in turn.get("responseParts") or () if p.get("kind") == "markdown"]
    return "\n\n".join(str(p) for p in parts if p)
