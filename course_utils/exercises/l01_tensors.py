"""Exercises of 01_tensors: dtypes, shapes and views, broadcasting, indexing, reductions."""

from __future__ import annotations

import numpy as np
import torch

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register

LESSON = "01_tensors"


# --------------------------------------------------------------------------- references
def image_to_tensor(image):
    return torch.from_numpy(image).float().div(255).unsqueeze(0)


def batch_flatten(x):
    return x.reshape(x.shape[0], -1)


def normalize_rows(x):
    return x / x.sum(dim=1, keepdim=True)


def pairwise_distances(a, b):
    return (a[:, None, :] - b[None, :, :]).pow(2).sum(dim=-1).sqrt()


def masked_mean(x, mask):
    counts = mask.sum(dim=1)
    sums = torch.where(mask, x, torch.zeros_like(x)).sum(dim=1)
    return torch.where(counts > 0, sums / counts.clamp(min=1), torch.zeros_like(sums))


def pick_scores(scores, labels):
    return scores.gather(1, labels.unsqueeze(1)).squeeze(1)


def count_correct(logits, labels):
    return int((logits.argmax(dim=1) == labels).sum().item())


# --------------------------------------------------------------------------- cases
def _image_case(r: Rand) -> Case:
    h, w = r.integer(2, 9), r.integer(2, 9)
    return Case((r.randint(0, 256, (h, w)).to(torch.uint8).numpy(),))


def _flatten_case(r: Rand) -> Case:
    n, c, h, w = r.integer(1, 5), r.integer(1, 4), r.integer(2, 5), r.integer(2, 5)
    x = r.randn(n, c, h, w)
    if r.integer(0, 1):  # half the cases are non-contiguous, as after a permute
        x = r.randn(n, h, w, c).permute(0, 3, 1, 2)
    return Case((x,))


def _rows_case(r: Rand) -> Case:
    rows = r.integer(1, 6)
    cols = r.choice([c for c in range(2, 8) if c != rows])
    return Case((r.rand(rows, cols) + 0.05,))


def _dist_case(r: Rand) -> Case:
    n, m = r.integer(1, 6), r.integer(1, 6)
    d = r.choice([k for k in range(1, 6) if k not in (n, m)] or [7])
    return Case((r.randn(n, d), r.randn(m, d)))


def _masked_case(r: Rand) -> Case:
    rows, cols = r.integer(2, 6), r.integer(2, 7)
    mask = r.rand(rows, cols) < 0.5
    mask[r.integer(0, rows - 1)] = False  # always one row with nothing to average
    mask[r.integer(0, rows - 1), r.integer(0, cols - 1)] = True
    return Case((r.randn(rows, cols), mask))


def _scores_case(r: Rand) -> Case:
    n = r.integer(2, 7)
    c = r.choice([k for k in range(2, 8) if k != n])
    return Case((r.randn(n, c), r.randint(0, c, (n,))))


def _count_run(answer, case: Case):
    out = answer(*case.args, **case.kwargs)
    # the framework's comparison accepts a float equal to an expected int; a fraction (an
    # accuracy) is left to the comparison, which names it
    if isinstance(out, float) and out.is_integer():
        raise Incorrect("float_not_int", _FLOAT_COUNT)
    return out


_FLOAT_COUNT = ("You returned a float (such as `3.0`); the exercise asks for a Python `int`. A `.float()` "
                "before `.sum()` makes the sum a float: sum the booleans directly, then `int(...)` or "
                "`.item()`.")


def _correct_case(r: Rand) -> Case:
    n = r.integer(2, 9)
    c = r.choice([k for k in range(2, 6) if k != n])
    return Case((r.randn(n, c), r.randint(0, c, (n,))))


# --------------------------------------------------------------------------- exercises
register(
    Exercise(
        lesson=LESSON, name="image_to_tensor",
        title="Turn a uint8 NumPy image (H, W) into a float32 tensor (1, H, W) in [0, 1]",
        reference=image_to_tensor, cases=_image_case,
        edge_cases=[Case((np.array([[0, 255], [51, 102]], dtype=np.uint8),), label="a 2x2 image",
                         show_inputs=True)],
        mistakes=[
            Mistake("numpy_float64", "Dividing the NumPy array by 255.0 gives float64 (NumPy's default); "
                    "convert to a float32 tensor first (`.float()`), then divide.",
                    lambda a: torch.from_numpy(a / 255.0).unsqueeze(0)),
            Mistake("not_scaled", "The values should be in [0, 1]: divide by 255.",
                    lambda a: torch.from_numpy(a).float().unsqueeze(0)),
            Mistake("no_channel_dim", "The result needs a leading channel dimension of size 1: "
                    "`.unsqueeze(0)` turns (H, W) into (1, H, W).",
                    lambda a: torch.from_numpy(a).float() / 255),
            Mistake("integer_division", "`// 255` is integer division: almost every pixel becomes 0. "
                    "Convert to float first, then use `/`.",
                    lambda a: (torch.from_numpy(a) // 255).float().unsqueeze(0)),
        ],
        hints=[
            "Three steps: NumPy to tensor, to float32, divide by 255, and add a dimension in front.",
            "`torch.from_numpy(image)` shares memory with the array; `.float()` makes a float32 copy.",
            "`torch.from_numpy(image).float() / 255` then `.unsqueeze(0)`.",
        ],
    ),
    Exercise(
        lesson=LESSON, name="batch_flatten",
        title="Flatten every sample of a batch (N, C, H, W) into a row: (N, C*H*W)",
        reference=batch_flatten, cases=_flatten_case,
        edge_cases=[Case((torch.arange(24.0).reshape(2, 4, 3, 1).permute(0, 3, 1, 2),),
                         label="a permuted (non-contiguous) batch"),
                    # N = C = 1: `x.squeeze()` would drop the batch dimension too
                    Case((torch.arange(12.0).reshape(1, 1, 3, 4),), label="a batch of one single-channel image")],
        mistakes=[
            Mistake("view_non_contiguous", "`.view` only works when the memory layout allows it; "
                    "after `permute`/`transpose` it does not. Use `.reshape` (or `.flatten(1)`).",
                    lambda x: x.view(x.shape[0], -1)),
            Mistake("flatten_all", "`.flatten()` flattens the batch dimension too; keep dimension 0: "
                    "`.flatten(1)` or `.reshape(len(x), -1)`.", lambda x: x.flatten()),
            Mistake("wrong_order", "The batch dimension comes first: the result is (N, C*H*W), "
                    "not (C*H*W, N).", lambda x: x.reshape(-1, x.shape[0])),
            Mistake("kept_channels", "Flatten everything after the batch dimension, channels included.",
                    lambda x: x.flatten(2)),
        ],
        hints=[
            "You want to keep dimension 0 and merge all the others. `-1` in a shape means "
            "'whatever size makes the numbers work'.",
            "`x.view(...)` fails on non-contiguous tensors (after `permute`); `x.reshape(...)` copies when it must.",
            "`x.reshape(x.shape[0], -1)` or `x.flatten(start_dim=1)`.",
        ],
    ),
    Exercise(
        lesson=LESSON, name="normalize_rows",
        title="Divide each row by its sum so that every row sums to 1",
        reference=normalize_rows, cases=_rows_case,
        edge_cases=[Case((torch.tensor([[1.0, 1.0, 2.0], [3.0, 1.0, 0.0], [2.0, 2.0, 4.0]]),),
                         label="a 3x3 matrix", show_inputs=True)],
        compare=Compare(views=True),
        mistakes=[
            Mistake("wrong_dim", "You normalised the columns (`dim=0`); rows are summed over `dim=1`.",
                    lambda x: x / x.sum(dim=0, keepdim=True)),
            Mistake("no_keepdim", "`x.sum(dim=1)` has shape (rows,), which broadcasts against the "
                    "*columns*. Keep the summed dimension: `x.sum(dim=1, keepdim=True)` has shape (rows, 1).",
                    lambda x: x / x.sum(dim=1)),
            Mistake("total_sum", "You divided by the sum of the whole matrix; each row needs its own sum.",
                    lambda x: x / x.sum()),
            Mistake("softmax", "Softmax also makes rows sum to one, but it exponentiates first: "
                    "divide by the plain row sums.", lambda x: x.softmax(dim=1)),
            Mistake("mutated_input", "`x /= ...` (or `x.div_`) changed the caller's tensor. Return "
                    "`x / ...`, a new tensor.", lambda x: x.div_(x.sum(dim=1, keepdim=True)),
                    match_output=False),
        ],
        hints=[
            "Sum along the columns of each row (`dim=1`), then divide; broadcasting does the rest "
            "if the shapes line up.",
            "A (rows, cols) tensor divided by a (rows, 1) tensor divides each row by its own number.",
            "`x / x.sum(dim=1, keepdim=True)`.",
        ],
    ),
    Exercise(
        lesson=LESSON, name="pairwise_distances",
        title="Euclidean distances between every row of a (N, D) and every row of b (M, D): (N, M)",
        reference=pairwise_distances, cases=_dist_case,
        edge_cases=[Case((torch.tensor([[0.0, 0.0], [3.0, 4.0]]), torch.tensor([[0.0, 0.0], [6.0, 8.0], [3.0, 0.0]])),
                         label="points (0,0), (3,4) against (0,0), (6,8), (3,0)", show_inputs=True)],
        compare=Compare(rtol=1e-4, atol=1e-4),
        mistakes=[
            Mistake("squared", "Those are squared distances: take the square root at the end.",
                    lambda a, b: (a[:, None, :] - b[None, :, :]).pow(2).sum(-1)),
            Mistake("transposed", "Rows of the result belong to `a` and columns to `b`: (N, M), not (M, N).",
                    lambda a, b: (b[:, None, :] - a[None, :, :]).pow(2).sum(-1).sqrt()),
            Mistake("manhattan", "You summed absolute differences (Manhattan distance); Euclidean is "
                    "the square root of the sum of squares.",
                    lambda a, b: (a[:, None, :] - b[None, :, :]).abs().sum(-1)),
            Mistake("wrong_sum_dim", "After `a[:, None, :] - b[None, :, :]` the shape is (N, M, D): sum "
                    "over the last dimension (the coordinates).",
                    lambda a, b: (a[:, None, :] - b[None, :, :]).pow(2).sum(0).sqrt()),
        ],
        hints=[
            "Give `a` shape (N, 1, D) and `b` shape (1, M, D): their difference broadcasts to (N, M, D).",
            "`a[:, None, :] - b[None, :, :]`, square, sum over the last dim, square root.",
            "`((a[:, None, :] - b[None, :, :]) ** 2).sum(dim=-1).sqrt()` (`torch.cdist(a, b)` does it too).",
        ],
    ),
    Exercise(
        lesson=LESSON, name="masked_mean",
        title="Mean of each row of x over the positions where mask is True (0 for empty rows)",
        reference=masked_mean, cases=_masked_case,
        # 4 columns, 2 selected: dividing by (count + 1) must not look like dividing by the row length
        edge_cases=[Case((torch.tensor([[1.0, 2.0, 3.0, 4.0], [4.0, 5.0, 6.0, 7.0]]),
                          torch.tensor([[True, False, True, False], [False, False, False, False]])),
                         label="a row with nothing selected", show_inputs=True)],
        mistakes=[
            Mistake("ignored_mask", "You averaged every element; only positions where `mask` is True count.",
                    lambda x, m: x.mean(dim=1)),
            Mistake("divided_by_all", "You zeroed the masked-out values but divided by the full row "
                    "length; divide by the number of True positions.", lambda x, m: (x * m).mean(dim=1)),
            Mistake("nan_on_empty_rows", "A row with no True position gives 0/0 = NaN. Use "
                    "`torch.where` (or `clamp(min=1)` on the counts) so such rows give 0.",
                    lambda x, m: (x * m).sum(dim=1) / m.sum(dim=1)),
            Mistake("wrong_dim", "Average along each row (`dim=1`), not down the columns.",
                    lambda x, m: (x * m).sum(dim=0) / m.sum(dim=0).clamp(min=1)),
        ],
        hints=[
            "Sum the selected values per row, count the selected positions per row, divide.",
            "`torch.where(mask, x, 0.0)` keeps selected values; `mask.sum(dim=1)` counts them. "
            "Watch rows whose count is 0.",
            "`sums / counts.clamp(min=1)` avoids dividing by zero; for an empty row the sum is 0 anyway.",
        ],
    ),
    Exercise(
        lesson=LESSON, name="pick_scores",
        title="For each row i of scores (N, C), pick scores[i, labels[i]]: shape (N,)",
        reference=pick_scores, cases=_scores_case,
        edge_cases=[Case((torch.tensor([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]]), torch.tensor([1, 0, 0])),
                         label="three rows, two classes", show_inputs=True)],
        mistakes=[
            Mistake("index_grid", "`scores[:, labels]` takes every label's column for every row (an "
                    "(N, N) grid). Pair row i with labels[i]: `scores[torch.arange(N), labels]`.",
                    lambda s, y: s[:, y]),
            Mistake("forgot_squeeze", "`gather` keeps the gathered dimension: (N, 1). Remove it with "
                    "`.squeeze(1)`.", lambda s, y: s.gather(1, y.unsqueeze(1))),
            Mistake("took_max", "You took each row's largest score; the exercise asks for the score "
                    "of the row's label.", lambda s, y: s.max(dim=1).values),
            Mistake("gather_dim0", "`gather` along `dim=0` picks rows; the labels index columns (`dim=1`).",
                    lambda s, y: s.gather(0, y.unsqueeze(0)).squeeze(0)),
        ],
        hints=[
            "Each row needs one column, chosen by that row's label.",
            "Advanced indexing with two index tensors pairs them up: `scores[rows, labels]` with "
            "`rows = torch.arange(len(labels))`.",
            "Or `scores.gather(1, labels.unsqueeze(1)).squeeze(1)`.",
        ],
    ),
    Exercise(
        lesson=LESSON, name="count_correct",
        title="Count the predictions (argmax of logits (N, C)) that equal labels (N,): a Python int",
        reference=count_correct, cases=_correct_case, run=_count_run,
        edge_cases=[Case((torch.tensor([[2.0, 1.0], [0.0, 3.0], [5.0, -1.0]]), torch.tensor([0, 1, 1])),
                         label="three predictions, two right", show_inputs=True)],
        mistakes=[
            Mistake("wrong_type", "Return a Python int: `.item()` turns a one-element tensor into a "
                    "number.", lambda z, y: (z.argmax(dim=1) == y).sum(), match_output=False),
            Mistake("wrong_dim", "`argmax(dim=0)` picks a row per class; predictions are per row: "
                    "`argmax(dim=1)`.", lambda z, y: int((z.argmax(dim=0) == y).sum())),
            Mistake("accuracy_not_count", "That is the fraction correct; the exercise asks for the count.",
                    lambda z, y: (z.argmax(dim=1) == y).float().mean().item()),
            Mistake("float_not_int", _FLOAT_COUNT,
                    lambda z, y: (z.argmax(dim=1) == y).float().sum().item(), match_output=False),
            Mistake("flat_argmax", "`argmax()` without `dim` returns one index into the flattened "
                    "tensor; pass `dim=1`.", lambda z, y: int((z.argmax() == y).sum())),
        ],
        hints=[
            "The prediction of a row is the index of its largest logit.",
            "`logits.argmax(dim=1)` gives (N,) predictions; `==` with labels gives booleans; sum them.",
            "`int((logits.argmax(dim=1) == labels).sum())` (or `.sum().item()`).",
        ],
    ),
)

