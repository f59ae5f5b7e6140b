"""Exercises of 01_tensors: dtypes, shapes and views, broadcasting, indexing, reductions."""

from __future__ import annotations

import numpy as np
import torch

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register

from ._source_rules import python_loop

LESSON = "01_tensors"


# --------------------------------------------------------------------------- references
def image_to_tensor(image):
    # ascontiguousarray: a flipped image (negative strides) is still "a uint8 array (H, W)", and
    # torch.from_numpy refuses negative strides
    return torch.from_numpy(np.ascontiguousarray(image)).float().div(255).unsqueeze(0)


def batch_flatten(x):
    # not reshape(N, -1): with an empty batch (N = 0) the -1 is ambiguous and reshape raises
    return x.flatten(start_dim=1)


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
def _image_run(answer, case: Case):
    """Call the answer on a copy of the array it was given, then check that array: the
    framework's mutation check looks at tensors; an image is a NumPy array."""
    (image,) = case.args
    before = image.copy()
    out = answer(image)
    if not np.array_equal(image, before):
        raise Incorrect("mutated_input", "Your code changed the NumPy image it was given (an assignment "
                        "into `image[...]` or an in-place op on `torch.from_numpy(image)`, which shares its "
                        "memory). Leave the caller's image as it was: `.float()` makes a copy to work on.")
    if isinstance(out, torch.Tensor) and out.requires_grad:
        raise Incorrect("requires_grad", "Your tensor requires grad; an image converted from NumPy is "
                        "data, not a parameter. Drop the `requires_grad_()`.")
    return out


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


_FLAT_LABEL = "5 predictions over 3 classes"
# Designed evidence for argmax without dim: the flat argmax is 2 (row 0, column 2) and three
# labels are 2, so that answer counts 3. The right count is 1, the wrong ones 4, the fraction
# 0.2, and argmax(dim=0) (3 values against 5 labels) cannot broadcast: 3 means flat argmax.
_FLAT_CASE = (torch.tensor([[0.0, 1.0, 9.0], [3.0, 1.0, 0.0], [0.0, 4.0, 1.0], [1.0, 0.0, 2.0], [2.0, 5.0, 1.0]]),
              torch.tensor([2, 2, 2, 0, 0]))
_FLAT_MESSAGE = ("`argmax()` without `dim` returns one index into the flattened tensor (here the "
                 "position of the largest logit of the whole batch), and you counted the labels equal "
                 "to it; pass `dim=1` to get one prediction per row.")


def _count_run(answer, case: Case):
    out = answer(*case.args, **case.kwargs)
    if case.label == _FLAT_LABEL and isinstance(out, int) and not isinstance(out, bool) and out == 3:
        raise Incorrect("flat_argmax", _FLAT_MESSAGE)  # 3 only by counting labels == 2 (see the case)
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


def _no_loops_probe(name: str, rule: str):
    def probe(answer, r: Rand) -> None:
        kind = python_loop(answer)
        if kind is not None:
            raise Incorrect("python_loop", f"The exercise says: “{rule}” Your `{name}` uses a Python "
                            f"{kind} loop. Let broadcasting do the pairing instead.")
    return probe


# --------------------------------------------------------------------------- exercises
register(
    Exercise(
        lesson=LESSON, name="image_to_tensor",
        title="Turn a uint8 NumPy image (H, W) into a float32 tensor (1, H, W) in [0, 1]",
        reference=image_to_tensor, cases=_image_case, run=_image_run,
        edge_cases=[
            Case((np.array([[0, 255], [51, 102]], dtype=np.uint8),), label="a 2x2 image", show_inputs=True),
            # no 255 in it: dividing by the image's own max is not dividing by 255; H != W
            Case((np.array([[0, 51, 102], [153, 204, 17]], dtype=np.uint8),), label="a 2x3 image (H=2, W=3)",
                 show_inputs=True),
            # a transposed (non-contiguous) array, as after `image.T` or cropping with a step
            Case((np.arange(0, 240, 20, dtype=np.uint8).reshape(3, 4).T,),
                 label="a non-contiguous 4x3 image (the transpose of a 3x4 array)"),
            Case((np.zeros((1, 1), dtype=np.uint8),), label="a 1x1 black image", show_inputs=True),
            Case((np.full((1, 5), 255, dtype=np.uint8),), label="a 1x5 white image", show_inputs=True),
        ],
        mistakes=[
            Mistake("divided_by_max", "You divided by the image's own maximum; pixel values are scaled by "
                    "the fixed 255 (an image with no white pixel must not become brighter).",
                    lambda a: torch.from_numpy(a).float().div(float(a.max())).unsqueeze(0)),
            Mistake("numpy_float64", "Your values are right but float64 (NumPy's default after `image / 255.0`, "
                    "or a `.double()`); the exercise asks for float32: convert with `.float()`, then divide.",
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
        # (the old permuted case, (2, 4, 3, 1) permuted to (2, 1, 4, 3), could still be viewed
        # as (2, 12): its channel dim has size 1. This one cannot.)
        edge_cases=[Case((torch.arange(48.0).reshape(2, 2, 4, 3).permute(0, 3, 1, 2),),
                         label="a permuted (non-contiguous) batch"),
                    # N = C = 1: `x.squeeze()` would drop the batch dimension too
                    Case((torch.arange(12.0).reshape(1, 1, 3, 4),), label="a batch of one single-channel image"),
                    # H = W = 1: `.squeeze()` would drop those dims only; C*H*W = C
                    Case((torch.arange(6.0).reshape(3, 2, 1, 1),), label="a batch of 3 images of 2x1x1"),
                    # integer images: flattening keeps the dtype
                    Case((torch.arange(24, dtype=torch.uint8).reshape(2, 3, 2, 2),),
                         label="a batch of uint8 images"),
                    # C > 1, H*W > 1, contiguous: channels-last order gives other rows
                    Case((torch.arange(2 * 3 * 2 * 2.0).reshape(2, 3, 2, 2),), label="a contiguous (2, 3, 2, 2) batch"),
                    # the text's "(N, C, H, W)" includes N = 0 (the last, filtered batch of a dataset)
                    Case((torch.zeros(0, 3, 2, 2),), label="an empty batch (N = 0) of 3x2x2 images")],
        mistakes=[
            # first: `view(len(x), -1)` raises the same error on an empty batch, and the
            # permuted case (run first) names it view_non_contiguous before that
            Mistake("reshape_minus_one_empty", "With an empty batch (N = 0), `-1` in `reshape(0, -1)` "
                    "cannot be worked out (0 times anything is 0), so PyTorch raises. Name the size "
                    "instead: `x.flatten(1)`, or `x.reshape(len(x), C * H * W)`.",
                    lambda x: x.reshape(x.shape[0], -1)),
            Mistake("view_non_contiguous", "`.view` only works when the memory layout allows it; "
                    "after `permute`/`transpose` it does not. Use `.reshape` (or `.flatten(1)`).",
                    # the size is spelled out so that, on the empty batch, this example does not
                    # raise reshape's "-1 is ambiguous" error too (an ambiguous error is not named)
                    lambda x: x.view(x.shape[0], int(np.prod(x.shape[1:])))),
            Mistake("flatten_all", "`.flatten()` flattens the batch dimension too; keep dimension 0: "
                    "`.flatten(1)` or `.reshape(len(x), -1)`.", lambda x: x.flatten()),
            Mistake("wrong_order", "The batch dimension comes first: the result is (N, C*H*W), "
                    "not (C*H*W, N).", lambda x: x.reshape(-1, x.shape[0])),
            Mistake("kept_channels", "Flatten everything after the batch dimension, channels included.",
                    lambda x: x.flatten(2)),
        ],
        hints=[
            "You want to keep dimension 0 and merge all the others: `flatten` takes the first "
            "dimension to merge.",
            "`x.view(...)` fails on non-contiguous tensors (after `permute`); `x.reshape(...)` copies "
            "when it must. With an empty batch, `reshape(0, -1)` cannot guess the -1.",
            "`x.flatten(start_dim=1)` (or `x.reshape(len(x), C * H * W)` with the sizes spelled out).",
        ],
    ),
    Exercise(
        lesson=LESSON, name="normalize_rows",
        title="Divide each row by its sum so that every row sums to 1",
        reference=normalize_rows, cases=_rows_case,
        edge_cases=[Case((torch.tensor([[1.0, 1.0, 2.0], [3.0, 1.0, 0.0], [2.0, 2.0, 4.0]]),),
                         label="a 3x3 matrix", show_inputs=True),
                    # one row: dividing by the total sum is right here, so random cases must not decide
                    Case((torch.tensor([[2.0, 6.0, 8.0, 4.0]]),), label="a single row", show_inputs=True),
                    # one column: every result is 1; `/ x.sum(dim=1)` broadcasts to (3, 3)
                    Case((torch.tensor([[5.0], [0.5], [2.0]]),), label="a single column", show_inputs=True),
                    Case((torch.tensor([[1.0, 3.0], [2.0, 2.0], [9.0, 1.0]], dtype=torch.float64),),
                         label="a 3x2 float64 matrix (keep its dtype)", show_inputs=True),
                    Case((torch.tensor([[1e6, 3e6, 4e6], [2e-3, 5e-3, 3e-3]]),),
                         label="rows of very large and very small numbers", show_inputs=True)],
        compare=Compare(views=True),
        mistakes=[
            Mistake("divided_by_max", "You divided each row by its largest value; divide by the row's "
                    "sum (`x.sum(dim=1, keepdim=True)`) so that it sums to 1.",
                    lambda x: x / x.max(dim=1, keepdim=True).values),
            Mistake("l2_norm", "You divided by the Euclidean length of each row (L2 norm); rows must "
                    "*sum* to 1, so divide by the plain row sums.",
                    lambda x: x / x.norm(dim=1, keepdim=True)),
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
                         label="points (0,0), (3,4) against (0,0), (6,8), (3,0)", show_inputs=True),
                    # N = M = 1 and D = 1: transposes and wrong sum dims have the right shape here
                    Case((torch.tensor([[2.0]]), torch.tensor([[-1.5]])), label="one 1-D point against one",
                         show_inputs=True),
                    # N = M: (M, N) has the right shape; duplicate points are at distance 0
                    Case((torch.tensor([[1.0, 2.0, 2.0], [0.0, 0.0, 0.0], [1.0, 2.0, 2.0]]),
                          torch.tensor([[1.0, 2.0, 2.0], [4.0, 0.0, 3.0], [-2.0, -1.0, 0.0]])),
                         label="3 points against 3, with duplicates", show_inputs=True),
                    # negative coordinates: a difference's sign must not matter
                    Case((torch.tensor([[1.0, -2.0], [-3.0, 4.0]]),
                          torch.tensor([[0.5, 0.5], [-1.0, 2.0], [10.0, -10.0]])),
                         label="negative coordinates", show_inputs=True)],
        # |a-b|^2 computed as |a|^2 + |b|^2 - 2 a.b (a valid answer, and cdist's method on big
        # inputs) loses about eps32 * (|a|^2 + |b|^2) ~ 1e-6 absolutely before the square root;
        # on the generator's points (|a|^2 <= ~40, distances >= ~0.05 apart or exactly equal)
        # that is <= 1e-4 after it. Every listed mistake is off by >= 0.1.
        compare=Compare(rtol=1e-4, atol=1e-4),
        probes=[_no_loops_probe("pairwise_distances", "No Python loops: give the two tensors shapes that broadcast.")],
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
                         label="a row with nothing selected", show_inputs=True),
                    Case((torch.tensor([[-2.0, 5.0, 0.5]]), torch.tensor([[True, True, True]])),
                         label="a single row, everything selected", show_inputs=True),
                    Case((torch.tensor([[1.0, -3.0], [2.0, 8.0]]), torch.zeros(2, 2, dtype=torch.bool)),
                         label="nothing selected anywhere", show_inputs=True),
                    # square: a per-column answer has the right shape here
                    Case((torch.tensor([[1.0, 2.0, 9.0], [-4.0, 0.5, 3.0], [6.0, -1.0, 2.0]]),
                          torch.tensor([[True, False, True], [False, True, False], [True, True, True]])),
                         label="a 3x3 x with one selected value in a row", show_inputs=True),
                    Case((torch.tensor([[7.0], [-2.0]]), torch.tensor([[True], [False]])),
                         label="a single column", show_inputs=True)],
        mistakes=[
            Mistake("flattened_mask", "`x[mask]` collects the selected values of *all* rows into one 1-D "
                    "tensor, so its mean is a single number for the whole matrix. Average each row on its "
                    "own: sum `torch.where(mask, x, 0.0)` along `dim=1` and divide by `mask.sum(dim=1)`.",
                    lambda x, m: x[m].mean()),
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
                         label="three rows, two classes", show_inputs=True),
                    # N = 1: `.squeeze()` without a dim returns a 0-d tensor
                    Case((torch.tensor([[0.5, -1.0, 2.0, 0.25]]), torch.tensor([1])), label="a single row",
                         show_inputs=True),
                    # duplicate labels, the last class never used (one_hot without num_classes)
                    Case((torch.tensor([[1.0, 2.0, 3.0, 4.0], [-1.0, -2.0, -3.0, -4.0],
                                        [0.5, 0.6, 0.7, 0.8], [9.0, 8.0, 7.0, 6.0]]), torch.tensor([0, 2, 2, 0])),
                         label="repeated labels, last class unused", show_inputs=True),
                    # N = C: scores[labels] and scores[:, labels] keep the right number of elements
                    Case((torch.tensor([[0.1, 0.2, 0.3], [1.0, 2.0, 3.0], [-5.0, 5.0, 0.0]], dtype=torch.float64),
                          torch.tensor([2, 0, 1])), label="3 rows, 3 classes, float64 scores", show_inputs=True)],
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
        edge_cases=[
            Case(_FLAT_CASE, label=_FLAT_LABEL, show_inputs=True),
            Case((torch.tensor([[2.0, 1.0], [0.0, 3.0], [5.0, -1.0]]), torch.tensor([0, 1, 1])),
                 label="three predictions, two right", show_inputs=True),
            # N = C: argmax(dim=0) has the labels' shape; it counts 2, the right count is 3
            Case((torch.tensor([[5.0, 1.0, 0.0], [4.0, 0.0, 1.0], [0.0, 2.0, 3.0]]), torch.tensor([0, 0, 2])),
                 label="3 predictions over 3 classes", show_inputs=True),
            Case((torch.tensor([[-0.5, 0.25, 3.0]]), torch.tensor([2])), label="one prediction", show_inputs=True),
            Case((torch.zeros(0, 4), torch.zeros(0, dtype=torch.long)), label="an empty batch (N = 0)"),
            # 1 right out of 41: float32 (1/41) * 41 is 0.99999994, so int(accuracy * N) gives 0
            Case((torch.eye(41)[[0] + [1] * 40], torch.zeros(41, dtype=torch.long)),
                 label="41 predictions, one right"),
            Case((torch.tensor([[-3.0, -1.0], [-2.0, -7.0], [-0.5, -0.25], [-9.0, -8.0]]), torch.tensor([0, 0, 1, 0])),
                 label="negative logits, 4 predictions", show_inputs=True),
        ],
        mistakes=[
            Mistake("wrong_type", "Return a Python int: `.item()` turns a one-element tensor into a "
                    "number.", lambda z, y: (z.argmax(dim=1) == y).sum(), match_output=False),
            Mistake("wrong_dim", "`argmax(dim=0)` picks a row per class; predictions are per row: "
                    "`argmax(dim=1)`.", lambda z, y: int((z.argmax(dim=0) == y).sum())),
            Mistake("accuracy_not_count", "That is the fraction correct; the exercise asks for the count.",
                    lambda z, y: (z.argmax(dim=1) == y).float().mean().item()),
            Mistake("float_not_int", _FLOAT_COUNT,
                    lambda z, y: (z.argmax(dim=1) == y).float().sum().item(), match_output=False),
            # named only on the case designed for it (see _count_run): any other wrong count
            # (an answer with no argmax at all, say) can equal it by chance
            Mistake("flat_argmax", _FLAT_MESSAGE, lambda z, y: int((z.argmax() == y).sum()), match_output=False),
        ],
        hints=[
            "The prediction of a row is the index of its largest logit.",
            "`logits.argmax(dim=1)` gives (N,) predictions; `==` with labels gives booleans; sum them.",
            "`int((logits.argmax(dim=1) == labels).sum())` (or `.sum().item()`).",
        ],
    ),
)

