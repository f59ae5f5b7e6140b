"""celsius_to_fahrenheit: F = C × 9/5 + 32 on a tensor of any shape and dtype.

A gentle repair, the course's first exercise: the notebook runs a colleague's ``c * (9 // 5) + 32``
(right at 0 °C, 132 °F at 100 °C) and the learner finds the integer division (``integer_division``);
moving the parenthesis to ``c * 9 // 5 + 32`` floors the result (``floor_division``). Also subtle:
a loop over ``.tolist()`` or ``.item()`` breaks on 2-D and 0-d tensors, ``.float()`` breaks float64,
an in-place ``mul_`` changes the caller's tensor, and a result that requires grad turns data into a
parameter.
"""

from __future__ import annotations

import torch

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ...answers.l00_start_here import celsius_to_fahrenheit
from ._kit import LESSON


# --- reference: imported above from course_utils/answers/l00_start_here.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases
def _cases(r: Rand) -> Case:
    return Case((r.randn(r.integer(1, 6), r.integer(1, 6)) * 30,))


# --- run and probes
def _run(answer, case: Case):
    out = answer(*case.args, **case.kwargs)
    if isinstance(out, torch.Tensor) and out.requires_grad and not case.args[0].requires_grad:
        raise Incorrect("requires_grad")
    return out


# --- wrong answers
def _requires_grad(c):
    return celsius_to_fahrenheit(c).requires_grad_()


# --- declaration
register(
    Exercise(
        lesson=LESSON,
        name="celsius_to_fahrenheit",
        title="Convert a tensor of temperatures from Celsius to Fahrenheit",
        reference=celsius_to_fahrenheit,
        cases=_cases,
        run=_run,
        edge_cases=[
            Case((torch.tensor([0.0, 100.0, -40.0]),), label="freezing, boiling and -40", show_inputs=True),
            Case((torch.zeros(0),), label="an empty tensor"),
            # "a tensor of temperatures": any shape and dtype; loops over `.tolist()` or `.item()`
            # break on 2-D and 0-d tensors, `.float()` breaks float64
            Case((torch.tensor([[20.0, 37.0], [-10.0, 15.5]]),), label="a 2x2 tensor", show_inputs=True),
            Case((torch.tensor(25.0),), label="a 0-d tensor (one temperature)", show_inputs=True),
            Case((torch.tensor([36.6, -273.15, 1000.0], dtype=torch.float64),), label="a float64 tensor",
                 show_inputs=True),
        ],
        mistakes=[
            # the notebook's colleague: 9 // 5 is 1, so the temperatures only move by 32
            Mistake("integer_division", "Your result is C + 32: the temperatures were multiplied by 1. What is "
                    "`9 // 5` in Python, and which of Python's two divisions keeps the fraction?",
                    lambda c: c * (9 // 5) + 32),
            Mistake("floor_division", "Your temperatures are rounded down to whole degrees: `//` rounds down "
                    "whatever it divides. Which division keeps the fraction?",
                    lambda c: c * 9 // 5 + 32),
            Mistake("inverted_ratio", "You multiplied by 5/9; Celsius to Fahrenheit multiplies by 9/5.",
                    lambda c: c * 5 / 9 + 32),
            Mistake("offset_first", "The +32 comes after scaling: F = C × 9/5 + 32.",
                    lambda c: (c + 32) * 9 / 5),
            Mistake("forgot_offset", "You scaled but forgot to add 32.", lambda c: c * 9 / 5),
            Mistake("reversed_conversion", "That is Fahrenheit to Celsius, (F − 32) × 5/9; this exercise "
                    "goes the other way: F = C × 9/5 + 32.", lambda c: (c - 32) * 5 / 9),
            # the text is true of both ways a learner mutates `c`: augmented assignment (`c *= 1.8`)
            # and the methods ending in `_` (`c.mul_(1.8)`) both write into the caller's tensor
            Mistake("mutated_input", "Your function changed the tensor it was given: the caller's temperatures "
                    "are now Fahrenheit too. On a tensor, `c *= 9 / 5` and `c += 32` write into `c` itself, "
                    "as do the methods ending in `_` (`c.mul_(...)`, `c.add_(...)`); `c * 9 / 5 + 32` computes "
                    "a new tensor and leaves `c` as it was.",
                    lambda c: c.mul_(9 / 5).add_(32), match_output=False),
            Mistake("requires_grad", "Your result requires grad although the temperatures do not: a conversion "
                    "is data, not a parameter. Drop the `requires_grad_()` (or `requires_grad=True`).",
                    _requires_grad, match_output=False),
        ],
        # tolerance: c * 9 / 5 + 32, c * 1.8 + 32 and (9 * c + 160) / 5 differ by a few float32
        # ulp (1.8 is not exact in binary); assert_close's float defaults (rtol 1.3e-6) cover them
        hints=[
            "Freezing comes out right, so the + 32 is fine. By what number does the colleague's function "
            "really multiply the temperatures?",
            "Python has two divisions: one keeps the fraction (9 divided by 5 is 1.8), the other rounds down to "
            "a whole number (1). The factor needs the one that keeps the fraction; a tensor then takes it "
            "element by element, so no loop is needed.",
        ],
    )
)
