"""A teammate's saved MLP, for lesson 03's exercise 2: the learner writes the class whose
``state_dict`` this checkpoint fits (keys and shapes), from the listing alone.

The values are drawn from a fixed seed, so every learner sees the same listing and the same
predictions; nothing touches the global RNG.

>>> ckpt = teammate_checkpoint()
>>> [(k, tuple(v.shape)) for k, v in ckpt.items()][:2]
[('net.0.weight', (32, 8)), ('net.0.bias', (32,))]
"""

from __future__ import annotations

import torch

# what the teammate's note says: MLP(in_features=8, hidden_sizes=[32, 16], num_classes=4)
TEAMMATE_SPEC = (8, [32, 16], 4)


def teammate_checkpoint() -> dict[str, torch.Tensor]:
    """What ``torch.load("teammate_mlp.pt")`` would give: the trained model's ``state_dict``."""
    in_features, hidden, num_classes = TEAMMATE_SPEC
    sizes = [in_features, *hidden, num_classes]
    g = torch.Generator().manual_seed(2026)
    state: dict[str, torch.Tensor] = {}
    for k, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
        state[f"net.{2 * k}.weight"] = torch.randn(n_out, n_in, generator=g) / n_in ** 0.5
        state[f"net.{2 * k}.bias"] = torch.randn(n_out, generator=g) * 0.1
    return state
