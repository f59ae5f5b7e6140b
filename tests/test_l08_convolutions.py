"""Lesson 08 (convolutions): the graders' own red team.

For every exercise: plausible wrong answers a learner would write are rejected on every seed
(beyond the declared known mistakes, which tests/test_exercises.py covers), correct answers
written differently pass, cheats (the forbidden built-in, hard-coded answers) are rejected,
and an oracle compares the reference with torch's own layers across the case generator's
domain. The fixed edge cases cover every input class the lesson's text implies.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_utils import grading
from course_utils.answers.l08_convolutions import conv2d_by_hand as _conv2d_loops
from course_utils.exercises.l08_convolutions.conv2d_by_hand import conv2d_by_hand
from course_utils.exercises.l08_convolutions.conv_output_size import conv_output_size
from course_utils.exercises.l08_convolutions.conv_param_count import conv_param_count
from course_utils.exercises.l08_convolutions.max_pool_by_hand import _pool_variant, max_pool_by_hand
from course_utils.exercises.l08_convolutions.receptive_field import receptive_field
from course_utils.exercises.l08_convolutions.small_vgg import SmallVGG
from course_utils.grading import Rand

from grading_asserts import accepted, rejected

LESSON = "08_convolutions"
SIZE, CONV, COUNT, POOL, RF, VGG = (f"{LESSON}.{n}" for n in (
    "conv_output_size", "conv2d_by_hand", "conv_param_count", "max_pool_by_hand", "receptive_field", "SmallVGG"))


class AnyInt(int):
    """An int that claims to equal everything: a cheat against `==`-based graders."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = int.__hash__


def _table(exercise_id):
    """A cheat that memorised the answers to the fixed cases (and returns 1 otherwise)."""
    ex = grading.exercise(exercise_id)
    table = {repr((c.args, sorted(c.kwargs.items()))): ex.reference(*c.args, **c.kwargs) for c in ex.edge_cases}

    def lookup(*args, **kwargs):
        return table.get(repr((args, sorted(kwargs.items()))), 1)
    return lookup


# =========================================================================== 1. conv_output_size
SIZE_WRONG = {
    "no dilation": lambda n, k, s=1, p=0, d=1: (n + 2 * p - k) // s + 1,
    "padding once": lambda n, k, s=1, p=0, d=1: (n + p - d * (k - 1) - 1) // s + 1,
    "round not floor": lambda n, k, s=1, p=0, d=1: round((n + 2 * p - d * (k - 1) - 1) / s) + 1,
    "ceil": lambda n, k, s=1, p=0, d=1: math.ceil((n + 2 * p - d * (k - 1) - 1) / s) + 1,
    "+1 inside the division": lambda n, k, s=1, p=0, d=1: (n + 2 * p - d * (k - 1)) // s,
    "d*k span": lambda n, k, s=1, p=0, d=1: (n + 2 * p - d * k) // s + 1,
    "stride and padding swapped": lambda n, k, p=0, s=1, d=1: (n + 2 * p - d * (k - 1) - 1) // s + 1,
    "float result": lambda n, k, s=1, p=0, d=1: float((n + 2 * p - d * (k - 1) - 1) // s + 1),
    "a tensor": lambda n, k, s=1, p=0, d=1: torch.tensor((n + 2 * p - d * (k - 1) - 1) // s + 1),
}


@pytest.mark.parametrize("label", SIZE_WRONG)
def test_conv_output_size_wrong_answers_are_rejected(label):
    rejected(SIZE, SIZE_WRONG[label])


def test_conv_output_size_named_mistakes():
    rejected(SIZE, SIZE_WRONG["no dilation"], "forgot_dilation")
    rejected(SIZE, SIZE_WRONG["ceil"], "ceil_not_floor")
    rejected(SIZE, SIZE_WRONG["padding once"], "padding_one_side")
    res = rejected(SIZE, lambda n, k, s=1, p=0, d=1: (n + 2 * p - d * (k - 1) - 1) / s + 1, "true_division")
    assert "//" in res.message
    res = rejected(SIZE, SIZE_WRONG["a tensor"], "wrong_type")
    assert "float" not in res.message


SIZE_VALID = {
    "int() of a true division": lambda size, kernel_size, stride=1, padding=0, dilation=1:
        int((size + 2 * padding - dilation * (kernel_size - 1) - 1) / stride) + 1,
    "count the window starts": lambda size, kernel_size, stride=1, padding=0, dilation=1:
        len(range(0, size + 2 * padding - dilation * (kernel_size - 1), stride)),
    "ask torch": lambda size, kernel_size, stride=1, padding=0, dilation=1: F.conv1d(
        torch.zeros(1, 1, size), torch.zeros(1, 1, kernel_size), stride=stride, padding=padding,
        dilation=dilation).shape[-1],
    "math.floor": lambda size, kernel_size, stride=1, padding=0, dilation=1:
        math.floor((size + 2 * padding - dilation * (kernel_size - 1) - 1) / stride) + 1,
}


@pytest.mark.parametrize("label", SIZE_VALID)
def test_conv_output_size_valid_answers_pass(label):
    accepted(SIZE, SIZE_VALID[label])


def test_conv_output_size_by_building_a_layer_passes():
    """The lesson measures sizes by running a layer; building one draws from the global RNG."""
    accepted(SIZE, lambda size, kernel_size, stride=1, padding=0, dilation=1: int(
        nn.Conv1d(1, 1, kernel_size, stride, padding, dilation)(torch.zeros(1, 1, size)).shape[-1]))


SIZE_CHEATS = {"memorised fixed cases": _table(SIZE), "an int equal to everything": lambda *a, **k: AnyInt(1)}


@pytest.mark.parametrize("label", SIZE_CHEATS)
def test_conv_output_size_cheats_are_rejected(label):
    rejected(SIZE, SIZE_CHEATS[label])


def test_conv_output_size_oracle_matches_torch_across_the_domain():
    ex = grading.exercise(SIZE)
    cases = list(ex.edge_cases) + [ex.cases(Rand(seed)) for seed in range(400)]
    for case in cases:
        args = dict(zip(("size", "kernel_size", "stride", "padding", "dilation"), case.args), **case.kwargs)
        n, k = args.pop("size"), args.pop("kernel_size")
        out = nn.Conv2d(1, 1, k, **args)(torch.zeros(1, 1, n, 2 * k + 3 * args.get("dilation", 1)))
        assert out.shape[2] == conv_output_size(n, k, **args) >= 1, case


# =========================================================================== 2. conv2d_by_hand
def _loops_conv(flip=False, bias_per_w=False, drop_last=False, nhwc=False, dilated_stride=False, pad_w_only=False):
    """Scalar-ish loops, as a learner writes them, with one optional slip."""
    def conv(x, weight, bias=None, stride=1, padding=0, dilation=1):
        if nhwc:
            x = x.permute(0, 2, 3, 1).reshape(x.shape)  # "make it channels-last" then read it as NCHW
        pads = (padding, padding, 0, 0) if pad_w_only else (padding,) * 4
        x = F.pad(x, pads)
        n, c, h, w = x.shape
        o, _, kh, kw = weight.shape
        ho = (h - dilation * (kh - 1) - 1) // stride + 1 - (1 if drop_last else 0)
        wo = (w - dilation * (kw - 1) - 1) // stride + 1
        out = torch.zeros(n, o, ho, wo)
        wt = weight.flip(-1, -2) if flip else weight
        for i in range(ho):
            for j in range(wo):
                si, sj = (i * dilation, j * dilation) if dilated_stride else (i * stride, j * stride)
                patch = x[:, :, si:si + dilation * (kh - 1) + 1:dilation, sj:sj + dilation * (kw - 1) + 1:dilation]
                out[:, :, i, j] = (patch[:, None] * wt[None]).sum(dim=(2, 3, 4))
        if bias is not None:
            out = out + (bias if bias_per_w else bias.reshape(1, -1, 1, 1))
        return out
    return conv


CONV_WRONG = {
    "true convolution (flipped kernel)": _loops_conv(flip=True),
    "channels-last read as channels-first": _loops_conv(nhwc=True),
    "one output row short (off by one)": _loops_conv(drop_last=True),
    "bias broadcast over the width": _loops_conv(bias_per_w=True),
    "dilation used as the step": _loops_conv(dilated_stride=True),
    "padding only left and right": _loops_conv(pad_w_only=True),
    "no padding at all": lambda x, weight, bias=None, stride=1, padding=0, dilation=1:
        conv2d_by_hand(x, weight, bias, stride, 0, dilation),
    "float64 result": lambda x, weight, bias=None, stride=1, padding=0, dilation=1:
        conv2d_by_hand(x.double(), weight.double(), None if bias is None else bias.double(), stride, padding, dilation),
}


@pytest.mark.parametrize("label", CONV_WRONG)
def test_conv2d_wrong_answers_are_rejected(label):
    rejected(CONV, CONV_WRONG[label])


def test_conv2d_flipped_kernel_is_named():
    res = rejected(CONV, CONV_WRONG["true convolution (flipped kernel)"], "flipped_kernel")
    assert "cross-correlation" in res.message


def _teammates_conv(*fixes):
    """The notebook's teammate's loops, read from the solution, with the given (bug, fix) lines replaced."""
    text = (Path(__file__).parents[1] / "solutions" / "08_convolutions.py").read_text()
    source = text[text.index("def teammates_conv2d"):text.index("\n\n\n", text.index("def teammates_conv2d"))]
    for bug, fix in fixes:
        assert bug in source, bug
        source = source.replace(bug, fix)
    scope = {"torch": torch, "F": F}
    exec(source, scope)  # noqa: S102 - the course's own notebook text
    return scope["teammates_conv2d"]


FLIP = ("weight.flip(-1, -2)", "weight")
PAD = ("F.pad(x, (padding, padding))", "F.pad(x, (padding,) * 4)")
DILATE = ("x[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]",
          "x[:, :, i * stride:i * stride + dilation * (kh - 1) + 1:dilation, "
          "j * stride:j * stride + dilation * (kw - 1) + 1:dilation]")


@pytest.mark.parametrize("fixes, named", [
    ((), None), ((FLIP,), None), ((DILATE,), None),
    ((FLIP, PAD), "undilated_taps"), ((PAD, DILATE), "flipped_kernel"), ((FLIP, DILATE), "padded_width_only")])
def test_conv2d_teammates_bugs_are_named_when_one_is_left(fixes, named):
    """The runner names a mistake only when the answer behaves like its example on every case: each
    of the teammate's three bugs is named once it is the last one left (before, the first case's
    difference is reported)."""
    rejected(CONV, _teammates_conv(*fixes), named)


def test_conv2d_teammates_code_fully_repaired_passes():
    accepted(CONV, _teammates_conv(FLIP, PAD, DILATE))


def _unfold_conv(x, weight, bias=None, stride=1, padding=0, dilation=1):
    n, _, h, w = x.shape
    o, _, kh, kw = weight.shape
    cols = F.unfold(x, (kh, kw), dilation=dilation, padding=padding, stride=stride)
    ho = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    wo = (w + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    out = (weight.reshape(o, -1) @ cols).reshape(n, o, ho, wo)
    return out if bias is None else out + bias[:, None, None]


def _shift_and_add_conv(x, weight, bias=None, stride=1, padding=0, dilation=1):
    """Sum over kernel taps of strided slices: no loop over output positions."""
    x = F.pad(x, [padding] * 4)
    o, _, kh, kw = weight.shape
    ho = (x.shape[2] - dilation * (kh - 1) - 1) // stride + 1
    wo = (x.shape[3] - dilation * (kw - 1) - 1) // stride + 1
    out = 0
    for a in range(kh):
        for b in range(kw):
            sl = x[:, :, a * dilation:a * dilation + stride * (ho - 1) + 1:stride,
                   b * dilation:b * dilation + stride * (wo - 1) + 1:stride]
            out = out + torch.einsum("nchw,oc->nohw", sl, weight[:, :, a, b])
    if bias is not None:
        out = out + bias.view(1, -1, 1, 1)
    return out


def _scalar_loops_conv(x, weight, bias=None, stride=1, padding=0, dilation=1):
    """Seven nested loops over Python numbers: slow, correct."""
    n, c, h, w = x.shape
    o, _, kh, kw = weight.shape
    xs, ws = x.tolist(), weight.tolist()
    ho = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    wo = (w + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    out = [[[[0.0] * wo for _ in range(ho)] for _ in range(o)] for _ in range(n)]
    for b_, oc, i, j in itertools.product(range(n), range(o), range(ho), range(wo)):
        acc = 0.0 if bias is None else float(bias[oc])
        for ic, a, b in itertools.product(range(c), range(kh), range(kw)):
            r, s = i * stride - padding + a * dilation, j * stride - padding + b * dilation
            if 0 <= r < h and 0 <= s < w:
                acc += xs[b_][ic][r][s] * ws[oc][ic][a][b]
        out[b_][oc][i][j] = acc
    return torch.tensor(out, dtype=x.dtype).reshape(n, o, ho, wo)


def _tensor_unfold_conv(x, weight, bias=None, stride=1, padding=0, dilation=1):
    """`Tensor.unfold` over the dilated span, then every `dilation`-th tap."""
    o, _, kh, kw = weight.shape
    x = F.pad(x, (padding,) * 4)
    p = x.unfold(2, dilation * (kh - 1) + 1, stride).unfold(3, dilation * (kw - 1) + 1, stride)
    p = p[..., ::dilation, ::dilation]  # (N, C, Ho, Wo, kh, kw)
    out = torch.einsum("nchwab,ocab->nohw", p, weight)
    return out if bias is None else out + bias[None, :, None, None]


CONV_VALID = {"the lesson's loops": _conv2d_loops, "F.unfold": _unfold_conv, "shift and add": _shift_and_add_conv,
              "scalar loops": _scalar_loops_conv, "Tensor.unfold": _tensor_unfold_conv}


@pytest.mark.parametrize("label", CONV_VALID)
def test_conv2d_valid_answers_pass(label):
    accepted(CONV, CONV_VALID[label])


from torch.nn.functional import conv2d as _aliased_conv2d  # noqa: E402  (bound before any check)


def _conv_module_cheat(x, weight, bias=None, stride=1, padding=0, dilation=1):
    layer = nn.Conv2d(weight.shape[1], weight.shape[0], weight.shape[2:], stride=stride, padding=padding,
                      dilation=dilation, bias=bias is not None)
    with torch.no_grad():
        layer.weight.copy_(weight)
        if bias is not None:
            layer.bias.copy_(bias)
    return layer(x)


def _swallowing_cheat(x, weight, bias=None, stride=1, padding=0, dilation=1):
    try:
        return F.conv2d(x, weight, bias, stride, padding, dilation)
    except Exception:  # noqa: BLE001 - hides the grader's refusal and falls back to a wrong answer
        return torch.zeros(1)


CONV_CHEATS = {
    "F.conv2d": lambda x, weight, bias=None, stride=1, padding=0, dilation=1:
        F.conv2d(x, weight, bias, stride, padding, dilation),
    "an alias imported before the check": lambda x, weight, bias=None, stride=1, padding=0, dilation=1:
        _aliased_conv2d(x, weight, bias, stride, padding, dilation),
    "nn.Conv2d with the weights copied": _conv_module_cheat,
    "torch.ops.aten.convolution": lambda x, weight, bias=None, stride=1, padding=0, dilation=1:
        torch.ops.aten.convolution(x, weight, bias, [stride] * 2, [padding] * 2, [dilation] * 2, False, [0, 0], 1),
    "try/except around F.conv2d": _swallowing_cheat,
}


def _memorised_conv():
    """Hard-coded: the fixed cases' outputs looked up by input, zeros of the right shape otherwise."""
    ex = grading.exercise(CONV)
    table = [(c, F.conv2d(c.args[0], c.args[1], c.args[2], **dict(zip(("stride", "padding", "dilation"),
                                                                        c.args[3:]), **c.kwargs)))
             for c in ex.edge_cases]

    def conv(x, weight, bias=None, stride=1, padding=0, dilation=1):
        for c, out in table:
            if c.args[0].shape == x.shape and torch.equal(c.args[0], x) and torch.equal(c.args[1], weight):
                return out.clone()
        ho = (x.shape[2] + 2 * padding - dilation * (weight.shape[2] - 1) - 1) // stride + 1
        wo = (x.shape[3] + 2 * padding - dilation * (weight.shape[3] - 1) - 1) // stride + 1
        return torch.zeros(x.shape[0], weight.shape[0], ho, wo)
    return conv


CONV_CHEATS["hard-coded fixed cases"] = _memorised_conv()


@pytest.mark.parametrize("label", CONV_CHEATS)
def test_conv2d_forbidden_builtins_are_rejected_quoting_the_rule(label):
    if label == "hard-coded fixed cases":
        rejected(CONV, CONV_CHEATS[label])
        return
    res = rejected(CONV, CONV_CHEATS[label], "used_builtin_conv")
    assert "The task says" in res.message and "without `F.conv2d`" in res.message


def test_conv2d_rule_leaves_no_mode_behind():
    from torch.overrides import _get_current_function_mode_stack
    grading.check(CONV, CONV_CHEATS["F.conv2d"], seed=1)
    grading.check(CONV, conv2d_by_hand, seed=1)
    assert not _get_current_function_mode_stack()
    assert F.conv2d(torch.ones(1, 1, 3, 3), torch.ones(1, 1, 3, 3)).item() == 9.0


def test_conv2d_oracle_matches_f_conv2d_across_the_domain():
    ex = grading.exercise(CONV)
    cases = list(ex.edge_cases) + [ex.cases(Rand(seed)) for seed in range(150)]
    for case in cases:
        x, weight, bias, *rest = case.args + ((None,) if len(case.args) == 2 else ())
        kw = dict(zip(("stride", "padding", "dilation"), rest), **case.kwargs)
        want = F.conv2d(x, weight, bias, **kw)
        torch.testing.assert_close(conv2d_by_hand(x, weight, bias, **kw), want, rtol=1e-4, atol=1e-4)
        assert want.shape[2] == conv_output_size(x.shape[2], weight.shape[2], **kw)


# =========================================================================== 3. conv_param_count
# The inverse problem: from (in_channels, out_channels, n_params) to nn.Conv2d keyword arguments.
def _layers(i, o, n, groups_order=None, biases=(True, False)):
    """Every (kernel area, bias, groups) whose layer has n parameters, in the given order."""
    gs = [g for g in range(1, i + 1) if i % g == 0 and o % g == 0]
    for g in groups_order(gs) if groups_order else gs:
        for b in biases:
            area, left = divmod(n - o * b, o * (i // g))
            if area >= 1 and not left:
                yield area, b, g


COUNT_WRONG = {
    "always a 3x3 with a bias": lambda i, o, n: {"kernel_size": 3},
    "square kernels and groups=1 only": lambda i, o, n: next(
        ({"kernel_size": math.isqrt(a), "bias": b} for a, b, g in _layers(i, o, n) if g == 1
         and math.isqrt(a) ** 2 == a), None),
    "the area as a float side": lambda i, o, n: {"kernel_size": (1, (n - o) / (o * i))},
    "a tuple (kernel_size, bias, groups)": lambda i, o, n: next(
        ((a, b, g) for a, b, g in _layers(i, o, n)), None),
    "the area off by one": lambda i, o, n: next(
        ({"kernel_size": (1, a + 1), "bias": b, "groups": g} for a, b, g in _layers(i, o, n)), None),
    "groups up to in_channels, not checked against out_channels": lambda i, o, n: next(
        ({"kernel_size": (1, (n - o * b) // (o * (i // g))), "bias": b, "groups": g}
         for g in range(i, 0, -1) if i % g == 0 for b in (True, False)
         if n - o * b > 0 and (n - o * b) % (o * (i // g)) == 0), None),
    "no bias ever": lambda i, o, n: next(
        ({"kernel_size": (1, a), "bias": False, "groups": g} for a, b, g in _layers(i, o, n, biases=(False,))), None),
    "the count returned": lambda i, o, n: n,
    "a kernel of three sides": lambda i, o, n: next(
        ({"kernel_size": (1, a, 1), "bias": b, "groups": g} for a, b, g in _layers(i, o, n)), None),
}


@pytest.mark.parametrize("label", COUNT_WRONG)
def test_conv_param_count_wrong_answers_are_rejected(label):
    rejected(COUNT, COUNT_WRONG[label])


def _by_building(i, o, n):
    """Build each candidate on the meta device (no memory, no initialisation) and count."""
    for area, b, g in _layers(i, o, n):
        layer = nn.Conv2d(i, o, (area, 1), bias=bool(b), groups=g, device="meta")
        if sum(p.numel() for p in layer.parameters()) == n:
            return {"kernel_size": (area, 1), "bias": bool(b), "groups": g}
    return None


COUNT_VALID = {
    "the lesson's search": conv_param_count,
    "build candidates and count": _by_building,
    "most groups first, no bias first, a list kernel and harmless extras": lambda i, o, n: next(
        ({"kernel_size": [1, a], "bias": b, "groups": g, "padding": 1, "stride": 2}
         for a, b, g in _layers(i, o, n, groups_order=lambda gs: gs[::-1], biases=(0, 1))), None),
    "defaults left out (bias=True, groups=1 when they fit)": lambda i, o, n: next(
        ({"kernel_size": (a, 1), **({} if b else {"bias": False}), **({} if g == 1 else {"groups": g})}
         for a, b, g in _layers(i, o, n)), None),
}


@pytest.mark.parametrize("label", COUNT_VALID)
def test_conv_param_count_valid_answers_pass(label):
    accepted(COUNT, COUNT_VALID[label])


def _count_table():
    """A cheat that memorised the fixed cases' answers (and guesses a 3x3 otherwise)."""
    table = {c.args: conv_param_count(*c.args) for c in grading.exercise(COUNT).edge_cases}
    return lambda i, o, n: table.get((i, o, n), {"kernel_size": 3})


COUNT_CHEATS = {
    "memorised fixed cases": _count_table(),
    "a kernel size equal to everything": lambda i, o, n: {"kernel_size": AnyInt(0)},
    "a fractional kernel that solves the equation": lambda i, o, n: {"kernel_size": (1, n / (o * i)), "bias": False},
    "a negative kernel side": lambda i, o, n: {"kernel_size": (-1, 1), "bias": False},
}


@pytest.mark.parametrize("label", COUNT_CHEATS)
def test_conv_param_count_cheats_are_rejected(label):
    rejected(COUNT, COUNT_CHEATS[label])


def test_conv_param_count_oracle_builds_the_layers_it_returns():
    ex = grading.exercise(COUNT)
    for case in list(ex.edge_cases) + [ex.cases(Rand(seed)) for seed in range(300)]:
        i, o, n = case.args
        config = conv_param_count(i, o, n)
        layer = nn.Conv2d(i, o, **config, device="meta")
        assert sum(p.numel() for p in layer.parameters()) == n, (case, config)


def test_conv_param_count_summary_is_the_notebooks_and_needs_every_argument():
    from course_utils.exercises.l08_convolutions.conv_param_count import SUMMARY, _fits

    text = (Path(__file__).parents[1] / "solutions" / "08_convolutions.py").read_text()
    assert f"summary = {SUMMARY!r}" in text
    assert not _fits(*SUMMARY[1], grouped=False), "line 2 needs groups > 1"
    assert not _fits(*SUMMARY[3], square=True), "line 4 needs a non-square kernel"
    assert _fits(*SUMMARY[4], square=True), "LeNet's line fits a square kernel"


# =========================================================================== 4. max_pool_by_hand
def _pool_loops(drop_last=False, transpose=False, global_max=False, only_rows=False, stride_one_default=False):
    def pool(x, kernel_size, stride=None):
        k = kernel_size
        s = (1 if stride_one_default else k) if stride is None else stride
        n, c, h, w = x.shape
        ho = (h - k) // s + 1 - (1 if drop_last else 0)
        wo = (w - k) // s + 1 if not only_rows else w
        out = torch.empty(n, c, ho, wo)
        for i in range(ho):
            for j in range(wo):
                if only_rows:
                    win = x[:, :, i * s:i * s + k, j:j + 1]
                else:
                    win = x[:, :, i * s:i * s + k, j * s:j * s + k]
                out[:, :, i, j] = win.amax(dim=(-2, -1)) if not global_max else win.amax()
        return out.transpose(2, 3) if transpose else out
    return pool


POOL_WRONG = {
    "one window row short (off by one)": _pool_loops(drop_last=True),
    "height and width swapped": _pool_loops(transpose=True),
    "one maximum over the whole batch window": _pool_loops(global_max=True),
    "pooled only along the height": _pool_loops(only_rows=True),
    "stride defaults to 1": _pool_loops(stride_one_default=True),
    "relu then pool (max with 0)": lambda x, kernel_size, stride=None:
        max_pool_by_hand(x.clamp(min=0), kernel_size, stride),
    "average pooling": lambda x, kernel_size, stride=None: F.avg_pool2d(x, kernel_size, stride),
}


@pytest.mark.parametrize("label", POOL_WRONG)
def test_max_pool_wrong_answers_are_rejected(label):
    rejected(POOL, POOL_WRONG[label])


def _pool_offsets(x, kernel_size, stride=None):
    """Maximum over kernel offsets of strided slices."""
    s = stride or kernel_size
    ho, wo = (x.shape[2] - kernel_size) // s + 1, (x.shape[3] - kernel_size) // s + 1
    out = None
    for a in range(kernel_size):
        for b in range(kernel_size):
            sl = x[:, :, a:a + s * (ho - 1) + 1:s, b:b + s * (wo - 1) + 1:s]
            out = sl if out is None else torch.maximum(out, sl)
    return out.clone()


def _pool_im2col(x, kernel_size, stride=None):
    s = kernel_size if stride is None else stride
    n, c, h, w = x.shape
    cols = F.unfold(x, kernel_size, stride=s).reshape(n, c, kernel_size * kernel_size, -1)
    return cols.max(dim=2).values.reshape(n, c, (h - kernel_size) // s + 1, (w - kernel_size) // s + 1)


def _pool_scalar(x, kernel_size, stride=None):
    s = kernel_size if stride is None else stride
    n, c, h, w = x.shape
    ho, wo = (h - kernel_size) // s + 1, (w - kernel_size) // s + 1
    out = torch.full((n, c, ho, wo), -math.inf)
    for i in range(ho):
        for j in range(wo):
            for a in range(kernel_size):
                for b in range(kernel_size):
                    out[:, :, i, j] = torch.maximum(out[:, :, i, j], x[:, :, i * s + a, j * s + b])
    return out


POOL_VALID = {"kernel offsets": _pool_offsets, "F.unfold": _pool_im2col, "loops from -inf": _pool_scalar}


@pytest.mark.parametrize("label", POOL_VALID)
def test_max_pool_valid_answers_pass(label):
    accepted(POOL, POOL_VALID[label])


POOL_CHEATS = {
    "F.max_pool2d": lambda x, kernel_size, stride=None: F.max_pool2d(x, kernel_size, stride),
    "nn.MaxPool2d": lambda x, kernel_size, stride=None: nn.MaxPool2d(kernel_size, stride)(x),
    "F.max_pool2d with indices": lambda x, kernel_size, stride=None:
        F.max_pool2d_with_indices(x, kernel_size, stride)[0],
    "torch.max_pool2d": lambda x, kernel_size, stride=None: torch.max_pool2d(x, kernel_size, stride or kernel_size),
}


def test_max_pool_hard_coded_fixed_cases_are_rejected():
    ex = grading.exercise(POOL)
    table = [(c.args[0], max_pool_by_hand(*c.args)) for c in ex.edge_cases]

    def pool(x, kernel_size, stride=None):
        for inp, out in table:
            if inp.shape == x.shape and torch.equal(inp, x):
                return out.clone()
        s = stride or kernel_size
        return torch.zeros(*x.shape[:2], (x.shape[2] - kernel_size) // s + 1, (x.shape[3] - kernel_size) // s + 1)
    rejected(POOL, pool)


@pytest.mark.parametrize("label", POOL_CHEATS)
def test_max_pool_forbidden_builtins_are_rejected_quoting_the_rule(label):
    res = rejected(POOL, POOL_CHEATS[label], "used_builtin_pool")
    assert "The task says" in res.message


def test_max_pool_oracle_matches_f_max_pool2d():
    ex = grading.exercise(POOL)
    for case in list(ex.edge_cases) + [ex.cases(Rand(seed)) for seed in range(300)]:
        torch.testing.assert_close(max_pool_by_hand(*case.args), F.max_pool2d(*case.args), rtol=0, atol=0)


# =========================================================================== 5. receptive_field
def _rf_forward_recursion(layers):
    rf = 1
    for k, s, d in layers:  # the output-side recursion, applied from the wrong end
        rf = (rf - 1) * s + d * (k - 1) + 1
    return rf


RF_WRONG = {
    "strides ignored": lambda layers: 1 + sum((k - 1) * d for k, _, d in layers),
    "sum of kernel sizes": lambda layers: sum(k for k, _, _ in layers) or 1,
    "recursion from the wrong end": _rf_forward_recursion,
    "every stride applied to every layer": lambda layers: 1 + sum((k - 1) * d for k, _, d in layers) * math.prod(
        s for _, s, _ in layers),
    "span d*k": lambda layers: receptive_from_span(layers, lambda k, d: d * k),
    "no +1 start": lambda layers: receptive_from_span(layers, lambda k, d: (k - 1) * d) - 1,
}


def receptive_from_span(layers, grow):
    rf, jump = 1, 1
    for k, s, d in layers:
        rf += grow(k, d) * jump
        jump *= s
    return rf


@pytest.mark.parametrize("label", RF_WRONG)
def test_receptive_field_wrong_answers_are_rejected(label):
    rejected(RF, RF_WRONG[label])


def _rf_backward(layers):
    rf = 1
    for k, s, d in reversed(layers):  # from the output pixel back to the input
        rf = (rf - 1) * s + d * (k - 1) + 1
    return rf


def _rf_closed_form(layers):
    return 1 + sum((k - 1) * d * math.prod(s for _, s, _ in layers[:i]) for i, (k, _, d) in enumerate(layers))


def _rf_recursive(layers):
    if not layers:
        return 1
    *rest, (k, s, d) = layers
    jump = math.prod(st for _, st, _ in rest)
    return _rf_recursive(rest) + (k - 1) * d * jump


RF_VALID = {"backwards": _rf_backward, "closed form": _rf_closed_form, "recursive": _rf_recursive}


@pytest.mark.parametrize("label", RF_VALID)
def test_receptive_field_valid_answers_pass(label):
    accepted(RF, RF_VALID[label])


def _rf_by_backprop(layers):
    """The lesson's own experiment: all-ones conv layers, backprop one output pixel, measure the
    input region that gets a gradient (building the layers draws from the global RNG)."""
    if not layers:
        return 1
    convs = []
    for k, s, d in layers:
        conv = nn.Conv1d(1, 1, k, stride=s, dilation=d, bias=False)
        nn.init.ones_(conv.weight)
        convs.append(conv)
    size = 1 + sum((k - 1) * d for k, _, d in layers) * math.prod(s for _, s, _ in layers)  # >= the field
    x = torch.zeros(1, 1, size, requires_grad=True)
    out = nn.Sequential(*convs)(x)
    out[0, 0, 0].backward()
    seen = x.grad[0, 0].nonzero()
    return int(seen.max() - seen.min()) + 1  # the width of the region (a strided 1x1 layer leaves gaps)


def test_receptive_field_by_backprop_through_built_layers_passes():
    accepted(RF, _rf_by_backprop)


RF_CHEATS = {"memorised fixed cases": _table(RF), "an int equal to everything": lambda layers: AnyInt(1)}


@pytest.mark.parametrize("label", RF_CHEATS)
def test_receptive_field_cheats_are_rejected(label):
    rejected(RF, RF_CHEATS[label])


def _measured_rf(layers):
    """The receptive field torch measures: gradient of a central output pixel of 1-D convs
    with all-one weights (no cancellation) with respect to the input."""
    rf = receptive_field(layers)
    size = rf + 4 * math.prod(s for _, s, _ in layers) + 8
    x = torch.zeros(1, 1, size, requires_grad=True)
    h = x
    for k, s, d in layers:
        conv = nn.Conv1d(1, 1, k, stride=s, dilation=d, bias=False)
        nn.init.ones_(conv.weight)
        h = conv(h)
    h[0, 0, h.shape[-1] // 2].backward()
    nz = x.grad[0, 0].nonzero()
    return int(nz.max() - nz.min() + 1)


def test_receptive_field_oracle_matches_gradients_across_the_domain():
    ex = grading.exercise(RF)
    for case in list(ex.edge_cases) + [ex.cases(Rand(seed)) for seed in range(200)]:
        (layers,) = case.args
        assert receptive_field(layers) == _measured_rf(layers), layers


# =========================================================================== 6. SmallVGG
class _VGGBase(nn.Module):
    """A configurable SmallVGG builder for variants."""

    block = None  # (channels, width) -> list of layers
    keeps_size = True

    def __init__(self, in_channels, num_classes, widths, image_size):
        super().__init__()
        h, w = image_size
        layers, c = [], in_channels
        for width in widths:
            layers += self.block(c, width)
            c = width
            h, w = self.shrink(h), self.shrink(w)
        self.features = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(c * h * w, num_classes))

    @staticmethod
    def shrink(n):
        return n // 2

    def forward(self, x):
        return self.head(self.features(x))


class VGGNoPadding(_VGGBase):
    block = staticmethod(lambda c, w: [nn.Conv2d(c, w, 3, bias=False), nn.BatchNorm2d(w), nn.ReLU(), nn.MaxPool2d(2)])
    shrink = staticmethod(lambda n: (n - 2) // 2)


class VGGAvgPool(_VGGBase):
    block = staticmethod(lambda c, w: [nn.Conv2d(c, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(),
                                       nn.AvgPool2d(2)])


class VGGStridedConv(_VGGBase):
    block = staticmethod(lambda c, w: [nn.Conv2d(c, w, 3, padding=1, stride=2, bias=False), nn.BatchNorm2d(w),
                                       nn.ReLU()])
    shrink = staticmethod(lambda n: (n - 1) // 2 + 1)


class VGGDropout(_VGGBase):
    block = staticmethod(lambda c, w: [nn.Conv2d(c, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(),
                                       nn.MaxPool2d(2), nn.Dropout(0.25)])


class VGGChannelsLastFlatten(SmallVGG):
    def forward(self, x):
        return self.classifier[1](self.features(x).permute(0, 2, 3, 1).flatten(1))


class VGGCeilFlatten(_VGGBase):
    """Sizes the Linear with ceil (odd sizes) and pools with ceil_mode to match: a different net."""
    block = staticmethod(lambda c, w: [nn.Conv2d(c, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(),
                                       nn.MaxPool2d(2, ceil_mode=True)])
    shrink = staticmethod(lambda n: -(-n // 2))


class VGGHardCodedDigits(SmallVGG):
    """Ignores the spec: always the digits network."""

    def __init__(self, in_channels, num_classes, widths, image_size):
        super().__init__(1, 10, [8, 16], (8, 8))


class VGGTwoLinears(SmallVGG):
    def __init__(self, in_channels, num_classes, widths, image_size):
        super().__init__(in_channels, num_classes, widths, image_size)
        lin = self.classifier[1]
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(lin.in_features, 32), nn.ReLU(),
                                        nn.Linear(32, num_classes))


class VGGBatchNormEval(SmallVGG):
    """Keeps BatchNorm in eval mode all the time (running statistics while training)."""

    def forward(self, x):
        for m in self.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.eval()
        return super().forward(x)


VGG_WRONG = {
    "no padding": VGGNoPadding, "average pooling": VGGAvgPool, "strided convs instead of pooling": VGGStridedConv,
    "dropout added": VGGDropout, "channels-last flatten": VGGChannelsLastFlatten, "ceil-mode pooling": VGGCeilFlatten,
    "hard-coded digits spec": VGGHardCodedDigits, "a hidden Linear layer": VGGTwoLinears,
    "BatchNorm frozen in eval mode": VGGBatchNormEval,
}


@pytest.mark.parametrize("label", VGG_WRONG)
def test_small_vgg_wrong_answers_are_rejected(label):
    rejected(VGG, VGG_WRONG[label], n_random=4)


def test_small_vgg_no_padding_names_the_flatten_size():
    res = rejected(VGG, VGGNoPadding, "wrong_flatten_size", n_random=2)
    assert "MaxPool2d(2) halves" in res.message


class VGGLazy(nn.Module):
    def __init__(self, in_channels, num_classes, widths, image_size):
        super().__init__()
        layers, c = [], in_channels
        for w in widths:
            layers += [nn.Conv2d(c, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(), nn.MaxPool2d(2)]
            c = w
        self.net = nn.Sequential(*layers, nn.Flatten(), nn.LazyLinear(num_classes))

    def forward(self, x):
        return self.net(x)


class VGGDummyForward(nn.Module):
    """Sizes the Linear with a dummy batch in __init__ (train mode, batch of one)."""

    def __init__(self, in_channels, num_classes, widths, image_size):
        super().__init__()
        layers, c = [], in_channels
        for w in widths:
            layers += [nn.Conv2d(c, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(), nn.MaxPool2d(2)]
            c = w
        self.features = nn.Sequential(*layers)
        with torch.no_grad():
            n = self.features(torch.zeros(2, in_channels, *image_size)).flatten(1).shape[1]
        self.fc = nn.Linear(n, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))


class VGGFunctional(nn.Module):
    """Convs and norms in two ModuleLists (registered convs first), ReLU and pooling functional."""

    def __init__(self, in_channels, num_classes, widths, image_size):
        super().__init__()
        chans = [in_channels, *widths]
        self.convs = nn.ModuleList(nn.Conv2d(a, b, 3, padding=1, bias=False) for a, b in zip(chans, chans[1:]))
        self.norms = nn.ModuleList(nn.BatchNorm2d(b) for b in widths)
        h, w = image_size
        for _ in widths:
            h, w = h // 2, w // 2
        self.out = nn.Linear(widths[-1] * h * w, num_classes)

    def forward(self, x):
        for conv, norm in zip(self.convs, self.norms):
            x = F.max_pool2d(F.relu(norm(conv(x))), 2)
        return self.out(x.reshape(len(x), -1))


class VGGSamePadding(_VGGBase):
    """padding="same", in-place ReLU, an explicit pooling stride."""
    block = staticmethod(lambda c, w: [nn.Conv2d(c, w, (3, 3), padding="same", bias=False), nn.BatchNorm2d(w),
                                       nn.ReLU(inplace=True), nn.MaxPool2d(kernel_size=2, stride=2)])


class VGGFrozenFeatures(VGGFunctional):
    """Runs the conv/BN blocks under no_grad: right outputs, but the convolutions never learn."""

    def forward(self, x):
        with torch.no_grad():
            for conv, norm in zip(self.convs, self.norms):
                x = F.max_pool2d(F.relu(norm(conv(x))), 2)
        return self.out(torch.flatten(x, 1))


class VGGDetachedFeatures(SmallVGG):
    def forward(self, x):
        return self.classifier(self.features(x).detach())


def test_small_vgg_forward_outside_autograd_is_rejected():
    for cls in (VGGFrozenFeatures, VGGDetachedFeatures):
        res = rejected(VGG, cls, "parameter_not_trained", n_random=2)
        assert "no gradient reaches" in res.message and "torch.no_grad()" in res.message


VGG_VALID = {"padding='same'": VGGSamePadding, "LazyLinear": VGGLazy, "dummy forward": VGGDummyForward, "functional, two ModuleLists": VGGFunctional}


@pytest.mark.parametrize("label", VGG_VALID)
def test_small_vgg_valid_answers_pass(label):
    accepted(VGG, VGG_VALID[label])


def test_small_vgg_oracle_shapes_and_counts():
    ex = grading.exercise(VGG)
    for case in list(ex.edge_cases) + [ex.cases(Rand(seed)) for seed in range(60)]:
        c_in, n_cls, widths, (h, w) = case.args
        model = SmallVGG(c_in, n_cls, widths, (h, w))
        feats = model.features(torch.zeros(2, c_in, h, w))
        assert model.classifier[1].in_features == feats[0].numel()  # torch's own shape
        want = sum(a * b * 9 + 2 * b for a, b in zip([c_in, *widths], widths))  # 3x3 without bias, BatchNorm
        want += feats[0].numel() * n_cls + n_cls
        assert sum(p.numel() for p in model.parameters()) == want
        assert model(torch.zeros(1, c_in, h, w)).shape == (1, n_cls)


# =========================================================================== coverage of the fixed cases
def test_fixed_cases_cover_the_input_classes_the_lesson_names():
    conv = grading.exercise(CONV).edge_cases
    shapes = [(c.args[0], c.args[1], dict(zip(("stride", "padding", "dilation"), c.args[3:]), **c.kwargs)) for c in conv]
    assert any(kw.get("stride", 1) > w.shape[2] for _, w, kw in shapes), "stride > kernel"
    assert any(kw.get("padding", 0) > w.shape[2] // 2 for _, w, kw in shapes), "padding > kernel/2"
    assert any(kw.get("dilation", 1) > 1 for _, _, kw in shapes), "dilation"
    assert any(w.shape[2:] == (1, 1) for _, w, _ in shapes), "1x1 kernel"
    assert any(x.shape[2] != x.shape[3] for x, _, _ in shapes), "non-square input"
    assert any(w.shape[2] != w.shape[3] for _, w, _ in shapes), "non-square kernel"
    assert any(x.shape[0] == 1 for x, _, _ in shapes) and any(x.shape[0] > 1 for x, _, _ in shapes), "batch sizes"
    assert any(x.shape[1] == 1 for x, _, _ in shapes) and any(x.shape[1] > 1 for x, _, _ in shapes), "channels"
    assert any(not x.is_contiguous() for x, _, _ in shapes), "non-contiguous"
    assert any(c.args[2] is None for c in conv) and any(c.args[2] is not None for c in conv), "bias and none"
    pool = grading.exercise(POOL).edge_cases
    assert any(not c.args[0].is_contiguous() for c in pool)
    assert any(len(c.args) == 3 and c.args[2] > c.args[1] for c in pool), "pool stride > kernel"
    assert any(bool((c.args[0] < 0).all()) for c in pool), "all-negative input"
    assert any(c.args[0].shape[2] % 2 for c in pool), "odd size"


def test_verdicts_do_not_depend_on_the_seed():
    """A wrong answer that only differs on the fixed cases' classes fails on every seed, at the
    same (fixed) case: the random part cannot make it pass or change the named mistake."""
    for seed in (1, 2, 3, 99, 12345):
        assert grading.check(CONV, CONV_WRONG["true convolution (flipped kernel)"], seed=seed).mistake == "flipped_kernel"
        assert grading.check(SIZE, SIZE_WRONG["ceil"], seed=seed).mistake == "ceil_not_floor"
        assert grading.check(POOL, _pool_variant(zero_start=True), seed=seed).mistake == "zero_start"


def test_hints_give_ideas_and_leave_the_code_to_the_solution():
    """Hints go nudge -> idea; only `solution()` shows code (issue 14). Code here: a backticked span with a
    call that has arguments, an index, an assignment or a loop (a bare name such as `.grad` is not)."""
    code = __import__("re").compile(r"`[^`]*(\([^)`]|\[|=| for )[^`]*`")
    for exercise_id in grading.exercises():
        if exercise_id.startswith("08_convolutions."):
            for hint in grading.exercise(exercise_id).hints:
                assert not code.search(hint), (exercise_id, hint)


# =========================================================================== the counts
# What lesson_kit.Tables.assert_counts asks of the other lessons (this file keeps one dict per
# exercise): at least five wrong answers, three valid ones written differently, two cheats.
# SmallVGG has no cheat a check in the notebook could catch: a class that subclasses or imports
# the course's reference is cut where an instructor grades it (the sandbox stages the course
# without the references; tests/test_hostile_submissions.py).
RED_TEAM = {SIZE: (SIZE_WRONG, SIZE_VALID, SIZE_CHEATS), CONV: (CONV_WRONG, CONV_VALID, CONV_CHEATS),
            COUNT: (COUNT_WRONG, COUNT_VALID, COUNT_CHEATS), POOL: (POOL_WRONG, POOL_VALID, POOL_CHEATS),
            RF: (RF_WRONG, RF_VALID, RF_CHEATS), VGG: (VGG_WRONG, VGG_VALID, None)}


def test_every_exercise_has_its_red_team():
    assert set(RED_TEAM) == {e for e in grading.exercises() if e.split(".")[0] == LESSON}
    for eid, (wrong_answers, valid_answers, cheats) in RED_TEAM.items():
        assert len(wrong_answers) >= 5, eid
        assert len(valid_answers) >= 3, eid
        assert cheats is None or len(cheats) >= 2, eid


def test_the_intro_describes_the_classic_networks_as_they_were():
    """Lesson 08 once said LeNet, VGG and ResNet are "built from" Conv2d, BatchNorm2d, ReLU and
    MaxPool2d: LeNet predates BatchNorm and used tanh and average pooling, the first VGG had no
    BatchNorm, and ResNet's key is the residual connection (stride-2 convolutions, global
    average pooling)."""
    from course_utils import build, cells

    nb = build.read_py(build.SOLUTIONS / "08_convolutions.py")
    intro = " ".join(cells.source(next(c for c in nb.cells if c.cell_type == "markdown")).split())
    assert "(LeNet, VGG, ResNet) are built from" not in intro
    lenet = intro[intro.index("LeNet"):intro.index("VGG (")]
    assert "average-pooling" in lenet and "tanh" in lenet and "BatchNorm" not in lenet
    vgg = intro[intro.index("VGG ("):intro.index("ResNet (")]
    assert "BatchNorm came a year later" in vgg
    resnet = intro[intro.index("ResNet ("):]
    assert "residual connection" in resnet and "stride-2" in resnet and "global average pooling" in resnet
