"""Red team of the graders of lessons 00-03, kept as regression tests.

For every exercise: at least five wrong answers a learner would plausibly write (real learner
code, not mutants of the reference), three valid but unusual answers, and two cheats. Wrong
answers and cheats must be rejected by the FIXED cases alone (``n_random=0``): a verdict never
depends on the seed a learner happens to get. They are also rejected, and valid answers
accepted, with random cases under several seeds. Where the mistake has a name, the name is
asserted; ``None`` means any rejection (the wrong answer has no specific name, and the test
asserts at least that it is not misnamed as something it is not, see ``NOT_NAMED``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_utils import grading

from grading_asserts import accepted, rejected  # noqa: E402 (tests/ is on sys.path)

WRONG: list[tuple[str, str, object, str | None]] = []  # (exercise, label, answer, mistake or None)
VALID: list[tuple[str, str, object]] = []
CHEATS: list[tuple[str, str, object]] = []


def wrong(ex: str, label: str, mistake: str | None = None):
    def deco(fn):
        WRONG.append((ex, label, fn, mistake))
        return fn
    return deco


def valid(ex: str, label: str):
    def deco(fn):
        VALID.append((ex, label, fn))
        return fn
    return deco


def cheat(ex: str, label: str):
    def deco(fn):
        CHEATS.append((ex, label, fn))
        return fn
    return deco


# =========================================================================== 01 tensors
IMG = "01_tensors.image_to_tensor"
wrong(IMG, "no scaling", "not_scaled")(lambda a: torch.tensor(a).float().unsqueeze(0))
wrong(IMG, "divided by the image max", "divided_by_max")(lambda a: torch.from_numpy(a).float().unsqueeze(0) / a.max())
wrong(IMG, "numpy / 255.0 stays float64", "numpy_float64")(lambda a: torch.from_numpy(a / 255.0).unsqueeze(0))
wrong(IMG, "channel last")(lambda a: torch.from_numpy(a).float().div(255).unsqueeze(-1))
wrong(IMG, "reshape swaps H and W")(lambda a: torch.from_numpy(a).float().div(255).reshape(1, a.shape[1], a.shape[0]))
wrong(IMG, "transposed image")(lambda a: torch.from_numpy(a.T.copy()).float().div(255).unsqueeze(0))
wrong(IMG, "int8 overflow")(lambda a: torch.from_numpy(a.astype(np.int8)).float().div(255).unsqueeze(0))
wrong(IMG, "half precision")(lambda a: (torch.from_numpy(a).half() / 255).unsqueeze(0))
wrong(IMG, "squeeze then unsqueeze")(lambda a: torch.from_numpy(a).float().div(255).squeeze()[None])
wrong(IMG, "frombuffer ignores strides")(
    lambda a: torch.frombuffer(bytearray(a.tobytes(order="A")), dtype=torch.uint8).float().div(255).reshape(1, *a.shape))


@wrong(IMG, "zeroes the caller's image (redteam)", "mutated_input")
def _img_zeroes(image):
    out = torch.from_numpy(image).float().div(255).unsqueeze(0)
    image[...] = 0
    return out


@wrong(IMG, "divides the shared tensor in place", "mutated_input")
def _img_shared(image):
    t = torch.from_numpy(image)
    t //= 2  # then "fixes" it: the caller's array is halved
    return (t.float() * 2 / 255).unsqueeze(0)


wrong(IMG, "result requires grad (redteam)", "requires_grad")(
    lambda im: torch.from_numpy(im).float().div(255).unsqueeze(0).requires_grad_())
valid(IMG, "true division of uint8")(lambda a: (torch.from_numpy(a) / 255).unsqueeze(0))
valid(IMG, "numpy float32 first")(lambda a: torch.from_numpy(a.astype(np.float32) / 255)[None])
valid(IMG, "torch.as_tensor and view")(lambda a: torch.as_tensor(a, dtype=torch.float32).mul(1 / 255).view(1, *a.shape))
valid(IMG, "stack of rows")(lambda a: torch.stack([torch.tensor(r, dtype=torch.float32) for r in a]).div(255)[None])
cheat(IMG, "hard-coded first fixed case")(lambda a: torch.tensor([[[0.0, 1.0], [0.2, 0.4]]]))
cheat(IMG, "shape only")(lambda a: torch.zeros(1, *a.shape))

BF = "01_tensors.batch_flatten"
wrong(BF, "view after permute", "view_non_contiguous")(lambda x: x.view(x.size(0), -1))
wrong(BF, "flatten everything", "flatten_all")(lambda x: x.flatten())
wrong(BF, "squeeze first")(lambda x: x.squeeze().flatten(1))
wrong(BF, "channels-last order")(lambda x: x.permute(0, 2, 3, 1).reshape(len(x), -1) if len(x) else x.flatten(1))
wrong(BF, "reshape(N, -1) on an empty batch", "reshape_minus_one_empty")(lambda x: x.reshape(len(x), -1))
wrong(BF, "stack a list of samples")(lambda x: torch.stack([s.flatten() for s in x]))
wrong(BF, "cast to float")(lambda x: x.float().flatten(1))
wrong(BF, "keeps channels", "kept_channels")(lambda x: x.flatten(2))
wrong(BF, "(C*H*W, N)", "wrong_order")(lambda x: x.reshape(-1, x.shape[0]) if len(x) else x.flatten(1).T)
valid(BF, "torch.flatten")(lambda x: torch.flatten(x, 1))
valid(BF, "sizes spelled out")(lambda x: x.reshape(x.shape[0], math.prod(x.shape[1:])))
valid(BF, "nn.Flatten")(lambda x: nn.Flatten()(x))
valid(BF, "contiguous view with explicit size")(lambda x: x.contiguous().view(x.shape[0], x[0].numel() if len(x) else
                                                                            x.shape[1] * x.shape[2] * x.shape[3]))
cheat(BF, "hard-coded 12 columns")(lambda x: x.reshape(x.shape[0], 12))
cheat(BF, "zeros of the right shape")(lambda x: torch.zeros(x.shape[0], math.prod(x.shape[1:]), dtype=x.dtype))

NR = "01_tensors.normalize_rows"
wrong(NR, "no keepdim", "no_keepdim")(lambda x: x / x.sum(dim=1))
wrong(NR, "columns", "wrong_dim")(lambda x: x / x.sum(0))
wrong(NR, "whole sum", "total_sum")(lambda x: x / x.sum())
wrong(NR, "softmax", "softmax")(lambda x: torch.softmax(x, dim=1))
wrong(NR, "row max", "divided_by_max")(lambda x: x / x.max(1, keepdim=True)[0])
wrong(NR, "L2 norm", "l2_norm")(lambda x: F.normalize(x, dim=1))
wrong(NR, "mean instead of sum")(lambda x: x / x.mean(1, keepdim=True))
wrong(NR, "float32 always")(lambda x: x.float() / x.float().sum(1, keepdim=True))


@wrong(NR, "in place", "mutated_input")
def _nr_in_place(x):
    x /= x.sum(dim=1, keepdim=True)
    return x


@wrong(NR, "loop that mutates each row", "mutated_input")
def _nr_rows(x):
    for row in x:
        row /= row.sum()
    return x.clone()


valid(NR, "transpose trick")(lambda x: (x.T / x.sum(1)).T)
valid(NR, "F.normalize p=1")(lambda x: F.normalize(x, p=1, dim=1))
valid(NR, "stack of rows")(lambda x: torch.stack([r / r.sum() for r in x]))
valid(NR, "multiply by reciprocal")(lambda x: x * x.sum(-1, keepdim=True).reciprocal())
cheat(NR, "uniform rows")(lambda x: torch.full_like(x, 1.0 / x.shape[1]))
cheat(NR, "hard-coded 3x3 answer")(lambda x: torch.tensor([[0.25, 0.25, 0.5], [0.75, 0.25, 0.0], [0.25, 0.25, 0.5]]))

PD = "01_tensors.pairwise_distances"
wrong(PD, "squared", "squared")(lambda a, b: ((a[:, None] - b[None]) ** 2).sum(-1))
wrong(PD, "cdist swapped", "transposed")(lambda a, b: torch.cdist(b, a))
wrong(PD, "manhattan", "manhattan")(lambda a, b: (a[:, None] - b[None]).abs().sum(-1))
wrong(PD, "sum over dim 0", "wrong_sum_dim")(lambda a, b: (a[:, None] - b[None]).pow(2).sum(0).sqrt())
wrong(PD, "norm over dim 1")(lambda a, b: (a[:, None] - b[None]).norm(dim=1))
wrong(PD, "row by row only")(lambda a, b: (a - b).pow(2).sum(1).sqrt())
wrong(PD, "dot products")(lambda a, b: a @ b.T)
wrong(PD, "sqrt of summed squares without the cross term")(lambda a, b: ((a**2).sum(1)[:, None] + (b**2).sum(1)[None]).sqrt())
wrong(PD, "python loops", "python_loop")(
    lambda a, b: torch.stack([torch.stack([(p - q).norm() for q in b]) for p in a]))


@wrong(PD, "explicit for loops", "python_loop")
def _pd_loops(a, b):
    out = torch.zeros(len(a), len(b))
    for i in range(len(a)):
        for j in range(len(b)):
            out[i, j] = torch.sqrt(((a[i] - b[j]) ** 2).sum())
    return out


valid(PD, "cdist")(lambda a, b: torch.cdist(a, b))
valid(PD, "vector_norm of broadcast difference")(lambda a, b: torch.linalg.vector_norm(a.unsqueeze(1) - b.unsqueeze(0), dim=2))
valid(PD, "expansion with clamp")(
    lambda a, b: ((a * a).sum(1, keepdim=True) + (b * b).sum(1) - 2 * a @ b.T).clamp(min=0).sqrt())
valid(PD, "transposed cdist transposed back")(lambda a, b: torch.cdist(b, a).mT)
cheat(PD, "hard-coded first case")(lambda a, b: torch.tensor([[0.0, 10.0, 3.0], [5.0, 5.0, math.sqrt(16.0)]]))
cheat(PD, "zeros")(lambda a, b: torch.zeros(len(a), len(b)))

MM = "01_tensors.masked_mean"
wrong(MM, "boolean indexing flattens", "flattened_mask")(lambda x, m: x[m].mean())
wrong(MM, "NaN on empty rows", "nan_on_empty_rows")(lambda x, m: (x * m).sum(1) / m.sum(1))
wrong(MM, "divided by row length", "divided_by_all")(lambda x, m: (x * m).mean(1))
wrong(MM, "mask ignored", "ignored_mask")(lambda x, m: x.mean(1))
wrong(MM, "per column", "wrong_dim")(lambda x, m: (x * m).sum(0) / m.sum(0).clamp(min=1))
wrong(MM, "count + 1")(lambda x, m: (x * m).sum(1) / (m.sum(1) + 1))
wrong(MM, "floor division")(lambda x, m: (x * m).sum(1).div(m.sum(1).clamp(min=1), rounding_mode="floor"))
wrong(MM, "NaN loop")(lambda x, m: torch.stack([x[i][m[i]].mean() for i in range(len(x))]))


@wrong(MM, "zeroes the input in place", "mutated_input")
def _mm_in_place(x, m):
    x[~m] = 0
    return x.sum(1) / m.sum(1).clamp(min=1)


valid(MM, "multiply and clamp")(lambda x, m: (x * m).sum(1) / m.sum(1).clamp(min=1))
valid(MM, "nanmean")(lambda x, m: torch.nanmean(x.masked_fill(~m, float("nan")), dim=1).nan_to_num(0.0))
valid(MM, "nan_to_num after 0/0")(lambda x, m: torch.nan_to_num((x * m.float()).sum(1) / m.float().sum(1)))
valid(MM, "loop with a guard")(lambda x, m: torch.stack(
    [x[i][m[i]].mean() if m[i].any() else torch.tensor(0.0) for i in range(len(x))]))
cheat(MM, "zeros")(lambda x, m: torch.zeros(len(x)))
cheat(MM, "hard-coded first case")(lambda x, m: torch.tensor([2.0, 0.0]))

PS = "01_tensors.pick_scores"
wrong(PS, "index grid", "index_grid")(lambda s, y: s[:, y])
wrong(PS, "gather without squeeze", "forgot_squeeze")(lambda s, y: s.gather(1, y.unsqueeze(1)))
wrong(PS, "row max", "took_max")(lambda s, y: s.max(1).values)
wrong(PS, "gather along dim 0", "gather_dim0")(lambda s, y: s.gather(0, y.unsqueeze(0)).squeeze(0))
wrong(PS, "view(-1, 1) then squeeze (redteam)")(lambda s, y: s.gather(1, y.view(-1, 1)).squeeze())
wrong(PS, "squeeze without dim")(lambda s, y: s.gather(1, y[:, None]).squeeze())
wrong(PS, "rows by label")(lambda s, y: s[y])
wrong(PS, "take on the flat tensor")(lambda s, y: s.take(y))
wrong(PS, "one_hot without num_classes")(lambda s, y: (s * F.one_hot(y)).sum(1))
wrong(PS, "float32 always")(lambda s, y: s.float()[torch.arange(len(y)), y])
valid(PS, "arange indexing")(lambda s, y: s[torch.arange(len(y)), y])
valid(PS, "diagonal of the grid")(lambda s, y: s[:, y].diagonal())
valid(PS, "one_hot with num_classes")(lambda s, y: (s * F.one_hot(y, s.shape[1]).to(s.dtype)).sum(1))
valid(PS, "take_along_dim")(lambda s, y: torch.take_along_dim(s, y[:, None], dim=1)[:, 0])
cheat(PS, "first column")(lambda s, y: s[:, 0])
cheat(PS, "hard-coded first case")(lambda s, y: torch.tensor([0.9, 0.8, 0.3]))

CC = "01_tensors.count_correct"
wrong(CC, "argmax without dim", "flat_argmax")(lambda z, y: int((z.argmax() == y).sum()))
wrong(CC, "argmax over dim 0", "wrong_dim")(lambda z, y: int((z.argmax(0) == y).sum()))
wrong(CC, "accuracy", "accuracy_not_count")(lambda z, y: (z.argmax(1) == y).float().mean().item())
wrong(CC, "float count", "float_not_int")(lambda z, y: (z.argmax(1) == y).float().sum().item())
wrong(CC, "tensor, not int", "wrong_type")(lambda z, y: (z.argmax(1) == y).sum())
wrong(CC, "counts the wrong ones")(lambda z, y: int((z.argmax(1) != y).sum()))
wrong(CC, "compares max values with labels")(lambda z, y: int((z.max(1).values == y).sum()))
wrong(CC, "argmin")(lambda z, y: int((z.argmin(1) == y).sum()))
wrong(CC, "numpy int64")(lambda z, y: np.sum(z.numpy().argmax(1) == y.numpy()))
wrong(CC, "accuracy times N, truncated (redteam)")(lambda z, y: int((z.argmax(1) == y).float().mean() * len(y)))
wrong(CC, "max values compared with labels is not named flat_argmax (redteam)")(
    lambda z, y: int((z.max(1).values == y).sum()))
valid(CC, "max indices")(lambda z, y: int(z.max(dim=1).indices.eq(y).sum()))
valid(CC, "python loop")(lambda z, y: sum(int(p == t) for p, t in zip(z.argmax(1).tolist(), y.tolist())))
valid(CC, "numpy")(lambda z, y: int((z.numpy().argmax(axis=1) == y.numpy()).sum()))
valid(CC, "count_nonzero")(lambda z, y: torch.count_nonzero(z.argmax(-1) == y).item())
cheat(CC, "always 2")(lambda z, y: 2)
cheat(CC, "half the batch")(lambda z, y: len(y) // 2)


# =========================================================================== the tests
def _ids(rows):
    return [f"{r[0].split('.')[-1]}: {r[1]}" for r in rows]


NEVER_NAMED = {"01_tensors.count_correct": "flat_argmax"}  # misnamed before: named only on evidence


@pytest.mark.parametrize("exercise_id,label,answer,mistake", WRONG, ids=_ids(WRONG))
def test_wrong_answer_is_rejected_by_the_fixed_cases(exercise_id, label, answer, mistake):
    for n_random, seeds in ((0, (1,)), (None, (1, 77, 4242))):  # fixed cases alone, then with random ones
        res = rejected(exercise_id, answer, mistake, n_random=n_random, seeds=seeds)
        if mistake is None and exercise_id in NEVER_NAMED:
            assert res.mistake != NEVER_NAMED[exercise_id], res.text()


@pytest.mark.parametrize("exercise_id,label,answer", VALID, ids=_ids(VALID))
def test_valid_unusual_answer_passes(exercise_id, label, answer):
    accepted(exercise_id, answer, n_random=20)


@pytest.mark.parametrize("exercise_id,label,answer", CHEATS, ids=_ids(CHEATS))
def test_cheat_is_rejected(exercise_id, label, answer):
    rejected(exercise_id, answer, n_random=0, seeds=(1,))
    rejected(exercise_id, answer)


def test_every_exercise_has_five_wrong_three_valid_two_cheats():
    ids = [e for e in grading.exercises() if e[:2] in DONE]
    for ex in ids:
        assert sum(w[0] == ex for w in WRONG) >= 5, ex
        assert sum(v[0] == ex for v in VALID) >= 3, ex
        assert sum(c[0] == ex for c in CHEATS) >= 2, ex


DONE = ("01",)
