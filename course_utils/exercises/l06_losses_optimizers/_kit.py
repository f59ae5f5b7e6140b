"""Shared by the exercises of 06_losses_optimizers: the lesson's name. (Each rule is its
exercise's ``Exercise.forbid``: "without the built-in" of ``stable_log_softmax`` and
``cross_entropy_by_hand`` a ``re:`` pattern, seen at the torch-function and the ATen level;
"without ``torch.optim.SGD``" of ``SGDMomentum`` the class and its functional workers.)
"""

from __future__ import annotations

LESSON = "06_losses_optimizers"
