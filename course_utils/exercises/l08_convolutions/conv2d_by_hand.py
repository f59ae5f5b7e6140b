"""conv2d_by_hand: repair a teammate's hand-written convolution from its failing comparison.

The notebook shows a teammate's loops with three bugs (a flipped kernel, `F.pad(x, (p, p))`
padding the width only, taps that ignore the dilation) and their comparison with `F.conv2d`: a
table where lines pass or fail by setting and kernel (one kernel equals its own mirror image).
The learner reads which line points at which bug and returns `F.conv2d`'s output without a
built-in convolution. Each of the teammate's bugs is a named mistake, named once it is the last
one left (tests/test_l08_convolutions.py repairs the teammate's code from the notebook's text).

Subtle: no kernel flip; stride, padding (all four sides) and dilation; non-contiguous
(channels-last) inputs; the rule is ``Exercise.forbid``: the framework watches every torch function
the answer calls. The reference is the lesson's own loops (a check takes 0.19 s against 0.12 s with
an `F.unfold` reference, best of 6 on a busy 2-core machine: the lesson's own answer is worth it).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils.grading import Case, Compare, Exercise, Mistake, Rand, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/08_convolutions.py)
from ...answers.l08_convolutions import conv2d_by_hand

_CONV_OPS = r"re:conv(?!ert)"  # convolution, _convolution, conv2d, slow_conv2d, mkldnn_convolution...


# --- cases
def _cases(r: Rand) -> Case:
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


EDGE_CASES = [
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


# --- wrong answers
def _builtin(x, weight, bias=None, stride=1, padding=0, dilation=1):
    return F.conv2d(x, weight, bias, stride, padding, dilation)


def _conv_variant(flip=False, use_bias=True, use_dilation=True, use_stride=True, pad_sides=4, dilated_taps=True):
    """A wrong (or right) convolution written with unfold: the known-mistake examples. With
    ``dilated_taps=False`` the output size counts the dilation but each patch is contiguous (the
    teammate's loops)."""
    def conv(x, weight, bias=None, stride=1, padding=0, dilation=1):
        d = dilation if use_dilation else 1
        s = stride if use_stride else 1
        pads = {4: (padding,) * 4, 2: (0, padding, 0, padding), 1: (padding, padding)}[pad_sides]
        xp = F.pad(x, pads)
        c_out, _, kh, kw = weight.shape
        h_out = (xp.shape[2] - d * (kh - 1) - 1) // s + 1
        w_out = (xp.shape[3] - d * (kw - 1) - 1) // s + 1
        if h_out < 1 or w_out < 1:
            raise RuntimeError("Calculated output size is too small")
        wt = weight.flip(-1, -2) if flip else weight
        if not dilated_taps:  # contiguous patches at the dilated layer's positions
            cols = F.unfold(xp, (kh, kw), stride=s)
            rows_1, cols_1 = (xp.shape[2] - kh) // s + 1, (xp.shape[3] - kw) // s + 1
            out = (wt.reshape(c_out, -1) @ cols).reshape(x.shape[0], c_out, rows_1, cols_1)[:, :, :h_out, :w_out]
        else:
            cols = F.unfold(xp, (kh, kw), dilation=d, stride=s)  # (N, C_in*kh*kw, L)
            out = (wt.reshape(c_out, -1) @ cols).reshape(x.shape[0], c_out, h_out, w_out)
        if bias is not None and use_bias:
            out = out + bias.reshape(1, -1, 1, 1)
        return out
    return conv


# --- declaration
register(Exercise(
    lesson=LESSON, name="conv2d_by_hand",
    title="Repair a teammate's hand-written convolution (PyTorch's cross-correlation; stride, padding, dilation)",
    reference=conv2d_by_hand, cases=_cases, edge_cases=EDGE_CASES,
    forbid=(_CONV_OPS,), rule_mistake="used_builtin_conv",
    compare=Compare(rtol=1e-4, atol=1e-4),
    timeout=10.0,
    mistakes=[
        Mistake("used_builtin_conv",
                "The task says: “compute it without `F.conv2d`, `nn.Conv2d` or any other built-in convolution”. "
                "Your code called one (`{op}`). Build the output from patches of the input: loops over the "
                "output positions, or `F.unfold` and a matrix product.",
                _builtin, match_output=False),
        Mistake("flipped_kernel", "You flipped the kernel: that is convolution as mathematicians "
                "define it. PyTorch's `conv2d` does not flip: it is a cross-correlation, "
                "`out[i, j] = sum(patch * weight)` with the weight as it is.", _conv_variant(flip=True)),
        Mistake("forgot_bias", "Add the bias: one number per output channel, "
                "`out + bias.reshape(1, -1, 1, 1)` (when `bias` is not None).", _conv_variant(use_bias=False)),
        Mistake("ignored_dilation", "With dilation `d` the kernel's taps are `d` pixels apart: the "
                "patch is `x[..., top : top + d*(kh-1) + 1 : d, left : ... : d]`.",
                _conv_variant(use_dilation=False)),
        Mistake("undilated_taps", "Your output has the right shape, but with dilation > 1 its values are "
                "wrong: the layer's size counts the dilation, yet each patch you multiply is contiguous. "
                "Which input pixels does a 3x3 kernel with dilation 2 touch?", _conv_variant(dilated_taps=False)),
        Mistake("ignored_stride", "With stride `s` the window moves `s` pixels at a time: output "
                "position `i` starts at input row `i * s`.", _conv_variant(use_stride=False)),
        Mistake("padding_one_side", "`padding` adds zeros on all four sides (top, bottom, left, "
                "right): `F.pad(x, (p, p, p, p))`.", _conv_variant(pad_sides=2)),
        Mistake("padded_width_only", "Your output has the right width but not the right height when "
                "`padding` > 0: the zeros went on the left and right only. Which axes does `F.pad`'s "
                "tuple pad, and in which order does it list them?", _conv_variant(pad_sides=1)),
    ],
    hints=[
        "Which lines of the teammate's table pass, and what do they have that the failing lines lack: a "
        "kernel equal to its own mirror image, no padding, dilation 1? Change one thing at a time and "
        "rerun the table with your function.",
        "A shape wrong in one axis only says where the zeros went; values wrong with the right shape, "
        "and right again with a mirror-symmetric kernel, say what happens to the kernel. Section 2 "
        "showed what one output pixel of PyTorch's conv2d is. Which pixels does a dilated 3x3 kernel "
        "touch?",
        "The ideas: PyTorch's conv2d is a cross-correlation (no flip); padding goes on all four sides "
        "(read F.pad's docs on how its tuple lists the axes); a dilated kernel takes every d-th pixel "
        "of a larger span (a slice with a step).",
    ],
))
