"""Helpers for lesson 09 (saving, loading, exporting).

- :func:`save_as_if_on_cuda` writes a checkpoint exactly as ``torch.save`` writes one on a GPU
  machine: every storage is tagged ``cuda:0``. Loading it on a CPU-only machine then raises the
  same error a real GPU checkpoint raises, so the lesson can show ``map_location`` on any laptop.
- :class:`HarmlessPayload` is a pickle payload that only records that it ran. Lesson 09 and its
  graders use it to show that ``torch.load(..., weights_only=False)`` executes code from the file
  and ``weights_only=True`` refuses it.
"""

from __future__ import annotations

import os
from typing import Any

import torch
import torch.serialization

__all__ = ["HarmlessPayload", "payload_runs", "reset_payload_runs", "save_as_if_on_cuda"]


def save_as_if_on_cuda(obj: Any, path: str | os.PathLike, device: str = "cuda:0") -> None:
    """``torch.save(obj, path)``, with every tensor recorded as living on ``device``.

    ``torch.save`` records each storage's device with ``torch.serialization.location_tag``;
    this swaps that function for one that answers ``device`` while saving. The file is then
    byte-for-byte what a GPU machine would write for the same values.
    """
    original = torch.serialization.location_tag
    torch.serialization.location_tag = lambda storage: device  # type: ignore[assignment]
    try:
        torch.save(obj, path)
    finally:
        torch.serialization.location_tag = original  # type: ignore[assignment]


_RUNS = [0]


def _payload_ran(message: str) -> str:
    _RUNS[0] += 1
    print(message)
    return "payload"


def payload_runs() -> int:
    """How many times a :class:`HarmlessPayload` has been unpickled in this process."""
    return _RUNS[0]


def reset_payload_runs() -> None:
    _RUNS[0] = 0


class HarmlessPayload:
    """Unpickling this object calls a function (which prints ``message`` and counts the call).

    A malicious file would call ``os.system`` the same way; ``torch.load`` with
    ``weights_only=True`` (the default since PyTorch 2.6) refuses to call anything it does not
    know.
    """

    def __init__(self, message: str = "This line was printed by code hidden inside the file."):
        self.message = message

    def __reduce__(self):
        return (_payload_ran, (self.message,))
