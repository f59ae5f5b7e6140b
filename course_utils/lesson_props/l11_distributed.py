"""Helpers for lesson 11 (distributed training).

- :func:`shard_assignment` lists which dataset items each rank gets, straight from PyTorch's
  own :class:`~torch.utils.data.DistributedSampler` (no process group needed to ask it).
- :func:`plot_shards` draws that assignment, so the effect of ``world_size``, ``set_epoch`` and
  padding can be seen (lesson 11 puts it behind a widget).
- :class:`CountingDDP` stands in for DDP in one process and counts the all-reduces that
  ``no_sync()`` saves.

Functions that a launched worker process must import (``torchrun`` scripts, ``mp.spawn``
targets) belong in modules like this one, never in a notebook: a new process cannot find
anything defined in a notebook's ``__main__``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import matplotlib

matplotlib.rcParams.setdefault("figure.dpi", 80)

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DistributedSampler  # noqa: E402

__all__ = ["CountingDDP", "plot_shards", "shard_assignment"]


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


class CountingDDP(nn.Module):
    """A stand-in for :class:`~torch.nn.parallel.DistributedDataParallel` in one process, to
    see what ``no_sync()`` changes without starting ranks.

    Calling it calls the wrapped module. Like DDP, whether a backward pass all-reduces is decided
    when the FORWARD pass runs: an output computed outside ``no_sync()`` makes its backward pass
    count one all-reduce (``all_reduces``); inside ``no_sync()`` the gradients only accumulate
    locally. With one process there is nothing to average, so the gradients are the module's own.
    """

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.module = module
        self.require_backward_grad_sync = True
        self.backward_log: list[tuple[int, bool]] = []  # (backward pass, synced) per forward output

    @property
    def all_reduces(self) -> int:
        """How many backward passes would have all-reduced the gradients."""
        return len({task for task, synced in self.backward_log if synced})

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        out = self.module(*args, **kwargs)
        if isinstance(out, torch.Tensor) and out.requires_grad:
            synced = self.require_backward_grad_sync

            def seen(grad: torch.Tensor) -> None:
                self.backward_log.append((torch._C._current_graph_task_id(), synced))

            out.register_hook(seen)
        return out
