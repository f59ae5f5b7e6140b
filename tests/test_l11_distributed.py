"""Lesson 11 (distributed training), every test of its own in one file: the sharding helpers and
CountingDDP, the claims the lesson makes (DistributedSampler's rule, DDP's averaged gradients equal
the big-batch gradient, rescaled unequal shards too, merged statistics equal the pooled ones),
correct answers written differently from the reference, the behavioural diagnoses the generic
tests cannot see; then the adversarial review, the red team (wrong answers, valid unusual answers,
cheats) and the oracles (issue 11).
The contract tests shared by every exercise are in tests/test_exercises.py."""

from __future__ import annotations

import contextlib
import copy
import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DistributedSampler  # noqa: E402

from course_utils import grading  # noqa: E402
from course_utils.lesson_props.l11_distributed import CountingDDP, plot_shards, shard_assignment  # noqa: E402
from course_utils.exercises.l11_distributed import data_parallel_grads as M_DP  # noqa: E402
from course_utils.exercises.l11_distributed import shard_indices as M_SH  # noqa: E402
from course_utils.grading import Rand  # noqa: E402

from grading_asserts import accepted, rejected  # noqa: E402 (tests/ is on sys.path)
from lesson_kit import Tables, fixed_and_random_cases  # noqa: E402

LESSON = "11_distributed"


def check(name, answer, seed=7, n_random=None):
    return grading.check(f"{LESSON}.{name}", answer, seed=seed, n_random=n_random)

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


def test_hints_give_ideas_and_leave_the_code_to_the_solution():
    """red team: the last hints of to_device, shard_indices and data_parallel_grads were code. Hints go
    nudge -> idea; only `solution()` shows code. Code here: a backticked span with a call that has
    arguments, an index, an assignment or a loop (a bare method name such as `.modules()` is not)."""
    code = __import__("re").compile(r"`[^`]*(\([^)`]|\[|=| for )[^`]*`")
    for exercise_id in grading.exercises():
        if exercise_id.startswith(LESSON + "."):
            for hint in grading.exercise(exercise_id).hints:
                assert not code.search(hint), (exercise_id, hint)


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


def test_counting_ddp_counts_one_all_reduce_per_synced_backward_pass():
    ddp = CountingDDP(nn.Linear(3, 2))
    X = torch.randn(4, 3)
    ddp(X).sum().backward()
    assert ddp.all_reduces == 1
    with ddp.no_sync():
        ddp(X).sum().backward()
        out = ddp(X)
    out.sum().backward()  # forward inside no_sync: DDP decided then, no all-reduce
    assert ddp.all_reduces == 1 and ddp.require_backward_grad_sync
    (ddp(X).sum() + ddp(X).sum()).backward()  # two synced forwards, one backward pass: one all-reduce
    assert ddp.all_reduces == 2
    with torch.no_grad():
        ddp(X)
    assert len(ddp.backward_log) == 5


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



# --------------------------------------------------------------------------- the instructor's sandbox
# ########################################################################### adversarial review
# Each test feeds the grader an answer that violates the exercise text and asserts it is rejected
# (naming the mistake where a name fits), or a correct answer written differently from the
# reference and asserts it is accepted.
D = "11_distributed."


# =========================================================================== 11 shard_indices
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


# =========================================================================== 11 data_parallel_grads
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


# =========================================================================== 11 shard_indices
SH = "11_distributed.shard_indices"


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


# =========================================================================== 11 data_parallel_grads
DP = "11_distributed.data_parallel_grads"


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


# =========================================================================== 11 rank_loss_scale
RS = "11_distributed.rank_loss_scale"


@wrong(RS, "no_rescaling")
def rs_all_ones(shard_sizes):
    return [1.0 for _ in shard_sizes]


@wrong(RS, "forgot_ddp_average")
def rs_share_of_samples(shard_sizes):
    total = sum(shard_sizes)
    return [n / total for n in shard_sizes]


@wrong(RS, "inverted")
def rs_inverted(shard_sizes):
    return [sum(shard_sizes) / (len(shard_sizes) * n) for n in shard_sizes]


@wrong(RS)
def rs_relative_to_largest(shard_sizes):
    return [n / max(shard_sizes) for n in shard_sizes]


@wrong(RS)
def rs_relative_to_mean_integer(shard_sizes):
    mean = sum(shard_sizes) // len(shard_sizes)  # integer division: wrong whenever it does not divide
    return [n / mean for n in shard_sizes]


@wrong(RS, "count_only")
def rs_counts(shard_sizes):
    return [float(n) for n in shard_sizes]


@valid(RS)
def rs_tensor_math(shard_sizes):
    n = torch.tensor(shard_sizes, dtype=torch.float64)
    return (n * len(n) / n.sum()).tolist()


@valid(RS)
def rs_relative_to_mean(shard_sizes):
    mean = sum(shard_sizes) / len(shard_sizes)
    return [n / mean for n in shard_sizes]


@valid(RS)
def rs_tuple_of_fractions(shard_sizes):
    from fractions import Fraction
    return tuple(float(Fraction(len(shard_sizes) * n, sum(shard_sizes))) for n in shard_sizes)


@cheat(RS)
def rs_equal_shards_only(shard_sizes):
    """Right only for the shown cases' shapes: equal shards and one rank."""
    return [1.0] * len(shard_sizes) if len(set(shard_sizes)) == 1 else [0.0] * len(shard_sizes)


@cheat(RS)
def rs_lying_list(shard_sizes):
    class Always(list):
        def __eq__(self, other):
            return True
    return Always([1.0] * len(shard_sizes))


# =========================================================================== 11 accumulate_grads
AG = "11_distributed.accumulate_grads"


def _ag(ddp_model, micro_batches, loss_fn, *, sync="last", divide=True, zero="first", grad_inside=True):
    if zero == "first":
        ddp_model.zero_grad()
    k = len(micro_batches)
    for i, (X, y) in enumerate(micro_batches):
        if zero == "each":
            ddp_model.zero_grad()
        synced = sync == "all" or (sync == "last" and i == k - 1) or (sync == "first" and i == 0)
        ctx = contextlib.nullcontext() if synced else ddp_model.no_sync()
        with ctx:
            loss = loss_fn(ddp_model(X), y)
            if grad_inside:
                (loss / k if divide else loss).backward()
        if not grad_inside:
            (loss / k if divide else loss).backward()


@wrong(AG, "synced_every_micro_batch")
def ag_no_no_sync(ddp_model, micro_batches, loss_fn):
    _ag(ddp_model, micro_batches, loss_fn, sync="all")


@wrong(AG, "never_synced")
def ag_all_in_no_sync(ddp_model, micro_batches, loss_fn):
    _ag(ddp_model, micro_batches, loss_fn, sync="none")


@wrong(AG, "never_synced")
def ag_backward_outside_no_sync_for_all(ddp_model, micro_batches, loss_fn):
    """Forward in no_sync, backward outside: DDP decided at the forward, so nothing syncs."""
    _ag(ddp_model, micro_batches, loss_fn, sync="none", grad_inside=False)


@wrong(AG, "no_backward")
def ag_runs_nothing(ddp_model, micro_batches, loss_fn):
    """red team: was told "every forward ran inside no_sync()" although nothing ran."""
    return None


@wrong(AG, "no_backward")
def ag_through_the_module(ddp_model, micro_batches, loss_fn):
    """red team: the wrapped module, never the wrapper: DDP takes no part."""
    ddp_model.zero_grad()
    for X, y in micro_batches:
        (loss_fn(ddp_model.module(X), y) / len(micro_batches)).backward()


@wrong(AG, "not_divided")
def ag_sum_of_means(ddp_model, micro_batches, loss_fn):
    _ag(ddp_model, micro_batches, loss_fn, divide=False)


@wrong(AG, "zeroed_between")
def ag_zero_each(ddp_model, micro_batches, loss_fn):
    _ag(ddp_model, micro_batches, loss_fn, zero="each")


@wrong(AG, "kept_stale_grads")
def ag_no_zero(ddp_model, micro_batches, loss_fn):
    _ag(ddp_model, micro_batches, loss_fn, zero="none")


@wrong(AG, "one_backward")
def ag_one_backward(ddp_model, micro_batches, loss_fn):
    ddp_model.zero_grad()
    losses = [loss_fn(ddp_model(X), y) for X, y in micro_batches]
    torch.stack(losses).mean().backward()


@wrong(AG, "synced_too_early")
def ag_synced_first(ddp_model, micro_batches, loss_fn):
    """Syncs the FIRST micro-batch: the later ones are never averaged across ranks."""
    _ag(ddp_model, micro_batches, loss_fn, sync="first")


@valid(AG)
def ag_backward_inside_only_forward_in_no_sync(ddp_model, micro_batches, loss_fn):
    """Forward inside no_sync, backward after it: DDP decides at the forward, so this is fine."""
    _ag(ddp_model, micro_batches, loss_fn, grad_inside=False)


@valid(AG)
def ag_exit_stack(ddp_model, micro_batches, loss_fn):
    for p in ddp_model.parameters():
        p.grad = None
    *head, last = micro_batches
    k = len(micro_batches)
    with contextlib.ExitStack() as stack:
        stack.enter_context(ddp_model.no_sync())
        for X, y in head:
            (loss_fn(ddp_model(X), y) * (1 / k)).backward()
    X, y = last
    (loss_fn(ddp_model(X), y) / k).backward()


@valid(AG)
def ag_weighted_by_size(ddp_model, micro_batches, loss_fn):
    ddp_model.zero_grad(set_to_none=False)
    total = sum(len(y) for _, y in micro_batches)
    for i, (X, y) in enumerate(micro_batches):
        ctx = ddp_model.no_sync() if i < len(micro_batches) - 1 else contextlib.nullcontext()
        with ctx:
            (nn.functional.cross_entropy(ddp_model(X), y, reduction="sum") / total).backward()


@cheat(AG)
def ag_sets_grads_directly(ddp_model, micro_batches, loss_fn):
    """Computes the big-batch gradient on the side and writes it into .grad: no all-reduce at all."""
    X = torch.cat([x for x, _ in micro_batches])
    y = torch.cat([t for _, t in micro_batches])
    module = ddp_model.module
    grads = torch.autograd.grad(loss_fn(module(X), y), list(module.parameters()))
    for p, g in zip(module.parameters(), grads):
        p.grad = g


@cheat(AG)
def ag_fakes_the_log(ddp_model, micro_batches, loss_fn):
    """Accumulates without syncing, then forges one synced entry in the counter."""
    _ag(ddp_model, micro_batches, loss_fn, sync="none")
    ddp_model.backward_log.append((-1, True))


# =========================================================================== 11 merge_batch_stats
MB = "11_distributed.merge_batch_stats"


@wrong(MB, "unweighted_mean")
def mb_unweighted(counts, means, variances):
    return means.mean(0), variances.mean(0)


@wrong(MB, "within_only")
def mb_within_only(counts, means, variances):
    w = torch.tensor(counts, dtype=means.dtype)[:, None]
    return (w * means).sum(0) / w.sum(), (w * variances).sum(0) / w.sum()


@wrong(MB, "unbiased")
def mb_unbiased(counts, means, variances):
    n = torch.tensor(counts, dtype=means.dtype)[:, None]
    mean = (n * means).sum(0) / n.sum()
    return mean, (n * (variances + (means - mean) ** 2)).sum(0) / (n.sum() - 1)


@wrong(MB)
def mb_weighted_mean_of_std(counts, means, variances):
    n = torch.tensor(counts, dtype=means.dtype)[:, None]
    mean = (n * means).sum(0) / n.sum()
    return mean, ((n * variances.sqrt()).sum(0) / n.sum()) ** 2


@wrong(MB)
def mb_variance_of_means_only(counts, means, variances):
    n = torch.tensor(counts, dtype=means.dtype)[:, None]
    mean = (n * means).sum(0) / n.sum()
    return mean, (n * (means - mean) ** 2).sum(0) / n.sum()


@valid(MB)
def mb_second_moment(counts, means, variances):
    n = torch.tensor(counts, dtype=torch.float64)[:, None]
    m, v = means.double(), variances.double()
    total = n.sum()
    mean = (n * m).sum(0) / total
    ex2 = (n * (v + m**2)).sum(0) / total
    return mean.to(means.dtype), (ex2 - mean**2).to(means.dtype)


@valid(MB)
def mb_pairwise_chan(counts, means, variances):
    """Chan et al.'s pairwise update, one rank at a time."""
    n, mean, m2 = counts[0], means[0].clone(), variances[0] * counts[0]
    for n_b, mean_b, var_b in zip(counts[1:], means[1:], variances[1:]):
        delta = mean_b - mean
        total = n + n_b
        mean = mean + delta * n_b / total
        m2 = m2 + var_b * n_b + delta**2 * n * n_b / total
        n = total
    return mean, m2 / n


@valid(MB)
def mb_list_and_numpy(counts, means, variances):
    c = np.asarray(counts, dtype=np.float64)[:, None]
    m, v = means.numpy().astype(np.float64), variances.numpy().astype(np.float64)
    mean = (c * m).sum(0) / c.sum()
    var = (c * (v + (m - mean) ** 2)).sum(0) / c.sum()
    return [torch.from_numpy(mean).to(means.dtype), torch.from_numpy(var).to(means.dtype)]


@cheat(MB)
def mb_first_rank(counts, means, variances):
    """Right for the 'same samples on every rank' case only."""
    return means[0].clone(), variances[0].clone()


@cheat(MB)
def mb_shown_case_only(counts, means, variances):
    if list(counts) == [2, 1]:
        return torch.tensor([4.0]), torch.tensor([56 / 3 - 16 + 0.0])
    return means.mean(0), variances.mean(0)



# --------------------------------------------------------------------------- the red team's tests
(test_wrong_answer_is_rejected, test_valid_answer_is_accepted, test_cheat_is_rejected,
 test_every_exercise_has_its_red_team) = _tables.red_team_tests(LESSON)  # tests/lesson_kit.py


# ########################################################################### oracles (issue 11)
# Each reference compared with a torch built-in that computes the same thing another way, across
# the exercise's whole case generator (many seeds) and its fixed edge cases.
def _cases(exercise_id, seeds):
    return fixed_and_random_cases(exercise_id, seeds)


def test_shard_indices_matches_distributed_sampler():
    from torch.utils.data import DistributedSampler

    ref = grading.reference("11_distributed.shard_indices")
    for case in _cases("11_distributed.shard_indices", range(300)):
        n, world_size, rank, epoch = case.args
        sampler = DistributedSampler(range(n), num_replicas=world_size, rank=rank, **case.kwargs)
        sampler.set_epoch(epoch)
        assert ref(n, world_size, rank, epoch, **case.kwargs) == list(sampler)


def test_data_parallel_grads_equal_the_full_batch_gradient():
    ref = grading.reference("11_distributed.data_parallel_grads")
    for case in _cases("11_distributed.data_parallel_grads", range(60)):
        model, loss_fn, X, y, world_size = copy.deepcopy(case.args)
        got = ref(model, loss_fn, X, y, world_size)
        full = torch.autograd.grad(loss_fn(model(X), y), list(model.parameters()))
        for a, b in zip(got, full):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)




def test_rank_loss_scale_gives_the_big_batch_gradient():
    from course_utils.exercises.l11_distributed import rank_loss_scale as M_RS

    for seed in range(40):
        r = Rand(seed)
        sizes = [r.integer(1, 9) for _ in range(r.integer(1, 5))]
        averaged, full = M_RS._ddp_gradient(M_RS.rank_loss_scale(sizes), sizes, r)
        for a, b in zip(averaged, full):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_accumulate_grads_equals_the_big_batch_gradient_with_one_all_reduce():
    ref = grading.reference("11_distributed.accumulate_grads")
    for case in _cases("11_distributed.accumulate_grads", range(40)):
        model, micro_batches = copy.deepcopy(case.args)
        ddp = CountingDDP(model)
        ref(ddp, micro_batches, nn.CrossEntropyLoss())
        X, y = torch.cat([x for x, _ in micro_batches]), torch.cat([t for _, t in micro_batches])
        full = torch.autograd.grad(nn.functional.cross_entropy(model(X), y), list(model.parameters()))
        assert ddp.all_reduces == 1
        for p, g in zip(model.parameters(), full):
            torch.testing.assert_close(p.grad, g, rtol=1e-5, atol=1e-6)


def test_merge_batch_stats_equals_the_pooled_statistics():
    ref = grading.reference("11_distributed.merge_batch_stats")
    for seed in range(60):
        r = Rand(seed)
        channels = r.integer(1, 5)
        samples = [r.randn(r.integer(1, 9), channels) * r.uniform(0.5, 3) + r.uniform(-3, 3)
                   for _ in range(r.integer(1, 5))]
        counts = [len(s) for s in samples]
        means = torch.stack([s.mean(0) for s in samples])
        variances = torch.stack([s.var(0, unbiased=False) for s in samples])
        mean, var = ref(counts, means, variances)
        pooled = torch.cat(samples)
        torch.testing.assert_close(mean, pooled.mean(0), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(var, pooled.var(0, unbiased=False), rtol=1e-4, atol=1e-5)
