"""finite_difference_grad: the gradient of a scalar fn at x by central differences, one element at a time.

Subtle: the exact (autograd) gradient is only close to a central difference; to float64
precision it is evidence of autograd. Nudging ``x`` in place and nudging back does not restore
it exactly; a one-sided difference or a ``/ eps`` denominator is off by more than the tolerance.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable

import torch

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register

from ...answers.l02_autograd import finite_difference_grad
from ._kit import LESSON
from ._kit import close, small_shape


# --- reference: imported above from course_utils/answers/l02_autograd.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases
def _scalar_fn(r: Rand, shape: tuple[int, ...]) -> Callable[[torch.Tensor], torch.Tensor]:
    w = r.randn(*shape, dtype=torch.float64)
    kind = r.integer(0, 2)
    if kind == 0:
        return lambda x: (w * torch.sin(x)).sum() + (x**3).sum() / 3
    if kind == 1:
        return lambda x: torch.logsumexp((w * x).reshape(-1), dim=0) + (x**3).sum() / 6
    return lambda x: (x**2).sum() * torch.tanh((w * x).sum()) + torch.exp(0.5 * x).sum()


def _cases(r: Rand) -> Case:
    shape = small_shape(r)
    if len(shape) == 1:
        shape = (min(shape[0], 8),)
    return Case((_scalar_fn(r, shape), r.randn(*shape, dtype=torch.float64), r.choice([1e-2, 5e-3])))


def _fixed_fn(x: torch.Tensor) -> torch.Tensor:
    w = torch.arange(1.0, x.numel() + 1, dtype=x.dtype).reshape(x.shape)
    return (x**3).sum() / 3 + (torch.sin(x) * w).sum()


_EDGE_CASES = [
    Case((_fixed_fn, torch.tensor([[0.5, -1.0, 2.0], [1.5, -0.5, 0.25]], dtype=torch.float64), 1e-2),
         label="fn(x) = sum(x³)/3 + sum(sin(x)·[1..6]) on a 2x3 x, eps = 0.01"),
    # "1-D or 2-D": also one element, and a transposed (non-contiguous) 2-D x
    Case((_fixed_fn, torch.tensor([0.7], dtype=torch.float64), 5e-3), label="a 1-D x with one element, eps = 0.005"),
    # (no transposed x: this exercise is about central differences; memory layout is
    # lesson 01's, and the hint's `.view(-1)` on `zeros_like(x)` would refuse one)
]


# --- run and probes
def _run(answer: Any, case: Case) -> Any:
    fn, x, eps = case.args
    before = x.clone()
    out = answer(fn, x, eps)
    if not torch.equal(x, before):
        raise Incorrect("mutated_input")
    if answer is not finite_difference_grad and isinstance(out, torch.Tensor) and out.shape == x.shape:
        # the exact gradient to float64 precision (1e-12) is evidence of autograd; a five-point
        # stencil or a tiny step is only close to it (1e-8..1e-10) and is reported as wrong values
        exact = _with_autograd(fn, before, eps)
        if close(out, exact, 1e-12, 1e-13) and not close(out, finite_difference_grad(fn, before, eps), 1e-7, 1e-9):
            raise Incorrect("used_autograd")
    return out


# --- wrong answers
def _by_element(difference):
    """A loop over the elements of x whose i-th gradient is ``difference(fn, x, step, eps)``."""
    def answer(fn, x, eps):
        grad = torch.zeros_like(x)
        for i in range(x.numel()):
            step = torch.zeros_like(x)
            step.view(-1)[i] = eps
            grad.view(-1)[i] = difference(fn, x, step, eps)
        return grad
    return answer


def _nudge_in_place(fn, x, eps):
    grad = torch.zeros_like(x)
    flat = x.view(-1)
    for i in range(x.numel()):
        flat[i] += eps
        up = fn(x)
        flat[i] -= 2 * eps
        down = fn(x)
        grad.view(-1)[i] = (up - down) / (2 * eps)
    return grad


def _with_autograd(fn, x, eps):
    with torch.enable_grad():
        x = x.detach().requires_grad_()
        return torch.autograd.grad(fn(x), x)[0]


# --- declaration
register(Exercise(
    lesson=LESSON, name="finite_difference_grad", title="A finite-difference gradient checker",
    reference=finite_difference_grad, cases=_cases, edge_cases=_EDGE_CASES, run=_run,
    # central differences agree with each other to ~1e-13 in float64; forward differences and
    # the exact (autograd) gradient differ from them by ~1e-4 and ~1e-5
    compare=Compare(rtol=1e-7, atol=1e-9),
    timeout=5.0,
    mistakes=[
        Mistake("forward_difference",
                "You used the one-sided difference (f(x+eps) − f(x)) / eps. Its error shrinks only "
                "like eps; use the central difference (f(x+eps) − f(x−eps)) / (2·eps), whose error "
                "shrinks like eps².",
                _by_element(lambda fn, x, step, eps: (fn(x + step) - fn(x)) / eps)),
        Mistake("wrong_denominator",
                "Your values are twice too large: the two nudged points are 2·eps apart, so divide "
                "by 2·eps.",
                _by_element(lambda fn, x, step, eps: (fn(x + step) - fn(x - step)) / eps)),
        Mistake("nudged_all_at_once",
                "You nudged every element at once, which measures the slope along the all-ones "
                "direction (one number), not each partial derivative. Nudge one element at a time.",
                lambda fn, x, eps: torch.full_like(x, float((fn(x + eps) - fn(x - eps)) / (2 * eps)))),
        Mistake("mutated_input",
                "Your function left `x` changed: after nudging an element you did not put it back "
                "exactly. Build the nudged inputs as new tensors (`x + step`, `x - step` with a "
                "`step` that is eps at one position and 0 elsewhere) and leave `x` alone.",
                _nudge_in_place, match_output=False),
        Mistake("used_autograd",
                "Your result is the exact gradient (to float64 precision), not the central "
                "difference with the given `eps`: you used autograd, and this exercise builds the "
                "numerical check that autograd is tested against. Compute "
                "(fn(x + step) − fn(x − step)) / (2·eps) with the `eps` you are given.",
                _with_autograd, match_output=False),
    ],
    hints=[
        "Perturb one position at a time: nudge element i of x up by eps and down by eps, evaluate fn "
        "both times, and the central difference of the two values over 2·eps is the i-th partial "
        "derivative.",
        "Work on flat views (read about Tensor.view and numel) so the same loop handles 1-D and 2-D x, "
        "and write the results into a gradient tensor shaped like x.",
    ],
))
