"""Helpers shared by the exercises of 11_distributed: small seeded
models (weights drawn from the case's :class:`Rand`, never from the global RNG)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils import skip_init

from course_utils.grading import Rand

LESSON = "11_distributed"


def fill(module: nn.Module, r: Rand, scale: float = 0.5) -> nn.Module:
    """Random weights from ``r`` (never from the global RNG)."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(r.randn(*p.shape) * scale)
    return module


def mlp(r: Rand, d_in: int, hidden: int, d_out: int) -> nn.Sequential:
    return fill(nn.Sequential(skip_init(nn.Linear, d_in, hidden), nn.ReLU(), skip_init(nn.Linear, hidden, d_out)), r)
