"""sample_next: one token id per row of logits (B, V), drawn at a temperature among the top k,
with a given torch.Generator: the repair of a teammate's sampler that multiplies the logits by the
temperature (``temperature_multiplies``) and sets the logits outside the top k to 0 instead of
-inf (``outside_top_k``), both shown with their measured counts in the notebook.

Checked by distribution, not by draws, so any right way of drawing passes (multinomial on the
masked softmax, on top-k probabilities gathered back after a sort, probabilities zeroed outside
the top k...). Each case has 2-3 distinct rows of logits, each repeated 4,000 times in one call;
the run returns each row's frequencies, compared with the reference's within 0.06 (the two
estimates differ by at most about 0.011 standard deviation; every wrong distribution below is
0.2 or more away from the right one on every random case). Exact checks on top: no draw outside
the top k (one in the (k+1)-th place only: ``kept_k_plus_one``), the same seed twice gives the
same draws and another seed other draws (``ignores_generator``), a ``long`` tensor of shape (B,).

Subtle: the temperature divides the logits; top-k keeps exactly k per row; the softmax turns
logits into probabilities once; the draw uses ``generator``.
"""

from __future__ import annotations

from typing import Any

import torch

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register

from ...answers.l15_small_gpt import sample_next
from ._kit import LESSON

REPEAT = 4000


# --- reference: imported above from course_utils/answers/l15_small_gpt.py (generated from the notebook)


# --- cases
def _probs(scaled: torch.Tensor, top_k: int | None) -> torch.Tensor:
    if top_k is not None:
        kth = scaled.topk(top_k, dim=-1).values[:, -1:]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    return scaled.softmax(-1)


def _separated(scaled: torch.Tensor, temperature: float, top_k: int | None) -> bool:
    """The distributions of a temperature that multiplies, of no temperature, of the argmax and of
    a double softmax are each 0.15 or more away from the right one (with top_k 1 every one of them
    is right), and when one token too many is kept it is drawn (probability >= 0.005 in a row)."""
    right = _probs(scaled, top_k)
    vocab = scaled.shape[-1]
    if top_k is not None and top_k < vocab:
        extra = _probs(scaled, top_k + 1)
        cut = scaled.topk(top_k + 1, dim=-1).indices[:, -1:]
        if float(extra.gather(1, cut).max()) < 0.005:
            return False
    if top_k == 1:
        return True
    logits = scaled * temperature
    wrongs = [_probs(logits * temperature, top_k), _probs(logits, top_k),
              torch.nn.functional.one_hot(right.argmax(-1), vocab).double(),
              right.masked_fill(right == 0, float("-inf")).softmax(-1)]
    return all(float((w - right).abs().max()) >= 0.15 for w in wrongs)


def _cases(r: Rand) -> Case:
    while True:
        rows, vocab = r.integer(2, 3), r.integer(4, 9)
        temperature = r.choice([0.5, 0.7, 1.5, 2.0])
        top_k = r.choice([None, r.integer(1, vocab - 1)])
        scaled = r.randn(rows, vocab, dtype=torch.float64) * 1.3  # the logits after dividing by the temperature
        if _separated(scaled, temperature, top_k):
            return Case(((scaled * temperature).float(), temperature, top_k, r.integer(0, 2**31 - 1)))


def _fixed(seed: int, temperature: float, top_k: int | None, label: str) -> Case:
    r = Rand(seed)
    while True:
        scaled = r.randn(3, 6, dtype=torch.float64) * 1.3
        if _separated(scaled, temperature, top_k):
            return Case(((scaled * temperature).float(), temperature, top_k, seed), label=label)


EDGE_CASES = [
    _fixed(1, 0.5, None, "3 rows of 6 logits, temperature 0.5, no top-k"),
    _fixed(2, 2.0, 3, "temperature 2, top_k 3"),
    _fixed(3, 0.7, 1, "top_k 1 (the most likely token every time)"),
    _fixed(4, 1.5, 5, "top_k 5 of 6"),
]


def _draw(answer: Any, logits: torch.Tensor, temperature: float, top_k: int | None, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    out = answer(logits, temperature, top_k, generator)
    if not isinstance(out, torch.Tensor) or out.shape != logits.shape[:1] or out.dtype != torch.long:
        got = (f"a {out.dtype} tensor of shape {tuple(out.shape)}" if isinstance(out, torch.Tensor)
               else type(out).__name__)
        raise Incorrect("draw_format", got=got, rows=logits.shape[0])
    return out


def _run(answer: Any, case: Case) -> Any:
    logits, temperature, top_k, seed = case.args
    rows, vocab = logits.shape
    many = logits.repeat_interleave(REPEAT, dim=0)  # row i of logits -> draws i*REPEAT .. (i+1)*REPEAT - 1
    draws = _draw(answer, many, temperature, top_k, seed)
    if top_k is not None and bool(((draws < 0) | (draws >= vocab)).any()):
        raise Incorrect("outside_top_k", k=top_k)
    if top_k is not None:
        rank = (logits[:, None, :] > logits[:, :, None]).sum(-1)  # rank[i, j]: tokens above token j in row i
        drawn_rank = rank.repeat_interleave(REPEAT, dim=0).gather(1, draws.clamp(0, vocab - 1)[:, None]).squeeze(1)
        if int(drawn_rank.max()) > top_k:
            raise Incorrect("outside_top_k", k=top_k)
        if int(drawn_rank.max()) == top_k:
            raise Incorrect("kept_k_plus_one", k=top_k)
    few = logits.repeat_interleave(50, dim=0)
    first, again = (_draw(answer, few, temperature, top_k, seed) for _ in range(2))
    other = _draw(answer, few, temperature, top_k, seed + 1)
    # the same seed must give the same draws, another seed other draws (unless only one token may win
    # or the answer draws nothing at random: then the frequencies name what it does)
    varied = bool((draws.view(rows, REPEAT) != draws.view(rows, REPEAT)[:, :1]).any())
    if not torch.equal(again, first) or (varied and top_k != 1 and torch.equal(other, first)):
        raise Incorrect("ignores_generator")
    counts = torch.zeros(rows * vocab, dtype=torch.float64)
    counts.index_add_(0, torch.arange(rows).repeat_interleave(REPEAT) * vocab + draws.clamp(0, vocab - 1),
                      torch.ones(draws.numel(), dtype=torch.float64))
    return counts.view(rows, vocab) / REPEAT


# --- wrong answers
def _draw_from(logits, generator):
    return torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator).squeeze(-1)


def _keep_top_k(logits, top_k, k_extra=0):
    if top_k is None:
        return logits
    kth = torch.topk(logits, min(top_k + k_extra, logits.shape[-1]), dim=-1).values[:, -1:]
    return logits.masked_fill(logits < kth, float("-inf"))


def _temperature_multiplies(logits, temperature, top_k, generator):
    return _draw_from(_keep_top_k(logits * temperature, top_k), generator)


def _no_temperature(logits, temperature, top_k, generator):
    return _draw_from(_keep_top_k(logits, top_k), generator)


def _k_plus_one(logits, temperature, top_k, generator):
    return _draw_from(_keep_top_k(logits / temperature, top_k, k_extra=1), generator)


def _k_minus_one(logits, temperature, top_k, generator):
    logits = logits / temperature
    if top_k is not None:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits <= kth, float("-inf"))  # drops the k-th largest too
    return _draw_from(logits, generator)


def _top_k_zeroed(logits, temperature, top_k, generator):
    logits = logits / temperature
    if top_k is not None:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, 0.0)  # 0 is a logit, not "impossible"
    return _draw_from(logits, generator)


def _argmax(logits, temperature, top_k, generator):
    return _keep_top_k(logits / temperature, top_k).argmax(dim=-1)


def _softmax_twice(logits, temperature, top_k, generator):
    probs = torch.softmax(_keep_top_k(logits / temperature, top_k), dim=-1)
    return _draw_from(probs.masked_fill(probs == 0, float("-inf")), generator)  # softmax of probabilities


def _logits_drawn(logits, temperature, top_k, generator):
    return torch.multinomial(_keep_top_k(logits / temperature, top_k), 1, generator=generator).squeeze(-1)


def _global_rng(logits, temperature, top_k, generator):
    probs = torch.softmax(_keep_top_k(logits / temperature, top_k), dim=-1)
    return torch.multinomial(probs, 1).squeeze(-1)


def _not_squeezed(logits, temperature, top_k, generator):
    probs = torch.softmax(_keep_top_k(logits / temperature, top_k), dim=-1)
    return torch.multinomial(probs, 1, generator=generator)


# --- declaration
register(Exercise(
    lesson=LESSON, name="sample_next", title="Sample the next token with a temperature and top-k, from a Generator",
    reference=sample_next, cases=_cases, edge_cases=EDGE_CASES, run=_run,
    compare=Compare(rtol=0.0, atol=0.06, dtype=False),  # frequencies of 4,000 draws a row (see the docstring)
    n_random=6,
    mistakes=[
        Mistake("temperature_multiplies", "Your draws get flatter as the temperature goes *down*, as the "
                "teammate's did: with the logits multiplied by the temperature, what does 0.5 do to the gaps between "
                "them? In `exp(-E / T)`, which way does `T` act on the logit?", _temperature_multiplies),
        Mistake("ignored_temperature", "Your draws follow the distribution at temperature 1: the temperature "
                "divides the logits before the softmax.", _no_temperature),
        Mistake("kept_k_plus_one", "Some of your draws are the ({k}+1)-th most likely token: you kept k + 1 tokens "
                "per row. Keep exactly the {k} largest logits (the k-th largest is the last one kept).", _k_plus_one,
                match_output=False),
        Mistake("kept_k_minus_one", "Your draws never pick the k-th most likely token: you kept k - 1 tokens per "
                "row (with top_k = 1 none is left and the softmax gives NaN). The k-th largest logit is the last one "
                "kept: block the logits strictly below it (`<`, not `<=`).", _k_minus_one),
        Mistake("outside_top_k", "Some of your draws are outside the {k} most likely tokens, as in the teammate's "
                "counts. Is a logit of 0 an impossible token, or an ordinary score? Which logit (or which "
                "probability) does the softmax turn into a weight of exactly 0?", _top_k_zeroed,
                match_output=False),
        Mistake("greedy", "You returned the most likely token (argmax) every time: that is greedy decoding, not "
                "sampling. Draw from the probabilities.", _argmax),
        Mistake("softmax_twice", "You drew from the softmax of probabilities (a second softmax), which flattens "
                "them towards uniform. Apply the softmax once, to the (scaled, top-k) logits.", _softmax_twice),
        Mistake("logits_not_probs", "`torch.multinomial` needs non-negative weights: you passed it the logits. Turn "
                "them into probabilities with a softmax first.", _logits_drawn),
        Mistake("ignores_generator", "Your draws do not come from `generator`: the same seed gave different "
                "draws, or another seed the same ones. Draw with it (`generator=generator` in `torch.multinomial` "
                "or `torch.rand`), so a seed reproduces the text and the global random state stays put.",
                _global_rng, match_output=False),
        Mistake("draw_format", "Your `sample_next` returned {got} for {rows} rows of logits; it should return one "
                "token id per row: a `long` tensor of shape ({rows},). (`torch.multinomial` gives (B, 1): drop the "
                "last dimension.)", _not_squeezed, match_output=False),
    ],
    hints=[
        "Look at the teammate's counts: at temperature 0.5, should the most likely token come out more or less "
        "often than at 2? And which value, put in place of a logit, makes its token unable to come out at all?",
        "The k-th largest logit of a row is the threshold: a logit below it must get a probability of exactly zero, "
        "which a score of zero does not give. The softmax then runs once, and the draw takes its randomness from "
        "the generator, one token per row.",
    ],
))
