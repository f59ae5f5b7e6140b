"""Helpers shared by lesson 04's exercises: simulated DataLoader workers and building a learner's
dataset class.

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

import numpy as np
import torch
from torch.utils.data import Dataset

from course_utils.grading import Incorrect

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
