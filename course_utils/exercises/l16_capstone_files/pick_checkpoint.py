"""pick_checkpoint: which epoch's weights to ship, from a training history and a stated need.

The notebook shows a teammate's script that ships the last epoch of a resumed run whose first
evaluation logged NaN, and states the need (the app is judged by digits read right on unseen
fonts, and shows its confidence), not the rule. The decisions: judge by validation accuracy
(not training loss, not the last epoch), break ties by the validation loss (the confidence
shown), return the epoch's NUMBER, not its index (a resumed run starts anywhere), and never ship
an epoch with NaN among its validation numbers (``max`` keeps a NaN that comes first: every
comparison with it is False). Each case holds several histories whose accuracies repeat, so
every wrong rule picks another epoch in at least one of them. A fixed probe history names three
families by behaviour: a pick that moves when only the training losses are reversed (training
loss, a "training accuracy", ties by training loss), a tied epoch other than the lowest loss
(first, last, highest), a position. Three NaN histories (the third with NaN in the accuracy
alone, which an answer that checks only the loss ships) name ``shipped_nan`` when the answer is
right on them once their NaN epochs are left out (otherwise the runner names the rule).
"""

from __future__ import annotations

import copy
import math
import numbers

from course_utils.grading import Case, Exercise, Expect, Incorrect, Mistake, Rand, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/16_capstone_files.py)
from ...answers.l16_capstone_files import pick_checkpoint


# --- cases
def _history(r: Rand) -> list[dict]:
    start, n = r.integer(0, 20), r.integer(3, 9)
    history, train = [], 2.0
    for k in range(n):
        train = round(train * (0.6 + 0.5 * float(r.rand(1))), 4)  # training loss falls, with noise
        history.append({"epoch": start + k, "train_loss": train,
                        "val_loss": round(0.2 + float(r.rand(1)), 4),
                        "val_accuracy": r.choice([0.8, 0.85, 0.9, 0.9, 0.95])})
    return history


def _cases(r: Rand) -> Case:
    return Case(([_history(r) for _ in range(5)],))


NAN_LABEL = ("runs whose evaluation logged NaN (in a resumed run's first epoch; in the loss of the best epoch; in "
             "the accuracy alone)")
EDGE_CASES = [Case(([[
    {"epoch": 7, "train_loss": 0.9, "val_loss": 0.5, "val_accuracy": 0.9},
    {"epoch": 8, "train_loss": 0.6, "val_loss": 0.4, "val_accuracy": 0.9},
    {"epoch": 9, "train_loss": 0.3, "val_loss": 0.6, "val_accuracy": 0.85},
    {"epoch": 10, "train_loss": 0.35, "val_loss": 0.45, "val_accuracy": 0.8}]],),
    label="a resumed run: epochs 7 to 10, a tie in accuracy"),
    Case(([[{"epoch": 1, "train_loss": 0.9, "val_loss": 0.5, "val_accuracy": 0.95},
            {"epoch": 2, "train_loss": 0.5, "val_loss": 0.45, "val_accuracy": 0.6}]],),
         label="the best accuracy has not the lowest loss")]
# three epochs tie for the best accuracy (the second has the lowest loss), and a later one has the
# lowest validation and training losses; the probe reverses the training losses: a pick that moves
# reads them, and a pick among the tied epochs other than the second ignored the tie-break
PROBE = [{"epoch": e, "train_loss": t, "val_loss": v, "val_accuracy": a} for e, t, v, a in
         [(3, 0.9, 0.5, 0.9), (4, 0.7, 0.3, 0.9), (5, 0.5, 0.4, 0.9), (6, 0.3, 0.2, 0.8)]]
# an evaluation that logged NaN: first (where `max` and a loop that starts from the first entry keep
# it, every comparison with NaN being False), and with NaN only in the loss at the best accuracy
NAN = float("nan")
NAN_PROBES = [
    [{"epoch": e, "train_loss": t, "val_loss": v, "val_accuracy": a} for e, t, v, a in
     [(12, 0.52, NAN, NAN), (13, 0.47, 0.40, 0.88), (14, 0.39, 0.31, 0.92), (15, 0.33, 0.24, 0.95),
      (16, 0.30, 0.19, 0.93), (17, 0.26, 0.21, 0.95), (18, 0.22, 0.25, 0.90)]],
    [{"epoch": e, "train_loss": t, "val_loss": v, "val_accuracy": a} for e, t, v, a in
     [(1, 0.8, 0.5, 0.8), (2, 0.6, NAN, 0.95), (3, 0.4, 0.3, 0.9), (4, 0.3, 0.35, 0.85),
      (5, NAN, NAN, NAN)]],
    # NaN in the accuracy alone, first and with the lowest loss: a check of the loss only ships it
    [{"epoch": e, "train_loss": t, "val_loss": v, "val_accuracy": a} for e, t, v, a in
     [(21, 0.6, 0.30, NAN), (22, 0.5, 0.20, 0.90), (23, 0.4, 0.35, 0.92), (24, 0.3, 0.38, 0.92)]],
]
EDGE_CASES.append(Case((NAN_PROBES,), label=NAN_LABEL))


# --- run
_EPOCH = Expect("not_an_epoch", "the epoch number (an `int`)",
                lambda got: isinstance(got, numbers.Integral) and not isinstance(got, bool))


def _run(answer, case: Case):
    (histories,) = case.args
    if case.label == NAN_LABEL:
        return _nan_picks(answer, histories)
    picked = [_pick(answer, history) for history in histories]
    reversed_train = [dict(h, train_loss=r["train_loss"]) for h, r in zip(PROBE, PROBE[::-1])]
    probe = _pick(answer, PROBE)
    if probe != _pick(answer, reversed_train):
        raise Incorrect("by_training")
    if probe in (1, 2):  # the best epoch's position in the list (from 0 or from 1): no epoch of PROBE
        raise Incorrect("returned_index")
    if probe in (3, 5):
        raise Incorrect("ignored_ties", kept=probe)
    return picked


def _nan_picks(answer, histories: list[list[dict]]) -> list[int]:
    picked = []
    for history in histories:
        measured = [h for h in history if not _failed(h)]
        kept, without = _pick(answer, history), _pick(answer, measured)
        # named only when the rule is right once the NaN epochs are gone; else the runner names the rule
        if any(h["epoch"] == kept and _failed(h) for h in history) and without == pick_checkpoint(measured):
            raise Incorrect("shipped_nan", kept=kept)
        picked += [kept, without]
    return picked


def _failed(entry: dict) -> bool:
    return math.isnan(entry["val_accuracy"]) or math.isnan(entry["val_loss"])


def _pick(answer, history: list[dict]) -> int:
    given = copy.deepcopy(history)
    got = answer(given)
    if given != history:
        raise Incorrect("mutated_input")
    if hasattr(got, "item"):
        got = got.item()
    if isinstance(got, dict):
        raise Incorrect("returned_entry")
    return int(_EPOCH.check(got))


# --- wrong answers
def _by_train_loss(history):
    return min(history, key=lambda h: h["train_loss"])["epoch"]


def _last(history):
    return history[-1]["epoch"]


def _index(history):
    return history.index(max(history, key=lambda h: (h["val_accuracy"], -h["val_loss"])))


def _first_of_ties(history):
    return max(history, key=lambda h: h["val_accuracy"])["epoch"]


def _one_score(history):
    return max(history, key=lambda h: h["val_accuracy"] / h["val_loss"])["epoch"]


def _val_loss_only(history):
    return min(history, key=lambda h: h["val_loss"])["epoch"]


def _entry(history):
    return max(history, key=lambda h: (h["val_accuracy"], -h["val_loss"]))


def _nan_blind(history):
    return max(history, key=lambda h: (h["val_accuracy"], -h["val_loss"]))["epoch"]


def _sorts(history):
    history.sort(key=lambda h: (-h["val_accuracy"], h["val_loss"]))
    return history[0]["epoch"]


# --- declaration
register(Exercise(
    lesson=LESSON, name="pick_checkpoint", title="Choose the checkpoint to ship for a stated need, NaN epochs included",
    reference=pick_checkpoint, kind="function", cases=_cases, edge_cases=EDGE_CASES, run=_run,
    mistakes=[
        Mistake("by_training", "Your pick depends on the TRAINING loss: training numbers keep improving while "
                "the model memorises its training images, so they favour the most overfitted epoch. Judge (and "
                "break ties) by validation only.", _by_train_loss, match_output=False),
        Mistake("last_epoch", "You kept the last epoch. Early stopping runs `patience` epochs past the best one "
                "on purpose; ship the best epoch's weights.", _last),
        Mistake("returned_index", "You returned the position in the list, not the `\"epoch\"` number: a resumed "
                "run's history does not start at epoch 0.", _index, match_output=False),
        Mistake("ignored_ties", "Among epochs with the same validation accuracy you kept epoch {kept}, not the one "
                "with the LOWEST validation loss (not the first, not the last, not the highest loss): the app shows "
                "its confidence, and the lower loss is the one whose probabilities fit the true labels better.",
                _first_of_ties, match_output=False),
        Mistake("val_loss_only", "You picked the lowest validation loss; the app is judged by how many digits it "
                "reads right, which is the validation ACCURACY: rank by it first, use the loss only to break ties.",
                _val_loss_only),
        Mistake("one_score", "You ranked by one score made of accuracy and loss together; rank by validation "
                "accuracy first, and use the loss only between epochs of the same accuracy.", _one_score),
        Mistake("shipped_nan", "You shipped epoch {kept}, whose validation numbers include NaN: its evaluation "
                "failed, so nothing says those weights work. Leave out every epoch with a NaN among its "
                "validation numbers (its loss or its accuracy) before you rank: every comparison with NaN is "
                "False, so `max` (or a loop that starts from the first entry) even keeps a NaN it meets first.",
                _nan_blind, match_output=False),
        Mistake("returned_entry", "You returned the whole history entry; return its `\"epoch\"`.",
                _entry, match_output=False),
        Mistake("mutated_input", "Your function reordered or changed the history it was given: the training loop "
                "keeps it. Use `max` (or sort a copy).", _sorts, match_output=False),
        _EPOCH.mistake(),
    ],
    hints=[
        "Which numbers in the history say how the weights do on images they never trained on, and which of them "
        "counts digits read right? When two epochs read as many right, which one's confidence would you rather "
        "show? And what does a comparison with NaN answer?",
        "Only numbers measured on images the model never trained on say how it will do for users: of those, "
        "which one counts digits read right, and which one says how well its confidence fits? Which decides, and "
        "which only breaks a tie? An epoch with NaN among them cannot be compared at all: when must it go? And "
        "does the caller want a position in the list?",
        "Look up `math.isnan`, `max` with a `key` function, and how Python compares tuples (first element first, "
        "the next only on a tie).",
    ],
))
