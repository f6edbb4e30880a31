"""Notebook helpers shared by the notebook tests.

``nbtools`` is ``scripts/normalize_notebooks.py`` as a module (normalize, execute, compare). The
exercise convention (see ``notebooks/README.md``): an answer cell starts with ``ANSWER_MARK`` and
holds ``...`` where the answer goes; the code cell right after it checks the answer and prints
"Not yet" or "Well done"; ``docs/solutions/<notebook>.md`` holds one ```python block per answer
cell, in order.
"""

from __future__ import annotations

import copy
import importlib.util
import re
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = REPO_ROOT / "docs" / "solutions"
ANSWER_MARK = "# Exercise: your answer"
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)

_spec = importlib.util.spec_from_file_location(
    "normalize_notebooks", REPO_ROOT / "scripts" / "normalize_notebooks.py"
)
nbtools = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nbtools)

NOTEBOOKS = nbtools.notebooks()


def answer_cells(nb: Any) -> list[int]:
    """Indices of the exercise answer cells of a notebook."""
    return [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source.startswith(ANSWER_MARK)]


def check_cell(nb: Any, answer: int) -> int:
    """Index of the code cell that checks the answer cell at ``answer``."""
    return next(i for i in range(answer + 1, len(nb.cells)) if nb.cells[i].cell_type == "code")


def solution_file(notebook: Path) -> Path:
    return SOLUTIONS / f"{notebook.stem}.md"


def solutions(notebook: Path) -> list[str]:
    """The worked solutions of a notebook's exercises, in the order of its answer cells."""
    path = solution_file(notebook)
    return FENCE.findall(path.read_text(encoding="utf-8")) if path.exists() else []


def solved(nb: Any, notebook: Path) -> tuple[Any, list[int]]:
    """A copy of ``nb`` as a reader solves it after Run All: after its last cell, each worked
    solution, then a copy of the cell that checks it; and the indices of those checks."""
    nb = copy.deepcopy(nb)
    answers, code = answer_cells(nb), solutions(notebook)
    assert len(answers) == len(code), (
        f"{notebook.name} has {len(answers)} answer cells but {solution_file(notebook).name} has "
        f"{len(code)} python blocks"
    )
    checks = []
    for n, (index, source) in enumerate(zip(answers, code, strict=True)):
        answer = copy.deepcopy(nb.cells[index])
        answer.source = source.rstrip("\n")
        check = copy.deepcopy(nb.cells[check_cell(nb, index)])
        answer.id, check.id = f"solved-answer-{n}", f"solved-check-{n}"  # cell ids are unique
        nb.cells += [answer, check]
        checks.append(len(nb.cells) - 1)
    return nb, checks


def stream_text(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", ()) if o.get("output_type") == "stream")
