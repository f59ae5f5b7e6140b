"""pick_scores: scores (..., C) with one score per class in the last dimension, labels (...):
the score of each position's label, in the shape of ``labels``.

The learner decides the dimension to pick along (the last one, whatever the rank) and how to
shape the index for it: a classifier's (N, C) and a language model's (B, T, V) share one answer.
Subtle: ``scores[torch.arange(N), labels]`` only fits the 2-D case; ``gather(1, ...)`` picks along
T for a (B, T, V) tensor; ``.squeeze()`` without a dim breaks N = 1 (and T = 1).
"""

from __future__ import annotations

import torch

from course_utils.grading import Case, Exercise, Mistake, Rand, register

from ...answers.l01_tensors import pick_scores
from ._kit import LESSON


# --- reference: imported above from course_utils/answers/l01_tensors.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases
def _cases(r: Rand) -> Case:
    c = r.integer(2, 7)
    lead = r.choice([(r.integer(2, 7),), (r.integer(2, 4), r.integer(2, 5)), (2, r.integer(1, 3), 3)])
    # no leading size equal to C: an index grid then has a shape of its own
    lead = tuple(n if n != c else n + 1 for n in lead)
    return Case((r.randn(*lead, c), r.randint(0, c, lead)))


_EDGE_CASES = [
    Case((torch.tensor([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]]), torch.tensor([1, 0, 0])),
         label="a classifier: three rows, two classes", show_inputs=True),
    # N = 1: `.squeeze()` without a dim returns a 0-d tensor
    Case((torch.tensor([[0.5, -1.0, 2.0, 0.25]]), torch.tensor([1])), label="a single row", show_inputs=True),
    # a language model's (B, T, V): picking along dim 1 takes another position's score
    Case((torch.tensor([[[0.1, 0.2, 0.3], [1.0, 2.0, 3.0]],
                        [[-1.0, -2.0, -3.0], [4.0, 5.0, 6.0]]]), torch.tensor([[2, 0], [1, 1]])),
         label="a language model: 2 sequences of 2 positions, 3 words", show_inputs=True),
    # B = T = 1: `.squeeze()` without a dim drops them both
    Case((torch.tensor([[[0.5, 1.5, -0.5, 2.5]]], dtype=torch.float64), torch.tensor([[3]])),
         label="one sequence of one position, float64 scores", show_inputs=True),
    # repeated labels, the last class never used (one_hot without num_classes)
    Case((torch.tensor([[1.0, 2.0, 3.0, 4.0], [-1.0, -2.0, -3.0, -4.0],
                        [0.5, 0.6, 0.7, 0.8], [9.0, 8.0, 7.0, 6.0]]), torch.tensor([0, 2, 2, 0])),
         label="repeated labels, last class unused", show_inputs=True),
]


# --- wrong answers
def _arange_rows(s, y):
    return s[torch.arange(len(y)), y]


# --- declaration
register(Exercise(
    lesson=LESSON, name="pick_scores",
    title="The score of each position's label: scores (..., C), labels (...) -> (...)",
    reference=pick_scores, cases=_cases, edge_cases=_EDGE_CASES,
    mistakes=[
        Mistake("index_grid", "Indexing one dimension with the whole `labels` tensor gives every row every "
                "label's column (a grid), not one score per position. The label of position i must be "
                "paired with position i.", lambda s, y: s[:, y]),
        Mistake("forgot_squeeze", "Your result keeps the dimension you picked along (size 1), so it has one "
                "dimension too many: the result has the shape of `labels`.",
                lambda s, y: s.gather(-1, y.unsqueeze(-1))),
        Mistake("took_max", "You took each position's largest score; the exercise asks for the score "
                "of the position's label.", lambda s, y: s.max(dim=-1).values),
        Mistake("gather_dim0", "You picked along the first dimension, which counts the samples; the labels "
                "name classes, and the classes are the last dimension.",
                lambda s, y: s.gather(0, y.unsqueeze(0)).squeeze(0)),
        Mistake("gather_dim1", "You picked along dimension 1. For an (N, C) classifier that is the class "
                "dimension, but for a language model's (B, T, V) it is the position T: the classes are "
                "always the *last* dimension.", lambda s, y: s.gather(1, y.unsqueeze(1)).squeeze(1)),
        Mistake("rows_only", "Pairing `torch.arange(N)` with `labels` works for a 2-D `scores` only; here "
                "`scores` has more leading dimensions (a language model's (B, T, V)), and every one of "
                "them must be paired with the labels' own.", _arange_rows),
    ],
    hints=[
        "For every position you need one element, chosen by that position's label, from the last "
        "dimension. Which dimension does the label index, and which dimensions just come along?",
        "`gather` picks along one dimension you name, with an index tensor of the same number of "
        "dimensions as the input. The labels have one dimension fewer: make room for it, then take it "
        "away again, naming the dimension each time so that sizes of 1 elsewhere survive.",
    ],
))
