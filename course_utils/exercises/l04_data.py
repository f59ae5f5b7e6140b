"""Exercises of 04_data: datasets, splits, samplers, collate functions and DataLoader workers.

Worker behaviour is checked in this process by *simulating* workers: for worker ``k`` of
``n`` the grader makes a copy of the dataset (as a worker gets one), sets what
``torch.utils.data.get_worker_info()`` returns to ``WorkerInfo(id=k, num_workers=n, ...)``
and seeds ``torch``/``random``/NumPy's global RNG the way a worker does. That is exactly what
learner code can observe inside a worker, it takes microseconds, and it works with every
multiprocessing start method (a class defined in a notebook cannot be sent to real workers
under spawn/forkserver). Where the start method is fork, :class:`ShardedRange` is also run
through a real ``DataLoader`` with 1 and 2 worker processes.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import itertools
import math
import multiprocessing
import random

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset, IterableDataset, WeightedRandomSampler

from course_utils.data_workers import NoisyItems, ShardedRange, reseed_worker
from course_utils.datasets import PAD
from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

LESSON = "04_data"

try:  # what get_worker_info() returns lives in this private module (stable since torch 1.2)
    import torch.utils.data._utils.worker as _worker_mod

    _CAN_SIMULATE = hasattr(_worker_mod, "_worker_info") and hasattr(_worker_mod, "WorkerInfo")
except ImportError:  # pragma: no cover
    _worker_mod = None
    _CAN_SIMULATE = False


@contextlib.contextmanager
def as_worker(worker_id: int, num_workers: int, base_seed: int, dataset):
    """Run a block as DataLoader worker ``worker_id`` of ``num_workers`` would: its own
    ``get_worker_info()`` and the global seeds torch sets in a worker. The caller's RNG state is
    the grader's business (checks run inside ``preserved_state``)."""
    seed = base_seed + worker_id
    previous = _worker_mod._worker_info
    if isinstance(previous, _worker_mod.WorkerInfo) and getattr(previous, "seed", None) is not None \
            and multiprocessing.parent_process() is None:
        previous = None  # left over from a check stopped mid-way (this is the main process)
    _worker_mod._worker_info = _worker_mod.WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                                      dataset=dataset)
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        np.random.seed(_worker_mod._generate_state(base_seed, worker_id))
    except (AttributeError, TypeError, ValueError):  # pragma: no cover - private helper changed
        np.random.seed(seed % 2**32)
    try:
        yield
    finally:
        _worker_mod._worker_info = previous


def _clear_stale_worker_info() -> None:
    """A check stopped mid-way (a repeated timeout signal landing in ``as_worker``'s clean-up) can
    leave a simulated ``WorkerInfo`` behind; in the main process there is never a real one, so a
    leftover would make ``get_worker_info()`` lie to the next check (and to the notebook)."""
    if _CAN_SIMULATE and multiprocessing.parent_process() is None:
        _worker_mod._worker_info = None


def _construct(answer, *args, what: str = "class"):
    """Build the learner's dataset/sampler, turning the wrong kind of answer into feedback."""
    if isinstance(answer, Dataset):
        raise Incorrect("wrong_type", f"You passed an instance; pass the {what} itself (without calling it).")
    if not callable(answer):
        raise Incorrect("wrong_type", f"You passed a {type(answer).__name__}; this exercise wants a {what}.")
    return answer(*args)


# --------------------------------------------------------------------------- 1. WindowDataset
class WindowDataset(Dataset):
    """Sliding windows over a 1-D series: item ``i`` is ``(x, y)`` with ``x`` the ``window``
    values starting at ``i`` and ``y`` the value ``horizon`` steps after the window's last value."""

    def __init__(self, series, window, horizon=1):
        self.series = series
        self.window = window
        self.horizon = horizon

    def __len__(self):
        # 0 when the series is too short for even one window and its target (never negative)
        return max(0, len(self.series) - self.window - self.horizon + 1)

    def __getitem__(self, i):
        x = self.series[i : i + self.window]
        y = self.series[i + self.window + self.horizon - 1]
        return x, y


class _TargetIsLastInput(WindowDataset):
    def __getitem__(self, i):
        return self.series[i : i + self.window], self.series[i + self.window + self.horizon - 2]


class _IgnoresHorizon(WindowDataset):
    def __getitem__(self, i):
        return self.series[i : i + self.window], self.series[i + self.window]


class _LenTooLong(WindowDataset):
    def __len__(self):
        return len(self.series) - self.window - self.horizon + 2


class _LenTooShort(WindowDataset):
    def __len__(self):
        return len(self.series) - self.window - self.horizon


def _window_cases(r: Rand) -> Case:
    window, horizon = r.integer(1, 6), r.integer(1, 3)
    return Case((r.randn(r.integer(window + horizon + 1, 40)), window, horizon))


def _window_run(answer, case: Case):
    series, window, horizon = case.args
    # horizon 1 is the default: build those cases without it, so a wrong default is caught too
    ds = _construct(answer, series, window) if horizon == 1 else _construct(answer, series, window, horizon)
    if horizon == 1 and getattr(ds, "horizon", 1) != 1:
        raise Incorrect("wrong_default_horizon", "`WindowDataset(series, window)` must mean horizon 1 (the "
                        "value right after the window): keep the default `horizon=1` in `__init__`.")
    if not isinstance(ds, Dataset):
        raise Incorrect("not_a_dataset", "Complete the class `WindowDataset(Dataset)`: calling your answer gave "
                        f"a {type(ds).__name__}, not a `torch.utils.data.Dataset` (keep the base class, and "
                        "compute items in `__getitem__`).")
    if not (hasattr(ds, "__len__") and hasattr(ds, "__getitem__")):
        raise Incorrect("not_a_dataset", "Calling your class did not give an object with `__len__` and "
                        f"`__getitem__` (got {type(ds).__name__}). Subclass `Dataset` and define both.")
    want = max(0, len(series) - window - horizon + 1)
    where = f"For a series of {len(series)} values, window={window} and horizon={horizon}"
    try:
        n = len(ds)
    except ValueError as exc:  # Python refuses a negative __len__
        if "should return >= 0" not in str(exc):
            raise
        raise Incorrect("negative_len", f"{where} no window fits, so the dataset has 0 items, but your "
                        "`__len__` returned a negative number (Python's `len()` refuses it). Return "
                        "`max(0, len(series) - window - horizon + 1)`.") from None
    if n == want + 1:
        raise Incorrect("len_too_long", f"{where} your dataset has {n} items: one too many. The last "
                        "window must still have a target `horizon` steps after it, so the last valid start "
                        "is `len(series) - window - horizon`.")
    if n == want - 1:
        raise Incorrect("len_too_short", f"{where} your dataset has {n} items: one too few, so the last "
                        "window is never used. Count the valid start positions 0, 1, ..., "
                        "`len(series) - window - horizon`.")
    if n != want:
        raise Incorrect("wrong_len", f"{where} your dataset has {n} items. Count the start positions "
                        "whose window and target both fit inside the series.")
    xs, ys = [], []
    for i in range(n):
        item = ds[i]
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise Incorrect("item_not_pair", f"`dataset[{i}]` should be a pair `(x, y)`, not {type(item).__name__}.")
        x, y = item
        if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)):
            raise Incorrect("item_not_tensor", f"`dataset[{i}]` should hold two tensors; slice and index the "
                            "series tensor itself.")
        if x.shape != (window,) or y.shape != ():
            raise Incorrect("item_shape", f"`x` should have shape ({window},) and `y` shape () (a 0-dim "
                            f"tensor), but `dataset[{i}]` gives {tuple(x.shape)} and {tuple(y.shape)}.")
        xs.append(x)
        ys.append(y)
    if not xs:
        return series.new_zeros((0, window)), series.new_zeros((0,))
    return torch.stack(xs), torch.stack(ys)


register(Exercise(
    lesson=LESSON, name="WindowDataset", title="A sliding-window Dataset over a time series",
    reference=WindowDataset, kind="any", run=_window_run, cases=_window_cases,
    edge_cases=[
        Case((torch.arange(8.0), 3, 1), label="series 0..7, window 3, horizon 1", show_inputs=True),
        Case((torch.arange(10.0), 2, 3), label="series 0..9, window 2, horizon 3", show_inputs=True),
        Case((torch.arange(5.0), 4, 1), label="only one window fits"),
        # "the number of windows whose target still lies inside the series" is 0 here, not -2
        Case((torch.arange(3.0), 4, 1), label="a series of 3 values, window 4: no window fits"),
    ],
    mistakes=[
        Mistake("target_is_last_input", "Your target is the last value *inside* the window (the classic "
                "off-by-one): the model would learn to copy its input. The target is "
                "`series[i + window + horizon - 1]`, the first value after the window when horizon is 1.",
                _TargetIsLastInput),
        Mistake("ignores_horizon", "Your target is always the value right after the window; with "
                "`horizon=h` it must be `h` steps after the window's last value: "
                "`series[i + window + horizon - 1]`.", _IgnoresHorizon),
        Mistake("len_too_long", "Your `__len__` counts one window too many: its target would lie past the "
                "end of the series. Valid starts are 0 .. `len(series) - window - horizon`.",
                _LenTooLong, match_output=False),
        Mistake("len_too_short", "Your `__len__` leaves out the last window. Valid starts are "
                "0 .. `len(series) - window - horizon`, so there are `len(series) - window - horizon + 1`.",
                _LenTooShort, match_output=False),
    ],
    hints=[
        "Draw a series of 8 values, window 3, horizon 1 on paper: which indices go into x for item 0, "
        "which one is y, and which is the last item?",
        "`x = self.series[i : i + self.window]`; the target comes `horizon` steps after index "
        "`i + window - 1`.",
        "`__len__` is `len(series) - window - horizon + 1`, or 0 if that is negative (a series too short "
        "for one window).",
    ],
))


# --------------------------------------------------------------------------- 2. stratified_split
def stratified_split(y, test_fraction, generator):
    """Indices (train, test) such that every class keeps its share in the test set."""
    train, test = [], []
    for c in torch.unique(y):
        idx = (y == c).nonzero().flatten()
        idx = idx[torch.randperm(len(idx), generator=generator)]
        n_test = round(len(idx) * test_fraction)
        test.append(idx[:n_test])
        train.append(idx[n_test:])
    return torch.cat(train), torch.cat(test)


def _split_floor(y, test_fraction, generator):
    train, test = [], []
    for c in torch.unique(y).tolist():
        idx = torch.nonzero(y == c).squeeze(1)
        idx = idx[torch.randperm(len(idx), generator=generator)]
        k = int(len(idx) * test_fraction)  # floor, not round
        test.append(idx[:k])
        train.append(idx[k:])
    return torch.cat(train), torch.cat(test)


def _split_not_stratified(y, test_fraction, generator):
    perm = torch.randperm(len(y), generator=generator)
    n_test = round(len(y) * test_fraction)
    return perm[n_test:], perm[:n_test]


def _split_not_shuffled(y, test_fraction, generator):
    train, test = [], []
    for c in torch.unique(y):
        idx = (y == c).nonzero().flatten()
        n_test = round(len(idx) * test_fraction)
        test.append(idx[:n_test])
        train.append(idx[n_test:])
    return torch.cat(train), torch.cat(test)


def _split_global_rng(y, test_fraction, generator):
    train, test = [], []
    for c in torch.unique(y):
        idx = (y == c).nonzero().flatten()
        idx = idx[torch.randperm(len(idx))]
        n_test = round(len(idx) * test_fraction)
        test.append(idx[:n_test])
        train.append(idx[n_test:])
    return torch.cat(train), torch.cat(test)


def _split_overlap(y, test_fraction, generator):
    _, test = stratified_split(y, test_fraction, generator)
    return torch.arange(len(y)), test


def _split_cases(r: Rand) -> Case:
    k = r.integer(2, 5)
    counts = [r.integer(8, 40) for _ in range(k)]
    y = torch.cat([torch.full((c,), i, dtype=torch.int64) for i, c in enumerate(counts)])
    y = y[torch.randperm(len(y), generator=r.torch)]
    frac = r.choice([0.2, 0.25, 0.3, 0.5]) if r.integer(0, 1) else round(r.uniform(0.1, 0.5), 2)
    return Case((y, frac), dict(seed=r.integer(0, 2**31)))


def _index_tensor(t, name: str) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise Incorrect("wrong_type", f"`{name}` should be a tensor of indices, not {type(t).__name__}.")
    if t.dtype == torch.bool:
        raise Incorrect("wrong_type", f"`{name}` is a boolean mask; return the indices (`mask.nonzero().flatten()`).")
    if t.is_floating_point() or t.dim() != 1:
        raise Incorrect("wrong_type", f"`{name}` should be a 1-D integer tensor of indices, not "
                        f"{str(t.dtype).replace('torch.', '')} of shape {tuple(t.shape)}.")
    if t.dtype != torch.int64 or type(t) is not torch.Tensor:
        raise Incorrect("wrong_dtype", f"`{name}` is {type(t).__name__} of {str(t.dtype).replace('torch.', '')}; "
                        "the task asks for \"two 1-D int64 tensors\" (plain `torch.Tensor`s, as "
                        "`nonzero()` and `torch.cat` give them).")
    return t


def _split_run(answer, case: Case):
    (y, frac), seed = case.args, case.kwargs["seed"]
    touched_global: list[bool] = []

    def call(s, watch_global=False):
        before = _global_rng_states() if watch_global else None
        given = y.clone()
        out = answer(given, frac, torch.Generator().manual_seed(s))
        if not torch.equal(given, y):
            raise Incorrect("mutated_input", "Your function changed the labels `y` it was given (an indexed "
                            "assignment or an in-place op): the caller's labels must stay as they were.")
        if watch_global and _global_rng_states() != before:
            touched_global.append(True)
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise Incorrect("wrong_type", "Return a pair `(train_idx, test_idx)` of index tensors.")
        return _index_tensor(out[0], "train_idx"), _index_tensor(out[1], "test_idx")

    tr, te = call(seed, watch_global=True)
    n = len(y)
    both = torch.cat([tr, te])
    if len(both) and (both.min() < 0 or both.max() >= n):
        raise Incorrect("out_of_range", f"Your indices must lie in 0 .. {n - 1} (positions in `y`).")
    if len(set(tr.tolist()) & set(te.tolist())):
        raise Incorrect("overlap", "Some items are in both the train and the test indices: the test set "
                        "must be held out, so every index goes to exactly one side.")
    if len(both) != len(set(both.tolist())):
        raise Incorrect("duplicates", "Some indices appear twice within one side of your split.")
    if len(both) != n:
        raise Incorrect("missing", f"Your split covers {len(both)} of the {n} items: every index must go "
                        "to train or to test.")
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
        raise Incorrect("swapped", "Your split is stratified, but the pair is the wrong way round: return "
                        "`(train_idx, test_idx)`, train first.")
    if any(off) and near:
        raise Incorrect("wrong_rounding", "Each class must put `round(n_c * test_fraction)` of its items into "
                        "test; your counts are rounded down or up (`int(...)`, `math.floor`, `math.ceil`). "
                        "Use `round(...)`.")
    if any(off):
        raise Incorrect("not_stratified", "The classes do not keep their shares in your test set: each "
                        "class must put about `test_fraction` of *its own* items into test. Split every "
                        "class separately (e.g. loop over `torch.unique(y)`).")
    tr2, te2 = call(seed)
    if sorted(te2.tolist()) != sorted(te.tolist()):
        raise Incorrect("ignores_generator", "The same generator seed gave two different splits: use the "
                        "`generator` you are given (`torch.randperm(k, generator=generator)`), not the "
                        "global random state, so a split can be reproduced.")
    others = [sorted(call(seed + j)[1].tolist()) for j in (1, 2)]
    if all(o == sorted(te.tolist()) for o in others):
        raise Incorrect("not_shuffled", "Different generator seeds give the same test set: shuffle the "
                        "indices of each class before taking the first part, or the split just follows "
                        "the order of the data.")
    # every class must be shuffled, not just some: a class with at least a million possible test
    # parts gives the same one under three seeds with probability below 1e-12
    tests = [set(te.tolist())] + [set(o) for o in others]
    for c in range(len(counts)):
        members = set((y == c).nonzero().flatten().tolist())
        k = int(test_counts[c])
        if math.comb(len(members), k) >= 10**6 and len({frozenset(t & members) for t in tests}) == 1:
            raise Incorrect("class_not_shuffled", "Different generator seeds give the same test items for "
                            "one class: shuffle the indices of *every* class with the generator before taking "
                            "its first part.")
    if touched_global:
        raise Incorrect("used_global_rng", "Your split changed the global random state (`torch.manual_seed`, "
                        "or `torch.randperm`/`random`/NumPy without the generator): use only the `generator` "
                        "you are given, e.g. `torch.randperm(k, generator=generator)`, and leave the global "
                        "random state of the notebook alone.")
    return True


def _global_rng_states() -> tuple:
    np_state = np.random.get_state()
    return torch.get_rng_state().numpy().tobytes(), random.getstate(), np_state[1].tobytes(), np_state[2]


register(Exercise(
    lesson=LESSON, name="stratified_split", title="A stratified, reproducible train/test split",
    reference=stratified_split, kind="function", run=_split_run, cases=_split_cases,
    edge_cases=[
        Case((torch.tensor([0] * 40 + [1] * 8 + [2] * 4), 0.25), dict(seed=7), label="imbalanced classes 40/8/4"),
        Case((torch.tensor([0, 1] * 15), 0.5), dict(seed=3), label="two balanced classes, half for test"),
        Case((torch.tensor([7] * 12 + [2] * 9 + [4] * 20 + [9]), 0.3), dict(seed=11),
             label="labels 2, 4, 7, 9 (not 0..k-1), one class with a single item"),
        Case((torch.tensor([3] * 10), 0.2), dict(seed=5), label="a single class"),
    ],
    mistakes=[
        Mistake("wrong_rounding", "Each class must put `round(n_c * test_fraction)` of its items into test.",
                _split_floor, match_output=False),
        Mistake("not_stratified", "Your split ignores the classes (one permutation of all items), so small "
                "classes can vanish from the test set. Split each class separately.",
                _split_not_stratified, match_output=False),
        Mistake("not_shuffled", "You take the first items of every class without shuffling: the split "
                "follows the order of the data. Permute each class's indices with the generator first.",
                _split_not_shuffled, match_output=False),
        Mistake("ignores_generator", "You shuffle with the global random state, so nobody can repeat your "
                "split from a seed: pass `generator=generator` to `torch.randperm`.",
                _split_global_rng, match_output=False),
        Mistake("overlap", "Your train indices include test items: the model would be evaluated on data it "
                "was trained on. Put every index on exactly one side.", _split_overlap, match_output=False),
    ],
    hints=[
        "Handle one class at a time: `for c in torch.unique(y): idx = (y == c).nonzero().flatten()`.",
        "Shuffle each class's indices with `idx[torch.randperm(len(idx), generator=generator)]`, put the "
        "first `round(len(idx) * test_fraction)` into test and the rest into train.",
        "Collect the pieces in two lists and `torch.cat` each at the end.",
    ],
))


# --------------------------------------------------------------------------- 3. balanced_sampler
def balanced_sampler(y, generator=None):
    """A sampler that draws every class equally often (in expectation)."""
    class_counts = torch.bincount(y)
    weights = 1.0 / class_counts[y].double()
    return WeightedRandomSampler(weights, num_samples=len(y), replacement=True, generator=generator)


def _sampler_proportional(y, generator=None):
    counts = torch.bincount(y)
    return WeightedRandomSampler(counts[y].double(), num_samples=len(y), replacement=True, generator=generator)


def _sampler_per_class(y, generator=None):
    counts = torch.bincount(y)
    return WeightedRandomSampler(1.0 / counts.double(), num_samples=len(y), replacement=True, generator=generator)


def _sampler_no_replacement(y, generator=None):
    counts = torch.bincount(y)
    return WeightedRandomSampler(1.0 / counts[y].double(), num_samples=len(y), replacement=False,
                                 generator=generator)


def _sampler_ignores_generator(y, generator=None):
    counts = torch.bincount(y)
    return WeightedRandomSampler(1.0 / counts[y].double(), num_samples=len(y), replacement=True)


def _sampler_cases(r: Rand) -> Case:
    k = r.integer(2, 5)
    counts = [r.integer(2, 50) for _ in range(k)]
    y = torch.cat([torch.full((c,), i, dtype=torch.int64) for i, c in enumerate(counts)])
    return Case((y[torch.randperm(len(y), generator=r.torch)],), dict(seed=r.integer(0, 2**31)))


def _sampler_run(answer, case: Case):
    (y,), seed = case.args, case.kwargs["seed"]
    g = torch.Generator().manual_seed(seed)
    given = y.clone()
    s = answer(given, generator=g)
    if not torch.equal(given, y):
        raise Incorrect("mutated_input", "Your function changed the labels `y` it was given (an in-place op "
                        "such as `fill_` or an indexed assignment): the caller's labels must stay as they were.")
    if not isinstance(s, WeightedRandomSampler):
        raise Incorrect("not_weighted_sampler", "Return a `torch.utils.data.WeightedRandomSampler`, not "
                        f"{type(s).__name__}.")
    w = torch.as_tensor(s.weights, dtype=torch.float64)
    if w.shape != (len(y),):
        if len(w) == int(y.max()) + 1:
            raise Incorrect("per_class_weights", "You gave one weight per *class*; the sampler needs one "
                            "weight per *item* (it draws item indices): `weights = 1 / class_counts[y]`.")
        raise Incorrect("wrong_weights_shape", f"The sampler needs one weight per item ({len(y)}), "
                        f"yours has {len(w)}.")
    if s.generator is not g:
        raise Incorrect("ignored_generator", "Pass the `generator` argument on to the sampler "
                        "(`WeightedRandomSampler(..., generator=generator)`), so its draws can be repeated.")
    if not bool(torch.isfinite(w).all()) or bool((w < 0).any()) or not bool((w > 0).any()):
        raise Incorrect("invalid_weights", "Sampling weights must be finite and not negative (the sampler "
                        "draws item `i` with probability `weights[i] / weights.sum()`): "
                        "`weights = 1.0 / class_counts[y]`.")
    # what the sampler really draws: exactly what a WeightedRandomSampler with these settings draws
    # (other sizes are reported by the comparison below)
    g.manual_seed(seed + 1)
    drawn = [int(i) for i in itertools.islice(iter(s), len(y) + 1)] if s.num_samples == len(y) else None
    plain = WeightedRandomSampler(s.weights, len(y), s.replacement, generator=torch.Generator().manual_seed(seed + 1))
    if drawn is not None and drawn != [int(i) for i in plain]:
        raise Incorrect("draws_differ", "Iterating your sampler does not give the draws of a "
                        "`WeightedRandomSampler` with its weights: return a plain "
                        "`WeightedRandomSampler(weights, num_samples=len(y), replacement=True, generator=generator)`.")
    return w / w.sum(), int(s.num_samples), bool(s.replacement)


register(Exercise(
    lesson=LESSON, name="balanced_sampler", title="A WeightedRandomSampler that balances classes",
    reference=balanced_sampler, kind="function", run=_sampler_run, cases=_sampler_cases,
    edge_cases=[Case((torch.tensor([0] * 30 + [1] * 3),), dict(seed=5), label="30 items of class 0, 3 of class 1"),
                Case((torch.tensor([5] * 4 + [1] * 12 + [3] * 2 + [5] * 3),), dict(seed=8),
                     label="labels 1, 3, 5 (not 0..k-1)")],
    mistakes=[
        Mistake("proportional_weights", "Your weights grow with the class size, which makes the imbalance "
                "worse. Each item's weight is 1 / (size of its class).", _sampler_proportional),
        Mistake("per_class_weights", "You gave one weight per class; the sampler needs one weight per item: "
                "`1.0 / class_counts[y]`.", _sampler_per_class, match_output=False),
        Mistake("no_replacement", "With `replacement=False` every item is drawn exactly once per epoch, so "
                "the class balance does not change at all. Use `replacement=True`.", _sampler_no_replacement),
        Mistake("ignored_generator", "You did not pass `generator` on to the sampler, so its draws cannot be "
                "reproduced.", _sampler_ignores_generator, match_output=False),
    ],
    hints=[
        "`class_counts = torch.bincount(y)` counts the items of each class; `class_counts[y]` gives every "
        "item the size of its own class.",
        "Weights `1.0 / class_counts[y]` make each class's weights sum to 1, so every class is equally "
        "likely. Draw `len(y)` items with replacement.",
    ],
))


# --------------------------------------------------------------------------- 4. pad_collate
def pad_collate(batch):
    """Batch (tokens, label) pairs of different lengths: padded tokens, lengths, labels."""
    seqs = [tokens for tokens, _ in batch]
    lengths = torch.tensor([len(s) for s in seqs])
    padded = pad_sequence(seqs, batch_first=True, padding_value=PAD)
    labels = torch.stack([label for _, label in batch])
    return padded, lengths, labels


def _collate_not_batch_first(batch):
    seqs = [t for t, _ in batch]
    return (pad_sequence(seqs, padding_value=PAD), torch.tensor([len(s) for s in seqs]),
            torch.stack([lab for _, lab in batch]))


def _collate_fixed_length(batch, max_len=12):
    padded = torch.full((len(batch), max_len), PAD, dtype=torch.int64)
    for i, (t, _) in enumerate(batch):
        padded[i, : len(t)] = t
    return padded, torch.tensor([len(t) for t, _ in batch]), torch.stack([lab for _, lab in batch])


def _collate_no_lengths(batch):
    seqs = [t for t, _ in batch]
    return pad_sequence(seqs, batch_first=True, padding_value=PAD), torch.stack([lab for _, lab in batch])


def _collate_labels_list(batch):
    seqs = [t for t, _ in batch]
    return (pad_sequence(seqs, batch_first=True, padding_value=PAD), torch.tensor([len(s) for s in seqs]),
            [lab for _, lab in batch])


def _collate_cases(r: Rand) -> Case:
    b = r.integer(1, 6)
    batch = [(torch.randint(1, 20, (r.integer(1, 9),), generator=r.torch),
              torch.tensor(r.integer(0, 1))) for _ in range(b)]
    return Case((batch,))


def _collate_run(answer, case: Case):
    (batch,) = case.args
    given = list(batch)
    out = answer(given)
    if len(given) != len(batch) or any(a is not b for a, b in zip(given, batch)):
        raise Incorrect("mutated_input", "Your function changed the list `batch` it was given (`pop`, `del`, "
                        "`sort`, assigning items): read it without modifying it, the DataLoader may still use it.")
    return out


register(Exercise(
    lesson=LESSON, name="pad_collate", title="A collate_fn that pads ragged sequences",
    reference=pad_collate, cases=_collate_cases, run=_collate_run, arg_names=["batch"],
    edge_cases=[
        Case(([(torch.tensor([5, 6, 7]), torch.tensor(1)), (torch.tensor([8]), torch.tensor(0))],),
             label="lengths 3 and 1", show_inputs=True),
        Case(([(torch.tensor([4, 4]), torch.tensor(0))],), label="a batch of one"),
    ],
    mistakes=[
        Mistake("not_batch_first", "Your padded tensor is (longest, batch): `pad_sequence` puts time first "
                "unless you pass `batch_first=True`.", _collate_not_batch_first),
        Mistake("fixed_length", "You pad to a fixed length; pad only to the longest sequence *in this "
                "batch*, which saves work on batches of short sequences.", _collate_fixed_length),
        Mistake("no_lengths", "Return three things: the padded tokens, the lengths (int64 tensor) and the "
                "labels. Without the lengths a model cannot tell padding from tokens.", _collate_no_lengths),
        Mistake("labels_not_stacked", "The labels must be one tensor of shape (batch,): `torch.stack` the "
                "0-dim label tensors.", _collate_labels_list),
    ],
    hints=[
        "`batch` is a list of `(tokens, label)` pairs: split it with two list comprehensions.",
        "`torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_value=PAD)` pads to the longest.",
        "`lengths = torch.tensor([len(s) for s in seqs])`; `labels = torch.stack(labels)`.",
    ],
))


# --------------------------------------------------------------------------- 5. ShardedRange
class _NoSharding(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        return iter(range(self.start, self.end))


class _DropsRemainder(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        per_worker = (self.end - self.start) // info.num_workers
        lo = self.start + info.id * per_worker
        return iter(range(lo, lo + per_worker))


class _NoMainProcessPath(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        return iter(range(self.start + info.id, self.end, info.num_workers))


def _as_int(v) -> int:
    if isinstance(v, bool):
        raise TypeError
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, torch.Tensor) and v.numel() == 1 and not v.is_floating_point():
        return int(v)
    raise TypeError


def _items(iterable, cap: int, label: str) -> list[int]:
    got = list(itertools.islice(iter(iterable), cap + 1))
    if len(got) > cap:
        raise Incorrect("too_many_items", f"{label} your dataset yielded more than {cap} items, more than "
                        "the whole range: does `__iter__` stop?")
    try:
        return [_as_int(v) for v in got]
    except TypeError:
        raise Incorrect("wrong_item_type", "Yield the integers themselves (Python ints), one at a time.") from None


def _judge_stream(got: list[int], start: int, end: int, num_workers: int, how: str) -> None:
    want = collections.Counter(range(start, end))
    have = collections.Counter(got)
    if have == want:
        return
    size = end - start
    if set(have) - set(want):
        raise Incorrect("wrong_items", f"{how} your dataset yielded values outside `range(start, end)`.")
    if num_workers > 1 and all(have[v] == num_workers for v in want):
        raise Incorrect("no_sharding", f"{how} every item arrived {num_workers} times: each worker iterates "
                        "its own copy of the dataset, so `__iter__` must yield only this worker's share "
                        "(use `torch.utils.data.get_worker_info()`: `.id` and `.num_workers`).")
    missing = sum(1 for v in want if have[v] == 0)
    dup = sum(1 for v in want if have[v] > 1)
    if missing and not dup:
        raise Incorrect("missing_items", f"{how} {missing} of the {size} items never arrived. When the range "
                        "does not divide evenly between workers, the shares must still cover all of it "
                        "(a stride `range(start + id, end, num_workers)` always does).")
    raise Incorrect("duplicated_items", f"{how} {dup} items arrived more than once and {missing} never: the "
                    "workers' shares must not overlap and must cover the range.")


def _sharded_cases(r: Rand) -> Case:
    start = r.integer(-5, 20)
    return Case((start, start + r.integer(0, 23)))


def _sharded_run(answer, case: Case):
    _clear_stale_worker_info()
    start, end = case.args
    ds = _construct(answer, start, end)
    if not isinstance(ds, IterableDataset):
        raise Incorrect("not_iterable_dataset", "Subclass `torch.utils.data.IterableDataset`: a DataLoader "
                        "only treats those as streams (anything else is indexed with `dataset[i]`).")
    cap = max(end - start, 0) + 1
    main_copy = copy.deepcopy(ds)
    try:
        got = _items(main_copy, cap, "Without workers")
    except (AttributeError, TypeError) as exc:
        if "NoneType" in str(exc):
            raise Incorrect("no_main_process_path", "With `num_workers=0` (or iterating the dataset "
                            "directly) `get_worker_info()` returns None: handle that case by yielding the "
                            "whole range.") from None
        raise
    _judge_stream(got, start, end, 1, "Without workers")
    # a second epoch iterates the same object again (num_workers=0, or persistent workers)
    _same_next_epoch(got, _items(main_copy, cap, "In a second epoch without workers"))
    if _CAN_SIMULATE:
        for n in (1, 2, 3):
            epochs = []
            for k in range(n):
                worker_copy = copy.deepcopy(ds)
                with as_worker(k, n, 1234, worker_copy):
                    epochs.append((_items(worker_copy, cap, f"In worker {k} of {n}"),
                                   _items(worker_copy, cap, f"In worker {k} of {n}, second epoch")))
            _judge_stream([v for first, _ in epochs for v in first], start, end, n, f"With num_workers={n}")
            fair = math.ceil(max(end - start, 0) / n)
            if any(len(first) > fair for first, _ in epochs):
                raise Incorrect("unbalanced_shards", f"With num_workers={n} one worker yielded "
                                f"{max(len(first) for first, _ in epochs)} of the {end - start} items, more than "
                                f"its share (at most {fair}): \"let each copy yield only its share\", so the "
                                "workers split the work (a stride `range(start + id, end, num_workers)` does).")
            for first, second in epochs:
                _same_next_epoch(first, second)
    return True


def _same_next_epoch(first: list[int], second: list[int]) -> None:
    if sorted(first) != sorted(second):
        raise Incorrect("not_repeatable", "Iterating the same dataset object a second time (the next epoch: "
                        "with `num_workers=0`, or with `persistent_workers=True`) gave other items. Compute "
                        "this worker's share inside `__iter__` from `self.start`, `self.end` and "
                        "`get_worker_info()` without changing `self`, and return a fresh iterator every time.")


def _real_workers_probe(answer, r: Rand) -> None:
    """Iterate through a real DataLoader with 1 and 2 worker processes (fork start method only:
    under spawn/forkserver a notebook-defined class cannot reach the workers)."""
    method = multiprocessing.get_start_method(allow_none=True) or multiprocessing.get_all_start_methods()[0]
    if method != "fork":
        return
    start = r.integer(0, 10)
    end = start + r.integer(5, 13)
    for n in (1, 2):
        loader = DataLoader(answer(start, end), batch_size=None, num_workers=n, timeout=5)
        got = _items(loader, (end - start) * n + 1, f"Through a DataLoader with {n} worker processes")
        _judge_stream(got, start, end, n, f"Through a real DataLoader with num_workers={n}")


register(Exercise(
    lesson=LESSON, name="ShardedRange", title="An IterableDataset that shards its items across workers",
    reference=ShardedRange, kind="any", run=_sharded_run, cases=_sharded_cases, n_random=6,
    timeout=10.0,  # the probe starts real worker processes: seconds on a busy machine
    edge_cases=[Case((0, 7), label="range(0, 7): odd, not divisible by 2 or 3 workers"),
                Case((3, 3), label="an empty range")],
    probes=[_real_workers_probe],
    mistakes=[
        Mistake("no_sharding", "Every worker yields the whole range, so with 2 workers every item arrives "
                "twice. Ask `get_worker_info()` which worker you are and yield only that share.",
                _NoSharding, match_output=False),
        Mistake("missing_items", "Your chunks drop the remainder: when the range does not divide evenly, "
                "the last items never arrive. A stride `range(start + info.id, end, info.num_workers)` "
                "covers everything.", _DropsRemainder, match_output=False),
        Mistake("no_main_process_path", "`get_worker_info()` is None when there are no workers (and when "
                "you iterate the dataset yourself); then yield the whole range.",
                _NoMainProcessPath, match_output=False),
    ],
    hints=[
        "Inside `__iter__`, `info = torch.utils.data.get_worker_info()` is None in the main process and "
        "describes the current worker inside a worker (`info.id`, `info.num_workers`).",
        "If `info is None`, return `iter(range(self.start, self.end))`; otherwise give worker `info.id` the "
        "items `self.start + info.id`, `self.start + info.id + info.num_workers`, ...",
    ],
))


# --------------------------------------------------------------------------- 6. reseed_worker
def _reseed_nothing(worker_id):
    pass


def _reseed_worker_id_only(worker_id):
    info = torch.utils.data.get_worker_info()
    info.dataset.rng = np.random.default_rng(worker_id)


def _reseed_global_numpy(worker_id):
    info = torch.utils.data.get_worker_info()
    np.random.seed(info.seed % 2**32)


def _reseed_from_os(worker_id):
    info = torch.utils.data.get_worker_info()
    info.dataset.rng = np.random.default_rng()


def _reseed_constant(worker_id):
    info = torch.utils.data.get_worker_info()
    info.dataset.rng = np.random.default_rng(0)


def _reseed_cases(r: Rand) -> Case:
    # the dataset's own seed is never a small constant a learner might reseed with (0, 42, a worker id)
    return Case(kwargs=dict(base_seeds=(r.integer(0, 2**62), r.integer(0, 2**62)), data_seed=r.integer(10**4, 10**6)))


def _np_state_key() -> bytes:
    state = np.random.get_state()
    return state[1].tobytes() + bytes([state[2] % 256])


def _reseed_run(answer, case: Case):
    _clear_stale_worker_info()
    if not callable(answer):
        raise Incorrect("wrong_type", f"You passed a {type(answer).__name__}; pass your function itself.")
    (base1, base2), data_seed = case.kwargs["base_seeds"], case.kwargs["data_seed"]
    touched_global = False

    def streams(base):
        nonlocal touched_global
        out = []
        for k in range(2):
            ds = NoisyItems(n=4, seed=data_seed)  # this worker's copy of the dataset
            with as_worker(k, 2, base, ds):
                before = _np_state_key()
                seed_before, py_before = torch.initial_seed(), random.getstate()
                answer(k)
                touched_global = touched_global or _np_state_key() != before
                py_after = random.getstate()
                # reseeding `random` leaves the Mersenne Twister at position 624 (a fresh state);
                # drawing from it (valid: torch seeded it per worker) moves the position
                py_reseeded = py_after != py_before and py_after[1][-1] == 624
                if torch.initial_seed() != seed_before or py_reseeded:
                    raise Incorrect("reseeded_torch_or_random", "Your function reseeded torch's or Python's "
                                    "`random` global generator in the worker. The DataLoader already seeds both "
                                    "with a per-worker, per-epoch seed; reseeding them (e.g. from `worker_id`) "
                                    "makes torch/`random` augmentations repeat every epoch. Only replace "
                                    "`get_worker_info().dataset.rng`.")
            rng = getattr(ds, "rng", None)
            if not isinstance(rng, np.random.Generator):
                raise Incorrect("not_a_generator", "After your function, `dataset.rng` must still be a NumPy "
                                "Generator (`np.random.default_rng(...)`).")
            out.append(tuple(rng.random(3).tolist()))
        return out

    untouched = tuple(NoisyItems(n=4, seed=data_seed).rng.random(3).tolist())
    first = streams(base1)
    if first[0] == untouched and first[1] == untouched:
        if touched_global:
            raise Incorrect("seeded_global_rng", "You reseeded NumPy's *global* RNG (torch already does that "
                            "in every worker); the dataset draws from its own `self.rng`, which is still the "
                            "identical copy in every worker. Replace `get_worker_info().dataset.rng`.")
        raise Incorrect("not_reseeded", "Every worker still draws the same numbers: the dataset's `rng` is "
                        "the copy made in `__init__`. Give `get_worker_info().dataset.rng` a new generator "
                        "seeded from `get_worker_info().seed`.")
    if first[0] == first[1]:
        raise Incorrect("same_in_every_worker", "Both workers got generators with the same seed: use the "
                        "per-worker seed `get_worker_info().seed`.")
    if streams(base1) != first:
        raise Incorrect("not_reproducible", "The same torch seed gave different numbers: seed the new "
                        "generator from `get_worker_info().seed` (reproducible), not from the operating system.")
    second = streams(base2)
    if second[0] == first[0] or second[1] == first[1]:
        raise Incorrect("same_every_epoch", "A worker draws the same numbers every epoch: a seed built from "
                        "`worker_id` alone never changes. `get_worker_info().seed` differs per worker *and* "
                        "per epoch.")
    return True


register(Exercise(
    lesson=LESSON, name="reseed_worker", title="A worker_init_fn that gives every worker its own NumPy generator",
    reference=reseed_worker, kind="function", run=_reseed_run, cases=_reseed_cases, n_random=4, timeout=6.0,
    mistakes=[
        Mistake("not_reseeded", "Your function leaves the dataset's generator alone, so every worker repeats "
                "the same random numbers.", _reseed_nothing, match_output=False),
        Mistake("same_every_epoch", "Seeding with `worker_id` makes workers differ from each other, but every "
                "epoch repeats the last one's augmentations. Use `get_worker_info().seed`.",
                _reseed_worker_id_only, match_output=False),
        Mistake("seeded_global_rng", "Seeding NumPy's global RNG does not touch the generator stored on the "
                "dataset. Replace `get_worker_info().dataset.rng`.", _reseed_global_numpy, match_output=False),
        Mistake("not_reproducible", "`np.random.default_rng()` without a seed takes fresh entropy from the "
                "operating system: runs can no longer be repeated. Seed it from `get_worker_info().seed`.",
                _reseed_from_os, match_output=False),
        Mistake("same_in_every_worker", "A constant seed gives every worker the same generator again.",
                _reseed_constant, match_output=False),
    ],
    hints=[
        "Inside a worker, `info = torch.utils.data.get_worker_info()` has `info.dataset` (this worker's copy "
        "of the dataset) and `info.seed` (a seed torch chose for this worker and this epoch).",
        "`info.dataset.rng = np.random.default_rng(info.seed)`.",
    ],
))
