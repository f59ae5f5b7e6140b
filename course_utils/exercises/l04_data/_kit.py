"""Helpers shared by lesson 04's exercises: simulated DataLoader workers, building a learner's
dataset class, and the datasets `MiniLoader` is checked on.

Worker behaviour is checked in this process by *simulating* workers: for worker ``k`` of ``n``
the grader makes a copy of the dataset (as a worker gets one), sets what
``torch.utils.data.get_worker_info()`` returns to ``WorkerInfo(id=k, num_workers=n, ...)`` and
seeds ``torch``/``random``/NumPy's global RNG the way a worker does. That is exactly what learner
code can observe inside a worker, it takes microseconds, and it works with every multiprocessing
start method (a class defined in a notebook cannot be sent to real workers under
spawn/forkserver).

Ids raised here, to be declared by each exercise that uses the helper: ``construct`` raises
``wrong_type`` (facts ``given``, ``what``).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import random
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from course_utils.grading import Incorrect, Rand

LESSON = "04_data"

try:  # what get_worker_info() returns lives in this private module (stable since torch 1.2)
    import torch.utils.data._utils.worker as _worker_mod

    _CAN_SIMULATE = hasattr(_worker_mod, "_worker_info") and hasattr(_worker_mod, "WorkerInfo")
except ImportError:  # pragma: no cover
    _worker_mod = None
    _CAN_SIMULATE = False

# the declared message of ``wrong_type`` for an exercise whose answer is a class
WRONG_TYPE = "You passed {given}; pass the {what} itself (without calling it)."


@contextlib.contextmanager
def as_worker(worker_id: int, num_workers: int, base_seed: int, dataset):
    """Run a block as DataLoader worker ``worker_id`` of ``num_workers`` would: its own
    ``get_worker_info()`` and the global seeds torch sets in a worker. The caller's RNG state is
    the grader's business (checks run inside ``preserved_state``)."""
    seed = base_seed + worker_id
    previous = _worker_mod._worker_info
    if isinstance(previous, _worker_mod.WorkerInfo) and getattr(previous, "seed", None) is not None \
            and multiprocessing.parent_process() is None:
        previous = None  # left over from a check stopped mid-way (this is the main process)
    _worker_mod._worker_info = _worker_mod.WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                                      dataset=dataset)
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        np.random.seed(_worker_mod._generate_state(base_seed, worker_id))
    except (AttributeError, TypeError, ValueError):  # pragma: no cover - private helper changed
        np.random.seed(seed % 2**32)
    try:
        yield
    finally:
        _worker_mod._worker_info = previous


def clear_stale_worker_info() -> None:
    """A check stopped mid-way (a repeated timeout signal landing in ``as_worker``'s clean-up) can
    leave a simulated ``WorkerInfo`` behind; in the main process there is never a real one, so a
    leftover would make ``get_worker_info()`` lie to the next check (and to the notebook)."""
    if _CAN_SIMULATE and multiprocessing.parent_process() is None:
        _worker_mod._worker_info = None


def construct(answer, *args, what: str = "class"):
    """Build the learner's dataset/sampler, turning the wrong kind of answer into feedback."""
    if isinstance(answer, Dataset):
        raise Incorrect("wrong_type", given="an instance", what=what)
    if not callable(answer):
        raise Incorrect("wrong_type", given=f"a {type(answer).__name__}", what=what)
    return answer(*args)


# --- MiniLoader's cases (the loader's items, a custom collate_fn) and how its batches compare
class Pairs(Dataset):
    """``(features (d,), label int)`` items, like most supervised datasets; with ``items="dict"``
    ``{"x": features, "y": label}`` items, with ``items="triple"`` ``(features, label, index)``:
    ``default_collate`` batches any of them, a collate written for pairs only does not."""

    def __init__(self, n: int, d: int, seed: int, items: str = "pair"):
        r = Rand(seed)
        # distinct labels: a collate_fn that keeps only the labels still shows the order
        self.X, self.y = r.randn(n, d), (torch.randperm(n, generator=r.torch) + 10).tolist()
        self.items = items

    def __len__(self) -> int:
        return len(self.X)

    def __getitem__(self, i: int):
        if self.items == "dict":
            return {"x": self.X[i], "y": self.y[i]}
        if self.items == "triple":
            return self.X[i], self.y[i], i
        return self.X[i], self.y[i]


def labels_and_sizes(items: list) -> tuple[list[int], int]:
    """A custom collate_fn: the labels as a list, and how many items the batch holds."""
    return [it["y"] if isinstance(it, dict) else it[1] for it in items], len(items)


def same_batches(a: Any, b: Any) -> bool:
    """Equal structures of batches: tensors equal exactly, dicts, lists and tuples item by item."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_batches(a[k], b[k]) for k in a)
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and bool(torch.equal(a, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_batches(x, y) for x, y in zip(a, b))
    return a == b
