"""freeze_all_but_fc: freeze a ResNet-style model except its head ``model.fc`` (weights AND
BatchNorm statistics), and return what the optimizer should get.

Unlike lesson 03's ``freeze_backbone`` there is no ``backbone`` submodule: the frozen part is
"everything but fc" (the stem's conv1 and bn1 included, which a loop over ``layer*`` misses).
The check runs a training step's forward pass in the modes the answer left: no running
statistic may move, and the backbone's features must be the pretrained (eval-mode) ones.
Accepted: the whole model in eval mode where the head is one Linear (its mode changes nothing);
where the head has a Dropout it must stay in training mode. The head's parameters in a list or
a tuple, or as parameter groups (a list of dicts with "params"): the prose asks for "what the
optimizer should be given", and an optimizer takes either.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from course_utils.grading import Case, Exercise, Expect, Incorrect, Mistake, Rand, register

from ._kit import LESSON, glyph_resnet, head_ids

# --- reference: the solution notebook's answer (generated from solutions/14_transfer_learning.py)
from ...answers.l14_transfer_learning import freeze_all_but_fc


# --- cases
def _cases(r: Rand) -> Case:
    return Case((glyph_resnet(r, head="dropout" if r.integer(0, 2) == 0 else "linear"),))


EDGE_CASES = [
    Case((glyph_resnet(Rand(1), num_classes=10),), label="GlyphResNet with a Linear head"),
    Case((glyph_resnet(Rand(2), head="dropout"),), label="a head of Dropout and Linear (it trains in training mode)"),
]


# --- run
def _buffers(model: torch.nn.Module) -> list[torch.Tensor]:
    """The running statistics (a batch counter that moves while they stay put is harmless)."""
    return [b.detach().clone() for n, b in model.named_buffers() if not n.endswith("num_batches_tracked")]


_LIST = Expect("not_a_list", "a list of the parameters the optimizer should get", (list, tuple))


def _check_returned(model: torch.nn.Module, out: Any) -> list[str]:
    if out is not None and not isinstance(out, (list, tuple)) and hasattr(out, "__next__"):
        raise Incorrect("returned_generator")
    _LIST.check(out)
    if out and all(isinstance(g, dict) and isinstance(g.get("params"), (torch.Tensor, list, tuple, Iterator))
                   for g in out):  # parameter groups, which an optimizer takes too: what they hold
        out = [p for g in out for p in ([g["params"]] if isinstance(g["params"], torch.Tensor) else g["params"])]
    names = {id(p): n for n, p in model.named_parameters()}
    if any(id(p) not in names for p in out):
        raise Incorrect("returned_copies")
    if any(not p.requires_grad for p in out):
        raise Incorrect("returned_frozen")
    if {id(p) for p in out} != head_ids(model):
        raise Incorrect("returned_not_head")
    return sorted(names[id(p)] for p in out)


def _run(answer: Any, case: Case) -> Any:
    (model,) = case.args
    X = torch.randn(4, 1, 10, 10, generator=torch.Generator().manual_seed(5)) * 2 + 0.5
    model.eval()
    with torch.no_grad():
        pretrained = model.features(X)  # what the backbone computes, frozen (eval mode updates nothing)
    model.train()
    out = answer(model)
    flags = {n: p.requires_grad for n, p in model.named_parameters()}
    frozen = [n for n, f in flags.items() if not n.startswith("fc.") and not f]
    if not frozen:
        raise Incorrect("backbone_not_frozen")
    still = [n for n, f in flags.items() if not n.startswith("fc.") and f]
    if still:
        raise Incorrect("froze_only_some", names=", ".join(f"`{n}`" for n in still[:3]))
    if not all(flags[n] for n in flags if n.startswith("fc.")):
        raise Incorrect("head_frozen")
    if any(isinstance(m, torch.nn.Dropout) for m in model.fc.modules()) and not model.fc.training:
        raise Incorrect("head_in_eval")
    buffers = _buffers(model)
    with torch.no_grad():
        model(X)
        features = model.features(X)
    if not all(torch.equal(a, b) for a, b in zip(buffers, _buffers(model))):
        raise Incorrect("bn_stats_updated")
    with torch.no_grad():
        if not torch.allclose(features, pretrained, rtol=1e-5, atol=1e-6):
            raise Incorrect("bn_batch_stats")
    return {"trainable": sorted(n for n, f in flags.items() if f), "returned": _check_returned(model, out)}


# --- wrong answers
def _grad_only(model):
    for name, p in model.named_parameters():
        p.requires_grad_(name.startswith("fc."))
    return list(model.fc.parameters())


def _layers_only(model):
    for name, child in model.named_children():
        if name.startswith("layer"):
            child.requires_grad_(False)
            child.eval()
    return list(model.fc.parameters())


def _everything(model):
    model.requires_grad_(False)
    model.eval()
    return list(model.fc.parameters())


def _eval_only(model):
    for name, child in model.named_children():
        if name != "fc":
            child.eval()
    return list(model.fc.parameters())


def _then(finish):
    def answer(model):
        return finish(model, freeze_all_but_fc(model))
    return answer


_all_params = _then(lambda m, ps: list(m.parameters()))
_generator = _then(lambda m, ps: m.fc.parameters())
_copies = _then(lambda m, ps: [p.detach().clone().requires_grad_() for p in ps])
_whole_eval = _then(lambda m, ps: (m.eval(), ps)[1])


def _momentum_zero(model):
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.momentum = 0.0
    return _grad_only(model)


# --- declaration
register(Exercise(
    lesson=LESSON, name="freeze_all_but_fc", title="Freeze everything but the head, BatchNorm included",
    reference=freeze_all_but_fc, kind="function", cases=_cases, n_random=4, edge_cases=EDGE_CASES, run=_run,
    mistakes=[
        Mistake("backbone_not_frozen", "Every backbone parameter still requires grad: the optimizer would "
                "change the pretrained weights. Freezing is `requires_grad_(False)` on each parameter that is not "
                "the head's (a `torch.no_grad()` block does not last beyond itself).",
                _eval_only, match_output=False),
        Mistake("froze_only_some", "Some backbone parameters still require grad: {names}. \"All but fc\" "
                "includes the stem (`conv1`, `bn1`), not only the residual layers.", _layers_only,
                match_output=False),
        Mistake("head_frozen", "You froze the head too: nothing would train. Freeze all but `model.fc`.",
                _everything, match_output=False),
        Mistake("head_in_eval", "You switched the head out of training mode, so its Dropout is off while it "
                "trains: only the frozen part goes to eval mode.", _whole_eval, match_output=False),
        Mistake("bn_stats_updated", "The backbone's weights are frozen, but a training-mode forward pass after "
                "your function still changed its BatchNorm running statistics: they are buffers, which the "
                "forward pass itself updates, whatever `requires_grad` says. Which mode stops that?",
                _grad_only, match_output=False),
        Mistake("bn_batch_stats", "The running statistics no longer move, but the backbone's BatchNorm layers "
                "still normalise each batch with its own mean and variance, so its features differ from the "
                "pretrained model's (which uses the running statistics). Put the frozen part in eval mode.",
                _momentum_zero, match_output=False),
        Mistake("returned_frozen", "Your list includes frozen parameters. Give the optimizer only what trains: "
                "if anything unfroze them later, the optimizer would update them at the head's rate.",
                _all_params, match_output=False),
        Mistake("returned_generator", "You returned a generator (`model.fc.parameters()`): it is used up after "
                "one pass, and an optimizer built from it again gets an empty list. Return a list.",
                _generator, match_output=False),
        Mistake("returned_copies", "Some items you returned are not the model's own parameters (a copy, "
                "`.detach()`, `.data`?): the optimizer would update tensors the model does not use.",
                _copies, match_output=False),
        Mistake("returned_not_head", "Return exactly the head's parameters, `model.fc`'s: they are what still "
                "trains.", lambda m: (freeze_all_but_fc(m), [])[1], match_output=False),
        _LIST.mistake(),
    ],
    hints=[
        "The optimizer is one thing that changes a backbone during training. What else changes a BatchNorm layer "
        "during a forward pass in training mode, whatever its parameters' `requires_grad` says?",
        "Stop both for every part of the model except the head: the parameters stop requiring grad, and the modules "
        "go to eval mode, while the head stays in training mode. Then hand the optimizer only what still trains, as a "
        "list (a generator is used up after one pass).",
        "Look up `nn.Module.named_children`, `nn.Module.requires_grad_`, `nn.Module.eval` and `nn.Module.parameters`; "
        "the stem (`conv1`, `bn1`) is a child too.",
    ],
))
