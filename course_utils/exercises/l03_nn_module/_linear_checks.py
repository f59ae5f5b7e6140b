"""The state_dict and initial-value checks of the ``Linear`` exercise (linear.py), kept apart so
that file stays one short read; the verdict on the initial distribution is judged here on the plain
data the probe returned (``Exercise.finish_probe``: in the instructor's grader the probe runs next
to the answer, which can rewrite it)."""

from __future__ import annotations

import torch
from torch import nn

from course_utils.grading import Incorrect

PROBE_IN, PROBE_OUT = 300, 200  # the probe's large layer


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


def _tensors(d) -> dict[str, torch.Tensor] | None:
    if isinstance(d, dict) and d and all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in d.items()):
        return d
    return None


def distribution_verdict(j: int, ran) -> None:
    """Uniform on +-1/sqrt(in_features) on a large layer, like nn.Linear, and drawn from the global
    stream: the same seed gives the same layer, another seed another one."""
    large = _tensors(ran.get("large")) if isinstance(ran, dict) else None
    layers = ran.get("layers") if isinstance(ran, dict) else None
    layers = [_tensors(d) for d in layers] if isinstance(layers, list) and len(layers) == 3 else None
    if large is None or layers is None or None in layers:  # (only a rewritten probe sends anything else)
        raise Incorrect("init_not_global_rng", what="the grader received no initial values to look at")
    bound = PROBE_IN ** -0.5
    for name, p in large.items():
        values = p.detach().double().flatten()
        if name.endswith("bias") and bool((values == 0).all()):
            raise Incorrect("bias_init_zero")
        if values.numel() == 0 or values.abs().max() > bound * (1 + 1e-6):
            raise Incorrect("init_scale")
        std, expected = float(values.std()), bound / 3 ** 0.5
        tolerance = 0.05 if values.numel() > 1000 else 0.3
        if not abs(std / expected - 1) <= tolerance or not abs(float(values.mean())) <= 0.2 * bound:
            raise Incorrect("init_not_uniform", name=name.rsplit(".", 1)[-1])
    a, b, c = layers

    def same(x, y):
        return x.keys() == y.keys() and all(x[k].shape == y[k].shape and torch.equal(x[k], y[k]) for k in x)
    if same(a, c):
        raise Incorrect("init_not_global_rng", what="after two different `torch.manual_seed` the weights were "
                        "the same")
    if not same(a, b):
        raise Incorrect("init_not_global_rng", what="after the same `torch.manual_seed` the weights differed")
