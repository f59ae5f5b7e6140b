"""image_to_tensor: a uint8 NumPy image (H, W) becomes a float32 tensor (1, H, W) in [0, 1].

A diagnosis: the notebook draws a teammate's converter on a dim 7x5 photo next to the photo (their
``reshape(1, W, H)`` scrambles it, their division by the image's own maximum brightens it) and asks
for a tensor that looks like the photo; the spec names neither the scale nor the way to add the
channel (``colleagues_two_bugs``, then ``divided_by_max`` or ``reshape_swapped_hw`` for one fix).

Subtle: ``torch.from_numpy`` shares the array's memory (an in-place op on it changes the
caller's image) and refuses negative strides (a flipped image); dividing by the image's own
maximum, or NumPy's float64 division, gives values that look right.
"""

from __future__ import annotations

import numpy as np
import torch

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ...answers.l01_tensors import image_to_tensor
from ._kit import LESSON


# --- reference: imported above from course_utils/answers/l01_tensors.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases
def _cases(r: Rand) -> Case:
    h, w = r.integer(2, 9), r.integer(2, 9)
    return Case((r.randint(0, 256, (h, w)).to(torch.uint8).numpy(),))


# --- run and probes
def _run(answer, case: Case):
    """Call the answer on a copy of the array it was given, then check that array: the
    framework's mutation check looks at tensors; an image is a NumPy array."""
    (image,) = case.args
    before = image.copy()
    out = answer(image)
    if not np.array_equal(image, before):
        raise Incorrect("mutated_input")
    if isinstance(out, torch.Tensor) and out.requires_grad:
        raise Incorrect("requires_grad")
    return out


# --- wrong answers
def _zeroes_the_image(image):
    out = image_to_tensor(image)
    image[...] = 0
    return out


def _requires_grad(image):
    return image_to_tensor(image).requires_grad_()


# --- declaration
register(Exercise(
    lesson=LESSON, name="image_to_tensor",
    title="Find what scrambles and brightens a teammate's image converter and write one that draws like the photo",
    reference=image_to_tensor, cases=_cases, run=_run,
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
        # the notebook's teammate: both bugs, each drawn in the notebook
        Mistake("colleagues_two_bugs", "This is the teammate's converter: the picture it gives is scrambled "
                "and brighter than the photo. Which part of the code moves pixels, and which part decides how "
                "bright a pixel value is drawn?",
                lambda a: (torch.from_numpy(a).float() / float(a.max())).reshape(1, a.shape[1], a.shape[0])),
        Mistake("reshape_swapped_hw", "Your tensor has shape (1, W, H): a reshape to other sizes re-reads the "
                "pixels row after row into rows of another length, so the picture is scrambled (on a square "
                "image it happens to be right). The channel goes in front and every pixel stays where it was.",
                lambda a: torch.from_numpy(a).float().div(255).reshape(1, a.shape[1], a.shape[0])),
        Mistake("divided_by_max", "You divided by the image's own maximum; pixel values are scaled by "
                "the fixed 255 (an image with no white pixel must not become brighter).",
                lambda a: torch.from_numpy(a).float().div(float(a.max())).unsqueeze(0)),
        Mistake("numpy_float64", "Your values are right but float64 (NumPy's default after dividing "
                                 "the array by a Python float, or a `.double()`); the exercise asks "
                                 "for float32. At which step does the number type get decided in your"
                                 " code?",
                lambda a: torch.from_numpy(a / 255.0).unsqueeze(0)),
        Mistake("not_scaled", "The values should be in [0, 1]: divide by 255.",
                lambda a: torch.from_numpy(a).float().unsqueeze(0)),
        Mistake("no_channel_dim", "The result needs a leading channel dimension of size 1: (1, H, W),"
                                  " not (H, W).",
                lambda a: torch.from_numpy(a).float() / 255),
        Mistake("integer_division", "`//` is integer division: almost every pixel becomes 0. The "
                                    "values must become fractions, so the division has to happen on "
                                    "floating-point numbers.",
                lambda a: (torch.from_numpy(a) // 255).float().unsqueeze(0)),
        Mistake("mutated_input", "Your code changed the NumPy image it was given (an assignment into "
                                 "`image[...]` or an in-place op on a tensor that shares the array's "
                                 "memory). Leave the caller's image as it was: work on a copy.",
                _zeroes_the_image, match_output=False),
        Mistake("requires_grad", "Your tensor requires grad; an image converted from NumPy is data, not a "
                "parameter. Drop the `requires_grad_()`.", _requires_grad, match_output=False),
    ],
    hints=[
        "Look at the printed shapes and the two pictures: which difference comes from where the pixels are, "
        "and which from how bright each value is drawn?",
        "A reshape to other sizes re-reads the pixels in memory order, it does not turn the picture; adding a "
        "leading dimension of size 1 moves nothing. The photo's scale is the same for every photo (black to "
        "white), whatever its brightest pixel is; and the number type is decided by the step that first "
        "makes fractions.",
        "Look up unsqueeze (or indexing with None) for the channel, and the fixed top of the uint8 range for "
        "the scale.",
    ],
))
