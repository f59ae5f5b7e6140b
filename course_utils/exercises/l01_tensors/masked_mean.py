"""masked_mean: the mean of each row of x over the positions where mask is True (0 for an empty row).

Subtle: ``x[mask]`` flattens every row into one; a row with nothing selected gives 0/0 = NaN
unless the count is clamped or ``torch.where`` picks 0 for it.
"""

from __future__ import annotations

import torch

from course_utils.grading import Case, Exercise, Mistake, Rand, register

from ...answers.l01_tensors import masked_mean
from ._kit import LESSON


# --- reference: imported above from course_utils/answers/l01_tensors.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases
def _cases(r: Rand) -> Case:
    rows, cols = r.integer(2, 6), r.integer(2, 7)
    mask = r.rand(rows, cols) < 0.5
    mask[r.integer(0, rows - 1)] = False  # always one row with nothing to average
    mask[r.integer(0, rows - 1), r.integer(0, cols - 1)] = True
    return Case((r.randn(rows, cols), mask))


_EDGE_CASES = [
    # 4 columns, 2 selected: dividing by (count + 1) must not look like dividing by the row length
    Case((torch.tensor([[1.0, 2.0, 3.0, 4.0], [4.0, 5.0, 6.0, 7.0]]),
          torch.tensor([[True, False, True, False], [False, False, False, False]])),
         label="a row with nothing selected", show_inputs=True),
    Case((torch.tensor([[-2.0, 5.0, 0.5]]), torch.tensor([[True, True, True]])),
         label="a single row, everything selected", show_inputs=True),
    Case((torch.tensor([[1.0, -3.0], [2.0, 8.0]]), torch.zeros(2, 2, dtype=torch.bool)),
         label="nothing selected anywhere", show_inputs=True),
    # square: a per-column answer has the right shape here
    Case((torch.tensor([[1.0, 2.0, 9.0], [-4.0, 0.5, 3.0], [6.0, -1.0, 2.0]]),
          torch.tensor([[True, False, True], [False, True, False], [True, True, True]])),
         label="a 3x3 x with one selected value in a row", show_inputs=True),
    Case((torch.tensor([[7.0], [-2.0]]), torch.tensor([[True], [False]])), label="a single column", show_inputs=True),
    Case((torch.tensor([[1.0, 2.0], [3.0, 5.0]], dtype=torch.float64), torch.tensor([[True, True], [False, True]])),
         label="a float64 x (keep its dtype)", show_inputs=True),
]


# --- declaration
register(Exercise(
    lesson=LESSON, name="masked_mean",
    title="Mean of each row of x over the positions where mask is True (0 for empty rows)",
    reference=masked_mean, cases=_cases, edge_cases=_EDGE_CASES,
    mistakes=[
        Mistake("flattened_mask", "`x[mask]` collects the selected values of *all* rows into one 1-D "
                                  "tensor, so its mean is a single number for the whole matrix. "
                                  "Average each row on its own: keep the (R, C) shape and neutralise "
                                  "the positions the mask leaves out.",
                lambda x, m: x[m].mean()),
        Mistake("ignored_mask", "You averaged every element; only positions where `mask` is True count.",
                lambda x, m: x.mean(dim=1)),
        Mistake("divided_by_all", "You zeroed the masked-out values but divided by the full row "
                "length; divide by the number of True positions.", lambda x, m: (x * m).mean(dim=1)),
        Mistake("nan_on_empty_rows", "A row with no True position gives 0/0 = NaN. Such rows must "
                                     "give 0: make sure no row divides by a zero count (or choose the"
                                     " result row by row).",
                lambda x, m: (x * m).sum(dim=1) / m.sum(dim=1)),
        Mistake("wrong_dim", "Average along each row, not down the columns.",
                lambda x, m: (x * m).sum(dim=0) / m.sum(dim=0).clamp(min=1)),
    ],
    hints=[
        "A mean is a sum divided by a count; here both are taken only over the selected positions of each"
        " row.",
        "Zero out what the mask does not select before summing; count the selected positions per row. A "
        "row with no selected position must not divide by zero: what is its sum anyway?",
    ],
))
