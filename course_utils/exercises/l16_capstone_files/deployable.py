"""Deployable: a module that takes raw uint8 pixels and does the preprocessing itself, so the
model that ships needs nothing else from its user.

The decisions: cast to float BEFORE any arithmetic (uint8 wraps around 256), scale to [0, 1],
standardise with the statistics the model was trained with (the ones given, not each batch's
own), and return the logits (not probabilities, not classes: a user may want the scores). The
check wraps a small model in eval mode and compares with the reference on random pixels.
"""

from __future__ import annotations

import torch
from torch import nn

from course_utils.grading import Case, Compare, Exercise, Expect, Incorrect, Mistake, Rand, register

from ._kit import LESSON, small_classifier, uint8_images

# --- reference: the solution notebook's answer (generated from solutions/16_capstone_files.py)
from ...answers.l16_capstone_files import Deployable


# --- cases
def _cases(r: Rand) -> Case:
    k = r.integer(2, 6)
    mean, std = round(0.1 + 0.4 * float(r.rand(1)), 3), round(0.15 + 0.3 * float(r.rand(1)), 3)
    return Case((r.integer(0, 2**31), k, mean, std), {"images": uint8_images(r, r.integer(2, 5), 8)})


EDGE_CASES = [Case((7, 3, 0.2113, 0.2987), {"images": uint8_images(Rand(3), 1, 8)},
                   label="one image, the course's statistics")]


# --- run
_MODULE = Expect("not_a_module", "an `nn.Module`", nn.Module, said="`Deployable(model, mean, std)` gave")
_TENSOR = Expect("not_a_tensor", "a tensor of logits", torch.Tensor, said="`forward` returned")


def _run(answer, case: Case):
    seed, k, mean, std = case.args
    images = case.kwargs["images"]
    model = small_classifier(Rand(seed), k).eval()
    wrapped = answer(model, mean, std)
    _MODULE.check(wrapped)
    if getattr(wrapped, "model", None) is not model:
        raise Incorrect("no_model_attribute")
    given = images.clone()
    with torch.no_grad():
        out = wrapped(given)
    if not torch.equal(given, images):
        raise Incorrect("mutated_input")
    _TENSOR.check(out)
    if out.shape != (len(images), k) or not out.is_floating_point():
        raise Incorrect("not_logits", got=f"shape {tuple(out.shape)}, dtype {out.dtype}")
    if torch.allclose(out.sum(1), torch.ones(len(images)), atol=1e-4) and bool((out >= 0).all()):
        raise Incorrect("probabilities")
    return out


# --- wrong answers (small overrides of the reference's forward)
class _NotScaled(Deployable):
    def forward(self, images):
        return self.model((images.float() - self.mean) / self.std)


class _NotStandardised(Deployable):
    def forward(self, images):
        return self.model(images.float() / 255.0)


class _OwnStatistics(Deployable):
    def forward(self, images):
        x = images.float() / 255.0
        return self.model((x - x.mean()) / x.std())


class _Probabilities(Deployable):
    def forward(self, images):
        return super().forward(images).softmax(dim=1)


class _Classes(Deployable):
    def forward(self, images):
        return super().forward(images).argmax(dim=1)


class _Uint8Arithmetic(Deployable):
    def forward(self, images):
        shifted = images - round(self.mean * 255)  # uint8: wraps around below 0
        return self.model(shifted.float() / (255.0 * self.std))


class _Copy(Deployable):
    def __init__(self, model, mean, std):
        import copy
        super().__init__(copy.deepcopy(model), mean, std)


# --- declaration
register(Exercise(
    lesson=LESSON, name="Deployable", title="Bake the preprocessing into the model you ship",
    reference=Deployable, kind="class", cases=_cases, edge_cases=EDGE_CASES, run=_run,
    arg_names=("model_seed", "classes", "mean", "std"),
    compare=Compare(rtol=1e-4, atol=1e-4),
    mistakes=[
        Mistake("not_scaled", "You standardised the 0-255 values: the statistics are of pixels scaled to [0, 1]. "
                "Divide by 255 first.", _NotScaled),
        Mistake("not_standardised", "You scaled to [0, 1] but did not standardise with `mean` and `std`: the model "
                "was trained on standardised inputs.", _NotStandardised),
        Mistake("own_statistics", "You standardised with the batch's own mean and std: a batch of one image, or "
                "of dark images, would be rescaled differently. Use the `mean` and `std` given (training's).",
                _OwnStatistics),
        Mistake("uint8_arithmetic", "You subtracted before casting: uint8 arithmetic wraps around (10 - 54 is "
                "212), so dark pixels become bright. Cast with `.float()` first.", _Uint8Arithmetic),
        Mistake("probabilities", "Your module returns probabilities (softmax); return the logits, as the model "
                "does: users take `argmax`, or softmax when they need it.", _Probabilities, match_output=False),
        Mistake("not_logits", "`forward` should return the logits, a float tensor (N, number of classes); it "
                "returned {got}.", _Classes, match_output=False),
        Mistake("no_model_attribute", "Keep the model you were given as `self.model` (the same object, not a "
                "copy: training may continue on it).", _Copy, match_output=False),
        _MODULE.mistake(),
        _TENSOR.mistake(),
        Mistake("mutated_input", "`forward` changed the images it was given in place.", match_output=False),
    ],
    hints=[
        "What did the training pipeline do to the pixels before the model saw them, and in what order? And what "
        "happens to `uint8` values when you subtract from them?",
        "`forward` repeats the training preprocessing on the raw batch: cast to floats first (uint8 arithmetic wraps "
        "around), scale to [0, 1], standardise with the `mean` and `std` given at construction (never the batch's "
        "own), then return the model's logits as they are, with no softmax.",
        "Look up `torch.Tensor.float` and `nn.Module`'s `__init__`; keep `model` as `self.model`, the same object, "
        "and `mean` and `std` as plain numbers.",
    ],
))
