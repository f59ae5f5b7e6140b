# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 05 · The training loop
#
# Everything so far comes together here: data from a `DataLoader`, a model, a loss, and an
# optimizer that updates the parameters, batch after batch. The loop is short, and most bugs
# in it train *something*, just worse, without an error. So this lesson is also about the
# symptoms.
#
# You will learn to
#
# 1. write the five steps of a training iteration and say why each is there;
# 2. evaluate correctly (`model.eval()`, `torch.inference_mode()`, per-sample averages);
# 3. train a digit classifier to ≥ 97 % test accuracy in about a second, watching live curves;
# 4. recognise under- and overfitting, and stop early while keeping the best weights;
# 5. use learning-rate schedules, gradient clipping and gradient accumulation;
# 6. diagnose the classic bugs from their symptoms, and make runs reproducible.
#
# **Time: about 100 minutes** on your own, the six checked exercises included (about 54 of those minutes). *Run All* alone takes about 14 s on a 2-core CPU.

# %%
import copy

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from tqdm.auto import tqdm

from course_utils.lesson_props import l05_training_lab as lab
from course_utils.datasets import digits_split
from course_utils.grading import exercises_for, predictions_for, reference
from course_utils.plotting import LiveCurves, plot_curves

ex = exercises_for("05_training_loop")
quiz = predictions_for("05_training_loop")  # predict-the-output questions

# %% [markdown]
# The data: 8×8 images of handwritten digits, flattened to 64 features in [0, 1], split into
# 1437 training and 360 test images. The training loader shuffles with its own seeded
# generator; the test loader needs no order.

# %% [markdown]
# **Predict the output** (value): 1437 training images, `batch_size=64`, `shuffle=True`: how many batches per epoch (`len(train_loader)`)?

# %% tags=["predict:train_batches"]
quiz.train_batches(
    ### BEGIN PREDICTION
    23
    ### END PREDICTION
)

# %%
split = digits_split()
train_loader = DataLoader(TensorDataset(split.X_train, split.y_train), batch_size=64, shuffle=True,
                          generator=torch.Generator().manual_seed(0))
test_loader = DataLoader(TensorDataset(split.X_test, split.y_test), batch_size=512)
print(len(train_loader), "training batches;", len(test_loader), "test batch")


def make_model():
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))


loss_fn = nn.CrossEntropyLoss()

# %% [markdown]
# ## 1. The five steps
#
# One training iteration on one batch `(X, y)`:
#
# 1. **`optimizer.zero_grad()`**: `backward()` *adds* to `.grad` (lesson 02), so clear the
#    gradients of the previous batch first.
# 2. **forward**: `logits = model(X)`, recording the graph.
# 3. **loss**: one number saying how wrong the predictions are, `loss_fn(logits, y)`.
# 4. **`loss.backward()`**: the gradient of the loss with respect to every parameter.
# 5. **`optimizer.step()`**: move each parameter a little against its gradient.
#
# Watch one iteration lower the loss on its batch:

# %%
torch.manual_seed(0)
model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
X, y = next(iter(train_loader))

optimizer.zero_grad()      # 1
logits = model(X)          # 2
loss = loss_fn(logits, y)  # 3
loss.backward()            # 4
optimizer.step()           # 5

with torch.no_grad():
    print(f"loss on this batch: {loss.item():.3f} before the step, {loss_fn(model(X), y).item():.3f} after")

# %% [markdown]
# An **epoch** is one pass over the training loader: these five steps for every batch.

# %% [markdown]
# ### Exercise 1: `train_one_epoch`
#
# A colleague wrote this epoch function for the digits project. It raises nothing, the loss
# goes down, and the model it trains scores well on the test images:

# %% tags=["nbval-ignore-output"]
def buggy_train_one_epoch(model, loader, loss_fn, optimizer):
    total, n = 0.0, 0
    for X, y in loader:
        logits = model(X)
        loss = loss_fn(logits, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()  # clean up for the next batch
        total += loss * len(y)
        n += len(y)
    return total.item() / n


torch.manual_seed(0)
model = make_model()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(4):
    train_loss = buggy_train_one_epoch(model, train_loader, loss_fn, optimizer)
    test_loss, test_acc = lab.evaluate(model, test_loader, loss_fn)
    print(f"epoch {epoch + 1}: train loss {train_loss:.3f}, test accuracy {test_acc:.1%}")

# %% [markdown]
# Yet it has **three bugs**. None of them shows in this run; each one shows in a real project.
# Find them and write `train_one_epoch(model, loader, loss_fn, optimizer)` without them: one
# epoch over `loader` that returns the **mean loss per sample** as a Python float.
#
# The check calls your function the way a real run calls it: right after an evaluation of the
# model, with gradients in `.grad` left by an earlier `backward()`, and it watches what stays in
# memory from one batch to the next (a real epoch has thousands of batches). It names each bug
# it still finds.

# %% tags=["answer:train_one_epoch"]
def train_one_epoch(model, loader, loss_fn, optimizer):
    ### BEGIN SOLUTION
    model.train()
    total_loss, n = 0.0, 0
    for X, y in loader:
        optimizer.zero_grad()      # 1. forget the previous batch's gradients
        logits = model(X)          # 2. forward
        loss = loss_fn(logits, y)  # 3. loss
        loss.backward()            # 4. gradients of the loss
        optimizer.step()           # 5. update the parameters
        total_loss += loss.item() * len(y)
        n += len(y)
    return total_loss / n
    ### END SOLUTION


# %% tags=["check:train_one_epoch"]
ex.train_one_epoch.check(train_one_epoch)

# %% [markdown]
# ## 2. The evaluation loop
#
# An epoch starts with `model.train()`: whatever ran before (an evaluation, usually) may have
# left the model in eval mode, and Dropout and BatchNorm behave differently in each (lesson 03).
#
# Scoring a model is an epoch without `backward()` and `step()`: the mean loss, and the
# accuracy, the share of images whose highest logit is the right class
# (`logits.argmax(dim=1) == y`). Here is the obvious version, scoring a model with Dropout fresh
# from training, on test batches of 100 images (the last one has 60):

# %% tags=["nbval-ignore-output"]
def naive_evaluate(model, loader, loss_fn):
    losses, accuracies = [], []
    for X, y in loader:
        logits = model(X)
        losses.append(loss_fn(logits, y).item())
        accuracies.append((logits.argmax(dim=1) == y).float().mean().item())
    return sum(losses) / len(losses), sum(accuracies) / len(accuracies)


torch.manual_seed(0)
dropout_model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.5), nn.Linear(128, 10))
optimizer = torch.optim.Adam(dropout_model.parameters(), lr=3e-3)
for _ in range(3):
    lab.train_one_epoch(dropout_model, train_loader, loss_fn, optimizer)
test_in_100s = DataLoader(TensorDataset(split.X_test, split.y_test), batch_size=100)
test_in_one = DataLoader(TensorDataset(split.X_test, split.y_test), batch_size=360)
for name, loader in (("batches of 100, first time ", test_in_100s), ("batches of 100, second time", test_in_100s),
                     ("one batch of 360           ", test_in_one)):
    loss, acc = naive_evaluate(dropout_model, loader, loss_fn)
    print(f"{name}: loss {loss:.4f}, accuracy {acc:.2%}")

# %% [markdown]
# ### Exercise 2: `evaluate`
#
# The same model on the same 360 images should get one score. Here it got three, and every
# forward pass also recorded an autograd graph that scoring never uses (memory and time
# wasted). Work out where each difference comes from, then write `evaluate(model, loader,
# loss_fn)` returning `(mean_loss, accuracy)`, two Python floats: the same numbers every time,
# whatever the batch size, and no graph recorded. The check hands you a model with Dropout,
# fresh from training, and batches of unequal size.

# %% tags=["answer:evaluate"]
def evaluate(model, loader, loss_fn):
    ### BEGIN SOLUTION
    model.eval()
    total_loss, correct, n = 0.0, 0, 0
    with torch.inference_mode():
        for X, y in loader:
            logits = model(X)
            total_loss += loss_fn(logits, y).item() * len(y)
            correct += (logits.argmax(dim=1) == y).sum().item()
            n += len(y)
    return total_loss / n, correct / n
    ### END SOLUTION


# %% tags=["check:evaluate"]
ex.evaluate.check(evaluate)

# %% [markdown]
# The three differences, and their fixes:
#
# - **`model.eval()`**: Dropout stops dropping, BatchNorm uses its running statistics.
#   Forgetting it makes metrics noisy and too low.
# - **`torch.inference_mode()`** (or `torch.no_grad()`): no graph is recorded, which saves
#   memory and time. It does *not* switch Dropout off; only `eval()` does.
# - **averages per sample**: the last batch is usually smaller, so add up `loss * batch size`
#   and the number of correct predictions, and divide by the number of samples at the end.

# %% [markdown]
# ## 3. Train to ≥ 97 % in about a second
#
# From here on the lesson uses the course's versions, `lab.train_one_epoch` and
# `lab.evaluate` (the same code as the reference answers), so it runs even before you solve
# the exercises.
#
# The optimizer is Adam, and a **one-cycle schedule** warms the learning rate up over the first
# 30 % of the steps (`pct_start=0.3` by default) and then anneals it towards zero. It also
# cycles the momentum the other way (Adam's `beta1`: low while the learning rate is high), which
# `cycle_momentum=False` turns off (section 6 explains schedules). It is
# stepped after every batch, so this loop is written out. A progress bar (`tqdm.auto`) and a
# live plot show what happens:

# %% tags=["nbval-ignore-output"]
torch.manual_seed(0)
model = make_model()
num_epochs = 12
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, total_steps=num_epochs * len(train_loader))

with LiveCurves(title="MLP on the digits") as live:
    for epoch in tqdm(range(num_epochs), desc="epochs"):
        model.train()
        total, n = 0.0, 0
        for X, y in train_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(X), y)
            loss.backward()
            optimizer.step()
            scheduler.step()
            total += loss.item() * len(y)
            n += len(y)
        test_loss, test_acc = lab.evaluate(model, test_loader, loss_fn)
        live.update(train_loss=total / n, test_loss=test_loss, test_acc=test_acc)
plt.close("all")
print(f"test accuracy after {num_epochs} epochs: {test_acc:.1%}")

# %% [markdown]
# Around 98 % of the 360 test images are right (one image is 0.28 %), in well under a
# second of training. The exact number depends on your CPU: different processors add floating
# point numbers in a different order, and training amplifies such tiny differences.

# %% [markdown]
# ## 4. Underfitting and overfitting
#
# The curves tell you what to change:
#
# - **underfitting**: training loss stays high. The model is too small, the learning rate
#   too low, or training too short. Here: a model that squeezes every image through 2 numbers.
# - **a good fit**: both losses fall and level off together.
# - **overfitting**: training loss keeps falling while test loss turns up. The model
#   memorises its training data. Here: a large model trained on only 100 images for a long time.
#
# `lab.fit` runs `train_one_epoch` and `evaluate` for a number of epochs and returns the
# history. The three runs take about two seconds:

# %%
def run(model, optimizer, num_epochs, train_subset=None):
    loader, _ = lab.digits_loaders(batch_size=64, train_subset=train_subset)
    return lab.fit(model, loader, test_loader, loss_fn, optimizer, num_epochs, progress=False)


torch.manual_seed(0)
tiny = nn.Sequential(nn.Linear(64, 2), nn.Linear(2, 10))
under = run(tiny, torch.optim.Adam(tiny.parameters(), lr=1e-2), num_epochs=15)
torch.manual_seed(0)
good_model = make_model()
good = run(good_model, torch.optim.Adam(good_model.parameters(), lr=3e-3), num_epochs=15)
torch.manual_seed(0)
big = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
over = run(big, torch.optim.Adam(big.parameters(), lr=3e-3), num_epochs=60, train_subset=100)

fig, axes = plt.subplots(1, 3, figsize=(13, 3.2))
for ax, history, title in zip(axes, (under, good, over),
                              ("underfitting: a 2-number bottleneck", "a good fit", "overfitting: 100 training images")):
    plot_curves({k: v for k, v in history.items() if "loss" in k}, title=title, ax=ax)
    ax.set_ylim(0, 2.5)
fig.tight_layout()

# %% tags=["nbval-ignore-output"]
for name, history in (("underfitting", under), ("good fit", good), ("overfitting", over)):
    best = min(range(len(history["test loss"])), key=history["test loss"].__getitem__)
    print(f"{name:12s}: final train loss {history['train loss'][-1]:.3f}, test loss {history['test loss'][-1]:.3f} "
          f"(lowest at epoch {best + 1})")

# %% [markdown]
# ### Early stopping
#
# When test (really: *validation*) loss stops improving, further training only memorises.
# **Early stopping** watches the validation loss after every epoch, remembers the weights of
# the best epoch, and stops after `patience` epochs without improvement; at the end you load
# the best weights back.
#
# (Choosing the epoch by the *test* loss, as this demo does for brevity, leaks test
# information into training. In a real project, hold out a validation split for this, and
# keep the test set for the final number.)
#
# ### Exercise 3: `EarlyStopping`
#
# "Without improvement" and "after `patience` epochs" leave decisions open: is an equal loss an
# improvement? Better than the epoch before, or better than the best so far? What happens to the
# count when the loss improves again? Does training stop when the count reaches `patience`, or
# when it exceeds it? The course's `EarlyStopping` made these decisions on four runs, one
# `step(val_loss, model)` call per epoch (epochs count from 1; "keeps the weights of epoch 2"
# means `best_state` holds the model as it was after epoch 2, whatever came later):

# %%
for patience, losses, stopped, best_loss, kept in lab.EARLY_STOPPING_RUNS:
    print(f"patience {patience}, losses {list(losses)}: "
          f"{'never stops' if stopped is None else f'stops after epoch {stopped}'}, "
          f"best_loss {best_loss}, keeps the weights of epoch {kept}")

# %% [markdown]
# Work out its rules from these runs, then complete `step(val_loss, model)` so that your class
# makes the same decisions: it returns `True` when training should stop, keeps the best loss in
# `best_loss`, and keeps the best epoch's weights in `best_state`, still those weights when
# training ends, however many epochs changed the model after them.

# %% tags=["answer:EarlyStopping"]
class EarlyStopping:
    def __init__(self, patience=3):
        self.patience = patience
        self.best_loss = float("inf")
        self.best_state = None
        self.bad_epochs = 0

    def step(self, val_loss, model):
        ### BEGIN SOLUTION
        if val_loss < self.best_loss:
            self.best_loss = val_loss
            self.best_state = copy.deepcopy(model.state_dict())
            self.bad_epochs = 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience
        ### END SOLUTION


# %% tags=["check:EarlyStopping"]
ex.EarlyStopping.check(EarlyStopping)

# %% [markdown]
# The overfitting run again, with the course's `EarlyStopping` (patience 5):

# %% tags=["nbval-ignore-output"]
torch.manual_seed(0)
big = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
optimizer = torch.optim.Adam(big.parameters(), lr=3e-3)
small_loader, _ = lab.digits_loaders(batch_size=64, train_subset=100)
stopper = reference("05_training_loop.EarlyStopping")(patience=5)
for epoch in range(60):
    lab.train_one_epoch(big, small_loader, loss_fn, optimizer)
    val_loss, val_acc = lab.evaluate(big, test_loader, loss_fn)
    if stopper.step(val_loss, big):
        break
print(f"stopped after epoch {epoch + 1}: last loss {val_loss:.3f}, accuracy {val_acc:.1%}")
big.load_state_dict(stopper.best_state)
val_loss, val_acc = lab.evaluate(big, test_loader, loss_fn)
print(f"best weights restored:     loss {val_loss:.3f}, accuracy {val_acc:.1%}")

# %% [markdown]
# ## 5. How large a step? The learning rate
#
# The learning rate matters more than any other setting. Too small and training crawls (the
# underfitting run above); too large and the loss jumps around or diverges. Try it: plain SGD
# on the digits for six epochs (each setting takes a fraction of a second):

# %% tags=["nbval-ignore-output"]
from ipywidgets import FloatLogSlider, interact  # noqa: E402


def show_lr(lr):
    lab.plot_lr_trial(lr)
    plt.show()


_ = interact(show_lr, lr=FloatLogSlider(value=0.1, base=10, min=-3, max=1.5, step=0.25, continuous_update=False))

# %% [markdown]
# With SGD, values around 0.1 to 1 train fastest here; by 10 the loss diverges. Adam rescales
# steps per parameter, so its good learning rates are smaller (1e-3 to 1e-2).

# %% [markdown]
# ## 6. Learning-rate schedules
#
# A **scheduler** changes the optimizer's learning rate as training goes on: large steps early
# to make progress, small steps late to settle. Create it on the optimizer and call
# `scheduler.step()` after `optimizer.step()`, once per epoch or once per batch depending on
# how it counts. Three common shapes over 100 steps:

# %%
from torch.optim import lr_scheduler  # noqa: E402

schedules = {
    "StepLR(step_size=30, gamma=0.3)": lambda opt: lr_scheduler.StepLR(opt, step_size=30, gamma=0.3),
    "CosineAnnealingLR(T_max=100)": lambda opt: lr_scheduler.CosineAnnealingLR(opt, T_max=100),
    "OneCycleLR(max_lr=0.1, total_steps=100)": lambda opt: lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=100),
}
fig, ax = plt.subplots(figsize=(6, 3))
for name, make in schedules.items():
    ax.plot(lab.scheduler_lrs(make, 100), label=name)
ax.set_xlabel("step")
ax.set_ylabel("learning rate")
ax.legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# ### Exercise 4: `warmup_cosine`
#
# Large models often start with a short **warm-up**, the learning rate growing linearly from
# small to full, then decay along a cosine to 0. A training recipe asks for exactly this
# schedule, and the reference run it comes with logged these learning rates (base `lr=0.1`):

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3))
for ax, ((warmup_steps, total_steps), lrs) in zip(axes, lab.WARMUP_COSINE_LRS.items()):
    ax.plot(lrs, "o-")
    ax.set_title(f"warmup_steps={warmup_steps}, total_steps={total_steps}", fontsize=9)
    ax.set_xlabel("step (scheduler.step() calls so far)")
    ax.set_ylabel("learning rate")
    print(f"warmup_steps={warmup_steps}, total_steps={total_steps}:", " ".join(f"{lr:.4f}" for lr in lrs))
fig.tight_layout()
plt.show()

# %% [markdown]
# Read the schedule off these numbers, then write `warmup_cosine(optimizer, warmup_steps,
# total_steps)` returning a `torch.optim.lr_scheduler.LambdaLR` that reproduces them, for any
# `warmup_steps` and `total_steps`: no warm-up at all, and a warm-up as long as the run, too.
# `LambdaLR(optimizer, factor)` sets the learning rate to the optimizer's initial one times
# `factor(step)`, where `step` counts the `scheduler.step()` calls so far (0 at the start).

# %% tags=["answer:warmup_cosine"]
import math  # noqa: E402


def warmup_cosine(optimizer, warmup_steps, total_steps):
    ### BEGIN SOLUTION
    def factor(step):
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return 0.5 * (1 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    ### END SOLUTION


# %% tags=["check:warmup_cosine"]
ex.warmup_cosine.check(warmup_cosine)

# %% [markdown]
# ## 7. Gradient clipping
#
# One bad batch can produce a huge gradient and throw the parameters far away; recurrent
# networks and large learning rates are prone to it. **Clipping** limits the gradients before
# the step: `nn.utils.clip_grad_norm_(model.parameters(), max_norm)`, called between
# `backward()` and `step()`.
#
# ### Exercise 5: `clip_grad_norm`
#
# What exactly does it compute? Here it is on gradients small enough to follow by hand: two
# parameters whose gradients are `[3, 4]` and `[12]`, then a parameter alone:

# %%
def clip_experiment(grads, max_norm):
    params = [torch.zeros(len(g), requires_grad=True) for g in grads]
    for p, g in zip(params, grads):
        p.grad = torch.tensor(g)
    returned = nn.utils.clip_grad_norm_(params, max_norm)
    after = [[round(v, 4) for v in p.grad.tolist()] for p in params]
    print(f"gradients {grads}, max_norm={max_norm}: returns {returned.item():.4f}, gradients become {after}")


clip_experiment([[3.0, 4.0], [12.0]], max_norm=1.0)
clip_experiment([[3.0, 4.0], [12.0]], max_norm=6.5)
clip_experiment([[3.0, 4.0], [12.0]], max_norm=20.0)
clip_experiment([[0.3, 0.4]], max_norm=1.0)

# %% [markdown]
# Work out from these four experiments what `clip_grad_norm_` computes, when it changes the
# gradients and what it returns. Write it yourself, then, without PyTorch's clipping functions:
# `clip_grad_norm(parameters, max_norm)` doing the same, and returning the same number as a Python
# float. Like the built-in, it takes any iterable of parameters (often the generator
# `model.parameters()`), skips parameters whose `.grad` is None (returning 0.0 when none has
# one), and changes the gradients that the optimizer will read.

# %% tags=["answer:clip_grad_norm"]
def clip_grad_norm(parameters, max_norm):
    ### BEGIN SOLUTION
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    total_norm = torch.sqrt(sum((g**2).sum() for g in grads))
    if total_norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (total_norm + 1e-6))
    return total_norm.item()
    ### END SOLUTION


# %% tags=["check:clip_grad_norm"]
ex.clip_grad_norm.check(clip_grad_norm)

# %% [markdown]
# Clipping rescales *all* gradients together, by one factor, when their total norm (the norm of
# all entries as one long vector) exceeds the limit: the step keeps its direction and only gets
# shorter. `clip_grad_norm_` returns the norm measured *before* clipping: log it to see how often
# clipping kicks in. On the digits model with inputs far too large:

# %%
torch.manual_seed(0)
model = make_model()
X, y = next(iter(train_loader))
loss_fn(model(X * 50), y).backward()  # inputs far too large: a large gradient
before = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
after = torch.sqrt(sum((p.grad**2).sum() for p in model.parameters()))
print(f"total gradient norm {before.item():.1f} before clipping, {after.item():.3f} after")

# %% [markdown]
# ## 8. Gradient accumulation
#
# When a batch does not fit in memory, split it into **micro-batches** and let the gradients
# add up before a single `step()`: `backward()` adds to `.grad`. Is the sum the big batch's
# gradient? Here is one batch of 64 images, its gradient computed at once and accumulated over
# two micro-batches, each loss left as `loss_fn` returns it. If the accumulated gradient were a
# multiple `c` of the big batch's, nothing would remain once `c` times the big batch's gradient
# is taken away:

# %% tags=["nbval-ignore-output"]
def flat_grad(model):
    return torch.cat([p.grad.flatten() for p in model.parameters()])


X, y = next(iter(train_loader))
torch.manual_seed(0)
model = make_model()
model.zero_grad()
loss_fn(model(X), y).backward()
big_batch_grad = flat_grad(model)
for sizes in ([32, 32], [40, 24]):
    model.zero_grad()
    for X_micro, y_micro in zip(X.split(sizes), y.split(sizes)):
        loss_fn(model(X_micro), y_micro).backward()
    accumulated = flat_grad(model)
    c = (accumulated @ big_batch_grad / (big_batch_grad @ big_batch_grad)).item()
    off = ((accumulated - c * big_batch_grad).norm() / accumulated.norm()).item()
    print(f"micro-batches of {sizes}: accumulated = {c:.3f} x big-batch gradient + a remainder of {off:.1%}")

# %% [markdown]
# ### Exercise 6: `accumulated_step`
#
# Why exactly 2 for two halves, and why does no single factor fix the uneven split? Work it out, then
# write `accumulated_step(model, loss_fn, optimizer, micro_batches)`: `micro_batches` is a list
# of `(X, y)` pairs, possibly of different sizes. Make exactly one optimizer step whose
# gradient equals that of `loss_fn` on all samples at once. Call `backward()` once per
# micro-batch: that frees each micro-batch's graph before the next one is built, which is the
# point (summing the losses first and calling `backward()` once would keep every micro-batch's
# graph in memory at the same time). The check leaves gradients of an earlier `backward()` in
# `.grad`, as a real training loop would.

# %% tags=["answer:accumulated_step"]
def accumulated_step(model, loss_fn, optimizer, micro_batches):
    ### BEGIN SOLUTION
    n_total = sum(len(y) for _, y in micro_batches)
    optimizer.zero_grad()
    for X, y in micro_batches:
        loss = loss_fn(model(X), y) * len(y) / n_total
        loss.backward()
    optimizer.step()
    ### END SOLUTION


# %% tags=["check:accumulated_step"]
ex.accumulated_step.check(accumulated_step)

# %% [markdown]
# The course's answer against one step on the concatenated batch:

# %%
X, y = next(iter(train_loader))
torch.manual_seed(0)
big_batch, accumulated = make_model(), make_model()
accumulated.load_state_dict(big_batch.state_dict())
opt_a = torch.optim.SGD(big_batch.parameters(), lr=0.5)
opt_b = torch.optim.SGD(accumulated.parameters(), lr=0.5)
opt_a.zero_grad()
loss_fn(big_batch(X), y).backward()
opt_a.step()
reference("05_training_loop.accumulated_step")(accumulated, loss_fn, opt_b, [(X[:40], y[:40]), (X[40:], y[40:])])
diff = max((a - b).abs().max().item() for a, b in zip(big_batch.parameters(), accumulated.parameters()))
print("largest parameter difference below 1e-6:", diff < 1e-6)

# %% [markdown]
# ## 9. Debugging clinic
#
# Each of these bugs still trains, or fails with a message that does not name the cause.
# Learn the symptom.
#
# ### Forgot `optimizer.zero_grad()`
#
# The gradients of all earlier batches keep adding up, so every step uses a growing sum of
# stale gradients. With momentum-free SGD at a learning rate that works well otherwise:

# %%
def train_without_zero_grad(model, loader, optimizer, num_epochs):
    losses = []
    for _ in range(num_epochs):
        total, n = 0.0, 0
        for X, y in loader:
            loss = loss_fn(model(X), y)  # no zero_grad: .grad accumulates
            loss.backward()
            optimizer.step()
            total += loss.item() * len(y)
            n += len(y)
        losses.append(total / n)
    return losses


torch.manual_seed(0)
m1 = make_model()
with_zero = [lab.train_one_epoch(m1, train_loader, loss_fn, torch.optim.SGD(m1.parameters(), lr=0.1)) for _ in range(8)]
torch.manual_seed(0)
m2 = make_model()
without_zero = train_without_zero_grad(m2, train_loader, torch.optim.SGD(m2.parameters(), lr=0.1), 8)
plot_curves({"with zero_grad": with_zero, "without zero_grad": without_zero}, title="training loss")
plt.show()

# %% [markdown]
# No error. The stale gradients act like an enormous momentum: the loss may even fall faster
# at first, then the steps grow until training blows up.
#
# ### Forgot `model.eval()`
#
# With Dropout in the model, predictions in training mode are random: the same images,
# scored twice, give different results, and the accuracy is too low.

# %% tags=["nbval-ignore-output"]
torch.manual_seed(0)
dropout_model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.5), nn.Linear(128, 10))
opt = torch.optim.Adam(dropout_model.parameters(), lr=3e-3)
for _ in range(10):
    lab.train_one_epoch(dropout_model, train_loader, loss_fn, opt)
X_test, y_test = split.X_test, split.y_test
with torch.inference_mode():
    dropout_model.train()  # the bug: still in training mode
    acc_a = (dropout_model(X_test).argmax(1) == y_test).float().mean().item()
    acc_b = (dropout_model(X_test).argmax(1) == y_test).float().mean().item()
    dropout_model.eval()
    acc_c = (dropout_model(X_test).argmax(1) == y_test).float().mean().item()
print(f"train mode, twice: {acc_a:.1%} and {acc_b:.1%}; eval mode: {acc_c:.1%}")

# %% [markdown]
# ### Softmax before `CrossEntropyLoss`
#
# `CrossEntropyLoss` expects **logits** and applies log-softmax itself. A model that ends in
# `nn.Softmax` feeds it probabilities, which squashes the gradients: training crawls, and the
# loss can never go below about 1.46 even for perfect predictions.

# %% tags=["nbval-ignore-output"]
torch.manual_seed(0)
logits_model = make_model()
torch.manual_seed(0)
softmax_model = nn.Sequential(make_model(), nn.Softmax(dim=1))
histories = {}
for name, m in (("logits (right)", logits_model), ("softmax + CrossEntropyLoss", softmax_model)):
    histories[name] = lab.fit(m, train_loader, test_loader, loss_fn, torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9),
                              num_epochs=8, progress=False)
    print(f"{name:28s} final test accuracy {histories[name]['test acc'][-1]:.1%}")
plot_curves({name: h["train loss"] for name, h in histories.items()}, title="training loss")
plt.show()

# %% [markdown]
# ### Targets of the wrong dtype or shape
#
# Class targets must be int64 (`long`) with shape `(N,)`. Labels that arrive as int32 (from
# NumPy on some platforms, or a `.int()`) fail with:

# %% [markdown]
# **Predict the output** (value): `CrossEntropyLoss()(logits, y)` raises for int32 class targets `y = torch.tensor([1, 0, 3, 9], dtype=torch.int32)`. Which targets work instead: a `y.long()`, b `y.float()`, c `y.to(torch.int16)`, d `torch.tensor(y.tolist())`? Answer with the list of letters in order, such as `['c']`.

# %% tags=["predict:int32_targets"]
quiz.int32_targets(
    ### BEGIN PREDICTION
    ['a', 'd']
    ### END PREDICTION
)

# %% tags=["raises-exception"]
logits = torch.randn(4, 10)
loss_fn(logits, torch.tensor([1, 0, 3, 9], dtype=torch.int32))

# %% [markdown]
# and targets with an extra dimension, `(N, 1)`, as produced by `y.unsqueeze(1)` or a
# reshape, with:

# %% [markdown]
# **Predict the output** (value): `CrossEntropyLoss()(logits, y)` with `logits` (4, 10) raises for targets `y` of shape (4, 1). Which targets work instead: a `y.squeeze(1)`, b `y.view(-1)`, c `y.T`, d `y.squeeze(0)`? Answer with the list of letters in order, such as `['c']`.

# %% tags=["predict:column_targets"]
quiz.column_targets(
    ### BEGIN PREDICTION
    ['a', 'b']
    ### END PREDICTION
)

# %% tags=["raises-exception"]
loss_fn(logits, torch.tensor([[1], [0], [3], [9]]))

# %% [markdown]
# The fixes: `y.long()` (a tensor made from Python ints is int64 already; int16 or 1-D float
# targets fail like int32) and `y.squeeze(1)` or `y.view(-1)` (`y.T` is a batch of one target
# against four rows of logits).
#
# ### `(N, 1)` against `(N,)` in a regression loss
#
# Regression models usually output `(N, 1)`. Compared with targets of shape `(N,)`,
# broadcasting makes an `(N, N)` matrix of every prediction against every target: the loss
# is wrong and training goes nowhere. PyTorch warns, once, and the warning is easy to miss:

# %% [markdown]
# **Predict the output** (shape): What is the shape of `pred - target` for `pred` (5, 1) and `target` (5,)?

# %% tags=["predict:regression_broadcast"]
quiz.regression_broadcast(
    ### BEGIN PREDICTION
    (5, 5)
    ### END PREDICTION
)

# %%
import warnings  # noqa: E402

torch.manual_seed(0)
pred = torch.randn(5, 1)
target = torch.randn(5)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    wrong = nn.functional.mse_loss(pred, target)
print("warning:", caught[0].message)
print(f"loss with (N,1) vs (N,): {wrong.item():.4f}")
print(f"loss with (N,) vs (N,):  {nn.functional.mse_loss(pred.squeeze(1), target).item():.4f}")

# %% [markdown]
# ### Storing loss tensors instead of numbers
#
# `losses.append(loss)` keeps the tensor, and with it the graph that produced it. During
# evaluation without `inference_mode` (no `backward()` ever frees it), every stored loss keeps
# that batch's activations alive. `lab.graph_bytes` adds up the tensors autograd saved in
# those graphs:

# %%
wide = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
batches = [(split.X_train[i : i + 64], split.y_train[i : i + 64]) for i in range(0, 64 * 20, 64)]
stored_tensors = [loss_fn(wide(X), y) for X, y in batches]        # the bug
stored_numbers = [loss_fn(wide(X), y).item() for X, y in batches]  # the fix
print(f"{len(batches)} stored loss tensors keep {lab.graph_bytes(stored_tensors, exclude=wide.parameters()) / 2**20:.1f} MiB alive")
print(f"{len(batches)} stored floats take {8 * len(stored_numbers)} bytes")
del stored_tensors

# %% [markdown]
# That is about 0.25 MiB per batch here, so tens of thousands of batches exhaust any memory.
# In training, `backward()` frees the saved activations, but `total += loss` still chains
# every loss into one ever-growing graph. Use `.item()` for anything you log, and
# `inference_mode()` for evaluation.

# %% [markdown]
# ## 10. Reproducibility
#
# A run is repeatable when every source of randomness is seeded: `torch.manual_seed` before
# creating the model (initial weights, Dropout), and a seeded `generator` for shuffling
# (lesson 04). Two runs with the same seeds give bit-identical weights:

# %%
def short_run(seed):
    torch.manual_seed(seed)
    model = make_model()
    loader = DataLoader(TensorDataset(split.X_train, split.y_train), batch_size=64, shuffle=True,
                        generator=torch.Generator().manual_seed(seed))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(2):
        lab.train_one_epoch(model, loader, loss_fn, optimizer)
    return torch.cat([p.detach().flatten() for p in model.parameters()])


print("same seed, identical weights:", torch.equal(short_run(0), short_run(0)))
print("other seed, identical weights:", torch.equal(short_run(0), short_run(1)))

# %% [markdown]
# "Identical" holds on the same machine with the same software. The number of CPU threads
# (`torch.set_num_threads`), the processor and library versions change the order of
# floating-point additions, hence the last bits, hence (after many steps) the result. On a
# GPU some operations are nondeterministic unless you call
# `torch.use_deterministic_algorithms(True)`, which makes them deterministic or raises an
# error naming the operation. On CUDA that also needs the environment variable
# `CUBLAS_WORKSPACE_CONFIG=:4096:8` set before the first cuBLAS call (or matrix products raise
# an error saying so) and `torch.backends.cudnn.benchmark = False` (the autotuner may pick a
# different convolution algorithm each run). Try the thread count here:

# %% tags=["nbval-ignore-output"]
threads = torch.get_num_threads()
torch.set_num_threads(1)
one_thread = short_run(0)
torch.set_num_threads(2)
two_threads = short_run(0)
torch.set_num_threads(threads)
print("1 thread vs 2 threads, identical weights:", torch.equal(one_thread, two_threads))

# %% [markdown]
# ## Recap
#
# - Per batch: `zero_grad()` → forward → loss → `backward()` → `step()`; `model.train()` at the
#   start of each epoch.
# - Evaluate with `model.eval()` and `torch.inference_mode()`, averaging per sample.
# - Read the curves: both losses high means underfitting; training loss falling while
#   validation loss rises means overfitting. Early stopping keeps a *copy* of the best
#   `state_dict`.
# - The learning rate matters most; schedulers change it over time (`step()` after the
#   optimizer's). Clip gradients between `backward()` and `step()`. Accumulate gradients over
#   micro-batches with losses weighted by their share of the samples.
# - Symptoms: stalled or jumping loss (no `zero_grad`), noisy low accuracy (no `eval()`),
#   slow training and a loss floor near 1.46 (softmax before `CrossEntropyLoss`), "expected
#   target dtype to be Long", "0D or 1D target tensor expected", a broadcasting warning in
#   MSE, growing memory (stored loss tensors).
# - Seed the model and the loader's generator; expect bit-identical results only on the same
#   machine, software and thread count.
#
# Next: **06_losses_optimizers**, which loss and which optimizer, and why.

# %% [markdown]
# ## Further reading
#
# PyTorch documentation:
#
# - [`torch.optim`](https://docs.pytorch.org/docs/stable/optim.html): optimizers, per-parameter
#   options, and how and when to call a learning-rate scheduler.
# - [`clip_grad_norm_`](https://docs.pytorch.org/docs/stable/generated/torch.nn.utils.clip_grad_norm_.html):
#   the built-in behind section 7.
# - [Reproducibility](https://docs.pytorch.org/docs/stable/notes/randomness.html): what seeds
#   cover and what they do not.
#
# The best external material:
#
# - Andrej Karpathy, [*A Recipe for Training Neural
#   Networks*](https://karpathy.github.io/2019/04/25/recipe/): overfit one batch first, then add
#   complexity step by step; the debugging clinic of section 9 as a method.
# - UvA deep learning tutorials
#   ([uvadlc-notebooks](https://uvadlc-notebooks.readthedocs.io/en/latest/)), *Guide 3: Debugging
#   in PyTorch*: the classic bugs (softmax before the loss, a missing `eval()` or `zero_grad()`)
#   and how to find them.
# - PyTorch tutorials, [Optimizing model
#   parameters](https://docs.pytorch.org/tutorials/beginner/basics/optimization_tutorial.html):
#   the official train and test loops.
# - Zero to Mastery *Learn PyTorch*, [PyTorch workflow
#   fundamentals](https://www.learnpytorch.io/01_pytorch_workflow/): the five steps with numbered
#   comments, and loss curves.
# - *Dive into Deep Learning*, [Learning rate
#   scheduling](https://d2l.ai/chapter_optimization/lr-scheduler.html): warm-up and cosine
#   schedules, with the curves they produce.
