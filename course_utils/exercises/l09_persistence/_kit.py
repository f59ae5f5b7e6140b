"""Helpers shared by the exercises of 09_persistence: exact comparison, seeded weights and the
harmless-payload test of a loader (ids it raises: ``unsafe_load``). The training run that
``save_checkpoint`` and ``load_checkpoint`` are both checked against is in ``_resume.py``, the
two halves of their checks on it in ``_resume_checks.py``.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any
from collections.abc import Callable

import torch
from torch import nn

from course_utils.grading import Compare, Incorrect, Rand
from course_utils.lesson_props.l09_persistence import payload_runs, reset_payload_runs


LESSON = "09_persistence"

EXACT = Compare(rtol=0, atol=0)
KEYS = ("model", "optimizer", "scheduler", "epoch", "rng_state", "loader_generator")

UNSAFE_MESSAGE = (
    "Your loader ran code hidden in the file: it used `weights_only=False`. A checkpoint from "
    "anywhere you do not fully control must be loaded with `torch.load(path, weights_only=True)` "
    "(the default), which refuses to call anything while loading."
)


def fill(module: nn.Module, r: Rand, scale: float = 0.5) -> nn.Module:
    """Random weights from ``r`` (never from the global RNG)."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(r.randn(*p.shape) * scale)
    return module


def probe_payload(save: Callable[[str], None], load: Callable[[str], Any]) -> None:
    """``save(path)`` writes a file holding a harmless payload; ``load(path)`` (the learner's
    loader) must not run it. Refusing the file, by raising, is the right outcome."""
    with tempfile.TemporaryDirectory(prefix="course-grader-") as tmp:
        path = os.path.join(tmp, "checkpoint.pt")
        save(path)
        reset_payload_runs()
        try:
            load(path)
        except Exception:  # noqa: BLE001 - refusing the file is the right outcome
            pass
        if payload_runs():
            raise Incorrect("unsafe_load")
