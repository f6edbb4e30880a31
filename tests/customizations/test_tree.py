"""The customization tree through the real stack: watched directories, writes through the protocol,
client-published plugins, toggles and effective enablement, and the resource permission policy."""

from __future__ import annotations

import asyncio
import base64
import os
import shutil

import pytest

from ahp_lab import Lab
from ahp_lab.host.resources import ResourceService
from ahp_lab.protocol.customizations import effective_enabled
from ahp_lab.protocol.limits import Limits
from ahp_lab.transport import RpcError
from ahp_lab.widgets.tree import effective_customizations

from .conftest import (
    arun,
    assert_protocol_entry,
    entries,
    find,
    skill_md,
    wait_loaded,
    wait_state,
    write,
)


def skills_of(state, cid: str) -> dict[str, dict]:
    entry = find(state, cid) or {}
    return {c["name"]: c for c in entry.get("children") or () if c.get("type") == "skill"}


def test_the_tree_loads_loading_then_loaded_with_ids_unique(tmp_path, demo_plugin):
    async def main():
        lab = await Lab.open(
            plugins=[demo_plugin], directories=[{"path": tmp_path / "missing", "contents": "agent"}]
        )
        try:
            top = await wait_loaded(lab)
            plugin, directory = top[0], top[1]
            assert (plugin["type"], plugin["load"], plugin["version"]) == (
                "plugin",
                {"kind": "loaded"},
                "0.2.0",
            )
            assert (directory["type"], directory["load"], directory["children"]) == (
                "directory",
                {"kind": "loaded"},
                [],
            )
            assert directory["contents"] == "agent" and directory["writable"] is False
            updates = [
                t.action["customization"]
                for t in lab.transitions
                if t.type == "session/customizationUpdated"
                and t.action["customization"]["id"] == plugin["id"]
            ]
            assert updates[0]["load"] == {"kind": "loading"} and "children" not in updates[0]
            assert updates[1]["load"] == {"kind": "loaded"} and updates[1]["children"]
            ids = [e["id"] for e in top] + [c["id"] for e in top for c in e.get("children") or ()]
            assert len(ids) == len(set(ids))
            assert all(e["uri"].startswith("file://") for e in top)
            for entry in top:
                assert_protocol_entry(entry)
        finally:
            await lab.aclose()

    arun(main())


def test_a_skill_added_to_a_watched_directory_appears_and_removed_disappears(tmp_path):
    skills = tmp_path / "skills"  # does not exist yet

    async def main():
        lab = await Lab.open(directories=[{"path": skills, "contents": "skill"}])
        try:
            [directory] = await wait_loaded(lab)
            assert directory["children"] == []
            write(skills / "triage" / "SKILL.md", skill_md("triage", "Sort incoming issues."))
            child = await wait_state(lab, lambda s: skills_of(s, directory["id"]).get("triage"), timeout=3)
            assert child["description"] == "Sort incoming issues."
            write(skills / "triage" / "SKILL.md", skill_md("triage", "Sort issues by severity."))
            await wait_state(
                lab,
                lambda s: (
                    (skills_of(s, directory["id"]).get("triage") or {}).get("description")
                    == "Sort issues by severity."
                    or None
                ),
                timeout=3,
            )
            assert skills_of(lab.session_state, directory["id"])["triage"]["id"] == child["id"]  # stable id
            shutil.rmtree(skills / "triage")
            await wait_state(lab, lambda s: "triage" not in skills_of(s, directory["id"]) or None, timeout=3)
        finally:
            await lab.aclose()

    arun(main())


def test_write_skill_goes_through_the_protocol_and_the_skill_appears(tmp_path):
    async def main():
        lab = await Lab.open(directories=[{"path": tmp_path / "mine", "contents": "skill", "writable": True}])
        try:
            await wait_loaded(lab)
            service = next(e for e in lab.host.extensions if isinstance(e, ResourceService))
            seen = []
            original = service.handle_request

            def spy(connection, method, params):
                seen.append((connection.client_id, method))
                return original(connection, method, params)

            service.handle_request = spy
            child = await lab.awrite_skill(
                "deploy-check", "Check a deploy: it says: yes", "1. Look at the dashboard."
            )
            assert (child["type"], child["name"]) == ("skill", "deploy-check")
            text = (tmp_path / "mine/deploy-check/SKILL.md").read_text()
            assert text.startswith("---\n") and "1. Look at the dashboard." in text
            assert seen == [("notebook", "resourceMkdir"), ("notebook", "resourceWrite")]  # via the protocol
            assert child["description"] == "Check a deploy: it says: yes"
        finally:
            await lab.aclose()

    arun(main())


def test_toggles_and_effective_enablement_are_computed_in_one_place(demo_plugin):
    async def main():
        lab = await Lab.open(plugins=[demo_plugin])
        try:
            [plugin] = await wait_loaded(lab)
            skill = next(c for c in plugin["children"] if c["type"] == "skill")
            await lab.adispatch({"type": "session/customizationToggled", "id": skill["id"], "enabled": False})
            eff = effective_enabled(lab.session_state["customizations"])
            assert eff[plugin["id"]] is True and eff[skill["id"]] is False
            await lab.adispatch(
                {"type": "session/customizationToggled", "id": plugin["id"], "enabled": False}
            )
            eff = effective_enabled(lab.session_state["customizations"])
            assert not any(eff[c["id"]] for c in plugin["children"])  # a disabled container disables all
            records = effective_customizations(lab.session_state["customizations"])  # the views agree
            assert all(not kid["effective"] for kid in records[0]["children"])
            # a re-parse keeps the toggles: the container is re-sent whole with the flags carried over
            lab.customizations.refresh(lab.session)
            entry = find(lab.session_state, plugin["id"])
            assert entry["enabled"] is False and find(lab.session_state, skill["id"])["enabled"] is False
        finally:
            await lab.aclose()

    arun(main())


def test_client_plugins_nonce_skip_and_removal_when_the_client_leaves(tmp_path):
    async def main():
        lab = await Lab.open()
        try:
            ide = await lab.add_client("ide", "An IDE")
            root = "virtual://ide/plugins/snippets"
            ide.resources.update(
                {
                    f"{root}/.plugin/plugin.json": '{"name": "snippets", "version": "3.1.0"}',
                    f"{root}/skills/expand/SKILL.md": skill_md("expand", "Expand a snippet."),
                    f"{root}/agents/helper.md": "---\ndescription: helps\n---\nbody\n",
                }
            )
            served = []
            original = ide._request

            def counting(method, params):
                served.append(method)
                return original(method, params)

            ide.peer.on_request = counting
            plugin = {
                "type": "plugin",
                "id": "p1",
                "uri": root,
                "name": "snippets",
                "enabled": True,
                "nonce": "n1",
            }
            ide.published_customizations = [plugin]
            ide.publish(lab.session)

            def published(s):
                e = next((e for e in entries(s) if e.get("clientId") == "ide"), None)
                return e if e and (e.get("load") or {}).get("kind") == "loaded" else None

            entry = await wait_state(lab, published)
            assert entry["name"] == "snippets" and entry["version"] == "3.1.0" and entry["id"] != "p1"
            assert sorted(c["name"] for c in entry["children"]) == ["snippets:expand", "snippets:helper"]
            assert entry["children"][0]["uri"].startswith(root)
            assert "resourceRead" in served
            # same nonce: the host does not fetch or parse again
            served.clear()
            fetches = lab.customizations.stats["client_fetches"]
            ide.publish(lab.session)
            await lab.adispatch({"type": "session/titleChanged", "title": "sync point"})
            assert served == [] and lab.customizations.stats["client_fetches"] == fetches
            # a new nonce re-parses
            ide.resources[f"{root}/skills/more/SKILL.md"] = skill_md("more", "More.")
            ide.published_customizations = [{**plugin, "nonce": "n2"}]
            ide.publish(lab.session)
            await wait_state(
                lab,
                lambda s: (
                    any(c["name"] == "snippets:more" for c in (published(s) or {}).get("children", []))
                    or None
                ),
            )
            # the client leaves: its plugins go with it
            lab.remove_client("ide")
            await wait_state(lab, lambda s: not any(e.get("clientId") == "ide" for e in entries(s)) or None)
        finally:
            await lab.aclose()

    arun(main())


def test_a_virtual_plugin_the_client_cannot_serve_is_an_error_not_a_crash():
    async def main():
        lab = await Lab.open()
        try:
            ide = await lab.add_client("ide2")

            def refuse(method, params):
                raise RpcError(-32008, f"{params.get('uri')} does not exist")

            ide.peer.on_request = refuse
            ide.published_customizations = [
                {
                    "type": "plugin",
                    "id": "x",
                    "uri": "virtual://ide2/none",
                    "name": "none",
                    "enabled": True,
                    "nonce": "1",
                }
            ]
            ide.publish(lab.session)
            entry = await wait_state(
                lab,
                lambda s: next(
                    (e for e in entries(s) if e.get("clientId") == "ide2" and e["load"]["kind"] == "error"),
                    None,
                ),
            )
            assert entry["load"]["message"].startswith("The client's plugin could not be read:")
            assert entry["children"] == []
        finally:
            await lab.aclose()

    arun(main())


def test_resource_writes_that_escape_are_all_refused(tmp_path, demo_plugin):
    writable = tmp_path / "w"
    writable.mkdir()
    (tmp_path / "secret.txt").write_text("keep out")
    os.symlink(tmp_path, writable / "link-out")
    os.symlink(tmp_path / "secret.txt", writable / "file-link-out")
    readonly = tmp_path / "ro"

    async def main():
        lab = await Lab.open(
            plugins=[demo_plugin],
            directories=[
                {"path": writable, "contents": "skill", "writable": True},
                {"path": readonly, "contents": "skill"},
            ],
        )
        try:
            await wait_loaded(lab)
            base = writable.as_uri()
            escapes = [
                f"{base}/../secret.txt",
                f"{base}/sub/../../secret.txt",
                f"{base}/%2E%2E/secret.txt",
                (tmp_path / "secret.txt").as_uri(),
                "file:///etc/passwd",
                f"{base}/link-out/secret.txt",
                f"{base}/file-link-out",
                f"{base}/link-out/new.txt",
                (readonly / "x.md").as_uri(),  # readable root, but not writable
                (demo_plugin / "skills/x.md").as_uri(),  # plugin folders are read-only
            ]
            for uri in escapes:
                for method, params in (
                    ("resourceWrite", {"uri": uri, "data": "pwned", "encoding": "utf-8"}),
                    ("resourceMkdir", {"uri": uri}),
                ):
                    with pytest.raises(RpcError) as err:
                        await lab.client.request(method, params)
                    assert err.value.code == -32009, (method, uri, err.value)
                    assert err.value.message.count(". ") == 0 and "refused" in err.value.message
                    assert err.value.data == {"request": {"uri": uri, "write": True}}
            assert (tmp_path / "secret.txt").read_text() == "keep out"
            with pytest.raises(RpcError) as err:
                await lab.client.request("resourceRead", {"uri": f"{base}/link-out/secret.txt"})
            assert err.value.code == -32009
            with pytest.raises(RpcError) as err:
                await lab.client.request(
                    "resourceWrite", {"uri": "http://example.com/x", "data": "", "encoding": "utf-8"}
                )
            assert err.value.code == -32602
        finally:
            await lab.aclose()

    arun(main())


def test_resource_commands_inside_a_writable_directory(tmp_path, demo_plugin):
    writable = tmp_path / "w"

    async def main():
        lab = await Lab.open(
            plugins=[demo_plugin], directories=[{"path": writable, "contents": "skill", "writable": True}]
        )
        try:
            await wait_loaded(lab)
            req = lab.client.request
            uri = (writable / "notes" / "a.txt").as_uri()
            with pytest.raises(RpcError) as err:
                await req("resourceWrite", {"uri": uri, "data": "x", "encoding": "utf-8"})
            assert err.value.code == -32008  # the folder does not exist yet
            await req("resourceMkdir", {"uri": (writable / "notes").as_uri()})
            await req("resourceMkdir", {"uri": (writable / "notes").as_uri()})  # existing: success
            await req(
                "resourceWrite", {"uri": uri, "data": "hello world", "encoding": "utf-8", "createOnly": True}
            )
            with pytest.raises(RpcError) as err:
                await req(
                    "resourceWrite", {"uri": uri, "data": "again", "encoding": "utf-8", "createOnly": True}
                )
            assert err.value.code == -32010
            await req("resourceWrite", {"uri": uri, "data": "!", "encoding": "utf-8", "mode": "append"})
            await req(
                "resourceWrite",
                {"uri": uri, "data": ",", "encoding": "utf-8", "mode": "insert", "position": 5},
            )
            await req(
                "resourceWrite",
                {"uri": uri, "data": "X", "encoding": "utf-8", "mode": "append", "position": 1},
            )
            assert (writable / "notes/a.txt").read_text() == "hello, worldX!"
            meta = await req("resourceResolve", {"uri": uri})
            assert (meta["type"], meta["size"]) == ("file", 14)
            with pytest.raises(RpcError) as err:
                await req(
                    "resourceWrite", {"uri": uri, "data": "y", "encoding": "utf-8", "ifMatch": '"stale"'}
                )
            assert err.value.code == -32011
            await req(
                "resourceWrite", {"uri": uri, "data": "hi", "encoding": "utf-8", "ifMatch": meta["etag"]}
            )
            await req("resourceWrite", {"uri": uri, "data": "HI", "encoding": "utf-8", "position": 1})
            assert (writable / "notes/a.txt").read_text() == "hHI"
            data = base64.b64encode(b"\xff\x00").decode()
            await req("resourceWrite", {"uri": uri, "data": data, "encoding": "base64"})
            got = await req("resourceRead", {"uri": uri})
            assert (got["encoding"], base64.b64decode(got["data"])) == ("base64", b"\xff\x00")
            listing = await req("resourceList", {"uri": writable.as_uri()})
            assert listing["entries"] == [{"name": "notes", "type": "directory"}]
            skill = await req(
                "resourceRead", {"uri": (demo_plugin / "skills/summarize-diff/SKILL.md").as_uri()}
            )
            assert skill["encoding"] == "utf-8" and skill["contentType"] == "text/markdown"
            await req("resourceDelete", {"uri": (writable / "notes").as_uri(), "recursive": True})
            assert not (writable / "notes").exists()
        finally:
            await lab.aclose()

    arun(main())


def test_resource_copy_and_move_inside_a_writable_directory(tmp_path):
    """``resourceCopy`` and ``resourceMove`` (overview §3.1) answered "not supported" (spec client
    round 8). They copy or move within the writable folders, replace what is there unless
    ``failIfExists``, copy links as links (one pointing out stays refused), and never move a root
    nor copy past the write limit."""
    writable = tmp_path / "w"
    (tmp_path / "secret.txt").write_text("keep out")

    async def main():
        lab = await Lab.open(
            directories=[{"path": writable, "contents": "skill", "writable": True}],
            limits=Limits(max_write_bytes=1000),
        )
        try:
            req = lab.client.request
            await req("resourceMkdir", {"uri": (writable / "a").as_uri()})
            await req(
                "resourceWrite", {"uri": (writable / "a/x.txt").as_uri(), "data": "hi", "encoding": "utf-8"}
            )
            (writable / "a/out").symlink_to(tmp_path / "secret.txt")
            await req(
                "resourceCopy",
                {"source": (writable / "a").as_uri(), "destination": (writable / "b").as_uri()},
            )
            assert (writable / "b/x.txt").read_text() == "hi" and (writable / "b/out").is_symlink()
            with pytest.raises(RpcError) as err:
                await req("resourceRead", {"uri": (writable / "b/out").as_uri()})
            assert err.value.code == -32009
            with pytest.raises(RpcError) as err:
                params = {"source": (writable / "a").as_uri(), "destination": (writable / "b").as_uri()}
                await req("resourceCopy", {**params, "failIfExists": True})
            assert err.value.code == -32010
            await req(
                "resourceMove",
                {"source": (writable / "b/x.txt").as_uri(), "destination": (writable / "a/y.txt").as_uri()},
            )
            assert (writable / "a/y.txt").read_text() == "hi" and not (writable / "b/x.txt").exists()
            refused = [
                ({"source": writable.as_uri(), "destination": (writable / "c").as_uri()}, -32009),  # a root
                ({"source": (writable / "a").as_uri(), "destination": (writable / "a/in").as_uri()}, -32602),
                (
                    {"source": (writable / "a/y.txt").as_uri(), "destination": (tmp_path / "o.txt").as_uri()},
                    -32009,
                ),
                ({"source": (writable / "nope").as_uri(), "destination": (writable / "c").as_uri()}, -32008),
            ]
            for params, code in refused:
                with pytest.raises(RpcError) as err:
                    await req("resourceMove", params)
                assert err.value.code == code, (params, err.value)
            (writable / "big.bin").write_bytes(b"x" * 2000)
            with pytest.raises(RpcError) as err:
                await req(
                    "resourceCopy",
                    {"source": (writable / "big.bin").as_uri(), "destination": (writable / "c").as_uri()},
                )
            assert err.value.code == -32602 and "write limit" in str(err.value)
            assert not (writable / "c").exists()
        finally:
            await lab.aclose()

    arun(main())


def test_a_copy_or_move_that_fails_or_races_loses_nothing_and_writes_nothing_outside(tmp_path):
    """A verification round's attacks on resourceCopy/resourceMove: a copy racing a move that put a
    link where a folder of its destination was wrote 9,000 files outside the writable folder and
    deleted one there; a copy of a folder holding a pipe, over an existing folder, deleted it first;
    a folder holding a nested root was moved or wiped, and so was one deleted recursively."""
    writable, outside = tmp_path / "w", tmp_path / "outside"
    (writable / "x" / "p").mkdir(parents=True)
    (outside / "victim").mkdir(parents=True)
    (outside / "victim" / "precious.txt").write_text("keep")
    (writable / "holder").mkdir()
    (writable / "holder" / "p").symlink_to(outside)
    (writable / "big").mkdir()
    for i in range(300):
        (writable / "big" / f"f{i}").write_text("x")
    (writable / "target").mkdir()
    (writable / "target" / "old.txt").write_text("old")
    (writable / "piped").mkdir()
    (writable / "piped" / "a.txt").write_text("a")
    os.mkfifo(writable / "piped" / "fifo")
    (writable / "sub" / "nested").mkdir(parents=True)
    (writable / "ro").mkdir()
    (writable / "ro" / "SKILL.md").write_text("a plugin's own file")

    async def main():
        lab = await Lab.open(
            directories=[
                {"path": writable, "contents": "skill", "writable": True},
                {"path": writable / "sub" / "nested", "contents": "skill", "writable": True},
                {"path": writable / "ro", "contents": "skill"},
            ]
        )
        try:
            req = lab.client.request
            copy = asyncio.ensure_future(
                req(
                    "resourceCopy",
                    {
                        "source": (writable / "big").as_uri(),
                        "destination": (writable / "x/p/victim").as_uri(),
                    },
                )
            )
            move = asyncio.ensure_future(
                req(
                    "resourceMove",
                    {"source": (writable / "holder").as_uri(), "destination": (writable / "x").as_uri()},
                )
            )
            await asyncio.gather(copy, move, return_exceptions=True)
            assert os.listdir(outside / "victim") == ["precious.txt"]
            with pytest.raises(RpcError) as err:
                await req(
                    "resourceCopy",
                    {"source": (writable / "piped").as_uri(), "destination": (writable / "target").as_uri()},
                )
            assert err.value.code == -32602 and "nothing was" in str(err.value)
            assert os.listdir(writable / "target") == ["old.txt"]
            for method, params in [
                (
                    "resourceMove",
                    {"source": (writable / "sub").as_uri(), "destination": (writable / "sub2").as_uri()},
                ),
                (
                    "resourceCopy",
                    {"source": (writable / "target").as_uri(), "destination": (writable / "sub").as_uri()},
                ),
                ("resourceDelete", {"uri": (writable / "sub").as_uri(), "recursive": True}),
                ("resourceDelete", {"uri": (writable / "sub" / "nested").as_uri(), "recursive": True}),
                ("resourceDelete", {"uri": (writable / "ro").as_uri(), "recursive": True}),
            ]:
                with pytest.raises(RpcError) as err:
                    await req(method, params)
                assert err.value.code == -32009
            assert (writable / "sub" / "nested").is_dir() and (writable / "ro" / "SKILL.md").is_file()
            assert not [n for n in os.listdir(writable) if n.startswith(".ahp-transfer-")]
        finally:
            await lab.aclose()

    arun(main())


def test_resolving_a_link_that_points_out_without_following_it_says_symlink(tmp_path):
    """``resourceResolve`` with ``followSymlinks: false`` reads the entry itself (overview §3.1:
    ``type: "symlink"``): a link in a writable folder pointing outside was refused (-32009), as
    if its target were read (spec client round 9). Followed, it still is."""
    writable = tmp_path / "w"
    writable.mkdir()
    (tmp_path / "secret.txt").write_text("keep out")
    (writable / "out").symlink_to(tmp_path / "secret.txt")

    async def main():
        lab = await Lab.open(directories=[{"path": writable, "contents": "skill", "writable": True}])
        try:
            req = lab.client.request
            link = (writable / "out").as_uri()
            resolved = await req("resourceResolve", {"uri": link, "followSymlinks": False})
            assert resolved["type"] == "symlink" and resolved["uri"] == link and "size" not in resolved
            with pytest.raises(RpcError) as err:
                await req("resourceResolve", {"uri": link})
            assert err.value.code == -32009
            with pytest.raises(RpcError) as err:  # a link's folder outside the roots stays refused
                await req(
                    "resourceResolve", {"uri": (tmp_path / "secret.txt").as_uri(), "followSymlinks": False}
                )
            assert err.value.code == -32009
        finally:
            await lab.aclose()

    arun(main())
