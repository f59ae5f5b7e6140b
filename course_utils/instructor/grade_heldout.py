"""``grade --heldout DIR``: the capstones scored on the instructor's own images.

``DIR`` holds one folder per exercise that accepts held-out data (``Exercise.heldout``), named
as the exercise (``DIR/DigitClassifier/3/scan_017.png``). Before grading, :func:`prepare`
(in the grader's own process, never in a sandbox) reads every image, refuses anything that is
not a regular image file with a message naming it, runs the course's reference on the images
and sets each exercise's bar: its target, or just under the reference's own accuracy where the
images are harder than the course's. Each judge then reads the images again
(:func:`given_for`, once per judge process) and hands them, without their labels, to the
exercise's probe in the sandbox (:mod:`course_utils.grading.heldout`).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from course_utils.grading import heldout
from course_utils.grading.heldout import HeldOutError


def _exercises() -> dict[str, Any]:
    from course_utils.grading import registry

    return {ex.name: ex for ex in registry.all_exercises() if ex.heldout is not None}


@functools.lru_cache(maxsize=8)
def _read(ex_id: str, folder: str) -> tuple[Any, Any]:
    from course_utils.grading import registry

    spec = registry.get(ex_id).heldout
    assert spec is not None
    return spec.read(Path(folder))


def prepare(root: str | Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The setup sent with every judge job (``{exercise id: {"folder", "bar"}}``) and the lines
    to print about it. Raises :class:`HeldOutError` for a folder that cannot be used."""
    import torch

    from course_utils.grading.spec import Rand

    root = Path(root)
    if not root.is_dir():
        raise HeldOutError(f"--heldout {root}: not a folder")
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
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # as in a check: the probe's CPU budget assumes one thread
        try:
            with heldout.giving(heldout.Given(images, labels, spec.target)), torch.random.fork_rng(devices=[]):
                ran = ex.probes[spec.probe](ex.reference, Rand(0))
        finally:
            torch.set_num_threads(threads)
        reference = float(spec.score(ran, labels))
        if reference < spec.floor:
            raise HeldOutError(f"--heldout: the course's own {ex.name} scores only {reference:.0%} on the "
                               f"{len(labels)} images in {sub}, too low for a bar that means anything: check "
                               f"that each folder holds its class and each image one item ({spec.layout})")
        bar = heldout.calibrated_bar(spec, reference)
        setup[ex.id] = {"folder": str(sub.resolve()), "bar": bar}
        why = "the exercise's target" if bar >= spec.target else \
            f"the target {spec.target:.0%} lowered to the reference's accuracy less {spec.margin:.0%}"
        lines.append(f"Held-out images for {ex.id}: {len(labels)} in {len(set(labels.tolist()))} "
                     f"classes from {sub}; the reference scores {reference:.1%} on them, the bar is {bar:.1%} ({why}).")
    if not setup:
        raise HeldOutError(f"--heldout {root}: no exercise folders in it (expected one of: {', '.join(sorted(takes))}, "
                           "each holding class folders of images)")
    return setup, lines


def given_for(ex: Any, setup: Any) -> heldout.Given | None:
    """The held-out data for ``ex`` in a judge process (labels included), or ``None``."""
    if ex.heldout is None or not isinstance(setup, dict) or not isinstance(setup.get(ex.id), dict):
        return None
    entry = setup[ex.id]
    images, labels = _read(ex.id, str(entry["folder"]))
    return heldout.Given(images, labels, float(entry["bar"]))
