"""The two halves of save_checkpoint's and load_checkpoint's checks on the resumed run
(``run_*`` in the sandbox with the learner's function, ``finish_*``/``supply_load`` in the judge
with the reference's), built from :mod:`._resume`."""

from __future__ import annotations

import copy
import os
import tempfile
from typing import Any

import torch

from course_utils.grading import Case, Incorrect, answer_grad_mode

from ...answers import l09_persistence as _references

from ._kit import KEYS
from ._resume import (
    _bit_identical, _case_key, _diagnose, _fresh, _load_saved, _modes, _original_run, _reference_original,
    _start_fact, _state, _train, _unreadable,
)


def run_save(answer: Any, case: Case) -> dict:
    """The learner's save in the original run: the file it wrote and the run's final weights."""
    with tempfile.TemporaryDirectory(prefix="course-grader-") as tmp:
        path = os.path.join(tmp, "checkpoint.pt")
        _, uninterrupted = _original_run(case.kwargs, answer, path, "save")
        with open(path, "rb") as f:
            return {"checkpoint": f.read(), "uninterrupted": uninterrupted}


def finish_save(data: Any, case: Case) -> list[torch.Tensor]:
    """The learner's file, loaded by the reference loader in the restarted run."""
    if not isinstance(data, dict) or not isinstance(data.get("checkpoint"), bytes):
        raise _unreadable()
    kw = case.kwargs
    snapshot = _reference_original(case)[0]
    with tempfile.TemporaryDirectory(prefix="course-grader-") as tmp:
        path = os.path.join(tmp, "checkpoint.pt")
        with open(path, "wb") as f:
            f.write(data["checkpoint"])
        model2, optimizer2, scheduler2, loader2, generator2 = _fresh(kw)
        start = _load_saved(_references.load_checkpoint, path, (model2, optimizer2, scheduler2, generator2))
    _diagnose(snapshot, _state(model2, optimizer2, scheduler2, generator2), _start_fact(start), kw["epoch"], "save")
    _train(model2, optimizer2, scheduler2, loader2, range(kw["epoch"], kw["num_epochs"]))
    resumed = [p.detach().clone() for p in model2.parameters()]
    _bit_identical(data.get("uninterrupted"), resumed)
    return resumed


def supply_load(case: Case) -> dict:
    """The loader's input: the file the reference saved in the original run."""
    return {"checkpoint": _reference_original(case)[2]}


def run_load(answer: Any, case: Case) -> dict:
    """The learner's loader in the restarted run, on the reference's file: the state it restored,
    what it returned, and the weights after training on."""
    supplied = getattr(case, "supplied", None)
    if not isinstance(supplied, dict) or not isinstance(supplied.get("checkpoint"), bytes):
        raise RuntimeError("internal: the checkpoint to load did not come with the case")
    kw = case.kwargs
    with tempfile.TemporaryDirectory(prefix="course-grader-") as tmp:
        path = os.path.join(tmp, "checkpoint.pt")
        with open(path, "wb") as f:
            f.write(supplied["checkpoint"])
        model2, optimizer2, scheduler2, loader2, generator2 = _fresh(kw)
        model2[2].eval()
        modes2 = _modes(model2)
        with answer_grad_mode():
            start = answer(path, model2, optimizer2, scheduler2, generator2)
        if _modes(model2) != modes2:
            raise Incorrect("changed_mode")
    state = copy.deepcopy(_state(model2, optimizer2, scheduler2, generator2))
    error = None
    try:
        _train(model2, optimizer2, scheduler2, loader2, range(kw["epoch"], kw["num_epochs"]))
    except Exception as exc:  # noqa: BLE001 - reported after the restored state is (it explains it)
        error = f"{type(exc).__name__}: {exc}"[:300]
    return {"state": state, "start": _start_fact(start), "error": error,
            "resumed": [p.detach().clone() for p in model2.parameters()]}


def finish_load(data: Any, case: Case) -> Any:
    """The restored state and the resumed weights against the original run's."""
    if not isinstance(data, dict) or not isinstance(data.get("state"), dict) or any(
            k not in data["state"] for k in KEYS if k != "epoch"):
        raise _unreadable()
    snapshot, uninterrupted, _ = _reference_original(case)
    _diagnose(snapshot, data["state"], data.get("start"), case.kwargs["epoch"], "load")
    if data.get("error"):
        raise RuntimeError(f"training on after your loader raised {str(data['error'])[:300]}")
    _bit_identical(uninterrupted, data.get("resumed"))
    return data["resumed"]


# The reference's save half is a function of the case alone: it is computed once per case and
# recalled, together with the global random state it leaves behind (a check sees the same side
# effect). Every check of a learner's answer still runs in full.
_RECALLED: dict[tuple, tuple[dict, torch.Tensor]] = {}


def recalled_run_save(answer: Any, case: Case) -> dict:
    if answer is not _references.save_checkpoint:
        return run_save(answer, case)
    key = _case_key(case)
    if key not in _RECALLED:
        if len(_RECALLED) >= 256:
            _RECALLED.clear()
        _RECALLED[key] = (run_save(answer, case), torch.get_rng_state())
    data, rng_state = _RECALLED[key]
    torch.set_rng_state(rng_state)
    return dict(data, uninterrupted=[p.clone() for p in data["uninterrupted"]])


def _run_resume(answer: Any, case: Case, role: str) -> list[torch.Tensor]:
    """The whole check of ``answer`` as the ``role`` half ("save" or "load"), the reference
    doing the other: the resumed run's final weights."""
    if role == "save":
        return finish_save(run_save(answer, case), case)
    case.supplied = supply_load(case)  # type: ignore[attr-defined]
    return finish_load(run_load(answer, case), case)
