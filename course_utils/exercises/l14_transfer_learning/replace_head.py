"""replace_head: give a pretrained model a new, trainable head for k classes, wherever the model
keeps its head (``fc`` as in ResNets, or the last layer of ``classifier`` as in MobileNets).

The decision: a teammate's ``model.fc = nn.Linear(512, k)`` works on resnet18 only. The learner
must find the layer the features pass through last (on a MobileNet-like model, setting ``fc``
adds a layer forward never calls), read its ``in_features`` (not 512, not the hidden layer's),
and replace that layer only (not the whole ``classifier``, whose first layers are pretrained,
and not an earlier Linear). The rest stays: values, ``requires_grad`` flags, modes.
Accepted: any head that maps the old head's ``in_features`` to k with only new, trainable
parameters; found by type, by name or by hand; the model returned, modified in place or a copy.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from course_utils.grading import Case, Exercise, Expect, Incorrect, Mistake, Rand, register

from ._kit import LESSON, glyph_mobilenet, glyph_resnet

# --- reference: the solution notebook's answer (generated from solutions/14_transfer_learning.py)
from ...answers.l14_transfer_learning import replace_head


# --- cases
def _head_path(model: nn.Module) -> str:
    """Where the case's model keeps its head: the grader knows, the learner has to look."""
    return "fc" if hasattr(model, "fc") else f"classifier.{len(model.classifier) - 1}"  # type: ignore[arg-type]


def _under(name: str, path: str) -> bool:
    return name == path or name.startswith(path + ".")


def _cases(r: Rand) -> Case:
    model: nn.Module = glyph_resnet(r) if r.integer(0, 1) else glyph_mobilenet(r)
    path = _head_path(model)
    if r.integer(0, 1):  # half the models come with the backbone frozen, as after feature extraction
        for name, p in model.named_parameters():
            p.requires_grad_(_under(name, path))
    old_k = model.get_submodule(path).out_features
    return Case((model, r.choice([k for k in range(2, 9) if k != old_k])))


def _frozen(model: nn.Module) -> nn.Module:
    for name, p in model.named_parameters():
        p.requires_grad_(_under(name, _head_path(model)))
    return model


EDGE_CASES = [
    Case((glyph_resnet(Rand(1), num_classes=26), 10), label="a GlyphResNet (head `fc`), 26 letters to 10 digits"),
    Case((glyph_mobilenet(Rand(4), num_classes=26), 10),
         label="a MobileNet-like model (head: the last layer of `classifier`), 26 classes to 10"),
    Case((_frozen(glyph_resnet(Rand(2), num_classes=26)), 10), label="the backbone already frozen: it stays frozen"),
    Case((_frozen(glyph_mobilenet(Rand(5), num_classes=3)), 5), label="a frozen MobileNet-like model, 3 classes to 5"),
]


# --- run
_MODULE = Expect("not_a_module", "the model (an `nn.Module`)", nn.Module)


def _lookup(model: nn.Module, path: str) -> Any:
    obj: Any = model
    for part in path.split("."):
        obj = getattr(obj, part, None)
    return obj


def _forward(model: nn.Module) -> torch.Tensor:
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            return model(torch.randn(2, 1, 12, 12, generator=torch.Generator().manual_seed(0)))
    finally:
        model.train(was)


def _pretrained_replaced(changed: list[str], path: str, head_kept: bool) -> None:
    """A pretrained layer replaced: one before the head, the head's whole container, or more."""
    parent = path.rpartition(".")[0]
    if parent and all(n.startswith(parent + ".") for n in changed):
        if head_kept:
            raise Incorrect("wrong_layer", name=changed[0].rpartition(".")[0], path=path)
        raise Incorrect("replaced_container", parent=parent)
    raise Incorrect("backbone_replaced")


def _old_head_kept(got: nn.Module, resized: bool, known: set[int], k: int, path: str) -> None:
    """The old head is still in place: an attribute changed, a layer added after it or elsewhere, or nothing."""
    if resized:
        raise Incorrect("set_attribute")
    if any(id(p) not in known for p in got.parameters()):
        try:
            out_k = _forward(got).shape[-1]
        except RuntimeError:
            out_k = None
        raise Incorrect("appended" if out_k == k else "head_unused", path=path)
    raise Incorrect("not_replaced", path=path)


def _run(answer: Any, case: Case) -> Any:
    model, k = case.args
    path = _head_path(model)
    old = model.get_submodule(path)
    old_in, old_out = old.in_features, old.out_features
    old_ids = {id(p) for p in old.parameters()}
    known = {id(p) for p in model.parameters()}
    rest = [(n, p.detach().clone(), p.requires_grad) for n, p in model.named_parameters() if not _under(n, path)]
    modes = {n: m.training for n, m in model.named_modules() if not _under(n, path)}
    got = answer(model, k)
    if got is None:
        raise Incorrect("returned_none")
    got = _MODULE.check(got)
    head = _lookup(got, path)
    now = dict(got.named_parameters())
    changed = [n for n, p, _ in rest if n not in now or now[n].shape != p.shape or not torch.equal(now[n].detach(), p)]
    if changed:
        _pretrained_replaced(changed, path, head is old)
    if head is old:
        _old_head_kept(got, old.out_features != old_out, known, k, path)
    if not isinstance(head, nn.Module):
        raise Incorrect("no_head", path=path, got="missing" if head is None else type(head).__name__)
    if any(id(p) in old_ids for p in head.parameters()):
        raise Incorrect("appended", path=path)
    if not all(p.requires_grad for p in head.parameters()):
        raise Incorrect("head_frozen")
    if any(now[n].requires_grad != flag for n, _, flag in rest):
        raise Incorrect("backbone_flags_changed")
    if {n: m.training for n, m in got.named_modules() if not _under(n, path)} != modes:
        raise Incorrect("mode_changed")
    try:
        out = _forward(got)
    except RuntimeError as exc:
        if "cannot be multiplied" in str(exc):
            raise Incorrect("wrong_in_features", want=old_in) from None
        raise
    if tuple(out.shape) == (2, old_out):
        raise Incorrect("kept_out_features", got=old_out, want=k)
    return {"output shape": list(out.shape), "head trainable": True}


# --- wrong answers
def _teammates(model, num_classes):  # the notebook's: right for resnet18 only
    model.fc = nn.Linear(512, num_classes)
    return model


def _fc_only(model, num_classes):
    model.fc = nn.Linear(model.fc.in_features if hasattr(model, "fc") else model.classifier[-1].in_features,
                         num_classes)
    return model


def _whole_classifier(model, num_classes):
    if hasattr(model, "fc"):
        return replace_head(model, num_classes)
    model.classifier = nn.Linear(model.classifier[0].in_features, num_classes)
    return model


def _first_linear(model, num_classes):
    name = next(n for n, m in model.named_modules() if isinstance(m, nn.Linear))
    model.set_submodule(name, nn.Linear(model.get_submodule(name).in_features, num_classes))
    return model


def _set_attribute(model, num_classes):
    model.fc.out_features = num_classes
    return model


def _appended(model, num_classes):
    model.fc = nn.Sequential(model.fc, nn.Linear(model.fc.out_features, num_classes))
    return model


def _kept_out(model, num_classes):
    model.fc = nn.Linear(model.fc.in_features, model.fc.out_features)
    return model


def _frozen_after(model, num_classes):
    return replace_head(model, num_classes).requires_grad_(False)


def _unfreezes(model, num_classes):
    return replace_head(model, num_classes).requires_grad_(True)


def _no_return(model, num_classes):
    replace_head(model, num_classes)


def _sets_eval(model, num_classes):
    return replace_head(model, num_classes).eval()


def _fresh_model(model, num_classes):
    with torch.random.fork_rng(devices=[]):
        return type(model)(num_classes=num_classes, widths=(model.conv1.out_channels, model.layer2.conv1.out_channels,
                                                              model.fc.in_features))


# --- declaration
register(Exercise(
    lesson=LESSON, name="replace_head", title="Replace the head, wherever the model keeps it",
    reference=replace_head, kind="function", cases=_cases, n_random=4, edge_cases=EDGE_CASES, run=_run,
    mistakes=[
        Mistake("wrong_in_features", "Your head's input size does not match the features (\"mat1 and mat2 "
                "shapes cannot be multiplied\"): the layers before the head give {want} per image. Read it from "
                "the old head rather than typing a number (512 is resnet18's) or taking another layer's.",
                _teammates, match_output=False),
        Mistake("head_unused", "You added a new layer, but this model's forward never calls it: its head is "
                "`{path}`, which still outputs the old classes. Print the model and replace the layer the "
                "features pass through last.", _fc_only, match_output=False),
        Mistake("replaced_container", "You replaced the whole `{parent}`: the pretrained layers before its last "
                "one went with it. Replace the head only, the last layer.", _whole_classifier, match_output=False),
        Mistake("wrong_layer", "You replaced `{name}`, a pretrained layer before the head; the head, `{path}`, "
                "still outputs the old classes. Replace the layer the features pass through last.",
                _first_linear, match_output=False),
        Mistake("set_attribute", "You changed the head's `out_features`, an attribute that only records the "
                "size: the layer's weight is still the old one and it still outputs the old classes. Put a new "
                "layer in the head's place.", _set_attribute, match_output=False),
        Mistake("appended", "Your new head sits after the old one (the old head is still on the path): every "
                "prediction passes through the old classes' scores first. Replace the head, do not append to it.",
                _appended, match_output=False),
        Mistake("kept_out_features", "Your new head still has {got} outputs; the new task has {want} classes.",
                _kept_out, match_output=False),
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
                "change only its head.", _fresh_model, match_output=False),
        Mistake("returned_none", "Your function returned None: return the model.", _no_return, match_output=False),
        Mistake("not_replaced", "`{path}`, this model's head, is still the old layer: put a new one in its place.",
                lambda model, num_classes: model, match_output=False),
        Mistake("no_head", "This model's head `{path}` is {got} in the model you returned: make it the new head, "
                "a layer from the old head's `in_features` to the new number of classes.", match_output=False),
        _MODULE.mistake(),
    ],
    hints=[
        "Print the two torchvision models above: which layer produces the class scores in each, and what does that "
        "layer tell you about the features that come into it?",
        "The head is the layer the features pass through last, wherever the model keeps it. A new layer takes its "
        "place, and only its place, with as many inputs as the old one had; the layers before it, the "
        "`requires_grad` flags and the modes stay as they were.",
        "Look up `nn.Module.named_modules`, `nn.Module.set_submodule` (or indexing an `nn.Sequential`) and "
        "`nn.Linear`'s attribute `in_features`.",
    ],
))
