# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 10 · Performance on one device
#
# Models get big, data gets big, and training gets slow. This lesson covers the tools that make
# one device go further: accelerators, correct timing, lower-precision arithmetic, trading
# compute for memory, and compiling. Lesson 11 then spreads training over several processes.
#
# **Everything here runs on a plain CPU**, so you can learn it on a laptop. Mixed precision
# runs for real in bfloat16, and `torch.compile` really captures graphs. A few cells only mean
# something on a GPU. They start with `if requires_gpu(...)`: without a GPU they print one line
# saying they were skipped, and with one they run unchanged.
#
# You will learn to
#
# 1. write device-agnostic code and read the errors that devices cause;
# 2. time and measure correctly (GPUs run asynchronously);
# 3. train with `torch.autocast`, choose its dtype per device, and know when a `GradScaler` is needed;
# 4. save memory with activation checkpointing, and know which blocks not to checkpoint;
# 5. use `torch.compile`: graph breaks, recompiles and `dynamic=`.
#
# **Time: about 85 minutes** on your own, the five checked exercises included (about 35 of those minutes). *Run All* alone takes about 12 s on a 2-core CPU.

# %%
import time
import warnings

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.nn import functional as F

from course_utils.datasets import digits_split
from course_utils.lesson_props.l10_devices import bf16_native, requires_gpu
from course_utils.grading import exercises_for, predictions_for

ex = exercises_for("10_performance")
quiz = predictions_for("10_performance")  # predict-the-output questions
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
# does **not** move the tensor: it returns a tensor on the device, and you have to keep it.
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
# When nothing has to change, `.to` does not copy at all: it returns the very same tensor. So
# `x.to(device)` costs nothing when `x` is already there, and writing to the result writes to `x`:

# %%
same = X.to(X.device)
print("same object:", same is X, "| a real move or a new dtype gives a new tensor:", X.to(torch.float64) is X)

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

# %% tags=["raises-exception", "nbval-ignore-output", "gpu-only"]
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

# %% tags=["nbval-ignore-output", "gpu-only"]
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
# ### Exercise 2: time a call honestly
#
# Write `median_time(fn, synchronize, warmup=2, repeats=5)`. It returns how many seconds one
# call of `fn()` takes, as the **median** over `repeats` timed calls (use `time.perf_counter()`
# for the clock). Two things make a naive timer lie, and your function must deal with both:
#
# - `fn()` may only *queue* work on an asynchronous device and return at once.
#   `synchronize()` waits until all queued work has finished (on a GPU it would be
#   `torch.cuda.synchronize`; on the CPU it does nothing). Every clock reading you take must
#   count only work that has really finished, and only the call you are timing.
# - The first calls pay one-time costs (memory allocation, kernel selection, compilation):
#   run `fn()` `warmup` times before you start timing, and do not count those calls.
#
# The check gives you a simulated asynchronous device with its own clock, so what your timer
# measures is known exactly.

# %% tags=["answer:median_time"]
def median_time(fn, synchronize, warmup=2, repeats=5):
    ### BEGIN SOLUTION
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        synchronize()
        start = time.perf_counter()
        fn()
        synchronize()
        times.append(time.perf_counter() - start)
    times.sort()
    middle = len(times) // 2
    return times[middle] if len(times) % 2 else (times[middle - 1] + times[middle]) / 2
    ### END SOLUTION


# %% tags=["check:median_time"]
ex.median_time.check(median_time)

# %% [markdown]
# The course ships the same timer as `time_per_call(fn, device, repeats, warmup)` in
# `course_utils.lesson_props.l10_devices`: it picks the device's `synchronize` for you. The rest
# of the lesson uses it. On the CPU the synchronization does nothing, and the same code is
# correct on every device.

# %% tags=["nbval-ignore-output"]
from course_utils.lesson_props.l10_devices import time_per_call  # noqa: E402

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

# %% tags=["nbval-ignore-output", "gpu-only"]
if requires_gpu("CUDA memory statistics"):
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()                    # tensors of earlier cells
    big = torch.empty(64, 1024, 1024, device="cuda")          # 256 MiB of float32
    print(f"allocated {torch.cuda.memory_allocated() / 2**20:.0f} MiB "
          f"({(torch.cuda.memory_allocated() - before) / 2**20:.0f} MiB of it this tensor), "
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
# Do not take a table's word for it, not even this one: ask autocast on the device you run on. Each op below gets a bfloat16 input, as it would after an
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


print("CPU vector instructions:", torch.backends.cpu.get_cpu_capability(),
      "| bfloat16 instructions:", bf16_native("cpu"))
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
# What the hardware has decides it. On a 2-core AMD EPYC with bfloat16 instructions
# (AVX512-BF16), the large model trained about 1.5-2x faster in bfloat16, and the small one
# 1.5-3x slower. On a 2-core CPU with only AVX2, like most laptops before 2023, there are no
# bfloat16 instructions: PyTorch converts to float32 and back around every operation, and
# bfloat16 was **6x slower for the small model and 11x slower for the large one** (other AVX2
# machines measured up to 16x). `bf16_native("cpu")` (in `course_utils.lesson_props.l10_devices`)
# reads the CPU's flags for AVX512-BF16, AMX or Arm's BF16. On NVIDIA GPUs, float16 runs on
# tensor cores from the Volta generation on (compute capability 7.0: V100, and the T4 that
# Colab lends for free), bfloat16 from Ampere on (8.0: A100, RTX 30xx and newer), and large
# models train several times faster than in float32. Timings on a busy machine jump around (run
# the cell again), and yours will differ: measure on your own hardware.

# %% [markdown]
# ### float16 on a GPU needs a `GradScaler`
#
# With float16, small gradients underflow to zero. A `GradScaler` multiplies the loss by a large
# factor before `backward` (so the gradients are large enough to represent), divides the
# gradients back before the optimizer step, skips a step whose gradients overflowed to
# `inf`/`NaN`, and adapts the factor as it goes. Between `backward` and `scaler.step`, the
# `.grad` tensors hold the gradients *times the scale* (65536 at the start), so anything that
# reads them there sees numbers that are far too large, unless you first call
# `scaler.unscale_(optimizer)`. Put `scaler.state_dict()` into checkpoints (lesson 09).
#
# 🖥️ **GPU only**:

# %% tags=["nbval-ignore-output", "gpu-only"]
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
        scaler.step(optimizer)               # unscales; skipped if a gradient is inf or NaN
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
# ### Exercise 3: which precision, which scaler?
#
# Write `amp_policy(device_type, bf16_supported)`. It returns `(dtype, use_scaler)`: the dtype
# to train in on `device_type` (`"cpu"` or `"cuda"`), and whether that training needs a
# `GradScaler`. `torch.float32` is an answer too: it means no mixed precision, and a training
# loop then passes `enabled=False` to `torch.autocast`. `bf16_supported` says whether the device
# has bfloat16 instructions (`bf16_native(device_type)`; on CUDA that is compute capability 8.0
# and newer, which `torch.cuda.is_bf16_supported(including_emulation=False)` asks: the default
# `including_emulation=True` also says `True` on a T4, which only emulates bfloat16, slowly).
#
# Decide each of the four cases from what this lesson showed you: which dtypes keep training
# correct, which ones need a scaler, and what each one costs on hardware with and without fast
# units for it. Correct training first, speed second, and no scaler where none is needed. Any
# other device type is not yours to decide: raise a `ValueError`.

# %% tags=["answer:amp_policy"]
def amp_policy(device_type, bf16_supported):
    ### BEGIN SOLUTION
    if device_type not in ("cpu", "cuda"):
        raise ValueError(f"no AMP policy for device type {device_type!r}")
    if bf16_supported:
        return torch.bfloat16, False      # float32's range: nothing underflows, no scaler
    if device_type == "cuda":
        return torch.float16, True        # tensor cores since Volta; float16 gradients need scaling
    return torch.float32, False           # emulated 16-bit on this CPU is slower: no mixed precision
    ### END SOLUTION


# %% tags=["check:amp_policy"]
ex.amp_policy.check(amp_policy)

# %% [markdown]
# ### Exercise 4: a mixed-precision training step, with clipping
#
# Write `amp_train_step(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0)`:
# one training step in mixed precision with autocast dtype `dtype`, on whatever device the batch
# `X` is on, that clips the gradients' total norm to `max_norm`
# (`nn.utils.clip_grad_norm_`) before the update. When `scaler` is not `None` (a `GradScaler`,
# which is what `amp_policy` asks for with float16), the step must use it. Return the loss as a
# Python float.
#
# Nothing above gives you this step line by line: decide what belongs inside the `with
# torch.autocast(...)` block and what must stay outside, what the master weights' dtype is, and
# where the clipping has to go when the gradients are scaled. The check runs float16 with a
# `GradScaler` on the CPU too (both work there), and compares your loss and updated weights with
# a reference step.

# %% tags=["answer:amp_train_step"]
def amp_train_step(model, X, y, loss_fn, optimizer, dtype, scaler=None, max_norm=1.0):
    ### BEGIN SOLUTION
    optimizer.zero_grad()
    with torch.autocast(device_type=X.device.type, dtype=dtype):   # forward and loss only
        loss = loss_fn(model(X), y)
    if scaler is None:
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
    else:
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)        # true gradients before clipping reads them
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        scaler.step(optimizer)
        scaler.update()
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
# gives no parameter gradients when the segment's input does not require grad.

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

# %% tags=["nbval-ignore-output", "gpu-only"]
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
# A checkpointed segment runs its forward pass **twice**: once without keeping activations, and
# again during backward. For a pure function of its input that is only a cost in time. Keep that
# "twice" in mind for the exercise.
#
# ### Exercise 5: which blocks to checkpoint
#
# Write `checkpointed_forward(blocks, x)`. It runs `x` through every block of the
# `nn.ModuleList` `blocks`, in order, and returns the output. Save as much activation memory as
# checkpointing blocks one at a time can (`checkpoint(block, x, use_reentrant=False)`), but the
# call must be indistinguishable from a plain forward pass for a training step: the same
# output, the same gradients, and the same state of every module afterwards. Some stacks contain
# blocks with a `BatchNorm1d`; some stacks are in training mode and some in `eval()` mode.
# Decide block by block.
#
# The check measures the bytes your forward pass saves for backward, watches which blocks are
# recomputed during backward, and compares outputs, gradients and every buffer with a plain
# forward pass. The input sometimes does not require grad, as real data usually does not.

# %% tags=["answer:checkpointed_forward"]
def checkpointed_forward(blocks, x):
    ### BEGIN SOLUTION
    for block in blocks:
        # a BatchNorm in training mode updates its running statistics on every forward call:
        # recomputing it during backward would update them twice
        updates_state = any(isinstance(m, nn.BatchNorm1d) and m.training for m in block.modules())
        x = block(x) if updates_state else checkpoint(block, x, use_reentrant=False)
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
# ### What `torch.compile` captures: graphs, graph breaks and recompiles
#
# `torch.compile` turns Python into graphs with *Dynamo*, which reads the function's bytecode.
# Two things decide whether compiling pays off, and both can be seen without the slow default
# backend. A *backend* is just a function that receives each captured graph: this one records
# the example inputs' shapes and runs the graph unchanged.

# %%
compiled_graphs = []


def recording_backend(graph_module, example_inputs):
    compiled_graphs.append([tuple(t.shape) for t in example_inputs if isinstance(t, torch.Tensor)])
    return graph_module.forward        # run the captured graph as it is


def scaled_relu(x):
    return torch.relu(x) * 2 + 1

# %% [markdown]
# **Graph breaks.** Dynamo cannot put everything in a graph. A `print`, a call into a library
# it does not understand, or Python control flow that depends on a tensor's *values* (`if
# x.sum() > 0:`) splits the function into several graphs, with plain Python in between.
# `torch._dynamo.explain` reports them:

# %%
def branchy(x):
    y = torch.sin(x)
    if y.sum() > 0:                    # depends on the data: Dynamo cannot know the branch
        return y + 1
    return y - 1


torch._dynamo.reset()
explanation = torch._dynamo.explain(branchy)(torch.randn(8))
print("graphs:", explanation.graph_count, "| graph breaks:", explanation.graph_break_count)
print("why:", str(explanation.break_reasons[0].reason).splitlines()[0])

# %% [markdown]
# Each break costs a return to Python, and fewer, larger graphs leave the compiler more to fuse.
# `torch.compile(fn, fullgraph=True)` turns a graph break into an error, which is how you find
# them in your own model. `torch.where(y.sum() > 0, y + 1, y - 1)` computes the same thing without
# a branch, in one graph.
#
# **Recompiles.** A compiled graph is guarded by what it assumed, such as the input's shape.
# Call it with another shape and Dynamo compiles again.

# %% [markdown]
# **Predict the output** (value): `scaled_relu` is compiled with `dynamic=False` and called with
# inputs of 3, 4, 5, 6, 7 and 8 elements. How many graphs does the backend receive?

# %% tags=["predict:static_recompiles"]
quiz.static_recompiles(
    ### BEGIN PREDICTION
    6
    ### END PREDICTION
)

# %%
for dynamic in (False, None, True):
    torch._dynamo.reset()                        # forget earlier compilations
    compiled_graphs.clear()
    fn = torch.compile(scaled_relu, backend=recording_backend, dynamic=dynamic)
    for n in (3, 4, 5, 6, 7, 8):
        fn(torch.randn(n))
    print(f"dynamic={str(dynamic):5s} -> {len(compiled_graphs)} graph(s) compiled for the sizes 3 to 8")

# %% [markdown]
# - `dynamic=False`: one graph per shape. Fine for fixed shapes, ruinous when every batch has a
#   different length (after 8 recompiles of one function Dynamo gives up and runs it eagerly).
# - `dynamic=None` (the default): the first call compiles for its exact shape; when a shape
#   changes, Dynamo recompiles **once** with that dimension symbolic, and later sizes reuse it.
# - `dynamic=True`: symbolic from the start, one compilation (the generated code can be a
#   little slower than a specialised one).
#
# To mark one dimension as dynamic before the first call, without changing the whole function,
# use `torch._dynamo.mark_dynamic(x, 0)`. To see *why* something recompiled, run with the
# environment variable `TORCH_LOGS=recompiles` (or `torch._logging.set_logs(recompiles=True)`).

# %%
torch._dynamo.reset()
compiled_graphs.clear()
fn = torch.compile(scaled_relu, backend=recording_backend)
first = torch.randn(3)
torch._dynamo.mark_dynamic(first, 0)             # dimension 0 will vary: compile it symbolically
for x_n in (first, torch.randn(7), torch.randn(11)):
    fn(x_n)
print("graphs compiled with mark_dynamic:", len(compiled_graphs))
torch._dynamo.reset()

# %% [markdown]
# ### Where does the time go? The profiler
#
# Before you reach for any of the tools in this lesson, measure where the time goes.
# `torch.profiler.profile` records every operator (and, on a GPU, every kernel), and
# `prof.key_averages().table(sort_by="cpu_time_total")` lists the most expensive ones. Lesson 07
# (debugging) uses it on a training step; the
# [profiler recipe](https://docs.pytorch.org/tutorials/recipes/recipes/profiler_recipe.html)
# covers GPU kernels, memory and traces you can open in a browser.

# %% [markdown]
# ## Recap
#
# - Pick `device` once. `model.to(device)` moves in place, but `x = x.to(device)` needs the
#   assignment (and returns `x` itself when nothing changes). Use `.detach().cpu()` before NumPy
#   or plotting.
# - GPUs run asynchronously: warm up, then synchronize before each clock reading, and report a
#   median. Read memory with `memory_allocated` / `max_memory_allocated`.
# - `torch.autocast(device_type, dtype=...)` goes around the forward pass and the loss only;
#   `backward` and the optimizer step stay outside, and the weights stay float32. Matrix
#   products run in low precision; softmax and reductions follow the device's op list (float32
#   on CUDA, the input's dtype on the CPU): print the dtypes rather than assume them.
# - bfloat16 (CPUs with bf16 instructions, Ampere and newer GPUs) needs no scaler; without them a
#   CPU emulates it, many times slower, so train in float32 there. float16 (CUDA's autocast
#   default; tensor cores since Volta) needs `torch.amp.GradScaler`, and `unscale_` before anything reads the gradients, such as
#   clipping. `torch.cuda.amp.*` is deprecated. Measure the speed-up: it needs large matrices.
# - Activation checkpointing (`use_reentrant=False`) trades one extra forward pass for most of
#   the activation memory; a checkpointed block runs twice, so blocks that change state in
#   their forward (BatchNorm in training mode) are not checkpointed.
# - `torch.compile` costs seconds up front. Graph breaks split the graph (`explain`,
#   `fullgraph=True`); new shapes recompile (`dynamic=`, `mark_dynamic`, `TORCH_LOGS=recompiles`).
#
# Next: **11_distributed**, training on several processes with DDP and `torchrun`.

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
# - [`torch.compile` troubleshooting](https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html):
#   graph breaks, guards and recompilations, `TORCH_LOGS`; [dynamic
#   shapes](https://docs.pytorch.org/docs/stable/torch.compiler_dynamic_shapes.html); the
#   [`torch.compiler` API reference](https://docs.pytorch.org/docs/stable/torch.compiler_api.html).
# - [Profiling your PyTorch module](https://docs.pytorch.org/tutorials/beginner/profiler.html):
#   `torch.profiler` step by step.
#
# The best external material:
#
# - P. Micikevicius et al., [*Mixed Precision Training*](https://arxiv.org/abs/1710.03740): why
#   loss scaling and float32 master weights are needed with float16.
# - Horace He, [*Making Deep Learning Go Brrrr From First
#   Principles*](https://horace.io/brrr_intro.html): compute, memory bandwidth and overhead, the
#   three things that make a model slow, and which tool helps with which.
# - T. Chen et al., [*Training Deep Nets with Sublinear Memory
#   Cost*](https://arxiv.org/abs/1604.06174): the idea behind activation checkpointing.
