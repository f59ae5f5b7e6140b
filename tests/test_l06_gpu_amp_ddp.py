"""Lesson 06 (GPU, AMP, DDP): the device and sharding helpers, the claims the lesson makes
(DistributedSampler's rule, DDP's averaged gradients equal the big-batch gradient, bf16 loss
within bf16 tolerance of fp32), correct answers written differently from the reference, and the
behavioural diagnoses the generic tests cannot see."""

from __future__ import annotations

import copy
import math

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.checkpoint import checkpoint, checkpoint_sequential  # noqa: E402
from torch.utils.data import DistributedSampler  # noqa: E402

from course_utils import grading  # noqa: E402
from course_utils.lesson_props import l06_devices as devices  # noqa: E402
from course_utils.lesson_props.l06_distributed import plot_shards, shard_assignment  # noqa: E402
from course_utils.exercises import l06_gpu_amp_ddp as L  # noqa: E402
from course_utils.grading import Rand  # noqa: E402

LESSON = "06_gpu_amp_ddp"


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
                        assert L.shard_indices(n, world_size, rank, epoch, shuffle, seed=11) == list(sampler), \
                            (n, world_size, rank, epoch, shuffle)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_averaged_rank_gradients_equal_the_full_batch_gradient(seed):
    case = L._dp_cases(Rand(seed))
    model, loss_fn, X, y, world_size = case.args
    averaged = L.data_parallel_grads(model, loss_fn, X, y, world_size)
    full = torch.autograd.grad(loss_fn(model(X), y), list(model.parameters()))
    for a, f in zip(averaged, full):
        torch.testing.assert_close(a, f, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bf16_step_loss_is_within_bf16_tolerance_of_fp32(seed):
    model, X, y = L._amp_cases(Rand(seed)).args
    model32 = copy.deepcopy(model)
    loss16 = L.amp_train_step(model, X, y, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1))
    loss32 = nn.functional.cross_entropy(model32(X), y).item()
    assert math.isclose(loss16, loss32, rel_tol=3e-2, abs_tol=1e-2)
    assert all(p.dtype == torch.float32 for p in model.parameters())


def test_checkpointing_saves_memory_and_keeps_gradients():
    blocks, x = L._fixed_ckpt_case(False).args
    plain_bytes, out_plain = L._saved_bytes(lambda: L._plain_forward(blocks, x))
    ckpt_bytes, out_ckpt = L._saved_bytes(lambda: L.checkpointed_forward(blocks, x))
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
    res = check("shard_indices", lambda *a, **k: torch.tensor(L.shard_indices(*a, **k)))
    assert res.status == "incorrect" and res.mistake == "wrong_type", res.text()


def test_grader_threads_are_restored():
    before = torch.get_num_threads()
    check("amp_train_step", L.amp_train_step)
    check("amp_train_step", lambda *a: 1 / 0)
    assert torch.get_num_threads() == before
