"""Helpers shared by the exercises of 10_performance: the ``meta`` device and small seeded
models (weights drawn from the case's :class:`Rand`, never from the global RNG)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils import skip_init

from course_utils.grading import Rand

LESSON = "10_performance"

META = torch.device("meta")


def fill(module: nn.Module, r: Rand, scale: float = 0.5) -> nn.Module:
    """Random weights from ``r`` (never from the global RNG)."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(r.randn(*p.shape) * scale)
    return module


def mlp(r: Rand, d_in: int, hidden: int, d_out: int) -> nn.Sequential:
    return fill(nn.Sequential(skip_init(nn.Linear, d_in, hidden), nn.ReLU(), skip_init(nn.Linear, hidden, d_out)), r)


def saved_bytes(fn):
    """``(bytes autograd saved for backward while running fn, fn's result)``."""
    total = [0]

    def pack(t):
        total[0] += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return total[0], out


def uses_reentrant(out: torch.Tensor) -> bool:
    """Whether the graph behind ``out`` holds a reentrant checkpoint node."""
    seen, todo = set(), [out.grad_fn]
    while todo:
        fn = todo.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        if type(fn).__name__ == "CheckpointFunctionBackward":
            return True
        todo.extend(next_fn for next_fn, _ in fn.next_functions)
    return False


def state_changing(block: nn.Module) -> bool:
    """Does running ``block`` change its state (a BatchNorm in training mode updates running statistics)?"""
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm) and m.training for m in block.modules())


def plain_forward(blocks, x):
    """``x`` through ``blocks`` in order, nothing saved or skipped."""
    for block in blocks:
        x = block(x)
    return x
