"""normalize_rows: divide each row of a matrix by its sum, so that every row sums to 1.

A repair: the notebook shows a colleague's ``x / x.sum(dim=1)``, silently wrong on a square matrix
and an error on any other (``missing_keepdim``). Subtle: the sums without ``keepdim`` broadcast
against the columns; a single row makes dividing by the total sum right; the result must be a new
tensor.
"""

from __future__ import annotations

import torch

from course_utils.grading import Case, Compare, Exercise, Mistake, Rand, register

from ...answers.l01_tensors import normalize_rows
from ._kit import LESSON


# --- reference: imported above from course_utils/answers/l01_tensors.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases
def _cases(r: Rand) -> Case:
    rows = r.integer(1, 6)
    cols = r.choice([c for c in range(2, 8) if c != rows])
    return Case((r.rand(rows, cols) + 0.05,))


_EDGE_CASES = [
    Case((torch.tensor([[1.0, 1.0, 2.0], [3.0, 1.0, 0.0], [2.0, 2.0, 4.0]]),), label="a 3x3 matrix", show_inputs=True),
    # one row: dividing by the total sum is right here, so random cases must not decide
    Case((torch.tensor([[2.0, 6.0, 8.0, 4.0]]),), label="a single row", show_inputs=True),
    # one column: every result is 1; `/ x.sum(dim=1)` broadcasts to (3, 3)
    Case((torch.tensor([[5.0], [0.5], [2.0]]),), label="a single column", show_inputs=True),
    Case((torch.tensor([[1.0, 3.0], [2.0, 2.0], [9.0, 1.0]], dtype=torch.float64),),
         label="a 3x2 float64 matrix (keep its dtype)", show_inputs=True),
    Case((torch.tensor([[1e6, 3e6, 4e6], [2e-3, 5e-3, 3e-3]]),),
         label="rows of very large and very small numbers", show_inputs=True),
]


# --- declaration
register(Exercise(
    lesson=LESSON, name="normalize_rows",
    title="Divide each row by its sum so that every row sums to 1",
    reference=normalize_rows, cases=_cases, edge_cases=_EDGE_CASES,
    compare=Compare(views=True),
    mistakes=[
        Mistake("epsilon_in_denominator", "Your rows sum to a little less than 1: the epsilon added to the "
                "sum changes every value slightly (it shows in float64). The entries are positive, so a row's "
                "sum is never 0 here: divide by the sum itself.",
                lambda x: x / (x.sum(dim=1, keepdim=True) + 1e-6)),
        Mistake("divided_by_max", "You divided each row by its largest value; a row sums to 1 only "
                                  "when it is divided by its sum.",
                lambda x: x / x.max(dim=1, keepdim=True).values),
        Mistake("l2_norm", "You divided by the Euclidean length of each row (L2 norm); rows must "
                "*sum* to 1, so divide by the plain row sums.",
                lambda x: x / x.norm(dim=1, keepdim=True)),
        Mistake("wrong_dim", "You normalised the columns; each row must sum to 1. Which dimension "
                             "does a row's sum run along?",
                lambda x: x / x.sum(dim=0, keepdim=True)),
        # the notebook's colleague: silently wrong on a square matrix, an error on any other
        Mistake("missing_keepdim", "Your row sums have shape (rows,): which dimension of `x` does the division "
                "pair them with? Broadcasting lines shapes up from the right, so each sum meets a *column* "
                "(silently wrong on a square matrix, an error on any other). The sums must keep a place for the "
                "dimension they were summed over.",
                lambda x: x / x.sum(dim=1)),
        Mistake("total_sum", "You divided by the sum of the whole matrix; each row needs its own sum.",
                lambda x: x / x.sum()),
        Mistake("softmax", "Softmax also makes rows sum to one, but it exponentiates first: "
                "divide by the plain row sums.", lambda x: x.softmax(dim=1)),
        Mistake("mutated_input", "An in-place division (`/=`, `div_`) changed the caller's tensor. "
                                 "Return a new tensor.", lambda x: x.div_(x.sum(dim=1, keepdim=True)),
                match_output=False),
    ],
    hints=[
        "The colleague's square matrix has row sums 4 and 8. Look at the printed result: which of the two "
        "was each entry divided by, and which should it have been?",
        "A reduction removes the dimension it sums over, and broadcasting lines shapes up from the right, so "
        "one total per row ends up spread along the columns. For each row to meet its own total, the totals "
        "must keep a size-1 dimension where the summing happened.",
    ],
))
