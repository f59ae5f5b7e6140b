"""Generated from solutions/10_performance.py by `python -m course_utils build`; do not edit.

The answer definitions of the lesson's solution notebook (marker lines dropped) and the
notebook-level names they use; the exercises of 10_performance take their references from here."""

# ruff: noqa

import time
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


def to_device(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {key: to_device(value, device) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # a namedtuple: fields by position
        return type(batch)(*(to_device(item, device) for item in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(item, device) for item in batch)
    return batch


def median_time(fn, synchronize, warmup=2, repeats=5):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        synchronize()
        start = time.perf_counter()
        fn()
        synchronize()
        times.append(time.perf_counter() - start)
    times.sort()
    middle = len(times) // 2
    return times[middle] if len(times) % 2 else (times[middle - 1] + times[middle]) / 2


def amp_policy(device_type, bf16_supported):
    if device_type not in ("cpu", "cuda"):
        raise ValueError(f"no AMP policy for device type {device_type!r}")
    if bf16_supported:
        return torch.bfloat16, False      # float32's range: nothing underflows, no scaler
    if device_type == "cuda":
        return torch.float16, True        # tensor cores since Volta; float16 gradients need scaling
    return torch.float32, False           # emulated 16-bit on this CPU is slower: no mixed precision


def amp_train_step(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0):
    optimizer.zero_grad()
    with torch.autocast(device_type=X.device.type, dtype=dtype):   # forward and loss only
        loss = loss_fn(model(X), y)
    if scaler is None:
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
    else:
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)        # true gradients before clipping reads them
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        scaler.step(optimizer)
        scaler.update()
    return loss.item()


def checkpointed_forward(blocks, x):
    for block in blocks:
        # a BatchNorm in training mode updates its running statistics on every forward call:
        # recomputing it during backward would update them twice
        updates_state = any(isinstance(m, nn.BatchNorm1d) and m.training for m in block.modules())
        x = block(x) if updates_state else checkpoint(block, x, use_reentrant=False)
    return x
