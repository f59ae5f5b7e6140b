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
from course_utils.extras import TORCHVISION_LESSONS
from course_utils.instructor import grade, sandbox

pytestmark = pytest.mark.slow


# The lessons that need torchvision are graded where it imports (the `vision` run, conftest.py).
@pytest.mark.parametrize("vision", [False, pytest.param(True, marks=pytest.mark.vision)], ids=["core", "torchvision"])
def test_every_solution_notebook_grades_all_correct(tmp_path, vision):
    if sandbox.works() is not None:
        pytest.skip(f"no sandbox here: {sandbox.works()}")
    (tmp_path / "teacher").mkdir()
    paths = [p for p in sorted(build.SOLUTIONS.glob("[0-9][0-9]_*.ipynb")) if (p.stem in TORCHVISION_LESSONS) == vision]
    for path in paths:
        shutil.copy(path, tmp_path / "teacher" / path.name)
    reports = grade.grade([tmp_path], workers=2, timeout=120)
    assert len(reports) == len(paths) > 0
    wrong = [(r.exercise, r.status, r.mistake, r.detail) for rep in reports for r in rep.rows if r.status != "correct"]
    assert not wrong, wrong
    assert not [rep.error for rep in reports if rep.error]
    # a lesson's demo cells that use the course's answer after an exercise run on the notebook's own
    # answer in the staged course (issue 23, item 7), and no demo cell uses it before (lesson 05 shows
    # precomputed runs there): a perfect submission reports no cell problem
    assert [(rep.lesson, p) for rep in reports for p in rep.problems] == []
    graded = {r.exercise for rep in reports for r in rep.rows}
    from course_utils.grading import registry
    assert graded == {ex.id for ex in registry.all_exercises()
                      if (ex.id.split(".")[0] in TORCHVISION_LESSONS) == vision}
