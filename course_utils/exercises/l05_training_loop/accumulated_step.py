"""accumulated_step: one optimizer step on the gradient of the whole batch, computed micro-batch by
micro-batch (gradient accumulation). The notebook does not say how to scale: it shows unscaled
accumulation off by exactly 2 for two halves and by no single factor for an uneven split, and asks
the learner to work out why.

Subtle: each micro-batch loss is a mean, so it is weighted by ``len(y) / n_total`` (micro-batches
of different sizes too); zero once before the loop (the grader leaves stale gradients), step once
after it; call ``backward()`` per micro-batch (one backward over a sum keeps every graph alive, one
big batch is what does not fit); leave the caller's list and tensors alone.
"""

from __future__ import annotations

import functools

import torch
from torch import nn

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, answer_grad_mode, kept, register

from ._kit import LESSON
from ._kit import _flat, count_steps


# --- reference: the notebook's answer (generated from solutions/05_training_loop.py)
from ...answers.l05_training_loop import accumulated_step


# --- cases
def _cases(r: Rand) -> Case:
    d, c = r.integer(2, 5), r.integer(2, 4)
    sizes = [r.integer(2, 8) for _ in range(r.integer(2, 4))]
    if r.integer(0, 1):
        sizes = [sizes[0]] * len(sizes)
    micro = [(r.randn(s, d), r.randint(0, c, (s,))) for s in sizes]
    return Case(kwargs=dict(micro_batches=micro, classes=c, seed=r.integer(0, 2**31),
                            smoothing=round(r.uniform(0.05, 0.3), 2)))


def _edge() -> Case:
    g = torch.Generator().manual_seed(3)
    micro = [(torch.randn(s, 3, generator=g), torch.randint(0, 3, (s,), generator=g)) for s in (6, 2, 4)]
    return Case(kwargs=dict(micro_batches=micro, classes=3, seed=11, smoothing=0.1),
                label="three micro-batches of 6, 2 and 4 samples")


# --- run and probes
def _run(answer, case: Case):
    micro, c, seed, smoothing = (case.kwargs[k] for k in ("micro_batches", "classes", "seed", "smoothing"))
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(micro[0][0].shape[1], 6), nn.Tanh(), nn.Linear(6, c))
    g = torch.Generator().manual_seed(seed)
    for p in model.parameters():
        p.grad = torch.randn(p.shape, generator=g)  # stale gradients
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    steps, step_hook = count_steps(optimizer)
    batch_sizes: list[int] = []
    size_hook = model.register_forward_pre_hook(lambda m, args: batch_sizes.append(len(args[0])))
    backwards: list[int] = []  # one call per backward pass through the first layer's weight
    grad_hook = model[0].weight.register_hook(lambda g: backwards.append(1))
    given = list(micro)
    pristine = [(X.clone(), y.clone()) for X, y in micro]
    try:
        loss_fn = nn.CrossEntropyLoss(label_smoothing=smoothing)
        with answer_grad_mode(), kept(unchanged={"loss_fn": loss_fn}, modes={"model": model}):
            answer(model, loss_fn, optimizer, given)
    finally:
        step_hook.remove()
        size_hook.remove()
        grad_hook.remove()
    if len(given) != len(pristine) or any(a is not b for a, b in zip(given, micro)):
        raise Incorrect("changed_micro_batches")
    if any(not (torch.equal(X, X0) and torch.equal(y, y0)) for (X, y), (X0, y0) in zip(micro, pristine)):
        raise Incorrect("mutated_input")
    if batch_sizes and max(batch_sizes) > max(len(x) for x, _ in micro):
        raise Incorrect("concatenated")
    if len(batch_sizes) >= len(micro) > 1 and len(backwards) == 1:
        raise Incorrect("one_backward")
    if len(steps) != 1:  # even a second step with zero gradients moves Adam or momentum SGD
        raise Incorrect("step_per_micro_batch" if len(steps) == len(micro) else "not_one_step", steps=len(steps))
    return _flat(model)


# --- wrong answers
def _acc_with(model, loss_fn, optimizer, micro_batches, *, weight=lambda y, n_total, k: len(y) / n_total,
              zero="once", step_each=False):
    """The reference with one knob turned: each micro-batch loss's weight (``weight(y, n_total,
    number_of_micro_batches)``), when gradients are zeroed ("once", "each" or None), when it steps."""
    n_total = sum(len(y) for _, y in micro_batches)
    if zero == "once":
        optimizer.zero_grad()
    for X, y in micro_batches:
        if zero == "each":
            optimizer.zero_grad()
        (loss_fn(model(X), y) * weight(y, n_total, len(micro_batches))).backward()
        if step_each:
            optimizer.step()
    if not step_each:
        optimizer.step()


def _acc_concatenated(model, loss_fn, optimizer, micro_batches):
    X = torch.cat([x for x, _ in micro_batches])
    y = torch.cat([t for _, t in micro_batches])
    accumulated_step(model, loss_fn, optimizer, [(X, y)])


def _acc_one_backward(model, loss_fn, optimizer, micro_batches):
    n_total = sum(len(y) for _, y in micro_batches)
    optimizer.zero_grad()
    sum(loss_fn(model(X), y) * len(y) / n_total for X, y in micro_batches).backward()
    optimizer.step()


def _acc_ignores_loss_fn(model, loss_fn, optimizer, micro_batches):
    accumulated_step(model, nn.functional.cross_entropy, optimizer, micro_batches)


def _acc_pops(model, loss_fn, optimizer, micro_batches):
    accumulated_step(model, loss_fn, optimizer, list(micro_batches))
    micro_batches.pop()


def _acc_frees_inputs(model, loss_fn, optimizer, micro_batches):
    accumulated_step(model, loss_fn, optimizer, micro_batches)
    for X, _ in micro_batches:
        X.zero_()


def _acc_steps_again(model, loss_fn, optimizer, micro_batches):
    accumulated_step(model, loss_fn, optimizer, micro_batches)
    for _ in micro_batches:  # one step more than there are micro-batches
        optimizer.step()


# --- declaration
register(Exercise(
    lesson=LESSON, name="accumulated_step", title="Gradient accumulation equal to one big-batch step",
    reference=accumulated_step, run=_run, cases=_cases, edge_cases=[_edge()], timeout=10,
    compare=Compare(rtol=1e-5, atol=1e-6, mutation=False),
    mistakes=[
        Mistake("forgot_scaling", "Each micro-batch loss is already a mean, so summing their gradients gives "
                "a gradient several times too large. Scale each loss by `len(y) / n_total` before "
                "`backward()`.", functools.partial(_acc_with, weight=lambda y, n_total, k: 1)),
        Mistake("mean_of_means", "Dividing by the number of micro-batches is only right when they all have "
                "the same size. Weight each micro-batch by its share of the samples: `len(y) / n_total`.",
                functools.partial(_acc_with, weight=lambda y, n_total, k: 1 / k)),
        Mistake("step_per_micro_batch", "You stepped after every micro-batch: that is several small steps, not "
                "one big-batch step. Call `optimizer.step()` once, after the loop.",
                functools.partial(_acc_with, step_each=True), match_output=False),
        Mistake("zero_grad_per_micro_batch", "`zero_grad()` inside the loop throws away the gradients of the "
                "earlier micro-batches; only the last one counts. Zero once, before the loop.",
                functools.partial(_acc_with, zero="each")),
        Mistake("forgot_zero_grad", "Gradients left over from before (the check puts some there) were added to "
                "yours. Call `optimizer.zero_grad()` once before the loop.", functools.partial(_acc_with, zero=None)),
        Mistake("ignores_loss_fn", "You computed a loss of your own (`F.cross_entropy`, a new "
                "`nn.CrossEntropyLoss()`) instead of calling the `loss_fn` you were given (the check's has label "
                "smoothing). Use `loss_fn(model(X), y)`.", _acc_ignores_loss_fn),
        Mistake("concatenated", "You concatenated the micro-batches into one big batch. That gives the right "
                "gradient, but the big batch is exactly what does not fit in memory: run forward and backward "
                "once per micro-batch and let the gradients add up.", _acc_concatenated, match_output=False),
        Mistake("one_backward", "You added up the micro-batch losses and called `backward()` once at the end. "
                "The gradient is right, but every micro-batch's graph stays in memory until then, as much as the "
                "big batch needs: \"let the gradients add up\" by calling `backward()` once per micro-batch, so "
                "each graph is freed right away.", _acc_one_backward, match_output=False),
        Mistake("changed_micro_batches", "Your function changed the list `micro_batches` it was given (`pop`, "
                "`del`, reassigning items): loop over it without modifying it.", _acc_pops, match_output=False),
        Mistake("mutated_input", "Your function changed the data in `micro_batches` in place (e.g. `X.zero_()` "
                "to free memory): the caller's tensors must stay as they were. Dropping your own references is "
                "enough to free memory.", _acc_frees_inputs, match_output=False),
        Mistake("not_one_step", "`optimizer.step()` ran {steps} times; gradient accumulation makes exactly one "
                "step, after `backward()` of every micro-batch.", _acc_steps_again, match_output=False),
    ],
    hints=[
        "Each micro-batch's loss is a mean over its own samples; the big batch's loss is a mean over all of "
        "them. For two halves, how many means are added up, and what would one mean of everything be?",
        "Write the big batch's mean loss as a sum over the micro-batches: how much does each micro-batch's "
        "mean count in it, when the micro-batches have 40 and 24 samples? And what is in .grad before the "
        "first micro-batch, and after the last?",
        "The ideas: weight each micro-batch's mean loss by its share of all the samples before its backward "
        "pass, so that the gradients add up to the big batch's; clear the gradients once before the "
        "micro-batches and step once after them.",
    ],
))
