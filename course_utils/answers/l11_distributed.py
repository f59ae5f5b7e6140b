"""Generated from solutions/11_distributed.py by `python -m course_utils build`; do not edit.

The answer definitions of the lesson's solution notebook (marker lines dropped) and the
notebook-level names they use; the exercises of 11_distributed take their references from here."""

# ruff: noqa

import torch
import math
import copy
import contextlib


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


def rank_loss_scale(shard_sizes):
    world_size, total = len(shard_sizes), sum(shard_sizes)
    # rank r contributes (1 / world_size) * factor_r * (sum of its losses) / n_r, which must be
    # (sum of its losses) / total
    return [world_size * n / total for n in shard_sizes]


def accumulate_grads(ddp_model, micro_batches, loss_fn):
    ddp_model.zero_grad()
    k = len(micro_batches)
    for i, (X, y) in enumerate(micro_batches):
        last = i == k - 1
        with contextlib.nullcontext() if last else ddp_model.no_sync():  # sync only the last
            loss = loss_fn(ddp_model(X), y) / k       # mean of k equal means = the big mean
            loss.backward()


def merge_batch_stats(counts, means, variances):
    n = torch.tensor(counts, dtype=means.dtype).unsqueeze(1)       # (world_size, 1)
    mean = (n * means).sum(0) / n.sum()
    # E[x^2] per rank is var + mean^2; the global variance is E[x^2] - mean^2, written stably as
    # the within-rank spread plus the spread of the ranks' means around the global mean
    variance = (n * (variances + (means - mean) ** 2)).sum(0) / n.sum()
    return mean, variance
