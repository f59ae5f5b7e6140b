"""Tools for instructors: headless grading and the room view of learners' progress.

- ``python -m course_utils grade PATH...`` (:mod:`course_utils.instructor.grade`): run
  submitted learner notebooks in fresh kernels and score every exercise with the course's own
  graders; ``--csv``/``--json`` write a gradebook.
- ``python -m course_utils progress summary FILES...`` (:mod:`course_utils.instructor.room`,
  dispatched by the learner's ``progress`` command, :mod:`course_utils.progress_cli`): merge
  learners' progress logs into a room view (pass rate, median attempts, common mistakes, where
  people are stuck) and a plot.

Nothing here executes a learner's notebook in the instructor's Python process: notebooks run
in Jupyter kernels started with nbclient; only :mod:`course_utils.instructor.kernel` is
imported inside those kernels.
"""
