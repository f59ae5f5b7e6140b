# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 12 · Capstone: your own pipeline, end to end
#
# This project assembles **the code you wrote** in lessons 04, 05 and 09 into one pipeline on
# the handwritten digits, then grades what you add on top of it, on data your notebook never
# sees. Seven checked parts:
#
# 1. `split_loaders`: an honest, reproducible validation split and its loaders, with *your*
#    `stratified_split` (lesson 04).
# 2. `fit_with_early_stopping`: *your* `train_one_epoch`, `evaluate`, `EarlyStopping` and
#    `warmup_cosine` (lesson 05) as one training run.
# 3. `confusion_matrix`: evaluation beyond accuracy.
# 4. `resume_training`: a run that survives a power cut and resumes **bit-identically** with
#    *your* `save_checkpoint` / `load_checkpoint` (lesson 09).
# 5. `onnx_parity`: the model exported with *your* `export_with_dynamic_batch` (lesson 09), run
#    in onnxruntime, compared with PyTorch: rounding, or a bug?
# 6. `train_and_score`: find the three bugs in a pipeline.
# 7. `DigitClassifier`: your own classifier, **≥ 97 % on held-out images**.
#
# **Time: about 145 minutes** on your own, the seven checked exercises included (about 107 of those minutes). *Run All* alone takes about 16 s on a 2-core CPU.

# %%
import copy
import os
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from course_utils.datasets import digits_split
from course_utils.exercises.l12_capstone.yours import your_pieces, yours_or_course
from course_utils.grading import exercises_for, predictions_for
from course_utils.plotting import image_grid, plot_curves

ex = exercises_for("12_capstone")
quiz = predictions_for("12_capstone")  # predict-the-output questions

# %% [markdown]
# ## 0. Your pieces
#
# `your_pieces()` opens your notebooks of lessons 04, 05 and 09 (next to this one), runs the
# cells holding your answers, and checks each answer again with its lesson's grader. An answer
# that passes is used below; one that is missing, unfinished or failing is replaced by the
# course's version, and the table says which and why. Solve an earlier exercise, save that
# notebook, and run this cell again to bring it in.
#
# Your pieces run the pipeline of this notebook. The capstone's checks never use them: each
# part is checked with the course's pieces on the grader's own data, so a mistake in an earlier
# lesson cannot fail (or pass) a part here.

# %% tags=["nbval-ignore-output"]
mine = your_pieces()
mine

# %% [markdown]
# ## 1. The data pipeline
#
# The digits as images: `X` of shape `(N, 1, 8, 8)` (one grey channel), values in [0, 1];
# `y` int64 labels 0–9. `digits_split` holds out 360 test images. From the 1437 training
# images we hold out another 20 % for **validation**, to watch training and choose settings,
# so that the test set is used once, at the end.
#
# ### Part 1: `split_loaders`
#
# Write `split_loaders(X, y, val_fraction, seed, split)` returning `(train_loader, val_loader)`.
# `split(y, val_fraction, generator)` is lesson 04's `stratified_split` (yours is
# `mine.stratified_split`): it returns `(train_indices, val_indices)`, every class in the same
# proportion in both.
#
# The goal: a validation score you can trust as an estimate for images the model has never
# seen, and a split and training run that come out the same each time you run them with the
# same `seed` (another seed, another split). Answer these before you write:
#
# - What must the two parts never share, and what would the validation score measure if they
#   did?
# - Which loader should shuffle, and why should the other not? What would letting the
#   validation loader drop its last partial batch do to the score?
# - Which steps of your function are random, and how does `seed` reach each of them without
#   touching the rest of the notebook's randomness?
#
# Batch sizes are yours to choose (64 for training is a good start).

# %% [markdown]
# **Predict the output** (shape): The stratified split holds out `round(0.2 * count)` images of each digit of the 1437 training images (287 in all): what is `X_val.shape`?

# %% tags=["predict:val_shape"]
quiz.val_shape(
    ### BEGIN PREDICTION
    (287, 1, 8, 8)
    ### END PREDICTION
)

# %% tags=["answer:split_loaders"]
def split_loaders(X, y, val_fraction, seed, split):
    ### BEGIN SOLUTION
    train_idx, val_idx = split(y, val_fraction, torch.Generator().manual_seed(seed))
    train_loader = DataLoader(TensorDataset(X[train_idx], y[train_idx]), batch_size=64, shuffle=True,
                              generator=torch.Generator().manual_seed(seed))
    val_loader = DataLoader(TensorDataset(X[val_idx], y[val_idx]), batch_size=512)
    return train_loader, val_loader
    ### END SOLUTION


# %% tags=["check:split_loaders"]
ex.split_loaders.check(split_loaders)

# %% [markdown]
# From here on the notebook runs *your* parts (each cell says so), or the course's while yours is
# still the stub, on *your* pieces (`mine`).

# %%
split = digits_split(images=True)
X_test, y_test = split.X_test, split.y_test
make_loaders = yours_or_course(split_loaders, "12_capstone.split_loaders")
train_loader, val_loader = make_loaders(split.X_train, split.y_train, 0.2, seed=0, split=mine.stratified_split)
X_train, y_train = (torch.cat(t) for t in zip(*train_loader))
X_val, y_val = (torch.cat(t) for t in zip(*val_loader))
test_loader = DataLoader(TensorDataset(X_test, y_test), batch_size=512)
print(f"train {tuple(X_train.shape)}, validation {tuple(X_val.shape)}, test {tuple(X_test.shape)}")
print("validation images per class:", torch.bincount(y_val).tolist())

# %%
image_grid(X_train[:20], y_train[:20], ncols=10)
plt.show()

# %% [markdown]
# **Predict the output** (value): The remaining 1150 training images, `batch_size=64`: what is `len(train_loader)`?

# %% tags=["predict:train_batches"]
quiz.train_batches(
    ### BEGIN PREDICTION
    18
    ### END PREDICTION
)

# %%
print(len(train_loader), "training batches")

# %% [markdown]
# ## 2. Training: a baseline with early stopping and warm-up
#
# ### Part 2: `fit_with_early_stopping`
#
# Write `fit_with_early_stopping(model, train_loader, val_loader, loss_fn, optimizer, pieces,
# max_epochs, warmup_epochs, patience)`: one training run built from lesson 05's pieces, which
# `pieces` holds:
#
# | piece | what it does |
# |---|---|
# | `train_one_epoch(model, loader, loss_fn, optimizer)` | one pass over `loader`, updating the weights; its mean loss |
# | `evaluate(model, loader, loss_fn)` | `(mean loss, accuracy)` on `loader`, without training |
# | `EarlyStopping(patience)` | `.step(loss, model)`: stop now? It keeps the best weights seen in `.best_state` |
# | `warmup_cosine(optimizer, warmup, total)` | a scheduler: linear warm-up, cosine decay; one unit per `.step()` |
#
# The run follows a warm-up + cosine schedule of `warmup_epochs` and `max_epochs` **epochs**,
# stops early (with `patience`) once the model stops improving on data it does not train on,
# runs at most `max_epochs` epochs, returns the validation loss of each epoch it ran (a list of
# floats), and hands the model back **at its best**.
#
# **Decide:** which loader's loss tells you when to stop? How many
# times does the scheduler step in an epoch, and does the first epoch train before or after the
# first step? When the run stops, which weights should the model hold, and where are they?

# %% tags=["answer:fit_with_early_stopping"]
def fit_with_early_stopping(model, train_loader, val_loader, loss_fn, optimizer, pieces,
                            max_epochs, warmup_epochs, patience):
    ### BEGIN SOLUTION
    scheduler = pieces.warmup_cosine(optimizer, warmup_epochs, max_epochs)  # counted in epochs
    stopper = pieces.EarlyStopping(patience)
    history = []
    for _ in range(max_epochs):
        pieces.train_one_epoch(model, train_loader, loss_fn, optimizer)  # at this epoch's learning rate
        val_loss, _ = pieces.evaluate(model, val_loader, loss_fn)  # data it does not train on
        history.append(val_loss)
        scheduler.step()  # once per epoch, after the epoch that used the rate
        if stopper.step(val_loss, model):
            break
    model.load_state_dict(stopper.best_state)  # the stop comes after the best epoch, not at it
    return history
    ### END SOLUTION


# %% tags=["check:fit_with_early_stopping"]
ex.fit_with_early_stopping.check(fit_with_early_stopping)

# %% [markdown]
# The baseline: flatten each image and use one linear layer (multinomial logistic
# regression), trained with *your* pieces:

# %% tags=["nbval-ignore-output"]
torch.manual_seed(0)
baseline = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(baseline.parameters(), lr=0.2)
fit = yours_or_course(fit_with_early_stopping, "12_capstone.fit_with_early_stopping")
history = fit(baseline, train_loader, val_loader, loss_fn, optimizer, mine,
              max_epochs=12, warmup_epochs=2, patience=3)
plot_curves({"validation loss": history}, title="baseline: logistic regression")
plt.show()

# %% tags=["nbval-ignore-output"]
val_loss, val_acc = mine.evaluate(baseline, val_loader, loss_fn)
print(f"{len(history)} epochs; baseline validation accuracy: {val_acc:.0%}")

# %% [markdown]
# A start, far from 97 %. Before improving it, look at *what* it gets wrong.

# %% [markdown]
# ## 3. Evaluation beyond accuracy
#
# A **confusion matrix** counts, for every true class (row), how often each class was
# predicted (column). The diagonal holds the correct predictions; large off-diagonal entries
# name the confusions.
#
# ### Part 3: `confusion_matrix`
#
# Write `confusion_matrix(preds, targets, num_classes)`: `preds` and `targets` are int64
# tensors of shape `(N,)`. Return an int64 tensor of shape `(num_classes, num_classes)` whose
# entry `[t, p]` counts the items of true class `t` predicted as `p`.

# %% tags=["answer:confusion_matrix"]
def confusion_matrix(preds, targets, num_classes):
    ### BEGIN SOLUTION
    cm = torch.zeros(num_classes, num_classes, dtype=torch.int64)
    cm.index_put_((targets, preds), torch.ones_like(targets), accumulate=True)
    return cm
    ### END SOLUTION


# %% tags=["check:confusion_matrix"]
ex.confusion_matrix.check(confusion_matrix)

# %% [markdown]
# The baseline's confusion matrix on the validation images, and the images it got wrong,
# titled `predicted/true`:

# %% [markdown]
# **Predict the output** (dtype): `predict(model, X)` returns `model(X).argmax(dim=1)`. What is its dtype?

# %% tags=["predict:preds_dtype"]
quiz.preds_dtype(
    ### BEGIN PREDICTION
    torch.int64
    ### END PREDICTION
)

# %%
def predict(model, X):
    model.eval()
    with torch.inference_mode():
        return model(X).argmax(dim=1)


def show_confusion(cm, title):
    fig, ax = plt.subplots(figsize=(4, 4))
    ax.imshow(cm, cmap="Blues")
    for (t, p), count in zip(torch.cartesian_prod(torch.arange(10), torch.arange(10)).tolist(), cm.flatten().tolist()):
        if count:
            ax.text(p, t, count, ha="center", va="center", fontsize=7, color="white" if count > cm.max() / 2 else "black")
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    ax.set_xticks(range(10))
    ax.set_yticks(range(10))
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


val_preds = predict(baseline, X_val)
cm = yours_or_course(confusion_matrix, "12_capstone.confusion_matrix")(val_preds, y_val, 10)
show_confusion(cm, "baseline, validation set")
plt.show()

# %%
print(val_preds.dtype, tuple(val_preds.shape))

# %% tags=["nbval-ignore-output"]
wrong = (val_preds != y_val).nonzero().flatten()
print(f"{len(wrong)} of {len(y_val)} validation images are wrong")
image_grid(X_val[wrong[:20]], y_val[wrong[:20]], val_preds[wrong[:20]], ncols=10)
plt.show()

# %% [markdown]
# Some mistakes are understandable (a sloppy 1 and a 7), others are not: a linear model
# cannot see shapes, only where ink tends to be. A convolutional network can.

# %% [markdown]
# ## 4. Save, reload, and resume after a power cut
#
# Save the **`state_dict`** (the tensors), not the model object; to reload, build the same
# architecture and load the tensors into it. `torch.load` only unpickles tensors and plain
# containers by default (`weights_only=True`), which makes loading files from elsewhere safe.

# %% [markdown]
# **Predict the output** (value): What is `list(baseline.state_dict())` for `nn.Sequential(nn.Flatten(), nn.Linear(64, 10))`?

# %% tags=["predict:state_dict_keys"]
quiz.state_dict_keys(
    ### BEGIN PREDICTION
    ['1.weight', '1.bias']
    ### END PREDICTION
)

# %%
print(list(baseline.state_dict()))

# %%
scratch = tempfile.TemporaryDirectory(prefix="lesson12_")  # deleted when the kernel stops
folder = Path(scratch.name)
torch.save(baseline.state_dict(), folder / "baseline.pt")

restored = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
restored.load_state_dict(torch.load(folder / "baseline.pt"))
print("same predictions after reloading:", torch.equal(predict(restored, X_val), val_preds))
print("file size:", (folder / "baseline.pt").stat().st_size, "bytes")

# %% [markdown]
# A long run must survive an interruption. Lesson 09's `save_checkpoint(path, model, optimizer,
# scheduler, epoch, loader_generator)` writes everything a run needs to go on exactly as if
# nothing happened (weights, optimizer, scheduler, the RNG and the loader's generator, and the
# `epoch` it is given: the number of epochs completed), and `load_checkpoint(path, model,
# optimizer, scheduler, loader_generator)` puts it all back into fresh objects and returns that
# number.
#
# ### Part 4: `resume_training`
#
# A teammate wrote the training run that should survive a power cut. Tried on the digits (a CNN
# with dropout, 4 epochs, a power cut after epoch 3, then the same call again on fresh objects,
# as after a restart), it resumes without an error, but it does not end where the uninterrupted
# run ends. The cell prints the learning rate of every epoch each call trained:

# %% tags=["nbval-ignore-output"]
def first_attempt_resume(path, model, optimizer, scheduler, loader, loader_generator, loss_fn, num_epochs, pieces):
    start = 0
    if os.path.exists(path):
        start = pieces.load_checkpoint(path, model, optimizer, scheduler, loader_generator)
    for epoch in range(start, num_epochs):
        pieces.train_one_epoch(model, loader, loss_fn, optimizer)
        if epoch % 2 == 1:  # saving takes time: every other epoch
            pieces.save_checkpoint(path, model, optimizer, scheduler, epoch, loader_generator)
        scheduler.step()


class PowerCut(Exception):
    pass


def digits_run(resume, path, cut_after=None, init_seed=0):
    """`resume` on the digits with *your* pieces; the learning rate of each epoch trained."""
    torch.manual_seed(init_seed)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Dropout(0.2),
                          nn.Linear(8 * 64, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    scheduler = mine.warmup_cosine(optimizer, 1, 4)
    generator = torch.Generator().manual_seed(0)
    loader = DataLoader(TensorDataset(X_train, y_train), batch_size=64, shuffle=True, generator=generator)
    pieces = copy.copy(mine)  # your pieces, one of them replaced below
    rates = []

    def train_and_watch(*args):
        if len(rates) == cut_after:
            raise PowerCut
        rates.append(round(optimizer.param_groups[0]["lr"], 5))
        return mine.train_one_epoch(*args)
    pieces.train_one_epoch = train_and_watch
    try:
        resume(path, model, optimizer, scheduler, loader, generator, loss_fn, 4, pieces)
    except PowerCut:
        rates.append("power cut")
    return model, rates


def same_weights(a, b):
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


straight, rates = digits_run(first_attempt_resume, folder / "straight.pt")
print("uninterrupted:      ", rates)
_, rates = digits_run(first_attempt_resume, folder / "first.pt", cut_after=3)
print("until the power cut:", rates)
resumed, rates = digits_run(first_attempt_resume, folder / "first.pt", init_seed=123)  # fresh objects
print("after the restart:  ", rates)
print("bit-identical after resuming:", same_weights(straight, resumed))

# %% [markdown]
# Write `resume_training(path, model, optimizer, scheduler, loader, loader_generator, loss_fn,
# num_epochs, pieces)`, the run it was meant to be: `num_epochs` epochs with `pieces`, such that
# a power cut costs **at most the epoch under way**, and calling it again with the same
# arguments (on fresh objects: other initial weights, another random state) continues the run
# and ends **bit-identical** to a run that was never interrupted.
#
# **Decide, and check each decision against the printout above:** which number goes into the
# checkpoint, and which epoch does a resumed run start from? At which moment of an epoch is its
# work complete enough to be saved: what has changed by then, the scheduler included? How much
# work may a power cut cost? And what does the very first call do, when there is no file yet?
#
# The check cuts the power in the middle of runs of small models, builds fresh objects, calls
# your function again, and compares every weight with an uninterrupted run's, bit for bit.

# %% tags=["answer:resume_training"]
def resume_training(path, model, optimizer, scheduler, loader, loader_generator, loss_fn, num_epochs, pieces):
    ### BEGIN SOLUTION
    start = 0  # no file yet: a run not started, from the objects it was given
    if os.path.exists(path):
        start = pieces.load_checkpoint(path, model, optimizer, scheduler, loader_generator)  # epochs done
    for epoch in range(start, num_epochs):  # the first epoch still to run is the number done
        pieces.train_one_epoch(model, loader, loss_fn, optimizer)
        scheduler.step()  # the epoch is over once its step is taken, and only then saved
        # every epoch (a power cut costs only the one under way), as the number of epochs done
        pieces.save_checkpoint(path, model, optimizer, scheduler, epoch + 1, loader_generator)
    ### END SOLUTION


# %% tags=["check:resume_training"]
ex.resume_training.check(resume_training)

# %% [markdown]
# Your version on the digits, through the same power cut (after epoch 3 of 4), with *your*
# checkpoint functions: the resumed run trains the one epoch left, at the learning rate the
# uninterrupted run used for it, and ends with its weights.

# %% tags=["nbval-ignore-output"]
resume = yours_or_course(resume_training, "12_capstone.resume_training")
_, rates = digits_run(resume, folder / "cut.pt", cut_after=3)
print("until the power cut:", rates)
resumed, rates = digits_run(resume, folder / "cut.pt", init_seed=123)  # fresh objects, as after a restart
print("after the restart:  ", rates)
print("bit-identical after resuming:", same_weights(straight, resumed))

# %% [markdown]
# ## 5. Export, and parity with onnxruntime
#
# Lesson 09's `export_with_dynamic_batch` gives a `torch.export` program whose batch size is
# free; `torch.onnx.export` turns it into one `.onnx` file that onnxruntime runs. An exported
# model is only useful if it computes what the PyTorch model computes, for *any* batch size:
# that is a **parity** test.
#
# ### Part 5: `onnx_parity`
#
# How large may the difference between the two runtimes be before it means a bug? It is rarely
# 0: float32 keeps about 7 significant digits, and ONNX Runtime may fuse and reorder operations
# (its sums add in another order), so the two can disagree in the last digits. A real bug (the
# weights changed after the export, BatchNorm's running statistics moved by a stray forward pass in
# training mode, a wrong bias) moves the outputs by much more than that. The check hands you models
# whose outputs are near 0.01, near 1 and near 10 000, half of them with such a bug: decide
# what still counts as rounding for each.
#
# Write `onnx_parity(onnx_path, model, X)`: run the ONNX file at `onnx_path` in onnxruntime
# (CPU) on the batch `X`, run `model` on `X` as it runs in production, and return a pair: the
# largest absolute difference between the two outputs as a Python `float`, and your verdict,
# `True` when that difference is rounding (parity) and `False` when it is a bug. Take the
# input's name from the file.

# %% tags=["answer:onnx_parity"]
def onnx_parity(onnx_path, model, X):
    ### BEGIN SOLUTION
    import onnxruntime as ort

    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    onnx_out = session.run(None, {name: X.numpy()})[0]
    model.eval()
    with torch.inference_mode():
        torch_out = model(X).numpy()
    diff = float(np.abs(onnx_out - torch_out).max())
    # rounding is relative, about 1e-7 of the outputs' size; a bug moves them by a visible fraction
    return diff, diff <= 1e-4 * float(np.abs(torch_out).max())
    ### END SOLUTION


# %% tags=["check:onnx_parity"]
ex.onnx_parity.check(onnx_parity)

# %% [markdown]
# The resumed CNN, exported with *your* `export_with_dynamic_batch` from a batch of 2, then
# checked on the 287 validation images. The exporter is chatty: its lines that torchvision is not
# installed and its `FutureWarning` about `LeafSpec` are harmless (lesson 09 says why):

# %% tags=["nbval-ignore-output"]
program = mine.export_with_dynamic_batch(resumed, X_val[:2])
torch.onnx.export(program, (X_val[:2],), folder / "digits.onnx", dynamo=True, external_data=False, verbose=False)
error, same = yours_or_course(onnx_parity, "12_capstone.onnx_parity")(folder / "digits.onnx", resumed, X_val)
print(f"largest difference, batch of {len(X_val)}: {error:.2e}", "(parity)" if same else "(NO parity)")

# %% [markdown]
# ## 6. Find the three bugs
#
# This training-and-scoring function runs without an error and prints a plausible number, but
# it has **three bugs**. Each one changes the result: one in the training loop, two in the
# scoring.

# %%
def buggy_train_and_score(model, train_loader, val_loader, loss_fn, optimizer, epochs):
    for _ in range(epochs):
        model.train()
        for X, y in train_loader:
            loss = loss_fn(model(X), y)
            loss.backward()
            optimizer.step()
    accuracies = []
    with torch.no_grad():
        for X, y in val_loader:
            accuracies.append((model(X).argmax(dim=1) == y).float().mean().item())
    return sum(accuracies) / len(accuracies)


# %% tags=["nbval-ignore-output"]
def bug_hunt(train_and_score_fn):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Dropout(0.5), nn.Linear(64, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    return train_and_score_fn(model, train_loader, val_loader, loss_fn, optimizer, 2)


print(f"the buggy version's validation accuracy: {bug_hunt(buggy_train_and_score):.1%}")

# %% [markdown]
# ### Part 6: `train_and_score`
#
# Write `train_and_score(model, train_loader, val_loader, loss_fn, optimizer, epochs)`: the
# function above with its three bugs fixed. It returns the validation accuracy (the fraction of
# validation items predicted right) as a Python `float`. The check names each bug it still
# finds.

# %% tags=["answer:train_and_score"]
def train_and_score(model, train_loader, val_loader, loss_fn, optimizer, epochs):
    ### BEGIN SOLUTION
    for _ in range(epochs):
        model.train()
        for X, y in train_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(X), y)
            loss.backward()
            optimizer.step()
    model.eval()
    correct, n = 0, 0
    with torch.no_grad():
        for X, y in val_loader:
            correct += (model(X).argmax(dim=1) == y).sum().item()
            n += len(y)
    return correct / n
    ### END SOLUTION


# %% tags=["check:train_and_score"]
ex.train_and_score.check(train_and_score)

# %% tags=["nbval-ignore-output"]
fixed = yours_or_course(train_and_score, "12_capstone.train_and_score")
print(f"the same run, bugs fixed: {bug_hunt(fixed):.1%}")

# %% [markdown]
# ## 7. Your turn: a classifier that reaches 97 %
#
# Write the class `DigitClassifier` with two methods, in the style of scikit-learn:
#
# - `fit(X, y)`: train a new network from scratch on images `X` (float32, shape `(N, 1, 8,
#   8)`, values in [0, 1]) and labels `y` (int64, `(N,)`, classes 0–9). Keep the network in
#   `self.model`. It must output **logits**, shape `(N, 10)`.
# - `predict(X)`: the predicted classes for images `X`, an int64 tensor of shape `(N,)`.
#
# **How it is graded.** The check calls `DigitClassifier()`, then `fit` on 1437 digits chosen
# at random, and `predict` on the other 360, which your code never sees during training. To
# pass, the predictions must be at least **97 %** right and `fit` may use at most **20
# seconds of CPU time** (the check runs it on one CPU thread). The check also shuffles the class names (every 3 might become a 7) so that only
# what `fit` learns from the `X, y` it is given counts, and it watches `predict` for
# `eval()` and `inference_mode()`, and that the predictions are `self.model`'s. The split was
# drawn at random once and is the same at every check, so checking again with another seed
# cannot change the verdict; aim for 98 % or more so that a small change to your training does
# not fail you.
#
# Ideas, from the lessons (lesson 08 for the convolutions): two `Conv2d` layers with ReLU and
# a `MaxPool2d`, then `Flatten` and two `Linear` layers; Adam; a learning-rate schedule; about
# 10 epochs; `BatchNorm2d`.
# Try your settings on the validation split above before checking. Training takes about a
# second; the check takes about as long.

# %% tags=["answer:DigitClassifier"]
class DigitClassifier:
    def __init__(self):
        self.model = None

    def fit(self, X, y):
        ### BEGIN SOLUTION
        torch.manual_seed(0)
        self.model = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10),
        )
        loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True,
                            generator=torch.Generator().manual_seed(0))
        num_epochs = 10
        optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-2)
        scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2,
                                                        total_steps=num_epochs * len(loader))
        loss_fn = nn.CrossEntropyLoss()
        self.model.train()
        for _ in range(num_epochs):
            for xb, yb in loader:
                optimizer.zero_grad()
                loss_fn(self.model(xb), yb).backward()
                optimizer.step()
                scheduler.step()
        ### END SOLUTION
        return self

    def predict(self, X):
        ### BEGIN SOLUTION
        self.model.eval()
        with torch.inference_mode():
            return self.model(X).argmax(dim=1)
        ### END SOLUTION


# %% [markdown]
# The check takes a second or two (it trains your model once):

# %% tags=["check:DigitClassifier"]
ex.DigitClassifier.check(DigitClassifier)

# %% [markdown]
# Your classifier (the course's while yours is the stub), trained on the training split and
# measured once on the test set, with its confusion matrix and remaining mistakes (about 2
# seconds):

# %% tags=["nbval-ignore-output"]
clf = yours_or_course(DigitClassifier, "12_capstone.DigitClassifier")().fit(split.X_train, split.y_train)
test_preds = clf.predict(X_test)
print(f"test accuracy: {(test_preds == y_test).float().mean().item():.1%}")
show_confusion(yours_or_course(confusion_matrix, "12_capstone.confusion_matrix")(test_preds, y_test, 10),
               "the CNN, test set")
wrong = (test_preds != y_test).nonzero().flatten()
image_grid(X_test[wrong], y_test[wrong], test_preds[wrong], ncols=10)
plt.show()

# %% [markdown]
# ## 8. Beyond this course: the libraries around PyTorch
#
# Everything here was written with PyTorch alone, so that you see each piece. In real projects
# some of these pieces come from libraries. What each does, which code of this course it
# replaces, and where it stands (versions and dates from PyPI, November 2026):
#
# | library | what it does | replaces in this course | status |
# |---|---|---|---|
# | **Lightning** (`lightning`) | `LightningModule` + `Trainer`: the training loop, validation, early stopping, checkpoints, AMP and multi-GPU/DDP launch from flags; **Fabric** keeps your own loop and takes over devices, precision and launching | lesson 05's loop, 10's AMP, 11's `torchrun` script, 09's checkpoint code | active (2.6, September 2026) |
# | **Weights & Biases** (`wandb`) | experiment tracking: metrics, configs, artifacts, in a hosted dashboard (`WANDB_MODE=offline` logs locally) | printing losses, `LiveLossPlot`, a TensorBoard `SummaryWriter` | active (0.31, October 2026); needs an account to view online |
# | **torchvision** | image datasets (MNIST, CIFAR, ImageNet folders), `transforms.v2`, and models with pretrained weights (`resnet18(weights=ResNet18_Weights.DEFAULT)`) | `course_utils.datasets`, hand-written CNNs trained from scratch | active (0.29, October 2026); each release matches one torch release, so install it together with torch |
# | **torchdata** | `StatefulDataLoader` (a `DataLoader` with `state_dict()`, so training can resume *mid-epoch*) and `torchdata.nodes`; its DataPipes and DataLoader2 were removed in 0.10 | lesson 09's mid-epoch resume by hand (skipping the batches already done) | maintained, slow (0.11, February 2025) |
# | **TorchServe** | an HTTP server for models | nothing here: lesson 09 exports with `torch.export` and ONNX instead | no release since 0.12 (September 2024); its repository is archived: serve an exported model with a runtime that is maintained (onnxruntime, as in lesson 09, or an inference server) |
#
# None of them is used by this course, so nothing here depends on them. The cell below shows
# which are installed in your environment:

# %% tags=["nbval-ignore-output"]
from importlib import metadata  # noqa: E402

for package in ["lightning", "wandb", "torchvision", "torchdata", "torchserve", "tensorboard", "onnxruntime"]:
    try:
        print(f"{package:12} {metadata.version(package)}")
    except metadata.PackageNotFoundError:
        print(f"{package:12} not installed")

# %% [markdown]
# ## Recap
#
# - A project is a pipeline: data and splits (train for fitting, validation for choosing,
#   test once at the end), a model, the training loop, evaluation, saving. You built it from
#   your own pieces of lessons 04, 05 and 09: small functions with clear inputs compose.
# - A stratified split keeps every class's share in validation; seeded generators make the split
#   and the batch order reproducible.
# - Early stopping watches the *validation* loss and gives back the *best* weights; a schedule
#   counted in epochs steps once per epoch.
# - Resuming exactly needs everything that changes while training (weights, optimizer,
#   scheduler, epoch, RNG and loader generator), saved after the epoch's last step.
# - An export is only done when its outputs match PyTorch's (in `eval()` mode) on other batch
#   sizes than the example's.
# - Bugs that do not crash (no `zero_grad`, no `eval()`, a mean of batch means) show up only as
#   wrong numbers: test against a run you trust.
# - A confusion matrix and a grid of mistakes show *what* a model gets wrong; a better
#   architecture (convolutions) fixes what more epochs cannot.
# - Save `state_dict`s; reload into the same architecture with `torch.load` (tensors only by
#   default).
# - A fair grade trains from scratch on data the model's author did not choose and tests on
#   data it never saw.
#
# Where next: run the same classifier on a GPU with mixed precision (lesson 10), export it
# (lesson 09), or take the pipeline to a dataset of your own.

# %% [markdown]
# ## Further reading
#
# PyTorch documentation: [`torch.utils.data`](https://docs.pytorch.org/docs/stable/data.html),
# [`torch.optim`](https://docs.pytorch.org/docs/stable/optim.html) (its "How to adjust learning
# rate" section for `LambdaLR`), [Serialization
# semantics](https://docs.pytorch.org/docs/stable/notes/serialization.html),
# [Reproducibility](https://docs.pytorch.org/docs/stable/notes/randomness.html) (generators,
# seeds, what stays nondeterministic) and [`torch.onnx`](https://docs.pytorch.org/docs/stable/onnx.html),
# the pages this project leans on; the [ONNX Runtime Python
# API](https://onnxruntime.ai/docs/api/python/api_summary.html) for `InferenceSession`.
#
# The best external material:
#
# - Andrej Karpathy, [*A Recipe for Training Neural
#   Networks*](https://karpathy.github.io/2019/04/25/recipe/): how to approach a project like
#   this one (become one with the data, a baseline first, overfit, then regularise).
# - PyTorch tutorials, [Training a
#   classifier](https://docs.pytorch.org/tutorials/beginner/blitz/cifar10_tutorial.html): the
#   same pipeline on CIFAR-10's colour images.
# - Zero to Mastery *Learn PyTorch*, [Going
#   modular](https://www.learnpytorch.io/05_pytorch_going_modular/): turning notebook code into
#   scripts and a package, the next step for your own project.
# - *Dive into Deep Learning*, [Modern convolutional neural
#   networks](https://d2l.ai/chapter_convolutional-modern/index.html): VGG, ResNet and friends,
#   for a classifier beyond 97 %.
# - scikit-learn, [Model
#   evaluation](https://scikit-learn.org/stable/modules/model_evaluation.html): metrics beyond
#   accuracy, including the confusion matrix of section 3.
