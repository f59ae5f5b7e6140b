"""DigitClassifier: a class whose ``fit`` trains a network from scratch and whose ``predict``
reaches at least 97 % accuracy on held-out digits, within a CPU-time budget.

How it is graded (the learner passes the class ``DigitClassifier``):

1. A quick interface test: ``fit`` on 40 images, ``predict`` on 10, then on 1; predictions must
   be int64 tensors of shape (10,) and (1,) (a ``.squeeze()`` that drops the batch of one fails).
   This also reports a stub as "not attempted".
2. The real test, on a split drawn once from :data:`HELD_OUT_SEED` (the same at every check, so
   the check's seed cannot change the verdict): the 1797 digits are split at random into 1437
   training and 360 held-out images, and the class names are shuffled (every image of a 3
   becomes, say, a 7: a permutation with no fixed points), so only what ``fit`` learns from the
   ``(X, y)`` it is given can score. ``fit`` gets the training part and may use at most
   :data:`TIME_BUDGET_S` seconds of CPU time (it runs with one torch thread, so CPU time is
   also its wall time on an idle machine, and other programs do not count against it);
   ``predict`` gets the held-out images only. Forward pre-hooks on every module record
   train/eval mode and grad mode during ``predict``, and a forward hook on ``self.model``
   records what it returns there (after any preprocessing ``predict`` does): ``predict`` must
   run ``self.model``, which must return logits of shape (N, 10), not probabilities, and the
   predictions must be the argmax of what it returned (a network run only for show, with the
   answer coming from elsewhere, fails). Those checks are in _digit_classifier_checks.py.
"""

from __future__ import annotations

import functools
import time
import types
from typing import Any

import torch
from torch import nn

from course_utils.datasets import digit_from_image, load_digits
from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register
from course_utils.grading import heldout
from course_utils.grading.calls import GRAD_LEFT_OFF

from ...answers.l12_capstone import DigitClassifier
from ._kit import LESSON
from ._digit_classifier_checks import check_deterministic_network, check_predict, check_predictions
from ._digit_classifier_wrong import cnn, wrong_answers

TIME_BUDGET_S = 20.0
"""Seconds of CPU time ``fit`` may use on the 1437 training images, run with one torch thread
(the reference needs about one second)."""
TARGET_ACCURACY = 0.97
N_HELD_OUT = 360
HELD_OUT_SEED = 2024
"""The held-out split and the class renaming come from this fixed seed, not from the check's
seed: a verdict must not depend on the seed (retrying seeds must not turn a 96.5 % classifier
into a pass), and a deterministic ``fit`` gets the same verdict every time."""


# --- reference: imported above from course_utils/answers/l12_capstone.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases
@functools.lru_cache(maxsize=1)
def _digits() -> tuple[torch.Tensor, torch.Tensor]:
    return load_digits(images=True)


def _derangement(n: int, r: Rand) -> torch.Tensor:
    while True:
        perm = torch.randperm(n, generator=r.torch)
        if not bool((perm == torch.arange(n)).any()):
            return perm


# --- run and probes
def _new_classifier(answer):
    if isinstance(answer, type):
        clf = answer()
    elif callable(getattr(answer, "fit", None)) and not callable(answer):
        raise Incorrect("wrong_type", got="an instance")
    elif callable(answer):
        clf = answer()
    else:
        raise Incorrect("wrong_type", got=f"a {type(answer).__name__}")
    if not (callable(getattr(clf, "fit", None)) and callable(getattr(clf, "predict", None))):
        raise Incorrect("no_fit_predict")
    return clf


def _interface_run(answer, case: Case):
    # The reference runs this too, as the untimed warm-up before a lesson's first check: it loads
    # the digits and pays the first fit's one-time costs (lazy imports) outside any check's clock.
    X, y = _digits()
    n_train, n_query = case.kwargs["n_train"], case.kwargs["n_query"]
    clf = _new_classifier(answer)
    with torch.enable_grad():
        clf.fit(X[:n_train].clone(), y[:n_train].clone())
    check_predictions(clf.predict(X[n_train : n_train + n_query].clone()), n_query)
    check_predictions(clf.predict(X[n_train : n_train + 1].clone()), 1)  # a batch of one image too
    return True


def _split() -> tuple[torch.Tensor, torch.Tensor]:
    """The course's held-out order of the digits and the class renaming, from :data:`HELD_OUT_SEED`."""
    r = Rand(HELD_OUT_SEED)
    order = torch.randperm(len(_digits()[1]), generator=r.torch)
    return order, _derangement(10, r)


def _heldout_probe(answer, r: Rand) -> None:
    X, y_true = _digits()
    order, rename = _split()
    y = rename[y_true]  # the classes renamed
    given = heldout.given()
    if given is None:  # the course's split
        held, train = order[:N_HELD_OUT], order[N_HELD_OUT:]
    else:  # the instructor's own images (grade --heldout): the same fit, their images predicted
        held, train = torch.arange(len(X), len(X) + len(given.images)), order[N_HELD_OUT:]
        X = torch.cat([X, given.images.to(X.dtype)])
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
        raise Incorrect("too_slow", seconds=f"{seconds:.1f}", budget=f"{TIME_BUDGET_S:g}")
    model = getattr(clf, "model", None)
    if not isinstance(model, nn.Module):
        raise Incorrect("no_model")
    params = [p for p in model.parameters() if p.requires_grad]
    preds = check_predict(clf, model, X, held)
    if not params:
        raise Incorrect("no_trainable_parameters")
    if not any(id(p) in first_seen and not torch.equal(first_seen[id(p)], p.detach()) for p in params):
        raise Incorrect("not_trained")
    check_deterministic_network(clf, model, X, held, preds, seed=HELD_OUT_SEED)
    return {"preds": preds, "seconds": float(seconds)}


def _heldout_truth() -> torch.Tensor:
    """The true (not renamed) classes of the held-out images: the course's split's, or the
    instructor's labels, which only the judge holds."""
    given = heldout.given()
    if given is None:
        return _digits()[1][_split()[0][:N_HELD_OUT]]
    if given.labels is None:
        raise RuntimeError("internal: held-out images without their labels")
    return given.labels


def _accuracy(ran: Any, truth: torch.Tensor) -> float:
    preds = check_predictions(ran.get("preds") if isinstance(ran, dict) else None, len(truth))
    return float((preds == _split()[1][truth]).double().mean())


def _heldout_verdict(j: int, ran: Any) -> None:
    """The held-out accuracy of the predictions ``_heldout_probe`` returned, judged where the
    answer cannot reach (``Exercise.finish_probe``: in the instructor's grader the probe runs
    next to the answer, which can rewrite it; a stub whose ``fit`` did so was scored correct)."""
    if not isinstance(ran, dict) or not isinstance(ran.get("seconds"), float):
        raise Incorrect("returned_none")  # (only a rewritten probe returns anything else)
    truth = _heldout_truth()
    accuracy, seconds, bar = _accuracy(ran, truth), ran["seconds"], heldout.bar(TARGET_ACCURACY)
    if accuracy >= bar:
        return
    if float((check_predictions(ran["preds"], len(truth)) == truth).double().mean()) > 0.5:
        raise Incorrect("ignored_given_data")
    if accuracy < 0.3:
        raise Incorrect("at_chance", accuracy=f"{accuracy:.1%}")
    raise Incorrect("below_bar", accuracy=f"{accuracy:.1%}", bar=f"{bar:.1%}", seconds=f"{seconds:.1f}",
                    budget=f"{TIME_BUDGET_S:g}")


_CLASSES = [str(d) for d in range(10)]
HELD_OUT = heldout.HeldOutSpec(
    classes=tuple(_CLASSES), read=lambda folder: heldout.read_class_folders(folder, _CLASSES, digit_from_image),
    score=_accuracy, course_labels=_heldout_truth, target=TARGET_ACCURACY,
    layout="class folders 0 to 9 of images of one handwritten digit each (any size; dark ink on light paper "
           "or the other way round), converted as the course's digits were (datasets.digit_from_image)")


# --- wrong answers (in _digit_classifier_wrong.py: small overrides of fit or predict)
_wrong = wrong_answers(DigitClassifier)
_cnn = cnn  # (a small CNN, also used by the tests)


# --- declaration
register(Exercise(
    lesson=LESSON, name="DigitClassifier",
    title=f"A digit classifier with ≥ {TARGET_ACCURACY:.0%} held-out accuracy within {TIME_BUDGET_S:g} s of CPU time",
    reference=DigitClassifier, kind="any", run=_interface_run,
    edge_cases=[Case(kwargs=dict(n_train=40, n_query=10), label="fit on 40 images, then predict 10")],
    probes=[_heldout_probe], finish_probe=_heldout_verdict, heldout=HELD_OUT,
    # "train a new network from scratch": building layers initialises their weights from torch's
    # global RNG (and a seeded fit calls torch.manual_seed), so a right answer draws from it
    uses_global_rng=True,
    # wall-clock limit for the whole check (two fits and the predictions): generous, because the budget
    # is CPU time and a busy shared machine stretches wall time several-fold
    timeout=4 * TIME_BUDGET_S + 40,
    mistakes=[
        Mistake("wrong_type", "You passed {got}; pass your class itself, `DigitClassifier`.",
                types.SimpleNamespace(fit=lambda X, y: None, predict=lambda X: None), match_output=False),
        Mistake("no_fit_predict", "Your class needs two methods, `fit(X, y)` and `predict(X)`.",
                _wrong.NoPredict, match_output=False),
        Mistake("returned_none", "`predict` returned None: return the tensor of predicted classes.",
                _wrong.returns(lambda preds: None), match_output=False),
        Mistake("predictions_type", "`predict` should return a plain tensor, not {got}.",
                _wrong.returns(lambda preds: preds.tolist()), match_output=False),
        Mistake("predictions_shape", "For {n} images `predict` should return shape ({n},), not {shape}.{extra}",
                _wrong.Probabilities, match_output=False),
        Mistake("squeezed_one_image", "For 1 image `predict` returned shape (), not (1,): `.squeeze()` drops "
                "the batch dimension of a batch of one. Take `argmax(dim=1)` (no `keepdim`, no `squeeze`), or "
                "`squeeze(1)`.", _wrong.returns(lambda preds: preds.squeeze()), match_output=False),
        Mistake("predictions_dtype", "Predictions are class indices: an int64 tensor (`argmax` gives one).",
                _wrong.returns(lambda preds: preds.float()), match_output=False),
        Mistake("too_slow", "`fit` used {seconds} s of CPU time; the budget is {budget} s. Train for fewer "
                "epochs, use a smaller model or larger batches.", match_output=False),
        Mistake("no_model", "Keep the trained network in `self.model` (an `nn.Module`).",
                _wrong.ModelElsewhere, match_output=False),
        Mistake("predict_not_from_model", "`predict` ran `self.model`, but its predictions are not the network's: "
                "the task says `predict` returns the predicted classes of the network kept in `self.model` "
                "(`self.model(X).argmax(dim=1)`), not the output of another method.",
                _wrong.PredictsFromAnotherMethod, match_output=False),
        Mistake("forgot_eval", "`predict` ran the network in training mode: call `self.model.eval()` first "
                "(Dropout and BatchNorm behave differently when training).", _wrong.ForgotEval, match_output=False),
        Mistake("forgot_no_grad", "`predict` recorded an autograd graph: wrap it in `with torch.inference_mode():` "
                "(or `torch.no_grad()`).", _wrong.ForgotNoGrad, match_output=False),
        Mistake("grad_left_off", GRAD_LEFT_OFF, _wrong.LeavesGradOff, match_output=False),
        Mistake("predict_without_model", "`predict` never ran `self.model`: the predictions must come from the "
                "network that `fit` trained (its logits' `argmax(dim=1)`), not from another method such as "
                "comparing with the stored training images.", _wrong.NearestNeighbour, match_output=False),
        Mistake("model_output", "`self.model` must return logits, a float tensor of shape (N, 10) (one score per "
                "class); it returned {got}.", _wrong.OutputsFeatures, match_output=False),
        Mistake("softmax_output", "Your network outputs probabilities (every row sums to 1), but `CrossEntropyLoss` "
                "expects logits and applies log-softmax itself; softmax before it squashes the gradients. Remove "
                "the final `Softmax` (use it only to display probabilities).",
                _wrong.SoftmaxOutput, match_output=False),
        Mistake("no_trainable_parameters", "`self.model` has no trainable parameters: the task is to \"train a new "
                "network from scratch\" in `fit` (layers such as `nn.Conv2d`/`nn.Linear` whose weights the "
                "training loop changes), not a lookup of the stored training images.",
                _wrong.LookupNoParameters, match_output=False),
        Mistake("not_trained", "The parameters of `self.model` did not change during `fit`: the task is to \"train "
                "a new network from scratch\". Run the training loop (forward, loss, `backward()`, "
                "`optimizer.step()`) on `self.model` itself, not on a copy.", _wrong.NeverTrained, match_output=False),
        Mistake("random_predictions", "`predict` gave different answers for the same images on two calls: something "
                "random is still switched on at prediction time. Functional `F.dropout(x, p)` drops units whenever "
                "it runs, because its `training` argument defaults to True and `model.eval()` cannot reach it: use "
                "an `nn.Dropout` layer, or write `F.dropout(x, p, training=self.training)`.",
                _wrong.DropoutLeftOn, match_output=False),
        Mistake("not_a_network", "The predictions of `self.model` do not depend on its trained parameters: with all "
                "of them replaced by random values, {unchanged} of the predictions stay the same, so something "
                "other than the network's layers (stored training images, a lookup) decides them. The task is to "
                "\"train a new network from scratch\" whose layers compute the logits.",
                _wrong.LookupDressedAsNetwork, match_output=False),
        Mistake("ignored_given_data", "Your predictions match the digits' original labels, not the labels `fit` was "
                "given (the check renames the classes): train only on the `X, y` passed to `fit`.",
                _wrong.IgnoresGivenData, match_output=False),
        Mistake("at_chance", "Held-out accuracy {accuracy} is close to chance (10 %): was the network trained? Check "
                "that `fit` runs the training loop on `self.model` (not on a copy) and that `predict` uses that "
                "same model.", _wrong.ShuffledLabels, match_output=False),
        Mistake("below_bar", "Held-out accuracy {accuracy} is below {bar} (fit took {seconds} s of the "
                "{budget} s CPU budget). Try a small CNN, "
                "Adam, more epochs, a learning-rate schedule.", _wrong.BelowBar, match_output=False),
        Mistake("timeout", f"Checking stopped after {4 * TIME_BUDGET_S + 40:g} s of wall-clock time: `fit` (or "
                "`predict`) runs far longer than the CPU budget allows, or never ends. Train for a fixed number of "
                "epochs.", match_output=False),
    ],
    hints=[
        "Start from the baseline's loop, but build a small CNN in fit: two 3x3 convolutions with ReLU, "
        "one MaxPool2d(2), Flatten, then two Linear layers ending in 10 logits. Work out the flattened "
        "size from the 8x8 input.",
        "Adam with lr 1e-2 and a OneCycleLR schedule (stepped after every batch) for about 10 epochs of "
        "batch size 64 gets close to 99 %; BatchNorm2d after each convolution makes it steadier.",
        "predict: put the model in evaluation mode, switch gradients off (read about "
        "torch.inference_mode), and return the argmax class per row.",
    ],
))
