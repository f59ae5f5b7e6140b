"""rank_loss_scale: the factor each rank multiplies its mean loss by, so that DDP's averaged
gradient equals the whole batch's mean-loss gradient when the shards are unequal.

Subtle: DDP divides by world_size after the all-reduce, and each rank's mean divides by its own
count, so the factor is world_size * n_r / N (1 for every rank only when shards are equal). The
check also trains the factors: the averaged gradient of a simulated DDP step must equal the
full-batch gradient.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON
from ._kit import mlp


# --- reference: the solution notebook's answer, generated from solutions/11_distributed.py
from ...answers.l11_distributed import rank_loss_scale


# --- cases
def _cases(r: Rand) -> Case:
    world_size = r.integer(2, 6)
    return Case(([r.integer(1, 12) for _ in range(world_size)],))


_EDGE = [Case(([3, 3, 3, 1],), label="shards of 3, 3, 3 and 1 (torch.arange(10).chunk(4))", show_inputs=True),
         Case(([4, 4],), label="equal shards", show_inputs=True),
         Case(([7],), label="one rank", show_inputs=True)]


# --- run and probes
def _ddp_gradient(factors, sizes, r: Rand):
    """The gradient DDP would average with these factors, and the full-batch gradient."""
    model = mlp(r, 3, 5, 2)
    X, y = r.randn(sum(sizes), 3), r.randint(0, 2, (sum(sizes),))
    loss_fn = nn.CrossEntropyLoss()
    ranks = []
    for factor, X_r, y_r in zip(factors, X.split(sizes), y.split(sizes)):
        replica = copy.deepcopy(model)
        grads = torch.autograd.grad(loss_fn(replica(X_r), y_r) * factor, list(replica.parameters()))
        ranks.append(grads)
    averaged = [sum(gs) / len(sizes) for gs in zip(*ranks)]
    full = torch.autograd.grad(loss_fn(model(X), y), list(model.parameters()))
    return averaged, full


def _run(answer, case: Case):
    (sizes,) = case.args
    got = answer(list(sizes))
    if isinstance(got, torch.Tensor):
        got = got.tolist()
    if not isinstance(got, (list, tuple)) or len(got) != len(sizes):
        raise Incorrect("not_one_per_rank", got=type(got).__name__, n=len(sizes))
    try:
        factors = [float(f) for f in got]
    except (TypeError, ValueError):
        raise Incorrect("not_one_per_rank", got=type(got).__name__, n=len(sizes)) from None
    return factors


PROBE_SEED = 11_000  # the probe's shards and model: fixed, so the judge rebuilds them (not the executor's word)


def _probe_sizes() -> list[int]:
    r = Rand(PROBE_SEED)
    sizes = [r.integer(1, 9) for _ in range(r.integer(2, 4))]
    if len(set(sizes)) == 1:
        sizes[0] += 1
    return sizes


def _probe_gradient(answer, r: Rand) -> list[float]:
    """The answer's factors for unequal shards, for the judge's simulated DDP step
    (``_gradient_verdict``: in the instructor's grader this runs next to the answer, which can
    rewrite it; the verdict does not)."""
    return [float(f) for f in answer(_probe_sizes())]


def _gradient_verdict(j: int, factors) -> None:
    """The factors, used in a simulated DDP step, give the full-batch gradient."""
    sizes = _probe_sizes()
    if not isinstance(factors, list) or len(factors) != len(sizes) or \
            not all(isinstance(f, float) for f in factors):
        raise Incorrect("not_the_big_batch", sizes=sizes)  # (only a rewritten probe returns anything else)
    with torch.enable_grad():
        averaged, full = _ddp_gradient(factors, sizes, Rand(PROBE_SEED + 1))
    if not all(torch.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(averaged, full)):
        raise Incorrect("not_the_big_batch", sizes=sizes)


# --- wrong answers
def _ones(shard_sizes):
    return [1.0] * len(shard_sizes)


def _fraction(shard_sizes):
    return [n / sum(shard_sizes) for n in shard_sizes]  # forgets DDP's division by world_size


def _inverted(shard_sizes):
    return [sum(shard_sizes) / (len(shard_sizes) * n) for n in shard_sizes]


def _inverse_world(shard_sizes):
    return [1.0 / len(shard_sizes)] * len(shard_sizes)


def _count_only(shard_sizes):
    return [float(n) for n in shard_sizes]


# --- declaration
register(Exercise(
    lesson=LESSON, name="rank_loss_scale", title="Unequal shards: rescale each rank's mean loss",
    reference=rank_loss_scale,
    cases=_cases,
    edge_cases=_EDGE,
    n_random=6,
    run=_run,
    probes=[_probe_gradient], finish_probe=_gradient_verdict,
    compare=Compare(rtol=1e-6, atol=1e-9),
    mistakes=[
        Mistake("no_rescaling", "You left every rank's loss as it is (factor 1). With unequal shards, averaging "
                "the ranks' mean-loss gradients weighs a sample on a small shard more than one on a big shard.",
                _ones),
        Mistake("forgot_ddp_average", "Your factors are each rank's share of the samples. That would be right if "
                "DDP summed the ranks' gradients, but it averages them: it also divides by the number of ranks.",
                _fraction),
        Mistake("inverted", "Your factors are upside down: a rank with MORE samples must count MORE.", _inverted),
        Mistake("divided_by_world_size", "DDP already divides by the number of ranks after the all-reduce; "
                "dividing again makes the gradient world_size times too small, and ignores the shard sizes.",
                _inverse_world),
        Mistake("count_only", "Multiplying each mean by its count gives each rank's loss SUM; averaged over ranks "
                "that is not the mean over all samples. Where does the total number of samples come in?",
                _count_only),
        Mistake("not_one_per_rank", "Return a list with one factor per rank ({n} here), not a {got}.",
                lambda sizes: sum(rank_loss_scale(sizes)), match_output=False),
        Mistake("not_the_big_batch", "Used in a simulated DDP step with shards {sizes}, your factors did not give "
                "the gradient of the whole batch's mean loss.", None, match_output=False),
    ],
    hints=[
        "Write down what reaches the optimizer: (1 / world_size) times the sum over ranks of factor_r times the "
        "gradient of (sum of rank r's losses) / n_r. What must it equal?",
        "Match it term by term with the gradient of (sum of all losses) / N: each rank's losses must end up "
        "divided by N exactly once.",
    ],
))
