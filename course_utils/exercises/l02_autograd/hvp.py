"""hvp: the Hessian-vector product H v of a scalar loss of a 1-D w, without building H.

The learner decides how to get a matrix-vector product out of two backward passes: H v is the
gradient of the slope g(w) · v (v held fixed), so the first gradient needs a graph of its own.
Subtle: the weights interact (H is not diagonal), so the sum trick of the lesson's x³ demo gives
H·1, and multiplying by v afterwards gives (H·1)·v; ``backward`` twice accumulates g + H v; a
difference of gradients at w ± εv is only close. The check watches where ``loss_fn`` is
evaluated and reads the code for a built Hessian or the library's own ``hvp``.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable

import torch

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, answer_grad_mode, register

from ...answers.l02_autograd import hvp
from ._kit import LESSON
from ._kit import close


# --- reference: imported above from course_utils/answers/l02_autograd.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases: losses whose weights interact (a Hessian with off-diagonal terms)
def _loss(r: Rand, n: int) -> Callable[[torch.Tensor], torch.Tensor]:
    m = r.integer(2, 5)
    A = r.randn(m, n)
    b = r.randn(m)
    u = r.randn(n)
    c = round(r.uniform(0.1, 0.5), 3)
    kind = r.integer(0, 2)
    if kind == 0:
        return lambda w: 0.5 * ((A.to(w.dtype) @ w - b.to(w.dtype)) ** 2).sum() + c * (w**4).sum()
    if kind == 1:
        return lambda w: torch.logsumexp(A.to(w.dtype) @ w, dim=0) + c * (w**2).sum()
    return lambda w: torch.tanh(w @ u.to(w.dtype)) * (w**2).sum() + c * torch.cos(w).sum()


def _cases(r: Rand) -> Case:
    n = r.integer(2, 6)
    return Case((_loss(r, n), r.randn(n), r.randn(n)))


def _coupled(w):
    return w[0] * w[1] + w[1] ** 3


def _bowl(w):
    M = torch.tensor([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]], dtype=w.dtype)
    return 0.5 * w @ M @ w + 0.1 * (w**4).sum()


_EDGE_CASES = [
    # H = [[0, 1], [1, 6 w1]]: H v is H's first column; the diagonal alone gives 0
    Case((_coupled, torch.tensor([1.0, 2.0]), torch.tensor([1.0, 0.0])),
         label="L(w) = w0·w1 + w1³ at w = (1, 2), v = (1, 0)"),
    Case((_bowl, torch.tensor([0.5, -0.2, 0.1]), torch.tensor([1.0, -2.0, 0.5])),
         label="L(w) = ½ wᵀMw + 0.1·Σw⁴ with M 3x3, v = (1, -2, 0.5)"),
    # a single weight: H v = L''(w) · v
    Case((lambda w: torch.sin(w).sum() * w.sum(), torch.tensor([0.7]), torch.tensor([3.0])),
         label="one weight, L(w) = w·sin(w), v = 3"),
    Case((_bowl, torch.tensor([1.0, 1.0, -1.0], dtype=torch.float64),
          torch.tensor([0.0, 2.0, -1.0], dtype=torch.float64)), label="float64 w and v with a zero in v"),
]


# --- run and probes
# computes the whole Hessian (or a Jacobian of the gradient); the library's one-call H v
# The library's H and H v (Exercise.forbid: seen however they are reached, an alias or getattr included)
_BUILDS_H = ("torch.autograd.functional.hessian", "torch.autograd.functional.jacobian", "torch.func.hessian",
             "torch.func.jacrev", "torch.func.jacfwd")
_LIBRARY = ("torch.autograd.functional.hvp", "torch.autograd.functional.vhp")
_RULE = {**{n.rpartition(".")[2]: "built_hessian" for n in _BUILDS_H},
         **{n.rpartition(".")[2]: "library_hvp" for n in _LIBRARY}}


def _watch(loss_fn, seen: list[torch.Tensor]):
    def watched(w):
        try:
            seen.append(torch.tensor(w.detach().tolist(), dtype=torch.float64))
        except Exception:  # noqa: BLE001 - a transform's wrapped tensor: where it points is unknown
            pass
        return loss_fn(w)
    return watched


def _run(answer: Any, case: Case) -> Any:
    loss_fn, w, v = case.args
    w_before, v_before = w.detach().clone(), v.detach().clone()
    seen: list[torch.Tensor] = []
    try:
        with answer_grad_mode():
            out = answer(_watch(loss_fn, seen), w, v)
    except RuntimeError as exc:
        msg = str(exc)
        if "does not require grad and does not have a grad_fn" in msg:
            raise Incorrect("forgot_create_graph") from None
        if "grad can be implicitly created only for scalar outputs" in msg:
            raise Incorrect("non_scalar_grad") from None
        raise
    for name, tensor, before in (("v", v, v_before), ("w", w, w_before)):
        if not torch.equal(tensor.detach(), before):
            raise Incorrect("mutated_input", name=name)
    if w.requires_grad or w.grad is not None:
        raise Incorrect("changed_caller_tensor")
    if any(p.shape != w_before.shape or not torch.equal(p, w_before.double()) for p in seen):
        raise Incorrect("finite_difference")
    if isinstance(out, torch.Tensor) and out.requires_grad and close(out, hvp(loss_fn, w, v), 1e-4, 1e-5):
        raise Incorrect("result_has_graph")
    return out


# --- wrong answers
def _grad(loss_fn, w):
    w = w.detach().requires_grad_()
    return w, torch.autograd.grad(loss_fn(w), w, create_graph=True)[0]


def _grad_of(scalar_of_g):
    """Differentiate a scalar made from the first gradient: the reference with another scalar."""
    def answer(loss_fn, w, v):
        w, g = _grad(loss_fn, w)
        return torch.autograd.grad(scalar_of_g(g, v), w)[0]
    return answer


def _no_create_graph(loss_fn, w, v):
    w = w.detach().requires_grad_()
    (g,) = torch.autograd.grad(loss_fn(w), w)
    return torch.autograd.grad((g * v).sum(), w)[0]


def _accumulating(loss_fn, w, v):
    w = w.detach().requires_grad_()
    loss_fn(w).backward(create_graph=True)
    (w.grad * v).sum().backward()
    return w.grad.detach()


def _keeps_graph(loss_fn, w, v):
    w, g = _grad(loss_fn, w)
    return torch.autograd.grad((g * v).sum(), w, create_graph=True)[0]


def _by_differences(loss_fn, w, v, eps=1e-3):
    grads = [_grad(loss_fn, w + s * eps * v)[1].detach() for s in (1, -1)]
    return (grads[0] - grads[1]) / (2 * eps)


# --- declaration
register(Exercise(
    lesson=LESSON, name="hvp", title="Curvature along a direction: a Hessian-vector product without building H",
    reference=hvp, cases=_cases, edge_cases=_EDGE_CASES, run=_run,
    forbid=_BUILDS_H + _LIBRARY, rule_mistake=_RULE,
    preload=("torch._dynamo",),  # torch.func's first use imports it: not on the clock
    compare=Compare(rtol=1e-4, atol=1e-5),
    mistakes=[
        Mistake("ignored_v",
                "Your result is H·1 (the sum of each row of H): you differentiated the *sum* of the "
                "gradient, which only works for a function acting on each weight separately. Here the "
                "weights interact, and the direction v matters.",
                _grad_of(lambda g, v: g.sum())),
        Mistake("diagonal_assumed",
                "Your result is (H·1) multiplied by v element by element: that equals H v only when "
                "H is diagonal (weights that do not interact, like x³). v has to enter *before* the "
                "second differentiation, not after it.",
                lambda loss_fn, w, v: _grad_of(lambda g, v: g.sum())(loss_fn, w, v) * v),
        Mistake("gradient_direction",
                "Your result is H g, the Hessian times the gradient itself (the derivative of the "
                "gradient's squared length): the direction to follow is v, not g.",
                _grad_of(lambda g, v: 0.5 * (g * g).sum())),
        Mistake("first_derivative",
                "You returned the gradient g, a first derivative. H v is a second derivative: what "
                "function of w has H v as its gradient?",
                lambda loss_fn, w, v: _grad(loss_fn, w)[1].detach()),
        Mistake("forgot_create_graph",
                "The first gradient has no graph of its own, so it cannot be differentiated again "
                "(\"element 0 of tensors does not require grad\"). The first pass must record how the "
                "gradient depends on w.",
                _no_create_graph, match_output=False),
        Mistake("non_scalar_grad",
                "You differentiated a vector (\"grad can be implicitly created only for scalar "
                "outputs\"). Which single number, built from the gradient and v, has H v as its "
                "gradient?",
                _grad_of(lambda g, v: g), match_output=False),
        Mistake("accumulated_grad",
                "Your result is g + H v: the second `backward()` added its gradient to the first one "
                "in `.grad` (gradients accumulate). Keep the two derivatives apart.",
                _accumulating),
        Mistake("finite_difference",
                "Your function evaluated the loss at points other than w (a difference of gradients "
                "at w ± εv?). That only approximates H v; the exercise asks for the exact product from "
                "autograd, at w itself.",
                _by_differences, match_output=False),
        Mistake("built_hessian",
                "Your function builds the whole Hessian (or the Jacobian of the gradient): n² numbers, "
                "what the exercise asks you to avoid. One more backward pass gives H v directly.",
                lambda loss_fn, w, v: torch.autograd.functional.hessian(loss_fn, w) @ v, match_output=False),
        Mistake("library_hvp",
                "Your function calls the library's Hessian-vector product: this exercise builds what "
                "it does, from `torch.autograd.grad`.",
                lambda loss_fn, w, v: torch.autograd.functional.hvp(loss_fn, w, v)[1], match_output=False),
        Mistake("changed_caller_tensor",
                "Your function changed the caller's `w`: afterwards it requires grad (or holds a "
                "`.grad`). Work on a fresh leaf that shares w's values.",
                lambda loss_fn, w, v: _grad_of(lambda g, v: (g * v).sum())(loss_fn, w.requires_grad_(), v),
                match_output=False),
        Mistake("mutated_input",
                "Your code changed `{name}` in place. Leave the caller's tensors as they were.",
                lambda loss_fn, w, v: _grad_of(lambda g, v: (g * v).sum())(loss_fn, w, v.mul_(2.0)) / 2,
                match_output=False),
        Mistake("result_has_graph",
                "Your result still requires grad: it carries an autograd graph. Only the first "
                "differentiation needs to record one.",
                _keeps_graph, match_output=False),
    ],
    hints=[
        "The gradient g(w) is itself a function of w, and so is g(w) · v for a fixed v. What is the "
        "gradient of that one number with respect to w?",
        "It is H v: the slope along v, differentiated once more. For that second differentiation to "
        "be possible, the first one must record a graph of its own (read about create_graph).",
    ],
))
