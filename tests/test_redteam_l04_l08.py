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


# =========================================================================== 05 train_one_epoch
import copy  # noqa: E402

from torch import nn  # noqa: E402

T1 = "05_training_loop.train_one_epoch"


def _five_steps(model, X, y, loss_fn, optimizer):
    optimizer.zero_grad()
    loss = loss_fn(model(X), y)
    loss.backward()
    optimizer.step()
    return loss


@wrong(T1)
def train_divides_by_batches(model, loader, loss_fn, optimizer):
    model.train()
    total = 0.0
    for X, y in loader:
        total += _five_steps(model, X, y, loss_fn, optimizer).item() * len(y)
    return total / len(loader)


@wrong(T1)
def train_returns_tensor(model, loader, loss_fn, optimizer):
    model.train()
    total, n = 0.0, 0
    for X, y in loader:
        total = total + _five_steps(model, X, y, loss_fn, optimizer) * len(y)
        n += len(y)
    return total / n


@wrong(T1, "zero_grad_between_backward_and_step")
def train_zero_grad_before_step(model, loader, loss_fn, optimizer):
    model.train()
    total, n = 0.0, 0
    for X, y in loader:
        loss = loss_fn(model(X), y)
        loss.backward()
        optimizer.zero_grad()
        optimizer.step()
        total += loss.item() * len(y)
        n += len(y)
    return total / n


@wrong(T1, "softmax_before_loss")
def train_softmax_first(model, loader, loss_fn, optimizer):
    model.train()
    total, n = 0.0, 0
    for X, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(torch.softmax(model(X), dim=1), y)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(y)
        n += len(y)
    return total / n


@wrong(T1)
def train_return_inside_loop(model, loader, loss_fn, optimizer):
    model.train()
    for X, y in loader:
        loss = _five_steps(model, X, y, loss_fn, optimizer)
        return loss.item()


@wrong(T1, "forgot_train_mode")
def train_mode_after_loop(model, loader, loss_fn, optimizer):
    total, n = 0.0, 0
    for X, y in loader:
        total += _five_steps(model, X, y, loss_fn, optimizer).item() * len(y)
        n += len(y)
    model.train()
    return total / n


@wrong(T1)
def train_last_batch_loss(model, loader, loss_fn, optimizer):
    model.train()
    for X, y in loader:
        loss = _five_steps(model, X, y, loss_fn, optimizer)
    return loss.item()


@wrong(T1)
def train_clips_too(model, loader, loss_fn, optimizer):
    model.train()
    total, n = 0.0, 0
    for X, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(X), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        total += loss.item() * len(y)
        n += len(y)
    return total / n


@valid(T1)
def train_dataset_length(model, loader, loss_fn, optimizer):
    model.train(True)
    total = 0.0
    for X, y in loader:
        for p in model.parameters():
            p.grad = None
        loss = loss_fn(model(X), y)
        loss.backward()
        optimizer.step()
        total += loss.detach() * X.size(0)
    return float(total) / len(loader.dataset)


@valid(T1)
def train_extra_accuracy_pass(model, loader, loss_fn, optimizer):
    model.train()
    losses, sizes = [], []
    for X, y in loader:
        model.zero_grad(set_to_none=False)
        logits = model(X)
        loss = loss_fn(logits, y)
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            model(X)  # e.g. for an accuracy after the step
        losses.append(loss.item())
        sizes.append(len(y))
    return sum(l * s for l, s in zip(losses, sizes)) / sum(sizes)


@valid(T1)
def train_numpy_float(model, loader, loss_fn, optimizer):
    model.train()
    total, n = np.float64(0.0), 0
    for i, (X, y) in enumerate(loader):
        optimizer.zero_grad(set_to_none=True)
        out = model.forward(X)
        loss = loss_fn(out, y)
        loss.backward()
        optimizer.step()
        total += np.float64(loss.item()) * y.shape[0]
        n += y.shape[0]
    return total / n


@cheat(T1)
def train_course_copy_on_a_clone(model, loader, loss_fn, optimizer):
    """Trains a copy (so nothing can go wrong) and reports its loss."""
    twin = copy.deepcopy(model)
    opt = torch.optim.SGD(twin.parameters(), lr=optimizer.param_groups[0]["lr"])
    twin.train()
    total, n = 0.0, 0
    for X, y in loader:
        total += _five_steps(twin, X, y, loss_fn, opt).item() * len(y)
        n += len(y)
    model.train()
    model(X)
    return total / n


@cheat(T1)
def train_two_epochs_reports_second(model, loader, loss_fn, optimizer):
    model.train()
    for _ in range(2):
        total, n = 0.0, 0
        for X, y in loader:
            total += _five_steps(model, X, y, loss_fn, optimizer).item() * len(y)
            n += len(y)
    return total / n


# =========================================================================== 05 evaluate
EV = "05_training_loop.evaluate"


@wrong(EV)
def eval_divides_loss_by_batches(model, loader, loss_fn):
    model.eval()
    total, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for X, y in loader:
            logits = model(X)
            total += loss_fn(logits, y).item()
            correct += (logits.argmax(1) == y).sum().item()
            n += len(y)
    return total / len(loader), correct / n


@wrong(EV, "returned_tensor")
def eval_accuracy_tensor(model, loader, loss_fn):
    model.eval()
    total, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for X, y in loader:
            logits = model(X)
            total += loss_fn(logits, y).item() * len(y)
            correct += (logits.argmax(1) == y).sum()
            n += len(y)
    return total / n, correct / n


@wrong(EV)
def eval_swapped(model, loader, loss_fn):
    model.eval()
    total, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for X, y in loader:
            logits = model(X)
            total += loss_fn(logits, y).item() * len(y)
            correct += (logits.argmax(1) == y).sum().item()
            n += len(y)
    return correct / n, total / n


@wrong(EV, "softmax_before_loss")
def eval_softmax_first(model, loader, loss_fn):
    model.eval()
    total, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for X, y in loader:
            probs = model(X).softmax(dim=1)
            total += loss_fn(probs, y).item() * len(y)
            correct += (probs.argmax(1) == y).sum().item()
            n += len(y)
    return total / n, correct / n


@wrong(EV, "forgot_eval")
def eval_in_train_mode_no_grad(model, loader, loss_fn):
    total, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for X, y in loader:
            logits = model(X)
            total += loss_fn(logits, y).item() * len(y)
            correct += (logits.argmax(1) == y).sum().item()
            n += len(y)
    model.eval()
    return total / n, correct / n


@wrong(EV)
def eval_argmax_dim0(model, loader, loss_fn):
    model.eval()
    total, correct, n = 0.0, 0, 0
    with torch.inference_mode():
        for X, y in loader:
            logits = model(X)
            total += loss_fn(logits, y).item() * len(y)
            correct += (logits.argmax(0)[: len(y)] == y).sum().item()
            n += len(y)
    return total / n, correct / n


@valid(EV)
def eval_restores_train_mode(model, loader, loss_fn):
    was = model.training
    model.eval()
    losses, hits, n = [], 0, 0
    with torch.no_grad():
        for X, y in loader:
            out = model(X)
            losses.append(loss_fn(out, y) * len(y))
            hits += int((out.argmax(-1) == y).sum())
            n += len(y)
    model.train(was)
    return float(torch.stack(losses).sum() / n), hits / n


@valid(EV)
def eval_concatenates_logits(model, loader, loss_fn):
    model.train(False)
    with torch.inference_mode():
        outs = [(model(X), y) for X, y in loader]
        logits = torch.cat([o for o, _ in outs])
        y = torch.cat([t for _, t in outs])
        return loss_fn(logits, y).item(), (logits.argmax(1) == y).float().mean().item()


@valid(EV)
def eval_set_grad_enabled_block(model, loader, loss_fn):
    model.eval()
    total, correct, n = 0.0, 0.0, 0
    with torch.set_grad_enabled(False):
        for X, y in loader:
            logits = model(X)
            total += float(loss_fn(logits, y)) * len(y)
            correct += float((logits.max(1).indices == y).sum())
            n += len(y)
    return total / n, correct / n


@cheat(EV)
def eval_reports_fixed_numbers(model, loader, loss_fn):
    model.eval()
    with torch.no_grad():
        for X, _ in loader:
            model(X)
    return 1.0, 0.5


@cheat(EV)
def eval_only_first_batch(model, loader, loss_fn):
    model.eval()
    with torch.no_grad():
        X, y = next(iter(loader))
        logits = model(X)
        return loss_fn(logits, y).item(), (logits.argmax(1) == y).float().mean().item()


# =========================================================================== 05 clip_grad_norm
CG = "05_training_loop.clip_grad_norm"


@wrong(CG, "uses_builtin")
def clip_builtin(parameters, max_norm):
    return torch.nn.utils.clip_grad_norm_(parameters, max_norm).item()


@wrong(CG)
def clip_returns_tensor(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    total = torch.sqrt(sum((g**2).sum() for g in grads))
    if total > max_norm:
        for g in grads:
            g.mul_(max_norm / (total + 1e-6))
    return total


@wrong(CG)
def clip_forgets_none(parameters, max_norm):
    grads = [p.grad for p in parameters]
    total = torch.sqrt(sum((g**2).sum() for g in grads))
    if total > max_norm:
        for g in grads:
            g.mul_(max_norm / (total + 1e-6))
    return total.item()


@wrong(CG)
def clip_norm_of_weights(parameters, max_norm):
    params = [p for p in parameters if p.grad is not None]
    total = torch.sqrt(sum((p.detach() ** 2).sum() for p in params))
    if total > max_norm:
        for p in params:
            p.grad.mul_(max_norm / (total + 1e-6))
    return total.item()


@wrong(CG)
def clip_mean_of_squares(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    total = torch.sqrt(torch.cat([g.flatten() for g in grads]).pow(2).mean())
    if total > max_norm:
        for g in grads:
            g.mul_(max_norm / (total + 1e-6))
    return total.item()


@wrong(CG, "uses_builtin")
def clip_builtin_total_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    total = torch.nn.utils.get_total_norm(grads)
    torch.nn.utils.clip_grads_with_norm_(grads and [p for p in []] or [], max_norm, total)
    if total > max_norm:
        for g in grads:
            g.mul_(max_norm / (total + 1e-6))
    return total.item()


@wrong(CG, "exception")
def clip_crashes_without_grads(parameters, max_norm):
    """Right whenever some parameter has a gradient; with none, `torch.sqrt(sum([]))` is `sqrt(0)` of
    an int and raises TypeError (red team: the reference itself did this)."""
    grads = [p.grad for p in parameters if p.grad is not None]
    total = torch.sqrt(sum((g**2).sum() for g in grads))
    if total > max_norm:
        for g in grads:
            g.mul_(max_norm / (total + 1e-6))
    return total.item()


@wrong(CG)
def clip_largest_entry(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    total = max(g.abs().max() for g in grads)
    if total > max_norm:
        for g in grads:
            g.mul_(max_norm / (total + 1e-6))
    return float(total)


@wrong(CG, "not_clipped")
def clip_scaled_copies_never_written_back(parameters, max_norm):
    """(redteam) loops once over a list, but the scaled gradients are new tensors nobody keeps: nothing
    is clipped, and that is not `parameters_iterated_twice`."""
    grads = [p.grad for p in parameters if p.grad is not None]
    total = torch.sqrt(sum((g**2).sum() for g in grads))
    if total > max_norm:
        grads = [g * (max_norm / (total + 1e-6)) for g in grads]
    return total.item()


@wrong(CG, "scaled_weights")
def clip_scales_the_weights(parameters, max_norm):
    """(redteam) scales the parameters' data instead of their gradients."""
    params = [p for p in parameters if p.grad is not None]
    total = torch.sqrt(sum((p.grad**2).sum() for p in params))
    if total > max_norm:
        for p in params:
            p.data.mul_(max_norm / (total + 1e-6))
    return total.item()


@valid(CG)
def clip_linalg_out_of_place(parameters, max_norm):
    params = [p for p in parameters if p.grad is not None]
    if not params:
        return 0.0
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in params]))
    if total > max_norm:
        for p in params:
            p.grad = p.grad * (max_norm / (total + 1e-6))
    return float(total)


@valid(CG)
def clip_python_floats(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    total = math.sqrt(sum(float(g.double().pow(2).sum()) for g in grads))
    if total > max_norm:
        coef = max_norm / (total + 1e-6)
        for g in grads:
            g *= coef
    return total


@valid(CG)
def clip_flat_cat(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    total = torch.cat([g.reshape(-1) for g in grads] or [torch.zeros(0)]).norm()
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    for g in grads:
        g.mul_(coef)
    return total.item()


@cheat(CG)
def clip_only_when_far_above(parameters, max_norm):
    """The shown cases are 'much smaller' and 'much larger': clip only above 2 * max_norm."""
    grads = [p.grad for p in parameters if p.grad is not None]
    total = torch.sqrt(sum((g**2).sum() for g in grads))
    if total > 2 * max_norm:
        for g in grads:
            g.mul_(max_norm / (total + 1e-6))
    return total.item()


@cheat(CG)
def clip_lying_float(parameters, max_norm):
    """Returns a float subclass that claims to equal anything."""

    class Anything(float):
        def __eq__(self, other):
            return True

        __hash__ = float.__hash__

    list(parameters)
    return Anything(0.0)


# =========================================================================== 05 accumulated_step
AS = "05_training_loop.accumulated_step"


@wrong(AS, "one_backward")
def acc_sum_then_one_backward(model, loss_fn, optimizer, micro_batches):
    n = sum(len(y) for _, y in micro_batches)
    optimizer.zero_grad()
    total = sum(loss_fn(model(X), y) * len(y) / n for X, y in micro_batches)
    total.backward()
    optimizer.step()


@wrong(AS)
def acc_divides_by_total_only(model, loss_fn, optimizer, micro_batches):
    n = sum(len(y) for _, y in micro_batches)
    optimizer.zero_grad()
    for X, y in micro_batches:
        (loss_fn(model(X), y) / n).backward()
    optimizer.step()


@wrong(AS)
def acc_weights_by_batches_count(model, loss_fn, optimizer, micro_batches):
    optimizer.zero_grad()
    for X, y in micro_batches:
        (loss_fn(model(X), y) * len(y) / len(micro_batches)).backward()
    optimizer.step()


@wrong(AS, "forgot_zero_grad")
def acc_zero_after_step(model, loss_fn, optimizer, micro_batches):
    n = sum(len(y) for _, y in micro_batches)
    for X, y in micro_batches:
        (loss_fn(model(X), y) * len(y) / n).backward()
    optimizer.step()
    optimizer.zero_grad()


@wrong(AS)
def acc_only_last(model, loss_fn, optimizer, micro_batches):
    optimizer.zero_grad()
    X, y = micro_batches[-1]
    loss_fn(model(X), y).backward()
    optimizer.step()


@wrong(AS)
def acc_own_optimizer(model, loss_fn, optimizer, micro_batches):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    n = sum(len(y) for _, y in micro_batches)
    opt.zero_grad()
    for X, y in micro_batches:
        (loss_fn(model(X), y) * len(y) / n).backward()
    opt.step()


@valid(AS)
def acc_model_zero_grad_len_x(model, loss_fn, optimizer, micro_batches):
    model.zero_grad()
    n = sum(X.shape[0] for X, _ in micro_batches)
    for X, y in micro_batches:
        loss = loss_fn(model(X), y)
        (loss * (X.shape[0] / n)).backward()
    optimizer.step()


@valid(AS)
def acc_scale_grads_after(model, loss_fn, optimizer, micro_batches):
    optimizer.zero_grad()
    n = sum(len(y) for _, y in micro_batches)
    for X, y in micro_batches:
        (loss_fn(model(X), y) * len(y)).backward()
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p.grad /= n
    optimizer.step()


@valid(AS)
def acc_autograd_grad_sum(model, loss_fn, optimizer, micro_batches):
    params = [p for p in model.parameters()]
    n = sum(len(y) for _, y in micro_batches)
    acc = [torch.zeros_like(p) for p in params]
    for X, y in micro_batches:
        gs = torch.autograd.grad(loss_fn(model(X), y) * len(y) / n, params)
        acc = [a + g for a, g in zip(acc, gs)]
    optimizer.zero_grad()
    for p, a in zip(params, acc):
        p.grad = a
    optimizer.step()


@cheat(AS)
def acc_first_micro_batch_size_as_weight(model, loss_fn, optimizer, micro_batches):
    """Right only when all micro-batches have the same size."""
    optimizer.zero_grad()
    for X, y in micro_batches:
        (loss_fn(model(X), y) * len(micro_batches[0][1]) / (len(micro_batches) * len(micro_batches[0][1]))).backward()
    optimizer.step()


@cheat(AS)
def acc_step_then_undo(model, loss_fn, optimizer, micro_batches):
    """Steps per micro-batch but hides it by stepping a throwaway optimizer."""
    n = sum(len(y) for _, y in micro_batches)
    shadow = torch.optim.SGD(model.parameters(), lr=optimizer.param_groups[0]["lr"])
    optimizer.zero_grad()
    for X, y in micro_batches:
        (loss_fn(model(X), y) * len(y) / n).backward()
        shadow.step()


# =========================================================================== 05 EarlyStopping
ES = "05_training_loop.EarlyStopping"


class _ES:
    def __init__(self, patience=3):
        self.patience = patience
        self.best_loss = float("inf")
        self.best_state = None
        self.bad_epochs = 0


@wrong(ES, "state_not_copied")
class ESShallowCopy(_ES):
    def step(self, val_loss, model):
        if val_loss < self.best_loss:
            self.best_loss, self.best_state, self.bad_epochs = val_loss, copy.copy(model.state_dict()), 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


@wrong(ES, "state_not_copied")
class ESDictComprehension(_ES):
    def step(self, val_loss, model):
        if val_loss < self.best_loss:
            self.best_loss, self.bad_epochs = val_loss, 0
            self.best_state = {k: v for k, v in model.state_dict().items()}
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


@wrong(ES)
class ESStoresModelCopy(_ES):
    def step(self, val_loss, model):
        if val_loss < self.best_loss:
            self.best_loss, self.best_state, self.bad_epochs = val_loss, copy.deepcopy(model), 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


@wrong(ES)
class ESMinDelta(_ES):
    def step(self, val_loss, model):
        if val_loss < self.best_loss - 1e-3:
            self.best_loss, self.best_state, self.bad_epochs = val_loss, copy.deepcopy(model.state_dict()), 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


@wrong(ES)
class ESComparesWithPrevious(_ES):
    last = float("inf")

    def step(self, val_loss, model):
        if val_loss < self.last:
            self.bad_epochs = 0
            if val_loss < self.best_loss:
                self.best_loss, self.best_state = val_loss, copy.deepcopy(model.state_dict())
        else:
            self.bad_epochs += 1
        self.last = val_loss
        return self.bad_epochs >= self.patience


@wrong(ES)
class ESBestLossNotUpdated(_ES):
    def step(self, val_loss, model):
        if val_loss < self.best_loss:
            self.best_state, self.bad_epochs = copy.deepcopy(model.state_dict()), 0
            if self.best_loss == float("inf"):
                self.best_loss = val_loss
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


@valid(ES)
class ESClonedTensors(_ES):
    def step(self, val_loss, model):
        improved = val_loss < self.best_loss
        if improved:
            self.best_loss = float(val_loss)
            self.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        self.bad_epochs = 0 if improved else self.bad_epochs + 1
        return self.bad_epochs == self.patience


@valid(ES)
class ESDeepcopyModel(_ES):
    def step(self, val_loss, model):
        if val_loss >= self.best_loss:
            self.bad_epochs += 1
            return self.bad_epochs >= self.patience
        self.best_loss = val_loss
        self.best_state = copy.deepcopy(model).state_dict()
        self.bad_epochs = 0
        return False


@valid(ES)
class ESSavedBytes(_ES):
    def step(self, val_loss, model):
        import io
        if val_loss < self.best_loss:
            buf = io.BytesIO()
            torch.save(model.state_dict(), buf)
            buf.seek(0)
            self.best_state = dict(torch.load(buf))
            self.best_loss, self.bad_epochs = val_loss, 0
        else:
            self.bad_epochs += 1
        return bool(self.bad_epochs >= self.patience)


@cheat(ES)
class ESStopsAfterFixedEpochs(_ES):
    epochs = 0

    def step(self, val_loss, model):
        self.epochs += 1
        if val_loss < self.best_loss:
            self.best_loss, self.best_state = val_loss, copy.deepcopy(model.state_dict())
        return self.epochs >= 2 * self.patience + 1


@cheat(ES)
class ESNeverStops(_ES):
    def step(self, val_loss, model):
        if val_loss < self.best_loss:
            self.best_loss, self.best_state = val_loss, copy.deepcopy(model.state_dict())
        return False


# =========================================================================== 05 warmup_cosine
WC = "05_training_loop.warmup_cosine"
LambdaLR = torch.optim.lr_scheduler.LambdaLR


@wrong(WC)
def wc_no_max_one(optimizer, warmup_steps, total_steps):
    def f(s):
        if s < warmup_steps:
            return (s + 1) / warmup_steps
        return 0.5 * (1 + math.cos(math.pi * (s - warmup_steps) / (total_steps - warmup_steps)))
    return LambdaLR(optimizer, f)


@wrong(WC)
def wc_boundary_le(optimizer, warmup_steps, total_steps):
    def f(s):
        if s <= warmup_steps and warmup_steps:
            return (s + 1) / (warmup_steps + 1)
        return 0.5 * (1 + math.cos(math.pi * (s - warmup_steps) / max(1, total_steps - warmup_steps)))
    return LambdaLR(optimizer, f)


@wrong(WC)
def wc_returns_lr(optimizer, warmup_steps, total_steps):
    lr = optimizer.param_groups[0]["lr"]

    def f(s):
        if s < warmup_steps:
            return lr * (s + 1) / warmup_steps
        return lr * 0.5 * (1 + math.cos(math.pi * (s - warmup_steps) / max(1, total_steps - warmup_steps)))
    return LambdaLR(optimizer, f)


@wrong(WC)
def wc_progress_over_total(optimizer, warmup_steps, total_steps):
    def f(s):
        if s < warmup_steps:
            return (s + 1) / warmup_steps
        return 0.5 * (1 + math.cos(math.pi * (s - warmup_steps) / total_steps))
    return LambdaLR(optimizer, f)


@wrong(WC)
def wc_cosine_annealing_only(optimizer, warmup_steps, total_steps):
    return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total_steps)


@wrong(WC)
def wc_new_optimizer(optimizer, warmup_steps, total_steps):
    opt = torch.optim.SGD(optimizer.param_groups[0]["params"], lr=optimizer.param_groups[0]["lr"])
    return LambdaLR(opt, lambda s: (s + 1) / warmup_steps if s < warmup_steps else
                    0.5 * (1 + math.cos(math.pi * (s - warmup_steps) / max(1, total_steps - warmup_steps))))


@valid(WC)
def wc_numpy_min(optimizer, warmup_steps, total_steps):
    def f(s):
        warm = (s + 1) / warmup_steps if warmup_steps else 1.0
        prog = min(max(s - warmup_steps, 0) / max(1, total_steps - warmup_steps), 1.0)
        return float(warm) if s < warmup_steps else float(0.5 * (1 + np.cos(np.pi * prog)))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=f)


@valid(WC)
def wc_sin_squared(optimizer, warmup_steps, total_steps):
    """cos^2(pi p / 2) == (1 + cos(pi p)) / 2."""
    span = max(1, total_steps - warmup_steps)
    return LambdaLR(optimizer, lambda s: (s + 1) / warmup_steps if s < warmup_steps
                    else math.cos(math.pi * (s - warmup_steps) / span / 2) ** 2)


@valid(WC)
def wc_multiplicative_free_list(optimizer, warmup_steps, total_steps):
    table = [(s + 1) / warmup_steps if s < warmup_steps else
             0.5 * (1 + math.cos(math.pi * (s - warmup_steps) / max(1, total_steps - warmup_steps)))
             for s in range(total_steps + 1)]
    return LambdaLR(optimizer, lambda s: table[min(s, total_steps)])


@cheat(WC)
def wc_hardcoded_first_case(optimizer, warmup_steps, total_steps):
    table = [(s + 1) / 4 if s < 4 else 0.5 * (1 + math.cos(math.pi * (s - 4) / 8)) for s in range(13)]
    return LambdaLR(optimizer, lambda s: table[min(s, 12)] if warmup_steps == 4 else 1.0)


@cheat(WC)
def wc_lying_scheduler(optimizer, warmup_steps, total_steps):
    class Lying(torch.optim.lr_scheduler.LRScheduler):
        def get_lr(self):
            return [g["lr"] for g in self.optimizer.param_groups]
    return Lying(optimizer)


# =========================================================================== 08 confusion_matrix
CM = "09_capstone.confusion_matrix"


@wrong(CM)
def cm_float_counts(preds, targets, num_classes):
    cm = torch.zeros(num_classes, num_classes)
    for t, p in zip(targets.tolist(), preds.tolist()):
        cm[t, p] += 1
    return cm


@wrong(CM)
def cm_bincount_no_minlength(preds, targets, num_classes):
    return torch.bincount(targets * num_classes + preds).reshape(num_classes, -1)


@wrong(CM, "transposed")
def cm_loop_pred_rows(preds, targets, num_classes):
    cm = torch.zeros(num_classes, num_classes, dtype=torch.int64)
    for t, p in zip(targets, preds):
        cm[p, t] += 1
    return cm


@wrong(CM)
def cm_classes_from_unique(preds, targets, num_classes):
    k = len(torch.unique(torch.cat([preds, targets])))
    cm = torch.zeros(k, k, dtype=torch.int64)
    for t, p in zip(targets.tolist(), preds.tolist()):
        cm[t, p] += 1
    return cm


@wrong(CM)
def cm_max_of_data(preds, targets, num_classes):
    k = max(int(preds.max()), int(targets.max()), num_classes - 1) + 1
    cm = torch.zeros(k, k, dtype=torch.int64)
    cm.index_put_((targets, preds), torch.ones_like(preds), accumulate=True)
    return cm


@wrong(CM)
def cm_in_place_index(preds, targets, num_classes):
    targets *= num_classes
    targets += preds
    return torch.bincount(targets, minlength=num_classes**2).reshape(num_classes, num_classes)


@wrong(CM)
def cm_int32(preds, targets, num_classes):
    cm = torch.zeros(num_classes, num_classes, dtype=torch.int32)
    cm.index_put_((targets, preds), torch.ones_like(targets, dtype=torch.int32), accumulate=True)
    return cm


@valid(CM)
def cm_one_hot_matmul(preds, targets, num_classes):
    F = torch.nn.functional
    return F.one_hot(targets, num_classes).T @ F.one_hot(preds, num_classes)


@valid(CM)
def cm_sklearn(preds, targets, num_classes):
    from sklearn.metrics import confusion_matrix as sk_cm
    if len(targets) == 0:  # sklearn refuses empty input
        return torch.zeros(num_classes, num_classes, dtype=torch.int64)
    return torch.from_numpy(sk_cm(targets.numpy(), preds.numpy(), labels=list(range(num_classes)))).long()


@valid(CM)
def cm_bincount(preds, targets, num_classes):
    return torch.bincount(targets * num_classes + preds, minlength=num_classes**2).view(num_classes, num_classes)


@cheat(CM)
def cm_assumes_perfect(preds, targets, num_classes):
    return torch.diag(torch.bincount(targets, minlength=num_classes))


@cheat(CM)
def cm_lying_subclass(preds, targets, num_classes):
    class Agreeable(torch.Tensor):
        def __eq__(self, other):
            return torch.ones_like(torch.as_tensor(other), dtype=torch.bool)

    return torch.zeros(num_classes, num_classes, dtype=torch.int64).as_subclass(Agreeable)


# =========================================================================== 08 DigitClassifier
DC = "09_capstone.DigitClassifier"


def _digit_cnn(dropout=0.0):
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), *([nn.Dropout(dropout)] if dropout else []), nn.Linear(32 * 16, 64), nn.ReLU(), nn.Linear(64, 10))


def _fit_model(model, X, y, epochs=8, lr=3e-3, batch=64, opt="adam"):
    torch.manual_seed(0)
    optimizer = (torch.optim.Adam(model.parameters(), lr=lr) if opt == "adam"
                 else torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9))
    g = torch.Generator().manual_seed(0)
    model.train()
    for _ in range(epochs):
        perm = torch.randperm(len(y), generator=g)
        for i in range(0, len(y), batch):
            idx = perm[i : i + batch]
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(X[idx]), y[idx]).backward()
            optimizer.step()
    return model


class _Clf:
    epochs, lr, opt, dropout = 8, 3e-3, "adam", 0.0

    def fit(self, X, y):
        torch.manual_seed(0)
        self.model = _fit_model(_digit_cnn(self.dropout), X, y, self.epochs, self.lr, opt=self.opt)
        return self

    def predict(self, X):
        self.model.eval()
        with torch.inference_mode():
            return self.model(X).argmax(dim=1)


@wrong(DC, "predictions_shape")
class DCReturnsProbabilities(_Clf):
    def predict(self, X):
        self.model.eval()
        with torch.no_grad():
            return self.model(X).softmax(dim=1)


@wrong(DC, "not_trained")
class DCTrainsACopy(_Clf):
    def fit(self, X, y):
        torch.manual_seed(0)
        self.model = _digit_cnn()
        _fit_model(copy.deepcopy(self.model), X, y, epochs=1)
        return self


@wrong(DC, "predictions_shape")
class DCArgmaxWithoutDim(_Clf):
    def predict(self, X):
        self.model.eval()
        with torch.no_grad():
            return self.model(X).argmax()


@wrong(DC, "forgot_eval")
class DCDropoutNoEval(_Clf):
    dropout = 0.3

    def predict(self, X):
        with torch.no_grad():
            return self.model(X).argmax(dim=1)


@wrong(DC, "grad_left_off")
class DCSetGradEnabledFalse(_Clf):
    def predict(self, X):
        self.model.eval()
        torch.set_grad_enabled(False)
        return self.model(X).argmax(dim=1)


@wrong(DC, "no_model")
class DCKeepsNetElsewhere(_Clf):
    def fit(self, X, y):
        torch.manual_seed(0)
        self.net = _fit_model(_digit_cnn(), X, y, epochs=1)
        return self

    def predict(self, X):
        self.net.eval()
        with torch.no_grad():
            return self.net(X).argmax(dim=1)


@wrong(DC, "softmax_output")
class DCSoftmaxLayer(_Clf):
    def fit(self, X, y):
        torch.manual_seed(0)
        self.model = _fit_model(nn.Sequential(*_digit_cnn(), nn.Softmax(dim=1)), X, y, epochs=2)
        return self


@valid(DC)
class DCRestoresModeAndBatches(_Clf):
    dropout = 0.2

    def predict(self, X):
        was = self.model.training
        self.model.eval()
        with torch.no_grad():
            out = torch.cat([self.model(X[i : i + 100]) for i in range(0, len(X), 100)])
        self.model.train(was)
        return out.argmax(1).to(torch.int64)


@valid(DC)
class DCCustomModule(_Clf):
    """A custom nn.Module that takes flat or image input and registers its head first."""

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Sequential(nn.Linear(32 * 16, 64), nn.ReLU(), nn.Linear(64, 10))
            self.features = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))

        def forward(self, x):
            return self.head(self.features(x.reshape(-1, 1, 8, 8)).flatten(1))

    def fit(self, X, y):
        torch.manual_seed(0)
        self.model = _fit_model(self.Net(), X.flatten(1), y, epochs=15)
        return self

    def predict(self, X):
        self.model.eval()
        with torch.inference_mode():
            return self.model(X.flatten(1)).argmax(dim=1)


@valid(DC)
class DCSgdMomentumInferenceFlag(_Clf):
    epochs, lr, opt = 12, 0.05, "sgd"

    def predict(self, X):
        self.model.train(False)
        with torch.inference_mode():
            logits = self.model.forward(X)
        return torch.max(logits, dim=1).indices


@cheat(DC)
class DCNearestNeighbourBehindTheModel(_Clf):
    """Runs the (untrained) network for show, answers with the nearest training image."""

    def fit(self, X, y):
        torch.manual_seed(0)
        self.model, self.X, self.y = _digit_cnn(), X.flatten(1), y
        return self

    def predict(self, X):
        self.model.eval()
        with torch.no_grad():
            self.model(X)
        return self.y[torch.cdist(X.flatten(1), self.X).argmin(1)]


@cheat(DC)
class DCLyingPredictions(_Clf):
    def fit(self, X, y):
        torch.manual_seed(0)
        self.model = _digit_cnn()
        return self

    def predict(self, X):
        class Agreeable(torch.Tensor):
            def __eq__(self, other):
                return torch.ones(self.shape, dtype=torch.bool)

        self.model.eval()
        with torch.no_grad():
            return self.model(X).argmax(1).as_subclass(Agreeable)


# =========================================================================== red-team reviewer's findings (regressions)
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


@wrong(RW, "reseeded_torch_or_random")
def reseed_torch_and_random_by_worker_id(worker_id):
    info = get_worker_info()
    random.seed(worker_id)
    torch.manual_seed(worker_id)
    info.dataset.rng = np.random.default_rng(info.seed)


@wrong(T1, "graph_kept_alive")
def train_sums_loss_tensors(model, loader, loss_fn, optimizer):
    model.train()
    total, n = 0, 0
    for X, y in loader:
        loss = _five_steps(model, X, y, loss_fn, optimizer)
        total = total + loss * len(y)
        n += len(y)
    return (total / n).item()


@wrong(EV, "wrong_type")
def eval_returns_list(model, loader, loss_fn):
    model.eval()
    tl, c, n = 0.0, 0, 0
    with torch.no_grad():
        for X, y in loader:
            z = model(X)
            tl += loss_fn(z, y).item() * len(y)
            c += (z.argmax(1) == y).sum().item()
            n += len(y)
    return [tl / n, c / n]


@wrong(AS, "mutated_input")
def acc_zeroes_inputs(model, loss_fn, optimizer, micro_batches):
    n = sum(len(y) for _, y in micro_batches)
    optimizer.zero_grad()
    for X, y in micro_batches:
        (loss_fn(model(X), y) * len(y) / n).backward()
        X.zero_()
    optimizer.step()


@wrong(AS, "changed_micro_batches")
def acc_pops_the_list(model, loss_fn, optimizer, micro_batches):
    n = sum(len(y) for _, y in micro_batches)
    optimizer.zero_grad()
    while micro_batches:
        X, y = micro_batches.pop()
        (loss_fn(model(X), y) * len(y) / n).backward()
    optimizer.step()


@cheat(DC)
class DCKnnModule(_Clf):
    """A 3-nearest-neighbour vote wrapped in an nn.Module with buffers only."""

    class KNN(nn.Module):
        def __init__(self, X, y):
            super().__init__()
            self.register_buffer("X", X.flatten(1))
            self.register_buffer("y", y)

        def forward(self, x):
            idx = torch.cdist(x.flatten(1), self.X).topk(3, largest=False).indices
            return nn.functional.one_hot(self.y[idx], 10).sum(1).float() * 5.0 - 1.0

    def fit(self, X, y):
        self.model = self.KNN(X, y)
        return self


@cheat(DC)
class DCNearestNeighbourBehindTrainedNet(_Clf):
    def fit(self, X, y):
        torch.manual_seed(0)
        self.model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
        opt = torch.optim.Adam(self.model.parameters(), lr=1e-2)
        for _ in range(3):
            opt.zero_grad()
            nn.functional.cross_entropy(self.model(X), y).backward()
            opt.step()
        self.X, self.y = X.flatten(1), y
        return self

    def predict(self, X):
        self.model.eval()
        with torch.inference_mode():
            self.model(X)
            return self.y[torch.cdist(X.flatten(1), self.X).argmin(1)]


# --------------------------------------------------------------------------- later reviewer findings
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


@wrong(T1, "reseeded_global_rng")
def train_reseeds_every_epoch(model, loader, loss_fn, optimizer):
    torch.manual_seed(0)
    model.train()
    total, n = 0.0, 0
    for X, y in loader:
        total += _five_steps(model, X, y, loss_fn, optimizer).item() * len(y)
        n += len(y)
    return total / n


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


MY_LESSONS = ("04_data", "05_training_loop", "09_capstone")


def test_every_exercise_has_its_red_team():
    from course_utils import grading

    for eid in grading.exercises():
        if eid.split(".")[0] not in MY_LESSONS:
            continue
        assert len(WRONG[eid]) >= 5, eid
        assert len(VALID[eid]) >= 3, eid
        assert len(CHEATS[eid]) >= 2, eid
