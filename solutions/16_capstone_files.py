# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 16 · The capstone on real files
#
# Lesson 12's capstone trained on a tensor the course handed you. This one starts where real
# projects start: a **folder of image files** on disk, one subfolder per class. You take it all
# the way to a **fine-tuned, exported model** that someone else can run without your code, and
# the last check grades that file on images from fonts this notebook never sees.
#
# Every step is a decision, and each has a classic wrong answer:
#
# 1. split so that the validation set measures what deployment will meet (by font, not by image);
# 2. give training and evaluation different transforms, with the same normalisation;
# 3. stop training when validation stops improving, and keep the best checkpoint, not the last;
# 4. bake the preprocessing into the model you ship, so it takes raw `uint8` pixels;
# 5. export in eval mode with a dynamic batch, to a `.pt2` file that loads without your classes;
# 6. put it together: a folder in, an exported classifier out, graded on held-out fonts.
#
# **Time: about 95 minutes** on your own, the six checked exercises included (about 63 of those minutes). *Run All* alone takes about 26 s on a 2-core CPU.
#
# To use **your own images**: a folder with one subfolder per class (`my_photos/cat/*.png`,
# `my_photos/dog/*.png`), grey or converted to grey, resized to 28x28 (the backbone's size).
# Point `my_folder` below at it; everything after works the same.

# %%
from course_utils.extras import require_torchvision

require_torchvision()  # one line with the install command, if torchvision is missing or mismatched

import copy
import math
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
import torchvision
from PIL import Image
from torch import nn
from torchvision.transforms import v2

from course_utils import glyphs
from course_utils.grading import exercises_for, predictions_for, reference
from course_utils.lesson_props.l14_transfer_learning import PRETRAIN_FONTS, load_pretrained

ex = exercises_for("16_capstone_files")
quiz = predictions_for("16_capstone_files")  # predict-the-output questions
torch.set_num_threads(1)  # the same sums in the same order on every machine: the printed numbers repeat
_ = torch.manual_seed(0)

# %% [markdown]
# ## 1. A folder of images
#
# The course writes one for you, offline: the ten digits in eight fonts, three images each, as
# 28x28 grey PNGs in class folders (lesson 13's `glyphs`). Replace `my_folder` with yours.

# %%
scratch = tempfile.TemporaryDirectory(prefix="lesson16_")  # deleted when the kernel stops
data_dir = Path(scratch.name)
MY_FONTS = PRETRAIN_FONTS[:8]
my_folder = glyphs.make_image_folder(data_dir / "my_digits", chars=glyphs.DIGITS, per_font=3, fonts=MY_FONTS, seed=3)
print(sorted(p.name for p in my_folder.iterdir()))
print(sorted(p.name for p in (my_folder / "7").iterdir())[:4], "...")


# %% [markdown]
# `ImageFolder` numbers the classes in sorted order of the folder names, and that order is
# part of your model: output 3 means `classes[3]`. Keep the list with the model. The loader
# reads each file with PIL as one grey `uint8` channel (`convert("L")` also turns colour photos
# grey); the font is in each file's name.

# %%
def load_folder(root):
    """Every image of an ImageFolder as one uint8 batch (N, 1, H, W), the labels, the class
    names in label order, and each image's group (the part of its file name before the last '-')."""
    folder = torchvision.datasets.ImageFolder(
        root, loader=lambda path: v2.functional.pil_to_tensor(Image.open(path).convert("L")))
    X = torch.stack([folder[i][0] for i in range(len(folder))])
    groups = [Path(path).stem.rsplit("-", 1)[0] for path, _ in folder.samples]
    names = list(folder.class_to_idx)  # the class names in label order (`folder.classes` is the same list)
    return X, torch.tensor(folder.targets), names, groups


X_all, y_all, classes, groups = load_folder(my_folder)
print(tuple(X_all.shape), X_all.dtype, "classes:", classes)

# %% [markdown]
# ## 2. Hold out fonts
#
# Lesson 13 measured it: three images of one digit in one font look alike, so a random split
# scores the model on drawings it has nearly seen. Hold out **whole fonts** (with your photos:
# whole sessions, cameras, people), two of the eight, chosen by a seeded generator:

# %%
gen = torch.Generator().manual_seed(0)
val_fonts = {MY_FONTS[i] for i in torch.randperm(len(MY_FONTS), generator=gen)[:2].tolist()}
is_val = torch.tensor([g in val_fonts for g in groups])
X_train, y_train = X_all[~is_val], y_all[~is_val]
X_val, y_val = X_all[is_val], y_all[is_val]
print("validation fonts:", sorted(val_fonts), f"-> {len(X_train)} training and {len(X_val)} validation images")

# %% [markdown]
# ## 3. Transforms for training and for evaluation
#
# The pretrained backbone (lesson 14) expects pixels scaled to [0, 1] and standardised with the
# **pretraining** mean and std, from its recipe. Training also gets augmentation: small shifts,
# rotations and scalings that keep a digit that digit. Evaluation must not: a validation score
# that changes on every run measures the dice, not the model.

# %%
pretrained, recipe = load_pretrained()
print("pretraining statistics:", recipe["mean"], recipe["std"])

# %% [markdown]
# `v2.RandomAffine` draws a rotation (`degrees`), a shift (`translate`, a fraction of the size) and
# a scaling for each call; on a tensor it fills the uncovered border with 0. One image, twice:

# %%
augment = v2.RandomAffine(degrees=10, translate=(0.1, 0.1), scale=(0.9, 1.1))
first, second = augment(X_train[0]), augment(X_train[0])
print(augment)
print("pixels changed by the two draws:", int((first != second).sum()), "of", first.numel())

# %% [markdown]
# ### Exercise 1: two pipelines
#
# Write `make_transforms(mean, std)` returning `(train_transform, eval_transform)`: each takes one
# `uint8` image `(1, H, W)` and returns a float32 image of the same shape, scaled to [0, 1] and
# standardised with `mean` and `std`. Decide which one augments, and how (geometric changes
# only: shifts, small rotations, scaling; nothing that turns a digit into another, or a
# mirror image).

# %% tags=["answer:make_transforms"]
def make_transforms(mean, std):
    ### BEGIN SOLUTION
    to_input = [v2.ToDtype(torch.float32, scale=True), v2.Normalize([mean], [std])]
    train = v2.Compose([v2.RandomAffine(degrees=10, translate=(0.1, 0.1), scale=(0.9, 1.1)), *to_input])
    return train, v2.Compose(to_input)
    ### END SOLUTION


# %% tags=["check:make_transforms"]
ex.make_transforms.check(make_transforms)

# %% [markdown]
# ## 4. Training with a validation set: when to stop, what to keep
#
# The few labels and a related task suggest lesson 14's full fine-tuning with a gentle rate for
# the backbone. Each epoch ends with the validation loss and accuracy, and a copy of the
# weights. Two decisions remain: when to stop, and which copy to keep.
#
# ### Exercise 2: early stopping
#
# A validation curve is noisy: on a small validation set it goes up for an epoch now and then
# while the model is still getting better. Here are the validation losses this lesson's
# fine-tuning printed, epoch by epoch, when it was written (the loop below runs it again), and a
# teammate's early stopping, called after every epoch with the losses so far:

# %%
run_losses = [1.377, 1.343, 0.717, 0.456, 0.494, 0.221, 0.188, 0.163, 0.239, 0.197, 0.247]


def teammates_should_stop(val_losses, patience):
    return len(val_losses) > patience and val_losses[-1] > val_losses[-2]


def stopped_after(rule, losses, patience=3):
    """The epoch after which `rule` stops the run (epochs from 1), or None if it never does."""
    return next((t for t in range(1, len(losses) + 1) if rule(losses[:t], patience)), None)


print("the teammate's rule stops after epoch", stopped_after(teammates_should_stop, run_losses),
      "- the run's lowest loss comes at epoch", run_losses.index(min(run_losses)) + 1)

# %% [markdown]
# Stopped there, the run would ship one of its first five epochs (87 % on the validation fonts
# at best) instead of reaching epoch 8 (98 %). Repair it: write `should_stop(val_losses, patience)`, `True` to stop. With
# `patience=3` this run must train through its bump at epoch 5 and stop after epoch 11: a run
# stops once `patience` epochs in a row have not moved it forward, and not before. Decide what
# "forward" means so that a bump the curve recovers from does not count and a plateau does. A
# loss that only equals an earlier one is not forward, and the training loop keeps appending to
# `val_losses` after your function returns.

# %% tags=["answer:should_stop"]
def should_stop(val_losses, patience):
    ### BEGIN SOLUTION
    if len(val_losses) <= patience:
        return False
    return min(val_losses[-patience:]) >= min(val_losses[:-patience])
    ### END SOLUTION


# %% tags=["check:should_stop"]
ex.should_stop.check(should_stop)

# %% [markdown]
# **Predict the output** (value): Validation losses by epoch (epochs numbered from 1):
# `[0.9, 0.8, 0.7, 0.72, 0.71, 0.75]`. Which epoch's weights do you keep, judged by validation loss?

# %% tags=["predict:kept_epoch"]
quiz.kept_epoch(
    ### BEGIN PREDICTION
    3
    ### END PREDICTION
)

# %%
val_losses = [0.9, 0.8, 0.7, 0.72, 0.71, 0.75]
print("kept epoch:", val_losses.index(min(val_losses)) + 1)

# %% [markdown]
# ### Exercise 3: which checkpoint to keep
#
# Each epoch saved its weights and a line of history. Here is a teammate's history from a run
# resumed at epoch 12 on another folder (the evaluation after epoch 12 was interrupted, so the
# logger wrote NaN), and the epoch their script ships:

# %%
nan = float("nan")
resumed = [{"epoch": e, "train_loss": t, "val_loss": v, "val_accuracy": a} for e, t, v, a in [
    (12, 0.52, nan, nan), (13, 0.47, 0.40, 0.88), (14, 0.39, 0.31, 0.92), (15, 0.33, 0.24, 0.95),
    (16, 0.30, 0.19, 0.93), (17, 0.26, 0.21, 0.95), (18, 0.22, 0.25, 0.90)]]


def teammates_pick(history):
    return history[-1]["epoch"]  # the weights the run ended with


print("the teammate ships epoch", teammates_pick(resumed))

# %% [markdown]
# The app built on the shipped model is judged by how many digits it reads right in fonts nobody
# trained on, and it shows its confidence next to each answer. Write `pick_checkpoint(history)`:
# `history` is a list like `resumed` (its `"epoch"` numbers need not start at 0 or 1), and you
# return the `"epoch"` to ship for that app. Decide which numbers to judge by, which of two
# epochs that are equally good by them to prefer (a small validation set ties often), and never
# ship an epoch with NaN among its validation numbers (at least one epoch has none). Leave
# `history` as it is: the training script keeps it.

# %% tags=["answer:pick_checkpoint"]
def pick_checkpoint(history):
    ### BEGIN SOLUTION
    measured = [h for h in history if not (math.isnan(h["val_accuracy"]) or math.isnan(h["val_loss"]))]
    best = max(measured, key=lambda h: (h["val_accuracy"], -h["val_loss"]))
    return best["epoch"]
    ### END SOLUTION


# %% tags=["check:pick_checkpoint"]
ex.pick_checkpoint.check(pick_checkpoint)

# %% [markdown]
# Now the loop, with the course's answers to exercises 1 to 3. The backbone trains at a tenth of
# the head's rate (lesson 14's parameter groups); each epoch keeps a copy of the weights, and
# the loop may run 20 epochs, but early stopping decides. Which epoch would you keep?

# %%
course_transforms = reference("16_capstone_files.make_transforms")
course_should_stop = reference("16_capstone_files.should_stop")
course_pick = reference("16_capstone_files.pick_checkpoint")
train_tf, eval_tf = course_transforms(recipe["mean"], recipe["std"])

_ = torch.manual_seed(0)
model, _ = load_pretrained()
model.fc = nn.Linear(model.fc.in_features, len(classes))
head = list(model.fc.parameters())
backbone = [p for name, p in model.named_parameters() if not name.startswith("fc.")]
optimizer = torch.optim.AdamW([{"params": backbone, "lr": 3e-3}, {"params": head, "lr": 3e-2}])
X_val_in = torch.stack([eval_tf(x) for x in X_val])
history, checkpoints = [], {}
for epoch in range(1, 21):
    model.train()
    order = torch.randperm(len(X_train))
    for batch in order.split(32):
        xb = torch.stack([train_tf(X_train[i]) for i in batch])
        loss = F.cross_entropy(model(xb), y_train[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        val_logits = model(X_val_in)
    history.append({"epoch": epoch, "train_loss": loss.item(), "val_loss": F.cross_entropy(val_logits, y_val).item(),
                    "val_accuracy": (val_logits.argmax(1) == y_val).float().mean().item()})
    checkpoints[epoch] = copy.deepcopy(model.state_dict())
    print(f"epoch {epoch:2}  val loss {history[-1]['val_loss']:.3f}  val accuracy {history[-1]['val_accuracy']:.1%}")
    if course_should_stop([h["val_loss"] for h in history], patience=3):
        break
kept = course_pick(history)
model.load_state_dict(checkpoints[kept])
print("stopped after epoch", epoch, "- kept epoch", kept)

# %% [markdown]
# ## 5. The model you ship
#
# Whoever runs your model has image files, not your notebook: `uint8` pixels, 0 to 255. If the
# scaling and the statistics live only in your transforms, every user must copy them exactly,
# and a user who forgets gets confident nonsense, not an error. Put them **inside** the model.
# One trap on the way: arithmetic on `uint8` stays `uint8`.

# %% [markdown]
# **Predict the output** (value): What is `(torch.tensor([200], dtype=torch.uint8) + 100).item()`?

# %% tags=["predict:uint8_overflow"]
quiz.uint8_overflow(
    ### BEGIN PREDICTION
    44
    ### END PREDICTION
)

# %%
print((torch.tensor([200], dtype=torch.uint8) + 100).item(), "- wrapped around 256; as floats:",
      (torch.tensor([200], dtype=torch.uint8).float() + 100).item())

# %% [markdown]
# ### Exercise 4: bake the preprocessing in
#
# Write the module `Deployable(model, mean, std)`: its `forward` takes a `uint8` batch
# `(N, 1, H, W)` of raw pixels and returns what `model` returns for the same images
# preprocessed as in training (the logits, one row per image). Keep `model` as the attribute
# `self.model`.

# %% tags=["answer:Deployable"]
class Deployable(nn.Module):
    def __init__(self, model, mean, std):
        ### BEGIN SOLUTION
        super().__init__()
        self.model = model
        self.mean, self.std = float(mean), float(std)
        ### END SOLUTION

    def forward(self, images):
        ### BEGIN SOLUTION
        return self.model((images.float() / 255.0 - self.mean) / self.std)
        ### END SOLUTION


# %% tags=["check:Deployable"]
ex.Deployable.check(Deployable)

# %% [markdown]
# ### Exercise 5: export it
#
# Write `export_model(deployable, path)`: export `deployable` (it may arrive in training mode)
# with `torch.export` so that the program takes a `uint8` batch `(N, 1, 28, 28)` of **any**
# size `N`, and save it to `path` (a `.pt2` file) with `torch.export.save`. Return nothing.
#
# Why `torch.export` and not ONNX here: the `.pt2` file needs only torch to run, the export
# takes about a second, and it keeps the lesson within its budget; the dynamo ONNX exporter
# (`torch.onnx.export(..., dynamo=True)`, lesson 09) runs the same export first and then
# converts the graph, which costs several more seconds and hundreds of MB. For a phone or a
# browser, convert the same `ExportedProgram` to ONNX.

# %% tags=["answer:export_model"]
def export_model(deployable, path):
    ### BEGIN SOLUTION
    deployable.eval()
    example = torch.zeros(2, 1, 28, 28, dtype=torch.uint8)
    program = torch.export.export(deployable, (example,), dynamic_shapes=({0: torch.export.Dim("batch")},))
    torch.export.save(program, path)
    ### END SOLUTION


# %% tags=["check:export_model"]
ex.export_model.check(export_model)

# %% [markdown]
# The course's answers at work: export the kept model, load the file as a user would (no class
# of ours needed), and score it on the validation fonts from raw pixels:

# %%
course_deployable = reference("16_capstone_files.Deployable")
course_export = reference("16_capstone_files.export_model")
course_export(course_deployable(model, recipe["mean"], recipe["std"]), data_dir / "digits.pt2")
shipped = torch.export.load(data_dir / "digits.pt2").module()
with torch.no_grad():
    preds = shipped(X_val).argmax(1)
# (the size is rounded: the program records the file names of the code it traced, so it varies
# by a few bytes from one run to the next)
print(f"{(data_dir / 'digits.pt2').stat().st_size / 2**20:.1f} MB; validation accuracy from raw pixels "
      f"{(preds == y_val).float().mean():.1%}; every tenth prediction {[classes[i] for i in preds[::10]]}")

# %% [markdown]
# **Predict the output** (value): The program was exported with a `uint8` example of shape
# (2, 1, 28, 28) and a dynamic batch. Which inputs does `shipped` accept: a
# `torch.zeros(3, 1, 28, 28)` (the float images of a user's own preprocessing), b
# `torch.zeros(3, 1, 28, 28, dtype=torch.uint8)`, c `torch.zeros(8, 1, 28, 28, dtype=torch.uint8)`,
# d `torch.zeros(3, 1, 32, 32, dtype=torch.uint8)`? Answer with the list of letters in order,
# such as `['c']`.

# %% tags=["predict:float_into_uint8_program"]
quiz.float_into_uint8_program(
    ### BEGIN PREDICTION
    ['b', 'c']
    ### END PREDICTION
)

# %% tags=["raises-exception"]
shipped(torch.zeros(3, 1, 28, 28))

# %% [markdown]
# Good: a loud error, not silent nonsense. The input's dtype and shape are part of the
# program's contract; write them down with the class list (a README next to the file).

# %% [markdown]
# ## 6. The capstone: a folder in, a classifier out
#
# ### Exercise 6: `build_classifier`
#
# Write `build_classifier(folder, path, pretrained, recipe)`: read the class folders under
# `folder` (28x28 grey images, perhaps other classes than the ten digits), fine-tune
# `pretrained` (a fresh copy of the course's letter backbone, as `load_pretrained()` gives it,
# with its `recipe`) on them, export the result to `path` as in exercise 5, and return the list
# of class names in the order of the model's outputs. You decide the recipe (what to freeze,
# the rates, the steps); the check's CPU time is limited, so keep it to a few seconds.
#
# The check writes a new folder of its own, runs your function on it, then loads **only the
# file** and scores it on images from fonts that neither that folder nor this notebook contains:
# 75 % of them must be right (the course's answer gets about 83 %). A model exported in
# training mode fails whatever it scores.

# %% tags=["answer:build_classifier"]
def build_classifier(folder, path, pretrained, recipe):
    ### BEGIN SOLUTION
    X, y, names, _ = load_folder(folder)
    model = pretrained
    model.fc = nn.Linear(model.fc.in_features, len(names))
    # few images, a related task: extract features, train the head only
    model.requires_grad_(False)
    model.eval()
    with torch.no_grad():
        features = model.features((X.float() / 255.0 - recipe["mean"]) / recipe["std"])
    model.fc.requires_grad_(True)
    optimizer = torch.optim.AdamW(model.fc.parameters(), lr=1e-2)
    for _ in range(200):
        loss = F.cross_entropy(model.fc(features), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    export_model(Deployable(model, recipe["mean"], recipe["std"]), path)
    return list(names)
    ### END SOLUTION


# %% tags=["check:build_classifier"]
ex.build_classifier.check(build_classifier)

# %% [markdown]
# ## Recap
#
# - A folder of class subfolders is a dataset: `ImageFolder` numbers the classes in sorted
#   order, and that list ships with the model.
# - Hold out whole groups (fonts, sessions, people), never single images of a group.
# - Augment in training only; normalise both with the **pretraining** statistics.
# - Stop when the validation loss has not improved for `patience` epochs, and keep the best
#   epoch's weights, not the last.
# - Ship a model that takes raw `uint8` pixels: preprocessing inside, cast to float first.
# - Export in eval mode, with a dynamic batch and an example of two or more;
#   `torch.export.save` writes a `.pt2` that loads with `torch.export.load`, no code of yours.
#
# That is the course. Next: your own folder.

# %% [markdown]
# ## Further reading
#
# PyTorch documentation:
# [`torchvision.datasets.ImageFolder`](https://docs.pytorch.org/vision/stable/generated/torchvision.datasets.ImageFolder.html)
# (the folder layout and how classes are numbered),
# [`transforms.v2`](https://docs.pytorch.org/vision/stable/transforms.html) (augmentations and
# their parameters), and [`torch.export`](https://docs.pytorch.org/docs/stable/export.html)
# (dynamic shapes, `save` and `load`, what a program can and cannot contain).
#
# The best external material:
#
# - Andrej Karpathy, [*A Recipe for Training Neural Networks*](https://karpathy.github.io/2019/04/25/recipe/)
#   (2019): become one with the data, then overfit, then regularise; read it before your own folder.
# - Kapoor and Narayanan, [*Leakage and the Reproducibility Crisis in ML-based
#   Science*](https://arxiv.org/abs/2207.07048) (Patterns, 2023): the ways a test set leaks,
#   and why a split by group matters.
