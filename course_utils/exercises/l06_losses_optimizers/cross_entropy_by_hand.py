"""cross_entropy_by_hand: F.cross_entropy's weight, ignore_index and label_smoothing (mean).

The notebook gives each option's formula alone, then a teammate's version that gets three of
their combinations wrong, with its comparison against ``F.cross_entropy`` on six batches: the
learner finds which line each failing batch points at (tests/test_l06_losses_optimizers.py holds
that each of the teammate's bugs, alone, is named by the grader).

Subtle: with ``weight`` the mean divides by the sum of the kept samples' class weights, not by
their count; ignored samples leave the sum and the count; ``ignore_index`` may be a valid class
(0); smoothing spreads eps / C over all C classes (the true one too), each class weighted by its
own weight, and is divided by the same sum of weights.
"""

from __future__ import annotations

import torch

from course_utils.grading import Case, Compare, Exercise, Mistake, Rand, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/06_losses_optimizers.py)
from ...answers.l06_losses_optimizers import cross_entropy_by_hand

# the rule (Exercise.forbid): any torch function or aten operator whose name says it, however reached
_BUILTINS = "re:cross_entropy|nll_loss"


# --- cases
def _cases(r: Rand) -> Case:
    n, c = r.integer(2, 12), r.integer(2, 6)
    logits = r.randn(n, c) * r.choice([1.0, 3.0])
    target = r.randint(0, c, (n,))
    ignore = r.choice([-100, -100, -1, 0, c - 1])
    n_ignored = r.integer(0, n - 1)
    if n_ignored:
        target[r.randint(0, n, (n_ignored,))] = ignore
    if bool((target == ignore).all()):
        target[0] = (ignore + 1) % c if ignore >= 0 else 0
    kwargs: dict = {"ignore_index": ignore}
    if r.integer(0, 2):
        kwargs["weight"] = r.rand(c) * 3 + 0.1
    if r.integer(0, 2):
        kwargs["label_smoothing"] = r.choice([0.1, 0.2, round(r.uniform(0.01, 0.5), 3)])
    if r.integer(0, 1):  # a loss must stay differentiable: the gradients are compared too
        logits.requires_grad_()
    return Case((logits, target), kwargs)


def _fixed(seed, n, c, target, grad=False, **kwargs):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, c, generator=g).requires_grad_(grad), torch.tensor(target)), kwargs


def _edge(label, *a, **k):
    args, kwargs = _fixed(*a, **k)
    return Case(args, kwargs, label=label)


EDGE_CASES = [
    _edge("no options", 1, 4, 3, [0, 2, 1, 2]),
    _edge("class weights only", 2, 5, 3, [0, 2, 2, 1, 2], weight=torch.tensor([1.0, 2.0, 5.0])),
    _edge("two samples with target -100 (ignored)", 3, 5, 4, [0, -100, 3, -100, 1]),
    _edge("label_smoothing=0.1 only", 4, 4, 5, [4, 0, 2, 2], label_smoothing=0.1),
    _edge("ignore_index=0: class 0 marks padding", 5, 6, 3, [0, 1, 2, 0, 2, 1], ignore_index=0),
    _edge("weight, ignored samples and label smoothing together", 6, 6, 4, [3, -100, 0, 1, -100, 3],
          weight=torch.tensor([0.5, 2.0, 1.0, 4.0]), label_smoothing=0.2),
    _edge("ignore_index=1 (a class) with weight and smoothing", 7, 5, 3, [1, 0, 2, 1, 2],
          ignore_index=1, weight=torch.tensor([1.0, 3.0, 0.5]), label_smoothing=0.3),
    _edge("logits that require grad (the loss must backpropagate), weight and smoothing", 8, 5, 3,
          [2, 0, -100, 1, 2], grad=True, weight=torch.tensor([1.0, 2.0, 0.5]), label_smoothing=0.1),
]


# --- wrong answers
def _variant(kind):
    def ce(logits, target, weight=None, ignore_index=-100, label_smoothing=0.0):
        c = logits.shape[1]
        weight = torch.ones(c) if weight is None else weight
        keep = target != (-100 if kind == "ignore_index_fixed" else ignore_index)
        logp = torch.log_softmax(logits[keep], dim=1)
        t = target[keep]
        w_t = weight[t]
        nll = -logp.gather(1, t[:, None]).squeeze(1)
        eps = label_smoothing
        if kind == "smoothing_over_others":
            others = torch.ones_like(logp).scatter(1, t[:, None], 0.0)
            smooth_part = eps / (c - 1) * -(logp * weight * others).sum(dim=1)
        else:
            w_s = torch.ones(c) if kind == "smoothing_unweighted" else weight
            smooth_part = eps / c * -(logp * w_s).sum(dim=1)
        mix = 1.0 if kind == "smoothing_not_mixed" else 1 - eps
        total = (mix * w_t * nll + smooth_part).sum()
        if kind == "plain_mean":
            return total / len(t)
        if kind == "ignored_counted":
            return total / (w_t.sum() + (~keep).sum())
        return total / w_t.sum()
    return ce


def _builtin(logits, target, weight=None, ignore_index=-100, label_smoothing=0.0):
    return torch.nn.functional.cross_entropy(logits, target, weight=weight, ignore_index=ignore_index,
                                             label_smoothing=label_smoothing)


def _detached(logits, target, weight=None, ignore_index=-100, label_smoothing=0.0):
    return torch.tensor(cross_entropy_by_hand(logits, target, weight, ignore_index, label_smoothing).item())


# --- declaration
register(Exercise(
    lesson=LESSON, name="cross_entropy_by_hand",
    title="Cross-entropy by hand with weight, ignore_index and label_smoothing (mean reduction)",
    reference=cross_entropy_by_hand, cases=_cases, edge_cases=EDGE_CASES, n_random=15,
    forbid=(_BUILTINS,), rule_mistake="used_builtin",
    compare=Compare(rtol=1e-5, atol=1e-6, grad=True),
    mistakes=[
        Mistake("used_builtin", "The task says: without `cross_entropy`, `nll_loss` or their `nn` modules. Your "
                "code called `{op}`.", _builtin, match_output=False),
        Mistake("graph_cut", "Your loss does not carry a gradient back to the logits (built through `.item()` or "
                "`torch.tensor(...)`, under `torch.no_grad()`, or `.detach()`ed): a loss that autograd cannot "
                "backpropagate trains nothing. Keep every step a torch operation on `logits`.", _detached,
                match_output=False),
        Mistake("ignore_index_fixed", "Samples whose target is `ignore_index` leave the loss, whatever its "
                "value: with `ignore_index=0` class 0 marks padding, and your loss kept those samples (it "
                "compares the targets with -100, not with the `ignore_index` it was given).",
                _variant("ignore_index_fixed")),
        Mistake("plain_mean", "With class weights the mean is a weighted mean: divide the sum of `w[y_i] * loss_i` "
                "by the sum of the weights used, `w[y_i]` summed over the kept samples, not by their count.",
                _variant("plain_mean")),
        Mistake("ignored_counted", "Ignored samples leave the sum *and* the count (or the sum of weights): "
                "divide only by what the kept samples contribute.", _variant("ignored_counted")),
        Mistake("smoothing_over_others", "PyTorch's label smoothing gives eps / C to *every* class, the true one "
                "included (and 1 - eps on top of it), not eps / (C - 1) to the other classes.",
                _variant("smoothing_over_others")),
        Mistake("smoothing_unweighted", "With a weight, the smoothing term weights each class c by its own "
                "`weight[c]`: `-(logp * weight).sum(dim=1)`.", _variant("smoothing_unweighted")),
        Mistake("smoothing_not_mixed", "Label smoothing mixes: `(1 - eps) * true-class loss + eps / C * "
                "(sum over classes)`; you kept the full true-class loss.", _variant("smoothing_not_mixed")),
    ],
    hints=[
        "Which option does each failing batch use that no passing batch uses? And why can the batch with "
        "ignored samples pass while the `ignore_index=0` one fails?",
        "Three ideas, one per failing batch: the ignored samples are the ones equal to the index the caller "
        "gave; a weighted mean is divided by the weights it used, so that equal weights give the plain mean "
        "back; and the smoothing term, spread over every class, carries each class's own weight.",
        "The formulas are the ones in section 3, combined: both parts of each kept sample's loss are summed "
        "and divided by the same total, the kept samples' class weights added up. `gather` or indexing "
        "picks each sample's class, a boolean mask drops the ignored ones.",
    ],
))
