# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 11 · Distributed training
#
# One device has a limit. Data parallelism trains one model on several processes at once, each
# with its own slice of every batch, and makes them agree on every step. This lesson is about
# that agreement: what the processes compute, what must be equal for the result to be the same
# as one big batch, and how to launch them.
#
# **Everything here runs on a plain CPU**: distributed training really starts two processes
# that talk to each other over `gloo`. The few GPU-only remarks say so.
#
# You will learn to
#
# 1. say why `DataParallel` is not the tool, and what DDP does instead;
# 2. shard data with `DistributedSampler`, `set_epoch` and its padding;
# 3. know when DDP equals the big batch: mean losses, equal shards, no plain BatchNorm;
# 4. accumulate gradients with `no_sync`, and merge BatchNorm statistics like `SyncBatchNorm`;
# 5. launch DDP with `torchrun` on one machine and on many, and where FSDP2 takes over.
#
# **Time: about 80 minutes** on your own, the five checked exercises included (about 39 of those minutes). *Run All* alone takes about 9.6 s on a 2-core CPU.

# %%
import os
import sys
import tempfile

import matplotlib.pyplot as plt
import torch
from torch import nn

from course_utils.datasets import digits_split
from course_utils.grading import exercises_for, predictions_for

ex = exercises_for("11_distributed")
quiz = predictions_for("11_distributed")  # predict-the-output questions
X_train, y_train, X_test, y_test = digits_split()   # scikit-learn's 8x8 digits, 64 features
loss_fn = nn.CrossEntropyLoss()

# %% [markdown]
# ## 1. Data parallelism
#
# With data parallelism, every process (a *rank*) holds a full copy of the model and gets a
# different slice of each batch. After `backward`, DDP **averages the gradients** of all ranks
# with an *all-reduce*, so every rank takes the same optimizer step and the copies stay
# identical. Two ranks with half a batch each compute what one process computes with the whole
# batch (up to the order of floating-point additions), in about half the time, and each needs
# only half the activation memory. "The same as the big batch" holds when the loss is a
# **mean** over the batch (averaging two half-batch means equals the whole-batch mean only for
# equal halves), the shards have **equal sizes** (`DistributedSampler` pads to ensure it), and
# the model has **no BatchNorm**: each rank would normalise with its own half batch's statistics
# unless you convert the model with `nn.SyncBatchNorm.convert_sync_batchnorm`.
#
# ### `DataParallel`, and why not
#
# Older code wraps a model in `nn.DataParallel(model)`. That is **one** process with one thread
# per GPU: every step it copies the weights from GPU 0 to the other GPUs, splits the batch,
# gathers all outputs back on GPU 0 and computes the loss there. Python's global interpreter
# lock serialises the threads, and GPU 0 does extra work and runs out of memory first. The
# PyTorch documentation recommends `DistributedDataParallel` instead, even on a single machine:
# one process per GPU, weights copied once at the start, and only the gradients exchanged.
# Without GPUs, `DataParallel` simply calls the module:

# %%
dp = nn.DataParallel(nn.Linear(4, 2))
print("devices it would use:", dp.device_ids, "| output:", tuple(dp(torch.randn(3, 4)).shape))

# %% [markdown]
# ### Who gets which samples: `DistributedSampler`
#
# Each rank builds the same shuffled order, seeded by the sampler's seed and the epoch, and the
# ranks share it out: each visits different items, and all visit the **same number** of them,
# so when the dataset does not divide evenly some items are visited twice. Otherwise one rank
# would wait forever in an all-reduce that the others never join. You must call
# `set_epoch(epoch)` at the start of every epoch, or every epoch repeats the same order:

# %% [markdown]
# **Predict the output** (value): What is `len(DistributedSampler(range(17), num_replicas=3, rank=2))`,
# the number of items rank 2 visits per epoch?

# %% tags=["predict:sampler_len"]
quiz.sampler_len(
    ### BEGIN PREDICTION
    6
    ### END PREDICTION
)

# %% [markdown]
# **Predict the output** (value): A `DistributedSampler(range(6), num_replicas=2, rank=0)` is
# iterated twice without `set_epoch` in between. Do the two orders differ: what is
# `list(sampler) != list(sampler)`?

# %% tags=["predict:no_set_epoch"]
quiz.no_set_epoch(
    ### BEGIN PREDICTION
    False
    ### END PREDICTION
)

# %%
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset  # noqa: E402

from course_utils.lesson_props.l11_distributed import plot_shards, shard_assignment  # noqa: E402

print("rank 2 visits", len(DistributedSampler(range(17), num_replicas=3, rank=2)), "items")
sampler = DistributedSampler(range(6), num_replicas=2, rank=0)
print("different orders without set_epoch:", list(sampler) != list(sampler))
for epoch in range(2):
    print(f"epoch {epoch}:", shard_assignment(10, world_size=3, epoch=epoch))

# %% [markdown]
# Play with it. Hatched boxes are repeated items that pad the last round.

# %% tags=["nbval-ignore-output"]
from ipywidgets import Checkbox, IntSlider, interact  # noqa: E402


def show_shards(n, world_size, epoch, shuffle):
    plot_shards(n, world_size, epoch, shuffle)
    plt.show()


interact(show_shards, n=IntSlider(10, 1, 24), world_size=IntSlider(3, 1, 4),
         epoch=IntSlider(0, 0, 5), shuffle=Checkbox(True));

# %% [markdown]
# ### Exercise 1: work out `DistributedSampler`'s rule
#
# A sampler is a rule, and you can read it off what it does. Without shuffling, the order is
# simply `0, 1, ..., n-1`, so these lists show how the ranks share the order out, and what
# happens when `n` does not divide by `world_size` (look closely at `n=2` with 4 ranks):

# %%
for n, world_size in [(7, 3), (2, 4), (10, 4), (6, 3)]:
    print(f"n={n:2d}, world_size={world_size}: ", shard_assignment(n, world_size, shuffle=False))

# %% [markdown]
# Write `shard_indices(n, world_size, rank, epoch, shuffle=True, seed=0)`. It returns the list
# of dataset indices (Python ints) that `rank` visits in `epoch`, exactly as
# `DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=shuffle, seed=seed)`
# gives them after `set_epoch(epoch)`, for a dataset of `n` items, without using the sampler.
# The one thing the lists cannot show you is how the shuffled order is drawn:
# `torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch))`, shared out by the
# same rule as the unshuffled one. An empty dataset (`n = 0`) gives every rank `[]`.
#
# The check compares your lists with the sampler's for many `n`, `world_size`, epochs and
# seeds, and says which part of the rule differs.

# %% tags=["answer:shard_indices"]
import math  # noqa: E402


def shard_indices(n, world_size, rank, epoch, shuffle=True, seed=0):
    ### BEGIN SOLUTION
    if shuffle:
        order = torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).tolist()
    else:
        order = list(range(n))
    total = math.ceil(n / world_size) * world_size
    if n:
        order = (order * math.ceil(total / n))[:total]
    return order[rank:total:world_size]
    ### END SOLUTION


# %% tags=["check:shard_indices"]
ex.shard_indices.check(shard_indices)

# %% [markdown]
# ### Exercise 2: what the all-reduce computes
#
# Simulate DDP in one process. Write `data_parallel_grads(model, loss_fn, X, y, world_size)`:
# split `X` and `y` into `world_size` equal shards (`X.chunk(world_size)`; the number of rows is
# a multiple of `world_size`). Each "rank" computes the gradients of its own shard's loss on its
# own copy of the model. Return the **average** over ranks: a list with one gradient tensor per
# parameter, in `model.parameters()` order. Leave the model you are given unchanged (no `.grad`
# left on it).
#
# With a mean-reduced loss and equal shards, the result equals the gradient of the whole batch.
# That equality is why DDP training matches single-process training.

# %% tags=["answer:data_parallel_grads"]
import copy  # noqa: E402


def data_parallel_grads(model, loss_fn, X, y, world_size):
    ### BEGIN SOLUTION
    summed = None
    for X_rank, y_rank in zip(X.chunk(world_size), y.chunk(world_size)):
        replica = copy.deepcopy(model)
        loss = loss_fn(replica(X_rank), y_rank)
        grads = torch.autograd.grad(loss, list(replica.parameters()))
        summed = list(grads) if summed is None else [s + g for s, g in zip(summed, grads)]
    return [s / world_size for s in summed]
    ### END SOLUTION


# %% tags=["check:data_parallel_grads"]
ex.data_parallel_grads.check(data_parallel_grads)

# %% [markdown]
# ### Unequal shards: when averaging is not the big batch
#
# The equality above needs equal shards. When they are not equal, for example because you
# split a batch with `chunk`, or because the last batch of an epoch is short and you did not
# let `DistributedSampler` pad, each rank's *mean* loss weighs its samples differently.

# %% [markdown]
# **Predict the output** (shape): What is the shape of `torch.arange(10).chunk(4)[-1]`?

# %% tags=["predict:chunk_last_shape"]
quiz.chunk_last_shape(
    ### BEGIN PREDICTION
    (1,)
    ### END PREDICTION
)

# %%
pieces = torch.arange(10).chunk(4)
print("chunk sizes:", [len(p) for p in pieces], "| last:", pieces[-1].shape)

# %% [markdown]
# With shards of 3, 3, 3 and 1 samples, the lone sample of the last rank counts as much as three
# samples of any other rank after DDP averages the four ranks' gradients.
#
# ### Exercise 3: correct the ranks' losses
#
# Write `rank_loss_scale(shard_sizes)`. `shard_sizes[r]` is how many samples rank `r` has in
# this step (every rank has at least one). Each rank computes the **mean** loss over its own
# samples, multiplies it by a factor, and calls `backward`; DDP then averages the gradients over
# the `len(shard_sizes)` ranks. Return the list of factors (Python floats, one per rank) that
# makes the averaged gradient exactly the gradient of the mean loss over all samples, as one
# process with the whole batch would compute it.

# %% tags=["answer:rank_loss_scale"]
def rank_loss_scale(shard_sizes):
    ### BEGIN SOLUTION
    world_size, total = len(shard_sizes), sum(shard_sizes)
    # rank r contributes (1 / world_size) * factor_r * (sum of its losses) / n_r, which must be
    # (sum of its losses) / total
    return [world_size * n / total for n in shard_sizes]
    ### END SOLUTION


# %% tags=["check:rank_loss_scale"]
ex.rank_loss_scale.check(rank_loss_scale)

# %% [markdown]
# ### Gradient accumulation with `no_sync`
#
# Gradient accumulation (lesson 05) sums the gradients of several micro-batches before one
# optimizer step, to train with a batch that does not fit in memory. Under DDP every `backward`
# all-reduces the gradients, but only the last one before the step needs to: the others send
# gradients over the network only to add more to them afterwards. `model.no_sync()` is a context
# manager that skips the all-reduce for the forward and backward passes run inside it; the
# gradients then accumulate locally in `.grad`, and the first backward outside it all-reduces
# the accumulated sum. DDP decides at the **forward** pass whether the backward will all-reduce.
#
# Real DDP needs a process group. `CountingDDP` from `course_utils.lesson_props.l11_distributed`
# stands in for it in this process: it calls the model, has the same `no_sync()`, and counts the
# all-reduces DDP would do:

# %%
from course_utils.lesson_props.l11_distributed import CountingDDP  # noqa: E402

torch.manual_seed(0)
ddp_model = CountingDDP(nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)))
for X_micro, y_micro in zip(X_train[:64].chunk(4), y_train[:64].chunk(4)):
    loss_fn(ddp_model(X_micro), y_micro).backward()
print("all-reduces without no_sync:", ddp_model.all_reduces)

# %% [markdown]
# ### Exercise 4: accumulate with one all-reduce
#
# Write `accumulate_grads(ddp_model, micro_batches, loss_fn)`. `micro_batches` is a list of
# `(X, y)` pairs of equal size, and `ddp_model` behaves like a DDP-wrapped model (`CountingDDP`
# in the check). Leave on the model's parameters the gradients that **one** batch made of all the
# micro-batches would give with a mean loss, starting from whatever `.grad` the model holds now
# as garbage from an earlier step. Constraints, as in real training: exactly **one** all-reduce,
# and one micro-batch's graph at a time (a backward per micro-batch). Do not take an optimizer
# step; return nothing.

# %% tags=["answer:accumulate_grads"]
import contextlib  # noqa: E402


def accumulate_grads(ddp_model, micro_batches, loss_fn):
    ### BEGIN SOLUTION
    ddp_model.zero_grad()
    k = len(micro_batches)
    for i, (X, y) in enumerate(micro_batches):
        last = i == k - 1
        with contextlib.nullcontext() if last else ddp_model.no_sync():  # sync only the last
            loss = loss_fn(ddp_model(X), y) / k       # mean of k equal means = the big mean
            loss.backward()
    ### END SOLUTION


# %% tags=["check:accumulate_grads"]
ex.accumulate_grads.check(accumulate_grads)

# %% [markdown]
# ### BatchNorm across ranks: `SyncBatchNorm`
#
# A `BatchNorm` layer normalises with the statistics of the batch it sees. Under DDP each rank
# sees only its shard, so the ranks normalise differently and the result is not the big batch's
# (with small per-rank batches it can hurt training). `nn.SyncBatchNorm` computes the mean and
# variance over **all** ranks' samples in the forward pass, with one extra collective per layer.
# Convert a model before wrapping it in DDP:

# %%
bn_model = nn.Sequential(nn.Linear(64, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 10))
print(nn.SyncBatchNorm.convert_sync_batchnorm(bn_model))

# %% [markdown]
# Without a process group (as here) it behaves like `BatchNorm1d`. Under DDP each rank sends
# only its count, mean and variance per channel, and the global statistics are computed from
# those, never from the samples themselves.
#
# ### Exercise 5: merge the ranks' statistics
#
# Write `merge_batch_stats(counts, means, variances)`. Rank `r` has `counts[r]` samples (a
# list of ints, each at least 1), and `means[r]` and `variances[r]` are its per-channel mean and
# **biased** variance (`var(unbiased=False)`, what BatchNorm normalises with): `means` and
# `variances` have shape `(world_size, channels)`. Return `(mean, variance)`, each of shape
# `(channels,)`: the mean and biased variance of all ranks' samples together, as if one process
# had seen them all. You do not have the samples.

# %% tags=["answer:merge_batch_stats"]
def merge_batch_stats(counts, means, variances):
    ### BEGIN SOLUTION
    n = torch.tensor(counts, dtype=means.dtype).unsqueeze(1)       # (world_size, 1)
    mean = (n * means).sum(0) / n.sum()
    # E[x^2] per rank is var + mean^2; the global variance is E[x^2] - mean^2, written stably as
    # the within-rank spread plus the spread of the ranks' means around the global mean
    variance = (n * (variances + (means - mean) ** 2)).sum(0) / n.sum()
    return mean, variance
    ### END SOLUTION


# %% tags=["check:merge_batch_stats"]
ex.merge_batch_stats.check(merge_batch_stats)

# %% [markdown]
# ### Why the training code goes into a script
#
# Each rank is a separate Python process. A new process cannot see anything defined in this
# notebook: it starts a fresh interpreter, unpickles the function it should run, and looks for
# it by name in its own `__main__` module, where the function does not exist. This is how
# `mp.spawn`, Windows, macOS (and Linux from Python 3.14) start processes. Try it with the
# standard library:

# %% tags=["nbval-ignore-output"]
import multiprocessing  # noqa: E402


def hello(rank):
    print("hello from rank", rank)


process = multiprocessing.get_context("spawn").Process(target=hello, args=(0,))
process.start()
process.join()

# %%
print("exit code:", process.exitcode)

# %% [markdown]
# Exit code 1 means the child process failed. The child prints its own traceback, which shows
# up under the cell in JupyterLab (in some setups only in the terminal that runs Jupyter). It
# ends with
#
# ```
# AttributeError: Can't get attribute 'hello' on <module '__main__' (built-in)>
# ```
#
# `torch.multiprocessing.spawn(hello, nprocs=2)` fails the same way and then raises
# `ProcessExitedException: process 1 terminated with exit code 1`. We do not run it here
# because it costs several seconds: each child imports PyTorch before it fails.

# %% [markdown]
# Functions that workers import from a module or a script work. So the training code goes into
# a script file, and `torchrun` starts one process per rank, each running that script. `torchrun`
# sets the environment variables `RANK`, `LOCAL_RANK`, `WORLD_SIZE`, `MASTER_ADDR` and
# `MASTER_PORT` that `init_process_group` reads. We write the script into a temporary folder,
# together with the training data, so the ranks do not each have to load scikit-learn.

# %%
scratch = tempfile.TemporaryDirectory(prefix="lesson11_")  # deleted when the kernel stops
workdir = scratch.name
data_path = os.path.join(workdir, "digits_train.pt")
torch.save({"X": X_train, "y": y_train}, data_path)
print(f"{len(X_train)} training samples saved for the ranks")

# %% [markdown]
# The script, line by line:
#
# - `torch.set_num_threads(1)`: two ranks on two cores. With the default thread count each rank
#   would start one thread per core, and four busy threads on two cores slow everything down.
# - `pick_device()`: NCCL is the backend for NVIDIA GPUs and needs one GPU per rank **on each
#   machine**, so the script compares the GPUs it sees with `LOCAL_WORLD_SIZE` (the ranks on this
#   machine), not with `WORLD_SIZE` (all ranks of all machines: 8 on 2 machines with 4 GPUs each,
#   where each machine sees only 4). With enough GPUs, rank `LOCAL_RANK` takes GPU number
#   `LOCAL_RANK` and makes it its current device (`torch.cuda.set_device`), so that everything
#   that uses "the" GPU, NCCL included, uses its own. Otherwise every rank runs on the CPU with
#   gloo.
# - `DistributedSampler` + `sampler.set_epoch(epoch)`: different data per rank, a new shuffle
#   each epoch.
# - `DDP(model)`: broadcasts rank 0's weights to all ranks, then all-reduces the gradients during
#   `backward`.
# - Only rank 0 saves, then `barrier()` keeps the other ranks from exiting before the file exists.
# - The script ends as every script should: `main()` returns and Python exits normally.

# %% tags=["nbval-ignore-output"]
# %%writefile {workdir}/ddp_train.py
"""Data-parallel training of a digit classifier.

Run with: torchrun --nproc_per_node=2 ddp_train.py --data DATA --out OUT
"""
import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

GLOBAL_BATCH = 64    # samples per optimizer step, all ranks together
NUM_EPOCHS = 3
LR = 0.5


def make_dataset(path):
    data = torch.load(path)                      # weights_only=True: only tensors are allowed
    return TensorDataset(data["X"], data["y"])


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


def pick_device():
    """This rank's device and the process group backend: one GPU per rank on this machine, or
    the CPU for all."""
    local_rank = int(os.environ["LOCAL_RANK"])               # this rank's number on this machine
    ranks_here = int(os.environ["LOCAL_WORLD_SIZE"])         # ranks on this machine
    if torch.cuda.device_count() >= ranks_here:
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank), "nccl"
    return torch.device("cpu"), "gloo"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    torch.set_num_threads(1)                     # one thread per rank
    device, backend = pick_device()
    dist.init_process_group(backend=backend)
    rank, world_size = dist.get_rank(), dist.get_world_size()   # over all machines

    dataset = make_dataset(args.data)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=GLOBAL_BATCH // world_size, sampler=sampler)
    model = DDP(make_model().to(device))
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(NUM_EPOCHS):
        sampler.set_epoch(epoch)                 # a new shuffle each epoch, the same on every rank
        totals = torch.zeros(2, device=device)   # this rank's summed loss and sample count
        for X, y in loader:
            X, y = X.to(device), y.to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(X), y)
            loss.backward()                      # DDP averages the gradients of all ranks here
            optimizer.step()
            totals[0] += loss.detach() * len(y)
            totals[1] += len(y)
        dist.all_reduce(totals)                  # sum over ranks (for the log line only)
        if rank == 0:
            print(f"epoch {epoch}: mean training loss {(totals[0] / totals[1]).item():.3f} "
                  f"({len(sampler)} samples per rank)", flush=True)

    if rank == 0:                                # one process writes the file
        torch.save(model.module.state_dict(), args.out)   # .module: the model inside DDP
    dist.barrier()                               # nobody exits before the file is written
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

# %% [markdown]
# Launch it. In a terminal you would type
# `torchrun --standalone --nproc_per_node=2 ddp_train.py --data ... --out ...`: `--standalone`
# means one machine, `--nproc_per_node=2` two ranks. From the notebook, the course's helper
# `torchrun(script, *args)` runs that command with this notebook's Python (`torchrun` is
# `python -m torch.distributed.run`) and returns the finished process. It adds one workaround,
# kept out of the script you study: with PyTorch 2.13 on CPU, gloo's threads outlive
# `destroy_process_group()` and Python's shutdown occasionally aborts a rank after all work is
# done, so the helper ends each rank with `os._exit` once the script has returned (read
# `course_utils/ddp_launch.py` for why that is not something to copy into your own scripts).
# torchrun also prints a notice that it sets `OMP_NUM_THREADS=1` for each rank, which is what we
# want. This takes several seconds: each rank starts Python, imports PyTorch and builds DDP.

# %% tags=["nbval-ignore-output"]
from course_utils.ddp_launch import torchrun  # noqa: E402

out_path = os.path.join(workdir, "ddp_weights.pt")
result = torchrun(os.path.join(workdir, "ddp_train.py"), "--data", data_path, "--out", out_path)
print(result.stdout)
if result.returncode != 0:
    print(result.stderr)
    raise RuntimeError(f"torchrun failed with exit code {result.returncode}")

# %% [markdown]
# Now check the claim. Train the same model in this one process, where each step uses
# **both** ranks' half batches at once. The script's functions can be imported here because
# they live in a file.

# %%
sys.path.insert(0, workdir)
import ddp_train  # noqa: E402

dataset = ddp_train.make_dataset(data_path)
model = ddp_train.make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=ddp_train.LR)
samplers = [DistributedSampler(dataset, num_replicas=2, rank=r, shuffle=True, seed=0)
            for r in range(2)]
loaders = [DataLoader(dataset, batch_size=ddp_train.GLOBAL_BATCH // 2, sampler=s) for s in samplers]
for epoch in range(ddp_train.NUM_EPOCHS):
    for s in samplers:
        s.set_epoch(epoch)
    for (X0, y0), (X1, y1) in zip(*loaders):
        X, y = torch.cat([X0, X1]), torch.cat([y0, y1])   # rank 0's half + rank 1's half
        optimizer.zero_grad()
        loss_fn(model(X), y).backward()
        optimizer.step()

ddp_weights = torch.load(out_path, map_location="cpu")   # rank 0 saved them from its GPU, if it had one
diff = max((ddp_weights[k] - v).abs().max().item() for k, v in model.state_dict().items())
print("same parameter names:", list(ddp_weights) == list(model.state_dict()))
print("largest weight difference below 1e-5:", diff < 1e-5)
with torch.no_grad():
    accuracy = (model(X_test).argmax(1) == y_test).float().mean().item()
print(f"test accuracy after {ddp_train.NUM_EPOCHS} epochs: {accuracy:.0%}")

# %% [markdown]
# Equal up to float32 rounding, but not bit-identical: the all-reduce adds the two ranks'
# gradients in a different order than a single backward pass sums the batch. The exact size of
# the difference depends on the machine:

# %% tags=["nbval-ignore-output"]
print(f"largest difference: {diff:.1e}")

# %% [markdown]
# ### From one machine to many
#
# The same script runs on several machines unchanged. Only the launch line changes: start it
# once on every machine (*node*), all pointing at one *rendezvous endpoint* (any node's address
# and a free port). The course's tests run this very script as two nodes on one machine, two
# `torchrun` agents meeting at `127.0.0.1`, and check its device choice for 2 machines with 4
# GPUs each:
#
# ```bash
# # on each of 2 machines with 4 GPUs each (8 ranks in total)
# torchrun --nnodes=2 --nproc_per_node=4 --rdzv-backend=c10d \
#          --rdzv-endpoint=node0.example.org:29500 --rdzv-id=digits-run-1 \
#          ddp_train.py --data ... --out ...
# ```
#
# `RANK` then runs over all 8 processes, `LOCAL_RANK` over the 4 on each machine, and
# `LOCAL_WORLD_SIZE` is 4. That is why the script counts GPUs against `LOCAL_WORLD_SIZE`, picks
# its GPU with `LOCAL_RANK`, and saves only on global rank 0. A file saved from a GPU remembers
# its device: load it with `map_location` where that GPU may not exist, as the check above does. Cluster schedulers
# such as SLURM start one `torchrun` per node for you.

# %% [markdown]
# ### Sharding the model: FSDP2
#
# DDP keeps a full copy of the model, its gradients and its optimizer state on every rank.
# When those do not fit on one GPU, *fully sharded data parallel* splits them: each rank stores
# a slice of every parameter, gathers the full layer just before it computes with it, and frees
# it again right after. In current PyTorch that is FSDP2, `torch.distributed.fsdp.fully_shard`,
# applied to each block and then to the whole model (`fully_shard(block)` for every block, then
# `fully_shard(model)`); the training loop stays the same. It needs a process group and pays off
# only for models of billions of parameters, so this course does not run it; see the FSDP2
# tutorial below.

# %% [markdown]
# ## Recap
#
# - `nn.DataParallel` is one process with threads, copying the weights every step; use
#   `DistributedDataParallel`: one process per rank, started by `torchrun` from a script (never
#   from notebook functions), gradients averaged by an all-reduce during `backward`.
# - `DistributedSampler` gives each rank every `world_size`-th item of one shared order, padded
#   so all ranks get as many; call `set_epoch(epoch)` or every epoch repeats the order.
# - DDP equals the big batch when the loss is a mean, the shards are equal (or the ranks'
#   losses are rescaled by `world_size * n_r / N`), and BatchNorm is converted to `SyncBatchNorm`,
#   which merges the ranks' counts, means and variances.
# - Gradient accumulation under DDP: divide each micro-batch loss by their number, run all but
#   the last forward and backward inside `model.no_sync()`, so only one all-reduce happens.
# - Save from rank 0 (`model.module.state_dict()`), `barrier()` before exiting; multi-node is the
#   same script with `--nnodes` and a rendezvous endpoint. When the model does not fit on one
#   device, FSDP2 (`fully_shard`) shards it.
#
# Next: **12_capstone**, a digit classifier from data to exported model.

# %% [markdown]
# ## Further reading
#
# PyTorch documentation:
#
# - [Distributed data parallel](https://docs.pytorch.org/docs/stable/notes/ddp.html) (a note):
#   how DDP buckets gradients and overlaps the all-reduce with `backward`; the
#   [`DistributedDataParallel` reference](https://docs.pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html),
#   with `no_sync`.
# - [`torchrun`](https://docs.pytorch.org/docs/stable/elastic/run.html): the launcher, multi-node
#   rendezvous and the environment variables it sets;
#   [`torch.distributed`](https://docs.pytorch.org/docs/stable/distributed.html): process groups
#   and collectives.
# - [`SyncBatchNorm`](https://docs.pytorch.org/docs/stable/generated/torch.nn.SyncBatchNorm.html)
#   and [`DistributedSampler`](https://docs.pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler).
# - [Getting started with FSDP2](https://docs.pytorch.org/tutorials/intermediate/FSDP_tutorial.html):
#   `fully_shard`, step by step.
#
# The best external material:
#
# - PyTorch tutorials, [Getting started with distributed data
#   parallel](https://docs.pytorch.org/tutorials/intermediate/ddp_tutorial.html): DDP step by
#   step, then with `torchrun`.
# - S. Li et al., [*PyTorch Distributed: Experiences on Accelerating Data Parallel
#   Training*](https://arxiv.org/abs/2006.15704), VLDB 2020: the design of DDP, by its authors.
# - P. Goyal et al., [*Accurate, Large Minibatch SGD: Training ImageNet in 1
#   Hour*](https://arxiv.org/abs/1706.02677): the linear learning-rate scaling rule and warm-up
#   for large global batches.
# - Sebastian Raschka, [*PyTorch in One
#   Hour*](https://sebastianraschka.com/teaching/pytorch-1h/), its last sections: training on
#   several GPUs with DDP from a script.
