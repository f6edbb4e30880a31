"""``Lab(plugins=...)`` and its other list-of-folders arguments given one folder instead of a list.

Before, the string was read as a list of characters: ``Lab(plugins="examples/plugins/ahp-lab-demo")``
made 29 plugin entries named ``e``, ``x``, ``a``, ... (27 "The plugin folder does not exist." in the
tree, and as many warnings). One path (or one directory's mapping) is now a list of one; what is
not a folder nor a list of them is refused in one sentence.
"""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path

import pytest

from ahp_lab import Lab

DEMO = Path(__file__).resolve().parents[2] / "examples" / "plugins" / "ahp-lab-demo"


def _tops(lab):
    return [(c["type"], c["name"], c["load"]["kind"]) for c in lab.session_state["customizations"]]


def test_one_plugin_folder_as_a_string_is_one_plugin(tmp_path):
    async def main():
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a folder that exists: no warning at all
            lab = await Lab.open(
                plugins=str(DEMO),
                directories={"path": str(tmp_path), "contents": "skill"},
                working_directories=tmp_path,
            )
        await lab.client.wait_for(
            lab.session,
            lambda s: (
                all((c.get("load") or {}).get("kind") != "loading" for c in s.get("customizations") or ())
                or None
            ),
        )
        assert _tops(lab) == [("plugin", "ahp-lab-demo", "loaded"), ("directory", tmp_path.name, "loaded")]
        assert lab.session_state["workingDirectories"] == [tmp_path.resolve().as_uri()]
        await lab.aclose()

    asyncio.run(main())


def test_what_is_not_a_folder_is_refused_in_one_sentence():
    with pytest.raises(
        TypeError, match=r"^Lab\(plugins=\.\.\.\) takes a folder or a list of folders, not int$"
    ):
        Lab(plugins=3)
    with pytest.raises(
        TypeError, match=r"^Lab\(roots=\.\.\.\) takes a folder or a list of folders, not bytes$"
    ):
        Lab(roots=b"/tmp")
