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


def _plain(obj: Any, depth: int = 0) -> Any:
    """What a loader returned, as plain data: strings, numbers, tensors and containers of them
    (anything else by its type's name; deep or long ones cut)."""
    if isinstance(obj, (str, int, float, bool, type(None))):
        return obj if not isinstance(obj, str) else obj[:100]
    if isinstance(obj, torch.Tensor):
        return "<tensor>"
    if depth < 6 and isinstance(obj, dict):
        return {str(k)[:100]: _plain(v, depth + 1) for k, v in list(obj.items())[:100]}
    if depth < 6 and isinstance(obj, (list, tuple)):
        return [_plain(v, depth + 1) for v in list(obj)[:100]]
    return f"<{type(obj).__name__[:50]}>"


def probe_payload(save: Callable[[str], None], load: Callable[[str], Any]) -> dict:
    """``save(path)`` writes a file holding a harmless payload; ``load(path)`` (the learner's
    loader) must not run it. Refusing the file, by raising, is the right outcome. Returns, for
    :func:`payload_verdict`, how many times the payload ran here (a loader that runs it and
    drops its value) and what the loader returned (the payload's value, ``"payload"``, in it)
    or the type of what it raised."""
    with tempfile.TemporaryDirectory(prefix="course-grader-") as tmp:
        path = os.path.join(tmp, "checkpoint.pt")
        save(path)
        reset_payload_runs()
        try:
            out = {"returned": _plain(load(path))}
        except Exception as exc:  # noqa: BLE001 - refusing the file is the right outcome
            out = {"raised": type(exc).__name__}
        return {"payload_runs": payload_runs(), **out}


def _holds_payload(obj: Any) -> bool:
    if isinstance(obj, dict):
        return any(_holds_payload(v) for v in obj.values())
    if isinstance(obj, list):
        return any(_holds_payload(v) for v in obj)
    return obj == "payload"  # what the harmless payload unpickles to (lesson_props.l09_persistence)


def payload_verdict(j: int, ran: Any) -> None:
    """``unsafe_load`` when the payload ran while the loader read the file, judged on
    :func:`probe_payload`'s plain data (``Exercise.finish_probe``: in the instructor's grader the
    probe runs next to the answer, which can rewrite it; this does not)."""
    if not isinstance(ran, dict) or type(ran.get("payload_runs")) is not int or \
            ("returned" in ran) == ("raised" in ran):
        raise Incorrect("unsafe_load")  # (only a rewritten probe sends anything else)
    if ran["payload_runs"] or _holds_payload(ran.get("returned")):
        raise Incorrect("unsafe_load")
