"""train_one_epoch: one pass over a loader with the five steps per batch; returns the mean loss
per sample. The notebook hands the learner a colleague's loop with three bugs to find (no
``model.train()``, ``zero_grad()`` after the step, a running total of loss tensors); each is a
named mistake below, and the checks in ``_run`` name them one at a time.

Subtle: the grader leaves stale gradients in ``.grad`` and hands the model over in eval mode, so a
loop without ``zero_grad()`` first (or without ``model.train()``) makes a different update; it
uses the caller's ``optimizer`` and ``loss_fn`` (with label smoothing, so a home-made loss shows);
the last batch is shorter, so a mean of batch means is wrong; a loop that adds up loss
*tensors* keeps every batch's autograd graph alive; and a second forward in training mode per
batch (counted on the first layer) would move BatchNorm's statistics twice, though this MLP's
parameters do not show it.
"""

from __future__ import annotations

import functools
import math
import weakref

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from course_utils.grading import Case, Exercise, Incorrect, Mistake, answer_grad_mode, register
from ...answers.l05_training_loop import evaluate, train_one_epoch

from ._kit import LESSON
from ._kit import (
    RETURNS_NUMBER, RETURNED_NONE, RETURNED_TENSOR, SOFTMAX_BEFORE_LOSS, _close, _flat, _model_for, count_steps,
    loop_case, number_problem, record_modes,
)

# --- reference: the solution notebook's answer, generated (imported above). The lesson's later
# cells use it through lesson_props, which re-exports this same object: a submitted prop is the
# course's own object to the instructor's judge (reference_answer), and the sandbox keeps it.


# --- cases: loop_case (the grader builds model, loader, loss and optimizer from the seed)


# --- run and probes
class _Tag(torch.autograd.Function):
    """Identity on the loss; its backward node holds a token, so the token lives exactly as long as
    that batch's autograd graph."""

    @staticmethod
    def forward(ctx, loss, token):
        ctx.token = token
        return loss.view_as(loss)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class _Token:
    pass


def _watch_graphs(loss_fn: nn.Module) -> tuple:
    """Every loss ``loss_fn`` returns carries a token (a weak reference to it is appended to the
    returned list), so the caller can count the batches whose graph is still alive."""
    tokens: list = []

    def tag(module, args, out):
        if not (isinstance(out, torch.Tensor) and out.requires_grad):
            return None
        token = _Token()
        tokens.append(weakref.ref(token))
        return _Tag.apply(out, token)

    return loss_fn.register_forward_hook(tag), tokens


def _train_trial(fn, case: Case):
    X, y, bs, seed, lr, smoothing = (case.kwargs[k] for k in ("X", "y", "batch_size", "seed", "lr", "smoothing"))
    model = _model_for(X, y, seed)
    g = torch.Generator().manual_seed(seed)
    for p in model.parameters():  # stale gradients, as an earlier backward would leave them
        p.grad = torch.randn(p.shape, generator=g)
    model.eval()  # as an evaluation would leave it
    start = _flat(model)
    records, hooks = record_modes(model)
    first = next(m for m in model.modules() if isinstance(m, nn.Linear))
    train_forwards: list[int] = []  # the first layer's forwards in training mode, grad or not
    hooks.append(first.register_forward_pre_hook(lambda m, args: train_forwards.append(1) if m.training else None))
    backwards: list[int] = []  # backward passes that reached the last layer's bias
    hooks.append(list(model.parameters())[-1].register_hook(lambda g: backwards.append(1)))
    loader = DataLoader(TensorDataset(X, y), batch_size=bs)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    steps, step_hook = count_steps(optimizer)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=smoothing)
    tag_hook, tokens = _watch_graphs(loss_fn)
    alive: list[int] = []  # at each forward: graphs of batches before the previous one still alive
    hooks.append(model.register_forward_pre_hook(
        lambda m, args: alive.append(sum(1 for t in tokens[:-1] if t() is not None))))
    try:
        with answer_grad_mode():
            out = fn(model, loader, loss_fn, optimizer)
    finally:
        for h in hooks + [step_hook, tag_hook]:
            h.remove()
    if alive and max(alive) > 0 and fn is not train_one_epoch:
        raise Incorrect("graph_kept_alive")
    return out, _flat(model), start, records, len(steps), len(backwards), len(train_forwards) - len(loader)


def _modes_problem(records: list) -> None:
    if not records:
        raise Incorrect("no_forward")
    training_passes = [training for training, grad in records if grad]  # extra no_grad passes are fine
    if not training_passes:
        raise Incorrect("no_grad_in_training")
    if not all(training_passes):
        raise Incorrect("forgot_train_mode")


def _update_problem(case: Case, params, start, exp_params, steps: int, backwards: int) -> None:
    if torch.equal(params, start) and not backwards:
        raise Incorrect("forgot_backward")
    if torch.equal(params, start) and steps:
        raise Incorrect("zero_grad_between_backward_and_step")
    if torch.equal(params, start):
        raise Incorrect("forgot_step")
    if not steps:
        raise Incorrect("ignores_optimizer")
    if not _close(params, exp_params):
        for mistake, variant in (("forgot_zero_grad", _train_no_zero_grad),
                                 ("zero_grad_at_end", _train_zero_grad_at_end),
                                 ("ignores_loss_fn", _train_ignores_loss_fn),
                                 ("softmax_before_loss", _train_softmax_first)):
            if _close(params, _train_trial(variant, case)[1]):
                raise Incorrect(mistake)
        raise Incorrect("wrong_update", diff=f"{float((params - exp_params).abs().max()):.3g}")


def _run(answer, case: Case):
    out, params, start, records, steps, backwards, extra_forwards = _train_trial(answer, case)
    if torch.initial_seed() != case.kwargs["seed"]:  # _model_for seeded it; only torch.manual_seed changes it
        raise Incorrect("reseeded_global_rng")
    _modes_problem(records)
    if extra_forwards > 0:  # this MLP does not show it, a model with BatchNorm or Dropout would
        raise Incorrect("second_forward", n=extra_forwards)
    number_problem(out, "the mean training loss")
    return {"out": float(out), "params": params, "start": start, "steps": steps, "backwards": backwards}


def _finish(ran: dict, case: Case) -> bool:
    """The judge's half: the reference's epoch on the same case, and the wrong loops that name a
    mistake (each a reference with a switch: never in the sandbox that runs the answer)."""
    out, params, start = ran["out"], ran["params"], ran["start"]
    exp_out, exp_params = _train_trial(train_one_epoch, case)[:2]
    _update_problem(case, params, start, exp_params, int(ran["steps"]), int(ran["backwards"]))
    if not math.isclose(out, exp_out, rel_tol=1e-5, abs_tol=1e-7):
        if math.isclose(out, _train_trial(_train_batch_mean, case)[0], rel_tol=1e-5, abs_tol=1e-7):
            raise Incorrect("batch_mean_average")
        raise Incorrect("wrong_average")
    return True


# --- wrong answers
def _epoch(model, loader, loss_fn, optimizer, *, train_mode=True, zero="start", backward=True, step=True,
           softmax=False, batch_means=False, keep_graphs=False, warm_up=False):
    """The reference loop with one knob turned (``zero``: "start", "before_step", "end" or None)."""
    if train_mode:
        model.train()
    total, n, means = 0.0, 0, []
    for X, y in loader:
        if zero == "start":
            optimizer.zero_grad()
        if warm_up:  # a forward in training mode before the one whose loss is used
            model(X)
        logits = model(X)
        loss = loss_fn(torch.softmax(logits, dim=1) if softmax else logits, y)
        if backward:
            loss.backward()
        if zero == "before_step":
            optimizer.zero_grad()
        if step:
            optimizer.step()
        if zero == "end":
            optimizer.zero_grad()
        total = total + (loss if keep_graphs else loss.item()) * len(y)
        n += len(y)
        means.append(loss.item())
    return sum(means) / len(means) if batch_means else float(total / n)


_train_no_zero_grad = functools.partial(_epoch, zero=None)
_train_zero_grad_at_end = functools.partial(_epoch, zero="end")
_train_softmax_first = functools.partial(_epoch, softmax=True)
_train_batch_mean = functools.partial(_epoch, batch_means=True)
_train_no_train_mode = functools.partial(_epoch, train_mode=False)


def _train_ignores_loss_fn(model, loader, loss_fn, optimizer):
    return train_one_epoch(model, loader, nn.functional.cross_entropy, optimizer)


def _train_own_optimizer(model, loader, loss_fn, optimizer):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)  # shadows the argument
    return train_one_epoch(model, loader, loss_fn, optimizer)


def _train_doubled_loss(model, loader, loss_fn, optimizer):
    return train_one_epoch(model, loader, lambda logits, y: 2 * loss_fn(logits, y), optimizer)


def _train_reseeds(model, loader, loss_fn, optimizer):
    torch.manual_seed(0)
    return train_one_epoch(model, loader, loss_fn, optimizer)


def _train_returns(convert):
    return lambda model, loader, loss_fn, optimizer: convert(train_one_epoch(model, loader, loss_fn, optimizer))


# --- declaration
register(Exercise(
    lesson=LESSON, name="train_one_epoch", title="Repair a training epoch with three silent bugs",
    reference=train_one_epoch, run=_run, finish=_finish, cases=loop_case, n_random=5, timeout=10,
    mistakes=[
        Mistake("forgot_zero_grad", "Gradients accumulate: without `optimizer.zero_grad()` every `backward()` "
                "adds to the gradients of all earlier batches (and to whatever was there before the epoch), so "
                "each step uses a sum of old gradients. Call `optimizer.zero_grad()` at the start of every "
                "iteration.", _train_no_zero_grad, match_output=False),
        Mistake("zero_grad_at_end", "You zero the gradients after `step()`, so the first update of the epoch "
                "also used gradients left over from before the epoch (the check leaves some there, as an earlier "
                "`backward()` would). Call `optimizer.zero_grad()` at the start of each iteration, before "
                "`backward()`.", _train_zero_grad_at_end, match_output=False),
        Mistake("forgot_step", "The parameters did not change. After `loss.backward()` computes the gradients, "
                "`optimizer.step()` must apply them, once per batch.", functools.partial(_epoch, step=False),
                match_output=False),
        Mistake("batch_mean_average", "You averaged the batch losses, but the last batch is smaller, so its "
                "loss counts too much. Weight each batch's loss by its size: sum `loss.item() * len(y)` and "
                "divide by the number of samples.", _train_batch_mean, match_output=False),
        Mistake("forgot_train_mode", "The model ran in eval mode: call `model.train()` at the start of the "
                "epoch. After an evaluation the model is still in eval mode, and Dropout and BatchNorm would "
                "then behave as in testing.", _train_no_train_mode, match_output=False),
        Mistake("ignores_optimizer", "The optimizer you were given never stepped: you made your own. Use the "
                "`optimizer` argument (its learning rate and settings are the caller's choice, and a new "
                "optimizer would also lose its state, e.g. Adam's moments, every epoch).", _train_own_optimizer,
                match_output=False),
        Mistake("ignores_loss_fn", "You computed a loss of your own (`F.cross_entropy`, a new "
                "`nn.CrossEntropyLoss()`) instead of calling the `loss_fn` you were given (the check's has label "
                "smoothing). Use `loss = loss_fn(logits, y)`.", _train_ignores_loss_fn, match_output=False),
        Mistake("softmax_before_loss", SOFTMAX_BEFORE_LOSS, _train_softmax_first, match_output=False),
        Mistake("forgot_backward", "The parameters did not change, and `loss.backward()` never ran: without it "
                "there are no gradients for `optimizer.step()` to apply. Per batch: `zero_grad()`, forward, loss, "
                "`backward()`, `step()`.", functools.partial(_epoch, backward=False), match_output=False),
        Mistake("zero_grad_between_backward_and_step", "`optimizer.step()` ran, but the parameters did not "
                "change: the gradients were already zeroed when it ran. Zero them at the start of the iteration "
                "(before the forward pass), never between `backward()` and `step()`.",
                functools.partial(_epoch, zero="before_step"), match_output=False),
        Mistake("graph_kept_alive", "Your loop keeps the autograd graphs of earlier batches alive (e.g. "
                "`total = total + loss * len(y)` or a list of loss tensors): memory grows with every batch. Take "
                "the number out with `loss.item()` (or `loss.detach()`) before adding it up.",
                functools.partial(_epoch, keep_graphs=True), match_output=False),
        Mistake("reseeded_global_rng", "Your epoch called `torch.manual_seed(...)`: every epoch would then draw "
                "the same dropout masks and (with `shuffle=True`) the same batch order, so the model sees "
                "identical epochs. Seed once, at the start of the whole run, not inside `train_one_epoch`.",
                _train_reseeds, match_output=False),
        Mistake("no_forward", "Your function never called the model: loop over the loader and compute "
                "`model(X)` for every batch.", lambda model, loader, loss_fn, optimizer: 0.0, match_output=False),
        Mistake("no_grad_in_training", "The forward pass ran with autograd off (`no_grad`/`inference_mode`), so "
                "there is nothing to backpropagate. Only evaluation uses them.",
                lambda model, loader, loss_fn, optimizer: evaluate(model, loader, loss_fn)[0], match_output=False),
        Mistake("second_forward", "Your loop ran the model in training mode more than once per batch ({n} "
                "extra forward passes in the epoch). Every forward in training mode changes state a model may "
                "hold: BatchNorm updates its running statistics and Dropout draws new masks, so with those layers "
                "the epoch would train a different model. Run the model once per batch and compute the loss (and "
                "anything you log) from that output.", functools.partial(_epoch, warm_up=True), match_output=False),
        Mistake("wrong_update", "After your epoch the parameters differ from those after one correct epoch "
                "with the given `loss_fn` and `optimizer` (largest difference {diff}), though the optimizer "
                "stepped and the model ran in training mode. Check what reaches the loss (`loss_fn(model(X), y)` "
                "on every batch) and what `backward()` sees.", _train_doubled_loss, match_output=False),
        Mistake("wrong_average", "Your parameters are right, but the returned loss is not the mean loss per "
                "sample over the epoch: sum `loss.item() * len(y)` over batches and divide by the number of "
                "samples.", _train_returns(lambda loss: 2 * loss), match_output=False),
        Mistake("returned_none", RETURNED_NONE, _train_returns(lambda loss: None), match_output=False),
        Mistake("returned_tensor", RETURNED_TENSOR, _train_returns(torch.tensor), match_output=False),
        RETURNS_NUMBER.mistake(_train_returns(lambda loss: [loss])),
    ],
    hints=[
        "Run the colleague's loop in your head right after an evaluation, with old gradients still in .grad: "
        "what mode is the model in during the epoch, and what does the very first step of the epoch add to "
        "the fresh gradient?",
        "And what is total after the loop: a number, or a tensor that still holds on to something from every "
        "batch?",
        "The ideas: an epoch sets the training mode itself at its start; gradients are cleared before each "
        "backward pass, so no step sees gradients from anything but its own batch; what you add up for the "
        "log is a plain Python number, taken out of the loss tensor, weighted by the batch size.",
    ],
))
