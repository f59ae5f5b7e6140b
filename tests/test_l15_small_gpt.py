"""Lesson 15 (sequences and a small GPT), every test of its own in one file: the shipped corpus and
the tool that makes it, the lesson prop, the claims the lesson makes (our attention is the fused
kernel's, tying halves the count of the shared matrix), then the red team (wrong answers with the
mistake they must be named by, valid unusual answers, cheats) and the oracles.
The contract tests shared by every exercise are in tests/test_exercises.py."""

from __future__ import annotations

import math
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_utils import grading
from course_utils.answers import l15_small_gpt as REF
from course_utils.lesson_props import l15_small_gpt as prop

from grading_asserts import accepted, rejected  # tests/ is on sys.path
from lesson_kit import Tables, fixed_and_random_cases

ROOT = Path(__file__).resolve().parent.parent
LESSON = "15_small_gpt"
TOOL = ROOT / "tools" / "make_corpus.py"


# --------------------------------------------------------------------------- the corpus
def test_the_corpus_ships_with_its_licence_note():
    path = prop.CORPUS_PATH
    assert path.is_file()
    size = path.stat().st_size
    assert 100_000 <= size <= 300_000, size
    head = prop.corpus_header()
    assert "Python Software Foundation License" in head and "PSF-2.0" in head and "tools/make_corpus.py" in head
    readme = (path.parent / "README.md").read_text(encoding="utf-8")
    assert "PSF-2.0" in readme and "stdlib_docstrings.txt" in readme
    text = path.read_text(encoding="ascii")  # ASCII only: a small, fixed vocabulary
    assert text.isascii()


def test_load_corpus_drops_the_header_and_keeps_the_text():
    text = prop.load_corpus()
    assert not text.startswith("#") and len(text) > 250_000
    assert prop.corpus_header() + "\n" + text == prop.CORPUS_PATH.read_text(encoding="ascii")


def test_pyproject_ships_the_corpus_as_package_data():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = data["tool"]["setuptools"]["package-data"]["course_utils.lesson_props"]
    assert "data/*.txt" in globs and "data/README.md" in globs
    assert "course_utils.exercises.l15_small_gpt" in data["tool"]["setuptools"]["packages"]


def test_the_tool_writes_the_header_it_promises(tmp_path):
    sys.path.insert(0, str(TOOL.parent))
    try:
        import make_corpus
    finally:
        sys.path.remove(str(TOOL.parent))
    text = make_corpus.corpus()
    version = ".".join(map(str, sys.version_info[:2]))
    assert text.startswith(f"# The docstrings of {len(make_corpus.MODULES)} Python standard-library modules "
                           f"(CPython {version})")
    assert text.splitlines()[:4][1:] == prop.corpus_header().splitlines()[1:4]  # the licence lines and the list
    assert text == make_corpus.corpus(), "deterministic"


@pytest.mark.skipif(f"(CPython {sys.version_info[0]}.{sys.version_info[1]})" not in prop.corpus_header(),
                    reason="the shipped corpus was made by another Python version (its docstrings differ)")
def test_the_tool_reproduces_the_shipped_file():
    out = subprocess.run([sys.executable, str(TOOL), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr


# --------------------------------------------------------------------------- the lesson's claims
def test_the_course_attention_is_the_fused_kernel():
    g = torch.Generator().manual_seed(1)
    for shape in [(1, 5, 4), (2, 3, 7, 8), (3, 1, 6)]:
        q, k, v = (torch.randn(*shape, generator=g) for _ in range(3))
        torch.testing.assert_close(REF.causal_attention(q, k, v),
                                   F.scaled_dot_product_attention(q, k, v, is_causal=True))


def test_the_course_mask_is_what_is_causal_means():
    for T in range(1, 9):
        allowed = torch.ones(T, T, dtype=torch.bool).tril()
        q = torch.randn(1, T, 4)
        with_mask = F.scaled_dot_product_attention(q, q, q, attn_mask=REF.causal_mask(T))
        torch.testing.assert_close(with_mask, F.scaled_dot_product_attention(q, q, q, attn_mask=allowed))


def test_tying_shares_one_parameter_and_one_step_moves_both():
    model = nn.Module()
    model.tok_emb, model.head = nn.Embedding(7, 3), nn.Linear(3, 7, bias=False)
    REF.tie_weights(model)
    assert sum(p.numel() for p in model.parameters()) == 21
    assert model.head.weight is model.tok_emb.weight


# =========================================================================== red team
_tables = Tables()  # tests/lesson_kit.py
WRONG, VALID, CHEATS = _tables.WRONG, _tables.VALID, _tables.CHEATS
wrong, valid, cheat = _tables.wrong, _tables.valid, _tables.cheat
NEG_INF = float("-inf")

# --------------------------------------------------------------------------- next_token_batch
NB = "15_small_gpt.next_token_batch"


def _windows(data, starts, n):
    return torch.stack([data[int(s): int(s) + n] for s in starts])


@wrong(NB, "unshifted")
def nb_same_window(data, starts, block_size):
    x = _windows(data, starts, block_size)
    return x, x


@wrong(NB, "shifted_wrong_way")
def nb_previous(data, starts, block_size):
    before = data.roll(1)  # before[i] is data[i - 1]
    return _windows(data, starts, block_size), _windows(before, starts, block_size)


@wrong(NB, "only_next_id")
def nb_next_only(data, starts, block_size):
    return _windows(data, starts, block_size), data[starts + block_size]


@wrong(NB, "window_too_long")
def nb_long(data, starts, block_size):
    w = _windows(data, starts, block_size + 1)
    return w, w[:, 1:]


@wrong(NB, "swapped")
def nb_swapped(data, starts, block_size):
    return _windows(data, starts + 1, block_size), _windows(data, starts, block_size)


@wrong(NB, "rolled_targets")
def nb_rolled(data, starts, block_size):
    x = _windows(data, starts, block_size)
    return x, x.roll(-1, dims=1)  # the last target wraps round to the first input


@valid(NB)
def nb_unfold(data, starts, block_size):
    w = data.unfold(0, block_size + 1, 1)[starts]
    return w[:, :-1], w[:, 1:]


@valid(NB)
def nb_loop(data, starts, block_size):
    xs, ys = [], []
    for s in starts.tolist():
        xs.append(data[s: s + block_size])
        ys.append(data[s + 1: s + block_size + 1])
    return torch.stack(xs), torch.stack(ys)


@valid(NB)
def nb_gather(data, starts, block_size):
    idx = starts.unsqueeze(1) + torch.arange(block_size + 1).unsqueeze(0)
    w = torch.gather(data.expand(len(starts), -1), 1, idx)
    return w[:, :block_size].clone(), w[:, 1:].clone()


@cheat(NB)
def nb_shown_cases_only(data, starts, block_size):
    x = _windows(data, starts, block_size)
    return (x, _windows(data, starts + 1, block_size)) if block_size in (1, 3, 5) else (x, x)


@cheat(NB)
def nb_in_place(data, starts, block_size):
    x = _windows(data, starts, block_size)
    y = _windows(data, starts + 1, block_size)
    data.zero_()  # right values, the caller's data destroyed
    return x, y


# --------------------------------------------------------------------------- causal_mask
CM = "15_small_gpt.causal_mask"


@wrong(CM, "future_visible")
def cm_upper(T):
    return torch.full((T, T), NEG_INF).tril(-1)


@wrong(CM, "diagonal_masked")
def cm_strict(T):
    return torch.full((T, T), NEG_INF).triu(0)


@wrong(CM, "values_swapped")
def cm_swapped(T):
    return torch.where(torch.ones(T, T, dtype=torch.bool).tril(), NEG_INF, 0.0)


@wrong(CM, "multiplicative")
def cm_ones(T):
    return torch.tril(torch.ones(T, T))


@wrong(CM, "boolean")
def cm_bool(T):
    return torch.ones(T, T).tril().bool()


@wrong(CM, "wrong_shape")
def cm_batched(T):
    return torch.full((T, T), NEG_INF).triu(1)[None]


@wrong(CM, "finite_mask")
def cm_large_negative(T):
    return torch.full((T, T), -1e9).triu(1)


@wrong(CM, "finite_mask")
def cm_finfo_min(T):
    return torch.zeros(T, T).masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), torch.finfo(torch.float32).min)


def test_a_finite_mask_is_counted_as_differing():
    """Where the reference holds -inf, a finite value is a mismatch in the summary too (it read "0 of 16
    elements differ" before the summary used the comparison's own rule)."""
    res = grading.check(CM, lambda T: torch.zeros(T, T).masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), -5.0),
                        seed=1)
    assert res.mistake == "wrong_values" and "6 of 16 elements" in res.message, res.message


@valid(CM)
def cm_triu_full(T):
    return torch.full((T, T), NEG_INF).triu(diagonal=1)


@valid(CM)
def cm_log_of_tril(T):
    return torch.ones(T, T).tril().log()  # log 1 = 0, log 0 = -inf


@valid(CM)
def cm_where_transposed(T):
    future = torch.ones(T, T, dtype=torch.bool).tril(-1).T  # strictly upper
    return torch.where(future, torch.tensor(NEG_INF), torch.tensor(0.0))


@valid(CM)
def cm_loops(T):
    m = torch.zeros(T, T)
    for i in range(T):
        for j in range(i + 1, T):
            m[i, j] = NEG_INF
    return m


@cheat(CM)
def cm_shown_sizes_only(T):
    return torch.full((T, T), NEG_INF).triu(1) if T in (1, 2, 4) else torch.zeros(T, T)


@cheat(CM)
def cm_table_of_eight(T):
    return torch.full((8, 8), NEG_INF).triu(1)[:T, :T]


# --------------------------------------------------------------------------- causal_attention
CA = "15_small_gpt.causal_attention"


def _scores(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


@wrong(CA, "no_scale")
def ca_unscaled(q, k, v):
    T = q.shape[-2]
    return torch.softmax(q @ k.transpose(-2, -1) + REF.causal_mask(T), dim=-1) @ v


@wrong(CA, "scaled_by_d")
def ca_by_d(q, k, v):
    T = q.shape[-2]
    return torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] + REF.causal_mask(T), dim=-1) @ v


@wrong(CA, "softmax_over_queries")
def ca_dim_minus_2(q, k, v):
    return torch.softmax(_scores(q, k) + REF.causal_mask(q.shape[-2]), dim=-2) @ v


@wrong(CA, "mask_flipped")
def ca_teammate_mask_flipped(q, k, v):
    T = q.shape[-2]
    by_key = (k @ q.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(torch.ones(T, T).triu(1) > 0, NEG_INF)
    return torch.softmax(by_key, dim=-1).mT @ v


@valid(CA)
def ca_teammate_layout_normalised_per_query(q, k, v):
    """The teammate's key-row layout kept, its softmax taken down each query's column."""
    T = q.shape[-2]
    by_key = (k @ q.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(torch.ones(T, T).tril(-1) > 0, NEG_INF)
    return torch.softmax(by_key, dim=-2).mT @ v


@wrong(CA, "masked_after_softmax")
def ca_after(q, k, v):
    return (torch.softmax(_scores(q, k), dim=-1) * torch.ones(q.shape[-2], q.shape[-2]).tril()) @ v


@wrong(CA, "scaled_after_softmax")
def ca_scaled_after_softmax(q, k, v):
    T = q.shape[-2]
    w = torch.softmax((q @ k.transpose(-2, -1)).masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), NEG_INF), -1)
    return w / math.sqrt(q.shape[-1]) @ v


@valid(CA)
def ca_finite_fill_loop_over_queries(q, k, v):
    """One query at a time, the future set to -inf (issue 27: this row's -1e9 is a finite_mask now)."""
    out = []
    for t in range(q.shape[-2]):
        s = q[..., t:t + 1, :] @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
        s[..., t + 1:] = NEG_INF
        out.append(s.softmax(-1) @ v)
    return torch.cat(out, dim=-2)


@wrong(CA, "future_visible")
def ca_upper(q, k, v):
    T = q.shape[-2]
    return torch.softmax(_scores(q, k) + torch.full((T, T), NEG_INF).tril(-1), dim=-1) @ v


@wrong(CA, "no_mask")
def ca_unmasked(q, k, v):
    return torch.softmax(_scores(q, k), dim=-1) @ v


@wrong(CA, "masked_with_zero")
def ca_zero(q, k, v):
    T = q.shape[-2]
    return torch.softmax(_scores(q, k).masked_fill(torch.ones(T, T).triu(1).bool(), 0.0), dim=-1) @ v


@valid(CA)
def ca_additive(q, k, v):
    return torch.softmax(_scores(q, k) + REF.causal_mask(q.shape[-2]).to(q.dtype), dim=-1) @ v


@valid(CA)
def ca_einsum_where(q, k, v):
    T = q.shape[-2]
    s = torch.einsum("...id,...jd->...ij", q, k) * q.shape[-1] ** -0.5
    s = torch.where(torch.ones(T, T, dtype=torch.bool).triu(1), torch.tensor(NEG_INF, dtype=s.dtype), s)
    return torch.einsum("...ij,...jd->...id", s.softmax(-1), v)


@valid(CA)
def ca_exp_by_hand(q, k, v):
    T = q.shape[-2]
    s, seen = _scores(q, k), torch.ones(T, T, dtype=torch.bool).tril()
    s = s - s.masked_fill(~seen, NEG_INF).amax(dim=-1, keepdim=True)  # issue 27: the max of the past only
    w = torch.where(seen, s.exp(), 0.0)  # zero weight for the future, then normalise
    return (w / w.sum(dim=-1, keepdim=True)) @ v


@cheat(CA)
def ca_builtin(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


@cheat(CA)
def ca_builtin_by_name(q, k, v):
    fused = getattr(torch.nn.functional, "scaled_dot_" + "product_attention")
    return fused(q, k, v, attn_mask=torch.ones(q.shape[-2], q.shape[-2], dtype=torch.bool).tril())


# --------------------------------------------------------------------------- pre_norm_block
PB = "15_small_gpt.pre_norm_block"


@wrong(PB, "post_norm")
def pb_post(x, attn, mlp, ln1, ln2):
    h = ln1(x + attn(x))
    return ln2(h + mlp(h))


@wrong(PB, "norm_after_residual")
def pb_half_converted(x, attn, mlp, ln1, ln2):
    h = x + attn(ln1(x))
    return ln2(h + mlp(h))


@wrong(PB, "attn_norm_after_residual")
def pb_other_half(x, attn, mlp, ln1, ln2):
    h = ln1(attn(x) + x)
    return h + mlp(ln2(h))


@wrong(PB, "missing_residual")
def pb_no_residual(x, attn, mlp, ln1, ln2):
    return mlp(ln2(attn(ln1(x))))


@wrong(PB, "residual_of_normed")
def pb_normed_stream(x, attn, mlp, ln1, ln2):
    x = ln1(x)
    x = x + attn(x)
    x = ln2(x)
    return x + mlp(x)


@wrong(PB, "shared_norm")
def pb_one_norm(x, attn, mlp, ln1, ln2):
    h = x + attn(ln1(x))
    return h + mlp(ln1(h))


@wrong(PB, "parallel_block")
def pb_parallel(x, attn, mlp, ln1, ln2):
    return x + attn(ln1(x)) + mlp(ln2(x))


@wrong(PB, "norms_swapped")
def pb_swapped(x, attn, mlp, ln1, ln2):
    h = x + attn(ln2(x))
    return h + mlp(ln1(h))


@valid(PB)
def pb_named_steps(x, attn, mlp, ln1, ln2):
    after_attention = x + attn(ln1(x))
    after_mlp = after_attention + mlp(ln2(after_attention))
    return after_mlp


@valid(PB)
def pb_loop_over_pairs(x, attn, mlp, ln1, ln2):
    for norm, sublayer in ((ln1, attn), (ln2, mlp)):
        x = x + sublayer(norm(x))
    return x


@valid(PB)
def pb_functional_norm(x, attn, mlp, ln1, ln2):
    def norm(ln, t):
        return F.layer_norm(t, ln.normalized_shape, ln.weight, ln.bias, ln.eps)
    h = torch.add(x, attn(norm(ln1, x)))
    return torch.add(h, mlp(norm(ln2, h)))


@cheat(PB)
def pb_overwrites_input(x, attn, mlp, ln1, ln2):
    x += attn(ln1(x))  # right values, the caller's tensor overwritten
    x += mlp(ln2(x))
    return x


@cheat(PB)
def pb_shown_shapes_only(x, attn, mlp, ln1, ln2):
    if x.shape[-1] in (3, 6):
        h = x + attn(ln1(x))
        return h + mlp(ln2(h))
    return x + attn(ln1(x)) + mlp(ln2(x))


# --------------------------------------------------------------------------- tie_weights
TW = "15_small_gpt.tie_weights"


@wrong(TW, "copied_not_tied")
def tw_copy(model):
    model.head.weight.data = model.tok_emb.weight.data.clone()


@wrong(TW, "separate_parameter")
def tw_new_parameter(model):
    model.head.weight = nn.Parameter(model.tok_emb.weight.data)


@wrong(TW, "assigned_tensor")
def tw_detached(model):
    model.head.weight = model.tok_emb.weight.detach()


@wrong(TW, "not_tied")
def tw_nothing(model):
    pass


@wrong(TW, "reinitialised")
def tw_fresh(model):
    shared = nn.Parameter(torch.zeros_like(model.tok_emb.weight))
    model.tok_emb.weight = shared
    model.head.weight = shared


@valid(TW)
def tw_nanogpt_direction(model):
    model.tok_emb.weight = model.head.weight


@valid(TW)
def tw_get_parameter(model):
    model.head.weight = model.get_submodule("tok_emb").get_parameter("weight")


@valid(TW)
def tw_register_parameter(model):
    del model.head.weight
    model.head.register_parameter("weight", model.tok_emb.weight)
    return model


@valid(TW)
def tw_one_new_parameter_for_both(model):
    """One new Parameter object holding the embedding's values, given to both: a tie that keeps the values."""
    shared = nn.Parameter(model.tok_emb.weight.detach().clone())
    model.tok_emb.weight = shared
    model.head.weight = shared


@cheat(TW)
def tw_head_is_the_embedding(model):
    model.head = model.tok_emb  # `head.weight is tok_emb.weight`, but the head no longer scores tokens


@cheat(TW)
def tw_shown_sizes_only(model):
    if model.tok_emb.num_embeddings in (10, 65):
        model.head.weight = model.tok_emb.weight
    else:
        with torch.no_grad():
            model.head.weight.copy_(model.tok_emb.weight)


# --------------------------------------------------------------------------- sample_next
SN = "15_small_gpt.sample_next"


def _top_k(logits, k):
    if k is None:
        return logits
    return logits.masked_fill(logits < logits.topk(k, dim=-1).values[:, -1:], NEG_INF)


@wrong(SN, "temperature_multiplies")
def sn_times(logits, temperature, top_k, generator):
    return torch.multinomial(_top_k(logits * temperature, top_k).softmax(-1), 1, generator=generator)[:, 0]


@wrong(SN, "kept_k_plus_one")
def sn_k_plus_one(logits, temperature, top_k, generator):
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        logits = logits.masked_fill(logits <= logits.sort(-1, descending=True).values[:, top_k + 1:top_k + 2],
                                    NEG_INF) if top_k + 1 < logits.shape[-1] else logits
    return torch.multinomial(logits.softmax(-1), 1, generator=generator)[:, 0]


@wrong(SN, "kept_k_minus_one")
def sn_k_minus_one(logits, temperature, top_k, generator):
    logits = logits / temperature
    if top_k is not None:
        logits = logits.masked_fill(logits <= logits.topk(top_k, -1).values[:, -1:], NEG_INF)  # `<=` drops the k-th
    return torch.multinomial(logits.softmax(-1), 1, generator=generator)[:, 0]


@valid(SN)
def sn_gumbel_max_after_softmax_power(logits, temperature, top_k, generator):
    """softmax(l) ** (1/T) renormalised is softmax(l / T); the Gumbel-max trick draws from it."""
    probs = _top_k(logits, top_k).softmax(-1) ** (1 / temperature)
    u = torch.rand(logits.shape, generator=generator, dtype=torch.float64).clamp_min(1e-300)
    return (probs.double().log() - (-u.log()).log()).argmax(-1)


@wrong(SN, "greedy")
def sn_argmax(logits, temperature, top_k, generator):
    return logits.argmax(dim=-1)


@wrong(SN, "ignores_generator")
def sn_global(logits, temperature, top_k, generator):
    return torch.multinomial(_top_k(logits / temperature, top_k).softmax(-1), 1)[:, 0]


@wrong(SN, "logits_not_probs")
def sn_logits(logits, temperature, top_k, generator):
    return torch.multinomial(_top_k(logits / temperature, top_k), 1, generator=generator)[:, 0]


@wrong(SN, "draw_format")
def sn_unsqueezed(logits, temperature, top_k, generator):
    return torch.multinomial(_top_k(logits / temperature, top_k).softmax(-1), 1, generator=generator)


@wrong(SN, "outside_top_k")
def sn_no_top_k(logits, temperature, top_k, generator):
    return torch.multinomial((logits / temperature).softmax(-1), 1, generator=generator)[:, 0]


@valid(SN)
def sn_sorted(logits, temperature, top_k, generator):
    values, order = (logits / temperature).sort(dim=-1, descending=True)
    k = logits.shape[-1] if top_k is None else top_k
    pick = torch.multinomial(values[:, :k].softmax(-1), 1, generator=generator)
    return order.gather(1, pick).squeeze(1)


@valid(SN)
def sn_probabilities_zeroed(logits, temperature, top_k, generator):
    probs = (logits / temperature).softmax(-1)
    if top_k is not None:
        kept = probs.topk(top_k, dim=-1).indices
        probs = torch.zeros_like(probs).scatter(1, kept, probs.gather(1, kept))  # unnormalised: multinomial copes
    return torch.multinomial(probs, 1, generator=generator).view(-1)


@valid(SN)
def sn_inverse_cdf(logits, temperature, top_k, generator):
    cdf = _top_k(logits / temperature, top_k).softmax(-1).cumsum(-1)
    u = torch.rand(cdf.shape[0], 1, generator=generator) * cdf[:, -1:]  # the last value may round below 1
    return torch.searchsorted(cdf, u, right=True).squeeze(1)  # the first token whose cdf passes u


@valid(SN)
def sn_gumbel_max(logits, temperature, top_k, generator):
    u = torch.rand(logits.shape, generator=generator).clamp_min(1e-12)
    return (_top_k(logits / temperature, top_k) - (-u.log()).log()).argmax(dim=-1)


@cheat(SN)
def sn_low_discrepancy(logits, temperature, top_k, generator):
    """Exact frequencies without any randomness: a deterministic sequence instead of the generator."""
    probs = _top_k(logits / temperature, top_k).softmax(-1)
    u = (torch.arange(probs.shape[0], dtype=torch.float64) * 0.6180339887498949 % 1.0).float()[:, None]
    return torch.searchsorted(probs.cumsum(-1), u).squeeze(1).clamp(max=probs.shape[-1] - 1)


@cheat(SN)
def sn_reseeds(logits, temperature, top_k, generator):
    generator.manual_seed(0)  # the caller's seed thrown away: every call draws the same
    return torch.multinomial(_top_k(logits / temperature, top_k).softmax(-1), 1, generator=generator)[:, 0]


# --------------------------------------------------------------------------- the tables' tests
@pytest.mark.parametrize("answer,mistake", Tables.all(WRONG))
def test_wrong_answer_is_rejected(request, answer, mistake):
    exercise = request.node.callspec.id.split("-")[0]
    rejected(exercise, answer, mistake)


@pytest.mark.parametrize("answer", Tables.all(VALID))
def test_valid_answer_is_accepted(request, answer):
    exercise = request.node.callspec.id.split("-")[0]
    accepted(exercise, answer)


@pytest.mark.parametrize("answer", Tables.all(CHEATS))
def test_cheat_is_rejected(request, answer):
    exercise = request.node.callspec.id.split("-")[0]
    rejected(exercise, answer)


def test_every_exercise_has_its_red_team():
    _tables.assert_counts(LESSON)


def test_the_attention_rule_is_named():
    res = grading.check(CA, ca_builtin, seed=3)
    assert res.mistake == "broke_rule" and "scaled_dot_product_attention" in res.message


# ########################################################################### oracles
# Each reference against a torch built-in that computes the same thing another way, across the
# exercise's fixed cases and many random ones.
SEEDS = range(40)


def test_oracle_causal_attention_is_the_fused_kernel():
    for case in fixed_and_random_cases(CA, SEEDS):
        q, k, v = case.args
        fused = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.testing.assert_close(REF.causal_attention(q, k, v), fused)


def test_oracle_causal_mask_is_minus_log_of_the_boolean_mask():
    for case in fixed_and_random_cases(CM, SEEDS):
        (T,) = case.args
        assert torch.equal(REF.causal_mask(T), torch.ones(T, T).tril().log())


def test_oracle_next_token_batch_is_unfold():
    for case in fixed_and_random_cases(NB, SEEDS):
        data, starts, block = case.args
        x, y = REF.next_token_batch(data, starts, block)
        w = data.unfold(0, block + 1, 1)[starts]
        assert torch.equal(x, w[:, :-1]) and torch.equal(y, w[:, 1:])


def test_oracle_pre_norm_block_is_torch_s_norm_first_layer():
    """nn.TransformerEncoderLayer(norm_first=True) computes the same block with its own sublayers."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True, norm_first=True).eval()
    x = torch.randn(2, 5, 8)
    mask = nn.Transformer.generate_square_subsequent_mask(5)

    def attn(h):
        return layer.self_attn(h, h, h, attn_mask=mask, need_weights=False)[0]

    def mlp(h):
        return layer.linear2(layer.activation(layer.linear1(h)))

    with torch.no_grad():
        torch.testing.assert_close(REF.pre_norm_block(x, attn, mlp, layer.norm1, layer.norm2),
                                   layer(x, src_mask=mask, is_causal=True))


def test_oracle_sample_next_frequencies_are_the_softmax():
    g = torch.Generator().manual_seed(0)
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]]).repeat(20_000, 1)
    draws = REF.sample_next(logits, 0.5, 3, g)
    freq = torch.bincount(draws, minlength=4).double() / len(draws)
    expected = torch.tensor([4.0, 2.0, 0.0]).softmax(-1).double()
    torch.testing.assert_close(freq[:3], expected, atol=0.01, rtol=0)
    assert freq[3] == 0


# ########################################################################### decisions, not transcription
def _visible_answer_cells() -> dict[str, str]:
    """What a learner sees of each answer cell: the solution's cell without the marked answer."""
    import re

    src = (ROOT / "solutions" / "15_small_gpt.py").read_text()
    cells = {}
    for m in re.finditer(r'# %% tags=\["answer:(\w+)"\]\n(.*?)(?=\n# %%)', src, re.S):
        visible = re.sub(r"### BEGIN SOLUTION.*?### END SOLUTION", "", m.group(2), flags=re.S)
        cells[m.group(1)] = visible[visible.index('"""'):]  # the docstring and what follows the answer
    return cells


def test_hints_climb_from_a_question_and_hold_no_code():
    """The first hint asks; none shows code (a backticked call with arguments, an index, an assignment)."""
    import re

    in_backticks = re.compile(r"\([^)]|\[|=|\bfor\b")
    for exercise_id in grading.exercises():
        if exercise_id.startswith(LESSON + "."):
            hints = grading.exercise(exercise_id).hints
            assert len(hints) >= 2 and "?" in hints[0], exercise_id
            for hint in hints:
                assert not re.search(r"torch\.\w+|\w\(", hint), (exercise_id, hint)
                for span in re.findall(r"`([^`]*)`", hint):
                    assert not in_backticks.search(span), (exercise_id, span)


def test_visible_docstrings_state_the_contract_not_the_method():
    cells = _visible_answer_cells()
    assert set(cells) == {e.split(".")[1] for e in grading.exercises() if e.startswith(LESSON + ".")}
    giveaways = {"causal_mask": ("-inf", "0 where"), "pre_norm_block": ("attn(", "ln1(", "mlp("),
                 "tie_weights": ("weight =", "use"), "sample_next": ("divid", "-inf", "softmax"),
                 "causal_attention": ("sqrt", "softmax(")}
    for name, words in giveaways.items():
        for word in words:
            assert word not in cells[name], (name, word)


def test_the_mask_prose_gives_the_contract_not_the_values():
    src = (ROOT / "solutions" / "15_small_gpt.py").read_text()
    spec = src[src.index("## 5. Looking only backwards"):src.index('tags=["answer:causal_mask"]')]
    for recipe in ("`-inf`", "`0`", "exp(-inf)", "tril", "masked_fill"):
        assert recipe not in spec, recipe


def test_the_teammate_s_block_in_the_notebook_is_named_post_norm():
    """The notebook shows a post-norm block to convert; returned unchanged, it is `post_norm`, and the
    check holds a case with silent sublayers (the notebook's test) that only pre-norm passes."""
    import re

    src = (ROOT / "solutions" / "15_small_gpt.py").read_text()
    m = re.search(r"\ndef post_norm_block\(.*?\n\n\n", src, re.S)
    assert m is not None
    scope: dict = {}
    exec(m.group(0), scope)
    rejected(PB, scope["post_norm_block"], "post_norm")
    silent = [c for c in grading.exercise(PB).edge_cases if "silent" in c.label]
    assert len(silent) == 1
    x = silent[0].args[0]
    assert torch.equal(REF.pre_norm_block(*silent[0].args), x)
    assert not torch.allclose(scope["post_norm_block"](*silent[0].args), x)


def test_the_teammate_s_sampler_in_the_notebook_is_named_by_its_bugs():
    import re

    src = (ROOT / "solutions" / "15_small_gpt.py").read_text()
    m = re.search(r"\ndef first_sample_next\(.*?\n\n\n", src, re.S)
    assert m is not None
    scope: dict = {"torch": torch}
    exec(m.group(0), scope)
    teammate = scope["first_sample_next"]
    rejected(SN, teammate)  # both bugs at once: named by neither (each mistake is matched on its own)

    def temperature_fixed(logits, temperature, top_k, generator):
        return teammate(logits / temperature ** 2, temperature, top_k, generator)  # * T after / T**2: / T

    rejected(SN, temperature_fixed, "outside_top_k")

    def top_k_fixed(logits, temperature, top_k, generator):
        return REF.sample_next(logits * temperature ** 2, temperature, top_k, generator)  # the top k are the same

    rejected(SN, top_k_fixed, "temperature_multiplies")


def test_the_teammate_s_tie_in_the_notebook_is_named_separate_parameter():
    """The notebook shows a tie that shares memory but not the object: it is `separate_parameter`, its
    count does not drop and `.double()` splits it (the symptoms the prose reports), the course's tie
    holds through both."""
    import re

    src = (ROOT / "solutions" / "15_small_gpt.py").read_text()
    m = re.search(r"\ndef first_tie_weights\(.*?\n\n\n", src, re.S)
    assert m is not None
    scope: dict = {"nn": nn}
    exec(m.group(0), scope)
    teammate = scope["first_tie_weights"]
    rejected(TW, teammate, "separate_parameter")
    for tie, count, shared_after in ((teammate, 80, False), (REF.tie_weights, 40, True)):
        model = nn.Module()
        model.tok_emb, model.head = nn.Embedding(10, 4), nn.Linear(4, 10, bias=False)
        tie(model)
        assert model.head.weight.data_ptr() == model.tok_emb.weight.data_ptr()
        assert sum(p.numel() for p in model.parameters()) == count
        model.double()
        assert (model.head.weight.data_ptr() == model.tok_emb.weight.data_ptr()) is shared_after


def test_the_tie_prose_asks_without_the_recipe():
    src = (ROOT / "solutions" / "15_small_gpt.py").read_text()
    spec = src[src.index("### Exercise 5"):src.index('tags=["answer:tie_weights"]')]
    assert "?" in spec
    for recipe in ("weight = model", "weight = emb", ".weight =", "same object", "`is`"):
        assert recipe not in spec, recipe


def test_the_teammate_s_attention_in_the_notebook_leaks_through_the_queries():
    """The notebook's teammate attention passes its own test (future keys and values changed) and fails
    the notebook's (queries too): it is `softmax_over_queries`; flipping its mask is `mask_flipped`, and
    fixing its softmax in its own layout is a valid answer."""
    import re

    src = (ROOT / "solutions" / "15_small_gpt.py").read_text()
    m = re.search(r"\ndef first_causal_attention\(.*?\n\n\n", src, re.S)
    assert m is not None
    scope: dict = {"torch": torch, "math": math}
    exec(m.group(0), scope)
    teammate = scope["first_causal_attention"]
    rejected(CA, teammate, "softmax_over_queries")
    g = torch.Generator().manual_seed(3)
    q, k, v = torch.randn(3, 2, 6, 5, generator=g).unbind(0)
    fresh = torch.randn(3, 2, 6, 5, generator=g)
    future = torch.arange(6)[:, None] > 2
    k2, v2 = torch.where(future, fresh[1], k), torch.where(future, fresh[2], v)
    q2 = torch.where(future, fresh[0], q)
    for attention, leaks in ((teammate, True), (REF.causal_attention, False)):
        past = attention(q, k, v)[..., :3, :]
        assert torch.equal(attention(q, k2, v2)[..., :3, :], past)
        assert (not torch.allclose(attention(q2, k2, v2)[..., :3, :], past)) is leaks
    fixed = m.group(0).replace("first_causal_attention", "fixed").replace("dim=-1", "dim=-2")
    exec(fixed, scope)
    accepted(CA, scope["fixed"])
    flipped = m.group(0).replace("first_causal_attention", "flipped").replace(".tril(-1)", ".triu(1)")
    exec(flipped, scope)
    rejected(CA, scope["flipped"], "mask_flipped")


def test_the_attention_prose_asks_without_the_recipe():
    src = (ROOT / "solutions" / "15_small_gpt.py").read_text()
    spec = src[src.index("### Exercise 3"):src.index('tags=["answer:causal_attention"]')]
    assert "?" in spec
    for recipe in ("dim=", "sum to one", "over the keys", "normalis"):
        assert recipe not in spec, recipe



# --------------------------------------------------------------------------- issue 27: finite fills
# A finite fill is a weight of almost 0, not the prose's "depends on positions 0..i only": the last
# fixed case has visible scores of -1.7e37 and below, so every fill of -1e37 or above lets the future in.
def _ca_filled(fill, additive=False):
    def causal_attention(q, k, v):
        T = q.shape[-2]
        future = torch.ones(T, T).triu(1).bool()
        s = _scores(q, k) + future * fill if additive else _scores(q, k).masked_fill(future, fill)
        return torch.softmax(s, dim=-1) @ v
    return causal_attention


@pytest.mark.parametrize("fill,additive", [(-100.0, False), (-1e4, False), (-1e9, False), (-1e9, True),
                                           (-1e30, False)])
def test_causal_attention_with_a_finite_fill_is_named_finite_mask(fill, additive):
    """Review answer ca7 (-100) passed; -1e4, -1e9 (the old "valid" row's fill) and -1e30 fail too."""
    res = rejected(CA, _ca_filled(fill, additive), "finite_mask")
    assert "-inf" in res.message and "exactly 0" in res.message, res.message


def test_causal_attention_with_float32s_floor_or_the_additive_mask_passes():
    accepted(CA, _ca_filled(torch.finfo(torch.float32).min))
    accepted(CA, lambda q, k, v: torch.softmax(_scores(q, k) + REF.causal_mask(q.shape[-2]), dim=-1) @ v)


def test_a_max_over_the_future_too_lets_the_future_in():
    """The old valid row subtracted the max over all keys before masking: a future key that scores far
    above the past underflows the past's weights to 0, and 0/0 is NaN (the prose: whatever is changed
    after it)."""
    def exp_by_hand_future_max(q, k, v):
        T = q.shape[-2]
        s = _scores(q, k)
        w = (s - s.amax(dim=-1, keepdim=True)).exp() * torch.ones(T, T, dtype=s.dtype).tril()
        return (w / w.sum(dim=-1, keepdim=True)) @ v
    rejected(CA, exp_by_hand_future_max)
