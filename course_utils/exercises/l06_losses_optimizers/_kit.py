"""Shared by the exercises of 06_losses_optimizers: how a message names a type. (Each rule is its
exercise's ``Exercise.forbid``: "without the built-in" of ``stable_log_softmax`` and
``cross_entropy_by_hand`` a ``re:`` pattern, seen at the torch-function and the ATen level;
"without ``torch.optim.SGD``" of ``SGDMomentum`` the class and its functional workers.)
"""

from __future__ import annotations

from typing import Any


LESSON = "06_losses_optimizers"


def a_type(x: Any) -> str:
    """``"an `int`"``, ``"a `list`"``: for messages that say what the learner passed or returned."""
    name = type(x).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} `{name}`"


