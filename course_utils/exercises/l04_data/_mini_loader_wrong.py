"""mini_loader's known-wrong answers: each makes one of its declared mistakes (the exercise file names which)."""

from __future__ import annotations


import torch
from ...answers.l04_data import MiniLoader



class _Cut(MiniLoader):
    """The reference in parts a wrong answer changes: the order, where the batches start."""

    def _order(self):
        n = len(self.dataset)
        return torch.randperm(n, generator=self.generator).tolist() if self.shuffle else list(range(n))

    def _starts(self):
        return range(0, MiniLoader.__len__(self) * self.batch_size, self.batch_size)

    def __iter__(self):
        order = self._order()
        for start in self._starts():
            yield self.collate_fn([self.dataset[i] for i in order[start:start + self.batch_size]])


class _KeepsLast(_Cut):
    def _starts(self):
        return range(0, len(self.dataset), self.batch_size)

    def __len__(self):
        return len(self._starts())


class _DropsAFullBatch(_KeepsLast):
    """``range(0, n - batch_size, batch_size)`` with drop_last: one batch short when n divides evenly."""

    def _starts(self):
        return range(0, len(self.dataset) - self.batch_size if self.drop_last else len(self.dataset), self.batch_size)


class _OrderOnce(_Cut):
    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None, generator=None):
        super().__init__(dataset, batch_size, shuffle, drop_last, collate_fn, generator)
        self.order = _Cut._order(self)

    def _order(self):
        return self.order


class _ThroughRandomSampler(_Cut):
    """Orders each epoch with a RandomSampler, which draws a second randperm per epoch."""

    def _order(self):
        from torch.utils.data import RandomSampler, SequentialSampler

        return list(RandomSampler(self.dataset, generator=self.generator) if self.shuffle
                    else SequentialSampler(self.dataset))


class _LenIgnoresDropLast(_Cut):
    def __len__(self):
        return -(-len(self.dataset) // self.batch_size)


class _GlobalShuffle(MiniLoader):
    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None, generator=None):
        super().__init__(dataset, batch_size, shuffle, drop_last, collate_fn, None)


class _ShufflesWhenGivenAGenerator(MiniLoader):
    """Looks at the generator, not at ``shuffle``: an unshuffled loader given a generator shuffles."""

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None, generator=None):
        super().__init__(dataset, batch_size, shuffle or generator is not None, drop_last, collate_fn, generator)


class _NotCollated(MiniLoader):
    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None, generator=None):
        super().__init__(dataset, batch_size, shuffle, drop_last, collate_fn or list, generator)


class _CollatePerItem(MiniLoader):
    def __iter__(self):
        for batch in MiniLoader.__iter__(MiniLoader(self.dataset, self.batch_size, self.shuffle, self.drop_last,
                                                    list, self.generator)):
            yield [self.collate_fn([item]) for item in batch]


class _LenAfterEpoch(MiniLoader):
    """Remembers the number of batches of the last epoch: no length before the first one."""

    def __iter__(self):
        self.batches = list(MiniLoader.__iter__(self))
        return iter(self.batches)

    def __len__(self):
        return len(self.batches)


class _PairsOnlyCollate(MiniLoader):
    """A stand-in for default_collate that handles ``(tensor, int)`` pairs only."""

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None, generator=None):
        super().__init__(dataset, batch_size, shuffle, drop_last, collate_fn or (
            lambda items: (torch.stack([x for x, _ in items]), torch.tensor([y for _, y in items]))), generator)


class _NoIter:
    """Batches behind a method of its own: `for batch in loader` does not work."""

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None, generator=None):
        self.inner = MiniLoader(dataset, batch_size, shuffle, drop_last, collate_fn, generator)

    def batches(self):
        return list(self.inner)
