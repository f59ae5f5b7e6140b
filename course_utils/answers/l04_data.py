"""Generated from solutions/04_data.py by `python -m course_utils build`; do not edit.

The answer definitions of the lesson's solution notebook (marker lines dropped) and the
notebook-level names they use; the exercises of 04_data take their references from here."""

# ruff: noqa

import numpy as np
import torch
from torch.utils.data import Dataset
from torch.utils.data import WeightedRandomSampler
from torch.nn.utils.rnn import pad_sequence
from course_utils.datasets import PAD
from torch.utils.data import IterableDataset, get_worker_info


class WindowDataset(Dataset):
    def __init__(self, series, window, horizon=1):
        self.series = series
        self.window = window
        self.horizon = horizon

    def __len__(self):
        return max(0, len(self.series) - self.window - self.horizon + 1)

    def __getitem__(self, i):
        x = self.series[i : i + self.window]
        y = self.series[i + self.window + self.horizon - 1]
        return x, y


def stratified_split(y, test_fraction, generator):
    train, test = [], []
    for c in torch.unique(y):
        idx = (y == c).nonzero().flatten()
        idx = idx[torch.randperm(len(idx), generator=generator)]
        n_test = round(len(idx) * test_fraction)
        test.append(idx[:n_test])
        train.append(idx[n_test:])
    return torch.cat(train), torch.cat(test)


def balanced_sampler(y, generator=None):
    class_counts = torch.bincount(y)
    weights = 1.0 / class_counts[y].double()  # one weight per item: every class's weights add up to 1
    return WeightedRandomSampler(weights, num_samples=len(y), replacement=True,  # rare items come up again
                                 generator=generator)  # repeatable from the caller's generator


def pad_collate(batch):
    seqs = [tokens for tokens, _ in batch]
    lengths = torch.tensor([len(s) for s in seqs])
    padded = pad_sequence(seqs, batch_first=True, padding_value=PAD)
    labels = torch.stack([label for _, label in batch])
    return padded, lengths, labels


class MiniLoader:
    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None,
                 generator=None):
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.collate_fn = collate_fn if collate_fn is not None else torch.utils.data.default_collate
        self.generator = generator

    def __len__(self):
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        n = len(self.dataset)
        order = torch.randperm(n, generator=self.generator).tolist() if self.shuffle else range(n)
        for start in range(0, len(self) * self.batch_size, self.batch_size):
            items = [self.dataset[i] for i in order[start:start + self.batch_size]]
            yield self.collate_fn(items)


class ShardedRange(IterableDataset):
    def __init__(self, start, end):
        self.start = start
        self.end = end

    def __iter__(self):
        info = get_worker_info()
        if info is None:  # no workers: this process does everything
            return iter(range(self.start, self.end))
        return iter(range(self.start + info.id, self.end, info.num_workers))


def reseed_worker(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)
