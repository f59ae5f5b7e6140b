"""evaluate: the evaluation loop, returning ``(mean loss per sample, accuracy)``. The notebook shows
a naive loop scoring one model three times with three results (random Dropout, a mean of batch
means) and asks the learner to find the causes.

Subtle: the model arrives in training mode with Dropout, so a loop without ``model.eval()`` gives
noisy metrics; forward passes must record no graph (``inference_mode``/``no_grad``), and grad mode
must be on again afterwards; the last batch is shorter, so means of batch means are wrong; the
caller's ``loss_fn`` has label smoothing, so a home-made cross-entropy shows.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, kept, register
from course_utils.grading.calls import GRAD_LEFT_OFF
from ...answers.l05_training_loop import evaluate

from ._kit import LESSON
from ._kit import (
    RETURNS_NUMBER, RETURNED_NONE, RETURNED_TENSOR, SOFTMAX_BEFORE_LOSS, _model_for, loop_case, number_problem,
    record_modes,
)

# --- reference: the solution notebook's answer, generated (imported above). The lesson's later
# cells use it through lesson_props, which re-exports this same object: a submitted prop is the
# course's own object to the instructor's judge (reference_answer), and the sandbox keeps it.


# --- cases: loop_case (the grader builds model, loader and loss from the seed)


# --- run and probes
def _run(answer, case: Case):
    X, y, bs, seed = (case.kwargs[k] for k in ("X", "y", "batch_size", "seed"))
    model = _model_for(X, y, seed, dropout=0.5)
    model.train()  # as training leaves it
    records, hooks = record_modes(model)
    try:
        with torch.enable_grad():
            # a loss with label smoothing: an answer that computes its own cross-entropy is caught
            loss_fn = nn.CrossEntropyLoss(label_smoothing=case.kwargs["smoothing"])
            with kept(unchanged={"loss_fn": loss_fn}):
                out = answer(model, DataLoader(TensorDataset(X, y), batch_size=bs), loss_fn)
            grad_left_on = torch.is_grad_enabled()  # (leaving the `with` restores it)
    finally:
        for h in hooks:
            h.remove()
    if records and any(training for training, _ in records):
        raise Incorrect("forgot_eval")
    if records and any(grad for _, grad in records):
        raise Incorrect("forgot_no_grad")
    if not grad_left_on:
        raise Incorrect("grad_left_off")
    if isinstance(out, list) and len(out) == 2:
        out = tuple(out)  # a list of the two reads the same: `loss, acc = evaluate(...)`
    if isinstance(out, tuple) and len(out) == 2:
        for value, what in zip(out, ("the mean loss", "the accuracy")):
            number_problem(value, what)
    return out


# --- wrong answers
def _eval_with(model, loader, loss_fn, *, eval_mode=True, no_grad=True, softmax=False, batch_means=False,
               loss=None):
    """The reference loop with one knob turned (``loss``: a cross-entropy used instead of ``loss_fn``)."""
    if eval_mode:
        model.eval()
    total, correct, n, means = 0.0, 0, 0, []
    with torch.inference_mode(no_grad):
        for X, y in loader:
            logits = model(X)
            if softmax:
                logits = logits.softmax(dim=1)
            batch_loss = (loss or loss_fn)(logits, y).item()
            total += batch_loss * len(y)
            correct += (logits.argmax(dim=1) == y).sum().item()
            n += len(y)
            means.append((batch_loss, (logits.argmax(dim=1) == y).float().mean().item()))
    if batch_means:
        return sum(m[0] for m in means) / len(means), sum(m[1] for m in means) / len(means)
    return total / n, correct / n


def _eval_returns(convert):
    return lambda model, loader, loss_fn: convert(*evaluate(model, loader, loss_fn))


def _eval_grad_left_off(model, loader, loss_fn):
    torch.set_grad_enabled(False)
    return evaluate(model, loader, loss_fn)


# --- declaration
register(Exercise(
    lesson=LESSON, name="evaluate", title="An evaluation loop that gives one score per model",
    reference=evaluate, run=_run, cases=loop_case, n_random=5, timeout=10,
    compare=Compare(rtol=1e-5, atol=1e-7),
    mistakes=[
        Mistake("forgot_eval", "The model ran in training mode: call `model.eval()` first. In training mode "
                "Dropout zeroes random activations, so the metrics are noisy and too low.",
                lambda model, loader, loss_fn: _eval_with(model, loader, loss_fn, eval_mode=False),
                match_output=False),
        Mistake("forgot_no_grad", "The forward passes recorded an autograd graph: wrap the loop in "
                "`with torch.inference_mode():` (or `torch.no_grad()`). Evaluation needs no gradients, and the "
                "graph costs memory and time.",
                lambda model, loader, loss_fn: _eval_with(model, loader, loss_fn, no_grad=False),
                match_output=False),
        Mistake("batch_mean_average", "You averaged per-batch losses and accuracies, but the last batch is "
                "smaller and counts too much. Sum `loss.item() * len(y)` and the number of correct predictions "
                "over all batches, then divide by the number of samples.",
                lambda model, loader, loss_fn: _eval_with(model, loader, loss_fn, batch_means=True)),
        Mistake("accuracy_in_percent", "Return the accuracy as a fraction between 0 and 1, not a percentage.",
                _eval_returns(lambda loss, acc: (loss, 100 * acc))),
        Mistake("grad_left_off", GRAD_LEFT_OFF, _eval_grad_left_off, match_output=False),
        Mistake("ignores_loss_fn", "You computed a cross-entropy of your own instead of calling the `loss_fn` "
                "you were given (the check's has label smoothing, so the numbers differ). Use "
                "`loss_fn(logits, y)`.",
                lambda model, loader, loss_fn: _eval_with(model, loader, loss_fn, loss=nn.functional.cross_entropy)),
        Mistake("softmax_before_loss", SOFTMAX_BEFORE_LOSS,
                lambda model, loader, loss_fn: _eval_with(model, loader, loss_fn, softmax=True)),
        # the three below keep match_output True: the runner's own generic messages
        # for an output of the wrong kind (compared with the reference's) stay as they are
        Mistake("returned_none", RETURNED_NONE, _eval_returns(lambda loss, acc: (None, acc))),
        Mistake("returned_tensor", RETURNED_TENSOR, _eval_returns(lambda loss, acc: (torch.tensor(loss), acc))),
        RETURNS_NUMBER.mistake(_eval_returns(lambda loss, acc: (loss, str(acc)))),
    ],
    hints=[
        "Scored twice, the same model on the same images gave two results: which of its layers draws random "
        "numbers at every forward pass, and what tells that layer the model is being scored, not trained?",
        "With batches of 100, 100, 100 and 60 images, does the mean of the four batch means weigh every image "
        "equally? And what does a forward pass record while autograd is on?",
        "The ideas: switch the model to its evaluation behaviour and score with autograd off, inside a block "
        "that turns it back on afterwards; add up totals over images (the loss times the batch size, the "
        "number right) and divide by the number of images once, at the end.",
    ],
))
