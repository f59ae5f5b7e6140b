"""dfdx: the derivative of softplus, f(x) = log(1 + eˣ), by hand, checked against autograd.

The learner decides which of the algebraically equal forms of f' = eˣ / (1 + eˣ) stays finite in
float32 for |x| up to 100 (eˣ overflows at x ≈ 89, and inf / inf is NaN); the chain rule gives
the formula. Subtle: the answer must not use autograd itself; it runs under ``torch.no_grad()`` (autograd
fails there) and its code is read for the names that compute a derivative (``torch.func``
ignores an outer ``no_grad``, and an answer may switch grad mode back on).
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
import torch.nn.functional as F

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register

from ...answers.l02_autograd import dfdx as notebook_dfdx
from ._kit import LESSON
from ._kit import small_shape


# --- reference
def f(x: torch.Tensor) -> torch.Tensor:
    """The function of exercise 1: softplus, f(x) = log(1 + eˣ), element by element."""
    return F.softplus(x)


def dfdx_by_autograd(x: torch.Tensor) -> torch.Tensor:
    """What the learner's formula is checked against: autograd's derivative of f."""
    with torch.enable_grad():
        x = x.detach().clone().requires_grad_(True)
        (grad,) = torch.autograd.grad(f(x).sum(), x)
    return grad


# what solution() shows: the notebook's formula (the check compares it with autograd's derivative)
_SOLUTION = inspect.getsource(notebook_dfdx)


# --- cases
_EDGE_CASES = [
    Case((torch.tensor([-100.0, -20.0, -1.0, 0.0, 1.0, 20.0, 100.0]),), label="x from -100 to 100",
         show_inputs=True),
    Case((torch.tensor([[0.5, -1.0, 2.0], [3.0, -2.5, 1.0]]),), label="a 2x3 x"),
    # "a float tensor x of any shape": a 0-d one, an empty one, a 3-D one, float64
    Case((torch.tensor(95.0),), label="a 0-d x (a single number): 95", show_inputs=True),
    Case((torch.zeros(0),), label="an empty x"),
    Case((torch.linspace(-60.0, 60.0, 12).reshape(2, 3, 2),), label="a 2x3x2 x from -60 to 60"),
    Case((torch.tensor([0.3, -1.7, 2.9, 100.0], dtype=torch.float64),), label="a float64 x", show_inputs=True),
]


def _cases(r: Rand) -> Case:
    scale = r.choice([1.0, 3.0, 40.0])  # 40: some |x| beyond 89, where eˣ overflows float32
    return Case((r.randn(*small_shape(r)) * scale,))


# --- run and probes
# What computes a derivative (Exercise.forbid): seen however it is reached, an alias or getattr included.
# Not `enable_grad`/`set_grad_enabled`: switching grad mode on or off computes nothing (a formula under
# `set_grad_enabled(False)` is right).
_AUTOGRAD = ("torch.autograd.grad", "torch.autograd.backward", "Tensor.backward",
             "torch.autograd.functional.jacobian", "torch.autograd.functional.vjp", "torch.autograd.functional.jvp",
             "torch.autograd.functional.hessian", "torch.autograd.functional.vhp", "torch.autograd.functional.hvp",
             "torch.func.grad", "torch.func.grad_and_value", "torch.func.vjp", "torch.func.jvp", "torch.func.jacrev",
             "torch.func.jacfwd", "torch.func.hessian", "course_utils.exercises.l02_autograd.dfdx.dfdx_by_autograd")


def _run(answer: Any, case: Case) -> Any:
    """The answer runs under ``torch.no_grad()``: a formula does not care, autograd fails. An
    answer that turns grad mode back on, or uses ``torch.func`` (which ignores an outer
    ``no_grad``), calls one of :data:`_AUTOGRAD`, which the exercise's rule sees."""
    try:
        with torch.no_grad():
            return answer(*case.args, **case.kwargs)
    except RuntimeError as exc:
        if "does not require grad and does not have a grad_fn" in str(exc):
            raise Incorrect("used_autograd") from None
        raise


# --- wrong answers
def _with_backward(x):
    x = x.detach().requires_grad_()
    F.softplus(x).sum().backward()
    return x.grad


# --- declaration
register(Exercise(
    lesson=LESSON, name="dfdx", title="The derivative of softplus by hand, finite in float32 for |x| up to 100",
    reference=dfdx_by_autograd,
    solution=_SOLUTION,
    cases=_cases,
    edge_cases=_EDGE_CASES,
    run=_run,
    forbid=_AUTOGRAD, rule_mistake="used_autograd",
    preload=("torch._dynamo",),  # torch.func's first use imports it: not on the clock
    # values in [0, 1]: forms of the same formula differ by a few ulp; every mistake is off by far more
    compare=Compare(rtol=1e-5, atol=1e-6),
    mistakes=[
        Mistake("nan",
                "Your derivative is NaN where it should be a number. For large x, eˣ overflows float32 "
                "(e¹⁰⁰ is inf), and inf / inf (or 0 · inf) is NaN. The same formula can be written so that "
                "no overflowed number is ever divided or multiplied: which form stays finite?",
                lambda x: torch.exp(x) / (1 + torch.exp(x)), match_output=False),
        Mistake("missing_inner_derivative",
                "You have the outer derivative only, 1 / (1 + eˣ): log(u)' is u' / u, and the inner "
                "u = 1 + eˣ has a derivative of its own (the chain rule).",
                lambda x: 1 / (1 + torch.exp(x))),
        Mistake("missing_outer_derivative",
                "You differentiated only the inside, 1 + eˣ: the outer log contributes a factor of its "
                "own (the chain rule: log(u)' is u' / u).",
                torch.exp),
        Mistake("returned_f",
                "You returned softplus itself, not its derivative.",
                F.softplus),
        Mistake("used_autograd",
                "The exercise says: “worked out by hand (no autograd)”, but your function uses "
                "autograd (`backward()`, `torch.autograd.grad`, `torch.func`...). Apply the chain rule "
                "and write the derivative with tensor operations.",
                _with_backward, match_output=False),
    ],
    hints=[
        "f is log of something: the chain rule gives the derivative of log(u) times the derivative of u. "
        "What do you get, and what happens to each piece at x = 100 in float32?",
        "eˣ / (1 + eˣ) overflows for large x. Dividing the top and the bottom by eˣ gives the same number "
        "with e to a negative power, which can only underflow harmlessly to 0. Is that a function torch "
        "already has?",
    ],
))
