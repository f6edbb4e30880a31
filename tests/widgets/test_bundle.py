"""The committed front-end bundle (``ahp_lab/widgets/static/``) is what ``js/src`` builds to.

The bundle is committed so that pip users need no npm; this test rebuilds it into a temporary
folder with the same esbuild configuration (``node js/build.mjs --outdir DIR``) and compares the
bytes. A difference means someone edited ``js/src`` without running ``npm run build`` in ``js/``
(or edited the bundle by hand).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
JS = REPO / "js"
STATIC = REPO / "ahp_lab" / "widgets" / "static"
SETUP_HINT = "run `bash scripts/test.sh` (it installs node/npm and runs `npm ci` in js/)"


def _fail(message: str) -> None:
    pytest.fail(message, pytrace=False)


def test_committed_bundle_matches_js_src(tmp_path):
    node = shutil.which("node")
    if node is None:
        _fail(f"node is not installed, so the bundle cannot be checked: {SETUP_HINT}")
    if not (JS / "node_modules" / "esbuild").is_dir():
        _fail(f"js/node_modules is missing (esbuild, marked, dompurify): {SETUP_HINT}")
    out = tmp_path / "static"
    proc = subprocess.run(
        [node, "build.mjs", "--outdir", str(out)],
        cwd=JS,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0:
        _fail(f"`node build.mjs` failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}\n{SETUP_HINT}")
    built = sorted(p.name for p in out.iterdir())
    committed = sorted(p.name for p in STATIC.iterdir() if p.is_file())
    assert built == committed, f"the build writes {built}, the package holds {committed}"
    stale = [name for name in built if (out / name).read_bytes() != (STATIC / name).read_bytes()]
    assert not stale, (
        f"ahp_lab/widgets/static/{{{','.join(stale)}}} do not match js/src: "
        "run `npm run build` in js/ and commit the result"
    )
