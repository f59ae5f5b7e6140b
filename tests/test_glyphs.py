"""The image files the image lessons read: made offline, the same on every run, labelled right."""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from course_utils import glyphs


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_every_font_is_shipped_and_draws_every_class(tmp_path):
    blank = np.asarray(Image.new("L", (28, 28), 0))
    for font in glyphs.FONTS:
        assert glyphs.font_path(font).is_file(), font
    root = glyphs.make_image_folder(tmp_path, "A8", per_font=1)
    for path in root.rglob("*.png"):
        pixels = np.asarray(Image.open(path))
        assert pixels.shape == (28, 28) and pixels.dtype == np.uint8
        assert pixels.std() > 10 and not np.array_equal(pixels, blank), path  # a glyph, not a flat page


def test_the_same_call_writes_the_same_bytes_and_a_seed_changes_them(tmp_path):
    a = _digest(glyphs.make_image_folder(tmp_path / "a", "AB", per_font=2, fonts=glyphs.FONTS[:3]))
    b = _digest(glyphs.make_image_folder(tmp_path / "b", "AB", per_font=2, fonts=glyphs.FONTS[:3]))
    c = _digest(glyphs.make_image_folder(tmp_path / "c", "AB", per_font=2, fonts=glyphs.FONTS[:3], seed=1))
    assert a == b
    assert a.keys() == c.keys() and a != c


def test_labels_csv_names_every_file_once_with_its_folder_and_font(tmp_path):
    root = glyphs.make_image_folder(tmp_path, glyphs.DIGITS[:3], per_font=2, fonts=glyphs.FONTS[:4])
    with open(root / glyphs.LABELS_CSV, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 3 * 4 * 2
    assert sorted(r["file"] for r in rows) == sorted(str(p.relative_to(root)) for p in root.rglob("*.png"))
    for r in rows:
        assert r["file"].split("/")[0] == r["label"] and r["file"].split("/")[1].startswith(r["font"] + "-")


def test_the_global_rngs_are_left_alone(tmp_path):
    import random

    import torch
    random.seed(3)
    torch.manual_seed(3)
    np.random.seed(3)
    glyphs.make_image_folder(tmp_path, "A", per_font=1, fonts=glyphs.FONTS[:2])
    assert random.random() == random.Random(3).random()
    assert torch.rand(1).item() == torch.rand(1, generator=torch.Generator().manual_seed(3)).item()
    assert np.random.random() == np.random.RandomState(3).random_sample()


@pytest.mark.parametrize("chars", ["AA", "ab", "A!"])
def test_class_names_that_would_collide_or_misbehave_as_folders_are_refused(tmp_path, chars):
    with pytest.raises(ValueError, match="distinct digits or upper-case"):
        glyphs.make_image_folder(tmp_path, chars)


def test_unknown_font_is_named():
    with pytest.raises(ValueError, match="unknown font 'Arial'"):
        glyphs.font_path("Arial")
