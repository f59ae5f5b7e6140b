"""make_transform: the pipeline from ``ImageFolder``'s PIL image to a normalised float tensor.

Subtle: ``ImageFolder`` loads RGB, so one channel must be asked for (``Grayscale(1)``, before or
after ``ToImage``: the check's images have equal R, G and B, as a grey PNG loaded as RGB has, so
either order gives the same numbers, but to one grey level: torchvision's ``Grayscale`` of a uint8
tensor truncates its weighted sum, 0.9999 p, to p - 1, so ``Grayscale`` after ``PILToTensor``
and before ``ToDtype`` is a right pipeline one grey level down, which the tolerance accepts: one
level over the smallest std a case uses, 1/255/0.3, plus float rounding); ``Normalize`` needs floats
in [0, 1] first; the statistics are the arguments, never constants (the check calls the answer with
two sets and compares).
"""

from __future__ import annotations

import torch
from PIL import Image

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON

# --- reference: the notebook's answer (generated from solutions/13_images_from_files.py)
from ...answers.l13_images_from_files import make_transform


# --- cases
MIN_STD = 0.3  # the smallest std of a case: one grey level is 1/255/std at most in the output


def _cases(r: Rand) -> Case:
    size = r.integer(6, 16)
    grey = (r.rand(3, size, size + r.integer(0, 3)) * 255).round().to(torch.uint8)
    return Case((grey, [round(r.uniform(0.1, 0.6), 3)], [round(r.uniform(MIN_STD, 0.4), 3)]))


EDGE_CASES = [Case((torch.tensor([[[0, 128], [255, 64]]], dtype=torch.uint8).expand(2, 2, 2).clone(), [0.25], [0.5]),
                   label="2x2 images, mean 0.25, std 0.5")]


def _pil(grey: torch.Tensor) -> Image.Image:
    """A grey PNG as ImageFolder's default loader gives it: RGB, three equal channels."""
    return Image.fromarray(grey.numpy(), mode="L").convert("RGB")


def _apply(answer, grey, mean, std) -> torch.Tensor:
    transform = answer(list(mean), list(std))
    if not callable(transform):
        raise Incorrect("not_callable", got=type(transform).__name__)
    outs = []
    for g in grey:
        try:
            out = transform(_pil(g))
        except TypeError as exc:
            if "float tensor" in str(exc):
                raise Incorrect("normalize_before_scale") from None
            raise
        if not isinstance(out, torch.Tensor):
            raise Incorrect("not_tensor", got=type(out).__name__)
        outs.append(out)
    return torch.stack(outs)


# --- run and probes
def _run(answer, case: Case):
    grey, mean, std = case.args
    out = _apply(answer, grey, mean, std)
    h, w = grey.shape[1:]
    if out.dtype != torch.float32:
        raise Incorrect("not_float", dtype=str(out.dtype).replace("torch.", ""))
    if out.shape[1:] == (3, h, w):
        raise Incorrect("kept_rgb")
    if out.shape[1:] != (1, h, w):
        raise Incorrect("wrong_shape", shape=tuple(out.shape[1:]), h=h, w=w)
    other = _apply(answer, grey, [mean[0] + 0.2], [std[0] * 1.5])
    if torch.equal(other, out):
        if float(out.min()) >= 0 and float(out.max()) <= 1:
            raise Incorrect("not_normalised")
        raise Incorrect("ignored_stats")
    pixels = out * std[0] + mean[0]  # what the answer had before normalising with (mean, std)
    if float(pixels.max()) > 2.0:
        raise Incorrect("not_scaled")
    return out


# --- wrong answers
def _normalize_first(mean, std):
    from torchvision.transforms import v2
    return v2.Compose([v2.Grayscale(1), v2.ToImage(), v2.Normalize(mean, std), v2.ToDtype(torch.float32, scale=True)])


def _no_scale(mean, std):
    from torchvision.transforms import v2
    return v2.Compose([v2.Grayscale(1), v2.ToImage(), v2.ToDtype(torch.float32), v2.Normalize(mean, std)])


def _imagenet(mean, std):
    return make_transform([0.449], [0.226])  # ImageNet's grey mean and std, whatever the data


def _rgb(mean, std):
    from torchvision.transforms import v2
    return v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True), v2.Normalize(mean * 3, std * 3)])


def _no_normalize(mean, std):
    from torchvision.transforms import v2
    return v2.Compose([v2.Grayscale(1), v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])


# --- declaration
register(Exercise(
    lesson=LESSON, name="make_transform", title="ToImage, ToDtype(scale=True), Normalize: in order",
    reference=make_transform, kind="function", run=_run, preload=("torchvision.transforms.v2",),
    cases=_cases, edge_cases=EDGE_CASES, n_random=3,
    # one grey level (Grayscale of a uint8 tensor truncates), and the float rounding of 0.2989+0.587+0.114
    compare=Compare(atol=1 / 255 / MIN_STD + 2e-3, rtol=1e-4),
    mistakes=[
        Mistake("normalize_before_scale", "`Normalize` got the image's bytes (uint8) and refused them: put "
                "`ToDtype(torch.float32, scale=True)` before `Normalize`.", _normalize_first, match_output=False),
        Mistake("not_scaled", "Your pixels were 0..255 floats when they were normalised: `ToDtype(torch.float32)` "
                "only changes the dtype; `scale=True` maps 0..255 to 0..1, the range the statistics describe.",
                _no_scale, match_output=False),
        Mistake("ignored_stats", "Called with other statistics, your transform gave the same tensors: normalise "
                "with the `mean` and `std` you are given (those of the training split), not constants such "
                "as ImageNet's.", _imagenet, match_output=False),
        Mistake("kept_rgb", "Your tensors have 3 channels: `ImageFolder` loads every file as RGB; add "
                "`v2.Grayscale(num_output_channels=1)` to get the one grey channel back.", _rgb,
                match_output=False),
        Mistake("not_normalised", "Your values are the pixels in [0, 1], not normalised: end with "
                "`v2.Normalize(mean, std)`.", _no_normalize, match_output=False),
        Mistake("not_float", "Your transform returns {dtype} tensors; the network wants float32.", None,
                match_output=False),
        Mistake("wrong_shape", "Each image should come out with shape (1, {h}, {w}), not {shape}.", None,
                match_output=False),
        Mistake("not_callable", "Return the transform (a `v2.Compose([...])`), not {got}.", None,
                match_output=False),
        Mistake("not_tensor", "Your transform returns {got}, not a tensor: it needs `v2.ToImage()`.", None,
                match_output=False),
    ],
    hints=[
        "What does `ImageFolder` hand the transform (what type, how many channels, which dtype), and what does each "
        "step of the pipeline need as its input?",
        "Work back from what the network wants: the normalisation needs floats on the scale the statistics were "
        "measured on, [0, 1]; scaling bytes to floats needs a tensor; and the image must first be brought back to the "
        "one grey channel the statistics describe. Normalise with the `mean` and `std` you are given, never with "
        "constants.",
        "Look up `v2.Compose`, `v2.Grayscale`, `v2.ToImage`, `v2.ToDtype` (what its `scale` flag does) and "
        "`v2.Normalize`.",
    ],
))
