"""attention: scaled dot-product attention by hand, softmax(q k^T / sqrt(d), masked) @ v, for any
batch dimensions, checked like F.scaled_dot_product_attention (bool mask: True = may look).

Subtle: ``k.T`` or ``transpose(0, 1)`` swaps batch dimensions, not the last two; the scale is
sqrt(d) (d = the query/key size, not dv, not Lk); a masked score set to 0 (not -inf) still gets
weight; a mask applied after the softmax leaves weights that no longer sum to 1; softmax over the
queries (dim=-2) instead of the keys; a large finite fill (-1e9) instead of -inf gives a weight of
almost 0, not 0: the last fixed case has scores near -1e37 (entries of 4e18, which the built-in
handles exactly) and blocks each query's best key, so a fill of -1e37 or above (or any finite number
added to the scores) gives that key all the attention (only a fill at float32's floor, ``finfo.min``,
is -inf's twin for finite scores). A repair: the notebook shows a colleague's version with the
last two bugs (``colleagues_two_bugs``; fixing one names the other). Lq != Lk and d != dv in every
random case, so each of these gives a wrong shape or wrong values.
"""

from __future__ import annotations

import torch

from course_utils.grading import Case, Exercise, Mistake, Rand, register

from ...answers.l01_tensors import attention
from ._kit import LESSON


# --- reference: imported above from course_utils/answers/l01_tensors.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases
def _mask(r: Rand, lq: int, lk: int, batch: tuple[int, ...]) -> torch.Tensor | None:
    kind = r.choice(["none", "shared", "per_batch", "causal"])
    if kind == "none":
        return None
    if kind == "causal":
        return torch.ones(lq, lk, dtype=torch.bool).tril(diagonal=max(0, lk - lq))
    shape = (lq, lk) if kind == "shared" or not batch else (*batch, lq, lk)
    mask = r.rand(*shape) < 0.6
    first = torch.nn.functional.one_hot(r.randint(0, lk, shape[:-1]), lk).bool()
    return mask | first  # every query may look at one key at least


def _cases(r: Rand) -> Case:
    batch = r.choice([(), (r.integer(1, 3),), (r.integer(1, 2), r.integer(2, 3))])
    lq, lk = r.integer(1, 5), r.integer(2, 6)
    lk = lk if lk != lq else lk + 1
    d, dv = r.integer(2, 8), r.integer(2, 6)
    dv = dv if dv != d else dv + 1
    q, k, v = r.randn(*batch, lq, d), r.randn(*batch, lk, d), r.randn(*batch, lk, dv)
    mask = _mask(r, lq, lk, batch)
    return Case((q, k, v) if mask is None else (q, k, v, mask))


def _fixed(seed: int, batch: tuple[int, ...], lq: int, lk: int, d: int, dv: int, mask, label: str,
           dtype: torch.dtype = torch.float32) -> Case:
    r = Rand(seed)
    args = (r.randn(*batch, lq, d, dtype=dtype) * 2, r.randn(*batch, lk, d, dtype=dtype) * 2,
            r.randn(*batch, lk, dv, dtype=dtype))
    return Case(args if mask is None else (*args, mask), label=label)


def _distinct_mask(seed: int, shape: tuple[int, ...]) -> torch.Tensor:
    """A bool mask of ``shape`` whose (Lq, Lk) slices all differ; every query keeps a key."""
    r = Rand(seed)
    while True:
        mask = r.rand(*shape) < 0.5
        mask |= torch.nn.functional.one_hot(r.randint(0, shape[-1], shape[:-1]), shape[-1]).bool()
        slices = mask.reshape(-1, *shape[-2:])
        if len({tuple(m.flatten().tolist()) for m in slices}) == len(slices):
            return mask


def _far_below() -> Case:
    """Scores near -1e37, each query's best key blocked: a finite fill (filled in, or added) lets it in."""
    r = Rand(10)
    q, k = (0.5 + r.rand(3, 4)) * 4e18, -(0.5 + r.rand(5, 4)) * 4e18
    mask = ~torch.nn.functional.one_hot((q @ k.mT).argmax(-1), 5).bool()
    return Case((q, k, r.randn(5, 3), mask), label="keys that all score about -1e37 (q entries 4e18, k entries "
                "-4e18), each query's best key blocked")


_EDGE_CASES = [
    _fixed(1, (), 3, 4, 5, 2, None, "one sequence, no mask: q (3, 5), k (4, 5), v (4, 2)"),
    _fixed(2, (2, 3), 4, 4, 6, 6, torch.ones(4, 4, dtype=torch.bool).tril(),
           "a batch of 2 with 3 heads, a causal mask (4, 4)"),
    _fixed(3, (2,), 2, 5, 4, 3, torch.tensor([[True, False, False, True, False], [False, False, True, False, False]]),
           "a mask that leaves one query a single key"),
    _fixed(4, (), 1, 3, 16, 2, None, "a single query, d = 16", dtype=torch.float64),
    _fixed(5, (2, 2), 3, 4, 4, 3, _distinct_mask(5, (2, 2, 3, 4)),
           "a batch of 2 with 2 heads, a different mask (2, 2, 3, 4) for every sequence and head"),
    _fixed(6, (2, 3), 2, 5, 4, 2, _distinct_mask(6, (2, 1, 2, 5)),
           "a batch of 2 with 3 heads, one mask per sequence (2, 1, 2, 5) shared by its heads"),
    _far_below(),
]


# --- wrong answers
def _scores(q, k, scale):
    return q @ k.transpose(-2, -1) / scale


def _masked(scores, mask, value=float("-inf")):
    return scores if mask is None else scores.masked_fill(~mask, value)


def _unscaled(q, k, v, mask=None):
    return torch.softmax(_masked(_scores(q, k, 1.0), mask), dim=-1) @ v


def _scaled_by_d(q, k, v, mask=None):
    return torch.softmax(_masked(_scores(q, k, q.shape[-1]), mask), dim=-1) @ v


def _scaled_by_dv(q, k, v, mask=None):
    return torch.softmax(_masked(_scores(q, k, v.shape[-1] ** 0.5), mask), dim=-1) @ v


def _softmax_over_queries(q, k, v, mask=None):
    return torch.softmax(_masked(_scores(q, k, q.shape[-1] ** 0.5), mask), dim=-2) @ v


def _mask_inverted(q, k, v, mask=None):
    scores = _scores(q, k, q.shape[-1] ** 0.5)
    return torch.softmax(scores if mask is None else scores.masked_fill(mask, float("-inf")), dim=-1) @ v


def _mask_with_zero(q, k, v, mask=None):
    return torch.softmax(_masked(_scores(q, k, q.shape[-1] ** 0.5), mask, 0.0), dim=-1) @ v


def _finite_fill(q, k, v, mask=None):
    return torch.softmax(_masked(_scores(q, k, q.shape[-1] ** 0.5), mask, -1e9), dim=-1) @ v


def _mask_after_softmax(q, k, v, mask=None):
    weights = torch.softmax(_scores(q, k, q.shape[-1] ** 0.5), dim=-1)
    return (weights if mask is None else weights * mask) @ v


def _colleagues(q, k, v, mask=None):
    """The notebook's colleague: softmax over the queries, then the mask multiplied in."""
    weights = torch.softmax(_scores(q, k, q.shape[-1] ** 0.5), dim=-2)
    return (weights if mask is None else weights * mask) @ v


def _weights_only(q, k, v, mask=None):
    return torch.softmax(_masked(_scores(q, k, q.shape[-1] ** 0.5), mask), dim=-1)


# --- declaration
register(Exercise(
    lesson=LESSON, name="attention",
    title="Scaled dot-product attention by hand: softmax(q k^T / sqrt(d), masked) @ v",
    reference=attention, cases=_cases, edge_cases=_EDGE_CASES,
    forbid=("torch.nn.functional.scaled_dot_product_attention", "torch.nn.MultiheadAttention",
            "torch.nn.functional.multi_head_attention_forward",
            "aten._scaled_dot_product_*", "aten._native_multi_head_attention",  # the kernels behind them
            "re:scaled_dot_product"),  # and their public torch._ names (torch._scaled_dot_product_attention_math)
    rule_text="Do not use `F.scaled_dot_product_attention`",
    mistakes=[
        Mistake("no_scale", "Your scores are not divided by anything: with d features per query, dot products "
                "grow like sqrt(d), the softmax saturates and the weights become almost one-hot.", _unscaled),
        Mistake("scaled_by_d", "You divided the scores by d; the scale is the square root of d.", _scaled_by_d),
        Mistake("scaled_by_dv", "You scaled by the size of the *values*; the scores are dot products of queries "
                "and keys, so the scale comes from their size d.", _scaled_by_dv),
        Mistake("softmax_over_queries", "Your weights sum to 1 over the queries (down each column of the "
                "(Lq, Lk) scores). Whose attention is being shared out among whom: over which dimension must "
                "each query's weights sum to 1?", _softmax_over_queries),
        Mistake("mask_inverted", "You blocked the positions where `mask` is True; True means the query *may* "
                "look at that key (the convention of `F.scaled_dot_product_attention`'s boolean mask).",
                _mask_inverted),
        Mistake("masked_with_zero", "A masked score of 0 still gets weight after the softmax (e^0 = 1). What "
                "score does the softmax turn into a weight of exactly 0?", _mask_with_zero),
        Mistake("finite_mask", "You blocked keys with a large finite number instead of -inf: that is a weight of "
                "almost 0, not 0, and only while the scores stay far above it. On scores near -1e37 (the case "
                "above) your number blocks nothing, filled in or added, and the blocked best key takes all the "
                "attention. What score does the softmax turn into a weight of exactly 0, whatever the other "
                "scores are?",
                _finite_fill),
        Mistake("masked_after_softmax", "You zeroed masked weights after the softmax, so each query's weights no "
                "longer sum to 1 and its hidden keys still shape the weights of the others. When must the mask "
                "act, so that the softmax shares the attention among the visible keys only?", _mask_after_softmax),
        # the notebook's colleague: both bugs at once (fixing one names the other)
        Mistake("colleagues_two_bugs", "Your weights are the colleague's: shared out over the queries, then "
                "masked after the softmax. Over which dimension must each query's weights sum to 1, and when "
                "must the mask act so that they still do?", _colleagues),
        Mistake("forgot_values", "You returned the attention weights (..., Lq, Lk); the output mixes the values "
                "with them: (..., Lq, dv).", _weights_only),
    ],
    hints=[
        "The colleague's first query may look only at the first key: what weight should that key get? And "
        "over which of the two dimensions of the weights did their softmax make things sum to 1?",
        "The softmax shares out each query's attention among the keys, so it normalises along the keys. A key "
        "the query may not see must be out of the sharing before the softmax normalises, not zeroed after: a "
        "score of minus infinity becomes a weight of exactly 0, whatever the other scores are.",
    ],
))
