"""diagnose: name what a pair of training curves (train and validation loss per epoch) shows.

Subtle: NaN/inf must be tested first (every comparison with NaN is False, so a NaN curve slips
into any other class); a validation loss *above* the training loss (a gap) is not overfitting, a
validation loss that turns up is; a validation loss that never improves on its start while the
training loss falls is a data bug, not overfitting; flat is not diverging. Every checked curve is
far from the boundaries, so any sensible thresholds agree with the reference.
"""

from __future__ import annotations

import math

from typing import Any

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/07_debugging.py)
from ...answers.l07_debugging import diagnose

KINDS = ("healthy", "overfitting", "data_bug", "not_learning", "diverging")


# --- curves: each kind far from the boundaries between kinds
def _decay(n: int, start: float, floor: float, tau: float) -> list[float]:
    return [floor + (start - floor) * math.exp(-t / tau) for t in range(n)]


def _wobble(curve: list[float], r: Rand, amount: float) -> list[float]:
    return [v * (1 + r.uniform(-amount, amount)) for v in curve]


def _curves(r: Rand, kind: str, n: int) -> tuple[list[float], list[float]]:
    start = r.uniform(1.0, 3.0)
    train = _wobble(_decay(n, start, start * r.uniform(0.01, 0.25), r.uniform(n / 8, n / 3.5)), r, 0.01)
    v0 = start * r.uniform(1.0, 1.1)
    if kind == "healthy":  # val tracks train, maybe well above it (a gap), and ends near its minimum:
        gap = r.uniform(0.0, 1.0)  # the last epochs are noise, the end 1-4 % above the minimum
        val = [v * (1 + gap * t / n) + 0.0 for t, v in enumerate(_decay(n, v0, v0 * r.uniform(0.05, 0.3), n / 4))]
        val = sorted(_wobble(val, r, 0.005), reverse=True)
        low, k = val[-1], r.integer(2, min(5, n - 2))
        val[-k:] = [low * (1 + r.uniform(0.0, 0.04)) for _ in range(k)]
        val[-r.integer(2, k)] = low
        val[-1] = low * (1 + r.uniform(0.01, 0.04))
    elif kind == "overfitting":  # val falls to well below its start, then rises well above its minimum
        low, at = v0 * r.uniform(0.2, 0.55), r.integer(max(2, n // 4), n // 2)
        end = low * r.uniform(1.6, 3.0)
        val = [v0 + (low - v0) * t / at if t <= at else low + (end - low) * (t - at) / (n - 1 - at) for t in range(n)]
    elif kind == "data_bug":  # train falls, val never gets below its start (flat or rising)
        end = v0 * r.choice([r.uniform(0.99, 1.02), r.uniform(1.2, 2.5)])
        val = [v0 + (end - v0) * t / (n - 1) for t in range(n)]
        val = [val[0]] + [max(v, v0 * 0.985) for v in _wobble(val[1:], r, 0.01)]
    elif kind == "not_learning":  # both flat: down by 0.2-1.5 % at most, never up
        drop = r.uniform(0.002, 0.015)
        train = [start * (1 - drop * t / (n - 1)) * (1 + r.uniform(0, 0.001)) for t in range(n)]
        train[-1] = start * (1 - drop)
        val = [v0 * (1 - drop * t / (n - 1)) for t in range(n)]
    else:  # diverging: up to a multiple of the start, or to nan/inf part-way
        how = r.choice(["up", "nan", "inf", "spike"])
        k = r.integer(1, n - 2)
        if how == "up":
            train = [start * r.uniform(2, 10) ** (t / (n - 1)) for t in range(n)]
            val = [v * r.uniform(1.0, 1.1) for v in train]
        else:
            bad = {"nan": math.nan, "inf": math.inf, "spike": start * r.uniform(3, 50)}[how]
            val = [v * 1.05 for v in train]
            train = train[:k] + [bad] * (n - k)
            val = val[:k] + [bad] * (n - k)
    return train, val


def _cases(r: Rand) -> Case:
    kind = r.choice(KINDS)
    return Case(_curves(r, kind, r.integer(8, 40)))


def _fixed(label: str, kind: str, seed: int, n: int) -> Case:
    return Case(_curves(Rand(seed), kind, n), label=label)


_LN10 = math.log(10)
EDGE_CASES = [
    Case(([2.3, 1.2, 0.7, 0.45, 0.3, 0.22, 0.18, 0.16, 0.15, 0.145],
          [2.35, 1.5, 1.1, 0.9, 0.8, 0.74, 0.71, 0.69, 0.68, 0.675]),
         label="validation well above training (a gap), both still falling", show_inputs=True),
    Case(([2.3, 1.5, 0.9, 0.5, 0.25, 0.1, 0.04, 0.02, 0.01, 0.005],
          [2.3, 1.6, 1.1, 0.9, 0.95, 1.1, 1.3, 1.5, 1.7, 1.9]),
         label="validation down, then up", show_inputs=True),
    Case(([2.3, 2.25, 2.2, 2.1, 2.0, 1.85, 1.7, 1.55, 1.4, 1.25],
          [2.32, 2.35, 2.4, 2.45, 2.5, 2.6, 2.7, 2.8, 2.9, 3.0]),
         label="training falls, validation rises from the first epoch", show_inputs=True),
    Case(([2.3, 1.8, 1.3, 0.9, 0.6, 0.4, 0.3, 0.25, 0.22, 0.2],
          [2.3, 2.31, 2.29, 2.3, 2.31, 2.3, 2.29, 2.3, 2.31, 2.3]),
         label="training falls, validation flat", show_inputs=True),
    Case(([_LN10 * (1 - 0.002 * t) for t in range(10)], [_LN10 * (1 - 0.001 * t) + 0.01 for t in range(10)]),
         label="both flat near ln(10)", show_inputs=True),
    Case(([2.3, 2.5, 3.1, 4.0, 5.2, 7.0, 9.5, 13.0], [2.3, 2.6, 3.3, 4.2, 5.5, 7.4, 10.0, 14.0]),
         label="the loss grows", show_inputs=True),
    Case(([2.3, 1.9, 1.6, 1.4, math.nan, math.nan, math.nan, math.nan],
          [2.3, 2.0, 1.7, 1.5, math.nan, math.nan, math.nan, math.nan]),
         label="nan after four epochs", show_inputs=True),
    Case(([2.3, 1.7, 1.2, 0.9, 0.7, math.inf, math.inf, math.inf, math.inf],
          [2.3, 1.8, 1.3, 1.0, 0.8, math.inf, math.inf, math.inf, math.inf]),
         label="inf after five epochs", show_inputs=True),
    _fixed("a random healthy run", "healthy", 11, 20),
    _fixed("a random overfitting run", "overfitting", 12, 30),
]


# --- wrong answers: the reference's rules with one decision changed
def _rules(train, val, check_finite=True, rising=True, data_bug=True, flat_first=True, gap=False, margin=1.2):
    if check_finite and not all(math.isfinite(v) for v in train):
        return "diverging"
    if rising and train[-1] > train[0]:
        return "diverging"
    if flat_first and train[-1] > 0.9 * train[0]:
        return "not_learning"
    if data_bug and min(val) > 0.9 * val[0]:
        return "data_bug"
    if not flat_first and train[-1] > 0.9 * train[0]:
        return "not_learning"
    if gap and val[-1] > 1.2 * train[-1]:
        return "overfitting"
    if not gap and val[-1] > margin * min(val):
        return "overfitting"
    return "healthy"


# --- run
def _curve(v: list[float]) -> str:
    low = min(v) if all(math.isfinite(x) for x in v) else math.nan
    return f"{v[0]:.3g} -> min {low:.3g} -> {v[-1]:.3g}"


def _run(answer: Any, case: Case) -> Any:
    """The half that touches the answer (no reference here): its verdict, one of the kinds."""
    got = answer(*case.args)
    if got not in KINDS:
        raise Incorrect("not_a_kind", got=repr(got)[:60])
    return got


def _finish(got: Any, case: Case) -> Any:
    """The reference's half: the kind the reference sees in the case's curves."""
    train, val = case.args
    want = diagnose(list(train), list(val))
    if not isinstance(got, str) or got not in KINDS:
        raise Incorrect("not_a_kind", got=repr(got)[:60])
    if got != want and not any(m.match_output and m.example(train, val) == got for m in MISTAKES):
        raise Incorrect("wrong_kind", got=got, want=want, train=_curve(train), val=_curve(val))
    return got  # (a known mistake's answer: the framework names it, checked on more cases)


# --- declaration
MISTAKES = [
        Mistake("nan_unchecked", "A curve that turns into nan (or inf) is diverging, but your function called it "
                "something else. Every comparison with nan is False, so test `math.isfinite` on the losses "
                "before any other rule.", lambda t, v: _rules(t, v, check_finite=False)),
        Mistake("gap_is_overfitting", "A validation loss above the training loss (a gap) is normal. Overfitting "
                "is a validation loss that went down and then turned *up*: compare its end with its own minimum.",
                lambda t, v: _rules(t, v, gap=True)),
        Mistake("data_bug_as_overfitting", "When the validation loss never gets below where it started, the model "
                "never generalised at all: that is a data bug (labels shuffled, a validation set prepared "
                "differently), not overfitting, which first improves and then gets worse.",
                lambda t, v: _rules(t, v, data_bug=False)),
        Mistake("flat_as_data_bug", "When the training loss itself does not move, the model is not learning; "
                "test that before asking whether what it learned generalises.",
                lambda t, v: _rules(t, v, flat_first=False)),
        Mistake("no_margin_overfitting", "A validation loss that ends a few percent above its minimum is noise: "
                "the last epochs of a healthy run wobble. Overfitting is a validation loss that ends *well* above "
                "its minimum (a margin such as 10-20 %).", lambda t, v: _rules(t, v, margin=1.0)),
        Mistake("rising_not_diverging", "A training loss that ends above where it started is diverging, even "
                "without a nan: the learning rate is too high.", lambda t, v: _rules(t, v, rising=False)),
        Mistake("not_a_kind", "Return one of the five strings 'healthy', 'overfitting', 'data_bug', "
                "'not_learning', 'diverging'; you returned {got}.", lambda t, v: "Healthy", match_output=False),
        Mistake("wrong_kind", "You said '{got}' for curves that show '{want}' (train {train}; validation {val}).",
                lambda t, v: "healthy", match_output=False),
]
register(Exercise(
    lesson=LESSON, name="diagnose", title="Diagnose a run from its training and validation curves", run=_run,
    finish=_finish,
    reference=diagnose, cases=_cases, edge_cases=EDGE_CASES, n_random=40, arg_names=("train_losses", "val_losses"),
    mistakes=MISTAKES,
    hints=[
        "Which check must come before every comparison? What is the difference between a validation loss "
        "that sits above the training loss and one that turns up?",
        "Test in order: non-finite or rising training loss; a flat training loss; a validation loss that never "
        "gets well below its start; one that ends well above its own minimum. Margins of 10-20 % are safe.",
    ],
))
