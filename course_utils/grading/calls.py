"""Calling the learner's answer from an exercise's own ``run``.

A ``run`` that calls the answer inside ``with torch.enable_grad():`` hides one side effect:
an answer that switches autograd off (``torch.set_grad_enabled(False)``) and leaves it off is
switched back on when the block ends, so the runner's own check sees nothing.
:func:`answer_grad_mode` is that block, plus the check before the mode is restored.

The runner compares the inputs it passes with their copies (:mod:`.unchanged`); a ``run`` that
builds the objects it hands to the answer names those the answer must leave as they were with
:func:`kept` (a loss whose ``reduction`` an answer set to ``'sum'`` and left so, a model left in
eval mode, a frozen layer unfrozen: all passed a review's checks before).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Mapping
from typing import Any

import torch

from .spec import Incorrect
from .unchanged import differs

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


CHANGED = ("Your code changed `{name}`, which it was given and which its caller goes on using (a setting such "
           "as a loss's `reduction`, a value of a dict, a tensor written in place). Leave it as it was: work on "
           "a copy, or pass what you need as an argument.")
MODES_CHANGED = ("Your code left `{name}` {how} when it returned, and its caller goes on using it. Leave its "
                 "modes as you found them (put back what you switch).")


def _flags(model: torch.nn.Module) -> tuple[list[bool], list[bool]]:
    return [m.training for m in model.modules()], [p.requires_grad for p in model.parameters()]


@contextlib.contextmanager
def kept(unchanged: Mapping[str, Any] | None = None, modes: Mapping[str, torch.nn.Module] | None = None,
         ) -> Iterator[None]:
    """Around a call of the learner's answer: when the block ends normally, each object of
    ``unchanged`` (by the name the learner knows it by) must be what a copy taken before was,
    and each model of ``modes`` must have its train/eval flags and ``requires_grad`` flags as
    they were (its weights may change: training is its task); else ``mutated_input``."""
    before = {name: copy.deepcopy(obj) for name, obj in (unchanged or {}).items()}
    flags = {name: _flags(model) for name, model in (modes or {}).items()}
    yield
    for name, obj in (unchanged or {}).items():
        if differs(before[name], obj):
            raise Incorrect("mutated_input", CHANGED.format(name=name))
    for name, model in (modes or {}).items():
        (training, grads), (training0, grads0) = _flags(model), flags[name]
        if training != training0:
            how = "in eval mode" if not training[0] and training0[0] else "with its train/eval modes changed"
            raise Incorrect("mutated_input", MODES_CHANGED.format(name=name, how=how))
        if grads != grads0:
            raise Incorrect("mutated_input", MODES_CHANGED.format(
                name=name, how="with parameters frozen or unfrozen (`requires_grad` switched)"))
