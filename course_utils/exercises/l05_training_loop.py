"""Exercises of 05_training_loop: the training and evaluation loops and the tools around them.

The loop graders build a small model and data themselves, so they can watch what a learner's
loop does to it:

- stale values are put in every ``.grad`` before the call (as a previous backward would leave
  them): a loop without ``zero_grad()`` first uses them and makes a different update;
- the model is handed over in the "wrong" mode (eval for training, train with Dropout for
  evaluation), and forward pre-hooks record ``module.training`` and
  ``torch.is_grad_enabled()`` at every call;
- the data never divides into equal batches, so a mean of batch means differs from the mean
  over samples.
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, answer_grad_mode, register
from course_utils.grading.calls import GRAD_LEFT_OFF
from course_utils.training_lab import evaluate, train_one_epoch

LESSON = "05_training_loop"


@contextlib.contextmanager
def _forbid(file_suffix: str, names: set[str], mistake: str, message: str):
    """Fail with ``Incorrect(mistake, message)`` if the block calls one of ``names`` defined in a
    file ending with ``file_suffix`` (a profile hook sees every Python call, however the learner
    imported or renamed the function)."""
    seen: list[str] = []
    previous = sys.getprofile()

    def hook(frame, event, arg):
        if event == "call" and frame.f_code.co_name in names and frame.f_code.co_filename.endswith(file_suffix):
            seen.append(frame.f_code.co_name)

    sys.setprofile(hook)
    try:
        yield
    finally:
        sys.setprofile(previous)
    if seen:
        raise Incorrect(mistake, message.format(name=seen[0].lstrip("_")))


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a, b, rtol=1e-5, atol=1e-6))


def _flat(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).clone()


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _number_problem(value, what: str) -> None:
    if value is None:
        raise Incorrect("returned_none", f"Your function returned None; return {what}. Did you forget a `return`?")
    if isinstance(value, torch.Tensor):
        raise Incorrect("returned_tensor", f"Return {what} as a Python float: `.item()` turns a one-element "
                        "tensor into one (and lets the graph behind it be freed).")
    if not _is_number(value):
        raise Incorrect("wrong_type", f"Return {what} as a Python float, not {type(value).__name__}.")


def _loop_case(r: Rand) -> Case:
    """Data for a loop grader. Everything goes in kwargs: the grader builds the model, loader,
    loss and optimizer itself, so the case is described by its seed only."""
    d, c = r.integer(3, 6), r.integer(2, 4)
    bs = r.integer(4, 9)
    n = r.integer(2, 4) * bs + r.integer(1, bs - 1)  # the last batch is always shorter
    return Case(kwargs=dict(X=r.randn(n, d), y=r.randint(0, c, (n,)), batch_size=bs, seed=r.integer(0, 2**31),
                            # for train_one_epoch: an optimizer and a loss the learner cannot guess
                            lr=round(r.uniform(0.05, 0.5), 3), smoothing=round(r.uniform(0.05, 0.3), 2)))


def _model_for(X: torch.Tensor, y: torch.Tensor, seed: int, dropout: float = 0.0) -> nn.Module:
    torch.manual_seed(seed)  # checks run inside a forked RNG: the learner's state is untouched
    layers = [nn.Linear(X.shape[1], 8), nn.ReLU()]
    if dropout:
        layers.append(nn.Dropout(dropout))
    layers.append(nn.Linear(8, int(y.max()) + 2))
    return nn.Sequential(*layers)


def _record_modes(model: nn.Module) -> tuple[list, list]:
    """Forward pre-hooks on the model *and every submodule*: ``model.forward(X)`` skips the
    model's own hooks but still calls its layers."""
    records: list[tuple[bool, bool]] = []
    hooks = [m.register_forward_pre_hook(lambda m, args: records.append((m.training, torch.is_grad_enabled())))
             for m in model.modules()]
    return records, hooks


def _count_steps(optimizer: torch.optim.Optimizer) -> tuple[list, object]:
    steps: list[int] = []
    return steps, optimizer.register_step_post_hook(lambda opt, args, kwargs: steps.append(1))


# --------------------------------------------------------------------------- 1. train_one_epoch
def _train_no_zero_grad(model, loader, loss_fn, optimizer):
    model.train()
    total, n = 0.0, 0
    for X, y in loader:
        loss = loss_fn(model(X), y)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(y)
        n += len(y)
    return total / n


def _train_zero_grad_at_end(model, loader, loss_fn, optimizer):
    model.train()
    total, n = 0.0, 0
    for X, y in loader:
        loss = loss_fn(model(X), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        total += loss.item() * len(y)
        n += len(y)
    return total / n


def _train_no_step(model, loader, loss_fn, optimizer):
    model.train()
    total, n = 0.0, 0
    for X, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(X), y)
        loss.backward()
        total += loss.item() * len(y)
        n += len(y)
    return total / n


def _train_batch_mean(model, loader, loss_fn, optimizer):
    model.train()
    losses = []
    for X, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(X), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)


def _train_own_optimizer(model, loader, loss_fn, optimizer):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)  # shadows the argument
    return train_one_epoch(model, loader, loss_fn, optimizer)


def _train_ignores_loss_fn(model, loader, loss_fn, optimizer):
    return train_one_epoch(model, loader, nn.functional.cross_entropy, optimizer)


def _train_no_train_mode(model, loader, loss_fn, optimizer):
    total, n = 0.0, 0
    for X, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(X), y)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(y)
        n += len(y)
    return total / n


def _train_softmax_first(model, loader, loss_fn, optimizer):
    model.train()
    total, n = 0.0, 0
    for X, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(torch.softmax(model(X), dim=1), y)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(y)
        n += len(y)
    return total / n


def _train_no_backward(model, loader, loss_fn, optimizer):
    model.train()
    total, n = 0.0, 0
    for X, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(X), y)
        optimizer.step()
        total += loss.item() * len(y)
        n += len(y)
    return total / n


def _train_zero_before_step(model, loader, loss_fn, optimizer):
    model.train()
    total, n = 0.0, 0
    for X, y in loader:
        loss = loss_fn(model(X), y)
        loss.backward()
        optimizer.zero_grad()
        optimizer.step()
        total += loss.item() * len(y)
        n += len(y)
    return total / n


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


def _watch_graphs(loss_fn: nn.Module, records: list) -> list:
    """Every loss ``loss_fn`` returns carries a token; at each forward of the model, ``records``
    gets the number of earlier batches whose graph is still alive."""
    import weakref

    tokens: list = []

    def tag(module, args, out):
        if not (isinstance(out, torch.Tensor) and out.requires_grad):
            return None
        token = _Token()
        tokens.append(weakref.ref(token))
        return _Tag.apply(out, token)

    return [loss_fn.register_forward_hook(tag), tokens]


def _train_trial(fn, case: Case):
    X, y, bs, seed, lr, smoothing = (case.kwargs[k] for k in ("X", "y", "batch_size", "seed", "lr", "smoothing"))
    model = _model_for(X, y, seed)
    g = torch.Generator().manual_seed(seed)
    for p in model.parameters():  # stale gradients, as an earlier backward would leave them
        p.grad = torch.randn(p.shape, generator=g)
    model.eval()  # as an evaluation would leave it
    start = _flat(model)
    records, hooks = _record_modes(model)
    backwards: list[int] = []  # backward passes that reached the last layer's bias
    hooks.append(list(model.parameters())[-1].register_hook(lambda g: backwards.append(1)))
    loader = DataLoader(TensorDataset(X, y), batch_size=bs)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    steps, step_hook = _count_steps(optimizer)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=smoothing)
    tag_hook, tokens = _watch_graphs(loss_fn, [])
    alive: list[int] = []  # at each forward: graphs of batches before the previous one still alive
    hooks.append(model.register_forward_pre_hook(
        lambda m, args: alive.append(sum(1 for t in tokens[:-1] if t() is not None))))
    try:
        with answer_grad_mode():
            out = fn(model, loader, loss_fn, optimizer)
    finally:
        for h in hooks:
            h.remove()
        step_hook.remove()
        tag_hook.remove()
    if alive and max(alive) > 0 and fn is not train_one_epoch:
        raise Incorrect("graph_kept_alive", _TRAIN_MESSAGES["graph_kept_alive"])
    return out, _flat(model), start, records, len(steps), len(backwards)


def _train_run(answer, case: Case):
    if not callable(answer):
        raise Incorrect("wrong_type", f"You passed a {type(answer).__name__}; pass your function itself.")
    out, params, start, records, steps, backwards = _train_trial(answer, case)
    if torch.initial_seed() != case.kwargs["seed"]:  # _model_for seeded it; only torch.manual_seed changes it
        raise Incorrect("reseeded_global_rng", "Your epoch called `torch.manual_seed(...)`: every epoch would then "
                        "draw the same dropout masks and (with `shuffle=True`) the same batch order, so the "
                        "model sees identical epochs. Seed once, at the start of the whole run, not inside "
                        "`train_one_epoch`.")
    if not records:
        raise Incorrect("no_forward", "Your function never called the model: loop over the loader and "
                        "compute `model(X)` for every batch.")
    training_passes = [training for training, grad in records if grad]  # extra no_grad passes are fine
    if not training_passes:
        raise Incorrect("no_grad_in_training", "The forward pass ran with autograd off (`no_grad`/"
                        "`inference_mode`), so there is nothing to backpropagate. Only evaluation uses them.")
    if not all(training_passes):
        raise Incorrect("forgot_train_mode", "The model ran in eval mode: call `model.train()` at the start "
                        "of the epoch. After an evaluation the model is still in eval mode, and Dropout and "
                        "BatchNorm would then behave as in testing.")
    _number_problem(out, "the mean training loss")
    exp_out, exp_params = _train_trial(train_one_epoch, case)[:2]
    if torch.equal(params, start) and not backwards:
        raise Incorrect("forgot_backward", _TRAIN_MESSAGES["forgot_backward"])
    if torch.equal(params, start) and steps:
        raise Incorrect("zero_grad_between_backward_and_step", _TRAIN_MESSAGES["zero_grad_between_backward_and_step"])
    if torch.equal(params, start):
        raise Incorrect("forgot_step", "The parameters did not change. After `loss.backward()` computes the "
                        "gradients, `optimizer.step()` must apply them, once per batch.")
    if not steps:
        raise Incorrect("ignores_optimizer", _TRAIN_MESSAGES["ignores_optimizer"])
    if not _close(params, exp_params):
        for mistake, variant in (("forgot_zero_grad", _train_no_zero_grad),
                                 ("zero_grad_at_end", _train_zero_grad_at_end),
                                 ("ignores_loss_fn", _train_ignores_loss_fn),
                                 ("softmax_before_loss", _train_softmax_first)):
            if _close(params, _train_trial(variant, case)[1]):
                raise Incorrect(mistake, _TRAIN_MESSAGES[mistake])
        diff = float((params - exp_params).abs().max())
        raise Incorrect("wrong_update", "After your epoch the parameters differ from those after one correct "
                        f"epoch with the given `loss_fn` and `optimizer` (largest difference {diff:.3g}), though "
                        "the optimizer stepped and the model ran in training mode. Check what reaches the loss "
                        "(`loss_fn(model(X), y)` on every batch) and what `backward()` sees.")
    if not math.isclose(out, exp_out, rel_tol=1e-5, abs_tol=1e-7):
        if math.isclose(out, _train_trial(_train_batch_mean, case)[0], rel_tol=1e-5, abs_tol=1e-7):
            raise Incorrect("batch_mean_average", _TRAIN_MESSAGES["batch_mean_average"])
        raise Incorrect("wrong_average", "Your parameters are right, but the returned loss is not the mean "
                        "loss per sample over the epoch: sum `loss.item() * len(y)` over batches and divide "
                        "by the number of samples.")
    return True


_SOFTMAX = ("You applied softmax to the logits before the loss: `nn.CrossEntropyLoss` (the `loss_fn` "
            "here) applies log-softmax itself, so it must get the raw logits `model(X)`. With probabilities "
            "the loss is wrong and its gradients are much smaller.")

_TRAIN_MESSAGES = {
    "graph_kept_alive": "Your loop keeps the autograd graphs of earlier batches alive (e.g. `total = total + "
    "loss * len(y)` or a list of loss tensors): memory grows with every batch. Take the number out with "
    "`loss.item()` (or `loss.detach()`) before adding it up.",
    "forgot_backward": "The parameters did not change, and `loss.backward()` never ran: without it there are "
    "no gradients for `optimizer.step()` to apply. Per batch: `zero_grad()`, forward, loss, `backward()`, `step()`.",
    "softmax_before_loss": _SOFTMAX,
    "zero_grad_between_backward_and_step": "`optimizer.step()` ran, but the parameters did not change: the "
    "gradients were already zeroed when it ran. Zero them at the start of the iteration (before the "
    "forward pass), never between `backward()` and `step()`.",
    "forgot_zero_grad": "Gradients accumulate: without `optimizer.zero_grad()` every `backward()` adds to "
    "the gradients of all earlier batches (and to whatever was there before the epoch), so each step "
    "uses a sum of old gradients. Call `optimizer.zero_grad()` at the start of every iteration.",
    "zero_grad_at_end": "You zero the gradients after `step()`, so the first update of the epoch also used "
    "gradients left over from before the epoch (the check leaves some there, as an earlier `backward()` "
    "would). Call `optimizer.zero_grad()` at the start of each iteration, before `backward()`.",
    "batch_mean_average": "You averaged the batch losses, but the last batch is smaller, so its loss "
    "counts too much. Weight each batch's loss by its size: sum `loss.item() * len(y)` and divide by the "
    "number of samples.",
    "ignores_optimizer": "The optimizer you were given never stepped: you made your own. Use the "
    "`optimizer` argument (its learning rate and settings are the caller's choice, and a new optimizer "
    "would also lose its state, e.g. Adam's moments, every epoch).",
    "ignores_loss_fn": "You computed a loss of your own (`F.cross_entropy`, a new `nn.CrossEntropyLoss()`) "
    "instead of calling the `loss_fn` you were given (the check's has label smoothing). Use "
    "`loss = loss_fn(logits, y)`.",
}

register(Exercise(
    lesson=LESSON, name="train_one_epoch", title="One epoch of the five-step training loop",
    reference=train_one_epoch, run=_train_run, cases=_loop_case, n_random=5, timeout=10,
    mistakes=[
        Mistake("forgot_zero_grad", _TRAIN_MESSAGES["forgot_zero_grad"], _train_no_zero_grad, match_output=False),
        Mistake("zero_grad_at_end", _TRAIN_MESSAGES["zero_grad_at_end"], _train_zero_grad_at_end,
                match_output=False),
        Mistake("forgot_step", "The parameters never changed: call `optimizer.step()` after `loss.backward()`.",
                _train_no_step, match_output=False),
        Mistake("batch_mean_average", _TRAIN_MESSAGES["batch_mean_average"], _train_batch_mean, match_output=False),
        Mistake("forgot_train_mode", "Call `model.train()` at the start of the epoch: the model may still be "
                "in eval mode from the last evaluation.", _train_no_train_mode, match_output=False),
        Mistake("ignores_optimizer", _TRAIN_MESSAGES["ignores_optimizer"], _train_own_optimizer, match_output=False),
        Mistake("ignores_loss_fn", _TRAIN_MESSAGES["ignores_loss_fn"], _train_ignores_loss_fn, match_output=False),
        Mistake("softmax_before_loss", _SOFTMAX, _train_softmax_first, match_output=False),
        Mistake("forgot_backward", _TRAIN_MESSAGES["forgot_backward"], _train_no_backward, match_output=False),
        Mistake("zero_grad_between_backward_and_step", _TRAIN_MESSAGES["zero_grad_between_backward_and_step"],
                _train_zero_before_step, match_output=False),
    ],
    hints=[
        "Start with `model.train()`, then `for X, y in loader:` and the five steps inside the loop.",
        "The five steps: `optimizer.zero_grad()`, `logits = model(X)`, `loss = loss_fn(logits, y)`, "
        "`loss.backward()`, `optimizer.step()`.",
        "For the mean loss per sample keep `total += loss.item() * len(y)` and `n += len(y)`; return `total / n`.",
    ],
))


# --------------------------------------------------------------------------- 2. evaluate
def _eval_no_eval_mode(model, loader, loss_fn):
    total, correct, n = 0.0, 0, 0
    with torch.inference_mode():
        for X, y in loader:
            logits = model(X)
            total += loss_fn(logits, y).item() * len(y)
            correct += (logits.argmax(dim=1) == y).sum().item()
            n += len(y)
    return total / n, correct / n


def _eval_with_grad(model, loader, loss_fn):
    model.eval()
    total, correct, n = 0.0, 0, 0
    for X, y in loader:
        logits = model(X)
        total += loss_fn(logits, y).item() * len(y)
        correct += (logits.argmax(dim=1) == y).sum().item()
        n += len(y)
    return total / n, correct / n


def _eval_batch_mean(model, loader, loss_fn):
    model.eval()
    losses, accs = [], []
    with torch.inference_mode():
        for X, y in loader:
            logits = model(X)
            losses.append(loss_fn(logits, y).item())
            accs.append((logits.argmax(dim=1) == y).float().mean().item())
    return sum(losses) / len(losses), sum(accs) / len(accs)


def _eval_percent(model, loader, loss_fn):
    loss, acc = evaluate(model, loader, loss_fn)
    return loss, 100 * acc


def _eval_ignores_loss_fn(model, loader, loss_fn):
    model.eval()
    total, hits, n = 0.0, 0, 0
    with torch.inference_mode():
        for X, y in loader:
            logits = model(X)
            total += nn.functional.cross_entropy(logits, y, reduction="sum").item()
            hits += int((logits.argmax(1) == y).sum())
            n += len(y)
    return total / n, hits / n


def _eval_softmax_first(model, loader, loss_fn):
    model.eval()
    total, hits, n = 0.0, 0, 0
    with torch.inference_mode():
        for X, y in loader:
            probs = model(X).softmax(dim=1)
            total += loss_fn(probs, y).item() * len(y)
            hits += int((probs.argmax(1) == y).sum())
            n += len(y)
    return total / n, hits / n


def _eval_grad_left_off(model, loader, loss_fn):
    torch.set_grad_enabled(False)
    return evaluate(model, loader, loss_fn)


def _eval_run(answer, case: Case):
    if not callable(answer):
        raise Incorrect("wrong_type", f"You passed a {type(answer).__name__}; pass your function itself.")
    X, y, bs, seed = (case.kwargs[k] for k in ("X", "y", "batch_size", "seed"))
    model = _model_for(X, y, seed, dropout=0.5)
    model.train()  # as training leaves it
    records, hooks = _record_modes(model)
    try:
        with torch.enable_grad():
            # a loss with label smoothing: an answer that computes its own cross-entropy is caught
            loss_fn = nn.CrossEntropyLoss(label_smoothing=case.kwargs["smoothing"])
            out = answer(model, DataLoader(TensorDataset(X, y), batch_size=bs), loss_fn)
            grad_left_on = torch.is_grad_enabled()  # (leaving the `with` restores it)
    finally:
        for h in hooks:
            h.remove()
    if records and any(training for training, _ in records):
        raise Incorrect("forgot_eval", "The model ran in training mode: call `model.eval()` first. In "
                        "training mode Dropout zeroes random activations, so the metrics are noisy and too low.")
    if records and any(grad for _, grad in records):
        raise Incorrect("forgot_no_grad", "The forward passes recorded an autograd graph: wrap the loop in "
                        "`with torch.inference_mode():` (or `torch.no_grad()`). Evaluation needs no gradients, "
                        "and the graph costs memory and time.")
    if not grad_left_on:
        raise Incorrect("grad_left_off", GRAD_LEFT_OFF)
    if isinstance(out, list) and len(out) == 2:
        raise Incorrect("wrong_type", "Return the pair as a tuple, `(mean_loss, accuracy)` (`return loss, acc`), "
                        "not a list.")
    if isinstance(out, tuple) and len(out) == 2:
        for value, what in zip(out, ("the mean loss", "the accuracy")):
            _number_problem(value, what)
    return out


register(Exercise(
    lesson=LESSON, name="evaluate", title="The evaluation loop: mean loss and accuracy",
    reference=evaluate, run=_eval_run, cases=_loop_case, n_random=5, timeout=10,
    compare=Compare(rtol=1e-5, atol=1e-7),
    mistakes=[
        Mistake("forgot_eval", "Call `model.eval()` before evaluating: Dropout (and BatchNorm) behave "
                "differently in training mode.", _eval_no_eval_mode, match_output=False),
        Mistake("forgot_no_grad", "Evaluate inside `with torch.inference_mode():` (or `torch.no_grad()`): "
                "no graph is needed.", _eval_with_grad, match_output=False),
        Mistake("batch_mean_average", "You averaged per-batch losses and accuracies, but the last batch is "
                "smaller and counts too much. Sum `loss.item() * len(y)` and the number of correct "
                "predictions over all batches, then divide by the number of samples.", _eval_batch_mean),
        Mistake("accuracy_in_percent", "Return the accuracy as a fraction between 0 and 1, not a percentage.",
                _eval_percent),
        Mistake("grad_left_off", GRAD_LEFT_OFF, _eval_grad_left_off, match_output=False),
        Mistake("ignores_loss_fn", "You computed a cross-entropy of your own instead of calling the "
                "`loss_fn` you were given (the check's has label smoothing, so the numbers differ). Use "
                "`loss_fn(logits, y)`.", _eval_ignores_loss_fn),
        Mistake("softmax_before_loss", _SOFTMAX, _eval_softmax_first),
    ],
    hints=[
        "`model.eval()`, then `with torch.inference_mode():` around the loop over the loader.",
        "Per batch: `logits = model(X)`; add `loss_fn(logits, y).item() * len(y)` to a total and "
        "`(logits.argmax(dim=1) == y).sum().item()` to a count of correct predictions.",
        "Return `(total_loss / n, correct / n)` with `n` the number of samples.",
    ],
))


# --------------------------------------------------------------------------- 3. clip_grad_norm
def clip_grad_norm(parameters, max_norm):
    """Scale all gradients together so that their total norm is at most max_norm."""
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:  # before the first backward, or everything frozen: nothing to measure or clip
        return 0.0
    total_norm = torch.sqrt(sum((g**2).sum() for g in grads))
    if total_norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (total_norm + 1e-6))
    return total_norm.item()


def _clip_per_parameter(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = torch.sqrt(sum((g**2).sum() for g in grads))
    for g in grads:
        norm = g.norm()
        if norm > max_norm:
            g.mul_(max_norm / (norm + 1e-6))
    return total_norm.item()


def _clip_always(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = torch.sqrt(sum((g**2).sum() for g in grads))
    for g in grads:
        g.mul_(max_norm / (total_norm + 1e-6))
    return total_norm.item()


def _clip_returns_after(parameters, max_norm):
    parameters = list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    clip_grad_norm(parameters, max_norm)
    return torch.sqrt(sum((g**2).sum() for g in grads)).item()


def _clip_sum_of_norms(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = sum(g.norm() for g in grads)
    if total_norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (total_norm + 1e-6))
    return total_norm.item()


def _clip_iterates_twice(parameters, max_norm):
    total_norm = torch.sqrt(sum((p.grad**2).sum() for p in parameters if p.grad is not None))
    if total_norm > max_norm:
        for p in parameters:  # a generator such as model.parameters() is already used up here
            if p.grad is not None:
                p.grad.mul_(max_norm / (total_norm + 1e-6))
    return total_norm.item()


def _clip_out_of_place(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = torch.sqrt(sum((g**2).sum() for g in grads))
    if total_norm > max_norm:
        grads = [g * (max_norm / (total_norm + 1e-6)) for g in grads]  # new tensors, never written back
    return total_norm.item()


def _clip_scales_weights(parameters, max_norm):
    params = [p for p in parameters if p.grad is not None]
    total_norm = torch.sqrt(sum((p.grad**2).sum() for p in params))
    if total_norm > max_norm:
        with torch.no_grad():
            for p in params:
                p.mul_(max_norm / (total_norm + 1e-6))
    return total_norm.item()


def _clip_cases(r: Rand) -> Case:
    shapes = [(r.integer(1, 5), r.integer(1, 5)) for _ in range(r.integer(1, 4))]
    # plain leaf tensors: unlike nn.Parameter, a deep copy of them keeps `.grad`
    params = [r.randn(*s).requires_grad_() for s in shapes + [(3,)]]
    for p in params[:-1]:
        p.grad = r.randn(*p.shape) * r.uniform(0.1, 3)
    # the last parameter has no gradient (frozen, or unused in the forward pass)
    return Case((params, r.uniform(0.5, 6.0)))


_CLIP_TWICE = ("`parameters` may be a generator such as `model.parameters()`, which is empty the second time "
               "you loop over it, so nothing was clipped. Given a list, your function does clip. Loop once: "
               "`grads = [p.grad for p in parameters if p.grad is not None]`, then use `grads`.")
_CLIP_NOT_SCALED = ("The total norm was above `max_norm`, but your gradients came back unchanged: nothing was "
                    "clipped. Scale every gradient itself, in place (`g.mul_(coef)` for `g` in your list of "
                    "`p.grad`s); a scaled copy left in a variable changes nothing the optimizer sees.")
_CLIP_WEIGHTS = ("Your function changed the parameters' values (the weights). Clipping scales the gradients, "
                 "`p.grad`, and leaves the weights alone: the optimizer's step is what changes them.")


def _clip_run(answer, case: Case):
    params, max_norm = case.args
    data_before = [p.detach().clone() for p in params]
    grads_before = [None if p.grad is None else p.grad.clone() for p in params]
    # as `model.parameters()` would be: a generator, which can be iterated only once
    with _forbid(os.path.join("nn", "utils", "clip_grad.py"),
                 {n for f in ("clip_grad_norm_", "clip_grad_norm", "get_total_norm", "clip_grads_with_norm_")
                  for n in (f, "_" + f)}, "uses_builtin",
                 "Your function called PyTorch's `{name}`; the exercise says \"Write it yourself\": compute "
                 "the total norm and scale the gradients with tensor operations (the built-in is for later)."):
        out = answer((p for p in params), max_norm)
    if any(p.shape != d.shape or not torch.equal(p.detach(), d) for p, d in zip(params, data_before)):
        raise Incorrect("scaled_weights", _CLIP_WEIGHTS)
    given = [g for g in grads_before if g is not None]
    total = float(torch.sqrt(sum((g.double() ** 2).sum() for g in given))) if given else 0.0
    unchanged = all((g is None and p.grad is None) or (g is not None and p.grad is not None and torch.equal(p.grad, g))
                    for p, g in zip(params, grads_before))
    if given and total > max_norm * (1 + 1e-3) and unchanged:
        # nothing was clipped: name the generator mistake only if the answer clips when given a list
        coef = max_norm / (total + 1e-6)
        again = [d.clone().requires_grad_() for d in data_before]
        for p, g in zip(again, grads_before):
            p.grad = None if g is None else g.clone()
        try:
            answer(list(again), max_norm)
            clips = all((g is None and p.grad is None) or (
                g is not None and p.grad is not None and torch.allclose(p.grad, g * coef, rtol=1e-4, atol=1e-6))
                for p, g in zip(again, grads_before))
        except Exception:
            clips = False
        raise Incorrect("parameters_iterated_twice", _CLIP_TWICE) if clips else Incorrect("not_clipped", _CLIP_NOT_SCALED)
    return out, [None if p.grad is None else p.grad.clone() for p in params]


def _clip_edge(norm_scale: float, label: str) -> Case:
    g = torch.Generator().manual_seed(5)
    params = [torch.randn(3, 2, generator=g).requires_grad_(), torch.randn(4, generator=g).requires_grad_()]
    for p in params:
        p.grad = torch.randn(p.shape, generator=g)
    total = float(torch.sqrt(sum((p.grad ** 2).sum() for p in params)))
    for p in params:  # total norm exactly norm_scale * max_norm (max_norm 1)
        p.grad *= norm_scale / total
    return Case((params, 1.0), label=label)


register(Exercise(
    lesson=LESSON, name="clip_grad_norm", title="Clip gradients by their total norm",
    reference=clip_grad_norm, run=_clip_run, cases=_clip_cases,
    edge_cases=[_clip_edge(0.3, "gradients already smaller than max_norm"),
                _clip_edge(5.0, "gradients much larger than max_norm"),
                _clip_edge(1.3, "total norm 1.3, a little above max_norm 1"),
                # `sum([])` is the int 0, which `torch.sqrt` refuses: the norm is 0.0, nothing is scaled
                Case(([torch.randn(3, 2).requires_grad_(), torch.randn(4).requires_grad_()], 1.0),
                     label="no parameter has a gradient yet (before the first backward): the norm is 0.0")],
    compare=Compare(rtol=1e-4, atol=1e-6, mutation=False),
    mistakes=[
        Mistake("uses_builtin", "The exercise says \"Write it yourself\": do not call "
                "`torch.nn.utils.clip_grad_norm_` (or `get_total_norm`/`clip_grads_with_norm_`).",
                lambda parameters, max_norm: torch.nn.utils.clip_grad_norm_(parameters, max_norm).item(),
                match_output=False),
        Mistake("per_parameter", "You clipped each gradient by its own norm; clipping uses the norm of *all* "
                "gradients together, and scales them all by the same factor (so the update keeps its "
                "direction).", _clip_per_parameter),
        Mistake("always_scale", "Only clip when the total norm is larger than `max_norm`: smaller gradients "
                "stay as they are (you scaled them up).", _clip_always),
        Mistake("returns_clipped_norm", "Return the total norm measured *before* clipping: it is what you "
                "log to see how large gradients were.", _clip_returns_after),
        Mistake("sum_of_norms", "The total norm is the square root of the sum of all squared entries, "
                "`sqrt(sum(g.pow(2).sum() for g in grads))`, not the sum of the per-tensor norms.",
                _clip_sum_of_norms),
        # named by _clip_run on evidence (the answer clips when given a list), not by its output
        Mistake("parameters_iterated_twice", _CLIP_TWICE, _clip_iterates_twice, match_output=False),
        Mistake("not_clipped", _CLIP_NOT_SCALED, _clip_out_of_place, match_output=False),
        Mistake("scaled_weights", _CLIP_WEIGHTS, _clip_scales_weights, match_output=False),
    ],
    hints=[
        "Collect `grads = [p.grad for p in parameters if p.grad is not None]`.",
        "`total_norm = torch.sqrt(sum((g ** 2).sum() for g in grads))`.",
        "If `total_norm > max_norm`, multiply every gradient in place (`g.mul_(...)`) by "
        "`max_norm / (total_norm + 1e-6)`. Return `total_norm.item()` (0.0 when `grads` is empty).",
    ],
))


# --------------------------------------------------------------------------- 4. accumulated_step
def accumulated_step(model, loss_fn, optimizer, micro_batches):
    """One optimizer step on the gradient of the whole batch, computed micro-batch by micro-batch."""
    n_total = sum(len(y) for _, y in micro_batches)
    optimizer.zero_grad()
    for X, y in micro_batches:
        loss = loss_fn(model(X), y) * len(y) / n_total
        loss.backward()
    optimizer.step()


def _acc_no_scaling(model, loss_fn, optimizer, micro_batches):
    optimizer.zero_grad()
    for X, y in micro_batches:
        loss_fn(model(X), y).backward()
    optimizer.step()


def _acc_mean_of_means(model, loss_fn, optimizer, micro_batches):
    optimizer.zero_grad()
    for X, y in micro_batches:
        (loss_fn(model(X), y) / len(micro_batches)).backward()
    optimizer.step()


def _acc_step_each(model, loss_fn, optimizer, micro_batches):
    n_total = sum(len(y) for _, y in micro_batches)
    optimizer.zero_grad()
    for X, y in micro_batches:
        (loss_fn(model(X), y) * len(y) / n_total).backward()
        optimizer.step()


def _acc_zero_each(model, loss_fn, optimizer, micro_batches):
    n_total = sum(len(y) for _, y in micro_batches)
    for X, y in micro_batches:
        optimizer.zero_grad()
        (loss_fn(model(X), y) * len(y) / n_total).backward()
    optimizer.step()


def _acc_no_zero(model, loss_fn, optimizer, micro_batches):
    n_total = sum(len(y) for _, y in micro_batches)
    for X, y in micro_batches:
        (loss_fn(model(X), y) * len(y) / n_total).backward()
    optimizer.step()


def _acc_cases(r: Rand) -> Case:
    d, c = r.integer(2, 5), r.integer(2, 4)
    sizes = [r.integer(2, 8) for _ in range(r.integer(2, 4))]
    if r.integer(0, 1):
        sizes = [sizes[0]] * len(sizes)
    micro = [(r.randn(s, d), r.randint(0, c, (s,))) for s in sizes]
    return Case(kwargs=dict(micro_batches=micro, classes=c, seed=r.integer(0, 2**31),
                            smoothing=round(r.uniform(0.05, 0.3), 2)))


def _acc_run(answer, case: Case):
    micro, c, seed, smoothing = (case.kwargs[k] for k in ("micro_batches", "classes", "seed", "smoothing"))
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(micro[0][0].shape[1], 6), nn.Tanh(), nn.Linear(6, c))
    g = torch.Generator().manual_seed(seed)
    for p in model.parameters():
        p.grad = torch.randn(p.shape, generator=g)  # stale gradients
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    steps, step_hook = _count_steps(optimizer)
    batch_sizes: list[int] = []
    size_hook = model.register_forward_pre_hook(lambda m, args: batch_sizes.append(len(args[0])))
    backwards: list[int] = []  # one call per backward pass through the first layer's weight
    grad_hook = model[0].weight.register_hook(lambda g: backwards.append(1))
    given = list(micro)
    pristine = [(X.clone(), y.clone()) for X, y in micro]
    try:
        with answer_grad_mode():
            answer(model, nn.CrossEntropyLoss(label_smoothing=smoothing), optimizer, given)
    finally:
        step_hook.remove()
        size_hook.remove()
        grad_hook.remove()
    if len(given) != len(pristine) or any(a is not b for a, b in zip(given, micro)):
        raise Incorrect("changed_micro_batches", "Your function changed the list `micro_batches` it was given "
                        "(`pop`, `del`, reassigning items): loop over it without modifying it.")
    if any(not (torch.equal(X, X0) and torch.equal(y, y0)) for (X, y), (X0, y0) in zip(micro, pristine)):
        raise Incorrect("mutated_input", "Your function changed the data in `micro_batches` in place (e.g. "
                        "`X.zero_()` to free memory): the caller's tensors must stay as they were. Dropping your "
                        "own references is enough to free memory.")
    if batch_sizes and max(batch_sizes) > max(len(x) for x, _ in micro):
        raise Incorrect("concatenated", _ACC_MESSAGES["concatenated"])
    if len(batch_sizes) >= len(micro) > 1 and len(backwards) == 1:
        raise Incorrect("one_backward", _ACC_MESSAGES["one_backward"])
    if len(steps) != 1:  # even a second step with zero gradients moves Adam or momentum SGD
        if len(steps) == len(micro):
            raise Incorrect("step_per_micro_batch", _ACC_MESSAGES["step_per_micro_batch"])
        raise Incorrect("not_one_step", f"`optimizer.step()` ran {len(steps)} times; gradient accumulation makes "
                        "exactly one step, after `backward()` of every micro-batch.")
    return _flat(model)


_ACC_MESSAGES = {
    "one_backward": "You added up the micro-batch losses and called `backward()` once at the end. The "
    "gradient is right, but every micro-batch's graph stays in memory until then, as much as the big "
    "batch needs: \"let the gradients add up\" by calling `backward()` once per micro-batch, so each "
    "graph is freed right away.",
    "concatenated": "You concatenated the micro-batches into one big batch. That gives the right "
    "gradient, but the big batch is exactly what does not fit in memory: run forward and backward "
    "once per micro-batch and let the gradients add up.",
    "step_per_micro_batch": "You stepped after every micro-batch: that is several small steps, not one "
    "big-batch step. Call `optimizer.step()` once, after the loop.",
}


def _acc_concatenated(model, loss_fn, optimizer, micro_batches):
    X = torch.cat([x for x, _ in micro_batches])
    y = torch.cat([t for _, t in micro_batches])
    optimizer.zero_grad()
    loss_fn(model(X), y).backward()
    optimizer.step()


def _acc_one_backward(model, loss_fn, optimizer, micro_batches):
    n_total = sum(len(y) for _, y in micro_batches)
    optimizer.zero_grad()
    sum(loss_fn(model(X), y) * len(y) / n_total for X, y in micro_batches).backward()
    optimizer.step()


def _acc_ignores_loss_fn(model, loss_fn, optimizer, micro_batches):
    accumulated_step(model, nn.functional.cross_entropy, optimizer, micro_batches)


def _acc_edge() -> Case:
    g = torch.Generator().manual_seed(3)
    micro = [(torch.randn(s, 3, generator=g), torch.randint(0, 3, (s,), generator=g)) for s in (6, 2, 4)]
    return Case(kwargs=dict(micro_batches=micro, classes=3, seed=11, smoothing=0.1),
                label="three micro-batches of 6, 2 and 4 samples")


register(Exercise(
    lesson=LESSON, name="accumulated_step", title="Gradient accumulation equal to one big-batch step",
    reference=accumulated_step, run=_acc_run, cases=_acc_cases, edge_cases=[_acc_edge()], timeout=10,
    compare=Compare(rtol=1e-5, atol=1e-6, mutation=False),
    mistakes=[
        Mistake("forgot_scaling", "Each micro-batch loss is already a mean, so summing their gradients gives "
                "a gradient several times too large. Scale each loss by `len(y) / n_total` before "
                "`backward()`.", _acc_no_scaling),
        Mistake("mean_of_means", "Dividing by the number of micro-batches is only right when they all have "
                "the same size. Weight each micro-batch by its share of the samples: `len(y) / n_total`.",
                _acc_mean_of_means),
        Mistake("step_per_micro_batch", _ACC_MESSAGES["step_per_micro_batch"], _acc_step_each, match_output=False),
        Mistake("zero_grad_per_micro_batch", "`zero_grad()` inside the loop throws away the gradients of the "
                "earlier micro-batches; only the last one counts. Zero once, before the loop.", _acc_zero_each),
        Mistake("forgot_zero_grad", "Gradients left over from before (the check puts some there) were added to "
                "yours. Call `optimizer.zero_grad()` once before the loop.", _acc_no_zero),
        Mistake("ignores_loss_fn", "You computed a loss of your own (`F.cross_entropy`, a new "
                "`nn.CrossEntropyLoss()`) instead of calling the `loss_fn` you were given (the check's has label "
                "smoothing). Use `loss_fn(model(X), y)`.", _acc_ignores_loss_fn),
        Mistake("concatenated", _ACC_MESSAGES["concatenated"], _acc_concatenated, match_output=False),
        Mistake("one_backward", _ACC_MESSAGES["one_backward"], _acc_one_backward, match_output=False),
    ],
    hints=[
        "`backward()` adds to `.grad`, so calling it once per micro-batch accumulates the gradients.",
        "The big-batch loss is the mean over all samples: micro-batch `k`'s mean loss counts with weight "
        "`len(y_k) / n_total`.",
        "`optimizer.zero_grad()` once; for each micro-batch `(loss_fn(model(X), y) * len(y) / n_total).backward()`; "
        "then `optimizer.step()` once.",
    ],
))


# --------------------------------------------------------------------------- 5. EarlyStopping
class EarlyStopping:
    """Stop when the validation loss has not improved for `patience` epochs; keep the best weights."""

    def __init__(self, patience=3):
        self.patience = patience
        self.best_loss = float("inf")
        self.best_state = None
        self.bad_epochs = 0

    def step(self, val_loss, model):
        if val_loss < self.best_loss:
            self.best_loss = val_loss
            self.best_state = copy.deepcopy(model.state_dict())
            self.bad_epochs = 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


class _StateNotCopied(EarlyStopping):
    def step(self, val_loss, model):
        if val_loss < self.best_loss:
            self.best_loss = val_loss
            self.best_state = model.state_dict()
            self.bad_epochs = 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


class _CounterNotReset(EarlyStopping):
    def step(self, val_loss, model):
        if val_loss < self.best_loss:
            self.best_loss = val_loss
            self.best_state = copy.deepcopy(model.state_dict())
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


class _StopsLate(EarlyStopping):
    def step(self, val_loss, model):
        super().step(val_loss, model)
        return self.bad_epochs > self.patience


class _TieImproves(EarlyStopping):
    def step(self, val_loss, model):
        if val_loss <= self.best_loss:
            self.best_loss = val_loss
            self.best_state = copy.deepcopy(model.state_dict())
            self.bad_epochs = 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


def _es_cases(r: Rand) -> Case:
    n = r.integer(6, 16)
    level, losses = 1.0, []
    for _ in range(n):
        level *= r.uniform(0.8, 1.15)
        losses.append(round(level, 2))
    return Case((r.integer(1, 4),), dict(losses=losses))


def _es_run(answer, case: Case):
    (patience,), losses = case.args, case.kwargs["losses"]
    if hasattr(answer, "step") and not isinstance(answer, type):
        raise Incorrect("wrong_type", "Pass the class itself (`EarlyStopping`), not an instance.")
    if not callable(answer):
        raise Incorrect("wrong_type", f"You passed a {type(answer).__name__}; pass your class `EarlyStopping`.")
    stopper = answer(patience=patience)
    if not callable(getattr(stopper, "step", None)):
        raise Incorrect("no_step_method", "Calling your class should give an object with a `step(val_loss, "
                        "model)` method.")
    model = nn.Linear(3, 2)
    stop_epoch = -1
    for epoch, loss in enumerate(losses):
        with torch.no_grad():
            for p in model.parameters():
                p.fill_(float(epoch))  # the weights "remember" their epoch
        decision = stopper.step(loss, model)
        if decision is None:
            raise Incorrect("returned_none", "`step` returned None: return True when training should stop, "
                            "False otherwise.")
        if bool(decision):
            stop_epoch = epoch
            break
    state = getattr(stopper, "best_state", None)
    if state is None:
        raise Incorrect("no_best_state", "After training, `best_state` is still None: store a copy of "
                        "`model.state_dict()` whenever the loss improves.")
    if not (isinstance(state, dict) and set(state) == {"weight", "bias"}
            and all(isinstance(v, torch.Tensor) for v in state.values())):
        raise Incorrect("best_state_not_state_dict", "`best_state` should be a copy of `model.state_dict()` "
                        f"(a dict of tensors), not {type(state).__name__}.")
    if len({float(v.flatten()[0]) for v in state.values()}) != 1:  # weight and bias of different epochs
        raise Incorrect("state_not_copied", "Part of your `best_state` changed with later epochs: it still "
                        "refers to the model's live tensors. Store `copy.deepcopy(model.state_dict())`.")
    best_loss = getattr(stopper, "best_loss", None)
    if not _is_number(best_loss):
        raise Incorrect("no_best_loss", "Keep the best validation loss so far in `self.best_loss` (a number).")
    # named parts, so that feedback says which one is wrong (stopping epoch -1: never stopped)
    return {"stopping epoch": stop_epoch, "epoch of the weights in best_state": int(state["weight"].flatten()[0]),
            "best_loss": float(best_loss)}


register(Exercise(
    lesson=LESSON, name="EarlyStopping", title="Early stopping that keeps the best weights",
    reference=EarlyStopping, kind="any", run=_es_run, cases=_es_cases,
    edge_cases=[
        Case((2,), dict(losses=[1.0, 0.8, 0.8, 0.9, 0.95, 0.7]),
             label="patience 2, losses 1.0, 0.8, 0.8, 0.9, 0.95, 0.7"),
        Case((3,), dict(losses=[1.0, 0.9, 0.95, 0.85, 0.86, 0.87, 0.88, 0.5]),
             label="patience 3, losses 1.0, 0.9, 0.95, 0.85, 0.86, 0.87, 0.88, 0.5"),
        Case((1,), dict(losses=[0.5, 0.4, 0.3]), label="patience 1, always improving"),
        Case((1,), dict(losses=[1.0, 0.9999, 0.99985, 1.0]), label="patience 1, tiny improvements still count"),
        Case((2,), dict(losses=[1.0, 0.8, 0.9, 0.85, 0.95]),
             label="patience 2, losses 1.0, 0.8, 0.9, 0.85, 0.95 (0.85 beats the epoch before, not the best)"),
    ],
    mistakes=[
        Mistake("state_not_copied", "`model.state_dict()` returns the model's live tensors, not a snapshot: "
                "your `best_state` changed with every later epoch and ends up holding the last weights. "
                "Store `copy.deepcopy(model.state_dict())`.", _StateNotCopied),
        Mistake("counter_not_reset", "Reset the count of epochs without improvement to 0 whenever the loss "
                "improves; otherwise old bad epochs make you stop too early.", _CounterNotReset),
        Mistake("stops_late", "Stop as soon as there have been `patience` epochs without improvement "
                "(`>=`, not `>`).", _StopsLate),
        Mistake("tie_counts_as_improvement", "Only a strictly lower loss is an improvement (`<`): an equal "
                "loss counts as an epoch without improvement.", _TieImproves),
    ],
    hints=[
        "In `step`: if `val_loss < self.best_loss`, remember the loss and a copy of the weights and reset "
        "`self.bad_epochs`; otherwise count one more bad epoch.",
        "`copy.deepcopy(model.state_dict())` makes a snapshot; `model.state_dict()` alone is a dict of "
        "references to the live parameters.",
        "Return `self.bad_epochs >= self.patience`.",
    ],
))


# --------------------------------------------------------------------------- 6. warmup_cosine
def warmup_cosine(optimizer, warmup_steps, total_steps):
    """LambdaLR: linear warm-up over warmup_steps, then a cosine decay to 0 at total_steps."""

    def factor(step):
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return 0.5 * (1 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _wc_from_zero(optimizer, warmup_steps, total_steps):
    def factor(step):
        if step < warmup_steps:
            return step / warmup_steps
        progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return 0.5 * (1 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _wc_ignores_warmup(optimizer, warmup_steps, total_steps):
    def factor(step):
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        return 0.5 * (1 + math.cos(math.pi * step / total_steps))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _wc_not_shifted(optimizer, warmup_steps, total_steps):
    def factor(step):
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        return math.cos(math.pi * (step - warmup_steps) / max(1, total_steps - warmup_steps))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _wc_cases(r: Rand) -> Case:
    warmup = r.integer(1, 6)
    return Case(kwargs=dict(warmup_steps=warmup, total_steps=warmup + r.integer(2, 30), lr=round(r.uniform(0.01, 1.0), 3)))


def _wc_run(answer, case: Case):
    warmup, total, lr = (case.kwargs[k] for k in ("warmup_steps", "total_steps", "lr"))
    param = nn.Parameter(torch.zeros(2))
    optimizer = torch.optim.SGD([param], lr=lr)
    scheduler = answer(optimizer, warmup, total)
    if not isinstance(scheduler, torch.optim.lr_scheduler.LRScheduler):
        raise Incorrect("not_a_scheduler", "Return a scheduler object (`torch.optim.lr_scheduler.LambdaLR("
                        f"optimizer, factor)`), not {type(scheduler).__name__}.")
    if scheduler.optimizer is not optimizer:
        raise Incorrect("other_optimizer", "Build the scheduler on the `optimizer` you are given.")
    lrs = []
    for _ in range(total):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return torch.tensor(lrs, dtype=torch.float64)


register(Exercise(
    lesson=LESSON, name="warmup_cosine", title="A warm-up + cosine learning-rate schedule",
    reference=warmup_cosine, run=_wc_run, cases=_wc_cases,
    edge_cases=[Case(kwargs=dict(warmup_steps=4, total_steps=12, lr=0.1), label="warmup_steps=4, total_steps=12, lr=0.1"),
                Case(kwargs=dict(warmup_steps=0, total_steps=5, lr=1.0), label="warmup_steps=0 (no warm-up), total_steps=5"),
                Case(kwargs=dict(warmup_steps=3, total_steps=3, lr=0.5),
                     label="warmup_steps=3, total_steps=3 (all warm-up: `max(1, total_steps - warmup_steps)`)"),
                Case(kwargs=dict(warmup_steps=1, total_steps=2, lr=0.2), label="warmup_steps=1, total_steps=2")],
    compare=Compare(rtol=1e-6, atol=1e-9),
    mistakes=[
        Mistake("warmup_from_zero", "The first step's factor is `1 / warmup_steps`, not 0: a zero learning "
                "rate wastes a step. Use `(step + 1) / warmup_steps`.", _wc_from_zero),
        Mistake("cosine_ignores_warmup", "The cosine starts when the warm-up ends: measure progress as "
                "`(step - warmup_steps) / (total_steps - warmup_steps)`.", _wc_ignores_warmup),
        Mistake("cosine_not_shifted", "A plain cosine goes negative; the decay is `0.5 * (1 + cos(pi * "
                "progress))`, from 1 down to 0.", _wc_not_shifted),
    ],
    hints=[
        "`LambdaLR(optimizer, factor)` multiplies the optimizer's initial lr by `factor(step)`, where `step` "
        "counts the `scheduler.step()` calls so far (0 at the start).",
        "Warm-up: `(step + 1) / warmup_steps` while `step < warmup_steps`.",
        "Then `progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)` and "
        "`0.5 * (1 + math.cos(math.pi * progress))`.",
    ],
))
