"""Gradient descent on a 1-D function, for lesson 02's learning-rate demo.

The logic is plain functions (tested in ``tests/test_l02_autograd.py``); :func:`descent_widget`
only wires them to ipywidgets sliders.

>>> path = descent_path("quadratic", x0=3.0, lr=0.1, num_steps=50)
>>> classify_path("quadratic", path)
'converges'
>>> classify_path("quadratic", descent_path("quadratic", x0=3.0, lr=0.9, num_steps=50))
'oscillates'
>>> classify_path("quadratic", descent_path("quadratic", x0=3.0, lr=1.1, num_steps=50))
'diverges'

The derivative comes from :func:`torch.func.grad`, a functional twin of ``backward()``, so
this module does not give away the lesson's exercise (a descent loop written with
``backward()``, ``torch.no_grad()`` and clearing ``.grad``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import matplotlib

matplotlib.rcParams.setdefault("figure.dpi", 80)

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

__all__ = ["FUNCTIONS", "classify_path", "descent_path", "descent_widget", "plot_descent"]

# name -> (function of a float64 0-dim tensor, formula shown in titles, x range for plots, global minimiser)
FUNCTIONS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], str, tuple[float, float], float]] = {
    # f'' = 2 everywhere: plain steps for lr < 0.5, zig-zag for 0.5 < lr < 1, divergence for lr > 1
    "quadratic": (lambda x: x**2, "f(x) = x²", (-3.5, 3.5), 0.0),
    # two valleys: where you end up depends on x0 and on the step size
    "double well": (lambda x: 0.25 * x**4 - x**2 + 0.3 * x, "f(x) = x⁴/4 − x² + 0.3x", (-3.0, 3.0), -1.4840),
}

_LIMIT = 1e6  # |x| beyond this counts as divergence (and stops the run)


def _function(f: str | Callable[[torch.Tensor], torch.Tensor]) -> Callable[[torch.Tensor], torch.Tensor]:
    return FUNCTIONS[f][0] if isinstance(f, str) else f


def descent_path(f: str | Callable[[torch.Tensor], torch.Tensor], x0: float, lr: float,
                 num_steps: int) -> list[float]:
    """Positions ``[x0, x1, ..., x_num_steps]`` of gradient descent ``x <- x - lr * f'(x)``.

    ``f`` is a key of :data:`FUNCTIONS` or a function of a 0-dim float64 tensor. The run stops
    early (the list is shorter) once ``|x|`` passes 1e6 or stops being finite.
    """
    fn = _function(f)
    df = torch.func.grad(fn)
    x = torch.tensor(float(x0), dtype=torch.float64)
    path = [float(x)]
    for _ in range(int(num_steps)):
        x = x - lr * df(x)
        path.append(float(x))
        if not math.isfinite(path[-1]) or abs(path[-1]) > _LIMIT:
            break
    return path


def classify_path(f: str | Callable[[torch.Tensor], torch.Tensor], path: Sequence[float],
                  tol: float = 1e-4) -> str:
    """Describe a descent run in one word:

    - ``"diverges"``: it runs away (the steps grow, or f ends higher than it started);
    - ``"oscillates"``: the steps keep changing sign (zig-zag across a minimum);
    - ``"converges"``: the last step is below ``tol`` or 2% of the first one;
    - ``"too slow"``: still moving the same way when the steps run out;
    - ``"bounces"``: anything else (large steps hopping between slopes or valleys).
    """
    fn = _function(f)
    if len(path) < 2:
        return "too slow"
    if any(not math.isfinite(p) or abs(p) > _LIMIT for p in path):
        return "diverges"
    steps = [b - a for a, b in zip(path, path[1:])]
    values = [float(fn(torch.tensor(p, dtype=torch.float64))) for p in path]
    if abs(steps[-1]) > 2 * abs(steps[0]) + tol or values[-1] > values[0] + tol:
        return "diverges"
    moving = [s for s in steps if abs(s) > tol]
    flips = sum(1 for a, b in zip(moving, moving[1:]) if a * b < 0)
    oscillating = len(moving) > 2 and flips >= 0.8 * (len(moving) - 1)
    if abs(steps[-1]) <= max(tol, 0.02 * abs(steps[0])):
        return "oscillates" if oscillating and len(moving) > 4 else "converges"
    if oscillating:
        return "oscillates"
    return "too slow" if flips == 0 else "bounces"


_VERDICT = {
    "converges": "converges: each step goes downhill and the steps shrink",
    "oscillates": "oscillates: it overshoots the minimum and zig-zags across it",
    "diverges": "diverges: every overshoot is bigger than the last",
    "too slow": "too slow: still walking downhill when the steps run out",
    "bounces": "bounces around: the steps are too big to settle into a valley",
}


def plot_descent(f: str | Callable[[torch.Tensor], torch.Tensor], path: Sequence[float],
                 title: str | None = None, axes: Sequence[plt.Axes] | None = None,
                 x_range: tuple[float, float] | None = None) -> Figure:
    """Left: the function with the descent path on it. Right: ``f(x_k)`` against the step
    ``k`` (log scale when all values are positive)."""
    fn = _function(f)
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    fig = axes[0].figure
    ax_f, ax_v = axes
    if x_range is None:
        x_range = FUNCTIONS[f][2] if isinstance(f, str) else (min(path) - 1, max(path) + 1)
    lo, hi = x_range
    xs = torch.linspace(lo, hi, 300, dtype=torch.float64)
    ax_f.plot(xs.numpy(), fn(xs).numpy(), color="#444", lw=1.5)
    shown = [p for p in path if lo <= p <= hi]
    if shown:
        ys = [float(fn(torch.tensor(p, dtype=torch.float64))) for p in shown]
        ax_f.plot(shown, ys, "-o", color="tab:red", ms=3.5, lw=0.8, alpha=0.8)
        ax_f.plot(shown[:1], ys[:1], "o", color="black", ms=6, label="start")
        ax_f.legend(loc="upper center", fontsize=8)
    ax_f.set_xlabel("x")
    ax_f.set_ylabel("f(x)")
    ax_f.set_xlim(lo, hi)
    values = [float(fn(torch.tensor(p, dtype=torch.float64))) for p in path]
    ax_v.plot(range(len(values)), values, "-o", ms=3, color="tab:red")
    if all(v > 0 for v in values):
        ax_v.set_yscale("log")
    ax_v.set_xlabel("step k")
    ax_v.set_ylabel("f(x_k)")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def descent_widget(function: str = "quadratic", x0: float = 3.0):
    """Sliders for the learning rate (log scale), the number of steps and the start ``x0``;
    the plot and a one-line verdict update as you drag. Returns the ``ipywidgets.interactive``
    (display it as the last line of a cell)."""
    import ipywidgets as widgets
    from IPython.display import display

    def show(function: str, lr: float, num_steps: int, x0: float) -> str:
        path = descent_path(function, x0, lr, num_steps)
        verdict = classify_path(function, path)
        fig = plot_descent(function, path,
                           title=f"{FUNCTIONS[function][1]},  lr = {lr:.3g}:  {_VERDICT[verdict]}")
        display(fig)
        plt.close(fig)
        return verdict

    return widgets.interactive(
        show,
        function=widgets.Dropdown(options=list(FUNCTIONS), value=function, description="function"),
        lr=widgets.FloatLogSlider(value=0.1, base=10, min=-3, max=0.3, step=0.05, description="lr",
                                  continuous_update=False),
        num_steps=widgets.IntSlider(value=20, min=1, max=100, description="steps", continuous_update=False),
        x0=widgets.FloatSlider(value=x0, min=-3.0, max=3.0, step=0.1,
                               description="x0", continuous_update=False),
    )
