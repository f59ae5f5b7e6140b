"""conv_output_size: the output length of a convolution along one axis.

Subtle: floor, not ceil or round (a window that sticks out is dropped); the dilated span is
`dilation * (kernel_size - 1) + 1`; padding on both sides; an int, not a float from `/`. Thirty
random cases, and fixed ones where each of those slips shows.
"""

from __future__ import annotations

import math
from typing import Any

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/08_convolutions.py)
from ...answers.l08_convolutions import conv_output_size


# --- cases
def _cases(r: Rand) -> Case:
    k, d, s, p = r.integer(1, 7), r.integer(1, 3), r.integer(1, 4), r.integer(0, 4)
    span = d * (k - 1) + 1
    size = r.integer(max(1, span - 2 * p), span + 24)
    return Case((size, k, s, p, d))


EDGE_CASES = [
    Case((28, 3), label="28 pixels, a 3x3 kernel, the defaults", show_inputs=True),
    Case((10, 2, 3), label="stride larger than the kernel", show_inputs=True),
    Case((5, 3, 1, 3), label="padding larger than half the kernel", show_inputs=True),
    Case((9, 3, 1, 0, 2), label="dilation 2", show_inputs=True),
    Case((7, 1, 2), label="a 1x1 kernel with stride 2", show_inputs=True),
    Case((3, 3), label="an output of exactly one pixel", show_inputs=True),
    Case((12, 5, 2, 2, 2), label="stride, padding and dilation together", show_inputs=True),
    Case((11, 3), {"stride": 2, "padding": 1}, label="stride and padding given by name", show_inputs=True),
]


# --- run and probes
def _run(answer: Any, case: Case) -> Any:
    out = answer(*case.args, **case.kwargs)
    if isinstance(out, float):
        raise Incorrect("true_division")
    return out


# --- wrong answers
def _forgot_dilation(n, k, s=1, p=0, d=1):
    return conv_output_size(n, k, s, p)


def _dilation_times_kernel(n, k, s=1, p=0, d=1):
    return (n + 2 * p - d * k) // s + 1


def _ceil(n, k, s=1, p=0, d=1):
    return math.ceil((n + 2 * p - d * (k - 1) - 1) / s) + 1


def _padding_one_side(n, k, s=1, p=0, d=1):
    return (n + p - d * (k - 1) - 1) // s + 1


def _forgot_plus_one(n, k, s=1, p=0, d=1):
    return conv_output_size(n, k, s, p, d) - 1


def _true_division(n, k, s=1, p=0, d=1):
    return (n + 2 * p - d * (k - 1) - 1) / s + 1


# --- declaration
register(Exercise(
    lesson=LESSON, name="conv_output_size",
    title="Output length of a convolution along one axis (size, kernel, stride, padding, dilation)",
    reference=conv_output_size, cases=_cases, edge_cases=EDGE_CASES, n_random=30, run=_run,
    # the lesson measures sizes by running an nn.Conv2d: building one draws its weights from the
    # global RNG, so a right answer that builds a layer may draw from it
    uses_global_rng=True,
    mistakes=[
        Mistake("forgot_dilation", "A dilated kernel spans `dilation * (kernel_size - 1) + 1` pixels, "
                "not `kernel_size`: use that span in the formula.", _forgot_dilation),
        Mistake("dilation_times_kernel", "A dilated kernel spans `dilation * (kernel_size - 1) + 1` "
                "pixels: the gaps sit *between* the taps, so there are `kernel_size - 1` of them, not "
                "`dilation * kernel_size`.", _dilation_times_kernel),
        Mistake("ceil_not_floor", "PyTorch rounds down: a window that would stick out past the "
                "(padded) input is dropped. Use floor division `//` (not `math.ceil` or `round`).", _ceil),
        Mistake("padding_one_side", "`padding` is added on *both* sides: the padded length is "
                "`size + 2 * padding`.", _padding_one_side),
        Mistake("forgot_plus_one", "Count the first window too: the formula ends with `+ 1` "
                "(a 3-pixel input and a 3-pixel kernel give 1 output, not 0).", _forgot_plus_one),
        Mistake("true_division", "You returned a float: `/` always gives one. The size of a tensor dimension "
                "is an int: use floor division `//`.", _true_division, match_output=False),
    ],
    hints=[
        "Take one row of the table: 8 pixels and a 3x3 kernel give 6. Where can the window's first pixel sit? "
        "What changes when the window moves 2 pixels at a time, or when the row gets a border of zeros?",
        "Pad first, then ask how many input pixels a dilated kernel spans. The first position always fits; each "
        "further one needs a whole stride of room, and a window that would stick out past the edge is dropped.",
    ],
))
