"""Lesson 07 (debugging and observability): the graders' own red team.

For every exercise: plausible wrong answers are rejected on every seed (with the mistake named
where the grader can tell), correct answers written differently pass, cheats are rejected; hooks
a learner leaves behind are reported and removed (on the case's model and torch's global module
hooks); checks leave the caller's RNG, grad mode and thread count alone; oracles hold each
reference against an independent computation across the case generator's domain.
"""

from __future__ import annotations

import glob
import math
import os

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules import module as torch_module

from course_utils import grading
from course_utils.exercises.l07_debugging import diagnose as diag_mod
from course_utils.exercises.l07_debugging import first_nonfinite as fnf_mod
from course_utils.exercises.l07_debugging import grad_norms as gn_mod
from course_utils.exercises.l07_debugging import read_scalars as rs_mod
from course_utils.grading import Rand

from lesson_kit import SOLUTIONS, Tables, oracle_cases  # noqa: E402

LESSON = "07_debugging"
FNF, OVERFIT, NORMS, SCALARS, DIAG = (f"{LESSON}.{n}" for n in (
    "first_nonfinite", "overfit_one_batch", "grad_norms", "read_scalars", "diagnose"))

_tables = Tables()
WRONG, VALID, CHEATS = _tables.WRONG, _tables.VALID, _tables.CHEATS
wrong, valid, cheat = _tables.wrong, _tables.valid, _tables.cheat


def _bad(t):
    return isinstance(t, torch.Tensor) and t.is_floating_point() and not bool(torch.isfinite(t).all())


def _outs(o):
    return list(o) if isinstance(o, (tuple, list)) else [o]


# =========================================================================== 1. first_nonfinite
@valid(FNF)
def fnf_global_hook(model, x):
    """torch's global module hook, names looked up by identity, removed in finally."""
    names = {id(m): n for n, m in model.named_modules()}
    found = []

    def hook(module, inputs, output):
        if not found and id(module) in names and any(_bad(t) for t in _outs(output)):
            found.append(names[id(module)])
    handle = torch_module.register_module_forward_hook(hook)
    try:
        model(x)
    finally:
        handle.remove()
    return found[0] if found else None


class _Stop(Exception):
    pass


@valid(FNF)
def fnf_stop_early(model, x):
    """Raise from the hook to stop at the first non-finite output."""
    handles = []
    for name, m in model.named_modules():
        def hook(mod, inp, out, name=name):
            if any(torch.isinf(t).any() or torch.isnan(t).any() for t in _outs(out) if isinstance(t, torch.Tensor)):
                raise _Stop(name)
        handles.append(m.register_forward_hook(hook))
    try:
        with torch.no_grad():
            model(x)
    except _Stop as stop:
        return stop.args[0]
    finally:
        for h in handles:
            h.remove()
    return None


@valid(FNF)
def fnf_with_kwargs_hook_and_grad(model, x):
    """`with_kwargs=True` hooks, autograd left on, an ordered dict of everything seen."""
    seen = {}

    def hook(mod, args, kwargs, out, name):
        seen.setdefault(name, any(_bad(t) for t in _outs(out)))  # returns None: the output stays

    handles = [m.register_forward_hook(lambda *a, n=n: hook(*a, n), with_kwargs=True) for n, m in model.named_modules()]
    try:
        model(x)
    finally:
        for h in handles:
            h.remove()
    return next((n for n, bad in seen.items() if bad), None)


@wrong(FNF)
def fnf_hook_returns_a_value(model, x):
    """A forward hook that returns something replaces the module's output with it."""
    seen = {}
    handles = [m.register_forward_hook(lambda mod, i, out, n=n: seen.setdefault(n, any(_bad(t) for t in _outs(out))))
               for n, m in model.named_modules()]
    try:
        model(x)
    finally:
        for h in handles:
            h.remove()
    return next((n for n, bad in seen.items() if bad), None)


@wrong(FNF, "nan_only")
def fnf_isnan(model, x):
    return fnf_mod._nan_only(model, x)


@wrong(FNF, "definition_order")
def fnf_definition_order(model, x):
    return fnf_mod._definition_order(model, x)


@wrong(FNF, "leaves_only")
def fnf_leaves(model, x):
    return fnf_mod._leaves_only(model, x)


@wrong(FNF, "hooks_left_behind")
def fnf_global_hook_not_removed(model, x):
    names = {id(m): n for n, m in model.named_modules()}
    found = []
    torch_module.register_module_forward_hook(lambda m, i, o: found.append(names[id(m)]) if not found and id(
        m) in names and any(_bad(t) for t in _outs(o)) else None)
    model(x)
    return found[0] if found else None


@wrong(FNF, "hooks_left_behind")
def fnf_pre_hooks_left(model, x):
    for m in model.modules():
        m.register_forward_pre_hook(lambda mod, inp: None)  # a leftover debugging hook
    return fnf_mod.first_nonfinite(model, x)


@wrong(FNF)
def fnf_input_check_only(model, x):
    """Checks the inputs each module receives: one module too late."""
    found = []
    handles = [m.register_forward_pre_hook(lambda mod, inp, n=n: found.append(n) if not found and any(
        _bad(t) for t in inp) else None) for n, m in model.named_modules()]
    try:
        model(x)
    finally:
        for h in handles:
            h.remove()
    return found[0] if found else None


@cheat(FNF)
def fnf_always_none(model, x):
    return None


@cheat(FNF)
def fnf_last_child(model, x):
    names = [n for n, _ in model.named_modules()]
    return names[-1]


def test_a_leftover_global_hook_is_removed_by_the_check():
    before = len(torch_module._global_forward_hooks)
    res = grading.check(FNF, fnf_global_hook_not_removed, seed=1)
    assert res.mistake == "hooks_left_behind", res.text()
    assert len(torch_module._global_forward_hooks) == before


def test_first_nonfinite_oracle_runs_layer_by_layer():
    """On the plain Sequential cases, running the layers one at a time (recursing into nested
    Sequentials) finds the same first module."""
    def walk(seq, x, prefix):
        for name, m in seq.named_children():
            full = prefix + name
            if isinstance(m, nn.Sequential):
                x, hit = walk(m, x, full + ".")
                if hit is not None:
                    return x, hit
                if _bad(x):
                    return x, full
            else:
                x = m(x)
                if any(_bad(t) for t in _outs(x)):
                    return x, full
        return x, None

    n = 0
    for where, case in oracle_cases(FNF, 150):
        model, x = case.args
        if type(model) is not nn.Sequential or any(isinstance(m, fnf_mod.WithAux) for m in model.modules()):
            continue
        out, hit = walk(model, x, "")
        want = hit if hit is not None else ("" if _bad(out) else None)
        assert fnf_mod.first_nonfinite(model, x) == want, where
        n += 1
    assert n > 100


def test_first_nonfinite_cases_cover_every_outcome():
    got = {fnf_mod.first_nonfinite(*c.args) for c in fnf_mod.EDGE_CASES}
    assert None in got and "" in got and any(g and "." in g for g in got)


@wrong(FNF, "hooks_left_behind")
def fnf_hooks_removed_without_finally(model, x):
    """Red team: removal skipped when the forward raises; no case raised."""
    found = []
    hs = [m.register_forward_hook(lambda mod, i, o, n=n: found.append(n) if any(
        isinstance(t, torch.Tensor) and not bool(torch.isfinite(t).all()) for t in _outs(o)) else None)
        for n, m in model.named_modules()]
    with torch.no_grad():
        model(x)
    for h in hs:
        h.remove()
    return found[0] if found else None


@wrong(FNF, "forward_replaced")
def fnf_replaces_forward(model, x):
    return fnf_mod._replaces_forward(model, x)


@wrong(FNF, "not_a_name")
def fnf_returns_the_module(model, x):
    name = fnf_mod.first_nonfinite(model, x)
    return None if name is None else dict(model.named_modules())[name]


@wrong(FNF, "wrong_module")
def fnf_none_on_nan_input(model, x):
    """Returns None (legal) where a module is wanted: the message must not say 'forgot return'."""
    return fnf_mod.first_nonfinite(model, torch.nan_to_num(x))


def test_first_nonfinite_none_is_not_called_a_missing_return():
    res = grading.check(FNF, fnf_none_on_nan_input)
    assert "return` statement" not in res.message and "None (every output finite)" in res.message, res.message


# =========================================================================== 2. overfit_one_batch
def _loop(model, X, y, steps, optimizer, loss_fn=F.cross_entropy, record=lambda loss: loss.item()):
    losses = []
    for _ in range(steps):
        loss = loss_fn(model(X), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(record(loss))
    return losses


@valid(OVERFIT)
def overfit_adamw_module_loss(model, X, y, steps):
    return _loop(model, X, y, steps, torch.optim.AdamW(model.parameters(), lr=2e-2, weight_decay=0.0),
                 nn.CrossEntropyLoss(), record=float)


@valid(OVERFIT)
def overfit_sgd_momentum(model, X, y, steps):
    return _loop(model, X, y, steps, torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9))


@valid(OVERFIT)
def overfit_tuple_detach_item(model, X, y, steps):
    opt = torch.optim.Adam(model.parameters(), lr=3e-2)
    return tuple(_loop(model, X, y, steps, opt, record=lambda loss: loss.detach().item()))


@wrong(OVERFIT, "not_overfit")
def overfit_sgd_default_lr(model, X, y, steps):
    return _loop(model, X, y, steps, torch.optim.SGD(model.parameters(), lr=1e-2))


@wrong(OVERFIT, "first_loss_not_initial")
def overfit_records_after(model, X, y, steps):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        F.cross_entropy(model(X), y).backward()
        opt.step()
        with torch.no_grad():
            losses.append(F.cross_entropy(model(X), y).item())
    return losses


@wrong(OVERFIT, "tensor_losses")
def overfit_tensors(model, X, y, steps):
    return _loop(model, X, y, steps, torch.optim.Adam(model.parameters(), lr=1e-2), record=lambda loss: loss)


@wrong(OVERFIT, "not_trained")
def overfit_optimizer_on_a_copy(model, X, y, steps):
    import copy

    twin = copy.deepcopy(model)
    opt = torch.optim.Adam(twin.parameters(), lr=1e-2)
    return [F.cross_entropy(model(X), y).item()] + _loop(twin, X, y, steps - 1, opt)


@wrong(OVERFIT, "softmax_before_loss")
def overfit_softmax(model, X, y, steps):
    return _loop(model, X, y, steps, torch.optim.Adam(model.parameters(), lr=1e-2),
                 lambda out, t: F.cross_entropy(out.softmax(1), t))


@wrong(OVERFIT, "wrong_length")
def overfit_records_initial_too(model, X, y, steps):
    with torch.no_grad():
        first = F.cross_entropy(model(X), y).item()
    return [first] + _loop(model, X, y, steps, torch.optim.Adam(model.parameters(), lr=1e-2))


@wrong(OVERFIT, "sum_not_mean")
def overfit_sum(model, X, y, steps):
    return _loop(model, X, y, steps, torch.optim.Adam(model.parameters(), lr=1e-2),
                 lambda out, t: F.cross_entropy(out, t, reduction="sum"))


@cheat(OVERFIT)
def overfit_fake_decay(model, X, y, steps):
    with torch.no_grad():
        first = F.cross_entropy(model(X), y).item()
    return [first * 0.9 ** k for k in range(steps)]


@cheat(OVERFIT)
def overfit_one_step_then_zeros(model, X, y, steps):
    return _loop(model, X, y, 1, torch.optim.Adam(model.parameters(), lr=1e-2)) + [0.0] * (steps - 1)


@wrong(OVERFIT, "stale_gradients")
def overfit_no_zero_grad_plain_sgd(model, X, y, steps):
    """Red team: without zero_grad, plain SGD lr=0.02 still reached < 0.05 (grads acted as momentum)."""
    opt = torch.optim.SGD(model.parameters(), lr=0.02)
    out = []
    for _ in range(steps):
        loss = F.cross_entropy(model(X), y)
        loss.backward()
        opt.step()
        out.append(loss.item())
    return out


@wrong(OVERFIT, "steps_not_losses")
def overfit_two_steps_per_loss(model, X, y, steps):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(model(X), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        opt.zero_grad()
        F.cross_entropy(model(X), y).backward()
        opt.step()
        losses.append(loss.item())
    return losses


@wrong(OVERFIT, "steps_not_losses")
def overfit_steps_twice_per_loss(model, X, y, steps):  # it was named stale_gradients (review, 2026-11-29)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(model(X), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        opt.step()
        losses.append(loss.item())
    return losses


@wrong(OVERFIT, "not_a_list")
def overfit_one_tensor_of_losses(model, X, y, steps):  # no graph in it: not "tensor_losses"
    return torch.tensor(_loop(model, X, y, steps, torch.optim.Adam(model.parameters(), lr=1e-2)))


@wrong(OVERFIT, "steps_not_losses")
def overfit_trains_on_after_recording(model, X, y, steps):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = _loop(model, X, y, steps, opt)
    _loop(model, X, y, 100, opt)
    return losses


@wrong(OVERFIT, "model_state_changed")
def overfit_leaves_eval_and_frozen(model, X, y, steps):
    losses = _loop(model, X, y, steps, torch.optim.Adam(model.parameters(), lr=1e-2))
    model.eval()
    model.requires_grad_(False)
    return losses


@wrong(OVERFIT, "hooks_left_behind")
def overfit_leaves_a_hook(model, X, y, steps):
    losses = _loop(model, X, y, steps, torch.optim.Adam(model.parameters(), lr=1e-2))
    model.register_forward_hook(lambda *a: None)
    return losses


@wrong(OVERFIT, "not_floats")
def overfit_numpy_scalars(model, X, y, steps):
    return _loop(model, X, y, steps, torch.optim.Adam(model.parameters(), lr=1e-2),
                 record=lambda loss: loss.detach().numpy())


@valid(OVERFIT)
def overfit_clipped_gradients(model, X, y, steps):
    """Clipping shrinks the gradient (same direction): not a stale gradient."""
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(X), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        opt.step()
        out.append(loss.item())
    return out


@wrong(OVERFIT, "updated_outside_step")  # review: an extra update after each step passed
def overfit_extra_update_after_step(model, X, y, steps):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    out = []
    for _ in range(steps):
        loss = F.cross_entropy(model(X), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            for p in model.parameters():
                p -= 1e-3 * p.grad
        out.append(loss.item())
    return out


@wrong(OVERFIT, "updated_outside_step")
def overfit_extra_update_after_the_last_step_only(model, X, y, steps):
    out = grading.reference(OVERFIT)(model, X, y, steps)
    with torch.no_grad():
        for p in model.parameters():
            p -= 1e-3 * p.grad
    return out


@valid(OVERFIT)
def overfit_manual_update_zero_after(model, X, y, steps):
    """No torch optimizer at all, grads cleared after the update."""
    out = []
    for _ in range(steps):
        loss = F.cross_entropy(model(X), y)
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.5 * p.grad
                p.grad = None
        out.append(loss.item())
    return out


@valid(OVERFIT)
def overfit_plain_sgd_rebuilt_every_step(model, X, y, steps):
    """Plain SGD keeps no state: building it anew each step changes nothing."""
    losses = []
    for _ in range(steps):
        losses += _loop(model, X, y, 1, torch.optim.SGD(model.parameters(), lr=0.5))
    return losses


@valid(OVERFIT)
def overfit_adam_rebuilt_from_its_state(model, X, y, steps):
    """A new Adam every step that loads the old one's state_dict continues exactly."""
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        losses += _loop(model, X, y, 1, opt)
        state, opt = opt.state_dict(), torch.optim.Adam(model.parameters(), lr=1e-2)
        opt.load_state_dict(state)
    return losses


@wrong(OVERFIT, "optimizer_recreated")
def overfit_momentum_sgd_rebuilt_every_step(model, X, y, steps):
    """Red team: SGD with momentum built inside the loop reached the target and passed."""
    losses = []
    for _ in range(steps):
        losses += _loop(model, X, y, 1, torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9))
    return losses


@wrong(OVERFIT, "trained_in_eval_mode")
def overfit_in_eval_mode_then_back(model, X, y, steps):
    """Red team: eval mode during training, train mode restored before returning, passed."""
    model.eval()
    losses = _loop(model, X, y, steps, torch.optim.Adam(model.parameters(), lr=1e-2))
    model.train()
    return losses


@wrong(OVERFIT, "trained_in_eval_mode")
def overfit_left_in_eval_throughout(model, X, y, steps):
    """Eval mode during training and left on: the training mode is the mistake named."""
    model.eval()
    return _loop(model, X, y, steps, torch.optim.Adam(model.parameters(), lr=1e-2))


@wrong(OVERFIT, "losses_not_real")
def overfit_fakes_the_middle(model, X, y, steps):
    """Red team (review 2026-11-29): real first and last losses, invented ones between, passed."""
    real = _loop(model, X, y, steps, torch.optim.Adam(model.parameters(), lr=1e-2))
    return [real[0]] + [real[0] + (real[-1] - real[0]) * k / (steps - 1) for k in range(1, steps - 1)] + [real[-1]]


@wrong(OVERFIT, "losses_not_real")
def overfit_last_loss_zeroed(model, X, y, steps):
    """Red team (review 2026-11-29): the real losses with the last replaced by 0.0 passed."""
    return _loop(model, X, y, steps, torch.optim.Adam(model.parameters(), lr=1e-2))[:-1] + [0.0]


@wrong(OVERFIT, "optimizer_recreated")
def overfit_adam_state_cleared(model, X, y, steps):
    """Red team (review 2026-11-29): one Adam whose state is cleared every step passed."""
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        opt.state.clear()
        losses += _loop(model, X, y, 1, opt)
    return losses


@wrong(OVERFIT, "stale_gradients")
def overfit_zero_grad_on_the_old_schedule(model, X, y, steps):
    """Red team (review 2026-11-29): zero_grad only on the steps the watch used to sample passed."""
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for t in range(1, steps + 1):
        loss = F.cross_entropy(model(X), y)
        if t <= 5 or t % 10 == 0:
            opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


# =========================================================================== 3. grad_norms
@valid(NORMS)
def norms_by_parameter_names(model):
    groups = {}
    for name, p in model.named_parameters():
        if p.grad is not None:
            groups.setdefault(name.rpartition(".")[0], []).append(p.grad)
    return {k: torch.nn.utils.get_total_norm(v).item() for k, v in groups.items()}


@valid(NORMS)
def norms_vector_norm_of_cat(model):
    out = {}
    for name, m in model.named_modules():
        gs = [p.grad.flatten() for p in m.parameters(recurse=False) if p.grad is not None]
        if gs:
            out[name] = float(torch.linalg.vector_norm(torch.cat(gs)))
    return out


@valid(NORMS)
def norms_hypot_of_norms(model):
    out = {}
    for name, m in model.named_modules():
        gs = [p.grad for p in m.parameters(recurse=False) if p.grad is not None]
        if gs:
            out[name] = math.hypot(*(g.norm().item() for g in gs))
    return out


@wrong(NORMS, "recursive")
def norms_recursive(model):
    return gn_mod._recursive(model)


@wrong(NORMS, "summed_norms")
def norms_summed(model):
    return gn_mod._summed_norms(model)


@wrong(NORMS, "none_as_zero")
def norms_zeros_for_frozen(model):
    return gn_mod._none_as_zero(model)


@wrong(NORMS, "changed_grads")
def norms_then_clip(model):
    out = gn_mod.grad_norms(model)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1e-3)
    return out


@wrong(NORMS, "per_parameter")
def norms_per_parameter(model):
    return gn_mod._per_parameter(model)


@wrong(NORMS)
def norms_mean_abs(model):
    return {n: sum(float(p.grad.abs().mean()) for p in m.parameters(recurse=False) if p.grad is not None)
            for n, m in model.named_modules() if any(p.grad is not None for p in m.parameters(recurse=False))}


@wrong(NORMS)
def norms_tensors(model):
    return {n: torch.sqrt(sum((p.grad ** 2).sum() for p in m.parameters(recurse=False) if p.grad is not None))
            for n, m in model.named_modules() if any(p.grad is not None for p in m.parameters(recurse=False))}


@cheat(NORMS)
def norms_empty(model):
    return {}


@cheat(NORMS)
def norms_ones(model):
    return {n: 1.0 for n, m in model.named_modules() if any(p.grad is not None for p in m.parameters(recurse=False))}


def test_grad_norms_oracle_matches_get_total_norm():
    for where, case in oracle_cases(NORMS, 100):
        (model,) = case.args
        for n, p in model.named_parameters():
            g = case.kwargs["grads"][n]
            p.grad = None if g is None else g.clone()
        got = gn_mod.grad_norms(model)
        for name, m in model.named_modules():
            gs = [p.grad for p in m.parameters(recurse=False) if p.grad is not None]
            if gs:
                assert math.isclose(got.pop(name), torch.nn.utils.get_total_norm(gs).item(), rel_tol=1e-5), where
        assert got == {}, where


def test_grad_norms_cases_have_frozen_and_unused_parameters():
    cases = [c for _, c in oracle_cases(NORMS, 60)]
    assert any(v is None for c in cases for v in c.kwargs["grads"].values())
    assert any(all(v is None for v in c.kwargs["grads"].values()) for c in cases)


@cheat(NORMS)
def norms_drops_zero_norms(model):
    """Red team: a dead layer (gradient exactly 0) must be reported as 0.0, not left out."""
    return {k: v for k, v in gn_mod.grad_norms(model).items() if v > 0}


# =========================================================================== 4. read_scalars
def _event_files_reader(logdir, tag):
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.util import tensor_util

    out = {}
    for path in sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*"))):
        for event in EventFileLoader(path).Load():
            for v in event.summary.value:
                if v.tag == tag:
                    value = v.simple_value if v.HasField("simple_value") else float(tensor_util.make_ndarray(v.tensor))
                    out[event.step] = value
    return out


@valid(SCALARS)
def scalars_event_file_loader(logdir, tag):
    return _event_files_reader(logdir, tag)


@valid(SCALARS)
def scalars_big_guidance_and_try(logdir, tag):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(logdir, size_guidance={"scalars": 1_000_000})
    acc.Reload()
    try:
        events = acc.Scalars(tag)
    except KeyError:
        return {}
    result = {}
    for e in events:
        result[int(e.step)] = float(e.value)
    return result


@valid(SCALARS)
def scalars_multiplexer(logdir, tag):
    from tensorboard.backend.event_processing import event_multiplexer

    mux = event_multiplexer.EventMultiplexer(size_guidance={"scalars": 0})
    mux.AddRunsFromDirectory(logdir)
    mux.Reload()
    out = {}
    for run in mux.Runs():
        if tag in mux.Runs()[run].get("scalars", []):
            out.update({e.step: e.value for e in mux.Scalars(run, tag)})
    return out


@wrong(SCALARS, "downsampled")
def scalars_default(logdir, tag):
    return rs_mod._default_guidance(logdir, tag)


@wrong(SCALARS, "first_wins")
def scalars_first(logdir, tag):
    return rs_mod._first_wins(logdir, tag)


@wrong(SCALARS, "missing_tag")
def scalars_raises(logdir, tag):
    return rs_mod._raises_on_missing(logdir, tag)


@wrong(SCALARS, "list_not_dict")
def scalars_pairs(logdir, tag):
    return rs_mod._pairs(logdir, tag)


@wrong(SCALARS, "wall_time")
def scalars_wall(logdir, tag):
    return rs_mod._wall_time(logdir, tag)


@wrong(SCALARS)
def scalars_sorted_by_value(logdir, tag):
    """Overwrites a repeated step with the larger value instead of the later one."""
    out = {}
    for step, value in ((e.step, e.value) for e in _all_events(logdir, tag)):
        out[step] = max(value, out.get(step, -math.inf))
    return out


def _all_events(logdir, tag):
    acc = rs_mod._load(logdir, size_guidance={"scalars": 0})
    return acc.Scalars(tag) if tag in acc.Tags()["scalars"] else []


@cheat(SCALARS)
def scalars_empty(logdir, tag):
    return {}


@cheat(SCALARS)
def scalars_every_tag(logdir, tag):
    """Ignores the tag: all scalars of the directory."""
    acc = rs_mod._load(logdir, size_guidance={"scalars": 0})
    return {e.step: e.value for t in acc.Tags()["scalars"] for e in acc.Scalars(t)}


def test_read_scalars_oracle_matches_the_writes():
    """The reference reads back exactly what was written: the last value per step, float32-rounded."""
    for where, case in oracle_cases(SCALARS, 25):
        log, tag = case.args
        want = {}
        for t, step, value in log.scalars:
            if t == tag:
                want[step] = float(torch.tensor(value, dtype=torch.float32))
        assert rs_mod.read_scalars(log.path(), tag) == want, where


def test_read_scalars_cases_include_repeats_missing_tags_and_a_long_run():
    cases = [c for _, c in oracle_cases(SCALARS, 80)]
    assert any(len({s for t, s, _ in c.args[0].scalars if t == c.args[1]})
               < sum(t == c.args[1] for t, _, _ in c.args[0].scalars) for c in cases)
    assert any(c.args[1] not in {t for t, _, _ in c.args[0].scalars} for c in cases)
    assert max(len(c.args[0].scalars) for c in cases) > 10_000


@cheat(SCALARS)
def scalars_first_event_file_only(logdir, tag):
    """Red team: a resumed run (a second SummaryWriter) writes a second file; reading one misses it."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    out = {}
    path = sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*")))[0]
    for ev in EventFileLoader(path).Load():
        for v in ev.summary.value:
            if v.tag == tag and v.HasField("simple_value"):
                out[ev.step] = v.simple_value
    return out


# =========================================================================== 5. diagnose
def _rules(train, val, flat=0.9, bug=0.9, rise=1.2, grow=1.0):
    if any(not math.isfinite(v) for v in train) or train[-1] > grow * train[0]:
        return "diverging"
    if train[-1] > flat * train[0]:
        return "not_learning"
    if min(val) > bug * val[0]:
        return "data_bug"
    return "overfitting" if val[-1] > rise * min(val) else "healthy"


@valid(DIAG)
def diag_loose_margins(train, val):
    return _rules(train, val, flat=0.8, bug=0.8, rise=1.5, grow=1.5)


@valid(DIAG)
def diag_tight_margins(train, val):
    return _rules(train, val, flat=0.97, bug=0.97, rise=1.05)


@valid(DIAG)
def diag_by_argmin_and_trend(train, val):
    import numpy as np

    t, v = np.asarray(train, dtype=float), np.asarray(val, dtype=float)
    if not np.isfinite(t).all() or t[-1] > t[0]:
        return "diverging"
    if t[-1] > 0.95 * t[0]:
        return "not_learning"
    best = int(v.argmin())
    if v[best] > 0.9 * v[0]:
        return "data_bug"
    return "overfitting" if best < len(v) - 1 and v[-1] > 1.1 * v[best] else "healthy"


@wrong(DIAG, "nan_unchecked")
def diag_no_nan_check(train, val):
    return diag_mod._rules(train, val, check_finite=False)


@wrong(DIAG, "gap_is_overfitting")
def diag_gap(train, val):
    return diag_mod._rules(train, val, gap=True)


@wrong(DIAG, "data_bug_as_overfitting")
def diag_no_data_bug(train, val):
    return diag_mod._rules(train, val, data_bug=False)


@wrong(DIAG, "flat_as_data_bug")
def diag_flat_late(train, val):
    return diag_mod._rules(train, val, flat_first=False)


@wrong(DIAG, "rising_not_diverging")
def diag_only_nan(train, val):
    return diag_mod._rules(train, val, rising=False)


@wrong(DIAG)
def diag_val_against_start(train, val):
    """Overfitting as "val ends above where it started": misses a U that ends below its start."""
    if any(not math.isfinite(v) for v in train) or train[-1] > train[0]:
        return "diverging"
    if train[-1] > 0.9 * train[0]:
        return "not_learning"
    if min(val) > 0.9 * val[0]:
        return "data_bug"
    return "overfitting" if val[-1] > val[0] else "healthy"


@wrong(DIAG, "no_margin_overfitting")
def diag_any_rise_after_the_minimum(train, val):
    """Red team: healthy validation curves were monotone, so 'any uptick = overfitting' passed."""
    rule = _rules(train, val)
    if rule in ("diverging", "not_learning", "data_bug"):
        return rule
    return "overfitting" if val[-1] > min(val) else "healthy"


@cheat(DIAG)
def diag_last_epochs_trend(train, val):
    rule = _rules(train, val)
    if rule in ("diverging", "not_learning", "data_bug"):
        return rule
    return "overfitting" if val[-1] > val[-4] else "healthy"


@wrong(DIAG, "not_a_kind")
def diag_capitalised(train, val):
    return diag_mod.diagnose(train, val).capitalize()


def test_diagnose_wrong_label_says_what_was_returned_and_what_the_curves_show():
    res = grading.check(DIAG, lambda t, v: "healthy" if diag_mod.diagnose(t, v) == "diverging" else "diverging")
    assert res.mistake == "wrong_kind" and "You said '" in res.message and "validation" in res.message, res.message


@wrong(OVERFIT, "stale_gradients")
def overfit_sgd_closure_without_zero_grad(model, X, y, steps):
    """Red team (issue 27a): step(closure) whose closure never zeroes the gradients passed."""
    opt = torch.optim.SGD(model.parameters(), lr=0.02)
    losses = []
    for _ in range(steps):
        def closure():
            loss = F.cross_entropy(model(X), y)
            loss.backward()
            return loss
        losses.append(opt.step(closure).item())
    return losses


@valid(OVERFIT)
def overfit_lbfgs_closure(model, X, y, steps):
    """LBFGS calls the closure several times a step; zero_grad inside it is right."""
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4, history_size=10)
    losses = []

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(model(X), y)
        loss.backward()
        return loss
    for _ in range(steps):
        losses.append(opt.step(closure).item())
    return losses


@wrong(OVERFIT, "trained_in_eval_mode")
def overfit_eval_forward_train_before_step(model, X, y, steps):
    """Red team (issue 27b): forward and backward in eval mode, train() just before step(), passed."""
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        model.eval()
        loss = F.cross_entropy(model(X), y)
        opt.zero_grad()
        loss.backward()
        model.train()
        opt.step()
        losses.append(loss.item())
    return losses


@wrong(OVERFIT, "mutated_input")
def overfit_overwrites_labels(model, X, y, steps):
    """Red team (issue 27d): labels overwritten in place were named losses_not_real."""
    y[:] = 0
    return _loop(model, X, y, steps, torch.optim.Adam(model.parameters(), lr=1e-2))


@wrong(OVERFIT, "not_plain_cross_entropy")
def overfit_label_smoothing(model, X, y, steps):
    """Red team (issue 27e): label smoothing was named first_loss_not_initial."""
    return _loop(model, X, y, steps, torch.optim.Adam(model.parameters(), lr=1e-2),
                 lambda out, t: F.cross_entropy(out, t, label_smoothing=0.1))


# The notebook's first attempt (solutions/07_debugging.py, not graded): the fixed loop with four bugs
# planted. Each bug alone, planted into the fixed loop, is a mistake the grader names.
OVERFIT_FIXED = """def overfit_one_batch(model, X, y, steps):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(model(X), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
"""
OVERFIT_BUGS = {  # mistake -> (the fixed loop's text, the first attempt's)
    "optimizer_recreated": ("    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)\n    losses = []\n"
                            "    for _ in range(steps):\n",
                            "    losses = []\n    for _ in range(steps):\n"
                            "        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)\n"),
    "softmax_before_loss": ("F.cross_entropy(model(X), y)", "F.cross_entropy(F.softmax(model(X), dim=1), y)"),
    "stale_gradients": ("        optimizer.zero_grad()\n", ""),
    "tensor_losses": ("losses.append(loss.item())", "losses.append(loss)"),
}


def _plant(bugs):
    src = OVERFIT_FIXED
    for bug in bugs:
        old, new = OVERFIT_BUGS[bug]
        assert src.count(old) == 1, bug
        src = src.replace(old, new)
    return src


def test_overfit_first_attempt_is_the_fixed_loop_with_the_planted_bugs():
    with open(os.path.join(os.path.dirname(__file__), "..", "solutions", "07_debugging.py")) as f:
        notebook = f.read()
    v1 = _plant(OVERFIT_BUGS).replace("def overfit_one_batch(", "def overfit_one_batch_v1(")
    assert "\n# %%\n" + v1 + "\n\n# %% [markdown]" in notebook


@pytest.mark.parametrize("bug", sorted(OVERFIT_BUGS))
def test_overfit_each_bug_of_the_first_attempt_alone_is_named(bug):
    scope = {"torch": torch, "F": F}
    exec(_plant([bug]), scope)
    res = grading.check(OVERFIT, scope["overfit_one_batch"], seed=3)
    assert not res.passed and res.mistake == bug, res.text()


def test_overfit_the_fixed_loop_passes():
    scope = {"torch": torch, "F": F}
    exec(OVERFIT_FIXED, scope)
    assert grading.check(OVERFIT, scope["overfit_one_batch"], seed=3).passed


@cheat(DIAG)
def diag_always_healthy(train, val):
    return "healthy"


@cheat(DIAG)
def diag_by_length(train, val):
    return diag_mod.KINDS[len(train) % 5]


def test_diagnose_generated_curves_are_what_they_claim_under_any_sensible_thresholds():
    """Every generated curve is classified as its kind by the reference and by rules with looser
    and tighter margins: no case sits near a boundary."""
    rules = [dict(), dict(flat=0.8, bug=0.8, rise=1.5, grow=1.5), dict(flat=0.97, bug=0.97, rise=1.05)]
    for seed in range(1500):
        r = Rand(seed)
        kind = r.choice(diag_mod.KINDS)
        train, val = diag_mod._curves(r, kind, r.integer(8, 40))
        assert diag_mod.diagnose(train, val) == kind, seed
        for kw in rules:
            assert _rules(train, val, **kw) == kind, (seed, kw)


# =========================================================================== the red-team tests
(test_wrong_answer_is_rejected, test_valid_answer_is_accepted, test_cheat_is_rejected,
 test_every_exercise_has_its_red_team) = _tables.red_team_tests(LESSON)  # tests/lesson_kit.py


@pytest.mark.parametrize("exercise_id", [FNF, NORMS, SCALARS, DIAG, OVERFIT])
def test_checks_leave_caller_state_alone(exercise_id):
    """From inside `no_grad`, with a seeded RNG and a model in eval mode: all as they were."""
    watched = nn.Sequential(nn.Linear(2, 2), nn.Dropout()).eval()
    torch.manual_seed(123)
    state = torch.get_rng_state()
    threads = torch.get_num_threads()
    hooks_before = {k: len(getattr(torch_module, k)) for k in ("_global_forward_hooks", "_global_forward_pre_hooks")}
    with torch.no_grad():
        res = grading.check(exercise_id, grading.reference(exercise_id), seed=5)
        assert not torch.is_grad_enabled()
    assert res.passed, res.text()
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.get_num_threads() == threads
    assert not watched.training
    assert {k: len(getattr(torch_module, k)) for k in hooks_before} == hooks_before


# --------------------------------------------------------------------------- the notebook's incident (issue 26)
def _incident():
    """The saved run of exercise 1, built from the notebook's own classes and seed."""
    import ast

    text = (SOLUTIONS / f"{LESSON}.py").read_text()
    namespace: dict = {"torch": torch, "nn": nn}
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name in ("Log", "Block"):
            exec(compile(ast.get_source_segment(text, node), "<notebook>", "exec"), namespace)
    torch.manual_seed(7)
    model = nn.Sequential(nn.Linear(4, 8), namespace["Block"](8), nn.Linear(8, 3))
    return model, torch.randn(16, 4)


def test_the_incident_blames_the_log_and_each_wrong_first_blames_another_module():
    """The notebook says the answer names '1.log' on the saved run, the model listing first and isnan blaming '2'."""
    with torch.random.fork_rng():
        model, batch = _incident()
    assert "torch.manual_seed(7)\nincident = nn.Sequential(nn.Linear(4, 8), Block(8), nn.Linear(8, 3))" in (
        SOLUTIONS / f"{LESSON}.py").read_text()
    assert not torch.isfinite(model(batch)).all()
    assert fnf_mod.first_nonfinite(model, batch) == "1.log"
    assert [n for n, _ in model.named_modules()].index("1.log") < [n for n, _ in model.named_modules()].index("1.gate")
    assert fnf_mod._definition_order(model, batch) == "" and fnf_mod._last(model, batch) == ""
    assert fnf_mod._nan_only(model, batch) == "2"


def test_first_nonfinite_hints_climb_from_a_question_and_hold_no_code():
    import re

    hints = grading.exercise(f"{LESSON}.first_nonfinite").hints
    assert hints[0].rstrip().endswith("?")
    for hint in hints:
        assert not re.search(r"`|\w\(|\.\w+\(|\s=\s", hint), hint


def test_read_scalars_hints_climb_from_a_question_and_hold_no_code():
    import re

    hints = grading.exercise(f"{LESSON}.read_scalars").hints
    assert hints[0].rstrip().endswith("?")
    for hint in hints:
        assert not re.search(r"`|\w\(|\.\w+\(|\s=\s", hint), hint


def test_the_resumed_run_the_notebook_shows_logs_steps_5_to_7_twice_and_the_reference_keeps_the_resumed_values():
    src = (SOLUTIONS / f"{LESSON}.py").read_text()
    assert "for step in range(8):" in src and "for step in range(5, 10):" in src
    log = rs_mod.Log(tuple(("loss", s, 1.0 / (s + 1)) for s in range(8))
                     + tuple(("loss", s, 0.6 - 0.02 * s) for s in range(5, 10)), resume_at=8)
    got = rs_mod.read_scalars(log.path(), "loss")
    assert sorted(got) == list(range(10)) and got[6] == pytest.approx(0.48) and got[4] == pytest.approx(0.2)
    assert rs_mod._first_wins(log.path(), "loss")[6] == pytest.approx(1 / 7)
    assert rs_mod.read_scalars(log.path(), "loss/test") == {}
