"""Attacker round 34: a stranger's frame nested 20,000 levels deep, on a real socket."""

from __future__ import annotations

import asyncio

from ahp_lab.widgets.wire import wire_view_model

from .conftest import arun, open_lab


def test_a_frame_nested_past_pythons_stack_leaves_the_wire_view_and_its_filters_working():
    """The host refused the frame, but its wire log had recorded it: ``lab.frames.where`` raised
    ``RecursionError`` into the notebook's cell, and the wire view showed "wire view failed" and
    no row (with a filter, until the frame left the log). The frame is an invalid one, shown as
    its text."""
    from ahp_lab.transport import connect_websocket

    async def go() -> None:
        async with open_lab() as lab:
            transport = await connect_websocket(await lab.aserve())
            answers: list[str] = []
            got = asyncio.Event()
            transport.set_receiver(lambda text: (answers.append(text), got.set()), lambda: None)
            transport.send("[" * 20_000 + "]" * 20_000)
            transport.send('{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {}}')
            await asyncio.wait_for(got.wait(), 10)
            while not any('"id": 1' in a or '"id":1' in a for a in answers):
                got.clear()
                await asyncio.wait_for(got.wait(), 10)
            deep = next(f for f in lab.frames.frames if f.direction == "in" and f.text.startswith("[["))
            assert deep.info()["kind"] == "invalid"
            assert [f.info()["method"] for f in lab.frames.where("in", "ping")] == ["ping"]
            view = wire_view_model(lab.frames.frames, selected=deep.n)
            assert view["rows"] and view["detail"]["json"]["text"].startswith("[[[")
            filtered = wire_view_model(lab.frames.frames, text="invalid", selected=deep.n)
            assert [r["n"] for r in filtered["rows"]] == [deep.n]
            transport.close()

    arun(go())


def _slow_skill(name: str) -> str:
    """A skill whose 64 KB of frontmatter (2,000 small YAML mappings) takes some 0.3 s to read."""
    body = "".join(f"  k{i}: {{a: 1, b: [1, 2], c: x}}\n" for i in range(2000))
    return f"---\nname: {name}\ndescription: d\nmetadata:\n{body}---\nbody\n"


def test_a_strangers_plugins_leave_the_notebooks_sync_tools_their_threads(connect_stranger):
    """A stranger's plugins were resolved in the default executor, where the notebook's sync tools
    run: 16 plugins of slow skills held it 158 s (a sync tool waited as long), 378 s of CPU of which
    79 s were charged to the stranger. They are resolved one at a time on a worker of their own."""
    from .conftest import joined

    async def main():
        async with open_lab() as lab:
            s = await joined(connect_stranger, lab, "burner")
            plugins = []
            for k in range(8):  # more than the default executor's workers on a small machine
                root = f"virtual://burner/p{k}"
                s.files.update({f"{root}/skills/s{j}/SKILL.md": _slow_skill(f"s{j}") for j in range(4)})
                plugins.append(
                    {
                        "type": "plugin",
                        "id": f"p{k}",
                        "uri": root,
                        "name": f"p{k}",
                        "enabled": True,
                        "nonce": "1",
                    }
                )
            active = {"clientId": "burner", "tools": [], "customizations": plugins}
            s.dispatch(lab.session, 1, {"type": "session/activeClientSet", "activeClient": active})
            assert "rejectionReason" not in await s.echo(1)
            await s.wait(lambda: sum(m.get("method") == "resourceRead" for m in s.received) >= 32, 60)
            # every plugin is read: their resolutions are under way, some 1.5 s each
            await asyncio.wait_for(asyncio.to_thread(int), 0.5)  # a sync tool's thread is free

            def loaded(state):
                entries = [e for e in state.get("customizations") or () if e.get("name", "").startswith("p")]
                done = [e for e in entries if (e.get("load") or {}).get("kind") == "loaded"]
                return entries if len(entries) == 8 and len(done) == 8 else None

            assert all(len(e["children"]) == 4 for e in await lab.wait_for(lab.session, loaded, timeout=120))
            s.close()

    arun(main())


def test_a_strangers_long_parameter_names_are_not_kept_and_odd_letters_still_name_a_secret(connect_stranger):
    """The redactor's cache of parameter names kept names of any length: titles of ``?token<256 KB>=v``
    held 500 MiB for good (review 58). And the quick look for a secret's name missed the long s
    ("paſsword=…"), which the patterns read as an s."""
    from ahp_lab.host import redaction

    from .conftest import joined

    async def main():
        async with open_lab() as lab:
            s = await joined(connect_stranger, lab, "namer")
            for seq in range(1, 21):
                title = (
                    f"see ?token{'x' * 100_000}{seq}=v&q=1 paſsword=hunter2hunter2 client_ſecret=zz9zz9zz9"
                )
                s.dispatch(lab.session, seq, {"type": "session/titleChanged", "title": title})
                assert "rejectionReason" not in await s.echo(seq)
            kept = lab.session_state["title"]
            assert "hunter2" not in kept and "zz9zz9" not in kept and kept.endswith("=***")
            assert sum(map(len, redaction._QUERY_NAMES)) < 100_000
            s.close()

    arun(main())
