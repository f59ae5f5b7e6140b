"""confusion_matrix: counts, entry [t, p] the number of items of true class t predicted as p.

Subtle: ``cm[targets, preds] += 1`` adds 1 only once per repeated (target, pred) pair; the size
is ``num_classes`` even when a class never occurs; rows are the true classes.
"""

from __future__ import annotations

import torch

from course_utils.grading import Case, Exercise, Mistake, Rand, register

from ...answers.l12_capstone import confusion_matrix
from ._kit import LESSON


# --- reference: imported above from course_utils/answers/l12_capstone.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases
def _cases(r: Rand) -> Case:
    k = r.integer(2, 10)
    n = r.integer(5, 60)
    targets = r.randint(0, k, (n,))
    preds = torch.where(r.rand(n) < 0.6, targets, r.randint(0, k, (n,)))
    return Case((preds, targets, k + r.integer(0, 1)))


_EDGE_CASES = [
    Case((torch.tensor([0, 1, 1, 2]), torch.tensor([0, 1, 2, 2]), 3), label="preds [0,1,1,2], targets [0,1,2,2]",
         show_inputs=True),
    Case((torch.tensor([1, 1, 1]), torch.tensor([1, 1, 0]), 4), label="class 3 never appears"),
    Case((torch.zeros(0, dtype=torch.int64), torch.zeros(0, dtype=torch.int64), 3), label="no items (N = 0)"),
    Case((torch.tensor([2, 0, 2, 2, 0]), torch.tensor([2, 2, 2, 0, 0]), 3),
         label="repeated (target, pred) pairs: (2, 2) twice, (0, 0) once"),
]


# --- wrong answers
def _counts(preds, targets, size):
    cm = torch.zeros(size, size, dtype=torch.int64)
    cm.index_put_((targets, preds), torch.ones_like(targets), accumulate=True)
    return cm


def _transposed(preds, targets, num_classes):
    return _counts(preds, targets, num_classes).T


def _size_from_data(preds, targets, num_classes):
    return _counts(preds, targets, int(max(preds.max(), targets.max())) + 1)


def _no_accumulate(preds, targets, num_classes):
    cm = torch.zeros(num_classes, num_classes, dtype=torch.int64)
    cm[targets, preds] += 1
    return cm


def _normalized(preds, targets, num_classes):
    cm = _counts(preds, targets, num_classes).double()
    return cm / cm.sum(dim=1, keepdim=True).clamp(min=1)


# --- declaration
register(Exercise(
    lesson=LESSON, name="confusion_matrix", title="A confusion matrix",
    reference=confusion_matrix, cases=_cases, edge_cases=_EDGE_CASES,
    mistakes=[
        Mistake("transposed", "Rows are the *true* classes and columns the *predicted* ones: count "
                "`cm[target, pred]`, not `cm[pred, target]`.", _transposed),
        Mistake("size_from_data", "Make the matrix `num_classes × num_classes`, even when some classes do not "
                "occur in this batch of predictions.", _size_from_data),
        Mistake("no_accumulate", "`cm[targets, preds] += 1` with repeated index pairs adds 1 only once per "
                "pair: indexed assignment does not accumulate. Use `index_put_(..., accumulate=True)`, "
                "`torch.bincount`, or a loop.", _no_accumulate),
        Mistake("normalized", "Return the raw counts (int64); normalise later, when plotting.", _normalized),
    ],
    hints=[
        "Start from a num_classes × num_classes matrix of int64 zeros; row = true class, column = "
        "predicted class, and every (target, prediction) pair adds 1 to its cell.",
        "A plain loop over the pairs is fine. Vectorised: index_put_ with accumulate, or torch.bincount "
        "of one flat index per pair (row × num_classes + column), reshaped to a square.",
    ],
))
