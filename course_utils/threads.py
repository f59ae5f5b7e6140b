"""CPU thread settings for code that runs inside checks.

Graders that train small models run them on one intra-op thread and then restore the
caller's setting. A second thread cannot speed up such tiny operations, and when the machine
is busy (other programs, a shared Binder or CI runner) the threads' synchronisation can make
every small op many times slower; one thread also makes a time budget mean CPU time.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch

__all__ = ["single_thread"]


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """Run the block with ``torch.set_num_threads(1)``; restore the previous count afterwards
    (also when the block raises or is interrupted)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
