"""What the exercises of 12_capstone share: small synthetic problems the pipeline parts are
graded on (never the notebook's digits: the parts are graded on data the notebook never sees),
and the course's pieces the graders run a learner's part with."""

from __future__ import annotations

import types

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from course_utils.lesson_props.l12_capstone import course_pieces

LESSON = "12_capstone"


def pieces() -> types.SimpleNamespace:
    """The course's lesson 04/05/09 answers: the graders never use the learner's own."""
    return course_pieces()


def blobs(seed: int, n: int, features: int = 6, classes: int = 3, noise: float = 1.5):
    """``n`` points of ``classes`` Gaussian blobs in ``features`` dimensions (overlapping, so a
    model can overfit), labels int64."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(classes, features, generator=g) * 2
    y = torch.randint(0, classes, (n,), generator=g)
    X = centres[y] + noise * torch.randn(n, features, generator=g)
    return X, y


def mlp(seed: int, features: int = 6, classes: int = 3, hidden: int = 16, dropout: float = 0.0) -> nn.Module:
    torch.manual_seed(seed)
    layers: list[nn.Module] = [nn.Linear(features, hidden), nn.ReLU()]
    if dropout:
        layers.append(nn.Dropout(dropout))
    return nn.Sequential(*layers, nn.Linear(hidden, classes))


def loader(X, y, batch_size: int, seed: int | None = None, generator: torch.Generator | None = None) -> DataLoader:
    if generator is None and seed is not None:
        generator = torch.Generator().manual_seed(seed)
    return DataLoader(TensorDataset(X, y), batch_size=batch_size, shuffle=generator is not None, generator=generator)


def flat(model: nn.Module) -> torch.Tensor:
    """Every parameter and buffer of ``model``, detached, as one float64 vector."""
    return torch.cat([t.detach().double().flatten() for t in model.state_dict().values()])
