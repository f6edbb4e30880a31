"""Attacker round 23."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

from .conftest import arun, joined, open_lab

SK = "sk-proj-" + "Ab3dE5gH7jK9mN1pQ3sT5vX7zA9cE1g"
ENV = f"OPENAI_API_KEY={SK}\nDATABASE_URL=postgres://admin:pw1234@db/app\n"


def _decoded_blobs(texts: list[str]) -> str:
    """Every base64 run of 16 characters or more in ``texts``, decoded (what a reader of the log
    could get back)."""
    found = re.findall(r"[A-Za-z0-9+/]{16,}={0,2}", "\n".join(texts))
    return "\n".join(base64.b64decode(b + "=" * (-len(b) % 4)).decode("utf-8", "replace") for b in found)


def test_a_file_read_as_base64_keeps_no_secret_in_the_wire_log(connect_stranger, tmp_path: Path):
    """The frame log masked a file's text in ``resourceRead`` answers, but a stranger asking for
    ``"encoding": "base64"`` (or reading a file that is not UTF-8, which falls back to base64) had
    the file kept whole, and the logged frame decoded to the key (attacker round 23). The log keeps
    a note of how many characters were left out; the stranger's answer is unchanged."""
    (tmp_path / ".env").write_text(ENV)
    (tmp_path / "latin1.env").write_bytes(b"caf\xe9\n" + ENV.encode())  # not UTF-8
    (tmp_path / "big.env").write_text(ENV + "x" * 100_000)  # its answer is cut in the log

    async def main():
        async with open_lab(roots=[tmp_path], working_directories=[tmp_path]) as lab:
            s = await joined(connect_stranger, lab, "mallory")
            for name, encoding in ((".env", "base64"), ("latin1.env", "utf-8"), ("big.env", "base64")):
                uri = (tmp_path / name).as_uri()
                answer = (await s.call("resourceRead", {"uri": uri, "encoding": encoding}))["result"]
                assert answer["encoding"] == "base64"
                assert base64.b64decode(answer["data"]) == (tmp_path / name).read_bytes()
            if lab.frames is not None:  # the socket's frames: what the raw wire view shows
                sent = [f for f in lab.frames.frames if f.direction == "out"]
                answers = [f for f in sent if '"encoding":"base64"' in f.text or f.truncated]
                assert len(answers) == 3 and all(f.info()["kind"] == "result" for f in answers)
                assert all(json.loads(f.text) for f in answers[:2])  # still JSON for the wire view
                decoded = _decoded_blobs([f.text for f in sent])
                assert SK not in decoded and "pw1234" not in decoded
                assert "(base64 left out of the log: " in answers[0].text

    arun(main())
