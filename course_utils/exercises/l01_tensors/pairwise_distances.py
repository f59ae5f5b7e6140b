"""pairwise_distances: Euclidean distances between every row of a (N, D) and every row of b (M, D).

Subtle: the pairing must come from broadcasting, (N, 1, D) against (1, M, D), not from Python
loops (a probe reads the answer's code: in the grader, compiled from the notebook's text);
square inputs (N = M) hide a transposed result.
"""

from __future__ import annotations

import torch

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, reads_code_only, register

from .._source_rules import python_loop
from ...answers.l01_tensors import pairwise_distances
from ._kit import LESSON

_RULE = "No Python loops: give the two tensors shapes that broadcast."


# --- reference: imported above from course_utils/answers/l01_tensors.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases
def _cases(r: Rand) -> Case:
    n, m = r.integer(1, 6), r.integer(1, 6)
    d = r.choice([k for k in range(1, 6) if k not in (n, m)] or [7])
    return Case((r.randn(n, d), r.randn(m, d)))


_EDGE_CASES = [
    Case((torch.tensor([[0.0, 0.0], [3.0, 4.0]]), torch.tensor([[0.0, 0.0], [6.0, 8.0], [3.0, 0.0]])),
         label="points (0,0), (3,4) against (0,0), (6,8), (3,0)", show_inputs=True),
    # N = M = 1 and D = 1: transposes and wrong sum dims have the right shape here
    Case((torch.tensor([[2.0]]), torch.tensor([[-1.5]])), label="one 1-D point against one", show_inputs=True),
    # N = M: (M, N) has the right shape; duplicate points are at distance 0
    Case((torch.tensor([[1.0, 2.0, 2.0], [0.0, 0.0, 0.0], [1.0, 2.0, 2.0]]),
          torch.tensor([[1.0, 2.0, 2.0], [4.0, 0.0, 3.0], [-2.0, -1.0, 0.0]])),
         label="3 points against 3, with duplicates", show_inputs=True),
    # negative coordinates: a difference's sign must not matter
    Case((torch.tensor([[1.0, -2.0], [-3.0, 4.0]]), torch.tensor([[0.5, 0.5], [-1.0, 2.0], [10.0, -10.0]])),
         label="negative coordinates", show_inputs=True),
]


# --- run and probes
@reads_code_only  # the grader's judge runs it on the notebook's text
def _no_loops(answer, r: Rand) -> None:
    kind = python_loop(answer)
    if kind is not None:
        raise Incorrect("python_loop", kind=kind)


# --- wrong answers
def _loops(a, b):
    out = torch.zeros(len(a), len(b))
    for i in range(len(a)):
        for j in range(len(b)):
            out[i, j] = torch.sqrt(((a[i] - b[j]) ** 2).sum())
    return out


# --- declaration
register(Exercise(
    lesson=LESSON, name="pairwise_distances",
    title="Euclidean distances between every row of a (N, D) and every row of b (M, D): (N, M)",
    reference=pairwise_distances, cases=_cases, edge_cases=_EDGE_CASES,
    # |a-b|^2 computed as |a|^2 + |b|^2 - 2 a.b (a valid answer, and cdist's method on big
    # inputs) loses about eps32 * (|a|^2 + |b|^2) ~ 1e-6 absolutely before the square root;
    # on the generator's points (|a|^2 <= ~40, distances >= ~0.05 apart or exactly equal)
    # that is <= 1e-4 after it. Every listed mistake is off by >= 0.1.
    compare=Compare(rtol=1e-4, atol=1e-4),
    probes=[_no_loops],
    mistakes=[
        Mistake("squared", "Those are squared distances: take the square root at the end.",
                lambda a, b: (a[:, None, :] - b[None, :, :]).pow(2).sum(-1)),
        Mistake("transposed", "Rows of the result belong to `a` and columns to `b`: (N, M), not (M, N).",
                lambda a, b: pairwise_distances(b, a)),
        Mistake("manhattan", "You summed absolute differences (Manhattan distance); Euclidean is "
                "the square root of the sum of squares.",
                lambda a, b: (a[:, None, :] - b[None, :, :]).abs().sum(-1)),
        Mistake("wrong_sum_dim", "Your differences form an (N, M, D) tensor: the distance sums over "
                                 "the coordinates (the last dimension), not over the points.",
                lambda a, b: (a[:, None, :] - b[None, :, :]).pow(2).sum(0).sqrt()),
        Mistake("python_loop", f"The exercise says: “{_RULE}” Your `pairwise_distances` loops in Python "
                "(`{kind}`). Let broadcasting do the pairing instead.", _loops, match_output=False),
    ],
    hints=[
        "You need every row of `a` against every row of `b`: a difference for each (i, j) pair, as an (N,"
        " M, D) tensor, before reducing over D.",
        "Insert a size-1 dimension into each input in a different place so that broadcasting pairs every "
        "i with every j; then the Euclidean distance over the last dimension.",
    ],
))
