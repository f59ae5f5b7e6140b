# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 07 · Debugging and observability
#
# A broken training run rarely crashes. It prints a loss of `nan`, or a loss that will not
# move, or a validation curve that turns up, and leaves you to find out why. This lesson is a
# toolbox for that search, and a habit: look at the numbers before you guess.
#
# You will learn to
#
# 1. find where NaN and inf appear, with `torch.isfinite` guards, forward hooks and
#    `torch.autograd.detect_anomaly` (and what anomaly mode costs);
# 2. run the first sanity check of any new model: overfit one batch;
# 3. watch gradient norms per layer, after `backward()` and with hooks during it;
# 4. see where the time goes with `torch.profiler`;
# 5. log scalars and histograms with TensorBoard's `SummaryWriter`, and read them back
#    offline, without a server;
# 6. read loss curves: a learning rate too high or too low, overfitting, a data bug, dead ReLUs.
#
# **Time: about 80 minutes** on your own, the five checked exercises included (about 41 of those minutes). *Run All* alone takes about 11 s on a 2-core CPU.

# %%
import math
import tempfile
import time
import warnings

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function
from torch.utils.tensorboard import SummaryWriter

from course_utils.datasets import digits_split
from course_utils.grading import exercises_for, predictions_for, reference

ex = exercises_for("07_debugging")
quiz = predictions_for("07_debugging")  # predict-the-output questions
_ = torch.manual_seed(0)

# %% [markdown]
# ## 1. Where NaN and inf come from
#
# Floating point has three special values: `inf`, `-inf` and `nan` ("not a number"). A few
# operations make them out of ordinary numbers: `log(0)` is `-inf`, `1 / 0` is `inf`, `exp`
# of anything above about 88.7 overflows float32 to `inf`, and `0 / 0`, `inf - inf` and
# `0 * inf` are `nan`. Once a `nan` is in a tensor, almost every value computed from it is
# `nan` too, so one bad batch poisons the weights for good.

# %% [markdown]
# **Predict the output** (value): What is `torch.isfinite(torch.tensor([1.0, float("inf"), float("nan")])).tolist()`?

# %% tags=["predict:isfinite_list"]
quiz.isfinite_list(
    ### BEGIN PREDICTION
    [True, False, False]
    ### END PREDICTION
)

# %%
x = torch.tensor([0.0, 1.0, 100.0])
print("log:", torch.log(x), " 1/x:", 1 / x, " exp:", torch.exp(x))
print("0/0:", x[0] / x[0], " inf - inf:", (1 / x[0]) - (1 / x[0]))
print("isfinite:", torch.isfinite(torch.tensor([1.0, float("inf"), float("nan")])).tolist())
print("nan == nan:", bool(torch.tensor(float("nan")) == torch.tensor(float("nan"))))

# %% [markdown]
# `torch.isnan` finds only `nan`; `torch.isfinite` is false for `nan`, `inf` and `-inf`, which
# is almost always what a guard wants. And `nan` is not equal to itself, so `loss == nan`
# never catches anything.
#
# The cheapest guard sits in the training loop: check the loss before stepping, and stop (or
# skip the batch) with a message that says where you are.

# %%
def guarded_step(model, X, y, optimizer, step):
    loss = F.cross_entropy(model(X), y)
    if not torch.isfinite(loss):
        raise FloatingPointError(f"step {step}: the loss is {loss.item()}, stopping before the weights are ruined")
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


model = nn.Linear(4, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
print(guarded_step(model, torch.randn(8, 4), torch.randint(0, 3, (8,)), opt, step=0))

# %% [markdown]
# ### Which layer made it? Forward hooks
#
# `module.register_forward_hook(fn)` calls `fn(module, inputs, output)` every time the module
# finishes its forward, and returns a handle whose `.remove()` takes the hook off again. A hook
# on every module sees each intermediate output without changing the model's code. Here a
# model whose third layer takes the log of a ReLU's output (some zeros, so `-inf`):

# %%
class Log(nn.Module):
    def forward(self, x):
        return torch.log(x)


model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), Log(), nn.Linear(8, 3))
seen = []
handles = [m.register_forward_hook(lambda mod, inp, out, name=name: seen.append((name or "(model)", out)))
           for name, m in model.named_modules()]
model(torch.randn(5, 4))
for h in handles:
    h.remove()  # always: a forgotten hook runs on every later forward
for name, out in seen:
    print(f"{name:8} finite: {bool(torch.isfinite(out).all())}  nan: {bool(out.isnan().any())}")

# %% [markdown]
# The hooks fire in the order the modules *finish*: a layer before the `Sequential` that
# contains it, and the model itself last. Notice that `Log` made `-inf` but no `nan`: the next
# `Linear` turned `-inf` plus `+inf` into `nan`.

# %% [markdown]
# ### Exercise 1: name the first module that produces NaN or inf
#
# A run's loss went `nan`. The model and the batch were saved, and they reproduce it. Its
# block was written by a teammate: it defines its layers in one order and calls them in
# another.

# %%
class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.log = Log()
        self.gate = nn.Sequential(nn.Linear(width, width), nn.ReLU())

    def forward(self, x):
        return self.log(self.gate(x))


torch.manual_seed(7)
incident = nn.Sequential(nn.Linear(4, 8), Block(8), nn.Linear(8, 3))
batch = torch.randn(16, 4)
print("loss:", F.cross_entropy(incident(batch), torch.zeros(16, dtype=torch.long)).item())
print("named_modules():", [name for name, _ in incident.named_modules()])

# %% [markdown]
# Eight modules, and a `nan` at the end. Which one should you open first? Write
# `first_nonfinite(model, x)`: run `model(x)` once and return the name (as
# `model.named_modules()` gives it; the model itself is `""`) of **the module whose forward
# first produced a NaN or an inf**, the one where the trouble starts (when the input already
# holds a NaN, the first module that passes it on); `None` when every output is finite. An
# output may be a tensor or a tuple of tensors. **Remove every hook you register**, even when
# the forward raises, and leave the model as it was.
#
# Decide what "first" has to mean: first listed, first to start or first to finish? And which
# test sees every kind of non-finite value? On the saved run your answer should name the log:
# `first_nonfinite(incident, batch)` is `'1.log'`.

# %% tags=["answer:first_nonfinite"]
def first_nonfinite(model, x):
    ### BEGIN SOLUTION
    found = []

    def make_hook(name):
        def hook(module, inputs, output):
            outputs = output if isinstance(output, (tuple, list)) else (output,)
            bad = any(isinstance(o, torch.Tensor) and o.is_floating_point() and not bool(torch.isfinite(o).all())
                      for o in outputs)
            if bad and not found:
                found.append(name)
        return hook

    handles = [m.register_forward_hook(make_hook(name)) for name, m in model.named_modules()]
    try:
        with torch.no_grad():
            model(x)
    finally:
        for h in handles:
            h.remove()
    return found[0] if found else None
    ### END SOLUTION


# %% tags=["check:first_nonfinite"]
ex.first_nonfinite.check(first_nonfinite)

# %% [markdown]
# `named_modules()` lists in the order modules were *assigned*: the model first, a container
# before its layers, `log` before `gate`; the first non-finite name in that order is `""`,
# the model, which only received the damage. A module *starts* before its layers too. A hook
# fires when a module *finishes*, so the first hook to see a non-finite value belongs to the
# module that made it. And `isnan` alone would blame `"2"`: the log made `-inf`, not `nan`.

# %%
print("first_nonfinite:", repr(reference("07_debugging.first_nonfinite")(incident, batch)))  # the course's answer

# %% [markdown]
# ### NaN in the backward pass: `detect_anomaly`
#
# A forward can be perfectly finite and its gradient not. `sqrt` at 0 has an infinite slope;
# multiplied by a zero upstream gradient that is `0 * inf = nan`, and the NaN lands in
# `x.grad` with no hint of where it came from:

# %%
x = torch.tensor([0.0, 1.0, 4.0], requires_grad=True)
y = torch.sqrt(x) * torch.tensor([0.0, 1.0, 1.0])  # the first element is masked out...
y.sum().backward()
print("forward:", y.detach(), " x.grad:", x.grad)  # ...but its gradient is nan

# %% [markdown]
# `torch.autograd.detect_anomaly()` makes autograd record, for every operation, the Python
# stack of the forward call that created it, and check each backward function's output for
# NaN. The next cell catches the error it raises and prints it, with the key lines of the
# warning anomaly mode gives first, which points at the line of the *forward* pass that made the
# bad gradient:

# %%
x = torch.tensor([0.0, 1.0, 4.0], requires_grad=True)
with warnings.catch_warnings(record=True) as caught:  # to print the warning's key lines below
    warnings.simplefilter("always")
    try:
        with torch.autograd.detect_anomaly():
            y = torch.sqrt(x) * torch.tensor([0.0, 1.0, 1.0])
            y.sum().backward()
    except RuntimeError as err:
        print("RuntimeError:", err)
report = next(str(w.message) for w in caught if "Error detected" in str(w.message)).splitlines()
print("warning:", report[0])
print("  ...the last frame of that traceback is the forward line:", report[-2].strip())

# %% [markdown]
# "Function 'SqrtBackward0' returned nan values in its 0th output", and the warning's
# "Traceback of forward call that caused the error" names the `torch.sqrt` line. The fix here
# is to keep the input away from 0 (`torch.sqrt(x + 1e-12)`) or to mask *before* the sqrt
# (`torch.where` does not help: its backward still multiplies the unused branch's infinite
# slope by zero).
#
# Anomaly mode is for debugging only: it stores a stack trace per operation and checks every
# gradient. How much slower is a small model's training step?

# %% tags=["nbval-ignore-output"]
def time_steps(n=30, anomaly=False):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
    X, y = torch.randn(64, 64), torch.randint(0, 10, (64,))
    start = time.perf_counter()
    with torch.autograd.set_detect_anomaly(anomaly):
        for _ in range(n):
            net.zero_grad()
            F.cross_entropy(net(X), y).backward()
    return (time.perf_counter() - start) / n * 1e3


time_steps(5)  # warm up
plain, anomalous = time_steps(), time_steps(anomaly=True)
print(f"plain: {plain:.2f} ms/step   anomaly mode: {anomalous:.2f} ms/step   ({anomalous / plain:.1f}x)")

# %% [markdown]
# Several times slower: on a busy 2-core CPU we measured 3-4x in a plain Python script and 8-11x
# in a Jupyter kernel, whose call stacks (recorded for every operation) are deeper. The more
# small operations a model has, the higher the cost. Turn it on to find a bug, never for a whole
# training run. `torch.autograd.set_detect_anomaly(True)` turns
# it on globally; `check_nan=False` keeps the stack traces without the NaN checks.

# %% [markdown]
# ## 2. The first sanity check: overfit one batch
#
# Before training on the whole data set, train on **one small batch** until the loss is
# (nearly) zero. A model with enough parameters can memorise a handful of examples; if it
# cannot, something between the data and the optimizer is broken: labels not matching inputs,
# a missing `zero_grad()` or `step()`, a detached graph, a learning rate off by orders of
# magnitude, a softmax before `cross_entropy`, dead units. It takes seconds and rules out most
# of the bugs of lesson 05 at once (A. Karpathy, *A Recipe for Training Neural Networks*).

# %% [markdown]
# ### Exercise 2: overfit one batch
#
# A teammate wrote the sanity check for a new classifier. Their first attempt runs without an
# error:

# %%
def overfit_one_batch_v1(model, X, y, steps):
    losses = []
    for _ in range(steps):
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        loss = F.cross_entropy(F.softmax(model(X), dim=1), y)
        loss.backward()
        optimizer.step()
        losses.append(loss)
    return losses


# %% [markdown]
# On 8 random examples of 4 classes, a model of 32 hidden units should memorise them in a
# couple of hundred steps. Theirs does not:

# %%
torch.manual_seed(0)
X8, y8 = torch.randn(8, 6), torch.randint(0, 4, (8,))
v1_model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 4))
v1_losses = overfit_one_batch_v1(v1_model, X8, y8, steps=200)
print("every 40th loss:", [round(loss.item(), 3) for loss in v1_losses[::40]], "  last:", v1_losses[-1])

# %% [markdown]
# Write `overfit_one_batch(model, X, y, steps)`, the sanity check without the first attempt's
# bugs. The contract: train `model` (a classifier returning logits; any model, dropout or
# batch norm included) **in place**, in training mode, on the single batch `(X, y)` for exactly
# `steps` optimizer steps with the (mean) cross-entropy loss, and return the list of the
# `steps` losses as Python floats, each computed *before* its step (so the first is the loss
# of the model you were given). The check gives 150 to 200 steps and wants the last loss below
# 0.05; the optimizer and learning rate are yours to choose.
#
# Read the first attempt line by line before you write. What does each line do to the
# optimizer's state, and to the gradients, from one step to the next? What does the model
# hand to `cross_entropy`, and what does `cross_entropy` expect? What is in the returned list,
# and what does it keep alive? And what does the printed curve say: a loss that falls slowly,
# or one that cannot go lower?

# %% tags=["answer:overfit_one_batch"]
def overfit_one_batch(model, X, y, steps):
    ### BEGIN SOLUTION
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)  # once: Adam keeps state between steps
    was_training = model.training
    model.train()
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(model(X), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.train(was_training)
    return losses
    ### END SOLUTION


# %% tags=["check:overfit_one_batch"]
ex.overfit_one_batch.check(overfit_one_batch)

# %% [markdown]
# On a real batch of 64 digits, the course's answer to the exercise gets a correct model to
# about 0 in 100 steps. A model with a bug planted, a softmax as its last layer (so
# `cross_entropy` gets probabilities instead of logits), cannot: its loss has a floor. And a
# bug it does *not* find: with the labels shuffled (a data bug), the model memorises them too.

# %%
split = digits_split()
X_train, y_train, X_val, y_val = split
Xb, yb = X_train[:64], y_train[:64]


def small_mlp(seed=0, *last):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10), *last)


overfit = reference("07_debugging.overfit_one_batch")  # the course's answer to exercise 2
for name, model, labels in [("correct model", small_mlp(), yb),
                            ("softmax as last layer", small_mlp(0, nn.Softmax(dim=1)), yb),
                            ("shuffled labels", small_mlp(), yb[torch.randperm(len(yb))])]:
    losses = overfit(model, Xb, labels, steps=100)
    print(f"{name:22} loss {losses[0]:.2f} -> {losses[-1]:.3f}")

# %% [markdown]
# The softmax model is stuck far from 0: its "logits" are probabilities between 0 and 1, so
# its loss can never go below `-log(e / (e + 9)) ≈ 1.46`. The shuffled labels reach about 0 too, a little
# later: a network this size can memorise 64 random labels, so overfitting one batch checks
# the *machinery* (model, loss, gradients, optimizer), not whether the labels make sense. The
# validation curve of section 6 catches that one. When the loss stays near `ln(10) ≈ 2.30`
# (chance for 10 classes), the model predicts the class frequencies and nothing else.

# %% [markdown]
# ## 3. Gradient norms, layer by layer
#
# The size of each layer's gradient says whether it learns. Vanishing gradients (norms that
# shrink towards the input), exploding ones (norms that grow by orders of magnitude from step
# to step), and layers that get no gradient at all (frozen, unused, or dead ReLUs) all show up
# here. The norm of a layer is the 2-norm of all its gradients together,
# `sqrt(sum of every squared entry)`: the same total that `clip_grad_norm_` computes for the
# whole model.
#
# A parameter that took no part in the loss (frozen with `requires_grad_(False)`, or simply not
# used in `forward`) has `.grad` equal to `None`, not zeros:

# %% [markdown]
# **Predict the output** (value): `net = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 1))`, the first layer frozen with `net[0].requires_grad_(False)`; after `net(torch.randn(2, 3)).sum().backward()`, what is `[p.grad is None for p in net.parameters()]`?

# %% tags=["predict:frozen_grad_none"]
quiz.frozen_grad_none(
    ### BEGIN PREDICTION
    [True, True, False, False]
    ### END PREDICTION
)

# %%
net = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 1))
net[0].requires_grad_(False)
net(torch.randn(2, 3)).sum().backward()
print("grad is None:", [p.grad is None for p in net.parameters()])

# %% [markdown]
# ### Exercise 3: per-layer gradient norms
#
# Write `grad_norms(model)`, called after `backward()`: a dict that maps the name of each
# module (as in `model.named_modules()`, the model itself `""`) to the 2-norm of the gradients
# of **that module's own parameters** (not its children's), as a Python float. Parameters
# whose `.grad` is `None` do not count, and a module with no gradient at all is left out. Do
# not change the gradients.

# %% tags=["answer:grad_norms"]
def grad_norms(model):
    ### BEGIN SOLUTION
    norms = {}
    for name, module in model.named_modules():
        grads = [p.grad for p in module.parameters(recurse=False) if p.grad is not None]
        if grads:
            norms[name] = math.sqrt(sum(float((g.double() ** 2).sum()) for g in grads))
    return norms
    ### END SOLUTION


# %% tags=["check:grad_norms"]
ex.grad_norms.check(grad_norms)

# %% [markdown]
# To watch the norms **during** backward, without changing the training loop, hooks again.
# `param.register_post_accumulate_grad_hook(fn)` calls `fn(param)` once `param.grad` holds its
# new value (`module.register_full_backward_hook` sees gradients of a module's inputs and
# outputs instead). Here a deep stack of sigmoids, whose gradients vanish towards the input,
# against the same stack with ReLUs:

# %%
def deep_net(act, depth=6, seed=0):
    torch.manual_seed(seed)
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(32, 32), act()]
    return nn.Sequential(*layers, nn.Linear(32, 10))


def record_norm(norms, name):
    def hook(param):  # called once param.grad holds this backward's gradient
        norms[name] = param.grad.norm().item()
    return hook


for act in (nn.Sigmoid, nn.ReLU):
    net = deep_net(act)
    norms = {}
    handles = [p.register_post_accumulate_grad_hook(record_norm(norms, name))
               for name, p in net.named_parameters() if name.endswith("weight")]
    F.cross_entropy(net(X_train[:128, :32]), y_train[:128]).backward()
    for h in handles:
        h.remove()
    print(f"{act.__name__:8}", "  ".join(f"{norms[f'{2 * i}.weight']:.0e}" for i in range(7)))

# %% [markdown]
# With sigmoids the first layer's gradient is about 100 000 times smaller than the last one's
# (each sigmoid multiplies the gradient by at most 0.25): it would barely learn. With ReLUs the
# norms stay within a factor of about 40. In a real run, log these norms every few steps (section
# 5 writes them to TensorBoard) and look for a layer that sits at zero or a norm that jumps.

# %% [markdown]
# ## 4. Where the time goes: `torch.profiler`
#
# When a step is slow, measure before you optimise. `torch.profiler.profile` records every
# operator; `key_averages().table()` sums them up. `record_function("name")` labels your own
# regions. A few steps are enough (this output varies from run to run):

# %% tags=["nbval-ignore-output"]
model = small_mlp()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
F.cross_entropy(model(X_train[:256]), y_train[:256]).backward()  # warm up: first calls are slower
with profile(activities=[ProfilerActivity.CPU]) as prof:
    for _ in range(5):
        with record_function("forward"):
            loss = F.cross_entropy(model(X_train[:256]), y_train[:256])
        with record_function("backward"):
            optimizer.zero_grad()
            loss.backward()
        optimizer.step()
print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=8))

# %% [markdown]
# The two `USDT: ... profiler_start` / `profiler_stop` lines on stderr (the red box) come from
# the profiler's C++ library as it starts and stops: a log line, not an error.
#
# Read the table by its columns: *Self CPU* is time in the operator itself, *CPU total*
# includes what it called; `aten::addmm` is the matrix multiply of `nn.Linear`, and `forward`
# and `backward` are the regions labelled above. `profile(..., record_shapes=True)` with
# `key_averages(group_by_input_shape=True)` splits the rows by input shape, and
# `prof.export_chrome_trace("trace.json")` writes a timeline for `chrome://tracing` or
# Perfetto; the profiler recipe (Further reading) adds memory profiling and GPU activity.

# %% [markdown]
# ## 5. TensorBoard: log now, look later
#
# `SummaryWriter(logdir)` appends events (a tag, a step, a value) to a file in `logdir`:
# `add_scalar` for a number (loss, learning rate, a gradient norm), `add_histogram` for a
# tensor's distribution (weights, activations). `tensorboard --logdir runs` then serves plots of
# them in a browser. Here a short digits run logs its losses and the first layer's weights:

# %%
runs = tempfile.TemporaryDirectory(prefix="lesson07_runs_")  # deleted when the kernel stops
logdir = runs.name
writer = SummaryWriter(logdir)
model = small_mlp()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
for epoch in range(5):
    for i in range(0, len(X_train), 64):
        loss = F.cross_entropy(model(X_train[i:i + 64]), y_train[i:i + 64])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        writer.add_scalar("loss/train", F.cross_entropy(model(X_train), y_train).item(), epoch)
        writer.add_scalar("loss/val", F.cross_entropy(model(X_val), y_val).item(), epoch)
    writer.add_histogram("weights/0", model[0].weight, epoch)
writer.close()  # flushes the file; until then some events may still be in memory

# %% [markdown]
# The events are also readable from Python, with no server: TensorBoard's own
# `EventAccumulator` loads a log directory. `Reload()` reads the files; `Tags()` lists what is
# there; `Scalars(tag)` returns events with `.step`, `.value` and `.wall_time`:

# %%
acc = EventAccumulator(logdir)
acc.Reload()
print("scalars:", acc.Tags()["scalars"], " histograms:", acc.Tags()["histograms"])
print([(e.step, round(e.value, 3)) for e in acc.Scalars("loss/val")])
print("histogram at step 4: min", round(acc.Histograms("weights/0")[-1].histogram_value.min, 3),
      "count", acc.Histograms("weights/0")[-1].histogram_value.num)

# %% [markdown]
# Two things bite when a long run is read back. The first, as a question:

# %% [markdown]
# **Predict the output** (value): A writer logs tag `"x"` at steps 0 to 10 049 (10 050 events). How many events does `EventAccumulator(logdir).Scalars("x")` return after `Reload()`?

# %% tags=["predict:default_scalar_limit"]
quiz.default_scalar_limit(
    ### BEGIN PREDICTION
    10000
    ### END PREDICTION
)

# %%
big_runs = tempfile.TemporaryDirectory(prefix="lesson07_big_")
big = big_runs.name
with SummaryWriter(big) as w:
    for step in range(10_050):
        w.add_scalar("x", step / 10_050, step)
default, budget = EventAccumulator(big), EventAccumulator(big, size_guidance={"scalars": 500})
default.Reload()
budget.Reload()
print(len(default.Scalars("x")), "of the 10 050 events logged")
print("with size_guidance={'scalars': 500}:", len(budget.Scalars("x")))

# %% [markdown]
# `EventAccumulator` keeps a budget of events per tag and samples the rest away: its
# `size_guidance` sets it (`help(EventAccumulator)` says which values it takes). The second
# comes from a crash: this run logged steps 0 to 7, died, and was resumed from its step-5
# checkpoint into the same directory, which it continued to step 9:

# %%
resumed_runs = tempfile.TemporaryDirectory(prefix="lesson07_resumed_")
with SummaryWriter(resumed_runs.name) as w:  # the first run: steps 0-7, then the crash
    for step in range(8):
        w.add_scalar("loss", 1.0 / (step + 1), step)
with SummaryWriter(resumed_runs.name) as w:  # resumed from the step-5 checkpoint
    for step in range(5, 10):
        w.add_scalar("loss", 0.6 - 0.02 * step, step)
resumed = EventAccumulator(resumed_runs.name)
resumed.Reload()
print([(e.step, round(e.value, 3)) for e in resumed.Scalars("loss")])

# %% [markdown]
# ### Exercise 4: read a run back
#
# A plotting script draws one curve per run and per tag, for a folder of runs like these: long
# ones, resumed ones, and runs that never logged some of the tags it asks for. Write
# `read_scalars(logdir, tag)` that gives it the curve of `tag` in the log directory `logdir`
# as a dict `{step: value}` (ints to floats): the curve **of the training that produced the
# final model**, every one of its steps. A tag the run never logged must not stop the script:
# it gets an empty curve. Read with `EventAccumulator` (or any other reader of the event files).
#
# Decide, from the two logs above: how many events the reader may keep; at steps 5, 6 and 7 of
# the resumed run, which of the two values belongs to the final model's training, and how you
# tell them apart (look at the order the events come back in); and what "an empty curve" is.

# %% tags=["answer:read_scalars"]
def read_scalars(logdir, tag):
    ### BEGIN SOLUTION
    acc = EventAccumulator(logdir, size_guidance={"scalars": 0})  # 0: keep every event
    acc.Reload()
    if tag not in acc.Tags()["scalars"]:
        return {}
    return {e.step: e.value for e in acc.Scalars(tag)}  # events in the order written: the last wins
    ### END SOLUTION


# %% tags=["check:read_scalars"]
ex.read_scalars.check(read_scalars)

# %% [markdown]
# The resumed run went back to step 5's weights: the values of the first run at steps 5 to 7
# came from training the final model never saw, and the reader returns events in the order
# they were written, so letting later values overwrite earlier ones keeps the right ones.

# %%
course_read = reference("07_debugging.read_scalars")  # the course's answer
print({step: round(value, 3) for step, value in course_read(resumed_runs.name, "loss").items()},
      course_read(resumed_runs.name, "loss/test"))

# %% [markdown]
# ## 6. Reading loss curves
#
# Most diagnoses start from two curves, the training loss and the validation loss per epoch.
# Six short runs on the digits, each with one thing wrong (or nothing), all logged the same way:

# %%
def run(n_train=1437, lr=3e-3, epochs=15, sgd=False, hidden=64, shuffle_labels=False, dead=False):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                          nn.Linear(hidden, 10))
    if dead:  # every unit of the first layer starts (and stays) below zero: dead ReLUs
        with torch.no_grad():
            model[0].bias.fill_(-20.0)
    X, y = X_train[:n_train], y_train[:n_train]
    if shuffle_labels:  # a data bug: labels no longer belong to their images
        y = y[torch.randperm(len(y))]
    opt = (torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9) if sgd
           else torch.optim.Adam(model.parameters(), lr=lr))
    train, val = [], []
    for _ in range(epochs):
        with torch.no_grad():
            train.append(F.cross_entropy(model(X), y).item())
            val.append(F.cross_entropy(model(X_val), y_val).item())
        for i in range(0, len(X), 128):
            loss = F.cross_entropy(model(X[i:i + 128]), y[i:i + 128])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return train, val


runs = {
    "healthy (Adam, lr 3e-3)": run(),
    "lr far too high (SGD+momentum, lr 8)": run(lr=8.0, sgd=True),
    "lr far too low (SGD+momentum, 1e-4)": run(lr=1e-4, sgd=True),
    "overfitting (60 examples, 256 units)": run(n_train=60, hidden=256, lr=1e-2, epochs=60),
    "data bug (shuffled labels)": run(n_train=300, hidden=256, shuffle_labels=True, epochs=30),
    "dead ReLUs (bias -20)": run(dead=True),
}
fig, axes = plt.subplots(2, 3, figsize=(11, 5.5), sharey=True)
for ax, (title, (train, val)) in zip(axes.flat, runs.items()):
    ax.plot(train, label="train")
    ax.plot(val, label="validation")
    ax.axhline(math.log(10), color="grey", lw=0.8, ls=":")
    ax.set_title(title, fontsize=9)
    ax.set_ylim(0, 5)
axes[0, 0].legend()
fig.supxlabel("epoch")
fig.supylabel("cross-entropy")
fig.tight_layout()
plt.show()
for title, (train, val) in runs.items():
    print(f"{title:38} train {train[0]:.2f} -> {train[-1]:.2f}   val {val[0]:.2f} -> min {min(val):.2f} -> {val[-1]:.2f}")

# %% [markdown]
# What each shape says (the dotted line is `ln(10)`, chance for 10 classes):
#
# - **Healthy**: both fall and level off together; a validation loss a bit above the training
#   loss (a *gap*) is normal.
# - **Learning rate too high**: the loss jumps *above* where it started (or to `nan`) and stays
#   there. Lower the learning rate by 10x.
# - **Not learning**: flat from the start. A learning rate far too low, dead ReLUs (every unit
#   of a layer negative, so no gradient flows: section 3's norms would show zeros), a detached
#   graph, or an optimizer given the wrong parameters. The flat line at `ln(10)` is the model
#   predicting chance.
# - **Overfitting**: the training loss keeps falling, the validation loss falls, reaches a
#   minimum, then *rises*: stop early there (lesson 05), add data or regularisation.
# - **A data bug**: the training loss falls but the validation loss never improves on where it
#   started: what the model learns from the training set does not carry over. Shuffled labels,
#   a validation set preprocessed differently, or inputs and labels out of step.
#
# Lesson 05's clipping and early stopping treat some of these; the point here is to recognise
# them before reaching for a fix.

# %% [markdown]
# **Predict the output** (value): What is `round(F.cross_entropy(torch.zeros(4, 10), torch.tensor([0, 3, 7, 9])).item(), 2)`: the loss of a 10-class model whose logits are all equal?

# %% tags=["predict:chance_loss"]
quiz.chance_loss(
    ### BEGIN PREDICTION
    2.3
    ### END PREDICTION
)

# %%
print(round(F.cross_entropy(torch.zeros(4, 10), torch.tensor([0, 3, 7, 9])).item(), 4), round(math.log(10), 4))

# %% [markdown]
# ### Exercise 5: diagnose from the curves
#
# Write `diagnose(train_losses, val_losses)`: two lists of per-epoch losses of the same length
# (at least 8) in, one of five strings out:
#
# - `"diverging"`: the training loss ends higher than it started, or becomes `nan` or `inf`;
# - `"not_learning"`: the training loss hardly moves (it ends within a few percent of where it
#   started);
# - `"overfitting"`: the training loss falls; the validation loss falls well below its start,
#   then rises well above its minimum by the end;
# - `"data_bug"`: the training loss falls, but the validation loss never gets well below its
#   first value;
# - `"healthy"`: both fall, and the validation loss ends at (or very near) its minimum.
#
# The checked curves are clear-cut (no borderline cases): decide which features tell the
# five apart, and in which order to test them.

# %% tags=["answer:diagnose"]
def diagnose(train_losses, val_losses):
    ### BEGIN SOLUTION
    train = torch.tensor(train_losses, dtype=torch.float64)
    val = torch.tensor(val_losses, dtype=torch.float64)
    if not bool(torch.isfinite(train).all()) or train[-1] > train[0]:
        return "diverging"  # first: every comparison with nan is False
    if train[-1] > 0.9 * train[0]:
        return "not_learning"
    if val.min() > 0.9 * val[0]:
        return "data_bug"  # the model learns, but nothing it learns helps on new data
    if val[-1] > 1.2 * val.min():
        return "overfitting"  # it did generalise for a while: val went down, then up
    return "healthy"  # a gap between train and val alone is not overfitting
    ### END SOLUTION


# %% tags=["check:diagnose"]
ex.diagnose.check(diagnose)

# %% [markdown]
# The order matters: test for `nan` before any comparison (every comparison with `nan` is
# false, so a NaN curve would slip through to "healthy"), and "overfitting" is a validation
# curve that turns up, not one that merely sits above the training curve.

# %%
for title, (train, val) in runs.items():
    print(f"{title:38} -> {reference('07_debugging.diagnose')(train, val)}")

# %% [markdown]
# ## Recap
#
# - `torch.isfinite` (not `isnan`, not `== nan`) guards a loss or a tensor against `nan`,
#   `inf` and `-inf`; check before `optimizer.step()`.
# - Forward hooks on every module find the first layer whose output is not finite; remove the
#   handles (`try`/`finally`) so they do not run forever.
# - `torch.autograd.detect_anomaly()` names the backward function that produced NaN and the
#   forward line that created it; it makes training several times slower: debug with it only.
# - Overfit one batch first: a loss that will not reach about 0 on a few examples is a bug.
# - Per-layer gradient norms (after `backward()`, or with `register_post_accumulate_grad_hook`)
#   show vanishing, exploding and missing gradients; frozen and unused parameters have
#   `grad is None`.
# - `torch.profiler.profile` and `key_averages().table()` show where the time goes.
# - `SummaryWriter` logs scalars and histograms; `EventAccumulator` reads them back offline
#   (`size_guidance={"scalars": 0}` to keep more than 10 000 points).
# - Curves: up or `nan` (lr too high), flat (lr too low, dead units), val U-shape
#   (overfitting), val never improving (a data bug), a gap alone (normal).
#
# Next: **08_convolutions**, how convolutional networks see images.

# %% [markdown]
# ## Further reading
#
# PyTorch documentation:
# [autograd anomaly detection](https://docs.pytorch.org/docs/stable/autograd.html#anomaly-detection)
# (`detect_anomaly`, `set_detect_anomaly`, `check_nan`),
# [module hooks](https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_forward_hook)
# and [`Tensor.register_post_accumulate_grad_hook`](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.register_post_accumulate_grad_hook.html),
# the [profiler recipe](https://docs.pytorch.org/tutorials/recipes/recipes/profiler_recipe.html)
# (`record_shapes`, memory profiling, traces) and
# [`torch.profiler`](https://docs.pytorch.org/docs/stable/profiler.html), and
# [Visualizing models, data and training with TensorBoard](https://docs.pytorch.org/tutorials/intermediate/tensorboard_tutorial.html)
# with the [`SummaryWriter` reference](https://docs.pytorch.org/docs/stable/tensorboard.html).
#
# The best external material:
#
# - A. Karpathy, [*A Recipe for Training Neural Networks*](https://karpathy.github.io/2019/04/25/recipe/):
#   the debugging habits of this lesson (overfit one batch, visualise everything, fix a
#   baseline first), in the order to use them.
# - Stanford CS231n, [Neural Networks Part 3: babysitting the learning
#   process](https://cs231n.github.io/neural-networks-3/): loss curves for good and bad
#   learning rates, the train/val gap, ratios of update to weight size.
# - Google, [Deep Learning Tuning Playbook](https://developers.google.com/machine-learning/guides/deep-learning-tuning-playbook):
#   how to read training curves and what to change, from people who tune models for a living.
