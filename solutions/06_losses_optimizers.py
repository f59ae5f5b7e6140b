# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 06 · Losses and optimizers
#
# Lesson 05 trained with `nn.CrossEntropyLoss` and Adam without asking why. This lesson opens
# both boxes: what a loss computes from a model's raw outputs, which loss fits which target,
# and what an optimizer does with the gradients, down to writing one yourself.
#
# You will learn to
#
# 1. say why models output **logits**, and compute log-softmax without overflow (log-sum-exp);
# 2. use `BCEWithLogitsLoss` for multi-label targets, with `pos_weight` for rare labels;
# 3. choose between MSE, L1 and Huber for regression;
# 4. read cross-entropy's `weight`, `ignore_index` and `label_smoothing` as formulas;
# 5. explain SGD with momentum, Adam, and why AdamW decouples weight decay;
# 6. keep biases and normalisation weights out of weight decay with parameter groups;
# 7. lower the learning rate when progress stalls (`ReduceLROnPlateau`);
# 8. write an `Optimizer` subclass that works with schedulers and `state_dict`.
#
# **Time: about 90 minutes** on your own, the five checked exercises included (about 41 of those minutes). *Run All* alone takes about 8.3 s on a 2-core CPU.

# %%
import math

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.grading import exercises_for, predictions_for, reference

ex = exercises_for("06_losses_optimizers")
quiz = predictions_for("06_losses_optimizers")  # predict-the-output questions
_ = torch.manual_seed(0)

# %% [markdown]
# ## 1. Why models output logits
#
# A classifier's last `Linear` layer gives one unbounded score per class, a **logit**. Softmax
# turns scores into probabilities, $p_i = e^{z_i} / \sum_j e^{z_j}$, and the loss takes the log
# of the right class's probability. Written exactly like that, it breaks. `float32` holds
# numbers up to about $3.4 \times 10^{38}$, and $e^{89}$ is already more:

# %%
print("exp(88):", torch.exp(torch.tensor(88.0)).item(), "  exp(89):", torch.exp(torch.tensor(89.0)).item())
print("float32 max:", torch.finfo(torch.float32).max)

# %% [markdown]
# So what does a naive softmax make of the logits `[1000, 0]`, which a confident model can
# easily produce? And a naive log-softmax of `[0, -200]`?

# %%
def naive_softmax(z):
    return torch.exp(z) / torch.exp(z).sum()


print("naive softmax of [1000, 0]:     ", naive_softmax(torch.tensor([1000.0, 0.0])))
print("naive log-softmax of [0, -200]: ", torch.log(naive_softmax(torch.tensor([0.0, -200.0]))))
print("torch.log_softmax of [0, -200]: ", torch.log_softmax(torch.tensor([0.0, -200.0]), dim=0))

# %% [markdown]
# `inf / inf` is `nan`; `exp(-200)` underflows to 0 and `log(0)` is `-inf`, where the right
# answer is a plain -200. One fact gets around it: subtracting the same number from every logit
# leaves softmax unchanged (the factor $e^{-m}$ cancels between the top and the bottom):

# %%
z = torch.tensor([2.0, 1.0, -1.0])
print("softmax(z):    ", naive_softmax(z))
print("softmax(z - 5):", naive_softmax(z - 5))

# %% [markdown]
# A colleague used it for a log-softmax of a batch of logits, one row per sample. It handles
# the logits `[1000, 0]` that broke the naive version; in a batch, it does this:

# %%
def colleague_log_softmax(logits):
    m = logits.max()  # shift the logits so that no exp overflows
    return logits - m - torch.log(torch.exp(logits - m).sum(dim=-1, keepdim=True))


print("[1000, 0]:         ", colleague_log_softmax(torch.tensor([1000.0, 0.0])))
batch = torch.tensor([[1000.0, 0.0], [2.0, 1.0]])  # a confident sample and an unsure one
print("batch, colleague:  ", colleague_log_softmax(batch))
print("batch, log_softmax:", torch.log_softmax(batch, dim=-1))

# %% [markdown]
# ### Exercise 1: a stable log-softmax
#
# Write `stable_log_softmax(logits)`: the log-softmax along the **last** dimension of a tensor
# of any shape (`(C,)`, `(N, C)`, `(N, T, C)`, ...), same shape and dtype, differentiable, and
# exact wherever the logits are finite, however large they are and however different the
# scales of the rows. **Without `softmax`, `log_softmax` or `logsumexp`** (any spelling:
# `torch.`, `F.`, tensor methods), from `max`, `exp`, `sum` and `log`: you will use the
# built-ins afterwards, this is to see what they do.
#
# Work out why the colleague's second row is `inf`, which number to subtract from which
# logits, and what the shift does to the log of the sum. The check tries huge logits, rows of
# very different scales, masked (`-inf`) logits and gradients.

# %% tags=["answer:stable_log_softmax"]
def stable_log_softmax(logits):
    ### BEGIN SOLUTION
    m = logits.amax(dim=-1, keepdim=True)  # one maximum per row, kept for broadcasting
    return logits - m - torch.log(torch.exp(logits - m).sum(dim=-1, keepdim=True))
    ### END SOLUTION


# %% tags=["check:stable_log_softmax"]
ex.stable_log_softmax.check(stable_log_softmax)

# %% [markdown]
# The colleague's shift was one number for the whole batch: the unsure row's logits sit 1000
# below it, every `exp` of that row underflows to 0, and `log(0)` is `-inf` (minus that: the
# row's `inf`). Softmax is taken row by row, and so is the shift:
#
# $$\log p_i = z_i - \log\sum_j e^{z_j} = z_i - \Big(m + \log\sum_j e^{z_j - m}\Big),\qquad m = \max_j z_j .$$
#
# With $m$ the row's largest logit, every exponent is $\le 0$ (no overflow) and one of them is
# exactly $e^0 = 1$ (the sum is at least 1, so its log is finite). That bracket is
# **log-sum-exp**, `torch.logsumexp`. This is why models output logits and the loss does the
# rest: `nn.CrossEntropyLoss` applies log-softmax itself, in this stable form. Softmax the
# outputs yourself and pass the probabilities in, and the loss silently computes something else.

# %%
m = batch.amax(dim=-1, keepdim=True)
print("m + log(sum(exp(z - m))) per row:", (m + torch.log(torch.exp(batch - m).sum(dim=-1, keepdim=True))).flatten(),
      "  torch.logsumexp:", torch.logsumexp(batch, dim=-1))

# %% [markdown]
# ## 2. Cross-entropy's targets, and the errors you will meet
#
# `nn.CrossEntropyLoss` takes logits `(N, C)` and, usually, class **indices** `(N,)` of dtype
# int64. With uniform logits every class has probability $1/C$, so what is the loss for 4 classes?

# %% [markdown]
# **Predict the output** (value): What is `round(F.cross_entropy(torch.zeros(1, 4), torch.tensor([2])).item(), 4)`?

# %% tags=["predict:uniform_cross_entropy"]
quiz.uniform_cross_entropy(
    ### BEGIN PREDICTION
    1.3863
    ### END PREDICTION
)

# %%
print(F.cross_entropy(torch.zeros(1, 4), torch.tensor([2])).item(), " log(4) =", math.log(4))

# %% [markdown]
# $-\log(1/4) = \log 4$: a classifier that knows nothing scores $\log C$, a number worth
# remembering when reading the first loss of a training run. Now two mistakes with the targets.
# What happens with labels stored as floats, `y.float()`?

# %% [markdown]
# **Predict the output** (value): `F.cross_entropy(logits, y.float())` raises for `logits` of shape (4, 3) and the class indices `y = torch.tensor([0, 2, 1, 2])`. Which targets work: a `y`, b `y.float()`, c `F.one_hot(y, 3)`, d `F.one_hot(y, 3).float()`? Answer with the list of letters in order, such as `['c']`.

# %% tags=["predict:float_index_targets"]
quiz.float_index_targets(
    ### BEGIN PREDICTION
    ['a', 'd']
    ### END PREDICTION
)

# %% tags=["raises-exception"]
logits = torch.randn(4, 3)
y = torch.tensor([0, 2, 1, 2])
F.cross_entropy(logits, y.float())

# %% [markdown]
# "expected target dtype to be Long or Byte, but got Float": a 1-D target must hold class
# indices, as integers. A target with the **same shape as the logits** is read differently: as
# class *probabilities*, which must be floats. So `F.one_hot(y, 3)`, int64, fails, while the
# same one-hot as float works and gives the same loss as the indices:

# %% tags=["raises-exception"]
F.cross_entropy(logits, F.one_hot(y, 3))

# %%
print("indices:", F.cross_entropy(logits, y).item(), "  float one-hot:", F.cross_entropy(logits, F.one_hot(y, 3).float()).item())

# %% [markdown]
# ## 3. Cross-entropy's `weight`, `ignore_index` and `label_smoothing`
#
# Three options change what cross-entropy averages. Each is a formula; let us check each one
# by hand against `F.cross_entropy` (mean reduction, the default). Write
# $\ell_i = -\log p_{i, y_i}$ for sample $i$'s loss.
#
# **`weight`** (one number $w_c$ per class) multiplies each sample's loss by its class's weight,
# and the mean becomes a *weighted* mean: divided by the sum of the weights used, not by $N$:
#
# $$\text{loss} = \frac{\sum_i w_{y_i}\,\ell_i}{\sum_i w_{y_i}}$$

# %%
logits = torch.randn(6, 4)
y = torch.tensor([0, 3, 3, 1, 3, 2])
w = torch.tensor([1.0, 2.0, 0.5, 3.0])
logp = torch.log_softmax(logits, dim=1)
nll = -logp[torch.arange(6), y]  # l_i: minus the log-probability of each sample's class
print("torch:", F.cross_entropy(logits, y, weight=w).item(), "  by hand:", ((w[y] * nll).sum() / w[y].sum()).item())
print("plain mean of the weighted losses:", (w[y] * nll).mean().item(), "(not what torch computes)")

# %% [markdown]
# **`ignore_index`** (default -100) marks samples that do not count: padding tokens in a
# sequence, unlabelled pixels. They are left out of the sum *and* of the count:

# %%
y_pad = torch.tensor([0, 3, -100, 1, -100, 2])
keep = y_pad != -100
print("torch:", F.cross_entropy(logits, y_pad).item(),
      "  by hand:", (-logp[keep, y_pad[keep]]).mean().item())

# %% [markdown]
# **`label_smoothing`** $\varepsilon$ replaces the one-hot target by $(1-\varepsilon)$ on the
# true class plus $\varepsilon / C$ spread over **all** $C$ classes (the true one included), so
# the model is never pushed towards infinitely confident logits:
#
# $$\text{loss}_i = (1-\varepsilon)\,\ell_i + \frac{\varepsilon}{C}\sum_{c} \big(-\log p_{i,c}\big)$$

# %%
eps, C = 0.1, 4
by_hand = ((1 - eps) * nll + eps / C * (-logp).sum(dim=1)).mean()
print("torch:", F.cross_entropy(logits, y, label_smoothing=eps).item(), "  by hand:", by_hand.item())

# %% [markdown]
# ### Exercise 2: cross-entropy by hand
#
# A teammate needs these options in a custom loss, so they wrote cross-entropy out by hand
# from the three formulas above. Before merging it, they compared it with `F.cross_entropy`
# on six small batches:

# %%
def teammate_cross_entropy(logits, target, weight=None, ignore_index=-100, label_smoothing=0.0):
    n_classes = logits.shape[1]
    if weight is None:
        weight = torch.ones(n_classes)
    keep = target != -100  # padding is marked -100
    logp = torch.log_softmax(logits[keep], dim=1)
    t = target[keep]
    nll = -logp.gather(1, t[:, None]).squeeze(1)  # l_i of each kept sample
    smooth = -logp.sum(dim=1)  # the eps / C part: every class
    per_sample = (1 - label_smoothing) * weight[t] * nll + label_smoothing / n_classes * smooth
    return per_sample.sum() / len(t)


def compare_with_torch(loss_fn):
    """loss_fn and F.cross_entropy on six batches of 6 samples and 4 classes."""
    g = torch.Generator().manual_seed(6)
    logits = torch.randn(6, 4, generator=g)
    y, y_pad = torch.tensor([0, 3, 3, 1, 3, 2]), torch.tensor([0, 3, -100, 1, -100, 2])
    w = torch.tensor([1.0, 2.0, 0.5, 3.0])
    probes = [("no options", y, {}), ("ignored samples (-100)", y_pad, {}),
              ("label_smoothing=0.1", y, {"label_smoothing": 0.1}), ("weight", y, {"weight": w}),
              ("ignore_index=0 (class 0 is padding)", y, {"ignore_index": 0}),
              ("weight, ignored samples, smoothing", y_pad, {"weight": w, "label_smoothing": 0.1})]
    for name, target, options in probes:
        mine, torch_says = loss_fn(logits, target, **options).item(), F.cross_entropy(logits, target, **options).item()
        print(f"{name:38s} yours {mine:.4f}   torch {torch_says:.4f}   {'ok' if abs(mine - torch_says) < 1e-5 else 'DIFFERENT'}")


compare_with_torch(teammate_cross_entropy)

# %% [markdown]
# Three batches agree, three do not. Which line does each failing batch point at? Fixing one
# line may leave a batch still failing: run the comparison on your own version as you go.
#
# Write `cross_entropy_by_hand(logits, target, weight=None, ignore_index=-100,
# label_smoothing=0.0)` returning what `F.cross_entropy` returns with the same arguments (mean
# reduction, a 0-d tensor that backpropagates to `logits`): `logits` is `(N, C)`, `target` `(N,)`
# int64 class indices, some of which may equal `ignore_index` (any integer, even a valid class
# such as 0); at least one sample is not ignored. **Without `cross_entropy`, `nll_loss` or their
# `nn` modules** (log-softmax is allowed). The check tries every combination of the options, on
# batches other than these six.

# %% tags=["answer:cross_entropy_by_hand"]
def cross_entropy_by_hand(logits, target, weight=None, ignore_index=-100, label_smoothing=0.0):
    ### BEGIN SOLUTION
    n_classes = logits.shape[1]
    if weight is None:
        weight = torch.ones(n_classes, dtype=logits.dtype)
    keep = target != ignore_index
    logp = torch.log_softmax(logits[keep], dim=1)  # (kept, C)
    t = target[keep]
    w_t = weight[t]  # each kept sample's class weight
    nll = -logp.gather(1, t[:, None]).squeeze(1)  # -log p of the true class
    smooth = -(logp * weight).sum(dim=1)  # every class, weighted by its own weight
    per_sample = (1 - label_smoothing) * w_t * nll + label_smoothing / n_classes * smooth
    return per_sample.sum() / w_t.sum()
    ### END SOLUTION


# %% tags=["check:cross_entropy_by_hand"]
ex.cross_entropy_by_hand.check(cross_entropy_by_hand)

# %% [markdown]
# The teammate's three lines: padding hard-wired as `-100` (the `ignore_index=0` batch kept
# its padding), a weighted sum divided by the count instead of by the weights used (equal
# weights hide it), and a smoothing term without the class weights, visible only once the
# division is right. Each option passed its own test; the bugs lived where they combine.

# %% [markdown]
# ## 4. Binary and multi-label targets: `BCEWithLogitsLoss`
#
# When each sample can have **several** labels at once (a photo with a dog *and* a cat), each
# label is its own yes/no question: one logit per label, a sigmoid each, and binary
# cross-entropy. `BCEWithLogitsLoss` takes the logits and float targets of the *same shape*.
# The model has a `(N, 1)` output and the targets are `(N,)`: what happens?

# %% [markdown]
# **Predict the output** (value): `bce = nn.BCEWithLogitsLoss()` raises for `logits` of shape (4, 1) and `target` of shape (4,). Which of these work: a `bce(logits.squeeze(1), target)`, b `bce(logits, target.unsqueeze(1))`, c `bce(logits.T, target)`, d `nn.BCEWithLogitsLoss(reduction='sum')(logits, target)`? Answer with the list of letters in order, such as `['c']`.

# %% tags=["predict:bce_shape_mismatch"]
quiz.bce_shape_mismatch(
    ### BEGIN PREDICTION
    ['a', 'b']
    ### END PREDICTION
)

# %% tags=["raises-exception"]
nn.BCEWithLogitsLoss()(torch.randn(4, 1), torch.ones(4))

# %% [markdown]
# A `ValueError` that names both sizes: `squeeze(1)` the output or `unsqueeze(1)` the target.
# `nn.MSELoss` only *warns* in the same situation, and broadcasts `(4, 1)` against `(4,)` to a
# `(4, 4)` grid of differences: a wrong loss that still trains.

# %%
import warnings

true = torch.arange(4.0)
pred = true.unsqueeze(1)  # perfect predictions, as a model with one output gives them: (4, 1)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    print("MSELoss on (4, 1) and (4,):", nn.MSELoss()(pred, true).item(), " differences:", tuple((pred - true).shape))
print("warning:", str(caught[0].message)[:70], "...")
print("MSELoss on (4,) and (4,):  ", nn.MSELoss()(pred.squeeze(1), true).item())

# %% [markdown]
# Check the shapes before a loss.
#
# Why "with logits"? `nn.BCELoss` takes probabilities, and for a confident wrong answer the
# sigmoid rounds to exactly 1.0 in float32:

# %%
x = torch.tensor([20.0])  # a logit: "certainly positive"
target = torch.tensor([0.0])  # ... but it is negative
print("sigmoid(20) == 1.0:", torch.sigmoid(x).item() == 1.0)
print("BCELoss(sigmoid(x)):  ", nn.BCELoss()(torch.sigmoid(x), target).item(), "(log(0) clamped to -100)")
print("BCEWithLogitsLoss(x): ", nn.BCEWithLogitsLoss()(x, target).item(), "(the true value: log(1 + e^20))")

# %% [markdown]
# With rare labels, a model that always says "no" already has a low loss. `pos_weight`
# (one number per label) multiplies the loss of the **positive** examples:
# $\ell = -[\,w_{pos}\, y \log\sigma(x) + (1-y)\log(1-\sigma(x))\,]$. Checked by hand, with
# weights picked arbitrarily:

# %%
logits = torch.randn(5, 3)
labels = torch.tensor([[1, 0, 0], [0, 0, 1], [1, 0, 0], [0, 1, 0], [1, 0, 0]], dtype=torch.float32)
pw = torch.tensor([1.0, 4.0, 4.0])
by_hand = -(pw * labels * F.logsigmoid(logits) + (1 - labels) * F.logsigmoid(-logits)).mean()
print("torch:", nn.BCEWithLogitsLoss(pos_weight=pw)(logits, labels).item(), "  by hand:", by_hand.item())

# %% [markdown]
# (`log(1 - sigmoid(x))` is `logsigmoid(-x)`, computed stably, the same idea as log-sum-exp.)
#
# What does a weight do to a model that has learnt nothing yet? Such a model gives every sample
# the same probability, and training pushes that constant to where the loss is lowest. Here is
# that best constant, found by an optimizer, for three labels positive in 50 %, 10 % and 2 % of
# 200 samples, without weights and with the weights above:

# %%
def best_constant(labels, pos_weight=None):
    """The probability per label that minimises BCEWithLogitsLoss when every sample gets the same logit."""
    logit = torch.zeros(labels.shape[1], dtype=torch.float64, requires_grad=True)
    loss_fn = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
    optimizer = torch.optim.LBFGS([logit], max_iter=100, tolerance_grad=1e-12, line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = loss_fn(logit.expand(labels.shape), labels)
        loss.backward()
        return loss

    optimizer.step(closure)
    return [round(p, 3) for p in torch.sigmoid(logit).tolist()]


i = torch.arange(200)
rare_labels = torch.stack([i % 2 == 0, i % 10 == 0, i % 50 == 0], dim=1).double()
print("positives per label:", rare_labels.sum(dim=0).tolist())
print("no pos_weight:        ", best_constant(rare_labels))
print("pos_weight [1, 4, 4]: ", best_constant(rare_labels, torch.tensor([1.0, 4.0, 4.0], dtype=torch.float64)))

# %% [markdown]
# Without weights, a model that knows nothing says "2 %" for the rarest label, and it starts
# from "no". The weights of 4 pulled the rare labels up, but not equally.
#
# ### Exercise 3: `pos_weight` from the labels
#
# Write `pos_weight_for(labels)`: `labels` is an `(N, L)` tensor of 0s and 1s (float, int or
# bool), one column per label; return the `(L,)` float32 `pos_weight` under which that best
# constant is **50 % for every label**, whatever its rate. Work it out from the numbers above
# (what did a weight of 4 do to 20 positives among 200, and to 4?) or from the loss. A label
# that is never positive, or never negative, has nothing to balance: give it 1.0.

# %% tags=["answer:pos_weight_for"]
def pos_weight_for(labels):
    ### BEGIN SOLUTION
    labels = labels.float()
    pos = labels.sum(dim=0)
    neg = labels.shape[0] - pos
    weight = neg / pos.clamp(min=1)
    return torch.where((pos == 0) | (neg == 0), torch.ones_like(weight), weight)
    ### END SOLUTION


# %% tags=["check:pos_weight_for"]
ex.pos_weight_for.check(pos_weight_for)

# %% [markdown]
# At the best constant the pull of the positives and of the negatives cancel. A weight $w$
# makes the $P$ positives of a label count like $wP$ samples against its $N$ negatives, and the
# best constant is $wP / (wP + N)$: 50 % exactly when $wP = N$, so $w = N / P$, negatives over
# positives, label by label. With the course's weights:

# %%
weights = reference("06_losses_optimizers.pos_weight_for")(rare_labels)
print("pos_weight:", [round(w, 2) for w in weights.tolist()], " best constant:",
      best_constant(rare_labels, weights.double()))

# %% [markdown]
# ## 5. Regression: MSE, L1 and Huber
#
# For a number to predict there are three common losses:
#
# - `nn.MSELoss`: the squared error. Its gradient grows with the error, so one outlier with
#   error 100 pulls 100 times harder than a point with error 1.
# - `nn.L1Loss`: the absolute error. Every point pulls equally hard, outliers included, but the
#   gradient does not shrink near the optimum either (it jumps between -1 and +1).
# - `nn.HuberLoss(delta)`: squared for errors below `delta`, absolute beyond. Robust to
#   outliers and smooth near zero. `nn.SmoothL1Loss(beta)` is the same curve divided by `beta`.
#
# Which constant minimises each loss over the data `[1, 2, 3, 4, 100]`? Think before running.

# %%
data = torch.tensor([1.0, 2.0, 3.0, 4.0, 100.0])
candidates = torch.linspace(0, 100, 100_001)[:, None]  # every constant from 0 to 100, in steps of 0.001
for name, loss in [("MSE", nn.MSELoss(reduction="none")), ("L1", nn.L1Loss(reduction="none")),
                   ("Huber(delta=1)", nn.HuberLoss(reduction="none", delta=1.0))]:
    total = loss(candidates.expand(-1, 5), data.expand(len(candidates), -1)).mean(dim=1)
    print(f"{name:15} is smallest at {candidates[total.argmin()].item():.3f}")
print("mean:", data.mean().item(), " median:", data.median().item())

# %% [markdown]
# MSE picks the **mean** (22, dragged by the outlier), L1 the **median** (3). Huber also lands
# at 3: beyond `delta` a point pulls with a fixed force, however far out it is, yet near the
# optimum its gradient shrinks smoothly like MSE's. Use MSE when big errors really are much
# worse and the noise is well behaved, L1 or Huber when the data has outliers. And the
# Huber/SmoothL1 relation, checked:

# %%
pred, true = torch.randn(100) * 3, torch.randn(100)
print("Huber(delta=2):", nn.HuberLoss(delta=2.0)(pred, true).item(),
      "  2 * SmoothL1(beta=2):", 2 * nn.SmoothL1Loss(beta=2.0)(pred, true).item())

# %% [markdown]
# ## 6. Optimizers: SGD, momentum, Adam
#
# Plain SGD moves each parameter by `-lr * grad`. On a long narrow valley that zig-zags across
# the steep direction and crawls along the shallow one. **Momentum** keeps a velocity, a
# running sum of past gradients that fades by the factor $\mu$ at each step, and moves along it:
# the zig-zags cancel and the steady direction accelerates. PyTorch's `SGD` also takes a
# `weight_decay` (an L2 penalty, pulling each weight towards 0). On the valley
# $f(x, y) = x^2/2 + 50\,y^2$:

# %%
def steps_to_converge(**sgd_kwargs):
    p = nn.Parameter(torch.tensor([10.0, 1.0]))
    opt = torch.optim.SGD([p], **sgd_kwargs)
    for step in range(1, 2001):
        opt.zero_grad()
        loss = 0.5 * p[0] ** 2 + 50 * p[1] ** 2
        if loss.item() < 1e-6:
            return step
        loss.backward()
        opt.step()
    return None


print("SGD lr=0.019:              ", steps_to_converge(lr=0.019), "steps")
print("SGD lr=0.019, momentum=0.9:", steps_to_converge(lr=0.019, momentum=0.9), "steps")

# %% [markdown]
# (A larger learning rate would not rescue plain SGD: above `lr = 2 / 100` the steep direction
# diverges.) **Adam** goes further: it keeps a running mean of the gradient (`m`, like momentum)
# and of its square (`v`), and moves by about `lr * m / sqrt(v)`. Dividing by the gradient's own
# size gives every parameter a step of about `lr`, whatever its gradient's scale, which is why
# one learning rate (1e-3) works for so many models.
#
# ## 7. Adam vs AdamW: decoupled weight decay
#
# Weight decay pulls weights towards 0. `Adam(weight_decay=wd)` does it the SGD way, adding
# `wd * p` to the gradient, and then that term goes through Adam's division by `sqrt(v)`. Take a
# parameter at 10 whose loss gradient is 0, so only the decay acts: `lr=0.1`, `weight_decay=0.01`.
# After one Adam step, what is it?

# %% [markdown]
# **Predict the output** (value): `p = nn.Parameter(torch.tensor([10.0]))`, `torch.optim.Adam([p], lr=0.1, weight_decay=0.01)`, gradient 0, one step: what is `round(p.item(), 2)`?

# %% tags=["predict:adam_decay_step"]
quiz.adam_decay_step(
    ### BEGIN PREDICTION
    9.9
    ### END PREDICTION
)

# %%
def one_step(optimizer_class, weight_decay):
    p = nn.Parameter(torch.tensor([10.0]))
    opt = optimizer_class([p], lr=0.1, weight_decay=weight_decay)
    p.grad = torch.zeros(1)  # the loss is flat: only the weight decay acts
    opt.step()
    return p.item()


for cls in (torch.optim.Adam, torch.optim.AdamW):
    for wd in (0.01, 0.0001):
        print(f"{cls.__name__:5} weight_decay={wd:<6}: 10 -> {one_step(cls, wd):.6f}")

# %% [markdown]
# Adam moved the weight by `lr = 0.1` whether the decay was 0.01 or a hundred times smaller:
# the gradient `wd * p` was divided by its own size, so the *strength* of the decay is lost (and
# for weights with large gradients the decay is drowned out). **AdamW** applies the decay
# directly to the weight, `p <- p - lr * wd * p`, outside Adam's normalisation: `10 * (1 - 0.1 *
# 0.01) = 9.99`, proportional to `wd` as intended (Loshchilov and Hutter, *Decoupled Weight Decay
# Regularization*). Use AdamW when you want weight decay with Adam; note its default
# `weight_decay` is 0.01, Adam's is 0.
#
# ## 8. No weight decay on biases and normalisation weights
#
# Decay shrinks weights towards 0 to keep a model simple. For a bias or a LayerNorm/BatchNorm
# scale that is no simplification: pulling a norm's scale towards 0 just shrinks the layer's
# output. The usual practice: decay the weights that multiply inputs (`Linear`, `Conv`,
# `Embedding`), not biases nor norm weights. An optimizer takes **parameter groups**, a list of
# dicts, each with its `"params"` and any settings that override the defaults:

# %%
model = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.ReLU(), nn.Linear(8, 2))
opt = torch.optim.AdamW([
    {"params": [model[0].weight, model[3].weight]},  # uses the default weight_decay below
    {"params": [model[0].bias, model[1].weight, model[1].bias, model[3].bias], "weight_decay": 0.0},
], lr=1e-3, weight_decay=0.05)
for group in opt.param_groups:
    print(f"{len(group['params'])} tensors, weight_decay={group['weight_decay']}, lr={group['lr']}")

# %% [markdown]
# Listing the tensors by hand does not scale. And two traps: a parameter in two groups is an
# error, and a tied weight (the same tensor used by two layers, as language models share their
# embedding and output layer) is easy to list twice. What does `model.parameters()` give for a
# tied weight, and what happens if it is put in two groups?

# %% tags=["raises-exception"]
emb = nn.Embedding(10, 4)
head = nn.Linear(4, 10, bias=False)
head.weight = emb.weight  # tied: one tensor, two layers
tied = nn.Sequential(emb, head)
print("parameters():", [tuple(p.shape) for p in tied.parameters()], "(once)")
torch.optim.AdamW([{"params": list(emb.parameters())}, {"params": list(head.parameters())}])

# %% [markdown]
# `model.parameters()` and `model.named_parameters()` list each tensor once; walking the layers
# and collecting each layer's own parameters finds the tied one twice.
#
# ### Exercise 4: parameter groups without decay
#
# Write `param_groups_no_decay(model, weight_decay)` returning a list of parameter groups for
# `torch.optim.AdamW(groups, lr=...)`: biases and the weights of normalisation layers
# (`BatchNorm1d/2d`, `LayerNorm`, `GroupNorm`, `RMSNorm`) get `weight_decay` 0.0, every other
# parameter gets `weight_decay`. Every parameter that requires grad appears exactly once; frozen
# ones (`requires_grad=False`) are left out. The check runs it on models with norms, convolutions,
# embeddings, tied and frozen weights. Decide how to tell the parameters apart, and what AdamW
# does with a group that does not say its `weight_decay`.

# %% tags=["answer:param_groups_no_decay"]
def param_groups_no_decay(model, weight_decay):
    ### BEGIN SOLUTION
    decay, no_decay = [], []
    for p in model.parameters():  # each tensor once, tied ones included
        if not p.requires_grad:
            continue
        # weights that multiply inputs are matrices or kernels; biases and norm scales are vectors
        (decay if p.ndim >= 2 else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0}]
    ### END SOLUTION


# %% tags=["check:param_groups_no_decay"]
ex.param_groups_no_decay.check(param_groups_no_decay)

# %% [markdown]
# ## 9. `ReduceLROnPlateau`: lower the rate when progress stalls
#
# A schedule from lesson 05 (warm-up, cosine) is fixed in advance. `ReduceLROnPlateau` instead
# watches a number you give it each epoch, usually the validation loss, and multiplies the rate
# by `factor` once the number has not improved for more than `patience` epochs. Note the
# argument: `scheduler.step(val_loss)`. With `patience=2`, at which epoch does the rate drop?

# %%
p = nn.Parameter(torch.zeros(1))
opt = torch.optim.SGD([p], lr=0.1)
scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=2)
val_losses = [1.0, 0.8, 0.7, 0.71, 0.72, 0.70, 0.69, 0.69, 0.70, 0.71, 0.72]
for epoch, val_loss in enumerate(val_losses):
    scheduler.step(val_loss)
    print(f"epoch {epoch:2}: val_loss {val_loss:.2f} -> lr {opt.param_groups[0]['lr']:.4f}  "
          f"(bad epochs: {scheduler.num_bad_epochs})")

# %% [markdown]
# Epochs 3, 4 and 5 do not beat 0.7 by enough: by default an improvement must be better by a
# relative `threshold=1e-4`, so 0.70 does not count. After the third bad epoch (more than
# `patience`) the rate halves and the count restarts. 0.69 at epoch 6 is a new best; the drop
# after it comes three bad epochs later. Use it when you cannot guess a schedule; the price is
# a validation pass every epoch.
#
# ## 10. Writing an `Optimizer`
#
# An optimizer is a small class. `torch.optim.Optimizer` keeps the **parameter groups**
# (`self.param_groups`, each a dict with `"params"` and its settings, filled from `defaults`)
# and a **state** per parameter (`self.state[p]`, a dict); it gives you `zero_grad`,
# `state_dict`/`load_state_dict`, `add_param_group`, and it is what schedulers accept. You
# write `__init__` (pass the defaults up) and `step`. Here is plain SGD with one mistake:

# %% tags=["raises-exception"]
class PlainSGD(torch.optim.Optimizer):
    def __init__(self, params, lr):
        super().__init__(params, dict(lr=lr))

    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.sub_(group["lr"] * p.grad)


w = nn.Parameter(torch.ones(3))
(w ** 2).sum().backward()
PlainSGD([w], lr=0.1).step()

# %% [markdown]
# "a leaf Variable that requires grad is being used in an in-place operation": autograd is
# still recording, and an update is not part of the model's computation. Decorate `step` with
# `@torch.no_grad()`: `torch.optim`'s optimizers likewise turn gradient recording off inside
# `step`. Then it matches `torch.optim.SGD`:

# %%
class PlainSGD(torch.optim.Optimizer):
    def __init__(self, params, lr):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:  # some optimizers (LBFGS) re-evaluate the loss: return it
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:  # parameters that took no part in the loss have no grad
                    p.sub_(group["lr"] * p.grad)
        return loss


a, b = nn.Parameter(torch.ones(3)), nn.Parameter(torch.ones(3))
mine, theirs = PlainSGD([a], lr=0.1), torch.optim.SGD([b], lr=0.1)
for _ in range(3):
    for p, opt in ((a, mine), (b, theirs)):
        opt.zero_grad()
        (p ** 3).sum().backward()
        opt.step()
print("PlainSGD:", a.data, "  torch SGD:", b.data)

# %% [markdown]
# Being an `Optimizer`, it works with everything built for `torch.optim`, a scheduler for one:

# %%
scheduler = torch.optim.lr_scheduler.StepLR(mine, step_size=1, gamma=0.5)
mine.zero_grad()
(a ** 3).sum().backward()
mine.step()
scheduler.step()  # after the optimizer's step, once per epoch
print("lr after one StepLR step:", mine.param_groups[0]["lr"])
print("what state_dict() saves:", mine.state_dict())

# %% [markdown]
# Why keep per-parameter values in `self.state[p]` and read `lr` from the group at every step,
# rather than in attributes of your own? Because a scheduler changes `group["lr"]`, and
# `state_dict()` saves exactly `self.state` and `self.param_groups`: anything kept elsewhere is
# lost when a run resumes from a checkpoint (lesson 09).
#
# ### Exercise 5: SGD with momentum, as an `Optimizer`
#
# "SGD with momentum" is written three ways in papers and blogs ($\mu$ the momentum, $\eta$ the
# learning rate, $g$ the gradient):
#
# | | velocity update | parameter update |
# |---|---|---|
# | A | $b \leftarrow \mu b + g$ | $p \leftarrow p - \eta\, b$ |
# | B | $v \leftarrow \mu v + \eta\, g$ | $p \leftarrow p - v$ |
# | C | $m \leftarrow \mu m + (1 - \mu)\, g$ | $p \leftarrow p - \eta\, m$ |
#
# (each velocity starts at 0), and weight decay $\lambda$ either joins the gradient before the
# velocity ($g \leftarrow g + \lambda p$) or is added to the step after it. Which did PyTorch
# choose? Here is `torch.optim.SGD` on a loss whose gradient is always 3, with a scheduler that
# halves the learning rate after step 3:

# %%
def momentum_log(make_optimizer, steps=6):
    """p after each step: loss 3 * p, p starting at 1, lr 0.1 halved after step 3, momentum 0.9, weight decay 0.1."""
    p = nn.Parameter(torch.tensor([1.0]))
    opt = make_optimizer([p], lr=0.1, momentum=0.9, weight_decay=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    values = []
    for _ in range(steps):
        opt.zero_grad()
        (3 * p).sum().backward()
        opt.step()
        scheduler.step()
        values.append(round(p.item(), 5))
    return values


print("torch.optim.SGD:", momentum_log(torch.optim.SGD))

# %% [markdown]
# Work out which rule, and which place for the decay, reproduce these six numbers (by hand for
# a step or two, or in code), then write the class `SGDMomentum(params, lr, momentum=0.9,
# weight_decay=0.0)`, a `torch.optim.Optimizer` subclass that gives **the same parameters, step
# for step**, as `torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)`
# (no dampening, no Nesterov); `momentum_log(SGDMomentum)` should print the same list. It must
# honour per-group settings, a scheduler changing `lr`, a `state_dict()` saved and loaded into
# a fresh optimizer mid-run, parameters without gradient (skip them), and `step(closure)`
# returning the closure's loss. Without `torch.optim.SGD` inside (the check compares with it).

# %% tags=["answer:SGDMomentum"]
class SGDMomentum(torch.optim.Optimizer):
    def __init__(self, params, lr, momentum=0.9, weight_decay=0.0):
        ### BEGIN SOLUTION
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay))
        ### END SOLUTION

    @torch.no_grad()
    def step(self, closure=None):
        ### BEGIN SOLUTION
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad.add(p, alpha=group["weight_decay"]) if group["weight_decay"] else p.grad
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = g.clone()  # a copy: p.grad is reused by the next backward
                else:
                    state["momentum_buffer"].mul_(group["momentum"]).add_(g)
                p.sub_(group["lr"] * state["momentum_buffer"])
        return loss
        ### END SOLUTION


# %% tags=["check:SGDMomentum"]
ex.SGDMomentum.check(SGDMomentum)

# %% [markdown]
# Rule A, with the decay in the gradient: the buffer sums gradients alone and the learning rate
# multiplies the whole of it when `p` moves, so when the scheduler halves `lr` at step 4 the step
# halves at once. Rule B agrees with it for three steps and parts at step 4 (its velocity still
# carries the old rate); rule C moves ten times less from the first step. With a constant
# learning rate A and B are the same optimizer, which is why both are in circulation.

# %%
print("SGDMomentum:    ", momentum_log(reference("06_losses_optimizers.SGDMomentum")))  # the course's answer

# %% [markdown]
# ## 11. Diagnose from the numbers
#
# Three runs, three symptoms. Decide the cause before reading the answers.
#
# 1. A 10-class classifier's first loss is 2.30; after an epoch it is still 2.30.
# 2. A 10-class classifier's first loss is 27.
# 3. Multi-label with 1 % positives: the loss falls fast to 0.05 and recall is 0.

# %% [markdown]
# Answers: (1) 2.30 is $\log 10$, the "know nothing" loss: the model is not learning (a learning
# rate of 0, a missing `optimizer.step()`, or gradients not reaching the weights). (2) Far above
# $\log 10$: the initial logits are huge (a bad initialisation or unscaled inputs), so the model
# is confidently wrong. (3) Always saying "no" is already 99 % right: weigh the positives with
# `pos_weight` (exercise 3), and judge with recall or F1, not the loss.

# %% [markdown]
# ## Recap
#
# - Models output logits; the loss applies a stable log-softmax (log-sum-exp: subtract the
#   row's maximum). Naive `exp`/`log` give `nan` or `-inf` for logits like 1000 or -200.
# - Cross-entropy targets: int64 indices `(N,)`, or float probabilities shaped like the logits.
#   A know-nothing classifier scores $\log C$.
# - `weight` makes the mean a weighted mean (divided by $\sum w_{y_i}$); `ignore_index` drops
#   samples from sum and count; `label_smoothing` mixes in $\varepsilon / C$ of every class.
# - Multi-label: `BCEWithLogitsLoss` with same-shape float targets; `pos_weight` = negatives /
#   positives per label. Regression: MSE (mean), L1 (median), Huber (robust and smooth).
# - Momentum accumulates a velocity; Adam divides by the gradient's size, so `Adam(weight_decay)`
#   loses the decay's strength; AdamW decouples it (default 0.01).
# - Decay matrices and kernels, not biases or norm weights: parameter groups, each parameter once.
# - `ReduceLROnPlateau.step(val_loss)` cuts the rate after `patience` bad epochs.
# - An `Optimizer` subclass: settings in `param_groups`, buffers in `self.state[p]`, `step` under
#   `@torch.no_grad()`; then schedulers and `state_dict` work.
#
# Next: **07_debugging**, finding out what goes wrong in a training run, and where.

# %% [markdown]
# ## Further reading
#
# PyTorch documentation:
# [loss functions in `torch.nn`](https://docs.pytorch.org/docs/stable/nn.html#loss-functions)
# (every loss with its formula, including
# [`CrossEntropyLoss`](https://docs.pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html)
# and
# [`BCEWithLogitsLoss`](https://docs.pytorch.org/docs/stable/generated/torch.nn.BCEWithLogitsLoss.html)),
# [`torch.optim`](https://docs.pytorch.org/docs/stable/optim.html) (per-parameter options,
# schedulers, the algorithms' pseudocode; each optimizer's page, e.g.
# [`AdamW`](https://docs.pytorch.org/docs/stable/generated/torch.optim.AdamW.html), states its
# update exactly) and
# [`ReduceLROnPlateau`](https://docs.pytorch.org/docs/stable/generated/torch.optim.lr_scheduler.ReduceLROnPlateau.html).
#
# The best external material:
#
# - I. Loshchilov and F. Hutter, [*Decoupled Weight Decay
#   Regularization*](https://arxiv.org/abs/1711.05101) (ICLR 2019): why L2 and weight decay
#   differ for Adam, and AdamW.
# - D. Kingma and J. Ba, [*Adam: A Method for Stochastic
#   Optimization*](https://arxiv.org/abs/1412.6980): the algorithm and its bias correction.
# - G. Goh, [*Why Momentum Really Works*](https://distill.pub/2017/momentum/), Distill 2017:
#   momentum on the narrow valley of section 6, interactively.
# - *Dive into Deep Learning*, [Optimization
#   Algorithms](https://d2l.ai/chapter_optimization/index.html): SGD, momentum, Adam and
#   schedulers derived and implemented from scratch.
# - C. Szegedy et al., [*Rethinking the Inception Architecture*](https://arxiv.org/abs/1512.00567),
#   section 7: where label smoothing comes from.
# - A. Karpathy, [*A Recipe for Training Neural Networks*](https://karpathy.github.io/2019/04/25/recipe/):
#   checking the initial loss against $\log C$, and more of section 11's habits.
