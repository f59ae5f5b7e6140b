"""small_vgg's known-wrong answers: each makes one of its declared mistakes (the exercise file names which)."""

from __future__ import annotations


import torch
from torch import nn
from ...answers.l08_convolutions import SmallVGG



class _NotAModule:  # no `(nn.Module)`
    def __init__(self, in_channels, num_classes, widths, image_size):
        self.widths = widths


class _NoSuper(SmallVGG):
    def __init__(self, in_channels, num_classes, widths, image_size):  # no super().__init__()
        self.features = nn.Sequential()


def _reblocked(block):
    """SmallVGG with each block's (conv, bn, relu, pool) rebuilt as ``block(conv, bn, relu, pool)``."""
    class Variant(SmallVGG):
        def __init__(self, in_channels, num_classes, widths, image_size):
            super().__init__(in_channels, num_classes, widths, image_size)
            mods = list(self.features)
            self.features = nn.Sequential(*[m for i in range(0, len(mods), 4) for m in block(*mods[i:i + 4])])
    return Variant


_ConvBias = _reblocked(lambda c, b, r, p: [nn.Conv2d(c.in_channels, c.out_channels, 3, padding=1), b, r, p])
_Kernel5 = _reblocked(lambda c, b, r, p: [nn.Conv2d(c.in_channels, c.out_channels, 5, padding=2, bias=False), b, r, p])
_NoBatchNorm = _reblocked(lambda c, b, r, p: [c, r, p])
_NoRunningStats = _reblocked(lambda c, b, r, p: [c, nn.BatchNorm2d(b.num_features, track_running_stats=False), r, p])
_ReluBeforeBN = _reblocked(lambda c, b, r, p: [c, r, b, p])
_PoolBeforeBN = _reblocked(lambda c, b, r, p: [c, p, b, r])


class _FlattenNoPool(SmallVGG):
    def __init__(self, in_channels, num_classes, widths, image_size):
        super().__init__(in_channels, num_classes, widths, image_size)
        h, w = image_size  # forgot that every block halves the size
        self.classifier[1] = nn.Linear(widths[-1] * h * w, num_classes)


class _View(SmallVGG):
    def forward(self, x):
        x = self.features(x)
        return self.classifier[1](x.view(x.shape[0], -1))


class _Softmax(SmallVGG):
    def forward(self, x):
        return torch.softmax(super().forward(x), dim=1)


class _PlainLists(SmallVGG):
    def __init__(self, in_channels, num_classes, widths, image_size):
        super().__init__(in_channels, num_classes, widths, image_size)
        self.layers = [*self._modules.pop("features"), *self._modules.pop("classifier")]  # unseen by PyTorch

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class _ExtraParameter(SmallVGG):
    def __init__(self, in_channels, num_classes, widths, image_size):
        super().__init__(in_channels, num_classes, widths, image_size)
        self.temperature = nn.Parameter(torch.ones(1))


class _DetachedFeatures(SmallVGG):
    def forward(self, x):
        with torch.no_grad():
            features = self.features(x)
        return self.classifier(features)
