"""shard_indices: the indices one rank reads in one epoch, exactly as DistributedSampler gives them.

Subtle: the order is padded by repeating from its start (possibly more than once) to a multiple
of world_size, dealt out round-robin, reshuffled per epoch with `seed + epoch`, the same on every
rank, and drawn from its own generator (the global random stream must stay untouched).
"""

from __future__ import annotations

import functools
import math

import torch

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON


# --- reference: the solution notebook's answer, generated from solutions/11_distributed.py
from ...answers.l11_distributed import shard_indices


# --- cases
def _cases(r: Rand) -> Case:
    world_size = r.integer(1, 5)
    return Case((r.integer(1, 30), world_size, r.integer(0, world_size - 1), r.integer(0, 6)),
                {"shuffle": r.choice([True, True, False]), "seed": r.integer(0, 1000)})


def _edge(n, world_size, rank, epoch, shuffle, seed, label):
    return Case((n, world_size, rank, epoch), {"shuffle": shuffle, "seed": seed}, label=label, show_inputs=True)


_EDGE_CASES = [
    _edge(10, 3, 2, 1, True, 0, "10 items, 3 ranks, rank 2, epoch 1"),
    _edge(2, 4, 3, 0, False, 0, "2 items, 4 ranks, rank 3, no shuffle"),
    _edge(8, 2, 1, 3, True, 5, "8 items, 2 ranks, rank 1, epoch 3"),
    _edge(2, 5, 4, 2, True, 3, "2 items, 5 ranks, rank 4, epoch 2 (more padding than items)"),
    # DistributedSampler over an empty dataset yields nothing (no division by n = 0)
    _edge(0, 2, 1, 0, True, 0, "an empty dataset (n = 0), 2 ranks, rank 1"),
]


# --- run and probes
def _probe_global_rng(answer, r: Rand) -> None:
    """Building the order must not touch the global random stream (that drives dropout,
    augmentation and the model's initialisation in the training that calls it)."""
    world_size = r.integer(2, 4)
    before = torch.get_rng_state()
    answer(r.integer(5, 20), world_size, r.integer(0, world_size - 1), r.integer(1, 6), shuffle=True,
           seed=r.integer(0, 1000))
    if not torch.equal(before, torch.get_rng_state()):
        raise Incorrect("global_rng")


# --- wrong answers
# The reference's three steps (order, pad, deal) with one of them changed.
def _order(n, epoch, shuffle, seed, *, global_rng=False):
    if not shuffle:
        return list(range(n))
    if global_rng:
        torch.manual_seed(seed + epoch)  # the same order, but it resets the training's random stream
        return torch.randperm(n).tolist()
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).tolist()


def _pad(order, total):
    n = len(order)
    return (order * math.ceil(total / n))[:total] if n else order


def _deal(order, world_size, rank, total):
    return order[rank:total:world_size]


def _blocks(order, world_size, rank, total):
    per_rank = total // world_size
    return order[rank * per_rank:(rank + 1) * per_rank]


def _variant(n, world_size, rank, epoch, shuffle=True, seed=0, *, global_rng=False, pad=_pad, deal=_deal):
    total = math.ceil(n / world_size) * world_size
    order = pad(_order(n, epoch, shuffle, seed, global_rng=global_rng), total)
    return deal(order, world_size, rank, total)


def _no_epoch(n, world_size, rank, epoch, shuffle=True, seed=0):
    return shard_indices(n, world_size, rank, 0, shuffle, seed)


def _rank_seed(n, world_size, rank, epoch, shuffle=True, seed=0):
    return shard_indices(n, world_size, rank, epoch + rank, shuffle, seed)


# --- declaration
register(Exercise(
    lesson=LESSON, name="shard_indices", title="Give each rank its share of the data, like DistributedSampler",
    reference=shard_indices,
    cases=_cases,
    edge_cases=_EDGE_CASES,
    n_random=20,
    probes=[_probe_global_rng],
    mistakes=[
        Mistake("contiguous_blocks", "You gave each rank a contiguous block. DistributedSampler deals the "
                "(shuffled, padded) order round-robin: rank r takes positions r, r + world_size, ... "
                "(`order[rank::world_size]`).", functools.partial(_variant, deal=_blocks)),
        Mistake("no_padding", "Your rank got fewer items than DistributedSampler gives it. It pads the order "
                "by repeating items from its start until the length is a multiple of world_size (round up "
                "with `math.ceil`, do not drop the tail), so every rank gets the same number of items; "
                "otherwise one rank waits forever in the all-reduce of a step the others never take.",
                functools.partial(_variant, pad=lambda order, total: order,
                                  deal=lambda order, world_size, rank, total: order[rank::world_size])),
        Mistake("ignores_epoch", "The shuffle is the same every epoch. Seed the permutation with "
                "`seed + epoch` (that is what `sampler.set_epoch(epoch)` changes).", _no_epoch),
        Mistake("rank_dependent_shuffle", "Each rank shuffled differently, so ranks overlap and miss items. "
                "All ranks must build the same permutation (seeded by `seed + epoch` only) and then take "
                "different positions of it.", _rank_seed),
        Mistake("global_rng", "Your function changed the global random state (`torch.manual_seed`, or drawing "
                "from the global generator). Every call would then reset the random stream of the training that "
                "uses it. Draw the permutation from its own generator: "
                "`torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch))`.",
                functools.partial(_variant, global_rng=True), match_output=False),
    ],
    hints=[
        "Start from the unshuffled lists: which positions of the order does rank 0 take, and rank 1? Then count: "
        "how many items does every rank get when n does not divide by world_size?",
        "Every rank gets the same number of items, so the order is made longer before it is shared out. Which items "
        "fill the gap in the lists, and how often is the whole order repeated when n is smaller than world_size?",
    ],
))
