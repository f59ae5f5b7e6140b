"""What two or more of lesson 14's exercises share: the models they are checked on."""

from __future__ import annotations

from typing import TypeVar

import torch
from torch import nn

from course_utils.grading import Rand
from course_utils.lesson_props.l14_transfer_learning import GlyphResNet

LESSON = "14_transfer_learning"
M = TypeVar("M", bound=nn.Module)


def glyph_resnet(r: Rand, num_classes: int | None = None, head: str = "linear") -> GlyphResNet:
    """A small GlyphResNet with random widths and BatchNorm statistics as a pretrained one has
    them (not the fresh 0 and 1), in training mode. ``head="dropout"`` makes ``fc`` a
    ``Sequential(Dropout, Linear)``: a head that is not one Linear."""
    widths = (r.integer(2, 4), r.integer(3, 5), r.integer(4, 7))
    k = num_classes if num_classes is not None else r.integer(2, 6)
    with torch.random.fork_rng(devices=[]):  # default init draws from the global RNG
        torch.manual_seed(r.integer(0, 2**31))
        model = GlyphResNet(num_classes=k, widths=widths)
        if head == "dropout":
            model.fc = nn.Sequential(nn.Dropout(0.2), nn.Linear(widths[-1], k))  # type: ignore[assignment]
    return _pretrained_statistics(model, r)


def _pretrained_statistics(model: M, r: Rand) -> M:
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(r.randn(m.num_features) * 0.3)
                m.running_var.copy_(r.rand(m.num_features) + 0.5)
                m.num_batches_tracked.fill_(100)
    return model.train()


class GlyphMobileNet(nn.Module):
    """A head that is not ``fc``: a small backbone, then ``classifier``, a Sequential whose LAST
    layer is the head (Linear, Hardswish, Dropout, Linear), as torchvision's MobileNets keep it."""

    def __init__(self, num_classes: int, width: int, hidden: int):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(width, hidden), nn.Hardswish(), nn.Dropout(0.2),
                                        nn.Linear(hidden, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


def glyph_mobilenet(r: Rand, num_classes: int | None = None) -> GlyphMobileNet:
    """A GlyphMobileNet with pretrained-like BatchNorm statistics, in training mode; the hidden
    width differs from the feature width, so an ``in_features`` read from the wrong layer shows."""
    width, hidden = r.integer(3, 6), r.integer(8, 12)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(r.integer(0, 2**31))
        model = GlyphMobileNet(num_classes if num_classes is not None else r.integer(2, 6), width, hidden)
    return _pretrained_statistics(model, r)


def head_ids(model: nn.Module) -> set[int]:
    return {id(p) for p in model.fc.parameters()}
