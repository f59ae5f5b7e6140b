"""Exercises of 08_convolutions: output sizes, a convolution and a max-pool by hand, parameter
counts, receptive fields, and a small VGG-style network to a spec.

Rules the lesson states ("without `F.conv2d` / `nn.Conv2d`", "without `F.max_pool2d` /
`nn.MaxPool2d`") are enforced with a ``TorchFunctionMode`` that sees every torch function the
answer calls: however the built-in is reached (``F.conv2d``, ``torch.conv2d``, an imported
alias, ``nn.Conv2d``, ``torch.ops.aten.convolution``), it arrives there by a convolution or
pooling name, and the check fails with a message quoting the rule. (A ``TorchDispatchMode``
would see ATen ops too, but under it ``F.pad`` imports ``torch._dynamo``: 3-10 s on a first
check.) A learner's ``try/except`` around the
forbidden call cannot hide it: the mode records the call as well as stopping it.
"""

from __future__ import annotations

import copy
import math
import re
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import TorchFunctionMode

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register

LESSON = "08_convolutions"


# --------------------------------------------------------------------------- forbidden ops
class _Forbid(TorchFunctionMode):
    """Record (and stop) every torch function whose name matches ``pattern``."""

    def __init__(self, pattern: str):
        super().__init__()
        self.pattern = re.compile(pattern)
        self.hit: str | None = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = str(getattr(func, "__name__", "") or "")
        if self.pattern.search(name):
            self.hit = self.hit or name
            raise RuntimeError(f"forbidden call: {name}")
        return func(*args, **(kwargs or {}))


_CONV_OPS = r"conv(?!ert)"            # convolution, _convolution, conv2d, slow_conv2d, mkldnn_convolution...
_POOL_OPS = r"max_pool|max_unpool|fractional_max"

_CONV_RULE = ("The task says: “compute it without `F.conv2d`, `nn.Conv2d` or any other built-in "
              "convolution”. Your code called one (`{op}`). Build the "
              "output from patches of the input: loops over the output positions, or `F.unfold` "
              "and a matrix product.")
_POOL_RULE = ("The task says: “without `F.max_pool2d` or `nn.MaxPool2d`”. Your code called a "
              "built-in max-pool (`{op}`). Take the maximum of each "
              "window yourself: loops, or `x.unfold(2, k, s).unfold(3, k, s)` then `amax`.")


def _run_forbidding(pattern: str, rule_id: str, rule: str):
    def run(answer: Any, case: Case) -> Any:
        mode = _Forbid(pattern)
        try:
            with mode:
                out = answer(*case.args, **case.kwargs)
        except Exception:
            if mode.hit:
                raise Incorrect(rule_id, rule.format(op=mode.hit)) from None
            raise
        if mode.hit:  # the learner caught our error and carried on
            raise Incorrect(rule_id, rule.format(op=mode.hit))
        return out
    return run


# --------------------------------------------------------------------------- 1. conv_output_size
def conv_output_size(size, kernel_size, stride=1, padding=0, dilation=1):
    return (size + 2 * padding - dilation * (kernel_size - 1) - 1) // stride + 1


def _size_case(r: Rand) -> Case:
    k, d, s, p = r.integer(1, 7), r.integer(1, 3), r.integer(1, 4), r.integer(0, 4)
    span = d * (k - 1) + 1
    size = r.integer(max(1, span - 2 * p), span + 24)
    return Case((size, k, s, p, d))


_TRUE_DIVISION = ("You returned a float: `/` always gives one. The size of a tensor dimension is an "
                  "int: use floor division `//`.")


def _size_run(answer: Any, case: Case) -> Any:
    out = answer(*case.args, **case.kwargs)
    if isinstance(out, float):
        raise Incorrect("true_division", _TRUE_DIVISION)
    return out


_SIZE_EDGES = [
    Case((28, 3), label="28 pixels, a 3x3 kernel, the defaults", show_inputs=True),
    Case((10, 2, 3), label="stride larger than the kernel", show_inputs=True),
    Case((5, 3, 1, 3), label="padding larger than half the kernel", show_inputs=True),
    Case((9, 3, 1, 0, 2), label="dilation 2", show_inputs=True),
    Case((7, 1, 2), label="a 1x1 kernel with stride 2", show_inputs=True),
    Case((3, 3), label="an output of exactly one pixel", show_inputs=True),
    Case((12, 5, 2, 2, 2), label="stride, padding and dilation together", show_inputs=True),
    Case((11, 3), {"stride": 2, "padding": 1}, label="stride and padding given by name", show_inputs=True),
]

register(Exercise(
    lesson=LESSON, name="conv_output_size",
    title="Output length of a convolution along one axis (size, kernel, stride, padding, dilation)",
    reference=conv_output_size, cases=_size_case, edge_cases=_SIZE_EDGES, n_random=30, run=_size_run,
    # the lesson measures sizes by running an nn.Conv2d: building one draws its weights from the
    # global RNG, so a right answer that builds a layer may draw from it
    uses_global_rng=True,
    mistakes=[
        Mistake("forgot_dilation", "A dilated kernel spans `dilation * (kernel_size - 1) + 1` pixels, "
                "not `kernel_size`: use that span in the formula.",
                lambda n, k, s=1, p=0, d=1: (n + 2 * p - k) // s + 1),
        Mistake("dilation_times_kernel", "A dilated kernel spans `dilation * (kernel_size - 1) + 1` "
                "pixels: the gaps sit *between* the taps, so there are `kernel_size - 1` of them, not "
                "`dilation * kernel_size`.", lambda n, k, s=1, p=0, d=1: (n + 2 * p - d * k) // s + 1),
        Mistake("ceil_not_floor", "PyTorch rounds down: a window that would stick out past the "
                "(padded) input is dropped. Use floor division `//` (not `math.ceil` or `round`).",
                lambda n, k, s=1, p=0, d=1: math.ceil((n + 2 * p - d * (k - 1) - 1) / s) + 1),
        Mistake("padding_one_side", "`padding` is added on *both* sides: the padded length is "
                "`size + 2 * padding`.", lambda n, k, s=1, p=0, d=1: (n + p - d * (k - 1) - 1) // s + 1),
        Mistake("forgot_plus_one", "Count the first window too: the formula ends with `+ 1` "
                "(a 3-pixel input and a 3-pixel kernel give 1 output, not 0).",
                lambda n, k, s=1, p=0, d=1: (n + 2 * p - d * (k - 1) - 1) // s),
        Mistake("true_division", _TRUE_DIVISION,
                lambda n, k, s=1, p=0, d=1: (n + 2 * p - d * (k - 1) - 1) / s + 1, match_output=False),
    ],
    hints=[
        "Pad first: the input is `size + 2 * padding` long. A dilated kernel covers "
        "`dilation * (kernel_size - 1) + 1` pixels.",
        "Count the positions where that span fits, stepping by `stride`: the first one, plus one "
        "per full stride in the room that is left.",
        "`(size + 2 * padding - dilation * (kernel_size - 1) - 1) // stride + 1`.",
    ],
))


# --------------------------------------------------------------------------- 2. conv2d_by_hand
def conv2d_by_hand(x, weight, bias=None, stride=1, padding=0, dilation=1):
    # the grader's reference: every patch at once with F.unfold (fast under the rule's watch);
    # the lesson's solution loops over output positions, which is clearer and gives the same
    n, _, h, w = x.shape
    c_out, _, kh, kw = weight.shape
    h_out = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    w_out = (w + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    patches = F.unfold(x, (kh, kw), dilation=dilation, padding=padding, stride=stride)  # (N, C_in*kh*kw, L)
    out = (weight.reshape(c_out, -1) @ patches).reshape(n, c_out, h_out, w_out)
    if bias is not None:
        out = out + bias.reshape(1, c_out, 1, 1)
    return out


def _conv2d_loops(x, weight, bias=None, stride=1, padding=0, dilation=1):
    x = F.pad(x, (padding, padding, padding, padding))  # zeros on all four sides
    n, _, h, w = x.shape
    c_out, _, kh, kw = weight.shape
    h_out = (h - dilation * (kh - 1) - 1) // stride + 1
    w_out = (w - dilation * (kw - 1) - 1) // stride + 1
    rows = []
    for i in range(h_out):
        cols = []
        for j in range(w_out):
            top, left = i * stride, j * stride
            patch = x[:, :, top:top + dilation * (kh - 1) + 1:dilation,
                      left:left + dilation * (kw - 1) + 1:dilation]  # (N, C_in, kh, kw)
            cols.append(torch.einsum("nchw,ochw->no", patch, weight))  # (N, C_out)
        rows.append(torch.stack(cols, dim=-1))  # (N, C_out, W_out)
    out = torch.stack(rows, dim=-2)  # (N, C_out, H_out, W_out)
    if bias is not None:
        out = out + bias.reshape(1, c_out, 1, 1)
    return out


def _conv_variant(flip=False, use_bias=True, use_dilation=True, use_stride=True, pad_sides=2):
    """A wrong (or right) convolution written with unfold: the known-mistake examples."""
    def conv(x, weight, bias=None, stride=1, padding=0, dilation=1):
        d = dilation if use_dilation else 1
        s = stride if use_stride else 1
        pads = (padding, padding, padding, padding) if pad_sides == 2 else (0, padding, 0, padding)
        xp = F.pad(x, pads)
        c_out, _, kh, kw = weight.shape
        h_out = (xp.shape[2] - d * (kh - 1) - 1) // s + 1
        w_out = (xp.shape[3] - d * (kw - 1) - 1) // s + 1
        if h_out < 1 or w_out < 1:
            raise RuntimeError("Calculated output size is too small")
        wt = weight.flip(-1, -2) if flip else weight
        cols = F.unfold(xp, (kh, kw), dilation=d, stride=s)  # (N, C_in*kh*kw, L)
        out = (wt.reshape(c_out, -1) @ cols).reshape(x.shape[0], c_out, h_out, w_out)
        if bias is not None and use_bias:
            out = out + bias.reshape(1, -1, 1, 1)
        return out
    return conv


def _conv_case(r: Rand) -> Case:
    n, c_in, c_out = r.integer(1, 3), r.integer(1, 4), r.integer(1, 4)
    kh, kw = r.integer(1, 3), r.integer(1, 3)
    s, p, d = r.integer(1, 3), r.integer(0, 2), r.integer(1, 2)
    h = r.integer(max(1, d * (kh - 1) + 1 - 2 * p), 9)
    w = r.choice([v for v in range(max(1, d * (kw - 1) + 1 - 2 * p), 10) if v != h] or [h])
    x = r.randn(n, c_in, h, w)
    if r.integer(0, 2) == 0:  # a third of the cases are non-contiguous (channels-last memory)
        x = r.randn(n, h, w, c_in).permute(0, 3, 1, 2)
    weight = r.randn(c_out, c_in, kh, kw)
    bias = r.randn(c_out) if r.integer(0, 3) else None
    return Case((x, weight, bias, s, p, d))


def _fixed_conv(seed, n, c_in, c_out, h, w, kh, kw, bias=True, channels_last=False, **kw_):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, c_in, h, w, generator=g)
    if channels_last:
        x = torch.randn(n, h, w, c_in, generator=g).permute(0, 3, 1, 2)
    weight = torch.randn(c_out, c_in, kh, kw, generator=g)
    b = torch.randn(c_out, generator=g) if bias else None
    return (x, weight, b), kw_


def _conv_edge(label, *a, **k):
    args, kwargs = _fixed_conv(*a, **k)
    return Case(args, kwargs, label=label)


_CONV_EDGES = [
    _conv_edge("one image, one channel, a 3x3 kernel", 1, 1, 1, 1, 5, 6, 3, 3),
    _conv_edge("stride 3, larger than the 2x2 kernel", 2, 1, 2, 3, 7, 8, 2, 2, stride=3),
    _conv_edge("padding 2 with a 3x3 kernel (more than half)", 3, 2, 2, 3, 4, 5, 3, 3, padding=2),
    _conv_edge("dilation 2", 4, 1, 3, 2, 7, 7, 3, 3, dilation=2),
    _conv_edge("a 1x1 kernel over 3 channels", 5, 2, 3, 4, 4, 5, 1, 1),
    _conv_edge("a 2x3 kernel on a 5x8 image, stride 2, padding 1", 6, 1, 2, 3, 5, 8, 2, 3, stride=2, padding=1),
    _conv_edge("a non-contiguous input (channels-last memory)", 7, 2, 3, 2, 6, 4, 3, 2, channels_last=True),
    _conv_edge("no bias", 8, 2, 2, 2, 5, 5, 3, 3, bias=False),
    _conv_edge("stride, padding and dilation together", 9, 2, 2, 3, 8, 9, 3, 2, stride=2, padding=1, dilation=2),
]


def _conv2d_cheat(x, weight, bias=None, stride=1, padding=0, dilation=1):
    return F.conv2d(x, weight, bias, stride, padding, dilation)


register(Exercise(
    lesson=LESSON, name="conv2d_by_hand",
    title="A 2-D convolution (PyTorch's cross-correlation) by hand, with stride, padding and dilation",
    reference=conv2d_by_hand, cases=_conv_case, edge_cases=_CONV_EDGES,
    run=_run_forbidding(_CONV_OPS, "used_builtin_conv", _CONV_RULE),
    compare=Compare(rtol=1e-4, atol=1e-4),
    timeout=10.0,
    mistakes=[
        Mistake("used_builtin_conv", _CONV_RULE.format(op="conv2d"), _conv2d_cheat, match_output=False),
        Mistake("flipped_kernel", "You flipped the kernel: that is convolution as mathematicians "
                "define it. PyTorch's `conv2d` does not flip: it is a cross-correlation, "
                "`out[i, j] = sum(patch * weight)` with the weight as it is.", _conv_variant(flip=True)),
        Mistake("forgot_bias", "Add the bias: one number per output channel, "
                "`out + bias.reshape(1, -1, 1, 1)` (when `bias` is not None).", _conv_variant(use_bias=False)),
        Mistake("ignored_dilation", "With dilation `d` the kernel's taps are `d` pixels apart: the "
                "patch is `x[..., top : top + d*(kh-1) + 1 : d, left : ... : d]`.",
                _conv_variant(use_dilation=False)),
        Mistake("ignored_stride", "With stride `s` the window moves `s` pixels at a time: output "
                "position `i` starts at input row `i * s`.", _conv_variant(use_stride=False)),
        Mistake("padding_one_side", "`padding` adds zeros on all four sides (top, bottom, left, "
                "right): `F.pad(x, (p, p, p, p))`.", _conv_variant(pad_sides=1)),
    ],
    hints=[
        "Pad with `F.pad(x, (p, p, p, p))`, work out the output size with your "
        "`conv_output_size`, then fill each output position from one patch of the input.",
        "The patch for output (i, j) is `x[:, :, i*s : i*s + d*(kh-1) + 1 : d, j*s : j*s + d*(kw-1) + 1 : d]`, "
        "shape (N, C_in, kh, kw). Multiply by the weight (C_out, C_in, kh, kw) and sum over the last "
        "three dims: `torch.einsum('nchw,ochw->no', patch, weight)`.",
        "Collect the (N, C_out) results with `torch.stack` (or `F.unfold` gives all patches at once: "
        "`weight.reshape(C_out, -1) @ F.unfold(x, (kh, kw), dilation=d, padding=p, stride=s)`), "
        "then add `bias.reshape(1, -1, 1, 1)`.",
    ],
))


# --------------------------------------------------------------------------- 3. conv_param_count
def conv_param_count(in_channels, out_channels, kernel_size, bias=True, groups=1):
    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
    return out_channels * (in_channels // groups) * kh * kw + (out_channels if bias else 0)


def _count_case(r: Rand) -> Case:
    g = r.choice([1, 1, 1, 2, 3, 4])
    c_in, c_out = g * r.integer(1, 8), g * r.integer(1, 8)
    k = r.integer(1, 7) if r.integer(0, 1) else (r.integer(1, 5), r.integer(1, 5))
    return Case((c_in, c_out, k), {"bias": bool(r.integer(0, 1)), "groups": g})


def _kernel_area(k):
    return k * k if isinstance(k, int) else k[0] * k[1]


register(Exercise(
    lesson=LESSON, name="conv_param_count",
    title="Number of parameters of an nn.Conv2d (kernel int or (kh, kw), bias, groups)",
    reference=conv_param_count, cases=_count_case, n_random=30,
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
        "Look at the weight's shape: `nn.Conv2d(in, out, k).weight.shape` is (out, in // groups, kh, kw); "
        "the bias is (out,).",
        "An int kernel_size means a square kernel; a tuple is (kh, kw).",
        "`out_channels * (in_channels // groups) * kh * kw + (out_channels if bias else 0)`.",
    ],
))


# --------------------------------------------------------------------------- 4. max_pool_by_hand
def max_pool_by_hand(x, kernel_size, stride=None):
    stride = kernel_size if stride is None else stride
    windows = x.unfold(2, kernel_size, stride).unfold(3, kernel_size, stride)  # (N, C, H', W', k, k)
    return windows.amax(dim=(-2, -1))


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


def _pool_case(r: Rand) -> Case:
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


def _max_pool_cheat(x, kernel_size, stride=None):
    return F.max_pool2d(x, kernel_size, stride)


register(Exercise(
    lesson=LESSON, name="max_pool_by_hand",
    title="2-D max-pooling by hand (no padding; stride defaults to the kernel size)",
    reference=max_pool_by_hand, cases=_pool_case,
    run=_run_forbidding(_POOL_OPS, "used_builtin_pool", _POOL_RULE),
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
        Mistake("used_builtin_pool", _POOL_RULE.format(op="max_pool2d"), _max_pool_cheat,
                match_output=False),
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
        "Output size along each axis: `(size - kernel_size) // stride + 1`; without a stride, "
        "stride = kernel_size.",
        "Window (i, j) is `x[:, :, i*s : i*s + k, j*s : j*s + k]`; its maximum over the last two dims "
        "is `.amax(dim=(-2, -1))`, shape (N, C).",
        "All windows at once: `x.unfold(2, k, s).unfold(3, k, s)` has shape (N, C, H', W', k, k); "
        "`.amax(dim=(-2, -1))`.",
    ],
))


# --------------------------------------------------------------------------- 5. receptive_field
def receptive_field(layers):
    rf, jump = 1, 1  # one output pixel sees 1 input pixel; neighbours are `jump` pixels apart
    for kernel_size, stride, dilation in layers:
        rf += (kernel_size - 1) * dilation * jump
        jump *= stride
    return rf


def _rf_case(r: Rand) -> Case:
    layers = []
    for _ in range(r.integer(1, 6)):
        layers.append((r.integer(1, 5), r.integer(1, 3), r.choice([1, 1, 1, 2, 3])))
    return Case((layers,))


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


register(Exercise(
    lesson=LESSON, name="receptive_field",
    title="Receptive field (in input pixels, one axis) of a stack of (kernel_size, stride, dilation) layers",
    reference=receptive_field, cases=_rf_case, n_random=30,
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
                "input pixels apart, so every later kernel tap reaches s times further. Keep a `jump` "
                "(the product of the strides so far) and add `(k - 1) * d * jump` per layer.",
                _rf_wrong("ignored_stride")),
        Mistake("ignored_dilation", "A dilated kernel spans `d * (k - 1) + 1` pixels: add "
                "`(k - 1) * d * jump` per layer.", _rf_wrong("ignored_dilation")),
        Mistake("stride_too_early", "A layer's own stride spaces *its outputs*, not its taps: multiply "
                "`jump` by the stride after adding that layer's `(k - 1) * d * jump`.",
                _rf_wrong("stride_too_early")),
        Mistake("start_at_zero", "Start at 1: with no layers (or only 1x1 kernels) an output pixel "
                "sees exactly one input pixel.", _rf_wrong("start_at_zero")),
        Mistake("product_of_kernels", "Receptive fields do not multiply: each layer adds "
                "`(k - 1) * d * jump` pixels to the field.",
                lambda layers: math.prod(k for k, _, _ in layers)),
    ],
    hints=[
        "Walk the layers from the input side, keeping two numbers: the receptive field `rf` "
        "(start at 1) and `jump`, the distance in input pixels between neighbouring pixels of the "
        "current layer (start at 1).",
        "A layer with kernel k and dilation d widens the field by `(k - 1) * d` of its input "
        "pixels, i.e. `(k - 1) * d * jump` input pixels; then its stride multiplies `jump`.",
        "`rf += (k - 1) * d * jump; jump *= s` for each `(k, s, d)`.",
    ],
))


# --------------------------------------------------------------------------- 6. SmallVGG
class SmallVGG(nn.Module):
    def __init__(self, in_channels, num_classes, widths, image_size):
        super().__init__()
        height, width = image_size
        layers = []
        channels = in_channels
        for w in widths:
            layers += [nn.Conv2d(channels, w, kernel_size=3, padding=1, bias=False),
                       nn.BatchNorm2d(w), nn.ReLU(), nn.MaxPool2d(2)]
            channels, height, width = w, height // 2, width // 2
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(channels * height * width, num_classes))

    def forward(self, x):
        return self.classifier(self.features(x))


_VGG_MESSAGES = {
    "missing_super_init": (
        "Creating your module raised \"cannot assign ... before Module.__init__() call\": call "
        "`super().__init__()` as the first line of `__init__`."),
    "conv_bias": (
        "Your convolutions have biases. The spec says `bias=False`: the BatchNorm2d right after "
        "each convolution subtracts the channel mean, which cancels any bias, and adds its own "
        "learned shift (`beta`), so a conv bias is a parameter that can never matter."),
    "missing_batchnorm": (
        "Your network has no `nn.BatchNorm2d`: each block is Conv2d -> BatchNorm2d -> ReLU -> MaxPool2d."),
    "softmax_in_forward": (
        "Your forward returns probabilities (softmax). Return logits: `nn.CrossEntropyLoss` "
        "applies log-softmax itself."),
    "view_not_reshape": (
        "Your forward flattens with `.view`, which fails on an input whose memory is not in the "
        "default order (here a channels-last batch: \"view size is not compatible with input "
        "tensor's size and stride\"). Use `nn.Flatten()`, `torch.flatten(x, 1)` or "
        "`x.reshape(len(x), -1)`."),
    "unregistered_layers": (
        "PyTorch does not see some of your layers (a plain Python list?): their parameters are "
        "missing from `parameters()`. Use `nn.Sequential` or `nn.ModuleList`."),
}


def _vgg_fail(mistake: str) -> Incorrect:
    return Incorrect(mistake, _VGG_MESSAGES[mistake])


def _vgg_case(r: Rand) -> Case:
    widths = [r.integer(2, 8) for _ in range(r.integer(1, 3))]
    m = 2 ** len(widths)
    h = r.integer(m, 3 * m + 1)
    w = r.choice([v for v in range(m, 3 * m + 2) if v != h])
    return Case((r.integer(1, 3), r.integer(2, 6), widths, (h, w)), {"seed": r.integer(0, 2**31)},
                show_inputs=True)


def _build(answer: Any, args: tuple) -> nn.Module:
    try:
        model = answer(*args)
    except AttributeError as exc:
        if "before Module.__init__() call" in str(exc):
            raise _vgg_fail("missing_super_init") from None
        raise
    if not isinstance(model, nn.Module):
        raise Incorrect("not_a_module", f"Your class builds a {type(model).__name__}, not an `nn.Module`. "
                        "Subclass it: `class SmallVGG(nn.Module):`.")
    return model


def _of_type(model: nn.Module, kind: type) -> list[nn.Module]:
    return [m for m in model.modules() if isinstance(m, kind)]


def _vgg_run(answer: Any, case: Case) -> Any:
    in_channels, num_classes, widths, (h, w) = case.args
    gen = torch.Generator().manual_seed(case.kwargs["seed"])
    ref = SmallVGG(in_channels, num_classes, list(widths), (h, w))
    model = _build(answer, (in_channels, num_classes, list(widths), (h, w)))
    if any(isinstance(p, nn.parameter.UninitializedParameter) for p in model.parameters()):
        model.eval()  # lazy modules (nn.LazyLinear) learn their sizes from a first forward
        with torch.no_grad():
            model(torch.zeros(1, in_channels, h, w))
    if not list(model.parameters()):
        raise _vgg_fail("unregistered_layers")
    convs, bns, linears = _of_type(model, nn.Conv2d), _of_type(model, nn.BatchNorm2d), _of_type(model, nn.Linear)
    if not bns:
        raise _vgg_fail("missing_batchnorm")
    if any(c.bias is not None for c in convs):
        raise _vgg_fail("conv_bias")
    # the flattened size: the one number learners most often get wrong
    fh, fw = h, w
    for _ in widths:
        fh, fw = fh // 2, fw // 2
    flat = widths[-1] * fh * fw
    if len(linears) == 1 and linears[0].in_features != flat:
        raise Incorrect(
            "wrong_flatten_size",
            f"Your Linear layer expects {linears[0].in_features} features, but for image_size={(h, w)} "
            f"and widths={list(widths)} the last block outputs a ({widths[-1]}, {fh}, {fw}) feature map, "
            f"{flat} numbers per image once flattened. Each MaxPool2d(2) halves the height and the "
            "width, rounding down; a 3x3 convolution with padding=1 keeps them.")
    ref_groups = [_of_type(ref, nn.Conv2d), _of_type(ref, nn.BatchNorm2d), _of_type(ref, nn.Linear)]
    got_groups = [convs, bns, linears]
    for name, want, got in zip(("Conv2d", "BatchNorm2d", "Linear"), ref_groups, got_groups):
        want_shapes = [tuple(p.shape for p in m.parameters(recurse=False)) for m in want]
        got_shapes = [tuple(p.shape for p in m.parameters(recurse=False)) for m in got]
        if want_shapes != got_shapes:
            raise Incorrect(
                "wrong_layers",
                f"Your {name} layers have parameter shapes {[[tuple(s) for s in g] for g in got_shapes]}; "
                f"the spec gives {[[tuple(s) for s in g] for g in want_shapes]}. Check the channel "
                "counts block by block (and that every layer is registered).")
    n_got = sum(p.numel() for p in model.parameters())
    n_ref = sum(p.numel() for p in ref.parameters())
    if n_got != n_ref:
        raise Incorrect(
            "wrong_parameter_count",
            f"Your model has {n_got} parameters; the spec gives {n_ref}. Use only the layers the "
            "spec lists.")
    # same weights and running statistics in both: random values from the case's seed
    with torch.no_grad():
        for mods_ref, mods_got in zip(ref_groups, got_groups):
            for m_ref, m_got in zip(mods_ref, mods_got):
                for p_ref, p_got in zip(m_ref.parameters(recurse=False), m_got.parameters(recurse=False)):
                    p_ref.copy_(torch.randn(p_ref.shape, generator=gen) * 0.5)
                    p_got.copy_(p_ref)
        for b_ref, b_got in zip(ref_groups[1], got_groups[1]):
            b_ref.running_mean.copy_(torch.randn(b_ref.running_mean.shape, generator=gen) * 0.2)
            b_ref.running_var.copy_(torch.rand(b_ref.running_var.shape, generator=gen) + 0.5)
            b_got.running_mean.copy_(b_ref.running_mean)
            b_got.running_var.copy_(b_ref.running_var)
            b_got.num_batches_tracked.copy_(b_ref.num_batches_tracked)
    n = case.kwargs.get("batch") or int(torch.randint(1, 6, (1,), generator=gen))
    x_train = torch.randn(n, in_channels, h, w, generator=gen)
    x_eval = torch.randn(n, in_channels, h, w, generator=gen)
    if case.kwargs.get("channels_last"):  # same values, channels-last memory (as after a permute)
        x_train = x_train.contiguous(memory_format=torch.channels_last)
        x_eval = x_eval.contiguous(memory_format=torch.channels_last)
    ref_train = copy.deepcopy(ref)  # same weights and statistics: the gradient check's yardstick
    try:
        model.train()
        with torch.enable_grad():
            out_train = model(x_train)  # batch statistics; updates the running statistics
        model.eval()
        with torch.no_grad():
            out_eval = model(x_eval)  # running statistics
    except RuntimeError as exc:
        if "view size is not compatible" in str(exc):
            raise _vgg_fail("view_not_reshape") from None
        raise
    for out in (out_train, out_eval):
        if isinstance(out, torch.Tensor) and out.dim() == 2 and out.shape[1] > 1:
            o = out.detach()
            if bool((o >= 0).all()) and bool(torch.allclose(o.sum(1), torch.ones(len(o)), atol=1e-4)):
                raise _vgg_fail("softmax_in_forward")
    _vgg_check_grads(model, out_train, ref_train, x_train)
    # a dict, so that feedback names the mode: "Your result['training mode (batch statistics)']"
    return {"training mode (batch statistics)": out_train, "eval mode (running statistics)": out_eval}


def _vgg_check_grads(model: nn.Module, out: Any, ref: nn.Module, x: torch.Tensor) -> None:
    """Right outputs from a forward that runs part of the network outside autograd
    (`torch.no_grad()`, `.detach()`, `.data`) give a model whose convolutions and BatchNorms never
    learn: every parameter must get a gradient from the training-mode output."""
    if not isinstance(out, torch.Tensor):
        return  # the output comparison reports it
    ref.train()
    with torch.no_grad():
        want = ref(x)
    if want.shape != out.shape or want.dtype != out.dtype or not torch.allclose(
            out.detach(), want, rtol=1e-4, atol=1e-5):
        return  # wrong values: the output comparison reports (and names) them
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if out.requires_grad:
        grads = torch.autograd.grad(out.sum(), [p for _, p in named], allow_unused=True)
    else:
        grads = tuple(None for _ in named)
    missing = [n for (n, _), g in zip(named, grads) if g is None]
    if missing:
        shown = ", ".join(f"`{n}`" for n in missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
        raise Incorrect(
            "parameter_not_trained",
            f"Your outputs are right, but no gradient reaches {shown}: part of your forward runs outside "
            "autograd (`torch.no_grad()`, `.detach()`, `.data`), so training would never update "
            f"{'it' if len(missing) == 1 else 'them'}. Use the layers directly in forward.")


def _vgg_edge(label, in_channels, num_classes, widths, size, seed, batch, channels_last=False):
    return Case((in_channels, num_classes, widths, size),
                {"seed": seed, "batch": batch, "channels_last": channels_last}, label=label, show_inputs=True)


class _VGGNoSuper(nn.Module):
    def __init__(self, in_channels, num_classes, widths, image_size):
        self.net = SmallVGG(in_channels, num_classes, widths, image_size)

    def forward(self, x):
        return self.net(x)


class _VGGConvBias(SmallVGG):
    def __init__(self, in_channels, num_classes, widths, image_size):
        super().__init__(in_channels, num_classes, widths, image_size)
        for i, m in enumerate(self.features):
            if isinstance(m, nn.Conv2d):
                self.features[i] = nn.Conv2d(m.in_channels, m.out_channels, 3, padding=1)


class _VGGFlattenNoPool(SmallVGG):
    def __init__(self, in_channels, num_classes, widths, image_size):
        super().__init__(in_channels, num_classes, widths, image_size)
        h, w = image_size  # forgot that every block halves the size
        self.classifier[1] = nn.Linear(widths[-1] * h * w, num_classes)


class _VGGReluBeforeBN(SmallVGG):
    def __init__(self, in_channels, num_classes, widths, image_size):
        super().__init__(in_channels, num_classes, widths, image_size)
        mods = list(self.features)
        for i in range(0, len(mods), 4):
            mods[i + 1], mods[i + 2] = mods[i + 2], mods[i + 1]
        self.features = nn.Sequential(*mods)


class _VGGPoolBeforeBN(SmallVGG):
    def __init__(self, in_channels, num_classes, widths, image_size):
        super().__init__(in_channels, num_classes, widths, image_size)
        mods = list(self.features)
        for i in range(0, len(mods), 4):
            mods[i + 1], mods[i + 2], mods[i + 3] = mods[i + 3], mods[i + 1], mods[i + 2]
        self.features = nn.Sequential(*mods)


class _VGGView(SmallVGG):
    def forward(self, x):
        x = self.features(x)
        return self.classifier[1](x.view(x.shape[0], -1))


class _VGGSoftmax(SmallVGG):
    def forward(self, x):
        return torch.softmax(super().forward(x), dim=1)


class _VGGNoBN(nn.Module):
    def __init__(self, in_channels, num_classes, widths, image_size):
        super().__init__()
        h, w = image_size
        layers, c = [], in_channels
        for width in widths:
            layers += [nn.Conv2d(c, width, 3, padding=1, bias=False), nn.ReLU(), nn.MaxPool2d(2)]
            c, h, w = width, h // 2, w // 2
        self.net = nn.Sequential(*layers, nn.Flatten(), nn.Linear(c * h * w, num_classes))

    def forward(self, x):
        return self.net(x)


register(Exercise(
    lesson=LESSON, name="SmallVGG", title="A small VGG-style CNN to a spec (conv-BN-ReLU-pool blocks, Flatten, Linear)",
    reference=SmallVGG, kind="class", cases=_vgg_case, run=_vgg_run, n_random=6,
    edge_cases=[
        _vgg_edge("the digits: one channel, 8x8, two blocks", 1, 10, [8, 16], (8, 8), 11, 4),
        _vgg_edge("odd, non-square images (pooling rounds down)", 3, 4, [4, 6], (9, 7), 12, 3),
        _vgg_edge("one block, a batch of one image", 2, 3, [5], (6, 10), 13, 1),
        _vgg_edge("three blocks down to a 1x1 map", 1, 5, [3, 4, 6], (8, 9), 14, 2),
        _vgg_edge("a batch in channels-last memory (non-contiguous)", 3, 4, [4, 4], (9, 10), 15, 3, channels_last=True),
    ],
    compare=Compare(rtol=1e-4, atol=1e-5),
    timeout=10.0,
    mistakes=[
        Mistake("missing_super_init", _VGG_MESSAGES["missing_super_init"], _VGGNoSuper, match_output=False),
        Mistake("conv_bias", _VGG_MESSAGES["conv_bias"], _VGGConvBias, match_output=False),
        Mistake("wrong_flatten_size", "The Linear layer's input size must be channels x height x width "
                "of the last feature map, after every pooling.", _VGGFlattenNoPool, match_output=False),
        Mistake("missing_batchnorm", _VGG_MESSAGES["missing_batchnorm"], _VGGNoBN, match_output=False),
        Mistake("softmax_in_forward", _VGG_MESSAGES["softmax_in_forward"], _VGGSoftmax, match_output=False),
        Mistake("view_not_reshape", _VGG_MESSAGES["view_not_reshape"], _VGGView, match_output=False),
        Mistake("relu_before_batchnorm", "Each block is Conv2d -> BatchNorm2d -> ReLU -> MaxPool2d: "
                "normalise the convolution's output, then apply the ReLU.", _VGGReluBeforeBN),
        Mistake("pool_before_batchnorm", "Pool last in each block: Conv2d -> BatchNorm2d -> ReLU -> "
                "MaxPool2d.", _VGGPoolBeforeBN),
    ],
    hints=[
        "Keep track of the channels and the size while you build: each block maps `channels` to "
        "`width` channels (3x3, padding=1 keeps the size) and MaxPool2d(2) halves height and width "
        "(rounding down).",
        "`layers += [nn.Conv2d(c, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(), "
        "nn.MaxPool2d(2)]`, then `nn.Flatten()` and `nn.Linear(c * h * w, num_classes)`.",
        "`forward` returns logits: no softmax.",
    ],
))
