"""The rule "without the built-in", shared by conv2d_by_hand and max_pool_by_hand.

A ``TorchFunctionMode`` sees every torch function the answer calls: however the built-in is
reached (``F.conv2d``, ``torch.conv2d``, an imported alias, ``nn.Conv2d``,
``torch.ops.aten.convolution``), it arrives there by a convolution or pooling name, and the
check fails naming the rule. (A ``TorchDispatchMode`` would see ATen ops too, but under it
``F.pad`` imports ``torch._dynamo``: 3-10 s on a first check.) A learner's ``try/except``
around the forbidden call cannot hide it: the mode records the call as well as stopping it.
An exercise that uses :func:`run_forbidding` declares ``rule_id`` with an ``{op}`` field.
"""

from __future__ import annotations

import re
from typing import Any
from collections.abc import Callable

from torch.overrides import TorchFunctionMode

from course_utils.grading import Case, Incorrect

LESSON = "08_convolutions"


class Forbid(TorchFunctionMode):
    """Record (and stop) every torch function whose name matches ``pattern``."""

    def __init__(self, pattern: str):
        super().__init__()
        self.pattern = re.compile(pattern)
        self.hit: str | None = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = str(getattr(func, "__name__", "") or "")
        if self.pattern.search(name):
            self.hit = self.hit or name
            raise RuntimeError(f"forbidden call: {name}")
        return func(*args, **(kwargs or {}))


def run_forbidding(pattern: str, rule_id: str) -> Callable[[Any, Case], Any]:
    """A ``run`` that calls the answer under :class:`Forbid` and raises ``rule_id`` (with the
    name of the op, ``op``) when the answer called a forbidden function."""
    def run(answer: Any, case: Case) -> Any:
        mode = Forbid(pattern)
        try:
            with mode:
                out = answer(*case.args, **case.kwargs)
        except Exception:
            if mode.hit:
                raise Incorrect(rule_id, op=mode.hit) from None
            raise
        if mode.hit:  # the learner caught our error and carried on
            raise Incorrect(rule_id, op=mode.hit)
        return out
    return run
