"""global_avg_pool: a head that takes any image size, after diagnosing why a Flatten head does not.

The notebook no longer gives the recipe: it shows a teammate's VGG-style head (Flatten, then a
Linear of 32 * 7 * 7 inputs) working at 28x28 and failing at 36x36 with the shape error, and asks
for the step between the feature map and a Linear(C, k) that gives (N, C) at any size, on the same
scale at every size, with every position counting. The decisions: what fixed the size (the
flattened positions), which dims are the positions (2 and 3, not 1), which reduction (the mean:
not the max, not the sum, which grows with H * W), no kept 1x1 dims and no squeezed batch, nothing
that fixes the size again (a 7x7 average-pool kernel, a flatten). The check uses non-square sizes
that are not 7x7, a 1x1 map and a single image.
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
    lesson=LESSON, name="global_avg_pool", title="A head that takes any image size: pool (N, C, H, W) to (N, C)",
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
        "In the error, which size comes from the image and which did the head fix when it was built? What is left "
        "of `(N, C, H, W)` once each channel is one number?",
        "Reduce both spatial dims of each channel at once to one number to which every position contributes and "
        "which does not grow with the number of positions; keep neither as a dim of size 1, and keep the batch dim.",
        "Look up `torch.Tensor.mean` (its `dim` accepts a tuple) or `nn.AdaptiveAvgPool2d`.",
    ],
))
