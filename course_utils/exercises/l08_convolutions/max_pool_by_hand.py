"""max_pool_by_hand: 2-D max-pooling without the built-in (no padding; stride defaults to the kernel).

Subtle: the default stride is the kernel size; windows that do not fit are dropped (floor);
all-negative windows (a maximum that starts at 0 fails them); each channel on its own; the rule
is ``Exercise.forbid``: the framework watches every torch function the answer calls.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from course_utils.grading import Case, Exercise, Mistake, Rand, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/08_convolutions.py)
from ...answers.l08_convolutions import max_pool_by_hand

_POOL_OPS = r"re:max_pool|max_unpool|fractional_max|lp_pool"  # lp_pool2d with p=inf is max_pool2d inside


# --- cases
def _cases(r: Rand) -> Case:
    n, c = r.integer(1, 3), r.integer(1, 4)
    k = r.integer(1, 3)
    stride = r.choice([None, None, 1, 2, 3])
    h = r.integer(k, 9)
    w = r.choice([v for v in range(k, 10) if v != h] or [h])
    x = r.randn(n, c, h, w)
    if r.integer(0, 2) == 0:
        x = r.randn(n, h, w, c).permute(0, 3, 1, 2)
    return Case((x, k, stride))


def _fixed_pool(seed, shape, k, stride=None, negative=False, channels_last=False, label=""):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g)
    if channels_last:
        n, c, h, w = shape
        x = torch.randn(n, h, w, c, generator=g).permute(0, 3, 1, 2)
    if negative:
        x = -x.abs() - 0.1
    args = (x, k) if stride is None else (x, k, stride)
    return Case(args, label=label)


# --- wrong answers
def _builtin(x, kernel_size, stride=None):
    return F.max_pool2d(x, kernel_size, stride)


def _pool_variant(default_stride=None, reduce="max", ceil=False, zero_start=False):
    def pool(x, kernel_size, stride=None):
        k = kernel_size
        s = (k if default_stride is None else default_stride) if stride is None else stride
        n, c, h, w = x.shape
        h_out = -(-(h - k) // s) + 1 if ceil else (h - k) // s + 1
        w_out = -(-(w - k) // s) + 1 if ceil else (w - k) // s + 1
        out = torch.zeros(n, c, h_out, w_out) if zero_start else torch.full((n, c, h_out, w_out), -math.inf)
        out = out.to(x.dtype)
        for i in range(h_out):
            for j in range(w_out):
                win = x[:, :, i * s:i * s + k, j * s:j * s + k]
                if reduce == "max":
                    val = win.amax(dim=(-2, -1))
                elif reduce == "mean":
                    val = win.mean(dim=(-2, -1))
                else:  # over the channels too
                    val = win.amax(dim=(1, 2, 3)).unsqueeze(1).expand(n, c)
                out[:, :, i, j] = torch.maximum(out[:, :, i, j], val)
        return out
    return pool


# --- declaration
register(Exercise(
    lesson=LESSON, name="max_pool_by_hand",
    title="2-D max-pooling by hand (no padding; stride defaults to the kernel size)",
    reference=max_pool_by_hand, cases=_cases,
    forbid=(_POOL_OPS,), rule_mistake="used_builtin_pool",
    edge_cases=[
        _fixed_pool(1, (1, 1, 4, 4), 2, label="one 4x4 image, 2x2 windows, default stride"),
        _fixed_pool(2, (2, 3, 7, 5), 2, label="odd sizes: the last row/column does not fit a window"),
        _fixed_pool(3, (1, 2, 8, 9), 2, 3, label="stride 3, larger than the 2x2 window"),
        _fixed_pool(4, (2, 2, 5, 6), 3, 1, label="overlapping windows (stride 1)"),
        _fixed_pool(5, (1, 3, 3, 4), 1, label="a 1x1 window"),
        _fixed_pool(6, (2, 2, 6, 4), 2, negative=True, label="every value negative"),
        _fixed_pool(7, (2, 3, 6, 5), 2, channels_last=True, label="a non-contiguous input (channels-last memory)"),
    ],
    timeout=10.0,
    mistakes=[
        Mistake("used_builtin_pool",
                "The task says: “without `F.max_pool2d` or `nn.MaxPool2d`”. Your code called a built-in "
                "max-pool (`{op}`). Take the maximum of each window yourself: loops, or "
                "`x.unfold(2, k, s).unfold(3, k, s)` then `amax`.",
                _builtin, match_output=False),
        Mistake("default_stride_one", "`nn.MaxPool2d(k)` moves by `k` when no stride is given (the "
                "windows do not overlap): `stride = kernel_size if stride is None else stride`.",
                _pool_variant(default_stride=1)),
        Mistake("average_pool", "You averaged each window; max-pooling keeps the largest value.",
                _pool_variant(reduce="mean")),
        Mistake("pooled_across_channels", "Pool each channel on its own: take the maximum over the "
                "window's rows and columns only, not over the channels.", _pool_variant(reduce="channels")),
        Mistake("ceil_mode", "A window that does not fit entirely inside the input is dropped (floor, "
                "like `conv_output_size`): the output is `(size - k) // stride + 1` long.",
                _pool_variant(ceil=True)),
        Mistake("zero_start", "Windows whose values are all negative came out as 0: your maximum "
                "also compares with 0 (a running maximum that starts at 0, or a ReLU/clamp). Start "
                "from the window itself (`amax`) or from `-inf`.",
                _pool_variant(zero_start=True)),
    ],
    hints=[
        "How many windows fit along each axis? Without a stride, the stride equals the kernel size.",
        "Window (i, j) starts at i·s, j·s and is k by k; take its maximum over the last two dims (read "
        "about amax). Tensor.unfold along dims 2 and 3 gives all windows at once.",
    ],
))
