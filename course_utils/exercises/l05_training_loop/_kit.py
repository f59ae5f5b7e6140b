"""Helpers shared by lesson 05's exercises: the small model, data and hooks the loop graders use
to watch what a learner's loop does, and the checks of a returned number.

The loop graders build a small model and data themselves: stale values are put in every ``.grad``
before the call (as a previous backward would leave them), the model is handed over in the
"wrong" mode (eval for training, train with Dropout for evaluation) while forward pre-hooks
record ``module.training`` and ``torch.is_grad_enabled()`` at every call, and the data never
divides into equal batches, so a mean of batch means differs from the mean over samples.

Ids raised here, to be declared by each exercise that uses the helper: ``number_problem`` raises
``returned_none``, ``returned_tensor`` (fact ``what``; messages below) and ``RETURNS_NUMBER``'s ``not_a_number``.
"""

from __future__ import annotations

import torch
from torch import nn

from course_utils.grading import Case, Expect, Incorrect, Rand

LESSON = "05_training_loop"

RETURNED_NONE = "Your function returned None; return {what}. Did you forget a `return`?"
RETURNED_TENSOR = ("Return {what} as a Python float: `.item()` turns a one-element tensor into one (and lets "
                   "the graph behind it be freed).")
SOFTMAX_BEFORE_LOSS = (
    "You applied softmax to the logits before the loss: `nn.CrossEntropyLoss` (the `loss_fn` here) applies "
    "log-softmax itself, so it must get the raw logits `model(X)`. With probabilities the loss is wrong and "
    "its gradients are much smaller.")


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a, b, rtol=1e-5, atol=1e-6))


def _flat(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).clone()


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


RETURNS_NUMBER = Expect("not_a_number", "a Python float (`.item()` of a one-element tensor)", _is_number,
                        said="For {what} your function returned")


def number_problem(value, what: str) -> None:
    if value is None:
        raise Incorrect("returned_none", what=what)
    if isinstance(value, torch.Tensor):
        raise Incorrect("returned_tensor", what=what)
    RETURNS_NUMBER.check(value, what=what)


def loop_case(r: Rand) -> Case:
    """Data for a loop grader. Everything goes in kwargs: the grader builds the model, loader,
    loss and optimizer itself, so the case is described by its seed only."""
    d, c = r.integer(3, 6), r.integer(2, 4)
    bs = r.integer(4, 9)
    n = r.integer(2, 4) * bs + r.integer(1, bs - 1)  # the last batch is always shorter
    return Case(kwargs=dict(X=r.randn(n, d), y=r.randint(0, c, (n,)), batch_size=bs, seed=r.integer(0, 2**31),
                            # for train_one_epoch: an optimizer and a loss the learner cannot guess
                            lr=round(r.uniform(0.05, 0.5), 3), smoothing=round(r.uniform(0.05, 0.3), 2)))


def _model_for(X: torch.Tensor, y: torch.Tensor, seed: int, dropout: float = 0.0) -> nn.Module:
    torch.manual_seed(seed)  # checks run inside a forked RNG: the learner's state is untouched
    layers = [nn.Linear(X.shape[1], 8), nn.ReLU()]
    if dropout:
        layers.append(nn.Dropout(dropout))
    layers.append(nn.Linear(8, int(y.max()) + 2))
    return nn.Sequential(*layers)


def record_modes(model: nn.Module) -> tuple[list, list]:
    """Forward pre-hooks on the model *and every submodule*: ``model.forward(X)`` skips the
    model's own hooks but still calls its layers."""
    records: list[tuple[bool, bool]] = []
    hooks = [m.register_forward_pre_hook(lambda m, args: records.append((m.training, torch.is_grad_enabled())))
             for m in model.modules()]
    return records, hooks


def count_steps(optimizer: torch.optim.Optimizer) -> tuple[list, object]:
    steps: list[int] = []
    return steps, optimizer.register_step_post_hook(lambda opt, args, kwargs: steps.append(1))
