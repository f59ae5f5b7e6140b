# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 01 · Tensors
#
# A tensor is an n-dimensional array of numbers with a **shape**, a **dtype** (what kind of
# number) and a **device** (where it lives). Everything in PyTorch, from images to model
# weights to gradients, is a tensor, so this lesson is the grammar of the whole course.
#
# You will learn to
#
# 1. create tensors and read their shape, dtype and device;
# 2. predict dtypes (and why NumPy data arrives as float64);
# 3. reshape: `view` vs `reshape` vs `contiguous`;
# 4. broadcast, index (masks, `gather`, `torch.where`) and reduce along a `dim`;
# 5. tell elementwise `*` from matrix `@`, use in-place ops safely, share memory with NumPy;
# 6. make randomness repeatable.
#
# **Time: about 95 minutes** on your own, the eight checked exercises included (about 57 of those minutes). *Run All* alone takes about 4.4 s on a 2-core CPU.

# %%
import numpy as np
import torch

from course_utils.grading import exercises_for, predictions_for

ex = exercises_for("01_tensors")
quiz = predictions_for("01_tensors")  # predict-the-output questions
_ = torch.manual_seed(0)

# %% [markdown]
# ## 1. Creating tensors
#
# From Python data with `torch.tensor`, or with a factory that says what you want:

# %%
print(torch.tensor([[1, 2, 3], [4, 5, 6]]))
print(torch.zeros(2, 3))
print(torch.full((2, 2), 7.0))
print(torch.arange(0, 10, 2))
print(torch.linspace(0, 1, 5))

# %% [markdown]
# Random tensors: `rand` is uniform in [0, 1), `randn` is standard normal, `randint` draws
# integers. The `*_like` versions copy the shape, dtype and device of another tensor.

# %%
x = torch.randn(2, 3)
print(x)
print(torch.zeros_like(x))
print(torch.randint(0, 10, (2, 5)))

# %% [markdown]
# Every tensor carries three facts you will check constantly:

# %%
print("shape :", x.shape, " ndim:", x.ndim, " numel:", x.numel())
print("dtype :", x.dtype)
print("device:", x.device)

# %% [markdown]
# ## 2. dtypes and promotion
#
# Python floats become **float32**, Python ints become **int64**. Combining dtypes promotes to
# the more general one:

# %% [markdown]
# **Predict the output** (dtype): What is the dtype of `torch.tensor([1, 2, 3]) / 2`?

# %% tags=["predict:int_div_dtype"]
quiz.int_div_dtype(
    ### BEGIN PREDICTION
    torch.float32
    ### END PREDICTION
)

# %%
i = torch.tensor([1, 2, 3])
f = torch.tensor([0.5, 0.5, 0.5])
print(i.dtype, f.dtype, (i + f).dtype, (i + 1.5).dtype, (i / 2).dtype)

# %% [markdown]
# NumPy's default float is **float64**, and tensors made from NumPy arrays keep it. Models use
# float32, so data from NumPy usually needs `.float()`:

# %%
a = np.array([0.1, 0.2, 0.3])
print(a.dtype, torch.from_numpy(a).dtype, torch.from_numpy(a).float().dtype)

# %% [markdown]
# Some operations refuse integer tensors. Here is the error you will meet when averaging
# integer labels:

# %% tags=["raises-exception"]
torch.tensor([1, 2, 3]).mean()

# %% [markdown]
# The message names the dtype it got (`Long`, i.e. int64). Its class depends on the version:
# `RuntimeError` up to PyTorch 2.14, `NotImplementedError` from 2.15. `NotImplementedError` is a
# subclass of `RuntimeError`, so `except RuntimeError` catches both. The fix is to convert first:
# `labels.float().mean()`.

# %% [markdown]
# ### Exercise 1: an image from NumPy
#
# Image libraries hand you pixels as a NumPy `uint8` array of shape `(H, W)`, values 0–255. The
# model a teammate feeds takes float32 images of shape `(1, H, W)`, one channel first as
# PyTorch's convolution layers expect, on a 0–1 scale. Here is their converter on a dim photo of
# the letter F, 7 pixels high and 5 wide, with both images drawn on their own full scale:

# %%
import matplotlib.pyplot as plt  # noqa: E402


def colleagues_image_to_tensor(image):
    t = torch.from_numpy(image).float()
    return (t / t.max()).reshape(1, image.shape[1], image.shape[0])


photo = np.zeros((7, 5), dtype=np.uint8)
photo[1:6, 1] = photo[1, 1:4] = photo[3, 1:3] = 110  # a dim grey F on black
theirs = colleagues_image_to_tensor(photo)
print("photo: ", photo.shape, photo.dtype, "brightest:", photo.max())
print("theirs:", tuple(theirs.shape), theirs.dtype, "brightest:", theirs.max().item())
fig, axes = plt.subplots(1, 2, figsize=(4, 2.4))
axes[0].imshow(photo, cmap="gray", vmin=0, vmax=255)
axes[0].set_title("photo, 0-255 scale", fontsize=9)
axes[1].imshow(theirs[0], cmap="gray", vmin=0, vmax=1)
axes[1].set_title("their tensor, 0-1 scale", fontsize=9)
for ax in axes:
    ax.axis("off")
plt.show()

# %% [markdown]
# Two things differ between the pictures. Work out which part of the teammate's code causes
# each, then write `image_to_tensor(image)`: a float32 `(1, H, W)` tensor that, drawn on the
# 0–1 scale, looks exactly like the photo drawn on the 0–255 scale, for any photo of any size.
# Leave the caller's array as it was.

# %% tags=["answer:image_to_tensor"]
def image_to_tensor(image):
    ### BEGIN SOLUTION
    # np.ascontiguousarray: a flipped image (negative strides) is still an image, and
    # torch.from_numpy refuses negative strides
    return torch.from_numpy(np.ascontiguousarray(image)).float().div(255).unsqueeze(0)
    ### END SOLUTION


# %% tags=["check:image_to_tensor"]
ex.image_to_tensor.check(image_to_tensor)

# %% [markdown]
# ## 3. Devices
#
# A tensor lives on one device: `cpu`, `cuda` (an NVIDIA GPU), `mps` (Apple). Operations need
# all their tensors on the same device, and `.to(device)` returns the tensor on that device.
# Lesson 10 is about devices; for now, the pattern:

# %%
device = "cuda" if torch.cuda.is_available() else "cpu"
y = torch.ones(3).to(device)
z = torch.zeros(3, device=y.device)  # new tensors: create them where their partners live
print((y + z).device.type in ("cpu", "cuda"))

# %% [markdown]
# `.to` copies only when something changes. Asked for the device and dtype a tensor already
# has, it returns **the same tensor**, not a copy, so writing into the result writes into the
# original. Use `.clone()` when you need a copy:

# %%
t = torch.zeros(3)
print("t.to(t.device) is t:       ", t.to(t.device) is t)
print("t.to(torch.float64) is t:  ", t.to(torch.float64) is t)
print("t.clone() is t:            ", t.clone() is t)

# %% [markdown]
# ## 4. Shapes: `view`, `reshape`, `contiguous`
#
# A tensor is a flat block of memory plus **strides**: how many elements to skip to move
# one step along each dimension. `view` reinterprets the same memory with a new shape (no
# copy), so it only works when the strides allow it.

# %%
m = torch.arange(6).reshape(2, 3)
print(m, m.stride())
print(m.view(3, 2))

# %% [markdown]
# `t()` (transpose) swaps the strides instead of moving data, so the result is not
# *contiguous*, and `view` refuses:

# %%
print(m.t().stride(), m.t().is_contiguous())

# %% tags=["raises-exception"]
m.t().view(6)

# %% [markdown]
# `reshape` views when it can and copies when it must; `.contiguous()` makes the copy
# explicitly. Prefer `reshape` unless you need the guarantee that no copy happens.

# %%
print(m.t().reshape(6))
print(m.t().contiguous().view(6))

# %% [markdown]
# Adding and removing dimensions of size 1 comes up everywhere (a batch dimension, a channel
# dimension):

# %%
v = torch.arange(3)
print(v.unsqueeze(0).shape, v.unsqueeze(1).shape, v[None, :, None].shape)
print(torch.zeros(1, 3, 1).squeeze().shape, torch.zeros(2, 3, 4).flatten(1).shape)
print(torch.stack([v, v]).shape, torch.cat([v, v]).shape)

# %% [markdown]
# ### Exercise 2: flatten a batch
#
# A batch of images has shape `(N, C, H, W)`; a linear layer wants `(N, C*H*W)`, one row per
# image. A teammate's flatten passed on the batch they tried, then crashed twice in the real
# pipeline: once on a batch from an image library that stores channels last, once at the end of
# an epoch where a filter had kept no image of the batch.

# %%
def colleagues_batch_flatten(x):
    return x.view(x.shape[0], -1)


print(colleagues_batch_flatten(torch.zeros(2, 3, 4, 4)).shape)  # the batch they tried
channels_last = torch.rand(2, 4, 4, 3)  # (N, H, W, C), as the image library gives it
keep = torch.tensor([False, False])     # the filter kept no image of this batch

# %% tags=["raises-exception"]
colleagues_batch_flatten(channels_last.permute(0, 3, 1, 2))

# %% tags=["raises-exception"]
colleagues_batch_flatten(torch.zeros(2, 3, 4, 4)[keep])

# %% [markdown]
# Read both messages: what did each crashing batch have that the tried one had not, and does
# the first message's advice fix the second crash too? Then write `batch_flatten(x)`: one row
# per image, `(N, C*H*W)`, for every batch this pipeline can produce.

# %% tags=["answer:batch_flatten"]
def batch_flatten(x):
    ### BEGIN SOLUTION
    return x.flatten(1)  # reshape(len(x), -1) cannot infer -1 when N = 0
    ### END SOLUTION


# %% tags=["check:batch_flatten"]
ex.batch_flatten.check(batch_flatten)

# %% [markdown]
# ## 5. Broadcasting
#
# Elementwise operations on tensors of different shapes **broadcast**: align the shapes on
# the right; each pair of sizes must be equal, or one of them 1 (it is stretched), or missing
# (treated as 1).

# %% [markdown]
# **Predict the output** (shape): What is the shape of `col + row` for `col` of shape (3, 1) and `row` of shape (4,)?

# %% tags=["predict:broadcast_shape"]
quiz.broadcast_shape(
    ### BEGIN PREDICTION
    (3, 4)
    ### END PREDICTION
)

# %%
col = torch.tensor([[0.0], [10.0], [20.0]])  # (3, 1)
row = torch.tensor([1.0, 2.0, 3.0, 4.0])     # (4,)
print(col + row)                              # (3, 4)

# %% [markdown]
# When no rule applies you get this error, which names the dimension that failed:

# %% [markdown]
# **Predict the output** (value): `torch.ones(3, 4) + torch.ones(3)` raises. Which right-hand operands would work with `torch.ones(3, 4)`: a `torch.ones(4)`, b `torch.ones(3, 1)`, c `torch.ones(1, 3)`, d `torch.ones(1, 4)`? Answer with the list of letters in order, such as `['c']`.

# %% tags=["predict:broadcast_error"]
quiz.broadcast_error(
    ### BEGIN PREDICTION
    ['a', 'b', 'd']
    ### END PREDICTION
)

# %% tags=["raises-exception"]
torch.ones(3, 4) + torch.ones(3)

# %%
for b in (torch.ones(4), torch.ones(3, 1), torch.ones(1, 3), torch.ones(1, 4)):
    try:
        print(tuple(b.shape), "->", tuple((torch.ones(3, 4) + b).shape))
    except RuntimeError as err:
        print(tuple(b.shape), "->", err)

# %% [markdown]
# Type two shapes and watch the rules apply, dimension by dimension, next to PyTorch's own
# verdict. Try `3, 4` with `3`, then with `3, 1`; `2, 1, 4` with `3, 1`; a scalar (empty).

# %% tags=["nbval-ignore-output"]
from course_utils.lesson_props.l01_explorers import broadcast_explorer

broadcast_explorer("3, 1", "4")

# %% [markdown]
# Broadcasting `(N, 1)` against `(N,)` silently gives `(N, N)`; the most common shape bug in
# training code (lesson 05 shows it wrecking a regression). Check shapes whenever you combine
# tensors from different places.

# %% [markdown]
# ## 6. Reductions along a dimension
#
# `sum`, `mean`, `max`, `argmax`... reduce over the dimension you name, which disappears
# from the shape unless you pass `keepdim=True`:

# %% [markdown]
# **Predict the output** (shape): What is the shape of `t.sum(dim=1, keepdim=True)` for `t` of shape (2, 3)?

# %% tags=["predict:keepdim_shape"]
quiz.keepdim_shape(
    ### BEGIN PREDICTION
    (2, 1)
    ### END PREDICTION
)

# %%
t = torch.tensor([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
print(t.sum(), t.sum(dim=0), t.sum(dim=1), t.sum(dim=1, keepdim=True).shape)
print(t.max(dim=1))
print(t.argmax(dim=1))

# %% [markdown]
# With `keepdim=True` the reduced dimension stays, with size 1, so the result broadcasts back
# against the tensor it came from: one value per row (or per column). Without it,
# `t.max(dim=1).values` has shape `(2,)`, which broadcasting aligns with `t`'s *last* dimension
# (3): an error here, and a silent mix-up whenever the two sizes happen to be equal.

# %%
row_max = t.max(dim=1, keepdim=True).values   # (2, 1): each row's maximum
print(row_max.shape)
print(t - row_max)                            # each row minus its own maximum

# %% [markdown]
# ### Exercise 3: normalise rows
#
# A colleague needs every row of a 2-D tensor of positive numbers divided by its sum, so that
# each row sums to 1. Their version runs on the square matrix they tried it on; here it is on
# a 2×2 matrix and then on a 2×3 one:

# %%
def colleagues_normalize_rows(x):
    return x / x.sum(dim=1)


square = torch.tensor([[1.0, 3.0], [2.0, 6.0]])
print(colleagues_normalize_rows(square))
print("row sums:", colleagues_normalize_rows(square).sum(dim=1))

# %% tags=["raises-exception"]
colleagues_normalize_rows(torch.tensor([[1.0, 1.0, 2.0], [3.0, 1.0, 0.0]]))

# %% [markdown]
# Work out what each entry of the square matrix was divided by, and why the 2×3 matrix is
# refused, then write a `normalize_rows(x)` that keeps the contract for any number of rows and
# columns: every row of the result sums to 1. Return a new tensor; leave `x` unchanged.

# %% tags=["answer:normalize_rows"]
def normalize_rows(x):
    ### BEGIN SOLUTION
    return x / x.sum(dim=1, keepdim=True)
    ### END SOLUTION


# %% tags=["check:normalize_rows"]
ex.normalize_rows.check(normalize_rows)

# %% [markdown]
# ### Exercise 4: all distances at once
#
# Write `pairwise_distances(a, b)`: `a` is `(N, D)`, `b` is `(M, D)`; return the `(N, M)`
# tensor whose entry `[i, j]` is the Euclidean distance between `a[i]` and `b[j]`. No Python
# loops: give the two tensors shapes that broadcast.

# %% tags=["answer:pairwise_distances"]
def pairwise_distances(a, b):
    ### BEGIN SOLUTION
    return (a[:, None, :] - b[None, :, :]).pow(2).sum(dim=-1).sqrt()
    ### END SOLUTION


# %% tags=["check:pairwise_distances"]
ex.pairwise_distances.check(pairwise_distances)

# %% [markdown]
# ## 7. Indexing
#
# Slicing works as in NumPy and returns **views** (no copy). Boolean masks and index tensors
# ("advanced indexing") return **copies**.

# %%
t = torch.arange(12).reshape(3, 4)
print(t[0], t[:, 1], t[1:, ::2], t[..., -1], sep="\n")

# %%
mask = t % 3 == 0
print(mask)
print(t[mask])                          # 1-D: the selected elements
print(torch.where(mask, t, -1))         # same shape: choose per element

# %% [markdown]
# Index tensors pick elements by position. Two index tensors of the same shape are paired up
# element by element, and `gather(dim, index)` walks along `dim` picking, at every other
# position, the element that `index` names. Here each **column** of a (3, 2) table of exam
# marks chooses one **row** (the student each exam is marked for):

# %%
marks = torch.tensor([[50.0, 61.0], [72.0, 48.0], [90.0, 33.0]])   # 3 students, 2 exams
student = torch.tensor([2, 0])                                       # exam j -> a student
print(marks[student, torch.arange(2)])                 # pairs (2, 0) and (0, 1)
print(marks.gather(0, student.unsqueeze(0)))           # index shaped like the output: (1, 2)

# %% [markdown]
# ### Exercise 5: a masked mean
#
# Write `masked_mean(x, mask)`: `x` is a float `(R, C)` tensor and `mask` a boolean tensor of
# the same shape. Return the `(R,)` tensor (of `x`'s dtype) of per-row means over the positions
# where `mask` is True. A row with no True position has mean **0** (not NaN): padded sequences produce such
# rows all the time.

# %% tags=["answer:masked_mean"]
def masked_mean(x, mask):
    ### BEGIN SOLUTION
    counts = mask.sum(dim=1)
    sums = torch.where(mask, x, torch.zeros_like(x)).sum(dim=1)
    return torch.where(counts > 0, sums / counts.clamp(min=1), torch.zeros_like(sums))
    ### END SOLUTION


# %% tags=["check:masked_mean"]
ex.masked_mean.check(masked_mean)

# %% [markdown]
# ### Exercise 6: the score of each label
#
# A classification loss needs, for every prediction, the score the model gave to the **true**
# class. Write `pick_scores(scores, labels)`: `scores` holds one score per class in its **last**
# dimension, `(..., C)`, and `labels` (int64) has the shape of `scores` without that dimension.
# Return, for every position, the score of its label, in the shape of `labels`.
#
# The check's scores come from an image classifier, `(N, C)` with `labels` of shape `(N,)`,
# and from a language model, `(B, T, V)`: one score per vocabulary word at each of the `T`
# positions of `B` sequences, with `labels` `(B, T)`. One function handles both: decide along
# which dimension you pick, and how the index must be shaped for that.

# %% tags=["answer:pick_scores"]
def pick_scores(scores, labels):
    ### BEGIN SOLUTION
    return scores.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    ### END SOLUTION


# %% tags=["check:pick_scores"]
ex.pick_scores.check(pick_scores)

# %% [markdown]
# Masks and reductions together make a picture: the scikit-learn digits are 8×8 images stored
# as rows of 64 numbers. Reshape to images, select each digit with a mask, then reduce over the
# *batch* dimension to see the average "3" and the average "7":

# %%
import matplotlib.pyplot as plt

from course_utils.datasets import load_digits

X, y = load_digits()
images = X.reshape(-1, 8, 8)
fig, axes = plt.subplots(1, 3, figsize=(6, 2.2))
for ax, digit in zip(axes[:2], (3, 7)):
    ax.imshow(images[y == digit].mean(dim=0), cmap="gray_r")
    ax.set_title(f"mean of all {int((y == digit).sum())} '{digit}'s", fontsize=9)
axes[2].imshow(images.std(dim=0), cmap="magma")
axes[2].set_title("std over all images", fontsize=9)
for ax in axes:
    ax.axis("off")
plt.show()

# %% [markdown]
# ### Exercise 7: count correct predictions
#
# A classifier outputs `logits` of shape `(N, C)`: one score per class. Its prediction is the
# class with the largest score. A colleague's `count_correct(logits, labels)` should return how
# many predictions equal `labels`, as a Python `int`. On the batch below, where you can see
# that three of the four predictions are right, it says something else:

# %%
def colleagues_count_correct(logits, labels):
    return (logits.argmax() == labels).sum()


logits = torch.tensor([[2.0, 0.1, 0.3], [0.2, 0.1, 3.0], [0.5, 1.5, 0.1], [0.9, 0.2, 0.4]])
labels = torch.tensor([0, 2, 1, 1])
print("the classes with the largest score:", [max(range(3), key=lambda c: row[c].item()) for row in logits])
print("colleague's count:", colleagues_count_correct(logits, labels))

# %% [markdown]
# Find out what goes wrong (print what `logits.argmax()` gives), then write a `count_correct`
# that is right for any `(N, C)` batch and returns a Python `int`, not a tensor.

# %% tags=["answer:count_correct"]
def count_correct(logits, labels):
    ### BEGIN SOLUTION
    return int((logits.argmax(dim=1) == labels).sum().item())
    ### END SOLUTION


# %% tags=["check:count_correct"]
ex.count_correct.check(count_correct)

# %% [markdown]
# ## 8. Elementwise `*` versus matrix `@`
#
# `*` multiplies matching elements (with broadcasting); `@` is matrix multiplication, which
# contracts the last dimension of the left operand with the second-to-last of the right one.

# %%
A = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
B = torch.tensor([[10.0, 0.0], [0.0, 10.0]])
print(A * B)
print(A @ B)
print(torch.einsum("ij,jk->ik", A, B))

# %% tags=["raises-exception"]
torch.ones(3, 4) @ torch.ones(3, 4)

# %% [markdown]
# Both work on **batches**: every dimension before the last two is a batch dimension, and those
# broadcast like elementwise operations. `einsum` names each dimension with a letter; a letter
# that appears in the inputs but not in the output is summed over:

# %%
X = torch.randn(5, 3, 4)                  # 5 matrices of 3 rows and 4 columns
W = torch.randn(4, 2)
print((X @ W).shape, torch.allclose(X @ W, torch.einsum("bij,jk->bik", X, W)))
print(torch.einsum("bij,bij->bi", X, X).shape)    # the squared length of every row
print(X.transpose(-2, -1).shape)                  # swap the last two dimensions only

# %% [markdown]
# `masked_fill(mask, value)` writes `value` where a boolean mask is True (the mask broadcasts):

# %%
grid = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
print(grid.masked_fill(torch.tensor([False, True, False]), 0.0))

# %% [markdown]
# ### Exercise 8: attention, by hand
#
# Attention, the heart of a Transformer, is a few lines of what this lesson covered. Queries
# `q` of shape `(..., Lq, d)` look at keys `k` `(..., Lk, d)` and mix values `v` `(..., Lk, dv)`:
# each query scores every key (their dot product divided by $\sqrt{d}$), turns its scores into
# weights with a softmax, and returns the weighted sum of the values, `(..., Lq, dv)`. Where
# `mask` is False, the query may not look at that key. A colleague wrote it; with the values
# the identity matrix, the output *is* the weights, one row per query. Their mask is causal:
# query `i` may look at keys `0..i`.

# %%
def colleagues_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    weights = torch.softmax(scores, dim=-2)
    if mask is not None:
        weights = weights * mask  # masked keys get no weight
    return weights @ v


gen = torch.Generator().manual_seed(0)
q, k = torch.randn(3, 4, generator=gen), torch.randn(4, 4, generator=gen)
causal = torch.ones(3, 4, dtype=torch.bool).tril()
weights = colleagues_attention(q, k, torch.eye(4), causal)
print(weights)
print("each query's weights sum to:", weights.sum(dim=-1))

# %% [markdown]
# Query 0 may look only at key 0, yet it does not give key 0 all of its attention, and no
# query's weights sum to 1. Find the colleague's bugs, then write `attention(q, k, v, mask=None)`
# with the same contract: `mask` is None (every query sees every key) or a boolean tensor that
# broadcasts to `(..., Lq, Lk)`, True where looking is allowed (every query may look at one key
# at least); a key a query may not look at gets a weight of exactly 0 and changes nothing in its
# output; the `...` are any batch dimensions (none, a batch, a batch and attention heads). Do
# not use `F.scaled_dot_product_attention`: the check compares your function with it.

# %% tags=["answer:attention"]
def attention(q, k, v, mask=None):
    ### BEGIN SOLUTION
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # softmax gives these exactly 0
    return torch.softmax(scores, dim=-1) @ v
    ### END SOLUTION


# %% tags=["check:attention"]
ex.attention.check(attention)

# %% [markdown]
# PyTorch's fused version, `F.scaled_dot_product_attention`, computes the same thing (faster,
# and on a GPU without ever storing the `(Lq, Lk)` scores). A **causal** mask lets each position
# of a sequence see only itself and the positions before it, so the first position's output is
# its own value:

# %%
import torch.nn.functional as F  # noqa: E402

q, k, v = torch.randn(2, 4, 5, 8), torch.randn(2, 4, 5, 8), torch.randn(2, 4, 5, 8)  # batch, heads, L, d
causal = torch.ones(5, 5, dtype=torch.bool).tril()
print(causal.int())
out = F.scaled_dot_product_attention(q, k, v, attn_mask=causal)
print(out.shape, torch.allclose(out[..., 0, :], v[..., 0, :]))

# %% [markdown]
# ## 9. In-place operations
#
# Methods ending in `_` (`add_`, `mul_`, `zero_`, `clamp_`) and `+=` change a tensor's memory
# instead of creating a new tensor. They save memory but bite: every view of that memory
# changes too, and (lesson 02) autograd often needs the old values.

# %%
base = torch.zeros(2, 3)
row0 = base[0]          # a view
row0 += 1               # in place: also changes base
print(base)
print(base.add(5)[0, 0].item(), base[0, 0].item())  # add() leaves base alone

# %% [markdown]
# ## 10. The NumPy bridge
#
# `torch.from_numpy(a)` and `t.numpy()` **share memory** (no copy, instant), so changing one
# changes the other. `torch.tensor(a)` copies. A tensor that requires gradients must be
# `.detach()`ed first, and a GPU tensor must come to the CPU (`.cpu()`).

# %%
a = np.zeros(3)
shared = torch.from_numpy(a)
copied = torch.tensor(a)
a[0] = 42
print(shared, copied)

# %% tags=["raises-exception"]
w = torch.ones(2, requires_grad=True)
w.numpy()

# %% [markdown]
# ## 11. Repeatable randomness
#
# `torch.manual_seed(s)` resets the global generator: the same seed gives the same numbers.
# A `torch.Generator` is a private random stream that other code cannot disturb.

# %%
torch.manual_seed(42)
first = torch.rand(3)
torch.manual_seed(42)
print(torch.equal(first, torch.rand(3)))

g = torch.Generator().manual_seed(7)
print(torch.randint(0, 100, (5,), generator=g))

# %% [markdown]
# ## Recap
#
# - A tensor = data + shape + dtype + device. Print them when in doubt.
# - float32 is the default float; NumPy gives float64: convert with `.float()`.
# - `view` needs compatible strides; `reshape` always works; `permute`/`t()` make tensors
#   non-contiguous.
# - Broadcasting aligns shapes on the right; sizes must match or be 1. Beware `(N, 1)` vs `(N,)`.
# - Reductions remove the `dim` you name unless `keepdim=True`.
# - `*` is elementwise, `@` is matrix product.
# - In-place `_` ops and `from_numpy`/`.numpy()` share memory.
#
# Next: **02_autograd**, where tensors learn to compute their own gradients.

# %% [markdown]
# ## Further reading
#
# PyTorch documentation:
#
# - [`torch.Tensor`](https://docs.pytorch.org/docs/stable/tensors.html): every tensor method, and
#   the table of dtypes.
# - [Tensor attributes](https://docs.pytorch.org/docs/stable/tensor_attributes.html): `dtype`,
#   `device`, `layout`, and the type-promotion rules behind `torch.tensor([1, 2]) / 2`.
# - [Tensor views](https://docs.pytorch.org/docs/stable/tensor_view.html): which operations
#   return a view that shares memory (`view`, `transpose`, slicing) and which copy.
# - [Broadcasting semantics](https://docs.pytorch.org/docs/stable/notes/broadcasting.html): the
#   rules of section 5, with examples of what is and is not broadcastable.
# - [Reproducibility](https://docs.pytorch.org/docs/stable/notes/randomness.html): seeds, and
#   what stays non-deterministic.
#
# The best external material:
#
# - PyTorch tutorials,
#   [Tensors](https://docs.pytorch.org/tutorials/beginner/basics/tensorqs_tutorial.html): a short
#   second pass over creation, indexing and the NumPy bridge.
# - *Dive into Deep Learning*, [Data
#   manipulation](https://d2l.ai/chapter_preliminaries/ndarray.html): the same operations, with
#   the linear algebra they are used for.
# - Sebastian Raschka, [*PyTorch in One Hour*](https://sebastianraschka.com/teaching/pytorch-1h/)
#   (the web version of appendix A of *Build a Large Language Model (From Scratch)*): its tensor
#   sections are a fast review before lesson 02.
# - Sasha Rush, [Tensor Puzzles](https://github.com/srush/Tensor-Puzzles): rebuild NumPy
#   functions with broadcasting and indexing only; the best practice there is for sections 5 to
#   7.
