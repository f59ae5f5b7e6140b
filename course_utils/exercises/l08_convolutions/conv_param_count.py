"""conv_param_count: the inverse problem. A model summary gives a layer's channels and its parameter
count; the learner returns `nn.Conv2d` keyword arguments (``kernel_size``, ``bias``, ``groups``)
that give exactly that count. The notebook shows the summary, not the formula: the learner decides
which arguments the count depends on and which choice makes it fit.

Several configurations often fit (LeNet's 156 is a 5x5 kernel with a bias or a 1x26 one without):
any valid one passes. ``run`` reads the answer's dict into plain numbers; ``finish`` (in the judge)
counts that layer's parameters and, when the count is off, names the counting slip that would have
made the answer's layer look right (a bias forgotten or counted when absent, one per input channel,
groups ignored or applied to both channel counts, the input channels forgotten). A ``None`` (no
layer found) is named by what the search must have left out: non-square kernels, groups > 1.

Subtle: some summary lines need ``groups > 1`` (depthwise) or a non-square kernel (a prime area);
a bias is forced off when every allowed ``in_channels // groups`` exceeds 1 and the remainder is not
a multiple; ``groups`` must divide both channel counts (``nn.Conv2d`` refuses otherwise).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from course_utils.grading import Case, Exercise, Expect, Incorrect, Mistake, Rand, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/08_convolutions.py)
from ...answers.l08_convolutions import conv_param_count


# --- cases: a real layer's channels and count (its configuration stays with the grader)
def _count(i: int, o: int, kh: int, kw: int, bias: bool, groups: int) -> int:
    return o * (i // groups) * kh * kw + (o if bias else 0)


def _cases(r: Rand) -> Case:
    g = r.choice([1, 1, 2, 3, 4, 8])
    i, o = g * r.integer(1, 6), g * r.integer(1, 6)
    kh, kw = (k := r.integer(1, 7), k) if r.integer(0, 1) else (r.integer(1, 7), r.integer(1, 7))
    return Case((i, o, _count(i, o, kh, kw, bool(r.integer(0, 1)), g)))


# small layers first: each slip's first wrong layer (or None) is on one of them, so it is named there
EDGE_CASES = [
    Case((2, 2, 36), label="2 -> 2 channels, 36 parameters", show_inputs=True),
    Case((4, 2, 36), label="4 -> 2 channels, 36 parameters", show_inputs=True),
    Case((6, 9, 36), label="6 -> 9 channels, 36 parameters: groups 3, a 2x1 kernel", show_inputs=True),
]
# the notebook's summary (tests/test_l08_convolutions.py checks the two stay the same)
SUMMARY = [(3, 32, 896), (32, 32, 320), (32, 64, 2048), (64, 64, 28672), (1, 6, 156)]
SUMMARY_LABELS = ["3 -> 32 channels, 896 parameters", "32 -> 32 channels, 320 parameters (no groups=1 layer fits)",
                  "32 -> 64 channels, 2048 parameters", "64 -> 64 channels, 28672 parameters (no square kernel fits)",
                  "LeNet's first layer: 1 -> 6 channels, 156 parameters"]
EDGE_CASES += [Case(args, label="the summary's " + label, show_inputs=True)
               for args, label in zip(SUMMARY, SUMMARY_LABELS)]
EDGE_CASES += [
    Case((8, 4, 288), label="8 -> 4 channels, 288 parameters: no bias fits", show_inputs=True),
    Case((8, 4, 292), label="8 -> 4 channels, 292 parameters: a bias is needed", show_inputs=True),
    Case((12, 12, 120), label="12 -> 12 channels, 120 parameters: depthwise", show_inputs=True),
    Case((3, 10, 460), label="3 -> 10 channels, 460 parameters: a 3x5 kernel", show_inputs=True),
    Case((4, 8, 104), label="4 -> 8 channels, 104 parameters", show_inputs=True),
]


# --- run (with the answer: its dict read into plain numbers) and finish (in the judge)
_KEYS = {"kernel_size", "bias", "groups", "stride", "padding", "dilation"}


def _config(got: Any) -> bool:
    if not isinstance(got, dict) or not set(got) <= _KEYS or "kernel_size" not in got:
        return False
    k, bias, groups = got["kernel_size"], got.get("bias", True), got.get("groups", 1)
    sides = [k] if isinstance(k, numbers.Integral) else list(k) if isinstance(k, (tuple, list)) and len(k) == 2 else []
    return (bool(sides) and all(isinstance(s, numbers.Integral) and not isinstance(s, bool) and s >= 1 for s in sides)
            and (isinstance(bias, bool) or (isinstance(bias, numbers.Integral) and bias in (0, 1)))
            and isinstance(groups, numbers.Integral) and not isinstance(groups, bool)
            and groups >= 1)


_CONFIG = Expect("not_a_config", "a dict of `nn.Conv2d` keyword arguments, such as `{'kernel_size': 3, "
                 "'bias': True, 'groups': 1}` (a kernel size of whole numbers >= 1), or `None`", _config)


def _run(answer, case: Case):
    got = answer(*case.args)
    if got is None:
        return None
    _CONFIG.check(got)
    k = got["kernel_size"]
    kh, kw = (int(k), int(k)) if isinstance(k, numbers.Integral) else (int(k[0]), int(k[1]))
    return [kh, kw, bool(got.get("bias", True)), int(got.get("groups", 1))]


def _fits(i: int, o: int, n: int, square: bool = False, grouped: bool = True) -> bool:
    """Whether some layer with i -> o channels has n parameters (square kernels only; groups 1 only)."""
    for g in [g for g in range(1, i + 1) if i % g == 0 and o % g == 0] if grouped else [1]:
        for bias in (True, False):
            weights, per = n - (o if bias else 0), o * (i // g)
            if weights > 0 and weights % per == 0 and (not square or math.isqrt(weights // per) ** 2 == weights // per):
                return True
    return False


# the counts a slip gives a layer, in the order they are named
SLIPS = {
    "forgot_bias": lambda i, o, kh, kw, b, g: o * (i // g) * kh * kw,
    "bias_always": lambda i, o, kh, kw, b, g: o * (i // g) * kh * kw + o,
    "bias_per_input_channel": lambda i, o, kh, kw, b, g: o * (i // g) * kh * kw + (i if b else 0),
    "ignored_groups": lambda i, o, kh, kw, b, g: o * i * kh * kw + (o if b else 0),
    "groups_on_both_channels": lambda i, o, kh, kw, b, g: (o // g) * (i // g) * kh * kw + (o if b else 0),
    "forgot_in_channels": lambda i, o, kh, kw, b, g: o * kh * kw + (o if b else 0),
}


def _finish(ran, case: Case) -> int:
    i, o, n = case.args
    if ran is None:
        if not _fits(i, o, n, square=True):
            raise Incorrect("square_kernel_assumed", n=n)
        if not _fits(i, o, n, grouped=False):
            raise Incorrect("ignored_groups", n=n)
        raise Incorrect("found_none", n=n)
    kh, kw, bias, g = ran
    if i % g or o % g:
        raise Incorrect("groups_not_dividing", groups=g, i=i, o=o)
    got = _count(i, o, kh, kw, bias, g)
    if got != n:
        for slip, count in SLIPS.items():
            if count(i, o, kh, kw, bias, g) == n:
                raise Incorrect(slip, got=got, n=n)
    return got


# --- wrong answers: the reference's search, counting with a slip (or searching too little)
def _search(count=_count, square=False, grouped=True, divides=True, order=(True, False)):
    def answer(in_channels, out_channels, n_params):
        groups = range(1, in_channels + 1) if grouped else [1]
        for g in [g for g in groups if in_channels % g == 0 and (out_channels % g == 0 or not divides)]:
            for bias in order:
                rest = count(in_channels, out_channels, 0, 0, bias, g)  # every count is affine in the area
                per = count(in_channels, out_channels, 1, 1, bias, g) - rest
                area, left = divmod(n_params - rest, per)
                if area < 1 or left:
                    continue
                kh = max(d for d in range(1, math.isqrt(area) + 1) if area % d == 0)
                if not square or kh * kh == area:
                    return {"kernel_size": (kh, area // kh), "bias": bias, "groups": g}
        return None
    return answer


def _slip(name, order=(True, False)):
    return _search(count=lambda i, o, kh, kw, b, g: SLIPS[name](i, o, kh, kw, b, g), order=order)


# --- declaration
_OFF = " The layer you returned has {got} parameters, not {n}."
register(Exercise(
    lesson=LESSON, name="conv_param_count",
    title="Which nn.Conv2d has this many parameters? (kernel size, bias, groups from a model summary)",
    reference=conv_param_count, cases=_cases, edge_cases=EDGE_CASES, run=_run, finish=_finish, n_random=30,
    arg_names=("in_channels", "out_channels", "n_params"),
    # the text suggests building layers and counting: their initialisation draws from the global RNG
    uses_global_rng=True,
    mistakes=[
        Mistake("forgot_bias", "You counted no bias, but `bias=True` gives every output channel one "
                "number of its own." + _OFF, _slip("forgot_bias"), match_output=False),
        Mistake("bias_always", "With `bias=False` the layer has no bias at all, yet your count "
                "included one." + _OFF, _slip("bias_always", order=(False, True)), match_output=False),
        Mistake("bias_per_input_channel", "A bias is one number per *output* channel (each filter "
                "adds its own), not per input channel." + _OFF, _slip("bias_per_input_channel"), match_output=False),
        Mistake("ignored_groups", "With `groups=g` each filter sees only `in_channels // g` of the input "
                "channels, which divides the weight's size by g. Does your count divide by the groups, and "
                "does your search try groups > 1? Some of these counts fit no `groups=1` layer.",
                _search(grouped=False), match_output=False),
        Mistake("groups_on_both_channels", "`groups` splits the channels each filter *sees*; the "
                "layer still has `out_channels` filters." + _OFF + " Build it and look at its weight's shape.",
                _slip("groups_on_both_channels"), match_output=False),
        Mistake("forgot_in_channels", "Each filter spans every input channel of its group, not "
                "one." + _OFF + " Build it and look at its weight's shape.", _slip("forgot_in_channels"),
                match_output=False),
        Mistake("square_kernel_assumed", "You found no layer with {n} parameters, and no square kernel "
                "gives that count. Which other shapes can `kernel_size` take?", _search(square=True),
                match_output=False),
        Mistake("groups_not_dividing", "`nn.Conv2d` refuses `groups={groups}` for {i} -> {o} channels: "
                "groups must divide both channel counts. Try building the layer you returned.",
                _search(divides=False), match_output=False),
        Mistake("found_none", "You found no layer with {n} parameters, but one exists (every line of the "
                "summary comes from a real layer): which arguments, or which values of them, did your "
                "search leave out?", lambda in_channels, out_channels, n_params: None, match_output=False),
        _CONFIG.mistake(lambda in_channels, out_channels, n_params: (3, True, 1)),
    ],
    hints=[
        "Which of nn.Conv2d's arguments change its parameter count, and which do not? Build a few layers "
        "and count: sum of p.numel() over layer.parameters(), and look at layer.weight.shape.",
        "Part of the count comes in steps of out_channels (the bias, when there is one); the rest is "
        "out_channels * (in_channels // groups) times the kernel's area. Which values can groups take, "
        "and what must that area be for the count to fit?",
        "A kernel area need not be a square number: kernel_size also takes a pair (kh, kw). Which "
        "groups does nn.Conv2d accept for these channel counts? (math.isqrt helps to spot squares.)",
    ],
))
