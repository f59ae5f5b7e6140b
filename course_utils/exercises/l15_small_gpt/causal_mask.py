"""causal_mask: the (T, T) float mask to add to attention scores, 0 where query i may look at
key j (j <= i) and -inf elsewhere.

Subtle: which triangle is blocked (the future: above the diagonal); the diagonal is allowed (a
position sees itself, or row 0 has nothing left and its softmax is 0/0 = NaN); the values are
0 and -inf for an *additive* mask (1/0 or True/False are a multiplicative or boolean mask, another
convention); float32 (T, T).
"""

from __future__ import annotations

import torch

from typing import Any

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ...answers.l15_small_gpt import causal_mask
from ._kit import LESSON

NEG_INF = float("-inf")


# --- reference: imported above from course_utils/answers/l15_small_gpt.py (generated from the notebook)


# --- cases
def _cases(r: Rand) -> Case:
    return Case((r.integer(2, 12),))


EDGE_CASES = [
    Case((4,), label="T = 4", show_inputs=True),
    Case((1,), label="T = 1 (a single position)", show_inputs=True),
    Case((2,), label="T = 2", show_inputs=True),
]


def _run(answer: Any, case: Case) -> Any:
    out = answer(*case.args)
    (T,) = case.args
    if (isinstance(out, torch.Tensor) and out.shape == (T, T) and out.is_floating_point() and T >= 2
            and bool(torch.isfinite(out).all())):
        allowed = torch.ones(T, T, dtype=torch.bool).tril()
        blocked = out.detach()[~allowed]
        if bool((out.detach()[allowed] == 0).all()) and bool((blocked <= -100).all()):
            raise Incorrect("finite_mask", value=f"{float(blocked.max()):.3g}")
    return out


# --- wrong answers
def _allowed(T):
    return torch.ones(T, T, dtype=torch.bool).tril()


def _upper(T):
    return torch.zeros(T, T).masked_fill(~_allowed(T).T, NEG_INF)


def _diagonal_masked(T):
    return torch.zeros(T, T).masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(-1), NEG_INF)


def _values_swapped(T):
    return torch.zeros(T, T).masked_fill(_allowed(T), NEG_INF)


def _ones_and_zeros(T):
    return _allowed(T).float()


def _boolean(T):
    return _allowed(T)


def _finite(T):
    return torch.zeros(T, T).masked_fill(~_allowed(T), -1e9)


# --- declaration
register(Exercise(
    lesson=LESSON, name="causal_mask", title="The causal mask to add to attention scores",
    reference=causal_mask, cases=_cases, edge_cases=EDGE_CASES, run=_run,
    mistakes=[
        Mistake("future_visible", "Your mask blocks the *past* (below the diagonal) and lets each position see the "
                "future, the very characters it must predict. Row `i` is query `i`: it may look at keys `j <= i`, "
                "on and below the diagonal.", _upper),
        Mistake("diagonal_masked", "Your mask also blocks the diagonal, so a position cannot see itself: row 0 "
                "has no key left, and the softmax of a row of -inf is 0/0 = NaN. Keep the diagonal at 0.",
                _diagonal_masked),
        Mistake("values_swapped", "Your mask puts -inf where a query *may* look and 0 where it may not. Added to "
                "the scores, -inf removes a key from the softmax: it belongs on the blocked keys.", _values_swapped),
        Mistake("multiplicative", "Your mask holds 1 where a query may look and 0 elsewhere: added to the scores, "
                "a 0 leaves the future key's score as it was (exp of it is still positive). An additive mask "
                "uses 0 for allowed and -inf for blocked.", _ones_and_zeros),
        Mistake("boolean", "Your mask is boolean (True where a query may look). That is the convention of "
                "`F.scaled_dot_product_attention`'s `attn_mask`; this task asks for the float mask to *add* to the "
                "scores: 0 where allowed, -inf where blocked.", _boolean),
        Mistake("finite_mask", "Your mask blocks the future with a large finite number ({value}) instead of -inf. "
                "That is a weight of almost 0, not 0: it depends on the scores staying far above it, and in float16 "
                "it overflows to -inf anyway. The additive mask holds `float('-inf')`, which the softmax turns into "
                "a weight of exactly 0.", _finite, match_output=False),
    ],
    hints=[
        "Draw the (T, T) grid for T = 3 with the query positions down the side and the key positions along the top. "
        "Which cells hold a key that comes after its query?",
        "Each cell holds a number that is *added* to a score. Which number leaves a score exactly as it was, and "
        "which one makes its exponential, and so its softmax weight, exactly zero? Row 0 must keep one key.",
    ],
))
