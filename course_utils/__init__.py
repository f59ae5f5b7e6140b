"""course_utils: the helper package of the PyTorch fundamentals course.

Submodules (imported on demand, so ``import course_utils`` stays fast):

- :mod:`course_utils.datasets`: offline, seeded datasets (digits, house prices, spirals, moons,
  a noisy sine series, ragged token sequences).
- :mod:`course_utils.plotting`: live training curves, decision boundaries, image grids.
- :mod:`course_utils.grading`: the exercise framework (``check``/``hint``/``solution``).
- :mod:`course_utils.progress`: the learner's progress log; :mod:`course_utils.progress_view`
  shows it (the dashboard and ``python -m course_utils progress`` use that view).
- :mod:`course_utils.lesson_props`: what one lesson's demos import, named for the lesson.
- :mod:`course_utils.build`: generates learner notebooks from solution notebooks.
"""

__version__ = "0.1.0"
