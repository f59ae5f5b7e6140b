"""Helpers for the distributed-training part of lesson 10.

- :func:`shard_assignment` lists which dataset items each rank gets, straight from PyTorch's
  own :class:`~torch.utils.data.DistributedSampler` (no process group needed to ask it).
- :func:`plot_shards` draws that assignment, so the effect of ``world_size``, ``set_epoch`` and
  padding can be seen (lesson 10 puts it behind a widget).

Functions that a launched worker process must import (``torchrun`` scripts, ``mp.spawn``
targets) belong in modules like this one, never in a notebook: a new process cannot find
anything defined in a notebook's ``__main__``.
"""

from __future__ import annotations

import matplotlib

matplotlib.rcParams.setdefault("figure.dpi", 80)

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from torch.utils.data import DistributedSampler  # noqa: E402

__all__ = ["plot_shards", "shard_assignment"]


def shard_assignment(n: int, world_size: int, epoch: int = 0, shuffle: bool = True,
                     seed: int = 0) -> list[list[int]]:
    """The dataset indices each of ``world_size`` ranks visits in ``epoch``, in order, as
    :class:`DistributedSampler` hands them out (padded so every rank gets as many)."""
    if n < 1 or world_size < 1:
        raise ValueError("n and world_size must be at least 1")
    shards = []
    for rank in range(world_size):
        sampler = DistributedSampler(range(n), num_replicas=world_size, rank=rank,
                                     shuffle=shuffle, seed=seed)
        sampler.set_epoch(epoch)
        shards.append(list(sampler))
    return shards


def plot_shards(n: int = 10, world_size: int = 2, epoch: int = 0, shuffle: bool = True,
                seed: int = 0) -> Figure:
    """One row per rank, one box per item that rank visits (in order); the number is the
    dataset index. Items repeated to pad the last round are drawn hatched."""
    shards = shard_assignment(n, world_size, epoch, shuffle, seed)
    per_rank = len(shards[0])
    fig, ax = plt.subplots(figsize=(max(4.0, 0.45 * per_rank + 1.5), 0.5 * world_size + 0.9))
    cmap = plt.get_cmap("tab20")
    seen: set[int] = set()
    # DistributedSampler deals the (shuffled, padded) list round-robin: position p of rank r is
    # item number p * world_size + r of that list, so padding is whatever comes after n items.
    for pos in range(per_rank):
        for rank in range(world_size):
            idx = shards[rank][pos]
            padded = pos * world_size + rank >= n
            ax.add_patch(plt.Rectangle((pos, world_size - 1 - rank), 0.92, 0.85,
                                       facecolor=cmap(idx % 20), alpha=0.85, edgecolor="black",
                                       hatch="///" if padded else None, linewidth=0.6))
            ax.text(pos + 0.46, world_size - 1 - rank + 0.42, str(idx), ha="center", va="center",
                    fontsize=8)
            seen.add(idx)
    ax.set_xlim(0, per_rank)
    ax.set_ylim(0, world_size)
    ax.set_yticks([world_size - 1 - r + 0.42 for r in range(world_size)])
    ax.set_yticklabels([f"rank {r}" for r in range(world_size)])
    ax.set_xticks([])
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    padding = per_rank * world_size - n
    ax.set_title(f"{n} items, {world_size} ranks, epoch {epoch}, shuffle={shuffle}: "
                 f"{per_rank} per rank, {padding} repeated to pad", fontsize=9)
    fig.tight_layout()
    return fig
