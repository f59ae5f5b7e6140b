"""causal_attention: a teammate's causal attention (scores laid out one row per key, a right mask,
the softmax along the queries) passes their own test (change the future keys and values) but leaks
the future through the normalisation (change the future queries too and the past moves); the
learner finds where and writes causal attention that matches
``F.scaled_dot_product_attention(q, k, v, is_causal=True)``.

Subtle: the scale is sqrt(d) (the query/key size, not d, not dv); the mask blocks the future
(above the diagonal) and keeps the diagonal; it acts on the scores, before the softmax, with -inf
(0 still gets weight, and a large finite fill such as -1e9 is a weight of almost 0, not 0: the last
fixed case has scores near -1e37, entries of 4e18 the built-in handles exactly, and the future key
scoring higher, so a fill of -1e37 or above, or any finite number added, gives the future all the
weight: ``finite_mask``); the softmax runs over the keys (dim=-1). d != dv and T >= 2 in every random
case, with 0 to 2 leading dimensions, so each slip gives wrong values or a wrong shape. The
built-in (and the kernels behind it) are forbidden.
"""

from __future__ import annotations

import math

import torch

from course_utils.grading import Case, Exercise, Mistake, Rand, register

from ...answers.l15_small_gpt import causal_attention
from ._kit import LESSON

NEG_INF = float("-inf")


# --- reference: imported above from course_utils/answers/l15_small_gpt.py (generated from the notebook)


# --- cases
def _qkv(r: Rand, batch: tuple[int, ...], T: int, d: int, dv: int, dtype=torch.float32) -> Case:
    return Case((r.randn(*batch, T, d, dtype=dtype) * 1.5, r.randn(*batch, T, d, dtype=dtype) * 1.5,
                 r.randn(*batch, T, dv, dtype=dtype)))


def _cases(r: Rand) -> Case:
    batch = r.choice([(), (r.integer(1, 3),), (r.integer(1, 2), r.integer(2, 3))])
    d, dv = r.integer(2, 8), r.integer(2, 6)
    return _qkv(r, batch, r.integer(2, 7), d, dv if dv != d else dv + 1)


def _fixed(seed: int, batch: tuple[int, ...], T: int, d: int, dv: int, label: str, dtype=torch.float32) -> Case:
    case = _qkv(Rand(seed), batch, T, d, dv, dtype)
    case.label = label
    return case


def _far_below() -> Case:
    """Scores near -1e37, the future key above the past one: a finite fill (filled in, or added) lets it in."""
    r = Rand(10)
    q, k = (0.5 + r.rand(3, 2, 4)) * 4e18, -(0.5 + r.rand(3, 1, 4)) * 4e18
    return Case((q, torch.cat([k, k / 2], dim=-2), r.randn(3, 2, 3)),
                label="keys that all score about -1e37 (q entries 4e18, k entries -4e18), T = 2, the future key "
                "scoring higher")


EDGE_CASES = [
    _fixed(1, (), 4, 5, 3, "one sequence of 4 positions, d = 5, dv = 3"),
    _fixed(2, (2, 3), 5, 4, 4, "a batch of 2 with 3 heads, T = 5, d = dv = 4"),
    _fixed(3, (2,), 1, 6, 2, "a single position (T = 1)"),
    _fixed(4, (), 6, 16, 3, "d = 16, float64", dtype=torch.float64),
    _far_below(),
]


# --- wrong answers
def _scores(q, k, scale):
    return q @ k.transpose(-2, -1) / scale


def _future(T, device):
    return ~torch.ones(T, T, dtype=torch.bool, device=device).tril()


def _attend(scores, v, dim=-1, blocked=None, value=NEG_INF):
    T = scores.shape[-1]
    blocked = _future(T, scores.device) if blocked is None else blocked
    return torch.softmax(scores.masked_fill(blocked, value), dim=dim) @ v


def _no_scale(q, k, v):
    return _attend(_scores(q, k, 1.0), v)


def _scaled_by_d(q, k, v):
    return _attend(_scores(q, k, q.shape[-1]), v)


def _scaled_by_dv(q, k, v):
    return _attend(_scores(q, k, math.sqrt(v.shape[-1])), v)


def _softmax_over_queries(q, k, v):
    return _attend(_scores(q, k, math.sqrt(q.shape[-1])), v, dim=-2)


def _no_mask(q, k, v):
    return torch.softmax(_scores(q, k, math.sqrt(q.shape[-1])), dim=-1) @ v


def _upper_triangle(q, k, v):
    T = q.shape[-2]
    return _attend(_scores(q, k, math.sqrt(q.shape[-1])), v, blocked=_future(T, q.device).T)


def _diagonal_masked(q, k, v):
    T = q.shape[-2]
    return _attend(_scores(q, k, math.sqrt(q.shape[-1])), v, blocked=~torch.ones(T, T, dtype=torch.bool).tril(-1))


def _mask_with_zero(q, k, v):
    return _attend(_scores(q, k, math.sqrt(q.shape[-1])), v, value=0.0)


def _finite_fill(q, k, v):
    return _attend(_scores(q, k, math.sqrt(q.shape[-1])), v, value=-1e9)


def _mask_after_softmax(q, k, v):
    weights = torch.softmax(_scores(q, k, math.sqrt(q.shape[-1])), dim=-1)
    return weights.masked_fill(_future(q.shape[-2], q.device), 0.0) @ v


def _teammate_mask_flipped(q, k, v):
    """The teammate's key-row layout with its (right) mask flipped, the softmax still along the queries."""
    T = q.shape[-2]
    scores = _scores(k, q, math.sqrt(q.shape[-1]))  # row j a key, column i a query
    return _attend(scores, torch.eye(T, dtype=q.dtype), blocked=_future(T, q.device)).transpose(-2, -1) @ v


def _scaled_after_softmax(q, k, v):
    weights = _attend(_scores(q, k, 1.0), v=torch.eye(q.shape[-2], dtype=q.dtype))
    return weights / math.sqrt(q.shape[-1]) @ v


# --- declaration
register(Exercise(
    lesson=LESSON, name="causal_attention",
    title="Causal scaled dot-product attention by hand",
    reference=causal_attention, cases=_cases, edge_cases=EDGE_CASES,
    forbid=("torch.nn.functional.scaled_dot_product_attention", "torch.nn.MultiheadAttention",
            "torch.nn.functional.multi_head_attention_forward",
            "aten._scaled_dot_product_*", "aten._native_multi_head_attention",  # the kernels behind them
            "re:scaled_dot_product"),  # and their public torch._ names (torch._scaled_dot_product_attention_math)
    rule_text="Do not use `F.scaled_dot_product_attention`",
    mistakes=[
        Mistake("no_scale", "Your scores are not divided by anything: dot products of d features grow like "
                "sqrt(d), the softmax saturates and the weights become almost one-hot. Divide by sqrt(d).",
                _no_scale),
        Mistake("scaled_by_d", "You divided the scores by d; the scale is the square root of d.", _scaled_by_d),
        Mistake("scaled_by_dv", "You scaled by the size of the *values*; the scores are dot products of queries "
                "and keys, so the scale comes from their size d.", _scaled_by_dv),
        Mistake("softmax_over_queries", "This is the teammate's leak: your mask is right, but your softmax "
                "normalises each key's column over the queries, so the weights of position `i` share a "
                "denominator with the queries after it, and a future query moves the past. Which numbers should "
                "sum to one: the weights one query gives out, or those one key receives?",
                _softmax_over_queries),
        Mistake("no_mask", "Your attention is not causal: every position sees the whole sequence, the future "
                "included. Block the keys after each query before the softmax.", _no_mask),
        Mistake("future_visible", "Your mask blocks the past and lets each position see the future: query `i` may "
                "look at keys `j <= i` (on and below the diagonal).", _upper_triangle),
        Mistake("diagonal_masked", "Your mask also blocks the diagonal, so a position cannot see itself; the first "
                "position has no key left and its softmax gives NaN.", _diagonal_masked),
        Mistake("masked_with_zero", "A blocked score set to 0 still gets weight after the softmax (e^0 = 1): set it "
                "to -inf, which the softmax turns into a weight of exactly 0.", _mask_with_zero),
        Mistake("finite_mask", "You blocked the future with a large finite number instead of -inf: that is a "
                "weight of almost 0, not 0, and only while the scores stay far above it. On scores near -1e37 (the "
                "case above) your number blocks nothing, filled in or added, and the future takes all the "
                "attention. Block with -inf, which the softmax turns into a weight of exactly 0 whatever the "
                "scores.",
                _finite_fill),
        Mistake("masked_after_softmax", "You zeroed the future weights after the softmax, so each row no longer sums "
                "to 1. The mask must act on the scores, before the softmax normalises them.", _mask_after_softmax),
        Mistake("mask_flipped", "You flipped the teammate's mask, which was right for their layout (a row per key, "
                "so the keys after a query are below the diagonal there): now each position sees the future and not "
                "its past. The leak was elsewhere: change the future queries and watch which step moves the past.",
                _teammate_mask_flipped),
        Mistake("scaled_after_softmax", "You divided by sqrt(d) after the softmax: the weights no longer sum to 1 "
                "and the softmax saw unscaled scores. The scale acts on the scores, before the softmax.",
                _scaled_after_softmax),
    ],
    hints=[
        "The teammate's test changes the future keys and values and passes; the notebook's changes the future "
        "queries too and fails. Which step of their attention reads the queries of other positions?",
        "Every query distributes its attention over the keys it may see: its weights, one per key, sum to one "
        "on their own. A softmax shares one denominator along the dimension it normalises; in the teammate's "
        "layout, which dimension holds one query's weights?",
        "Check your answer outside your function: the row sums of the weights, the teammate's future test with "
        "all three tensors changed, and the fused built-in with `is_causal` set.",
    ],
))
