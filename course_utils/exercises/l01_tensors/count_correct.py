"""count_correct: how many predictions (the argmax of logits (N, C)) equal the labels, as a Python int.

Subtle: ``argmax()`` without ``dim`` is one index into the flattened batch (a fixed case is
designed so that this answer gives a count no other mistake gives); a ``.float()`` before the
sum gives a float that the comparison would accept as equal to the int.
"""

from __future__ import annotations

import torch

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ...answers.l01_tensors import count_correct
from ._kit import LESSON


# --- reference: imported above from course_utils/answers/l01_tensors.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases
def _cases(r: Rand) -> Case:
    n = r.integer(2, 9)
    c = r.choice([k for k in range(2, 6) if k != n])
    return Case((r.randn(n, c), r.randint(0, c, (n,))))


_FLAT_LABEL = "5 predictions over 3 classes"
# Designed evidence for argmax without dim: the flat argmax is 2 (row 0, column 2) and three
# labels are 2, so that answer counts 3. The right count is 1, the wrong ones 4, the fraction
# 0.2, and argmax(dim=0) (3 values against 5 labels) cannot broadcast: 3 means flat argmax.
_FLAT_CASE = (torch.tensor([[0.0, 1.0, 9.0], [3.0, 1.0, 0.0], [0.0, 4.0, 1.0], [1.0, 0.0, 2.0], [2.0, 5.0, 1.0]]),
              torch.tensor([2, 2, 2, 0, 0]))

_EDGE_CASES = [
    Case(_FLAT_CASE, label=_FLAT_LABEL, show_inputs=True),
    Case((torch.tensor([[2.0, 1.0], [0.0, 3.0], [5.0, -1.0]]), torch.tensor([0, 1, 1])),
         label="three predictions, two right", show_inputs=True),
    # N = C: argmax(dim=0) has the labels' shape; it counts 2, the right count is 3
    Case((torch.tensor([[5.0, 1.0, 0.0], [4.0, 0.0, 1.0], [0.0, 2.0, 3.0]]), torch.tensor([0, 0, 2])),
         label="3 predictions over 3 classes", show_inputs=True),
    Case((torch.tensor([[-0.5, 0.25, 3.0]]), torch.tensor([2])), label="one prediction", show_inputs=True),
    Case((torch.zeros(0, 4), torch.zeros(0, dtype=torch.long)), label="an empty batch (N = 0)"),
    # 1 right out of 41: float32 (1/41) * 41 is 0.99999994, so int(accuracy * N) gives 0
    Case((torch.eye(41)[[0] + [1] * 40], torch.zeros(41, dtype=torch.long)), label="41 predictions, one right"),
    Case((torch.tensor([[-3.0, -1.0], [-2.0, -7.0], [-0.5, -0.25], [-9.0, -8.0]]), torch.tensor([0, 0, 1, 0])),
         label="negative logits, 4 predictions", show_inputs=True),
]


# --- run and probes
def _run(answer, case: Case):
    out = answer(*case.args, **case.kwargs)
    if case.label == _FLAT_LABEL and isinstance(out, int) and not isinstance(out, bool) and out == 3:
        raise Incorrect("flat_argmax")  # 3 only by counting labels == 2 (see the case)
    # the framework's comparison accepts a float equal to an expected int; a fraction (an
    # accuracy) is left to the comparison, which names it
    if isinstance(out, float) and out.is_integer():
        raise Incorrect("float_not_int")
    if isinstance(out, torch.Tensor):
        raise Incorrect("returned_tensor")
    return out  # any other type: the comparison names it ("should be a Python int, not int64")


# --- declaration
register(Exercise(
    lesson=LESSON, name="count_correct",
    title="Count the predictions (argmax of logits (N, C)) that equal labels (N,): a Python int",
    reference=count_correct, cases=_cases, edge_cases=_EDGE_CASES, run=_run,
    mistakes=[
        Mistake("returned_tensor", "Return a Python int, not a tensor: a one-element tensor can be turned "
                              "into a Python number.", lambda z, y: (z.argmax(dim=1) == y).sum(), match_output=False),
        Mistake("wrong_dim", "Your argmax runs down the columns and picks a row per class; a "
                             "prediction belongs to each row, over its classes.",
                lambda z, y: int((z.argmax(dim=0) == y).sum())),
        Mistake("accuracy_not_count", "That is the fraction correct; the exercise asks for the count.",
                lambda z, y: (z.argmax(dim=1) == y).float().mean().item()),
        Mistake("float_not_int", "You returned a float (such as `3.0`); the exercise asks for a "
                                 "Python `int`. Converting to float before summing makes the sum a "
                                 "float: count the booleans themselves.",
                lambda z, y: (z.argmax(dim=1) == y).float().sum().item(), match_output=False),
        # named only on the case designed for it (see _run): any other wrong count (an answer
        # with no argmax at all, say) can equal it by chance
        Mistake("flat_argmax", "`argmax()` without `dim` returns one index into the flattened tensor "
                               "(the position of the largest logit of the whole batch), and you "
                               "counted the labels equal to it. You need one prediction per row.",
                lambda z, y: int((z.argmax() == y).sum()), match_output=False),
    ],
    hints=[
        "What does `argmax` with no dimension return for a (4, 3) tensor: one number, or one per row? And what "
        "type does the colleague's function hand back?",
        "Each row needs its own prediction, so name the dimension the classes live in. Then compare with the "
        "labels element by element, count the matches, and hand back a Python number, not a tensor.",
    ],
))
