"""Lesson 05 (training loop): what the generic grader tests cannot see.

- the probes (stale gradients, mode/grad hooks, uneven last batches) name the right mistake,
  and reasonable alternative loops pass;
- checks leave the caller's thread count alone;
- the course's training functions and the lesson's claims (≥ 97 % on the digits, memory kept
  by stored loss tensors) hold.
"""

from __future__ import annotations

import copy
import functools
import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from course_utils import grading  # noqa: E402
from course_utils.exercises.l05_training_loop import train_one_epoch as l05  # noqa: E402
from course_utils.lesson_props import l05_training_lab as lab  # noqa: E402

from grading_asserts import accepted, rejected  # noqa: E402 (tests/ is on sys.path)
from lesson_kit import SOLUTIONS, Tables, define, fixed_and_random_cases, notebook_source  # noqa: E402


LESSON = "05_training_loop"

def check(name, answer, seed=None):
    return grading.check(f"05_training_loop.{name}", answer, seed=seed)


# --------------------------------------------------------------------------- alternatives pass
def train_keep_grads_as_zeros(model, loader, loss_fn, optimizer):
    model.train()
    total, n = 0.0, 0
    for X, y in loader:
        model.zero_grad(set_to_none=False)
        out = model(X)
        loss = loss_fn(out, y)
        loss.backward()
        optimizer.step()
        total += loss.item() * X.size(0)
        n += X.size(0)
        _ = (out.argmax(1) == y).float().mean()  # a running accuracy from the same forward
    return total / n


def evaluate_with_no_grad(model, loader, loss_fn):
    model.eval()
    losses, hits, count = [], 0, 0
    with torch.no_grad():
        for X, y in loader:
            logits = model(X)
            losses.append(loss_fn(logits, y).item() * len(y))
            hits += int((logits.argmax(-1) == y).sum())
            count += len(y)
    model.train()  # restoring the mode afterwards is fine
    return sum(losses) / count, hits / count


def clip_with_torch(parameters, max_norm):
    return torch.nn.utils.clip_grad_norm_(list(parameters), max_norm).item()


def test_clip_with_the_builtin_is_rejected_the_text_says_write_it_yourself():
    """Issue 11: rules in the prose are enforced ("Write it yourself")."""
    for seed in (1, 2, 3):
        res = check("clip_grad_norm", clip_with_torch, seed=seed)
        assert res.mistake == "uses_builtin" and "Write it yourself" in res.message, res.text()


class EarlyStoppingWithClones:
    def __init__(self, patience=3):
        self.patience, self.best_loss, self.best_state, self.bad_epochs = patience, float("inf"), None, 0

    def step(self, val_loss, model):
        if val_loss < self.best_loss:
            self.best_loss, self.bad_epochs = val_loss, 0
            self.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            return False
        self.bad_epochs += 1
        return self.bad_epochs == self.patience


@pytest.mark.parametrize("name,answer", [
    ("train_one_epoch", train_keep_grads_as_zeros),
    ("evaluate", evaluate_with_no_grad),
    ("EarlyStopping", EarlyStoppingWithClones),
])
def test_reasonable_alternatives_pass(name, answer):
    for seed in (1, 2, 3):
        res = check(name, answer, seed=seed)
        assert res.passed, res.text()


# --------------------------------------------------------------------------- probes name the bug
def train_calls_eval(model, loader, loss_fn, optimizer):
    model.eval()
    return _train_body(model, loader, loss_fn, optimizer)


def _train_body(model, loader, loss_fn, optimizer):
    total, n = 0.0, 0
    for X, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(X), y)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(y)
        n += len(y)
    return total / n


def train_returns_tensor(model, loader, loss_fn, optimizer):
    model.train()
    total, n = 0.0, 0
    for X, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(X), y)
        loss.backward()
        optimizer.step()
        total = total + loss.detach() * len(y)
        n += len(y)
    return total / n


def train_forgets_backward(model, loader, loss_fn, optimizer):
    model.train()
    total, n = 0.0, 0
    for X, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(X), y)
        optimizer.step()
        total += loss.item() * len(y)
        n += len(y)
    return total / n


def train_under_no_grad(model, loader, loss_fn, optimizer):
    model.train()
    with torch.no_grad():
        for X, y in loader:
            loss_fn(model(X), y)
    return 0.0


@pytest.mark.parametrize("answer,mistake", [
    (train_calls_eval, "forgot_train_mode"),
    (train_returns_tensor, "returned_tensor"),
    (train_forgets_backward, "forgot_backward"),
    (train_under_no_grad, "no_grad_in_training"),
])
def test_train_one_epoch_probes(answer, mistake):
    res = check("train_one_epoch", answer, seed=7)
    assert not res.passed and res.mistake == mistake, res.text()


def test_forgot_no_grad_is_caught_even_if_caller_disabled_grad():
    example = grading.exercise("05_training_loop.evaluate").mistake("forgot_no_grad").example
    with torch.no_grad():
        res = check("evaluate", example, seed=3)
        assert not torch.is_grad_enabled(), "the check must restore the caller's grad mode"
    assert res.mistake == "forgot_no_grad"


def test_checks_restore_thread_count_even_when_answer_raises():
    before = torch.get_num_threads()

    def broken(model, loader, loss_fn, optimizer):
        assert torch.get_num_threads() == 1
        raise RuntimeError("learner bug")

    res = check("train_one_epoch", broken, seed=1)
    assert res.mistake == "exception"
    assert torch.get_num_threads() == before


def test_loop_cases_always_have_an_uneven_last_batch():
    ex = grading.exercise("05_training_loop.train_one_epoch")
    for seed in range(50):
        kw = ex.cases(grading.Rand(seed)).kwargs
        assert len(kw["y"]) % kw["batch_size"] != 0


# --------------------------------------------------------------------------- course functions and claims
def test_fit_reaches_97_percent_like_the_lesson():
    train, test = lab.digits_loaders(batch_size=64, seed=0)
    for seed in (0, 1):
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
        num_epochs = 12
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, total_steps=num_epochs * len(train))
        loss_fn = nn.CrossEntropyLoss()
        for _ in range(num_epochs):
            model.train()
            for X, y in train:
                optimizer.zero_grad()
                loss_fn(model(X), y).backward()
                optimizer.step()
                scheduler.step()
        _, acc = lab.evaluate(model, test, loss_fn)
        assert acc >= 0.97, f"seed {seed}: {acc:.3f}"


def test_fit_history_and_scheduler():
    torch.manual_seed(0)
    model = nn.Linear(64, 10)
    train, test = lab.digits_loaders(batch_size=256, train_subset=300)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    h = lab.fit(model, train, test, nn.CrossEntropyLoss(), opt, 3, scheduler=sched, progress=False)
    assert list(h) == ["train loss", "test loss", "test acc"] and all(len(v) == 3 for v in h.values())
    assert opt.param_groups[0]["lr"] == pytest.approx(0.5 * 0.5**3)


def test_graph_bytes_counts_kept_activations_only():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    y = torch.randint(0, 10, (32,))
    losses = [nn.functional.cross_entropy(model(torch.randn(32, 64)), y.clone()) for _ in range(5)]
    kept = lab.graph_bytes(losses, exclude=model.parameters())
    assert kept >= 5 * 32 * 256 * 4  # at least the hidden activations of every stored graph
    assert lab.graph_bytes(losses[:1], exclude=model.parameters()) * 5 == kept
    losses[0].backward()
    assert lab.graph_bytes(losses[:1], exclude=model.parameters()) == 0  # backward frees them
    with torch.inference_mode():
        assert lab.graph_bytes([nn.functional.cross_entropy(model(torch.randn(32, 64)), y)]) == 0


def test_lr_trial_and_scheduler_lrs():
    good = lab.lr_trial(0.1, num_epochs=2)
    assert len(good) == 8 and good[-1] < good[0]
    bad = lab.lr_trial(1000.0, num_epochs=2)
    assert len(bad) == 8 and bad[-1] == float("inf")
    lrs = lab.scheduler_lrs(lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.1), 5, lr=1.0)
    assert lrs == pytest.approx([1.0, 1.0, 0.1, 0.1, 0.01])
    fig = lab.plot_lr_trial(0.1, num_epochs=1)
    assert isinstance(fig, matplotlib.figure.Figure)


def test_reference_early_stopping_snapshot_is_independent_of_the_model():
    stopper = grading.reference("05_training_loop.EarlyStopping")(patience=2)
    model = nn.Linear(2, 1)
    stopper.step(1.0, model)
    snapshot = copy.deepcopy(stopper.best_state)
    with torch.no_grad():
        model.weight.add_(1.0)
    assert torch.equal(stopper.best_state["weight"], snapshot["weight"])


# --------------------------------------------------------------------------- the instructor's sandbox
# =========================================================================== adversarial
# (moved from test_adversarial_l04_l08.py) Answers that violate the exercise text are rejected
# (naming the mistake where a name fits); correct answers written differently are accepted.
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


@pytest.mark.parametrize("exercise_id", [T + "train_one_epoch", T + "evaluate", T + "accumulated_step"])
def test_new_checks_leave_caller_state_alone(exercise_id):
    torch.manual_seed(5)
    before = torch.get_rng_state()
    threads = torch.get_num_threads()
    with torch.no_grad():
        res = grading.check(exercise_id, grading.reference(exercise_id), seed=7, n_random=3)
        assert not torch.is_grad_enabled()
    assert res.passed, res.text()
    assert torch.equal(torch.get_rng_state(), before)
    assert torch.get_num_threads() == threads


# =========================================================================== oracles
# (moved from test_oracle_l04_l08.py, issue 11) Each reference compared with a torch / NumPy /
# scikit-learn built-in that computes the same thing another way, across the exercise's whole case
# generator (many seeds) and its fixed edge cases.
ORACLE_SEEDS = range(60)


def _cases(exercise_id, seeds=ORACLE_SEEDS):
    return fixed_and_random_cases(exercise_id, seeds)

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


# =========================================================================== red team
# (moved from test_redteam_l04_l08.py, issue 11) At least five wrong answers a learner would
# plausibly write for every exercise, three valid but unusual answers and two cheats; every verdict
# must hold for several seeds (``rejected``/``accepted`` try each of them). Grouped per exercise in
# ``WRONG[exercise] = [(answer, mistake or None)]`` so one parametrized test covers them all.
_tables = Tables()  # tests/lesson_kit.py
WRONG, VALID, CHEATS = _tables.WRONG, _tables.VALID, _tables.CHEATS
wrong, valid, cheat = _tables.wrong, _tables.valid, _tables.cheat

# =========================================================================== 05 train_one_epoch
T1 = "05_training_loop.train_one_epoch"


def _five_steps(model, X, y, loss_fn, optimizer):
    optimizer.zero_grad()
    loss = loss_fn(model(X), y)
    loss.backward()
    optimizer.step()
    return loss


@wrong(T1)
def train_divides_by_batches(model, loader, loss_fn, optimizer):
    model.train()
    total = 0.0
    for X, y in loader:
        total += _five_steps(model, X, y, loss_fn, optimizer).item() * len(y)
    return total / len(loader)


@wrong(T1)
def train_returns_tensor(model, loader, loss_fn, optimizer):
    model.train()
    total, n = 0.0, 0
    for X, y in loader:
        total = total + _five_steps(model, X, y, loss_fn, optimizer) * len(y)
        n += len(y)
    return total / n


@wrong(T1, "zero_grad_between_backward_and_step")
def train_zero_grad_before_step(model, loader, loss_fn, optimizer):
    model.train()
    total, n = 0.0, 0
    for X, y in loader:
        loss = loss_fn(model(X), y)
        loss.backward()
        optimizer.zero_grad()
        optimizer.step()
        total += loss.item() * len(y)
        n += len(y)
    return total / n


@wrong(T1, "softmax_before_loss")
def train_softmax_first(model, loader, loss_fn, optimizer):
    model.train()
    total, n = 0.0, 0
    for X, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(torch.softmax(model(X), dim=1), y)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(y)
        n += len(y)
    return total / n


@wrong(T1)
def train_return_inside_loop(model, loader, loss_fn, optimizer):
    model.train()
    for X, y in loader:
        loss = _five_steps(model, X, y, loss_fn, optimizer)
        return loss.item()


@wrong(T1, "forgot_train_mode")
def train_mode_after_loop(model, loader, loss_fn, optimizer):
    total, n = 0.0, 0
    for X, y in loader:
        total += _five_steps(model, X, y, loss_fn, optimizer).item() * len(y)
        n += len(y)
    model.train()
    return total / n


@wrong(T1)
def train_last_batch_loss(model, loader, loss_fn, optimizer):
    model.train()
    for X, y in loader:
        loss = _five_steps(model, X, y, loss_fn, optimizer)
    return loss.item()


@wrong(T1)
def train_clips_too(model, loader, loss_fn, optimizer):
    model.train()
    total, n = 0.0, 0
    for X, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(X), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        total += loss.item() * len(y)
        n += len(y)
    return total / n


@valid(T1)
def train_dataset_length(model, loader, loss_fn, optimizer):
    model.train(True)
    total = 0.0
    for X, y in loader:
        for p in model.parameters():
            p.grad = None
        loss = loss_fn(model(X), y)
        loss.backward()
        optimizer.step()
        total += loss.detach() * X.size(0)
    return float(total) / len(loader.dataset)


@valid(T1)
def train_accuracy_from_the_same_forward(model, loader, loss_fn, optimizer):
    """A running accuracy, taken from the logits of the one forward per batch."""
    model.train()
    total, correct, n = 0.0, 0, 0
    for X, y in loader:
        optimizer.zero_grad(set_to_none=True)
        logits = model(X)
        loss = loss_fn(logits, y)
        loss.backward()
        optimizer.step()
        correct += int((logits.argmax(1) == y).sum())
        total += float(loss) * len(y)
        n += len(y)
    return total / n


# A second forward in training mode, even under no_grad, moves BatchNorm's running statistics and
# draws new dropout masks: a different model for a model with those layers (issue 27's red team;
# it passed as "harmless" before).
@wrong(T1, "second_forward")
def train_extra_accuracy_pass(model, loader, loss_fn, optimizer):
    model.train()
    losses, sizes = [], []
    for X, y in loader:
        model.zero_grad(set_to_none=False)
        logits = model(X)
        loss = loss_fn(logits, y)
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            model(X)  # e.g. for an accuracy after the step
        losses.append(loss.item())
        sizes.append(len(y))
    return sum(l * s for l, s in zip(losses, sizes)) / sum(sizes)  # noqa: E741


@valid(T1)
def train_numpy_float(model, loader, loss_fn, optimizer):
    model.train()
    total, n = np.float64(0.0), 0
    for i, (X, y) in enumerate(loader):  # noqa: B007 - as a learner writes it
        optimizer.zero_grad(set_to_none=True)
        out = model.forward(X)
        loss = loss_fn(out, y)
        loss.backward()
        optimizer.step()
        total += np.float64(loss.item()) * y.shape[0]
        n += y.shape[0]
    return total / n


@cheat(T1)
def train_course_copy_on_a_clone(model, loader, loss_fn, optimizer):
    """Trains a copy (so nothing can go wrong) and reports its loss."""
    twin = copy.deepcopy(model)
    opt = torch.optim.SGD(twin.parameters(), lr=optimizer.param_groups[0]["lr"])
    twin.train()
    total, n = 0.0, 0
    for X, y in loader:
        total += _five_steps(twin, X, y, loss_fn, opt).item() * len(y)
        n += len(y)
    model.train()
    model(X)
    return total / n


@cheat(T1)
def train_two_epochs_reports_second(model, loader, loss_fn, optimizer):
    model.train()
    for _ in range(2):
        total, n = 0.0, 0
        for X, y in loader:
            total += _five_steps(model, X, y, loss_fn, optimizer).item() * len(y)
            n += len(y)
    return total / n


# =========================================================================== 05 evaluate
EV = "05_training_loop.evaluate"


@wrong(EV)
def eval_divides_loss_by_batches(model, loader, loss_fn):
    model.eval()
    total, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for X, y in loader:
            logits = model(X)
            total += loss_fn(logits, y).item()
            correct += (logits.argmax(1) == y).sum().item()
            n += len(y)
    return total / len(loader), correct / n


@wrong(EV, "returned_tensor")
def eval_accuracy_tensor(model, loader, loss_fn):
    model.eval()
    total, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for X, y in loader:
            logits = model(X)
            total += loss_fn(logits, y).item() * len(y)
            correct += (logits.argmax(1) == y).sum()
            n += len(y)
    return total / n, correct / n


@wrong(EV)
def eval_swapped(model, loader, loss_fn):
    model.eval()
    total, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for X, y in loader:
            logits = model(X)
            total += loss_fn(logits, y).item() * len(y)
            correct += (logits.argmax(1) == y).sum().item()
            n += len(y)
    return correct / n, total / n


@wrong(EV, "softmax_before_loss")
def eval_softmax_first(model, loader, loss_fn):
    model.eval()
    total, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for X, y in loader:
            probs = model(X).softmax(dim=1)
            total += loss_fn(probs, y).item() * len(y)
            correct += (probs.argmax(1) == y).sum().item()
            n += len(y)
    return total / n, correct / n


@wrong(EV, "forgot_eval")
def eval_in_train_mode_no_grad(model, loader, loss_fn):
    total, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for X, y in loader:
            logits = model(X)
            total += loss_fn(logits, y).item() * len(y)
            correct += (logits.argmax(1) == y).sum().item()
            n += len(y)
    model.eval()
    return total / n, correct / n


@wrong(EV)
def eval_argmax_dim0(model, loader, loss_fn):
    model.eval()
    total, correct, n = 0.0, 0, 0
    with torch.inference_mode():
        for X, y in loader:
            logits = model(X)
            total += loss_fn(logits, y).item() * len(y)
            correct += (logits.argmax(0)[: len(y)] == y).sum().item()
            n += len(y)
    return total / n, correct / n


@valid(EV)
def eval_restores_train_mode(model, loader, loss_fn):
    was = model.training
    model.eval()
    losses, hits, n = [], 0, 0
    with torch.no_grad():
        for X, y in loader:
            out = model(X)
            losses.append(loss_fn(out, y) * len(y))
            hits += int((out.argmax(-1) == y).sum())
            n += len(y)
    model.train(was)
    return float(torch.stack(losses).sum() / n), hits / n


@valid(EV)
def eval_concatenates_logits(model, loader, loss_fn):
    model.train(False)
    with torch.inference_mode():
        outs = [(model(X), y) for X, y in loader]
        logits = torch.cat([o for o, _ in outs])
        y = torch.cat([t for _, t in outs])
        return loss_fn(logits, y).item(), (logits.argmax(1) == y).float().mean().item()


@valid(EV)
def eval_set_grad_enabled_block(model, loader, loss_fn):
    model.eval()
    total, correct, n = 0.0, 0.0, 0
    with torch.set_grad_enabled(False):
        for X, y in loader:
            logits = model(X)
            total += float(loss_fn(logits, y)) * len(y)
            correct += float((logits.max(1).indices == y).sum())
            n += len(y)
    return total / n, correct / n


@cheat(EV)
def eval_reports_fixed_numbers(model, loader, loss_fn):
    model.eval()
    with torch.no_grad():
        for X, _ in loader:
            model(X)
    return 1.0, 0.5


@cheat(EV)
def eval_only_first_batch(model, loader, loss_fn):
    model.eval()
    with torch.no_grad():
        X, y = next(iter(loader))
        logits = model(X)
        return loss_fn(logits, y).item(), (logits.argmax(1) == y).float().mean().item()


# =========================================================================== 05 clip_grad_norm
CG = "05_training_loop.clip_grad_norm"


@wrong(CG, "uses_builtin")
def clip_builtin(parameters, max_norm):
    return torch.nn.utils.clip_grad_norm_(parameters, max_norm).item()


@wrong(CG)
def clip_returns_tensor(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    total = torch.sqrt(sum((g**2).sum() for g in grads))
    if total > max_norm:
        for g in grads:
            g.mul_(max_norm / (total + 1e-6))
    return total


@wrong(CG)
def clip_forgets_none(parameters, max_norm):
    grads = [p.grad for p in parameters]
    total = torch.sqrt(sum((g**2).sum() for g in grads))
    if total > max_norm:
        for g in grads:
            g.mul_(max_norm / (total + 1e-6))
    return total.item()


@wrong(CG)
def clip_norm_of_weights(parameters, max_norm):
    params = [p for p in parameters if p.grad is not None]
    total = torch.sqrt(sum((p.detach() ** 2).sum() for p in params))
    if total > max_norm:
        for p in params:
            p.grad.mul_(max_norm / (total + 1e-6))
    return total.item()


@wrong(CG)
def clip_mean_of_squares(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    total = torch.sqrt(torch.cat([g.flatten() for g in grads]).pow(2).mean())
    if total > max_norm:
        for g in grads:
            g.mul_(max_norm / (total + 1e-6))
    return total.item()


@wrong(CG, "uses_builtin")
def clip_builtin_total_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    total = torch.nn.utils.get_total_norm(grads)
    torch.nn.utils.clip_grads_with_norm_(grads and [p for p in []] or [], max_norm, total)
    if total > max_norm:
        for g in grads:
            g.mul_(max_norm / (total + 1e-6))
    return total.item()


@wrong(CG, "exception")
def clip_crashes_without_grads(parameters, max_norm):
    """Right whenever some parameter has a gradient; with none, `torch.sqrt(sum([]))` is `sqrt(0)` of
    an int and raises TypeError (red team: the reference itself did this)."""
    grads = [p.grad for p in parameters if p.grad is not None]
    total = torch.sqrt(sum((g**2).sum() for g in grads))
    if total > max_norm:
        for g in grads:
            g.mul_(max_norm / (total + 1e-6))
    return total.item()


@wrong(CG)
def clip_largest_entry(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    total = max(g.abs().max() for g in grads)
    if total > max_norm:
        for g in grads:
            g.mul_(max_norm / (total + 1e-6))
    return float(total)


@wrong(CG, "not_clipped")
def clip_scaled_copies_never_written_back(parameters, max_norm):
    """(redteam) loops once over a list, but the scaled gradients are new tensors nobody keeps: nothing
    is clipped, and that is not `parameters_iterated_twice`."""
    grads = [p.grad for p in parameters if p.grad is not None]
    total = torch.sqrt(sum((g**2).sum() for g in grads))
    if total > max_norm:
        grads = [g * (max_norm / (total + 1e-6)) for g in grads]
    return total.item()


@wrong(CG, "scaled_weights")
def clip_scales_the_weights(parameters, max_norm):
    """(redteam) scales the parameters' data instead of their gradients."""
    params = [p for p in parameters if p.grad is not None]
    total = torch.sqrt(sum((p.grad**2).sum() for p in params))
    if total > max_norm:
        for p in params:
            p.data.mul_(max_norm / (total + 1e-6))
    return total.item()


@valid(CG)
def clip_linalg_out_of_place(parameters, max_norm):
    params = [p for p in parameters if p.grad is not None]
    if not params:
        return 0.0
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in params]))
    if total > max_norm:
        for p in params:
            p.grad = p.grad * (max_norm / (total + 1e-6))
    return float(total)


@valid(CG)
def clip_python_floats(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    total = math.sqrt(sum(float(g.double().pow(2).sum()) for g in grads))
    if total > max_norm:
        coef = max_norm / (total + 1e-6)
        for g in grads:
            g *= coef
    return total


@valid(CG)
def clip_flat_cat(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    total = torch.cat([g.reshape(-1) for g in grads] or [torch.zeros(0)]).norm()
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    for g in grads:
        g.mul_(coef)
    return total.item()


@cheat(CG)
def clip_only_when_far_above(parameters, max_norm):
    """The shown cases are 'much smaller' and 'much larger': clip only above 2 * max_norm."""
    grads = [p.grad for p in parameters if p.grad is not None]
    total = torch.sqrt(sum((g**2).sum() for g in grads))
    if total > 2 * max_norm:
        for g in grads:
            g.mul_(max_norm / (total + 1e-6))
    return total.item()


@cheat(CG)
def clip_lying_float(parameters, max_norm):
    """Returns a float subclass that claims to equal anything."""

    class Anything(float):
        def __eq__(self, other):
            return True

        __hash__ = float.__hash__

    list(parameters)
    return Anything(0.0)


# =========================================================================== 05 accumulated_step
AS = "05_training_loop.accumulated_step"


@wrong(AS, "one_backward")
def acc_sum_then_one_backward(model, loss_fn, optimizer, micro_batches):
    n = sum(len(y) for _, y in micro_batches)
    optimizer.zero_grad()
    total = sum(loss_fn(model(X), y) * len(y) / n for X, y in micro_batches)
    total.backward()
    optimizer.step()


@wrong(AS)
def acc_divides_by_total_only(model, loss_fn, optimizer, micro_batches):
    n = sum(len(y) for _, y in micro_batches)
    optimizer.zero_grad()
    for X, y in micro_batches:
        (loss_fn(model(X), y) / n).backward()
    optimizer.step()


@wrong(AS)
def acc_weights_by_batches_count(model, loss_fn, optimizer, micro_batches):
    optimizer.zero_grad()
    for X, y in micro_batches:
        (loss_fn(model(X), y) * len(y) / len(micro_batches)).backward()
    optimizer.step()


@wrong(AS, "forgot_zero_grad")
def acc_zero_after_step(model, loss_fn, optimizer, micro_batches):
    n = sum(len(y) for _, y in micro_batches)
    for X, y in micro_batches:
        (loss_fn(model(X), y) * len(y) / n).backward()
    optimizer.step()
    optimizer.zero_grad()


@wrong(AS)
def acc_only_last(model, loss_fn, optimizer, micro_batches):
    optimizer.zero_grad()
    X, y = micro_batches[-1]
    loss_fn(model(X), y).backward()
    optimizer.step()


@wrong(AS)
def acc_own_optimizer(model, loss_fn, optimizer, micro_batches):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    n = sum(len(y) for _, y in micro_batches)
    opt.zero_grad()
    for X, y in micro_batches:
        (loss_fn(model(X), y) * len(y) / n).backward()
    opt.step()


@valid(AS)
def acc_model_zero_grad_len_x(model, loss_fn, optimizer, micro_batches):
    model.zero_grad()
    n = sum(X.shape[0] for X, _ in micro_batches)
    for X, y in micro_batches:
        loss = loss_fn(model(X), y)
        (loss * (X.shape[0] / n)).backward()
    optimizer.step()


@valid(AS)
def acc_scale_grads_after(model, loss_fn, optimizer, micro_batches):
    optimizer.zero_grad()
    n = sum(len(y) for _, y in micro_batches)
    for X, y in micro_batches:
        (loss_fn(model(X), y) * len(y)).backward()
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p.grad /= n
    optimizer.step()


@valid(AS)
def acc_autograd_grad_sum(model, loss_fn, optimizer, micro_batches):
    params = [p for p in model.parameters()]
    n = sum(len(y) for _, y in micro_batches)
    acc = [torch.zeros_like(p) for p in params]
    for X, y in micro_batches:
        gs = torch.autograd.grad(loss_fn(model(X), y) * len(y) / n, params)
        acc = [a + g for a, g in zip(acc, gs)]
    optimizer.zero_grad()
    for p, a in zip(params, acc):
        p.grad = a
    optimizer.step()


@cheat(AS)
def acc_first_micro_batch_size_as_weight(model, loss_fn, optimizer, micro_batches):
    """Right only when all micro-batches have the same size."""
    optimizer.zero_grad()
    for X, y in micro_batches:
        (loss_fn(model(X), y) * len(micro_batches[0][1]) / (len(micro_batches) * len(micro_batches[0][1]))).backward()
    optimizer.step()


@cheat(AS)
def acc_step_then_undo(model, loss_fn, optimizer, micro_batches):
    """Steps per micro-batch but hides it by stepping a throwaway optimizer."""
    n = sum(len(y) for _, y in micro_batches)
    shadow = torch.optim.SGD(model.parameters(), lr=optimizer.param_groups[0]["lr"])
    optimizer.zero_grad()
    for X, y in micro_batches:
        (loss_fn(model(X), y) * len(y) / n).backward()
        shadow.step()


# =========================================================================== 05 EarlyStopping
ES = "05_training_loop.EarlyStopping"


class _ES:
    def __init__(self, patience=3):
        self.patience = patience
        self.best_loss = float("inf")
        self.best_state = None
        self.bad_epochs = 0


@wrong(ES, "state_not_copied")
class ESShallowCopy(_ES):
    def step(self, val_loss, model):
        if val_loss < self.best_loss:
            self.best_loss, self.best_state, self.bad_epochs = val_loss, copy.copy(model.state_dict()), 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


@wrong(ES, "counter_decremented")
class ESCounterDecremented(_ES):
    """Red team s20: passed 30 of 40 seeds before the case with two bad epochs before an improvement."""

    def step(self, val_loss, model):
        if val_loss < self.best_loss:
            self.best_loss, self.best_state = val_loss, copy.deepcopy(model.state_dict())
            self.bad_epochs = max(0, self.bad_epochs - 1)
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


@wrong(ES, "state_not_copied")
class ESDictComprehension(_ES):
    def step(self, val_loss, model):
        if val_loss < self.best_loss:
            self.best_loss, self.bad_epochs = val_loss, 0
            self.best_state = {k: v for k, v in model.state_dict().items()}
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


@wrong(ES)
class ESStoresModelCopy(_ES):
    def step(self, val_loss, model):
        if val_loss < self.best_loss:
            self.best_loss, self.best_state, self.bad_epochs = val_loss, copy.deepcopy(model), 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


@wrong(ES)
class ESMinDelta(_ES):
    def step(self, val_loss, model):
        if val_loss < self.best_loss - 1e-3:
            self.best_loss, self.best_state, self.bad_epochs = val_loss, copy.deepcopy(model.state_dict()), 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


@wrong(ES)
class ESComparesWithPrevious(_ES):
    last = float("inf")

    def step(self, val_loss, model):
        if val_loss < self.last:
            self.bad_epochs = 0
            if val_loss < self.best_loss:
                self.best_loss, self.best_state = val_loss, copy.deepcopy(model.state_dict())
        else:
            self.bad_epochs += 1
        self.last = val_loss
        return self.bad_epochs >= self.patience


@wrong(ES)
class ESBestLossNotUpdated(_ES):
    def step(self, val_loss, model):
        if val_loss < self.best_loss:
            self.best_state, self.bad_epochs = copy.deepcopy(model.state_dict()), 0
            if self.best_loss == float("inf"):
                self.best_loss = val_loss
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


@valid(ES)
class ESClonedTensors(_ES):
    def step(self, val_loss, model):
        improved = val_loss < self.best_loss
        if improved:
            self.best_loss = float(val_loss)
            self.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        self.bad_epochs = 0 if improved else self.bad_epochs + 1
        return self.bad_epochs == self.patience


@valid(ES)
class ESDeepcopyModel(_ES):
    def step(self, val_loss, model):
        if val_loss >= self.best_loss:
            self.bad_epochs += 1
            return self.bad_epochs >= self.patience
        self.best_loss = val_loss
        self.best_state = copy.deepcopy(model).state_dict()
        self.bad_epochs = 0
        return False


@valid(ES)
class ESSavedBytes(_ES):
    def step(self, val_loss, model):
        import io
        if val_loss < self.best_loss:
            buf = io.BytesIO()
            torch.save(model.state_dict(), buf)
            buf.seek(0)
            self.best_state = dict(torch.load(buf))
            self.best_loss, self.bad_epochs = val_loss, 0
        else:
            self.bad_epochs += 1
        return bool(self.bad_epochs >= self.patience)


@cheat(ES)
class ESStopsAfterFixedEpochs(_ES):
    epochs = 0

    def step(self, val_loss, model):
        self.epochs += 1
        if val_loss < self.best_loss:
            self.best_loss, self.best_state = val_loss, copy.deepcopy(model.state_dict())
        return self.epochs >= 2 * self.patience + 1


@cheat(ES)
class ESNeverStops(_ES):
    def step(self, val_loss, model):
        if val_loss < self.best_loss:
            self.best_loss, self.best_state = val_loss, copy.deepcopy(model.state_dict())
        return False


# =========================================================================== 05 warmup_cosine
WC = "05_training_loop.warmup_cosine"
LambdaLR = torch.optim.lr_scheduler.LambdaLR


@wrong(WC)
def wc_no_max_one(optimizer, warmup_steps, total_steps):
    def f(s):
        if s < warmup_steps:
            return (s + 1) / warmup_steps
        return 0.5 * (1 + math.cos(math.pi * (s - warmup_steps) / (total_steps - warmup_steps)))
    return LambdaLR(optimizer, f)


@wrong(WC)
def wc_boundary_le(optimizer, warmup_steps, total_steps):
    def f(s):
        if s <= warmup_steps and warmup_steps:
            return (s + 1) / (warmup_steps + 1)
        return 0.5 * (1 + math.cos(math.pi * (s - warmup_steps) / max(1, total_steps - warmup_steps)))
    return LambdaLR(optimizer, f)


@wrong(WC)
def wc_returns_lr(optimizer, warmup_steps, total_steps):
    lr = optimizer.param_groups[0]["lr"]

    def f(s):
        if s < warmup_steps:
            return lr * (s + 1) / warmup_steps
        return lr * 0.5 * (1 + math.cos(math.pi * (s - warmup_steps) / max(1, total_steps - warmup_steps)))
    return LambdaLR(optimizer, f)


@wrong(WC)
def wc_progress_over_total(optimizer, warmup_steps, total_steps):
    def f(s):
        if s < warmup_steps:
            return (s + 1) / warmup_steps
        return 0.5 * (1 + math.cos(math.pi * (s - warmup_steps) / total_steps))
    return LambdaLR(optimizer, f)


@wrong(WC)
def wc_cosine_annealing_only(optimizer, warmup_steps, total_steps):
    return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total_steps)


@wrong(WC)
def wc_new_optimizer(optimizer, warmup_steps, total_steps):
    opt = torch.optim.SGD(optimizer.param_groups[0]["params"], lr=optimizer.param_groups[0]["lr"])
    return LambdaLR(opt, lambda s: (s + 1) / warmup_steps if s < warmup_steps else
                    0.5 * (1 + math.cos(math.pi * (s - warmup_steps) / max(1, total_steps - warmup_steps))))


@valid(WC)
def wc_numpy_min(optimizer, warmup_steps, total_steps):
    def f(s):
        warm = (s + 1) / warmup_steps if warmup_steps else 1.0
        prog = min(max(s - warmup_steps, 0) / max(1, total_steps - warmup_steps), 1.0)
        return float(warm) if s < warmup_steps else float(0.5 * (1 + np.cos(np.pi * prog)))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=f)


@valid(WC)
def wc_sin_squared(optimizer, warmup_steps, total_steps):
    """cos^2(pi p / 2) == (1 + cos(pi p)) / 2."""
    span = max(1, total_steps - warmup_steps)
    return LambdaLR(optimizer, lambda s: (s + 1) / warmup_steps if s < warmup_steps
                    else math.cos(math.pi * (s - warmup_steps) / span / 2) ** 2)


@valid(WC)
def wc_multiplicative_free_list(optimizer, warmup_steps, total_steps):
    table = [(s + 1) / warmup_steps if s < warmup_steps else
             0.5 * (1 + math.cos(math.pi * (s - warmup_steps) / max(1, total_steps - warmup_steps)))
             for s in range(total_steps + 1)]
    return LambdaLR(optimizer, lambda s: table[min(s, total_steps)])


@cheat(WC)
def wc_hardcoded_first_case(optimizer, warmup_steps, total_steps):
    table = [(s + 1) / 4 if s < 4 else 0.5 * (1 + math.cos(math.pi * (s - 4) / 8)) for s in range(13)]
    return LambdaLR(optimizer, lambda s: table[min(s, 12)] if warmup_steps == 4 else 1.0)


@cheat(WC)
def wc_lying_scheduler(optimizer, warmup_steps, total_steps):
    class Lying(torch.optim.lr_scheduler.LRScheduler):
        def get_lr(self):
            return [g["lr"] for g in self.optimizer.param_groups]
    return Lying(optimizer)


# --------------------------------------------------------------------------- red-team reviewer's findings
@wrong(T1, "graph_kept_alive")
def train_sums_loss_tensors(model, loader, loss_fn, optimizer):
    model.train()
    total, n = 0, 0
    for X, y in loader:
        loss = _five_steps(model, X, y, loss_fn, optimizer)
        total = total + loss * len(y)
        n += len(y)
    return (total / n).item()


@valid(EV)
def eval_returns_list(model, loader, loss_fn):  # `loss, acc = evaluate(...)` reads a list of two the same
    model.eval()
    tl, c, n = 0.0, 0, 0
    with torch.no_grad():
        for X, y in loader:
            z = model(X)
            tl += loss_fn(z, y).item() * len(y)
            c += (z.argmax(1) == y).sum().item()
            n += len(y)
    return [tl / n, c / n]


@wrong(AS, "mutated_input")
def acc_zeroes_inputs(model, loss_fn, optimizer, micro_batches):
    n = sum(len(y) for _, y in micro_batches)
    optimizer.zero_grad()
    for X, y in micro_batches:
        (loss_fn(model(X), y) * len(y) / n).backward()
        X.zero_()
    optimizer.step()


@wrong(AS, "changed_micro_batches")
def acc_pops_the_list(model, loss_fn, optimizer, micro_batches):
    n = sum(len(y) for _, y in micro_batches)
    optimizer.zero_grad()
    while micro_batches:
        X, y = micro_batches.pop()
        (loss_fn(model(X), y) * len(y) / n).backward()
    optimizer.step()


@wrong(T1, "reseeded_global_rng")
def train_reseeds_every_epoch(model, loader, loss_fn, optimizer):
    torch.manual_seed(0)
    model.train()
    total, n = 0.0, 0
    for X, y in loader:
        total += _five_steps(model, X, y, loss_fn, optimizer).item() * len(y)
        n += len(y)
    return total / n


# --------------------------------------------------------------------------- objects the caller keeps
# A review (2026-11-29) had these pass: the value was right, and the caller's loss or model was
# left changed for the rest of training.
@wrong(EV, "mutated_input")
def evaluate_sets_reduction(model, loader, loss_fn):
    model.eval()
    loss_fn.reduction = "sum"
    total, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for X, y in loader:
            logits = model(X)
            total += loss_fn(logits, y).item()
            correct += (logits.argmax(1) == y).sum().item()
            n += len(y)
    return total / n, correct / n


@wrong("05_training_loop.accumulated_step", "mutated_input")
def accumulate_sets_reduction(model, loss_fn, optimizer, micro_batches):
    n = sum(len(y) for _, y in micro_batches)
    optimizer.zero_grad()
    loss_fn.reduction = "sum"
    for X, y in micro_batches:
        (loss_fn(model(X), y) / n).backward()
    optimizer.step()


@wrong("05_training_loop.accumulated_step", "mutated_input")
def accumulate_in_eval_mode(model, loss_fn, optimizer, micro_batches):
    model.eval()
    n = sum(len(y) for _, y in micro_batches)
    optimizer.zero_grad()
    for X, y in micro_batches:
        (loss_fn(model(X), y) * len(y) / n).backward()
    optimizer.step()


# --------------------------------------------------------------------------- the red-team tests
(test_wrong_answer_is_rejected, test_valid_answer_is_accepted, test_cheat_is_rejected,
 test_every_exercise_has_its_red_team) = _tables.red_team_tests(LESSON)  # tests/lesson_kit.py


def test_hints_give_ideas_and_leave_the_code_to_the_solution():
    """Hints go nudge -> idea; only `solution()` shows code (issue 14). Code here: a backticked span with a
    call that has arguments, an index, an assignment or a loop (a bare name such as `.grad` is not)."""
    code = __import__("re").compile(r"`[^`]*(\([^)`]|\[|=| for )[^`]*`")
    for exercise_id in grading.exercises():
        if exercise_id.startswith("05_training_loop."):
            for hint in grading.exercise(exercise_id).hints:
                assert not code.search(hint), (exercise_id, hint)


# --------------------------------------------------------------------------- the notebook's puzzles (issue 26)
# Each exercise asks for a decision: the notebook hands over a buggy function, a target curve or
# a table of observations. These tests hold the notebook's material and the grader together: what
# the learner is shown is wrong in exactly the ways the grader names, and the table/curve the
# learner reads off is what the reference produces.
def _notebook_source(name: str) -> str:
    return notebook_source("05_training_loop", name)


def _define(source: str, name: str):
    return define(source, name, {"torch": torch, "nn": nn, "math": math})


def test_the_colleagues_epoch_has_the_three_bugs_the_text_promises_each_named_in_turn():
    """Exercise 1 is a bug hunt: the notebook's loop fails the check, and fixing one bug at a time names
    the next one, until the fixed loop passes."""
    buggy = _notebook_source("buggy_train_one_epoch")
    fixes = [  # (the mistake the check names, the fix of that bug)
        ("graph_kept_alive", [("total += loss * len(y)", "total += loss.item() * len(y)"),
                              ("return total.item() / n", "return total / n")]),
        ("forgot_train_mode", [("    total, n = 0.0, 0\n", "    model.train()\n    total, n = 0.0, 0\n")]),
        ("zero_grad_at_end", [("        optimizer.zero_grad()  # clean up for the next batch\n", "")]),
    ]
    source = buggy
    for mistake, replacements in fixes:
        res = check("train_one_epoch", _define(source.replace("buggy_", ""), "train_one_epoch"), seed=0)
        assert res.mistake == mistake, (mistake, res.text())
        for old, new in replacements:
            assert old in source, old
            source = source.replace(old, new)
    source = source.replace("        logits = model(X)\n", "        optimizer.zero_grad()\n        logits = model(X)\n")
    assert check("train_one_epoch", _define(source.replace("buggy_", ""), "train_one_epoch"), seed=1).passed


def test_the_naive_evaluate_has_the_three_problems_the_text_promises_each_named_in_turn():
    """Exercise 2 is a diagnosis: the notebook's naive loop fails the check, and fixing one cause at a time
    names the next one, until the fixed loop passes."""
    source = _notebook_source("naive_evaluate").replace("naive_", "")
    fixes = [
        ("forgot_eval", [("    losses, accuracies = [], []\n", "    model.eval()\n    losses, accuracies = [], []\n")]),
        ("forgot_no_grad", [("        logits = model(X)\n",
                             "        with torch.no_grad():\n            logits = model(X)\n")]),
        ("batch_mean_average", [
            ("losses.append(loss_fn(logits, y).item())", "losses.append(loss_fn(logits, y).item() * len(y))"),
            ("accuracies.append((logits.argmax(dim=1) == y).float().mean().item())",
             "accuracies.append((logits.argmax(dim=1) == y).sum().item())"),
            ("return sum(losses) / len(losses), sum(accuracies) / len(accuracies)",
             "n = len(loader.dataset)\n    return sum(losses) / n, sum(accuracies) / n")]),
    ]
    for mistake, replacements in fixes:
        res = check("evaluate", _define(source, "evaluate"), seed=0)
        assert res.mistake == mistake, (mistake, res.text())
        for old, new in replacements:
            assert old in source, old
            source = source.replace(old, new)
    assert check("evaluate", _define(source, "evaluate"), seed=1).passed


def _early_stopping_runs() -> list:
    """The (patience, losses) runs of the notebook's table for exercise 3 (the lesson prints them from the props)."""
    return [(patience, list(losses)) for patience, losses, *_ in lab.EARLY_STOPPING_RUNS]


def _early_stopping_run(stopper, losses):
    """Feed the losses to ``stopper.step``, each epoch's weights filled with its number; the epoch it stopped after."""
    model = nn.Linear(2, 1)
    for epoch, val_loss in enumerate(losses, start=1):
        with torch.no_grad():
            for p in model.parameters():
                p.fill_(epoch)
        if stopper.step(val_loss, model):
            return epoch
    return None


class _ComparesWithPreviousEpoch(EarlyStoppingWithClones):
    """Improvement measured against the epoch before, not the best so far."""

    def step(self, val_loss, model):
        self.best_loss, self.previous = getattr(self, "previous", float("inf")), val_loss
        return super().step(val_loss, model)


def test_the_early_stopping_table_tells_every_named_rule_apart():
    """Exercise 3 asks the learner to work out the rules from the notebook's four runs: every wrong rule the
    grader names (and comparing with the previous epoch) must make a different row of that table."""
    from course_utils.exercises.l05_training_loop import early_stopping as es

    run = _early_stopping_run

    def table(cls):
        rows = []
        for patience, losses in _early_stopping_runs():
            stopper = cls(patience=patience)
            rows.append((run(stopper, losses), int(stopper.best_state["weight"][0, 0])))
        return rows

    expected = table(es.EarlyStopping)
    assert expected == table(EarlyStoppingWithClones)  # a right answer written differently agrees
    for wrong in (es._StateNotCopied, es._CounterNotReset, es._CounterDecremented, es._StopsLate, es._TieImproves,
                  _ComparesWithPreviousEpoch):
        assert table(wrong) != expected, wrong.__name__


def test_the_logged_curves_tell_every_named_wrong_schedule_apart():
    """Exercise 4 asks the learner to read the schedule off the notebook's printed curves (4 decimals): every
    wrong shape the grader names must print a different number on one of them."""

    from course_utils.exercises.l05_training_loop import warmup_cosine as wc

    assert "lab.WARMUP_COSINE_LRS" in (SOLUTIONS / "05_training_loop.py").read_text()  # the curves the notebook prints
    curves = list(lab.WARMUP_COSINE_LRS)

    def printed(schedule):
        return [[f"{lr:.4f}" for lr in lab.scheduler_lrs(lambda opt, w=w, t=t: schedule(opt, w, t), t)]
                for w, t in curves]

    expected = printed(wc.warmup_cosine)
    assert expected[0][:5] == ["0.0250", "0.0500", "0.0750", "0.1000", "0.1000"]  # what the hints ask about
    for wrong in (wc._wc_from_zero, wc._wc_ignores_warmup, wc._wc_not_shifted):
        assert printed(wrong) != expected


def test_the_clipping_experiments_tell_every_named_wrong_rule_apart(capsys):
    """Exercise 5 asks the learner to work out clipping from the notebook's experiments with the built-in:
    every wrong rule the grader names must print a different line in one of them."""
    import ast
    import types

    from course_utils.exercises.l05_training_loop import clip_grad_norm as cg

    text = (SOLUTIONS / "05_training_loop.py").read_text()
    calls = [(ast.literal_eval(node.value.args[0]), ast.literal_eval(node.value.keywords[0].value))
             for node in ast.parse(text).body
             if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
             and getattr(node.value.func, "id", None) == "clip_experiment"]
    assert len(calls) >= 3
    source = _notebook_source("clip_experiment")

    def printed(clip):
        fake_nn = types.SimpleNamespace(utils=types.SimpleNamespace(
            clip_grad_norm_=lambda params, max_norm: torch.as_tensor(clip(params, max_norm))))
        namespace = {"torch": torch, "nn": fake_nn}
        exec(compile(source, "<notebook clip_experiment>", "exec"), namespace)
        capsys.readouterr()
        for grads, max_norm in calls:
            namespace["clip_experiment"](grads, max_norm=max_norm)
        return capsys.readouterr().out.splitlines()

    expected = printed(torch.nn.utils.clip_grad_norm_)
    assert printed(cg.clip_grad_norm) == expected  # the course's answer reproduces the built-in's lines
    for wrong in (functools.partial(cg._clip_with, per_parameter=True), functools.partial(cg._clip_with, always=True),
                  cg._clip_returns_after, functools.partial(cg._clip_with, norm=lambda gs: sum(g.norm() for g in gs))):
        assert printed(wrong) != expected


def test_unscaled_accumulation_is_off_as_the_notebook_says():
    """Exercise 6 asks why the unscaled sum is exactly twice the big batch's gradient for two halves and no
    multiple of it for an uneven split: both must hold for the splits the notebook shows."""
    import ast

    from course_utils.datasets import digits_split

    tree = ast.parse((SOLUTIONS / "05_training_loop.py").read_text())
    splits = next(ast.literal_eval(node.iter) for node in ast.walk(tree)
                  if isinstance(node, ast.For) and getattr(node.target, "id", None) == "sizes")
    data = digits_split()
    X, y = data.X_train[:64], data.y_train[:64]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))

    def grad(batches):
        model.zero_grad()
        for Xm, ym in batches:
            F.cross_entropy(model(Xm), ym).backward()
        return torch.cat([p.grad.flatten() for p in model.parameters()])

    big = grad([(X, y)])
    for sizes in splits:
        assert sum(sizes) == 64
        acc = grad(list(zip(X.split(sizes), y.split(sizes))))
        c = float(acc @ big / (big @ big))
        off = float((acc - c * big).norm() / acc.norm())
        if len(set(sizes)) == 1:
            assert math.isclose(c, len(sizes), rel_tol=1e-5) and off < 1e-5
        else:
            assert off > 0.01, (sizes, off)


def test_the_early_stopping_runs_the_lesson_shows_are_what_the_reference_does():
    from course_utils.answers.l05_training_loop import EarlyStopping

    for patience, losses, stopped, best_loss, kept in lab.EARLY_STOPPING_RUNS:
        stopper, model, when = EarlyStopping(patience=patience), nn.Linear(2, 1), None
        for epoch, val_loss in enumerate(losses, start=1):
            with torch.no_grad():
                for p in model.parameters():
                    p.fill_(epoch)  # the weights say which epoch they come from
            if stopper.step(val_loss, model):
                when = epoch
                break
        assert (when, stopper.best_loss, int(stopper.best_state["weight"][0, 0])) == (stopped, best_loss, kept)


def test_the_warmup_cosine_rates_the_lesson_shows_are_what_the_reference_gives():
    from course_utils.answers.l05_training_loop import warmup_cosine

    for (warmup, total), shown in lab.WARMUP_COSINE_LRS.items():
        lrs = lab.scheduler_lrs(lambda opt, w=warmup, t=total: warmup_cosine(opt, w, t), total)
        assert shown == tuple(round(lr, 6) for lr in lrs)


@pytest.mark.parametrize("name, answer", [("evaluate", evaluate_sets_reduction),
                                          ("accumulated_step", accumulate_sets_reduction),
                                          ("accumulated_step", accumulate_in_eval_mode)],
                         ids=lambda x: getattr(x, "__name__", x))
def test_the_message_names_the_callers_object_left_changed(name, answer):
    """Rejected with mutated_input in the red-team table above; here, the words name the object."""
    res = rejected(f"{LESSON}.{name}", answer, "mutated_input", seeds=[1])
    assert ("`loss_fn`" in res.message) if "reduction" in answer.__name__ else ("`model` in eval mode" in res.message)
