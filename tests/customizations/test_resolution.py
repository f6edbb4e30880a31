"""Open Plugins resolution over real folders: children and metadata, and every kind of bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from ahp_lab.host.customizations import (
    DiskSource,
    MemorySource,
    resolve_directory,
    resolve_plugin,
    split_frontmatter,
)
from ahp_lab.protocol.customizations import PluginCustomization

from .conftest import DEMO_PLUGIN, skill_md, write


def frontmatter(path: Path) -> dict:
    text = path.read_text()
    return yaml.safe_load(text.split("---\n")[1]) or {}


def children(res) -> dict[str, dict]:
    return {c.fields["name"]: {"type": c.type, **c.fields} for c in res.children}


def test_the_sample_plugin_resolves_to_the_files_it_holds():
    res = resolve_plugin(DiskSource(DEMO_PLUGIN), DEMO_PLUGIN.name)
    manifest = json.loads((DEMO_PLUGIN / ".plugin/plugin.json").read_text())
    assert (res.name, res.version, res.error, res.warnings) == (
        manifest["name"],
        manifest["version"],
        None,
        [],
    )
    kids = children(res)
    ns = manifest["name"]
    # skills/<name>/SKILL.md, namespaced plugin:skill, fields from the frontmatter
    for skill_dir in sorted((DEMO_PLUGIN / "skills").iterdir()):
        fm = frontmatter(skill_dir / "SKILL.md")
        kid = kids[f"{ns}:{skill_dir.name}"]
        assert kid["type"] == "skill"
        assert kid["description"] == fm["description"]
        assert kid.get("disableModelInvocation") == fm.get("disable-model-invocation")
        assert kid["uri"] == (skill_dir / "SKILL.md").as_uri()
    # commands/*.md are skills of the slash-command kind
    for cmd in (DEMO_PLUGIN / "commands").glob("*.md"):
        kid = kids[f"{ns}:{cmd.stem}"]
        assert (kid["type"], kid["description"]) == ("skill", frontmatter(cmd)["description"])
    agent_fm = frontmatter(DEMO_PLUGIN / "agents/reviewer.md")
    agent = kids[f"{ns}:{agent_fm['name']}"]
    assert agent["type"] == "agent"
    assert agent["model"] == agent_fm["model"]
    assert agent["tools"] == [t.strip() for t in agent_fm["tools"].split(",")]
    prompt = kids[f"{ns}:explain"]
    assert (prompt["type"], prompt["description"]) == (
        "prompt",
        frontmatter(DEMO_PLUGIN / "prompts/explain.md")["description"],
    )
    rule_fm = frontmatter(DEMO_PLUGIN / "rules/python-style.mdc")
    rule = kids[f"{ns}:python-style"]
    assert (rule["type"], rule["globs"], rule["alwaysApply"]) == (
        "rule",
        [rule_fm["globs"]],
        rule_fm["alwaysApply"],
    )
    hooks = json.loads((DEMO_PLUGIN / "hooks/hooks.json").read_text())["hooks"]
    hook_kids = [k for k in kids.values() if k["type"] == "hook"]
    assert len(hook_kids) == sum(len(rules) for rules in hooks.values())
    servers = json.loads((DEMO_PLUGIN / ".mcp.json").read_text())["mcpServers"]
    [server] = [k for k in kids.values() if k["type"] == "mcpServer"]
    assert server["name"] == f"{ns}:{next(iter(servers))}"
    assert server["uri"] == (DEMO_PLUGIN / ".mcp.json").as_uri()
    # the range covers the declaration "demo": {...} inside .mcp.json
    lines = (DEMO_PLUGIN / ".mcp.json").read_text().splitlines()
    start, end = server["range"]["start"], server["range"]["end"]
    assert lines[start["line"]][start["character"] :].startswith('"demo"')
    assert lines[end["line"]][: end["character"]].rstrip().endswith("}")
    # hook event/matcher and MCP command/args/env stay host-internal
    wire = json.dumps([c.fields for c in res.children])
    for secret in ('"command"', '"args"', '"env"', '"matcher"', "Write|Edit", "check.sh", "mcp_server.py"):
        assert secret not in wire
    internal = {c.type: c.internal for c in res.children if c.internal}
    assert internal["hook"]["event"] in hooks
    assert internal["mcpServer"]["args"][0] == f"{DEMO_PLUGIN}/../../mcp_server.py"  # ${PLUGIN_ROOT} expanded
    assert internal["mcpServer"]["env"] == {"AHP_DEMO_PLUGIN": str(DEMO_PLUGIN)}


def test_the_resolved_container_validates_against_the_wire_model(tmp_path):
    from ahp_lab.host.customizations import CustomizationManager, _Container, _Session

    class _Host:
        class store:  # noqa: N801 - a stand-in for the host's store
            @staticmethod
            def state(_):
                return {}

    manager = CustomizationManager(_Host())
    sess = _Session("ahp-session:/x")
    c = _Container("plugin-1", "plugin", DEMO_PLUGIN.as_uri(), path=DEMO_PLUGIN)
    manager.resolve_disk(c)
    entry = manager.entry(sess, c)
    PluginCustomization.model_validate(entry)  # every field is a protocol field
    ids = [entry["id"]] + [k["id"] for k in entry["children"]]
    assert len(set(ids)) == len(ids)


def test_manifest_precedence_paths_inline_servers_and_plugin_root(tmp_path):
    root = tmp_path / "p"
    write(
        root / ".plugin/plugin.json",
        json.dumps(
            {
                "name": "acme.tools",
                "version": "1.0.0",
                "skills": ["./skills/", "./extra/"],
                "agents": "./custom-agents/",
                "mcpServers": {
                    "mcpServers": {"db": {"command": "${PLUGIN_ROOT}/bin/db", "cwd": "${PLUGIN_ROOT}"}}
                },
            }
        ),
    )
    write(root / ".claude-plugin/plugin.json", json.dumps({"name": "claude-name", "version": "9"}))
    write(root / "skills/a/SKILL.md", skill_md("a", "first"))
    write(root / "extra/b/SKILL.md", skill_md("b", "second"))
    write(root / "agents/ignored.md", "---\ndescription: not scanned\n---\n")
    write(root / "custom-agents/helper.md", "---\ndescription: scanned\n---\nbody\n")
    write(root / "AGENTS.md", "Always be kind.\n")
    res = resolve_plugin(DiskSource(root), "p")
    assert (res.name, res.version) == ("acme.tools", "1.0.0")
    assert any(
        ".claude-plugin/plugin.json was skipped: it differs from .plugin/plugin.json" in w
        for w in res.warnings
    )
    kids = children(res)
    assert {"acme.tools:a", "acme.tools:b", "acme.tools:helper", "acme.tools:db", "acme.tools:AGENTS"} <= set(
        kids
    )
    assert "acme.tools:ignored" not in kids  # a manifest path replaces the default location
    assert kids["acme.tools:AGENTS"]["alwaysApply"] is True
    server = next(c for c in res.children if c.type == "mcpServer")
    assert server.fields["uri"] == (root / ".plugin/plugin.json").as_uri()  # inline: the manifest
    assert server.internal["command"] == f"{root}/bin/db" and server.internal["cwd"] == str(root)


def test_bad_inputs_are_reported_one_sentence_each_while_the_rest_loads(tmp_path):
    root = tmp_path / "p"
    write(root / ".plugin/plugin.json", "{ this is not json")
    write(root / "skills/good/SKILL.md", skill_md("good", "fine"))
    write(root / "skills/broken/SKILL.md", "---\nname: broken\ndescription: [unclosed\n---\nbody\n")
    write(root / "skills/unclosed/SKILL.md", "---\nname: unclosed\n")
    (root / "skills/binary").mkdir()
    (root / "skills/binary/SKILL.md").write_bytes(b"\xff\xfe\x00garbage")
    (root / "skills/dangling").mkdir()
    os.symlink(root / "nowhere.md", root / "skills/dangling/SKILL.md")
    os.symlink(root / "skills/loop-b", root / "skills/loop-a")
    os.symlink(root / "skills/loop-a", root / "skills/loop-b")
    outside = write(tmp_path / "outside/SKILL.md", skill_md("outside", "escaped"))
    os.symlink(outside.parent, root / "skills/escape")
    (root / "skills/huge").mkdir()
    with open(root / "skills/huge/SKILL.md", "wb") as handle:
        handle.truncate(50 * 1024 * 1024)  # a 50 MB file
    write(root / ".mcp.json", json.dumps({"mcpServers": {"nocmd": {"args": []}, "ok": {"command": "x"}}}))
    write(root / "hooks/hooks.json", json.dumps({"hooks": "nope"}))
    res = resolve_plugin(DiskSource(root), "p")
    assert res.error is None
    assert sorted(children(res)) == ["p:good", "p:ok"]  # folder name: the manifest is unusable
    text = "\n".join(res.warnings)
    expectations = {
        ".plugin/plugin.json": "is not valid JSON",
        "skills/broken/SKILL.md": "frontmatter is not valid YAML",
        "skills/unclosed/SKILL.md": "no closing '---' line",
        "skills/binary/SKILL.md": "not UTF-8 text",
        "skills/dangling/SKILL.md": "symlink to something that does not exist",
        "skills/loop-a": "symlink loop",
        "skills/escape": "resolves outside the folder",
        "skills/huge/SKILL.md": "52,428,800 bytes, over the limit of 1,000,000",
        ".mcp.json": 'MCP server "nocmd" has neither a "command" nor a "url"',
        "hooks/hooks.json": 'no "hooks" object',
    }
    for rel, reason in expectations.items():
        assert any(w.startswith(f"{rel} was skipped:") and reason in w for w in res.warnings), (rel, text)
    for warning in res.warnings:  # one sentence each
        assert warning.endswith(".") and warning.count(". ") == 0, warning


def test_an_unreadable_file_is_skipped(tmp_path, monkeypatch):
    root = tmp_path / "p"
    f = write(root / "skills/secret/SKILL.md", skill_md("secret", "x"))
    write(root / "skills/open/SKILL.md", skill_md("open", "y"))
    f.chmod(0)
    if os.geteuid() == 0:  # root reads whatever the mode says: let the OS refuse the way it would
        import builtins

        from ahp_lab.host import plugin_sources

        def refusing_open(path, *args, **kwargs):
            if Path(path) == f:
                raise PermissionError(13, "Permission denied", str(path))
            return builtins.open(path, *args, **kwargs)

        monkeypatch.setattr(plugin_sources, "open", refusing_open, raising=False)
    try:
        res = resolve_plugin(DiskSource(root), "p")
    finally:
        f.chmod(0o644)
    assert sorted(children(res)) == ["p:open"]
    assert res.warnings == ["skills/secret/SKILL.md was skipped: it cannot be read (permission denied)."]


def test_folders_that_cannot_be_read_are_errors_and_missing_directories_are_empty(tmp_path):
    assert (
        resolve_plugin(DiskSource(tmp_path / "missing"), "missing").error
        == "The plugin folder does not exist."
    )
    write(tmp_path / "file", "x")
    assert resolve_plugin(DiskSource(tmp_path / "file"), "file").error == "The plugin path is not a folder."
    os.symlink(tmp_path / "l2", tmp_path / "l1")
    os.symlink(tmp_path / "l1", tmp_path / "l2")
    assert "symlink loop" in resolve_directory(DiskSource(tmp_path / "l1"), "skill", "l1").error
    res = resolve_directory(DiskSource(tmp_path / "not-yet"), "skill", "not-yet")
    assert (res.error, res.children, res.warnings) == (None, [], [])


def test_directory_contents_kinds(tmp_path):
    write(tmp_path / "agents/a.md", "---\nname: planner\ndescription: plans\ntools: [read]\n---\n")
    write(tmp_path / "rules/r.instructions.md", "---\napplyTo: '**/*.ts'\n---\nuse strict\n")
    write(tmp_path / "mcp/servers.json", json.dumps({"mcpServers": {"s": {"url": "http://127.0.0.1:1/mcp"}}}))
    write(tmp_path / "skills/flat.md", "---\ndescription: a flat command skill\n---\n")
    agents = resolve_directory(DiskSource(tmp_path / "agents"), "agent", "agents")
    assert children(agents)["planner"]["tools"] == ["read"]
    rules = resolve_directory(DiskSource(tmp_path / "rules"), "rule", "rules")
    assert children(rules)["r"]["globs"] == ["**/*.ts"]
    servers = resolve_directory(DiskSource(tmp_path / "mcp"), "mcpServer", "mcp")
    assert [c.internal["url"] for c in servers.children] == ["http://127.0.0.1:1/mcp"]
    skills = resolve_directory(DiskSource(tmp_path / "skills"), "skill", "skills")
    assert children(skills)["flat"]["description"] == "a flat command skill"


def test_a_virtual_plugin_in_memory_resolves_like_a_folder():
    src = MemorySource(
        "virtual://ide/tools",
        {
            ".plugin/plugin.json": b'{"name": "ide-tools"}',
            "skills/fmt/SKILL.md": skill_md("fmt", "format code").encode(),
            ".mcp.json": b'{"mcpServers": {"x": {"command": "${PLUGIN_ROOT}/x"}}}',
        },
    )
    res = resolve_plugin(src, "tools")
    kids = children(res)
    assert kids["ide-tools:fmt"]["uri"] == "virtual://ide/tools/skills/fmt/SKILL.md"
    server = next(c for c in res.children if c.type == "mcpServer")
    assert server.internal["command"] == "${PLUGIN_ROOT}/x" and server.internal["pluginRoot"] is None


def test_frontmatter_edge_cases():
    assert split_frontmatter("no frontmatter") == ({}, "no frontmatter")
    assert split_frontmatter("\ufeff---\na: 1\n---\nbody") == ({"a": 1}, "body")
    with pytest.raises(ValueError, match="not a mapping"):
        split_frontmatter("---\n- a\n---\n")


def test_a_folder_of_plugin_folders_expands_to_its_plugins(tmp_path):
    from ahp_lab.host.customizations import expand_plugin_paths

    write(tmp_path / "market/one/skills/a/SKILL.md", skill_md("a", "x"))
    write(tmp_path / "market/two/.plugin/plugin.json", '{"name": "two"}')
    (tmp_path / "market/not-a-plugin").mkdir()
    assert expand_plugin_paths([tmp_path / "market"]) == [tmp_path / "market/one", tmp_path / "market/two"]
    assert expand_plugin_paths([DEMO_PLUGIN.parent]) == [DEMO_PLUGIN]
    assert expand_plugin_paths([DEMO_PLUGIN]) == [DEMO_PLUGIN]
