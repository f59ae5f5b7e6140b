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
import copy

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


MY_LESSONS = ("09_capstone",)


def test_every_exercise_has_its_red_team():
    from course_utils import grading

    for eid in grading.exercises():
        if eid.split(".")[0] not in MY_LESSONS:
            continue
        assert len(WRONG[eid]) >= 5, eid
        assert len(VALID[eid]) >= 3, eid
        assert len(CHEATS[eid]) >= 2, eid
