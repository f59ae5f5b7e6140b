"""Datasets and functions that DataLoader worker processes use in lesson 04 (and a timer for them).

Why a module and not notebook cells: with ``num_workers > 0`` every worker gets its own copy of
the dataset (and of ``worker_init_fn`` / ``collate_fn``). Under the *spawn* and *forkserver*
start methods (Windows, macOS, and Linux from Python 3.14) that copy travels by pickle, and a
class defined in a notebook cannot be found by the worker (``Can't get attribute 'X' on
<module '__main__'>``). Everything here is importable, so it works with every start method.

- :class:`SlowItems`: items that cost real CPU time (pure Python work per item): workers help.
- :class:`ShardedRange` / :class:`UnshardedRange`: an ``IterableDataset`` over a range of
  integers, with and without splitting the work between workers (``get_worker_info``).
- :class:`NoisyItems` and :func:`reseed_worker`: the trap of a NumPy ``Generator`` created in
  ``__init__`` (every worker gets an identical copy), and the ``worker_init_fn`` that fixes it;
  :func:`colleague_worker_init`, a fix from the time when workers shared NumPy's *global* seed,
  which changes nothing here; :class:`WorkerSeeds`, the seed each worker is given.
- :func:`time_loader`: items per second of one pass over a DataLoader.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

# The notebook's answers, generated from solutions/04_data.py (one source; CONTRIBUTING.md):
# ShardedRange yields start..end-1 exactly once in total, however many DataLoader workers iterate
# it; reseed_worker is a worker_init_fn giving each worker's dataset copy its own NumPy generator.
from ..answers.l04_data import ShardedRange, reseed_worker

__all__ = ["NoisyItems", "ShardedRange", "SlowItems", "UnshardedRange", "WorkerSeeds", "colleague_worker_init",
           "reseed_worker", "time_loader"]


class SlowItems(Dataset):
    """``n`` items of 16 features whose preparation costs ``work`` iterations of pure Python
    (about 0.5 ms for ``work=10_000`` on a laptop): a stand-in for decoding an image or parsing
    a line of text. Item ``i`` is ``(features float32 (16,), label int64)``, deterministic."""

    def __init__(self, n: int = 256, work: int = 10_000):
        self.n = n
        self.work = work

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        acc = 0
        for k in range(self.work):  # CPU work that holds the GIL, like most Python-side decoding
            acc = (acc + k * i) % 1_000_003
        x = torch.full((16,), float(acc % 97) / 97.0)
        return x, torch.tensor(i % 10)


class UnshardedRange(IterableDataset):
    """The naive version: every worker's copy yields the whole range, so with ``n`` workers
    every item arrives ``n`` times."""

    def __init__(self, start: int, end: int):
        self.start = start
        self.end = end

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.start, self.end))


class NoisyItems(Dataset):
    """Item ``i`` is ``i + noise``, the noise drawn from ``self.rng``, a NumPy ``Generator``
    created once in ``__init__`` (a common way to add random augmentation).

    The trap: each DataLoader worker receives a *copy* of the dataset, including the generator
    in the same state, so with 2 workers the "random" noise of worker 1 repeats worker 0's.
    Torch reseeds ``torch``, ``random`` and NumPy's *global* RNG in each worker, but it cannot
    know about a generator stored on your object. :func:`reseed_worker` fixes it."""

    def __init__(self, n: int = 8, seed: int = 0):
        self.n = n
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> float:
        return round(i + float(self.rng.normal(0, 0.1)), 4)


# The well-known fix for NumPy in workers, from before PyTorch seeded NumPy's global generator per
# worker itself (1.9). It does not help NoisyItems, whose generator is its own: lesson 04's exercise 7
# asks why. The notebook prints this function's source, so its docstring gives nothing away.
def colleague_worker_init(worker_id: int) -> None:
    """A colleague's ``worker_init_fn``: a different NumPy seed in every worker."""
    np.random.seed(np.random.get_state()[1][0] + worker_id)


class WorkerSeeds(IterableDataset):
    """Yields one row per worker: its ``id`` and the ``seed`` that ``get_worker_info()`` gives it."""

    def __iter__(self) -> Iterator[dict[str, Any]]:
        info = get_worker_info()
        yield {"worker": 0, "seed": torch.initial_seed()} if info is None else {"worker": info.id, "seed": info.seed}


def time_loader(loader: DataLoader, epochs: int = 1) -> float:
    """Items per second over ``epochs`` full passes of ``loader`` (after one warm-up pass when
    the loader keeps its workers between epochs, so worker start-up is not counted)."""
    if getattr(loader, "persistent_workers", False):
        for _ in loader:
            pass
    n = 0
    start = time.perf_counter()
    for _ in range(epochs):
        for batch in loader:
            first = batch[0] if isinstance(batch, (list, tuple)) else batch
            n += len(first)
    return n / (time.perf_counter() - start)
