"""Helpers shared by several exercises of 02_autograd."""

from __future__ import annotations

from typing import Any

import torch

from course_utils.grading import Rand

LESSON = "02_autograd"


def close(a: Any, b: Any, rtol: float = 1e-4, atol: float = 1e-5) -> bool:
    """Both tensors, same shape, and allclose (in ``b``'s dtype, without their graphs)."""
    return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
            and bool(torch.allclose(a.detach().to(b.dtype), b.detach(), rtol=rtol, atol=atol)))


def small_shape(r: Rand) -> tuple[int, ...]:
    """A random small shape (1-D or 2-D) with at least two elements."""
    if r.integer(0, 2) == 0:
        return (r.integer(2, 4), r.integer(2, 4))
    return (r.integer(2, 12),)
