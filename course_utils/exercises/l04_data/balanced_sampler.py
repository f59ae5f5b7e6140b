"""balanced_sampler: a ``WeightedRandomSampler`` that draws every class equally often.

A repair, not a transcription: the notebook shows a colleague's sampler with three problems (one
weight per class, so only indices 0..k-1 can be drawn; no replacement, so nothing is balanced;
the caller's ``generator`` ignored) of which only the first two together raise an error. The
learner decides the weights (each class's weights add up to the same total), the replacement and
what makes the draws repeatable. What the sampler really draws is compared with a plain sampler
of the same settings, so a subclass cannot fake its weights.
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
            raise Incorrect("per_class_weights", k_minus_1=len(w) - 1)
        raise Incorrect("wrong_weights_shape", n=len(y), got=len(w))
    if s.generator is not g:
        raise Incorrect("ignored_generator")
    if not bool(torch.isfinite(w).all()) or bool((w < 0).any()) or not bool((w > 0).any()):
        raise Incorrect("invalid_weights")
    if s.num_samples != len(y):
        raise Incorrect("epoch_length", n=len(y), got=s.num_samples)
    # what the sampler really draws: exactly what a WeightedRandomSampler with these settings draws
    # (other sizes are reported by the comparison below)
    g.manual_seed(seed + 1)
    drawn = [int(i) for i in itertools.islice(iter(s), len(y) + 1)]
    plain = WeightedRandomSampler(s.weights, len(y), s.replacement, generator=torch.Generator().manual_seed(seed + 1))
    if drawn != [int(i) for i in plain]:
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
                "worse: the largest class is now drawn even more often than in the data. A rare item must "
                "weigh more than a common one.",
                lambda y, generator=None: _sampler_with(y, generator, weights=lambda c, y: c[y].double())),
        Mistake("uniform_weights", "Every item has the same weight, so the sampler draws the classes in the "
                "dataset's own proportions (what `shuffle=True` does, with repeats). Balancing needs weights "
                "that depend on the item's class.",
                lambda y, generator=None: _sampler_with(y, generator, weights=lambda c, y: torch.ones(len(y)))),
        Mistake("over_balanced", "Your weights favour rare classes beyond balance: the smallest class is now "
                "drawn more often than the largest. Add up the weights of each class: for equal draws those "
                "totals must be equal.",
                lambda y, generator=None: _sampler_with(y, generator, weights=lambda c, y: 1.0 / c[y].double() ** 2)),
        Mistake("per_class_weights", "You gave one weight per *class*. The sampler returns indices into its "
                                     "weights, so it can only draw items 0 to {k_minus_1}, whatever their "
                                     "class. It draws items of the dataset: how many weights does it need?",
                lambda y, generator=None: _sampler_with(y, generator, weights=lambda c, y: 1.0 / c.double()),
                match_output=False),
        Mistake("no_replacement", "Without replacement every item is drawn exactly once per epoch, in a new "
                "order, so the classes keep the dataset's proportions whatever the weights. A rare class "
                "can only fill its share if its items come up more than once.",
                lambda y, generator=None: _sampler_with(y, generator, replacement=False)),
        Mistake("ignored_generator", "Your sampler does not draw from the `generator` the caller gave (it uses "
                "the global random state, or a generator of its own), so two runs seeded alike draw different "
                "epochs.",
                lambda y, generator=None: _sampler_with(y, generator, pass_generator=False), match_output=False),
        Mistake("epoch_length", "An epoch of your sampler is {got} draws; the dataset has {n} items. The "
                "sampler decides how long a DataLoader's epoch is, and this one must last one dataset's worth.",
                lambda y, generator=None: WeightedRandomSampler(1.0 / torch.bincount(y)[y].double(),
                                                                len(torch.bincount(y)), True, generator=generator),
                match_output=False),
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
        "What does the colleague's sampler return: indices of what? How many weights does it hold, and "
        "how many items does the dataset have?",
        "A weighted sampler draws item i with probability proportional to its weight. For every class to "
        "be equally likely, what must each class's weights add up to? And how can a class of 10 items "
        "fill a third of 260 draws?",
        "Each item's weight shrinks as its own class grows, so every class has the same total; rare items "
        "must be allowed to come up again; and the randomness must come from what the caller handed over.",
    ],
))
