"""clip_grad_norm: scale all gradients together, in place, so that their total norm is at most
``max_norm``; return the total norm measured before clipping. The notebook gives no formula: the
learner works it out from four experiments with the built-in on small gradients
(tests/test_l05_training_loop.py checks that every wrong rule named below prints differently).

Subtle: the norm is that of *all* gradients together; only gradients above ``max_norm`` are scaled;
``parameters`` may be a generator (``model.parameters()``), empty the second time it is iterated;
a scaled copy changes nothing; parameters without a gradient are skipped (none at all: 0.0); the
weights are left alone; and PyTorch's built-in may not be called ("Write it yourself").
"""

from __future__ import annotations

import functools

import torch

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON


# --- reference: the notebook's answer (generated from solutions/05_training_loop.py)
from ...answers.l05_training_loop import clip_grad_norm


# --- cases
def _cases(r: Rand) -> Case:
    shapes = [(r.integer(1, 5), r.integer(1, 5)) for _ in range(r.integer(1, 4))]
    # plain leaf tensors: unlike nn.Parameter, a deep copy of them keeps `.grad`
    params = [r.randn(*s).requires_grad_() for s in shapes + [(3,)]]
    for p in params[:-1]:
        p.grad = r.randn(*p.shape) * r.uniform(0.1, 3)
    # the last parameter has no gradient (frozen, or unused in the forward pass)
    return Case((params, r.uniform(0.5, 6.0)))


def _edge(norm_scale: float, label: str) -> Case:
    g = torch.Generator().manual_seed(5)
    params = [torch.randn(3, 2, generator=g).requires_grad_(), torch.randn(4, generator=g).requires_grad_()]
    for p in params:
        p.grad = torch.randn(p.shape, generator=g)
    total = float(torch.sqrt(sum((p.grad ** 2).sum() for p in params)))
    for p in params:  # total norm exactly norm_scale * max_norm (max_norm 1)
        p.grad *= norm_scale / total
    return Case((params, 1.0), label=label)


EDGE_CASES = [
    _edge(0.3, "gradients already smaller than max_norm"),
    _edge(5.0, "gradients much larger than max_norm"),
    _edge(1.3, "total norm 1.3, a little above max_norm 1"),
    # `sum([])` is the int 0, which `torch.sqrt` refuses: the norm is 0.0, nothing is scaled
    Case(([torch.randn(3, 2, generator=torch.Generator().manual_seed(7)).requires_grad_(),  # not the learner's RNG
           torch.randn(4, generator=torch.Generator().manual_seed(8)).requires_grad_()], 1.0),
         label="no parameter has a gradient yet (before the first backward): the norm is 0.0"),
]


# --- run and probes
_BUILTINS = ("torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_norm", "torch.nn.utils.get_total_norm",
             "torch.nn.utils.clip_grads_with_norm_")  # Exercise.forbid: however they are reached


def _clips_a_list(answer, data_before, grads_before, max_norm: float, total: float) -> bool:
    """Whether the answer clips when given the parameters as a list (not a generator)."""
    coef = max_norm / (total + 1e-6)
    again = [d.clone().requires_grad_() for d in data_before]
    for p, g in zip(again, grads_before):
        p.grad = None if g is None else g.clone()
    try:
        answer(list(again), max_norm)
        return all((g is None and p.grad is None) or (
            g is not None and p.grad is not None and torch.allclose(p.grad, g * coef, rtol=1e-4, atol=1e-6))
            for p, g in zip(again, grads_before))
    except Exception:
        return False


def _run(answer, case: Case):
    params, max_norm = case.args
    data_before = [p.detach().clone() for p in params]
    grads_before = [None if p.grad is None else p.grad.clone() for p in params]
    # as `model.parameters()` would be: a generator, which can be iterated only once
    out = answer((p for p in params), max_norm)
    if any(p.shape != d.shape or not torch.equal(p.detach(), d) for p, d in zip(params, data_before)):
        raise Incorrect("scaled_weights")
    given = [g for g in grads_before if g is not None]
    total = float(torch.sqrt(sum((g.double() ** 2).sum() for g in given))) if given else 0.0
    unchanged = all((g is None and p.grad is None) or (g is not None and p.grad is not None and torch.equal(p.grad, g))
                    for p, g in zip(params, grads_before))
    if given and total > max_norm * (1 + 1e-3) and unchanged:
        # nothing was clipped: name the generator mistake only if the answer clips when given a list
        clips = _clips_a_list(answer, data_before, grads_before, max_norm, total)
        raise Incorrect("parameters_iterated_twice" if clips else "not_clipped")
    # named parts, so that feedback says which one is wrong
    return {"the norm you returned": out,
            **{f"parameter {k}'s gradient after clipping": None if p.grad is None else p.grad.clone()
               for k, p in enumerate(params)}}


# --- wrong answers
def _clip_with(parameters, max_norm, *, norm=lambda grads: torch.sqrt(sum((g**2).sum() for g in grads)),
               per_parameter=False, always=False, out_of_place=False, weights=False):
    """The reference with one knob turned: how the norm is measured, which norm decides, whether
    small gradients are scaled too, and what is scaled (a copy, or the weights)."""
    params = [p for p in parameters if p.grad is not None]
    total_norm = norm([p.grad for p in params])
    for p in params:
        n = p.grad.norm() if per_parameter else total_norm
        if always or n > max_norm:
            coef = max_norm / (n + 1e-6)
            if weights:
                with torch.no_grad():
                    p.mul_(coef)
            elif out_of_place:
                _ = p.grad * coef  # a new tensor, never written back
            else:
                p.grad.mul_(coef)
    return total_norm.item()


def _clip_with_builtin(parameters, max_norm):
    return torch.nn.utils.clip_grad_norm_(parameters, max_norm).item()


def _clip_returns_after(parameters, max_norm):
    parameters = list(parameters)
    clip_grad_norm(parameters, max_norm)
    return torch.sqrt(sum((p.grad**2).sum() for p in parameters if p.grad is not None)).item()


def _clip_iterates_twice(parameters, max_norm):
    total_norm = torch.sqrt(sum((p.grad**2).sum() for p in parameters if p.grad is not None))
    if total_norm > max_norm:
        for p in parameters:  # a generator such as model.parameters() is already used up here
            if p.grad is not None:
                p.grad.mul_(max_norm / (total_norm + 1e-6))
    return total_norm.item()


# --- declaration
register(Exercise(
    lesson=LESSON, name="clip_grad_norm", title="Gradient clipping, worked out from the built-in",
    reference=clip_grad_norm, run=_run, cases=_cases, edge_cases=EDGE_CASES,
    forbid=_BUILTINS, rule_mistake="uses_builtin",
    compare=Compare(rtol=1e-4, atol=1e-6, mutation=False),
    mistakes=[
        Mistake("uses_builtin", "Your function called PyTorch's `{op}`; the exercise says \"Write it "
                "yourself\": compute the total norm and scale the gradients with tensor operations (the built-in "
                "is for later).", _clip_with_builtin, match_output=False),
        Mistake("per_parameter", "You clipped each gradient by its own norm; clipping uses the norm of *all* "
                "gradients together, and scales them all by the same factor (so the update keeps its "
                "direction).", functools.partial(_clip_with, per_parameter=True)),
        Mistake("always_scale", "Only clip when the total norm is larger than `max_norm`: smaller gradients "
                "stay as they are (you scaled them up).", functools.partial(_clip_with, always=True)),
        Mistake("returns_clipped_norm", "Return the total norm measured *before* clipping: it is what you "
                "log to see how large gradients were.", _clip_returns_after),
        Mistake("sum_of_norms", "The total norm is the square root of the sum of all squared entries, "
                "`sqrt(sum(g.pow(2).sum() for g in grads))`, not the sum of the per-tensor norms.",
                functools.partial(_clip_with, norm=lambda grads: sum(g.norm() for g in grads))),
        # named by `_run` on evidence (the answer clips when given a list), not by its output
        Mistake("parameters_iterated_twice", "`parameters` may be a generator such as `model.parameters()`, "
                "which is empty the second time you loop over it, so nothing was clipped. Given a list, your "
                "function does clip. Loop once: `grads = [p.grad for p in parameters if p.grad is not None]`, "
                "then use `grads`.", _clip_iterates_twice, match_output=False),
        Mistake("not_clipped", "The total norm was above `max_norm`, but your gradients came back unchanged: "
                "nothing was clipped. Scale every gradient itself, in place (`g.mul_(coef)` for `g` in your list "
                "of `p.grad`s); a scaled copy left in a variable changes nothing the optimizer sees.",
                functools.partial(_clip_with, out_of_place=True), match_output=False),
        Mistake("scaled_weights", "Your function changed the parameters' values (the weights). Clipping scales "
                "the gradients, `p.grad`, and leaves the weights alone: the optimizer's step is what changes "
                "them.", functools.partial(_clip_with, weights=True), match_output=False),
    ],
    hints=[
        "In the first experiment, is every gradient divided by the same number? Which single number is 13, "
        "given the entries 3, 4 and 12 (and which would 5 and 12 be)?",
        "Compare the experiments with max_norm 6.5 and 20: when does the built-in leave the gradients alone, "
        "and is the number it returns measured before or after it scales them?",
        "The ideas: one norm for all gradients together, as if they were one long vector, parameters without "
        "a gradient left out; only when it exceeds max_norm, every gradient is scaled in place by the one "
        "factor that brings that norm down to max_norm; the returned number is the norm before scaling.",
    ],
))
