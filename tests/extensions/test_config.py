"""Configuration behind the trust boundary: the project layer of an untrusted workspace is never
opened (proved with an audit hook on ``open``), a trusted one is merged by the extension's resolve,
and a cloned repository's MCP server cannot start a process."""

from __future__ import annotations

import json
import sys
import threading

from pydantic import BaseModel

from ahp_lab.extensions import Configuration, Extension, Hooks, mcp_extension

from ..customizations.conftest import DEMO_SERVER
from ..loop_helpers import arun, loop_lab, notes

_OPENED: list[str] = []
_WATCHING = threading.Event()


def _audit(event: str, args: tuple) -> None:
    if event == "open" and _WATCHING.is_set() and args and isinstance(args[0], (str, bytes)):
        _OPENED.append(str(args[0]))


sys.addaudithook(_audit)  # audit hooks cannot be removed: it records only while _WATCHING is set


class Greeting(BaseModel):
    greeting: str = "hello"
    names: list[str] = []


def _greeter(seen: list) -> Extension:
    def resolve(user, project):
        names = (user.names if user else []) + (project.names if project else [])
        greeting = (
            project.greeting
            if project and "greeting" in project.model_fields_set
            else (user.greeting if user else "hello")
        )
        return Greeting(greeting=greeting, names=names)

    def hook(runtime):
        seen.append(runtime.config)

    return Extension(
        "greeter",
        configuration=Configuration("layered", Greeting, resolve=resolve),
        hooks=Hooks(before_model_call=hook),
    )


def _setup(tmp_path, project: dict, user: dict) -> None:
    (tmp_path / "ws" / ".ahp_lab").mkdir(parents=True)
    (tmp_path / "ws" / ".ahp_lab" / "config.json").write_text(json.dumps(project))
    (tmp_path / "user.json").write_text(json.dumps(user))


def test_an_untrusted_workspace_never_opens_its_project_configuration(tmp_path):
    _setup(
        tmp_path, {"greeter": {"greeting": "pwned", "names": ["mallory"]}}, {"greeter": {"names": ["ada"]}}
    )
    project_file = str(tmp_path / "ws" / ".ahp_lab" / "config.json")
    seen: list = []

    async def main():
        _OPENED.clear()
        _WATCHING.set()
        try:
            lab, _agent = await loop_lab(tmp_path, None, [_greeter(seen)], trusted=False)
            await lab.send("hi")
        finally:
            _WATCHING.clear()
        await lab.aclose()

    arun(main())
    assert str(tmp_path / "user.json") in _OPENED  # the audit hook does see the reads ...
    assert project_file not in _OPENED  # ... and the project file was never opened
    assert seen[-1] == Greeting(greeting="hello", names=["ada"])


def test_a_trusted_workspace_merges_both_layers_with_the_extensions_resolve(tmp_path):
    _setup(
        tmp_path,
        {"greeter": {"greeting": "hej", "names": ["bo"]}},
        {"greeter": {"greeting": "hi", "names": ["ada"]}},
    )
    seen: list = []

    async def main():
        lab, _agent = await loop_lab(tmp_path, None, [_greeter(seen)], trusted=True)
        await lab.send("hi")
        await lab.aclose()

    arun(main())
    assert seen[-1] == Greeting(greeting="hej", names=["ada", "bo"])


def test_a_malformed_layer_is_reported_in_one_sentence_and_the_default_is_used(tmp_path):
    _setup(tmp_path, {}, {"greeter": {"names": "not a list"}})
    seen: list = []

    async def main():
        lab, agent = await loop_lab(tmp_path, None, [_greeter(seen)], trusted=True)
        await lab.send("hi")
        await lab.send("again")
        problems = agent.extension_session(lab.session).problems
        told = notes(lab)
        await lab.aclose()
        return problems, told

    problems, told = arun(main())
    assert seen[-1] == Greeting()
    assert len(problems) == 1 and "the user configuration of greeter: names" in problems[0]
    # the person is told in the chat, once: the warning went only to the kernel's log
    assert [n for n in told if "problem" in n] == [f"The session's extensions met 1 problem: {problems[0]}"]


def test_a_configuration_nested_too_deep_is_one_problem_not_a_failed_activation(tmp_path):
    """A user configuration of 400 KB of brackets (under the size bound) raised RecursionError out
    of the reader, and the session's whole extension activation failed with it."""
    _setup(tmp_path, {}, {})
    (tmp_path / "user.json").write_text("[" * 200_000 + "]" * 200_000)
    seen: list = []

    async def main():
        lab, agent = await loop_lab(tmp_path, None, [_greeter(seen)], trusted=True)
        turn = await lab.send("hi")
        problems = agent.extension_session(lab.session).problems
        await lab.aclose()
        return turn, problems

    turn, problems = arun(main())
    assert turn.state["state"] == "complete"
    assert seen[-1] == Greeting()  # the extension ran, with its default
    assert any("nests too deep to be read" in p for p in problems), problems


def test_a_cloned_repositorys_mcp_server_does_not_start_unless_the_workspace_is_trusted(tmp_path):
    marker = tmp_path / "ran"
    evil = {"command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w').write('x')"]}
    good = {"command": sys.executable, "args": [str(DEMO_SERVER)]}
    _setup(tmp_path, {"mcp": {"servers": {"evil": evil}}}, {"mcp": {"servers": {"demo": good}}})

    async def servers(trusted: bool) -> list[str]:
        lab, _agent = await loop_lab(tmp_path, None, [mcp_extension()], trusted=trusted)
        names = [e["name"] for e in lab.session_state.get("customizations") or () if e["type"] == "mcpServer"]
        if trusted:
            await lab.host.wait_for(lab.session, lambda s: marker.exists() or None, timeout=20)
        await lab.aclose()
        return names

    assert arun(servers(False)) == ["demo"]
    assert not marker.exists()
    assert sorted(arun(servers(True))) == ["demo", "evil"]  # trusted: the project layer counts
    assert marker.exists()
