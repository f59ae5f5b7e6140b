"""data_parallel_grads: what DDP computes, by hand: per-rank shards, per-rank gradients on
replicas, averaged (all-reduce SUM, then divide by world_size).

Subtle: the full-batch gradient and the average of the shards' losses give the same numbers, so
the check watches how they were computed (the batch size each forward pass saw, and which
backward pass each shard's loss took part in), and the model given must stay untouched.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from course_utils.grading import Case, Compare, Exercise, Expect, Incorrect, Mistake, Rand, register

from ._kit import LESSON
from ._kit import mlp


# --- reference: the solution notebook's answer, generated from solutions/11_distributed.py
from ...answers.l11_distributed import data_parallel_grads


# --- cases
def _cases(r: Rand) -> Case:
    world_size = r.integer(1, 4)
    n = world_size * r.integer(2, 6)
    d, c = r.integer(3, 8), r.integer(2, 5)
    return Case((mlp(r, d, r.integer(4, 12), c), nn.CrossEntropyLoss(), r.randn(n, d),
                 r.randint(0, c, (n,)), world_size))


def _fixed_case() -> Case:
    r = Rand(66)
    return Case((mlp(r, 4, 6, 3), nn.CrossEntropyLoss(), r.randn(8, 4), torch.tensor([0, 1, 2, 0, 1, 2, 2, 1]), 2),
                label="8 samples, 2 ranks")


# --- run and probes
_LIST = Expect("not_a_list", "a list with one gradient tensor per parameter", list)


def _run(answer, case: Case):
    model, loss_fn, X, y, world_size = case.args
    before = [p.detach().clone() for p in model.parameters()]
    batch_sizes: list[int] = []
    # on the first layer (Sequential calls it positionally, also for `model(input=X)` or
    # `model.forward(X)`); the hook is copied by deepcopy into every replica
    replica: list[int] = [0]  # the replica (its first layer) that ran last
    backward_of: list[tuple[int, int]] = []  # (backward pass, replica) in which each shard's loss got its gradient

    def seen(mod, args):
        batch_sizes.append(len(args[0]))
        replica[0] = id(mod)

    def loss_seen(mod, args, out):
        if isinstance(out, torch.Tensor) and out.requires_grad:
            rep = replica[0]
            out.register_hook(lambda g: backward_of.append((torch._C._current_graph_task_id(), rep)))

    handles = [model[0].register_forward_pre_hook(seen)]
    if isinstance(loss_fn, nn.Module):
        handles.append(loss_fn.register_forward_hook(loss_seen))
    try:
        grads = answer(model, loss_fn, X, y, world_size)
    finally:
        for handle in handles:
            handle.remove()
    _LIST.check(grads)
    if any(isinstance(g, torch.Tensor) and (g.requires_grad or g.grad_fn is not None) for g in grads):
        raise Incorrect("graph_kept")
    shard = len(X) // world_size
    if any(size != shard for size in batch_sizes):
        wrong = max(batch_sizes, key=lambda size: abs(size - shard))
        raise Incorrect("not_sharded", got=wrong, world_size=world_size, shard=shard)
    if len(set(backward_of)) < len(backward_of):
        raise Incorrect("averaged_losses")
    if any(p.grad is not None for p in model.parameters()) or any(
            not torch.equal(b, p.detach()) for b, p in zip(before, model.parameters())):
        raise Incorrect("modified_model")
    return grads


# --- wrong answers
def _sum(model, loss_fn, X, y, world_size):
    return [g * world_size for g in data_parallel_grads(model, loss_fn, X, y, world_size)]


def _rank0(model, loss_fn, X, y, world_size):
    return data_parallel_grads(model, loss_fn, X.chunk(world_size)[0], y.chunk(world_size)[0], 1)


def _full_batch(model, loss_fn, X, y, world_size):
    return data_parallel_grads(model, loss_fn, X, y, 1)


def _on_the_model(model, loss_fn, X, y, world_size):
    total = None
    for X_rank, y_rank in zip(X.chunk(world_size), y.chunk(world_size)):
        model.zero_grad()
        loss_fn(model(X_rank), y_rank).backward()
        grads = [p.grad.clone() for p in model.parameters()]
        total = grads if total is None else [t + g for t, g in zip(total, grads)]
    return [t / world_size for t in total]


def _misaligned(model, loss_fn, X, y, world_size):
    strided = torch.cat([y[rank::world_size] for rank in range(world_size)])  # X chunked, y strided
    return data_parallel_grads(model, loss_fn, X, strided, world_size)


def _averaged_losses(model, loss_fn, X, y, world_size):
    replica = copy.deepcopy(model)
    loss = sum(loss_fn(replica(X_rank), y_rank) for X_rank, y_rank in zip(X.chunk(world_size), y.chunk(world_size)))
    return list(torch.autograd.grad(loss / world_size, list(replica.parameters())))


def _with_graph(model, loss_fn, X, y, world_size):
    replica = copy.deepcopy(model)
    loss = loss_fn(replica(X), y)
    return list(torch.autograd.grad(loss, list(replica.parameters()), create_graph=True))


# --- declaration
register(Exercise(
    lesson=LESSON, name="data_parallel_grads", title="What DDP computes: average the ranks' gradients",
    reference=data_parallel_grads,
    cases=_cases,
    edge_cases=[_fixed_case()],
    n_random=5,
    timeout=10.0,
    run=_run,
    compare=Compare(rtol=1e-4, atol=1e-6),
    mistakes=[
        Mistake("summed_not_averaged", "Your gradients are world_size times too large: an all-reduce SUMs, "
                "and DDP then divides by world_size. Average, do not just add.", _sum),
        Mistake("one_rank_only", "You returned one rank's gradients. Without the all-reduce every rank "
                "would step in a different direction and the replicas would drift apart: average the "
                "gradients of all shards.", _rank0),
        Mistake("not_sharded", "Your model saw a batch of {got} samples, but each of the {world_size} ranks sees "
                "exactly its own shard of {shard}. Split X and y into world_size shards with "
                "`X.chunk(world_size)` (`X.split(k)` makes pieces of k rows, not k pieces), compute each "
                "shard's gradients separately, then average them.", _full_batch, match_output=False),
        Mistake("modified_model", "Your function left gradients on (or changed) the model it was given. Each "
                "rank has its own replica: work on `copy.deepcopy(model)` (or use `torch.autograd.grad`), and "
                "leave the original alone.", _on_the_model, match_output=False),
        Mistake("misaligned_shards", "Your X and y shards do not match: split both the same way "
                "(`X.chunk(world_size)` and `y.chunk(world_size)`).", _misaligned),
        Mistake("averaged_losses", "You averaged the shards' losses and back-propagated them through one model "
                "in a single pass. The number is the same, but that is not what DDP does: each rank computes "
                "the gradients of its own shard's loss on its own copy of the model, and the *gradients* are "
                "averaged (the all-reduce). Call `torch.autograd.grad` once per shard, on that shard's replica.",
                _averaged_losses, match_output=False),
        _LIST.mistake(lambda *args: tuple(data_parallel_grads(*args))),
        Mistake("graph_kept", "Your gradients carry an autograd graph (`create_graph=True`, or arithmetic on "
                "tensors that require grad): they keep every rank's graph alive. DDP averages plain gradient "
                "values: use `torch.autograd.grad(...)` without `create_graph`, or `.detach()` the result.",
                _with_graph, match_output=False),
    ],
    hints=[
        "What does each rank see of the batch, and what does it compute on its own before any communication?",
        "Each rank holds its own copy of the model and an equal slice of the batch, and computes the gradient of "
        "its slice's mean loss without touching the original model. The all-reduce sums these gradients "
        "parameter by parameter, and DDP then divides by the number of ranks.",
    ],
))
