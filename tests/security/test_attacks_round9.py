"""Attacker round 9: a stranger's plugin listing that never ends, a folder listing that held the
host's loop, and an authenticate token kept in the served host's frame log.

Each test fails without its fix (checked when it was written)."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from .conftest import ROOT, Stranger, arun, joined, open_lab, publish
from .test_customization_limits import loaded


class EndlessLister(Stranger):
    """Answers every resourceList with 2,000 folders then 10,000 files (and counts the listings)."""

    listings = 0

    def _answer(self, request: dict) -> None:
        if request.get("method") != "resourceList":
            return super()._answer(request)
        type(self).listings += 1
        entries = [{"name": f"d{n}", "type": "directory"} for n in range(2_000)]
        entries += [{"name": f"f{n}", "type": "file"} for n in range(10_000)]
        self.send({"jsonrpc": "2.0", "id": request["id"], "result": {"entries": entries}})


def test_a_plugin_listing_past_the_entry_bound_stops_the_walk(connect_stranger):
    """Past max_folder_files the host recorded one error per further entry and still fetched
    every folder it had queued: a stranger's answers grew the host by 85 MB/s."""

    async def main():
        async with open_lab() as lab:
            s = await joined(connect_stranger, lab, "lister")
            s.__class__ = EndlessLister
            EndlessLister.listings = 0
            await publish(s, "lister", "p", {"x": "x"})
            entry = await loaded(lab)
            return entry, EndlessLister.listings

    entry, listings = arun(main())
    load = json.dumps(entry["load"])
    assert entry["load"]["kind"] == "degraded" and "the rest, from 'f0', was not looked at" in load
    assert load.count("more than 2,000 entries") == 1
    assert listings == 1  # none of the 2,000 folders queued before the bound was listed


def test_a_large_folder_is_listed_off_the_hosts_loop(tmp_path):
    """resourceList ran os.listdir and a stat per entry on the loop: 100,000 files held every
    connection and every turn for 0.7 s a listing."""
    big = tmp_path / "big"
    big.mkdir()
    for n in range(60_000):
        (big / f"f{n:05}").touch()

    async def main():
        async with open_lab(directories=[{"path": big, "contents": "skill"}]) as lab:
            gaps: list[float] = []
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()

            async def ticker():
                last = loop.time()
                while not stop.is_set():
                    await asyncio.sleep(0.005)
                    now = loop.time()
                    gaps.append(now - last)
                    last = now

            tick = asyncio.ensure_future(ticker())
            started = loop.time()
            answer = await lab.client.request("resourceList", {"uri": big.as_uri()})
            elapsed = loop.time() - started
            stop.set()
            await tick
            return answer, gaps, elapsed

    answer, gaps, elapsed = arun(main())
    assert len(answer["entries"]) == 60_000
    # On the loop, the listing held it for nearly the whole request (0.56 s of some 0.6 s); off
    # it, only the answer's encoding does (some 0.14 s). A share, so that a slower machine agrees.
    assert max(gaps) < 0.6 * elapsed, (max(gaps), elapsed)


def test_an_authenticate_token_is_masked_in_the_served_hosts_frame_log():
    """lab.wire() kept the authenticate frame as it came, token included, and its opened row
    went to the browser and into the saved notebook. A refused token (no server waits for this
    resource) never reaches the redactor at all."""
    token = "tok-3f9a1c7e-very-secret"

    async def main():
        async with open_lab() as lab:
            url = await lab.aserve()
            from ahp_lab.transport import connect_websocket

            s = Stranger(await connect_websocket(url))
            await s.initialize("auth-client")
            params = {"channel": ROOT, "resource": "https://demo.example/mcp", "token": token}
            await s.call("authenticate", params)
            # the same key written with an escape is the same member to the host
            escaped = json.dumps({**params, "token": token}).replace('"token"', '"to\\u006ben"')
            s.send('{"jsonrpc":"2.0","id":77,"method":"authenticate","params":' + escaped + "}")
            await s.response(77)
            # and in a frame the log keeps cut (over 64 KiB), which it cannot parse (round 12)
            for n, key in enumerate(
                ('"to\\u006ben"', '"\\u0074oken"', '"\\u0074\\u006F\\u006B\\u0065\\u006E"')
            ):
                padded = json.dumps({**params, "token": token, "pad": "p" * 70_000}).replace('"token"', key)
                s.send(f'{{"jsonrpc":"2.0","id":{80 + n},"method":"authenticate","params":{padded}}}')
                await s.response(80 + n)
            frames = [f.text for f in lab.frames.frames]
            s.close()
            return frames

    frames = arun(main())
    assert sum('"authenticate"' in f for f in frames) == 5
    assert not any(token in f for f in frames)
    assert any('"token":"***"' in f.replace(" ", "") for f in frames)


@pytest.mark.parametrize("mode", ["append", "truncate"])
def test_a_write_never_reads_more_of_the_file_than_it_keeps(tmp_path, mode):
    """An append read the whole existing file before checking the limit: a 1 GB log in a writable
    folder was read into the kernel, on its loop, for a one-byte append. A truncate (the default
    mode) read it whole too, to keep nothing of it."""
    import tracemalloc

    from ahp_lab.transport import RpcError

    writable = tmp_path / "w"
    writable.mkdir()
    with open(writable / "big.log", "wb") as fh:
        fh.truncate(200 * 1024 * 1024)  # sparse: 200 MB that take no disk

    async def main():
        async with open_lab(directories=[{"path": writable, "contents": "skill", "writable": True}]) as lab:
            uri = (writable / "big.log").as_uri()
            tracemalloc.start()
            try:
                params = {"uri": uri, "data": "x", "encoding": "utf-8", "mode": mode}
                await lab.client.request("resourceWrite", params)
            except RpcError as exc:
                refused = exc.message
            else:
                refused = None
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            return refused, peak

    refused, peak = arun(main())
    if mode == "append":
        assert refused is not None and "would grow past the write limit of 8,388,608 bytes" in refused
    else:
        assert refused is None and (writable / "big.log").read_bytes() == b"x"
    assert peak < 20 * 1024 * 1024, peak


def test_a_file_name_that_is_not_utf8_is_left_out_of_a_listing(tmp_path):
    """os.listdir gives such a name as lone surrogates, which no answer can carry: over a socket
    the answer could not be encoded, and the connection was closed."""
    folder = tmp_path / "names"
    folder.mkdir()
    (folder / "fine.txt").write_text("x")
    with open(os.path.join(os.fsencode(folder), b"bad\xffname"), "w") as fh:
        fh.write("x")

    async def main():
        async with open_lab(directories=[{"path": folder, "contents": "skill"}]) as lab:
            return await lab.client.request("resourceList", {"uri": folder.as_uri()})

    assert arun(main())["entries"] == [{"name": "fine.txt", "type": "file"}]
