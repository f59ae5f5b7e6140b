# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 12 · Capstone: a digit classifier, end to end
#
# This project puts the course together on the handwritten digits: a data pipeline, a model,
# a training loop, an evaluation that goes beyond one accuracy number, saving and reloading,
# and finally **your own classifier**, graded on images your code never sees.
#
# 1. The data pipeline: images, a validation split, loaders.
# 2. A baseline, end to end: a small model and the training loop from lesson 05.
# 3. Evaluation: a confusion matrix and the images the model gets wrong.
# 4. Save and reload the trained model.
# 5. **The graded task**: write `DigitClassifier` that reaches **≥ 97 % accuracy on held-out
#    images within 20 seconds of CPU time for training**.
#
# **Time: about 80 minutes** on your own, the two checked exercises included (about 53 of those minutes). *Run All* alone takes about 9.6 s on a 2-core CPU.

# %%
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from course_utils.lesson_props import l05_training_lab as lab
from course_utils.datasets import digits_split
from course_utils.grading import exercises_for, predictions_for, reference
from course_utils.plotting import image_grid, plot_curves

ex = exercises_for("12_capstone")
quiz = predictions_for("12_capstone")  # predict-the-output questions

# %% [markdown]
# ## 1. The data pipeline
#
# The digits as images: `X` of shape `(N, 1, 8, 8)` (one grey channel), values in [0, 1];
# `y` int64 labels 0–9. `digits_split` holds out 360 test images. From the 1437 training
# images we hold out another 20 % for **validation**, to watch training and choose settings,
# so that the test set is used once, at the end.

# %% [markdown]
# **Predict the output** (shape): Holding out `round(0.2 * 1437)` training images for validation: what is `X_val.shape`?

# %% tags=["predict:val_shape"]
quiz.val_shape(
    ### BEGIN PREDICTION
    (287, 1, 8, 8)
    ### END PREDICTION
)

# %%
split = digits_split(images=True)
X_test, y_test = split.X_test, split.y_test
generator = torch.Generator().manual_seed(0)
perm = torch.randperm(len(split.y_train), generator=generator)
n_val = round(0.2 * len(perm))
X_val, y_val = split.X_train[perm[:n_val]], split.y_train[perm[:n_val]]
X_train, y_train = split.X_train[perm[n_val:]], split.y_train[perm[n_val:]]
print(f"train {tuple(X_train.shape)}, validation {tuple(X_val.shape)}, test {tuple(X_test.shape)}")
print("training images per class:", torch.bincount(y_train).tolist())

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
train_loader = DataLoader(TensorDataset(X_train, y_train), batch_size=64, shuffle=True,
                          generator=torch.Generator().manual_seed(0))
val_loader = DataLoader(TensorDataset(X_val, y_val), batch_size=512)
test_loader = DataLoader(TensorDataset(X_test, y_test), batch_size=512)

# %%
print(len(train_loader), "training batches")

# %% [markdown]
# ## 2. A baseline, end to end
#
# Start with the simplest thing that works: flatten each image and use a linear layer, i.e.
# multinomial logistic regression, trained with plain SGD for a few epochs. `lab.fit` is the
# loop of lesson 05: `train_one_epoch` and `evaluate` for every epoch.

# %% tags=["nbval-ignore-output"]
torch.manual_seed(0)
baseline = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(baseline.parameters(), lr=0.1)
history = lab.fit(baseline, train_loader, val_loader, loss_fn, optimizer, num_epochs=5)
plot_curves(history, title="baseline: logistic regression")
plt.show()

# %% tags=["nbval-ignore-output"]
val_loss, val_acc = lab.evaluate(baseline, val_loader, loss_fn)
print(f"baseline validation accuracy: {val_acc:.0%}")

# %% [markdown]
# A start, far from 97 %. Before improving it, look at *what* it gets wrong.

# %% [markdown]
# ## 3. Evaluation beyond accuracy
#
# A **confusion matrix** counts, for every true class (row), how often each class was
# predicted (column). The diagonal holds the correct predictions; large off-diagonal entries
# name the confusions.
#
# ### Exercise 1: `confusion_matrix`
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
# The baseline's confusion matrix on the validation images (computed with the course's
# answer), and the images it got wrong, titled `predicted/true`:

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
cm = reference("12_capstone.confusion_matrix")(val_preds, y_val, 10)
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
# ## 4. Save and reload
#
# Save the **`state_dict`** (the tensors), not the model object; to reload, build the same
# architecture and load the tensors into it. `torch.load` only unpickles tensors and plain
# containers by default (`weights_only=True`), which makes loading files from elsewhere safe.
# Lesson 09 covers checkpoints, resuming and export in depth.

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
folder = Path(tempfile.mkdtemp())
torch.save(baseline.state_dict(), folder / "baseline.pt")

restored = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
restored.load_state_dict(torch.load(folder / "baseline.pt"))
print("same predictions after reloading:", torch.equal(predict(restored, X_val), val_preds))
print("file size:", (folder / "baseline.pt").stat().st_size, "bytes")

# %% [markdown]
# ## 5. Your turn: a classifier that reaches 97 %
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
# The course's reference classifier, trained on the training split and measured once on the
# test set, with its confusion matrix and remaining mistakes (about 2 seconds):

# %% tags=["nbval-ignore-output"]
clf = reference("12_capstone.DigitClassifier")().fit(split.X_train, split.y_train)
test_preds = clf.predict(X_test)
print(f"test accuracy: {(test_preds == y_test).float().mean().item():.1%}")
show_confusion(reference("12_capstone.confusion_matrix")(test_preds, y_test, 10), "reference CNN, test set")
wrong = (test_preds != y_test).nonzero().flatten()
image_grid(X_test[wrong], y_test[wrong], test_preds[wrong], ncols=10)
plt.show()

# %% [markdown]
# ## 6. Beyond this course: the libraries around PyTorch
#
# Everything here was written with PyTorch alone, so that you see each piece. In real projects
# some of these pieces come from libraries. What each does, which code of this course it
# replaces, and where it stands (versions and dates from PyPI, November 2026):
#
# | library | what it does | replaces in this course | status |
# |---|---|---|---|
# | **Lightning** (`lightning`) | `LightningModule` + `Trainer`: the training loop, validation, early stopping, checkpoints, AMP and multi-GPU/DDP launch from flags; **Fabric** keeps your own loop and takes over devices, precision and launching | lesson 05's loop, 06's AMP and `torchrun` script, 07's checkpoint code | active (2.6, September 2026) |
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
#   test once at the end), a model, the training loop, evaluation, saving.
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
# [`torch.optim`](https://docs.pytorch.org/docs/stable/optim.html) and [Serialization
# semantics](https://docs.pytorch.org/docs/stable/notes/serialization.html), the three pages this
# project leans on.
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
