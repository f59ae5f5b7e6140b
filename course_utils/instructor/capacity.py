"""How many notebooks ``grade`` runs at once by default: every CPU this process may use, as many
as the memory holds at their limit, and no more than the sandboxes have user ids for.

Containers matter: in a Kubernetes pod or a Slurm job ``os.cpu_count()`` is the whole node's,
so the CPU quota (cgroup ``cpu.max``, or v1's ``cpu.cfs_quota_us``), the CPU set
(``sched_getaffinity``) and the memory limit (cgroup ``memory.max``) all count."""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")
MEMINFO = Path("/proc/meminfo")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, ValueError):
        return None


def _int(text: str | None) -> int | None:
    try:
        return int(str(text).split()[0])
    except (ValueError, IndexError):
        return None


def cgroup_cpus(root: Path = CGROUP) -> float | None:
    """CPUs the cgroup's quota allows (``None``: no quota)."""
    v2 = _read(root / "cpu.max")  # "max 100000" or "200000 100000"
    if v2 is not None:
        quota, _, period = v2.partition(" ")
        q, p = _int(quota), _int(period)
        return q / p if q and p else None
    q, p = _int(_read(root / "cpu" / "cpu.cfs_quota_us")), _int(_read(root / "cpu" / "cpu.cfs_period_us"))
    return q / p if q and p and q > 0 else None


def cpus(root: Path = CGROUP) -> int:
    """CPUs this process may use: its CPU set, capped by a cgroup quota (rounded up)."""
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = cgroup_cpus(root)
    return max(1, min(n, math.ceil(quota)) if quota else n)


def available_memory(root: Path = CGROUP, meminfo: Path = MEMINFO) -> int | None:
    """Bytes of memory free for new work: the machine's ``MemAvailable``, or what is left under
    the cgroup's limit when that is less (``None`` when neither can be read)."""
    found = []
    for line in (_read(meminfo) or "").splitlines():
        if line.startswith("MemAvailable:"):
            kb = _int(line.split(":", 1)[1])
            if kb is not None:
                found.append(kb * 1024)
    for limit_file, usage_file in (("memory.max", "memory.current"),
                                   ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes")):
        limit, usage = _int(_read(root / limit_file)), _int(_read(root / usage_file))
        if limit is not None and limit < 1 << 60:  # v1 says "no limit" with a huge number, v2 with "max"
            found.append(max(0, limit - (usage or 0)))
            break
    return min(found) if found else None


def default_workers(memory_per_notebook: int, most: int, root: Path = CGROUP, meminfo: Path = MEMINFO) -> int:
    """Notebooks at once: one per usable CPU, no more than fit in the available memory at
    ``memory_per_notebook`` each (the sandbox's per-process limit), and at most ``most``."""
    n = cpus(root)
    memory = available_memory(root, meminfo)
    if memory is not None:
        n = min(n, memory // max(1, memory_per_notebook))
    return int(max(1, min(n, most)))
