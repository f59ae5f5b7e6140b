"""Helpers shared by lesson 13's exercises: small glyph folders on disk (made once per process,
in a temporary directory removed at exit) and fixed probe glyphs.

The folders are written with :func:`course_utils.glyphs.make_received_folder`: a few classes whose
order in the CSV is not their sorted order (so a numbering by first appearance shows), a few
fonts, small images, so that reading every item costs milliseconds; every third PNG saved in
RGB and two unlabelled rows, as the notebook's ``received`` folder has.
"""

from __future__ import annotations

import atexit
import functools
import random
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch

from course_utils import glyphs

LESSON = "13_images_from_files"

# (chars, fonts, per_font, size): chars in CSV order; none of them is already sorted
FOLDERS: tuple[tuple[str, tuple[str, ...], int, int], ...] = (
    ("CAB", ("DejaVuSans", "cmr10"), 1, 12),
    ("J7EA", ("STIXGeneral",), 2, 10),
)


@functools.cache
def _tmp() -> Path:
    path = Path(tempfile.mkdtemp(prefix="course-l13-"))
    atexit.register(shutil.rmtree, path, True)
    return path


@functools.cache
def folder(k: int) -> Path:
    """The ``k``-th folder of :data:`FOLDERS`, written on first use."""
    chars, fonts, per_font, size = FOLDERS[k]
    return glyphs.make_received_folder(_tmp() / f"folder{k}", chars=chars, per_font=per_font, fonts=fonts,
                                       size=size, seed=13, unlabelled=2)


def fresh_copy(k: int) -> Path:
    """A copy of folder ``k`` that a check may change (a new directory each call)."""
    return Path(shutil.copytree(folder(k), tempfile.mkdtemp(dir=_tmp()), dirs_exist_ok=True))


def prepare() -> None:
    for k in range(len(FOLDERS)):
        folder(k)


# letters that a horizontal flip, a vertical flip or a large rotation turns into no letter
PROBE_GLYPHS = (("F", "DejaVuSans"), ("G", "DejaVuSerif"), ("J", "DejaVuSans-Bold"), ("R", "STIXGeneral"),
                ("P", "cmss10"), ("L", "DejaVuSansMono"), ("F", "cmr10"), ("G", "DejaVuSans-Bold"),
                ("J", "cmtt10"), ("R", "DejaVuSerif-Bold"), ("P", "STIXGeneralBol"), ("L", "cmss10"))


@functools.cache
def probe_glyphs() -> torch.Tensor:
    """(12, 1, 28, 28) float32 in [0, 1], light ink on a dark page."""
    out = []
    for i, (char, font) in enumerate(PROBE_GLYPHS):
        x = torch.from_numpy(np.asarray(glyphs.render(char, font, random.Random(f"probe/{i}"), 28),
                                        dtype=np.float32) / 255.0)[None]
        out.append(1.0 - x if x.median() > 0.5 else x)
    return torch.stack(out)


# --- the geometric probe of make_augment: what did a transform do to an asymmetric letter?
ANGLES = tuple(range(-180, 180, 15))
NEAR = 30  # degrees: a letter tilted this far is still the letter; 45 and more is not kept
SHIFT = 4  # pixels: candidates are compared at every shift up to this, so translation is ignored


def _unit(t: torch.Tensor) -> torch.Tensor:
    t = t.flatten(1).float()
    t = t - t.mean(1, keepdim=True)
    return t / (t.norm(dim=1, keepdim=True) + 1e-8)


@functools.cache
def candidates() -> torch.Tensor:
    """(glyphs, 2 * len(ANGLES), pixels): each probe glyph, mirrored or not, rotated by each angle."""
    from torchvision.transforms.v2 import functional as TF  # the image lessons' package, loaded on use

    out = []
    for x in probe_glyphs():
        views = [TF.rotate(TF.horizontal_flip(x) if flip else x, float(a)) for flip in (False, True) for a in ANGLES]
        out.append(_unit(torch.stack(views)))
    return torch.stack(out)


def shifted(a: torch.Tensor) -> torch.Tensor:
    """Every shift of ``a`` (1, H, W) by up to SHIFT pixels, padded with zeros: (shifts, H * W)."""
    h, w = a.shape[-2:]
    p = torch.nn.functional.pad(a.float(), (SHIFT,) * 4)
    # each (H, W) window of the padded image is one shift: unfold with the image's own size
    return torch.nn.functional.unfold(p[None], (h, w)).squeeze(0).T


def what_it_did(a: torch.Tensor, k: int, margin: float = 0.03) -> str:
    """``"kept"``, ``"hflip"``, ``"vflip"`` or ``"rotated"``: which view of probe glyph ``k`` the
    augmented image ``a`` matches best (absolute correlation, best shift), when it beats the
    unmirrored views within NEAR degrees by ``margin``."""
    scores = (_unit(shifted(a)) @ candidates()[k].T).abs().amax(0)
    n = len(ANGLES)
    near = torch.tensor([abs(x) <= NEAR for x in ANGLES])
    kept, mirrored, far = scores[:n][near].max(), scores[n:].max(), scores[:n][~near].max()
    if max(mirrored, far) <= kept + margin:
        return "kept"
    if mirrored >= far:
        angle = ANGLES[int(scores[n:].argmax())]
        return "vflip" if abs(angle) > 90 else "hflip"
    return "rotated"


def prepare_probe() -> None:
    """Render the probe glyphs and their views once, before the first check's clock starts."""
    try:
        candidates()
    except ImportError:  # no torchvision here: the lesson's first cell says so
        pass
