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
- :func:`bf16_native` says whether a device computes in bfloat16 with its own instructions,
  which is what decides whether bfloat16 autocast is worth it (see exercise 3, ``amp_policy``).
"""

from __future__ import annotations

import platform
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import torch

__all__ = ["bf16_native", "cpu_bf16_native", "cuda_bf16_native", "gpu_available", "pick_device", "requires_gpu",
           "synchronize", "time_per_call"]


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


#: CPU feature flags (Linux ``/proc/cpuinfo``) that mean bfloat16 arithmetic in hardware:
#: x86's AVX512-BF16 and AMX-BF16, Arm's BF16 extension.
CPU_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})


def _cpu_flags() -> set[str]:
    """The CPU's feature flags, as far as this operating system tells them (empty if unknown)."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        flags: set[str] = set()
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("flags", "Features"):  # x86 says flags, Arm says Features
                flags.update(value.split())
        return flags
    if platform.system() == "Darwin":  # Apple silicon from M2 on has FEAT_BF16
        try:
            out = subprocess.run(["sysctl", "-n", "hw.optional.arm.FEAT_BF16"], capture_output=True,
                                 text=True, timeout=5, check=False).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return set()
        return {"bf16"} if out == "1" else set()
    return set()


def cpu_bf16_native(flags: set[str] | None = None) -> bool:
    """Whether this CPU has bfloat16 instructions (AVX512-BF16, AMX, or Arm's BF16).

    Without them PyTorch still computes in bfloat16, by converting to float32 and back around
    every operation: correct, but on an AVX2 laptop CPU a bfloat16 autocast training step
    measured 6 to 16 times slower than float32 (lesson 10 measures yours)."""
    return bool(CPU_BF16_FLAGS & (_cpu_flags() if flags is None else flags))


def cuda_bf16_native() -> bool:
    """Whether the current CUDA GPU has bfloat16 tensor cores (compute capability 8.0, Ampere,
    and newer; AMD GPUs through ROCm too).

    ``torch.cuda.is_bf16_supported()`` alone is not this question: its default
    ``including_emulation=True`` also answers ``True`` on a T4 (capability 7.5, Colab's free
    GPU), which only emulates bfloat16, slowly."""
    return torch.cuda.is_available() and torch.cuda.is_bf16_supported(including_emulation=False)


def bf16_native(device_type: str) -> bool:
    """Whether ``device_type`` (``"cpu"`` or ``"cuda"``) computes in bfloat16 natively on this
    machine: the ``bf16_supported`` argument of lesson 10's ``amp_policy``."""
    if device_type == "cpu":
        return cpu_bf16_native()
    if device_type == "cuda":
        return cuda_bf16_native()
    raise ValueError(f"device_type must be 'cpu' or 'cuda', not {device_type!r}")
