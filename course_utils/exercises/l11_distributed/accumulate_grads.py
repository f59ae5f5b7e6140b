"""accumulate_grads: gradient accumulation under DDP with exactly one all-reduce (`no_sync` on
all micro-batches but the last), leaving the big batch's mean-loss gradient on the model.

Subtle: DDP decides at the forward pass whether the backward all-reduces, so the forward of every
micro-batch but the last goes inside `no_sync()`; each loss is divided by the number of
micro-batches; the stale gradients are cleared first and never in between; one backward per
micro-batch (a single backward of the summed losses holds every graph at once).
"""

from __future__ import annotations

import contextlib

import torch
from torch import nn

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register
from course_utils.lesson_props.l11_distributed import CountingDDP

from ._kit import LESSON
from ._kit import mlp


# --- reference: the solution notebook's answer, generated from solutions/11_distributed.py
from ...answers.l11_distributed import accumulate_grads


# --- cases
def _cases(r: Rand) -> Case:
    d, c, k, m = r.integer(3, 8), r.integer(2, 5), r.integer(2, 5), r.integer(2, 6)
    X, y = r.randn(k * m, d), r.randint(0, c, (k * m,))
    model = mlp(r, d, r.integer(4, 12), c)
    stale = [r.randn(*p.shape) for p in model.parameters()]
    return Case((model, list(zip(X.chunk(k), y.chunk(k)))), {"stale": stale})


def _fixed(k: int) -> Case:
    r = Rand(1100 + k)
    X, y = r.randn(4 * k, 5), r.randint(0, 3, (4 * k,))
    model = mlp(r, 5, 6, 3)
    return Case((model, list(zip(X.chunk(k), y.chunk(k)))), {"stale": [r.randn(*p.shape) for p in model.parameters()]},
                label=f"{k} micro-batch{'es' if k > 1 else ''} of 4")


# --- run and probes
class _Watched(CountingDDP):
    """CountingDDP whose record the grader keeps to itself (``log``), out of the answer's reach."""

    def __init__(self, module: nn.Module, log: list[tuple[int, bool]]) -> None:
        super().__init__(module)
        self._grader_log = log

    def forward(self, *args, **kwargs):
        out = super().forward(*args, **kwargs)
        if isinstance(out, torch.Tensor) and out.requires_grad:
            synced, log = self.require_backward_grad_sync, self._grader_log
            out.register_hook(lambda g: log.append((torch._C._current_graph_task_id(), synced)))
        return out


def _run(answer, case: Case):
    model, micro_batches = case.args
    for p, g in zip(model.parameters(), case.kwargs["stale"]):
        p.grad = g.clone()  # garbage from an earlier step
    log: list[tuple[int, bool]] = []
    answer(_Watched(model, log), micro_batches, nn.CrossEntropyLoss())
    grads = [p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p) for p in model.parameters()]
    passes = list(dict.fromkeys(task for task, _ in log))  # backward passes, in order
    synced = list(dict.fromkeys(task for task, s in log if s))
    if log and len(passes) < min(len(log), len(micro_batches)):
        raise Incorrect("one_backward", forwards=len(log), passes=len(passes))
    if not log:
        raise Incorrect("no_backward")
    if not synced:
        raise Incorrect("never_synced")
    if len(synced) > 1:
        raise Incorrect("synced_every_micro_batch", syncs=len(synced), k=len(micro_batches))
    if synced[0] != passes[-1]:
        raise Incorrect("synced_too_early", which=passes.index(synced[0]) + 1, k=len(passes))
    return grads


# --- wrong answers
def _variant(ddp_model, micro_batches, loss_fn, *, sync="last", divide=True, zero="first"):
    if zero == "first":
        ddp_model.zero_grad()
    k = len(micro_batches)
    for i, (X, y) in enumerate(micro_batches):
        if zero == "each":
            ddp_model.zero_grad()
        synced = sync == "all" or (sync == "last" and i == k - 1) or (sync == "first" and i == 0)
        with contextlib.nullcontext() if synced else ddp_model.no_sync():
            loss = loss_fn(ddp_model(X), y)
            (loss / k if divide else loss).backward()


def _one_backward(ddp_model, micro_batches, loss_fn):
    ddp_model.zero_grad()
    total = sum(loss_fn(ddp_model(X), y) for X, y in micro_batches) / len(micro_batches)
    total.backward()


def _backward_outside(ddp_model, micro_batches, loss_fn):
    ddp_model.zero_grad()  # the forward inside no_sync, the backward outside: still no all-reduce at all
    k = len(micro_batches)
    for X, y in micro_batches:
        with ddp_model.no_sync():
            loss = loss_fn(ddp_model(X), y) / k
        loss.backward()


def _around_the_wrapper(ddp_model, micro_batches, loss_fn):
    ddp_model.zero_grad()  # the wrapped module itself: DDP never sees these passes
    for X, y in micro_batches:
        (loss_fn(ddp_model.module(X), y) / len(micro_batches)).backward()


# --- declaration
def _v(**kw):
    return lambda ddp_model, micro_batches, loss_fn: _variant(ddp_model, micro_batches, loss_fn, **kw)


register(Exercise(
    lesson=LESSON, name="accumulate_grads", title="Gradient accumulation with one all-reduce (no_sync)",
    reference=accumulate_grads,
    cases=_cases,
    edge_cases=[_fixed(3), _fixed(1)],
    n_random=5,
    timeout=10.0,
    run=_run,
    compare=Compare(rtol=1e-4, atol=1e-6),
    mistakes=[
        Mistake("synced_every_micro_batch", "Your loop all-reduced {syncs} times for {k} micro-batches. The result "
                "is right, but every all-reduce before the last sends gradients over the network only to add more "
                "to them afterwards. Only the last backward before the step needs to synchronise.",
                _v(sync="all"), match_output=False),
        Mistake("no_backward", "No backward pass went through `ddp_model`: none of its forward outputs reached "
                "a `.backward()`, so DDP never took part (or nothing ran at all). Run each micro-batch through "
                "`ddp_model` itself (not `ddp_model.module`) and call backward on its loss.", _around_the_wrapper,
                match_output=False),
        Mistake("never_synced", "No backward pass all-reduced: every forward ran inside `no_sync()`, so each rank "
                "would step with its own gradients and the replicas would drift apart. DDP decides at the forward "
                "pass whether the backward synchronises.", _v(sync="none"), match_output=False),
        Mistake("synced_too_early", "Your loop all-reduced during backward pass {which} of {k}, not the last one: "
                "the gradients accumulated after that all-reduce are this rank's alone, and the replicas drift "
                "apart. The one all-reduce must come last, when everything has been accumulated.",
                _v(sync="first"), match_output=False),
        Mistake("not_divided", "The gradients are k times too large: the sum of k micro-batch mean losses is not "
                "the mean over the big batch.", _v(divide=False)),
        Mistake("zeroed_between", "Only the last micro-batch's gradients are left: clearing the gradients inside "
                "the loop throws away what was accumulated.", _v(zero="each")),
        Mistake("kept_stale_grads", "The gradients the model held before the call were added to: clear them once, "
                "before the first micro-batch.", _v(zero="none")),
        Mistake("one_backward", "Your loop ran {forwards} forward passes but only {passes} backward pass(es): "
                "summing the losses and calling backward once keeps every micro-batch's graph in memory at the same "
                "time, which is what accumulation exists to avoid. Call backward once per micro-batch.",
                _one_backward, match_output=False),
    ],
    hints=[
        "Two questions: which of the k backward passes must all-reduce, and how does DDP know, at which moment, "
        "whether a backward pass should?",
        "The model's `no_sync()` context covers every micro-batch but the last, and it must already be active when "
        "the forward pass runs. And what must each loss be divided by so that k small means add up to one big mean?",
    ],
))
