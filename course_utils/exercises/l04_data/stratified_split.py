"""stratified_split: train/test indices in which every class keeps its share, reproducible from
the ``generator``.

Subtle: the split must be judged as a set of indices, not compared with the reference's order;
each class puts exactly ``round(n_c * test_fraction)`` items into test (either neighbour on an
exact .5 tie); every class must be shuffled, with the given generator only, and the global random
state and the caller's labels must be left alone.
"""

from __future__ import annotations

import functools
import math
import random

import numpy as np
import torch

from course_utils.grading import Case, Exercise, Expect, Incorrect, Mistake, Rand, pair_of, register

from ._kit import LESSON


# --- reference: the notebook's answer (generated from solutions/04_data.py)
from ...answers.l04_data import stratified_split


# --- cases
def _cases(r: Rand) -> Case:
    k = r.integer(2, 5)
    counts = [r.integer(8, 40) for _ in range(k)]
    y = torch.cat([torch.full((c,), i, dtype=torch.int64) for i, c in enumerate(counts)])
    y = y[torch.randperm(len(y), generator=r.torch)]
    frac = r.choice([0.2, 0.25, 0.3, 0.5]) if r.integer(0, 1) else round(r.uniform(0.1, 0.5), 2)
    return Case((y, frac), dict(seed=r.integer(0, 2**31)))


EDGE_CASES = [
    Case((torch.tensor([0] * 40 + [1] * 8 + [2] * 4), 0.25), dict(seed=7), label="imbalanced classes 40/8/4"),
    Case((torch.tensor([0, 1] * 15), 0.5), dict(seed=3), label="two balanced classes, half for test"),
    Case((torch.tensor([7] * 12 + [2] * 9 + [4] * 20 + [9]), 0.3), dict(seed=11),
         label="labels 2, 4, 7, 9 (not 0..k-1), one class with a single item"),
    Case((torch.tensor([3] * 10), 0.2), dict(seed=5), label="a single class"),
]


# --- run and probes
def _global_rng_states() -> tuple:
    np_state = np.random.get_state()
    return torch.get_rng_state().numpy().tobytes(), random.getstate(), np_state[1].tobytes(), np_state[2]


def _index_tensor(t, name: str) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise Incorrect("indices_not_tensor", name=name, got=type(t).__name__)
    if t.dtype == torch.bool:
        raise Incorrect("indices_are_mask", name=name)
    if t.is_floating_point() or t.dim() != 1:
        raise Incorrect("indices_not_1d_int", name=name, dtype=str(t.dtype).replace("torch.", ""),
                        shape=tuple(t.shape))
    if t.dtype != torch.int64 or type(t) is not torch.Tensor:
        raise Incorrect("wrong_dtype", name=name, type=type(t).__name__, dtype=str(t.dtype).replace("torch.", ""))
    return t


def _counts_problem(y, tr, te, frac) -> None:
    """The split covers every item once and each class keeps its share of the test set."""
    n = len(y)
    both = torch.cat([tr, te])
    if len(both) and (both.min() < 0 or both.max() >= n):
        raise Incorrect("out_of_range", last=n - 1)
    if len(set(tr.tolist()) & set(te.tolist())):
        raise Incorrect("overlap")
    if len(both) != len(set(both.tolist())):
        raise Incorrect("duplicates")
    if len(both) != n:
        raise Incorrect("missing", got=len(both), n=n)
    counts = torch.bincount(y, minlength=int(y.max()) + 1)
    test_counts = torch.bincount(y[te], minlength=len(counts))
    # exactly round(n_c * test_fraction) per class; on an exact .5 tie either neighbour is fine
    # (Python rounds half to even, `int(x + 0.5)` rounds half up: the text doesn't pick one)
    ideal = [c * frac for c in counts.tolist()]
    allowed = [{round(v)} | ({math.floor(v), math.ceil(v)} if abs(v - math.floor(v) - 0.5) < 1e-9 else set())
               for v in ideal]
    off = [int(t) not in ok for t, ok, c in zip(test_counts.tolist(), allowed, counts.tolist()) if c]
    near = all(abs(int(t) - v) < 1 for t, v in zip(test_counts.tolist(), ideal))
    train_counts = torch.bincount(y[tr], minlength=len(counts))
    if any(off) and all(int(t) in ok for t, ok in zip(train_counts.tolist(), allowed)):
        raise Incorrect("swapped")
    if any(off) and all(int(t) in ok or (int(t) == 1 and ok == {0}) for t, ok in zip(test_counts.tolist(), allowed)):
        raise Incorrect("forced_one_per_class")
    if any(off) and near:
        raise Incorrect("wrong_rounding")
    if any(off):
        raise Incorrect("not_stratified")


_PAIR = Expect("not_a_pair", "a pair `(train_idx, test_idx)` of index tensors", pair_of())


def _run(answer, case: Case):
    (y, frac), seed = case.args, case.kwargs["seed"]
    touched_global: list[bool] = []

    def call(s, watch_global=False):
        before = _global_rng_states() if watch_global else None
        given = y.clone()
        out = answer(given, frac, torch.Generator().manual_seed(s))
        if not torch.equal(given, y):
            raise Incorrect("mutated_input")
        if watch_global and _global_rng_states() != before:
            touched_global.append(True)
        _PAIR.check(out)
        return _index_tensor(out[0], "train_idx"), _index_tensor(out[1], "test_idx")

    tr, te = call(seed, watch_global=True)
    _counts_problem(y, tr, te, frac)
    tr2, te2 = call(seed)
    if sorted(te2.tolist()) != sorted(te.tolist()):
        raise Incorrect("ignores_generator")
    others = [sorted(call(seed + j)[1].tolist()) for j in (1, 2)]
    if all(o == sorted(te.tolist()) for o in others):
        raise Incorrect("not_shuffled")
    # every class must be shuffled, not just some: a class with at least a million possible test
    # parts gives the same one under three seeds with probability below 1e-12
    tests = [set(te.tolist())] + [set(o) for o in others]
    test_counts = torch.bincount(y[te], minlength=int(y.max()) + 1)
    for c in range(len(test_counts)):
        members = set((y == c).nonzero().flatten().tolist())
        k = int(test_counts[c])
        if math.comb(len(members), k) >= 10**6 and len({frozenset(t & members) for t in tests}) == 1:
            raise Incorrect("class_not_shuffled")
    if touched_global:
        raise Incorrect("used_global_rng")
    return True


# --- wrong answers
def _split_with(y, test_fraction, generator, *, count=round, in_order="none", global_rng=False):
    """The reference with one knob turned: how a class's test count is rounded, which classes keep
    their order (``"none"``, ``"all"``, ``"first"``), which random source shuffles."""
    train, test = [], []
    for i, c in enumerate(torch.unique(y)):
        idx = (y == c).nonzero().flatten()
        if not (in_order == "all" or (in_order == "first" and i == 0)):
            idx = idx[torch.randperm(len(idx)) if global_rng else torch.randperm(len(idx), generator=generator)]
        n_test = count(len(idx) * test_fraction)
        test.append(idx[:n_test])
        train.append(idx[n_test:])
    return torch.cat(train), torch.cat(test)


def _split_not_stratified(y, test_fraction, generator):
    perm = torch.randperm(len(y), generator=generator)
    n_test = round(len(y) * test_fraction)
    return perm[n_test:], perm[:n_test]


def _split_overlap(y, test_fraction, generator):
    _, test = stratified_split(y, test_fraction, generator)
    return torch.arange(len(y)), test


def _split_marks_y(y, test_fraction, generator):
    train, test = stratified_split(y, test_fraction, generator)
    y[test] = -1
    return train, test


def _forced_one(y, test_fraction, generator):
    train, test = [], []
    for c in torch.unique(y):
        idx = (y == c).nonzero().flatten()
        idx = idx[torch.randperm(len(idx), generator=generator)]
        k = max(1, round(len(idx) * test_fraction))
        test.append(idx[:k])
        train.append(idx[k:])
    return torch.cat(train), torch.cat(test)


# --- declaration
_TAKE = "`torch.randperm(k, generator=generator)`"

register(Exercise(
    lesson=LESSON, name="stratified_split", title="A stratified, reproducible train/test split",
    reference=stratified_split, kind="function", run=_run, cases=_cases, edge_cases=EDGE_CASES,
    mistakes=[
        Mistake("forced_one_per_class", "A class with n_c items puts `round(n_c * test_fraction)` of them into "
                "test, and that can be 0 (a class of one item at test_fraction=0.3 stays in train). You put one "
                "item of such a class into test anyway: don't force at least one.",
                _forced_one, match_output=False),
        Mistake("wrong_rounding", "Each class must put `round(n_c * test_fraction)` of its items into test; "
                "your counts are rounded down or up (`int(...)`, `math.floor`, `math.ceil`). Use `round(...)`.",
                functools.partial(_split_with, count=int), match_output=False),
        Mistake("not_stratified", "The classes do not keep their shares in your test set: each class must put "
                "about `test_fraction` of *its own* items into test. Split every class separately (e.g. loop "
                "over `torch.unique(y)`).", _split_not_stratified, match_output=False),
        Mistake("not_shuffled", "Different generator seeds give the same test set: shuffle the indices of each "
                "class before taking the first part, or the split just follows the order of the data.",
                functools.partial(_split_with, in_order="all"), match_output=False),
        Mistake("ignores_generator", "The same generator seed gave two different splits: use the `generator` "
                f"you are given ({_TAKE}), not the global random state, so a split can be reproduced.",
                functools.partial(_split_with, global_rng=True), match_output=False),
        Mistake("overlap", "Some items are in both the train and the test indices: the test set must be held "
                "out, so every index goes to exactly one side.", _split_overlap, match_output=False),
        Mistake("swapped", "Your split is stratified, but the pair is the wrong way round: return "
                "`(train_idx, test_idx)`, train first.", lambda y, f, g: stratified_split(y, f, g)[::-1],
                match_output=False),
        Mistake("mutated_input", "Your function changed the labels `y` it was given (an indexed assignment or "
                "an in-place op): the caller's labels must stay as they were.", _split_marks_y,
                match_output=False),
        _PAIR.mistake(lambda y, f, g: torch.cat(stratified_split(y, f, g))),
        Mistake("indices_not_tensor", "`{name}` should be a tensor of indices, not {got}.",
                lambda y, f, g: tuple(t.tolist() for t in stratified_split(y, f, g)), match_output=False),
        Mistake("indices_are_mask", "`{name}` is a boolean mask; return the indices (`mask.nonzero().flatten()`).",
                lambda y, f, g: tuple(torch.zeros(len(y), dtype=torch.bool).index_fill(0, t, True)
                                      for t in stratified_split(y, f, g)), match_output=False),
        Mistake("indices_not_1d_int", "`{name}` should be a 1-D integer tensor of indices, not {dtype} of "
                "shape {shape}.", lambda y, f, g: tuple(t.float() for t in stratified_split(y, f, g)),
                match_output=False),
        Mistake("wrong_dtype", "`{name}` is {type} of {dtype}; the task asks for \"two 1-D int64 tensors\" "
                "(plain `torch.Tensor`s, as `nonzero()` and `torch.cat` give them).",
                lambda y, f, g: tuple(t.int() for t in stratified_split(y, f, g)), match_output=False),
        Mistake("out_of_range", "Your indices must lie in 0 .. {last} (positions in `y`).",
                lambda y, f, g: tuple(t + 1 for t in stratified_split(y, f, g)), match_output=False),
        Mistake("duplicates", "Some indices appear twice within one side of your split.",
                lambda y, f, g: (lambda tr, te: (torch.cat([tr, tr[:1]]), te))(*stratified_split(y, f, g)),
                match_output=False),
        Mistake("missing", "Your split covers {got} of the {n} items: every index must go to train or to test.",
                lambda y, f, g: (lambda tr, te: (tr[1:], te))(*stratified_split(y, f, g)), match_output=False),
        Mistake("class_not_shuffled", "Different generator seeds give the same test items for one class: "
                "shuffle the indices of *every* class with the generator before taking its first part.",
                functools.partial(_split_with, in_order="first"), match_output=False),
        Mistake("used_global_rng", "Your split changed the global random state (`torch.manual_seed`, or "
                "`torch.randperm`/`random`/NumPy without the generator): use only the `generator` you are "
                f"given, e.g. {_TAKE}, and leave the global random state of the notebook alone.",
                lambda y, f, g: (torch.rand(1), stratified_split(y, f, g))[1], match_output=False),
    ],
    hints=[
        "Handle one class at a time: find its items, then split them in the requested proportion.",
        "Shuffle each class's indices with the generator you are given (so the split is reproducible), "
        "send the rounded fraction to test and the rest to train, and join the classes' pieces at the "
        "end.",
    ],
))
