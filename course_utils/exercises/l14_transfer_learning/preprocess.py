"""preprocess: uint8 images to what the pretrained model expects, found from the evidence.

The notebook no longer says which statistics: it shows lesson 13's habit (standardise with the
images' own mean and std) reaching the recipe's letter accuracy with all the letters at once and
losing points one image at a time, and asks for the preparation that reproduces the reported
accuracy however many images arrive. The decisions: the statistics (the recipe's, the weights'
metadata, not the images' own, per batch or per image, nor ImageNet's) and their scale (pixels in
[0, 1], so scale the bytes first, and not only rescale the mean). The recipe has more keys than
the two needed; the check draws recipes whose statistics are far from the images' own, and images
whose own statistics vary, so each wrong choice shows.
"""

from __future__ import annotations

import copy

import torch

from course_utils.grading import Case, Compare, Exercise, Expect, Incorrect, Mistake, Rand, register
from course_utils.grading.unchanged import differs

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/14_transfer_learning.py)
from ...answers.l14_transfer_learning import preprocess


# --- cases
def _recipe(r: Rand, mean: float, std: float) -> dict:
    return {"letters": "ABC", "widths": [8, 16, 32], "seed": r.integer(0, 9), "mean": mean, "std": std,
            "test_accuracy": 0.9, "image_size": 28}


def _images(r: Rand, n: int, size: int, low: int, high: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(r.integer(0, 2**31))
    return torch.randint(low, high, (n, 1, size, size), generator=g, dtype=torch.uint8)


def _cases(r: Rand) -> Case:
    low = r.integer(0, 120)
    images = _images(r, r.integer(1, 5), r.integer(3, 8), low, r.integer(low + 40, 256))
    mean = round(0.05 + 0.5 * float(r.rand(1)), 3)
    return Case((images, _recipe(r, mean, round(0.1 + 0.3 * float(r.rand(1)), 3))))


EDGE_CASES = [
    Case((_images(Rand(1), 2, 4, 0, 256), _recipe(Rand(1), 0.2113, 0.2987)), label="the course's recipe"),
    Case((_images(Rand(2), 1, 5, 200, 256), _recipe(Rand(2), 0.1, 0.3)),
         label="one bright image: its own statistics are far from the pretraining ones"),
]


# --- run
_TENSOR = Expect("not_a_tensor", "the images as one float tensor", torch.Tensor)


def _run(answer, case: Case):
    images, recipe = case.args
    before, recipe_before = images.clone(), copy.deepcopy(recipe)
    recipe = dict(recipe)  # the learner's own copy: a change to it must show, and not reach the case
    out = answer(images, recipe)
    if not torch.equal(images, before):
        raise Incorrect("mutated_input")
    if differs(recipe_before, recipe):  # a value replaced by an equal tensor too
        raise Incorrect("mutated_recipe")
    _TENSOR.check(out)
    if not out.is_floating_point():
        raise Incorrect("not_float", got=str(out.dtype))
    return out


# --- wrong answers
def _own_stats(images, recipe):
    x = images.float() / 255.0
    return (x - x.mean()) / x.std()


def _imagenet(images, recipe):
    return (images.float() / 255.0 - 0.485) / 0.229


def _no_scaling(images, recipe):
    return (images.float() - recipe["mean"]) / recipe["std"]


def _per_image(images, recipe):
    x = images.float() / 255.0
    return (x - x.mean(dim=(1, 2, 3), keepdim=True)) / x.std(dim=(1, 2, 3), keepdim=True)


def _mean_rescaled_only(images, recipe):
    return (images.float() - 255 * recipe["mean"]) / recipe["std"]


def _scaled_only(images, recipe):
    return images.float() / 255.0


def _swapped(images, recipe):
    return (images.float() / 255.0 - recipe["std"]) / recipe["mean"]


def _in_place(images, recipe):
    images.clamp_(max=100)
    return preprocess(images, recipe)


def _popped(images, recipe):
    mean, std = recipe.pop("mean"), recipe.pop("std")
    return (images.float() / 255.0 - mean) / std


# --- declaration
register(Exercise(
    lesson=LESSON, name="preprocess", title="Preprocess new images as the pretrained model expects, from its metadata",
    reference=preprocess, kind="function", cases=_cases, edge_cases=EDGE_CASES, run=_run,
    compare=Compare(rtol=1e-5, atol=1e-5),
    mistakes=[
        Mistake("own_statistics", "You standardised with the new images' own mean and std. The pretrained "
                "features were learned on inputs standardised with the PRETRAINING statistics (the recipe's "
                "`mean` and `std`); other statistics shift every input the backbone sees, and change with each "
                "batch.", _own_stats),
        Mistake("per_image_statistics", "You standardised each image with its own mean and std: a bright image "
                "and a faint one then look alike to the backbone, which saw every image standardised with the same "
                "PRETRAINING statistics (the recipe's `mean` and `std`).", _per_image),
        Mistake("imagenet_statistics", "You used ImageNet's statistics (0.485, 0.229): they belong to models "
                "pretrained on ImageNet. This model was pretrained on glyphs: use its recipe's `mean` and "
                "`std`.", _imagenet),
        Mistake("not_scaled", "You standardised the 0-255 values directly. The statistics are of pixels "
                "scaled to [0, 1]: divide by 255 first.", _no_scaling),
        Mistake("mean_rescaled_only", "You moved the recipe's mean to the 0-255 scale but not its std: the "
                "statistics were measured on pixels in [0, 1]. Scale the bytes to [0, 1] first (or both "
                "statistics by 255).", _mean_rescaled_only),
        Mistake("not_standardised", "You scaled to [0, 1] but did not standardise: subtract the recipe's "
                "`mean` and divide by its `std`, as the pretraining did.", _scaled_only),
        Mistake("mean_std_swapped", "You subtracted the std and divided by the mean: `(x - mean) / std`.",
                _swapped),
        Mistake("mutated_input", "Your function changed the caller's images in place: return a new tensor.",
                _in_place, match_output=False),
        Mistake("mutated_recipe", "Your function changed the recipe dictionary it was given (`pop`, `del` or an "
                "assignment): the caller's recipe loses its statistics for the next batch. Read it with "
                "`recipe['mean']`.", _popped, match_output=False),
        _TENSOR.mistake(),
        Mistake("not_float", "Your result has dtype {got}: the model takes floats (`images.float()`).",
                match_output=False),
    ],
    hints=[
        "What did the backbone's inputs look like during pretraining, and which part of the recipe writes that down? "
        "Why would one letter alone be prepared differently from the same letter among 156?",
        "Statistics taken from the images themselves change with the batch; the ones the backbone was calibrated on "
        "are fixed, in its metadata. Judge from their size on which scale of pixel values they were measured, and "
        "bring the bytes to that scale before using them.",
        "Look up `torch.Tensor.float` and torchvision's `v2.Normalize` and `v2.ToDtype` (its `scale` argument); read "
        "the recipe by its keys, without `pop` or `del`.",
    ],
))
