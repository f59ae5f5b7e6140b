"""Device selection, GPU-only cells and correct timing (lesson 10).

Everything here runs on a CPU-only machine; with a GPU the same calls use it.

- :func:`pick_device` chooses CUDA, then Apple's MPS, then the CPU.
- :func:`requires_gpu` guards a notebook cell that only means something on a GPU::

      if requires_gpu("CUDA memory statistics"):
          print(torch.cuda.memory_allocated())

  Without a GPU it prints one line saying the cell was skipped and returns ``False``; with one
  it returns ``True`` and the cell runs unchanged.
- :func:`synchronize` and :func:`time_per_call` time work on asynchronous devices honestly
  (a GPU call returns before the GPU has finished; the clock must wait for it).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch

__all__ = ["gpu_available", "pick_device", "requires_gpu", "synchronize", "time_per_call"]


def pick_device() -> torch.device:
    """The best device on this machine: ``cuda`` if available, else ``mps``, else ``cpu``."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def gpu_available(kind: str = "any") -> bool:
    """Whether a GPU of ``kind`` (``"cuda"``, ``"mps"`` or ``"any"``) can be used."""
    if kind == "cuda":
        return torch.cuda.is_available()
    if kind == "mps":
        return torch.backends.mps.is_available()
    if kind == "any":
        return torch.cuda.is_available() or torch.backends.mps.is_available()
    raise ValueError(f"kind must be 'cuda', 'mps' or 'any', not {kind!r}")


def requires_gpu(what: str, kind: str = "cuda") -> bool:
    """Guard for a GPU-only cell: ``True`` if a GPU of ``kind`` is present, else print why the
    cell is skipped and return ``False``."""
    if gpu_available(kind):
        return True
    name = {"cuda": "an NVIDIA (CUDA) GPU", "mps": "an Apple (MPS) GPU", "any": "a GPU"}[kind]
    print(f"[GPU only] skipped: {what} needs {name}, and this machine has none.")
    return False


def synchronize(device: torch.device | str) -> None:
    """Wait until every operation queued on ``device`` has finished (a no-op on the CPU)."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def time_per_call(fn: Callable[[], object], device: torch.device | str = "cpu", repeats: int = 5,
                  warmup: int = 2) -> float:
    """Median seconds one call of ``fn()`` takes on ``device``, synchronizing before each clock
    reading so queued GPU work is counted. ``warmup`` calls run first and are not timed (the
    first calls pay for memory allocation and kernel selection)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        synchronize(device)
        start = time.perf_counter()
        fn()
        synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)
