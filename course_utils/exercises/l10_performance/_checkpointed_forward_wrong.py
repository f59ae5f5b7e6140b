"""checkpointed_forward's known-wrong answers: each makes one of its declared mistakes."""

from __future__ import annotations

import functools

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint
from ...answers.l10_performance import checkpointed_forward
from ._kit import plain_forward, state_changing




_NON_REENTRANT = functools.partial(checkpoint, use_reentrant=False)


def _variant(blocks, x, *, wrap=_NON_REENTRANT, detach=False, every=False, skip_bn_always=False):
    for i, block in enumerate(blocks):
        if detach and i > 0:
            x = x.detach()  # "to save memory": cuts the graph between blocks
        has_bn = any(isinstance(m, nn.BatchNorm1d) for m in block.modules())
        if (has_bn and skip_bn_always) or (state_changing(block) and not every):
            x = block(x)
        else:
            x = wrap(block, x)
    return x


def _no_grad(blocks, x):
    with torch.no_grad():
        return plain_forward(blocks, x)


def _late_binding(blocks, x):
    for block in blocks:
        x = checkpoint(lambda t: block(t), x, use_reentrant=False)  # noqa: B023 - the mistake itself
    return x


_every_block = functools.partial(_variant, every=True)  # BatchNorm blocks too: their statistics update twice
_bn_never = functools.partial(_variant, skip_bn_always=True)  # BatchNorm blocks run plainly even in eval mode


def _flips_input_flag(blocks, x):
    return checkpointed_forward(blocks, x.requires_grad_())


_reentrant = functools.partial(_variant, wrap=checkpoint)  # use_reentrant not given: the old mode
_keeps_more = functools.partial(  # checkpointed, then an extra op that saves its inputs for backward
    _variant, wrap=lambda block, x: _NON_REENTRANT(block, x) * torch.ones_like(x).requires_grad_())
_cut_between = functools.partial(_variant, detach=True)


def _no_return(blocks, x):
    for block in blocks:
        x = checkpoint(block, x, use_reentrant=False)  # ... and no `return x`


def _one_segment(blocks, x):
    return checkpoint(plain_forward, blocks, x, use_reentrant=False)  # one checkpoint for all blocks
