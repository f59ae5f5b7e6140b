"""Exercises of 15_small_gpt: next-token inputs and targets, the causal mask, causal attention by
hand, the pre-norm block, weight tying and sampling with temperature and top-k.

The attention rule ("do not use `F.scaled_dot_product_attention`") is the core's ``forbid``.
"""

from . import next_token_batch, causal_mask, causal_attention, pre_norm_block, tie_weights, sample_next  # noqa: F401 (in the notebook's order)
