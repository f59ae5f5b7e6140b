"""Lesson 05 (training loop): what the generic grader tests cannot see.

- the probes (stale gradients, mode/grad hooks, uneven last batches) name the right mistake,
  and reasonable alternative loops pass;
- checks leave the caller's thread count alone;
- the course's training functions and the lesson's claims (≥ 97 % on the digits, memory kept
  by stored loss tensors) hold.
"""

from __future__ import annotations

import copy

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from course_utils import grading  # noqa: E402
from course_utils.lesson_props import l05_training_lab as lab  # noqa: E402


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
        with torch.no_grad():  # an extra forward for a running accuracy is harmless
            _ = (model(X).argmax(1) == y).float().mean()
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
