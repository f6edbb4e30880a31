"""Requirement 3: resources are sandboxed per session and per connection."""

from __future__ import annotations

import os
from pathlib import Path

from ahp_lab.host.resources import file_uri
from ahp_lab.protocol.jsonrpc import ErrorCode

from .conftest import ROOT, arun, open_lab


def test_a_client_cannot_make_slash_home_or_anything_outside_the_roots_a_working_directory(
    connect_stranger, tmp_path: Path
):
    root = tmp_path / "projects"
    (root / "app").mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (root / "link-out").symlink_to(outside)

    async def main():
        async with open_lab(roots=[root]) as lab:
            s = await connect_stranger(lab)
            await s.initialize()
            refused = [
                "file:///",
                "file://" + os.path.expanduser("~"),
                file_uri(tmp_path),  # above the root
                file_uri(outside),  # beside it
                "file:///etc",
                file_uri(root) + "/app/../../elsewhere",
                file_uri(root) + "/app/%2e%2e/%2E%2E/elsewhere",
                file_uri(root / "link-out"),  # a symlink pointing out
                file_uri(root) + "/app%00",
                "https://example.com/repo",
                "app",
            ]
            for n, uri in enumerate(refused):
                channel = f"ahp-session:/wd-{n}"
                answer = await s.call("createSession", {"channel": channel, "workingDirectories": [uri]})
                assert answer["error"]["code"] == ErrorCode.INVALID_PARAMS, uri
                assert "workingDirectories[0]" in answer["error"]["message"], answer
                assert channel not in lab.host.sessions
            ok = await s.call(
                "createSession",
                {"channel": "ahp-session:/fine", "workingDirectories": [file_uri(root / "app")]},
            )
            assert ok["result"] is None

    arun(main())


def test_working_directories_are_read_roots_only_for_that_sessions_subscribers(
    connect_stranger, tmp_path: Path
):
    root = tmp_path / "projects"
    app = root / "app"
    app.mkdir(parents=True)
    (app / "notes.txt").write_text("the app's notes", encoding="utf-8")

    async def main():
        async with open_lab(roots=[root]) as lab:
            owner = await connect_stranger(lab, "owner")
            await owner.initialize("owner")
            session = "ahp-session:/with-dir"
            await owner.call("createSession", {"channel": session, "workingDirectories": [file_uri(app)]})
            await owner.call("subscribe", {"channel": session})
            read = {"channel": ROOT, "uri": file_uri(app / "notes.txt")}
            assert (await owner.call("resourceRead", read))["result"]["data"] == "the app's notes"
            # another connection, not subscribed to that session: refused
            other = await connect_stranger(lab, "other")
            await other.initialize("other")
            denied = await other.call("resourceRead", read)
            assert denied["error"]["code"] == ErrorCode.PERMISSION_DENIED
            assert "not inside any" in denied["error"]["message"]
            listing = await other.call("resourceList", {"channel": ROOT, "uri": file_uri(app)})
            assert listing["error"]["code"] == ErrorCode.PERMISSION_DENIED
            # a name longer than the file system takes is the client's bad input, said shortly
            long_name = await owner.call(
                "resourceRead", {"channel": ROOT, "uri": file_uri(app / ("a" * 5000))}
            )
            assert long_name["error"]["code"] == ErrorCode.INVALID_PARAMS, long_name
            assert "too long for the file system" in long_name["error"]["message"]
            assert len(long_name["error"]["message"]) < 400
            # outside every root, nobody reads, subscribed or not
            for who in (owner, other):
                for uri in ("file:///etc/passwd", file_uri(app) + "/../../../../etc/passwd", "file:///usr"):
                    answer = await who.call("resourceRead", {"channel": ROOT, "uri": uri})
                    assert answer["error"]["code"] in (
                        ErrorCode.PERMISSION_DENIED,
                        ErrorCode.INVALID_PARAMS,
                    ), uri

    arun(main())


def test_session_working_directory_set_goes_through_the_same_check(connect_stranger, tmp_path: Path):
    from ahp_lab.agents.scripted import ScriptedAgent

    class MultiDirAgent(ScriptedAgent):
        def info(self):
            info = dict(super().info())
            info["capabilities"] = {**(info.get("capabilities") or {}), "multipleWorkingDirectories": {}}
            return info

    root = tmp_path / "projects"
    (root / "a").mkdir(parents=True)

    async def main():
        async with open_lab(roots=[root], agent=MultiDirAgent()) as lab:
            s = await connect_stranger(lab)
            await s.initialize()
            await s.call("subscribe", {"channel": lab.session})
            for seq, uri in enumerate(("file:///", file_uri(tmp_path), "file:///etc"), start=1):
                s.dispatch(lab.session, seq, {"type": "session/workingDirectorySet", "directory": uri})
                echo = await s.echo(seq)
                assert echo["rejectionReason"].startswith("session/workingDirectorySet: "), echo
            s.dispatch(
                lab.session, 9, {"type": "session/workingDirectorySet", "directory": file_uri(root / "a")}
            )
            assert "rejectionReason" not in await s.echo(9)
            assert lab.session_state["workingDirectories"] == [file_uri(root / "a")]

    arun(main())
