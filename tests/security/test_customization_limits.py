"""Requirement 6 and 7 for customizations: hostile plugin files are bounded, not expanded."""

from __future__ import annotations

import json
from pathlib import Path

from ahp_lab.protocol.jsonvalue import dumps

from .conftest import arun, joined, open_lab, publish


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def alias_file(name: str, aliases: int) -> str:
    """An agent file whose frontmatter refers ``aliases`` times to one 4 KB string."""
    refs = ", ".join(["*x"] * aliases)
    return f"---\nname: {name}\nx: &x {'A' * 4096}\ntools: [{refs}]\n---\nhi"


def skill(name: str) -> str:
    return f"---\nname: {name}\ndescription: the {name} skill\n---\nDo {name}.\n"


async def loaded(lab, timeout: float = 30) -> dict:
    def check(state):
        entries = state.get("customizations") or []
        done = [e for e in entries if (e.get("load") or {}).get("kind") not in (None, "loading")]
        return entries[0] if entries and len(done) == len(entries) else None

    return await lab.wait_for(lab.session, check, timeout=timeout)


def test_a_yaml_alias_bomb_is_refused_not_expanded(tmp_path: Path):
    plugin = tmp_path / "bomb"
    # 50,000 aliases to a 4 KB string: 200 MB once expanded (and 200 KB: over the size limit)
    write(plugin / "agents/bomb.md", alias_file("bomb", 50_000))
    write(
        plugin / "agents/dense.md", alias_file("dense", 12_000)
    )  # under the size limit, over the alias limit
    # under the alias cap, nested: 9 levels of 9 references (a "billion laughs")
    laughs = ["---", "name: laughs", "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for n in range(1, 9):
        laughs.append(f"l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * 9) + "]")
    laughs += ["description: *l8", "---", "body"]
    write(plugin / "agents/laughs.md", "\n".join(laughs))
    write(plugin / "agents/fine.md", "---\nname: fine\ndescription: ok\n---\nbody\n")

    async def main():
        async with open_lab(plugins=[plugin]) as lab:
            entry = await loaded(lab)
            assert entry["load"]["kind"] == "degraded"
            assert "agents/bomb.md was skipped: its frontmatter is 204,121 bytes" in entry["load"]["message"]
            assert "uses 12,000 YAML aliases, over the limit of 100" in entry["load"]["message"]
            assert "expands to more than 262,144 characters through YAML aliases" in entry["load"]["message"]
            assert [c["name"] for c in entry["children"]] == ["bomb:fine"]
            assert len(dumps(entry)) < 10_000

    arun(main())


def test_oversized_frontmatter_and_deep_json_are_skipped_with_a_reason(tmp_path: Path):
    plugin = tmp_path / "p"
    write(plugin / "skills/big/SKILL.md", "---\nname: big\ndescription: " + "d" * 70_000 + "\n---\nbody\n")
    write(plugin / ".mcp.json", '{"mcpServers": ' + "[" * 100 + "]" * 100 + "}")
    write(plugin / "skills/ok/SKILL.md", skill("ok"))

    async def main():
        async with open_lab(plugins=[plugin]) as lab:
            entry = await loaded(lab)
            message = entry["load"]["message"]
            assert (
                "skills/big/SKILL.md was skipped: its frontmatter is 70,023 bytes, over the limit of 65,536"
                in message
            )
            assert ".mcp.json was skipped: it nests deeper than 64 levels" in message
            assert [c["name"] for c in entry["children"]] == ["p:ok"]

    arun(main())


def test_files_per_folder_and_the_size_of_one_entry_are_bounded(tmp_path: Path):
    many = tmp_path / "many"
    for n in range(30):
        write(many / f"skills/s{n:02d}/SKILL.md", skill(f"s{n:02d}"))

    async def main():
        async with open_lab(plugins=[many], limits={"max_folder_files": 10}) as lab:
            entry = await loaded(lab)
            assert len(entry["children"]) == 10
            assert "the limit is 10" in entry["load"]["message"]
        async with open_lab(plugins=[many], limits={"max_customization_entry_bytes": 3_000}) as lab:
            entry = await loaded(lab)
            assert entry["load"]["kind"] == "error" and entry["children"] == []
            assert "over the limit of 3,000" in entry["load"]["message"]

    arun(main())


def test_a_strangers_plugin_with_too_many_files_is_bounded(connect_stranger):
    async def main():
        async with open_lab(limits={"max_folder_files": 20}) as lab:
            s = await joined(connect_stranger, lab, "flood")
            await publish(s, "flood", "p", {f"skills/s{n}/SKILL.md": skill(f"s{n}") for n in range(50)})
            entry = await loaded(lab)
            reads = [m for m in s.received if m.get("method") == "resourceRead"]
            assert len(reads) < 20
            assert "more than 20 entries" in json.dumps(entry["load"])

    arun(main())
