"""Held-out data the instructor keeps: a capstone's accuracy measured on images nobody else has.

A capstone's own held-out images ship with the course (all 1,797 of lesson 12's digits), so a
submission can carry them with their labels and "classify" by looking them up. The grader's
``--heldout DIR`` replaces them with the instructor's: the judge reads
``DIR/<exercise name>/<class>/<image file>``, sends the images, never the labels, to the sandbox
with the probe's request, and scores the predictions that come back against the labels itself.

An exercise opts in with ``Exercise.heldout`` (a :class:`HeldOutSpec`): its probe asks
:func:`given` for the images (``None`` in a notebook and in a grading run without ``--heldout``:
the course's own split, as before), and its ``finish_probe`` asks :func:`given` for the labels
and :func:`bar` for the accuracy to reach. The images go out in an order drawn from the
operating system's randomness for each submission (:func:`shuffled`): read in folder order, all
the 0s first, a weak guess smoothed into a rising sequence recovered every label (a review found
it). The bar on someone's own images keeps the course's ratio of target to reference: the
target, times the reference's accuracy on those images over its accuracy on the course's split
(never above the target). The grader measures both before grading and prints them.
"""

from __future__ import annotations

import contextlib
import os
import stat
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff")
MAX_IMAGE_BYTES = 20 * 1024**2
MAX_IMAGES = 20_000
# pixels an image's header may declare: a 50-megapixel photo; decoding is never tried beyond (a
# 0.4 MB PNG of 13000x13000 pixels cost the grader 3 GB to read; a review found it)
MAX_IMAGE_PIXELS = 50_000_000


class HeldOutError(ValueError):
    """The instructor's folder cannot be used; the message says why and what to do."""


@dataclass(frozen=True)
class HeldOutSpec:
    """How an exercise takes held-out images from the instructor.

    classes: the class folders' names, in label order.
    read: ``read(folder) -> (images, labels)``: the exercise's input format and int64 class
        indices, from ``folder/<class>/<image>`` (:func:`read_class_folders` does the walking).
    score: ``score(ran, labels) -> accuracy``: what the exercise's probe returned, judged
        against the labels (used to measure the reference before grading).
    course_labels: the labels of the course's own held-out split, in the probe's order (to
        measure the reference there too).
    target: the accuracy the exercise asks for on its own held-out split.
    layout: what the folder holds, for the instructor's messages.
    probe: the index of the exercise's probe that reads the images.
    floor: the lowest accuracy of the reference that still makes a usable bar: below it the
        images are not what the exercise classifies (wrong labels, several digits an image), and
        the grader refuses them rather than pass every answer that beats a near-chance bar.
    """

    classes: tuple[str, ...]
    read: Callable[[Path], tuple[torch.Tensor, torch.Tensor]]
    score: Callable[[Any, torch.Tensor], float]
    course_labels: Callable[[], torch.Tensor]
    target: float
    layout: str
    probe: int = 0
    floor: float = 0.5


@dataclass(frozen=True)
class Given:
    """The held-out data of one grading run: images (sent to the sandbox), labels (judge only)."""

    images: torch.Tensor
    labels: torch.Tensor | None
    bar: float


_given: Given | None = None


def given() -> Given | None:
    """The instructor's held-out data while a probe or its verdict runs, else ``None``."""
    return _given


@contextlib.contextmanager
def giving(data: Given | None) -> Iterator[None]:
    """Make ``data`` what :func:`given` returns inside the block."""
    global _given
    old, _given = _given, data
    try:
        yield
    finally:
        _given = old


def bar(target: float) -> float:
    """The accuracy to reach: ``target`` on the course's split, the measured bar on the instructor's."""
    return target if _given is None else _given.bar


def calibrated_bar(spec: HeldOutSpec, reference_given: float, reference_course: float) -> float:
    """The bar on the instructor's images: the target scaled by how much harder they are for the
    reference than the course's split (the target itself when they are not harder)."""
    if reference_course <= 0:
        return spec.target
    return min(spec.target, spec.target * reference_given / reference_course)


def shuffled(images: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Images and labels in the same order, drawn from the operating system's randomness: no
    seed a submission could know, and a new order for each submission."""
    gen = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
    perm = torch.randperm(len(labels), generator=gen)
    return images[perm], labels[perm]


def _image_files(folder: Path) -> list[Path]:
    """The image files of one class folder, each checked before it is opened."""
    found = []
    try:
        entries = sorted(folder.iterdir())
    except OSError as exc:
        raise HeldOutError(f"{folder}: cannot list it ({exc.strerror or exc})") from None
    for path in entries:
        if path.name.startswith("."):
            continue
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode):
            raise HeldOutError(f"{path}: not a regular file (links, FIFOs and devices are never read)")
        if path.suffix.lower() not in IMAGE_SUFFIXES:
            raise HeldOutError(f"{path}: not an image file ({', '.join(IMAGE_SUFFIXES)})")
        if info.st_size > MAX_IMAGE_BYTES:
            raise HeldOutError(f"{path}: larger than {MAX_IMAGE_BYTES // 1024**2} MB")
        found.append(path)
    return found


def _check_pixels(path: Path) -> None:
    """Refuse an image whose header declares more than :data:`MAX_IMAGE_PIXELS`, before any
    pixel is decoded (PIL's ``Image.open`` reads the header only). An image PIL cannot open is
    left to the loader, which says so."""
    from PIL import Image

    too_many = f"more than {MAX_IMAGE_PIXELS:,} pixels"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # ours is the message
            with Image.open(path) as im:
                width, height = im.size
    except Image.DecompressionBombError:  # PIL's own bound, above ours
        raise HeldOutError(f"{path}: {too_many}: refused unread (scale it down)") from None
    except Exception:  # noqa: BLE001 - the loader reports an unreadable file by name
        return
    if width * height > MAX_IMAGE_PIXELS:
        raise HeldOutError(f"{path}: {width}x{height} pixels, {too_many}: refused before decoding it, which "
                           "could take gigabytes (scale it down)")


def read_class_folders(root: Path, classes: list[str],
                       load: Callable[[Path], torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """``root/<class>/<image>`` as a stacked tensor of ``load(path)`` and int64 labels (the index
    of each folder's name in ``classes``). Only regular files are read (never a link, a FIFO or a
    device), and files beside the class folders are left alone; an unknown class folder, an empty
    folder or an unreadable image is a :class:`HeldOutError` naming it."""
    if not root.is_dir() or root.is_symlink():
        raise HeldOutError(f"{root} is not a folder")
    images: list[torch.Tensor] = []
    labels: list[int] = []
    try:
        subs = sorted(root.iterdir())
    except OSError as exc:
        raise HeldOutError(f"{root}: cannot list it ({exc.strerror or exc})") from None
    for sub in subs:
        if sub.name.startswith(".") or (sub.is_file() and not sub.is_symlink()):  # a README, a labels list
            continue
        if sub.is_symlink() or not sub.is_dir():
            raise HeldOutError(f"{sub}: not a folder or a regular file (links, FIFOs and devices are never read)")
        if sub.name not in classes:
            raise HeldOutError(f"{sub}: {sub.name!r} is not a class of this exercise ({', '.join(classes)})")
        for path in _image_files(sub):
            if len(images) >= MAX_IMAGES:
                raise HeldOutError(f"{root}: more than {MAX_IMAGES} images")
            _check_pixels(path)
            try:
                images.append(load(path))
            except Exception as exc:  # noqa: BLE001 - PIL's errors vary by format
                raise HeldOutError(f"{path}: cannot read it as an image ({type(exc).__name__}: {exc})") from None
            labels.append(classes.index(sub.name))
    if not images:
        raise HeldOutError(f"{root}: no images (expected {root}/<class>/<image>, classes {', '.join(classes)})")
    return torch.stack(images), torch.tensor(labels, dtype=torch.int64)
