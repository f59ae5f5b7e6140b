"""The resumed run that save_checkpoint and load_checkpoint are graded on: a small model trained
for some epochs, saved by one function, loaded into fresh objects by the other, trained on; the
resumed weights must equal the uninterrupted run's bit for bit. The runs, the reference side of
each check (``finish_*``, ``supply_load``) and the messages both exercises share."""

from __future__ import annotations

import copy
import os
import pickle
import tempfile
from typing import Any

import torch
from torch import nn
from torch.nn.utils import skip_init
from torch.utils.data import DataLoader, TensorDataset

from course_utils.grading import Case, Incorrect, Rand, answer_grad_mode

from ...answers import l09_persistence as _references

from ._kit import KEYS, fill


def lr_factor(epoch: int) -> float:
    return 1.0 / (1.0 + epoch)


def setup(kw: dict, which: str):
    """A training run's objects. ``which`` is "original" or "fresh" (the restarted process,
    with different initial weights and a different shuffle seed)."""
    r = Rand(kw[which])
    d, h, c = kw["dims"]
    model = fill(nn.Sequential(skip_init(nn.Linear, d, h), nn.ReLU(), nn.Dropout(0.3),
                               skip_init(nn.Linear, h, c)), r)
    if kw["adam"]:
        optimizer: torch.optim.Optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor)
    generator = torch.Generator().manual_seed(r.integer(0, 2**31))
    data = Rand(kw["data"])
    X, y = data.randn(kw["n"], d), data.randint(0, c, (kw["n"],))
    loader = DataLoader(TensorDataset(X, y), batch_size=8, shuffle=True, generator=generator)
    return model, optimizer, scheduler, loader, generator


def _train(model, optimizer, scheduler, loader, epochs) -> None:
    model.train()
    for _ in epochs:
        for xb, yb in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            optimizer.step()
        scheduler.step()


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
                and bool(torch.equal(a, b)))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _state(model, optimizer, scheduler, generator) -> dict:
    return {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(), "rng_state": torch.get_rng_state(),
            "loader_generator": generator.get_state()}


def _diagnose(snapshot: dict, now: dict, start, epoch: int, role: str) -> None:
    for key in ("model", "optimizer", "scheduler", "rng_state", "loader_generator"):
        if not _same(now[key], snapshot[key]):
            raise Incorrect(not_restored_id(key))
    # ``start``: what the loader returned, as :func:`_start_fact` makes it plain data
    if type(start) is not int or start != epoch:
        got, kind = (repr(start), "int") if type(start) is int else (
            (str(start.get("repr")), str(start.get("type"))) if isinstance(start, dict) else (repr(start), "?"))
        raise Incorrect("wrong_epoch" if role == "save" else "wrong_start_epoch", got=got, type=kind, epoch=epoch)


def resume_case(r: Rand) -> Case:
    return Case((), {
        "original": r.integer(0, 2**31), "fresh": r.integer(0, 2**31), "data": r.integer(0, 2**31),
        "rng": r.integer(0, 2**31), "other_rng": r.integer(0, 2**31),
        "dims": (r.integer(3, 6), r.integer(6, 12), r.integer(2, 4)), "n": r.integer(17, 28),
        "adam": r.choice([True, False]), "epoch": r.integer(1, 2), "num_epochs": 3,
    })


def _resume_edge(seed: int, adam: bool, epoch: int, label: str) -> Case:
    case = resume_case(Rand(seed))
    case.kwargs.update(adam=adam, epoch=epoch)
    case.label = label
    return case


RESUME_EDGES = [_resume_edge(81, True, 2, "Adam, saved after 2 of 3 epochs"),
                _resume_edge(82, False, 1, "SGD with momentum, saved after 1 of 3 epochs")]


RNG_NOT_TORCH = ("Your checkpoint's 'rng_state' is not the state of the generator that training draws from "
                 "(you saved {got}). Dropout draws its masks from torch's own global random stream, not from "
                 "Python's `random` or NumPy's, and its state is a tensor.")


def _rng_entry_kind(path: str) -> str | None:
    """What the file's "rng_state" holds when that is not a torch generator state (None: it is one,
    or the file does not load; the loader reports that)."""
    try:
        entry = torch.load(path, weights_only=True).get("rng_state", torch.get_rng_state())
    except Exception:  # noqa: BLE001 - the loader names what is wrong with the file
        return None
    if isinstance(entry, torch.Tensor) and entry.dtype == torch.uint8 and entry.shape == torch.get_rng_state().shape:
        return None
    return f"a {type(entry).__name__}" + (f" of dtype {entry.dtype}" if isinstance(entry, torch.Tensor) else "")


def _load_saved(load, path, objects):
    """The reference loader reading the learner's file: what goes wrong is the file's fault."""
    kind = _rng_entry_kind(path)
    if kind is not None:
        raise Incorrect("rng_not_torch", got=kind)
    try:
        return load(path, *objects)
    except KeyError as exc:
        key = str(exc.args[0]) if exc.args else "?"
        if key in KEYS:
            raise Incorrect(f"missing_{key}") from None
        raise Incorrect("missing_entry", key=repr(key)) from None
    except pickle.UnpicklingError:
        raise Incorrect("pickled_objects") from None
    except Exception as exc:  # noqa: BLE001 - a wrong value in the file
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise Incorrect("unloadable_checkpoint", error=f"{type(exc).__name__}: {first}") from None


def _modes(model) -> list[bool]:
    return [m.training for m in model.modules()]


def _original_run(kw: dict, save, path: str, role: str) -> tuple[dict, list[torch.Tensor]]:
    """The original run: train k epochs, ``save`` to ``path``, go on to the end (uninterrupted).
    Returns the state at the save and the final weights."""
    k, num_epochs = kw["epoch"], kw["num_epochs"]
    torch.manual_seed(kw["rng"])
    model, optimizer, scheduler, loader, generator = setup(kw, "original")
    _train(model, optimizer, scheduler, loader, range(0, k))
    snapshot = copy.deepcopy(_state(model, optimizer, scheduler, generator))
    model[2].eval()  # a model whose submodules are in mixed modes: both must come back as they were
    modes = _modes(model)
    with answer_grad_mode():  # grad mode left off by the save: named, not an error of the training below
        save(path, model, optimizer, scheduler, k, generator)
    if role == "save" and _modes(model) != modes:
        raise Incorrect("changed_mode")
    if role == "save" and not os.path.exists(path):
        raise Incorrect("no_file")
    _train(model, optimizer, scheduler, loader, range(k, num_epochs))
    return snapshot, [p.detach().clone() for p in model.parameters()]


# When the learner writes the loader, the original run saves with the reference: it is a function
# of the case alone, so it is computed once per case and recalled (its state at the save, its final
# weights and the file it wrote, written afresh for each check). The learner's half always runs.
_ORIGINAL_RUNS: dict[tuple, tuple[dict, list[torch.Tensor], bytes]] = {}


def _case_key(case: Case) -> tuple:
    return tuple(sorted(case.kwargs.items()))


def _reference_original(case: Case) -> tuple[dict, list[torch.Tensor], bytes]:
    """The original run saving with the reference (a function of the case alone, computed once per
    case and recalled): its state at the save, its final weights and the file it wrote."""
    key = _case_key(case)
    if key not in _ORIGINAL_RUNS:
        if len(_ORIGINAL_RUNS) >= 256:
            _ORIGINAL_RUNS.clear()
        with tempfile.TemporaryDirectory(prefix="course-grader-") as tmp:
            path = os.path.join(tmp, "checkpoint.pt")
            snapshot, uninterrupted = _original_run(case.kwargs, _references.save_checkpoint, path, "load")
            with open(path, "rb") as f:
                _ORIGINAL_RUNS[key] = (snapshot, uninterrupted, f.read())
    return _ORIGINAL_RUNS[key]


def _fresh(kw: dict) -> tuple:
    """The restarted process: other initial weights, another random state."""
    torch.manual_seed(kw["other_rng"])
    return setup(kw, "fresh")


def _start_fact(start: Any) -> Any:
    """A loader's return value as plain data: an int as it is, anything else as its repr and type."""
    if type(start) is int:
        return start
    return {"repr": repr(start)[:200], "type": type(start).__name__[:80]}


def _unreadable() -> RuntimeError:
    return RuntimeError("the check of your answer sent back something unreadable")


def _bit_identical(uninterrupted: Any, resumed: Any) -> None:
    if not (isinstance(uninterrupted, list) and isinstance(resumed, list) and len(uninterrupted) == len(resumed)
            and all(_same(a, b) for a, b in zip(uninterrupted, resumed))):
        raise Incorrect("not_bit_identical")


# save_checkpoint and load_checkpoint are checked in halves (issue 23): the half that calls the
# learner's function (``run``) never calls the reference, which does the other half (``finish``,
# and for the loader ``supply``, the reference's checkpoint file it reads), so that in the
# instructor's grader the answer runs in the sandbox and the reference outside it. Train k
# epochs, save, train on (the uninterrupted run); then, in a "new process" with other weights and
# another random state, load and train on (the resumed run): the two must end with bit-identical
# weights. Ids raised: ``changed_mode``, ``no_file``, ``missing_<key>``, ``missing_entry``,
# ``pickled_objects``, ``unloadable_checkpoint``, ``<key>_not_restored``, ``wrong_epoch`` (save),
# ``wrong_start_epoch`` (load) and ``not_bit_identical``.
CHANGED_MODE = ("Your `{fn}` changed the train/eval mode of the model (or of some of its submodules), for "
                "example with `model.eval()`. Saving or loading a checkpoint must leave the modes as the "
                "caller set them: a training loop that does not call `model.train()` every epoch would "
                "then train without dropout.")
NOT_BIT_IDENTICAL = ("The resumed run does not end with exactly the same weights as the uninterrupted one. "
                     "Every piece of state that training reads must be saved and restored.")
NOT_RESTORED = {  # key: what it is, for the messages of `<key>_not_restored`
    "model": "the model's weights",
    "optimizer": "the optimizer's state (momentum or Adam's running averages)",
    "scheduler": "the learning-rate scheduler",
    "rng_state": "the global random state (it drives dropout)",
    "loader_generator": "the DataLoader's generator (it drives the shuffle)",
}


def not_restored_id(key: str) -> str:
    return f"{key.replace('_state', '')}_not_restored"
