"""Generated from solutions/13_images_from_files.py by `python -m course_utils build`; do not edit.

The answer definitions of the lesson's solution notebook (marker lines dropped) and the
notebook-level names they use; the exercises of 13_images_from_files take their references from here."""

# ruff: noqa

import csv
from pathlib import Path
import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset, Subset


class GlyphFiles(Dataset):
    """(image float32 (1, H, W) in [0, 1], label int) for each row of root/labels.csv, read lazily."""

    def __init__(self, root, transform=None):
        self.root = Path(root)
        self.transform = transform
        with open(self.root / "labels.csv", newline="", encoding="utf-8") as f:
            self.rows = [(r["file"], r["label"]) for r in csv.DictReader(f) if r["label"]]  # "": not labelled yet
        self.classes = sorted({label for _, label in self.rows})
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        file, label = self.rows[i]
        with Image.open(self.root / file) as im:  # some files are RGB: three copies of the grey
            pixels = np.asarray(im.convert("L"), dtype=np.float32) / 255
        image = torch.from_numpy(pixels).unsqueeze(0)
        if self.transform is not None:
            image = self.transform(image)
        return image, self.class_to_idx[label]


def split_by_font(fonts, n_test_fonts, generator):
    """(train_idx, test_idx): every item of n_test_fonts randomly chosen fonts in test."""
    names = sorted(set(fonts))
    order = torch.randperm(len(names), generator=generator).tolist()
    held_out = {names[j] for j in order[:n_test_fonts]}
    in_test = torch.tensor([f in held_out for f in fonts], dtype=torch.bool)
    return (~in_test).nonzero().flatten(), in_test.nonzero().flatten()


def train_stats(dataset, train_idx):
    """Per-channel (mean, std) of every pixel of the training items, accumulated over batches."""
    loader = DataLoader(Subset(dataset, train_idx.tolist()), batch_size=64)
    total = total_sq = count = 0
    for images, _ in loader:
        images = images.double()
        total = total + images.sum(dim=(0, 2, 3))
        total_sq = total_sq + (images**2).sum(dim=(0, 2, 3))
        count += images.numel() // images.shape[1]
    mean = total / count
    std = (total_sq / count - mean**2).clamp_min(0).sqrt()
    return mean.float(), std.float()


def make_transform(mean, std):
    """ImageFolder's PIL image -> float32 (1, H, W), normalised with (mean, std)."""
    from torchvision.transforms import v2  # imported here too: the course's graders load this answer without torchvision
    return v2.Compose([
        v2.Grayscale(num_output_channels=1),
        v2.ToImage(),
        v2.ToDtype(torch.float32, scale=True),
        v2.Normalize(mean=list(mean), std=list(std)),
    ])


def make_augment():
    """A random, label-preserving transform of a float (1, H, W) glyph in [0, 1]."""
    from torchvision.transforms import v2  # imported here too: the course's graders load this answer without torchvision
    return v2.RandomAffine(degrees=10, translate=(0.1, 0.1), scale=(0.9, 1.1))
