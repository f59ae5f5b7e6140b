"""vjp: the vector-Jacobian product vᵀJ of fn at x, with ``backward(gradient=v)``.

Subtle: an answer that turns on ``requires_grad`` on the caller's ``x`` and reads ``x.grad``
gives the right numbers once; a second call on the same tensor shows the accumulation. The
result must be a plain tensor (no graph), and ``v`` must be left as it was.
"""

from __future__ import annotations

from typing import Any

import torch

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, answer_grad_mode, register

from ...answers.l02_autograd import vjp
from ._kit import LESSON
from ._kit import close


# --- reference: imported above from course_utils/answers/l02_autograd.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases
def _cases(r: Rand) -> Case:
    n = r.integer(2, 6)
    m = r.choice([k for k in range(2, 7) if k != n])
    W = r.randn(m, n)
    b = r.randn(m)
    kind = r.integer(0, 2)
    if kind == 0:
        def fn(x):
            return torch.tanh(W @ x + b)
    elif kind == 1:
        def fn(x):
            return W @ (x**2) + b * x.sum()
    else:
        def fn(x):
            return torch.sin(W @ x) * x.sum()
    return Case((fn, r.randn(n), r.randn(m)))


_W32 = torch.tensor([[1.0, -2.0, 0.5], [0.0, 3.0, -1.0]])


def _fixed_linear(x):
    return _W32.to(x.dtype) @ x


def _fixed_nonlinear(x):
    return torch.stack([x[0] * x[1], torch.sin(x[1]) + x[0] ** 2, torch.exp(x[0])])


_EDGE_CASES = [
    # v not all ones (ignoring v must show), m = 2 < n = 3 (J @ v, J vs Jᵀ cannot broadcast)
    Case((_fixed_linear, torch.tensor([1.0, 2.0, 3.0]), torch.tensor([2.0, -1.0])),
         label="fn(x) = W x with W 2x3, v = (2, -1)"),
    # n = 2 < m = 3, nonlinear
    Case((_fixed_nonlinear, torch.tensor([0.5, -1.5]), torch.tensor([0.25, 3.0, -1.0])),
         label="fn(x) = (x0·x1, sin x1 + x0², exp x0), v = (0.25, 3, -1)"),
    # the caller's x is itself a leaf that requires grad (a parameter): it must keep no .grad
    Case((_fixed_linear, torch.tensor([0.5, -0.5, 2.0], requires_grad=True), torch.tensor([1.0, 4.0])),
         label="x that already requires grad"),
    Case((_fixed_linear, torch.tensor([1.0, 1.0, 1.0], dtype=torch.float64),
          torch.tensor([-3.0, 0.0], dtype=torch.float64)), label="float64 x and v with a zero in v"),
]


# --- run and probes
def _run(answer: Any, case: Case) -> Any:
    fn, x, v = case.args
    had_grad, required = x.grad, x.requires_grad  # a caller's x may be a leaf that requires grad
    x_before, v_before = x.detach().clone(), v.detach().clone()
    with answer_grad_mode():
        out = answer(fn, x, v)
        first = out.detach().clone() if isinstance(out, torch.Tensor) else out
        # both tensors are checked here, so the framework's own mutation check (whose message
        # this exercise's `mutated_input` replaces) never sees a changed input
        for name, tensor, before in (("v", v, v_before), ("x", x, x_before)):
            if not torch.equal(tensor.detach(), before):
                raise Incorrect("mutated_input", name=name)
        if isinstance(out, torch.Tensor) and out.requires_grad and close(out, vjp(fn, x, v), 1e-5, 1e-5):
            raise Incorrect("result_has_graph")
        if x.grad is not had_grad or x.requires_grad != required:
            # the answer worked on the caller's tensor: call again to see what a second call gives
            again = answer(fn, x, v)
            if isinstance(first, torch.Tensor) and isinstance(again, torch.Tensor) and not close(again, first):
                raise Incorrect("accumulated_grad")
            raise Incorrect("changed_caller_tensor")
    return first


# --- wrong answers
def _grad_of_sum(fn, x, v):
    return vjp(fn, x, torch.ones_like(v))


def _on_callers_x(fn, x, v):
    x.requires_grad_()
    fn(x).backward(v)
    return x.grad


def _keeps_graph(fn, x, v):
    x = x.detach().requires_grad_()
    return torch.autograd.grad(fn(x), x, v, create_graph=True)[0]


def _scales_v_in_place(fn, x, v):
    v /= v.norm()
    return vjp(fn, x, v * v.norm())


# --- declaration
register(Exercise(
    lesson=LESSON, name="vjp", title="A vector-Jacobian product with backward(gradient=v)",
    reference=vjp, cases=_cases, edge_cases=_EDGE_CASES, run=_run,
    compare=Compare(rtol=1e-5, atol=1e-5),
    mistakes=[
        Mistake("ignored_v",
                "Your result is the gradient of `y.sum()`, i.e. vᵀJ with v = all ones. Weight the "
                "outputs by v: `y.backward(gradient=v)` (or `torch.autograd.grad(y, x, v)`).",
                _grad_of_sum),
        Mistake("returned_jacobian",
                "You returned the whole Jacobian J (one row per output). The exercise asks for "
                "vᵀJ: one number per input element, shaped like x. Multiply `v @ J`, or better, let "
                "backward compute it without building J.",
                lambda fn, x, v: torch.autograd.functional.jacobian(fn, x)),
        Mistake("accumulated_grad",
                "Calling your function twice on the same tensor gives a different answer the "
                "second time: you turned on `requires_grad` on the caller's `x` and read "
                "`x.grad`, which accumulates across calls. Work on a fresh leaf, "
                "`x = x.detach().requires_grad_()`, or use `torch.autograd.grad(y, x, v)`.",
                _on_callers_x, match_output=False),
        Mistake("changed_caller_tensor",
                "Your function changed the caller's tensor `x`: afterwards it requires grad or "
                "holds a `.grad`. Work on a fresh leaf, `x = x.detach().requires_grad_()`.",
                match_output=False),
        Mistake("result_has_graph",
                "Your result still requires grad: it carries an autograd graph (did you pass "
                "`create_graph=True`, or return something computed from `x`?). vᵀJ is a plain tensor: "
                "`x.grad`, or `torch.autograd.grad(y, x, v)[0]`.",
                _keeps_graph, match_output=False),
        Mistake("mutated_input",
                "Your code changed `{name}` in place. Leave the caller's tensors as they were: "
                "`y.backward(gradient=v)` reads v without changing it, and a fresh leaf "
                "`x.detach().requires_grad_()` shares `x`'s memory, so do not change it in place either.",
                _scales_v_in_place, match_output=False),
    ],
    hints=[
        "y = fn(x) is a vector, so backward() alone raises \"grad can be implicitly created only for "
        "scalar outputs\". What does backward's gradient argument mean for a non-scalar output?",
        "Start from a detached leaf copy of x that requires grad, backpropagate from y with v as its "
        "gradient, and the vector-Jacobian product is then in x.grad.",
    ],
))
