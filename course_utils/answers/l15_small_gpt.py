"""Generated from solutions/15_small_gpt.py by `python -m course_utils build`; do not edit.

The answer definitions of the lesson's solution notebook (marker lines dropped) and the
notebook-level names they use; the exercises of 15_small_gpt take their references from here."""

# ruff: noqa

import math
import torch


def next_token_batch(data, starts, block_size):
    """Inputs and next-token targets, (B, block_size) each, from windows of data."""
    offsets = torch.arange(block_size)
    rows = starts[:, None] + offsets  # (B, block_size) positions in data
    return data[rows], data[rows + 1]


def causal_mask(T):
    """The (T, T) float32 mask to add to attention scores (row: query position, column: key)."""
    allowed = torch.ones(T, T, dtype=torch.bool).tril()  # key j <= query i
    return torch.zeros(T, T).masked_fill(~allowed, float("-inf"))


def causal_attention(q, k, v):
    """Causal scaled dot-product attention: (..., T, d), (..., T, d), (..., T, dv) -> (..., T, dv)."""
    T, d = q.shape[-2], q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (..., T, T): one per (query, key)
    allowed = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def pre_norm_block(x, attn, mlp, ln1, ln2):
    """The block's output, (B, T, C), for an input x of shape (B, T, C)."""
    x = x + attn(ln1(x))
    return x + mlp(ln2(x))


def tie_weights(model):
    """Ties model.head to model.tok_emb for good, in place; returns None."""
    model.head.weight = model.tok_emb.weight


def sample_next(logits, temperature, top_k, generator):
    """One token id per row of logits (B, V), drawn at the given temperature among the top_k."""
    logits = logits / temperature
    if top_k is not None:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]  # the k-th largest of each row
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, num_samples=1, generator=generator).squeeze(-1)
