"""The layers first_nonfinite's cases are built from: each makes (or hides) a NaN or an inf its own way."""

from __future__ import annotations

import torch
from torch import nn


class Log(nn.Module):
    def forward(self, x):
        return torch.log(x)


class Reciprocal(nn.Module):
    def forward(self, x):
        return 1.0 / x


class Exp(nn.Module):
    def forward(self, x):
        return torch.exp(1000.0 * x)  # overflows float32 for x above about 0.09


class WithAux(nn.Module):
    """Returns a tuple (output, auxiliary), like an RNN's (output, state)."""

    def __init__(self, width: int):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        return self.proj(x), x.abs().sum(-1) * 3e38  # inf unless a row is all zeros


class Clean(nn.Module):
    """Replaces nan and inf by numbers, as a careless `nan_to_num` would hide a bug."""

    def forward(self, x):
        return torch.nan_to_num(x, nan=0.0, posinf=1.0, neginf=-1.0)


class TakeFirst(nn.Module):
    def forward(self, pair):
        return pair[0]


class HeadFirst(nn.Module):
    """Children defined head first, run body first: the order of definition is not the order of
    execution."""

    def __init__(self, width: int):
        super().__init__()
        self.head = nn.Sequential(nn.Linear(width, 3), nn.Tanh())
        self.body = nn.Sequential(nn.Linear(width, width), nn.ReLU(), Log())

    def forward(self, x):
        return self.head(torch.nan_to_num(self.body(x), neginf=0.0) + 1.0)


class LogInForward(nn.Module):
    """The model's own forward (not a child) makes the -inf."""

    def __init__(self, width: int):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.act = nn.ReLU()

    def forward(self, x):
        return torch.log(self.act(self.fc(x)))
