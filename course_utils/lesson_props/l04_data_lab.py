"""Plain functions behind lesson 04's plots and widgets (testable without a notebook).

- :func:`batch_sizes`: the size of every batch a DataLoader makes for ``n`` items.
- :func:`plot_batch_sizes`: those sizes as bars (the ``batch_size`` / ``drop_last`` widget).
- :func:`class_counts_drawn`: how often each class comes out of a sampler.
- :func:`plot_class_balance`: class shares in the data and as drawn by a sampler.
- :func:`plot_worker_throughput`: items/s against ``num_workers`` for several datasets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

__all__ = ["batch_sizes", "class_counts_drawn", "plot_batch_sizes", "plot_class_balance",
           "plot_worker_throughput"]


def batch_sizes(n: int, batch_size: int, drop_last: bool = False) -> list[int]:
    """Sizes of the batches a DataLoader yields for ``n`` items: full batches, then the
    remainder as a smaller last batch unless ``drop_last`` throws it away."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    full, rest = divmod(n, batch_size)
    return [batch_size] * full + ([rest] if rest and not drop_last else [])


def plot_batch_sizes(n: int, batch_size: int, drop_last: bool = False) -> Figure:
    """Bars of :func:`batch_sizes`; a short last batch is orange, dropped items are counted in
    the title."""
    sizes = batch_sizes(n, batch_size, drop_last)
    fig, ax = plt.subplots(figsize=(6, 2.4))
    colors = ["tab:blue" if s == batch_size else "tab:orange" for s in sizes]
    ax.bar(range(len(sizes)), sizes, color=colors, width=0.8)
    ax.set_xlabel("batch index")
    ax.set_ylabel("items")
    ax.set_ylim(0, batch_size * 1.15)
    dropped = n - sum(sizes)
    ax.set_title(f"{n} items, batch_size={batch_size}, drop_last={drop_last}: {len(sizes)} batches"
                 + (f", {dropped} items dropped" if dropped else ""), fontsize=9)
    fig.tight_layout()
    return fig


def class_counts_drawn(y: torch.Tensor, indices: Iterable[int], num_classes: int | None = None) -> torch.Tensor:
    """How many of the drawn ``indices`` belong to each class of ``y`` (int64, one per class)."""
    idx = torch.as_tensor(list(indices), dtype=torch.int64)
    k = int(y.max()) + 1 if num_classes is None else num_classes
    return torch.bincount(y[idx], minlength=k)


def plot_class_balance(y: torch.Tensor, drawn: Mapping[str, torch.Tensor]) -> Figure:
    """Side-by-side bars: each class's share of ``y`` and of every index tensor in ``drawn``
    (e.g. ``{"shuffle=True": idx1, "balanced sampler": idx2}``)."""
    k = int(y.max()) + 1
    series = {"in the data": torch.bincount(y, minlength=k)}
    series.update({name: class_counts_drawn(y, idx, k) for name, idx in drawn.items()})
    fig, ax = plt.subplots(figsize=(6, 2.8))
    width = 0.8 / len(series)
    for j, (name, counts) in enumerate(series.items()):
        share = counts.double() / counts.sum()
        ax.bar(torch.arange(k).double() + (j - (len(series) - 1) / 2) * width, share.numpy(), width, label=name)
    ax.set_xticks(range(k))
    ax.set_xlabel("class")
    ax.set_ylabel("share of items")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_worker_throughput(results: Mapping[str, Mapping[int, float]], title: str | None = None) -> Figure:
    """``results[name][num_workers] = items per second``: one panel per dataset, bars per
    worker count, each panel scaled to its own numbers (speeds differ by orders of magnitude)."""
    fig, axes = plt.subplots(1, len(results), figsize=(3.2 * len(results), 2.8), squeeze=False)
    for ax, (name, by_workers) in zip(axes.flat, results.items()):
        workers: Sequence[int] = sorted(by_workers)
        speeds = [by_workers[w] for w in workers]
        bars = ax.bar([str(w) for w in workers], speeds, color="tab:blue")
        base = by_workers.get(0)
        if base:
            for bar, s in zip(bars, speeds):
                ax.annotate(f"{s / base:.2g}×", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                            ha="center", va="bottom", fontsize=8)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("num_workers")
        ax.set_ylabel("items / s")
        ax.set_ylim(0, max(speeds) * 1.2)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


# The two batches a colleague's script printed for items 4-10 of `SequenceDataset(n=200)` (batch_size=4),
# the format the pad_collate exercise asks the learner to read off. Stored as data, not computed: the
# lesson shows them before the learner's answer exists, and a graded notebook's course holds no answer
# to compute them with. tests/test_l04_data.py checks they are what the reference makes.
_SCRIPT_BATCHES = (
    ([[19, 5, 6, 13, 8, 15, 3, 14, 2, 14], [16, 11, 11, 4, 12, 0, 0, 0, 0, 0], [3, 15, 4, 19, 11, 11, 0, 0, 0, 0],
      [14, 11, 0, 0, 0, 0, 0, 0, 0, 0]], [10, 5, 6, 2], [0, 1, 0, 0]),
    ([[10, 4, 15, 4, 7, 12, 16, 6, 0, 0, 0], [17, 9, 13, 10, 11, 4, 15, 4, 3, 16, 0],
      [19, 16, 18, 2, 19, 6, 16, 4, 17, 17, 14]], [8, 10, 11], [1, 0, 1]),
)


def script_batches() -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """The batches the colleague's script printed (see ``_SCRIPT_BATCHES``), as int64 tensors."""
    return [tuple(torch.tensor(part, dtype=torch.int64) for part in batch)  # type: ignore[misc]
            for batch in _SCRIPT_BATCHES]
