"""dfdx: the derivative of f(x) = x² · sin(x), written as a formula and checked against autograd.

Subtle: the answer must not use autograd itself; it runs under ``torch.no_grad()`` (autograd
fails there) and its code is read for the names that compute a derivative (``torch.func``
ignores an outer ``no_grad``, and an answer may switch grad mode back on).
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, register

from .._source_rules import names_used
from ...answers.l02_autograd import dfdx as notebook_dfdx
from ._kit import LESSON
from ._kit import small_shape


# --- reference
def f(x: torch.Tensor) -> torch.Tensor:
    """The function of exercise 1: f(x) = x² · sin(x), element by element."""
    return x**2 * torch.sin(x)


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
    Case((torch.tensor([0.0, 1.5707964, 3.1415927, -2.0]),), label="0, π/2, π and -2", show_inputs=True),
    Case((torch.tensor([[0.5, -1.0, 2.0], [3.0, -2.5, 1.0]]),), label="a 2x3 x"),
    # "a tensor x of any shape": a 0-d one (math.sin works on it, returning a float),
    # an empty one, a 3-D one, float64, and large values
    Case((torch.tensor(1.25),), label="a 0-d x (a single number)", show_inputs=True),
    Case((torch.zeros(0),), label="an empty x"),
    Case((torch.linspace(-4.0, 4.0, 12).reshape(2, 3, 2),), label="a 2x3x2 x"),
    Case((torch.tensor([0.3, -1.7, 2.9], dtype=torch.float64),), label="a float64 x", show_inputs=True),
    Case((torch.tensor([-40.0, 25.0, 60.5]),), label="large values", show_inputs=True),
]


# --- run and probes
# Names that compute a derivative. Not `enable_grad`/`set_grad_enabled`: switching grad mode on
# or off computes nothing (a formula under `set_grad_enabled(False)` is right), and an answer that
# switches it on to differentiate still needs `backward`, `grad` or `autograd`.
_AUTOGRAD_NAMES = {"backward", "grad", "autograd", "func", "requires_grad_",
                   "jacobian", "vjp", "jvp", "hessian", "dfdx_by_autograd", "reference", "vmap"}


def _run(answer: Any, case: Case) -> Any:
    """The answer runs under ``torch.no_grad()``: a formula does not care, autograd fails. An
    answer that turns grad mode back on, or uses ``torch.func`` (which ignores an outer
    ``no_grad``), is caught by the names its code uses."""
    if answer is not dfdx_by_autograd:
        if names_used(answer, _AUTOGRAD_NAMES) is not None:
            raise Incorrect("used_autograd")
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
    (x**2 * torch.sin(x)).sum().backward()
    return x.grad


# --- declaration
register(Exercise(
    lesson=LESSON, name="dfdx", title="Differentiate f(x) = x² sin(x) by hand, checked against autograd",
    reference=dfdx_by_autograd,
    solution=_SOLUTION,
    cases=lambda r: Case((r.randn(*small_shape(r)) * 3,)),
    edge_cases=_EDGE_CASES,
    run=_run,
    # float32: the formula and autograd's (2x·sin x + x²·cos x, summed in another order) differ
    # by a few ulp of the largest term (x² ≈ 3600 at x = 60: ulp 2.4e-4 → rtol 1e-5 of |f'|
    # ≈ 3600 is 3.6e-2, far above); every mistake is off by at least one whole term
    compare=Compare(rtol=1e-5, atol=1e-5),
    mistakes=[
        Mistake("forgot_product_rule",
                "You multiplied the two derivatives (2x · cos x). For a product u·v the derivative "
                "is u'·v + u·v' (the product rule).",
                lambda x: 2 * x * torch.cos(x)),
        Mistake("missing_term",
                "You have only one of the two product-rule terms. f = u·v with u = x², v = sin x "
                "gives f' = u'·v + u·v': add the term with cos(x).",
                lambda x: 2 * x * torch.sin(x)),
        Mistake("sign_error",
                "Check the sign: the derivative of sin(x) is +cos(x) (it is the derivative of "
                "cos(x) that is −sin(x)).",
                lambda x: 2 * x * torch.sin(x) - x**2 * torch.cos(x)),
        Mistake("used_autograd",
                "The exercise says: “computed with a formula (no autograd)”, but your function uses "
                "autograd (`backward()`, `torch.autograd.grad`, `torch.func`...). Apply the product rule "
                "and write the derivative with `torch.sin` and `torch.cos`.",
                _with_backward, match_output=False),
    ],
    hints=[
        "f(x) = x² · sin(x) is a product: use the product rule (u·v)' = u'·v + u·v'.",
        "u = x², u' = 2x; v = sin(x), v' = cos(x). Write the result with torch.sin and torch.cos; "
        "it works element by element on any shape.",
    ],
))
