"""Issue 23, item 7: a lesson's own demo cells run in a graded submission.

Some demos use the course's answer after an exercise (``reference("05_training_loop.EarlyStopping")``).
In the course the grader stages for a submission the references are cut, so those cells used to
fail and every submission, perfect ones included, reported cell problems. There, ``reference``
now gives the notebook's own answer of that name: the demo of a perfect submission runs, and
nothing of the course's answer reaches the submission.
"""

from __future__ import annotations

import os
import subprocess
import sys

from course_utils import grading
from course_utils.instructor import sandbox

PROGRAM = """
import sys
from course_utils.grading import reference
try:
    reference("05_training_loop.EarlyStopping")(patience=5)
except RuntimeError as exc:
    print("before:", "hidden" if {hidden!r} in str(exc) else repr(exc))
else:
    print("before: handed out")

class EarlyStopping:
    pass

print("own:", reference("05_training_loop.EarlyStopping") is EarlyStopping)
try:
    reference("05_training_loop.accumulated_step")(None, None, None, [])
except RuntimeError as exc:
    print("other:", "hidden" if {hidden!r} in str(exc) else repr(exc))
"""


def test_a_demo_in_the_staged_course_gets_the_notebooks_own_answer_never_the_course_s(tmp_path):
    staged = sandbox.stage_course(tmp_path / "staged", lesson="05_training_loop")
    env = dict(os.environ, PYTHONPATH=str(staged), COURSE_PROGRESS_LOG="")
    proc = subprocess.run([sys.executable, "-c", PROGRAM.format(hidden=sandbox.HIDDEN_MESSAGE)], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\n")
    # the course's answer is never handed out; the notebook's own is, once it defines one
    assert "before: hidden" in lines and "own: True" in lines and "other: hidden" in lines, proc.stdout


def test_outside_the_staged_course_reference_is_the_course_s_answer():
    import __main__

    ex = grading.exercise("05_training_loop.EarlyStopping")
    before = getattr(__main__, "EarlyStopping", None)
    __main__.EarlyStopping = object()  # a notebook's own class of that name changes nothing here
    try:
        assert grading.reference("05_training_loop.EarlyStopping") is ex.reference
    finally:
        if before is None:
            del __main__.EarlyStopping
        else:
            __main__.EarlyStopping = before
