"""grad_norms: per-module 2-norm of the gradients of that module's own parameters, after backward.

Subtle: a module's own parameters only (`recurse=False`, else a container counts its children
twice); frozen and unused parameters have `grad is None` and do not count (a module with no
gradient at all is left out, not 0.0); the norm of several tensors is the square root of the sum
of all squares, not the sum of norms; the model itself is `""`; the gradients stay as they were.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/07_debugging.py)
from ...answers.l07_debugging import grad_norms


# --- cases
class Scaled(nn.Module):
    """A parameter on the model itself (name ``""``), a block, a head, and a layer never used."""

    def __init__(self, d: int, hidden: int, out: int):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(d))
        self.block = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.LayerNorm(hidden))
        self.head = nn.Linear(hidden, out)
        self.unused = nn.Linear(hidden, out)  # e.g. an old head left behind

    def forward(self, x):
        return self.head(self.block(x * self.scale))


def _with_grads(model: nn.Module, x: torch.Tensor, g: torch.Generator) -> nn.Module:
    out = model(x)
    if out.requires_grad:  # not when every parameter the forward uses is frozen
        (out * torch.randn(out.shape, generator=g)).sum().backward()
    return model


def _build(seed: int, kind: str, d: int, hidden: int, out: int, freeze: list[str], label: str = "") -> Case:
    g = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        if kind == "scaled":
            model: nn.Module = Scaled(d, hidden, out)
        elif kind == "dead":  # every ReLU unit dead: layer "0" gets gradients that are exactly 0
            model = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, out))
            nn.init.constant_(model[0].bias, -1e3)
        else:
            model = nn.Sequential(nn.Linear(d, hidden), nn.Tanh(), nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU()),
                                  nn.Linear(hidden, out))
    for name, p in model.named_parameters():
        if any(name == f or name.startswith(f + ".") for f in freeze):
            p.requires_grad_(False)
    _with_grads(model, torch.randn(5, d, generator=g) * 3, g)
    # `.grad` does not survive the deep copy the runner makes of each case: carry it beside
    grads = {n: None if p.grad is None else p.grad.detach().clone() for n, p in model.named_parameters()}
    return Case((model,), {"grads": grads}, label=label)


def _cases(r: Rand) -> Case:
    kind = r.choice(["scaled", "sequential"])
    model = _build(0, kind, 3, 4, 2, []).args[0]  # only to list the names that can be frozen
    names = [n for n, _ in model.named_parameters()]
    prefixes = sorted({n.rpartition(".")[0] for n in names} - {""}) + names
    freeze = [p for p in prefixes if r.uniform(0, 1) < 0.2]
    return _build(r.integer(0, 2**31), kind, r.integer(2, 8), r.integer(3, 9), r.integer(1, 4), freeze)


EDGE_CASES = [
    _build(1, "sequential", 4, 6, 3, [], label="a Sequential with a nested block, nothing frozen"),
    _build(2, "scaled", 5, 4, 2, ["block"],
           label="a parameter on the model itself, a frozen block and an unused layer"),
    _build(3, "sequential", 3, 5, 2, ["0.weight", "2.0.bias"], label="a frozen weight whose bias still trains"),
    _build(4, "scaled", 3, 3, 2, ["scale", "block", "head"], label="everything frozen: no gradients"),
    _build(5, "dead", 4, 6, 3, [], label="a dead layer: its gradients are all exactly 0"),
]


# --- run
def _run(answer: Any, case: Case) -> Any:
    (model,) = case.args
    for n, p in model.named_parameters():
        g = case.kwargs["grads"][n]
        p.grad = None if g is None else g.clone()
    before = {n: None if p.grad is None else p.grad.clone() for n, p in model.named_parameters()}
    out = answer(model)
    for n, p in model.named_parameters():
        if (before[n] is None) != (p.grad is None) or (p.grad is not None and not torch.equal(before[n], p.grad)):
            raise Incorrect("changed_grads", name=n)
    return out


# --- wrong answers
def _own_grads(module: nn.Module, recurse: bool = False) -> list[torch.Tensor]:
    return [p.grad for p in module.parameters(recurse=recurse) if p.grad is not None]


def _recursive(model):
    return {n: math.sqrt(sum(float((g ** 2).sum()) for g in gs))
            for n, m in model.named_modules() if (gs := _own_grads(m, recurse=True))}


def _summed_norms(model):
    return {n: sum(float(g.norm()) for g in gs) for n, m in model.named_modules() if (gs := _own_grads(m))}


def _squared(model):
    return {n: sum(float((g ** 2).sum()) for g in gs) for n, m in model.named_modules() if (gs := _own_grads(m))}


def _none_as_zero(model):
    return {n: math.sqrt(sum(float((p.grad ** 2).sum()) if p.grad is not None else 0.0
                             for p in m.parameters(recurse=False)))
            for n, m in model.named_modules() if list(m.parameters(recurse=False))}


def _weight_norms(model):
    return {n: math.sqrt(sum(float((p.detach() ** 2).sum()) for p in m.parameters(recurse=False) if p.grad is not None))
            for n, m in model.named_modules() if _own_grads(m)}


def _per_parameter(model):
    return {n: float(p.grad.norm()) for n, p in model.named_parameters() if p.grad is not None}


def _zeroes_grads(model):
    out = grad_norms(model)
    model.zero_grad()
    return out


# --- declaration
register(Exercise(
    lesson=LESSON, name="grad_norms", title="Per-module gradient norms after backward",
    reference=grad_norms, cases=_cases, run=_run, edge_cases=EDGE_CASES, n_random=12,
    compare=Compare(rtol=1e-5, atol=1e-7),
    mistakes=[
        Mistake("recursive", "Your norms include each module's children (`parameters()` recurses by default), "
                "so a container repeats its layers' gradients. Use `module.parameters(recurse=False)`.", _recursive),
        Mistake("summed_norms", "You added the norms of the tensors. The norm of several tensors together is "
                "`sqrt(sum of every squared entry)`: square, sum over all of them, then one square root.",
                _summed_norms),
        Mistake("squared", "You forgot the square root: that is the sum of squares, not the 2-norm.", _squared),
        Mistake("none_as_zero", "Your dict has modules that received no gradient (frozen or unused: "
                "`grad is None`). Leave them out rather than reporting 0.0; a real 0.0 means something else.",
                _none_as_zero),
        Mistake("weight_norms", "Those are the norms of the parameters themselves; measure their gradients, "
                "`p.grad`.", _weight_norms),
        Mistake("per_parameter", "Your keys are parameter names (`0.weight`); the task wants one entry per module "
                "(`0`), all of that module's own gradients together.", _per_parameter),
        Mistake("changed_grads", "Your function changed the gradient of `{name}` (a `zero_grad()`, an in-place "
                "op, or setting `.grad`). A monitor only reads: the optimizer still needs those gradients.",
                _zeroes_grads, match_output=False),
    ],
    hints=[
        "Which parameters belong to a module *itself*, and which to its children? What does a frozen "
        "parameter's `.grad` hold after backward?",
        "One entry per module that has at least one gradient; the 2-norm of several tensors is the square root "
        "of the sum of all their squared entries, a Python float.",
    ],
))
