"""receptive_field: how many input pixels (one axis) one output pixel of a layer stack sees.

Subtle: a `jump` (the product of the strides so far) scales each later layer's reach, and a
layer's own stride counts only after it; dilation spreads the taps; no layers at all sees 1.
"""

from __future__ import annotations

import math

from course_utils.grading import Case, Exercise, Mistake, Rand, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/08_convolutions.py)
from ...answers.l08_convolutions import receptive_field


# --- cases
def _cases(r: Rand) -> Case:
    layers = []
    for _ in range(r.integer(1, 6)):
        layers.append((r.integer(1, 5), r.integer(1, 3), r.choice([1, 1, 1, 2, 3])))
    return Case((layers,))


# --- wrong answers
def _rf_wrong(kind):
    def rf(layers):
        total, jump = (0 if kind == "start_at_zero" else 1), 1
        for k, s, d in layers:
            if kind == "stride_too_early":
                jump *= s
            dd = 1 if kind == "ignored_dilation" else d
            jj = 1 if kind == "ignored_stride" else jump
            total += (k - 1) * dd * jj
            if kind != "stride_too_early":
                jump *= s
        return total
    return rf


# --- declaration
register(Exercise(
    lesson=LESSON, name="receptive_field",
    title="Receptive field (in input pixels, one axis) of a stack of (kernel_size, stride, dilation) layers",
    reference=receptive_field, cases=_cases, n_random=30,
    # the lesson measures receptive fields with all-ones conv layers and backward(): building a
    # layer draws its initial weights from the global RNG, so a right answer may draw from it
    uses_global_rng=True,
    edge_cases=[
        Case(([],), label="no layers at all", show_inputs=True),
        Case(([(3, 1, 1)],), label="one 3x3 convolution", show_inputs=True),
        Case(([(3, 1, 1), (3, 1, 1), (3, 1, 1)],), label="three 3x3 convolutions", show_inputs=True),
        Case(([(3, 1, 1), (2, 2, 1), (3, 1, 1), (2, 2, 1)],), label="conv, pool, conv, pool (VGG-style)",
             show_inputs=True),
        Case(([(3, 1, 1), (3, 1, 2), (3, 1, 4)],), label="dilations 1, 2, 4", show_inputs=True),
        Case(([(1, 3, 1), (3, 1, 1)],), label="a 1x1 layer with stride 3, larger than its kernel", show_inputs=True),
        Case(([(5, 2, 1), (3, 2, 2), (1, 1, 1)],), label="strides and a dilation", show_inputs=True),
    ],
    mistakes=[
        Mistake("ignored_stride", "After a layer with stride s, neighbouring pixels of its output are s "
                "input pixels apart, so every later kernel tap reaches s times further. Keep track of "
                "that spacing (the product of the strides so far) and scale each layer's growth by it.",
                _rf_wrong("ignored_stride")),
        Mistake("ignored_dilation", "A dilated kernel's taps are d pixels apart, so it "
                "widens the field d times as much as an undilated one.", _rf_wrong("ignored_dilation")),
        Mistake("stride_too_early", "A layer's own stride spaces *its outputs*, not its taps: multiply "
                "the spacing by the stride only after that layer's own growth is added.",
                _rf_wrong("stride_too_early")),
        Mistake("start_at_zero", "Start at 1: with no layers (or only 1x1 kernels) an output pixel "
                "sees exactly one input pixel.", _rf_wrong("start_at_zero")),
        Mistake("product_of_kernels", "Receptive fields do not multiply: each layer adds "
                "to the field, in proportion to its kernel size minus one.",
                lambda layers: math.prod(k for k, _, _ in layers)),
    ],
    hints=[
        "Compare the measurements: what does a second 3x3 add after a 3x3, and what does it add after a pool? "
        "Why would the same kernel widen the field more once the pixels it looks at are further apart?",
        "Walk the layers from the input side with two numbers: the field so far, and how many input pixels apart "
        "the current layer's pixels are. A layer widens the field by its span minus one, counted in those "
        "pixels; then its stride spreads the pixels further apart.",
    ],
))
