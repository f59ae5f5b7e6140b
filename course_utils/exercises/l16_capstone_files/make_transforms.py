"""make_transforms: a training pipeline that augments and an evaluation pipeline that does not,
both scaling uint8 pixels to [0, 1] and standardising with the given (pretraining) statistics.

The decisions: which of the two augments (only training: an evaluation that changes from run to
run measures the dice), that both normalise the same way, and which augmentation keeps a digit
that digit (no mirror image, no large rotation). The check seeds the global RNG itself, inside
``fork_rng``, and runs each pipeline under two seeds: a pipeline is random when the two differ.
A uniform image tells whether training normalises (its centre stays the same grey under small
shifts and rotations); an image bright on its left (then on top) tells whether the augmentation
mirrors or turns the image over.
"""

from __future__ import annotations

import torch

from course_utils.grading import Case, Compare, Exercise, Expect, Incorrect, Mistake, Rand, describe, pair_of, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/16_capstone_files.py)
from ...answers.l16_capstone_files import make_transforms

RUNS = 6  # runs of each pipeline on the case's images: a p=0.5 step stays off in all 1 time in 2**(6 * images)
N_DRAWS = 16  # draws of the training pipeline per test image: a p=0.5 flip hides in all of them 1 time in 65,536


# --- cases
def _cases(r: Rand) -> Case:
    size = r.choice([24, 28, 32])
    g = torch.Generator().manual_seed(r.integer(0, 2**31))
    images = torch.randint(0, 256, (r.integer(2, 4), 1, size, size), generator=g, dtype=torch.uint8)
    mean, std = round(0.1 + 0.4 * float(r.rand(1)), 3), round(0.15 + 0.3 * float(r.rand(1)), 3)
    return Case((mean, std), {"images": images, "seed": r.integer(0, 10_000)})


EDGE_CASES = [Case((0.2113, 0.2987), {"images": _cases(Rand(1)).kwargs["images"], "seed": 1},
                   label="the course's recipe")]


# --- run
def _apply(transform, images, seed: int, name: str) -> list[torch.Tensor]:
    torch.manual_seed(seed)
    outs = []
    for img in images:
        out = transform(img.clone())
        if not isinstance(out, torch.Tensor) or out.shape != img.shape:
            raise Incorrect("wrong_output", which=name, got=describe(out) if not isinstance(out, torch.Tensor)
                            else f"shape {tuple(out.shape)}")
        if out.dtype != torch.float32:
            raise Incorrect("wrong_output", which=name, got=f"dtype {out.dtype}")
        outs.append(out)
    return outs


def _keeps_the_label(train, size: int, seed: int) -> bool:
    """An image bright on its left half stays brighter on the left; the same for the top."""
    left = torch.full((1, size, size), 30, dtype=torch.uint8)
    left[:, :, : size // 2] = 220
    top = left.transpose(1, 2).contiguous()
    q = size // 4
    for k in range(N_DRAWS):
        a, b = _apply(train, torch.stack([left, top]), seed + k, "train_transform")
        if not (a[..., :q].mean() > a[..., -q:].mean() and b[..., :q, :].mean() > b[..., -q:, :].mean()):
            return False
    return True


_PAIR = Expect("not_a_pair", "a pair of transforms, `(train_transform, eval_transform)`",
               lambda pair: pair_of()(pair) and all(callable(t) for t in pair))


def _run(answer, case: Case):
    mean, std = case.args
    images, seed = case.kwargs["images"], case.kwargs["seed"]
    pair = answer(mean, std)
    _PAIR.check(pair)
    train, evaluate = pair
    with torch.random.fork_rng(devices=[]):
        # several runs: a step applied with p=0.5 (RandomPerspective's default) is seen in one of them
        e1, *es = (_apply(evaluate, images, seed + k, "eval_transform") for k in range(RUNS))
        t1, *ts = (_apply(train, images, seed + k, "train_transform") for k in range(RUNS))
        eval_random = any(not torch.equal(a, b) for e in es for a, b in zip(e1, e))
        train_random = any(not torch.equal(a, b) for t in ts for a, b in zip(t1, t))
        if eval_random and not train_random:
            raise Incorrect("swapped")
        if eval_random:
            raise Incorrect("augmented_eval")
        if not train_random:
            raise Incorrect("train_not_augmented")
        size, c, w = images.shape[-1], images.shape[-1] // 2, images.shape[-1] // 5
        grey = torch.full((1, 1, size, size), 128, dtype=torch.uint8)  # geometric changes keep its centre grey
        centres = torch.stack([_apply(train, grey, seed + k, "train_transform")[0][..., c - w: c + w, c - w: c + w]
                               for k in range(N_DRAWS)])
        if not torch.allclose(centres, centres.flatten()[0].expand_as(centres), atol=1e-5):
            raise Incorrect("not_geometric")  # a uniform image's centre changes: noise, brightness, erasing
        if not torch.allclose(centres, torch.full_like(centres, (128 / 255 - mean) / std), atol=1e-3):
            raise Incorrect("train_not_normalised")
        if not _keeps_the_label(train, size, seed):
            raise Incorrect("changes_the_label")
    return torch.stack(e1)


# --- wrong answers
def _without(*names):
    """The reference with the training pipeline's listed steps removed."""
    def answer(mean, std):
        train, evaluate = make_transforms(mean, std)
        from torchvision.transforms import v2
        return v2.Compose([t for t in train.transforms if type(t).__name__ not in names]), evaluate
    return answer


def _swapped(mean, std):
    return make_transforms(mean, std)[::-1]


def _both_augment(mean, std):
    train, _ = make_transforms(mean, std)
    return train, train


def _eval_scaled_only(mean, std):
    from torchvision.transforms import v2
    return make_transforms(mean, std)[0], v2.ToDtype(torch.float32, scale=True)


def _eval_unscaled(mean, std):
    from torchvision.transforms import v2
    return make_transforms(mean, std)[0], v2.Compose([v2.ToDtype(torch.float32), v2.Normalize([mean], [std])])


def _with_noise(mean, std):
    from torchvision.transforms import v2
    train, evaluate = make_transforms(mean, std)
    return v2.Compose([train, v2.GaussianNoise(sigma=0.1)]), evaluate


def _with_flip(mean, std):
    from torchvision.transforms import v2
    train, evaluate = make_transforms(mean, std)
    return v2.Compose([v2.RandomHorizontalFlip(), train]), evaluate


def _eval_own_stats(mean, std):
    def evaluate(img):
        x = img.float() / 255
        return (x - x.mean()) / x.std()
    return make_transforms(mean, std)[0], evaluate


# --- declaration
register(Exercise(
    lesson=LESSON, name="make_transforms", title="Augment in training only; normalise both the same way",
    reference=make_transforms, kind="function", cases=_cases, edge_cases=EDGE_CASES, run=_run, n_random=4,
    compare=Compare(rtol=1e-5, atol=1e-5), uses_global_rng=True, timeout=10.0,
    mistakes=[
        Mistake("swapped", "Your evaluation pipeline is random and your training one is not: the pair is "
                "`(train_transform, eval_transform)`, in that order.", _swapped, match_output=False),
        Mistake("augmented_eval", "Your evaluation pipeline gives different images on two runs: it augments. "
                "Evaluation must see each image as it is, or the validation score changes with the random seed.",
                _both_augment, match_output=False),
        Mistake("train_not_augmented", "Your training pipeline gives the same image on every run: it does not "
                "augment. Add small random shifts, rotations or scalings (e.g. `v2.RandomAffine`).",
                _without("RandomAffine"), match_output=False),
        Mistake("train_not_normalised", "Your training pipeline does not scale and standardise like the "
                "evaluation one: the model would be trained on one scale and evaluated on another. Both end with "
                "`ToDtype(torch.float32, scale=True)` and `Normalize([mean], [std])`.",
                _without("Normalize"), match_output=False),
        Mistake("not_geometric", "Your training pipeline changes the grey of a uniform image (noise, brightness, "
                "erasing): the task asks for geometric changes only (shifts, small rotations, scalings), which "
                "move a digit without changing its pixel values.", _with_noise, match_output=False),
        Mistake("changes_the_label", "Your augmentation mirrors or turns the image over (a flip, or a rotation "
                "far beyond a few degrees): a mirrored 2 or a 6 upside down is not the same digit. Keep to shifts, "
                "small rotations and scalings.", _with_flip, match_output=False),
        Mistake("eval_not_normalised", "Your evaluation pipeline scales to [0, 1] but does not standardise "
                "with `mean` and `std`.", _eval_scaled_only),
        Mistake("eval_not_scaled", "Your evaluation pipeline standardises 0-255 values: `ToDtype(torch.float32)` "
                "without `scale=True` keeps them, and the statistics are of pixels in [0, 1].", _eval_unscaled),
        Mistake("eval_own_statistics", "Your evaluation pipeline standardises each image with its own mean and "
                "std: use the `mean` and `std` you were given (the pretraining statistics).", _eval_own_stats),
        _PAIR.mistake(),
        Mistake("wrong_output", "Your {which} should turn a uint8 image (1, H, W) into a float32 image of the "
                "same shape; it gave {got}.", match_output=False),
    ],
    hints=[
        "Which of the two pipelines sees new images every epoch, and which must give the same answer every time it "
        "sees an image?",
        "Both pipelines end the same way: floats scaled to [0, 1], then standardised with the `mean` and `std` you "
        "are given. Only the training one first changes the image at random, with geometric changes small enough to "
        "keep a digit that digit (a little shift, turn or scaling; no flips); the evaluation one never draws "
        "anything.",
        "Look up `v2.Compose`, `v2.RandomAffine` (its `degrees`, `translate` and `scale`), `v2.ToDtype` (its `scale` "
        "flag) and `v2.Normalize`; a list of steps can be shared by both pipelines.",
    ],
))
