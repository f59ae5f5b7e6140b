"""Look inside a network with forward hooks, for lesson 03.

- :func:`record_activations` runs a model once and returns what chosen layers produced,
  using forward hooks that are always removed afterwards.
- :func:`deep_mlp` builds a deep, narrow stack of Linear layers with weights drawn from
  N(0, gain² / fan_in) from its own seed (the global RNG is not touched).
- :func:`activation_histograms` plots one histogram per layer.
- :func:`init_scale_widget` lets you drag the gain and watch activations vanish or explode.

>>> model = deep_mlp(depth=3, width=16, activation="tanh", gain=1.0, seed=0)
>>> acts = record_activations(model, torch.randn(8, 16, generator=torch.Generator().manual_seed(0)))
>>> list(acts)
['1', '3', '5']
>>> [tuple(a.shape) for a in acts.values()]
[(8, 16), (8, 16), (8, 16)]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib

matplotlib.rcParams.setdefault("figure.dpi", 80)

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from torch import nn  # noqa: E402

__all__ = ["ACTIVATIONS", "activation_histograms", "activation_stds", "deep_mlp", "init_scale_widget",
           "record_activations"]

ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}


def record_activations(model: nn.Module, X: torch.Tensor,
                       types: Sequence[type[nn.Module]] = (nn.Tanh, nn.ReLU, nn.Sigmoid, nn.GELU)
                       ) -> dict[str, torch.Tensor]:
    """Run ``model(X)`` once without tracking gradients and return ``{module name: output}``
    for every submodule whose type is in ``types`` (in the order they ran). The hooks are
    removed even if the forward pass fails; the model's train/eval mode is left as it was."""
    outputs: dict[str, torch.Tensor] = {}
    handles = []
    for name, module in model.named_modules():
        if isinstance(module, tuple(types)):
            def hook(mod, inputs, output, name=name):
                outputs[name] = output.detach().clone()
            handles.append(module.register_forward_hook(hook))
    try:
        with torch.no_grad():
            model(X)
    finally:
        for h in handles:
            h.remove()
    return outputs


def deep_mlp(depth: int = 8, width: int = 256, activation: str = "tanh", gain: float = 1.0,
             seed: int = 0) -> nn.Sequential:
    """``depth`` blocks of ``Linear(width, width)`` + activation. Weights ~ N(0, gain²/width),
    biases 0, all drawn from a generator seeded with ``seed`` (layers are created without
    their default initialisation, so the global RNG is not used)."""
    gen = torch.Generator().manual_seed(seed)
    layers: list[nn.Module] = []
    for _ in range(depth):
        linear = nn.utils.skip_init(nn.Linear, width, width)
        with torch.no_grad():
            linear.weight.copy_(torch.randn(width, width, generator=gen) * gain / math.sqrt(width))
            linear.bias.zero_()
        layers += [linear, ACTIVATIONS[activation]()]
    return nn.Sequential(*layers)


def activation_stds(acts: dict[str, torch.Tensor]) -> list[float]:
    """Standard deviation of each recorded activation, in order."""
    return [float(a.std()) for a in acts.values()]


def activation_histograms(acts: dict[str, torch.Tensor], title: str | None = None,
                          max_cols: int = 8) -> Figure:
    """One small histogram per recorded layer, left to right in forward order, titled with the
    layer's name and the standard deviation of its outputs. All panels share one x range, so
    shrinking or growing activations are visible at a glance."""
    n = max(1, len(acts))
    cols = min(n, max_cols)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(1.6 * cols, 1.7 * rows + 0.4), squeeze=False)
    for ax in axes.flat:
        ax.set_visible(False)
    lo = min((float(a.min()) for a in acts.values()), default=-1.0)
    hi = max((float(a.max()) for a in acts.values()), default=1.0)
    if hi - lo < 1e-6:
        lo, hi = lo - 0.5, hi + 0.5
    for ax, (name, a) in zip(axes.flat, acts.items()):
        ax.set_visible(True)
        values = a.flatten().float()
        ax.hist(values.numpy(), bins=40, range=(lo, hi), color="tab:blue", density=True)
        ax.set_title(f"layer {name}\nstd {float(values.std()):.2g}", fontsize=8)
        ax.tick_params(labelsize=6)
        ax.set_yticks([])
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def init_scale_widget(depth: int = 8, width: int = 256, batch: int = 512):
    """Drag the initialisation gain (weights ~ N(0, gain²/fan_in)) and pick the activation:
    the histograms show each layer's outputs for one batch of random inputs. Returns the
    ``ipywidgets.interactive`` (display it as the last line of a cell)."""
    import ipywidgets as widgets
    from IPython.display import display

    X = torch.randn(batch, width, generator=torch.Generator().manual_seed(1))

    def show(gain: float, activation: str) -> list[float]:
        model = deep_mlp(depth, width, activation, gain)
        acts = record_activations(model, X)
        fig = activation_histograms(acts, title=f"{activation}, weights ~ N(0, {gain:.2g}² / fan_in)")
        display(fig)
        plt.close(fig)
        return activation_stds(acts)

    return widgets.interactive(
        show,
        gain=widgets.FloatLogSlider(value=1.0, base=10, min=-1, max=1, step=0.05, description="gain",
                                    continuous_update=False),
        activation=widgets.Dropdown(options=list(ACTIVATIONS), value="tanh", description="activation"),
    )
