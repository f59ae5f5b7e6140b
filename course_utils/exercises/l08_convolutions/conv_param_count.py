"""conv_param_count: the number of parameters of an `nn.Conv2d` (kernel int or (kh, kw), bias, groups).

Subtle: one bias per *output* channel, and only with `bias=True`; with `groups=g` each filter
sees `in_channels // g` channels; a tuple kernel has `kh * kw` taps.
"""

from __future__ import annotations

from course_utils.grading import Case, Exercise, Mistake, Rand, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/08_convolutions.py)
from ...answers.l08_convolutions import conv_param_count


# --- cases
def _cases(r: Rand) -> Case:
    g = r.choice([1, 1, 1, 2, 3, 4])
    c_in, c_out = g * r.integer(1, 8), g * r.integer(1, 8)
    k = r.integer(1, 7) if r.integer(0, 1) else (r.integer(1, 5), r.integer(1, 5))
    return Case((c_in, c_out, k), {"bias": bool(r.integer(0, 1)), "groups": g})


# --- wrong answers
def _kernel_area(k):
    return k * k if isinstance(k, int) else k[0] * k[1]


# --- declaration
register(Exercise(
    lesson=LESSON, name="conv_param_count",
    title="Number of parameters of an nn.Conv2d (kernel int or (kh, kw), bias, groups)",
    reference=conv_param_count, cases=_cases, n_random=30,
    # the text suggests creating the layer and counting: its initialisation draws from the global RNG
    uses_global_rng=True,
    edge_cases=[
        Case((1, 6, 5), label="LeNet's first layer: 1 -> 6 channels, 5x5", show_inputs=True),
        Case((16, 32, 1), label="a 1x1 convolution", show_inputs=True),
        Case((8, 4, 3), {"bias": False}, label="no bias", show_inputs=True),
        Case((3, 10, (3, 5)), label="a non-square 3x5 kernel", show_inputs=True),
        Case((12, 12, 3), {"groups": 12}, label="depthwise: groups = in_channels = out_channels", show_inputs=True),
        Case((6, 9, (2, 1)), {"bias": False, "groups": 3}, label="groups 3, a 2x1 kernel, no bias", show_inputs=True),
    ],
    mistakes=[
        Mistake("forgot_bias", "An `nn.Conv2d` has a bias by default: one per output channel. Add "
                "`out_channels` when `bias` is True.",
                lambda i, o, k, bias=True, groups=1: o * (i // groups) * _kernel_area(k)),
        Mistake("bias_always", "With `bias=False` the layer has no bias: add `out_channels` only when "
                "`bias` is True.",
                lambda i, o, k, bias=True, groups=1: o * (i // groups) * _kernel_area(k) + o),
        Mistake("bias_per_input_channel", "There is one bias per *output* channel (each filter adds "
                "its own number), not per input channel.",
                lambda i, o, k, bias=True, groups=1: o * (i // groups) * _kernel_area(k) + (i if bias else 0)),
        Mistake("ignored_groups", "With `groups=g` each filter sees only `in_channels // g` input "
                "channels: the weight is (out_channels, in_channels // groups, kh, kw).",
                lambda i, o, k, bias=True, groups=1: o * i * _kernel_area(k) + (o if bias else 0)),
        Mistake("forgot_in_channels", "Each filter spans every input channel (of its group): the "
                "weight has shape (out_channels, in_channels // groups, kh, kw).",
                lambda i, o, k, bias=True, groups=1: o * _kernel_area(k) + (o if bias else 0)),
        Mistake("square_kernel_assumed", "A kernel given as `(kh, kw)` has `kh * kw` taps: you used "
                "one side squared.",
                lambda i, o, k, bias=True, groups=1: o * (i // groups) * ((k if isinstance(k, int) else k[0]) ** 2)
                + (o if bias else 0)),
    ],
    hints=[
        "Look at a real layer's weight shape: nn.Conv2d's weight is (out, in // groups, kh, kw); the "
        "bias is (out,).",
        "An int kernel_size means a square kernel; a tuple is (kh, kw). The count is the product of the "
        "weight's dimensions, plus the bias when there is one.",
    ],
))
