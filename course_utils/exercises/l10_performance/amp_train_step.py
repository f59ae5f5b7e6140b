"""amp_train_step: one mixed-precision training step in a given autocast dtype, with gradient
clipping, using a GradScaler when one is given.

Subtle: the learner decides the layout. Only the forward pass and the loss go inside autocast;
the parameters stay float32; `device_type` follows the batch; with a scaler the gradients are
scaled between `backward` and `step`, so clipping must come after `scaler.unscale_`, and the
step and the update go through the scaler. The check runs float16 with a GradScaler on the CPU.
"""

from __future__ import annotations

import functools
import warnings

import torch
from torch import nn

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, kept, register

from ._kit import LESSON
from ._kit import META, mlp


# --- reference: the solution notebook's answer, generated from solutions/10_performance.py
from ...answers.l10_performance import amp_train_step


# --- cases
def _cases(r: Rand) -> Case:
    d, h, c, n = r.integer(3, 12), r.integer(4, 24), r.integer(2, 5), r.integer(4, 24)
    model = mlp(r, d, h, c)
    stale = [r.randn(*p.shape) for p in model.parameters()]
    fp16 = r.choice([True, False])
    return Case((model, r.randn(n, d), r.randint(0, c, (n,))),
                {"stale": stale, "lr": r.uniform(0.2, 0.8), "fp16": fp16, "max_norm": r.uniform(0.05, 0.5),
                 "init_scale": r.choice([2.0**10, 2.0**16])})


class RecordingScaler(torch.amp.GradScaler):
    """A GradScaler that records which of its methods the step called."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls: list[str] = []

    def scale(self, outputs):
        self.calls.append("scale")
        return super().scale(outputs)

    def unscale_(self, optimizer):
        self.calls.append("unscale_")
        return super().unscale_(optimizer)

    def step(self, optimizer, *args, **kwargs):
        self.calls.append("step")
        return super().step(optimizer, *args, **kwargs)

    def update(self, new_scale=None):
        self.calls.append("update")
        return super().update(new_scale)


# --- run and probes
def _run(answer, case: Case):
    model, X, y = case.args
    kw = case.kwargs
    for p, g in zip(model.parameters(), kw["stale"]):
        p.grad = g.clone()  # left over from an earlier step: zero_grad must clear it
    optimizer = torch.optim.SGD(model.parameters(), lr=kw["lr"])
    dtype = torch.float16 if kw["fp16"] else torch.bfloat16
    scaler = RecordingScaler(X.device.type, init_scale=kw["init_scale"]) if kw["fp16"] else None
    seen = []
    handle = model[0].register_forward_hook(lambda mod, inp, out: seen.append(out.dtype))
    # during the step autocast's default dtype is the OTHER low-precision dtype, so an autocast
    # that ignores `dtype` shows up
    default = torch.get_autocast_dtype(X.device.type)
    torch.set_autocast_dtype(X.device.type, torch.bfloat16 if kw["fp16"] else torch.float16)
    try:
        loss_fn = nn.CrossEntropyLoss()
        with kept(unchanged={"loss_fn": loss_fn}):
            loss = answer(model, X, y, loss_fn, optimizer, dtype, scaler=scaler, max_norm=kw["max_norm"])
    except ValueError as exc:  # what GradScaler says to float16 parameters
        if "unscale FP16 gradients" in str(exc):
            raise Incorrect("cast_model") from None
        raise
    finally:
        torch.set_autocast_dtype(X.device.type, default)
        handle.remove()
    params = [p.detach().clone() for p in model.parameters()]
    if any(p.dtype != torch.float32 for p in params):
        raise Incorrect("cast_model")
    if seen and seen[0] == torch.float32:
        raise Incorrect("no_autocast")
    if seen and seen[0] != dtype:
        raise Incorrect("ignored_dtype", got=str(seen[0]).replace("torch.", ""), want=str(dtype).replace("torch.", ""))
    if scaler is not None:
        if "scale" not in scaler.calls:
            raise Incorrect("scaler_ignored")
        if "step" not in scaler.calls:
            raise Incorrect("optimizer_step_past_scaler")
        if "update" not in scaler.calls:
            raise Incorrect("no_scaler_update")
    return loss, params


def _probe_device_type(answer, r: Rand) -> None:
    """Run the step on `meta` tensors with autocast turned into a recorder: the `device_type` the
    answer asks for must be the batch's (`X.device.type`), not a constant. The class itself is
    patched, so every name bound to it (`torch.autocast`, `from torch import autocast`,
    `from torch.amp import autocast`) records."""
    seen: list[str] = []
    cls = torch.amp.autocast_mode.autocast
    saved = {n: cls.__dict__[n] for n in ("__init__", "__enter__", "__exit__")}

    def record(self, device_type=None, *args, **kwargs):
        seen.append(str(device_type))

    model = mlp(r, 3, 4, 2).to(META)
    X, y = torch.zeros(4, 3, device=META), torch.zeros(4, dtype=torch.long, device=META)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    cls.__init__ = record  # type: ignore[method-assign]
    cls.__enter__ = lambda self: self  # type: ignore[method-assign]
    cls.__exit__ = lambda self, *exc: False  # type: ignore[method-assign]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            answer(model, X, y, nn.CrossEntropyLoss(), optimizer, torch.bfloat16, scaler=None, max_norm=1.0)
    except Exception:  # noqa: BLE001 - `.item()` of a meta tensor fails: we only want the device_type
        pass
    finally:
        for n, f in saved.items():
            setattr(cls, n, f)
    if seen and seen[0] != META.type:
        raise Incorrect("hard_coded_device", got=repr(seen[0]), device=META.type)


# --- wrong answers
# The reference's steps with one knob turned.
def _variant(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0, *, device_type=None, zero=True,
             loss_inside=True, cast_model=False, clip=True, unscale=True, use_scaler=True, scaler_step=True,
             update=True, fixed_dtype=None):
    if cast_model:
        model.to(dtype)
        X = X.to(dtype)
    if zero:
        optimizer.zero_grad()
    with torch.autocast(device_type=device_type or X.device.type, dtype=fixed_dtype or dtype, enabled=not cast_model):
        logits = model(X)
        if loss_inside:
            loss = loss_fn(logits, y)
    if not loss_inside:
        loss = loss_fn(logits, y)  # outside autocast: cross-entropy of low-precision logits in low precision
    scaler = scaler if use_scaler else None
    (scaler.scale(loss) if scaler is not None else loss).backward()
    if scaler is not None and unscale:
        scaler.unscale_(optimizer)
    if clip:
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    if scaler is not None and scaler_step:
        scaler.step(optimizer)
    else:
        optimizer.step()
    if scaler is not None and update:
        scaler.update()
    return loss.item()


_V = functools.partial

# --- declaration
register(Exercise(
    lesson=LESSON, name="amp_train_step", title="A mixed-precision training step with clipping",
    reference=amp_train_step,
    cases=_cases,
    n_random=6,
    timeout=10.0,
    run=_run,
    probes=[_probe_device_type],
    compare=Compare(rtol=1e-3, atol=1e-4),
    mistakes=[
        Mistake("hard_coded_device", "Your step asked for `torch.autocast({got}, ...)` for a batch on `{device}`. "
                "With a constant, the same code on a batch on another device would not autocast at all: take the "
                "device type from the batch.", _V(_variant, device_type="cpu"), match_output=False),
        Mistake("no_autocast", "The forward pass ran in float32: it was not inside `torch.autocast(...)`.",
                _V(_variant, cast_model=False, fixed_dtype=None, device_type="cuda"), match_output=False),
        Mistake("ignored_dtype", "The forward pass ran in {got}, but this step was asked for {want}: pass the "
                "`dtype` you are given to `torch.autocast` (without it autocast uses the device's default).",
                _V(_variant, fixed_dtype=torch.bfloat16), match_output=False),
        Mistake("cast_model", "Your step converted the model's parameters to a low-precision dtype: that is not "
                "mixed precision, and small updates vanish in low-precision weights. The parameters (the master "
                "weights the optimizer updates) stay float32; only the operations inside autocast compute in low "
                "precision.", _V(_variant, cast_model=True), match_output=False),
        Mistake("loss_outside_autocast", "Only the model call was inside autocast, so cross-entropy ran on "
                "low-precision logits in low precision (autocast would have run it in float32). Which lines belong "
                "inside the `with` block?", _V(_variant, loss_inside=False)),
        Mistake("clipped_scaled_gradients", "With a GradScaler your step clipped the gradients while they were "
                "still multiplied by the scale, so the clipping threshold applied to numbers thousands of times "
                "too large and the real step came out far too small. Gradients must be true gradients before "
                "anything reads them.", _V(_variant, unscale=False)),
        Mistake("no_clipping", "The gradients were not clipped to `max_norm` before the update.",
                _V(_variant, clip=False)),
        Mistake("scaler_ignored", "A GradScaler was given (float16), but your step never scaled the loss with it: "
                "small float16 gradients underflow to zero without it.", _V(_variant, use_scaler=False),
                match_output=False),
        Mistake("optimizer_step_past_scaler", "With a GradScaler, the update must go through the scaler (it "
                "unscales if needed, and skips a step whose gradients overflowed to inf or NaN); your step called "
                "the optimizer directly.", _V(_variant, scaler_step=False), match_output=False),
        Mistake("no_scaler_update", "Your step never let the GradScaler adapt its scale after the step: without "
                "that it keeps a scale that overflows, or one too small, forever.", _V(_variant, update=False),
                match_output=False),
        Mistake("forgot_zero_grad", "Your step used gradients left over from an earlier step: they must be cleared "
                "before `backward()`, otherwise gradients add up across steps.", _V(_variant, zero=False)),
    ],
    hints=[
        "Start from a plain float32 step with clipping. Which of its lines compute activations and the loss, and "
        "which work on gradients and weights? Only the first kind belongs in autocast.",
        "With a scaler, the gradients in `.grad` are multiplied by the scale from `backward` until the scaler "
        "steps. Clipping reads them in between: the scaler has a method that turns them into true gradients first. "
        "The scaler also does the step and then adapts its scale.",
    ],
))
