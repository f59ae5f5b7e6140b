"""amp_train_step: one training step with the forward pass and the loss under bfloat16 autocast.

Subtle: autocast's default dtype is float16 on CUDA (so `dtype=torch.bfloat16` must be given),
the parameters stay float32 (the model is not converted), the loss belongs inside the `with`
block, and `device_type` must follow the batch (`X.device.type`), not be a constant.
"""

from __future__ import annotations

import contextlib
import functools
import warnings

import torch
from torch import nn

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON
from ._kit import META, mlp


# --- reference: the solution notebook's answer, generated from solutions/10_gpu_amp_ddp.py
from .._references.l10_gpu_amp_ddp import amp_train_step


# --- cases
def _cases(r: Rand) -> Case:
    d, h, c, n = r.integer(3, 12), r.integer(4, 24), r.integer(2, 5), r.integer(4, 24)
    model = mlp(r, d, h, c)
    stale = [r.randn(*p.shape) for p in model.parameters()]
    return Case((model, r.randn(n, d), r.randint(0, c, (n,))), {"stale": stale, "lr": r.uniform(0.2, 0.8)})


# --- run and probes
def _run(answer, case: Case):
    model, X, y = case.args
    for p, g in zip(model.parameters(), case.kwargs["stale"]):
        p.grad = g.clone()  # left over from an earlier step: zero_grad must clear it
    optimizer = torch.optim.SGD(model.parameters(), lr=case.kwargs["lr"])
    seen = []
    handle = model[0].register_forward_hook(lambda mod, inp, out: seen.append(out.dtype))
    # autocast's default dtype is bfloat16 on a CPU but float16 on CUDA: during the step the CPU
    # default is float16 too, so an autocast without `dtype=` shows up as float16 here.
    default = torch.get_autocast_dtype(X.device.type)
    torch.set_autocast_dtype(X.device.type, torch.float16)
    try:
        loss = answer(model, X, y, nn.CrossEntropyLoss(), optimizer)
    finally:
        torch.set_autocast_dtype(X.device.type, default)
        handle.remove()
    params = [p.detach().clone() for p in model.parameters()]
    if any(p.dtype != torch.float32 for p in params):
        raise Incorrect("cast_model")
    if seen and seen[0] == torch.float16:
        raise Incorrect("float16_autocast")
    if seen and seen[0] == torch.float32:
        raise Incorrect("no_autocast")
    return loss, params


def _probe_device_type(answer, r: Rand) -> None:
    """Run the step on `meta` tensors with `torch.autocast` replaced by a recorder: the
    `device_type` the answer asks for must be the batch's (`X.device.type`), not a constant."""
    seen: list[str] = []
    real = torch.autocast

    class Recorder(contextlib.nullcontext):
        def __init__(self, device_type=None, *args, **kwargs):
            seen.append(str(device_type))
            super().__init__()

    model = mlp(r, 3, 4, 2).to(META)
    X, y = torch.zeros(4, 3, device=META), torch.zeros(4, dtype=torch.long, device=META)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.autocast = torch.amp.autocast = Recorder  # type: ignore[misc]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            answer(model, X, y, nn.CrossEntropyLoss(), optimizer)
    except Exception:  # noqa: BLE001 - `.item()` of a meta tensor fails: we only want the device_type
        pass
    finally:
        torch.autocast = torch.amp.autocast = real  # type: ignore[misc]
    if seen and seen[0] != META.type:
        raise Incorrect("hard_coded_device", got=repr(seen[0]), device=META.type)


# --- wrong answers
# The reference's five steps with one knob turned.
def _variant(model, X, y, loss_fn, optimizer, *, device_type=None, dtype=torch.bfloat16, zero=True,
             loss_inside=True, cast_model=False):
    if cast_model:
        model.bfloat16()
        X = X.bfloat16()
    if zero:
        optimizer.zero_grad()
    with torch.autocast(device_type=device_type or X.device.type, dtype=dtype or torch.bfloat16,
                        enabled=dtype is not None and not cast_model):
        logits = model(X)
        if loss_inside:
            loss = loss_fn(logits, y)
    if not loss_inside:
        loss = loss_fn(logits, y)  # outside autocast: cross-entropy of bfloat16 logits runs in bfloat16
    loss.backward()
    optimizer.step()
    return loss.item()


# --- declaration
register(Exercise(
    lesson=LESSON, name="amp_train_step", title="One training step with bfloat16 autocast",
    reference=amp_train_step,
    cases=_cases,
    n_random=4,
    timeout=10.0,
    run=_run,
    probes=[_probe_device_type],
    compare=Compare(rtol=1e-3, atol=1e-4),
    mistakes=[
        Mistake("hard_coded_device", "Your step asked for `torch.autocast({got}, ...)` for a batch on `{device}`: "
                "the text says `device_type=X.device.type`. With a constant, the same code on a GPU batch would "
                "not autocast at all.", functools.partial(_variant, device_type="cpu"), match_output=False),
        Mistake("no_autocast", "The forward pass ran in float32: it was not inside `torch.autocast(device_type=..., "
                "dtype=torch.bfloat16)`. Put the model call and the loss inside that `with` block.",
                functools.partial(_variant, dtype=None), match_output=False),
        Mistake("cast_model", "Your step converted the model's parameters to a low-precision dtype (with "
                "`.bfloat16()`, say): that is not mixed precision, and small updates vanish in low-precision "
                "weights. With autocast the parameters (the master weights the optimizer updates) stay float32; "
                "only the operations inside `torch.autocast(...)` compute in bfloat16.",
                functools.partial(_variant, cast_model=True), match_output=False),
        Mistake("float16_autocast", "The forward pass ran in float16. Pass `dtype=torch.bfloat16` to "
                "`torch.autocast` (without `dtype=`, autocast uses the device's default, which is float16 on "
                "CUDA): bfloat16 has float32's range, so no GradScaler is needed; float16 gradients can "
                "underflow to zero without one.", functools.partial(_variant, dtype=torch.float16),
                match_output=False),
        Mistake("loss_outside_autocast", "Only the model call was inside autocast, so cross-entropy ran on "
                "bfloat16 logits in bfloat16 (autocast would have run it in float32). Put the loss inside the "
                "`with torch.autocast(...)` block too.", functools.partial(_variant, loss_inside=False)),
        Mistake("forgot_zero_grad", "Your step used gradients left over from an earlier step: call "
                "`optimizer.zero_grad()` before `backward()`, otherwise gradients add up across steps.",
                functools.partial(_variant, zero=False)),
    ],
    hints=[
        "The five steps are the usual ones: zero_grad, forward, loss, backward, step. Only the forward pass "
        "and the loss go inside `with torch.autocast(device_type=X.device.type, dtype=torch.bfloat16):`.",
        "`backward()` and `optimizer.step()` come after the `with` block; the parameters stay float32.",
        "Return `loss.item()`, a Python float.",
    ],
))
