"""pick_scores: for each row i of scores (N, C), pick scores[i, labels[i]]; the result is (N,).

Subtle: ``scores[:, labels]`` builds an (N, N) grid, not one score per row;
``gather`` keeps the gathered dimension and ``.squeeze()`` without a dim breaks N = 1.
"""

from __future__ import annotations

import torch

from course_utils.grading import Case, Exercise, Mistake, Rand, register

from .._references.l01_tensors import pick_scores
from ._kit import LESSON


# --- reference: imported above from _references/l01_tensors.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases
def _cases(r: Rand) -> Case:
    n = r.integer(2, 7)
    c = r.choice([k for k in range(2, 8) if k != n])
    return Case((r.randn(n, c), r.randint(0, c, (n,))))


_EDGE_CASES = [
    Case((torch.tensor([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]]), torch.tensor([1, 0, 0])),
         label="three rows, two classes", show_inputs=True),
    # N = 1: `.squeeze()` without a dim returns a 0-d tensor
    Case((torch.tensor([[0.5, -1.0, 2.0, 0.25]]), torch.tensor([1])), label="a single row", show_inputs=True),
    # duplicate labels, the last class never used (one_hot without num_classes)
    Case((torch.tensor([[1.0, 2.0, 3.0, 4.0], [-1.0, -2.0, -3.0, -4.0],
                        [0.5, 0.6, 0.7, 0.8], [9.0, 8.0, 7.0, 6.0]]), torch.tensor([0, 2, 2, 0])),
         label="repeated labels, last class unused", show_inputs=True),
    # N = C: scores[labels] and scores[:, labels] keep the right number of elements
    Case((torch.tensor([[0.1, 0.2, 0.3], [1.0, 2.0, 3.0], [-5.0, 5.0, 0.0]], dtype=torch.float64),
          torch.tensor([2, 0, 1])), label="3 rows, 3 classes, float64 scores", show_inputs=True),
]


# --- declaration
register(Exercise(
    lesson=LESSON, name="pick_scores",
    title="For each row i of scores (N, C), pick scores[i, labels[i]]: shape (N,)",
    reference=pick_scores, cases=_cases, edge_cases=_EDGE_CASES,
    mistakes=[
        Mistake("index_grid", "`scores[:, labels]` takes every label's column for every row (an "
                "(N, N) grid). Pair row i with labels[i]: `scores[torch.arange(N), labels]`.",
                lambda s, y: s[:, y]),
        Mistake("forgot_squeeze", "`gather` keeps the gathered dimension: (N, 1). Remove it with "
                "`.squeeze(1)`.", lambda s, y: s.gather(1, y.unsqueeze(1))),
        Mistake("took_max", "You took each row's largest score; the exercise asks for the score "
                "of the row's label.", lambda s, y: s.max(dim=1).values),
        Mistake("gather_dim0", "`gather` along `dim=0` picks rows; the labels index columns (`dim=1`).",
                lambda s, y: s.gather(0, y.unsqueeze(0)).squeeze(0)),
    ],
    hints=[
        "Each row needs one column, chosen by that row's label.",
        "Advanced indexing with two index tensors pairs them up: `scores[rows, labels]` with "
        "`rows = torch.arange(len(labels))`.",
        "Or `scores.gather(1, labels.unsqueeze(1)).squeeze(1)`.",
    ],
))
