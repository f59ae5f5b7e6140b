"""Red team of the lesson 04-08 graders, kept as tests (issue 11).

For every exercise: at least five wrong answers a learner would plausibly write (real learner
code, not mutants of the reference), three valid but unusual answers, and two cheats (answers
that special-case what the grader shows, or objects that lie to duck-typed checks). Every
verdict must hold for several seeds (``rejected``/``accepted`` try each of them).

The wrong answers are grouped per exercise in ``WRONG[exercise] = [(answer, mistake or None)]``
so one parametrized test covers them all; ``VALID`` and ``CHEATS`` likewise.
"""

from __future__ import annotations

import collections
import math
import copy

import numpy as np
import pytest
import torch
from torch import nn

from grading_asserts import accepted, rejected  # noqa: E402 (tests/ is on sys.path)

WRONG: dict[str, list] = collections.defaultdict(list)
VALID: dict[str, list] = collections.defaultdict(list)
CHEATS: dict[str, list] = collections.defaultdict(list)


def wrong(exercise, mistake=None):
    def deco(fn):
        WRONG[exercise].append(pytest.param(fn, mistake, id=f"{exercise}-{fn.__name__}"))
        return fn
    return deco


def valid(exercise):
    def deco(fn):
        VALID[exercise].append(pytest.param(fn, id=f"{exercise}-{fn.__name__}"))
        return fn
    return deco


def cheat(exercise):
    def deco(fn):
        CHEATS[exercise].append(pytest.param(fn, id=f"{exercise}-{fn.__name__}"))
        return fn
    return deco


# =========================================================================== 08 confusion_matrix
CM = "09_capstone.confusion_matrix"


@wrong(CM)
def cm_float_counts(preds, targets, num_classes):
    cm = torch.zeros(num_classes, num_classes)
    for t, p in zip(targets.tolist(), preds.tolist()):
        cm[t, p] += 1
    return cm


@wrong(CM)
def cm_bincount_no_minlength(preds, targets, num_classes):
    return torch.bincount(targets * num_classes + preds).reshape(num_classes, -1)


@wrong(CM, "transposed")
def cm_loop_pred_rows(preds, targets, num_classes):
    cm = torch.zeros(num_classes, num_classes, dtype=torch.int64)
    for t, p in zip(targets, preds):
        cm[p, t] += 1
    return cm


@wrong(CM)
def cm_classes_from_unique(preds, targets, num_classes):
    k = len(torch.unique(torch.cat([preds, targets])))
    cm = torch.zeros(k, k, dtype=torch.int64)
    for t, p in zip(targets.tolist(), preds.tolist()):
        cm[t, p] += 1
    return cm


@wrong(CM)
def cm_max_of_data(preds, targets, num_classes):
    k = max(int(preds.max()), int(targets.max()), num_classes - 1) + 1
    cm = torch.zeros(k, k, dtype=torch.int64)
    cm.index_put_((targets, preds), torch.ones_like(preds), accumulate=True)
    return cm


@wrong(CM)
def cm_in_place_index(preds, targets, num_classes):
    targets *= num_classes
    targets += preds
    return torch.bincount(targets, minlength=num_classes**2).reshape(num_classes, num_classes)


@wrong(CM)
def cm_int32(preds, targets, num_classes):
    cm = torch.zeros(num_classes, num_classes, dtype=torch.int32)
    cm.index_put_((targets, preds), torch.ones_like(targets, dtype=torch.int32), accumulate=True)
    return cm


@valid(CM)
def cm_one_hot_matmul(preds, targets, num_classes):
    F = torch.nn.functional
    return F.one_hot(targets, num_classes).T @ F.one_hot(preds, num_classes)


@valid(CM)
def cm_sklearn(preds, targets, num_classes):
    from sklearn.metrics import confusion_matrix as sk_cm
    if len(targets) == 0:  # sklearn refuses empty input
        return torch.zeros(num_classes, num_classes, dtype=torch.int64)
    return torch.from_numpy(sk_cm(targets.numpy(), preds.numpy(), labels=list(range(num_classes)))).long()


@valid(CM)
def cm_bincount(preds, targets, num_classes):
    return torch.bincount(targets * num_classes + preds, minlength=num_classes**2).view(num_classes, num_classes)


@cheat(CM)
def cm_assumes_perfect(preds, targets, num_classes):
    return torch.diag(torch.bincount(targets, minlength=num_classes))


@cheat(CM)
def cm_lying_subclass(preds, targets, num_classes):
    class Agreeable(torch.Tensor):
        def __eq__(self, other):
            return torch.ones_like(torch.as_tensor(other), dtype=torch.bool)

    return torch.zeros(num_classes, num_classes, dtype=torch.int64).as_subclass(Agreeable)


# =========================================================================== 08 DigitClassifier
DC = "09_capstone.DigitClassifier"


def _digit_cnn(dropout=0.0):
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), *([nn.Dropout(dropout)] if dropout else []), nn.Linear(32 * 16, 64), nn.ReLU(), nn.Linear(64, 10))


def _fit_model(model, X, y, epochs=8, lr=3e-3, batch=64, opt="adam"):
    torch.manual_seed(0)
    optimizer = (torch.optim.Adam(model.parameters(), lr=lr) if opt == "adam"
                 else torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9))
    g = torch.Generator().manual_seed(0)
    model.train()
    for _ in range(epochs):
        perm = torch.randperm(len(y), generator=g)
        for i in range(0, len(y), batch):
            idx = perm[i : i + batch]
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(X[idx]), y[idx]).backward()
            optimizer.step()
    return model


class _Clf:
    epochs, lr, opt, dropout = 8, 3e-3, "adam", 0.0

    def fit(self, X, y):
        torch.manual_seed(0)
        self.model = _fit_model(_digit_cnn(self.dropout), X, y, self.epochs, self.lr, opt=self.opt)
        return self

    def predict(self, X):
        self.model.eval()
        with torch.inference_mode():
            return self.model(X).argmax(dim=1)


@wrong(DC, "predictions_shape")
class DCReturnsProbabilities(_Clf):
    def predict(self, X):
        self.model.eval()
        with torch.no_grad():
            return self.model(X).softmax(dim=1)


@wrong(DC, "not_trained")
class DCTrainsACopy(_Clf):
    def fit(self, X, y):
        torch.manual_seed(0)
        self.model = _digit_cnn()
        _fit_model(copy.deepcopy(self.model), X, y, epochs=1)
        return self


@wrong(DC, "predictions_shape")
class DCArgmaxWithoutDim(_Clf):
    def predict(self, X):
        self.model.eval()
        with torch.no_grad():
            return self.model(X).argmax()


@wrong(DC, "forgot_eval")
class DCDropoutNoEval(_Clf):
    dropout = 0.3

    def predict(self, X):
        with torch.no_grad():
            return self.model(X).argmax(dim=1)


@wrong(DC, "grad_left_off")
class DCSetGradEnabledFalse(_Clf):
    def predict(self, X):
        self.model.eval()
        torch.set_grad_enabled(False)
        return self.model(X).argmax(dim=1)


@wrong(DC, "no_model")
class DCKeepsNetElsewhere(_Clf):
    def fit(self, X, y):
        torch.manual_seed(0)
        self.net = _fit_model(_digit_cnn(), X, y, epochs=1)
        return self

    def predict(self, X):
        self.net.eval()
        with torch.no_grad():
            return self.net(X).argmax(dim=1)


@wrong(DC, "softmax_output")
class DCSoftmaxLayer(_Clf):
    def fit(self, X, y):
        torch.manual_seed(0)
        self.model = _fit_model(nn.Sequential(*_digit_cnn(), nn.Softmax(dim=1)), X, y, epochs=2)
        return self


@valid(DC)
class DCRestoresModeAndBatches(_Clf):
    dropout = 0.2

    def predict(self, X):
        was = self.model.training
        self.model.eval()
        with torch.no_grad():
            out = torch.cat([self.model(X[i : i + 100]) for i in range(0, len(X), 100)])
        self.model.train(was)
        return out.argmax(1).to(torch.int64)


@valid(DC)
class DCCustomModule(_Clf):
    """A custom nn.Module that takes flat or image input and registers its head first."""

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Sequential(nn.Linear(32 * 16, 64), nn.ReLU(), nn.Linear(64, 10))
            self.features = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))

        def forward(self, x):
            return self.head(self.features(x.reshape(-1, 1, 8, 8)).flatten(1))

    def fit(self, X, y):
        torch.manual_seed(0)
        self.model = _fit_model(self.Net(), X.flatten(1), y, epochs=15)
        return self

    def predict(self, X):
        self.model.eval()
        with torch.inference_mode():
            return self.model(X.flatten(1)).argmax(dim=1)


@valid(DC)
class DCSgdMomentumInferenceFlag(_Clf):
    epochs, lr, opt = 12, 0.05, "sgd"

    def predict(self, X):
        self.model.train(False)
        with torch.inference_mode():
            logits = self.model.forward(X)
        return torch.max(logits, dim=1).indices


@cheat(DC)
class DCNearestNeighbourBehindTheModel(_Clf):
    """Runs the (untrained) network for show, answers with the nearest training image."""

    def fit(self, X, y):
        torch.manual_seed(0)
        self.model, self.X, self.y = _digit_cnn(), X.flatten(1), y
        return self

    def predict(self, X):
        self.model.eval()
        with torch.no_grad():
            self.model(X)
        return self.y[torch.cdist(X.flatten(1), self.X).argmin(1)]


@cheat(DC)
class DCLyingPredictions(_Clf):
    def fit(self, X, y):
        torch.manual_seed(0)
        self.model = _digit_cnn()
        return self

    def predict(self, X):
        class Agreeable(torch.Tensor):
            def __eq__(self, other):
                return torch.ones(self.shape, dtype=torch.bool)

        self.model.eval()
        with torch.no_grad():
            return self.model(X).argmax(1).as_subclass(Agreeable)


# =========================================================================== red-team reviewer's findings (regressions)
@cheat(DC)
class DCKnnModule(_Clf):
    """A 3-nearest-neighbour vote wrapped in an nn.Module with buffers only."""

    class KNN(nn.Module):
        def __init__(self, X, y):
            super().__init__()
            self.register_buffer("X", X.flatten(1))
            self.register_buffer("y", y)

        def forward(self, x):
            idx = torch.cdist(x.flatten(1), self.X).topk(3, largest=False).indices
            return nn.functional.one_hot(self.y[idx], 10).sum(1).float() * 5.0 - 1.0

    def fit(self, X, y):
        self.model = self.KNN(X, y)
        return self


@cheat(DC)
class DCNearestNeighbourBehindTrainedNet(_Clf):
    def fit(self, X, y):
        torch.manual_seed(0)
        self.model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
        opt = torch.optim.Adam(self.model.parameters(), lr=1e-2)
        for _ in range(3):
            opt.zero_grad()
            nn.functional.cross_entropy(self.model(X), y).backward()
            opt.step()
        self.X, self.y = X.flatten(1), y
        return self

    def predict(self, X):
        self.model.eval()
        with torch.inference_mode():
            self.model(X)
            return self.y[torch.cdist(X.flatten(1), self.X).argmin(1)]


# =========================================================================== 07 save_checkpoint / load_checkpoint
SC, LC = "07_persistence.save_checkpoint", "07_persistence.load_checkpoint"


def _ckpt(model, optimizer, scheduler, epoch, g, **changes):
    d = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
         "epoch": epoch, "rng_state": torch.get_rng_state(), "loader_generator": g.get_state()}
    d.update(changes)
    return {k: v for k, v in d.items() if v is not None}


@wrong(SC)
def save_model_only(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save({"model": model.state_dict(), "epoch": epoch}, path)


@wrong(SC)
def save_seed_not_state(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save(_ckpt(model, optimizer, scheduler, epoch, loader_generator, rng_state=torch.initial_seed()), path)


@wrong(SC)
def save_generator_seed(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save(_ckpt(model, optimizer, scheduler, epoch, loader_generator,
                     loader_generator=torch.tensor(loader_generator.initial_seed())), path)


@wrong(SC)
def save_next_epoch(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save(_ckpt(model, optimizer, scheduler, epoch + 1, loader_generator), path)


@wrong(SC, "changed_mode")
def save_then_eval(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save(_ckpt(model, optimizer, scheduler, epoch, loader_generator), path)
    model.eval()


@wrong(SC)
def save_lr_instead_of_scheduler(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save(_ckpt(model, optimizer, scheduler, epoch, loader_generator, scheduler={"lr": scheduler.get_last_lr()}),
               path)


@valid(SC)
def save_with_extras(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save(_ckpt(model, optimizer, scheduler, epoch, loader_generator, version=2, note="halfway"), path)


@valid(SC)
def save_to_file_object(path, model, optimizer, scheduler, epoch, loader_generator):
    with open(path, "wb") as f:
        torch.save(copy.deepcopy(_ckpt(model, optimizer, scheduler, int(epoch), loader_generator)), f)


@valid(SC)
def save_ordered_dict(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save(collections.OrderedDict(_ckpt(model, optimizer, scheduler, epoch, loader_generator)), str(path))


@cheat(SC)
def save_always_epoch_one(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save(_ckpt(model, optimizer, scheduler, 1, loader_generator), path)


@cheat(SC)
def save_fresh_generator_state(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save(_ckpt(model, optimizer, scheduler, epoch, loader_generator,
                     rng_state=torch.Generator().get_state()), path)


def _restore(path, model, optimizer, scheduler, g, skip=(), **load_kwargs):
    ck = torch.load(path, weights_only=True, **load_kwargs)
    model.load_state_dict(ck["model"])
    if "optimizer" not in skip:
        optimizer.load_state_dict(ck["optimizer"])
    if "scheduler" not in skip:
        scheduler.load_state_dict(ck["scheduler"])
    if "rng" not in skip:
        torch.set_rng_state(ck["rng_state"])
    if "gen" not in skip:
        g.set_state(ck["loader_generator"])
    return ck["epoch"]


@wrong(LC, "rng_not_restored")
def load_reseeds_from_epoch(path, model, optimizer, scheduler, loader_generator):
    epoch = _restore(path, model, optimizer, scheduler, loader_generator, skip=("rng",))
    torch.manual_seed(epoch)
    return epoch


@wrong(LC)
def load_next_epoch(path, model, optimizer, scheduler, loader_generator):
    return _restore(path, model, optimizer, scheduler, loader_generator) + 1


@wrong(LC)
def load_model_only(path, model, optimizer, scheduler, loader_generator):
    ck = torch.load(path, weights_only=True)
    model.load_state_dict(ck["model"])
    return ck["epoch"]


@wrong(LC, "changed_mode")
def load_then_train_mode(path, model, optimizer, scheduler, loader_generator):
    epoch = _restore(path, model, optimizer, scheduler, loader_generator)
    model.train()
    return epoch


@wrong(LC)
def load_optimizer_into_fresh_lr(path, model, optimizer, scheduler, loader_generator):
    """Loads the optimizer but then resets the learning rate to the initial one."""
    epoch = _restore(path, model, optimizer, scheduler, loader_generator)
    for group in optimizer.param_groups:
        group["lr"] = group["initial_lr"]
    return epoch


@wrong(LC, "unsafe_load")
def load_unsafe(path, model, optimizer, scheduler, loader_generator):
    return _restore(path, model, optimizer, scheduler, loader_generator, weights_only=False) \
        if False else _restore_unsafe(path, model, optimizer, scheduler, loader_generator)


def _restore_unsafe(path, model, optimizer, scheduler, g):
    ck = torch.load(path, weights_only=False)
    model.load_state_dict(ck["model"])
    optimizer.load_state_dict(ck["optimizer"])
    scheduler.load_state_dict(ck["scheduler"])
    torch.set_rng_state(ck["rng_state"])
    g.set_state(ck["loader_generator"])
    return ck["epoch"]


@valid(LC)
def load_map_location_cpu(path, model, optimizer, scheduler, loader_generator):
    return _restore(path, model, optimizer, scheduler, loader_generator, map_location="cpu")


@valid(LC)
def load_random_module_and_int(path, model, optimizer, scheduler, loader_generator):
    ck = torch.load(path)  # weights_only=True is the default
    for obj, key in ((model, "model"), (optimizer, "optimizer"), (scheduler, "scheduler")):
        obj.load_state_dict(ck[key])
    torch.random.set_rng_state(ck["rng_state"])
    loader_generator.set_state(ck["loader_generator"])
    return int(ck["epoch"])


@valid(LC)
def load_restores_rng_last(path, model, optimizer, scheduler, loader_generator):
    ck = torch.load(path, weights_only=True, mmap=False)
    loader_generator.set_state(ck["loader_generator"])
    torch.set_rng_state(ck["rng_state"])
    scheduler.load_state_dict(ck["scheduler"])
    optimizer.load_state_dict(ck["optimizer"])
    model.load_state_dict(ck["model"], strict=True)
    return ck["epoch"]


@cheat(LC)
def load_returns_fixed_epoch(path, model, optimizer, scheduler, loader_generator):
    _restore(path, model, optimizer, scheduler, loader_generator)
    return 1


@cheat(LC)
def load_epoch_only(path, model, optimizer, scheduler, loader_generator):
    return torch.load(path, weights_only=True)["epoch"]


# =========================================================================== 07 load_state_dict_cpu
CPU = "07_persistence.load_state_dict_cpu"


def _cpu_load(path):
    return torch.load(path, map_location="cpu", weights_only=True)


@wrong(CPU)
def cpu_decides_from_first_key(path):
    sd = _cpu_load(path)
    if next(iter(sd)).startswith("module."):
        return {k[7:]: v for k, v in sd.items()}
    return dict(sd)


@wrong(CPU)
def cpu_only_if_all_prefixed(path):
    sd = _cpu_load(path)
    if all(k.startswith("module.") for k in sd):
        return {k[7:]: v for k, v in sd.items()}
    return dict(sd)


@wrong(CPU, "replaced_everywhere")
def cpu_replace(path):
    return {k.replace("module.", ""): v for k, v in _cpu_load(path).items()}


@wrong(CPU)
def cpu_split_first_dot(path):
    return {(k.split(".", 1)[1] if k.startswith("module") else k): v for k, v in _cpu_load(path).items()}


@wrong(CPU, "no_map_location")
def cpu_no_map_location(path):
    sd = torch.load(path, weights_only=True)
    return {k.removeprefix("module."): v for k, v in sd.items()}


@wrong(CPU, "unsafe_load")
def cpu_unsafe(path):
    sd = torch.load(path, map_location="cpu", weights_only=False)
    return {k.removeprefix("module."): v for k, v in sd.items()}


@valid(CPU)
def cpu_removeprefix(path):
    return {k.removeprefix("module."): v for k, v in _cpu_load(path).items()}


@valid(CPU)
def cpu_consume_prefix_helper(path):
    sd = _cpu_load(path)
    torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(sd, "module.")
    return sd


@valid(CPU)
def cpu_regex_device_object(path):
    import re
    sd = torch.load(path, map_location=torch.device("cpu"), weights_only=True)
    return collections.OrderedDict((re.sub(r"^module\.", "", k), v) for k, v in sd.items())


@cheat(CPU)
def cpu_known_names_only(path):
    """Strips only the names the shown cases use."""
    sd = _cpu_load(path)
    return {(k[7:] if k.startswith(("module.submodule", "module.encoder", "module.head")) else k): v
            for k, v in sd.items()}


@cheat(CPU)
def cpu_lying_dict(path):
    class Agreeable(dict):
        def __eq__(self, other):
            return True

    return Agreeable(_cpu_load(path))


# =========================================================================== 07 load_matching
LM = "07_persistence.load_matching"


@wrong(LM)
def matching_ignores_shape(model, state_dict):
    own = model.state_dict()
    ok = {k: v for k, v in state_dict.items() if k in own}
    try:
        model.load_state_dict(ok, strict=False)
    except RuntimeError:
        pass
    return sorted(k for k in own if k not in ok)


@wrong(LM)
def matching_returns_loaded(model, state_dict):
    own = model.state_dict()
    ok = {k: v for k, v in state_dict.items() if k in own and own[k].shape == v.shape}
    model.load_state_dict(ok, strict=False)
    return sorted(ok)


@wrong(LM)
def matching_unsorted(model, state_dict):
    own = model.state_dict()
    ok = {k: v for k, v in state_dict.items() if k in own and own[k].shape == v.shape}
    model.load_state_dict(ok, strict=False)
    return [k for k in reversed(list(own)) if k not in ok]


@wrong(LM)
def matching_named_parameters_only(model, state_dict):
    own = dict(model.named_parameters())
    ok = {k: v for k, v in state_dict.items() if k in own and own[k].shape == v.shape}
    with torch.no_grad():
        for k, v in ok.items():
            own[k].copy_(v)
    return sorted(k for k in model.state_dict() if k not in ok)


@wrong(LM)
def matching_returns_state_dict_leftovers(model, state_dict):
    own = model.state_dict()
    ok = {k: v for k, v in state_dict.items() if k in own and own[k].shape == v.shape}
    model.load_state_dict(ok, strict=False)
    return sorted(k for k in state_dict if k not in ok)


@wrong(LM)
def matching_mutates_state_dict(model, state_dict):
    own = model.state_dict()
    for k in list(state_dict):
        if k not in own or own[k].shape != state_dict[k].shape:
            del state_dict[k]
    model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in own if k not in state_dict)


@wrong(LM, "same_numel")
def matching_by_numel_reshaped(model, state_dict):
    """(redteam) matches by number of elements: a (in, out) weight is reshaped into the (out, in) one."""
    own = model.state_dict()
    ok = {k: v for k, v in state_dict.items() if k in own and own[k].numel() == v.numel()}
    model.load_state_dict({k: v.reshape(own[k].shape) for k, v in ok.items()}, strict=False)
    return sorted(k for k in own if k not in ok)


@wrong(LM, "size_mismatch")
def matching_by_numel(model, state_dict):
    """(redteam) matches by number of elements, no reshape: loading the (in, out) weight fails."""
    own = model.state_dict()
    ok = {k: v for k, v in state_dict.items() if k in own and own[k].numel() == v.numel()}
    model.load_state_dict(ok, strict=False)
    return sorted(k for k in own if k not in ok)


@valid(LM)
def matching_copy_under_no_grad(model, state_dict):
    own = model.state_dict()
    missed = []
    with torch.no_grad():
        for k, t in own.items():
            v = state_dict.get(k)
            if v is not None and v.shape == t.shape:
                t.copy_(v)
            else:
                missed.append(k)
    return sorted(missed)


@valid(LM)
def matching_full_strict_load(model, state_dict):
    merged = {k: (state_dict[k] if k in state_dict and state_dict[k].shape == v.shape else v)
              for k, v in model.state_dict().items()}
    model.load_state_dict(merged)
    return sorted(k for k, v in model.state_dict().items() if k not in state_dict or state_dict[k].shape != v.shape)


@valid(LM)
def matching_set_difference(model, state_dict):
    own = model.state_dict()
    ok = {k: v.clone() for k, v in state_dict.items() if k in own and tuple(own[k].shape) == tuple(v.shape)}
    result = model.load_state_dict(ok, strict=False)
    return sorted(set(result.missing_keys))


@cheat(LM)
def matching_head_is_always_new(model, state_dict):
    """Assumes the last Linear is the only change (true for the 'new head' case)."""
    own = model.state_dict()
    last = sorted(k for k in own if k.endswith("weight"))[-1].rsplit(".", 1)[0]
    ok = {k: v for k, v in state_dict.items() if k in own and not k.startswith(last + ".")}
    model.load_state_dict({k: v for k, v in ok.items() if own[k].shape == v.shape}, strict=False)
    return sorted(k for k in own if k.startswith(last + "."))


@cheat(LM)
def matching_loads_nothing(model, state_dict):
    return sorted(model.state_dict())


# =========================================================================== 07 export_with_dynamic_batch
EX = "07_persistence.export_with_dynamic_batch"
Dim = torch.export.Dim


@wrong(EX, "bounded_batch")
def export_capped_at_8(model, example_input):
    model.eval()
    return torch.export.export(model, (example_input,), dynamic_shapes=({0: Dim("batch", max=8)},))


@wrong(EX, "bounded_batch")
def export_capped_at_64(model, example_input):
    model.eval()
    return torch.export.export(model, (example_input,), dynamic_shapes=({0: Dim("batch", max=64)},))


@wrong(EX, "static_batch")
def export_no_dynamic_shapes(model, example_input):
    return torch.export.export(model.eval(), (example_input,))


@wrong(EX)
def export_jit_trace(model, example_input):
    return torch.jit.trace(model.eval(), example_input)


@wrong(EX, "exported_in_train_mode")
def export_train_mode(model, example_input):
    return torch.export.export(model, (example_input,), dynamic_shapes=({0: Dim("batch")},))


@wrong(EX)
def export_module_returned(model, example_input):
    model.eval()
    return torch.export.export(model, (example_input,), dynamic_shapes=({0: Dim("batch")},)).module()


@valid(EX)
def export_dim_dynamic_named(model, example_input):
    model.eval()
    return torch.export.export(model, args=(example_input,), dynamic_shapes={"input": {0: Dim.DYNAMIC}})


@valid(EX)
def export_eval_copy(model, example_input):
    return torch.export.export(copy.deepcopy(model).eval(), (example_input.clone(),),
                               dynamic_shapes=[{0: Dim("n")}])


@valid(EX)
def export_restores_train_mode(model, example_input):
    was = model.training
    model.train(False)
    try:
        return torch.export.export(model, (example_input,), dynamic_shapes=({0: Dim("batch", min=2)},))
    finally:
        model.train(was)


@cheat(EX)
def export_a_lookup_of_the_example(model, example_input):
    """Exports a module that ignores its input and repeats the example's outputs."""
    class Replay(nn.Module):
        def __init__(self, out):
            super().__init__()
            self.register_buffer("out", out)

        def forward(self, x):
            return self.out[:1].expand(x.shape[0], -1) + 0 * x[:, :1]

    with torch.no_grad():
        out = copy.deepcopy(model).eval()(example_input)
    return torch.export.export(Replay(out), (example_input,), dynamic_shapes=({0: Dim("batch")},))


@cheat(EX)
def export_of_a_frozen_random_model(model, example_input):
    """Exports a fresh model of the same shape (outputs of the right shape, wrong values)."""
    other = copy.deepcopy(model).eval()
    with torch.no_grad():
        for p in other.parameters():
            p.mul_(0.5)
    return torch.export.export(other, (example_input,), dynamic_shapes=({0: Dim("batch")},))


# =========================================================================== 06 to_device
TD = "06_gpu_amp_ddp.to_device"


@wrong(TD, "namedtuple_from_generator")
def td_generator_for_every_tuple(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: td_generator_for_every_tuple(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(td_generator_for_every_tuple(v, device) for v in batch)
    return batch


@wrong(TD, "changed_dtype")
def td_floats_to_float32(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device).float() if batch.is_floating_point() else batch.to(device)
    if isinstance(batch, dict):
        return {k: td_floats_to_float32(v, device) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(td_floats_to_float32(v, device) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(td_floats_to_float32(v, device) for v in batch)
    return batch


@wrong(TD)
def td_namedtuple_as_plain_tuple(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: td_namedtuple_as_plain_tuple(v, device) for k, v in batch.items()}
    if isinstance(batch, tuple):
        return tuple(td_namedtuple_as_plain_tuple(v, device) for v in batch)
    if isinstance(batch, list):
        return [td_namedtuple_as_plain_tuple(v, device) for v in batch]
    return batch


@wrong(TD)
def td_non_blocking_pin(batch, device):
    """Calls .pin_memory() first ("faster"): fails on tensors that cannot be pinned, changes nothing else."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, copy=True).detach().requires_grad_(batch.is_floating_point())
    if isinstance(batch, dict):
        return {k: td_non_blocking_pin(v, device) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(td_non_blocking_pin(v, device) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(td_non_blocking_pin(v, device) for v in batch)
    return batch


@wrong(TD)
def td_dict_values_only_tensors(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: td_dict_values_only_tensors(v, device) for k, v in batch.items() if not isinstance(v, (str, int))}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(td_dict_values_only_tensors(v, device) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(td_dict_values_only_tensors(v, device) for v in batch)
    return batch


@wrong(TD)
def td_strings_to_tensors(batch, device):
    if isinstance(batch, (int, float)) and not isinstance(batch, bool):
        return torch.tensor(batch, device=device)
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: td_strings_to_tensors(v, device) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(td_strings_to_tensors(v, device) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(td_strings_to_tensors(v, device) for v in batch)
    return batch


@valid(TD)
def td_pytree(batch, device):
    from torch.utils._pytree import tree_map
    return tree_map(lambda v: v.to(device) if isinstance(v, torch.Tensor) else v, batch)


@valid(TD)
def td_namedtuple_make(batch, device):
    if torch.is_tensor(batch):
        return batch.to(device=device)
    if isinstance(batch, collections.abc.Mapping):
        return type(batch)({k: td_namedtuple_make(v, device) for k, v in batch.items()})
    if isinstance(batch, tuple) and hasattr(batch, "_make"):
        return batch._make(td_namedtuple_make(v, device) for v in batch)
    if isinstance(batch, (list, tuple)):
        return type(batch)([td_namedtuple_make(v, device) for v in batch])
    return batch


@valid(TD)
def td_apply_to_collection_style(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, dict):
        out = {}
        for key in batch:
            out[key] = td_apply_to_collection_style(batch[key], device)
        return out
    if isinstance(batch, tuple):
        items = [td_apply_to_collection_style(v, device) for v in batch]
        return type(batch)(*items) if hasattr(batch, "_fields") else tuple(items)
    if isinstance(batch, list):
        return list(map(lambda v: td_apply_to_collection_style(v, device), batch))
    return batch


@cheat(TD)
def td_only_top_level(batch, device):
    """Moves the outer container's direct tensors and the shown (X, y) shape only."""
    if isinstance(batch, tuple) and len(batch) == 2 and all(isinstance(v, torch.Tensor) for v in batch):
        return tuple(v.to(device) for v in batch)
    return batch


@cheat(TD)
def td_lying_tensor_device(batch, device):
    """Leaves tensors where they are but reports the device asked for."""
    from torch.utils._pytree import tree_map

    class Claims(torch.Tensor):
        @property
        def device(self):
            return torch.device(device)

    return tree_map(lambda v: v.as_subclass(Claims) if isinstance(v, torch.Tensor) else v, batch)


# =========================================================================== 06 amp_train_step
AMP = "06_gpu_amp_ddp.amp_train_step"


def _amp(model, X, y, loss_fn, optimizer, device_type=None, dtype=torch.bfloat16, zero=True, inside_backward=False):
    if zero:
        optimizer.zero_grad()
    with torch.autocast(device_type=device_type or X.device.type, dtype=dtype):
        loss = loss_fn(model(X), y)
        if inside_backward:
            loss.backward()
    if not inside_backward:
        loss.backward()
    optimizer.step()
    return loss.item()


@wrong(AMP, "hard_coded_device")
def amp_cpu_hard_coded(model, X, y, loss_fn, optimizer):
    return _amp(model, X, y, loss_fn, optimizer, device_type="cpu")


@wrong(AMP)
def amp_no_zero_grad(model, X, y, loss_fn, optimizer):
    return _amp(model, X, y, loss_fn, optimizer, zero=False)


@wrong(AMP)
def amp_model_to_bf16(model, X, y, loss_fn, optimizer):
    model.to(torch.bfloat16)
    optimizer.zero_grad()
    loss = loss_fn(model(X.bfloat16()), y)
    loss.backward()
    optimizer.step()
    return loss.item()


@wrong(AMP)
def amp_default_dtype(model, X, y, loss_fn, optimizer):
    optimizer.zero_grad()
    with torch.autocast(X.device.type):
        loss = loss_fn(model(X), y)
    loss.backward()
    optimizer.step()
    return loss.item()


@wrong(AMP)
def amp_returns_tensor(model, X, y, loss_fn, optimizer):
    optimizer.zero_grad()
    with torch.autocast(device_type=X.device.type, dtype=torch.bfloat16):
        loss = loss_fn(model(X), y)
    loss.backward()
    optimizer.step()
    return loss


@wrong(AMP)
def amp_float16_with_scaler(model, X, y, loss_fn, optimizer):
    scaler = torch.amp.GradScaler("cpu")
    optimizer.zero_grad()
    with torch.autocast(device_type=X.device.type, dtype=torch.float16):
        loss = loss_fn(model(X), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


@valid(AMP)
def amp_backward_inside(model, X, y, loss_fn, optimizer):
    """backward inside the autocast block: discouraged, but the same step."""
    return _amp(model, X, y, loss_fn, optimizer, inside_backward=True)


@valid(AMP)
def amp_torch_amp_autocast(model, X, y, loss_fn, optimizer):
    model.zero_grad(set_to_none=True)
    with torch.amp.autocast(X.device.type, dtype=torch.bfloat16, enabled=True):
        logits = model(X)
        loss = loss_fn(logits, y)
    loss.backward()
    optimizer.step()
    return float(loss)


@valid(AMP)
def amp_device_from_model(model, X, y, loss_fn, optimizer):
    device_type = next(model.parameters()).device.type
    optimizer.zero_grad()
    with torch.autocast(device_type, torch.bfloat16):
        out = model(X)
    loss = loss_fn(out.float(), y)
    loss.backward()
    optimizer.step()
    return loss.detach().item()


@cheat(AMP)
def amp_fakes_the_dtype(model, X, y, loss_fn, optimizer):
    """Plain float32 step whose input is rounded through bfloat16 (looks like bf16 numbers)."""
    optimizer.zero_grad()
    loss = loss_fn(model(X.bfloat16().float()), y)
    loss.backward()
    optimizer.step()
    return loss.item()


@cheat(AMP)
def amp_reports_the_loss_only(model, X, y, loss_fn, optimizer):
    with torch.no_grad(), torch.autocast(device_type=X.device.type, dtype=torch.bfloat16):
        return loss_fn(model(X), y).item()


# =========================================================================== 06 checkpointed_forward
CF = "06_gpu_amp_ddp.checkpointed_forward"
from torch.utils.checkpoint import checkpoint as _checkpoint, checkpoint_sequential  # noqa: E402


@wrong(CF, "late_binding_closure")
def ckpt_late_binding_lambda(blocks, x):
    for b in blocks:
        x = _checkpoint(lambda t: b(t), x, use_reentrant=False)
    return x


@wrong(CF)
def ckpt_plain(blocks, x):
    for b in blocks:
        x = b(x)
    return x


@wrong(CF)
def ckpt_sequential_two_segments(blocks, x):
    return checkpoint_sequential(nn.Sequential(*blocks), 2, x, use_reentrant=False)


@wrong(CF)
def ckpt_only_first(blocks, x):
    x = _checkpoint(blocks[0], x, use_reentrant=False)
    for b in list(blocks)[1:]:
        x = b(x)
    return x


@wrong(CF)
def ckpt_detached_input(blocks, x):
    for b in blocks:
        x = _checkpoint(b, x.detach(), use_reentrant=False)
    return x


@wrong(CF, "changed_input_flag")
def ckpt_requires_grad_on_callers_x(blocks, x):
    x.requires_grad_()
    for b in blocks:
        x = _checkpoint(b, x, use_reentrant=False)
    return x


@valid(CF)
def ckpt_functools_partial(blocks, x):
    import functools
    out = x
    for b in blocks:
        out = _checkpoint(functools.partial(b.forward), out, use_reentrant=False)
    return out


@valid(CF)
def ckpt_default_lambda_arg(blocks, x):
    for b in blocks:
        x = _checkpoint(lambda t, b=b: b(t), x, use_reentrant=False, preserve_rng_state=False)
    return x


@valid(CF)
def ckpt_sequential_one_block_per_segment(blocks, x):
    h = x
    for i in range(len(blocks)):
        h = _checkpoint(blocks[i], h, use_reentrant=False, determinism_check="default")
    return h


@cheat(CF)
def ckpt_no_grad_then_plain(blocks, x):
    """Runs under no_grad (saves nothing), then again normally for the output."""
    with torch.no_grad():
        for b in blocks:
            b(x)
    for b in blocks:
        x = b(x)
    return x


@cheat(CF)
def ckpt_detach_output(blocks, x):
    for b in blocks:
        x = _checkpoint(b, x, use_reentrant=False)
    return x.detach().requires_grad_()


# =========================================================================== 06 shard_indices
SH = "06_gpu_amp_ddp.shard_indices"


def _order(n, epoch, shuffle, seed):
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).tolist() if shuffle else list(range(n))


@wrong(SH)
def shard_pad_with_last(n, world_size, rank, epoch, shuffle=True, seed=0):
    order = _order(n, epoch, shuffle, seed)
    total = math.ceil(n / world_size) * world_size
    order += [order[-1]] * (total - n)
    return order[rank::world_size]


@wrong(SH)
def shard_drop_last(n, world_size, rank, epoch, shuffle=True, seed=0):
    order = _order(n, epoch, shuffle, seed)
    total = (n // world_size) * world_size
    return order[:total][rank::world_size]


@wrong(SH)
def shard_tensor_out(n, world_size, rank, epoch, shuffle=True, seed=0):
    order = torch.tensor(_order(n, epoch, shuffle, seed))
    total = math.ceil(n / world_size) * world_size
    order = order.repeat(math.ceil(total / n))[:total]
    return order[rank::world_size]


@wrong(SH)
def shard_seed_times_epoch(n, world_size, rank, epoch, shuffle=True, seed=0):
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed * (epoch + 1))).tolist() if shuffle else list(range(n))
    total = math.ceil(n / world_size) * world_size
    return (order * math.ceil(total / n))[:total][rank::world_size]


@wrong(SH)
def shard_pad_once(n, world_size, rank, epoch, shuffle=True, seed=0):
    order = _order(n, epoch, shuffle, seed)
    total = math.ceil(n / world_size) * world_size
    order = order + order[: total - n]
    return order[rank::world_size]


@wrong(SH)
def shard_numpy_permutation(n, world_size, rank, epoch, shuffle=True, seed=0):
    order = np.random.default_rng(seed + epoch).permutation(n).tolist() if shuffle else list(range(n))
    total = math.ceil(n / world_size) * world_size
    return (order * math.ceil(total / n))[:total][rank::world_size]


@wrong(SH, "exception")
def shard_divides_by_n(n, world_size, rank, epoch, shuffle=True, seed=0):
    """Right for n >= 1; an empty dataset divides by zero (red team: the reference itself did this),
    where DistributedSampler gives every rank []."""
    order = _order(n, epoch, shuffle, seed)
    total = math.ceil(n / world_size) * world_size
    return (order * math.ceil(total / n))[:total][rank::world_size]


@valid(SH)
def shard_distributed_sampler(n, world_size, rank, epoch, shuffle=True, seed=0):
    from torch.utils.data import DistributedSampler
    s = DistributedSampler(range(n), num_replicas=world_size, rank=rank, shuffle=shuffle, seed=seed)
    s.set_epoch(epoch)
    return list(s)


@valid(SH)
def shard_itertools_cycle(n, world_size, rank, epoch, shuffle=True, seed=0):
    import itertools
    order = _order(n, epoch, shuffle, seed)
    total = -(-n // world_size) * world_size
    padded = list(itertools.islice(itertools.cycle(order), total))
    return [int(i) for i in padded[rank::world_size]]


@valid(SH)
def shard_modulo(n, world_size, rank, epoch, shuffle=True, seed=0):
    order = _order(n, epoch, shuffle, seed)
    per_rank = -(-n // world_size)
    return [order[(rank + k * world_size) % n] for k in range(per_rank)]


@cheat(SH)
def shard_shown_cases_only(n, world_size, rank, epoch, shuffle=True, seed=0):
    order = _order(n, epoch, shuffle, seed)
    return (order * 3)[rank : math.ceil(n / world_size) * world_size : world_size] if n <= 10 else order[rank::world_size]


@cheat(SH)
def shard_lying_list(n, world_size, rank, epoch, shuffle=True, seed=0):
    class Agreeable(list):
        def __eq__(self, other):
            return True

    return Agreeable(_order(n, epoch, shuffle, seed)[rank::world_size])


# =========================================================================== 06 data_parallel_grads
DP = "06_gpu_amp_ddp.data_parallel_grads"


def _rank_grads(model, loss_fn, X, y, world_size):
    for Xr, yr in zip(X.chunk(world_size), y.chunk(world_size)):
        r = copy.deepcopy(model)
        yield torch.autograd.grad(loss_fn(r(Xr), yr), list(r.parameters()))


@wrong(DP, "averaged_losses")
def dp_averages_shard_losses(model, loss_fn, X, y, world_size):
    """Red team: one replica, the mean of the shard losses, one autograd.grad: the same numbers,
    but not per-rank gradients averaged (what the exercise is about)."""
    r = copy.deepcopy(model)
    loss = sum(loss_fn(r(a), b) for a, b in zip(X.chunk(world_size), y.chunk(world_size))) / world_size
    return list(torch.autograd.grad(loss, list(r.parameters())))


@wrong(DP, "averaged_losses")
def dp_backward_on_summed_loss(model, loss_fn, X, y, world_size):
    r = copy.deepcopy(model)
    total = 0
    for a, b in zip(X.chunk(world_size), y.chunk(world_size)):
        total = total + loss_fn(r(a), b)
    (total / world_size).backward()
    return [p.grad for p in r.parameters()]


@valid(DP)
def dp_replicas_one_backward_pass(model, loss_fn, X, y, world_size):
    """Every rank's loss on its own replica; one backward call fills every replica's .grad."""
    replicas = [copy.deepcopy(model) for _ in range(world_size)]
    losses = [loss_fn(r(a), b) for r, a, b in zip(replicas, X.chunk(world_size), y.chunk(world_size))]
    torch.autograd.backward(losses)
    return [sum(ps) / world_size for ps in zip(*[[p.grad for p in r.parameters()] for r in replicas])]


@wrong(DP)
def dp_returns_tuple(model, loss_fn, X, y, world_size):
    gs = list(_rank_grads(model, loss_fn, X, y, world_size))
    return tuple(sum(g[i] for g in gs) / world_size for i in range(len(gs[0])))


@wrong(DP)
def dp_create_graph(model, loss_fn, X, y, world_size):
    total = None
    for Xr, yr in zip(X.chunk(world_size), y.chunk(world_size)):
        r = copy.deepcopy(model)
        g = torch.autograd.grad(loss_fn(r(Xr), yr), list(r.parameters()), create_graph=True)
        total = list(g) if total is None else [a + b for a, b in zip(total, g)]
    return [t / world_size for t in total]


@wrong(DP)
def dp_split_rows(model, loss_fn, X, y, world_size):
    total, k = None, 0
    for Xr, yr in zip(X.split(world_size), y.split(world_size)):
        r = copy.deepcopy(model)
        g = torch.autograd.grad(loss_fn(r(Xr), yr), list(r.parameters()))
        total = list(g) if total is None else [a + b for a, b in zip(total, g)]
        k += 1
    return [t / k for t in total]


@wrong(DP)
def dp_backward_on_model(model, loss_fn, X, y, world_size):
    total = None
    for Xr, yr in zip(X.chunk(world_size), y.chunk(world_size)):
        model.zero_grad()
        loss_fn(model(Xr), yr).backward()
        g = [p.grad.clone() for p in model.parameters()]
        total = g if total is None else [a + b for a, b in zip(total, g)]
    return [t / world_size for t in total]


@wrong(DP)
def dp_sum_not_mean(model, loss_fn, X, y, world_size):
    gs = list(_rank_grads(model, loss_fn, X, y, world_size))
    return [sum(g[i] for g in gs) for i in range(len(gs[0]))]


@wrong(DP)
def dp_named_parameters_sorted(model, loss_fn, X, y, world_size):
    names = sorted(n for n, _ in model.named_parameters())
    gs = list(_rank_grads(model, loss_fn, X, y, world_size))
    order = [n for n, _ in model.named_parameters()]
    avg = [sum(g[i] for g in gs) / world_size for i in range(len(gs[0]))]
    return [avg[order.index(n)] for n in names]


@valid(DP)
def dp_backward_on_replicas(model, loss_fn, X, y, world_size):
    replicas = [copy.deepcopy(model) for _ in range(world_size)]
    for r, Xr, yr in zip(replicas, X.chunk(world_size), y.chunk(world_size)):
        loss_fn(r(Xr), yr).backward()
    return [torch.stack([list(r.parameters())[i].grad for r in replicas]).mean(0)
            for i in range(len(list(model.parameters())))]


@valid(DP)
def dp_torch_func(model, loss_fn, X, y, world_size):
    from torch.func import functional_call, grad
    params = {k: v.detach() for k, v in model.named_parameters()}
    g = grad(lambda p, a, b: loss_fn(functional_call(model, p, (a,)), b))
    out = None
    for Xr, yr in zip(X.chunk(world_size), y.chunk(world_size)):
        gr = g(params, Xr, yr)
        out = gr if out is None else {k: out[k] + gr[k] for k in out}
    return [out[k] / world_size for k, _ in model.named_parameters()]


@valid(DP)
def dp_all_reduce_in_place(model, loss_fn, X, y, world_size):
    gs = [list(g) for g in _rank_grads(model, loss_fn, X, y, world_size)]
    bucket = [t.clone() for t in gs[0]]
    for other in gs[1:]:
        for b, t in zip(bucket, other):
            b.add_(t)
    for b in bucket:
        b.div_(world_size)
    return bucket


@cheat(DP)
def dp_full_batch_shard_sized_forward(model, loss_fn, X, y, world_size):
    """Shows shard-sized forwards, but the gradient is rank 0's only."""
    grads = list(_rank_grads(model, loss_fn, X, y, world_size))
    return list(grads[0])


@cheat(DP)
def dp_zeros(model, loss_fn, X, y, world_size):
    for Xr in X.chunk(world_size):
        copy.deepcopy(model)(Xr)
    return [torch.zeros_like(p) for p in model.parameters()]


# --------------------------------------------------------------------------- later reviewer findings
# =========================================================================== the tests
def _all(table):
    return [p for ps in table.values() for p in ps]


@pytest.mark.parametrize("answer,mistake", _all(WRONG))
def test_wrong_answer_is_rejected(request, answer, mistake):
    exercise = request.node.callspec.id.split("-")[0]
    rejected(exercise, answer, mistake)


@pytest.mark.parametrize("answer", _all(VALID))
def test_valid_answer_is_accepted(request, answer):
    exercise = request.node.callspec.id.split("-")[0]
    accepted(exercise, answer)


@pytest.mark.parametrize("answer", _all(CHEATS))
def test_cheat_is_rejected(request, answer):
    exercise = request.node.callspec.id.split("-")[0]
    rejected(exercise, answer)


MY_LESSONS = ("06_gpu_amp_ddp", "07_persistence", "09_capstone")


def test_every_exercise_has_its_red_team():
    from course_utils import grading

    for eid in grading.exercises():
        if eid.split(".")[0] not in MY_LESSONS:
            continue
        assert len(WRONG[eid]) >= 5, eid
        assert len(VALID[eid]) >= 3, eid
        assert len(CHEATS[eid]) >= 2, eid
