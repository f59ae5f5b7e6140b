"""Lesson 14's backbone: a small ResNet for 28x28 glyphs, and the letters it was pretrained on.

``GlyphResNet`` is a ResNet in miniature (a 3x3 stem, three residual blocks, global average
pooling, one ``fc``), named as torchvision's ResNets are, so that what the lesson does to it
(replace ``fc``, freeze the rest) is what one does to ``torchvision.models.resnet18``.

The course pretrained it on letters (``tools/pretrain_glyph_backbone.py``: seeded and
deterministic, well under a minute on a CPU) and ships the weights next to this package,
``data/glyph_resnet_letters.safetensors``, with the recipe, the seed, the normalisation
statistics and the letter accuracy it reached on fonts it never saw in
``data/glyph_resnet_letters.json``. :func:`load_pretrained` loads both, offline.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from course_utils import glyphs

DATA = Path(__file__).resolve().parent / "data"
WEIGHTS = DATA / "glyph_resnet_letters.safetensors"
RECIPE = DATA / "glyph_resnet_letters.json"

PRETRAIN_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
HELD_OUT_FONTS: tuple[str, ...] = ("DejaVuSans-BoldOblique", "DejaVuSansMono-Oblique", "DejaVuSerif-Italic",
                                   "STIXGeneralBol", "cmss10", "cmtt10")
"""Fonts neither the pretraining nor the lesson's few labelled digits ever use: the test fonts."""
PRETRAIN_FONTS: tuple[str, ...] = tuple(f for f in glyphs.FONTS if f not in HELD_OUT_FONTS)
WIDTHS = (8, 16, 32)


class BasicBlock(nn.Module):
    """conv3x3(stride)-BN-ReLU-conv3x3-BN, plus the input (through a 1x1 conv and BN where the
    shape changes), then ReLU: torchvision's ``BasicBlock`` with its names."""

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.downsample = nn.Sequential()
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.downsample(x))


class GlyphResNet(nn.Module):
    """stem (conv3x3-BN-ReLU) -> layer1 (stride 1) -> layer2 (stride 2) -> layer3 (stride 2) -> GAP -> fc."""

    def __init__(self, num_classes: int = 10, widths: tuple[int, ...] = WIDTHS, in_channels: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, widths[0], 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.layer1 = BasicBlock(widths[0], widths[0])
        self.layer2 = BasicBlock(widths[0], widths[1], stride=2)
        self.layer3 = BasicBlock(widths[1], widths[2], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(widths[2], num_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return torch.flatten(self.avgpool(x), 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.features(x))


def read_recipe() -> dict:
    """The recipe the shipped weights were trained with, and what they reached."""
    return json.loads(RECIPE.read_text(encoding="utf-8"))


def load_pretrained() -> tuple[GlyphResNet, dict]:
    """The course's letter-pretrained GlyphResNet (in eval mode) and its recipe (offline)."""
    from safetensors.torch import load_file

    recipe = read_recipe()
    model = GlyphResNet(num_classes=len(recipe["letters"]), widths=tuple(recipe["widths"]))
    model.load_state_dict(load_file(str(WEIGHTS)))
    return model.eval(), recipe


def render_tensors(chars: str, fonts: tuple[str, ...] | list[str], per_font: int, seed: int,
                   size: int = 28) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """Glyphs as tensors, without files: uint8 images ``(N, 1, size, size)``, labels (the index of
    the character in ``chars``) and each image's font, with :func:`glyphs.render`'s pixels
    (the same seeds as :func:`glyphs.make_image_folder`)."""
    images, labels, font_of = [], [], []
    for label, char in enumerate(chars):
        for font in fonts:
            for k in range(per_font):
                rng = random.Random(f"{seed}/{char}/{font}/{k}")
                images.append(np.asarray(glyphs.render(char, font, rng, size)))
                labels.append(label)
                font_of.append(font)
    x = torch.from_numpy(np.stack(images)).unsqueeze(1)
    return x, torch.tensor(labels), font_of


def normalise(images: torch.Tensor, mean: float, std: float) -> torch.Tensor:
    """uint8 images to floats in [0, 1], then standardised with the given statistics."""
    return (images.float() / 255.0 - mean) / std


@torch.no_grad()
def accuracy(model: nn.Module, X: torch.Tensor, y: torch.Tensor, batch_size: int = 256) -> float:
    """The fraction of ``X`` that ``model`` (put in eval mode, then back) classifies right."""
    was = model.training
    model.eval()
    correct = sum(int((model(X[i:i + batch_size]).argmax(1) == y[i:i + batch_size]).sum())
                  for i in range(0, len(X), batch_size))
    model.train(was)
    return correct / max(1, len(X))
