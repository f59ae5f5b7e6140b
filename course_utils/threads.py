"""How many CPU threads PyTorch uses in this course: one place decides, everything uses it.

The policy: **one intra-op thread per kernel** unless the learner asks for more with
``COURSE_TORCH_THREADS`` (or an ``OMP_NUM_THREADS`` already set in the environment, which wins
as the standard knob). Applied by the local launcher (``python -m course_utils lab``: every
kernel it starts inherits it), the notebook kernels the tests and ``build --execute`` start
(conftest.py), the instructor grader (one thread per grading kernel), the JupyterHub recipe
(``Spawner.environment``) and Binder (``binder/start``, a shell script that repeats
:data:`DEFAULT`; ``tests/test_threads.py`` keeps the two equal).

Why one: the lessons use tiny tensors (at most a few thousand rows), where a second thread
buys almost nothing on an idle machine and costs a lot on a busy one. torch starts one OpenMP
thread per visible core, and OpenMP threads spin while they wait for each other: on a 2-core
machine with another job running, lesson 05 took 250-556 s with the default thread count and
101 s with one thread (issue 15); two nbval workers with 2 threads each took 89-170 s against
32 s with one. ``python benchmarks/run.py --only busy`` measures a lesson as the machine is and
next to a 2-thread job with this policy: lesson 05 took 1.23x as long next to the job (medians,
on a shared 2-core machine at load average 10-13; README, "Performance").
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping

DEFAULT = 1
ENV = "COURSE_TORCH_THREADS"
# Variables the thread pools of torch's CPU backends read when a process starts.
POOL_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _positive(value: str | None) -> int | None:
    try:
        n = int(str(value).strip())
    except (TypeError, ValueError):
        return None
    return n if n > 0 else None


def kernel_threads(environ: Mapping[str, str] | None = None) -> int:
    """Threads for one notebook kernel: ``COURSE_TORCH_THREADS``, else an ``OMP_NUM_THREADS``
    already set, else :data:`DEFAULT`."""
    environ = os.environ if environ is None else environ
    for key in (ENV, "OMP_NUM_THREADS"):
        n = _positive(environ.get(key))
        if n:
            return n
    return DEFAULT


def kernel_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables to give a process that will start torch (a kernel, a grader worker)."""
    n = str(kernel_threads(environ))
    return {var: n for var in POOL_VARS}


def apply_env(environ: MutableMapping[str, str] | None = None) -> int:
    """Set the policy in ``environ`` (default: this process's, so children inherit it).
    Returns the thread count."""
    environ = os.environ if environ is None else environ
    env = kernel_env(environ)
    environ.update(env)
    return int(env["OMP_NUM_THREADS"])


def apply_torch() -> int:
    """Set the policy in this process's torch (already imported or not). Returns the count."""
    import torch

    n = kernel_threads()
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n
