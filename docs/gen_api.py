"""Generate docs/api.md from the docstrings of ahp_lab's public API.

    python docs/gen_api.py            # rewrite docs/api.md
    python docs/gen_api.py --check    # exit 1 if docs/api.md is out of date (tests/test_docs.py does this)

The reference lists what a notebook uses: the ``ahp_lab`` package (``Lab`` and friends), the
scenario language of the scripted agent, the transition log, the reducers and the views. Members
come from ``__all__`` (or the list below) in source order; a member without a docstring is listed
with "(no docstring)" so that the gap is visible.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

OUT = Path(__file__).with_name("api.md")

# (module, title, names or None for __all__, intro)
SECTIONS: list[tuple[str, str, list[str] | None, str]] = [
    (
        "ahp_lab",
        "`ahp_lab`: the lab",
        [
            "Lab",
            "LabReplay",
            "Turn",
            "PendingTurn",
            "ToolCall",
            "ActionRejected",
            "HumanInputNeeded",
            "UnknownFieldWarning",
            "ProtocolError",
            "to_json",
        ],
        "`from ahp_lab import Lab` is all a notebook needs to start a host, a session and a chat.",
    ),
    (
        "ahp_lab.tools",
        "`ahp_lab.tools`: Python functions as AHP tools",
        ["tool", "Tool", "ToolContext", "ToolError"],
        "Also importable from `ahp_lab`. `@lab.tool` and `lab.server_tool` take the same options as `Tool`.",
    ),
    (
        "ahp_lab.agents.scripted",
        "`ahp_lab.agents.scripted`: the scenario language",
        [
            "say",
            "think",
            "notify",
            "call",
            "ask",
            "then",
            "summarize",
            "fail",
            "usage",
            "text_question",
            "number_question",
            "integer_question",
            "boolean_question",
            "choice_question",
            "multi_choice_question",
            "ScriptedAgent",
        ],
        "Pass a list of steps as `script=` to `lab.send`/`lab.start`/`lab.run`; plain strings are streamed as markdown.",
    ),
    (
        "ahp_lab.agents.acp",
        "`ahp_lab.agents.acp`: real ACP agents behind the host",
        ["AcpAgent", "AcpFrameLog", "AcpFrame"],
        "`Lab(agent=AcpAgent([...]))`; `lab.acp_frames` is the session's frame record. See `docs/acp.md`.",
    ),
    (
        "ahp_lab.agents.base",
        "`ahp_lab.agents.base`: the agent interface",
        ["Agent", "SessionAgent", "TurnContext", "SessionContext", "TurnFailed", "FileAccessDenied"],
        "What an agent backend implements, and what the host offers it per turn and per session.",
    ),
    (
        "ahp_lab.store",
        "`ahp_lab.store`: the transition log",
        ["Transition", "TransitionLog", "Store"],
        "`lab.transitions` is a `TransitionLog`; `lab.store` is the host's `Store`.",
    ),
    (
        "ahp_lab.protocol.limits",
        "`ahp_lab.protocol.limits`: what the host accepts",
        ["Limits", "LimitError", "check_json"],
        "Pass `Lab(limits={...})` (or a `Limits`) to change a bound; `docs/security.md` explains each one.",
    ),
    (
        "ahp_lab.reducers",
        "`ahp_lab.reducers`: pure reducers",
        ["REDUCERS", "reduce", "derive_status", "input_needed_status"],
        "`REDUCERS[kind](state, action, now_ms)` for kind in root, session, chat, terminal, changeset, annotations, resourceWatch.",
    ),
    (
        "ahp_lab.widgets",
        "`ahp_lab.widgets`: the views",
        [
            "Workbench",
            "ChatPane",
            "InputQueue",
            "CustomizationTree",
            "ToolCallTimeline",
            "TransitionInspector",
            "ModelCallsView",
            "WireView",
        ],
        "`lab.show()` returns a `Workbench`; its parts are `.chat`, `.inputs`, `.tree`, `.timeline` and `.inspector` (and `.model_calls` for a `LoopAgent`).",
    ),
    (
        "ahp_lab.lab.remote",
        "`ahp_lab.lab.remote`: a lab attached to a remote host",
        ["RemoteLab", "NotAvailableRemotely", "serve_host"],
        "`Lab.attach(url, token=...)` returns a `RemoteLab`; `lab.serve()` uses `serve_host`.",
    ),
    (
        "ahp_lab.lab.clientlog",
        "`ahp_lab.lab.clientlog`: a client's own log",
        ["ClientLog", "ClientTransition"],
        "An attached lab's `lab.store`: the envelopes and snapshots its client applied.",
    ),
    (
        "ahp_lab.client",
        "`ahp_lab.client`: a client for any AHP host",
        ["connect", "AhpClient", "Replica", "Outcome", "Reconnector", "persisted_client_id", "LocalApproval"],
        "`client = await ahp_lab.connect(url)`; `lab.client` is one too (over the in-process pair).",
    ),
    (
        "ahp_lab.transport",
        "`ahp_lab.transport`: JSON-RPC over a socket",
        ["WebSocketServer", "WebSocketTransport", "connect_websocket", "HandshakeRefused"],
        "One JSON-RPC message per WebSocket text frame; `lab.frames` is a `FrameLog` (`ahp_lab.transport.tap`).",
    ),
    (
        "ahp_lab.transport.tap",
        "`ahp_lab.transport.tap`: recording frames",
        ["FrameLog", "Frame", "TappedTransport"],
        "What the raw wire view (`lab.wire()`) reads.",
    ),
    (
        "ahp_lab.agents.loop",
        "`ahp_lab.agents.loop`: the agent loop",
        ["LoopAgent", "ToolCallInfo", "ToolResultInfo"],
        "`Lab(agent=LoopAgent(model, extensions=[...]))`; see [extensions.md](extensions.md).",
    ),
    (
        "ahp_lab.agents.models",
        "`ahp_lab.agents.models`: models for the loop",
        [
            "ScriptedModel",
            "respond",
            "use",
            "OpenAIModel",
            "ModelRequest",
            "ModelResponse",
            "ModelToolCall",
            "ModelEvent",
        ],
        "A scripted model needs no network; `OpenAIModel` streams from an OpenAI-compatible endpoint.",
    ),
    (
        "ahp_lab.agents.model_calls",
        "`ahp_lab.agents.model_calls`: what the model saw",
        ["ModelCall", "ModelCallLog"],
        "`lab.model_calls` lists the session's `ModelCall`s; `agent.model_calls` is the whole `ModelCallLog`.",
    ),
    (
        "ahp_lab.extensions",
        "`ahp_lab.extensions`: the extension contract and custom tools",
        None,
        "Seeds 003 and 004; the guide is [extensions.md](extensions.md).",
    ),
]

# Members of classes that are part of the API even though they start with an underscore, or that
# should be left out although public (inherited widget machinery).
SKIP_MEMBERS = {"keys", "comm", "log"}
# ipywidgets/anywidget plumbing every view has; not part of what a notebook reads or sets
WIDGET_INTERNAL_TRAITS = {
    "layout",
    "tabbable",
    "tooltip",
    "comm",
    "keys",
    "log",
    "error_count",
    "debounce_ms",
}


def _doc(obj: object) -> str:
    doc = inspect.getdoc(obj)
    return doc.strip() if doc else "*(no docstring)*"


def _annotation(value: object) -> str:
    text = value if isinstance(value, str) else inspect.formatannotation(value)
    return text.replace("typing.", "")


def _signature(obj: object, name: str) -> str:
    """``name(params) -> return`` with annotations as written (``from __future__ import annotations``)
    and without private parameters (``_wait=...``)."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return name
    parts: list[str] = []
    star_done = False
    params = list(sig.parameters.values())
    for i, p in enumerate(params):
        if p.name in ("self", "cls") and i == 0:
            continue
        if p.name.startswith("_"):
            continue
        if p.kind is p.KEYWORD_ONLY and not star_done:
            parts.append("*")
            star_done = True
        if p.kind is p.VAR_POSITIONAL:
            star_done = True
            text = f"*{p.name}"
        elif p.kind is p.VAR_KEYWORD:
            text = f"**{p.name}"
        else:
            text = p.name
        if p.annotation is not p.empty:
            text += f": {_annotation(p.annotation)}"
        if p.default is not p.empty:
            default = re.sub(r"<function (\w+) at 0x[0-9a-f]+>", r"\1", repr(p.default))
            text += f" = {default}" if p.annotation is not p.empty else f"={default}"
        parts.append(text)
        if p.kind is p.POSITIONAL_ONLY and (
            i + 1 == len(params) or params[i + 1].kind is not p.POSITIONAL_ONLY
        ):
            parts.append("/")
    out = f"{name}({', '.join(parts)})"
    if sig.return_annotation is not sig.empty and sig.return_annotation not in ("None", None):
        out += f" -> {_annotation(sig.return_annotation)}"
    return out


def _own_members(cls: type) -> list[tuple[str, object]]:
    """Public members defined by the class itself or its ahp_lab bases, in source order."""
    out: list[tuple[str, object]] = []
    seen: set[str] = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("ahp_lab"):
            continue
        for name, value in vars(klass).items():
            if name.startswith("_") or name in seen or name in SKIP_MEMBERS:
                continue
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if not (inspect.isfunction(value) or isinstance(value, property)):
                continue
            seen.add(name)
            out.append((name, value))
    return out


def _widget(cls: type, lines: list[str]) -> None:
    """A view: its docstring, ``refresh()`` and the synced traits a notebook may read or set."""
    lines += [f"### `{_signature(cls, cls.__name__)}`", "", _doc(cls), ""]
    lines.append("- **`refresh()`**: " + _doc(cls.refresh).splitlines()[0] if hasattr(cls, "refresh") else "")
    traits = [
        (name, trait)
        for name, trait in cls.class_traits(sync=True).items()
        if not name.startswith("_") and name not in WIDGET_INTERNAL_TRAITS
    ]
    if traits:
        lines.append(
            "- synced traits: "
            + ", ".join(f"`{name}` ({type(trait).__name__})" for name, trait in sorted(traits))
        )
    lines.append("")


def _class(cls: type, lines: list[str]) -> None:
    if (
        hasattr(cls, "class_traits")
        and cls.__module__.startswith("ahp_lab.widgets.views")
        and hasattr(cls, "render_view")
    ):
        _widget(cls, lines)
        return
    lines += [f"### `{_signature(cls, cls.__name__)}`", "", _doc(cls), ""]
    if cls.__module__.startswith("ahp_lab.widgets"):
        lines += [
            "- **`.views`**: the five parts, in the order above (`chat`, `inputs`, `tree`, `timeline`, `inspector`)",
            "",
        ]
        return
    for name, member in _own_members(cls):
        if isinstance(member, property):
            lines += [f"- **`.{name}`** (property): {_doc(member).splitlines()[0]}"]
        else:
            prefix = "async " if inspect.iscoroutinefunction(member) else ""
            sig = _signature(member, name)
            doc = _doc(member)
            first, _, rest = doc.partition("\n")
            lines += [f"- **`{prefix}{sig}`**: {first}"]
            if rest.strip():
                lines += ["", *[f"  {line}" if line else "" for line in rest.strip().splitlines()], ""]
    lines.append("")


def render() -> str:
    lines = [
        "# API reference",
        "",
        "<!-- Generated by `python docs/gen_api.py` from the docstrings; do not edit by hand. -->",
        "",
        "See [the guide](guide.md) for how the pieces fit together and the notebooks for worked examples.",
        "",
    ]
    for module_name, title, names, intro in SECTIONS:
        module = importlib.import_module(module_name)
        lines += [f"## {title}", "", intro, ""]
        for name in names or module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj):
                _class(obj, lines)
            elif callable(obj):
                prefix = "async " if inspect.iscoroutinefunction(obj) else ""
                lines += [f"### `{prefix}{_signature(obj, name)}`", "", _doc(obj), ""]
            else:
                lines += [
                    f"### `{name}`",
                    "",
                    f"`{type(obj).__name__}` with keys: " + ", ".join(f"`{k}`" for k in obj)
                    if isinstance(obj, dict)
                    else repr(obj),
                    "",
                ]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is out of date: run `python docs/gen_api.py`", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
