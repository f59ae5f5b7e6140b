"""Plots the lessons use. Every function returns its matplotlib ``Figure`` and works headless
(the Agg backend in tests); in a notebook the figure is shown by the caller's cell.

- :class:`LiveCurves`: loss/metric curves that redraw in place while a model trains.
- :func:`plot_curves`: the same curves after training, from a history dict.
- :func:`decision_boundary`: a 2-D classifier's regions with the data on top.
- :func:`image_grid`: images with labels (and predictions, wrong ones in red).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import matplotlib

matplotlib.rcParams.setdefault("figure.dpi", 80)

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

__all__ = ["LiveCurves", "decision_boundary", "image_grid", "plot_curves"]


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython

        ip = get_ipython()
        return ip is not None and "IPKernelApp" in ip.config
    except ImportError:  # pragma: no cover
        return False


def plot_curves(history: Mapping[str, Sequence[float]], title: str | None = None,
                ax: plt.Axes | None = None) -> Figure:
    """Plot every series in ``history`` (e.g. ``{"train loss": [...], "test loss": [...]}``)
    against the epoch. Series whose name contains "acc" go on a second y-axis."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(6, 3.5))
    ax2 = None
    for name, values in history.items():
        target = ax
        if "acc" in name.lower():
            ax2 = ax2 or ax.twinx()
            target = ax2
        target.plot(range(1, len(values) + 1), list(values), marker="." if len(values) < 40 else None,
                    label=name, color=None if target is ax else "tab:green")
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss")
    if ax2 is not None:
        ax2.set_ylabel("accuracy")
    handles = ax.get_legend_handles_labels()
    if ax2 is not None:
        h2 = ax2.get_legend_handles_labels()
        handles = (handles[0] + h2[0], handles[1] + h2[1])
    if handles[0]:
        ax.legend(*handles, loc="best")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig


class LiveCurves:
    """Curves that update in place during training.

    >>> live = LiveCurves()
    >>> for epoch in range(3):
    ...     live.update(train_loss=1 / (epoch + 1), test_loss=1.2 / (epoch + 1))
    >>> live.history["train_loss"]
    [1.0, 0.5, 0.3333333333333333]

    In a notebook the figure is redrawn in the same output area every ``every`` updates
    (cheap enough for per-epoch updates); elsewhere it only records. Call :meth:`close` (or
    use it as a context manager) to draw the final state.
    """

    def __init__(self, title: str | None = None, every: int = 1):
        self.title = title
        self.every = max(1, every)
        self.history: dict[str, list[float]] = {}
        self._handle = None
        self._n = 0
        self.figure: Figure | None = None

    def update(self, **metrics: float) -> None:
        for k, v in metrics.items():
            self.history.setdefault(k, []).append(float(v))
        self._n += 1
        if self._n % self.every == 0:
            self._draw()

    def _draw(self) -> None:
        if self.figure is None:
            self.figure = plt.figure(figsize=(6, 3.5))
        self.figure.clf()
        plot_curves(self.history, self.title, ax=self.figure.add_subplot(111))
        if _in_notebook():
            from IPython.display import display

            if self._handle is None:
                self._handle = display(self.figure, display_id=True)
            else:
                self._handle.update(self.figure)

    def close(self) -> Figure:
        """Draw the final curves and stop updating; returns the figure."""
        self._draw()
        if self.figure is not None:
            plt.close(self.figure)
        return self.figure  # type: ignore[return-value]

    def __enter__(self) -> LiveCurves:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@torch.no_grad()
def decision_boundary(predict: Callable[[torch.Tensor], torch.Tensor], X: torch.Tensor, y: torch.Tensor,
                      resolution: int = 200, ax: plt.Axes | None = None, title: str | None = None) -> Figure:
    """Colour the plane by ``predict(points).argmax(1)`` (or ``> 0`` for one output column)
    and scatter ``X`` coloured by ``y``. ``predict`` is a model or any function of an (N, 2)
    float tensor; it runs under ``torch.no_grad()``."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(4.5, 4.5))
    X = X.detach().cpu()
    y = y.detach().cpu()
    pad = 0.25 * (X.max(0).values - X.min(0).values)
    lo, hi = X.min(0).values - pad, X.max(0).values + pad
    xs = torch.linspace(float(lo[0]), float(hi[0]), resolution)
    ys = torch.linspace(float(lo[1]), float(hi[1]), resolution)
    gx, gy = torch.meshgrid(xs, ys, indexing="xy")
    grid = torch.stack([gx.reshape(-1), gy.reshape(-1)], dim=1)
    out = predict(grid).detach().cpu()
    labels = (out.reshape(-1) > 0).long() if out.dim() == 1 or out.shape[1] == 1 else out.argmax(1)
    ax.contourf(gx.numpy(), gy.numpy(), labels.reshape(resolution, resolution).numpy(), alpha=0.3, cmap="viridis")
    ax.scatter(X[:, 0].numpy(), X[:, 1].numpy(), c=y.numpy(), s=10, cmap="viridis", edgecolors="k", linewidths=0.2)
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig


def image_grid(images: torch.Tensor, labels: Sequence[int] | torch.Tensor | None = None,
               predictions: Sequence[int] | torch.Tensor | None = None, ncols: int = 10,
               size: float = 1.0) -> Figure:
    """Show images (N, H, W), (N, 1, H, W) or flattened square (N, H*W) in a grid. Titles show
    the label, or ``pred/label`` in red where a prediction is wrong."""
    imgs = images.detach().cpu().float()
    if imgs.dim() == 2:
        side = int(round(imgs.shape[1] ** 0.5))
        imgs = imgs.reshape(-1, side, side)
    if imgs.dim() == 4:
        imgs = imgs[:, 0]
    n = len(imgs)
    ncols = max(1, min(ncols, n))
    nrows = max(1, -(-n // ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(ncols * size, nrows * size * 1.15), squeeze=False)
    for i, ax in enumerate(axes.flat):
        ax.axis("off")
        if i >= n:
            continue
        ax.imshow(imgs[i].numpy(), cmap="gray_r")
        if labels is not None:
            lab = int(labels[i])
            if predictions is not None:
                pred = int(predictions[i])
                ax.set_title(f"{pred}/{lab}", fontsize=8, color="red" if pred != lab else "black")
            else:
                ax.set_title(str(lab), fontsize=8)
    fig.tight_layout()
    return fig
