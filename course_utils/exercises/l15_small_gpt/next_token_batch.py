"""next_token_batch: inputs and next-token targets, (B, block_size) each, from windows of a 1-D
tensor of ids.

Subtle: the targets are the window that starts one place later (``y[b, t]`` is what follows
``x[b, :t + 1]``); not the same window (the model would learn to copy), not one place earlier,
not only the single id after the window, and both of length ``block_size`` (a window of
``block_size + 1`` is where ``x`` and ``y`` are cut from, not ``x`` itself). Ids are random, so a
shift shows in the values; a start at 0 and one at the last allowed position are fixed cases.
"""

from __future__ import annotations

import torch

from course_utils.grading import Case, Exercise, Mistake, Rand, register

from ...answers.l15_small_gpt import next_token_batch
from ._kit import LESSON


# --- reference: imported above from course_utils/answers/l15_small_gpt.py (generated from the notebook)


# --- cases
def _cases(r: Rand) -> Case:
    block = r.integer(1, 8)
    n = r.integer(block + 2, 60)
    batch = r.integer(1, 5)
    data = r.randint(0, 40, (n,))
    starts = r.randint(0, n - block, (batch,))  # the last allowed start is n - block - 1
    return Case((data, starts, block))


EDGE_CASES = [
    Case((torch.arange(10, 22), torch.tensor([0, 4]), 5), label="ids 10..21, windows from 0 and from 4",
         show_inputs=True),
    Case((torch.tensor([7, 3, 9, 1, 4, 4, 8]), torch.tensor([3]), 3), label="one window ending at the last id",
         show_inputs=True),
    Case((torch.tensor([5, 6, 2, 9]), torch.tensor([0, 1, 2]), 1), label="block_size 1", show_inputs=True),
]


# --- wrong answers
def _rows(starts, block_size):
    return starts[:, None] + torch.arange(block_size)


def _unshifted(data, starts, block_size):
    x = data[_rows(starts, block_size)]
    return x, x.clone()


def _shifted_back(data, starts, block_size):
    rows = _rows(starts, block_size)
    return data[rows], data[rows - 1]


def _only_the_next(data, starts, block_size):
    return data[_rows(starts, block_size)], data[starts + block_size]


def _window_plus_one(data, starts, block_size):
    window = data[_rows(starts, block_size + 1)]
    return window, window[:, 1:]


def _swapped(data, starts, block_size):
    rows = _rows(starts, block_size)
    return data[rows + 1], data[rows]


def _rolled(data, starts, block_size):
    x = data[_rows(starts, block_size)]
    return x, x.roll(-1, dims=1)


# --- declaration
register(Exercise(
    lesson=LESSON, name="next_token_batch", title="Inputs and next-token targets from windows of a sequence",
    reference=next_token_batch, cases=_cases, edge_cases=EDGE_CASES,
    mistakes=[
        Mistake("unshifted", "Your targets are the inputs themselves: a model trained on them learns to copy the "
                "character it already sees. The target at each position is the character that comes *next*.",
                _unshifted),
        Mistake("shifted_wrong_way", "Your targets are the characters *before* each input (shifted one place to "
                "the right); the model predicts the one after, so `y` starts one place later than `x`.",
                _shifted_back),
        Mistake("only_next_id", "Your `y` holds one id per window, the one after it. Every position of the window "
                "is a training example: `y` is `(B, block_size)`, one target per input position.", _only_the_next),
        Mistake("window_too_long", "Your `x` is `block_size + 1` long: that is the window *both* are cut from. "
                "`x` drops its last id and `y` its first, so each is `block_size` long.", _window_plus_one),
        Mistake("swapped", "You returned `(y, x)`: the inputs come first, then the targets, which start one place "
                "later.", _swapped),
        Mistake("rolled_targets", "Your targets are right except the last one of each window, which is the "
                "window's *first* id: `roll` wraps around. The last target is the id after the window, "
                "`data[start + block_size]`: cut `y` from `data`, not from `x`.", _rolled),
    ],
    hints=[
        "Write a short sequence on paper, say the ids of `hello`, with `block_size` 3 and a start at 0: what does "
        "the model read, and what should it say after reading one, two, three characters?",
        "Both tensors are windows of the same length cut from the data, and they start at different places: "
        "where does the target window start, compared with the input window? One tensor of positions (each start "
        "plus the offsets along a window) indexes every window of the batch at once, with no loop.",
    ],
))
