"""The reducer path stays light: no pydantic, no notebook layer (DESIGN layering, issue 14 §4)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("pydantic", "ipywidgets", "anywidget", "traitlets", "websockets")


def _loaded_after(code: str) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_the_reducers_pulls_in_no_heavy_module():
    assert _loaded_after("import ahp_lab.reducers") == []


def test_the_conformance_runner_and_the_package_root_stay_light():
    assert _loaded_after("import ahp_lab, ahp_lab.conformance, ahp_lab.store") == []


def test_the_public_names_still_import_from_the_package_root():
    assert "pydantic" in _loaded_after("from ahp_lab import Lab, tool, to_json")
