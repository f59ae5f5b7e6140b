# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 14 · Residual networks and transfer learning
#
# Lesson 08 stopped at VGG: a stack of convolutions, then `Flatten` and a `Linear`. Two ideas
# turned that into the networks people download today. **Residual blocks** (ResNet, 2015) add
# each block's input to what its layers compute, so a deep network starts close to the
# identity and trains; **global average pooling** replaces the big flattened `Linear` with one
# number per channel. And once a network has learned features on one task, you rarely start
# from scratch: you **transfer** them. Here the course has pretrained a tiny ResNet on the
# letters A to Z; you teach it the digits from five labelled images per class, and test on fonts
# nobody trained on.
#
# You will learn to
#
# 1. build a residual block, with a projection shortcut where the shape changes;
# 2. give a network a head that takes any image size;
# 3. load pretrained weights and feed them data the way they were trained (their normalisation);
# 4. find and replace a model's head (`fc` in ResNets, `classifier[-1]` in MobileNets) for a new
#    number of classes;
# 5. freeze a backbone for real (weights and BatchNorm statistics), and give the backbone a
#    lower learning rate when you fine-tune all of it;
# 6. compare feature extraction, fine-tuning and training from scratch, honestly.
#
# **Time: about 85 minutes** on your own, the six checked exercises included (about 50 of those minutes). *Run All* alone takes about 24 s on a 2-core CPU.

# %%
from course_utils.extras import require_torchvision

require_torchvision()  # one line with the install command, if torchvision is missing or mismatched

import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
import torchvision
from torch import nn
from PIL import Image
from torchvision.transforms import v2

from course_utils import glyphs
from course_utils.grading import exercises_for, predictions_for, reference
from course_utils.lesson_props.l14_transfer_learning import HELD_OUT_FONTS, GlyphResNet, load_pretrained, render_tensors

ex = exercises_for("14_transfer_learning")
quiz = predictions_for("14_transfer_learning")  # predict-the-output questions
torch.set_num_threads(1)  # the same sums in the same order on every machine: the printed accuracies repeat
_ = torch.manual_seed(0)

# %% [markdown]
# ## 1. The residual block
#
# A VGG block computes `y = F(x)`. A residual block computes `y = ReLU(F(x) + x)`: its layers
# only learn the *change* to `x`. With `F`'s weights near zero the block passes `x` through,
# so stacking more blocks cannot make the network worse at the start, and the gradient reaches
# early layers through the `+ x` path undiminished. In torchvision's `BasicBlock`, `F` is
# conv3x3 → BatchNorm → ReLU → conv3x3 → BatchNorm, and the ReLU comes **after** the addition.
#
# When the block changes the shape (a stride of 2 halves the size, or the channel count
# changes), `x` cannot be added as it is: a **projection shortcut**, a 1x1 convolution with
# the same stride followed by BatchNorm, brings it to the new shape. torchvision calls it
# `downsample`.

# %% [markdown]
# **Predict the output** (value): How many parameters has the projection shortcut of a block from
# 8 to 16 channels with stride 2: `nn.Sequential(nn.Conv2d(8, 16, 1, stride=2, bias=False), nn.BatchNorm2d(16))`?

# %% tags=["predict:shortcut_params"]
quiz.shortcut_params(
    ### BEGIN PREDICTION
    160
    ### END PREDICTION
)

# %%
shortcut = nn.Sequential(nn.Conv2d(8, 16, 1, stride=2, bias=False), nn.BatchNorm2d(16))
print({name: tuple(p.shape) for name, p in shortcut.named_parameters()})
print("parameters:", sum(p.numel() for p in shortcut.parameters()))

# %% [markdown]
# ### Exercise 1: a residual block
#
# Write `ResidualBlock(in_channels, out_channels, stride=1)` with torchvision's names:
# `conv1` (3x3, `stride`, padding 1, no bias: BatchNorm follows), `bn1`, `conv2` (3x3, padding 1,
# no bias), `bn2`, and `downsample`: the projection (1x1 convolution with `stride`, no bias,
# then BatchNorm2d) **only** where `x` cannot be added as it is; where it can, anything
# that adds `x` unchanged (`None`, `nn.Identity()`, an empty `nn.Sequential()`). Decide where
# the two ReLUs go. The check loads the same weights into your block and the course's, and
# compares them in training and in eval mode.

# %% tags=["answer:ResidualBlock"]
class ResidualBlock(nn.Module):
    def __init__(self, in_channels, out_channels, stride=1):
        ### BEGIN SOLUTION
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.downsample = nn.Identity()
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(out_channels))
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.downsample(x))
        ### END SOLUTION


# %% tags=["check:ResidualBlock"]
ex.ResidualBlock.check(ResidualBlock)

# %% [markdown]
# Without the projection, a block that halves the size fails at the addition. This is the
# error you meet when a shortcut is missing:

# %% tags=["raises-exception"]
main_path = nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False)
x = torch.randn(2, 8, 28, 28)
main_path(x) + x

# %% [markdown]
# ## 2. A head for any image size
#
# VGG ended in `Flatten` and a `Linear`. A teammate gave the digit reader such a head, for the
# 28x28 glyphs: the residual layers turn an image into a `(N, 32, 7, 7)` feature map, and the head
# flattens it into a `Linear` of `32 * 7 * 7` inputs. It works on the glyphs:

# %%
net = GlyphResNet(num_classes=10).eval()


def feature_map(x):
    """The residual layers of `net`: everything before its pooling and its head."""
    return net.layer3(net.layer2(net.layer1(F.relu(net.bn1(net.conv1(x))))))


flatten_head = nn.Sequential(nn.Flatten(), nn.Linear(32 * 7 * 7, 10))
glyph = torch.randn(2, 1, 28, 28)
print("28x28:", tuple(feature_map(glyph).shape), "->", tuple(flatten_head(feature_map(glyph)).shape))

# %% [markdown]
# The app then receives its first scans, 36x36:

# %% tags=["raises-exception"]
scan = torch.randn(2, 1, 36, 36)
flatten_head(feature_map(scan))

# %% [markdown]
# ### Exercise 2: a head that takes any size
#
# Read the error: which of its numbers comes from the image size, and which part of the head
# fixed the other when it was built? Write `global_avg_pool(x)`, the step between a feature map
# `(N, C, H, W)` and a head `nn.Linear(C, k)`: it returns `(N, C)` for **any** `H` and `W`. The
# head's weights are learned at one size and used at others, so the same content at a larger
# size must give features on the same scale, not larger ones; and every position of a channel
# must count in its feature (a stroke anywhere, and the gradient reaches all of them). The check
# uses non-square sizes, 1x1 maps and single images.

# %% tags=["answer:global_avg_pool"]
def global_avg_pool(x):
    ### BEGIN SOLUTION
    return x.mean(dim=(2, 3))
    ### END SOLUTION


# %% tags=["check:global_avg_pool"]
ex.global_avg_pool.check(global_avg_pool)

# %% [markdown]
# The flattened head counted positions: 7 x 7 of them at 28x28, 9 x 9 at 36x36, and its weight
# matrix had one column per position. Averaging each channel over its positions leaves `C`
# numbers whatever the size: that is a ResNet's **global average pooling** (torchvision:
# `nn.AdaptiveAvgPool2d(1)` then `torch.flatten(x, 1)`), and the `fc` after it has `C` inputs.
# The course's answer with a `Linear(32, 10)` head, at three sizes:

# %%
course_gap = reference("14_transfer_learning.global_avg_pool")  # the course's answer to exercise 2
pooled_head = nn.Linear(32, 10)
for size in (28, 36, 20):
    print(f"{size}x{size}:", tuple(pooled_head(course_gap(feature_map(torch.randn(2, 1, size, size)))).shape))

# %% [markdown]
# **Predict the output** (shape): What is the shape of `x.mean(dim=(2, 3))` for `x = torch.randn(8, 32, 7, 7)`?

# %% tags=["predict:gap_shape"]
quiz.gap_shape(
    ### BEGIN PREDICTION
    (8, 32)
    ### END PREDICTION
)

# %%
x = torch.randn(8, 32, 7, 7)
print("mean over H and W:", tuple(x.mean(dim=(2, 3)).shape))
print("AdaptiveAvgPool2d(1):", tuple(nn.AdaptiveAvgPool2d(1)(x).shape))

# %% [markdown]
# ## 3. A backbone pretrained on letters
#
# The course trained `GlyphResNet` (a 3x3 stem, three residual blocks of 8, 16 and 32 channels,
# global average pooling, `fc`) on the 26 letters rendered from 16 of matplotlib's fonts, with
# `tools/pretrain_glyph_backbone.py`: seeded, deterministic, under a minute on a CPU. The
# weights (85 KB, safetensors) ship with the course, with their recipe beside them:

# %%
pretrained, recipe = load_pretrained()
print(pretrained.fc)
print(f"letters on {len(recipe['test_fonts'])} unseen fonts: {recipe['test_accuracy']:.1%} "
      f"(chance {1 / len(recipe['letters']):.1%}); seed {recipe['seed']}, {recipe['epochs']} epochs")
print("the recipe's keys:", ", ".join(recipe))

# %% [markdown]
# The new task: the ten digits, **five labelled images per class** (one image from each of five
# fonts), tested on the six fonts that neither the pretraining nor these labels ever used. We
# write them as PNG files in class folders, as lesson 13 did, in a temporary folder:

# %%
scratch = tempfile.TemporaryDirectory(prefix="lesson14_")  # deleted when the kernel stops
data_dir = Path(scratch.name)
few_fonts = ("DejaVuSans", "DejaVuSerif-Bold", "STIXGeneral", "cmr10", "DejaVuSansMono")
train_root = glyphs.make_image_folder(data_dir / "train", chars=glyphs.DIGITS, per_font=1, fonts=few_fonts, seed=1)
test_root = glyphs.make_image_folder(data_dir / "test", chars=glyphs.DIGITS, per_font=4, fonts=HELD_OUT_FONTS, seed=2)
print(sorted(p.name for p in train_root.iterdir())[:4], "...")
print("held-out fonts:", HELD_OUT_FONTS)


# %% [markdown]
# ## 4. The model's own preprocessing
#
# A pretrained network learned its features on inputs prepared one particular way, and its
# BatchNorm layers recorded the statistics of those inputs. Which way was this one's? Lesson 13
# standardised its images with their own mean and std. Here is that habit, applied to the digits:

# %%
def load_folder(root, transform):
    """Every image of an ImageFolder as one batch (small data: no DataLoader loop needed)."""
    folder = torchvision.datasets.ImageFolder(
        root, transform=transform,  # PIL reads the PNG in gray ("L"); torchvision 0.29 deprecates its own decoders
        loader=lambda path: v2.functional.pil_to_tensor(Image.open(path).convert("L")))
    X = torch.stack([folder[i][0] for i in range(len(folder))])
    return X, torch.tensor(folder.targets), folder.classes


def own_statistics(images, recipe):
    x = images.float() / 255
    return (x - x.mean()) / x.std()


raw_train, y_train, classes = load_folder(train_root, None)
print("classes:", classes, " images:", tuple(raw_train.shape), raw_train.dtype)
print(f"digits' own mean {(raw_train / 255).mean():.4f} std {(raw_train / 255).std():.4f}")

# %% [markdown]
# Is that what the backbone expects? The recipe is your evidence: it reports the letter accuracy
# the weights reached on the six unseen fonts. New drawings of those letters, classified the way
# an app will classify them, one image at a time:

# %%
letters, letter_labels, _ = render_tensors(recipe["letters"], HELD_OUT_FONTS, per_font=1, seed=7)


@torch.no_grad()
def letter_accuracy(prepare, batch_size=1):
    """The pretrained letter model's accuracy on `letters`, each batch of `batch_size` prepared on its own."""
    x = torch.cat([prepare(part, recipe) for part in letters.split(batch_size)])
    return (pretrained.eval()(x).argmax(1) == letter_labels).float().mean().item()


print(f"the recipe reports {recipe['test_accuracy']:.1%}; own statistics: "
      f"{letter_accuracy(own_statistics, len(letters)):.1%} with all {len(letters)} letters at once, "
      f"{letter_accuracy(own_statistics):.1%} one at a time")

# %% [markdown]
# ### Exercise 3: preprocess as the backbone expects
#
# Write `preprocess(images, recipe)`: uint8 images `(N, 1, H, W)` (0-255) to the float tensor
# this backbone needs in order to do what its recipe reports, however many images arrive at once
# (one included). `recipe` is a dict like the one above: the weights' metadata, as torchvision's
# `weights.meta` is. The check draws recipes with other numbers and images whose own statistics
# are far from them. Decide which of its entries describe the inputs, and on which scale of pixel
# values they were measured. `letter_accuracy(preprocess)` tells you whether you reproduce the
# reported accuracy one image at a time (within a few points: these are new drawings).

# %% tags=["answer:preprocess"]
def preprocess(images, recipe):
    ### BEGIN SOLUTION
    return (images.float() / 255.0 - recipe["mean"]) / recipe["std"]
    ### END SOLUTION


# %% tags=["check:preprocess"]
ex.preprocess.check(preprocess)

# %% [markdown]
# The own statistics moved with the batch: one thin letter alone is standardised differently
# from the same letter among 156, and the backbone sees another input. The pretraining's mean
# and std (measured on pixels scaled to [0, 1], as lesson 13's `ToDtype(..., scale=True)` gives)
# are fixed, so every image gets the same treatment, alone or in a crowd. The digits get them
# too, not their own, and not ImageNet's (which belong to ImageNet's models); torchvision bundles
# them with its weights, `weights.transforms()`. The course's answer, one letter at a time:

# %%
course_preprocess = reference("14_transfer_learning.preprocess")  # the course's answer to exercise 3
print(f"one at a time: {letter_accuracy(course_preprocess):.1%}")

# %% [markdown]
# The same thing as a torchvision transform pipeline, applied while the files are read:

# %%
to_input = v2.Compose([v2.ToDtype(torch.float32, scale=True), v2.Normalize([recipe["mean"]], [recipe["std"]])])
X_train, _, _ = load_folder(train_root, to_input)
X_test, y_test, _ = load_folder(test_root, to_input)
print("train", tuple(X_train.shape), "test", tuple(X_test.shape),
      "same as preprocess:", torch.allclose(X_train, course_preprocess(raw_train, recipe), atol=1e-6))

# %% [markdown]
# ## 5. Replacing the head
#
# The letter model ends in `fc = Linear(32, 26)`: 26 letters. For ten digits the last layer
# must be **replaced** by a new `Linear(32, 10)`; everything before it is the backbone you
# keep. torchvision's ImageNet models work the same way. With a network connection,
#
# ```python
# weights = torchvision.models.ResNet18_Weights.IMAGENET1K_V1
# model = torchvision.models.resnet18(weights=weights)  # downloads 45 MB once, to ~/.cache/torch
# preprocess = weights.transforms()                      # resize, crop, ImageNet's mean and std
# ```
#
# gives the pretrained model and *its* preprocessing. Offline, we build two architectures without
# weights to see where each keeps its head:

# %%
resnet = torchvision.models.resnet18(weights=None, num_classes=1000)
mobilenet = torchvision.models.mobilenet_v3_small(weights=None, num_classes=1000)
print("resnet18:", [name for name, _ in resnet.named_children()])
print("mobilenet_v3_small:", [name for name, _ in mobilenet.named_children()])
print(mobilenet.classifier)

# %% [markdown]
# `resnet18(weights=None, num_classes=10)` would build a 10-class head directly, but with
# random weights everywhere: with pretrained weights you load first, then replace the head.
#
# ### Exercise 4: replace the head, wherever the model keeps it
#
# A teammate wrote the team's `replace_head` for resnet18, and it does give resnet18 ten outputs:
#
# ```python
# def replace_head(model, num_classes):
#     model.fc = nn.Linear(512, num_classes)
#     return model
# ```
#
# The team also fine-tunes `GlyphResNet` and MobileNet-like models. Try the teammate's function on
# `load_pretrained()[0]` and on `mobilenet` above: what happens, and why does one of them give no
# error at all? Then write `replace_head(model, num_classes)` that gives **any** of these models a
# new, trainable head for `num_classes` classes and returns the model. Everything else stays as it
# was: the pretrained layers (all of them), which parameters are frozen, the modes. The check
# uses GlyphResNets and small MobileNet-like models.

# %% tags=["answer:replace_head"]
def replace_head(model, num_classes):
    ### BEGIN SOLUTION
    # the head is the last layer the features pass through: in these models (and torchvision's
    # classifiers) the last Linear registered, `fc` or `classifier[-1]`
    name, old = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Linear)][-1]
    model.set_submodule(name, nn.Linear(old.in_features, num_classes))
    return model
    ### END SOLUTION


# %% tags=["check:replace_head"]
ex.replace_head.check(replace_head)

# %% [markdown]
# ## 6. Freezing the backbone: parameters *and* BatchNorm
#
# **Feature extraction** trains only the new head on the frozen backbone's features. Setting
# `requires_grad_(False)` freezes the weights, but BatchNorm's running mean and variance are
# buffers that a forward pass **in training mode** updates anyway. Here is that mistake, with
# the head replaced the course's way (`reference(...)` is the course's answer to exercise 4):

# %%
course_replace_head = reference("14_transfer_learning.replace_head")
model, _ = load_pretrained()
model = course_replace_head(model, 10)
for name, p in model.named_parameters():
    if not name.startswith("fc."):
        p.requires_grad_(False)
model.train()  # what every training loop does at the start of an epoch
before = model.bn1.running_mean.clone()
with torch.no_grad():
    model(X_train)
print("frozen weights, yet bn1.running_mean moved by", round(float((model.bn1.running_mean - before).abs().max()), 4))

# %% [markdown]
# The backbone drifts towards the 50 digit images' statistics, and its features change under the
# head that is learning them. The frozen part must be in **eval mode** (and stay there: a loop
# that calls `model.train()` every epoch undoes it).

# %% [markdown]
# **Predict the output** (value): In `GlyphResNet(num_classes=10)` (final feature width 32) every
# parameter except `fc`'s is frozen. How many parameters still require grad?

# %% tags=["predict:trainable_after_freeze"]
quiz.trainable_after_freeze(
    ### BEGIN PREDICTION
    330
    ### END PREDICTION
)

# %%
print("trainable:", sum(p.numel() for p in model.parameters() if p.requires_grad),
      "of", sum(p.numel() for p in model.parameters()))

# %% [markdown]
# ### Exercise 5: freeze everything but `fc`
#
# Write `freeze_all_but_fc(model)`: freeze every part of `model` except its head `model.fc`,
# so that a training step (a forward pass in the modes your function leaves, then an optimizer
# step) changes nothing but the head, and return what the optimizer should be given.

# %% tags=["answer:freeze_all_but_fc"]
def freeze_all_but_fc(model):
    ### BEGIN SOLUTION
    for name, child in model.named_children():
        if name != "fc":
            child.requires_grad_(False)
            child.eval()
    return list(model.fc.parameters())
    ### END SOLUTION


# %% tags=["check:freeze_all_but_fc"]
ex.freeze_all_but_fc.check(freeze_all_but_fc)

# %% [markdown]
# ## 7. Fine-tuning everything, gently
#
# **Full fine-tuning** trains the backbone too, but the pretrained features are already good: a
# large learning rate would wreck them in a few steps, while the new head starts random and needs
# a large one. Parameter groups give each its own rate (lesson 06): the head at `head_lr`, the
# backbone at a smaller `backbone_lr`.
#
# ### Exercise 6: parameter groups for fine-tuning
#
# The teammate of exercise 4 wrote the groups for `torch.optim.AdamW(groups)`:
#
# ```python
# def finetune_param_groups(model, head_lr, backbone_lr):
#     return [{"params": model.parameters(), "lr": backbone_lr},
#             {"params": model.fc.parameters(), "lr": head_lr}]
# ```
#
# Try `torch.optim.AdamW(...)` on its groups for a GlyphResNet: what does AdamW refuse, and why?
# Then write `finetune_param_groups(model, head_lr, backbone_lr)` for **any** model of exercise 4
# (a head in `fc` or the last layer of `classifier`): the new head at `head_lr`, every pretrained
# parameter at `backbone_lr`, each group saying its own `"lr"` (do not rely on the optimizer's
# default).

# %% tags=["answer:finetune_param_groups"]
def finetune_param_groups(model, head_lr, backbone_lr):
    ### BEGIN SOLUTION
    head = [m for m in model.modules() if isinstance(m, nn.Linear)][-1]  # as in exercise 4: the last layer
    head_ids = {id(p) for p in head.parameters()}
    backbone = [p for p in model.parameters() if id(p) not in head_ids]
    return [{"params": backbone, "lr": backbone_lr}, {"params": list(head.parameters()), "lr": head_lr}]
    ### END SOLUTION


# %% tags=["check:finetune_param_groups"]
ex.finetune_param_groups.check(finetune_param_groups)

# %% [markdown]
# ## 8. Three ways to learn the digits from 50 images
#
# The same budget for each: 60 steps of AdamW on the 50 images (each step the whole set, shifted
# by up to two pixels), then accuracy on the 240 images of the six unseen fonts.
#
# - **(a) feature extraction**: the backbone frozen in eval mode, only the new head trains;
# - **(b) full fine-tuning**: everything trains, the backbone at a tenth of the head's rate;
# - **(c) from scratch**: the same network, random weights, one rate.
#
# `fit` sets no mode: the caller decides (that is the BatchNorm lesson above).

# %%
def fit(model, optimizer, X, y, steps=60, seed=0):
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        dx, dy = (int(v) for v in torch.randint(-2, 3, (2,), generator=gen))
        loss = F.cross_entropy(model(torch.roll(X, (dy, dx), (2, 3))), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model


@torch.no_grad()
def test_accuracy(model):
    model.eval()
    return (model(X_test).argmax(1) == y_test).float().mean().item()


course_freeze = reference("14_transfer_learning.freeze_all_but_fc")
course_groups = reference("14_transfer_learning.finetune_param_groups")
results = {}
_ = torch.manual_seed(0)
model = course_replace_head(load_pretrained()[0], 10).train()
head_params = course_freeze(model)
results["(a) feature extraction"] = test_accuracy(fit(model, torch.optim.AdamW(head_params, lr=1e-2), X_train, y_train))
_ = torch.manual_seed(0)
model = course_replace_head(load_pretrained()[0], 10).train()
groups = course_groups(model, head_lr=1e-2, backbone_lr=1e-3)
results["(b) full fine-tuning"] = test_accuracy(fit(model, torch.optim.AdamW(groups), X_train, y_train))
_ = torch.manual_seed(0)
model = GlyphResNet(num_classes=10).train()
results["(c) from scratch"] = test_accuracy(fit(model, torch.optim.AdamW(model.parameters(), lr=1e-2), X_train, y_train))
for name, acc in results.items():
    print(f"{name:24} {acc:.1%} on the unseen fonts (chance 10%)")

# %% [markdown]
# What these numbers say, and what they do not. With five images per class, both pretrained
# starts beat the same network trained from scratch by a wide margin: letters taught the
# backbone strokes, curves and their sizes, and digits are made of the same. The scratch run is
# also the least converged after 60 steps (the budget was the same, not tuned for each), so the
# gap is partly speed; with 50 images, a random network mostly memorises its five fonts either
# way. Feature extraction beat full fine-tuning here, but one run on 240 test images is not a
# ranking: a 95 % interval on each is about ±5 points, and the order moves with the seed, the
# step count and the rates. The usual rule of thumb: few labels and a related task, extract
# features (330 parameters to fit, not 20,000); more labels or a task further away, fine-tune,
# with a lower rate for the backbone.
#
# What goes wrong if the preprocessing does not match? The same feature-extraction run with the
# digits normalised by **ImageNet's** grey statistics instead of the pretraining ones:

# %%
_ = torch.manual_seed(0)
model = course_replace_head(load_pretrained()[0], 10).train()
head_params = course_freeze(model)
imagenet_norm = v2.Compose([v2.ToDtype(torch.float32, scale=True), v2.Normalize([0.449], [0.226])])
X_imagenet, _, _ = load_folder(train_root, imagenet_norm)
fit(model, torch.optim.AdamW(head_params, lr=1e-2), X_imagenet, y_train)
X_test_pretrain_stats = X_test
X_test, _, _ = load_folder(test_root, imagenet_norm)
print(f"feature extraction with ImageNet's statistics: {test_accuracy(model):.1%}")
X_test = X_test_pretrain_stats

# %% [markdown]
# A few points lost here, where the two statistics are close (0.449 and 0.226 against 0.371 and
# 0.300); the frozen BatchNorm layers expect the old scale, and nothing in training corrects it.
# On photos given to a model trained on sketches, or the other way round, the gap is larger.

# %% [markdown]
# ## Recap
#
# - A residual block is `ReLU(F(x) + shortcut(x))`: ReLU after the addition, BatchNorm before it,
#   and a 1x1-convolution projection (with BatchNorm) only where stride or channels change.
# - Global average pooling, `x.mean(dim=(2, 3))`, makes the head independent of the image size.
# - Feed a pretrained model its own preprocessing: the pretraining mean and std
#   (`weights.transforms()` in torchvision), not the new data's.
# - Replace the head where the model keeps it (`fc`, `classifier[-1]`) with a new
#   `Linear(old.in_features, k)`; do not append to it, and keep every pretrained layer before it.
# - Freezing is `requires_grad_(False)` **and** eval mode for the frozen part: BatchNorm's running
#   statistics are buffers that a training-mode forward pass updates.
# - Fine-tune with parameter groups: every parameter once, the backbone at the lower rate.
# - With few labels, a pretrained backbone beats training from scratch; measure on held-out
#   fonts (or users, or sites), never on the ones you trained on.
#
# Next: **15**, a small GPT: the other half of deep learning, sequences.

# %% [markdown]
# ## Further reading
#
# PyTorch documentation:
# [torchvision models and pretrained weights](https://docs.pytorch.org/vision/stable/models.html)
# (every `weights=` enum, its `transforms()` and its accuracy), the
# [transfer learning tutorial](https://docs.pytorch.org/tutorials/beginner/transfer_learning_tutorial.html)
# (feature extraction and fine-tuning of a ResNet-18 on ants and bees), and
# [per-parameter options of `torch.optim`](https://docs.pytorch.org/docs/stable/optim.html#per-parameter-options).
#
# The best external material:
#
# - He, Zhang, Ren and Sun, [*Deep Residual Learning for Image Recognition*](https://arxiv.org/abs/1512.03385)
#   (CVPR 2016): the residual block, projection shortcuts and global average pooling; read
#   sections 3.1-3.3.
# - Yosinski, Clune, Bengio and Lipson, [*How transferable are features in deep neural
#   networks?*](https://arxiv.org/abs/1411.1792) (NeurIPS 2014): early layers are general,
#   later ones specific, and why fine-tuning beats freezing when data allows.
