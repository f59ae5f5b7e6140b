# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 00 · Start here
#
# Welcome to **PyTorch from the ground up**. Every lesson is a notebook like this one: short
# explanations, code you run, and exercises that are checked right here, in the notebook.
#
# This first notebook
#
# 1. checks that your environment works (PyTorch version, device, threads),
# 2. shows how exercises, checks, hints and solutions work,
# 3. gives you one warm-up exercise.
#
# **Time: about 25 minutes** on your own, the one checked exercise included (about 4 of those minutes). *Run All* alone takes about 4.8 s on a 2-core CPU.
#
# Run a cell with **Shift+Enter**. Run the whole notebook with *Run → Run All Cells*.

# %% [markdown]
# ## 1. Your environment
#
# The course pins **torch 2.13**; every lesson runs on a laptop CPU in well under a minute.
# If you have an NVIDIA GPU (CUDA) or an Apple GPU (MPS), lesson 10 uses it, but nothing
# requires one.

# %%
import platform

import torch

print("Python  ", platform.python_version())
print("PyTorch ", torch.__version__)

# %% tags=["nbval-ignore-output"]
if torch.cuda.is_available():
    device = torch.device("cuda")
elif torch.backends.mps.is_available():
    device = torch.device("mps")
else:
    device = torch.device("cpu")
print("device  ", device)
print("threads ", torch.get_num_threads(), "(CPU threads PyTorch uses for one operation)")

# %% [markdown]
# A tiny computation to prove PyTorch works. `torch.manual_seed` makes the random numbers
# repeatable: run the cell twice and you get the same matrix.

# %%
torch.manual_seed(0)
a = torch.randn(2, 3)
print(a)
print("sum of squares:", (a**2).sum().item())

# %% [markdown]
# ## 2. How exercises work
#
# Each lesson loads its exercises once, near the top:

# %%
from course_utils.grading import exercises_for

ex = exercises_for("00_start_here")
ex

# %% [markdown]
# An exercise asks you to write a **function**. The cell below the exercise text contains
# its skeleton with `raise NotImplementedError(...)`: replace that line with your code and
# run the cell. Then run the **check cell** underneath, which looks like
#
# ```python
# ex.celsius_to_fahrenheit.check(celsius_to_fahrenheit)
# ```
#
# You pass your function itself (no parentheses after its name). The check calls it on a few
# fixed inputs and on **fresh random inputs every time**, compares with a reference solution,
# and tells you one of three things:
#
# - ✅ **Correct**,
# - ❌ **Incorrect**, with what is wrong: a wrong shape, a wrong dtype, an input you modified,
#   a named common mistake, or the exception your code raised. When a random case fails, the
#   message shows its *seed*: `check(..., seed=N)` repeats exactly that check.
# - ✏️ **Not attempted yet**, while the skeleton still raises `NotImplementedError`.
#
# Stuck? `ex.celsius_to_fahrenheit.hint()` gives a hint (call again for a more specific
# one), and `ex.celsius_to_fahrenheit.solution()` shows a reference solution. Checks, hints
# and solution views (and the predictions below) are recorded in a small progress file on your
# machine, so you can see where you stand (section 4).

# %% [markdown]
# ### Predict the output
#
# Some cells ask you to **predict** what a line of code gives before you see it run: a
# shape, a dtype, a value, or the name of the exception it raises. Replace the `...` with your
# prediction and run the cell. Predicting first and then checking is one of the best ways to
# make things stick. Whether you were right or wrong, the check then shows the answer and
# explains it; the cell after it runs the code. Spelling is flexible: `(5, 7)`, `[5, 7]` and
# `torch.Size([5, 7])` are the same shape, `torch.int8` and `"int8"` the same dtype, and
# `"KeyError"` or `KeyError` name the same exception. Predictions are practice and count toward
# no grade, but they are recorded: each one goes into your progress file (section 4) with
# whether it was right, and an instructor who collects the class's progress files sees, for
# each question, how many learners predicted it and how many were right at the first try.

# %%
from course_utils.grading import predictions_for

quiz = predictions_for("00_start_here")
quiz

# %% [markdown]
# **Predict the output** (shape): What is the shape of `a.sum(dim=0)` for `a = torch.randn(2, 3)`?

# %% tags=["predict:sum_dim0_shape"]
quiz.sum_dim0_shape(
    ### BEGIN PREDICTION
    (3,)
    ### END PREDICTION
)

# %%
print(a.sum(dim=0).shape)

# %% [markdown]
# **Predict the output** (dtype): What dtype has `c * 9 / 5 + 32` for the int64 tensor `c = torch.tensor([0, 100])`?

# %% tags=["predict:int_fahrenheit_dtype"]
quiz.int_fahrenheit_dtype(
    ### BEGIN PREDICTION
    torch.float32
    ### END PREDICTION
)

# %%
c = torch.tensor([0, 100])
print(c * 9 / 5 + 32, (c * 9 / 5 + 32).dtype)

# %% [markdown]
# **Predict the output** (value): `t.item()` raises for `t = torch.tensor([1.0, 2.0])`. Which of these run without an error: a `t[0].item()`, b `t.sum().item()`, c `float(t)`, d `t.tolist()`? Answer with the list of letters in order, such as `['c']`.

# %% tags=["predict:item_of_two"]
quiz.item_of_two(
    ### BEGIN PREDICTION
    ['a', 'b', 'd']
    ### END PREDICTION
)

# %% tags=["raises-exception"]
torch.tensor([1.0, 2.0]).item()

# %% [markdown]
# ## 3. Warm-up exercise: Celsius to Fahrenheit
#
# A colleague wrote a function that takes a tensor of temperatures in °C and gives them in °F.
# Water freezes at 0 °C, which is 32 °F, and boils at 100 °C, which is 212 °F. Here is their
# function on those two temperatures:

# %%
def colleagues_celsius_to_fahrenheit(celsius):
    return celsius * (9 // 5) + 32


print(colleagues_celsius_to_fahrenheit(torch.tensor([0.0, 100.0])))

# %% [markdown]
# Freezing comes out right, boiling does not. Find the bug (run pieces of the expression in a
# cell of your own), then write the fixed `celsius_to_fahrenheit(celsius)` below: it takes a
# tensor of temperatures in °C, of any shape, and returns a **new** tensor of the same shape
# with the temperatures in °F. Do not change the input tensor.

# %% tags=["answer:celsius_to_fahrenheit"]
def celsius_to_fahrenheit(celsius):
    ### BEGIN SOLUTION
    return celsius * 9 / 5 + 32
    ### END SOLUTION


# %% tags=["check:celsius_to_fahrenheit"]
ex.celsius_to_fahrenheit.check(celsius_to_fahrenheit)

# %% [markdown]
# Try it yourself: break your answer on purpose (for example use `5 / 9`) and check again to
# see what a named mistake looks like. Here is what three wrong answers get. (This demo calls
# `grading.check`, the same checker without the progress log, so these are not counted as
# your attempts.)

# %%
from course_utils import grading

wrong_answers = [
    lambda c: c * 5 / 9 + 32,           # the ratio upside down
    lambda c: c.mul_(9 / 5).add_(32),   # right numbers, but changes the input tensor
    lambda c: None,                      # forgot `return`
]
for wrong in wrong_answers:
    print(grading.check("00_start_here.celsius_to_fahrenheit", wrong).message)

# %% [markdown]
# Hints come in levels:

# %%
ex.celsius_to_fahrenheit.hint()

# %% [markdown]
# ## 4. Your progress
#
# The dashboard lists every lesson and exercise with your status, checks, hints and solution
# views. Open it in any notebook; it refreshes after each check. The data is a plain
# JSON-lines file (`~/.pytorch_course/progress.jsonl`; set the environment variable
# `COURSE_PROGRESS_LOG` to put it elsewhere); `python -m course_utils progress` prints the same
# in a terminal.

# %% tags=["nbval-ignore-output"]
from course_utils.dashboard import dashboard

dashboard()

# %% [markdown]
# ## Recap
#
# - Run a cell with **Shift+Enter**; *Run All* runs the notebook top to bottom.
# - Each exercise is a function you write; its check cell, `ex.NAME.check(your_function)`,
#   runs it on fixed and fresh random cases and says ✅ correct, ❌ incorrect (with what is
#   wrong, or the mistake it recognised) or ✏️ not attempted yet.
# - `ex.NAME.hint()` gives a hint, more specific each time you call it;
#   `ex.NAME.solution()` shows a reference solution.
# - The dashboard (and `python -m course_utils progress` in a terminal) shows your progress in
#   every lesson.

# %% [markdown]
# ## The syllabus
#
# | # | notebook | you will learn |
# |---|---|---|
# | 00 | start here | how the course works |
# | 01 | tensors | creating, shaping, indexing and combining tensors |
# | 02 | autograd | how PyTorch computes gradients, and where that goes wrong |
# | 03 | nn.Module | building models from layers, parameters and buffers |
# | 04 | data | `Dataset`, `DataLoader`, batching, sampling, workers |
# | 05 | training loop | training and evaluating models, and debugging them |
# | 06 | losses and optimizers | which loss, which optimizer, and writing your own |
# | 07 | debugging | NaNs, sanity checks, gradient norms, the profiler and TensorBoard |
# | 08 | convolutions | convolutional layers, pooling and a small CNN |
# | 09 | persistence | saving, resuming, and exporting models |
# | 10 | performance | devices, timing, mixed precision and `torch.compile` |
# | 11 | distributed | training on several processes with DDP and `torchrun` |
# | 12 | capstone | a digit classifier end to end |
#
# Next: **01_tensors**.

# %% [markdown]
# ## Further reading
#
# The official documentation, to keep open next to every lesson:
#
# - [PyTorch documentation](https://docs.pytorch.org/docs/stable/index.html): the reference, one
#   page per function and class, and the search box at the top of every page.
# - [Learn the Basics](https://docs.pytorch.org/tutorials/beginner/basics/intro.html) (PyTorch
#   tutorials): the official step-by-step tour of what lessons 01–10 cover in depth; read it for
#   a second explanation of anything that did not click here.
# - [JupyterLab documentation](https://jupyterlab.readthedocs.io/en/stable/): the interface,
#   keyboard shortcuts and kernels, if notebooks are new to you.
#
# The best external material:
#
# - *Dive into Deep Learning* ([d2l.ai](https://d2l.ai/)), a free textbook whose every section is
#   a runnable notebook with PyTorch code: the mathematics behind each lesson.
# - Andrej Karpathy, [*Neural Networks: Zero to Hero*](https://karpathy.ai/zero-to-hero.html):
#   videos that build networks from scratch by typing every line; the first one (micrograd) is
#   the best companion to lesson 02.
