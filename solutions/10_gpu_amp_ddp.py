# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 10 · GPUs, mixed precision and multi-process training
#
# Models get big, data gets big, and training gets slow. This lesson covers the tools for that:
# accelerators, lower-precision arithmetic, trading compute for memory, and training on several
# processes at once.
#
# **Everything here runs on a plain CPU**, so you can learn it on a laptop. Mixed precision
# runs for real in bfloat16, and distributed training really starts two processes that talk to
# each other. A few cells only mean something on a GPU. They start with
# `if requires_gpu(...)`: without a GPU they print one line saying they were skipped, and with
# one they run unchanged.
#
# You will learn to
#
# 1. write device-agnostic code and read the errors that devices cause;
# 2. time and measure correctly (GPUs run asynchronously);
# 3. train with `torch.autocast` in bfloat16, and know when float16 needs a `GradScaler`;
# 4. save memory with gradient checkpointing, and see what `torch.compile` costs;
# 5. train with `DistributedDataParallel` on two processes, launched with `torchrun`.
#
# **Time: about 100 minutes** on your own, the five checked exercises included (about 37 of those minutes). *Run All* alone takes about 15 s on a 2-core CPU.

# %%
import os
import sys
import tempfile
import time
import warnings

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.nn import functional as F

from course_utils.datasets import digits_split
from course_utils.lesson_props.l10_devices import requires_gpu, time_per_call
from course_utils.grading import exercises_for, predictions_for

ex = exercises_for("10_gpu_amp_ddp")
quiz = predictions_for("10_gpu_amp_ddp")  # predict-the-output questions
X_train, y_train, X_test, y_test = digits_split()   # scikit-learn's 8x8 digits, 64 features
loss_fn = nn.CrossEntropyLoss()

# %% [markdown]
# ## 1. Devices
#
# A tensor lives on a **device**: `cpu`, `cuda` (NVIDIA GPUs, and AMD GPUs through ROCm) or `mps`
# (Apple silicon). Ask PyTorch what this machine has. The output depends on your machine.

# %% tags=["nbval-ignore-output"]
print("CUDA available:", torch.cuda.is_available())
print("MPS available: ", torch.backends.mps.is_available())
print("accelerator:   ", torch.accelerator.current_accelerator())

# %% [markdown]
# Device-agnostic code picks the best device once, at the top, and uses the name `device`
# everywhere after that. The newer `torch.accelerator` API does the same in one line:
# `torch.accelerator.current_accelerator() or torch.device("cpu")`.

# %% tags=["nbval-ignore-output"]
def pick_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


device = pick_device()
print("using", device)

# %% [markdown]
# ### Moving models and data
#
# `model.to(device)` moves a module's parameters and buffers **in place**. `tensor.to(device)`
# does **not** move the tensor: it returns a moved copy, and you have to keep that copy.
# Forgetting the assignment is the most common device bug.

# %%
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
model.to(device)                      # modules move in place
X = X_train[:8]
X.to(device)                          # the moved copy is thrown away: X has not moved
X = X.to(device)                      # this is how to do it
print("parameters on", next(model.parameters()).device.type, "| data on", X.device.type)

# %% [markdown]
# On a PyTorch build without CUDA (like the CPU build this course installs), asking for CUDA
# gives this error. A CUDA build on a machine without an NVIDIA driver says *"Found no NVIDIA
# driver on your system"* instead. With a GPU, the cell runs without error.

# %% tags=["raises-exception", "nbval-ignore-output"]
torch.zeros(3).to("cuda")

# %% [markdown]
# When a model's weights and its input are on different devices, the operation fails. With a
# GPU the message reads *"Expected all tensors to be on the same device, but found at least
# two devices, cuda:0 and cpu!"*. Every machine has one extra device that lets you see this kind
# of error without a GPU: `meta`, whose tensors have a shape and a dtype but no data.

# %% tags=["raises-exception"]
layer = nn.Linear(4, 2).to("meta")
layer(torch.randn(1, 4))              # CPU input, meta weights

# %% [markdown]
# 🖥️ **GPU only**: the same mistake on a real GPU.

# %% tags=["raises-exception", "nbval-ignore-output"]
if requires_gpu("the CUDA device-mismatch error"):
    gpu_layer = nn.Linear(4, 2).to("cuda")
    gpu_layer(torch.randn(1, 4))      # the input is still on the CPU

# %% [markdown]
# ### Back to the CPU for NumPy and plotting
#
# NumPy and matplotlib only read CPU memory. Calling `.numpy()` on a GPU tensor fails with
# *"can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to
# host memory first."* The safe idiom is `.detach().cpu().numpy()`: `detach` leaves the
# autograd graph, and `cpu` copies the data to the host (on the CPU it returns the tensor
# itself, so the same line works everywhere).

# %%
probs = model(X).softmax(dim=1).detach().cpu().numpy()
print(type(probs).__name__, probs.shape, probs.dtype)

# %% [markdown]
# ### Exercise 1: move a whole batch
#
# Batches are often nested: `(X, y)`, a dict `{"inputs": X, "targets": {"labels": y}}`, or a
# list of those. Some entries are not tensors at all, such as file names or ids. Write
# `to_device(batch, device)`. It returns a batch with the **same structure**: every tensor
# moved with `.to(device)` (and nothing else: dtypes stay as they are), every tuple still a
# tuple, every list still a list, every dict still a dict, and everything else returned
# unchanged. A namedtuple such as `Batch(x=..., y=...)` stays the same namedtuple: it is a
# tuple, but it is built from its fields, `type(batch)(*items)`. Do not modify the batch you
# are given.
#
# The check moves batches to the `meta` device, so a tensor you miss is visible even without a
# GPU.

# %% tags=["answer:to_device"]
def to_device(batch, device):
    ### BEGIN SOLUTION
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {key: to_device(value, device) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # a namedtuple: fields by position
        return type(batch)(*(to_device(item, device) for item in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(item, device) for item in batch)
    return batch
    ### END SOLUTION


# %% tags=["check:to_device"]
ex.to_device.check(to_device)

# %% [markdown]
# ### Asynchronous execution: timing GPU work correctly
#
# A call that runs on a GPU only *queues* the work and returns at once, while the GPU works
# through the queue in the background. A timer stopped right after the call measures the
# queueing, not the work. Call `torch.cuda.synchronize()` (or `torch.accelerator.synchronize()`)
# before each clock reading. `.item()`, `.cpu()` and printing also wait for the GPU, which is why
# a harmless-looking `print(loss.item())` inside a training loop slows it down.
#
# 🖥️ **GPU only**: the difference, measured.

# %% tags=["nbval-ignore-output"]
if requires_gpu("timing asynchronous CUDA work"):
    a = torch.randn(4096, 4096, device="cuda")
    a @ a                                   # warm up: the first call pays one-time costs
    torch.cuda.synchronize()
    start = time.perf_counter()
    b = a @ a
    returned = time.perf_counter() - start
    torch.cuda.synchronize()
    finished = time.perf_counter() - start
    print(f"the call returned after {returned * 1e3:.2f} ms; "
          f"the work finished after {finished * 1e3:.2f} ms")

# %% [markdown]
# `course_utils.lesson_props.l10_devices.time_per_call(fn, device)` does this for you: a few untimed warm-up calls
# (the first calls pay for memory allocation and kernel selection), then the median of several
# calls, synchronizing around each one. On the CPU the synchronization does nothing, and the
# same code is correct on every device.

# %% tags=["nbval-ignore-output"]
a = torch.randn(512, 512, device=device)
seconds = time_per_call(lambda: a @ a, device)
print(f"a 512x512 matrix product on {device.type}: {seconds * 1e3:.2f} ms")

# %% [markdown]
# ### GPU memory
#
# PyTorch's CUDA allocator keeps freed memory *reserved* for reuse, so `nvidia-smi` shows more
# than your tensors use. `memory_allocated` is what tensors occupy now, `max_memory_allocated`
# is the peak since the last reset, and `memory_reserved` is what the allocator holds.
#
# 🖥️ **GPU only**:

# %% tags=["nbval-ignore-output"]
if requires_gpu("CUDA memory statistics"):
    torch.cuda.reset_peak_memory_stats()
    big = torch.empty(64, 1024, 1024, device="cuda")          # 256 MiB of float32
    print(f"allocated {torch.cuda.memory_allocated() / 2**20:.0f} MiB, "
          f"peak {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB, "
          f"reserved {torch.cuda.memory_reserved() / 2**20:.0f} MiB")
    del big
    print(f"after del: allocated {torch.cuda.memory_allocated() / 2**20:.0f} MiB, "
          f"reserved {torch.cuda.memory_reserved() / 2**20:.0f} MiB (kept for reuse)")
    torch.cuda.empty_cache()                                   # give it back to the driver

# %% [markdown]
# ## 2. Mixed precision
#
# float32 uses 4 bytes per number. The two 16-bit formats halve memory traffic, and hardware
# with 16-bit units (tensor cores, AVX512-BF16, AMX) multiplies them much faster. They give
# up different things:

# %%
for dtype in (torch.float32, torch.float16, torch.bfloat16):
    info = torch.finfo(dtype)
    print(f"{str(dtype):15s} {info.bits} bits  eps {info.eps:.1e}  largest {info.max:.1e}  "
          f"smallest normal {info.tiny:.1e}")

# %% [markdown]
# - **float16** is precise (eps 1e-3) but its range is tiny: anything above 65504 overflows to
#   `inf`, and small gradients underflow to 0. Training in float16 needs a `GradScaler`.
# - **bfloat16** has float32's range, but only 8 significant bits: about 2.4 decimal digits
#   (log10 of 2^8). No scaler is needed. It is what `torch.autocast` uses by default on the
#   CPU; on CUDA the default is float16, and bfloat16 (fast on Ampere and newer GPUs) is used
#   when you ask for it with `dtype=torch.bfloat16`:

# %%
print("autocast default on cpu: ", torch.get_autocast_dtype("cpu"))
print("autocast default on cuda:", torch.get_autocast_dtype("cuda"))

# %% [markdown]
# Two and a half digits are not enough to *update* weights, because small steps vanish:

# %% [markdown]
# **Predict the output** (value): What is `(torch.tensor(1.0, dtype=torch.bfloat16) + 0.001).item()`?

# %% tags=["predict:bf16_small_step"]
quiz.bf16_small_step(
    ### BEGIN PREDICTION
    1.0
    ### END PREDICTION
)

# %%
w16 = torch.tensor(1.0, dtype=torch.bfloat16)
w32 = torch.tensor(1.0)
print("bfloat16: 1 + 0.001 =", (w16 + 0.001).item())
print("float32:  1 + 0.001 =", (w32 + 0.001).item())

# %% [markdown]
# This is why **mixed** precision keeps the parameters (the *master weights*) in float32 and
# computes only selected operations in 16 bits. `torch.autocast` does the selecting, from
# per-device lists. Matrix products (`linear`, `matmul`, convolutions) run in low precision
# everywhere. Losses such as `cross_entropy` and `mse_loss` run in float32 everywhere. The rest
# differs by device: on CUDA, `softmax`, `log_softmax`, `exp`, `log`, `sum` and norms are
# upcast to float32; on the CPU they have no float32 entry and simply follow their input, so
# after a bfloat16 `linear` they run in bfloat16 too. You change nothing in the model:

# %% [markdown]
# **Predict the output** (dtype): Under `torch.autocast('cpu', dtype=torch.bfloat16)`, what dtype has the output of an `nn.Linear` given float32 input?

# %% tags=["predict:autocast_linear_dtype"]
quiz.autocast_linear_dtype(
    ### BEGIN PREDICTION
    torch.bfloat16
    ### END PREDICTION
)

# %% [markdown]
# **Predict the output** (dtype): Under the same autocast, what dtype has `cross_entropy` of the bfloat16 logits?

# %% tags=["predict:autocast_loss_dtype"]
quiz.autocast_loss_dtype(
    ### BEGIN PREDICTION
    torch.float32
    ### END PREDICTION
)

# %% [markdown]
# **Predict the output** (dtype): And the dtype of the layer's weight (`model[0].weight.dtype`) after the autocast block?

# %% tags=["predict:autocast_param_dtype"]
quiz.autocast_param_dtype(
    ### BEGIN PREDICTION
    torch.float32
    ### END PREDICTION
)

# %%
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)
Xb, yb = X_train[:256].to(device), y_train[:256].to(device)

with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
    hidden = model[0](Xb)
    logits = model(Xb)
    loss = loss_fn(logits, yb)
    log_probs = logits.log_softmax(dim=1)
loss.backward()                        # backward goes outside the autocast block

print("linear output:", hidden.dtype)
print("logits:       ", logits.dtype)
print("log_softmax:  ", log_probs.dtype)
print("loss:         ", loss.dtype)
print("parameters:   ", model[0].weight.dtype)
print("gradients:    ", model[0].weight.grad.dtype)

# %% [markdown]
# Do not take a table's word for it (this lesson's first draft got the CPU list wrong): ask
# autocast on the device you run on. Each op below gets a bfloat16 input, as it would after an
# autocast `linear`:

# %%
h = torch.randn(8, 16, device=device)
target = torch.zeros(8, dtype=torch.long, device=device)
ops = {
    "linear": lambda t: F.linear(t, torch.randn(16, 16, device=device)),
    "softmax": lambda t: t.softmax(dim=1),
    "log_softmax": lambda t: t.log_softmax(dim=1),
    "exp": torch.exp,
    "sum": torch.sum,
    "norm": torch.linalg.vector_norm,
    "layer_norm": lambda t: F.layer_norm(t, (16,)),
    "cross_entropy": lambda t: F.cross_entropy(t, target),
    "mse_loss": lambda t: F.mse_loss(t, torch.zeros_like(t)),
}
with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
    h16 = h.to(torch.bfloat16)
    for name, op in ops.items():
        print(f"{name:14s} on {device.type}: {op(h16).dtype}")

# %% [markdown]
# How far are bfloat16 logits from float32 ones? About one part in a few hundred, the size of
# bfloat16's rounding. That is too coarse for weight updates but fine for a forward pass: the
# predicted classes almost never change.

# %% tags=["nbval-ignore-output"]
with torch.no_grad():
    exact = model(Xb)
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
        approx = model(Xb).float()
rel = ((approx - exact).norm() / exact.norm()).item()
agree = (approx.argmax(1) == exact.argmax(1)).sum().item()
print(f"relative difference of the logits: {rel:.1e}")
print(f"same predicted class for {agree} of {len(Xb)} samples")

# %% [markdown]
# Does training still work? Train the same model twice on the digits, in float32 and with
# bfloat16 autocast, and compare the curves.

# %% tags=["nbval-ignore-output"]
def train_digits(amp, num_epochs=6, lr=0.5, batch_size=128):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    Xd, yd = X_train.to(device), y_train.to(device)
    losses = []
    for epoch in range(num_epochs):
        order = torch.randperm(len(Xd), generator=torch.Generator().manual_seed(epoch))
        total = 0.0
        for i in range(0, len(Xd), batch_size):
            idx = order[i:i + batch_size]
            optimizer.zero_grad()
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=amp):
                loss = loss_fn(model(Xd[idx]), yd[idx])
            loss.backward()
            optimizer.step()
            total += loss.item() * len(idx)
        losses.append(total / len(Xd))
    with torch.no_grad():
        accuracy = (model(X_test.to(device)).argmax(1) == y_test.to(device)).float().mean().item()
    return losses, accuracy


curves = {}
for amp in (False, True):
    losses, accuracy = train_digits(amp)
    name = "bfloat16 autocast" if amp else "float32"
    curves[name] = losses
    print(f"{name:18s} final training loss {losses[-1]:.3f}, test accuracy {accuracy:.1%}")
for name, losses in curves.items():
    plt.plot(range(1, len(losses) + 1), losses, marker=".", label=name)
plt.xlabel("epoch")
plt.ylabel("training loss")
plt.legend();

# %% [markdown]
# ### Is it faster?
#
# It depends on size. Autocast adds a cast before each low-precision operation, and on a small
# model those casts cost more than the faster multiply saves. The speed-up comes with large
# matrix products, and only on hardware with fast 16-bit units. Measured here, on this
# machine, with one training step of a small and of a large MLP:

# %% tags=["nbval-ignore-output"]
def step_time(width, batch_size, amp):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                          nn.Linear(width, 10)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    Xs = torch.randn(batch_size, width, device=device)
    ys = torch.randint(0, 10, (batch_size,), device=device)

    def step():
        optimizer.zero_grad()
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=amp):
            loss = loss_fn(model(Xs), ys)
        loss.backward()
        optimizer.step()

    return time_per_call(step, device, repeats=3, warmup=1)


print("CPU vector instructions:", torch.backends.cpu.get_cpu_capability())
sizes = {"small (64 wide, batch 64)": (64, 64), "large (1024 wide, batch 256)": (1024, 256)}
times = {name: (step_time(w, b, amp=False), step_time(w, b, amp=True))
         for name, (w, b) in sizes.items()}
for name, (fp32, bf16) in times.items():
    print(f"{name:30s} float32 {fp32 * 1e3:7.2f} ms  bfloat16 {bf16 * 1e3:7.2f} ms  "
          f"speed-up {fp32 / bf16:4.2f}x")

fig, axes = plt.subplots(1, 2, figsize=(8, 3))
for ax, (name, (fp32, bf16)) in zip(axes, times.items()):
    ax.bar(["float32", "bfloat16"], [fp32 * 1e3, bf16 * 1e3], color=["tab:blue", "tab:orange"])
    ax.set_title(f"{name}: {fp32 / bf16:.2f}x", fontsize=9)
    ax.set_ylabel("ms per training step")
fig.tight_layout()

# %% [markdown]
# On the 2-core machine this course is tested on (an AMD EPYC with AVX512-BF16), the large model
# trains about 1.5-2x faster in bfloat16, and the small one 1.5-3x slower. Your numbers
# will differ: timings on a busy machine jump around (run the cell again), and on CPUs without
# bfloat16 instructions (neither AVX512-BF16 nor AMX) bfloat16 can be slower at every size. On
# NVIDIA GPUs from the Ampere generation on, bfloat16 and float16 run on tensor cores, and large
# models train about 2-3x faster. Measure on your own hardware.

# %% [markdown]
# ### float16 on a GPU needs a `GradScaler`
#
# With float16, small gradients underflow to zero. A `GradScaler` multiplies the loss by a large
# factor before `backward` (so the gradients are large enough to represent), divides the
# gradients back before the optimizer step, skips a step whose gradients overflowed to
# `inf`/`NaN`, and adapts the factor as it goes. Call `unscale_` before gradient clipping, so
# that you clip the true gradients, and put `scaler.state_dict()` into checkpoints (lesson 09).
#
# 🖥️ **GPU only**:

# %% tags=["nbval-ignore-output"]
if requires_gpu("float16 autocast with a GradScaler"):
    torch.manual_seed(0)
    gpu_model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to("cuda")
    optimizer = torch.optim.SGD(gpu_model.parameters(), lr=0.2)
    scaler = torch.amp.GradScaler("cuda")
    Xg, yg = X_train[:256].to("cuda"), y_train[:256].to("cuda")
    for step in range(3):
        optimizer.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = loss_fn(gpu_model(Xg), yg)
        scaler.scale(loss).backward()        # gradients of loss x scale
        scaler.unscale_(optimizer)           # back to true gradients, before clipping
        nn.utils.clip_grad_norm_(gpu_model.parameters(), max_norm=1.0)
        scaler.step(optimizer)               # skipped if a gradient is inf or NaN
        scaler.update()                      # adapt the scale
        print(f"step {step}: loss {loss.item():.3f}, scale {scaler.get_scale():.0f}")

# %% [markdown]
# Older tutorials write `torch.cuda.amp.autocast()` and `torch.cuda.amp.GradScaler()`. These
# spellings are **deprecated**: use `torch.autocast(device_type=...)` and
# `torch.amp.GradScaler("cuda")`. The warning is a `FutureWarning`:

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with torch.cuda.amp.autocast():   # deprecated spelling, shown to see its warning
        pass
for w in caught:
    if issubclass(w.category, FutureWarning):
        print(f"{w.category.__name__}: {w.message}")

# %% [markdown]
# ### Exercise 2: a bfloat16 training step
#
# Write `amp_train_step(model, X, y, loss_fn, optimizer)`. It does one training step: zero the
# gradients, compute the forward pass and the loss inside
# `torch.autocast(device_type=X.device.type, dtype=torch.bfloat16)`, call backward, and take the
# optimizer step. It returns the loss as a Python float. The model's parameters must stay float32.
# The check compares your loss and updated weights with a reference step, and it watches which
# dtype the model's layers compute in.

# %% tags=["answer:amp_train_step"]
def amp_train_step(model, X, y, loss_fn, optimizer):
    ### BEGIN SOLUTION
    optimizer.zero_grad()
    with torch.autocast(device_type=X.device.type, dtype=torch.bfloat16):
        loss = loss_fn(model(X), y)
    loss.backward()
    optimizer.step()
    return loss.item()
    ### END SOLUTION


# %% tags=["check:amp_train_step"]
ex.amp_train_step.check(amp_train_step)

# %% [markdown]
# ## 3. Trading compute for memory
#
# ### Gradient checkpointing
#
# Backward needs the activations that forward computed, so autograd *saves* them. For deep
# models those saved activations, not the weights, fill the memory. You can see exactly what
# autograd saves with `saved_tensors_hooks`, which calls a function for every tensor it keeps:

# %%
def saved_mib(fn):
    """Run fn() and return (MiB of tensors autograd saved for backward, fn's result)."""
    total = 0

    def pack(t):
        nonlocal total
        total += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return total / 2**20, out


torch.manual_seed(0)
blocks = nn.Sequential(*[nn.Sequential(nn.Linear(256, 256), nn.ReLU()) for _ in range(8)])
x_big = torch.randn(1024, 256)          # each activation: 1024 x 256 floats = 1 MiB

plain_mib, out_plain = saved_mib(lambda: blocks(x_big))
print(f"plain forward: {plain_mib:.1f} MiB saved for backward")

# %% [markdown]
# *Gradient checkpointing* keeps only the input of each checkpointed segment and recomputes the
# rest during backward. You pay about one extra forward pass and save most of the activation
# memory. `checkpoint_sequential` splits a `Sequential` into segments. Always pass
# `use_reentrant=False`: without it PyTorch warns, and the old *reentrant* mode it falls back to
# gives no parameter gradients when the segment's input does not require grad (exercise 3
# runs into this).

# %%
from torch.utils.checkpoint import checkpoint, checkpoint_sequential  # noqa: E402

ckpt_mib, out_ckpt = saved_mib(lambda: checkpoint_sequential(blocks, 4, x_big, use_reentrant=False))
print(f"checkpointed in 4 segments: {ckpt_mib:.1f} MiB saved for backward")
print("same output:", torch.equal(out_plain, out_ckpt))

# %% [markdown]
# The price is time. Backward recomputes the checkpointed segments:

# %% tags=["nbval-ignore-output"]
def forward_backward(forward):
    blocks.zero_grad()
    forward().sum().backward()


t_plain = time_per_call(lambda: forward_backward(lambda: blocks(x_big)), repeats=3, warmup=1)
t_ckpt = time_per_call(lambda: forward_backward(
    lambda: checkpoint_sequential(blocks, 4, x_big, use_reentrant=False)), repeats=3, warmup=1)
print(f"forward + backward: plain {t_plain * 1e3:.0f} ms, checkpointed {t_ckpt * 1e3:.0f} ms "
      f"({t_ckpt / t_plain:.2f}x the time, {ckpt_mib / plain_mib:.0%} of the saved memory)")

# %% [markdown]
# 🖥️ **GPU only**: on a GPU the saving shows up in the peak memory.

# %% tags=["nbval-ignore-output"]
if requires_gpu("peak CUDA memory with and without checkpointing"):
    gpu_blocks, x_gpu = blocks.to("cuda"), x_big.to("cuda")
    forwards = {
        "plain": lambda: gpu_blocks(x_gpu),
        "checkpointed": lambda: checkpoint_sequential(gpu_blocks, 4, x_gpu, use_reentrant=False),
    }
    for name, forward in forwards.items():
        torch.cuda.reset_peak_memory_stats()
        forward().sum().backward()
        print(f"{name:13s} peak {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB")
    blocks.to("cpu")

# %% [markdown]
# ### Exercise 3: checkpoint every block
#
# Write `checkpointed_forward(blocks, x)`. It runs `x` through every module in `blocks` (an
# `nn.ModuleList`) in order and checkpoints **each block** with
# `checkpoint(block, x, use_reentrant=False)`. It returns the output. The check compares the
# output and the parameters' gradients with a plain forward pass, and measures how many bytes
# your forward pass saved for backward. The input sometimes does not require grad, as real data
# usually does not.

# %% tags=["answer:checkpointed_forward"]
def checkpointed_forward(blocks, x):
    ### BEGIN SOLUTION
    for block in blocks:
        x = checkpoint(block, x, use_reentrant=False)
    return x
    ### END SOLUTION


# %% tags=["check:checkpointed_forward"]
ex.checkpointed_forward.check(checkpointed_forward)

# %% [markdown]
# ### `torch.compile`: pay once, run faster
#
# `torch.compile(fn)` captures the Python function as a graph the first time it is called,
# then hands the graph to a compiler backend. The default backend, *inductor*, fuses many small
# operations into a few generated kernels. That first call is expensive, and later calls with
# the same shapes reuse the result. The `aot_eager` backend does the capture but generates no
# code, so it shows the capture cost within a second:

# %% tags=["nbval-ignore-output"]
def gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(0.7978845608 * (x + 0.044715 * x**3)))


x = torch.randn(100_000)
captured = torch.compile(gelu_tanh, backend="aot_eager")
start = time.perf_counter()
captured(x)
first = time.perf_counter() - start
start = time.perf_counter()
captured(x)
second = time.perf_counter() - start
print(f"first call {first:.2f} s (capturing the graph), second call {second * 1e3:.2f} ms")

# %%
print("same result as plain Python:", torch.allclose(captured(x), gelu_tanh(x)))

# %% [markdown]
# The default backend also compiles C++ (or, on a GPU, Triton) kernels. That cold start is long:
# on the 2-core machine this course is tested on, the first call took about 20 s, and about 5 s
# once the compiler's on-disk cache was warm. To keep this notebook quick, the measurement is off
# by default. Set `RUN_INDUCTOR_DEMO = True` and run the cell to measure it on your machine.
# Expect no speed-up for small models: compilation pays off for long training runs and large,
# fusable models.

# %% tags=["nbval-ignore-output"]
RUN_INDUCTOR_DEMO = False   # True: compile with the default backend and time it (slow at first)

if RUN_INDUCTOR_DEMO:
    fused = torch.compile(gelu_tanh)                 # default backend: inductor
    x_large = torch.randn(4_000_000)
    start = time.perf_counter()
    fused(x_large)
    print(f"first call (compiling): {time.perf_counter() - start:.1f} s")
    eager_t = time_per_call(lambda: gelu_tanh(x_large))
    fused_t = time_per_call(lambda: fused(x_large))
    print(f"per call: eager {eager_t * 1e3:.1f} ms, compiled {fused_t * 1e3:.1f} ms "
          f"({eager_t / fused_t:.1f}x; eight elementwise ops fused into one kernel)")
else:
    print("Skipped: set RUN_INDUCTOR_DEMO = True to measure the default backend's cold start.")

# %% [markdown]
# ## 4. Distributed data parallel (DDP)
#
# With data parallelism, every process (a *rank*) holds a full copy of the model and gets a
# different slice of each batch. After `backward`, DDP **averages the gradients** of all ranks
# with an *all-reduce*, so every rank takes the same optimizer step and the copies stay
# identical. Two ranks with half a batch each compute what one process computes with the whole
# batch (up to the order of floating-point additions), in about half the time, and each needs
# only half the activation memory. "The same as the big batch" holds when the loss is a
# **mean** over the batch (averaging two half-batch means equals the whole-batch mean only for
# equal halves), the shards have **equal sizes** (`DistributedSampler` pads to ensure it), and
# the model has **no BatchNorm**: each rank would normalise with its own half batch's statistics
# unless you convert the model with `nn.SyncBatchNorm.convert_sync_batchnorm`.
#
# ### Who gets which samples: `DistributedSampler`
#
# Each rank builds the same shuffled order (seeded by `seed + epoch`) and takes every
# `world_size`-th item, starting at its rank. If the dataset does not divide evenly, items
# from the start are repeated so that every rank gets the same number. Otherwise one rank would
# wait forever in an all-reduce that the others never join. You must call `set_epoch(epoch)`
# at the start of every epoch, or every epoch repeats the same order:

# %%
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset  # noqa: E402

from course_utils.lesson_props.l10_distributed import plot_shards, shard_assignment  # noqa: E402

for epoch in range(2):
    print(f"epoch {epoch}:", shard_assignment(10, world_size=3, epoch=epoch))

# %% [markdown]
# Play with it. Hatched boxes are repeated items that pad the last round.

# %% tags=["nbval-ignore-output"]
from ipywidgets import Checkbox, IntSlider, interact  # noqa: E402


def show_shards(n, world_size, epoch, shuffle):
    plot_shards(n, world_size, epoch, shuffle)
    plt.show()


interact(show_shards, n=IntSlider(10, 1, 24), world_size=IntSlider(3, 1, 4),
         epoch=IntSlider(0, 0, 5), shuffle=Checkbox(True));

# %% [markdown]
# ### Exercise 4: shard like `DistributedSampler`
#
# Write `shard_indices(n, world_size, rank, epoch, shuffle=True, seed=0)`. It returns the list
# of dataset indices (Python ints) that `rank` visits in `epoch`, exactly as
# `DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=shuffle, seed=seed)`
# gives them after `set_epoch(epoch)`, for a dataset of `n` items:
#
# 1. the order is `torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch))`
#    when shuffling, else `0, 1, ..., n-1`;
# 2. it is padded, by repeating it from its start, to the next multiple of `world_size` (an
#    empty dataset, `n = 0`, has nothing to pad: every rank gets `[]`);
# 3. rank `r` takes positions `r, r + world_size, r + 2*world_size, ...`.

# %% tags=["answer:shard_indices"]
import math  # noqa: E402


def shard_indices(n, world_size, rank, epoch, shuffle=True, seed=0):
    ### BEGIN SOLUTION
    if shuffle:
        order = torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).tolist()
    else:
        order = list(range(n))
    total = math.ceil(n / world_size) * world_size
    if n:
        order = (order * math.ceil(total / n))[:total]
    return order[rank:total:world_size]
    ### END SOLUTION


# %% tags=["check:shard_indices"]
ex.shard_indices.check(shard_indices)

# %% [markdown]
# ### Exercise 5: what the all-reduce computes
#
# Simulate DDP in one process. Write `data_parallel_grads(model, loss_fn, X, y, world_size)`:
# split `X` and `y` into `world_size` equal shards (`X.chunk(world_size)`; the number of rows is
# a multiple of `world_size`). Each "rank" computes the gradients of its own shard's loss on its
# own copy of the model. Return the **average** over ranks: a list with one gradient tensor per
# parameter, in `model.parameters()` order. Leave the model you are given unchanged (no `.grad`
# left on it).
#
# With a mean-reduced loss and equal shards, the result equals the gradient of the whole batch.
# That equality is why DDP training matches single-process training.

# %% tags=["answer:data_parallel_grads"]
import copy  # noqa: E402


def data_parallel_grads(model, loss_fn, X, y, world_size):
    ### BEGIN SOLUTION
    summed = None
    for X_rank, y_rank in zip(X.chunk(world_size), y.chunk(world_size)):
        replica = copy.deepcopy(model)
        loss = loss_fn(replica(X_rank), y_rank)
        grads = torch.autograd.grad(loss, list(replica.parameters()))
        summed = list(grads) if summed is None else [s + g for s, g in zip(summed, grads)]
    return [s / world_size for s in summed]
    ### END SOLUTION


# %% tags=["check:data_parallel_grads"]
ex.data_parallel_grads.check(data_parallel_grads)

# %% [markdown]
# ### Why the training code goes into a script
#
# Each rank is a separate Python process. A new process cannot see anything defined in this
# notebook: it starts a fresh interpreter, unpickles the function it should run, and looks for
# it by name in its own `__main__` module, where the function does not exist. This is how
# `mp.spawn`, Windows, macOS (and Linux from Python 3.14) start processes. Try it with the
# standard library:

# %% tags=["nbval-ignore-output"]
import multiprocessing  # noqa: E402


def hello(rank):
    print("hello from rank", rank)


process = multiprocessing.get_context("spawn").Process(target=hello, args=(0,))
process.start()
process.join()

# %%
print("exit code:", process.exitcode)

# %% [markdown]
# Exit code 1 means the child process failed. The child prints its own traceback, which shows
# up under the cell in JupyterLab (in some setups only in the terminal that runs Jupyter). It
# ends with
#
# ```
# AttributeError: Can't get attribute 'hello' on <module '__main__' (built-in)>
# ```
#
# `torch.multiprocessing.spawn(hello, nprocs=2)` fails the same way and then raises
# `ProcessExitedException: process 1 terminated with exit code 1`. We do not run it here
# because it costs several seconds: each child imports PyTorch before it fails.

# %% [markdown]
# Functions that workers import from a module or a script work. So the training code goes into
# a script file, and `torchrun` starts one process per rank, each running that script. `torchrun`
# sets the environment variables `RANK`, `LOCAL_RANK`, `WORLD_SIZE`, `MASTER_ADDR` and
# `MASTER_PORT` that `init_process_group` reads. We write the script into a temporary folder,
# together with the training data, so the ranks do not each have to load scikit-learn.

# %%
scratch = tempfile.TemporaryDirectory(prefix="lesson06_")  # deleted when the kernel stops
workdir = scratch.name
data_path = os.path.join(workdir, "digits_train.pt")
torch.save({"X": X_train, "y": y_train}, data_path)
print(f"{len(X_train)} training samples saved for the ranks")

# %% [markdown]
# The script, line by line:
#
# - `torch.set_num_threads(1)`: two ranks on two cores. With the default thread count each rank
#   would start one thread per core, and four busy threads on two cores slow everything down.
# - `init_process_group("gloo")`: gloo runs on CPUs. NCCL is the backend for NVIDIA GPUs and
#   needs one GPU per rank, so the script uses it only when there are enough GPUs.
# - `DistributedSampler` + `sampler.set_epoch(epoch)`: different data per rank, a new shuffle
#   each epoch.
# - `DDP(model)`: broadcasts rank 0's weights to all ranks, then all-reduces the gradients during
#   `backward`.
# - Only rank 0 saves, then `barrier()` keeps the other ranks from exiting before the file exists.
# - The script ends as every script should: `main()` returns and Python exits normally.

# %% tags=["nbval-ignore-output"]
# %%writefile {workdir}/ddp_train.py
"""Data-parallel training of a digit classifier.

Run with: torchrun --nproc_per_node=2 ddp_train.py --data DATA --out OUT
"""
import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn import functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

GLOBAL_BATCH = 64    # samples per optimizer step, all ranks together
NUM_EPOCHS = 3
LR = 0.5


def make_dataset(path):
    data = torch.load(path)                      # weights_only=True: only tensors are allowed
    return TensorDataset(data["X"], data["y"])


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    torch.set_num_threads(1)                     # one thread per rank
    world_size = int(os.environ["WORLD_SIZE"])
    use_cuda = torch.cuda.device_count() >= world_size
    dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    rank = dist.get_rank()
    device = torch.device(f"cuda:{os.environ['LOCAL_RANK']}") if use_cuda else torch.device("cpu")

    dataset = make_dataset(args.data)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=GLOBAL_BATCH // world_size, sampler=sampler)
    model = DDP(make_model().to(device))
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(NUM_EPOCHS):
        sampler.set_epoch(epoch)                 # a new shuffle each epoch, the same on every rank
        totals = torch.zeros(2, device=device)   # this rank's summed loss and sample count
        for X, y in loader:
            X, y = X.to(device), y.to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(X), y)
            loss.backward()                      # DDP averages the gradients of all ranks here
            optimizer.step()
            totals[0] += loss.detach() * len(y)
            totals[1] += len(y)
        dist.all_reduce(totals)                  # sum over ranks (for the log line only)
        if rank == 0:
            print(f"epoch {epoch}: mean training loss {(totals[0] / totals[1]).item():.3f} "
                  f"({len(sampler)} samples per rank)", flush=True)

    if rank == 0:                                # one process writes the file
        torch.save(model.module.state_dict(), args.out)   # .module: the model inside DDP
    dist.barrier()                               # nobody exits before the file is written
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

# %% [markdown]
# Launch it. In a terminal you would type
# `torchrun --standalone --nproc_per_node=2 ddp_train.py --data ... --out ...`: `--standalone`
# means one machine, `--nproc_per_node=2` two ranks. From the notebook, the course's helper
# `torchrun(script, *args)` runs that command with this notebook's Python (`torchrun` is
# `python -m torch.distributed.run`) and returns the finished process. It adds one workaround,
# kept out of the script you study: with PyTorch 2.13 on CPU, gloo's threads outlive
# `destroy_process_group()` and Python's shutdown occasionally aborts a rank after all work is
# done, so the helper ends each rank with `os._exit` once the script has returned (read
# `course_utils/ddp_launch.py` for why that is not something to copy into your own scripts).
# torchrun also prints a notice that it sets `OMP_NUM_THREADS=1` for each rank, which is what we
# want. This takes several seconds: each rank starts Python, imports PyTorch and builds DDP.

# %% tags=["nbval-ignore-output"]
from course_utils.ddp_launch import torchrun  # noqa: E402

out_path = os.path.join(workdir, "ddp_weights.pt")
result = torchrun(os.path.join(workdir, "ddp_train.py"), "--data", data_path, "--out", out_path)
print(result.stdout)
if result.returncode != 0:
    print(result.stderr)
    raise RuntimeError(f"torchrun failed with exit code {result.returncode}")

# %% [markdown]
# Now check the claim. Train the same model in this one process, where each step uses
# **both** ranks' half batches at once. The script's functions can be imported here because
# they live in a file.

# %%
sys.path.insert(0, workdir)
import ddp_train  # noqa: E402

dataset = ddp_train.make_dataset(data_path)
model = ddp_train.make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=ddp_train.LR)
samplers = [DistributedSampler(dataset, num_replicas=2, rank=r, shuffle=True, seed=0)
            for r in range(2)]
loaders = [DataLoader(dataset, batch_size=ddp_train.GLOBAL_BATCH // 2, sampler=s) for s in samplers]
for epoch in range(ddp_train.NUM_EPOCHS):
    for s in samplers:
        s.set_epoch(epoch)
    for (X0, y0), (X1, y1) in zip(*loaders):
        X, y = torch.cat([X0, X1]), torch.cat([y0, y1])   # rank 0's half + rank 1's half
        optimizer.zero_grad()
        loss_fn(model(X), y).backward()
        optimizer.step()

ddp_weights = torch.load(out_path)
diff = max((ddp_weights[k] - v).abs().max().item() for k, v in model.state_dict().items())
print("same parameter names:", list(ddp_weights) == list(model.state_dict()))
print("largest weight difference below 1e-5:", diff < 1e-5)
with torch.no_grad():
    accuracy = (model(X_test).argmax(1) == y_test).float().mean().item()
print(f"test accuracy after {ddp_train.NUM_EPOCHS} epochs: {accuracy:.0%}")

# %% [markdown]
# Equal up to float32 rounding, but not bit-identical: the all-reduce adds the two ranks'
# gradients in a different order than a single backward pass sums the batch. The exact size of
# the difference depends on the machine:

# %% tags=["nbval-ignore-output"]
print(f"largest difference: {diff:.1e}")

# %% [markdown]
# ### From one machine to many
#
# The same script runs on several machines unchanged. Only the launch line changes: start it
# once on every machine (*node*), all pointing at one *rendezvous endpoint* (any node's address
# and a free port):
#
# ```bash
# # on each of 2 machines with 4 GPUs each (8 ranks in total)
# torchrun --nnodes=2 --nproc_per_node=4 --rdzv-backend=c10d \
#          --rdzv-endpoint=node0.example.org:29500 --rdzv-id=digits-run-1 \
#          ddp_train.py --data ... --out ...
# ```
#
# `RANK` then runs over all 8 processes and `LOCAL_RANK` over the 4 on each machine. That is why
# the script picks its GPU with `LOCAL_RANK` and saves only on global rank 0. Cluster schedulers
# such as SLURM start one `torchrun` per node for you.

# %% [markdown]
# ## Recap
#
# - Pick `device` once. `model.to(device)` moves in place, but `x = x.to(device)` needs the
#   assignment. Use `.detach().cpu()` before NumPy or plotting.
# - GPUs run asynchronously: synchronize before reading a clock. Read memory with
#   `memory_allocated` / `max_memory_allocated`.
# - `torch.autocast(device_type, dtype=torch.bfloat16)` computes matrix products in bfloat16
#   and keeps float32 weights and losses; softmax and reductions follow the device's op list
#   (float32 on CUDA, the input's dtype on the CPU): print the dtypes rather than assume them.
#   float16 (CUDA's autocast default) needs `torch.amp.GradScaler`.
#   `torch.cuda.amp.*` is deprecated. The speed-up needs large matrices and bf16 hardware, so
#   measure it.
# - Gradient checkpointing (`use_reentrant=False`) trades one extra forward pass for most of
#   the activation memory. `torch.compile` costs seconds up front and pays off later.
# - DDP: one process per rank, started by `torchrun` from a script (never from notebook
#   functions). Use `DistributedSampler` with `set_epoch`, and save from rank 0. Averaged
#   gradients make two half batches equal one whole batch.
#
# Next: **12_capstone**, a digit classifier from data to exported model.

# %% [markdown]
# ## Further reading
#
# PyTorch documentation:
#
# - [Automatic mixed precision](https://docs.pytorch.org/docs/stable/amp.html): `autocast` and
#   `GradScaler`, and the autocast op reference: which ops run in lower precision and which in
#   float32, per device.
# - [AMP examples](https://docs.pytorch.org/docs/stable/notes/amp_examples.html): clipping with
#   `unscale_`, gradient accumulation, several models and optimizers with one scaler.
# - [CUDA semantics](https://docs.pytorch.org/docs/stable/notes/cuda.html): asynchronous
#   execution, synchronising for timing, and the caching allocator behind the memory statistics.
# - [`torch.utils.checkpoint`](https://docs.pytorch.org/docs/stable/checkpoint.html): activation
#   checkpointing and its `use_reentrant` argument.
# - [`torch.compiler` API
#   reference](https://docs.pytorch.org/docs/stable/torch.compiler_api.html): `torch.compile` and
#   its options, with a link to the overview of how it captures and compiles graphs.
# - [Distributed data parallel](https://docs.pytorch.org/docs/stable/notes/ddp.html) (a note):
#   how DDP buckets gradients and overlaps the all-reduce with `backward`;
#   [`torchrun`](https://docs.pytorch.org/docs/stable/elastic/run.html): the launcher and the
#   environment variables it sets;
#   [`torch.distributed`](https://docs.pytorch.org/docs/stable/distributed.html): process groups
#   and collectives.
#
# The best external material:
#
# - PyTorch tutorials, [Getting started with distributed data
#   parallel](https://docs.pytorch.org/tutorials/intermediate/ddp_tutorial.html): DDP step by
#   step, then with `torchrun`.
# - S. Li et al., [*PyTorch Distributed: Experiences on Accelerating Data Parallel
#   Training*](https://arxiv.org/abs/2006.15704), VLDB 2020: the design of DDP, by its authors.
# - P. Micikevicius et al., [*Mixed Precision Training*](https://arxiv.org/abs/1710.03740): why
#   loss scaling and float32 master weights are needed with float16.
# - Sebastian Raschka, [*PyTorch in One
#   Hour*](https://sebastianraschka.com/teaching/pytorch-1h/), its last sections: training on
#   several GPUs with DDP from a script.
