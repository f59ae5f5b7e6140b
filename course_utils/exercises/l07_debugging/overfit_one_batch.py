"""overfit_one_batch: train a model on one batch until the loss is about 0; return the losses.

Subtle: the learner picks the optimizer and learning rate (any that gets there passes); the
losses are Python floats, one per step, each taken *before* its step (the first is the loss of
the model as given, mean cross-entropy); the model is trained in place; the list must be real
(the model's loss on the batch afterwards is small too).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON
from ._overfit_watch import RETURNS_LIST, close, first_loss_mistake, initial_losses, watched_call

# --- reference: the solution notebook's answer (generated from solutions/07_debugging.py)
from ...answers.l07_debugging import overfit_one_batch

TARGET = 0.05  # the last loss must be below this
STEPS = (150, 200)


# --- cases
def _model(seed: int, d: int, hidden: int, c: int) -> nn.Module:
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, c))


def _cases(r: Rand) -> Case:
    n, d, c = r.integer(6, 16), r.integer(4, 12), r.integer(2, 6)
    model = _model(r.integer(0, 2**31), d, r.integer(24, 48), c)
    return Case((model, r.randn(n, d), r.randint(0, c, (n,)), r.integer(*STEPS)))


def _fixed(label: str, n: int, d: int, c: int, steps: int, seed: int) -> Case:
    g = torch.Generator().manual_seed(seed)
    return Case((_model(seed, d, 32, c), torch.randn(n, d, generator=g), torch.randint(0, c, (n,), generator=g),
                 steps), label=label)


EDGE_CASES = [
    _fixed("16 digits-sized examples, 10 classes, 200 steps", 16, 64, 10, 200, 1),
    _fixed("two examples, two classes, 150 steps", 2, 5, 2, 150, 2),
]


# --- run
def _run(answer: Any, case: Case) -> Any:
    model, X, y, steps = case.args
    first = initial_losses(model, X, y)
    before = [p.detach().clone() for p in model.parameters()]
    given = X.clone(), y.clone()
    losses, watch = watched_call(answer, model, X, y, steps)
    if not (torch.equal(X, given[0]) and torch.equal(y, given[1])):
        raise Incorrect("mutated_input")
    if len(losses) != steps:
        raise Incorrect("wrong_length", got=len(losses), steps=steps)
    if all(torch.equal(p0, p.detach()) for p0, p in zip(before, model.parameters())):
        raise Incorrect("not_trained")
    if not close(losses[0], first["mean"]):  # which wrong loss it is, if the check knows it
        raise Incorrect(first_loss_mistake(losses[0], first, len(y)))
    if watch.steps > steps:  # two steps per loss: the count says it before the gradients do
        raise Incorrect("steps_not_losses", n=watch.steps, steps=steps)
    if watch.stale is not None:
        raise Incorrect("stale_gradients", cos=f"{watch.stale[0]:.3f}", ratio=f"{watch.stale[1]:.2f}")
    if watch.recreated:
        raise Incorrect("optimizer_recreated", n=watch.recreated)
    if watch.extra_updates:
        raise Incorrect("updated_outside_step", n=watch.extra_updates)
    last = float(losses[-1])
    if not math.isfinite(last):
        raise Incorrect("diverged", last=last)
    if len(watch.losses) == steps and not all(close(a, b) for a, b in zip(losses, watch.losses)):
        raise Incorrect("losses_not_real", now=f"{watch.losses[-1]:.3g}")  # not the loss each step began from
    if last >= TARGET:
        raise Incorrect("not_overfit", last=f"{last:.3g}", steps=steps)
    with torch.no_grad():
        now = F.cross_entropy(model(X), y).item()
    if not now < 2 * TARGET:
        raise Incorrect("losses_not_real", now=f"{now:.3g}")
    if watch.steps and watch.steps != steps:
        raise Incorrect("steps_not_losses", n=watch.steps, steps=steps)
    return True


# --- wrong answers
def _train(model, X, y, steps, make_opt=None, record="before", zero=True, step=True, loss_fn=F.cross_entropy,
           extra=0):
    optimizer = (make_opt or (lambda ps: torch.optim.Adam(ps, lr=1e-2)))(model.parameters())
    losses: list[Any] = []
    for _ in range(steps + extra):
        loss = loss_fn(model(X), y)
        if zero:
            optimizer.zero_grad()
        loss.backward()
        if step:
            optimizer.step()
        if record == "tensor":
            losses.append(loss)
        elif record == "after":
            with torch.no_grad():
                losses.append(F.cross_entropy(model(X), y).item())
        else:
            losses.append(loss.item())
    return losses


def _lr_too_low(model, X, y, steps):
    return _train(model, X, y, steps, lambda ps: torch.optim.SGD(ps, lr=1e-3))


def _after_step(model, X, y, steps):
    return _train(model, X, y, steps, record="after")


def _tensors(model, X, y, steps):
    return _train(model, X, y, steps, record="tensor")


def _sum(model, X, y, steps):
    return _train(model, X, y, steps, loss_fn=lambda out, t: F.cross_entropy(out, t, reduction="sum"))


def _softmax(model, X, y, steps):
    return _train(model, X, y, steps, loss_fn=lambda out, t: F.cross_entropy(out.softmax(-1), t))


def _no_step(model, X, y, steps):
    return _train(model, X, y, steps, step=False)


def _one_more(model, X, y, steps):
    return _train(model, X, y, steps, extra=1)


def _lr_far_too_high(model, X, y, steps):
    return _train(model, X, y, steps, lambda ps: torch.optim.SGD(ps, lr=1e4))


def _faked(model, X, y, steps):
    losses = _train(model, X, y, 3)
    return losses + [0.0] * (steps - 3)


def _two_steps_each(model, X, y, steps):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        for k in range(2):
            loss = F.cross_entropy(model(X), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses += [loss.item()] if k == 0 else []
    return losses


def _left_in_eval(model, X, y, steps):
    losses = _train(model, X, y, steps)
    model.eval()
    return losses


def _adam_each_step(model, X, y, steps):
    losses = []
    for _ in range(steps):
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)  # inside the loop: its state lost every step
        loss = F.cross_entropy(model(X), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def _trains_in_eval(model, X, y, steps):
    model.eval()
    losses = _train(model, X, y, steps)
    model.train()
    return losses


def _hook_left(model, X, y, steps):
    return _train(model.register_forward_hook(lambda *a: None) and model, X, y, steps)


# --- declaration
register(Exercise(
    lesson=LESSON, name="overfit_one_batch", title="Overfit one batch: train until the loss is about 0",
    reference=overfit_one_batch, cases=_cases, run=_run, edge_cases=EDGE_CASES, n_random=3, timeout=20.0,
    mistakes=[
        Mistake("not_overfit", "After {steps} steps your last loss is {last}, not below 0.05. A handful of "
                "examples can be memorised: the loss should reach about 0. Does your curve fall slowly, or stop "
                "at a floor? Each tells you something different about the step you take.",
                _lr_too_low, match_output=False),
        Mistake("diverged", "Your last loss is {last}: training blew up. How large is each update, compared "
                "with the weights it changes?",
                _lr_far_too_high, match_output=False),
        Mistake("first_loss_not_initial", "Your first loss is not the loss of the model you were given. Compute "
                "each loss *before* its `optimizer.step()` and record that one (not a loss recomputed after the "
                "step).", _after_step, match_output=False),
        Mistake("not_plain_cross_entropy", "Your loss is cross-entropy with label smoothing; the contract asks "
                "for the plain mean cross-entropy.", lambda model, X, y, steps: _train(model, X, y, steps, loss_fn=(
                    lambda out, t: F.cross_entropy(out, t, label_smoothing=0.1))), match_output=False),
        Mistake("sum_not_mean", "Your losses are summed over the batch (`reduction=\"sum\"`); use the mean "
                "cross-entropy, `F.cross_entropy(logits, y)`.", _sum, match_output=False),
        Mistake("softmax_before_loss", "Your loss sees probabilities: softmax ran before `cross_entropy`, "
                "which applies log-softmax itself, so the gradients are wrong and the loss has a floor. What should "
                "`cross_entropy` receive?", _softmax,
                match_output=False),
        Mistake("tensor_losses", "Your list holds tensors, each keeping its step's graph alive. The task asks "
                "for Python floats: which tensor method gives one?", _tensors, match_output=False),
        RETURNS_LIST.mistake(lambda model, X, y, steps: None),
        Mistake("not_floats", "Return a list of Python floats; your list holds `{got}` values. Append "
                "`loss.item()`, which gives a Python float.", lambda model, X, y, steps: [
                    v.detach().numpy() for v in _train(model, X, y, steps, record="tensor")], match_output=False),
        Mistake("steps_not_losses", "Your code made {n} optimizer steps for steps={steps}: exactly one "
                "`optimizer.step()` per recorded loss, and no training after the last one.", _two_steps_each,
                match_output=False),
        Mistake("stale_gradients", "The gradients your optimizer stepped with are not the gradient of this "
                "step's loss (direction agreement {cos}, size {ratio}x): `backward()` adds to what "
                "`.grad` already holds. What clears it, and when in the step?", lambda model, X, y, steps: _train(
                    model, X, y, steps, lambda ps: torch.optim.SGD(ps, lr=0.02), zero=False), match_output=False),
        Mistake("model_state_changed", "Leave the model as you found it, apart from its trained weights: your "
                "code changed its train/eval mode or its parameters' `requires_grad`.", _left_in_eval,
                match_output=False),
        Mistake("optimizer_recreated", "Your optimizer's state (Adam's running averages, SGD's momentum) was "
                "thrown away {n} time(s) while training: an optimizer built inside the loop, or its state "
                "cleared, starts from nothing every step. Where must it be built for its state to last?",
                _adam_each_step, match_output=False),
        Mistake("updated_outside_step", "Your parameters changed {n} time(s) between optimizer steps: an update "
                "outside `step()` changes what the optimizer computed. Which line moves the weights besides it?",
                match_output=False),
        Mistake("trained_in_eval_mode", "{what} ran with the model (or one of its layers) in eval mode. Train "
                "in training mode (`model.train()`): dropout and batch norm behave differently "
                "in eval mode, and this function must work for any model.", _trains_in_eval, match_output=False),
        Mistake("hooks_left_behind", "Your code left {n} hook(s) on the model (or torch's global hooks); "
                "they run on every later forward. Remove each with its handle's `.remove()`.", _hook_left,
                match_output=False),
        Mistake("wrong_length", "You returned {got} losses for steps={steps}: one loss per optimizer step.",
                _one_more, match_output=False),
        Mistake("not_trained", "The model's parameters did not change: call `optimizer.step()` after "
                "`backward()`, with an optimizer built on *this* model's `parameters()`.", _no_step,
                match_output=False),
        Mistake("mutated_input", "Your function changed the batch it was given (`X` or the labels `y`) in place: "
                "train on the caller's batch without rewriting it.", lambda model, X, y, steps: _train(
                    model, X, y.fill_(0), steps), match_output=False),
        Mistake("losses_not_real", "Your list is not the losses your training computed: the model's real loss on "
                "the batch was {now} (at the end, or as a step began). Record each step's own loss.", _faked,
                match_output=False),
    ],
    hints=[
        "Read the first attempt one line at a time: what does each line do to the optimizer's state and to the "
        "gradients, from one step to the next? And when is the loss you record computed?",
        "The printed curve stops at a floor, not slowly falling: something bounds the loss from below. Look at "
        "what reaches `cross_entropy`, and at what each step starts from (the optimizer, the gradients).",
        "The idea: one optimizer that lives across all the steps, gradients of this step's loss only, the model's "
        "raw outputs into the loss, and one plain number recorded per step, before its update.",
    ],
))
