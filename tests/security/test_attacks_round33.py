"""Attacker round 33: a hostile ACP agent races the host's file checks, names folders after its key
and asks for line 2 of an 8 GiB file."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import pytest

from ahp_lab.host.resources import ResourceService
from ahp_lab.protocol.uris import file_uri
from ahp_lab.transport import RpcError

TRIES = 3000  # the host lost each race within some 50-160 tries before it checked what it opened


def _flipping(link: Path, targets: tuple[str, str], stop: threading.Event) -> threading.Thread:
    """A thread that swaps ``link`` between a symlink to each target, as fast as it can."""

    def flip() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            tmp = link.with_name(link.name + ".tmp")
            tmp.unlink(missing_ok=True)
            os.symlink(targets[n % 2], tmp)
            os.replace(tmp, link)

    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    return thread


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="the check of what was opened reads /proc")
def test_a_symlink_swapped_between_the_check_and_the_open_reaches_nothing_outside(tmp_path: Path):
    """The host checked a path, then opened it by name: an agent flipping a symlink in its folder
    between a file inside and one outside had the host read the outside file, write one outside
    through a folder swapped for a link, and wait on a FIFO swapped in (a blocked loop)."""
    inside, outside = tmp_path / "work", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("the secret\n")
    os.mkfifo(inside / "pipe")
    (inside / "mine.txt").write_text("inside\n")
    (inside / "realsub").mkdir()
    files = ResourceService(lambda _c: [inside], lambda _c: [inside])
    stop = threading.Event()
    threads = [
        _flipping(inside / "x.txt", ("mine.txt", str(outside / "secret.txt")), stop),
        _flipping(inside / "y.txt", ("mine.txt", "pipe"), stop),
        _flipping(inside / "sub", ("realsub", str(outside)), stop),
    ]
    read, written = set(), 0
    try:
        for _ in range(TRIES):
            for name in ("x.txt", "y.txt"):
                # refused when it pointed out, was no regular file, or changed while it was opened
                with contextlib.suppress(RpcError):
                    read.add(files._resourceRead(None, {"uri": file_uri(inside / name)})["data"])
            write = {"uri": file_uri(inside / "sub" / "pwned.txt"), "data": "from the agent\n"}
            try:
                files._resourceWrite(None, write)
                written += 1
            except RpcError:
                pass
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert read == {"inside\n"} and not (outside / "pwned.txt").exists()
    assert written and (inside / "realsub" / "pwned.txt").read_text() == "from the agent\n"
