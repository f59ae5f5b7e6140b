"""merge_batch_stats: the global per-channel mean and biased variance from each rank's count,
mean and biased variance, as SyncBatchNorm computes them.

Subtle: means are weighted by the counts; the variance adds the within-rank variances AND the
spread of the ranks' means around the global mean; biased (divide by N), not unbiased.
"""

from __future__ import annotations

import torch

from course_utils.grading import Case, Compare, Exercise, Expect, Incorrect, Mistake, Rand, pair_of, register

from ._kit import LESSON


# --- reference: the solution notebook's answer, generated from solutions/11_distributed.py
from ...answers.l11_distributed import merge_batch_stats


# --- cases
def _stats(samples: list[torch.Tensor]) -> tuple:
    counts = [len(s) for s in samples]
    means = torch.stack([s.mean(0) for s in samples])
    variances = torch.stack([s.var(0, unbiased=False) for s in samples])
    return counts, means, variances


def _cases(r: Rand) -> Case:
    channels, world_size = r.integer(1, 6), r.integer(2, 5)
    # ranks see differently distributed data: their means differ
    samples = [r.randn(r.integer(1, 10), channels) * r.uniform(0.5, 2) + r.uniform(-2, 2) for _ in range(world_size)]
    return Case(_stats(samples))


_FIXED = [Case(_stats([torch.tensor([[0.0], [2.0]]), torch.tensor([[10.0]])]),
               label="rank 0 saw 0 and 2, rank 1 saw 10 (one channel)", show_inputs=True),
          Case(_stats([torch.tensor([[1.0, -1.0], [3.0, 1.0]]), torch.tensor([[1.0, -1.0], [3.0, 1.0]])]),
               label="two ranks with the same samples")]


# --- run and probes
_PAIR = Expect("not_a_pair", "a pair `(mean, variance)`", pair_of())


def _run(answer, case: Case):
    counts, means, variances = case.args
    got = answer(list(counts), means.clone(), variances.clone())
    _PAIR.check(got)
    mean, var = got
    for t in (mean, var):
        if not isinstance(t, torch.Tensor) or t.shape != means.shape[1:]:
            got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise Incorrect("wrong_shape_stats", got=got, want=tuple(means.shape[1:]))
    return mean, var


# --- wrong answers
def _unweighted(counts, means, variances):
    return means.mean(0), variances.mean(0)


def _within_only(counts, means, variances):
    n = torch.tensor(counts, dtype=means.dtype).unsqueeze(1)
    return (n * means).sum(0) / n.sum(), (n * variances).sum(0) / n.sum()


def _unbiased(counts, means, variances):
    mean, var = merge_batch_stats(counts, means, variances)
    total = sum(counts)
    return mean, var * total / (total - 1)


def _mean_of_means_spread(counts, means, variances):
    n = torch.tensor(counts, dtype=means.dtype).unsqueeze(1)
    mean = (n * means).sum(0) / n.sum()
    return mean, variances.mean(0) + ((means - mean) ** 2).mean(0)  # spread weighted per rank, not per sample


def _naive_second_moment(counts, means, variances):
    n = torch.tensor(counts, dtype=means.dtype).unsqueeze(1)
    mean = (n * means).sum(0) / n.sum()
    return mean, (n * variances).sum(0) / n.sum() + mean**2 - (means**2).mean(0)


# --- declaration
register(Exercise(
    lesson=LESSON, name="merge_batch_stats", title="Merge the ranks' BatchNorm statistics like SyncBatchNorm",
    reference=merge_batch_stats,
    cases=_cases,
    edge_cases=_FIXED,
    n_random=6,
    run=_run,
    compare=Compare(rtol=1e-4, atol=1e-5),
    mistakes=[
        Mistake("unweighted_mean", "You averaged the ranks' statistics as if every rank had as many samples. A rank "
                "with more samples must count more.", _unweighted),
        Mistake("within_only", "Your variance is only the (weighted) average of the ranks' variances: it misses the "
                "spread BETWEEN the ranks, how far each rank's mean lies from the global mean. Two ranks that each "
                "saw a constant, but different constants, have variance 0 each, and not 0 together.", _within_only),
        Mistake("unbiased", "Your variance divides by N - 1 (unbiased). BatchNorm normalises with the biased "
                "variance, dividing by N.", _unbiased),
        Mistake("rank_weighted_spread", "The spread of the ranks' means must be weighted by each rank's number of "
                "samples too, like everything else here.", _mean_of_means_spread),
        Mistake("second_moment_mixup", "Your variance mixes per-rank and per-sample averages of the squared means. "
                "Write the global mean of x² from each rank's count, mean and variance, then subtract the global "
                "mean squared.", _naive_second_moment),
        _PAIR.mistake(lambda c, m, v: torch.stack(merge_batch_stats(c, m, v))),
        Mistake("wrong_shape_stats", "Each statistic must have one value per channel, shape {want}, not {got}.",
                lambda c, m, v: tuple(t.unsqueeze(0) for t in merge_batch_stats(c, m, v)), match_output=False),
    ],
    hints=[
        "Start with the mean: if you had each rank's SUM of samples, what would the global mean be? You can get "
        "each rank's sum from what you are given.",
        "For the variance do the same with the sum of squares: a rank's variance and mean give its mean of x², "
        "because var = E[x²] - E[x]².",
    ],
))
