"""The state_dict and initial-value checks of the ``Linear`` exercise (linear.py), kept apart so
that file stays one short read."""

from __future__ import annotations

import torch
from torch import nn

from course_utils.grading import Incorrect


def check_parameters(model: nn.Module, n_in: int, n_out: int, bias: bool) -> None:
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    want = {"weight": (n_out, n_in), **({"bias": (n_out,)} if bias else {})}
    if shapes == want:
        if not bias and getattr(model, "bias", "absent") is not None:
            raise Incorrect("no_bias_attribute")
        if not all(p.requires_grad and p.dtype == torch.float32 for p in model.parameters()):
            raise Incorrect("wrong_parameters", got=shapes)
        return
    if "weight" not in shapes:
        raise Incorrect("unregistered")
    if shapes["weight"] == (n_in, n_out) and n_in != n_out:
        raise Incorrect("weight_transposed")
    if bias and "bias" not in shapes:
        raise Incorrect("unregistered")
    if not bias and "bias" in shapes:
        raise Incorrect("bias_not_optional")
    raise Incorrect("wrong_parameters", got=shapes)


def check_init(model: nn.Module, n_in: int, n_out: int) -> None:
    """Every initial value within the bound (the spread is a probe's job, on a large layer)."""
    bound = n_in ** -0.5
    for p in model.parameters():
        if p.detach().abs().max() > bound * (1 + 1e-6):
            wider = (n_out ** -0.5) if n_out < n_in else None
            if wider is not None and p.detach().abs().max() <= wider * (1 + 1e-6):
                raise Incorrect("init_fan_out")
            raise Incorrect("init_scale")
