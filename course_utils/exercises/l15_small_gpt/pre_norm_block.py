"""pre_norm_block: a teammate's post-norm Transformer block (``ln1(x + attn(x))``, then
``ln2(h + mlp(h))``) converted to pre-norm, ``x + attn(ln1(x))`` then ``h + mlp(ln2(h))``.

Subtle: pre-norm normalises each sublayer's *input* and adds the sublayer's output to the
un-normalised stream (post-norm normalises the sum; adding to the normalised input loses the
clean residual path); each sublayer has its own norm (``ln1`` before attention, ``ln2`` before
the MLP); attention comes first, and the MLP reads the stream *after* attention's residual (not
the block's input: that is a parallel block). The norms have random weights and biases and the
sublayers are random nonlinear maps, so every variant gives other values; one fixed case has
silent sublayers (they output zeros), where the pre-norm block is the identity and post-norm is
not, as the notebook shows. Half-converted blocks (one sublayer still post-norm) have their names.
"""

from __future__ import annotations

import torch
from torch import nn

from course_utils.grading import Case, Compare, Exercise, Mistake, Rand, register

from ...answers.l15_small_gpt import pre_norm_block
from ._kit import LESSON


# --- reference: imported above from course_utils/answers/l15_small_gpt.py (generated from the notebook)


# --- cases
class _Sublayer(nn.Module):
    """A stand-in for attention or the MLP: a random nonlinear map (B, T, C) -> (B, T, C)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor):
        super().__init__()
        self.inner = nn.Linear(weight.shape[1], weight.shape[0], device="meta")  # no draw from the global RNG
        self.inner.weight = nn.Parameter(weight.clone())
        self.inner.bias = nn.Parameter(bias.clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.inner(x)) * 2


def _norm(r: Rand, C: int) -> nn.LayerNorm:
    ln = nn.LayerNorm(C)
    with torch.no_grad():
        ln.weight.copy_(r.rand(C) * 1.5 + 0.5)
        ln.bias.copy_(r.randn(C) * 0.5)
    return ln


def _make(r: Rand, B: int, T: int, C: int, label: str = "", silent: bool = False) -> Case:
    x = r.randn(B, T, C) * 2 + 1
    scale = 0.0 if silent else 1.0  # silent: tanh(0) = 0, a sublayer that contributes nothing
    attn = _Sublayer(r.randn(C, C) / C ** 0.5 * scale, r.randn(C) * 0.3 * scale)
    mlp = _Sublayer(r.randn(C, C) / C ** 0.5 * scale, r.randn(C) * 0.3 * scale)
    return Case((x, attn, mlp, _norm(r, C), _norm(r, C)), label=label)


def _cases(r: Rand) -> Case:
    return _make(r, r.integer(1, 3), r.integer(1, 5), r.integer(3, 8))


EDGE_CASES = [
    _make(Rand(1), 2, 4, 6, "a batch of 2 sequences of 4 positions, 6 features"),
    _make(Rand(2), 1, 1, 3, "one position, 3 features"),
    _make(Rand(3), 2, 3, 5, "silent sublayers (both output zeros): the block must return x", silent=True),
]


# --- wrong answers
def _post_norm(x, attn, mlp, ln1, ln2):
    x = ln1(x + attn(x))
    return ln2(x + mlp(x))


def _mlp_post_norm(x, attn, mlp, ln1, ln2):
    x = x + attn(ln1(x))
    return ln2(x + mlp(x))


def _attn_post_norm(x, attn, mlp, ln1, ln2):
    x = ln1(x + attn(x))
    return x + mlp(ln2(x))


def _no_residual(x, attn, mlp, ln1, ln2):
    return mlp(ln2(attn(ln1(x))))


def _residual_of_normed(x, attn, mlp, ln1, ln2):
    h = ln1(x)
    x = h + attn(h)
    h = ln2(x)
    return h + mlp(h)


def _shared_norm(x, attn, mlp, ln1, ln2):
    x = x + attn(ln1(x))
    return x + mlp(ln1(x))


def _norms_swapped(x, attn, mlp, ln1, ln2):
    x = x + attn(ln2(x))
    return x + mlp(ln1(x))


def _parallel(x, attn, mlp, ln1, ln2):
    return x + attn(ln1(x)) + mlp(ln2(x))


def _mlp_first(x, attn, mlp, ln1, ln2):
    x = x + mlp(ln2(x))
    return x + attn(ln1(x))


# --- declaration
register(Exercise(
    lesson=LESSON, name="pre_norm_block", title="A pre-norm Transformer block",
    reference=pre_norm_block, cases=_cases, edge_cases=EDGE_CASES,
    compare=Compare(rtol=1e-5, atol=1e-5),  # LayerNorm and tanh in another order of operations
    mistakes=[
        Mistake("post_norm", "Your block is still the teammate's post-norm block, each norm applied to the sum "
                "after the residual. With both sublayers silent, would it return `x`? Which value should each norm "
                "see instead, and what is added to the stream?", _post_norm),
        Mistake("norm_after_residual", "Your attention is pre-norm but your MLP's norm still comes after its "
                "residual sum, as in the teammate's block. With the MLP silent, is its sublayer's output added to "
                "the stream as it was, or is the stream normalised?", _mlp_post_norm),
        Mistake("attn_norm_after_residual", "Your MLP is pre-norm but attention's norm still comes after its "
                "residual sum, as in the teammate's block. With attention silent, does the stream reach the MLP "
                "as it came in?", _attn_post_norm),
        Mistake("missing_residual", "Your block has no residual connection: the output is only the sublayers' "
                "output. Each sublayer's result is *added* to its input stream.", _no_residual),
        Mistake("residual_of_normed", "Your residual adds the sublayer's output to the *normalised* input; the "
                "stream that is added to is the un-normalised `x`, so the residual path stays untouched by the "
                "norms.", _residual_of_normed),
        Mistake("shared_norm", "You used `ln1` before both sublayers; each has its own norm, with its own weights: "
                "`ln2` goes before the MLP.", _shared_norm),
        Mistake("norms_swapped", "Your norms are swapped: `ln1` belongs to attention (the first sublayer), `ln2` "
                "to the MLP.", _norms_swapped),
        Mistake("parallel_block", "Your MLP reads the block's input, in parallel with attention; in this block the "
                "MLP reads the stream *after* attention's residual has been added.", _parallel),
        Mistake("mlp_first", "Your block runs the MLP first; attention comes first, then the MLP.", _mlp_first),
    ],
    hints=[
        "Run the notebook's test in your head: with both sublayers silent, which operations of the teammate's "
        "block still change `x`? What would have to move for the block to return `x` as it came?",
        "Think of `x` as a stream that runs through the block untouched; each sublayer reads a normalised copy of "
        "it and writes its result back into the stream, so the norms sit on the sublayers' side, never on the "
        "stream itself.",
    ],
))
