"""freeze_backbone: freeze ``model.backbone`` and return the parameters that still train.

Subtle: "freeze" means every parameter the backbone holds (a LayerNorm's, a bare Parameter on a
submodule), not only its Linear layers; "still trainable" is not "the head's" (a head
parameter may be frozen already); the result must be a reusable list of the model's own
Parameter objects.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/03_nn_module.py)
from .._references.l03_nn_module import freeze_backbone


# --- cases
class Backboned(nn.Module):
    """A model with a ``backbone`` (feature extractor) and a ``head`` (classifier)."""

    def __init__(self, in_features: int, hidden: int, num_classes: int):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(),
                                      nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, x):
        return self.head(self.backbone(x))


def _cases(r: Rand) -> Case:
    return Case((Backboned(r.integer(2, 6), r.integer(3, 8), r.integer(2, 5)),))


def _frozen_head_bias() -> Backboned:
    """"The parameters that are still trainable": not simply the head's."""
    with torch.random.fork_rng(devices=[]):  # default init draws from the global RNG
        torch.manual_seed(0)
        model = Backboned(4, 5, 3)
    model.head.bias.requires_grad_(False)
    return model


class _Gain(nn.Module):
    """A layer whose only parameter is a bare ``nn.Parameter`` (no Linear, no LayerNorm)."""

    def __init__(self, features: int):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(features))

    def forward(self, x):
        return x * self.gain


def _mixed_backbone() -> Backboned:
    """A backbone that holds more than Linear layers: a LayerNorm and a bare Parameter on a
    submodule (freezing only the `nn.Linear` layers leaves them trainable)."""
    with torch.random.fork_rng(devices=[]):  # default init draws from the global RNG
        torch.manual_seed(1)
        model = Backboned(3, 4, 2)
        model.backbone = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.ReLU(), _Gain(4),
                                       nn.Linear(4, 4), nn.ReLU())
    return model


EDGE_CASES = [
    Case((_frozen_head_bias(),), label="a model whose head bias was already frozen"),
    Case((Backboned(1, 1, 1),), label="a model with one feature, one hidden unit, one output"),
    Case((_mixed_backbone(),), label="a backbone with a LayerNorm and a bare nn.Parameter on a submodule"),
]


# --- run and probes
def _check_returned(model: nn.Module, out: Any) -> Any:
    """The returned parameters: a list (or tuple) of the model's own trainable Parameters;
    returns their names, sorted, for the comparison."""
    if out is not None and not isinstance(out, (list, tuple)) and hasattr(out, "__next__"):
        raise Incorrect("returned_generator")
    if not isinstance(out, (list, tuple)):
        return out
    if any(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in out):
        raise Incorrect("returned_pairs")
    names = {id(p): n for n, p in model.named_parameters()}
    if any(id(p) not in names for p in out):
        raise Incorrect("returned_copies")
    picked = [names[id(p)] for p in out]
    if any(not p.requires_grad for p in out):
        raise Incorrect("returned_frozen")
    return sorted(picked)


def _run(answer: Any, case: Case) -> Any:
    (model,) = case.args
    head_before = [p.requires_grad for p in model.head.parameters()]
    out = answer(model)
    if getattr(model.backbone, "requires_grad", None) is False and "requires_grad" in vars(model.backbone):
        raise Incorrect("set_module_attribute")
    still = [p.requires_grad for p in model.backbone.parameters()]
    if any(still):
        raise Incorrect("froze_only_some" if not all(still) else "backbone_not_frozen")
    if any(was and not p.requires_grad for was, p in zip(head_before, model.head.parameters())):
        raise Incorrect("froze_head")
    out = _check_returned(model, out)
    flags = {n: p.requires_grad for n, p in model.named_parameters()}
    return flags, out


# --- wrong answers
def _attribute(model):
    model.backbone.requires_grad = False
    return list(model.head.parameters())


def _no_grad(model):
    with torch.no_grad():
        params = list(model.head.parameters())
    return params


def _everything(model):
    model.requires_grad_(False)
    return list(model.head.parameters())


def _only_linear(model):
    for m in model.backbone.modules():
        if isinstance(m, nn.Linear):
            m.requires_grad_(False)
    return [p for p in model.parameters() if p.requires_grad]


def _returns_all(model):
    freeze_backbone(model)
    return list(model.parameters())


def _named(model):
    freeze_backbone(model)
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def _generator(model):
    return iter(freeze_backbone(model))


def _copies(model):
    return [p.detach().clone().requires_grad_() for p in freeze_backbone(model)]


# --- declaration
register(Exercise(
    lesson=LESSON, name="freeze_backbone", title="Freeze a sub-network and hand the rest to the optimizer",
    reference=freeze_backbone,
    cases=_cases,
    edge_cases=EDGE_CASES,
    run=_run,
    mistakes=[
        Mistake("set_module_attribute",
                "`model.backbone.requires_grad = False` only creates a new Python attribute on the module; its "
                "parameters still require grad. Call the method: `model.backbone.requires_grad_(False)` (or set "
                "`p.requires_grad = False` for each parameter).",
                _attribute, match_output=False),
        Mistake("backbone_not_frozen",
                "Some backbone parameters still require grad. `torch.no_grad()` only pauses tracking while its "
                "block runs; freezing is a property of the parameters: `model.backbone.requires_grad_(False)`.",
                _no_grad, match_output=False),
        Mistake("froze_only_some",
                "You froze only some of the backbone's parameters (its Linear layers?). Others still require "
                "grad: a LayerNorm's weight and bias, or a bare `nn.Parameter` a submodule registered. \"Freeze "
                "the backbone\" means every parameter it holds, whatever kind of layer owns it: "
                "`model.backbone.requires_grad_(False)` reaches them all.",
                _only_linear, match_output=False),
        Mistake("froze_head", "You froze the head too. Only `model.backbone` is frozen; the head is what you want "
                "to train.", _everything, match_output=False),
        Mistake("returned_frozen", "Your list includes frozen parameters. Return only those that still require "
                "grad, so the optimizer (and its memory) only holds what is trained.",
                _returns_all, match_output=False),
        Mistake("returned_generator",
                "You returned a generator (`model.parameters()` or a generator expression). A generator is used "
                "up after one pass: hand it to one thing and it is empty for the next (an optimizer built from "
                "it again gets \"optimizer got an empty parameter list\"). Return a list: "
                "`[p for p in model.parameters() if p.requires_grad]`.",
                _generator, match_output=False),
        Mistake("returned_copies",
                "Some items you returned are not the model's own Parameter objects (a copy, `.detach()`, "
                "`.data`?). The optimizer must receive the parameters themselves to update the model.",
                _copies, match_output=False),
        Mistake("returned_pairs",
                "Your list holds (name, parameter) pairs from `named_parameters()`. An optimizer takes the "
                "parameters themselves: `[p for p in model.parameters() if p.requires_grad]`.",
                _named, match_output=False),
    ],
    hints=[
        "`module.requires_grad_(False)` (a method, with the underscore) sets `requires_grad` on "
        "every parameter of the module and its children.",
        "Then return `[p for p in model.parameters() if p.requires_grad]`: a list, so it can be "
        "reused, with only the head's parameters in it.",
    ],
))
