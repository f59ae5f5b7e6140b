"""GlyphFiles: a lazy ``Dataset`` over the folder a team handed over (``root/labels.csv``).

The decisions the folder forces (the prose names none of them): labels are numbered as
``ImageFolder`` numbers the class folders, in the **sorted** order of the names (the check's
CSVs list ``C`` before ``A``), not in their order of appearance; some rows have an empty label
(images not labelled yet): they are no item and no class; every third PNG is RGB with its grey
stored three times, so every item must come back as the one grey channel; paths are relative to
``root``; images are float32 ``(1, H, W)`` in ``[0, 1]``. Laziness is observed, not guessed: the
check changes a file after the dataset was built, and a lazy dataset returns the new pixels.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register

from . import _kit
from ._kit import LESSON

# --- reference: the notebook's answer (generated from solutions/13_images_from_files.py)
from ...answers.l13_images_from_files import GlyphFiles


# --- cases
def _cases(r: Rand) -> Case:
    return Case((r.integer(0, len(_kit.FOLDERS) - 1), bool(r.integer(0, 1))))


EDGE_CASES = [Case((0, False), label="classes C, A, B listed in that order in labels.csv, 2 unlabelled rows"),
              Case((1, True), label="classes J, 7, E, A; root given as a str")]


# --- run and probes
def _rows(root: Path) -> list[tuple[str, str]]:
    with open(root / "labels.csv", newline="", encoding="utf-8") as f:
        return [(r["file"], r["label"]) for r in csv.DictReader(f)]


def _build(answer, root, **kwargs):
    if isinstance(answer, Dataset):
        raise Incorrect("wrong_type")
    if not callable(answer):
        raise Incorrect("wrong_type")
    return answer(root, **kwargs)


def _item(ds, i: int, root: Path):
    try:
        item = ds[i]
    except Exception as exc:  # FileNotFoundError from PIL or open(), RuntimeError from torchvision's decoder
        if ("No such file" in str(exc) or isinstance(exc, FileNotFoundError)) and str(root) not in str(exc):
            raise Incorrect("path_not_under_root") from None
        raise
    if not (isinstance(item, (tuple, list)) and len(item) == 2):
        raise Incorrect("item_not_pair", got=type(item).__name__)
    image, label = item
    if not isinstance(image, torch.Tensor):
        raise Incorrect("image_not_tensor", got=type(image).__name__)
    if image.dtype != torch.float32:
        raise Incorrect("wrong_dtype", dtype=str(image.dtype).replace("torch.", ""))
    if isinstance(label, torch.Tensor) and label.dim() == 0 and not label.is_floating_point():
        label = int(label)
    if isinstance(label, bool) or not isinstance(label, int):
        raise Incorrect("label_not_int", got=type(label).__name__)
    return image, label


def _shapes(images: list[torch.Tensor]) -> None:
    shapes = list(dict.fromkeys(tuple(im.shape) for im in images))
    if len(shapes) > 1:  # grey files one way, RGB files another
        raise Incorrect("mixed_modes", shapes=", ".join(map(str, shapes)))
    shape = shapes[0]
    if len(shape) == 2:
        raise Incorrect("no_channel_dim", shape=shape)
    if len(shape) == 3 and shape[0] == 3:
        raise Incorrect("rgb")
    if len(shape) != 3 or shape[0] != 1:
        raise Incorrect("item_shape", shape=shape)
    low, high = min(float(im.min()) for im in images), max(float(im.max()) for im in images)
    if high > 1.0 + 1e-6 or low < -1e-6:
        raise Incorrect("not_scaled", low=round(low, 2), high=round(high, 2))


def _run(answer, case: Case):
    k, as_str = case.args
    root = _kit.fresh_copy(k)
    every = _rows(root)
    rows = [(file, lab) for file, lab in every if lab]
    ds = _build(answer, str(root) if as_str else root)
    if len(ds) != len(rows):
        if len(ds) == len(every):
            raise Incorrect("keeps_unlabelled", got=len(ds), k=len(every) - len(rows))
        raise Incorrect("wrong_len", got=len(ds), n=len(rows))
    # after building: file 0 becomes white; a dataset that opens files in __getitem__ sees it
    with Image.open(root / rows[0][0]) as im:
        Image.new("L", im.size, 255).save(root / rows[0][0])
    items = [_item(ds, i, root) for i in range(len(ds))]
    _shapes([im for im, _ in items])
    if not bool((items[0][0] == 1.0).all()):
        raise Incorrect("not_lazy")
    if "" in list(getattr(ds, "classes", ())):
        raise Incorrect("unlabelled_class")
    classes = sorted({lab for _, lab in rows})
    labels = [lab for _, lab in items]
    first_seen = list(dict.fromkeys(lab for _, lab in rows))
    if labels != [classes.index(lab) for _, lab in rows]:
        if labels == [first_seen.index(lab) for _, lab in rows]:
            raise Incorrect("labels_not_sorted")
        raise Incorrect("wrong_labels")
    if list(getattr(ds, "classes", ())) != classes or dict(getattr(ds, "class_to_idx", {})) != {
            c: i for i, c in enumerate(classes)}:
        raise Incorrect("classes_attribute")
    flipped = _build(answer, root, transform=lambda t: 1.0 - t)
    if not torch.allclose(flipped[1][0], 1.0 - items[1][0]):
        raise Incorrect("ignores_transform")
    return torch.stack([im for im, _ in items[1:]]), torch.tensor(labels)


# --- wrong answers
class _FirstSeen(GlyphFiles):
    def __init__(self, root, transform=None):
        super().__init__(root, transform)
        self.classes = list(dict.fromkeys(lab for _, lab in self.rows))
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}


class _Bytes(GlyphFiles):
    def __getitem__(self, i):
        image, label = super().__getitem__(i)
        return image * 255, label


class _Uint8(GlyphFiles):
    def __getitem__(self, i):
        image, label = super().__getitem__(i)
        return (image * 255).round().to(torch.uint8), label


class _NoChannel(GlyphFiles):
    def __getitem__(self, i):
        image, label = super().__getitem__(i)
        return image[0], label


class _Rgb(GlyphFiles):
    def __getitem__(self, i):
        image, label = super().__getitem__(i)
        return image.expand(3, -1, -1).clone(), label


class _FromCwd(GlyphFiles):
    def __getitem__(self, i):
        Image.open(self.rows[i][0])  # relative to the working directory
        return super().__getitem__(i)


class _Eager(GlyphFiles):
    def __init__(self, root, transform=None):
        super().__init__(root, transform)
        self.cache = [super(_Eager, self).__getitem__(i) for i in range(len(self.rows))]

    def __getitem__(self, i):
        return self.cache[i]


class _NoConvert(GlyphFiles):
    def __getitem__(self, i):
        file, label = self.rows[i]
        with Image.open(self.root / file) as im:  # grey files give (H, W), RGB files (H, W, 3)
            image = torch.from_numpy(np.array(im, dtype=np.float32) / 255).unsqueeze(0)
        return image, self.class_to_idx[label]


def _all_rows(root) -> list[tuple[str, str]]:
    return _rows(Path(root))


class _KeepsUnlabelled(GlyphFiles):
    def __init__(self, root, transform=None):
        super().__init__(root, transform)
        self.rows = _all_rows(root)
        self.classes = sorted({lab for _, lab in self.rows})
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}


class _EmptyClass(GlyphFiles):
    def __init__(self, root, transform=None):
        super().__init__(root, transform)
        self.classes = sorted({lab for _, lab in _all_rows(root)})
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}


class _NoTransform(GlyphFiles):
    def __init__(self, root, transform=None):
        super().__init__(root, None)


_AN_INSTANCE = object.__new__(GlyphFiles)

# --- declaration
register(Exercise(
    lesson=LESSON, name="GlyphFiles", title="A lazy Dataset over the files a CSV lists",
    reference=GlyphFiles, kind="any", run=_run, cases=_cases, edge_cases=EDGE_CASES, n_random=2,
    compare=Compare(atol=1e-6, rtol=0), prepare=_kit.prepare,
    mistakes=[
        Mistake("labels_not_sorted", "Your labels are numbered in the order the classes first appear in "
                "labels.csv; `ImageFolder` numbers them in **sorted** order of the names, so the teammate's model "
                "reads your label 0 as another class (and a CSV written in another order would renumber them).",
                _FirstSeen, match_output=False),
        Mistake("keeps_unlabelled", "Your dataset has {got} items, one per row of labels.csv, but {k} rows have "
                "an empty label: those images are not labelled yet, and a training item needs a class a loss "
                "can use. Leave them out of the items.", _KeepsUnlabelled, match_output=False),
        Mistake("unlabelled_class", "`ds.classes` holds the empty label `''` of the rows not labelled yet: it "
                "is no class a model should predict, and it shifts every other class's number by one.",
                _EmptyClass, match_output=False),
        Mistake("mixed_modes", "Your items come in different shapes ({shapes}): the folder mixes grey PNGs "
                "with RGB ones that store the grey three times (open a few and look at their `.mode`). Give "
                "every item the same one grey channel.", _NoConvert, match_output=False),
        Mistake("not_scaled", "Your image values run from {low} to {high}: divide the bytes by 255 (or "
                "`ToDtype(torch.float32, scale=True)`) so they lie in [0, 1].", _Bytes, match_output=False),
        Mistake("wrong_dtype", "Your image is {dtype}: the task asks for float32 in [0, 1] "
                "(`ToDtype(torch.float32, scale=True)`, or `.float() / 255`).", _Uint8, match_output=False),
        Mistake("no_channel_dim", "Your image has shape {shape}: keep the channel dimension, `(1, H, W)` "
                "(`image.unsqueeze(0)`), as a CNN's `Conv2d(1, ...)` expects.", _NoChannel, match_output=False),
        Mistake("rgb", "Your image has 3 channels: the glyphs are grey (even the files saved as RGB hold "
                "three equal channels); open them as one channel (`.convert(\"L\")`, `ImageReadMode.GRAY`).",
                _Rgb, match_output=False),
        Mistake("path_not_under_root", "A file was looked for relative to the working directory: the CSV's "
                "paths are relative to `root`, so open `Path(root) / file`.", _FromCwd, match_output=False),
        Mistake("not_lazy", "Your dataset read the images in `__init__`: a file changed after the dataset "
                "was built came back with its old pixels. Keep only the CSV's rows in `__init__` and open "
                "the file in `__getitem__`.", _Eager, match_output=False),
        Mistake("ignores_transform", "`GlyphFiles(root, transform=t)` must return `t(image)`: your dataset "
                "ignored the transform.", _NoTransform, match_output=False),
        Mistake("wrong_type", "Pass the class `GlyphFiles` itself (without calling it).", _AN_INSTANCE,
                match_output=False),
        Mistake("wrong_len", "Your dataset has {got} items; labels.csv lists {n} labelled files.", None,
                match_output=False),
        Mistake("item_not_pair", "`ds[i]` should be a pair `(image, label)`, not {got}.", None,
                match_output=False),
        Mistake("image_not_tensor", "The image should be a tensor, not {got}.", None, match_output=False),
        Mistake("item_shape", "The image should have shape `(1, H, W)`, not {shape}.", None, match_output=False),
        Mistake("label_not_int", "The label should be an `int` (the class index), not {got}.", None,
                match_output=False),
        Mistake("wrong_labels", "Some labels are not the index of the row's label among the sorted label "
                "names.", None, match_output=False),
        Mistake("classes_attribute", "`ds.classes` should be the sorted list of label names and "
                "`ds.class_to_idx` the dict from each name to its index.", None, match_output=False),
    ],
    hints=[
        "Before you write `__getitem__`: what do the rows of `received/labels.csv` hold, every one of them? "
        "Is every file you open the same kind of image? And how does the teammate's `ImageFolder` number "
        "the classes: by the CSV's order, or by something else?",
        "A row with no label is no training example yet; a file saved in RGB can still be a grey glyph; "
        "a model and a dataset agree on classes only when both number them the same way, whatever the "
        "order of the rows; and a dataset that reads a file only when asked sees the file as it is then.",
        "Look up `csv.DictReader`, PIL's `Image.mode` and `Image.convert` (the grey mode is \"L\"), "
        "`torch.from_numpy` or `v2.functional.pil_to_tensor`, and `ImageFolder.class_to_idx` (try it on "
        "`received`); torchvision 0.29 deprecates its own `torchvision.io.decode_image`.",
    ],
))
