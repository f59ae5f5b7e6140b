"""Exercises of 07_persistence: checkpoints that resume bit-identically, loading a GPU/DDP
checkpoint on a CPU, loading what fits into a changed model, and exporting with a dynamic batch.

Graders that write files do it inside a fresh temporary directory that is removed afterwards.
Unsafe loading is caught with :class:`course_utils.persistence.HarmlessPayload`, which only
counts that it ran.
"""

from __future__ import annotations

import copy
import os
import pickle
import tempfile

import torch
from torch import nn
from torch.nn.utils import skip_init
from torch.utils.data import DataLoader, TensorDataset

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register
from course_utils.persistence import HarmlessPayload, payload_runs, reset_payload_runs, save_as_if_on_cuda

LESSON = "07_persistence"

EXACT = Compare(rtol=0, atol=0)
KEYS = ("model", "optimizer", "scheduler", "epoch", "rng_state", "loader_generator")


def _fill(module: nn.Module, r: Rand, scale: float = 0.5) -> nn.Module:
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(r.randn(*p.shape) * scale)
    return module


# =============================================================================== checkpoints
def save_checkpoint(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save({
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "epoch": epoch,
        "rng_state": torch.get_rng_state(),
        "loader_generator": loader_generator.get_state(),
    }, path)


def load_checkpoint(path, model, optimizer, scheduler, loader_generator):
    checkpoint = torch.load(path, weights_only=True)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    torch.set_rng_state(checkpoint["rng_state"])
    loader_generator.set_state(checkpoint["loader_generator"])
    return checkpoint["epoch"]


def _lr_factor(epoch: int) -> float:
    return 1.0 / (1.0 + epoch)


def _setup(kw: dict, which: str):
    """A training run's objects. ``which`` is "original" or "fresh" (the restarted process,
    with different initial weights and a different shuffle seed)."""
    r = Rand(kw[which])
    d, h, c = kw["dims"]
    model = _fill(nn.Sequential(skip_init(nn.Linear, d, h), nn.ReLU(), nn.Dropout(0.3),
                                skip_init(nn.Linear, h, c)), r)
    if kw["adam"]:
        optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _lr_factor)
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
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape and bool(torch.equal(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _snapshot(model, optimizer, scheduler, generator) -> dict:
    return copy.deepcopy({
        "model": model.state_dict(), "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(), "rng_state": torch.get_rng_state(),
        "loader_generator": generator.get_state(),
    })


_NOT_RESTORED = {
    "model": ("model_not_restored", "the model's weights"),
    "optimizer": ("optimizer_not_restored", "the optimizer's state (momentum or Adam's running averages)"),
    "scheduler": ("scheduler_not_restored", "the learning-rate scheduler"),
    "rng_state": ("rng_not_restored", "the global random state (it drives dropout)"),
    "loader_generator": ("loader_generator_not_restored", "the DataLoader's generator (it drives the shuffle)"),
}


def _diagnose(snapshot: dict, model, optimizer, scheduler, generator, start, epoch: int, role: str) -> None:
    now = {
        "model": model.state_dict(), "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(), "rng_state": torch.get_rng_state(),
        "loader_generator": generator.get_state(),
    }
    for key, (mistake, what) in _NOT_RESTORED.items():
        if not _same(now[key], snapshot[key]):
            if role == "save":
                raise Incorrect(
                    mistake,
                    f"After loading your checkpoint, {what} is not what it was when you saved: save "
                    f"`{key}` as the exercise describes, at the moment `save_checkpoint` is called.",
                )
            raise Incorrect(
                mistake,
                f"After your `load_checkpoint`, {what} is not restored, so the resumed run differs "
                f"from the uninterrupted one. Restore it from `checkpoint[{key!r}]`.",
            )
    if role == "save" and (isinstance(start, bool) or not isinstance(start, int) or start != epoch):
        raise Incorrect(
            "wrong_epoch",
            f"Your checkpoint's 'epoch' is {start!r} ({type(start).__name__}), but `save_checkpoint` was "
            f"called with epoch={epoch}, the number of completed epochs. Save that int unchanged: the "
            "loader returns it, and training resumes with `range(epoch, num_epochs)`.",
        )
    if isinstance(start, bool) or not isinstance(start, int):
        raise Incorrect("wrong_start_epoch", f"`load_checkpoint` should return the epoch as an int, not {type(start).__name__}.")
    if start != epoch:
        raise Incorrect(
            "wrong_start_epoch",
            f"`load_checkpoint` returned {start}, but the checkpoint was written after {epoch} "
            f"completed epoch(s), so training resumes with `range({epoch}, num_epochs)`. Return "
            "`checkpoint['epoch']` unchanged.",
        )


def _resume_case(r: Rand) -> Case:
    return Case((), {
        "original": r.integer(0, 2**31), "fresh": r.integer(0, 2**31), "data": r.integer(0, 2**31),
        "rng": r.integer(0, 2**31), "other_rng": r.integer(0, 2**31),
        "dims": (r.integer(3, 6), r.integer(6, 12), r.integer(2, 4)), "n": r.integer(17, 28),
        "adam": r.choice([True, False]), "epoch": r.integer(1, 2), "num_epochs": 3,
    })


def _resume_edge(seed: int, adam: bool, epoch: int, label: str) -> Case:
    case = _resume_case(Rand(seed))
    case.kwargs.update(adam=adam, epoch=epoch)
    case.label = label
    return case


_RESUME_EDGES = [_resume_edge(81, True, 2, "Adam, saved after 2 of 3 epochs"),
                 _resume_edge(82, False, 1, "SGD with momentum, saved after 1 of 3 epochs")]


def _run_resume(answer, case: Case, role: str):
    kw = case.kwargs
    save = answer if role == "save" else save_checkpoint
    load = answer if role == "load" else load_checkpoint
    k, num_epochs = kw["epoch"], kw["num_epochs"]
    with tempfile.TemporaryDirectory(prefix="course-grader-") as tmp:
        path = os.path.join(tmp, "checkpoint.pt")
        # the original run: train k epochs, save, go on to the end (uninterrupted)
        torch.manual_seed(kw["rng"])
        model, optimizer, scheduler, loader, generator = _setup(kw, "original")
        _train(model, optimizer, scheduler, loader, range(0, k))
        snapshot = _snapshot(model, optimizer, scheduler, generator)
        model[2].eval()  # a model whose submodules are in mixed modes: both must come back as they were
        modes = [m.training for m in model.modules()]
        save(path, model, optimizer, scheduler, k, generator)
        if role == "save" and [m.training for m in model.modules()] != modes:
            raise Incorrect("changed_mode", _CHANGED_MODE.format(fn="save_checkpoint"))
        if role == "save" and not os.path.exists(path):
            raise Incorrect("no_file", "`save_checkpoint` wrote no file at `path`. Call `torch.save(checkpoint_dict, path)`.")
        _train(model, optimizer, scheduler, loader, range(k, num_epochs))
        uninterrupted = [p.detach().clone() for p in model.parameters()]

        # a new process: other initial weights, other random state, then load and resume
        torch.manual_seed(kw["other_rng"])
        model2, optimizer2, scheduler2, loader2, generator2 = _setup(kw, "fresh")
        if role == "save":
            try:
                start = load(path, model2, optimizer2, scheduler2, generator2)
            except KeyError as exc:
                key = str(exc.args[0]) if exc.args else "?"
                raise Incorrect(
                    f"missing_{key}" if key in KEYS else "missing_entry",
                    f"Your checkpoint has no {key!r} entry. A checkpoint for resuming needs all of "
                    f"{', '.join(repr(k) for k in KEYS)}; without {key!r} the resumed run cannot "
                    "continue exactly where the original stopped.",
                ) from None
            except pickle.UnpicklingError:
                raise Incorrect(
                    "pickled_objects",
                    "Your checkpoint cannot be loaded with `torch.load(path, weights_only=True)`: it "
                    "contains pickled Python objects (a model or optimizer object itself?). Save "
                    "`model.state_dict()`, `optimizer.state_dict()` and `scheduler.state_dict()`, "
                    "which hold only tensors and plain Python values.",
                ) from None
            except Exception as exc:  # noqa: BLE001 - a wrong value in the file
                raise Incorrect(
                    "unloadable_checkpoint",
                    f"Loading your checkpoint failed ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}). "
                    "Check that each entry holds what the exercise describes (e.g. `torch.get_rng_state()` "
                    "and `loader_generator.get_state()`, which are tensors).",
                ) from None
        else:
            model2[2].eval()
            modes2 = [m.training for m in model2.modules()]
            start = load(path, model2, optimizer2, scheduler2, generator2)
            if [m.training for m in model2.modules()] != modes2:
                raise Incorrect("changed_mode", _CHANGED_MODE.format(fn="load_checkpoint"))
        _diagnose(snapshot, model2, optimizer2, scheduler2, generator2, start, k, role)
        _train(model2, optimizer2, scheduler2, loader2, range(start, num_epochs))
        resumed = [p.detach().clone() for p in model2.parameters()]
    if not all(torch.equal(a, b) for a, b in zip(uninterrupted, resumed)):
        raise Incorrect(
            "not_bit_identical",
            "The resumed run does not end with exactly the same weights as the uninterrupted one. "
            "Every piece of state that training reads must be saved and restored.",
        )
    return resumed


_CHANGED_MODE = ("Your `{fn}` changed the train/eval mode of the model (or of some of its submodules), for "
                 "example with `model.eval()`. Saving or loading a checkpoint must leave the modes as the "
                 "caller set them: a training loop that does not call `model.train()` every epoch would "
                 "then train without dropout.")


def _save_without(key):
    def save(path, model, optimizer, scheduler, epoch, loader_generator):
        full = {
            "model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(), "epoch": epoch,
            "rng_state": torch.get_rng_state(), "loader_generator": loader_generator.get_state(),
        }
        del full[key]
        torch.save(full, path)
    return save


def _save_epoch_plus_one(path, model, optimizer, scheduler, epoch, loader_generator):
    save_checkpoint(path, model, optimizer, scheduler, epoch + 1, loader_generator)


def _save_objects(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save({"model": model, "optimizer": optimizer, "scheduler": scheduler.state_dict(), "epoch": epoch,
                "rng_state": torch.get_rng_state(), "loader_generator": loader_generator.get_state()}, path)


def _load_without(step):
    def load(path, model, optimizer, scheduler, loader_generator):
        checkpoint = torch.load(path, weights_only=True)
        model.load_state_dict(checkpoint["model"])
        if step != "optimizer":
            optimizer.load_state_dict(checkpoint["optimizer"])
        if step != "scheduler":
            scheduler.load_state_dict(checkpoint["scheduler"])
        if step != "rng_state":
            torch.set_rng_state(checkpoint["rng_state"])
        if step != "loader_generator":
            loader_generator.set_state(checkpoint["loader_generator"])
        return checkpoint["epoch"] + (1 if step == "epoch_plus_one" else 0)
    return load


def _load_unsafe(path, model, optimizer, scheduler, loader_generator):
    checkpoint = torch.load(path, weights_only=False)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    torch.set_rng_state(checkpoint["rng_state"])
    loader_generator.set_state(checkpoint["loader_generator"])
    return checkpoint["epoch"]


_UNSAFE_MESSAGE = (
    "Your loader ran code hidden in the file: it used `weights_only=False`. A checkpoint from "
    "anywhere you do not fully control must be loaded with `torch.load(path, weights_only=True)` "
    "(the default), which refuses to call anything while loading."
)


def _probe_unsafe_load(answer, r: Rand) -> None:
    """Give the loader a checkpoint with a harmless payload: it must not run."""
    kw = _resume_case(r).kwargs
    model, optimizer, scheduler, _, generator = _setup(kw, "original")
    with tempfile.TemporaryDirectory(prefix="course-grader-") as tmp:
        path = os.path.join(tmp, "checkpoint.pt")
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "epoch": HarmlessPayload("(payload ran)"),
                    "rng_state": torch.get_rng_state(), "loader_generator": generator.get_state()}, path)
        reset_payload_runs()
        try:
            answer(path, model, optimizer, scheduler, generator)
        except Exception:  # noqa: BLE001 - refusing the file is the right outcome
            pass
        if payload_runs():
            raise Incorrect("unsafe_load", _UNSAFE_MESSAGE)


_RESUME_HINTS_SAVE = [
    "Build one dict with the six keys and `torch.save` it to `path`.",
    "Objects have `state_dict()`: the model, the optimizer and the scheduler. The random states are "
    "tensors: `torch.get_rng_state()` and `loader_generator.get_state()`. `epoch` is the int you are given.",
]
_RESUME_HINTS_LOAD = [
    "`checkpoint = torch.load(path, weights_only=True)`, then put every piece back where it came from.",
    "`model.load_state_dict(...)`, `optimizer.load_state_dict(...)`, `scheduler.load_state_dict(...)`, "
    "`torch.set_rng_state(...)`, `loader_generator.set_state(...)`; return `checkpoint['epoch']`.",
]

register(
    Exercise(
        lesson=LESSON, name="save_checkpoint", title="Save everything a resumed run needs",
        reference=save_checkpoint,
        cases=_resume_case,
        edge_cases=_RESUME_EDGES,
        n_random=1,
        timeout=10.0,
        run=lambda answer, case: _run_resume(answer, case, "save"),
        compare=EXACT,
        mistakes=[
            Mistake("missing_rng_state", "Without the global RNG state, dropout draws different masks after "
                    "resuming. Save `torch.get_rng_state()` as 'rng_state'.", _save_without("rng_state"),
                    match_output=False),
            Mistake("missing_optimizer", "Without the optimizer state, momentum (or Adam's running averages) "
                    "restarts from zero. Save `optimizer.state_dict()`.", _save_without("optimizer"),
                    match_output=False),
            Mistake("missing_loader_generator", "Without the DataLoader generator's state the resumed epochs "
                    "shuffle differently. Save `loader_generator.get_state()`.", _save_without("loader_generator"),
                    match_output=False),
            Mistake("wrong_epoch", "Save the `epoch` you are given unchanged: it already counts the completed "
                    "epochs.", _save_epoch_plus_one, match_output=False),
            Mistake("pickled_objects", "You saved the model and optimizer objects; save their `state_dict()`s so "
                    "that `weights_only=True` can load the file.", _save_objects, match_output=False),
        ],
        hints=_RESUME_HINTS_SAVE,
    ),
    Exercise(
        lesson=LESSON, name="load_checkpoint", title="Restore everything and resume where training stopped",
        reference=load_checkpoint,
        cases=_resume_case,
        edge_cases=_RESUME_EDGES,
        n_random=1,
        timeout=10.0,
        run=lambda answer, case: _run_resume(answer, case, "load"),
        compare=EXACT,
        probes=[_probe_unsafe_load],
        mistakes=[
            Mistake("rng_not_restored", "Restore the global RNG with `torch.set_rng_state(checkpoint['rng_state'])`.",
                    _load_without("rng_state"), match_output=False),
            Mistake("optimizer_not_restored", "Restore the optimizer with `optimizer.load_state_dict(...)`.",
                    _load_without("optimizer"), match_output=False),
            Mistake("scheduler_not_restored", "Restore the scheduler with `scheduler.load_state_dict(...)`.",
                    _load_without("scheduler"), match_output=False),
            Mistake("loader_generator_not_restored", "Restore the DataLoader's generator with "
                    "`loader_generator.set_state(...)`.", _load_without("loader_generator"), match_output=False),
            Mistake("wrong_start_epoch", "Return `checkpoint['epoch']` unchanged: it already counts the "
                    "completed epochs, which is where `range(start, num_epochs)` must begin.",
                    _load_without("epoch_plus_one"), match_output=False),
            Mistake("unsafe_load", _UNSAFE_MESSAGE, _load_unsafe, match_output=False),
        ],
        hints=_RESUME_HINTS_LOAD,
    ),
)


# =============================================================================== load_state_dict_cpu
def load_state_dict_cpu(path):
    state_dict = torch.load(path, map_location="cpu", weights_only=True)
    prefix = "module."
    return {(key[len(prefix):] if key.startswith(prefix) else key): value for key, value in state_dict.items()}


_LAYER_NAMES = ["encoder", "head", "blocks.0", "blocks.1", "norm", "classifier", "layers.0", "embedding",
                "module_list.0"]


def _cpu_case(r: Rand, prefixed: bool | None = None, on_gpu: bool | None = None, label: str = "",
              names: list[str] | None = None) -> Case:
    names = names or ["submodule"] + r.py.sample(_LAYER_NAMES, r.integer(1, 3))
    state = {}
    for name in names:
        rows, cols = r.integer(1, 4), r.integer(1, 4)
        state[f"{name}.weight"] = r.randn(rows, cols)
        if r.integer(0, 1):
            state[f"{name}.bias"] = r.randn(rows)
    return Case((), {
        "state": state,
        "prefixed": r.choice([True, True, False]) if prefixed is None else prefixed,
        "on_gpu": r.choice([True, True, False]) if on_gpu is None else on_gpu,
    }, label=label)


def _run_cpu(answer, case: Case):
    kw = case.kwargs
    # "mixed": a DDP state_dict merged with un-prefixed entries (every other key prefixed)
    saved = {("module." + k if kw["prefixed"] is True or (kw["prefixed"] == "mixed" and i % 2 == 0) else k): v
             for i, (k, v) in enumerate(kw["state"].items())}
    with tempfile.TemporaryDirectory(prefix="course-grader-") as tmp:
        path = os.path.join(tmp, "model.pt")
        (save_as_if_on_cuda if kw["on_gpu"] else torch.save)(saved, path)
        try:
            result = answer(path)
        except RuntimeError as exc:
            if "CUDA" in str(exc) and "map_location" in str(exc):
                raise Incorrect(
                    "no_map_location",
                    "This checkpoint was saved on a GPU, and loading it without `map_location` tries to "
                    "put its tensors back on CUDA. Load with `torch.load(path, map_location='cpu', "
                    "weights_only=True)`.",
                ) from None
            raise
    if isinstance(result, dict) and any(isinstance(v, torch.Tensor) and v.device.type != "cpu" for v in result.values()):
        raise Incorrect("no_map_location", "Some tensors came back on a GPU: pass `map_location='cpu'` to `torch.load`.")
    return result


def _probe_cpu_unsafe(answer, r: Rand) -> None:
    with tempfile.TemporaryDirectory(prefix="course-grader-") as tmp:
        path = os.path.join(tmp, "model.pt")
        torch.save({"module.weight": r.randn(2, 2), "module.bias": HarmlessPayload("(payload ran)")}, path)
        reset_payload_runs()
        try:
            answer(path)
        except Exception:  # noqa: BLE001 - refusing the file is the right outcome
            pass
        if payload_runs():
            raise Incorrect("unsafe_load", _UNSAFE_MESSAGE)


def _mistake_no_map_location(path):
    state_dict = torch.load(path, weights_only=True)
    return {(k[7:] if k.startswith("module.") else k): v for k, v in state_dict.items()}


def _mistake_replace(path):
    state_dict = torch.load(path, map_location="cpu", weights_only=True)
    return {k.replace("module.", ""): v for k, v in state_dict.items()}


def _mistake_strip_always(path):
    state_dict = torch.load(path, map_location="cpu", weights_only=True)
    return {k[len("module."):]: v for k, v in state_dict.items()}


def _mistake_lstrip(path):
    state_dict = torch.load(path, map_location="cpu", weights_only=True)
    return {k.lstrip("module."): v for k, v in state_dict.items()}  # strips characters, not a prefix


def _mistake_cpu_unsafe(path):
    state_dict = torch.load(path, map_location="cpu", weights_only=False)
    return {(k[7:] if k.startswith("module.") else k): v for k, v in state_dict.items()}


register(Exercise(
    lesson=LESSON, name="load_state_dict_cpu", title="Load a GPU/DDP checkpoint on a CPU",
    reference=load_state_dict_cpu,
    cases=_cpu_case,
    edge_cases=[
        # 'encoder' and 'layers.0' start with letters of 'module.' (`key.lstrip('module.')` damages
        # them); 'module_list.0' starts with 'module' but not with the prefix 'module.'
        _cpu_case(Rand(71), prefixed=True, on_gpu=True, label="saved on a GPU from a DDP model",
                  names=["submodule", "encoder", "head"]),
        _cpu_case(Rand(72), prefixed=False, on_gpu=False, label="saved on a CPU from a plain model",
                  names=["submodule", "layers.0", "module_list.0", "norm"]),
        _cpu_case(Rand(73), prefixed="mixed", on_gpu=True,
                  label="some keys with 'module.', some without (a DDP state_dict merged with extra entries)",
                  names=["ema", "head", "encoder", "blocks.0"]),
        _cpu_case(Rand(74), prefixed="mixed", on_gpu=False,
                  label="the first key without 'module.', later keys with it",
                  names=["step_counter", "head", "norm", "layers.0"]),
    ],
    n_random=4,
    run=_run_cpu,
    compare=EXACT,
    probes=[_probe_cpu_unsafe],
    mistakes=[
        Mistake("no_map_location", "Without `map_location='cpu'` a GPU checkpoint cannot be loaded on a "
                "CPU-only machine.", _mistake_no_map_location, match_output=False),
        Mistake("replaced_everywhere", "`key.replace('module.', '')` also changes keys that merely contain "
                "'module.', like 'submodule.weight' (it becomes 'subweight'). Remove the prefix only at the "
                "start of the key: `key[len('module.'):]` when `key.startswith('module.')`.", _mistake_replace),
        Mistake("stripped_unconditionally", "Not every checkpoint comes from a DDP model: you cut the first "
                "7 characters of keys that did not start with 'module.'. Check `key.startswith('module.')` "
                "first.", _mistake_strip_always),
        Mistake("lstrip_characters", "`key.lstrip('module.')` removes any of the characters m, o, d, u, l, e "
                "and '.' from the start ('encoder.weight' becomes 'ncoder.weight'), not the prefix. Use "
                "`key[len('module.'):]` when `key.startswith('module.')` (or `key.removeprefix('module.')`).",
                _mistake_lstrip),
        Mistake("unsafe_load", _UNSAFE_MESSAGE, _mistake_cpu_unsafe, match_output=False),
    ],
    hints=[
        "`torch.load(path, map_location='cpu', weights_only=True)` loads every tensor into CPU memory, "
        "wherever it was saved.",
        "Build a new dict: for each key, drop a leading 'module.' (`key.startswith('module.')`) and keep "
        "every other key as it is.",
        "`torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(state_dict, 'module.')` does the "
        "same in place, if you prefer PyTorch's helper.",
    ],
))


# =============================================================================== load_matching
def load_matching(model, state_dict):
    own = model.state_dict()
    matching = {k: v for k, v in state_dict.items() if k in own and own[k].shape == v.shape}
    model.load_state_dict(matching, strict=False)
    return sorted(k for k in own if k not in matching)


def _bn_mlp(r: Rand, d: int, h: int, c: int, extra: bool = False) -> nn.Sequential:
    layers = [skip_init(nn.Linear, d, h), nn.BatchNorm1d(h), nn.ReLU(), skip_init(nn.Linear, h, c)]
    if extra:
        layers += [nn.ReLU(), skip_init(nn.Linear, c, 2)]
    model = _fill(nn.Sequential(*layers), r)
    bn = model[1]
    with torch.no_grad():
        bn.running_mean.copy_(r.randn(h))
        bn.running_var.copy_(r.rand(h) + 0.5)
        bn.num_batches_tracked.fill_(r.integer(1, 50))
    return model


def _matching_case(r: Rand, variant: str | None = None, label: str = "") -> Case:
    d, h, c = r.integer(2, 6), r.integer(3, 8), r.integer(2, 5)
    variant = variant or r.choice(["new_head", "extra_layer", "wider", "same", "new_head", "model_extra_layer"])
    if variant == "transposed" and h == d:
        h = d + 1
    model = _bn_mlp(r, d, h, c, extra=variant == "model_extra_layer")
    if variant == "new_head":
        source = _bn_mlp(r, d, h, c + r.integer(1, 3))
    elif variant == "extra_layer":
        source = _bn_mlp(r, d, h, c, extra=True)
    elif variant == "wider":
        source = _bn_mlp(r, d, h + r.integer(1, 3), c)
    else:
        source = _bn_mlp(r, d, h, c)
    state_dict = source.state_dict()
    if variant == "transposed":  # as many elements as the model's (h, d) weight, another shape
        state_dict["0.weight"] = r.randn(d, h)
    return Case((model, state_dict), label=label)


def _run_matching(answer, case: Case):
    model, state_dict = case.args
    given = dict(state_dict)
    try:
        skipped = answer(model, state_dict)
        if state_dict.keys() != given.keys() or any(state_dict[k] is not v for k, v in given.items()):
            raise Incorrect("mutated_input", "Your function changed the `state_dict` it was given (deleted or "
                            "replaced entries): build a new dict of the matching entries and leave the "
                            "caller's checkpoint as it was.")
    except RuntimeError as exc:
        if "size mismatch" in str(exc):
            raise Incorrect(
                "size_mismatch",
                "`load_state_dict(..., strict=False)` forgives missing and unexpected keys, but not "
                "tensors whose shapes differ. Keep only the entries whose key exists in the model "
                "*and* whose shape matches, then load those.",
            ) from None
        raise
    return skipped, {k: v.detach().clone() for k, v in model.state_dict().items()}


def _mistake_strict_false(model, state_dict):
    return sorted(model.load_state_dict(state_dict, strict=False).missing_keys)


def _mistake_parameters_only(model, state_dict):
    loaded = []
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name in state_dict and state_dict[name].shape == p.shape:
                p.copy_(state_dict[name])
                loaded.append(name)
    return sorted(k for k, _ in model.named_parameters() if k not in loaded)


def _mistake_mismatched_only(model, state_dict):
    own = model.state_dict()
    matching = {k: v for k, v in state_dict.items() if k in own and own[k].shape == v.shape}
    model.load_state_dict(matching, strict=False)
    return sorted(k for k, v in state_dict.items() if k in own and own[k].shape != v.shape)


def _mistake_same_numel(model, state_dict):
    own = model.state_dict()
    matching = {k: v.reshape(own[k].shape) for k, v in state_dict.items() if k in own and own[k].numel() == v.numel()}
    model.load_state_dict(matching, strict=False)
    return sorted(k for k in own if k not in matching)


def _mistake_checkpoint_keys(model, state_dict):
    own = model.state_dict()
    matching = {k: v for k, v in state_dict.items() if k in own and own[k].shape == v.shape}
    model.load_state_dict(matching, strict=False)
    return sorted(k for k in state_dict if k not in matching)


register(Exercise(
    lesson=LESSON, name="load_matching", title="Load what fits into a changed model",
    reference=load_matching,
    cases=_matching_case,
    edge_cases=[
        _matching_case(Rand(81), "new_head", "a checkpoint whose output layer has more classes"),
        _matching_case(Rand(82), "extra_layer", "a checkpoint with an extra layer at the end"),
        _matching_case(Rand(83), "model_extra_layer", "a model with a layer the checkpoint does not have"),
        _matching_case(Rand(84), "wider", "a checkpoint with a wider hidden layer (several keys not loaded)"),
        _matching_case(Rand(85), "transposed", "a checkpoint whose first weight has the model's number of "
                       "elements in another shape ((in, out) instead of (out, in))"),
    ],
    n_random=5,
    run=_run_matching,
    compare=EXACT,
    mistakes=[
        Mistake("size_mismatch", "`strict=False` alone still fails on shape mismatches: filter by key and "
                "shape first.", _mistake_strict_false, match_output=False),
        Mistake("parameters_only", "You copied parameters only. A state_dict also holds buffers (BatchNorm's "
                "running mean and variance, its batch counter): load from `model.state_dict()`'s keys.",
                _mistake_parameters_only),
        Mistake("same_numel", "You matched tensors by their number of elements. A checkpoint weight of shape "
                "(3, 2) has as many elements as the model's (2, 3) one, but it is another layer's weight: "
                "reshaping it scrambles the values. Compare the shapes themselves: `own[k].shape == v.shape`.",
                _mistake_same_numel),
        Mistake("checkpoint_keys", "Return the keys of the *model* that were not loaded (they keep their "
                "fresh initialisation and need training), not the checkpoint's leftover keys.",
                _mistake_checkpoint_keys),
    ],
    hints=[
        "`own = model.state_dict()` lists every parameter and buffer of the model with its shape.",
        "Keep `{k: v for k, v in state_dict.items() if k in own and own[k].shape == v.shape}` and load it "
        "with `model.load_state_dict(matching, strict=False)`.",
        "Return `sorted(k for k in own if k not in matching)`.",
    ],
))


# =============================================================================== export
def export_with_dynamic_batch(model, example_input):
    model.eval()
    batch = torch.export.Dim("batch")
    return torch.export.export(model, (example_input,), dynamic_shapes=({0: batch},))


def _export_case(r: Rand) -> Case:
    d, h, c = r.integer(2, 6), r.integer(3, 8), r.integer(2, 4)
    model = nn.Sequential(skip_init(nn.Linear, d, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Dropout(0.5),
                          skip_init(nn.Linear, h, c))
    _fill(model, r)
    with torch.no_grad():
        model[1].running_mean.copy_(r.randn(h))
        model[1].running_var.copy_(r.rand(h) + 0.5)
    model.train()  # as it is right after training
    return Case((model, r.randn(r.integer(2, 5), d)), {"other": (r.integer(6, 12), r.integer(2, 3))})


# The reference's outputs are, by definition, the model's outputs in evaluation mode, so the
# check computes those directly instead of exporting the reference too (an export costs ~0.06 s).
# tests/test_l07_persistence.py turns this off and runs the real reference export through the check.
_TRUST_REFERENCE = True


def _run_export(answer, case: Case):
    model, example = case.args
    reference_model = copy.deepcopy(model).eval()
    # fixed sizes on top of the random ones, so no seed can skip a batch of one or a large batch
    sizes = list(case.kwargs["other"]) + [1, 64, 1000]
    with torch.no_grad():
        expected = [reference_model(Rand(n).randn(n, example.shape[1])) for n in sizes]
    if _TRUST_REFERENCE and answer is export_with_dynamic_batch:
        model.eval()  # what the reference does to its argument: the text allows switching to eval mode
        return expected
    try:
        program = answer(model, example)
    except Exception as exc:  # noqa: BLE001
        if "specialized it to be a constant" in str(exc):
            raise Incorrect(
                "wrong_dynamic_dim",
                "torch.export refused your dynamic dimension because the model needs that size to be "
                "fixed. The batch is dimension 0 of the input: `dynamic_shapes=({0: batch},)`.",
            ) from None
        raise
    if not isinstance(program, torch.export.ExportedProgram):
        raise Incorrect(
            "not_exported_program",
            f"Return the `ExportedProgram` that `torch.export.export` gives you (you returned a "
            f"{type(program).__name__}); it is what `torch.export.save` writes to a .pt2 file.",
        )
    module = program.module()
    outputs = []
    refused = []
    for n in sizes:
        X = Rand(n).randn(n, example.shape[1])
        try:
            got = module(X)
        except Exception as exc:  # noqa: BLE001
            if "Guard failed" in str(exc) or "size()[0]" in str(exc):
                refused.append(n)
                continue
            raise
        outputs.append(got)
    if refused and len(refused) == len(sizes) - sizes.count(example.shape[0]):
        raise Incorrect(
            "static_batch",
            f"Your exported program only accepts batches of {example.shape[0]}, the example's size; batches "
            f"of {', '.join(map(str, refused))} were refused. Mark dimension 0 as dynamic: "
            "`dynamic_shapes=({0: torch.export.Dim('batch')},)`.",
        )
    if refused:
        raise Incorrect(
            "bounded_batch",
            f"Your exported program refused batches of {', '.join(map(str, refused))} but accepts others: the "
            "dynamic batch dimension has bounds too tight for real use (`Dim('batch', min=..., max=...)`). Mark "
            "the batch dynamic without such limits: `torch.export.Dim('batch')`.",
        )
    checked = []
    for n, got in zip(sizes, outputs):
        X = Rand(n).randn(n, example.shape[1])
        if not torch.equal(got, module(X)):
            raise Incorrect(
                "exported_in_train_mode",
                "Your exported model gives different outputs for the same input: it was exported in "
                "training mode, so dropout (and BatchNorm's batch statistics) are baked in. Call "
                "`model.eval()` before exporting.",
            )
        checked.append(got.detach())
    outputs = checked
    if not all(torch.allclose(g, e, rtol=1e-5, atol=1e-6) for g, e in zip(outputs, expected)):
        raise Incorrect(
            "exported_in_train_mode",
            "Your exported model does not compute what the model computes in evaluation mode. Call "
            "`model.eval()` before exporting (BatchNorm must use its running statistics).",
        )
    return outputs


def _export_static(model, example_input):
    model.eval()
    return torch.export.export(model, (example_input,))


def _export_train_mode(model, example_input):
    return torch.export.export(model, (example_input,), dynamic_shapes=({0: torch.export.Dim("batch")},))


def _export_module(model, example_input):
    return export_with_dynamic_batch(model, example_input).module()


def _export_wrong_dim(model, example_input):
    model.eval()
    return torch.export.export(model, (example_input,), dynamic_shapes=({1: torch.export.Dim("batch")},))


register(Exercise(
    lesson=LESSON, name="export_with_dynamic_batch", title="Export a model that accepts any batch size",
    reference=export_with_dynamic_batch,
    cases=_export_case,
    n_random=2,
    timeout=15.0,
    run=_run_export,
    compare=Compare(rtol=1e-5, atol=1e-6),
    mistakes=[
        Mistake("static_batch", "Without `dynamic_shapes` the batch size is fixed to the example's.",
                _export_static, match_output=False),
        Mistake("exported_in_train_mode", "Call `model.eval()` before exporting, or dropout is exported too.",
                _export_train_mode, match_output=False),
        Mistake("not_exported_program", "Return the ExportedProgram itself, not `.module()`.",
                _export_module, match_output=False),
        Mistake("wrong_dynamic_dim", "The batch is dimension 0; dimension 1 is the feature size the first "
                "layer needs.", _export_wrong_dim, match_output=False),
    ],
    hints=[
        "Put the model in evaluation mode first: `model.eval()`.",
        "`batch = torch.export.Dim('batch')` names a dynamic size; `dynamic_shapes=({0: batch},)` says "
        "that dimension 0 of the first input may vary.",
        "`return torch.export.export(model, (example_input,), dynamic_shapes=({0: batch},))`.",
    ],
))
