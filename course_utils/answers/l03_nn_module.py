"""Generated from solutions/03_nn_module.py by `python -m course_utils build`; do not edit.

The answer definitions of the lesson's solution notebook (marker lines dropped) and the
notebook-level names they use; the exercises of 03_nn_module take their references from here."""

# ruff: noqa

import torch
from torch import nn
import math


class Tower(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])
        self.scale = nn.Parameter(torch.ones(width))

    def forward(self, x):
        for block in self.blocks:
            x = torch.relu(block(x))
        return x * self.scale


class MLP(nn.Module):
    def __init__(self, in_features, hidden_sizes, num_classes):
        super().__init__()
        layers = []
        width = in_features
        for hidden in hidden_sizes:
            layers += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        layers.append(nn.Linear(width, num_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))  # one learned scale per feature, as in the checkpoint

    def forward(self, x):
        # each vector over its own features (the last dimension, whatever the rank); eps inside the
        # square root, whose slope at 0 is infinite
        rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x / rms * self.weight


class Linear(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        bound = in_features ** -0.5
        self.weight = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound))
        if bias:
            self.bias = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
        else:
            self.register_parameter("bias", None)  # `layer.bias` is None, and no state_dict entry

    def forward(self, x):
        out = x @ self.weight.T  # (*, in) @ (in, out): matmul broadcasts over the leading dimensions
        if self.bias is not None:
            out = out + self.bias
        return out


class RunningMean(nn.Module):
    def __init__(self, num_features, momentum=0.1):
        super().__init__()
        self.momentum = momentum
        # a buffer: saved in the state_dict, moved by .to(), never handed to an optimizer
        self.register_buffer("running_mean", torch.zeros(num_features))

    def forward(self, x):
        if self.training:  # the module's mode decides, not autograd's grad mode
            with torch.no_grad():  # bookkeeping: the statistic is data, not part of the graph
                batch_mean = x.mean(dim=0)
                self.running_mean.mul_(1 - self.momentum).add_(self.momentum * batch_mean)
        return x - self.running_mean  # the output stays in the graph


def freeze_backbone(model):
    model.backbone.requires_grad_(False)  # no gradients, the optimizer cannot change them
    model.backbone.eval()                 # BatchNorm: use and keep the running statistics
    return [p for p in model.parameters() if p.requires_grad]  # a list: it can be read twice


def init_weights(m):
    if isinstance(m, nn.Linear):
        # each output sums in_features terms, and ReLU keeps half of the mean square: He normal
        nn.init.normal_(m.weight, mean=0.0, std=math.sqrt(2 / m.in_features))
        if m.bias is not None:
            nn.init.zeros_(m.bias)


def predict_proba(model, X):
    modes = [(m, m.training) for m in model.modules()]  # every submodule's own mode
    model.eval()
    with torch.no_grad():
        probs = torch.softmax(model(X), dim=1)
    for m, training in modes:
        m.training = training
    return probs
