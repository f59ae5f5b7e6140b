"""stable_log_softmax: log-softmax along the last dimension without overflow or underflow.

A repair, not a transcription: the notebook gives only the shift invariance of softmax and a
colleague's version with one maximum for the whole batch (right for [1000, 0], -inf for the unsure
row of a batch); the learner decides which number to subtract from which logits and how the shift
comes back out of the log. The formula and log-sum-exp are explained after the check.

Subtle: the maximum must be taken per row (along the last dimension, kept for broadcasting) and
added back; a global maximum underflows rows whose scale is far below the largest; huge logits
(1e4) overflow a naive ``exp``; ``-inf`` logits (masked) stay ``-inf``; any shape and float dtype.
"""

from __future__ import annotations

import torch

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/06_losses_optimizers.py)
from ...answers.l06_losses_optimizers import stable_log_softmax

# the rule (Exercise.forbid): any torch function or aten operator whose name says it, however reached
_BUILTINS = "re:softmax|logsumexp|logcumsumexp|cross_entropy|nll_loss"


# --- cases
def _cases(r: Rand) -> Case:
    shape = r.choice([(r.integer(2, 9),), (r.integer(1, 6), r.integer(2, 7)),
                      (r.integer(1, 3), r.integer(1, 4), r.integer(2, 6))])
    x = r.randn(*shape)
    kind = r.integer(0, 3)
    if kind == 0:  # huge logits, the same scale everywhere
        x = x * r.choice([100.0, 1000.0, 10000.0])
    elif kind == 1 and len(shape) > 1:  # rows of very different scales
        x = x * 10 ** (4 * r.rand(*shape[:-1], 1))
    elif kind == 2:  # one dominant logit per row
        x[..., r.integer(0, shape[-1] - 1)] += r.uniform(100.0, 3000.0)
    if r.integer(0, 1):  # a loss must stay differentiable: the gradients are compared too
        x.requires_grad_()
    return Case((x,))


EDGE_CASES = [
    Case((torch.tensor([[1000.0, 0.0]]),), label="logits [[1000, 0]] (a naive exp overflows)", show_inputs=True),
    Case((torch.tensor([[2.0, -1.0, 0.5], [0.0, 3.0, 1.0]], requires_grad=True),),
         label="logits that require grad (the gradient must flow back to them)", show_inputs=True),
    Case((torch.tensor([0.0, -200.0, 3.0]),), label="a 1-D input [0, -200, 3]", show_inputs=True),
    Case((torch.tensor([[1.0, 2.0, 3.0], [5000.0, -3000.0, 4000.0]]),),
         label="two rows of very different sizes: [[1, 2, 3], [5000, -3000, 4000]]", show_inputs=True),
    Case((torch.tensor([[0.0, float("-inf"), 1.0], [2.0, 2.0, float("-inf")]]),),
         label="masked logits (-inf) stay -inf", show_inputs=True),
    Case((torch.full((3, 4), 7.0),), label="all logits equal (every probability 1/4)"),
    Case((torch.linspace(-3, 3, 24).reshape(2, 3, 4).double(),), label="a (2, 3, 4) float64 tensor"),
    Case((torch.tensor([[-1e4, -200.0, -5e3], [3.0, -3.0, 0.5]]),),
         label="very negative logits (every exp underflows to 0) next to small ones", show_inputs=True),
]


# --- run
_PROBE = torch.tensor([[1000.0, 0.0]])  # one row: a per-row or a global maximum both handle it

def _run(answer, case: Case):
    out = answer(*case.args)
    if isinstance(out, torch.Tensor) and out.shape == case.args[0].shape and out.is_floating_point():
        expected_finite = torch.isfinite(case.args[0])
        if not bool(torch.isfinite(out)[expected_finite].all()):
            probe = answer(_PROBE.clone())
            if isinstance(probe, torch.Tensor) and not bool(torch.isfinite(probe).all()):
                raise Incorrect("overflow")
    return out


# --- wrong answers
def _naive(logits):
    return logits - torch.log(torch.exp(logits).sum(dim=-1, keepdim=True))


def _global_max(logits):
    m = logits.max()
    return logits - m - torch.log(torch.exp(logits - m).sum(dim=-1, keepdim=True))


def _max_not_added_back(logits):
    m = logits.amax(dim=-1, keepdim=True)
    return logits - torch.log(torch.exp(logits - m).sum(dim=-1, keepdim=True))


def _returned_probabilities(logits):
    e = torch.exp(logits - logits.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def _first_dim(logits):
    m = logits.amax(dim=0, keepdim=True)
    return logits - m - torch.log(torch.exp(logits - m).sum(dim=0, keepdim=True))


def _builtin(logits):
    return torch.log_softmax(logits, dim=-1)


def _detached(logits):
    with torch.no_grad():
        return stable_log_softmax(logits)


# --- declaration
register(Exercise(
    lesson=LESSON, name="stable_log_softmax",
    title="Log-softmax along the last dimension, stable for huge logits (log-sum-exp by hand)",
    reference=stable_log_softmax, cases=_cases, edge_cases=EDGE_CASES, n_random=15,
    run=_run, forbid=(_BUILTINS,), rule_mistake="used_builtin",
    compare=Compare(rtol=1e-5, atol=1e-5, grad=True),
    mistakes=[
        Mistake("used_builtin", "The task says: build it without `softmax`, `log_softmax` or `logsumexp`. Your "
                "code called `{op}`. Use `max`, `exp`, `sum` and `log`.", _builtin, match_output=False),
        Mistake("overflow", "Your result has `nan` or `inf` where the answer is a number, and it does on the "
                "logits [[1000, 0]] too. In float32 `exp` overflows to `inf` above about 88 (`inf / inf` is `nan`) "
                "and underflows to 0 below about -103 (`log(0)` is `-inf`). Which shift of a row keeps every "
                "exponent at most 0 and one of them exactly 0? And a log of a ratio that can round to 0 is "
                "never safe.",
                _naive, match_output=False),
        Mistake("global_max", "You subtracted one maximum for the whole tensor, as the colleague did. A row "
                "whose logits are far below it has every `exp` underflow to 0, and `log(0)` is `-inf`. Softmax "
                "is taken row by row: so is the shift.", _global_max),
        Mistake("max_not_added_back", "Every value of a row is off by the same amount: the shift you subtracted "
                "inside the `exp`. Shifting leaves softmax unchanged, but not the sum of exponentials whose "
                "log you take. Where must the shift be accounted for?", _max_not_added_back),
        Mistake("graph_cut", "Your result does not carry a gradient back to the logits (computed under "
                "`torch.no_grad()`, through `.item()`/`.numpy()`, or `.detach()`ed): a log-softmax feeds a loss, "
                "so build it from torch operations on `logits` itself.", _detached, match_output=False),
        Mistake("returned_probabilities", "You returned probabilities (softmax), not their log: every value of "
                "a log-softmax is at most 0.", _returned_probabilities),
        Mistake("wrong_dim", "You normalised along the first dimension. The classes are the last one, whatever "
                "the tensor's shape: each row of the last dimension is one softmax.", _first_dim),
    ],
    hints=[
        "Follow the colleague's function on the batch: what is the shift, and what becomes of the exp of the "
        "unsure row's logits once it is subtracted?",
        "A log-softmax is each logit minus the log of the sum of its row's exponentials. Which part of that "
        "breaks in float32, and for which logits?",
        "Subtracting the same number m from every logit of a row does not change softmax. Which m makes every "
        "exponent at most 0 and one of them exactly 0?",
        "One m per row (taken along the classes, kept as a dimension of size 1 so that it broadcasts), subtracted "
        "inside the exp and accounted for outside the log; never take the log of a ratio that can be 0.",
    ],
))
