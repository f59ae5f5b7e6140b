"""finetune_param_groups: AdamW parameter groups for full fine-tuning, the new head at ``head_lr``
and every other parameter at the lower ``backbone_lr``, for a head in ``fc`` or ``classifier[-1]``.

The decision: the notebook shows a teammate's groups (``model.parameters()`` at backbone_lr plus
``model.fc.parameters()``) that AdamW refuses; the learner reads the error, decides what each group
holds, and finds the head on a MobileNet-like model too (the whole ``classifier`` is not the head:
its first Linear is pretrained and belongs at ``backbone_lr``).

Subtle: every parameter exactly once (``model.parameters()`` plus the head's lists the head
twice), none missing (a filter on "conv" in the name drops the BatchNorm parameters), the rates
the right way round (the random head needs the larger one), and each group saying its own lr.
The check builds ``torch.optim.AdamW(groups, lr=<a rate neither argument has>)`` and reads the
lr each parameter gets. Accepted: any number of groups, a head that is a Sequential, tuples.
"""

from __future__ import annotations

import warnings

import torch

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, describe, kept, register

from torch import nn

from ._kit import LESSON, glyph_mobilenet, glyph_resnet

# --- reference: the solution notebook's answer (generated from solutions/14_transfer_learning.py)
from ...answers.l14_transfer_learning import finetune_param_groups

DEFAULT_LR = 0.123  # the optimizer's lr: a parameter that ends up with it came from a group without "lr"


# --- cases
def _cases(r: Rand) -> Case:
    head_lr = r.choice([1e-2, 3e-3, 1e-3])
    model = glyph_mobilenet(r) if r.integer(0, 2) == 0 else glyph_resnet(r, head=r.choice(["dropout", "linear"]))
    return Case((model, head_lr, head_lr * r.choice([0.05, 0.1, 0.3])))


def _head_ids(model: nn.Module) -> set[int]:
    head = model.fc if hasattr(model, "fc") else model.classifier[-1]  # type: ignore[index]
    return {id(p) for p in head.parameters()}


def _backbone_frozen(model: nn.Module) -> nn.Module:
    head = _head_ids(model)
    for p in model.parameters():
        p.requires_grad_(id(p) in head)
    return model


EDGE_CASES = [
    Case((glyph_resnet(Rand(1), num_classes=10), 1e-2, 1e-3), label="GlyphResNet, head 1e-2, backbone 1e-3"),
    Case((_backbone_frozen(glyph_resnet(Rand(4), num_classes=10)), 1e-2, 1e-3),
         label="a GlyphResNet whose backbone the caller froze (feature extraction first)"),
    Case((glyph_mobilenet(Rand(3), num_classes=10), 1e-2, 1e-3),
         label="a MobileNet-like model (head: the last layer of `classifier`), head 1e-2, backbone 1e-3"),
    Case((glyph_resnet(Rand(2), head="dropout"), 3e-3, 3e-4), label="a head of Dropout and Linear"),
]


# --- run
def _read(groups, model) -> dict[int, tuple[float, bool]]:
    if not isinstance(groups, (list, tuple)) or not groups or not all(
            isinstance(g, dict) and "params" in g for g in groups):
        raise Incorrect("not_groups", got=describe(groups))
    if any(isinstance(g["params"], (set, frozenset)) for g in groups):  # as add_param_group refuses them
        raise Incorrect("params_in_a_set")
    groups = [dict(g, params=[g["params"]] if isinstance(g["params"], torch.Tensor) else list(g["params"]))
              for g in groups]
    said = ["lr" in g for g in groups]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt = torch.optim.AdamW([g for g in groups if g["params"]] or groups, lr=DEFAULT_LR)
    except ValueError as exc:
        if "more than one parameter group" in str(exc):
            raise Incorrect("listed_twice") from None
        if "empty parameter list" in str(exc):
            raise Incorrect("missing", name=next(n for n, _ in model.named_parameters())) from None
        raise
    said = [s for s, g in zip(said, groups) if g["params"]] or said
    seen: dict[int, tuple[float, bool]] = {}
    for group, given in zip(opt.param_groups, said):
        for p in group["params"]:
            if id(p) in seen:
                raise Incorrect("listed_twice")
            seen[id(p)] = (float(group["lr"]), given)
    return seen


def _run(answer, case: Case):
    model, head_lr, backbone_lr = case.args
    with kept(modes={"model": model}):  # a function that lists groups freezes and unfreezes nothing
        groups = answer(model, head_lr, backbone_lr)
    seen = _read(groups, model)
    names = {id(p): n for n, p in model.named_parameters()}
    if any(i not in names for i in seen):
        raise Incorrect("not_the_models")
    for n, p in model.named_parameters():
        if id(p) not in seen:
            raise Incorrect("missing", name=n)
    head = _head_ids(model)
    lrs = {n: seen[id(p)] for n, p in model.named_parameters()}
    if any(not given for _, given in lrs.values()):
        raise Incorrect("default_lr")
    got_head = {lr for n, (lr, _) in lrs.items() if id(model.get_parameter(n)) in head}
    got_back = {lr for n, (lr, _) in lrs.items() if id(model.get_parameter(n)) not in head}
    if got_head == {backbone_lr} and got_back == {head_lr}:
        raise Incorrect("swapped")
    if got_head == got_back:
        raise Incorrect("same_lr", lr=next(iter(got_head)))
    for n, (lr, _) in lrs.items():
        want = head_lr if id(model.get_parameter(n)) in head else backbone_lr
        if lr != want:
            raise Incorrect("pretrained_at_head_lr" if lr == head_lr else "wrong_lr", name=n, got=lr, want=want)
    return {n: lr for n, (lr, _) in lrs.items()}


# --- wrong answers
def _as_sets(model, head_lr, backbone_lr):  # right groups, as sets: AdamW raises TypeError
    head = set((model.fc if hasattr(model, "fc") else model.classifier[-1]).parameters())
    return [{"params": set(model.parameters()) - head, "lr": backbone_lr}, {"params": head, "lr": head_lr}]


def _both(model, head_lr, backbone_lr):  # the notebook's teammate
    return [{"params": model.parameters(), "lr": backbone_lr}, {"params": model.fc.parameters(), "lr": head_lr}]


def _whole_classifier(model, head_lr, backbone_lr):
    head = model.fc if hasattr(model, "fc") else model.classifier
    ids = {id(p) for p in head.parameters()}
    return [{"params": [p for p in model.parameters() if id(p) not in ids], "lr": backbone_lr},
            {"params": list(head.parameters()), "lr": head_lr}]


def _convs_only(model, head_lr, backbone_lr):
    return [{"params": [p for n, p in model.named_parameters() if "conv" in n], "lr": backbone_lr},
            {"params": list(model.fc.parameters()), "lr": head_lr}]


def _swapped(model, head_lr, backbone_lr):
    return finetune_param_groups(model, backbone_lr, head_lr)


def _same(model, head_lr, backbone_lr):
    return [{"params": list(model.parameters()), "lr": head_lr}]


def _no_lr(model, head_lr, backbone_lr):
    backbone, head = finetune_param_groups(model, head_lr, backbone_lr)
    return [backbone, {"params": head["params"]}]


# --- declaration
register(Exercise(
    lesson=LESSON, name="finetune_param_groups",
    title="Parameter groups for fine-tuning: a lower rate for the backbone",
    reference=finetune_param_groups, kind="function", cases=_cases, n_random=4, edge_cases=EDGE_CASES, run=_run,
    preload=("torch._dynamo",),  # building an optimizer imports it: not on the clock
    mistakes=[
        Mistake("listed_twice", "A parameter is in two of your groups (AdamW: \"some parameters appear in more "
                "than one parameter group\"): `model.parameters()` includes the head's. Leave the head's out of "
                "the backbone group.", _both, match_output=False),
        Mistake("missing", "`{name}` is in none of your groups, so it would never train (a filter on the name, "
                "such as \"conv\", misses the BatchNorm parameters). Every parameter goes in exactly one group.",
                _convs_only, match_output=False),
        Mistake("swapped", "Your rates are swapped: the head gets `backbone_lr` and the backbone `head_lr`. The "
                "new head starts random and needs the larger rate; the pretrained backbone only needs nudging.",
                _swapped, match_output=False),
        Mistake("same_lr", "Every parameter gets the same rate ({lr}): the pretrained backbone should move more "
                "slowly than the new head. Two groups, two rates.", _same, match_output=False),
        Mistake("default_lr", "A group of yours gives no `\"lr\"`, so it takes whatever rate the optimizer is "
                "built with. Each group says its own rate here: the function is the one place that decides.",
                _no_lr, match_output=False),
        Mistake("pretrained_at_head_lr", "`{name}` is pretrained, yet it gets the head's rate {got}: only the "
                "new head, the last layer the features pass through, starts random (on a MobileNet-like model "
                "the last layer of `classifier`, not all of it).", _whole_classifier, match_output=False),
        Mistake("params_in_a_set", "A group's \"params\" is a set, and the optimizer refuses it (TypeError: "
                "optimizer parameters need to be organized in ordered collections): a set's order changes from "
                "run to run, so a saved optimizer state would not find its parameters again. Keep the model's "
                "order: a list.", _as_sets, match_output=False),
        Mistake("wrong_lr", "`{name}` gets lr {got}; it should get {want}.", match_output=False),
        Mistake("not_the_models", "Your groups hold tensors that are not the model's parameters (copies?).",
                match_output=False),
        Mistake("not_groups", "Return a list of dicts, each with \"params\" and \"lr\"; you returned {got}.",
                lambda model, h, b: list(model.parameters()), match_output=False),
    ],
    hints=[
        "What does AdamW's error say about the teammate's two groups? Which layer of each model starts random, and "
        "how can you tell its parameters from all the others so that each lands in exactly one group?",
        "Only the new head, the last layer the features pass through (exercise 4), needs the larger rate; every "
        "other parameter, BatchNorm's and a classifier's earlier layers included, is pretrained. Each group states "
        "its own rate. What tells you that a parameter is one of the head's, whatever kind of layer it sits in?",
        "Look up per-parameter options in `torch.optim.Optimizer`'s documentation, `nn.Module.named_parameters` and "
        "Python's `id`.",
    ],
))
