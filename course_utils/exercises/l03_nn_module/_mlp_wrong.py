"""The MLP exercise's named wrong answers: the reference with one decision changed."""

from __future__ import annotations

import torch
from torch import nn

from course_utils.lesson_props.l03_checkpoint import TEAMMATE_SPEC

from ...answers.l03_nn_module import MLP

class _NotAModule:
    def __init__(self, in_features, hidden_sizes, num_classes):
        self.sizes = [in_features, *hidden_sizes, num_classes]


class _NoSuper(MLP):
    def __init__(self, in_features, hidden_sizes, num_classes):  # no super().__init__()
        self.net = nn.Linear(in_features, num_classes)


class _MutatesSizes(MLP):
    def __init__(self, in_features, hidden_sizes, num_classes):
        hidden_sizes.append(num_classes)  # the caller's list
        super().__init__(in_features, hidden_sizes[:-1], num_classes)


class _PlainList(MLP):
    def __init__(self, in_features, hidden_sizes, num_classes):
        super().__init__(in_features, hidden_sizes, num_classes)
        self.layers = list(self._modules.pop("net"))  # a Python list: PyTorch does not see it

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class _NoBias(MLP):
    def __init__(self, in_features, hidden_sizes, num_classes):
        super().__init__(in_features, hidden_sizes, num_classes)
        for layer in self.net[::2]:
            layer.bias = None


class _ReversedHidden(MLP):
    def __init__(self, in_features, hidden_sizes, num_classes):
        super().__init__(in_features, hidden_sizes[::-1], num_classes)


class _Hardcoded(MLP):  # the teammate's sizes typed in: right for their spec only
    def __init__(self, in_features, hidden_sizes, num_classes):
        super().__init__(TEAMMATE_SPEC[0], list(TEAMMATE_SPEC[1]), TEAMMATE_SPEC[2])


def _relu_between(layers, x):
    for layer in layers[:-1]:
        x = torch.relu(layer(x))
    return layers[-1](x)


class _ModuleList(MLP):  # the Linears in a ModuleList `layers`, ReLUs in forward: right values, other keys
    def __init__(self, in_features, hidden_sizes, num_classes):
        super().__init__(in_features, hidden_sizes, num_classes)
        self.layers = nn.ModuleList(self._modules.pop("net")[::2])

    def forward(self, x):
        return _relu_between(self.layers, x)


class _ReluOutsideSequential(MLP):  # only the Linears in the Sequential, ReLUs in forward: indices close up
    def __init__(self, in_features, hidden_sizes, num_classes):
        super().__init__(in_features, hidden_sizes, num_classes)
        self.net = nn.Sequential(*self.net[::2])

    def forward(self, x):
        return _relu_between(self.net, x)


class _HiddenNoGrad(MLP):
    def forward(self, x):
        with torch.no_grad():
            features = self.net[:-1](x)
        return self.net[-1](features)


class _Softmax(MLP):
    def forward(self, x):
        return torch.softmax(self.net(x), dim=1)


class _LogSoftmax(MLP):
    def forward(self, x):
        return torch.log_softmax(self.net(x), dim=1)


class _NoActivation(MLP):
    def forward(self, x):
        for layer in self.net[::2]:
            x = layer(x)
        return x


class _ReluOnOutput(MLP):
    def forward(self, x):
        return torch.relu(self.net(x))
