"""Exercises of 09_capstone: a confusion matrix, and the graded task, a digit classifier that
reaches at least 97 % accuracy on held-out images within a time budget.

How the classifier is graded (the learner passes the class ``DigitClassifier``):

1. A quick interface test: ``fit`` on 40 images, ``predict`` on 10; predictions must be an
   int64 tensor of shape (10,). This also reports a stub as "not attempted".
2. The real test, on a split drawn once from :data:`HELD_OUT_SEED` (the same at every check, so
   the check's seed cannot change the verdict): the 1797 digits are split at random into 1437
   training and 360 held-out images, and the class names are shuffled (every image of a 3
   becomes, say, a 7: a permutation with no fixed points), so only what ``fit`` learns from the
   ``(X, y)`` it is given can score. ``fit`` gets the training part and may use at most
   :data:`TIME_BUDGET_S` seconds of CPU time (it runs with one torch thread, so CPU time is
   also its wall time on an idle machine, and other programs do not count against it);
   ``predict`` gets the held-out images only. Forward pre-hooks on every module record train/eval mode and grad mode during
   ``predict``, and a forward hook on ``self.model`` records what it returns there (after any
   preprocessing ``predict`` does): ``predict`` must run ``self.model``, which must return
   logits of shape (N, 10), not probabilities, and the predictions must be the argmax of what it
   returned (a network run only for show, with the answer coming from elsewhere, fails).

Known wrong answers are named: never trained, softmax before ``CrossEntropyLoss``, ``predict``
without ``eval()`` or without ``inference_mode``/``no_grad`` (or leaving autograd off),
``predict`` that does not use the network (e.g. nearest neighbour on stored images), training
on the digits from scikit-learn instead of the given data, too slow, and too inaccurate.
"""

from __future__ import annotations

import copy
import functools
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from course_utils.datasets import load_digits
from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register
from course_utils.grading.calls import GRAD_LEFT_OFF

LESSON = "09_capstone"
TIME_BUDGET_S = 20.0
"""Seconds of CPU time ``fit`` may use on the 1437 training images, run with one torch thread
(the reference needs about one second)."""
TARGET_ACCURACY = 0.97
N_HELD_OUT = 360


# --------------------------------------------------------------------------- 1. confusion_matrix
def confusion_matrix(preds, targets, num_classes):
    """Counts: entry [t, p] is the number of items of true class t predicted as p."""
    cm = torch.zeros(num_classes, num_classes, dtype=torch.int64)
    cm.index_put_((targets, preds), torch.ones_like(targets), accumulate=True)
    return cm


def _cm_transposed(preds, targets, num_classes):
    return confusion_matrix(preds, targets, num_classes).T


def _cm_size_from_data(preds, targets, num_classes):
    k = int(max(preds.max(), targets.max())) + 1
    cm = torch.zeros(k, k, dtype=torch.int64)
    cm.index_put_((targets, preds), torch.ones_like(targets), accumulate=True)
    return cm


def _cm_no_accumulate(preds, targets, num_classes):
    cm = torch.zeros(num_classes, num_classes, dtype=torch.int64)
    cm[targets, preds] += 1
    return cm


def _cm_normalized(preds, targets, num_classes):
    cm = confusion_matrix(preds, targets, num_classes).double()
    return cm / cm.sum(dim=1, keepdim=True).clamp(min=1)


def _cm_cases(r: Rand) -> Case:
    k = r.integer(2, 10)
    n = r.integer(5, 60)
    targets = r.randint(0, k, (n,))
    preds = torch.where(r.rand(n) < 0.6, targets, r.randint(0, k, (n,)))
    return Case((preds, targets, k + r.integer(0, 1)))


register(Exercise(
    lesson=LESSON, name="confusion_matrix", title="A confusion matrix",
    reference=confusion_matrix, cases=_cm_cases,
    edge_cases=[
        Case((torch.tensor([0, 1, 1, 2]), torch.tensor([0, 1, 2, 2]), 3), label="preds [0,1,1,2], targets [0,1,2,2]",
             show_inputs=True),
        Case((torch.tensor([1, 1, 1]), torch.tensor([1, 1, 0]), 4), label="class 3 never appears"),
        Case((torch.zeros(0, dtype=torch.int64), torch.zeros(0, dtype=torch.int64), 3), label="no items (N = 0)"),
        Case((torch.tensor([2, 0, 2, 2, 0]), torch.tensor([2, 2, 2, 0, 0]), 3),
             label="repeated (target, pred) pairs: (2, 2) twice, (0, 0) once"),
    ],
    mistakes=[
        Mistake("transposed", "Rows are the *true* classes and columns the *predicted* ones: count "
                "`cm[target, pred]`, not `cm[pred, target]`.", _cm_transposed),
        Mistake("size_from_data", "Make the matrix `num_classes × num_classes`, even when some classes do not "
                "occur in this batch of predictions.", _cm_size_from_data),
        Mistake("no_accumulate", "`cm[targets, preds] += 1` with repeated index pairs adds 1 only once per "
                "pair: indexed assignment does not accumulate. Use `index_put_(..., accumulate=True)`, "
                "`torch.bincount`, or a loop.", _cm_no_accumulate),
        Mistake("normalized", "Return the raw counts (int64); normalise later, when plotting.", _cm_normalized),
    ],
    hints=[
        "Start from `torch.zeros(num_classes, num_classes, dtype=torch.int64)` and add 1 at `[t, p]` for "
        "every pair.",
        "A loop `for t, p in zip(targets.tolist(), preds.tolist()): cm[t, p] += 1` is fine; vectorised: "
        "`cm.index_put_((targets, preds), torch.ones_like(targets), accumulate=True)`.",
        "Or: `torch.bincount(targets * num_classes + preds, minlength=num_classes**2).reshape(num_classes, num_classes)`.",
    ],
))


# --------------------------------------------------------------------------- 2. DigitClassifier
class DigitClassifier:
    """fit(X, y) trains a small CNN; predict(X) returns int64 class predictions."""

    def __init__(self):
        self.model = None

    def fit(self, X, y):
        torch.manual_seed(0)
        self.model = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10),
        )
        loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True,
                            generator=torch.Generator().manual_seed(0))
        num_epochs = 10
        optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-2)
        scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2,
                                                        total_steps=num_epochs * len(loader))
        loss_fn = nn.CrossEntropyLoss()
        self.model.train()
        for _ in range(num_epochs):
            for xb, yb in loader:
                optimizer.zero_grad()
                loss_fn(self.model(xb), yb).backward()
                optimizer.step()
                scheduler.step()
        return self

    def predict(self, X):
        self.model.eval()
        with torch.inference_mode():
            return self.model(X).argmax(dim=1)


def _cnn(final: nn.Module | None = None) -> nn.Module:
    layers = [nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 16, 10)]
    return nn.Sequential(*layers, *([final] if final is not None else []))


def _quick_train(model: nn.Module, X, y, num_epochs: int, lr: float = 1e-2) -> nn.Module:
    torch.manual_seed(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(0)
    model.train()
    for _ in range(num_epochs):
        perm = torch.randperm(len(y), generator=g)
        for i in range(0, len(y), 64):
            idx = perm[i : i + 64]
            optimizer.zero_grad()
            loss_fn(model(X[idx]), y[idx]).backward()
            optimizer.step()
    return model


class _NeverTrained(DigitClassifier):
    def fit(self, X, y):
        torch.manual_seed(0)
        self.model = _cnn()
        return self


class _SoftmaxOutput(DigitClassifier):
    def fit(self, X, y):
        torch.manual_seed(0)
        self.model = _quick_train(_cnn(nn.Softmax(dim=1)), X, y, num_epochs=3)
        return self


class _ForgotEval(DigitClassifier):
    def fit(self, X, y):
        torch.manual_seed(0)
        self.model = _quick_train(_cnn(), X, y, num_epochs=2)
        return self

    def predict(self, X):
        with torch.inference_mode():
            return self.model(X).argmax(dim=1)


class _ForgotNoGrad(DigitClassifier):
    def fit(self, X, y):
        torch.manual_seed(0)
        self.model = _quick_train(_cnn(), X, y, num_epochs=2)
        return self

    def predict(self, X):
        self.model.eval()
        return self.model(X).argmax(dim=1)


class _IgnoresGivenData(DigitClassifier):
    def fit(self, X, y):
        torch.manual_seed(0)
        X_all, y_all = load_digits(images=True)  # the learner's own copy of the digits
        self.model = _quick_train(_cnn(), X_all, y_all, num_epochs=3)
        return self


class _NearestNeighbour(DigitClassifier):
    """Memorises the training images and predicts the label of the closest one: a decent
    classifier, but not the trained network the task asks for."""

    def fit(self, X, y):
        self.model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))  # there, but never used
        self.X, self.y = X.flatten(1), y
        return self

    def predict(self, X):
        return self.y[torch.cdist(X.flatten(1), self.X).argmin(dim=1)]


class _BelowBar(DigitClassifier):
    def fit(self, X, y):
        torch.manual_seed(0)
        self.model = _quick_train(nn.Sequential(nn.Flatten(), nn.Linear(64, 10)), X, y, num_epochs=1, lr=3e-3)
        return self


@functools.lru_cache(maxsize=1)
def _digits() -> tuple[torch.Tensor, torch.Tensor]:
    return load_digits(images=True)


def _new_classifier(answer):
    if isinstance(answer, type):
        clf = answer()
    elif callable(getattr(answer, "fit", None)) and not callable(answer):
        raise Incorrect("wrong_type", "You passed an instance; pass the class itself (`DigitClassifier`).")
    elif callable(answer):
        clf = answer()
    else:
        raise Incorrect("wrong_type", f"You passed a {type(answer).__name__}; pass your class `DigitClassifier`.")
    if not (callable(getattr(clf, "fit", None)) and callable(getattr(clf, "predict", None))):
        raise Incorrect("no_fit_predict", "Your class needs two methods, `fit(X, y)` and `predict(X)`.")
    return clf


def _check_predictions(preds, n: int) -> torch.Tensor:
    if preds is None:
        raise Incorrect("returned_none", "`predict` returned None: return the tensor of predicted classes.")
    if isinstance(preds, torch.Tensor) and type(preds) is not torch.Tensor:
        raise Incorrect("predictions_type", f"`predict` should return a plain tensor, not a {type(preds).__name__} "
                        "(a subclass of it).")
    if not isinstance(preds, torch.Tensor):
        raise Incorrect("predictions_type", f"`predict` should return a tensor, not {type(preds).__name__}.")
    if preds.shape != (n,):
        extra = " Take `argmax(dim=1)` of the logits." if preds.dim() == 2 and preds.shape == (n, 10) else ""
        raise Incorrect("predictions_shape", f"For {n} images `predict` should return shape ({n},), not "
                        f"{tuple(preds.shape)}.{extra}")
    if preds.is_floating_point() or preds.dtype == torch.bool:
        raise Incorrect("predictions_dtype", "Predictions are class indices: an int64 tensor (`argmax` gives one).")
    return preds.detach().cpu().long()  # (predictions made on a GPU are fine)


def _interface_run(answer, case: Case):
    # The reference runs this too, as the untimed warm-up before a lesson's first check: it loads
    # the digits and pays the first fit's one-time costs (lazy imports) outside any check's clock.
    X, y = _digits()
    n_train, n_query = case.kwargs["n_train"], case.kwargs["n_query"]
    clf = _new_classifier(answer)
    with torch.enable_grad():
        clf.fit(X[:n_train].clone(), y[:n_train].clone())
    _check_predictions(clf.predict(X[n_train : n_train + n_query].clone()), n_query)
    return True


def _derangement(n: int, r: Rand) -> torch.Tensor:
    while True:
        perm = torch.randperm(n, generator=r.torch)
        if not bool((perm == torch.arange(n)).any()):
            return perm


HELD_OUT_SEED = 2024
"""The held-out split and the class renaming come from this fixed seed, not from the check's
seed: a verdict must not depend on the seed (retrying seeds must not turn a 96.5 % classifier
into a pass), and a deterministic ``fit`` gets the same verdict every time."""


def _heldout_probe(answer, r: Rand) -> None:
    r = Rand(HELD_OUT_SEED)
    X, y_true = _digits()
    order = torch.randperm(len(y_true), generator=r.torch)
    held, train = order[:N_HELD_OUT], order[N_HELD_OUT:]
    rename = _derangement(10, r)
    y = rename[y_true]
    clf = _new_classifier(answer)
    first_seen: dict[int, torch.Tensor] = {}  # each parameter's value when its module first ran in fit

    def snapshot(module, args):
        for p in module.parameters(recurse=False):
            if id(p) not in first_seen:
                first_seen[id(p)] = p.detach().clone()

    watch = nn.modules.module.register_module_forward_pre_hook(snapshot)
    start = time.process_time()
    try:
        with torch.enable_grad():
            clf.fit(X[train].clone(), y[train].clone())
    finally:
        watch.remove()
    seconds = time.process_time() - start
    if seconds > TIME_BUDGET_S:
        raise Incorrect("too_slow", f"`fit` used {seconds:.1f} s of CPU time; the budget is {TIME_BUDGET_S:g} s. "
                        "Train for fewer epochs, use a smaller model or larger batches.")
    model = getattr(clf, "model", None)
    if not isinstance(model, nn.Module):
        raise Incorrect("no_model", "Keep the trained network in `self.model` (an `nn.Module`).")
    params = [p for p in model.parameters() if p.requires_grad]
    preds = _check_predict(clf, model, X, held)
    if not params:
        raise Incorrect("not_a_network", "`self.model` has no trainable parameters: the task is to \"train a new "
                        "network from scratch\" in `fit` (layers such as `nn.Conv2d`/`nn.Linear` whose weights "
                        "the training loop changes), not a lookup of the stored training images.")
    if not any(id(p) in first_seen and not torch.equal(first_seen[id(p)], p.detach()) for p in params):
        raise Incorrect("not_trained", "The parameters of `self.model` did not change during `fit`: the task is "
                        "to \"train a new network from scratch\". Run the training loop (forward, loss, "
                        "`backward()`, `optimizer.step()`) on `self.model` itself, not on a copy.")
    _check_deterministic_network(clf, model, X, held, preds)
    _judge_accuracy(preds, y, y_true, held, seconds)


def _predict_capturing(clf, model, X, held, seed: int):
    """`predict` once more, from a different global RNG state (restored after), recording what
    `self.model` is called with and returns."""
    calls: list = []
    handle = model.register_forward_hook(lambda m, args, out: calls.append((args, out)))
    state = torch.get_rng_state()
    torch.manual_seed(seed)
    try:
        with torch.enable_grad():
            preds = clf.predict(X[held].clone())
    finally:
        handle.remove()
        torch.set_rng_state(state)
    return _check_predictions(preds, len(held)), calls


def _logits(calls) -> torch.Tensor | None:
    outs = [o for _, o in calls]
    if outs and all(isinstance(o, torch.Tensor) and o.dim() == 2 for o in outs):
        return torch.cat([o.detach().float().cpu() for o in outs])
    return None


def _check_deterministic_network(clf, model, X, held, preds) -> None:
    """`predict` must be a function of the images (no dropout left on), and its answers must come
    from the trained parameters (not, say, a lookup of stored training images plus
    `0 * self.layer(x)`). Cheap: two more predictions and two forward passes."""
    preds_a, calls_a = _predict_capturing(clf, model, X, held, seed=12345)
    preds_b, calls_b = _predict_capturing(clf, model, X, held, seed=54321)
    logits_a, logits_b = _logits(calls_a), _logits(calls_b)
    same_logits = (logits_a is None or logits_b is None or (
        logits_a.shape == logits_b.shape and torch.allclose(logits_a, logits_b, rtol=1e-4, atol=1e-5)))
    if not (torch.equal(preds, preds_a) and torch.equal(preds_a, preds_b) and same_logits):
        raise Incorrect("random_predictions", "`predict` gave different answers for the same images on two calls: "
                        "something random is still switched on at prediction time. Functional `F.dropout(x, p)` "
                        "drops units whenever it runs, because its `training` argument defaults to True and "
                        "`model.eval()` cannot reach it: use an `nn.Dropout` layer, or write "
                        "`F.dropout(x, p, training=self.training)`.")
    inputs = [args for args, _ in calls_a]
    if not inputs:  # predict called self.model.forward(...) directly: probe it on the images
        inputs = [(X[held].clone(),)]
    # the trainable ones: frozen parameters could hold stored training images
    params = [p for p in model.parameters() if p.requires_grad and p.is_floating_point()]
    saved = [p.detach().clone() for p in params]
    modes = [(m, m.training) for m in model.modules()]
    gen = torch.Generator().manual_seed(HELD_OUT_SEED)
    model.eval()
    try:
        with torch.no_grad():
            before = [model(*args) for args in inputs]
            for p in params:  # new random weights of a similar size
                scale = float(p.abs().mean()) if p.numel() else 0.0
                p.copy_(torch.randn(p.shape, generator=gen).to(p.dtype) * max(scale, 0.05) * 2)
            after = [model(*args) for args in inputs]
    except Exception:  # noqa: BLE001 - a model that cannot be probed this way: the other checks judge it
        return
    finally:
        with torch.no_grad():
            for p, v in zip(params, saved):
                p.copy_(v)
        for m, training in modes:
            m.training = training
    before_l, after_l = _logits([(None, o) for o in before]), _logits([(None, o) for o in after])
    if before_l is None or after_l is None or before_l.shape != after_l.shape or before_l.shape[1] < 2:
        return
    changed = float((before_l.argmax(dim=1) != after_l.argmax(dim=1)).double().mean())
    if changed < 0.25:
        raise Incorrect("not_a_network", "The predictions of `self.model` do not depend on its trained parameters: "
                        f"with all of them replaced by random values, {1 - changed:.0%} of the predictions stay the "
                        "same, so something other than the network's layers (stored training images, a lookup) "
                        "decides them. The task is to \"train a new network from scratch\" whose layers compute "
                        "the logits.")


def _check_predict(clf, model, X, held) -> torch.Tensor:
    """Everything about `predict`: modes, grad, that it uses self.model and its logits."""
    records: list[tuple[bool, bool, bool]] = []
    own = {id(m) for m in model.modules()}
    outputs: list = []  # what self.model returns during predict (after any preprocessing in predict)
    handles = [
        nn.modules.module.register_module_forward_pre_hook(
            lambda m, args: records.append((m.training, torch.is_grad_enabled(), id(m) in own))),
        model.register_forward_hook(lambda m, args, out: outputs.append(out)),
    ]
    try:
        with torch.enable_grad():
            preds = clf.predict(X[held].clone())
            grad_left_on = torch.is_grad_enabled()  # (leaving the `with` restores it)
    finally:
        for handle in handles:
            handle.remove()
    preds = _check_predictions(preds, len(held))
    rows = [o for o in outputs if isinstance(o, torch.Tensor) and o.dim() == 2 and o.shape[1] == 10]
    if rows and sum(len(o) for o in rows) == len(held):  # one plain pass over the images: preds = its argmax
        logits = torch.cat([o.detach().float().cpu() for o in rows])
        top = logits.max(dim=1).values
        own_pick = logits.gather(1, preds.clamp(0, 9).view(-1, 1)).squeeze(1)
        if bool(((preds < 0) | (preds > 9)).any()) or bool((own_pick < top).any()):
            raise Incorrect("predict_not_from_model", "`predict` ran `self.model`, but its predictions are not "
                            "the network's: the task says `predict` returns the predicted classes of the network "
                            "kept in `self.model` (`self.model(X).argmax(dim=1)`), not the output of another method.")
    if any(training for training, _, _ in records):
        raise Incorrect("forgot_eval", "`predict` ran the network in training mode: call `self.model.eval()` "
                        "first (Dropout and BatchNorm behave differently when training).")
    if any(grad for _, grad, _ in records):
        raise Incorrect("forgot_no_grad", "`predict` recorded an autograd graph: wrap it in "
                        "`with torch.inference_mode():` (or `torch.no_grad()`).")
    if not grad_left_on:
        raise Incorrect("grad_left_off", GRAD_LEFT_OFF)
    if not any(mine for _, _, mine in records):
        raise Incorrect("predict_without_model", "`predict` never ran `self.model`: the predictions must come "
                        "from the network that `fit` trained (its logits' `argmax(dim=1)`), not from another "
                        "method such as comparing with the stored training images.")
    if outputs:  # self.model(...) was called: look at what it returned
        if not all(isinstance(o, torch.Tensor) and o.dim() == 2 and o.shape[1] == 10 and o.is_floating_point()
                   for o in outputs):
            got = next(o for o in outputs if not (isinstance(o, torch.Tensor) and o.dim() == 2
                                                  and o.shape[1] == 10 and o.is_floating_point()))
            shown = f"shape {tuple(got.shape)}, {got.dtype}" if isinstance(got, torch.Tensor) else type(got).__name__
            raise Incorrect("model_output", "`self.model` must return logits, a float tensor of shape (N, 10) "
                            f"(one score per class); it returned {shown}.")
        out = torch.cat([o.detach().float().cpu() for o in outputs])[:64]
    else:  # predict called self.model.forward(...) directly: run it on the images ourselves
        probe_model = copy.deepcopy(model).eval()
        try:
            with torch.no_grad():
                out = probe_model(X[held][:64].clone())
        except Exception:  # noqa: BLE001 - a model that needs predict's preprocessing: nothing to probe
            out = None
    if (isinstance(out, torch.Tensor) and out.dim() == 2 and out.is_floating_point() and bool((out >= 0).all())
            and torch.allclose(out.sum(dim=1), torch.ones(len(out)), atol=1e-4)):
        raise Incorrect("softmax_output", "Your network outputs probabilities (every row sums to 1), but "
                        "`CrossEntropyLoss` expects logits and applies log-softmax itself; softmax before it "
                        "squashes the gradients. Remove the final `Softmax` (use it only to display probabilities).")
    return preds


def _judge_accuracy(preds, y, y_true, held, seconds) -> None:
    accuracy = float((preds == y[held]).double().mean())
    if accuracy >= TARGET_ACCURACY:
        return
    if float((preds == y_true[held]).double().mean()) > 0.5:
        raise Incorrect("ignored_given_data", "Your predictions match the digits' original labels, not the "
                        "labels `fit` was given (the check renames the classes): train only on the `X, y` "
                        "passed to `fit`.")
    if accuracy < 0.3:
        raise Incorrect("not_trained", f"Held-out accuracy {accuracy:.1%} is close to chance (10 %): was the "
                        "network trained? Check that `fit` runs the training loop on `self.model` (not on a "
                        "copy) and that `predict` uses that same model.")
    raise Incorrect("below_bar", f"Held-out accuracy {accuracy:.1%} is below {TARGET_ACCURACY:.0%} (fit took "
                    f"{seconds:.1f} s of the {TIME_BUDGET_S:g} s CPU budget). Try a small CNN, Adam, more epochs, "
                    "a learning-rate schedule.")


register(Exercise(
    lesson=LESSON, name="DigitClassifier",
    title=f"A digit classifier with ≥ {TARGET_ACCURACY:.0%} held-out accuracy within {TIME_BUDGET_S:g} s of CPU time",
    reference=DigitClassifier, kind="any", run=_interface_run,
    edge_cases=[Case(kwargs=dict(n_train=40, n_query=10), label="fit on 40 images, then predict 10")],
    probes=[_heldout_probe],
    # "train a new network from scratch": building layers initialises their weights from torch's
    # global RNG (and a seeded fit calls torch.manual_seed), so a right answer draws from it
    uses_global_rng=True,
    # wall-clock limit for the whole check (two fits and the predictions): generous, because the budget
    # is CPU time and a busy shared machine stretches wall time several-fold
    timeout=4 * TIME_BUDGET_S + 40,
    mistakes=[
        Mistake("not_trained", "The held-out accuracy is at chance level: the network was never trained.",
                _NeverTrained, match_output=False),
        Mistake("softmax_output", "The network ends in a softmax: `CrossEntropyLoss` needs logits.",
                _SoftmaxOutput, match_output=False),
        Mistake("forgot_eval", "`predict` must call `self.model.eval()` first.", _ForgotEval, match_output=False),
        Mistake("forgot_no_grad", "`predict` must run under `torch.inference_mode()` or `torch.no_grad()`.",
                _ForgotNoGrad, match_output=False),
        Mistake("ignored_given_data", "Train on the `X, y` given to `fit`, not on your own copy of the digits.",
                _IgnoresGivenData, match_output=False),
        Mistake("below_bar", "The held-out accuracy is below the bar: train a better model.", _BelowBar,
                match_output=False),
        Mistake("predict_without_model", "`predict` must use the trained `self.model`.", _NearestNeighbour,
                match_output=False),
        Mistake("timeout", f"Checking stopped after {4 * TIME_BUDGET_S + 40:g} s of wall-clock time: `fit` (or "
                "`predict`) runs far longer than the CPU budget allows, or never ends. Train for a fixed number of "
                "epochs.",
                match_output=False),
    ],
    hints=[
        "Start from the baseline's loop, but build a CNN in `fit`: `Conv2d(1, 16, 3, padding=1)`, ReLU, "
        "`Conv2d(16, 32, 3, padding=1)`, ReLU, `MaxPool2d(2)`, `Flatten()`, `Linear(32 * 4 * 4, 64)`, ReLU, "
        "`Linear(64, 10)`.",
        "Adam with lr 1e-2 and a `OneCycleLR` schedule (stepped after every batch) for about 10 epochs of batch "
        "size 64 gets close to 99 %; `BatchNorm2d` after each convolution makes it steadier.",
        "`predict`: `self.model.eval()`, then `with torch.inference_mode(): return self.model(X).argmax(dim=1)`.",
    ],
))
