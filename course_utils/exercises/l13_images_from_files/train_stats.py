"""train_stats: per-channel mean and std of every pixel of the training items, over batches.

Subtle: the std of all pixels is not the mean of per-batch or per-image stds (the cases give
each image its own brightness, drifting along the dataset, so both are clearly smaller); the
held-out items are brighter, so stats over all items or over the held-out ones show. Population
and sample std differ by a factor sqrt(n / (n - 1)) with n >= 1,600 pixels a channel: both pass.
"""

from __future__ import annotations

import torch
from torch.utils.data import Dataset

from course_utils.grading import Case, Exercise, Expect, Incorrect, Mistake, Rand, pair_of, register

from ._kit import LESSON

# --- reference: the notebook's answer (generated from solutions/13_images_from_files.py)
from ...answers.l13_images_from_files import train_stats


class Images(Dataset):
    """``(image (C, H, W), label)`` items from one tensor, as an image dataset gives them."""

    def __init__(self, X: torch.Tensor):
        self.X = X

    def __len__(self) -> int:
        return len(self.X)

    def __getitem__(self, i: int):
        return self.X[i], i % 3


# --- cases
def _cases(r: Rand) -> Case:
    n, c, h = r.integer(90, 160), r.integer(1, 3), r.integer(5, 8)
    drift = torch.linspace(0.0, 0.5, n).view(n, 1, 1, 1)  # later images brighter: batches differ
    X = 0.2 + drift + 0.15 * r.rand(n, 1, 1, 1) + 0.1 * r.randn(n, c, h, h) + 0.1 * torch.arange(c).view(1, c, 1, 1)
    held_out = torch.randperm(n, generator=r.torch)[: n // 4]
    X[held_out] += 0.6
    train = torch.ones(n, dtype=torch.bool)
    train[held_out] = False
    return Case((X.float(), train.nonzero().flatten()))


EDGE_CASES = [Case((torch.arange(2 * 100 * 16, dtype=torch.float32).reshape(100, 2, 4, 4) / 3200,
                    torch.arange(0, 100, 2)), label="100 images of 2 channels, the even ones for training")]


def _stats(X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    flat = X.double().transpose(0, 1).flatten(1)
    return flat.mean(1), flat.std(1, correction=0), flat.std(1, correction=1)


def _close(a: torch.Tensor, b: torch.Tensor, tol: float = 1e-4) -> bool:
    return bool(((a.double() - b).abs() <= tol + 1e-4 * b.abs()).all())


# --- run and probes
_PAIR = Expect("not_a_pair", "a pair `(mean, std)` of float tensors",
               lambda out: pair_of(torch.Tensor)(out) and all(t.is_floating_point() for t in out))


def _run(answer, case: Case):
    X, train_idx = case.args
    data, idx = X.clone(), train_idx.clone()
    out = answer(Images(data), idx)
    if not (torch.equal(data, X) and torch.equal(idx, train_idx)):
        raise Incorrect("mutated_input")
    _PAIR.check(out)
    mean, std = out
    c = X.shape[1]
    if mean.shape != (c,) or std.shape != (c,):
        if mean.shape == X.shape[1:] or mean.numel() == X[0].numel() != c:
            raise Incorrect("per_pixel", shape=tuple(mean.shape), c=c)
        raise Incorrect("not_per_channel", shape=tuple(mean.shape), c=c)
    in_test = torch.ones(len(X), dtype=torch.bool)
    in_test[train_idx] = False
    m, pop, sample = _stats(X[train_idx])
    m_all, pop_all, _ = _stats(X)
    m_test, _, _ = _stats(X[in_test])
    if not _close(mean, m):
        if _close(mean, m_all):
            raise Incorrect("used_all_items")
        if _close(mean, m_test):
            raise Incorrect("used_held_out")
        raise Incorrect("wrong_mean")
    if not (_close(std, pop) or _close(std, sample)):
        if _close(std, pop_all):
            raise Incorrect("used_all_items")
        if bool((std.double() < pop).all()):
            raise Incorrect("averaged_stds")
        raise Incorrect("wrong_std")
    return True


# --- wrong answers
def _batches(dataset, train_idx, batch_size=64):
    X = torch.stack([dataset[i][0] for i in train_idx.tolist()])
    return [X[i:i + batch_size] for i in range(0, len(X), batch_size)]


def _mean_of_batch_stds(dataset, train_idx):
    mean, _ = train_stats(dataset, train_idx)
    return mean, torch.stack([b.transpose(0, 1).flatten(1).std(1) for b in _batches(dataset, train_idx)]).mean(0)


def _all_items(dataset, train_idx):
    return train_stats(dataset, torch.arange(len(dataset)))


def _held_out(dataset, train_idx):
    rest = torch.ones(len(dataset), dtype=torch.bool)
    rest[train_idx] = False
    return train_stats(dataset, rest.nonzero().flatten())


def _scalar(dataset, train_idx):
    X = torch.cat(_batches(dataset, train_idx))
    return X.mean(), X.std()


def _per_pixel(dataset, train_idx):
    X = torch.cat(_batches(dataset, train_idx))
    return X.mean(0), X.std(0)


def _normalises_in_place(dataset, train_idx):
    mean, std = train_stats(dataset, train_idx)
    for i in range(len(dataset)):
        dataset[i][0].sub_(mean[:, None, None]).div_(std[:, None, None])  # the caller's images change
    return mean, std


# --- declaration
register(Exercise(
    lesson=LESSON, name="train_stats", title="Normalisation statistics of the training split",
    reference=train_stats, kind="function", run=_run, cases=_cases, edge_cases=EDGE_CASES, n_random=4,
    uses_global_rng=True,  # a DataLoader draws its base seed from the global RNG
    mistakes=[
        Mistake("averaged_stds", "Your std is too small: it looks like an average of per-batch or per-image "
                "stds, which leaves out how much the batches (or images) differ from each other. Accumulate "
                "the sum and the sum of squares of all pixels per channel, and take the std once at the end.",
                _mean_of_batch_stds, match_output=False),
        Mistake("used_all_items", "Your statistics include the held-out items: compute them from "
                "`train_idx` only (`Subset(dataset, train_idx)`), or the test set shapes the preprocessing.",
                _all_items, match_output=False),
        Mistake("used_held_out", "Your statistics are those of the items *not* in `train_idx`: use the "
                "training items.", _held_out, match_output=False),
        Mistake("not_per_channel", "Your mean has shape {shape}; `Normalize` wants one number per channel: "
                "shape ({c},). Reduce over the batch, height and width (`dim=(0, 2, 3)`), not the channels.",
                _scalar, match_output=False),
        Mistake("per_pixel", "Your mean has shape {shape}: one value per pixel. Reduce over the height and "
                "width too, leaving one number per channel, shape ({c},).", _per_pixel, match_output=False),
        Mistake("mutated_input", "Your function changed the dataset's images (or `train_idx`) in place: a "
                "statistics function must only read them, or every later use of the data sees altered "
                "pixels. Normalise later, in a transform, with the statistics it returns.", _normalises_in_place,
                match_output=False),
        Mistake("wrong_mean", "Your mean is not the mean of all training pixels per channel.", None,
                match_output=False),
        Mistake("wrong_std", "Your std is not the std of all training pixels per channel.", None,
                match_output=False),
        _PAIR.mistake(),
    ],
    hints=[
        "Which images may the mean be computed from, if the test set must stay unseen? And is the std of all the "
        "pixels the average of the stds of the batches?",
        "Statistics come from the training items only, over all their pixels at once, one value per channel. The "
        "variance is the mean of the squares minus the square of the mean, so per batch you only add up, per channel, "
        "the pixels, their squares and how many there were; the mean and the std are taken once, at the end, from "
        "those totals (in float64, so that the sums keep their digits).",
        "Look up `torch.utils.data.Subset` and `torch.utils.data.DataLoader`; a tensor's `sum` reduces several dims "
        "at once, and `torch.Tensor.double` gives float64.",
    ],
))
