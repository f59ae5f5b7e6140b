"""Lesson 04 (data): what the generic grader tests cannot see.

- the worker simulation used by the graders matches what real DataLoader workers observe;
- real worker processes show the behaviours the lesson demonstrates (duplicates without
  sharding, identical NumPy noise, the fix);
- reasonable alternative answers pass, and the graders clean up after themselves;
- the plain functions behind the lesson's widgets and plots.
"""

from __future__ import annotations

import multiprocessing

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from torch.nn.utils.rnn import pad_sequence  # noqa: E402
from torch.utils.data import DataLoader, IterableDataset, TensorDataset, WeightedRandomSampler  # noqa: E402

from course_utils import grading  # noqa: E402
from course_utils.lesson_props import l04_data_lab as data_lab  # noqa: E402
from course_utils.lesson_props import l04_data_workers as dw  # noqa: E402
from course_utils.exercises.l04_data import _kit, sharded_range, stratified_split, window_dataset  # noqa: E402

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
