"""``grade --heldout DIR``: the capstones scored on the instructor's own images.

``DIR`` holds one folder per exercise that accepts held-out data (``Exercise.heldout``), named
as the exercise (``DIR/DigitClassifier/3/scan_017.png``). Before grading, :func:`prepare` (in
the grader's own process, never in a sandbox) reads every image, refuses anything that is not a
regular image file with a message naming it, runs the course's reference on the images and on
the course's own split, and sets each exercise's bar: its target, scaled down by how much harder
the images are for the reference (:func:`course_utils.grading.heldout.calibrated_bar`). Each
judge then reads the images again (:func:`given_for`, once per judge process, in a new order for
each submission) and hands them, without their labels, to the exercise's probe in the sandbox
(:mod:`course_utils.grading.heldout`).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from course_utils.grading import heldout
from course_utils.grading.heldout import HeldOutError

from .sandbox import readable_inside


def _exercises() -> dict[str, Any]:
    from course_utils.grading import registry

    return {ex.name: ex for ex in registry.all_exercises() if ex.heldout is not None}


@functools.lru_cache(maxsize=8)
def _read(ex_id: str, folder: str) -> tuple[Any, Any]:
    from course_utils.grading import registry

    spec = registry.get(ex_id).heldout
    assert spec is not None
    return spec.read(Path(folder))


def _score_reference(ex: Any, images: Any, labels: Any) -> float:
    """The course's reference through the exercise's probe, on ``images`` (``None``: the course's
    own split), scored as the verdict scores: one torch thread, as in a check."""
    import torch

    from course_utils.grading.spec import Rand

    spec = ex.heldout
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the probe's CPU budget assumes one thread
    try:
        given = None if images is None else heldout.Given(images, labels, spec.target)
        with heldout.giving(given), torch.random.fork_rng(devices=[]):
            ran = ex.probes[spec.probe](ex.reference, Rand(0))
            return float(spec.score(ran, spec.course_labels() if images is None else labels))
    finally:
        torch.set_num_threads(threads)


def _warnings(spec: Any, labels: Any) -> list[str]:
    missing = [c for i, c in enumerate(spec.classes) if i not in set(labels.tolist())]
    out = []
    if len(labels) < 100:
        out.append(f"  note: {len(labels)} images: each one moves the accuracy by {1 / len(labels):.1%}; a few "
                   "hundred make a steadier bar.")
    if missing:
        out.append(f"  note: no images of {', '.join(missing)}.")
    return out


def prepare(root: str | Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The setup sent with every judge job (``{exercise id: {"folder", "bar"}}``) and the lines
    to print about it. Raises :class:`HeldOutError` for a folder that cannot be used."""
    root = Path(root)
    if not root.is_dir():
        raise HeldOutError(f"--heldout {root}: not a folder")
    seen_by = readable_inside(root)
    if seen_by is not None:
        raise HeldOutError(f"--heldout {root}: it is inside {seen_by}, which every submission's sandbox can read "
                           "(a submission could read the labels from the folder names): move it elsewhere, "
                           "for example into your home folder")
    takes = _exercises()
    setup: dict[str, dict[str, Any]] = {}
    lines: list[str] = []
    for sub in sorted(p for p in root.iterdir() if not p.name.startswith(".")):
        ex = takes.get(sub.name)
        if ex is None:
            raise HeldOutError(f"--heldout: {sub} names no exercise that takes held-out images "
                               f"(the folders may be: {', '.join(sorted(takes)) or 'none'})")
        spec = ex.heldout
        images, labels = _read(ex.id, str(sub.resolve()))
        images, labels = heldout.shuffled(images, labels)
        reference, reference_course = _score_reference(ex, images, labels), _score_reference(ex, None, None)
        if reference < spec.floor:
            raise HeldOutError(f"--heldout: the course's own {ex.name} scores only {reference:.0%} on the "
                               f"{len(labels)} images in {sub}, too low for a bar that means anything: check "
                               f"that each folder holds its class and each image one item ({spec.layout})")
        bar = heldout.calibrated_bar(spec, reference, reference_course)
        setup[ex.id] = {"folder": str(sub.resolve()), "bar": bar}
        how = "the exercise's target" if bar >= spec.target else (
            f"the target {spec.target:.0%} times {reference:.1%}/{reference_course:.1%}, how much harder these "
            "images are for the reference than the course's own")
        lines.append(f"Held-out images for {ex.id}: {len(labels)} in {len(set(labels.tolist()))} classes from "
                     f"{sub}; the reference scores {reference:.1%} on them ({reference_course:.1%} on the course's "
                     f"split): the bar is {bar:.1%} ({how}).")
        lines += _warnings(spec, labels)
    if not setup:
        raise HeldOutError(f"--heldout {root}: no exercise folders in it (expected one of: {', '.join(sorted(takes))}, "
                           "each holding class folders of images)")
    return setup, lines


def given_for(ex: Any, setup: Any) -> heldout.Given | None:
    """The held-out data for ``ex`` in a judge process (labels included), or ``None``."""
    if ex.heldout is None or not isinstance(setup, dict) or not isinstance(setup.get(ex.id), dict):
        return None
    entry = setup[ex.id]
    images, labels = heldout.shuffled(*_read(ex.id, str(entry["folder"])))  # a new order per submission
    return heldout.Given(images, labels, float(entry["bar"]))
