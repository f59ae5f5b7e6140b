# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 15 · Sequences and a small GPT
#
# A language model reads a sequence of tokens and, at every position, predicts the next one.
# GPT-2, Llama and their relatives are stacks of the same few parts: an **embedding** that turns
# token ids into vectors, **causal self-attention** that lets each position look at the ones
# before it (never after), a **block** that wraps attention and a small MLP in normalisation and
# residual connections, and a **head** that turns vectors back into one score per token. This
# lesson builds each part, trains a tiny model on real text in a few seconds on a CPU, and
# samples from it. It uses what lessons 00-12 taught: tensors, `nn.Module`, the training loop
# and cross-entropy.
#
# You will learn to
#
# 1. turn text into token ids with a character-level tokenizer, and ids into vectors with `nn.Embedding`;
# 2. cut a sequence into inputs and next-token targets;
# 3. measure a baseline (the bigram model) before training anything bigger;
# 4. build the causal mask and causal self-attention, and check it against `F.scaled_dot_product_attention`;
# 5. put attention and an MLP into a pre-norm Transformer block;
# 6. tie the output head to the embedding, and count what that saves;
# 7. train a small GPT and sample from it with a temperature and top-k.
#
# **Time: about 90 minutes** on your own, the six checked exercises included (about 44 of those minutes). *Run All* alone takes about 24 s on a 2-core CPU.

# %%
import math
import time

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.grading import exercises_for, predictions_for, reference
from course_utils.lesson_props import l15_small_gpt as course

ex = exercises_for("15_small_gpt")
quiz = predictions_for("15_small_gpt")  # predict-the-output questions
_ = torch.manual_seed(0)

# %% [markdown]
# ## 1. A corpus that ships with the course
#
# The text is the docstrings of 53 modules of Python's standard library (`textwrap`, `json`,
# `argparse`, `pathlib`, ...), extracted once by `tools/make_corpus.py` and shipped as a file,
# so it is the same offline on every machine. Its first lines say where it comes from and under
# which licence:

# %%
print(course.corpus_header())
text = course.load_corpus()
print(f"{len(text):,} characters")
print(text[:300])

# %% [markdown]
# ## 2. Characters as tokens
#
# The simplest tokenizer maps each distinct character to an integer. Take the vocabulary from
# the **training** split only: the validation text plays the part of text the model has never
# seen, and a real tokenizer is fixed before it meets new text.

# %%
n_train = int(0.9 * len(text))
train_text, val_text = text[:n_train], text[n_train:]
chars = sorted(set(train_text))
stoi = {c: i for i, c in enumerate(chars)}
itos = dict(enumerate(chars))
vocab_size = len(chars)
print("vocabulary:", vocab_size, "characters")
print("in the validation text but not the vocabulary:", sorted(set(val_text) - set(chars)))


def encode(s):
    return torch.tensor([stoi[c] for c in s], dtype=torch.long)


def decode(ids):
    return "".join(itos[int(i)] for i in ids)


print(encode("def f(x):"), repr(decode(encode("def f(x):"))))

# %% [markdown]
# Had a character occurred only in the validation text, `encode` would raise a `KeyError`; real
# tokenizers keep an "unknown" token for that. Now the whole corpus as two tensors of ids:

# %%
train_data, val_data = encode(train_text), encode(val_text)
print("train:", tuple(train_data.shape), train_data.dtype, " validation:", tuple(val_data.shape))

# %% [markdown]
# An id is a category, not a quantity: character 70 is not "more" than character 35. The model
# looks each id up in a table of learned vectors, `nn.Embedding(num_embeddings, embedding_dim)`:
# row `i` of its weight is the vector of token `i`.

# %% [markdown]
# **Predict the output** (shape): What is the shape of `nn.Embedding(95, 16)` applied to a batch of token ids of shape (4, 8)?

# %% tags=["predict:embedding_shape"]
quiz.embedding_shape(
    ### BEGIN PREDICTION
    (4, 8, 16)
    ### END PREDICTION
)

# %%
emb = nn.Embedding(vocab_size, 16)
ids = train_data[:32].view(4, 8)
print("ids", tuple(ids.shape), "->", tuple(emb(ids).shape))
print("the same as indexing the weight:", torch.equal(emb(ids), emb.weight[ids]))

# %% [markdown]
# The ids must be integers. Floats, even whole ones, are refused:

# %% [markdown]
# **Predict the output** (value): `nn.Embedding(10, 4)(torch.tensor([1.0, 2.0]))` raises. Which of these ids does it accept: a `torch.tensor([1, 2])`, b `torch.tensor([1.0, 2.0]).round()`, c `torch.tensor([1.0, 2.0]).int()`, d `torch.tensor([1.0, 2.0]).long()`? Answer with the list of letters in order, such as `['c']`.

# %% tags=["predict:float_ids_error"]
quiz.float_ids_error(
    ### BEGIN PREDICTION
    ['a', 'c', 'd']
    ### END PREDICTION
)

# %% tags=["raises-exception"]
nn.Embedding(10, 4)(torch.tensor([1.0, 2.0]))

# %% [markdown]
# "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long,
# Int": ids are `long` (or `int`), whatever their values; `encode` makes `torch.long`.
#
# Attention by itself does not know the order of its inputs (it mixes a set of vectors). A GPT
# adds a second embedding, one learned vector per **position** `0 .. block_size - 1`, to each
# token's vector.

# %%
block_size = 32
pos_emb = nn.Embedding(block_size, 16)
x_in = emb(ids) + pos_emb(torch.arange(ids.shape[1]))  # (4, 8, 16) + (8, 16): broadcast over the batch
print(tuple(x_in.shape))

# %% [markdown]
# ## 3. Inputs and targets
#
# A sequence of `block_size + 1` characters gives `block_size` training examples at once: at
# each position the model sees the characters up to there and must predict the next.
#
# ### Exercise 1: inputs and targets for next-token training
#
# Write `next_token_batch(data, starts, block_size)`: `data` is a 1-D `long` tensor of ids,
# `starts` a 1-D `long` tensor of `B` start positions (each at most `len(data) - block_size - 1`).
# Return `(x, y)`, both `(B, block_size)` `long`: row `b` of `x` is the window of `data` that
# begins at `starts[b]`, and `y[b, t]` is the id the model must predict after reading
# `x[b, :t + 1]`. Decide which window `y` is.

# %% tags=["answer:next_token_batch"]
def next_token_batch(data, starts, block_size):
    """Inputs and next-token targets, (B, block_size) each, from windows of data."""
    ### BEGIN SOLUTION
    offsets = torch.arange(block_size)
    rows = starts[:, None] + offsets  # (B, block_size) positions in data
    return data[rows], data[rows + 1]
    ### END SOLUTION


# %% tags=["check:next_token_batch"]
ex.next_token_batch.check(next_token_batch)

# %% [markdown]
# The course's answer on two windows of the text: each target row is its input row moved one
# character to the left.

# %%
x_demo, y_demo = reference("15_small_gpt.next_token_batch")(train_data, torch.tensor([0, 1000]), 12)
for xb, yb in zip(x_demo, y_demo, strict=True):
    print(repr(decode(xb)), "->", repr(decode(yb)))

# %% [markdown]
# ## 4. A baseline first: the bigram model
#
# Before a Transformer, the simplest language model: predict the next character from the current
# one alone, by counting which character follows which in the training text. Its validation loss
# (the mean cross-entropy, in nats) is the number our GPT must beat; the uniform guess,
# `ln(vocab_size)`, is the number any model must beat.

# %%
counts = torch.zeros(vocab_size, vocab_size)
counts.index_put_((train_data[:-1], train_data[1:]), torch.ones(len(train_data) - 1), accumulate=True)
bigram_probs = (counts + 1) / (counts + 1).sum(dim=1, keepdim=True)  # +1: no zero probabilities
bigram_val_loss = -bigram_probs[val_data[:-1], val_data[1:]].log().mean().item()
print(f"uniform guess {math.log(vocab_size):.2f} nats, bigram on validation {bigram_val_loss:.2f} nats")

# %% [markdown]
# ## 5. Looking only backwards: the causal mask
#
# In self-attention every position scores every other (a `(T, T)` matrix of scores), and a
# softmax over each row turns the scores into weights. During training all `T` positions are
# predicted at once, so position `t` must not see positions after `t`: they hold the very
# characters it is asked to predict. An **additive mask** does it: a `(T, T)` tensor added to the
# scores before the softmax, which leaves an allowed score as it is and leaves a blocked key a
# weight of exactly zero.
#
# ### Exercise 2: the causal mask
#
# Write `causal_mask(T)`: a float32 tensor of shape `(T, T)` to **add** to the scores, whose row
# `i` (the query at position `i`) lets it attend to key position `j` exactly when it should:
# added to any scores, the softmax of each row gives the blocked keys a weight of exactly 0 and
# the allowed ones the weights they would have among themselves. Decide which triangle is
# blocked, what happens on the diagonal, and which values go where.

# %% tags=["answer:causal_mask"]
def causal_mask(T):
    """The (T, T) float32 mask to add to attention scores (row: query position, column: key)."""
    ### BEGIN SOLUTION
    allowed = torch.ones(T, T, dtype=torch.bool).tril()  # key j <= query i
    return torch.zeros(T, T).masked_fill(~allowed, float("-inf"))
    ### END SOLUTION


# %% tags=["check:causal_mask"]
ex.causal_mask.check(causal_mask)

# %% [markdown]
# **Predict the output** (value): Scores of all zeros `(4, 4)` plus the causal mask, softmax over each row: what is row 0 of the weights, rounded to 2 decimals (a list of 4 numbers)?

# %% tags=["predict:first_row_weights"]
quiz.first_row_weights(
    ### BEGIN PREDICTION
    [1.0, 0.0, 0.0, 0.0]
    ### END PREDICTION
)

# %%
weights = torch.softmax(torch.zeros(4, 4) + reference("15_small_gpt.causal_mask")(4), dim=-1)
print(reference("15_small_gpt.causal_mask")(4))
print(weights.round(decimals=2))

# %% [markdown]
# The first position can only look at itself; the last averages over all four. Had the diagonal
# been masked too, row 0 would be all `-inf`, and its softmax `0/0`:

# %%
print(torch.softmax(torch.full((4,), float("-inf")), dim=-1))

# %% [markdown]
# ## 6. Causal self-attention
#
# Each position emits a query `q`, a key `k` and a value `v`. The output at position `i` is a
# mix of the values, weighted by a softmax of the dot products `q_i . k_j` over the positions `j`
# it may see, rescaled first so that their spread does not grow with the size `d` of a query.
#
# A teammate wrote it with the scores laid out one row per **key**, and tested that it does not
# look ahead: change the keys and values after position `t`, and the outputs up to `t` stay put.

# %%
def first_causal_attention(q, k, v):  # the teammate's attention
    T = q.shape[-2]
    scores = k @ q.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., T, T): row j a key, column i a query
    later = torch.ones(T, T, dtype=torch.bool).tril(-1)  # key j after query i (j > i): below the diagonal here
    weights = torch.softmax(scores.masked_fill(later, float("-inf")), dim=-1)
    return weights.transpose(-2, -1) @ v  # (..., T, dv): row i the output of query i


def future_changed(q, k, v, t, which):  # new values at the positions after t, in the tensors named
    g = torch.Generator().manual_seed(1)
    return [torch.where(torch.arange(x.shape[-2])[:, None] > t, torch.randn(x.shape, generator=g), x)
            if name in which else x for name, x in zip("qkv", (q, k, v), strict=True)]


q, k, v = torch.randn(3, 6, 8, generator=torch.Generator().manual_seed(0)).unbind(0)
t, out = 2, first_causal_attention(q, k, v)
for which in ("kv", "qkv"):
    moved = first_causal_attention(*future_changed(q, k, v, t, which))[:t + 1] - out[:t + 1]
    print(f"future {which:>3} changed: outputs 0..{t} move by up to {moved.abs().max():.3f}")

# %% [markdown]
# In a model a later token brings its own query, key and value, and with all three changed the
# past moves: the model would learn to read the future, and fail at generation, where there is none.
#
# ### Exercise 3: causal attention without a leak
#
# Where does the teammate's attention let the future in, when its mask passes their test? Write
# `causal_attention(q, k, v)` for `q`, `k` of shape `(..., T, d)` and `v` of shape `(..., T, dv)`
# (any leading batch and head dimensions): the output `(..., T, dv)` of scaled dot-product
# attention in which the output at position `i` depends on positions `0..i` only, whatever is
# changed after it: what `F.scaled_dot_product_attention(q, k, v, is_causal=True)` computes, which
# you may not call (the cell after the check compares). You may use your `causal_mask`, and the
# teammate's layout or your own.

# %% tags=["answer:causal_attention"]
def causal_attention(q, k, v):
    """Causal scaled dot-product attention: (..., T, d), (..., T, d), (..., T, dv) -> (..., T, dv)."""
    ### BEGIN SOLUTION
    T, d = q.shape[-2], q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (..., T, T): one per (query, key)
    allowed = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
    ### END SOLUTION


# %% tags=["check:causal_attention"]
ex.causal_attention.check(causal_attention)

# %% [markdown]
# PyTorch's fused kernel computes the same thing, `is_causal=True` standing for our mask (the
# course's answer here; yours is the same once its check passes):

# %%
q, k, v = torch.randn(3, 2, 10, 8, generator=torch.Generator().manual_seed(0)).unbind(0)
ours = reference("15_small_gpt.causal_attention")(q, k, v)
builtin = F.scaled_dot_product_attention(q, k, v, is_causal=True)
print(tuple(ours.shape), "same as F.scaled_dot_product_attention(..., is_causal=True):",
      torch.allclose(ours, builtin, atol=1e-6))

# %% [markdown]
# A model uses several **heads**: `d_model` features are split into `n_head` groups, each
# attending on its own, and the results are concatenated and mixed by a linear layer.

# %%
class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)  # queries, keys and values in one matrix product
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = reference("15_small_gpt.causal_attention")(q, k, v)  # (B, n_head, T, C // n_head)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


print(CausalSelfAttention(16, 2)(x_in).shape)

# %% [markdown]
# ## 7. The pre-norm Transformer block
#
# A block is two sublayers: attention (positions exchange information) and an MLP (each
# position on its own). Each has its own `LayerNorm` and a **residual** connection: the
# sublayer's result is added to a stream that runs through the whole stack. A teammate wrote the
# block as the original Transformer (2017) did, normalising after the residual is added
# ("post-norm"):

# %%
def post_norm_block(x, attn, mlp, ln1, ln2):  # the teammate's block
    x = ln1(x + attn(x))
    return ln2(x + mlp(x))


# %% [markdown]
# A residual stream should let what earlier layers wrote reach the last layer. Test it where the
# answer is obvious: a block whose two sublayers contribute nothing (a layer that has learned
# nothing yet, or one a model could skip) should hand its input on as it came.

# %%
def silent(t):  # a sublayer that contributes nothing
    return torch.zeros_like(t)


stream = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(0)) * 3 + 1
ln1, ln2 = nn.LayerNorm(16), nn.LayerNorm(16)
out = post_norm_block(stream, silent, silent, ln1, ln2)
print("post-norm, sublayers silent: stream unchanged?", torch.allclose(out, stream),
      f"  largest change {(out - stream).abs().max():.2f}, stream's std {stream.std():.2f} -> {out.std():.2f}")

# %% [markdown]
# Every post-norm block rescales the whole stream, so a gradient on its way from the loss to the
# first layer passes through two norms per block. GPT-2 and nearly every model since normalise
# elsewhere ("pre-norm"), which keeps a clean path from the first layer to the last and trains
# without warm-up tricks.
#
# ### Exercise 4: the pre-norm block
#
# Write `pre_norm_block(x, attn, mlp, ln1, ln2)`, the teammate's block converted to pre-norm:
# `x` is `(B, T, C)`; `attn` and `mlp` are the two sublayers, `ln1` and `ln2` their
# `LayerNorm`s (all callables from `(B, T, C)` to `(B, T, C)`), the same four parts with the same
# roles: attention first, then the MLP on the stream as attention left it, `ln1` attention's norm
# and `ln2` the MLP's. Each norm now works on what its sublayer reads, and a block whose
# sublayers contribute nothing returns `x` unchanged (one of the check's cases). Decide where
# each norm goes and what is added to what.

# %% tags=["answer:pre_norm_block"]
def pre_norm_block(x, attn, mlp, ln1, ln2):
    """The block's output, (B, T, C), for an input x of shape (B, T, C)."""
    ### BEGIN SOLUTION
    x = x + attn(ln1(x))
    return x + mlp(ln2(x))
    ### END SOLUTION


# %% tags=["check:pre_norm_block"]
ex.pre_norm_block.check(pre_norm_block)

# %% [markdown]
# The course's pre-norm block on the same test: the stream comes through untouched.

# %%
out = reference("15_small_gpt.pre_norm_block")(stream, silent, silent, ln1, ln2)
print("pre-norm, sublayers silent: stream unchanged?", torch.equal(out, stream))

# %%
class Block(nn.Module):
    def __init__(self, d_model, n_head):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        return reference("15_small_gpt.pre_norm_block")(x, self.attn, self.mlp, self.ln1, self.ln2)


# %% [markdown]
# ## 8. Weight tying
#
# The embedding maps token `i` to row `i` of a `(vocab_size, d_model)` matrix; the output head,
# `nn.Linear(d_model, vocab_size, bias=False)`, scores token `i` with row `i` of a weight of the
# same shape. GPT-2 uses **one** matrix for both (Press & Wolf, 2017): a token's input vector and
# its output vector are the same, which saves parameters and, on small data, often generalises
# better.
#
# A teammate tied them, and checked their work: the two weights share memory.

# %%
def first_tie_weights(model):  # the teammate's tie
    model.head.weight = nn.Parameter(model.tok_emb.weight)


class Pair(nn.Module):  # the two layers of the lesson's model that are to share a matrix
    def __init__(self):
        super().__init__()
        self.tok_emb, self.head = nn.Embedding(10, 4), nn.Linear(4, 10, bias=False)


pair = Pair()
untied = sum(p.numel() for p in pair.parameters())
first_tie_weights(pair)
print("same memory:", pair.head.weight.data_ptr() == pair.tok_emb.weight.data_ptr())
print("parameters before the tie:", untied, " after:", sum(p.numel() for p in pair.parameters()))
pair.double()  # what model.to(dtype) or model.half() does to every parameter
print("same memory after .double():", pair.head.weight.data_ptr() == pair.tok_emb.weight.data_ptr())

# %% [markdown]
# The memory is shared, yet the model still counts 80 numbers, not 40, and one change of dtype
# splits the pair into two matrices that train apart from then on.
#
# ### Exercise 5: a tie that holds
#
# Why does the count not drop, and what does the optimizer see in the teammate's model? Write
# `tie_weights(model)` that ties for good: `model` has an `nn.Embedding` `model.tok_emb` and an
# `nn.Linear` `model.head` (no bias) of matching sizes; afterwards the model counts the shared
# matrix once, one training step moves it through both of its uses, and a later `.double()`
# leaves it shared. Keep the values the model has (it may already be trained), change nothing
# else and return nothing.

# %% tags=["answer:tie_weights"]
def tie_weights(model):
    """Ties model.head to model.tok_emb for good, in place; returns None."""
    ### BEGIN SOLUTION
    model.head.weight = model.tok_emb.weight
    ### END SOLUTION


# %% tags=["check:tie_weights"]
ex.tie_weights.check(tie_weights)

# %% [markdown]
# **Predict the output** (value): `head = nn.Linear(4, 10, bias=False)`, then `both = nn.ModuleList([head, head])`: the same module twice. How many numbers does `sum(p.numel() for p in both.parameters())` count?

# %% tags=["predict:tied_param_count"]
quiz.tied_param_count(
    ### BEGIN PREDICTION
    40
    ### END PREDICTION
)

# %%
head = nn.Linear(4, 10, bias=False)
both = nn.ModuleList([head, head])
print("the same module twice:", sum(p.numel() for p in both.parameters()))
print("two modules:", sum(p.numel() for p in nn.ModuleList([head, nn.Linear(4, 10, bias=False)]).parameters()))

# %% [markdown]
# ## 9. The model, trained
#
# Token and position embeddings, a stack of blocks, a final `LayerNorm` and the tied head. The
# embeddings start small (standard deviation 0.02, as in GPT-2): with the head tied, large
# embedding vectors would mean huge first logits and a first loss far above `ln(vocab_size)`.

# %%
class TinyGPT(nn.Module):
    def __init__(self, vocab_size, block_size, d_model=32, n_head=2, n_layer=2, tie=True):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(block_size, d_model)
        self.blocks = nn.Sequential(*[Block(d_model, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        nn.init.normal_(self.tok_emb.weight, std=0.02)
        nn.init.normal_(self.pos_emb.weight, std=0.02)
        if tie:
            reference("15_small_gpt.tie_weights")(self)

    def forward(self, idx):  # (B, T) ids -> (B, T, vocab_size) logits
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(idx.shape[1], device=idx.device))
        return self.head(self.ln_f(self.blocks(x)))


def count(model):
    return sum(p.numel() for p in model.parameters())


_ = torch.manual_seed(0)
model = TinyGPT(vocab_size, block_size)
print(f"tied: {count(model):,} parameters; untied: {count(TinyGPT(vocab_size, block_size, tie=False)):,}")

# %% [markdown]
# Training is lesson 05's loop. The logits are `(B, T, vocab_size)` and the targets `(B, T)`:
# flatten both so that `F.cross_entropy` sees `B * T` predictions. The validation loss is measured
# on the same fixed windows every time.

# %%
batch_size, num_steps, lr = 32, 500, 5e-3
g = torch.Generator().manual_seed(0)
val_x, val_y = reference("15_small_gpt.next_token_batch")(val_data, torch.randint(len(val_data) - block_size - 1, (64,), generator=g),
                                       block_size)


def val_loss(model):
    model.eval()
    with torch.no_grad():
        loss = F.cross_entropy(model(val_x).flatten(0, 1), val_y.flatten()).item()
    model.train()
    return loss


optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
start = time.perf_counter()
for step in range(num_steps + 1):
    starts = torch.randint(len(train_data) - block_size - 1, (batch_size,), generator=g)
    X, y = reference("15_small_gpt.next_token_batch")(train_data, starts, block_size)
    loss = F.cross_entropy(model(X).flatten(0, 1), y.flatten())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 250 == 0:
        print(f"step {step:3d}: train {loss.item():.2f}, validation {val_loss(model):.2f}")
print(f"bigram baseline on validation: {bigram_val_loss:.2f}")

# %% tags=["nbval-ignore-output"]
print(f"{num_steps} steps in {time.perf_counter() - start:.1f} s")

# %% [markdown]
# ## 10. Sampling
#
# To generate, feed the model its own output: take the logits at the **last** position, turn them
# into probabilities, draw one token, append it, repeat. Two knobs shape the draw. The
# **temperature** `T` is the one of physics: a state of energy `E` has a probability proportional
# to `exp(-E / T)`, and a logit plays the part of `-E`. At `T = 1` the draw follows the model's own
# probabilities; below 1 it leans towards the most likely token, above 1 towards uniform. **Top-k**
# lets only the `k` most likely tokens of a row be drawn, in the proportions they have among
# themselves, so a rare, silly token can never come out.
#
# A teammate wrote the sampler:

# %%
def first_sample_next(logits, temperature, top_k, generator):  # the teammate's sampler
    logits = logits * temperature
    if top_k is not None:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, 0.0)
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, num_samples=1, generator=generator).squeeze(-1)


# %% [markdown]
# Measure it on one row of logits, drawn 10,000 times: how often each token comes out, first at
# two temperatures, then with `top_k=2`.

# %%
row = torch.tensor([[3.0, 2.0, -1.0, -2.0, -3.0]]).repeat(10_000, 1)
for temperature, top_k in ((0.5, None), (2.0, None), (1.0, 2)):
    draws = first_sample_next(row, temperature, top_k, torch.Generator().manual_seed(0))
    print(f"temperature {temperature}, top_k {top_k}: counts per token", torch.bincount(draws, minlength=5).tolist())

# %% [markdown]
# At temperature 0.5 the most likely token comes out *less* often than at 2, and with `top_k=2`
# the three tokens outside the top two are still drawn.
#
# ### Exercise 6: repair the sampler
#
# Write `sample_next(logits, temperature, top_k, generator)`, the teammate's sampler without its
# two problems: `logits` is `(B, V)`; return a `(B,)` `long` tensor, one token id per row, drawn
# from the distribution the temperature and top-k give (`top_k=None`: all tokens). Draw with
# `generator` (a `torch.Generator`) so the same seed gives the same text, and leave the global
# random state alone. For each symptom, decide what the teammate's code gets wrong.

# %% tags=["answer:sample_next"]
def sample_next(logits, temperature, top_k, generator):
    """One token id per row of logits (B, V), drawn at the given temperature among the top_k."""
    ### BEGIN SOLUTION
    logits = logits / temperature
    if top_k is not None:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]  # the k-th largest of each row
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, num_samples=1, generator=generator).squeeze(-1)
    ### END SOLUTION


# %% tags=["check:sample_next"]
ex.sample_next.check(sample_next)

# %% [markdown]
# Generation with the course's `sample_next`; the context is cut to the last `block_size`
# characters, as the position table has no more rows. The same seed gives the same text.

# %%
@torch.no_grad()
def generate(model, prompt, num_chars, temperature=1.0, top_k=None, seed=0):
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    idx = encode(prompt)[None]
    for _ in range(num_chars):
        logits = model(idx[:, -block_size:])[:, -1]  # the scores for the next character
        idx = torch.cat([idx, reference("15_small_gpt.sample_next")(logits, temperature, top_k, gen)[:, None]], dim=1)
    return decode(idx[0])


print(generate(model, "Return the ", 200, temperature=0.8, top_k=10))

# %%
for temperature in (0.5, 1.5):
    print(f"--- temperature {temperature}:", repr(generate(model, "Return the ", 80, temperature, top_k=None)))

# %% [markdown]
# ## Recap
#
# - A character tokenizer maps the training text's characters to ids; `nn.Embedding` looks each
#   (`long`) id up in a table of vectors, and a second table gives each position its vector.
# - Next-token training: the targets are the inputs shifted one place to the left, so one window of
#   `block_size + 1` ids gives `block_size` predictions.
# - Measure a baseline first: counting bigrams gave the number the GPT had to beat.
# - Causal self-attention: `softmax(q k^T / sqrt(d) + mask) @ v`, the mask `0` on and below the
#   diagonal and `-inf` above it, added before the softmax; `F.scaled_dot_product_attention(...,
#   is_causal=True)` is the fused version.
# - A pre-norm block is `x + attn(ln1(x))` then `x + mlp(ln2(x))`; the head can share the
#   embedding's weight (one `Parameter`, assigned, not copied).
# - Sampling: divide the logits by the temperature, keep the top k, softmax, draw with a seeded
#   `torch.Generator`.
#
# Next: scale it up with lesson 10's tools (a GPU, mixed precision, `torch.compile`), or swap the
# character tokenizer for a subword one (byte-pair encoding).

# %% [markdown]
# ## Further reading
#
# PyTorch documentation:
# [`nn.Embedding`](https://docs.pytorch.org/docs/stable/generated/torch.nn.Embedding.html),
# [`F.scaled_dot_product_attention`](https://docs.pytorch.org/docs/stable/generated/torch.nn.functional.scaled_dot_product_attention.html)
# (the reference implementation in its docs is this lesson's attention, with dropout and a scale
# option) and
# [`nn.TransformerEncoderLayer`](https://docs.pytorch.org/docs/stable/generated/torch.nn.TransformerEncoderLayer.html)
# (`norm_first=True` is the pre-norm block; with a causal mask it is a GPT block).
#
# The best external material:
#
# - A. Karpathy, [*Let's build GPT: from scratch, in code, spelled
#   out*](https://www.youtube.com/watch?v=kCc8FmEb1nY) (video) and
#   [nanoGPT](https://github.com/karpathy/nanoGPT): the same model on Shakespeare, then GPT-2.
# - A. Vaswani et al., [*Attention Is All You Need*](https://arxiv.org/abs/1706.03762) (2017): the
#   Transformer and scaled dot-product attention.
# - A. Radford et al., [*Language Models are Unsupervised Multitask
#   Learners*](https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf)
#   (GPT-2, 2019): pre-norm blocks and the tied output layer.
# - O. Press and L. Wolf, [*Using the Output Embedding to Improve Language
#   Models*](https://arxiv.org/abs/1608.05859) (2017): why weight tying helps.
