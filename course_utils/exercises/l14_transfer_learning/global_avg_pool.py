"""global_avg_pool: (N, C, H, W) -> (N, C), each channel's mean over all positions, any H and W.

Subtle: which dims (2 and 3, not 1), mean not max, no kept 1x1 dims, nothing that fixes the
size (a 7x7 average-pool kernel, a Linear's flattened size); the check uses non-square sizes
that are not 7x7, and a 1x1 map.
"""

from __future__ import annotations

import torch.nn.functional as F

from course_utils.grading import Case, Exercise, Mistake, Rand, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/14_transfer_learning.py)
from ...answers.l14_transfer_learning import global_avg_pool


# --- cases
def _cases(r: Rand) -> Case:
    n, c = r.integer(1, 4), r.integer(2, 6)
    h = r.choice([v for v in range(2, 9) if v not in (n, c)])
    w = r.choice([v for v in range(2, 9) if v not in (n, c, h)])
    return Case((r.randn(n, c, h, w) + 0.5,))


EDGE_CASES = [
    Case((Rand(1).randn(2, 3, 5, 4) + 1.0,), label="a 5x4 feature map", show_inputs=True),
    Case((Rand(2).randn(3, 4, 1, 1),), label="a 1x1 feature map"),
    Case((Rand(3).randn(2, 3, 7, 7) * 2,), label="the usual 7x7"),
    Case((Rand(4).randn(1, 3, 2, 5) + 0.5,), label="one image (N = 1)"),
]


# --- wrong answers
def _wrong_dims(x):
    return x.mean(dim=(1, 2))


def _max(x):
    return x.amax(dim=(2, 3))


def _flatten(x):
    return x.flatten(1)


def _keepdim(x):
    return x.mean(dim=(2, 3), keepdim=True)


def _fixed_kernel(x):
    return F.avg_pool2d(x, kernel_size=min(7, x.shape[-2], x.shape[-1])).flatten(1)


def _height_only(x):
    return x.mean(dim=2)


def _summed(x):
    return x.sum(dim=(2, 3))


def _squeezed(x):
    return F.adaptive_avg_pool2d(x, 1).squeeze()


# --- declaration
register(Exercise(
    lesson=LESSON, name="global_avg_pool", title="Global average pooling: (N, C, H, W) to (N, C), any size",
    reference=global_avg_pool, cases=_cases, edge_cases=EDGE_CASES,
    mistakes=[
        Mistake("wrong_dims", "You averaged over dims (1, 2): channels and height. Each channel keeps its own "
                "number: average over the positions, height and width (dims 2 and 3).", _wrong_dims),
        Mistake("max_not_mean", "You took each channel's maximum (global max pooling). ResNet's head averages: "
                "every position contributes, and the gradient reaches all of them.", _max),
        Mistake("flattened", "You flattened `(C, H, W)` into `C*H*W` numbers, as VGG did: the head's size then "
                "depends on the image size. Average each channel over its positions instead.", _flatten),
        Mistake("kept_dims", "Your result keeps two dims of size 1, `(N, C, 1, 1)` (as `nn.AdaptiveAvgPool2d(1)` "
                "gives): the `Linear` after it needs `(N, C)`. Flatten them, or do not keep them.", _keepdim),
        Mistake("fixed_kernel", "You average over a fixed window (an average pool with a 7x7 kernel?): on a map "
                "of another size that is not one number per channel. Average over all of H and W, whatever they "
                "are.", _fixed_kernel),
        Mistake("summed", "You summed each channel over its positions; the pool takes their mean (the sum "
                "grows with H * W, so a bigger image gives bigger features). Divide by the number of positions, "
                "or use `.mean`.", _summed),
        Mistake("squeezed_batch", "`.squeeze()` drops every dim of size 1, the batch's too: one image gives `(C,)` "
                "instead of `(1, C)`. Squeeze or flatten only the spatial dims (`.flatten(1)`, "
                "`.squeeze(-1).squeeze(-1)`).", _squeezed),
        Mistake("height_only", "You averaged over the height only: `(N, C, W)`. Average over both spatial dims.",
                _height_only),
    ],
    hints=[
        "Which dims of `(N, C, H, W)` are the positions, the ones to average away?",
        "One mean per channel of each image, over every position: reduce both spatial dims in one go, whatever their "
        "sizes, and keep neither as a dim of size 1.",
        "Look up `torch.Tensor.mean`: its `dim` accepts a tuple of dims.",
    ],
))
