"""batch_flatten: a batch (N, C, H, W) becomes (N, C*H*W), one row per sample.

A diagnosis from two crashes: the notebook runs a teammate's ``x.view(x.shape[0], -1)`` on a permuted
channels-last batch (``view`` refuses, and advises ``.reshape``) and on a batch a filter emptied
(the -1 cannot be inferred, with ``reshape`` as well); the spec names neither trap nor the fix.

Subtle: ``.view`` refuses a permuted (non-contiguous) batch; ``reshape(N, -1)`` cannot work out
the -1 for an empty batch (N = 0); ``.squeeze()`` and ``.flatten()`` drop the batch dimension.
"""

from __future__ import annotations

import numpy as np
import torch

from course_utils.grading import Case, Exercise, Mistake, Rand, register

from ...answers.l01_tensors import batch_flatten
from ._kit import LESSON


# --- reference: imported above from course_utils/answers/l01_tensors.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases
def _cases(r: Rand) -> Case:
    n, c, h, w = r.integer(1, 5), r.integer(1, 4), r.integer(2, 5), r.integer(2, 5)
    x = r.randn(n, c, h, w)
    if r.integer(0, 1):  # half the cases are non-contiguous, as after a permute
        x = r.randn(n, h, w, c).permute(0, 3, 1, 2)
    return Case((x,))


# (the old permuted case, (2, 4, 3, 1) permuted to (2, 1, 4, 3), could still be viewed
# as (2, 12): its channel dim has size 1. This one cannot.)
_EDGE_CASES = [
    Case((torch.arange(48.0).reshape(2, 2, 4, 3).permute(0, 3, 1, 2),), label="a permuted (non-contiguous) batch"),
    # N = C = 1: `x.squeeze()` would drop the batch dimension too
    Case((torch.arange(12.0).reshape(1, 1, 3, 4),), label="a batch of one single-channel image"),
    # H = W = 1: `.squeeze()` would drop those dims only; C*H*W = C
    Case((torch.arange(6.0).reshape(3, 2, 1, 1),), label="a batch of 3 images of 2x1x1"),
    # integer images: flattening keeps the dtype
    Case((torch.arange(24, dtype=torch.uint8).reshape(2, 3, 2, 2),), label="a batch of uint8 images"),
    # C > 1, H*W > 1, contiguous: channels-last order gives other rows
    Case((torch.arange(2 * 3 * 2 * 2.0).reshape(2, 3, 2, 2),), label="a contiguous (2, 3, 2, 2) batch"),
    # the text's "(N, C, H, W)" includes N = 0 (the last, filtered batch of a dataset)
    Case((torch.zeros(0, 3, 2, 2),), label="an empty batch (N = 0) of 3x2x2 images"),
]


# --- declaration
register(Exercise(
    lesson=LESSON, name="batch_flatten",
    title="Read a teammate's two flatten crashes and flatten every batch (N, C, H, W) to (N, C*H*W)",
    reference=batch_flatten, cases=_cases, edge_cases=_EDGE_CASES,
    mistakes=[
        # first: `view(len(x), -1)` raises the same error on an empty batch, and the
        # permuted case (run first) names it view_non_contiguous before that
        Mistake("reshape_minus_one_empty", "With an empty batch (N = 0), `-1` in `reshape(0, -1)` "
                                           "cannot be worked out (0 times anything is 0), so PyTorch "
                                           "raises. Say which dimensions to merge, or spell the sizes"
                                           " out, instead of asking PyTorch to infer one.",
                lambda x: x.reshape(x.shape[0], -1)),
        Mistake("view_non_contiguous", "`.view` only works when the memory layout allows it; after "
                                       "`permute`/`transpose` it does not. Pick a way of reshaping "
                                       "that copies when it must.",
                # the size is spelled out so that, on the empty batch, this example does not
                # raise reshape's "-1 is ambiguous" error too (an ambiguous error is not named)
                lambda x: x.view(x.shape[0], int(np.prod(x.shape[1:])))),
        Mistake("flatten_all", "You flattened the batch dimension too. Keep dimension 0 as it is and "
                               "merge only the dimensions after it.", lambda x: x.flatten()),
        Mistake("wrong_order", "The batch dimension comes first: the result is (N, C*H*W), "
                "not (C*H*W, N).", lambda x: x.reshape(-1, x.shape[0])),
        Mistake("kept_channels", "Flatten everything after the batch dimension, channels included.",
                lambda x: x.flatten(2)),
    ],
    hints=[
        "What did each crashing batch have that the batch the teammate tried had not: how was its memory laid "
        "out, and how many images did it hold?",
        "Some ways of changing a shape only reinterpret memory and refuse when the strides do not allow it; "
        "asking PyTorch to infer a size from zero elements is ambiguous whatever the layout. A way that says "
        "which dimensions to merge, instead of the sizes, needs neither.",
        "Look up flatten and its start_dim argument (or reshape with every size spelled out).",
    ],
))
