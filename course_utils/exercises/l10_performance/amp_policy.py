"""amp_policy: the autocast dtype and whether a GradScaler is needed, per device.

Subtle: the answer follows the hardware, not autocast's defaults. With bfloat16 instructions,
bfloat16 and no scaler, on either device (CUDA's default float16 is the wrong choice there); a GPU
without them still has float16 tensor cores (Volta on), so float16 with a scaler; a CPU without
them only emulates 16-bit arithmetic (an AVX2 CPU measured 6-16x slower per step), so float32,
autocast off. float16 needs the scaler and nothing else does; an unknown device raises.
"""

from __future__ import annotations

import torch

from course_utils.grading import Case, Exercise, Expect, Incorrect, Mistake, Rand, pair_of, register

from ._kit import LESSON


# --- reference: the solution notebook's answer, generated from solutions/10_performance.py
from ...answers.l10_performance import amp_policy


# --- cases
_ALL = [Case((device, flag), label=f"{device}, bf16_supported={flag}", show_inputs=True)
        for device in ("cpu", "cuda") for flag in (True, False)]


def _cases(r: Rand) -> Case:
    return Case((r.choice(["cpu", "cuda"]), r.choice([True, False])))


# --- run and probes
_PAIR = Expect("not_a_pair", "a pair `(dtype, use_scaler)`", pair_of())
_DTYPE = Expect("not_a_dtype", "a `torch.dtype` such as `torch.bfloat16`", torch.dtype,
                said="The first item of your pair is")


def _run(answer, case: Case):
    got = answer(*case.args)
    _PAIR.check(got)  # a list of two reads the same
    dtype, scaler = got
    _DTYPE.check(dtype)
    return dtype, bool(scaler)


UNKNOWN_DEVICES = ("tpu", "xla", "meta", "mps")
"""The probe asks about each of these, with either flag: fixed, so the judge knows what was asked
without the executor's word, and all of them, so an answer that special-cases one still fails."""


def _probe_cases() -> list[tuple[str, bool]]:
    return [(device, flag) for device in UNKNOWN_DEVICES for flag in (True, False)]


def _probe_unknown_device(answer, r: Rand) -> list[dict]:
    """What the answer did for each device it knows nothing about, as plain data for
    ``_unknown_device_verdict`` (in the instructor's grader this runs next to the answer)."""
    out = []
    for device, flag in _probe_cases():
        try:
            answer(device, flag)
        except Exception as exc:  # noqa: BLE001 - which error it was is the verdict's input
            out.append({"device": device, "raised": type(exc).__name__, "value_error": isinstance(exc, ValueError)})
        else:
            out.append({"device": device, "raised": None, "value_error": False})
    return out


def _unknown_device_verdict(j: int, ran) -> None:
    for k, (device, _) in enumerate(_probe_cases()):
        one = ran[k] if isinstance(ran, list) and len(ran) == len(_probe_cases()) else None
        if not isinstance(one, dict) or one.get("device") != device:
            # (only a rewritten probe returns anything else)
            raise Incorrect("unknown_device", device=device, what="gave no account of what it did")
        if one.get("value_error") is True:
            continue
        if isinstance(one.get("raised"), str):
            raise Incorrect("unknown_device", device=device, what=f"raised {one['raised'][:80]}")
        raise Incorrect("unknown_device", device=device, what="returned without an error")


# --- wrong answers
def _policy(device_type, bf16_supported, *, cpu_follows_flag=False, cpu_always_bf16=False, default_cuda=False,
            bf16_scaler=False, fp16_scaler=True, old_gpu_fp32=False, unknown_ok=False):
    if device_type == "cpu":
        if bf16_supported or cpu_always_bf16:
            return torch.bfloat16, bf16_scaler
        return (torch.float16, fp16_scaler) if cpu_follows_flag else (torch.float32, False)
    if device_type == "cuda":
        if bf16_supported and not default_cuda:
            return torch.bfloat16, bf16_scaler
        return (torch.float32, False) if old_gpu_fp32 and not bf16_supported else (torch.float16, fp16_scaler)
    if unknown_ok:
        return torch.bfloat16, False
    raise ValueError(device_type)


# --- declaration
register(Exercise(
    lesson=LESSON, name="amp_policy", title="Choose the autocast dtype and the scaler per device",
    reference=amp_policy,
    cases=_cases,
    edge_cases=_ALL,
    n_random=4,
    run=_run,
    probes=[_probe_unknown_device], finish_probe=_unknown_device_verdict,
    mistakes=[
        Mistake("cuda_default_dtype", "On a GPU that supports bfloat16 you chose float16 (autocast's CUDA default, "
                "`torch.get_autocast_dtype('cuda')`: a starting point, not a choice). float16's tiny range makes "
                "gradients underflow unless a scaler rescues them; bfloat16 has float32's range and needs no scaler.",
                lambda d, f: _policy(d, f, default_cuda=True, cpu_always_bf16=True)),
        Mistake("cpu_float16", "On a CPU without bf16 instructions you chose float16. That CPU has no fast 16-bit "
                "units of either kind, so float16 is emulated too, and it brings float16's underflow and a "
                "scaler with it: train in float32 there.",
                lambda d, f: _policy(d, f, cpu_follows_flag=True)),
        Mistake("cpu_emulated_bf16", "On a CPU without bf16 instructions you chose bfloat16. It trains correctly "
                "but is emulated, converting to float32 and back around every operation: a training step "
                "measured 6 to 16 times slower than float32 on an AVX2 CPU. Mixed precision pays only with "
                "hardware 16-bit units; there, train in float32 (autocast off).",
                lambda d, f: _policy(d, f, cpu_always_bf16=True)),
        Mistake("old_gpu_float32", "On a GPU without bfloat16 you turned mixed precision off. NVIDIA GPUs have had "
                "float16 tensor cores since Volta (a T4 has them): float16 with a GradScaler trains correctly "
                "and several times faster than float32.",
                lambda d, f: _policy(d, f, old_gpu_fp32=True)),
        Mistake("scaler_with_bf16", "You asked for a GradScaler with bfloat16. bfloat16 has float32's exponent "
                "range, so gradients do not underflow, and a scaler only adds work.",
                lambda d, f: _policy(d, f, bf16_scaler=True)),
        Mistake("float16_without_scaler", "You chose float16 without a GradScaler: small float16 gradients "
                "underflow to zero and those weights stop learning. float16 training needs the scaler.",
                lambda d, f: _policy(d, f, fp16_scaler=False)),
        Mistake("unknown_device", "For device type {device!r} your function {what}; a device this "
                "policy knows nothing about should raise a `ValueError`: guessing there is not this function's job.",
                lambda d, f: _policy(d, f, unknown_ok=True), match_output=False),
        _PAIR.mistake(lambda d, f: amp_policy(d, f)[0]),
        _DTYPE.mistake(lambda d, f: (str(amp_policy(d, f)[0]), amp_policy(d, f)[1])),
    ],
    hints=[
        "Which failure is worse: slower steps, or gradients that silently become zero? Let that decide first. "
        "Then ask, for each of the four cases: does this hardware have fast units for the 16-bit type I pick?",
        "bfloat16 keeps float32's range (no scaler), float16 keeps more digits but a tiny range (needs a scaler). "
        "Look again at the speed cell above: what did bfloat16 cost on a CPU without bf16 instructions, and "
        "which of the two devices still has fast float16 units when bfloat16 is missing?",
    ],
))
