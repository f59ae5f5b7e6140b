"""Independent oracles for the lesson 04-08 references (issue 11).

Each reference is compared with a torch / NumPy / scikit-learn built-in that computes the same
thing another way, across the exercise's whole case generator (many seeds) and its fixed edge
cases. A reference that disagrees with its own text shows up here even when no learner answer
ever reaches the input that exposes it.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from course_utils import grading
from course_utils.grading import Rand

SEEDS = range(60)


def _cases(exercise_id, seeds=SEEDS):
    ex = grading.exercise(exercise_id)
    out = list(ex.edge_cases)
    if ex.cases is not None:
        out += [ex.cases(Rand(s)) for s in seeds]
    return out


# --------------------------------------------------------------------------- 04
def test_window_dataset_matches_numpy_sliding_window_view():
    ref = grading.reference("04_data.WindowDataset")
    for case in _cases("04_data.WindowDataset"):
        series, window, horizon = case.args
        ds = ref(series, window, horizon)
        if len(series) < window + horizon:  # NumPy refuses a window longer than the array: no windows
            assert len(ds) == 0
            continue
        views = np.lib.stride_tricks.sliding_window_view(series.numpy(), window + horizon)
        assert len(ds) == len(views)
        for i, v in enumerate(views):
            x, y = ds[i]
            np.testing.assert_array_equal(x.numpy(), v[:window])
            assert float(y) == v[-1]


def test_stratified_split_counts_match_sklearn():
    from sklearn.model_selection import train_test_split

    ref = grading.reference("04_data.stratified_split")
    for case in _cases("04_data.stratified_split"):
        (y, frac), seed = case.args, case.kwargs["seed"]
        tr, te = ref(y, frac, torch.Generator().manual_seed(seed))
        assert tr.dtype == te.dtype == torch.int64
        assert sorted(torch.cat([tr, te]).tolist()) == list(range(len(y)))
        mine = collections.Counter(y[te].tolist())
        for c, n_c in collections.Counter(y.tolist()).items():
            assert mine[c] == round(n_c * frac)  # the text's rule
        if len(set(y.tolist())) > 1 and min(collections.Counter(y.tolist()).values()) > 1:
            _, sk_test = train_test_split(np.arange(len(y)), test_size=frac, stratify=y.numpy(), random_state=0)
            theirs = collections.Counter(y.numpy()[sk_test].tolist())
            # sklearn fixes the total first, then shares it out: per class within one item of round()
            assert all(abs(mine[c] - theirs[c]) <= 1 for c in set(y.tolist()))


def test_balanced_sampler_weights_match_sklearn_balanced_class_weight():
    from sklearn.utils.class_weight import compute_class_weight

    ref = grading.reference("04_data.balanced_sampler")
    for case in _cases("04_data.balanced_sampler"):
        (y,) = case.args
        s = ref(y, generator=torch.Generator().manual_seed(0))
        classes = np.unique(y.numpy())
        cw = dict(zip(classes, compute_class_weight("balanced", classes=classes, y=y.numpy())))
        oracle = np.array([cw[c] for c in y.numpy()])
        w = torch.as_tensor(s.weights, dtype=torch.float64).numpy()
        np.testing.assert_allclose(w / w.sum(), oracle / oracle.sum(), rtol=1e-12)
        assert s.num_samples == len(y) and s.replacement


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_pad_collate_matches_nested_tensor_padding():
    ref = grading.reference("04_data.pad_collate")
    for case in _cases("04_data.pad_collate"):
        (batch,) = case.args
        padded, lengths, labels = ref(batch)
        nested = torch.nested.nested_tensor([t for t, _ in batch])
        torch.testing.assert_close(padded, nested.to_padded_tensor(0))
        packed = torch.nn.utils.rnn.pack_sequence([t for t, _ in batch], enforce_sorted=False)
        _, oracle_lengths = torch.nn.utils.rnn.pad_packed_sequence(packed, batch_first=True)
        torch.testing.assert_close(lengths, oracle_lengths)
        torch.testing.assert_close(labels, torch.utils.data.default_collate([lab for _, lab in batch]))


@pytest.mark.parametrize("num_workers", [0, 2])
def test_sharded_range_matches_a_real_dataloader_over_range(num_workers):
    import multiprocessing

    if num_workers and (multiprocessing.get_start_method(allow_none=True) or "fork") != "fork":
        pytest.skip("real workers need the fork start method for a quick test")
    ref = grading.reference("04_data.ShardedRange")
    for case in _cases("04_data.ShardedRange", range(6)):
        start, end = case.args
        got = [int(v) for v in DataLoader(ref(start, end), batch_size=None, num_workers=num_workers)]
        assert sorted(got) == list(range(start, end))


# --------------------------------------------------------------------------- 05
def test_clip_grad_norm_matches_torch_clip_grad_norm_():
    ref = grading.reference("05_training_loop.clip_grad_norm")
    for case in _cases("05_training_loop.clip_grad_norm", range(200)):
        params, max_norm = case.args
        mine = [p.detach().clone().requires_grad_() for p in params]
        theirs = [p.detach().clone().requires_grad_() for p in params]
        for a, b, p in zip(mine, theirs, params):
            if p.grad is not None:
                a.grad, b.grad = p.grad.clone(), p.grad.clone()
        norm = ref(iter(mine), max_norm)
        oracle = torch.nn.utils.clip_grad_norm_(theirs, max_norm, foreach=False)
        assert isinstance(norm, float)
        assert norm == pytest.approx(float(oracle), rel=1e-6)
        for a, b in zip(mine, theirs):
            assert (a.grad is None) == (b.grad is None)
            if a.grad is not None:
                torch.testing.assert_close(a.grad, b.grad, rtol=1e-6, atol=1e-7)


def _loader_case(case):
    from torch.utils.data import TensorDataset

    X, y, bs = (case.kwargs[k] for k in ("X", "y", "batch_size"))
    return DataLoader(TensorDataset(X, y), batch_size=bs), X, y


def test_evaluate_matches_cross_entropy_and_sklearn_accuracy_on_all_samples():
    from sklearn.metrics import accuracy_score

    from course_utils.exercises.l05_training_loop._kit import _model_for

    ref = grading.reference("05_training_loop.evaluate")
    for case in _cases("05_training_loop.evaluate", range(40)):
        loader, X, y = _loader_case(case)
        model = _model_for(X, y, case.kwargs["seed"], dropout=0.5)
        loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=case.kwargs["smoothing"])
        loss, acc = ref(model, loader, loss_fn)
        model.eval()
        with torch.no_grad():
            logits = model(X)
        assert loss == pytest.approx(float(torch.nn.functional.cross_entropy(
            logits, y, label_smoothing=case.kwargs["smoothing"])), rel=1e-5)
        assert acc == pytest.approx(accuracy_score(y.numpy(), logits.argmax(1).numpy()), abs=1e-12)


def test_accumulated_step_matches_one_step_on_the_concatenated_batch():
    from course_utils.exercises.l05_training_loop._kit import _flat
    from course_utils.exercises.l05_training_loop.accumulated_step import _run as _acc_run

    ref = grading.reference("05_training_loop.accumulated_step")

    def big_batch(model, loss_fn, optimizer, micro_batches):
        optimizer.zero_grad()
        loss_fn(model(torch.cat([x for x, _ in micro_batches])), torch.cat([t for _, t in micro_batches])).backward()
        optimizer.step()

    for case in _cases("05_training_loop.accumulated_step", range(40)):
        torch.testing.assert_close(_acc_run(ref, case), _flat_after(big_batch, case, _flat), rtol=1e-5, atol=1e-6)


def _flat_after(fn, case, flat):
    from torch import nn

    micro, c, seed, smoothing = (case.kwargs[k] for k in ("micro_batches", "classes", "seed", "smoothing"))
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(micro[0][0].shape[1], 6), nn.Tanh(), nn.Linear(6, c))
    fn(model, nn.CrossEntropyLoss(label_smoothing=smoothing), torch.optim.SGD(model.parameters(), lr=0.5), micro)
    return flat(model)


def test_warmup_cosine_matches_linear_then_cosine_annealing():
    from torch.optim.lr_scheduler import CosineAnnealingLR, LinearLR, SequentialLR

    from course_utils.exercises.l05_training_loop.warmup_cosine import _run as _wc_run

    ref = grading.reference("05_training_loop.warmup_cosine")
    for case in _cases("05_training_loop.warmup_cosine", range(60)):
        def oracle(optimizer, warmup_steps, total_steps):
            cosine = CosineAnnealingLR(optimizer, T_max=max(1, total_steps - warmup_steps), eta_min=0.0)
            if warmup_steps == 0:
                return cosine
            warm = LinearLR(optimizer, start_factor=1 / warmup_steps, end_factor=1.0,
                            total_iters=max(1, warmup_steps - 1))
            return SequentialLR(optimizer, [warm, cosine], milestones=[warmup_steps])

        torch.testing.assert_close(_wc_run(ref, case), _wc_run(oracle, case), rtol=1e-6, atol=1e-9)


# --------------------------------------------------------------------------- 08
def test_confusion_matrix_matches_sklearn():
    from sklearn.metrics import confusion_matrix as sk_confusion_matrix

    ref = grading.reference("09_capstone.confusion_matrix")
    for case in _cases("09_capstone.confusion_matrix", range(300)):
        preds, targets, k = case.args
        cm = ref(preds, targets, k)
        assert cm.dtype == torch.int64 and cm.shape == (k, k)
        if len(targets) == 0:
            assert int(cm.sum()) == 0
            continue
        oracle = sk_confusion_matrix(targets.numpy(), preds.numpy(), labels=list(range(k)))
        np.testing.assert_array_equal(cm.numpy(), oracle)
