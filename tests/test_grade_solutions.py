"""Every solution notebook, graded as an instructor grades a submission (sandboxed, judged with
the references out of the learner's reach), scores every exercise correct.

This is the path no other test takes lesson by lesson: the staged course with its references
cut out, the executor running each exercise's own checking code, and the judge filling in the
declared messages from the ids and facts the executor sends back. An exercise whose checking
code reaches a reference the wrong way (through the registry, which holds the cut stub) or a
message that loses its facts on the way shows up here as a wrong grade.
"""

from __future__ import annotations

import shutil

import pytest

from course_utils import build
from course_utils.instructor import grade, sandbox

pytestmark = pytest.mark.slow

def test_every_solution_notebook_grades_all_correct(tmp_path):
    if sandbox.works() is not None:
        pytest.skip(f"no sandbox here: {sandbox.works()}")
    (tmp_path / "teacher").mkdir()
    for path in sorted(build.SOLUTIONS.glob("[0-9][0-9]_*.ipynb")):
        shutil.copy(path, tmp_path / "teacher" / path.name)
    reports = grade.grade([tmp_path], workers=2, timeout=120)
    assert len(reports) == len(list(build.SOLUTIONS.glob("[0-9][0-9]_*.ipynb")))
    wrong = [(r.exercise, r.status, r.mistake, r.detail) for rep in reports for r in rep.rows if r.status != "correct"]
    assert not wrong, wrong
    assert not [rep.error for rep in reports if rep.error]
    # a lesson's demo cells that use the course's answer after an exercise run on the notebook's own
    # answer in the staged course (issue 23, item 7): a perfect submission reports no cell problem
    problems = [p for rep in reports for p in rep.problems]
    assert not problems, problems
    graded = {r.exercise for rep in reports for r in rep.rows}
    from course_utils.grading import registry
    assert graded == {ex.id for ex in registry.all_exercises()}
