"""make_augment: a random transform of a float glyph that keeps it the same letter.

Subtle: there is no single right answer, so the check observes what the transform does. It is
applied to twelve letters that a mirror or a large rotation turns into no letter (F, G, J, L, P,
R in two fonts each), six draws each under a fixed seed; each result is matched against the
letter mirrored or not and rotated in 15-degree steps, at every shift up to 4 pixels (so
translation, scaling, blur, noise, erasing and inversion do not count). More than 12 % of draws
mirrored, or more than 20 % turned 45 degrees or more, fails (one mirror in two is 50 %; a
RandomRotation(45) turns about 11 % beyond the 30-degree band, RandomRotation(60) about 30 %).
"""

from __future__ import annotations

import torch

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from . import _kit
from ._kit import LESSON

# --- reference: the notebook's answer (generated from solutions/13_images_from_files.py)
from ...answers.l13_images_from_files import make_augment

DRAWS = 6


# --- cases
def _cases(r: Rand) -> Case:
    return Case((), dict(seed=r.integer(0, 2**31)))


EDGE_CASES = [Case((), dict(seed=0), label="twelve asymmetric letters, six draws each")]


# --- run and probes
def _draw(augment, x: torch.Tensor):
    given = x.clone()
    out = augment(given)
    if not torch.equal(given, x):
        raise Incorrect("in_place")
    return out


def _run(answer, case: Case):
    augment = answer()
    if not callable(augment):
        raise Incorrect("not_callable", got=type(augment).__name__)
    glyphs = _kit.probe_glyphs()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(case.kwargs["seed"])
        draws = [[_draw(augment, x) for _ in range(DRAWS)] for x in glyphs]
    for x, outs in zip(glyphs, draws):
        for out in outs:
            if not isinstance(out, torch.Tensor):
                raise Incorrect("not_tensor", got=type(out).__name__)
            if out.shape != x.shape:
                raise Incorrect("changed_shape", shape=tuple(out.shape))
            if out.dtype != x.dtype:
                raise Incorrect("changed_dtype", dtype=str(out.dtype).replace("torch.", ""))
            if float(out.min()) < -0.1 or float(out.max()) > 1.1:
                raise Incorrect("normalised", low=round(float(out.min()), 2), high=round(float(out.max()), 2))
    if all(torch.equal(out, x) for x, outs in zip(glyphs, draws) for out in outs):
        raise Incorrect("no_change")
    if all(torch.equal(out, outs[0]) for outs in draws for out in outs):
        raise Incorrect("not_random")
    seen = [_kit.what_it_did(out, k) for k, outs in enumerate(draws) for out in outs]
    share = {what: seen.count(what) / len(seen) for what in ("hflip", "vflip", "rotated")}
    if share["hflip"] + share["vflip"] > 0.12:
        raise Incorrect("vertical_flip" if share["vflip"] > share["hflip"] else "horizontal_flip",
                        percent=round(100 * (share["hflip"] + share["vflip"])))
    if share["rotated"] > 0.2:
        raise Incorrect("rotates_too_far", percent=round(100 * share["rotated"]))
    return True


# --- wrong answers
def _v2():
    from torchvision.transforms import v2  # loaded on use: the course's graders import without torchvision

    return v2


def _hflip():
    v2 = _v2()
    return v2.Compose([v2.RandomHorizontalFlip(), v2.RandomAffine(degrees=10, translate=(0.1, 0.1))])


def _vflip():
    return _v2().RandomVerticalFlip()


def _rot180():
    return _v2().RandomRotation(180)


def _fixed():
    from torchvision.transforms.v2 import functional as TF

    return lambda x: TF.rotate(x, 10.0)


def _normalises():
    v2 = _v2()
    return v2.Compose([v2.RandomAffine(degrees=10, translate=(0.1, 0.1)), v2.Normalize([0.2], [0.3])])


def _identity():
    return lambda x: x


def _in_place():
    def augment(x):
        return x.mul_(0.9).add_(0.05)  # changes the image it was given
    return augment


# --- declaration
register(Exercise(
    lesson=LESSON, name="make_augment", title="An augmentation that keeps every letter the same letter",
    reference=make_augment, kind="function", run=_run, preload=("torchvision.transforms.v2",),
    prepare=_kit.prepare_probe, cases=_cases, edge_cases=EDGE_CASES, n_random=1,
    uses_global_rng=True,  # torchvision's random transforms draw from torch's global RNG
    timeout=20.0,  # the check itself: 21 cases of 72 probes take about 3 s idle (tests ask for 20 random cases)
    mistakes=[
        Mistake("horizontal_flip", "{percent} % of the letters came back mirrored left to right: a mirrored "
                "F, G, J or R is no letter, so a horizontal flip teaches the model wrong labels. Leave flips "
                "out.", _hflip, match_output=False),
        Mistake("vertical_flip", "{percent} % of the letters came back upside down and mirrored (a vertical "
                "flip): no letter survives that. Leave flips out.", _vflip, match_output=False),
        Mistake("rotates_too_far", "{percent} % of the letters came back turned by 45 degrees or more: at 90 or "
                "180 degrees a letter is no longer read as that letter. Keep rotations small (`degrees=10` "
                "to 20).", _rot180, match_output=False),
        Mistake("not_random", "Your transform does the same thing every time: an augmentation must draw new "
                "parameters on each call (`v2.RandomAffine`, `v2.RandomRotation`...), or every epoch sees the "
                "same images.", _fixed, match_output=False),
        Mistake("normalised", "Your transform's values run from {low} to {high}: it normalises, and the "
                "pipeline normalises after it (twice). Return images still in [0, 1]; `Normalize` comes "
                "last, once.", _normalises, match_output=False),
        Mistake("no_change", "Your transform returned every image unchanged: choose a transform that changes "
                "them (a small random shift, rotation, scaling...).", _identity, match_output=False),
        Mistake("in_place", "Your transform changed the image it was given, in place (a `_` method such as "
                "`add_`, or slice assignment): a dataset that keeps its images in memory would lose the "
                "originals, and every epoch would augment an already augmented image. Return a new tensor.",
                _in_place, match_output=False),
        Mistake("changed_shape", "Your transform changed the image's shape to {shape}: keep `(1, H, W)` "
                "(crop or pad back, or use `RandomAffine`, which keeps the size).", None, match_output=False),
        Mistake("changed_dtype", "Your transform returned {dtype}: keep float32.", None, match_output=False),
        Mistake("not_callable", "Return the transform itself (e.g. `v2.RandomAffine(...)`), not {got}.", None,
                match_output=False),
        Mistake("not_tensor", "Your transform returned {got}, not a tensor.", None, match_output=False),
    ],
    hints=[
        "Which changes would a person still read as the same letter, and which turn some letters into no letter at "
        "all?",
        "Small geometric changes keep a letter: a little shift, tilt or change of size, a slight blur. Mirror images "
        "and large turns do not (a mirrored J is no letter). The transform must draw new parameters on every call, "
        "keep the shape and dtype, return a new tensor and leave the values in [0, 1]: normalising comes after it.",
        "Look up `v2.RandomAffine`, `v2.RandomRotation` or `v2.RandomPerspective`, and keep their ranges small: a few "
        "degrees, a few percent of the image's size.",
    ],
))
