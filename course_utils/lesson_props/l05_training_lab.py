"""The training loop of lesson 05 as importable functions, plus the plain functions behind the
lesson's plots and widgets.

- :func:`train_one_epoch` and :func:`evaluate`: the five-step loop and the evaluation loop
  (the reference answers of lesson 05's first two exercises).
- :func:`fit`: both in a loop over epochs, with a scheduler, tqdm and live curves.
- :func:`digits_loaders`: the digits as train/test DataLoaders.
- :func:`graph_bytes`: memory that autograd graphs kept alive by stored tensors hold.
- :func:`lr_trial` / :func:`plot_lr_trial`: a short training run at one learning rate (the
  learning-rate widget).
- :func:`scheduler_lrs`: the learning rate a scheduler gives at every step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from ..datasets import digits_split
# The notebook's answers, generated from solutions/05_training_loop.py (one source): one pass
# of the five steps per batch (mean loss per sample), and the mean loss and accuracy in eval mode.
from ..answers.l05_training_loop import evaluate, train_one_epoch

__all__ = ["digits_loaders", "evaluate", "fit", "graph_bytes", "lr_trial", "plot_lr_trial", "scheduler_lrs",
           "train_one_epoch"]


def digits_loaders(batch_size: int = 64, images: bool = False, seed: int = 0,
                   train_subset: int | None = None) -> tuple[DataLoader, DataLoader]:
    """Train and test DataLoaders over the digits (1437 / 360 items, see
    :func:`course_utils.datasets.digits_split`). The train loader shuffles with a generator
    seeded by ``seed``; ``train_subset`` keeps only the first that many training items."""
    s = digits_split(images=images)
    X_train, y_train = s.X_train, s.y_train
    if train_subset is not None:
        X_train, y_train = X_train[:train_subset], y_train[:train_subset]
    train = DataLoader(TensorDataset(X_train, y_train), batch_size=batch_size, shuffle=True,
                       generator=torch.Generator().manual_seed(seed))
    test = DataLoader(TensorDataset(s.X_test, s.y_test), batch_size=512)
    return train, test


def fit(model, train_loader, test_loader, loss_fn, optimizer, num_epochs: int, scheduler=None,
        live=None, progress: bool = True) -> dict[str, list[float]]:
    """Train for ``num_epochs`` epochs, evaluating after each. ``scheduler`` (if any) steps once
    per epoch; ``live`` is a :class:`course_utils.plotting.LiveCurves` to update. Returns the
    history ``{"train loss", "test loss", "test acc"}``, one value per epoch."""
    history: dict[str, list[float]] = {"train loss": [], "test loss": [], "test acc": []}
    epochs: Iterable[int] = range(num_epochs)
    if progress:
        from tqdm.auto import tqdm

        epochs = tqdm(epochs, desc="epochs", leave=False)
    for _ in epochs:
        train_loss = train_one_epoch(model, train_loader, loss_fn, optimizer)
        test_loss, test_acc = evaluate(model, test_loader, loss_fn)
        if scheduler is not None:
            scheduler.step()
        for key, value in zip(history, (train_loss, test_loss, test_acc)):
            history[key].append(value)
        if live is not None:
            live.update(**{k.replace(" ", "_"): v[-1] for k, v in history.items()})
    return history


def graph_bytes(tensors: Iterable[torch.Tensor], exclude: Iterable[torch.Tensor] = ()) -> int:
    """Bytes of the tensors that autograd saved for backward in the graphs behind ``tensors``
    (activations, mostly): memory that stays allocated as long as you keep those tensors.
    Storages of ``exclude`` (pass ``model.parameters()``) are not counted; each storage is
    counted once."""
    seen_storages = {t.untyped_storage().data_ptr() for t in exclude}
    seen_nodes: set[int] = set()
    total = 0
    stack = [t.grad_fn for t in tensors if isinstance(t, torch.Tensor) and t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        for name in dir(node):
            if not name.startswith("_saved_"):
                continue
            try:
                value = getattr(node, name)
            except RuntimeError:  # already freed by a backward pass
                continue
            for t in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(t, torch.Tensor):
                    ptr = t.untyped_storage().data_ptr()
                    if ptr not in seen_storages:
                        seen_storages.add(ptr)
                        total += t.untyped_storage().nbytes()
        stack.extend(fn for fn, _ in node.next_functions)
    return total


def lr_trial(lr: float, num_epochs: int = 6, seed: int = 0, momentum: float = 0.0) -> list[float]:
    """Train the lesson's MLP on the digits with SGD at learning rate ``lr``; return the mean
    training loss after every quarter epoch (``4 * num_epochs`` values; ``inf`` once it diverges)."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
    train, _ = digits_loaders(batch_size=64, seed=seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    loss_fn = nn.CrossEntropyLoss()
    quarter_ends = {round(len(train) * q / 4) - 1 for q in range(1, 5)}
    losses, window = [], []
    for _ in range(num_epochs):
        for i, (X, y) in enumerate(train):
            optimizer.zero_grad()
            loss = loss_fn(model(X), y)
            loss.backward()
            optimizer.step()
            window.append(loss.item())
            if i in quarter_ends:
                mean = sum(window) / len(window)
                losses.append(mean if mean == mean and mean < 1e6 else float("inf"))
                window = []
                if losses[-1] == float("inf"):
                    return losses + [float("inf")] * (4 * num_epochs - len(losses))
    return losses


def plot_lr_trial(lr: float, num_epochs: int = 6, ax: plt.Axes | None = None) -> Figure:
    """The training loss curve of :func:`lr_trial` on a log scale, with the final value."""
    losses = lr_trial(lr, num_epochs)
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(6, 3))
    xs = [(i + 1) / 4 for i in range(len(losses))]
    finite = [v if v != float("inf") else float("nan") for v in losses]
    ax.plot(xs, finite, marker=".")
    ax.set_yscale("log")
    ax.set_ylim(0.01, 10)
    ax.set_xlabel("epoch")
    ax.set_ylabel("training loss")
    last = losses[-1]
    ax.set_title(f"SGD, lr={lr:.3g}: " + ("diverged" if last == float("inf") else f"final loss {last:.3f}"),
                 fontsize=9)
    fig.tight_layout()
    return fig


def scheduler_lrs(make_scheduler: Callable[[torch.optim.Optimizer], object], steps: int,
                  lr: float = 0.1) -> list[float]:
    """The learning rate at each of ``steps`` steps under the scheduler that
    ``make_scheduler(optimizer)`` builds (an SGD optimizer over one dummy parameter)."""
    param = nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([param], lr=lr)
    scheduler = make_scheduler(optimizer)
    lrs = []
    for _ in range(steps):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return lrs


# What the course's answers do, written down so the lesson can show them BEFORE the learner writes
# theirs (exercises 3 and 4 are inverse problems): a demo cell that called the answer there would
# have none to call in a graded submission. tests/test_l05_training_loop.py keeps both equal to the
# references.

#: ``EarlyStopping(patience)`` fed these validation losses: (patience, losses, the epoch after
#: which it stops or None, its best_loss, the epoch whose weights it keeps).
EARLY_STOPPING_RUNS: tuple[tuple[int, tuple[float, ...], int | None, float, int], ...] = (
    (2, (1.0, 0.8, 0.8, 0.9, 0.7), 4, 0.8, 2),
    (2, (1.0, 0.8, 0.9, 0.85, 0.95, 0.6), 4, 0.8, 2),
    (3, (1.0, 1.1, 1.2, 0.9, 1.0, 1.0, 1.0, 0.5), 7, 0.9, 4),
    (1, (0.5, 0.4, 0.3), None, 0.3, 3),
)

#: ``warmup_cosine(optimizer, warmup_steps, total_steps)``'s learning rates (base lr 0.1, rounded
#: to 6 decimals) at each step, keyed by (warmup_steps, total_steps).
WARMUP_COSINE_LRS: dict[tuple[int, int], tuple[float, ...]] = {
    (4, 12): (0.025, 0.05, 0.075, 0.1, 0.1, 0.096194, 0.085355, 0.069134, 0.05, 0.030866, 0.014645, 0.003806),
    (0, 6): (0.1, 0.093301, 0.075, 0.05, 0.025, 0.006699),
}
