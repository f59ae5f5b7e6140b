# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 09 · Saving, resuming and exporting models
#
# Training produces numbers: the weights. This lesson is about keeping them. You will save them
# so that they load anywhere, write checkpoints that resume training as if it had never stopped,
# load files safely, and export models so that they run without your Python code.
#
# You will learn to
#
# 1. save and load a `state_dict`, and why pickling the whole model is fragile;
# 2. load safely: why `torch.load` must keep `weights_only=True` for files you did not write;
# 3. fix the usual loading problems: GPU checkpoints on a CPU (`map_location`), renamed or
#    reshaped layers (`strict=False`), the `module.` prefix of DDP models;
# 4. write checkpoints that resume **bit-identically**, and see what breaks when a piece is
#    missing;
# 5. use `safetensors`, export with `torch.export` (with a dynamic batch size) and to ONNX, and
#    run the ONNX file in onnxruntime.
#
# **Time: about 100 minutes** on your own, the five checked exercises included (about 42 of those minutes). *Run All* alone takes about 11 s on a 2-core CPU.

# %%
import hashlib
import os
import tempfile
import warnings

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from course_utils.datasets import digits_split
from course_utils.grading import exercises_for, predictions_for

ex = exercises_for("09_persistence")
quiz = predictions_for("09_persistence")  # predict-the-output questions
X_train, y_train, X_test, y_test = digits_split()
train_set = TensorDataset(X_train, y_train)
loss_fn = nn.CrossEntropyLoss()
# every file of this lesson goes into a temporary folder, deleted when the kernel stops
scratch = tempfile.TemporaryDirectory(prefix="lesson09_")
workdir = scratch.name


def path(name):
    return os.path.join(workdir, name)


# %% [markdown]
# A model to save: a small digit classifier with dropout, trained for a few epochs.

# %%
def make_model():
    return nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 10))


def train(model, optimizer, loader, epochs, scheduler=None):
    model.train()
    for _ in epochs:
        for X, y in loader:
            optimizer.zero_grad()
            loss_fn(model(X), y).backward()
            optimizer.step()
        if scheduler is not None:
            scheduler.step()


def accuracy(model):
    model.eval()
    with torch.no_grad():
        return (model(X_test).argmax(1) == y_test).float().mean().item()


torch.manual_seed(0)
model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
train(model, optimizer, DataLoader(train_set, batch_size=64, shuffle=True), range(5))
print(f"test accuracy: {accuracy(model):.0%}")

# %% [markdown]
# ## 1. The `state_dict`
#
# A module's `state_dict()` maps names to tensors: every parameter and every buffer (such as
# BatchNorm's running statistics). It holds no code. To load it you rebuild the model with
# your code and copy the numbers in.

# %% [markdown]
# **Predict the output** (value): What is `list(model.state_dict())` for `nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 10))`?

# %% tags=["predict:state_dict_keys"]
quiz.state_dict_keys(
    ### BEGIN PREDICTION
    ['0.weight', '0.bias', '3.weight', '3.bias']
    ### END PREDICTION
)

# %%
for name, tensor in model.state_dict().items():
    print(f"{name:10s} {tuple(tensor.shape)}")

torch.save(model.state_dict(), path("digits.pt"))

restored = make_model()                                   # same architecture, fresh weights
restored.load_state_dict(torch.load(path("digits.pt")))   # weights_only=True is the default
print(f"restored test accuracy: {accuracy(restored):.0%}")

# %% [markdown]
# A freshly built module is in **training mode**, so its dropout is active and the same input
# gives different outputs. Call `model.eval()` after loading, before predicting. (The `accuracy`
# function above does it for you.)

# %%
fresh = make_model()
fresh.load_state_dict(torch.load(path("digits.pt")))
print("training mode, two calls agree:  ", torch.equal(fresh(X_test[:5]), fresh(X_test[:5])))
fresh.eval()
print("evaluation mode, two calls agree:", torch.equal(fresh(X_test[:5]), fresh(X_test[:5])))

# %% [markdown]
# ### Why not save the whole model?
#
# `torch.save(model)` pickles the module object. A pickle does not contain your class's code,
# only its import path, such as `__main__.TinyNet`. Since PyTorch 2.6, `torch.load` refuses to
# load such a file by default, and this is the error you meet:

# %%
class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(x)


torch.save(TinyNet(), path("whole_model.pt"))

# %% tags=["raises-exception"]
torch.load(path("whole_model.pt"))

# %% [markdown]
# `weights_only=False` loads it, but only for files you trust (section 2 shows why). Even then,
# loading needs the class, importable under the same name. Rename it, move it to another file,
# or open the checkpoint in another notebook, and the file no longer loads. Here we delete the
# class to get the same effect:

# %% tags=["raises-exception"]
del TinyNet
torch.load(path("whole_model.pt"), weights_only=False)

# %% [markdown]
# Save `state_dict`s, and keep the code that builds the model in a module.
#
# ## 2. Loading untrusted files: `weights_only`
#
# Unpickling can *call functions*. An object's `__reduce__` tells pickle "to rebuild me, call this
# function with these arguments", and a malicious file names `os.system` instead. Here is a
# harmless version that only prints:

# %%
class Payload:
    def __reduce__(self):
        return (print, ("!!! This line was printed by code hidden in the checkpoint file !!!",))


torch.save({"weights": torch.ones(3), "extra": Payload()}, path("suspicious.pt"))

# %% [markdown]
# `weights_only=True`, the default, allows only tensors, primitive Python values and containers.
# It refuses the file before running anything:

# %% [markdown]
# **Predict the output** (value): With `weights_only=True`, the default, which of these does `torch.load` read back after `torch.save`: a `model.state_dict()`, b `{'epoch': 3, 'loss': 0.25, 'note': 'best'}`, c the whole `model` (an `nn.Sequential`), d `optimizer.state_dict()` (SGD with momentum, after a step)? Answer with the list of letters in order, such as `['c']`.

# %% tags=["predict:weights_only_refuses"]
quiz.weights_only_refuses(
    ### BEGIN PREDICTION
    ['a', 'b', 'd']
    ### END PREDICTION
)

# %% tags=["raises-exception"]
torch.load(path("suspicious.pt"))

# %% [markdown]
# With `weights_only=False` the hidden call runs while the file loads:

# %%
# never do this with a file you did not make yourself:
loaded = torch.load(path("suspicious.pt"), weights_only=False)
print("the 'extra' entry became:", loaded["extra"])

# %% [markdown]
# Keep `weights_only=True` for every file you did not write yourself. If a trusted checkpoint
# contains one extra type, such as a NumPy scalar or your own small class, allow just that type
# with `torch.serialization.safe_globals([...])` instead of turning the check off. Better still,
# save `.item()` or plain values. Section 6 shows `safetensors`, a format that cannot contain
# code at all.
#
# ## 3. Loading problems you will meet
#
# ### A checkpoint saved on a GPU
#
# `torch.save` records which device every tensor was on. A file written on a GPU machine
# therefore tries to load onto CUDA. `save_as_if_on_cuda` writes exactly such a file (the
# tensors marked as `cuda:0`), so you can see the error on any machine. On a machine with a GPU,
# this cell loads without error.

# %% tags=["raises-exception", "nbval-ignore-output"]
from course_utils.lesson_props.l09_persistence import save_as_if_on_cuda  # noqa: E402

save_as_if_on_cuda(model.state_dict(), path("from_gpu.pt"))
torch.load(path("from_gpu.pt"))

# %% [markdown]
# `map_location` says where the tensors should go: `"cpu"`, or your `device`.

# %%
state = torch.load(path("from_gpu.pt"), map_location="cpu")
print({name: t.device.type for name, t in state.items()})

# %% [markdown]
# ### The model changed: missing, unexpected and reshaped entries
#
# `load_state_dict` is strict: every key must match in both directions. Add a layer to the model
# and the old checkpoint no longer loads:

# %%
bigger = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 10),
                       nn.ReLU(), nn.Linear(10, 10))

# %% [markdown]
# **Predict the output** (value): Loading the 4-layer checkpoint into `bigger`, the same layers plus two more, raises (strict by default). Which loads work: a `bigger.load_state_dict(sd, strict=False)`, b `bigger[:4].load_state_dict(sd)`, c `bigger.load_state_dict(sd, assign=True)`, d `bigger.load_state_dict({k: v for k, v in sd.items() if k.startswith('3.')})`? Answer with the list of letters in order, such as `['c']`.

# %% tags=["predict:strict_missing_keys"]
quiz.strict_missing_keys(
    ### BEGIN PREDICTION
    ['a', 'b']
    ### END PREDICTION
)

# %% tags=["raises-exception"]
bigger.load_state_dict(torch.load(path("digits.pt")))

# %% [markdown]
# `strict=False` loads what matches and *returns* the keys that did not. Read them: a typo in
# a layer name becomes a silently untrained layer. (`bigger[:4].load_state_dict(...)` works too:
# a slice of a `Sequential` shares its layers and has exactly the file's keys. `assign=True`
# changes how tensors are copied, not which keys must be there.)

# %%
result = bigger.load_state_dict(torch.load(path("digits.pt")), strict=False)
print("missing:   ", result.missing_keys)
print("unexpected:", result.unexpected_keys)

# %% [markdown]
# `strict=False` does not forgive tensors whose **shape** changed, which happens when you reuse
# a trained model for a task with a different number of classes:

# %%
five_classes = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 5))

# %% [markdown]
# **Predict the output** (value): A 10-class checkpoint `sd` into `five`, the same layers with a 5-output last layer `3`: which loads work: a `five.load_state_dict(sd, strict=False)`, b `five.load_state_dict({k: v for k, v in sd.items() if not k.startswith('3.')}, strict=False)`, c `five[:3].load_state_dict({k: v for k, v in sd.items() if not k.startswith('3.')})`, d `five.load_state_dict(sd, assign=True)`? Answer with the list of letters in order, such as `['c']`.

# %% tags=["predict:shape_mismatch_not_strict"]
quiz.shape_mismatch_not_strict(
    ### BEGIN PREDICTION
    ['b', 'c']
    ### END PREDICTION
)

# %% tags=["raises-exception"]
five_classes.load_state_dict(torch.load(path("digits.pt")), strict=False)

# %% [markdown]
# ### Exercise 1: load what fits
#
# Write `load_matching(model, state_dict)`. It loads every entry of `state_dict` whose key exists
# in `model.state_dict()` **and** whose shape matches, and leaves everything else in the model
# as it is. It returns the sorted list of the model's `state_dict` keys that were **not**
# loaded: the layers that still need training. The check uses models with BatchNorm, so buffers
# count too.

# %% tags=["answer:load_matching"]
def load_matching(model, state_dict):
    ### BEGIN SOLUTION
    own = model.state_dict()
    matching = {k: v for k, v in state_dict.items() if k in own and own[k].shape == v.shape}
    model.load_state_dict(matching, strict=False)
    return sorted(k for k in own if k not in matching)
    ### END SOLUTION


# %% tags=["check:load_matching"]
ex.load_matching.check(load_matching)

# %% [markdown]
# ### Wrapped models rename their keys
#
# `DistributedDataParallel` (lesson 10) wraps your model and stores it as its attribute
# `module`, so every key of its `state_dict` gets a `module.` prefix. A single process can build
# a DDP model too: a one-rank "group" whose store lives in memory.

# %%
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
ddp_model = DDP(make_model())
print(list(ddp_model.state_dict()))
torch.save(ddp_model.state_dict(), path("ddp.pt"))

# %% tags=["raises-exception"]
make_model().load_state_dict(torch.load(path("ddp.pt")))

# %% [markdown]
# The cure is at the source: save `ddp_model.module.state_dict()`, the wrapped model's own
# keys. (For a file that already has the prefix, PyTorch has a helper that removes one given
# prefix in place: `torch.nn.modules.utils.consume_prefix_in_state_dict_if_present`.)

# %%
torch.save(ddp_model.module.state_dict(), path("unwrapped.pt"))
print(make_model().load_state_dict(torch.load(path("unwrapped.pt"))))

# %% [markdown]
# ### Exercise 2: a checkpoint from the GPU server
#
# A colleague trained on the GPU server and sent three files. On your CPU machine, each fails
# twice: `torch.load` stops first, with the error of section 3, and once the tensors land on the
# CPU the model refuses the keys. The files below are made the way the server made them (real
# wrappers, tensors marked as on `cuda:0`); `torch.compile` wraps a model without compiling
# anything until it is called. Here is what the second error says for each:

# %%
colleague = {
    "server_ddp.pt": DDP(make_model()),
    "server_compiled.pt": torch.compile(make_model()),
    "server_compiled_ddp.pt": torch.compile(DDP(make_model())),
}
for name, wrapped in colleague.items():
    save_as_if_on_cuda(wrapped.state_dict(), path(name))
dist.destroy_process_group()

for name in colleague:
    try:
        make_model().load_state_dict(torch.load(path(name), map_location="cpu", weights_only=True))
    except RuntimeError as error:
        print(name, *[line.strip()[:100] for line in str(error).splitlines()[1:]], sep="\n    ")

# %% [markdown]
# Write `load_state_dict_cpu(path)`: it loads such a file **safely** (`weights_only=True`) and
# returns a new `state_dict` that the plain, unwrapped model loads strictly on a CPU-only
# machine. The files the check writes come from a GPU or a CPU machine, from a model wrapped in
# DDP, compiled, both (in either order) or neither; some merge wrapped entries with plain ones.
# The models' own layers have names such as `submodule`, `encoder` or `module_list.0`, never
# `module` or `_orig_mod`. **Decide, from the errors above, what in a key is a wrapper's and
# what is your model's.** One file carries a harmless payload, which must not run.

# %% tags=["answer:load_state_dict_cpu"]
def load_state_dict_cpu(path):
    ### BEGIN SOLUTION
    state_dict = torch.load(path, map_location="cpu", weights_only=True)  # tensors land in CPU memory
    wrappers = ("module.", "_orig_mod.")  # DDP's attribute, torch.compile's: one name per wrapper

    def unwrapped(key):
        while key.startswith(wrappers):  # wrappers stack, in either order; only the front is theirs
            key = key.split(".", 1)[1]
        return key

    return {unwrapped(key): value for key, value in state_dict.items()}
    ### END SOLUTION


# %% tags=["check:load_state_dict_cpu"]
ex.load_state_dict_cpu.check(load_state_dict_cpu)

# %% [markdown]
# ## 4. Checkpoints that resume exactly
#
# A training run depends on more than the weights. To continue an interrupted run *exactly*,
# a checkpoint needs everything whose state the coming steps read, and every stateful object of
# a run has a way to hand that state over as tensors and plain values, and to take it back.
# Two examples that are not in this lesson's training run: an exponential learning-rate
# schedule, and a generator that draws a random crop position for augmentation:

# %%
probe = torch.nn.Parameter(torch.zeros(1))
opt = torch.optim.SGD([probe], lr=1.0)
decay = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
for _ in range(3):
    opt.step()
    decay.step()
print("schedule state:", {k: v for k, v in decay.state_dict().items() if k in ("last_epoch", "_last_lr")})

crops = torch.Generator().manual_seed(7)
saved = crops.get_state()                                # a uint8 tensor
print("next crops:", torch.randint(0, 32, (3,), generator=crops).tolist())
crops.set_state(saved)
print("replayed:  ", torch.randint(0, 32, (3,), generator=crops).tolist())

# %% [markdown]
# (A run with a `GradScaler` would save `scaler.state_dict()` too; on a GPU, the CUDA random
# states as well.)
#
# ### Exercise 3: save a checkpoint
#
# Write `save_checkpoint(path, model, optimizer, scheduler, epoch, loader_generator)`: it
# writes, with `torch.save`, one dict from which training continues **bit-identically**. `epoch`
# is the number of epochs completed; `loader_generator` is the generator the training
# `DataLoader` shuffles with. The check trains a small model with dropout, saves with your
# function halfway through, loads the file in a "new process" (fresh objects, a different
# random state), trains on, and compares the final weights with the uninterrupted run's, bit
# for bit. It writes to a temporary folder.
#
# **Decide what the rest of the run depends on.** The format is shared with Exercise 4's loader
# (and the capstone's): one entry per argument under the argument's name (`"model"`,
# `"optimizer"`, ... `"epoch"`), holding what restores that argument, plus an entry `"rng_state"`
# for the one piece of state that none of the arguments holds. Only tensors and plain Python
# values: the file must load with `torch.load(path, weights_only=True)`.

# %% tags=["answer:save_checkpoint"]
def save_checkpoint(path, model, optimizer, scheduler, epoch, loader_generator):
    ### BEGIN SOLUTION
    torch.save({
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "epoch": epoch,
        "rng_state": torch.get_rng_state(),
        "loader_generator": loader_generator.get_state(),
    }, path)
    ### END SOLUTION


# %% tags=["check:save_checkpoint"]
ex.save_checkpoint.check(save_checkpoint)

# %% [markdown]
# ### Exercise 4: repair the loader
#
# A teammate wrote the loader for this format. It runs without an error and the resumed run
# trains well, but it does not end with the uninterrupted run's weights, and the code review
# refused it as unsafe as well:

# %%
def first_attempt_load(path, model, optimizer, scheduler, loader_generator):
    checkpoint = torch.load(path, weights_only=False)
    model.load_state_dict(checkpoint["model"])
    model.eval()
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.last_epoch = checkpoint["epoch"]
    torch.manual_seed(checkpoint["epoch"])
    loader_generator.set_state(checkpoint["loader_generator"])
    return checkpoint["epoch"] + 1


# %% [markdown]
# Write `load_checkpoint(path, model, optimizer, scheduler, loader_generator)`, the loader it
# was meant to be. The objects it gets are built fresh in a new process (other weights, another
# random state); after it, the caller trains on with
# `for epoch in range(load_checkpoint(...), num_epochs)`, and the run must end **bit-identical**
# to the uninterrupted one. The files may come from anyone. **Decide, for each line of the first
# attempt, whether it is right, and what its author misunderstood where it is not.**

# %% tags=["answer:load_checkpoint"]
def load_checkpoint(path, model, optimizer, scheduler, loader_generator):
    ### BEGIN SOLUTION
    checkpoint = torch.load(path, weights_only=True)  # a file from anyone: no code may run
    model.load_state_dict(checkpoint["model"])  # and leave its mode to the training loop
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])  # its whole state, not only the counter
    torch.set_rng_state(checkpoint["rng_state"])  # continue the stream; a seed would restart it
    loader_generator.set_state(checkpoint["loader_generator"])
    return checkpoint["epoch"]  # epochs done: the first one still to run
    ### END SOLUTION


# %% tags=["check:load_checkpoint"]
ex.load_checkpoint.check(load_checkpoint)

# %% [markdown]
# ### Seeing it: fingerprints of the weights
#
# "Nearly equal" hides bugs, so compare weights **bit for bit**. A SHA-256 hash of every
# entry's name and raw bytes changes if a single bit changes anywhere:

# %%
def weights_sha256(model):
    h = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:16]


def make_training(seed):
    """A fresh run: model, optimizer, scheduler, and a DataLoader shuffled by its own generator."""
    torch.manual_seed(seed)
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    generator = torch.Generator().manual_seed(seed)
    loader = DataLoader(train_set, batch_size=128, shuffle=True, generator=generator)
    return model, optimizer, scheduler, loader, generator


num_epochs, stop_after = 5, 2

# the uninterrupted run
model, optimizer, scheduler, loader, generator = make_training(seed=0)
train(model, optimizer, loader, range(num_epochs), scheduler)
uninterrupted = weights_sha256(model)
uninterrupted_state = {k: v.clone() for k, v in model.state_dict().items()}

# the same run, interrupted after 2 epochs ...
model, optimizer, scheduler, loader, generator = make_training(seed=0)
train(model, optimizer, loader, range(stop_after), scheduler)
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(), "epoch": stop_after,
            "rng_state": torch.get_rng_state(), "loader_generator": generator.get_state()},
           path("checkpoint.pt"))
del model, optimizer, scheduler, loader, generator       # the process "crashes"


def resume(skip=()):
    """A new process: different initial weights and random state, then load and continue.
    The pieces named in `skip` are not restored."""
    model, optimizer, scheduler, loader, generator = make_training(seed=123)
    checkpoint = torch.load(path("checkpoint.pt"))
    model.load_state_dict(checkpoint["model"])
    if "optimizer" not in skip:
        optimizer.load_state_dict(checkpoint["optimizer"])
    if "scheduler" not in skip:
        scheduler.load_state_dict(checkpoint["scheduler"])
    if "rng_state" not in skip:
        torch.set_rng_state(checkpoint["rng_state"])
    if "loader_generator" not in skip:
        generator.set_state(checkpoint["loader_generator"])
    train(model, optimizer, loader, range(checkpoint["epoch"], num_epochs), scheduler)
    return model


resumed = resume()
print("resumed == uninterrupted, bit for bit:", weights_sha256(resumed) == uninterrupted)

# %% [markdown]
# The fingerprints themselves (they depend on your CPU and PyTorch build, but the two always
# agree with each other):

# %% tags=["nbval-ignore-output"]
print("uninterrupted:", uninterrupted)
print("resumed:      ", weights_sha256(resumed))

# %% [markdown]
# Now leave out one piece at a time. Each omission changes the result. The runs still train
# fine, which is exactly why such bugs go unnoticed:

# %%
left_out = {}
for piece in ["optimizer", "scheduler", "rng_state", "loader_generator"]:
    model = resume(skip={piece})
    left_out[piece] = model
    print(f"without {piece:17s} bit-identical: {weights_sha256(model) == uninterrupted}")

# %% tags=["nbval-ignore-output"]
for piece, model in left_out.items():
    state = model.state_dict()
    diff = max((state[k] - v).abs().max().item() for k, v in uninterrupted_state.items())
    print(f"without {piece:17s} largest weight difference {diff:.3f}, "
          f"test accuracy {accuracy(model):.1%}")

# %% [markdown]
# ### Writing a checkpoint safely
#
# A checkpoint is written while training runs, and training gets interrupted: a full disk, a
# killed job, or an object in the dict that cannot be saved. What happens to the *previous*
# checkpoint if `torch.save` fails halfway through overwriting it?

# %% tags=["nbval-ignore-output"]
torch.save({"model": resumed.state_dict(), "epoch": num_epochs}, path("latest.pt"))
print("good checkpoint:", os.path.getsize(path("latest.pt")), "bytes")
try:
    # the dict also holds something torch.save cannot write: a function
    torch.save({"model": resumed.state_dict(), "on_resume": lambda: None}, path("latest.pt"))
except Exception as error:
    print(type(error).__name__)
print("after the failed save:", os.path.getsize(path("latest.pt")), "bytes")

# %% tags=["raises-exception", "nbval-ignore-output"]
torch.load(path("latest.pt"))

# %% [markdown]
# The good checkpoint is gone: `torch.save` opened the file for writing (which empties it) and
# died half-way. The cure is the classic **atomic write**: write to a temporary file in the same
# folder, make sure its bytes are on disk (`fsync`), then `os.replace` it over the old name.
# `os.replace` swaps the name in one step (on one file system, on Linux, macOS and Windows), so
# the file is always either the old checkpoint or the new one, never half of one:

# %%
def save_atomically(obj, final_path):
    folder = os.path.dirname(os.path.abspath(final_path))
    handle, tmp_path = tempfile.mkstemp(dir=folder, suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())          # the bytes are on disk before the name points at them
        os.replace(tmp_path, final_path)  # one step: old file or new file, never half
    except BaseException:
        os.unlink(tmp_path)
        raise


save_atomically({"model": resumed.state_dict(), "epoch": num_epochs}, path("latest.pt"))
try:
    save_atomically({"model": resumed.state_dict(), "on_resume": lambda: None}, path("latest.pt"))
except Exception as error:
    print(type(error).__name__)
print("the old checkpoint still loads:", torch.load(path("latest.pt"))["epoch"] == num_epochs)
print("no temporary file left:", [f for f in os.listdir(workdir) if f.endswith(".tmp")])

# %% [markdown]
# ### Resuming in the middle of an epoch
#
# Long epochs (hours on a large dataset) make "resume from the last finished epoch" expensive.
# To stop after batch `b` of an epoch and continue exactly, the checkpoint needs, besides the
# model and optimizer:
#
# - the loader generator's state **at the start of the epoch**: the epoch's shuffled order is
#   drawn from it when the loop asks the loader for its first batch, so restoring it recreates
#   the same order;
# - how many batches of the epoch are done, so the resumed run skips them;
# - the global RNG state at the moment of stopping (dropout masks of the next batches).

# %%
def train_from(model, optimizer, loader, generator, num_epochs, start=(0, 0), epoch_state=None,
               stop=None):
    """Train from batch `start[1]` of epoch `start[0]`. When `stop` = (epoch, batch) is reached,
    return a mid-epoch checkpoint instead of training on."""
    model.train()
    epoch, done = start
    while epoch < num_epochs:
        if epoch_state is None:
            epoch_state = generator.get_state()    # this epoch's order is drawn from here
        else:
            generator.set_state(epoch_state)       # resuming: the same order again
        for batch, (X, y) in enumerate(loader):
            if batch < done:                       # done before the interruption
                continue
            if (epoch, batch) == stop:
                return {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "epoch": epoch, "batches_done": batch, "epoch_loader_state": epoch_state,
                        "rng_state": torch.get_rng_state()}
            optimizer.zero_grad()
            loss_fn(model(X), y).backward()
            optimizer.step()
        epoch, done, epoch_state = epoch + 1, 0, None
    return None


def fresh(seed):
    model, optimizer, _, loader, generator = make_training(seed)
    return model, optimizer, loader, generator


model, optimizer, loader, generator = fresh(seed=0)
train_from(model, optimizer, loader, generator, num_epochs=3)
straight_through = weights_sha256(model)

model, optimizer, loader, generator = fresh(seed=0)
checkpoint = train_from(model, optimizer, loader, generator, num_epochs=3, stop=(1, 5))
save_atomically(checkpoint, path("mid_epoch.pt"))
del model, optimizer, loader, generator, checkpoint      # the job is killed in epoch 1

model, optimizer, loader, generator = fresh(seed=123)    # a new process
checkpoint = torch.load(path("mid_epoch.pt"))
model.load_state_dict(checkpoint["model"])
optimizer.load_state_dict(checkpoint["optimizer"])
torch.set_rng_state(checkpoint["rng_state"])
train_from(model, optimizer, loader, generator, num_epochs=3,
           start=(checkpoint["epoch"], checkpoint["batches_done"]),
           epoch_state=checkpoint["epoch_loader_state"])
print("stopped after 5 batches of epoch 1, resumed, bit-identical:",
      weights_sha256(model) == straight_through)

# %% [markdown]
# Skipping batches still loads them, which is cheap here (the data is in memory) and slow for
# a dataset that decodes images in worker processes. `torchdata`'s `StatefulDataLoader` (see
# the ecosystem map in lesson 12) is a drop-in `DataLoader` with `state_dict()` and
# `load_state_dict()` that records the position itself, including in its workers.

# %% [markdown]
# ## 5. safetensors
#
# `safetensors` is a file format that holds only tensors: a small JSON header (names, dtypes,
# shapes, offsets) followed by raw bytes. It cannot contain code, so loading it is safe by
# construction. It loads fast, and the Hugging Face Hub uses it for model weights.

# %%
from safetensors.torch import load_file, load_model, save_file, save_model  # noqa: E402

save_file(resumed.state_dict(), path("digits.safetensors"), metadata={"epochs": str(num_epochs)})
again = make_model()
again.load_state_dict(load_file(path("digits.safetensors")))
print("same weights:", weights_sha256(again) == weights_sha256(resumed))

# %% [markdown]
# It has limits. Values must be tensors (metadata are strings only), so a training checkpoint
# with an epoch number or optimizer settings needs `torch.save`:

# %% tags=["raises-exception"]
save_file({"weights": torch.ones(2), "epoch": 3}, path("checkpoint.safetensors"))

# %% [markdown]
# It also refuses tensors that share memory. *Tied weights* are the common case: language
# models often use one matrix as both the input embedding and the output layer. `save_file`
# raises (the order of the names in the message varies from run to run), and `save_model` /
# `load_model` handle the sharing for you:

# %%
class TiedLM(nn.Module):
    def __init__(self, vocab=20, dim=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.out = nn.Linear(dim, vocab, bias=False)
        self.out.weight = self.embed.weight          # one matrix, two names


tied = TiedLM()

# %% tags=["raises-exception", "nbval-ignore-output"]
save_file(tied.state_dict(), path("tied.safetensors"))

# %%
save_model(tied, path("tied.safetensors"))
tied_again = TiedLM()
load_model(tied_again, path("tied.safetensors"))
print("still tied after loading:", tied_again.out.weight is tied_again.embed.weight)
print("same values:", torch.equal(tied_again.embed.weight, tied.embed.weight))

# %% [markdown]
# ### The Hugging Face format: `save_pretrained` and `from_pretrained`
#
# A `state_dict` file needs your class *and the arguments you built it with*: a model saved
# with `hidden=32` does not load into one built with the default 64. Hugging Face's
# `PyTorchModelHubMixin` (from the `huggingface_hub` package) adds two methods to any
# `nn.Module`: `save_pretrained(folder)` writes the weights as safetensors **plus a `config.json`
# with the constructor's arguments**, and `from_pretrained(folder)` builds the model with those
# arguments and loads the weights. A folder works offline; the same calls also read and write
# repositories on the Hugging Face Hub (`push_to_hub`, or a repository name instead of a folder).

# %%
os.environ["HF_HUB_OFFLINE"] = "1"     # this notebook never talks to the Hub
from huggingface_hub import PyTorchModelHubMixin  # noqa: E402


class DigitMLP(nn.Module, PyTorchModelHubMixin):
    def __init__(self, hidden: int = 64, dropout: float = 0.2):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Dropout(dropout),
                                 nn.Linear(hidden, 10))

    def forward(self, x):
        return self.net(x)


small = DigitMLP(hidden=32)
small.save_pretrained(path("digit-mlp"))
print(sorted(os.listdir(path("digit-mlp"))))
with open(path("digit-mlp/config.json")) as f:
    print(f.read())

# %% [markdown]
# `from_pretrained` is a class method: no need to know `hidden=32` to get the model back. It
# also returns the model in **eval** mode, ready for inference (call `.train()` to fine-tune):

# %%
loaded = DigitMLP.from_pretrained(path("digit-mlp"))
print("hidden units:", loaded.net[0].out_features, "| training mode:", loaded.training)
print("same weights:", weights_sha256(loaded) == weights_sha256(small))

# %% [markdown]
# ## 6. Exporting: a model without your Python code
#
# A `state_dict` needs your model class to be useful. An **export** captures the computation
# itself as a graph that runs without your code: in another Python program through
# `torch.export`, or in other languages and runtimes through ONNX.
#
# ### `torch.export`
#
# The exported graph records dropout and BatchNorm the way they behave at export time, and it
# cannot be switched afterwards. Exporting with just an example input fixes *every* shape,
# including the batch size:

# %%
model = resumed.eval()
example = X_test[:4]
program = torch.export.export(model, (example,))

# %% tags=["raises-exception"]
program.module()(X_test[:7])

# %% [markdown]
# `dynamic_shapes` says, for each input, which dimensions may vary: a dict from a dimension's
# index to a named `torch.export.Dim`. Every dimension not named stays fixed. Here a model that
# averages a sequence of feature vectors over time is exported for sequences of any **length**
# (dimension 1):

# %%
class MeanOverTime(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(64, 10)

    def forward(self, x):                  # x: (N, T, 64)
        return self.linear(x.mean(dim=1))


steps = torch.export.Dim("steps")
seq_program = torch.export.export(MeanOverTime().eval(), (torch.randn(2, 5, 64),),
                                  dynamic_shapes=({1: steps},))
print(seq_program.module()(torch.randn(2, 9, 64)).shape)

# %% tags=["raises-exception"]
seq_program.module()(torch.randn(3, 5, 64))   # dimension 0 was not named: it stays 2

# %% [markdown]
# Save an exported program as a `.pt2` file. Loading it needs no model class:

# %%
torch.export.save(program, path("digits.pt2"))
reloaded = torch.export.load(path("digits.pt2"))
with torch.no_grad():
    print("same outputs as the model:", torch.allclose(reloaded.module()(example), model(example)))

# %% [markdown]
# ### Exercise 5: export with a dynamic batch
#
# Write `export_with_dynamic_batch(model, example_input)`: it returns an `ExportedProgram` of
# `model` that a prediction service can call with **any number of samples**, and that computes
# what the trained model predicts. The check's models arrive straight from training (in
# training mode, with dropout and BatchNorm); some take a batch of feature vectors `(N, F)`,
# others a batch of 1-D signals `(N, C, L)` whose flattened features feed a `Linear`. The
# example input a caller hands you may hold any number of samples, a single one included. The
# check calls your program with batches of other sizes (1 and 1000 among them) and compares
# with the model's predictions.
#
# Decide which dimension may vary (and which may not), what state the model must be in, and
# what to do with an example that cannot show torch.export that a dimension varies.

# %% tags=["answer:export_with_dynamic_batch"]
def export_with_dynamic_batch(model, example_input):
    ### BEGIN SOLUTION
    model.eval()  # dropout off, BatchNorm's running statistics: the graph records the mode
    if example_input.shape[0] < 2:  # export treats a size of 1 as a constant: show it a batch of 2
        example_input = example_input.expand(2, *example_input.shape[1:])
    batch = torch.export.Dim("batch")  # only the batch varies: the weights fix C, L and F
    return torch.export.export(model, (example_input,), dynamic_shapes=({0: batch},))
    ### END SOLUTION


# %% tags=["check:export_with_dynamic_batch"]
ex.export_with_dynamic_batch.check(export_with_dynamic_batch)

# %% [markdown]
# ### ONNX, and running it with onnxruntime
#
# ONNX is the common format of inference engines (onnxruntime, TensorRT, OpenVINO, browsers).
# `torch.onnx.export` uses the `torch.export`-based exporter (`dynamo=True`), which needs the
# `onnxscript` package. Two settings matter:
#
# - `external_data=False` writes **one** `.onnx` file. Otherwise the weights go into a separate
#   `.onnx.data` file, and a model file copied without it is broken.
# - `dynamic_shapes=` declares the dynamic batch, as for `torch.export`. The old `dynamic_axes=`
#   is meant for the previous exporter.
#
# The exporter is chatty. It logs that torchvision is not installed (it registers torchvision's
# operators when that package is present, which this course does not need). In PyTorch 2.13 it
# also triggers a `FutureWarning` about `LeafSpec` from inside PyTorch itself, not from our code.
# Both are harmless.

# %% tags=["nbval-ignore-output"]
batch = torch.export.Dim("batch")
onnx_program = torch.onnx.export(model, (example,), path("digits.onnx"), dynamo=True,
                                 external_data=False, dynamic_shapes=({0: batch},), verbose=False)

# %%
print(sorted(name for name in os.listdir(workdir) if ".onnx" in name))

# %% [markdown]
# onnxruntime runs the file on NumPy arrays. The input's name and shape come from the file, and
# the batch dimension is the symbol we declared:

# %%
import onnxruntime as ort  # noqa: E402

session = ort.InferenceSession(path("digits.onnx"), providers=["CPUExecutionProvider"])
model_input = session.get_inputs()[0]
print(model_input.name, model_input.shape, model_input.type)

X_new = X_test[:9]
onnx_logits = session.run(None, {model_input.name: X_new.numpy()})[0]
with torch.no_grad():
    torch_logits = model(X_new).numpy()
print("onnxruntime matches PyTorch:", np.allclose(onnx_logits, torch_logits, rtol=1e-4, atol=1e-5))
print("same predictions:", (onnx_logits.argmax(1) == torch_logits.argmax(1)).all())

# %% [markdown]
# ### TorchScript is deprecated
#
# Older tutorials export with `torch.jit.script` or `torch.jit.trace`. Both still work (in
# PyTorch 2.13 to 2.15) but are **deprecated** in favour of `torch.export` (and `torch.compile`
# for speed). How loudly depends on the version. Up to PyTorch 2.13 the warning is a
# `DeprecationWarning`, which Python hides by default outside `__main__`, so you may never have
# seen it. From 2.14 it is a `FutureWarning`, which Python always shows. The cell records the
# warning and prints its category, so you see the one your PyTorch uses:

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch.jit.script(model)        # deprecated: shown only to read its warning
messages = {f"{w.category.__name__}: {w.message}" for w in caught
            if issubclass(w.category, (DeprecationWarning, FutureWarning))}
print(*sorted(messages), sep="\n")

# %% [markdown]
# ## Recap
#
# - Save `model.state_dict()`, rebuild the model in code, `load_state_dict`, then call
#   `model.eval()` before predicting. Pickled whole models break when code moves.
# - `torch.load` defaults to `weights_only=True`. Keep it for any file you did not write:
#   unpickling can run code. `safe_globals` allows one trusted extra type; `safetensors` cannot
#   hold code at all (but holds only tensors, and needs `save_model` for tied weights).
# - `map_location="cpu"` loads GPU checkpoints anywhere. `strict=False` returns the missing and
#   unexpected keys, so read them. Shape mismatches need filtering. A wrapper puts its
#   attribute's name in front of every key (DDP `module.`, `torch.compile` `_orig_mod.`), once per
#   wrapper: save the wrapped model's own `state_dict`, or remove those names from the front only.
# - A resumable checkpoint holds model, optimizer, scheduler, epoch, RNG state and the data
#   generator's state. With all of them, resuming is bit-identical, as a hash of the weights
#   proves. Mid-epoch, add the generator's state at the epoch's start and the batches done.
# - Write checkpoints atomically (temporary file, `fsync`, `os.replace`): a failed save then
#   never destroys the last good checkpoint.
# - `PyTorchModelHubMixin` adds `save_pretrained`/`from_pretrained`: weights as safetensors plus
#   the constructor's arguments in `config.json`, from a folder or the Hugging Face Hub.
# - `torch.export` with `Dim` for a dynamic batch gives a `.pt2`. `torch.onnx.export(...,
#   dynamo=True, external_data=False)` gives one `.onnx` file that onnxruntime runs.
#   TorchScript is deprecated.
#
# Next: **10_performance**, the same loop faster: devices, mixed precision and `torch.compile`.

# %% [markdown]
# ## Further reading
#
# PyTorch documentation:
#
# - [Serialization semantics](https://docs.pytorch.org/docs/stable/notes/serialization.html):
#   `state_dict`s, `torch.load`'s `weights_only` default and its allowlist (`add_safe_globals`),
#   `mmap`, and saving views.
# - [`torch.load`](https://docs.pytorch.org/docs/stable/generated/torch.load.html):
#   `map_location`, `weights_only`, `mmap`.
# - [`torch.export` API
#   reference](https://docs.pytorch.org/docs/stable/export/api_reference.html): `export`, `Dim`
#   and `dynamic_shapes`, `ExportedProgram`, `save` and `load`.
# - [`torch.onnx`](https://docs.pytorch.org/docs/stable/onnx.html): the dynamo-based ONNX
#   exporter.
#
# The best external material:
#
# - PyTorch tutorials, [Saving and loading
#   models](https://docs.pytorch.org/tutorials/beginner/saving_loading_models.html): the official
#   checkpoint recipes (inference, resuming, several models, warm-starting).
# - PyTorch tutorials, [`torch.export`
#   tutorial](https://docs.pytorch.org/tutorials/intermediate/torch_export_tutorial.html): graph
#   breaks, dynamic shapes and their constraints, at more length than section 6.
# - [safetensors documentation](https://huggingface.co/docs/safetensors/index): the format, and
#   why loading it cannot run code.
# - [huggingface_hub, integrating a
#   library](https://huggingface.co/docs/huggingface_hub/guides/integrations): how
#   `PyTorchModelHubMixin` stores the config, and `push_to_hub`.
# - [ONNX Runtime documentation](https://onnxruntime.ai/docs/): running the exported file from
#   Python and other languages, and its execution providers.
