"""Independent oracles for the lesson 04-08 references (issue 11).

Each reference is compared with a torch / NumPy / scikit-learn built-in that computes the same
thing another way, across the exercise's whole case generator (many seeds) and its fixed edge
cases. A reference that disagrees with its own text shows up here even when no learner answer
ever reaches the input that exposes it.
"""

from __future__ import annotations

import numpy as np
import torch

from course_utils import grading
from course_utils.grading import Rand

SEEDS = range(60)


def _cases(exercise_id, seeds=SEEDS):
    ex = grading.exercise(exercise_id)
    out = list(ex.edge_cases)
    if ex.cases is not None:
        out += [ex.cases(Rand(s)) for s in seeds]
    return out


# --------------------------------------------------------------------------- 08
def test_confusion_matrix_matches_sklearn():
    from sklearn.metrics import confusion_matrix as sk_confusion_matrix

    ref = grading.reference("09_capstone.confusion_matrix")
    for case in _cases("09_capstone.confusion_matrix", range(300)):
        preds, targets, k = case.args
        cm = ref(preds, targets, k)
        assert cm.dtype == torch.int64 and cm.shape == (k, k)
        if len(targets) == 0:
            assert int(cm.sum()) == 0
            continue
        oracle = sk_confusion_matrix(targets.numpy(), preds.numpy(), labels=list(range(k)))
        np.testing.assert_array_equal(cm.numpy(), oracle)
