# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 13 · Images from files
#
# Until now every dataset arrived as one tensor. Real image data is a folder of files: one
# file per image, a folder per class or a CSV of labels. This first project lesson reads such a
# folder with the `Dataset`/`DataLoader` of lesson 04, trains lesson 08's kind of CNN with
# lesson 05's loop, and makes the decisions that files force on you: how to hold data out, which
# statistics to normalise with, which augmentation keeps the label.
#
# You will learn to
#
# 1. write a `Dataset` that reads the files a CSV lists, lazily, one file per item;
# 2. do the same with `torchvision.datasets.ImageFolder` and `torchvision.transforms.v2`;
# 3. hold out data **by group** (here: by font), and measure a random split against it;
# 4. compute normalisation statistics from the training split only;
# 5. order a transform pipeline: `ToImage` -> `ToDtype(scale=True)` -> `Normalize`;
# 6. choose an augmentation that keeps the label, and measure what it does to overfitting.
#
# **Time: about 85 minutes** on your own, the five checked exercises included (about 42 of those minutes). *Run All* alone takes about 28 s on a 2-core CPU.

# %% [markdown]
# This lesson needs **torchvision**, built for your torch. The first cell says how to install
# the pair if it is missing (torchvision's wheels pin their torch: 0.28 goes with torch 2.13).

# %%
from course_utils.extras import require_torchvision

require_torchvision()  # one line with the install command if torchvision is missing, then stop
import torchvision  # noqa: E402
from torchvision import datasets  # noqa: E402
from torchvision.transforms import v2  # noqa: E402

print("torchvision", torchvision.__version__)

# %%
import csv
import shutil
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch
from PIL import Image
from torch import nn
from torch.utils.data import DataLoader, Dataset, Subset

from course_utils.glyphs import LETTERS, make_image_folder, make_received_folder
from course_utils.grading import exercises_for, predictions_for, reference

ex = exercises_for("13_images_from_files")
quiz = predictions_for("13_images_from_files")  # predict-the-output questions
_ = torch.manual_seed(0)


def show(images, titles, ncols=10):
    """A grid of (N, 1, H, W) images in [0, 1], one title each."""
    nrows = -(-len(images) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(ncols, nrows * 1.15), squeeze=False)
    for ax, image, title in zip(axes.flat, images, titles):
        ax.imshow(image[0], cmap="gray", vmin=0, vmax=1)
        ax.set_title(title, fontsize=8)
    for ax in axes.flat:
        ax.axis("off")
    fig.tight_layout()

# %% [markdown]
# ## 1. The data: a folder of PNG files
#
# `course_utils.glyphs` draws the letters A to J in the 22 fonts that matplotlib ships, each
# with its own random size, tilt, stroke, contrast and noise: the recipe of **notMNIST**
# (Yaroslav Bulatov, 2011), made offline and the same on every run. The fonts are DejaVu
# (Bitstream Vera licence), STIX (SIL Open Font Licence 1.1) and Computer Modern (BaKoMa's
# TrueType version, its own free licence); the licence files sit next to the fonts in
# matplotlib's `mpl-data/fonts`. Three images per letter and font, 28x28 grey pixels, written
# into a temporary folder (never into the course):

# %%
workdir = Path(tempfile.mkdtemp(prefix="glyphs-"))
root = make_image_folder(workdir / "letters", chars=LETTERS, per_font=3)
print(sorted(p.name for p in root.iterdir()))
print(len(list(root.glob("*/*.png"))), "PNG files;", "first lines of labels.csv:")
print("".join((root / "labels.csv").read_text().splitlines(keepends=True)[:4]), end="")

# %% [markdown]
# One folder per class, and a CSV that also records each image's font. Four images of each
# letter, from four fonts:

# %%
with open(root / "labels.csv", newline="") as f:
    rows = list(csv.DictReader(f))
shown = [r for r in rows if r["font"] in ("DejaVuSans", "cmr10", "STIXGeneralItalic", "DejaVuSansMono-Bold")
         and r["file"].endswith("-0.png")]
# PIL decodes the PNG; `pil_to_tensor` makes it a uint8 (C, H, W) tensor. (torchvision 0.29
# deprecates its own decoders, `torchvision.io.decode_image`, for TorchCodec's.)
images = torch.stack([v2.functional.pil_to_tensor(Image.open(root / r["file"])) for r in shown]) / 255
show(images, [f'{r["label"]} {r["font"]}'[:12] for r in shown])
plt.show()

# %% [markdown]
# ## 2. A `Dataset` that reads files
#
# The lesson-04 contract again: `__len__` and `__getitem__`. With files there are more
# decisions: **when** to read them, and what to do with files and rows that are not what you
# expected.
#
# ### Exercise 1: `GlyphFiles`
#
# A teammate hands you their folder of letters, `received`, and a model they trained on it with
# torchvision's `ImageFolder` (section 3). Its `labels.csv` has the same columns (`file`, a path
# inside the folder; `label`; `font`). It is the folder as the team left it, nobody cleaned it
# for you: look at its rows and open a few of its files before you decide anything.

# %%
received = make_received_folder(workdir / "received", chars="CAB", per_font=1, fonts=("DejaVuSans", "cmr10"))
print((received / "labels.csv").read_text(), end="")

# %% [markdown]
# Complete `GlyphFiles(root, transform=None)`, a `Dataset` over such a folder. `ds[i]` is
# `(image, label)`: `image` float32 `(1, H, W)` in `[0, 1]` (then `transform(image)` if given),
# `label` an `int`, and `ds.classes` (a list) and `ds.class_to_idx` (a dict) name the classes.
# What it must do, the decisions are yours:
#
# - every item is an example a training loop can use, and the teammate's model, given your
#   `image`, must read your `label` as the same class its `ImageFolder` would have given the file;
# - the annotators keep fixing images while you train: `ds[i]` returns the file as it is on disk
#   when you ask, and the real folder has a million images;
# - the notebook's working directory is not `root`.

# %% tags=["answer:GlyphFiles"]
class GlyphFiles(Dataset):
    """(image float32 (1, H, W) in [0, 1], label int) for each row of root/labels.csv, read lazily."""

    def __init__(self, root, transform=None):
        ### BEGIN SOLUTION
        self.root = Path(root)
        self.transform = transform
        with open(self.root / "labels.csv", newline="", encoding="utf-8") as f:
            self.rows = [(r["file"], r["label"]) for r in csv.DictReader(f) if r["label"]]  # "": not labelled yet
        self.classes = sorted({label for _, label in self.rows})
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}
        ### END SOLUTION

    def __len__(self):
        ### BEGIN SOLUTION
        return len(self.rows)
        ### END SOLUTION

    def __getitem__(self, i):
        ### BEGIN SOLUTION
        file, label = self.rows[i]
        with Image.open(self.root / file) as im:  # some files are RGB: three copies of the grey
            pixels = np.asarray(im.convert("L"), dtype=np.float32) / 255
        image = torch.from_numpy(pixels).unsqueeze(0)
        if self.transform is not None:
            image = self.transform(image)
        return image, self.class_to_idx[label]
        ### END SOLUTION


# %% tags=["check:GlyphFiles"]
ex.GlyphFiles.check(GlyphFiles)

# %% [markdown]
# What the folder asked of you. The rows with an empty label are images nobody has labelled
# yet: no item (a loss needs a class) and no class (`""` would take number 0 and shift every
# other class). A third of the files are RGB with the grey stored three times: one grey channel
# for all, or a batch cannot even be stacked. The numbering is `ImageFolder`'s, sorted names,
# whatever order the CSV's rows come in. And **when** to read: reading every image in
# `__init__` works for 660 small files and fails for a million large ones, and shows the pixels
# a file had then; opening file `i` in `__getitem__` costs almost no memory, and `num_workers`
# can then read files in parallel.

# %% [markdown]
# ## 3. `ImageFolder` and `transforms.v2`
#
# A folder per class is common enough that torchvision reads it for you:
# `datasets.ImageFolder(root, transform=...)` lists `root/<class>/*`, numbers the classes in
# **sorted** order of their folder names and opens a file in `__getitem__` with PIL. It
# ignores `labels.csv` (not an image). `transforms.v2.ToImage()` turns a PIL image into a
# tensor.

# %% [markdown]
# **Predict the output** (shape): The PNGs are 28x28 grayscale. What is the shape of
# `datasets.ImageFolder(root, transform=v2.ToImage())[0][0]`?

# %% tags=["predict:imagefolder_shape"]
quiz.imagefolder_shape(
    ### BEGIN PREDICTION
    (3, 28, 28)
    ### END PREDICTION
)

# %% [markdown]
# **Predict the output** (dtype): And its dtype?

# %% tags=["predict:imagefolder_dtype"]
quiz.imagefolder_dtype(
    ### BEGIN PREDICTION
    torch.uint8
    ### END PREDICTION
)

# %%
folder = datasets.ImageFolder(root, transform=v2.ToImage())
image, label = folder[0]
print(len(folder), "images;", "item 0:", tuple(image.shape), image.dtype, "label", label)
path, target = folder.samples[0]
print(Path(path).relative_to(root), target)

# %% [markdown]
# Three channels: `ImageFolder`'s default loader converts every file to RGB, so a grey image
# comes back three times. `v2.Grayscale(1)` (or a `loader=` of your own) gives one channel
# back. And `uint8`, 0 to 255: the bytes of the file, not yet numbers a network wants.
#
# The numbering is the sorted folder names, the same as `GlyphFiles` gives from the CSV:

# %%
print(folder.class_to_idx)
print(folder.class_to_idx == reference("13_images_from_files.GlyphFiles")(root).class_to_idx)

# %% [markdown]
# **Predict the output** (value): A folder holds the classes `J`, `A` and `7`, written in that
# order. What is its `ImageFolder(...).class_to_idx`?

# %% tags=["predict:class_to_idx"]
quiz.class_to_idx(
    ### BEGIN PREDICTION
    {"7": 0, "A": 1, "J": 2}
    ### END PREDICTION
)

# %%
mixed = make_image_folder(workdir / "mixed", chars="JA7", per_font=1, fonts=("DejaVuSans",))
print(datasets.ImageFolder(mixed).class_to_idx)

# %% [markdown]
# Sorted as strings: digits before upper-case letters, and `"10"` before `"9"`: name folders
# `09`, `10` if numbers must sort as numbers.
#
# Forget the `ToImage` and the items are PIL images. The dataset works, the DataLoader does
# not: its default `collate_fn` knows how to stack tensors, NumPy arrays and numbers, not
# pictures. The error you will meet:

# %% tags=["raises-exception"]
next(iter(DataLoader(datasets.ImageFolder(root), batch_size=4)))

# %% [markdown]
# ## 4. Hold out fonts, not images
#
# A random split puts three images of the *same letter in the same font* on both sides. The
# model may then score by recognising a font's drawing it has seen, and the test accuracy
# would say more than the model does on a new font. The images of one font form a **group**:
# hold out whole groups. `ImageFolder` names each file; the font is in its name:

# %%
fonts = [Path(path).stem.rsplit("-", 1)[0] for path, _ in folder.samples]
print(fonts[:4], "...", len(set(fonts)), "fonts")

# %% [markdown]
# ### Exercise 2: `split_by_font`
#
# `split_by_font(fonts, n_test_fonts, generator)` gets each item's font (a list of strings)
# and returns `(train_idx, test_idx)`, two 1-D int64 tensors of item positions: all the items
# of `n_test_fonts` fonts, chosen at random **with the generator** only, go to test, the rest to
# train. Every item lands on exactly one side; the same generator seed gives the same split,
# whatever order the items come in.

# %% tags=["answer:split_by_font"]
def split_by_font(fonts, n_test_fonts, generator):
    """(train_idx, test_idx): every item of n_test_fonts randomly chosen fonts in test."""
    ### BEGIN SOLUTION
    names = sorted(set(fonts))
    order = torch.randperm(len(names), generator=generator).tolist()
    held_out = {names[j] for j in order[:n_test_fonts]}
    in_test = torch.tensor([f in held_out for f in fonts], dtype=torch.bool)
    return (~in_test).nonzero().flatten(), in_test.nonzero().flatten()
    ### END SOLUTION


# %% tags=["check:split_by_font"]
ex.split_by_font.check(split_by_font)

# %% [markdown]
# **Predict the output** (value): Five of the 22 fonts held out: how many test images?

# %% tags=["predict:test_images"]
quiz.test_images(
    ### BEGIN PREDICTION
    150
    ### END PREDICTION
)

# %%
train_idx, test_idx = reference("13_images_from_files.split_by_font")(fonts, 5, torch.Generator().manual_seed(0))
print(len(train_idx), "train images,", len(test_idx), "test images;",
      "test fonts:", sorted({fonts[i] for i in test_idx.tolist()}))

# %% [markdown]
# ## 5. Normalisation statistics, from the training split only
#
# `Normalize(mean, std)` centres each channel and scales it to about unit spread. Which mean
# and std? Those of the **training** images: the test images stand for data you have not seen
# yet, and nothing about them may shape the model, its preprocessing included. And not
# ImageNet's `(0.485, 0.456, 0.406)`: those describe colour photos, not grey glyphs.
#
# ### Exercise 3: `train_stats`
#
# `train_stats(dataset, train_idx)` returns `(mean, std)`, two float32 tensors of shape `(C,)`:
# per channel, the mean and the standard deviation of **all the pixels of all the training
# images** (`dataset[i]` is `(image (C, H, W), label)`). Go through a `DataLoader` in batches,
# as you would for a dataset too big to stack. The std of all pixels is not the mean of
# per-batch or per-image stds. Population or sample std: with this many pixels the two agree
# to 4 digits, and either passes.

# %% tags=["answer:train_stats"]
def train_stats(dataset, train_idx):
    """Per-channel (mean, std) of every pixel of the training items, accumulated over batches."""
    ### BEGIN SOLUTION
    loader = DataLoader(Subset(dataset, train_idx.tolist()), batch_size=64)
    total = total_sq = count = 0
    for images, _ in loader:
        images = images.double()
        total = total + images.sum(dim=(0, 2, 3))
        total_sq = total_sq + (images**2).sum(dim=(0, 2, 3))
        count += images.numel() // images.shape[1]
    mean = total / count
    std = (total_sq / count - mean**2).clamp_min(0).sqrt()
    return mean.float(), std.float()
    ### END SOLUTION


# %% tags=["check:train_stats"]
ex.train_stats.check(train_stats)

# %%
to_float = v2.Compose([v2.Grayscale(1), v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])
plain = datasets.ImageFolder(root, transform=to_float)
mean, std = reference("13_images_from_files.train_stats")(plain, train_idx)
all_mean, all_std = reference("13_images_from_files.train_stats")(plain, torch.arange(len(plain)))
print(f"training split: mean {mean.item():.4f}, std {std.item():.4f}")
print(f"all images:     mean {all_mean.item():.4f}, std {all_std.item():.4f}")

# %% [markdown]
# Close here: the held-out fonts are drawn like the others. The rule is not about the size of
# the difference: whatever is computed from the data (statistics, a vocabulary, a feature
# selection) is computed from the training split, or the test score is no longer a measurement
# on unseen data.

# %% [markdown]
# ## 6. The order of a transform pipeline
#
# Each `v2` transform expects a certain input: `Normalize` wants a float tensor, `ToDtype(...,
# scale=True)` maps `uint8` 0..255 to 0..1, `ToImage` turns a PIL image into a tensor.
# `Normalize` on the bytes is refused outright:

# %% tags=["raises-exception"]
v2.Compose([v2.ToImage(), v2.Normalize([0.2], [0.3])])(datasets.ImageFolder(root)[0][0])

# %% [markdown]
# ### Exercise 4: `make_transform`
#
# `make_transform(mean, std)` returns the transform that turns an image **as `ImageFolder`
# loads it** (PIL, RGB) into a float32 tensor `(1, H, W)` normalised with the given per-channel
# statistics (sequences of one float each). Decide which steps it needs and their order.

# %% tags=["answer:make_transform"]
def make_transform(mean, std):
    """ImageFolder's PIL image -> float32 (1, H, W), normalised with (mean, std)."""
    ### BEGIN SOLUTION
    from torchvision.transforms import v2  # imported here too: the course's graders load this answer without torchvision
    return v2.Compose([
        v2.Grayscale(num_output_channels=1),
        v2.ToImage(),
        v2.ToDtype(torch.float32, scale=True),
        v2.Normalize(mean=list(mean), std=list(std)),
    ])
    ### END SOLUTION


# %% tags=["check:make_transform"]
ex.make_transform.check(make_transform)

# %% [markdown]
# ## 7. A small CNN, trained on the files
#
# Lesson 08's kind of network, lesson 05's loop. 660 small images fit in memory, so each split
# is read through `ImageFolder` once and stacked; a dataset of a million files would stay a
# `Dataset` and go through a `DataLoader` with `num_workers`.

# %%
transform = reference("13_images_from_files.make_transform")(mean.tolist(), std.tolist())
normalised = datasets.ImageFolder(root, transform=transform)
X = torch.stack([normalised[i][0] for i in range(len(normalised))])
y = torch.tensor(normalised.targets)
print("X", tuple(X.shape), X.dtype, f"mean {X[train_idx].mean():.3f}, std {X[train_idx].std():.3f}")


def small_cnn():
    return nn.Sequential(  # stride-2 convolutions instead of pooling: a quarter of the work
        nn.Conv2d(1, 16, 3, padding=1, stride=2), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1, stride=2), nn.ReLU(),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10),
    )


def fit(model, loader, num_epochs=12, lr=3e-3):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for _ in range(num_epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss_fn(model(xb), yb).backward()
            optimizer.step()
    return model


@torch.no_grad()
def accuracy(model, X, y):
    model.eval()
    return (model(X).argmax(dim=1) == y).float().mean().item()


def train_and_test(train_set, tr, te, seed=0):
    """Train a fresh small_cnn on train_set; accuracy on the (normalised) images tr and te."""
    torch.manual_seed(seed)
    loader = DataLoader(train_set, batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(seed))
    model = fit(small_cnn(), loader)
    return accuracy(model, X[tr], y[tr]), accuracy(model, X[te], y[te])

# %% [markdown]
# The same model, the same number of test images, two ways of choosing them:

# %%
perm = torch.randperm(len(X), generator=torch.Generator().manual_seed(0))
random_test, random_train = perm[:len(test_idx)], perm[len(test_idx):]
_, random_acc = train_and_test(list(zip(X[random_train], y[random_train])), random_train, random_test)
font_train_acc, font_acc = train_and_test(list(zip(X[train_idx], y[train_idx])), train_idx, test_idx)
print(f"test accuracy, random split: {random_acc:.0%}")
print(f"test accuracy, font split:   {font_acc:.0%}   (letters in fonts the model never saw)")

# %% [markdown]
# Measured, not assumed: on this data the two numbers are close. 150 test images give each
# accuracy a noise of about ±3.5 points (the binomial standard error), and over other seeds the
# two splits trade places. Each image here has its own random size, tilt, stroke, contrast and
# noise, so three images of one font share little more than the font's shape. Where the images
# of a group are near-copies (frames of one video, scans of one patient, notMNIST's many
# near-duplicates) a random split puts copies of test images into training and reports far
# more than a new group will get. The font split's number is the honest one either way: it is
# what a new font gets.
#
# ## 8. Augmentation that keeps the label
#
# An augmentation changes a training image at random each time it is read, so the network
# sees more variety than the files hold. It must keep the **label** true. A horizontal flip
# suits a photo of a cat; for letters it is wrong: a mirrored J, F or G is no letter at all (and
# a mirrored b is a d):

# %%
glyph = torch.stack([plain[i][0] for i in (5 * 66, 6 * 66, 9 * 66)])  # an F, a G and a J
show(torch.cat([glyph, v2.functional.horizontal_flip(glyph)]), ["F", "G", "J", "F flipped", "G flipped", "J flipped"],
     ncols=3)
plt.show()

# %% [markdown]
# ### Exercise 5: `make_augment`
#
# `make_augment()` returns a random transform for a training image: a float32 tensor
# `(1, H, W)` with values in `[0, 1]` (before `Normalize`). It must change images (differently
# each call), keep their shape and dtype, and keep every letter the same letter. Choose from
# `transforms.v2` (`RandomAffine`, `RandomRotation`, `RandomPerspective`, `GaussianBlur`,
# `ElasticTransform`, ...). The grader applies it to letters that a flip or a large rotation
# turns into no letter, and finds out what your transform did to them.

# %% tags=["answer:make_augment"]
def make_augment():
    """A random, label-preserving transform of a float (1, H, W) glyph in [0, 1]."""
    ### BEGIN SOLUTION
    from torchvision.transforms import v2  # imported here too: the course's graders load this answer without torchvision
    return v2.RandomAffine(degrees=10, translate=(0.1, 0.1), scale=(0.9, 1.1))
    ### END SOLUTION


# %% tags=["check:make_augment"]
ex.make_augment.check(make_augment)

# %% [markdown]
# Does it help? Train on the training fonts with and without it, and compare the accuracy on the
# training images with the accuracy on the held-out fonts. The gap between the two is the
# overfitting. The augmentation runs in `__getitem__`, so each epoch sees new versions:

# %%
class Augmented(Dataset):
    """Training images in [0, 1], augmented, then normalised: a new version at every read."""

    def __init__(self, X, y, augment, mean, std):
        self.X, self.y, self.augment = X, y, augment
        self.normalize = v2.Normalize(mean.tolist(), std.tolist())

    def __len__(self):
        return len(self.X)

    def __getitem__(self, i):
        return self.normalize(self.augment(self.X[i])), self.y[i]


X01 = torch.stack([plain[i][0] for i in train_idx.tolist()])  # [0, 1], not normalised yet
augmented = Augmented(X01, y[train_idx], reference("13_images_from_files.make_augment")(), mean, std)
aug_train_acc, aug_acc = train_and_test(augmented, train_idx, test_idx)
for name, tr_acc, te_acc in (("without augmentation", font_train_acc, font_acc),
                             ("with augmentation", aug_train_acc, aug_acc)):
    print(f"{name:22}: train {tr_acc:.0%}, held-out fonts {te_acc:.0%}, gap {tr_acc - te_acc:+.0%}")

# %% [markdown]
# With augmentation the network cannot memorise each training image's exact pixels: the
# accuracy on the training images drops and the gap shrinks. Whether the held-out fonts gain,
# and how much, depends on the data, the epochs and the run (mind the ±3.5 points): measure it on
# your own data, with a split by group, before you trust it.

# %%
shutil.rmtree(workdir)  # the temporary folder of this lesson

# %% [markdown]
# ## Recap
#
# - A file `Dataset` reads its index (a CSV) in `__init__` and opens one file per
#   `__getitem__`: little memory, and DataLoader workers can read in parallel.
# - `ImageFolder` numbers classes by their **sorted** folder names, loads RGB PIL images, and
#   needs `ToImage` before the DataLoader can collate.
# - Hold out whole groups (fonts, patients, speakers): a random split can overstate accuracy;
#   measure both (here they were close, within the noise of 150 test images).
# - Normalisation statistics come from the training split, all its pixels, per channel.
# - `ToImage` -> `ToDtype(float32, scale=True)` -> `Normalize`.
# - An augmentation must keep the label: small shifts and rotations keep a letter; flips do not.
#
# Next: lesson 14 starts from a network trained on millions of images instead of from
# scratch.

# %% [markdown]
# ## Further reading
#
# - [`torch.utils.data`](https://docs.pytorch.org/docs/stable/data.html): `Dataset`, `Subset`,
#   `DataLoader` and the default collate that refuses PIL images.
# - [torchvision datasets](https://pytorch.org/vision/stable/datasets.html): `ImageFolder`,
#   `DatasetFolder` and the built-in datasets.
# - [Transforms v2](https://pytorch.org/vision/stable/transforms.html): every transform, and
#   "Getting started with transforms v2" for the order of a pipeline.
# - [Writing custom datasets, DataLoaders and transforms](https://pytorch.org/tutorials/beginner/data_loading_tutorial.html):
#   the PyTorch tutorial that reads images listed in a CSV.
# - [notMNIST](https://yaroslavvb.blogspot.com/2011/09/notmnist-dataset.html): Yaroslav
#   Bulatov's letters rendered from many fonts, the recipe of this lesson's data.
# - [scikit-learn's `GroupKFold` and `GroupShuffleSplit`](https://scikit-learn.org/stable/modules/cross_validation.html#group-k-fold):
#   splitting by group, with cross-validation.
