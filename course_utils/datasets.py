"""Offline, deterministic datasets for the lessons.

Nothing here touches the network: the digits ship inside scikit-learn, everything else is
generated from a seed with its own ``torch.Generator`` (the global RNG is never used, so
loading data does not shift a learner's random numbers). Shapes and dtypes:

=====================  ================================  ===============================
function               inputs                            targets
=====================  ================================  ===============================
``load_digits``        X (1797, 64) float32 in [0, 1]    y (1797,) int64 in 0..9
                       or images (1797, 1, 8, 8)
``house_prices``       X (n, 4) float32 (raw units)      y (n,) float32, thousands
``spirals``            X (n, 2) float32                  y (n,) int64 in 0..classes-1
``moons``              X (n, 2) float32                  y (n,) int64 in {0, 1}
``sine_series``        series (n,) float32               (windowing builds targets)
``ragged_sequences``   list of n int64 tensors (L_i,)    y (n,) int64 in {0, 1}
=====================  ================================  ===============================

Classes that DataLoader workers must pickle (``DigitsDataset``, ``SequenceDataset``) live here
and not in notebooks: under the spawn/forkserver start methods (Windows, macOS, and Linux
from Python 3.14) a class defined in a notebook cannot be found by a worker.
"""

from __future__ import annotations

import math
import os
from typing import NamedTuple
from collections.abc import Callable

import numpy as np
import torch
from torch.utils.data import Dataset

__all__ = [
    "DIGITS_CLASSES", "DigitsDataset", "HOUSE_FEATURES", "SequenceDataset", "Split",
    "digits_split", "house_prices", "load_digits", "moons", "ragged_sequences", "sine_series",
    "spirals", "train_test_indices",
]

DIGITS_CLASSES = tuple(range(10))
HOUSE_FEATURES = ("area_m2", "rooms", "age_years", "distance_km")


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# --------------------------------------------------------------------------- digits
def _bundled_digits() -> np.ndarray | None:
    """scikit-learn's digits file read directly, (1797, 65): pixels then label. Locating the file
    imports no part of scikit-learn, whose import costs every kernel about 80 MB and a second;
    the values are the ones ``sklearn.datasets.load_digits`` returns (tests/test_datasets_plotting.py)."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "datasets", "data", "digits.csv.gz")
    if not os.path.exists(path):
        return None
    return np.loadtxt(path, delimiter=",")


def load_digits(images: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """scikit-learn's bundled 8x8 handwritten digits (1797 images, no download).

    Returns ``(X, y)``: ``X`` float32 scaled to [0, 1], shape (1797, 64), or (1797, 1, 8, 8)
    with ``images=True``; ``y`` int64 labels 0-9.
    """
    raw = _bundled_digits()
    if raw is None:  # no bundled file where we expect it: scikit-learn's own loader
        from sklearn.datasets import load_digits as _sk_load

        data = _sk_load()
        raw = np.column_stack([data.data, data.target])
    X = torch.tensor(raw[:, :-1], dtype=torch.float32) / 16.0
    y = torch.tensor(raw[:, -1], dtype=torch.int64)
    if images:
        X = X.reshape(-1, 1, 8, 8)
    return X, y


def train_test_indices(n: int, test_fraction: float = 0.2, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """A seeded random split of ``range(n)`` into train and test indices (int64); the test
    part has ``ceil(n * test_fraction)`` items (as scikit-learn's ``train_test_split``)."""
    perm = torch.randperm(n, generator=_gen(seed))
    n_test = math.ceil(n * test_fraction)
    return perm[n_test:], perm[:n_test]


class Split(NamedTuple):
    X_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor


def digits_split(images: bool = False, test_fraction: float = 0.2, seed: int = 0) -> Split:
    """The digits split into train (1437) and test (360) with a fixed seed."""
    X, y = load_digits(images=images)
    tr, te = train_test_indices(len(y), test_fraction, seed)
    return Split(X[tr], y[tr], X[te], y[te])


class DigitsDataset(Dataset):
    """Map-style Dataset over the digits: item ``i`` is ``(image, label)``.

    ``split`` is ``"train"``, ``"test"`` or ``"all"`` (see :func:`digits_split`); ``images``
    gives (1, 8, 8) items instead of (64,); ``transform`` is any callable applied to the image.
    """

    def __init__(self, split: str = "train", images: bool = False,
                 transform: Callable[[torch.Tensor], torch.Tensor] | None = None, seed: int = 0):
        if split == "all":
            self.X, self.y = load_digits(images=images)
        elif split in ("train", "test"):
            s = digits_split(images=images, seed=seed)
            self.X, self.y = (s.X_train, s.y_train) if split == "train" else (s.X_test, s.y_test)
        else:
            raise ValueError(f"split must be 'train', 'test' or 'all', not {split!r}")
        self.transform = transform

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.X[i]
        if self.transform is not None:
            x = self.transform(x)
        return x, self.y[i]


def gray_pixels(path: str | os.PathLike[str]) -> np.ndarray:
    """An image file as a 2-D float32 array in [0, 1] (0 is black): transparent parts are paper
    (white), 16- and 32-bit images are scaled to their range, colour becomes luminance."""
    from PIL import Image

    with Image.open(path) as im:
        if im.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
            a = np.asarray(im, dtype=np.float32)
            top = 65535.0 if im.mode.startswith("I;16") else max(float(a.max()), 1.0)
            return np.clip(a / top, 0.0, 1.0)
        if "A" in im.getbands() or (im.mode == "P" and "transparency" in im.info):
            page = Image.new("RGBA", im.size, (255, 255, 255, 255))
            page.alpha_composite(im.convert("RGBA"))
            return np.asarray(page.convert("L"), dtype=np.float32) / 255.0
        return np.asarray(im.convert("L"), dtype=np.float32) / 255.0


def digit_from_image(path: str | os.PathLike[str]) -> torch.Tensor:
    """An image file of one handwritten digit as one of :func:`load_digits`'s images: a (1, 8, 8)
    float32 tensor in [0, 1].

    The same steps that made the digits (UCI's optdigits): a binary bitmap of the ink, scaled
    so that its longer side fills 32 pixels and centred in a 32x32 square, then the count of
    ink pixels in each 4x4 block (0 to 16), divided by 16. Dark ink on light paper and light
    ink on dark both work: the border's colour is taken as the paper. Used by the instructor's
    grader for held-out digits (``grade --heldout``); try it on a photo of your own digits.
    """
    from PIL import Image

    gray = gray_pixels(path)
    border = np.concatenate([gray[0], gray[-1], gray[:, 0], gray[:, -1]])
    ink = (gray < 0.5) if float(np.median(border)) >= 0.5 else (gray >= 0.5)
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    if not len(rows):
        raise ValueError(f"{path}: no ink (a blank image)")
    ink = ink[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]
    h, w = ink.shape
    scale = 32 / max(h, w)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    scaled = np.asarray(Image.fromarray((ink * 255).astype(np.uint8)).resize(size, Image.Resampling.BILINEAR)) >= 128
    square = np.zeros((32, 32), dtype=np.float32)
    top, left = (32 - size[1]) // 2, (32 - size[0]) // 2
    square[top : top + size[1], left : left + size[0]] = scaled
    counts = square.reshape(8, 4, 8, 4).sum(axis=(1, 3))
    return torch.from_numpy(counts / 16.0).reshape(1, 8, 8)


# --------------------------------------------------------------------------- regression
def house_prices(n: int = 500, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Synthetic house prices: ``X`` (n, 4) float32 in raw units (see ``HOUSE_FEATURES``:
    area in m², rooms, age in years, distance to centre in km) and ``y`` (n,) float32 price in
    thousands. Mostly linear with a mild non-linearity and noise, so features need scaling."""
    g = _gen(seed)
    area = 40 + 160 * torch.rand(n, generator=g)
    rooms = torch.clamp(torch.round(area / 30 + torch.randn(n, generator=g) * 0.7), 1, 8)
    age = 80 * torch.rand(n, generator=g)
    dist = 30 * torch.rand(n, generator=g) ** 1.5
    price = 50 + 2.6 * area + 12 * rooms - 0.9 * age - 25 * torch.log1p(dist) + 8 * torch.randn(n, generator=g)
    X = torch.stack([area, rooms, age, dist], dim=1).float()
    return X, price.float()


# --------------------------------------------------------------------------- 2-D classification
def spirals(n: int = 600, classes: int = 3, noise: float = 0.2, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Interleaved spirals: ``X`` (n, 2) float32, ``y`` (n,) int64. Not linearly separable."""
    g = _gen(seed)
    per = n // classes
    xs, ys = [], []
    for c in range(classes):
        r = torch.linspace(0.05, 1.0, per)
        t = torch.linspace(c * 2 * math.pi / classes, c * 2 * math.pi / classes + 4.0, per)
        t = t + noise * torch.randn(per, generator=g)
        xs.append(torch.stack([r * torch.sin(t), r * torch.cos(t)], dim=1))
        ys.append(torch.full((per,), c, dtype=torch.int64))
    X, y = torch.cat(xs), torch.cat(ys)
    perm = torch.randperm(len(y), generator=g)
    return X[perm].float(), y[perm]


def moons(n: int = 400, noise: float = 0.1, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Two interleaving half circles: ``X`` (n, 2) float32, ``y`` (n,) int64 in {0, 1}."""
    g = _gen(seed)
    n0 = n // 2
    n1 = n - n0
    t0 = torch.rand(n0, generator=g) * math.pi
    t1 = torch.rand(n1, generator=g) * math.pi
    a = torch.stack([torch.cos(t0), torch.sin(t0)], dim=1)
    b = torch.stack([1 - torch.cos(t1), 0.5 - torch.sin(t1)], dim=1)
    X = torch.cat([a, b]) + noise * torch.randn(n, 2, generator=g)
    y = torch.cat([torch.zeros(n0, dtype=torch.int64), torch.ones(n1, dtype=torch.int64)])
    perm = torch.randperm(n, generator=g)
    return X[perm].float(), y[perm]


# --------------------------------------------------------------------------- time series
def sine_series(n: int = 1000, noise: float = 0.1, period: float = 50.0, seed: int = 0) -> torch.Tensor:
    """A noisy sine wave with a slow trend: shape (n,) float32, one value per time step."""
    g = _gen(seed)
    t = torch.arange(n, dtype=torch.float32)
    return (torch.sin(2 * math.pi * t / period) + 0.002 * t + noise * torch.randn(n, generator=g)).float()


# --------------------------------------------------------------------------- ragged sequences
PAD = 0


def ragged_sequences(n: int = 200, vocab: int = 20, min_len: int = 2, max_len: int = 12,
                     seed: int = 0) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Token sequences of different lengths: a list of ``n`` int64 tensors with lengths in
    ``[min_len, max_len]`` and tokens in ``1..vocab-1`` (0 is reserved for padding), and labels
    ``y`` (n,) int64: 1 when a sequence contains more even tokens than odd ones."""
    g = _gen(seed)
    lengths = torch.randint(min_len, max_len + 1, (n,), generator=g)
    seqs = [torch.randint(1, vocab, (int(L),), generator=g) for L in lengths]
    y = torch.tensor([int((s % 2 == 0).sum() > (s % 2 == 1).sum()) for s in seqs], dtype=torch.int64)
    return seqs, y


class SequenceDataset(Dataset):
    """Map-style Dataset over :func:`ragged_sequences`: item ``i`` is ``(tokens, label)``
    with ``tokens`` of varying length, so batching needs a padding ``collate_fn``."""

    def __init__(self, n: int = 200, vocab: int = 20, min_len: int = 2, max_len: int = 12, seed: int = 0):
        self.seqs, self.y = ragged_sequences(n, vocab, min_len, max_len, seed)

    def __len__(self) -> int:
        return len(self.seqs)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.seqs[i], self.y[i]
