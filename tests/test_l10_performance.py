"""Lesson 10 (performance on one device), every test of its own in one file: the device helpers,
the claims the lesson makes (bf16 loss within bf16 tolerance of fp32, checkpointing saves memory
and keeps gradients), correct answers written differently from the reference, the behavioural
diagnoses the generic tests cannot see; then the adversarial review, the red team (wrong answers,
valid unusual answers, cheats) and the oracles (issue 11).
The contract tests shared by every exercise are in tests/test_exercises.py."""

from __future__ import annotations

import collections
import copy
import functools
import math
import statistics
import time
from time import perf_counter

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.checkpoint import checkpoint, checkpoint_sequential  # noqa: E402

from course_utils import grading  # noqa: E402
from course_utils.lesson_props import l10_devices as devices  # noqa: E402
from course_utils.exercises.l10_performance import amp_policy as M_AP  # noqa: E402
from course_utils.exercises.l10_performance import amp_train_step as M_AMP  # noqa: E402
from course_utils.exercises.l10_performance import median_time as M_MT  # noqa: E402
from course_utils.exercises.l10_performance import checkpointed_forward as M_CF  # noqa: E402
from course_utils.exercises.l10_performance import to_device as M_TD  # noqa: E402

from course_utils.grading import Rand  # noqa: E402
from grading_asserts import accepted, rejected  # noqa: E402 (tests/ is on sys.path)
from lesson_kit import Tables, fixed_and_random_cases  # noqa: E402

LESSON = "10_performance"


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



def test_checkpointing_saves_memory_and_keeps_gradients():
    blocks, x = M_CF._fixed_case(False).args
    plain_bytes, out_plain = M_CF._saved_bytes(lambda: M_CF.plain_forward(blocks, x))
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


def _updates_stats(block):
    """A block whose forward changes its buffers: a BatchNorm in training mode."""
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm) and m.training for m in block.modules())


def test_checkpoint_variants_pass():
    def with_rng_preservation_off(blocks, x):
        for block in blocks:
            x = block(x) if _updates_stats(block) else checkpoint(block, x, use_reentrant=False,
                                                                   preserve_rng_state=False)
        return x

    def by_index(blocks, x):
        for i in range(len(blocks)):
            has_buffers = any(True for _ in blocks[i].buffers())
            if has_buffers and blocks[i].training:
                x = blocks[i](x)
            else:
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


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_mixed_precision_step_loss_is_within_low_precision_tolerance_of_fp32(seed):
    case = M_AMP._cases(Rand(seed))
    model, X, y = case.args
    model32 = copy.deepcopy(model)
    dtype = torch.float16 if case.kwargs["fp16"] else torch.bfloat16
    scaler = torch.amp.GradScaler("cpu") if case.kwargs["fp16"] else None
    loss16 = M_AMP.amp_train_step(model, X, y, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1),
                                  dtype, scaler=scaler, max_norm=0.5)
    loss32 = nn.functional.cross_entropy(model32(X), y).item()
    assert math.isclose(loss16, loss32, rel_tol=3e-2, abs_tol=1e-2)
    assert all(p.dtype == torch.float32 for p in model.parameters())


def test_amp_policy_dtypes_train_on_the_cpu():
    """The policy's CPU answers really run: autocast in that dtype (float32 meaning autocast off),
    with a scaler where it says so."""
    for bf16 in (True, False):
        dtype, use_scaler = M_AP.amp_policy("cpu", bf16)
        model = nn.Linear(4, 2)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype != torch.float32):
            out = model(torch.randn(3, 4))
        assert out.dtype == dtype and not use_scaler
    assert M_AP.amp_policy("cpu", False) == (torch.float32, False)
    assert M_AP.amp_policy("cuda", False) == (torch.float16, True)
    with pytest.raises(ValueError):
        M_AP.amp_policy("mps", True)


def test_bf16_native_follows_the_capability_rules(monkeypatch):
    """bfloat16 tensor cores from compute capability 8.0 (Ampere) on; a T4 (7.5) or a V100 (7.0)
    emulates it, although `torch.cuda.is_bf16_supported()`'s default says True there (issue 26)."""
    from types import SimpleNamespace

    from course_utils.lesson_props import l10_devices

    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "_check_bf16_tensor_supported", lambda device: True)  # emulation works
    for name, major, minor, native in [("V100", 7, 0, False), ("T4", 7, 5, False), ("A100", 8, 0, True),
                                       ("RTX 4090", 8, 9, True), ("H100", 9, 0, True)]:
        props = SimpleNamespace(major=major, minor=minor, name=name)
        monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device, props=props: props)
        assert torch.cuda.is_bf16_supported(), "the default counts emulation (what the lesson warns about)"
        assert l10_devices.cuda_bf16_native() is native, name
        assert l10_devices.bf16_native("cuda") is native, name
        policy = M_AP.amp_policy("cuda", l10_devices.bf16_native("cuda"))
        assert policy == ((torch.bfloat16, False) if native else (torch.float16, True)), name


@pytest.mark.parametrize("flags,native", [({"avx2", "fma"}, False), ({"avx512f", "avx512_bf16"}, True),
                                          ({"avx2", "amx_bf16", "amx_tile"}, True), ({"fp", "asimd", "bf16"}, True),
                                          (set(), False)])
def test_cpu_bf16_native_reads_the_cpu_flags(flags, native):
    from course_utils.lesson_props import l10_devices

    assert l10_devices.cpu_bf16_native(flags) is native


def test_cpu_bf16_native_on_this_machine_matches_proc_cpuinfo():
    from pathlib import Path

    from course_utils.lesson_props import l10_devices

    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    expected = any(flag in text.split() for flag in ("avx512_bf16", "amx_bf16"))
    if "Features" in text:  # Arm
        expected = expected or "bf16" in text.split()
    assert l10_devices.bf16_native("cpu") is expected


def test_amp_check_restores_the_autocast_default_dtype():
    before = torch.get_autocast_dtype("cpu")
    check("amp_train_step", M_AMP.amp_train_step)
    check("amp_train_step", lambda *a, **k: 1 / 0)
    assert torch.get_autocast_dtype("cpu") == before


def test_median_time_check_restores_the_clocks():
    before = (time.perf_counter, time.monotonic, time.time, time.perf_counter_ns)
    check("median_time", M_MT.median_time)
    check("median_time", lambda *a, **k: 1 / 0)
    assert (time.perf_counter, time.monotonic, time.time, time.perf_counter_ns) == before
    assert abs(time.time() - __import__("datetime").datetime.now().timestamp()) < 5


def test_median_time_feedback_describes_warmup_and_repeats():
    """red team: the case was described as `fn: list of length 7, synchronize: int`."""
    message = grading.check("10_performance.median_time", lambda *a, **k: None, seed=1).text()
    assert "warmup=2, repeats=5" in message and "list of length" not in message, message


def test_hints_give_ideas_and_leave_the_code_to_the_solution():
    """red team: the last hints of to_device, shard_indices and data_parallel_grads were code. Hints go
    nudge -> idea; only `solution()` shows code. Code here: a backticked span with a call that has
    arguments, an index, an assignment or a loop (a bare method name such as `.modules()` is not)."""
    code = __import__("re").compile(r"`[^`]*(\([^)`]|\[|=| for )[^`]*`")
    for exercise_id in grading.exercises():
        if exercise_id.startswith(LESSON + "."):
            for hint in grading.exercise(exercise_id).hints:
                assert not code.search(hint), (exercise_id, hint)


def test_grader_threads_are_restored():
    before = torch.get_num_threads()
    check("amp_train_step", M_AMP.amp_train_step)
    check("amp_train_step", lambda *a: 1 / 0)
    assert torch.get_num_threads() == before


# --------------------------------------------------------------------------- the instructor's sandbox
# ########################################################################### adversarial review
# Each test feeds the grader an answer that violates the exercise text and asserts it is rejected
# (naming the mistake where a name fits), or a correct answer written differently from the
# reference and asserts it is accepted.
# =========================================================================== 10 to_device
D = "10_performance."


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


# =========================================================================== 10 checkpointed_forward
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
            x = block.forward(x) if _updates_stats(block) else ckpt(block.forward, x)
        return x

    accepted(D + "checkpointed_forward", with_partial)


# ########################################################################### red team (issue 11)
# For every exercise: at least five wrong answers a learner would plausibly write (real learner
# code, not mutants of the reference), three valid but unusual answers, and two cheats (answers
# that special-case what the grader shows, or objects that lie to duck-typed checks). Every
# verdict must hold for several seeds (``rejected``/``accepted`` try each of them). Grouped per
# exercise in ``WRONG[exercise] = [(answer, mistake or None)]``, ``VALID`` and ``CHEATS``.
_tables = Tables()  # tests/lesson_kit.py
WRONG, VALID, CHEATS = _tables.WRONG, _tables.VALID, _tables.CHEATS
wrong, valid, cheat = _tables.wrong, _tables.valid, _tables.cheat


# =========================================================================== 10 to_device
TD = "10_performance.to_device"


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


# =========================================================================== 10 median_time
MT = "10_performance.median_time"


def _mt(fn, synchronize, warmup=2, repeats=5, *, sync_before=True, sync_after=True, warm=True, pick="median",
        clock=None):
    for _ in range(warmup if warm else 0):
        fn()
    times = []
    for _ in range(repeats):
        if sync_before:
            synchronize()
        start = (clock or time.perf_counter)()
        fn()
        if sync_after:
            synchronize()
        times.append((clock or time.perf_counter)() - start)
    if pick == "mean":
        return sum(times) / len(times)
    if pick == "lower":
        return sorted(times)[(len(times) - 1) // 2]
    return statistics.median(times)


@wrong(MT, "clock_not_synchronized")
def mt_no_sync(fn, synchronize, warmup=2, repeats=5):
    return _mt(fn, synchronize, warmup, repeats, sync_before=False, sync_after=False)


@wrong(MT, "clock_not_synchronized")
def mt_sync_after_only(fn, synchronize, warmup=2, repeats=5):
    """Synchronizes after each call, but the first reading still sees the warm-up's queued work."""
    return _mt(fn, synchronize, warmup, repeats, sync_before=False)


@wrong(MT, "no_warmup")
def mt_no_warmup(fn, synchronize, warmup=2, repeats=5):
    return _mt(fn, synchronize, warmup, repeats, warm=False)


@wrong(MT, "mean_not_median")
def mt_mean(fn, synchronize, warmup=2, repeats=5):
    return _mt(fn, synchronize, warmup, repeats, pick="mean")


@wrong(MT, "even_median")
def mt_upper_middle(fn, synchronize, warmup=2, repeats=5):
    """red team: the middle element of the sorted list, which for an even count is not the median."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        synchronize()
        start = time.perf_counter()
        fn()
        synchronize()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


@wrong(MT, "even_median")
def mt_torch_median(fn, synchronize, warmup=2, repeats=5):
    """red team: `torch.median` returns the lower of the two middle values."""
    return _mt(fn, synchronize, warmup, repeats, pick="lower")


@wrong(MT, "call_count")
def mt_always_one_warmup(fn, synchronize, warmup=2, repeats=5):
    """red team: always warms up at least once, also for warmup=0."""
    return _mt(fn, synchronize, max(warmup, 1), repeats)


@wrong(MT)
def mt_warmup_timed_too(fn, synchronize, warmup=2, repeats=5):
    times = []
    for _ in range(warmup + repeats):
        synchronize()
        start = time.perf_counter()
        fn()
        synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@wrong(MT, "total_time")
def mt_total(fn, synchronize, warmup=2, repeats=5):
    for _ in range(warmup):
        fn()
    synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    synchronize()
    return time.perf_counter() - start


@valid(MT)
def mt_sync_once_after_warmup(fn, synchronize, warmup=2, repeats=5):
    """One synchronize after the warm-up, then one after each call: every reading is still honest."""
    for _ in range(warmup):
        fn()
    synchronize()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        synchronize()
        times.append(time.perf_counter() - start)
    return float(torch.tensor(times, dtype=torch.float64).quantile(0.5))  # not .median(): the lower middle


@valid(MT)
def mt_timeit_clock(fn, synchronize, warmup=2, repeats=5):
    import timeit
    return _mt(fn, synchronize, warmup, repeats, clock=timeit.default_timer)


@valid(MT)
def mt_imported_clock(fn, synchronize, warmup=2, repeats=5):
    """`from time import perf_counter`: a name bound before the check replaces the clock."""
    return _mt(fn, synchronize, warmup, repeats, clock=lambda: perf_counter())


@valid(MT)
def mt_ns_clock(fn, synchronize, warmup=2, repeats=5):
    for _ in range(warmup):
        fn()
    durations = []
    for _ in range(repeats):
        synchronize()
        t0 = time.perf_counter_ns()
        fn()
        synchronize()
        durations.append((time.perf_counter_ns() - t0) / 1e9)
    return statistics.median(durations)


@cheat(MT)
def mt_guesses(fn, synchronize, warmup=2, repeats=5):
    """Calls fn the right number of times, honestly synchronized, and returns a typical number."""
    _mt(fn, synchronize, warmup, repeats)
    return 0.005


@cheat(MT)
def mt_own_clock(fn, synchronize, warmup=2, repeats=5):
    """Reads a clock the check cannot see (the thread's CPU time), which misses the device's work."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        synchronize()
        start = time.thread_time()
        fn()
        synchronize()
        times.append(time.thread_time() - start)
    return statistics.median(times)


# =========================================================================== 10 amp_policy
AP = "10_performance.amp_policy"


@wrong(AP, "cuda_default_dtype")
def ap_default_dtype(device_type, bf16_supported):
    if device_type not in ("cpu", "cuda"):
        raise ValueError(device_type)
    dtype = torch.get_autocast_dtype(device_type)
    return dtype, dtype == torch.float16


@wrong(AP, "cpu_float16")
def ap_follows_flag_everywhere(device_type, bf16_supported):
    if device_type not in ("cpu", "cuda"):
        raise ValueError(device_type)
    return (torch.bfloat16, False) if bf16_supported else (torch.float16, True)


@wrong(AP, "cpu_emulated_bf16")
def ap_cpu_default_everywhere(device_type, bf16_supported):
    """The lesson's first policy: the CPU's autocast default whatever the CPU has."""
    if device_type == "cpu":
        return torch.bfloat16, False
    if device_type == "cuda":
        return (torch.bfloat16, False) if bf16_supported else (torch.float16, True)
    raise ValueError(device_type)


@wrong(AP, "old_gpu_float32")
def ap_float32_without_bf16(device_type, bf16_supported):
    if device_type not in ("cpu", "cuda"):
        raise ValueError(device_type)
    return (torch.bfloat16, False) if bf16_supported else (torch.float32, False)


@wrong(AP, "scaler_with_bf16")
def ap_always_scaler(device_type, bf16_supported):
    if device_type not in ("cpu", "cuda"):
        raise ValueError(device_type)
    if not bf16_supported:
        return (torch.float16, True) if device_type == "cuda" else (torch.float32, False)
    return torch.bfloat16, True


@wrong(AP, "float16_without_scaler")
def ap_never_scaler(device_type, bf16_supported):
    if device_type not in ("cpu", "cuda"):
        raise ValueError(device_type)
    if bf16_supported:
        return torch.bfloat16, False
    return (torch.float16 if device_type == "cuda" else torch.float32), False


@wrong(AP, "unknown_device")
def ap_guesses_unknown(device_type, bf16_supported):
    if bf16_supported:
        return torch.bfloat16, False
    return (torch.float16, True) if device_type == "cuda" else (torch.float32, False)


@wrong(AP, "unknown_device")
def ap_wrong_error_for_unknown(device_type, bf16_supported):
    table = {"cpu": (torch.float32, False), "cuda": (torch.float16, True)}
    if bf16_supported and device_type in table:
        return torch.bfloat16, False
    return table[device_type]  # KeyError, not ValueError


@wrong(AP)
def ap_float16_everywhere_on_gpu(device_type, bf16_supported):
    if device_type == "cpu":
        return (torch.bfloat16, False) if bf16_supported else (torch.float32, False)
    if device_type == "cuda":
        return torch.float16, True
    raise ValueError(device_type)


@valid(AP)
def ap_table(device_type, bf16_supported):
    table = {("cpu", True): (torch.bfloat16, False), ("cpu", False): (torch.float32, False),
             ("cuda", True): (torch.bfloat16, False), ("cuda", False): (torch.float16, True)}
    try:
        return table[(device_type, bool(bf16_supported))]
    except KeyError:
        raise ValueError(f"unknown device {device_type}") from None


@valid(AP)
def ap_match(device_type, bf16_supported):
    match device_type:
        case "cpu" | "cuda" if bf16_supported:
            dtype = torch.bfloat16
        case "cuda":
            dtype = torch.float16
        case "cpu":
            dtype = torch.float32
        case _:
            raise ValueError(device_type)
    return dtype, dtype is torch.float16


@valid(AP)
def ap_numpy_bool_scaler(device_type, bf16_supported):
    if device_type not in {"cpu", "cuda"}:
        raise ValueError("cpu or cuda only")
    use_fp16 = device_type == "cuda" and not bf16_supported
    dtype = torch.bfloat16 if bf16_supported else (torch.float16 if use_fp16 else torch.float32)
    return dtype, np.bool_(use_fp16)


@valid(AP)
def ap_list_pair(device_type, bf16_supported):
    """A list where a pair is asked for reads the same (issue 27: arguable readings of the text)."""
    if device_type not in ("cpu", "cuda"):
        raise ValueError(device_type)
    if bf16_supported:
        return [torch.bfloat16, False]
    return [torch.float16, True] if device_type == "cuda" else [torch.float32, False]


@cheat(AP)
def ap_string_dtype(device_type, bf16_supported):
    if device_type not in ("cpu", "cuda"):
        raise ValueError(device_type)
    fp16 = device_type == "cuda" and not bf16_supported
    return ("torch.float16" if fp16 else "torch.bfloat16"), fp16


@cheat(AP)
def ap_lying_pair(device_type, bf16_supported):
    class Anything(tuple):
        def __eq__(self, other):
            return True
    if device_type not in ("cpu", "cuda"):
        raise ValueError(device_type)
    return Anything((torch.float32, None))


# =========================================================================== 10 amp_train_step
AMP = "10_performance.amp_train_step"


def _amp(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0, *, device_type=None, zero=True,
         inside_backward=False, unscale=True, clip=True, through_scaler=True, fixed_dtype=None):
    if zero:
        optimizer.zero_grad()
    with torch.autocast(device_type=device_type or X.device.type, dtype=fixed_dtype or dtype):
        loss = loss_fn(model(X), y)
        if inside_backward:
            (scaler.scale(loss) if scaler is not None else loss).backward()
    if not inside_backward:
        (scaler.scale(loss) if scaler is not None else loss).backward()
    if scaler is not None and unscale:
        scaler.unscale_(optimizer)
    if clip:
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    if scaler is not None and through_scaler:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()
    return loss.item()


@wrong(AMP, "hard_coded_device")
def amp_cpu_hard_coded(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0):
    return _amp(model, X, y, loss_fn, optimizer, dtype, scaler, max_norm, device_type="cpu")


from torch import autocast  # noqa: E402 - at module level, as in many tutorials: the next row calls this name


@wrong(AMP, "hard_coded_device")
def amp_cpu_hard_coded_with_autocast_imported_by_name(model, X, y, loss_fn, optimizer, dtype, scaler=None,
                                                      max_norm=1.0):
    """red team: `from torch import autocast` escaped a probe that swapped only `torch.autocast`."""
    optimizer.zero_grad()
    with autocast("cpu", dtype=dtype):
        loss = loss_fn(model(X), y)
    if scaler is None:
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
    else:
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        scaler.step(optimizer)
        scaler.update()
    return loss.item()


@valid(AMP)
def amp_autocast_imported_by_name(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0):
    """The module-level `autocast` name with the batch's device type: the probe patches the class, not names."""
    optimizer.zero_grad()
    with autocast(X.device.type, dtype=dtype):
        loss = loss_fn(model(X), y)
    (scaler.scale(loss) if scaler is not None else loss).backward()
    if scaler is not None:
        scaler.unscale_(optimizer)
    nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    if scaler is not None:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()
    return loss.item()


@wrong(AMP, "forgot_zero_grad")
def amp_no_zero_grad(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0):
    return _amp(model, X, y, loss_fn, optimizer, dtype, scaler, max_norm, zero=False)


@wrong(AMP, "cast_model")
def amp_model_to_dtype(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0):
    model.to(dtype)
    optimizer.zero_grad()
    loss = loss_fn(model(X.to(dtype)), y)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item()


@wrong(AMP, "ignored_dtype")
def amp_always_bfloat16(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0):
    return _amp(model, X, y, loss_fn, optimizer, dtype, scaler, max_norm, fixed_dtype=torch.bfloat16)


@wrong(AMP, "clipped_scaled_gradients")
def amp_clip_before_unscale(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0):
    return _amp(model, X, y, loss_fn, optimizer, dtype, scaler, max_norm, unscale=False)


@wrong(AMP, "no_clipping")
def amp_no_clip(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0):
    return _amp(model, X, y, loss_fn, optimizer, dtype, scaler, max_norm, clip=False)


@wrong(AMP, "optimizer_step_past_scaler")
def amp_optimizer_step_with_scaler(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0):
    return _amp(model, X, y, loss_fn, optimizer, dtype, scaler, max_norm, through_scaler=False)


@wrong(AMP, "scaler_ignored")
def amp_ignores_scaler(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0):
    return _amp(model, X, y, loss_fn, optimizer, dtype, None, max_norm)


@wrong(AMP, "no_autocast")
def amp_no_autocast(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0):
    optimizer.zero_grad()
    loss = loss_fn(model(X), y)
    (scaler.scale(loss) if scaler is not None else loss).backward()
    if scaler is not None:
        scaler.unscale_(optimizer)
    nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    if scaler is not None:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()
    return loss.item()


@wrong(AMP, "loss_outside_autocast")
def amp_loss_outside(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0):
    optimizer.zero_grad()
    with torch.autocast(X.device.type, dtype=dtype):
        logits = model(X)
    loss = loss_fn(logits, y)
    (scaler.scale(loss) if scaler is not None else loss).backward()
    if scaler is not None:
        scaler.unscale_(optimizer)
    nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    if scaler is not None:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()
    return loss.item()


@valid(AMP)
def amp_backward_inside(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0):
    """backward inside the autocast block: discouraged, but the same step."""
    return _amp(model, X, y, loss_fn, optimizer, dtype, scaler, max_norm, inside_backward=True)


@valid(AMP)
def amp_scaler_disabled_when_absent(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0):
    """A disabled GradScaler stands in when none is given: its methods pass through."""
    scaler = scaler if scaler is not None else torch.amp.GradScaler(X.device.type, enabled=False)
    model.zero_grad(set_to_none=True)
    with torch.amp.autocast(X.device.type, dtype=dtype, enabled=True):
        loss = loss_fn(model(X), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(list(model.parameters()), max_norm=max_norm)
    scaler.step(optimizer)
    scaler.update()
    return float(loss)


@valid(AMP)
def amp_clip_by_hand(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0):
    """Clipping written out; the device taken from the model's parameters."""
    device_type = next(model.parameters()).device.type
    optimizer.zero_grad()
    with torch.autocast(device_type, dtype):
        out = model(X)
        loss = loss_fn(out, y)
    if scaler is None:
        loss.backward()
    else:
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    factor = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    for g in grads:
        g.mul_(factor)
    if scaler is None:
        optimizer.step()
    else:
        scaler.step(optimizer)
        scaler.update()
    return loss.detach().item()


@cheat(AMP)
def amp_fakes_the_dtype(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0):
    """A float32 step whose input is rounded through the low-precision dtype (looks like its numbers)."""
    optimizer.zero_grad()
    loss = loss_fn(model(X.to(dtype).float()), y)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item()


@cheat(AMP)
def amp_reports_the_loss_only(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0):
    with torch.no_grad(), torch.autocast(device_type=X.device.type, dtype=dtype):
        return loss_fn(model(X), y).item()


# =========================================================================== 10 checkpointed_forward
CF = "10_performance.checkpointed_forward"
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
        stateful = b.training and any(type(m).__name__.startswith("BatchNorm") for m in b.modules())
        out = b(out) if stateful else _checkpoint(functools.partial(b.forward), out, use_reentrant=False)
    return out


@valid(CF)
def ckpt_default_lambda_arg(blocks, x):
    for b in blocks:
        if any(isinstance(m, nn.BatchNorm1d) for m in b.modules()) and b.training:
            x = b(x)
        else:
            x = _checkpoint(lambda t, b=b: b(t), x, use_reentrant=False, preserve_rng_state=False)
    return x


@valid(CF)
def ckpt_sequential_one_block_per_segment(blocks, x):
    h = x
    for i in range(len(blocks)):
        if not _updates_stats(blocks[i]):
            h = _checkpoint(blocks[i], h, use_reentrant=False, determinism_check="default")
        else:
            h = blocks[i](h)
    return h


@wrong(CF, "checkpointed_batchnorm")
def ckpt_every_block(blocks, x):
    """The old exercise's answer: every block, BatchNorm in training mode included."""
    for b in blocks:
        x = _checkpoint(b, x, use_reentrant=False)
    return x


@wrong(CF, "not_checkpointed")
def ckpt_never_batchnorm(blocks, x):
    """Skips BatchNorm blocks in eval mode too, where they only read their statistics."""
    for b in blocks:
        has_bn = any(isinstance(m, nn.BatchNorm1d) for m in b.modules())
        x = b(x) if has_bn else _checkpoint(b, x, use_reentrant=False)
    return x


@wrong(CF, "checkpointed_batchnorm")
def ckpt_isinstance_on_the_block(blocks, x):
    """Tests the block itself (a Sequential), never the layers inside it."""
    for b in blocks:
        x = b(x) if isinstance(b, nn.BatchNorm1d) and b.training else _checkpoint(b, x, use_reentrant=False)
    return x


@wrong(CF, "not_checkpointed")
def ckpt_nothing_in_training(blocks, x):
    """Checkpoints only in eval mode: in training mode nothing is saved."""
    for b in blocks:
        x = b(x) if b.training else _checkpoint(b, x, use_reentrant=False)
    return x


@wrong(CF, "checkpointed_batchnorm")
def ckpt_batchnorm_in_no_grad_first(blocks, x):
    """Checkpoints BatchNorm blocks after a no_grad warm-up pass: the statistics update even more often."""
    for b in blocks:
        if _updates_stats(b):
            with torch.no_grad():
                b(x)
        x = _checkpoint(b, x, use_reentrant=False)
    return x


@wrong(CF, "not_checkpointed")
def ckpt_by_block_layout(blocks, x):
    """red team: "3 layers = BatchNorm" held while every grader block was [Linear, BatchNorm1d, Tanh]."""
    for b in blocks:
        x = b(x) if len(b) == 3 and b.training else _checkpoint(b, x, use_reentrant=False)
    return x


@wrong(CF, "not_checkpointed")
def ckpt_by_the_stacks_flag(blocks, x):
    """red team: the ModuleList's own training flag stood in for each BatchNorm's."""
    for b in blocks:
        has_bn = any(isinstance(m, nn.BatchNorm1d) for m in b.modules())
        x = b(x) if has_bn and blocks.training else _checkpoint(b, x, use_reentrant=False)
    return x


@wrong(CF, "not_checkpointed")
def ckpt_any_norm_layer(blocks, x):
    """red team: a LayerNorm keeps no running statistics: its block can be checkpointed."""
    for b in blocks:
        norm = any("Norm" in type(m).__name__ and m.training for m in b.modules())
        x = b(x) if norm else _checkpoint(b, x, use_reentrant=False)
    return x


@wrong(CF, "grad_left_off")
def ckpt_grad_left_off(blocks, x):
    """red team: was told "kept 960 bytes of activations": the reference was measured with grad off."""
    for b in blocks:
        stateful = any(isinstance(m, nn.BatchNorm1d) and m.training for m in b.modules())
        x = b(x) if stateful else _checkpoint(b, x, use_reentrant=False)
    torch.set_grad_enabled(False)
    return x


@wrong(CF, "not_the_output")
def ckpt_no_return(blocks, x):
    """red team: was told "Your result has 2 items; it should have 3"."""
    for b in blocks:
        x = _checkpoint(b, x, use_reentrant=False)


@wrong(CF, "not_the_output")
def ckpt_flattened(blocks, x):
    for b in blocks:
        stateful = any(isinstance(m, nn.BatchNorm1d) and m.training for m in b.modules())
        x = b(x) if stateful else _checkpoint(b, x, use_reentrant=False)
    return x.flatten()


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


@wrong("10_performance.amp_train_step", "mutated_input")
def amp_step_sets_reduction(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0):
    """A review's answer: it summed the loss through the caller's ``loss_fn.reduction`` and
    divided, and passed; the caller's loss stayed summing for the rest of training."""
    loss_fn.reduction = "sum"
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(X.device.type, dtype=dtype):
        loss = loss_fn(model(X), y) / len(y)
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
    return loss.item()


# --------------------------------------------------------------------------- the red team's tests
(test_wrong_answer_is_rejected, test_valid_answer_is_accepted, test_cheat_is_rejected,
 test_every_exercise_has_its_red_team) = _tables.red_team_tests(LESSON)  # tests/lesson_kit.py


# ########################################################################### oracles (issue 11)
# Each reference compared with a torch built-in that computes the same thing another way, across
# the exercise's whole case generator (many seeds) and its fixed edge cases.
def _cases(exercise_id, seeds):
    return fixed_and_random_cases(exercise_id, seeds)


def test_to_device_matches_pytree_map():
    from torch.utils._pytree import tree_flatten, tree_map

    ref = grading.reference("10_performance.to_device")
    for case in _cases("10_performance.to_device", range(100)):
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



def test_checkpointed_forward_matches_a_plain_forward_and_its_gradients():
    ref = grading.reference("10_performance.checkpointed_forward")
    for case in _cases("10_performance.checkpointed_forward", range(30)):
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


def test_the_message_names_the_callers_loss_left_changed():
    from grading_asserts import rejected

    assert "`loss_fn`" in rejected("10_performance.amp_train_step", amp_step_sets_reduction, seeds=[1]).message
