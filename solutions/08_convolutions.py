# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 08 · Convolutions
#
# An MLP sees an image as a flat list of numbers: move a digit one pixel to the right and,
# to the MLP, it is a different input. A **convolution** slides one small set of weights over
# the whole image, so a stroke detector learned in one corner works everywhere, with a
# fraction of the parameters. Today's convolutional networks are built mostly from four layers:
# `Conv2d`, `BatchNorm2d`, `ReLU` and `MaxPool2d`. The classics show how that set grew. LeNet-5
# (1998) alternated convolutions with average-pooling ("subsampling") layers and squashed with
# tanh-like activations. VGG (2014) stacked 3x3 convolutions with ReLU and 2x2 max-pooling;
# BatchNorm came a year later and was added to VGG afterwards (torchvision's `vgg16_bn`).
# ResNet (2015) uses BatchNorm and ReLU too, but its key idea is the **residual connection**: each
# block adds its input to what its layers compute, which lets networks of more than 100 layers
# train; it shrinks the image mostly with stride-2 convolutions and ends in global average pooling. This lesson
# takes the four layers apart and then puts them together, VGG-style, on the handwritten digits.
#
# You will learn to
#
# 1. hold images channels-first, `(N, C, H, W)`, and read the error when they are not;
# 2. say what one output pixel of `Conv2d` is, and compute it yourself;
# 3. predict output sizes from kernel size, stride, padding and dilation;
# 4. count a convolution's parameters (and see why it has so few);
# 5. pool, normalise per channel with `BatchNorm2d`, and size the `Linear` after `nn.Flatten`;
# 6. work out how much of the image one output pixel sees: its receptive field;
# 7. build and train a small VGG-style CNN on the digits.
#
# **Time: about 90 minutes** on your own, the six checked exercises included (about 48 of those minutes). *Run All* alone takes about 6.9 s on a 2-core CPU.

# %%
import math
import time

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.datasets import digits_split
from course_utils.grading import exercises_for, predictions_for

ex = exercises_for("08_convolutions")
quiz = predictions_for("08_convolutions")  # predict-the-output questions
_ = torch.manual_seed(0)

# %% [markdown]
# ## 1. Images are channels-first
#
# PyTorch stores a batch of images as `(N, C, H, W)`: batch, channels, height, width. The
# digits have one grey channel and 8x8 pixels; a colour photo would have `C = 3`.

# %%
split = digits_split(images=True)
X_train, y_train, X_test, y_test = split
print("train images:", tuple(X_train.shape), X_train.dtype, "labels:", tuple(y_train.shape))

# %% [markdown]
# A `Conv2d` layer is made with the number of channels it takes in and gives out, and a
# kernel size. Its weight holds one `(in_channels, kh, kw)` filter per output channel:

# %% [markdown]
# **Predict the output** (shape): What is the shape of `nn.Conv2d(1, 6, kernel_size=3)` applied to 4 images of shape (1, 8, 8)?

# %% tags=["predict:conv_output_shape"]
quiz.conv_output_shape(
    ### BEGIN PREDICTION
    (4, 6, 6, 6)
    ### END PREDICTION
)

# %%
conv = nn.Conv2d(in_channels=1, out_channels=6, kernel_size=3)
print("weight:", tuple(conv.weight.shape), " bias:", tuple(conv.bias.shape))
print("output:", tuple(conv(X_train[:4]).shape))

# %% [markdown]
# Images from NumPy, PIL or matplotlib are usually channels-last, `(N, H, W, C)`. What happens
# if we pass four such images (8x8, one channel) to the layer? It reads the *height* (8) as
# the number of channels:

# %% [markdown]
# **Predict the output** (value): The same `Conv2d(1, 6, 3)` refuses channels-last images `x` of shape (4, 8, 8, 1). Which of these give it the same images, channels first: a `x.transpose(1, 3)`, b `x.permute(0, 3, 1, 2)`, c `x.reshape(4, 1, 8, 8)`? Answer with the list of letters in order, such as `['c']`.

# %% tags=["predict:channels_last_error"]
quiz.channels_last_error(
    ### BEGIN PREDICTION
    ['b', 'c']
    ### END PREDICTION
)

# %% tags=["raises-exception"]
images_hwc = X_train[:4].permute(0, 2, 3, 1)  # (4, 8, 8, 1), as NumPy would store them
conv(images_hwc)

# %% [markdown]
# "expected input[4, 8, 8, 1] to have 1 channels, but got 8 channels instead": the channel
# count is read from dimension 1. Move the channels there with `permute(0, 3, 1, 2)`; a shape
# that merely fits is not enough (element `[n, h, w, c]` must land at `[n, c, h, w]`):

# %%
right = torch.einsum("nhwc->nchw", images_hwc)  # element [n, h, w, c] goes to [n, c, h, w]
candidates = {"a": images_hwc.transpose(1, 3), "b": images_hwc.permute(0, 3, 1, 2),
              "c": images_hwc.reshape(4, 1, 8, 8)}
for name, t in candidates.items():
    print(name, tuple(t.shape), "same images:", torch.equal(t, right))

# %% [markdown]
# A single image may also come without a batch dimension, `(C, H, W)`; the layer then returns
# `(C_out, H', W')`.

# %%
print(tuple(conv(images_hwc.permute(0, 3, 1, 2)).shape), tuple(conv(X_train[0]).shape))

# %% [markdown]
# ## 2. What one output pixel is
#
# Output channel `o` at position `(i, j)` is the sum of the 3x3 patch of the input under the
# filter, multiplied element by element with filter `o`, plus bias `o`. Let us check one pixel:

# %%
x = X_train[:1]                       # (1, 1, 8, 8)
out = conv(x)                         # (1, 6, 6, 6)
o, i, j = 2, 3, 1
patch = x[0, :, i:i + 3, j:j + 3]     # (1, 3, 3): all input channels, a 3x3 window
by_hand = (patch * conv.weight[o]).sum() + conv.bias[o]
print(f"layer: {out[0, o, i, j].item():.5f}   by hand: {by_hand.item():.5f}")

# %% [markdown]
# Notice what is *not* there: the filter is not flipped. Mathematicians' convolution flips
# the kernel; PyTorch's `conv2d`, like other deep learning libraries, computes a
# **cross-correlation**. For learned weights the difference does not matter (training would
# just learn the flipped filter), but it does when you reproduce a layer by hand. Flipping the filter gives a different number:

# %%
flipped = (patch * conv.weight[o].flip(-1, -2)).sum() + conv.bias[o]
print(f"with the kernel flipped: {flipped.item():.5f}")

# %% [markdown]
# ## 3. Output sizes: kernel, stride, padding, dilation
#
# An 8x8 image and a 3x3 kernel gave a 6x6 output: the window fits in 6 positions along each
# axis. Before running the next cell, predict the sizes: what do `stride=2` (move 2 pixels at
# a time), `padding=1` (a border of zeros) and `dilation=2` (taps 2 pixels apart, so the 3x3
# kernel spans 5x5) do to an 8x8 input?

# %% [markdown]
# **Predict the output** (shape): What is the output shape of `nn.Conv2d(1, 1, 3, stride=2, padding=1)` on `torch.zeros(1, 1, 8, 8)`?

# %% tags=["predict:stride2_pad1_shape"]
quiz.stride2_pad1_shape(
    ### BEGIN PREDICTION
    (1, 1, 4, 4)
    ### END PREDICTION
)

# %%
x = torch.zeros(1, 1, 8, 8)
for kwargs in [{}, {"stride": 2}, {"padding": 1}, {"padding": 1, "stride": 2},
               {"dilation": 2}, {"padding": "same"}, {"kernel_size": 1}]:
    layer = nn.Conv2d(1, 1, **{"kernel_size": 3, **kwargs})
    print(f"{str(kwargs):36} -> {tuple(layer(x).shape[2:])}")

# %% [markdown]
# ### Exercise 1: the output size
#
# Write `conv_output_size(size, kernel_size, stride=1, padding=0, dilation=1)`: the length of
# the output along one axis, a Python `int`, for any input where at least one window fits.
# Nobody gives you the formula: work it out from what the layers do. The table above is a
# start; `nn.Conv2d` is here to measure any case you are unsure of (an odd size with
# `stride=2`, a dilated kernel with padding). Which windows fit, and what happens to a window
# that would stick out past the edge?

# %% tags=["answer:conv_output_size"]
def conv_output_size(size, kernel_size, stride=1, padding=0, dilation=1):
    ### BEGIN SOLUTION
    return (size + 2 * padding - dilation * (kernel_size - 1) - 1) // stride + 1
    ### END SOLUTION


# %% tags=["check:conv_output_size"]
ex.conv_output_size.check(conv_output_size)

# %% [markdown]
# The rule: pad the input (`size + 2 * padding`), find how many input pixels the kernel spans
# (`dilation * (kernel_size - 1) + 1`), and count the positions, stepping by `stride`. A
# window that would stick out past the edge is dropped, so the division rounds **down**:
#
# $$\text{out} = \left\lfloor \frac{\text{size} + 2\,\text{padding} - \text{dilation}\,(\text{kernel} - 1) - 1}{\text{stride}} \right\rfloor + 1$$
#
# `padding="same"` picks the padding that keeps the size (only for `stride=1`); `padding=1`
# with a 3x3 kernel does the same, which is why it is everywhere. Height and width follow the
# same rule separately: kernels, strides and paddings can differ per axis, `kernel_size=(3, 5)`.

# %% [markdown]
# ### Exercise 2: a convolution by hand
#
# A teammate is porting a trained model to a microcontroller with no deep learning library. Before
# translating the layers to C, they wrote the convolution as plain loops in PyTorch, to compare it
# with `F.conv2d`:

# %%
def teammates_conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1):
    x = F.pad(x, (padding, padding))
    n, _, h, w = x.shape
    c_out, _, kh, kw = weight.shape
    kernel = weight.flip(-1, -2)  # a convolution flips its kernel, as in the textbook
    h_out = (h - dilation * (kh - 1) - 1) // stride + 1
    w_out = (w - dilation * (kw - 1) - 1) // stride + 1
    out = torch.zeros(n, c_out, h_out, w_out)
    for i in range(h_out):
        for j in range(w_out):
            patch = x[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = torch.einsum("nchw,ochw->no", patch, kernel)
    if bias is not None:
        out = out + bias.reshape(1, c_out, 1, 1)
    return out


# %% [markdown]
# Their comparison, on a batch of 8x8 images with 3 channels and two 3x3 kernels: `w` drawn at
# random, and `w_sym`, which equals its own mirror image (`w_sym.flip(-1, -2)` is `w_sym`):

# %%
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 3, 8, 8, generator=g)
w = torch.randn(4, 3, 3, 3, generator=g)
w_sym = (w + w.flip(-1, -2)) / 2
b = torch.randn(4, generator=g)
for name, weight, settings in [("w_sym", w_sym, {}), ("w_sym", w_sym, {"stride": 2}), ("w", w, {}),
                               ("w_sym", w_sym, {"padding": 1}), ("w_sym", w_sym, {"dilation": 2})]:
    want, got = F.conv2d(x, weight, b, **settings), teammates_conv2d(x, weight, b, **settings)
    if got.shape != want.shape:
        verdict = f"shape {tuple(got.shape)}, F.conv2d gives {tuple(want.shape)}"
    else:
        diff = (got - want).abs().max().item()
        verdict = ("matches" if diff < 1e-4 else "differs") + f" (max |difference| {diff:.1e})"
    print(f"{name:5} {str(settings):16} {verdict}")

# %% [markdown]
# Repair it: write `conv2d_by_hand(x, weight, bias=None, stride=1, padding=0, dilation=1)` that
# returns exactly what `F.conv2d(x, weight, bias, stride, padding, dilation)` returns: `x` is
# `(N, C_in, H, W)`, `weight` is `(C_out, C_in, kh, kw)` (kernels need not be square), `bias`
# is `(C_out,)` or `None`; stride, padding and dilation are ints. Read each line of the table:
# what does a line that passes have that a failing one lacks, and which line of the teammate's
# code does that point at? The port keeps the rule the teammate followed: **no `F.conv2d`,
# `nn.Conv2d` or any other built-in convolution** (the check watches for them); `F.pad` is
# allowed.

# %% tags=["answer:conv2d_by_hand"]
def conv2d_by_hand(x, weight, bias=None, stride=1, padding=0, dilation=1):
    ### BEGIN SOLUTION
    x = F.pad(x, (padding, padding, padding, padding))  # zeros on all four sides
    n, _, h, w = x.shape
    c_out, _, kh, kw = weight.shape
    h_out = (h - dilation * (kh - 1) - 1) // stride + 1
    w_out = (w - dilation * (kw - 1) - 1) // stride + 1
    rows = []
    for i in range(h_out):
        cols = []
        for j in range(w_out):
            top, left = i * stride, j * stride
            patch = x[:, :, top:top + dilation * (kh - 1) + 1:dilation,
                      left:left + dilation * (kw - 1) + 1:dilation]  # (N, C_in, kh, kw)
            cols.append(torch.einsum("nchw,ochw->no", patch, weight))  # (N, C_out)
        rows.append(torch.stack(cols, dim=-1))  # (N, C_out, W_out)
    out = torch.stack(rows, dim=-2)  # (N, C_out, H_out, W_out)
    if bias is not None:
        out = out + bias.reshape(1, c_out, 1, 1)
    return out
    ### END SOLUTION


# %% tags=["check:conv2d_by_hand"]
ex.conv2d_by_hand.check(conv2d_by_hand)

# %% [markdown]
# ## 4. Parameter counts
#
# A convolution's weight is `(C_out, C_in, kh, kw)` and its bias `(C_out,)`, whatever the
# image size. How many parameters does a layer mapping a 1-channel 8x8 image to 16 channels
# need, compared with a `Linear` layer making the same number of outputs from the same image?

# %% [markdown]
# **Predict the output** (value): How many parameters has `nn.Conv2d(1, 16, kernel_size=3, padding=1)`?

# %% tags=["predict:conv_param_count"]
quiz.conv_param_count(
    ### BEGIN PREDICTION
    160
    ### END PREDICTION
)

# %%
def n_params(module):
    return sum(p.numel() for p in module.parameters())


conv = nn.Conv2d(1, 16, kernel_size=3, padding=1)             # 16 x 8 x 8 outputs
dense = nn.Linear(1 * 8 * 8, 16 * 8 * 8)                      # the same number of outputs
print(f"Conv2d: {n_params(conv):>6} parameters, Linear: {n_params(dense):>6} parameters")
print(f"a Linear from a 224x224 RGB image to 1000 units: {224 * 224 * 3 * 1000 + 1000:,} parameters")

# %% [markdown]
# 160 against 66 560: the convolution shares one 3x3 filter across every position, and its
# count does not grow with the image. The price is an assumption (the same pattern matters
# everywhere), which suits images.
#
# `groups=g` splits the channels into `g` groups, each filter seeing only `C_in / g` input
# channels; `groups = C_in = C_out` is a **depthwise** convolution, one filter per channel
# (MobileNet's building block):

# %%
for groups in (1, 4, 32):
    layer = nn.Conv2d(32, 32, 3, groups=groups)
    print(f"groups={groups:>2}: weight {tuple(layer.weight.shape)}, {n_params(layer)} parameters")

# %% [markdown]
# ### Exercise 3: which layer has this many parameters?
#
# A teammate's network was saved as weights and a printed summary; the code that built it is
# lost. To rebuild it you need, for every `Conv2d` line of the summary, arguments that give that
# layer exactly its parameter count (a layer with another count cannot load its weights):

# %%
summary = [(3, 32, 896), (32, 32, 320), (32, 64, 2048), (64, 64, 28672), (1, 6, 156)]
print(f"{'layer':>6} {'in':>4} {'out':>4} {'parameters':>11}")
for line, (c_in, c_out, count) in enumerate(summary, 1):
    print(f"{'conv' + str(line):>6} {c_in:>4} {c_out:>4} {count:>11,}")

# %% [markdown]
# Write `conv_param_count(in_channels, out_channels, n_params)`: return a dict of keyword
# arguments, `kernel_size`, `bias` and `groups`, such that `nn.Conv2d(in_channels, out_channels,
# **config)` has exactly `n_params` parameters. Every line comes from a real layer, so a
# configuration always exists; when several fit, any one will do. Decide which arguments the
# count depends on, and which values of them to try: the summary's lines do not all come from
# plain 3x3 layers. Building a layer and counting is a good way to test a guess.

# %% tags=["answer:conv_param_count"]
def conv_param_count(in_channels, out_channels, n_params):
    ### BEGIN SOLUTION
    fits = []
    for groups in range(1, in_channels + 1):
        if in_channels % groups or out_channels % groups:
            continue  # nn.Conv2d refuses groups that do not divide both channel counts
        for bias in (True, False):
            weights = n_params - (out_channels if bias else 0)
            per_tap = out_channels * (in_channels // groups)  # the weight is (out, in // groups, kh, kw)
            if weights > 0 and weights % per_tap == 0:
                area = weights // per_tap
                kh = max(d for d in range(1, math.isqrt(area) + 1) if area % d == 0)
                fits.append({"kernel_size": kh if kh * kh == area else (kh, area // kh), "bias": bias, "groups": groups})
    # the likeliest layer: a square kernel if one fits, then the fewest groups, then a bias (the default)
    if not fits:
        return None
    return min(fits, key=lambda c: not isinstance(c["kernel_size"], int))
    ### END SOLUTION


# %% tags=["check:conv_param_count"]
ex.conv_param_count.check(conv_param_count)

# %% [markdown]
# The count is `out_channels * (in_channels // groups) * kh * kw`, plus `out_channels` with a
# bias. Line 2 fits no `groups=1` layer; the one square fit is a depthwise 3x3 (`groups=32`,
# MobileNet's building block); line 4 fits no square kernel (with `groups=1` its area is 7, a
# prime), but `(1, 7)` fits (Inception factorises a 7x7 into a 1x7 and a 7x1); and LeNet's line fits a 5x5 kernel with a bias as well as a 1x26
# one without: a count alone does not always pin a layer down, which is why checkpoints store
# the weights' shapes too.

# %% [markdown]
# ## 5. Pooling
#
# `nn.MaxPool2d(k)` keeps the largest value of each k x k window, for every channel on its
# own. It has no parameters, and **its stride defaults to the kernel size**, so windows do not
# overlap and a 2x2 pool halves height and width (rounding down, like the convolution rule):

# %%
x = torch.arange(16.0).reshape(1, 1, 4, 4)
print(x[0, 0])
print("MaxPool2d(2):\n", nn.MaxPool2d(2)(x)[0, 0])
print("AvgPool2d(2):\n", nn.AvgPool2d(2)(x)[0, 0])
print("parameters:", n_params(nn.MaxPool2d(2)), " 7x5 input ->", tuple(nn.MaxPool2d(2)(torch.zeros(1, 1, 7, 5)).shape[2:]))

# %% [markdown]
# ### Exercise 4: max-pooling by hand
#
# Write `max_pool_by_hand(x, kernel_size, stride=None)` for `x` of shape `(N, C, H, W)`: the
# result of `F.max_pool2d(x, kernel_size, stride)` (square windows, no padding; `stride=None`
# means `stride = kernel_size`). **Without `F.max_pool2d` or `nn.MaxPool2d`**. Values can be
# negative.

# %% tags=["answer:max_pool_by_hand"]
def max_pool_by_hand(x, kernel_size, stride=None):
    ### BEGIN SOLUTION
    stride = kernel_size if stride is None else stride
    windows = x.unfold(2, kernel_size, stride).unfold(3, kernel_size, stride)  # (N, C, H', W', k, k)
    return windows.amax(dim=(-2, -1))
    ### END SOLUTION


# %% tags=["check:max_pool_by_hand"]
ex.max_pool_by_hand.check(max_pool_by_hand)

# %% [markdown]
# ## 6. `BatchNorm2d`: one mean and variance per channel
#
# `nn.BatchNorm1d` (lesson 03) normalises each feature over the batch. `nn.BatchNorm2d(C)`
# treats each **channel** as a feature: in training mode it normalises with the mean and
# variance over the batch *and all pixels*, dimensions `(N, H, W)`, then scales and shifts
# with two learned numbers per channel:

# %%
bn = nn.BatchNorm2d(3)
x = torch.randn(8, 3, 5, 5) * 4 + 10
y = bn(x)  # training mode: batch statistics
mean = x.mean(dim=(0, 2, 3), keepdim=True)
var = x.var(dim=(0, 2, 3), unbiased=False, keepdim=True)
print("matches (x - mean) / sqrt(var + eps):", torch.allclose(y, (x - mean) / torch.sqrt(var + bn.eps), atol=1e-5))
print("parameters:", [(name, tuple(p.shape)) for name, p in bn.named_parameters()])
print("buffers:   ", [(name, tuple(b.shape)) for name, b in bn.named_buffers()])

# %% [markdown]
# In eval mode it uses the running averages it collected instead, so a prediction does not
# depend on the rest of the batch (`model.eval()` before predicting, as in lesson 03). Since
# BatchNorm subtracts each channel's mean, a bias in the convolution before it is cancelled
# (in training mode exactly, as the next cell shows; BatchNorm's own shift takes its place):
# write `nn.Conv2d(..., bias=False)` before a `BatchNorm2d`.

# %%
conv = nn.Conv2d(3, 4, 3, bias=True)
bn = nn.BatchNorm2d(4)
x = torch.randn(8, 3, 6, 6)
before = bn(conv(x))
with torch.no_grad():
    conv.bias.add_(5.0)  # shift every channel by 5
print("bias changed, output unchanged:", torch.allclose(before, bn(conv(x)), atol=1e-4))

# %% [markdown]
# ## 7. From feature maps to classes: `nn.Flatten`
#
# After the convolutions, `nn.Flatten()` turns `(N, C, H, W)` into `(N, C*H*W)` for a `Linear`
# classifier. The `Linear` must be told that size. Here is a model that forgot the pooling when
# computing it (8 channels x 8 x 8 = 512, but the pool left 4x4). Read the error before the
# explanation:

# %% tags=["raises-exception"]
model = nn.Sequential(
    nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(8 * 8 * 8, 10),
)
model(X_train[:4])

# %% [markdown]
# "mat1 and mat2 shapes cannot be multiplied (4x128 and 512x10)" (from PyTorch 2.15 the message
# starts with the operation, `addmm:`, the multiply-and-add inside `nn.Linear`): the first matrix
# is the flattened batch, 4 images of 128 numbers (8 channels x 4 x 4); the second is the
# `Linear` weight (transposed), expecting 512. Three fixes:
#
# 1. compute it: each 2x2 pool halves the size, rounding down (exercise 1's formula for the
#    convolutions);
# 2. ask the model: run a dummy batch through the layers before the `Linear` and read the shape;
# 3. let PyTorch do it: `nn.LazyLinear(10)` learns its input size on the first forward.

# %%
features = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())
with torch.no_grad():
    n_flat = features(torch.zeros(1, 1, 8, 8)).shape[1]
print("flattened size:", n_flat)
lazy = nn.Sequential(features, nn.LazyLinear(10))
print("LazyLinear after one forward:", lazy(X_train[:4]).shape, lazy[1])

# %% [markdown]
# ## 8. Receptive field: how much of the image one output sees
#
# A pixel after one 3x3 convolution depends on a 3x3 patch of the input; after two, on 5x5.
# Pooling makes the next kernel reach further: after a stride-2 layer, neighbouring pixels are
# 2 input pixels apart. Gradients show it: the gradient of one output pixel with respect to
# the input is non-zero exactly on the pixels it sees. (We measure with average pooling: it
# looks at the same windows as max-pooling, but sends gradient to every pixel of a window,
# where max-pooling sends it only to the largest.) For a stack of 3x3 convolutions and 2x2
# pools, how wide is it?

# %%
def seen_width(layers, size=32):
    """Width, in input pixels, of the region one central output pixel depends on."""
    x = torch.zeros(1, 1, size, size, requires_grad=True)
    out = layers(x)
    out[0, 0, out.shape[2] // 2, out.shape[3] // 2].backward()
    cols = x.grad[0, 0].abs().sum(dim=0).nonzero()
    return int(cols.max() - cols.min() + 1)


def ones_conv(k, stride=1, dilation=1):
    layer = nn.Conv2d(1, 1, k, stride=stride, dilation=dilation, bias=False)
    nn.init.ones_(layer.weight)  # positive weights: no cancellation hides a pixel
    return layer


stacks = {
    "3x3": nn.Sequential(ones_conv(3)),
    "3x3, 3x3": nn.Sequential(ones_conv(3), ones_conv(3)),
    "3x3, pool 2": nn.Sequential(ones_conv(3), nn.AvgPool2d(2)),
    "3x3, pool 2, 3x3": nn.Sequential(ones_conv(3), nn.AvgPool2d(2), ones_conv(3)),
    "3x3, pool 2, 3x3, pool 2": nn.Sequential(ones_conv(3), nn.AvgPool2d(2), ones_conv(3), nn.AvgPool2d(2)),
    "3x3 dilation 2": nn.Sequential(ones_conv(3, dilation=2)),
}
for name, layers in stacks.items():
    print(f"{name:26} sees {seen_width(layers)} input pixels across")

# %% [markdown]
# ### Exercise 5: the receptive field
#
# Write `receptive_field(layers)`: `layers` is a list of `(kernel_size, stride, dilation)`
# tuples, from the input side (a 2x2 max-pool is `(2, 2, 1)`); return the width, in input
# pixels, of the region one output pixel depends on (an `int`; padding does not change it).
# Work the rule out from the measurements above, and measure more stacks with `seen_width` to
# test your idea (a stride-2 convolution, two pools in a row, a dilated layer after a pool):
# how much does one more layer widen the field, and in whose pixels is that widening counted?

# %% tags=["answer:receptive_field"]
def receptive_field(layers):
    ### BEGIN SOLUTION
    rf, jump = 1, 1  # one output pixel sees 1 input pixel; neighbours are `jump` pixels apart
    for kernel_size, stride, dilation in layers:
        rf += (kernel_size - 1) * dilation * jump
        jump *= stride
    return rf
    ### END SOLUTION


# %% tags=["check:receptive_field"]
ex.receptive_field.check(receptive_field)

# %% [markdown]
# Each layer with kernel `k` and dilation `d` widens the field by `(k - 1) * d` of *its input*
# pixels, which are `jump` input pixels apart, where `jump` is the product of the strides of
# the layers before it. For the digits, two conv-pool blocks already see 10 of the 8 pixels:
# the whole image.

# %% [markdown]
# ## 9. A small CNN on the digits
#
# VGG's recipe, with the BatchNorm of its later versions: blocks of 3x3 convolutions with
# `padding=1` (the size stays), BatchNorm and ReLU, then a 2x2 max-pool that halves the size while
# the channels grow. Two blocks take an 8x8 digit to 32 channels of 2x2:

# %%
_ = torch.manual_seed(0)
cnn = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),   # 16 x 4 x 4
    nn.Conv2d(16, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),  # 32 x 2 x 2
    nn.Flatten(), nn.Linear(32 * 2 * 2, 10),
)
mlp = nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
print(f"CNN: {n_params(cnn)} parameters, MLP: {n_params(mlp)} parameters")

# %% [markdown]
# Both train with the loop from lesson 05 (mini-batches of 64, Adam, 15 epochs):

# %%
def train(model, X, y, num_epochs=15, lr=1e-2, batch_size=64, seed=0):
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for _ in range(num_epochs):
        for idx in torch.randperm(len(y), generator=generator).split(batch_size):
            optimizer.zero_grad()
            loss_fn(model(X[idx]), y[idx]).backward()
            optimizer.step()
    return model


def accuracy(model, X, y):
    model.eval()
    with torch.no_grad():
        return (model(X).argmax(dim=1) == y).float().mean().item()


results = {}
for name, model in [("CNN", cnn), ("MLP", mlp)]:
    start = time.perf_counter()
    train(model, X_train, y_train)
    results[name] = (accuracy(model, X_test, y_test), time.perf_counter() - start)

# %%
for name, (acc, _) in results.items():
    print(f"{name}: test accuracy {acc:.1%}")

# %% tags=["nbval-ignore-output"]
for name, (_, seconds) in results.items():
    print(f"{name}: trained in {seconds:.1f} s")

# %% [markdown]
# With fewer parameters than the MLP, the CNN is more accurate. On 8x8 digits an MLP is still a
# fair competitor; on real photos (the 150 million parameters above) it is not.
#
# What does a digit look like to the network? The first block's 16 channels, for one test image:

# %%
import matplotlib.pyplot as plt

with torch.no_grad():
    maps = cnn[:3](X_test[:1])[0]  # conv, BatchNorm, ReLU: (16, 8, 8)
fig, axes = plt.subplots(2, 9, figsize=(9, 2.2))
axes[0, 0].imshow(X_test[0, 0], cmap="gray_r")
axes[0, 0].set_title(f"label {y_test[0].item()}", fontsize=8)
for k, ax in enumerate(axes.flat[1:17]):
    ax.imshow(maps[k], cmap="viridis")
for ax in axes.flat:
    ax.axis("off")
plt.show()

# %% [markdown]
# ### Exercise 6: a small VGG-style network to a spec
#
# Write the class `SmallVGG(in_channels, num_classes, widths, image_size)`, an `nn.Module`:
#
# - for each `width` in the list `widths`, one block: `nn.Conv2d(channels, width, 3,
#   padding=1, bias=False)`, `nn.BatchNorm2d(width)`, `nn.ReLU()`, `nn.MaxPool2d(2)`; the
#   first block takes `in_channels`;
# - then `nn.Flatten()` and one `nn.Linear` to `num_classes` outputs;
# - `image_size` is `(height, width)` of the input images, not necessarily square or even;
# - `forward(x)` takes `(N, in_channels, height, width)` and returns logits `(N, num_classes)`;
#   the batch may be stored channels-last in memory (as a `permute` leaves it), so flatten with
#   `nn.Flatten()` or `reshape`, not `view`.
#
# The check builds your class with several specs, counts and compares its layers, loads the
# same weights into yours and the reference, and compares outputs in training and eval mode.

# %% tags=["answer:SmallVGG"]
class SmallVGG(nn.Module):
    def __init__(self, in_channels, num_classes, widths, image_size):
        ### BEGIN SOLUTION
        super().__init__()
        height, width = image_size
        layers = []
        channels = in_channels
        for w in widths:
            layers += [nn.Conv2d(channels, w, kernel_size=3, padding=1, bias=False),
                       nn.BatchNorm2d(w), nn.ReLU(), nn.MaxPool2d(2)]
            channels, height, width = w, height // 2, width // 2
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(channels * height * width, num_classes))
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        return self.classifier(self.features(x))
        ### END SOLUTION


# %% tags=["check:SmallVGG"]
ex.SmallVGG.check(SmallVGG)

# %% [markdown]
# ## Recap
#
# - Images are `(N, C, H, W)`; "expected input[...] to have 1 channels, but got 8" means a
#   channels-last tensor: `permute(0, 3, 1, 2)`.
# - One output pixel is `sum(patch * filter) + bias`, a cross-correlation (no flip); a
#   weight is `(C_out, C_in / groups, kh, kw)`, independent of the image size.
# - Output size: `(size + 2p - d(k - 1) - 1) // s + 1` per axis; `padding=1` keeps a 3x3
#   convolution's size, a 2x2 max-pool (stride = kernel by default) halves it, rounding down.
# - `BatchNorm2d` normalises each channel over `(N, H, W)`; a conv before it needs no bias.
# - Size the `Linear` after `nn.Flatten` from the last feature map (compute it, run a dummy
#   batch, or `nn.LazyLinear`); "mat1 and mat2 shapes cannot be multiplied" is this mistake.
# - The receptive field grows by `(k - 1) * d * jump` per layer; pooling multiplies `jump`.
#
# Next: **09_persistence**, saving, resuming and exporting the models you train.

# %% [markdown]
# ## Further reading
#
# PyTorch documentation:
# [`nn.Conv2d`](https://docs.pytorch.org/docs/stable/generated/torch.nn.Conv2d.html) (the
# output-size formula, `groups`, `dilation`),
# [`nn.MaxPool2d`](https://docs.pytorch.org/docs/stable/generated/torch.nn.MaxPool2d.html),
# [`nn.BatchNorm2d`](https://docs.pytorch.org/docs/stable/generated/torch.nn.BatchNorm2d.html)
# and
# [`F.unfold`](https://docs.pytorch.org/docs/stable/generated/torch.nn.functional.unfold.html)
# (the patches of section 3).
#
# The best external material:
#
# - V. Dumoulin and F. Visin, [*A guide to convolution arithmetic for deep
#   learning*](https://arxiv.org/abs/1603.07285): every size formula, with pictures.
# - Stanford CS231n, [Convolutional Neural
#   Networks](https://cs231n.github.io/convolutional-networks/): the layers, their sizes and
#   parameter counts, and the classic architectures.
# - *Dive into Deep Learning*, [Convolutional Neural
#   Networks](https://d2l.ai/chapter_convolutional-neural-networks/index.html) and
#   [VGG](https://d2l.ai/chapter_convolutional-modern/vgg.html): from cross-correlation to the
#   block design of section 9.
# - A. Araujo, W. Norris and J. Sim, [*Computing Receptive Fields of Convolutional Neural
#   Networks*](https://distill.pub/2019/computing-receptive-fields/), Distill 2019: the recursion
#   of section 8, for any architecture.
# - UvA deep learning tutorials
#   ([uvadlc-notebooks](https://uvadlc-notebooks.readthedocs.io/en/latest/)), *Tutorial 5:
#   Inception, ResNet and DenseNet*: the architectures that came after VGG, implemented and
#   trained.
