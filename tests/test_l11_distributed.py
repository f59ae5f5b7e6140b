"""Lesson 10 (GPU, AMP, DDP), every test of its own in one file: the device and sharding helpers,
the claims the lesson makes (DistributedSampler's rule, DDP's averaged gradients equal the
big-batch gradient, bf16 loss within bf16 tolerance of fp32), correct answers written differently
from the reference, the behavioural diagnoses the generic tests cannot see; then the adversarial
review, the red team (wrong answers, valid unusual answers, cheats) and the oracles (issue 11).
The contract tests shared by every exercise are in tests/test_exercises.py."""

from __future__ import annotations

import collections
import copy
import functools
import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.checkpoint import checkpoint, checkpoint_sequential  # noqa: E402
from torch.utils.data import DistributedSampler  # noqa: E402

from course_utils import grading  # noqa: E402
from course_utils.lesson_props import l10_devices as devices  # noqa: E402
from course_utils.lesson_props.l10_distributed import plot_shards, shard_assignment  # noqa: E402
from course_utils.exercises.l10_gpu_amp_ddp import amp_train_step as M_AMP  # noqa: E402
from course_utils.exercises.l10_gpu_amp_ddp import checkpointed_forward as M_CF  # noqa: E402
from course_utils.exercises.l10_gpu_amp_ddp import data_parallel_grads as M_DP  # noqa: E402
from course_utils.exercises.l10_gpu_amp_ddp import shard_indices as M_SH  # noqa: E402
from course_utils.exercises.l10_gpu_amp_ddp import to_device as M_TD  # noqa: E402
from course_utils.grading import Rand  # noqa: E402

from grading_asserts import accepted, rejected  # noqa: E402 (tests/ is on sys.path)
from lesson_kit import Tables, fixed_and_random_cases  # noqa: E402
from grading_asserts import check as check_id  # noqa: E402

LESSON = "10_gpu_amp_ddp"


def check(name, answer, seed=7, n_random=None):
    return grading.check(f"{LESSON}.{name}", answer, seed=seed, n_random=n_random)


# --------------------------------------------------------------------------- devices
def test_pick_device_follows_availability(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert devices.pick_device() == torch.device("cpu")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert devices.pick_device() == torch.device("mps")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert devices.pick_device() == torch.device("cuda")


def test_requires_gpu_skips_with_a_message_and_runs_with_a_gpu(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert devices.requires_gpu("memory statistics") is False
    out = capsys.readouterr().out
    assert "[GPU only] skipped" in out and "memory statistics" in out and "CUDA" in out
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert devices.requires_gpu("memory statistics") is True
    assert capsys.readouterr().out == ""
    with pytest.raises(ValueError):
        devices.gpu_available("tpu")


def test_time_per_call_warms_up_and_takes_the_median():
    calls = []
    seconds = devices.time_per_call(lambda: calls.append(1), "cpu", repeats=4, warmup=3)
    assert len(calls) == 7
    assert 0 <= seconds < 0.1


# --------------------------------------------------------------------------- distributed helpers
@pytest.mark.parametrize("n,world_size,epoch,shuffle", [(10, 3, 0, True), (10, 3, 1, True), (2, 4, 0, False), (8, 2, 5, True)])
def test_shard_assignment_is_distributed_sampler(n, world_size, epoch, shuffle):
    shards = shard_assignment(n, world_size, epoch, shuffle, seed=3)
    assert len({len(s) for s in shards}) == 1, "every rank gets the same number of items"
    assert set().union(*map(set, shards)) == set(range(n)), "together the ranks cover the dataset"
    for rank, shard in enumerate(shards):
        sampler = DistributedSampler(range(n), num_replicas=world_size, rank=rank, shuffle=shuffle, seed=3)
        sampler.set_epoch(epoch)
        assert shard == list(sampler)


def test_shard_assignment_changes_with_epoch_only_when_shuffling():
    assert shard_assignment(12, 2, 0) != shard_assignment(12, 2, 1)
    assert shard_assignment(12, 2, 0, shuffle=False) == shard_assignment(12, 2, 4, shuffle=False)
    with pytest.raises(ValueError):
        shard_assignment(0, 2)


def test_plot_shards_draws_one_box_per_item_and_rank():
    fig = plot_shards(10, 3, epoch=1)
    ax = fig.axes[0]
    assert len(ax.patches) == 12  # 4 per rank, 2 of them padding
    assert "10 items, 3 ranks" in ax.get_title() and "2 repeated" in ax.get_title()
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert len(hatched) == 2


# --------------------------------------------------------------------------- claims the lesson makes
def test_shard_indices_reference_matches_distributed_sampler_everywhere():
    for n in range(1, 14):
        for world_size in range(1, 6):
            for epoch in (0, 3):
                for shuffle in (True, False):
                    for rank in range(world_size):
                        sampler = DistributedSampler(range(n), num_replicas=world_size, rank=rank,
                                                     shuffle=shuffle, seed=11)
                        sampler.set_epoch(epoch)
                        assert M_SH.shard_indices(n, world_size, rank, epoch, shuffle, seed=11) == list(sampler), \
                            (n, world_size, rank, epoch, shuffle)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_averaged_rank_gradients_equal_the_full_batch_gradient(seed):
    case = M_DP._cases(Rand(seed))
    model, loss_fn, X, y, world_size = case.args
    averaged = M_DP.data_parallel_grads(model, loss_fn, X, y, world_size)
    full = torch.autograd.grad(loss_fn(model(X), y), list(model.parameters()))
    for a, f in zip(averaged, full):
        torch.testing.assert_close(a, f, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bf16_step_loss_is_within_bf16_tolerance_of_fp32(seed):
    model, X, y = M_AMP._cases(Rand(seed)).args
    model32 = copy.deepcopy(model)
    loss16 = M_AMP.amp_train_step(model, X, y, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1))
    loss32 = nn.functional.cross_entropy(model32(X), y).item()
    assert math.isclose(loss16, loss32, rel_tol=3e-2, abs_tol=1e-2)
    assert all(p.dtype == torch.float32 for p in model.parameters())


def test_checkpointing_saves_memory_and_keeps_gradients():
    blocks, x = M_CF._fixed_case(False).args
    plain_bytes, out_plain = M_CF._saved_bytes(lambda: M_CF._plain_forward(blocks, x))
    ckpt_bytes, out_ckpt = M_CF._saved_bytes(lambda: M_CF.checkpointed_forward(blocks, x))
    assert ckpt_bytes < plain_bytes / 2
    assert torch.equal(out_plain, out_ckpt)
    g_plain = torch.autograd.grad(out_plain.sum(), list(blocks.parameters()))
    g_ckpt = torch.autograd.grad(out_ckpt.sum(), list(blocks.parameters()))
    for a, b in zip(g_plain, g_ckpt):
        torch.testing.assert_close(a, b)


# --------------------------------------------------------------------------- other correct answers pass
def test_to_device_variants_pass():
    def with_non_blocking(batch, device):
        if torch.is_tensor(batch):
            return batch.to(device, non_blocking=True)
        if isinstance(batch, dict):
            return {k: with_non_blocking(v, device) for k, v in batch.items()}
        if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # the text: a namedtuple stays one
            return type(batch)(*(with_non_blocking(v, device) for v in batch))
        if isinstance(batch, tuple):
            return tuple(with_non_blocking(v, device) for v in batch)
        if isinstance(batch, list):
            return [with_non_blocking(v, device) for v in batch]
        return batch

    assert check("to_device", with_non_blocking, n_random=30).passed


def test_amp_step_with_backward_inside_autocast_passes():
    def step(model, X, y, loss_fn, optimizer):
        optimizer.zero_grad(set_to_none=False)
        with torch.autocast(X.device.type, dtype=torch.bfloat16):  # (a constant "cpu" is rejected)
            loss = loss_fn(model(X), y)
            loss.backward()
        optimizer.step()
        return float(loss)

    assert check("amp_train_step", step).passed


def test_checkpoint_variants_pass():
    def with_rng_preservation_off(blocks, x):
        for block in blocks:
            x = checkpoint(block, x, use_reentrant=False, preserve_rng_state=False)
        return x

    def by_index(blocks, x):
        for i in range(len(blocks)):
            x = checkpoint(blocks[i].forward, x, use_reentrant=False)
        return x

    assert check("checkpointed_forward", with_rng_preservation_off).passed
    assert check("checkpointed_forward", by_index).passed


def test_checkpoint_sequential_leaves_the_last_block_unchecked():
    # checkpoint_sequential runs its last segment normally, so the last block is not checkpointed,
    # which the exercise ("checkpoints each block") does not allow
    def sequential(blocks, x):
        return checkpoint_sequential(list(blocks), len(blocks), x, use_reentrant=False)

    res = check("checkpointed_forward", sequential)
    assert res.status == "incorrect" and res.mistake == "not_checkpointed", res.text()


def test_checkpointing_only_the_first_block_fails():
    def first_only(blocks, x):
        x = checkpoint(blocks[0], x, use_reentrant=False)
        for block in list(blocks)[1:]:
            x = block(x)
        return x

    res = check("checkpointed_forward", first_only)
    assert res.status == "incorrect" and res.mistake == "not_checkpointed", res.text()


def test_data_parallel_grads_by_accumulation_passes():
    def accumulate(model, loss_fn, X, y, world_size):
        replica = copy.deepcopy(model)
        for X_rank, y_rank in zip(X.chunk(world_size), y.chunk(world_size)):
            (loss_fn(replica(X_rank), y_rank) / world_size).backward()
        return [p.grad for p in replica.parameters()]

    assert check("data_parallel_grads", accumulate).passed


def test_shard_indices_returning_a_tensor_is_reported_as_wrong_type():
    res = check("shard_indices", lambda *a, **k: torch.tensor(M_SH.shard_indices(*a, **k)))
    assert res.status == "incorrect" and res.mistake == "wrong_type", res.text()


def test_grader_threads_are_restored():
    before = torch.get_num_threads()
    check("amp_train_step", M_AMP.amp_train_step)
    check("amp_train_step", lambda *a: 1 / 0)
    assert torch.get_num_threads() == before


# --------------------------------------------------------------------------- the instructor's sandbox
def test_the_lesson_imports_in_the_staged_course_without_its_references(tmp_path):
    # graded notebooks run against a staged copy of the course with every reference cut out
    # (calling one raises): the lesson's exercise files must not call a reference at import time
    import os
    import subprocess
    import sys

    from course_utils.instructor import sandbox

    sandbox.stage_course(tmp_path)
    code = ("import course_utils; from course_utils.grading import registry; "
            "print(course_utils.__file__); print(len(registry.load_lesson('10_gpu_amp_ddp')))")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    where, count = r.stdout.split()
    assert where.startswith(str(tmp_path)) and count == "5"


# ########################################################################### adversarial review
# Each test feeds the grader an answer that violates the exercise text and asserts it is rejected
# (naming the mistake where a name fits), or a correct answer written differently from the
# reference and asserts it is accepted.
# =========================================================================== 06 to_device
D = "10_gpu_amp_ddp."


def test_to_device_that_rebuilds_structure_only_for_meta_is_rejected():
    # special-cases the grader's `meta` device; on any other device tuples come back as lists
    def sneaky(batch, device):
        if torch.device(device).type == "meta":
            return M_TD.to_device(batch, device)
        if isinstance(batch, torch.Tensor):
            return batch.to(device)
        if isinstance(batch, dict):
            return {k: sneaky(v, device) for k, v in batch.items()}
        if isinstance(batch, (list, tuple)):
            return [sneaky(v, device) for v in batch]
        return batch

    rejected(D + "to_device", sneaky, "changed_container_type")


def test_to_device_that_turns_numbers_into_tensors_is_rejected():
    def as_tensor(batch, device):
        if isinstance(batch, dict):
            return {k: as_tensor(v, device) for k, v in batch.items()}
        if isinstance(batch, (list, tuple)):
            return type(batch)(as_tensor(v, device) for v in batch)
        if isinstance(batch, str):
            return batch
        return torch.as_tensor(batch).to(device)

    rejected(D + "to_device", as_tensor, "changed_non_tensor")


def test_to_device_that_assigns_into_nested_dicts_is_rejected():
    def dict_in_place(batch, device):
        if isinstance(batch, torch.Tensor):
            return batch.to(device)
        if isinstance(batch, dict):
            for k in batch:
                batch[k] = dict_in_place(batch[k], device)
            return batch
        if isinstance(batch, (list, tuple)):
            return type(batch)(dict_in_place(v, device) for v in batch)
        return batch

    rejected(D + "to_device", dict_in_place, "mutated_batch")


def test_to_device_moving_only_float_tensors_is_rejected():
    def floats_only(batch, device):
        if isinstance(batch, torch.Tensor):
            return batch.to(device) if batch.is_floating_point() else batch
        if isinstance(batch, dict):
            return {k: floats_only(v, device) for k, v in batch.items()}
        if isinstance(batch, (list, tuple)):
            return type(batch)(floats_only(v, device) for v in batch)
        return batch

    rejected(D + "to_device", floats_only, "not_moved")


def test_to_device_alternative_with_explicit_branches_passes():
    def explicit(batch, device):
        if torch.is_tensor(batch):
            return batch.to(device=device, copy=False)
        if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # the text: a namedtuple stays one
            return batch._make(explicit(b, device) for b in batch)
        if isinstance(batch, tuple):
            return tuple(map(lambda b: explicit(b, device), batch))
        if isinstance(batch, list):
            return [explicit(b, device) for b in batch]
        if isinstance(batch, dict):
            return dict((k, explicit(v, device)) for k, v in batch.items())
        return batch

    accepted(D + "to_device", explicit, n_random=30)


# =========================================================================== 06 amp_train_step
def _step(autocast_ctx, *, loss_inside=True, zero=True, zero_after_backward=False, step=True):
    def answer(model, X, y, loss_fn, optimizer):
        if zero:
            optimizer.zero_grad()
        with autocast_ctx(X):
            out = model(X)
            if loss_inside:
                loss = loss_fn(out, y)
        if not loss_inside:
            loss = loss_fn(out, y)
        loss.backward()
        if zero_after_backward:
            optimizer.zero_grad()
        if step:
            optimizer.step()
        return loss.item()
    return answer


BF16 = lambda X: torch.autocast(device_type=X.device.type, dtype=torch.bfloat16)  # noqa: E731


def test_amp_step_without_dtype_is_rejected():
    # autocast's default is bfloat16 on a CPU but float16 on CUDA: the lesson asks for bfloat16
    rejected(D + "amp_train_step", _step(lambda X: torch.autocast(device_type=X.device.type)), "float16_autocast")


def test_amp_step_with_the_loss_outside_autocast_is_rejected():
    rejected(D + "amp_train_step", _step(BF16, loss_inside=False), "loss_outside_autocast")


def test_amp_step_with_cuda_autocast_on_cpu_data_is_rejected():
    rejected(D + "amp_train_step", _step(lambda X: torch.autocast("cuda", dtype=torch.bfloat16)), "no_autocast")


def test_amp_step_zeroing_after_backward_or_without_step_is_rejected():
    rejected(D + "amp_train_step", _step(BF16, zero_after_backward=True))
    rejected(D + "amp_train_step", _step(BF16, step=False))


def test_amp_step_with_grad_scaler_but_plain_optimizer_step_is_rejected():
    def scaled(model, X, y, loss_fn, optimizer):
        scaler = torch.amp.GradScaler("cpu")
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = loss_fn(model(X), y)
        scaler.scale(loss).backward()
        optimizer.step()  # the gradients are still multiplied by the scale
        return loss.item()

    rejected(D + "amp_train_step", scaled)


def test_amp_step_with_a_correctly_used_grad_scaler_passes():
    def scaled(model, X, y, loss_fn, optimizer):
        scaler = torch.amp.GradScaler(X.device.type)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=X.device.type, dtype=torch.bfloat16):
            loss = loss_fn(model(X), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return float(loss)

    accepted(D + "amp_train_step", scaled)


def test_amp_check_restores_the_autocast_default_dtype():
    before = torch.get_autocast_dtype("cpu")
    check_id(D + "amp_train_step", M_AMP.amp_train_step)
    check_id(D + "amp_train_step", lambda *a: 1 / 0)
    assert torch.get_autocast_dtype("cpu") == before


# =========================================================================== 06 checkpointed_forward
def _one_segment(blocks, x):
    def run_all(x):
        for block in blocks:
            x = block(x)
        return x
    return checkpoint(run_all, x, use_reentrant=False)


def _pairs(blocks, x):
    blocks = list(blocks)
    for i in range(0, len(blocks), 2):
        x = checkpoint(nn.Sequential(*blocks[i:i + 2]), x, use_reentrant=False)
    return x


def _save_on_cpu(blocks, x):
    with torch.autograd.graph.save_on_cpu():  # offloads activations: no recomputation at all
        for block in blocks:
            x = block(x)
    return x


def _every_other(blocks, x):
    for i, block in enumerate(blocks):
        x = checkpoint(block, x, use_reentrant=False) if i % 2 == 0 else block(x)
    return x


def _reentrant_with_grad_trick(blocks, x):
    if not x.requires_grad:
        x = x.detach().requires_grad_()  # the old workaround for reentrant checkpointing
    for block in blocks:
        x = checkpoint(block, x, use_reentrant=True)
    return x


@pytest.mark.parametrize("answer,mistake", [
    (_one_segment, "coarse_checkpoint"),
    (_pairs, "coarse_checkpoint"),
    (_save_on_cpu, "not_checkpointed"),
    (_every_other, "not_checkpointed"),
    (lambda blocks, x: checkpoint_sequential(list(blocks), 2, x, use_reentrant=False), "not_checkpointed"),
    (_reentrant_with_grad_trick, "reentrant_checkpoint"),
])
def test_checkpointing_other_than_every_block_on_its_own_is_rejected(answer, mistake):
    rejected(D + "checkpointed_forward", answer, mistake)


def test_checkpoint_with_partial_and_block_forward_passes():
    ckpt = functools.partial(checkpoint, use_reentrant=False)

    def with_partial(blocks, x):
        for block in blocks:
            x = ckpt(block.forward, x)
        return x

    accepted(D + "checkpointed_forward", with_partial)


# =========================================================================== 06 shard_indices
def _order(n, epoch, shuffle, seed):
    if shuffle:
        return torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).tolist()
    return list(range(n))


def test_shard_indices_padding_once_is_rejected():
    def pad_once(n, world_size, rank, epoch, shuffle=True, seed=0):
        order = _order(n, epoch, shuffle, seed)
        total = math.ceil(n / world_size) * world_size
        return (order + order[:total - n])[rank::world_size]

    # (unnamed: wherever padding once falls short, the no-padding mistake gives the same output, so
    # the grader reports what differs instead of guessing a cause - issue 11, evidence-only names)
    rejected(D + "shard_indices", pad_once)


def test_shard_indices_seeding_the_global_generator_is_rejected():
    def global_seed(n, world_size, rank, epoch, shuffle=True, seed=0):
        if shuffle:
            torch.manual_seed(seed + epoch)
            order = torch.randperm(n).tolist()
        else:
            order = list(range(n))
        total = math.ceil(n / world_size) * world_size
        return (order * math.ceil(total / n))[:total][rank::world_size]

    rejected(D + "shard_indices", global_seed, "global_rng")


def test_shard_indices_padding_from_the_end_or_with_the_first_item_is_rejected():
    def pad_from_end(n, world_size, rank, epoch, shuffle=True, seed=0):
        order = _order(n, epoch, shuffle, seed)
        total = math.ceil(n / world_size) * world_size
        return (order + (order[::-1] * world_size)[:total - n])[rank::world_size]

    def pad_with_first(n, world_size, rank, epoch, shuffle=True, seed=0):
        order = _order(n, epoch, shuffle, seed)
        total = math.ceil(n / world_size) * world_size
        return (order + [order[0]] * (total - n))[rank::world_size]

    rejected(D + "shard_indices", pad_from_end)
    rejected(D + "shard_indices", pad_with_first)


def test_shard_indices_dropping_the_tail_is_rejected():
    def drop_last(n, world_size, rank, epoch, shuffle=True, seed=0):
        order = _order(n, epoch, shuffle, seed)
        total = (n // world_size) * world_size
        return order[rank:total:world_size]

    rejected(D + "shard_indices", drop_last)


def test_shard_indices_alternatives_pass():
    def sampler(n, world_size, rank, epoch, shuffle=True, seed=0):
        s = DistributedSampler(range(n), num_replicas=world_size, rank=rank, shuffle=shuffle, seed=seed)
        s.set_epoch(epoch)
        return list(s)

    def modulo(n, world_size, rank, epoch, shuffle=True, seed=0):
        order = _order(n, epoch, shuffle, seed)
        per_rank = -(-n // world_size)
        return [order[(rank + i * world_size) % n] for i in range(per_rank)]

    accepted(D + "shard_indices", sampler, n_random=40)
    accepted(D + "shard_indices", modulo, n_random=40)


# =========================================================================== 06 data_parallel_grads
def test_data_parallel_grads_with_split_instead_of_chunk_is_rejected():
    # X.split(world_size) makes pieces OF world_size rows; averaging over them gives the right numbers
    def split(model, loss_fn, X, y, world_size):
        grads = []
        for X_part, y_part in zip(X.split(world_size), y.split(world_size)):
            replica = copy.deepcopy(model)
            grads.append(torch.autograd.grad(loss_fn(replica(X_part), y_part), list(replica.parameters())))
        return [sum(g) / len(grads) for g in zip(*grads)]

    rejected(D + "data_parallel_grads", split, "not_sharded")


def test_data_parallel_grads_calling_forward_directly_on_the_full_batch_is_rejected():
    def full_batch(model, loss_fn, X, y, world_size):
        replica = copy.deepcopy(model)
        return list(torch.autograd.grad(loss_fn(replica.forward(X), y), list(replica.parameters())))

    rejected(D + "data_parallel_grads", full_batch, "not_sharded")


def test_data_parallel_grads_leaving_zeroed_grads_is_rejected():
    def zeroed(model, loss_fn, X, y, world_size):
        grads = M_DP.data_parallel_grads(model, loss_fn, X, y, world_size)
        model.zero_grad(set_to_none=False)
        for p in model.parameters():
            p.grad = torch.zeros_like(p)
        return grads

    rejected(D + "data_parallel_grads", zeroed, "modified_model")


def test_data_parallel_grads_alternatives_pass():
    def keyword_call(model, loss_fn, X, y, world_size):
        total = None
        for X_rank, y_rank in zip(X.chunk(world_size), y.chunk(world_size)):
            replica = copy.deepcopy(model)
            grads = torch.autograd.grad(loss_fn(replica(input=X_rank), y_rank), list(replica.parameters()))
            total = list(grads) if total is None else [t + g for t, g in zip(total, grads)]
        return [t / world_size for t in total]

    def strided_shards(model, loss_fn, X, y, world_size):  # DistributedSampler-style shards
        per_rank = []
        for rank in range(world_size):
            replica = copy.deepcopy(model)
            loss = loss_fn(replica(X[rank::world_size]), y[rank::world_size])
            per_rank.append(torch.autograd.grad(loss, list(replica.parameters())))
        return [torch.stack(g).mean(0) for g in zip(*per_rank)]

    accepted(D + "data_parallel_grads", keyword_call)
    accepted(D + "data_parallel_grads", strided_shards)


# ########################################################################### red team (issue 11)
# For every exercise: at least five wrong answers a learner would plausibly write (real learner
# code, not mutants of the reference), three valid but unusual answers, and two cheats (answers
# that special-case what the grader shows, or objects that lie to duck-typed checks). Every
# verdict must hold for several seeds (``rejected``/``accepted`` try each of them). Grouped per
# exercise in ``WRONG[exercise] = [(answer, mistake or None)]``, ``VALID`` and ``CHEATS``.
_tables = Tables()  # tests/lesson_kit.py
WRONG, VALID, CHEATS = _tables.WRONG, _tables.VALID, _tables.CHEATS
wrong, valid, cheat = _tables.wrong, _tables.valid, _tables.cheat


# =========================================================================== 06 to_device
TD = "10_gpu_amp_ddp.to_device"


@wrong(TD, "namedtuple_from_generator")
def td_generator_for_every_tuple(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: td_generator_for_every_tuple(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(td_generator_for_every_tuple(v, device) for v in batch)
    return batch


@wrong(TD, "changed_dtype")
def td_floats_to_float32(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device).float() if batch.is_floating_point() else batch.to(device)
    if isinstance(batch, dict):
        return {k: td_floats_to_float32(v, device) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(td_floats_to_float32(v, device) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(td_floats_to_float32(v, device) for v in batch)
    return batch


@wrong(TD)
def td_namedtuple_as_plain_tuple(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: td_namedtuple_as_plain_tuple(v, device) for k, v in batch.items()}
    if isinstance(batch, tuple):
        return tuple(td_namedtuple_as_plain_tuple(v, device) for v in batch)
    if isinstance(batch, list):
        return [td_namedtuple_as_plain_tuple(v, device) for v in batch]
    return batch


@wrong(TD)
def td_non_blocking_pin(batch, device):
    """Calls .pin_memory() first ("faster"): fails on tensors that cannot be pinned, changes nothing else."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, copy=True).detach().requires_grad_(batch.is_floating_point())
    if isinstance(batch, dict):
        return {k: td_non_blocking_pin(v, device) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(td_non_blocking_pin(v, device) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(td_non_blocking_pin(v, device) for v in batch)
    return batch


@wrong(TD)
def td_dict_values_only_tensors(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: td_dict_values_only_tensors(v, device) for k, v in batch.items() if not isinstance(v, (str, int))}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(td_dict_values_only_tensors(v, device) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(td_dict_values_only_tensors(v, device) for v in batch)
    return batch


@wrong(TD)
def td_strings_to_tensors(batch, device):
    if isinstance(batch, (int, float)) and not isinstance(batch, bool):
        return torch.tensor(batch, device=device)
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: td_strings_to_tensors(v, device) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(td_strings_to_tensors(v, device) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(td_strings_to_tensors(v, device) for v in batch)
    return batch


@valid(TD)
def td_pytree(batch, device):
    from torch.utils._pytree import tree_map
    return tree_map(lambda v: v.to(device) if isinstance(v, torch.Tensor) else v, batch)


@valid(TD)
def td_namedtuple_make(batch, device):
    if torch.is_tensor(batch):
        return batch.to(device=device)
    if isinstance(batch, collections.abc.Mapping):
        return type(batch)({k: td_namedtuple_make(v, device) for k, v in batch.items()})
    if isinstance(batch, tuple) and hasattr(batch, "_make"):
        return batch._make(td_namedtuple_make(v, device) for v in batch)
    if isinstance(batch, (list, tuple)):
        return type(batch)([td_namedtuple_make(v, device) for v in batch])
    return batch


@valid(TD)
def td_apply_to_collection_style(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, dict):
        out = {}
        for key in batch:
            out[key] = td_apply_to_collection_style(batch[key], device)
        return out
    if isinstance(batch, tuple):
        items = [td_apply_to_collection_style(v, device) for v in batch]
        return type(batch)(*items) if hasattr(batch, "_fields") else tuple(items)
    if isinstance(batch, list):
        return list(map(lambda v: td_apply_to_collection_style(v, device), batch))
    return batch


@cheat(TD)
def td_only_top_level(batch, device):
    """Moves the outer container's direct tensors and the shown (X, y) shape only."""
    if isinstance(batch, tuple) and len(batch) == 2 and all(isinstance(v, torch.Tensor) for v in batch):
        return tuple(v.to(device) for v in batch)
    return batch


@cheat(TD)
def td_lying_tensor_device(batch, device):
    """Leaves tensors where they are but reports the device asked for."""
    from torch.utils._pytree import tree_map

    class Claims(torch.Tensor):
        @property
        def device(self):
            return torch.device(device)

    return tree_map(lambda v: v.as_subclass(Claims) if isinstance(v, torch.Tensor) else v, batch)


# =========================================================================== 06 amp_train_step
AMP = "10_gpu_amp_ddp.amp_train_step"


def _amp(model, X, y, loss_fn, optimizer, device_type=None, dtype=torch.bfloat16, zero=True, inside_backward=False):
    if zero:
        optimizer.zero_grad()
    with torch.autocast(device_type=device_type or X.device.type, dtype=dtype):
        loss = loss_fn(model(X), y)
        if inside_backward:
            loss.backward()
    if not inside_backward:
        loss.backward()
    optimizer.step()
    return loss.item()


@wrong(AMP, "hard_coded_device")
def amp_cpu_hard_coded(model, X, y, loss_fn, optimizer):
    return _amp(model, X, y, loss_fn, optimizer, device_type="cpu")


@wrong(AMP)
def amp_no_zero_grad(model, X, y, loss_fn, optimizer):
    return _amp(model, X, y, loss_fn, optimizer, zero=False)


@wrong(AMP)
def amp_model_to_bf16(model, X, y, loss_fn, optimizer):
    model.to(torch.bfloat16)
    optimizer.zero_grad()
    loss = loss_fn(model(X.bfloat16()), y)
    loss.backward()
    optimizer.step()
    return loss.item()


@wrong(AMP)
def amp_default_dtype(model, X, y, loss_fn, optimizer):
    optimizer.zero_grad()
    with torch.autocast(X.device.type):
        loss = loss_fn(model(X), y)
    loss.backward()
    optimizer.step()
    return loss.item()


@wrong(AMP)
def amp_returns_tensor(model, X, y, loss_fn, optimizer):
    optimizer.zero_grad()
    with torch.autocast(device_type=X.device.type, dtype=torch.bfloat16):
        loss = loss_fn(model(X), y)
    loss.backward()
    optimizer.step()
    return loss


@wrong(AMP)
def amp_float16_with_scaler(model, X, y, loss_fn, optimizer):
    scaler = torch.amp.GradScaler("cpu")
    optimizer.zero_grad()
    with torch.autocast(device_type=X.device.type, dtype=torch.float16):
        loss = loss_fn(model(X), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


@valid(AMP)
def amp_backward_inside(model, X, y, loss_fn, optimizer):
    """backward inside the autocast block: discouraged, but the same step."""
    return _amp(model, X, y, loss_fn, optimizer, inside_backward=True)


@valid(AMP)
def amp_torch_amp_autocast(model, X, y, loss_fn, optimizer):
    model.zero_grad(set_to_none=True)
    with torch.amp.autocast(X.device.type, dtype=torch.bfloat16, enabled=True):
        logits = model(X)
        loss = loss_fn(logits, y)
    loss.backward()
    optimizer.step()
    return float(loss)


@valid(AMP)
def amp_device_from_model(model, X, y, loss_fn, optimizer):
    device_type = next(model.parameters()).device.type
    optimizer.zero_grad()
    with torch.autocast(device_type, torch.bfloat16):
        out = model(X)
    loss = loss_fn(out.float(), y)
    loss.backward()
    optimizer.step()
    return loss.detach().item()


@cheat(AMP)
def amp_fakes_the_dtype(model, X, y, loss_fn, optimizer):
    """Plain float32 step whose input is rounded through bfloat16 (looks like bf16 numbers)."""
    optimizer.zero_grad()
    loss = loss_fn(model(X.bfloat16().float()), y)
    loss.backward()
    optimizer.step()
    return loss.item()


@cheat(AMP)
def amp_reports_the_loss_only(model, X, y, loss_fn, optimizer):
    with torch.no_grad(), torch.autocast(device_type=X.device.type, dtype=torch.bfloat16):
        return loss_fn(model(X), y).item()


# =========================================================================== 06 checkpointed_forward
CF = "10_gpu_amp_ddp.checkpointed_forward"
from torch.utils.checkpoint import checkpoint as _checkpoint  # noqa: E402


@wrong(CF, "late_binding_closure")
def ckpt_late_binding_lambda(blocks, x):
    for b in blocks:
        x = _checkpoint(lambda t: b(t), x, use_reentrant=False)  # noqa: B023 - the mistake itself
    return x


@wrong(CF)
def ckpt_plain(blocks, x):
    for b in blocks:
        x = b(x)
    return x


@wrong(CF)
def ckpt_sequential_two_segments(blocks, x):
    return checkpoint_sequential(nn.Sequential(*blocks), 2, x, use_reentrant=False)


@wrong(CF)
def ckpt_only_first(blocks, x):
    x = _checkpoint(blocks[0], x, use_reentrant=False)
    for b in list(blocks)[1:]:
        x = b(x)
    return x


@wrong(CF)
def ckpt_detached_input(blocks, x):
    for b in blocks:
        x = _checkpoint(b, x.detach(), use_reentrant=False)
    return x


@wrong(CF, "changed_input_flag")
def ckpt_requires_grad_on_callers_x(blocks, x):
    x.requires_grad_()
    for b in blocks:
        x = _checkpoint(b, x, use_reentrant=False)
    return x


@valid(CF)
def ckpt_functools_partial(blocks, x):
    import functools
    out = x
    for b in blocks:
        out = _checkpoint(functools.partial(b.forward), out, use_reentrant=False)
    return out


@valid(CF)
def ckpt_default_lambda_arg(blocks, x):
    for b in blocks:
        x = _checkpoint(lambda t, b=b: b(t), x, use_reentrant=False, preserve_rng_state=False)
    return x


@valid(CF)
def ckpt_sequential_one_block_per_segment(blocks, x):
    h = x
    for i in range(len(blocks)):
        h = _checkpoint(blocks[i], h, use_reentrant=False, determinism_check="default")
    return h


@cheat(CF)
def ckpt_no_grad_then_plain(blocks, x):
    """Runs under no_grad (saves nothing), then again normally for the output."""
    with torch.no_grad():
        for b in blocks:
            b(x)
    for b in blocks:
        x = b(x)
    return x


@cheat(CF)
def ckpt_detach_output(blocks, x):
    for b in blocks:
        x = _checkpoint(b, x, use_reentrant=False)
    return x.detach().requires_grad_()


# =========================================================================== 06 shard_indices
SH = "10_gpu_amp_ddp.shard_indices"


@wrong(SH)
def shard_pad_with_last(n, world_size, rank, epoch, shuffle=True, seed=0):
    order = _order(n, epoch, shuffle, seed)
    total = math.ceil(n / world_size) * world_size
    order += [order[-1]] * (total - n)
    return order[rank::world_size]


@wrong(SH)
def shard_drop_last(n, world_size, rank, epoch, shuffle=True, seed=0):
    order = _order(n, epoch, shuffle, seed)
    total = (n // world_size) * world_size
    return order[:total][rank::world_size]


@wrong(SH)
def shard_tensor_out(n, world_size, rank, epoch, shuffle=True, seed=0):
    order = torch.tensor(_order(n, epoch, shuffle, seed))
    total = math.ceil(n / world_size) * world_size
    order = order.repeat(math.ceil(total / n))[:total]
    return order[rank::world_size]


@wrong(SH)
def shard_seed_times_epoch(n, world_size, rank, epoch, shuffle=True, seed=0):
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed * (epoch + 1))).tolist() if shuffle else list(range(n))
    total = math.ceil(n / world_size) * world_size
    return (order * math.ceil(total / n))[:total][rank::world_size]


@wrong(SH)
def shard_pad_once(n, world_size, rank, epoch, shuffle=True, seed=0):
    order = _order(n, epoch, shuffle, seed)
    total = math.ceil(n / world_size) * world_size
    order = order + order[: total - n]
    return order[rank::world_size]


@wrong(SH)
def shard_numpy_permutation(n, world_size, rank, epoch, shuffle=True, seed=0):
    order = np.random.default_rng(seed + epoch).permutation(n).tolist() if shuffle else list(range(n))
    total = math.ceil(n / world_size) * world_size
    return (order * math.ceil(total / n))[:total][rank::world_size]


@wrong(SH, "exception")
def shard_divides_by_n(n, world_size, rank, epoch, shuffle=True, seed=0):
    """Right for n >= 1; an empty dataset divides by zero (red team: the reference itself did this),
    where DistributedSampler gives every rank []."""
    order = _order(n, epoch, shuffle, seed)
    total = math.ceil(n / world_size) * world_size
    return (order * math.ceil(total / n))[:total][rank::world_size]


@valid(SH)
def shard_distributed_sampler(n, world_size, rank, epoch, shuffle=True, seed=0):
    from torch.utils.data import DistributedSampler
    s = DistributedSampler(range(n), num_replicas=world_size, rank=rank, shuffle=shuffle, seed=seed)
    s.set_epoch(epoch)
    return list(s)


@valid(SH)
def shard_itertools_cycle(n, world_size, rank, epoch, shuffle=True, seed=0):
    import itertools
    order = _order(n, epoch, shuffle, seed)
    total = -(-n // world_size) * world_size
    padded = list(itertools.islice(itertools.cycle(order), total))
    return [int(i) for i in padded[rank::world_size]]


@valid(SH)
def shard_modulo(n, world_size, rank, epoch, shuffle=True, seed=0):
    order = _order(n, epoch, shuffle, seed)
    per_rank = -(-n // world_size)
    return [order[(rank + k * world_size) % n] for k in range(per_rank)]


@cheat(SH)
def shard_shown_cases_only(n, world_size, rank, epoch, shuffle=True, seed=0):
    order = _order(n, epoch, shuffle, seed)
    return (order * 3)[rank : math.ceil(n / world_size) * world_size : world_size] if n <= 10 else order[rank::world_size]


@cheat(SH)
def shard_lying_list(n, world_size, rank, epoch, shuffle=True, seed=0):
    class Agreeable(list):
        def __eq__(self, other):
            return True

    return Agreeable(_order(n, epoch, shuffle, seed)[rank::world_size])


# =========================================================================== 06 data_parallel_grads
DP = "10_gpu_amp_ddp.data_parallel_grads"


def _rank_grads(model, loss_fn, X, y, world_size):
    for Xr, yr in zip(X.chunk(world_size), y.chunk(world_size)):
        r = copy.deepcopy(model)
        yield torch.autograd.grad(loss_fn(r(Xr), yr), list(r.parameters()))


@wrong(DP, "averaged_losses")
def dp_averages_shard_losses(model, loss_fn, X, y, world_size):
    """Red team: one replica, the mean of the shard losses, one autograd.grad: the same numbers,
    but not per-rank gradients averaged (what the exercise is about)."""
    r = copy.deepcopy(model)
    loss = sum(loss_fn(r(a), b) for a, b in zip(X.chunk(world_size), y.chunk(world_size))) / world_size
    return list(torch.autograd.grad(loss, list(r.parameters())))


@wrong(DP, "averaged_losses")
def dp_backward_on_summed_loss(model, loss_fn, X, y, world_size):
    r = copy.deepcopy(model)
    total = 0
    for a, b in zip(X.chunk(world_size), y.chunk(world_size)):
        total = total + loss_fn(r(a), b)
    (total / world_size).backward()
    return [p.grad for p in r.parameters()]


@valid(DP)
def dp_replicas_one_backward_pass(model, loss_fn, X, y, world_size):
    """Every rank's loss on its own replica; one backward call fills every replica's .grad."""
    replicas = [copy.deepcopy(model) for _ in range(world_size)]
    losses = [loss_fn(r(a), b) for r, a, b in zip(replicas, X.chunk(world_size), y.chunk(world_size))]
    torch.autograd.backward(losses)
    return [sum(ps) / world_size for ps in zip(*[[p.grad for p in r.parameters()] for r in replicas])]


@wrong(DP)
def dp_returns_tuple(model, loss_fn, X, y, world_size):
    gs = list(_rank_grads(model, loss_fn, X, y, world_size))
    return tuple(sum(g[i] for g in gs) / world_size for i in range(len(gs[0])))


@wrong(DP)
def dp_create_graph(model, loss_fn, X, y, world_size):
    total = None
    for Xr, yr in zip(X.chunk(world_size), y.chunk(world_size)):
        r = copy.deepcopy(model)
        g = torch.autograd.grad(loss_fn(r(Xr), yr), list(r.parameters()), create_graph=True)
        total = list(g) if total is None else [a + b for a, b in zip(total, g)]
    return [t / world_size for t in total]


@wrong(DP)
def dp_split_rows(model, loss_fn, X, y, world_size):
    total, k = None, 0
    for Xr, yr in zip(X.split(world_size), y.split(world_size)):
        r = copy.deepcopy(model)
        g = torch.autograd.grad(loss_fn(r(Xr), yr), list(r.parameters()))
        total = list(g) if total is None else [a + b for a, b in zip(total, g)]
        k += 1
    return [t / k for t in total]


@wrong(DP)
def dp_backward_on_model(model, loss_fn, X, y, world_size):
    total = None
    for Xr, yr in zip(X.chunk(world_size), y.chunk(world_size)):
        model.zero_grad()
        loss_fn(model(Xr), yr).backward()
        g = [p.grad.clone() for p in model.parameters()]
        total = g if total is None else [a + b for a, b in zip(total, g)]
    return [t / world_size for t in total]


@wrong(DP)
def dp_sum_not_mean(model, loss_fn, X, y, world_size):
    gs = list(_rank_grads(model, loss_fn, X, y, world_size))
    return [sum(g[i] for g in gs) for i in range(len(gs[0]))]


@wrong(DP)
def dp_named_parameters_sorted(model, loss_fn, X, y, world_size):
    names = sorted(n for n, _ in model.named_parameters())
    gs = list(_rank_grads(model, loss_fn, X, y, world_size))
    order = [n for n, _ in model.named_parameters()]
    avg = [sum(g[i] for g in gs) / world_size for i in range(len(gs[0]))]
    return [avg[order.index(n)] for n in names]


@valid(DP)
def dp_backward_on_replicas(model, loss_fn, X, y, world_size):
    replicas = [copy.deepcopy(model) for _ in range(world_size)]
    for r, Xr, yr in zip(replicas, X.chunk(world_size), y.chunk(world_size)):
        loss_fn(r(Xr), yr).backward()
    return [torch.stack([list(r.parameters())[i].grad for r in replicas]).mean(0)
            for i in range(len(list(model.parameters())))]


@valid(DP)
def dp_torch_func(model, loss_fn, X, y, world_size):
    from torch.func import functional_call, grad
    params = {k: v.detach() for k, v in model.named_parameters()}
    g = grad(lambda p, a, b: loss_fn(functional_call(model, p, (a,)), b))
    out = None
    for Xr, yr in zip(X.chunk(world_size), y.chunk(world_size)):
        gr = g(params, Xr, yr)
        out = gr if out is None else {k: out[k] + gr[k] for k in out}
    return [out[k] / world_size for k, _ in model.named_parameters()]


@valid(DP)
def dp_all_reduce_in_place(model, loss_fn, X, y, world_size):
    gs = [list(g) for g in _rank_grads(model, loss_fn, X, y, world_size)]
    bucket = [t.clone() for t in gs[0]]
    for other in gs[1:]:
        for b, t in zip(bucket, other):
            b.add_(t)
    for b in bucket:
        b.div_(world_size)
    return bucket


@cheat(DP)
def dp_full_batch_shard_sized_forward(model, loss_fn, X, y, world_size):
    """Shows shard-sized forwards, but the gradient is rank 0's only."""
    grads = list(_rank_grads(model, loss_fn, X, y, world_size))
    return list(grads[0])


@cheat(DP)
def dp_zeros(model, loss_fn, X, y, world_size):
    for Xr in X.chunk(world_size):
        copy.deepcopy(model)(Xr)
    return [torch.zeros_like(p) for p in model.parameters()]


# --------------------------------------------------------------------------- the red team's tests
_all = Tables.all


@pytest.mark.parametrize("answer,mistake", _all(WRONG))
def test_wrong_answer_is_rejected(request, answer, mistake):
    exercise = request.node.callspec.id.split("-")[0]
    rejected(exercise, answer, mistake)


@pytest.mark.parametrize("answer", _all(VALID))
def test_valid_answer_is_accepted(request, answer):
    exercise = request.node.callspec.id.split("-")[0]
    accepted(exercise, answer)


@pytest.mark.parametrize("answer", _all(CHEATS))
def test_cheat_is_rejected(request, answer):
    exercise = request.node.callspec.id.split("-")[0]
    rejected(exercise, answer)


def test_every_exercise_has_its_red_team():
    _tables.assert_counts(LESSON)


# ########################################################################### oracles (issue 11)
# Each reference compared with a torch built-in that computes the same thing another way, across
# the exercise's whole case generator (many seeds) and its fixed edge cases.
def _cases(exercise_id, seeds):
    return fixed_and_random_cases(exercise_id, seeds)


def test_to_device_matches_pytree_map():
    from torch.utils._pytree import tree_flatten, tree_map

    ref = grading.reference("10_gpu_amp_ddp.to_device")
    for case in _cases("10_gpu_amp_ddp.to_device", range(100)):
        (batch,) = case.args
        got = ref(batch, torch.device("meta"))
        oracle = tree_map(lambda v: v.to("meta") if isinstance(v, torch.Tensor) else v, batch)
        leaves_got, spec_got = tree_flatten(got)
        leaves_oracle, spec_oracle = tree_flatten(oracle)
        assert spec_got == spec_oracle  # same containers (namedtuples included), same keys
        for a, b in zip(leaves_got, leaves_oracle):
            assert type(a) is type(b)
            if isinstance(a, torch.Tensor):
                assert a.device == b.device and a.dtype == b.dtype and a.shape == b.shape
            else:
                assert a == b


def test_shard_indices_matches_distributed_sampler():
    from torch.utils.data import DistributedSampler

    ref = grading.reference("10_gpu_amp_ddp.shard_indices")
    for case in _cases("10_gpu_amp_ddp.shard_indices", range(300)):
        n, world_size, rank, epoch = case.args
        sampler = DistributedSampler(range(n), num_replicas=world_size, rank=rank, **case.kwargs)
        sampler.set_epoch(epoch)
        assert ref(n, world_size, rank, epoch, **case.kwargs) == list(sampler)


def test_data_parallel_grads_equal_the_full_batch_gradient():
    ref = grading.reference("10_gpu_amp_ddp.data_parallel_grads")
    for case in _cases("10_gpu_amp_ddp.data_parallel_grads", range(60)):
        model, loss_fn, X, y, world_size = copy.deepcopy(case.args)
        got = ref(model, loss_fn, X, y, world_size)
        full = torch.autograd.grad(loss_fn(model(X), y), list(model.parameters()))
        for a, b in zip(got, full):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_checkpointed_forward_matches_a_plain_forward_and_its_gradients():
    ref = grading.reference("10_gpu_amp_ddp.checkpointed_forward")
    for case in _cases("10_gpu_amp_ddp.checkpointed_forward", range(30)):
        blocks, x = copy.deepcopy(case.args)
        x = x.detach().requires_grad_()
        out = ref(blocks, x)
        plain = x
        for b in blocks:
            plain = b(plain)
        torch.testing.assert_close(out, plain)
        params = list(blocks.parameters()) + [x]
        for a, b in zip(torch.autograd.grad(out.sum(), params), torch.autograd.grad(plain.sum(), params)):
            torch.testing.assert_close(a, b)
