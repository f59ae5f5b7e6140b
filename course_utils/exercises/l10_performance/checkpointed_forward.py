"""checkpointed_forward: run a stack of blocks, deciding block by block whether to checkpoint it.

Subtle: a checkpointed block runs its forward twice, so a block whose forward changes state (a
BatchNorm in training mode updates its running statistics) must not be checkpointed, while in
eval mode it can be. The output must equal a plain forward, so values alone prove nothing: the
check measures what autograd saves, watches which blocks are recomputed during backward (each
checkpointable one once, the last first; the others never), compares every buffer afterwards,
and needs `use_reentrant=False` (the reentrant mode drops the graph when the input does not
require grad).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any
import warnings

import torch
from torch import nn
from torch.nn.utils import skip_init

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, answer_grad_mode, register
from course_utils.grading.compare import describe

from ._kit import LESSON
from ._kit import fill, plain_forward, saved_bytes as _saved_bytes, state_changing, uses_reentrant as _uses_reentrant


# --- reference: the solution notebook's answer, generated from solutions/10_performance.py
from ...answers.l10_performance import checkpointed_forward


from ._checkpointed_forward_wrong import (  # the known-wrong answers, in their own file
    _bn_never, _cut_between, _every_block, _flips_input_flag, _keeps_more, _late_binding, _no_grad,
    _no_return, _one_segment, _reentrant,
)


# --- cases
_LAYOUTS: dict[str, Callable[[int], list[nn.Module]]] = {  # the layers after the block's first Linear
    "plain": lambda w: [nn.Tanh()],
    "bn": lambda w: [nn.BatchNorm1d(w), nn.Tanh()],
    "bn_last": lambda w: [nn.Tanh(), nn.BatchNorm1d(w)],
    "ln": lambda w: [nn.LayerNorm(w), nn.Tanh()],
    "two_linear": lambda w: [nn.Tanh(), skip_init(nn.Linear, w, w)],
}


def _block(r: Rand, width: int, bn: bool | str) -> nn.Sequential:
    layout = bn if isinstance(bn, str) else ("bn" if bn else "plain")
    layers = [skip_init(nn.Linear, width, width)] + _LAYOUTS[layout](width)
    block = fill(nn.Sequential(*layers), r, 0.4)
    for m in block.modules():
        if isinstance(m, nn.BatchNorm1d):
            with torch.no_grad():
                m.running_mean.copy_(r.randn(width) * 0.1)  # eval mode must use these
                m.running_var.copy_(r.rand(width) + 0.5)
    return block


def _blocks(r: Rand, n: int, width: int, bn: list[bool] | list[str] | None = None,
            train: bool = True) -> nn.ModuleList:
    bn = bn if bn is not None else [r.integer(0, 2) == 0 for _ in range(n)]
    return nn.ModuleList(_block(r, width, b) for b in bn).train(train)


def _cases(r: Rand) -> Case:
    width = r.integer(8, 24)
    x = r.randn(r.integer(4, 16), width)
    if r.integer(0, 1):
        x.requires_grad_(True)
    return Case((_blocks(r, r.integer(4, 6), width, train=r.integer(0, 3) > 0), x))


def _fixed_case(requires_grad: bool) -> Case:
    r = Rand(606)
    x = r.randn(6, 10).requires_grad_(requires_grad)
    label = f"4 blocks, input{'' if requires_grad else ' not'} requiring grad"
    return Case((_blocks(r, 4, 10, bn=[False] * 4), x), label=label)


def _bn_case(train: bool) -> Case:
    r = Rand(707)
    return Case((_blocks(r, 5, 12, bn=[False, True, False, True, False], train=train), r.randn(8, 12)),
                label=f"5 blocks, blocks 1 and 3 with BatchNorm1d, {'training' if train else 'eval'} mode")


def _mixed_case(train: bool) -> Case:
    """Blocks of several layouts, and one block whose mode differs from the stack's: only each
    block's own BatchNorm layers tell whether its forward changes state."""
    r = Rand(808)
    blocks = _blocks(r, 5, 10, bn=["bn", "ln", "bn_last", "two_linear", "bn"], train=train)
    blocks[0].train(not train)
    label = (f"5 blocks of several layouts, the stack in {'training' if train else 'eval'} mode, block 0 "
             f"(BatchNorm) in {'eval' if train else 'training'} mode")
    return Case((blocks, r.randn(7, 10)), label=label)


# --- run and probes
def _run(answer, case: Case):
    blocks, x = case.args
    # Which block's first layer runs when: checkpointing every block on its own recomputes each
    # block once during backward, the last block first. (The layer, not the block, is watched so
    # that `block.forward(x)` is seen too.)
    calls: list[int] = []
    handles = [block[0].register_forward_pre_hook(lambda mod, args, i=i: calls.append(i))
               for i, block in enumerate(blocks)]
    try:
        return _run_watched(answer, blocks, x, calls)
    finally:
        for handle in handles:
            handle.remove()


def _forward(answer, blocks, x):
    """The answer's output and the bytes it saved for backward; the graph must reach the blocks."""
    x_flag = x.requires_grad
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with answer_grad_mode():
            used, out = _saved_bytes(lambda: answer(blocks, x))
    if x.requires_grad != x_flag:
        raise Incorrect("changed_input_flag", before=x_flag, after=x.requires_grad)
    if not isinstance(out, torch.Tensor):
        raise Incorrect("not_the_output", got=describe(out), shape=tuple(x.shape))
    if out.shape != x.shape or out.device != x.device:
        raise Incorrect("not_the_output", got=f"a tensor of shape {tuple(out.shape)} on {out.device.type}",
                        shape=tuple(x.shape))
    if not out.requires_grad:
        if any("None of the inputs have requires_grad" in str(w.message) for w in caught):
            raise Incorrect("reentrant_checkpoint")
        raise Incorrect("no_grad_forward")
    if _uses_reentrant(out):
        raise Incorrect("reentrant_checkpoint")
    return used, out


def _run_watched(answer, blocks, x, calls: list[int]):
    used, out = _forward(answer, blocks, x)
    upstream = torch.ones_like(out) / out.numel() + out.detach() * 0.01
    inputs = list(blocks.parameters()) + ([x] if x.requires_grad else [])
    n_forward = len(calls)
    grads = torch.autograd.grad(out, inputs, upstream, allow_unused=True)
    recomputed = calls[n_forward:]
    if any(g is None for g in grads):
        raise Incorrect("cut_between_blocks")
    n = len(blocks)
    stateful = [i for i, block in enumerate(blocks) if state_changing(block)]
    if any(i in recomputed for i in stateful):
        raise Incorrect("checkpointed_batchnorm", blocks=[i for i in stateful if i in recomputed])
    wanted = [i for i in range(n - 1, -1, -1) if i not in stateful]  # recomputed, the last first
    missing = sorted(i for i in wanted if i not in recomputed)
    # What a plain forward would keep (the reference's half adds what the reference keeps).
    with torch.enable_grad():  # the mode the case intends, whatever mode the answer left
        plain, _ = _saved_bytes(lambda: plain_forward(copy.deepcopy(blocks),
                                                       x.detach().requires_grad_(x.requires_grad)))
    buffers = [b.detach().clone() for b in blocks.buffers()]
    return {"out": out.detach(), "grads": [g.detach() for g in grads], "buffers": buffers, "used": used,
            "plain": plain, "missing": missing, "wanted": wanted, "recomputed": recomputed}


def _finish(data: Any, case: Case) -> Any:
    """The reference's half: the bytes the reference keeps for backward (each checkpointed
    block's input), against what the answer kept; then the order of the recomputations."""
    if not isinstance(data, dict) or any(k not in data for k in _SENT) or not all(
            isinstance(data[k], int) for k in ("used", "plain")) or not all(
            isinstance(data[k], list) for k in ("missing", "wanted", "recomputed")):
        raise RuntimeError("the check of your answer sent back something unreadable")
    blocks, x = case.args
    used, plain, missing, wanted, recomputed = (data[k] for k in ("used", "plain", "missing", "wanted", "recomputed"))
    n = len(blocks)
    with torch.enable_grad():
        ckpt, _ = _saved_bytes(lambda: checkpointed_forward(copy.deepcopy(blocks),
                                                            x.detach().requires_grad_(x.requires_grad)))
    if used > (plain + ckpt) / 2:
        if missing:
            raise Incorrect("not_checkpointed", missing=missing, n=n)
        raise Incorrect("kept_activations", used=used, ckpt=ckpt)
    if missing and len(wanted) > 1 and recomputed.count(wanted[0]) == len(wanted):
        raise Incorrect("late_binding_closure", n=len(wanted))
    if missing:
        raise Incorrect("not_checkpointed", missing=missing, n=n)
    if recomputed != wanted:
        raise Incorrect("coarse_checkpoint")
    return data["out"], data["grads"], data["buffers"]


_SENT = ("out", "grads", "buffers", "used", "plain", "missing", "wanted", "recomputed")


# --- declaration
_WRAP = "`x = checkpoint(block, x, use_reentrant=False)`"

register(Exercise(
    lesson=LESSON, name="checkpointed_forward", title="Gradient checkpointing: recompute instead of store",
    reference=checkpointed_forward,
    cases=_cases,
    edge_cases=[_fixed_case(False), _fixed_case(True), _bn_case(True), _bn_case(False), _mixed_case(True),
                _mixed_case(False)],
    n_random=4,
    timeout=10.0,
    run=_run,
    finish=_finish,
    compare=Compare(rtol=1e-5, atol=1e-6),
    mistakes=[
        Mistake("checkpointed_batchnorm", "Block(s) {blocks} contain a BatchNorm in training mode, and your forward "
                "checkpointed them: during backward they ran their forward a second time and updated the running "
                "statistics twice, so the model's state after this step differs from a plain forward pass. What "
                "else does that block's forward do besides returning its output?", _every_block,
                match_output=False),
        Mistake("not_checkpointed", "During backward, block(s) {missing} of {n} were not recomputed, so they were "
                "not checkpointed (their activations were kept, or stored some other way), although checkpointing "
                "them changes nothing but memory and time. `checkpoint_sequential` runs its last segment normally; "
                "a BatchNorm in eval mode only reads its statistics.", _bn_never, match_output=False),
        Mistake("reentrant_checkpoint", "Your forward pass used `checkpoint` in its old *reentrant* mode "
                "(`use_reentrant=True`, the default when `use_reentrant` is not given). It drops the graph when a "
                "block's input does not require grad, so no gradient reaches the blocks' parameters, and it does "
                "not work with `torch.autograd.grad`. Pass `use_reentrant=False`.", _reentrant, match_output=False),
        Mistake("no_grad_forward", "Your output is not connected to the autograd graph, so training could not "
                "compute any gradient. `torch.no_grad()` saves memory only where no gradients are needed; "
                "gradient checkpointing keeps the graph and recomputes the activations during backward.",
                _no_grad, match_output=False),
        Mistake("cut_between_blocks", "Gradients reach only some of the blocks: the graph is cut between them "
                "(`.detach()`, `.data` or `torch.no_grad()` around part of the loop). Pass each block's output "
                "straight to the next `checkpoint` call.", _cut_between, match_output=False),
        Mistake("coarse_checkpoint", "Several blocks share one checkpoint, so backward recomputes them together "
                f"and needs all their activations at once. Checkpoint each block on its own: {_WRAP} inside the "
                "loop.", _one_segment, match_output=False),
        Mistake("late_binding_closure", "During backward the last block was recomputed {n} times and the others "
                "never: each checkpoint called a `lambda` that looks up the loop variable when it runs, and by then "
                "the loop has ended, so every recompute used the last block (Python's late binding). The forward "
                "was right but the gradients are wrong. Pass the block itself: `checkpoint(block, x, "
                "use_reentrant=False)` (or bind it: `lambda t, b=block: b(t)`).", _late_binding, match_output=False),
        Mistake("changed_input_flag", "Your function changed `x.requires_grad` of the caller's tensor (from "
                "{before} to {after}), e.g. with `x.requires_grad_()`. With `use_reentrant=False` checkpointing "
                "needs no such trick: leave the input as it is.", _flips_input_flag, match_output=False),
        Mistake("not_the_output", "Your function returned {got}. Return the last block's output: a tensor of "
                "shape {shape} like `x` (did the loop end without `return x`?).", _no_return, match_output=False),
        Mistake("kept_activations", "Your forward pass kept {used} bytes of activations for backward; "
                "checkpointing every block keeps only each block's input ({ckpt} bytes here). Every block was "
                "recomputed, so another operation in your loop keeps activations: the loop body is "
                f"{_WRAP} and nothing else that needs gradients.", _keeps_more, match_output=False),
    ],
    hints=[
        "A checkpointed block runs its forward twice. For which blocks is running the forward twice not the same "
        "as running it once? Print a BatchNorm's `running_mean` before and after a forward call, in `train()` and "
        "in `eval()` mode.",
        "Checkpoint every block whose forward is a pure function of its input; run the others plainly. A block's "
        "`.modules()` and each module's `.training` flag tell you which is which.",
    ],
))
