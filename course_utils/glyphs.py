"""Image files made offline: letters and digits rendered from the fonts matplotlib ships.

The image lessons need a real folder of PNG files in class folders, and a CSV of labels, on a
machine with no network. notMNIST (Bulatov, 2011) was made by rendering letters from many fonts;
this does the same with the 22 text fonts in ``matplotlib/mpl-data/fonts/ttf`` (DejaVu: Bitstream
Vera licence; STIX: SIL Open Font Licence 1.1; Computer Modern, BaKoMa's TrueType version: its
own free licence; the licence files sit next to the fonts). Every learner's machine has them,
because matplotlib is one of the course's requirements.

Each image is one character in one font with its own random size, rotation, shift, stroke
width, contrast and noise, drawn from a ``random.Random`` seeded by (seed, character, font,
index): the same call writes the same pixels on every run, and the global RNGs are never used.
The files are 8-bit grayscale PNGs (mode ``"L"``), ``size`` x ``size`` pixels.

    make_image_folder(root, chars=LETTERS)      # root/A/DejaVuSans-0.png ... and root/labels.csv

Split by **font**, not by image, when you hold out data: the images of one font look alike, and
a model tested on fonts it trained on scores higher than it will on a font it has never seen.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

LETTERS = "ABCDEFGHIJ"
"""notMNIST's ten classes: the letters A to J."""
DIGITS = "0123456789"

FONTS: tuple[str, ...] = (
    "DejaVuSans", "DejaVuSans-Bold", "DejaVuSans-Oblique", "DejaVuSans-BoldOblique",
    "DejaVuSansMono", "DejaVuSansMono-Bold", "DejaVuSansMono-Oblique", "DejaVuSansMono-BoldOblique",
    "DejaVuSerif", "DejaVuSerif-Bold", "DejaVuSerif-Italic", "DejaVuSerif-BoldItalic",
    "STIXGeneral", "STIXGeneralBol", "STIXGeneralItalic", "STIXGeneralBolIta",
    "cmr10", "cmb10", "cmss10", "cmti10", "cmtt10", "cmmi10",
)
"""The fonts matplotlib ships that draw every letter and digit (its symbol and display-size
fonts draw none of them, and LastResort draws boxes), in a fixed order."""

LABELS_CSV = "labels.csv"
_SCALE = 4  # draw at 4x and downsample: smooth edges, as a scanned or photographed glyph has


def font_dir() -> Path:
    """Where matplotlib keeps its TrueType fonts."""
    import matplotlib

    return Path(matplotlib.get_data_path()) / "fonts" / "ttf"


def font_path(font: str) -> Path:
    """The file of one of ``FONTS``."""
    if font not in FONTS:
        raise ValueError(f"unknown font {font!r}; choose from glyphs.FONTS")
    return font_dir() / f"{font}.ttf"


def render(char: str, font: str, rng: random.Random, size: int = 28) -> Image.Image:
    """One ``size`` x ``size`` grayscale image of ``char`` drawn in ``font``, jittered by ``rng``."""
    big = size * _SCALE
    face = ImageFont.truetype(str(font_path(font)), int(big * rng.uniform(0.55, 0.8)))
    layer = Image.new("L", (big, big), 0)
    draw = ImageDraw.Draw(layer)
    cx = big / 2 + rng.uniform(-0.08, 0.08) * big
    cy = big / 2 + rng.uniform(-0.08, 0.08) * big
    stroke = rng.choice((0, 0, 0, 1, 2)) * _SCALE // 2
    draw.text((cx, cy), char, fill=255, font=face, anchor="mm", stroke_width=stroke, stroke_fill=255)
    layer = layer.rotate(rng.uniform(-12.0, 12.0), resample=Image.Resampling.BILINEAR)
    if rng.random() < 0.3:
        layer = layer.filter(ImageFilter.GaussianBlur(radius=rng.uniform(0.5, 1.5) * _SCALE / 2))
    small = np.asarray(layer.resize((size, size), Image.Resampling.LANCZOS), dtype=np.float32) / 255.0
    background = rng.uniform(0.0, 0.35)
    ink = rng.uniform(0.65, 1.0)
    if rng.random() < 0.25:  # dark ink on a light page
        background, ink = 1.0 - background, 1.0 - ink
    noise = np.random.default_rng(rng.getrandbits(32)).normal(0.0, rng.uniform(0.0, 0.06), small.shape)
    pixels = background + (ink - background) * small + noise
    return Image.fromarray(np.clip(np.rint(pixels * 255.0), 0, 255).astype(np.uint8), mode="L")


def make_image_folder(root: str | Path, chars: str = LETTERS, per_font: int = 3,
                      fonts: tuple[str, ...] | list[str] = FONTS, seed: int = 0, size: int = 28) -> Path:
    """Write ``root/<char>/<font>-<k>.png`` for every character, font and ``k < per_font``.

    Also writes ``root/labels.csv`` (columns ``file``, ``label``, ``font``; ``file`` relative to
    ``root``, rows in the order written). Returns ``root``. Characters must be distinct and
    upper case or digits, so that class folders differ on case-insensitive file systems too.
    """
    if len(set(chars)) != len(chars) or any(not (c.isdigit() or c.isupper()) for c in chars):
        raise ValueError("chars must be distinct digits or upper-case letters (folder names differ in any case)")
    root = Path(root)
    rows = []
    for char in chars:
        (root / char).mkdir(parents=True, exist_ok=True)
        for font in fonts:
            for k in range(per_font):
                rng = random.Random(f"{seed}/{char}/{font}/{k}")
                name = f"{char}/{font}-{k}.png"
                render(char, font, rng, size).save(root / name)
                rows.append((name, char, font))
    with open(root / LABELS_CSV, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(("file", "label", "font"))
        writer.writerows(rows)
    return root


def make_received_folder(root: str | Path, chars: str = LETTERS, per_font: int = 3,
                         fonts: tuple[str, ...] | list[str] = FONTS, seed: int = 0, size: int = 28,
                         unlabelled: int = 3) -> Path:
    """:func:`make_image_folder` as a team hands it over, not quite clean.

    Every third PNG (the 2nd, 5th, ... row) is saved again in RGB mode, its grey stored three
    times (as some image editors save grey); ``unlabelled`` more glyphs, not sorted into a class
    folder yet, lie in ``root`` itself (``new-<font>-<j>.png``) and ``labels.csv`` lists them with
    an empty label, spread among the other rows (never first). Returns ``root``.
    """
    root = make_image_folder(root, chars=chars, per_font=per_font, fonts=fonts, seed=seed, size=size)
    with open(root / LABELS_CSV, newline="", encoding="utf-8") as f:
        rows = [tuple(r) for r in list(csv.reader(f))[1:]]
    for k, (file, _, _) in enumerate(rows):
        if k % 3 == 1:
            with Image.open(root / file) as im:
                rgb = im.convert("RGB")
            rgb.save(root / file)
    pick = random.Random(f"{seed}/unlabelled")
    for j in reversed(range(unlabelled)):
        char, font = pick.choice(chars), pick.choice(list(fonts))
        name = f"new-{font}-{j}.png"
        render(char, font, random.Random(f"{seed}/unlabelled/{j}"), size).save(root / name)
        rows.insert(1 + (j + 1) * (len(rows) - 1) // (unlabelled + 1), (name, "", font))
    with open(root / LABELS_CSV, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(("file", "label", "font"))
        writer.writerows(rows)
    return root
