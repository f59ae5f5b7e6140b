from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from course_utils import datasets, plotting  # noqa: E402


def test_digits_shapes_dtypes_and_split():
    X, y = datasets.load_digits()
    assert X.shape == (1797, 64) and X.dtype == torch.float32 and 0 <= X.min() and X.max() <= 1
    assert y.shape == (1797,) and y.dtype == torch.int64 and set(y.tolist()) == set(range(10))
    Xi, _ = datasets.load_digits(images=True)
    assert Xi.shape == (1797, 1, 8, 8)
    s = datasets.digits_split()
    assert len(s.y_train) == 1437 and len(s.y_test) == 360
    s2 = datasets.digits_split()
    assert torch.equal(s.y_test, s2.y_test), "deterministic"
    ds = datasets.DigitsDataset("test", images=True, transform=lambda x: x * 2)
    x0, y0 = ds[0]
    assert len(ds) == 360 and x0.shape == (1, 8, 8) and torch.equal(x0, s.X_test[0].reshape(1, 8, 8) * 2)
    with pytest.raises(ValueError):
        datasets.DigitsDataset("validation")


@pytest.mark.parametrize("fn,kwargs,n_classes", [
    (datasets.spirals, {"n": 300, "classes": 3}, 3),
    (datasets.moons, {"n": 301}, 2),
])
def test_2d_classification(fn, kwargs, n_classes):
    X, y = fn(**kwargs)
    assert X.dtype == torch.float32 and X.shape[1] == 2 and y.dtype == torch.int64
    assert len(X) == len(y) and set(y.tolist()) == set(range(n_classes))
    X2, y2 = fn(**kwargs)
    assert torch.equal(X, X2) and torch.equal(y, y2)
    X3, _ = fn(**kwargs, seed=1)
    assert not torch.equal(X, X3)


def test_generators_leave_global_rng_alone():
    torch.manual_seed(3)
    a = torch.rand(1)
    torch.manual_seed(3)
    datasets.house_prices()
    datasets.spirals()
    datasets.sine_series()
    datasets.ragged_sequences()
    assert torch.equal(torch.rand(1), a)


def test_house_prices_sine_and_sequences():
    X, y = datasets.house_prices(n=100)
    assert X.shape == (100, len(datasets.HOUSE_FEATURES)) and y.shape == (100,) and y.dtype == torch.float32
    s = datasets.sine_series(n=200)
    assert s.shape == (200,) and s.dtype == torch.float32
    seqs, labels = datasets.ragged_sequences(n=50, min_len=2, max_len=6)
    assert len(seqs) == 50 and labels.shape == (50,)
    assert {len(q) for q in seqs} <= set(range(2, 7)) and len({len(q) for q in seqs}) > 1
    assert all(q.dtype == torch.int64 and q.min() >= 1 for q in seqs)
    ds = datasets.SequenceDataset(n=10)
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        next(iter(DataLoader(ds, batch_size=10)))


def test_digits_read_directly_equal_scikit_learns_loader(monkeypatch):
    """load_digits reads scikit-learn's bundled file without importing scikit-learn (80 MB per
    kernel); the numbers are exactly the loader's, and without the file it falls back to it."""
    from sklearn.datasets import load_digits as sk_load

    data = sk_load()
    X, y = datasets.load_digits()
    assert datasets._bundled_digits() is not None
    assert torch.equal(X, torch.tensor(data.data, dtype=torch.float32) / 16.0)
    assert torch.equal(y, torch.tensor(data.target, dtype=torch.int64))
    monkeypatch.setattr(datasets, "_bundled_digits", lambda: None)
    X2, y2 = datasets.load_digits()
    assert torch.equal(X, X2) and torch.equal(y, y2)


def test_loading_the_digits_imports_no_scikit_learn():
    import subprocess
    import sys

    code = "import sys; from course_utils import datasets; datasets.digits_split(); print('sklearn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"


def test_digits_dataset_works_with_worker_processes():
    loader = DataLoader(datasets.DigitsDataset("test"), batch_size=64, num_workers=2)
    assert sum(len(yb) for _, yb in loader) == 360


def test_plots_return_figures_headless():
    fig = plotting.plot_curves({"train loss": [3, 2, 1], "test acc": [0.5, 0.7, 0.9]}, title="t")
    assert len(fig.axes) == 2
    X, y = datasets.moons(n=50)
    fig = plotting.decision_boundary(lambda p: torch.stack([p[:, 0], -p[:, 0]], 1), X, y, resolution=20)
    assert fig.axes
    imgs, labels = datasets.load_digits(images=True)
    fig = plotting.image_grid(imgs[:12], labels[:12], predictions=labels[:12].flip(0), ncols=6)
    assert len(fig.axes) == 12
    live = plotting.LiveCurves(title="live")
    for i in range(3):
        live.update(loss=1 / (i + 1), acc=i / 3)
    assert live.history["loss"] == [1.0, 0.5, pytest.approx(1 / 3)]
    assert live.close() is not None
