"""Run the committed notebooks in a fresh kernel and save them the way JupyterLab would.

A committed notebook must survive a reader's open → Run All → save without changes beyond what
``notebooks/nbval-sanitize.cfg`` masks (ids, times, widget model ids). This script produces that
form, and ``tests/test_notebooks_stable.py`` checks it::

    python scripts/normalize_notebooks.py                     # every notebook in notebooks/
    python scripts/normalize_notebooks.py notebooks/03-*.ipynb
    python scripts/normalize_notebooks.py --check             # exit 1 if a notebook would change

What "normalized" means (see ``normalize``): no timing metadata in cells (JupyterLab drops it), no
saved widget state, consecutive stream outputs of the same name merged (JupyterLab merges them),
every cell with an ``id``, written by ``nbformat`` (JupyterLab's server writes the same bytes).
Outputs are exactly what a run in a fresh kernel prints. Each notebook runs with its own folder as
the working directory and ``AHP_LAB_UNATTENDED=1`` (nobody is there to click; see
``notebooks/README.md``).
"""

from __future__ import annotations

import argparse
import configparser
import copy
import difflib
import json
import os
import re
import sys
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import nbformat

REPO_ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO_ROOT / "notebooks"
SANITIZE_FILE = NOTEBOOKS / "nbval-sanitize.cfg"
UNATTENDED = {"AHP_LAB_UNATTENDED": "1"}  # nobody is at the notebook: it answers from code
CELL_TIMEOUT_S = 600
VOLATILE_CELL_METADATA = ("execution", "ExecuteTime")  # timing, rewritten on every run
VOLATILE_NOTEBOOK_METADATA = ("widgets",)  # saved widget state (model ids change on every run)


def notebooks(paths: Iterable[str | Path] = ()) -> list[Path]:
    """The notebooks named by ``paths`` (default: every ``notebooks/*.ipynb``), sorted."""
    chosen = [Path(p).resolve() for p in paths] or sorted(NOTEBOOKS.glob("*.ipynb"))
    return sorted(chosen)


def normalize(nb: Any) -> Any:
    """The notebook as JupyterLab saves it after a run: a normalized copy (outputs untouched)."""
    nb = copy.deepcopy(nb)
    for key in VOLATILE_NOTEBOOK_METADATA:
        nb.metadata.pop(key, None)
    nb.nbformat, nb.nbformat_minor = 4, max(5, nb.get("nbformat_minor", 5))
    for cell in nb.cells:
        cell.setdefault("id", uuid.uuid4().hex[:8])
        for key in VOLATILE_CELL_METADATA:
            cell.metadata.pop(key, None)
        if cell.cell_type == "code":
            cell.outputs = _merge_streams(cell.outputs)
    return nb


def _merge_streams(outputs: list) -> list:
    merged: list = []
    for output in outputs:
        last = merged[-1] if merged else None
        if (
            output.get("output_type") == "stream"
            and last is not None
            and last.get("output_type") == "stream"
            and last.get("name") == output.get("name")
        ):
            last["text"] += output["text"]
        else:
            merged.append(output)
    return merged


def sanitizers(path: Path = SANITIZE_FILE) -> list[tuple[re.Pattern, str]]:
    """The ``regex``/``replace`` pairs of the nbval sanitize file, in order."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(path, encoding="utf-8")
    return [(re.compile(parser[s]["regex"]), parser[s]["replace"]) for s in parser.sections()]


def _sanitize(value: Any, rules: list[tuple[re.Pattern, str]]) -> Any:
    if isinstance(value, str):
        for pattern, replacement in rules:
            value = pattern.sub(replacement, value)
        return value
    if isinstance(value, dict):
        return {k: _sanitize(v, rules) for k, v in value.items()}
    if isinstance(value, list):
        return [_sanitize(v, rules) for v in value]
    return value


def comparable(nb: Any, rules: list[tuple[re.Pattern, str]] | None = None) -> list[dict]:
    """What a fresh run must reproduce, one entry per cell, with the sanitize rules applied.

    The notebook metadata is compared too, except the Python version in ``language_info`` (the
    reader's kernel writes its own).
    """
    rules = sanitizers() if rules is None else rules
    meta = json.loads(json.dumps(nb.metadata))
    meta.get("language_info", {}).pop("version", None)
    out: list[dict] = [{"notebook metadata": meta}]
    for index, cell in enumerate(nb.cells):
        entry = {"cell": index, "cell_type": cell.cell_type, "source": cell.source}
        entry["metadata"] = json.loads(json.dumps(cell.metadata))
        if cell.cell_type == "code":
            entry["execution_count"] = cell.execution_count
            entry["outputs"] = _sanitize(json.loads(json.dumps(cell.outputs)), rules)
        out.append(entry)
    return out


def differences(committed: Any, fresh: Any, name: str = "notebook") -> str:
    """A unified diff of the first few cells whose normalized, sanitized forms differ ('' when none)."""
    rules = sanitizers()
    a, b = comparable(normalize(committed), rules), comparable(normalize(fresh), rules)
    chunks = []
    for i in range(max(len(a), len(b))):
        left = a[i] if i < len(a) else {}
        right = b[i] if i < len(b) else {}
        if left != right:
            diff = difflib.unified_diff(
                json.dumps(left, indent=1, sort_keys=True, ensure_ascii=False).splitlines(),
                json.dumps(right, indent=1, sort_keys=True, ensure_ascii=False).splitlines(),
                f"{name} (committed)",
                f"{name} (fresh run)",
                lineterm="",
            )
            where = "notebook metadata" if i == 0 else f"cell {i - 1}"
            chunks.append(f"{where}:\n" + "\n".join(diff))
        if len(chunks) == 3:
            break
    return "\n\n".join(chunks)


def this_python_kernels() -> Any:
    """A kernel spec manager whose ``python3`` is this interpreter's ipykernel (like nbval's
    ``--nbval-current-env``), whatever ``python`` on the PATH is."""
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager

    class ThisPython(KernelSpecManager):
        def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
            return KernelSpec(
                argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                display_name="Python 3 (ipykernel)",
                language="python",
            )

    return ThisPython()


def execute(
    nb: Any,
    cwd: Path,
    env: dict[str, str] | None = None,
    cell_hook: Callable[[Any], None] | None = None,
) -> Any:
    """Run every code cell of a copy of ``nb`` in a fresh kernel (working directory ``cwd``).

    ``env`` is added to this process's environment for the kernel (default: ``AHP_LAB_UNATTENDED=1``).
    Returns the executed copy; raises ``nbclient``'s ``CellExecutionError`` when a cell fails.
    """
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient

    nb = copy.deepcopy(nb)
    if cell_hook is not None:
        cell_hook(nb)
    client = NotebookClient(
        nb,
        km=AsyncKernelManager(kernel_name="python3", kernel_spec_manager=this_python_kernels()),
        timeout=CELL_TIMEOUT_S,
        record_timing=False,
        store_widget_state=False,
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute(env={**os.environ, **(UNATTENDED if env is None else env)})
    return nb


def fresh(path: Path) -> Any:
    """The notebook at ``path`` re-executed and normalized: what should be committed."""
    return normalize(execute(nbformat.read(path, as_version=4), path.parent))


def file_text(nb: Any) -> str:
    """The bytes JupyterLab's server writes for ``nb`` (``nbformat.write``: indent 1, final newline)."""
    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help="notebooks (default: notebooks/*.ipynb)")
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if a notebook differs from a fresh run"
    )
    args = parser.parse_args(argv)
    status = 0
    for path in notebooks(args.paths):
        name = os.path.relpath(path, REPO_ROOT)
        committed = nbformat.read(path, as_version=4)
        new = fresh(path)
        diff = differences(committed, new, name)
        stale = diff or path.read_text(encoding="utf-8") != file_text(normalize(committed))
        if not stale:
            print(f"{name}: unchanged")
        elif args.check:
            print(f"{name}: differs from a fresh run\n{diff or '(metadata or file format only)'}")
            status = 1
        else:  # only a notebook that changed is rewritten: no churn of masked ids in git
            path.write_text(file_text(new), encoding="utf-8")
            print(f"{name}: written")
    return status


if __name__ == "__main__":
    sys.exit(main())
