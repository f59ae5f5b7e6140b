"""pick_checkpoint: which epoch's weights to ship, from a training history.

The decisions: judge by validation (not training loss), keep the best epoch (not the last),
break ties in accuracy by the validation loss, and return the epoch's NUMBER, not its index
in the list (the numbers of a resumed run start anywhere). Each case holds several histories
whose accuracies repeat, so every wrong rule picks another epoch in at least one of them.
"""

from __future__ import annotations

import copy
import numbers

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON, a_type

# --- reference: the solution notebook's answer (generated from solutions/16_capstone_files.py)
from .._references.l16_capstone_files import pick_checkpoint


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


EDGE_CASES = [Case(([[
    {"epoch": 7, "train_loss": 0.9, "val_loss": 0.5, "val_accuracy": 0.9},
    {"epoch": 8, "train_loss": 0.6, "val_loss": 0.4, "val_accuracy": 0.9},
    {"epoch": 9, "train_loss": 0.3, "val_loss": 0.6, "val_accuracy": 0.85},
    {"epoch": 10, "train_loss": 0.35, "val_loss": 0.45, "val_accuracy": 0.8}]],),
    label="a resumed run: epochs 7 to 10, a tie in accuracy")]


# --- run
def _run(answer, case: Case):
    (histories,) = case.args
    picked = []
    for history in histories:
        given = copy.deepcopy(history)
        got = answer(given)
        if given != history:
            raise Incorrect("mutated_input")
        if hasattr(got, "item"):
            got = got.item()
        if isinstance(got, dict):
            raise Incorrect("returned_entry")
        if not isinstance(got, numbers.Integral) or isinstance(got, bool):
            raise Incorrect("not_an_epoch", got=a_type(got))
        picked.append(int(got))
    return picked


# --- wrong answers
def _by_train_loss(history):
    return min(history, key=lambda h: h["train_loss"])["epoch"]


def _last(history):
    return history[-1]["epoch"]


def _index(history):
    return history.index(max(history, key=lambda h: (h["val_accuracy"], -h["val_loss"])))


def _first_of_ties(history):
    return max(history, key=lambda h: h["val_accuracy"])["epoch"]


def _val_loss_only(history):
    return min(history, key=lambda h: h["val_loss"])["epoch"]


def _entry(history):
    return max(history, key=lambda h: (h["val_accuracy"], -h["val_loss"]))


def _sorts(history):
    history.sort(key=lambda h: (-h["val_accuracy"], h["val_loss"]))
    return history[0]["epoch"]


# --- declaration
register(Exercise(
    lesson=LESSON, name="pick_checkpoint", title="Keep the best epoch by validation, ties by validation loss",
    reference=pick_checkpoint, kind="function", cases=_cases, edge_cases=EDGE_CASES, run=_run,
    mistakes=[
        Mistake("by_train_loss", "You picked the lowest TRAINING loss: it keeps falling while the model "
                "memorises its training images, so it picks the most overfitted epoch. Judge by validation.",
                _by_train_loss),
        Mistake("last_epoch", "You kept the last epoch. Early stopping runs `patience` epochs past the best one "
                "on purpose; ship the best epoch's weights.", _last),
        Mistake("returned_index", "You returned the position in the list, not the `\"epoch\"` number: a resumed "
                "run's history does not start at epoch 0.", _index),
        Mistake("ignored_ties", "Among epochs with the same validation accuracy you kept the first, not the one "
                "with the lowest validation loss.", _first_of_ties),
        Mistake("val_loss_only", "You picked the lowest validation loss; the task ranks by validation ACCURACY "
                "first and uses the loss only to break ties.", _val_loss_only),
        Mistake("returned_entry", "You returned the whole history entry; return its `\"epoch\"`.",
                _entry, match_output=False),
        Mistake("mutated_input", "Your function reordered or changed the history it was given: the training loop "
                "keeps it. Use `max` (or sort a copy).", _sorts, match_output=False),
        Mistake("not_an_epoch", "Return the epoch number (an int); you returned {got}.", match_output=False),
    ],
    hints=[
        "`max(history, key=...)` with a key that ranks accuracy first, then the loss (lower is better).",
        "`key=lambda h: (h['val_accuracy'], -h['val_loss'])`, then take the winner's `'epoch'`.",
    ],
))
