"""EarlyStopping: stop when the validation loss has not improved for ``patience`` epochs and keep a
snapshot of the best weights. The notebook gives no rules: the learner works them out from a table
of four runs of the course's class (tests/test_l05_training_loop.py checks that every wrong rule
named below changes a row of that table).

Subtle: ``model.state_dict()`` holds the live tensors, so the best state must be a deep copy (the
grader writes each epoch's number into the weights to see which epoch a state holds); only a
strictly lower loss is an improvement, and it resets the count; stop at ``>=`` patience.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON
from ._kit import _is_number


# --- reference: the notebook's answer (generated from solutions/05_training_loop.py)
from ...answers.l05_training_loop import EarlyStopping


# --- cases
def _cases(r: Rand) -> Case:
    n = r.integer(6, 16)
    level, losses = 1.0, []
    for _ in range(n):
        level *= r.uniform(0.8, 1.15)
        losses.append(round(level, 2))
    return Case((r.integer(1, 4),), dict(losses=losses))


EDGE_CASES = [
    Case((2,), dict(losses=[1.0, 0.8, 0.8, 0.9, 0.95, 0.7]), label="patience 2, losses 1.0, 0.8, 0.8, 0.9, 0.95, 0.7"),
    Case((3,), dict(losses=[1.0, 0.9, 0.95, 0.85, 0.86, 0.87, 0.88, 0.5]),
         label="patience 3, losses 1.0, 0.9, 0.95, 0.85, 0.86, 0.87, 0.88, 0.5"),
    Case((1,), dict(losses=[0.5, 0.4, 0.3]), label="patience 1, always improving"),
    Case((1,), dict(losses=[1.0, 0.9999, 0.99985, 1.0]), label="patience 1, tiny improvements still count"),
    Case((2,), dict(losses=[1.0, 0.8, 0.9, 0.85, 0.95]),
         label="patience 2, losses 1.0, 0.8, 0.9, 0.85, 0.95 (0.85 beats the epoch before, not the best)"),
    Case((3,), dict(losses=[1.0, 1.1, 1.2, 0.9, 1.0, 1.0, 1.0, 0.5]),
         label="patience 3, losses 1.0, 1.1, 1.2, 0.9, 1.0, 1.0, 1.0, 0.5 (two bad epochs before an improvement)"),
]


# --- run and probes
def _train(stopper, losses: list[float]) -> int:
    """Feed the losses to ``stopper.step``; the epoch it stopped at (-1: never)."""
    model = nn.Linear(3, 2)
    for epoch, loss in enumerate(losses):
        with torch.no_grad():
            for p in model.parameters():
                p.fill_(float(epoch))  # the weights "remember" their epoch
        decision = stopper.step(loss, model)
        if decision is None:
            raise Incorrect("returned_none")
        if bool(decision):
            return epoch
    return -1


def _run(answer, case: Case):
    (patience,), losses = case.args, case.kwargs["losses"]
    if hasattr(answer, "step") and not isinstance(answer, type):
        raise Incorrect("wrong_type", given="an instance")
    if not callable(answer):
        raise Incorrect("wrong_type", given=f"a {type(answer).__name__}")
    stopper = answer(patience=patience)
    if not callable(getattr(stopper, "step", None)):
        raise Incorrect("no_step_method")
    stop_epoch = _train(stopper, losses)
    state = getattr(stopper, "best_state", None)
    if state is None:
        raise Incorrect("no_best_state")
    if not (isinstance(state, dict) and set(state) == {"weight", "bias"}
            and all(isinstance(v, torch.Tensor) for v in state.values())):
        raise Incorrect("best_state_not_state_dict", got=type(state).__name__)
    if len({float(v.flatten()[0]) for v in state.values()}) != 1:  # weight and bias of different epochs
        raise Incorrect("state_not_copied")
    best_loss = getattr(stopper, "best_loss", None)
    if not _is_number(best_loss):
        raise Incorrect("no_best_loss")
    # named parts, so that feedback says which one is wrong (stopping epoch -1: never stopped)
    return {"stopping epoch": stop_epoch, "epoch of the weights in best_state": int(state["weight"].flatten()[0]),
            "best_loss": float(best_loss)}


# --- wrong answers
class _StateNotCopied(EarlyStopping):
    def step(self, val_loss, model):
        live = model.state_dict()
        stop = super().step(val_loss, model)
        if self.bad_epochs == 0:
            self.best_state = live
        return stop


class _CounterNotReset(EarlyStopping):
    def step(self, val_loss, model):
        bad = self.bad_epochs
        stop = super().step(val_loss, model)
        if self.bad_epochs == 0:
            self.bad_epochs = bad
            return self.bad_epochs >= self.patience
        return stop


class _CounterDecremented(EarlyStopping):
    """Takes one off the count on an improvement instead of starting again from 0."""

    def step(self, val_loss, model):
        bad = self.bad_epochs
        stop = super().step(val_loss, model)
        if self.bad_epochs == 0:
            self.bad_epochs = max(0, bad - 1)
            return self.bad_epochs >= self.patience
        return stop


class _ComparesWithLast(EarlyStopping):
    """Counts an epoch as an improvement when it beats the epoch before, not the best so far."""

    def step(self, val_loss, model):
        previous = getattr(self, "previous", float("inf"))
        self.previous = val_loss
        super().step(val_loss, model)  # the best loss and state stay right
        self.bad_epochs = 0 if val_loss < previous else getattr(self, "own_count", 0) + 1
        self.own_count = self.bad_epochs
        return self.bad_epochs >= self.patience


class _StopsLate(EarlyStopping):
    def step(self, val_loss, model):
        super().step(val_loss, model)
        return self.bad_epochs > self.patience


class _TieImproves(EarlyStopping):
    def step(self, val_loss, model):
        if val_loss == self.best_loss:
            self.best_loss = float("inf")  # an equal loss counts as an improvement
        return super().step(val_loss, model)


class _StepReturnsNothing(EarlyStopping):
    def step(self, val_loss, model):
        super().step(val_loss, model)


class _NoStep:
    def __init__(self, patience=3):
        self.patience = patience


class _NeverSaves(EarlyStopping):
    def step(self, val_loss, model):
        stop = super().step(val_loss, model)
        self.best_state = None
        return stop


class _SavesTheModel(EarlyStopping):
    def step(self, val_loss, model):
        stop = super().step(val_loss, model)
        if self.bad_epochs == 0:
            self.best_state = copy.deepcopy(model)
        return stop


class _NoBestLoss(EarlyStopping):
    def step(self, val_loss, model):  # keeps the best loss under another name
        self.best_loss = getattr(self, "lowest", float("inf"))
        stop = super().step(val_loss, model)
        self.lowest = self.best_loss
        del self.best_loss
        return stop


# an instance, made without running the reference's `__init__`: importing this file must not run
# the reference (the instructor's sandbox stages the course with every reference cut out)
_AN_INSTANCE = object.__new__(EarlyStopping)


# --- declaration
register(Exercise(
    lesson=LESSON, name="EarlyStopping", title="Early stopping, its rules worked out from four runs",
    reference=EarlyStopping, kind="any", run=_run, cases=_cases, edge_cases=EDGE_CASES,
    mistakes=[
        # named by its output (the whole state live: the last epoch's weights), or by `_run` (a part live)
        Mistake("state_not_copied", "`model.state_dict()` returns the model's live tensors, not a snapshot: your "
                "`best_state` (all of it, or a part) changed with every later epoch and ends up holding the last "
                "weights. Store `copy.deepcopy(model.state_dict())`.", _StateNotCopied),
        Mistake("counter_not_reset", "Reset the count of epochs without improvement to 0 whenever the loss "
                "improves; otherwise old bad epochs make you stop too early.", _CounterNotReset),
        Mistake("counter_decremented", "When the loss improves, the count of epochs without improvement goes "
                "back to 0, not down by one: after two bad epochs and an improvement yours still counts one, "
                "so you stop an epoch early.", _CounterDecremented),
        Mistake("compares_with_last_epoch", "An epoch counts as an improvement only when its loss beats the best "
                "loss so far; yours compared it with the epoch before, so a loss that bounces back down (still "
                "above the best) restarted your count.", _ComparesWithLast),
        Mistake("stops_late", "Stop as soon as there have been `patience` epochs without improvement "
                "(`>=`, not `>`).", _StopsLate),
        Mistake("tie_counts_as_improvement", "Only a strictly lower loss is an improvement (`<`): an equal "
                "loss counts as an epoch without improvement.", _TieImproves),
        Mistake("wrong_type", "You passed {given}; pass your class `EarlyStopping` itself (without calling it).",
                _AN_INSTANCE, match_output=False),
        Mistake("no_step_method", "Calling your class should give an object with a `step(val_loss, model)` "
                "method.", _NoStep, match_output=False),
        Mistake("returned_none", "`step` returned None: return True when training should stop, False "
                "otherwise.", _StepReturnsNothing, match_output=False),
        Mistake("no_best_state", "After training, `best_state` is still None: store a copy of "
                "`model.state_dict()` whenever the loss improves.", _NeverSaves, match_output=False),
        Mistake("best_state_not_state_dict", "`best_state` should be a copy of `model.state_dict()` (a dict of "
                "tensors), not {got}.", _SavesTheModel, match_output=False),
        Mistake("no_best_loss", "Keep the best validation loss so far in `self.best_loss` (a number).",
                _NoBestLoss, match_output=False),
    ],
    hints=[
        "Take the runs one epoch at a time and keep two numbers: the best loss so far and a count of epochs "
        "without improvement. In the first run, what does the count become after the second 0.8, and at "
        "which value of the count does training stop?",
        "In the run with 0.85: was that epoch an improvement? In the run with 0.9 after two bad epochs: what "
        "is the count just after it? And what does model.state_dict() hold: numbers frozen at that epoch, or "
        "the tensors the model goes on training?",
        "The ideas: only a loss strictly below the best so far is an improvement; it records the loss, keeps "
        "an independent copy of the weights and starts the count again from zero; anything else adds one; "
        "training stops as soon as the count reaches patience.",
    ],
))
