"""Calling the learner's answer from an exercise's own ``run``.

A ``run`` that calls the answer inside ``with torch.enable_grad():`` hides one side effect:
an answer that switches autograd off (``torch.set_grad_enabled(False)``) and leaves it off is
switched back on when the block ends, so the runner's own check sees nothing.
:func:`answer_grad_mode` is that block, plus the check before the mode is restored.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from .spec import Incorrect

GRAD_LEFT_OFF = ("Your code switched autograd off for the rest of the session (`torch.set_grad_enabled(False)` "
                 "without switching it back), so later training fails. Use a block that restores it: "
                 "`with torch.no_grad():` or `with torch.inference_mode():`.")


@contextlib.contextmanager
def answer_grad_mode() -> Iterator[None]:
    """``torch.enable_grad()`` around a call of the learner's answer; when the block ends
    normally with autograd off, the check fails with ``grad_left_off``."""
    with torch.enable_grad():
        yield
        if not torch.is_grad_enabled():
            raise Incorrect("grad_left_off", GRAD_LEFT_OFF)
