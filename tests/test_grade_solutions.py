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

#: Demo cells that call the course's answer BEFORE the learner has written theirs (lesson 05's
#: inverse problems print what the reference does, issue 26), so the staged course has no answer
#: of that name to give them and the grader reports a problem line. Known, listed, to be replaced
#: by precomputed data in the lesson's props (the note of this session says so).
KNOWN_DEMO_PROBLEMS = (("05_training_loop", "EarlyStopping"), ("05_training_loop", "warmup_cosine"))


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
    problems = [(rep.lesson, p) for rep in reports for p in rep.problems]
    known = [(lesson, p) for lesson, p in problems if any(
        lesson == known_lesson and "not available to graded code" in p and name in p
        for known_lesson, name in KNOWN_DEMO_PROBLEMS)]
    assert [p for p in problems if p not in known] == [], problems
    # each known problem still happens: when one is fixed, take it off the list
    assert {name for _, name in KNOWN_DEMO_PROBLEMS} <= {name for _, p in known for _, name in KNOWN_DEMO_PROBLEMS
                                                         if name in p}, known
    graded = {r.exercise for rep in reports for r in rep.rows}
    from course_utils.grading import registry
    assert graded == {ex.id for ex in registry.all_exercises()}
