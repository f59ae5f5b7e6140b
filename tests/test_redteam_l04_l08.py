"""Red team of the lesson 04-08 graders, kept as tests (issue 11).

For every exercise: at least five wrong answers a learner would plausibly write (real learner
code, not mutants of the reference), three valid but unusual answers, and two cheats (answers
that special-case what the grader shows, or objects that lie to duck-typed checks). Every
verdict must hold for several seeds (``rejected``/``accepted`` try each of them).

The wrong answers are grouped per exercise in ``WRONG[exercise] = [(answer, mistake or None)]``
so one parametrized test covers them all; ``VALID`` and ``CHEATS`` likewise.
"""

from __future__ import annotations

import collections
import math
import random

import numpy as np
import pytest
import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import Dataset, IterableDataset, WeightedRandomSampler, get_worker_info

from grading_asserts import accepted, rejected  # noqa: E402 (tests/ is on sys.path)

WRONG: dict[str, list] = collections.defaultdict(list)
VALID: dict[str, list] = collections.defaultdict(list)
CHEATS: dict[str, list] = collections.defaultdict(list)


def wrong(exercise, mistake=None):
    def deco(fn):
        WRONG[exercise].append(pytest.param(fn, mistake, id=f"{exercise}-{fn.__name__}"))
        return fn
    return deco


def valid(exercise):
    def deco(fn):
        VALID[exercise].append(pytest.param(fn, id=f"{exercise}-{fn.__name__}"))
        return fn
    return deco


def cheat(exercise):
    def deco(fn):
        CHEATS[exercise].append(pytest.param(fn, id=f"{exercise}-{fn.__name__}"))
        return fn
    return deco


# =========================================================================== 04 WindowDataset
WD = "04_data.WindowDataset"


class _Win(Dataset):
    def __init__(self, series, window, horizon=1):
        self.series, self.window, self.horizon = series, window, horizon

    def __len__(self):
        return len(self.series) - self.window - self.horizon + 1

    def __getitem__(self, i):
        return self.series[i : i + self.window], self.series[i + self.window + self.horizon - 1]


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
        self.x = series.unfold(0, window, 1)[:n]
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


@wrong(BS)
def sampler_inverse_total(y, generator=None):
    return WeightedRandomSampler(torch.full((len(y),), 1.0 / len(y)), len(y), replacement=True, generator=generator)


@wrong(BS)
def sampler_num_samples_classes(y, generator=None):
    counts = torch.bincount(y)
    return WeightedRandomSampler(1.0 / counts[y].double(), len(counts), replacement=True, generator=generator)


@wrong(BS)
def sampler_counts_from_unique(y, generator=None):
    """`unique(return_counts=True)` then indexes by label: wrong when labels have gaps."""
    _, counts = torch.unique(y, return_counts=True)
    return WeightedRandomSampler(1.0 / counts[y.clamp(max=len(counts) - 1)].double(), len(y), True, generator=generator)


@wrong(BS)
def sampler_squared(y, generator=None):
    counts = torch.bincount(y).double()
    return WeightedRandomSampler(1.0 / counts[y] ** 2, len(y), True, generator=generator)


@wrong(BS)
def sampler_default_replacement_false(y, generator=None):
    counts = torch.bincount(y)
    return WeightedRandomSampler(1.0 / counts[y], len(y), replacement=False, generator=generator)


@wrong(BS)
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


# =========================================================================== 04 pad_collate
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


@wrong(PC)
def collate_pad_minus_one(batch):
    seqs, labels = _split_batch(batch)
    return pad_sequence(seqs, batch_first=True, padding_value=-1), torch.tensor([len(s) for s in seqs]), torch.stack(labels)


@wrong(PC)
def collate_sorted_by_length(batch):
    batch = sorted(batch, key=lambda p: -len(p[0]))
    seqs, labels = _split_batch(batch)
    return pad_sequence(seqs, batch_first=True), torch.tensor([len(s) for s in seqs]), torch.stack(labels)


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


@wrong(PC)
def collate_left_padded(batch):
    seqs, labels = _split_batch(batch)
    flipped = pad_sequence([s.flip(0) for s in seqs], batch_first=True).flip(1)
    return flipped, torch.tensor([len(s) for s in seqs]), torch.stack(labels)


@valid(PC)
def collate_by_hand(batch):
    longest = max(len(t) for t, _ in batch)
    padded = torch.full((len(batch), longest), 0, dtype=torch.long)
    for i, (t, _) in enumerate(batch):
        padded[i, : len(t)] = t
    return padded, torch.tensor([t.numel() for t, _ in batch], dtype=torch.int64), torch.tensor([int(l) for _, l in batch])


@valid(PC)
def collate_zip(batch):
    seqs, labels = zip(*batch)
    return (torch.nn.utils.rnn.pad_sequence(list(seqs), batch_first=True, padding_value=0),
            torch.as_tensor([s.shape[0] for s in seqs]), torch.stack(list(labels)))


@valid(PC)
def collate_list_out(batch):
    seqs, labels = _split_batch(batch)
    lengths = torch.tensor([len(s) for s in seqs])
    padded = torch.nn.functional.pad(torch.stack([torch.nn.functional.pad(s, (0, int(lengths.max()) - len(s))) for s in seqs]), (0, 0))
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
        for v in range(first, self.end):
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


@wrong(RW)
def reseed_with_torch_initial_seed_mod_worker(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(worker_id * 1000)


@wrong(RW)
def reseed_legacy_randomstate(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.RandomState(info.seed % 2**32)


@wrong(RW)
def reseed_global_and_python(worker_id):
    seed = get_worker_info().seed % 2**32
    np.random.seed(seed)
    random.seed(seed)


@wrong(RW)
def reseed_same_for_all(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed - worker_id)


@wrong(RW)
def reseed_entropy(worker_id):
    get_worker_info().dataset.rng = np.random.default_rng(np.random.SeedSequence().entropy)


@wrong(RW)
def reseed_advances_existing(worker_id):
    """Draws worker_id numbers from the existing generator: differs per worker, not per epoch."""
    info = get_worker_info()
    info.dataset.rng.random(worker_id + 1)


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


# =========================================================================== the tests
def _all(table):
    return [p for ps in table.values() for p in ps]


@pytest.mark.parametrize("answer,mistake", _all(WRONG))
def test_wrong_answer_is_rejected(request, answer, mistake):
    exercise = request.node.callspec.id.split("-")[0]
    rejected(exercise, answer, mistake)


@pytest.mark.parametrize("answer", _all(VALID))
def test_valid_answer_is_accepted(request, answer):
    exercise = request.node.callspec.id.split("-")[0]
    accepted(exercise, answer)


@pytest.mark.parametrize("answer", _all(CHEATS))
def test_cheat_is_rejected(request, answer):
    exercise = request.node.callspec.id.split("-")[0]
    rejected(exercise, answer)


def test_every_exercise_has_its_red_team():
    from course_utils import grading

    for eid in grading.exercises():
        if eid[:2] not in ("04",):  # grows lesson by lesson
            continue
        assert len(WRONG[eid]) >= 5, eid
        assert len(VALID[eid]) >= 3, eid
        assert len(CHEATS[eid]) >= 2, eid
