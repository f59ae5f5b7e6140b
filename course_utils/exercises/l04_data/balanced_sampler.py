"""balanced_sampler: a ``WeightedRandomSampler`` that draws every class equally often.

Subtle: the sampler draws *item* indices, so it needs one weight per item (``1 / class_counts[y]``),
not one per class; it must draw with replacement and pass the ``generator`` on; what it really
draws is compared with a plain sampler of the same settings, so a subclass cannot fake its weights.
"""

from __future__ import annotations

import itertools

import torch
from torch.utils.data import WeightedRandomSampler

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON


# --- reference: the notebook's answer (generated from solutions/04_data.py)
from ...answers.l04_data import balanced_sampler


# --- cases
def _cases(r: Rand) -> Case:
    k = r.integer(2, 5)
    counts = [r.integer(2, 50) for _ in range(k)]
    y = torch.cat([torch.full((c,), i, dtype=torch.int64) for i, c in enumerate(counts)])
    return Case((y[torch.randperm(len(y), generator=r.torch)],), dict(seed=r.integer(0, 2**31)))


EDGE_CASES = [
    Case((torch.tensor([0] * 30 + [1] * 3),), dict(seed=5), label="30 items of class 0, 3 of class 1"),
    Case((torch.tensor([5] * 4 + [1] * 12 + [3] * 2 + [5] * 3),), dict(seed=8), label="labels 1, 3, 5 (not 0..k-1)"),
]


# --- run and probes
def _run(answer, case: Case):
    (y,), seed = case.args, case.kwargs["seed"]
    g = torch.Generator().manual_seed(seed)
    given = y.clone()
    s = answer(given, generator=g)
    if not torch.equal(given, y):
        raise Incorrect("mutated_input")
    if not isinstance(s, WeightedRandomSampler):
        raise Incorrect("not_weighted_sampler", got=type(s).__name__)
    w = torch.as_tensor(s.weights, dtype=torch.float64)
    if w.shape != (len(y),):
        if len(w) == int(y.max()) + 1:
            raise Incorrect("per_class_weights")
        raise Incorrect("wrong_weights_shape", n=len(y), got=len(w))
    if s.generator is not g:
        raise Incorrect("ignored_generator")
    if not bool(torch.isfinite(w).all()) or bool((w < 0).any()) or not bool((w > 0).any()):
        raise Incorrect("invalid_weights")
    # what the sampler really draws: exactly what a WeightedRandomSampler with these settings draws
    # (other sizes are reported by the comparison below)
    g.manual_seed(seed + 1)
    drawn = [int(i) for i in itertools.islice(iter(s), len(y) + 1)] if s.num_samples == len(y) else None
    plain = WeightedRandomSampler(s.weights, len(y), s.replacement, generator=torch.Generator().manual_seed(seed + 1))
    if drawn is not None and drawn != [int(i) for i in plain]:
        raise Incorrect("draws_differ")
    # named parts, so that feedback says which one is wrong
    return {"the sampler's weights (scaled to sum to 1)": w / w.sum(), "its num_samples": int(s.num_samples),
            "its replacement": bool(s.replacement)}


# --- wrong answers
def _sampler_with(y, generator=None, *, weights=lambda counts, y: 1.0 / counts[y].double(), replacement=True,
                  pass_generator=True):
    """The reference with one knob turned."""
    w = weights(torch.bincount(y), y)
    return WeightedRandomSampler(w, num_samples=len(y), replacement=replacement,
                                 generator=generator if pass_generator else None)


def _sampler_fills_y(y, generator=None):
    sampler = balanced_sampler(y.clone(), generator)
    y.fill_(0)
    return sampler


class _ReversedDraws(WeightedRandomSampler):
    def __iter__(self):
        return reversed(list(super().__iter__()))


def _sampler_reversed(y, generator=None):
    return _ReversedDraws(1.0 / torch.bincount(y)[y].double(), len(y), True, generator=generator)


# --- declaration
register(Exercise(
    lesson=LESSON, name="balanced_sampler", title="A WeightedRandomSampler that balances classes",
    reference=balanced_sampler, kind="function", run=_run, cases=_cases, edge_cases=EDGE_CASES,
    mistakes=[
        Mistake("proportional_weights", "Your weights grow with the class size, which makes the imbalance "
                "worse. Each item's weight is 1 / (size of its class).",
                lambda y, generator=None: _sampler_with(y, generator, weights=lambda c, y: c[y].double())),
        Mistake("per_class_weights", "You gave one weight per *class*; the sampler draws item "
                                     "indices, so it needs one weight per *item*: each item carries "
                                     "its own class's weight.",
                lambda y, generator=None: _sampler_with(y, generator, weights=lambda c, y: 1.0 / c.double()),
                match_output=False),
        Mistake("no_replacement", "With `replacement=False` every item is drawn exactly once per epoch, so "
                "the class balance does not change at all. Use `replacement=True`.",
                lambda y, generator=None: _sampler_with(y, generator, replacement=False)),
        Mistake("ignored_generator", "Pass the `generator` argument on to the sampler "
                "(`WeightedRandomSampler(..., generator=generator)`), so its draws can be repeated.",
                lambda y, generator=None: _sampler_with(y, generator, pass_generator=False), match_output=False),
        Mistake("mutated_input", "Your function changed the labels `y` it was given (an in-place op such as "
                "`fill_` or an indexed assignment): the caller's labels must stay as they were.",
                _sampler_fills_y, match_output=False),
        Mistake("not_weighted_sampler", "Return a `torch.utils.data.WeightedRandomSampler`, not {got}.",
                lambda y, generator=None: list(balanced_sampler(y, generator)), match_output=False),
        Mistake("wrong_weights_shape", "The sampler needs one weight per item ({n}), yours has {got}.",
                lambda y, generator=None: _sampler_with(y, generator, weights=lambda c, y: torch.ones(len(y) + 1)),
                match_output=False),
        Mistake("invalid_weights", "Sampling weights must be finite and not negative (the sampler "
                                   "draws item `i` with probability `weights[i] / weights.sum()`).",
                lambda y, generator=None: _sampler_with(y, generator, weights=lambda c, y: -1.0 / c[y].double()),
                match_output=False),
        Mistake("draws_differ", "Iterating your sampler does not give the draws of a "
                                "`WeightedRandomSampler` with its weights: return the sampler itself,"
                                " built with the weights, the number of draws, replacement and the "
                                "generator.", _sampler_reversed, match_output=False),
    ],
    hints=[
        "A weighted sampler draws item i with probability proportional to its weight. For every class to "
        "be equally likely, what must each class's weights add up to?",
        "Count the items of each class and give every item a weight inversely proportional to its own "
        "class's count. Draw as many items as the dataset has, with replacement.",
    ],
))
