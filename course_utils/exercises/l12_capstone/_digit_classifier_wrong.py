"""Wrong answers of ``DigitClassifier`` (the examples of the mistakes digit_classifier.py declares):
small overrides of the reference's ``fit`` or ``predict``. Kept apart only for the 300-line limit
of an exercise file; :func:`wrong_answers` gets the reference class, so there is no import circle."""

from __future__ import annotations

import types

import torch
from torch import nn

from course_utils.datasets import load_digits


def cnn(final: nn.Module | None = None) -> nn.Module:
    layers = [nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 16, 10)]
    return nn.Sequential(*layers, *([final] if final is not None else []))


def quick_train(model: nn.Module, X, y, num_epochs: int, lr: float = 1e-2) -> nn.Module:
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


def fits(build, num_epochs: int = 2, lr: float = 1e-2, data=None):
    """The reference's ``predict`` with another ``fit``: ``build()`` trained ``num_epochs`` on
    the given data (or on ``data(X, y)``); ``num_epochs=0`` never trains."""
    def fit(self, X, y):
        torch.manual_seed(0)
        X, y = data(X, y) if data is not None else (X, y)
        self.model = quick_train(build(), X, y, num_epochs, lr) if num_epochs else build()
        return self
    return fit


class Lookup(nn.Module):
    """Nearest-neighbour labels of stored training images, as logits; no trainable parameter,
    or (``with_linear``) a Linear that adds nothing."""

    def __init__(self, X, y, with_linear: bool):
        super().__init__()
        self.register_buffer("X", X.flatten(1).clone())
        self.register_buffer("y", y.clone())
        self.lin = nn.Linear(64, 10) if with_linear else None

    def forward(self, x):
        logits = nn.functional.one_hot(self.y[torch.cdist(x.flatten(1), self.X).argmin(dim=1)], 10).float() * 10
        return logits if self.lin is None else logits + 0 * self.lin(x.flatten(1))


class FunctionalDropout(nn.Module):
    def forward(self, x):
        return nn.functional.dropout(x, 0.3)  # always on: eval() cannot reach it


def wrong_answers(DigitClassifier: type) -> types.SimpleNamespace:  # noqa: C901, N803 - one class per mistake
    """One wrong classifier per declared mistake, each a subclass of ``DigitClassifier``."""

    class NeverTrained(DigitClassifier):
        fit = fits(cnn, num_epochs=0)

    class SoftmaxOutput(DigitClassifier):
        fit = fits(lambda: cnn(nn.Softmax(dim=1)), num_epochs=3)

    class ForgotEval(DigitClassifier):
        fit = fits(cnn)

        def predict(self, X):
            with torch.inference_mode():
                return self.model(X).argmax(dim=1)

    class ForgotNoGrad(DigitClassifier):
        fit = fits(cnn)

        def predict(self, X):
            self.model.eval()
            return self.model(X).argmax(dim=1)

    class LeavesGradOff(DigitClassifier):
        fit = fits(cnn)

        def predict(self, X):
            self.model.eval()
            torch.set_grad_enabled(False)
            return self.model(X).argmax(dim=1)

    class IgnoresGivenData(DigitClassifier):
        # the learner's own copy of the digits
        fit = fits(cnn, num_epochs=3, data=lambda X, y: load_digits(images=True))

    class ShuffledLabels(DigitClassifier):
        fit = fits(lambda: nn.Sequential(nn.Flatten(), nn.Linear(64, 10)),
                    data=lambda X, y: (X, y[torch.randperm(len(y), generator=torch.Generator().manual_seed(0))]))

    class BelowBar(DigitClassifier):
        fit = fits(lambda: nn.Sequential(nn.Flatten(), nn.Linear(64, 10)), num_epochs=1, lr=3e-3)

    class NearestNeighbour(DigitClassifier):
        """Memorises the training images and predicts the label of the closest one: a decent
        classifier, but not the trained network the task asks for."""

        def fit(self, X, y):
            self.model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))  # there, but never used
            self.X, self.y = X.flatten(1), y
            return self

        def predict(self, X):
            return self.y[torch.cdist(X.flatten(1), self.X).argmin(dim=1)]

    class LookupNoParameters(DigitClassifier):
        def fit(self, X, y):
            self.model = Lookup(X, y, with_linear=False)
            return self

    class LookupDressedAsNetwork(DigitClassifier):
        def fit(self, X, y):
            self.model = Lookup(X, y, with_linear=True)
            nn.functional.cross_entropy(self.model.lin(X.flatten(1)), y).backward()
            torch.optim.SGD(self.model.lin.parameters(), lr=0.1).step()  # parameters "changed during fit"
            return self

    class ModelElsewhere(DigitClassifier):
        def fit(self, X, y):
            self.net = cnn()
            return self

        def predict(self, X):
            self.net.eval()
            with torch.inference_mode():
                return self.net(X).argmax(dim=1)

    class Probabilities(DigitClassifier):
        fit = fits(cnn, num_epochs=0)

        def predict(self, X):
            with torch.inference_mode():
                return self.model.eval()(X).softmax(dim=1)

    class NoPredict:
        def fit(self, X, y):
            return self

    class DropoutLeftOn(DigitClassifier):
        fit = fits(lambda: cnn(FunctionalDropout()))

    class OutputsFeatures(DigitClassifier):
        fit = fits(lambda: nn.Flatten(), num_epochs=0)

        def predict(self, X):
            self.model.eval()
            with torch.inference_mode():
                return self.model(X)[:, :10].argmax(dim=1)

    class PredictsFromAnotherMethod(DigitClassifier):
        fit = fits(cnn)

        def predict(self, X):
            return (super().predict(X) + 1) % 10

    def returns(convert):
        """A classifier whose ``predict`` returns ``convert`` of the reference's predictions."""
        class Answer(DigitClassifier):
            fit = fits(cnn, num_epochs=0)

            def predict(self, X):
                return convert(super().predict(X))
        return Answer

    return types.SimpleNamespace(**{k: v for k, v in locals().items() if k != "DigitClassifier"})
