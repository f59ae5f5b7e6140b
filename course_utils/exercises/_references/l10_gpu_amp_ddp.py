"""Generated from solutions/10_gpu_amp_ddp.py by `python -m course_utils build`; do not edit.

The answer definitions of the lesson's solution notebook (marker lines dropped) and the
notebook-level names they use; the exercises of 10_gpu_amp_ddp take their references from here."""

# ruff: noqa

import torch
from torch.utils.checkpoint import checkpoint
import math
import copy


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


def amp_train_step(model, X, y, loss_fn, optimizer):
    optimizer.zero_grad()
    with torch.autocast(device_type=X.device.type, dtype=torch.bfloat16):
        loss = loss_fn(model(X), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def checkpointed_forward(blocks, x):
    for block in blocks:
        x = checkpoint(block, x, use_reentrant=False)
    return x


def shard_indices(n, world_size, rank, epoch, shuffle=True, seed=0):
    if shuffle:
        order = torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).tolist()
    else:
        order = list(range(n))
    total = math.ceil(n / world_size) * world_size
    if n:
        order = (order * math.ceil(total / n))[:total]
    return order[rank:total:world_size]


def data_parallel_grads(model, loss_fn, X, y, world_size):
    summed = None
    for X_rank, y_rank in zip(X.chunk(world_size), y.chunk(world_size)):
        replica = copy.deepcopy(model)
        loss = loss_fn(replica(X_rank), y_rank)
        grads = torch.autograd.grad(loss, list(replica.parameters()))
        summed = list(grads) if summed is None else [s + g for s, g in zip(summed, grads)]
    return [s / world_size for s in summed]
