# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 03 · `nn.Module`
#
# In lesson 02 you kept track of weights by hand: create them with `requires_grad=True`, pass
# them around, update each one. `torch.nn.Module` does that bookkeeping. A module owns its
# **parameters** (what is trained), its **buffers** (state that is not trained) and its
# **submodules**, finds them for the optimizer, moves them between devices, saves them, and
# switches between training and evaluation behaviour.
#
# You will learn to
#
# 1. write a module: `super().__init__()`, `forward`, and why you call the module itself;
# 2. recognise the registration bugs (a plain list, a plain tensor) and fix them;
# 3. use `Sequential`, `ModuleList`, `ModuleDict`, `nn.Parameter` and buffers;
# 4. count, name and freeze parameters; initialise them with `apply`;
# 5. look at activations with forward hooks;
# 6. know what `train()` / `eval()` change, and what `no_grad` does not;
# 7. choose between the functional and the module API, and feed logits to the loss.
#
# **Time: about 120 minutes** on your own, the eight checked exercises included (about 73 of those minutes). *Run All* alone takes about 7.9 s on a 2-core CPU.

# %%
import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

from course_utils.grading import exercises_for, predictions_for

ex = exercises_for("03_nn_module")
quiz = predictions_for("03_nn_module")  # predict-the-output questions
_ = torch.manual_seed(0)

# %% [markdown]
# ## 1. A module is a class
#
# Subclass `nn.Module`. In `__init__`, call `super().__init__()` **first**, then create the
# layers as attributes. In `forward`, say what happens to an input.

# %%
class TinyNet(nn.Module):
    def __init__(self, in_features, hidden, out_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, out_features)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


model = TinyNet(4, 8, 3)
X = torch.randn(5, 4)
print(model)
print(model(X).shape)

# %% [markdown]
# Call the module, `model(X)`, not `model.forward(X)`. Calling it runs `forward` *plus* the
# machinery around it: hooks (section 7) that libraries use for logging, pruning, mixed
# precision and more. `.forward` skips them silently:

# %%
def announce(module, inputs, output):
    print("hook saw output", tuple(output.shape))


handle = model.register_forward_hook(announce)
_ = model(X)
_ = model.forward(X)  # prints nothing
handle.remove()

# %% [markdown]
# Forgetting `super().__init__()` (or calling it after creating a layer) fails at the first
# assignment, because the registries for parameters and submodules do not exist yet:

# %% tags=["raises-exception"]
class Forgetful(nn.Module):
    def __init__(self):
        self.fc = nn.Linear(2, 2)
        super().__init__()


Forgetful()

# %% [markdown]
# ## 2. Parameters register themselves
#
# Assigning an `nn.Module` or an `nn.Parameter` to an attribute registers it. That is how
# `parameters()` (for the optimizer), `state_dict()` (for saving) and `.to(...)` (for devices
# and dtypes) find everything:

# %%
for name, p in model.named_parameters():
    print(f"{name:12s} {str(tuple(p.shape)):10s} requires_grad={p.requires_grad}")
print("total:", sum(p.numel() for p in model.parameters()), "parameters")

# %% [markdown]
# `nn.Parameter` is a tensor subclass that says "this is trained": it requires grad by
# default and registers when assigned to a module.

# %%
p = nn.Parameter(torch.zeros(3))
print(type(p).__name__, p.requires_grad, isinstance(p, torch.Tensor))

# %% [markdown]
# ### The classic bug: PyTorch cannot see it
#
# Registration only looks at attributes that *are* modules or parameters. A Python list of
# layers is a list; a plain tensor is a tensor. This module looks fine and even runs:

# %%
class BrokenTower(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.blocks = [nn.Linear(width, width) for _ in range(depth)]
        self.scale = torch.ones(width)

    def forward(self, x):
        for block in self.blocks:
            x = torch.relu(block(x))
        return x * self.scale


broken = BrokenTower(4, 3)
print("output:", tuple(broken(torch.randn(2, 4)).shape))
print("parameters:", sum(p.numel() for p in broken.parameters()))
print("state_dict keys:", list(broken.state_dict()))

# %% [markdown]
# ...but it has no parameters, so nothing can train it:

# %% [markdown]
# **Predict the output** (value): `BrokenTower` keeps its layers in a Python list, so `torch.optim.SGD(broken.parameters(), lr=0.1)` raises. A tower that keeps its three `nn.Linear` layers in which of these can be trained: a `nn.ModuleList(layers)`, b `nn.Sequential(*layers)`, c `tuple(layers)`, d a dict `{'0': layers[0], '1': layers[1], '2': layers[2]}`? Answer with the list of letters in order, such as `['c']`.

# %% tags=["predict:empty_optimizer"]
quiz.empty_optimizer(
    ### BEGIN PREDICTION
    ['a', 'b']
    ### END PREDICTION
)

# %% tags=["raises-exception"]
torch.optim.SGD(broken.parameters(), lr=0.1)

# %% [markdown]
# And `.to(...)` cannot move what it cannot see: after `broken.double()` the blocks are still
# float32 (on a GPU, they would still be on the CPU):

# %%
broken.double()
print(broken.blocks[0].weight.dtype)

# %% [markdown]
# ### Exercise 1: fix the tower
#
# Write `Tower(width, depth)`: the same model as `BrokenTower`, with the same attribute names
# (`blocks`, `scale`) and the same `forward`, but with every block and the scale registered,
# so that the optimizer trains them, `state_dict()` saves them and `.to()` moves them.
# `scale` starts as ones.

# %% tags=["answer:Tower"]
class Tower(nn.Module):
    def __init__(self, width, depth):
        ### BEGIN SOLUTION
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])
        self.scale = nn.Parameter(torch.ones(width))
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        for block in self.blocks:
            x = torch.relu(block(x))
        return x * self.scale
        ### END SOLUTION


# %% tags=["check:Tower"]
ex.Tower.check(Tower)

# %% [markdown]
# ## 3. Containers: `Sequential`, `ModuleList`, `ModuleDict`
#
# - `nn.Sequential(a, b, c)` is a module whose forward runs its children in order. Shortest
#   code when data simply flows through.
# - `nn.ModuleList([...])` is a list that registers its items; you write the loop in `forward`
#   (skip connections, weight sharing, different calls per layer).
# - `nn.ModuleDict({...})` registers modules by name: for example one head per task.

# %%
seq = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
print(seq)
print("layer 0:", seq[0], "  output:", tuple(seq(X).shape))


class MultiHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 16), nn.ReLU())
        self.heads = nn.ModuleDict({"digit": nn.Linear(16, 10), "parity": nn.Linear(16, 2)})

    def forward(self, x, task):
        return self.heads[task](self.body(x))


multi = MultiHead()
print([name for name, _ in multi.named_parameters()])
print(tuple(multi(X, "digit").shape), tuple(multi(X, "parity").shape))

# %% [markdown]
# ### Exercise 2: rebuild a teammate's MLP from its checkpoint
#
# A teammate trained a small classifier and left you its weights, `teammate_mlp.pt`, with a
# note: *"built with `MLP(8, [32, 16], 4)`: 8 features in, a ReLU after each hidden layer, 4
# classes out as logits"*. Their class is lost. This is what the file holds (the
# `state_dict`: a name and a tensor for each saved value):

# %%
from course_utils.lesson_props.l03_checkpoint import teammate_checkpoint

checkpoint = teammate_checkpoint()  # what torch.load("teammate_mlp.pt") gives
for key, value in checkpoint.items():
    print(f"{key:13} {tuple(value.shape)}")
print("parameters:", sum(v.numel() for v in checkpoint.values()))

# %% [markdown]
# Write `MLP(in_features, hidden_sizes, num_classes)` so that
# `MLP(8, [32, 16], 4).load_state_dict(checkpoint)` works: the same keys, the same shapes.
# Other specs must come out the same way, and `forward(x)` takes `(N, in_features)` and
# returns `(N, num_classes)` **logits** (no softmax: section 10 says why). The check builds
# your class for several specs, compares its `state_dict` keys, shapes and parameter count
# with what the teammate's class would save, loads the same weights into both and compares
# outputs and gradients.
#
# Read the listing before you write: where does a name like `net.2.weight` come from? Why
# does the numbering skip 1 and 3? Which argument gives each of the sizes?

# %% tags=["answer:MLP"]
class MLP(nn.Module):
    def __init__(self, in_features, hidden_sizes, num_classes):
        ### BEGIN SOLUTION
        super().__init__()
        layers = []
        width = in_features
        for hidden in hidden_sizes:
            layers += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        layers.append(nn.Linear(width, num_classes))
        self.net = nn.Sequential(*layers)
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        return self.net(x)
        ### END SOLUTION


# %% tags=["check:MLP"]
ex.MLP.check(MLP)

# %% [markdown]
# ## 4. A custom layer with its own parameters
#
# A layer is a module like any other. Here is a learnable per-feature scale and shift (what
# the "affine" part of a normalisation layer does). Create parameters with **torch**
# factories: NumPy arrays are float64, and a float64 parameter quietly turns every float32
# activation that touches it into float64.

# %%
class ScaleShift(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(num_features))
        self.shift = nn.Parameter(torch.zeros(num_features))

    def forward(self, x):
        return x * self.scale + self.shift


layer = ScaleShift(4)
print([(n, tuple(p.shape), p.dtype) for n, p in layer.named_parameters()])
print(layer(X).dtype)

# %% [markdown]
# ### Exercise 3: repair an RMSNorm
#
# A teammate is porting a language model. Its normalisation layer, RMSNorm, divides each
# token's feature vector by its root mean square (no centring, unlike LayerNorm), then scales
# each feature by a learned amount. Their first attempt passed their test on a batch of vectors
# of shape `(N, dim)`:

# %%
class FirstRMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(1))

    def forward(self, x):
        rms = x.pow(2).mean(dim=1, keepdim=True).sqrt() + self.eps
        return x / rms * self.weight


# %% [markdown]
# On the model's real inputs, three things go wrong. Sentences come as `(N, T, dim)`, padded
# with all-zero tokens to a common length, and padding a sentence changes its real tokens:

# %%
torch.manual_seed(0)
first = FirstRMSNorm(8)
sentence = torch.randn(1, 5, 8)
padded = torch.cat([sentence, torch.zeros(1, 3, 8)], dim=1)  # 3 padding tokens after the 5 real ones
print("the 5 real tokens, alone and padded: same output?", torch.allclose(first(sentence), first(padded)[:, :5]))

# %% [markdown]
# Even on `(N, dim)`, a batch with a padding row gives finite outputs and NaN gradients:

# %%
x = torch.randn(4, 8)
x[3] = 0.0  # a padding row
x.requires_grad_(True)
out = first(x)
out.sum().backward()
print("output finite:", out.isfinite().all().item(), "  gradient finite:", x.grad.isfinite().all().item())

# %% [markdown]
# And the original model's checkpoint, saved from torch's own `nn.RMSNorm`, does not load (the
# cell raises):

# %% tags=["raises-exception"]
original = nn.RMSNorm(8, eps=1e-6)
first.load_state_dict(original.state_dict())

# %% [markdown]
# Write `RMSNorm(dim, eps=1e-6)`: the same layer without the three problems. A fresh one only
# normalises; a checkpoint of `nn.RMSNorm(dim, eps=eps)` loads into it and it then computes what
# that layer computes, on inputs of shape `(*, dim)`, gradients included, without modifying its
# input. For each symptom, decide what the first attempt gets wrong. The check compares yours with
# torch's, so write it yourself: no `nn.RMSNorm` or `F.rms_norm` inside.

# %% tags=["answer:RMSNorm"]
class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        ### BEGIN SOLUTION
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))  # one learned scale per feature, as in the checkpoint
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        # each vector over its own features (the last dimension, whatever the rank); eps inside the
        # square root, whose slope at 0 is infinite
        rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x / rms * self.weight
        ### END SOLUTION


# %% tags=["check:RMSNorm"]
ex.RMSNorm.check(RMSNorm)

# %% [markdown]
# The three symptoms had three causes. `dim=1` is the last dimension of a batch of vectors, but
# the token dimension of a batch of sentences: the padding entered every real token's mean. The
# features are the *last* dimension at any rank. The eps added after the square root keeps the
# output finite, but the square root's slope at 0 is infinite and autograd multiplies it by 0:
# NaN. Inside the root, eps keeps it away from 0. And one scale shared by all features is a
# different model: the checkpoint holds one per feature, in a parameter named `weight`.

# %% [markdown]
# ### Exercise 4: a drop-in `nn.Linear`, found out by measuring it
#
# The layers of `torch.nn` are modules like the ones above. Your team wants its own
# `Linear(in_features, out_features, bias=True)` (to add quantisation to it later) that can
# replace `nn.Linear` without anyone noticing:
#
# - checkpoints go both ways: an `nn.Linear`'s `state_dict` loads into yours and yours into an
#   `nn.Linear`, with a bias and without one;
# - code written for `nn.Linear` runs unchanged on yours: whatever it reads from the layer,
#   whatever inputs it feeds it, and the gradients training needs;
# - a fresh one starts where a fresh `nn.Linear` starts: its initial values come from the same
#   distribution and the same random stream, so `torch.manual_seed` reproduces them.
#
# Nobody wrote that behaviour down for you: find it out from `nn.Linear` itself. What does its
# `state_dict` hold, with and without a bias, and what does the layer answer when asked for a
# bias it does not have? Which inputs does it accept? The cell below measures the initial values
# of fresh layers of four shapes; run it, change it, and decide from the numbers which rule draws
# them: how wide, shaped like what, set by which of the two sizes. The check measures yours the
# same way (on a large layer, and after `torch.manual_seed`), loads `nn.Linear` weights into it
# and runs it on inputs of several shapes. Do not use `nn.Linear` or `F.linear` inside it.

# %%
torch.manual_seed(0)
for n_in, n_out in [(16, 64), (64, 16), (256, 64), (64, 256)]:
    layer = nn.Linear(n_in, n_out)
    w, b = layer.weight.detach(), layer.bias.detach()
    counts = torch.histc(w / w.abs().max(), bins=8, min=-1, max=1).int().tolist()
    print(f"in {n_in:3d}, out {n_out:3d}: largest |weight| {w.abs().max():.4f}, largest |bias| "
          f"{b.abs().max():.4f}, weight std {w.std():.4f}; weights in 8 equal bins: {counts}")


# %% tags=["answer:Linear"]
class Linear(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        ### BEGIN SOLUTION
        super().__init__()
        bound = in_features ** -0.5
        self.weight = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound))
        if bias:
            self.bias = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
        else:
            self.register_parameter("bias", None)  # `layer.bias` is None, and no state_dict entry
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        out = x @ self.weight.T  # (*, in) @ (in, out): matmul broadcasts over the leading dimensions
        if self.bias is not None:
            out = out + self.bias
        return out
        ### END SOLUTION


# %% tags=["check:Linear"]
ex.Linear.check(Linear)

# %% [markdown]
# What the measurements said: the largest weight halves each time `in_features` is multiplied
# by 4 and does not move with `out_features`, so the range is $\pm 1/\sqrt{\text{in\_features}}$
# (each output sums `in_features` products, and the range keeps that sum's size the same at any
# width); the bins fill evenly, so the draw is uniform over that range, and the bias shares it.
# (`nn.Linear` gets there through `kaiming_uniform_(a=√5)`, a detour that works out to the same
# range.) Without a bias the `state_dict` has no entry and `layer.bias` is `None`, an absent
# parameter that `register_parameter` records; and `x @ W.T` broadcasts over any number of
# leading dimensions, where `mm` takes matrices only.

# %% [markdown]
# ## 5. Buffers: state that is not trained
#
# Some state belongs to a module but is not learned by gradient descent: BatchNorm's running
# mean and variance, a fixed mask, a step counter. Register it with `register_buffer`: it then
# moves with `.to()`, appears in `state_dict()` (unless `persistent=False`), and is **not**
# returned by `parameters()`, so no optimizer touches it.

# %% [markdown]
# **Predict the output** (value): What is `list(nn.BatchNorm1d(3).state_dict())`?

# %% tags=["predict:buffers_in_state_dict"]
quiz.buffers_in_state_dict(
    ### BEGIN PREDICTION
    ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']
    ### END PREDICTION
)

# %%
class WithBuffers(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.register_buffer("counter", torch.zeros((), dtype=torch.long))
        self.register_buffer("cache", torch.zeros(2), persistent=False)


wb = WithBuffers()
print("parameters:", [n for n, _ in wb.named_parameters()])
print("buffers:   ", [n for n, _ in wb.named_buffers()])
print("state_dict:", list(wb.state_dict()))
print("BatchNorm1d state_dict:", list(nn.BatchNorm1d(3).state_dict()))

# %% [markdown]
# ### Exercise 5: repair a running mean
#
# A teammate wants a layer that centres its features with a mean collected while training, like
# BatchNorm without the scaling. Their first attempt has the update rule and the output they want:

# %%
class DriftingMean(nn.Module):
    def __init__(self, num_features, momentum=0.1):
        super().__init__()
        self.momentum = momentum
        self.running_mean = torch.zeros(num_features)

    def forward(self, x):
        self.running_mean = (1 - self.momentum) * self.running_mean + self.momentum * x.mean(dim=0)
        return x - self.running_mean


# %% [markdown]
# They report three problems. A trained layer, saved and loaded into a fresh one, no longer
# centres anything:

# %%
torch.manual_seed(0)
layer = DriftingMean(3)
for _ in range(50):
    layer(torch.randn(32, 3) + 2.0)
fresh = DriftingMean(3)
fresh.load_state_dict(layer.state_dict())
x_val = torch.randn(64, 3) + 2.0
print(f"output mean, trained layer:  {layer(x_val).mean():.2f}")
print(f"output mean, reloaded layer: {fresh(x_val).mean():.2f}")

# %% [markdown]
# Evaluating the same validation batch twice gives two different answers:

# %%
layer.eval()
with torch.no_grad():
    first, second = layer(x_val), layer(x_val)
print("eval mode, same input twice, same output?", torch.equal(first, second))

# %% [markdown]
# And inside a model, the second training step fails (the cell raises):

# %% tags=["raises-exception"]
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 3), DriftingMean(3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    loss = model(torch.randn(8, 3) + 2.0).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

# %% [markdown]
# Write `RunningMean(num_features, momentum=0.1)`: the same layer (the same update, then the same
# output `x − running_mean`; the statistic is still called `running_mean` and starts at zeros)
# without any of the three problems. For each symptom, decide what the first attempt gets wrong;
# the fix belongs in the layer, not in the loop that uses it. The check trains your layer, saves
# it, evaluates it and runs it between other layers.

# %% tags=["answer:RunningMean"]
class RunningMean(nn.Module):
    def __init__(self, num_features, momentum=0.1):
        ### BEGIN SOLUTION
        super().__init__()
        self.momentum = momentum
        # a buffer: saved in the state_dict, moved by .to(), never handed to an optimizer
        self.register_buffer("running_mean", torch.zeros(num_features))
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        if self.training:  # the module's mode decides, not autograd's grad mode
            with torch.no_grad():  # bookkeeping: the statistic is data, not part of the graph
                batch_mean = x.mean(dim=0)
                self.running_mean.mul_(1 - self.momentum).add_(self.momentum * batch_mean)
        return x - self.running_mean  # the output stays in the graph
        ### END SOLUTION


# %% tags=["check:RunningMean"]
ex.RunningMean.check(RunningMean)

# %% [markdown]
# The three symptoms had three causes. A plain tensor attribute is invisible to `state_dict()`
# and `.to()`: a **buffer** is saved and moved with the module, and no optimizer sees it (a
# `Parameter` would be counted, and trained as soon as someone unfreezes the model). Statistics
# are collected while the module is in **training mode**, a flag of the module, not autograd's
# grad mode: BatchNorm under `no_grad` in training mode still updates. And the update must not be
# recorded by autograd: otherwise each batch's statistic hangs on the previous batch's graph,
# which `backward()` has freed. The error's `retain_graph=True` would only keep every graph alive.

# %% [markdown]
# ## 6. Counting, naming and freezing parameters
#
# `named_parameters()` walks the whole tree with dotted names, which makes per-part summaries
# easy:

# %% [markdown]
# **Predict the output** (value): How many parameters has `nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))`?

# %% tags=["predict:mlp_param_count"]
quiz.mlp_param_count(
    ### BEGIN PREDICTION
    17226
    ### END PREDICTION
)

# %%
net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
for name, p in net.named_parameters():
    print(f"{name:9s} {str(tuple(p.shape)):10s} {p.numel():6d}")
print("total", sum(p.numel() for p in net.parameters()))

# %% [markdown]
# **Freezing** a parameter means `requires_grad = False`: no gradient is computed for it and the
# optimizer leaves it alone. It is set per parameter (`module.requires_grad_(flag)` sets it on
# every parameter of a subtree). Here, the other way round from the usual fine-tuning, only the
# **biases** keep learning (the idea of BitFit, a cheap way to adapt a large model):

# %%
for name, p in net.named_parameters():
    p.requires_grad = name.endswith("bias")
n_trainable = sum(p.numel() for p in net.parameters() if p.requires_grad)
print("trainable:", n_trainable, "of", sum(p.numel() for p in net.parameters()))
net(torch.randn(3, 64)).sum().backward()
print("grad of a frozen weight:", net[0].weight.grad)
print("grad of a bias:", tuple(net[0].bias.grad.shape))

# %% [markdown]
# Parameters are not all a module can change, though. A BatchNorm layer whose parameters are
# frozen, run under `no_grad`, still moves its running statistics (buffers, section 5):

# %%
bn = nn.BatchNorm1d(3).requires_grad_(False)
with torch.no_grad():
    bn(torch.randn(16, 3) * 5 + 2)
print("running_mean after one batch:", bn.running_mean)

# %% [markdown]
# ### Exercise 6: freeze the backbone
#
# The check's models are pretrained networks in two parts: `model.backbone`, a feature
# extractor with BatchNorm layers, and `model.head`, a classifier with Dropout. They arrive in
# training mode, as right before a fine-tuning loop. Write `freeze_backbone(model)` so that
# fine-tuning trains the head and leaves the backbone **exactly as it was**: the same weights and
# buffers, and the same features for a given input whatever the rest of the batch holds. Return
# what an optimizer should be given to train the model from then on.
#
# Decide what freezing must cover and what must keep training. The check runs a training-mode
# forward pass after your function and looks at both parts.

# %% tags=["answer:freeze_backbone"]
def freeze_backbone(model):
    ### BEGIN SOLUTION
    model.backbone.requires_grad_(False)  # no gradients, the optimizer cannot change them
    model.backbone.eval()                 # BatchNorm: use and keep the running statistics
    return [p for p in model.parameters() if p.requires_grad]  # a list: it can be read twice
    ### END SOLUTION


# %% tags=["check:freeze_backbone"]
ex.freeze_backbone.check(freeze_backbone)

# %% [markdown]
# Mind the training loop: `model.train()` at the start of each epoch switches the backbone back
# to training mode, and its BatchNorm layers start drifting again. Call `freeze_backbone` (or at
# least `model.backbone.eval()`) after `model.train()`, or override `train()` in the model.

# %% [markdown]
# ## 7. Looking inside: forward hooks
#
# `module.register_forward_hook(fn)` calls `fn(module, inputs, output)` every time the module
# runs. It is the standard way to inspect activations without touching `forward`. Here a hook
# on every `Tanh` of a deep network records its outputs (`course_utils.lesson_props.l03_activations` wraps
# this, and always removes the hooks):

# %%
from course_utils.lesson_props.l03_activations import (
    activation_histograms, activation_stds, deep_mlp, record_activations,
)

deep = deep_mlp(depth=6, width=256, activation="tanh", gain=1.0)
inputs = torch.randn(512, 256, generator=torch.Generator().manual_seed(1))
recorded = {}


def save_output(name):
    def hook(module, inputs, output):
        recorded[name] = output.detach()
    return hook


handles = [m.register_forward_hook(save_output(name))
           for name, m in deep.named_modules() if isinstance(m, nn.Tanh)]
with torch.no_grad():
    deep(inputs)
for h in handles:
    h.remove()
print({name: round(out.std().item(), 3) for name, out in recorded.items()})

# %% [markdown]
# ## 8. Initialisation with `apply`
#
# How weights start decides whether signals survive a deep network. With weights drawn from
# N(0, gain² / fan_in) (fan_in = number of inputs of the layer), watch the activations of
# an 8-layer tanh network: too small a gain and they shrink towards 0 layer after layer (and
# so do the gradients), too large and tanh saturates at ±1.

# %%
for gain in (0.5, 1.0, 3.0):
    acts = record_activations(deep_mlp(depth=8, width=256, activation="tanh", gain=gain), inputs)
    activation_histograms(acts, title=f"tanh, gain {gain}")
    plt.show()

# %% [markdown]
# Drag the gain yourself, then switch to ReLU: does the gain that keeps tanh's activations alive
# still work there?

# %% tags=["nbval-ignore-output"]
from course_utils.lesson_props.l03_activations import init_scale_widget

init_scale_widget()

# %% [markdown]
# PyTorch's layers initialise themselves (`nn.Linear` draws from a uniform distribution with
# std 1/√(3·fan_in)). To use your own scheme, write a function of one module and hand it to
# `model.apply(fn)`, which calls `fn` on **every** submodule (children first, then the model
# itself), so `fn` must check what it was given. `nn.init` functions change tensors in place
# without recording anything:

# %%
def zero_biases(m):
    if isinstance(m, nn.Linear):
        nn.init.zeros_(m.bias)


visited = []
net.apply(lambda m: visited.append(type(m).__name__))
print(visited)
net.apply(zero_biases)
print(net[0].bias[:5])

# %% [markdown]
# ### Exercise 7: initialise a deep ReLU network
#
# A teammate's network is a deep stack of `Linear` + `ReLU` blocks whose widths change from
# layer to layer. Their first init draws every weight with one standard deviation, tuned by hand
# on a network of width 256 until the activations held steady there. At other widths:

# %%
def first_init(m):  # tuned by hand on width 256
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, mean=0.0, std=0.088)
        nn.init.zeros_(m.bias)


for width in (64, 256, 1024):
    torch.manual_seed(0)
    deep = nn.Sequential(*[block for _ in range(12) for block in (nn.Linear(width, width), nn.ReLU())])
    deep.apply(first_init)
    stds = activation_stds(record_activations(deep, torch.randn(256, width)))
    print(f"width {width:4d}, std after ReLU 1, 6 and 12:", "  ".join(f"{stds[k]:.2g}" for k in (0, 5, 11)))

# %% [markdown]
# Write `init_weights(m)` for `model.apply(init_weights)` that keeps the signal's scale in such
# a network at *any* widths: in a deep stack of `Linear` + `ReLU`, the outputs of each `Linear`
# keep the same mean square from one hidden layer to the next (in expectation), whatever the
# widths. Every `Linear` gets the same rule: weights drawn from a normal distribution centred at
# 0, with the spread you decide, and biases at zero. Leave every other kind of module untouched.
# The check applies it to networks of different widths and measures the statistics of each layer.

# %% tags=["answer:init_weights"]
import math


def init_weights(m):
    ### BEGIN SOLUTION
    if isinstance(m, nn.Linear):
        # each output sums in_features terms, and ReLU keeps half of the mean square: He normal
        nn.init.normal_(m.weight, mean=0.0, std=math.sqrt(2 / m.in_features))
        if m.bias is not None:
            nn.init.zeros_(m.bias)
    ### END SOLUTION


# %% tags=["check:init_weights"]
ex.init_weights.check(init_weights)

# %% [markdown]
# Each output of a `Linear` sums `in_features` products, so with zero-mean weights its mean
# square is `in_features · Var(w) · E[input²]`: the spread must shrink like 1/√fan_in, or a width
# change rescales the signal (0.088 is √(2/256)). ReLU then sets the negative half to 0 and keeps
# half of the mean square: the factor 2 (He, or Kaiming, initialisation, `nn.init.kaiming_normal_`
# with `nonlinearity="relu"`). LeCun's 1/fan_in suits layers whose activation keeps the whole
# signal near 0, such as tanh.

# %% [markdown]
# ## 9. `train()` and `eval()`
#
# Every module has a `training` flag; `model.train()` and `model.eval()` set it on the whole
# tree. Two layers behave differently depending on it:
#
# - **Dropout** zeroes random elements in training (scaling the rest by 1/(1−p)) and does
#   nothing in eval.
# - **BatchNorm** normalises with the current batch's statistics in training (and updates its
#   running averages), and with the running averages in eval.

# %%
drop = nn.Dropout(p=0.5)
ones = torch.ones(8)
torch.manual_seed(0)
print("train:", drop(ones))
drop.eval()
print("eval: ", drop(ones))

# %% [markdown]
# `torch.no_grad()` is **not** `eval()`: it stops recording gradients and changes nothing
# else. Dropout still drops:

# %%
drop.train()
torch.manual_seed(0)
with torch.no_grad():
    print("train mode under no_grad:", drop(ones))

# %% [markdown]
# BatchNorm in training mode needs more than one example per channel, a classic surprise
# when predicting a single example with a model left in training mode:

# %% [markdown]
# **Predict the output** (value): A model ending in `nn.BatchNorm1d`, in training mode, raises on ONE example `x` of shape (1, 4). Which of these run: a `model.eval()(x)`, b `model(torch.cat([x, x]))`, c `model(x)` inside `with torch.no_grad():`, d `model.requires_grad_(False)(x)`? Answer with the list of letters in order, such as `['c']`.

# %% tags=["predict:batchnorm_one_example"]
quiz.batchnorm_one_example(
    ### BEGIN PREDICTION
    ['a', 'b']
    ### END PREDICTION
)

# %% tags=["raises-exception"]
bn_model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
bn_model(torch.randn(1, 4))

# %%
bn_model.eval()
print(bn_model(torch.randn(1, 4)).shape)

# %% [markdown]
# ### Exercise 8: probabilities for a progress report
#
# A teammate's training loop prints, every few hundred steps, the class probabilities the model
# gives a fixed batch of validation examples. Their helper, called between two training steps
# (the model in training mode, as the loop leaves it), gives three surprises:

# %%
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 3))
val_batch = torch.randn(8, 4)


def first_predict_proba(model, X):
    return torch.softmax(model(X), dim=1)


stats_before = net[1].running_mean.clone()
p1, p2 = first_predict_proba(net, val_batch), first_predict_proba(net, val_batch)
print("the same batch twice, the same probabilities?", torch.allclose(p1, p2))
print("the report left the model's statistics as they were?", torch.equal(net[1].running_mean, stats_before))
print("what the report's numbers keep alive:", type(p1.grad_fn).__name__)

# %% [markdown]
# Write `predict_proba(model, X)` that the report can rely on: the `(N, C)` class probabilities
# for `(N, features)` inputs, the same on every call for the same model and `X` (and for an
# example, whatever else is in its batch); nothing kept for a backward pass that never comes;
# and the training loop goes on after the call exactly as if it had not happened, with every
# weight, every statistic and every layer as it was. Some models arrive with layers a
# fine-tuning recipe set apart (the check hands over one whose Dropout was put in eval mode
# while the rest trains). Decide what each surprise above says about the helper.

# %% tags=["answer:predict_proba"]
def predict_proba(model, X):
    ### BEGIN SOLUTION
    modes = [(m, m.training) for m in model.modules()]  # every submodule's own mode
    model.eval()
    with torch.no_grad():
        probs = torch.softmax(model(X), dim=1)
    for m, training in modes:
        m.training = training
    return probs
    ### END SOLUTION


# %% tags=["check:predict_proba"]
ex.predict_proba.check(predict_proba)

# %% [markdown]
# The three surprises, and the two switches. In training mode Dropout draws a new mask on every
# call and BatchNorm normalises with the batch's own statistics and updates its running ones:
# `model.eval()` turns both to their prediction behaviour. `torch.no_grad()` only stops the
# recording of a graph; it changes no layer's behaviour, so prediction needs both. And a helper
# called from inside someone's loop puts back what it switched: every module's own `training`
# flag, since `model.train(was)` would give every layer the top-level mode (switching that
# fine-tuned Dropout on again).

# %% [markdown]
# ## 10. The functional API, and logits into the loss
#
# Most layers have a stateless twin in `torch.nn.functional` (`F`): `nn.ReLU()` ↔ `F.relu`,
# `nn.Linear` ↔ `F.linear(x, weight, bias)`. Use modules for anything with parameters or
# state (they register it) and the functional form for stateless steps inside `forward`.

# %%
lin = nn.Linear(4, 3)
print(torch.allclose(lin(X), F.linear(X, lin.weight, lin.bias)))
print(torch.equal(nn.ReLU()(X), F.relu(X)))

# %% [markdown]
# One trap: `F.dropout` does not know about `train()`/`eval()`: its `training` argument
# defaults to `True`. Inside a module, pass `training=self.training`, or use `nn.Dropout`.

# %%
torch.manual_seed(0)
print(F.dropout(ones, p=0.5))                  # drops even if your model is in eval mode
print(F.dropout(ones, p=0.5, training=False))

# %% [markdown]
# ### Logits go into `CrossEntropyLoss`
#
# `nn.CrossEntropyLoss` takes raw scores (**logits**) and integer class indices. It applies
# `log_softmax` itself, in a numerically safe way; it is log-softmax followed by the negative
# log-likelihood:

# %%
logits = torch.tensor([[4.0, 0.5, -1.0], [0.2, 0.1, 3.0]])
targets = torch.tensor([0, 2])
loss_fn = nn.CrossEntropyLoss()
print(loss_fn(logits, targets), F.nll_loss(F.log_softmax(logits, dim=1), targets))

# %% [markdown]
# Applying softmax in the model *and* passing the result to the loss softmaxes twice. The
# loss can then never get near zero (probabilities lie in [0, 1], so their softmax is never
# confident), and its gradients shrink, so training crawls:

# %%
logits = torch.tensor([[8.0, -8.0, -8.0]], requires_grad=True)
target = torch.tensor([0])
right = loss_fn(logits, target)
wrong = loss_fn(torch.softmax(logits, dim=1), target)
print(f"logits into the loss:   loss {right.item():.4f}")
print(f"softmax into the loss:  loss {wrong.item():.4f}  (for a perfectly confident, correct model!)")
logits = torch.tensor([[0.0, 2.0, 0.0]], requires_grad=True)
g_right = torch.autograd.grad(loss_fn(logits, target), logits)[0]
g_wrong = torch.autograd.grad(loss_fn(torch.softmax(logits, dim=1), target), logits)[0]
print(f"gradient size for a wrong prediction: {g_right.norm().item():.3f} with logits, "
      f"{g_wrong.norm().item():.3f} through softmax")

# %% [markdown]
# ## Recap
#
# - A module: `super().__init__()` first, layers as attributes, `forward` for the computation;
#   call `model(x)`, not `model.forward(x)`.
# - Only modules and `nn.Parameter`s assigned as attributes are registered. A Python list or
#   a plain tensor is invisible: zero parameters, "optimizer got an empty parameter list",
#   and `.to()` leaves it behind. Use `nn.ModuleList`/`nn.ModuleDict`/`nn.Sequential` and
#   `nn.Parameter`.
# - Buffers (`register_buffer`) hold untrained state, move with the module, and are saved
#   unless `persistent=False`.
# - `named_parameters()` to inspect and count; `requires_grad_(False)` to freeze;
#   `model.apply(fn)` with `nn.init` to initialise; forward hooks to look at activations.
# - `eval()` changes Dropout and BatchNorm; `no_grad()` only stops the graph. Prediction needs
#   both.
# - Models return logits; `CrossEntropyLoss` applies log-softmax itself.
#
# Next: **04_data**, feeding these models with `Dataset` and `DataLoader`.

# %% [markdown]
# ## Further reading
#
# PyTorch documentation:
#
# - [`torch.nn`](https://docs.pytorch.org/docs/stable/nn.html): every layer, container and loss,
#   grouped by kind.
# - [`nn.Module`](https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html):
#   `register_buffer`, `state_dict`, `apply`, `train`/`eval`, `requires_grad_` and the hooks of
#   this lesson.
# - [Modules](https://docs.pytorch.org/docs/stable/notes/modules.html) (a note): how modules,
#   parameters, buffers, training modes and hooks fit together; the longest official explanation
#   of this lesson's topic.
# - [`torch.nn.init`](https://docs.pytorch.org/docs/stable/nn.init.html): the initialisation
#   functions that `apply` calls.
#
# The best external material:
#
# - PyTorch tutorials, [Build the neural
#   network](https://docs.pytorch.org/tutorials/beginner/basics/buildmodel_tutorial.html): a
#   small `nn.Module` from the official tutorials, layer by layer.
# - *Dive into Deep Learning*, [Builders'
#   guide](https://d2l.ai/chapter_builders-guide/index.html): layers and modules, parameter
#   management, initialisation, lazy layers and custom layers.
# - UvA deep learning tutorials
#   ([uvadlc-notebooks](https://uvadlc-notebooks.readthedocs.io/en/latest/)), *Tutorial 2:
#   Introduction to PyTorch*: a model built, trained and saved in one notebook; *Tutorial 4*
#   shows why initialisation matters.
# - Andrej Karpathy, [*Neural Networks: Zero to Hero*](https://karpathy.ai/zero-to-hero.html),
#   *makemore part 3* (activations, gradients, BatchNorm): initialisation and why BatchNorm
#   behaves differently in `eval()`.
