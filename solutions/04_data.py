# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 04 · Data: `Dataset` and `DataLoader`
#
# A model learns from batches. Two classes turn your data into batches:
#
# - a **`Dataset`** knows how many items there are and how to get item `i`;
# - a **`DataLoader`** draws items from it in some order, groups them into batches, and can
#   prepare them in parallel worker processes.
#
# You will learn to
#
# 1. write map-style datasets (`__len__` / `__getitem__`) and use `TensorDataset`;
# 2. split data reproducibly (`random_split`, `Subset`, a stratified split);
# 3. control batching (`batch_size`, `shuffle`, `drop_last`), samplers and `collate_fn`;
# 4. stream data with an `IterableDataset` and split the stream between workers;
# 5. measure when `num_workers` helps and when it hurts;
# 6. keep randomness reproducible in workers.
#
# **Time: about 110 minutes** on your own, the seven checked exercises included (about 65 of those minutes). *Run All* alone takes about 6.9 s on a 2-core CPU.

# %%
import os

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset

from course_utils.lesson_props import l04_data_lab as data_lab
from course_utils.lesson_props import l04_data_workers as dw
from course_utils.datasets import DigitsDataset, SequenceDataset, load_digits, sine_series
from course_utils.grading import exercises_for, predictions_for, reference

ex = exercises_for("04_data")
quiz = predictions_for("04_data")  # predict-the-output questions
_ = torch.manual_seed(0)

# %% [markdown]
# ## 1. A dataset is anything with `__len__` and `__getitem__`
#
# That is the whole *map-style* contract: `len(ds)` items, and `ds[i]` returns item `i`
# (usually an `(input, target)` pair). Even a plain list of pairs qualifies:

# %% [markdown]
# **Predict the output** (dtype): Items are `(tensor, int)` pairs. What dtype do the labels `yb` of a DataLoader batch have?

# %% tags=["predict:collated_label_dtype"]
quiz.collated_label_dtype(
    ### BEGIN PREDICTION
    torch.int64
    ### END PREDICTION
)

# %%
pairs = [(torch.tensor([float(i), float(i)]), i % 2) for i in range(5)]
loader = DataLoader(pairs, batch_size=2)
for xb, yb in loader:
    print(xb.tolist(), yb)

# %% [markdown]
# The DataLoader fetched items one by one and **collated** each group: tensors were stacked
# along a new first dimension, Python ints became an int64 tensor.
#
# When inputs and targets are already tensors with one row per item, `TensorDataset` indexes
# them together:

# %%
X, y = load_digits()
digits = TensorDataset(X, y)
x0, y0 = digits[0]
print(len(digits), "items; item 0:", tuple(x0.shape), x0.dtype, "label", y0.item())

# %% [markdown]
# Writing your own is three methods. `DigitsDataset` (from `course_utils.datasets`) is one:
# it loads the scikit-learn digits once in `__init__` and returns `(image, label)` in
# `__getitem__`, applying an optional `transform` to the image. Transforms are plain
# callables, functions or objects with `__call__`, chained by calling one after the other:

# %%
def add_noise(image, scale=0.15):
    return (image + scale * torch.randn_like(image)).clamp(0, 1)


def shift(image, max_shift=1):
    """Move the digit by up to `max_shift` pixels each way; zeros come in at the edges."""
    dy, dx = torch.randint(-max_shift, max_shift + 1, (2,)).tolist()
    h, w = image.shape[-2:]
    padded = torch.nn.functional.pad(image, (max_shift,) * 4)
    return padded[..., max_shift + dy:max_shift + dy + h, max_shift + dx:max_shift + dx + w]


def noisy_shift(image):
    return add_noise(shift(image))


plain = DigitsDataset("train", images=True)
augmented = DigitsDataset("train", images=True, transform=noisy_shift)
torch.manual_seed(0)
shown = torch.stack([plain[i][0] for i in range(6)] + [augmented[i][0] for i in range(6)])
labels = [int(plain[i][1]) for i in range(6)] * 2

from course_utils.plotting import image_grid  # noqa: E402

image_grid(shown, labels, ncols=6)
plt.show()

# %% [markdown]
# The top row is the data, the bottom row the same items through `noisy_shift`. The transform
# runs every time an item is fetched, so the shift and the noise differ each epoch: that is how
# data augmentation works.
#
# An augmentation must keep the **label** true. A digit moved by a pixel, or a little noisier,
# is still the same digit. A horizontal flip (`image.flip(-1)`) is not a safe choice here: a
# mirrored 2, 3, 4, 7 or 9 is no digit at all, and the model would learn it under the original's
# label. Flips suit photos of cats, not characters.

# %% [markdown]
# ## 2. Your own Dataset: sliding windows over a time series
#
# To forecast a series, each training item is a **window** of past values `x` and the value
# that follows as target `y`. A series of 8 values with a window of 3 gives:
#
# | item | x (indices) | y (index) |
# |---|---|---|
# | 0 | 0, 1, 2 | 3 |
# | 1 | 1, 2, 3 | 4 |
# | ... | ... | ... |
# | 4 | 4, 5, 6 | 7 |
#
# Five items, not six: the window starting at 5 has no value after it. With a *horizon* `h`
# the target is `h` steps after the window's last value, so fewer windows fit.
#
# Off-by-one errors here are common and silent: a target that is the window's own last value
# gives a model that "forecasts" by copying its input, with an excellent loss.

# %%
series = sine_series(200)
window, i = 20, 60
fig, ax = plt.subplots(figsize=(7, 2.5))
ax.plot(series.numpy(), color="0.7", lw=1, label="series")
ax.plot(range(i, i + window), series[i : i + window].numpy(), color="tab:blue", lw=2, label="x: the window")
ax.scatter([i + window], [series[i + window].item()], color="tab:red", zorder=3, label="y: the next value")
ax.set_xlabel("time step")
ax.legend(fontsize=8, loc="upper left")
fig.tight_layout()

# %% [markdown]
# ### Exercise 1: `WindowDataset`
#
# Complete the class. `series` is a 1-D float tensor; item `i` is the pair `(x, y)` where `x`
# is the tensor of `window` values starting at index `i` (shape `(window,)`) and `y` is the
# 0-dim tensor `horizon` steps after the last value of `x`. `__len__` is the number of
# windows whose target still lies inside the series (0 for a series too short for one).

# %% tags=["answer:WindowDataset"]
class WindowDataset(Dataset):
    def __init__(self, series, window, horizon=1):
        self.series = series
        self.window = window
        self.horizon = horizon

    def __len__(self):
        ### BEGIN SOLUTION
        return max(0, len(self.series) - self.window - self.horizon + 1)
        ### END SOLUTION

    def __getitem__(self, i):
        ### BEGIN SOLUTION
        x = self.series[i : i + self.window]
        y = self.series[i + self.window + self.horizon - 1]
        return x, y
        ### END SOLUTION


# %% tags=["check:WindowDataset"]
ex.WindowDataset.check(WindowDataset)

# %% [markdown]
# ## 3. Splitting: `random_split` and `Subset`
#
# `random_split` cuts a dataset into random parts, given as counts or fractions. Pass a
# `generator` with a fixed seed and the split is the same in every run (and does not depend on
# what else used the global random state before):

# %% [markdown]
# **Predict the output** (value): `random_split` of the 1797 digits with fractions `[0.8, 0.2]`: what is `len(test_set)`?

# %% tags=["predict:random_split_test_len"]
quiz.random_split_test_len(
    ### BEGIN PREDICTION
    359
    ### END PREDICTION
)

# %%
gen = torch.Generator().manual_seed(42)
train_set, test_set = torch.utils.data.random_split(digits, [0.8, 0.2], generator=gen)
print(type(train_set).__name__, len(train_set), len(test_set))
print("first test indices:", test_set.indices[:8])

# %% [markdown]
# Each part is a `Subset`: the original dataset plus a list of indices. `Subset(ds, indices)`
# makes one directly, for any indices you choose.
#
# A random split does not look at the labels. With imbalanced classes a small class can end
# up with too few, or no, test items. Here is a dataset with 40 / 8 / 4 items per class,
# split 75/25 five times:

# %%
y_small = torch.tensor([0] * 40 + [1] * 8 + [2] * 4)
small = TensorDataset(torch.arange(len(y_small)), y_small)
for seed in range(5):
    _, test_part = torch.utils.data.random_split(small, [0.75, 0.25], generator=torch.Generator().manual_seed(seed))
    print(f"seed {seed}: test items per class", torch.bincount(y_small[test_part.indices], minlength=3).tolist())
print("stratified would be                  ", [10, 2, 1])

# %% [markdown]
# ### Exercise 2: `stratified_split`
#
# Write `stratified_split(y, test_fraction, generator)`. `y` is an int64 tensor of class
# labels. Return `(train_idx, test_idx)`, two 1-D int64 tensors of positions in `y`, such
# that every index is in exactly one of them, each class `c` puts `round(n_c *
# test_fraction)` of its `n_c` items into test (chosen at random), and the same `generator`
# seed always gives the same split. Use only `generator` for randomness.

# %% tags=["answer:stratified_split"]
def stratified_split(y, test_fraction, generator):
    ### BEGIN SOLUTION
    train, test = [], []
    for c in torch.unique(y):
        idx = (y == c).nonzero().flatten()
        idx = idx[torch.randperm(len(idx), generator=generator)]
        n_test = round(len(idx) * test_fraction)
        test.append(idx[:n_test])
        train.append(idx[n_test:])
    return torch.cat(train), torch.cat(test)
    ### END SOLUTION


# %% tags=["check:stratified_split"]
ex.stratified_split.check(stratified_split)

# %% [markdown]
# The indices go straight into `Subset(dataset, train_idx)` and `Subset(dataset, test_idx)`.
# (scikit-learn's `train_test_split(..., stratify=y)` does the same for NumPy arrays.)

# %% [markdown]
# ## 4. Batches: `batch_size`, `shuffle`, `drop_last`
#
# A DataLoader yields `ceil(n / batch_size)` batches; the last one is smaller unless
# `drop_last=True` throws it away (useful when every batch must have the same size, for
# example with BatchNorm and tiny remainders).

# %% [markdown]
# **Predict the output** (value): 1797 digits, `DataLoader(digits, batch_size=256, drop_last=True)`: what is `len(loader)`?

# %% tags=["predict:drop_last_batches"]
quiz.drop_last_batches(
    ### BEGIN PREDICTION
    7
    ### END PREDICTION
)

# %%
loader = DataLoader(digits, batch_size=256)
print(len(loader), "batches:", [len(xb) for xb, _ in loader])
loader = DataLoader(digits, batch_size=256, drop_last=True)
print(len(loader), "batches:", [len(xb) for xb, _ in loader])

# %% [markdown]
# Move the sliders: how many batches, how big is the last one, how many items are lost?

# %% tags=["nbval-ignore-output"]
from ipywidgets import Checkbox, IntSlider, interact  # noqa: E402


def show_batches(batch_size, drop_last):
    data_lab.plot_batch_sizes(100, batch_size, drop_last)
    plt.show()


_ = interact(show_batches, batch_size=IntSlider(32, 1, 100), drop_last=Checkbox(False))

# %% [markdown]
# `shuffle=True` visits the items in a new random order every epoch, which is what training
# wants (evaluation does not need it). The order comes from the global random state unless you
# give the loader its own `generator`; with a seeded generator the sequence of epochs is
# reproducible:

# %%
def first_labels(loader):
    return [next(iter(loader))[1][:8].tolist() for _ in range(2)]  # first batch of two epochs


for run in range(2):
    loader = DataLoader(digits, batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(0))
    print(f"run {run}: labels of the first batch in epoch 1 and in epoch 2:", *first_labels(loader), sep="\n  ")

# %% [markdown]
# Each epoch differs, yet both runs repeat the same sequence.

# %% [markdown]
# ## 5. Samplers decide the order
#
# Behind `shuffle` is a **sampler**: an iterable of indices. `shuffle=False` uses a
# `SequentialSampler`, `shuffle=True` a `RandomSampler`; you can pass your own with
# `sampler=`. A `BatchSampler` groups indices into lists, one list per batch, and goes in
# `batch_sampler=` (then `batch_size`, `shuffle`, `sampler` and `drop_last` must stay unset):

# %%
from torch.utils.data import BatchSampler, RandomSampler, SequentialSampler, WeightedRandomSampler  # noqa: E402

print(list(SequentialSampler(range(6))))
print(list(RandomSampler(range(6), generator=torch.Generator().manual_seed(0))))
batches = BatchSampler(SequentialSampler(range(7)), batch_size=3, drop_last=False)
print(list(batches))
loader = DataLoader(digits, batch_sampler=batches)
print([yb.tolist() for _, yb in loader])

# %% [markdown]
# `WeightedRandomSampler(weights, num_samples, replacement=True)` draws `num_samples` indices,
# index `i` with probability proportional to `weights[i]`. With the right weights, a rare class
# is drawn as often as a common one: the model sees balanced batches without throwing data away.
#
# A colleague wrote a balancing sampler for a training set whose classes have 200, 50 and 10
# items. Drawing one epoch from it fails:

# %% tags=["raises-exception"]
def colleague_sampler(y, generator=None):
    class_counts = torch.bincount(y)
    weights = 1.0 / class_counts  # rare classes weigh more
    return WeightedRandomSampler(weights, num_samples=len(y), replacement=False)  # no item twice


y_imb = torch.tensor([0] * 200 + [1] * 50 + [2] * 10)
drawn = list(colleague_sampler(y_imb, generator=torch.Generator().manual_seed(0)))

# %% [markdown]
# ### Exercise 3: `balanced_sampler`
#
# Write `balanced_sampler(y, generator=None)`: from the labels `y` of a training set, return a
# `WeightedRandomSampler` for its DataLoader such that **every class is drawn equally often** on
# average, an epoch is `len(y)` draws, and the draws repeat exactly when the caller passes a
# generator seeded the same way.
#
# The colleague's function has **three** problems. Only one of them makes it fail; the other two
# are silent, and a version without the error can still balance nothing. The check draws from
# your sampler and names each problem it still finds.

# %% tags=["answer:balanced_sampler"]
def balanced_sampler(y, generator=None):
    ### BEGIN SOLUTION
    class_counts = torch.bincount(y)
    weights = 1.0 / class_counts[y].double()  # one weight per item: every class's weights add up to 1
    return WeightedRandomSampler(weights, num_samples=len(y), replacement=True,  # rare items come up again
                                 generator=generator)  # repeatable from the caller's generator
    ### END SOLUTION


# %% tags=["check:balanced_sampler"]
ex.balanced_sampler.check(balanced_sampler)

# %% [markdown]
# The colleague's weights were one per *class*: the sampler draws indices into its weights, so it
# could only ever draw items 0, 1 and 2 (all of class 0). Without replacement no item comes up
# twice, so an epoch holds every item once and the classes keep their 200 : 50 : 10. And a
# `generator` that is accepted but not passed on leaves the draws to the global random state.
# Here is the effect of the course's answer on the colleague's data:

# %%
shuffled = list(RandomSampler(y_imb, generator=torch.Generator().manual_seed(0)))
balanced = list(reference("04_data.balanced_sampler")(y_imb, generator=torch.Generator().manual_seed(0)))
print("shuffle=True     draws per class:", data_lab.class_counts_drawn(y_imb, shuffled).tolist())
print("balanced sampler draws per class:", data_lab.class_counts_drawn(y_imb, balanced).tolist())
data_lab.plot_class_balance(y_imb, {"shuffle=True": torch.tensor(shuffled), "balanced sampler": torch.tensor(balanced)})
plt.show()

# %% [markdown]
# The 10 items of class 2 are each drawn about 8 times per epoch: balance by repetition.
# Watch for overfitting on them.

# %% [markdown]
# ## 6. `collate_fn`: batching items of different sizes
#
# The default collate stacks tensors, which needs equal shapes. Token sequences have
# different lengths. `SequenceDataset` returns `(tokens, label)` with 2 to 12 tokens, and
# batching it fails with the message you will meet in your own projects:

# %%
seqs = SequenceDataset(n=200)
print([len(seqs[i][0]) for i in range(4)])

# %% [markdown]
# **Predict the output** (value): Items hold token tensors of different lengths, and the default collate fails on a batch of them. Which `DataLoader(seqs, batch_size=4, ...)` gives a first batch: a `shuffle=True`, b `collate_fn=lambda items: items`, c `collate_fn=lambda items: pad_sequence([x for x, _ in items], batch_first=True)`, d `drop_last=True`? Answer with the list of letters in order, such as `['c']`.

# %% tags=["predict:ragged_collate"]
quiz.ragged_collate(
    ### BEGIN PREDICTION
    ['b', 'c']
    ### END PREDICTION
)

# %% tags=["raises-exception"]
next(iter(DataLoader(seqs, batch_size=4)))

# %% [markdown]
# A `collate_fn` receives the list of items of one batch and builds the batch however you
# like. The lesson's text-classification script already has a model; it expects its batches in
# one format. Here are the two batches its loader made from items 4 to 10 of `seqs`:

# %%
script_batches = data_lab.script_batches()  # what the script printed for items 4 to 10, batches of 4
for k, batch in enumerate(script_batches):
    print(f"batch {k}: {len(batch)} parts:", *(f"{tuple(part.shape)} {part.dtype}" for part in batch))
    print(*batch, sep="\n")
print("item 4:", seqs[4])
print("item 10:", seqs[10])

# %% [markdown]
# ### Exercise 4: `pad_collate`
#
# Write `pad_collate(batch)`, a `collate_fn` that turns any list of `(tokens, label)` items
# (`tokens` a 1-D int64 tensor of 1 or more tokens, `label` a 0-dim int64 tensor) into a batch in
# exactly that format. Read it off the two batches: the layout, how wide the batch is, what fills
# the gaps and where, and what each part holds (why would a model need the second one?).
#
# The check compares every part, dtype included, on batches of other sizes and lengths, and
# names what differs.

# %% tags=["answer:pad_collate"]
from torch.nn.utils.rnn import pad_sequence  # noqa: E402

from course_utils.datasets import PAD  # noqa: E402


def pad_collate(batch):
    ### BEGIN SOLUTION
    seqs = [tokens for tokens, _ in batch]
    lengths = torch.tensor([len(s) for s in seqs])
    padded = pad_sequence(seqs, batch_first=True, padding_value=PAD)
    labels = torch.stack([label for _, label in batch])
    return padded, lengths, labels
    ### END SOLUTION


# %% tags=["check:pad_collate"]
ex.pad_collate.check(pad_collate)

# %% [markdown]
# The format, in words: one row per sequence, in the order of the items (batch first), as wide
# as the longest sequence *of this batch* (a batch of short sequences stays narrow), the tokens
# first and then `PAD` (0, `course_utils.datasets.PAD`). The true lengths come second: a padded
# row alone cannot say where its tokens end, and the model needs that to ignore the padding.
# Then the labels, one tensor. `pad_sequence` does the padding, with time first unless told
# otherwise.

# %% [markdown]
# ### Exercise 5: reproduce the old loader from its log
#
# Without workers, a DataLoader is a short loop. The lab's old loader, a small class without
# workers, is lost; runs that must be resumed depend on its exact batches, and its log survives.
# It took `DataLoader`'s arguments, `(dataset, batch_size=1, shuffle=False, drop_last=False,
# collate_fn=None, generator=None)`, with the same meanings, and on ten `(features, label)` items
# whose label is the item's index it logged the batches below (and `len(loader)`, asked before
# the first epoch). Torch's own `DataLoader`, shuffling with a generator seeded alike, gives
# other orders (the cell shows it): the shuffling is yours to reproduce from the log.

# %%
old_log = {  # the labels of each batch, epoch after epoch
    "batch_size=4": [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]],
    "batch_size=4, drop_last=True": [[0, 1, 2, 3], [4, 5, 6, 7]],
    "batch_size=5, drop_last=True": [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]],
    "batch_size=4, generator seeded 3": [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]],
    "batch_size=4, shuffle=True, generator seeded 3, epoch 1": [[6, 0, 3, 7], [8, 5, 1, 9], [2, 4]],
    "batch_size=4, shuffle=True, generator seeded 3, epoch 2": [[9, 8, 5, 3], [0, 6, 7, 2], [1, 4]],
}
old_len = {"batch_size=4": 3, "batch_size=4, drop_last=True": 2, "batch_size=5, drop_last=True": 2}
ten = TensorDataset(torch.arange(20.0).view(10, 2), torch.arange(10))


def labels_of(loader):
    """One epoch of a loader over `ten`: the labels of each batch."""
    return [batch[1].tolist() for batch in loader]


torch_loader = DataLoader(ten, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(3))
print("DataLoader, epoch 1:", labels_of(torch_loader), " epoch 2:", labels_of(torch_loader))

# %% [markdown]
# Write `MiniLoader` with that signature: it reproduces the log exactly, and behaves as the old
# loader did on any dataset and settings. The check compares yours with it, epoch after epoch, on
# datasets whose items are pairs, triples or dicts, with and without a `collate_fn` (which, as in
# `DataLoader`, makes a batch out of the list of its items). Do not use `DataLoader` or
# `BatchSampler` inside it.

# %% tags=["answer:MiniLoader"]
class MiniLoader:
    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None,
                 generator=None):
        ### BEGIN SOLUTION
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.collate_fn = collate_fn if collate_fn is not None else torch.utils.data.default_collate
        self.generator = generator
        ### END SOLUTION

    def __len__(self):
        ### BEGIN SOLUTION
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        ### END SOLUTION

    def __iter__(self):
        ### BEGIN SOLUTION
        n = len(self.dataset)
        order = torch.randperm(n, generator=self.generator).tolist() if self.shuffle else range(n)
        for start in range(0, len(self) * self.batch_size, self.batch_size):
            items = [self.dataset[i] for i in order[start:start + self.batch_size]]
            yield self.collate_fn(items)
        ### END SOLUTION


# %% tags=["check:MiniLoader"]
ex.MiniLoader.check(MiniLoader)

# %% [markdown]
# What the log said. The two shuffled epochs are the first two permutations of ten that a
# generator seeded 3 gives: `torch.randperm(len(dataset), generator=generator)`, drawn when an
# epoch starts (in `__iter__`), one per epoch, so a seeded generator gives a reproducible
# *sequence* of epochs; an order drawn once in `__init__` repeats. A generator without
# `shuffle=True` changes nothing. The order is cut into batches of `batch_size`, the last one
# shorter, or left out with `drop_last` (and only when it is short), and `len` follows from
# `len(dataset)`, `batch_size` and `drop_last` alone. Without a `collate_fn` the batches are
# `default_collate`'s, as in `DataLoader`: it stacks tensors, turns numbers into a tensor, and
# batches tuples and dicts field by field.
#
# `DataLoader`'s orders differ because before shuffling it draws a seed for its workers from the
# same generator (even with `num_workers=0`), and its `RandomSampler` draws a second permutation;
# with a `sampler` giving the same order, the batches are the same.

# %% [markdown]
# ## 7. `IterableDataset`: streams, and workers that duplicate them
#
# Some data cannot be indexed: lines arriving from a file or a socket, records generated on
# the fly. An `IterableDataset` only defines `__iter__`, and the DataLoader batches whatever it
# yields. `dw.UnshardedRange(0, 6)` yields 0, ..., 5:

# %%
print([int(v) for v in DataLoader(dw.UnshardedRange(0, 6), batch_size=None)])

# %% [markdown]
# With `num_workers=2`, **each worker process gets its own copy of the dataset and iterates
# all of it**, so every item arrives twice:

# %%
print([int(v) for v in DataLoader(dw.UnshardedRange(0, 6), batch_size=None, num_workers=2)])

# %% [markdown]
# The fix is to let each copy yield only its share. Inside a worker,
# `torch.utils.data.get_worker_info()` returns the worker's `id` (0, 1, ...), the total
# `num_workers`, a per-worker `seed` and this worker's copy of the `dataset`. In the main
# process (`num_workers=0`) it returns `None`.
#
# (Map-style datasets do not have this problem: the main process hands each worker the
# indices it should fetch.)
#
# ### Exercise 6: `ShardedRange`
#
# Complete `__iter__` so that the integers `start, ..., end - 1` come out exactly once in
# total, with any number of workers, including none. The check runs your class as 0, 1, 2
# and 3 workers would see it and, where worker processes are forked (Linux), through a real
# DataLoader with 1 and 2 workers.

# %% tags=["answer:ShardedRange"]
from torch.utils.data import IterableDataset, get_worker_info  # noqa: E402


class ShardedRange(IterableDataset):
    def __init__(self, start, end):
        self.start = start
        self.end = end

    def __iter__(self):
        ### BEGIN SOLUTION
        info = get_worker_info()
        if info is None:  # no workers: this process does everything
            return iter(range(self.start, self.end))
        return iter(range(self.start + info.id, self.end, info.num_workers))
        ### END SOLUTION


# %% tags=["check:ShardedRange"]
ex.ShardedRange.check(ShardedRange)

# %% [markdown]
# The course's version is `dw.ShardedRange`. Every item once, whatever the number of workers
# (the order interleaves the workers' shares):

# %%
for num_workers in (0, 1, 2):
    items = [int(v) for v in DataLoader(dw.ShardedRange(0, 7), batch_size=None, num_workers=num_workers)]
    print(f"num_workers={num_workers}: {items}")

# %% [markdown]
# Why are these classes in a module (`course_utils.lesson_props.l04_data_workers`) and not in the notebook?
# On Windows and macOS (and on Linux from Python 3.14) workers are started fresh and receive
# the dataset by pickling; a class defined in a notebook cannot be found there and the loader
# fails with `Can't get attribute 'ShardedRange' on <module '__main__'>`. Classes (and
# `collate_fn`s, transforms, `worker_init_fn`s) that workers use belong in a `.py` file.

# %% [markdown]
# ## 8. `num_workers`: when workers help and when they hurt
#
# Workers prepare batches in parallel processes while the main process trains. That pays
# when preparing an item costs real CPU time (decoding images, parsing text, augmenting), and
# costs when items are cheap: every batch is pickled and sent between processes, and workers
# take time to start.
#
# Measure it. `dw.SlowItems` spends about half a millisecond of Python work on each item;
# the second dataset is in-memory tensors. Workers are kept alive between epochs
# (`persistent_workers=True`) and one warm-up epoch runs first, so start-up is not counted.
# This takes about 5 seconds; the numbers depend on your machine and on what else it is doing.

# %% tags=["nbval-ignore-output"]
def throughput(dataset, batch_size, worker_counts=(0, 1, 2)):
    speeds = {}
    for n in worker_counts:
        loader = DataLoader(dataset, batch_size=batch_size, num_workers=n, persistent_workers=n > 0)
        speeds[n] = dw.time_loader(loader)
        del loader
    return speeds


cheap = TensorDataset(torch.randn(8192, 16), torch.randint(0, 10, (8192,)))
results = {
    "slow items (CPU work per item)": throughput(dw.SlowItems(n=256), batch_size=32),
    "cheap in-memory tensors": throughput(cheap, batch_size=64),
}
for name, speeds in results.items():
    print(name, {n: f"{s:,.0f} items/s" for n, s in speeds.items()},
          f"-> 2 workers: {speeds[2] / speeds[0]:.1f}x the speed of 0")
data_lab.plot_worker_throughput(results, title=f"a machine with {os.cpu_count()} CPU cores")
plt.show()

# %% [markdown]
# Read your own numbers. On an otherwise idle 2-core machine we measured the slow items about
# 1.7× faster with 2 workers, and the cheap tensors 3–6× *slower* with any workers. On a busy
# machine (other programs, a shared cloud notebook) the gain shrinks or vanishes, as it may in
# the output above: workers need free cores.
# Rules of thumb:
#
# - start with `num_workers=0`; add workers when the loader, not the model, is the
#   bottleneck (the GPU or the training step waits for data);
# - more workers than CPU cores does not help (the DataLoader warns about it);
# - `persistent_workers=True` avoids restarting workers every epoch. The workers are then
#   seeded once, when they start, and their random streams run on across epochs; without it,
#   every epoch starts new workers with new seeds. Either is fine for augmentation, but a
#   per-epoch reseed you wrote in `worker_init_fn` runs only once with persistent workers.
#
# **`pin_memory=True`** puts batches in page-locked memory so that copies to a GPU are faster
# and can overlap with compute. It only pays with an accelerator; without one, PyTorch warns
# and ignores it:

# %% tags=["nbval-ignore-output"]
import warnings  # noqa: E402

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    next(iter(DataLoader(digits, batch_size=8, pin_memory=True)))
print(caught[0].message if caught else "no warning: this machine has an accelerator, pinning is used")

# %% [markdown]
# ## 9. Randomness inside workers
#
# Each worker seeds `torch`, Python's `random` and NumPy's *global* RNG with its own seed,
# different per worker and per epoch, and derived from the main process's random state (or
# from the loader's `generator`). That seed is `get_worker_info().seed` (section 7); here it is
# for two workers in two epochs, in two runs whose loaders get the same `generator` seed:

# %%
for run in range(2):
    loader = DataLoader(dw.WorkerSeeds(), batch_size=None, num_workers=2, generator=torch.Generator().manual_seed(0))
    print(f"run {run}:", [[row["seed"] for row in loader] for epoch in range(2)])

# %% [markdown]
# Random transforms that draw from those streams are fine. `dw.NoisyItems` adds its noise
# another way: it creates `self.rng = np.random.default_rng(seed)` in `__init__`, and item `i`
# is `i + noise`, the noise drawn from `self.rng`. Watch the noise (item minus index) with two
# workers, which fetch items 0, 2, 4, 6 and 1, 3, 5, 7:

# %%
def noise_of(loader):
    return [round(float(v) - i, 4) for i, v in enumerate(loader)]


print("0 workers:", noise_of(DataLoader(dw.NoisyItems(n=8, seed=0), batch_size=None)))
print("2 workers:", noise_of(DataLoader(dw.NoisyItems(n=8, seed=0), batch_size=None, num_workers=2)))

# %% [markdown]
# Without workers every item gets fresh noise. With two, items 0 and 1, 2 and 3, ... get
# identical noise: augmentations repeat across workers.
#
# A colleague found a well-known fix and passed it as the loader's `worker_init_fn`, a function
# the DataLoader calls once at the start of every worker, with the worker's id:

# %%
import inspect  # noqa: E402

print(inspect.getsource(dw.colleague_worker_init))
print("2 workers:", noise_of(DataLoader(dw.NoisyItems(n=8, seed=0), batch_size=None, num_workers=2,
                                        worker_init_fn=dw.colleague_worker_init)))

# %% [markdown]
# It changes nothing.
#
# ### Exercise 7: `reseed_worker`
#
# Work out why, then write `reseed_worker(worker_id)`: a `worker_init_fn` after which
# `NoisyItems` with two workers gives every item noise of its own, different from worker to
# worker and from epoch to epoch, and the same again when the loader's `generator` is seeded the
# same. Do not reseed the streams the DataLoader already seeded per worker (torch's, Python's
# `random`): other random transforms rely on them. (Drawing from them is fine.)
#
# The check runs your function as each of two workers, in two epochs, twice, and names what it
# still finds wrong.

# %% tags=["answer:reseed_worker"]
def reseed_worker(worker_id):
    ### BEGIN SOLUTION
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)
    ### END SOLUTION


# %% tags=["check:reseed_worker"]
ex.reseed_worker.check(reseed_worker)

# %% [markdown]
# Why the colleague's fix changed nothing: it reseeds NumPy's *global* generator, which PyTorch
# (since 1.9) already seeds per worker, but `NoisyItems` draws from its own `self.rng`. Every
# worker receives a copy of the dataset, generator included, in the same state; each copy needs a
# generator of its own, seeded from what differs per worker and per epoch and repeats with the
# loader's `generator`: `get_worker_info().seed`.
#
# With the course's `dw.reseed_worker` (a `worker_init_fn` must be importable too) every item
# gets its own noise, and a seeded loader `generator` makes the run repeatable:

# %%
for run in range(2):
    loader = DataLoader(dw.NoisyItems(n=8, seed=0), batch_size=None, num_workers=2, worker_init_fn=dw.reseed_worker,
                        generator=torch.Generator().manual_seed(0))
    print(f"run {run}:", noise_of(loader))

# %% [markdown]
# ## Recap
#
# - A map-style `Dataset` is `__len__` + `__getitem__`; `TensorDataset` wraps tensors;
#   transforms are plain callables applied in `__getitem__`.
# - Split with `random_split(..., generator=...)` or your own indices and `Subset`; stratify
#   when classes are imbalanced.
# - `DataLoader`: `batch_size`, `shuffle` (with a seeded `generator` for reproducible order),
#   `drop_last`; samplers choose indices (`WeightedRandomSampler` balances classes,
#   `BatchSampler` groups them); `collate_fn` builds a batch, e.g. padding ragged sequences.
# - Default collate needs equal shapes: "stack expects each tensor to be equal size".
# - `IterableDataset` streams; with workers, shard with `get_worker_info()` or every item
#   arrives once per worker.
# - Workers help when items cost CPU time and hurt for cheap in-memory tensors: measure.
#   `pin_memory` only matters with an accelerator. Keep worker code in modules.
# - Generators stored on a dataset are copied into every worker: reseed them in a
#   `worker_init_fn` from `get_worker_info().seed`.
#
# Next: **05_training_loop**, where these loaders feed a model.

# %% [markdown]
# ## Further reading
#
# PyTorch documentation:
#
# - [`torch.utils.data`](https://docs.pytorch.org/docs/stable/data.html): map-style and iterable
#   datasets, samplers, `collate_fn`, workers, `worker_init_fn` and randomness in workers: every
#   section of this lesson.
# - [Reproducibility](https://docs.pytorch.org/docs/stable/notes/randomness.html): seeding the
#   `DataLoader`'s generator and its workers.
# - [`torch.nn.utils.rnn.pad_sequence`](https://docs.pytorch.org/docs/stable/generated/torch.nn.utils.rnn.pad_sequence.html):
#   the padding used by `pad_collate`.
#
# The best external material:
#
# - PyTorch tutorials, [Datasets &
#   DataLoaders](https://docs.pytorch.org/tutorials/beginner/basics/data_tutorial.html): a custom
#   `Dataset` over image files, the next step after this lesson's in-memory data.
# - Zero to Mastery *Learn PyTorch*, [Custom
#   datasets](https://www.learnpytorch.io/04_pytorch_custom_datasets/): an image-folder dataset
#   built by hand, with transforms and augmentation.
# - Sebastian Raschka, [*PyTorch in One
#   Hour*](https://sebastianraschka.com/teaching/pytorch-1h/), the section on efficient data
#   loaders: `Dataset` and `DataLoader` for training a model, in a few lines.
