"""gradient_descent: ``num_steps`` steps x ← x − lr · ∇fn(x) by hand, with ``backward()``.

Subtle: the check watches every point the loop evaluates ``fn`` at and recognises the step rule
(uphill steps, gradients never cleared and so summed, updates recorded in the graph); the
caller's ``x0`` must stay as it was, and the result must not require grad.
"""

from __future__ import annotations

from typing import Any

import torch

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, answer_grad_mode, register

from .._source_rules import names_used
from ...answers.l02_autograd import gradient_descent
from ._kit import LESSON
from ._kit import close

_RULE = "take `num_steps` steps x ← x − lr · ∇fn(x) using `backward()`"


# --- reference: imported above from course_utils/answers/l02_autograd.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases
def _cases(r: Rand) -> Case:
    d = r.integer(1, 4)
    a = r.rand(d) * 1.5 + 0.5
    c = r.randn(d)
    b = round(r.uniform(0.0, 0.5), 3)

    def fn(x):
        return (a * (x - c) ** 2).sum() + b * torch.sin(3 * x).sum()

    return Case((fn, r.randn(d) * 2, round(r.uniform(0.02, 0.2), 3), r.integer(3, 15)))


def _quadratic(x):
    return (x**2).sum()


def _fixed_fn(x):
    return ((x - 1) ** 2).sum() + 0.3 * torch.sin(3 * x).sum()


_EDGE_CASES = [
    Case((_quadratic, torch.tensor([3.0, -2.0]), 0.25, 4), label="f(x) = sum(x²) from (3, -2), lr 0.25, 4 steps"),
    # one step exactly: an off-by-one loop shows; the sin term makes the steps differ
    Case((_fixed_fn, torch.tensor([1.5]), 0.1, 1), label="a 1-D x0 with one element, 1 step"),
    Case((_fixed_fn, torch.tensor([0.5, -1.0, 2.0]), 0.05, 7),
         label="f(x) = sum((x-1)² + 0.3·sin 3x) from (0.5, -1, 2), lr 0.05, 7 steps"),
    # no step at all: the result is (a copy of) x0, without a graph
    Case((_fixed_fn, torch.tensor([2.0, -3.0]), 0.1, 0), label="num_steps = 0"),
]


# --- run and probes
def _grad_at(fn, point: torch.Tensor) -> torch.Tensor | None:
    try:
        with torch.enable_grad():
            p = point.detach().clone().requires_grad_(True)
            (g,) = torch.autograd.grad(fn(p), p)
        return g
    except Exception:  # noqa: BLE001 - a point we cannot differentiate at says nothing
        return None


def _diagnose_steps(fn, points: list[torch.Tensor], lr: float) -> None:
    """Recognise the update rule from consecutive points the learner evaluated fn at."""
    pts: list[torch.Tensor] = []
    for p in points:
        if not pts or not (p.shape == pts[-1].shape and torch.equal(p, pts[-1])):
            pts.append(p)
    total = None
    for k in range(min(len(pts) - 1, 5)):  # the rules differ from the first or second step on
        g = _grad_at(fn, pts[k])
        if g is None or pts[k + 1].shape != g.shape:
            return
        total = g if total is None else total + g
        step = pts[k + 1] - pts[k]
        if close(step, -lr * g, 1e-3, 1e-5):
            continue
        if close(step, lr * g, 1e-3, 1e-5):
            raise Incorrect("wrong_sign")
        if k >= 1 and close(step, -lr * total, 1e-3, 1e-5):
            raise Incorrect("grad_not_cleared")
        return  # some other rule: the comparison of the final x reports it


def _run(answer: Any, case: Case) -> Any:
    fn, x0, lr, num_steps = case.args
    seen: list[tuple[torch.Tensor, bool]] = []

    def watched(x):
        if isinstance(x, torch.Tensor):
            seen.append((x.detach().clone(), x.grad_fn is not None))
        return fn(x)

    with answer_grad_mode():
        out = answer(watched, x0, lr, num_steps)
    if x0.requires_grad or x0.grad is not None:
        raise Incorrect("mutated_input")
    if any(tracked for _, tracked in seen) or (isinstance(out, torch.Tensor) and out.grad_fn is not None):
        raise Incorrect("update_tracked")
    _diagnose_steps(fn, [p for p, _ in seen], lr)
    if isinstance(out, torch.Tensor) and out.requires_grad:
        raise Incorrect("returned_requires_grad")
    if answer is not gradient_descent and num_steps > 0 and names_used(answer, {"backward", "step"}) is None:
        raise Incorrect("no_backward")
    return out


# --- wrong answers
def _by_hand(sign=-1, clear=True, start="clone", finish="detach"):
    """The reference's loop with one thing changed: the update's sign, clearing ``.grad``,
    starting from ``x0`` itself, or returning the leaf."""
    def answer(fn, x0, lr, num_steps):
        x = x0.clone().requires_grad_(True) if start == "clone" else x0.requires_grad_(True)
        for _ in range(num_steps):
            fn(x).backward()
            with torch.no_grad():
                x += sign * lr * x.grad
            if clear:
                x.grad = None
        return x.detach().clone() if finish == "detach" else x
    return answer


def _tracked(fn, x0, lr, num_steps):
    x = x0.clone().requires_grad_(True)
    for _ in range(num_steps):
        x.retain_grad()
        fn(x).backward()
        x = x - lr * x.grad
    return x


def _autograd_grad(fn, x0, lr, num_steps):
    x = x0.clone()
    for _ in range(num_steps):
        x = x.detach().requires_grad_()
        (g,) = torch.autograd.grad(fn(x), x)
        x = (x - lr * g).detach()
    return x


# --- declaration
register(Exercise(
    lesson=LESSON, name="gradient_descent", title="Gradient descent by hand: backward, no_grad update, clear",
    reference=gradient_descent, cases=_cases, edge_cases=_EDGE_CASES, run=_run,
    # `torch.optim.SGD(...)` (a valid answer) imports torch._dynamo on first construction:
    # seconds on a busy machine, which must not count against the learner's time limit
    preload=("torch._dynamo",),
    compare=Compare(rtol=1e-4, atol=1e-5),
    mistakes=[
        Mistake("update_tracked",
                "Your update is recorded in the autograd graph: `x = x - lr * x.grad` makes a new "
                "non-leaf tensor whose history grows with every step (memory and time grow, and "
                "gradients would flow through the updates). Update the leaf in place without "
                "tracking: `with torch.no_grad(): x -= lr * x.grad`.",
                _tracked, match_output=False),
        Mistake("grad_not_cleared",
                "Each of your steps uses the sum of all gradients so far: `.grad` accumulates "
                "across `backward()` calls and your loop never clears it. After the update, "
                "`x.grad.zero_()` (or `x.grad = None`).",
                _by_hand(clear=False), match_output=False),
        Mistake("wrong_sign",
                "Your steps go uphill: you added `lr * grad`. The gradient points towards "
                "increasing f; gradient *descent* subtracts it: `x -= lr * x.grad`.",
                _by_hand(sign=1), match_output=False),
        Mistake("mutated_input",
                "Your loop changed the caller's `x0`: you called `requires_grad_()` on it, or updated it "
                "in place (`x0.detach()` shares `x0`'s memory, so updating that changes `x0` too). Start "
                "from a copy: `x = x0.clone().requires_grad_()`.",
                _by_hand(start="x0"), match_output=False),
        Mistake("returned_requires_grad",
                "You returned `x` itself, a leaf that still requires grad (and holds a `.grad`): everything "
                "computed from it afterwards is recorded by autograd. Return the final point without a "
                "graph: `x.detach()`.",
                _by_hand(finish="leaf"), match_output=False),
        Mistake("no_backward",
                f"The exercise says: “{_RULE}”. Your loop never calls `backward()` (with "
                "`torch.autograd.grad`, `torch.func` or a derivative worked out by hand it skips what this "
                "exercise practises): `fn(x).backward()`, then read `x.grad`.",
                _autograd_grad, match_output=False),
    ],
    hints=[
        "You need a leaf tensor that requires grad, separate from x0, so the caller's tensor is never "
        "changed. Each step is: compute the loss, backpropagate, update, clear the gradient.",
        "The update itself must not be recorded in the graph (read about torch.no_grad), and .grad "
        "accumulates unless you zero it. Return a tensor with no graph attached (read about detach).",
    ],
))
