"""Generated from solutions/14_transfer_learning.py by `python -m course_utils build`; do not edit.

The answer definitions of the lesson's solution notebook (marker lines dropped) and the
notebook-level names they use; the exercises of 14_transfer_learning take their references from here."""

# ruff: noqa

import torch.nn.functional as F
from torch import nn


class ResidualBlock(nn.Module):
    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.downsample = nn.Identity()
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(out_channels))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.downsample(x))


def global_avg_pool(x):
    return x.mean(dim=(2, 3))


def preprocess(images, recipe):
    return (images.float() / 255.0 - recipe["mean"]) / recipe["std"]


def replace_head(model, num_classes):
    # the head is the last layer the features pass through: in these models (and torchvision's
    # classifiers) the last Linear registered, `fc` or `classifier[-1]`
    name, old = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Linear)][-1]
    model.set_submodule(name, nn.Linear(old.in_features, num_classes))
    return model


def freeze_all_but_fc(model):
    for name, child in model.named_children():
        if name != "fc":
            child.requires_grad_(False)
            child.eval()
    return list(model.fc.parameters())


def finetune_param_groups(model, head_lr, backbone_lr):
    head = [m for m in model.modules() if isinstance(m, nn.Linear)][-1]  # as in exercise 4: the last layer
    head_ids = {id(p) for p in head.parameters()}
    backbone = [p for p in model.parameters() if id(p) not in head_ids]
    return [{"params": backbone, "lr": backbone_lr}, {"params": list(head.parameters()), "lr": head_lr}]
