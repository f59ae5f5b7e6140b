"""Lesson 04 (data): what the generic grader tests cannot see.

- the worker simulation used by the graders matches what real DataLoader workers observe;
- real worker processes show the behaviours the lesson demonstrates (duplicates without
  sharding, identical NumPy noise, the fix);
- reasonable alternative answers pass, and the graders clean up after themselves;
- the plain functions behind the lesson's widgets and plots.
"""

from __future__ import annotations

import collections
import math
import multiprocessing
import random

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from torch.nn.utils.rnn import pad_sequence  # noqa: E402
from torch.utils.data import (  # noqa: E402
    DataLoader, Dataset, IterableDataset, TensorDataset, WeightedRandomSampler, get_worker_info,
)

from course_utils import grading  # noqa: E402
from course_utils.datasets import PAD  # noqa: E402
from course_utils.lesson_props import l04_data_lab as data_lab  # noqa: E402
from course_utils.lesson_props import l04_data_workers as dw  # noqa: E402
from course_utils.exercises.l04_data import _kit, sharded_range, stratified_split, window_dataset  # noqa: E402

from grading_asserts import accepted, rejected  # noqa: E402 (tests/ is on sys.path)
from lesson_kit import Tables, define, fixed_and_random_cases, notebook_source  # noqa: E402

LESSON = "04_data"
FORK = (multiprocessing.get_start_method(allow_none=True) or multiprocessing.get_all_start_methods()[0]) == "fork"
needs_fork = pytest.mark.skipif(not FORK, reason="real-worker probes run only where workers fork")


def check(name, answer, seed=None):
    return grading.check(f"04_data.{name}", answer, seed=seed)


# --------------------------------------------------------------------------- simulation fidelity
class _WhatWorkersSee(IterableDataset):
    """Yields, once per worker, what a worker can observe about itself."""

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        yield (info.id, info.num_workers, info.seed, torch.initial_seed(), float(np.random.random()),
               isinstance(info.dataset, _WhatWorkersSee))


def test_simulated_workers_see_what_real_workers_see():
    g = torch.Generator().manual_seed(123)
    real = sorted(DataLoader(_WhatWorkersSee(), batch_size=None, num_workers=2, generator=g))
    # the loader draws its base seed from its generator exactly like this
    base_seed = int(torch.empty((), dtype=torch.int64).random_(generator=torch.Generator().manual_seed(123)).item())
    simulated = []
    for k in range(2):
        ds = _WhatWorkersSee()
        with _kit.as_worker(k, 2, base_seed, ds):
            simulated.extend(iter(ds))
    assert [tuple(r) for r in real] == simulated
    assert torch.utils.data.get_worker_info() is None


def test_worker_info_is_reset_even_when_learner_code_raises():
    class Explodes(IterableDataset):
        def __init__(self, start, end):
            self.start, self.end = start, end

        def __iter__(self):
            if torch.utils.data.get_worker_info() is not None:
                raise ZeroDivisionError("boom")
            return iter(range(self.start, self.end))

    res = check("ShardedRange", Explodes)
    assert not res.passed and res.mistake == "exception"
    assert torch.utils.data.get_worker_info() is None


# --------------------------------------------------------------------------- real workers
@pytest.mark.parametrize("num_workers", [0, 1, 2])
def test_reference_sharded_range_with_real_workers(num_workers):
    items = [int(v) for v in DataLoader(dw.ShardedRange(3, 14), batch_size=None, num_workers=num_workers)]
    assert sorted(items) == list(range(3, 14))


def test_unsharded_range_duplicates_with_real_workers():
    items = [int(v) for v in DataLoader(dw.UnshardedRange(0, 5), batch_size=None, num_workers=2)]
    assert sorted(items) == sorted(list(range(5)) * 2)


def _noise(loader):
    return [round(float(v) - i, 4) for i, v in enumerate(loader)]


def test_noisy_items_repeat_across_workers_and_reseed_fixes_it():
    trap = _noise(DataLoader(dw.NoisyItems(n=8, seed=0), batch_size=None, num_workers=2))
    assert trap[0::2] == trap[1::2], "workers 0 and 1 should draw identical noise"
    fixed = [_noise(DataLoader(dw.NoisyItems(n=8, seed=0), batch_size=None, num_workers=2,
                               worker_init_fn=dw.reseed_worker, generator=torch.Generator().manual_seed(s)))
             for s in (0, 0, 1)]
    assert fixed[0][0::2] != fixed[0][1::2]
    assert fixed[0] == fixed[1], "a seeded loader generator makes the noise reproducible"
    assert fixed[0] != fixed[2]


@needs_fork
def test_real_worker_probe_catches_what_simulation_cannot():
    class ShardsOnlyInSimulation(IterableDataset):
        """Correct in one process, but every real worker process yields everything."""

        def __init__(self, start, end):
            self.start, self.end = start, end

        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            if info is None or multiprocessing.current_process().name != "MainProcess":
                return iter(range(self.start, self.end))
            return iter(range(self.start + info.id, self.end, info.num_workers))

    res = check("ShardedRange", ShardsOnlyInSimulation, seed=4)
    assert not res.passed and res.mistake == "no_sharding", res.text()
    assert "real DataLoader" in res.message


def test_sharded_range_check_without_simulation_still_uses_real_workers(monkeypatch):
    monkeypatch.setattr(_kit, "_CAN_SIMULATE", False)
    res = check("ShardedRange", sharded_range._NoSharding, seed=1)
    if FORK:
        assert not res.passed and res.mistake == "no_sharding"
    assert check("ShardedRange", dw.ShardedRange, seed=1).passed


# --------------------------------------------------------------------------- alternatives pass
class _WindowsByUnfold(torch.utils.data.Dataset):
    def __init__(self, series, window, horizon=1):
        n = len(series) - window - horizon + 1
        self.X = series.unfold(0, window, 1)[:n] if n > 0 else series.new_zeros(0, window)
        self.y = series[window + horizon - 1 :][: max(n, 0)]

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.X[i], self.y[i]


def _sampler_max_normalised(y, generator=None):
    counts = torch.bincount(y).float()
    return WeightedRandomSampler((counts.max() / counts)[y], len(y), replacement=True, generator=generator)


def _collate_by_hand(batch):
    longest = max(len(t) for t, _ in batch)
    padded = torch.zeros(len(batch), longest, dtype=torch.int64)
    for i, (t, _) in enumerate(batch):
        padded[i, : len(t)] = t
    return padded, torch.tensor([len(t) for t, _ in batch]), torch.tensor([int(lab) for _, lab in batch])


class _ChunkedRange(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        if info is None:
            yield from range(self.start, self.end)
            return
        per = -(-(self.end - self.start) // info.num_workers)
        lo = self.start + info.id * per
        yield from range(lo, min(lo + per, self.end))


def _reseed_with_sequence(worker_id):
    info = torch.utils.data.get_worker_info()
    info.dataset.rng = np.random.default_rng([info.id, info.seed % 2**32, info.seed >> 32])


def _reseed_docs_style(worker_id):
    seed = torch.initial_seed() % 2**32  # the pattern in PyTorch's documentation
    torch.utils.data.get_worker_info().dataset.rng = np.random.default_rng(seed)


@pytest.mark.parametrize("name,answer", [
    ("WindowDataset", _WindowsByUnfold),
    ("balanced_sampler", _sampler_max_normalised),
    ("pad_collate", _collate_by_hand),
    ("ShardedRange", _ChunkedRange),
    ("reseed_worker", _reseed_with_sequence),
    ("reseed_worker", _reseed_docs_style),
])
def test_reasonable_alternatives_pass(name, answer):
    for seed in (1, 2, 3):
        res = check(name, answer, seed=seed)
        assert res.passed, res.text()


def test_wrong_kind_of_answer_is_explained():
    res = check("WindowDataset", window_dataset.WindowDataset(torch.arange(5.0), 2))
    assert res.mistake == "wrong_type" and "instance" in res.message
    res = check("pad_collate", lambda batch: pad_sequence([t for t, _ in batch], batch_first=True))
    assert not res.passed and res.mistake == "wrong_type"


def test_stratified_messages_do_not_leak_expected_indices():
    res = check("stratified_split", stratified_split._split_not_stratified, seed=9)
    assert res.mistake == "not_stratified"
    assert "tensor(" not in res.message


# --------------------------------------------------------------------------- widget / plot logic
@pytest.mark.parametrize("n,bs,drop", [(100, 32, False), (100, 32, True), (64, 64, False), (5, 8, False),
                                       (5, 8, True), (0, 3, False)])
def test_batch_sizes_match_a_real_dataloader(n, bs, drop):
    loader = DataLoader(TensorDataset(torch.arange(n)), batch_size=bs, drop_last=drop)
    assert data_lab.batch_sizes(n, bs, drop) == [len(b[0]) for b in loader]
    with pytest.raises(ValueError):
        data_lab.batch_sizes(n, 0)


def test_plots_return_figures():
    import matplotlib.pyplot as plt

    y = torch.tensor([0] * 20 + [1] * 5)
    figs = [
        data_lab.plot_batch_sizes(100, 32, False),
        data_lab.plot_class_balance(y, {"drawn": torch.arange(25)}),
        data_lab.plot_worker_throughput({"a": {0: 10.0, 2: 20.0}, "b": {0: 5.0, 1: 1.0}}),
    ]
    assert all(isinstance(f, matplotlib.figure.Figure) for f in figs)
    assert data_lab.class_counts_drawn(y, [0, 0, 24]).tolist() == [2, 1]
    plt.close("all")


def test_time_loader_and_slow_items():
    ds = dw.SlowItems(n=8, work=10)
    x, label = ds[3]
    assert x.shape == (16,) and x.dtype == torch.float32 and int(label) == 3
    assert dw.time_loader(DataLoader(ds, batch_size=4)) > 0


# --------------------------------------------------------------------------- the instructor's sandbox
# =========================================================================== adversarial
# (moved from test_adversarial_l04_l08.py) Answers that violate the exercise text are rejected
# (naming the mistake where a name fits); correct answers written differently are accepted.
# =========================================================================== 04 data
D = "04_data."


class _Windows(Dataset):
    def __init__(self, series, window, horizon=1):
        self.series, self.window, self.horizon = series, window, horizon

    def __len__(self):
        return max(0, len(self.series) - self.window - self.horizon + 1)

    def __getitem__(self, i):
        return self.series[i : i + self.window], self.series[i + self.window + self.horizon - 1]


def test_window_dataset_with_a_wrong_default_horizon_is_rejected():
    class DefaultHorizonTwo(_Windows):
        def __init__(self, series, window, horizon=2):
            super().__init__(series, window, horizon)

    rejected(D + "WindowDataset", DefaultHorizonTwo, "wrong_default_horizon")


def test_window_dataset_alternatives_pass():
    class Precomputed(Dataset):  # stores no `horizon` attribute at all
        def __init__(self, series, window, horizon=1):
            n = len(series) - window - horizon + 1
            self.pairs = [(series[i : i + window].clone(), series[i + window + horizon - 1].clone()) for i in range(n)]

        def __len__(self):
            return len(self.pairs)

        def __getitem__(self, i):
            return self.pairs[i]

    accepted(D + "WindowDataset", Precomputed)
    accepted(D + "WindowDataset", _Windows)


def _split(y, f, shuffle):
    train, test = [], []
    for c in torch.unique(y):
        idx = (y == c).nonzero().flatten()
        idx = shuffle(idx)
        k = round(len(idx) * f)
        test.append(idx[:k])
        train.append(idx[k:])
    return torch.cat(train), torch.cat(test)


def test_split_that_reseeds_the_global_rng_is_rejected():
    """Reproducible, but it uses (and resets) the notebook's global RNG, which the text forbids."""

    def global_seeded(y, test_fraction, generator):
        torch.manual_seed(generator.initial_seed())
        return _split(y, test_fraction, lambda idx: idx[torch.randperm(len(idx))])

    def python_random(y, test_fraction, generator):
        random.seed(generator.initial_seed())
        return _split(y, test_fraction, lambda idx: idx[torch.tensor(random.sample(range(len(idx)), len(idx)))])

    rejected(D + "stratified_split", global_seeded, "used_global_rng")
    rejected(D + "stratified_split", python_random, "used_global_rng")


def test_split_that_shuffles_only_some_classes_is_rejected():
    def first_class_only(y, test_fraction, generator):
        done = []

        def shuffle(idx):
            if done:
                return idx  # the other classes keep the data order
            done.append(1)
            return idx[torch.randperm(len(idx), generator=generator)]

        return _split(y, test_fraction, shuffle)

    rejected(D + "stratified_split", first_class_only, "class_not_shuffled")


def test_split_alternatives_pass():
    def one_permutation_then_by_class(y, test_fraction, generator):
        perm = torch.randperm(len(y), generator=generator)
        train, test = [], []
        for c in y.unique():
            idx = perm[y[perm] == c]
            k = round(len(idx) * test_fraction)
            test.append(idx[:k])
            train.append(idx[k:])
        return torch.cat(train), torch.cat(test)

    def numpy_from_generator(y, test_fraction, generator):
        rng = np.random.default_rng(int(torch.randint(0, 2**31, (1,), generator=generator)))
        return _split(y, test_fraction, lambda idx: idx[torch.from_numpy(rng.permutation(len(idx)))])

    accepted(D + "stratified_split", one_permutation_then_by_class, n_random=20)
    accepted(D + "stratified_split", numpy_from_generator, n_random=20)


def test_sampler_with_negative_weights_is_rejected():
    """w / w.sum() made -1/count look like 1/count; such a sampler raises when iterated."""

    def negative(y, generator=None):
        counts = torch.bincount(y)
        return WeightedRandomSampler(-1.0 / counts[y].double(), len(y), replacement=True, generator=generator)

    rejected(D + "balanced_sampler", negative, "invalid_weights")


def test_sampler_subclass_that_does_not_sample_is_rejected():
    class Sequential(WeightedRandomSampler):
        def __iter__(self):
            return iter(range(self.num_samples))

    def fake(y, generator=None):
        counts = torch.bincount(y)
        return Sequential(1.0 / counts[y].double(), len(y), replacement=True, generator=generator)

    rejected(D + "balanced_sampler", fake, "draws_differ")


def test_sampler_with_huge_num_samples_is_rejected_quickly():
    def huge(y, generator=None):
        counts = torch.bincount(y)
        return WeightedRandomSampler(1.0 / counts[y].double(), 10**9, replacement=True, generator=generator)

    rejected(D + "balanced_sampler", huge, "epoch_length")


def test_sampler_alternatives_pass():
    def python_lists(y, generator=None):
        counts = torch.bincount(y).tolist()
        return WeightedRandomSampler([1 / counts[int(t)] for t in y], len(y), True, generator=generator)

    def float32_weights(y, generator=None):
        counts = torch.bincount(y).float()
        return WeightedRandomSampler(1.0 / counts[y], num_samples=len(y), generator=generator)

    accepted(D + "balanced_sampler", python_lists, n_random=20)
    accepted(D + "balanced_sampler", float32_weights, n_random=20)


def _lengths_labels(batch, seqs):
    return torch.tensor([len(s) for s in seqs]), torch.stack([lab for _, lab in batch])


def test_collate_padding_mistakes_are_rejected():
    def left_padded(batch):
        seqs = [t for t, _ in batch]
        longest = max(len(s) for s in seqs)
        padded = torch.zeros(len(seqs), longest, dtype=torch.int64)
        for i, s in enumerate(seqs):
            padded[i, longest - len(s) :] = s
        return (padded, *_lengths_labels(batch, seqs))

    def pads_with_minus_one(batch):
        seqs = [t for t, _ in batch]
        return (pad_sequence(seqs, batch_first=True, padding_value=-1), *_lengths_labels(batch, seqs))

    def sorted_by_length(batch):
        batch = sorted(batch, key=lambda item: -len(item[0]))
        seqs = [t for t, _ in batch]
        return (pad_sequence(seqs, batch_first=True), *_lengths_labels(batch, seqs))

    def float_padded(batch):
        seqs = [t for t, _ in batch]
        return (pad_sequence(seqs, batch_first=True).float(), *_lengths_labels(batch, seqs))

    def int32_lengths(batch):
        seqs = [t for t, _ in batch]
        lengths, labels = _lengths_labels(batch, seqs)
        return pad_sequence(seqs, batch_first=True), lengths.int(), labels

    rejected(D + "pad_collate", left_padded, "left_padded", n_random=0)
    rejected(D + "pad_collate", pads_with_minus_one, "pad_value", n_random=0)
    rejected(D + "pad_collate", sorted_by_length, "sorted_rows")  # row i must stay batch[i], as in default_collate
    rejected(D + "pad_collate", float_padded, "wrong_dtype", n_random=0)
    rejected(D + "pad_collate", int32_lengths, "wrong_dtype", n_random=0)


def test_collate_alternative_lengths_from_padding_pass():
    def count_tokens(batch):  # PAD never occurs inside a sequence
        seqs = [t for t, _ in batch]
        padded = pad_sequence(seqs, batch_first=True)
        return padded, (padded != 0).sum(dim=1), torch.tensor([int(lab) for _, lab in batch])

    accepted(D + "pad_collate", count_tokens, n_random=20)


class _MutatesSelf(IterableDataset):
    """Shifts `self.start` for its worker: right in the first epoch, wrong in the second."""

    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        self.start = self.start + info.id
        return iter(range(self.start, self.end, info.num_workers))


class _OneShot(IterableDataset):
    """Keeps its first iterator: a second epoch yields nothing."""

    def __init__(self, start, end):
        self.start, self.end = start, end
        self.it = None

    def __iter__(self):
        if self.it is None:
            info = get_worker_info()
            n, k = (1, 0) if info is None else (info.num_workers, info.id)
            self.it = iter(range(self.start + k, self.end, n))
        return self.it


def test_sharded_range_that_breaks_in_the_next_epoch_is_rejected():
    rejected(D + "ShardedRange", _MutatesSelf, "not_repeatable")
    rejected(D + "ShardedRange", _OneShot, "not_repeatable")


def test_sharded_range_generator_alternative_passes():
    class Generator(IterableDataset):
        def __init__(self, start, end):
            self.start, self.end = start, end

        def __iter__(self):
            info = get_worker_info()
            k, n = (0, 1) if info is None else (info.id, info.num_workers)
            for v in range(self.start, self.end):
                if (v - self.start) % n == k:
                    yield v

    accepted(D + "ShardedRange", Generator)


def test_reseed_alternative_from_worker_random_state_passes():
    def from_global_random(worker_id):  # torch seeds `random` per worker and per epoch
        get_worker_info().dataset.rng = np.random.default_rng(random.getrandbits(64))

    accepted(D + "reseed_worker", from_global_random)


@pytest.mark.parametrize("exercise_id", [D + "stratified_split", D + "balanced_sampler", D + "ShardedRange"])
def test_new_checks_leave_caller_state_alone(exercise_id):
    torch.manual_seed(5)
    before = torch.get_rng_state()
    threads = torch.get_num_threads()
    with torch.no_grad():
        res = grading.check(exercise_id, grading.reference(exercise_id), seed=7, n_random=3)
        assert not torch.is_grad_enabled()
    assert res.passed, res.text()
    assert torch.equal(torch.get_rng_state(), before)
    assert torch.get_num_threads() == threads


# =========================================================================== oracles
# (moved from test_oracle_l04_l08.py, issue 11) Each reference compared with a torch / NumPy /
# scikit-learn built-in that computes the same thing another way, across the exercise's whole case
# generator (many seeds) and its fixed edge cases.
ORACLE_SEEDS = range(60)


def _cases(exercise_id, seeds=ORACLE_SEEDS):
    return fixed_and_random_cases(exercise_id, seeds)

# --------------------------------------------------------------------------- 04
def test_window_dataset_matches_numpy_sliding_window_view():
    ref = grading.reference("04_data.WindowDataset")
    for case in _cases("04_data.WindowDataset"):
        series, window, horizon = case.args
        ds = ref(series, window, horizon)
        if len(series) < window + horizon:  # NumPy refuses a window longer than the array: no windows
            assert len(ds) == 0
            continue
        views = np.lib.stride_tricks.sliding_window_view(series.numpy(), window + horizon)
        assert len(ds) == len(views)
        for i, v in enumerate(views):
            x, y = ds[i]
            np.testing.assert_array_equal(x.numpy(), v[:window])
            assert float(y) == v[-1]


def test_stratified_split_counts_match_sklearn():
    from sklearn.model_selection import train_test_split

    ref = grading.reference("04_data.stratified_split")
    for case in _cases("04_data.stratified_split"):
        (y, frac), seed = case.args, case.kwargs["seed"]
        tr, te = ref(y, frac, torch.Generator().manual_seed(seed))
        assert tr.dtype == te.dtype == torch.int64
        assert sorted(torch.cat([tr, te]).tolist()) == list(range(len(y)))
        mine = collections.Counter(y[te].tolist())
        for c, n_c in collections.Counter(y.tolist()).items():
            assert mine[c] == round(n_c * frac)  # the text's rule
        if len(set(y.tolist())) > 1 and min(collections.Counter(y.tolist()).values()) > 1:
            _, sk_test = train_test_split(np.arange(len(y)), test_size=frac, stratify=y.numpy(), random_state=0)
            theirs = collections.Counter(y.numpy()[sk_test].tolist())
            # sklearn fixes the total first, then shares it out: per class within one item of round()
            assert all(abs(mine[c] - theirs[c]) <= 1 for c in set(y.tolist()))


def test_balanced_sampler_weights_match_sklearn_balanced_class_weight():
    from sklearn.utils.class_weight import compute_class_weight

    ref = grading.reference("04_data.balanced_sampler")
    for case in _cases("04_data.balanced_sampler"):
        (y,) = case.args
        s = ref(y, generator=torch.Generator().manual_seed(0))
        classes = np.unique(y.numpy())
        cw = dict(zip(classes, compute_class_weight("balanced", classes=classes, y=y.numpy())))
        oracle = np.array([cw[c] for c in y.numpy()])
        w = torch.as_tensor(s.weights, dtype=torch.float64).numpy()
        np.testing.assert_allclose(w / w.sum(), oracle / oracle.sum(), rtol=1e-12)
        assert s.num_samples == len(y) and s.replacement


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_pad_collate_matches_nested_tensor_padding():
    ref = grading.reference("04_data.pad_collate")
    for case in _cases("04_data.pad_collate"):
        (batch,) = case.args
        padded, lengths, labels = ref(batch)
        nested = torch.nested.nested_tensor([t for t, _ in batch])
        torch.testing.assert_close(padded, nested.to_padded_tensor(0))
        packed = torch.nn.utils.rnn.pack_sequence([t for t, _ in batch], enforce_sorted=False)
        _, oracle_lengths = torch.nn.utils.rnn.pad_packed_sequence(packed, batch_first=True)
        torch.testing.assert_close(lengths, oracle_lengths)
        torch.testing.assert_close(labels, torch.utils.data.default_collate([lab for _, lab in batch]))


@pytest.mark.parametrize("num_workers", [0, 2])
def test_sharded_range_matches_a_real_dataloader_over_range(num_workers):
    import multiprocessing

    if num_workers and (multiprocessing.get_start_method(allow_none=True) or "fork") != "fork":
        pytest.skip("real workers need the fork start method for a quick test")
    ref = grading.reference("04_data.ShardedRange")
    for case in _cases("04_data.ShardedRange", range(6)):
        start, end = case.args
        got = [int(v) for v in DataLoader(ref(start, end), batch_size=None, num_workers=num_workers)]
        assert sorted(got) == list(range(start, end))


# =========================================================================== red team
# (moved from test_redteam_l04_l08.py, issue 11) At least five wrong answers a learner would
# plausibly write for every exercise, three valid but unusual answers and two cheats; every verdict
# must hold for several seeds (``rejected``/``accepted`` try each of them). Grouped per exercise in
# ``WRONG[exercise] = [(answer, mistake or None)]`` so one parametrized test covers them all.
_tables = Tables()  # tests/lesson_kit.py
WRONG, VALID, CHEATS = _tables.WRONG, _tables.VALID, _tables.CHEATS
wrong, valid, cheat = _tables.wrong, _tables.valid, _tables.cheat

# =========================================================================== 04 WindowDataset
WD = "04_data.WindowDataset"


class _Win(Dataset):
    def __init__(self, series, window, horizon=1):
        self.series, self.window, self.horizon = series, window, horizon

    def __len__(self):
        return max(0, len(self.series) - self.window - self.horizon + 1)

    def __getitem__(self, i):
        return self.series[i : i + self.window], self.series[i + self.window + self.horizon - 1]


@wrong(WD, "negative_len")
class WinNegativeLength(_Win):
    """Right for every series long enough for one window; for a shorter one `len()` raises."""

    def __len__(self):
        return len(self.series) - self.window - self.horizon + 1


@wrong(WD)
class WinLenForgetsHorizon(_Win):
    def __len__(self):
        return len(self.series) - self.window


@wrong(WD)
class WinTargetIsSliceOfHorizon(_Win):
    def __getitem__(self, i):
        return self.series[i : i + self.window], self.series[i + self.window : i + self.window + self.horizon]


@wrong(WD)
class WinTargetAsFloat(_Win):
    def __getitem__(self, i):
        return self.series[i : i + self.window], self.series[i + self.window + self.horizon - 1].item()


@wrong(WD)
class WinDropsHorizonArgument(_Win):
    def __init__(self, series, window, horizon=1):
        super().__init__(series, window, 1)


@wrong(WD)
class WinOneValueShort(_Win):
    def __getitem__(self, i):
        return self.series[i : i + self.window - 1], self.series[i + self.window + self.horizon - 1]


@wrong(WD)
class WinTargetOnePastHorizon(_Win):
    def __len__(self):
        return len(self.series) - self.window - self.horizon

    def __getitem__(self, i):
        return self.series[i : i + self.window], self.series[i + self.window + self.horizon]


@wrong(WD)
class WinNormalisesSeriesInPlace(_Win):
    def __init__(self, series, window, horizon=1):
        series -= series.mean()
        super().__init__(series, window, horizon)


@valid(WD)
class WinUnfold(Dataset):
    def __init__(self, series, window, horizon=1):
        n = len(series) - window - horizon + 1
        self.x = series.unfold(0, window, 1)[:n] if n > 0 else series.new_zeros(0, window)
        self.y = series[window + horizon - 1 :]

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


@valid(WD)
class WinListItemsCopied(_Win):
    def __init__(self, series, window, horizon=1):
        super().__init__(series.clone(), int(window), int(horizon))

    def __getitem__(self, i):
        end = i + self.window
        return [self.series[i:end].clone(), self.series[end - 1 + self.horizon].clone()]


@valid(WD)
class WinNarrow(_Win):
    def __getitem__(self, i):
        if not 0 <= i < len(self):
            raise IndexError(i)
        return torch.narrow(self.series, 0, i, self.window), self.series[i + self.window + self.horizon - 1]


@cheat(WD)
class WinArangeShortcut(_Win):
    """The shown cases are 0, 1, 2, ...: the target is just `last input + horizon`."""

    def __getitem__(self, i):
        x = self.series[i : i + self.window]
        return x, x[-1] + self.horizon


@cheat(WD)
class WinLyingLength(_Win):
    """Claims the right length but serves the same first window for every index."""

    def __getitem__(self, i):
        return self.series[: self.window], self.series[self.window + self.horizon - 1]


# =========================================================================== 04 stratified_split
SS = "04_data.stratified_split"


def _per_class(y, f, shuffle, k_of=lambda n, f: round(n * f), classes=None):
    train, test = [], []
    for c in (torch.unique(y) if classes is None else classes):
        idx = (y == c).nonzero().flatten()
        idx = shuffle(idx)
        k = k_of(len(idx), f)
        test.append(idx[:k])
        train.append(idx[k:])
    return torch.cat(train), torch.cat(test)


@wrong(SS)
def split_labels_assumed_contiguous(y, test_fraction, generator):
    return _per_class(y, test_fraction, lambda i: i[torch.randperm(len(i), generator=generator)],
                      classes=range(len(torch.unique(y))))


@wrong(SS)
def split_ceil(y, test_fraction, generator):
    return _per_class(y, test_fraction, lambda i: i[torch.randperm(len(i), generator=generator)],
                      k_of=lambda n, f: math.ceil(n * f))


@wrong(SS)
def split_int32(y, test_fraction, generator):
    tr, te = _per_class(y, test_fraction, lambda i: i[torch.randperm(len(i), generator=generator)])
    return tr.int(), te.int()


@wrong(SS)
def split_masks(y, test_fraction, generator):
    _, te = _per_class(y, test_fraction, lambda i: i[torch.randperm(len(i), generator=generator)])
    mask = torch.zeros(len(y), dtype=torch.bool)
    mask[te] = True
    return ~mask, mask


@wrong(SS)
def split_total_then_share(y, test_fraction, generator):
    """Rounds the total, then gives each class its floor share."""
    n_test = round(len(y) * test_fraction)
    counts = torch.bincount(y)
    return _per_class(y, test_fraction, lambda i: i[torch.randperm(len(i), generator=generator)],
                      k_of=lambda n, f: int(n_test * n / counts.sum()))


@wrong(SS)
def split_sklearn_style_global(y, test_fraction, generator):
    torch.manual_seed(int(generator.initial_seed()))
    return _per_class(y, test_fraction, lambda i: i[torch.randperm(len(i))])


@wrong(SS)
def split_sorted_not_shuffled(y, test_fraction, generator):
    return _per_class(y, test_fraction, lambda i: i.flip(0))


@wrong(SS)
def split_python_lists(y, test_fraction, generator):
    tr, te = _per_class(y, test_fraction, lambda i: i[torch.randperm(len(i), generator=generator)])
    return tr.tolist(), te.tolist()


@valid(SS)
def split_argsort_rand(y, test_fraction, generator):
    return _per_class(y, test_fraction, lambda i: i[torch.argsort(torch.rand(len(i), generator=generator))])


@valid(SS)
def split_half_up_sorted(y, test_fraction, generator):
    tr, te = _per_class(y, test_fraction, lambda i: i[torch.randperm(len(i), generator=generator)],
                        k_of=lambda n, f: int(n * f + 0.5))
    return tr.sort().values, te.sort().values


@valid(SS)
def split_mask_based(y, test_fraction, generator):
    is_test = torch.zeros(len(y), dtype=torch.bool)
    for c in y.unique(sorted=False):
        idx = torch.where(y == c)[0]
        chosen = idx[torch.randperm(idx.numel(), generator=generator)][: round(idx.numel() * test_fraction)]
        is_test[chosen] = True
    return torch.where(~is_test)[0], torch.where(is_test)[0]


@cheat(SS)
def split_special_cases_shown_inputs(y, test_fraction, generator):
    """Knows that the shown cases have labels 0..k-1 with k <= 3 and shuffles only those."""
    if int(y.max()) < 3:
        return _per_class(y, test_fraction, lambda i: i[torch.randperm(len(i), generator=generator)])
    perm = torch.randperm(len(y), generator=generator)
    n = round(len(y) * test_fraction)
    return perm[n:], perm[:n]


@cheat(SS)
def split_lying_tensor(y, test_fraction, generator):
    """A tensor subclass that reports int64 but holds the indices of an unshuffled split."""

    class Lying(torch.Tensor):
        pass

    tr, te = _per_class(y, test_fraction, lambda i: i)
    return tr.as_subclass(Lying), te.as_subclass(Lying)


# =========================================================================== 04 balanced_sampler
BS = "04_data.balanced_sampler"


@wrong(BS, "uniform_weights")
def sampler_inverse_total(y, generator=None):
    return WeightedRandomSampler(torch.full((len(y),), 1.0 / len(y)), len(y), replacement=True, generator=generator)


@wrong(BS, "epoch_length")
def sampler_num_samples_classes(y, generator=None):
    counts = torch.bincount(y)
    return WeightedRandomSampler(1.0 / counts[y].double(), len(counts), replacement=True, generator=generator)


@wrong(BS)
def sampler_counts_from_unique(y, generator=None):
    """`unique(return_counts=True)` then indexes by label: wrong when labels have gaps."""
    _, counts = torch.unique(y, return_counts=True)
    return WeightedRandomSampler(1.0 / counts[y.clamp(max=len(counts) - 1)].double(), len(y), True, generator=generator)


@wrong(BS, "over_balanced")
def sampler_squared(y, generator=None):
    counts = torch.bincount(y).double()
    return WeightedRandomSampler(1.0 / counts[y] ** 2, len(y), True, generator=generator)


@wrong(BS, "no_replacement")
def sampler_default_replacement_false(y, generator=None):
    counts = torch.bincount(y)
    return WeightedRandomSampler(1.0 / counts[y], len(y), replacement=False, generator=generator)


@wrong(BS, "ignored_generator")
def sampler_own_generator(y, generator=None):
    counts = torch.bincount(y)
    return WeightedRandomSampler(1.0 / counts[y], len(y), True, generator=torch.Generator().manual_seed(0))


@valid(BS)
def sampler_numpy_weights(y, generator=None):
    yn = y.numpy()
    counts = np.bincount(yn)
    return WeightedRandomSampler(1.0 / counts[yn], num_samples=len(yn), replacement=True, generator=generator)


@valid(BS)
def sampler_normalised_weights(y, generator=None):
    counts = torch.bincount(y).double()
    w = 1.0 / counts[y]
    return WeightedRandomSampler(w / w.sum(), len(y), generator=generator)


@valid(BS)
def sampler_scaled_weights(y, generator=None):
    labels, inverse, counts = torch.unique(y, return_inverse=True, return_counts=True)
    return WeightedRandomSampler((1000.0 / counts.float())[inverse], int(y.numel()), True, generator)


@cheat(BS)
def sampler_two_class_shortcut(y, generator=None):
    """The shown case has two classes: hard-code weights for class 0 vs the rest."""
    n0 = int((y == 0).sum())
    w = torch.where(y == 0, 1.0 / n0, 1.0 / (len(y) - n0))
    return WeightedRandomSampler(w, len(y), True, generator=generator)


@cheat(BS)
def sampler_lying_weights(y, generator=None):
    """Reports balanced weights but draws uniformly."""
    counts = torch.bincount(y)
    s = WeightedRandomSampler(torch.ones(len(y)), len(y), True, generator=generator)
    s.weights = 1.0 / counts[y].double()
    s.__class__ = type("Lying", (WeightedRandomSampler,), {
        "__iter__": lambda self: iter(torch.randint(0, len(y), (len(y),), generator=generator).tolist())})
    return s


@wrong(BS, "per_class_weights")
def sampler_colleagues_error_fixed(y, generator=None):
    """The notebook's error fixed the way its message suggests: replacement on, the weights still per class."""
    return WeightedRandomSampler(1.0 / torch.bincount(y), num_samples=len(y), replacement=True, generator=generator)


@valid(BS)
def sampler_class_share_weights(y, generator=None):
    """Weights that are each class's share of the draws divided among its items: 1 / (k * count)."""
    classes, inverse, counts = torch.unique(y, return_inverse=True, return_counts=True)
    return WeightedRandomSampler((1.0 / (len(classes) * counts.double()))[inverse], len(y), True, generator)


# =========================================================================== 04 pad_collate
# =========================================================================== MiniLoader
ML = "04_data.MiniLoader"
_Mini = grading.reference(ML)


def _mini(order=None, starts=None, length=None, collate=None):
    """A MiniLoader with one part changed: ``order(self)``, ``starts(self, n)``, ``length(self)``,
    ``collate(self, items)``."""
    class Answer(_Mini):
        def __iter__(self):
            n = len(self.dataset)
            idx = order(self) if order else (torch.randperm(n, generator=self.generator).tolist() if self.shuffle
                                             else list(range(n)))
            for start in (starts(self, n) if starts else range(0, len(self) * self.batch_size, self.batch_size)):
                items = [self.dataset[i] for i in idx[start:start + self.batch_size]]
                yield collate(self, items) if collate else self.collate_fn(items)

        def __len__(self):
            return length(self) if length else _Mini.__len__(self)
    return Answer


wrong(ML, "kept_last")(_mini(starts=lambda s, n: range(0, n, s.batch_size),
                             length=lambda s: -(-len(s.dataset) // s.batch_size)))
wrong(ML, "dropped_full_batch")(_mini(starts=lambda s, n: range(0, n - s.batch_size if s.drop_last else n,
                                                                    s.batch_size),
                                      length=lambda s: len(range(0, len(s.dataset) - s.batch_size if s.drop_last
                                                                 else len(s.dataset), s.batch_size))))
wrong(ML, "len_disagrees")(_mini(length=lambda s: -(-len(s.dataset) // s.batch_size),
                                 starts=lambda s, n: range(0, _Mini.__len__(s) * s.batch_size, s.batch_size)))
wrong(ML, "global_rng")(_mini(order=lambda s: torch.randperm(len(s.dataset)).tolist() if s.shuffle
                              else list(range(len(s.dataset)))))
wrong(ML, "not_collated")(_mini(collate=lambda s, items: items if s.collate_fn is torch.utils.data.default_collate
                                else s.collate_fn(items)))
wrong(ML, "collated_per_item")(_mini(collate=lambda s, items: [s.collate_fn([it]) for it in items]))


class _MiniCloned(_Mini):
    """Shuffles with a copy of the generator made in __init__: the same order every epoch."""

    def __iter__(self):
        g = torch.Generator().set_state(self.generator.get_state()) if self.generator is not None else None
        n = len(self.dataset)
        idx = torch.randperm(n, generator=g).tolist() if self.shuffle else list(range(n))
        for start in range(0, len(self) * self.batch_size, self.batch_size):
            yield self.collate_fn([self.dataset[i] for i in idx[start:start + self.batch_size]])


wrong(ML, "same_order_every_epoch")(_MiniCloned)
wrong(ML)(_mini(order=lambda s: list(range(len(s.dataset)))))  # shuffle ignored
wrong(ML)(_mini(order=lambda s: torch.randperm(len(s.dataset), generator=s.generator).tolist()))  # always shuffled
# red team s20: shuffles exactly when a generator is given, never looking at `shuffle`
wrong(ML, "shuffled_unasked")(_mini(order=lambda s: torch.randperm(len(s.dataset), generator=s.generator).tolist()
                                    if s.generator is not None else list(range(len(s.dataset)))))


@valid(ML)
class MiniWithBatchLists:
    """No base class; index lists built first, default_collate imported by name."""

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None, generator=None):
        from torch.utils.data import default_collate
        self.dataset, self.bs, self.shuffle, self.drop_last = dataset, batch_size, shuffle, drop_last
        self.collate, self.generator = collate_fn or default_collate, generator

    def _batches(self, order):
        out = [order[i:i + self.bs] for i in range(0, len(order), self.bs)]
        return out[:-1] if out and self.drop_last and len(out[-1]) < self.bs else out

    def __len__(self):
        return len(self._batches(list(range(len(self.dataset)))))

    def __iter__(self):
        order = list(range(len(self.dataset)))
        if self.shuffle:
            order = torch.randperm(len(order), generator=self.generator).tolist()
        return iter([self.collate([self.dataset[i] for i in b]) for b in self._batches(order)])


@valid(ML)
class MiniWithItertools(_Mini):
    def __iter__(self):
        import itertools
        n = len(self.dataset)
        order = iter(torch.randperm(n, generator=self.generator).tolist() if self.shuffle else range(n))
        while batch := list(itertools.islice(order, self.batch_size)):
            if self.drop_last and len(batch) < self.batch_size:
                return
            yield self.collate_fn([self.dataset[i] for i in batch])

    def __len__(self):
        q, r = divmod(len(self.dataset), self.batch_size)
        return q + (0 if self.drop_last or r == 0 else 1)


@valid(ML)
class MiniWithTensorSplit(_Mini):
    def __iter__(self):
        n = len(self.dataset)
        order = torch.randperm(n, generator=self.generator) if self.shuffle else torch.arange(n)
        for chunk in order.split(self.batch_size):
            if len(chunk) == self.batch_size or (len(chunk) and not self.drop_last):
                yield self.collate_fn([self.dataset[int(i)] for i in chunk])


@wrong(ML)
class MiniWithTensorSplitEmptyBatch(_Mini):
    """`torch.arange(0).split(k)` is one empty chunk: collating it fails where DataLoader yields nothing."""

    def __iter__(self):
        n = len(self.dataset)
        order = torch.randperm(n, generator=self.generator) if self.shuffle else torch.arange(n)
        for chunk in order.split(self.batch_size):
            if len(chunk) == self.batch_size or not self.drop_last:
                yield self.collate_fn([self.dataset[int(i)] for i in chunk])


cheat(ML)(_mini(order=lambda s: list(range(len(s.dataset))), length=lambda s: 1,
                starts=lambda s, n: range(0, min(n, s.batch_size), s.batch_size)))


@cheat(ML)
class MiniTorchDataLoader(torch.utils.data.DataLoader):
    """torch's own DataLoader under another name."""


def test_mini_loader_the_notebooks_log_is_the_references_and_the_spec_holds_no_recipe():
    """Issue 26: the notebook's log of the old loader is what the reference yields (so it can be
    reproduced), torch's DataLoader does not reproduce the shuffled epochs, and the rule is the
    learner's to find: not in the spec, and the hints climb from a question to names."""
    import ast
    import pathlib
    import re

    src = (pathlib.Path(__file__).parents[1] / "solutions" / "04_data.py").read_text()
    spec = src[src.index("### Exercise 5"):src.index('tags=["answer:MiniLoader"]')]
    log = ast.literal_eval(re.search(r"old_log = (\{.*?\n\})", spec, re.DOTALL).group(1))
    lengths = ast.literal_eval(re.search(r"old_len = (\{.*?\})", spec).group(1))
    ten = torch.utils.data.TensorDataset(torch.arange(20.0).view(10, 2), torch.arange(10))

    def labels(loader):
        return [b[1].tolist() for b in loader]

    assert labels(_Mini(ten, batch_size=4)) == log["batch_size=4"]
    assert labels(_Mini(ten, batch_size=4, drop_last=True)) == log["batch_size=4, drop_last=True"]
    assert labels(_Mini(ten, batch_size=5, drop_last=True)) == log["batch_size=5, drop_last=True"]
    assert labels(_Mini(ten, batch_size=4, generator=torch.Generator().manual_seed(3))) == log[
        "batch_size=4, generator seeded 3"]
    shuffled = _Mini(ten, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(3))
    epochs = [labels(shuffled), labels(shuffled)]
    assert epochs == [log[f"batch_size=4, shuffle=True, generator seeded 3, epoch {e}"] for e in (1, 2)]
    torch_loader = torch.utils.data.DataLoader(ten, batch_size=4, shuffle=True,
                                               generator=torch.Generator().manual_seed(3))
    assert labels(torch_loader) != epochs[0]
    for key, n in lengths.items():
        opts = dict(batch_size=int(key.split(",")[0].split("=")[1]), drop_last="drop_last" in key)
        assert len(_Mini(ten, **opts)) == n == len(log[key])
    prose = "\n".join(line for line in spec.splitlines() if line.startswith("# "))
    for recipe in ("randperm", "__iter__", "__len__", "default_collate", "afresh", "each epoch", "section 4"):
        assert recipe not in prose, recipe
    hints = grading.exercise(ML).hints
    assert hints[0].rstrip().endswith("?")
    for hint in hints[:2]:
        assert not re.search(r"`|\w\(|randperm|__", hint), hint


def test_mini_loader_reference_equals_torch_dataloader():
    """shuffle=False: the same batches as DataLoader; shuffle=True: the same as DataLoader given the
    same order as a sampler (DataLoader draws a worker seed from the generator first)."""
    from course_utils.exercises.l04_data.mini_loader import Pairs, labels_and_sizes
    from course_utils.grading.compare import compare
    for case in _cases(ML, range(80)):
        where = case.label or str(case.kwargs)
        kw = case.kwargs
        ds = Pairs(kw["n"], kw["d"], kw["seed"])
        collate = labels_and_sizes if kw["collate"] else None
        opts = {"batch_size": kw["batch_size"], "drop_last": kw["drop_last"], "collate_fn": collate}
        if kw["shuffle"]:
            g1, g2 = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
            mine = _Mini(ds, shuffle=True, generator=g1, **opts)
            for _ in range(2):
                got = list(mine)
                want = list(torch.utils.data.DataLoader(ds, sampler=torch.randperm(len(ds), generator=g2).tolist(),
                                                        **opts))
                assert compare(got, want) is None, where
        else:
            got = list(_Mini(ds, **opts))
            want = list(torch.utils.data.DataLoader(ds, **opts))
            assert compare(got, want) is None, where
        assert len(_Mini(ds, **opts)) == len(torch.utils.data.DataLoader(ds, **opts)), where


PC = "04_data.pad_collate"


def _split_batch(batch):
    return [t for t, _ in batch], [lab for _, lab in batch]


@valid(PC)
def collate_labels_tensor_of_tensors(batch):
    seqs, labels = _split_batch(batch)
    return pad_sequence(seqs, batch_first=True), torch.tensor([len(s) for s in seqs]), torch.tensor(labels)


@wrong(PC)
def collate_lengths_list(batch):
    seqs, labels = _split_batch(batch)
    return pad_sequence(seqs, batch_first=True), [len(s) for s in seqs], torch.stack(labels)


@wrong(PC, "pad_value")
def collate_pad_minus_one(batch):
    seqs, labels = _split_batch(batch)
    return (pad_sequence(seqs, batch_first=True, padding_value=-1), torch.tensor([len(s) for s in seqs]),
            torch.stack(labels))


@wrong(PC, "sorted_rows")
def collate_sorted_by_length(batch):
    batch = sorted(batch, key=lambda p: -len(p[0]))
    seqs, labels = _split_batch(batch)
    return pad_sequence(seqs, batch_first=True), torch.tensor([len(s) for s in seqs]), torch.stack(labels)


@wrong(PC, "mask_not_lengths")
def collate_padding_mask(batch):  # what a transformer wants, but not the target's second part
    seqs, labels = _split_batch(batch)
    padded = pad_sequence(seqs, batch_first=True, padding_value=PAD)
    return padded, padded != PAD, torch.stack(labels)


@wrong(PC)
def collate_float_padded(batch):
    seqs, labels = _split_batch(batch)
    longest = max(len(s) for s in seqs)
    padded = torch.zeros(len(seqs), longest)
    for i, s in enumerate(seqs):
        padded[i, : len(s)] = s
    return padded, torch.tensor([len(s) for s in seqs]), torch.stack(labels)


@wrong(PC)
def collate_lengths_int32(batch):
    seqs, labels = _split_batch(batch)
    return (pad_sequence(seqs, batch_first=True), torch.tensor([len(s) for s in seqs], dtype=torch.int32),
            torch.stack(labels))


@wrong(PC, "left_padded")
def collate_left_padded(batch):
    seqs, labels = _split_batch(batch)
    flipped = pad_sequence([s.flip(0) for s in seqs], batch_first=True).flip(1)
    return flipped, torch.tensor([len(s) for s in seqs]), torch.stack(labels)


@wrong(PC, "lengths_of_padded")
def collate_lengths_measured_after_padding(batch):
    seqs, labels = _split_batch(batch)
    padded = pad_sequence(seqs, batch_first=True)
    return padded, torch.tensor([len(row) for row in padded]), torch.stack(labels)


@wrong(PC, "not_batch_first")
def collate_helper_defaults(batch):
    """The padding helper with its defaults: time first."""
    seqs, labels = _split_batch(batch)
    return pad_sequence(seqs), torch.tensor([len(s) for s in seqs]), torch.stack(labels)


@valid(PC)
def collate_lengths_from_a_mask(batch):
    """Lengths counted from where the tokens are (no token is PAD), the rows filled by a mask."""
    seqs, labels = _split_batch(batch)
    sizes = torch.tensor([len(s) for s in seqs])
    mask = torch.arange(int(sizes.max())) < sizes[:, None]
    padded = torch.full(mask.shape, PAD, dtype=torch.int64).masked_scatter(mask, torch.cat(seqs))
    return padded, mask.sum(dim=1), torch.stack(labels)


@valid(PC)
def collate_by_hand(batch):
    longest = max(len(t) for t, _ in batch)
    padded = torch.full((len(batch), longest), 0, dtype=torch.long)
    for i, (t, _) in enumerate(batch):
        padded[i, : len(t)] = t
    return (padded, torch.tensor([t.numel() for t, _ in batch], dtype=torch.int64),
            torch.tensor([int(l) for _, l in batch]))  # noqa: E741


@valid(PC)
def collate_zip(batch):
    seqs, labels = zip(*batch)
    return (torch.nn.utils.rnn.pad_sequence(list(seqs), batch_first=True, padding_value=0),
            torch.as_tensor([s.shape[0] for s in seqs]), torch.stack(list(labels)))


@valid(PC)
def collate_list_out(batch):
    seqs, labels = _split_batch(batch)
    lengths = torch.tensor([len(s) for s in seqs])
    padded = torch.nn.functional.pad(
        torch.stack([torch.nn.functional.pad(s, (0, int(lengths.max()) - len(s))) for s in seqs]), (0, 0))
    return [padded, lengths, torch.stack(labels).view(-1)]


@cheat(PC)
def collate_fixed_width_for_shown_case(batch):
    """The shown case's longest sequence has 3 tokens: always pad to 3 (and truncate)."""
    seqs, labels = _split_batch(batch)
    padded = torch.zeros(len(seqs), 3, dtype=torch.long)
    for i, s in enumerate(seqs):
        padded[i, : min(3, len(s))] = s[:3]
    return padded, torch.tensor([len(s) for s in seqs]), torch.stack(labels)


@cheat(PC)
def collate_lying_lengths(batch):
    """Lengths taken from the padded width (all equal), which a model cannot use."""
    seqs, labels = _split_batch(batch)
    padded = pad_sequence(seqs, batch_first=True)
    return padded, torch.full((len(seqs),), padded.shape[1]), torch.stack(labels)


# =========================================================================== 04 ShardedRange
SR = "04_data.ShardedRange"


class _Range(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end


@wrong(SR)
class ShardChunksFloor(_Range):
    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        per = (self.end - self.start) // info.num_workers
        lo = self.start + info.id * per
        return iter(range(lo, lo + per))


@wrong(SR)
class ShardChunksCeilOverlap(_Range):
    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        per = math.ceil((self.end - self.start) / info.num_workers)
        lo = self.start + info.id * per
        return iter(range(lo, min(lo + per + 1, self.end)))


@wrong(SR)
class ShardStrideFromZero(_Range):
    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        return iter(range(info.id, self.end, info.num_workers))


@wrong(SR)
class ShardMutatesSelf(_Range):
    def __iter__(self):
        info = get_worker_info()
        if info is not None:
            self.start += info.id
            return iter(range(self.start, self.end, info.num_workers))
        return iter(range(self.start, self.end))


@wrong(SR)
class ShardGenerator(_Range):
    """A generator that forgets the stride."""

    def __iter__(self):
        info = get_worker_info()
        first = self.start + (info.id if info else 0)
        for v in range(first, self.end):  # noqa: UP028 - as a learner writes it
            yield v


@wrong(SR)
class ShardFloats(_Range):
    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(torch.arange(self.start, self.end, dtype=torch.float32))
        return iter(torch.arange(self.start + info.id, self.end, info.num_workers, dtype=torch.float32))


@valid(SR)
class ShardGeneratorFunction(_Range):
    def __iter__(self):
        info = get_worker_info()
        k, n = (0, 1) if info is None else (info.id, info.num_workers)
        for v in range(self.start, self.end):
            if (v - self.start) % n == k:
                yield v


@valid(SR)
class ShardContiguousChunks(_Range):
    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        size = self.end - self.start
        bounds = [self.start + size * k // info.num_workers for k in range(info.num_workers + 1)]
        return iter(range(bounds[info.id], bounds[info.id + 1]))


@valid(SR)
class ShardFloorChunksRestToTheLast(ShardChunksFloor):
    """The floor chunks above, with the last worker also taking the remainder (red team, s20)."""

    def __iter__(self):
        info = get_worker_info()
        if info is None or info.id < info.num_workers - 1:
            return super().__iter__()
        return iter(range(self.start + info.id * ((self.end - self.start) // info.num_workers), self.end))


@valid(SR)
class ShardIslice(_Range):
    def __iter__(self):
        import itertools
        info = get_worker_info()
        it = iter(range(self.start, self.end))
        return it if info is None else itertools.islice(it, info.id, None, info.num_workers)


@cheat(SR)
class ShardOnlyShownRange(_Range):
    """Memorises the shown case range(0, 7) split for 2 workers."""

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        if info.num_workers == 2:
            return iter(range(self.start + info.id, self.end, 2))
        return iter(range(self.start, self.end)) if info.id == 0 else iter(())


@cheat(SR)
class ShardIgnoresWorkerInfo(_Range):
    """Shards by a class-level counter instead of get_worker_info: right in one process by luck."""

    calls = 0

    def __iter__(self):
        ShardIgnoresWorkerInfo.calls += 1
        return iter(range(self.start, self.end)) if ShardIgnoresWorkerInfo.calls % 2 else iter(())


# =========================================================================== 04 reseed_worker
RW = "04_data.reseed_worker"


@wrong(RW, "same_every_epoch")
def reseed_with_torch_initial_seed_mod_worker(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(worker_id * 1000)


@wrong(RW, "not_a_generator")
def reseed_legacy_randomstate(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.RandomState(info.seed % 2**32)


@wrong(RW, "reseeded_torch_or_random")
def reseed_global_and_python(worker_id):
    seed = get_worker_info().seed % 2**32
    np.random.seed(seed)
    random.seed(seed)


@wrong(RW, "same_in_every_worker")
def reseed_same_for_all(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed - worker_id)


@wrong(RW, "not_reproducible")
def reseed_entropy(worker_id):
    get_worker_info().dataset.rng = np.random.default_rng(np.random.SeedSequence().entropy)


@wrong(RW, "same_every_epoch")
def reseed_advances_existing(worker_id):
    """Draws worker_id numbers from the existing generator: differs per worker, not per epoch."""
    info = get_worker_info()
    info.dataset.rng.random(worker_id + 1)


@wrong(RW, "seeded_global_rng")
def reseed_the_colleagues_fix(worker_id):
    """The notebook's colleague: NumPy's global generator, which NoisyItems never draws from."""
    np.random.seed(np.random.get_state()[1][0] + worker_id)


@wrong(RW, "kept_original")
def reseed_all_but_the_first_worker(worker_id):
    """Worker 0 'keeps the original', only the others get new generators: worker 0 repeats every epoch."""
    if worker_id > 0:
        info = get_worker_info()
        info.dataset.rng = np.random.default_rng(info.seed)


@wrong(RW, "not_reseeded")
def reseed_a_local_generator(worker_id):
    """A new generator that nothing uses: the dataset still draws from its own."""
    rng = np.random.default_rng(get_worker_info().seed)
    return rng


@valid(RW)
def reseed_from_numpy_global_state(worker_id):
    """NumPy's global generator is seeded per worker and per epoch by the DataLoader: a seed drawn from it works."""
    get_worker_info().dataset.rng = np.random.default_rng(np.random.randint(0, 2**31))


@valid(RW)
def reseed_torch_initial_seed(worker_id):
    get_worker_info().dataset.rng = np.random.default_rng(torch.initial_seed())


@valid(RW)
def reseed_seed_sequence(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(np.random.SeedSequence([info.seed % 2**32, info.seed >> 32]))


@valid(RW)
def reseed_pcg(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.Generator(np.random.PCG64(info.seed))


@cheat(RW)
def reseed_from_worker_and_time(worker_id):
    import time
    get_worker_info().dataset.rng = np.random.default_rng(worker_id + int(time.time()) // 3600)


@cheat(RW)
def reseed_lying_generator(worker_id):
    """A Generator subclass instance would be fine; this is an unrelated object that claims to be one."""

    class Fake:
        def random(self, n):
            return np.arange(n) * 0.0 + worker_id

    get_worker_info().dataset.rng = Fake()


# --------------------------------------------------------------------------- red-team reviewer's findings
@wrong(SS)
def split_test_from_the_end(y, test_fraction, generator):
    tr, te = [], []
    for c in torch.unique(y):
        idx = (y == c).nonzero().flatten()
        idx = idx[torch.randperm(len(idx), generator=generator)]
        k = round(len(idx) * test_fraction)
        tr.append(idx[:-k])
        te.append(idx[-k:])
    return torch.cat(tr), torch.cat(te)


@wrong(SS, "mutated_input")
def split_marks_test_items_in_y(y, test_fraction, generator):
    out = _per_class(y, test_fraction, lambda i: i[torch.randperm(len(i), generator=generator)])
    y[out[1]] = -1
    return out


@wrong(SS, "swapped")
def split_test_first(y, test_fraction, generator):
    tr, te = _per_class(y, test_fraction, lambda i: i[torch.randperm(len(i), generator=generator)])
    return te, tr


@wrong(WD, "not_a_dataset")
def window_list_of_pairs(s, w, h=1):
    return [(s[i : i + w], s[i + w + h - 1]) for i in range(len(s) - w - h + 1)]


@valid(RW)
def reseed_seed_drawn_from_torch_and_random(worker_id):
    """Draws (does not reseed) from the streams the DataLoader seeded per worker: the text allows it."""
    info = get_worker_info()
    seed = int(torch.randint(0, 2**31, ())) ^ random.getrandbits(31)
    info.dataset.rng = np.random.default_rng(seed)


@wrong(RW, "reseeded_torch_or_random")
def reseed_torch_and_random_by_worker_id(worker_id):
    info = get_worker_info()
    random.seed(worker_id)
    torch.manual_seed(worker_id)
    info.dataset.rng = np.random.default_rng(info.seed)


@wrong(BS, "mutated_input")
def sampler_fills_y(y, generator=None):
    w = torch.bincount(y)[y].double().reciprocal_()
    y.fill_(0)
    return WeightedRandomSampler(w, len(y), True, generator=generator)


@valid(SR)
class ShardNumpyIntegers(_Range):
    def __iter__(self):
        info = get_worker_info()
        k, n = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(np.arange(self.start, self.end)[k::n])


@wrong(PC, "mutated_input")
def collate_pops_the_batch(batch):
    seqs, labels = [], []
    while batch:
        t, lab = batch.pop(0)
        seqs.append(t)
        labels.append(lab)
    return pad_sequence(seqs, batch_first=True), torch.tensor([len(s) for s in seqs]), torch.stack(labels)


@wrong(RW, "same_in_every_worker")
def reseed_constant_zero(worker_id):
    get_worker_info().dataset.rng = np.random.default_rng(0)


@wrong(ML, "len_before_iter")
class MiniLenAfterAnEpoch(_Mini):
    """redteam_10_12: the length remembered from the last epoch; len() before training fails."""

    def __iter__(self):
        self.batches = list(_Mini.__iter__(self))
        return iter(self.batches)

    def __len__(self):
        return len(self.batches)


@wrong(ML, "collate_only_pairs")
class MiniPairsOnlyCollate(_Mini):
    """redteam_10_12: a hand-written stand-in for default_collate that handles (tensor, int) pairs only."""

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None, generator=None):
        super().__init__(dataset, batch_size, shuffle, drop_last, collate_fn or (
            lambda items: (torch.stack([x for x, _ in items]), torch.tensor([y for _, y in items]))), generator)


# --------------------------------------------------------------------------- the red-team tests
(test_wrong_answer_is_rejected, test_valid_answer_is_accepted, test_cheat_is_rejected,
 test_every_exercise_has_its_red_team) = _tables.red_team_tests(LESSON)  # tests/lesson_kit.py


# --------------------------------------------------------------------------- the notebook's puzzles (issue 26)
# Each rewritten exercise asks for a decision: the notebook hands over a colleague's broken code. These
# tests hold the notebook's material and the grader together: the code the learner is shown is wrong in
# exactly the ways the text promises, and the grader names each problem in turn.
def _notebook_source(name: str) -> str:
    return notebook_source("04_data", name)


def _define(source: str, name: str, **names):
    return define(source, name, {"torch": torch, "np": np, "WeightedRandomSampler": WeightedRandomSampler, **names})


def test_the_colleagues_sampler_fails_as_the_notebook_shows():
    """Only one of its three problems raises, with the message the notebook shows; fixing what the message
    names leaves a sampler that draws class 0 only."""
    sampler = _define(_notebook_source("colleague_sampler"), "colleague_sampler")
    y = torch.tensor([0] * 200 + [1] * 50 + [2] * 10)
    with pytest.raises(RuntimeError, match="without replacement"):
        list(sampler(y, generator=torch.Generator().manual_seed(0)))
    fixed = _define(_notebook_source("colleague_sampler").replace("replacement=False", "replacement=True"),
                    "colleague_sampler")
    drawn = list(fixed(y, generator=torch.Generator().manual_seed(0)))
    assert set(drawn) <= {0, 1, 2} and len(drawn) == len(y)


def test_the_colleagues_sampler_has_the_three_problems_the_text_promises_each_named_in_turn():
    source = _notebook_source("colleague_sampler").replace("colleague_sampler", "balanced_sampler")
    fixes = [  # (the mistake the check names, the fix of that problem)
        ("per_class_weights", [("weights = 1.0 / class_counts ", "weights = 1.0 / class_counts[y] ")]),
        ("ignored_generator", [("replacement=False)", "replacement=False, generator=generator)")]),
        ("no_replacement", [("replacement=False", "replacement=True")]),
    ]
    for mistake, replacements in fixes:
        res = check("balanced_sampler", _define(source, "balanced_sampler"), seed=0)
        assert res.mistake == mistake, (mistake, res.text())
        for old, new in replacements:
            assert old in source, old
            source = source.replace(old, new)
    assert check("balanced_sampler", _define(source, "balanced_sampler"), seed=1).passed


@pytest.mark.parametrize("exercise_id", [D + "balanced_sampler", D + "reseed_worker", D + "pad_collate"])
def test_rewritten_hints_hold_no_code(exercise_id):
    """Hints climb from a question to the idea, never to the code (issue 26)."""
    import re

    code = re.compile(r"`|\w\(|\w=\w|\.\w+\(")
    for hint in grading.exercise(exercise_id).hints:
        assert not code.search(hint), (exercise_id, hint)


@needs_fork
def test_the_colleagues_worker_init_changes_nothing_as_the_notebook_shows():
    """Exercise 7's puzzle holds: with the colleague's worker_init_fn two workers still repeat each other's
    noise, the grader names it, and with the reference every item gets noise of its own."""
    loader = DataLoader(dw.NoisyItems(n=8, seed=0), batch_size=None, num_workers=2,
                        worker_init_fn=dw.colleague_worker_init)
    noise = _noise(loader)
    assert noise[0::2] == noise[1::2]
    assert check("reseed_worker", dw.colleague_worker_init, seed=0).mistake == "seeded_global_rng"
    fixed = _noise(DataLoader(dw.NoisyItems(n=8, seed=0), batch_size=None, num_workers=2,
                              worker_init_fn=dw.reseed_worker))
    assert len(set(fixed)) == len(fixed)


@needs_fork
def test_worker_seeds_differ_per_worker_and_epoch_and_repeat_with_the_generator():
    """What the notebook shows before exercise 7 (dw.WorkerSeeds)."""

    def seeds():
        loader = DataLoader(dw.WorkerSeeds(), batch_size=None, num_workers=2,
                            generator=torch.Generator().manual_seed(0))
        return [[row["seed"] for row in loader] for _ in range(2)]

    first = seeds()
    assert first == seeds() and len({s for epoch in first for s in epoch}) == 4


def test_the_target_batches_show_every_decision_the_grader_names():
    """Exercise 4 is read off two printed batches (items 4-10 of the notebook's SequenceDataset): they must
    show what the named mistakes get wrong: widths below the longest possible and differing between the
    batches, sequences of different lengths (left vs right padding, lengths after padding) and not sorted
    by length (row order)."""
    from course_utils.datasets import SequenceDataset

    seqs = SequenceDataset(n=200)
    loader = DataLoader(torch.utils.data.Subset(seqs, range(4, 11)), batch_size=4,
                        collate_fn=grading.reference(PC))
    widths = []
    for padded, lengths, _ in loader:
        assert lengths.tolist() != sorted(lengths.tolist(), reverse=True) and len(set(lengths.tolist())) > 1
        widths.append(padded.shape[1])
    assert len(set(widths)) == 2 and max(widths) < max(len(seqs[i][0]) for i in range(len(seqs)))


def test_the_batches_the_notebook_prints_are_what_the_reference_makes():
    """The notebook shows the target batches before the learner's answer exists, as stored data
    (lesson_props.l04_data_lab.script_batches): in a graded notebook's course no answer can compute
    them. Here they are held to the reference."""
    from course_utils.datasets import SequenceDataset
    from course_utils.lesson_props import l04_data_lab

    loader = DataLoader(torch.utils.data.Subset(SequenceDataset(n=200), range(4, 11)), batch_size=4,
                        collate_fn=grading.reference(PC))
    made, shown = list(loader), l04_data_lab.script_batches()
    assert len(made) == len(shown) == 2
    for a, b in zip(made, shown):
        assert all(x.dtype == y.dtype and torch.equal(x, y) for x, y in zip(a, b))
