# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 02 · Autograd
#
# Training a network means nudging its weights in the direction that lowers the loss, and
# that direction is the **gradient**. PyTorch computes gradients for you: while your code
# runs, *autograd* records every operation on tensors that ask for it, and `backward()` walks
# that record in reverse, applying the chain rule.
#
# You will learn to
#
# 1. ask for gradients (`requires_grad`), read the graph (`grad_fn`), tell leaves from the rest;
# 2. call `backward()` on scalars, and on vectors (vector-Jacobian products);
# 3. handle accumulation, `retain_graph`, `no_grad` / `inference_mode` / `detach`;
# 4. recognise the errors in-place operations and cut graphs cause;
# 5. take higher derivatives with `torch.autograd.grad` (a Hessian-vector product), and check gradients numerically;
# 6. write a custom `torch.autograd.Function`, and inspect gradients with hooks;
# 7. run gradient descent by hand, and feel what the learning rate does.
#
# **Time: about 115 minutes** on your own, the seven checked exercises included (about 62 of those minutes). *Run All* alone takes about 7.4 s on a 2-core CPU.

# %%
import warnings

import matplotlib.pyplot as plt
import torch

from course_utils.lesson_props.l02_autograd_graph import draw_graph
from course_utils.grading import exercises_for, predictions_for

ex = exercises_for("02_autograd")
quiz = predictions_for("02_autograd")  # predict-the-output questions
_ = torch.manual_seed(0)

# %% [markdown]
# ## 1. Asking for gradients
#
# A tensor created with `requires_grad=True` is watched: every result computed from it
# remembers how it was made.

# %%
x = torch.tensor(2.0, requires_grad=True)
y = x**2 + 3 * x
print(y)
print(y.requires_grad, y.grad_fn)

# %% [markdown]
# `y.backward()` computes dy/dx and stores it in `x.grad`. Here dy/dx = 2x + 3 = 7:

# %%
y.backward()
print(x.grad)

# %% [markdown]
# ### Leaves and non-leaves
#
# Tensors you create yourself are **leaves**. A result of an operation on a tensor that
# requires grad is not: it has a `grad_fn`. (A result computed only from tensors that do not
# require grad is a leaf too, with no history, since there is nothing to trace.) Only leaves
# that require grad get a `.grad` after `backward()`: they are what you train (the weights). An
# intermediate result's gradient is used on the way and thrown away.

# %%
print("x leaf:", x.is_leaf, "  y leaf:", y.is_leaf)
print("result of untracked tensors is a leaf:", (torch.ones(2) * 2).is_leaf)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    print("y.grad:", y.grad)
print("warning:", str(caught[0].message)[:112], "...")

# %% [markdown]
# If you do want an intermediate gradient, call `retain_grad()` on it before `backward()`:

# %%
x = torch.tensor(2.0, requires_grad=True)
h = x * 3
h.retain_grad()
z = h**2
z.backward()
print("dz/dh =", h.grad.item(), "  dz/dx =", x.grad.item())

# %% [markdown]
# ## 2. The graph behind `grad_fn`
#
# Every result points to the operation that made it (`grad_fn`), which points to the
# operations that made *its* inputs (`next_functions`), down to the leaves, whose
# `AccumulateGrad` nodes write into `.grad`. That chain is the **autograd graph**:

# %%
x = torch.tensor(1.5, requires_grad=True)
w = torch.tensor(-0.5, requires_grad=True)
b = torch.tensor(0.1, requires_grad=True)
z = torch.sigmoid(w * x + b)
print(z.grad_fn)
print(z.grad_fn.next_functions)

# %% [markdown]
# Easier to see drawn. Arrows follow the forward computation; `backward()` walks them from
# right to left, multiplying local derivatives (the chain rule).

# %%
draw_graph(z, names={"x": x, "w": w, "b": b, "z": z})
plt.show()

# %% [markdown]
# The graph is **rebuilt on every forward pass** as your Python code runs. That is what lets
# ordinary `if`s and loops decide the computation (section 9): each run records only the
# operations that actually happened.

# %% [markdown]
# ## 3. `backward()` on a scalar: the chain rule at work
#
# A typical case: a loss that is a single number. For the squared error of a line
# `pred = w * x + b` against a target `t`, the chain rule gives
# d loss/dw = 2 (pred − t) · x and d loss/db = 2 (pred − t). Autograd agrees:

# %%
x, t = torch.tensor(3.0), torch.tensor(10.0)
w = torch.tensor(2.0, requires_grad=True)
b = torch.tensor(1.0, requires_grad=True)
pred = w * x + b
loss = (pred - t) ** 2
loss.backward()
print("autograd:", w.grad.item(), b.grad.item())
print("by hand: ", (2 * (pred - t) * x).item(), (2 * (pred - t)).item())

# %% [markdown]
# ### Exercise 1: a derivative by hand that survives float32
#
# Softplus, f(x) = log(1 + eˣ), is a smooth ReLU. Write `dfdx(x)`: its derivative, worked out
# **by hand** (the chain rule; no autograd), element by element for a float tensor `x` of any
# shape. The check compares it with autograd's derivative of `torch.nn.functional.softplus`,
# on ordinary values and on the large ones a real network produces (|x| up to 100) in float32:
# of the ways to write the same formula, only some stay finite there. Decide which.

# %% tags=["answer:dfdx"]
def dfdx(x):
    ### BEGIN SOLUTION
    # eˣ / (1 + eˣ) is the same number, but e¹⁰⁰ overflows float32: inf / inf is nan
    return 1 / (1 + torch.exp(-x))
    ### END SOLUTION


# %% tags=["check:dfdx"]
ex.dfdx.check(dfdx)

# %% [markdown]
# ## 4. Non-scalar outputs: vector-Jacobian products
#
# `backward()` needs to know how much each output matters. For one number that is obvious
# (1); for a vector it is not, so PyTorch refuses:

# %% tags=["raises-exception"]
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x**2
y.backward()

# %% [markdown]
# Pass a vector `v` with one weight per output. `y.backward(gradient=v)` computes the
# **vector-Jacobian product** vᵀJ, where J[i, j] = ∂yᵢ/∂xⱼ. That is exactly what the chain
# rule needs when `y` feeds later computations: `v` is the gradient arriving from above.
# `y.sum().backward()` is the special case v = (1, 1, 1).

# %%
v = torch.tensor([1.0, 0.1, 0.01])
y.backward(gradient=v)
print("x.grad  =", x.grad)
J = torch.autograd.functional.jacobian(lambda x: x**2, x.detach())
print("v @ J   =", v @ J)

# %% [markdown]
# Autograd never builds J: a network with a million weights would need a
# million-by-something matrix. It computes vᵀJ directly, backwards through the graph.
#
# ### Exercise 2: the whole Jacobian from vector-Jacobian products
#
# Sometimes you do want J itself: for a small function, to look at how each output depends on
# each input, or to test a derivative. Write `jacobian(fn, x)`: `fn` maps a 1-D tensor `x`
# (n elements) to a 1-D tensor `y` (m elements, m ≠ n); return the m x n matrix
# J[i, j] = ∂yᵢ/∂xⱼ. Build it only from what this section showed, backward passes with a
# `gradient=` vector (the library's `jacobian` above, and its relatives, are off limits).
# One pass gives one vector, vᵀJ: decide which vectors to pass, how many passes you need, and
# where each result goes in J. Do not change the caller's `x`.

# %% tags=["answer:jacobian"]
def jacobian(fn, x):
    ### BEGIN SOLUTION
    m = fn(x.detach()).numel()
    rows = []
    for i in range(m):
        leaf = x.detach().requires_grad_(True)  # a fresh leaf each pass: its .grad starts empty
        y = fn(leaf)  # and a fresh graph to go back through
        v = torch.zeros_like(y)
        v[i] = 1.0  # vᵀJ with v = eᵢ is row i of J: ∂yᵢ/∂x
        y.backward(gradient=v)
        rows.append(leaf.grad)
    return torch.stack(rows)  # one row per output: m x n
    ### END SOLUTION


# %% tags=["check:jacobian"]
ex.jacobian.check(jacobian)

# %% [markdown]
# ## 5. Gradients accumulate
#
# `backward()` **adds** to `.grad`, it does not overwrite. Three backward passes through
# `3 * w`:

# %% [markdown]
# **Predict the output** (value): After three `(3 * w).backward()` calls on `w = torch.tensor(1.0, requires_grad=True)`, what is `w.grad.item()`?

# %% tags=["predict:grad_accumulates"]
quiz.grad_accumulates(
    ### BEGIN PREDICTION
    9.0
    ### END PREDICTION
)

# %%
w = torch.tensor(1.0, requires_grad=True)
for step in range(3):
    (3 * w).backward()
    print("after backward", step + 1, ": w.grad =", w.grad.item())

# %% [markdown]
# That is a feature (gradients of several losses, or of several small batches, simply add
# up), and a classic bug: a training loop must clear gradients every step. Either way works:

# %%
w.grad.zero_()     # in place: keeps the tensor
print(w.grad)
w.grad = None      # drops it: what optimizer.zero_grad() does by default
print(w.grad)

# %% [markdown]
# ## 6. The graph is freed after `backward()`
#
# To save memory, `backward()` frees the intermediate values the graph saved (here, `x` for
# the derivative of `x**2`). A second `backward()` through the same graph fails:

# %% [markdown]
# **Predict the output** (value): `y = x**2; y.backward(); y.backward()` raises on the second call. Which changes would let the second `backward()` run: a `y.backward(retain_graph=True)` as the first call, b `x.grad = None` between the two calls, c `y = x**2` again between them, d the second call inside `with torch.no_grad():`? Answer with the list of letters in order, such as `['c']`.

# %% tags=["predict:second_backward"]
quiz.second_backward(
    ### BEGIN PREDICTION
    ['a', 'c']
    ### END PREDICTION
)

# %% tags=["raises-exception"]
x = torch.tensor(2.0, requires_grad=True)
y = x**2
y.backward()
y.backward()

# %% [markdown]
# Usually the fix is to run the forward pass again (a new graph each time). Clearing `x.grad`
# does not help (it resets the result, not the freed graph), nor does `torch.no_grad()` (it stops
# recording new operations). If you really need two backward passes through one graph, keep it
# with `retain_graph=True`:

# %% [markdown]
# **Predict the output** (value): With `y = x**2` at `x = 2`, `y.backward(retain_graph=True)` then `y.backward()`: what is `x.grad.item()`?

# %% tags=["predict:retain_graph_grad"]
quiz.retain_graph_grad(
    ### BEGIN PREDICTION
    8.0
    ### END PREDICTION
)

# %%
x = torch.tensor(2.0, requires_grad=True)
y = x**2
y.backward(retain_graph=True)
y.backward()
print(x.grad)  # 4 + 4: accumulated

# %% [markdown]
# ## 7. Turning tracking off: `no_grad`, `inference_mode`, `detach`
#
# Recording the graph costs memory and time. When you only evaluate (validation, inference,
# updating weights by hand), switch it off.

# %% [markdown]
# **Predict the output** (value): `w` requires grad; what is `a.requires_grad` for `a = w * 2` computed inside `with torch.no_grad():`?

# %% tags=["predict:no_grad_requires_grad"]
quiz.no_grad_requires_grad(
    ### BEGIN PREDICTION
    False
    ### END PREDICTION
)

# %%
w = torch.tensor(1.0, requires_grad=True)
with torch.no_grad():
    a = w * 2
with torch.inference_mode():
    c = w * 2
d = (w * 2).detach()
print("no_grad:       ", a.requires_grad)
print("inference_mode:", c.requires_grad, " inference tensor:", c.is_inference())
print("detach:        ", d.requires_grad)

# %% [markdown]
# | tool | what it does | use it for |
# |---|---|---|
# | `with torch.no_grad():` | nothing inside the block is recorded | evaluation; updating weights by hand |
# | `with torch.inference_mode():` | like `no_grad`, with less bookkeeping; its results are *inference tensors*, which autograd may use later but never save for backward | pure inference |
# | `t.detach()` | a tensor sharing `t`'s memory, cut from the graph | keeping a value (for logging, plotting) without its history |
#
# An inference tensor can still take part in a computation autograd records, as long as
# autograd does not need to *save* it. In `w + features` the gradient with respect to `w` is
# just the upstream gradient, so nothing is saved and backward works:

# %%
with torch.inference_mode():
    features = torch.randn(3) * 2
w = torch.randn(3, requires_grad=True)
(w + features).sum().backward()
print("w + features: backward worked, w.grad =", w.grad)

# %% [markdown]
# In `w * features` the gradient with respect to `w` is `features` itself, so autograd must
# save it for backward. That is where the stricter `inference_mode` stops you (clone the tensor
# outside the block, or use `no_grad`, if you need it in training):

# %% tags=["raises-exception"]
(w * features).sum().backward()

# %% [markdown]
# `detach()` shares memory with the original, so changing one changes the other:

# %%
t = torch.zeros(3, requires_grad=True)
d = t.detach()
d[0] = 5.0
print(t)

# %% [markdown]
# ### How graphs get cut by accident
#
# Anything that leaves torch leaves the graph: `.item()` and `.tolist()` give Python numbers,
# `.numpy()` refuses outright, and re-wrapping a value in `torch.tensor(...)` makes a new leaf
# with no history (PyTorch warns):

# %% tags=["raises-exception"]
p = torch.tensor([1.0, 2.0], requires_grad=True)
(p * 2).numpy()

# %%
q = p * 2
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    rewrapped = torch.tensor(q)
print("requires_grad:", rewrapped.requires_grad)
print("warning:", str(caught[0].message)[:60], "...")

# %% [markdown]
# ### Exercise 3: a function autograd can follow
#
# A robust regression needs a loss `h` of the residual `x` that pulls like squared error on small
# residuals and never harder than `delta` on outliers. Stated as its slope: dh/dx is `x` itself
# while |x| ≤ delta, and stays at `delta` beyond (`-delta` below `-delta`). The loss is 0 at
# `x = 0` and has no jump anywhere. Find `h`, then write `huber(x, delta)` for a tensor `x` (any
# shape, it requires grad) and a float `delta`, element by element. The check compares values
# and the gradients autograd gets through your function. No Python `if` on the tensor, no
# `.item()`, no NumPy, no in-place changes to `x`.

# %% tags=["answer:huber"]
def huber(x, delta):
    ### BEGIN SOLUTION
    return torch.where(x.abs() <= delta, 0.5 * x**2, delta * (x.abs() - 0.5 * delta))
    ### END SOLUTION


# %% tags=["check:huber"]
ex.huber.check(huber)

# %% [markdown]
# ## 8. In-place operations that break `backward()`
#
# Operations ending in `_` (`add_`, `mul_`, `zero_`...) and `+=` change a tensor's memory. On
# a leaf that requires grad, autograd refuses immediately:

# %% tags=["raises-exception"]
w = torch.ones(3, requires_grad=True)
w.add_(1)

# %% [markdown]
# Subtler: changing a value the graph saved for `backward()`. `sigmoid` saves its output
# (its derivative is s·(1 − s)); modifying that output in place makes the saved value wrong.
# Autograd keeps a version counter on every tensor and notices at `backward()` time:

# %% tags=["raises-exception"]
x = torch.randn(3, requires_grad=True)
s = torch.sigmoid(x)
print("version before:", s._version)
s.mul_(2)
print("version after: ", s._version)
s.sum().backward()

# %% [markdown]
# The fix is the out-of-place version: `s = s * 2`. (Updating weights in place is fine, and
# normal, inside `torch.no_grad()`, as section 14 does.)
#
# ## 9. Gradients through Python control flow
#
# Because the graph records what actually ran, `if`, `for` and `while` just work: the
# gradient is that of the branch taken.

# %%
def bumpy(x):
    if x.sum() > 0:
        y = x * torch.sin(x)
    else:
        y = x**3
    for _ in range(2):
        y = y + x
    return y.sum()


for start in (1.0, -1.0):
    x = torch.tensor([start, 2 * start], requires_grad=True)
    bumpy(x).backward()
    print(f"x = {x.tolist()}  grad = {[round(g, 4) for g in x.grad.tolist()]}")

# %% [markdown]
# Two inputs, two different graphs:

# %%
fig, axes = plt.subplots(2, 1, figsize=(11, 4.2))
for ax, start in zip(axes, (1.0, -1.0)):
    x = torch.tensor([start, 2 * start], requires_grad=True)
    draw_graph(bumpy(x), names={"x": x}, ax=ax, title=f"x = [{start}, {2 * start}]")
plt.show()

# %% [markdown]
# ## 10. `torch.autograd.grad` and higher derivatives
#
# `torch.autograd.grad(outputs, inputs)` returns the gradients as a tuple instead of adding
# them to `.grad`, which is cleaner inside functions. With `create_graph=True` the gradient
# itself gets a graph, so you can differentiate again: for f = x³, f' = 3x², f'' = 6x.

# %%
x = torch.tensor([1.0, 2.0], requires_grad=True)
(d1,) = torch.autograd.grad((x**3).sum(), x, create_graph=True)
(d2,) = torch.autograd.grad(d1.sum(), x)
print("f'  =", d1)
print("f'' =", d2)

# %% [markdown]
# ### Exercise 4: curvature along a direction (a Hessian-vector product)
#
# For a loss L of n weights the second derivative is a matrix, the **Hessian**
# H[i, j] = ∂²L/∂wᵢ∂wⱼ: n² numbers, far too many to build for a network. Yet what optimisers
# and analyses ask of it (how sharp is this minimum? which learning rate is stable along this
# direction? a Newton step) needs only its product with one direction, **H v**.
#
# Write `hvp(loss_fn, w, v)`: `loss_fn` maps a 1-D tensor `w` (n elements) to a scalar tensor,
# and `v` has n elements. Return H v, shaped like `w`, with autograd and **without building H**.
# Unlike x³ above, these weights interact: H is not diagonal. `w` arrives without
# `requires_grad`; leave `w` and `v` as they were.

# %% tags=["answer:hvp"]
def hvp(loss_fn, w, v):
    ### BEGIN SOLUTION
    w = w.detach().requires_grad_(True)
    (grad,) = torch.autograd.grad(loss_fn(w), w, create_graph=True)
    # the slope along v is a scalar function of w; its gradient is H v (v is held fixed)
    (Hv,) = torch.autograd.grad((grad * v).sum(), w)
    return Hv
    ### END SOLUTION


# %% tags=["check:hvp"]
ex.hvp.check(hvp)

# %% [markdown]
# Why it works: g(w) · v is the slope of L along v, one number; its gradient with respect to w
# is H v (v held fixed). Two backward passes, no n × n matrix. PyTorch ships it as
# `torch.autograd.functional.hvp`, and a few products are enough for **power iteration**: repeat
# v ← H v / |H v| and |H v| tends to the largest curvature λ, the sharpest direction of the
# loss. Gradient descent is stable only for lr < 2/λ (section 14 shows it on x²):

# %%
A = torch.tensor([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]])


def bowl(w):
    return 0.5 * w @ A @ w + 0.1 * (w**4).sum()


w_min = torch.tensor([0.5, -0.2, 0.1])
direction = torch.ones(3)
for _ in range(30):
    _, Hv = torch.autograd.functional.hvp(bowl, w_min, direction)
    direction = Hv / Hv.norm()
sharpest = Hv.norm().item()
eigenvalues = torch.linalg.eigvalsh(torch.autograd.functional.hessian(bowl, w_min))  # H built only to compare
print(f"largest curvature ≈ {sharpest:.3f}   eigenvalues of H: {[round(e, 3) for e in eigenvalues.tolist()]}")
print(f"largest stable learning rate ≈ {2 / sharpest:.3f}")

# %% [markdown]
# ## 11. Checking gradients numerically
#
# How do we know a gradient is right? Nudge the input and watch the output:
# f'(x) ≈ (f(x + ε) − f(x − ε)) / 2ε, the **central difference**. Its error has two sources:
# the formula's truncation (shrinks like ε²; the one-sided (f(x + ε) − f(x)) / ε only like ε)
# and rounding in the subtraction (grows like 1/ε). The best ε depends on the precision:

# %%
def f_demo(x):
    return torch.sin(x) * x**2


x0 = 1.3
exact = (2 * x0 * torch.sin(torch.tensor(x0, dtype=torch.float64))
         + x0**2 * torch.cos(torch.tensor(x0, dtype=torch.float64))).item()
epsilons = [10.0**-k for k in range(1, 11)]
fig, ax = plt.subplots(figsize=(6, 3.5))
for dtype, style in ((torch.float32, "--"), (torch.float64, "-")):
    x = torch.tensor(x0, dtype=dtype)
    central = [abs(((f_demo(x + e) - f_demo(x - e)) / (2 * e)).item() - exact) for e in epsilons]
    forward = [abs(((f_demo(x + e) - f_demo(x)) / e).item() - exact) for e in epsilons]
    name = str(dtype).replace("torch.", "")
    # an error of exactly 0 cannot be drawn on a log scale: floor it at 1e-17
    ax.loglog(epsilons, [max(c, 1e-17) for c in central], style, marker="o",
              label=f"central, {name}")
    ax.loglog(epsilons, [max(c, 1e-17) for c in forward], style, marker="x",
              label=f"one-sided, {name}")
ax.set_xlabel("ε")
ax.set_ylabel("|error|")
ax.legend(fontsize=8)
ax.set_title("finite-difference error: truncation (right) vs rounding (left)")
plt.show()

# %% [markdown]
# In float64 the central difference reaches ~1e-10; in float32 never better than ~1e-4 (at
# ε = 0.01 here). The smallest errors, printed from the same data as the plot:

# %%
for dtype in (torch.float32, torch.float64):
    x = torch.tensor(x0, dtype=dtype)
    best = min((abs(((f_demo(x + e) - f_demo(x - e)) / (2 * e)).item() - exact), e) for e in epsilons)
    print(f"{str(dtype):14s} smallest error {best[0]:.0e} at ε = {best[1]:g}")

# %% [markdown]
# So gradient checks are done in **float64**.
#
# ### Exercise 5: catch a teammate's wrong backward
#
# A teammate wrote losses with hand-written backwards (each hides a custom
# `torch.autograd.Function`, section 12's tool), and some of those backwards are wrong. Write
# `gradient_is_wrong(fn, x)`: `fn` maps a tensor shaped like `x` (1-D or 2-D, float32, possibly
# non-contiguous) to a scalar loss, in whatever floating dtype it is given. Return `True` when
# the gradient autograd computes for `fn` at `x` is not the loss's true slope, `False` when it
# is. The loss's values are your only witness, and the decisions are yours: the dtype you
# compute in, how far you nudge, and how far apart counts as "wrong". The check's losses have
# gradients from 1e-8 to 1e6, some curve fast, and one bug moves the gradient by as little as
# 1e-4 of its size. Leave `x` as it was (values and `requires_grad`), and don't call
# `torch.autograd.gradcheck`: you are building what it does.

# %% tags=["answer:gradient_is_wrong"]
def gradient_is_wrong(fn, x):
    ### BEGIN SOLUTION
    # float64: float32 keeps ~7 digits, and a difference of two nearly equal losses loses about
    # half of them, which hides a 1e-4 bug; in float64 a central difference is good to ~1e-10
    x = x.detach().to(torch.float64)
    with torch.enable_grad():
        leaf = x.clone().requires_grad_()
        by_autograd = torch.autograd.grad(fn(leaf), leaf)[0].reshape(-1)
    eps = 1e-6  # truncation (~eps²) and rounding (~1e-16 / eps) both far below the bugs
    flat = x.reshape(-1)  # reshape, not view: x may be non-contiguous
    numeric = torch.empty_like(flat)
    for i in range(flat.numel()):
        step = torch.zeros_like(flat)
        step[i] = eps
        numeric[i] = (fn((flat + step).reshape(x.shape)) - fn((flat - step).reshape(x.shape))) / (2 * eps)
    # relative to the gradient's size: a gradient of 1e6 and one of 1e-8 get the same verdicts
    return bool((by_autograd - numeric).norm() > 1e-6 * numeric.norm())
    ### END SOLUTION


# %% tags=["check:gradient_is_wrong"]
ex.gradient_is_wrong.check(gradient_is_wrong)

# %% [markdown]
# PyTorch ships the thorough version of what you just built: `torch.autograd.gradcheck`
# compares autograd's whole Jacobian with central differences, with a tolerance that mixes a
# relative and an absolute part. It passes in float64 and fails in float32 (with a warning
# saying why):

# %%
x64 = torch.randn(4, dtype=torch.float64, requires_grad=True)
print("float64:", torch.autograd.gradcheck(f_demo, (x64,)))
x32 = x64.detach().float().requires_grad_()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    print("float32:", torch.autograd.gradcheck(f_demo, (x32,), raise_exception=False))
print("warning:", str(caught[0].message)[:70], "...")

# %% [markdown]
# ## 12. A custom `torch.autograd.Function`
#
# Sometimes you want to supply the backward yourself: a faster or numerically safer formula,
# or an operation autograd cannot see into. Subclass `torch.autograd.Function` with two static
# methods. `forward(ctx, ...)` computes the result and saves what backward needs;
# `backward(ctx, grad_output)` receives the gradient of the final loss with respect to the
# output and returns the gradient with respect to each input (chain rule: multiply by the
# local derivative). Here is exp(x), whose derivative is its own output:

# %%
class MyExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = torch.exp(x)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


x = torch.randn(5, dtype=torch.float64, requires_grad=True)
y = MyExp.apply(x)  # call .apply, never MyExp() or MyExp.forward
print(y.grad_fn)
print("gradcheck:", torch.autograd.gradcheck(MyExp.apply, (x,)))

# %% [markdown]
# ### Exercise 6: SiLU with a hand-written backward
#
# SiLU (also called swish) is silu(x) = x · sigmoid(x). Write `MySiLU`, a
# `torch.autograd.Function` whose `forward` returns x · sigmoid(x) and whose `backward` returns
# the correct gradient. The check runs it on random float64 inputs, compares `backward` with
# random upstream gradients, and runs `gradcheck`. Do not modify `x` in `forward`.

# %% tags=["answer:MySiLU"]
class MySiLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ### BEGIN SOLUTION
        s = torch.sigmoid(x)
        ctx.save_for_backward(x, s)
        return x * s
        ### END SOLUTION

    @staticmethod
    def backward(ctx, grad_output):
        ### BEGIN SOLUTION
        x, s = ctx.saved_tensors
        return grad_output * s * (1 + x * (1 - s))
        ### END SOLUTION


# %% tags=["check:MySiLU"]
ex.MySiLU.check(MySiLU)

# %% [markdown]
# ## 13. Tensor hooks
#
# `t.register_hook(fn)` calls `fn(grad)` when the gradient with respect to `t` is computed,
# which lets you look at gradients flowing through the middle of a computation, or change them
# (return a new tensor). `remove()` the handle when done.

# %%
x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
hidden = x * 2
handle = hidden.register_hook(lambda g: print("gradient reaching hidden:", g))
(hidden**2).sum().backward()
handle.remove()
print("x.grad:", x.grad)

# %% [markdown]
# A hook that returns a tensor replaces the gradient: here every gradient reaching `x` is
# clipped to [-1, 1] (gradient clipping, element by element):

# %%
x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
handle = x.register_hook(lambda g: g.clamp(-1, 1))
(x**2).sum().backward()
handle.remove()
print("clipped x.grad:", x.grad)

# %% [markdown]
# ## 14. Gradient descent by hand
#
# Everything together: minimise f(x) = (x − 3)² by repeating *forward, backward, step,
# clear*. The update must not be recorded (it is not part of the function we differentiate),
# so it runs under `torch.no_grad()`, in place on the leaf.

# %%
x = torch.tensor(0.0, requires_grad=True)
lr = 0.1
for step in range(30):
    loss = (x - 3) ** 2
    loss.backward()
    with torch.no_grad():
        x -= lr * x.grad
    x.grad.zero_()
    if step % 10 == 0 or step == 29:
        print(f"step {step:2d}  x = {x.item():.4f}  loss = {loss.item():.6f}")

# %% [markdown]
# The learning rate decides everything. On f(x) = x² (f'' = 2), each step multiplies x by
# (1 − 2·lr): below 0.5 x walks straight down (very small rates crawl), between 0.5 and 1 it
# overshoots and zig-zags in, above 1 every overshoot is bigger than the last.

# %%
from course_utils.lesson_props.l02_descent import classify_path, descent_path, plot_descent

fig, axes = plt.subplots(3, 2, figsize=(9, 7.5))
for row, lr in zip(axes, (0.2, 0.85, 1.05)):
    path = descent_path("quadratic", x0=3.0, lr=lr, num_steps=15)
    plot_descent("quadratic", path, axes=row)
    row[0].set_title(f"lr = {lr}: {classify_path('quadratic', path)}", fontsize=10)
plt.show()

# %% [markdown]
# Now play: drag the learning rate (log scale) and watch the path. Try the "double well" too,
# where the step size also decides *which* valley you end in.

# %% tags=["nbval-ignore-output"]
from course_utils.lesson_props.l02_descent import descent_widget

descent_widget()

# %% [markdown]
# ### Exercise 7: which input gives this output?
#
# Gradient descent can move anything that requires grad, not only weights. Here the model is
# fixed and the **input** is the unknown (the idea behind feature visualisation, adversarial
# examples and design by inverse modelling). `predict(x, weights)` is a trained model: `weights`
# is a tuple of tensors that require grad, owned by a training loop that is using them (some
# already hold a `.grad` from its last `backward()`).
#
# Write `gradient_descent(predict, weights, target, x0, lr, num_steps)`: starting from `x0`,
# take `num_steps` steps of gradient descent with learning rate `lr` on the summed squared error
# between `predict(x, weights)` and `target`, and return the final x, without a graph. The model
# must come back exactly as it was handed to you, weights and their `.grad` alike; so must `x0`.
# The check watches every input your loop feeds the model.

# %% tags=["answer:gradient_descent"]
def gradient_descent(predict, weights, target, x0, lr, num_steps):
    ### BEGIN SOLUTION
    x = x0.clone().requires_grad_(True)
    for _ in range(num_steps):
        loss = ((predict(x, weights) - target) ** 2).sum()
        # backward() would add to the weights' .grad too: ask for x's gradient alone
        (grad,) = torch.autograd.grad(loss, x)
        with torch.no_grad():
            x -= lr * grad
    return x.detach()
    ### END SOLUTION


# %% tags=["check:gradient_descent"]
ex.gradient_descent.check(gradient_descent)

# %% [markdown]
# `backward()` adds a gradient to every leaf that requires grad and that the loss depends on:
# here that includes the weights, whose `.grad` the training loop was about to use, and wiping
# it afterwards loses the loop's gradients. `torch.autograd.grad(loss, x)` returns x's gradient
# and leaves every `.grad` alone; `loss.backward(inputs=[x])` and detached copies of the weights
# do the same job. Nothing accumulates in x either, so there is no `.grad` to clear.

# %% [markdown]
# ## Going further: `torch.func`
#
# `torch.func` offers autograd as *function transforms*, in the style of JAX: `grad(f)` is a
# new function returning f's gradient, and `vmap` maps a function over a batch dimension. A
# classic use is **per-sample gradients** (one gradient per example instead of their sum),
# needed for differential privacy and for studying training dynamics:

# %%
from torch.func import grad, vmap

X = torch.randn(5, 3)
targets = torch.randn(5)
weights = torch.randn(3)


def sample_loss(weights, x, target):
    return (x @ weights - target) ** 2


per_sample = vmap(grad(sample_loss), in_dims=(None, 0, 0))(weights, X, targets)
looped = torch.stack([grad(sample_loss)(weights, X[i], targets[i]) for i in range(5)])
print(per_sample.shape, torch.allclose(per_sample, looped))

# %% [markdown]
# ## Recap
#
# - `requires_grad=True` makes a tensor a watched **leaf**; results carry a `grad_fn`, and the
#   chain of them, rebuilt on every forward pass, is the graph `backward()` walks.
# - `backward()` needs a scalar, or an explicit vector `v` for non-scalars (a vector-Jacobian
#   product). Gradients **accumulate** in `.grad`: clear them every step.
# - A graph is freed by `backward()` (`retain_graph=True` keeps it). `no_grad`,
#   `inference_mode` and `detach` switch tracking off (inference tensors can join a tracked
#   computation later, but can never be saved for its backward); `.item()`, `.numpy()` and
#   `torch.tensor(...)` cut the graph, often by accident.
# - In-place changes to leaves or saved values break `backward()`; weight updates go in place
#   under `torch.no_grad()`.
# - `torch.autograd.grad(..., create_graph=True)` gives higher derivatives, and Hessian-vector
#   products without building H; check gradients with central differences and `gradcheck`, in
#   float64.
# - A custom `autograd.Function` supplies its own backward: multiply `grad_output` by the local
#   derivative. Hooks let you watch or change gradients in flight.
# - The learning rate decides between crawling, converging, zig-zagging and diverging.
#
# Next: **03_nn_module**, where parameters, layers and models take the bookkeeping of this
# lesson off your hands.

# %% [markdown]
# ## Further reading
#
# PyTorch documentation:
#
# - [Autograd mechanics](https://docs.pytorch.org/docs/stable/notes/autograd.html): how the graph
#   is recorded and freed, saved tensors, the in-place correctness checks, `no_grad` versus
#   `inference_mode`.
# - [`torch.autograd`](https://docs.pytorch.org/docs/stable/autograd.html): `backward`, `grad`,
#   `Function`, `gradcheck` and hooks.
# - [Extending PyTorch](https://docs.pytorch.org/docs/stable/notes/extending.html): writing a
#   custom `autograd.Function` (section 12), with `setup_context` and `ctx`, and checking it.
# - [`torch.func`](https://docs.pytorch.org/docs/stable/func.html): `grad`, `vmap`, `jacrev` and
#   per-sample gradients.
#
# The best external material:
#
# - Andrej Karpathy, [*Neural Networks: Zero to Hero*](https://karpathy.ai/zero-to-hero.html),
#   the first video (*building micrograd*): a scalar autograd engine written from scratch in two
#   hours; after it, `grad_fn` holds no mystery.
# - Stanford CS231n, [Backpropagation, intuitions](https://cs231n.github.io/optimization-2/): the
#   chain rule on computational graphs, gate by gate, and how to backpropagate through vectors.
# - *Dive into Deep Learning*, [Automatic
#   differentiation](https://d2l.ai/chapter_preliminaries/autograd.html): non-scalar `backward`,
#   detaching, and control flow, with the calculus behind them.
# - PyTorch tutorials, [Automatic differentiation with
#   `torch.autograd`](https://docs.pytorch.org/tutorials/beginner/basics/autogradqs_tutorial.html):
#   a short official walk-through, including the Jacobian-product view of section 4.
