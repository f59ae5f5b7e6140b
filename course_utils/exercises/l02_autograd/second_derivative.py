"""second_derivative: f''(x) of an element-wise fn, with ``torch.autograd.grad`` twice.

Subtle: the first gradient needs ``create_graph=True`` to be differentiated again; ``backward``
twice accumulates f' + f'' in ``.grad``; the result must not keep a graph, the caller's x must
not be changed, and a finite difference or a formula is not what the exercise practises.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable

import torch

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, answer_grad_mode, register

from .._source_rules import names_used
from ...answers.l02_autograd import second_derivative
from ._kit import LESSON
from ._kit import close, small_shape


# --- reference: imported above from course_utils/answers/l02_autograd.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases
def _elementwise_fn(r: Rand) -> Callable[[torch.Tensor], torch.Tensor]:
    a = round(r.uniform(0.5, 1.5), 3)
    kind = r.integer(0, 4)
    if kind == 0:
        return lambda x: a * x**3 - 2 * x
    if kind == 1:
        return lambda x: torch.sin(a * x) * x
    if kind == 2:
        return lambda x: torch.exp(-a * x**2)
    if kind == 3:
        return lambda x: torch.tanh(a * x)
    return lambda x: x**2 * torch.cos(a * x)


_EDGE_CASES = [
    Case((lambda x: x**3, torch.tensor([-2.0, 0.0, 1.0, 3.0])), label="f(x) = x³ at -2, 0, 1, 3"),
    Case((lambda x: x * torch.sin(x), torch.tensor([[0.5, -1.0, 2.0], [3.0, -2.5, 1.0]])),
         label="f(x) = x·sin(x) on a 2x3 x"),
    Case((torch.tanh, torch.tensor(0.7)), label="f = tanh on a 0-d x = 0.7"),
    Case((lambda x: torch.exp(-x**2), torch.linspace(-2.0, 2.0, 8).reshape(2, 2, 2)),
         label="f(x) = exp(-x²) on a 2x2x2 x"),
    Case((lambda x: x**4 / 12, torch.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=torch.float64).T),
         label="f(x) = x⁴/12 on a transposed (non-contiguous) float64 x"),
]


# --- run and probes
_AUTOGRAD_NAMES = {"grad", "backward", "hessian", "jacobian", "func", "vmap", "jvp", "vjp", "hvp"}


def _run(answer: Any, case: Case) -> Any:
    fn, x = case.args
    try:
        with answer_grad_mode():
            out = answer(*case.args)
        if x.requires_grad or x.grad is not None:
            raise Incorrect("changed_caller_tensor")
        if answer is not second_derivative and names_used(answer, _AUTOGRAD_NAMES) is None:
            raise Incorrect("no_autograd")
        if isinstance(out, torch.Tensor) and out.requires_grad and close(out, second_derivative(fn, x), 1e-4, 1e-5):
            raise Incorrect("result_has_graph")
        return out
    except RuntimeError as exc:
        msg = str(exc)
        if "does not require grad and does not have a grad_fn" in msg:
            raise Incorrect("forgot_create_graph") from None
        if "grad can be implicitly created only for scalar outputs" in msg:
            raise Incorrect("non_scalar_grad") from None
        raise


# --- wrong answers
def _first_derivative(fn, x, create_graph=False):
    x = x.detach().requires_grad_()
    return x, torch.autograd.grad(fn(x).sum(), x, create_graph=create_graph)[0]


def _no_create_graph(fn, x):
    x, d1 = _first_derivative(fn, x)
    return torch.autograd.grad(d1.sum(), x)[0]


def _non_scalar(fn, x):
    x, d1 = _first_derivative(fn, x, create_graph=True)
    return torch.autograd.grad(d1, x)[0]


def _accumulating(fn, x):
    x = x.detach().requires_grad_(True)
    fn(x).sum().backward(create_graph=True)
    x.grad.sum().backward()
    return x.grad


def _on_callers_x(fn, x):
    x.requires_grad_()
    (d1,) = torch.autograd.grad(fn(x).sum(), x, create_graph=True)
    return torch.autograd.grad(d1.sum(), x)[0]


def _central_difference(fn, x):
    h = 1e-3
    return ((fn(x.double() + h) - 2 * fn(x.double()) + fn(x.double() - h)) / h**2).to(x.dtype)


def _keeps_graph(fn, x):
    x, d1 = _first_derivative(fn, x, create_graph=True)
    return torch.autograd.grad(d1.sum(), x, create_graph=True)[0]


# --- declaration
register(Exercise(
    lesson=LESSON, name="second_derivative", title="Second derivatives with torch.autograd.grad",
    reference=second_derivative,
    cases=lambda r: Case((_elementwise_fn(r), r.randn(*small_shape(r)) * 1.5)),
    edge_cases=_EDGE_CASES, run=_run,
    compare=Compare(rtol=1e-4, atol=1e-5),
    mistakes=[
        Mistake("forgot_create_graph",
                "The first derivative has no graph of its own, so it cannot be differentiated "
                "again (\"element 0 of tensors does not require grad\"). Ask for one: "
                "`torch.autograd.grad(..., create_graph=True)` for the first derivative.",
                _no_create_graph, match_output=False),
        Mistake("non_scalar_grad",
                "`torch.autograd.grad` of a non-scalar raised \"grad can be implicitly created only "
                "for scalar outputs\". Because f works element by element, differentiating the "
                "*sum* of the first derivative gives every element's second derivative "
                "(or pass `grad_outputs=torch.ones_like(...)`).",
                _non_scalar, match_output=False),
        Mistake("first_derivative",
                "You returned the first derivative. Differentiate it once more: the first "
                "`torch.autograd.grad(..., create_graph=True)` result is itself a function of x.",
                lambda fn, x: _first_derivative(fn, x)[1]),
        Mistake("accumulated_grad",
                "Your result is f' + f'': the second `backward()` added its gradient to the first "
                "one in `x.grad` (gradients accumulate). Use `torch.autograd.grad`, which returns "
                "gradients instead of adding them to `.grad`.",
                _accumulating),
        Mistake("changed_caller_tensor",
                "Your function changed the caller's `x`: afterwards it requires grad (or holds a "
                "`.grad`). The text says x arrives without `requires_grad`; work on a fresh leaf: "
                "`x = x.detach().requires_grad_()`.",
                _on_callers_x, match_output=False),
        Mistake("no_autograd",
                "This exercise is “Second derivatives with torch.autograd.grad”: your function never "
                "calls autograd (a finite difference or a formula instead?). Use "
                "`torch.autograd.grad(..., create_graph=True)` twice.",
                _central_difference, match_output=False),
        Mistake("result_has_graph",
                "Your result still requires grad: it carries an autograd graph. Only the *first* "
                "`torch.autograd.grad` needs `create_graph=True`; the second one returns a plain "
                "tensor (or return `.detach()`).",
                _keeps_graph, match_output=False),
    ],
    hints=[
        "torch.autograd.grad returns a tuple of gradients. Can you differentiate a gradient again? Only "
        "if the first call recorded a graph for it.",
        "Start from a detached copy of x that requires grad. Take the first derivative with create_graph "
        "switched on, then differentiate that result (summed to a scalar) once more with respect to x.",
    ],
))
