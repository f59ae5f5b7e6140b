"""freeze_backbone: freeze ``model.backbone`` (weights AND BatchNorm statistics) so fine-tuning
trains only the head, and return what the optimizer should get.

The learner decides what freezing covers: every parameter the backbone holds (a LayerNorm's, a
bare Parameter on a submodule), and its BatchNorm running statistics, which are buffers that a
training-mode forward pass updates whatever ``requires_grad`` says (the backbone goes to eval
mode; momentum 0 keeps the statistics but still normalises with the batch's own); the head keeps
training mode (its Dropout). "Still trainable" is not "the head's" (a head parameter may be
frozen already); the result must be a reusable list of the model's own Parameter objects.
"""

from __future__ import annotations

from typing import Any

import copy

import torch
from torch import nn

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/03_nn_module.py)
from ...answers.l03_nn_module import freeze_backbone


# --- cases
class Backboned(nn.Module):
    """A model with a ``backbone`` (feature extractor) and a ``head`` (classifier)."""

    def __init__(self, in_features: int, hidden: int, num_classes: int):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(in_features, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
                                      nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Sequential(nn.Dropout(0.25), nn.Linear(hidden, num_classes))

    def forward(self, x):
        return self.head(self.backbone(x))


def _pretrained(model: Backboned, r: Rand) -> Backboned:
    """Running statistics as a pretrained backbone has them (not the fresh 0 and 1)."""
    with torch.no_grad():
        for m in model.backbone.modules():
            if isinstance(m, nn.BatchNorm1d):
                m.running_mean.copy_(r.randn(m.num_features))
                m.running_var.copy_(r.rand(m.num_features) + 0.5)
                m.num_batches_tracked.fill_(100)
    return model.train()


def _cases(r: Rand) -> Case:
    with torch.random.fork_rng(devices=[]):  # default init draws from the global RNG
        torch.manual_seed(r.integer(0, 2**31))
        model = Backboned(r.integer(2, 6), r.integer(3, 8), r.integer(2, 5))
    return Case((_pretrained(model, r),))


def _frozen_head_bias() -> Backboned:
    """"The parameters that are still trainable": not simply the head's."""
    with torch.random.fork_rng(devices=[]):  # default init draws from the global RNG
        torch.manual_seed(0)
        model = Backboned(4, 5, 3)
    model.head[1].bias.requires_grad_(False)
    return _pretrained(model, Rand(0))


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
                                       nn.Linear(4, 4), nn.BatchNorm1d(4), nn.ReLU())
    return _pretrained(model, Rand(1))


def _one_unit() -> Backboned:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(2)
        model = Backboned(1, 1, 1)
    return _pretrained(model, Rand(2))


EDGE_CASES = [
    Case((_frozen_head_bias(),), label="a model whose head bias was already frozen"),
    Case((_one_unit(),), label="a model with one feature, one hidden unit, one output"),
    Case((_mixed_backbone(),), label="a backbone with a LayerNorm and a bare nn.Parameter on a submodule"),
]


# --- run and probes
def _check_returned(model: nn.Module, out: Any) -> Any:
    """The returned parameters: a list (or tuple) of the model's own trainable Parameters;
    returns their names, sorted, for the comparison."""
    if out is not None and not isinstance(out, (list, tuple)) and hasattr(out, "__next__"):
        raise Incorrect("returned_generator")
    if isinstance(out, (dict, set, frozenset)):
        raise Incorrect("returned_container", got=type(out).__name__)
    if not isinstance(out, (list, tuple)):
        return out
    if any(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in out):
        raise Incorrect("returned_pairs")
    if out and all(isinstance(g, dict) and "params" in g for g in out):
        # parameter groups, which an optimizer takes as well: judge the parameters in them
        out = [p for g in out for p in ([g["params"]] if isinstance(g["params"], torch.Tensor) else g["params"])]
    names = {id(p): n for n, p in model.named_parameters()}
    if any(id(p) not in names for p in out):
        raise Incorrect("returned_copies")
    picked = [names[id(p)] for p in out]
    if any(not p.requires_grad for p in out):
        raise Incorrect("returned_frozen")
    return sorted(picked)


def _buffers(module: nn.Module) -> list[torch.Tensor]:
    """The running statistics (a batch counter that moves while they stay put is harmless)."""
    return [b.detach().clone() for n, b in module.named_buffers() if not n.endswith("num_batches_tracked")]


def _run(answer: Any, case: Case) -> Any:
    (model,) = case.args
    head_before = [p.requires_grad for p in model.head.parameters()]
    pretrained = copy.deepcopy(model.backbone).eval()  # what the backbone computes, frozen
    out = answer(model)
    if getattr(model.backbone, "requires_grad", None) is False and "requires_grad" in vars(model.backbone):
        raise Incorrect("set_module_attribute")
    still = [p.requires_grad for p in model.backbone.parameters()]
    if any(still):
        raise Incorrect("froze_only_some" if not all(still) else "backbone_not_frozen")
    if any(was and not p.requires_grad for was, p in zip(head_before, model.head.parameters())):
        raise Incorrect("froze_head")
    if not all(m.training for m in model.head.modules()):
        raise Incorrect("head_in_eval")
    unfrozen = [n for was, (n, p) in zip(head_before, model.head.named_parameters()) if not was and p.requires_grad]
    if unfrozen:
        raise Incorrect("unfroze_head", names=", ".join(f"`head.{n}`" for n in unfrozen))
    # a training step's forward pass, in the modes the answer left: the backbone must not move
    buffers = _buffers(model.backbone)
    X = Rand(7).randn(6, model.backbone[0].in_features) * 3 + 1
    with torch.no_grad(), torch.random.fork_rng(devices=[]):
        model(X)
        features = model.backbone(X)
    if not all(torch.equal(a, b) for a, b in zip(buffers, _buffers(model.backbone))):
        raise Incorrect("bn_stats_updated")
    with torch.no_grad():
        if not torch.allclose(features, pretrained(X), rtol=1e-5, atol=1e-6):
            raise Incorrect("bn_batch_stats")
    out = _check_returned(model, out)
    flags = {n: p.requires_grad for n, p in model.named_parameters()}
    return flags, out


# --- wrong answers
def _attribute(model):
    model.backbone.requires_grad = False
    model.backbone.eval()
    return list(model.head.parameters())


def _no_grad(model):
    with torch.no_grad():
        params = list(model.head.parameters())
    return params


def _everything(model):
    model.requires_grad_(False)
    return list(model.head.parameters())


def _only_linear(model):
    model.backbone.eval()
    for m in model.backbone.modules():
        if isinstance(m, nn.Linear):
            m.requires_grad_(False)
    return [p for p in model.parameters() if p.requires_grad]


def _params_only(model):
    model.backbone.requires_grad_(False)
    return [p for p in model.parameters() if p.requires_grad]


def _whole_model_eval(model):
    model.eval()
    return _params_only(model)


def _momentum_zero(model):
    for m in model.backbone.modules():
        if isinstance(m, nn.BatchNorm1d):
            m.momentum = 0.0
    return _params_only(model)


def _then(finish):
    """The reference, then ``finish(model, its list)`` returned instead of the list."""
    def answer(model):
        return finish(model, freeze_backbone(model))
    return answer


_returns_all = _then(lambda m, ps: list(m.parameters()))
_named = _then(lambda m, ps: [(n, p) for n, p in m.named_parameters() if p.requires_grad])
_generator = _then(lambda m, ps: iter(ps))
_copies = _then(lambda m, ps: [p.detach().clone().requires_grad_() for p in ps])
_unfreezes_head = _then(lambda m, ps: (m.head.requires_grad_(True), [p for p in m.parameters() if p.requires_grad])[1])
_returns_a_dict = _then(lambda m, ps: {n: p for n, p in m.named_parameters() if p.requires_grad})


# --- declaration
register(Exercise(
    lesson=LESSON, name="freeze_backbone", title="Freeze a sub-network and hand the rest to the optimizer",
    reference=freeze_backbone,
    cases=_cases,
    edge_cases=EDGE_CASES,
    run=_run,
    mistakes=[
        Mistake("set_module_attribute",
                "Setting `requires_grad` on a module only creates a new Python attribute on it; its parameters "
                "still require grad. `requires_grad` belongs to each parameter (and there is a module method, "
                "with a trailing underscore, that sets it on all of a subtree's).",
                _attribute, match_output=False),
        Mistake("backbone_not_frozen",
                "The backbone's parameters still require grad. `torch.no_grad()` only pauses tracking while its "
                "block runs; freezing is a property of the parameters themselves, which lasts.",
                _no_grad, match_output=False),
        Mistake("froze_only_some",
                "You froze only some of the backbone's parameters (its Linear layers?). Others still require "
                "grad: a LayerNorm's weight and bias, or a bare `nn.Parameter` a submodule registered. \"Freeze "
                "the backbone\" means every parameter it holds, whatever kind of layer owns it.",
                _only_linear, match_output=False),
        Mistake("froze_head", "You froze the head too. Only `model.backbone` is frozen; the head is what you want "
                "to train.", _everything, match_output=False),
        Mistake("unfroze_head", "{names} had been frozen by the caller before your function ran, and now "
                "requires grad again. Freeze the backbone and leave the head's parameters as they were "
                "(`model.head.requires_grad_(True)` switches on all of them).", _unfreezes_head,
                match_output=False),
        Mistake("returned_container", "You returned a {got}; return a list of the parameters the optimizer "
                "should train, e.g. `[p for p in model.parameters() if p.requires_grad]`.", _returns_a_dict,
                match_output=False),
        Mistake("head_in_eval", "You switched the head out of training mode as well, so its Dropout is off "
                "while it trains. The head is still being trained: only the frozen part should stop behaving "
                "as in training.", _whole_model_eval, match_output=False),
        Mistake("bn_stats_updated", "The backbone's weights are frozen, but a training-mode forward pass after "
                "your function still changed its BatchNorm running statistics. They are buffers, not "
                "parameters: `requires_grad` and the optimizer never touch them, the forward pass itself "
                "updates them. What decides whether a BatchNorm layer updates them?",
                _params_only, match_output=False),
        Mistake("bn_batch_stats", "The backbone's running statistics no longer move, but its BatchNorm layers "
                "still normalise with each batch's own mean and variance, so the features of one input depend "
                "on the rest of its batch and differ from the pretrained backbone's (which uses the running "
                "statistics). Keeping the statistics fixed is half of it; the layers must also use them.",
                _momentum_zero, match_output=False),
        Mistake("returned_frozen", "Your list includes frozen parameters. Return only those that still require "
                "grad, so the optimizer (and its memory) only holds what is trained.",
                _returns_all, match_output=False),
        Mistake("returned_generator",
                "You returned a generator (`model.parameters()` or a generator expression). A generator is used "
                "up after one pass: hand it to one thing and it is empty for the next (an optimizer built from "
                "it again gets \"optimizer got an empty parameter list\"). Return a container that can be read "
                "again.",
                _generator, match_output=False),
        Mistake("returned_copies",
                "Some items you returned are not the model's own Parameter objects (a copy, `.detach()`, "
                "`.data`?). The optimizer must receive the parameters themselves to update the model.",
                _copies, match_output=False),
        Mistake("returned_pairs",
                "Your list holds (name, parameter) pairs from `named_parameters()`. An optimizer takes the "
                "parameters themselves.",
                _named, match_output=False),
    ],
    hints=[
        "Freezing has two sides: what the optimizer may change (parameters) and what a forward pass may "
        "change by itself. Look at what the backbone holds besides parameters (section 5), and what the "
        "cell above this exercise shows.",
        "`requires_grad` is per parameter; a module's training flag decides whether its BatchNorm layers use "
        "and update running statistics or use the batch's own. Both can be set on a whole subtree, and only "
        "the frozen part should change. Then give the optimizer exactly what still learns, in something "
        "that can be read twice.",
    ],
))
