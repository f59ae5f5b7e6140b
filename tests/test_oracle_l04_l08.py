"""Independent oracles for the lesson 04-08 references (issue 11).

Each reference is compared with a torch / NumPy / scikit-learn built-in that computes the same
thing another way, across the exercise's whole case generator (many seeds) and its fixed edge
cases. A reference that disagrees with its own text shows up here even when no learner answer
ever reaches the input that exposes it.
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from course_utils import grading
from course_utils.grading import Rand

SEEDS = range(60)


def _cases(exercise_id, seeds=SEEDS):
    ex = grading.exercise(exercise_id)
    out = list(ex.edge_cases)
    if ex.cases is not None:
        out += [ex.cases(Rand(s)) for s in seeds]
    return out


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


# --------------------------------------------------------------------------- 07
def test_load_state_dict_cpu_matches_torch_consume_prefix_helper(tmp_path):
    from course_utils.exercises.l07_persistence import _run_cpu

    ref = grading.reference("07_persistence.load_state_dict_cpu")

    def oracle(path):
        sd = torch.load(path, map_location="cpu", weights_only=True)
        torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(sd, "module.")
        return sd

    for case in _cases("07_persistence.load_state_dict_cpu", range(40)):
        mine, theirs = _run_cpu(ref, case), _run_cpu(oracle, case)
        assert sorted(mine) == sorted(k for k in theirs if k != "_metadata")  # the helper reorders keys
        assert all(torch.equal(mine[k], theirs[k]) and mine[k].device.type == "cpu" for k in mine)


def test_load_matching_agrees_with_what_load_state_dict_reports_missing():
    from course_utils.exercises.l07_persistence import _run_matching

    ref = grading.reference("07_persistence.load_matching")
    for case in _cases("07_persistence.load_matching", range(40)):
        model, state_dict = case.args
        own = {k: v.shape for k, v in model.state_dict().items()}
        skipped, after = _run_matching(ref, copy.deepcopy(case))
        # oracle: torch's own bookkeeping of a non-strict load of the shape-matching entries
        twin = copy.deepcopy(model)
        result = twin.load_state_dict({k: v for k, v in state_dict.items() if k in own and v.shape == own[k]},
                                      strict=False)
        assert skipped == sorted(result.missing_keys)
        assert all(torch.equal(after[k], v) for k, v in twin.state_dict().items())


# --------------------------------------------------------------------------- 06
def test_to_device_matches_pytree_map():
    from torch.utils._pytree import tree_flatten, tree_map

    ref = grading.reference("06_gpu_amp_ddp.to_device")
    for case in _cases("06_gpu_amp_ddp.to_device", range(100)):
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

    ref = grading.reference("06_gpu_amp_ddp.shard_indices")
    for case in _cases("06_gpu_amp_ddp.shard_indices", range(300)):
        n, world_size, rank, epoch = case.args
        sampler = DistributedSampler(range(n), num_replicas=world_size, rank=rank, **case.kwargs)
        sampler.set_epoch(epoch)
        assert ref(n, world_size, rank, epoch, **case.kwargs) == list(sampler)


def test_data_parallel_grads_equal_the_full_batch_gradient():
    ref = grading.reference("06_gpu_amp_ddp.data_parallel_grads")
    for case in _cases("06_gpu_amp_ddp.data_parallel_grads", range(60)):
        model, loss_fn, X, y, world_size = copy.deepcopy(case.args)
        got = ref(model, loss_fn, X, y, world_size)
        full = torch.autograd.grad(loss_fn(model(X), y), list(model.parameters()))
        for a, b in zip(got, full):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_checkpointed_forward_matches_a_plain_forward_and_its_gradients():
    ref = grading.reference("06_gpu_amp_ddp.checkpointed_forward")
    for case in _cases("06_gpu_amp_ddp.checkpointed_forward", range(30)):
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
