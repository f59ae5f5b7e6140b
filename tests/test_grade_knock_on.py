"""Issue 24, part C: after a failed import cell, `grade`'s report says so in one line and sums up
the knock-on NameErrors in one more, instead of one line per later cell."""

from __future__ import annotations

import contextlib
import io

import nbformat
import pytest

from course_utils import build
from course_utils.instructor import grade, sandbox
from course_utils.instructor.grade_report import NotebookReport, condensed_problems, summary_text

IMPORT = "cell 2: ModuleNotFoundError: No module named 'torchh'"
KNOCK_ON = [f"cell {i}: NameError: name '{n}' is not defined"
            for i, n in zip(range(3, 34), ["torch"] * 29 + ["device", "a"])]


def test_a_failed_import_and_its_knock_on_name_errors_take_two_lines():
    problems = ["cell 1: ValueError: before the import", IMPORT, *KNOCK_ON,
                "cell 40: ZeroDivisionError: division by zero"]
    lines = condensed_problems(problems)
    assert lines[0] == "cell 1: ValueError: before the import"
    assert lines[1] == ("cell 2: the import failed (ModuleNotFoundError: No module named 'torchh'); "
                        "later cells that need it fail too")
    assert lines[2] == ("cells 3–33: 31 knock-on NameErrors after the failed import in cell 2 "
                        "(undefined: torch, device, a)")
    assert lines[3:] == ["cell 40: ZeroDivisionError: division by zero"]


def test_name_errors_without_a_failed_import_are_listed_one_by_one():
    assert condensed_problems(KNOCK_ON[:3]) == KNOCK_ON[:3]
    # a NameError before the import failed is not its knock-on
    assert condensed_problems([KNOCK_ON[0], "cell 9: ImportError: cannot import name 'x' from 'y'"])[0] == KNOCK_ON[0]


def test_the_summary_shows_the_failed_import_not_31_name_errors():
    rep = NotebookReport("sub/ann/00_start_here.ipynb", "ann", "00_start_here", problems=[IMPORT, *KNOCK_ON])
    text = summary_text([rep])
    assert text.count("NameError") == 1 and "31 knock-on NameErrors" in text
    assert "the import failed (ModuleNotFoundError: No module named 'torchh')" in text
    assert "import failed (cell 2); 2 cell problem(s)" in text  # the notebook's line


@pytest.mark.slow
def test_grading_a_notebook_whose_import_cell_fails(tmp_path):
    nb = nbformat.read(build.NOTEBOOKS / "00_start_here.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "import torch" in c.source)
    cell.source = cell.source.replace("import torch", "import torchh as torch")  # a typo in the import cell
    (tmp_path / "ann").mkdir()
    nbformat.write(nb, tmp_path / "ann" / "00_start_here.ipynb")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        grade.main([str(tmp_path), "--json", str(tmp_path / "g.json"), "--timeout", "30"]
                   + (["--no-sandbox"] if sandbox.works() else []))
    text = out.getvalue()
    problems = text.split("Problems:", 1)[1]
    assert "the import failed (ModuleNotFoundError: No module named 'torchh')" in problems
    assert problems.count("NameError") == 1 and "knock-on NameErrors" in problems, problems
    assert "undefined: torch" in problems
