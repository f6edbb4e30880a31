"""The skills extension: the session's skill customizations as an on-demand catalog (seed 003 §4.3).

Only the host's own skills count (plugin folders and directories it resolved from its disk); a
client-published plugin's skills are left out, since the host would read them from its own disk.

Only each skill's name and one-line description reach the model, in the capability notice. The
resident ``Skill`` tool reads a ``SKILL.md`` (or a file beside it, ``path``) when the model asks,
after a real-path check: the file must resolve inside the skill's folder, which must resolve inside
its container, so a symlink or ``..`` cannot lead elsewhere. ``/skill:<name>`` slash commands are
offered through AHP completions.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from ..tools import ToolError
from .contract import Catalog, CatalogEntry, Extension, ExtensionTool, Lifecycle
from .runtime import Command

__all__ = ["skills_extension", "read_skill", "MAX_SKILL_BYTES"]

MAX_SKILL_BYTES = 256 * 1024


def _local(uri: object) -> Path | None:
    if not isinstance(uri, str):
        return None
    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return None
    return Path(unquote(parts.path))


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:
        return False


def _strip_frontmatter(text: str) -> str:
    if text.startswith("---"):
        end = text.find("\n---", 3)
        if end != -1:
            return text[end + 4 :].lstrip("\n")
    return text


def read_skill(skill: dict, path: str | None = None) -> str:
    """The body of a skill's ``SKILL.md`` (or of ``path`` inside its folder), real-path checked."""
    md = _local(skill.get("uri"))
    if skill.get("_clientId"):
        raise ToolError(
            f"the skill {skill.get('name')!r} was published by a client; the host reads only its own skills"
        )
    if md is None:
        raise ToolError(f"the skill {skill.get('name')!r} is not a local file; it cannot be read here")
    folder = os.path.realpath(md.parent)
    container = _local(skill.get("_container"))
    if container is not None and not _inside(folder, os.path.realpath(container)):
        raise ToolError(f"the skill {skill.get('name')!r} resolves outside its customization folder")
    target = md if not path else md.parent / path
    real = os.path.realpath(target)
    if not _inside(real, folder):
        raise ToolError(
            f"{path or 'SKILL.md'} resolves outside the folder of the skill {skill.get('name')!r}"
        )
    try:
        with open(real, "rb") as handle:
            data = handle.read(MAX_SKILL_BYTES + 1)
    except OSError as exc:
        raise ToolError(
            f"{path or 'SKILL.md'} of {skill.get('name')!r} could not be read ({exc.strerror or exc})"
        ) from None
    if len(data) > MAX_SKILL_BYTES:
        raise ToolError(f"{path or 'SKILL.md'} is larger than {MAX_SKILL_BYTES} bytes")
    text = data.decode("utf-8", errors="replace")
    return _strip_frontmatter(text) if not path else text


class SkillArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    skill: str = Field(description="The skill's name, as the capability notice lists it.")
    path: str | None = Field(
        default=None, description="A file inside the skill's folder instead of SKILL.md."
    )


def _skills(runtime, *, for_model: bool = True) -> list[dict]:
    """The session's skills the host can read: its own, not a client's. A client-published plugin
    may claim any ``file://`` URI, and reading the host's disk there would hand the host's files to
    whoever published it."""
    flag = "disableModelInvocation" if for_model else "disableUserInvocation"
    return [s for s in runtime.customizations("skill") if not s.get(flag) and not s.get("_clientId")]


def _find(runtime, name: str) -> dict:
    for s in _skills(runtime):
        if s.get("name") == name:
            return s
    raise ToolError(f"no skill named {name!r} is available in this session")


def _load(runtime, call) -> str:
    return read_skill(_find(runtime, call.args.skill), call.args.path)


def _discover(runtime) -> list[CatalogEntry]:
    return [CatalogEntry(str(s.get("name")), str(s.get("description") or "")) for s in _skills(runtime)]


def _activate(runtime) -> None:
    def commands() -> list[Command]:
        out = []
        for s in _skills(runtime, for_model=False):
            name = str(s.get("name"))

            def expand(args: str, skill: dict = s) -> str:
                body = read_skill(skill)
                return f"Follow the skill {skill.get('name')}:\n\n{body}" + (f"\n\n{args}" if args else "")

            out.append(Command(f"skill:{name}", str(s.get("description") or f"Use the skill {name}"), expand))
        return out

    runtime.register_commands(commands)


def skills_extension() -> Extension:
    """The skills extension (id ``skills``)."""
    return Extension(
        id="skills",
        lifecycle=Lifecycle(activate=_activate),
        tools=[
            ExtensionTool(
                "Skill",
                "Load a skill (its SKILL.md, or another file in its folder) before following it.",
                _load,
                SkillArgs,
                title="Skill",
            )
        ],
        catalogs=[Catalog("skills", _discover, inventory="skill")],
    )
