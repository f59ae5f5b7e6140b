"""Adversarial review of the graders of lessons 04 (data), 05 (training loop) and 08 (capstone).

Each test either feeds the grader an answer that violates the exercise text and asserts it is
rejected (naming the mistake where a name fits), or feeds it a correct answer written
differently from the reference and asserts it is accepted. The capstone tests train real
classifiers, so they use one seed each.
"""

from __future__ import annotations

import copy
import math
import random

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset, WeightedRandomSampler, get_worker_info

from course_utils import grading
from course_utils.exercises.l05_training_loop import train_one_epoch as l05
from course_utils.exercises import l09_capstone as cap

from grading_asserts import accepted, check, rejected  # noqa: E402,F401 (tests/ is on sys.path)


# =========================================================================== 04 data
D = "04_data."


class _Windows(Dataset):
    def __init__(self, series, window, horizon=1):
        self.series, self.window, self.horizon = series, window, horizon

    def __len__(self):
        return max(0, len(self.series) - self.window - self.horizon + 1)

    def __getitem__(self, i):
        return self.series[i : i + self.window], self.series[i + self.window + self.horizon - 1]


def test_window_dataset_with_a_wrong_default_horizon_is_rejected():
    class DefaultHorizonTwo(_Windows):
        def __init__(self, series, window, horizon=2):
            super().__init__(series, window, horizon)

    rejected(D + "WindowDataset", DefaultHorizonTwo, "wrong_default_horizon")


def test_window_dataset_alternatives_pass():
    class Precomputed(Dataset):  # stores no `horizon` attribute at all
        def __init__(self, series, window, horizon=1):
            n = len(series) - window - horizon + 1
            self.pairs = [(series[i : i + window].clone(), series[i + window + horizon - 1].clone()) for i in range(n)]

        def __len__(self):
            return len(self.pairs)

        def __getitem__(self, i):
            return self.pairs[i]

    accepted(D + "WindowDataset", Precomputed)
    accepted(D + "WindowDataset", _Windows)


def _split(y, f, shuffle):
    train, test = [], []
    for c in torch.unique(y):
        idx = (y == c).nonzero().flatten()
        idx = shuffle(idx)
        k = round(len(idx) * f)
        test.append(idx[:k])
        train.append(idx[k:])
    return torch.cat(train), torch.cat(test)


def test_split_that_reseeds_the_global_rng_is_rejected():
    """Reproducible, but it uses (and resets) the notebook's global RNG, which the text forbids."""

    def global_seeded(y, test_fraction, generator):
        torch.manual_seed(generator.initial_seed())
        return _split(y, test_fraction, lambda idx: idx[torch.randperm(len(idx))])

    def python_random(y, test_fraction, generator):
        random.seed(generator.initial_seed())
        return _split(y, test_fraction, lambda idx: idx[torch.tensor(random.sample(range(len(idx)), len(idx)))])

    rejected(D + "stratified_split", global_seeded, "used_global_rng")
    rejected(D + "stratified_split", python_random, "used_global_rng")


def test_split_that_shuffles_only_some_classes_is_rejected():
    def first_class_only(y, test_fraction, generator):
        done = []

        def shuffle(idx):
            if done:
                return idx  # the other classes keep the data order
            done.append(1)
            return idx[torch.randperm(len(idx), generator=generator)]

        return _split(y, test_fraction, shuffle)

    rejected(D + "stratified_split", first_class_only, "class_not_shuffled")


def test_split_alternatives_pass():
    def one_permutation_then_by_class(y, test_fraction, generator):
        perm = torch.randperm(len(y), generator=generator)
        train, test = [], []
        for c in y.unique():
            idx = perm[y[perm] == c]
            k = round(len(idx) * test_fraction)
            test.append(idx[:k])
            train.append(idx[k:])
        return torch.cat(train), torch.cat(test)

    def numpy_from_generator(y, test_fraction, generator):
        rng = np.random.default_rng(int(torch.randint(0, 2**31, (1,), generator=generator)))
        return _split(y, test_fraction, lambda idx: idx[torch.from_numpy(rng.permutation(len(idx)))])

    accepted(D + "stratified_split", one_permutation_then_by_class, n_random=20)
    accepted(D + "stratified_split", numpy_from_generator, n_random=20)


def test_sampler_with_negative_weights_is_rejected():
    """w / w.sum() made -1/count look like 1/count; such a sampler raises when iterated."""

    def negative(y, generator=None):
        counts = torch.bincount(y)
        return WeightedRandomSampler(-1.0 / counts[y].double(), len(y), replacement=True, generator=generator)

    rejected(D + "balanced_sampler", negative, "invalid_weights")


def test_sampler_subclass_that_does_not_sample_is_rejected():
    class Sequential(WeightedRandomSampler):
        def __iter__(self):
            return iter(range(self.num_samples))

    def fake(y, generator=None):
        counts = torch.bincount(y)
        return Sequential(1.0 / counts[y].double(), len(y), replacement=True, generator=generator)

    rejected(D + "balanced_sampler", fake, "draws_differ")


def test_sampler_with_huge_num_samples_is_rejected_quickly():
    def huge(y, generator=None):
        counts = torch.bincount(y)
        return WeightedRandomSampler(1.0 / counts[y].double(), 10**9, replacement=True, generator=generator)

    rejected(D + "balanced_sampler", huge, "wrong_values")


def test_sampler_alternatives_pass():
    def python_lists(y, generator=None):
        counts = torch.bincount(y).tolist()
        return WeightedRandomSampler([1 / counts[int(t)] for t in y], len(y), True, generator=generator)

    def float32_weights(y, generator=None):
        counts = torch.bincount(y).float()
        return WeightedRandomSampler(1.0 / counts[y], num_samples=len(y), generator=generator)

    accepted(D + "balanced_sampler", python_lists, n_random=20)
    accepted(D + "balanced_sampler", float32_weights, n_random=20)


def _lengths_labels(batch, seqs):
    return torch.tensor([len(s) for s in seqs]), torch.stack([lab for _, lab in batch])


def test_collate_padding_mistakes_are_rejected():
    def left_padded(batch):
        seqs = [t for t, _ in batch]
        longest = max(len(s) for s in seqs)
        padded = torch.zeros(len(seqs), longest, dtype=torch.int64)
        for i, s in enumerate(seqs):
            padded[i, longest - len(s) :] = s
        return (padded, *_lengths_labels(batch, seqs))

    def pads_with_minus_one(batch):
        seqs = [t for t, _ in batch]
        return (pad_sequence(seqs, batch_first=True, padding_value=-1), *_lengths_labels(batch, seqs))

    def sorted_by_length(batch):
        batch = sorted(batch, key=lambda item: -len(item[0]))
        seqs = [t for t, _ in batch]
        return (pad_sequence(seqs, batch_first=True), *_lengths_labels(batch, seqs))

    def float_padded(batch):
        seqs = [t for t, _ in batch]
        return (pad_sequence(seqs, batch_first=True).float(), *_lengths_labels(batch, seqs))

    def int32_lengths(batch):
        seqs = [t for t, _ in batch]
        lengths, labels = _lengths_labels(batch, seqs)
        return pad_sequence(seqs, batch_first=True), lengths.int(), labels

    rejected(D + "pad_collate", left_padded, n_random=0)
    rejected(D + "pad_collate", pads_with_minus_one, n_random=0)
    rejected(D + "pad_collate", sorted_by_length)  # row i must stay batch[i], as in default_collate
    rejected(D + "pad_collate", float_padded, "wrong_dtype", n_random=0)
    rejected(D + "pad_collate", int32_lengths, "wrong_dtype", n_random=0)


def test_collate_alternative_lengths_from_padding_pass():
    def count_tokens(batch):  # PAD never occurs inside a sequence
        seqs = [t for t, _ in batch]
        padded = pad_sequence(seqs, batch_first=True)
        return padded, (padded != 0).sum(dim=1), torch.tensor([int(lab) for _, lab in batch])

    accepted(D + "pad_collate", count_tokens, n_random=20)


class _MutatesSelf(IterableDataset):
    """Shifts `self.start` for its worker: right in the first epoch, wrong in the second."""

    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        self.start = self.start + info.id
        return iter(range(self.start, self.end, info.num_workers))


class _OneShot(IterableDataset):
    """Keeps its first iterator: a second epoch yields nothing."""

    def __init__(self, start, end):
        self.start, self.end = start, end
        self.it = None

    def __iter__(self):
        if self.it is None:
            info = get_worker_info()
            n, k = (1, 0) if info is None else (info.num_workers, info.id)
            self.it = iter(range(self.start + k, self.end, n))
        return self.it


def test_sharded_range_that_breaks_in_the_next_epoch_is_rejected():
    rejected(D + "ShardedRange", _MutatesSelf, "not_repeatable")
    rejected(D + "ShardedRange", _OneShot, "not_repeatable")


def test_sharded_range_generator_alternative_passes():
    class Generator(IterableDataset):
        def __init__(self, start, end):
            self.start, self.end = start, end

        def __iter__(self):
            info = get_worker_info()
            k, n = (0, 1) if info is None else (info.id, info.num_workers)
            for v in range(self.start, self.end):
                if (v - self.start) % n == k:
                    yield v

    accepted(D + "ShardedRange", Generator)


def test_reseed_alternative_from_worker_random_state_passes():
    def from_global_random(worker_id):  # torch seeds `random` per worker and per epoch
        get_worker_info().dataset.rng = np.random.default_rng(random.getrandbits(64))

    accepted(D + "reseed_worker", from_global_random)


# =========================================================================== 05 training loop
T = "05_training_loop."


def _epoch(model, loader, loss_fn, optimizer, forward=None):
    model.train()
    total, n = 0.0, 0
    for X, y in loader:
        optimizer.zero_grad()
        loss = loss_fn((forward or model)(X), y)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(y)
        n += len(y)
    return total / n


def test_train_with_its_own_optimizer_is_rejected():
    def own_optimizer(model, loader, loss_fn, optimizer):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)  # the lesson's lr, shadowing the argument
        return _epoch(model, loader, loss_fn, optimizer)

    def own_adam(model, loader, loss_fn, optimizer):
        return _epoch(model, loader, loss_fn, torch.optim.Adam(model.parameters()))

    rejected(T + "train_one_epoch", own_optimizer, "ignores_optimizer")
    rejected(T + "train_one_epoch", own_adam, "ignores_optimizer")


def test_train_with_a_hard_coded_loss_is_rejected():
    def functional(model, loader, loss_fn, optimizer):
        return _epoch(model, loader, F.cross_entropy, optimizer)

    def new_criterion(model, loader, loss_fn, optimizer):
        return _epoch(model, loader, nn.CrossEntropyLoss(), optimizer)

    rejected(T + "train_one_epoch", functional, "ignores_loss_fn")
    rejected(T + "train_one_epoch", new_criterion, "ignores_loss_fn")


def test_train_step_count_and_average_mistakes_are_rejected():
    def loader_batch_size(model, loader, loss_fn, optimizer):
        model.train()
        total = 0.0
        for X, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(X), y)
            loss.backward()
            optimizer.step()
            total += loss.item() * loader.batch_size  # the last batch is shorter
        return total / len(loader.dataset)

    def zero_grad_once(model, loader, loss_fn, optimizer):
        model.train()
        optimizer.zero_grad()
        total, n = 0.0, 0
        for X, y in loader:
            loss = loss_fn(model(X), y)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(y)
            n += len(y)
        return total / n

    def train_attribute_not_called(model, loader, loss_fn, optimizer):
        model.train  # noqa: B018 - the classic missing parentheses
        return l05._train_no_train_mode(model, loader, loss_fn, optimizer)

    rejected(T + "train_one_epoch", loader_batch_size, "wrong_average")
    rejected(T + "train_one_epoch", zero_grad_once, "wrong_update")
    rejected(T + "train_one_epoch", train_attribute_not_called, "forgot_train_mode")


def test_train_calling_model_forward_passes():
    """`model.forward(X)` skips the model's own hooks; it used to be told it never called the model."""

    def forward_method(model, loader, loss_fn, optimizer):
        return _epoch(model, loader, loss_fn, optimizer, forward=model.forward)

    accepted(T + "train_one_epoch", forward_method)


def _eval_body(model, loader, loss_fn, forward=None):
    total, correct, n = 0.0, 0, 0
    for X, y in loader:
        logits = (forward or model)(X)
        total += loss_fn(logits, y).item() * len(y)
        correct += (logits.argmax(dim=1) == y).sum().item()
        n += len(y)
    return total / n, correct / n


def test_evaluate_through_model_forward_without_no_grad_is_rejected():
    def forward_with_grad(model, loader, loss_fn):
        model.eval()
        return _eval_body(model, loader, loss_fn, forward=model.forward)

    rejected(T + "evaluate", forward_with_grad, "forgot_no_grad")


def test_evaluate_that_leaves_autograd_off_is_rejected():
    def grad_off_for_good(model, loader, loss_fn):
        model.eval()
        torch.set_grad_enabled(False)
        return _eval_body(model, loader, loss_fn)

    rejected(T + "evaluate", grad_off_for_good, "grad_left_off")
    assert torch.is_grad_enabled()


def test_evaluate_eval_attribute_not_called_is_rejected():
    def eval_attribute(model, loader, loss_fn):
        model.eval  # noqa: B018
        with torch.no_grad():
            return _eval_body(model, loader, loss_fn)

    rejected(T + "evaluate", eval_attribute, "forgot_eval")


def test_evaluate_alternatives_pass():
    def whole_dataset(model, loader, loss_fn):
        model.eval()
        X, y = loader.dataset.tensors
        with torch.inference_mode():
            logits = model.forward(X)
            return loss_fn(logits, y).item(), (logits.argmax(1) == y).double().mean().item()

    accepted(T + "evaluate", whole_dataset)


def test_clip_that_iterates_parameters_twice_is_rejected():
    """With `model.parameters()` (a generator) the second loop is empty: nothing is clipped."""

    def twice(parameters, max_norm):
        total = torch.sqrt(sum((p.grad**2).sum() for p in parameters if p.grad is not None))
        if total > max_norm:
            for p in parameters:
                if p.grad is not None:
                    p.grad.mul_(max_norm / (total + 1e-6))
        return total.item()

    rejected(T + "clip_grad_norm", twice, "parameters_iterated_twice", n_random=0)


def test_clip_with_grads_of_params_values_is_rejected():
    def norm_of_weights(parameters, max_norm):
        params = [p for p in parameters if p.grad is not None]
        total = torch.sqrt(sum((p.detach() ** 2).sum() for p in params))
        if total > max_norm:
            for p in params:
                p.grad.mul_(max_norm / (total + 1e-6))
        return total.item()

    rejected(T + "clip_grad_norm", norm_of_weights)


def test_clip_alternatives_pass():
    def replace_grads(parameters, max_norm):
        params = [p for p in parameters if p.grad is not None]
        if not params:  # no gradients at all: the norm is 0.0 (torch.cat refuses an empty list)
            return 0.0
        total = torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in params]))
        if total > max_norm:
            for p in params:
                p.grad = p.grad * (max_norm / (total + 1e-6))
        return float(total)

    accepted(T + "clip_grad_norm", replace_grads, n_random=20)


def _accumulate(model, loss_fn, optimizer, micro_batches):
    n_total = sum(len(y) for _, y in micro_batches)
    optimizer.zero_grad()
    for X, y in micro_batches:
        (loss_fn(model(X), y) * len(y) / n_total).backward()


def test_accumulation_with_more_than_one_step_is_rejected():
    def extra_empty_step(model, loss_fn, optimizer, micro_batches):
        _accumulate(model, loss_fn, optimizer, micro_batches)
        optimizer.step()
        optimizer.zero_grad()
        optimizer.step()  # harmless for plain SGD, not for Adam or momentum

    def no_step(model, loss_fn, optimizer, micro_batches):
        _accumulate(model, loss_fn, optimizer, micro_batches)

    rejected(T + "accumulated_step", extra_empty_step, "not_one_step")
    rejected(T + "accumulated_step", no_step, "not_one_step")


def test_accumulation_with_a_hard_coded_loss_is_rejected():
    def sum_reduction(model, loss_fn, optimizer, micro_batches):
        n_total = sum(len(y) for _, y in micro_batches)
        optimizer.zero_grad()
        for X, y in micro_batches:
            (F.cross_entropy(model(X), y, reduction="sum") / n_total).backward()
        optimizer.step()

    rejected(T + "accumulated_step", sum_reduction, "ignores_loss_fn")


class _Stopper:
    def __init__(self, patience=3):
        self.patience, self.best_loss, self.best_state, self.bad_epochs = patience, float("inf"), None, 0

    def snapshot(self, model):
        return copy.deepcopy(model.state_dict())

    def improved(self, val_loss):
        return val_loss < self.best_loss

    def step(self, val_loss, model):
        if self.improved(val_loss):
            self.best_loss, self.best_state, self.bad_epochs = val_loss, self.snapshot(model), 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


def test_early_stopping_partial_snapshot_is_rejected():
    class BiasByReference(_Stopper):
        def snapshot(self, model):
            sd = model.state_dict()
            return {"weight": sd["weight"].clone(), "bias": sd["bias"]}

    class ShallowDictCopy(_Stopper):
        def snapshot(self, model):
            return dict(model.state_dict())

    rejected(T + "EarlyStopping", BiasByReference, "state_not_copied")
    rejected(T + "EarlyStopping", ShallowDictCopy, "state_not_copied")


def test_early_stopping_with_a_min_delta_is_rejected():
    class MinDelta(_Stopper):
        def improved(self, val_loss):
            return val_loss < self.best_loss - 1e-3  # the text: *strictly lower* is an improvement

    rejected(T + "EarlyStopping", MinDelta, n_random=0)


def test_early_stopping_feedback_names_the_part_that_is_wrong():
    class ComparesWithLastEpoch(_Stopper):
        last = float("inf")

        def improved(self, val_loss):
            better, self.last = val_loss < self.last, val_loss
            return better

    res = rejected(T + "EarlyStopping", ComparesWithLastEpoch, n_random=0)
    assert "stopping epoch" in res.message or "best_state" in res.message or "best_loss" in res.message

    # (no `best_loss` attribute at all: named, not "result[2] is NaN")
    class NoBestLoss:
        def __init__(self, patience=3):
            self.inner = _Stopper(patience)
            self.best_state = None

        def step(self, val_loss, model):
            stop = self.inner.step(val_loss, model)
            self.best_state = self.inner.best_state
            return stop

    rejected(T + "EarlyStopping", NoBestLoss, "no_best_loss")


def test_early_stopping_alternatives_pass():
    class DeepCopiedModel(_Stopper):
        def snapshot(self, model):
            return copy.deepcopy(model).state_dict()

    accepted(T + "EarlyStopping", DeepCopiedModel, n_random=20)


def test_warmup_cosine_alternatives_pass():
    def clamped(optimizer, warmup_steps, total_steps):
        def factor(s):
            if s < warmup_steps:
                return (s + 1) / warmup_steps
            # clamped progress is fine; the text's `max(1, ...)` is needed for warmup_steps == total_steps
            return 0.5 * (1 + math.cos(math.pi * min(1.0, (s - warmup_steps) / max(1, total_steps - warmup_steps))))

        return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)

    accepted(T + "warmup_cosine", clamped, n_random=20)


def test_warmup_cosine_off_by_one_is_rejected():
    def decays_too_fast(optimizer, warmup_steps, total_steps):
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: (s + 1) / warmup_steps if s < warmup_steps
                                                 else 0.5 * (1 + math.cos(math.pi * (s - warmup_steps)
                                                                          / max(1, total_steps - warmup_steps - 1))))

    rejected(T + "warmup_cosine", decays_too_fast, n_random=0)


# =========================================================================== 08 capstone
C = "09_capstone."


def test_confusion_matrix_alternatives_pass():
    def by_bincount(preds, targets, num_classes):
        return torch.bincount(targets * num_classes + preds, minlength=num_classes**2).reshape(num_classes, num_classes)

    def by_loop(preds, targets, num_classes):
        cm = torch.zeros(num_classes, num_classes, dtype=torch.int64)
        for t, p in zip(targets.tolist(), preds.tolist()):
            cm[t, p] += 1
        return cm

    accepted(C + "confusion_matrix", by_bincount, n_random=20)
    accepted(C + "confusion_matrix", by_loop, n_random=20)


def test_confusion_matrix_bincount_without_minlength_is_rejected():
    def no_minlength(preds, targets, num_classes):
        return torch.bincount(targets * num_classes + preds).reshape(num_classes, num_classes)

    def float_counts(preds, targets, num_classes):
        cm = torch.zeros(num_classes, num_classes)
        cm.index_put_((targets, preds), torch.ones(len(targets)), accumulate=True)
        return cm

    rejected(C + "confusion_matrix", no_minlength, n_random=0)
    rejected(C + "confusion_matrix", float_counts, "wrong_dtype", n_random=0)


def _train(model, X, y, num_epochs=10):
    torch.manual_seed(0)
    loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(0))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, total_steps=num_epochs * len(loader))
    model.train()
    for _ in range(num_epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            optimizer.step()
            scheduler.step()
    return model


def test_classifier_that_predicts_without_its_network_is_rejected():
    """Nearest neighbour on the stored training images scores about 98 % but is not the task."""

    class NearestNeighbour:
        def __init__(self):
            self.model = None

        def fit(self, X, y):
            self.model = nn.Linear(64, 10)  # there to satisfy the check, never used
            self.X, self.y = X.flatten(1), y
            return self

        def predict(self, X):
            return self.y[torch.cdist(X.flatten(1), self.X).argmin(dim=1)]

    rejected(C + "DigitClassifier", NearestNeighbour, "predict_without_model", seeds=(3,))


def test_classifier_whose_network_does_not_output_logits_is_rejected():
    class IdentityModel:
        def fit(self, X, y):
            self.model = nn.Identity()
            self.X, self.y = X.flatten(1), y
            return self

        def predict(self, X):
            self.model.eval()
            with torch.inference_mode():
                feats = self.model(X).flatten(1)
            return self.y[torch.cdist(feats, self.X).argmin(dim=1)]

    rejected(C + "DigitClassifier", IdentityModel, "model_output", seeds=(3,))


def test_classifier_that_leaves_autograd_off_is_rejected():
    class GradOff(cap.DigitClassifier):
        def predict(self, X):
            self.model.eval()
            torch.set_grad_enabled(False)
            return self.model(X).argmax(dim=1)

    rejected(C + "DigitClassifier", GradOff, "grad_left_off", seeds=(3,))
    assert torch.is_grad_enabled()


def test_classifier_trained_on_the_notebooks_digits_is_rejected():
    from course_utils.datasets import digits_split

    class NotebookData(cap.DigitClassifier):
        def fit(self, X, y):
            s = digits_split(images=True)  # the notebook's globals instead of the arguments
            return super().fit(s.X_train, s.y_train)

    rejected(C + "DigitClassifier", NotebookData, "ignored_given_data", seeds=(3,))


def test_classifier_with_flattening_outside_the_model_passes():
    """An MLP that flattens in fit/predict: the softmax probe used to call the model on raw images and crash."""

    class FlatMLP:
        def fit(self, X, y):
            torch.manual_seed(0)
            self.model = _train(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                                              nn.Linear(64, 10)), X.flatten(1), y, num_epochs=12)
            return self

        def predict(self, X):
            self.model.eval()
            with torch.inference_mode():
                return self.model(X.flatten(1)).argmax(dim=1)

    accepted(C + "DigitClassifier", FlatMLP, seeds=(3,))


def test_classifier_alternatives_pass():
    class LogSoftmaxAndForward(cap.DigitClassifier):
        """Log-probabilities are logits too; `forward` called directly; batched predict."""

        def fit(self, X, y):
            super().fit(X, y)
            self.model = nn.Sequential(self.model, nn.LogSoftmax(dim=1))
            return self

        def predict(self, X):
            self.model.eval()
            with torch.no_grad():
                return torch.cat([self.model.forward(xb).argmax(1) for xb in X.split(100)])

    accepted(C + "DigitClassifier", LogSoftmaxAndForward, seeds=(3,))


def test_softmax_network_still_named_when_predict_preprocesses():
    class ScaledSoftmax(cap.DigitClassifier):
        def fit(self, X, y):
            torch.manual_seed(0)
            self.model = _train(nn.Sequential(cap._cnn(), nn.Softmax(dim=1)), X * 2, y, num_epochs=3)
            return self

        def predict(self, X):
            self.model.eval()
            with torch.inference_mode():
                return self.model(X * 2).argmax(dim=1)

    rejected(C + "DigitClassifier", ScaledSoftmax, "softmax_output", seeds=(3,))


@pytest.mark.parametrize("exercise_id", [T + "train_one_epoch", T + "evaluate", T + "accumulated_step",
                                         D + "stratified_split", D + "balanced_sampler", D + "ShardedRange"])
def test_new_checks_leave_caller_state_alone(exercise_id):
    torch.manual_seed(5)
    before = torch.get_rng_state()
    threads = torch.get_num_threads()
    with torch.no_grad():
        res = check(exercise_id, grading.reference(exercise_id), n_random=3)
        assert not torch.is_grad_enabled()
    assert res.passed, res.text()
    assert torch.equal(torch.get_rng_state(), before)
    assert torch.get_num_threads() == threads
