"""Capstone (08): the held-out grading is honest.

- ``fit`` never sees the held-out images, and never sees the true class names;
- the time budget and the check's wall-clock limit are enforced with their own messages;
- ``predict`` is watched for ``eval()``/no-grad with hooks that are removed afterwards;
- checking leaves thread count and global hooks as they were.
"""

from __future__ import annotations

import dataclasses
import time

import pytest
import torch
from torch import nn

from course_utils import grading
from course_utils.exercises import l09_capstone as cap
from course_utils.grading.runner import run_check

EXERCISE = "09_capstone.DigitClassifier"


def _rows(X: torch.Tensor) -> list[bytes]:
    return sorted(x.numpy().tobytes() for x in X)


class Spy(cap.DigitClassifier):
    """The reference, recording what the grader hands it."""

    seen: list = []

    def fit(self, X, y):
        Spy.seen.append(("fit", X.clone(), y.clone()))
        return super().fit(X, y)

    def predict(self, X):
        Spy.seen.append(("predict", X.clone(), None))
        return super().predict(X)


def test_fit_never_sees_held_out_images_and_labels_are_renamed():
    Spy.seen = []
    res = grading.check(EXERCISE, Spy, seed=21)
    assert res.passed, res.text()
    last_fit = max(i for i, (kind, _, _) in enumerate(Spy.seen) if kind == "fit")  # the held-out probe
    (_, X_fit, y_fit), (_, X_pred, _) = Spy.seen[last_fit : last_fit + 2]  # fit, then predict
    # (the probe predicts the same held-out images again: predictions must not be random)
    assert all(kind == "predict" and torch.equal(X, X_pred) for kind, X, _ in Spy.seen[last_fit + 1 :])
    assert len(X_fit) == 1797 - cap.N_HELD_OUT and len(X_pred) == cap.N_HELD_OUT
    X_all, y_all = cap._digits()
    # together they are exactly the dataset, so the two parts are disjoint
    assert _rows(torch.cat([X_fit, X_pred])) == _rows(X_all)
    # every training image arrives under another class name than its true one
    true_label = {x.numpy().tobytes(): int(t) for x, t in zip(X_all, y_all)}
    renamed = [int(t) != true_label[x.numpy().tobytes()] for x, t in zip(X_fit, y_fit)]
    assert sum(renamed) / len(renamed) > 0.99  # (a few digits images are exact duplicates)


def test_derangement_has_no_fixed_points():
    for seed in range(200):
        perm = cap._derangement(10, grading.Rand(seed))
        assert sorted(perm.tolist()) == list(range(10))
        assert not bool((perm == torch.arange(10)).any())


def test_time_budget_is_enforced(monkeypatch):
    monkeypatch.setattr(cap, "TIME_BUDGET_S", 0.01)
    res = grading.check(EXERCISE, cap.DigitClassifier, seed=5)
    assert not res.passed and res.mistake == "too_slow" and "CPU time" in res.message


def test_a_fit_that_never_ends_gets_the_capstone_message():
    class Forever(cap.DigitClassifier):
        def fit(self, X, y):
            while True:
                pass

    ex = dataclasses.replace(grading.exercise(EXERCISE), timeout=0.5)
    res = run_check(ex, Forever, seed=1)
    assert res.mistake == "timeout" and "budget" in res.message


def test_prediction_problems_are_explained():
    class Probabilities(cap.DigitClassifier):
        def predict(self, X):
            with torch.inference_mode():
                return self.model.eval()(X).softmax(dim=1)

    class Lists(cap.DigitClassifier):
        def predict(self, X):
            return super().predict(X).tolist()

    assert grading.check(EXERCISE, Probabilities, seed=2).mistake == "predictions_shape"
    assert grading.check(EXERCISE, Lists, seed=2).mistake == "predictions_type"
    res = grading.check(EXERCISE, cap.DigitClassifier(), seed=2)
    assert res.mistake == "wrong_type" and "instance" in res.message


def test_check_leaves_threads_and_global_hooks_alone():
    before = torch.get_num_threads()
    hooks_before = len(nn.modules.module._global_forward_pre_hooks)
    bad = grading.exercise(EXERCISE).mistake("forgot_eval").example
    res = grading.check(EXERCISE, bad, seed=3)
    assert res.mistake == "forgot_eval"
    assert torch.get_num_threads() == before
    assert len(nn.modules.module._global_forward_pre_hooks) == hooks_before


def test_reference_fit_is_within_budget_with_room_to_spare():
    X, y = cap._digits()
    start = time.process_time()
    cap.DigitClassifier().fit(X[: 1797 - cap.N_HELD_OUT], y[: 1797 - cap.N_HELD_OUT])
    assert time.process_time() - start < cap.TIME_BUDGET_S / 4


@pytest.mark.parametrize("seed", [101, 202])
def test_reference_clears_the_bar_on_more_splits(seed):
    res = grading.check(EXERCISE, cap.DigitClassifier, seed=seed)
    assert res.passed, res.text()


class _FunctionalDropout(nn.Module):
    def __init__(self, p: float, follow_mode: bool):
        super().__init__()
        self.p, self.follow_mode = p, follow_mode

    def forward(self, x):
        if self.follow_mode:
            return torch.nn.functional.dropout(x, self.p, training=self.training)
        return torch.nn.functional.dropout(x, self.p)  # always on: eval() cannot reach it


def _with_dropout(follow_mode: bool):
    class WithDropout(cap.DigitClassifier):
        def fit(self, X, y):
            super().fit(X, y)
            *body, last = self.model
            self.model = nn.Sequential(*body, _FunctionalDropout(0.3, follow_mode), last)
            return self

        def predict(self, X):  # in batches through a DataLoader (which draws a seed from the global RNG)
            self.model.eval()
            loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X), batch_size=100)
            with torch.no_grad():
                return torch.cat([self.model(xb).argmax(dim=1) for (xb,) in loader])
    return WithDropout


def test_functional_dropout_left_on_in_predict_is_rejected():
    res = grading.check(EXERCISE, _with_dropout(follow_mode=False), seed=1)
    assert res.mistake == "random_predictions", res.text()
    assert "training=self.training" in res.message


def test_dropout_that_follows_eval_and_a_dataloader_predict_pass():
    res = grading.check(EXERCISE, _with_dropout(follow_mode=True), seed=1)
    assert res.passed, res.text()


class _LookupNet(nn.Module):
    """Nearest-neighbour labels from stored training images, plus a Linear that adds nothing."""

    def __init__(self, X, y):
        super().__init__()
        self.register_buffer("X", X.flatten(1).clone())
        self.register_buffer("y", y.clone())
        self.lin = nn.Linear(64, 10)

    def forward(self, x):
        labels = self.y[torch.cdist(x.flatten(1), self.X).argmin(dim=1)]
        return torch.nn.functional.one_hot(labels, 10).float() * 10 + 0 * self.lin(x.flatten(1))


class _LookupCheat:
    def __init__(self):
        self.model = None

    def fit(self, X, y):
        self.model = _LookupNet(X, y)
        opt = torch.optim.SGD(self.model.lin.parameters(), lr=0.1)
        torch.nn.functional.cross_entropy(self.model.lin(X.flatten(1)), y).backward()
        opt.step()  # one token step, so the parameters "changed during fit"
        return self

    def predict(self, X):
        self.model.eval()
        with torch.inference_mode():
            return self.model(X).argmax(1)


def test_a_lookup_dressed_as_a_network_is_rejected():
    res = grading.check(EXERCISE, _LookupCheat, seed=1)
    assert res.mistake == "not_a_network", res.text()
