"""Adversarial review of the graders of lesson 08 (capstone); lessons 04 and 05 moved to their own files.

Each test either feeds the grader an answer that violates the exercise text and asserts it is
rejected (naming the mistake where a name fits), or feeds it a correct answer written
differently from the reference and asserts it is accepted. The capstone tests train real
classifiers, so they use one seed each.
"""

from __future__ import annotations


import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from course_utils.exercises import l09_capstone as cap

from grading_asserts import accepted, check, rejected  # noqa: E402,F401 (tests/ is on sys.path)


# =========================================================================== 08 capstone
C = "09_capstone."


def test_confusion_matrix_alternatives_pass():
    def by_bincount(preds, targets, num_classes):
        return torch.bincount(targets * num_classes + preds, minlength=num_classes**2).reshape(num_classes, num_classes)

    def by_loop(preds, targets, num_classes):
        cm = torch.zeros(num_classes, num_classes, dtype=torch.int64)
        for t, p in zip(targets.tolist(), preds.tolist()):
            cm[t, p] += 1
        return cm

    accepted(C + "confusion_matrix", by_bincount, n_random=20)
    accepted(C + "confusion_matrix", by_loop, n_random=20)


def test_confusion_matrix_bincount_without_minlength_is_rejected():
    def no_minlength(preds, targets, num_classes):
        return torch.bincount(targets * num_classes + preds).reshape(num_classes, num_classes)

    def float_counts(preds, targets, num_classes):
        cm = torch.zeros(num_classes, num_classes)
        cm.index_put_((targets, preds), torch.ones(len(targets)), accumulate=True)
        return cm

    rejected(C + "confusion_matrix", no_minlength, n_random=0)
    rejected(C + "confusion_matrix", float_counts, "wrong_dtype", n_random=0)


def _train(model, X, y, num_epochs=10):
    torch.manual_seed(0)
    loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(0))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, total_steps=num_epochs * len(loader))
    model.train()
    for _ in range(num_epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            optimizer.step()
            scheduler.step()
    return model


def test_classifier_that_predicts_without_its_network_is_rejected():
    """Nearest neighbour on the stored training images scores about 98 % but is not the task."""

    class NearestNeighbour:
        def __init__(self):
            self.model = None

        def fit(self, X, y):
            self.model = nn.Linear(64, 10)  # there to satisfy the check, never used
            self.X, self.y = X.flatten(1), y
            return self

        def predict(self, X):
            return self.y[torch.cdist(X.flatten(1), self.X).argmin(dim=1)]

    rejected(C + "DigitClassifier", NearestNeighbour, "predict_without_model", seeds=(3,))


def test_classifier_whose_network_does_not_output_logits_is_rejected():
    class IdentityModel:
        def fit(self, X, y):
            self.model = nn.Identity()
            self.X, self.y = X.flatten(1), y
            return self

        def predict(self, X):
            self.model.eval()
            with torch.inference_mode():
                feats = self.model(X).flatten(1)
            return self.y[torch.cdist(feats, self.X).argmin(dim=1)]

    rejected(C + "DigitClassifier", IdentityModel, "model_output", seeds=(3,))


def test_classifier_that_leaves_autograd_off_is_rejected():
    class GradOff(cap.DigitClassifier):
        def predict(self, X):
            self.model.eval()
            torch.set_grad_enabled(False)
            return self.model(X).argmax(dim=1)

    rejected(C + "DigitClassifier", GradOff, "grad_left_off", seeds=(3,))
    assert torch.is_grad_enabled()


def test_classifier_trained_on_the_notebooks_digits_is_rejected():
    from course_utils.datasets import digits_split

    class NotebookData(cap.DigitClassifier):
        def fit(self, X, y):
            s = digits_split(images=True)  # the notebook's globals instead of the arguments
            return super().fit(s.X_train, s.y_train)

    rejected(C + "DigitClassifier", NotebookData, "ignored_given_data", seeds=(3,))


def test_classifier_with_flattening_outside_the_model_passes():
    """An MLP that flattens in fit/predict: the softmax probe used to call the model on raw images and crash."""

    class FlatMLP:
        def fit(self, X, y):
            torch.manual_seed(0)
            self.model = _train(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                                              nn.Linear(64, 10)), X.flatten(1), y, num_epochs=12)
            return self

        def predict(self, X):
            self.model.eval()
            with torch.inference_mode():
                return self.model(X.flatten(1)).argmax(dim=1)

    accepted(C + "DigitClassifier", FlatMLP, seeds=(3,))


def test_classifier_alternatives_pass():
    class LogSoftmaxAndForward(cap.DigitClassifier):
        """Log-probabilities are logits too; `forward` called directly; batched predict."""

        def fit(self, X, y):
            super().fit(X, y)
            self.model = nn.Sequential(self.model, nn.LogSoftmax(dim=1))
            return self

        def predict(self, X):
            self.model.eval()
            with torch.no_grad():
                return torch.cat([self.model.forward(xb).argmax(1) for xb in X.split(100)])

    accepted(C + "DigitClassifier", LogSoftmaxAndForward, seeds=(3,))


def test_softmax_network_still_named_when_predict_preprocesses():
    class ScaledSoftmax(cap.DigitClassifier):
        def fit(self, X, y):
            torch.manual_seed(0)
            self.model = _train(nn.Sequential(cap._cnn(), nn.Softmax(dim=1)), X * 2, y, num_epochs=3)
            return self

        def predict(self, X):
            self.model.eval()
            with torch.inference_mode():
                return self.model(X * 2).argmax(dim=1)

    rejected(C + "DigitClassifier", ScaledSoftmax, "softmax_output", seeds=(3,))
