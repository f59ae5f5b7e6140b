"""course_utils: the helper package of the PyTorch fundamentals course.

Submodules (imported on demand, so ``import course_utils`` stays fast):

- :mod:`course_utils.datasets`: offline, seeded datasets (digits, house prices, spirals, moons,
  a noisy sine series, ragged token sequences).
- :mod:`course_utils.plotting`: live training curves, decision boundaries, image grids.
- :mod:`course_utils.grading`: the exercise framework (``check``/``hint``/``solution``).
- :mod:`course_utils.progress`: the learner's progress log and summary.
- :mod:`course_utils.build`: generates learner notebooks from solution notebooks.
"""

__version__ = "0.1.0"
