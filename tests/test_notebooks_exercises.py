"""Exercises ship unsolved, and their worked solutions (``docs/solutions/``) pass their checks.

A reader who runs a notebook top to bottom sees "Not yet" under each exercise; nbval checks that
output. Here every notebook also runs with its solutions pasted into the answer cells, in a fresh
kernel, and each check must say "Well done".
"""

from __future__ import annotations

import nbformat
import pytest

from .notebook_tools import (
    NOTEBOOKS,
    answer_cells,
    check_cell,
    nbtools,
    solution_file,
    solutions,
    solved,
    stream_text,
)

WITH_EXERCISES = [p for p in NOTEBOOKS if answer_cells(nbformat.read(p, as_version=4))]


def test_every_teaching_notebook_has_an_exercise():
    assert len(WITH_EXERCISES) >= 7, [p.name for p in WITH_EXERCISES]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_exercises_ship_unsolved_and_say_not_yet(path):
    nb = nbformat.read(path, as_version=4)
    answers = answer_cells(nb)
    headings = [c for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("## Exercise")]
    assert len(answers) == len(headings), f"{path.name}: each '## Exercise' needs an answer cell"
    for index in answers:
        assert "..." in nb.cells[index].source, f"{path.name} cell {index} is not left for the reader"
        check = nb.cells[check_cell(nb, index)]
        assert "# Check" in check.source and "Not yet" in check.source, check.source
        assert stream_text(check).startswith("Not yet"), f"{path.name}: the committed check is not 'Not yet'"
    if answers:
        link = f"../docs/solutions/{path.stem}.md"
        assert any(link in c.source for c in headings), f"{path.name} does not link to {link}"
        assert len(solutions(path)) == len(answers), f"{solution_file(path)}: one python block per exercise"


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=[p.name for p in WITH_EXERCISES])
def test_the_worked_solutions_pass_the_checks_after_run_all(path):
    """As a reader does it: Run All, then each answer and its check, in the same kernel. Four
    notebooks closed their lab in their last cell, so after Run All every solution failed ("this
    lab is closed") and the check said "Not yet" (a first-hour user)."""
    nb, checks = solved(nbformat.read(path, as_version=4), path)
    ran = nbtools.execute(nb, path.parent)
    for index in checks:
        said = stream_text(ran.cells[index])
        assert said.startswith("Well done"), f"{path.name}: the check in cell {index} said {said!r}"
