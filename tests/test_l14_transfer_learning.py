"""Lesson 14 (residual networks and transfer learning), every test of its own in one file: the
shipped backbone (its weights still classify letters from fonts it never saw, its recipe tells
the truth about it, a retrain reproduces it), then the red team (wrong answers, valid unusual
answers, cheats) of the six exercises. The contract tests shared by every exercise are in
tests/test_exercises.py. Nothing here imports torchvision (the lesson's notebook does)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_utils.answers.l14_transfer_learning import (
    ResidualBlock as _Ref, finetune_param_groups as _groups, freeze_all_but_fc as _freeze, preprocess as _pre,
    replace_head as _replace)
from course_utils.lesson_props import l14_transfer_learning as tl

from lesson_kit import Tables  # noqa: E402 (tests/ is on sys.path)

LESSON = "14_transfer_learning"
ROOT = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------- the shipped backbone
def test_shipped_weights_are_small_and_match_their_recipe():
    recipe = tl.read_recipe()
    data = tl.WEIGHTS.read_bytes()
    assert len(data) < 1_000_000 and len(data) == recipe["bytes"]
    assert hashlib.sha256(data).hexdigest() == recipe["sha256"]
    assert not set(recipe["train_fonts"]) & set(recipe["test_fonts"])
    assert set(recipe["test_fonts"]) == set(tl.HELD_OUT_FONTS)
    assert recipe["test_accuracy"] >= 0.85 and recipe["seed"] == 0


def test_shipped_weights_classify_letters_from_unseen_fonts():
    """Images the pretraining never drew (another data seed) in the six held-out fonts."""
    model, recipe = tl.load_pretrained()
    X, y, _ = tl.render_tensors(recipe["letters"], tl.HELD_OUT_FONTS, 1, seed=12345)
    acc = tl.accuracy(model, tl.normalise(X, recipe["mean"], recipe["std"]), y)
    assert acc >= 0.8, acc  # 26 classes: chance is 3.8 %


def test_the_lessons_few_labels_never_use_a_test_font():
    source = (ROOT / "solutions" / "14_transfer_learning.py").read_text(encoding="utf-8")
    line = next(x for x in source.splitlines() if x.startswith("few_fonts = "))
    few = eval(line.split("=", 1)[1])  # noqa: S307 - a tuple literal of the course's own notebook
    assert len(few) == 5 and not set(few) & set(tl.HELD_OUT_FONTS) and set(few) <= set(tl.PRETRAIN_FONTS)


@pytest.mark.slow
def test_the_tool_retrains_to_the_recorded_accuracy(tmp_path):
    """tools/pretrain_glyph_backbone.py from scratch (about a minute): the same recipe reaches the
    recorded letter accuracy (bit for bit on the torch that trained it; within 3 points on others)."""
    subprocess.run([sys.executable, str(ROOT / "tools" / "pretrain_glyph_backbone.py"), "--out", str(tmp_path)],
                   check=True, capture_output=True, timeout=600)
    shipped, again = tl.read_recipe(), json.loads((tmp_path / tl.RECIPE.name).read_text(encoding="utf-8"))
    if again["torch"] == shipped["torch"]:
        assert again["sha256"] == shipped["sha256"]
    assert abs(again["test_accuracy"] - shipped["test_accuracy"]) <= 0.03
    assert (again["mean"], again["std"]) == (shipped["mean"], shipped["std"])


# --------------------------------------------------------------------------- red team
_tables = Tables()  # tests/lesson_kit.py
wrong, valid, cheat = _tables.wrong, _tables.valid, _tables.cheat

EX = f"{LESSON}.ResidualBlock"


@wrong(EX, "relu_before_add")
class ReluEverywhere(_Ref):
    def forward(self, x):
        out = F.relu(self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))))
        return out + self.downsample(x)


@wrong(EX, "no_relu_after_add")
class Linear_out(_Ref):
    def forward(self, x):
        return torch.add(self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x))))), self.downsample(x))


@wrong(EX, "no_projection")
class NoneShortcut(_Ref):
    def __init__(self, i, o, stride=1):
        super().__init__(i, o, stride)
        self.downsample = None

    def forward(self, x):
        out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(out + x)


@wrong(EX, "bn_after_add")
class NormTheSum(_Ref):
    def forward(self, x):
        return F.relu(self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))) + self.downsample(x)))


@wrong(EX, "needless_projection")
class ProjectAlways(_Ref):
    def __init__(self, i, o, stride=1):
        super().__init__(i, o, stride)
        self.downsample = nn.Sequential(nn.Conv2d(i, o, 1, stride=stride, bias=False), nn.BatchNorm2d(o))


@wrong(EX, "shortcut_on_output")
class AddOwnOutput(_Ref):
    def forward(self, x):
        out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(out + self.downsample(out))


@wrong(EX, "wrong_layers")
class OtherNames(nn.Module):
    def __init__(self, i, o, stride=1):
        super().__init__()
        self.body = _Ref(i, o, stride)

    def forward(self, x):
        return self.body(x)


@valid(EX)
class IdentityNone(nn.Module):
    def __init__(self, i, o, stride=1):
        super().__init__()
        self.downsample = None
        if stride != 1 or i != o:
            self.downsample = nn.Sequential(nn.Conv2d(i, o, kernel_size=1, stride=stride, bias=False),
                                            nn.BatchNorm2d(o))
        self.bn2 = nn.BatchNorm2d(o)
        self.conv2 = nn.Conv2d(o, o, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(o)
        self.conv1 = nn.Conv2d(i, o, 3, stride, 1, bias=False)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


@valid(EX)
class EmptySequential(_Ref):
    def __init__(self, i, o, stride=1):
        super().__init__(i, o, stride)
        if isinstance(self.downsample, nn.Identity):
            self.downsample = nn.Sequential()


@valid(EX)
class IdentityModule(nn.Module):
    """``nn.Identity`` where nothing is projected, ReLU modules, the sum with ``torch.add``."""

    def __init__(self, i, o, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(i, o, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(o)
        self.conv2 = nn.Conv2d(o, o, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(o)
        self.downsample = (nn.Sequential(nn.Conv2d(i, o, 1, stride=stride, bias=False), nn.BatchNorm2d(o))
                           if stride != 1 or i != o else nn.Identity())
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(torch.add(self.bn2(self.conv2(self.act(self.bn1(self.conv1(x))))), self.downsample(x)))


# the course's own block (GlyphResNet's, a lesson prop the sandbox keeps), handed in or called
wrong(EX, "course_block")(tl.BasicBlock)


@wrong(EX, "course_block")
class CallsTheProp(_Ref):
    def forward(self, x):
        return tl.BasicBlock.forward(self, x)


@cheat(EX)
class Zeros(_Ref):
    def forward(self, x):
        return torch.zeros_like(self.bn2(self.conv2(self.conv1(x))))


@cheat(EX)
class PassThrough(_Ref):
    def forward(self, x):
        return F.relu(self.downsample(x))


EX = f"{LESSON}.global_avg_pool"


@wrong(EX, "wrong_dims")
def gap_channels(x):
    return x.mean(dim=(1, 2))


@wrong(EX, "max_not_mean")
def gap_max(x):
    return F.adaptive_max_pool2d(x, 1).flatten(1)


@wrong(EX, "flattened")
def gap_flatten(x):
    return torch.flatten(x, 1)


@wrong(EX, "kept_dims")
def gap_adaptive(x):
    return nn.AdaptiveAvgPool2d(1)(x)


@wrong(EX, "height_only")
def gap_height(x):
    return x.mean(2)


@wrong(EX, "summed")
def gap_sum(x):
    return x.sum(dim=(2, 3))


@wrong(EX, "squeezed_batch")
def gap_squeezed(x):
    return F.adaptive_avg_pool2d(x, 1).squeeze()  # one image: (C,), the batch dim gone too


@valid(EX)
def gap_adaptive_flat(x):
    return F.adaptive_avg_pool2d(x, 1).flatten(1)


@valid(EX)
def gap_negative_dims(x):
    return x.mean((-1, -2))


@valid(EX)
def gap_by_hand(x):
    return x.reshape(x.shape[0], x.shape[1], -1).sum(-1) / (x.shape[2] * x.shape[3])


@cheat(EX)
def gap_first_pixel(x):
    return x[:, :, 0, 0]


@cheat(EX)
def gap_zeros(x):
    return torch.zeros(x.shape[:2])


EX = f"{LESSON}.preprocess"


@wrong(EX, "own_statistics")
def pre_per_image(images, recipe):
    x = images.float() / 255
    return (x - x.mean()) / x.std()


@wrong(EX, "per_image_statistics")
def pre_each_image_its_own(images, recipe):
    x = images.float() / 255
    flat = x.flatten(1)
    return (x - flat.mean(1).view(-1, 1, 1, 1)) / flat.std(1).view(-1, 1, 1, 1)


@wrong(EX, "mean_rescaled_only")
def pre_bytes_minus_byte_mean(images, recipe):
    return (images.float() - recipe["mean"] * 255) / recipe["std"]


@wrong(EX, "imagenet_statistics")
def pre_imagenet(images, recipe):
    return (images / 255 - 0.485) / 0.229


@wrong(EX, "not_scaled")
def pre_unscaled(images, recipe):
    return (images.float() - recipe["mean"]) / recipe["std"]


@wrong(EX, "not_standardised")
def pre_scaled(images, recipe):
    return images / 255.0


@wrong(EX, "mean_std_swapped")
def pre_swapped(images, recipe):
    return (images / 255.0 - recipe["std"]) / recipe["mean"]


@wrong(EX, "not_float")
def pre_int(images, recipe):
    return images.long() - int(recipe["mean"] * 255)


@wrong(EX, "mutated_recipe")
def prep_pops_the_recipe(images, recipe):
    mean, std = recipe.pop("mean"), recipe.pop("std")
    return (images.float() / 255 - mean) / std


@valid(EX)
def pre_divide(images, recipe):
    return images.div(255).sub(recipe["mean"]).div(recipe["std"])


@valid(EX)
def pre_fold(images, recipe):
    """One affine map: x * a + b."""
    a = 1 / (255 * recipe["std"])
    return images.to(torch.float32) * a - recipe["mean"] / recipe["std"]


@valid(EX)
def pre_double_then_float(images, recipe):
    return ((images.double() / 255 - recipe["mean"]) / recipe["std"]).float()


@valid(EX)
def pre_statistics_on_the_byte_scale(images, recipe):
    """The statistics moved to the 0-255 scale, both of them, instead of the bytes to [0, 1]."""
    return (images.to(torch.float32) - 255 * recipe["mean"]) / (255 * recipe["std"])


@cheat(EX)
def pre_course_numbers(images, recipe):
    return (images.float() / 255 - 0.3707) / 0.2998  # the shipped recipe's numbers, typed in


@cheat(EX)
def pre_zero(images, recipe):
    return torch.zeros(images.shape)


EX = f"{LESSON}.replace_head"


@wrong(EX, "wrong_in_features")
def head_teammates_512(model, k):
    """The notebook's teammate: right for resnet18 only."""
    model.fc = nn.Linear(512, k)
    return model


@wrong(EX, "head_unused")
def head_always_fc(model, k):
    """512 fixed, but `fc` set on every model: a MobileNet-like one never calls it."""
    head = model.fc if hasattr(model, "fc") else model.classifier[-1]
    model.fc = nn.Linear(head.in_features, k)
    return model


@wrong(EX, "replaced_container")
def head_whole_classifier(model, k):
    if hasattr(model, "fc"):
        model.fc = nn.Linear(model.fc.in_features, k)
    else:
        model.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(model.classifier[0].in_features, k))
    return model


@wrong(EX, "wrong_layer")
def head_first_linear(model, k):
    container = model if hasattr(model, "fc") else model.classifier
    key = "fc" if hasattr(model, "fc") else "0"
    setattr(container, key, nn.Linear(getattr(container, key).in_features, k))
    return model


@wrong(EX, "wrong_in_features")
def head_hidden_width(model, k):
    """The right place, but `in_features` read from the classifier's first layer."""
    if hasattr(model, "fc"):
        model.fc = nn.Linear(model.fc.in_features, k)
    else:
        model.classifier[-1] = nn.Linear(model.classifier[0].in_features, k)
    return model


@wrong(EX, "appended")
def head_appended(model, k):
    model.fc = nn.Sequential(model.fc, nn.ReLU(), nn.Linear(model.fc.out_features, k))
    return model


@wrong(EX, "kept_out_features")
def head_same_size(model, k):
    model.fc = nn.Linear(model.fc.in_features, model.fc.out_features)
    return model


@wrong(EX, "set_attribute")
def head_attribute(model, k):
    model.fc.out_features = k
    return model


@wrong(EX, "head_frozen")
def head_frozen(model, k):
    model.fc = nn.Linear(model.fc.in_features, k).requires_grad_(False)
    return model


@wrong(EX, "mode_changed")
def head_then_eval(model, k):
    return _replace(model, k).eval()


@wrong(EX, "returned_none")
def head_none(model, k):
    _replace(model, k)


@valid(EX)
def head_by_name(model, k):
    """Each family by its attribute name, as torchvision's fine-tuning tutorials do."""
    if hasattr(model, "fc"):
        model.fc = nn.Linear(model.fc.in_features, k)
    else:
        model.classifier[-1] = nn.Linear(model.classifier[-1].in_features, k)
    return model


@valid(EX)
def head_on_a_deep_copy(model, k):
    """A copy keeps the pretrained values: the model returned is the one to use."""
    import copy

    new = copy.deepcopy(model)
    return _replace(new, k)


@valid(EX)
def head_dropout_by_parent(model, k):
    """The parent module found by name, a head that is not one Linear, sized from the weight."""
    name = [n for n, m in model.named_modules() if isinstance(m, nn.Linear)][-1]
    parent, _, child = name.rpartition(".")
    old = model.get_submodule(name)
    setattr(model.get_submodule(parent), child, nn.Sequential(nn.Dropout(0.3), nn.Linear(old.weight.shape[1], k)))
    return model


@valid(EX)
def head_mlp(model, k):
    name, old = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Linear)][-1]
    n = old.in_features
    model.set_submodule(name, nn.Sequential(nn.Linear(n, n), nn.ReLU(), nn.Linear(n, k)))
    return model


@cheat(EX)
def head_elsewhere(model, k):
    """The new layer attached under another name, which forward never calls."""
    model.classifier = nn.Linear(model.fc.in_features, k)
    model.fc = nn.Identity()
    return model


@cheat(EX)
def head_new_model(model, k):
    return tl.GlyphResNet(num_classes=k, widths=(model.conv1.out_channels, model.layer2.conv1.out_channels,
                                                  model.fc.in_features))


EX = f"{LESSON}.freeze_all_but_fc"


@wrong(EX, "bn_stats_updated")
def freeze_grads(model):
    for n, p in model.named_parameters():
        p.requires_grad = n.startswith("fc.")
    return [p for p in model.parameters() if p.requires_grad]


@wrong(EX, "froze_only_some")
def freeze_layers(model):
    for layer in (model.layer1, model.layer2, model.layer3):
        layer.requires_grad_(False).eval()
    return list(model.fc.parameters())


@wrong(EX, "returned_frozen")
def freeze_all_returned(model):
    _freeze(model)
    return list(model.parameters())


@wrong(EX, "returned_generator")
def freeze_gen(model):
    _freeze(model)
    return (p for p in model.fc.parameters())


@wrong(EX, "head_frozen")
def freeze_everything(model):
    model.requires_grad_(False).eval()
    return []


@wrong(EX, "backbone_not_frozen")
def freeze_nothing(model):
    model.eval()
    model.fc.train()
    return list(model.fc.parameters())


@valid(EX)
def freeze_then_unfreeze(model):
    model.requires_grad_(False)
    model.fc.requires_grad_(True)
    model.eval()
    model.fc.train()
    return list(model.fc.parameters())


@valid(EX)
def freeze_by_modules(model):
    for m in model.modules():
        if m is not model and not any(m is x for x in model.fc.modules()):
            for p in m.parameters(recurse=False):
                p.requires_grad_(False)
            if isinstance(m, nn.BatchNorm2d):
                m.eval()
    return tuple(model.fc.parameters())


@valid(EX)
def freeze_trainable(model):
    _freeze(model)
    return [p for p in model.parameters() if p.requires_grad]


@cheat(EX)
def freeze_momentum_zero(model):
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.momentum = 0.0
    return freeze_grads(model)


@cheat(EX)
def freeze_detached_copies(model):
    _freeze(model)
    return [p.detach().clone().requires_grad_(True) for p in model.fc.parameters()]


EX = f"{LESSON}.finetune_param_groups"


@wrong(EX, "listed_twice")
def groups_teammates(model, head_lr, backbone_lr):
    """The notebook's teammate: generators, and the head in both groups."""
    return [{"params": model.parameters(), "lr": backbone_lr}, {"params": model.fc.parameters(), "lr": head_lr}]


@wrong(EX, "pretrained_at_head_lr")
def groups_whole_classifier(model, head_lr, backbone_lr):
    """The head found by name, but all of `classifier` taken for it: its first Linear is pretrained."""
    head = model.fc if hasattr(model, "fc") else model.classifier
    ids = {id(p) for p in head.parameters()}
    return [{"params": [p for p in model.parameters() if id(p) not in ids], "lr": backbone_lr},
            {"params": list(head.parameters()), "lr": head_lr}]


@wrong(EX, "params_in_a_set")  # right groups as sets: AdamW raises TypeError on them (review finding)
def groups_as_sets(model, head_lr, backbone_lr):
    head = set((model.fc if hasattr(model, "fc") else model.classifier[-1]).parameters())
    return [{"params": set(model.parameters()) - head, "lr": backbone_lr}, {"params": head, "lr": head_lr}]


@wrong(EX, "listed_twice")
def groups_twice(model, head_lr, backbone_lr):
    return [{"params": list(model.fc.parameters()), "lr": head_lr},
            {"params": list(model.parameters()), "lr": backbone_lr}]


@wrong(EX, "missing")
def groups_by_name(model, head_lr, backbone_lr):
    return [{"params": [p for n, p in model.named_parameters() if "layer" in n], "lr": backbone_lr},
            {"params": list(model.fc.parameters()), "lr": head_lr}]


@wrong(EX, "swapped")
def groups_swapped(model, head_lr, backbone_lr):
    return _groups(model, backbone_lr, head_lr)


@wrong(EX, "same_lr")
def groups_same(model, head_lr, backbone_lr):
    return [{"params": [p for n, p in model.named_parameters() if not n.startswith("fc.")], "lr": backbone_lr},
            {"params": list(model.fc.parameters()), "lr": backbone_lr}]


@wrong(EX, "default_lr")
def groups_default(model, head_lr, backbone_lr):
    return [{"params": [p for n, p in model.named_parameters() if not n.startswith("fc.")], "lr": backbone_lr},
            {"params": list(model.fc.parameters())}]


@valid(EX)
def groups_by_prefix(model, head_lr, backbone_lr):
    prefix = "fc." if hasattr(model, "fc") else f"classifier.{len(model.classifier) - 1}."
    back, head = [], []
    for n, p in model.named_parameters():
        (head if n.startswith(prefix) else back).append(p)
    return ({"params": head, "lr": head_lr}, {"params": back, "lr": backbone_lr})


@valid(EX)
def groups_per_parameter(model, head_lr, backbone_lr):
    """One group per parameter, the head found by name as torchvision's tutorials do."""
    head = model.fc if hasattr(model, "fc") else model.classifier[-1]
    ids = {id(p) for p in head.parameters()}
    return [{"params": [p], "lr": head_lr if id(p) in ids else backbone_lr} for p in model.parameters()]


@valid(EX)
def groups_extra_keys(model, head_lr, backbone_lr):
    return [dict(g, weight_decay=0.0) for g in _groups(model, head_lr, backbone_lr)]


@cheat(EX)
def groups_copies(model, head_lr, backbone_lr):
    return [{"params": [p.detach().clone().requires_grad_() for p in g["params"]], "lr": g["lr"]}
            for g in _groups(model, head_lr, backbone_lr)]


@cheat(EX)
def groups_head_only(model, head_lr, backbone_lr):
    return [{"params": list(model.fc.parameters()), "lr": head_lr}]


# ----------------------------------------------------------------------------- the caller's objects
# A review (2026-11-29) had these pass: the recipe's numbers replaced by equal tensors, a block
# that adds into its input in place on the identity path, a frozen backbone unfrozen.
@wrong(f"{LESSON}.preprocess", "mutated_recipe")
def tensorises_the_recipe(images, recipe):
    recipe["mean"], recipe["std"] = torch.as_tensor(recipe["mean"]), torch.as_tensor(recipe["std"])
    return _pre(images, recipe)


@wrong(f"{LESSON}.ResidualBlock", "mutated_input")
class AddsIntoItsInput(_Ref):
    def forward(self, x):
        out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        shortcut = self.downsample(x)
        shortcut += out  # the caller's x itself when the shortcut is the identity
        return F.relu(shortcut)


@wrong(f"{LESSON}.finetune_param_groups", "mutated_input")
def unfreezes(model, head_lr, backbone_lr):
    model.requires_grad_(True)  # a frozen backbone of the caller's trains from now on
    return _groups(model, head_lr, backbone_lr)


def test_the_message_names_the_callers_object_left_changed():
    from grading_asserts import rejected

    assert "`requires_grad` switched" in rejected(f"{LESSON}.finetune_param_groups", unfreezes, seeds=[1]).message
    assert "`x`" in rejected(f"{LESSON}.ResidualBlock", AddsIntoItsInput, seeds=[1]).message


(test_wrong_answer_is_rejected, test_valid_answer_is_accepted, test_cheat_is_rejected,
 test_every_exercise_has_its_red_team) = _tables.red_team_tests(LESSON)  # tests/lesson_kit.py


def test_preprocess_reference_is_the_notebook_transform():
    """The notebook's torchvision pipeline is ToDtype(scale=True) then Normalize: the same numbers."""
    images = torch.randint(0, 256, (3, 1, 6, 6), dtype=torch.uint8)
    recipe = tl.read_recipe()
    assert torch.allclose(_pre(images, recipe), tl.normalise(images, recipe["mean"], recipe["std"]), atol=1e-6)


def test_replace_head_reference_keeps_a_frozen_backbone_frozen():
    model = tl.GlyphResNet(num_classes=26)
    model.requires_grad_(False)
    out = _replace(model, 10)
    assert out.fc.out_features == 10 and all(p.requires_grad for p in out.fc.parameters())
    assert not any(p.requires_grad for n, p in out.named_parameters() if not n.startswith("fc."))


# --------------------------------------------------------------------------- issue 27: parameter groups
from grading_asserts import accepted, rejected  # noqa: E402 (tests/ is on sys.path)


def _freeze_then(groups):
    def freeze(model):
        return groups(model, _freeze(model))
    return freeze


@pytest.mark.parametrize("groups", [
    lambda m, ps: [{"params": ps}],  # review answer: "not the model's own parameters (a copy...)?"
    lambda m, ps: [{"params": m.fc.parameters(), "lr": 1e-2}],
    lambda m, ps: [{"params": p, "weight_decay": 0.0} for p in ps],
], ids=["one group", "a group of a generator with its lr", "a group per tensor"])
def test_parameter_groups_of_the_head_are_what_the_optimizer_should_get(groups):
    answer = _freeze_then(groups)
    accepted(EX_FREEZE, answer)
    torch.optim.AdamW(answer(tl.GlyphResNet(num_classes=10)))  # an optimizer takes them


def test_parameter_groups_of_more_than_the_head_are_named():
    rejected(EX_FREEZE, _freeze_then(lambda m, ps: [{"params": list(m.parameters())}]), "returned_frozen")
    rejected(EX_FREEZE, _freeze_then(lambda m, ps: [{"params": [p.detach().clone().requires_grad_() for p in ps]}]),
             "returned_copies")


EX_FREEZE = f"{LESSON}.freeze_all_but_fc"
