"""Launch a ``torchrun`` training script the way lesson 11 does, with one workaround kept here.

Lesson 11 teaches a plain DDP script that ends the way any script should: ``main()`` returns,
Python shuts down. In a terminal you would start it with::

    torchrun --standalone --nproc_per_node=2 ddp_train.py --data DATA --out OUT

The notebook calls :func:`torchrun` instead, which runs exactly that command with one change:
each rank runs the script through this module (``torchrun ... -m course_utils.ddp_launch
SCRIPT ARGS``), which, once the script has returned, flushes the output streams and ends the
process with :func:`os._exit`. The reason: with PyTorch 2.13 on CPU, gloo's threads outlive
``destroy_process_group()``, and the interpreter's teardown occasionally aborts a rank
("terminate called without an active exception") after all work is saved. Skipping the teardown
is only safe because the script has finished, its files are written and there is nothing left
to clean up; it skips ``finally`` blocks, ``atexit`` handlers and buffered writes, so it does
not belong in scripts you write. Exit codes are kept: an exception in the script prints its
traceback and ends the rank with 1, ``sys.exit(n)`` ends it with ``n``.
"""

from __future__ import annotations

import logging
import os
import runpy
import subprocess
import sys
import traceback
from collections.abc import Sequence

__all__ = ["main", "torchrun", "torchrun_command"]

USAGE = "usage: torchrun [torchrun options] -m course_utils.ddp_launch SCRIPT [ARGS ...]"


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)  # sys.exit("message") prints it and exits with 1
    return 1


def run_script(argv: Sequence[str]) -> int:
    """Run ``argv[0]`` as ``__main__`` with ``argv[1:]`` as its arguments; return its exit code."""
    script, *args = argv
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))  # as `python SCRIPT` does
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        return _exit_code(exc)
    except BaseException:  # noqa: BLE001 - report it like Python would, then exit with 1
        traceback.print_exc()
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of ``python -m course_utils.ddp_launch``: run the script, then ``os._exit``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print(USAGE, file=sys.stderr)
        raise SystemExit(2)
    code = run_script(argv)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def torchrun_command(script: str, *args: str, nproc: int = 2) -> list[str]:
    """The command :func:`torchrun` runs: this Python's ``torch.distributed.run`` (that is
    ``torchrun``) on one machine, with ``nproc`` ranks, each running ``script`` through
    this module."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc_per_node={nproc}", "-m", "course_utils.ddp_launch", script, *args]


def torchrun(script: str, *args: str, nproc: int = 2,
             timeout: float | None = 300) -> subprocess.CompletedProcess[str]:
    """Run ``torchrun --standalone --nproc_per_node=NPROC SCRIPT ARGS`` and return the finished
    process (its ``stdout`` holds what the ranks printed; ``returncode`` is 0 when all succeeded)."""
    return subprocess.run(torchrun_command(script, *args, nproc=nproc), capture_output=True,
                          text=True, timeout=timeout)


if __name__ == "__main__":
    main()
