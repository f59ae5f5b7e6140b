"""gradient_descent: an inverse problem, the input x that makes a trained model predict a target.

The learner decides what to differentiate and what to leave alone: the model's weights require
grad (a training loop owns them, some already hold a ``.grad``), so ``backward()`` would add to
their gradients and clearing them would erase the loop's; x is the only leaf to move. The check
watches every input the loop feeds the model and recognises the step rule (uphill, x's gradients
never cleared, the squared errors averaged, updates recorded in the graph), then compares the
weights' values and ``.grad`` with what the caller handed in.
"""

from __future__ import annotations

from typing import Any

import torch

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, answer_grad_mode, register

from ...answers.l02_autograd import gradient_descent
from ._kit import LESSON
from ._kit import close


# --- reference: imported above from course_utils/answers/l02_autograd.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases: a small trained model, W2·tanh(W1·x + b1) + b2, whose weights require grad
def predict(x, weights):
    W1, b1, W2, b2 = weights
    return W2 @ torch.tanh(W1 @ x + b1) + b2


def _cases(r: Rand) -> Case:
    d, h, m = r.integer(1, 4), r.integer(2, 6), r.integer(1, 3)
    weights = [r.randn(h, d) * 0.8, r.randn(h) * 0.3, r.randn(m, h) * 0.6, r.randn(m) * 0.3]
    grads = [r.randn(*w.shape) if r.integer(0, 2) else None for w in weights]  # the training loop's
    target = predict(r.randn(d), weights)
    return Case((predict, (weights, grads), target, r.randn(d), round(r.uniform(0.02, 0.15), 3), r.integer(3, 15)))


def _fixed(d: int, h: int, m: int, with_grads: bool) -> tuple[list[torch.Tensor], list[torch.Tensor | None]]:
    g = torch.Generator().manual_seed(d * 100 + h * 10 + m)
    weights = [torch.randn(h, d, generator=g) * 0.8, torch.randn(h, generator=g) * 0.3,
               torch.randn(m, h, generator=g) * 0.6, torch.randn(m, generator=g) * 0.3]
    return weights, [torch.full_like(w, 0.5) if with_grads else None for w in weights]


_EDGE_CASES = [
    # first: 3 outputs, so an averaged error is told from any other shortened step
    Case((predict, _fixed(3, 4, 3, True), torch.tensor([0.2, 0.1, -0.4]), torch.zeros(3), 0.1, 5),
         label="3 inputs, 3 outputs, every weight holding a .grad from training, lr 0.1, 5 steps"),
    # one step exactly: an off-by-one loop shows
    Case((predict, _fixed(2, 3, 2, False), torch.tensor([0.5, -0.3]), torch.tensor([1.0, -1.0]), 0.05, 1),
         label="2 inputs, 2 outputs, no weight gradient yet, 1 step"),
    Case((predict, _fixed(1, 5, 1, True), torch.tensor([0.7]), torch.tensor([-2.0]), 0.15, 12),
         label="one input, one output, 12 steps"),
    # no step at all: the result is (a copy of) x0, without a graph
    Case((predict, _fixed(2, 2, 2, True), torch.tensor([0.1, 0.2]), torch.tensor([2.0, -3.0]), 0.1, 0),
         label="num_steps = 0"),
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


def _diagnose_steps(fn, points: list[torch.Tensor], lr: float, outputs: int) -> None:
    """Recognise the update rule from consecutive inputs the learner fed the model."""
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
        # with 2 outputs a mean is a halved lr: only 3 or more outputs tell the two apart
        if outputs >= 3 and close(step, -lr * g / outputs, 1e-3, 1e-5):
            raise Incorrect("averaged_errors")
        if k >= 1 and close(step, -lr * total, 1e-3, 1e-5):
            raise Incorrect("grad_not_cleared")
        return  # some other rule: the comparison of the final x reports it


def _call(answer: Any, predict_fn, weights, target, x0, lr, num_steps) -> Any:
    try:
        with answer_grad_mode():
            return answer(predict_fn, weights, target, x0, lr, num_steps)
    except RuntimeError as exc:
        msg = str(exc)
        if "leaf Variable that requires grad is being used in an in-place operation" in msg:
            raise Incorrect("update_on_leaf") from None
        if "does not require grad" in msg:
            raise Incorrect("input_not_watched") from None
        raise
    except TypeError as exc:
        if "NoneType" in str(exc):  # reading x.grad that autograd never filled
            raise Incorrect("input_not_watched") from None
        raise


def _check_weights(weights, values, grads) -> None:
    for w, value in zip(weights, values):
        if not torch.equal(w.detach(), value):
            raise Incorrect("updated_weights")
        if not w.requires_grad:
            raise Incorrect("froze_weights")
    for w, grad in zip(weights, grads):
        if grad is not None and (w.grad is None or not w.grad.abs().any()):
            raise Incorrect("erased_weight_grads")
        if (w.grad is None) != (grad is None) or (grad is not None and not torch.equal(w.grad, grad)):
            raise Incorrect("weight_grads_changed")


def _run(answer: Any, case: Case) -> Any:
    predict_fn, (values, grads), target, x0, lr, num_steps = case.args
    weights = tuple(v.clone().requires_grad_(True) for v in values)  # fresh leaves for every call
    for w, g in zip(weights, grads):
        w.grad = None if g is None else g.clone()
    seen: list[tuple[torch.Tensor, bool]] = []

    def watched(x, ws):
        if isinstance(x, torch.Tensor):
            seen.append((x.detach().clone(), x.grad_fn is not None))
        return predict_fn(x, ws)

    x0_before = x0.clone()
    out = _call(answer, watched, weights, target, x0, lr, num_steps)
    if x0.requires_grad or x0.grad is not None or not torch.equal(x0, x0_before):
        raise Incorrect("mutated_input")
    _check_weights(weights, values, grads)
    if any(tracked for _, tracked in seen) or (isinstance(out, torch.Tensor) and out.grad_fn is not None):
        raise Incorrect("update_tracked")
    _diagnose_steps(lambda x: ((predict_fn(x, values) - target) ** 2).sum(), [p for p, _ in seen], lr,
                    target.numel())
    if isinstance(out, torch.Tensor) and out.requires_grad:
        raise Incorrect("returned_requires_grad")
    return out


# --- wrong answers
def _loop(watch="x", grads="detach", sign=-1, clear=True, start="clone", finish="detach", reduce="sum"):
    """The section-14 loop on the squared error, with one decision changed: which tensor moves
    (x, the weights, or an x nobody watches), what happens to the weights' ``.grad`` (left out by
    detaching them, added to by ``backward()``, then cleared), the update's sign, clearing x's
    ``.grad``, starting from ``x0`` itself, returning the leaf, or averaging the errors."""
    def answer(predict, weights, target, x0, lr, num_steps):
        x = x0.clone().requires_grad_(watch == "x") if start == "clone" else x0.requires_grad_(True)
        used = [w.detach() for w in weights] if grads == "detach" and watch != "weights" else weights
        for _ in range(num_steps):
            errors = (predict(x, used) - target) ** 2
            (errors.sum() if reduce == "sum" else errors.mean()).backward()
            moved = weights[0] if watch == "weights" else x
            with torch.no_grad():
                moved += sign * lr * moved.grad
            moved.grad = None if clear else moved.grad
            if grads == "zero":
                for w in weights:
                    w.grad = None
        return x.detach() if finish == "detach" else x
    return answer


def _tracked(predict, weights, target, x0, lr, num_steps):
    x = x0.clone().requires_grad_(True)
    for _ in range(num_steps):
        (g,) = torch.autograd.grad(((predict(x, weights) - target) ** 2).sum(), x)
        x = x - lr * g
    return x


def _in_place_on_leaf(predict, weights, target, x0, lr, num_steps):
    x = x0.clone().requires_grad_(True)
    for _ in range(num_steps):
        (g,) = torch.autograd.grad(((predict(x, weights) - target) ** 2).sum(), x)
        x -= lr * g
    return x.detach()


def _frozen(predict, weights, target, x0, lr, num_steps):
    for w in weights:
        w.requires_grad_(False)
    return gradient_descent(predict, weights, target, x0, lr, num_steps)


# --- declaration
register(Exercise(
    lesson=LESSON, name="gradient_descent", title="Gradient descent on the input: what input gives this output?",
    reference=gradient_descent, cases=_cases, edge_cases=_EDGE_CASES, run=_run,
    # `torch.optim.SGD(...)` (a valid answer) imports torch._dynamo on first construction:
    # seconds on a busy machine, which must not count against the learner's time limit
    preload=("torch._dynamo",),
    compare=Compare(rtol=1e-4, atol=1e-5),
    mistakes=[
        Mistake("weight_grads_changed",
                "The model came back with different gradients in its weights' `.grad`: `backward()` adds a "
                "gradient to *every* leaf that requires grad and that the loss depends on, the weights "
                "included, so the training loop's next step would use them. Only x's gradient was wanted.",
                _loop(grads="added"), match_output=False),
        Mistake("erased_weight_grads",
                "You cleared the weights' `.grad`: the gradients the training loop had stored there are "
                "gone. The model must come back exactly as it was handed to you, its gradients too: leave "
                "them alone rather than tidy up after `backward()`.",
                _loop(grads="zero"), match_output=False),
        Mistake("updated_weights",
                "Your loop changed the model's weights: that is training, fitting the model to the data. "
                "Here the model is fixed and the *input* is the unknown.",
                _loop(watch="weights"), match_output=False),
        Mistake("froze_weights",
                "The model's weights no longer require grad when your function returns: the training loop "
                "that owns them would stop learning. Keep them out of *your* differentiation without "
                "switching them off for everyone.",
                _frozen, match_output=False),
        Mistake("input_not_watched",
                "There is no gradient for x (\"does not require grad\", or a `.grad` that is `None`): "
                "autograd computes gradients only for tensors it was asked to watch, through a forward "
                "pass it recorded.",
                _loop(watch="unwatched", grads="added"), match_output=False),
        Mistake("update_on_leaf",
                "\"a leaf Variable that requires grad is being used in an in-place operation\": your update "
                "would itself be recorded by autograd. The step is no part of the function being "
                "differentiated.",
                _in_place_on_leaf, match_output=False),
        Mistake("update_tracked",
                "Your update is recorded in the autograd graph: each new x is computed from the previous "
                "one with tracking on, so its history (and memory, and time) grows with every step. The "
                "step is no part of the function being differentiated.",
                _tracked, match_output=False),
        Mistake("grad_not_cleared",
                "Each of your steps uses the sum of all of x's gradients so far: `.grad` accumulates across "
                "`backward()` calls and your loop never clears it.",
                _loop(clear=False), match_output=False),
        Mistake("averaged_errors",
                "Your steps are shorter by the number of outputs: you averaged the squared errors. The "
                "loss to descend is their *sum*, as the exercise says.",
                _loop(reduce="mean"), match_output=False),
        Mistake("wrong_sign",
                "Your steps go uphill: the gradient points towards a larger error, and descent goes the "
                "other way.",
                _loop(sign=1), match_output=False),
        Mistake("mutated_input",
                "Your loop changed the caller's `x0` (it now requires grad, or holds new values: a tensor "
                "from `x0.detach()` shares its memory). Start from a copy.",
                _loop(start="x0"), match_output=False),
        Mistake("returned_requires_grad",
                "You returned a tensor that still requires grad: everything computed from it afterwards "
                "would be recorded by autograd. Return the final point without a graph.",
                _loop(finish="leaf"), match_output=False),
    ],
    hints=[
        "Which tensor is the unknown here, and which ones must come out exactly as they went in? Only "
        "the unknown should move, and only its gradient is needed.",
        "backward() adds a gradient to every leaf that requires grad and that the loss depends on, the "
        "weights included; clearing theirs afterwards erases the training loop's. Section 10 shows a way "
        "to ask autograd for the gradient of one tensor only, and section 14 how a step stays out of the graph.",
    ],
))
