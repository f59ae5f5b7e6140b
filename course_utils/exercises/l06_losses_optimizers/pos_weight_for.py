"""pos_weight_for: BCEWithLogitsLoss's pos_weight for imbalanced multi-label targets.

An inverse problem, not a transcription: the notebook shows the best constant prediction of a model
that has learnt nothing (50 %, 10 %, 2 % without weights; 50 %, 31 %, 7.5 % with weights 1, 4, 4)
and asks for the weights that make it 50 % for every label; the learner works out negatives over
positives (not the other way, not samples over positives), per label column, as float32 whatever
the labels' dtype (bool, int, float); a label never positive or never negative gets 1.0 (no inf, no
0). The formula is explained after the check.
"""

from __future__ import annotations

import torch

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/06_losses_optimizers.py)
from ...answers.l06_losses_optimizers import pos_weight_for


# --- cases
def _cases(r: Rand) -> Case:
    n, n_labels = r.integer(6, 40), r.integer(1, 6)
    rates = torch.tensor([r.choice([0.0, 0.03, 0.1, 0.3, 0.5, 0.8, 1.0]) for _ in range(n_labels)])
    labels = (r.rand(n, n_labels) < rates).float()
    dtype = r.choice([torch.float32, torch.float32, torch.int64, torch.bool])
    return Case((labels.to(dtype),))


def _t(rows, dtype=torch.float32):
    return torch.tensor(rows, dtype=dtype)


EDGE_CASES = [
    Case((_t([[1, 0], [0, 0], [0, 1], [0, 0], [0, 0]]),), label="5 samples, 2 labels", show_inputs=True),
    Case((_t([[1, 0, 1], [0, 0, 1], [0, 0, 1], [1, 0, 1]]),),
         label="a label never positive and a label always positive", show_inputs=True),
    Case((_t([[1], [0], [0], [0], [0], [0], [0], [0]], torch.int64),), label="int64 labels, one column",
         show_inputs=True),
    Case((_t([[True, False], [False, False], [True, True]], torch.bool),), label="bool labels", show_inputs=True),
    Case((_t([[0, 1], [1, 0], [0, 1], [1, 0]]),), label="balanced labels (weight 1)", show_inputs=True),
]


# --- run
def _run(answer, case: Case):
    (labels,) = case.args
    out = answer(labels)
    if isinstance(out, torch.Tensor) and out.shape != (labels.shape[1],) and out.shape == (labels.shape[0],):
        raise Incorrect("per_sample", n=labels.shape[0], labels=labels.shape[1])
    return out


# --- wrong answers
def _ratio(labels, invert=False, per_column=True):
    labels = labels.float()
    pos = labels.sum(dim=0) if per_column else labels.sum().expand(labels.shape[1])
    total = labels.shape[0] if per_column else labels.numel()
    neg = total - pos
    w = (pos / neg.clamp(min=1)) if invert else (neg / pos.clamp(min=1))
    return torch.where((pos == 0) | (neg == 0), torch.ones_like(w), w)


def _no_guard(labels):
    labels = labels.float()
    pos = labels.sum(dim=0)
    return (labels.shape[0] - pos) / pos


def _over_total(labels):
    labels = labels.float()
    pos = labels.sum(dim=0)
    neg = labels.shape[0] - pos
    return torch.where((pos == 0) | (neg == 0), torch.ones_like(pos), neg / labels.shape[0])


def _per_sample(labels):
    labels = labels.float()
    pos = labels.sum(dim=1)
    neg = labels.shape[1] - pos
    return torch.where((pos == 0) | (neg == 0), torch.ones_like(pos), neg / pos.clamp(min=1))


def _inverse_frequency(labels):
    labels = labels.float()
    pos = labels.sum(dim=0)
    neg = labels.shape[0] - pos
    return torch.where((pos == 0) | (neg == 0), torch.ones_like(pos), labels.shape[0] / pos.clamp(min=1))


def _int_division(labels):
    labels = labels.long()
    pos = labels.sum(dim=0)
    neg = labels.shape[0] - pos
    return torch.where((pos == 0) | (neg == 0), torch.ones_like(pos), neg // pos.clamp(min=1))


# --- declaration
register(Exercise(
    lesson=LESSON, name="pos_weight_for", title="pos_weight for BCEWithLogitsLoss from imbalanced multi-label targets",
    reference=pos_weight_for, cases=_cases, edge_cases=EDGE_CASES, n_random=15, run=_run,
    mistakes=[
        Mistake("inverted", "Your weights are below 1 for rare labels, which pushes their best constant further "
                "towards \"no\". The weight multiplies the loss of the positives: a rare label's few positives "
                "must count for more, not less.",
                lambda labels: _ratio(labels, invert=True)),
        Mistake("one_ratio_for_all", "Each label (column) has its own imbalance; you gave every label the ratio "
                "of the whole tensor, so only a label at the average rate gets to 50 %.",
                lambda labels: _ratio(labels, per_column=False)),
        Mistake("inverse_frequency", "Your weight is the number of samples over the positives (inverse "
                "frequency). That overshoots: the weighted positives now outweigh the negatives by the "
                "positives themselves, and the best constant lands above 50 %. What must the weighted "
                "positives equal?", _inverse_frequency),
        Mistake("no_guard", "A label that is never positive divides by 0 (`inf` or `nan`), and one that is always "
                "positive gets weight 0 (its positives would count for nothing). Give both 1.0, as the task says.",
                _no_guard),
        Mistake("over_total", "Your weights are the share of negatives, at most 1: a rare label's positives "
                "still count for less than its negatives. What sets the balance is how the weighted positives "
                "compare with the negatives.", _over_total),
        Mistake("per_sample", "Count per label, down each column: you counted per sample, along the rows, and "
                "got {n} numbers (one per sample) where {labels} were needed.", _per_sample,
                match_output=False),
        Mistake("integer_division", "Your weights are whole numbers: integer division rounded them. A weight is "
                "a ratio, computed in floating point.", _int_division),
    ],
    hints=[
        "In the table, a weight of 4 moved the label with 20 positives among 200 to about 31 %. How many "
        "negatives does it have, and how many samples do its positives count as with that weight?",
        "At the best constant the pull of the positives and of the negatives cancel. For that constant to be "
        "50 %, how must a label's weighted positives compare with its negatives?",
        "Count each label's positives and negatives down its column, in floating point; the weight balances "
        "the two; the two degenerate kinds of column are handled apart.",
    ],
))
