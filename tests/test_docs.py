"""The documentation under docs/ is executable: its code runs, its references exist.

* Every ```python block of ``docs/*.md`` either appears verbatim in a code cell of a notebook under
  ``notebooks/`` (nbval runs those) or is executed here: the blocks of one file run in order, in one
  namespace, inside a running asyncio loop with top-level ``await`` allowed, as in a notebook cell.
* ``docs/api.md`` is what ``docs/gen_api.py`` generates from the docstrings today.
* ``docs/coverage.md`` points at notebook cells that exist (``NN-name.ipynb`` cell ``K`` = nbval's
  ``Cell K``, the K-th code cell counting from 0) and whose source contains the quoted snippet.
* The README keeps its two Quick start commands, the first opening the tour, and its screenshot,
  and its "Measure speed" table names every script in ``benchmarks/``.
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import re
import threading
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
NOTEBOOKS = ROOT / "notebooks"
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
CHECK_MARK = "# NBVAL_CHECK_OUTPUT"


def _normalize(code: str) -> str:
    lines = [line.rstrip() for line in code.strip("\n").splitlines()]
    if lines and lines[0].strip() == CHECK_MARK:
        lines = lines[1:]
    return "\n".join(lines).strip("\n")


def _notebook_cells() -> dict[str, list[str]]:
    out = {}
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        out[path.name] = [cell.source for cell in nb.cells if cell.cell_type == "code"]
    return out


def _python_blocks(path: Path) -> list[tuple[int, str]]:
    text = path.read_text(encoding="utf-8")
    return [(text[: m.start()].count("\n") + 1, m.group(1)) for m in FENCE.finditer(text)]


def _copied(block: str, cells: dict[str, list[str]]) -> bool:
    wanted = _normalize(block)
    return any(wanted in _normalize(src) for sources in cells.values() for src in sources)


def _run_blocks(name: str, blocks: list[tuple[int, str]]) -> None:
    """Run the blocks in order in one namespace, in a fresh loop on a thread of its own (a loop
    left running in the main thread by Playwright's sync API must not interfere)."""

    async def main() -> None:
        from IPython.display import display

        namespace: dict = {"__name__": f"docs_{name}", "display": display}
        for line, code in blocks:
            compiled = compile(
                code, f"docs/{name}:{line}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
            )
            result = eval(compiled, namespace)
            if asyncio.iscoroutine(result):
                await result

    errors: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:  # re-raised in the test's thread
            errors.append(exc)

    thread = threading.Thread(target=target, name=f"docs-{name}")
    thread.start()
    thread.join(300)
    assert not thread.is_alive(), f"the code blocks of docs/{name} did not finish within 300 s"
    if errors:
        raise errors[0]


DOC_FILES = sorted(p.name for p in DOCS.glob("*.md"))


@pytest.mark.parametrize("name", DOC_FILES)
def test_python_blocks_run_or_are_copied_from_a_notebook(name):
    blocks = _python_blocks(DOCS / name)
    cells = _notebook_cells()
    to_run = [(line, code) for line, code in blocks if not _copied(code, cells)]
    if to_run:
        _run_blocks(name, to_run)


def test_the_guide_has_code_that_runs():
    assert len(_python_blocks(DOCS / "guide.md")) >= 5


def test_api_reference_is_generated_from_the_current_docstrings():
    spec = importlib.util.spec_from_file_location("gen_api", DOCS / "gen_api.py")
    gen_api = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_api)
    current = (DOCS / "api.md").read_text(encoding="utf-8")
    assert current == gen_api.render(), "docs/api.md is out of date: run `python docs/gen_api.py`"


COVERAGE_REF = re.compile(r"`(\d\d-[\w-]+\.ipynb)` cell (\d+)(?: `([^`]+)`)?")


def test_coverage_points_at_cells_that_exist():
    text = (DOCS / "coverage.md").read_text(encoding="utf-8")
    cells = _notebook_cells()
    refs = COVERAGE_REF.findall(text)
    assert len(refs) >= 40, "coverage.md should map every seed behaviour to a notebook cell"
    problems = []
    for notebook, index, snippet in refs:
        sources = cells.get(notebook)
        if sources is None:
            problems.append(f"{notebook}: no such notebook")
        elif int(index) >= len(sources):
            problems.append(f"{notebook} cell {index}: it has {len(sources)} code cells")
        elif snippet and snippet not in sources[int(index)]:
            problems.append(f"{notebook} cell {index}: {snippet!r} is not in that cell")
    assert not problems, "\n".join(problems)


def test_links_between_docs_and_notebooks_resolve():
    missing = []
    for path in [*DOCS.glob("*.md"), ROOT / "README.md"]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            if not (path.parent / target).exists():
                missing.append(f"{path.relative_to(ROOT)} → {target}")
    assert not missing, "\n".join(missing)


def test_readme_opens_with_the_screenshot_and_keeps_two_quick_start_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = readme.split("\n## ", 1)[0]
    assert "docs/img/workbench.png" in first_block, "the README opens with the workbench screenshot"
    assert (ROOT / "docs" / "img" / "workbench.png").stat().st_size > 10_000
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)```", quick, re.DOTALL)
    assert [c.strip() for c in commands] == [
        "pip install -e . && jupyter lab --allow-root --ServerApp.root_dir=. notebooks/00-tour.ipynb",
        "bash scripts/test.sh",
    ]


def test_readme_lists_every_benchmark_and_only_those_that_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Measure speed", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    listed = set(re.findall(r"^\| `(bench_\w+\.py)` \|", section, re.MULTILINE))
    present = {p.name for p in (ROOT / "benchmarks").glob("bench_*.py")}
    assert listed == present, f"README lists {sorted(listed - present)} but not {sorted(present - listed)}"
