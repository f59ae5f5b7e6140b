"""warmup_cosine: a ``LambdaLR`` with a linear warm-up over ``warmup_steps`` and then a cosine
decay to 0 at ``total_steps``. The notebook gives no formula: the learner reads the schedule off
two logged curves of the course's answer (tests/test_l05_training_loop.py checks that every wrong
shape named below changes a number the notebook prints).

Subtle: the first step's factor is ``1 / warmup_steps`` (not 0); the cosine's progress is measured
from the end of the warm-up and shifted to run from 1 to 0; ``warmup_steps=0`` and
``warmup_steps == total_steps`` must not divide by zero. The grader steps a real optimizer and
compares the learning rates it sees.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from course_utils.grading import Case, Compare, Exercise, Expect, Incorrect, Mistake, Rand, register

from ._kit import LESSON


# --- reference: the notebook's answer (generated from solutions/05_training_loop.py)
from ...answers.l05_training_loop import warmup_cosine


# --- cases
def _cases(r: Rand) -> Case:
    warmup = r.integer(1, 6)
    total = warmup + r.integer(2, 30)
    return Case(kwargs=dict(warmup_steps=warmup, total_steps=total, lr=round(r.uniform(0.01, 1.0), 3)))


EDGE_CASES = [
    Case(kwargs=dict(warmup_steps=4, total_steps=12, lr=0.1), label="warmup_steps=4, total_steps=12, lr=0.1"),
    Case(kwargs=dict(warmup_steps=0, total_steps=5, lr=1.0), label="warmup_steps=0 (no warm-up), total_steps=5"),
    Case(kwargs=dict(warmup_steps=3, total_steps=3, lr=0.5),
         label="warmup_steps=3, total_steps=3 (all warm-up: `max(1, total_steps - warmup_steps)`)"),
    Case(kwargs=dict(warmup_steps=1, total_steps=2, lr=0.2), label="warmup_steps=1, total_steps=2"),
]


# --- run and probes
_SCHEDULER = Expect("not_a_scheduler", "a scheduler object (an `LRScheduler`, such as `LambdaLR`)",
                    torch.optim.lr_scheduler.LRScheduler)


def _run(answer, case: Case):
    warmup, total, lr = (case.kwargs[k] for k in ("warmup_steps", "total_steps", "lr"))
    param = nn.Parameter(torch.zeros(2))
    optimizer = torch.optim.SGD([param], lr=lr)
    scheduler = answer(optimizer, warmup, total)
    _SCHEDULER.check(scheduler)
    if scheduler.optimizer is not optimizer:
        raise Incorrect("other_optimizer")
    lrs = []
    for _ in range(total):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return torch.tensor(lrs, dtype=torch.float64)


# --- wrong answers
def _with_factor(factor):
    """A schedule like the reference's whose factor is ``factor(step, warmup_steps, total_steps)``."""

    def schedule(optimizer, warmup_steps, total_steps):
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: factor(step, warmup_steps, total_steps))

    return schedule


def _cosine(step, warmup_steps, total_steps):
    """The reference's decay part."""
    return 0.5 * (1 + math.cos(math.pi * (step - warmup_steps) / max(1, total_steps - warmup_steps)))


_wc_from_zero = _with_factor(lambda s, w, t: s / w if s < w else _cosine(s, w, t))
_wc_ignores_warmup = _with_factor(lambda s, w, t: (s + 1) / w if s < w else _cosine(s, 0, t))
_wc_not_shifted = _with_factor(lambda s, w, t: (s + 1) / w if s < w else 2 * _cosine(s, w, t) - 1)
_wc_linear = _with_factor(lambda s, w, t: (s + 1) / w if s < w else 1 - (s - w) / max(1, t - w))


def _wc_stepped(optimizer, warmup_steps, total_steps):
    scheduler = warmup_cosine(optimizer, warmup_steps, total_steps)
    scheduler.step()
    return scheduler


def _wc_own_optimizer(optimizer, warmup_steps, total_steps):
    own = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=optimizer.param_groups[0]["lr"])
    return warmup_cosine(own, warmup_steps, total_steps)


# --- declaration
register(Exercise(
    lesson=LESSON, name="warmup_cosine", title="Reproduce a logged warm-up + cosine schedule",
    reference=warmup_cosine, run=_run, cases=_cases, edge_cases=EDGE_CASES, compare=Compare(rtol=1e-6, atol=1e-9),
    mistakes=[
        Mistake("warmup_from_zero", "The first step's factor is `1 / warmup_steps`, not 0: a zero learning "
                "rate wastes a step. The warm-up should start above 0 and reach 1 on its last "
                "step.", _wc_from_zero),
        Mistake("cosine_ignores_warmup", "The cosine starts when the warm-up ends: measure progress "
                "from the end of the warm-up, as a fraction of the steps that remain after it.",
                _wc_ignores_warmup),
        Mistake("cosine_not_shifted", "A plain cosine goes negative; shift and scale it so the decay "
                "goes from 1 down to 0 as progress goes from 0 to 1.", _wc_not_shifted),
        Mistake("linear_decay", "After the warm-up your learning rate falls along a straight line; the logged "
                "one falls slowly at first, fastest in the middle and slowly again near 0: half a cosine.",
                _wc_linear),
        Mistake("stepped_before_use", "Your schedule is one step ahead: the scheduler you returned was already "
                "stepped. `LambdaLR` applies `factor(0)` when it is built; the training loop calls "
                "`scheduler.step()` after each optimizer step.", _wc_stepped),
        _SCHEDULER.mistake(lambda optimizer, warmup_steps, total_steps: [1.0] * total_steps),
        Mistake("other_optimizer", "Build the scheduler on the `optimizer` you are given.", _wc_own_optimizer,
                match_output=False),
    ],
    hints=[
        "Read the first curve at steps 0, 3 and 4: what fraction of 0.1 is each? So what is the factor at step "
        "0, and at which step does it first reach 1?",
        "After the warm-up: which function falls from 1 to 0, flat at both ends, as its input goes from 0 to pi? "
        "Over how many steps does the decay run in each curve, and from which step do you count them?",
        "The ideas: a linear warm-up that reaches 1 on its last step, so its first factor is one warm-up "
        "step's worth, not 0; then half a cosine, shifted and scaled to go from 1 to 0, over the steps that "
        "remain after the warm-up, its progress counted from the end of the warm-up; guard the division when "
        "no step remains.",
    ],
))
