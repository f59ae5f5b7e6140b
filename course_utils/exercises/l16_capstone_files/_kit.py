"""What two or more of lesson 16's exercises share: a private folder for files, small models."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile

import torch
from torch import nn

from course_utils.grading import Rand

LESSON = "16_capstone_files"



@functools.cache
def private_folder() -> str:
    """One folder per process for the files the checks write (removed at exit)."""
    path = tempfile.mkdtemp(prefix="capstone16-check-")
    atexit.register(shutil.rmtree, path, True)
    return path


def small_classifier(r: Rand, num_classes: int, size: int = 8) -> nn.Module:
    """A tiny CNN for (N, 1, size, size) floats with BatchNorm and Dropout, its BatchNorm
    statistics set as a trained one has them, in training mode."""
    with torch.random.fork_rng(devices=[]):  # default init draws from the global RNG
        torch.manual_seed(r.integer(0, 2**31))
        model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                              nn.Dropout(0.3), nn.Linear(4 * size * size, num_classes))
    with torch.no_grad():
        model[1].running_mean.copy_(r.randn(4) * 0.3)
        model[1].running_var.copy_(r.rand(4) + 0.5)
    return model.train()


def uint8_images(r: Rand, n: int, size: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(r.integer(0, 2**31))
    return torch.randint(0, 256, (n, 1, size, size), generator=g, dtype=torch.uint8)
