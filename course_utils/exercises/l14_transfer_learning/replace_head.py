"""replace_head: give a model with an ``fc`` Linear a new, trainable head for k classes.

Subtle: REPLACE ``fc`` (appending a Linear after the old one keeps the old classes as a
bottleneck), take ``in_features`` from the old head (not a hard-coded 512), a new Linear (setting
``fc.out_features`` changes an attribute, not the weight), the head trainable and the rest
untouched (a frozen backbone stays frozen; a reinitialised model loses its pretraining).
Accepted: any head that maps ``fc.in_features`` to k with only new, trainable parameters, e.g.
``Sequential(Dropout, Linear)``; the model returned, modified in place or not.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from course_utils.grading import Case, Exercise, Expect, Incorrect, Mistake, Rand, register

from ._kit import LESSON, glyph_resnet

# --- reference: the solution notebook's answer (generated from solutions/14_transfer_learning.py)
from ...answers.l14_transfer_learning import replace_head


# --- cases
def _cases(r: Rand) -> Case:
    model = glyph_resnet(r)
    if r.integer(0, 1):  # half the models come with the backbone frozen, as after feature extraction
        for name, p in model.named_parameters():
            p.requires_grad_(name.startswith("fc."))
    old_k = model.fc.out_features
    return Case((model, r.choice([k for k in range(2, 9) if k != old_k])))


def _frozen(r: Rand) -> Any:
    model = glyph_resnet(r, num_classes=26)
    for name, p in model.named_parameters():
        p.requires_grad_(name.startswith("fc."))
    return model


EDGE_CASES = [
    Case((glyph_resnet(Rand(1), num_classes=26), 10), label="26 letters to 10 digits"),
    Case((_frozen(Rand(2)), 10), label="the backbone already frozen: it stays frozen"),
    Case((glyph_resnet(Rand(3), num_classes=3), 5), label="3 classes to 5"),
]


# --- run
_MODULE = Expect("not_a_module", "the model (an `nn.Module`)", nn.Module)


def _run(answer: Any, case: Case) -> Any:
    model, k = case.args
    old_fc = model.fc
    old_in, old_out = old_fc.in_features, old_fc.out_features
    old_ids = {id(p) for p in old_fc.parameters()}
    rest = [(n, p.detach().clone(), p.requires_grad) for n, p in model.named_parameters() if not n.startswith("fc.")]
    modes = {n: m.training for n, m in model.named_modules() if n != "fc" and not n.startswith("fc.")}
    got = answer(model, k)
    if got is None:
        raise Incorrect("returned_none")
    got = _MODULE.check(got)
    fc = getattr(got, "fc", None)
    if fc is old_fc:
        raise Incorrect("set_attribute" if fc.out_features != old_out else "not_replaced")
    if not isinstance(fc, nn.Module):
        raise Incorrect("no_fc", got=type(fc).__name__)
    if any(id(p) in old_ids for p in fc.parameters()):
        raise Incorrect("appended")
    # the pretrained values, in the model returned (modified in place, or a copy such as `copy.deepcopy`'s)
    now = dict(got.named_parameters())
    if any(n not in now or now[n].shape != p.shape or not torch.equal(now[n].detach(), p) for n, p, _ in rest):
        raise Incorrect("backbone_replaced")
    if not all(p.requires_grad for p in fc.parameters()):
        raise Incorrect("head_frozen")
    if any(now[n].requires_grad != flag for n, _, flag in rest):
        raise Incorrect("backbone_flags_changed")
    now_modes = {n: m.training for n, m in got.named_modules() if n != "fc" and not n.startswith("fc.")}
    if now_modes != modes:
        raise Incorrect("mode_changed")
    was = got.training
    got.eval()
    try:
        with torch.no_grad():
            out = got(torch.randn(2, 1, 12, 12, generator=torch.Generator().manual_seed(0)))
    except RuntimeError as exc:
        if "cannot be multiplied" in str(exc):
            raise Incorrect("wrong_in_features", want=old_in) from None
        raise
    finally:
        got.train(was)
    if tuple(out.shape) == (2, old_out):
        raise Incorrect("kept_out_features", got=old_out, want=k)
    return {"output shape": list(out.shape), "head trainable": True}


# --- wrong answers
def _set_attribute(model, num_classes):
    model.fc.out_features = num_classes
    return model


def _appended(model, num_classes):
    model.fc = nn.Sequential(model.fc, nn.Linear(model.fc.out_features, num_classes))
    return model


def _kept_out(model, num_classes):
    model.fc = nn.Linear(model.fc.in_features, model.fc.out_features)
    return model


def _hard_coded(model, num_classes):
    model.fc = nn.Linear(512, num_classes)
    return model


def _frozen_after(model, num_classes):
    model.fc = nn.Linear(model.fc.in_features, num_classes)
    model.requires_grad_(False)
    return model


def _unfreezes(model, num_classes):
    model.fc = nn.Linear(model.fc.in_features, num_classes)
    return model.requires_grad_(True)


def _no_return(model, num_classes):
    model.fc = nn.Linear(model.fc.in_features, num_classes)


def _sets_eval(model, num_classes):
    model.fc = nn.Linear(model.fc.in_features, num_classes)
    return model.eval()


def _fresh_model(model, num_classes):
    with torch.random.fork_rng(devices=[]):
        return type(model)(num_classes=num_classes, widths=(model.conv1.out_channels, model.layer2.conv1.out_channels,
                                                              model.fc.in_features))


# --- declaration
register(Exercise(
    lesson=LESSON, name="replace_head", title="Replace the head for a new number of classes",
    reference=replace_head, kind="function", cases=_cases, n_random=4, edge_cases=EDGE_CASES, run=_run,
    mistakes=[
        Mistake("set_attribute", "You changed `fc.out_features`, an attribute that only records the size: the "
                "layer's weight is still the old one and it still outputs the old classes. Assign a new "
                "`nn.Linear` to `model.fc`.", _set_attribute, match_output=False),
        Mistake("appended", "Your new head sits after the old one (the old `fc` is still inside `model.fc`): "
                "every prediction passes through the old classes' scores first. Replace `fc`, do not append to "
                "it.", _appended, match_output=False),
        Mistake("kept_out_features", "Your new head still has {got} outputs; the new task has {want} classes.",
                _kept_out, match_output=False),
        Mistake("wrong_in_features", "Your head's input size does not match the features (\"mat1 and mat2 "
                "shapes cannot be multiplied\"): the backbone gives {want} per image. Read it from the old head, "
                "`model.fc.in_features`, rather than typing a number (512 is resnet18's).", _hard_coded,
                match_output=False),
        Mistake("head_frozen", "Your new head does not require grad, so nothing would train it. Freeze the "
                "backbone, never the head.", _frozen_after, match_output=False),
        Mistake("backbone_flags_changed", "You changed which backbone parameters require grad (unfroze a "
                "frozen backbone, or froze a trainable one). Replacing the head is only that; freezing is a "
                "separate decision (exercise 5).", _unfreezes, match_output=False),
        Mistake("mode_changed", "Your function switched the model's training/eval mode (`.eval()` or `.train()`): "
                "fine-tuning would then run BatchNorm and Dropout in a mode nobody chose. Replacing the head is "
                "only that; leave the modes as they were.", _sets_eval, match_output=False),
        Mistake("backbone_replaced", "The backbone's parameters are not the ones the model came with (a new "
                "model, or reinitialised layers?): the pretrained weights are the point. Keep the model and "
                "change only `fc`.", _fresh_model, match_output=False),
        Mistake("returned_none", "Your function returned None: return the model.", _no_return, match_output=False),
        Mistake("not_replaced", "`model.fc` is still the old head: assign a new layer to `model.fc`.",
                lambda model, num_classes: model, match_output=False),
        Mistake("no_fc", "Your model's `fc` is {got}: make it the new head, a layer from `in_features` to the new "
                "number of classes.", match_output=False),
        _MODULE.mistake(),
    ],
    hints=[
        "What does the old head tell you about the features that come into it, and what must be different about the "
        "new one?",
        "A new layer takes the old head's place (not after it, and not the old one with an attribute changed): as "
        "many inputs as the old head had, `num_classes` outputs. A freshly made layer already requires grad; the "
        "backbone's flags and the model's mode stay as they were.",
        "Look up `nn.Linear` and its attribute `in_features`; assigning a module to an attribute of a model registers "
        "it in the model.",
    ],
))
